/*
 * gecko.c - the converter's lifetime and what every stage shares: a dump
 * (struct rtprof_gecko) and its sessions, a session's clock (gecko_int.h:
 * gecko_ms), its threads, marker schemas, static strings and spilled
 * streams.
 *
 * Pipeline (gecko_int.h): not a stage; rtprof_gecko_new() starts a
 * conversion, gecko_read.c fills it, gecko_process.c writes it,
 * rtprof_gecko_free() ends it.
 *
 * Context: any thread; no shared state (gecko.h per function).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gecko_int.h"

/*
 * Append @rec (@n bytes) to the stream *@st, created at its first record
 * (@recsize 0: variable-size records). Errors latch in @g.
 */
int
spill_put(struct gsess *g, struct rtprof_spill_stream **st, size_t recsize,
    const void *rec, size_t n)
{
	int rc;

	if (*st == NULL &&
	    (*st = rtprof_spill_stream_new(g->file->spill, recsize)) == NULL)
		return gecko_fail(g, rtprof_spill_error(g->file->spill));
	rc = rtprof_spill_append(*st, rec, n);
	return rc != 0 ? gecko_fail(g, rc) : 0;
}

/* Read a stream back (nothing when it was never created). */
int
spill_get(struct gsess *g, struct rtprof_spill_stream *st, rtprof_spill_cb cb,
    void *ctx)
{
	int rc;

	if (st == NULL || g->err != 0)
		return g->err;
	rc = rtprof_spill_read(st, cb, ctx);
	return rc < 0 ? gecko_fail(g, rc) : rc;
}

struct gthread *
thread_get(struct gsess *g, int64_t tid)
{
	struct gthread t;
	int64_t i;

	if (g->th_last < g->nth && g->th[g->th_last].tid == tid)
		return &g->th[g->th_last];
	if (g->th_prev < g->nth && g->th[g->th_prev].tid == tid)
		i = (int64_t)g->th_prev;
	else
		i = rtprof_idmap_get(&g->th_idx, tid);
	if (i >= 0) {
		g->th_prev = g->th_last;
		g->th_last = (size_t)i;
		return &g->th[i];
	}
	memset(&t, 0, sizeof(t));
	t.tid = tid;
	if (VEC_PUSH(g, g->th, g->nth, g->thcap, t) != 0)
		return NULL;
	if (rtprof_idmap_set(&g->th_idx, tid, g->nth - 1) != 0) {
		gecko_fail(g, -ENOMEM);
		return NULL;
	}
	g->th_prev = g->th_last;
	g->th_last = g->nth - 1;
	return &g->th[g->nth - 1];
}

/* Marker schema @id of @g, NULL when the session did not declare it. */
const struct gschema *
schema_of(const struct gsess *g, uint32_t id)
{
	int64_t i = rtprof_idmap_get(&g->schema_idx, id);

	return i >= 0 ? &g->schema[i] : NULL;
}

void
schema_clear(struct gschema *sc)
{
	free(sc->name);
	free(sc->tooltip);
	free(sc->table);
	free(sc->chart);
	for (uint32_t k = 0; k < sc->nfields; k++) {
		free(sc->f[k].key);
		free(sc->f[k].label);
		free(sc->f[k].format);
	}
	free(sc->f);
	memset(sc, 0, sizeof(*sc));
}

/* ------------------------------------------------------------------ */
/* Public: lifetime                                                     */

int
rtprof_gecko_new(struct rtprof_gecko **out, const char *input_name)
{
	struct rtprof_gecko *g = calloc(1, sizeof(*g));

	if (g == NULL)
		return -ENOMEM;
	g->input = gecko_dup_opt(input_name != NULL ? input_name : "", &g->err);
	if (g->err != 0 || rtprof_spill_new(&g->spill, NULL,
	    GECKO_SPILL_BUDGET) != 0) {
		free(g->input);
		free(g);
		return -ENOMEM;
	}
	*out = g;
	return 0;
}

void
rtprof_gecko_free(struct rtprof_gecko *g)
{
	if (g == NULL)
		return;
	free(g->input);
	for (size_t i = 0; i < g->nsess; i++)
		gsess_free(g->sess[i]);
	free(g->sess);
	free(g->dmg);
	rtprof_spill_free(g->spill);
	free(g);
}

void
rtprof_gecko_set_symbols(struct rtprof_gecko *g,
    const struct rtprof_gecko_symbols *opt)
{
	if (opt != NULL)
		g->symopt = *opt;
	else
		memset(&g->symopt, 0, sizeof(g->symopt));
}

void
rtprof_gecko_set_progress(struct rtprof_gecko *g, rtprof_gecko_progress_cb cb,
    void *ctx)
{
	g->progress = cb;
	g->progress_ctx = ctx;
}

void
gsess_free(struct gsess *g)
{
	if (g == NULL)
		return;
	free(g->process);
	free(g->exe);
	free(g->sysname);
	free(g->release);
	free(g->machine);
	free(g->hostname);
	free(g->boot_id);
	free(g->clock_source);
	free(g->mode);
	free(g->sampling_method);
	free(g->sampling_why);
	for (uint32_t i = 0; i < g->ncat; i++)
		free(g->cat[i].name);
	user_free(g);
	free(g->cat_out);
	for (size_t i = 0; i < g->nmod; i++)
		free(g->mod[i].path);
	free(g->mod);
	free(g->chg);
	for (size_t i = 0; i < g->nimg; i++)
		free(g->img[i].bytes);
	free(g->img);
	for (size_t i = 0; i < g->nth; i++) {
		struct gthread *th = &g->th[i];

		free(th->name);
		/* Streams belong to the converter's spill. */
		for (size_t k = 0; k < th->nopen; k++)
			free(th->open[k].vals);
		free(th->open);
		if (th->has_pend)
			free(th->pend.vals);
		free(th->rs);
		pmap_free(&th->rs_idx);
		scache_free(&th->sc);
	}
	free(g->th);
	rtprof_idmap_free(&g->th_idx);
	rtprof_idmap_free(&g->ctr_idx);
	for (size_t i = 0; i < g->nschema; i++)
		schema_clear(&g->schema[i]);
	free(g->schema);
	rtprof_idmap_free(&g->schema_idx);
	for (size_t i = 0; i < g->nctr; i++) {
		free(g->ctr[i].name);
		free(g->ctr[i].category);
		free(g->ctr[i].description);
		free(g->ctr[i].unit);
	}
	free(g->ctr);
	for (size_t i = 0; i < g->strings.nslot; i++)
		free(g->strings.e[i].text);
	free(g->strings.e);
	free(g->pause);
	for (size_t i = 0; i < g->nev; i++) {
		free(g->ev[i].what);
		free(g->ev[i].message);
	}
	free(g->ev);
	rtprof_symbolizer_free(g->sym);
	free(g);
}

uint64_t
rtprof_gecko_problems(const struct rtprof_gecko *g)
{
	return g->dmg_total + g->ignored_frames;
}

int
rtprof_gecko_first_damage(const struct rtprof_gecko *g, uint64_t *offset,
    const char **message)
{
	if (g->ndmg == 0)
		return -ENOENT;
	*offset = g->dmg[0].offset;
	*message = g->dmg[0].message;
	return 0;
}

const char *
string_text(const struct gsess *g, uint64_t ref, char *buf,
    size_t size, size_t *len)
{
	const struct strmap_ent *e = strmap_find(&g->strings, ref);

	if (e != NULL) {
		*len = e->len;
		return e->text;
	}
	snprintf(buf, size, "(unknown string 0x%" PRIx64 ")", ref);
	*len = strlen(buf);
	return buf;
}

int64_t
tout_intern(struct gsess *g, struct tout *to, const char *s, size_t n)
{
	int64_t i = strtab_intern(&to->str, s, n);

	if (i < 0) {
		gecko_fail(g, -ENOMEM);
		return 0;
	}
	return i;
}

size_t
rtprof_gecko_sessions(const struct rtprof_gecko *g)
{
	size_t n = 0;

	for (size_t i = 0; i < g->nsess; i++)
		n += g->sess[i]->have_header;
	return n;
}

/* Context: the caller's thread. */
void
rtprof_gecko_thread_names(const struct rtprof_gecko *g,
    void (*fn)(void *ctx, const char *name), void *ctx)
{
	for (size_t i = 0; i < g->nsess; i++) {
		const struct gsess *s = g->sess[i];

		if (!s->have_header)
			continue;
		for (size_t k = 0; k < s->nth; k++)
			if (s->th[k].name != NULL && s->th[k].name[0] != '\0')
				fn(ctx, s->th[k].name);
	}
}
