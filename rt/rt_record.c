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
	sizeof(struct rtprof__tls), 0, 0, NULL, NULL, NULL, NULL, NULL, 0, NULL
};

/* The process's tick clock, chosen once by core/clock.c at load time:
 * 0 CLOCK_MONOTONIC ns, 1 TSC, 2 cntvct. */
int rtprof__clock_kind;

/*
 * rtprof__now_fallback - the session clock for threads that do not read
 * the counter inline (unregistered threads, or no usable counter).
 * Context: any thread; RT-safe (CLOCK_MONOTONIC is served by the vDSO).
 */
RTPROF_API uint64_t
rtprof__now_fallback(void)
{
	struct timespec ts;

#if defined(__x86_64__) || defined(__i386__)
	if (rtprof__clock_kind == 1)
		return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	if (rtprof__clock_kind == 2) {
		uint64_t v;
		__asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v) : : "memory");
		return v;
	}
#endif
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

/* The chunk whose commit word is @cm. */
static struct rtprof__chunk *
chunk_of(struct rtprof__chunk_commit *cm)
{
	return (struct rtprof__chunk *)((char *)cm -
	    offsetof(struct rtprof__chunk, commit));
}

/*
 * Hand the current chunk back. Leaves `expect` to the caller, who holds
 * the claim (RTPROF__BUSY) and sets it when it releases the claim.
 * Context: owner thread, buffer claimed; RT-safe.
 */
void
rtprof__retire(struct rtprof__tls *t, struct rtprof__thread *th)
{
	struct rtprof__chunk *c;

	if (t->commit == NULL)
		return;
	c = chunk_of(t->commit);
	/* `cur` keeps pointing at c until the collector dequeues c and
	 * clears it (drain() in core/writer.c): a snapshot between here and
	 * the dequeue still finds c's records. Clearing it here first would
	 * hide c from a closing snapshot while c is in neither place, and
	 * its records, committed before the stop, would count as late. */
	RTPROF__HANDOVER_RELEASE(c);
	/* The ring's store fence publishes every record and the commit word
	 * before the collector can dequeue c; pairs with the load fence in
	 * ck_ring_dequeue_spsc() in core/writer.c. The full ring holds more
	 * than the owner can be given between two drains (rtprof__refill is
	 * bounded), so this does not fail; if it ever did, the chunk's records
	 * are counted as dropped and the chunk is abandoned, never a crash. */
	if (!ck_ring_enqueue_spsc(&th->full, th->full_buf, c)) {
		atomic_store_explicit(&th->cur, NULL, memory_order_release);
		atomic_fetch_add_explicit(&th->dropped_full,
		    __atomic_load_n(&c->commit.word, __ATOMIC_RELAXED) >> 32,
		    memory_order_relaxed);
	}
	t->commit = NULL;
	t->pos = t->end = t->lim = t->base = NULL;
}

/* The per-generation counters of @th start again for generation @gen.
 * Context: owner thread. */
static void
owner_gen(struct rtprof__thread *th, uint32_t gen)
{
	if (th->o_gen == gen)
		return;
	th->o_gen = gen;
	th->o_seq = 0;
	th->o_drops_full = 0;
	th->o_drops_nested = 0;
}

/*
 * Start the page walks and line fills of the chunk the owner will take
 * after this one (the next in its empty ring), a chunk's worth of records
 * ahead: its header and first data lines, which the next chunk switch
 * writes at once (the p99.99 tail, BENCHMARKS.md). Reads the ring as its
 * consumer, as ck_ring_dequeue_spsc() does, without dequeuing. Prefetches
 * never fault and change nothing the collector sees.
 * Context: owner thread (the empty ring's consumer); RT-safe.
 */
static void
prefetch_next(const struct rtprof__thread *th)
{
	const ck_ring_t *r = &th->empty;
	unsigned int c = ck_pr_load_uint(&r->c_head);
	const struct rtprof__chunk *n;

	if (c == ck_pr_load_uint(&r->p_tail))
		return;
	ck_pr_fence_load();
	n = ck_pr_load_ptr(&th->empty_buf[c & r->mask].value);
	__builtin_prefetch(n, 1, 3);
	__builtin_prefetch(&n->commit, 1, 3);
	__builtin_prefetch(n->data, 1, 3);
	__builtin_prefetch(n->data + 64, 1, 3);
}

/* Context: owner thread, buffer claimed; RT-safe. Take an empty chunk for
 * state @s. */
_Static_assert(24 + RTPROF_MAX_FIELDS * (2 + RTPROF_MAX_STRING) < RTPROF__MIN_CHUNK,
    "a record always fits in an empty chunk");

static int
take_chunk(struct rtprof__tls *t, struct rtprof__thread *th, uint64_t s)
{
	struct rtprof__chunk *c;

	if (!ck_ring_dequeue_spsc(&th->empty, th->empty_buf, &c))
		return -1;
	RTPROF__HANDOVER_ACQUIRE(c);
	owner_gen(th, RTPROF__STATE_GEN(s));
	c->state = s;
	c->seq = th->o_seq++;
	c->drops_full = th->o_drops_full;
	/* One instruction: a nested drop that a signal handler counts while
	 * this runs lands in c or stays for the next chunk, never lost. */
	c->drops_nested = __atomic_exchange_n(&th->o_drops_nested, 0,
	    __ATOMIC_RELAXED);
	c->owner = th;
	/* The commit word is shared with the inline fast path, which is C++
	 * too, so it is a plain integer accessed with __atomic builtins. */
	__atomic_store_n(&c->commit.word, 0, __ATOMIC_RELAXED);
	th->o_drops_full = 0;
	stat_inc(&th->chunks);
	t->commit = &c->commit;
	t->base = t->pos = c->data;
	t->end = c->data + c->size;
	t->lim = t->end - RTPROF__SMALL + 1;
	prefetch_next(th);
	/* release: c's header fields before the collector sees c in cur;
	 * pairs with the acquire in rtprof__chunk_snapshot(). */
	atomic_store_explicit(&th->cur, c, memory_order_release);
	return 0;
}

/* Count a re-entrant call (a signal handler interrupted a recording call)
 * for the session running now: the drop must reach the dump with the next
 * chunk taken, even while the interrupted call has none. RMWs: a handler
 * can be interrupted by another one. Context: owner thread, nested. */
static void
drop_nested(struct rtprof__thread *th)
{
	uint32_t gen = RTPROF__STATE_GEN(__atomic_load_n(&rtprof__state,
	    __ATOMIC_RELAXED));

	atomic_fetch_add_explicit(&th->dropped_nested, 1, memory_order_relaxed);
	owner_gen(th, gen);
	__atomic_fetch_add(&th->o_drops_nested, 1, __ATOMIC_RELAXED);
}

/* `expect` for a chunk of state @s on this thread. */
static uint64_t
expect_for(const struct rtprof__tls *t, uint64_t s)
{
	return t->fast_clock ? s : s | RTPROF__NOCLOCK;
}

/*
 * rtprof__reserve_slow - the rare cases of rtprof__claim(): another
 * session, paused, chunk full, re-entrant call, unregistered thread, no
 * inline clock. Entered with the buffer claimed (`expect` RTPROF__BUSY) and
 * @e, what `expect` was before the claim (RTPROF__BUSY: a re-entrant call).
 * Context: owner thread; RT-safe (at most one ring enqueue and one dequeue).
 * Return: where to write @max bytes, the claim kept and `saved` set for
 * rtprof__close(); or NULL, the claim released, the drop counted.
 */
RTPROF_API unsigned char *
rtprof__reserve_slow(size_t max, uint64_t e)
{
	struct rtprof__tls *t = &rtprof__tls;
	struct rtprof__thread *th = t->thread;
	uint64_t s, ne = e;

	if (e == RTPROF__BUSY) {
		if (th != NULL)
			drop_nested(th);
		goto out;
	}
	if (th == NULL)
		goto out;
	/* acquire: as in rtprof__claim(). */
	s = __atomic_load_n(&rtprof__state, __ATOMIC_ACQUIRE);
	if (t->commit != NULL &&
	    (RTPROF__STATE_GEN(chunk_of(t->commit)->state) !=
	     RTPROF__STATE_GEN(s) || (size_t)(t->end - t->pos) < max)) {
		rtprof__retire(t, th);
		ne = 0;
	}
	if (!(s & RTPROF__RUNNING) || (s & RTPROF__PAUSED)) {
		stat_inc(&th->outside);
		goto out;
	}
	if (t->commit == NULL && take_chunk(t, th, s) != 0) {
		stat_inc(&th->dropped_full);
		owner_gen(th, RTPROF__STATE_GEN(s));
		th->o_drops_full++;
		ne = 0;
		goto out;
	}
	/* The chunk may have been taken for the state without PAUSED while
	 * s is the same generation resumed: both are equal now. */
	t->saved = expect_for(t, s);
	return t->pos;
out:
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->expect = ne;
	return NULL;
}

/* Context: owner thread, claimed by rtprof__mark4(); RT-safe. */
RTPROF_API void
rtprof__mark_slow(unsigned kind, const char *name, enum rtprof_category cat,
    uint64_t e)
{
	unsigned char *p = rtprof__reserve_slow(22, e);

	if (p == NULL)
		return;
	p[0] = 0x94;
	p[1] = (unsigned char)kind;
	p = rtprof__put_u64(p + 2, 0xcf, rtprof_now());
	p = rtprof__put_ptr(p, name);
	p[0] = (unsigned char)(cat & 0x7f);
	rtprof__close(p + 1);
}

/* Context: owner thread, claimed by rtprof__counter_rec(); RT-safe. */
RTPROF_API void
rtprof__counter_slow(const struct rtprof_counter *c, int64_t v, uint64_t e)
{
	unsigned char *p = rtprof__reserve_slow(23, e);

	if (p == NULL)
		return;
	p[0] = 0x94;
	p[1] = RTPROF__REC_COUNTER;
	p = rtprof__put_u64(p + 2, 0xcf, rtprof_now());
	p = rtprof__put_u16(p, c->id);
	rtprof__close(rtprof__put_u64(p, 0xd3, (uint64_t)v));
}

/*
 * Label push and pop write the stack under the thread's ck_sequence. A
 * signal handler that interrupts a recording call or another label update
 * must not start a second write section inside the first (the sequence
 * would read even mid-write), so then it only keeps the depth count and
 * publishes nothing; its push and pop are balanced before it returns.
 */

/* Context: owner thread; RT-safe, async-signal-safe. */
RTPROF_API void
rtprof__label_push(const char *label)
{
	struct rtprof__tls *t = &rtprof__tls;
	struct rtprof__thread *th = t->thread;
	uint64_t e = t->expect;
	uint32_t d;

	if (th == NULL)
		return;
	t->expect = RTPROF__BUSY;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	d = th->o_label_depth++;
	if (e != RTPROF__BUSY && d < RTPROF_MAX_LABELS) {
		ck_sequence_write_begin(&th->label_seq);
		atomic_store_explicit(&th->labels[d], label, memory_order_relaxed);
		/* The caller's stack pointer at this call. */
		th->label_sp[d] = (uintptr_t)__builtin_dwarf_cfa();
		/* The entry before the depth that exposes it, for this thread's
		 * own sampling handler (the sampler thread has label_seq). */
		atomic_signal_fence(memory_order_release);
		atomic_store_explicit(&th->label_depth, d + 1, memory_order_relaxed);
		ck_sequence_write_end(&th->label_seq);
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->expect = e;
}

/* Context: owner thread; RT-safe, async-signal-safe. */
RTPROF_API void
rtprof__label_pop(void)
{
	struct rtprof__tls *t = &rtprof__tls;
	struct rtprof__thread *th = t->thread;
	uint64_t e = t->expect;
	uint32_t d;

	if (th == NULL || th->o_label_depth == 0)
		return;
	t->expect = RTPROF__BUSY;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	d = --th->o_label_depth;
	if (e != RTPROF__BUSY && d < RTPROF_MAX_LABELS) {
		ck_sequence_write_begin(&th->label_seq);
		atomic_store_explicit(&th->label_depth, d, memory_order_relaxed);
		ck_sequence_write_end(&th->label_seq);
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->expect = e;
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
	out->samples = atomic_load_explicit(&th->samples, memory_order_relaxed);
	out->signals = atomic_load_explicit(&th->signals, memory_order_relaxed);
	return 0;
}
