/*
 * gecko_read.c - reading, the first stage: the dump reader's callbacks.
 *
 * Pipeline (gecko_int.h): dump_reader.c -> here -> struct gsess. Every
 * session with a HEADER becomes one struct gsess (one process of the
 * profile); its descriptors (header, modules, threads, schemas, counters,
 * strings) are copied, its records dispatched: markers to gecko_markers.c,
 * sampler records to gecko_stacks.c, counter values to gecko_counters.c,
 * sleep/wake to placeholder samples (spilled here). Damage and the
 * decoder's statistics stay with the dump for the gathering log.
 *
 * Context: any thread; no shared state (gecko.h per function).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gecko_int.h"

static struct gsess *
cur_sess(void *ctx)
{
	return ((struct rtprof_gecko *)ctx)->cur;
}

static const char *const gecko_colors[] = {
	"transparent", "purple", "green", "orange", "yellow", "lightblue",
	"blue", "brown", "magenta", "red", "lightred", "darkgrey", "grey",
};

static const char *
color_of(const char *c)
{
	for (size_t i = 0; i < sizeof(gecko_colors) / sizeof(*gecko_colors);
	    i++)
		if (c != NULL && strcmp(c, gecko_colors[i]) == 0)
			return gecko_colors[i];
	return "grey";
}

static int
cat_add(struct gsess *g, const char *name, const char *color)
{
	char buf[32];

	if (g->ncat >= GECKO_MAX_CATEGORIES)
		return -1;
	if (name[0] == '\0') {         /* the front-end would show nothing */
		snprintf(buf, sizeof(buf), "Category %" PRIu32, g->ncat);
		name = buf;
	}
	g->cat[g->ncat].name = gecko_dup_opt(name, &g->err);
	g->cat[g->ncat].color = color_of(color);
	return (int)g->ncat++;
}

/*
 * Every session with a HEADER becomes its own process. Frames of a session
 * whose HEADER was lost have no clock: they are counted and ignored.
 */
static int
on_frame(void *ctx, const struct rtprof_dump_frame *f)
{
	struct rtprof_gecko *fg = ctx;
	struct gsess *g = fg->cur;

	if (fg->progress != NULL)
		fg->progress(fg->progress_ctx, f->offset);
	if (g != NULL && g->session_index == f->session_index) {
		g->frames++;
		return 0;
	}
	g = NULL;
	for (size_t i = fg->nsess; i > 0; i--) {
		if (fg->sess[i - 1]->session_index == f->session_index) {
			g = fg->sess[i - 1];
			break;
		}
	}
	if (g == NULL && f->kind == RTPROF_FRAME_HEADER) {
		g = calloc(1, sizeof(*g));
		if (g == NULL || gecko_grow((void **)&fg->sess, &fg->sesscap,
		    fg->nsess + 1, sizeof(*fg->sess)) != 0) {
			free(g);
			fg->err = -ENOMEM;
			return -ENOMEM;
		}
		g->file = fg;
		g->session_index = f->session_index;
		g->ordinal = fg->nsess + 1;
		fg->sess[fg->nsess++] = g;
	}
	fg->cur = g;
	if (g != NULL)
		g->frames++;
	if (g == NULL) {
		fg->ignored_frames++;
		if (f->session_index != fg->last_ignored_session) {
			fg->last_ignored_session = f->session_index;
			fg->ignored_sessions++;
		}
	}
	return 0;
}

static int
on_header(void *ctx, const struct rtprof_dump_header *h)
{
	struct gsess *g = cur_sess(ctx);
	uint32_t i, ndump;

	if (g == NULL || g->have_header)
		return 0;
	g->have_header = true;
	g->pid = h->pid;
	g->ppid = h->ppid;
	g->process = gecko_dup_opt(h->process, &g->err);
	g->exe = gecko_dup_opt(h->exe, &g->err);
	g->sysname = gecko_dup_opt(h->machine.sysname, &g->err);
	g->release = gecko_dup_opt(h->machine.release, &g->err);
	g->machine = gecko_dup_opt(h->machine.machine, &g->err);
	g->hostname = gecko_dup_opt(h->machine.hostname, &g->err);
	g->boot_id = gecko_dup_opt(h->machine.boot_id, &g->err);
	g->cpus = h->machine.cpus;
	g->clock_source = gecko_dup_opt(h->clock.source, &g->err);
	g->ticks_per_second = h->clock.ticks_per_second;
	if (!clock_rate_ok(g->ticks_per_second)) {
		/* Said in the gathering log (clockNote). */
		g->rate_replaced = true;
		g->bad_rate = g->ticks_per_second;
		g->ticks_per_second = 1e9;
	}
	g->start_ticks = h->clock.start_ticks;
	g->start_mono_ns = h->clock.start_mono_ns;
	g->start_wall_ns = h->clock.start_wall_ns;
	g->mode = gecko_dup_opt(h->settings.mode, &g->err);
	g->sample_interval_us = h->settings.sample_interval_us;
	g->sampling_method = gecko_dup_opt(h->sampling.method, &g->err);
	g->sampling_why = gecko_dup_opt(h->sampling.why, &g->err);
	g->kernel_stacks = h->sampling.kernel_stacks;

	/*
	 * The dump's categories keep their ids as indexes; room is left for
	 * an Idle and a grey default category when the dump has none.
	 */
	ndump = h->ncategories;
	if (ndump > GECKO_MAX_CATEGORIES - 2)
		ndump = GECKO_MAX_CATEGORIES - 2;
	g->ndump_cat = ndump;
	g->cat_default = g->cat_idle = g->cat_profiler = UINT32_MAX;
	g->cat_user = UINT32_MAX;
	for (i = 0; i < ndump; i++) {
		const char *n = h->category_names[i];

		cat_add(g, n != NULL ? n : "", h->category_colors[i]);
		if (n != NULL && strcmp(n, "Idle") == 0 &&
		    g->cat_idle == UINT32_MAX)
			g->cat_idle = i;
		if (n != NULL && strcmp(n, "Profiler") == 0 &&
		    g->cat_profiler == UINT32_MAX)
			g->cat_profiler = i;
		if (n != NULL && strcmp(n, "User") == 0 &&
		    g->cat_user == UINT32_MAX)
			g->cat_user = i;
		if (strcmp(g->cat[i].color, "grey") == 0 &&
		    g->cat_default == UINT32_MAX)
			g->cat_default = i;
	}
	if (g->cat_default == UINT32_MAX)
		g->cat_default = (uint32_t)cat_add(g, "Other", "grey");
	if (g->cat_idle == UINT32_MAX)
		g->cat_idle = (uint32_t)cat_add(g, "Idle", "transparent");
	if (g->cat_profiler == UINT32_MAX)
		g->cat_profiler = g->cat_default;
	/* Labels are code regions the developer named: "User". */
	if (g->cat_user == UINT32_MAX)
		g->cat_user = g->cat_default;
	return g->err;
}

static int add_gmodules(struct gsess *g, const struct rtprof_dump_module *m,
    size_t n, uint64_t from);

static int
on_modules(void *ctx, const struct rtprof_dump_module *m, size_t n)
{
	struct gsess *g = cur_sess(ctx);

	if (g == NULL || g->have_modules)
		return 0;
	g->have_modules = true;
	return add_gmodules(g, m, n, 0);
}

/* Modules @m[0..@n) mapped from @from on. */
static int
add_gmodules(struct gsess *g, const struct rtprof_dump_module *m, size_t n,
    uint64_t from)
{
	for (size_t i = 0; i < n; i++) {
		struct gmodule gm;

		memset(&gm, 0, sizeof(gm));
		gm.from = from;
		gm.to = UINT64_MAX;
		gm.path = gecko_dup_opt(m[i].path != NULL ? m[i].path : "", &g->err);
		gm.start = m[i].start;
		gm.end = m[i].end;
		gm.offset = m[i].offset;
		gm.build_id_len = m[i].build_id_len;
		if (gm.build_id_len > sizeof(gm.build_id))
			gm.build_id_len = sizeof(gm.build_id);
		if (m[i].build_id != NULL)
			memcpy(gm.build_id, m[i].build_id, gm.build_id_len);
		else
			gm.build_id_len = 0;
		if (VEC_PUSH(g, g->mod, g->nmod, g->modcap, gm) != 0) {
			free(gm.path);
			break;
		}
	}
	return g->err;
}

/* The module @m mapped now: its span ends at @t. */
static void
end_gmodule(struct gsess *g, const struct rtprof_dump_module *m, uint64_t t)
{
	const char *path = m->path != NULL ? m->path : "";

	for (size_t i = g->nmod; i-- > 0;) {
		struct gmodule *gm = &g->mod[i];

		if (gm->to == UINT64_MAX && gm->start == m->start &&
		    gm->end == m->end && strcmp(gm->path, path) == 0) {
			gm->to = t;
			return;
		}
	}
}

/* MODULES_CHANGED: unloaded modules' spans end, loaded ones begin. */
static int
on_module_change(void *ctx, const struct rtprof_dump_module_change *c)
{
	struct gsess *g = cur_sess(ctx);

	if (g == NULL)
		return 0;
	for (size_t i = 0; i < c->nremoved; i++)
		end_gmodule(g, &c->removed[i], c->ticks);
	if (VEC_PUSH(g, g->chg, g->nchg, g->chgcap, c->ticks) != 0)
		return g->err;
	return add_gmodules(g, c->added, c->nadded, c->ticks);
}

/* IMAGE: kept for the symbolizer. */
static int
on_image(void *ctx, uint64_t addr, const void *bytes, size_t len)
{
	struct gsess *g = cur_sess(ctx);
	struct gimage im = { .addr = addr, .len = len };

	if (g == NULL)
		return 0;
	if ((im.bytes = malloc(len ? len : 1)) == NULL)
		return gecko_fail(g, -ENOMEM);
	memcpy(im.bytes, bytes, len);
	if (VEC_PUSH(g, g->img, g->nimg, g->imgcap, im) != 0)
		free(im.bytes);
	return g->err;
}

/* A thread's counts, from its last THREAD frame or the trailer: added up,
 * as a tid's counts may come in several parts (docs/wire-format.md). */
static void
settled_add(struct gthread *th, const struct rtprof_dump_trailer_thread *c)
{
	th->settled = true;
	rtprof_dump_counts_add(&th->tr, c);
}

static int
on_thread(void *ctx, const struct rtprof_dump_thread *t)
{
	struct gsess *g = cur_sess(ctx);
	struct gthread *th;

	if (g == NULL)
		return 0;
	th = thread_get(g, t->tid);
	if (th == NULL)
		return g->err;
	/* A later THREAD frame for the same tid replaces an earlier one. */
	free(th->name);
	th->name = gecko_dup_opt(t->name != NULL ? t->name : "", &g->err);
	th->flags = t->flags;
	th->described = true;
	th->has_reg = true;
	th->reg = t->register_ticks;
	th->has_unreg = t->has_unregister;
	th->unreg = t->unregister_ticks;
	if (t->has_totals)
		settled_add(th, &t->totals);
	return g->err;
}

/*
 * The entry of schema @id, emptied (a later SCHEMA frame for an id
 * replaces the earlier one); NULL on ENOMEM. The table holds what the
 * session declares: a session of one schema costs one entry, not 65536.
 */
static struct gschema *
schema_slot(struct gsess *g, uint32_t id)
{
	int64_t i = rtprof_idmap_get(&g->schema_idx, id);
	struct gschema *sc;

	if (i >= 0) {
		sc = &g->schema[i];
	} else {
		if (gecko_grow((void **)&g->schema, &g->schemacap, g->nschema + 1,
		    sizeof(*g->schema)) != 0 ||
		    rtprof_idmap_set(&g->schema_idx, id, g->nschema) != 0) {
			gecko_fail(g, -ENOMEM);
			return NULL;
		}
		sc = &g->schema[g->nschema++];
		memset(sc, 0, sizeof(*sc));
	}
	schema_clear(sc);
	sc->id = id;
	sc->present = true;
	return sc;
}

/* @name, or when empty (the front-end shows nothing) @fmt with @n. */
static char *
dup_named(const char *name, const char *fmt, uint32_t n, int *err)
{
	char buf[48];

	if (name != NULL && name[0] != '\0')
		return gecko_dup_opt(name, err);
	snprintf(buf, sizeof(buf), fmt, n);
	return gecko_dup_opt(buf, err);
}

static int
on_schema(void *ctx, const struct rtprof_dump_schema *s)
{
	struct gsess *g = cur_sess(ctx);
	struct gschema *sc;

	if (g == NULL || s->id > 65535)
		return 0;
	sc = schema_slot(g, s->id);
	if (sc == NULL)
		return g->err;
	sc->name = dup_named(s->name, "Marker type %u", s->id, &g->err);
	sc->category = s->category;
	sc->display = s->display;
	sc->tooltip = gecko_dup_opt(s->tooltip, &g->err);
	sc->table = gecko_dup_opt(s->table, &g->err);
	sc->chart = gecko_dup_opt(s->chart, &g->err);
	if (s->nfields != 0) {
		sc->f = calloc(s->nfields, sizeof(*sc->f));
		if (sc->f == NULL)
			return gecko_fail(g, -ENOMEM);
		sc->nfields = s->nfields;
	}
	for (uint32_t i = 0; i < s->nfields; i++) {
		const struct rtprof_dump_field *f = &s->fields[i];

		sc->f[i].key = dup_named(f->key, "field%u", i + 1, &g->err);
		sc->f[i].label = dup_named(f->label, "Field %u", i + 1,
		    &g->err);
		sc->f[i].format = gecko_dup_opt(f->format != NULL ? f->format : "",
		    &g->err);
		sc->f[i].kind = f->kind;
		if (g->err == 0) {
			sc->f[i].ofmt = field_format(sc->f[i].format, f->kind);
			sc->f[i].idx = format_is_index(sc->f[i].ofmt);
			sc->f[i].is_type = strcmp(sc->f[i].key, "type") == 0;
		}
	}
	return g->err;
}

static int
on_counter(void *ctx, const struct rtprof_dump_counter *c)
{
	struct gsess *g = cur_sess(ctx);
	struct gcounter *gc;

	if (g == NULL)
		return 0;
	gc = counter_get(g, c->id);
	if (gc == NULL)
		return g->err;
	free(gc->name);
	free(gc->category);
	free(gc->description);
	free(gc->unit);
	gc->kind = c->kind;
	gc->unit = gecko_dup_opt(c->unit, &g->err);
	gc->name = gecko_dup_opt(c->name, &g->err);
	gc->category = gecko_dup_opt(c->category, &g->err);
	gc->description = gecko_dup_opt(c->description, &g->err);
	return g->err;
}

static int
on_string(void *ctx, uint64_t ref, const char *text, size_t len)
{
	struct gsess *g = cur_sess(ctx);

	if (g == NULL)
		return 0;
	if (strmap_put(&g->strings, ref, text, len) != 0)
		return gecko_fail(g, -ENOMEM);
	return 0;
}

static int
on_data(void *ctx, const struct rtprof_dump_data *d)
{
	struct gsess *g = cur_sess(ctx);
	struct gthread *th;

	if (g == NULL)
		return 0;
	th = thread_get(g, d->tid);
	if (th == NULL)
		return g->err;
	th->dropped_full += d->dropped_full;
	th->dropped_nested += d->dropped_nested;
	/*
	 * Events dropped since the thread's previous chunk: a "Dropped
	 * events" interval from its previous chunk's last record to this
	 * chunk's first, so the timeline shows where data is missing.
	 */
	if (d->byte_offset == 0 && (d->dropped_full || d->dropped_nested)) {
		struct gmark m;
		struct rtprof_val *v = calloc(2, sizeof(*v));

		if (v == NULL)
			return gecko_fail(g, -ENOMEM);
		memset(&m, 0, sizeof(m));
		m.kind = GMARK_DROPPED;
		m.phase = 1;
		m.t0 = th->has_last_data && th->last_data <= d->first_ticks ?
		    th->last_data : d->first_ticks;
		m.t1 = d->first_ticks;
		m.nvals = 2;
		v[0].kind = RTPROF_VAL_U64;
		v[0].v.u = d->dropped_full;
		v[1].kind = RTPROF_VAL_U64;
		v[1].v.u = d->dropped_nested;
		m.vals = v;
		note_time(g, m.t1);
		if (marker_add(g, th, &m) != 0)
			return g->err;
	}
	if (d->nrec != 0) {
		th->last_data = d->last_ticks;
		th->has_last_data = true;
	}
	return 0;
}

static int
sample_add(struct gsess *g, struct gthread *th, uint64_t t, bool idle)
{
	struct gsample s;

	memset(&s, 0, sizeof(s));
	s.key = time_key(g, t);
	s.idle = idle;
	th->ns++;
	return spill_put(g, &th->ps, GSAMPLE_REC, &s, GSAMPLE_REC);
}

/* OVERHEAD: a marker on the sampler thread, and the session's totals. */
static int
on_overhead(struct gsess *g, struct gthread *th,
    const struct rtprof_rec_view *r)
{
	struct govh o = { .t0 = r->t0, .t1 = r->t1 >= r->t0 ? r->t1 : r->t0 };
	uint64_t total;

	memcpy(o.v, r->overhead, sizeof(o.v));
	total = o.v[0] + o.v[1] + o.v[2];
	g->ovh_ticks++;
	for (int i = 0; i < 4; i++)
		g->ovh_sum[i] += o.v[i];
	if (total > g->ovh_max)
		g->ovh_max = total;
	note_time(g, o.t1);
	th->novh++;
	return spill_put(g, &th->ovs, sizeof(o), &o, sizeof(o));
}

/* A declared category: the next index, for records of its id. */
static int
on_category(void *ctx, const struct rtprof_dump_category *c)
{
	struct gsess *g = cur_sess(ctx);
	int idx;

	if (g == NULL || c->id < g->ndump_cat ||
	    c->id >= RTPROF_WIRE_MAX_CATEGORIES || g->ucat[c->id] != 0)
		return 0;       /* a built-in id, or declared already */
	idx = cat_add(g, c->name, c->color);
	if (idx >= 0)
		g->ucat[c->id] = (uint16_t)(idx + 1);
	return g->err;
}

static int
on_record(void *ctx, const struct rtprof_dump_data *d,
    const struct rtprof_rec_view *r)
{
	struct gsess *g = cur_sess(ctx);
	const struct gschema *sc;
	struct gthread *th;
	struct gmark m;

	if (g == NULL)
		return 0;
	th = thread_get(g, d->tid);
	if (th == NULL)
		return g->err;
	th->recs++;
	if (r->kind <= RTPROF_REC_KIND_MAX)
		g->recs_by_kind[r->kind]++;
	if (r->kind == RTPROF_REC_BACKTRACE)
		return stacks_backtrace(g, th, r);
	/* Any other record: the pending marker has no backtrace coming. */
	if (th->has_pend && pend_flush(g, th) != 0)
		return g->err;
	if (!th->has_first || r->t0 < th->first_ticks) {
		th->first_ticks = r->t0;
		th->has_first = true;
	}
	note_time(g, r->t0);
	memset(&m, 0, sizeof(m));
	m.kind = r->kind;
	m.t0 = r->t0;
	m.name = r->name;
	m.category = r->category;
	switch (r->kind) {
	case RTPROF_REC_INSTANT:
		m.phase = 0;
		return marker_add(g, th, &m);
	case RTPROF_REC_BEGIN:
		m.phase = 2;
		return marker_add(g, th, &m);
	case RTPROF_REC_END:
		m.kind = RTPROF_REC_BEGIN;      /* pairs with a begin */
		m.phase = 3;
		return marker_add(g, th, &m);
	case RTPROF_REC_INTERVAL:
		m.phase = 1;
		m.t1 = r->t1 >= r->t0 ? r->t1 : r->t0;
		note_time(g, m.t1);
		return marker_add(g, th, &m);
	case RTPROF_REC_TYPED:
		if (r->phase > 3)
			return 0;
		m.phase = r->phase;
		m.type = r->id;
		m.t1 = r->phase == 1 && r->t1 >= r->t0 ? r->t1 : r->t0;
		m.nvals = (uint8_t)r->nvals;
		m.vals = vals_copy(g, r);
		if (g->err != 0)
			return g->err;
		sc = schema_of(g, r->id);
		m.category = sc != NULL ? (uint8_t)sc->category : 0;
		note_time(g, m.t1);
		return marker_add(g, th, &m);
	case RTPROF_REC_COUNTER:
		return counter_value(g, r->id, r->t0, r->value);
	case RTPROF_REC_SLEEP:
		return sample_add(g, th, r->t0, true);
	case RTPROF_REC_WAKE:
		return sample_add(g, th, r->t0, false);
	/* Sampler records: @th (the sampler) may move in thread_get(). */
	case RTPROF_REC_SAMPLE:
		return stacks_sample(g, r);
	case RTPROF_REC_SAME:
		return stacks_same(g, r);
	case RTPROF_REC_KSTACK:
		return stacks_kstack(g, r);
	case RTPROF_REC_OVERHEAD:
		return on_overhead(g, th, r);
	default:        /* zones, text, flows, frames */
		return user_record(g, th, r, &m);
	}
}

static int
on_pause(void *ctx, uint64_t start_ticks, uint64_t end_ticks)
{
	struct gsess *g = cur_sess(ctx);
	uint64_t p[2] = { start_ticks, end_ticks >= start_ticks ? end_ticks :
	    start_ticks };

	if (g == NULL)
		return 0;
	if (gecko_grow((void **)&g->pause, &g->pausecap, g->npause + 1,
	    sizeof(*g->pause)) != 0)
		return gecko_fail(g, -ENOMEM);
	g->pause[g->npause][0] = p[0];
	g->pause[g->npause][1] = p[1];
	g->npause++;
	return 0;
}

static int
on_values(void *ctx, uint64_t ticks, size_t n, const uint32_t *ids,
    const int64_t *values)
{
	struct gsess *g = cur_sess(ctx);

	if (g == NULL)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (counter_value(g, ids[i], ticks, values[i]) != 0)
			return g->err;
	return 0;
}

static int
on_event(void *ctx, const struct rtprof_dump_event *e)
{
	struct gsess *g = cur_sess(ctx);
	struct gevent ev;

	if (g == NULL)
		return 0;
	g->ev_total++;
	if (g->nev >= GECKO_MAX_EVENTS)
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.ticks = e->ticks;
	ev.what = gecko_dup_opt(e->what != NULL ? e->what : "", &g->err);
	ev.has_errno = e->has_errno;
	ev.errnum = e->errnum;
	ev.message = gecko_dup_opt(e->message, &g->err);
	ev.has_max_bytes = e->has_max_bytes;
	ev.max_bytes = e->max_bytes;
	if (VEC_PUSH(g, g->ev, g->nev, g->evcap, ev) != 0) {
		free(ev.what);
		free(ev.message);
	}
	return g->err;
}

static int
on_trailer(void *ctx, const struct rtprof_dump_trailer *t)
{
	struct gsess *g = cur_sess(ctx);

	if (g == NULL)
		return 0;
	g->have_trailer = true;
	g->stop_ticks = t->stop_ticks;
	g->stop_mono_ns = t->stop_mono_ns;
	g->tr_chunks_lost = t->chunks_lost;
	g->tr_samples_lost = t->samples_lost;
	g->tr_threads_omitted = t->threads_omitted;
	g->tr_limit_reached = t->limit_reached;
	for (size_t i = 0; i < t->nthreads; i++) {
		struct gthread *th = thread_get(g, t->threads[i].tid);

		if (th == NULL)
			return g->err;
		settled_add(th, &t->threads[i]);
	}
	return 0;
}

static int
on_damage(void *ctx, const struct rtprof_dump_damage *d)
{
	struct rtprof_gecko *g = ctx;
	struct gdamage gd = {
		.kind = d->kind, .offset = d->offset, .length = d->length,
		.count = d->count, .session_index = d->session_index,
		.message = d->message,
	};

	g->dmg_total++;
	if (g->ndmg >= GECKO_MAX_DAMAGE)
		return 0;
	if (gecko_grow((void **)&g->dmg, &g->dmgcap, g->ndmg + 1,
	    sizeof(*g->dmg)) != 0) {
		g->err = -ENOMEM;
		return -ENOMEM;
	}
	g->dmg[g->ndmg++] = gd;
	return 0;
}

int
rtprof_gecko_read_fd(struct rtprof_gecko *g, int fd,
    struct rtprof_dump_stats *st)
{
	struct rtprof_dump_cb cb = {
		.ctx = g,
		.on_frame = on_frame,
		.on_header = on_header,
		.on_modules = on_modules,
		.on_module_change = on_module_change,
		.on_image = on_image,
		.on_thread = on_thread,
		.on_schema = on_schema,
		.on_counter = on_counter,
		.on_category = on_category,
		.on_string = on_string,
		.on_data = on_data,
		.on_record = on_record,
		.on_pause = on_pause,
		.on_values = on_values,
		.on_event = on_event,
		.on_trailer = on_trailer,
		.on_damage = on_damage,
	};
	int rc = rtprof_dump_read_fd(fd, &cb, &g->stats);

	if (st != NULL)
		*st = g->stats;
	g->cur = NULL;
	for (size_t i = 0; i < g->nsess; i++)
		markers_close(g->sess[i]);
	/* Every session's clock is known now: its rate computed once. */
	for (size_t i = 0; i < g->nsess; i++) {
		g->sess[i]->nspt = gecko_ns_per_tick(g->sess[i]);
		g->sess[i]->nspt_ready = true;
	}
	for (size_t i = 0; i < g->nsess && g->err == 0; i++)
		g->err = g->sess[i]->err;
	/*
	 * A session whose HEADER frame arrived but could not be decoded has
	 * no clock either: ignored like a headerless one, once.
	 */
	for (size_t i = 0; i < g->nsess; i++) {
		if (g->sess[i]->have_header || g->sess[i]->frames == 0)
			continue;
		g->ignored_frames += g->sess[i]->frames;
		g->ignored_sessions++;
		g->sess[i]->frames = 0;
	}
	if (g->err != 0)
		return g->err;
	return rc;
}
