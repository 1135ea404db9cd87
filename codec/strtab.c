/*
 * strtab.c - a de-duplicated string table (strtab.h).
 *
 * Context: any thread; no shared state.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strtab.h"

uint64_t
rtprof_hash_bytes(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull;

	while (n-- != 0)
		h = (h ^ *s++) * 0x100000001b3ull;
	return h;
}

int
rtprof_grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t ncap;
	void *np;

	if (need <= *cap)
		return 0;
	ncap = *cap != 0 ? *cap : 4;
	while (ncap < need)
		ncap *= 2;
	if (ncap > SIZE_MAX / size)
		return -ENOMEM;
	np = realloc(*p, ncap * size);
	if (np == NULL)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

void
rtprof_strtab_free(struct rtprof_strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->len);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

/* Double the index (64 slots at first): at most half full. */
static int
rehash(struct rtprof_strtab *t)
{
	size_t ns = t->nslot != 0 ? t->nslot * 2 : 64;
	uint32_t *slot = calloc(ns, sizeof(*slot));

	if (slot == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		size_t h = (size_t)rtprof_hash_bytes(t->s[i], t->len[i]) &
		    (ns - 1);

		while (slot[h] != 0)
			h = (h + 1) & (ns - 1);
		slot[h] = (uint32_t)(i + 1);
	}
	free(t->slot);
	t->slot = slot;
	t->nslot = ns;
	return 0;
}

/* A NUL-terminated copy of @s[0..@n). */
static char *
copy(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d != NULL) {
		if (n != 0)
			memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

int64_t
rtprof_strtab_intern(struct rtprof_strtab *t, const char *s, size_t n)
{
	size_t h;
	char *d;

	if ((t->n + 1) * 2 > t->nslot && rehash(t) != 0)
		return -ENOMEM;
	h = (size_t)rtprof_hash_bytes(s, n) & (t->nslot - 1);
	while (t->slot[h] != 0) {
		size_t i = t->slot[h] - 1;

		if (t->len[i] == n && memcmp(t->s[i], s, n) == 0)
			return (int64_t)i;
		h = (h + 1) & (t->nslot - 1);
	}
	if (t->n >= UINT32_MAX - 1 ||
	    rtprof_grow((void **)&t->s, &t->cap, t->n + 1, sizeof(*t->s)) != 0 ||
	    rtprof_grow((void **)&t->len, &t->lcap, t->n + 1, sizeof(*t->len)) != 0)
		return -ENOMEM;
	d = copy(s, n);
	if (d == NULL)
		return -ENOMEM;
	t->s[t->n] = d;
	t->len[t->n] = n;
	t->slot[h] = (uint32_t)(t->n + 1);
	return (int64_t)t->n++;
}
