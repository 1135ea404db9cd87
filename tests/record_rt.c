/*
 * record_rt.c - for test_record.py: under `rtprof record`, a thread that
 * makes itself real-time (RTPROF_THREAD_RT, as an audio thread would) and
 * a plain one each sleep 5 times for 2 ms. Their "Blocked" markers are
 * recorded; only the plain thread's carry the stack where they blocked
 * (the preload library never unwinds a real-time thread).
 * Context: main thread and two threads.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "rtprof.h"

static void
naps(void)
{
	struct timespec ts = { 0, 2000000 };

	for (int i = 0; i < 5; i++)
		nanosleep(&ts, NULL);
}

static void *
rt_main(void *arg)
{
	(void)arg;
	/* The preload library registered this thread when it was created:
	 * register again as real-time. */
	rtprof_thread_unregister();
	if (rtprof_thread_register("rt", RTPROF_THREAD_RT) != 0) {
		fprintf(stderr, "record_rt: cannot register the rt thread\n");
		return (void *)1;
	}
	naps();
	return NULL;
}

static void *
plain_main(void *arg)
{
	(void)arg;
	naps();
	return NULL;
}

int
main(void)
{
	pthread_t a, b;
	void *ra, *rb;

	pthread_create(&a, NULL, rt_main, NULL);
	pthread_create(&b, NULL, plain_main, NULL);
	pthread_join(a, &ra);
	pthread_join(b, &rb);
	return ra != NULL || rb != NULL;
}
