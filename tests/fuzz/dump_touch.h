/*
 * dump_touch.h - callbacks for the decoder's fuzz targets
 * (fuzz_dump_reader.c, fuzz_records.c): every callback reads what it is
 * given, so AddressSanitizer sees a bad pointer or length, and checks what
 * the decoder promises about a record view (records.h), so a view that is
 * out of its bounds aborts like a crash:
 *   - kind is a known record kind (1..RTPROF_REC_KIND_MAX);
 *   - nvals <= RTPROF_REC_MAX_VALS, and 0 unless the record is TYPED
 *     (whose phase is 0..3); every value's kind is one of enum
 *     rtprof_val_kind;
 *   - nframes <= RTPROF_REC_MAX_FRAMES, and 0 unless SAMPLE or BACKTRACE;
 *   - size > 0.
 *
 * Header-only (static functions), one copy per fuzz target.
 * Context: single-threaded (the counters are plain globals).
 */
#ifndef RTPROF_FUZZ_DUMP_TOUCH_H
#define RTPROF_FUZZ_DUMP_TOUCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_reader.h"

static volatile size_t touch_sink;

static inline void
touch_str(const char *s)
{
	if (s != NULL)
		touch_sink += strlen(s);
}

static inline void
touch_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		touch_sink += b[i];
}

static inline void
touch_fail(const struct rtprof_rec_view *r, const char *why)
{
	fprintf(stderr, "dump_touch: record kind %u: %s (nvals %u, nframes %u, "
	    "size %zu)\n", r->kind, why, r->nvals, r->nframes, r->size);
	abort();
}

/* The record view invariants above, and every byte it points to read. */
static inline void
touch_record(const struct rtprof_rec_view *r)
{
	if (r->kind < 1 || r->kind > RTPROF_REC_KIND_MAX)
		touch_fail(r, "unknown kind delivered");
	if (r->size == 0)
		touch_fail(r, "size 0");
	if (r->nvals > RTPROF_REC_MAX_VALS)
		touch_fail(r, "more values than RTPROF_REC_MAX_VALS");
	if (r->nvals != 0 && r->kind != RTPROF_REC_TYPED &&
	    r->kind != RTPROF_REC_ZONE_ARG && r->kind != RTPROF_REC_TEXT)
		touch_fail(r, "values in a record not TYPED, ZONE_ARG or TEXT");
	if ((r->kind == RTPROF_REC_ZONE_ARG || r->kind == RTPROF_REC_TEXT) &&
	    r->nvals != 1)
		touch_fail(r, "a ZONE_ARG or TEXT without its one value");
	if (r->kind == RTPROF_REC_ZONE_ARG &&
	    (r->phase < 1 || r->phase > RTPROF_ZONE_ARG_MAX))
		touch_fail(r, "zone argument of an unknown kind");
	if (r->kind == RTPROF_REC_TYPED && r->phase > 3)
		touch_fail(r, "typed phase over 3");
	if (r->nframes > RTPROF_REC_MAX_FRAMES)
		touch_fail(r, "more frames than RTPROF_REC_MAX_FRAMES");
	if (r->nframes != 0 && r->kind != RTPROF_REC_SAMPLE &&
	    r->kind != RTPROF_REC_BACKTRACE && r->kind != RTPROF_REC_KSTACK)
		touch_fail(r, "frames in a record that is not SAMPLE, "
		    "BACKTRACE or KSTACK");
	for (unsigned i = 0; i < r->nvals; i++) {
		const struct rtprof_val *v = &r->vals[i];

		if (v->kind < RTPROF_VAL_I64 || v->kind > RTPROF_VAL_STR)
			touch_fail(r, "value of an unknown kind");
		if (v->kind == RTPROF_VAL_STR)
			touch_bytes(v->v.str.p, v->v.str.n);
	}
	if (r->frames != NULL)
		touch_bytes(r->frames, r->nframes * sizeof(r->frames[0]));
	if (r->label_mask != NULL)
		touch_bytes(r->label_mask, RTPROF_REC_MASK_WORDS * 8);
}

static inline int
touch_header(void *c, const struct rtprof_dump_header *h)
{
	(void)c;
	touch_str(h->process);
	touch_str(h->exe);
	for (uint32_t i = 0; i < h->argc; i++)
		touch_str(h->argv[i]);
	for (uint32_t i = 0; i < h->ncategories; i++) {
		touch_str(h->category_names[i]);
		touch_str(h->category_colors[i]);
	}
	touch_str(h->machine.sysname);
	touch_str(h->machine.release);
	touch_str(h->machine.machine);
	touch_str(h->machine.hostname);
	touch_str(h->clock.source);
	touch_str(h->settings.mode);
	return 0;
}

static inline int
touch_modules(void *c, const struct rtprof_dump_module *m, size_t n)
{
	(void)c;
	for (size_t i = 0; i < n; i++) {
		touch_str(m[i].path);
		touch_bytes(m[i].build_id, m[i].build_id_len);
	}
	return 0;
}

static inline int
touch_thread(void *c, const struct rtprof_dump_thread *t)
{
	(void)c;
	touch_str(t->name);
	return 0;
}

static inline int
touch_schema(void *c, const struct rtprof_dump_schema *s)
{
	(void)c;
	touch_str(s->name);
	touch_str(s->tooltip);
	touch_str(s->table);
	touch_str(s->chart);
	for (uint32_t i = 0; i < s->nfields; i++) {
		touch_str(s->fields[i].key);
		touch_str(s->fields[i].label);
		touch_str(s->fields[i].format);
	}
	return 0;
}

static inline int
touch_counter(void *c, const struct rtprof_dump_counter *k)
{
	(void)c;
	touch_str(k->name);
	touch_str(k->category);
	touch_str(k->description);
	return 0;
}

static inline int
touch_string(void *c, uint64_t ref, const char *text, size_t len)
{
	(void)c;
	(void)ref;
	touch_bytes(text, len);
	/* NUL-terminated as well (dump_reader.h). */
	if (text[len] != '\0')
		abort();
	return 0;
}

static inline int
touch_rec(void *c, const struct rtprof_dump_data *d,
    const struct rtprof_rec_view *r)
{
	(void)c;
	(void)d;
	touch_record(r);
	return 0;
}

static inline int
touch_values(void *c, uint64_t ticks, size_t n, const uint32_t *ids,
    const int64_t *values)
{
	(void)c;
	(void)ticks;
	touch_bytes(ids, n * sizeof(ids[0]));
	touch_bytes(values, n * sizeof(values[0]));
	return 0;
}

static inline int
touch_event(void *c, const struct rtprof_dump_event *e)
{
	(void)c;
	touch_str(e->what);
	touch_str(e->message);
	return 0;
}

static inline int
touch_trailer(void *c, const struct rtprof_dump_trailer *t)
{
	(void)c;
	touch_bytes(t->threads, t->nthreads * sizeof(t->threads[0]));
	return 0;
}

static inline int
touch_damage(void *c, const struct rtprof_dump_damage *d)
{
	(void)c;
	touch_str(d->message);
	return 0;
}

/* Every callback set. */
static inline void
touch_callbacks(struct rtprof_dump_cb *cb)
{
	memset(cb, 0, sizeof(*cb));
	cb->on_header = touch_header;
	cb->on_modules = touch_modules;
	cb->on_thread = touch_thread;
	cb->on_schema = touch_schema;
	cb->on_counter = touch_counter;
	cb->on_string = touch_string;
	cb->on_record = touch_rec;
	cb->on_values = touch_values;
	cb->on_event = touch_event;
	cb->on_trailer = touch_trailer;
	cb->on_damage = touch_damage;
}

#endif /* RTPROF_FUZZ_DUMP_TOUCH_H */
