/*
 * dump_int.h - the dump reader's shared state (codec/dump_*.c; the API
 * is dump_reader.h).
 *
 * Pipeline, one file a stage:
 *   frame.c          bytes -> frames: sync, CRCs, resync (rtprof_scanner)
 *   dump_reader.c    the read loop: frames -> sessions and sequence
 *                    numbers checked, damage reported -> a payload decoder
 *   dump_records.c   DATA frames: the header, then every record (the
 *                    fixed-width walker of records.c, else the general
 *                    cursor below it) -> on_record
 *   dump_frames.c    every other frame kind: one msgpack object decoded
 *                    -> on_header, on_modules, on_thread, ...
 *   dump_msgpack.c   untrusted msgpack: the structural check before
 *                    msgpack-c (mp_check), unpacking, typed getters
 *
 * Context: any thread; each call owns all of its state.
 */
#ifndef RTPROF_DUMP_INT_H
#define RTPROF_DUMP_INT_H

#include <errno.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "dump_reader.h"
#include "frame.h"

#define READ_PIECE (1u << 20)
#define SESSION_SLOTS 8
#define ARENA_BLOCK (64u << 10)

/* ------------------------------------------------------------------ */
/* Arena for the strings and arrays handed to one frame's callbacks.  */

struct arena_blk {
	struct arena_blk *next;
	size_t cap;
	size_t used;
	max_align_t data[];
};

struct arena {
	struct arena_blk *head;
};

/* ------------------------------------------------------------------ */
/* Reader state.                                                      */

struct sess_slot {
	uint64_t index;         /* session_index; 0 = free slot */
	uint64_t stamp;         /* last use, for eviction */
	uint32_t id;
	uint32_t next_seq;
};

struct reader {
	const struct rtprof_dump_cb *cb;
	struct rtprof_dump_stats *st;
	struct rtprof_dump_stats own_st;
	struct rtprof_scanner sc;
	struct arena ar;
	msgpack_unpacked up;
	uint64_t expect_off;    /* stream offset just after the last frame */
	uint64_t bad_seen;      /* sc.bad_frames already reported */
	uint64_t stamp;
	struct sess_slot sess[SESSION_SLOTS];
	bool any_frame;         /* a frame of a readable version was seen */
	bool newer_reported;
	uint32_t newer_session;
	/* SAMPLE frames of the record being delivered. */
	uint64_t frames[RTPROF_REC_MAX_FRAMES];
	uint64_t label_mask[RTPROF_REC_MASK_WORDS];
};

/* Per-frame decode state: the first problem found, or an allocation error. */
struct dec {
	struct reader *r;
	const char *bad;
	int err;
};

static inline void
dec_fail(struct dec *d, const char *why)
{
	if (d->bad == NULL)
		d->bad = why;
}

/* Arena memory for the frame being decoded (dump_reader.c). */
void *dump_arena_alloc(struct arena *a, size_t n);

static inline void *
dec_alloc(struct dec *d, size_t n)
{
	void *p = dump_arena_alloc(&d->r->ar, n);

	if (p == NULL)
		d->err = -ENOMEM;
	return p;
}

struct cur {
	const unsigned char *p;
	const unsigned char *e;
};

static inline uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static inline uint64_t
be_n(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* ------------------------------------------------------------------ */
/* Functions shared between the stages, by file                         */

/* dump_reader.c */
void dump_arena_reset(struct arena *a);
int dump_report(struct reader *r, enum rtprof_damage_kind kind, uint64_t offset,
    uint64_t length, uint64_t count, const struct sess_slot *s,
    const char *msg);

/* dump_msgpack.c */
const char *mp_check(const unsigned char *p, size_t n, size_t *used);
const char *mp_unpack_one(struct reader *r, const unsigned char *p, size_t n,
    msgpack_object *o, size_t *used);
bool mp_key_is(const msgpack_object *k, const char *name);
uint64_t obj_u64(struct dec *d, const msgpack_object *o);
int64_t obj_i64(struct dec *d, const msgpack_object *o);
uint64_t obj_max(struct dec *d, const msgpack_object *o, uint64_t max);
double obj_f64(struct dec *d, const msgpack_object *o);
bool obj_bool(struct dec *d, const msgpack_object *o);
const char *obj_str(struct dec *d, const msgpack_object *o, size_t *len);
const char *obj_str_or_nil(struct dec *d, const msgpack_object *o);
bool obj_array(struct dec *d, const msgpack_object *o, uint32_t min, uint32_t max,
    const msgpack_object **a, uint32_t *n);
bool obj_map(struct dec *d, const msgpack_object *o, const msgpack_object_kv **kv,
    uint32_t *n);

/* dump_records.c */
int frame_data(struct reader *r, const struct rtprof_frame *f,
    const struct sess_slot *s);

/* dump_frames.c */
int frame_object(struct reader *r, const struct rtprof_frame *f,
    const struct sess_slot *s);

#endif
