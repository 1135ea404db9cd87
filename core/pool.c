/*
 * pool.c - the chunk pool under one global memory limit.
 *
 * At session start the pool is filled with memory_limit / chunk bytes chunks
 * (allocated and touched then, never on a recording thread) and kept across
 * sessions; a session with another chunk size or a lower limit frees what it
 * does not need. All functions run under the core mutex; the owner side of
 * the chunk protocol is in rt/rt_record.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static size_t
chunk_bytes(uint32_t data)
{
	return (offsetof(struct rtprof__chunk, data) + data + RTPROF__CACHELINE - 1) &
	    ~(size_t)(RTPROF__CACHELINE - 1);
}

static struct rtprof__chunk *
chunk_new(struct rtprof__core *c)
{
	/* aligned_alloc + memset: every page is touched now, not on an RT
	 * thread's first write, and padding is zero (no uninitialised memory
	 * reaches a dump). */
	struct rtprof__chunk *k = aligned_alloc(RTPROF__CACHELINE, c->chunk_bytes);

	if (k == NULL)
		return NULL;
	memset(k, 0, c->chunk_bytes);
	k->size = c->chunk_size;
	c->nchunks++;
	c->memory += c->chunk_bytes;
	return k;
}

/* Frees the first chunk of the free list (of the pool's current size). */
static void
free_one(struct rtprof__core *c)
{
	struct rtprof__chunk *k = c->free;

	c->free = k->next;
	c->nfree--;
	c->nchunks--;
	c->memory -= c->chunk_bytes;
	free(k);
}

/*
 * rtprof__pool_setup - preallocate the pool for a new session: as many
 * chunks as fit in the memory limit, all allocated and touched here.
 * Context: control thread, lock held; may allocate.
 * Return: 0, -ENOMEM (not even one chunk).
 */
int
rtprof__pool_setup(const rtprof_lock *lk, const struct rtprof_settings *s)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	uint64_t target;

	if (c->chunk_size != s->chunk_size) {
		/* Chunks of the old size still in use come back later and are
		 * freed by rtprof__pool_put(). */
		while (c->free != NULL)
			free_one(c);
		c->chunk_size = s->chunk_size;
		c->chunk_bytes = chunk_bytes(s->chunk_size);
	}
	target = s->memory_limit / c->chunk_bytes;
	if (target == 0)
		target = 1;
	while (c->nchunks > target && c->free != NULL)
		free_one(c);
	while (c->nchunks < target) {
		struct rtprof__chunk *k = chunk_new(c);

		if (k == NULL)
			break;
		k->next = c->free;
		c->free = k;
		c->nfree++;
	}
	return c->nfree > 0 || c->nchunks > 0 ? 0 : -ENOMEM;
}

/* Context: collector or control thread, lock held. */
void
rtprof__pool_put(const rtprof_lock *lk, struct rtprof__chunk *k)
{
	struct rtprof__core *c = rtprof__core_get(lk);

	if (k->size != c->chunk_size ||
	    (c->running != NULL && c->nchunks * c->chunk_bytes > c->running->set.memory_limit)) {
		/* Wrong size for this session, or over a lowered limit. */
		c->nchunks--;
		c->memory -= chunk_bytes(k->size);
		free(k);
		return;
	}
	k->next = c->free;
	c->free = k;
	c->nfree++;
}

/*
 * rtprof__pool_get - a free chunk. The pool was filled at session start;
 * nothing is allocated here.
 * Context: collector or control thread, lock held.
 * Return: NULL when every chunk is in use.
 */
struct rtprof__chunk *
rtprof__pool_get(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	struct rtprof__chunk *k = c->free;

	if (k == NULL)
		return NULL;
	c->free = k->next;
	c->nfree--;
	return k;
}

/*
 * rtprof__refill - top up @th's empty ring to @want chunks.
 * Context: collector or control thread, lock held (the one producer of the
 * empty ring at a time; the owner consumes concurrently).
 */
void
rtprof__refill(const rtprof_lock *lk, struct rtprof__thread *th, uint32_t want)
{
	uint32_t have = ck_ring_size(&th->empty);
	/* Bounded by what is missing at entry: the owner takes chunks while
	 * this runs, and an unbounded top-up could hand it more chunks in one
	 * round than its full ring holds (rt/rt_internal.h). */
	uint32_t n = have < want ? want - have : 0;

	while (n-- > 0) {
		struct rtprof__chunk *k = rtprof__pool_get(lk);

		if (k == NULL)
			return;
		k->flushed = 0;
		RTPROF__HANDOVER_RELEASE(k);
		if (!ck_ring_enqueue_spsc(&th->empty, th->empty_buf, k)) {
			rtprof__pool_put(lk, k);
			return;
		}
	}
}

/*
 * rtprof__chunk_snapshot - the commit word of a chunk the owner may still
 * be writing. Context: collector, lock held.
 */
uint64_t
rtprof__chunk_snapshot(struct rtprof__chunk *k)
{
	/* acquire: pairs with the release in rtprof__close(): every record
	 * counted by the word is fully written. */
	return __atomic_load_n(&k->commit.word, __ATOMIC_ACQUIRE);
}
