/*
 * rtprof.h - the one public header of rtprof, a lock-free real-time profiler.
 *
 * Compiles as C (C11) and as C++ (C++11 and later) with no warnings.
 *
 * Two worlds meet here:
 *  - The recording calls (markers, counters, sleep/wake, labels) run on the
 *    caller's thread. Once the thread is registered, every one of them is
 *    wait-free: no lock, no allocation, no syscall, bounded time. When no
 *    buffer space is free the event is dropped and counted, never waited for.
 *  - The control calls (register, session start/stop/pause/resume, declare)
 *    may lock, allocate and make syscalls; they return 0 or a negative errno.
 *
 * Define RTPROF_DISABLE before including this header (CMake: the
 * RTPROF_INSTRUMENTATION=OFF option of the rtprof::rtprof target, or
 * -DRTPROF_DISABLE) and every call below compiles to nothing: no code, no
 * symbol reference, no library needed at link time.
 *
 * Thread context vocabulary used below:
 *   "owner thread"  the registered thread that calls it, on itself;
 *   "any thread"    any thread, registered or not;
 *   "RT-safe"       wait-free, no syscall, no allocation after registration.
 *
 * The wire format these calls write is documented in docs/wire-format.md.
 */
#ifndef RTPROF_H
#define RTPROF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RTPROF_VERSION_MAJOR 0
#define RTPROF_VERSION_MINOR 1
#define RTPROF_VERSION_PATCH 0

#if defined(RTPROF_BUILDING)
#define RTPROF_API __attribute__((visibility("default")))
#else
#define RTPROF_API
#endif

#define RTPROF_INLINE static inline __attribute__((always_inline, no_instrument_function))
#define RTPROF_LIKELY(x) __builtin_expect(!!(x), 1)
#define RTPROF_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Longest copied string kept in a record; longer ones are truncated. */
#define RTPROF_MAX_STRING 255
/* Deepest label stack kept; deeper pushes are counted, not stored. */
#define RTPROF_MAX_LABELS 32
/* Most fields in a declared marker type (a record stays a msgpack fixarray). */
#define RTPROF_MAX_FIELDS 10

/* Marker categories (wire ids; the dump's header names them). */
enum rtprof_category {
	RTPROF_CAT_OTHER = 0,
	RTPROF_CAT_IDLE = 1,
	RTPROF_CAT_AUDIO = 2,
	RTPROF_CAT_IO = 3,
	RTPROF_CAT_COMPUTE = 4,
	RTPROF_CAT_NETWORK = 5,
	RTPROF_CAT_GRAPHICS = 6,
	RTPROF_CAT_USER = 7,
	RTPROF_CAT_PROFILER = 8,
	RTPROF_CAT_COUNT = 9
};

/* Phases of a typed marker. */
enum rtprof_phase {
	RTPROF_PHASE_INSTANT = 0,
	RTPROF_PHASE_INTERVAL = 1, /* complete interval: start and end given */
	RTPROF_PHASE_BEGIN = 2,
	RTPROF_PHASE_END = 3
};

/* Field kinds of a declared marker type. */
enum rtprof_field_kind {
	RTPROF_FIELD_I64 = 1,
	RTPROF_FIELD_U64 = 2,
	RTPROF_FIELD_F64 = 3,
	RTPROF_FIELD_STATIC_STR = 4, /* pointer to a string that lives forever */
	RTPROF_FIELD_STR = 5         /* copied, at most RTPROF_MAX_STRING bytes */
};

/* Where the Firefox Profiler shows markers of a type (bit set). */
enum rtprof_display {
	RTPROF_DISPLAY_MARKER_CHART = 1u << 0,
	RTPROF_DISPLAY_MARKER_TABLE = 1u << 1,
	RTPROF_DISPLAY_TIMELINE_OVERVIEW = 1u << 2,
	RTPROF_DISPLAY_TIMELINE_MEMORY = 1u << 3,
	RTPROF_DISPLAY_TIMELINE_IPC = 1u << 4,
	RTPROF_DISPLAY_TIMELINE_FILEIO = 1u << 5,
	RTPROF_DISPLAY_STACK_CHART = 1u << 6
};

/* Thread registration flags. */
enum rtprof_thread_flags {
	/* A real-time thread: the sampler reads its labels, never signals it. */
	RTPROF_THREAD_RT = 1u << 0,
	/* The process's main thread (set automatically when tid == pid). */
	RTPROF_THREAD_MAIN = 1u << 1,
	/* rtprof's own sampler thread (internal; never sampled). */
	RTPROF_THREAD_SAMPLER = 1u << 2
};

/*
 * What a counter's value is (rtprof_counter_declare_kind), so that the
 * profile graphs it as such: a gauge is shown at each time as the value
 * set, a count as the running count, bytes as memory (bytes, from 0).
 */
enum rtprof_counter_kind {
	RTPROF_COUNTER_UNSPECIFIED = 0, /* rtprof_counter_declare: category
					 * "Memory" is bytes, others gauges */
	RTPROF_COUNTER_GAUGE = 1,       /* a level set by the program */
	RTPROF_COUNTER_COUNT = 2,       /* a running count of events */
	RTPROF_COUNTER_BYTES = 3        /* an amount of memory, in bytes */
};

/* Session modes. */
enum rtprof_mode {
	/* A writer thread streams full chunks to the fd as they fill. */
	RTPROF_MODE_STREAM = 0,
	/*
	 * Keep the newest data under the memory limit (the oldest released
	 * chunk is recycled) and write it on stop or rtprof_session_dump().
	 */
	RTPROF_MODE_FLIGHT_RECORDER = 1
};

/* One field of a marker type. Strings must live until the process ends. */
struct rtprof_field {
	const char *key;    /* JSON key in the marker payload */
	const char *label;  /* shown to people; NULL: key */
	const char *format; /* Gecko format: "integer", "bytes", "duration", ... */
	enum rtprof_field_kind kind;
};

/* A marker type declared once, recorded by handle. */
struct rtprof_marker_schema {
	const char *name;           /* marker name and Gecko schema name */
	enum rtprof_category category;
	uint32_t display;           /* enum rtprof_display bits; 0: chart+table */
	const char *tooltip_label;  /* may use {marker.data.KEY}; may be NULL */
	const char *table_label;
	const char *chart_label;
	unsigned nfields;
	struct rtprof_field fields[RTPROF_MAX_FIELDS];
};

/*
 * What the recording path reads of a declared marker type. Starts with
 * struct_size and only grows at the end.
 */
typedef struct rtprof_marker_type {
	uint32_t struct_size;
	uint16_t id;
	uint8_t nfields;
	uint8_t reserved;
	uint32_t max_record; /* bytes of the largest record of this type */
} rtprof_marker_type;

/* A counter declared once; add/set from any thread. */
typedef struct rtprof_counter {
	uint32_t struct_size;
	uint16_t id;
	uint16_t reserved;
	int64_t value; /* current value; updated with __atomic builtins */
	/* The record's bytes 11-14 (cd, id big-endian, d3), set once. */
	unsigned char rec_tag[4];
} rtprof_counter;

/*
 * An audio callback site (rtprof_audio_init, then rtprof_audio_begin/end
 * around every callback). Owned by the audio thread after init; read the
 * fields, never write them.
 */
typedef struct rtprof_audio {
	uint32_t struct_size;
	uint32_t frames, rate;          /* of the callback in progress */
	const rtprof_marker_type *cb_type, *overrun_type;
	rtprof_counter *load;           /* DSP load, per mille of the budget */
	rtprof_counter *jitter;         /* start-to-start minus period, us */
	rtprof_counter *overruns;       /* callbacks over their budget */
	double ticks_per_us;
	uint64_t t_begin;               /* this callback's start (ticks) */
	uint64_t prev_begin, prev_period; /* the previous callback's */
	uint64_t callbacks, overrun_count;
	int64_t load_set;               /* the load counter's last value */
	int64_t jitter_set;             /* the jitter counter's last value */
} rtprof_audio;

/* rtprof_settings.sample_interval_us: record markers only, no samples. */
#define RTPROF_SAMPLING_OFF 0xFFFFFFFFu

/* Session settings; zero-initialise, then set what you need. */
struct rtprof_settings {
	uint32_t struct_size;      /* sizeof(struct rtprof_settings) */
	enum rtprof_mode mode;
	int fd;                    /* sink; the caller keeps ownership */
	uint64_t memory_limit;     /* bytes of chunks, all threads; 0: 32 MiB */
	uint32_t chunk_size;       /* bytes per chunk; 0: 64 KiB */
	uint32_t prefill;          /* empty chunks queued per thread; 0: 4.
				    * In a stream a thread's queue deepens
				    * when it runs low, up to its share of
				    * memory_limit (at most 255 chunks) */
	uint64_t max_bytes;        /* dump size cap; 0: unlimited */
	uint32_t flush_interval_us; /* writer period; 0: 10000 */
	uint32_t sample_interval_us; /* sampler period, 100..1000000; 0: 1000;
				      * RTPROF_SAMPLING_OFF: no sampler */
	uint32_t write_timeout_ms; /* give up on a stuck sink; 0: 5000 */
	/*
	 * Byte rate of a slow link (e.g. a UART: baud / 10), 0: unlimited.
	 * Stream mode: chunks wait in memory and go out at this rate; when
	 * the link falls behind by more than about two seconds (or memory
	 * runs out) the oldest unsent chunks are dropped and counted
	 * (`recycled`, and "link_behind" EVENT frames). Flight recorder: a
	 * dump goes out at the link's own pace. With a link rate and no
	 * chunk_size, chunks are sized to about 1/4 s of link time.
	 */
	uint32_t link_bytes_per_sec;
	/*
	 * Flight recorder: a signal (e.g. SIGUSR1) that writes what is kept,
	 * as rtprof_session_dump() does, from a handler rtprof installs for
	 * the session (restoring the previous one at stop); 0: none.
	 */
	int dump_signal;
	/*
	 * 1: allocate and touch every chunk under memory_limit at session
	 * start (nothing is allocated later); 0: the pool grows on demand
	 * under the limit, a chunk allocated on rtprof's own threads; its
	 * pages are faulted in as a thread writes them, except a real-time
	 * thread's, which are touched before it gets the chunk (resident
	 * either way). RTPROF_PREFAULT=1 in the environment.
	 */
	int prefault;
	/*
	 * 1: also lock every chunk in RAM (mlock(2), page-aligned chunks
	 * of whole pages, unlocked when freed) before any thread gets it,
	 * so that a real-time thread never takes a page fault on chunk
	 * memory even under memory pressure. A chunk that cannot be
	 * locked (RLIMIT_MEMLOCK) is used unlocked, still touched.
	 */
	int lock_memory;
};

/* Per-thread lifetime accounting, read by the owner thread itself. */
struct rtprof_thread_stats {
	uint64_t dropped_full;    /* no free chunk */
	uint64_t dropped_nested;  /* re-entrant call, e.g. from a signal handler */
	uint64_t outside;         /* no session running, or paused */
	uint64_t late;            /* committed after its session was closed */
	uint64_t recycled;        /* flight recorder: overwritten by newer data */
	uint64_t chunks;          /* chunks taken */
	uint64_t samples;         /* samples the sampler took of this thread */
	uint64_t signals;         /* sampling signals it handled (0 for RT) */
};

/* Session status, for any thread. */
struct rtprof_session_status {
	uint32_t generation;
	int running;
	int paused;
	int sink_error;          /* first write error (negative errno) or 0 */
	int limit_reached;       /* max_bytes reached: data frames stopped */
	uint64_t bytes_written;
	uint64_t chunks_written;
	uint64_t chunks_lost;    /* not written: sink error or size cap */
	uint64_t pool_chunks;    /* chunks in the pool */
	uint64_t memory_bytes;   /* the profiler's own memory */
};

#ifndef RTPROF_DISABLE

/* ------------------------------------------------------------------ */
/* Internal state read by the inline fast path. Not API.               */

/* Session state word: generation << 2 | RUNNING | PAUSED. */
#define RTPROF__RUNNING 1u
#define RTPROF__PAUSED 2u

/* Record kinds inside chunks (msgpack positive fixints). */
#define RTPROF__REC_INSTANT 1
#define RTPROF__REC_BEGIN 2
#define RTPROF__REC_END 3
#define RTPROF__REC_INTERVAL 4
#define RTPROF__REC_TYPED 5
#define RTPROF__REC_COUNTER 6
#define RTPROF__REC_SLEEP 7
#define RTPROF__REC_WAKE 8

/* Where a chunk's owner publishes what it wrote (one cache line). */
struct rtprof__chunk_commit {
	/* record count << 32 | byte offset; release-stored by the owner. */
	uint64_t word;
};

/*
 * `expect` while the thread writes a record: the thread's claim of its
 * buffer. No state word equals it, so a signal handler that records
 * meanwhile takes the slow path, which sees the claim and drops its event
 * (counted) instead of writing into the space being filled.
 */
#define RTPROF__BUSY (~(uint64_t)0)
/* The largest record checked against `lim` (markers, counters). */
#define RTPROF__SMALL 32
/* Or'ed into `expect` on a thread that cannot read the tick counter
 * inline: no state word matches, so every event goes through the library,
 * which reads the clock. */
#define RTPROF__NOCLOCK ((uint64_t)1 << 62)

/* The owner thread's recording state, thread-local, initial-exec TLS. */
struct rtprof__tls {
	uint32_t struct_size;
	uint32_t fast_clock;     /* 1: read the TSC/cntvct inline (registered
				  * thread, usable counter); 0: ask the library */
	/* The state word the current chunk belongs to (| RTPROF__NOCLOCK),
	 * or RTPROF__BUSY while a record is being written (the claim). */
	uint64_t expect;
	unsigned char *pos;      /* next free byte of the current chunk */
	unsigned char *end;      /* end of the current chunk's data area */
	/* end - RTPROF__SMALL + 1: a record of at most RTPROF__SMALL bytes
	 * fits when pos < lim (one compare); NULL without a chunk. */
	unsigned char *lim;
	unsigned char *base;     /* start of the current chunk's data area */
	struct rtprof__chunk_commit *commit;
	uint64_t saved;          /* `expect` to restore at rtprof__close() */
	void *thread;            /* the registered thread, or NULL */
};

extern RTPROF_API __thread struct rtprof__tls rtprof__tls
	__attribute__((tls_model("initial-exec")));
extern RTPROF_API uint64_t rtprof__state;

RTPROF_API uint64_t rtprof__now_fallback(void);
RTPROF_API unsigned char *rtprof__reserve_slow(size_t max, uint64_t e);
RTPROF_API void rtprof__mark_slow(unsigned kind, const char *name,
    enum rtprof_category cat, uint64_t e);
RTPROF_API void rtprof__counter_slow(const struct rtprof_counter *c,
    int64_t v, uint64_t e);
RTPROF_API void rtprof__label_push(const char *label);
RTPROF_API void rtprof__label_pop(void);

/* ------------------------------------------------------------------ */
/* Time                                                                 */

/*
 * rtprof_now - current timestamp in ticks of the session clock.
 * Context: any thread; RT-safe, async-signal-safe.
 * Return: TSC (x86), virtual counter (aarch64) or CLOCK_MONOTONIC ns (vDSO);
 * the dump's header says which and how many ticks make a second.
 */
RTPROF_INLINE uint64_t
rtprof_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (RTPROF_LIKELY(rtprof__tls.fast_clock))
		return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	if (RTPROF_LIKELY(rtprof__tls.fast_clock)) {
		uint64_t v;
		__asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v) : : "memory");
		return v;
	}
#else
	/* armhf and the rest: CLOCK_MONOTONIC (core/clock.c says why). */
#endif
	return rtprof__now_fallback();
}

/* ------------------------------------------------------------------ */
/* In-place msgpack encoding (fixed widths, so sizes are known up front) */

/* 8 bytes big-endian, no tag. */
RTPROF_INLINE void
rtprof__put_be64(unsigned char *p, uint64_t v)
{
	uint64_t be = __builtin_bswap64(v);

	memcpy(p, &be, 8);
}

/*
 * Copies @n bytes of a caller's string into a record. The compiler is not
 * told that @n is at most 255: knowing it, gcc expands memcpy() as `rep
 * movsq`, which into chunk memory not in cache ran at 2.4x the CPU time of
 * libc's memcpy() for 255-byte strings (bench/bench_copy). A length known
 * at compile time keeps the compiler's own inline copy.
 */
RTPROF_INLINE void
rtprof__copy_str(unsigned char *d, const char *s, size_t n)
{
	if (!__builtin_constant_p(n))
		__asm__("" : "+r"(n));
	memcpy(d, s, n);
}

RTPROF_INLINE unsigned char *
rtprof__put_u64(unsigned char *p, unsigned char tag, uint64_t v)
{
	uint64_t be = __builtin_bswap64(v);
	p[0] = tag;
	memcpy(p + 1, &be, 8);
	return p + 9;
}

RTPROF_INLINE unsigned char *
rtprof__put_u16(unsigned char *p, uint16_t v)
{
	p[0] = 0xcd;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)v;
	return p + 3;
}

/* A static string is sent as its address: msgpack fixext 8, type 1. */
RTPROF_INLINE unsigned char *
rtprof__put_ptr(unsigned char *p, const void *s)
{
	uint64_t be = __builtin_bswap64((uint64_t)(uintptr_t)s);
	p[0] = 0xd7;
	p[1] = 0x01;
	memcpy(p + 2, &be, 8);
	return p + 10;
}

/*
 * rtprof__tick - the tick counter read inline, for a thread whose `expect`
 * matched the state word (so its counter is usable: RTPROF__NOCLOCK).
 * Context: owner thread; RT-safe.
 */
RTPROF_INLINE uint64_t
rtprof__tick(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	uint64_t v;

	__asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
#else
	return rtprof__now_fallback();
#endif
}

#if defined(__SANITIZE_THREAD__)
#define RTPROF__HDR_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RTPROF__HDR_TSAN 1
#endif
#endif

/*
 * rtprof__commit_add - publish @inc (1 << 32 | the record's bytes) in the
 * chunk's commit word. Only the owner writes the word, so this needs no
 * atomic read-modify-write, only a release store of the sum: on x86-64 one
 * `add` to memory (a store is a release there; the clobber keeps the
 * record's bytes before it). Pairs with the acquire load in
 * rtprof__chunk_snapshot() (core/pool.c).
 * Context: owner thread; RT-safe.
 */
RTPROF_INLINE void
rtprof__commit_add(struct rtprof__chunk_commit *c, uint64_t inc)
{
#if defined(__x86_64__) && !defined(RTPROF__HDR_TSAN)
	__asm__ __volatile__("addq %1, %0" : "+m"(c->word) : "r"(inc) : "memory");
#else
	__atomic_store_n(&c->word, __atomic_load_n(&c->word, __ATOMIC_RELAXED) +
	    inc, __ATOMIC_RELEASE);
#endif
}

/*
 * rtprof__state_load - the state word, acquire: pairs with the release
 * store of a new state in rtprof_session_start(), so the session's setup is
 * visible to what follows. On x86-64 every load is an acquire load; a plain
 * read there lets the compiler compare the word in memory (one
 * instruction), and the signal fence before it (in rtprof__claim) and the
 * branch on it keep the compiler from moving it. Thread sanitizer builds
 * and other targets use the atomic acquire load.
 * Context: any thread; RT-safe.
 */
RTPROF_INLINE uint64_t
rtprof__state_load(void)
{
#if defined(__x86_64__) && !defined(RTPROF__HDR_TSAN)
	return rtprof__state;
#else
	return __atomic_load_n(&rtprof__state, __ATOMIC_ACQUIRE);
#endif
}

/*
 * rtprof__claim - claim the owner's buffer and reserve @size bytes in its
 * current chunk. `expect` becomes RTPROF__BUSY first (a signal handler
 * that records from here on drops its event, counted), then the state and
 * the space are checked: a handler that ran before the claim has finished
 * and its record is already behind `pos`.
 * Context: owner thread; RT-safe, async-signal-safe.
 * Return: nonzero with *@p where to write; zero: take the slow path. Either
 * way *@e is `expect` before the claim, which the buffer keeps until
 * rtprof__commit() or the slow path restores it.
 */
RTPROF_INLINE int
rtprof__claim(size_t size, uint64_t *e, unsigned char **p)
{
	struct rtprof__tls *t = &rtprof__tls;

	*e = t->expect;
	t->expect = RTPROF__BUSY;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	*p = t->pos;
	/* A small record of a size known here: pos < lim, one compare.
	 * Otherwise pos + size <= end, as integers. No chunk: all are NULL. */
	if (__builtin_constant_p(size) && size <= RTPROF__SMALL)
		return RTPROF_LIKELY(rtprof__state_load() == *e &&
		    (uintptr_t)*p < (uintptr_t)t->lim);
	return RTPROF_LIKELY(rtprof__state_load() == *e &&
	    (uintptr_t)*p + size <= (uintptr_t)t->end);
}

/*
 * rtprof__commit - publish the @size bytes written at @p (claimed with
 * rtprof__claim) and release the claim, restoring @e.
 * Context: owner thread; RT-safe.
 */
RTPROF_INLINE void
rtprof__commit(unsigned char *p, size_t size, uint64_t e)
{
	struct rtprof__tls *t = &rtprof__tls;

	/* += rather than p + size: the record's bytes (char stores) may alias
	 * `pos` for the compiler, which reloads it anyway; one add to memory. */
	t->pos += size;
	rtprof__commit_add(t->commit, ((uint64_t)1 << 32) + size);
	/* Start the page walk and line fill of the next 4 KiB page ~100
	 * records early: without it the record that crosses a page pays a TLB
	 * miss (the p99.99 tail, BENCHMARKS.md). A prefetch never faults. */
	__builtin_prefetch(p + size + 4096, 1, 3);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->expect = e;
}

/*
 * rtprof__open - reserve @max bytes in the owner's current chunk, for a
 * record of a size known only at run time; rtprof__close() ends it.
 * Context: owner thread; RT-safe, async-signal-safe.
 * Return: where to write, or NULL when the event is not recorded (no session,
 * paused, no free chunk, re-entrant call, unregistered thread): the slow path
 * has counted why.
 */
RTPROF_INLINE unsigned char *
rtprof__open(size_t max)
{
	uint64_t e;
	unsigned char *p;

	if (RTPROF_UNLIKELY(!rtprof__claim(max, &e, &p)))
		return rtprof__reserve_slow(max, e);
	rtprof__tls.saved = e;
	return p;
}

/*
 * rtprof__close - publish the record that ends at @p (opened with
 * rtprof__open) and release the claim.
 * Context: owner thread; RT-safe.
 */
RTPROF_INLINE void
rtprof__close(unsigned char *p)
{
	struct rtprof__tls *t = &rtprof__tls;

	rtprof__commit_add(t->commit,
	    ((uint64_t)1 << 32) + (uint64_t)(p - t->pos));
	t->pos = p;
	__builtin_prefetch(p + 4096, 1, 3);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->expect = t->saved;
}

/*
 * rtprof__put_head - the first @n (<= 3) bytes of a record, @b0 @b1 @b2,
 * where the next field starts at byte 3: one 4-byte store on a
 * little-endian target (its fourth byte is overwritten by that field).
 */
RTPROF_INLINE void
rtprof__put_head(unsigned char *p, unsigned b0, unsigned b1, unsigned b2)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint32_t h = (uint32_t)b0 | (uint32_t)b1 << 8 | (uint32_t)b2 << 16;

	memcpy(p, &h, 4);
#else
	p[0] = (unsigned char)b0;
	p[1] = (unsigned char)b1;
	p[2] = (unsigned char)b2;
#endif
}

/* ------------------------------------------------------------------ */
/* Markers with a static name                                            */

/*
 * A 22-byte marker record [kind, ts, name, cat], the timestamp read after
 * the claim. Anything but the common case (another session, paused, chunk
 * full, re-entrant call, unregistered thread, no inline clock) goes out of
 * line, where the library writes the whole record.
 */
RTPROF_INLINE void
rtprof__mark4(unsigned kind, const char *name, enum rtprof_category cat)
{
	uint64_t e;
	unsigned char *p;

	if (RTPROF_UNLIKELY(!rtprof__claim(22, &e, &p))) {
		rtprof__mark_slow(kind, name, cat, e);
		return;
	}
	rtprof__put_head(p, 0x94, kind, 0xcf);
	rtprof__put_be64(p + 3, rtprof__tick());
	rtprof__put_ptr(p + 11, name);
	p[21] = (unsigned char)(cat & 0x7f);
	rtprof__commit(p, 22, e);
}

/*
 * rtprof_mark - record an instant marker now.
 * @name: a string that lives until the process ends (a literal).
 * Context: owner thread; RT-safe.
 */
RTPROF_INLINE void
rtprof_mark(const char *name, enum rtprof_category cat)
{
	rtprof__mark4(RTPROF__REC_INSTANT, name, cat);
}

/*
 * rtprof_begin / rtprof_end - the two halves of an interval marker, paired
 * by name on the same thread. Context: owner thread; RT-safe.
 */
RTPROF_INLINE void
rtprof_begin(const char *name, enum rtprof_category cat)
{
	rtprof__mark4(RTPROF__REC_BEGIN, name, cat);
}

RTPROF_INLINE void
rtprof_end(const char *name, enum rtprof_category cat)
{
	rtprof__mark4(RTPROF__REC_END, name, cat);
}

/*
 * rtprof_interval - a complete interval marker with explicit times taken
 * with rtprof_now(). Context: owner thread; RT-safe.
 */
RTPROF_INLINE void
rtprof_interval(const char *name, enum rtprof_category cat, uint64_t start,
    uint64_t end)
{
	unsigned char *p = rtprof__open(31);

	if (RTPROF_UNLIKELY(p == NULL))
		return;
	p[0] = 0x95;
	p[1] = RTPROF__REC_INTERVAL;
	p = rtprof__put_u64(p + 2, 0xcf, start);
	p = rtprof__put_u64(p, 0xcf, end);
	p = rtprof__put_ptr(p, name);
	p[0] = (unsigned char)(cat & 0x7f);
	rtprof__close(p + 1);
}

/* ------------------------------------------------------------------ */
/* Typed markers: open, put each declared field in order, close.        */

/* A record being written; only valid between open and close. */
typedef struct rtprof_rec {
	unsigned char *p;
} rtprof_rec;

/*
 * rtprof_marker_open - start a marker of a declared type.
 * @start, @end: ticks; @end is used by RTPROF_PHASE_INTERVAL only.
 * Then put exactly type->nfields values in declaration order, of the
 * declared kinds, and call rtprof_marker_close().
 * Context: owner thread; RT-safe.
 * Return: nonzero if the marker is being recorded; when zero, put nothing
 * and do not close.
 */
RTPROF_INLINE int
rtprof_marker_open(rtprof_rec *r, const rtprof_marker_type *type,
    enum rtprof_phase phase, uint64_t start, uint64_t end)
{
	unsigned char *p = rtprof__open(type->max_record);

	r->p = p;
	if (RTPROF_UNLIKELY(p == NULL))
		return 0;
	p[0] = (unsigned char)(0x90 | (5 + type->nfields));
	p[1] = RTPROF__REC_TYPED;
	p[2] = (unsigned char)phase;
	p = rtprof__put_u64(p + 3, 0xcf, start);
	p = rtprof__put_u64(p, 0xcf, phase == RTPROF_PHASE_INTERVAL ? end : 0);
	r->p = rtprof__put_u16(p, type->id);
	return 1;
}

/* Context: owner thread, between open and close; RT-safe. */
RTPROF_INLINE void
rtprof_put_i64(rtprof_rec *r, int64_t v)
{
	r->p = rtprof__put_u64(r->p, 0xd3, (uint64_t)v);
}

RTPROF_INLINE void
rtprof_put_u64(rtprof_rec *r, uint64_t v)
{
	r->p = rtprof__put_u64(r->p, 0xcf, v);
}

RTPROF_INLINE void
rtprof_put_f64(rtprof_rec *r, double v)
{
	uint64_t u;

	memcpy(&u, &v, 8);
	r->p = rtprof__put_u64(r->p, 0xcb, u);
}

/* @s must live until the process ends. */
RTPROF_INLINE void
rtprof_put_static_str(rtprof_rec *r, const char *s)
{
	r->p = rtprof__put_ptr(r->p, s);
}

/* Copies at most RTPROF_MAX_STRING bytes of @s (length @n). */
RTPROF_INLINE void
rtprof_put_str(rtprof_rec *r, const char *s, size_t n)
{
	if (n > RTPROF_MAX_STRING)
		n = RTPROF_MAX_STRING;
	r->p[0] = 0xd9;
	r->p[1] = (unsigned char)n;
	rtprof__copy_str(r->p + 2, s, n);
	r->p += 2 + n;
}

/* Context: owner thread; RT-safe. */
RTPROF_INLINE void
rtprof_marker_close(rtprof_rec *r)
{
	rtprof__close(r->p);
}

/* ------------------------------------------------------------------ */
/* Counters                                                              */

RTPROF_INLINE void
rtprof__counter_rec(const rtprof_counter *c, int64_t v)
{
	uint64_t e;
	unsigned char *p;

	if (RTPROF_UNLIKELY(!rtprof__claim(23, &e, &p))) {
		rtprof__counter_slow(c, v, e);
		return;
	}
	rtprof__put_head(p, 0x94, RTPROF__REC_COUNTER, 0xcf);
	rtprof__put_be64(p + 3, rtprof__tick());
	/* cd id_hi id_lo d3: the id's uint16 and the value's tag, prepared
	 * at declaration */
	memcpy(p + 11, c->rec_tag, 4);
	rtprof__put_be64(p + 15, (uint64_t)v);
	rtprof__commit(p, 23, e);
}

/*
 * rtprof_counter_add / rtprof_counter_set - change a counter. The value is
 * shared by all threads; a registered caller also records the new value.
 * Context: any thread; RT-safe (one atomic add, wait-free on x86 and on
 * arm64 with LSE).
 */
RTPROF_INLINE void
rtprof_counter_add(rtprof_counter *c, int64_t delta)
{
	/* relaxed: the counter is a statistic; records carry their own time. */
	int64_t v = __atomic_add_fetch(&c->value, delta, __ATOMIC_RELAXED);

	rtprof__counter_rec(c, v);
}

RTPROF_INLINE void
rtprof_counter_set(rtprof_counter *c, int64_t value)
{
	__atomic_store_n(&c->value, value, __ATOMIC_RELAXED);
	rtprof__counter_rec(c, value);
}

/* ------------------------------------------------------------------ */
/* Audio callbacks                                                       */

/*
 * rtprof_audio_begin - an audio callback of @frames frames at @rate Hz
 * starts now; its budget is frames / rate. The interval since the previous
 * callback's start, minus that callback's period, is the jitter counter.
 * Context: the audio thread (registered, RTPROF_THREAD_RT); wait-free, no
 * allocation, no system call.
 */
RTPROF_INLINE void
rtprof_audio_begin(rtprof_audio *a, uint32_t frames, uint32_t rate)
{
	uint64_t now = rtprof_now();

	if (a->prev_begin != 0 && a->prev_period != 0) {
		a->jitter_set = (int64_t)((double)(int64_t)(now -
		    a->prev_begin - a->prev_period) / a->ticks_per_us);
		rtprof_counter_set(a->jitter, a->jitter_set);
	}
	a->t_begin = now;
	a->frames = frames;
	a->rate = rate;
	a->prev_begin = now;
	a->prev_period = rate != 0 ? (uint64_t)((double)frames * 1e6 /
	    (double)rate * a->ticks_per_us) : 0;
}

/*
 * rtprof_audio_end - the callback begun last ends now: an "Audio callback"
 * interval marker {frames, budget, used (ms), load}; when it used more than
 * its budget, an "Audio overrun" marker too and the overrun counter + 1;
 * the load counter (per mille).
 * Context: the audio thread; wait-free, no allocation, no system call.
 */
RTPROF_INLINE void
rtprof_audio_end(rtprof_audio *a)
{
	uint64_t now = rtprof_now(), used = now - a->t_begin;
	double used_ms = (double)used / a->ticks_per_us / 1000.0;
	double budget_ms = a->rate != 0 ? (double)a->frames * 1000.0 /
	    (double)a->rate : 0.0;
	double load = budget_ms > 0.0 ? used_ms / budget_ms : 0.0;
	rtprof_rec r;

	a->callbacks++;
	if (rtprof_marker_open(&r, a->cb_type, RTPROF_PHASE_INTERVAL,
	    a->t_begin, now)) {
		rtprof_put_u64(&r, a->frames);
		rtprof_put_f64(&r, budget_ms);
		rtprof_put_f64(&r, used_ms);
		rtprof_put_f64(&r, load);
		rtprof_marker_close(&r);
	}
	if (used_ms > budget_ms && budget_ms > 0.0) {
		a->overrun_count++;
		if (rtprof_marker_open(&r, a->overrun_type,
		    RTPROF_PHASE_INTERVAL, a->t_begin, now)) {
			rtprof_put_u64(&r, a->overrun_count);
			rtprof_put_f64(&r, budget_ms);
			rtprof_put_f64(&r, used_ms);
			rtprof_put_f64(&r, used_ms - budget_ms);
			rtprof_marker_close(&r);
		}
		rtprof_counter_add(a->overruns, 1);
	}
	a->load_set = (int64_t)(load * 1000.0 + 0.5);
	rtprof_counter_set(a->load, a->load_set);
}

/* ------------------------------------------------------------------ */
/* Labels and sleep                                                      */

/*
 * rtprof_label_push / rtprof_label_pop - the thread's label stack, read by
 * the sampler without stopping the thread. @label lives forever.
 * Context: owner thread; RT-safe.
 */
RTPROF_INLINE void
rtprof_label_push(const char *label)
{
	rtprof__label_push(label);
}

RTPROF_INLINE void
rtprof_label_pop(void)
{
	rtprof__label_pop();
}

RTPROF_INLINE void
rtprof__label_cleanup(const char *const *unused)
{
	(void)unused;
	rtprof__label_pop();
}

#define RTPROF__CAT2(a, b) a##b
#define RTPROF__CAT(a, b) RTPROF__CAT2(a, b)
/*
 * RTPROF_LABEL_SCOPE(label) - push @label until the enclosing block ends
 * (C with GCC/Clang cleanup attribute; also fine in C++).
 */
#define RTPROF_LABEL_SCOPE(label)                                              \
	const char *RTPROF__CAT(rtprof__scope_, __LINE__)                      \
	    __attribute__((cleanup(rtprof__label_cleanup), unused)) =          \
		(rtprof__label_push(label), (label))

/*
 * rtprof_thread_sleep / rtprof_thread_wake - tell the sampler this thread is
 * about to block / has woken up; also recorded as events.
 * Context: owner thread; RT-safe.
 */
RTPROF_API void rtprof_thread_sleep(void);
RTPROF_API void rtprof_thread_wake(void);

/* ------------------------------------------------------------------ */
/* Control calls: may lock, allocate, make syscalls. 0 or -errno.       */

/*
 * rtprof_thread_register - register the calling thread under @name
 * (copied, at most 63 bytes; NULL: the thread's comm, read again when it
 * unregisters). Unregisters itself when the thread exits.
 * Context: owner thread; may block and allocate.
 * Return: 0, -EEXIST (already registered), -ENOMEM.
 */
RTPROF_API int rtprof_thread_register(const char *name, unsigned flags);

/*
 * rtprof_thread_unregister - stop recording on the calling thread; its data
 * is kept until written. Context: owner thread; may block.
 * Return: 0, -ENOENT (not registered).
 */
RTPROF_API int rtprof_thread_unregister(void);

/* Context: owner thread. Return: 0, -ENOENT (not registered). */
RTPROF_API int rtprof_thread_stats_get(struct rtprof_thread_stats *out);

/*
 * rtprof_marker_type_declare - declare a marker type (copied).
 * Context: any thread; may block and allocate.
 * Return: a handle valid until the process ends, or NULL (errno set:
 * EINVAL bad schema, ENOSPC too many types, ENOMEM).
 */
RTPROF_API const rtprof_marker_type *
rtprof_marker_type_declare(const struct rtprof_marker_schema *schema);

/*
 * rtprof_counter_declare - declare a counter. Strings are copied.
 * Context: any thread; may block and allocate.
 * Return: a handle valid until the process ends, or NULL (errno set).
 */
RTPROF_API rtprof_counter *
rtprof_counter_declare(const char *name, const char *category,
    const char *description);

/*
 * rtprof_counter_declare_kind - rtprof_counter_declare with what the value
 * is (enum rtprof_counter_kind) and its @unit (NULL or "": a plain
 * number; "permille", "percent", "ns", "us", "ms", "bytes"; another
 * string is kept in the dump and shown as a plain number). The values
 * recorded are the same integers; the unit only says how to show them.
 * Context: any thread; may block and allocate.
 * Return: a handle valid until the process ends, or NULL (errno set:
 * EINVAL for an unknown kind).
 */
RTPROF_API rtprof_counter *
rtprof_counter_declare_kind(const char *name, const char *category,
    const char *description, int kind, const char *unit);

/*
 * rtprof_ticks_per_second - how many rtprof_now() ticks make a second.
 * Context: any thread but an RT one; the first call may sleep up to 20 ms to
 * calibrate the TSC.
 */
RTPROF_API double rtprof_ticks_per_second(void);

/*
 * rtprof_audio_init - set up an audio callback site named @name (copied
 * into its counters' names: "@name load", "@name jitter", "@name
 * overruns"). Declares the "Audio callback" and "Audio overrun" marker
 * types (once per process) and the three counters. Register the audio
 * thread with RTPROF_THREAD_RT (sampled from its labels, never
 * interrupted), e.g. in JACK's thread-init callback.
 * Context: any thread, before the first rtprof_audio_begin; may allocate.
 * Return: 0, or -ENOMEM / -ENOSPC (no more types or counters).
 */
RTPROF_API int rtprof_audio_init(rtprof_audio *a, const char *name);

/*
 * rtprof_session_start - start recording into the file descriptor in
 * @settings (the caller keeps it open until stop returns). Threads already
 * registered start recording at their next event.
 *
 * Sampling (unless sample_interval_us is RTPROF_SAMPLING_OFF): a sampler
 * thread samples every registered thread. Where the kernel allows perf
 * events (root, CAP_PERFMON, kernel.perf_event_paranoid <= 2) the kernel
 * copies each thread's registers and stack once per interval of its own
 * CPU time: no signal reaches the program. Real-time threads
 * (RTPROF_THREAD_RT) and threads that declared themselves asleep
 * (rtprof_thread_sleep) are never interrupted either way. Where perf
 * events are refused (said once on stderr, with the setting that allows
 * them), under valgrind, with RTPROF_SAMPLER=signal in the environment,
 * and for threads that push labels, other threads that ran since their
 * previous sample receive a real-time signal (never SIGPROF, which is
 * left to the program): the first from SIGRTMAX down that has no handler
 * when the sampler starts. rtprof installs a handler on it; a signal of
 * that number it did not send goes to the handler it replaced, and if the
 * program installs its own handler on it later, rtprof sends no more
 * signals in the process (native frames stop; said once on stderr). A
 * call a signalled thread is blocked in may return EINTR (poll,
 * nanosleep, usleep...; read and write restart), as with any signal-based
 * profiler. A thread that blocks the signal is sampled without native
 * frames, and its samples say so.
 *
 * Context: any thread; may block and allocate.
 * Return: 0, -EBUSY (a session is running), -EINVAL (bad settings or fd;
 * sample_interval_us outside 100..1000000; a dump_signal that is the
 * sampling signal), -ENOMEM, -EAGAIN (could not start the writer or
 * sampler thread, or no real-time signal was free for sampling),
 * -EPERM (a child made by fork() without exec while the parent was
 * recording: that session was copied half-done and is dropped there;
 * record after exec instead).
 */
RTPROF_API int rtprof_session_start(const struct rtprof_settings *settings);

/*
 * rtprof_session_stop - stop recording and finish the dump: every event
 * recorded before the stop is written, then the trailer. Returns when the
 * dump is complete (or the sink failed).
 * Context: any thread except a registered RT thread inside a callback;
 * may block.
 * Return: 0, -ENOENT (no session), or the sink's first error (negative
 * errno, e.g. -ENOSPC, -EPIPE): what could be written was written.
 */
RTPROF_API int rtprof_session_stop(void);

/*
 * rtprof_session_pause / rtprof_session_resume - stop and restart
 * recording without ending the session; the paused range is recorded.
 * Context: any thread; may block.
 * Return: 0, -ENOENT (no session), -EALREADY.
 */
RTPROF_API int rtprof_session_pause(void);
RTPROF_API int rtprof_session_resume(void);

/*
 * rtprof_session_dump - write what is buffered now (flight recorder:
 * everything kept; stream: the partly filled chunks too) and return when it
 * is written. Context: any thread; may block.
 * Return: 0, -ENOENT, or the sink's first error.
 */
RTPROF_API int rtprof_session_dump(void);

/* Context: any thread; may block. Return: 0, -ENOENT (never started). */
RTPROF_API int rtprof_session_status_get(struct rtprof_session_status *out);

/*
 * rtprof_tty_open - open a serial line for a session's sink: raw mode, @baud
 * bits per second (a standard rate, e.g. 115200), 8N1, no modem control,
 * no hardware (RTS/CTS) or software (XON/XOFF) flow control. Set
 * `link_bytes_per_sec` to baud / 10 so that nothing waits for the link.
 * Context: any non-RT thread; may block.
 * Return: the descriptor (close-on-exec; the caller owns it), or -EINVAL
 * (not a standard rate), -ENOTTY, or another negative errno from open().
 */
RTPROF_API int rtprof_tty_open(const char *path, uint32_t baud);

/* A human-readable message for a negative errno from this API. */
RTPROF_API const char *rtprof_strerror(int err);

#else /* RTPROF_DISABLE: every call compiles to nothing. */

typedef struct rtprof_rec {
	int unused;
} rtprof_rec;

#define RTPROF__NOP static inline
RTPROF__NOP uint64_t rtprof_now(void) { return 0; }
RTPROF__NOP void rtprof_mark(const char *n, enum rtprof_category c) { (void)n; (void)c; }
RTPROF__NOP void rtprof_begin(const char *n, enum rtprof_category c) { (void)n; (void)c; }
RTPROF__NOP void rtprof_end(const char *n, enum rtprof_category c) { (void)n; (void)c; }
RTPROF__NOP void rtprof_interval(const char *n, enum rtprof_category c, uint64_t a, uint64_t b) { (void)n; (void)c; (void)a; (void)b; }
RTPROF__NOP int rtprof_marker_open(rtprof_rec *r, const rtprof_marker_type *t, enum rtprof_phase p, uint64_t a, uint64_t b) { (void)r; (void)t; (void)p; (void)a; (void)b; return 0; }
RTPROF__NOP void rtprof_put_i64(rtprof_rec *r, int64_t v) { (void)r; (void)v; }
RTPROF__NOP void rtprof_put_u64(rtprof_rec *r, uint64_t v) { (void)r; (void)v; }
RTPROF__NOP void rtprof_put_f64(rtprof_rec *r, double v) { (void)r; (void)v; }
RTPROF__NOP void rtprof_put_static_str(rtprof_rec *r, const char *s) { (void)r; (void)s; }
RTPROF__NOP void rtprof_put_str(rtprof_rec *r, const char *s, size_t n) { (void)r; (void)s; (void)n; }
RTPROF__NOP void rtprof_marker_close(rtprof_rec *r) { (void)r; }
RTPROF__NOP void rtprof_counter_add(rtprof_counter *c, int64_t d) { (void)c; (void)d; }
RTPROF__NOP void rtprof_counter_set(rtprof_counter *c, int64_t v) { (void)c; (void)v; }
RTPROF__NOP int rtprof_audio_init(rtprof_audio *a, const char *n) { (void)a; (void)n; return 0; }
RTPROF__NOP double rtprof_ticks_per_second(void) { return 1e9; }
RTPROF__NOP void rtprof_audio_begin(rtprof_audio *a, uint32_t f, uint32_t r) { (void)a; (void)f; (void)r; }
RTPROF__NOP void rtprof_audio_end(rtprof_audio *a) { (void)a; }
RTPROF__NOP void rtprof_label_push(const char *l) { (void)l; }
RTPROF__NOP void rtprof_label_pop(void) {}
#define RTPROF_LABEL_SCOPE(label) ((void)(label))
RTPROF__NOP void rtprof_thread_sleep(void) {}
RTPROF__NOP void rtprof_thread_wake(void) {}
RTPROF__NOP int rtprof_thread_register(const char *n, unsigned f) { (void)n; (void)f; return 0; }
RTPROF__NOP int rtprof_thread_unregister(void) { return 0; }
RTPROF__NOP int rtprof_thread_stats_get(struct rtprof_thread_stats *o) { memset(o, 0, sizeof(*o)); return 0; }
RTPROF__NOP const rtprof_marker_type *rtprof_marker_type_declare(const struct rtprof_marker_schema *s)
{
	static const rtprof_marker_type none = { sizeof(rtprof_marker_type), 0, 0, 0, 0 };
	(void)s;
	return &none;
}
RTPROF__NOP rtprof_counter *rtprof_counter_declare(const char *n, const char *c, const char *d)
{
	static rtprof_counter none = { sizeof(rtprof_counter), 0, 0, 0, { 0, 0, 0, 0 } };
	(void)n; (void)c; (void)d;
	return &none;
}
RTPROF__NOP rtprof_counter *rtprof_counter_declare_kind(const char *n, const char *c, const char *d, int k, const char *u)
{
	(void)k; (void)u;
	return rtprof_counter_declare(n, c, d);
}
RTPROF__NOP int rtprof_session_start(const struct rtprof_settings *s) { (void)s; return 0; }
RTPROF__NOP int rtprof_session_stop(void) { return 0; }
RTPROF__NOP int rtprof_session_pause(void) { return 0; }
RTPROF__NOP int rtprof_session_resume(void) { return 0; }
RTPROF__NOP int rtprof_session_dump(void) { return 0; }
RTPROF__NOP int rtprof_session_status_get(struct rtprof_session_status *o) { memset(o, 0, sizeof(*o)); return 0; }
RTPROF__NOP const char *rtprof_strerror(int e) { (void)e; return "rtprof disabled"; }
#undef RTPROF__NOP

#endif /* RTPROF_DISABLE */

#ifdef __cplusplus
}
#endif

/* ================================================================== */
/* Zones, text markers, frame marks, flows, categories                  */
/*
 * What users of Tracy and Perfetto expect, on the same wait-free path as
 * the markers above (docs/wire-format.md, records 13..18, frame 14).
 *
 *  - A zone is an interval with a static name, begun and ended by the
 *    same thread: rtprof_zone_begin() returns a handle that
 *    rtprof_zone_end() takes, so ends pair with their begins by handle,
 *    never by name (zones may nest, overlap, or share a name). A number,
 *    a short text, flow ids and a colour can be attached while it is open. C++:
 *    rtprof::Zone / RTPROF_ZONE(name); C: RTPROF_ZONE_SCOPE(var, ...).
 *  - A text marker carries a short text copied into the record (a file
 *    name, a plugin name), without declaring a marker type first.
 *  - A frame mark ends a frame (an audio block, a video frame, a control
 *    period) of a named frame set; the profile shows each set as a track
 *    of frame durations, frames over their budget in red.
 *  - A flow id ties markers on several threads together (a job handed
 *    from the audio thread to a worker and back).
 *  - rtprof_category_declare() adds categories with their colours; every
 *    call here takes a category id, built-in (enum rtprof_category) or
 *    declared.
 */
#ifdef __cplusplus
extern "C" {
#endif

/* Longest text kept by a text marker or a zone's text; longer is cut. */
#define RTPROF_MAX_TEXT RTPROF_MAX_STRING
/* Most categories, the 9 built-in ones included. */
#define RTPROF_MAX_CATEGORIES 64

/*
 * Marker-chart colours of a zone (rtprof_zone_color): the Firefox
 * Profiler's graph colours. Without one a zone takes its category's.
 */
enum rtprof_color {
	RTPROF_COLOR_BLUE = 1,
	RTPROF_COLOR_GREEN = 2,
	RTPROF_COLOR_GREY = 3,
	RTPROF_COLOR_INK = 4,
	RTPROF_COLOR_MAGENTA = 5,
	RTPROF_COLOR_ORANGE = 6,
	RTPROF_COLOR_PURPLE = 7,
	RTPROF_COLOR_RED = 8,
	RTPROF_COLOR_TEAL = 9,
	RTPROF_COLOR_YELLOW = 10
};

/*
 * A zone being recorded (rtprof_zone_begin). Copy it freely; t is the
 * zone's start in ticks, 0 when the zone is not being recorded (no
 * session, paused, no free chunk): the calls taking it then do nothing.
 */
typedef struct rtprof_zone {
	uint64_t t;
} rtprof_zone;

#ifndef RTPROF_DISABLE

#define RTPROF__REC_ZONE_BEGIN 13
#define RTPROF__REC_ZONE_END 14
#define RTPROF__REC_ZONE_ARG 15
#define RTPROF__REC_TEXT 16
#define RTPROF__REC_FLOW 17
#define RTPROF__REC_FRAME 18

/* What a ZONE_ARG record attaches to its zone. */
#define RTPROF__ZONE_VALUE 1
#define RTPROF__ZONE_TEXT 2
#define RTPROF__ZONE_FLOW 3
#define RTPROF__ZONE_FLOW_END 4
#define RTPROF__ZONE_COLOR 5

/*
 * Bytes of @s before its NUL, at most @max. memchr stops at the first
 * match (C11 7.24.5.1), so no byte past the NUL is read, and it is libc's
 * vectorised search, not a loop per byte.
 */
RTPROF_INLINE size_t
rtprof__text_len(const char *s, size_t max)
{
	const char *z = (const char *)memchr(s, 0, max);

	return z != NULL ? (size_t)(z - s) : max;
}

/* A copied string (str8) of at most RTPROF_MAX_TEXT bytes at @p. */
RTPROF_INLINE unsigned char *
rtprof__put_text(unsigned char *p, const char *s, size_t n)
{
	p[0] = 0xd9;
	p[1] = (unsigned char)n;
	rtprof__copy_str(p + 2, s, n);
	return p + 2 + n;
}

/* The head of a named record: [kind, t, name, ...] in an array of @n. */
RTPROF_INLINE unsigned char *
rtprof__named_head(unsigned char *p, unsigned n, unsigned kind, uint64_t t,
    const char *name)
{
	p[0] = (unsigned char)(0x90 | n);
	p[1] = (unsigned char)kind;
	return rtprof__put_ptr(rtprof__put_u64(p + 2, 0xcf, t), name);
}

/*
 * rtprof_zone_begin - a zone named @name (a string that lives until the
 * process ends: a literal, or __func__) of category @cat starts now.
 * Context: owner thread; RT-safe.
 * Return: its handle, for rtprof_zone_end() and the rtprof_zone_* calls;
 * { 0 } when it is not recorded.
 */
RTPROF_INLINE rtprof_zone
rtprof_zone_begin(const char *name, unsigned cat)
{
	rtprof_zone z = { 0 };
	unsigned char *p = rtprof__open(22);

	if (RTPROF_UNLIKELY(p == NULL))
		return z;
	z.t = rtprof_now();
	p = rtprof__named_head(p, 4, RTPROF__REC_ZONE_BEGIN, z.t, name);
	p[0] = (unsigned char)(cat & 0x7f);
	rtprof__close(p + 1);
	return z;
}

/*
 * rtprof_zone_end - the zone @z ends now. A zone never ended (the thread
 * died, the session stopped first) is shown up to the thread's last
 * record, marked unfinished.
 * Context: owner thread, the one that began @z; RT-safe.
 */
RTPROF_INLINE void
rtprof_zone_end(rtprof_zone z)
{
	uint64_t t;
	unsigned char *p;

	if (z.t == 0)
		return;
	t = rtprof_now();
	p = rtprof__open(20);
	if (RTPROF_UNLIKELY(p == NULL))
		return;
	p[0] = 0x93;
	p[1] = RTPROF__REC_ZONE_END;
	p = rtprof__put_u64(p + 2, 0xcf, t);
	rtprof__close(rtprof__put_u64(p, 0xcf, z.t));
}

/* [15, zone, what, ...]: the value follows at the returned pointer. */
RTPROF_INLINE unsigned char *
rtprof__zone_arg(rtprof_zone z, unsigned what, size_t value_size)
{
	unsigned char *p;

	if (z.t == 0)
		return NULL;
	p = rtprof__open(12 + value_size);
	if (RTPROF_UNLIKELY(p == NULL))
		return NULL;
	p[0] = 0x94;
	p[1] = RTPROF__REC_ZONE_ARG;
	p = rtprof__put_u64(p + 2, 0xcf, z.t);
	p[0] = (unsigned char)what;
	return p + 1;
}

/*
 * rtprof_zone_value / rtprof_zone_value_f64 - attach a number to the open
 * zone @z (a count, a size, a gain): shown in its tooltip and the marker
 * table. A later value replaces an earlier one.
 * Context: owner thread of @z, while @z is open; RT-safe.
 */
RTPROF_INLINE void
rtprof_zone_value(rtprof_zone z, int64_t v)
{
	unsigned char *p = rtprof__zone_arg(z, RTPROF__ZONE_VALUE, 9);

	if (p != NULL)
		rtprof__close(rtprof__put_u64(p, 0xd3, (uint64_t)v));
}

RTPROF_INLINE void
rtprof_zone_value_f64(rtprof_zone z, double v)
{
	unsigned char *p = rtprof__zone_arg(z, RTPROF__ZONE_VALUE, 9);
	uint64_t u;

	memcpy(&u, &v, 8);
	if (p != NULL)
		rtprof__close(rtprof__put_u64(p, 0xcb, u));
}

/*
 * rtprof_zone_text / rtprof_zone_text_n - attach a short text to the open
 * zone @z: at most RTPROF_MAX_TEXT bytes of @text (up to its NUL, or @n
 * bytes) are copied now, so @text may change or be freed right after.
 * Shown after the zone's name in the marker chart and table, and in its
 * tooltip. A later text replaces an earlier one.
 * Context: owner thread of @z, while @z is open; RT-safe.
 */
RTPROF_INLINE void
rtprof_zone_text_n(rtprof_zone z, const char *text, size_t n)
{
	unsigned char *p;

	if (n > RTPROF_MAX_TEXT)
		n = RTPROF_MAX_TEXT;
	p = rtprof__zone_arg(z, RTPROF__ZONE_TEXT, 2 + n);
	if (p != NULL)
		rtprof__close(rtprof__put_text(p, text, n));
}

RTPROF_INLINE void
rtprof_zone_text(rtprof_zone z, const char *text)
{
	if (z.t != 0)
		rtprof_zone_text_n(z, text, rtprof__text_len(text,
		    RTPROF_MAX_TEXT));
}

/*
 * rtprof_zone_flow / rtprof_zone_flow_end - the open zone @z is a step of
 * flow @flow (see rtprof_flow_mark); _end: its last step.
 * Context: owner thread of @z, while @z is open; RT-safe.
 */
RTPROF_INLINE void
rtprof_zone_flow(rtprof_zone z, uint64_t flow)
{
	unsigned char *p = rtprof__zone_arg(z, RTPROF__ZONE_FLOW, 9);

	if (p != NULL)
		rtprof__close(rtprof__put_u64(p, 0xcf, flow));
}

RTPROF_INLINE void
rtprof_zone_flow_end(rtprof_zone z, uint64_t flow)
{
	unsigned char *p = rtprof__zone_arg(z, RTPROF__ZONE_FLOW_END, 9);

	if (p != NULL)
		rtprof__close(rtprof__put_u64(p, 0xcf, flow));
}

/*
 * rtprof_zone_color - draw the open zone @z in @color in the marker
 * chart, whatever its category's colour (like Tracy's ZoneScopedC).
 * Context: owner thread of @z, while @z is open; RT-safe.
 */
RTPROF_INLINE void
rtprof_zone_color(rtprof_zone z, enum rtprof_color color)
{
	unsigned char *p = rtprof__zone_arg(z, RTPROF__ZONE_COLOR, 9);

	if (p != NULL)
		rtprof__close(rtprof__put_u64(p, 0xcf, (uint64_t)color));
}

RTPROF_INLINE void
rtprof__zone_cleanup(const rtprof_zone *z)
{
	rtprof_zone_end(*z);
}

/*
 * RTPROF_ZONE_SCOPE(var, name, cat) - a zone from here to the end of the
 * enclosing block, its handle in @var (C with the GCC/Clang cleanup
 * attribute; in C++ prefer rtprof::Zone). Context: owner thread; RT-safe.
 */
#define RTPROF_ZONE_SCOPE(var, name, cat)                                      \
	rtprof_zone var __attribute__((cleanup(rtprof__zone_cleanup),         \
	    unused)) = rtprof_zone_begin((name), (cat))

/* [16, t0, t1, name, cat, text]: t1 = 0 for an instant. */
RTPROF_INLINE void
rtprof__text_rec(const char *name, unsigned cat, uint64_t t0, uint64_t t1,
    const char *text, size_t n)
{
	unsigned char *p;

	if (n > RTPROF_MAX_TEXT)
		n = RTPROF_MAX_TEXT;
	p = rtprof__open(33 + n);
	if (RTPROF_UNLIKELY(p == NULL))
		return;
	p[0] = 0x96;
	p[1] = RTPROF__REC_TEXT;
	p = rtprof__put_u64(p + 2, 0xcf, t0);
	p = rtprof__put_u64(p, 0xcf, t1);
	p = rtprof__put_ptr(p, name);
	p[0] = (unsigned char)(cat & 0x7f);
	rtprof__close(rtprof__put_text(p + 1, text, n));
}

/*
 * rtprof_text / rtprof_text_n - an instant marker named @name (a string
 * that lives forever) carrying @text: at most RTPROF_MAX_TEXT bytes (up
 * to its NUL, or @n bytes) copied into the record, so @text may change
 * or be freed right after. Shown in the marker's tooltip and the marker
 * table. Context: owner thread; RT-safe.
 */
RTPROF_INLINE void
rtprof_text_n(const char *name, unsigned cat, const char *text, size_t n)
{
	rtprof__text_rec(name, cat, rtprof_now(), 0, text, n);
}

RTPROF_INLINE void
rtprof_text(const char *name, unsigned cat, const char *text)
{
	rtprof_text_n(name, cat, text, rtprof__text_len(text, RTPROF_MAX_TEXT));
}

/*
 * rtprof_text_interval - an interval marker from @start to @end (ticks of
 * rtprof_now()) carrying @text, as rtprof_text().
 * Context: owner thread; RT-safe.
 */
RTPROF_INLINE void
rtprof_text_interval(const char *name, unsigned cat, uint64_t start,
    uint64_t end, const char *text)
{
	rtprof__text_rec(name, cat, start, end != 0 ? end : 1, text,
	    rtprof__text_len(text, RTPROF_MAX_TEXT));
}

/* [17, t, name, cat, flow, last] */
RTPROF_INLINE void
rtprof__flow_rec(const char *name, unsigned cat, uint64_t flow, unsigned last)
{
	uint64_t t = rtprof_now();
	unsigned char *p = rtprof__open(32);

	if (RTPROF_UNLIKELY(p == NULL))
		return;
	p = rtprof__named_head(p, 6, RTPROF__REC_FLOW, t, name);
	p[0] = (unsigned char)(cat & 0x7f);
	p = rtprof__put_u64(p + 1, 0xcf, flow);
	p[0] = (unsigned char)last;
	rtprof__close(p + 1);
}

/*
 * rtprof_flow_mark / rtprof_flow_finish - an instant marker named @name
 * that is a step of flow @flow: markers and zones of any thread that
 * carry the same flow id belong to one chain of work (a job the audio
 * thread hands to a worker, the worker's processing, the result picked up
 * by the audio thread). _finish marks the flow's last step. The profile
 * gives them a "flow-id" field (a "terminating-flow-id" for the last),
 * the Firefox Profiler's flow support: the id is shown in tooltips and
 * the marker table, and searching it lists the flow's markers on every
 * thread. @flow: any number unique among the flows alive (a job number,
 * a pointer) or one from rtprof_flow_new(); 0 is a flow id too.
 * Context: owner thread; RT-safe.
 */
RTPROF_INLINE void
rtprof_flow_mark(const char *name, unsigned cat, uint64_t flow)
{
	rtprof__flow_rec(name, cat, flow, 0);
}

RTPROF_INLINE void
rtprof_flow_finish(const char *name, unsigned cat, uint64_t flow)
{
	rtprof__flow_rec(name, cat, flow, 1);
}

extern RTPROF_API uint64_t rtprof__flow_next;
extern RTPROF_API uint64_t rtprof__flow_base;

/*
 * rtprof_flow_new - a new flow id, unique within the machine while the
 * process lives: the process id in the high 32 bits, a count below.
 * Context: any thread; RT-safe (one atomic add).
 */
RTPROF_INLINE uint64_t
rtprof_flow_new(void)
{
	/* relaxed: only uniqueness matters. */
	return rtprof__flow_base | (__atomic_add_fetch(&rtprof__flow_next, 1,
	    __ATOMIC_RELAXED) & 0xffffffffu);
}

/* [18, t, name, budget_ns] */
RTPROF_INLINE void
rtprof__frame_rec(const char *name, uint64_t budget_ns)
{
	uint64_t t = rtprof_now();
	unsigned char *p = rtprof__open(30);

	if (RTPROF_UNLIKELY(p == NULL))
		return;
	p = rtprof__named_head(p, 4, RTPROF__REC_FRAME, t, name);
	rtprof__close(rtprof__put_u64(p, 0xcf, budget_ns));
}

/*
 * rtprof_frame_mark / rtprof_frame_mark_budget - a frame of the frame set
 * @name (a string that lives forever: "audio block", "video frame") ends
 * now, and the next one begins: call it once per period, at the same
 * point of the loop. The profile shows the set as a track of frame
 * durations on the thread, one bar per frame from one mark to the next;
 * a frame longer than @budget_ns (e.g. 2666667 for 128 frames at 48 kHz)
 * is drawn in red, the others in green; with no budget (0, or
 * rtprof_frame_mark) a frame is slow when it is over 1.5 times the set's
 * median. Marks of one set come from one thread.
 * Context: owner thread; RT-safe.
 */
RTPROF_INLINE void
rtprof_frame_mark(const char *name)
{
	rtprof__frame_rec(name, 0);
}

RTPROF_INLINE void
rtprof_frame_mark_budget(const char *name, uint64_t budget_ns)
{
	rtprof__frame_rec(name, budget_ns);
}

/*
 * rtprof_category_declare - a category named @name (copied, at most 63
 * bytes) drawn in @color, one of the Firefox Profiler's category colours:
 * "transparent", "purple", "green", "orange", "yellow", "lightblue",
 * "blue", "brown", "magenta", "red", "lightred", "darkgrey", "grey".
 * Zones and markers of the category are drawn in its colour in the marker
 * chart (lightblue as teal, brown as orange, lightred as red, darkgrey as
 * grey, transparent uncoloured). Declaring a name again returns its id
 * (with the first colour).
 * Context: any thread; may block and allocate.
 * Return: the category id (RTPROF_CAT_COUNT or more), for every call
 * that takes a category; -EINVAL (no name, unknown colour), -ENOSPC
 * (RTPROF_MAX_CATEGORIES already).
 */
RTPROF_API int rtprof_category_declare(const char *name, const char *color);

#else /* RTPROF_DISABLE */

#define RTPROF__NOP static inline
RTPROF__NOP rtprof_zone rtprof_zone_begin(const char *n, unsigned c) { rtprof_zone z = { 0 }; (void)n; (void)c; return z; }
RTPROF__NOP void rtprof_zone_end(rtprof_zone z) { (void)z; }
RTPROF__NOP void rtprof_zone_value(rtprof_zone z, int64_t v) { (void)z; (void)v; }
RTPROF__NOP void rtprof_zone_value_f64(rtprof_zone z, double v) { (void)z; (void)v; }
RTPROF__NOP void rtprof_zone_text(rtprof_zone z, const char *s) { (void)z; (void)s; }
RTPROF__NOP void rtprof_zone_text_n(rtprof_zone z, const char *s, size_t n) { (void)z; (void)s; (void)n; }
RTPROF__NOP void rtprof_zone_flow(rtprof_zone z, uint64_t f) { (void)z; (void)f; }
RTPROF__NOP void rtprof_zone_flow_end(rtprof_zone z, uint64_t f) { (void)z; (void)f; }
RTPROF__NOP void rtprof_zone_color(rtprof_zone z, enum rtprof_color c) { (void)z; (void)c; }
#define RTPROF_ZONE_SCOPE(var, name, cat) \
	rtprof_zone var __attribute__((unused)) = rtprof_zone_begin((name), (cat))
RTPROF__NOP void rtprof_text(const char *n, unsigned c, const char *s) { (void)n; (void)c; (void)s; }
RTPROF__NOP void rtprof_text_n(const char *n, unsigned c, const char *s, size_t l) { (void)n; (void)c; (void)s; (void)l; }
RTPROF__NOP void rtprof_text_interval(const char *n, unsigned c, uint64_t a, uint64_t b, const char *s) { (void)n; (void)c; (void)a; (void)b; (void)s; }
RTPROF__NOP void rtprof_flow_mark(const char *n, unsigned c, uint64_t f) { (void)n; (void)c; (void)f; }
RTPROF__NOP void rtprof_flow_finish(const char *n, unsigned c, uint64_t f) { (void)n; (void)c; (void)f; }
RTPROF__NOP uint64_t rtprof_flow_new(void) { return 0; }
RTPROF__NOP void rtprof_frame_mark(const char *n) { (void)n; }
RTPROF__NOP void rtprof_frame_mark_budget(const char *n, uint64_t b) { (void)n; (void)b; }
RTPROF__NOP int rtprof_category_declare(const char *n, const char *c) { (void)n; (void)c; return RTPROF_CAT_USER; }
#undef RTPROF__NOP

#endif /* RTPROF_DISABLE */

#ifdef __cplusplus
} /* extern "C" */

namespace rtprof {

/*
 * rtprof::Zone - a zone from its construction to the end of its scope
 * (rtprof_zone_begin / rtprof_zone_end), like Tracy's ZoneScopedN:
 *
 *     void process(const char *file) {
 *         rtprof::Zone z("process", dsp_category);
 *         z.text(file);
 *         ...
 *     }
 *
 * Context: owner thread, constructed and destroyed on one thread; RT-safe.
 */
class Zone {
public:
	explicit Zone(const char *name, unsigned cat = RTPROF_CAT_USER) noexcept
	    : z_(rtprof_zone_begin(name, cat)) {}
	~Zone() { rtprof_zone_end(z_); }
	Zone(const Zone &) = delete;
	Zone &operator=(const Zone &) = delete;

	void value(int64_t v) const noexcept { rtprof_zone_value(z_, v); }
	void value(double v) const noexcept { rtprof_zone_value_f64(z_, v); }
	void text(const char *s) const noexcept { rtprof_zone_text(z_, s); }
	void text(const char *s, size_t n) const noexcept
	{
		rtprof_zone_text_n(z_, s, n);
	}
	void flow(uint64_t id) const noexcept { rtprof_zone_flow(z_, id); }
	void flow_end(uint64_t id) const noexcept
	{
		rtprof_zone_flow_end(z_, id);
	}
	void color(rtprof_color c) const noexcept { rtprof_zone_color(z_, c); }
	rtprof_zone handle() const noexcept { return z_; }

private:
	rtprof_zone z_;
};

} /* namespace rtprof */

#define RTPROF__ZONE_VAR RTPROF__ZCAT(rtprof__zone_, __LINE__)
#define RTPROF__ZCAT2(a, b) a##b
#define RTPROF__ZCAT(a, b) RTPROF__ZCAT2(a, b)
/* RTPROF_ZONE(name) - an unnamed rtprof::Zone of category User. */
#define RTPROF_ZONE(name) ::rtprof::Zone RTPROF__ZONE_VAR(name)
/* RTPROF_ZONE_CAT(name, cat) - the same with a category. */
#define RTPROF_ZONE_CAT(name, cat) ::rtprof::Zone RTPROF__ZONE_VAR((name), (cat))
/* RTPROF_ZONE_FUNC() - a zone named after the enclosing function. */
#define RTPROF_ZONE_FUNC() ::rtprof::Zone RTPROF__ZONE_VAR(__func__)

#endif /* __cplusplus */

#endif /* RTPROF_H */
