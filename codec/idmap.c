/*
 * idmap.c - integer key -> array index (idmap.h).
 *
 * Context: any thread; no shared state.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "idmap.h"

/* splitmix64's finalizer: keys that differ in any bit spread. */
static size_t
slot_of(int64_t key, size_t nslot)
{
	uint64_t x = (uint64_t)key;

	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return (size_t)x & (nslot - 1);
}

/* The slot holding @key, or the empty slot where it goes. */
static size_t
find(const struct rtprof_idmap *m, int64_t key)
{
	size_t h = slot_of(key, m->nslot);

	while (m->e[h].idx1 != 0 && m->e[h].key != key)
		h = (h + 1) & (m->nslot - 1);
	return h;
}

int64_t
rtprof_idmap_get(const struct rtprof_idmap *m, int64_t key)
{
	size_t h;

	if (m->nslot == 0)
		return -1;
	h = find(m, key);
	return m->e[h].idx1 != 0 ? (int64_t)m->e[h].idx1 - 1 : -1;
}

/* Double the table (8 slots at first): at most half full. */
static int
grow(struct rtprof_idmap *m)
{
	struct rtprof_idmap old = *m;
	size_t ns = m->nslot != 0 ? m->nslot * 2 : 8;

	m->e = calloc(ns, sizeof(*m->e));
	if (m->e == NULL) {
		*m = old;
		return -ENOMEM;
	}
	m->nslot = ns;
	for (size_t i = 0; i < old.nslot; i++)
		if (old.e[i].idx1 != 0)
			m->e[find(m, old.e[i].key)] = old.e[i];
	free(old.e);
	return 0;
}

int
rtprof_idmap_set(struct rtprof_idmap *m, int64_t key, size_t idx)
{
	size_t h;

	if (idx >= UINT32_MAX - 1)
		return -ENOMEM;
	if ((m->n + 1) * 2 > m->nslot && grow(m) != 0)
		return -ENOMEM;
	h = find(m, key);
	if (m->e[h].idx1 == 0) {
		m->e[h].key = key;
		m->n++;
	}
	m->e[h].idx1 = (uint32_t)(idx + 1);
	return 0;
}

void
rtprof_idmap_clear(struct rtprof_idmap *m)
{
	if (m->e != NULL)
		memset(m->e, 0, m->nslot * sizeof(*m->e));
	m->n = 0;
}

void
rtprof_idmap_free(struct rtprof_idmap *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}
