/*
 * record_target.c - an unmodified program for `rtprof record` tests: no
 * rtprof call. Two threads named "cruncher" (pthread_setname_np after they
 * start) run outer_work -> inner_work busy loops for about a second; the
 * main thread waits for them and exits with status 3.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void inner_work(void);
__attribute__((noinline)) void outer_work(void);

__attribute__((noinline)) void
inner_work(void)
{
	for (int i = 0; i < 200000; i++)
		sink += (unsigned long)i;
}

__attribute__((noinline)) void
outer_work(void)
{
	inner_work();
	__asm__ __volatile__("" ::: "memory");
}

static void *
worker(void *arg)
{
	struct timespec t0, t;

	(void)arg;
	pthread_setname_np(pthread_self(), "cruncher");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		outer_work();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 +
	    (t.tv_nsec - t0.tv_nsec) / 1000000 < 1000);
	return NULL;
}

int
main(void)
{
	pthread_t a, b;

	if (pthread_create(&a, NULL, worker, NULL) != 0 ||
	    pthread_create(&b, NULL, worker, NULL) != 0)
		return 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 3;
}
