/*
 * gecko_maps.c - the converter's containers (gecko_maps.h).
 *
 * Context: any thread; a container belongs to the one thread using it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gecko_maps.h"

/* Grow *@p (elements of @size) to hold @need elements. */
int
gecko_grow(void **p, size_t *cap, size_t need, size_t size)
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

uint64_t
gecko_hash_bytes(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull;

	while (n-- != 0)
		h = (h ^ *s++) * 0x100000001b3ull;
	return h;
}

char *
gecko_dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d != NULL) {
		if (n != 0)
			memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* NULL stays NULL; *@err set on allocation failure. */
char *
gecko_dup_opt(const char *s, int *err)
{
	char *d;

	if (s == NULL)
		return NULL;
	d = gecko_dup_n(s, strlen(s));
	if (d == NULL)
		*err = -ENOMEM;
	return d;
}

void
strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->len);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

static int
strtab_rehash(struct strtab *t)
{
	size_t ns = t->nslot != 0 ? t->nslot * 2 : 64;
	uint32_t *slot = calloc(ns, sizeof(*slot));

	if (slot == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		size_t h = (size_t)gecko_hash_bytes(t->s[i], t->len[i]) & (ns - 1);

		while (slot[h] != 0)
			h = (h + 1) & (ns - 1);
		slot[h] = (uint32_t)(i + 1);
	}
	free(t->slot);
	t->slot = slot;
	t->nslot = ns;
	return 0;
}

/* Return: the index of @s[0..@n) in @t, added if new, or -ENOMEM. */
int64_t
strtab_intern(struct strtab *t, const char *s, size_t n)
{
	size_t h;
	char *d;

	if ((t->n + 1) * 2 > t->nslot && strtab_rehash(t) != 0)
		return -ENOMEM;
	h = (size_t)gecko_hash_bytes(s, n) & (t->nslot - 1);
	while (t->slot[h] != 0) {
		size_t i = t->slot[h] - 1;

		if (t->len[i] == n && memcmp(t->s[i], s, n) == 0)
			return (int64_t)i;
		h = (h + 1) & (t->nslot - 1);
	}
	if (t->n >= UINT32_MAX - 1 ||
	    gecko_grow((void **)&t->s, &t->cap, t->n + 1, sizeof(*t->s)) != 0 ||
	    gecko_grow((void **)&t->len, &t->lcap, t->n + 1, sizeof(*t->len)) != 0)
		return -ENOMEM;
	d = gecko_dup_n(s, n);
	if (d == NULL)
		return -ENOMEM;
	t->s[t->n] = d;
	t->len[t->n] = n;
	t->slot[h] = (uint32_t)(t->n + 1);
	return (int64_t)t->n++;
}

struct strmap_ent *
strmap_find(const struct strmap *m, uint64_t ref)
{
	size_t h;

	if (m->nslot == 0 || ref == 0)
		return NULL;
	h = (size_t)gecko_hash_bytes(&ref, sizeof(ref)) & (m->nslot - 1);
	while (m->e[h].ref != 0) {
		if (m->e[h].ref == ref)
			return &m->e[h];
		h = (h + 1) & (m->nslot - 1);
	}
	return NULL;
}

int
strmap_put(struct strmap *m, uint64_t ref, const char *text, size_t len)
{
	struct strmap_ent *e;
	size_t h;
	char *d;

	if (ref == 0)
		return 0;
	if ((m->n + 1) * 2 > m->nslot) {
		size_t ns = m->nslot != 0 ? m->nslot * 2 : 8;
		struct strmap_ent *ne = calloc(ns, sizeof(*ne));

		if (ne == NULL)
			return -ENOMEM;
		for (size_t i = 0; i < m->nslot; i++) {
			if (m->e[i].ref == 0)
				continue;
			h = (size_t)gecko_hash_bytes(&m->e[i].ref, 8) & (ns - 1);
			while (ne[h].ref != 0)
				h = (h + 1) & (ns - 1);
			ne[h] = m->e[i];
		}
		free(m->e);
		m->e = ne;
		m->nslot = ns;
	}
	d = gecko_dup_n(text, len);
	if (d == NULL)
		return -ENOMEM;
	e = strmap_find(m, ref);
	if (e != NULL) {
		/* A later STRING frame for the same address replaces it. */
		free(e->text);
		e->text = d;
		e->len = len;
		return 0;
	}
	h = (size_t)gecko_hash_bytes(&ref, sizeof(ref)) & (m->nslot - 1);
	while (m->e[h].ref != 0)
		h = (h + 1) & (m->nslot - 1);
	m->e[h].ref = ref;
	m->e[h].text = d;
	m->e[h].len = len;
	m->n++;
	return 0;
}

/* (@a, @b) must not be in @m yet. */
int
pmap_put(struct pmap *m, uint64_t a, uint64_t b, size_t idx)
{
	size_t h;

	if (idx >= UINT32_MAX - 1)
		return -ENOMEM;
	if ((m->n + 1) * 2 > m->nslot) {
		size_t ns = m->nslot != 0 ? m->nslot * 2 : 8;
		struct pmap_ent *ne = calloc(ns, sizeof(*ne));

		if (ne == NULL)
			return -ENOMEM;
		for (size_t i = 0; i < m->nslot; i++) {
			if (m->e[i].idx1 == 0)
				continue;
			h = (size_t)pmap_hash(m->e[i].a, m->e[i].b) & (ns - 1);
			while (ne[h].idx1 != 0)
				h = (h + 1) & (ns - 1);
			ne[h] = m->e[i];
		}
		free(m->e);
		m->e = ne;
		m->nslot = ns;
	}
	h = (size_t)pmap_hash(a, b) & (m->nslot - 1);
	while (m->e[h].idx1 != 0)
		h = (h + 1) & (m->nslot - 1);
	m->e[h].a = a;
	m->e[h].b = b;
	m->e[h].idx1 = (uint32_t)(idx + 1);
	m->n++;
	return 0;
}

void
pmap_free(struct pmap *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}
