/*
 * gecko_user.c - zones, text markers, flows, frame marks and declared
 * categories (records 13..18, CATEGORY frames): reading and writing.
 *
 * Pipeline (gecko_int.h): gecko_read.c hands records 13..18 here
 * (user_record) and CATEGORY frames (user_category_add). A ZONE_BEGIN is
 * an open begin of its thread (gecko_markers.c) whose fields are the zone
 * arguments; a ZONE_END closes the open zone whose start it names (not
 * by name), a ZONE_ARG fills a field of it; a zone still open after the
 * last record becomes an interval to the thread's end, "unfinished"
 * (user_open_close, from markers_close). TEXT and FLOW records are
 * finished markers at once. FRAME records of one name on one thread
 * delimit frames: each mark after the first finishes the frame since the
 * previous one; the set's durations are kept to judge frames without a
 * budget against the median. Writing: each kind's payload
 * (user_marker_data, from gecko_thread.c) and the four schemas
 * (write_user_schemas, from gecko_meta.c): "Zone", "Text", "Flow",
 * "Frame". Markers are coloured in the marker chart by their category's
 * colour (the schemas' colorField); frames by slow (red) or not (green),
 * and the Frame schema's graphs give each frame set its own track of
 * frame durations.
 *
 * Context: any thread; no shared state (gecko.h per function).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "gecko_int.h"

/* Slots of a zone's, a text's and a flow's fields (gmark.vals). */
enum {
	U_VALUE,        /* I64 or F64; kind 0: none */
	U_TEXT,         /* STR */
	U_FLOW,         /* U64 */
	U_FLOW_END,     /* U64 */
	U_UNFINISHED,   /* U64 1: the zone never ended */
	U_COLOR,        /* U64 1..RTPROF_WIRE_COLORS */
	U_NSLOTS
};

/* Slots of a frame (gmark.vals). */
enum { F_NUMBER, F_BUDGET_NS, F_SET, F_NSLOTS };

/* A frame set: its marks on one thread. */
struct gfset {
	int64_t tid;
	uint64_t name;
	uint64_t last_t;                /* the previous mark */
	uint64_t count;                 /* frames finished */
	uint64_t *dur;                  /* their durations (ticks) */
	size_t ndur, durcap;
	bool sorted;                    /* dur sorted (writing) */
};

#define GECKO_MAX_FSETS 1024    /* frame sets kept per session */

/* Slots and the text buffer of a new marker, all absent. */
static struct rtprof_val *
slots_new(struct gsess *g, unsigned n, size_t text)
{
	struct rtprof_val *v = calloc(1, n * sizeof(*v) + text);

	if (v == NULL)
		gecko_fail(g, -ENOMEM);
	return v;
}

/* The open zone of @th that began at @zone, newest first; -1: none. */
static ssize_t
zone_find(const struct gthread *th, uint64_t zone)
{
	size_t lim = th->nopen > GECKO_PAIR_SEARCH ?
	    th->nopen - GECKO_PAIR_SEARCH : 0;

	for (size_t i = th->nopen; i > lim; i--)
		if (th->open[i - 1].kind == RTPROF_REC_ZONE_BEGIN &&
		    th->open[i - 1].t0 == zone)
			return (ssize_t)(i - 1);
	return -1;
}

static int
zone_begin(struct gsess *g, struct gthread *th, struct gmark *m)
{
	m->phase = 2;
	m->nvals = U_NSLOTS;
	m->vals = slots_new(g, U_NSLOTS, RTPROF_WIRE_MAX_STR + 1);
	if (m->vals == NULL)
		return g->err;
	return marker_add(g, th, m);
}

/* A ZONE_ARG: the open zone's field. */
static int
zone_arg(struct gsess *g, struct gthread *th, const struct rtprof_rec_view *r)
{
	ssize_t i = zone_find(th, r->zone);
	static const uint8_t slot[] = { 0, U_VALUE, U_TEXT, U_FLOW, U_FLOW_END,
	    U_COLOR };
	struct rtprof_val *v;

	if (i < 0) {
		g->zone_unmatched++;
		return 0;
	}
	v = &th->open[i].vals[slot[r->phase]];
	if (r->vals[0].kind != RTPROF_VAL_STR) {
		*v = r->vals[0];
		return 0;
	}
	/* The text buffer follows the slots (zone_begin). */
	v->kind = RTPROF_VAL_STR;
	v->v.str.n = r->vals[0].v.str.n <= RTPROF_WIRE_MAX_STR ?
	    r->vals[0].v.str.n : RTPROF_WIRE_MAX_STR;
	v->v.str.p = (const char *)(th->open[i].vals + U_NSLOTS);
	memcpy((char *)v->v.str.p, r->vals[0].v.str.p, v->v.str.n);
	return 0;
}

static int
zone_end(struct gsess *g, struct gthread *th, const struct rtprof_rec_view *r)
{
	ssize_t i = zone_find(th, r->zone);

	if (i < 0) {
		g->zone_unmatched++;
		return 0;
	}
	return marker_end_open(g, th, (size_t)i, r->t0);
}

static int
text_add(struct gsess *g, struct gthread *th, struct gmark *m,
    const struct rtprof_rec_view *r)
{
	uint32_t n = r->vals[0].v.str.n <= RTPROF_WIRE_MAX_STR ?
	    r->vals[0].v.str.n : RTPROF_WIRE_MAX_STR;

	m->phase = r->phase == 1 ? 1 : 0;
	m->t1 = r->phase == 1 && r->t1 >= r->t0 ? r->t1 : r->t0;
	m->nvals = U_NSLOTS;
	m->vals = slots_new(g, U_NSLOTS, n + 1);
	if (m->vals == NULL)
		return g->err;
	m->vals[U_TEXT].kind = RTPROF_VAL_STR;
	m->vals[U_TEXT].v.str.n = n;
	m->vals[U_TEXT].v.str.p = (const char *)(m->vals + U_NSLOTS);
	memcpy(m->vals + U_NSLOTS, r->vals[0].v.str.p, n);
	note_time(g, m->t1);
	return marker_add(g, th, m);
}

static int
flow_add(struct gsess *g, struct gthread *th, struct gmark *m,
    const struct rtprof_rec_view *r)
{
	m->phase = 0;
	m->t1 = m->t0;
	m->nvals = U_NSLOTS;
	m->vals = slots_new(g, U_NSLOTS, 0);
	if (m->vals == NULL)
		return g->err;
	m->vals[r->flags ? U_FLOW_END : U_FLOW].kind = RTPROF_VAL_U64;
	m->vals[r->flags ? U_FLOW_END : U_FLOW].v.u = r->flow;
	return marker_add(g, th, m);
}

/* The frame set @name of @th, made when new; NULL: too many sets. */
static struct gfset *
fset_get(struct gsess *g, int64_t tid, uint64_t name, size_t *idx)
{
	struct gfset s;

	for (size_t i = 0; i < g->nfset; i++)
		if (g->fset[i].tid == tid && g->fset[i].name == name) {
			*idx = i;
			return &g->fset[i];
		}
	if (g->nfset == GECKO_MAX_FSETS)
		return NULL;
	memset(&s, 0, sizeof(s));
	s.tid = tid;
	s.name = name;
	if (VEC_PUSH(g, g->fset, g->nfset, g->fsetcap, s) != 0)
		return NULL;
	*idx = g->nfset - 1;
	return &g->fset[*idx];
}

static int
frame_add(struct gsess *g, struct gthread *th, struct gmark *m,
    const struct rtprof_rec_view *r)
{
	size_t idx;
	struct gfset *s = fset_get(g, th->tid, r->name, &idx);
	uint64_t t0;

	if (s == NULL)
		return g->err;
	t0 = s->last_t;
	s->last_t = r->t0;
	if (s->count++ == 0 && t0 == 0) {
		s->count = 0;           /* the first mark starts frame 1 */
		return 0;
	}
	if (VEC_PUSH(g, s->dur, s->ndur, s->durcap,
	    r->t0 >= t0 ? r->t0 - t0 : 0) != 0)
		return g->err;
	m->phase = 1;
	m->t0 = t0;
	m->t1 = r->t0 >= t0 ? r->t0 : t0;
	m->category = RTPROF_WIRE_CAT_USER;
	m->nvals = F_NSLOTS;
	m->vals = slots_new(g, F_NSLOTS, 0);
	if (m->vals == NULL)
		return g->err;
	m->vals[F_NUMBER].kind = RTPROF_VAL_U64;
	m->vals[F_NUMBER].v.u = s->count;
	m->vals[F_BUDGET_NS].kind = RTPROF_VAL_U64;
	m->vals[F_BUDGET_NS].v.u = (uint64_t)r->value;
	m->vals[F_SET].kind = RTPROF_VAL_U64;
	m->vals[F_SET].v.u = idx;
	return marker_add(g, th, m);
}

/* @m: the marker of @r as gecko_read.c set it up (kind, t0, name, cat). */
int
user_record(struct gsess *g, struct gthread *th, const struct rtprof_rec_view *r,
    struct gmark *m)
{
	switch (r->kind) {
	case RTPROF_REC_ZONE_BEGIN:
		return zone_begin(g, th, m);
	case RTPROF_REC_ZONE_END:
		return zone_end(g, th, r);
	case RTPROF_REC_ZONE_ARG:
		return zone_arg(g, th, r);
	case RTPROF_REC_TEXT:
		return text_add(g, th, m, r);
	case RTPROF_REC_FLOW:
		return flow_add(g, th, m, r);
	case RTPROF_REC_FRAME:
		return frame_add(g, th, m, r);
	default:
		return 0;
	}
}

/* A zone still open after the last record ends with its thread. */
void
user_open_close(struct gsess *g, const struct gthread *th, struct gmark *m)
{
	uint64_t end = th->has_unreg ? th->unreg :
	    g->have_trailer ? g->stop_ticks : g->last_t;

	if (m->kind != RTPROF_REC_ZONE_BEGIN || m->vals == NULL)
		return;
	m->phase = 1;
	m->t1 = end >= m->t0 ? end : m->t0;
	m->vals[U_UNFINISHED].kind = RTPROF_VAL_U64;
	m->vals[U_UNFINISHED].v.u = 1;
}

void
user_free(struct gsess *g)
{
	for (size_t i = 0; i < g->nfset; i++)
		free(g->fset[i].dur);
	free(g->fset);
}

/* ------------------------------------------------------------------ */
/* Writing                                                              */

/*
 * The marker-chart colour (a GraphColor) of category @idx: its own
 * colour, or the nearest; NULL for transparent (drawn as the default).
 */
static const char *
graph_color(const struct gsess *g, uint32_t idx)
{
	static const char *const map[][2] = {
		{ "lightblue", "teal" }, { "brown", "orange" },
		{ "lightred", "red" }, { "darkgrey", "grey" },
		{ "transparent", NULL },
	};
	const char *c = idx < g->ncat ? g->cat[idx].color : "grey";

	for (size_t i = 0; i < sizeof(map) / sizeof(*map); i++)
		if (strcmp(c, map[i][0]) == 0)
			return map[i][1];
	return c;
}

static int
dur_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The (lower) median frame duration of set @i (ticks); 0: unknown. */
static uint64_t
fset_median(struct gsess *g, uint64_t i)
{
	struct gfset *s;

	if (i >= g->nfset || g->fset[i].ndur == 0)
		return 0;
	s = &g->fset[i];
	if (!s->sorted) {
		qsort(s->dur, s->ndur, sizeof(*s->dur), dur_cmp);
		s->sorted = true;
	}
	return s->dur[(s->ndur - 1) / 2];       /* the lower median */
}

/* Is the frame @m slow: over its budget, or 1.5 times its set's median? */
static bool
frame_slow(struct gsess *g, const struct gmark *m)
{
	uint64_t budget = m->vals[F_BUDGET_NS].v.u;
	double ms = gecko_ms(g, m->t1) - gecko_ms(g, m->t0);

	if (budget != 0)
		return ms * 1e6 > (double)budget;
	return (double)(m->t1 - m->t0) >
	    1.5 * (double)fset_median(g, m->vals[F_SET].v.u);
}

static void
frame_data(struct gsess *g, struct json *j, const struct gmark *m)
{
	double ms = gecko_ms(g, m->t1) - gecko_ms(g, m->t0);
	bool slow = frame_slow(g, m);

	json_key(j, "number");
	json_u64(j, m->vals[F_NUMBER].v.u);
	json_key(j, "duration");
	json_f64(j, ms);
	if (m->vals[F_BUDGET_NS].v.u != 0) {
		json_key(j, "budget");
		json_f64(j, (double)m->vals[F_BUDGET_NS].v.u / 1e6);
	}
	json_key(j, "ok");
	json_f64(j, slow ? 0.0 : ms);
	json_key(j, "slow");
	json_f64(j, slow ? ms : 0.0);
	json_key(j, "color");
	json_str(j, slow ? "red" : "green");
}

/* A flow id as the profile shows it: a string table index. */
static void
flow_value(struct gsess *g, struct json *j, struct tout *to, const char *key,
    uint64_t id)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "0x%" PRIx64, id);

	json_key(j, key);
	json_i64(j, tout_intern(g, to, buf, (size_t)n));
}

static void
slots_data(struct gsess *g, struct json *j, struct tout *to,
    const struct gmark *m)
{
	static const char *const colors[] = { RTPROF_WIRE_COLOR_NAMES };
	const struct rtprof_val *v = m->vals;
	const char *color = graph_color(g, cat_index(g, m->category));

	if (v[U_VALUE].kind == RTPROF_VAL_I64 ||
	    v[U_VALUE].kind == RTPROF_VAL_U64) {
		json_key(j, "value");
		json_i64(j, v[U_VALUE].v.i);
	} else if (v[U_VALUE].kind == RTPROF_VAL_F64) {
		json_key(j, "number");
		json_f64(j, v[U_VALUE].v.d);
	}
	if (v[U_TEXT].kind == RTPROF_VAL_STR) {
		json_key(j, "text");
		json_strn(j, v[U_TEXT].v.str.p, v[U_TEXT].v.str.n);
	}
	if (v[U_FLOW].kind == RTPROF_VAL_U64)
		flow_value(g, j, to, "flow", v[U_FLOW].v.u);
	if (v[U_FLOW_END].kind == RTPROF_VAL_U64)
		flow_value(g, j, to, "flowEnd", v[U_FLOW_END].v.u);
	if (v[U_UNFINISHED].kind == RTPROF_VAL_U64) {
		json_key(j, "unfinished");
		json_str(j, "unfinished: no end recorded");
	}
	if (v[U_COLOR].kind == RTPROF_VAL_U64 && v[U_COLOR].v.u >= 1 &&
	    v[U_COLOR].v.u <= RTPROF_WIRE_COLORS)
		color = colors[v[U_COLOR].v.u - 1];
	if (color != NULL) {
		json_key(j, "color");
		json_str(j, color);
	}
}

bool
user_marker_kind(unsigned kind)
{
	return kind >= RTPROF_REC_ZONE_BEGIN && kind <= RTPROF_REC_FRAME &&
	    kind != RTPROF_REC_ZONE_END && kind != RTPROF_REC_ZONE_ARG;
}

void
user_marker_data(struct gsess *g, struct json *j, struct tout *to,
    const struct gmark *m)
{
	static const char *const type[] = { "Zone", "", "", "Text", "Flow",
	    "Frame" };

	json_obj(j);
	json_key(j, "type");
	json_str(j, type[m->kind - RTPROF_REC_ZONE_BEGIN]);
	if (m->kind == RTPROF_REC_FRAME && m->nvals == F_NSLOTS)
		frame_data(g, j, m);
	else if (m->nvals == U_NSLOTS)
		slots_data(g, j, to, m);
	json_obj_end(j);
}

/* One schema field: {key, label, format[, hidden]}. */
static void
field(struct json *j, const char *key, const char *label, const char *format,
    bool hidden)
{
	json_obj(j);
	json_key(j, "key");
	json_str(j, key);
	json_key(j, "label");
	json_str(j, label);
	json_key(j, "format");
	json_str(j, format);
	if (hidden) {
		json_key(j, "hidden");
		json_bool(j, true);
	}
	json_obj_end(j);
}

/* The head of a schema: name, display, labels; "data" left open. */
static void
schema_head(struct json *j, const char *name, const char *tooltip,
    const char *table, const char *chart)
{
	json_obj(j);
	json_key(j, "name");
	json_str(j, name);
	json_key(j, "display");
	json_arr(j);
	json_str(j, "marker-chart");
	json_str(j, "marker-table");
	json_arr_end(j);
	json_key(j, "tooltipLabel");
	json_str(j, tooltip);
	json_key(j, "tableLabel");
	json_str(j, table);
	json_key(j, "chartLabel");
	json_str(j, chart);
	json_key(j, "colorField");
	json_str(j, "color");
	json_key(j, "data");
	json_arr(j);
}

/* The fields zones, texts and flows share (slots_data). */
static void
slot_fields(struct json *j)
{
	field(j, "text", "Text", "string", false);
	field(j, "value", "Value", "integer", false);
	field(j, "number", "Value", "decimal", false);
	field(j, "flow", "Flow", "flow-id", false);
	field(j, "flowEnd", "Flow (last step)", "terminating-flow-id", false);
	field(j, "unfinished", "Unfinished", "string", false);
	field(j, "color", "Colour", "string", true);
	json_arr_end(j);
	json_obj_end(j);
}

/* A marker track graph: bars of @key's values. */
static void
bar_graph(struct json *j, const char *key, const char *color)
{
	json_obj(j);
	json_key(j, "key");
	json_str(j, key);
	json_key(j, "type");
	json_str(j, "bar");
	json_key(j, "color");
	json_str(j, color);
	json_obj_end(j);
}

static void
frame_schema(struct json *j)
{
	schema_head(j, "Frame", "{marker.name} {marker.data.number}: "
	    "{marker.data.duration}", "frame {marker.data.number}: "
	    "{marker.data.duration}", "{marker.data.number}");
	field(j, "number", "Frame", "integer", false);
	field(j, "duration", "Duration", "duration", false);
	field(j, "budget", "Budget", "duration", false);
	field(j, "ok", "Within budget", "duration", true);
	field(j, "slow", "Slow", "duration", true);
	field(j, "color", "Colour", "string", true);
	json_arr_end(j);
	json_key(j, "graphs");
	json_arr(j);
	bar_graph(j, "ok", "green");
	bar_graph(j, "slow", "red");
	json_arr_end(j);
	json_obj_end(j);
}

void
write_user_schemas(struct json *j)
{
	schema_head(j, "Zone", "{marker.name} {marker.data.text}",
	    "{marker.data.text} {marker.data.value}{marker.data.number} "
	    "{marker.data.unfinished}", "{marker.data.text}");
	slot_fields(j);
	schema_head(j, "Text", "{marker.name}: {marker.data.text}",
	    "{marker.data.text}", "{marker.data.text}");
	slot_fields(j);
	schema_head(j, "Flow", "{marker.name} (flow {marker.data.flow}"
	    "{marker.data.flowEnd})", "flow {marker.data.flow}"
	    "{marker.data.flowEnd}", "");
	slot_fields(j);
	frame_schema(j);
}
