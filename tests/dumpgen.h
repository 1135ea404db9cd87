/*
 * dumpgen.h - write rtprof dumps without the recorder: deterministic test
 * fixtures and synthetic benchmark input (docs/wire-format.md).
 *
 * Test and bench support only: built on codec/ (frame.h, wire.h) and
 * msgpack-c, never on rt/ or core/. Frames are written in the recorder's
 * own encodings (fixed-width records, SAMPLE with an array16 header), with
 * per-session sequence numbers and CRCs, through a caller's sink.
 *
 * Usage: dg_open(), dg_header(), then any of dg_modules/dg_thread/
 * dg_string/dg_schema/dg_counter and the dg_rec_* records (buffered per
 * thread into DATA frames of at most `chunk_bytes`; dg_flush() ends the
 * current DATA frame of every thread), dg_trailer(), dg_close().
 * Times are ticks; dg_header() fixes the tick rate.
 *
 * Context: one thread per struct dg; no shared state.
 */
#ifndef RTPROF_DUMPGEN_H
#define RTPROF_DUMPGEN_H

#include <stddef.h>
#include <stdint.h>

/* Sink: write all @n bytes; return 0 or a negative errno. */
typedef int (*dg_write_fn)(void *ctx, const void *p, size_t n);

struct dg;

struct dg_header {
	int64_t pid, ppid;
	const char *process;            /* "dumpgen" when NULL */
	const char *exe;                /* "" when NULL */
	const char *machine;            /* "x86_64" when NULL */
	double ticks_per_second;        /* 1e9 when 0 */
	uint64_t start_ticks;
	int64_t start_mono_ns, start_wall_ns;
	const char *mode;               /* "stream" when NULL */
	uint64_t sample_interval_us;    /* 1000 when 0 */
	uint64_t generation;            /* 1 when 0 */
	/* Added after the first version (append only): */
	uint32_t session;               /* frame session id; 0: derived
					 * from pid, generation and how many
					 * sessions this generator wrote */
	const char *const *categories;  /* names (color "blue"); NULL:
					 * rtprof's own (wire.h) */
	size_t ncategories;
};

struct dg_module {
	const char *path;
	uint64_t start, end, offset;
	const unsigned char *build_id;
	size_t build_id_len;
};

/* One field of a marker schema: kind 1 i64, 2 u64, 3 f64, 4 static, 5 str. */
struct dg_field {
	const char *key, *label, *format;
	unsigned kind;
};

/*
 * dg_open - a generator writing through @write. @chunk_bytes: the largest
 * record payload of one DATA frame (65536 when 0).
 * Return: NULL when out of memory.
 */
struct dg *dg_open(dg_write_fn write, void *ctx, size_t chunk_bytes);

/* Flushes every thread's pending records; frees @g. Return: 0 or the first
 * error of the sink (latched; every call after an error does nothing). */
int dg_close(struct dg *g);

/* A sink writing to a file descriptor (@ctx: pointer to the int fd). */
int dg_write_fd(void *ctx, const void *p, size_t n);

/* Bytes handed to the sink so far. */
uint64_t dg_bytes(const struct dg *g);

/* A sink appending to memory (@ctx: a struct dg_mem, zeroed to start;
 * free(p) when done). */
struct dg_mem {
	unsigned char *p;
	size_t n, cap;
};
int dg_write_mem(void *ctx, const void *p, size_t n);

/* The session id of the current session's frames (0 before dg_header). */
uint32_t dg_session(const struct dg *g);

int dg_header(struct dg *g, const struct dg_header *h);
int dg_modules(struct dg *g, const struct dg_module *m, size_t n);
/* flags: bit 0 RT, bit 1 main, bit 2 sampler. @unregister_ticks 0: alive. */
int dg_thread(struct dg *g, int64_t tid, const char *name, unsigned flags,
    uint64_t register_ticks, uint64_t unregister_ticks);
/* An exited thread's last THREAD frame, after its pending DATA frame: its
 * totals (records so far; no drops), and the trailer leaves it out (as
 * the recorder, once the thread's chunks are back). A later record of
 * @tid starts new counts. -EINVAL outside a session. */
int dg_thread_settle(struct dg *g, int64_t tid, const char *name,
    unsigned flags, uint64_t register_ticks, uint64_t unregister_ticks);
/* Declare the static string @ref (any nonzero id) with @text. */
int dg_string(struct dg *g, uint64_t ref, const char *text);
int dg_schema(struct dg *g, unsigned id, const char *name, unsigned category,
    const struct dg_field *fields, size_t nfields);
int dg_counter(struct dg *g, unsigned id, const char *name,
    const char *category, const char *description);
/* dg_schema() with the display bits (0: marker chart and table, as the
 * recorder) and labels (NULL: nil). */
int dg_schema_ex(struct dg *g, unsigned id, const char *name,
    unsigned category, unsigned display, const char *tooltip,
    const char *table, const char *chart, const struct dg_field *fields,
    size_t nfields);
/* EVENT frame: "sink_error" carries @errnum and @message, "limit_reached"
 * carries @max_bytes, any other @what only ticks and what. */
int dg_event(struct dg *g, uint64_t ticks, const char *what, int64_t errnum,
    const char *message, uint64_t max_bytes);

/* Records, appended to thread @tid's pending DATA frame. */
int dg_rec_instant(struct dg *g, int64_t tid, uint64_t t, uint64_t name_ref,
    unsigned category);
int dg_rec_begin(struct dg *g, int64_t tid, uint64_t t, uint64_t name_ref,
    unsigned category);
int dg_rec_end(struct dg *g, int64_t tid, uint64_t t, uint64_t name_ref,
    unsigned category);
int dg_rec_interval(struct dg *g, int64_t tid, uint64_t t0, uint64_t t1,
    uint64_t name_ref, unsigned category);
/* Typed marker: @vals are raw 64-bit values for kinds 1-4 (a kind-4 value
 * is a string ref); kind-5 fields take @strs[i] instead. */
int dg_rec_typed(struct dg *g, int64_t tid, unsigned phase, uint64_t t0,
    uint64_t t1, unsigned type, const unsigned *kinds, const uint64_t *vals,
    const char *const *strs, size_t nvals);
int dg_rec_counter(struct dg *g, int64_t tid, uint64_t t, unsigned id,
    int64_t value);
int dg_rec_sleep(struct dg *g, int64_t tid, uint64_t t);
int dg_rec_wake(struct dg *g, int64_t tid, uint64_t t);
/*
 * SAMPLE of @sampled_tid, written into the stream of thread @tid (the
 * sampler). @frames outermost first; frame i is a label (a string ref)
 * when bit i of @label_mask is set, else a native address.
 */
int dg_rec_sample(struct dg *g, int64_t tid, uint64_t t, int64_t sampled_tid,
    uint64_t cpu_ns, unsigned flags, const uint64_t *frames,
    const uint64_t *label_mask, size_t nframes);
int dg_rec_same(struct dg *g, int64_t tid, uint64_t t, int64_t sampled_tid,
    uint64_t cpu_ns, unsigned flags);
int dg_rec_overhead(struct dg *g, int64_t tid, uint64_t t0, uint64_t t1,
    uint64_t lock_ns, uint64_t threads_ns, uint64_t counters_ns,
    uint64_t nthreads);

/* Events thread @tid dropped at the source since its previous DATA frame:
 * sent with its next DATA frame (which must have a record). */
int dg_drops(struct dg *g, int64_t tid, uint64_t full, uint64_t nested);

/* Ends the pending DATA frame of every thread. */
int dg_flush(struct dg *g);
int dg_pause(struct dg *g, uint64_t start_ticks, uint64_t end_ticks);
int dg_values(struct dg *g, uint64_t t, const uint32_t *ids,
    const int64_t *values, size_t n);
/* Flushes, then writes the TRAILER with per-thread record counts. */
int dg_trailer(struct dg *g, uint64_t stop_ticks, int64_t stop_mono_ns);

#endif /* RTPROF_DUMPGEN_H */
