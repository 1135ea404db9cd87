/*
 * core.h - the slow side of rtprof: one shared state behind one mutex.
 *
 * Every field of struct rtprof__core is reached through rtprof__core_get(),
 * which takes the proof-of-lock token returned by rtprof__lock(); a function
 * that takes a `const rtprof_lock *` is visibly called with the lock held.
 * Functions used both with and without the lock are split into an outer
 * function that locks and an inner one that takes the token.
 *
 * Threads that run core/ code:
 *   - control calls: any user thread (register, start/stop/pause/resume);
 *   - the writer thread (core/writer.c): the only collector, the only one
 *     that consumes `full` rings, snapshots chunks and writes to sinks;
 *   - the sampler thread (core/sampler.c, core/unwind.c): samples the
 *     registered threads each tick, under the lock.
 * Internal header.
 */
#ifndef RTPROF_CORE_H
#define RTPROF_CORE_H

#include <pthread.h>
#include <sys/types.h>
#include <signal.h>
#include <stdint.h>

#include "../rt/rt_internal.h"

typedef struct rtprof_lock {
	char held;
} rtprof_lock;

/* Context: any non-RT thread; blocks. Return: the proof-of-lock token. */
const rtprof_lock *rtprof__lock(void);
/* Context: the thread that holds @lk. */
void rtprof__unlock(const rtprof_lock *lk);

#define RTPROF_TRY(expr)                                                       \
	do {                                                                   \
		int rtprof__rc = (expr);                                       \
		if (rtprof__rc < 0)                                            \
			return rtprof__rc;                                     \
	} while (0)

#ifdef RTPROF_DEBUG
#include <assert.h>
#define RTPROF_ASSERT(x) assert(x)
#else
#define RTPROF_ASSERT(x) ((void)0)
#endif

enum rtprof__sess_phase {
	RTPROF__SESS_RUNNING = 0,
	RTPROF__SESS_STOPPING = 1, /* stopped; the writer has not closed it */
	RTPROF__SESS_CLOSED = 2,   /* no more chunks accepted; writing out */
	RTPROF__SESS_DONE = 3      /* trailer written (or sink dead) */
};

/* A pause range, in ticks. */
struct rtprof__pause {
	uint64_t start, end;
};

/* A thread's totals in a session, for its final THREAD frame or the
 * trailer (writer.c acct_get()). One per thread, not per tid: a tid can be
 * reused while the exited thread's chunks are still kept. */
struct rtprof__acct {
	const struct rtprof__thread *th;
	pid_t tid;
	uint64_t recorded, dropped_full, dropped_nested, recycled;
};

struct rtprof__session {
	struct rtprof__session *next;
	struct rtprof_settings set;
	uint32_t gen;
	uint32_t id;              /* random session id in frame headers */
	enum rtprof__sess_phase phase;
	int dump_requested;       /* rtprof_session_dump(): write what is kept */
	uint64_t dump_done;       /* dump requests served (for waiters) */
	uint64_t dump_wanted;
	int paused;
	uint64_t pause_start;

	/* Clock pairs: ticks, CLOCK_MONOTONIC ns, CLOCK_REALTIME ns. */
	uint64_t start_ticks, start_mono, start_wall;
	uint64_t stop_ticks, stop_mono, stop_wall;

	/* Chunks waiting, oldest first: flight recorder, kept until a dump;
	 * stream with a link rate, waiting for the link (writer.c pace()). */
	struct rtprof__chunk *q_head, *q_tail;
	uint64_t q_len;
	uint64_t q_bytes;         /* their unsent bytes */

	/* Link pacing (writer, lock held): credit in bytes, refilled at
	 * link_bytes_per_sec; drops of the oldest unsent chunks. */
	int64_t link_credit;
	uint64_t link_mono;       /* last credit update, CLOCK_MONOTONIC ns */
	uint64_t link_bytes_seen; /* s->bytes already charged */
	uint64_t link_drop_chunks, link_drop_recs;
	uint64_t link_event_recs; /* link_drop_recs in the last EVENT */
	uint64_t link_event_mono;

	struct rtprof__pause *pauses; /* ranges not yet written */
	uint32_t npauses, cap_pauses;
	uint64_t pauses_lost;

	struct rtprof__acct *acct;
	uint32_t nacct, cap_acct;

	/* Sink state: written by the writer thread outside the lock, read
	 * by others only under the lock after the writer published it. */
	uint32_t frame_seq;
	uint64_t bytes;
	uint64_t chunks_written;
	uint64_t chunks_lost;
	/* Sampler records the kernel could not write (its perf rings full):
	 * the process's count at the start, then the session's at the stop.
	 * Context: lock held. */
	uint64_t samples_lost0, samples_lost;
	int sink_error;
	int limit_reached;
	void *strings;            /* writer-owned set of interned addresses */
	int64_t *values_last;     /* last user counter values sent in VALUES */
	/* The user counters' values at the start (lock held), sent by the
	 * first VALUES at start_ticks: a gauge set before the session shows
	 * its level from the start, not from the writer's first round. */
	int64_t *values_start;
	uint32_t values_start_n;
	uint32_t values_n;
	uint64_t values_memory;   /* last profiler memory sent in VALUES */
	uint64_t values_mono;     /* when (CLOCK_MONOTONIC ns) */
	uint64_t partials_mono;   /* last copy of the partial chunks (ns) */
	uint32_t schemas_sent;    /* descriptors already written */
	uint32_t counters_sent;
	uint32_t categories_sent; /* declared categories written */
	int header_sent;
	struct rtprof__modset *mods; /* the module map announced (writer) */

	/* The sink's identity, taken at start on the starting thread
	 * (fstat st_dev/st_ino): the writer checks it before each write and
	 * never writes into a descriptor that became something else. */
	dev_t sink_dev;
	ino_t sink_ino;
	/* Set (release) by the stopping thread: the final flush waits at
	 * most RTPROF__FINAL_WAIT_MS without progress (writer.c). */
	_Atomic int stopping;
};

/* The final flush of a stopping session gives a stalled reader this
 * long without progress (the session's write_timeout_ms if shorter). */
#define RTPROF__FINAL_WAIT_MS 1000

struct rtprof__schema_desc {
	rtprof_marker_type pub;
	struct rtprof_marker_schema s; /* strings copied into `strings` */
	char *strings;
};

struct rtprof__counter_desc {
	rtprof_counter pub;
	char *name, *category, *description;
	char *unit;               /* "" when not given */
	int kind;                 /* enum rtprof_counter_kind */
};

/* A category declared by the program (core/category.c). */
struct rtprof__category {
	char name[64];
	const char *color;        /* static: one of the allowed names */
};

#define RTPROF__MAX_USER_CATEGORIES (RTPROF_MAX_CATEGORIES - RTPROF_CAT_COUNT)

#define RTPROF__MAX_TYPES 4096
#define RTPROF__MAX_COUNTERS 4096

struct rtprof__core {
	pthread_mutex_t mu;
	pthread_cond_t writer_cv; /* wakes the writer */
	pthread_cond_t done_cv;   /* wakes waiters of stop / dump */

	uint32_t gen;             /* last generation started */
	struct rtprof__session *sessions; /* newest first */
	struct rtprof__session *running;  /* or NULL */

	struct rtprof__thread *threads;   /* registry, live and exited */
	uint32_t nthreads;

	/* Chunk pool. */
	struct rtprof__chunk *free;
	uint64_t nfree;
	uint64_t nchunks;         /* allocated, all states */
	uint32_t chunk_size;      /* data bytes per chunk of the pool */
	uint64_t chunk_bytes;     /* bytes allocated per chunk */
	uint64_t pool_target;     /* chunks the running session may have */
	int lock_memory;          /* chunks page-aligned and mlock'ed */
	uint64_t lock_failures;   /* chunks mlock refused (used unlocked) */

	struct rtprof__schema_desc *types[RTPROF__MAX_TYPES];
	uint32_t ntypes;
	struct rtprof__counter_desc *counters[RTPROF__MAX_COUNTERS];
	uint32_t ncounters;
	/* Declared categories; id = RTPROF_CAT_COUNT + index. */
	struct rtprof__category categories[RTPROF__MAX_USER_CATEGORIES];
	uint32_t ncategories;

	int writer_started;
	int writer_wake;          /* work requested before the next tick */
	pthread_t writer;
	/* Under `rtprof record`: the descriptor the writer keeps in a file
	 * table of its own (-1: none asked), and the outcome (0 pending,
	 * 1 done, -1 failed: the writer shares the program's table). */
	int private_fd;
	int private_state;

	int forked;               /* a fork() child: no session can start */
	int sampler_started;
	int sampler_join;         /* threads registered: open their events */
	uint32_t sampler_ticked;  /* the generation of its last tick */
	pthread_t sampler;
	pthread_cond_t sampler_cv; /* CLOCK_MONOTONIC; session changes wake it */

	/* Flight recorder dump signal (0: none) and the action it replaced. */
	int dump_sig;
	struct sigaction dump_old;

	/* Status of the last session that ended, for status calls after it. */
	struct rtprof_session_status last;
	int has_last;

	/* The profiler's own memory in bytes, kept up to date. */
	uint64_t memory;

	/* Clock. */
	int clock_tsc;
	double ticks_per_sec;
	uint64_t init_ticks, init_mono;
};

/* Context: the lock holder. The only way to the shared state. */
struct rtprof__core *rtprof__core_get(const rtprof_lock *lk);

/* clock.c */
void rtprof__clock_init(void);
/* Context: any non-RT thread. Reads ticks, MONOTONIC and REALTIME at once. */
void rtprof__clock_pair(uint64_t *ticks, uint64_t *mono, uint64_t *wall);
uint64_t rtprof__clock_ns(clockid_t id);
static inline uint64_t
rtprof__mono_ns(void)
{
	return rtprof__clock_ns(CLOCK_MONOTONIC);
}
const char *rtprof__clock_source(void);
/* Context: any thread; calibrated ticks per second (may sleep once). */
double rtprof__clock_rate(void);
int rtprof__clock_is_tsc(void);

/* pool.c */
int rtprof__pool_setup(const rtprof_lock *lk, const struct rtprof_settings *s);
void rtprof__pool_put(const rtprof_lock *lk, struct rtprof__chunk *c);
struct rtprof__chunk *rtprof__pool_get(const rtprof_lock *lk);
void rtprof__refill(const rtprof_lock *lk, struct rtprof__thread *th,
    uint32_t want);
uint64_t rtprof__chunk_snapshot(struct rtprof__chunk *c);

/* registry.c */
void rtprof__thread_bind(struct rtprof__thread *th);
void rtprof__registry_init(void);
void rtprof__thread_free(const rtprof_lock *lk, struct rtprof__thread *th);

/* threadview.c: what the sampler sees of a thread. */
int rtprof__labels_read(const rtprof_lock *lk, struct rtprof__thread *th,
    const char **out, unsigned max);
uint32_t rtprof__sleep_observe(const rtprof_lock *lk, struct rtprof__thread *th);

/* writer.c */
int rtprof__writer_ensure(const rtprof_lock *lk);
void rtprof__writer_kick(const rtprof_lock *lk);
void rtprof__session_free(struct rtprof__session *s);
/* Set by the flight recorder's dump signal handler, served by the writer. */
extern _Atomic int rtprof__dump_signalled;
int rtprof__dump_signal_install(const rtprof_lock *lk, int sig);
void rtprof__dump_signal_restore(const rtprof_lock *lk);

/* state.c: a fork child's pending session start is cancelled (exec,
 * _exit, exit). Exported for librtprof-preload. Context: any thread. */
RTPROF_API void rtprof__follow_cancel(void);
/* Context: any thread. 1 when the caller is a vfork child of the process
 * that owns the sessions (it shares their memory: it must not stop them). */
RTPROF_API int rtprof__in_vfork_child(void);
/* state.c: rtprof's own threads (writer, sampler, fork follower) are
 * created through rtprof__own_thread_create(), and librtprof-preload's
 * pthread_create asks rtprof__creating_own_thread() (a flag of the
 * creating thread) before it registers a new thread as the program's.
 * The flag does not depend on which function pthread_create is handed:
 * an interposer before rtprof's (ASan's runtime, a user's LD_PRELOAD)
 * hands it a start function of its own. Context: any thread. */
int rtprof__own_thread_create(pthread_t *t, const pthread_attr_t *attr,
    void *(*fn)(void *), void *arg);
RTPROF_API int rtprof__creating_own_thread(void);
/* writer.c. Context: the control thread starting a launcher session, lock
 * held: the writer (new, or next round) moves @fd into a file table of its
 * own. */
void rtprof__writer_private(const rtprof_lock *lk, int fd);
int rtprof__files_private(int keep);
/* The highest descriptor numbers rtprof moves its own to (writer.c). */
#define RTPROF__FD_HIGH_CAP 4096
int rtprof__fd_high(int fd, int top);
/* Context: the forked child, before any other thread exists. */
void rtprof__writer_fork_child(void);
/* session.c. Context: any non-RT thread. */
int rtprof__session_dump_within(int ms);
/* state.c: stop the autostarted session (exit, exec, _exit) and say on
 * stderr what a stalled or lost sink cost. Not in a vfork child. */
RTPROF_API void rtprof__autostop(void);

/* sampler.c */
int rtprof__sampler_ensure(const rtprof_lock *lk);
void rtprof__sampler_kick(const rtprof_lock *lk);
void rtprof__sampler_forget(const rtprof_lock *lk, struct rtprof__thread *th);
void rtprof__sampler_join(const rtprof_lock *lk, struct rtprof__thread *th);
void rtprof__sampler_await(const rtprof_lock *lk,
    const struct rtprof__session *s);

/* sample_perf.c: the perf-event path. Context: lock held (detach: the
 * sampler or the thread unregistering; fork_child: the fork child alone). */
void rtprof__perf_detach(const rtprof_lock *lk, struct rtprof__thread *th);
void rtprof__perf_fork_child(struct rtprof__thread *threads);
const char *rtprof__perf_method(const rtprof_lock *lk, char *why, size_t n);
/* 1 when the perf path takes the kernel's stacks where threads block
 * (KSTACK records). Context: any thread, lock held (after the method). */
int rtprof__perf_kstacks(const rtprof_lock *lk);

/* sample_signal.c: is @sig the sampling signal (in use, or, for a session
 * that samples, the one the sampler would choose now)? Context: any
 * thread. */
int rtprof__sig_taken(int sig, int sampling);

/* procinfo.c: writes process facts with a msgpack packer. */
struct msgpack_packer;
void rtprof__pack_process(struct msgpack_packer *pk);
struct rtprof__modset;
struct rtprof__modset *rtprof__modules_scan(void);
void rtprof__modset_free(struct rtprof__modset *m);
int rtprof__modules_stale(const struct rtprof__modset *m);
int rtprof__modules_differ(const struct rtprof__modset *was,
    const struct rtprof__modset *now);
void rtprof__pack_modules(struct msgpack_packer *pk,
    const struct rtprof__modset *m);
void rtprof__pack_module_changes(struct msgpack_packer *pk, uint64_t ticks,
    const struct rtprof__modset *was, const struct rtprof__modset *now);
int rtprof__vdso_image(uint64_t *base, const void **image, size_t *n);
uint64_t rtprof__process_rss(void);
size_t rtprof__task_file(pid_t tid, const char *name, char *buf, size_t cap);

/* Settings with defaults applied. Return 0 or -EINVAL. */
int rtprof__settings_resolve(const struct rtprof_settings *in,
    struct rtprof_settings *out);

#endif /* RTPROF_CORE_H */
