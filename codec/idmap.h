/*
 * idmap.h - integer key (tid, counter id, string ref, pid) -> array index,
 * open addressing: O(1) lookups whatever a dump holds (a linear scan over
 * a million thread ids is minutes).
 *
 * Context: any thread; no shared state (one map, one thread at a time).
 */
#ifndef RTPROF_IDMAP_H
#define RTPROF_IDMAP_H

#include <stddef.h>
#include <stdint.h>

struct rtprof_idmap {
	struct rtprof_idmap_ent {
		int64_t key;
		uint32_t idx1;          /* index + 1, 0 = empty */
	} *e;
	size_t n, nslot;
};

/* The index stored for @key, -1 if none. */
int64_t rtprof_idmap_get(const struct rtprof_idmap *m, int64_t key);

/* Store @idx for @key (replacing the index it had). 0 or -ENOMEM (also
 * for @idx >= UINT32_MAX - 1). */
int rtprof_idmap_set(struct rtprof_idmap *m, int64_t key, size_t idx);

/* Forget every key; the map stays usable. */
void rtprof_idmap_clear(struct rtprof_idmap *m);

/* Free the map's memory; zeroed, usable again. */
void rtprof_idmap_free(struct rtprof_idmap *m);

#endif /* RTPROF_IDMAP_H */
