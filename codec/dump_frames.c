/*
 * dump_frames.c - every frame but DATA: one msgpack object each.
 *
 * Pipeline (dump_int.h): dump_reader.c hands a frame here; its payload,
 * checked by mp_check() and unpacked by msgpack-c (dump_msgpack.c), is
 * decoded by kind (HEADER, MODULES, THREAD, SCHEMA, COUNTER, STRING,
 * PAUSE, VALUES, EVENT, TRAILER, MODULES_CHANGED, IMAGE) into the
 * structures of dump_reader.h, copied into the frame's arena, and handed
 * to its callback.
 *
 * Context: any thread; each call owns all of its state.
 */
#include "dump_int.h"

/* ------------------------------------------------------------------ */
/* Frame payloads.                                                    */

static const char *const empty_list[1] = { NULL };

static void
dec_machine(struct dec *d, const msgpack_object *o, struct rtprof_dump_header *h)
{
	const msgpack_object_kv *kv;
	uint32_t n;

	obj_map(d, o, &kv, &n);

	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (mp_key_is(k, "sysname"))
			h->machine.sysname = obj_str(d, v, NULL);
		else if (mp_key_is(k, "release"))
			h->machine.release = obj_str(d, v, NULL);
		else if (mp_key_is(k, "machine"))
			h->machine.machine = obj_str(d, v, NULL);
		else if (mp_key_is(k, "hostname"))
			h->machine.hostname = obj_str(d, v, NULL);
		else if (mp_key_is(k, "cpus"))
			h->machine.cpus = obj_i64(d, v);
		else if (mp_key_is(k, "boot_id"))
			h->machine.boot_id = obj_str(d, v, NULL);
	}
}

static void
dec_clock(struct dec *d, const msgpack_object *o, struct rtprof_dump_header *h)
{
	const msgpack_object_kv *kv;
	uint32_t n;

	obj_map(d, o, &kv, &n);

	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (mp_key_is(k, "source"))
			h->clock.source = obj_str(d, v, NULL);
		else if (mp_key_is(k, "ticks_per_second"))
			h->clock.ticks_per_second = obj_f64(d, v);
		else if (mp_key_is(k, "start_ticks"))
			h->clock.start_ticks = obj_u64(d, v);
		else if (mp_key_is(k, "start_mono_ns"))
			h->clock.start_mono_ns = obj_i64(d, v);
		else if (mp_key_is(k, "start_wall_ns"))
			h->clock.start_wall_ns = obj_i64(d, v);
	}
}

static void
dec_settings(struct dec *d, const msgpack_object *o,
    struct rtprof_dump_header *h)
{
	const msgpack_object_kv *kv;
	uint32_t n;

	obj_map(d, o, &kv, &n);

	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (mp_key_is(k, "mode"))
			h->settings.mode = obj_str(d, v, NULL);
		else if (mp_key_is(k, "memory_limit"))
			h->settings.memory_limit = obj_u64(d, v);
		else if (mp_key_is(k, "chunk_size"))
			h->settings.chunk_size = obj_u64(d, v);
		else if (mp_key_is(k, "prefill"))
			h->settings.prefill = obj_u64(d, v);
		else if (mp_key_is(k, "max_bytes"))
			h->settings.max_bytes = obj_u64(d, v);
		else if (mp_key_is(k, "flush_interval_us"))
			h->settings.flush_interval_us = obj_u64(d, v);
		else if (mp_key_is(k, "sample_interval_us"))
			h->settings.sample_interval_us = obj_u64(d, v);
	}
}

static void
dec_sampling(struct dec *d, const msgpack_object *o,
    struct rtprof_dump_header *h)
{
	const msgpack_object_kv *kv;
	uint32_t n;

	obj_map(d, o, &kv, &n);
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (mp_key_is(k, "method"))
			h->sampling.method = obj_str(d, v, NULL);
		else if (mp_key_is(k, "why"))
			h->sampling.why = obj_str(d, v, NULL);
		else if (mp_key_is(k, "kernel_stacks"))
			h->sampling.kernel_stacks = v->type ==
			    MSGPACK_OBJECT_BOOLEAN ? v->via.boolean : -1;
	}
}

static void
dec_cmdline(struct dec *d, const msgpack_object *o,
    struct rtprof_dump_header *h)
{
	const msgpack_object *a;
	const char **argv;
	uint32_t n;

	if (!obj_array(d, o, 0, RTPROF_DUMP_MAX_ARGS, &a, &n))
		return;
	argv = dec_alloc(d, ((size_t)n + 1) * sizeof(*argv));
	if (argv == NULL)
		return;
	for (uint32_t i = 0; i < n; i++)
		argv[i] = obj_str(d, &a[i], NULL);
	argv[n] = NULL;
	h->argc = n;
	h->argv = argv;
}

static void
dec_categories(struct dec *d, const msgpack_object *o,
    struct rtprof_dump_header *h)
{
	const msgpack_object *a, *e;
	const char **names, **colors;
	uint32_t n, m;

	if (!obj_array(d, o, 0, RTPROF_DUMP_MAX_CATEGORIES, &a, &n))
		return;
	names = dec_alloc(d, ((size_t)n + 1) * sizeof(*names));
	colors = dec_alloc(d, ((size_t)n + 1) * sizeof(*colors));
	if (names == NULL || colors == NULL)
		return;
	for (uint32_t i = 0; i < n; i++) {
		bool ok = obj_array(d, &a[i], 2, UINT32_MAX, &e, &m);

		names[i] = ok ? obj_str(d, &e[0], NULL) : "";
		colors[i] = ok ? obj_str(d, &e[1], NULL) : "";
	}
	names[n] = colors[n] = NULL;
	h->ncategories = n;
	h->category_names = names;
	h->category_colors = colors;
}

static int
frame_header(struct dec *d, const msgpack_object *o)
{
	struct rtprof_dump_header h;
	const struct rtprof_dump_cb *cb = d->r->cb;
	const msgpack_object_kv *kv;
	uint32_t n;

	obj_map(d, o, &kv, &n);
	memset(&h, 0, sizeof(h));
	h.process = h.exe = "";
	h.argv = empty_list;
	h.machine.sysname = h.machine.release = h.machine.machine = "";
	h.machine.hostname = h.machine.boot_id = "";
	h.clock.source = "";
	h.settings.mode = "";
	h.sampling.method = h.sampling.why = "";
	h.sampling.kernel_stacks = -1;
	h.category_names = h.category_colors = empty_list;
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (mp_key_is(k, "format"))
			h.format = obj_i64(d, v);
		else if (mp_key_is(k, "session"))
			h.session = (uint32_t)obj_max(d, v, UINT32_MAX);
		else if (mp_key_is(k, "generation"))
			h.generation = obj_u64(d, v);
		else if (mp_key_is(k, "pid"))
			h.pid = obj_i64(d, v);
		else if (mp_key_is(k, "ppid"))
			h.ppid = obj_i64(d, v);
		else if (mp_key_is(k, "process"))
			h.process = obj_str(d, v, NULL);
		else if (mp_key_is(k, "exe"))
			h.exe = obj_str(d, v, NULL);
		else if (mp_key_is(k, "cmdline"))
			dec_cmdline(d, v, &h);
		else if (mp_key_is(k, "machine"))
			dec_machine(d, v, &h);
		else if (mp_key_is(k, "clock"))
			dec_clock(d, v, &h);
		else if (mp_key_is(k, "settings"))
			dec_settings(d, v, &h);
		else if (mp_key_is(k, "sampling"))
			dec_sampling(d, v, &h);
		else if (mp_key_is(k, "categories"))
			dec_categories(d, v, &h);
	}
	if (d->bad || d->err || cb->on_header == NULL)
		return 0;
	return cb->on_header(cb->ctx, &h);
}

/* An array of modules, [[path, start, end, offset, build_id], ...], into
 * *@out (decoder arena) and *@n. */
static void
dec_modules(struct dec *d, const msgpack_object *o,
    struct rtprof_dump_module **out, uint32_t *n)
{
	const msgpack_object *a, *e;
	struct rtprof_dump_module *m;
	uint32_t k;

	*out = NULL;
	*n = 0;
	if (!obj_array(d, o, 0, RTPROF_DUMP_MAX_MODULES, &a, n))
		return;
	m = dec_alloc(d, ((size_t)*n + 1) * sizeof(*m));
	if (m == NULL) {
		*n = 0;
		return;
	}
	for (uint32_t i = 0; i < *n; i++) {
		bool ok = obj_array(d, &a[i], 5, UINT32_MAX, &e, &k);

		memset(&m[i], 0, sizeof(m[i]));
		m[i].path = "";
		if (!ok)
			continue;
		m[i].path = obj_str(d, &e[0], NULL);
		m[i].start = obj_u64(d, &e[1]);
		m[i].end = obj_u64(d, &e[2]);
		m[i].offset = obj_u64(d, &e[3]);
		if (e[4].type == MSGPACK_OBJECT_BIN) {
			m[i].build_id_len = e[4].via.bin.size;
			if (m[i].build_id_len != 0)
				m[i].build_id =
				    (const unsigned char *)e[4].via.bin.ptr;
		} else if (e[4].type != MSGPACK_OBJECT_NIL) {
			dec_fail(d, "bin expected (build id)");
		}
	}
	*out = m;
}

static int
frame_modules(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	struct rtprof_dump_module *m;
	uint32_t n;

	dec_modules(d, o, &m, &n);
	if (d->bad || d->err || cb->on_modules == NULL)
		return 0;
	return cb->on_modules(cb->ctx, m, n);
}

/* MODULES_CHANGED: {ticks, added: [module], removed: [module]}. */
static int
frame_modules_changed(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	struct rtprof_dump_module_change c;
	struct rtprof_dump_module *m;
	const msgpack_object_kv *kv;
	bool has_ticks = false;
	uint32_t n, k;
	bool is_map = obj_map(d, o, &kv, &n);

	memset(&c, 0, sizeof(c));
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *key = &kv[i].key, *v = &kv[i].val;

		if (mp_key_is(key, "ticks")) {
			c.ticks = obj_u64(d, v);
			has_ticks = true;
		} else if (mp_key_is(key, "added")) {
			dec_modules(d, v, &m, &k);
			c.added = m;
			c.nadded = k;
		} else if (mp_key_is(key, "removed")) {
			dec_modules(d, v, &m, &k);
			c.removed = m;
			c.nremoved = k;
		}
	}
	if (is_map && !has_ticks)
		dec_fail(d, "MODULES_CHANGED without ticks");
	if (d->bad || d->err || cb->on_module_change == NULL)
		return 0;
	return cb->on_module_change(cb->ctx, &c);
}

/* IMAGE: [address, bytes]. */
static int
frame_image(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	const msgpack_object *e;
	uint32_t n;
	uint64_t addr;

	if (!obj_array(d, o, 2, 2, &e, &n))
		return 0;
	addr = obj_u64(d, &e[0]);
	if (e[1].type != MSGPACK_OBJECT_BIN)
		dec_fail(d, "bin expected (image)");
	if (d->bad || d->err || cb->on_image == NULL)
		return 0;
	return cb->on_image(cb->ctx, addr, e[1].via.bin.ptr, e[1].via.bin.size);
}

static int
frame_thread(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	struct rtprof_dump_thread t;
	bool has_tid = false;
	const msgpack_object_kv *kv;
	uint32_t n;
	bool is_map = obj_map(d, o, &kv, &n);

	memset(&t, 0, sizeof(t));
	t.name = "";
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (mp_key_is(k, "tid")) {
			t.tid = obj_i64(d, v);
			has_tid = true;
		} else if (mp_key_is(k, "name")) {
			t.name = obj_str(d, v, NULL);
		} else if (mp_key_is(k, "flags")) {
			t.flags = obj_u64(d, v);
		} else if (mp_key_is(k, "register_ticks")) {
			t.register_ticks = obj_u64(d, v);
		} else if (mp_key_is(k, "unregister_ticks")) {
			t.has_unregister = v->type != MSGPACK_OBJECT_NIL;
			if (t.has_unregister)
				t.unregister_ticks = obj_u64(d, v);
		} else if (mp_key_is(k, "totals")) {
			const msgpack_object *e;
			uint32_t m;

			t.has_totals = obj_array(d, v, 4, UINT32_MAX, &e, &m);
			if (t.has_totals) {
				t.totals.recorded = obj_u64(d, &e[0]);
				t.totals.dropped_full = obj_u64(d, &e[1]);
				t.totals.dropped_nested = obj_u64(d, &e[2]);
				t.totals.recycled = obj_u64(d, &e[3]);
			}
		}
	}
	if (is_map && !has_tid)
		dec_fail(d, "THREAD without tid");
	t.totals.tid = t.tid;
	if (d->bad || d->err || cb->on_thread == NULL)
		return 0;
	return cb->on_thread(cb->ctx, &t);
}

static void
dec_fields(struct dec *d, const msgpack_object *o,
    struct rtprof_dump_schema *s)
{
	const msgpack_object *a, *e;
	struct rtprof_dump_field *f;
	uint32_t n, k;

	if (!obj_array(d, o, 0, RTPROF_DUMP_MAX_FIELDS, &a, &n))
		return;
	f = dec_alloc(d, ((size_t)n + 1) * sizeof(*f));
	if (f == NULL)
		return;
	for (uint32_t i = 0; i < n; i++) {
		bool ok = obj_array(d, &a[i], 4, UINT32_MAX, &e, &k);

		f[i].key = f[i].label = f[i].format = "";
		f[i].kind = 0;
		if (!ok)
			continue;
		f[i].key = obj_str(d, &e[0], NULL);
		f[i].label = obj_str(d, &e[1], NULL);
		f[i].format = obj_str(d, &e[2], NULL);
		f[i].kind = (uint32_t)obj_max(d, &e[3], UINT32_MAX);
	}
	s->nfields = n;
	s->fields = f;
}

static int
frame_schema(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	struct rtprof_dump_schema s;
	bool has_id = false;
	const msgpack_object_kv *kv;
	uint32_t n;
	bool is_map = obj_map(d, o, &kv, &n);

	memset(&s, 0, sizeof(s));
	s.name = "";
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (mp_key_is(k, "id")) {
			s.id = (uint32_t)obj_max(d, v, UINT32_MAX);
			has_id = true;
		} else if (mp_key_is(k, "name")) {
			s.name = obj_str(d, v, NULL);
		} else if (mp_key_is(k, "category")) {
			s.category = (uint32_t)obj_max(d, v, UINT32_MAX);
		} else if (mp_key_is(k, "display")) {
			s.display = obj_u64(d, v);
		} else if (mp_key_is(k, "tooltip")) {
			s.tooltip = obj_str_or_nil(d, v);
		} else if (mp_key_is(k, "table")) {
			s.table = obj_str_or_nil(d, v);
		} else if (mp_key_is(k, "chart")) {
			s.chart = obj_str_or_nil(d, v);
		} else if (mp_key_is(k, "fields")) {
			dec_fields(d, v, &s);
		}
	}
	if (is_map && !has_id)
		dec_fail(d, "SCHEMA without id");
	if (d->bad || d->err || cb->on_schema == NULL)
		return 0;
	return cb->on_schema(cb->ctx, &s);
}

static int
frame_counter(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	struct rtprof_dump_counter c;
	bool has_id = false;
	const msgpack_object_kv *kv;
	uint32_t n;
	bool is_map = obj_map(d, o, &kv, &n);

	memset(&c, 0, sizeof(c));
	c.name = c.category = c.description = c.unit = "";
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (mp_key_is(k, "id")) {
			c.id = (uint32_t)obj_max(d, v, UINT32_MAX);
			has_id = true;
		} else if (mp_key_is(k, "name")) {
			c.name = obj_str(d, v, NULL);
		} else if (mp_key_is(k, "category")) {
			c.category = obj_str(d, v, NULL);
		} else if (mp_key_is(k, "description")) {
			c.description = obj_str(d, v, NULL);
		} else if (mp_key_is(k, "kind")) {
			c.kind = (uint32_t)obj_max(d, v, UINT32_MAX);
		} else if (mp_key_is(k, "unit")) {
			c.unit = obj_str(d, v, NULL);
		}
	}
	if (is_map && !has_id)
		dec_fail(d, "COUNTER without id");
	if (d->bad || d->err || cb->on_counter == NULL)
		return 0;
	return cb->on_counter(cb->ctx, &c);
}

static int
frame_string(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	const msgpack_object *a;
	uint64_t ref;
	const char *text;
	size_t len;
	uint32_t n;

	if (!obj_array(d, o, 2, UINT32_MAX, &a, &n))
		return 0;
	ref = obj_u64(d, &a[0]);
	text = obj_str(d, &a[1], &len);
	if (d->bad || d->err || cb->on_string == NULL)
		return 0;
	return cb->on_string(cb->ctx, ref, text, len);
}

static int
frame_pause(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	const msgpack_object *a;
	uint64_t t0, t1;
	uint32_t n;

	if (!obj_array(d, o, 2, UINT32_MAX, &a, &n))
		return 0;
	t0 = obj_u64(d, &a[0]);
	t1 = obj_u64(d, &a[1]);
	if (d->bad || cb->on_pause == NULL)
		return 0;
	return cb->on_pause(cb->ctx, t0, t1);
}

static int
frame_values(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	const msgpack_object *a, *pairs, *e;
	uint32_t n, m, k;
	uint64_t ticks;
	uint32_t *ids;
	int64_t *vals;

	if (!obj_array(d, o, 2, UINT32_MAX, &a, &n))
		return 0;
	ticks = obj_u64(d, &a[0]);
	if (!obj_array(d, &a[1], 0, RTPROF_DUMP_MAX_VALUES, &pairs, &m))
		return 0;
	ids = dec_alloc(d, ((size_t)m + 1) * sizeof(*ids));
	vals = dec_alloc(d, ((size_t)m + 1) * sizeof(*vals));
	if (ids == NULL || vals == NULL)
		return 0;
	for (uint32_t i = 0; i < m; i++) {
		bool ok = obj_array(d, &pairs[i], 2, UINT32_MAX, &e, &k);

		ids[i] = 0;
		vals[i] = 0;
		if (!ok)
			continue;
		ids[i] = (uint32_t)obj_max(d, &e[0], UINT32_MAX);
		vals[i] = obj_i64(d, &e[1]);
	}
	if (d->bad || d->err || cb->on_values == NULL)
		return 0;
	return cb->on_values(cb->ctx, ticks, m, ids, vals);
}

static int
frame_event(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	struct rtprof_dump_event e;
	bool has_what = false;
	const msgpack_object_kv *kv;
	uint32_t n;
	bool is_map = obj_map(d, o, &kv, &n);

	memset(&e, 0, sizeof(e));
	e.what = "";
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (mp_key_is(k, "ticks")) {
			e.ticks = obj_u64(d, v);
		} else if (mp_key_is(k, "what")) {
			e.what = obj_str(d, v, NULL);
			has_what = true;
		} else if (mp_key_is(k, "errno")) {
			e.errnum = obj_i64(d, v);
			e.has_errno = true;
		} else if (mp_key_is(k, "message")) {
			e.message = obj_str(d, v, NULL);
		} else if (mp_key_is(k, "max_bytes")) {
			e.max_bytes = obj_u64(d, v);
			e.has_max_bytes = true;
		}
	}
	if (is_map && !has_what)
		dec_fail(d, "EVENT without what");
	if (d->bad || d->err || cb->on_event == NULL)
		return 0;
	return cb->on_event(cb->ctx, &e);
}

static void
dec_trailer_threads(struct dec *d, const msgpack_object *o,
    struct rtprof_dump_trailer *t)
{
	struct rtprof_dump_trailer_thread *th;
	const msgpack_object *a, *e;
	uint32_t n, k;

	if (!obj_array(d, o, 0, RTPROF_DUMP_MAX_THREADS, &a, &n))
		return;
	th = dec_alloc(d, ((size_t)n + 1) * sizeof(*th));
	if (th == NULL)
		return;
	for (uint32_t i = 0; i < n; i++) {
		bool ok = obj_array(d, &a[i], 5, UINT32_MAX, &e, &k);

		memset(&th[i], 0, sizeof(th[i]));
		if (!ok)
			continue;
		th[i].tid = obj_i64(d, &e[0]);
		th[i].recorded = obj_u64(d, &e[1]);
		th[i].dropped_full = obj_u64(d, &e[2]);
		th[i].dropped_nested = obj_u64(d, &e[3]);
		th[i].recycled = obj_u64(d, &e[4]);
	}
	t->nthreads = n;
	t->threads = th;
}

static int
frame_trailer(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	struct rtprof_dump_trailer t;
	const msgpack_object_kv *kv;
	uint32_t n;

	obj_map(d, o, &kv, &n);
	memset(&t, 0, sizeof(t));
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (mp_key_is(k, "stop_ticks"))
			t.stop_ticks = obj_u64(d, v);
		else if (mp_key_is(k, "stop_mono_ns"))
			t.stop_mono_ns = obj_i64(d, v);
		else if (mp_key_is(k, "stop_wall_ns"))
			t.stop_wall_ns = obj_i64(d, v);
		else if (mp_key_is(k, "frames"))
			t.frames = obj_u64(d, v);
		else if (mp_key_is(k, "bytes"))
			t.bytes = obj_u64(d, v);
		else if (mp_key_is(k, "chunks_lost"))
			t.chunks_lost = obj_u64(d, v);
		else if (mp_key_is(k, "samples_lost"))
			t.samples_lost = obj_u64(d, v);
		else if (mp_key_is(k, "limit_reached"))
			t.limit_reached = obj_bool(d, v);
		else if (mp_key_is(k, "threads"))
			dec_trailer_threads(d, v, &t);
		else if (mp_key_is(k, "threads_omitted"))
			t.threads_omitted = obj_u64(d, v);
	}
	if (d->bad || d->err || cb->on_trailer == NULL)
		return 0;
	return cb->on_trailer(cb->ctx, &t);
}

/* CATEGORY: {id, name, color}; id and name required. */
static int
frame_category(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	struct rtprof_dump_category c;
	bool has_id = false;
	const msgpack_object_kv *kv;
	uint32_t n;
	bool is_map = obj_map(d, o, &kv, &n);

	memset(&c, 0, sizeof(c));
	c.name = NULL;
	c.color = "";
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (mp_key_is(k, "id")) {
			c.id = (uint32_t)obj_max(d, v,
			    RTPROF_WIRE_MAX_CATEGORIES - 1);
			has_id = true;
		} else if (mp_key_is(k, "name")) {
			c.name = obj_str(d, v, NULL);
		} else if (mp_key_is(k, "color")) {
			c.color = obj_str(d, v, NULL);
		}
	}
	if (is_map && (!has_id || c.name == NULL))
		dec_fail(d, "CATEGORY without id or name");
	if (d->bad || d->err || cb->on_category == NULL)
		return 0;
	return cb->on_category(cb->ctx, &c);
}

/* Any frame but DATA: one msgpack object, decoded by kind. */
int
frame_object(struct reader *r, const struct rtprof_frame *f,
    const struct sess_slot *s)
{
	struct dec d = { .r = r };
	msgpack_object o;
	size_t used = 0;
	int rc = 0;

	d.bad = mp_unpack_one(r, f->payload, f->hdr.len, &o, &used);
	/* The payload is exactly one object (docs/wire-format.md): bytes
	 * after it mean the writer and reader disagree on its shape, e.g. a
	 * map whose count is short. Extensions add map keys instead. */
	if (d.bad == NULL && used != f->hdr.len)
		d.bad = "bytes after the payload object";
	if (d.bad == NULL) {
		switch (f->hdr.kind) {
		case RTPROF_FRAME_HEADER: rc = frame_header(&d, &o); break;
		case RTPROF_FRAME_MODULES: rc = frame_modules(&d, &o); break;
		case RTPROF_FRAME_THREAD: rc = frame_thread(&d, &o); break;
		case RTPROF_FRAME_SCHEMA: rc = frame_schema(&d, &o); break;
		case RTPROF_FRAME_COUNTER: rc = frame_counter(&d, &o); break;
		case RTPROF_FRAME_STRING: rc = frame_string(&d, &o); break;
		case RTPROF_FRAME_PAUSE: rc = frame_pause(&d, &o); break;
		case RTPROF_FRAME_VALUES: rc = frame_values(&d, &o); break;
		case RTPROF_FRAME_EVENT: rc = frame_event(&d, &o); break;
		case RTPROF_FRAME_TRAILER: rc = frame_trailer(&d, &o); break;
		case RTPROF_FRAME_MODULES_CHANGED:
			rc = frame_modules_changed(&d, &o);
			break;
		case RTPROF_FRAME_IMAGE: rc = frame_image(&d, &o); break;
		case RTPROF_FRAME_CATEGORY: rc = frame_category(&d, &o); break;
		default: break;
		}
	}
	msgpack_unpacked_destroy(&r->up);
	dump_arena_reset(&r->ar);
	if (rc != 0)
		return rc;
	if (d.err != 0)
		return d.err;
	if (d.bad == NULL)
		return 0;
	r->st->bad_payloads++;
	return dump_report(r, RTPROF_DAMAGE_BAD_PAYLOAD, f->offset,
	    RTPROF_FRAME_OVERHEAD + (uint64_t)f->hdr.len, f->hdr.kind, s,
	    d.bad);
}
