/*
 * record_tree.c - a process tree for `rtprof record` (test_record_tree.py).
 * Uses no rtprof API: the preloaded library does everything.
 *
 *   record_tree fork     fork() without exec: the child works 200 ms in
 *                        tree_fork_work and exits; the parent prints
 *                        "child PID" and waits for it.
 *   record_tree system   system("SELF sysgrand"): sh starts this program
 *                        again, which works 200 ms in tree_system_work.
 *   record_tree fifo P   makes the named FIFO P and blocks in read() on it
 *                        until a thread writes to it 60 ms later; then
 *                        fsync()s the file P.f, which it wrote.
 *   record_tree nocap    starts `SELF chatty` without RTPROF_MAX_BYTES in
 *                        its environment (a process that ignores the cap).
 *   record_tree chatty   works 1.5 s in tree_chatty_work (a big dump).
 *   record_tree spin     three threads work 5 s in tree_spin_work, 90
 *                        frames deeper (to be killed).
 *   record_tree orphan   starts `SELF late` and exits at once, without
 *                        waiting for it; prints "late PID".
 *   record_tree late     works 800 ms in tree_late_work after its parent
 *                        is gone (the launcher must wait for it).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "testutil.h"

extern char **environ;

static volatile unsigned long sink;


/* Busy for @ms of wall time (on the CPU all along). */
static void
burn(int ms)
{
	double end = now_s() + ms / 1000.0;

	while (now_s() < end)
		for (int i = 0; i < 20000; i++)
			sink += (unsigned long)i * 7u;
}

__attribute__((noinline)) void tree_fork_work(void);
__attribute__((noinline)) void tree_system_work(void);
__attribute__((noinline)) void tree_chatty_work(void);
__attribute__((noinline)) void tree_spin_work(void);
__attribute__((noinline)) void tree_late_work(void);

__attribute__((noinline)) void
tree_late_work(void)
{
	burn(800);
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline)) void
tree_fork_work(void)
{
	burn(200);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void
tree_system_work(void)
{
	burn(200);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void
tree_chatty_work(void)
{
	burn(1500);
	__asm__ volatile("" ::: "memory");
}

/* @n frames deep, then busy: big samples (~9 bytes a frame, ~1 kB), three
 * threads of them a tick, so that the sampler's 64 KiB chunks fill, and
 * reach the dump, within the 0.3 s before the kill even when the sampler
 * gets few ticks (a killed process loses its chunks not yet full). */
__attribute__((noinline)) static void
deep(int n, int ms)
{
	if (n > 0)
		deep(n - 1, ms);
	else
		burn(ms);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void
tree_spin_work(void)
{
	deep(90, 5000);
	__asm__ volatile("" ::: "memory");
}

static void *
spin_thread(void *arg)
{
	(void)arg;
	tree_spin_work();
	return NULL;
}

static int
fork_main(void)
{
	pid_t c = fork();
	int st;

	if (c == 0) {
		tree_fork_work();
		exit(0);
	}
	if (c < 0)
		return 1;
	printf("child %d\n", (int)c);
	fflush(stdout);
	if (waitpid(c, &st, 0) != c || st != 0)
		return 1;
	return 0;
}

static const char *fifo_path;

static void *
fifo_writer(void *arg)
{
	struct timespec d = { 0, 60000000 };
	int fd;

	(void)arg;
	nanosleep(&d, NULL);
	fd = open(fifo_path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "hello", 5) != 5)
		abort();
	close(fd);
	return NULL;
}

static int
fifo_main(const char *path)
{
	char buf[16], file[4096];
	pthread_t t;
	int fd;

	fifo_path = path;
	unlink(path);
	if (mkfifo(path, 0600) != 0)
		return 1;
	/* O_RDWR: the open does not wait for a writer; the read does. */
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || pthread_create(&t, NULL, fifo_writer, NULL) != 0)
		return 1;
	if (read(fd, buf, sizeof(buf)) != 5)
		return 1;
	pthread_join(t, NULL);
	close(fd);
	snprintf(file, sizeof(file), "%s.f", path);
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, buf, 5) != 5 || fsync(fd) != 0)
		return 1;
	close(fd);
	return 0;
}

/* SELF chatty, its environment without RTPROF_MAX_BYTES. */
static int
nocap_main(const char *self)
{
	char *args[] = { (char *)self, "chatty", NULL };
	char **env;
	size_t n = 0, k = 0;
	pid_t p;
	int st;

	while (environ[n] != NULL)
		n++;
	if ((env = calloc(n + 1, sizeof(*env))) == NULL)
		return 1;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "RTPROF_MAX_BYTES=", 17) != 0)
			env[k++] = environ[i];
	if (posix_spawn(&p, self, NULL, NULL, args, env) != 0)
		return 1;
	free(env);
	if (waitpid(p, &st, 0) != p || st != 0)
		return 1;
	return 0;
}

int
main(int argc, char **argv)
{
	char cmd[4200];

	if (argc > 1 && strcmp(argv[1], "fork") == 0)
		return fork_main();
	if (argc > 1 && strcmp(argv[1], "system") == 0) {
		snprintf(cmd, sizeof(cmd), "'%s' sysgrand", argv[0]);
		return system(cmd) == 0 ? 0 : 1;
	}
	if (argc > 1 && strcmp(argv[1], "sysgrand") == 0) {
		tree_system_work();
		return 0;
	}
	if (argc > 2 && strcmp(argv[1], "fifo") == 0)
		return fifo_main(argv[2]);
	if (argc > 1 && strcmp(argv[1], "nocap") == 0)
		return nocap_main(argv[0]);
	if (argc > 1 && strcmp(argv[1], "chatty") == 0) {
		tree_chatty_work();
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "spin") == 0) {
		pthread_t t[2];

		for (int i = 0; i < 2; i++)
			if (pthread_create(&t[i], NULL, spin_thread, NULL) != 0)
				return 1;
		tree_spin_work();
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "orphan") == 0) {
		char *args[] = { argv[0], "late", NULL };
		pid_t p;

		if (posix_spawn(&p, argv[0], NULL, NULL, args, environ) != 0)
			return 1;
		printf("late %d\n", (int)p);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "late") == 0) {
		tree_late_work();
		return 0;
	}
	fprintf(stderr, "usage: record_tree fork|system|fifo PATH|nocap|"
	    "chatty|spin|orphan|late\n");
	return 2;
}
