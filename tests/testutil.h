/*
 * testutil.h - small helpers the runtime's stress tests share: a seeded
 * generator (xorshift64*), sleeping and spinning for microseconds, the
 * calling thread's kernel id, pinning a thread to a CPU, the sampler
 * thread's id, the monotonic clock in ns or s, the thread's CPU time, the
 * pages the kernel has migrated. Test support only (the
 * test programs that are profiled use it too).
 */
#ifndef RTPROF_TESTUTIL_H
#define RTPROF_TESTUTIL_H

#include <dirent.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

struct rng {
	uint64_t s;
};

static inline uint32_t
rng_next(struct rng *g)
{
	/* xorshift64* */
	g->s ^= g->s >> 12;
	g->s ^= g->s << 25;
	g->s ^= g->s >> 27;
	return (uint32_t)((g->s * 2685821657736338717ull) >> 32);
}

static inline void
rng_seed(struct rng *g, uint64_t seed)
{
	g->s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
	if (g->s == 0)
		g->s = 1;
	rng_next(g);
}

/* A signal (the sampler's, a test's own) just shortens it. */
static inline void
sleep_us(unsigned us)
{
	struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static inline uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time the calling thread has used, in ns. */
static inline uint64_t
thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Clock @c (another thread's CPU clock: pthread_getcpuclockid) in ns. */
static inline uint64_t
clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in seconds. */
static inline double
now_s(void)
{
	return (double)mono_ns() / 1e9;
}

static inline void
spin_us(unsigned us)
{
	uint64_t t0 = mono_ns();

	while (mono_ns() - t0 < (uint64_t)us * 1000)
		;
}

static inline pid_t
gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* Pin thread @tid to CPU @cpu, or let it run anywhere (@cpu < 0).
 * Return: sched_setaffinity()'s. */
static inline int
pin(pid_t tid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	if (cpu >= 0) {
		CPU_SET(cpu, &set);
	} else {
		for (int i = 0; i < CPU_SETSIZE; i++)
			CPU_SET(i, &set);
	}
	return sched_setaffinity(tid, sizeof(set), &set);
}

/* The sampler thread's id ("rtprof-sampler" in /proc/self/task), or 0. */
static inline pid_t
sampler_tid(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t tid = 0;

	if (d == NULL)
		return 0;
	while (tid == 0 && (e = readdir(d)) != NULL) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
		    e->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(comm, sizeof(comm), f) != NULL &&
		    strcmp(comm, "rtprof-sampler\n") == 0)
			tid = (pid_t)atoi(e->d_name);
		fclose(f);
	}
	closedir(d);
	return tid;
}

/*
 * Pages the kernel has migrated so far, system-wide (/proc/vmstat
 * pgmigrate_success: compaction, which runs whenever memory is fragmented
 * and moves any process's movable pages, even mlocked ones while
 * vm.compact_unevictable_allowed is 1). A thread touching a page being
 * moved sleeps in migration_entry_wait() until the copy is done: a
 * voluntary switch inside a page fault that no program code can avoid
 * (seen here with perf's sched_switch stacks in a test's own text and
 * stack pages as well as in chunks). 0 when unreadable.
 */
static inline uint64_t
pages_migrated(void)
{
	FILE *f = fopen("/proc/vmstat", "r");
	char key[64];
	unsigned long long v, n = 0;

	if (f == NULL)
		return 0;
	while (fscanf(f, "%63s %llu", key, &v) == 2)
		if (strcmp(key, "pgmigrate_success") == 0 ||
		    strcmp(key, "thp_migration_success") == 0)
			n += v;
	fclose(f);
	return n;
}

#endif /* RTPROF_TESTUTIL_H */
