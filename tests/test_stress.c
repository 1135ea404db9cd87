/*
 * test_stress.c - many recording threads, thread churn and a control thread
 * that loops start/stop/pause/resume/dump, all writing one stream; then the
 * stream is decoded and every event is accounted for exactly.
 *
 * Usage: test_stress [threads [seconds [signals]]]
 *   threads  long-lived recording threads (default 8)
 *   seconds  recording time (default 5)
 *   signals  1: a signaller thread interrupts recording threads with SIGUSR1
 *            whose handler records too (re-entrant calls); 0: off (default 1)
 *
 * Environment: STRESS_SEED=n fixes the random choices (not the scheduling);
 * STRESS_SAVE=path keeps a copy of the stream.
 *
 * Threads:
 *   - N long-lived workers "wN" and a churner that keeps up to CHURN_MAX
 *     short-lived workers "sN" alive (each records a quota; some unregister
 *     and register again on the same thread; now and then the churner
 *     declares a new marker type while sessions run and a child records
 *     with it). Every worker records typed markers (types with two U64
 *     fields: its logical id and a per-registration sequence number; a
 *     "stressfat" type adds a copied string so that chunks fill after a few
 *     records), marks, begin/end, counter adds and sleep/wake, in bursts
 *     separated by spins, sleeps and yields, and counts its own attempts
 *     per kind.
 *   - control: start (random settings: stream/flight, 4 or 8 KiB chunks,
 *     memory limits below threads * prefill that force drops, a limit below
 *     one chunk, 64 KiB chunks), pause/resume, dump, stop, and the error
 *     returns of each in the wrong state; all sessions append to ONE memfd
 *     (O_APPEND).
 *   - observer: rtprof_session_dump() and rtprof_session_status_get() at
 *     random moments, racing the control thread.
 *   - signaller (signals=1): SIGUSR1 to long-lived workers; the churner
 *     signals its own children. The handler calls rtprof_mark("sig").
 *
 * Exactness of the per-thread statistics. `late` is counted by the writer
 * when a stale chunk comes back, so a thread may only read its statistics
 * once (1) every chunk it ever filled has been handed back and drained and
 * (2) no session it recorded into can still take records of it. quiesce()
 * guarantees both before the thread reads its stats and exits:
 *   A. With the control lock held (the session state cannot change), once a
 *      session newer than any the thread recorded into has been started and
 *      stopped, the thread makes one more recording call: the state word has
 *      another generation than its current chunk, so the slow path retires
 *      the chunk (full ring) and, not running, counts the call as `outside`
 *      (checked) and takes no new chunk. The thread now holds no chunk.
 *      (Just calling once after the final stop is NOT enough: the state word
 *      after a stop keeps the generation, so a chunk of the last session is
 *      not retired, and records committed into it after its close snapshot
 *      would be counted late only at thread exit, after the stats read.)
 *   B. The thread does an acq_rel RMW on stop_begun (reads b), then waits
 *      for stop_done >= b + 1. Stop b + 1 began after that RMW (the control
 *      thread's RMW synchronises with ours), so its closing collect drains
 *      our full ring; every session we recorded into is DONE by then, so each
 *      record is decoded, recycled or counted late, and the control thread's
 *      release of stop_done makes the writer's counts visible to us.
 * Signals are blocked before A. So for every registration:
 *   attempts == decoded + dropped_full + dropped_nested + outside + late
 *               + recycled
 * (recycled: flight-recorder sessions overwrite their oldest chunks; it is
 * zero for stream sessions.) Statistics are summed per kernel tid (a tid can
 * be reused by a later thread, and re-registration keeps the tid): the dump
 * identifies threads by tid only.
 *
 * Time bounds (ticks of the session clock; slack = 50 us: rdtsc is not a
 * serialising instruction, and on this VM the two vCPUs' TSCs differ by up
 * to ~4 us (measured: a thread that migrates sees its clock step back by
 * that much, about 1 run in 16), so one thread's records are in time order
 * only up to that skew):
 *   - Upper: every record of session S has ts <= close_ticks(S) + slack,
 *     where close_ticks(S) is the tick stamp of S's last VALUES frame, which
 *     the writer takes right after the closing snapshot of S. A record's
 *     clock is read before it is committed, and a record is in S only if
 *     its commit was seen by that snapshot (or by an earlier drain). The
 *     trailer's stop_ticks is NOT an upper bound: stop reads the clock
 *     before it publishes the stopped state, and a thread that passed its
 *     state check just before the publish may read its clock (counter,
 *     sleep/wake) or commit arbitrarily later if preempted; no fixed slack
 *     over stop_ticks is exact. How far records go past stop_ticks is
 *     printed.
 *   - Lower: records whose clock is read after the state check (counter,
 *     sleep, wake) have ts >= start_ticks(S) - slack: start reads its clock
 *     before the release store the check acquired. Records whose clock is
 *     read by the caller before the call (mark, begin, end, typed: the
 *     caller's timestamp) have no lower bound from S: the caller may be
 *     preempted between reading the clock and the state check across any
 *     number of sessions. For typed markers the thread keeps the clock
 *     after the call returned (post) and the test checks
 *     post >= start_ticks(S) - slack instead; the others are counted
 *     ("early") and printed.
 *   - No loss: a typed marker committed by a call that lies entirely inside
 *     [t_started(S), stop_ticks(S)] (t_started: clock read after start
 *     returned) passed its state check while S was running and committed
 *     before stop was published, so it must be in S ("every event recorded
 *     before the stop is written"), unless S is a flight recorder that
 *     recycled records of that thread.
 * Other checks: no damage in the stream, one session per start with
 * consecutive generations, DATA frames only inside their own session with
 * the session's generation, the trailer's per-thread `recorded` equals the
 * records decoded for that tid in that session, recycled and drop totals
 * agree with the statistics, every (logical id, seq) typed marker at most
 * once, only markers whose open succeeded, in strictly increasing seq
 * order, under the tid that recorded them, with a SCHEMA frame and the
 * THREAD frame's name, and each thread's records (except those of signal
 * handlers) in time order.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "testutil.h"
#include "dumpmodel.h"
#include "rtprof.h"

#define MAX_REGS (1u << 16)
#define MAX_LONG 64
#define CHURN_MAX 4
#define MAX_SESSIONS 100000
#define MAX_TYPES 24

/* ------------------------------------------------------------------ */
/* Small helpers                                                        */

static uint64_t
ns_between(const struct timespec *a, const struct timespec *b)
{
	return (uint64_t)((b->tv_sec - a->tv_sec) * 1000000000 +
	    (b->tv_nsec - a->tv_nsec));
}

/* ------------------------------------------------------------------ */
/* Shared state of the run                                              */

/* One registration of a thread: the unit of exact accounting. */
struct reg {
	uint32_t id;                    /* logical id = index in regs[] */
	pid_t tid;
	char name[16];
	const rtprof_marker_type *type;
	/* Attempts per kind; written by the owner thread only. */
	uint64_t n_typed, n_mark, n_begin, n_end, n_counter, n_sleep, n_wake;
	uint64_t n_sig;                 /* by the signal handler (__atomic) */
	uint64_t typed_committed;
	uint8_t *committed;             /* bit per seq: open succeeded */
	uint64_t *pre, *post;           /* clock before / after the call */
	size_t cap;
	struct rtprof_thread_stats st;  /* read in quiesce() */
	int stats_ok;
	/* Decoding side (main thread). */
	uint8_t *seen;
	int64_t last_seq;
	uint32_t *seq_sess;             /* session index + 1 where decoded */
	uint64_t decoded_typed;
};

static struct reg *regs[MAX_REGS];
static atomic_uint nregs;

static int nlong = 8;
static int seconds = 5;
static int use_signals = 1;
static uint64_t base_seed;

static atomic_int time_up;
static atomic_int workers_alive;
static atomic_int churner_done;
static atomic_int control_done;
static atomic_int signaller_stop;

/* Control state, under ctl_mu (the session state only changes with it). */
static pthread_mutex_t ctl_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t ctl_started;    /* sessions started */
static int ctl_running;
static atomic_uint_fast64_t stop_begun, stop_done;

/* Per session, filled by the control thread, read after it is joined. */
struct sess_info {
	uint64_t t_started;     /* clock read after rtprof_session_start returned */
	int mode;
};
static struct sess_info *sess;
static uint64_t nsess;
static uint64_t n_pauses, n_dumps, n_obs_dumps, n_ebusy;
/* Time spent in rtprof_session_start(), _stop(), and running (ns). */
static uint64_t start_ns, stop_ns, run_ns;

static const rtprof_marker_type *types[MAX_TYPES];
static const rtprof_marker_type *fat_type;
static atomic_int ntypes;
static rtprof_counter *ctr;

static __thread struct reg *sig_reg;

/* ------------------------------------------------------------------ */
/* Recording                                                            */

static struct reg *
reg_new(const char *prefix, const rtprof_marker_type *type)
{
	unsigned id = atomic_fetch_add(&nregs, 1);
	struct reg *r;

	RTPROF_CHECK(id < MAX_REGS);
	r = calloc(1, sizeof(*r));
	RTPROF_CHECK(r != NULL);
	r->id = id;
	r->type = type;
	r->last_seq = -1;
	snprintf(r->name, sizeof(r->name), "%s%u", prefix, id);
	regs[id] = r;
	return r;
}

static void
reg_grow(struct reg *r)
{
	size_t ncap = r->cap ? r->cap * 2 : 4096;

	r->pre = realloc(r->pre, ncap * sizeof(*r->pre));
	r->post = realloc(r->post, ncap * sizeof(*r->post));
	r->committed = realloc(r->committed, ncap / 8);
	RTPROF_CHECK(r->pre && r->post && r->committed);
	memset(r->committed + r->cap / 8, 0, (ncap - r->cap) / 8);
	r->cap = ncap;
}

static const char pad[RTPROF_MAX_STRING] =
    "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"
    "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"
    "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz";

/*
 * A typed marker; @fat: of the "stressfat" type, whose third field is a
 * copied string of up to 200 bytes, so that chunks fill (and are handed
 * back and replaced) after a few records. Both types share the sequence.
 * Returns 1 when the marker was committed.
 */
static int
rec_typed(struct reg *r, int fat)
{
	uint64_t seq = r->n_typed++, pre;
	rtprof_rec rec;
	int ok = 0;

	if (seq >= r->cap)
		reg_grow(r);
	pre = rtprof_now();
	if (rtprof_marker_open(&rec, fat ? fat_type : r->type,
	    RTPROF_PHASE_INSTANT, pre, 0)) {
		rtprof_put_u64(&rec, r->id);
		rtprof_put_u64(&rec, seq);
		if (fat)
			rtprof_put_str(&rec, pad, 8 + seq % 193);
		rtprof_marker_close(&rec);
		ok = 1;
	}
	r->post[seq] = rtprof_now();
	r->pre[seq] = pre;
	if (ok) {
		r->committed[seq / 8] |= (uint8_t)(1u << (seq % 8));
		r->typed_committed++;
	}
	return ok;
}

static void
rec_one(struct reg *r, struct rng *g)
{
	unsigned k = rng_next(g) % 100;

	if (k < 30) {
		rec_typed(r, 0);
	} else if (k < 40) {
		rec_typed(r, 1);
	} else if (k < 55) {
		r->n_mark++;
		rtprof_mark("mark", RTPROF_CAT_USER);
	} else if (k < 70) {
		r->n_begin++;
		rtprof_begin("span", RTPROF_CAT_COMPUTE);
		if (k & 1)
			rec_typed(r, 0);
		r->n_end++;
		rtprof_end("span", RTPROF_CAT_COMPUTE);
	} else if (k < 85) {
		r->n_counter++;
		rtprof_counter_add(ctr, 1);
	} else {
		r->n_sleep++;
		rtprof_thread_sleep();
		r->n_wake++;
		rtprof_thread_wake();
	}
}

/* Bursts of events; quota 0: until time is up. */
static void
work(struct reg *r, struct rng *g, uint64_t quota)
{
	uint64_t done = 0;

	while (!atomic_load_explicit(&time_up, memory_order_relaxed) &&
	    (quota == 0 || done < quota)) {
		unsigned burst = 1 + rng_next(g) % 16, p;

		if (rng_next(g) % 64 == 0)
			burst = 1500; /* fills several chunks in a row */
		for (unsigned i = 0; i < burst; i++)
			rec_one(r, g);
		done += burst;
		/* The pauses bound the volume (the model of the dump keeps
		 * every record in memory); the spins keep more threads
		 * runnable than there are CPUs, so threads are preempted at
		 * any point, also inside the library. */
		p = rng_next(g) % 10;
		if (p < 5)
			spin_us(rng_next(g) % 6000);
		else if (p < 9)
			sleep_us(rng_next(g) % 6000);
		else
			sched_yield();
	}
}

static void
on_sigusr1(int sig)
{
	int e = errno;
	struct reg *r = sig_reg;

	(void)sig;
	if (r != NULL) {
		__atomic_fetch_add(&r->n_sig, 1, __ATOMIC_RELAXED);
		rtprof_mark("sig", RTPROF_CAT_OTHER);
	}
	errno = e;
}

static void
sigusr1_mask(int how)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	RTPROF_CHECK_EQ(pthread_sigmask(how, &set, NULL), 0);
}

static void
reg_register(struct reg *r, unsigned flags)
{
	RTPROF_CHECK_EQ(rtprof_thread_register(r->name, flags), 0);
	RTPROF_CHECK_EQ(rtprof_thread_register(r->name, flags), -EEXIST);
	r->tid = gettid_();
	if (use_signals) {
		sig_reg = r;
		sigusr1_mask(SIG_UNBLOCK);
	}
}

/*
 * quiesce - make the registration's statistics final (see the top of the
 * file), then read them. Context: the registered thread, done recording.
 */
static void
quiesce(struct reg *r)
{
	struct rtprof_thread_stats s0, s1;
	uint64_t a, b, c0;

	sigusr1_mask(SIG_BLOCK);
	sig_reg = NULL;

	/* A: hand back the current chunk in a frozen, stopped state of a
	 * newer generation than any chunk of ours. */
	pthread_mutex_lock(&ctl_mu);
	a = ctl_started;
	pthread_mutex_unlock(&ctl_mu);
	for (;;) {
		pthread_mutex_lock(&ctl_mu);
		if (ctl_started > a && !ctl_running)
			break;
		pthread_mutex_unlock(&ctl_mu);
		sleep_us(300);
	}
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&s0), 0);
	c0 = r->typed_committed;
	RTPROF_CHECK_EQ(rec_typed(r, 0), 0);
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&s1), 0);
	pthread_mutex_unlock(&ctl_mu);
	RTPROF_CHECK_EQ(s1.outside, s0.outside + 1);
	RTPROF_CHECK_EQ(s1.dropped_full, s0.dropped_full);
	RTPROF_CHECK_EQ(s1.dropped_nested, s0.dropped_nested);
	RTPROF_CHECK_EQ(r->typed_committed, c0);

	/* B: wait for a whole stop that began after A. */
	b = atomic_fetch_add_explicit(&stop_begun, 0, memory_order_acq_rel);
	while (atomic_load_explicit(&stop_done, memory_order_acquire) < b + 1)
		sleep_us(300);
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&r->st), 0);
	r->stats_ok = 1;
}

static void *
long_main(void *arg)
{
	struct reg *r = arg;
	struct rng g;

	rng_seed(&g, base_seed + r->id);
	reg_register(r, r->id % 3 == 0 ? RTPROF_THREAD_RT : 0);
	work(r, &g, 0);
	quiesce(r);
	atomic_fetch_sub_explicit(&workers_alive, 1, memory_order_release);
	return NULL;
}

struct child {
	pthread_t t;
	struct reg *r;
	atomic_int done;
	int used;
};

static void *
child_main(void *arg)
{
	struct child *ch = arg;
	struct reg *r = ch->r;
	struct rng g;
	unsigned mode;

	rng_seed(&g, base_seed ^ ((uint64_t)r->id << 32));
	mode = rng_next(&g) % 4;
	reg_register(r, 0);
	work(r, &g, 1 + rng_next(&g) % 3000);
	quiesce(r);
	if (mode == 0) {
		/* Register again on the same thread: a new registration with
		 * the same tid (the dump cannot tell them apart). */
		struct reg *r2 = reg_new("s", r->type);

		RTPROF_CHECK_EQ(rtprof_thread_unregister(), 0);
		RTPROF_CHECK_EQ(rtprof_thread_unregister(), -ENOENT);
		RTPROF_CHECK_EQ(rtprof_thread_stats_get(&r2->st), -ENOENT);
		snprintf(r2->name, sizeof(r2->name), "%s", r->name);
		reg_register(r2, 0);
		work(r2, &g, 1 + rng_next(&g) % 1000);
		quiesce(r2);
	}
	if (mode == 1)
		RTPROF_CHECK_EQ(rtprof_thread_unregister(), 0);
	/* Otherwise the thread-exit destructor unregisters. */
	atomic_store_explicit(&ch->done, 1, memory_order_release);
	atomic_fetch_sub_explicit(&workers_alive, 1, memory_order_release);
	return NULL;
}

static const rtprof_marker_type *
declare_type(int i)
{
	struct rtprof_marker_schema sc;
	char name[32];
	const rtprof_marker_type *t;

	memset(&sc, 0, sizeof(sc));
	if (i < 0)
		snprintf(name, sizeof(name), "stressfat");
	else
		snprintf(name, sizeof(name), "stress%d", i);
	sc.name = name;
	sc.category = RTPROF_CAT_USER;
	sc.tooltip_label = "{marker.data.id}/{marker.data.seq}";
	sc.nfields = 2;
	sc.fields[0].key = "id";
	sc.fields[0].format = "integer";
	sc.fields[0].kind = RTPROF_FIELD_U64;
	sc.fields[1].key = "seq";
	sc.fields[1].format = "integer";
	sc.fields[1].kind = RTPROF_FIELD_U64;
	if (i < 0) {
		sc.nfields = 3;
		sc.fields[2].key = "pad";
		sc.fields[2].format = "string";
		sc.fields[2].kind = RTPROF_FIELD_STR;
	}
	t = rtprof_marker_type_declare(&sc);
	RTPROF_CHECK(t != NULL);
	RTPROF_CHECK_EQ(t->nfields, sc.nfields);
	return t;
}

static void *
churner_main(void *arg)
{
	struct child kids[CHURN_MAX];
	struct rng g;
	int spawned = 0;

	(void)arg;
	memset(kids, 0, sizeof(kids));
	rng_seed(&g, base_seed ^ 0xC0FFEE);
	while (!atomic_load(&time_up)) {
		for (int i = 0; i < CHURN_MAX; i++) {
			struct child *ch = &kids[i];
			const rtprof_marker_type *t;

			if (ch->used && atomic_load_explicit(&ch->done, memory_order_acquire)) {
				RTPROF_CHECK_EQ(pthread_join(ch->t, NULL), 0);
				ch->used = 0;
			}
			if (ch->used)
				continue;
			/* Now and then a new marker type, declared while
			 * sessions run; the child records with it. */
			if (spawned % 16 == 15 && atomic_load(&ntypes) < MAX_TYPES) {
				int n = atomic_load(&ntypes);

				types[n] = declare_type(n);
				atomic_store(&ntypes, n + 1);
			}
			t = types[rng_next(&g) % (unsigned)atomic_load(&ntypes)];
			ch->r = reg_new("s", t);
			atomic_store(&ch->done, 0);
			ch->used = 1;
			atomic_fetch_add(&workers_alive, 1);
			RTPROF_CHECK_EQ(pthread_create(&ch->t, NULL, child_main, ch), 0);
			spawned++;
		}
		if (use_signals) {
			struct child *ch = &kids[rng_next(&g) % CHURN_MAX];

			/* A child that returned but is not joined yet is
			 * still a valid target (ESRCH at worst). */
			if (ch->used)
				pthread_kill(ch->t, SIGUSR1);
		}
		sleep_us(100 + rng_next(&g) % 900);
	}
	for (int i = 0; i < CHURN_MAX; i++)
		if (kids[i].used)
			RTPROF_CHECK_EQ(pthread_join(kids[i].t, NULL), 0);
	atomic_store(&churner_done, 1);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Control, observer, signaller                                         */

static int sink_fd = -1;

static void
pick_settings(struct rng *g, struct rtprof_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->struct_size = sizeof(*s);
	s->fd = sink_fd;
	s->flush_interval_us = 500 + rng_next(g) % 20000;
	/* Half the sessions sample (fast: 100 us to 1 ms), so the sampler's
	 * signals and its reads of registering and exiting threads run
	 * against the churn; its own records compete for the same chunks. */
	s->sample_interval_us = rng_next(g) % 2 ? RTPROF_SAMPLING_OFF :
	    100 + (uint32_t)(rng_next(g) % 900);
	switch (rng_next(g) % 8) {
	case 0:
	case 1: /* stream, roomy */
		s->mode = RTPROF_MODE_STREAM;
		s->chunk_size = 4096;
		s->memory_limit = 1u << 20;
		break;
	case 2:
	case 3: /* stream, fewer chunks than threads * prefill: drops */
		s->mode = RTPROF_MODE_STREAM;
		s->chunk_size = 4096;
		s->memory_limit = 10 * 4096 + rng_next(g) % (20 * 4096);
		s->prefill = 1 + rng_next(g) % 3;
		break;
	case 4: /* flight recorder, small: recycling */
		s->mode = RTPROF_MODE_FLIGHT_RECORDER;
		s->chunk_size = 4096;
		s->memory_limit = 12 * 4096 + rng_next(g) % (24 * 4096);
		s->prefill = 1 + rng_next(g) % 2;
		break;
	case 5: /* flight recorder, another chunk size */
		s->mode = RTPROF_MODE_FLIGHT_RECORDER;
		s->chunk_size = 8192;
		s->memory_limit = 256u << 10;
		break;
	case 6: /* default chunk size (64 KiB); the pool is allocated at
		 * start, so not the default 32 MiB limit (slow under TSan) */
		s->mode = RTPROF_MODE_STREAM;
		s->memory_limit = 2u << 20;
		break;
	default: /* a limit below one chunk (the pool keeps one chunk) */
		s->mode = RTPROF_MODE_STREAM;
		s->chunk_size = 4096;
		s->memory_limit = 4096;
		break;
	}
}

static void *
control_main(void *arg)
{
	struct rng g;

	(void)arg;
	rng_seed(&g, base_seed ^ 0xC047);
	for (;;) {
		struct rtprof_settings set;
		struct timespec t0, t1, t_run;
		int fin = atomic_load(&time_up), rc;
		unsigned steps;

		if (fin && atomic_load_explicit(&workers_alive, memory_order_acquire) == 0 &&
		    atomic_load(&churner_done))
			break;
		pick_settings(&g, &set);
		pthread_mutex_lock(&ctl_mu);
		RTPROF_CHECK(nsess < MAX_SESSIONS);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		RTPROF_CHECK_EQ(rtprof_session_start(&set), 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		start_ns += ns_between(&t0, &t1);
		t_run = t1;
		sess[nsess].t_started = rtprof_now();
		sess[nsess].mode = set.mode;
		nsess++;
		ctl_started++;
		ctl_running = 1;
		pthread_mutex_unlock(&ctl_mu);

		steps = rng_next(&g) % 4;
		for (unsigned i = 0; i < steps; i++) {
			sleep_us(rng_next(&g) % (fin ? 500 : 4000));
			switch (rng_next(&g) % 4) {
			case 0:
				RTPROF_CHECK_EQ(rtprof_session_pause(), 0);
				RTPROF_CHECK_EQ(rtprof_session_pause(), -EALREADY);
				n_pauses++;
				sleep_us(rng_next(&g) % 2000);
				RTPROF_CHECK_EQ(rtprof_session_resume(), 0);
				break;
			case 1:
				RTPROF_CHECK_EQ(rtprof_session_dump(), 0);
				n_dumps++;
				break;
			case 2:
				RTPROF_CHECK_EQ(rtprof_session_resume(), -EALREADY);
				if (rng_next(&g) % 8 == 0) {
					RTPROF_CHECK_EQ(rtprof_session_start(&set), -EBUSY);
					n_ebusy++;
				}
				break;
			default:
				break;
			}
		}
		sleep_us(rng_next(&g) % (fin ? 1000 : 10000));
		pthread_mutex_lock(&ctl_mu);
		atomic_fetch_add_explicit(&stop_begun, 1, memory_order_acq_rel);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		rc = rtprof_session_stop();
		clock_gettime(CLOCK_MONOTONIC, &t1);
		stop_ns += ns_between(&t0, &t1);
		run_ns += ns_between(&t_run, &t0);
		RTPROF_CHECK_EQ(rc, 0);
		ctl_running = 0;
		atomic_fetch_add_explicit(&stop_done, 1, memory_order_acq_rel);
		pthread_mutex_unlock(&ctl_mu);
		RTPROF_CHECK_EQ(rtprof_session_stop(), -ENOENT);
		RTPROF_CHECK_EQ(rtprof_session_pause(), -ENOENT);
		sleep_us(rng_next(&g) % 2000);
	}
	atomic_store(&control_done, 1);
	return NULL;
}

static void *
observer_main(void *arg)
{
	struct rng g;

	(void)arg;
	rng_seed(&g, base_seed ^ 0x0B5);
	while (!atomic_load(&control_done)) {
		struct rtprof_session_status st;
		int rc;

		sleep_us(rng_next(&g) % 1000);
		rc = rtprof_session_dump();
		RTPROF_CHECK(rc == 0 || rc == -ENOENT);
		if (rc == 0)
			n_obs_dumps++;
		rc = rtprof_session_status_get(&st);
		RTPROF_CHECK(rc == 0 || rc == -ENOENT);
		RTPROF_CHECK_EQ(st.sink_error, 0);
		RTPROF_CHECK_EQ(st.chunks_lost, 0);
	}
	return NULL;
}

static pthread_t long_t[MAX_LONG];

static void *
signaller_main(void *arg)
{
	struct rng g;

	(void)arg;
	rng_seed(&g, base_seed ^ 0x516);
	while (!atomic_load(&signaller_stop)) {
		pthread_kill(long_t[rng_next(&g) % (unsigned)nlong], SIGUSR1);
		sleep_us(50 + rng_next(&g) % 300);
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Checking                                                             */

/* Second pass over the stream for what the model does not keep. */
struct p2sess {
	uint32_t id;
	uint64_t gen;
	uint64_t close_ticks;
	int has_values;
};

struct pass2 {
	struct p2sess *v;
	size_t n;
	uint32_t frame_session;
	uint64_t frame_index;
	uint64_t data_frames;
};

static int
p2_frame(void *ctx, const struct rtprof_dump_frame *f)
{
	struct pass2 *p = ctx;

	p->frame_session = f->session;
	p->frame_index = f->session_index;
	return 0;
}

static int
p2_header(void *ctx, const struct rtprof_dump_header *h)
{
	struct pass2 *p = ctx;

	p->v = realloc(p->v, (p->n + 1) * sizeof(*p->v));
	RTPROF_CHECK(p->v != NULL);
	memset(&p->v[p->n], 0, sizeof(p->v[0]));
	p->v[p->n].id = h->session;
	p->v[p->n].gen = h->generation;
	p->n++;
	RTPROF_CHECK_EQ(p->frame_session, h->session);
	RTPROF_CHECK_EQ(p->frame_index, p->n);
	return 0;
}

static struct p2sess *
p2_cur(struct pass2 *p)
{
	RTPROF_CHECK(p->n > 0);
	/* Every frame belongs to the session of the latest HEADER: sessions
	 * do not interleave in this stream. */
	RTPROF_CHECK_EQ(p->frame_session, p->v[p->n - 1].id);
	RTPROF_CHECK_EQ(p->frame_index, p->n);
	return &p->v[p->n - 1];
}

static int
p2_values(void *ctx, uint64_t t, size_t n, const uint32_t *ids, const int64_t *v)
{
	struct p2sess *s = p2_cur(ctx);

	(void)n, (void)ids, (void)v;
	s->close_ticks = t;
	s->has_values = 1;
	return 0;
}

static int
p2_data(void *ctx, const struct rtprof_dump_data *d)
{
	struct pass2 *p = ctx;
	struct p2sess *s = p2_cur(p);

	RTPROF_CHECK_EQ(d->generation, s->gen);
	p->data_frames++;
	return 0;
}

static int
p2_other(void *ctx)
{
	p2_cur(ctx);
	return 0;
}

static int
p2_trailer(void *ctx, const struct rtprof_dump_trailer *t)
{
	(void)t;
	return p2_other(ctx);
}

static int
p2_thread(void *ctx, const struct rtprof_dump_thread *t)
{
	(void)t;
	return p2_other(ctx);
}

/* Per kernel tid: the registrations that had it, and decoded totals. */
struct group {
	int64_t tid;
	uint64_t attempts, full, nested, outside, late, recycled;
	uint64_t decoded, decoded_typed, typed_committed;
	uint64_t tr_recycled, tr_full, tr_nested;
	uint64_t last_ts;
	unsigned last_kind;
	size_t last_sess;
	uint64_t last_chunk;
	int nregs;
	struct reg *regs[8];
};

static struct group *groups;
static size_t ngroups, cap_groups;
static size_t *gidx;        /* open addressing: tid -> group index + 1 */
static size_t gidx_cap;

static struct group *
group_of(int64_t tid, int create)
{
	size_t i = ((uint64_t)tid * 0x9E3779B97F4A7C15ull) >> 32 & (gidx_cap - 1);

	for (; gidx[i] != 0; i = (i + 1) & (gidx_cap - 1))
		if (groups[gidx[i] - 1].tid == tid)
			return &groups[gidx[i] - 1];
	if (!create)
		return NULL;
	RTPROF_CHECK(ngroups < cap_groups);
	memset(&groups[ngroups], 0, sizeof(groups[0]));
	groups[ngroups].tid = tid;
	gidx[i] = ++ngroups;
	return &groups[ngroups - 1];
}

static uint64_t
reg_attempts(const struct reg *r)
{
	return r->n_typed + r->n_mark + r->n_begin + r->n_end + r->n_counter +
	    r->n_sleep + r->n_wake + r->n_sig;
}

static int
is_sig(const struct dm_rec *x)
{
	return x->name != NULL && strcmp(x->name, "sig") == 0;
}

/* The session has a COUNTER frame for our counter, with id @id. */
static int
counter_ok(const struct dm_session *s, unsigned id)
{
	for (size_t i = 0; i < s->ncounters; i++)
		if (s->counters[i].id == id)
			return strcmp(s->counters[i].name, "stress.count") == 0;
	return 0;
}

/* The session has a SCHEMA frame for type @id with @nfields fields. */
static int
schema_ok(const struct dm_session *s, unsigned id, unsigned nfields)
{
	for (size_t i = 0; i < s->nschemas; i++)
		if (s->schemas[i].id == id)
			return strncmp(s->schemas[i].name, "stress", 6) == 0 &&
			    s->schemas[i].nfields == nfields;
	return 0;
}

static void
check_dump(int fd)
{
	struct rtprof_dump_cb cb;
	struct pass2 p2;
	struct dm m;
	unsigned nr = atomic_load(&nregs);
	uint64_t slack, tot_attempts = 0, tot_decoded = 0, tot_full = 0,
	    tot_nested = 0, tot_outside = 0, tot_late = 0, tot_recycled = 0,
	    early = 0, over_stop = 0, max_over_stop = 0, tids_reused = 0,
	    typed_lost_checked = 0;
	double tps;

	/* STRESS_SAVE=path keeps a copy of the stream for inspection. */
	if (getenv("STRESS_SAVE") != NULL) {
		int out = open(getenv("STRESS_SAVE"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		char buf[65536];
		ssize_t n;

		RTPROF_CHECK(out >= 0);
		RTPROF_CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			RTPROF_CHECK_EQ(write(out, buf, (size_t)n), n);
		close(out);
	}

	/* Model of the whole stream. */
	RTPROF_CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
	RTPROF_CHECK_EQ(dm_load_fd(&m, fd), 0);
	RTPROF_CHECK_EQ(m.rc, 0);
	RTPROF_CHECK_EQ(m.stats.bad_frames, 0);
	RTPROF_CHECK_EQ(m.stats.skipped_bytes, 0);
	RTPROF_CHECK_EQ(m.stats.resyncs, 0);
	RTPROF_CHECK_EQ(m.stats.seq_gaps, 0);
	RTPROF_CHECK_EQ(m.stats.seq_dups, 0);
	RTPROF_CHECK_EQ(m.stats.bad_payloads, 0);
	RTPROF_CHECK_EQ(m.stats.bad_records, 0);
	RTPROF_CHECK_EQ(m.stats.truncated_tail_bytes, 0);
	RTPROF_CHECK_EQ(m.stats.unknown_frames, 0);
	RTPROF_CHECK_EQ(m.stats.damage, 0);
	for (int k = 0; k < 8; k++)
		RTPROF_CHECK_EQ(m.damage_by_kind[k], 0);
	RTPROF_CHECK_EQ(m.nsessions, nsess);
	RTPROF_CHECK_EQ(m.stats.sessions, nsess);

	/* Second pass: frame-level session membership, close ticks. */
	memset(&p2, 0, sizeof(p2));
	memset(&cb, 0, sizeof(cb));
	cb.ctx = &p2;
	cb.on_frame = p2_frame;
	cb.on_header = p2_header;
	cb.on_values = p2_values;
	cb.on_data = p2_data;
	cb.on_thread = p2_thread;
	cb.on_trailer = p2_trailer;
	RTPROF_CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
	RTPROF_CHECK_EQ(rtprof_dump_read_fd(fd, &cb, NULL), 0);
	RTPROF_CHECK_EQ(p2.n, nsess);

	/* Registrations by tid. */
	cap_groups = nr + 1;
	groups = calloc(cap_groups, sizeof(*groups));
	for (gidx_cap = 1024; gidx_cap < 2 * cap_groups; gidx_cap *= 2)
		;
	gidx = calloc(gidx_cap, sizeof(*gidx));
	RTPROF_CHECK(groups && gidx);
	for (unsigned i = 0; i < nr; i++) {
		struct reg *r = regs[i];
		struct group *gr;

		RTPROF_CHECK(r != NULL);
		RTPROF_CHECK(r->stats_ok);
		RTPROF_CHECK(r->tid > 0);
		gr = group_of(r->tid, 1);
		if (gr->nregs > 0 && strcmp(gr->regs[0]->name, r->name) != 0)
			tids_reused++;
		RTPROF_CHECK(gr->nregs < 8);
		gr->regs[gr->nregs++] = r;
		gr->attempts += reg_attempts(r);
		gr->full += r->st.dropped_full;
		gr->nested += r->st.dropped_nested;
		gr->outside += r->st.outside;
		gr->late += r->st.late;
		gr->recycled += r->st.recycled;
		gr->typed_committed += r->typed_committed;
		r->seen = calloc(r->n_typed / 8 + 1, 1);
		r->seq_sess = calloc(r->n_typed + 1, sizeof(*r->seq_sess));
		RTPROF_CHECK(r->seen && r->seq_sess);
	}

	tps = m.sessions[0].ticks_per_second;
	RTPROF_CHECK(tps > 0);
	slack = (uint64_t)(tps / 1e6) * 50 + 1;

	for (size_t si = 0; si < m.nsessions; si++) {
		struct dm_session *s = &m.sessions[si];
		const struct p2sess *q = &p2.v[si];
		uint64_t start = s->start_ticks, close;

		RTPROF_CHECK_EQ(s->generation, m.sessions[0].generation + si);
		RTPROF_CHECK_EQ(q->gen, s->generation);
		RTPROF_CHECK_EQ(q->id, s->id);
		RTPROF_CHECK(s->has_trailer);
		RTPROF_CHECK(q->has_values);
		RTPROF_CHECK_EQ(s->trailer.chunks_lost, 0);
		RTPROF_CHECK(!s->trailer.limit_reached);
		RTPROF_CHECK_EQ(s->nevents, 0);
		RTPROF_CHECK_STREQ(s->mode,
		    sess[si].mode == RTPROF_MODE_FLIGHT_RECORDER ? "flight" : "stream");
		close = q->close_ticks;
		RTPROF_CHECK_LE(start, s->trailer.stop_ticks);
		RTPROF_CHECK_LE(s->trailer.stop_ticks, close + slack);
		RTPROF_CHECK_LE(start, sess[si].t_started + slack);

		/* Trailer entries all belong to decoded threads and agree. */
		for (size_t k = 0; k < s->trailer.nthreads; k++) {
			const struct rtprof_dump_trailer_thread *tt = &s->tthreads[k];
			struct dm_thread *dt = NULL;
			struct group *gr = group_of(tt->tid, 0);

			for (size_t j = 0; j < s->nthreads; j++)
				if (s->threads[j].tid == tt->tid)
					dt = &s->threads[j];
			if (dt != NULL && (dt->flags & RTPROF_THREAD_SAMPLER)) {
				/* The sampler: its records are samples. */
				RTPROF_CHECK_EQ(dt->nrecs, tt->recorded);
				continue;
			}
			RTPROF_CHECK(gr != NULL);
			RTPROF_CHECK_EQ(dt ? dt->nrecs : 0, tt->recorded);
			gr->tr_recycled += tt->recycled;
			gr->tr_full += tt->dropped_full;
			gr->tr_nested += tt->dropped_nested;
			/* DATA headers carry the drops before each chunk
			 * (flight recorder: of the chunks kept); the trailer
			 * also those after the thread's last chunk. */
			if (dt != NULL) {
				RTPROF_CHECK_LE(dt->drops_full, tt->dropped_full);
				RTPROF_CHECK_LE(dt->drops_nested, tt->dropped_nested);
			}
		}

		for (size_t j = 0; j < s->nthreads; j++) {
			struct dm_thread *dt = &s->threads[j];
			struct group *gr = group_of(dt->tid, 0);
			int in_trailer = 0, name_ok = 0;

			if (dt->nrecs == 0 || (dt->flags & RTPROF_THREAD_SAMPLER))
				continue;
			RTPROF_CHECK(gr != NULL);
			for (size_t k = 0; k < s->trailer.nthreads; k++)
				in_trailer |= s->tthreads[k].tid == dt->tid;
			RTPROF_CHECK(in_trailer);
			for (int k = 0; k < gr->nregs; k++)
				name_ok |= strcmp(gr->regs[k]->name, dt->name) == 0;
			if (!name_ok)
				fprintf(stderr, "tid %lld: THREAD name \"%s\"\n",
				    (long long)dt->tid, dt->name);
			RTPROF_CHECK(name_ok);
			gr->decoded += dt->nrecs;

			for (size_t ri = 0; ri < dt->nrecs; ri++) {
				const struct dm_rec *x = &dt->recs[ri];
				uint64_t ts = x->v.t0;

				RTPROF_CHECK_EQ(x->generation, s->generation);
				RTPROF_CHECK_LE(ts, close + slack);
				if (ts > s->trailer.stop_ticks) {
					over_stop++;
					if (ts - s->trailer.stop_ticks > max_over_stop)
						max_over_stop = ts - s->trailer.stop_ticks;
				}
				if (!is_sig(x)) {
					if (ts + slack < gr->last_ts)
						fprintf(stderr, "tid %lld (%s): record %zu (kind %u, "
						    "session %zu, chunk %llu) at %llu is before the "
						    "previous one (kind %u, session %zu, chunk %llu) "
						    "at %llu\n",
						    (long long)dt->tid, dt->name, ri, x->v.kind, si,
						    (unsigned long long)x->chunk_seq,
						    (unsigned long long)ts, gr->last_kind,
						    gr->last_sess, (unsigned long long)gr->last_chunk,
						    (unsigned long long)gr->last_ts);
					RTPROF_CHECK_GE(ts + slack, gr->last_ts);
					gr->last_ts = ts;
					gr->last_kind = x->v.kind;
					gr->last_sess = si;
					gr->last_chunk = x->chunk_seq;
				}
				switch (x->v.kind) {
				case RTPROF_REC_COUNTER:
					RTPROF_CHECK(counter_ok(s, x->v.id));
					RTPROF_CHECK_GT(x->v.value, 0);
					/* fall through */
				case RTPROF_REC_SLEEP:
				case RTPROF_REC_WAKE:
					RTPROF_CHECK_GE(ts + slack, start);
					break;
				case RTPROF_REC_INSTANT:
				case RTPROF_REC_BEGIN:
				case RTPROF_REC_END:
					RTPROF_CHECK(x->name != NULL);
					if (ts < start)
						early++;
					break;
				case RTPROF_REC_TYPED: {
					uint64_t id, seq;
					struct reg *r;

					RTPROF_CHECK(schema_ok(s, x->v.id, x->v.nvals));
					RTPROF_CHECK_EQ(x->v.vals[0].kind, RTPROF_VAL_U64);
					RTPROF_CHECK_EQ(x->v.vals[1].kind, RTPROF_VAL_U64);
					id = x->v.vals[0].v.u;
					seq = x->v.vals[1].v.u;
					RTPROF_CHECK_LT(id, nr);
					r = regs[id];
					RTPROF_CHECK_EQ(r->tid, dt->tid);
					RTPROF_CHECK_LT(seq, r->n_typed);
					if (x->v.nvals == 3) {
						RTPROF_CHECK_EQ(x->v.id, fat_type->id);
						RTPROF_CHECK_EQ(x->v.vals[2].kind, RTPROF_VAL_STR);
						RTPROF_CHECK_EQ(x->v.vals[2].v.str.n, 8 + seq % 193);
						RTPROF_CHECK(memcmp(x->v.vals[2].v.str.p, pad,
						    8 + seq % 193) == 0);
					} else {
						RTPROF_CHECK_EQ(x->v.nvals, 2);
						RTPROF_CHECK_EQ(x->v.id, r->type->id);
					}
					/* only what was committed, once, in order */
					RTPROF_CHECK(r->committed[seq / 8] & (1u << (seq % 8)));
					RTPROF_CHECK(!(r->seen[seq / 8] & (1u << (seq % 8))));
					r->seen[seq / 8] |= (uint8_t)(1u << (seq % 8));
					RTPROF_CHECK_GT((int64_t)seq, r->last_seq);
					r->last_seq = (int64_t)seq;
					r->seq_sess[seq] = (uint32_t)si + 1;
					r->decoded_typed++;
					gr->decoded_typed++;
					RTPROF_CHECK_EQ(ts, r->pre[seq]);
					RTPROF_CHECK_GE(r->post[seq] + slack, start);
					if (ts < start)
						early++;
					break;
				}
				default:
					fprintf(stderr, "unexpected record kind %u\n", x->v.kind);
					RTPROF_CHECK(0);
				}
			}
		}
	}

	/* No loss: typed markers whose whole call lies inside a session's
	 * running window are in that session. */
	for (unsigned i = 0; i < nr; i++) {
		struct reg *r = regs[i];

		for (uint64_t seq = 0; seq < r->n_typed; seq++) {
			uint64_t pre = r->pre[seq], post = r->post[seq];
			size_t lo = 0, hi = m.nsessions, si;
			const struct dm_session *s;
			int recycled = 0;

			if (!(r->committed[seq / 8] & (1u << (seq % 8))))
				continue;
			/* last session with t_started + slack < pre */
			while (lo < hi) {
				size_t mid = (lo + hi) / 2;

				if (sess[mid].t_started + slack < pre)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo == 0)
				continue;
			si = lo - 1;
			s = &m.sessions[si];
			if (!(post + slack < s->trailer.stop_ticks))
				continue;
			for (size_t k = 0; k < s->trailer.nthreads; k++)
				if (s->tthreads[k].tid == r->tid && s->tthreads[k].recycled)
					recycled = 1;
			if (recycled)
				continue;
			typed_lost_checked++;
			if (r->seq_sess[seq] != si + 1) {
				fprintf(stderr, "%s (tid %d) typed seq %llu committed inside "
				    "session %zu (gen %llu) [%llu, %llu] but %s\n",
				    r->name, (int)r->tid, (unsigned long long)seq, si,
				    (unsigned long long)s->generation,
				    (unsigned long long)pre, (unsigned long long)post,
				    r->seq_sess[seq] ? "decoded in another session" :
				    "not written (late or lost)");
				RTPROF_CHECK(0);
			}
		}
	}

	/* Exact accounting per tid. */
	for (size_t gi = 0; gi < ngroups; gi++) {
		struct group *gr = &groups[gi];
		uint64_t sum = gr->decoded + gr->full + gr->nested + gr->outside +
		    gr->late + gr->recycled;

		if (sum != gr->attempts) {
			fprintf(stderr, "tid %lld (%s, %d registrations): attempts %llu != "
			    "decoded %llu + dropped_full %llu + dropped_nested %llu + "
			    "outside %llu + late %llu + recycled %llu = %llu\n",
			    (long long)gr->tid, gr->regs[0]->name, gr->nregs,
			    (unsigned long long)gr->attempts,
			    (unsigned long long)gr->decoded, (unsigned long long)gr->full,
			    (unsigned long long)gr->nested, (unsigned long long)gr->outside,
			    (unsigned long long)gr->late, (unsigned long long)gr->recycled,
			    (unsigned long long)sum);
		}
		RTPROF_CHECK_EQ(sum, gr->attempts);
		RTPROF_CHECK_EQ(gr->tr_recycled, gr->recycled);
		RTPROF_CHECK_LE(gr->tr_full, gr->full);
		RTPROF_CHECK_LE(gr->tr_nested, gr->nested);
		RTPROF_CHECK_LE(gr->decoded_typed, gr->typed_committed);
		RTPROF_CHECK_LE(gr->typed_committed - gr->decoded_typed,
		    gr->late + gr->recycled);
		tot_attempts += gr->attempts;
		tot_decoded += gr->decoded;
		tot_full += gr->full;
		tot_nested += gr->nested;
		tot_outside += gr->outside;
		tot_late += gr->late;
		tot_recycled += gr->recycled;
	}

	printf("test_stress: OK seed=%llu long=%d registrations=%u tids=%zu "
	    "(reused %llu) sessions=%llu pauses=%llu dumps=%llu+%llu ebusy=%llu "
	    "signals=%d bytes=%llu | attempts=%llu decoded=%llu outside=%llu "
	    "dropped_full=%llu dropped_nested=%llu late=%llu recycled=%llu | "
	    "early=%llu over_stop=%llu max_over_stop=%.1fus lossless_checked=%llu "
	    "start_avg=%.1fms stop_avg=%.1fms running=%.1fs\n",
	    (unsigned long long)base_seed, nlong, nr, ngroups,
	    (unsigned long long)tids_reused, (unsigned long long)nsess,
	    (unsigned long long)n_pauses, (unsigned long long)n_dumps,
	    (unsigned long long)n_obs_dumps, (unsigned long long)n_ebusy,
	    use_signals, (unsigned long long)m.stats.bytes,
	    (unsigned long long)tot_attempts, (unsigned long long)tot_decoded,
	    (unsigned long long)tot_outside, (unsigned long long)tot_full,
	    (unsigned long long)tot_nested, (unsigned long long)tot_late,
	    (unsigned long long)tot_recycled, (unsigned long long)early,
	    (unsigned long long)over_stop, (double)max_over_stop * 1e6 / tps,
	    (unsigned long long)typed_lost_checked,
	    (double)start_ns / 1e6 / (double)nsess,
	    (double)stop_ns / 1e6 / (double)nsess, (double)run_ns / 1e9);
	free(p2.v);
	dm_free(&m);
}

/* ------------------------------------------------------------------ */

int
main(int argc, char **argv)
{
	pthread_t control, observer, churner, signaller;
	struct sigaction sa;
	struct timespec now;
	int fd;

	if (argc > 1)
		nlong = atoi(argv[1]);
	if (argc > 2)
		seconds = atoi(argv[2]);
	if (argc > 3)
		use_signals = atoi(argv[3]);
	if (nlong < 1 || nlong > MAX_LONG || seconds < 1) {
		fprintf(stderr, "usage: %s [threads 1..%d [seconds [signals 0|1]]]\n",
		    argv[0], MAX_LONG);
		return 2;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	base_seed = getenv("STRESS_SEED") ? strtoull(getenv("STRESS_SEED"), NULL, 0) :
	    (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 20) ^ (uint64_t)getpid();

	/* One sink for every session, appended to. */
	fd = memfd_create("rtprof-stress", MFD_CLOEXEC);
	if (fd >= 0) {
		RTPROF_CHECK_EQ(fcntl(fd, F_SETFL, O_APPEND), 0);
	} else {
		char path[] = "/tmp/rtprof-stress-XXXXXX";

		fd = mkstemp(path);
		RTPROF_CHECK(fd >= 0);
		unlink(path);
		RTPROF_CHECK_EQ(fcntl(fd, F_SETFL, O_APPEND), 0);
	}
	sink_fd = fd;
	sess = calloc(MAX_SESSIONS, sizeof(*sess));
	RTPROF_CHECK(sess != NULL);

	/* SIGUSR1 is blocked everywhere but in registered recording threads
	 * (which unblock it once registered). */
	sigusr1_mask(SIG_BLOCK);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr1;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	RTPROF_CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);

	types[0] = declare_type(0);
	atomic_store(&ntypes, 1);
	fat_type = declare_type(-1);
	ctr = rtprof_counter_declare("stress.count", "Stress", "events");
	RTPROF_CHECK(ctr != NULL);

	RTPROF_CHECK_EQ(pthread_create(&control, NULL, control_main, NULL), 0);
	RTPROF_CHECK_EQ(pthread_create(&observer, NULL, observer_main, NULL), 0);
	for (int i = 0; i < nlong; i++) {
		struct reg *r = reg_new("w", types[0]);

		atomic_fetch_add(&workers_alive, 1);
		RTPROF_CHECK_EQ(pthread_create(&long_t[i], NULL, long_main, r), 0);
	}
	RTPROF_CHECK_EQ(pthread_create(&churner, NULL, churner_main, NULL), 0);
	if (use_signals)
		RTPROF_CHECK_EQ(pthread_create(&signaller, NULL, signaller_main, NULL), 0);

	sleep((unsigned)seconds);
	atomic_store(&time_up, 1);

	RTPROF_CHECK_EQ(pthread_join(churner, NULL), 0);
	RTPROF_CHECK_EQ(pthread_join(control, NULL), 0);
	RTPROF_CHECK_EQ(pthread_join(observer, NULL), 0);
	atomic_store(&signaller_stop, 1);
	if (use_signals)
		RTPROF_CHECK_EQ(pthread_join(signaller, NULL), 0);
	for (int i = 0; i < nlong; i++)
		RTPROF_CHECK_EQ(pthread_join(long_t[i], NULL), 0);
	RTPROF_CHECK_EQ(atomic_load(&workers_alive), 0);

	check_dump(fd);
	close(fd);
	for (unsigned i = 0; i < atomic_load(&nregs); i++) {
		free(regs[i]->committed);
		free(regs[i]->pre);
		free(regs[i]->post);
		free(regs[i]->seen);
		free(regs[i]->seq_sess);
		free(regs[i]);
	}
	free(groups);
	free(gidx);
	free(sess);
	return 0;
}
