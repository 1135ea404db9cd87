/*
 * dumpmodel.c - see dumpmodel.h. Context: the test's own thread.
 */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dumpmodel.h"

static struct dm_session *
cur(struct dm *m)
{
	return m->nsessions ? &m->sessions[m->nsessions - 1] : NULL;
}

struct dm_thread *
dm_thread(struct dm_session *s, int64_t tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	s->threads = realloc(s->threads, (s->nthreads + 1) * sizeof(*s->threads));
	memset(&s->threads[s->nthreads], 0, sizeof(s->threads[0]));
	s->threads[s->nthreads].tid = tid;
	return &s->threads[s->nthreads++];
}

const char *
dm_string(const struct dm_session *s, uint64_t ref)
{
	for (size_t i = s->nstrings; i-- > 0;)
		if (s->strings[i].ref == ref)
			return s->strings[i].text;
	return NULL;
}

static int
on_header(void *ctx, const struct rtprof_dump_header *h)
{
	struct dm *m = ctx;
	struct dm_session *s;

	m->sessions = realloc(m->sessions, (m->nsessions + 1) * sizeof(*m->sessions));
	s = &m->sessions[m->nsessions++];
	memset(s, 0, sizeof(*s));
	s->id = h->session;
	s->generation = h->generation;
	s->pid = h->pid;
	snprintf(s->process, sizeof(s->process), "%s", h->process ? h->process : "");
	snprintf(s->clock_source, sizeof(s->clock_source), "%s", h->clock.source ? h->clock.source : "");
	snprintf(s->mode, sizeof(s->mode), "%s", h->settings.mode ? h->settings.mode : "");
	s->ticks_per_second = h->clock.ticks_per_second;
	s->start_ticks = h->clock.start_ticks;
	return 0;
}

static int
on_modules(void *ctx, const struct rtprof_dump_module *mods, size_t n)
{
	struct dm_session *s = cur(ctx);

	if (s == NULL)
		return 0;
	s->nmodules = n;
	for (size_t i = 0; i < n && i < 32; i++) {
		snprintf(s->modules[i].path, sizeof(s->modules[i].path), "%s",
		    mods[i].path ? mods[i].path : "");
		s->modules[i].start = mods[i].start;
		s->modules[i].end = mods[i].end;
		s->modules[i].build_id_len = mods[i].build_id_len;
	}
	return 0;
}

static int
on_thread(void *ctx, const struct rtprof_dump_thread *t)
{
	struct dm_session *s = cur(ctx);
	struct dm_thread *th;

	if (s == NULL)
		return 0;
	th = dm_thread(s, t->tid);
	snprintf(th->name, sizeof(th->name), "%s", t->name ? t->name : "");
	th->flags = t->flags;
	th->register_ticks = t->register_ticks;
	th->has_unregister = t->has_unregister;
	th->unregister_ticks = t->unregister_ticks;
	if (t->has_totals) {
		th->nsettled++;
		rtprof_dump_counts_add(&th->settled, &t->totals);
	}
	return 0;
}

/* Add @c to the counts of its tid in @v (@n entries, room for one more). */
static void
counts_fold(struct rtprof_dump_trailer_thread *v, size_t *n,
    const struct rtprof_dump_trailer_thread *c)
{
	for (size_t i = 0; i < *n; i++)
		if (v[i].tid == c->tid) {
			rtprof_dump_counts_add(&v[i], c);
			return;
		}
	v[(*n)++] = *c;
}

static int
on_schema(void *ctx, const struct rtprof_dump_schema *sc)
{
	struct dm_session *s = cur(ctx);

	if (s && s->nschemas < 64) {
		s->schemas[s->nschemas].id = sc->id;
		snprintf(s->schemas[s->nschemas].name, 64, "%s", sc->name);
		s->schemas[s->nschemas].nfields = sc->nfields;
		s->nschemas++;
	}
	return 0;
}

static int
on_counter(void *ctx, const struct rtprof_dump_counter *c)
{
	struct dm_session *s = cur(ctx);

	if (s && s->ncounters < 64) {
		s->counters[s->ncounters].id = c->id;
		snprintf(s->counters[s->ncounters].name, 64, "%s", c->name);
		s->ncounters++;
	}
	return 0;
}

static int
on_string(void *ctx, uint64_t ref, const char *text, size_t len)
{
	struct dm_session *s = cur(ctx);

	if (s == NULL)
		return 0;
	s->strings = realloc(s->strings, (s->nstrings + 1) * sizeof(*s->strings));
	s->strings[s->nstrings].ref = ref;
	s->strings[s->nstrings].text = strndup(text, len);
	s->nstrings++;
	return 0;
}

static int
on_data(void *ctx, const struct rtprof_dump_data *d)
{
	struct dm_session *s = cur(ctx);
	struct dm_thread *th;

	if (s == NULL)
		return 0;
	th = dm_thread(s, d->tid);
	th->drops_full += d->dropped_full;
	th->drops_nested += d->dropped_nested;
	th->data_frames++;
	th->chunk_starts += d->byte_offset == 0;
	return 0;
}

static int
on_record(void *ctx, const struct rtprof_dump_data *d, const struct rtprof_rec_view *r)
{
	struct dm_session *s = cur(ctx);
	struct dm_thread *th;
	struct dm_rec *x;
	size_t strsz = 0;

	if (s == NULL)
		return 0;
	th = dm_thread(s, d->tid);
	if (th->nrecs == th->cap) {
		th->cap = th->cap ? th->cap * 2 : 256;
		th->recs = realloc(th->recs, th->cap * sizeof(*th->recs));
	}
	x = &th->recs[th->nrecs++];
	x->v = *r;
	x->name = r->name ? dm_string(s, r->name) : NULL;
	x->chunk_seq = d->chunk_seq;
	x->generation = d->generation;
	for (unsigned i = 0; i < r->nvals; i++)
		if (r->vals[i].kind == RTPROF_VAL_STR)
			strsz += r->vals[i].v.str.n + 1;
	x->strs = strsz ? malloc(strsz) : NULL;
	strsz = 0;
	for (unsigned i = 0; i < r->nvals; i++)
		if (r->vals[i].kind == RTPROF_VAL_STR) {
			memcpy(x->strs + strsz, r->vals[i].v.str.p, r->vals[i].v.str.n);
			x->strs[strsz + r->vals[i].v.str.n] = 0;
			x->v.vals[i].v.str.p = x->strs + strsz;
			strsz += r->vals[i].v.str.n + 1;
		}
	return 0;
}

static int
on_pause(void *ctx, uint64_t a, uint64_t b)
{
	struct dm_session *s = cur(ctx);

	if (s && s->npauses < 256) {
		s->pauses[s->npauses].start = a;
		s->pauses[s->npauses].end = b;
		s->npauses++;
	}
	return 0;
}

static int
on_values(void *ctx, uint64_t t, size_t n, const uint32_t *ids, const int64_t *v)
{
	struct dm_session *s = cur(ctx);

	(void)t;
	if (s == NULL)
		return 0;
	s->nvalues++;
	for (size_t i = 0; i < n; i++) {
		size_t k;

		for (k = 0; k < s->nvalue_last && s->value_last[k].id != ids[i]; k++)
			;
		if (k == s->nvalue_last) {
			if (k == 64)
				continue;
			s->nvalue_last++;
		}
		s->value_last[k].id = ids[i];
		s->value_last[k].v = v[i];
	}
	return 0;
}

static int
on_event(void *ctx, const struct rtprof_dump_event *e)
{
	struct dm_session *s = cur(ctx);

	if (s && s->nevents < 8)
		snprintf(s->events[s->nevents++], 32, "%s", e->what ? e->what : "");
	return 0;
}

static int
on_trailer(void *ctx, const struct rtprof_dump_trailer *t)
{
	struct dm_session *s = cur(ctx);

	if (s == NULL)
		return 0;
	s->has_trailer = 1;
	s->trailer = *t;
	s->trailer_entries = t->nthreads;
	/* Every thread's counts in one list, as before THREAD totals: the
	 * trailer's entries in their order, then the settled threads. */
	s->tthreads = malloc((t->nthreads + s->nthreads + 1) *
	    sizeof(*s->tthreads));
	s->trailer.nthreads = 0;
	for (size_t i = 0; i < t->nthreads; i++)
		counts_fold(s->tthreads, &s->trailer.nthreads, &t->threads[i]);
	for (size_t i = 0; i < s->nthreads; i++) {
		if (s->threads[i].nsettled == 0)
			continue;
		counts_fold(s->tthreads, &s->trailer.nthreads,
		    &s->threads[i].settled);
	}
	s->trailer.threads = s->tthreads;
	return 0;
}

static int
on_damage(void *ctx, const struct rtprof_dump_damage *d)
{
	struct dm *m = ctx;

	if ((unsigned)d->kind < 8)
		m->damage_by_kind[d->kind]++;
	return 0;
}

static void
cb_init(struct rtprof_dump_cb *cb, struct dm *m)
{
	memset(cb, 0, sizeof(*cb));
	cb->ctx = m;
	cb->on_header = on_header;
	cb->on_modules = on_modules;
	cb->on_thread = on_thread;
	cb->on_schema = on_schema;
	cb->on_counter = on_counter;
	cb->on_string = on_string;
	cb->on_data = on_data;
	cb->on_record = on_record;
	cb->on_pause = on_pause;
	cb->on_values = on_values;
	cb->on_event = on_event;
	cb->on_trailer = on_trailer;
	cb->on_damage = on_damage;
}

int
dm_load_fd(struct dm *m, int fd)
{
	struct rtprof_dump_cb cb;

	memset(m, 0, sizeof(*m));
	cb_init(&cb, m);
	m->rc = rtprof_dump_read_fd(fd, &cb, &m->stats);
	return m->rc;
}

int
dm_load_path(struct dm *m, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0) {
		memset(m, 0, sizeof(*m));
		return -errno;
	}
	rc = dm_load_fd(m, fd);
	close(fd);
	return rc;
}

void
dm_free(struct dm *m)
{
	for (size_t i = 0; i < m->nsessions; i++) {
		struct dm_session *s = &m->sessions[i];

		for (size_t t = 0; t < s->nthreads; t++) {
			for (size_t r = 0; r < s->threads[t].nrecs; r++)
				free(s->threads[t].recs[r].strs);
			free(s->threads[t].recs);
		}
		free(s->threads);
		for (size_t k = 0; k < s->nstrings; k++)
			free(s->strings[k].text);
		free(s->strings);
		free(s->tthreads);
	}
	free(m->sessions);
	memset(m, 0, sizeof(*m));
}

size_t
dm_count(const struct dm *m, int64_t tid, int kind)
{
	size_t n = 0;

	for (size_t i = 0; i < m->nsessions; i++) {
		const struct dm_session *s = &m->sessions[i];

		for (size_t t = 0; t < s->nthreads; t++) {
			if (s->threads[t].tid != tid)
				continue;
			for (size_t r = 0; r < s->threads[t].nrecs; r++)
				if (kind == 0 || s->threads[t].recs[r].v.kind == kind)
					n++;
		}
	}
	return n;
}

int64_t
dm_value(const struct dm_session *s, uint32_t id, int *found)
{
	for (size_t k = 0; k < s->nvalue_last; k++)
		if (s->value_last[k].id == id) {
			*found = 1;
			return s->value_last[k].v;
		}
	*found = 0;
	return 0;
}

const struct dm_thread *
dm_find_thread(const struct dm_session *s, int64_t tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}

const struct rtprof_dump_trailer_thread *
dm_trailer_thread(const struct dm_session *s, int64_t tid)
{
	for (size_t i = 0; i < s->trailer.nthreads; i++)
		if (s->trailer.threads[i].tid == tid)
			return &s->trailer.threads[i];
	return NULL;
}
