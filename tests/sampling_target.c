/*
 * sampling_target.c - programs whose behaviour the sampler must not change
 * and whose profile is known (tests/test_sampling.py). Linked with
 * librtprof: under RTPROF_FD its threads register themselves; under
 * `rtprof record` the preload library registers them (a second
 * registration is refused, harmlessly).
 *
 * `sampling_target sleep`: sleep(2), timed; then 200 rounds of 1 ms of CPU
 * and usleep(5000), and 50 rounds each of 1 ms of CPU and a 5 ms
 * nanosleep(2) system call, pselect and ppoll, counting EINTR. Prints
 * "sleep2 SECONDS", "rounds SECONDS" and "eintr N".
 *
 * `sampling_target masked`: two "masked" threads block every signal and
 * spin in masked_work for 400 ms of their own CPU time each. Prints
 * "masked TID" for each.
 *
 * `sampling_target busy16`: the process is bound to CPUs 0 and 1, then 16
 * "busy" threads spin in busy_work for 150 ms of CPU each. Prints "busy TID".
 *
 * `sampling_target vdso`: a "clocker" thread reads its CPU clock
 * (clock_gettime(CLOCK_THREAD_CPUTIME_ID): a system call made from the
 * vDSO) after every ~50 us of work in clock_work; first alone on CPU 0 for
 * 300 ms of CPU, then sharing CPU 0 with a "hog" thread for 600 ms of its
 * CPU. It times each clock call with CLOCK_MONOTONIC and prints the share
 * of its CPU time spent in them, "vdso-share X" (its true share: reads
 * that were preempted count as their usual time), the vDSO's address range
 * "vdso-range LO HI" and "clocker TID".
 *
 * Exit status 0 when every call behaved (no unexpected EINTR is an error
 * here: the counts are printed for the test to judge).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rtprof.h"
#include "testutil.h"

static __thread volatile uint64_t sink; /* each thread its own: no race */

static void
reg(const char *name)
{
	(void)rtprof_thread_register(name, 0);
}

/* @ns of this thread's CPU time in a loop. */
static __attribute__((noinline)) void
spin_cpu(uint64_t ns)
{
	uint64_t c0 = thread_cpu_ns();

	while (thread_cpu_ns() - c0 < ns)
		for (int i = 0; i < 200; i++)
			sink = sink * 31 + (uint64_t)i;
}

/* ---- sleep ---- */

static __attribute__((noinline)) int
run_sleep(void)
{
	unsigned eintr = 0;
	double t0, t1;

	spin_cpu(20000000);     /* start-up work: the sleep is seen begin */
	t0 = now_s();
	sleep(2);
	printf("sleep2 %.3f\n", now_s() - t0);
	t0 = now_s();
	for (int i = 0; i < 200; i++) {
		spin_cpu(1000000);
		if (usleep(5000) != 0 && errno == EINTR)
			eintr++;
	}
	t1 = now_s();
	for (int i = 0; i < 50; i++) {
		struct timespec ts = { 0, 5000000 };
		fd_set none;

		spin_cpu(1000000);
		if (syscall(SYS_nanosleep, &ts, NULL) != 0 && errno == EINTR)
			eintr++;
		spin_cpu(1000000);
		FD_ZERO(&none);
		ts.tv_nsec = 5000000;
		if (pselect(0, &none, NULL, NULL, &ts, NULL) < 0 &&
		    errno == EINTR)
			eintr++;
		spin_cpu(1000000);
		ts.tv_nsec = 5000000;
		if (ppoll(NULL, 0, &ts, NULL) < 0 && errno == EINTR)
			eintr++;
	}
	printf("rounds %.3f %.3f\n", t1 - t0, now_s() - t1);
	printf("eintr %u\n", eintr);
	return 0;
}

/* ---- masked ---- */

__attribute__((noinline)) void masked_work(void);

__attribute__((noinline)) void
masked_work(void)
{
	spin_cpu(400000000);
}

static void *
masked_main(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	reg("masked");
	printf("masked %d\n", (int)gettid_());
	fflush(stdout);
	masked_work();
	return NULL;
}

/* ---- busy16 ---- */

__attribute__((noinline)) void busy_work(void);

__attribute__((noinline)) void
busy_work(void)
{
	spin_cpu(150000000);
}

static void *
busy_main(void *arg)
{
	(void)arg;
	reg("busy");
	printf("busy %d\n", (int)gettid_());
	fflush(stdout);
	busy_work();
	return NULL;
}

static int
run_threads(void *(*fn)(void *), int n)
{
	pthread_t t[16];

	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, fn, NULL) != 0)
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}

static int
bind_two_cpus(void)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(0, &s);
	CPU_SET(1, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

/* ---- vdso ---- */

static atomic_int hog_go, hog_stop;

static int
pin_self(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

static void *
hog_main(void *arg)
{
	(void)arg;
	pin_self(0);
	reg("hog");
	while (!atomic_load(&hog_go))
		usleep(1000);
	while (!atomic_load(&hog_stop))
		spin_cpu(1000000);
	return NULL;
}

/* ~50 us of work, then one clock read; returns the ns spent in the read
 * (CLOCK_MONOTONIC around it). Context: the clocker. */
__attribute__((noinline)) uint64_t clock_work(uint64_t *cpu);

__attribute__((noinline)) uint64_t
clock_work(uint64_t *cpu)
{
	struct timespec ts;
	uint64_t t0, t1;

	for (int i = 0; i < 7000; i++)
		sink = sink * 31 + (uint64_t)i;
	t0 = mono_ns();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	t1 = mono_ns();
	*cpu = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return t1 - t0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The vDSO's mapping, from /proc/self/maps. */
static void
print_vdso(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/maps", "re");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, "[vdso]") != NULL) {
			unsigned long lo, hi;

			if (sscanf(line, "%lx-%lx", &lo, &hi) == 2)
				printf("vdso-range %lu %lu\n", lo, hi);
		}
	if (f != NULL)
		fclose(f);
}

/*
 * The clock read's true share of the clocker's CPU time, over both phases:
 * the mean time of one read, leaving out those over 4x the median
 * (preempted or interrupted: their wall time is not CPU time), times the
 * reads, over the CPU time they took.
 */
static void *
clocker_main(void *arg)
{
	static uint64_t d[200000];
	uint64_t cpu = 0, c0, c1, sum = 0;
	size_t n = 0, kept = 0;

	(void)arg;
	pin_self(0);
	reg("clocker");
	printf("clocker %d\n", (int)gettid_());
	print_vdso();
	clock_work(&c0);
	c1 = c0;
	do {
		uint64_t x = clock_work(&cpu);

		if (n < sizeof(d) / sizeof(d[0]))
			d[n++] = x;
		if (cpu - c1 >= 300000000 && !atomic_load(&hog_go)) {
			atomic_store(&hog_go, 1);       /* the hog joins */
			c1 = cpu;
		}
	} while (!atomic_load(&hog_go) || cpu - c1 < 600000000);
	atomic_store(&hog_stop, 1);
	/* Both phases: the same loop, the same true share. */
	qsort(d, n, sizeof(d[0]), cmp_u64);
	for (size_t i = 0; i < n && d[i] <= 4 * d[n / 2]; i++) {
		sum += d[i];
		kept++;
	}
	printf("vdso-share %.4f\n", (double)sum / (double)kept * (double)n /
	    (double)(cpu - c0));
	return NULL;
}

static int
run_vdso(void)
{
	pthread_t h, c;

	if (pthread_create(&h, NULL, hog_main, NULL) != 0 ||
	    pthread_create(&c, NULL, clocker_main, NULL) != 0)
		return 1;
	pthread_join(c, NULL);
	pthread_join(h, NULL);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	int rc = 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(m, "sleep") == 0)
		rc = run_sleep();
	else if (strcmp(m, "masked") == 0)
		rc = run_threads(masked_main, 2);
	else if (strcmp(m, "busy16") == 0)
		rc = bind_two_cpus() != 0 || run_threads(busy_main, 16);
	else if (strcmp(m, "vdso") == 0)
		rc = run_vdso();
	else
		fprintf(stderr, "usage: sampling_target sleep|masked|busy16|vdso\n");
	return rc;
}
