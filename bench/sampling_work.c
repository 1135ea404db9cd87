/*
 * sampling_work.c - the workload of bench/perf_compare.sh: one busy thread
 * at a call depth of 10 for a fixed amount of work (not time), so that
 * what a profiler adds shows as CPU time. Linked with librtprof: under
 * RTPROF_FD the main thread is registered and sampled.
 *
 *   sampling_work ITERATIONS
 *
 * Prints, at exit: "thread-cpu-ns N" (the busy thread's own CPU time),
 * "sampler-cpu-ns N" (the rtprof sampler thread's, from its schedstat; 0
 * without one) and "process-cpu-ns N" (every thread of the process).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rtprof.h"

static volatile uint64_t sink;

__attribute__((noinline)) void leaf(uint64_t n);
__attribute__((noinline)) void level(int d, uint64_t n);

__attribute__((noinline)) void
leaf(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		sink = sink * 31 + i;
}

__attribute__((noinline)) void
level(int d, uint64_t n)
{
	if (d == 0)
		leaf(n);
	else
		level(d - 1, n);
	sink++;
}

static uint64_t
clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The first field of /proc/self/task/TID/schedstat (ns on CPU) of the
 * thread named rtprof-sampler, or 0. */
static uint64_t
sampler_cpu_ns(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	uint64_t ns = 0;

	while (d != NULL && (e = readdir(d)) != NULL) {
		char path[300], comm[64] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if ((f = fopen(path, "re")) == NULL)
			continue;
		if (fgets(comm, sizeof(comm), f) == NULL)
			comm[0] = 0;
		fclose(f);
		if (strncmp(comm, "rtprof-sampler", 14) != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat",
		    e->d_name);
		if ((f = fopen(path, "re")) != NULL) {
			unsigned long long v = 0;

			if (fscanf(f, "%llu", &v) == 1)
				ns = v;
			fclose(f);
		}
	}
	if (d != NULL)
		closedir(d);
	return ns;
}

int
main(int argc, char **argv)
{
	uint64_t iters = argc > 1 ? strtoull(argv[1], NULL, 0) : 300000000ull;

	(void)rtprof_now();     /* linked: RTPROF_FD starts a session */

	for (uint64_t done = 0; done < iters; done += 100000)
		level(10, 100000);
	printf("thread-cpu-ns %llu\n",
	    (unsigned long long)clock_ns(CLOCK_THREAD_CPUTIME_ID));
	printf("sampler-cpu-ns %llu\n", (unsigned long long)sampler_cpu_ns());
	printf("process-cpu-ns %llu\n",
	    (unsigned long long)clock_ns(CLOCK_PROCESS_CPUTIME_ID));
	return 0;
}
