/*
 * gecko_maps.h - the converter's containers: growable arrays, a
 * de-duplicated string table, the recording process's static strings
 * (address -> text) and a map of integer pairs to indexes.
 *
 * Pipeline (gecko_int.h): used by every stage; the reading stage fills
 * them (thread, string and raw-stack lookups), the writing stage builds
 * each thread's string, frame and stack tables with them. All hashed,
 * open addressing, load at most 1/2: memory and time grow with what the
 * dump holds, not with the ids it names.
 *
 * Context: any thread; a container belongs to the one thread using it.
 */
#ifndef RTPROF_GECKO_MAPS_H
#define RTPROF_GECKO_MAPS_H

#include <stddef.h>
#include <stdint.h>

/* Grow *@p (elements of @size) to hold @need elements; 0 or -ENOMEM. */
int gecko_grow(void **p, size_t *cap, size_t need, size_t size);

/* FNV-1a of @p[0..@n). */
uint64_t gecko_hash_bytes(const void *p, size_t n);

/* A malloc'ed copy of @s[0..@n), NUL-terminated; NULL on ENOMEM. */
char *gecko_dup_n(const char *s, size_t n);

/* A copy of @s; NULL stays NULL; *@err set on allocation failure. */
char *gecko_dup_opt(const char *s, int *err);

/* A de-duplicated string table: an array plus an open-addressing index. */
struct strtab {
	char **s;
	size_t *len;
	size_t n, cap, lcap;
	uint32_t *slot;                 /* index + 1, 0 = empty */
	size_t nslot;
};

void strtab_free(struct strtab *t);

/* Return: the index of @s[0..@n) in @t, added if new, or -ENOMEM. */
int64_t strtab_intern(struct strtab *t, const char *s, size_t n);

/* Static strings of the recording process: address -> text. */
struct strmap_ent {
	uint64_t ref;                   /* 0 = empty (no string lives at 0) */
	char *text;
	size_t len;
};

struct strmap {
	struct strmap_ent *e;
	size_t n, nslot;
};

/* The entry of @ref, NULL when none. */
struct strmap_ent *strmap_find(const struct strmap *m, uint64_t ref);

/* @ref -> a copy of @text[0..@len) (replacing any): 0 or -ENOMEM. */
int strmap_put(struct strmap *m, uint64_t ref, const char *text, size_t len);

/*
 * A pair of integers -> array index, open addressing: the raw stack tree
 * (value, prefix and kind), and the de-duplication of frames (location,
 * category) and stacks (prefix, frame) when a thread is written.
 */
struct pmap {
	struct pmap_ent {
		uint64_t a, b;
		uint32_t idx1;          /* index + 1, 0 = empty */
	} *e;
	size_t n, nslot;
};

/* How many of the sorted @a[0..@n) are <= @t (binary search): a module
 * map's epoch at @t, from the times of its changes. */
static inline size_t
count_le(const uint64_t *a, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static inline uint64_t
pmap_hash(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ b * 0xc2b2ae3d27d4eb4full;

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ h >> 32;
}

/* Return: the index of (@a, @b), or -1. */
static inline int64_t
pmap_get(const struct pmap *m, uint64_t a, uint64_t b)
{
	size_t h;

	if (m->nslot == 0)
		return -1;
	h = (size_t)pmap_hash(a, b) & (m->nslot - 1);
	while (m->e[h].idx1 != 0) {
		if (m->e[h].a == a && m->e[h].b == b)
			return (int64_t)m->e[h].idx1 - 1;
		h = (h + 1) & (m->nslot - 1);
	}
	return -1;
}

/* (@a, @b) -> @idx; (@a, @b) must not be in @m yet. 0 or -ENOMEM. */
int pmap_put(struct pmap *m, uint64_t a, uint64_t b, size_t idx);

void pmap_free(struct pmap *m);

#endif
