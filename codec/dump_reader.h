/*
 * dump_reader.h - streaming, callback-based decoder of rtprof dumps.
 *
 * Bytes in, callbacks out (docs/wire-format.md). The reader finds frames
 * with the resynchronising scanner of frame.c, decodes descriptor payloads
 * with msgpack-c and walks DATA records with rtprof_rec_next() (records.h),
 * falling back to a general msgpack record reader for encodings outside the
 * recorder's fixed-width subset. It depends on nothing in rt/ or core/.
 *
 * Memory is bounded: the scanner's buffer (one frame of at most
 * RTPROF_FRAME_MAX_PAYLOAD bytes plus one 1 MiB read, at most doubled by its
 * growth policy) and per-frame decode state capped by the RTPROF_DUMP_MAX_*
 * limits below. Damage never stops the reader: it is reported through
 * on_damage and counted in the statistics.
 *
 * Strings and arrays handed to callbacks live in reader-owned memory that is
 * valid only until the callback returns: copy what you keep. Strings are
 * NUL-terminated (text that holds NUL bytes also comes with its length
 * where the format allows it: STRING frames, copied-string record fields).
 *
 * Session and sequence tracking: every HEADER frame starts a new session; a
 * frame whose session id is not among the most recent sessions starts a new
 * session without a header (its HEADER was lost). Within a session, a jump
 * in `seq` is a gap (frames lost) and a `seq` at or below the last one seen
 * is a repeated or out-of-order frame, which is reported and not delivered.
 */
#ifndef RTPROF_DUMP_READER_H
#define RTPROF_DUMP_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "records.h"
#include "wire.h"

/*
 * Caps on counts inside one frame. A frame beyond them is a bad payload.
 * RTPROF_DUMP_MAX_OBJECTS bounds the msgpack objects of one payload (each
 * costs msgpack-c 24 bytes), so no count in a hostile payload can make the
 * reader allocate more than a few tens of MiB.
 */
#define RTPROF_DUMP_MAX_ARGS 4096         /* HEADER cmdline */
#define RTPROF_DUMP_MAX_CATEGORIES 256    /* HEADER categories */
#define RTPROF_DUMP_MAX_MODULES 65536     /* MODULES entries */
#define RTPROF_DUMP_MAX_FIELDS 64         /* SCHEMA fields */
#define RTPROF_DUMP_MAX_VALUES 65536      /* VALUES pairs */
#define RTPROF_DUMP_MAX_THREADS 262144    /* TRAILER threads */
#define RTPROF_DUMP_MAX_OBJECTS (1u << 21)

/* A frame as it was found in the stream (on_frame). */
struct rtprof_dump_frame {
	uint64_t offset;        /* stream offset of the frame's sync bytes */
	uint64_t session_index; /* 1, 2, ...: which session of this stream */
	uint32_t session;       /* session id from the frame header */
	uint32_t seq;
	uint32_t len;           /* payload bytes */
	uint8_t kind;           /* enum rtprof_frame_kind, or an unknown kind */
	uint8_t version;
};

struct rtprof_dump_header {
	int64_t format;
	uint32_t session;
	uint64_t generation;
	int64_t pid;
	int64_t ppid;
	const char *process;
	const char *exe;
	uint32_t argc;
	const char *const *argv;        /* argc strings, then NULL */
	struct {
		const char *sysname;
		const char *release;
		const char *machine;
		const char *hostname;
		int64_t cpus;
		const char *boot_id;    /* "" in older dumps */
	} machine;
	struct {
		const char *source;     /* "tsc", "cntvct", "monotonic" */
		double ticks_per_second;
		uint64_t start_ticks;
		int64_t start_mono_ns;
		int64_t start_wall_ns;
	} clock;
	struct {
		const char *mode;       /* "stream", "flight" */
		uint64_t memory_limit;
		uint64_t chunk_size;
		uint64_t prefill;
		uint64_t max_bytes;
		uint64_t flush_interval_us;
		uint64_t sample_interval_us;
	} settings;
	struct {
		/* "perf", "signal", "off"; "" in dumps from before */
		const char *method;
		const char *why;        /* why that method, for people */
		/* 1: the kernel's stacks where threads block were taken
		 * (KSTACK records), 0: not, -1: an older dump says nothing */
		int kernel_stacks;
	} sampling;
	uint32_t ncategories;
	const char *const *category_names;  /* indexed by category id */
	const char *const *category_colors;
};

struct rtprof_dump_module {
	const char *path;
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	const unsigned char *build_id;  /* NULL when empty */
	size_t build_id_len;
};

/* MODULES_CHANGED: the module map changed (seen at @ticks). */
struct rtprof_dump_module_change {
	uint64_t ticks;
	const struct rtprof_dump_module *added;    /* loaded since */
	size_t nadded;
	const struct rtprof_dump_module *removed;  /* unloaded since */
	size_t nremoved;
};

/* A thread's counts in a session (docs/wire-format.md, TRAILER). */
struct rtprof_dump_trailer_thread {
	int64_t tid;
	uint64_t recorded;
	uint64_t dropped_full;
	uint64_t dropped_nested;
	uint64_t recycled;
};

struct rtprof_dump_thread {
	int64_t tid;
	const char *name;
	uint64_t flags;                 /* bit 0 real-time, bit 1 main thread */
	uint64_t register_ticks;
	bool has_unregister;
	uint64_t unregister_ticks;
	/* The exited thread's final counts (its `totals`; .tid = tid): the
	 * trailer does not list them again. A reader adds up, per tid, the
	 * totals of THREAD frames and the trailer's entries. */
	bool has_totals;
	struct rtprof_dump_trailer_thread totals;
};

struct rtprof_dump_field {
	const char *key;
	const char *label;
	const char *format;             /* Gecko format name */
	uint32_t kind;                  /* 1 i64 .. 5 copied string */
};

struct rtprof_dump_schema {
	uint32_t id;
	const char *name;
	uint32_t category;
	uint64_t display;
	const char *tooltip;            /* NULL when nil or absent */
	const char *table;
	const char *chart;
	uint32_t nfields;
	const struct rtprof_dump_field *fields;
};

struct rtprof_dump_counter {
	uint32_t id;
	const char *name;
	const char *category;           /* free text, "Memory" for memory */
	const char *description;
	uint32_t kind;                  /* enum rtprof_counter_kind; 0 in
					 * older dumps (no "kind") */
	const char *unit;               /* "" in older dumps */
};

/* CATEGORY: a category the program declared (rtprof_category_declare). */
struct rtprof_dump_category {
	uint32_t id;                    /* below RTPROF_WIRE_MAX_CATEGORIES */
	const char *name;
	const char *color;              /* a Gecko category colour name */
};

/* The 10 integers that open a DATA frame. */
struct rtprof_dump_data {
	int64_t tid;
	uint64_t generation;
	uint64_t chunk_seq;
	uint64_t byte_offset;
	uint64_t record_index;
	uint64_t nrec;
	uint64_t first_ticks;
	uint64_t last_ticks;
	uint64_t dropped_full;
	uint64_t dropped_nested;
};

struct rtprof_dump_event {
	uint64_t ticks;
	const char *what;               /* "sink_error", "limit_reached", ... */
	bool has_errno;
	int64_t errnum;                 /* sink_error */
	const char *message;            /* sink_error; NULL when absent */
	bool has_max_bytes;
	uint64_t max_bytes;             /* limit_reached */
};

struct rtprof_dump_trailer {
	uint64_t stop_ticks;
	int64_t stop_mono_ns;
	int64_t stop_wall_ns;
	uint64_t frames;
	uint64_t bytes;
	uint64_t chunks_lost;
	uint64_t samples_lost;          /* sampler records the kernel lost */
	bool limit_reached;
	/* The counts no THREAD frame's totals settled (the threads still
	 * running at the stop, or whose chunks were still kept); a tid may
	 * repeat when it was reused. */
	size_t nthreads;
	const struct rtprof_dump_trailer_thread *threads;
	/* Entries left out: the size cap left no room for them. */
	uint64_t threads_omitted;
};

enum rtprof_damage_kind {
	/* Bytes between two frames skipped: garbage, a header whose CRC
	 * failed, or frames whose payload CRC failed (count). */
	RTPROF_DAMAGE_SKIPPED = 1,
	/* Frames missing by seq within a session (count). */
	RTPROF_DAMAGE_SEQ_GAP = 2,
	/* A frame repeated or out of order (seq not above the last one):
	 * not delivered. */
	RTPROF_DAMAGE_SEQ_DUP = 3,
	/* Frame CRCs fine but the payload is malformed msgpack, has wrong
	 * types or exceeds a cap: the frame is not delivered (count: kind). */
	RTPROF_DAMAGE_BAD_PAYLOAD = 4,
	/* Records inside a DATA frame malformed, missing against nrec, or
	 * bytes after the last one (count: records lost). */
	RTPROF_DAMAGE_BAD_RECORD = 5,
	/* Bytes at the end of the stream that do not form a whole frame
	 * (when they hold a whole frame whose payload CRC failed, they are
	 * reported as RTPROF_DAMAGE_SKIPPED instead). */
	RTPROF_DAMAGE_TRUNCATED = 6,
	/* A frame of a newer format version after the first valid frame:
	 * skipped (count: its version). Reported once per run of frames of
	 * one session. */
	RTPROF_DAMAGE_NEWER_VERSION = 7
};

struct rtprof_dump_damage {
	enum rtprof_damage_kind kind;
	uint64_t offset;        /* stream offset where the damage starts */
	uint64_t length;        /* bytes concerned (0 when not meaningful) */
	uint64_t count;         /* see enum rtprof_damage_kind */
	uint64_t session_index; /* 0 when not tied to a session */
	uint32_t session;
	const char *message;    /* static string */
};

struct rtprof_dump_stats {
	uint64_t bytes;                 /* stream bytes read */
	uint64_t frames;                /* frames with valid CRCs */
	uint64_t bad_frames;            /* header fine, payload CRC wrong */
	uint64_t skipped_bytes;         /* bytes between frames skipped */
	uint64_t resyncs;               /* runs of skipped bytes */
	uint64_t seq_gaps;              /* frames missing by seq */
	uint64_t seq_dups;              /* repeated / out-of-order frames */
	uint64_t bad_payloads;
	uint64_t records;               /* records delivered */
	uint64_t bad_records;           /* malformed or missing records */
	uint64_t truncated_tail_bytes;
	uint64_t sessions;
	uint64_t unknown_frames;        /* frames of unknown kind, skipped */
	uint64_t newer_version_frames;
	unsigned newer_version;         /* highest newer version seen, or 0 */
	uint64_t newer_version_offset;  /* offset of the first such frame */
	uint64_t damage;                /* damage reports */
};

/*
 * Callbacks. Any may be NULL. A non-zero return stops decoding and becomes
 * the return value of rtprof_dump_read_fd() / rtprof_dump_read_mem().
 * on_frame runs for every delivered frame (known kind or not) before its
 * own callback. A frame whose payload is bad gets on_frame, then on_damage,
 * and no kind callback. Frames that are not delivered (repeated, or of a
 * newer version) get on_damage only. Damage found between two frames
 * (skipped bytes, a sequence gap) is reported before the later frame's
 * on_frame.
 */
struct rtprof_dump_cb {
	void *ctx;
	int (*on_frame)(void *ctx, const struct rtprof_dump_frame *f);
	int (*on_header)(void *ctx, const struct rtprof_dump_header *h);
	int (*on_modules)(void *ctx, const struct rtprof_dump_module *m,
	    size_t n);
	int (*on_module_change)(void *ctx,
	    const struct rtprof_dump_module_change *c);
	/* IMAGE: the ELF image of a module without a file (the vDSO),
	 * mapped at @addr. */
	int (*on_image)(void *ctx, uint64_t addr, const void *bytes,
	    size_t len);
	int (*on_thread)(void *ctx, const struct rtprof_dump_thread *t);
	int (*on_schema)(void *ctx, const struct rtprof_dump_schema *s);
	int (*on_counter)(void *ctx, const struct rtprof_dump_counter *c);
	int (*on_category)(void *ctx, const struct rtprof_dump_category *c);
	int (*on_string)(void *ctx, uint64_t ref, const char *text, size_t len);
	int (*on_data)(void *ctx, const struct rtprof_dump_data *d);
	/* Record views: see records.h. A record in a general msgpack
	 * encoding has its typed fields tagged by encoding (signed ints I64,
	 * unsigned U64): interpret them by the SCHEMA field kinds. */
	int (*on_record)(void *ctx, const struct rtprof_dump_data *d,
	    const struct rtprof_rec_view *r);
	int (*on_pause)(void *ctx, uint64_t start_ticks, uint64_t end_ticks);
	int (*on_values)(void *ctx, uint64_t ticks, size_t n,
	    const uint32_t *ids, const int64_t *values);
	int (*on_event)(void *ctx, const struct rtprof_dump_event *e);
	int (*on_trailer)(void *ctx, const struct rtprof_dump_trailer *t);
	int (*on_damage)(void *ctx, const struct rtprof_dump_damage *d);
};

/*
 * rtprof_dump_read_fd - decode the dump readable from @fd until end of file.
 * @fd: file, pipe or socket; read with read(2) in 1 MiB pieces.
 * @cb: callbacks (must not be NULL; its members may be).
 * @st: statistics, zeroed first and filled as decoding goes (may be NULL).
 *
 * Context: any thread; blocks in read(2); one call per reader, no shared
 * state.
 * Return: 0 when the stream was read to its end (damage is reported, not
 * fatal); -EPROTONOSUPPORT when the first valid frame has a format version
 * newer than RTPROF_WIRE_VERSION (nothing is decoded; the version is in
 * @st->newer_version); -ENOMEM; a negative errno from read(2) (EINTR is
 * retried; a non-blocking fd gives -EAGAIN); or a callback's non-zero value.
 */
int rtprof_dump_read_fd(int fd, const struct rtprof_dump_cb *cb,
    struct rtprof_dump_stats *st);

/*
 * rtprof_dump_read_mem - decode the dump held in @buf[0..@len).
 *
 * Context: any thread; no I/O; no shared state.
 * Return: as rtprof_dump_read_fd(), without the read(2) errors.
 */
int rtprof_dump_read_mem(const void *buf, size_t len,
    const struct rtprof_dump_cb *cb, struct rtprof_dump_stats *st);

/* Context: any thread. Return: a static name ("HEADER", ...) or NULL. */
const char *rtprof_dump_frame_kind_name(unsigned kind);

/* Context: any thread. Return: a static name ("instant", ...) or NULL. */
const char *rtprof_dump_rec_kind_name(unsigned kind);

/* Context: any thread. Return: a static name ("skipped", ...). */
const char *rtprof_dump_damage_name(enum rtprof_damage_kind kind);

/*
 * Add the counts @c to @sum (sum->tid becomes c->tid): a thread's counts
 * come in parts, its THREAD frame's totals and trailer entries, added up
 * per tid. Context: any thread.
 */
void rtprof_dump_counts_add(struct rtprof_dump_trailer_thread *sum,
    const struct rtprof_dump_trailer_thread *c);

#endif /* RTPROF_DUMP_READER_H */
