/*
 * summarize_agg.c - aggregating: the tables every reader of `rtprof
 * summarize` fills.
 *
 * Pipeline (summarize_int.h): summarize_dump_rec.c and
 * summarize_prof_thread.c add here -> summarize_report.c prints the
 * tables sorted. A table is name -> (count, total, max), open addressing
 * on a string hash; a Blocked call goes by call and, with its stack, by
 * call and stack (one key, KEY_SEP between them).
 *
 * Context: the tool's main thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gecko_maps.h"
#include "summarize_int.h"

/* The first slot of @key in a table of @cap (a power of two) slots. */
static size_t
home(const char *key, size_t cap)
{
	return (size_t)gecko_hash_bytes(key, strlen(key)) & (cap - 1);
}

/* Room for one more entry: the table at most half full. */
static int
agg_grow(struct agg *a)
{
	size_t i, nc = a->cap ? a->cap * 2 : 256;
	struct agg_ent *ne;

	if ((a->n + 1) * 2 <= a->cap)
		return 0;
	if ((ne = calloc(nc, sizeof(*ne))) == NULL)
		return -ENOMEM;
	for (size_t k = 0; k < a->cap; k++) {
		if (a->e[k].key == NULL)
			continue;
		for (i = home(a->e[k].key, nc); ne[i].key != NULL;
		    i = (i + 1) & (nc - 1))
			;
		ne[i] = a->e[k];
	}
	free(a->e);
	a->e = ne;
	a->cap = nc;
	return 0;
}

int
agg_add(struct agg *a, const char *key, double v)
{
	size_t i;

	if (agg_grow(a) != 0)
		return -ENOMEM;
	for (i = home(key, a->cap); a->e[i].key != NULL;
	    i = (i + 1) & (a->cap - 1))
		if (strcmp(a->e[i].key, key) == 0)
			break;
	if (a->e[i].key == NULL) {
		if ((a->e[i].key = strdup(key)) == NULL)
			return -ENOMEM;
		a->n++;
	}
	a->e[i].n++;
	a->e[i].total += v;
	if (v > a->e[i].max)
		a->e[i].max = v;
	return 0;
}

static int
by_total(const void *x, const void *y)
{
	const struct agg_ent *a = x, *b = y;

	return a->total < b->total ? 1 : a->total > b->total ? -1 :
	    strcmp(a->key, b->key);
}

struct agg_ent *
agg_sorted(const struct agg *a)
{
	struct agg_ent *v = malloc((a->n ? a->n : 1) * sizeof(*v));
	size_t k = 0;

	if (v == NULL)
		return NULL;
	for (size_t i = 0; i < a->cap; i++)
		if (a->e[i].key != NULL)
			v[k++] = a->e[i];
	qsort(v, k, sizeof(*v), by_total);
	return v;
}

void
agg_free(struct agg *a)
{
	for (size_t i = 0; i < a->cap; i++)
		free(a->e[i].key);
	free(a->e);
}

int
sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t nc = (b->n + n + 1) * 2;
		char *p = realloc(b->p, nc);

		if (p == NULL)
			return -ENOMEM;
		b->p = p;
		b->cap = nc;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
	return 0;
}

int
sb_add_frame(struct sbuf *b, const char *s)
{
	size_t n = strlen(s), at = b->n;

	if (sb_add(b, s, n) != 0)
		return -ENOMEM;
	for (size_t k = at; k < b->n; k++)
		if (b->p[k] == ';')
			b->p[k] = ':';
	return 0;
}

int
sum_fail(struct sum *s, int err)
{
	if (s->err == 0)
		s->err = err;
	return s->err;
}

int
blocked_add(struct sum *s, const char *call, double ms, const char *frames)
{
	struct sbuf k = { 0 };
	int rc;

	if (frames == NULL) {
		s->nostack_n++;
		s->nostack_ms += ms;
		return 0;
	}
	if (sb_add(&k, call, strlen(call)) != 0 ||
	    sb_add(&k, "\n", 1) != 0 || sb_add(&k, frames, strlen(frames)))
		rc = -ENOMEM;
	else
		rc = agg_add(&s->bstack, k.p, ms);
	free(k.p);
	return rc != 0 ? sum_fail(s, rc) : 0;
}

void
sum_free(struct sum *s)
{
	sblock_free(s->off);
	agg_free(&s->blocked);
	agg_free(&s->bstack);
	agg_free(&s->cpu);
	agg_free(&s->self);
	agg_free(&s->folded_stacks);
	agg_free(&s->sig_blocked);
	free(s->str);
	free(s->th);
	rtprof_idmap_free(&s->str_idx);
	rtprof_idmap_free(&s->th_idx);
}
