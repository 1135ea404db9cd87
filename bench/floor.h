/*
 * floor.h - the recording floor the hot-path benchmark compares against:
 * an rdtsc timestamp and a 16-byte record written in place into a
 * thread-local array, published with one release store of the index.
 *
 * The same body is built twice: inline in the benchmark binary (local-exec
 * TLS, no call) and in bench/floor_lib.c, a small shared library built like
 * librtprof (-O2 -fPIC, hidden visibility, exported entry points), called
 * through the PLT with general-dynamic TLS as a library would have it, and
 * once more with initial-exec TLS (what librtprof itself uses).
 */
#ifndef RTPROF_BENCH_FLOOR_H
#define RTPROF_BENCH_FLOOR_H

#include <stdint.h>

#define FLOOR_RECS 4096u /* 64 KiB: a power of two, wrapped by mask */

struct floor_rec {
	uint64_t ts;
	const void *name;
};

struct floor_tls {
	/* next record number; owner-written, release-published */
	uint64_t idx;
	struct floor_rec buf[FLOOR_RECS] __attribute__((aligned(64)));
};

/*
 * floor_put - write one record in place and publish it.
 * Context: owner thread; wait-free.
 */
static inline __attribute__((always_inline)) void
floor_put(struct floor_tls *t, const void *name)
{
	uint64_t i = t->idx; /* only the owner writes idx */
	struct floor_rec *r = &t->buf[i & (FLOOR_RECS - 1)];

	r->ts = __builtin_ia32_rdtsc();
	r->name = name;
	/* release: the record before the index; a reader would pair it with
	 * an acquire load of idx (there is none in the benchmark). */
	__atomic_store_n(&t->idx, i + 1, __ATOMIC_RELEASE);
}

#if defined(RTPROF_BENCH_FLOOR_BUILDING)
#define FLOOR_API __attribute__((visibility("default")))
#else
#define FLOOR_API
#endif

/* Context: owner thread; wait-free. General-dynamic TLS. */
FLOOR_API void floor_shlib_record(const void *name);
/* Context: owner thread; wait-free. Initial-exec TLS (like librtprof). */
FLOOR_API void floor_shlib_ie_record(const void *name);
/* Records written by the calling thread (keeps the stores observable). */
FLOOR_API uint64_t floor_shlib_count(void);

#endif /* RTPROF_BENCH_FLOOR_H */
