/*
 * preload.c - librtprof-preload.so: profile an unmodified program.
 *
 * `rtprof record` runs the program with this library in LD_PRELOAD and an
 * open dump descriptor in RTPROF_FD. Loading it loads librtprof, whose
 * constructor registers the main thread and starts the session on that
 * descriptor (core/state.c, autostart; the session ends at exit). This
 * library adds what an unmodified program does not do itself: every thread
 * created with pthread_create is registered before its start routine runs
 * (and unregisters when it exits, through the registry's thread-exit
 * destructor), named after its comm (refreshed at exit, so a name the
 * program set with pthread_setname_np shows). Calls that may block are
 * timed (below): "Blocked" markers, and the thread counts as asleep. exec
 * and _exit stop the session first, so nothing recorded is lost.
 *
 * Context: the program's threads: pthread_create on the creating thread,
 * start() on the new thread before the program's start routine. Both may
 * allocate: neither runs on a real-time path of the program.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <alloca.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *,
    void *(*)(void *), void *);

struct start {
	void *(*fn)(void *);
	void *arg;
};

static void *
start(void *p)
{
	struct start s = *(struct start *)p;

	free(p);
	/* NULL: named after the thread's comm, refreshed at exit. */
	rtprof_thread_register(NULL, 0);
	return s.fn(s.arg);
}

/* rtprof's own threads (writer, sampler) are not the program's. */
static int
is_ours(void *(*fn)(void *))
{
	static Dl_info self;
	static int have_self;
	Dl_info i;

	if (!have_self) {
		if (dladdr((void *)rtprof_session_start, &self) == 0)
			return 0;
		have_self = 1;
	}
	return dladdr((void *)fn, &i) != 0 && i.dli_fbase == self.dli_fbase;
}

/* Context: the creating thread; may allocate. */
RTPROF_API int
pthread_create(pthread_t *t, const pthread_attr_t *attr,
    void *(*fn)(void *), void *arg)
{
	static create_fn real;
	struct start *s;
	int rc;

	if (real == NULL) {
		real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
		if (real == NULL)
			return EAGAIN;
	}
	if (is_ours(fn) || (s = malloc(sizeof(*s))) == NULL)
		return real(t, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	rc = real(t, attr, start, s);
	if (rc != 0)
		free(s);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Blocking calls                                                       */

/*
 * Calls that may block are timed on registered threads: while in one, the
 * thread counts as asleep (the sampler repeats its last stack in O(1) and
 * never signals it, so the call is not interrupted with EINTR), and a call
 * of at least 1 us becomes a "Blocked" interval marker {call, fd, bytes}.
 * rtprof's own threads (writer: not registered; sampler: flagged) pass
 * straight through. errno is the call's.
 */
static const rtprof_marker_type *blocked_type;
static uint64_t min_ticks;      /* 1 us */
static int armed;

static const struct rtprof_marker_schema blocked_schema = {
	.name = "Blocked",
	.category = RTPROF_CAT_IO,
	.display = RTPROF_DISPLAY_MARKER_CHART | RTPROF_DISPLAY_MARKER_TABLE |
	    RTPROF_DISPLAY_TIMELINE_FILEIO,
	.tooltip_label = "{marker.data.call} blocked {marker.duration}",
	.table_label = "{marker.data.call}(fd {marker.data.fd}): "
	    "{marker.data.bytes} bytes",
	.chart_label = "{marker.data.call}",
	.nfields = 3,
	.fields = {
		{ "call", "Call", "string", RTPROF_FIELD_STATIC_STR },
		{ "fd", "Descriptor", "integer", RTPROF_FIELD_I64 },
		{ "bytes", "Bytes", "bytes", RTPROF_FIELD_I64 },
	},
};

/* Context: the dynamic loader, after librtprof's constructor. */
__attribute__((constructor)) static void
preload_init(void)
{
	blocked_type = rtprof_marker_type_declare(&blocked_schema);
	min_ticks = (uint64_t)(rtprof_ticks_per_second() / 1e6);
	if (min_ticks == 0)
		min_ticks = 1;
	armed = blocked_type != NULL;
}

struct blk {
	struct rtprof__thread *th;
	uint64_t t0;
};

/* Context: the calling thread. Return: 1 when the call is timed. */
static inline int
blk_begin(struct blk *b)
{
	struct rtprof__thread *th = rtprof__tls.thread;

	if (!armed || th == NULL || (th->flags & RTPROF_THREAD_SAMPLER))
		return 0;
	b->th = th;
	b->t0 = rtprof_now();
	/* release: pairs with the sampler's acquire (threadview.c). */
	atomic_store_explicit(&th->sleep, RTPROF__ASLEEP, memory_order_release);
	return 1;
}

static inline void
blk_end(struct blk *b, const char *call, int64_t fd, int64_t bytes)
{
	int saved = errno;
	uint64_t t1;
	rtprof_rec r;

	atomic_store_explicit(&b->th->sleep, RTPROF__AWAKE,
	    memory_order_release);
	t1 = rtprof_now();
	if (t1 - b->t0 >= min_ticks && rtprof_marker_open(&r, blocked_type,
	    RTPROF_PHASE_INTERVAL, b->t0, t1)) {
		rtprof_put_static_str(&r, call);
		rtprof_put_i64(&r, fd);
		rtprof_put_i64(&r, bytes);
		rtprof_marker_close(&r);
	}
	errno = saved;
}

#define REAL(name)                                                             \
	static __typeof__(name) *real_##name;                                  \
	if (real_##name == NULL)                                               \
		real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

/* A wrapper returning @type: the call, timed when the thread is ours. */
#define BLOCKING(type, name, params, args, fd, bytes)                          \
	RTPROF_API type                                                        \
	name params                                                            \
	{                                                                      \
		struct blk blk_;                                               \
		type r;                                                        \
		REAL(name);                                                    \
		if (!blk_begin(&blk_))                                         \
			return real_##name args;                               \
		r = real_##name args;                                          \
		blk_end(&blk_, #name, (fd), (bytes));                          \
		return r;                                                      \
	}

BLOCKING(ssize_t, read, (int fd, void *buf, size_t n), (fd, buf, n), fd, r)
BLOCKING(ssize_t, write, (int fd, const void *buf, size_t n), (fd, buf, n),
    fd, r)
BLOCKING(ssize_t, pread, (int fd, void *buf, size_t n, off_t o),
    (fd, buf, n, o), fd, r)
BLOCKING(ssize_t, pwrite, (int fd, const void *buf, size_t n, off_t o),
    (fd, buf, n, o), fd, r)
BLOCKING(ssize_t, readv, (int fd, const struct iovec *v, int n),
    (fd, v, n), fd, r)
BLOCKING(ssize_t, writev, (int fd, const struct iovec *v, int n),
    (fd, v, n), fd, r)
BLOCKING(int, fsync, (int fd), (fd), fd, -1)
BLOCKING(int, fdatasync, (int fd), (fd), fd, -1)
BLOCKING(int, poll, (struct pollfd *f, nfds_t n, int ms), (f, n, ms), -1, r)
BLOCKING(int, select, (int n, fd_set *r_, fd_set *w, fd_set *e,
    struct timeval *t), (n, r_, w, e, t), -1, r)
BLOCKING(int, epoll_wait, (int ep, struct epoll_event *ev, int n, int ms),
    (ep, ev, n, ms), ep, r)
BLOCKING(int, nanosleep, (const struct timespec *q, struct timespec *m),
    (q, m), -1, -1)
BLOCKING(int, clock_nanosleep, (clockid_t c, int f, const struct timespec *q,
    struct timespec *m), (c, f, q, m), -1, -1)
BLOCKING(int, connect, (int fd, const struct sockaddr *a, socklen_t l),
    (fd, a, l), fd, -1)
BLOCKING(int, accept, (int fd, struct sockaddr *a, socklen_t *l), (fd, a, l),
    fd, -1)
BLOCKING(int, accept4, (int fd, struct sockaddr *a, socklen_t *l, int fl),
    (fd, a, l, fl), fd, -1)
BLOCKING(ssize_t, recv, (int fd, void *b, size_t n, int fl), (fd, b, n, fl),
    fd, r)
BLOCKING(ssize_t, recvfrom, (int fd, void *b, size_t n, int fl,
    struct sockaddr *a, socklen_t *l), (fd, b, n, fl, a, l), fd, r)
BLOCKING(ssize_t, recvmsg, (int fd, struct msghdr *m, int fl), (fd, m, fl),
    fd, r)
BLOCKING(ssize_t, send, (int fd, const void *b, size_t n, int fl),
    (fd, b, n, fl), fd, r)
BLOCKING(ssize_t, sendto, (int fd, const void *b, size_t n, int fl,
    const struct sockaddr *a, socklen_t l), (fd, b, n, fl, a, l), fd, r)
BLOCKING(ssize_t, sendmsg, (int fd, const struct msghdr *m, int fl),
    (fd, m, fl), fd, r)
BLOCKING(int, pthread_cond_wait, (pthread_cond_t *c, pthread_mutex_t *m),
    (c, m), -1, -1)
BLOCKING(int, pthread_cond_timedwait, (pthread_cond_t *c, pthread_mutex_t *m,
    const struct timespec *t), (c, m, t), -1, -1)
BLOCKING(int, sem_wait, (sem_t *s), (s), -1, -1)

/* A mutex lock blocks only when contended: try first, time the rest. */
RTPROF_API int
pthread_mutex_lock(pthread_mutex_t *m)
{
	struct blk b;
	int r;
	REAL(pthread_mutex_lock);

	if (!armed || rtprof__tls.thread == NULL)
		return real_pthread_mutex_lock(m);
	if (pthread_mutex_trylock(m) == 0)
		return 0;
	if (!blk_begin(&b))
		return real_pthread_mutex_lock(m);
	r = real_pthread_mutex_lock(m);
	blk_end(&b, "pthread_mutex_lock", -1, -1);
	return r;
}

/* ------------------------------------------------------------------ */
/* exec                                                                 */

/*
 * exec replaces the image: the session's buffered data and its writer
 * thread would vanish with it. Stop the session first (everything is
 * written, with its trailer); the new image asks the launcher for a dump
 * of its own (RTPROF_SOCK). If exec fails, this process goes on without a
 * session. Context: the calling thread.
 */
static void
before_exec(void)
{
	rtprof_session_stop();  /* also before _exit: see below */
}

RTPROF_API int
execve(const char *path, char *const argv[], char *const envp[])
{
	REAL(execve);
	before_exec();
	return real_execve(path, argv, envp);
}

RTPROF_API int
execv(const char *path, char *const argv[])
{
	REAL(execv);
	before_exec();
	return real_execv(path, argv);
}

RTPROF_API int
execvp(const char *file, char *const argv[])
{
	REAL(execvp);
	before_exec();
	return real_execvp(file, argv);
}

RTPROF_API int
execvpe(const char *file, char *const argv[], char *const envp[])
{
	REAL(execvpe);
	before_exec();
	return real_execvpe(file, argv, envp);
}

RTPROF_API int
fexecve(int fd, char *const argv[], char *const envp[])
{
	REAL(fexecve);
	before_exec();
	return real_fexecve(fd, argv, envp);
}

/*
 * _exit skips the exit handlers (shells end that way, and so do forked
 * children): stop the session first, as exit() would.
 */
RTPROF_API void
_exit(int status)
{
	REAL(_exit);
	before_exec();
	real__exit(status);
	__builtin_unreachable();
}

RTPROF_API void
_Exit(int status)
{
	REAL(_Exit);
	before_exec();
	real__Exit(status);
	__builtin_unreachable();
}

/* The execl family: the variadic arguments as an array, then execv*. */
#define EXECL_ARGS(first)                                                      \
	va_list ap;                                                            \
	size_t n = 1;                                                          \
	char **v;                                                              \
	va_start(ap, first);                                                   \
	while (va_arg(ap, char *) != NULL)                                     \
		n++;                                                           \
	va_end(ap);                                                            \
	v = alloca((n + 1) * sizeof(*v));                                      \
	va_start(ap, first);                                                   \
	v[0] = (char *)(first);                                                \
	for (size_t i_ = 1; i_ <= n; i_++)                                     \
		v[i_] = va_arg(ap, char *)

RTPROF_API int
execl(const char *path, const char *arg, ...)
{
	EXECL_ARGS(arg);
	va_end(ap);
	return execv(path, v);
}

RTPROF_API int
execlp(const char *file, const char *arg, ...)
{
	EXECL_ARGS(arg);
	va_end(ap);
	return execvp(file, v);
}

RTPROF_API int
execle(const char *path, const char *arg, ...)
{
	char *const *envp;

	EXECL_ARGS(arg);
	envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, v, envp);
}
