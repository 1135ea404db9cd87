/*
 * summarize_block.c - time off CPU by the kernel's reason, for `rtprof
 * summarize` (tools/summarize_block.h): a reason's total, and per reason
 * the places (call and stack) that waited for it.
 *
 * Context: the tool's main thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "esc.h"
#include "gecko_maps.h"
#include "summarize_block.h"

#define PLACES_SHOWN 3

struct place {
	char *where;
	double ms;
	size_t n;
};

struct reason {
	char *name;
	double ms;
	size_t n;
	struct place *p;
	size_t np, pcap;
};

struct sblock {
	struct reason *r;
	size_t nr, rcap;
	size_t refused;         /* dumps without the kernel's stacks */
	char *refused_why;      /* the first one's explanation */
};

struct sblock *
sblock_new(void)
{
	return calloc(1, sizeof(struct sblock));
}

void
sblock_free(struct sblock *b)
{
	if (b == NULL)
		return;
	for (size_t i = 0; i < b->nr; i++) {
		for (size_t k = 0; k < b->r[i].np; k++)
			free(b->r[i].p[k].where);
		free(b->r[i].p);
		free(b->r[i].name);
	}
	free(b->r);
	free(b->refused_why);
	free(b);
}

int
sblock_refused(struct sblock *b, const char *why)
{
	b->refused++;
	if (b->refused_why == NULL && why != NULL && why[0] != 0 &&
	    (b->refused_why = strdup(why)) == NULL)
		return -ENOMEM;
	return 0;
}

/* The entry of @reason, added if new, or NULL (out of memory). A few
 * dozen reasons at most: a linear search. */
static struct reason *
reason_get(struct sblock *b, const char *reason)
{
	struct reason *r;

	for (size_t i = 0; i < b->nr; i++)
		if (strcmp(b->r[i].name, reason) == 0)
			return &b->r[i];
	if (gecko_grow((void **)&b->r, &b->rcap, b->nr + 1, sizeof(*b->r)) != 0)
		return NULL;
	r = &b->r[b->nr];
	memset(r, 0, sizeof(*r));
	r->name = strdup(reason);
	if (r->name == NULL)
		return NULL;
	b->nr++;
	return r;
}

int
sblock_add(struct sblock *b, const char *reason, const char *where,
    double ms)
{
	struct reason *r = reason_get(b, reason);
	struct place *p = NULL;

	if (r == NULL)
		return -ENOMEM;
	r->ms += ms;
	r->n++;
	/* The last place first: a spell's samples come in a row. */
	for (size_t i = r->np; i-- > 0 && p == NULL;)
		if (strcmp(r->p[i].where, where) == 0)
			p = &r->p[i];
	if (p == NULL) {
		if (gecko_grow((void **)&r->p, &r->pcap, r->np + 1,
		    sizeof(*r->p)) != 0)
			return -ENOMEM;
		p = &r->p[r->np];
		p->where = strdup(where);
		if (p->where == NULL)
			return -ENOMEM;
		p->ms = 0;
		p->n = 0;
		r->np++;
	}
	p->ms += ms;
	p->n++;
	return 0;
}

int
sblock_reason_of(const char *loc, size_t len, char *buf, size_t n)
{
	static const char pre[] = "kernel: ";
	const char *fn = loc + sizeof(pre) - 1, *open;
	size_t fl;

	if (len < sizeof(pre) || strncmp(loc, pre, sizeof(pre) - 1) != 0)
		return 0;
	fl = len - (sizeof(pre) - 1);
	open = memchr(fn, '(', fl);
	if (open != NULL && loc[len - 1] == ')')
		snprintf(buf, n, "%.*s", (int)(loc + len - 1 - open - 1),
		    open + 1);
	else
		snprintf(buf, n, "other: %.*s", (int)fl, fn);
	return 1;
}

static int
by_ms_reason(const void *x, const void *y)
{
	const struct reason *a = x, *b = y;

	return a->ms < b->ms ? 1 : a->ms > b->ms ? -1 : strcmp(a->name,
	    b->name);
}

static int
by_ms_place(const void *x, const void *y)
{
	const struct place *a = x, *b = y;

	return a->ms < b->ms ? 1 : a->ms > b->ms ? -1 : strcmp(a->where,
	    b->where);
}

void
sblock_print(const struct sblock *b, FILE *f, size_t top)
{
	char e[1024];

	fprintf(f, "\nTime off CPU, by the kernel's reason (off-CPU samples "
	    "with the kernel's stack,\nwhere kernel-side sampling is "
	    "allowed; then the places that waited, innermost first):\n");
	if (b != NULL && b->refused != 0)
		fprintf(f, "  (%zu dump%s without the kernel's stacks: %s)\n",
		    b->refused, b->refused == 1 ? "" : "s",
		    b->refused_why != NULL ? rtprof_esc(e, sizeof(e),
		    b->refused_why) : "the sampler did not say why");
	if (b == NULL || b->nr == 0) {
		fprintf(f, "  (none recorded)\n");
		return;
	}
	qsort(b->r, b->nr, sizeof(*b->r), by_ms_reason);
	fprintf(f, "  %-32s %10s %12s\n", "reason", "samples", "total ms");
	for (size_t i = 0; i < b->nr && i < top; i++) {
		struct reason *r = &b->r[i];

		fprintf(f, "  %-32s %10zu %12.3f\n", rtprof_esc(e, sizeof(e),
		    r->name), r->n, r->ms);
		qsort(r->p, r->np, sizeof(*r->p), by_ms_place);
		for (size_t k = 0; k < r->np && k < PLACES_SHOWN; k++)
			fprintf(f, "      %10.3f ms  %s\n", r->p[k].ms,
			    rtprof_esc(e, sizeof(e), r->p[k].where));
		if (r->np > PLACES_SHOWN)
			fprintf(f, "      (%zu more places)\n",
			    r->np - PLACES_SHOWN);
	}
	if (b->nr > top)
		fprintf(f, "  (%zu more reasons)\n", b->nr - top);
}
