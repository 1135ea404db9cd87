/*
 * gecko_process.c - writing: the profile writer (rtprof_gecko_writer_*).
 *
 * Pipeline (gecko_int.h): the last stage before the JSON writer. Each
 * session becomes a process object (libs, counters, pausedRanges, its
 * threads, the gathering log). The first one written is the top level:
 * its "processes" array stays open for the others, and its meta
 * (captured in memory) is written last, with a profiling range covering
 * every process. Pids and categories are made consistent across them.
 *
 * Context: any thread; no shared state (gecko.h per function).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gecko_int.h"

static void
write_paused_ranges(struct gsess *g, struct json *j)
{
	json_key(j, "pausedRanges");
	json_arr(j);
	for (size_t i = 0; i < g->npause; i++) {
		if (!overlaps_win(g, gecko_ms(g, g->pause[i][0]),
		    gecko_ms(g, g->pause[i][1])))
			continue;
		json_obj(j);
		json_key(j, "startTime");
		json_f64(j, gecko_ms(g, g->pause[i][0]));
		json_key(j, "endTime");
		json_f64(j, gecko_ms(g, g->pause[i][1]));
		json_key(j, "reason");
		json_str(j, "profiler-paused");
		json_obj_end(j);
	}
	json_arr_end(j);
}

/* Grows a buffer: the captured top-level meta. */
struct membuf {
	char *p;
	size_t n, cap;
};

static int
membuf_write(void *ctx, const void *p, size_t n)
{
	struct membuf *b = ctx;

	if (gecko_grow((void **)&b->p, &b->cap, b->n + n, 1) != 0)
		return -ENOMEM;
	memcpy(b->p + b->n, p, n);
	b->n += n;
	return 0;
}

struct rtprof_gecko_writer {
	struct json *j;
	struct rtprof_gecko_note *notes;        /* strings owned */
	size_t nnotes, notecap;
	const struct rtprof_gecko_filter *flt;
	int err;
	bool top_done;
	int64_t top_wall_ns;            /* top-level meta.startTime, ns */
	char **top_cat;                 /* the top level's category names */
	uint32_t ntop_cat, top_cat_default;
	struct membuf meta;             /* top-level meta, without range */
	bool have_range;
	double range_a, range_b;        /* top-level ms */
	struct rtprof_idmap pids;       /* pids written so far */
	struct rtprof_idmap pid_next;   /* dump pid -> next k to try */
	bool sampled;                   /* a session has sampler samples */
	bool unsymbolized;              /* a session's natives stay hex */
};

int
rtprof_gecko_writer_new(struct rtprof_gecko_writer **out,
    const struct rtprof_gecko_filter *filter, rtprof_gecko_write_cb write,
    void *ctx)
{
	struct rtprof_gecko_writer *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return -ENOMEM;
	w->j = calloc(1, sizeof(*w->j));
	if (w->j == NULL) {
		free(w);
		return -ENOMEM;
	}
	w->j->write = write;
	w->j->ctx = ctx;
	w->flt = filter;
	*out = w;
	return 0;
}

static bool
pid_used(const struct rtprof_gecko_writer *w, int64_t pid)
{
	return rtprof_idmap_get(&w->pids, pid) >= 0;
}

/*
 * The pid @g is written with: its own, or the first free one of pid + k *
 * 4194304 (above PID_MAX_LIMIT; wrapping: a dump's pid may be anything).
 * Each dump pid remembers the k it reached, so N sessions of one pid cost
 * O(N), not O(N^2) probes.
 */
static int
choose_pid(struct rtprof_gecko_writer *w, int64_t dpid, int64_t *out)
{
	int64_t k0 = rtprof_idmap_get(&w->pid_next, dpid);
	uint64_t k = k0 > 0 ? (uint64_t)k0 : 0;
	int64_t pid = (int64_t)((uint64_t)dpid + k * 4194304u);

	while (pid_used(w, pid))
		pid = (int64_t)((uint64_t)dpid + ++k * 4194304u);
	if (rtprof_idmap_set(&w->pid_next, dpid, (size_t)k + 1) != 0 ||
	    rtprof_idmap_set(&w->pids, pid, 0) != 0)
		return -ENOMEM;
	*out = pid;
	return 0;
}

/* Choose the pid and process name that @g is shown with. */
static int
name_process(struct rtprof_gecko_writer *w, struct gsess *g)
{
	const char *p = g->process != NULL ? g->process : "";
	int64_t pid;

	if (choose_pid(w, g->pid, &pid) != 0)
		return -ENOMEM;
	g->out_pid = pid;
	if (g->ordinal > 1)
		snprintf(g->out_name, sizeof(g->out_name), "%s (session %"
		    PRIu64 ")", p, g->ordinal);
	else if (pid != g->pid)
		snprintf(g->out_name, sizeof(g->out_name), "%s (pid %" PRId64
		    ")", p, g->pid);
	else
		snprintf(g->out_name, sizeof(g->out_name), "%s", p);
	return 0;
}

/* The process object's members other than meta and processes. */
static void
write_process_body(struct gsess *g, struct json *j)
{
	struct gthread *main_th = NULL;

	for (size_t i = 0; i < g->nth; i++) {
		if (g->th[i].flags & 2) {
			main_th = &g->th[i];
			break;
		}
	}
	write_libs(g, j);
	json_key(j, "pages");
	json_arr(j);
	json_arr_end(j);
	write_counters(g, j);
	write_paused_ranges(g, j);
	json_key(j, "threads");
	json_arr(j);
	/*
	 * GeckoMain first. A dump without a main thread still gets one (a
	 * synthetic thread with tid = pid and one sample at the session
	 * start): counters and the process track need it.
	 */
	write_thread(g, j, main_th, true);
	for (size_t i = 0; i < g->nth && j->err == 0 && g->err == 0; i++)
		if (&g->th[i] != main_th && thread_kept(g, &g->th[i]))
			write_thread(g, j, &g->th[i], false);
	json_arr_end(j);
	/* After the threads: it tells how symbolication went. */
	write_gathering_log(g, j);
	rtprof_symbolizer_free(g->sym);
	g->sym = NULL;
}

/* Keep the top level's category names (@g is the top level). */
static int
keep_top_cats(struct rtprof_gecko_writer *w, const struct gsess *g)
{
	w->top_cat = calloc(g->ncat + 1, sizeof(*w->top_cat));
	if (w->top_cat == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < g->ncat; i++) {
		w->top_cat[i] = strdup(g->cat[i].name != NULL ?
		    g->cat[i].name : "");
		if (w->top_cat[i] == NULL)
			return -ENOMEM;
		w->ntop_cat = i + 1;
	}
	w->top_cat_default = g->cat_default;
	return 0;
}

/* @g's category indexes in the top level's list (a sub-process). */
static int
map_cats(const struct rtprof_gecko_writer *w, struct gsess *g)
{
	g->cat_out = calloc(g->ncat + 1, sizeof(*g->cat_out));
	if (g->cat_out == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < g->ncat; i++) {
		g->cat_out[i] = w->top_cat_default;
		for (uint32_t k = 0; k < w->ntop_cat; k++) {
			if (g->cat[i].name != NULL &&
			    strcmp(g->cat[i].name, w->top_cat[k]) == 0) {
				g->cat_out[i] = k;
				break;
			}
		}
	}
	return 0;
}

static int
write_session(struct rtprof_gecko_writer *w, struct gsess *g)
{
	struct json *j = w->j;
	double delta, a, b;

	if (g->err != 0)
		return g->err;
	if (!w->top_done)
		w->top_wall_ns = g->start_wall_ns;
	delta = rtprof_ns_diff(g->start_wall_ns, w->top_wall_ns) / 1e6;
	g->flt = w->flt;
	g->notes = w->notes;
	g->nnotes = w->nnotes;
	g->top = !w->top_done;
	g->win_a = w->flt != NULL && w->flt->has_from ?
	    w->flt->from_ms - delta : -INFINITY;
	g->win_b = w->flt != NULL && w->flt->has_to ?
	    w->flt->to_ms - delta : INFINITY;
	if (name_process(w, g) != 0 ||
	    (w->top_done ? map_cats(w, g) : keep_top_cats(w, g)) != 0)
		return -ENOMEM;
	w->sampled |= sess_sampled(g);
	w->unsymbolized |= !sess_presymbolicated(g);

	sess_range(g, &a, &b);
	a += delta;
	b += delta;
	if (w->flt != NULL && w->flt->has_from && a < w->flt->from_ms)
		a = w->flt->from_ms;
	if (w->flt != NULL && w->flt->has_to && b > w->flt->to_ms)
		b = w->flt->to_ms;
	if (b < a)
		b = a;
	if (!w->have_range || a < w->range_a)
		w->range_a = a;
	if (!w->have_range || b > w->range_b)
		w->range_b = b;
	w->have_range = true;

	if (!w->top_done) {
		/*
		 * Top level: its meta is captured now and written last, with
		 * a profiling range that covers every process; the
		 * "processes" array stays open for the other sessions.
		 */
		struct json *mj = calloc(1, sizeof(*mj));

		if (mj == NULL)
			return -ENOMEM;
		mj->write = membuf_write;
		mj->ctx = &w->meta;
		write_meta(g, mj, true);
		json_flush(mj);
		if (mj->err != 0 || w->meta.n < 2) {
			int e = mj->err != 0 ? mj->err : -ENOMEM;

			free(mj);
			return e;
		}
		free(mj);
		w->top_done = true;
		json_obj(j);
		write_process_body(g, j);
		json_key(j, "processes");
		json_arr(j);
	} else {
		json_obj(j);
		json_key(j, "meta");
		write_meta(g, j, false);
		json_key(j, "processes");
		json_arr(j);
		json_arr_end(j);
		write_process_body(g, j);
		json_obj_end(j);
	}
	if (g->err != 0)
		return g->err;
	return j->err;
}

int
rtprof_gecko_writer_add(struct rtprof_gecko_writer *w, struct rtprof_gecko *g)
{
	if (w->err != 0)
		return w->err;
	if (g->err != 0)
		return w->err = g->err;
	if (rtprof_gecko_sessions(g) == 0)
		return -ENODATA;
	for (size_t i = 0; i < g->nsess && w->err == 0; i++)
		if (g->sess[i]->have_header)
			w->err = write_session(w, g->sess[i]);
	return w->err;
}

int
rtprof_gecko_writer_finish(struct rtprof_gecko_writer *w)
{
	struct json *j;
	int rc;

	if (w == NULL)
		return 0;
	j = w->j;
	rc = w->err;
	if (rc == 0 && !w->top_done)
		rc = -ENODATA;
	if (rc == 0) {
		json_arr_end(j);                /* processes */
		json_key(j, "meta");
		json_obj(j);
		json_key(j, "profilingStartTime");
		json_f64(j, w->range_a);
		json_key(j, "profilingEndTime");
		json_f64(j, w->range_b);
		json_key(j, "presymbolicated");
		json_bool(j, !w->unsymbolized);
		if (w->sampled)
			write_sample_units(j);
		/* The captured meta, its opening brace replaced by a comma. */
		json_ch(j, ',');
		json_raw(j, w->meta.p + 1, w->meta.n - 1);
		j->depth--;
		json_obj_end(j);                /* top level */
		json_ch(j, '\n');
		json_flush(j);
		rc = j->err;
	}
	free(w->meta.p);
	rtprof_idmap_free(&w->pids);
	for (uint32_t i = 0; i < w->ntop_cat; i++)
		free(w->top_cat[i]);
	free(w->top_cat);
	rtprof_idmap_free(&w->pid_next);
	for (size_t i = 0; i < w->nnotes; i++) {
		free((char *)w->notes[i].what);
		free((char *)w->notes[i].dump);
		free((char *)w->notes[i].program);
		free((char *)w->notes[i].reason);
	}
	free(w->notes);
	free(j);
	free(w);
	return rc;
}

int
rtprof_gecko_writer_note(struct rtprof_gecko_writer *w,
    const struct rtprof_gecko_note *n)
{
	struct rtprof_gecko_note c = *n;
	int err = 0;

	if (n->what == NULL)
		return -EINVAL;
	if (w->top_done)
		return -EBUSY;
	c.what = gecko_dup_opt(n->what, &err);
	c.dump = gecko_dup_opt(n->dump, &err);
	c.program = gecko_dup_opt(n->program, &err);
	c.reason = gecko_dup_opt(n->reason, &err);
	if (err == 0 && gecko_grow((void **)&w->notes, &w->notecap, w->nnotes + 1,
	    sizeof(*w->notes)) != 0)
		err = -ENOMEM;
	if (err != 0) {
		free((char *)c.what);
		free((char *)c.dump);
		free((char *)c.program);
		free((char *)c.reason);
		return -ENOMEM;
	}
	w->notes[w->nnotes++] = c;
	return 0;
}

int
rtprof_gecko_write(struct rtprof_gecko *g, rtprof_gecko_write_cb write,
    void *ctx)
{
	struct rtprof_gecko_writer *w;
	int rc;

	if (g->err != 0)
		return g->err;
	rc = rtprof_gecko_writer_new(&w, NULL, write, ctx);
	if (rc != 0)
		return rc;
	rc = rtprof_gecko_writer_add(w, g);
	if (rc != 0) {
		w->err = rc;
		rtprof_gecko_writer_finish(w);
		return rc;
	}
	return rtprof_gecko_writer_finish(w);
}
