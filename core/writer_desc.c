/*
 * writer_desc.c - the descriptor frames a session's dump carries besides
 * its DATA: HEADER (process, clock, settings, sampling, categories),
 * MODULES and their changes, THREAD, SCHEMA (marker types), COUNTER,
 * CATEGORY, PAUSE, VALUES (counter levels) and the link's EVENTs. Each is
 * packed into a W_FRAME item of the round's batch (writer_int.h) and
 * written later by writer_out.c.
 *
 * Context: the writer thread, core lock held (collect(), writer.c); the
 * session's descriptor fields are read under that lock.
 */
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "core.h"
#include "writer_int.h"

/* A string (nil for NULL), and a map key. Context: the writer thread. */
void
rtprof__pack_str(msgpack_packer *pk, const char *s)
{
	if (s == NULL) {
		msgpack_pack_nil(pk);
		return;
	}
	msgpack_pack_str(pk, strlen(s));
	msgpack_pack_str_body(pk, s, strlen(s));
}

void
rtprof__pack_key(msgpack_packer *pk, const char *k)
{
	rtprof__pack_str(pk, k);
}

/* "sampling": how the sampler takes this process's stacks, and why. */
static void
pack_sampling(const rtprof_lock *lk, msgpack_packer *pk,
    const struct rtprof_settings *st)
{
	char why[256] = "";
	const char *m = st->sample_interval_us == RTPROF_SAMPLING_OFF ? "off" :
	    rtprof__perf_method(lk, why, sizeof(why));

	rtprof__pack_key(pk, "sampling");
	msgpack_pack_map(pk, 3);
	rtprof__pack_key(pk, "method");
	rtprof__pack_str(pk, m);
	rtprof__pack_key(pk, "why");
	rtprof__pack_str(pk, why);
	rtprof__pack_key(pk, "kernel_stacks");
	if (strcmp(m, "off") != 0 && rtprof__perf_kstacks(lk))
		msgpack_pack_true(pk);
	else
		msgpack_pack_false(pk);
}

/*
 * MODULES: the objects loaded now (the session keeps the map, to announce
 * changes), then IMAGE: the vDSO's ELF image, which no file holds.
 * Context: writer thread, lock held.
 */
static void
add_modules(struct rtprof__session *s)
{
	msgpack_packer pk;
	const void *image;
	uint64_t base;
	size_t n;

	s->mods = rtprof__modules_scan();
	if (rtprof__frame_add(s, RTPROF_FRAME_MODULES, &pk) == NULL)
		return;
	rtprof__pack_modules((struct msgpack_packer *)&pk, s->mods);
	if (rtprof__vdso_image(&base, &image, &n) != 0 ||
	    rtprof__frame_add(s, RTPROF_FRAME_IMAGE, &pk) == NULL)
		return;
	msgpack_pack_array(&pk, 2);
	msgpack_pack_uint64(&pk, base);
	msgpack_pack_bin(&pk, n);
	msgpack_pack_bin_body(&pk, image, n);
}

/*
 * MODULES_CHANGED: when a module was loaded (dlopen) or unloaded since the
 * map @s announced last, what changed and when it was seen (after the
 * scan: a module is announced at most one round after it was loaded).
 * Context: writer thread, lock held; the check is one dl_iterate_phdr
 * callback per round.
 */
void
rtprof__desc_modules_update(struct rtprof__session *s)
{
	struct rtprof__modset *now;
	msgpack_packer pk;

	if (s->mods == NULL || !rtprof__modules_stale(s->mods))
		return;
	if ((now = rtprof__modules_scan()) == NULL)
		return;
	if (rtprof__modules_differ(s->mods, now) &&
	    rtprof__frame_add(s, RTPROF_FRAME_MODULES_CHANGED, &pk) != NULL)
		rtprof__pack_module_changes((struct msgpack_packer *)&pk,
		    rtprof_now(), s->mods, now);
	rtprof__modset_free(s->mods);
	s->mods = now;
}

void
rtprof__desc_header(const rtprof_lock *lk, struct rtprof__session *s)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	const struct rtprof_settings *st = &s->set;
	msgpack_packer pk;

	if (rtprof__frame_add(s, RTPROF_FRAME_HEADER, &pk) == NULL)
		return;
	/* 3 here + 6 from rtprof__pack_process() + clock, settings,
	 * sampling, categories. */
	msgpack_pack_map(&pk, 13);
	rtprof__pack_key(&pk, "format");
	msgpack_pack_uint32(&pk, RTPROF_WIRE_VERSION);
	rtprof__pack_key(&pk, "session");
	msgpack_pack_uint32(&pk, s->id);
	rtprof__pack_key(&pk, "generation");
	msgpack_pack_uint32(&pk, s->gen);
	/* pid, ppid, process, exe, cmdline, machine: 6 more pairs. */
	rtprof__pack_process((struct msgpack_packer *)&pk);
	rtprof__pack_key(&pk, "clock");
	msgpack_pack_map(&pk, 5);
	rtprof__pack_key(&pk, "source");
	rtprof__pack_str(&pk, rtprof__clock_source());
	rtprof__pack_key(&pk, "ticks_per_second");
	msgpack_pack_double(&pk, c->ticks_per_sec);
	rtprof__pack_key(&pk, "start_ticks");
	msgpack_pack_uint64(&pk, s->start_ticks);
	rtprof__pack_key(&pk, "start_mono_ns");
	msgpack_pack_uint64(&pk, s->start_mono);
	rtprof__pack_key(&pk, "start_wall_ns");
	msgpack_pack_uint64(&pk, s->start_wall);
	rtprof__pack_key(&pk, "settings");
	msgpack_pack_map(&pk, 8);
	rtprof__pack_key(&pk, "mode");
	rtprof__pack_str(&pk, st->mode == RTPROF_MODE_FLIGHT_RECORDER ? "flight" : "stream");
	rtprof__pack_key(&pk, "memory_limit");
	msgpack_pack_uint64(&pk, st->memory_limit);
	rtprof__pack_key(&pk, "chunk_size");
	msgpack_pack_uint32(&pk, st->chunk_size);
	rtprof__pack_key(&pk, "prefill");
	msgpack_pack_uint32(&pk, st->prefill);
	rtprof__pack_key(&pk, "max_bytes");
	msgpack_pack_uint64(&pk, st->max_bytes);
	rtprof__pack_key(&pk, "flush_interval_us");
	msgpack_pack_uint32(&pk, st->flush_interval_us);
	rtprof__pack_key(&pk, "sample_interval_us");
	msgpack_pack_uint32(&pk, st->sample_interval_us);
	rtprof__pack_key(&pk, "link_bytes_per_sec");
	msgpack_pack_uint32(&pk, st->link_bytes_per_sec);
	pack_sampling(lk, &pk, st);
	rtprof__pack_key(&pk, "categories");
	msgpack_pack_array(&pk, RTPROF_WIRE_NCATEGORIES);
#define X(id, name, color)                                                     \
	msgpack_pack_array(&pk, 2);                                            \
	rtprof__pack_str(&pk, name);                                                   \
	rtprof__pack_str(&pk, color);
	RTPROF_WIRE_CATEGORIES
#undef X

	add_modules(s);
}

/*
 * A THREAD frame for @th; with @a (its final counts in @s), the one that
 * settles them: the trailer does not list them again (unless the frame is
 * not written: rtprof__write_batch() then gives them back, unsettle()).
 * Context: writer thread, lock held. Return: 0, -1 out of memory.
 */
int
rtprof__desc_thread(struct rtprof__session *s, const struct rtprof__thread *th,
    const struct rtprof__acct *a)
{
	msgpack_packer pk;
	struct witem *w = rtprof__frame_add(s, RTPROF_FRAME_THREAD, &pk);

	if (w == NULL)
		return -1;   /* out of memory */
	msgpack_pack_map(&pk, a != NULL ? 6 : 5);
	rtprof__pack_key(&pk, "tid");
	msgpack_pack_int32(&pk, th->tid);
	rtprof__pack_key(&pk, "name");
	rtprof__pack_str(&pk, th->name);
	rtprof__pack_key(&pk, "flags");
	msgpack_pack_uint32(&pk, th->flags);
	rtprof__pack_key(&pk, "register_ticks");
	msgpack_pack_uint64(&pk, th->register_ticks);
	rtprof__pack_key(&pk, "unregister_ticks");
	if (th->exited)
		msgpack_pack_uint64(&pk, th->unregister_ticks);
	else
		msgpack_pack_nil(&pk);
	if (a == NULL)
		return 0;
	w->settles = 1;
	w->settled = *a;
	w->settled.th = NULL;   /* the thread is freed before the write */
	rtprof__pack_key(&pk, "totals");
	msgpack_pack_array(&pk, 4);
	msgpack_pack_uint64(&pk, a->recorded);
	msgpack_pack_uint64(&pk, a->dropped_full);
	msgpack_pack_uint64(&pk, a->dropped_nested);
	msgpack_pack_uint64(&pk, a->recycled);
	return 0;
}

void
rtprof__desc_schema(struct rtprof__session *s, const struct rtprof__schema_desc *d)
{
	const struct rtprof_marker_schema *m = &d->s;
	msgpack_packer pk;

	if (rtprof__frame_add(s, RTPROF_FRAME_SCHEMA, &pk) == NULL)
		return;
	msgpack_pack_map(&pk, 8);
	rtprof__pack_key(&pk, "id");
	msgpack_pack_uint16(&pk, d->pub.id);
	rtprof__pack_key(&pk, "name");
	rtprof__pack_str(&pk, m->name);
	rtprof__pack_key(&pk, "category");
	msgpack_pack_uint32(&pk, (uint32_t)m->category);
	rtprof__pack_key(&pk, "display");
	msgpack_pack_uint32(&pk, m->display ? m->display :
	    RTPROF_DISPLAY_MARKER_CHART | RTPROF_DISPLAY_MARKER_TABLE);
	rtprof__pack_key(&pk, "tooltip");
	rtprof__pack_str(&pk, m->tooltip_label);
	rtprof__pack_key(&pk, "table");
	rtprof__pack_str(&pk, m->table_label);
	rtprof__pack_key(&pk, "chart");
	rtprof__pack_str(&pk, m->chart_label);
	rtprof__pack_key(&pk, "fields");
	msgpack_pack_array(&pk, m->nfields);
	for (unsigned i = 0; i < m->nfields; i++) {
		const struct rtprof_field *f = &m->fields[i];

		msgpack_pack_array(&pk, 4);
		rtprof__pack_str(&pk, f->key);
		rtprof__pack_str(&pk, f->label ? f->label : f->key);
		rtprof__pack_str(&pk, f->format ? f->format : "string");
		msgpack_pack_uint32(&pk, (uint32_t)f->kind);
	}
}

void
rtprof__desc_counter(struct rtprof__session *s, const struct rtprof__counter_desc *d)
{
	msgpack_packer pk;

	if (rtprof__frame_add(s, RTPROF_FRAME_COUNTER, &pk) == NULL)
		return;
	msgpack_pack_map(&pk, 6);
	rtprof__pack_key(&pk, "id");
	msgpack_pack_uint16(&pk, d->pub.id);
	rtprof__pack_key(&pk, "kind");
	msgpack_pack_uint32(&pk, (uint32_t)d->kind);
	rtprof__pack_key(&pk, "unit");
	rtprof__pack_str(&pk, d->unit);
	rtprof__pack_key(&pk, "name");
	rtprof__pack_str(&pk, d->name);
	rtprof__pack_key(&pk, "category");
	rtprof__pack_str(&pk, d->category);
	rtprof__pack_key(&pk, "description");
	rtprof__pack_str(&pk, d->description);
}

/* CATEGORY: the declared category @i (core/category.c). */
void
rtprof__desc_category(struct rtprof__session *s, const struct rtprof__category *k,
    uint32_t i)
{
	msgpack_packer pk;

	if (rtprof__frame_add(s, RTPROF_FRAME_CATEGORY, &pk) == NULL)
		return;
	msgpack_pack_map(&pk, 3);
	rtprof__pack_key(&pk, "id");
	msgpack_pack_uint32(&pk, RTPROF_CAT_COUNT + i);
	rtprof__pack_key(&pk, "name");
	rtprof__pack_str(&pk, k->name);
	rtprof__pack_key(&pk, "color");
	rtprof__pack_str(&pk, k->color);
}

/* A PAUSE frame for each pause queued in @s, which it empties.
 * Context: writer thread, lock held. */
void
rtprof__desc_pauses(struct rtprof__session *s)
{
	msgpack_packer pk;

	for (uint32_t i = 0; i < s->npauses; i++) {
		if (rtprof__frame_add(s, RTPROF_FRAME_PAUSE, &pk) == NULL)
			return;
		msgpack_pack_array(&pk, 2);
		msgpack_pack_uint64(&pk, s->pauses[i].start);
		msgpack_pack_uint64(&pk, s->pauses[i].end);
	}
	s->npauses = 0;
}

/*
 * The first VALUES of @s: the user counters' values at its start, at
 * start_ticks (values_at_start(), session.c). Context: writer, lock held.
 */
static void
add_start_values(const struct rtprof__core *c, struct rtprof__session *s)
{
	msgpack_packer pk;

	if (s->values_start != NULL && rtprof__frame_add(s, RTPROF_FRAME_VALUES,
	    &pk) != NULL) {
		msgpack_pack_array(&pk, 2);
		msgpack_pack_uint64(&pk, s->start_ticks);
		msgpack_pack_array(&pk, s->values_start_n);
		for (uint32_t i = 0; i < s->values_start_n; i++) {
			msgpack_pack_array(&pk, 2);
			msgpack_pack_uint32(&pk, c->counters[i]->pub.id);
			msgpack_pack_int64(&pk, s->values_start[i]);
			s->values_last[i] = s->values_start[i];
		}
	}
	free(s->values_start);
	s->values_start = NULL;
}

/*
 * VALUES: the profiler's own memory and every user counter whose value
 * changed since the last VALUES frame (counters changed by threads that are
 * not registered reach the dump this way), at most every 100 ms (a serial
 * link has little room), or now when @force.
 */
void
rtprof__desc_values(const rtprof_lock *lk, struct rtprof__session *s, int force)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	msgpack_packer pk;
	struct timespec ts;
	uint64_t now, t;
	uint32_t changed = 0;
	int64_t *snap;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (!force && now - s->values_mono < 100000000u)
		return;
	if (s->values_n < c->ncounters) {
		int64_t *n = realloc(s->values_last, c->ncounters * sizeof(*n));

		if (n == NULL)
			return;
		/* A counter not yet sent: INT64_MIN never equals a value
		 * that was set, so it is sent once. */
		for (uint32_t i = s->values_n; i < c->ncounters; i++)
			n[i] = INT64_MIN;
		s->values_last = n;
		s->values_n = c->ncounters;
	}
	if (s->values_start != NULL)
		add_start_values(c, s);
	/* One relaxed read of each counter (a sampled statistic); the frame
	 * is packed from this snapshot so its array count is exact, with the
	 * time read right before it (not after packing: an older value would
	 * show after a newer record of the same counter). */
	snap = c->ncounters ? malloc(c->ncounters * sizeof(*snap)) : NULL;
	t = rtprof_now();
	for (uint32_t i = 0; snap != NULL && i < c->ncounters; i++) {
		snap[i] = __atomic_load_n(&c->counters[i]->pub.value, __ATOMIC_RELAXED);
		changed += snap[i] != s->values_last[i];
	}
	if (!force && changed == 0 && c->memory == s->values_memory) {
		free(snap);
		return;
	}
	s->values_memory = c->memory;
	s->values_mono = now;
	if (rtprof__frame_add(s, RTPROF_FRAME_VALUES, &pk) == NULL) {
		free(snap);
		return;
	}
	msgpack_pack_array(&pk, 2);
	msgpack_pack_uint64(&pk, t);
	msgpack_pack_array(&pk, 1 + changed);
	msgpack_pack_array(&pk, 2);
	msgpack_pack_uint32(&pk, RTPROF_COUNTER_SELF_MEMORY);
	msgpack_pack_uint64(&pk, c->memory);
	for (uint32_t i = 0; snap != NULL && i < c->ncounters; i++) {
		if (snap[i] == s->values_last[i])
			continue;
		msgpack_pack_array(&pk, 2);
		msgpack_pack_uint32(&pk, c->counters[i]->pub.id);
		msgpack_pack_int64(&pk, snap[i]);
		s->values_last[i] = snap[i];
	}
	free(snap);
}

/* An EVENT frame: the link fell behind, {records, chunks} dropped so far. */
void
rtprof__desc_link_event(struct rtprof__session *s)
{
	msgpack_packer pk;

	if (rtprof__frame_add(s, RTPROF_FRAME_EVENT, &pk) == NULL)
		return;
	msgpack_pack_map(&pk, 5);
	rtprof__pack_key(&pk, "ticks");
	msgpack_pack_uint64(&pk, rtprof_now());
	rtprof__pack_key(&pk, "what");
	rtprof__pack_str(&pk, "link_behind");
	rtprof__pack_key(&pk, "records");
	msgpack_pack_uint64(&pk, s->link_drop_recs);
	rtprof__pack_key(&pk, "chunks");
	msgpack_pack_uint64(&pk, s->link_drop_chunks);
	rtprof__pack_key(&pk, "link_bytes_per_sec");
	msgpack_pack_uint32(&pk, s->set.link_bytes_per_sec);
}
