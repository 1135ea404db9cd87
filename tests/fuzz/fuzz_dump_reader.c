/*
 * fuzz_dump_reader.c - libFuzzer target: the whole dump decoder (frames,
 * CRCs, resynchronisation, msgpack payloads, records) on arbitrary bytes.
 * Every callback touches what it is given so ASan sees bad pointers.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dump_reader.h"

static volatile size_t sink;

static void
touch(const char *s)
{
	if (s != NULL)
		sink += strlen(s);
}

static int
on_header(void *c, const struct rtprof_dump_header *h)
{
	(void)c;
	touch(h->process);
	touch(h->exe);
	for (uint32_t i = 0; i < h->argc; i++)
		touch(h->argv[i]);
	for (uint32_t i = 0; i < h->ncategories; i++) {
		touch(h->category_names[i]);
		touch(h->category_colors[i]);
	}
	touch(h->clock.source);
	touch(h->settings.mode);
	return 0;
}

static int
on_modules(void *c, const struct rtprof_dump_module *m, size_t n)
{
	(void)c;
	for (size_t i = 0; i < n; i++) {
		touch(m[i].path);
		if (m[i].build_id_len)
			sink += m[i].build_id[m[i].build_id_len - 1];
	}
	return 0;
}

static int
on_thread(void *c, const struct rtprof_dump_thread *t)
{
	(void)c;
	touch(t->name);
	return 0;
}

static int
on_schema(void *c, const struct rtprof_dump_schema *s)
{
	(void)c;
	touch(s->name);
	touch(s->tooltip);
	for (uint32_t i = 0; i < s->nfields; i++) {
		touch(s->fields[i].key);
		touch(s->fields[i].format);
	}
	return 0;
}

static int
on_string(void *c, uint64_t ref, const char *text, size_t len)
{
	(void)c;
	(void)ref;
	if (len)
		sink += (unsigned char)text[len - 1];
	return 0;
}

static int
on_record(void *c, const struct rtprof_dump_data *d, const struct rtprof_rec_view *r)
{
	(void)c;
	(void)d;
	for (unsigned i = 0; i < r->nvals; i++)
		if (r->vals[i].kind == RTPROF_VAL_STR && r->vals[i].v.str.n)
			sink += (unsigned char)r->vals[i].v.str.p[r->vals[i].v.str.n - 1];
	return 0;
}

static int
on_trailer(void *c, const struct rtprof_dump_trailer *t)
{
	(void)c;
	for (size_t i = 0; i < t->nthreads; i++)
		sink += t->threads[i].recorded;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rtprof_dump_cb cb;
	struct rtprof_dump_stats st;

	memset(&cb, 0, sizeof(cb));
	cb.on_header = on_header;
	cb.on_modules = on_modules;
	cb.on_thread = on_thread;
	cb.on_schema = on_schema;
	cb.on_string = on_string;
	cb.on_record = on_record;
	cb.on_trailer = on_trailer;
	rtprof_dump_read_mem(data, size, &cb, &st);
	return 0;
}
