/*
 * writer_fds.c - the writer's and the sampler's descriptors kept apart
 * from the program's (`rtprof record`): a file table of the thread's own
 * holding only the dump (unshare(CLONE_FILES)), and descriptors moved to
 * high numbers.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"
#include "writer_int.h"

/*
 * Under `rtprof record` the writer keeps the dump's descriptor in a file
 * table of its own (unshare(CLONE_FILES): this thread only), holding
 * nothing else, and the program's copy is closed (core/state.c): whatever
 * the program then does to its descriptors (close_range, dup2 over every
 * number, bash `exec 3>a`) cannot reach the dump, and no number of the
 * program's is taken. Everything else inherited into the new table is
 * closed at once, so the program's pipes still end when it closes them
 * (its POSIX record locks are untouched: they belong to its own table).
 * Sanitizer builds keep stderr (their reports from this thread).
 * Context: writer thread, lock held. Return: 1 done, -1 failed.
 */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define PRIVATE_KEEP_STDERR 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define PRIVATE_KEEP_STDERR 1
#endif
#endif
#ifndef PRIVATE_KEEP_STDERR
#define PRIVATE_KEEP_STDERR 0
#endif

/* Closes [lo, hi] in this thread's table. */
static void
close_span(unsigned lo, unsigned hi)
{
	if (lo > hi)
		return;
#ifdef SYS_close_range
	if (syscall(SYS_close_range, lo, hi, 0) == 0)
		return;
#endif
	{
		long max = sysconf(_SC_OPEN_MAX);

		for (long fd = lo; fd <= (long)hi && fd < max; fd++)
			close((int)fd);
	}
}

/*
 * rtprof__fd_high - move @fd, in the calling thread's own table, to a
 * number in the top quarter of the descriptor limit (RTPROF__FD_HIGH_CAP
 * at most): the writer's dump (@top 1) near its top, the sampler's perf
 * events (@top 0) from its start up. The two tables are apart, but a
 * sanitizer's model of descriptors knows numbers only: the writer's and
 * the sampler's must differ. Not higher: a table grows to the number and
 * never shrinks, and is copied by every unshare and fork (at a limit of
 * 1048576, 8 MiB per copy; at 20000, 256 KiB: the kernel's share of a
 * recorded make's time). Return: the new number, or @fd where none is
 * free. Context: the writer or the sampler.
 */
int
rtprof__fd_high(int fd, int top)
{
	struct rlimit rl;
	rlim_t lim;
	int hi;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < 64)
		return fd;
	lim = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > RTPROF__FD_HIGH_CAP ?
	    RTPROF__FD_HIGH_CAP : rl.rlim_cur;
	hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)(top ? lim - lim / 16 :
	    lim - lim / 4));
	if (hi < 0)
		return fd;
	/* The raw system call: the number is the program's in its table,
	 * and a sanitizer's model of descriptors must not see it closed. */
	syscall(SYS_close, fd);
	return hi;
}

/*
 * rtprof__files_private - give the calling thread a file table of its own
 * holding only @keep (-1: nothing; stderr too in sanitizer builds).
 * Context: the writer or the sampler thread, once. Return: 1, or -1 when
 * unshare(2) is refused (the thread keeps the program's table).
 */
int
rtprof__files_private(int keep)
{
	int k[2], n = 0;
	unsigned from = 0;

	if (unshare(CLONE_FILES) != 0)
		return -1;
	if (PRIVATE_KEEP_STDERR)
		k[n++] = 2;
	if (keep >= 0 && keep != 2)
		k[n++] = keep;
	if (n == 2 && k[1] < k[0]) {
		int t = k[0];

		k[0] = k[1];
		k[1] = t;
	}
	for (int i = 0; i < n; i++) {
		if ((unsigned)k[i] > from)
			close_span(from, (unsigned)k[i] - 1);
		from = (unsigned)k[i] + 1;
	}
	close_span(from, ~0U);
	return 1;
}

/*
 * In its own table the writer moves the dump to a high number: the
 * program's number for it is the program's again once it closes its copy,
 * and nothing, ThreadSanitizer's model of descriptors included, takes the
 * two for one. Context: writer thread, lock held.
 */
static void
private_renumber(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	int old = c->private_fd, fd = rtprof__fd_high(old, 1);

	if (fd == old)
		return;
	for (struct rtprof__session *s = c->sessions; s != NULL; s = s->next)
		if (s->set.fd == old)
			s->set.fd = fd;
	c->private_fd = fd;
}

/* Context: writer thread, lock held. */
void
rtprof__private_serve(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);

	if (c->private_fd < 0 || c->private_state != 0)
		return;
	c->private_state = rtprof__files_private(c->private_fd);
	if (c->private_state == 1)
		private_renumber(lk);
	pthread_cond_broadcast(&c->done_cv);
}

/* Context: the control thread starting a launcher session, lock held. */
void
rtprof__writer_private(const rtprof_lock *lk, int fd)
{
	struct rtprof__core *c = rtprof__core_get(lk);

	c->private_fd = fd;
	c->private_state = 0;
	c->writer_wake = 1;
	pthread_cond_signal(&c->writer_cv);
}


