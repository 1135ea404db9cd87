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
 *   - any other thread is asked for a copy of its stack with the
 *     sampling signal (sample_signal.c, rt/rt_signal.c).
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

#include "calls.h"
#include "sampler_int.h"
#include "unwind.h"
#include "../codec/wire.h"

/* The share of the interval one tick may spend waiting for all threads. */
#define TICK_WAIT_SHARE 1       /* the whole interval */

struct rtprof__unwinder *rtprof__sampler_unw;

/* Sampler-thread state (only the sampler thread touches these). */
static int64_t *ctr_last;       /* last user counter value written */
static uint32_t ctr_last_n;
static uint64_t self_mem_last;
static uint64_t rss_mono;       /* when RSS was last read (MONOTONIC ns) */

#define RSS_PERIOD_NS 10000000
/* The tick period when the kernel samples every thread (perf events):
 * its rings hold the samples meanwhile (core/sample_perf.c). */
#define BATCH_NS 5000000
/* How long a registering thread waits for its perf events. */
#define JOIN_WAIT_MS 50

/* @th's first tick in session @gen. Context: sampler thread, lock held. */
static void
session_reset(const rtprof_lock *lk, struct rtprof__thread *th, uint32_t gen,
    int64_t cpu)
{
	rtprof__sampler_forget(lk, th); /* asked in an earlier session */
	rtprof__perf_detach(lk, th);
	th->s_gen = gen;
	th->s_perf_gen = 0;
	th->s_has_stack = 0;
	th->s_cpu_last = (uint64_t)cpu;
	th->s_mono_last = 0;
	th->s_misses = 0;
	th->s_skip = 0;
}

/*
 * @th's sample of this tick: by the perf-event path when it has events
 * (opened at its first tick of the session, or after a pause), else by
 * labels or the signal path. Return: 1 when it needs the next tick one
 * interval from now (labels or signal), 0 when the kernel samples it.
 * Context: sampler thread, lock held.
 */
static int
sample_thread(const rtprof_lock *lk, struct rtprof__thread *th, uint32_t gen,
    uint64_t interval_ns, uint64_t deadline)
{
	unsigned flags = 0;
	int64_t cpu;
	uint64_t d, t, now, span;
	uint32_t sl, st;
	const struct rtprof__call *call;

	if (th->s_gen != gen)
		session_reset(lk, th, gen, rtprof__cpu_ns(th));
	if (th->s_perf == NULL && th->s_perf_gen != gen) {
		th->s_perf_gen = gen;
		rtprof__perf_attach(lk, th, interval_ns);
	}
	if (rtprof__perf_tick(lk, th, rtprof__mono_ns(), interval_ns))
		return 0;
	cpu = rtprof__cpu_ns(th);
	if (cpu < 0)
		return 1;
	now = rtprof__mono_ns();
	if (rtprof__sig_settle(lk, th, now))
		return 1;
	d = (uint64_t)cpu >= th->s_cpu_last ? (uint64_t)cpu - th->s_cpu_last : 0;
	th->s_cpu_last = (uint64_t)cpu;
	span = th->s_mono_last != 0 && now > th->s_mono_last ?
	    now - th->s_mono_last : 0;
	th->s_mono_last = now;
	sl = rtprof__sleep_observe(lk, th);
	st = RTPROF__SLEEP_STATE(sl);
	if (st != RTPROF__AWAKE)
		flags |= RTPROF_SAMPLE_ASLEEP;
	t = rtprof_now();
	atomic_fetch_add_explicit(&th->samples, 1, memory_order_relaxed);
	/*
	 * The sleep tri-state: a thread asleep and already sampled in this
	 * sleep has the stack of that sample: SAME, O(1). One that woke
	 * since (even to sleep again) gets a fresh sample.
	 */
	if (th->s_has_stack && st == RTPROF__ASLEEP_SAMPLED) {
		rtprof__rec_same(t, th->tid, d, flags);
		return 1;
	}
	/*
	 * Real-time threads, and declared sleepers in the first sample of
	 * a sleep: their labels, never interrupted. A real-time thread that
	 * used (almost) no CPU since its previous sample and is outside
	 * every label is waiting: Idle (inside a label it is not, whatever
	 * keeps it from running). A thread inside a wrapped call (core/calls.h)
	 * has the call's frame after its labels: it waits there, off CPU.
	 */
	if ((th->flags & RTPROF_THREAD_RT) || st != RTPROF__AWAKE) {
		call = rtprof__call_of(RTPROF__SLEEP_CALL(sl));
		rtprof__sample_labels(lk, th, t, d, flags | RTPROF_SAMPLE_LABELS,
		    d < span / 50 ? RTPROF_SAMPLE_ASLEEP : 0,
		    call != NULL ? call->blocked : NULL);
		return 1;
	}
	/*
	 * The signal path: a thread that used (almost) no CPU since its
	 * previous sample (under 2% of the time since: ticks are not evenly
	 * spaced) is not signalled, so a thread blocked in a call that never
	 * restarts (poll, nanosleep) is not interrupted again and again with
	 * EINTR: its previous stack is repeated.
	 */
	if (th->s_has_stack && d < span / 50) {
		rtprof__rec_same(t, th->tid, d, flags);
		return 1;
	}
	rtprof__sig_sample(lk, th, t, d, flags, now, deadline);
	return 1;
}

/*
 * Counters: the process's RSS at most every RSS_PERIOD_NS (a /proc read:
 * three system calls), the rest when they changed. Context: sampler, lock.
 */
static void
sample_counters(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	uint64_t t, m = rtprof__mono_ns();

	if (m - rss_mono >= RSS_PERIOD_NS) {
		uint64_t rss = rtprof__process_rss();

		rss_mono = m;
		/* The time after reading /proc (tens of us), right before
		 * the counters: a value set meanwhile is not shown early. */
		rtprof__rec_counter(rtprof_now(), RTPROF_COUNTER_PROCESS_MEMORY,
		    (int64_t)rss);
	}
	t = rtprof_now();
	if (c->memory != self_mem_last) {
		self_mem_last = c->memory;
		rtprof__rec_counter(t, RTPROF_COUNTER_SELF_MEMORY, (int64_t)c->memory);
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
			rtprof__rec_counter(t, c->counters[i]->pub.id, v);
		}
	}
}

/*
 * One tick. Return: 1 when some thread needs the next tick one interval
 * from now. Context: sampler thread, lock held (taken at @t_lock0).
 */
static int
tick(const rtprof_lock *lk, uint32_t gen, uint64_t t_lock0, uint64_t m_lock0,
    uint64_t interval_ns)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	struct rtprof__thread *self = rtprof__tls.thread;
	uint64_t m1 = rtprof__mono_ns(), m2, m3;
	uint64_t v[4] = { m1 - m_lock0, 0, 0, 0 };
	uint64_t deadline = m1 + interval_ns / TICK_WAIT_SHARE;
	int fine = 0;

	rtprof__unwinder_tick(rtprof__sampler_unw);
	rtprof__perf_orphans(lk, 1);
	for (struct rtprof__thread *th = c->threads; th != NULL; th = th->next) {
		if (th->exited || th == self ||
		    (th->flags & RTPROF_THREAD_SAMPLER))
			continue;
		fine |= sample_thread(lk, th, gen, interval_ns, deadline);
		v[3]++;
	}
	m2 = rtprof__mono_ns();
	sample_counters(lk);
	m3 = rtprof__mono_ns();
	v[1] = m2 - m1;
	v[2] = m3 - m2;
	rtprof__rec_overhead(t_lock0, rtprof_now(), v);
	return fine;
}

/* The done_cv deadline JOIN_WAIT_MS from now (CLOCK_REALTIME). */
static void
join_deadline(struct timespec *dl)
{
	clock_gettime(CLOCK_REALTIME, dl);      /* done_cv's clock */
	dl->tv_nsec += JOIN_WAIT_MS * 1000000L;
	if (dl->tv_nsec >= 1000000000L) {
		dl->tv_sec++;
		dl->tv_nsec -= 1000000000L;
	}
}

/* Wait until the sampler tried @th's perf events, at most JOIN_WAIT_MS.
 * Context: @th registering, lock held (released while waiting). */
static void
join_wait(const rtprof_lock *lk, struct rtprof__thread *th,
    const struct rtprof__session *s)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	uint32_t gen = s->gen;  /* @s may be freed while the lock is not held */
	struct timespec dl;

	join_deadline(&dl);
	while (th->s_perf_gen != gen && c->running == s &&
	    pthread_cond_timedwait(&c->done_cv, &c->mu, &dl) == 0)
		;
}

/*
 * rtprof__sampler_await - a session that samples with perf events just
 * started: wait (at most JOIN_WAIT_MS) for the sampler's first tick, which
 * opens the registered threads' events, so that what they do from the
 * moment the start returns is sampled (a thread going to sleep at once
 * included: its stack is taken as it goes off CPU).
 * Context: the control thread starting @s, lock held (released while
 * waiting).
 */
void
rtprof__sampler_await(const rtprof_lock *lk, const struct rtprof__session *s)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	uint32_t gen = s->gen;  /* @s may be freed while the lock is not held */
	struct timespec dl;

	if (!c->sampler_started || !rtprof__perf_usable(lk) ||
	    s->set.sample_interval_us == RTPROF_SAMPLING_OFF)
		return;
	join_deadline(&dl);
	while (c->sampler_ticked != gen && c->running == s &&
	    pthread_cond_timedwait(&c->done_cv, &c->mu, &dl) == 0)
		;
}

/*
 * rtprof__sampler_join - @th registers while a session samples: its
 * sampling starts now (the sampler wakes to open its perf events, so a
 * thread that lives less than a tick is sampled too).
 * Context: @th itself, registering; lock held.
 */
void
rtprof__sampler_join(const rtprof_lock *lk, struct rtprof__thread *th)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	struct rtprof__session *s = c->running;

	/* The sampler thread itself registers while a session starts: it is
	 * never sampled, and must not wait for itself. */
	if (s == NULL || s->paused || !c->sampler_started ||
	    s->set.sample_interval_us == RTPROF_SAMPLING_OFF ||
	    (th->flags & RTPROF_THREAD_SAMPLER))
		return;
	session_reset(lk, th, s->gen, rtprof__cpu_ns(th));
	if (!rtprof__perf_wanted(lk, th))
		return;
	/* The sampler opens its events (in its own file table), now; the
	 * thread waits for that (at most JOIN_WAIT_MS), so that what it does
	 * next, going to sleep at once included, is sampled. */
	c->sampler_join = 1;
	pthread_cond_signal(&c->sampler_cv);
	join_wait(lk, th, s);
}
/* Open the events of threads that registered since the last tick.
 * Context: sampler thread, lock held. */
static void
attach_joined(const rtprof_lock *lk, uint32_t gen, uint64_t interval_ns)
{
	struct rtprof__core *c = rtprof__core_get(lk);

	c->sampler_join = 0;
	for (struct rtprof__thread *th = c->threads; th != NULL; th = th->next)
		if (!th->exited && th->s_gen == gen && th->s_perf == NULL &&
		    th->s_perf_gen != gen &&
		    !(th->flags & RTPROF_THREAD_SAMPLER)) {
			th->s_perf_gen = gen;
			rtprof__perf_attach(lk, th, interval_ns);
		}
	pthread_cond_broadcast(&c->done_cv);    /* join_wait() */
}

/* The session stopped or paused: every thread's events closed (what they
 * hold now has no session to go to). Context: sampler thread, lock held. */
static void
perf_stop_all(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);

	for (struct rtprof__thread *th = c->threads; th != NULL; th = th->next) {
		rtprof__perf_detach(lk, th);
		th->s_perf_gen = 0;
	}
	rtprof__perf_orphans(lk, 0);
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
	uint64_t slot = 0, fire = 0, step = 0;
	sigset_t all;

	(void)arg;
	/* Every signal blocked: it is never sampled, and the program's
	 * handlers never run on it. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_setname_np(pthread_self(), "rtprof-sampler");
	/* A file table of its own: its perf events' descriptors are not the
	 * program's (close_range, dup2 over them cannot reach them) and take
	 * none of its numbers. */
	(void)rtprof__files_private(-1);
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
			rtprof__sig_forget_all();
			perf_stop_all(lk);
			pthread_cond_wait(&c->sampler_cv, &c->mu);
			continue;
		}
		now = rtprof__mono_ns();
		iv = s->set.sample_interval_us * 1000ull;
		if (s->gen != gen) {
			/* A session that stopped and one that started since
			 * the last wake: what the events of the last one hold
			 * (the orphans of threads that exited then, the live
			 * threads' rings) is that session's, which is closed:
			 * closed undrained, as at a stop, never written into
			 * this one (samples of threads it never announced). */
			perf_stop_all(lk);
			gen = s->gen;
			slot = now;
			step = iv;
			fire = slot + jitter(iv);
		}
		if (c->sampler_join)
			attach_joined(lk, gen, iv);
		if (now < fire) {
			ts_of(fire, &ts);
			pthread_cond_timedwait(&c->sampler_cv, &c->mu, &ts);
			continue;       /* re-check the session first */
		}
		/* The next slot; late past its end: the grid moves. */
		slot += step;
		if (slot + step <= now)
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
		/* Only threads the kernel samples: drain every BATCH_NS. */
		step = tick(lk, gen, t_lock0, m_lock0, iv) || iv >= BATCH_NS ?
		    iv : BATCH_NS;
		if (c->sampler_ticked != gen) {
			c->sampler_ticked = gen;
			pthread_cond_broadcast(&c->done_cv); /* _await() */
		}
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
	pthread_condattr_t ca;
	char why[320];
	int rc;

	/* How it samples, decided here: a refusal is said on this thread's
	 * stderr (the program's; the writer's and the sampler's are not). */
	rtprof__perf_method(lk, why, sizeof(why));
	if (c->sampler_started)
		return 0;
	if (rtprof__unwinder_new(&rtprof__sampler_unw) != 0)
		return -ENOMEM;
	rc = rtprof__sig_setup(lk);
	if (rc != 0) {
		rtprof__unwinder_free(rtprof__sampler_unw);
		rtprof__sampler_unw = NULL;
		return rc;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->sampler_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (rtprof__own_thread_create(&c->sampler, NULL, sampler_main,
	    NULL) != 0) {
		pthread_cond_destroy(&c->sampler_cv);
		rtprof__sig_teardown(lk);
		rtprof__unwinder_free(rtprof__sampler_unw);
		rtprof__sampler_unw = NULL;
		return -EAGAIN;
	}
	c->sampler_started = 1;
	return 0;
}

/* Context: any non-RT thread, lock held: the session changed. */
void
rtprof__sampler_kick(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);

	if (c->sampler_started)
		pthread_cond_signal(&c->sampler_cv);
}
