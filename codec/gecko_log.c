/*
 * gecko_log.c - writing: a process's profileGatheringLog.
 *
 * Pipeline (gecko_int.h): written by gecko_process.c after the threads,
 * so that it tells how symbolication went: what was read (frames,
 * records, sessions), what was damaged or lost (damage reports, drops,
 * missing records, no trailer), the sampler's counts and overhead, and
 * the gathering notes of rtprof record.
 *
 * Context: any thread; no shared state (gecko.h per function).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gecko_int.h"

static void
log_sym_problem(void *arg, const char *line)
{
	json_str(arg, line);
}

/* The sampler's records: samples and the profiler's own cost. */
static void
write_sampler_log(struct gsess *g, struct json *j)
{
	const struct rtprof_gecko_symbols *so = &g->file->symopt;

	json_key(j, "sampler");
	json_obj(j);
	json_key(j, "samples");
	json_u64(j, g->nsamples);
	json_key(j, "sameStack");
	json_u64(j, g->nsame);
	json_key(j, "sameStackUnknown");
	json_u64(j, g->nsame_unknown);
	json_key(j, "truncated");
	json_u64(j, g->ntruncated);
	json_key(j, "noNativeFrames");
	json_u64(j, g->nno_native);
	json_key(j, "signalBlocked");
	json_u64(j, g->nsig_blocked);
	json_obj_end(j);
	if (g->ovh_ticks != 0) {
		uint64_t total = g->ovh_sum[0] + g->ovh_sum[1] + g->ovh_sum[2];

		json_key(j, "samplerOverhead");
		json_obj(j);
		json_key(j, "ticks");
		json_u64(j, g->ovh_ticks);
		json_key(j, "totalNs");
		json_u64(j, total);
		json_key(j, "meanNsPerTick");
		json_f64(j, (double)total / (double)g->ovh_ticks);
		json_key(j, "maxNsPerTick");
		json_u64(j, g->ovh_max);
		json_key(j, "lockNs");
		json_u64(j, g->ovh_sum[0]);
		json_key(j, "threadsNs");
		json_u64(j, g->ovh_sum[1]);
		json_key(j, "countersNs");
		json_u64(j, g->ovh_sum[2]);
		json_key(j, "meanThreadsPerTick");
		json_f64(j, (double)g->ovh_sum[3] / (double)g->ovh_ticks);
		json_obj_end(j);
	}
	json_key(j, "symbolication");
	json_obj(j);
	json_key(j, "ran");
	json_bool(j, g->sym != NULL);
	if (so->disabled) {
		json_key(j, "disabled");
		json_bool(j, true);
	}
	if (so->sysroot != NULL) {
		json_key(j, "sysroot");
		json_str(j, so->sysroot);
	}
	json_key(j, "addresses");
	json_u64(j, g->sym_addrs);
	json_key(j, "resolved");
	json_u64(j, g->sym_resolved);
	if (g->sym != NULL) {
		json_key(j, "moduleProblems");
		json_arr(j);
		rtprof_symbolizer_problems(g->sym, log_sym_problem, j);
		json_arr_end(j);
	}
	json_obj_end(j);
}

/*
 * The gathering notes (rtprof_gecko_writer_note): all of them in the
 * top-level process, the ones about its own dump in any other.
 */
static void
write_notes(struct gsess *g, struct json *j)
{
	bool any = false;

	for (size_t i = 0; i < g->nnotes; i++) {
		const struct rtprof_gecko_note *n = &g->notes[i];
		bool mine = n->dump != NULL && strcmp(n->dump, g->file->input) == 0;

		if (!g->top && !mine)
			continue;
		if (!any) {
			json_key(j, "gathering");
			json_arr(j);
			any = true;
		}
		json_obj(j);
		json_key(j, "what");
		json_str(j, n->what);
		if (n->pid != 0) {
			json_key(j, "pid");
			json_i64(j, n->pid);
		}
		if (n->program != NULL) {
			json_key(j, "program");
			json_str(j, n->program);
		}
		if (n->reason != NULL) {
			json_key(j, "reason");
			json_str(j, n->reason);
		}
		if (n->dump != NULL) {
			json_key(j, "dump");
			json_str(j, n->dump);
			if (g->top) {
				json_key(j, "thisProcess");
				json_bool(j, mine);
			}
		}
		if (n->bytes >= 0) {
			json_key(j, "bytes");
			json_i64(j, n->bytes);
		}
		if (n->wall_ns != 0) {
			char buf[48];
			time_t sec = (time_t)(n->wall_ns / 1000000000);
			struct tm tm;

			/* ms in this process's time, like its markers. */
			json_key(j, "time");
			json_f64(j, rtprof_ns_diff(n->wall_ns,
			    g->start_wall_ns) / 1e6);
			if (gmtime_r(&sec, &tm) != NULL) {
				size_t k = strftime(buf, sizeof(buf),
				    "%Y-%m-%dT%H:%M:%S", &tm);

				snprintf(buf + k, sizeof(buf) - k, ".%03dZ",
				    (int)(n->wall_ns / 1000000 % 1000));
				json_key(j, "wallClock");
				json_str(j, buf);
			}
		}
		json_obj_end(j);
	}
	if (any)
		json_arr_end(j);
}

/* Why the times of @g are not at its HEADER's clock rate. */
static void
write_clock_note(const struct gsess *g, struct json *j)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "the dump's clock rate, %g ticks per "
	    "second, is not a plausible one (%g to %g): times are "
	    "computed at 1e9 (ticks taken as nanoseconds), or at the rate "
	    "measured between the header and the trailer", g->bad_rate,
	    CLOCK_RATE_MIN, CLOCK_RATE_MAX);
	json_key(j, "clockNote");
	json_str(j, msg);
}

/* Who converted what: the input, the session, its pid, how it was sampled. */
static void
log_origin(const struct gsess *g, struct json *j)
{
	const struct rtprof_gecko *fg = g->file;

	json_key(j, "converter");
	json_str(j, "msgpack2gecko (rtprof) milestone 2");
	json_key(j, "input");
	json_str(j, fg->input);
	json_key(j, "session");
	json_u64(j, g->ordinal);
	json_key(j, "pid");
	json_i64(j, g->pid);
	if (g->out_pid != g->pid) {
		json_key(j, "pidNote");
		json_str(j, "pid already used by an earlier process of this "
		    "profile: the front-end keeps one main thread per pid, so "
		    "this process is shown under a made-up pid");
	}
	if (g->flt != NULL && (g->flt->has_from || g->flt->has_to ||
	    g->flt->nthreads != 0)) {
		json_key(j, "filtered");
		json_bool(j, true);
	}
	if (g->sampling_method != NULL && g->sampling_method[0] != '\0') {
		/* How the stacks were taken, and why (the setting that would
		 * allow perf events where signals were used). */
		json_key(j, "sampling");
		gecko_sampling_obj(g, j);
	}
	if (g->rate_replaced)
		write_clock_note(g, j);
}

/* What was read of the dump, and every kind of damage met in it. */
static void
log_reading(const struct gsess *g, struct json *j)
{
	const struct rtprof_gecko *fg = g->file;
	const struct rtprof_dump_stats *st = &fg->stats;

	json_key(j, "bytesRead");
	json_u64(j, st->bytes);
	json_key(j, "frames");
	json_u64(j, st->frames);
	json_key(j, "records");
	json_u64(j, st->records);
	json_key(j, "damageReports");
	json_u64(j, fg->dmg_total);
	json_key(j, "damage");
	json_arr(j);
	for (size_t i = 0; i < fg->ndmg; i++) {
		const struct gdamage *d = &fg->dmg[i];

		json_obj(j);
		json_key(j, "kind");
		json_str(j, rtprof_dump_damage_name(d->kind));
		json_key(j, "offset");
		json_u64(j, d->offset);
		json_key(j, "length");
		json_u64(j, d->length);
		json_key(j, "count");
		json_u64(j, d->count);
		json_key(j, "session");
		json_u64(j, d->session_index);
		json_key(j, "message");
		json_str(j, d->message != NULL ? d->message : "");
		json_obj_end(j);
	}
	json_arr_end(j);
	if (fg->dmg_total > fg->ndmg) {
		json_key(j, "damageNotListed");
		json_u64(j, fg->dmg_total - fg->ndmg);
	}
	json_key(j, "damagedFrames");
	json_u64(j, st->bad_frames);
	json_key(j, "skippedBytes");
	json_u64(j, st->skipped_bytes);
	json_key(j, "sequenceGaps");
	json_u64(j, st->seq_gaps);
	json_key(j, "repeatedFrames");
	json_u64(j, st->seq_dups);
	json_key(j, "badPayloads");
	json_u64(j, st->bad_payloads);
	json_key(j, "badRecords");
	json_u64(j, st->bad_records);
	json_key(j, "truncatedTailBytes");
	json_u64(j, st->truncated_tail_bytes);
	json_key(j, "unknownFrames");
	json_u64(j, st->unknown_frames);
	json_key(j, "newerVersionFrames");
	json_u64(j, st->newer_version_frames);
	json_key(j, "sessions");
	json_u64(j, st->sessions);
	json_key(j, "ignoredSessions");
	json_u64(j, fg->ignored_sessions);
	json_key(j, "ignoredFrames");
	json_u64(j, fg->ignored_frames);
}

/* Whether the session's TRAILER came, and what it says was lost. */
static void
log_trailer(const struct gsess *g, struct json *j)
{
	json_key(j, "trailer");
	json_bool(j, g->have_trailer);
	if (!g->have_trailer) {
		json_key(j, "incomplete");
		json_str(j, "the dump ends without a trailer: the process was "
		    "still running, stopped or killed when the dump was read "
		    "(what it wrote until then is here; what it had not "
		    "written yet is missing)");
	}
	if (g->have_trailer) {
		json_key(j, "chunksLost");
		json_u64(j, g->tr_chunks_lost);
		if (g->tr_samples_lost != 0) {
			json_key(j, "samplerRecordsLost");
			json_u64(j, g->tr_samples_lost);
			json_key(j, "samplerRecordsLostWhy");
			json_str(j, "the kernel's perf ring of a sampled thread "
			    "was full between two drains of the sampler: some "
			    "of its samples and switch records are missing, "
			    "and its time on and off CPU is less exact");
		}
		if (g->tr_threads_omitted != 0) {
			json_key(j, "threadCountsOmitted");
			json_u64(j, g->tr_threads_omitted);
		}
		json_key(j, "limitReached");
		json_bool(j, g->tr_limit_reached);
	}
}

/* Per thread: records decoded, drops, and the trailer's counts. */
static void
log_threads(const struct gsess *g, struct json *j)
{
	json_key(j, "threads");
	json_arr(j);
	for (size_t i = 0; i < g->nth; i++) {
		const struct gthread *th = &g->th[i];

		json_obj(j);
		json_key(j, "tid");
		json_i64(j, th->tid);
		json_key(j, "recordsDecoded");
		json_u64(j, th->recs);
		json_key(j, "droppedFull");
		json_u64(j, th->dropped_full);
		json_key(j, "droppedNested");
		json_u64(j, th->dropped_nested);
		if (th->flags & GECKO_THREAD_RT) {
			json_key(j, "realTime");
			json_bool(j, true);
		}
		if (th->flags & GECKO_THREAD_SAMPLER) {
			json_key(j, "sampler");
			json_bool(j, true);
		}
		if (th->nsmp != 0) {
			json_key(j, "samples");
			json_u64(j, th->nsmp);
		}
		if (th->settled) {
			json_key(j, "recorded");
			json_u64(j, th->tr.recorded);
			json_key(j, "trailerDroppedFull");
			json_u64(j, th->tr.dropped_full);
			json_key(j, "trailerDroppedNested");
			json_u64(j, th->tr.dropped_nested);
			json_key(j, "recycled");
			json_u64(j, th->tr.recycled);
			json_key(j, "recordsMissing");
			json_u64(j, th->tr.recorded > th->recs ?
			    th->tr.recorded - th->recs : 0);
		}
		json_obj_end(j);
	}
	json_arr_end(j);
}

/* The session's EVENT frames (limits, sink errors, ...). */
static void
log_events(const struct gsess *g, struct json *j)
{
	json_key(j, "events");
	json_arr(j);
	for (size_t i = 0; i < g->nev; i++) {
		const struct gevent *e = &g->ev[i];

		json_obj(j);
		json_key(j, "what");
		json_str(j, e->what);
		json_key(j, "time");
		json_f64(j, gecko_ms(g, e->ticks));
		if (e->has_errno) {
			json_key(j, "errno");
			json_i64(j, e->errnum);
		}
		if (e->message != NULL) {
			json_key(j, "message");
			json_str(j, e->message);
		}
		if (e->has_max_bytes) {
			json_key(j, "maxBytes");
			json_u64(j, e->max_bytes);
		}
		json_obj_end(j);
	}
	json_arr_end(j);
}

/* Backtraces and zone records the converter could not attach. */
static void
log_unmatched(const struct gsess *g, struct json *j)
{
	if (g->nbacktraces != 0 || g->nbt_unmatched != 0) {
		json_key(j, "backtraces");
		json_u64(j, g->nbacktraces);
		json_key(j, "backtracesWithoutMarker");
		json_u64(j, g->nbt_unmatched);
	}
	if (g->zone_unmatched != 0) {
		/* Zone ends and arguments whose begin was dropped or lost. */
		json_key(j, "zoneRecordsWithoutBegin");
		json_u64(j, g->zone_unmatched);
	}
}

/* The session's profileGatheringLog: what was read, lost, symbolized. */
void
write_gathering_log(struct gsess *g, struct json *j)
{
	json_key(j, "profileGatheringLog");
	json_obj(j);
	log_origin(g, j);
	log_reading(g, j);
	log_trailer(g, j);
	log_threads(g, j);
	log_events(g, j);
	log_unmatched(g, j);
	write_notes(g, j);
	write_sampler_log(g, j);
	json_obj_end(j);
}
