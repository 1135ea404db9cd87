/*
 * test_signals.c - recording from a signal handler that interrupts the
 * thread in the middle of its own recording calls: never a torn or
 * overlapping record, never a crash; every handler event is recorded or
 * counted as dropped (nested).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dumpmodel.h"
#include "rtprof.h"

static atomic_ulong handler_attempts;
static const rtprof_marker_type *seq_type;

static void
on_signal(int sig)
{
	(void)sig;
	rtprof_label_push("in-handler");
	rtprof_mark("handler", RTPROF_CAT_OTHER);
	rtprof_label_pop();
	atomic_fetch_add_explicit(&handler_attempts, 1, memory_order_relaxed);
}

static atomic_int done;
static atomic_int target_ready;
static pthread_t target;
static pid_t target_tid;
static unsigned long target_attempts;
static struct rtprof_thread_stats target_stats;

static void *
target_main(void *arg)
{
	rtprof_rec r;

	(void)arg;
	RTPROF_CHECK_EQ(rtprof_thread_register("target", 0), 0);
	target_tid = gettid();
	atomic_store(&target_ready, 1);
	while (!atomic_load(&done)) {
		for (int i = 0; i < 64; i++) {
			RTPROF_LABEL_SCOPE("loop");
			rtprof_mark("main", RTPROF_CAT_OTHER);
			if (rtprof_marker_open(&r, seq_type, RTPROF_PHASE_INSTANT, rtprof_now(), 0)) {
				rtprof_put_u64(&r, target_attempts + 1);
				rtprof_put_str(&r, "payload-with-some-length", 24);
				rtprof_marker_close(&r);
			}
			target_attempts += 2;
		}
		usleep(50); /* let the writer keep up: fewer full drops */
	}
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&target_stats), 0);
	return NULL;
}

int
main(void)
{
	static const struct rtprof_marker_schema seq = {
		"Seq", RTPROF_CAT_OTHER, 0, NULL, NULL, NULL, 2, {
			{ "n", NULL, "integer", RTPROF_FIELD_U64 },
			{ "s", NULL, "string", RTPROF_FIELD_STR },
		}
	};
	struct sigaction sa;
	struct rtprof_settings set;
	int fd = memfd_create("signals", MFD_CLOEXEC);
	struct dm m;
	struct dm_thread *th;
	unsigned long sent = 0, handler_recs = 0, main_recs = 0;
	struct timespec t0, now;

	seq_type = rtprof_marker_type_declare(&seq);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	memset(&set, 0, sizeof(set));
	set.struct_size = sizeof(set);
	set.fd = fd;
	set.chunk_size = 4096; /* many chunk switches under the signals */
	set.prefill = 64;
	set.flush_interval_us = 1000;
	RTPROF_CHECK_EQ(rtprof_session_start(&set), 0);
	pthread_create(&target, NULL, target_main, NULL);
	while (!atomic_load(&target_ready))
		sched_yield();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		pthread_kill(target, SIGUSR1);
		sent++;
		if (sent % 16 == 0)
			usleep(10);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec < 2);
	/* Standard signals coalesce: fewer handler runs than signals sent.
	 * Let the last one be handled, then stop the thread; the accounting
	 * uses the handler's own count. */
	usleep(20000);
	atomic_store(&done, 1);
	pthread_join(target, NULL);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);

	lseek(fd, 0, SEEK_SET);
	RTPROF_CHECK_EQ(dm_load_fd(&m, fd), 0);
	RTPROF_CHECK_EQ(m.stats.damage, 0);
	th = dm_thread(&m.sessions[0], target_tid);
	for (size_t i = 0; i < th->nrecs; i++) {
		const char *n = th->recs[i].name;

		if (th->recs[i].v.kind == 1 && strcmp(n, "handler") == 0)
			handler_recs++;
		else
			main_recs++;
		if (th->recs[i].v.kind == 5)
			RTPROF_CHECK_STREQ(th->recs[i].v.vals[1].v.str.p,
			    "payload-with-some-length");
	}
	printf("signals: %lu sent, handler recorded %lu, nested drops %llu, "
	    "full drops %llu, thread recorded %lu of %lu\n", sent, handler_recs,
	    (unsigned long long)target_stats.dropped_nested,
	    (unsigned long long)target_stats.dropped_full, main_recs, target_attempts);
	RTPROF_CHECK_GT(handler_recs, 0);
	/* Exact accounting over the thread and its handler together. */
	RTPROF_CHECK_EQ(th->nrecs + target_stats.dropped_nested +
	    target_stats.dropped_full + target_stats.outside,
	    target_attempts + atomic_load(&handler_attempts));
	dm_free(&m);
	puts("test_signals: ok");
	return 0;
}
