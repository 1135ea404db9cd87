/*
 * strtab.h - growable arrays (rtprof_grow) and a de-duplicated string
 * table: strings numbered 0, 1, ... in
 * the order first added, each kept once (an array plus an open-addressing
 * index on a hash of the bytes). Profiles' string tables (Gecko's
 * stringTable, pprof's string_table) are this.
 *
 * Context: any thread; no shared state (one table, one thread at a time).
 */
#ifndef RTPROF_STRTAB_H
#define RTPROF_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct rtprof_strtab {
	char **s;                       /* NUL-terminated copies */
	size_t *len;
	size_t n, cap, lcap;
	uint32_t *slot;                 /* index + 1, 0 = empty */
	size_t nslot;
};

/* Return: the index of @s[0..@n) in @t, added (copied) if new, or -ENOMEM. */
int64_t rtprof_strtab_intern(struct rtprof_strtab *t, const char *s,
    size_t n);

/* Free every string and the table's memory; zeroed, usable again. */
void rtprof_strtab_free(struct rtprof_strtab *t);

/*
 * rtprof_grow - grow the array *@p of elements of @size bytes, *@cap of
 * them, to hold @need (capacity doubled, 4 at first).
 * Return: 0, or -ENOMEM (the array is left as it was).
 */
int rtprof_grow(void **p, size_t *cap, size_t need, size_t size);

/* FNV-1a of @p[0..@n): the table's hash, for other byte-keyed tables. */
uint64_t rtprof_hash_bytes(const void *p, size_t n);

#endif /* RTPROF_STRTAB_H */
