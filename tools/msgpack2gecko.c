/*
 * msgpack2gecko.c - convert rtprof dumps into a Firefox Profiler profile,
 * or a pprof profile.
 *
 *   msgpack2gecko [options] DUMP... -o OUT     (- for stdin / stdout)
 *   msgpack2gecko --format pprof [options] DUMP... -o OUT.pb.gz
 *   msgpack2gecko --info DUMP...
 *
 * OUT ending in ".gz" is gzip-compressed; a pprof profile always is. Every session of every dump is
 * one process; the first is the top level (codec/gecko.h). Dumps are read
 * and written out one at a time. Exit status: see usage().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "convert.h"
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
	    "  --format FMT      gecko (the default: Firefox Profiler JSON) or\n"
	    "                    pprof: a gzipped profile.proto for go tool\n"
	    "                    pprof, Pyroscope, Parca, speedscope (samples\n"
	    "                    and CPU time per stack, labels thread, tid,\n"
	    "                    process, pid, host; see docs/pprof.md); with\n"
	    "                    --no-symbols pprof symbolizes the addresses\n"
	    "                    itself\n");
	fputs(tool_convert_help, f);
	fprintf(f,
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
	    "     a --thread NAME no thread has (the threads are listed; no\n"
	    "     output file is left), or the output could not be written\n"
	    "Files that could not be used for symbols (missing, build id\n"
	    "mismatch) are listed in profileGatheringLog; they leave the exit\n"
	    "status unchanged.\n"
	    );
}

static bool
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Context: main thread. Return: exit status. */
static int
info(char **in, int nin, bool progress)
{
	int status = 0;

	for (int i = 0; i < nin; i++) {
		struct rtprof_gecko *g;

		if (tool_read_dump(PROG, in[i], progress, NULL, &g) != 0)
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

/*
 * The output file or stdout, opened once the first dump is read. The sink
 * context is the whole struct: tool_out_write() sees its first member.
 */
struct output {
	struct tool_out o;
	const char *path;
	const char *name;
	/* A regular file: removed when the conversion fails. Anything else
	 * (a device such as /dev/full, a FIFO) is left where it is. */
	bool regular;
	bool gzip;                      /* whatever the name (pprof) */
};

/* Context: main thread (tool_convert_sink.open). Return: 0 or -1. */
static int
output_open(void *ctx)
{
	struct output *out = ctx;
	struct stat sb;

	if (strcmp(out->path, "-") == 0) {
		out->o.fd = STDOUT_FILENO;
	} else {
		out->o.fd = open(out->path, O_WRONLY | O_CREAT | O_TRUNC |
		    O_CLOEXEC, 0666);
		if (out->o.fd < 0) {
			fprintf(stderr, PROG ": %s: cannot create: %s\n",
			    out->name, strerror(errno));
			return -1;
		}
		out->regular = fstat(out->o.fd, &sb) == 0 &&
		    S_ISREG(sb.st_mode);
	}
	if (out->gzip || (out->o.fd != STDOUT_FILENO &&
	    ends_with(out->path, ".gz"))) {
		if (gzout_open(&out->o.zo, out->o.fd) != 0) {
			fprintf(stderr, PROG ": %s: cannot start gzip\n",
			    out->name);
			if (out->o.fd != STDOUT_FILENO)
				close(out->o.fd);
			out->o.fd = -1;
			if (out->regular)
				unlink(out->path);
			return -1;
		}
	}
	return 0;
}

/* Context: main thread. Return: exit status. */
static int
convert(char **in, int nin, const char *out_path,
    const struct tool_convert_opts *opts, bool quiet, bool progress)
{
	struct output out = {
		.path = out_path,
		.name = strcmp(out_path, "-") == 0 ? "<stdout>" : out_path,
		.o = { .fd = -1, .gz = NULL, .zo = NULL },
		.gzip = opts->format == TOOL_FORMAT_PPROF,
	};
	const struct tool_convert_sink sink = {
		.open = output_open, .write = tool_out_write, .ctx = &out,
	};
	bool opened;
	int status, rc, zr;

	status = tool_convert(PROG, in, nin, opts, quiet, progress, &sink,
	    &opened, &rc);
	if (!opened)
		return 2;
	if (out.o.zo != NULL) {
		/* The last compressed bytes are written here: a full disk
		 * shows as write(2)'s errno. */
		zr = gzout_close(out.o.zo);
		if (rc == 0 && status != 2 && zr != 0)
			rc = zr;
		if (out.o.fd != STDOUT_FILENO && close(out.o.fd) != 0 &&
		    rc == 0 && status != 2)
			rc = -errno;
	} else if (out.o.fd >= 0 && out.o.fd != STDOUT_FILENO) {
		if (close(out.o.fd) != 0 && rc == 0 && status != 2)
			rc = -errno;
	}
	if (rc != 0)
		fprintf(stderr, PROG ": %s: writing: %s\n", out.name,
		    strerror(-rc));
	if (rc != 0 || status == 2) {
		if (out.regular)
			unlink(out_path);
		return 2;
	}
	if (!quiet && strcmp(out_path, "-") != 0 &&
	    opts->format == TOOL_FORMAT_PPROF)
		fprintf(stderr, PROG ": wrote %s; read it with `go tool pprof "
		    "-top %s` (or -http=:8080)\n", out.name, out.name);
	else if (!quiet && strcmp(out_path, "-") != 0)
		fprintf(stderr, PROG ": wrote %s; open it at "
		    "https://profiler.firefox.com\n", out.name);
	return status;
}

/*
 * main - parse options and convert the dumps.
 * Context: main thread.
 * Return: exit status 0, 1 or 2 (see usage()).
 */
int
main(int argc, char **argv)
{
	struct tool_convert_opts opts;
	const char *out = NULL;
	char **in;
	bool do_info = false, quiet = false, opts_done = false, stdin_used;
	int nin = 0, status, r;

	in = calloc((size_t)argc, sizeof(*in));
	if (in == NULL) {
		fprintf(stderr, PROG ": out of memory\n");
		return 2;
	}
	if (tool_convert_opts_init(&opts, PROG, argc) != 0) {
		free(in);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!opts_done && (strcmp(a, "-o") == 0 ||
		    strcmp(a, "--output") == 0)) {
			if (i + 1 >= argc) {
				fprintf(stderr, PROG ": %s needs an "
				    "argument\n", a);
				status = 2;
				goto done;
			}
			out = argv[++i];
		} else if (!opts_done && strcmp(a, "--format") == 0) {
			if (i + 1 >= argc || (strcmp(argv[i + 1], "gecko") != 0
			    && strcmp(argv[i + 1], "pprof") != 0)) {
				fprintf(stderr, PROG ": --format takes gecko or "
				    "pprof\n");
				status = 2;
				goto done;
			}
			opts.format = strcmp(argv[++i], "pprof") == 0 ?
			    TOOL_FORMAT_PPROF : TOOL_FORMAT_GECKO;
		} else if (!opts_done && (r = tool_convert_option(&opts, PROG,
		    argc, argv, &i)) != 0) {
			if (r < 0) {
				status = 2;
				goto done;
			}
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
	if (tool_convert_check(&opts, PROG) != 0) {
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
		status = convert(in, nin, out, &opts, quiet,
		    !quiet && isatty(STDERR_FILENO));
done:
	free(in);
	tool_convert_opts_free(&opts);
	return status;
}
