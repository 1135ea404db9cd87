/*
 * test_rt_faults.c - a real-time thread takes no page fault in its
 * recording calls across session restarts (issue 18, item 9).
 *
 * Chunk memory handed to a recording thread must be resident: allocated
 * and touched on rtprof's own threads (core/pool.c), and with
 * settings.lock_memory locked too. A thread registered RTPROF_THREAD_RT
 * (SCHED_FIFO when allowed, else SCHED_OTHER: the fault count does not
 * depend on the policy, and the test says which it got) records markers,
 * labels and counters in a loop while the main thread starts and stops
 * NSESSIONS sessions, each with another chunk size than the one before
 * (256 or 192 KiB, above malloc's mmap threshold), so that every session
 * hands the thread fresh chunks from new mappings. Around
 * every batch of recording calls the thread reads its own minor and major
 * fault counts (getrusage RUSAGE_THREAD); a batch's faults are charged to
 * the session that was running when it began.
 *
 * Warm-up: the first session is not counted. Its faults are the first
 * touches of things that exist once per thread or process, not per chunk:
 * the thread's TLS and stack pages, the library's code and data pages of
 * the recording path, the label stack. Every later session must take 0
 * minor and 0 major faults in recording calls. Run twice: lock_memory 0
 * and 1 (mlock of every chunk; EPERM/ENOMEM from a low RLIMIT_MEMLOCK is
 * the documented fallback and must not stop the session).
 *
 * Context: the main thread (control) and one recording thread; the
 * variables they share are atomics with the orders noted.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <rtprof.h>

#include "check.h"

/* AddressSanitizer makes mlock a no-op (it says so on stderr). */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif

#ifdef TEST_ASAN
#define TEST_ASAN_ON 1
#else
#define TEST_ASAN_ON 0
#endif

#define NSESSIONS 200
#define MAX_SESSIONS 1024

/* Written by the main thread, read by the recorder. */
static atomic_int session_no;           /* 0: none yet; n: the nth */
static atomic_bool done;
/* Written by the recorder, read by the main thread after the join. */
static long faults[MAX_SESSIONS + 1];
static unsigned long batches[MAX_SESSIONS + 1];
static atomic_ulong nbatches;           /* progress, for the main thread */
static const char *policy = "SCHED_OTHER";

static long
thread_faults(void)
{
	struct rusage ru;

	RTPROF_CHECK_EQ(getrusage(RUSAGE_THREAD, &ru), 0);
	return ru.ru_minflt + ru.ru_majflt;
}

/* One batch of recording calls: about a kilobyte of records, so a
 * session writes across several pages of its chunk. */
static void
record_batch(rtprof_counter *ctr)
{
	for (int i = 0; i < 16; i++) {
		RTPROF_LABEL_SCOPE("batch");
		rtprof_mark("tick", RTPROF_CAT_AUDIO);
		rtprof_counter_add(ctr, 1);
	}
}

static void
try_fifo(void)
{
	struct sched_param sp = { .sched_priority = 10 };

	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0)
		policy = "SCHED_FIFO";
}

/* Context: the recording thread. */
static void *
recorder(void *arg)
{
	rtprof_counter *ctr = arg;
	const struct timespec pause = { 0, 50000 };

	try_fifo();
	RTPROF_CHECK_EQ(rtprof_thread_register("rt", RTPROF_THREAD_RT), 0);
	/* relaxed: only which session a batch counts for; a batch that
	 * straddles a restart is charged to the session it began in. */
	while (!atomic_load_explicit(&done, memory_order_relaxed)) {
		int n = atomic_load_explicit(&session_no,
		    memory_order_relaxed);
		long before = thread_faults(), after;

		record_batch(ctr);
		after = thread_faults();
		if (n > 0 && n <= MAX_SESSIONS) {
			faults[n] += after - before;
			batches[n]++;
		}
		atomic_fetch_add_explicit(&nbatches, 1, memory_order_relaxed);
		/* As an audio thread between callbacks (and never a CPU
		 * hog at SCHED_FIFO on a shared machine). */
		nanosleep(&pause, NULL);
	}
	rtprof_thread_unregister();
	return NULL;
}

/* VmLck of this process, kB (-1: unknown). */
static long
locked_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* With lock_memory, the chunks are locked, unless RLIMIT_MEMLOCK is too
 * low for them (then said, not failed: the documented fallback). */
static void
check_locked(int lock_memory, long kb)
{
	struct rlimit rl;

	RTPROF_CHECK_EQ(getrlimit(RLIMIT_MEMLOCK, &rl), 0);
	if (!lock_memory) {
		RTPROF_CHECK_EQ(kb, 0);
	} else if (TEST_ASAN_ON || getenv("RTPROF_TEST_TSAN") != NULL) {
		printf("test_rt_faults: under ASan and TSan mlock does "
		    "nothing (%ld kB locked)\n", kb);
	} else if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (1u << 20)) {
		printf("test_rt_faults: RLIMIT_MEMLOCK %llu: chunks not "
		    "locked (%ld kB)\n", (unsigned long long)rl.rlim_cur, kb);
	} else {
		RTPROF_CHECK(kb >= 256);
	}
}

/* Let the recorder run at least @n more batches (it may be starved
 * under SCHED_OTHER on a loaded machine: wait, never assume). */
static void
wait_batches(unsigned long n)
{
	unsigned long start = atomic_load_explicit(&nbatches,
	    memory_order_relaxed);
	struct timespec ts = { 0, 200000 };

	while (atomic_load_explicit(&nbatches, memory_order_relaxed) - start
	    < n)
		nanosleep(&ts, NULL);
}

static void
run(int lock_memory)
{
	struct rtprof_settings s;
	rtprof_counter *ctr = rtprof_counter_declare("n", "Other", "batches");
	pthread_t t;
	long later = 0, kb = -1;
	unsigned long counted = 0;
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	RTPROF_CHECK(fd >= 0 && ctr != NULL);
	memset(faults, 0, sizeof(faults));
	memset(batches, 0, sizeof(batches));
	atomic_store(&done, false);
	atomic_store(&session_no, 0);
	RTPROF_CHECK_EQ(pthread_create(&t, NULL, recorder, ctr), 0);
	for (int n = 1; n <= NSESSIONS; n++) {
		memset(&s, 0, sizeof(s));
		s.struct_size = sizeof(s);
		s.fd = fd;
		/* Above malloc's mmap threshold, and a size other than the
		 * previous session's: the pool frees its chunks and maps
		 * fresh ones (never touched) at every restart. */
		s.chunk_size = n % 2 ? 256 << 10 : 192 << 10;
		s.memory_limit = 8u << 20;
		s.sample_interval_us = RTPROF_SAMPLING_OFF;
		s.lock_memory = lock_memory;
		RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
		/* seq_cst (default): after the start, so the batches counted
		 * for session n ran while it was running. */
		atomic_store(&session_no, n);
		wait_batches(n == 1 ? 200 : 20);
		if (n == NSESSIONS)
			kb = locked_kb();
		atomic_store(&session_no, MAX_SESSIONS + 1);
		RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	}
	atomic_store(&done, true);
	RTPROF_CHECK_EQ(pthread_join(t, NULL), 0);
	close(fd);
	for (int n = 2; n <= NSESSIONS; n++) {
		later += faults[n];
		counted += batches[n];
		if (faults[n] != 0)
			fprintf(stderr, "test_rt_faults: session %d: %ld "
			    "faults in %lu batches\n", n, faults[n],
			    batches[n]);
	}
	printf("test_rt_faults: lock_memory %d, %s: warm-up session %ld "
	    "faults; sessions 2..%d: %ld faults in %lu batches of 48 calls\n",
	    lock_memory, policy, faults[1], NSESSIONS, later, counted);
	printf("test_rt_faults: VmLck in the last session: %ld kB\n", kb);
	fflush(stdout);
	check_locked(lock_memory, kb);
	RTPROF_CHECK(counted >= 20ul * (NSESSIONS - 1));
	/* ThreadSanitizer maps its shadow of the chunks on first touch:
	 * those faults are its own, not the chunks'. */
	if (getenv("RTPROF_TEST_TSAN") == NULL)
		RTPROF_CHECK_EQ(later, 0);
}

int
main(void)
{
	run(0);
	run(1);
	printf("test_rt_faults: ok\n");
	return 0;
}
