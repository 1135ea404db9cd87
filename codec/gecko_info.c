/*
 * gecko_info.c - --info: a summary of what a dump holds, read by gecko_read.c,
 * printed instead of converted (terminal-safe, esc.h).
 *
 * Pipeline (gecko_int.h): after reading, instead of writing.
 *
 * Context: any thread; no shared state (gecko.h per function).
 */
#include <inttypes.h>
#include <stdio.h>

#include "esc.h"
#include "gecko_int.h"

static void
print_session(const struct gsess *g, FILE *out)
{
	uint64_t drop_full = 0, drop_nested = 0;
	size_t nschema;

	fprintf(out, "session %" PRIu64 ":\n", g->ordinal);
	{
		char p[256], e[1024], c[64];

		/* Dump strings, escaped for the terminal (esc.h). */
		fprintf(out, "process %" PRId64 " \"%s\" (%s), clock %s at "
		    "%.0f ticks/s, ", g->pid, rtprof_esc(p, sizeof(p), g->process),
		    rtprof_esc(e, sizeof(e), g->exe),
		    rtprof_esc(c, sizeof(c), g->clock_source != NULL ?
		    g->clock_source : "?"), g->ticks_per_second);
		/* RTPROF_SAMPLING_OFF (0xffffffff): the session ran without
		 * the sampler. */
		if (g->sample_interval_us >= 0xffffffffu)
			fputs("sampler off\n", out);
		else
			fprintf(out, "sample interval %" PRIu64 " us\n",
			    g->sample_interval_us);
		if (g->sampling_method != NULL && g->sampling_method[0])
			fprintf(out, "sampling: %s (%s)\n", g->sampling_method,
			    g->sampling_why != NULL ? g->sampling_why : "");
		if (g->have_t)
			fprintf(out, "events from %.3f ms to %.3f ms\n",
			    gecko_ms(g, g->first_t), gecko_ms(g, g->last_t));
		fprintf(out, "session %s trailer", g->have_trailer ?
		    "ends with a" : "has no");
		if (g->have_trailer)
			fprintf(out, " (stop at %.3f ms)",
			    gecko_ms(g, g->stop_ticks));
		if (g->tr_threads_omitted != 0)
			fprintf(out, "; the size cap left the counts of %"
			    PRIu64 " thread(s) out of it",
			    g->tr_threads_omitted);
		fprintf(out, "\n");
	}
	fprintf(out, "%zu thread(s):\n", g->nth);
	for (size_t i = 0; i < g->nth; i++) {
		const struct gthread *th = &g->th[i];
		char nm[256];

		drop_full += th->dropped_full;
		drop_nested += th->dropped_nested;
		fprintf(out, "  tid %" PRId64 " \"%s\"%s%s%s: %" PRIu64
		    " records, %" PRIu64 " samples", th->tid,
		    rtprof_esc(nm, sizeof(nm), th->name),
		    th->flags & 2 ? " main" : "",
		    th->flags & 1 ? " real-time" : "",
		    th->flags & 4 ? " sampler" : "", th->recs, th->nsmp);
		if (g->have_header && th->has_reg)
			fprintf(out, ", registered %.3f ms",
			    gecko_ms(g, th->reg));
		if (g->have_header && th->has_unreg)
			fprintf(out, ", exited %.3f ms", gecko_ms(g, th->unreg));
		if (th->dropped_full != 0 || th->dropped_nested != 0)
			fprintf(out, ", dropped %" PRIu64 " (full) %" PRIu64
			    " (nested)", th->dropped_full, th->dropped_nested);
		fprintf(out, "\n");
	}
	fprintf(out, "records:");
	for (unsigned k = 1; k <= RTPROF_REC_KIND_MAX; k++)
		fprintf(out, " %s %" PRIu64, rtprof_dump_rec_kind_name(k),
		    g->recs_by_kind[k]);
	nschema = g->nschema;
	fprintf(out, "\n%zu counter(s), %zu marker type(s), %zu pause(s), "
	    "%" PRIu64 " event(s)\n", g->nctr, nschema, g->npause,
	    g->ev_total);
	fprintf(out, "dropped at the source: %" PRIu64 " (no chunk), %" PRIu64
	    " (re-entrant)\n", drop_full, drop_nested);
	/* A sample of a thread that blocked the signal has no stack (its
	 * labels at most): not counted as one. */
	fprintf(out, "samples: %" PRIu64 " with a stack, %" PRIu64 " same "
	    "stack (%" PRIu64 " unknown), %" PRIu64 " truncated, %" PRIu64
	    " with the signal blocked\n", g->nsamples - g->nsig_blocked,
	    g->nsame, g->nsame_unknown, g->ntruncated, g->nsig_blocked);
	for (size_t i = 0; i < g->nth; i++)
		if (g->th[i].nsig_blocked != 0)
			fprintf(out, "  %" PRIu64 " samples of thread \"%s\" "
			    "(tid %" PRId64 ") had the signal blocked\n",
			    g->th[i].nsig_blocked, g->th[i].name != NULL ?
			    g->th[i].name : "", g->th[i].tid);
	if (g->ovh_ticks != 0)
		fprintf(out, "sampler overhead: %" PRIu64 " ticks, %.0f ns "
		    "per tick on average, %" PRIu64 " ns at most\n",
		    g->ovh_ticks, (double)(g->ovh_sum[0] + g->ovh_sum[1] +
		    g->ovh_sum[2]) / (double)g->ovh_ticks, g->ovh_max);
}

int
rtprof_gecko_print_info(const struct rtprof_gecko *g, FILE *out)
{
	const struct rtprof_dump_stats *st = &g->stats;

	fprintf(out, "%s: %" PRIu64 " bytes, %" PRIu64 " frames, %" PRIu64
	    " session(s)\n", g->input, st->bytes, st->frames, st->sessions);
	if (g->nsess == 0)
		fprintf(out, "no session header: nothing to convert\n");
	for (size_t i = 0; i < g->nsess; i++)
		if (g->sess[i]->have_header)
			print_session(g->sess[i], out);
	if (g->ignored_frames != 0)
		fprintf(out, "ignored: %" PRIu64 " frame(s) of %" PRIu64
		    " session(s) without a header\n", g->ignored_frames,
		    g->ignored_sessions);
	fprintf(out, "damage: %" PRIu64 " report(s)\n", g->dmg_total);
	for (size_t i = 0; i < g->ndmg; i++) {
		fprintf(out, "  offset %" PRIu64 ": %s: ", g->dmg[i].offset,
		    rtprof_dump_damage_name(g->dmg[i].kind));
		rtprof_esc_puts(out, g->dmg[i].message);
		fprintf(out, " (count %" PRIu64 ")\n", g->dmg[i].count);
	}
	return ferror(out) ? -EIO : 0;
}
