/*
 * calls.c - the table of librtprof-preload's wrappers (core/calls.h):
 * written once by the preload library's constructor, read by the sampler.
 *
 * Context: rtprof__calls_set on the loader's thread at start;
 * the lookups on any thread (the sampler's). The table is published with
 * one release store and never changed or freed after.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"

struct table {
	unsigned n;             /* wrappers, sorted by lo */
	unsigned max_id;
	const struct rtprof__call **by_id;      /* [max_id + 1] */
	struct rtprof__call_fn fn[];
};

static const struct table *_Atomic table;

const struct rtprof__call rtprof__call_self = { 0, "rtprof",
	"rtprof (recorder, on CPU)", "rtprof (recorder, blocked)" };

static int
by_lo(const void *a, const void *b)
{
	const struct rtprof__call_fn *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Context: the loader's thread, once (a second call is ignored). */
RTPROF_API void
rtprof__calls_set(const struct rtprof__call_fn *fns, unsigned n)
{
	struct table *t;
	unsigned max_id = 0;

	if (atomic_load_explicit(&table, memory_order_relaxed) != NULL)
		return;
	for (unsigned i = 0; i < n; i++)
		if (fns[i].call->id > max_id)
			max_id = fns[i].call->id;
	t = malloc(sizeof(*t) + n * sizeof(t->fn[0]));
	if (t == NULL)
		return;
	t->by_id = calloc(max_id + 1, sizeof(*t->by_id));
	if (t->by_id == NULL) {
		free(t);
		return;
	}
	t->n = n;
	t->max_id = max_id;
	memcpy(t->fn, fns, n * sizeof(t->fn[0]));
	qsort(t->fn, n, sizeof(t->fn[0]), by_lo);
	for (unsigned i = 0; i < n; i++)
		t->by_id[t->fn[i].call->id] = t->fn[i].call;
	/* release: the table's contents before its pointer. */
	atomic_store_explicit(&table, t, memory_order_release);
}

/* Context: any thread. */
const struct rtprof__call *
rtprof__call_at(uintptr_t ip)
{
	/* acquire: pairs with rtprof__calls_set's release. */
	const struct table *t = atomic_load_explicit(&table,
	    memory_order_acquire);
	unsigned lo = 0, hi;

	if (t == NULL)
		return NULL;
	hi = t->n;
	while (lo < hi) {       /* the last wrapper starting at or below */
		unsigned mid = lo + (hi - lo) / 2;

		if (t->fn[mid].lo <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || ip >= t->fn[lo - 1].hi)
		return NULL;
	return t->fn[lo - 1].call;
}

/* Context: any thread. */
const struct rtprof__call *
rtprof__call_of(unsigned id)
{
	const struct table *t = atomic_load_explicit(&table,
	    memory_order_acquire);

	return t != NULL && id != 0 && id <= t->max_id ? t->by_id[id] : NULL;
}
