/*
 * gecko_counters.c - counters, read and written: how a recorded counter
 * is shown in the Firefox Profiler (gecko_counters.h), its values kept
 * while reading, and its track written.
 *
 * Pipeline (gecko_int.h): reading, gecko_read.c hands COUNTER frames,
 * counter records and VALUES frames here: values are spilled per counter,
 * keyed by time. Writing, memory counters become Gecko counters
 * (gecko_process.c), gauges and counts marker graphs: their schemas in
 * meta (gecko_meta.c), their markers on the main thread (gecko_thread.c).
 *
 * Context: any thread; no shared state (gecko.h per function).
 */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "gecko_counters.h"
#include "gecko_int.h"
#include "wire.h"

/* A unit -> the Gecko format showing it, and the scale to apply. */
static void
unit_format(const char *unit, struct gecko_counter_view *v)
{
	static const struct {
		const char *unit, *format;
		double scale;
	} map[] = {
		{ "permille", "percentage", 1e-3 },
		{ "percent", "percentage", 1e-2 },
		{ "ns", "nanoseconds", 1.0 },
		{ "us", "microseconds", 1.0 },
		{ "ms", "milliseconds", 1.0 },
		{ "bytes", "bytes", 1.0 },
	};

	v->format = "integer";
	v->scale = 1.0;
	for (size_t i = 0; unit != NULL && i < sizeof(map) / sizeof(*map);
	    i++) {
		if (strcmp(unit, map[i].unit) == 0) {
			v->format = map[i].format;
			v->scale = map[i].scale;
			return;
		}
	}
}

void
gecko_counter_view(uint32_t kind, const char *category, const char *unit,
    bool builtin_memory, struct gecko_counter_view *out)
{
	bool memory_cat = category != NULL && strcmp(category, "Memory") == 0;

	memset(out, 0, sizeof(*out));
	if (builtin_memory || kind == RTPROF_WIRE_COUNTER_BYTES ||
	    (kind == RTPROF_WIRE_COUNTER_UNSPECIFIED && memory_cat)) {
		out->show = GECKO_SHOW_MEMORY;
		out->format = "bytes";
		out->scale = 1.0;
		out->graph = "line-filled";
		return;
	}
	unit_format(unit, out);
	out->show = kind == RTPROF_WIRE_COUNTER_COUNT ? GECKO_SHOW_COUNT :
	    GECKO_SHOW_GAUGE;
	out->graph = out->show == GECKO_SHOW_COUNT ? "line-filled" : "line";
}

void
gecko_counter_schema_name(const char *name, char *buf, size_t n)
{
	snprintf(buf, n, "rtprof.counter.%s", name != NULL ? name : "");
}

struct gcounter *
counter_get(struct gsess *g, uint32_t id)
{
	struct gcounter c;
	int64_t i = rtprof_idmap_get(&g->ctr_idx, id);

	if (i >= 0)
		return &g->ctr[i];
	memset(&c, 0, sizeof(c));
	c.id = id;
	if (VEC_PUSH(g, g->ctr, g->nctr, g->ctrcap, c) != 0)
		return NULL;
	if (rtprof_idmap_set(&g->ctr_idx, id, g->nctr - 1) != 0) {
		gecko_fail(g, -ENOMEM);
		return NULL;
	}
	return &g->ctr[g->nctr - 1];
}

int
counter_value(struct gsess *g, uint32_t id, uint64_t t, int64_t v)
{
	struct gcounter *gc = counter_get(g, id);
	struct gcval cv;

	if (gc == NULL)
		return g->err;
	memset(&cv, 0, sizeof(cv));     /* no padding bytes in the file */
	cv.key = time_key(g, t);
	cv.v = v;
	note_time(g, t);
	if (gc->ns == 0 || cv.key < gc->first_key)
		gc->first_key = cv.key;
	gc->ns++;
	return spill_put(g, &gc->vs, sizeof(cv), &cv, sizeof(cv));
}

/* How counter @c is shown (gecko_counters.h). */
static void
counter_view(const struct gcounter *c, struct gecko_counter_view *v)
{
	bool builtin = c->id == RTPROF_COUNTER_SELF_MEMORY ||
	    c->id == RTPROF_COUNTER_PROCESS_MEMORY;

	gecko_counter_view(c->kind, c->category, c->unit, builtin, v);
}

/* Counter @c's name as shown ("counter N" when it was never described). */
static const char *
counter_name(const struct gcounter *c, char *buf, size_t n)
{
	if (c->id == RTPROF_COUNTER_SELF_MEMORY)
		return GECKO_SELF_MEMORY_NAME;
	if (c->id == RTPROF_COUNTER_PROCESS_MEMORY)
		return GECKO_PROCESS_MEMORY_NAME;
	if (c->name != NULL)
		return c->name;
	snprintf(buf, n, "counter %" PRIu32, c->id);
	return buf;
}

static const char *
counter_description(const struct gcounter *c)
{
	if (c->id == RTPROF_COUNTER_SELF_MEMORY)
		return "rtprof's own memory: chunks, thread records, "
		    "descriptors";
	if (c->id == RTPROF_COUNTER_PROCESS_MEMORY)
		return "the process's resident memory (/proc/self/statm), "
		    "read by the sampler";
	return c->description != NULL ? c->description : "";
}

/*
 * Reading a counter's values back. Every value is the counter's level
 * then (records and VALUES frames carry it, not a change). A value equal
 * to the previous one adds nothing: registered threads report a change
 * both as a record and in the next VALUES frame. Values outside the
 * window are skipped.
 */
struct cval_ctx {
	struct gsess *g;
	struct json *j;
	struct tout *to;                /* markers: the thread's strings */
	const struct gcounter *c;
	struct gecko_counter_view view;
	bool have_prev, have_held;
	int64_t prev;
	struct gcval held;              /* a marker waiting for its end */
	uint64_t inwin, written;
	double last_ms;                 /* time of the last row written */
	/* Markers: the same for every value, made at the first one. */
	bool named;
	int64_t name;                   /* stringTable index of its name */
	uint32_t cat;                   /* category written */
	char schema[300];               /* its graph's schema name */
};

static int
cval_count(void *ctx, const void *rec, size_t n)
{
	struct cval_ctx *c = ctx;
	struct gcval v;

	(void)n;
	memcpy(&v, rec, sizeof(v));
	c->inwin += in_win(c->g, gecko_ms(c->g, key_ticks(c->g, v.key)));
	return 0;
}

/* Does counter @c have a value inside the window? */
static bool
counter_in_win(struct gsess *g, const struct gcounter *c)
{
	struct cval_ctx cx = { .g = g };

	/* Without a window every value is in it. */
	if (isinf(g->win_a) && isinf(g->win_b))
		return c->ns != 0;
	spill_get(g, c->vs, cval_count, &cx);
	return cx.inwin != 0;
}

/* Is @v a new level inside the window (cval_ctx's rules)? */
static bool
cval_take(struct cval_ctx *c, const struct gcval *v)
{
	if (c->have_prev && v->v == c->prev)
		return false;
	return in_win(c->g, gecko_ms(c->g, key_ticks(c->g, v->key)));
}

/* A memory counter row: the change since the previous level. */
static void
cval_row(struct json *j, double t, int64_t delta)
{
	json_arr(j);
	json_f64(j, t);
	json_i64(j, delta);
	json_arr_end(j);
}

/*
 * A memory counter: the front-end zeroes the first change and draws the
 * running sum, so a row of 0 just before the first level comes first
 * (the graph starts from 0 bytes and the first level is kept).
 */
static int
cval_memory(void *ctx, const void *rec, size_t n)
{
	struct cval_ctx *c = ctx;
	struct gcval v;
	double t;

	(void)n;
	memcpy(&v, rec, sizeof(v));
	if (!cval_take(c, &v))
		return 0;
	t = gecko_ms(c->g, key_ticks(c->g, v.key));
	if (c->written == 0)
		cval_row(c->j, t - GECKO_COUNTER_LEAD_MS, 0);
	cval_row(c->j, t, (int64_t)((uint64_t)v.v - (uint64_t)(c->written ?
	    c->prev : 0)));
	c->written++;
	c->last_ms = t;
	c->prev = v.v;
	c->have_prev = true;
	return 0;
}

static double counter_end_ms(const struct gsess *g);

static void
write_memory_counter(struct gsess *g, struct json *j,
    const struct gcounter *c)
{
	struct cval_ctx cx = { .g = g, .j = j, .c = c };
	char buf[64];

	json_obj(j);
	json_key_lit(j, "name");
	json_str(j, counter_name(c, buf, sizeof(buf)));
	json_key_lit(j, "category");
	json_str(j, "Memory");
	json_key_lit(j, "description");
	json_str(j, counter_description(c));
	json_key_lit(j, "samples");
	json_obj(j);
	json_key_lit(j, "schema");
	json_obj(j);
	json_key_lit(j, "time");
	json_u64(j, 0);
	json_key_lit(j, "count");
	json_u64(j, 1);
	json_obj_end(j);
	json_key_lit(j, "data");
	json_arr(j);
	spill_get(g, c->vs, cval_memory, &cx);
	/* The last level lasts to the end (no change: a row of 0). */
	if (cx.written != 0 && counter_end_ms(g) > cx.last_ms)
		cval_row(j, counter_end_ms(g), 0);
	json_arr_end(j);
	json_obj_end(j);
	json_obj_end(j);
}

/* Memory counters only: gauges and counts are marker graphs. */
void
write_counters(struct gsess *g, struct json *j)
{
	json_key_lit(j, "counters");
	json_arr(j);
	for (size_t i = 0; i < g->nctr; i++) {
		struct gecko_counter_view v;

		counter_view(&g->ctr[i], &v);
		if (v.show == GECKO_SHOW_MEMORY &&
		    counter_in_win(g, &g->ctr[i]))
			write_memory_counter(g, j, &g->ctr[i]);
	}
	json_arr_end(j);
}

/* The schema of a gauge's or count's graph: a track of its values. */
static void
write_counter_schema(struct gsess *g, struct json *j,
    const struct gcounter *c, const struct gecko_counter_view *v)
{
	char name[300], buf[64];
	const char *cname = counter_name(c, buf, sizeof(buf));

	gecko_counter_schema_name(cname, name, sizeof(name));
	json_obj(j);
	json_key_lit(j, "name");
	json_str(j, name);
	json_key_lit(j, "display");         /* the graph only */
	json_arr(j);
	json_arr_end(j);
	json_key_lit(j, "tooltipLabel");
	json_str(j, "{marker.name}: {marker.data.value}");
	json_key_lit(j, "tableLabel");
	json_str(j, "{marker.data.value}");
	json_key_lit(j, "chartLabel");
	json_str(j, "{marker.data.value}");
	json_key_lit(j, "description");
	json_str(j, counter_description(c));
	json_key_lit(j, "data");
	json_arr(j);
	json_obj(j);
	json_key_lit(j, "key");
	json_str(j, "value");
	json_key_lit(j, "label");
	json_str(j, v->show == GECKO_SHOW_COUNT ? "Count" : "Value");
	json_key_lit(j, "format");
	json_str(j, v->format);
	json_obj_end(j);
	json_obj(j);
	json_key_lit(j, "label");
	json_str(j, "Description");
	json_key_lit(j, "value");
	json_str(j, counter_description(c));
	json_obj_end(j);
	json_arr_end(j);
	json_key_lit(j, "graphs");
	json_arr(j);
	json_obj(j);
	json_key_lit(j, "key");
	json_str(j, "value");
	json_key_lit(j, "type");
	json_str(j, v->graph);
	json_key_lit(j, "color");
	json_str(j, v->show == GECKO_SHOW_COUNT ? "red" : "blue");
	json_obj_end(j);
	json_arr_end(j);
	json_obj_end(j);
	(void)g;
}

void
write_counter_schemas(struct gsess *g, struct json *j)
{
	for (size_t i = 0; i < g->nctr; i++) {
		struct gecko_counter_view v;

		/* Even without a value inside the window: the level in
		 * effect then is shown. Not for a counter whose first value
		 * came after the window: it has no marker, hence no track
		 * (write_counter_markers), and a schema without one is
		 * a graph of nothing. */
		counter_view(&g->ctr[i], &v);
		if (v.show != GECKO_SHOW_MEMORY && g->ctr[i].ns != 0 &&
		    gecko_ms(g, key_ticks(g, g->ctr[i].first_key)) <= g->win_b)
			write_counter_schema(g, j, &g->ctr[i], &v);
	}
}

/* The category index of a counter's markers: its category's, by name. */
static uint32_t
counter_cat(const struct gsess *g, const struct gcounter *c)
{
	for (uint32_t i = 0; c->category != NULL && i < g->ncat; i++)
		if (g->cat[i].name != NULL &&
		    strcmp(g->cat[i].name, c->category) == 0)
			return i;
	return g->cat_default;
}

/*
 * One level of a gauge or count, from when it was set to when the next
 * one was (@t1): the graph is a step at each change.
 */
static void
write_counter_marker(struct cval_ctx *c, const struct gcval *v, double t0,
    double t1)
{
	struct json *j = c->j;

	if (!c->named) {
		char buf[64];
		const char *cname = counter_name(c->c, buf, sizeof(buf));

		gecko_counter_schema_name(cname, c->schema, sizeof(c->schema));
		c->name = tout_intern(c->g, c->to, cname, strlen(cname));
		c->cat = out_cat(c->g, counter_cat(c->g, c->c));
		c->named = true;
	}
	json_arr(j);
	json_i64(j, c->name);
	json_f64(j, t0);
	json_f64(j, t1 >= t0 ? t1 : t0);
	json_u64(j, 1);
	json_u64(j, c->cat);
	json_obj(j);
	json_key_lit(j, "type");
	json_str(j, c->schema);
	json_key_lit(j, "value");
	if (c->view.scale == 1.0)
		json_i64(j, v->v);
	else
		json_f64(j, (double)v->v * c->view.scale);
	json_obj_end(j);
	json_arr_end(j);
}

/*
 * A level, held until the next one is known (its end). The level in
 * effect when the window starts is shown from the window's start.
 */
static int
cval_marker(void *ctx, const void *rec, size_t n)
{
	struct cval_ctx *c = ctx;
	struct gcval v;
	double t;

	(void)n;
	memcpy(&v, rec, sizeof(v));
	if (c->have_prev && v.v == c->prev)
		return 0;
	t = gecko_ms(c->g, key_ticks(c->g, v.key));
	if (t > c->g->win_b)
		return 1;               /* sorted: nothing more to write */
	if (c->have_held && t >= c->g->win_a)
		write_counter_marker(c, &c->held, c->last_ms, t);
	c->held = v;
	c->have_held = true;
	c->last_ms = t > c->g->win_a ? t : c->g->win_a;
	c->prev = v.v;
	c->have_prev = true;
	return 0;
}

/* The end of the session's data, or of the window when it ends before. */
static double
counter_end_ms(const struct gsess *g)
{
	double end = gecko_ms(g, g->have_trailer ? g->stop_ticks : g->last_t);

	return end < g->win_b ? end : g->win_b;
}

/* Every gauge and count as markers of the main thread (their graphs). */
void
write_counter_markers(struct gsess *g, struct json *j, struct tout *to)
{
	for (size_t i = 0; i < g->nctr; i++) {
		struct cval_ctx cx = { .g = g, .j = j, .to = to,
		    .c = &g->ctr[i] };

		counter_view(cx.c, &cx.view);
		if (cx.view.show == GECKO_SHOW_MEMORY)
			continue;
		spill_get(g, cx.c->vs, cval_marker, &cx);
		if (cx.have_held)
			write_counter_marker(&cx, &cx.held, cx.last_ms,
			    counter_end_ms(g));
	}
}
