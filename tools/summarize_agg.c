/*
 * summarize_agg.c - aggregating: the tables every reader of `rtprof
 * summarize` fills.
 *
 * Pipeline (summarize_int.h): summarize_dump_rec.c and
 * summarize_prof_thread.c add here -> summarize_report.c prints the
 * tables sorted. A table is name -> (count, total, max): the names in
 * the codec's string table (struct strtab), their counts in an array by
 * the same index; a Blocked call goes by call and, with its stack, by
 * call and stack (one key, KEY_SEP between them).
 *
 * Context: the tool's main thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "summarize_int.h"

/* Count @v under @key (added if new). Return: 0 or -ENOMEM. */
int
agg_add(struct agg *a, const char *key, double v)
{
	struct agg_ent *e;
	int64_t i;

	/* Room first: a key interned is always counted. */
	if (gecko_grow((void **)&a->e, &a->cap, a->n + 1, sizeof(*a->e)) != 0 ||
	    (i = strtab_intern(&a->keys, key, strlen(key))) < 0)
		return -ENOMEM;
	if ((size_t)i == a->n) {        /* a new key: its counts start */
		a->e[i] = (struct agg_ent){ a->keys.s[i], 0, 0, 0 };
		a->n++;
	}
	e = &a->e[i];
	e->n++;
	e->total += v;
	if (v > e->max)
		e->max = v;
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
	for (; k < a->n; k++)
		v[k] = a->e[k];
	qsort(v, k, sizeof(*v), by_total);
	return v;
}

void
agg_free(struct agg *a)
{
	strtab_free(&a->keys);
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
