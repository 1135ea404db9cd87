/*
 * clock.h - a clock's reading in seconds, for the benchmarks that time CPU
 * (CLOCK_THREAD_CPUTIME_ID, CLOCK_PROCESS_CPUTIME_ID, a thread's clock id)
 * or wall time. No rtprof header: the codec-only benchmarks use it too.
 * Context: any thread.
 */
#ifndef RTPROF_BENCH_CLOCK_H
#define RTPROF_BENCH_CLOCK_H

#include <time.h>

/* @id's reading in seconds; -1 when it cannot be read. */
static inline double
bench_clock_s(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		return -1;
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
