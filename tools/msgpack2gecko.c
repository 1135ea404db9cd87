/*
 * msgpack2gecko.c - convert an rtprof dump into a Firefox Profiler profile.
 *
 *   msgpack2gecko [--quiet] DUMP -o OUT       (- for stdin / stdout)
 *   msgpack2gecko --info DUMP
 *
 * OUT ending in ".gz" is gzip-compressed. Milestone 1: one dump, one
 * session (codec/gecko.h). Exit status: see usage().
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "gecko.h"

#define PROG "msgpack2gecko"

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: " PROG " [options] DUMP -o OUT\n"
	    "       " PROG " --info DUMP\n"
	    "Convert an rtprof dump into a Firefox Profiler (Gecko) profile;\n"
	    "open it at https://profiler.firefox.com (Load a profile from file).\n"
	    "DUMP or OUT may be - (stdin, stdout); OUT ending in .gz is gzipped.\n"
	    "options:\n"
	    "  -o, --output OUT  where to write the profile (required)\n"
	    "  --info            print a summary of the dump, do not convert\n"
	    "  -q, --quiet       no message on success or for damage\n"
	    "  -h, --help        this help\n"
	    "exit status:\n"
	    "  0  converted, nothing lost\n"
	    "  1  converted, but the dump was damaged (listed in the profile's\n"
	    "     profileGatheringLog and on stderr)\n"
	    "  2  usage error, unreadable or not a dump, newer dump format,\n"
	    "     or the output could not be written\n"
	    "Several dumps (multi-process profiles) are not supported yet.\n");
}

struct out {
	int fd;
	gzFile gz;
};

static int
write_out(void *ctx, const void *p, size_t n)
{
	struct out *o = ctx;
	const char *c = p;

	if (o->gz != NULL) {
		while (n != 0) {
			unsigned part = n > (1u << 30) ? 1u << 30 : (unsigned)n;
			int w = gzwrite(o->gz, c, part);

			if (w <= 0)
				return errno != 0 ? -errno : -EIO;
			c += w;
			n -= (size_t)w;
		}
		return 0;
	}
	while (n != 0) {
		ssize_t w = write(o->fd, c, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static bool
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Return: exit status. */
static int
convert(const char *in_path, const char *out_path, bool info, bool quiet)
{
	struct rtprof_gecko *g = NULL;
	struct rtprof_dump_stats st;
	const char *name = strcmp(in_path, "-") == 0 ? "<stdin>" : in_path;
	const char *oname;
	struct out o = { .fd = -1, .gz = NULL };
	uint64_t doff;
	const char *dmsg;
	int fd, rc, status;

	if (strcmp(in_path, "-") == 0) {
		fd = STDIN_FILENO;
	} else {
		fd = open(in_path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, PROG ": %s: cannot open: %s\n", name,
			    strerror(errno));
			return 2;
		}
	}
	if (rtprof_gecko_new(&g, name) != 0) {
		fprintf(stderr, PROG ": %s: out of memory\n", name);
		if (fd != STDIN_FILENO)
			close(fd);
		return 2;
	}
	rc = rtprof_gecko_read_fd(g, fd, &st);
	if (fd != STDIN_FILENO)
		close(fd);
	if (rc == -EPROTONOSUPPORT) {
		fprintf(stderr, PROG ": %s: offset %" PRIu64 ": dump format "
		    "version %u is newer than this reader's %d\n", name,
		    st.newer_version_offset, st.newer_version,
		    RTPROF_WIRE_VERSION);
		goto fail;
	}
	if (rc != 0) {
		fprintf(stderr, PROG ": %s: offset %" PRIu64 ": %s\n", name,
		    st.bytes, rc < 0 ? strerror(-rc) : "decoding stopped");
		goto fail;
	}
	if (st.frames == 0) {
		fprintf(stderr, PROG ": %s: not an rtprof dump (no valid frame "
		    "in %" PRIu64 " bytes)\n", name, st.bytes);
		goto fail;
	}
	status = rtprof_gecko_problems(g) != 0 ? 1 : 0;
	if (info) {
		if (rtprof_gecko_print_info(g, stdout) != 0 ||
		    fflush(stdout) != 0) {
			fprintf(stderr, PROG ": writing the summary: %s\n",
			    strerror(errno));
			goto fail;
		}
		rtprof_gecko_free(g);
		return status;
	}

	oname = strcmp(out_path, "-") == 0 ? "<stdout>" : out_path;
	if (strcmp(out_path, "-") == 0) {
		o.fd = STDOUT_FILENO;
	} else {
		o.fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		    0666);
		if (o.fd < 0) {
			fprintf(stderr, PROG ": %s: cannot create: %s\n", oname,
			    strerror(errno));
			goto fail;
		}
		if (ends_with(out_path, ".gz")) {
			o.gz = gzdopen(o.fd, "wb6");
			if (o.gz == NULL) {
				fprintf(stderr, PROG ": %s: cannot start gzip\n",
				    oname);
				close(o.fd);
				goto fail_out;
			}
		}
	}
	rc = rtprof_gecko_write(g, write_out, &o);
	if (o.gz != NULL) {
		int zr = gzclose(o.gz);

		if (rc == 0 && zr != Z_OK)
			rc = -EIO;
	} else if (o.fd != STDOUT_FILENO) {
		if (close(o.fd) != 0 && rc == 0)
			rc = -errno;
	}
	if (rc == -ENODATA) {
		fprintf(stderr, PROG ": %s: no session header found: nothing "
		    "to convert (the start of the dump is missing?)\n", name);
		goto fail_out;
	}
	if (rc != 0) {
		fprintf(stderr, PROG ": %s: writing: %s\n", oname,
		    strerror(-rc));
		goto fail_out;
	}
	if (status == 1 && !quiet &&
	    rtprof_gecko_first_damage(g, &doff, &dmsg) == 0)
		fprintf(stderr, PROG ": %s: offset %" PRIu64 ": damaged: %s "
		    "(%" PRIu64 " report(s); converted what was readable, see "
		    "profileGatheringLog)\n", name, doff, dmsg,
		    rtprof_gecko_problems(g));
	else if (status == 1 && !quiet)
		fprintf(stderr, PROG ": %s: frames of other sessions ignored "
		    "(several sessions are not supported yet)\n", name);
	if (!quiet && o.fd != STDOUT_FILENO)
		fprintf(stderr, PROG ": wrote %s; open it at "
		    "https://profiler.firefox.com\n", oname);
	rtprof_gecko_free(g);
	return status;

fail_out:
	if (strcmp(out_path, "-") != 0)
		unlink(out_path);
fail:
	rtprof_gecko_free(g);
	return 2;
}

/*
 * main - parse options and convert one dump.
 * Context: main thread.
 * Return: exit status 0, 1 or 2 (see usage()).
 */
int
main(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	bool info = false, quiet = false, opts_done = false;
	int nin = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!opts_done && (strcmp(a, "-o") == 0 ||
		    strcmp(a, "--output") == 0)) {
			if (i + 1 >= argc) {
				fprintf(stderr, PROG ": %s needs a file\n", a);
				return 2;
			}
			out = argv[++i];
		} else if (!opts_done && strcmp(a, "--info") == 0) {
			info = true;
		} else if (!opts_done && (strcmp(a, "-q") == 0 ||
		    strcmp(a, "--quiet") == 0)) {
			quiet = true;
		} else if (!opts_done && (strcmp(a, "-h") == 0 ||
		    strcmp(a, "--help") == 0)) {
			usage(stdout);
			return 0;
		} else if (!opts_done && strcmp(a, "--") == 0) {
			opts_done = true;
		} else if (!opts_done && a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, PROG ": unknown option %s\n", a);
			usage(stderr);
			return 2;
		} else {
			in = a;
			nin++;
		}
	}
	if (nin > 1) {
		fprintf(stderr, PROG ": several dumps: not yet supported\n");
		return 2;
	}
	if (in == NULL || (!info && out == NULL)) {
		usage(stderr);
		return 2;
	}
	return convert(in, out, info, quiet);
}
