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
 *   5. refill every live thread's `empty` ring from the pool to its depth
 *      (a stream deepens the ring of a thread that runs it low: ring_depth();
 *      flight recorder: recycling the oldest kept chunk when the pool is
 *      empty);
 *   6. free exited threads whose chunks are all back.
 * Then, without the lock, it writes the batch (rtprof__write_batch(),
 * writer_out.c); then, with the lock again, it returns written chunks to
 * the pool and wakes waiters. The descriptor frames are built in
 * writer_desc.c, the private file table of `rtprof record` is
 * writer_fds.c; writer_int.h lists what the parts share.
 *
 * Memory stays bounded: the batch refers to pool chunks (bounded by the
 * memory limit) and to small descriptor frames; nothing grows with the
 * session length except the set of interned static strings.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <msgpack.h>

#include "core.h"
#include "writer_int.h"

/* The round's batch (writer_int.h). Context: the writer thread. */
struct batch rtprof__batch;



/* A new item of the round's batch. Context: writer thread, lock held. */
static struct witem *
batch_add(enum witem_kind kind, struct rtprof__session *s)
{
	struct witem *w;

	if (rtprof__batch.n == rtprof__batch.cap) {
		size_t ncap = rtprof__batch.cap ? rtprof__batch.cap * 2 : 256;
		struct witem *nv = realloc(rtprof__batch.v, ncap * sizeof(*nv));

		if (nv == NULL)
			return NULL;
		rtprof__batch.v = nv;
		rtprof__batch.cap = ncap;
	}
	w = &rtprof__batch.v[rtprof__batch.n++];
	memset(w, 0, sizeof(*w));
	w->kind = kind;
	w->s = s;
	return w;
}

/* Starts a W_FRAME item; the caller packs the payload with *pk.
 * Context: writer thread, lock held. */
struct witem *
rtprof__frame_add(struct rtprof__session *s, uint8_t kind, msgpack_packer *pk)
{
	struct witem *w = batch_add(W_FRAME, s);

	if (w == NULL)
		return NULL;
	w->frame = kind;
	msgpack_sbuffer_init(&w->buf);
	msgpack_packer_init(pk, &w->buf, msgpack_sbuffer_write);
	return w;
}

/* ------------------------------------------------------------------ */
/* Collection (under the lock).                                         */

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
 * under the lock, rtprof__write_batch() without). An entry lives from the thread's
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
int
rtprof__acct_reserve(struct rtprof__session *s)
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
	if (rtprof__acct_reserve(s) != 0)
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
void
rtprof__unrecord(struct rtprof__session *s, const struct rtprof__thread *th,
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
		rtprof__unrecord(s, th, word_nrec(to) - word_nrec(k->flushed));
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

/*
 * A stream's threads deepen their empty rings as they need: the memory
 * limit is the user's budget, and a thread that fills chunks faster than
 * the writer's rounds give them back (a writer that waited for a CPU or for
 * the file system) would otherwise drop events while most of the pool sits
 * free. When a refill finds a thread's ring at a quarter of its depth or
 * less, or the thread dropped an event for want of a chunk since the last
 * round, its depth doubles; and every DEPTH_WINDOW_NS it is made to hold
 * twice what the thread took in that window, when that is more: room for
 * a writer that stops for as long. Both up to its share: half of the
 * pool's chunks that the other threads' rings do not hold (so a thread
 * that went idle on a deep ring leaves every later one half of the rest),
 * and never over the ring's 255. It halves back (not below the prefill)
 * once every refill for DEPTH_CALM_NS found the ring above half. A flight
 * recorder or a paced link keeps the prefill: there refills recycle kept
 * chunks, and a deeper ring would shorten the history.
 */
#define DEPTH_CALM_NS 10000000000u  /* 10 s */
#define DEPTH_WINDOW_NS 100000000u  /* 100 ms */

/* Chunks @th took in the window that ended at @now, when one did (else 0;
 * the first call opens the window). Writer thread, lock held. */
static uint64_t
window_chunks(struct rtprof__thread *th, uint64_t now)
{
	/* relaxed: a statistic the owner counts. */
	uint64_t k = atomic_load_explicit(&th->chunks, memory_order_relaxed);
	uint64_t took = k - th->depth_chunks;

	if (th->depth_t0 != 0 && now - th->depth_t0 < DEPTH_WINDOW_NS)
		return 0;
	th->depth_chunks = k;
	if (th->depth_t0 == 0) {
		th->depth_t0 = now;
		return 0;
	}
	th->depth_t0 = now;
	return took;
}

/*
 * The depth to refill @th's ring to; @held: the chunks in every live
 * thread's empty ring. Context: writer thread, lock held (the collector
 * owns th->depth*).
 */
static uint32_t
ring_depth(const struct rtprof__core *c, const struct rtprof__session *s,
    struct rtprof__thread *th, uint64_t held, uint64_t now)
{
	uint32_t have = ck_ring_size(&th->empty), pre = s->set.prefill;
	uint64_t others = held > have ? held - have : 0;
	uint64_t share = c->pool_target > others ?
	    (c->pool_target - others) / 2 : 0;
	/* relaxed: a statistic the owner counts; any value it had is fine. */
	uint64_t drops = atomic_load_explicit(&th->dropped_full,
	    memory_order_relaxed);
	int dropped = drops != th->depth_drops;
	uint64_t took;

	th->depth_drops = drops;
	if (th->depth_gen != s->gen || th->depth < pre) {
		th->depth_gen = s->gen;
		th->depth = pre;
		th->depth_t0 = 0;
		dropped = 0;
	}
	if (keeps(s))
		return pre;
	if (share > RTPROF__EMPTY_RING - 1)
		share = RTPROF__EMPTY_RING - 1;
	took = window_chunks(th, now);
	if ((have <= th->depth / 4 || dropped) && th->depth < share)
		th->depth = 2 * (uint64_t)th->depth < share ? 2 * th->depth :
		    (uint32_t)share;
	else if (2 * took > th->depth && th->depth < share)
		th->depth = 2 * took < share ? (uint32_t)(2 * took) :
		    (uint32_t)share;
	else if (have > th->depth / 2 && th->depth > pre) {
		if (now - th->depth_calm >= DEPTH_CALM_NS) {
			th->depth = th->depth / 2 > pre ? th->depth / 2 : pre;
			th->depth_calm = now;
		}
		return th->depth;
	}
	th->depth_calm = now;     /* not calm: the calm starts again */
	return th->depth;
}

/* Chunks in the live threads' empty rings. Writer thread, lock held. */
static uint64_t
rings_held(const struct rtprof__core *c)
{
	uint64_t n = 0;

	for (const struct rtprof__thread *th = c->threads; th != NULL;
	    th = th->next)
		if (!th->exited)
			n += ck_ring_size(&th->empty);
	return n;
}

static void
refill_all(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	struct rtprof__session *s = c->running;
	struct rtprof__thread *th;
	uint64_t held, now;

	if (s == NULL)
		return;
	held = rings_held(c);
	now = rtprof__mono_ns();
	for (th = c->threads; th != NULL; th = th->next) {
		if (th->exited)
			continue;
		rtprof__refill(lk, th, ring_depth(c, s, th, held, now));
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
		rtprof__desc_link_event(s);
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
			rtprof__desc_thread(s, th, NULL);
		} else if (th->exited && !th->announced_exit) {
			th->announced_exit = 1;
			rtprof__desc_thread(s, th, NULL);
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
			if (a != NULL && rtprof__desc_thread(s, th, a) == 0)
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
			rtprof__desc_header(lk, s);
		}
		rtprof__desc_modules_update(s);
		while (s->schemas_sent < c->ntypes)
			rtprof__desc_schema(s, c->types[s->schemas_sent++]);
		while (s->counters_sent < c->ncounters)
			rtprof__desc_counter(s, c->counters[s->counters_sent++]);
		for (; s->categories_sent < c->ncategories; s->categories_sent++)
			rtprof__desc_category(s, &c->categories[s->categories_sent],
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
			rtprof__desc_pauses(s);
			rtprof__desc_values(lk, s, 1);
			s->phase = RTPROF__SESS_CLOSED;
			batch_add(W_TRAILER, s);
		} else if (s->phase == RTPROF__SESS_RUNNING) {
			struct witem *w;

			if (s->dump_requested) {
				flush_kept(s);
				snapshot_partials(lk, s);
				rtprof__desc_pauses(s);
				rtprof__desc_values(lk, s, 1);
				s->dump_requested = 0;
				if ((w = batch_add(W_DUMPED, s)) != NULL)
					w->from = s->dump_wanted;
			} else if (s->set.mode == RTPROF_MODE_STREAM) {
				rtprof__desc_pauses(s);
				rtprof__desc_values(lk, s, 0);
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

/* Context: writer thread, lock held. */
static void
finish_batch(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);

	for (size_t i = 0; i < rtprof__batch.n; i++) {
		struct witem *w = &rtprof__batch.v[i];

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
	rtprof__batch.n = 0;
	pthread_cond_broadcast(&c->done_cv);
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
	rtprof__batch.n = 0;            /* its buffers are a copy: leaked, bounded */
}

/*
 * Whether a thread's full ring holds a chunk already: the writer then
 * goes on without waiting for the next round. After a round that wrote
 * for a while (a file system that held a write 20 ms), the chunks filled
 * meanwhile waited flush_interval_us more while the thread's empty ring
 * ran down (BENCHMARKS.md, "Sustained recording", third stop).
 * Context: writer thread, lock held.
 */
static int
chunks_waiting(const struct rtprof__core *c)
{
	const struct rtprof__thread *th;

	for (th = c->threads; th != NULL; th = th->next)
		if (ck_ring_size(&th->full) != 0)
			return 1;
	return 0;
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
	for (int wrote = 0;;) {
		struct rtprof__core *c = rtprof__core_get(lk);

		/* Only after a round that wrote (and so let go of the lock
		 * while it did): a round with nothing to write never holds
		 * the lock round after round. */
		if (!c->writer_wake && !(wrote && chunks_waiting(c))) {
			uint32_t us = c->running ? c->running->set.flush_interval_us : 100000;
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (long)(us % 1000000) * 1000;
			ts.tv_sec += us / 1000000 + ts.tv_nsec / 1000000000;
			ts.tv_nsec %= 1000000000;
			pthread_cond_timedwait(&c->writer_cv, &c->mu, &ts);
		}
		c->writer_wake = 0;
		rtprof__private_serve(lk);
		collect(lk);
		wrote = rtprof__batch.n > 0;
		if (wrote) {
			rtprof__unlock(lk);
			rtprof__write_batch();
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

