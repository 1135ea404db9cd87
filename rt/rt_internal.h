/*
 * rt_internal.h - the per-thread recording structures, shared by rt/ (the
 * owner thread's RT-safe code) and core/ (the collector). Internal.
 *
 * Protocol, thread by thread (see also core/pool.c):
 *
 *  Owner thread (RT-safe, rt/rt_record.c):
 *   - writes records in place into its current chunk and publishes each
 *     with one release store of the chunk's commit word (count | offset);
 *   - when the chunk is full, or belongs to an older session, enqueues it on
 *     its `full` ring (ck_ring SPSC, owner = producer) and dequeues an empty
 *     one from its `empty` ring (owner = consumer). No empty chunk: the event
 *     is dropped and counted. One ring operation per chunk, never per event.
 *   - publishes its current chunk in `cur` (release) so the collector can
 *     copy out a partly filled chunk at stop without stopping the owner.
 *
 *  Collector (the writer thread, or a control call, always under the core
 *  mutex, so there is one consumer of `full` and one producer of `empty` at
 *  a time, serialised by the mutex):
 *   - drains `full`, queues chunks on their session by generation, refills
 *     `empty` from the pool; snapshots `cur` + commit word (acquire) for
 *     partial flushes and remembers how far it flushed (`flushed`), so a
 *     chunk sent in parts never repeats a record.
 *
 *  Sampler (core/sampler.c, under the core mutex): reads `labels` under
 *   `label_seq` (ck_sequence) for real-time threads, moves `sleep` between
 *   the tri-state values with CAS, and asks other threads for their stack
 *   through the sampling signal (struct rtprof__sample_req): the handler
 *   (rt/rt_signal.c) runs on the owner thread and only copies.
 *
 * Chunk memory is only ever reused by the collector, after the owner has
 * handed the chunk back through `full` (or has exited), so a snapshot of a
 * chunk that the owner retires concurrently still reads valid memory.
 */
#ifndef RTPROF_RT_INTERNAL_H
#define RTPROF_RT_INTERNAL_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <ck_ring.h>
#include <ck_sequence.h>

#include "rtprof.h"

#define RTPROF__CACHELINE 64
#define RTPROF__EMPTY_RING 256 /* holds 255: the most chunks prefilled */
#define RTPROF__FULL_RING 512  /* > empty ring + current: never full */
#define RTPROF__MIN_CHUNK 4096 /* > the largest record (typed, 12 strings) */

#if defined(__SANITIZE_THREAD__)
#define RTPROF__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RTPROF__TSAN 1
#endif
#endif
#ifdef RTPROF__TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
/* ck's atomics are volatile accesses TSan cannot see; these mark the real
 * hand-over points (docs: shared/docs/measured-facts.md, TSan recipe). */
#define RTPROF__HANDOVER_RELEASE(p) __tsan_release(p)
#define RTPROF__HANDOVER_ACQUIRE(p) __tsan_acquire(p)
#else
#define RTPROF__HANDOVER_RELEASE(p) ((void)(p))
#define RTPROF__HANDOVER_ACQUIRE(p) ((void)(p))
#endif

/* Sleep tri-state. */
enum {
	RTPROF__AWAKE = 0,
	RTPROF__ASLEEP = 1,         /* asleep, not yet sampled */
	RTPROF__ASLEEP_SAMPLED = 2  /* asleep, already sampled: O(1) repeat */
};

struct rtprof__thread;
struct rtprof__perf;

struct rtprof__chunk {
	/* Written by the owner when it takes the chunk, before it publishes
	 * the chunk (cur, release) or hands it back (full ring). */
	uint64_t state;          /* session state word it was taken for */
	uint32_t seq;            /* chunk number within the thread's session */
	uint32_t size;           /* data bytes; set by the pool, never changes */
	uint64_t drops_full;     /* drops since the thread's previous chunk */
	uint64_t drops_nested;
	struct rtprof__thread *owner;

	/* The owner's commit word, on its own cache line. */
	struct rtprof__chunk_commit commit
	    __attribute__((aligned(RTPROF__CACHELINE)));

	/* Collector-owned (under the core mutex). */
	uint64_t flushed __attribute__((aligned(RTPROF__CACHELINE)));
	struct rtprof__chunk *next; /* pool free list or session queue */
	uint64_t gen;               /* generation, copied from state */
	uint32_t alloc;             /* POOL_* bits (core/pool.c) */

	unsigned char data[] __attribute__((aligned(RTPROF__CACHELINE)));
};

struct rtprof__thread {
	/* Owner-only (no other thread reads these). */
	uint32_t o_gen;          /* generation o_seq and o_drops_* count in */
	uint32_t o_seq;          /* next chunk number */
	uint64_t o_drops_full;   /* drops since the previous chunk */
	uint64_t o_drops_nested;
	uint32_t o_label_depth;  /* including pushes past RTPROF_MAX_LABELS */

	/* Owner writes, others read: relaxed atomics (statistics). */
	_Atomic uint64_t dropped_full;
	_Atomic uint64_t dropped_nested;
	_Atomic uint64_t outside;
	_Atomic uint64_t chunks;
	/* Collector writes, owner reads. */
	_Atomic uint64_t late;
	_Atomic uint64_t recycled;

	/* The owner's current chunk: release-stored by the owner when it
	 * takes a chunk; cleared (CAS) by the collector when it dequeues that
	 * chunk from `full`, not by the owner when it hands it back, so that
	 * a chunk is always in `cur` or in `full` until it is drained. */
	_Atomic(struct rtprof__chunk *) cur
	    __attribute__((aligned(RTPROF__CACHELINE)));
	/* Sleep tri-state, see lessons.md: awake / asleep / asleep-sampled. */
	_Atomic uint32_t sleep;

	/* Label stack, read by the sampler under label_seq. */
	ck_sequence_t label_seq __attribute__((aligned(RTPROF__CACHELINE)));
	_Atomic uint32_t label_depth;
	const char *_Atomic labels[RTPROF_MAX_LABELS];
	/* The pushing function's stack pointer (its CFA seen from push), to
	 * merge labels with native frames. Owner-written, read only by the
	 * owner's own sampling signal handler (signal fences order it). */
	uintptr_t label_sp[RTPROF_MAX_LABELS];

	/* Sampling (core/sampler.c). Fixed at registration: */
	uintptr_t stack_lo, stack_hi;   /* the thread's stack; 0: unknown */
	clockid_t cpu_clock;            /* its CPU-time clock */
	/* Owner (signal handler) increments; anyone reads (statistics). */
	_Atomic uint64_t signals;
	/* The slot of the request asked of it, + 1 (0: none): the sampler
	 * stores it (relaxed) before the request's release store and the
	 * tgkill; the owner's handler loads it (relaxed) and checks the
	 * slot's state (acquire) and target. */
	_Atomic uint32_t s_slot;
	/* Sampler increments; anyone reads (statistics). */
	_Atomic uint64_t samples;
	/* Sampler-owned, under the core mutex. */
	uint32_t s_gen;                 /* session the fields below are for */
	int s_has_stack;                /* a SAMPLE was written for it */
	uint64_t s_cpu_last;            /* CPU ns at its previous sample */
	uint64_t s_mono_last;           /* CLOCK_MONOTONIC ns of it; 0: none */
	uint32_t s_misses;              /* signals not answered in a row */
	uint32_t s_skip;                /* ticks left before asking again */
	/* The sample a request not answered within its tick is for (the
	 * request in its slot, core/sample_signal.c pending(); asked at
	 * s_mono_last, with s_cpu_last its CPU clock then). */
	uint64_t s_ask_t;               /* the sample's time (ticks) */
	uint64_t s_ask_cpu;             /* its CPU delta (ns) */
	/* Its perf events (core/sample_perf.c), or NULL; the session they
	 * were opened for (or tried: 0 after a pause or stop). */
	struct rtprof__perf *s_perf;
	uint32_t s_perf_gen;
	/* Its events wait among the orphans to be drained: the collector
	 * keeps the record (and announces the thread) until they are. */
	int s_perf_orphan;

	/* Chunk exchange. Producer and consumer indexes live inside ck_ring
	 * (its own padding); the buffers follow. */
	ck_ring_t empty __attribute__((aligned(RTPROF__CACHELINE)));
	ck_ring_t full __attribute__((aligned(RTPROF__CACHELINE)));
	ck_ring_buffer_t empty_buf[RTPROF__EMPTY_RING];
	ck_ring_buffer_t full_buf[RTPROF__FULL_RING];

	/* Identity, fixed at registration (name: under the core mutex; a
	 * comm-named thread's name is refreshed when it unregisters). */
	pid_t tid;
	unsigned flags;
	char name[64];
	int name_from_comm;
	uint64_t register_ticks;

	/* Registry fields, under the core mutex (core/registry.c). */
	struct rtprof__thread *next;
	uint64_t unregister_ticks;
	int exited;              /* owner is gone: collector owns the rings */
	/* The drop counters above when session acct_gen started (writer.c
	 * settle_drops(): the trailer's drops are the difference, so drops
	 * after the thread's last chunk are counted too). */
	uint32_t acct_gen;
	uint64_t acct_drops_full;
	uint64_t acct_drops_nested;
	uint32_t announced_gen;  /* THREAD frame written for this session */
	int announced_exit;
	uint64_t chunks_alive;   /* chunks of this thread in queues */
	/* Its empty ring's depth in a stream session: what the collector's
	 * refills top it up to (core/writer.c ring_depth(); 0 or another
	 * session's depth_gen: the session's prefill). Collector, core
	 * mutex. */
	uint32_t depth;
	uint32_t depth_gen;
	uint64_t depth_calm;     /* since when every refill found it above
				  * half (CLOCK_MONOTONIC ns) */
	uint64_t depth_drops;    /* dropped_full at the previous round */
	uint64_t depth_chunks;   /* chunks at the start of its window */
	uint64_t depth_t0;       /* the window's start (CLOCK_MONOTONIC ns) */
};

/*
 * A request from the sampler to one thread's signal handler, in one of up
 * to RTPROF__SAMPLE_SLOTS_MAX slots (the sampler owns them; at most one
 * per thread). state = seq << 2 | phase. The sampler writes `target` and
 * the thread's s_slot, then stores seq|ASKED (release) and signals the
 * target; the handler, on the target thread, goes to the slot s_slot
 * names, moves ASKED -> CLAIMED by CAS, fills the copy, stores seq|DONE
 * (release). The sampler either sees DONE (acquire), or cancels a request
 * by CAS ASKED -> IDLE; a handler that claimed it already is only copying
 * (bounded) and the sampler waits for DONE. A thread that waits for a CPU
 * answers only when it is scheduled: its request stays asked in its slot
 * and is collected at a later tick (core/sample_signal.c).
 *
 * Slots come in blocks of RTPROF__SAMPLE_BLOCK, allocated by the sampler
 * when every slot it has is asked (as many slots as threads wait for a
 * CPU at once), each block mapped untouched (a slot's 64 KiB stack copy
 * costs memory only once a handler wrote it) and never freed while the
 * process may still take a signal: a handler may be reading it.
 */
enum {
	RTPROF__REQ_IDLE = 0,
	RTPROF__REQ_ASKED = 1,
	RTPROF__REQ_CLAIMED = 2,
	RTPROF__REQ_DONE = 3
};

#define RTPROF__STACK_COPY (64 * 1024)  /* bytes of stack copied at most */
#define RTPROF__MAX_NATIVE 96           /* native frames kept at most */
#define RTPROF__NREGS 33                /* x86_64: 17, aarch64: 33 */
#define RTPROF__SAMPLE_BLOCK 16         /* slots per block */
#define RTPROF__SAMPLE_BLOCKS 64        /* blocks at most */
#define RTPROF__SAMPLE_SLOTS_MAX (RTPROF__SAMPLE_BLOCK * RTPROF__SAMPLE_BLOCKS)

struct rtprof__sample_req {
	_Atomic uint64_t state;
	struct rtprof__thread *_Atomic target;
	/* Written by the handler between CLAIMED and DONE. */
	int have_regs;                  /* registers known for this arch */
	uint64_t regs[RTPROF__NREGS];   /* libunwind's register numbering */
	uintptr_t sp;                   /* interrupted stack pointer */
	uint32_t stack_len;             /* bytes copied from sp */
	uint32_t nlabels;
	const char *labels[RTPROF_MAX_LABELS];
	uintptr_t label_sp[RTPROF_MAX_LABELS];
	unsigned char stack[RTPROF__STACK_COPY] __attribute__((aligned(16)));
};

/* The slot blocks, NULL until allocated; a block pointer is stored once
 * (release, by the sampler) and read by handlers (acquire). */
extern struct rtprof__sample_req *_Atomic
    rtprof__sample_blocks[RTPROF__SAMPLE_BLOCKS];

/* The handler the sampler's replaced (signals of that number it did not
 * send go there) and the pid its own signals come from; set before the
 * handler is installed. */
extern struct sigaction rtprof__sample_prev;
extern pid_t rtprof__sample_pid;

/*
 * The signal the sampler uses, 0 until chosen: a real-time signal free
 * when the sampler started (core/sample_signal.c, rtprof__sig_setup:
 * from SIGRTMAX down, the first whose disposition is SIG_DFL). Written by
 * the control thread that starts the sampler, under the core lock,
 * before the handler is installed; read (relaxed) by the sampler and by
 * settings checks on any thread.
 */
extern _Atomic int rtprof__sample_signal;

/* Context: a registered thread, as the sampling signal's handler;
 * async-signal-safe, bounded (rt/rt_signal.c). */
void rtprof__sample_handler(int sig, siginfo_t *si, void *uc);

/* The session state word (rtprof.h). Atomic for the C side. */
#define RTPROF__STATE_GEN(s) ((uint32_t)((s) >> 2))

/* The tick clock, set once at load (core/clock.c): 0 CLOCK_MONOTONIC ns,
 * 1 TSC, 2 cntvct. Read by rtprof__now_fallback(). */
extern int rtprof__clock_kind;

/* Context: owner thread; RT-safe. Hands the current chunk back. */
void rtprof__retire(struct rtprof__tls *t, struct rtprof__thread *th);

#endif /* RTPROF_RT_INTERNAL_H */
