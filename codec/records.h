/*
 * records.h - walk the records of a DATA frame without allocating.
 *
 * The recorder writes records in a fixed-width subset of msgpack
 * (docs/wire-format.md, "Records"). This walker reads exactly that subset,
 * checks every bound, and stops at the first byte it does not expect. The
 * writer uses it on its own records (to find timestamps and static string
 * addresses at tens of millions of records per second); decoders that want
 * general msgpack objects use msgpack-c (codec/dump_records.c,
 * dump_frames.c).
 *
 * Context: any thread; no shared state.
 */
#ifndef RTPROF_RECORDS_H
#define RTPROF_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

enum rtprof_val_kind {
	RTPROF_VAL_I64 = 1,
	RTPROF_VAL_U64 = 2,
	RTPROF_VAL_F64 = 3,
	RTPROF_VAL_STRREF = 4, /* static string address */
	RTPROF_VAL_STR = 5     /* copied string */
};

struct rtprof_val {
	enum rtprof_val_kind kind;
	union {
		int64_t i;
		uint64_t u;
		double d;
		uint64_t ref;
		struct {
			const char *p;
			uint32_t n;
		} str;
	} v;
};

#define RTPROF_REC_MAX_VALS 16

/* One decoded record. */
struct rtprof_rec_view {
	uint8_t kind;         /* enum rtprof_rec_kind */
	uint8_t phase;        /* REC_TYPED */
	uint8_t category;     /* INSTANT/BEGIN/END/INTERVAL */
	uint16_t id;          /* REC_TYPED: marker type; REC_COUNTER: counter */
	uint64_t t0, t1;      /* ticks; t1 for INTERVAL and typed intervals */
	uint64_t name;        /* static string address (marker name) */
	int64_t value;        /* REC_COUNTER */
	unsigned nvals;       /* REC_TYPED fields */
	struct rtprof_val vals[RTPROF_REC_MAX_VALS];
	/* REC_SAMPLE / REC_SAME: the sampled thread, its CPU time since its
	 * previous sample, RTPROF_SAMPLE_* flags. REC_BACKTRACE: t0 (the
	 * start of the marker it belongs to), flags (RTPROF_BACKTRACE_*) and
	 * frames, all of them return addresses or labels.
	 * REC_KSTACK: t0, tid (as the SAMPLE after it) and frames, kernel
	 * code addresses (never labels), the first the innermost's caller
	 * chain's outermost, the last where the thread went off CPU.
	 * REC_SAMPLE, REC_BACKTRACE and REC_KSTACK: nframes frames,
	 * outermost first, stored into the caller's arrays when it sets
	 * `frames` / `label_mask` before decoding (decoders never change these
	 * two pointers; NULL: checked, not stored). A set bit of label_mask
	 * marks a label (a STRREF); the other frames are native addresses. */
	int64_t tid;
	uint64_t cpu_ns;
	uint8_t flags;
	unsigned nframes;
	uint64_t *frames;       /* RTPROF_REC_MAX_FRAMES entries */
	uint64_t *label_mask;   /* RTPROF_REC_MASK_WORDS entries */
	/* REC_ZONE_END, REC_ZONE_ARG: the zone (its ZONE_BEGIN's t).
	 * REC_ZONE_ARG: what (RTPROF_ZONE_ARG_*) in `phase`, the value in
	 * vals[0] (nvals 1). REC_TEXT: the text in vals[0]; phase 1 for an
	 * interval (t0..t1), 0 for an instant. REC_FLOW: the flow id, and
	 * `flags` 1 for the flow's last step. REC_FRAME: the frame budget
	 * in ns (0: none) in `value`. */
	uint64_t zone;
	uint64_t flow;
	/* REC_OVERHEAD: ns spent locking, sampling threads, sampling
	 * counters, and the number of threads sampled. */
	uint64_t overhead[4];
	size_t size;          /* bytes of the record */
};

#define RTPROF_REC_MASK_WORDS ((RTPROF_REC_MAX_FRAMES + 63) / 64)

/* Is frame @i of a decoded SAMPLE record a label (else a native address)? */
static inline int
rtprof_rec_frame_is_label(const uint64_t *label_mask, unsigned i)
{
	return (int)(label_mask[i / 64] >> (i % 64) & 1);
}

/*
 * rtprof_rec_next - decode the record at @p (@n bytes available).
 * Return: 1 with *@r filled, 0 at @n == 0, -EBADMSG when the bytes are not a
 * well-formed record (truncated, unknown kind, wrong types).
 */
int rtprof_rec_next(const unsigned char *p, size_t n, struct rtprof_rec_view *r);

#endif /* RTPROF_RECORDS_H */
