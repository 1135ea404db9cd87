/*
 * rt_record.c - the owner thread's out-of-line recording path.
 *
 * Everything here runs on a registered thread, possibly a real-time one:
 * wait-free, no lock, no allocation, no syscall (the vDSO clock is not a
 * syscall). It calls nothing in core/; core/ feeds the rings it reads.
 * Protocol: rt/rt_internal.h.
 */
#include <errno.h>
#include <time.h>

#include "rt_internal.h"

/* The state word: generation << 2 | RUNNING | PAUSED (rtprof.h). Written by
 * control calls under the core mutex, read by every recording call. */
RTPROF_API uint64_t rtprof__state;

/* expect = 0 never matches a state word (generation >= 1), so an
 * unregistered thread always takes the slow path and returns at once. */
RTPROF_API __thread struct rtprof__tls rtprof__tls
    __attribute__((tls_model("initial-exec"))) = {
	sizeof(struct rtprof__tls), 0, 0, NULL, NULL, NULL, NULL, 0, 0, NULL
};

/*
 * Context: any thread; RT-safe (CLOCK_MONOTONIC is served by the vDSO).
 */
RTPROF_API uint64_t
rtprof__now_fallback(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void
stat_inc(_Atomic uint64_t *c)
{
	/* relaxed load + store, not an RMW: only the owner writes it. */
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
	    memory_order_relaxed);
}

/* Context: owner thread; RT-safe. */
void
rtprof__retire(struct rtprof__tls *t, struct rtprof__thread *th)
{
	struct rtprof__chunk *c;

	if (t->commit == NULL)
		return;
	c = (struct rtprof__chunk *)((char *)t->commit -
	    offsetof(struct rtprof__chunk, commit));
	/* release: the collector that snapshots `cur` may still read c, which
	 * is fine (c is only reused after it comes back through `full`). */
	atomic_store_explicit(&th->cur, NULL, memory_order_release);
	RTPROF__HANDOVER_RELEASE(c);
	/* The ring's store fence publishes every record and the commit word
	 * before the collector can dequeue c; pairs with the load fence in
	 * ck_ring_dequeue_spsc() in core/pool.c. The full ring is larger than
	 * the most chunks the owner can hold, so this cannot fail. */
	if (!ck_ring_enqueue_spsc(&th->full, th->full_buf, c))
		__builtin_trap();
	t->commit = NULL;
	t->pos = t->end = t->base = NULL;
	t->expect = 0;
	t->nrec = 0;
}

/* Context: owner thread; RT-safe. Take an empty chunk for state @s. */
_Static_assert(24 + RTPROF_MAX_FIELDS * (2 + RTPROF_MAX_STRING) < RTPROF__MIN_CHUNK,
    "a record always fits in an empty chunk");

static int
take_chunk(struct rtprof__tls *t, struct rtprof__thread *th, uint64_t s)
{
	struct rtprof__chunk *c;
	uint32_t gen = RTPROF__STATE_GEN(s);

	if (!ck_ring_dequeue_spsc(&th->empty, th->empty_buf, &c))
		return -1;
	RTPROF__HANDOVER_ACQUIRE(c);
	if (th->o_gen != gen) {
		th->o_gen = gen;
		th->o_seq = 0;
		th->o_drops_full = 0;
		th->o_drops_nested = 0;
	}
	c->state = s;
	c->seq = th->o_seq++;
	c->drops_full = th->o_drops_full;
	c->drops_nested = th->o_drops_nested;
	c->owner = th;
	/* The commit word is shared with the inline fast path, which is C++
	 * too, so it is a plain integer accessed with __atomic builtins. */
	__atomic_store_n(&c->commit.word, 0, __ATOMIC_RELAXED);
	th->o_drops_full = 0;
	th->o_drops_nested = 0;
	stat_inc(&th->chunks);
	t->commit = &c->commit;
	t->base = t->pos = c->data;
	t->end = c->data + c->size;
	t->nrec = 0;
	t->expect = s;
	/* release: c's header fields before the collector sees c in cur;
	 * pairs with the acquire in rtprof__chunk_snapshot(). */
	atomic_store_explicit(&th->cur, c, memory_order_release);
	return 0;
}

/*
 * rtprof__open_slow - the rare cases of rtprof__open(): another session,
 * paused, chunk full, re-entrant call, unregistered thread.
 * Context: owner thread; RT-safe (at most one ring enqueue and one dequeue).
 */
RTPROF_API unsigned char *
rtprof__open_slow(size_t max)
{
	struct rtprof__tls *t = &rtprof__tls;
	struct rtprof__thread *th = t->thread;
	uint64_t s;

	if (th == NULL)
		return NULL;
	if (t->nesting != 0) {
		stat_inc(&th->dropped_nested);
		if (th->o_gen == RTPROF__STATE_GEN(t->expect))
			th->o_drops_nested++;
		return NULL;
	}
	/* acquire: as in rtprof__open(). */
	s = __atomic_load_n(&rtprof__state, __ATOMIC_ACQUIRE);
	if (t->commit != NULL &&
	    (RTPROF__STATE_GEN(t->expect) != RTPROF__STATE_GEN(s) ||
	     (size_t)(t->end - t->pos) < max))
		rtprof__retire(t, th);
	if (!(s & RTPROF__RUNNING) || (s & RTPROF__PAUSED)) {
		stat_inc(&th->outside);
		return NULL;
	}
	if (t->commit == NULL && take_chunk(t, th, s) != 0) {
		stat_inc(&th->dropped_full);
		if (th->o_gen != RTPROF__STATE_GEN(s)) {
			th->o_gen = RTPROF__STATE_GEN(s);
			th->o_seq = 0;
			th->o_drops_nested = 0;
			th->o_drops_full = 0;
		}
		th->o_drops_full++;
		return NULL;
	}
	/* t->expect may hold the state without PAUSED while s is the same
	 * generation resumed: both are equal now. */
	t->expect = s;
	t->nesting = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return t->pos;
}

/* Context: owner thread; RT-safe. */
RTPROF_API void
rtprof__label_push(const char *label)
{
	struct rtprof__thread *th = rtprof__tls.thread;
	uint32_t d;

	if (th == NULL)
		return;
	d = th->o_label_depth++;
	if (d >= RTPROF_MAX_LABELS)
		return;
	ck_sequence_write_begin(&th->label_seq);
	atomic_store_explicit(&th->labels[d], label, memory_order_relaxed);
	atomic_store_explicit(&th->label_depth, d + 1, memory_order_relaxed);
	ck_sequence_write_end(&th->label_seq);
}

/* Context: owner thread; RT-safe. */
RTPROF_API void
rtprof__label_pop(void)
{
	struct rtprof__thread *th = rtprof__tls.thread;
	uint32_t d;

	if (th == NULL || th->o_label_depth == 0)
		return;
	d = --th->o_label_depth;
	if (d >= RTPROF_MAX_LABELS)
		return;
	ck_sequence_write_begin(&th->label_seq);
	atomic_store_explicit(&th->label_depth, d, memory_order_relaxed);
	ck_sequence_write_end(&th->label_seq);
}

static void
sleep_state(uint32_t state, unsigned kind)
{
	struct rtprof__thread *th = rtprof__tls.thread;
	unsigned char *p;

	if (th == NULL)
		return;
	/* release: pairs with the sampler's acquire/CAS (sampler issue). */
	atomic_store_explicit(&th->sleep, state, memory_order_release);
	p = rtprof__open(11);
	if (p == NULL)
		return;
	p[0] = 0x92;
	p[1] = (unsigned char)kind;
	rtprof__close(rtprof__put_u64(p + 2, 0xcf, rtprof_now()));
}

/* Context: owner thread; RT-safe. */
RTPROF_API void
rtprof_thread_sleep(void)
{
	sleep_state(RTPROF__ASLEEP, RTPROF__REC_SLEEP);
}

/* Context: owner thread; RT-safe. */
RTPROF_API void
rtprof_thread_wake(void)
{
	sleep_state(RTPROF__AWAKE, RTPROF__REC_WAKE);
}

/* Context: owner thread; RT-safe. */
RTPROF_API int
rtprof_thread_stats_get(struct rtprof_thread_stats *out)
{
	struct rtprof__thread *th = rtprof__tls.thread;

	if (th == NULL)
		return -ENOENT;
	out->dropped_full = atomic_load_explicit(&th->dropped_full, memory_order_relaxed);
	out->dropped_nested = atomic_load_explicit(&th->dropped_nested, memory_order_relaxed);
	out->outside = atomic_load_explicit(&th->outside, memory_order_relaxed);
	out->late = atomic_load_explicit(&th->late, memory_order_relaxed);
	out->recycled = atomic_load_explicit(&th->recycled, memory_order_relaxed);
	out->chunks = atomic_load_explicit(&th->chunks, memory_order_relaxed);
	return 0;
}
