/*
 * test_sink_faults.c - a failing or slow sink never crashes the program and
 * never blocks a recording thread; a size cap is enforced.
 *
 * "Write errors (EINTR, EAGAIN, short writes, EPIPE, ENOSPC) are handled:
 * retried or turned into counted drops and a recorded error, never a crash,
 * never blocking an RT thread"; "A maximum dump size is enforced (then
 * writing stops and the fact is recorded)".
 *
 * Each case runs in its own forked child (sessions are process-wide state)
 * under an alarm() watchdog, so that one hung or crashed case is reported
 * and the others still run:
 *
 *   bad_fd       start with fd -1, a closed number, a huge number: -EINVAL,
 *                and nothing is left behind (a good session then works);
 *   epipe        a pipe whose read end is closed (before the session, and
 *                by a reader in the middle of it): status shows -EPIPE,
 *                stop returns -EPIPE, SIGPIPE does not kill the process;
 *   enospc       /dev/full: stop returns -ENOSPC, chunks are counted lost,
 *                a recording thread finishes its loop;
 *   ebadf        the fd is closed under the running writer: -EBADF;
 *   eagain       a non-blocking 4 KiB pipe read 100 bytes per millisecond
 *                (EAGAIN and short writes): the dump is complete and exact;
 *   eintr        the same through a blocking pipe while the process gets
 *                SIGUSR1 (no SA_RESTART; the handler records an event on
 *                the recording thread) and SIGSTOP/SIGCONT: complete, exact;
 *   timeout      a full pipe nobody reads, write_timeout_ms 200: status and
 *                stop give -ETIMEDOUT (stop returns; its time is printed);
 *   timeout_big  an empty pipe nobody reads, frames larger than the pipe:
 *                the writer must not block in write(2) past the timeout;
 *   slow_progress  a pipe read slowly but steadily, frames that take longer
 *                than write_timeout_ms to go out: no timeout, exact dump;
 *   max_bytes    a 64 KiB cap while several MB are recorded: the file stays
 *                under it, decodes cleanly, has the limit_reached EVENT and
 *                a trailer saying so; status shows limit_reached;
 *   max_bytes_strings  the cap is hit by STRING frames (long marker names):
 *                still the EVENT and the trailer, every name resolved.
 *
 * In every case where a recording thread runs (all but bad_fd and
 * max_bytes_strings), each of its recording calls is timed (CLOCK_MONOTONIC)
 * and its thread's context switches counted around it (getrusage
 * RUSAGE_THREAD): no call may make a voluntary switch (it never sleeps or
 * waits, whatever the sink does; not asserted under TSan, whose runtime
 * may wait on its own locks inside an atomic operation); no call may use
 * MAX_CALL_NS (10 ms; 100 ms under TSan) of CPU time (it never spins
 * waiting either); and every call the thread was not switched out of must
 * take under MAX_CALL_NS of wall time. A call during which the thread was
 * preempted (an involuntary switch only: a loaded machine) is counted and
 * its wall time printed, not bounded. A call that slept in a page fault
 * while the kernel was migrating pages (compaction moves any page, and a
 * thread touching one waits for the copy) is printed, not failed: see
 * pages_migrated(). Not asserted in eintr, where another
 * process stops the whole process with SIGSTOP (a stop is a voluntary
 * switch, and a call may span it).
 *
 * Usage: test_sink_faults [case...]   (default: every case)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dumpmodel.h"
#include "rtprof.h"
#include "testutil.h"

#define CASE_TIMEOUT_S 120

/* The most CPU time, and wall time when the thread was not switched out,
 * one recording call may take while the sink fails: the calls are
 * wait-free (no lock, no system call), so a call that waited for the sink
 * would take about write_timeout_ms (200 ms here) or forever; 10 ms leaves
 * room for ASan. Under TSan 100 ms: its runtime does its own bookkeeping
 * inside an instrumented call now and then (up to 9.7 ms of CPU seen). */
#ifdef RTPROF_TEST_TSAN
#define MAX_CALL_NS 100000000ull
#else
#define MAX_CALL_NS 10000000ull
#endif

#ifdef RTPROF_TEST_TSAN
/* The rules of tests/tsan.supp, built in so that the test also runs clean
 * under TSan outside ctest (ctest gives every test of the TSan build that
 * file through TSAN_OPTIONS; TSan applies both): races inside Concurrency
 * Kit's ring and sequence counter, whose volatile-based atomics TSan cannot
 * see (the reasons are in tests/tsan.supp and RELIABILITY.md). */
const char *__tsan_default_suppressions(void);
const char *
__tsan_default_suppressions(void)
{
	return "race:ck_ring_*\nrace:_ck_ring_*\nrace:ck_sequence_*\n"
	    "race:ck_pr_md_load_uint\nrace:ck_pr_md_store_uint\n";
}
#endif

/* ------------------------------------------------------------------ */
/* Helpers                                                              */

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static struct rtprof_settings
settings_for(int fd)
{
	struct rtprof_settings s;

	memset(&s, 0, sizeof(s));
	s.struct_size = sizeof(s);
	s.mode = RTPROF_MODE_STREAM;
	s.fd = fd;
	/* Sink faults alone: no sampler records in the accounting. */
	s.sample_interval_us = RTPROF_SAMPLING_OFF;
	return s;
}

static int
status_now(struct rtprof_session_status *st)
{
	return rtprof_session_status_get(st);
}

/* Poll the session status until sink_error is set; return it (0: timeout). */
static int
wait_sink_error(long timeout_ms)
{
	struct rtprof_session_status st;

	for (long t = 0; t < timeout_ms; t += 5) {
		RTPROF_CHECK_EQ(status_now(&st), 0);
		if (st.sink_error != 0)
			return st.sink_error;
		sleep_ms(5);
	}
	return 0;
}

static const rtprof_marker_type *blob_type;
static rtprof_counter *sink_counter;
static const char blob[] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

static void
declare_types(void)
{
	struct rtprof_marker_schema sc;

	memset(&sc, 0, sizeof(sc));
	sc.name = "sink.blob";
	sc.category = RTPROF_CAT_IO;
	sc.nfields = 2;
	sc.fields[0].key = "i";
	sc.fields[0].kind = RTPROF_FIELD_U64;
	sc.fields[1].key = "blob";
	sc.fields[1].kind = RTPROF_FIELD_STR;
	blob_type = rtprof_marker_type_declare(&sc);
	RTPROF_CHECK(blob_type != NULL);
	sink_counter = rtprof_counter_declare("sink.counter", "Test", NULL);
	RTPROF_CHECK(sink_counter != NULL);
}

/* A registered RT thread that records a mix of events. */
struct recorder {
	long n;                    /* loop iterations; 0: until *stop */
	_Atomic int *stop;
	int finish_on_chunk;       /* end with a chunk take: exact drop totals */
	int block_sigusr1;         /* block SIGUSR1 before the final stats */
	long pace_every, pace_us;  /* sleep pace_us after pace_every iterations */
	int stopped_by_signals;    /* SIGSTOPped by design: timing not checked */
	pthread_t thread;

	/* Results. */
	_Atomic int done;
	int tid;
	uint64_t attempted;
	struct rtprof_thread_stats st;
	double secs;
	/* Timing of the recording calls of the main loop. */
	uint64_t calls, max_call_ns, slow_calls; /* slow: over 1 ms */
	uint64_t max_unswitched_ns; /* the longest call not switched out of */
	uint64_t max_cpu_ns;       /* the most CPU time one call used */
	uint64_t blocked_calls;    /* calls with a voluntary switch */
	uint64_t blocked_faulted;  /* of which with a page fault in the call */
	int max_cpu_faulted;       /* the max_cpu_ns call took a page fault */
	uint64_t migrated;         /* pages the kernel moved during the loop */
	uint64_t preempted_calls;  /* calls with involuntary switches only */
	uint64_t sleeps;           /* nanosleep() calls of the loop */
	long vcsw, ivcsw;          /* context switches during the loop */
};

static __thread int is_recorder;
static __thread uint64_t sig_marks; /* handler calls on a recorder thread */
static _Atomic uint64_t sigusr1_count;

/* The calling thread's context switches so far, and its CPU time in ns
 * (@cpu may be NULL; CLOCK_THREAD_CPUTIME_ID: getrusage's CPU times move
 * in steps of a scheduler tick). */
static void
thread_usage(long *vcsw, long *ivcsw, uint64_t *cpu, long *faults)
{
	struct rusage ru;
	struct timespec ts;

	RTPROF_CHECK_EQ(getrusage(RUSAGE_THREAD, &ru), 0);
	*vcsw = ru.ru_nvcsw;
	*ivcsw = ru.ru_nivcsw;
	if (faults != NULL)
		*faults = ru.ru_minflt + ru.ru_majflt;
	if (cpu != NULL) {
		RTPROF_CHECK_EQ(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts), 0);
		*cpu = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	}
}

static void
thread_switches(long *vcsw, long *ivcsw)
{
	thread_usage(vcsw, ivcsw, NULL, NULL);
}

/* Around one recording call: its time, the CPU time it used and the
 * switches made during it. */
struct call_clock {
	uint64_t t0, cpu0;
	long vcsw, ivcsw, faults;
};

static void
call_begin(struct call_clock *c)
{
	thread_usage(&c->vcsw, &c->ivcsw, &c->cpu0, &c->faults);
	c->t0 = mono_ns();
}

static void
call_end(struct recorder *r, const struct call_clock *c)
{
	uint64_t d = mono_ns() - c->t0, cpu;
	long vcsw, ivcsw, faults;

	thread_usage(&vcsw, &ivcsw, &cpu, &faults);
	if (cpu - c->cpu0 > r->max_cpu_ns) {
		r->max_cpu_ns = cpu - c->cpu0;
		r->max_cpu_faulted = faults != c->faults;
	}
	r->calls++;
	if (d > r->max_call_ns)
		r->max_call_ns = d;
	if (d > 1000000)
		r->slow_calls++;
	if (vcsw != c->vcsw) {
		r->blocked_calls++;
		r->blocked_faulted += faults != c->faults;
	} else if (ivcsw != c->ivcsw)
		r->preempted_calls++;
	else if (d > r->max_unswitched_ns)
		r->max_unswitched_ns = d;
}

/* One to three recording calls, each timed (a typed marker's open, puts
 * and close count as one call). */
static void
record_one(struct recorder *r, uint64_t i)
{
	struct call_clock c;

	call_begin(&c);
	rtprof_mark("sink.mark", RTPROF_CAT_IO);
	call_end(r, &c);
	r->attempted++;
	if (i % 8 == 0) {
		rtprof_rec rec;

		call_begin(&c);
		if (rtprof_marker_open(&rec, blob_type, RTPROF_PHASE_INSTANT,
		    rtprof_now(), 0)) {
			rtprof_put_u64(&rec, i);
			rtprof_put_str(&rec, blob, (size_t)(i % (sizeof(blob) - 1)));
			rtprof_marker_close(&rec);
		}
		call_end(r, &c);
		r->attempted++;
	}
	if (i % 16 == 0) {
		call_begin(&c);
		rtprof_counter_add(sink_counter, 1);
		call_end(r, &c);
		r->attempted++;
	}
}

static void *
recorder_main(void *arg)
{
	struct recorder *r = arg;
	double t0;
	uint64_t i = 0;
	long vcsw0, ivcsw0;

	RTPROF_CHECK_EQ(rtprof_thread_register("recorder", RTPROF_THREAD_RT), 0);
	r->tid = (int)syscall(SYS_gettid);
	is_recorder = 1;
	t0 = now_s();
	thread_switches(&vcsw0, &ivcsw0);
	r->migrated = pages_migrated();
	for (; r->n > 0 ? i < (uint64_t)r->n : !atomic_load(r->stop); i++) {
		record_one(r, i);
		/* Paced like a real program (a test thread may sleep). */
		if (r->pace_every > 0 && i % (uint64_t)r->pace_every == 0) {
			struct timespec ts = { 0, r->pace_us * 1000 };

			r->sleeps++;
			while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
				r->sleeps++;
		}
	}
	thread_switches(&r->vcsw, &r->ivcsw);
	r->migrated = pages_migrated() - r->migrated;
	r->vcsw -= vcsw0;
	r->ivcsw -= ivcsw0;
	if (r->block_sigusr1) {
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	}
	if (r->finish_on_chunk) {
		/* Drops are reported with the next chunk a thread takes: end
		 * right after a take, so the dump carries every drop. */
		struct rtprof_thread_stats s;
		uint64_t c0;

		RTPROF_CHECK_EQ(rtprof_thread_stats_get(&s), 0);
		c0 = s.chunks;
		do {
			rtprof_mark("sink.final", RTPROF_CAT_IO);
			r->attempted++;
			RTPROF_CHECK_EQ(rtprof_thread_stats_get(&s), 0);
			if (s.chunks == c0 && s.dropped_full > 0)
				sched_yield();
		} while (s.chunks == c0);
	}
	r->attempted += sig_marks;
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&r->st), 0);
	r->secs = now_s() - t0;
	atomic_store(&r->done, 1);
	return NULL;
}

static void
recorder_start(struct recorder *r)
{
	RTPROF_CHECK_EQ(pthread_create(&r->thread, NULL, recorder_main, r), 0);
}

/*
 * No recording call slept or waited. A voluntary switch inside a page
 * fault while the kernel was migrating pages (pages_migrated()) is the
 * kernel moving a page the thread touched, and is printed, not failed; one
 * without a fault in the call, or with no migration during the loop, is
 * a call that waited.
 */
#ifndef RTPROF_TEST_TSAN
static void
check_not_blocked(const struct recorder *r)
{
	uint64_t waited = r->blocked_calls - r->blocked_faulted;

	if (r->blocked_faulted > 0 && r->migrated > 0) {
		printf("  note: %" PRIu64 " recording calls slept in a page "
		    "fault while the kernel migrated %" PRIu64 " pages "
		    "(compaction)\n", r->blocked_faulted, r->migrated);
	} else {
		waited = r->blocked_calls;
	}
	if (waited != 0)
		fprintf(stderr, "  FAIL: %" PRIu64 " recording calls made a "
		    "voluntary context switch: they slept or waited (%" PRIu64
		    " in a page fault; %" PRIu64 " pages migrated meanwhile)\n",
		    r->blocked_calls, r->blocked_faulted, r->migrated);
	RTPROF_CHECK_EQ(waited, 0);
}
#endif

static void
recorder_join(struct recorder *r)
{
	RTPROF_CHECK_EQ(pthread_join(r->thread, NULL), 0);
	printf("  recorder: %" PRIu64 " events in %.3f s; dropped_full %" PRIu64
	    ", dropped_nested %" PRIu64 ", outside %" PRIu64 ", chunks %" PRIu64 "\n",
	    r->attempted, r->secs, r->st.dropped_full, r->st.dropped_nested,
	    r->st.outside, r->st.chunks);
	printf("  recording calls: %" PRIu64 ", longest %.3f ms (%" PRIu64
	    " over 1 ms), longest not switched out of %.3f ms, most CPU in one "
	    "%.3f ms; %" PRIu64 " with a voluntary switch, %" PRIu64
	    " preempted; the loop: %ld voluntary switches (%" PRIu64
	    " nanosleep calls), %ld involuntary\n", r->calls,
	    (double)r->max_call_ns / 1e6, r->slow_calls,
	    (double)r->max_unswitched_ns / 1e6, (double)r->max_cpu_ns / 1e6,
	    r->blocked_calls, r->preempted_calls, r->vcsw, r->sleeps, r->ivcsw);
	RTPROF_CHECK_GT(r->calls, 0);
	if (r->stopped_by_signals)
		return;
	if (r->max_cpu_ns >= MAX_CALL_NS)
		fprintf(stderr, "  FAIL: a recording call used %.3f ms of CPU "
		    "while the sink failed (bound %.0f ms): it spun? (%s)\n",
		    (double)r->max_cpu_ns / 1e6, (double)MAX_CALL_NS / 1e6,
		    r->max_cpu_faulted ? "it took a page fault" :
		    "no page fault in it");
	RTPROF_CHECK_LT(r->max_cpu_ns, MAX_CALL_NS);
	if (r->max_unswitched_ns >= MAX_CALL_NS)
		fprintf(stderr, "  FAIL: a recording call took %.3f ms on the CPU "
		    "while the sink failed (bound %.0f ms): it waited for the "
		    "sink?\n", (double)r->max_unswitched_ns / 1e6,
		    (double)MAX_CALL_NS / 1e6);
	RTPROF_CHECK_LT(r->max_unswitched_ns, MAX_CALL_NS);
#ifndef RTPROF_TEST_TSAN
	/* Under qemu-user (scripts/cross.sh): its own threads and system
	 * calls switch; only the CPU bounds above hold there. */
	if (getenv("RTPROF_TEST_EMULATED") != NULL)
		return;
	check_not_blocked(r);
#endif
}

static uint64_t
recorder_expected(const struct recorder *r)
{
	return r->attempted - r->st.dropped_full - r->st.dropped_nested -
	    r->st.outside;
}

static void
check_no_damage(const struct dm *m)
{
	const struct rtprof_dump_stats *st = &m->stats;

	if (st->damage != 0)
		fprintf(stderr, "  damage: bad_frames %" PRIu64 " skipped %" PRIu64
		    " gaps %" PRIu64 " dups %" PRIu64 " bad_payloads %" PRIu64
		    " bad_records %" PRIu64 " truncated %" PRIu64 "\n",
		    st->bad_frames, st->skipped_bytes, st->seq_gaps, st->seq_dups,
		    st->bad_payloads, st->bad_records, st->truncated_tail_bytes);
	RTPROF_CHECK_EQ(m->rc, 0);
	RTPROF_CHECK_EQ(st->bad_frames, 0);
	RTPROF_CHECK_EQ(st->skipped_bytes, 0);
	RTPROF_CHECK_EQ(st->seq_gaps, 0);
	RTPROF_CHECK_EQ(st->seq_dups, 0);
	RTPROF_CHECK_EQ(st->bad_payloads, 0);
	RTPROF_CHECK_EQ(st->bad_records, 0);
	RTPROF_CHECK_EQ(st->truncated_tail_bytes, 0);
	RTPROF_CHECK_EQ(st->damage, 0);
}

/* The DATA frames of session @s (all threads). */
static uint64_t
data_frames(const struct dm_session *s)
{
	uint64_t n = 0;

	for (size_t i = 0; i < s->nthreads; i++)
		n += s->threads[i].data_frames;
	return n;
}

/* A complete dump of one session holding exactly what @r recorded. */
static void
check_exact_dump(const struct dm *m, const struct recorder *r)
{
	const struct dm_session *s;
	const struct dm_thread *th;
	const struct rtprof_dump_trailer_thread *tt;

	check_no_damage(m);
	RTPROF_CHECK_EQ(m->nsessions, 1);
	s = &m->sessions[0];
	RTPROF_CHECK(s->has_trailer);
	RTPROF_CHECK(!s->trailer.limit_reached);
	RTPROF_CHECK_EQ(s->trailer.chunks_lost, 0);
	th = dm_find_thread(s, r->tid);
	RTPROF_CHECK(th != NULL);
	RTPROF_CHECK_STREQ(th->name, "recorder");
	tt = dm_trailer_thread(s, r->tid);
	RTPROF_CHECK(tt != NULL);
	printf("  dump: %" PRIu64 " bytes, %" PRIu64 " frames, %zu records of "
	    "the recorder (trailer: %" PRIu64 "), expected %" PRIu64 "\n",
	    m->stats.bytes, m->stats.frames, th->nrecs, tt->recorded,
	    recorder_expected(r));
	RTPROF_CHECK_EQ(th->nrecs, recorder_expected(r));
	RTPROF_CHECK_EQ(tt->recorded, th->nrecs);
	if (r->finish_on_chunk) {
		RTPROF_CHECK_EQ(tt->dropped_full, r->st.dropped_full);
		RTPROF_CHECK_EQ(tt->dropped_nested, r->st.dropped_nested);
		RTPROF_CHECK_EQ(th->drops_full, r->st.dropped_full);
		RTPROF_CHECK_EQ(th->drops_nested, r->st.dropped_nested);
	}
	RTPROF_CHECK_GT(dm_count(m, r->tid, RTPROF_REC_INSTANT), 0);
	RTPROF_CHECK_GT(dm_count(m, r->tid, RTPROF_REC_TYPED), 0);
	RTPROF_CHECK_GT(dm_count(m, r->tid, RTPROF_REC_COUNTER), 0);
	/* Copied strings arrive whole. */
	for (size_t i = 0; i < th->nrecs; i++) {
		const struct rtprof_rec_view *v = &th->recs[i].v;

		if (v->kind != RTPROF_REC_TYPED)
			continue;
		RTPROF_CHECK_EQ(v->nvals, 2);
		RTPROF_CHECK_EQ(v->vals[1].kind, RTPROF_VAL_STR);
		RTPROF_CHECK_EQ(v->vals[1].v.str.n, v->vals[0].v.u % (sizeof(blob) - 1));
		RTPROF_CHECK(memcmp(v->vals[1].v.str.p, blob, v->vals[1].v.str.n) == 0);
	}
}

static int
load_bytes(struct dm *m, const void *buf, size_t n)
{
	int fd = memfd_create("dump", 0), rc;
	const char *p = buf;

	RTPROF_CHECK(fd >= 0);
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		RTPROF_CHECK(w > 0);
		p += w;
		n -= (size_t)w;
	}
	RTPROF_CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
	rc = dm_load_fd(m, fd);
	close(fd);
	return rc;
}

/* A thread that reads a pipe slowly and keeps what it read. */
struct slow_reader {
	int fd;
	size_t piece;              /* bytes per read */
	long pause_us;             /* after each read */
	size_t close_after;        /* close the fd after this many (0: never) */
	pthread_t thread;
	char *buf;
	size_t len, cap;
	uint64_t reads, eintr;
	double last_read, max_gap;  /* longest time between two reads, s */
};

static void *
slow_reader_main(void *arg)
{
	struct slow_reader *r = arg;
	char piece[4096];

	for (;;) {
		ssize_t n = read(r->fd, piece, r->piece);

		if (n < 0 && errno == EINTR) {
			r->eintr++;
			continue;
		}
		RTPROF_CHECK(n >= 0);
		if (n == 0)
			break;
		r->reads++;
		{
			double t = now_s();

			if (r->last_read > 0 && t - r->last_read > r->max_gap)
				r->max_gap = t - r->last_read;
			r->last_read = t;
		}
		if (r->len + (size_t)n > r->cap) {
			r->cap = r->cap ? r->cap * 2 : 1 << 20;
			r->buf = realloc(r->buf, r->cap);
			RTPROF_CHECK(r->buf != NULL);
		}
		memcpy(r->buf + r->len, piece, (size_t)n);
		r->len += (size_t)n;
		if (r->close_after != 0 && r->len >= r->close_after) {
			close(r->fd);
			r->fd = -1;
			break;
		}
		if (r->pause_us > 0) {
			struct timespec ts = { 0, r->pause_us * 1000 };

			while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
				r->eintr++;
		}
	}
	return NULL;
}

static void
slow_reader_start(struct slow_reader *r)
{
	RTPROF_CHECK_EQ(pthread_create(&r->thread, NULL, slow_reader_main, r), 0);
}

/* After the stop, the report on the last session. The API says status is
 * -ENOENT only when no session was ever started. */
static void
check_status_after_stop(int want_error, int want_limit)
{
	struct rtprof_session_status st;
	int rc = rtprof_session_status_get(&st);

	if (rc != 0) {
		fprintf(stderr, "  rtprof_session_status_get() after stop: %d (%s); "
		    "rtprof.h: \"-ENOENT (never started)\"\n", rc, rtprof_strerror(rc));
	}
	RTPROF_CHECK_EQ(rc, 0);
	RTPROF_CHECK_EQ(st.running, 0);
	RTPROF_CHECK_EQ(st.sink_error, want_error);
	RTPROF_CHECK_EQ(st.limit_reached, want_limit);
}

/* ------------------------------------------------------------------ */
/* Cases                                                                */

static void
case_bad_fd(void)
{
	struct rtprof_settings s;
	struct rtprof_session_status st;
	int fd;

	RTPROF_CHECK_EQ(rtprof_session_status_get(&st), -ENOENT);
	RTPROF_CHECK_EQ(rtprof_session_stop(), -ENOENT);

	s = settings_for(-1);
	RTPROF_CHECK_EQ(rtprof_session_start(&s), -EINVAL);
	s = settings_for(-77);
	RTPROF_CHECK_EQ(rtprof_session_start(&s), -EINVAL);

	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	RTPROF_CHECK(fd >= 0);
	RTPROF_CHECK_EQ(close(fd), 0);
	s = settings_for(fd); /* a closed number */
	RTPROF_CHECK_EQ(rtprof_session_start(&s), -EINVAL);
	s = settings_for(1 << 20); /* beyond any limit */
	RTPROF_CHECK_EQ(rtprof_session_start(&s), -EINVAL);

	/* Nothing was left behind. */
	RTPROF_CHECK_EQ(rtprof_session_status_get(&st), -ENOENT);
	RTPROF_CHECK_EQ(rtprof_session_stop(), -ENOENT);
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	RTPROF_CHECK(fd >= 0);
	s = settings_for(fd);
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	RTPROF_CHECK_EQ(rtprof_session_start(&s), -EBUSY);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	close(fd);
}

static void
case_epipe(void)
{
	struct rtprof_settings s;
	struct rtprof_session_status st;
	struct recorder r = { .n = 200000 };
	struct slow_reader rd = { .piece = 4096, .close_after = 32 << 10 };
	_Atomic int stop = 0;
	sigset_t pending;
	int p[2];

	/* Default SIGPIPE disposition: a SIGPIPE delivered would kill us. */
	signal(SIGPIPE, SIG_DFL);
	declare_types();

	/* 1. Read end closed before the session. */
	RTPROF_CHECK_EQ(pipe(p), 0);
	RTPROF_CHECK_EQ(close(p[0]), 0);
	s = settings_for(p[1]);
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	recorder_start(&r);
	recorder_join(&r);
	RTPROF_CHECK_EQ(wait_sink_error(10000), -EPIPE);
	RTPROF_CHECK_EQ(status_now(&st), 0);
	RTPROF_CHECK_EQ(st.running, 1);
	RTPROF_CHECK_EQ(st.sink_error, -EPIPE);
	RTPROF_CHECK_EQ(rtprof_session_stop(), -EPIPE);
	close(p[1]);
	check_status_after_stop(-EPIPE, 0);
	/* Nothing could be written: every chunk the recorder filled is lost,
	 * and counted. */
	RTPROF_CHECK_EQ(status_now(&st), 0);
	printf("  closed before: bytes %" PRIu64 ", chunks written %" PRIu64
	    ", lost %" PRIu64 "\n", st.bytes_written, st.chunks_written,
	    st.chunks_lost);
	RTPROF_CHECK_EQ(st.bytes_written, 0);
	RTPROF_CHECK_EQ(st.chunks_written, 0);
	RTPROF_CHECK_GT(st.chunks_lost, 0);
	RTPROF_CHECK_GE(st.chunks_lost, r.st.chunks);

	/* 2. The reader goes away in the middle of the session; recording
	 * goes on until the writer has noticed. */
	RTPROF_CHECK_EQ(pipe(p), 0);
	rd.fd = p[0];
	slow_reader_start(&rd);
	s = settings_for(p[1]);
	s.chunk_size = 4096;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	memset(&r, 0, sizeof(r));
	r.stop = &stop;
	r.pace_every = 100;
	r.pace_us = 100;
	recorder_start(&r);
	RTPROF_CHECK_EQ(pthread_join(rd.thread, NULL), 0);
	RTPROF_CHECK_EQ(wait_sink_error(10000), -EPIPE);
	atomic_store(&stop, 1);
	recorder_join(&r);
	RTPROF_CHECK_EQ(rtprof_session_stop(), -EPIPE);
	close(p[1]);
	RTPROF_CHECK_EQ(status_now(&st), 0);
	printf("  reader got %zu bytes before closing; status: bytes %" PRIu64
	    ", chunks written %" PRIu64 ", lost %" PRIu64 "\n", rd.len,
	    st.bytes_written, st.chunks_written, st.chunks_lost);
	RTPROF_CHECK_GE(rd.len, 32 << 10);
	/* What the writer could not write is counted lost. */
	RTPROF_CHECK_GT(st.chunks_lost, 0);
	{
		/* What it got is a clean prefix of a dump. */
		struct dm m;

		RTPROF_CHECK_EQ(load_bytes(&m, rd.buf, rd.len), 0);
		RTPROF_CHECK_EQ(m.stats.bad_frames, 0);
		RTPROF_CHECK_EQ(m.stats.skipped_bytes, 0);
		RTPROF_CHECK_EQ(m.stats.seq_gaps, 0);
		RTPROF_CHECK_EQ(m.stats.bad_payloads, 0);
		RTPROF_CHECK_EQ(m.nsessions, 1);
		RTPROF_CHECK(!m.sessions[0].has_trailer);
		/* The writer counts the frames the pipe took whole (the
		 * reader may have left some unread); the frame it was
		 * writing when the pipe broke is the reader's truncated
		 * tail, not counted. */
		printf("  reader: %" PRIu64 " bytes of whole frames, %" PRIu64
		    " of a cut one, %" PRIu64 " DATA frames\n",
		    (uint64_t)rd.len - m.stats.truncated_tail_bytes,
		    m.stats.truncated_tail_bytes, data_frames(&m.sessions[0]));
		RTPROF_CHECK_LE((uint64_t)rd.len - m.stats.truncated_tail_bytes,
		    st.bytes_written);
		RTPROF_CHECK_LE(data_frames(&m.sessions[0]), st.chunks_written);
		dm_free(&m);
	}
	free(rd.buf);

	/* No SIGPIPE is left pending for the process either. */
	sigemptyset(&pending);
	RTPROF_CHECK_EQ(sigpending(&pending), 0);
	RTPROF_CHECK(!sigismember(&pending, SIGPIPE));
}

static void
case_enospc(void)
{
	struct rtprof_settings s;
	struct rtprof_session_status st;
	struct recorder r = { .n = 500000 };
	int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);

	RTPROF_CHECK(fd >= 0);
	declare_types();
	s = settings_for(fd);
	s.chunk_size = 16384;
	s.memory_limit = 1 << 20;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	recorder_start(&r);
	recorder_join(&r); /* it finishes: the sink never blocks it */
	RTPROF_CHECK_EQ(wait_sink_error(10000), -ENOSPC);
	for (int t = 0; t < 2000; t++) {
		RTPROF_CHECK_EQ(status_now(&st), 0);
		if (st.chunks_lost > 0)
			break;
		sleep_ms(5);
	}
	printf("  status: sink_error %d, bytes %" PRIu64 ", chunks written %"
	    PRIu64 ", lost %" PRIu64 "\n", st.sink_error, st.bytes_written,
	    st.chunks_written, st.chunks_lost);
	RTPROF_CHECK_EQ(st.sink_error, -ENOSPC);
	RTPROF_CHECK_GT(st.chunks_lost, 0);
	RTPROF_CHECK_EQ(st.chunks_written, 0);
	RTPROF_CHECK_EQ(rtprof_session_stop(), -ENOSPC);
	check_status_after_stop(-ENOSPC, 0);
	close(fd);
}

static void
case_ebadf(void)
{
	char path[] = "/tmp/rtprof-ebadf-XXXXXX";
	struct rtprof_settings s;
	struct rtprof_session_status st;
	_Atomic int stop = 0;
	struct recorder r = { .stop = &stop };
	const struct dm_thread *th;
	struct stat sb;
	struct dm m;
	int fd, keep;

#ifdef RTPROF_TEST_TSAN
	/* TSan's own fd bookkeeping fails an internal CHECK when an fd is
	 * closed under a thread that polls it. */
	printf("  SKIPPED under ThreadSanitizer\n");
	return;
#endif
	fd = mkstemp(path);
	RTPROF_CHECK(fd >= 0);
	unlink(path);
	/* A second descriptor of the file, to read back what was written. */
	keep = dup(fd);
	RTPROF_CHECK(keep >= 0);
	declare_types();
	s = settings_for(fd);
	s.chunk_size = 4096;
	s.flush_interval_us = 5000;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	recorder_start(&r);
	/* Some DATA frames out first (however loaded the machine is). */
	for (int t = 0; t < 2000; t++) {
		RTPROF_CHECK_EQ(status_now(&st), 0);
		if (st.chunks_written >= 4)
			break;
		sleep_ms(5);
	}
	RTPROF_CHECK_GE(st.chunks_written, 4);
	/* Really closed (no other fd may take the number until stop: this
	 * process opens nothing meanwhile). */
	RTPROF_CHECK_EQ(close(fd), 0);
	RTPROF_CHECK_EQ(wait_sink_error(10000), -EBADF);
	/* Recording goes on: the chunks it fills are lost, and counted. */
	for (int t = 0; t < 2000; t++) {
		RTPROF_CHECK_EQ(status_now(&st), 0);
		if (st.chunks_lost > 0)
			break;
		sleep_ms(5);
	}
	atomic_store(&stop, 1);
	recorder_join(&r);
	RTPROF_CHECK_EQ(rtprof_session_stop(), -EBADF);
	check_status_after_stop(-EBADF, 0);
	RTPROF_CHECK_EQ(status_now(&st), 0);
	printf("  status: bytes %" PRIu64 ", chunks written %" PRIu64 ", lost %"
	    PRIu64 "\n", st.bytes_written, st.chunks_written, st.chunks_lost);
	RTPROF_CHECK_GT(st.chunks_lost, 0);

	/* What reached the file before the close is a clean dump: every
	 * frame the writer counted as written, nothing else, no damage (a
	 * frame goes out in one writev, which either writes it whole to a
	 * regular file or fails with EBADF); the trailer could not follow. */
	RTPROF_CHECK_EQ(fstat(keep, &sb), 0);
	RTPROF_CHECK_EQ((uint64_t)sb.st_size, st.bytes_written);
	RTPROF_CHECK_EQ(lseek(keep, 0, SEEK_SET), 0);
	RTPROF_CHECK_EQ(dm_load_fd(&m, keep), 0);
	check_no_damage(&m);
	RTPROF_CHECK_EQ(m.nsessions, 1);
	RTPROF_CHECK(!m.sessions[0].has_trailer);
	RTPROF_CHECK_EQ(data_frames(&m.sessions[0]), st.chunks_written);
	th = dm_find_thread(&m.sessions[0], r.tid);
	RTPROF_CHECK(th != NULL);
	printf("  dump: %" PRIu64 " bytes, %" PRIu64 " DATA frames, %zu records "
	    "of the recorder of %" PRIu64 " it kept\n", m.stats.bytes,
	    data_frames(&m.sessions[0]), th->nrecs, recorder_expected(&r));
	RTPROF_CHECK_GT(th->nrecs, 0);
	RTPROF_CHECK_LT(th->nrecs, recorder_expected(&r));
	dm_free(&m);
	close(keep);
}

static void
case_eagain(void)
{
	struct rtprof_settings s;
	struct recorder r = { .n = 6000, .finish_on_chunk = 1,
		.pace_every = 20, .pace_us = 2000 };
	struct slow_reader rd = { .piece = 100, .pause_us = 1000 };
	struct dm m;
	int p[2];

	declare_types();
	RTPROF_CHECK_EQ(pipe(p), 0);
	RTPROF_CHECK(fcntl(p[1], F_SETPIPE_SZ, 4096) >= 4096);
	RTPROF_CHECK_EQ(fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK), 0);
	rd.fd = p[0];
	slow_reader_start(&rd);
	s = settings_for(p[1]);
	s.chunk_size = 16384;          /* frames 4x the pipe: short writes */
	s.memory_limit = 256 << 10;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	recorder_start(&r);
	recorder_join(&r);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	check_status_after_stop(0, 0);
	close(p[1]);
	RTPROF_CHECK_EQ(pthread_join(rd.thread, NULL), 0);
	printf("  reader: %zu bytes in %" PRIu64 " reads\n", rd.len, rd.reads);
	RTPROF_CHECK_GT(rd.len, 16 * 4096);
	RTPROF_CHECK_EQ(load_bytes(&m, rd.buf, rd.len), 0);
	check_exact_dump(&m, &r);
	dm_free(&m);
	free(rd.buf);
	close(p[0]);
}

static void
on_sigusr1(int sig)
{
	int e = errno;

	(void)sig;
	atomic_fetch_add(&sigusr1_count, 1);
	if (is_recorder) {
		/* Re-entrant when it interrupts a record: counted as
		 * dropped_nested, never a damaged record. */
		sig_marks++;
		rtprof_mark("sink.signal", RTPROF_CAT_OTHER);
	}
	errno = e;
}

static pid_t
find_writer_tid(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t tid = 0;

	RTPROF_CHECK(d != NULL);
	while ((e = readdir(d)) != NULL) {
		char path[300], name[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "re");
		if (f == NULL)
			continue;
		if (fgets(name, sizeof(name), f) != NULL &&
		    strncmp(name, "rtprof-writer", 13) == 0)
			tid = (pid_t)atoi(e->d_name);
		fclose(f);
	}
	closedir(d);
	return tid;
}

struct pelter {
	_Atomic int stop;
	pid_t writer;
	pthread_t recorder;
	pthread_t thread;
	uint64_t sent;
};

/* Signals to the recorder thread and to the (blocking) writer thread. */
static void *
pelter_main(void *arg)
{
	struct pelter *p = arg;

	while (!atomic_load(&p->stop)) {
		pthread_kill(p->recorder, SIGUSR1);
		if (p->writer > 0)
			syscall(SYS_tgkill, getpid(), p->writer, SIGUSR1);
		p->sent++;
		usleep(100);
	}
	return NULL;
}

static void
case_eintr(void)
{
	struct rtprof_settings s;
	struct recorder r = { .n = 6000, .finish_on_chunk = 1, .block_sigusr1 = 1,
		.pace_every = 20, .pace_us = 2000, .stopped_by_signals = 1 };
	struct slow_reader rd = { .piece = 100, .pause_us = 1000 };
	struct pelter pl = { 0 };
	struct sigaction sa;
	struct dm m;
	pid_t stopper, self = getpid();
	_Atomic int *quit;
	int p[2], status;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr1;
	sa.sa_flags = 0; /* no SA_RESTART: interrupted syscalls fail with EINTR */
	sigemptyset(&sa.sa_mask);
	RTPROF_CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	declare_types();

	/* Another process stops and continues this one, and sends it
	 * process-directed SIGUSR1s, until told to quit. */
	quit = mmap(NULL, sizeof(*quit), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	RTPROF_CHECK(quit != MAP_FAILED);
	atomic_store(quit, 0);
	stopper = fork();
	RTPROF_CHECK(stopper >= 0);
	if (stopper == 0) {
		for (unsigned i = 0; !atomic_load(quit); i++) {
			if (kill(self, SIGUSR1) != 0)
				_exit(0);
			if (i % 20 == 0) {
				kill(self, SIGSTOP);
				usleep(1000);
				kill(self, SIGCONT);
			}
			usleep(300);
		}
		_exit(0);
	}

	RTPROF_CHECK_EQ(pipe(p), 0);
	RTPROF_CHECK(fcntl(p[1], F_SETPIPE_SZ, 4096) >= 4096);
	rd.fd = p[0];
	slow_reader_start(&rd);
	s = settings_for(p[1]);
	s.chunk_size = 16384;
	s.memory_limit = 256 << 10;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	recorder_start(&r);
	pl.recorder = r.thread;
	/* The writer names itself once it runs. */
	for (int t = 0; t < 1000 && (pl.writer = find_writer_tid()) == 0; t++)
		sleep_ms(5);
	RTPROF_CHECK_GT(pl.writer, 0);
	RTPROF_CHECK_EQ(pthread_create(&pl.thread, NULL, pelter_main, &pl), 0);
	/* Stop pelting before the join: pthread_kill() needs a live handle. */
	while (!atomic_load(&r.done))
		sleep_ms(5);
	atomic_store(&pl.stop, 1);
	RTPROF_CHECK_EQ(pthread_join(pl.thread, NULL), 0);
	recorder_join(&r);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	atomic_store(quit, 1);
	while (waitpid(stopper, &status, 0) != stopper)
		RTPROF_CHECK_EQ(errno, EINTR);
	check_status_after_stop(0, 0);
	close(p[1]);
	RTPROF_CHECK_EQ(pthread_join(rd.thread, NULL), 0);
	printf("  signals: %" PRIu64 " handled, %" PRIu64 " sent to threads; "
	    "reader: %zu bytes, %" PRIu64 " EINTR\n",
	    (uint64_t)atomic_load(&sigusr1_count), pl.sent, rd.len, rd.eintr);
	RTPROF_CHECK_GT(atomic_load(&sigusr1_count), 0);
	RTPROF_CHECK_EQ(load_bytes(&m, rd.buf, rd.len), 0);
	check_exact_dump(&m, &r);
	dm_free(&m);
	free(rd.buf);
	close(p[0]);
}

/* Fill a pipe up (with its write end made non-blocking for a moment). */
static void
fill_pipe(int fd)
{
	char junk[4096];
	int fl = fcntl(fd, F_GETFL);

	memset(junk, 'x', sizeof(junk));
	RTPROF_CHECK_EQ(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
	while (write(fd, junk, sizeof(junk)) > 0 || errno == EINTR)
		;
	RTPROF_CHECK(errno == EAGAIN);
	while (write(fd, junk, 1) > 0)
		;
	RTPROF_CHECK_EQ(fcntl(fd, F_SETFL, fl), 0);
}

/*
 * @prefill: the pipe (4 KiB) is full from the start, so poll(2) never says
 * writable; otherwise a default (64 KiB) pipe starts empty and the frames
 * that fill it come in a single write(2) larger than the room left.
 */
static void
timeout_case(int prefill)
{
	struct rtprof_settings s;
	struct recorder r = { .n = 100000, .pace_every = 1000, .pace_us = 1000 };
	double t0, stop_s;
	int p[2], rc;

	declare_types();
	RTPROF_CHECK_EQ(pipe(p), 0);
	if (prefill) {
		RTPROF_CHECK(fcntl(p[1], F_SETPIPE_SZ, 4096) >= 4096);
		fill_pipe(p[1]);
	}
	s = settings_for(p[1]);
	s.write_timeout_ms = 200;
	t0 = now_s();
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	recorder_start(&r);
	recorder_join(&r);
	rc = wait_sink_error(10000);
	printf("  sink error after %.3f s: %d (%s)\n", now_s() - t0, rc,
	    rtprof_strerror(rc));
	if (rc == 0) {
		fprintf(stderr, "  FAIL: no sink error 10 s after start with "
		    "write_timeout_ms 200: the writer is blocked in write(2) on "
		    "the blocking pipe (poll said writable, the frame is larger "
		    "than the room left); rtprof_session_stop() would hang\n");
		abort();
	}
	RTPROF_CHECK_EQ(rc, -ETIMEDOUT);
	t0 = now_s();
	RTPROF_CHECK_EQ(rtprof_session_stop(), -ETIMEDOUT);
	stop_s = now_s() - t0;
	printf("  rtprof_session_stop() returned after %.3f s (write_timeout_ms "
	    "%u)\n", stop_s, s.write_timeout_ms);
	check_status_after_stop(-ETIMEDOUT, 0);
	close(p[0]);
	close(p[1]);
}

static void
case_timeout(void)
{
	timeout_case(1);
}

static void
case_timeout_big(void)
{
	timeout_case(0);
}

/*
 * A dump written under max_bytes: the file is within the cap, decodes with
 * no damage as one session, has the limit EVENT and a trailer that says the
 * cap was reached. Returns that session (in *@m, which the caller frees).
 */
static struct dm_session *
load_capped(struct dm *m, int fd, uint64_t max_bytes, struct stat *sb)
{
	struct dm_session *ds;
	int limit_event = 0;

	RTPROF_CHECK_EQ(fstat(fd, sb), 0);
	printf("  file: %lld bytes, max_bytes %" PRIu64 "\n", (long long)sb->st_size,
	    max_bytes);
	RTPROF_CHECK_LE(sb->st_size, (off_t)max_bytes);
	RTPROF_CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
	RTPROF_CHECK_EQ(dm_load_fd(m, fd), 0);
	check_no_damage(m);
	RTPROF_CHECK_EQ(m->nsessions, 1);
	ds = &m->sessions[0];
	for (size_t i = 0; i < ds->nevents; i++)
		limit_event |= strcmp(ds->events[i], "limit_reached") == 0;
	RTPROF_CHECK(limit_event);
	RTPROF_CHECK(ds->has_trailer);
	RTPROF_CHECK(ds->trailer.limit_reached);
	return ds;
}

/*
 * A sink that is slow but never stuck (a serial line): a DATA frame takes
 * about four times write_timeout_ms to go out, with progress every ~8 ms.
 * Return: what rtprof_session_stop() returned; the dump is checked when 0.
 */
static int
slow_progress_once(void)
{
	struct rtprof_settings s;
	struct recorder r = { .n = 15000, .finish_on_chunk = 1,
		.pace_every = 200, .pace_us = 1000 };
	struct slow_reader rd = { .piece = 4096, .pause_us = 8000 };
	struct dm m;
	int p[2], rc;

	RTPROF_CHECK_EQ(pipe(p), 0);
	rd.fd = p[0];
	slow_reader_start(&rd);
	s = settings_for(p[1]);
	s.chunk_size = 1 << 20;        /* ~2 s per DATA frame at ~500 KB/s */
	s.memory_limit = 4 << 20;
	s.write_timeout_ms = 500;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	recorder_start(&r);
	recorder_join(&r);
	rc = rtprof_session_stop();
	close(p[1]);
	RTPROF_CHECK_EQ(pthread_join(rd.thread, NULL), 0);
	printf("  stop: %d; reader: %zu bytes in %" PRIu64 " reads, longest "
	    "pause %.0f ms\n", rc, rd.len, rd.reads, rd.max_gap * 1e3);
	if (rc == 0) {
		RTPROF_CHECK_EQ(load_bytes(&m, rd.buf, rd.len), 0);
		check_exact_dump(&m, &r);
		dm_free(&m);
	}
	free(rd.buf);
	close(p[0]);
	return rc;
}

static void
case_slow_progress(void)
{
	int rc = 0;

	declare_types();
	/* A loaded machine can stall the reader thread for a while: only
	 * three timeouts in a row are a failure. */
	for (int attempt = 0; attempt < 3; attempt++) {
		rc = slow_progress_once();
		if (rc == 0)
			return;
	}
	fprintf(stderr, "  FAIL: stop: %d (%s) three times: the sink progressed "
	    "all the time; write_timeout_ms should count from the last "
	    "progress, not from the start of a frame\n", rc, rtprof_strerror(rc));
	RTPROF_CHECK_EQ(rc, 0);
}

/* A thread that records a little and exits (case_max_bytes). */
struct late {
	int tid;
	struct rtprof_thread_stats st;
};

static void *
late_main(void *arg)
{
	struct late *l = arg;

	RTPROF_CHECK_EQ(rtprof_thread_register("late", 0), 0);
	l->tid = (int)syscall(SYS_gettid);
	for (int i = 0; i < 10; i++)
		rtprof_mark("sink.late", RTPROF_CAT_OTHER);
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&l->st), 0);
	return NULL;
}

#define LATE_THREADS 300

static void
case_max_bytes(void)
{
	char path[] = "/tmp/rtprof-maxbytes-XXXXXX";
	struct rtprof_settings s;
	struct rtprof_session_status st;
	struct recorder r = { .n = 300000, .pace_every = 1000, .pace_us = 500 };
	const struct dm_session *ds;
	const struct dm_thread *th;
	const struct rtprof_dump_trailer_thread *tt;
	struct stat sb;
	struct dm m;
	static struct late late[LATE_THREADS];
	int no_counts = 0;
	int fd = mkstemp(path);

	RTPROF_CHECK(fd >= 0);
	unlink(path); /* read back through fd */
	declare_types();
	s = settings_for(fd);
	s.chunk_size = 4096;
	s.prefill = 64;
	s.max_bytes = 64 << 10;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	recorder_start(&r);
	recorder_join(&r);
	for (int t = 0; t < 2000; t++) {
		RTPROF_CHECK_EQ(status_now(&st), 0);
		if (st.limit_reached && st.chunks_lost > 0)
			break;
		sleep_ms(5);
	}
	printf("  status: limit_reached %d, bytes %" PRIu64 ", chunks written %"
	    PRIu64 ", lost %" PRIu64 "\n", st.limit_reached, st.bytes_written,
	    st.chunks_written, st.chunks_lost);
	RTPROF_CHECK(st.limit_reached);
	RTPROF_CHECK_GT(st.chunks_lost, 0);
	RTPROF_CHECK_EQ(st.sink_error, 0);
	RTPROF_CHECK_LE(st.bytes_written, s.max_bytes);
	/* Threads that come and go after the cap: soon their THREAD frames
	 * no longer fit either, and the counts those frames would settle go
	 * back to the trailer. */
	for (int k = 0; k < LATE_THREADS; k++) {
		pthread_t t;

		RTPROF_CHECK_EQ(pthread_create(&t, NULL, late_main, &late[k]), 0);
		RTPROF_CHECK_EQ(pthread_join(t, NULL), 0);
	}
	/* The program goes on after the cap (the writer keeps its rounds). */
	sleep_ms(1500);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	check_status_after_stop(0, 1);

	ds = load_capped(&m, fd, s.max_bytes, &sb);
	RTPROF_CHECK_GT(ds->trailer.chunks_lost, 0);
	RTPROF_CHECK_EQ(ds->trailer.bytes + 0 <= (uint64_t)sb.st_size, 1);
	th = dm_find_thread(ds, r.tid);
	tt = dm_trailer_thread(ds, r.tid);
	RTPROF_CHECK(th != NULL);
	RTPROF_CHECK(tt != NULL);
	printf("  dump: %zu records of the recorder decoded; trailer: recorded %"
	    PRIu64 ", chunks_lost %" PRIu64 "\n", th->nrecs, tt->recorded,
	    ds->trailer.chunks_lost);
	RTPROF_CHECK_GT(th->nrecs, 0);
	RTPROF_CHECK_LT(th->nrecs, recorder_expected(&r));
	/* wire-format.md, TRAILER: "threads: ... records written"; "records
	 * decoded per thread should equal recorded; less means frames were
	 * lost in transit". Nothing was lost in transit here. */
	RTPROF_CHECK_EQ(tt->recorded, th->nrecs);
	/* Each late thread's counts are in the dump (its records were not
	 * written: recorded 0, their chunks among those lost), or the
	 * trailer says it left them out for lack of room. */
	for (int k = 0; k < LATE_THREADS; k++) {
		th = dm_find_thread(ds, late[k].tid);
		tt = dm_trailer_thread(ds, late[k].tid);
		if (tt == NULL) {
			no_counts++;
			continue;
		}
		RTPROF_CHECK_EQ(tt->recorded, th != NULL ? th->nrecs : 0);
		RTPROF_CHECK_EQ(tt->dropped_full, late[k].st.dropped_full);
	}
	printf("  %d threads after the cap: %zu trailer entries, %" PRIu64
	    " left out, %d threads without counts\n", LATE_THREADS,
	    ds->trailer_entries, ds->trailer.threads_omitted, no_counts);
	RTPROF_CHECK_GT(ds->trailer_entries, 1);
	RTPROF_CHECK_LE((uint64_t)no_counts, ds->trailer.threads_omitted);
	dm_free(&m);
	close(fd);
}

/* Static strings that live forever, long and of many lengths. */
static char long_names[512][1024];

/* The cap is reached by STRING frames (a chunk's marker names), not by a
 * DATA frame: still an EVENT, a trailer, and no name left unresolved. */
static void
case_max_bytes_strings(void)
{
	char path[] = "/tmp/rtprof-maxstr-XXXXXX";
	struct rtprof_settings s;
	const struct dm_session *ds;
	const struct dm_thread *th;
	struct stat sb;
	struct dm m;
	int fd = mkstemp(path), tid;

	RTPROF_CHECK(fd >= 0);
	unlink(path); /* read back through fd */
	for (int i = 0; i < 512; i++) {
		size_t len = 300 + (size_t)(i * 37) % 700;

		memset(long_names[i], 'a' + i % 26, len);
		memcpy(long_names[i], "name-", 5);
		long_names[i][len] = 0;
	}
	s = settings_for(fd);
	s.chunk_size = 4096;
	s.prefill = 16;
	s.max_bytes = 64 << 10;
	RTPROF_CHECK_EQ(rtprof_thread_register("strings", 0), 0);
	tid = (int)syscall(SYS_gettid);
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	for (int r = 0; r < 20; r++) {
		for (int i = 0; i < 512; i++)
			rtprof_mark(long_names[i], RTPROF_CAT_OTHER);
		sleep_ms(10);
	}
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	check_status_after_stop(0, 1);
	ds = load_capped(&m, fd, s.max_bytes, &sb);
	printf("  %zu strings\n", ds->nstrings);
	th = dm_find_thread(ds, tid);
	if (th != NULL) {
		for (size_t i = 0; i < th->nrecs; i++) {
			RTPROF_CHECK(th->recs[i].name != NULL);
			RTPROF_CHECK(strncmp(th->recs[i].name, "name-", 5) == 0);
		}
		RTPROF_CHECK_EQ(dm_trailer_thread(ds, tid)->recorded, th->nrecs);
	}
	dm_free(&m);
	close(fd);
}

/* ------------------------------------------------------------------ */
/* Driver                                                               */

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
	{ "bad_fd", case_bad_fd },
	{ "epipe", case_epipe },
	{ "enospc", case_enospc },
	{ "ebadf", case_ebadf },
	{ "eagain", case_eagain },
	{ "eintr", case_eintr },
	{ "timeout", case_timeout },
	{ "timeout_big", case_timeout_big },
	{ "slow_progress", case_slow_progress },
	{ "max_bytes", case_max_bytes },
	{ "max_bytes_strings", case_max_bytes_strings },
};

static int
run_case(int i)
{
	pid_t pid;
	int status;
	double t0 = now_s();

	printf("== %s\n", cases[i].name);
	fflush(NULL);
	pid = fork();
	RTPROF_CHECK(pid >= 0);
	if (pid == 0) {
		alarm(CASE_TIMEOUT_S);
		cases[i].fn();
		fflush(NULL);
		_exit(0);
	}
	RTPROF_CHECK_EQ(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		printf("  ok (%.2f s)\n", now_s() - t0);
		return 0;
	}
	if (WIFSIGNALED(status))
		printf("  FAILED: %s (signal %d)%s\n", strsignal(WTERMSIG(status)),
		    WTERMSIG(status), WTERMSIG(status) == SIGALRM ?
		    ": the case hung (watchdog)" : "");
	else
		printf("  FAILED: exit status %d\n", WEXITSTATUS(status));
	return 1;
}

int
main(int argc, char **argv)
{
	int failed = 0, ran = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int want = argc <= 1;

		for (int a = 1; a < argc; a++)
			want |= strcmp(argv[a], cases[i].name) == 0;
		if (!want)
			continue;
		ran++;
		failed += run_case((int)i);
	}
	RTPROF_CHECK_GT(ran, 0);
	printf("test_sink_faults: %d of %d cases failed\n", failed, ran);
	return failed != 0;
}
