/*
 * sampler.c - the sampler thread: stacks, CPU time, counters, own cost.
 *
 * One thread, started with the first session that samples and kept for the
 * process's life (like the writer). While a session runs and is not paused
 * it ticks once in every sample_interval_us of CLOCK_MONOTONIC, at a random
 * point of it (sampler_main: no periodic workload stays in step with the
 * ticks), without catching up when late (a late tick moves the grid), and for
 * every registered thread under the core lock (which keeps thread records
 * alive: a thread that unregistered is never signalled):
 *   - reads the thread's CPU clock: CPU ns since its previous sample;
 *   - a thread that declared itself asleep (rtprof_thread_sleep; the
 *     tri-state of lessons.md), or that used under 2% of a tick of CPU
 *     since its previous sample, gets a SAME record: no signal, no
 *     unwind, no buffer search, O(1). Such a thread is never signalled,
 *     so a thread blocked in a call that is not restarted after a
 *     signal (poll, nanosleep) is not woken with EINTR again and again;
 *   - a real-time thread (RTPROF_THREAD_RT), or a declared sleeper not
 *     sampled yet, gets a label-only SAMPLE read under its ck_sequence:
 *     it is never interrupted;
 *   - any other thread is asked for a copy of its stack with SIGPROF
 *     (rt/rt_signal.c); the copy is unwound here (core/unwind.c) and merged
 *     with the labels by stack address into one SAMPLE record. A thread
 *     that waits for a CPU answers only when it is scheduled, often a time
 *     slice later: its request stays asked in one of a few slots and the
 *     sampler goes on; at a later tick the answer becomes the sample of
 *     the tick that asked (the thread has not run since: its stack then
 *     is the one it had). Meanwhile the thread gets no other sample. A
 *     thread that blocks the signal, or that has not answered after
 *     PENDING_MAX_NS, or a request for which no slot is free, gets a
 *     sample without native frames (flag NO_NATIVE); one that blocks the
 *     signal is asked less often after that.
 * Then the counters (process RSS, the profiler's memory, user counters that
 * changed) as COUNTER records, and one OVERHEAD record with the tick's own
 * cost. Records go into the sampler's own SPSC chunk buffer: it is a
 * registered thread (RTPROF_THREAD_SAMPLER) whose records name the thread
 * they describe (docs/wire-format.md, "Samples").
 *
 * Context: the sampler thread, except rtprof__sampler_ensure/kick (a
 * control thread with the lock held).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "unwind.h"
#include "../codec/wire.h"

/*
 * How long the sampler waits for a thread's handler before it goes on to
 * the next thread (leaving the request asked), and the share of the
 * interval one tick may spend waiting for all threads; how long a request
 * may stay asked before the sampler gives up on it, and how much CPU a
 * thread that has not answered may use before its blocked signal counts.
 */
#define SAMPLE_WAIT_NS 2000000
#define TICK_WAIT_SHARE 1       /* the whole interval */
#define PENDING_MAX_NS 200000000
#define MASK_CPU_NS 1000000
#define REQS_BYTES ((RTPROF__SAMPLE_SLOTS * sizeof(struct rtprof__sample_req) \
    + 63) & ~(size_t)63)

/* Sampler-thread state (only the sampler thread touches these; the slots
 * also an unregistering thread, in rtprof__sampler_forget: both with the
 * core lock held). */
static struct rtprof__sample_req *reqs;          /* RTPROF__SAMPLE_SLOTS */
static struct rtprof__thread *slot_of[RTPROF__SAMPLE_SLOTS];
static struct rtprof__unwinder *unw;
static uint64_t req_seq;
static int64_t *ctr_last;       /* last user counter value written */
static uint32_t ctr_last_n;
static uint64_t self_mem_last;

/* ------------------------------------------------------------------ */
/* Records, written into the sampler's own buffer (rtprof.h fast path).  */

/* Context: sampler thread. */
static void
rec_counter(uint64_t t, uint16_t id, int64_t v)
{
	unsigned char *p = rtprof__open(23);

	if (p == NULL)
		return;
	p[0] = 0x94;
	p[1] = RTPROF__REC_COUNTER;
	p = rtprof__put_u64(p + 2, 0xcf, t);
	p = rtprof__put_u16(p, id);
	p = rtprof__put_u64(p, 0xd3, (uint64_t)v);
	rtprof__close(p);
}

/* Context: sampler thread. */
static void
rec_same(uint64_t t, pid_t tid, uint64_t cpu, unsigned flags)
{
	unsigned char *p = rtprof__open(30);

	if (p == NULL)
		return;
	p[0] = 0x95;
	p[1] = RTPROF_REC_SAME;
	p = rtprof__put_u64(p + 2, 0xcf, t);
	p = rtprof__put_u64(p, 0xd3, (uint64_t)(int64_t)tid);
	p = rtprof__put_u64(p, 0xcf, cpu);
	p[0] = (unsigned char)flags;
	rtprof__close(p + 1);
}

/*
 * One SAMPLE: @frames outermost first, @is_label[i] set for labels.
 * Context: sampler thread.
 */
static void
rec_sample(uint64_t t, pid_t tid, uint64_t cpu, unsigned flags,
    const uint64_t *frames, const unsigned char *is_label, unsigned n)
{
	unsigned char *p = rtprof__open(32 + (size_t)n * 10);
	unsigned arr = 5 + n;

	if (p == NULL)
		return;
	p[0] = 0xdc;
	p[1] = (unsigned char)(arr >> 8);
	p[2] = (unsigned char)arr;
	p[3] = RTPROF_REC_SAMPLE;
	p = rtprof__put_u64(p + 4, 0xcf, t);
	p = rtprof__put_u64(p, 0xd3, (uint64_t)(int64_t)tid);
	p = rtprof__put_u64(p, 0xcf, cpu);
	*p++ = (unsigned char)flags;
	for (unsigned i = 0; i < n; i++)
		p = is_label[i] ? rtprof__put_ptr(p,
		    (const void *)(uintptr_t)frames[i]) :
		    rtprof__put_u64(p, 0xcf, frames[i]);
	rtprof__close(p);
}

/* Context: sampler thread. */
static void
rec_overhead(uint64_t t0, uint64_t t1, const uint64_t v[4])
{
	unsigned char *p = rtprof__open(2 + 6 * 9);

	if (p == NULL)
		return;
	p[0] = 0x97;
	p[1] = RTPROF_REC_OVERHEAD;
	p = rtprof__put_u64(p + 2, 0xcf, t0);
	p = rtprof__put_u64(p, 0xcf, t1);
	for (int i = 0; i < 4; i++)
		p = rtprof__put_u64(p, 0xcf, v[i]);
	rtprof__close(p);
}

/* ------------------------------------------------------------------ */
/* One thread                                                           */

/*
 * The slot of @th's request still asked from an earlier tick, or NULL (at
 * most one is @th's). Context: sampler thread or @th unregistering, lock
 * held.
 */
static struct rtprof__sample_req *
pending(const struct rtprof__thread *th)
{
	for (int i = 0; reqs != NULL && i < RTPROF__SAMPLE_SLOTS; i++)
		if (slot_of[i] == th)
			return &reqs[i];
	return NULL;
}

/*
 * Withdraw @rq. Return: 1 when no handler answers it any more, 0 when the
 * handler has it (claimed or done: it finishes, bounded; wait for DONE
 * with done_wait()). Context: as pending().
 */
static int
withdraw(struct rtprof__sample_req *rq)
{
	uint64_t st = atomic_load_explicit(&rq->state, memory_order_acquire);

	if ((st & 3) != RTPROF__REQ_ASKED)
		return (st & 3) == RTPROF__REQ_IDLE;
	return atomic_compare_exchange_strong_explicit(&rq->state, &st,
	    (st & ~(uint64_t)3) | RTPROF__REQ_IDLE, memory_order_acq_rel,
	    memory_order_acquire);
}

/* Wait for a claimed request's copy (bounded). Context: as pending(). */
static void
done_wait(struct rtprof__sample_req *rq)
{
	/* acquire: pairs with the handler's release of DONE. */
	while ((atomic_load_explicit(&rq->state, memory_order_acquire) & 3) !=
	    RTPROF__REQ_DONE) {
		struct timespec ts = { 0, 10000 };

		nanosleep(&ts, NULL);
	}
}

/* Free slot @rq (withdrawn or done). Context: as pending(). */
static void
slot_free(struct rtprof__sample_req *rq)
{
	atomic_store_explicit(&rq->state, 0, memory_order_relaxed);
	slot_of[rq - reqs] = NULL;
}

/*
 * Ask @th for a copy of its stack in a free slot. Return: the slot, with
 * the copy complete (DONE), or NULL: no slot was free, the thread is gone,
 * or it did not answer by the deadline, in which case its request stays
 * asked in its slot (pending()) for a later tick.
 * Context: sampler thread, lock held (keeps @th registered).
 */
static struct rtprof__sample_req *
ask(const rtprof_lock *lk, struct rtprof__thread *th, uint64_t deadline)
{
	struct rtprof__sample_req *rq = NULL;
	uint64_t seq = ++req_seq << 2, st, t0;
	int spins = 0;

	(void)lk;
	for (int i = 0; i < RTPROF__SAMPLE_SLOTS; i++)
		if (slot_of[i] == NULL) {
			rq = &reqs[i];
			break;
		}
	if (rq == NULL)
		return NULL;
	slot_of[rq - reqs] = th;
	atomic_store_explicit(&rq->target, th, memory_order_relaxed);
	/* release: `target` before the request; pairs with the handler's
	 * acquire load of `state`. */
	atomic_store_explicit(&rq->state, seq | RTPROF__REQ_ASKED,
	    memory_order_release);
	if (syscall(SYS_tgkill, (int)rtprof__sample_pid, (int)th->tid,
	    RTPROF__SAMPLE_SIGNAL) != 0) {
		withdraw(rq);   /* no signal: no handler can claim it */
		slot_free(rq);
		return NULL;
	}
	t0 = rtprof__mono_ns();
	for (;;) {
		/* acquire: pairs with the handler's release of DONE. */
		st = atomic_load_explicit(&rq->state, memory_order_acquire);
		if (st == (seq | RTPROF__REQ_DONE))
			return rq;
		if (st == (seq | RTPROF__REQ_ASKED) &&
		    (rtprof__mono_ns() - t0 > SAMPLE_WAIT_NS ||
		    rtprof__mono_ns() > deadline))
			return NULL;    /* still asked: a later tick sees */
		/*
		 * Claimed: the handler is copying (bounded); keep waiting.
		 * Spin briefly (delivery to a running thread takes ~10 us
		 * here), then sleep in short steps. Never sched_yield: under
		 * CFS a yielding sampler waits for the others' whole slices.
		 */
		if (++spins < 200) {
			ck_pr_stall();
		} else {
			struct timespec ts = { 0, 10000 };

			nanosleep(&ts, NULL);
		}
	}
}

/*
 * Merge the native frames (@ips/@sps innermost first) and the labels
 * (outermost first) into @out, outermost first. A label belongs to the
 * outermost frame whose stack pointer is at or below the stack pointer it
 * was pushed at (stacks grow down; push records its caller's SP).
 * Return: the number of frames.
 */
static unsigned
merge(const uint64_t *ips, const uint64_t *sps, int n, const char *const *lab,
    const uintptr_t *lsp, unsigned nl, uint64_t *out, unsigned char *is_label)
{
	unsigned k = 0, li = 0;

	for (int i = n - 1; i >= 0; i--) {
		out[k] = ips[i];
		is_label[k++] = 0;
		while (li < nl && lsp[li] >= sps[i]) {
			out[k] = (uint64_t)(uintptr_t)lab[li++];
			is_label[k++] = 1;
		}
	}
	while (li < nl) {
		out[k] = (uint64_t)(uintptr_t)lab[li++];
		is_label[k++] = 1;
	}
	return k;
}

/* Does thread @tid block SIGPROF? (/proc/self/task/TID/status, SigBlk) */
static int
blocks_signal(pid_t tid)
{
	char path[64], buf[2048];
	unsigned long long mask = 0;
	ssize_t n;
	int fd;
	const char *p;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strstr(buf, "SigBlk:");
	if (p == NULL || sscanf(p + 7, "%llx", &mask) != 1)
		return 0;
	return (mask >> (RTPROF__SAMPLE_SIGNAL - 1)) & 1;
}

/*
 * A thread that blocks SIGPROF would cost every tick the full wait: after
 * each miss in a row it is skipped for twice as many ticks, up to 1024. A
 * thread that was only slow to get a CPU (its handler runs when it is
 * scheduled) keeps its request for a later tick instead.
 * Context: sampler thread, lock held.
 */
static int
can_ask(struct rtprof__thread *th)
{
	if (th->s_skip == 0)
		return 1;
	th->s_skip--;
	return 0;
}

static void
back_off(struct rtprof__thread *th)
{
	if (th->s_misses < 10)
		th->s_misses++;
	th->s_skip = 1u << th->s_misses;
}

/* CPU ns used by @th so far, or -1 when its clock is gone. */
static int64_t
cpu_ns(const struct rtprof__thread *th)
{
	struct timespec ts;

	if (clock_gettime(th->cpu_clock, &ts) != 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * @th's SAMPLE at @t from the answer in @rq: its native frames merged with
 * the labels the handler copied. Context: sampler thread, lock held.
 */
static void
sample_native(struct rtprof__thread *th, const struct rtprof__sample_req *rq,
    uint64_t t, uint64_t d, unsigned flags)
{
	uint64_t frames[RTPROF_REC_MAX_FRAMES];
	unsigned char is_label[RTPROF_REC_MAX_FRAMES];
	uint64_t ips[RTPROF__MAX_NATIVE], sps[RTPROF__MAX_NATIVE];
	int trunc = 0, nn = rtprof__unwind(unw, rq, th->stack_lo,
	    th->stack_hi, ips, sps, RTPROF__MAX_NATIVE, &trunc);
	unsigned n;

	if (trunc)
		flags |= RTPROF_SAMPLE_TRUNCATED;
	if (nn == 0)
		flags |= RTPROF_SAMPLE_NO_NATIVE;
	n = merge(ips, sps, nn, rq->labels, rq->label_sp, rq->nlabels, frames,
	    is_label);
	rec_sample(t, th->tid, d, flags, frames, is_label, n);
	th->s_misses = 0;
	th->s_has_stack = 1;
}

/*
 * @th's SAMPLE at @t with its labels only, read under its ck_sequence
 * (@flags says why: LABELS or NO_NATIVE). Context: sampler thread, lock.
 */
static void
sample_labels(const rtprof_lock *lk, struct rtprof__thread *th, uint64_t t,
    uint64_t d, unsigned flags)
{
	uint64_t frames[RTPROF_MAX_LABELS];
	unsigned char is_label[RTPROF_MAX_LABELS];
	const char *labels[RTPROF_MAX_LABELS];
	int nl = rtprof__labels_read(lk, th, labels, RTPROF_MAX_LABELS);

	for (int i = 0; i < nl; i++) {
		frames[i] = (uint64_t)(uintptr_t)labels[i];
		is_label[i] = 1;
	}
	rec_sample(t, th->tid, d, flags, frames, is_label,
	    nl > 0 ? (unsigned)nl : 0);
	th->s_has_stack = 1;
}

/*
 * Drop @th's request still asked, if any (its session ended, or it
 * unregistered). Context: as pending().
 */
static void
forget(struct rtprof__thread *th)
{
	struct rtprof__sample_req *rq = pending(th);

	if (rq != NULL) {
		if (!withdraw(rq))
			done_wait(rq);
		slot_free(rq);
	}
}

/*
 * @th's request asked at an earlier tick (or just now): answered, its
 * SAMPLE with the time and CPU delta of the tick that asked (the thread
 * had not run since, or it would have answered: its stack is the one it
 * had then). Not answered after PENDING_MAX_NS, or by a thread that ran
 * MASK_CPU_NS meanwhile with the signal blocked: a sample with labels
 * only. (A thread that has not run can show the signal blocked too: one
 * preempted on its way out of the previous request's handler.)
 * Return: 1 while it stays asked (the thread gets no other sample
 * meanwhile). Context: sampler thread, lock held.
 */
static int
settle(const rtprof_lock *lk, struct rtprof__thread *th, uint64_t now)
{
	struct rtprof__sample_req *rq = pending(th);
	int64_t cpu;
	uint64_t st;
	int blocks = 0;

	if (rq == NULL)
		return 0;
	/* acquire: pairs with the handler's release of DONE. */
	st = atomic_load_explicit(&rq->state, memory_order_acquire);
	if ((st & 3) == RTPROF__REQ_ASKED) {
		cpu = cpu_ns(th);
		blocks = cpu >= 0 &&
		    (uint64_t)cpu - th->s_cpu_last >= MASK_CPU_NS &&
		    blocks_signal(th->tid);
		if (!blocks && now - th->s_mono_last < PENDING_MAX_NS)
			return 1;
	}
	/* Asked only of an awake thread: no flag but why it has no frames. */
	if (withdraw(rq)) {
		sample_labels(lk, th, th->s_ask_t, th->s_ask_cpu,
		    RTPROF_SAMPLE_NO_NATIVE);
		if (blocks)
			back_off(th);
	} else {
		done_wait(rq);
		sample_native(th, rq, th->s_ask_t, th->s_ask_cpu, 0);
	}
	slot_free(rq);
	return 0;
}

/* Context: sampler thread, lock held. */
static void
sample_thread(const rtprof_lock *lk, struct rtprof__thread *th, uint32_t gen,
    uint64_t deadline)
{
	struct rtprof__sample_req *rq;
	unsigned flags = 0;
	int64_t cpu = cpu_ns(th);
	uint64_t d, t, now, span;
	uint32_t sl;

	if (cpu < 0)
		return;
	if (th->s_gen != gen) {
		forget(th);     /* asked in an earlier session */
		th->s_gen = gen;
		th->s_has_stack = 0;
		th->s_cpu_last = (uint64_t)cpu;
		th->s_mono_last = 0;
		th->s_misses = 0;
		th->s_skip = 0;
	}
	now = rtprof__mono_ns();
	if (settle(lk, th, now))
		return;
	d = (uint64_t)cpu >= th->s_cpu_last ? (uint64_t)cpu - th->s_cpu_last : 0;
	th->s_cpu_last = (uint64_t)cpu;
	span = th->s_mono_last != 0 && now > th->s_mono_last ?
	    now - th->s_mono_last : 0;
	th->s_mono_last = now;
	sl = rtprof__sleep_observe(lk, th);
	if (sl != RTPROF__AWAKE)
		flags |= RTPROF_SAMPLE_ASLEEP;
	t = rtprof_now();
	atomic_fetch_add_explicit(&th->samples, 1, memory_order_relaxed);
	/*
	 * O(1), no signal: the thread declared itself asleep, or it used
	 * (almost) no CPU since its previous sample (under 2% of the time
	 * since: ticks are not evenly spaced): its stack is the one of that
	 * sample (or, asleep, the last one taken while it ran). A thread
	 * blocked in a call that never restarts (poll, nanosleep) is thus
	 * not interrupted again and again with EINTR.
	 */
	if (th->s_has_stack && (sl != RTPROF__AWAKE || d < span / 50)) {
		rec_same(t, th->tid, d, flags);
		return;
	}
	if ((th->flags & RTPROF_THREAD_RT) || sl != RTPROF__AWAKE) {
		sample_labels(lk, th, t, d, flags | RTPROF_SAMPLE_LABELS);
		return;
	}
	if (!can_ask(th)) {
		sample_labels(lk, th, t, d, flags | RTPROF_SAMPLE_NO_NATIVE);
		return;
	}
	rq = ask(lk, th, deadline);
	if (rq != NULL) {
		sample_native(th, rq, t, d, flags);
		slot_free(rq);
		return;
	}
	if (pending(th) == NULL) {      /* no free slot, or no such thread */
		sample_labels(lk, th, t, d, flags | RTPROF_SAMPLE_NO_NATIVE);
		return;
	}
	/* Not answered yet: settle() writes it, now if the thread ran with
	 * the signal blocked, else at a later tick. */
	th->s_ask_t = t;
	th->s_ask_cpu = d;
	settle(lk, th, now);
}

/*
 * Drop every request still asked (the session stopped or paused).
 * Context: sampler thread, lock held.
 */
static void
forget_all(void)
{
	for (int i = 0; i < RTPROF__SAMPLE_SLOTS; i++)
		if (slot_of[i] != NULL)
			forget(slot_of[i]);
}

/*
 * rtprof__sampler_forget - @th unregisters: its request still asked, if
 * any, is dropped, so that no thread later registered at the same address
 * answers it. Context: the owner thread, lock held.
 */
void
rtprof__sampler_forget(const rtprof_lock *lk, struct rtprof__thread *th)
{
	(void)lk;
	forget(th);
}

/* Counters: RSS every tick, the rest when changed. Context: sampler, lock. */
static void
sample_counters(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	uint64_t rss = rtprof__process_rss(), t = rtprof_now();

	/* The time after reading /proc (tens of us), right before the
	 * counters: a value set meanwhile is not shown early. */
	rec_counter(t, RTPROF_COUNTER_PROCESS_MEMORY, (int64_t)rss);
	if (c->memory != self_mem_last) {
		self_mem_last = c->memory;
		rec_counter(t, RTPROF_COUNTER_SELF_MEMORY, (int64_t)c->memory);
	}
	if (c->ncounters > ctr_last_n) {
		int64_t *n = realloc(ctr_last, c->ncounters * sizeof(*n));

		if (n == NULL)
			return;
		for (uint32_t i = ctr_last_n; i < c->ncounters; i++)
			n[i] = INT64_MIN;
		ctr_last = n;
		ctr_last_n = c->ncounters;
	}
	for (uint32_t i = 0; i < c->ncounters; i++) {
		int64_t v = __atomic_load_n(&c->counters[i]->pub.value,
		    __ATOMIC_RELAXED);

		if (v != ctr_last[i]) {
			ctr_last[i] = v;
			rec_counter(t, c->counters[i]->pub.id, v);
		}
	}
}

/* One tick. Context: sampler thread, lock held (taken at @t_lock0). */
static void
tick(const rtprof_lock *lk, uint32_t gen, uint64_t t_lock0, uint64_t m_lock0,
    uint64_t interval_ns)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	struct rtprof__thread *self = rtprof__tls.thread;
	uint64_t m1 = rtprof__mono_ns(), m2, m3;
	uint64_t v[4] = { m1 - m_lock0, 0, 0, 0 };
	uint64_t deadline = m1 + interval_ns / TICK_WAIT_SHARE;

	rtprof__unwinder_tick(unw);
	for (struct rtprof__thread *th = c->threads; th != NULL; th = th->next) {
		if (th->exited || th == self ||
		    (th->flags & RTPROF_THREAD_SAMPLER))
			continue;
		sample_thread(lk, th, gen, deadline);
		v[3]++;
	}
	m2 = rtprof__mono_ns();
	sample_counters(lk);
	m3 = rtprof__mono_ns();
	v[1] = m2 - m1;
	v[2] = m3 - m2;
	rec_overhead(t_lock0, rtprof_now(), v);
}

static void
ts_of(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / 1000000000u);
	ts->tv_nsec = (long)(ns % 1000000000u);
}

/*
 * A uniform random offset in [0, @span) (xorshift64*). Context: sampler.
 */
static uint64_t
jitter(uint64_t span)
{
	static uint64_t x;

	if (x == 0)
		x = rtprof__mono_ns() ^ ((uint64_t)getpid() << 32) ^ 1;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	return (uint64_t)((double)((x * 0x2545f4914f6cdd1dull) >> 11) /
	    9007199254740992.0 * (double)span);
}

/*
 * The tick loop. Time is cut into slots of one interval, and each slot
 * gets exactly one tick, at a random point in it (stratified sampling):
 * as many ticks as evenly spaced ones, but no periodic workload can stay
 * in step with them (a callback every 1 ms, or every 2.67 ms = 8 ticks
 * for 3 callbacks, would otherwise be sampled at a few fixed phases
 * only). A tick that ends past its next slot moves the grid, with no
 * catching up.
 */
static void *
sampler_main(void *arg)
{
	const rtprof_lock *lk;
	struct rtprof__core *c;
	uint32_t gen = 0;
	uint64_t slot = 0, fire = 0;
	sigset_t all;

	(void)arg;
	/* Every signal blocked: it is never sampled, and the program's
	 * handlers never run on it. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_setname_np(pthread_self(), "rtprof-sampler");
	/* 1 ns of timer slack (default 50 us): a 100 us interval means 10
	 * ticks per ms, not ~7.5 (bench/bench_sampler without SCHED_FIFO). */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	rtprof_thread_register("rtprof sampler", RTPROF_THREAD_SAMPLER);
	lk = rtprof__lock();
	c = rtprof__core_get(lk);
	for (;;) {
		struct rtprof__session *s = c->running;
		uint64_t now, t_lock0, m_lock0, iv;
		struct timespec ts;

		if (s == NULL || s->paused ||
		    s->set.sample_interval_us == RTPROF_SAMPLING_OFF) {
			gen = 0;
			forget_all();
			pthread_cond_wait(&c->sampler_cv, &c->mu);
			continue;
		}
		now = rtprof__mono_ns();
		iv = s->set.sample_interval_us * 1000ull;
		if (s->gen != gen) {
			gen = s->gen;
			slot = now;
			fire = slot + jitter(iv);
		}
		if (now < fire) {
			ts_of(fire, &ts);
			pthread_cond_timedwait(&c->sampler_cv, &c->mu, &ts);
			continue;       /* re-check the session first */
		}
		/* The next slot; late past its end: the grid moves. */
		slot += iv;
		if (slot + iv <= now)
			slot = now;
		fire = slot + jitter(iv);
		/* The lock's cost is part of the overhead: take it again. */
		rtprof__unlock(lk);
		t_lock0 = rtprof_now();
		m_lock0 = rtprof__mono_ns();
		lk = rtprof__lock();
		c = rtprof__core_get(lk);
		if (c->running != s || s->paused)
			continue;
		tick(lk, gen, t_lock0, m_lock0, iv);
	}
	return NULL;
}

/*
 * rtprof__sampler_ensure - start the sampler thread and install the
 * sampling signal handler, once.
 * Context: control thread, lock held. Return: 0, -ENOMEM or -EAGAIN.
 */
int
rtprof__sampler_ensure(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	struct sigaction sa;
	pthread_condattr_t ca;

	if (c->sampler_started)
		return 0;
	/* A fork child allocates its own (the parent's slots were copied
	 * with whatever the parent's sampler had asked). */
	reqs = aligned_alloc(64, REQS_BYTES);
	if (reqs == NULL)
		return -ENOMEM;
	memset(reqs, 0, REQS_BYTES);
	memset(slot_of, 0, sizeof(slot_of));
	if (rtprof__unwinder_new(&unw) != 0) {
		free(reqs);
		reqs = NULL;
		return -ENOMEM;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->sampler_cv, &ca);
	pthread_condattr_destroy(&ca);

	rtprof__sample_pid = getpid();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = rtprof__sample_handler;
	/* SA_RESTART: interrupted read/write and friends restart; calls that
	 * never restart (poll, nanosleep...) return EINTR, as with any
	 * signal-based profiler. The sampler signals a thread only when it
	 * used CPU since its previous sample, which keeps a thread blocked in
	 * one call from being interrupted again and again. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(RTPROF__SAMPLE_SIGNAL, &sa, &rtprof__sample_prev) != 0)
		goto fail;
	/* release: the request is set up before handlers can see it. */
	atomic_store_explicit(&rtprof__sample_req_ptr, reqs,
	    memory_order_release);
	c->memory += REQS_BYTES;
	if (pthread_create(&c->sampler, NULL, sampler_main, NULL) != 0) {
		atomic_store_explicit(&rtprof__sample_req_ptr, NULL,
		    memory_order_release);
		sigaction(RTPROF__SAMPLE_SIGNAL, &rtprof__sample_prev, NULL);
		c->memory -= REQS_BYTES;
		goto fail;
	}
	c->sampler_started = 1;
	return 0;
fail:
	pthread_cond_destroy(&c->sampler_cv);
	rtprof__unwinder_free(unw);
	unw = NULL;
	free(reqs);
	reqs = NULL;
	return -EAGAIN;
}

/* Context: any non-RT thread, lock held: the session changed. */
void
rtprof__sampler_kick(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);

	if (c->sampler_started)
		pthread_cond_signal(&c->sampler_cv);
}
