/*
 * gecko_samples.c - writing: a thread's samples, stackTable and frameTable.
 *
 * Pipeline (gecko_int.h): gecko_thread.c calls here after the markers.
 * A sampled thread's samples are read back from the spill in time order
 * and written with the stack rows gecko_frames.c built; a thread the
 * sampler never saw gets placeholder samples (one root frame named after
 * the thread, awake or Idle at each SLEEP and WAKE).
 *
 * Context: any thread; no shared state (gecko.h per function).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gecko_int.h"

void
write_table_schema(struct json *j, const char *const *cols, size_t n)
{
	json_key_lit(j, "schema");
	json_obj(j);
	for (size_t i = 0; i < n; i++) {
		json_key(j, cols[i]);
		json_u64(j, i);
	}
	json_obj_end(j);
}

static void
write_sample(struct gsess *g, struct json *j, struct tout *to, double t,
    bool idle)
{
	(void)g;
	if (idle && to->stack_idle < 0) {
		to->frame_idle = to->nframes++;
		to->stack_idle = to->nstacks++;
	}
	json_arr(j);
	json_i64(j, idle ? to->stack_idle : to->stack_awake);
	json_f64(j, t);
	json_u64(j, 0);
	json_arr_end(j);
}

static const char *const stack_cols[] = { "prefix", "frame" };
static const char *const frame_cols[] = { "location", "relevantForJS",
    "innerWindowID", "implementation", "line", "column", "category",
    "subcategory" };

/*
 * Placeholder samples, for a thread the sampler never sampled (none ran,
 * or a thread it does not see): one at registration and one at each
 * SLEEP (Idle frame) and WAKE (awake frame), so that no thread is
 * sample-less. Each stack is a single root frame named after the thread.
 */
/* Placeholder samples: the state machine over sleep/wake changes. */
struct ph_ctx {
	struct gsess *g;
	struct json *j;
	struct tout *to;
	bool idle, have_pre, pre_idle;
	size_t emitted;
	double last;
};

static void
ph_step(struct ph_ctx *c, double t, bool st)
{
	struct gsess *g = c->g;

	c->idle = st;
	if (t < c->last)
		t = c->last;
	c->last = t;
	if (t < g->win_a) {
		c->have_pre = true;
		c->pre_idle = st;
	} else if (t <= g->win_b) {
		if (c->have_pre) {
			write_sample(g, c->j, c->to, g->win_a, c->pre_idle);
			c->emitted++;
			c->have_pre = false;
		}
		write_sample(g, c->j, c->to, t, st);
		c->emitted++;
	}
}

static int
ph_record(void *ctx, const void *rec, size_t n)
{
	struct ph_ctx *c = ctx;
	struct gsample s;

	(void)n;
	memcpy(&s, rec, GSAMPLE_REC);
	if (s.idle != c->idle)          /* a change of state */
		ph_step(c, gecko_ms(c->g, key_ticks(c->g, s.key)), s.idle);
	return 0;
}

static void write_stack_rows(struct json *j, const struct otables *o,
    uint32_t off);
static void write_frame_rows(struct json *j, const struct otables *o);

/*
 * @o: the tables of the thread's marker backtraces (NULL: none), written
 * after the placeholder rows: stack and frame PLACEHOLDER_ROWS on (the
 * idle rows then always exist).
 */
void
write_placeholder(struct gsess *g, struct json *j, struct gthread *th,
    struct tout *to, const char *tname, double reg, const struct otables *o)
{
	static const char *const sample_cols[] = { "stack", "time",
	    "eventDelay" };
	/*
	 * rtprof's sampler thread is Idle: the front-end then hides it on
	 * load (its activity is 0; its cost is in its overhead markers).
	 */
	bool sampler = th != NULL && (th->flags & GECKO_THREAD_SAMPLER) != 0;
	double first;
	int64_t loc;

	loc = tout_intern(g, to, tname, strlen(tname));
	to->frame_awake = to->frame_idle = -1;
	to->stack_awake = to->stack_idle = -1;
	json_key_lit(j, "samples");
	json_obj(j);
	write_table_schema(j, sample_cols, 3);
	json_key_lit(j, "data");
	json_arr(j);
	first = reg > 0.0 ? reg : 0.0;
	to->stack_awake = 0;
	to->frame_awake = 0;
	to->nstacks = to->nframes = 1;
	if (o != NULL) {
		to->stack_idle = to->frame_idle = 1;
		to->nstacks = to->nframes = PLACEHOLDER_ROWS;
	}
	/*
	 * The state changes, in time order, starting awake at registration.
	 * With a time window, the state in effect at its start becomes a
	 * sample at its start; changes outside it are dropped.
	 */
	{
		struct ph_ctx c = { .g = g, .j = j, .to = to, .last = first };

		ph_step(&c, first, sampler);
		if (th != NULL)
			spill_get(g, th->ps, ph_record, &c);
		if (c.have_pre && g->win_a <= g->win_b) {
			write_sample(g, j, to, g->win_a, c.pre_idle);
			c.emitted++;
		}
		if (c.emitted == 0)     /* every thread keeps one sample */
			write_sample(g, j, to, isfinite(g->win_a) ?
			    g->win_a : first, sampler);
	}
	json_arr_end(j);
	json_obj_end(j);

	json_key_lit(j, "stackTable");
	json_obj(j);
	write_table_schema(j, stack_cols, 2);
	json_key_lit(j, "data");
	json_arr(j);
	json_arr(j);
	json_null(j);
	json_i64(j, to->frame_awake);
	json_arr_end(j);
	if (to->stack_idle >= 0) {
		json_arr(j);
		json_null(j);
		json_i64(j, to->frame_idle);
		json_arr_end(j);
	}
	if (o != NULL)
		write_stack_rows(j, o, PLACEHOLDER_ROWS);
	json_arr_end(j);
	json_obj_end(j);

	json_key_lit(j, "frameTable");
	json_obj(j);
	write_table_schema(j, frame_cols, 8);
	json_key_lit(j, "data");
	json_arr(j);
	for (int f = 0; f < 2; f++) {
		if (f == 1 && to->frame_idle < 0)
			break;
		json_arr(j);
		json_i64(j, loc);
		json_bool(j, false);
		json_null(j);
		json_null(j);
		json_null(j);
		json_null(j);
		json_u64(j, out_cat(g, f == 0 ? g->cat_default : g->cat_idle));
		json_u64(j, 0);
		json_arr_end(j);
	}
	if (o != NULL)
		write_frame_rows(j, o);
	json_arr_end(j);
	json_obj_end(j);
}

/* One samples row [stack, time, eventDelay, threadCPUDelta], formatted
 * at once (a profile has millions of them). */
static void
write_smp(struct gsess *g, struct json *j, const struct otables *o,
    const struct gsmp *s, double t, uint64_t cpu_ns)
{
	char b[96];
	size_t n = 0, m;

	(void)g;
	b[n++] = '[';
	n += json_fmt_u64(b + n, o->map[s->stack]);
	b[n++] = ',';
	if ((m = json_fmt_ms(b + n, t)) == 0) {      /* beyond 11 days: rare */
		json_arr(j);
		json_u64(j, o->map[s->stack]);
		json_f64(j, t);
		json_u64(j, 0);
		json_u64(j, cpu_ns);
		json_arr_end(j);
		return;
	}
	n += m;
	memcpy(b + n, ",0,", 3);
	n += 3;
	n += json_fmt_u64(b + n, cpu_ns);
	b[n++] = ']';
	json_elem(j, b, n);
}

/* Reading a thread's sampler samples back (write_sampled). */
struct smp_ctx {
	struct gsess *g;
	struct json *j;
	const struct gthread *th;
	const struct otables *o;
	size_t emitted;
	uint64_t depth;                 /* inside callbacks (cb_depth_step) */
	bool have_before, have_first;
	struct gsmp before, first;      /* last before the window; first */
};

static int
smp_record(void *ctx, const void *rec, size_t n)
{
	struct smp_ctx *c = ctx;
	struct gsmp s;
	double t;

	(void)n;
	memcpy(&s, rec, GSMP_REC);
	if (cb_depth_step(&c->depth, &s))
		return 0;
	if (c->depth != 0 && s.stack < c->th->nrs &&
	    (c->th->rs[s.stack].kind & RAW_IDLE)) {
		int64_t awake = raw_awake_find(c->th, s.stack);

		if (awake >= 0)
			s.stack = (uint32_t)awake;
	}
	if (!c->have_first) {
		c->first = s;
		c->have_first = true;
	}
	t = gecko_ms(c->g, key_ticks(c->g, s.key));
	if (t < c->g->win_a) {
		c->before = s;
		c->have_before = true;
		return 0;
	}
	if (t > c->g->win_b)
		return 1;               /* sorted: nothing more to write */
	write_smp(c->g, c->j, c->o, &s, t, s.cpu_ns);
	c->emitted++;
	return 0;
}

/* Stack rows of @o, every index moved by @off. */
static void
write_stack_rows(struct json *j, const struct otables *o, uint32_t off)
{
	for (size_t k = 0; k < o->ns; k++) {
		json_arr(j);
		if (o->s[k].prefix1 != 0)
			json_u64(j, o->s[k].prefix1 - 1 + off);
		else
			json_null(j);
		json_u64(j, o->s[k].frame + off);
		json_arr_end(j);
	}
}

/* Frame rows of @o (after others: they hold no frame index). */
static void
write_frame_rows(struct json *j, const struct otables *o)
{
	for (size_t k = 0; k < o->nf; k++) {
		json_arr(j);
		json_u64(j, o->f[k].loc);
		json_bool(j, false);
		json_null(j);
		json_null(j);
		if (o->f[k].line > 0)
			json_i64(j, o->f[k].line);
		else
			json_null(j);
		json_null(j);
		json_u64(j, o->f[k].cat);
		json_u64(j, 0);
		json_arr_end(j);
	}
}

/*
 * Samples, stackTable and frameTable of a thread the sampler sampled: its
 * SAMPLE/SAME records in time order (the sampler writes each thread's in
 * order, but a sort is cheap insurance), each with its CPU time since the previous one.
 * @o: the thread's tables, built (build_tables) or not (@ok false).
 */
void
write_sampled(struct gsess *g, struct json *j, struct gthread *th,
    const struct otables *o, bool ok)
{
	static const char *const sample_cols[] = { "stack", "time",
	    "eventDelay", "threadCPUDelta" };
	struct smp_ctx c = { .g = g, .j = j, .th = th, .o = o };

	json_key_lit(j, "samples");
	json_obj(j);
	write_table_schema(j, sample_cols, 4);
	json_key_lit(j, "data");
	json_arr(j);
	/* In time order (the spill sorts when they did not arrive so). */
	if (ok)
		spill_get(g, th->smps, smp_record, &c);
	/*
	 * Nothing inside the time window: the stack in effect at its start
	 * (or the first one) as its one sample, so the thread keeps a sample.
	 */
	if (ok && c.emitted == 0 && (c.have_before || c.have_first))
		write_smp(g, j, o, c.have_before ? &c.before : &c.first,
		    isfinite(g->win_a) ? g->win_a : g->win_b, 0);
	json_arr_end(j);
	json_obj_end(j);

	json_key_lit(j, "stackTable");
	json_obj(j);
	write_table_schema(j, stack_cols, 2);
	json_key_lit(j, "data");
	json_arr(j);
	if (ok)
		write_stack_rows(j, o, 0);
	json_arr_end(j);
	json_obj_end(j);

	json_key_lit(j, "frameTable");
	json_obj(j);
	write_table_schema(j, frame_cols, 8);
	json_key_lit(j, "data");
	json_arr(j);
	if (ok)
		write_frame_rows(j, o);
	json_arr_end(j);
	json_obj_end(j);
}
