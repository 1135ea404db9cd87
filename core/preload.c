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
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <alloca.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <fcntl.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "blocked_schema.h"
#include "core.h"
#include "../codec/wire.h"

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
	/* rtprof's own threads (writer, sampler) are not the program's. */
	if (rtprof__creating_own_thread() ||
	    (s = malloc(sizeof(*s))) == NULL)
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
 * of at least 1 us becomes a "Blocked" interval marker {call, fd, bytes,
 * path} (path: only past the threshold, below).
 * A call that blocked at least the threshold (RTPROF_BLOCK_THRESHOLD_US,
 * default 100 us, "off": never) is followed in the thread's stream by a
 * BACKTRACE record: the stack where it blocked (docs/wire-format.md).
 * rtprof's own threads (writer: not registered; sampler: flagged) pass
 * straight through, and so do calls made while the wrapper unwinds. errno
 * is the call's.
 */
static const rtprof_marker_type *blocked_type;
static uint64_t min_ticks;      /* 1 us */
static uint64_t bt_ticks = UINT64_MAX;  /* the threshold; MAX: off */
/* Set once by the constructor after the settings above (release); read by
 * any thread entering a wrapper (acquire), the sampler's among them: it
 * runs before this library's constructor does. */
static _Atomic int armed;
/* Set while this thread unwinds itself: a wrapped call made by the
 * unwinder passes straight through (no marker, no recursion). */
static __thread int in_bt __attribute__((tls_model("initial-exec")));


/* ------------------------------------------------------------------ */
/* The stack where a call blocked                                        */

/*
 * The wrapper unwinds its own thread after the call returned (the thread
 * is not a real-time one: it just blocked): libgcc's _Unwind_Backtrace,
 * the DWARF unwinder C++ exceptions use, which works without frame
 * pointers (a frame-pointer walk stops at the first function built
 * without them: most of a -O2 program and of libc) and gives each frame's
 * CFA, with which labels are merged as the sampler merges them.
 * Measured on the 2-vCPU x86-64 VM of the tests (-O2, no frame
 * pointers): 2.3-3.0 us for a 15-frame stack in a loop (150-200 ns a
 * frame), and 2.9-3.2 us per backtrace_rec() in place (LD_PRELOAD, 20000
 * blocked calls 9 frames deep, load average 12), record included;
 * libunwind's cached unw_backtrace takes 0.15-0.25 us for the same 15
 * frames but gives no stack pointers (no label merging) and is not linked
 * here. At the default threshold (a call that lost 100 us or more) the
 * unwind adds at most ~3% to it. The first call (at load, below) is the
 * expensive one: libgcc finds its tables then.
 */
#define BT_MAX_NATIVE 64

/*
 * libgcc's unwinder interface (the Itanium C++ ABI's "base ABI", level I):
 * declared here because the compiler's <unwind.h> is shadowed by
 * core/unwind.h in this target's include path.
 */
struct _Unwind_Context;
typedef enum {
	BT_URC_NO_REASON = 0,   /* _URC_NO_REASON */
	BT_URC_END_OF_STACK = 5 /* _URC_END_OF_STACK */
} bt_reason;
typedef bt_reason (*bt_trace_fn)(struct _Unwind_Context *, void *);
extern bt_reason _Unwind_Backtrace(bt_trace_fn, void *);
extern uintptr_t _Unwind_GetCFA(struct _Unwind_Context *);
#if defined(__arm__) && !defined(__aarch64__)
/* ARM EHABI has no _Unwind_GetIP function: its unwind.h reads core
 * register 15 (pc) with _Unwind_VRS_Get (_UVRSC_CORE = 0, _UVRSD_UINT32
 * = 0) and clears the Thumb bit; so does this. */
extern int _Unwind_VRS_Get(struct _Unwind_Context *, int, uint32_t, int,
    void *);

static uintptr_t
bt_get_ip(struct _Unwind_Context *ctx)
{
	uint32_t v = 0;

	_Unwind_VRS_Get(ctx, 0, 15, 0, &v);
	return (uintptr_t)(v & ~(uint32_t)1);
}
#else
extern uintptr_t _Unwind_GetIP(struct _Unwind_Context *);
#define bt_get_ip _Unwind_GetIP
#endif

/* The text of this library: its frames (wrapper, unwinder) are skipped. */
static uintptr_t self_lo, self_hi;

struct bt_walk {
	uint64_t ip[BT_MAX_NATIVE];
	uint64_t cfa[BT_MAX_NATIVE];
	int n;
	int skip;               /* frames of this library still leading */
	int truncated;
	uint64_t cfa_prev;      /* CFA of the last frame seen */
};

static bt_reason
bt_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct bt_walk *w = arg;
	uint64_t ip = (uint64_t)bt_get_ip(ctx);
	uint64_t cfa = (uint64_t)_Unwind_GetCFA(ctx);

	if (ip == 0)
		return BT_URC_END_OF_STACK;
	if (w->skip && ip >= self_lo && ip < self_hi) {
		w->cfa_prev = cfa;
		return BT_URC_NO_REASON;
	}
	w->skip = 0;
	if (w->n == BT_MAX_NATIVE) {
		w->truncated = 1;
		return BT_URC_END_OF_STACK;
	}
	/* A frame's SP is the CFA of the frame it called. */
	w->ip[w->n] = ip;
	w->cfa[w->n++] = w->cfa_prev;
	w->cfa_prev = cfa;
	return BT_URC_NO_REASON;
}

/* dl_iterate_phdr: the executable segments of the module at @data. */
static int
self_range(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if ((uintptr_t)info->dlpi_addr != (uintptr_t)data)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (self_lo == 0 || a < self_lo)
			self_lo = a;
		if (a + ph->p_memsz > self_hi)
			self_hi = a + ph->p_memsz;
	}
	return 1;
}

/*
 * A BACKTRACE record after the marker that started at @t0: the caller's
 * native frames (this library's skipped) merged with the thread's labels,
 * outermost first. Context: @th's own thread, after a blocking call.
 */
static __attribute__((noinline)) void
backtrace_rec(struct rtprof__thread *th, uint64_t t0)
{
	struct bt_walk w;
	uint64_t frames[RTPROF_REC_MAX_FRAMES];
	unsigned char is_label[RTPROF_REC_MAX_FRAMES];
	unsigned k = 0, li = 0, nl, arr;
	unsigned char *p;

	w.n = 0;
	w.skip = 1;
	w.truncated = 0;
	w.cfa_prev = 0;
	in_bt = 1;
	_Unwind_Backtrace(bt_frame, &w);
	in_bt = 0;
	/* The owner reads its own label stack: no sequence needed. */
	nl = atomic_load_explicit(&th->label_depth, memory_order_relaxed);
	if (nl > RTPROF_MAX_LABELS)
		nl = RTPROF_MAX_LABELS;
	/* Outermost first; a label follows the outermost frame whose SP is at
	 * or below the SP it was pushed at (core/sampler.c, merge()). */
	for (int i = w.n - 1; i >= 0 && k < RTPROF_REC_MAX_FRAMES; i--) {
		frames[k] = w.ip[i];
		is_label[k++] = 0;
		while (li < nl && k < RTPROF_REC_MAX_FRAMES &&
		    th->label_sp[li] >= w.cfa[i]) {
			frames[k] = (uint64_t)(uintptr_t)atomic_load_explicit(
			    &th->labels[li++], memory_order_relaxed);
			is_label[k++] = 1;
		}
	}
	while (li < nl && k < RTPROF_REC_MAX_FRAMES) {
		frames[k] = (uint64_t)(uintptr_t)atomic_load_explicit(
		    &th->labels[li++], memory_order_relaxed);
		is_label[k++] = 1;
	}
	/* [12, t0, flags, frame...], always an array16 (as SAMPLE). */
	p = rtprof__open(14 + (size_t)k * 10);
	if (p == NULL)
		return;
	arr = 3 + k;
	p[0] = 0xdc;
	p[1] = (unsigned char)(arr >> 8);
	p[2] = (unsigned char)arr;
	p[3] = RTPROF_REC_BACKTRACE;
	p = rtprof__put_u64(p + 4, 0xcf, t0);
	*p++ = w.truncated ? RTPROF_BACKTRACE_TRUNCATED : 0;
	for (unsigned i = 0; i < k; i++)
		p = is_label[i] ? rtprof__put_ptr(p,
		    (const void *)(uintptr_t)frames[i]) :
		    rtprof__put_u64(p, 0xcf, frames[i]);
	rtprof__close(p);
}

/* RTPROF_BLOCK_THRESHOLD_US: microseconds, or "off". */
static void
threshold_init(void)
{
	const char *v = getenv("RTPROF_BLOCK_THRESHOLD_US");
	double us = 100.0;
	char *end;

	if (v != NULL && strcmp(v, "off") == 0)
		return;
	if (v != NULL && *v != '\0') {
		double d = strtod(v, &end);

		if (end != v && *end == '\0' && d >= 0 && d < 1e12)
			us = d;
	}
	bt_ticks = (uint64_t)(us * rtprof_ticks_per_second() / 1e6);
}

/* Context: the dynamic loader, after librtprof's constructor. */
__attribute__((constructor)) static void
preload_init(void)
{
	Dl_info self;

	blocked_type = rtprof_marker_type_declare(&rtprof__blocked_path_schema);
	min_ticks = (uint64_t)(rtprof_ticks_per_second() / 1e6);
	if (min_ticks == 0)
		min_ticks = 1;
	if (dladdr((void *)preload_init, &self) != 0)
		dl_iterate_phdr(self_range, self.dli_fbase);
	threshold_init();
	if (bt_ticks != UINT64_MAX) {
		/* Once now: libgcc loads and finds its tables at the first
		 * unwind, which a wrapper may run in a signal handler. */
		struct bt_walk w = { .skip = 0 };

		_Unwind_Backtrace(bt_frame, &w);
	}
	atomic_store_explicit(&armed, blocked_type != NULL,
	    memory_order_release);
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

	if (!atomic_load_explicit(&armed, memory_order_acquire) ||
	    th == NULL || (th->flags & RTPROF_THREAD_SAMPLER) ||
	    in_bt)
		return 0;
	b->th = th;
	b->t0 = rtprof_now();
	/* release: pairs with the sampler's acquire (threadview.c). */
	atomic_store_explicit(&th->sleep, RTPROF__ASLEEP, memory_order_release);
	return 1;
}

/*
 * What descriptor @fd names: readlink of /proc/self/fd/FD (a path, or
 * "pipe:[ino]", "socket:[ino]", "anon_inode:[eventpoll]"), into @buf.
 * A few microseconds (a system call): only for a call that already lost
 * at least the threshold. Return: its length, 0 when unknown.
 */
static size_t
fd_path(int64_t fd, char *buf, size_t n)
{
	char link[40];
	ssize_t k;
	int saved = errno;

	if (fd < 0 || fd > INT32_MAX)
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", (int)fd);
	k = readlink(link, buf, n);
	errno = saved;
	return k > 0 ? (size_t)k : 0;
}

/*
 * The end of a timed call: its "Blocked" marker (and the stack, past the
 * threshold). @given: the path the call named (open, stat), recorded
 * instead of @fd's. Context: the calling thread.
 */
static inline void
blk_end_path(struct blk *b, const char *call, int64_t fd, int64_t bytes,
    const char *given)
{
	int saved = errno;
	uint64_t t1;
	rtprof_rec r;
	char path[RTPROF_MAX_STRING];
	size_t plen = 0;
	int slow;

	atomic_store_explicit(&b->th->sleep, RTPROF__AWAKE,
	    memory_order_release);
	t1 = rtprof_now();
	/* Over the threshold, and never on a real-time thread: the unwinder
	 * may take the loader's lock and costs microseconds, readlink is a
	 * system call, and such a thread's next work (an audio cycle) starts
	 * as soon as the call returns. */
	slow = t1 - b->t0 >= bt_ticks && !(b->th->flags & RTPROF_THREAD_RT);
	if (slow && t1 - b->t0 >= min_ticks && given != NULL) {
		plen = strnlen(given, sizeof(path));
		memcpy(path, given, plen);
	} else if (slow && t1 - b->t0 >= min_ticks) {
		plen = fd_path(fd, path, sizeof(path));
	}
	if (t1 - b->t0 >= min_ticks && rtprof_marker_open(&r, blocked_type,
	    RTPROF_PHASE_INTERVAL, b->t0, t1)) {
		rtprof_put_static_str(&r, call);
		rtprof_put_i64(&r, fd);
		rtprof_put_i64(&r, bytes);
		rtprof_put_str(&r, path, plen);
		rtprof_marker_close(&r);
		/* Right after its marker, in the same stream. */
		if (slow)
			backtrace_rec(b->th, b->t0);
	}
	errno = saved;
}

static inline void
blk_end(struct blk *b, const char *call, int64_t fd, int64_t bytes)
{
	blk_end_path(b, call, fd, bytes, NULL);
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
/* Waiting for descriptors with a signal mask (GNU make's jobserver wait
 * is pselect), for children, threads, semaphores, and sleeps that glibc
 * makes without going through nanosleep's symbol (sleep, usleep). */
BLOCKING(int, pselect, (int n, fd_set *r_, fd_set *w, fd_set *e,
    const struct timespec *t, const sigset_t *m), (n, r_, w, e, t, m), -1, r)
BLOCKING(int, ppoll, (struct pollfd *f, nfds_t n, const struct timespec *t,
    const sigset_t *m), (f, n, t, m), -1, r)
BLOCKING(int, epoll_pwait, (int ep, struct epoll_event *ev, int n, int ms,
    const sigset_t *m), (ep, ev, n, ms, m), ep, r)
BLOCKING(pid_t, wait, (int *st), (st), -1, -1)
BLOCKING(pid_t, waitpid, (pid_t p, int *st, int o), (p, st, o), -1, -1)
BLOCKING(pid_t, wait3, (int *st, int o, struct rusage *u), (st, o, u), -1,
    -1)
BLOCKING(pid_t, wait4, (pid_t p, int *st, int o, struct rusage *u),
    (p, st, o, u), -1, -1)
BLOCKING(int, waitid, (idtype_t t, id_t id, siginfo_t *i, int o),
    (t, id, i, o), -1, -1)
BLOCKING(int, pthread_join, (pthread_t t, void **ret), (t, ret), -1, -1)
BLOCKING(int, sem_timedwait, (sem_t *s, const struct timespec *t), (s, t),
    -1, -1)
BLOCKING(int, sem_clockwait, (sem_t *s, clockid_t c,
    const struct timespec *t), (s, c, t), -1, -1)
BLOCKING(unsigned int, sleep, (unsigned int sec), (sec), -1, -1)
BLOCKING(int, usleep, (useconds_t us), (us), -1, -1)
BLOCKING(ssize_t, getdents64, (int fd, void *b, size_t n), (fd, b, n), fd, r)

/*
 * Calls that name a path (open on a FIFO waits for its other end, stat on
 * a network file system for the server): the marker carries that path.
 * Each is defined by its symbol (asm label): with _FILE_OFFSET_BITS=64
 * the header renames open to open64, stat to stat64, and both names must
 * be ours; the buffer is opaque (struct stat and struct stat64 alike).
 * Context: any thread of the program. The pointer to libc's function is
 * cached relaxed: every thread that looks it up stores the same value.
 */
#define PATH_CALL(sym, cname, params, args, path, fd)                          \
	RTPROF_API int cname params __asm__(#sym);                             \
	RTPROF_API int                                                         \
	cname params                                                           \
	{                                                                      \
		static _Atomic(int (*) params) real_;                          \
		int (*real) params = atomic_load_explicit(&real_,              \
		    memory_order_relaxed);                                     \
		struct blk blk_;                                               \
		int r;                                                         \
		if (real == NULL) {                                            \
			real = (int (*) params)dlsym(RTLD_NEXT, #sym);         \
			atomic_store_explicit(&real_, real,                    \
			    memory_order_relaxed);                             \
		}                                                              \
		if (real == NULL) {                                            \
			errno = ENOSYS;                                        \
			return -1;                                             \
		}                                                              \
		if (!blk_begin(&blk_))                                         \
			return real args;                                      \
		r = real args;                                                 \
		blk_end_path(&blk_, #sym, (fd), -1, (path));                   \
		return r;                                                      \
	}

PATH_CALL(stat, rtprof_pl_stat, (const char *p, void *b), (p, b), p, -1)
PATH_CALL(stat64, rtprof_pl_stat64, (const char *p, void *b), (p, b), p, -1)
PATH_CALL(lstat, rtprof_pl_lstat, (const char *p, void *b), (p, b), p, -1)
PATH_CALL(lstat64, rtprof_pl_lstat64, (const char *p, void *b), (p, b), p,
    -1)
PATH_CALL(fstatat, rtprof_pl_fstatat, (int d, const char *p, void *b, int f),
    (d, p, b, f), p, -1)
PATH_CALL(fstatat64, rtprof_pl_fstatat64, (int d, const char *p, void *b,
    int f), (d, p, b, f), p, -1)

typedef int (*openat_fn)(int, const char *, int, ...);

/*
 * open, open64, openat, openat64: libc's openat (@large: openat64, which
 * differs on 32-bit targets); open(p) is openat(AT_FDCWD, p). The marker
 * is named @call (open64 as open). Context: any thread of the program;
 * libc's function is cached relaxed (every thread stores the same value).
 */
static int
open_timed(const char *call, bool large, int dir, const char *path,
    int flags, mode_t mode)
{
	static _Atomic(openat_fn) cache[2];
	openat_fn real = atomic_load_explicit(&cache[large],
	    memory_order_relaxed);
	struct blk b;
	int r;

	if (real == NULL) {
		real = (openat_fn)dlsym(RTLD_NEXT, large ? "openat64" :
		    "openat");
		atomic_store_explicit(&cache[large], real,
		    memory_order_relaxed);
	}
	if (real == NULL) {
		errno = ENOSYS;
		return -1;
	}
	if (!blk_begin(&b))
		return real(dir, path, flags, mode);
	r = real(dir, path, flags, mode);
	blk_end_path(&b, call, r, -1, path);
	return r;
}

/* The mode argument exists only with O_CREAT or O_TMPFILE. */
#define OPEN_MODE(flags, mode)                                                 \
	do {                                                                   \
		if ((flags) & (O_CREAT | O_TMPFILE)) {                         \
			va_list ap_;                                           \
			va_start(ap_, flags);                                  \
			mode = va_arg(ap_, mode_t);                            \
			va_end(ap_);                                           \
		}                                                              \
	} while (0)

RTPROF_API int rtprof_pl_open(const char *path, int flags, ...)
    __asm__("open");
RTPROF_API int rtprof_pl_open64(const char *path, int flags, ...)
    __asm__("open64");
RTPROF_API int rtprof_pl_openat(int dir, const char *path, int flags, ...)
    __asm__("openat");
RTPROF_API int rtprof_pl_openat64(int dir, const char *path, int flags, ...)
    __asm__("openat64");

RTPROF_API int
rtprof_pl_open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return open_timed("open", false, AT_FDCWD, path, flags, mode);
}

RTPROF_API int
rtprof_pl_open64(const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return open_timed("open", true, AT_FDCWD, path, flags, mode);
}

RTPROF_API int
rtprof_pl_openat(int dir, const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return open_timed("openat", false, dir, path, flags, mode);
}

RTPROF_API int
rtprof_pl_openat64(int dir, const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return open_timed("openat", true, dir, path, flags, mode);
}

/* A mutex lock blocks only when contended: try first, time the rest. */
RTPROF_API int
pthread_mutex_lock(pthread_mutex_t *m)
{
	struct blk b;
	int r;
	REAL(pthread_mutex_lock);

	if (!atomic_load_explicit(&armed, memory_order_acquire) ||
	    rtprof__tls.thread == NULL)
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
 * session. A fork child whose session has not started yet (core/state.c,
 * follow_start) does not start it now: it would only ask the launcher for
 * a dump and end it at once. A vfork child changes nothing (below).
 * Context: the calling thread (in a vfork child: the parent's, borrowed).
 */
static void
before_exec(void)
{
	/* A vfork child (CPython's subprocess, posix_spawn) shares its
	 * parent's memory: stopping here would end the parent's session.
	 * The image it execs asks for a dump of its own. */
	if (rtprof__in_vfork_child())
		return;
	rtprof__autostop();     /* also before _exit: see below */
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
