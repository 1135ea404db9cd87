/*
 * record_blocking.c - calls that block, for test_record_blocking.py under
 * `rtprof record` (no rtprof API): each mode blocks about 200 ms in one
 * kind of call, so that its "Blocked" marker and time can be checked.
 *
 *   record_blocking MODE [ARG]
 *     sleep      sleep(1) (glibc's sleep: not through nanosleep's symbol)
 *     usleep     usleep(200000)
 *     join       pthread_join of a thread that sleeps 200 ms
 *     sem        sem_timedwait 200 ms on a semaphore nobody posts
 *     wait       waitpid for a child that sleeps 200 ms, then wait4, wait
 *     pselect    pselect and ppoll, 200 ms each, on nothing
 *     fifo PATH  open(PATH) for reading a FIFO that a thread opens for
 *                writing 200 ms later
 *     stdio N    N lines of 200 bytes through stdout (stdio's own write,
 *                which no wrapper sees): for a slowly read pipe
 *     reasons DIR  for the kernel's reasons, about 300 ms each: a write
 *                into a pipe its reader drains 300 ms later (pipe full),
 *                a nanosleep, a mutex another thread holds (futex), and
 *                an fsync of 64 MB written to DIR/fsync.dat (removed)
 *
 * Each timed call also says how long it took by the program's own clock,
 * on stderr ("record_blocking: took CALL MS"): the test holds each
 * marker to that, whatever a loaded machine does to the 200 ms.
 *
 * Context: a test program; its main thread and the threads it starts.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *fifo_path;

static double
mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* @ok (the call's result check), after saying how long @call took since
 * @t0 (mono_ms). */
static int
took(const char *call, double t0, int ok)
{
	fprintf(stderr, "record_blocking: took %s %.3f\n", call, mono_ms() - t0);
	return ok;
}

static void
nap_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&t, &t) != 0)
		;
}

static void *
napper(void *arg)
{
	(void)arg;
	nap_ms(200);
	return NULL;
}

static void *
fifo_writer(void *arg)
{
	int fd;

	(void)arg;
	nap_ms(200);
	fd = open(fifo_path, O_WRONLY);
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int
child_naps(void)
{
	pid_t p = fork();

	if (p == 0) {
		nap_ms(200);
		_exit(0);
	}
	return p;
}

static int
do_wait(void)
{
	struct rusage ru;
	int st;
	pid_t p = child_naps();
	double t0 = mono_ms();

	if (p < 0 || !took("waitpid", t0, waitpid(p, &st, 0) == p))
		return 1;
	if ((p = child_naps()) < 0)
		return 1;
	t0 = mono_ms();
	if (!took("wait4", t0, wait4(p, &st, 0, &ru) == p))
		return 1;
	if ((p = child_naps()) < 0)
		return 1;
	t0 = mono_ms();
	return !took("wait", t0, wait(&st) == p);
}

static int
do_select(void)
{
	struct timespec t = { 0, 200000000 };
	sigset_t none;

	double t0 = mono_ms();

	sigemptyset(&none);
	if (!took("pselect", t0, pselect(0, NULL, NULL, NULL, &t, &none) == 0))
		return 1;
	t0 = mono_ms();
	return !took("ppoll", t0, ppoll(NULL, 0, &t, &none) == 0);
}

static int
do_sem(void)
{
	struct timespec t;
	sem_t s;

	sem_init(&s, 0, 0);
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += 200000000;
	if (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	double t0 = mono_ms();

	return took("sem_timedwait", t0, sem_timedwait(&s, &t) == 0);
}

static int
do_fifo(const char *path)
{
	pthread_t t;
	double t0;
	int fd;

	fifo_path = path;
	unlink(path);
	if (mkfifo(path, 0600) != 0 ||
	    pthread_create(&t, NULL, fifo_writer, NULL) != 0)
		return 1;
	t0 = mono_ms();
	fd = open(path, O_RDONLY);
	took("open", t0, 1);
	pthread_join(t, NULL);
	unlink(path);
	return fd < 0;
}

static int
do_stdio(long n)
{
	char line[201];

	memset(line, 'x', 199);
	line[199] = '\n';
	line[200] = '\0';
	for (long i = 0; i < n; i++)
		fputs(line, stdout);
	return fflush(stdout) != 0;
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int holding;

static void *
holder(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&held);
	atomic_store(&holding, 1);
	nap_ms(300);
	pthread_mutex_unlock(&held);
	return NULL;
}

/* 256 KiB into a pipe (64 KiB of buffer) that a child drains 300 ms
 * later. */
static int
pipe_full(void)
{
	static char buf[256 * 1024];
	int fd[2], st;
	pid_t p;

	if (pipe(fd) != 0 || (p = fork()) < 0)
		return 1;
	if (p == 0) {
		close(fd[1]);
		nap_ms(300);
		while (read(fd[0], buf, sizeof(buf)) > 0)
			;
		_exit(0);
	}
	close(fd[0]);
	for (size_t at = 0; at < sizeof(buf);) {
		ssize_t k = write(fd[1], buf + at, sizeof(buf) - at);

		if (k <= 0)
			return 1;
		at += (size_t)k;
	}
	close(fd[1]);
	return waitpid(p, &st, 0) != p;
}

static int
fsync_big(const char *dir)
{
	static char buf[1 << 20];
	char path[4096];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/fsync.dat", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 1;
	memset(buf, 'f', sizeof(buf));
	for (int i = 0; i < 64 && rc == 0; i++)
		rc = write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf);
	rc |= fsync(fd) != 0;
	close(fd);
	unlink(path);
	return rc;
}

static int
do_reasons(const char *dir)
{
	pthread_t t;

	if (pipe_full() != 0)
		return 1;
	nap_ms(300);
	if (pthread_create(&t, NULL, holder, NULL) != 0)
		return 1;
	while (!atomic_load(&holding))
		nap_ms(1);
	pthread_mutex_lock(&held);
	pthread_mutex_unlock(&held);
	pthread_join(t, NULL);
	return fsync_big(dir);
}

int
main(int argc, char **argv)
{
	pthread_t t;
	const char *m = argc > 1 ? argv[1] : "";
	double t0 = mono_ms();

	if (strcmp(m, "sleep") == 0)
		return sleep(1) != 0;
	if (strcmp(m, "usleep") == 0)
		return took("usleep", t0, usleep(200000) != 0);
	if (strcmp(m, "join") == 0) {
		if (pthread_create(&t, NULL, napper, NULL) != 0)
			return 1;
		t0 = mono_ms();
		return took("pthread_join", t0, pthread_join(t, NULL) != 0);
	}
	if (strcmp(m, "sem") == 0)
		return do_sem();
	if (strcmp(m, "wait") == 0)
		return do_wait();
	if (strcmp(m, "pselect") == 0)
		return do_select();
	if (strcmp(m, "fifo") == 0 && argc > 2)
		return do_fifo(argv[2]);
	if (strcmp(m, "stdio") == 0 && argc > 2)
		return do_stdio(atol(argv[2]));
	if (strcmp(m, "reasons") == 0 && argc > 2)
		return do_reasons(argv[2]);
	fprintf(stderr, "usage: record_blocking MODE [ARG]\n");
	return 2;
}
