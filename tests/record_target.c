/*
 * record_target.c - an unmodified program for `rtprof record` tests: no
 * rtprof call. Two threads named "cruncher" (pthread_setname_np after they
 * start) run outer_work -> inner_work busy loops for about a second; the
 * main thread waits for them and exits with status 3.
 *
 * `record_target block`: a thread named "blocker" blocks in read(2) on a
 * pipe for ~60 ms (written to by the main thread), in nanosleep for 40 ms,
 * in pthread_mutex_lock for ~50 ms (the main thread holds the mutex) and
 * in fsync(2); exit status 0.
 *
 * `record_target spawn`: starts itself twice with posix_spawn (mode
 * `child`: one "cruncher" for ~300 ms, exit status 0) and waits; exit 0.
 *
 * `record_target exec`: a "cruncher" for ~200 ms, then execs itself in
 * mode `child` (the pre-exec image's data must survive the exec).
 *
 * `record_target io`: exactly 100 fsync(2) calls and 10 sleeps of 5 ms
 * on the main thread, from known functions: io_main > io_fsyncs >
 * io_sync_one calls write and fsync; io_main > io_naps > io_nap_one calls
 * nap_ms (nanosleep). The stacks where they blocked name them.
 *
 * `record_target split`: two "cruncher" threads spend ~30% of their time
 * in hot_a and ~70% in hot_b (the same loop, 3:7 iterations; each thread
 * its own counter), for ~2.5 s, with a little work of varying length in
 * neither between the calls.
 *
 * `record_target starved`: a "cruncher" shares CPU 0 with a "hog" thread
 * of SCHED_FIFO priority 1 (SCHED_OTHER where that is refused, said on
 * stderr) that spins 20 ms and sleeps 20 ms in turn, for about a second:
 * half of the time the cruncher waits for the CPU, and a sampling signal
 * sent meanwhile is handled only when it runs again. The cruncher prints
 * the CPU time it used ("cruncher-cpu-ns N") on stdout; exit status 0.
 *
 * `record_target fork`: fork() without exec; the child works 100 ms and
 * leaves with exit(), running the exit handlers (rtprof's among them must
 * not wait for a writer thread the child does not have); exit 0.
 */
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

static long run_ms = 1000;

__attribute__((noinline)) void hot_a(void);
__attribute__((noinline)) void hot_b(void);

/* Per thread: the two split threads never share a cache line. */
static _Thread_local volatile unsigned long tsink;

__attribute__((noinline)) void
hot_a(void)
{
	for (int i = 0; i < 30000; i++)
		tsink += (unsigned long)i * 3;
}

__attribute__((noinline)) void
hot_b(void)
{
	for (int i = 0; i < 70000; i++)
		tsink += (unsigned long)i * 5;
}

static long
elapsed_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	    (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static unsigned long
mono_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (unsigned long)t.tv_sec * 1000000u +
	    (unsigned long)t.tv_nsec / 1000u;
}

static void *
split_worker(void *arg)
{
	struct timespec t0;

	(void)arg;
	pthread_setname_np(pthread_self(), "cruncher");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		/* Work of varying length in neither: with a fixed period,
		 * hot_a + hot_b would alias with the sampler's regular ticks
		 * (one run saw hot_a in 18% of the samples). */
		for (unsigned long i = mono_us() % 16 * 1000; i > 0; i--)
			tsink += i;
		hot_a();
		hot_b();
	} while (elapsed_ms(&t0) < 2500);
	return NULL;
}

static void *
worker(void *arg)
{
	struct timespec t0;

	(void)arg;
	pthread_setname_np(pthread_self(), "cruncher");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		outer_work();
	} while (elapsed_ms(&t0) < run_ms);
	return NULL;
}

/* `starved`: both threads on CPU 0; the hog preempts the cruncher. */
static _Atomic int starve_stop;

static void nap_ms(long ms);

static int
pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *
hog(void *arg)
{
	struct sched_param sp = { .sched_priority = 1 };
	struct timespec t0;

	(void)arg;
	pthread_setname_np(pthread_self(), "hog");
	if (pin_cpu0() != 0)
		return (void *)1;
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0)
		fprintf(stderr, "record_target: SCHED_FIFO refused: the hog "
		    "competes as SCHED_OTHER\n");
	while (!atomic_load(&starve_stop)) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while (elapsed_ms(&t0) < 20)
			sink++;
		nap_ms(20);
	}
	return NULL;
}

static void *
starved(void *arg)
{
	struct timespec t0, cpu;

	(void)arg;
	pthread_setname_np(pthread_self(), "cruncher");
	if (pin_cpu0() != 0)
		return (void *)1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (elapsed_ms(&t0) < 1000)
		outer_work();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
	printf("cruncher-cpu-ns %lld\n", (long long)cpu.tv_sec * 1000000000 +
	    cpu.tv_nsec);
	return NULL;
}

static int
starved_main(void)
{
	pthread_t a, b;
	void *ra, *rb;

	if (pthread_create(&a, NULL, starved, NULL) != 0 ||
	    pthread_create(&b, NULL, hog, NULL) != 0)
		return 1;
	pthread_join(a, &ra);
	atomic_store(&starve_stop, 1);
	pthread_join(b, &rb);
	return ra != NULL || rb != NULL;
}

/* `io`: the known functions whose stacks the blocked calls carry. */
__attribute__((noinline)) void io_sync_one(int fd);
__attribute__((noinline)) void io_fsyncs(int fd);
__attribute__((noinline)) void io_nap_one(void);
__attribute__((noinline)) void io_naps(void);
__attribute__((noinline)) int io_main(void);

static int pfd[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void
nap_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&t, &t) != 0)
		;
}

static void *
blocker(void *arg)
{
	char c, path[] = "/tmp/record-target-XXXXXX";
	int fd;

	(void)arg;
	pthread_setname_np(pthread_self(), "blocker");
	if (read(pfd[0], &c, 1) != 1)           /* ~60 ms */
		abort();
	nap_ms(40);
	pthread_mutex_lock(&mu);                /* ~50 ms: main holds it */
	pthread_mutex_unlock(&mu);
	fd = mkstemp(path);
	if (fd >= 0) {
		if (write(fd, "x", 1) != 1 || fsync(fd) != 0)
			abort();
		close(fd);
		unlink(path);
	}
	return NULL;
}

static int
block_main(void)
{
	pthread_t t;

	if (pipe(pfd) != 0 || pthread_create(&t, NULL, blocker, NULL) != 0)
		return 1;
	nap_ms(60);
	pthread_mutex_lock(&mu);
	if (write(pfd[1], "g", 1) != 1)
		return 1;
	nap_ms(90);                             /* blocker: 40 ms asleep, */
	pthread_mutex_unlock(&mu);              /* then ~50 ms on the lock */
	pthread_join(t, NULL);
	return 0;
}

/* Not tail calls: each function keeps its frame (and its name) in the
 * stack of the call it makes. */
__attribute__((noinline)) void
io_sync_one(int fd)
{
	if (write(fd, "x", 1) != 1 || fsync(fd) != 0)
		abort();
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline)) void
io_fsyncs(int fd)
{
	for (int i = 0; i < 100; i++)
		io_sync_one(fd);
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline)) void
io_nap_one(void)
{
	nap_ms(5);
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline)) void
io_naps(void)
{
	for (int i = 0; i < 10; i++)
		io_nap_one();
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline)) int
io_main(void)
{
	char path[] = "/tmp/record-target-io-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		return 1;
	unlink(path);
	io_fsyncs(fd);
	close(fd);
	io_naps();
	__asm__ __volatile__("" ::: "memory");
	return 0;
}

extern char **environ;

static int
spawn_main(const char *self)
{
	char *args[] = { (char *)self, "child", NULL };
	pid_t p[2];
	int st;

	for (int i = 0; i < 2; i++)
		if (posix_spawn(&p[i], self, NULL, NULL, args, environ) != 0)
			return 1;
	for (int i = 0; i < 2; i++)
		if (waitpid(p[i], &st, 0) != p[i] || st != 0)
			return 1;
	return 0;
}

int
main(int argc, char **argv)
{
	pthread_t a, b;

	if (argc > 1 && strcmp(argv[1], "block") == 0)
		return block_main();
	if (argc > 1 && strcmp(argv[1], "spawn") == 0)
		return spawn_main(argv[0]);
	if (argc > 1 && strcmp(argv[1], "split") == 0) {
		if (pthread_create(&a, NULL, split_worker, NULL) != 0 ||
		    pthread_create(&b, NULL, split_worker, NULL) != 0)
			return 1;
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "io") == 0)
		return io_main();
	if (argc > 1 && strcmp(argv[1], "starved") == 0)
		return starved_main();
	if (argc > 1 && strcmp(argv[1], "exec") == 0) {
		char *args[] = { argv[0], "child", NULL };

		run_ms = 200;
		if (pthread_create(&a, NULL, worker, NULL) != 0)
			return 1;
		pthread_join(a, NULL);
		execv(argv[0], args);
		return 1;
	}
	if (argc > 1 && strcmp(argv[1], "fork") == 0) {
		pid_t c = fork();
		int st;

		if (c == 0) {
			run_ms = 100;
			worker(NULL);
			exit(0);
		}
		if (c < 0 || waitpid(c, &st, 0) != c || st != 0)
			return 1;
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "child") == 0) {
		run_ms = 300;
		if (pthread_create(&a, NULL, worker, NULL) != 0)
			return 1;
		pthread_join(a, NULL);
		return 0;
	}
	if (pthread_create(&a, NULL, worker, NULL) != 0 ||
	    pthread_create(&b, NULL, worker, NULL) != 0)
		return 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 3;
}
