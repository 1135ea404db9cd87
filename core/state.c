/*
 * state.c - the one shared state, its mutex and proof-of-lock token, the
 * library constructor and the environment autostart.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "core.h"
#include "../codec/wire.h"

static struct rtprof__core core = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.writer_cv = PTHREAD_COND_INITIALIZER,
	.done_cv = PTHREAD_COND_INITIALIZER,
	.private_fd = -1,
};
static const rtprof_lock token = { 1 };

/* The wire format and the public header spell the same numbers. */
_Static_assert(RTPROF__REC_INSTANT == RTPROF_REC_INSTANT, "wire");
_Static_assert(RTPROF__REC_BEGIN == RTPROF_REC_BEGIN, "wire");
_Static_assert(RTPROF__REC_END == RTPROF_REC_END, "wire");
_Static_assert(RTPROF__REC_INTERVAL == RTPROF_REC_INTERVAL, "wire");
_Static_assert(RTPROF__REC_TYPED == RTPROF_REC_TYPED, "wire");
_Static_assert(RTPROF__REC_COUNTER == RTPROF_REC_COUNTER, "wire");
_Static_assert(RTPROF__REC_SLEEP == RTPROF_REC_SLEEP, "wire");
_Static_assert(RTPROF__REC_WAKE == RTPROF_REC_WAKE, "wire");
_Static_assert(RTPROF_CAT_COUNT == RTPROF_WIRE_NCATEGORIES, "wire");

/* Context: any non-RT thread; blocks. */
const rtprof_lock *
rtprof__lock(void)
{
	pthread_mutex_lock(&core.mu);
	return &token;
}

/* Context: the lock holder. */
void
rtprof__unlock(const rtprof_lock *lk)
{
	(void)lk;
	pthread_mutex_unlock(&core.mu);
}

/* Context: the lock holder. */
struct rtprof__core *
rtprof__core_get(const rtprof_lock *lk)
{
	RTPROF_ASSERT(lk == &token);
	(void)lk;
	return &core;
}

/* Context: any thread. */
RTPROF_API const char *
rtprof_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -EBUSY:
		return "a session is already running";
	case -ENOENT:
		return "no session (or thread not registered)";
	case -EALREADY:
		return "already in that state";
	case -EEXIST:
		return "thread already registered";
	default:
		return err < 0 ? strerror(-err) : "unknown error";
	}
}

/* Context: any thread. */
int
rtprof__settings_resolve(const struct rtprof_settings *in,
    struct rtprof_settings *out)
{
	memset(out, 0, sizeof(*out));
	if (in == NULL || in->struct_size < offsetof(struct rtprof_settings, memory_limit))
		return -EINVAL;
	memcpy(out, in, in->struct_size < sizeof(*out) ? in->struct_size : sizeof(*out));
	out->struct_size = sizeof(*out);
	if (out->mode != RTPROF_MODE_STREAM && out->mode != RTPROF_MODE_FLIGHT_RECORDER)
		return -EINVAL;
	if (out->fd < 0 || fcntl(out->fd, F_GETFL) < 0)
		return -EINVAL;
	if (out->chunk_size == 0 && out->link_bytes_per_sec != 0) {
		/* About 1/4 s of link time per chunk: a thread's data does
		 * not wait long for its chunk to fill, and dropping the
		 * oldest chunk loses little. */
		out->chunk_size = out->link_bytes_per_sec / 4;
		if (out->chunk_size < RTPROF__MIN_CHUNK)
			out->chunk_size = RTPROF__MIN_CHUNK;
		if (out->chunk_size > (64u << 10))
			out->chunk_size = 64u << 10;
	}
	if (out->chunk_size == 0)
		out->chunk_size = 64u << 10;
	if (out->chunk_size < RTPROF__MIN_CHUNK || out->chunk_size > (8u << 20))
		return -EINVAL;
	if (out->memory_limit == 0)
		out->memory_limit = 32u << 20;
	if (out->memory_limit < out->chunk_size)
		return -EINVAL;
	if (out->prefill == 0)
		out->prefill = 4;
	if (out->prefill >= RTPROF__EMPTY_RING)
		out->prefill = RTPROF__EMPTY_RING - 1;
	if (out->flush_interval_us == 0)
		out->flush_interval_us = 10000;
	if (out->sample_interval_us == 0)
		out->sample_interval_us = 1000;
	if (out->sample_interval_us != RTPROF_SAMPLING_OFF &&
	    (out->sample_interval_us < 100 ||
	    out->sample_interval_us > 1000000))
		return -EINVAL;
	if (out->write_timeout_ms == 0)
		out->write_timeout_ms = 5000;
	if (out->dump_signal != 0 &&
	    (out->mode != RTPROF_MODE_FLIGHT_RECORDER || out->dump_signal < 1 ||
	    out->dump_signal >= NSIG || out->dump_signal == SIGKILL ||
	    out->dump_signal == SIGSTOP ||
	    rtprof__sig_taken(out->dump_signal,
	    out->sample_interval_us != RTPROF_SAMPLING_OFF)))
		return -EINVAL;
	return 0;
}

/*
 * Following fork() children under `rtprof record` (RTPROF_SOCK): a process
 * whose session autostarted on a descriptor from the launcher keeps the
 * launcher's socket and its settings (follow_*); a child it forks without
 * exec asks for a dump of its own and records its one thread, the forking
 * one (fork_child()). Not at once: a child that execs or exits right after
 * the fork (a shell running a command, a double fork) would leave a dump
 * of its own for a few hundred microseconds of shell code (a process of
 * the profile per command), and pay a round trip to the launcher and two
 * thread starts per fork. A detached, unregistered thread waits until the
 * child used FOLLOW_CPU_NS of CPU or lived FOLLOW_WALL_NS, then asks and
 * starts the session: what the child did before is not recorded. exec,
 * _exit and exit cancel it first (rtprof__follow_cancel(): a start in
 * progress completes under follow_mu, then the caller stops it).
 * Lock order: follow_mu, then the core mutex.
 */
#define FOLLOW_CPU_NS 2000000LL
#define FOLLOW_WALL_NS 50000000LL
#define FOLLOW_POLL_NS 1000000L

static pthread_mutex_t follow_mu = PTHREAD_MUTEX_INITIALIZER;
static char follow_sock[108];           /* "": fork children not followed */
static int follow_fd = -1;              /* this process's own descriptor */
static struct rtprof_settings follow_set;
static int follow_cancelled;

/* Context: any thread (core/preload.c: before exec and _exit). */
RTPROF_API void
rtprof__follow_cancel(void)
{
	pthread_mutex_lock(&follow_mu);
	follow_cancelled = 1;
	pthread_mutex_unlock(&follow_mu);
}

/*
 * The process the sessions belong to: set by the constructor and in a fork
 * child. A vfork child (CPython's subprocess, posix_spawn) runs in its
 * parent's memory until it execs or exits, with another pid: what it does
 * must not stop the parent's session. Written by the constructor and
 * fork_child() (one thread), read by any thread: relaxed (a pid, no data
 * published with it).
 */
static _Atomic pid_t owner_pid;

/* Context: any thread. */
RTPROF_API int
rtprof__in_vfork_child(void)
{
	pid_t o = atomic_load_explicit(&owner_pid, memory_order_relaxed);

	return o != 0 && getpid() != o;
}

/* 1 while this thread creates one of rtprof's own threads. */
static __thread int creating_own;

/* Context: any thread (the one creating the thread). */
int
rtprof__own_thread_create(pthread_t *t, const pthread_attr_t *attr,
    void *(*fn)(void *), void *arg)
{
	int rc;

	creating_own = 1;
	rc = pthread_create(t, attr, fn, arg);
	creating_own = 0;
	return rc;
}

/* Context: any thread. */
RTPROF_API int
rtprof__creating_own_thread(void)
{
	return creating_own;
}

/* The sink error of the last session that ended (0: none). */
static int
core_last_error(void)
{
	const rtprof_lock *lk = rtprof__lock();
	int e = core.has_last ? core.last.sink_error : 0;

	rtprof__unlock(lk);
	return e;
}

static void
autostop(void)
{
	rtprof__autostop();
}

/* Context: the exiting or exec'ing thread; nothing in a vfork child. */
RTPROF_API void
rtprof__autostop(void)
{
	int rc;

	if (rtprof__in_vfork_child())
		return;
	rtprof__follow_cancel();
	rc = rtprof_session_stop();
	if (rc == -ENOENT && core_last_error() != 0)
		rc = core_last_error();
	if (rc == -ETIMEDOUT)
		fprintf(stderr, "rtprof: pid %d: the dump's reader took no data "
		    "for %d ms at exit: stopped waiting; the data not yet "
		    "written (the end of the recording) is lost\n",
		    (int)getpid(), RTPROF__FINAL_WAIT_MS);
	else if (rc == -EBADF)
		fprintf(stderr, "rtprof: pid %d: the dump's descriptor was "
		    "taken over by the program: the recording ends where it "
		    "was, nothing was written into the program's file\n",
		    (int)getpid());
}

/*
 * Environment autostart: RTPROF_FD=N starts a session writing to the
 * already open descriptor N at process start and finishes it at exit.
 * The library never opens a path: a launcher opens the file (tools/).
 * RTPROF_MODE=flight, RTPROF_MEMORY=bytes, RTPROF_MAX_BYTES=bytes,
 * RTPROF_SAMPLE_US=interval, RTPROF_LINK_RATE=bytes/s and
 * RTPROF_DUMP_SIGNAL=USR1 (flight recorder) tune it. The variable is removed and the
 * descriptor made close-on-exec: only this process writes to it (programs
 * it starts get their own from the launcher through RTPROF_SOCK).
 * Context: the library constructor, on the main thread before main().
 */
/*
 * RTPROF_SOCK=PATH (set by `rtprof record` for every process it follows):
 * a process started without a descriptor of its own asks the launcher for
 * one over that Unix socket (its pid in, a descriptor back by SCM_RIGHTS).
 * Return: the descriptor, or -1.
 */
static int
fd_from_launcher(const char *path)
{
	struct sockaddr_un a;
	char msg[32], cbuf[CMSG_SPACE(sizeof(int))], one;
	struct iovec iov = { &one, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	struct timeval tmo = { 3, 0 };
	int sk, fd = -1, n;

	if (strlen(path) >= sizeof(a.sun_path))
		return -1;
	sk = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sk < 0)
		return -1;
	/* A launcher that does not answer within seconds: unrecorded. */
	setsockopt(sk, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof(tmo));
	setsockopt(sk, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	strcpy(a.sun_path, path);
	n = snprintf(msg, sizeof(msg), "%d\n", (int)getpid());
	if (connect(sk, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    write(sk, msg, (size_t)n) == n && recvmsg(sk, &mh, MSG_CMSG_CLOEXEC)
	    == 1 && (cm = CMSG_FIRSTHDR(&mh)) != NULL &&
	    cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	close(sk);
	return fd;
}

/* "USR1", "SIGUSR1", "10" -> the signal number; 0 when unknown. */
static int
signal_number(const char *v)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {
		{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "HUP", SIGHUP },
		{ "QUIT", SIGQUIT }, { "TRAP", SIGTRAP }, { "URG", SIGURG },
	};

	if (strncmp(v, "SIG", 3) == 0)
		v += 3;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(v, names[i].name) == 0)
			return names[i].sig;
	return atoi(v);
}

/*
 * RTPROF_SERIAL=DEVICE (a board without a launcher: the UART is the only
 * way out) with RTPROF_BAUD=N (default 115200): the process opens the line
 * itself (rtprof_tty_open) and paces the writer to it unless
 * RTPROF_LINK_RATE says otherwise.
 */
static int
fd_from_serial(const char *path, struct rtprof_settings *s)
{
	const char *b = getenv("RTPROF_BAUD");
	uint32_t baud = b != NULL ? (uint32_t)strtoul(b, NULL, 0) : 115200;
	int fd = rtprof_tty_open(path, baud);

	if (fd < 0) {
		fprintf(stderr, "rtprof: %s: %s\n", path, rtprof_strerror(fd));
		return -1;
	}
	s->link_bytes_per_sec = baud / 10;
	return fd;
}

/*
 * The environment's settings, checked before a session is tried: a value
 * that cannot start one is refused with the variable and its bound on
 * stderr, never a silent empty dump. Context: the constructor.
 * Return: 0, -1 refused (said).
 */
static int
autostart_check(const struct rtprof_settings *s)
{
	uint64_t chunk = s->chunk_size != 0 ? s->chunk_size : 64u << 10;
	const char *v;

	if (s->memory_limit != 0 && s->memory_limit < chunk) {
		v = getenv("RTPROF_MEMORY");
		fprintf(stderr, "rtprof: RTPROF_MEMORY=%s: below the minimum "
		    "of %llu bytes (one chunk); not recording\n",
		    v != NULL ? v : "?", (unsigned long long)chunk);
		return -1;
	}
	if (s->sample_interval_us != 0 &&
	    s->sample_interval_us != RTPROF_SAMPLING_OFF &&
	    (s->sample_interval_us < 100 || s->sample_interval_us > 1000000)) {
		fprintf(stderr, "rtprof: RTPROF_SAMPLE_US=%u: not from 100 to "
		    "1000000; not recording\n", s->sample_interval_us);
		return -1;
	}
	return 0;
}

/*
 * The launcher's descriptor moved as high as it goes (the top free number
 * under RLIMIT_NOFILE), away from the small numbers a program reuses
 * (bash `exec 3>a`). Only where the writer cannot keep it in a table of
 * its own does the number stay in use (writer.c, go_private()).
 * Context: the constructor or the fork follower. Return: the new number.
 */
static int
sink_move_high(int fd)
{
	long max = sysconf(_SC_OPEN_MAX);

	for (long step = 1; max > 0 && step < max; step *= 2) {
		int hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)(max - step));

		if (hi >= 0) {
			close(fd);
			return hi;
		}
	}
	return fd;
}

/*
 * Start the launcher's session on @s (its fd moved high): the writer
 * takes the descriptor into a table of its own, then the program's copy
 * is closed (or, when that failed, kept: the writer checks its identity
 * before each write). Context: the constructor or the fork follower,
 * follow_mu not held. Return: rtprof_session_start()'s.
 */
static int
launcher_start(struct rtprof_settings *s)
{
	const rtprof_lock *lk;
	int rc, state;

	lk = rtprof__lock();
	rtprof__writer_private(lk, s->fd);
	rtprof__unlock(lk);
	rc = rtprof_session_start(s);
	lk = rtprof__lock();
	while (rc == 0 && core.private_state == 0)
		pthread_cond_wait(&core.done_cv, &core.mu);
	state = core.private_state;
	if (rc != 0)
		core.private_fd = -1;
	rtprof__unlock(lk);
	if (rc == 0 && state == 1)
		close(s->fd);   /* the writer's copy is the only one */
	return rc;
}

/*
 * RTPROF_FD_ID=DEV:INO (set by `rtprof record` beside RTPROF_FD): the
 * descriptor's identity. A shell keeps its own copy of the environment,
 * so a program it starts may still see RTPROF_FD after this process
 * removed it, with the number now a file of the script's (`exec 5>c`):
 * such a descriptor is not the launcher's and is never written (the
 * process asks over RTPROF_SOCK instead). Context: the constructor.
 * Return: 1 when RTPROF_FD_ID is set and @fd is not that descriptor.
 */
static int
fd_is_stale(int fd)
{
	const char *id = getenv("RTPROF_FD_ID");
	unsigned long long dev, ino;
	struct stat st;

	if (id == NULL || *id == '\0')
		return 0;
	if (sscanf(id, "%llu:%llu", &dev, &ino) != 2)
		return 1;
	return fstat(fd, &st) != 0 || (unsigned long long)st.st_dev != dev ||
	    (unsigned long long)st.st_ino != ino;
}

static void
autostart(void)
{
	const char *fd = getenv("RTPROF_FD"), *v;
	const char *sock = getenv("RTPROF_SOCK");
	struct rtprof_settings s;
	int n = -1, launcher = 0;

	memset(&s, 0, sizeof(s));
	if (fd != NULL && *fd != 0 && !fd_is_stale(atoi(fd))) {
		n = atoi(fd);
		launcher = 1;
	} else if ((v = getenv("RTPROF_SERIAL")) != NULL && *v != 0) {
		n = fd_from_serial(v, &s);
	} else if (sock != NULL && *sock != 0) {
		n = fd_from_launcher(sock);
		launcher = 1;
	}
	if (n < 0)
		return;
	s.struct_size = sizeof(s);
	s.fd = n;
	if ((v = getenv("RTPROF_MODE")) != NULL && strcmp(v, "flight") == 0)
		s.mode = RTPROF_MODE_FLIGHT_RECORDER;
	if ((v = getenv("RTPROF_MEMORY")) != NULL)
		s.memory_limit = strtoull(v, NULL, 0);
	if ((v = getenv("RTPROF_MAX_BYTES")) != NULL)
		s.max_bytes = strtoull(v, NULL, 0);
	if ((v = getenv("RTPROF_SAMPLE_US")) != NULL)
		s.sample_interval_us = (uint32_t)strtoul(v, NULL, 0);
	if ((v = getenv("RTPROF_LINK_RATE")) != NULL)
		s.link_bytes_per_sec = (uint32_t)strtoul(v, NULL, 0);
	if ((v = getenv("RTPROF_PREFAULT")) != NULL && strcmp(v, "1") == 0)
		s.prefault = 1;
	if ((v = getenv("RTPROF_DUMP_SIGNAL")) != NULL)
		s.dump_signal = signal_number(v);
	/* The descriptor is this process's: programs it starts get neither
	 * the variable nor the descriptor (two writers would interleave). */
	unsetenv("RTPROF_FD");
	unsetenv("RTPROF_FD_ID");
	fcntl(s.fd, F_SETFD, FD_CLOEXEC);
	if (autostart_check(&s) != 0) {
		if (launcher)
			close(s.fd);    /* the launcher: "no data", said why */
		return;
	}
	if (launcher)
		s.fd = sink_move_high(s.fd);
	if (rtprof_thread_register("main", RTPROF_THREAD_MAIN) == 0 &&
	    (launcher ? launcher_start(&s) : rtprof_session_start(&s)) == 0) {
		/* Under a launcher: fork children are followed too. */
		if (launcher && sock != NULL && *sock != 0 &&
		    strlen(sock) < sizeof(follow_sock)) {
			strcpy(follow_sock, sock);
			follow_fd = s.fd;
			follow_set = s;
		}
		atexit(autostop);
		/* The header written before main(): a process stopped or
		 * killed early still leaves a dump that says who it was. */
		rtprof__session_dump_within(RTPROF__FINAL_WAIT_MS);
	}
}

/*
 * The follower of a fork child (see follow_mu): waits until the child did
 * something worth a dump, then asks the launcher for one and starts the
 * child's session on it. Context: a detached thread of the child, not
 * registered (no samples, no markers), every signal blocked.
 */
static int64_t
ts_ns(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void *
follow_start(void *arg)
{
	struct timespec nap = { 0, FOLLOW_POLL_NS };
	struct rtprof_settings s;
	int64_t t0 = ts_ns(CLOCK_MONOTONIC);
	sigset_t all;
	int fd, cancelled;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* CLOCK_PROCESS_CPUTIME_ID: the child's own, from 0 at the fork. */
	do {
		nanosleep(&nap, NULL);
		pthread_mutex_lock(&follow_mu);
		cancelled = follow_cancelled;
		pthread_mutex_unlock(&follow_mu);
		if (cancelled)
			return NULL;
	} while (ts_ns(CLOCK_PROCESS_CPUTIME_ID) < FOLLOW_CPU_NS &&
	    ts_ns(CLOCK_MONOTONIC) - t0 < FOLLOW_WALL_NS);
	/* Not under follow_mu: an exec or _exit meanwhile must not wait on
	 * the launcher (its answer is bounded anyway, fd_from_launcher()). */
	fd = fd_from_launcher(follow_sock);
	if (fd < 0)
		return NULL;    /* refused (a cap) or no launcher: unrecorded */
	pthread_mutex_lock(&follow_mu);
	s = follow_set;
	s.fd = sink_move_high(fd);
	if (!follow_cancelled && launcher_start(&s) == 0) {
		follow_fd = s.fd;
		/* the header now, as autostart */
		rtprof__session_dump_within(RTPROF__FINAL_WAIT_MS);
	} else {
		close(s.fd);    /* an empty dump: the launcher leaves it out */
	}
	pthread_mutex_unlock(&follow_mu);
	return NULL;
}

/*
 * fork(): the child has only the forking thread, none of rtprof's threads,
 * and a copy of the parent's session it must not write. The core mutex
 * (and follow_mu) is held across the fork (no other thread can be in the
 * middle of changing the state); in the child, the session is dropped
 * (recording calls count their events as outside a session, an exit
 * handler's stop returns at once). The forking thread is the child's now:
 * its tid and CPU clock are the child's.
 *
 * Under `rtprof record` (follow_sock; every session the child inherited
 * on the launcher's descriptor) the child records on its own: the parent's
 * descriptor is replaced by /dev/null in the child (the parent's pipe
 * ends when the parent ends, and what the parent's writer had in flight at
 * the fork, which the child's writer finds in its batch, goes nowhere: the
 * number stays taken, no descriptor of the child's can be written by it),
 * the parent's sessions are abandoned (their memory and the chunks other
 * threads held are leaked: a copy, bounded by the memory limit), and
 * follow_start() starts the child's session. Otherwise, if a session was in
 * flight (chunks in queues, the writer's batch) no new one can start in
 * the child; a child of a process that was not recording can record.
 * Context: the forking thread.
 */
static void
fork_prepare(void)
{
	pthread_mutex_lock(&follow_mu);
	pthread_mutex_lock(&core.mu);
}

static void
fork_parent(void)
{
	pthread_mutex_unlock(&core.mu);
	pthread_mutex_unlock(&follow_mu);
}

/* Context: fork_child(), no other thread yet. Return: 1 when the child
 * records on its own (the parent's descriptor replaced), else 0. */
static int
follow_child(const struct rtprof__thread *self)
{
	int nul;

	if (follow_sock[0] == '\0' || self == NULL || core.forked)
		return 0;
	/* (The writer's own table holds it at another number: private.) */
	for (struct rtprof__session *s = core.sessions; s != NULL;
	    s = s->next)
		if (s->set.fd != follow_fd && !(core.private_state == 1 &&
		    s->set.fd == core.private_fd))
			return 0;       /* a session the program started */
	/* The writer held the descriptor in a table of its own: the child's
	 * table (a copy of the program's) does not have it, and the number
	 * may be a file of the program's now: nothing to replace. */
	if (core.sessions != NULL && core.private_state != 1) {
		nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (nul < 0)
			return 0;
		if (dup3(nul, follow_fd, O_CLOEXEC) < 0) {
			close(nul);
			return 0;
		}
		close(nul);
	}
	return 1;
}

static void
fork_child(void)
{
	struct rtprof__thread *self = rtprof__tls.thread;
	pthread_attr_t at;
	pthread_t t;
	int follow;

	/* Held by this thread since fork_prepare(): released, not
	 * re-initialised (the waiters of the parent do not exist here). */
	pthread_mutex_unlock(&core.mu);
	pthread_cond_init(&core.writer_cv, NULL);
	pthread_cond_init(&core.done_cv, NULL);
	__atomic_store_n(&rtprof__state, 0, __ATOMIC_RELEASE);
	if (self != NULL)
		rtprof__thread_bind(self);
	follow = follow_child(self);
	/* A session in flight (chunks in queues, the writer's batch) was
	 * copied half-done: no session in this child, unless it follows
	 * (above). Without one, the child starts its own (new writer and
	 * sampler threads). */
	if (!follow && (core.running != NULL || core.sessions != NULL))
		core.forked = 1;
	core.running = NULL;
	core.sessions = NULL;
	core.writer_started = 0;
	core.sampler_started = 0;
	core.private_fd = -1;
	core.private_state = 0;
	rtprof__writer_fork_child();
	atomic_store_explicit(&owner_pid, getpid(), memory_order_relaxed);
	rtprof__perf_fork_child(core.threads);
	/* The parent's other threads do not exist here. */
	for (struct rtprof__thread *th = core.threads; th != NULL;
	    th = th->next)
		if (th != self)
			th->exited = 1;
	/* The state is the child's: its follower may start now. */
	follow_cancelled = !follow;
	if (follow && pthread_attr_init(&at) == 0) {
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		if (rtprof__own_thread_create(&t, &at, follow_start, NULL) != 0)
			follow_cancelled = 1;
		pthread_attr_destroy(&at);
	}
	pthread_mutex_unlock(&follow_mu);
}

/* Context: the dynamic loader, on the main thread before main(). */
__attribute__((constructor)) static void
rtprof__init(void)
{
	atomic_store_explicit(&owner_pid, getpid(), memory_order_relaxed);
	rtprof__clock_init();
	rtprof__registry_init();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	autostart();
}
