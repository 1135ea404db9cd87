/*
 * gecko_thread.c - writing: one thread object.
 *
 * Pipeline (gecko_int.h): gecko_process.c writes each thread kept by the
 * filter here: its header, its markers (read back from the spill:
 * recorded ones with their backtraces, the sampler's overhead per
 * window, the counters' graphs and the pauses on the main thread), then
 * its samples (gecko_samples.c, tables from gecko_frames.c), then its
 * string table, interned while all that was written.
 *
 * Context: any thread; no shared state (gecko.h per function).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gecko_int.h"

static void
write_field_value(struct gsess *g, struct json *j, struct tout *to,
    bool idx, uint32_t kind, const struct rtprof_val *v)
{
	char buf[64];
	const char *s = NULL;
	size_t n = 0;

	switch (v->kind) {
	case RTPROF_VAL_STRREF:
		s = string_text(g, v->v.ref, buf, sizeof(buf), &n);
		break;
	case RTPROF_VAL_STR:
		s = v->v.str.p;
		n = v->v.str.n;
		break;
	case RTPROF_VAL_F64:
		if (idx) {
			snprintf(buf, sizeof(buf), "%.17g", v->v.d);
			s = buf;
			n = strlen(buf);
		} else {
			json_f64(j, v->v.d);
			return;
		}
		break;
	case RTPROF_VAL_I64:
	case RTPROF_VAL_U64:
		/* General encodings are tagged by sign: the schema decides. */
		if (idx) {
			if (kind == 1 || v->kind == RTPROF_VAL_I64)
				snprintf(buf, sizeof(buf), "%" PRId64, v->v.i);
			else
				snprintf(buf, sizeof(buf), "%" PRIu64, v->v.u);
			s = buf;
			n = strlen(buf);
		} else if (kind == 3) {
			json_f64(j, v->kind == RTPROF_VAL_I64 ? (double)v->v.i :
			    (double)v->v.u);
			return;
		} else if (kind == 1 || (kind != 2 &&
		    v->kind == RTPROF_VAL_I64)) {
			json_i64(j, v->v.i);
			return;
		} else {
			json_u64(j, v->v.u);
			return;
		}
		break;
	}
	if (s == NULL) {
		json_null(j);
		return;
	}
	if (idx)
		json_i64(j, tout_intern(g, to, s, n));
	else
		json_strn(j, s, n);
}

/*
 * The marker's backtrace (@stack: a stackTable index, or -1): a one-sample
 * "stack" the front-end turns into the marker's cause, re-based onto its
 * merged stack table (process-profile.ts, _convertStackToCause), and the
 * same as "cause" for tools that read the file itself (rtprof summarize).
 * A "cause" alone would not be re-based: only right for the first thread.
 */
static void
write_marker_stack(struct gsess *g, struct json *j, int64_t stack,
    int64_t tid, double t)
{
	(void)g;
	json_key_lit(j, "stack");
	json_obj(j);
	json_key_lit(j, "tid");
	json_i64(j, tid);
	json_key_lit(j, "samples");
	json_obj(j);
	json_key_lit(j, "schema");
	json_obj(j);
	json_key_lit(j, "stack");
	json_u64(j, 0);
	json_key_lit(j, "time");
	json_u64(j, 1);
	json_obj_end(j);
	json_key_lit(j, "data");
	json_arr(j);
	json_arr(j);
	json_i64(j, stack);
	json_f64(j, t);
	json_arr_end(j);
	json_arr_end(j);
	json_obj_end(j);
	json_obj_end(j);
	json_key_lit(j, "cause");
	json_obj(j);
	json_key_lit(j, "tid");
	json_i64(j, tid);
	json_key_lit(j, "time");
	json_f64(j, t);
	json_key_lit(j, "stack");
	json_i64(j, stack);
	json_obj_end(j);
}

/* The stringTable index of @m's name (@sc: its schema, typed markers). */
static int64_t
marker_name(struct gsess *g, struct tout *to, const struct gmark *m,
    const struct gschema *sc)
{
	char buf[64];
	const char *name;
	size_t n;

	if (m->kind == GMARK_DROPPED) {
		name = "Dropped events";
		n = strlen(name);
	} else if (m->kind == RTPROF_REC_TYPED) {
		if (sc != NULL) {
			name = sc->name;
			n = strlen(name);
		} else {
			snprintf(buf, sizeof(buf), "(unknown marker type %u)",
			    (unsigned)m->type);
			name = buf;
			n = strlen(buf);
		}
	} else {
		name = string_text(g, m->name, buf, sizeof(buf), &n);
	}
	return tout_intern(g, to, name, n);
}

/*
 * marker_name(), looked up by (name reference or type, kind) once per
 * thread: a thread has millions of markers and few names.
 */
static int64_t
marker_name_idx(struct gsess *g, struct tout *to, const struct gmark *m,
    const struct gschema *sc)
{
	uint64_t a = m->kind == RTPROF_REC_TYPED ? m->type : m->name;
	int64_t i = pmap_get(&to->names, a, m->kind);

	if (i >= 0)
		return i;
	i = marker_name(g, to, m, sc);
	if (g->err == 0 && pmap_put(&to->names, a, m->kind, (size_t)i) != 0)
		gecko_fail(g, -ENOMEM);
	return i;
}

static void
write_marker(struct gsess *g, struct json *j, struct tout *to,
    const struct gmark *m, int64_t stack, int64_t tid)
{
	const struct gschema *sc = NULL;

	if (m->kind == RTPROF_REC_TYPED)
		sc = schema_of(g, m->type);
	json_arr(j);
	json_i64(j, marker_name_idx(g, to, m, sc));
	switch (m->phase) {
	case 0:
	case 2:
		json_f64(j, gecko_ms(g, m->t0));
		json_null(j);
		break;
	case 1:
		json_f64(j, gecko_ms(g, m->t0));
		json_f64(j, gecko_ms(g, m->t1));
		break;
	default:
		json_null(j);
		json_f64(j, gecko_ms(g, m->t0));
		break;
	}
	json_u64(j, m->phase);
	if (m->kind == GMARK_DROPPED) {
		json_u64(j, out_cat(g, g->cat_profiler));
		json_obj(j);
		json_key_lit(j, "type");
		json_str(j, GECKO_DROPPED_SCHEMA);
		json_key_lit(j, "full");
		json_u64(j, m->nvals > 0 ? m->vals[0].v.u : 0);
		json_key_lit(j, "nested");
		json_u64(j, m->nvals > 1 ? m->vals[1].v.u : 0);
		json_obj_end(j);
		json_arr_end(j);
		return;
	}
	json_u64(j, out_cat(g, cat_index(g, m->category)));
	if (user_marker_kind(m->kind)) {       /* gecko_user.c */
		user_marker_data(g, j, to, m);
		json_arr_end(j);
		return;
	}
	if (sc == NULL && stack < 0) {
		json_null(j);
	} else {
		json_obj(j);
		if (sc != NULL) {
			json_key_lit(j, "type");
			json_str(j, sc->name);
		}
		for (uint32_t i = 0; sc != NULL && i < sc->nfields &&
		    i < m->nvals; i++) {
			/* Ours when there is a backtrace. */
			if (sc->f[i].is_type || (stack >= 0 &&
			    (strcmp(sc->f[i].key, "stack") == 0 ||
			    strcmp(sc->f[i].key, "cause") == 0)))
				continue;
			json_key(j, sc->f[i].key);
			write_field_value(g, j, to, sc->f[i].idx,
			    sc->f[i].kind, &m->vals[i]);
		}
		if (stack >= 0)
			write_marker_stack(g, j, stack, tid,
			    gecko_ms(g, m->t0));
		json_obj_end(j);
	}
	json_arr_end(j);
}

/* Is the marker @m (in its own phase) inside the time window? */
static bool
marker_in_win(const struct gsess *g, const struct gmark *m)
{
	double t0 = gecko_ms(g, m->t0);

	if (m->phase == 1)
		return overlaps_win(g, t0, gecko_ms(g, m->t1));
	return in_win(g, t0);
}

static void
write_pause_marker(struct gsess *g, struct json *j, struct tout *to,
    size_t i)
{
	json_arr(j);
	json_i64(j, tout_intern(g, to, "Paused", 6));
	json_f64(j, gecko_ms(g, g->pause[i][0]));
	json_f64(j, gecko_ms(g, g->pause[i][1]));
	json_u64(j, 1);
	json_u64(j, out_cat(g, g->cat_profiler));
	json_obj(j);
	json_key_lit(j, "type");
	json_str(j, RTPROF_PAUSE_SCHEMA);
	json_obj_end(j);
	json_arr_end(j);
}

/*
 * The sampler's ticks of one window (at most GECKO_OVERHEAD_WINDOW_MS):
 * one marker, not one per tick.
 */
struct ovh_win {
	bool open;
	double t0, t1;                  /* first tick's start, last's end */
	uint64_t ticks, sum[3], max, nthreads;
};

static void
ovh_win_add(struct ovh_win *w, const struct govh *o, double t0, double t1)
{
	uint64_t total = o->v[0] + o->v[1] + o->v[2];

	if (!w->open) {
		memset(w, 0, sizeof(*w));
		w->open = true;
		w->t0 = t0;
	}
	w->t1 = t1 > w->t1 ? t1 : w->t1;
	w->ticks++;
	for (int i = 0; i < 3; i++)
		w->sum[i] += o->v[i];
	if (total > w->max)
		w->max = total;
	if (o->v[3] > w->nthreads)
		w->nthreads = o->v[3];
}

static void
write_overhead_marker(struct gsess *g, struct json *j, struct tout *to,
    const struct ovh_win *w)
{
	static const char name[] = "Profiler overhead";

	json_arr(j);
	json_i64(j, tout_intern(g, to, name, sizeof(name) - 1));
	json_f64(j, w->t0);
	json_f64(j, w->t1);
	json_u64(j, 1);
	json_u64(j, out_cat(g, g->cat_profiler));
	json_obj(j);
	json_key_lit(j, "type");
	json_str(j, GECKO_OVERHEAD_SCHEMA);
	json_key_lit(j, "total");
	json_u64(j, w->sum[0] + w->sum[1] + w->sum[2]);
	json_key_lit(j, "ticks");
	json_u64(j, w->ticks);
	json_key_lit(j, "max");
	json_u64(j, w->max);
	json_key_lit(j, "lock");
	json_u64(j, w->sum[0]);
	json_key_lit(j, "threads");
	json_u64(j, w->sum[1]);
	json_key_lit(j, "counters");
	json_u64(j, w->sum[2]);
	json_key_lit(j, "nthreads");
	json_u64(j, w->nthreads);
	json_obj_end(j);
	json_arr_end(j);
}

/* Reading a thread's markers back (write_thread). */
struct mark_ctx {
	struct gsess *g;
	struct json *j;
	struct tout *to;
	const struct otables *o;        /* NULL: no backtraces */
	uint32_t stack_off;             /* o's stack rows start here */
	int64_t tid;
	struct ovh_win ovh;             /* overhead ticks not yet written */
};

static int
mark_record(void *ctx, const void *rec, size_t n)
{
	struct mark_ctx *c = ctx;
	struct rtprof_val vals[RTPROF_REC_MAX_VALS];
	struct gmark m;

	(void)n;
	marker_unspill(rec, &m, vals);
	if (marker_in_win(c->g, &m))
		write_marker(c->g, c->j, c->to, &m, c->o != NULL &&
		    m.stack1 != 0 && m.stack1 - 1 < c->g->th_nrs ?
		    (int64_t)c->o->map[m.stack1 - 1] + c->stack_off : -1,
		    c->tid);
	return 0;
}

static int
ovh_record(void *ctx, const void *rec, size_t n)
{
	struct mark_ctx *c = ctx;
	struct govh o;
	double t0, t1;

	(void)n;
	memcpy(&o, rec, sizeof(o));
	t0 = gecko_ms(c->g, o.t0);
	t1 = gecko_ms(c->g, o.t1);
	if (!overlaps_win(c->g, t0, t1))
		return 0;
	if (c->ovh.open && t1 - c->ovh.t0 > GECKO_OVERHEAD_WINDOW_MS) {
		write_overhead_marker(c->g, c->j, c->to, &c->ovh);
		c->ovh.open = false;
	}
	ovh_win_add(&c->ovh, &o, t0, t1);
	return 0;
}

/*
 * The track name of a real-time thread. The front-end keeps a thread
 * whose name starts with "Audio" visible whenever it ran at all and
 * ranks it 40 times its CPU for the thread selected on load (tracks.ts,
 * _isFirefoxMediaThreadWhichIsUsuallyIdle); nothing else of a Gecko
 * profile says which threads to show or select (meta.initialVisibleThreads
 * and initialSelectedThreads do not survive its Gecko import). So: "audio"
 * becomes "Audio", another name gets "Audio RT: " in front.
 */
static const char *
rt_track_name(const char *name, char *buf, size_t n)
{
	if (strncmp(name, "Audio", 5) == 0)
		return name;
	if (strncmp(name, "audio", 5) == 0)
		snprintf(buf, n, "A%s", name + 1);
	else
		snprintf(buf, n, "Audio RT: %s", name);
	return buf;
}

/* The track name of @th (in @buf when made up); @th NULL: the process's. */
static const char *
thread_track_name(const struct gsess *g, const struct gthread *th,
    char *buf, size_t n)
{
	if (th != NULL && th->name != NULL && th->name[0] != '\0' &&
	    (th->flags & GECKO_THREAD_RT) != 0)
		return rt_track_name(th->name, buf, n);
	if (th != NULL && th->name != NULL && th->name[0] != '\0')
		return th->name;
	if (th != NULL) {
		snprintf(buf, n, "thread %" PRId64, th->tid);
		return buf;
	}
	return g->process != NULL ? g->process : "main";
}

/* When @th began: registered, else its first record; 0 without either. */
static double
thread_register_ms(const struct gsess *g, const struct gthread *th)
{
	if (th != NULL && th->has_reg)
		return gecko_ms(g, th->reg);
	if (th != NULL && th->has_first)
		return gecko_ms(g, th->first_ticks);
	return 0.0;
}

/* The thread object's first keys: its name, process, ids and lifetime. */
static void
thread_identity(const struct gsess *g, struct json *j,
    const struct gthread *th, bool main, const char *tname, double reg)
{
	json_key_lit(j, "name");
	json_str(j, main ? "GeckoMain" : tname);
	json_key_lit(j, "processType");
	json_str(j, "default");
	json_key_lit(j, "processName");
	json_str(j, g->out_name);
	json_key_lit(j, "pid");
	json_i64(j, g->out_pid);
	json_key_lit(j, "tid");
	json_i64(j, th != NULL ? th->tid : g->pid);
	json_key_lit(j, "registerTime");
	json_f64(j, reg);
	json_key_lit(j, "unregisterTime");
	if (th != NULL && th->has_unreg) {
		double u = gecko_ms(g, th->unreg);

		json_f64(j, u >= reg ? u : reg);
	} else {
		json_null(j);
	}
}

/*
 * The markers table: the markers as they were recorded (an interval when
 * its end came; the front-end sorts them), then the sampler's overhead
 * markers; the counters' and the pauses' go on the main thread. @o: the
 * frame and stack tables a marker's backtrace is looked up in, or NULL.
 */
static void
thread_markers(struct gsess *g, struct json *j, struct gthread *th,
    bool main, struct tout *to, struct otables *o)
{
	static const char *const marker_cols[] = { "name", "startTime",
	    "endTime", "phase", "category", "data" };

	json_key_lit(j, "markers");
	json_obj(j);
	write_table_schema(j, marker_cols, 6);
	json_key_lit(j, "data");
	json_arr(j);
	if (th != NULL) {
		struct mark_ctx mc = { .g = g, .j = j, .to = to, .o = o,
		    .tid = th->tid,
		    .stack_off = th->nsmp != 0 ? 0 : PLACEHOLDER_ROWS };

		g->th_nrs = th->nrs;
		spill_get(g, th->ms, mark_record, &mc);
		spill_get(g, th->ovs, ovh_record, &mc);
		if (mc.ovh.open)
			write_overhead_marker(g, j, to, &mc.ovh);
	}
	if (main)
		write_counter_markers(g, j, to);
	if (main)
		for (size_t k = 0; k < g->npause; k++)
			if (overlaps_win(g, gecko_ms(g, g->pause[k][0]),
			    gecko_ms(g, g->pause[k][1])))
				write_pause_marker(g, j, to, k);
	json_arr_end(j);
	json_obj_end(j);
}

/*
 * One thread. @th NULL: the synthetic GeckoMain of a dump without a main
 * thread (no markers; one sample at the session start).
 */
void
write_thread(struct gsess *g, struct json *j, struct gthread *th,
    bool main)
{
	struct tout to;
	struct otables o;
	bool tables_ok = false;
	char namebuf[300];
	const char *tname = thread_track_name(g, th, namebuf, sizeof(namebuf));
	double reg = thread_register_ms(g, th);

	memset(&to, 0, sizeof(to));
	json_obj(j);
	thread_identity(g, j, th, main, tname, reg);
	/* The frame and stack tables are built before the markers (a
	 * marker names its backtrace's stack): the sampler's stacks and
	 * the backtraces share them. */
	memset(&o, 0, sizeof(o));
	if (th != NULL)
		callback_twins(g, th);
	if (th != NULL && th->nrs != 0)
		tables_ok = build_tables(g, &to, th, &o) == 0;
	thread_markers(g, j, th, main, &to, tables_ok ? &o : NULL);

	/* Real samples where the sampler saw the thread, else placeholders
	 * (and the backtraces' tables after theirs). */
	if (th != NULL && th->nsmp != 0)
		write_sampled(g, j, th, &o, tables_ok);
	else
		write_placeholder(g, j, th, &to, tname, reg,
		    tables_ok ? &o : NULL);
	otables_free(&o);

	/* Last: every string interned above. */
	json_key_lit(j, "stringTable");
	json_arr(j);
	for (size_t k = 0; k < to.str.n; k++)
		json_strn(j, to.str.s[k], to.str.len[k]);
	json_arr_end(j);
	json_obj_end(j);
	strtab_free(&to.str);
	pmap_free(&to.names);
}

/* Is the (non-main) thread @th written, given the filter and window? */
bool
thread_kept(const struct gsess *g, const struct gthread *th)
{
	const struct rtprof_gecko_filter *f = g->flt;
	double reg = 0.0;

	if (f != NULL && f->nthreads != 0) {
		size_t i;

		for (i = 0; i < f->nthreads; i++)
			if (th->name != NULL && strcmp(th->name,
			    f->threads[i]) == 0)
				break;
		if (i == f->nthreads)
			return false;
	}
	if (th->has_reg)
		reg = gecko_ms(g, th->reg);
	else if (th->has_first)
		reg = gecko_ms(g, th->first_ticks);
	if (reg > g->win_b)
		return false;
	if (th->has_unreg && gecko_ms(g, th->unreg) < g->win_a)
		return false;
	return true;
}
