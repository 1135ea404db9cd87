/*
 * gecko_int.h - the converter's shared state: rtprof dumps -> Firefox
 * Profiler Gecko profile (codec/gecko*.c; the API is gecko.h).
 *
 * Two phases. Reading: the dump reader's callbacks copy what the profile
 * needs (header, modules, thread, schema, counter and string descriptors,
 * markers, sleep/wake events, counter values, pauses) into one struct
 * gsess per session that has a HEADER; damage reports and statistics stay
 * with the dump (struct rtprof_gecko). The sampler's SAMPLE/SAME records go
 * to the sampled thread as compact samples (time, CPU delta, node of the
 * thread's raw stack tree: frames as recorded, de-duplicated by prefix);
 * OVERHEAD records stay on the sampler thread. A BACKTRACE record becomes
 * a path of its thread's raw stack tree too, kept with the marker just
 * before it (a finished marker waits one record for it). Writing: a small
 * streaming JSON writer (hand-rolled number formatting, first error
 * latched) emits each session as a process object: libs, counters,
 * pausedRanges, one
 * thread object per thread, each with its own de-duplicated string, frame
 * and stack tables (a raw stack tree is symbolized and folded into them
 * then), and the gathering log. The first session written is the top
 * level: its "processes" array stays open for the others, and its meta
 * (captured in memory) is written last, with a profiling range covering
 * every process, and presymbolicated / sampleUnits for all of them.
 *
 * Times: every time in a process is ms relative to its own meta.startTime
 * (its session's start wall clock), computed by gecko_ms() only; the
 * --from/--to window (top-level ms) is moved into each session's own ms.
 *
 * Pipeline, one file a stage (each says its place at its top):
 *   reading (rtprof_gecko_read_fd), one dump at a time:
 *     dump_reader.c     frames and records, checked -> callbacks
 *                       (dump_int.h: dump_records.c, dump_frames.c)
 *     gecko_read.c      the callbacks: one struct gsess per session
 *     gecko_markers.c   marker records -> paired markers, spilled
 *     gecko_stacks.c    SAMPLE/SAME/BACKTRACE -> raw stack trees, samples
 *     gecko_counters.c  counter values, spilled (and written, below)
 *   writing (rtprof_gecko_writer_*), one session after the other:
 *     gecko_process.c   the writer: a process object per session
 *     gecko_meta.c      meta: categories, marker schemas; libs
 *     gecko_thread.c    a thread object: its markers, then its samples
 *     gecko_frames.c    raw stack tree -> symbolized frame/stack tables
 *     gecko_samples.c   the samples, stackTable and frameTable rows
 *     gecko_log.c       profileGatheringLog: read, lost, symbolized
 *     gecko_json.c      the streaming JSON writer, number formatting
 *   shared: gecko.c (lifetime, sessions, threads, strings), gecko_maps.c
 *   (containers); gecko_info.c prints --info.
 *
 * Context: any thread; no shared state: a struct rtprof_gecko and its
 * writer belong to the one thread that uses them (gecko.h per function).
 */
#ifndef RTPROF_GECKO_INT_H
#define RTPROF_GECKO_INT_H

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dump_reader.h"
#include "esc.h"
#include "gecko.h"
#include "gecko_json.h"
#include "gecko_maps.h"
#include "idmap.h"
#include "spill.h"
#include "symbolize.h"

#define GECKO_VERSION 36
#define GECKO_MAX_CATEGORIES 256
#define GECKO_MAX_DAMAGE 1000      /* damage entries kept for the log */
#define GECKO_MAX_EVENTS 64        /* EVENT frames kept for the log */
#define GECKO_PAIR_SEARCH 256      /* open begins searched for an end */
#define GECKO_MAX_OPEN 4096        /* open begins kept per thread */
#define GECKO_SPILL_BUDGET (32u << 20) /* write buffers of spilled streams */
#define GECKO_SELF_MEMORY_NAME "rtprof memory"
#define GECKO_PROCESS_MEMORY_NAME "Process memory"
#define GECKO_OVERHEAD_SCHEMA "ProfilerOverhead"
#define GECKO_DROPPED_SCHEMA "rtprof.Dropped"
/* A memory counter starts with a 0 this long before its first level. */
#define GECKO_COUNTER_LEAD_MS 0.001
/* The sampler's overhead: one marker per window of this many ms. */
#define GECKO_OVERHEAD_WINDOW_MS 100.0
#define GECKO_OVERHEAD_WINDOW_TEXT "100 ms"
/* THREAD frame flags (rtprof_thread_flags). */
#define GECKO_THREAD_RT 1u
#define GECKO_THREAD_SAMPLER 4u
/* gmark.kind of a "Dropped events" marker (not a record kind). */
#define GMARK_DROPPED 0x80

/* ------------------------------------------------------------------ */
/* Converter state                                                      */

struct gmark {
	uint64_t t0, t1;                /* ticks; t1 for phases 1 and 3 */
	uint64_t name;                  /* STRREF (untyped markers) */
	uint32_t seq;                   /* arrival order, for a stable sort */
	uint16_t type;                  /* SCHEMA id (typed markers) */
	uint8_t kind;                   /* RTPROF_REC_* */
	uint8_t phase;                  /* Gecko phase 0..3 */
	uint8_t category;
	uint8_t nvals;
	uint32_t stack1;                /* BACKTRACE: raw stack node + 1, 0 none */
	struct rtprof_val *vals;        /* typed fields; copied strings owned */
};

/* A placeholder sample: a sleep/wake change of a thread not sampled. */
/*
 * Keyed spill records start with key = time_key(t): the spill sorts by
 * it, and raw ticks are not in time order when the clock wraps past
 * UINT64_MAX after the session's start.
 */
struct gsample {
	uint64_t key;                   /* time_key(t): the time too */
	bool idle;
};

/* Bytes of a spilled record (no padding; the spill keeps records in
 * arrival order among equal keys). */
#define GSAMPLE_REC (offsetof(struct gsample, idle) + sizeof(bool))

/*
 * A sampler sample (SAMPLE or SAME record) of a thread: kept compact, the
 * stack is a node of the thread's raw stack tree.
 */
struct gsmp {
	uint64_t key;                   /* time_key(t): the time too */
	uint64_t cpu_ns;
	uint32_t stack;                 /* index into gthread.rs, or GSMP_CB_* */
};

#define GSMP_REC (offsetof(struct gsmp, stack) + sizeof(uint32_t))

/*
 * The start and the end of an "Audio callback" interval of the thread,
 * kept among its samples (stack GSMP_CB_BEGIN / GSMP_CB_END; not
 * samples): read back in time order with them, they say which samples
 * fall inside a callback, which are never Idle (write_sampled).
 */
#define GSMP_CB_BEGIN UINT32_MAX
#define GSMP_CB_END (UINT32_MAX - 1)

/*
 * Kinds of raw stack nodes. A native frame is a return address (looked
 * up at address - 1) or the interrupted instruction (the last native
 * frame of a SAMPLE); a text frame is one of raw_texts[] (value).
 * RAW_IDLE marks the leaf of an asleep sample (Idle category).
 */
enum {
	RAW_LABEL = 0,
	RAW_RET = 1,
	RAW_PC = 2,
	RAW_TEXT = 3,
	RAW_KIND_MASK = 3,
	RAW_IDLE = 4,
};

enum {
	TEXT_UNKNOWN_STACK,             /* SAME without a previous SAMPLE */
	TEXT_NO_LABEL,                  /* label-only sample without labels */
	TEXT_NO_STACK,                  /* no frame at all */
	/* From here: the kernel's reason for going off CPU, TEXT_KERNEL +
	 * its codec/kreason.h id (a KSTACK record before the SAMPLE). */
	TEXT_KERNEL = 16,
};

/*
 * A node of a thread's raw stack tree: one frame as recorded, below its
 * prefix node (nodes are created parents first). Symbolized and turned
 * into the Gecko frame and stack tables when the thread is written.
 */
struct grawstack {
	uint64_t value;                 /* address, STRREF or TEXT_* */
	uint32_t prefix1;               /* prefix node + 1, 0 = root */
	uint16_t epoch;                 /* native: the map's (gsess.chg) */
	uint8_t kind;                   /* RAW_* */
};

#define GRAW_EPOCH_MAX UINT16_MAX

/*
 * Whole recorded stacks (frames, label mask, idle) -> leaf node of the raw
 * tree: a sample whose stack was seen before costs one hash and one
 * compare instead of a lookup per frame. Holds each unique stack once.
 */
struct scache {
	struct scache_ent {
		uint64_t hash;
		uint64_t *key;          /* nframes, mask words, frames; NULL: empty */
		uint32_t node;
	} *e;
	size_t n, nslot;
};

/* An OVERHEAD record of the sampler thread: a profiler-overhead marker. */
struct govh {
	uint64_t t0, t1;
	uint64_t v[4];                  /* lock, threads, counters ns; n */
};

struct gthread {
	int64_t tid;
	char *name;
	uint64_t flags;
	bool described;                 /* a THREAD frame was seen */
	bool has_reg;
	uint64_t reg;
	bool has_unreg;
	uint64_t unreg;
	uint64_t first_ticks;           /* first record, when not described */
	uint64_t last_data;             /* last_ticks of its previous DATA */
	bool has_last_data;
	bool has_first;
	/*
	 * What grows with the dump is spilled (codec/spill.h): markers in
	 * arrival order; placeholder samples, sampler samples and overhead
	 * records keyed by time. Only open begins (waiting for their end)
	 * stay in memory, at most GECKO_MAX_OPEN.
	 */
	struct rtprof_spill_stream *ms; /* finished markers (serialized) */
	uint64_t nm;
	struct gmark *open;             /* unmatched begins, oldest first */
	size_t nopen, opencap;
	/*
	 * The last finished marker waits here until the thread's next
	 * record: a BACKTRACE right after it (same start) is its stack.
	 * last_open: the last marker was a begin (open[nopen - 1]).
	 */
	struct gmark pend;
	bool has_pend, last_open;
	struct rtprof_spill_stream *ps; /* placeholder samples (gsample) */
	uint64_t ns;
	struct rtprof_spill_stream *smps; /* sampler samples (gsmp) */
	uint64_t nsmp;
	uint64_t ncb;                   /* callback intervals among smps */
	uint64_t nsig_blocked;          /* SAMPLEs flagged SIG_BLOCKED */
	struct grawstack *rs;           /* raw stack tree */
	size_t nrs, rscap;
	struct pmap rs_idx;             /* (value, prefix1 << 8 | kind) */
	struct scache sc;               /* whole recorded stack -> leaf node */
	uint32_t last_stack1;           /* last SAMPLE's leaf + 1, 0: none */
	/* A KSTACK for its SAMPLE of time kst_t, coming next: the reason. */
	bool kst_on;
	uint64_t kst_t;
	int kst_id;
	struct rtprof_spill_stream *ovs; /* OVERHEAD records (govh) */
	uint64_t novh;
	uint64_t recs;                  /* records decoded */
	uint64_t dropped_full, dropped_nested;
	bool settled;           /* counts from THREAD totals or the trailer */
	struct rtprof_dump_trailer_thread tr;
};

struct gschema {
	bool present;
	uint32_t id;
	char *name;
	uint32_t category;
	uint64_t display;
	char *tooltip, *table, *chart;
	uint32_t nfields;
	struct {
		char *key, *label, *format;
		uint32_t kind;
		/* Resolved once (write_marker runs per marker): */
		const char *ofmt;       /* the format written (field_format) */
		bool idx;               /* its values are stringTable indexes */
		bool is_type;           /* key "type": the payload's own */
	} *f;
};

struct gcval {
	uint64_t key;                   /* time_key(t): the time too */
	int64_t v;
};

struct gcounter {
	uint32_t id;
	char *name, *category, *description;
	char *unit;                     /* NULL: none given */
	uint32_t kind;                  /* RTPROF_WIRE_COUNTER_* */
	struct rtprof_spill_stream *vs; /* values (gcval), keyed by time */
	uint64_t ns;
	uint64_t first_key;             /* the earliest value's key */
};

struct gdamage {
	enum rtprof_damage_kind kind;
	uint64_t offset, length, count, session_index;
	const char *message;            /* static */
};

struct gevent {
	uint64_t ticks;
	char *what;
	bool has_errno;
	int64_t errnum;
	char *message;
	bool has_max_bytes;
	uint64_t max_bytes;
};

struct gmodule {
	char *path;
	uint64_t start, end, offset;
	unsigned char build_id[64];
	size_t build_id_len;
	uint64_t from, to;              /* mapped in [from, to) (ticks) */
};

/* IMAGE: a module's ELF image (the vDSO), for the symbolizer. */
struct gimage {
	uint64_t addr;
	unsigned char *bytes;
	size_t len;
};

struct gecko_cat {
	char *name;
	const char *color;              /* static: one of the allowed names */
};

/* One session (one HEADER) of a dump: one process of the profile. */
struct gsess {
	int err;                        /* first error, latched */
	struct rtprof_gecko *file;      /* the dump it came from */
	uint64_t session_index;         /* the reader's session index */
	uint64_t ordinal;               /* 1, 2, ...: sessions with a HEADER */
	uint64_t frames;                /* frames of this session */
	uint32_t seq;

	/* Set by the writer. */
	const struct rtprof_gecko_note *notes;  /* the writer's */
	size_t nnotes;
	bool top;                       /* the top-level process */
	int64_t out_pid;
	char out_name[256];
	const struct rtprof_gecko_filter *flt;  /* NULL: no filter */
	double win_a, win_b;            /* time window, own ms */

	/* HEADER */
	bool have_header;
	int64_t pid, ppid;
	char *process, *exe;
	char *sysname, *release, *machine, *hostname;
	char *boot_id;                  /* "" in older dumps */
	int64_t cpus;
	char *clock_source;
	double ticks_per_second;        /* plausible (clock_rate_ok()) */
	bool rate_replaced;             /* the HEADER's was not: 1e9 */
	double bad_rate;                /* the HEADER's then */
	uint64_t start_ticks;
	int64_t start_mono_ns, start_wall_ns;
	char *mode;
	uint64_t sample_interval_us;
	char *sampling_method, *sampling_why;   /* "" in older dumps */
	int kernel_stacks;              /* -1: not said (older dumps) */
	uint32_t ndump_cat;
	struct gecko_cat cat[GECKO_MAX_CATEGORIES];
	uint32_t ncat;
	uint32_t *cat_out;              /* written index of each (out_cat) */
	uint32_t cat_default, cat_idle, cat_profiler, cat_user;
	uint16_t ucat[RTPROF_WIRE_MAX_CATEGORIES]; /* CATEGORY id -> index + 1 */
	/* Zones, text, flows, frames (gecko_user.c). */
	struct gfset *fset;             /* frame sets */
	size_t nfset, fsetcap;
	uint64_t zone_unmatched;        /* zone ends and arguments ignored */

	/* Sampler records. */
	uint64_t nsamples, nsame, nsame_unknown, ntruncated, nno_native;
	uint64_t nsig_blocked;          /* of nsamples: the signal blocked */
	uint64_t nbacktraces, nbt_unmatched;    /* BACKTRACE records */
	bool has_native;                /* a native frame was recorded */
	uint64_t ovh_ticks, ovh_sum[4], ovh_max;

	/* TRAILER */
	bool have_trailer;
	uint64_t stop_ticks;
	int64_t stop_mono_ns;
	uint64_t tr_chunks_lost;
	uint64_t tr_samples_lost;       /* sampler records the kernel lost */
	uint64_t tr_threads_omitted;    /* counts the size cap left out */
	bool tr_limit_reached;

	struct gmodule *mod;
	size_t nmod, modcap;
	bool have_modules;
	/* MODULES_CHANGED times in stream order (the writer's, increasing):
	 * a native frame's epoch is how many of them precede its sample
	 * (GRAW_EPOCH_MAX at most), and it is symbolized as the map was
	 * then. */
	uint64_t *chg;
	size_t nchg, chgcap;
	struct gimage *img;
	size_t nimg, imgcap;
	struct gthread *th;
	size_t nth, thcap;
	/* Lookup cache: the last two threads looked up (a sampler's
	 * records alternate between it and the sampled thread). */
	size_t th_last, th_prev;
	struct rtprof_idmap th_idx;            /* tid -> th[] */
	struct gschema *schema;         /* as declared (schema_of()) */
	size_t nschema, schemacap;
	struct rtprof_idmap schema_idx; /* schema id -> schema[] */
	struct gcounter *ctr;
	size_t nctr, ctrcap;
	struct rtprof_idmap ctr_idx;           /* counter id -> ctr[] */
	struct strmap strings;
	uint64_t (*pause)[2];
	size_t npause, pausecap;
	struct gdamage *dmg;
	size_t ndmg, dmgcap;
	uint64_t dmg_total;
	struct gevent *ev;
	size_t nev, evcap;
	uint64_t ev_total;
	uint64_t recs_by_kind[RTPROF_REC_KIND_MAX + 1];
	uint64_t first_t, last_t;
	bool have_t;

	/* Symbolication, while the session is written. */
	size_t th_nrs;                  /* raw nodes of the thread written */
	struct rtprof_symbolizer *sym;
	bool sym_tried;
	uint64_t sym_addrs, sym_resolved;

	/* gecko_ms()'s ns per tick, fixed once the dump is read. */
	bool nspt_ready;
	double nspt;
};

/* One dump: its sessions, the decoder's statistics and damage reports. */
struct rtprof_gecko {
	int err;                        /* first error, latched */
	char *input;
	struct gsess **sess;            /* sessions with a HEADER, in order */
	size_t nsess, sesscap;
	struct gsess *cur;              /* session of the frame being read */
	uint64_t ignored_frames;        /* frames of headerless sessions */
	uint64_t ignored_sessions;
	uint64_t last_ignored_session;
	struct gdamage *dmg;
	size_t ndmg, dmgcap;
	uint64_t dmg_total;
	struct rtprof_dump_stats stats;
	rtprof_gecko_progress_cb progress;
	void *progress_ctx;
	struct rtprof_gecko_symbols symopt;     /* by reference */
	struct rtprof_spill *spill;     /* every session's spilled streams */
};

static inline int
gecko_fail(struct gsess *g, int err)
{
	if (g->err == 0)
		g->err = err;
	return err;
}

/* Append @val to the growable array @arr (@n used, @cap allocated);
 * 0, or -ENOMEM latched in @g. */
#define VEC_PUSH(g, arr, n, cap, val)                                          \
	(gecko_grow((void **)&(arr), &(cap), (n) + 1, sizeof(*(arr))) != 0     \
	     ? gecko_fail((g), -ENOMEM)                                        \
	     : ((arr)[(n)++] = (val), 0))

/*
 * gecko_ms - the one tick -> profile time conversion: ms relative to
 * meta.startTime (the session's start). The rate is the HEADER's
 * ticks_per_second, or, when the TRAILER's stop pair is known, the rate
 * measured over the whole session (docs/wire-format.md, HEADER).
 */
/*
 * A clock rate times can be computed with: 1 kHz to 1 THz. A dump's rate
 * may be anything (1e-300, a denormal, NaN): 1e9 / rate is then infinite
 * and every time null in the profile, which the front-end rejects.
 */
#define CLOCK_RATE_MIN 1e3
#define CLOCK_RATE_MAX 1e12

static inline bool
clock_rate_ok(double ticks_per_second)
{
	return ticks_per_second >= CLOCK_RATE_MIN &&
	    ticks_per_second <= CLOCK_RATE_MAX;
}

/* gecko_ms()'s ns per tick (see there). */
static inline double
gecko_ns_per_tick(const struct gsess *g)
{
	double ns_per_tick = 1e9 / g->ticks_per_second;

	if (g->have_trailer && g->stop_ticks > g->start_ticks &&
	    g->stop_mono_ns > g->start_mono_ns) {
		double measured = rtprof_ns_diff(g->stop_mono_ns,
		    g->start_mono_ns) / (double)(g->stop_ticks -
		    g->start_ticks);

		if (clock_rate_ok(1e9 / measured))
			ns_per_tick = measured;
	}
	return ns_per_tick;
}

static inline double
gecko_ms(const struct gsess *g, uint64_t ticks)
{
	double dt = (double)(int64_t)(ticks - g->start_ticks);

	return dt * (g->nspt_ready ? g->nspt : gecko_ns_per_tick(g)) / 1e6;
}

/*
 * The sort key of tick @t: its signed distance from the session's start,
 * biased to unsigned, so that keys are in time order (gecko_ms()'s) even
 * when the clock wrapped past UINT64_MAX after the start.
 */
static inline uint64_t
time_key(const struct gsess *g, uint64_t t)
{
	return (t - g->start_ticks) ^ (1ull << 63);
}

/* The inverse of time_key(): the tick count of @key. */
static inline uint64_t
key_ticks(const struct gsess *g, uint64_t key)
{
	return (key ^ (1ull << 63)) + g->start_ticks;
}

static inline void
note_time(struct gsess *g, uint64_t t)
{
	if (!g->have_t) {
		g->first_t = g->last_t = t;
		g->have_t = true;
	}
	if (t < g->first_t)
		g->first_t = t;
	if (t > g->last_t)
		g->last_t = t;
}

/* ------------------------------------------------------------------ */
/* Writing: state and helpers                                           */

/* Per-thread output state: tables built while the thread is written. */
struct tout {
	struct strtab str;
	struct pmap names;              /* a marker's name -> str (tout_name) */
	int64_t frame_awake, frame_idle;        /* frameTable rows or -1 */
	int64_t stack_awake, stack_idle;
	int64_t nframes, nstacks;
};

static inline uint32_t
cat_index(const struct gsess *g, uint32_t id)
{
	if (id >= g->ndump_cat && id < RTPROF_WIRE_MAX_CATEGORIES &&
	    g->ucat[id] != 0)
		return g->ucat[id] - 1u;        /* declared (CATEGORY) */
	return id < g->ndump_cat ? id : g->cat_default;
}

/*
 * The index written for @g's category @idx. The front-end reads the
 * categories of the top-level meta only, so a sub-process's index is
 * mapped to the top-level category of the same name, else to its
 * default one (a sub-process with more categories than the top level
 * wrote indexes past the end of that list).
 */
static inline uint32_t
out_cat(const struct gsess *g, uint32_t idx)
{
	return g->cat_out != NULL && idx < g->ncat ? g->cat_out[idx] : idx;
}

#define RTPROF_PAUSE_SCHEMA "rtprof.Paused"

static inline bool
in_win(const struct gsess *g, double t)
{
	return t >= g->win_a && t <= g->win_b;
}

static inline bool
overlaps_win(const struct gsess *g, double t0, double t1)
{
	return t0 <= g->win_b && t1 >= g->win_a;
}

/* Stack and frame rows before a placeholder thread's backtrace tables
 * (write_placeholder). */
#define PLACEHOLDER_ROWS 2

/* The Gecko tables of a sampled thread (write_sampled). */
struct oframe {
	uint32_t loc;                   /* stringTable index */
	uint32_t cat;
	int32_t line;                   /* 0: unknown */
};

struct ostack {
	uint32_t prefix1;               /* prefix + 1, 0: root */
	uint32_t frame;
};

struct otables {
	struct oframe *f;
	size_t nf, fcap;
	struct ostack *s;
	size_t ns, scap;
	struct pmap fidx;               /* (location, category) -> f[] */
	struct pmap sidx;               /* (prefix1, frame) -> s[] */
	struct pmap raw;                /* raw (value, kind) -> f[] */
	uint32_t *map;                  /* raw stack node -> s[] */
};

/*
 * Inside how many "Audio callback" intervals a thread is, its samples
 * read back in time order (struct gsmp, GSMP_CB_* marks among them).
 * Return: true for a mark (not a sample).
 */
static inline bool
cb_depth_step(uint64_t *depth, const struct gsmp *s)
{
	if (s->stack == GSMP_CB_BEGIN) {
		++*depth;
		return true;
	}
	if (s->stack == GSMP_CB_END) {
		if (*depth != 0)
			--*depth;
		return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Functions shared between the stages, by file                         */

/* gecko.c */
int spill_put(struct gsess *g, struct rtprof_spill_stream **st, size_t recsize,
    const void *rec, size_t n);
int spill_get(struct gsess *g, struct rtprof_spill_stream *st, rtprof_spill_cb cb,
    void *ctx);
struct gthread *thread_get(struct gsess *g, int64_t tid);
const struct gschema *schema_of(const struct gsess *g, uint32_t id);
void schema_clear(struct gschema *sc);
void gsess_free(struct gsess *g);
const char *string_text(const struct gsess *g, uint64_t ref, char *buf,
    size_t size, size_t *len);
int64_t tout_intern(struct gsess *g, struct tout *to, const char *s, size_t n);

/* gecko_markers.c */
int marker_add(struct gsess *g, struct gthread *th, struct gmark *m);
void markers_close(struct gsess *g);
void marker_unspill(const unsigned char *rec, struct gmark *m,
    struct rtprof_val *vals);
int pend_flush(struct gsess *g, struct gthread *th);
struct rtprof_val *vals_copy(struct gsess *g, const struct rtprof_rec_view *r);

int marker_end_open(struct gsess *g, struct gthread *th, size_t i,
    uint64_t t1);

/* gecko_user.c */
int user_record(struct gsess *g, struct gthread *th,
    const struct rtprof_rec_view *r, struct gmark *m);
void user_open_close(struct gsess *g, const struct gthread *th,
    struct gmark *m);
void user_free(struct gsess *g);
bool user_marker_kind(unsigned kind);
void user_marker_data(struct gsess *g, struct json *j, struct tout *to,
    const struct gmark *m);
void write_user_schemas(struct json *j);

/* gecko_stacks.c */
int stacks_sample(struct gsess *g, const struct rtprof_rec_view *r);
int stacks_same(struct gsess *g, const struct rtprof_rec_view *r);
int stacks_kstack(struct gsess *g, const struct rtprof_rec_view *r);
int stacks_backtrace(struct gsess *g, struct gthread *th,
    const struct rtprof_rec_view *r);
uint64_t epoch_time(const struct gsess *g, uint16_t e);
int64_t raw_awake_find(const struct gthread *th, uint32_t node);
int callback_twins(struct gsess *g, struct gthread *th);
void scache_free(struct scache *c);

/* gecko_counters.c */
struct gcounter *counter_get(struct gsess *g, uint32_t id);
int counter_value(struct gsess *g, uint32_t id, uint64_t t, int64_t v);
void write_counters(struct gsess *g, struct json *j);
void write_counter_schemas(struct gsess *g, struct json *j);
void write_counter_markers(struct gsess *g, struct json *j, struct tout *to);

/* gecko_meta.c */
void gecko_sampling_obj(const struct gsess *g, struct json *j);
bool format_is_index(const char *f);
const char *field_format(const char *declared, uint32_t kind);
void sess_range(const struct gsess *g, double *start, double *end);
bool sess_presymbolicated(const struct gsess *g);
bool sess_sampled(const struct gsess *g);
void write_sample_units(struct json *j);
void write_meta(struct gsess *g, struct json *j, bool top);
void write_libs(struct gsess *g, struct json *j);
const char *gecko_basename(const char *p);

/* gecko_log.c */
void write_gathering_log(struct gsess *g, struct json *j);

/* gecko_samples.c */
void write_table_schema(struct json *j, const char *const *cols, size_t n);
void write_placeholder(struct gsess *g, struct json *j, struct gthread *th,
    struct tout *to, const char *tname, double reg, const struct otables *o);
void write_sampled(struct gsess *g, struct json *j, struct gthread *th,
    const struct otables *o, bool ok);

/* gecko_frames.c */
void otables_free(struct otables *o);
int build_tables(struct gsess *g, struct tout *to, struct gthread *th,
    struct otables *o);

/* gecko_thread.c */
void write_thread(struct gsess *g, struct json *j, struct gthread *th,
    bool main);
bool thread_kept(const struct gsess *g, const struct gthread *th);

#endif
