/*
 * soak_rec.c - the busy program of the soak test (scripts/soak.sh; not a
 * ctest entry): records for a long time with a small memory limit and
 * writes its own accounting, so that the dump can be checked against it.
 *
 *   soak_rec SECONDS STATS [MEMORY_BYTES [CHURN_MS]]
 *
 * The dump streams to standard output (a pipe to soak_check), 4 KiB chunks,
 * MEMORY_BYTES of them (default 512 KiB), sampling every 1 ms. Threads:
 *   - "audio" (real-time): an audio callback every 2.67 ms (128 frames at
 *     48 kHz, rtprof_audio_begin/end), with labels and a little DSP work,
 *     now and then more than its budget (overrun markers);
 *   - "worker N" (3): labels, begin/end, typed markers with copied strings,
 *     counters, and sleep/wake around short naps;
 *   - churn: a new short-lived thread every CHURN_MS ms (default 50; 0:
 *     none) ("short"), which records a few hundred events and exits (half
 *     unregister explicitly, half in the thread-exit destructor): thread
 *     records must not pile up;
 *   - main: rtprof_session_dump() every 10 s (partial chunks go out in
 *     parts), then stop.
 * Every recording thread counts its attempts and, once it will record no
 * more (the session runs until every thread is joined, so nothing of it
 * can be late), writes a line to STATS:
 *   thread TID ATTEMPTS DROPPED_FULL DROPPED_NESTED OUTSIDE LATE RECYCLED CHUNKS
 * and after the stop, the session's status:
 *   session CHUNKS_WRITTEN CHUNKS_LOST BYTES POOL_CHUNKS MEMORY_BYTES SINK_ERROR
 * Lines are written as they come (stdio, line by line), so the program's
 * memory does not grow with the run.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rtprof.h"

#define WORKERS 3

static atomic_int stop;
static FILE *stats;
static pthread_mutex_t stats_mu = PTHREAD_MUTEX_INITIALIZER;
static const rtprof_marker_type *job_type;
static rtprof_counter *jobs, *queue;

static void
nap_us(long us)
{
	struct timespec t = { us / 1000000, (us % 1000000) * 1000L };

	/* The sampling signal may cut it short (EINTR): fine. */
	nanosleep(&t, NULL);
}

static __attribute__((noinline)) double
work(unsigned n)
{
	volatile double x = 1.0;

	for (unsigned i = 0; i < n; i++)
		x = x * 1.000001 + 0.5 / (i + 1);
	return x;
}

/* Writes the calling thread's accounting line. Context: registered thread
 * that records no more. */
static void
report(uint64_t attempts)
{
	struct rtprof_thread_stats st;

	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&st), 0);
	pthread_mutex_lock(&stats_mu);
	fprintf(stats, "thread %ld %llu %llu %llu %llu %llu %llu %llu\n",
	    (long)syscall(SYS_gettid), (unsigned long long)attempts,
	    (unsigned long long)st.dropped_full,
	    (unsigned long long)st.dropped_nested,
	    (unsigned long long)st.outside, (unsigned long long)st.late,
	    (unsigned long long)st.recycled, (unsigned long long)st.chunks);
	fflush(stats);
	pthread_mutex_unlock(&stats_mu);
}

static void *
audio_main(void *arg)
{
	rtprof_audio a;
	uint64_t attempts = 0, n = 0;
	struct timespec next;

	(void)arg;
	RTPROF_CHECK_EQ(rtprof_thread_register("audio", RTPROF_THREAD_RT), 0);
	RTPROF_CHECK_EQ(rtprof_audio_init(&a, "audio"), 0);
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t overruns = a.overrun_count;

		next.tv_nsec += 2666667;
		if (next.tv_nsec >= 1000000000) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		/* begin: the jitter counter from the second callback on;
		 * end: the callback marker and the load counter, and an
		 * overrun marker and counter add when over budget. */
		attempts += n++ > 0;
		rtprof_audio_begin(&a, 128, 48000);
		{
			RTPROF_LABEL_SCOPE("mix");

			work(n % 500 == 0 ? 1500000 : 2000 + (unsigned)(n % 7) * 300);
		}
		rtprof_audio_end(&a);
		attempts += 2 + 2 * (a.overrun_count - overruns);
	}
	report(attempts);
	return NULL;
}

static const char text[] = "0123456789abcdefghijklmnopqrstuvwxyz0123456789"
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/* One job: a few records of every kind. Returns the attempts made. */
static uint64_t
job(uint64_t i)
{
	uint64_t a = 0;
	rtprof_rec r;

	RTPROF_LABEL_SCOPE("job");
	rtprof_begin("job", RTPROF_CAT_COMPUTE);
	a++;
	if (rtprof_marker_open(&r, job_type, RTPROF_PHASE_INSTANT, rtprof_now(), 0)) {
		rtprof_put_u64(&r, i);
		rtprof_put_str(&r, text, i % (sizeof(text) - 1));
		rtprof_marker_close(&r);
	}
	a++;
	work(3000);
	rtprof_counter_add(jobs, 1);
	a++;
	rtprof_counter_set(queue, (int64_t)(i % 17));
	a++;
	rtprof_mark("done", RTPROF_CAT_USER);
	a++;
	rtprof_end("job", RTPROF_CAT_COMPUTE);
	a++;
	return a;
}

static void *
worker_main(void *arg)
{
	char name[32];
	uint64_t attempts = 0;

	snprintf(name, sizeof(name), "worker %d", (int)(intptr_t)arg);
	RTPROF_CHECK_EQ(rtprof_thread_register(name, 0), 0);
	for (uint64_t i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
		attempts += job(i);
		if (i % 8 == 7) {
			rtprof_thread_sleep();
			nap_us(1000);
			rtprof_thread_wake();
			attempts += 2;
		} else {
			nap_us(100);
		}
	}
	report(attempts);
	return NULL;
}

static void *
short_main(void *arg)
{
	uintptr_t k = (uintptr_t)arg;
	uint64_t attempts = 0;

	RTPROF_CHECK_EQ(rtprof_thread_register("short", 0), 0);
	for (uint64_t i = 0; i < 50; i++)
		attempts += job(i);
	report(attempts);
	if (k % 2)
		RTPROF_CHECK_EQ(rtprof_thread_unregister(), 0);
	return NULL; /* else the thread-exit destructor unregisters */
}

static long churn_ms = 50;

static void *
churn_main(void *arg)
{
	uintptr_t k = 0;

	(void)arg;
	while (churn_ms > 0 &&
	    !atomic_load_explicit(&stop, memory_order_relaxed)) {
		pthread_t t;

		RTPROF_CHECK_EQ(pthread_create(&t, NULL, short_main, (void *)k++), 0);
		RTPROF_CHECK_EQ(pthread_join(t, NULL), 0);
		nap_us(churn_ms * 1000);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	static const struct rtprof_marker_schema job_schema = {
		.name = "Job",
		.category = RTPROF_CAT_COMPUTE,
		.nfields = 2,
		.fields = {
			{ "index", "Index", "integer", RTPROF_FIELD_U64 },
			{ "tag", "Tag", "string", RTPROF_FIELD_STR },
		},
	};
	struct rtprof_settings s;
	struct rtprof_session_status st;
	pthread_t audio, workers[WORKERS], churn;
	long seconds;

	if (argc < 3 || (seconds = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: soak_rec SECONDS STATS [MEMORY_BYTES "
		    "[CHURN_MS]] > DUMP\n");
		return 2;
	}
	if (argc > 4)
		churn_ms = atol(argv[4]);
	stats = fopen(argv[2], "w");
	RTPROF_CHECK(stats != NULL);
	setvbuf(stats, NULL, _IOLBF, 0);
	job_type = rtprof_marker_type_declare(&job_schema);
	jobs = rtprof_counter_declare("jobs", "Soak", "jobs done");
	queue = rtprof_counter_declare("queue", "Soak", "queue length");
	RTPROF_CHECK(job_type != NULL && jobs != NULL && queue != NULL);

	memset(&s, 0, sizeof(s));
	s.struct_size = sizeof(s);
	s.fd = STDOUT_FILENO;
	s.mode = RTPROF_MODE_STREAM;
	s.chunk_size = 4096;
	s.memory_limit = argc > 3 ? strtoull(argv[3], NULL, 0) : 512u << 10;
	s.sample_interval_us = 1000;
	/* A reader that falls far behind is a failure, not a reason to
	 * drop the session: give it a minute. */
	s.write_timeout_ms = 60000;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);

	RTPROF_CHECK_EQ(pthread_create(&audio, NULL, audio_main, NULL), 0);
	for (intptr_t i = 0; i < WORKERS; i++)
		RTPROF_CHECK_EQ(pthread_create(&workers[i], NULL, worker_main,
		    (void *)(i + 1)), 0);
	RTPROF_CHECK_EQ(pthread_create(&churn, NULL, churn_main, NULL), 0);
	for (long t = 0; t < seconds; t++) {
		sleep(1);
		if (t % 10 == 9)
			RTPROF_CHECK_EQ(rtprof_session_dump(), 0);
	}
	atomic_store(&stop, 1);
	RTPROF_CHECK_EQ(pthread_join(churn, NULL), 0);
	RTPROF_CHECK_EQ(pthread_join(audio, NULL), 0);
	for (int i = 0; i < WORKERS; i++)
		RTPROF_CHECK_EQ(pthread_join(workers[i], NULL), 0);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	RTPROF_CHECK_EQ(rtprof_session_status_get(&st), 0);
	fprintf(stats, "session %llu %llu %llu %llu %llu %d\n",
	    (unsigned long long)st.chunks_written,
	    (unsigned long long)st.chunks_lost,
	    (unsigned long long)st.bytes_written,
	    (unsigned long long)st.pool_chunks,
	    (unsigned long long)st.memory_bytes, st.sink_error);
	fclose(stats);
	return 0;
}
