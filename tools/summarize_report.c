/*
 * summarize_report.c - the report of `rtprof summarize`: the tables, for
 * people, or the folded stacks, for flame-graph tools.
 *
 * Pipeline (summarize_int.h): every input read and aggregated -> here,
 * once. Each table is sorted by total, biggest first (ties by name), cut
 * at --top rows with how many more; names from the dumps or profiles are
 * escaped (esc.h).
 *
 * Context: the tool's main thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "esc.h"
#include "summarize_int.h"

static void
print_by_stack(const struct sum *s, size_t top)
{
	struct agg_ent *v = agg_sorted(&s->bstack);

	printf("\nTime blocked, by stack (calls that blocked at least the "
	    "threshold,\nwith the stack where they blocked, innermost "
	    "frame first):\n");
	if (s->bstack.n == 0)
		printf("  (no backtrace recorded)\n");
	for (size_t k = 0; v != NULL && k < s->bstack.n && k < top; k++) {
		const char *p = v[k].key, *nl = strchr(p, KEY_SEP);

		/* Names from the dump or profile: escaped (esc.h). */
		printf("  ");
		rtprof_esc_write(stdout, p, nl != NULL ? (size_t)(nl - p) :
		    strlen(p), 0);
		printf(": %" PRIu64 " call%s, %.3f ms (mean %.3f ms, "
		    "max %.3f ms)\n", v[k].n, v[k].n == 1 ? "" : "s", v[k].total,
		    v[k].total / (double)v[k].n, v[k].max);
		while (nl != NULL) {
			p = nl + 1;
			nl = strchr(p, KEY_SEP);
			printf("        ");
			rtprof_esc_write(stdout, p, nl != NULL ?
			    (size_t)(nl - p) : strlen(p), 0);
			printf("\n");
		}
	}
	if (s->bstack.n > top)
		printf("  (%zu more stacks)\n", s->bstack.n - top);
	if (s->nostack_n != 0)
		printf("  (without a stack: %" PRIu64 " call%s, %.3f ms: "
		    "under the threshold)\n", s->nostack_n,
		    s->nostack_n == 1 ? "" : "s", s->nostack_ms);
	free(v);
}

/* CPU time per thread: the top @top, how many more, and the total. */
static void
print_cpu(const struct sum *s, size_t top)
{
	struct agg_ent *v = agg_sorted(&s->cpu);
	double total = 0, rest = 0;
	char e[1024];

	printf("\nCPU time by thread (from %" PRIu64 " samples):\n",
	    s->samples);
	for (size_t k = 0; v != NULL && k < s->cpu.n; k++) {
		total += v[k].total;
		if (k < top)
			printf("  %12.3f ms  %s\n", v[k].total,
			    rtprof_esc(e, sizeof(e), v[k].key));
		else
			rest += v[k].total;
	}
	if (v != NULL && s->cpu.n > top)
		printf("  %12.3f ms  (%zu more thread%s)\n", rest,
		    s->cpu.n - top, s->cpu.n - top == 1 ? "" : "s");
	if (v != NULL)
		printf("  %12.3f ms  total, %zu thread%s\n", total, s->cpu.n,
		    s->cpu.n == 1 ? "" : "s");
	free(v);
}

/* The folded stacks, "a;b;c N" lines. */
static void
print_folded(const struct sum *s)
{
	struct agg_ent *v = agg_sorted(&s->folded_stacks);

	for (size_t k = 0; v != NULL && k < s->folded_stacks.n; k++) {
		rtprof_esc_puts(stdout, v[k].key);
		printf(" %" PRIu64 "\n", v[k].n);
	}
	free(v);
}

/* Time blocked by call: the top @top. */
static void
print_by_call(const struct sum *s, size_t top)
{
	struct agg_ent *v = agg_sorted(&s->blocked);
	char e[1024];                   /* a name, escaped */

	printf("Time blocked, by call (rtprof record's \"Blocked\" markers):\n");
	if (s->blocked.n == 0)
		printf("  (none recorded)\n");
	else
		printf("  %-24s %10s %12s %10s %10s\n", "call", "count",
		    "total ms", "mean ms", "max ms");
	for (size_t k = 0; v != NULL && k < s->blocked.n && k < top; k++)
		printf("  %-24s %10" PRIu64 " %12.3f %10.3f %10.3f\n",
		    rtprof_esc(e, sizeof(e), v[k].key), v[k].n, v[k].total,
		    v[k].total / (double)v[k].n, v[k].max);
	free(v);
}

/* Samples without a stack, the signal blocked: per thread. */
static void
print_sig_blocked(const struct sum *s, size_t top)
{
	struct agg_ent *v = agg_sorted(&s->sig_blocked);

	if (s->sig_blocked.n != 0)
		printf("\nSamples without a stack, the sampling signal "
		    "blocked:\n");
	for (size_t k = 0; v != NULL && k < s->sig_blocked.n && k < top; k++)
		printf("  %" PRIu64 " samples of thread %s had the signal "
		    "blocked\n", v[k].n, v[k].key);
	if (s->sig_blocked.n > top)
		printf("  (%zu more threads)\n", s->sig_blocked.n - top);
	free(v);
}

/* The top @top functions by self samples, with their share. */
static void
print_self(const struct sum *s, size_t top)
{
	struct agg_ent *v = agg_sorted(&s->self);
	char e[1024];

	printf("\nTop functions by self samples:\n");
	for (size_t k = 0, all = 0; v != NULL && k < s->self.n && k < top;
	    k++) {
		if (k == 0)
			for (size_t j = 0; j < s->self.n; j++)
				all += v[j].n;
		printf("  %8" PRIu64 "  %5.1f%%  %s\n", v[k].n,
		    100.0 * (double)v[k].n / (double)all,
		    rtprof_esc(e, sizeof(e), v[k].key));
	}
	free(v);
}

void
sum_report(const struct sum *s, size_t top)
{
	if (s->folded) {
		print_folded(s);
		return;
	}
	print_by_call(s, top);
	if (s->blocked.n != 0)
		print_by_stack(s, top);
	sblock_print(s->off, stdout, top);
	print_cpu(s, top);
	print_sig_blocked(s, top);
	print_self(s, top);
}
