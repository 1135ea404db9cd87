/*
 * pool.c - the chunk pool under one global memory limit.
 *
 * The pool holds at most memory_limit / chunk bytes chunks, allocated and
 * touched on demand (or all at session start with settings.prefault), never
 * on a recording thread, and kept across sessions; a session with another chunk size or a lower limit frees what it
 * does not need. All functions run under the core mutex; the owner side of
 * the chunk protocol is in rt/rt_record.c.
 *
 * With settings.lock_memory, chunks are page-aligned whole pages (no page
 * shared with other memory, so that munlock at their free unlocks nothing
 * else) and locked (mlock) on rtprof's threads before a thread gets one:
 * a real-time thread then never faults on chunk memory, even under memory
 * pressure. Chunks of the other kind that come back are freed.
 *
 * A session's target counts only the chunks of its own size: chunks of an
 * earlier session's size that threads still hold (in their empty ring: an
 * idle thread keeps its prefill for as long as it lives; or as their current
 * chunk) are freed when they come back, and must not stand in for chunks of
 * the new size meanwhile (with a one-chunk limit the new session would have
 * none it can use).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core.h"

/*
 * Under valgrind memcheck, a chunk's data area is marked undefined each time
 * it is handed to a thread: the pool zeroes chunks once, and a reused chunk
 * holds the bytes of its previous records, so without this a record that
 * leaves a byte unwritten would send defined zeros or stale bytes and
 * memcheck could not tell. With it, such a byte reaches writev(2) undefined
 * and memcheck reports it, for every thread's chunks including the
 * sampler's (tests/test_memcheck.sh). A no-op outside valgrind, and in
 * builds without valgrind's header.
 */
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define POOL_UNDEFINED(p, n) VALGRIND_MAKE_MEM_UNDEFINED((p), (n))
#endif
#endif
#ifndef POOL_UNDEFINED
#define POOL_UNDEFINED(p, n) ((void)(p), (void)(n))
#endif

/* rtprof__chunk.alloc bits. Under the core mutex. */
#define POOL_PAGED 1u           /* page-aligned, whole pages */
#define POOL_LOCKED 2u          /* mlock'ed */
#define POOL_MAPPED 4u          /* its own mapping on huge pages (munmap) */
#define POOL_HUGETLB 8u         /* ... from the hugetlbfs pool */
#define POOL_LAZY 16u           /* fresh zero pages, not all touched yet */

#define POOL_HUGE (2u << 20)    /* x86-64 and arm64 (4 KiB granule) */

static size_t
page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (size_t)p : 4096;
}

/* Bytes allocated for a chunk of @data bytes; @paged: whole pages. */
static size_t
chunk_bytes(uint32_t data, int paged)
{
	size_t align = paged ? page_size() : RTPROF__CACHELINE;

	return (offsetof(struct rtprof__chunk, data) + data + align - 1) &
	    ~(align - 1);
}

/*
 * Chunks allocated, per data size: the current size and the sizes of
 * earlier sessions whose chunks are still out. More sizes than this out at
 * once (threads holding chunks of 8 older sizes) and chunk_new() refuses
 * (fewer chunks, never more memory). Under the core mutex.
 */
#define POOL_SIZES 8
static struct {
	uint32_t size;
	uint64_t n;
} pool_sizes[POOL_SIZES];

/* The count of chunks of @size; @add: create it (NULL: no room). */
static uint64_t *
size_count(uint32_t size, int add)
{
	int room = -1;

	for (int i = 0; i < POOL_SIZES; i++) {
		if (pool_sizes[i].n != 0 && pool_sizes[i].size == size)
			return &pool_sizes[i].n;
		if (pool_sizes[i].n == 0 && room < 0)
			room = i;
	}
	if (!add || room < 0)
		return NULL;
	pool_sizes[room].size = size;
	return &pool_sizes[room].n;
}

/* Chunks of the pool's current size, in any state. */
static uint64_t
ncurrent(const struct rtprof__core *c)
{
	uint64_t *n = size_count(c->chunk_size, 0);

	return n != NULL ? *n : 0;
}

/*
 * Huge pages for chunks of at least 2 MiB: records are written
 * sequentially through every chunk in turn, more memory than the TLB
 * covers in 4 KiB pages, so each 4 KiB page crossing is a page walk (the
 * p99.99 tail, BENCHMARKS.md). A chunk gets a mapping of its own, 2 MiB
 * aligned: from the reserved hugetlbfs pool (MAP_HUGETLB) when the system
 * has one, else transparent huge pages asked with MADV_HUGEPAGE over its
 * whole 2 MiB extents (the rest stays on 4 KiB pages); memset then
 * faults the huge pages in, on this thread, never on a recording one.
 * RTPROF_HUGEPAGES=0 in the environment: never (plain allocation).
 */
static size_t
round_up(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

static int
huge_wanted(const struct rtprof__core *c)
{
	static int env = -1;

	if (env < 0) {
		const char *e = getenv("RTPROF_HUGEPAGES");

		env = e == NULL || strcmp(e, "0") != 0;
	}
	return env && c->chunk_bytes >= POOL_HUGE;
}

/* A 2 MiB-aligned mapping of @len bytes on transparent huge pages. */
static void *
map_thp(size_t len)
{
	size_t span = len + POOL_HUGE;
	char *m = mmap(NULL, span, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *a;

	if (m == MAP_FAILED)
		return NULL;
	a = (char *)round_up((uintptr_t)m, POOL_HUGE);
	if (a > m)
		munmap(m, (size_t)(a - m));
	if (m + span > a + len)
		munmap(a + len, (size_t)(m + span - (a + len)));
	(void)madvise(a, len / POOL_HUGE * POOL_HUGE, MADV_HUGEPAGE);
	return a;
}

/* A chunk on huge pages (k->alloc says which), or NULL. */
static struct rtprof__chunk *
chunk_map(const struct rtprof__core *c, size_t len)
{
	void *m;

#ifdef MAP_HUGETLB
	m = mmap(NULL, round_up(len, POOL_HUGE), PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (m != MAP_FAILED) {
		((struct rtprof__chunk *)m)->alloc = POOL_MAPPED | POOL_HUGETLB;
		return m;
	}
#endif
	(void)c;
	if ((m = map_thp(len)) == NULL)
		return NULL;
	((struct rtprof__chunk *)m)->alloc = POOL_MAPPED;
	return m;
}

/* A chunk in fresh pages of its own (POOL_LAZY: untouched), or NULL.
 * Context: collector or control thread, lock held (chunk_new). */
static struct rtprof__chunk *
chunk_map_lazy(const struct rtprof__core *c)
{
	void *m = mmap(NULL, round_up(c->chunk_bytes, page_size()),
	    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return NULL;
	((struct rtprof__chunk *)m)->alloc = POOL_MAPPED | POOL_LAZY;
	return m;
}

/* Fault in every page of lazy chunk @k (a read and a write of one byte
 * per page: its contents do not change), before any thread owns it.
 * Context: collector or control thread, lock held. */
static void
chunk_touch(struct rtprof__chunk *k, size_t bytes)
{
	volatile unsigned char *p = (volatile unsigned char *)k;
	size_t pg = page_size();

	for (size_t o = 0; o < bytes; o += pg)
		p[o] = p[o];
	k->alloc &= ~POOL_LAZY;
}

/* Release @k's memory, @bytes of it. */
static void
chunk_release(struct rtprof__chunk *k, size_t bytes)
{
	if (k->alloc & POOL_HUGETLB)
		munmap(k, round_up(bytes, POOL_HUGE));
	else if (k->alloc & POOL_MAPPED)
		munmap(k, round_up(bytes, page_size()));
	else
		free(k);
}

/* Frees @k (of any size). */
static void
chunk_free(struct rtprof__core *c, struct rtprof__chunk *k)
{
	uint64_t *n = size_count(k->size, 0);

	size_t bytes = chunk_bytes(k->size, (k->alloc & POOL_PAGED) != 0);

	if (n != NULL)
		(*n)--;
	c->nchunks--;
	c->memory -= bytes;
	if (k->alloc & POOL_LOCKED)
		munlock(k, bytes);
	chunk_release(k, bytes);
}

static struct rtprof__chunk *
chunk_new(struct rtprof__core *c)
{
	uint64_t *n = size_count(c->chunk_size, 1);
	struct rtprof__chunk *k;

	if (n == NULL)
		return NULL;
	/* Zero memory: padding never carries uninitialised bytes into a
	 * dump. Huge pages and locked chunks are touched now (memset,
	 * mlock); plain chunks are fresh pages of their own, faulted in as
	 * a thread writes them (a short process touches what it records,
	 * not its whole prefill), and touched before a real-time thread
	 * gets one (rtprof__refill). */
	if (huge_wanted(c) && (k = chunk_map(c, c->chunk_bytes)) != NULL) {
		unsigned a = k->alloc;

		memset(k, 0, c->chunk_bytes);
		k->alloc = a;
	} else if (!c->lock_memory && (k = chunk_map_lazy(c)) != NULL) {
		/* nothing: zero until written */
	} else {
		k = aligned_alloc(c->lock_memory ? page_size() :
		    RTPROF__CACHELINE, c->chunk_bytes);
		if (k == NULL)
			return NULL;
		memset(k, 0, c->chunk_bytes);
	}
	k->size = c->chunk_size;
	k->alloc |= c->lock_memory ? POOL_PAGED : 0;
	(*n)++;
	c->nchunks++;
	c->memory += c->chunk_bytes;
	return k;
}

/*
 * How many chunks a session with memory limit @limit keeps: as many as fit,
 * and at least one (a limit below one chunk's allocation, e.g. exactly its
 * data size, still records through one chunk).
 */
static uint64_t
pool_target(uint64_t limit, size_t bytes)
{
	uint64_t n = limit / bytes;

	return n != 0 ? n : 1;
}

/*
 * With lock_memory, lock @k in RAM once (its pages are its own). A refusal
 * (RLIMIT_MEMLOCK) leaves it touched and unlocked, counted.
 * Context: collector or control thread, lock held.
 */
static void
chunk_lock(struct rtprof__core *c, struct rtprof__chunk *k)
{
	if (!(k->alloc & POOL_PAGED) || (k->alloc & POOL_LOCKED))
		return;
	if (mlock(k, c->chunk_bytes) == 0)
		k->alloc |= POOL_LOCKED;
	else
		c->lock_failures++;
}

/* Whether @k is of the kind the pool now hands out. */
static int
chunk_fits(const struct rtprof__core *c, const struct rtprof__chunk *k)
{
	return k->size == c->chunk_size &&
	    ((k->alloc & POOL_PAGED) != 0) == (c->lock_memory != 0);
}

/* One more chunk (allocated and touched) on the free list.
 * Return: 0, -1 none. */
static int
pool_grow(struct rtprof__core *c)
{
	struct rtprof__chunk *k = chunk_new(c);

	if (k == NULL)
		return -1;
	k->next = c->free;
	c->free = k;
	c->nfree++;
	return 0;
}

/* Frees the first chunk of the free list (of the pool's current size). */
static void
free_one(struct rtprof__core *c)
{
	struct rtprof__chunk *k = c->free;

	c->free = k->next;
	c->nfree--;
	chunk_free(c, k);
}

/*
 * rtprof__pool_setup - the pool for a new session: with s->prefault, as
 * many chunks as fit in the memory limit, all allocated and touched here;
 * otherwise at least one, the rest allocated on demand by
 * rtprof__pool_get() under the same limit (a process that records little
 * costs little: /bin/true takes the chunks of its two threads' prefill).
 * Context: control thread, lock held; may allocate.
 * Return: 0, -ENOMEM (not even one chunk).
 */
int
rtprof__pool_setup(const rtprof_lock *lk, const struct rtprof_settings *s)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	uint64_t target, want;

	if (c->chunk_size != s->chunk_size ||
	    (c->lock_memory != 0) != (s->lock_memory != 0)) {
		/* Chunks of the old size or kind still in use come back
		 * later and are freed by rtprof__pool_put(). */
		while (c->free != NULL)
			free_one(c);
		c->chunk_size = s->chunk_size;
		c->lock_memory = s->lock_memory != 0;
		c->chunk_bytes = chunk_bytes(s->chunk_size, c->lock_memory);
	}
	target = pool_target(s->memory_limit, c->chunk_bytes);
	c->pool_target = target;
	while (ncurrent(c) > target && c->free != NULL)
		free_one(c);
	want = s->prefault ? target : 1;
	while (ncurrent(c) < want && pool_grow(c) == 0)
		;
	for (struct rtprof__chunk *k = c->free; s->prefault && k != NULL;
	    k = k->next)
		if (k->alloc & POOL_LAZY)
			chunk_touch(k, c->chunk_bytes);
	return ncurrent(c) > 0 ? 0 : -ENOMEM;
}

/* Context: collector or control thread, lock held. */
void
rtprof__pool_put(const rtprof_lock *lk, struct rtprof__chunk *k)
{
	struct rtprof__core *c = rtprof__core_get(lk);

	/* Over a lowered limit: more chunks than the running session keeps
	 * (pool_target(): never fewer than one; comparing bytes instead freed
	 * the one chunk of a limit below one chunk's allocation the first
	 * time it came back, and the session recorded nothing more). */
	if (!chunk_fits(c, k) ||
	    (c->running != NULL && ncurrent(c) >
	    pool_target(c->running->set.memory_limit, c->chunk_bytes))) {
		/* Wrong size for this session, or over a lowered limit. */
		chunk_free(c, k);
		return;
	}
	k->next = c->free;
	c->free = k;
	c->nfree++;
}

/*
 * rtprof__pool_get - a free chunk; when none is free and the session's
 * limit allows, a new one, allocated and touched here (never on the thread
 * that will write it: this runs on the collector or a control thread).
 * Context: collector or control thread, lock held; may allocate.
 * Return: NULL when every chunk the limit allows is in use.
 */
struct rtprof__chunk *
rtprof__pool_get(const rtprof_lock *lk)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	struct rtprof__chunk *k = c->free;

	if (k == NULL && c->running != NULL &&
	    ncurrent(c) < c->pool_target && pool_grow(c) == 0)
		k = c->free;
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
	struct rtprof__core *c = rtprof__core_get(lk);
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
		chunk_lock(c, k);
		/* A real-time thread never takes a page fault in it. */
		if ((k->alloc & POOL_LAZY) && (th->flags & RTPROF_THREAD_RT))
			chunk_touch(k, c->chunk_bytes);
		POOL_UNDEFINED(k->data, k->size);
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
