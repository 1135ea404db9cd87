/*
 * msgpack2gecko.c - convert rtprof dumps into a Firefox Profiler profile.
 *
 *   msgpack2gecko [options] DUMP... -o OUT     (- for stdin / stdout)
 *   msgpack2gecko --info DUMP...
 *
 * OUT ending in ".gz" is gzip-compressed. Every session of every dump is
 * one process; the first is the top level (codec/gecko.h). Dumps are read
 * and written out one at a time. Exit status: see usage().
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "gecko.h"

#define PROG "msgpack2gecko"

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: " PROG " [options] DUMP... -o OUT\n"
	    "       " PROG " --info DUMP...\n"
	    "Convert rtprof dumps into one Firefox Profiler (Gecko) profile;\n"
	    "open it at https://profiler.firefox.com (Load a profile from file).\n"
	    "Every recording session of every DUMP becomes a process: the first\n"
	    "one is the top level, the others are aligned to it in time by their\n"
	    "wall clocks. A later session of an already used pid is shown as\n"
	    "\"NAME (session N)\" under a made-up pid (pid + k * 4194304).\n"
	    "One DUMP (at most) or OUT may be - (stdin, stdout); OUT ending in\n"
	    ".gz is gzipped.\n"
	    "options:\n"
	    "  -o, --output OUT  where to write the profile (required)\n"
	    "  --from MS         drop samples, counter values and instant\n"
	    "                    markers before MS (ms after the top-level\n"
	    "                    start); intervals that overlap are kept whole\n"
	    "  --to MS           the same, after MS\n"
	    "  --thread NAME     keep only threads named NAME (repeatable);\n"
	    "                    each process's main thread is always kept\n"
	    "  --sysroot DIR     look the recorded program's files up under DIR\n"
	    "                    first (a target's root file system); files are\n"
	    "                    used only when their build id matches the dump\n"
	    "  --debug-dir DIR   also look for separate debug files under DIR\n"
	    "                    (DIR/.build-id/xx/rest.debug; repeatable)\n"
	    "  --no-symbols      do not symbolize native frames: they stay hex\n"
	    "                    addresses for the front-end to look up in libs\n"
	    "  --info            print a summary of each dump, do not convert\n"
	    "  -q, --quiet       no message on success or for damage, no\n"
	    "                    progress bar (shown only when stderr is a\n"
	    "                    terminal)\n"
	    "  -h, --help        this help\n"
	    "exit status:\n"
	    "  0  converted, nothing lost\n"
	    "  1  converted, but the dump was damaged (listed in the profile's\n"
	    "     profileGatheringLog and on stderr)\n"
	    "  2  usage error, unreadable or not a dump, newer dump format,\n"
	    "     or the output could not be written\n"
	    "Files that could not be used for symbols (missing, build id\n"
	    "mismatch) are listed in profileGatheringLog; they leave the exit\n"
	    "status unchanged.\n"
	    );
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

/* A one-line progress bar on stderr, redrawn at most 10 times a second. */
struct progress {
	const char *name;
	uint64_t total;                 /* 0: size unknown (a pipe) */
	double last;
	bool shown;
};

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void
progress_cb(void *ctx, uint64_t offset)
{
	struct progress *p = ctx;
	double t = now_s();

	if (t - p->last < 0.1)
		return;
	p->last = t;
	p->shown = true;
	if (p->total != 0) {
		char bar[31];
		uint64_t off = offset > p->total ? p->total : offset;
		size_t fill = (size_t)(off * 30 / p->total);

		memset(bar, '#', fill);
		memset(bar + fill, ' ', 30 - fill);
		bar[30] = '\0';
		fprintf(stderr, "\r" PROG ": %s [%s] %3u%% %.1f/%.1f MB\033[K",
		    p->name, bar, (unsigned)(off * 100 / p->total),
		    (double)off / 1e6, (double)p->total / 1e6);
	} else {
		fprintf(stderr, "\r" PROG ": %s %.1f MB read\033[K", p->name,
		    (double)offset / 1e6);
	}
}

static void
progress_end(struct progress *p)
{
	if (p->shown)
		fprintf(stderr, "\r\033[K");
	p->shown = false;
}

/*
 * Read one dump. Return: 0 with *@gp set; 2 (error printed) otherwise.
 */
static int
read_dump(const char *in_path, bool show_progress,
    const struct rtprof_gecko_symbols *sym, struct rtprof_gecko **gp)
{
	struct rtprof_gecko *g = NULL;
	struct rtprof_dump_stats st;
	const char *name = strcmp(in_path, "-") == 0 ? "<stdin>" : in_path;
	struct progress pr = { .name = name };
	struct stat sb;
	int fd, rc;

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
	rtprof_gecko_set_symbols(g, sym);
	if (show_progress) {
		if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode))
			pr.total = (uint64_t)sb.st_size;
		pr.last = now_s();
		rtprof_gecko_set_progress(g, progress_cb, &pr);
	}
	rc = rtprof_gecko_read_fd(g, fd, &st);
	progress_end(&pr);
	rtprof_gecko_set_progress(g, NULL, NULL);
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
	*gp = g;
	return 0;
fail:
	rtprof_gecko_free(g);
	return 2;
}

/* Tell about damage in @g (exit status 1). */
static void
report_damage(struct rtprof_gecko *g, const char *name)
{
	uint64_t doff;
	const char *dmsg;

	if (rtprof_gecko_first_damage(g, &doff, &dmsg) == 0)
		fprintf(stderr, PROG ": %s: offset %" PRIu64 ": damaged: %s "
		    "(%" PRIu64 " report(s); converted what was readable, see "
		    "profileGatheringLog)\n", name, doff, dmsg,
		    rtprof_gecko_problems(g));
	else
		fprintf(stderr, PROG ": %s: frames of sessions without a "
		    "header ignored (their start is missing)\n", name);
}

static int
info(char **in, int nin, bool progress)
{
	int status = 0;

	for (int i = 0; i < nin; i++) {
		struct rtprof_gecko *g;

		if (read_dump(in[i], progress, NULL, &g) != 0)
			return 2;
		if (rtprof_gecko_problems(g) != 0)
			status = 1;
		if (rtprof_gecko_print_info(g, stdout) != 0 ||
		    fflush(stdout) != 0) {
			fprintf(stderr, PROG ": writing the summary: %s\n",
			    strerror(errno));
			rtprof_gecko_free(g);
			return 2;
		}
		rtprof_gecko_free(g);
	}
	return status;
}

/* Return: exit status. */
static int
convert(char **in, int nin, const char *out_path,
    const struct rtprof_gecko_filter *flt,
    const struct rtprof_gecko_symbols *sym, bool quiet, bool progress)
{
	struct rtprof_gecko_writer *w = NULL;
	const char *oname = strcmp(out_path, "-") == 0 ? "<stdout>" : out_path;
	struct out o = { .fd = -1, .gz = NULL };
	bool opened = false;
	int status = 0, rc = 0, zr;

	for (int i = 0; i < nin; i++) {
		struct rtprof_gecko *g;
		const char *name = strcmp(in[i], "-") == 0 ? "<stdin>" : in[i];

		if (read_dump(in[i], progress, sym, &g) != 0)
			goto fail_out;
		if (rtprof_gecko_sessions(g) == 0) {
			fprintf(stderr, PROG ": %s: no session header found: "
			    "nothing to convert (the start of the dump is "
			    "missing?)\n", name);
			rtprof_gecko_free(g);
			goto fail_out;
		}
		if (!opened) {
			/* The output is created once the first dump read. */
			opened = true;
			if (strcmp(out_path, "-") == 0) {
				o.fd = STDOUT_FILENO;
			} else {
				o.fd = open(out_path, O_WRONLY | O_CREAT |
				    O_TRUNC | O_CLOEXEC, 0666);
				if (o.fd < 0) {
					fprintf(stderr, PROG ": %s: cannot "
					    "create: %s\n", oname,
					    strerror(errno));
					rtprof_gecko_free(g);
					return 2;
				}
				if (ends_with(out_path, ".gz")) {
					o.gz = gzdopen(o.fd, "wb6");
					if (o.gz == NULL) {
						fprintf(stderr, PROG ": %s: "
						    "cannot start gzip\n",
						    oname);
						close(o.fd);
						o.fd = -1;
						rtprof_gecko_free(g);
						goto fail_out;
					}
				}
			}
			if (rtprof_gecko_writer_new(&w, flt, write_out,
			    &o) != 0) {
				fprintf(stderr, PROG ": out of memory\n");
				rtprof_gecko_free(g);
				goto fail_out;
			}
		}
		rc = rtprof_gecko_writer_add(w, g);
		if (rc == 0 && rtprof_gecko_problems(g) != 0) {
			status = 1;
			if (!quiet)
				report_damage(g, name);
		}
		rtprof_gecko_free(g);
		if (rc != 0)
			break;
	}
	if (rc == 0) {
		rc = rtprof_gecko_writer_finish(w);
	} else {
		rtprof_gecko_writer_finish(w);
	}
	w = NULL;
	if (o.gz != NULL) {
		zr = gzclose(o.gz);
		o.gz = NULL;
		if (rc == 0 && zr != Z_OK)
			rc = -EIO;
	} else if (o.fd >= 0 && o.fd != STDOUT_FILENO) {
		if (close(o.fd) != 0 && rc == 0)
			rc = -errno;
	}
	o.fd = -1;
	if (rc != 0) {
		fprintf(stderr, PROG ": %s: writing: %s\n", oname,
		    strerror(-rc));
		goto fail_out;
	}
	if (!quiet && strcmp(out_path, "-") != 0)
		fprintf(stderr, PROG ": wrote %s; open it at "
		    "https://profiler.firefox.com\n", oname);
	return status;

fail_out:
	rtprof_gecko_writer_finish(w);
	if (o.gz != NULL)
		gzclose(o.gz);
	else if (o.fd >= 0 && o.fd != STDOUT_FILENO)
		close(o.fd);
	if (opened && strcmp(out_path, "-") != 0)
		unlink(out_path);
	return 2;
}

static bool
parse_ms(const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return errno == 0 && end != s && *end == '\0' && *v == *v;
}

/*
 * main - parse options and convert the dumps.
 * Context: main thread.
 * Return: exit status 0, 1 or 2 (see usage()).
 */
int
main(int argc, char **argv)
{
	struct rtprof_gecko_filter flt;
	struct rtprof_gecko_symbols sym;
	const char *out = NULL;
	char **in, **threads, **debug_dirs;
	struct stat sb;
	bool do_info = false, quiet = false, opts_done = false, stdin_used;
	int nin = 0, status;

	memset(&flt, 0, sizeof(flt));
	memset(&sym, 0, sizeof(sym));
	in = calloc((size_t)argc, sizeof(*in));
	threads = calloc((size_t)argc, sizeof(*threads));
	debug_dirs = calloc((size_t)argc, sizeof(*debug_dirs));
	if (in == NULL || threads == NULL || debug_dirs == NULL) {
		fprintf(stderr, PROG ": out of memory\n");
		status = 2;
		goto done;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has_arg = !opts_done && (strcmp(a, "-o") == 0 ||
		    strcmp(a, "--output") == 0 || strcmp(a, "--from") == 0 ||
		    strcmp(a, "--to") == 0 || strcmp(a, "--thread") == 0 ||
		    strcmp(a, "--sysroot") == 0 ||
		    strcmp(a, "--debug-dir") == 0);

		if (has_arg && i + 1 >= argc) {
			fprintf(stderr, PROG ": %s needs an argument\n", a);
			status = 2;
			goto done;
		}
		if (has_arg && (strcmp(a, "-o") == 0 ||
		    strcmp(a, "--output") == 0)) {
			out = argv[++i];
		} else if (has_arg && (strcmp(a, "--from") == 0 ||
		    strcmp(a, "--to") == 0)) {
			bool from = strcmp(a, "--from") == 0;

			if (!parse_ms(argv[++i], from ? &flt.from_ms :
			    &flt.to_ms)) {
				fprintf(stderr, PROG ": %s: not a number of "
				    "ms: %s\n", a, argv[i]);
				status = 2;
				goto done;
			}
			if (from)
				flt.has_from = true;
			else
				flt.has_to = true;
		} else if (has_arg && (strcmp(a, "--sysroot") == 0 ||
		    strcmp(a, "--debug-dir") == 0)) {
			const char *dir = argv[++i];

			/* A typo would silently give hex addresses. */
			if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
				fprintf(stderr, PROG ": %s: not a directory: "
				    "%s\n", a, dir);
				status = 2;
				goto done;
			}
			if (strcmp(a, "--sysroot") == 0)
				sym.sysroot = dir;
			else
				debug_dirs[sym.ndebug_dirs++] = argv[i];
		} else if (has_arg) {
			threads[flt.nthreads++] = argv[++i];
		} else if (!opts_done && strcmp(a, "--no-symbols") == 0) {
			sym.disabled = true;
		} else if (!opts_done && strcmp(a, "--info") == 0) {
			do_info = true;
		} else if (!opts_done && (strcmp(a, "-q") == 0 ||
		    strcmp(a, "--quiet") == 0)) {
			quiet = true;
		} else if (!opts_done && (strcmp(a, "-h") == 0 ||
		    strcmp(a, "--help") == 0)) {
			usage(stdout);
			status = 0;
			goto done;
		} else if (!opts_done && strcmp(a, "--") == 0) {
			opts_done = true;
		} else if (!opts_done && a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, PROG ": unknown option %s\n", a);
			usage(stderr);
			status = 2;
			goto done;
		} else {
			in[nin++] = argv[i];
		}
	}
	flt.threads = (const char *const *)threads;
	sym.debug_dirs = (const char *const *)debug_dirs;
	stdin_used = false;
	for (int i = 0; i < nin; i++) {
		if (strcmp(in[i], "-") != 0)
			continue;
		if (stdin_used) {
			fprintf(stderr, PROG ": stdin (-) given twice\n");
			status = 2;
			goto done;
		}
		stdin_used = true;
	}
	if (flt.has_from && flt.has_to && flt.to_ms < flt.from_ms) {
		fprintf(stderr, PROG ": --to is before --from\n");
		status = 2;
		goto done;
	}
	if (nin == 0 || (!do_info && out == NULL)) {
		usage(stderr);
		status = 2;
		goto done;
	}
	if (do_info)
		status = info(in, nin, !quiet && isatty(STDERR_FILENO));
	else
		status = convert(in, nin, out, &flt, &sym, quiet,
		    !quiet && isatty(STDERR_FILENO));
done:
	free(in);
	free(threads);
	free(debug_dirs);
	return status;
}
