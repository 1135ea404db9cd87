/*
 * writer.c - the writer thread: the one collector of every thread's chunks
 * and the only code that writes to a session's file descriptor.
 *
 * Each round, with the core mutex held (collect()):
 *   1. queue descriptor frames a session has not written yet (header,
 *      modules, marker types, counters, threads and their exits, pauses);
 *   2. drain every thread's `full` ring; a chunk goes to the session of its
 *      generation while that session still accepts data, otherwise its
 *      records are late (counted) and the chunk goes back to the pool;
 *   3. close stopped sessions: copy out the committed part of each thread's
 *      current chunk (rtprof__chunk_snapshot) and stop accepting chunks;
 *   4. serve dump requests the same way without closing, and in a stream
 *      not paced to a link do the same every PARTIALS_NS (a killed
 *      program loses at most that much);
 *   5. refill every live thread's `empty` ring from the pool (flight
 *      recorder: recycling the oldest kept chunk when the pool is empty);
 *   6. free exited threads whose chunks are all back.
 * Then, without the lock, it writes the batch (write_batch()); then, with
 * the lock again, it returns written chunks to the pool and wakes waiters.
 *
 * Memory stays bounded: the batch refers to pool chunks (bounded by the
 * memory limit) and to small descriptor frames; nothing grows with the
 * session length except the set of interned static strings.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

#include "core.h"
#include "../codec/frame.h"
#include "../codec/records.h"

enum witem_kind {
	W_FRAME,    /* a ready payload in `buf` */
	W_DATA,     /* a chunk range */
	W_TRAILER,  /* built at write time (needs final byte counts) */
	W_DUMPED    /* marker: the dump request is served when reached */
};

struct witem {
	enum witem_kind kind;
	uint8_t frame;               /* frame kind for W_FRAME */
	struct rtprof__session *s;
	struct rtprof__chunk *k;     /* W_DATA */
	uint64_t from, to;           /* commit words */
	int release;                 /* chunk goes back to the pool */
	struct rtprof__thread *th;   /* W_DATA: owner, for chunks_alive */
	msgpack_sbuffer buf;         /* W_FRAME payload */
	/* A THREAD frame that settles a thread's counts (free_exited()):
	 * if it is not written (size cap), they go back to the trailer. */
	int settles;
	struct rtprof__acct settled;
};

struct batch {
	struct witem *v;
	size_t n, cap;
};

/* Writer-owned set of interned static string addresses (per session). */
struct strset {
	uint64_t *slots;
	size_t cap, n;
};

static struct batch batch;

/* Sink statistics are written only by this thread and read by
 * rtprof_session_status_get() with relaxed loads. */
#define SINK_SET(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)

static struct witem *
batch_add(enum witem_kind kind, struct rtprof__session *s)
{
	struct witem *w;

	if (batch.n == batch.cap) {
		size_t ncap = batch.cap ? batch.cap * 2 : 256;
		struct witem *nv = realloc(batch.v, ncap * sizeof(*nv));

		if (nv == NULL)
			return NULL;
		batch.v = nv;
		batch.cap = ncap;
	}
	w = &batch.v[batch.n++];
	memset(w, 0, sizeof(*w));
	w->kind = kind;
	w->s = s;
	return w;
}

/* Starts a W_FRAME item; the caller packs the payload with *pk. */
static struct witem *
frame_add(struct rtprof__session *s, uint8_t kind, msgpack_packer *pk)
{
	struct witem *w = batch_add(W_FRAME, s);

	if (w == NULL)
		return NULL;
	w->frame = kind;
	msgpack_sbuffer_init(&w->buf);
	msgpack_packer_init(pk, &w->buf, msgpack_sbuffer_write);
	return w;
}

static void
pack_str(msgpack_packer *pk, const char *s)
{
	if (s == NULL) {
		msgpack_pack_nil(pk);
		return;
	}
	msgpack_pack_str(pk, strlen(s));
	msgpack_pack_str_body(pk, s, strlen(s));
}

static void
pack_key(msgpack_packer *pk, const char *k)
{
	pack_str(pk, k);
}

/* ------------------------------------------------------------------ */
/* Descriptor frames (built under the lock).                            */

/* "sampling": how the sampler takes this process's stacks, and why. */
static void
pack_sampling(const rtprof_lock *lk, msgpack_packer *pk,
    const struct rtprof_settings *st)
{
	char why[256] = "";
	const char *m = st->sample_interval_us == RTPROF_SAMPLING_OFF ? "off" :
	    rtprof__perf_method(lk, why, sizeof(why));

	pack_key(pk, "sampling");
	msgpack_pack_map(pk, 3);
	pack_key(pk, "method");
	pack_str(pk, m);
	pack_key(pk, "why");
	pack_str(pk, why);
	pack_key(pk, "kernel_stacks");
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
	if (frame_add(s, RTPROF_FRAME_MODULES, &pk) == NULL)
		return;
	rtprof__pack_modules((struct msgpack_packer *)&pk, s->mods);
	if (rtprof__vdso_image(&base, &image, &n) != 0 ||
	    frame_add(s, RTPROF_FRAME_IMAGE, &pk) == NULL)
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
static void
update_modules(struct rtprof__session *s)
{
	struct rtprof__modset *now;
	msgpack_packer pk;

	if (s->mods == NULL || !rtprof__modules_stale(s->mods))
		return;
	if ((now = rtprof__modules_scan()) == NULL)
		return;
	if (rtprof__modules_differ(s->mods, now) &&
	    frame_add(s, RTPROF_FRAME_MODULES_CHANGED, &pk) != NULL)
		rtprof__pack_module_changes((struct msgpack_packer *)&pk,
		    rtprof_now(), s->mods, now);
	rtprof__modset_free(s->mods);
	s->mods = now;
}

static void
add_header(const rtprof_lock *lk, struct rtprof__session *s)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	const struct rtprof_settings *st = &s->set;
	msgpack_packer pk;

	if (frame_add(s, RTPROF_FRAME_HEADER, &pk) == NULL)
		return;
	/* 3 here + 6 from rtprof__pack_process() + clock, settings,
	 * sampling, categories. */
	msgpack_pack_map(&pk, 13);
	pack_key(&pk, "format");
	msgpack_pack_uint32(&pk, RTPROF_WIRE_VERSION);
	pack_key(&pk, "session");
	msgpack_pack_uint32(&pk, s->id);
	pack_key(&pk, "generation");
	msgpack_pack_uint32(&pk, s->gen);
	/* pid, ppid, process, exe, cmdline, machine: 6 more pairs. */
	rtprof__pack_process((struct msgpack_packer *)&pk);
	pack_key(&pk, "clock");
	msgpack_pack_map(&pk, 5);
	pack_key(&pk, "source");
	pack_str(&pk, rtprof__clock_source());
	pack_key(&pk, "ticks_per_second");
	msgpack_pack_double(&pk, c->ticks_per_sec);
	pack_key(&pk, "start_ticks");
	msgpack_pack_uint64(&pk, s->start_ticks);
	pack_key(&pk, "start_mono_ns");
	msgpack_pack_uint64(&pk, s->start_mono);
	pack_key(&pk, "start_wall_ns");
	msgpack_pack_uint64(&pk, s->start_wall);
	pack_key(&pk, "settings");
	msgpack_pack_map(&pk, 8);
	pack_key(&pk, "mode");
	pack_str(&pk, st->mode == RTPROF_MODE_FLIGHT_RECORDER ? "flight" : "stream");
	pack_key(&pk, "memory_limit");
	msgpack_pack_uint64(&pk, st->memory_limit);
	pack_key(&pk, "chunk_size");
	msgpack_pack_uint32(&pk, st->chunk_size);
	pack_key(&pk, "prefill");
	msgpack_pack_uint32(&pk, st->prefill);
	pack_key(&pk, "max_bytes");
	msgpack_pack_uint64(&pk, st->max_bytes);
	pack_key(&pk, "flush_interval_us");
	msgpack_pack_uint32(&pk, st->flush_interval_us);
	pack_key(&pk, "sample_interval_us");
	msgpack_pack_uint32(&pk, st->sample_interval_us);
	pack_key(&pk, "link_bytes_per_sec");
	msgpack_pack_uint32(&pk, st->link_bytes_per_sec);
	pack_sampling(lk, &pk, st);
	pack_key(&pk, "categories");
	msgpack_pack_array(&pk, RTPROF_WIRE_NCATEGORIES);
#define X(id, name, color)                                                     \
	msgpack_pack_array(&pk, 2);                                            \
	pack_str(&pk, name);                                                   \
	pack_str(&pk, color);
	RTPROF_WIRE_CATEGORIES
#undef X

	add_modules(s);
}

/*
 * A THREAD frame for @th; with @a (its final counts in @s), the one that
 * settles them: the trailer does not list them again (unless the frame is
 * not written: write_batch() then gives them back, unsettle()).
 * Context: writer thread, lock held. Return: 0, -1 out of memory.
 */
static int
add_thread(struct rtprof__session *s, const struct rtprof__thread *th,
    const struct rtprof__acct *a)
{
	msgpack_packer pk;
	struct witem *w = frame_add(s, RTPROF_FRAME_THREAD, &pk);

	if (w == NULL)
		return -1;   /* out of memory */
	msgpack_pack_map(&pk, a != NULL ? 6 : 5);
	pack_key(&pk, "tid");
	msgpack_pack_int32(&pk, th->tid);
	pack_key(&pk, "name");
	pack_str(&pk, th->name);
	pack_key(&pk, "flags");
	msgpack_pack_uint32(&pk, th->flags);
	pack_key(&pk, "register_ticks");
	msgpack_pack_uint64(&pk, th->register_ticks);
	pack_key(&pk, "unregister_ticks");
	if (th->exited)
		msgpack_pack_uint64(&pk, th->unregister_ticks);
	else
		msgpack_pack_nil(&pk);
	if (a == NULL)
		return 0;
	w->settles = 1;
	w->settled = *a;
	w->settled.th = NULL;   /* the thread is freed before the write */
	pack_key(&pk, "totals");
	msgpack_pack_array(&pk, 4);
	msgpack_pack_uint64(&pk, a->recorded);
	msgpack_pack_uint64(&pk, a->dropped_full);
	msgpack_pack_uint64(&pk, a->dropped_nested);
	msgpack_pack_uint64(&pk, a->recycled);
	return 0;
}

static void
add_schema(struct rtprof__session *s, const struct rtprof__schema_desc *d)
{
	const struct rtprof_marker_schema *m = &d->s;
	msgpack_packer pk;

	if (frame_add(s, RTPROF_FRAME_SCHEMA, &pk) == NULL)
		return;
	msgpack_pack_map(&pk, 8);
	pack_key(&pk, "id");
	msgpack_pack_uint16(&pk, d->pub.id);
	pack_key(&pk, "name");
	pack_str(&pk, m->name);
	pack_key(&pk, "category");
	msgpack_pack_uint32(&pk, (uint32_t)m->category);
	pack_key(&pk, "display");
	msgpack_pack_uint32(&pk, m->display ? m->display :
	    RTPROF_DISPLAY_MARKER_CHART | RTPROF_DISPLAY_MARKER_TABLE);
	pack_key(&pk, "tooltip");
	pack_str(&pk, m->tooltip_label);
	pack_key(&pk, "table");
	pack_str(&pk, m->table_label);
	pack_key(&pk, "chart");
	pack_str(&pk, m->chart_label);
	pack_key(&pk, "fields");
	msgpack_pack_array(&pk, m->nfields);
	for (unsigned i = 0; i < m->nfields; i++) {
		const struct rtprof_field *f = &m->fields[i];

		msgpack_pack_array(&pk, 4);
		pack_str(&pk, f->key);
		pack_str(&pk, f->label ? f->label : f->key);
		pack_str(&pk, f->format ? f->format : "string");
		msgpack_pack_uint32(&pk, (uint32_t)f->kind);
	}
}

static void
add_counter(struct rtprof__session *s, const struct rtprof__counter_desc *d)
{
	msgpack_packer pk;

	if (frame_add(s, RTPROF_FRAME_COUNTER, &pk) == NULL)
		return;
	msgpack_pack_map(&pk, 6);
	pack_key(&pk, "id");
	msgpack_pack_uint16(&pk, d->pub.id);
	pack_key(&pk, "kind");
	msgpack_pack_uint32(&pk, (uint32_t)d->kind);
	pack_key(&pk, "unit");
	pack_str(&pk, d->unit);
	pack_key(&pk, "name");
	pack_str(&pk, d->name);
	pack_key(&pk, "category");
	pack_str(&pk, d->category);
	pack_key(&pk, "description");
	pack_str(&pk, d->description);
}

/* CATEGORY: the declared category @i (core/category.c). */
static void
add_category(struct rtprof__session *s, const struct rtprof__category *k,
    uint32_t i)
{
	msgpack_packer pk;

	if (frame_add(s, RTPROF_FRAME_CATEGORY, &pk) == NULL)
		return;
	msgpack_pack_map(&pk, 3);
	pack_key(&pk, "id");
	msgpack_pack_uint32(&pk, RTPROF_CAT_COUNT + i);
	pack_key(&pk, "name");
	pack_str(&pk, k->name);
	pack_key(&pk, "color");
	pack_str(&pk, k->color);
}

static void
add_pauses(struct rtprof__session *s)
{
	msgpack_packer pk;

	for (uint32_t i = 0; i < s->npauses; i++) {
		if (frame_add(s, RTPROF_FRAME_PAUSE, &pk) == NULL)
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

	if (s->values_start != NULL && frame_add(s, RTPROF_FRAME_VALUES,
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
static void
add_values(const rtprof_lock *lk, struct rtprof__session *s, int force)
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
	if (frame_add(s, RTPROF_FRAME_VALUES, &pk) == NULL) {
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

/* ------------------------------------------------------------------ */
/* Collection (under the lock).                                         */

static uint32_t
word_nrec(uint64_t w)
{
	return (uint32_t)(w >> 32);
}

static struct rtprof__session *
session_for(const rtprof_lock *lk, uint64_t gen)
{
	struct rtprof__session *s;

	for (s = rtprof__core_get(lk)->sessions; s != NULL; s = s->next)
		if (s->gen == gen)
			return s;
	return NULL;
}

static int
accepting(const struct rtprof__session *s)
{
	return s != NULL && s->phase <= RTPROF__SESS_STOPPING;
}

/*
 * The per-thread totals of a session (struct rtprof__acct). Context: the
 * writer thread; a session's acct array is only used by it (collect()
 * under the lock, write_batch() without). An entry lives from the thread's
 * first chunk in the session until its counts are final: settled into its
 * last THREAD frame when it exited and all its chunks are back
 * (free_exited()), else into the trailer. So the array holds the live
 * threads and the exited ones whose chunks are still kept, not every
 * thread a long session has seen.
 */
static struct rtprof__acct *
acct_find(struct rtprof__session *s, const struct rtprof__thread *th)
{
	for (uint32_t i = 0; i < s->nacct; i++)
		if (s->acct[i].th == th)
			return &s->acct[i];
	return NULL;
}

/* Room for one more entry in @s. Context: writer thread. Return: 0, -1
 * when out of memory. */
static int
acct_reserve(struct rtprof__session *s)
{
	uint32_t ncap = s->cap_acct ? s->cap_acct * 2 : 16;
	struct rtprof__acct *n;

	if (s->nacct < s->cap_acct)
		return 0;
	n = realloc(s->acct, ncap * sizeof(*n));
	if (n == NULL)
		return -1;
	s->acct = n;
	s->cap_acct = ncap;
	return 0;
}

/* @th's entry in @s, created on first use. Context: writer thread, lock
 * held. Return: NULL only when out of memory (the thread's counts are then
 * missing from the dump). */
static struct rtprof__acct *
acct_get(struct rtprof__session *s, const struct rtprof__thread *th)
{
	struct rtprof__acct *a = acct_find(s, th);

	if (a != NULL)
		return a;
	if (acct_reserve(s) != 0)
		return NULL;
	a = &s->acct[s->nacct++];
	memset(a, 0, sizeof(*a));
	a->th = th;
	a->tid = th->tid;
	return a;
}

/* Remove @a from @s (its counts are written); the array shrinks when it is
 * mostly empty, so a burst of threads does not pin its peak. Context:
 * writer thread, lock held. */
static void
acct_drop(struct rtprof__session *s, struct rtprof__acct *a)
{
	*a = s->acct[--s->nacct];
	if (s->cap_acct > 64 && s->nacct < s->cap_acct / 4) {
		struct rtprof__acct *n = realloc(s->acct,
		    (s->cap_acct / 2) * sizeof(*n));

		if (n != NULL) {
			s->acct = n;
			s->cap_acct /= 2;
		}
	}
}

/*
 * Records @n of @th that will not reach the sink are not "recorded" in the
 * trailer (docs/wire-format.md: "records written"; a reader compares them
 * with what it decoded). Context: the writer thread.
 */
static void
unrecord(struct rtprof__session *s, const struct rtprof__thread *th,
    uint32_t n)
{
	struct rtprof__acct *a = acct_find(s, th);

	if (a != NULL)
		a->recorded -= n;
}

/* Does @s keep full chunks in its queue (flight recorder, or a stream
 * paced to a slow link) instead of writing them at once? */
static int
keeps(const struct rtprof__session *s)
{
	return s->set.mode == RTPROF_MODE_FLIGHT_RECORDER ||
	    s->set.link_bytes_per_sec != 0;
}

static uint32_t
range_bytes(uint64_t from, uint64_t to)
{
	return (uint32_t)to - (uint32_t)from;
}

/* Unlink the oldest queued chunk of @s. Context: writer, lock held. */
static struct rtprof__chunk *
q_pop(struct rtprof__session *s)
{
	struct rtprof__chunk *k = s->q_head;

	if (k == NULL)
		return NULL;
	s->q_head = k->next;
	if (s->q_head == NULL)
		s->q_tail = NULL;
	s->q_len--;
	s->q_bytes -= range_bytes(k->flushed, rtprof__chunk_snapshot(k));
	return k;
}

/* Queue chunk range [k->flushed, to) of @th for session @s. */
static void
take_range(const rtprof_lock *lk, struct rtprof__session *s,
    struct rtprof__thread *th, struct rtprof__chunk *k, uint64_t to, int full)
{
	struct rtprof__acct *a = acct_get(s, th);
	struct witem *w;

	if (a != NULL)
		a->recorded += word_nrec(to) - word_nrec(k->flushed);
	if (full && keeps(s)) {
		/* Keep it; written oldest first (on dump or stop by
		 * flush_kept(), or as the link allows by pace()), so each
		 * thread's records stay in time order. */
		k->next = NULL;
		if (s->q_tail)
			s->q_tail->next = k;
		else
			s->q_head = k;
		s->q_tail = k;
		s->q_len++;
		s->q_bytes += range_bytes(k->flushed, to);
		th->chunks_alive++;
		return;
	}
	w = batch_add(W_DATA, s);
	if (w == NULL) {
		/* Out of memory for the batch: the range is lost, counted. */
		SINK_SET(s->chunks_lost, s->chunks_lost + 1);
		unrecord(s, th, word_nrec(to) - word_nrec(k->flushed));
		if (full)
			rtprof__pool_put(lk, k);
		return;
	}
	w->k = k;
	w->th = th;
	w->from = k->flushed;
	w->to = to;
	w->release = full;
	th->chunks_alive++;
	k->flushed = to;
}

/* Move the oldest kept chunk into the batch. Return: its bytes, 0 if none
 * (or no memory for the batch: it stays queued).
 * Context: writer thread, lock held. */
static uint32_t
send_oldest(struct rtprof__session *s)
{
	struct rtprof__chunk *k;
	struct witem *w;

	if (s->q_head == NULL || (w = batch_add(W_DATA, s)) == NULL)
		return 0;
	k = q_pop(s);
	w->k = k;
	w->th = k->owner;
	w->from = k->flushed;
	w->to = rtprof__chunk_snapshot(k);
	w->release = 1;
	k->flushed = w->to;
	/* chunks_alive stays: the batch holds the chunk now. */
	return range_bytes(w->from, w->to) + RTPROF_FRAME_OVERHEAD;
}

/* Move all kept chunks into the batch (dump, stop). Context: writer, lock
 * held. */
static void
flush_kept(struct rtprof__session *s)
{
	while (send_oldest(s) != 0)
		;
}

static void drain(const rtprof_lock *lk, struct rtprof__thread *th);

/*
 * Copy out the committed part of every current chunk of session @s.
 * Per thread: read `cur` first, then drain the full ring again, then copy
 * out: every chunk the owner handed back before it took `cur` is then
 * queued before the partial, so a thread's records stay in order, and a
 * chunk that is still `cur` but already handed back (rtprof__retire() does
 * not clear `cur`; drain() does) is taken whole instead of being skipped.
 */
static void
snapshot_partials(const rtprof_lock *lk, struct rtprof__session *s)
{
	struct rtprof__thread *th;

	for (th = rtprof__core_get(lk)->threads; th != NULL; th = th->next) {
		struct rtprof__chunk *k, *again;
		uint64_t to;

		/* acquire: pairs with the release in take_chunk() (rt/): the
		 * owner handed back its earlier chunks before it published k.
		 * Until `cur` holds still across a drain (at most as many
		 * rounds as the owner has empty chunks): a k drained meanwhile
		 * may be freed already, and a newer k must not overtake the
		 * chunks before it. */
		k = atomic_load_explicit(&th->cur, memory_order_acquire);
		for (;;) {
			drain(lk, th);
			again = atomic_load_explicit(&th->cur, memory_order_acquire);
			if (again == k)
				break;
			k = again;
		}
		if (keeps(s))
			flush_kept(s);
		if (k == NULL || RTPROF__STATE_GEN(k->state) != s->gen)
			continue;
		to = rtprof__chunk_snapshot(k);
		if (word_nrec(to) > word_nrec(k->flushed))
			take_range(lk, s, th, k, to, 0);
	}
}

/* Drain @th's full ring. */
static void
drain(const rtprof_lock *lk, struct rtprof__thread *th)
{
	struct rtprof__chunk *k;

	while (ck_ring_dequeue_spsc(&th->full, th->full_buf, &k)) {
		struct rtprof__chunk *cur = k;
		struct rtprof__session *s;
		uint64_t to;

		RTPROF__HANDOVER_ACQUIRE(k);
		/* k is no longer the owner's current chunk (if it still is:
		 * the owner has not taken another one yet). Only the collector
		 * clears `cur`, and before k can be reused, so no ABA. */
		atomic_compare_exchange_strong_explicit(&th->cur, &cur, NULL,
		    memory_order_relaxed, memory_order_relaxed);
		k->gen = RTPROF__STATE_GEN(k->state);
		to = rtprof__chunk_snapshot(k);
		s = session_for(lk, k->gen);
		if (accepting(s) && word_nrec(to) > word_nrec(k->flushed)) {
			take_range(lk, s, th, k, to, 1);
			continue;
		}
		if (word_nrec(to) > word_nrec(k->flushed)) {
			/* Committed after its session closed. */
			atomic_fetch_add_explicit(&th->late,
			    word_nrec(to) - word_nrec(k->flushed),
			    memory_order_relaxed);
		}
		/* Safe to reuse: any earlier partial range of k was in a batch
		 * that this thread finished writing before this round. */
		rtprof__pool_put(lk, k);
	}
}

/* The oldest kept chunk of the running session, recycled for new data
 * (flight recorder: overwritten; paced stream: never sent, the link was
 * behind). Context: collector, lock held. */
static struct rtprof__chunk *
recycle_oldest(const rtprof_lock *lk, struct rtprof__session *s)
{
	struct rtprof__chunk *k = q_pop(s);
	struct rtprof__acct *a;
	uint32_t n;

	(void)lk;   /* proof of lock: the queue and the owner's counts */
	if (k == NULL)
		return NULL;
	n = word_nrec(rtprof__chunk_snapshot(k)) - word_nrec(k->flushed);
	if (s->set.mode == RTPROF_MODE_STREAM) {
		s->link_drop_chunks++;
		s->link_drop_recs += n;
	}
	a = acct_get(s, k->owner);
	if (a != NULL) {
		a->recorded -= n;
		a->recycled += n;
	}
	atomic_fetch_add_explicit(&k->owner->recycled, n, memory_order_relaxed);
	k->owner->chunks_alive--;
	k->flushed = 0;
	return k;
}

static void
refill_all(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	struct rtprof__session *s = c->running;
	struct rtprof__thread *th;

	if (s == NULL)
		return;
	for (th = c->threads; th != NULL; th = th->next) {
		if (th->exited)
			continue;
		rtprof__refill(lk, th, s->set.prefill);
		/* Bounded like rtprof__refill(): at most prefill per round. */
		for (uint32_t i = 0; i < s->set.prefill && keeps(s) &&
		    ck_ring_size(&th->empty) < s->set.prefill; i++) {
			struct rtprof__chunk *k = recycle_oldest(lk, s);

			if (k == NULL)
				break;
			rtprof__pool_put(lk, k);
			rtprof__refill(lk, th, s->set.prefill);
		}
	}
}

/* An EVENT frame: the link fell behind, {records, chunks} dropped so far. */
static void
add_link_event(struct rtprof__session *s)
{
	msgpack_packer pk;

	if (frame_add(s, RTPROF_FRAME_EVENT, &pk) == NULL)
		return;
	msgpack_pack_map(&pk, 5);
	pack_key(&pk, "ticks");
	msgpack_pack_uint64(&pk, rtprof_now());
	pack_key(&pk, "what");
	pack_str(&pk, "link_behind");
	pack_key(&pk, "records");
	msgpack_pack_uint64(&pk, s->link_drop_recs);
	pack_key(&pk, "chunks");
	msgpack_pack_uint64(&pk, s->link_drop_chunks);
	pack_key(&pk, "link_bytes_per_sec");
	msgpack_pack_uint32(&pk, s->set.link_bytes_per_sec);
}

/*
 * A stream paced to a slow link: send the oldest kept chunks as the link's
 * byte rate allows (a credit refilled at that rate, capped at 1/4 s so an
 * idle link does not save up a burst; what was written meanwhile, such as
 * descriptor frames, is charged too), and drop the oldest unsent ones
 * while more than two seconds of link time wait. What waits is thus the
 * newest data, and a stop finishes within about two seconds of link time.
 * Drops are counted per thread (`recycled`) and announced at most once a
 * second in a "link_behind" EVENT, so a reader learns of them even if the
 * board resets before its trailer.
 * Context: writer thread, lock held.
 */
static void
pace(const rtprof_lock *lk, struct rtprof__session *s)
{
	uint64_t rate = s->set.link_bytes_per_sec, now = rtprof__mono_ns();
	int64_t cap = (int64_t)(rate / 4 > 1 ? rate / 4 : 1);
	uint64_t backlog = 2 * rate, written;

	if (s->link_mono == 0)
		s->link_mono = now;
	s->link_credit += (int64_t)((now - s->link_mono) * rate / 1000000000u);
	s->link_mono = now;
	if (s->link_credit > cap)
		s->link_credit = cap;
	written = __atomic_load_n(&s->bytes, __ATOMIC_RELAXED);
	if (written > s->link_bytes_seen) {
		s->link_credit -= (int64_t)(written - s->link_bytes_seen);
		s->link_bytes_seen = written;
	}
	if (backlog < 2 * (uint64_t)s->set.chunk_size)
		backlog = 2 * (uint64_t)s->set.chunk_size;
	while (s->q_bytes > backlog && s->q_len > 1) {
		struct rtprof__chunk *k = recycle_oldest(lk, s);

		if (k == NULL)
			break;
		rtprof__pool_put(lk, k);
	}
	while (s->link_credit > 0) {
		uint32_t n = send_oldest(s);

		if (n == 0)
			break;
		s->link_credit -= n;
		/* Charged now: not again when s->bytes grows by it. */
		s->link_bytes_seen += n;
	}
	if (s->link_drop_recs != s->link_event_recs &&
	    now - s->link_event_mono >= 1000000000u) {
		s->link_event_recs = s->link_drop_recs;
		s->link_event_mono = now;
		add_link_event(s);
	}
}

static void
announce_threads(const rtprof_lock *lk, struct rtprof__session *s)
{
	struct rtprof__thread *th;

	for (th = rtprof__core_get(lk)->threads; th != NULL; th = th->next) {
		if (th->announced_gen != s->gen) {
			/* A thread that exited before this session began is
			 * not part of it. */
			if (th->exited && th->unregister_ticks < s->start_ticks)
				continue;
			th->announced_gen = s->gen;
			th->announced_exit = th->exited;
			add_thread(s, th, NULL);
		} else if (th->exited && !th->announced_exit) {
			th->announced_exit = 1;
			add_thread(s, th, NULL);
		}
	}
}

/*
 * @th's drops in session @s, into its totals: its lifetime drop counters
 * minus their values when @s started. The DATA headers carry the drops
 * before each chunk too, but not those after the thread's last chunk (no
 * chunk free until it exited, or until the stop). Once per thread and
 * session: at its free while the session runs, else at the stop.
 * Return: its totals, NULL if it is not part of @s (or out of memory).
 * Context: writer thread, lock held.
 */
static struct rtprof__acct *
settle_drops(struct rtprof__session *s, struct rtprof__thread *th)
{
	struct rtprof__acct *a;
	int mine = th->acct_gen == s->gen;

	if (th->announced_gen != s->gen || (a = acct_get(s, th)) == NULL)
		return NULL;
	/* relaxed: statistics; the owner has exited, or the session has
	 * stopped and a drop racing with the stop is as late as a record. */
	a->dropped_full = atomic_load_explicit(&th->dropped_full,
	    memory_order_relaxed) - (mine ? th->acct_drops_full : 0);
	a->dropped_nested = atomic_load_explicit(&th->dropped_nested,
	    memory_order_relaxed) - (mine ? th->acct_drops_nested : 0);
	return a;
}

/*
 * Free the exited threads whose chunks are all back. While their session
 * runs, their counts are final now: a THREAD frame carries them, and the
 * session forgets them (the trailer would otherwise list every thread a
 * long session has seen, and the session's memory grow with them).
 * Context: writer thread, lock held.
 */
static void
free_exited(const rtprof_lock *lk)
{
	struct rtprof__thread *th, *next;
	struct rtprof__session *s;
	struct rtprof__acct *a;

	for (th = rtprof__core_get(lk)->threads; th != NULL; th = next) {
		next = th->next;
		if (!th->exited || th->chunks_alive != 0 ||
		    ck_ring_size(&th->full) != 0 ||
		    atomic_load_explicit(&th->cur, memory_order_relaxed) != NULL ||
		    th->s_perf_orphan)  /* its last samples not yet drained */
			continue;
		s = session_for(lk, th->announced_gen);
		if (!accepting(s)) {
			rtprof__thread_free(lk, th);
		} else if (th->announced_exit) {
			a = settle_drops(s, th);
			if (a != NULL && add_thread(s, th, a) == 0)
				acct_drop(s, a);
			else if (a != NULL)
				a->th = NULL;   /* kept for the trailer */
			rtprof__thread_free(lk, th);
		}
	}
}

/*
 * A stream not paced to a link: every PARTIALS_NS, the committed part of
 * each thread's current chunk goes out too, not only full chunks. A
 * program killed (SIGKILL, Ctrl-C's default action, a crash) or stopped
 * loses at most that much of what it recorded, instead of every chunk not
 * yet full (a short run: all of it). The rest of such a chunk is written
 * from where this stopped (k->flushed) when it comes back full.
 * Context: writer thread, lock held.
 */
#define PARTIALS_NS 200000000u

static void
partials_every(const rtprof_lock *lk, struct rtprof__session *s)
{
	uint64_t now = rtprof__mono_ns();

	if (now - s->partials_mono < PARTIALS_NS)
		return;
	s->partials_mono = now;
	snapshot_partials(lk, s);
}

/* Context: writer thread, lock held. */
static void
collect(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	struct rtprof__session *s;
	struct rtprof__thread *th;

	/* acquire: pairs with the handler's release store. */
	if (atomic_exchange_explicit(&rtprof__dump_signalled, 0,
	    memory_order_acquire) && c->running != NULL &&
	    c->running->set.mode == RTPROF_MODE_FLIGHT_RECORDER)
		c->running->dump_requested = 1;
	for (s = c->sessions; s != NULL; s = s->next) {
		if (s->phase >= RTPROF__SESS_CLOSED)
			continue;
		if (!s->header_sent) {
			s->header_sent = 1;
			add_header(lk, s);
		}
		update_modules(s);
		while (s->schemas_sent < c->ntypes)
			add_schema(s, c->types[s->schemas_sent++]);
		while (s->counters_sent < c->ncounters)
			add_counter(s, c->counters[s->counters_sent++]);
		for (; s->categories_sent < c->ncategories; s->categories_sent++)
			add_category(s, &c->categories[s->categories_sent],
			    s->categories_sent);
		announce_threads(lk, s);
	}
	for (th = c->threads; th != NULL; th = th->next)
		drain(lk, th);
	for (s = c->sessions; s != NULL; s = s->next) {
		if (s->phase == RTPROF__SESS_STOPPING) {
			flush_kept(s);
			snapshot_partials(lk, s);
			for (th = c->threads; th != NULL; th = th->next)
				settle_drops(s, th);
			add_pauses(s);
			add_values(lk, s, 1);
			s->phase = RTPROF__SESS_CLOSED;
			batch_add(W_TRAILER, s);
		} else if (s->phase == RTPROF__SESS_RUNNING) {
			struct witem *w;

			if (s->dump_requested) {
				flush_kept(s);
				snapshot_partials(lk, s);
				add_pauses(s);
				add_values(lk, s, 1);
				s->dump_requested = 0;
				if ((w = batch_add(W_DUMPED, s)) != NULL)
					w->from = s->dump_wanted;
			} else if (s->set.mode == RTPROF_MODE_STREAM) {
				add_pauses(s);
				add_values(lk, s, 0);
				if (s->set.link_bytes_per_sec != 0)
					pace(lk, s);
				else
					partials_every(lk, s);
			}
		}
	}
	refill_all(lk);
	free_exited(lk);
}

/* ------------------------------------------------------------------ */
/* Writing (no lock; the writer thread owns the batch and sink fields). */

static int
strset_add(struct strset *set, uint64_t ref)
{
	size_t i;

	if (set->n * 2 >= set->cap) {
		size_t ncap = set->cap ? set->cap * 2 : 1024;
		uint64_t *ns = calloc(ncap, sizeof(*ns));

		if (ns == NULL)
			return 1; /* cannot remember: send it again, harmless */
		for (i = 0; i < set->cap; i++) {
			uint64_t v = set->slots[i];
			size_t j;

			if (v == 0)
				continue;
			for (j = (v * 0x9E3779B97F4A7C15ull) >> 40 & (ncap - 1);
			    ns[j] != 0; j = (j + 1) & (ncap - 1))
				;
			ns[j] = v;
		}
		free(set->slots);
		set->slots = ns;
		set->cap = ncap;
	}
	for (i = (ref * 0x9E3779B97F4A7C15ull) >> 40 & (set->cap - 1);
	    set->slots[i] != 0; i = (i + 1) & (set->cap - 1))
		if (set->slots[i] == ref)
			return 0;
	set->slots[i] = ref;
	set->n++;
	return 1;
}

/*
 * One write(2) that cannot block: the caller owns the fd and may have left
 * it in blocking mode, and POLLOUT only promises room for a few bytes (a
 * blocking write of more waits for all of it, past any timeout).
 */
static ssize_t
sink_write_some(int fd, const struct iovec *iov, int n)
{
	struct iovec cut[8];
	struct stat st;
	int fl = fcntl(fd, F_GETFL);

	if (n > IOV_MAX)
		n = IOV_MAX;
	if (fl < 0 || (fl & O_NONBLOCK) || fstat(fd, &st) != 0)
		return writev(fd, iov, n);
	if (S_ISSOCK(st.st_mode)) {
		struct msghdr m;

		memset(&m, 0, sizeof(m));
		m.msg_iov = (struct iovec *)iov;
		m.msg_iovlen = (size_t)n;
		return sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	if (S_ISFIFO(st.st_mode)) {
		/* POLLOUT on a pipe: one pipe buffer is free, so PIPE_BUF
		 * bytes go in without waiting. */
		size_t room = PIPE_BUF;
		int k;

		for (k = 0; k < n && k < 8 && room > 0; k++) {
			cut[k] = iov[k];
			if (cut[k].iov_len > room)
				cut[k].iov_len = room;
			room -= cut[k].iov_len;
		}
		return writev(fd, cut, k);
	}
	return writev(fd, iov, n);
}

/*
 * Is @s's descriptor still the one it started on? A program may close its
 * descriptors (close_range, a daemon) and open files that get the number,
 * or dup2 over it (bash `exec 3>a`): the writer must never write into
 * those. Compared by identity (st_dev, st_ino), before each write.
 * Context: writer thread.
 */
static int
sink_is_ours(const struct rtprof__session *s)
{
	struct stat st;

	return fstat(s->set.fd, &st) == 0 && st.st_dev == s->sink_dev &&
	    st.st_ino == s->sink_ino;
}

/* How long @s's writes may go without progress now: write_timeout_ms,
 * at most RTPROF__FINAL_WAIT_MS once the session is stopping (a stalled
 * reader must not hold the program's exit). Context: writer thread. */
static int
sink_timeout_ms(const struct rtprof__session *s)
{
	int ms = (int)s->set.write_timeout_ms;

	/* acquire: pairs with the release in rtprof_session_stop(). */
	if (atomic_load_explicit(&s->stopping, memory_order_acquire) &&
	    ms > RTPROF__FINAL_WAIT_MS)
		ms = RTPROF__FINAL_WAIT_MS;
	return ms;
}

#define SINK_POLL_SLICE_MS 100

/* Context: writer thread. Return: ms since @t0. */
static int
ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int)((t.tv_sec - t0->tv_sec) * 1000 +
	    (t.tv_nsec - t0->tv_nsec) / 1000000);
}

/* Consume the SIGPIPE that this thread (every signal blocked) has pending
 * after an EPIPE. Context: writer thread. */
static void
eat_sigpipe(void)
{
	sigset_t pipe;
	struct timespec zero = { 0, 0 };

	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	sigtimedwait(&pipe, NULL, &zero);
}

/* Advance @iov/@n past @r bytes written. */
static void
iov_advance(struct iovec **iov, int *n, size_t r)
{
	while (*n > 0 && r >= (*iov)->iov_len) {
		r -= (*iov)->iov_len;
		(*iov)++;
		(*n)--;
	}
	if (*n > 0) {
		(*iov)->iov_base = (char *)(*iov)->iov_base + r;
		(*iov)->iov_len -= r;
	}
}

/*
 * Write all of @iov, giving up after sink_timeout_ms() without progress
 * (polled in slices, so a stop during a stall shortens the wait), or
 * at once when the descriptor is no longer the sink (-EBADF: nothing is
 * written into it). Context: writer thread, lock NOT held.
 * Return: 0 or a negative errno.
 */
static int
sink_writev(struct rtprof__session *s, struct iovec *iov, int n)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (n > 0) {
		struct pollfd p = { s->set.fd, POLLOUT, 0 };
		int left = sink_timeout_ms(s) - ms_since(&t0);
		ssize_t r;
		int pr;

		if (left <= 0)
			return -ETIMEDOUT;
		pr = poll(&p, 1, left < SINK_POLL_SLICE_MS ? left :
		    SINK_POLL_SLICE_MS);
		if (pr < 0 && errno != EINTR)
			return -errno;
		if (pr > 0 && (p.revents & POLLNVAL))
			return -EBADF;
		if (pr <= 0)
			continue;
		if (!sink_is_ours(s))
			return -EBADF;
		r = sink_write_some(s->set.fd, iov, n);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN ||
			    errno == EWOULDBLOCK)
				continue;
			if (errno == EPIPE)
				eat_sigpipe();
			return -errno;
		}
		/* Progress: the timeout counts from here (a slow serial
		 * line is not a stuck one). */
		if (r > 0)
			clock_gettime(CLOCK_MONOTONIC, &t0);
		iov_advance(&iov, &n, (size_t)r);
	}
	return 0;
}

static uint64_t
trailer_reserve(const struct rtprof__session *s)
{
	/* Room kept for the limit EVENT and the TRAILER frames. */
	return 512 + 64 * (uint64_t)s->nacct;
}

static void write_event_limit(struct rtprof__session *s);

/*
 * write_frame - frame @np payload pieces and write them.
 * Under max_bytes every frame but the limit EVENT and the TRAILER leaves
 * room for those two, and the first frame refused for the cap, whatever
 * its kind, writes the limit EVENT (docs/wire-format.md, EVENT).
 * Return: 0 written, -1 not written (sink error or cap; counted).
 */
static int
write_frame(struct rtprof__session *s, uint8_t kind, const struct iovec *payload,
    int np)
{
	int capped = kind != RTPROF_FRAME_EVENT && kind != RTPROF_FRAME_TRAILER;
	unsigned char hdr[RTPROF_FRAME_HEADER_SIZE], crcb[4];
	struct iovec iov[8];
	struct rtprof_frame_hdr h;
	size_t len = 0;
	uint32_t crc = 0;
	int rc;

	if (s->sink_error != 0)
		return -1;
	for (int i = 0; i < np; i++)
		len += payload[i].iov_len;
	if (s->set.max_bytes != 0 &&
	    s->bytes + len + RTPROF_FRAME_OVERHEAD +
	    (capped ? trailer_reserve(s) : 0) > s->set.max_bytes) {
		if (capped && !s->limit_reached) {
			SINK_SET(s->limit_reached, 1);
			write_event_limit(s);
		}
		SINK_SET(s->limit_reached, 1);
		return -1;
	}
	h.kind = kind;
	h.version = RTPROF_WIRE_VERSION;
	h.session = s->id;
	h.seq = s->frame_seq;
	h.len = (uint32_t)len;
	rtprof_frame_hdr_encode(hdr, &h);
	iov[0].iov_base = hdr;
	iov[0].iov_len = sizeof(hdr);
	for (int i = 0; i < np; i++) {
		iov[1 + i] = payload[i];
		crc = rtprof_crc32c(crc, payload[i].iov_base, payload[i].iov_len);
	}
	rtprof_put_le32(crcb, crc);
	iov[1 + np].iov_base = crcb;
	iov[1 + np].iov_len = 4;
	rc = sink_writev(s, iov, np + 2);
	if (rc < 0) {
		SINK_SET(s->sink_error, rc);
		return -1;
	}
	s->frame_seq++;
	SINK_SET(s->bytes, s->bytes + len + RTPROF_FRAME_OVERHEAD);
	return 0;
}

static int
write_buf(struct rtprof__session *s, uint8_t kind, const msgpack_sbuffer *b)
{
	struct iovec v = { b->data, b->size };

	return write_frame(s, kind, &v, 1);
}

static void
write_event_limit(struct rtprof__session *s)
{
	msgpack_sbuffer b;
	msgpack_packer pk;

	msgpack_sbuffer_init(&b);
	msgpack_packer_init(&pk, &b, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	pack_key(&pk, "ticks");
	msgpack_pack_uint64(&pk, rtprof_now());
	pack_key(&pk, "what");
	pack_str(&pk, "limit_reached");
	pack_key(&pk, "max_bytes");
	msgpack_pack_uint64(&pk, s->set.max_bytes);
	write_buf(s, RTPROF_FRAME_EVENT, &b);
	msgpack_sbuffer_destroy(&b);
}

static void
write_string(struct rtprof__session *s, uint64_t ref)
{
	const char *text = (const char *)(uintptr_t)ref;
	struct strset *set = s->strings;
	msgpack_sbuffer b;
	msgpack_packer pk;
	size_t len;

	if (set == NULL) {
		set = s->strings = calloc(1, sizeof(*set));
		if (set == NULL)
			return;
	}
	if (ref == 0 || !strset_add(set, ref))
		return;
	len = strnlen(text, 4096);
	msgpack_sbuffer_init(&b);
	msgpack_packer_init(&pk, &b, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 2);
	msgpack_pack_uint64(&pk, ref);
	msgpack_pack_str(&pk, len);
	msgpack_pack_str_body(&pk, text, len);
	write_buf(s, RTPROF_FRAME_STRING, &b);
	msgpack_sbuffer_destroy(&b);
}

/*
 * The records rtprof__mark4() and rtprof__counter_rec() write, read
 * without the general walker (most records of a busy stream): an instant,
 * begin or end marker [0x94, kind, 0xcf ts, 0xd7 0x01 name, cat] of 22
 * bytes, or a counter [0x94, 6, 0xcf ts, 0xcd id, 0xd3 value] of 23.
 * Return: its size with *@t0 and *@name (0: none), or 0: not one of them.
 */
static size_t
fast_record(const unsigned char *p, size_t n, uint64_t *t0, uint64_t *name)
{
	if (n < 22 || p[0] != 0x94 || p[2] != 0xcf)
		return 0;
	if (p[1] >= RTPROF__REC_INSTANT && p[1] <= RTPROF__REC_END &&
	    p[11] == 0xd7 && p[12] == 0x01 && p[21] < 0x80) {
		*t0 = rtprof_be64(p + 3);
		*name = rtprof_be64(p + 13);
		return 22;
	}
	if (p[1] == RTPROF__REC_COUNTER && n >= 23 && p[11] == 0xcd &&
	    p[14] == 0xd3) {
		*t0 = rtprof_be64(p + 3);
		*name = 0;
		return 23;
	}
	return 0;
}

/* The strings of a record decoded by the general walker. */
static void
record_strings(struct rtprof__session *s, const struct rtprof_rec_view *r,
    const uint64_t *mask)
{
	if (r->name != 0)
		write_string(s, r->name);
	for (unsigned i = 0; i < r->nvals; i++)
		if (r->vals[i].kind == RTPROF_VAL_STRREF)
			write_string(s, r->vals[i].v.ref);
	for (unsigned i = 0; i < r->nframes; i++)    /* labels */
		if (rtprof_rec_frame_is_label(mask, i))
			write_string(s, r->frames[i]);
}

/*
 * One pass over a range's records: send a STRING frame for every static
 * string not sent yet (before the DATA frame that uses it) and find the
 * first and last timestamps. A name that repeats the previous record's is
 * known already.
 */
static void
scan_records(struct rtprof__session *s, const unsigned char *p, size_t n,
    uint64_t *first, uint64_t *last)
{
	uint64_t frames[RTPROF_REC_MAX_FRAMES], mask[RTPROF_REC_MASK_WORDS];
	struct rtprof_rec_view r = { .frames = frames, .label_mask = mask };
	uint64_t t0, name, prev_name = 0;
	int any = 0;
	size_t k;

	*first = *last = 0;
	for (; n > 0; p += k, n -= k) {
		/* The chunk was written on another CPU: ask for its lines
		 * ahead of the pass (a prefetch never faults). */
		__builtin_prefetch(p + 512, 0, 0);
		if ((k = fast_record(p, n, &t0, &name)) != 0) {
			if (name != prev_name && name != 0)
				write_string(s, name);
			prev_name = name != 0 ? name : prev_name;
		} else if (rtprof_rec_next(p, n, &r) == 1) {
			k = r.size;
			t0 = r.t0;
			record_strings(s, &r, mask);
		} else {
			break;
		}
		if (!any)
			*first = t0;
		any = 1;
		if (t0 > *last)
			*last = t0;
	}
}

static void
write_data(struct witem *w)
{
	struct rtprof__session *s = w->s;
	struct rtprof__chunk *k = w->k;
	uint32_t from = (uint32_t)w->from, to = (uint32_t)w->to;
	const unsigned char *p = k->data + from;
	size_t n = to - from;
	uint64_t first, last;
	unsigned char hb[128];
	msgpack_sbuffer b = { 0, (char *)hb, sizeof(hb) };
	msgpack_packer pk;
	struct iovec v[2];
	int first_part = word_nrec(w->from) == 0;

	if (s->sink_error != 0 || (s->limit_reached && s->set.max_bytes)) {
		SINK_SET(s->chunks_lost, s->chunks_lost + 1);
		unrecord(s, w->th, word_nrec(w->to) - word_nrec(w->from));
		return;
	}
	scan_records(s, p, n, &first, &last);
	if (s->sink_error != 0 || (s->limit_reached && s->set.max_bytes)) {
		/* A STRING frame of these records was refused for the cap:
		 * no DATA frame with names the reader cannot resolve. */
		SINK_SET(s->chunks_lost, s->chunks_lost + 1);
		unrecord(s, w->th, word_nrec(w->to) - word_nrec(w->from));
		return;
	}
	/* A fixed stack buffer is enough for 10 integers; sbuffer_write
	 * would realloc() it, so size it well above the 91-byte maximum. */
	b.size = 0;
	msgpack_packer_init(&pk, &b, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 10);
	msgpack_pack_int32(&pk, w->th->tid);
	msgpack_pack_uint32(&pk, RTPROF__STATE_GEN(k->state));
	msgpack_pack_uint32(&pk, k->seq);
	msgpack_pack_uint32(&pk, from);
	msgpack_pack_uint32(&pk, word_nrec(w->from));
	msgpack_pack_uint32(&pk, word_nrec(w->to) - word_nrec(w->from));
	msgpack_pack_uint64(&pk, first);
	msgpack_pack_uint64(&pk, last);
	msgpack_pack_uint64(&pk, first_part ? k->drops_full : 0);
	msgpack_pack_uint64(&pk, first_part ? k->drops_nested : 0);
	v[0].iov_base = b.data;
	v[0].iov_len = b.size;
	v[1].iov_base = (void *)p;
	v[1].iov_len = n;
	if (write_frame(s, RTPROF_FRAME_DATA, v, 2) == 0) {
		SINK_SET(s->chunks_written, s->chunks_written + 1);
	} else {
		SINK_SET(s->chunks_lost, s->chunks_lost + 1);
		unrecord(s, w->th, word_nrec(w->to) - word_nrec(w->from));
	}
}

/* Pack @a as a trailer entry [tid, recorded, full, nested, recycled]. */
static void
pack_acct(msgpack_packer *pk, const struct rtprof__acct *a)
{
	msgpack_pack_array(pk, 5);
	msgpack_pack_int32(pk, a->tid);
	msgpack_pack_uint64(pk, a->recorded);
	msgpack_pack_uint64(pk, a->dropped_full);
	msgpack_pack_uint64(pk, a->dropped_nested);
	msgpack_pack_uint64(pk, a->recycled);
}

/*
 * The TRAILER. Under a size cap it may not have room for every thread's
 * counts: threads that came and went after the cap have entries that no
 * reserve foresaw (trailer_reserve() counts the entries at the time of each
 * frame). Then it lists those it can, the threads with records in the dump
 * first, and says how many it left out (`threads_omitted`), rather than
 * not fitting at all. Context: writer thread, lock NOT held.
 */
static void
write_trailer(struct rtprof__session *s)
{
	/* The map header, "threads_omitted" and "threads" keys, their values'
	 * headers: at most 1 + 16 + 5 + 8 + 5 bytes. */
	const size_t slack = 40;
	msgpack_sbuffer b, f, e;
	msgpack_packer pk;
	uint64_t room = UINT64_MAX;
	uint32_t n = 0;

	if (s->set.max_bytes != 0)
		room = s->set.max_bytes > s->bytes + RTPROF_FRAME_OVERHEAD ?
		    s->set.max_bytes - s->bytes - RTPROF_FRAME_OVERHEAD : 0;
	msgpack_sbuffer_init(&f);
	msgpack_packer_init(&pk, &f, msgpack_sbuffer_write);
	pack_key(&pk, "stop_ticks");
	msgpack_pack_uint64(&pk, s->stop_ticks);
	pack_key(&pk, "stop_mono_ns");
	msgpack_pack_uint64(&pk, s->stop_mono);
	pack_key(&pk, "stop_wall_ns");
	msgpack_pack_uint64(&pk, s->stop_wall);
	pack_key(&pk, "frames");
	msgpack_pack_uint32(&pk, s->frame_seq);
	pack_key(&pk, "bytes");
	msgpack_pack_uint64(&pk, s->bytes);
	pack_key(&pk, "chunks_lost");
	msgpack_pack_uint64(&pk, s->chunks_lost);
	pack_key(&pk, "samples_lost");
	msgpack_pack_uint64(&pk, s->samples_lost);
	pack_key(&pk, "limit_reached");
	if (s->limit_reached)
		msgpack_pack_true(&pk);
	else
		msgpack_pack_false(&pk);

	msgpack_sbuffer_init(&e);
	msgpack_packer_init(&pk, &e, msgpack_sbuffer_write);
	for (int with_records = 1; with_records >= 0; with_records--) {
		for (uint32_t i = 0; i < s->nacct; i++) {
			size_t before = e.size;

			if ((s->acct[i].recorded != 0) != with_records)
				continue;
			pack_acct(&pk, &s->acct[i]);
			if (f.size + slack + e.size > room) {
				e.size = before;
				with_records = -1;
				break;
			}
			n++;
		}
	}

	msgpack_sbuffer_init(&b);
	msgpack_packer_init(&pk, &b, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, n < s->nacct ? 10 : 9);
	msgpack_sbuffer_write(&b, f.data, f.size);
	if (n < s->nacct) {
		pack_key(&pk, "threads_omitted");
		msgpack_pack_uint32(&pk, s->nacct - n);
	}
	pack_key(&pk, "threads");
	msgpack_pack_array(&pk, n);
	if (e.size != 0)
		msgpack_sbuffer_write(&b, e.data, e.size);
	write_buf(s, RTPROF_FRAME_TRAILER, &b);
	msgpack_sbuffer_destroy(&b);
	msgpack_sbuffer_destroy(&e);
	msgpack_sbuffer_destroy(&f);
}

/*
 * A THREAD frame that settled @a's counts was not written (the size cap;
 * or a sink error, after which the trailer is lost too): the trailer
 * lists them instead. Context: writer thread, lock NOT held (the acct
 * array is the writer's own).
 */
static void
unsettle(struct rtprof__session *s, const struct rtprof__acct *a)
{
	if (acct_reserve(s) == 0)       /* else out of memory: lost */
		s->acct[s->nacct++] = *a;
}

/* Context: writer thread, lock NOT held. */
static void
write_batch(void)
{
	for (size_t i = 0; i < batch.n; i++) {
		struct witem *w = &batch.v[i];

		switch (w->kind) {
		case W_FRAME:
			if (write_buf(w->s, w->frame, &w->buf) != 0 &&
			    w->settles)
				unsettle(w->s, &w->settled);
			break;
		case W_DATA:
			write_data(w);
			break;
		case W_TRAILER:
			write_trailer(w->s);
			break;
		case W_DUMPED:
			break;
		}
	}
}

/* Context: writer thread, lock held. */
static void
finish_batch(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);

	for (size_t i = 0; i < batch.n; i++) {
		struct witem *w = &batch.v[i];

		switch (w->kind) {
		case W_FRAME:
			msgpack_sbuffer_destroy(&w->buf);
			break;
		case W_DATA:
			w->th->chunks_alive--;
			if (w->release)
				rtprof__pool_put(lk, w->k);
			break;
		case W_TRAILER:
			w->s->phase = RTPROF__SESS_DONE;
			break;
		case W_DUMPED:
			w->s->dump_done = w->from;
			break;
		}
	}
	batch.n = 0;
	pthread_cond_broadcast(&c->done_cv);
}

/*
 * Under `rtprof record` the writer keeps the dump's descriptor in a file
 * table of its own (unshare(CLONE_FILES): this thread only), holding
 * nothing else, and the program's copy is closed (core/state.c): whatever
 * the program then does to its descriptors (close_range, dup2 over every
 * number, bash `exec 3>a`) cannot reach the dump, and no number of the
 * program's is taken. Everything else inherited into the new table is
 * closed at once, so the program's pipes still end when it closes them
 * (its POSIX record locks are untouched: they belong to its own table).
 * Sanitizer builds keep stderr (their reports from this thread).
 * Context: writer thread, lock held. Return: 1 done, -1 failed.
 */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define PRIVATE_KEEP_STDERR 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define PRIVATE_KEEP_STDERR 1
#endif
#endif
#ifndef PRIVATE_KEEP_STDERR
#define PRIVATE_KEEP_STDERR 0
#endif

/* Closes [lo, hi] in this thread's table. */
static void
close_span(unsigned lo, unsigned hi)
{
	if (lo > hi)
		return;
#ifdef SYS_close_range
	if (syscall(SYS_close_range, lo, hi, 0) == 0)
		return;
#endif
	{
		long max = sysconf(_SC_OPEN_MAX);

		for (long fd = lo; fd <= (long)hi && fd < max; fd++)
			close((int)fd);
	}
}

/*
 * rtprof__fd_high - move @fd, in the calling thread's own table, to a
 * number in the top quarter of the descriptor limit (RTPROF__FD_HIGH_CAP
 * at most): the writer's dump (@top 1) near its top, the sampler's perf
 * events (@top 0) from its start up. The two tables are apart, but a
 * sanitizer's model of descriptors knows numbers only: the writer's and
 * the sampler's must differ. Not higher: a table grows to the number and
 * never shrinks, and is copied by every unshare and fork (at a limit of
 * 1048576, 8 MiB per copy; at 20000, 256 KiB: the kernel's share of a
 * recorded make's time). Return: the new number, or @fd where none is
 * free. Context: the writer or the sampler.
 */
int
rtprof__fd_high(int fd, int top)
{
	struct rlimit rl;
	rlim_t lim;
	int hi;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < 64)
		return fd;
	lim = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > RTPROF__FD_HIGH_CAP ?
	    RTPROF__FD_HIGH_CAP : rl.rlim_cur;
	hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)(top ? lim - lim / 16 :
	    lim - lim / 4));
	if (hi < 0)
		return fd;
	/* The raw system call: the number is the program's in its table,
	 * and a sanitizer's model of descriptors must not see it closed. */
	syscall(SYS_close, fd);
	return hi;
}

/*
 * rtprof__files_private - give the calling thread a file table of its own
 * holding only @keep (-1: nothing; stderr too in sanitizer builds).
 * Context: the writer or the sampler thread, once. Return: 1, or -1 when
 * unshare(2) is refused (the thread keeps the program's table).
 */
int
rtprof__files_private(int keep)
{
	int k[2], n = 0;
	unsigned from = 0;

	if (unshare(CLONE_FILES) != 0)
		return -1;
	if (PRIVATE_KEEP_STDERR)
		k[n++] = 2;
	if (keep >= 0 && keep != 2)
		k[n++] = keep;
	if (n == 2 && k[1] < k[0]) {
		int t = k[0];

		k[0] = k[1];
		k[1] = t;
	}
	for (int i = 0; i < n; i++) {
		if ((unsigned)k[i] > from)
			close_span(from, (unsigned)k[i] - 1);
		from = (unsigned)k[i] + 1;
	}
	close_span(from, ~0U);
	return 1;
}

/*
 * In its own table the writer moves the dump to a high number: the
 * program's number for it is the program's again once it closes its copy,
 * and nothing, ThreadSanitizer's model of descriptors included, takes the
 * two for one. Context: writer thread, lock held.
 */
static void
private_renumber(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	int old = c->private_fd, fd = rtprof__fd_high(old, 1);

	if (fd == old)
		return;
	for (struct rtprof__session *s = c->sessions; s != NULL; s = s->next)
		if (s->set.fd == old)
			s->set.fd = fd;
	c->private_fd = fd;
}

/* Context: writer thread, lock held. */
static void
private_serve(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);

	if (c->private_fd < 0 || c->private_state != 0)
		return;
	c->private_state = rtprof__files_private(c->private_fd);
	if (c->private_state == 1)
		private_renumber(lk);
	pthread_cond_broadcast(&c->done_cv);
}

/* Context: the control thread starting a launcher session, lock held. */
void
rtprof__writer_private(const rtprof_lock *lk, int fd)
{
	struct rtprof__core *c = rtprof__core_get(lk);

	c->private_fd = fd;
	c->private_state = 0;
	c->writer_wake = 1;
	pthread_cond_signal(&c->writer_cv);
}

/*
 * A fork child: the parent's writer and its batch in flight are not the
 * child's (the batch's sessions are abandoned, their descriptor is not in
 * the child's new writer's table). Context: the forked child, before any
 * other thread exists.
 */
void
rtprof__writer_fork_child(void)
{
	batch.n = 0;            /* its buffers are a copy: leaked, bounded */
}

static void *
writer_main(void *arg)
{
	const rtprof_lock *lk;
	sigset_t all;

	(void)arg;
	/* Every signal blocked: SIGPIPE from a closed pipe becomes EPIPE, and
	 * the profiled program's handlers never run on this thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_setname_np(pthread_self(), "rtprof-writer");
	lk = rtprof__lock();
	for (;;) {
		struct rtprof__core *c = rtprof__core_get(lk);

		if (!c->writer_wake) {
			uint32_t us = c->running ? c->running->set.flush_interval_us : 100000;
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (long)(us % 1000000) * 1000;
			ts.tv_sec += us / 1000000 + ts.tv_nsec / 1000000000;
			ts.tv_nsec %= 1000000000;
			pthread_cond_timedwait(&c->writer_cv, &c->mu, &ts);
		}
		c->writer_wake = 0;
		private_serve(lk);
		collect(lk);
		if (batch.n > 0) {
			rtprof__unlock(lk);
			write_batch();
			lk = rtprof__lock();
			finish_batch(lk);
		}
	}
	return NULL;
}

_Atomic int rtprof__dump_signalled;

/* Context: a signal handler on any thread: async-signal-safe. The writer
 * serves the request at its next round (flush_interval_us). */
static void
dump_handler(int sig)
{
	(void)sig;
	atomic_store_explicit(&rtprof__dump_signalled, 1, memory_order_release);
}

/* Context: the thread starting a flight recorder session, lock held.
 * Return: 0 or -EAGAIN. */
int
rtprof__dump_signal_install(const rtprof_lock *lk, int sig)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = dump_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, &c->dump_old) != 0)
		return -EAGAIN;
	c->dump_sig = sig;
	return 0;
}

/* Context: the thread stopping the session, lock held. */
void
rtprof__dump_signal_restore(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);

	if (c->dump_sig == 0)
		return;
	sigaction(c->dump_sig, &c->dump_old, NULL);
	c->dump_sig = 0;
}

/* Context: control thread, lock held. Return: 0 or -EAGAIN. */
int
rtprof__writer_ensure(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);

	if (c->writer_started)
		return 0;
	if (rtprof__own_thread_create(&c->writer, NULL, writer_main, NULL) != 0)
		return -EAGAIN;
	c->writer_started = 1;
	return 0;
}

/* Context: any non-RT thread, lock held. */
void
rtprof__writer_kick(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);

	c->writer_wake = 1;
	pthread_cond_signal(&c->writer_cv);
}

/* Context: the thread that ends the session, lock held, session DONE. */
void
rtprof__session_free(struct rtprof__session *s)
{
	struct strset *set = s->strings;

	if (set != NULL)
		free(set->slots);
	free(set);
	free(s->pauses);
	free(s->acct);
	free(s->values_last);
	free(s->values_start);
	rtprof__modset_free(s->mods);
	free(s);
}
