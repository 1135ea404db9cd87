/*
 * summarize.c - `rtprof summarize`: dumps or profiles read for people.
 *
 *   rtprof summarize [--top N] [--folded] [--sysroot DIR] [--no-symbols]
 *                    FILE...
 *
 * FILE is an rtprof dump, or a profile already converted from dumps (a
 * Gecko profile, .json or .json.gz, as msgpack2gecko and `rtprof record`
 * write it); several, of either kind, are aggregated (one per process).
 * Prints:
 *   - time blocked by call ("Blocked" markers of `rtprof record`: count,
 *     total, mean, longest);
 *   - time blocked by stack: the calls that blocked at least the
 *     threshold carry the stack where they blocked (a BACKTRACE record
 *     after the marker in a dump; the marker's cause in a profile); calls
 *     with the same call and the same stack (function names, so across
 *     threads and processes) are one row, the top N by total time;
 *   - CPU time per thread (the sampler's CPU deltas: threadCPUDelta);
 *   - the top functions by self samples: the leaf of each on-CPU sample
 *     (in a dump a SAMPLE record, not a SAME: the thread had not run or
 *     was asleep; in a profile the thread's first sample, and any other
 *     whose leaf is not Idle and whose CPU delta reaches the sampler's own
 *     2%-of-a-tick limit), symbolized like the converter does;
 *   - samples without a stack because the thread blocked the sampling
 *     signal (flag SIG_BLOCKED, dumps only: a profile does not say), per
 *     thread: not counted as self samples, no folded stack;
 *   - time off CPU by the kernel's reason (tools/summarize_block.c):
 *     off-CPU samples with the kernel's stack where the thread went off
 *     CPU (KSTACK records; "kernel: ..." leaf frames in a profile);
 *   - with --folded, folded stacks instead ("a;b;c N" lines, outermost
 *     first, for flame-graph tools).
 * A dump is read with the codec's reader (no profile is built); a profile
 * with the small JSON reader of summarize_json.c, zlib-inflated when it is
 * gzip: one pass finds the metas (the top-level one is written last), a
 * second one reads the threads one at a time, so memory follows the
 * largest thread, not the whole profile.
 *
 * Pipeline (summarize_int.h, one file a stage): here the options, then
 * each FILE read and aggregated (summarize_dump*.c, summarize_prof*.c into
 * summarize_agg.c's tables), then the report (summarize_report.c).
 *
 * Context: the tool's main thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "summarize.h"
#include "summarize_int.h"

void
summarize_usage(FILE *f)
{
	fprintf(f,
	    "usage: rtprof summarize [--top N] [--folded] [--sysroot DIR] "
	    "[--no-symbols] FILE...\n"
	    "Time blocked by call and by stack, CPU time per thread and the\n"
	    "top functions by self samples of rtprof dumps or of profiles\n"
	    "converted from them (.json, .json.gz); several: aggregated.\n"
	    "  --top N         rows per table, the by-stack one included: the\n"
	    "                  N biggest by total, then how many more (20)\n"
	    "  --folded        print folded stacks (\"a;b;c N\") instead, for\n"
	    "                  flame-graph tools\n"
	    "  --sysroot DIR   where the recorded machine's files are (dumps)\n"
	    "  --no-symbols    do not symbolize native frames: they stay hex\n"
	    "                  (no file a dump names is opened)\n"
	    "Exit status: 0; 1 a dump had damage (what could be read was\n"
	    "summarized); 2 usage error, unreadable input, or a FILE that is\n"
	    "neither a dump nor a whole profile (JSON that is cut short or\n"
	    "has no meta.version and threads).\n");
}

/* --top's argument @a into *@top. Return: 0, or 2 (said). */
static int
parse_top(const char *a, size_t *top)
{
	char *end;

	errno = 0;
	*top = (size_t)strtoul(a, &end, 10);
	if (*a < '0' || *a > '9' || *end != '\0' || errno != 0 || *top == 0) {
		fprintf(stderr, PROG ": --top: not a number of rows above 0: "
		    "%s\n", a);
		return 2;
	}
	return 0;
}

/* The options, into @s and *@top; *@i: the first FILE. Return: -1 (go
 * on), or the exit status (usage printed, or an error said). */
static int
parse_args(int argc, char **argv, struct sum *s, size_t *top, int *i)
{
	for (*i = 1; *i < argc && argv[*i][0] == '-' && argv[*i][1] != '\0';
	    ++*i) {
		const char *a = argv[*i];

		if (strcmp(a, "--top") == 0 && *i + 1 < argc) {
			if (parse_top(argv[++*i], top) != 0)
				return 2;
		} else if (strcmp(a, "--folded") == 0) {
			s->folded = true;
		} else if (strcmp(a, "--sysroot") == 0 && *i + 1 < argc) {
			s->sysroot = argv[++*i];
		} else if (strcmp(a, "--no-symbols") == 0) {
			s->no_symbols = true;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			summarize_usage(stdout);
			return 0;
		} else {
			fprintf(stderr, PROG ": unknown option %s\n", a);
			summarize_usage(stderr);
			return 2;
		}
	}
	if (*i >= argc) {
		summarize_usage(stderr);
		return 2;
	}
	return -1;
}

/* Each FILE, a dump or a profile, into @s. Return: the exit status so
 * far: 0; 1 (a dump had damage); 2 (said: the report is not printed). */
static int
read_inputs(struct sum *s, int n, char **files)
{
	int status = 0;

	for (int i = 0; i < n; i++) {
		bool prof;
		int rc = sum_is_profile(files[i], &prof);

		if (rc != 0) {
			fprintf(stderr, PROG ": %s: %s\n", files[i],
			    strerror(-rc));
			return 2;
		}
		rc = prof ? sum_read_profile(s, files[i]) :
		    sum_read_dump(s, files[i]);
		if (rc == 2)
			return 2;
		if (rc == 1)
			status = 1;
	}
	return status;
}

/* Context: main thread. Return: the exit status. */
int
cmd_summarize(int argc, char **argv)
{
	struct sum s;
	size_t top = 20;
	int i, status;

	memset(&s, 0, sizeof(s));
	s.blocked_type = -1;
	if ((status = parse_args(argc, argv, &s, &top, &i)) >= 0)
		return status;
	s.off = sblock_new();
	if (s.off == NULL) {
		fprintf(stderr, PROG ": out of memory\n");
		return 2;
	}
	status = read_inputs(&s, argc - i, argv + i);
	if (status != 2)
		sum_report(&s, top);
	sum_free(&s);
	return status;
}
