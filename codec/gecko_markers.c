/*
 * gecko_markers.c - reading: marker pairing.
 *
 * Pipeline (gecko_int.h): gecko_read.c hands each marker record here;
 * an end pairs with the latest open begin of its name (or type) and the
 * two become one interval; a finished marker waits one record for a
 * BACKTRACE (gecko_stacks.c), then is spilled (spill.h) into its thread's
 * stream, which gecko_thread.c reads back when the thread is written.
 * Only open begins stay in memory (GECKO_MAX_OPEN per thread). A complete
 * "Audio callback" interval is also put among the thread's samples
 * (gecko_samples.c: samples inside a callback are never Idle).
 *
 * Context: any thread; no shared state (gecko.h per function).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gecko_int.h"

/* Does the begin @b pair with the end @e (same name, or same type)? */
static bool
pairs_with(const struct gmark *b, const struct gmark *e)
{
	if (b->kind != e->kind)
		return false;
	if (b->kind == RTPROF_REC_TYPED)
		return b->type == e->type;
	return b->name == e->name;
}

/*
 * A finished marker in the thread's spilled stream: its fixed part, then
 * each typed field as its kind byte and 8 bytes, or (copied strings) a
 * 16-bit length and the bytes. Frees @m's fields.
 */
struct gmark_rec {
	uint64_t t0, t1, name;
	uint32_t stack1;
	uint16_t type;
	uint8_t kind, phase, category, nvals;
};

static int
marker_spill(struct gsess *g, struct gthread *th, struct gmark *m)
{
	unsigned char buf[sizeof(struct gmark_rec) + RTPROF_REC_MAX_VALS *
	    (3 + 256)];
	struct gmark_rec h;
	size_t n = sizeof(h);

	memset(&h, 0, sizeof(h));
	h.t0 = m->t0;
	h.t1 = m->t1;
	h.name = m->name;
	h.stack1 = m->stack1;
	h.type = m->type;
	h.kind = m->kind;
	h.phase = m->phase;
	h.category = m->category;
	h.nvals = m->nvals;
	memcpy(buf, &h, sizeof(h));
	for (unsigned i = 0; i < m->nvals; i++) {
		const struct rtprof_val *v = &m->vals[i];

		buf[n++] = (unsigned char)v->kind;
		if (v->kind == RTPROF_VAL_STR) {
			uint16_t len = (uint16_t)(v->v.str.n < 256 ?
			    v->v.str.n : 255);

			memcpy(buf + n, &len, 2);
			memcpy(buf + n + 2, v->v.str.p, len);
			n += 2 + len;
		} else {
			memcpy(buf + n, &v->v.u, 8);
			n += 8;
		}
	}
	free(m->vals);
	m->vals = NULL;
	th->nm++;
	return spill_put(g, &th->ms, 0, buf, n);
}

/* The inverse of marker_spill(): @m's fields point into @rec and @vals. */
void
marker_unspill(const unsigned char *rec, struct gmark *m,
    struct rtprof_val *vals)
{
	struct gmark_rec h;
	size_t n = sizeof(h);

	memcpy(&h, rec, sizeof(h));
	memset(m, 0, sizeof(*m));
	m->t0 = h.t0;
	m->t1 = h.t1;
	m->name = h.name;
	m->stack1 = h.stack1;
	m->type = h.type;
	m->kind = h.kind;
	m->phase = h.phase;
	m->category = h.category;
	m->nvals = h.nvals <= RTPROF_REC_MAX_VALS ? h.nvals : 0;
	m->vals = vals;
	for (unsigned i = 0; i < m->nvals; i++) {
		vals[i].kind = rec[n++];
		if (vals[i].kind == RTPROF_VAL_STR) {
			uint16_t len;

			memcpy(&len, rec + n, 2);
			vals[i].v.str.p = (const char *)rec + n + 2;
			vals[i].v.str.n = len;
			n += 2 + len;
		} else {
			memcpy(&vals[i].v.u, rec + n, 8);
			n += 8;
		}
	}
}

/* The pending marker (if any) joins the thread's finished markers. */
int
pend_flush(struct gsess *g, struct gthread *th)
{
	if (!th->has_pend)
		return 0;
	th->has_pend = false;
	return marker_spill(g, th, &th->pend);
}

/* Is @m a complete "Audio callback" interval (rtprof_audio_end)? */
static bool
is_audio_callback(const struct gsess *g, const struct gmark *m)
{
	const struct gschema *sc;

	if (m->kind != RTPROF_REC_TYPED || m->phase != 1 || m->t1 < m->t0)
		return false;
	sc = schema_of(g, m->type);
	return sc != NULL && sc->present && sc->name != NULL &&
	    strcmp(sc->name, "Audio callback") == 0;
}

/*
 * An "Audio callback" interval joins @th's samples as two marks (struct
 * gsmp, GSMP_CB_*). The start is keyed one tick early and the end one
 * tick late, so that a sample taken at the callback's first or last tick
 * sorts inside, whichever arrived first (records of one key keep their
 * arrival order).
 */
static int
callback_add(struct gsess *g, struct gthread *th, const struct gmark *m)
{
	struct gsmp s;

	memset(&s, 0, sizeof(s));
	s.key = time_key(g, m->t0 != 0 ? m->t0 - 1 : 0);
	s.stack = GSMP_CB_BEGIN;
	if (spill_put(g, &th->smps, GSMP_REC, &s, GSMP_REC) != 0)
		return g->err;
	s.key = time_key(g, m->t1 != UINT64_MAX ? m->t1 + 1 : m->t1);
	s.stack = GSMP_CB_END;
	th->ncb++;
	return spill_put(g, &th->smps, GSMP_REC, &s, GSMP_REC);
}

/* A finished marker: pending until the thread's next record. */
static int
marker_finish(struct gsess *g, struct gthread *th, struct gmark *m)
{
	if (is_audio_callback(g, m) && callback_add(g, th, m) != 0) {
		free(m->vals);
		m->vals = NULL;
		return g->err;
	}
	if (pend_flush(g, th) != 0) {
		free(m->vals);
		m->vals = NULL;
		return g->err;
	}
	th->pend = *m;
	th->has_pend = true;
	th->last_open = false;
	return 0;
}

/* The open begin th->open[@i] ends at @t1: a complete interval. */
int
marker_end_open(struct gsess *g, struct gthread *th, size_t i, uint64_t t1)
{
	struct gmark b = th->open[i];

	b.phase = 1;
	b.t1 = t1 >= b.t0 ? t1 : b.t0;
	memmove(&th->open[i], &th->open[i + 1],
	    (th->nopen - i - 1) * sizeof(*th->open));
	th->nopen--;
	return marker_finish(g, th, &b);
}

int
marker_add(struct gsess *g, struct gthread *th, struct gmark *m)
{
	m->seq = g->seq++;
	if (m->phase == 3) {
		/*
		 * An end pairs with the latest open begin of the same name:
		 * the begin becomes a complete interval (phase 1), which the
		 * front-end displays better than a 2/3 pair.
		 */
		size_t lim = th->nopen > GECKO_PAIR_SEARCH ?
		    th->nopen - GECKO_PAIR_SEARCH : 0;

		for (size_t i = th->nopen; i > lim; i--) {
			if (!pairs_with(&th->open[i - 1], m))
				continue;
			free(m->vals);
			m->vals = NULL;
			return marker_end_open(g, th, i - 1, m->t0);
		}
		m->t1 = m->t0;
	}
	if (m->phase != 2)
		return marker_finish(g, th, m);
	if (pend_flush(g, th) != 0) {
		free(m->vals);
		return g->err;
	}
	/* Too many open: the oldest stays an unmatched begin (phase 2). */
	if (th->nopen == GECKO_MAX_OPEN) {
		struct gmark old = th->open[0];

		memmove(&th->open[0], &th->open[1],
		    (th->nopen - 1) * sizeof(*th->open));
		th->nopen--;
		if (marker_spill(g, th, &old) != 0)
			return g->err;
	}
	if (VEC_PUSH(g, th->open, th->nopen, th->opencap, *m) != 0) {
		free(m->vals);
		return g->err;
	}
	th->last_open = true;
	return 0;
}

/* After the last record: begins that never ended stay phase 2. */
void
markers_close(struct gsess *g)
{
	for (size_t i = 0; i < g->nth; i++) {
		struct gthread *th = &g->th[i];

		pend_flush(g, th);
		for (size_t k = 0; k < th->nopen; k++) {
			user_open_close(g, th, &th->open[k]);  /* zones */
			marker_spill(g, th, &th->open[k]);
		}
		th->nopen = 0;
		th->last_open = false;
	}
}

/* Copy the typed fields of @r, copied strings included. */
struct rtprof_val *
vals_copy(struct gsess *g, const struct rtprof_rec_view *r)
{
	size_t n = r->nvals, bytes = 0, off;
	struct rtprof_val *v;
	char *s;

	if (n == 0)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (r->vals[i].kind == RTPROF_VAL_STR)
			bytes += r->vals[i].v.str.n + 1;
	v = malloc(n * sizeof(*v) + bytes);
	if (v == NULL) {
		gecko_fail(g, -ENOMEM);
		return NULL;
	}
	s = (char *)(v + n);
	off = 0;
	for (size_t i = 0; i < n; i++) {
		v[i] = r->vals[i];
		if (v[i].kind != RTPROF_VAL_STR)
			continue;
		if (v[i].v.str.n != 0)
			memcpy(s + off, r->vals[i].v.str.p, v[i].v.str.n);
		s[off + v[i].v.str.n] = '\0';
		v[i].v.str.p = s + off;
		off += v[i].v.str.n + 1;
	}
	return v;
}
