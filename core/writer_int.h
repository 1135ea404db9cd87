/*
 * writer_int.h - what the writer's files share (core/writer*.c): the batch
 * a round builds under the lock and writes without it, its items, and the
 * functions one part calls in another.
 *
 *   writer.c       the writer thread: collect chunks and descriptor frames
 *                  into the batch (lock held), write it, give chunks back
 *   writer_desc.c  descriptor frames: HEADER, MODULES, THREAD, SCHEMA,
 *                  COUNTER, CATEGORY, PAUSE, VALUES, link EVENTs
 *   writer_out.c   writing the batch to the session's descriptor: frames,
 *                  CRCs, STRING frames for new names, DATA, TRAILER
 *   writer_fds.c   the writer's private file table under `rtprof record`
 *
 * Context: every function here runs on the writer thread unless it says
 * otherwise; the batch is the writer thread's own.
 */
#ifndef RTPROF_CORE_WRITER_INT_H
#define RTPROF_CORE_WRITER_INT_H

#include <stdint.h>

#include <msgpack.h>

#include "core.h"
#include "../codec/frame.h"
#include "../codec/records.h"

enum witem_kind {
	W_FRAME,    /* a ready payload in `buf` */
	W_DATA,     /* a chunk range */
	W_TRAILER,  /* built at write time (needs final byte counts) */
	W_DUMPED    /* marker: the dump request is served when reached */
};

struct witem {
	enum witem_kind kind;
	uint8_t frame;               /* frame kind for W_FRAME */
	struct rtprof__session *s;
	struct rtprof__chunk *k;     /* W_DATA */
	uint64_t from, to;           /* commit words */
	int release;                 /* chunk goes back to the pool */
	struct rtprof__thread *th;   /* W_DATA: owner, for chunks_alive */
	msgpack_sbuffer buf;         /* W_FRAME payload */
	/* A THREAD frame that settles a thread's counts (free_exited()):
	 * if it is not written (size cap), they go back to the trailer. */
	int settles;
	struct rtprof__acct settled;
};

struct batch {
	struct witem *v;
	size_t n, cap;
};

/* Writer-owned set of interned static string addresses (per session). */
struct strset {
	uint64_t *slots;
	size_t cap, n;
};


/* Sink statistics are written only by this thread and read by
 * rtprof_session_status_get() with relaxed loads. */
#define SINK_SET(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)

/* The round's batch: filled under the lock (collect()), written without
 * it (rtprof__write_batch()), emptied under it again (finish_batch()). */
extern struct batch rtprof__batch;

/* Records of a commit word (its high half). */
static inline uint32_t
word_nrec(uint64_t w)
{
	return (uint32_t)(w >> 32);
}

/* writer.c */
struct witem *rtprof__frame_add(struct rtprof__session *s, uint8_t kind,
    msgpack_packer *pk);
int rtprof__acct_reserve(struct rtprof__session *s);
void rtprof__unrecord(struct rtprof__session *s,
    const struct rtprof__thread *th, uint32_t n);

/* writer_desc.c (lock held) */
void rtprof__pack_str(msgpack_packer *pk, const char *s);
void rtprof__pack_key(msgpack_packer *pk, const char *k);
void rtprof__desc_header(const rtprof_lock *lk, struct rtprof__session *s);
void rtprof__desc_modules_update(struct rtprof__session *s);
int rtprof__desc_thread(struct rtprof__session *s,
    const struct rtprof__thread *th, const struct rtprof__acct *a);
void rtprof__desc_schema(struct rtprof__session *s,
    const struct rtprof__schema_desc *d);
void rtprof__desc_counter(struct rtprof__session *s,
    const struct rtprof__counter_desc *d);
void rtprof__desc_category(struct rtprof__session *s,
    const struct rtprof__category *k, uint32_t i);
void rtprof__desc_pauses(struct rtprof__session *s);
void rtprof__desc_values(const rtprof_lock *lk, struct rtprof__session *s,
    int force);
void rtprof__desc_link_event(struct rtprof__session *s);

/* writer_out.c (lock NOT held) */
void rtprof__write_batch(void);

/* writer_fds.c (lock held) */
void rtprof__private_serve(const rtprof_lock *lk);

#endif
