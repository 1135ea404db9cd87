/*
 * dumpgen.c - see dumpgen.h. Writes what core/writer.c writes: descriptor
 * payloads packed with msgpack-c in the same key order and widths, DATA
 * frames holding records in the recorder's fixed-width encodings
 * (rt/rtprof.h, core/sampler.c), every frame numbered per session and
 * CRC-checked with codec/frame.h.
 *
 * Context: one thread per struct dg; no shared state.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "dumpgen.h"
#include "frame.h"
#include "wire.h"

/* Largest record the recorder writes: a typed marker of 10 copied strings
 * (5 + 10 * 257 bytes) or a SAMPLE of 128 frames (32 + 128 * 10). */
#define DG_MAX_REC 4096
#define DG_MAX_TYPED_FIELDS 10 /* every record but SAMPLE is a fixarray */
#define DG_MAX_STR 255         /* RTPROF_MAX_STRING */

/* One thread's pending DATA frame and its session totals. */
struct dg_thr {
	int64_t tid;
	unsigned char *buf;     /* chunk_bytes + DG_MAX_REC */
	size_t len;
	uint64_t nrec;
	uint64_t first, last;   /* first record's t0, largest t0 */
	uint64_t chunk_seq;     /* next DATA frame's chunk number */
	uint64_t recorded;      /* records written this session */
	uint64_t drop_full, drop_nested; /* for the next DATA frame */
};

struct dg {
	dg_write_fn write;
	void *ctx;
	size_t chunk_bytes;
	int err;                /* first sink error, latched */
	bool oom;               /* the payload scratch could not grow */
	uint64_t bytes;         /* handed to the sink, all sessions */
	/* Current session. */
	bool in_session;
	uint32_t session;
	uint32_t seq;           /* next frame's seq */
	uint64_t sess_bytes;    /* bytes of this session's frames */
	uint64_t generation;
	uint64_t nsessions;
	int64_t start_mono_ns, start_wall_ns;
	/* Threads of the current session, in order of appearance. */
	struct dg_thr *thr;
	size_t nthr, capthr;
	size_t last_thr;        /* lookup cache */
	msgpack_sbuffer sb;     /* payload scratch */
	msgpack_packer pk;
};

/* ------------------------------------------------------------------ */
/* Sinks.                                                               */

int
dg_write_fd(void *ctx, const void *p, size_t n)
{
	int fd = *(const int *)ctx;
	const char *c = p;

	while (n > 0) {
		ssize_t w = write(fd, c, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int
dg_write_mem(void *ctx, const void *p, size_t n)
{
	struct dg_mem *m = ctx;

	if (m->cap - m->n < n) {
		size_t cap = m->cap ? m->cap : 4096;
		unsigned char *np;

		while (cap - m->n < n) {
			if (cap > SIZE_MAX / 2)
				return -ENOMEM;
			cap *= 2;
		}
		np = realloc(m->p, cap);
		if (np == NULL)
			return -ENOMEM;
		m->p = np;
		m->cap = cap;
	}
	memcpy(m->p + m->n, p, n);
	m->n += n;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Frames.                                                              */

static int
sink(struct dg *g, const void *p, size_t n)
{
	int rc;

	if (g->err != 0)
		return g->err;
	if (n == 0)
		return 0;
	rc = g->write(g->ctx, p, n);
	if (rc < 0) {
		g->err = rc;
		return rc;
	}
	g->bytes += n;
	g->sess_bytes += n;
	return 0;
}

/*
 * Frame the payload @p1 + @p2 (either may be empty) as @kind with the
 * session's next seq, as write_frame() in core/writer.c does.
 * Return: 0 or the latched sink error.
 */
static int
frame_write(struct dg *g, uint8_t kind, const void *p1, size_t n1,
    const void *p2, size_t n2)
{
	unsigned char hdr[RTPROF_FRAME_HEADER_SIZE], crcb[4];
	struct rtprof_frame_hdr h;
	uint32_t crc;

	if (g->err != 0)
		return g->err;
	if (!g->in_session || n1 + n2 > RTPROF_FRAME_MAX_PAYLOAD)
		return -EINVAL;
	h.kind = kind;
	h.version = RTPROF_WIRE_VERSION;
	h.session = g->session;
	h.seq = g->seq;
	h.len = (uint32_t)(n1 + n2);
	rtprof_frame_hdr_encode(hdr, &h);
	crc = rtprof_crc32c(0, p1, n1);
	crc = rtprof_crc32c(crc, p2, n2);
	rtprof_put_le32(crcb, crc);
	if (sink(g, hdr, sizeof(hdr)) || sink(g, p1, n1) || sink(g, p2, n2) ||
	    sink(g, crcb, sizeof(crcb)))
		return g->err;
	g->seq++;
	return 0;
}

/* Starts packing a one-object payload into the scratch buffer. */
static msgpack_packer *
pk_start(struct dg *g)
{
	g->sb.size = 0;
	g->oom = false;
	return &g->pk;
}

/* The packer ignores its writer's errors: remember them. */
static int
sb_write(void *data, const char *buf, size_t len)
{
	struct dg *g = data;

	if (msgpack_sbuffer_write(&g->sb, buf, len) != 0)
		g->oom = true;
	return 0;
}

static int
pk_frame(struct dg *g, uint8_t kind)
{
	if (g->oom) {
		g->oom = false;
		return -ENOMEM;
	}
	return frame_write(g, kind, g->sb.data, g->sb.size, NULL, 0);
}

static void
pack_str(msgpack_packer *pk, const char *s)
{
	if (s == NULL) {
		msgpack_pack_nil(pk);
		return;
	}
	msgpack_pack_str(pk, strlen(s));
	msgpack_pack_str_body(pk, s, strlen(s));
}

/* ------------------------------------------------------------------ */
/* Threads and DATA frames.                                             */

/* Context: the generator's thread. Return: @tid's slot, NULL on ENOMEM. */
static struct dg_thr *
thr_get(struct dg *g, int64_t tid)
{
	struct dg_thr *t;

	if (g->last_thr < g->nthr && g->thr[g->last_thr].tid == tid)
		return &g->thr[g->last_thr];
	for (size_t i = 0; i < g->nthr; i++)
		if (g->thr[i].tid == tid) {
			g->last_thr = i;
			return &g->thr[i];
		}
	if (g->nthr == g->capthr) {
		size_t cap = g->capthr ? g->capthr * 2 : 16;
		struct dg_thr *n = realloc(g->thr, cap * sizeof(*n));

		if (n == NULL)
			return NULL;
		g->thr = n;
		g->capthr = cap;
	}
	t = &g->thr[g->nthr];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->buf = malloc(g->chunk_bytes + DG_MAX_REC);
	if (t->buf == NULL)
		return NULL;
	g->last_thr = g->nthr++;
	return t;
}

/* Ends @t's pending DATA frame (a whole chunk: offset and index 0). */
static int
thr_flush(struct dg *g, struct dg_thr *t)
{
	unsigned char hb[128];
	msgpack_sbuffer b = { 0, (char *)hb, sizeof(hb) };
	msgpack_packer pk;
	int rc;

	if (t->nrec == 0)
		return g->err;
	/* 10 integers take at most 91 bytes: sbuffer_write never needs to
	 * grow the stack buffer (as write_data() in core/writer.c). */
	msgpack_packer_init(&pk, &b, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 10);
	msgpack_pack_int64(&pk, t->tid);
	msgpack_pack_uint64(&pk, g->generation);
	msgpack_pack_uint64(&pk, t->chunk_seq);
	msgpack_pack_uint32(&pk, 0);
	msgpack_pack_uint32(&pk, 0);
	msgpack_pack_uint64(&pk, t->nrec);
	msgpack_pack_uint64(&pk, t->first);
	msgpack_pack_uint64(&pk, t->last);
	msgpack_pack_uint64(&pk, t->drop_full);
	msgpack_pack_uint64(&pk, t->drop_nested);
	rc = frame_write(g, RTPROF_FRAME_DATA, b.data, b.size, t->buf, t->len);
	if (rc != 0)
		return rc;
	t->drop_full = t->drop_nested = 0;
	t->recorded += t->nrec;
	t->chunk_seq++;
	t->len = 0;
	t->nrec = 0;
	return 0;
}

/*
 * Room for a record of at most @max bytes in @tid's pending DATA frame
 * (which is written first when the record would not fit).
 * Return: where to encode, or NULL (error in *@rc).
 */
static unsigned char *
rec_open(struct dg *g, int64_t tid, size_t max, struct dg_thr **tp, int *rc)
{
	struct dg_thr *t;

	*rc = g->err;
	if (g->err != 0)
		return NULL;
	if (!g->in_session || max > DG_MAX_REC) {
		*rc = -EINVAL;
		return NULL;
	}
	t = thr_get(g, tid);
	if (t == NULL) {
		*rc = -ENOMEM;
		return NULL;
	}
	if (t->len > 0 && t->len + max > g->chunk_bytes &&
	    (*rc = thr_flush(g, t)) != 0)
		return NULL;
	*tp = t;
	return t->buf + t->len;
}

/* Commits the record that ends at @end, with time @t0. Return: 0. */
static int
rec_close(struct dg_thr *t, unsigned char *end, uint64_t t0)
{
	if (t->nrec == 0 || t0 > t->last)
		t->last = t0;
	if (t->nrec == 0)
		t->first = t0;
	t->len = (size_t)(end - t->buf);
	t->nrec++;
	return 0;
}

static unsigned char *
put64(unsigned char *p, unsigned char tag, uint64_t v)
{
	p[0] = tag;
	for (int i = 0; i < 8; i++)
		p[1 + i] = (unsigned char)(v >> (56 - 8 * i));
	return p + 9;
}

static unsigned char *
put16(unsigned char *p, unsigned v)
{
	p[0] = 0xcd;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)v;
	return p + 3;
}

/* STRREF: fixext 8, type 1, the address big-endian (rtprof__put_ptr). */
static unsigned char *
putref(unsigned char *p, uint64_t ref)
{
	p[0] = 0xd7;
	put64(p + 1, RTPROF_EXT_STRREF, ref);
	return p + 10;
}

/* ------------------------------------------------------------------ */
/* Public API.                                                          */

struct dg *
dg_open(dg_write_fn write, void *ctx, size_t chunk_bytes)
{
	struct dg *g = calloc(1, sizeof(*g));

	if (g == NULL)
		return NULL;
	g->write = write;
	g->ctx = ctx;
	g->chunk_bytes = chunk_bytes ? chunk_bytes : 65536;
	/* Room for the data header and one record past the limit. */
	if (g->chunk_bytes > RTPROF_FRAME_MAX_PAYLOAD - 128 - DG_MAX_REC)
		g->chunk_bytes = RTPROF_FRAME_MAX_PAYLOAD - 128 - DG_MAX_REC;
	msgpack_sbuffer_init(&g->sb);
	msgpack_packer_init(&g->pk, g, sb_write);
	return g;
}

static void
thr_free_all(struct dg *g)
{
	for (size_t i = 0; i < g->nthr; i++)
		free(g->thr[i].buf);
	g->nthr = 0;
	g->last_thr = 0;
}

int
dg_close(struct dg *g)
{
	int rc;

	if (g == NULL)
		return 0;
	dg_flush(g);
	rc = g->err;
	thr_free_all(g);
	free(g->thr);
	msgpack_sbuffer_destroy(&g->sb);
	free(g);
	return rc;
}

uint64_t
dg_bytes(const struct dg *g)
{
	return g->bytes;
}

uint32_t
dg_session(const struct dg *g)
{
	return g->in_session ? g->session : 0;
}

/* splitmix64: a session id that depends on the inputs only. */
static uint64_t
mix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

int
dg_header(struct dg *g, const struct dg_header *h)
{
	msgpack_packer *pk;
	double tps = h->ticks_per_second > 0 ? h->ticks_per_second : 1e9;
	const char *process = h->process ? h->process : "dumpgen";
	const char *machine = h->machine ? h->machine : "x86_64";
	int rc;

	if (g->err != 0)
		return g->err;
	/* A new session: the previous one's records go out under its id. */
	if (g->in_session && (rc = dg_flush(g)) != 0)
		return rc;
	thr_free_all(g);
	g->nsessions++;
	g->generation = h->generation ? h->generation : 1;
	g->session = h->session;
	if (g->session == 0)
		g->session = (uint32_t)mix64(((uint64_t)h->pid * 1000003u) ^
		    (g->generation << 40) ^ g->nsessions);
	if (g->session == 0)
		g->session = 1;
	g->seq = 0;
	g->sess_bytes = 0;
	g->start_mono_ns = h->start_mono_ns;
	g->start_wall_ns = h->start_wall_ns;
	g->in_session = true;

	/* Key order and widths as add_header() and rtprof__pack_process(). */
	pk = pk_start(g);
	msgpack_pack_map(pk, 12);
	pack_str(pk, "format");
	msgpack_pack_uint32(pk, RTPROF_WIRE_VERSION);
	pack_str(pk, "session");
	msgpack_pack_uint32(pk, g->session);
	pack_str(pk, "generation");
	msgpack_pack_uint64(pk, g->generation);
	pack_str(pk, "pid");
	msgpack_pack_int64(pk, h->pid);
	pack_str(pk, "ppid");
	msgpack_pack_int64(pk, h->ppid);
	pack_str(pk, "process");
	pack_str(pk, process);
	pack_str(pk, "exe");
	pack_str(pk, h->exe ? h->exe : "");
	pack_str(pk, "cmdline");
	msgpack_pack_array(pk, 1);
	pack_str(pk, process);
	pack_str(pk, "machine");
	msgpack_pack_map(pk, 5);
	pack_str(pk, "sysname");
	pack_str(pk, "Linux");
	pack_str(pk, "release");
	pack_str(pk, "6.1.0-dumpgen");
	pack_str(pk, "machine");
	pack_str(pk, machine);
	pack_str(pk, "hostname");
	pack_str(pk, "dumpgen");
	pack_str(pk, "cpus");
	msgpack_pack_int64(pk, 2);
	pack_str(pk, "clock");
	msgpack_pack_map(pk, 5);
	pack_str(pk, "source");
	pack_str(pk, tps == 1e9 ? "monotonic" : "tsc");
	pack_str(pk, "ticks_per_second");
	msgpack_pack_double(pk, tps);
	pack_str(pk, "start_ticks");
	msgpack_pack_uint64(pk, h->start_ticks);
	pack_str(pk, "start_mono_ns");
	msgpack_pack_int64(pk, h->start_mono_ns);
	pack_str(pk, "start_wall_ns");
	msgpack_pack_int64(pk, h->start_wall_ns);
	pack_str(pk, "settings");
	msgpack_pack_map(pk, 7);
	pack_str(pk, "mode");
	pack_str(pk, h->mode ? h->mode : "stream");
	pack_str(pk, "memory_limit");
	msgpack_pack_uint64(pk, 8u << 20);
	pack_str(pk, "chunk_size");
	msgpack_pack_uint64(pk, g->chunk_bytes);
	pack_str(pk, "prefill");
	msgpack_pack_uint32(pk, 2);
	pack_str(pk, "max_bytes");
	msgpack_pack_uint64(pk, 0);
	pack_str(pk, "flush_interval_us");
	msgpack_pack_uint32(pk, 10000);
	pack_str(pk, "sample_interval_us");
	msgpack_pack_uint64(pk, h->sample_interval_us ? h->sample_interval_us :
	    1000);
	pack_str(pk, "categories");
	if (h->categories != NULL) {
		msgpack_pack_array(pk, h->ncategories);
		for (size_t i = 0; i < h->ncategories; i++) {
			msgpack_pack_array(pk, 2);
			pack_str(pk, h->categories[i]);
			pack_str(pk, "blue");
		}
		return pk_frame(g, RTPROF_FRAME_HEADER);
	}
	msgpack_pack_array(pk, RTPROF_WIRE_NCATEGORIES);
#define X(id, name, color)                                                     \
	msgpack_pack_array(pk, 2);                                             \
	pack_str(pk, name);                                                    \
	pack_str(pk, color);
	RTPROF_WIRE_CATEGORIES
#undef X
	return pk_frame(g, RTPROF_FRAME_HEADER);
}

int
dg_modules(struct dg *g, const struct dg_module *m, size_t n)
{
	msgpack_packer *pk = pk_start(g);

	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < n; i++) {
		msgpack_pack_array(pk, 5);
		pack_str(pk, m[i].path ? m[i].path : "");
		msgpack_pack_uint64(pk, m[i].start);
		msgpack_pack_uint64(pk, m[i].end);
		msgpack_pack_uint64(pk, m[i].offset);
		msgpack_pack_bin(pk, m[i].build_id_len);
		msgpack_pack_bin_body(pk, m[i].build_id, m[i].build_id_len);
	}
	return pk_frame(g, RTPROF_FRAME_MODULES);
}

/* A THREAD frame; with @settled, its totals (writer.c add_thread()). */
static int
thread_frame(struct dg *g, int64_t tid, const char *name, unsigned flags,
    uint64_t register_ticks, uint64_t unregister_ticks,
    const struct dg_thr *settled)
{
	msgpack_packer *pk = pk_start(g);

	msgpack_pack_map(pk, settled != NULL ? 6 : 5);
	pack_str(pk, "tid");
	msgpack_pack_int64(pk, tid);
	pack_str(pk, "name");
	pack_str(pk, name ? name : "");
	pack_str(pk, "flags");
	msgpack_pack_uint32(pk, flags);
	pack_str(pk, "register_ticks");
	msgpack_pack_uint64(pk, register_ticks);
	pack_str(pk, "unregister_ticks");
	if (unregister_ticks != 0)
		msgpack_pack_uint64(pk, unregister_ticks);
	else
		msgpack_pack_nil(pk);
	if (settled != NULL) {
		pack_str(pk, "totals");
		msgpack_pack_array(pk, 4);
		msgpack_pack_uint64(pk, settled->recorded);
		msgpack_pack_uint64(pk, 0);
		msgpack_pack_uint64(pk, 0);
		msgpack_pack_uint64(pk, 0);
	}
	return pk_frame(g, RTPROF_FRAME_THREAD);
}

int
dg_thread(struct dg *g, int64_t tid, const char *name, unsigned flags,
    uint64_t register_ticks, uint64_t unregister_ticks)
{
	if (g->err != 0)
		return g->err;
	/* Listed in the trailer even without records, as the recorder's
	 * per-session accounts. */
	if (g->in_session && thr_get(g, tid) == NULL)
		return -ENOMEM;
	return thread_frame(g, tid, name, flags, register_ticks,
	    unregister_ticks, NULL);
}

int
dg_thread_settle(struct dg *g, int64_t tid, const char *name, unsigned flags,
    uint64_t register_ticks, uint64_t unregister_ticks)
{
	struct dg_thr *t;
	size_t i;
	int rc;

	if (g->err != 0)
		return g->err;
	if (!g->in_session || (t = thr_get(g, tid)) == NULL)
		return -EINVAL;
	if ((rc = thr_flush(g, t)) != 0)
		return rc;
	if ((rc = thread_frame(g, tid, name, flags, register_ticks,
	    unregister_ticks, t)) != 0)
		return rc;
	i = (size_t)(t - g->thr);
	free(t->buf);
	memmove(&g->thr[i], &g->thr[i + 1], (g->nthr - i - 1) * sizeof(*t));
	g->nthr--;
	g->last_thr = 0;
	return 0;
}

int
dg_string(struct dg *g, uint64_t ref, const char *text)
{
	msgpack_packer *pk = pk_start(g);
	size_t len = strnlen(text ? text : "", 4096);

	msgpack_pack_array(pk, 2);
	msgpack_pack_uint64(pk, ref);
	msgpack_pack_str(pk, len);
	msgpack_pack_str_body(pk, text ? text : "", len);
	return pk_frame(g, RTPROF_FRAME_STRING);
}

int
dg_schema_ex(struct dg *g, unsigned id, const char *name, unsigned category,
    unsigned display, const char *tooltip, const char *table,
    const char *chart, const struct dg_field *fields, size_t nfields)
{
	msgpack_packer *pk;

	if (nfields > DG_MAX_TYPED_FIELDS || id > 0xffff)
		return -EINVAL;
	pk = pk_start(g);
	msgpack_pack_map(pk, 8);
	pack_str(pk, "id");
	msgpack_pack_uint16(pk, (uint16_t)id);
	pack_str(pk, "name");
	pack_str(pk, name);
	pack_str(pk, "category");
	msgpack_pack_uint32(pk, category);
	pack_str(pk, "display");
	msgpack_pack_uint32(pk, display ? display : 3);
	pack_str(pk, "tooltip");
	pack_str(pk, tooltip);
	pack_str(pk, "table");
	pack_str(pk, table);
	pack_str(pk, "chart");
	pack_str(pk, chart);
	pack_str(pk, "fields");
	msgpack_pack_array(pk, nfields);
	for (size_t i = 0; i < nfields; i++) {
		const struct dg_field *f = &fields[i];

		msgpack_pack_array(pk, 4);
		pack_str(pk, f->key);
		pack_str(pk, f->label ? f->label : f->key);
		pack_str(pk, f->format ? f->format : "string");
		msgpack_pack_uint32(pk, f->kind);
	}
	return pk_frame(g, RTPROF_FRAME_SCHEMA);
}

int
dg_schema(struct dg *g, unsigned id, const char *name, unsigned category,
    const struct dg_field *fields, size_t nfields)
{
	return dg_schema_ex(g, id, name, category, 0, NULL, NULL, NULL, fields,
	    nfields);
}

int
dg_counter(struct dg *g, unsigned id, const char *name, const char *category,
    const char *description)
{
	msgpack_packer *pk;

	if (id > 0xffff)
		return -EINVAL;
	pk = pk_start(g);
	msgpack_pack_map(pk, 4);
	pack_str(pk, "id");
	msgpack_pack_uint16(pk, (uint16_t)id);
	pack_str(pk, "name");
	pack_str(pk, name);
	pack_str(pk, "category");
	pack_str(pk, category);
	pack_str(pk, "description");
	pack_str(pk, description);
	return pk_frame(g, RTPROF_FRAME_COUNTER);
}

int
dg_event(struct dg *g, uint64_t ticks, const char *what, int64_t errnum,
    const char *message, uint64_t max_bytes)
{
	msgpack_packer *pk = pk_start(g);
	bool sink_error = what != NULL && strcmp(what, "sink_error") == 0;
	bool limit = what != NULL && strcmp(what, "limit_reached") == 0;

	msgpack_pack_map(pk, 2 + (sink_error ? 2 : 0) + (limit ? 1 : 0));
	pack_str(pk, "ticks");
	msgpack_pack_uint64(pk, ticks);
	pack_str(pk, "what");
	pack_str(pk, what ? what : "");
	if (sink_error) {
		pack_str(pk, "errno");
		msgpack_pack_int64(pk, errnum);
		pack_str(pk, "message");
		pack_str(pk, message ? message : "");
	}
	if (limit) {
		pack_str(pk, "max_bytes");
		msgpack_pack_uint64(pk, max_bytes);
	}
	return pk_frame(g, RTPROF_FRAME_EVENT);
}

/* INSTANT, BEGIN, END: [kind, t, name, category] (rtprof.h). */
static int
rec_marker(struct dg *g, unsigned kind, int64_t tid, uint64_t t,
    uint64_t name_ref, unsigned category)
{
	struct dg_thr *th;
	unsigned char *p;
	int rc;

	if (category > 0x7f)
		return -EINVAL;
	if ((p = rec_open(g, tid, 22, &th, &rc)) == NULL)
		return rc;
	p[0] = 0x94;
	p[1] = (unsigned char)kind;
	p = put64(p + 2, 0xcf, t);
	p = putref(p, name_ref);
	*p++ = (unsigned char)category;
	return rec_close(th, p, t);
}

int
dg_rec_instant(struct dg *g, int64_t tid, uint64_t t, uint64_t name_ref,
    unsigned category)
{
	return rec_marker(g, RTPROF_REC_INSTANT, tid, t, name_ref, category);
}

int
dg_rec_begin(struct dg *g, int64_t tid, uint64_t t, uint64_t name_ref,
    unsigned category)
{
	return rec_marker(g, RTPROF_REC_BEGIN, tid, t, name_ref, category);
}

int
dg_rec_end(struct dg *g, int64_t tid, uint64_t t, uint64_t name_ref,
    unsigned category)
{
	return rec_marker(g, RTPROF_REC_END, tid, t, name_ref, category);
}

int
dg_rec_interval(struct dg *g, int64_t tid, uint64_t t0, uint64_t t1,
    uint64_t name_ref, unsigned category)
{
	struct dg_thr *th;
	unsigned char *p;
	int rc;

	if (category > 0x7f)
		return -EINVAL;
	if ((p = rec_open(g, tid, 31, &th, &rc)) == NULL)
		return rc;
	p[0] = 0x95;
	p[1] = RTPROF_REC_INTERVAL;
	p = put64(p + 2, 0xcf, t0);
	p = put64(p, 0xcf, t1);
	p = putref(p, name_ref);
	*p++ = (unsigned char)category;
	return rec_close(th, p, t0);
}

int
dg_rec_typed(struct dg *g, int64_t tid, unsigned phase, uint64_t t0,
    uint64_t t1, unsigned type, const unsigned *kinds, const uint64_t *vals,
    const char *const *strs, size_t nvals)
{
	struct dg_thr *th;
	unsigned char *p;
	int rc;

	if (phase > 3 || type > 0xffff || nvals > DG_MAX_TYPED_FIELDS)
		return -EINVAL;
	for (size_t i = 0; i < nvals; i++)
		if (kinds[i] < 1 || kinds[i] > 5)
			return -EINVAL;
	if ((p = rec_open(g, tid, 24 + nvals * (2 + DG_MAX_STR), &th, &rc)) ==
	    NULL)
		return rc;
	/* rtprof_marker_open(): t1 is 0 unless the phase is an interval. */
	p[0] = (unsigned char)(0x90 | (5 + nvals));
	p[1] = RTPROF_REC_TYPED;
	p[2] = (unsigned char)phase;
	p = put64(p + 3, 0xcf, t0);
	p = put64(p, 0xcf, phase == 1 ? t1 : 0);
	p = put16(p, type);
	for (size_t i = 0; i < nvals; i++) {
		const char *s;
		size_t n;

		switch (kinds[i]) {
		case 1:
			p = put64(p, 0xd3, vals[i]);
			break;
		case 2:
			p = put64(p, 0xcf, vals[i]);
			break;
		case 3:
			p = put64(p, 0xcb, vals[i]);
			break;
		case 4:
			p = putref(p, vals[i]);
			break;
		default:
			s = strs != NULL && strs[i] != NULL ? strs[i] : "";
			n = strnlen(s, DG_MAX_STR);
			p[0] = 0xd9;
			p[1] = (unsigned char)n;
			memcpy(p + 2, s, n);
			p += 2 + n;
			break;
		}
	}
	return rec_close(th, p, t0);
}

int
dg_rec_counter(struct dg *g, int64_t tid, uint64_t t, unsigned id,
    int64_t value)
{
	struct dg_thr *th;
	unsigned char *p;
	int rc;

	if (id > 0xffff)
		return -EINVAL;
	if ((p = rec_open(g, tid, 23, &th, &rc)) == NULL)
		return rc;
	p[0] = 0x94;
	p[1] = RTPROF_REC_COUNTER;
	p = put64(p + 2, 0xcf, t);
	p = put16(p, id);
	p = put64(p, 0xd3, (uint64_t)value);
	return rec_close(th, p, t);
}

static int
rec_sleepwake(struct dg *g, unsigned kind, int64_t tid, uint64_t t)
{
	struct dg_thr *th;
	unsigned char *p;
	int rc;

	if ((p = rec_open(g, tid, 11, &th, &rc)) == NULL)
		return rc;
	p[0] = 0x92;
	p[1] = (unsigned char)kind;
	p = put64(p + 2, 0xcf, t);
	return rec_close(th, p, t);
}

int
dg_rec_sleep(struct dg *g, int64_t tid, uint64_t t)
{
	return rec_sleepwake(g, RTPROF_REC_SLEEP, tid, t);
}

int
dg_rec_wake(struct dg *g, int64_t tid, uint64_t t)
{
	return rec_sleepwake(g, RTPROF_REC_WAKE, tid, t);
}

int
dg_rec_sample(struct dg *g, int64_t tid, uint64_t t, int64_t sampled_tid,
    uint64_t cpu_ns, unsigned flags, const uint64_t *frames,
    const uint64_t *label_mask, size_t nframes)
{
	struct dg_thr *th;
	unsigned char *p;
	unsigned arr = 5 + (unsigned)nframes;
	int rc;

	if (nframes > RTPROF_REC_MAX_FRAMES || flags > 0x7f)
		return -EINVAL;
	if ((p = rec_open(g, tid, 32 + nframes * 10, &th, &rc)) == NULL)
		return rc;
	/* rec_sample() in core/sampler.c: always array16. */
	p[0] = 0xdc;
	p[1] = (unsigned char)(arr >> 8);
	p[2] = (unsigned char)arr;
	p[3] = RTPROF_REC_SAMPLE;
	p = put64(p + 4, 0xcf, t);
	p = put64(p, 0xd3, (uint64_t)sampled_tid);
	p = put64(p, 0xcf, cpu_ns);
	*p++ = (unsigned char)flags;
	for (size_t i = 0; i < nframes; i++)
		p = label_mask != NULL && (label_mask[i / 64] >> (i % 64) & 1) ?
		    putref(p, frames[i]) : put64(p, 0xcf, frames[i]);
	return rec_close(th, p, t);
}

int
dg_rec_same(struct dg *g, int64_t tid, uint64_t t, int64_t sampled_tid,
    uint64_t cpu_ns, unsigned flags)
{
	struct dg_thr *th;
	unsigned char *p;
	int rc;

	if (flags > 0x7f)
		return -EINVAL;
	if ((p = rec_open(g, tid, 30, &th, &rc)) == NULL)
		return rc;
	p[0] = 0x95;
	p[1] = RTPROF_REC_SAME;
	p = put64(p + 2, 0xcf, t);
	p = put64(p, 0xd3, (uint64_t)sampled_tid);
	p = put64(p, 0xcf, cpu_ns);
	*p++ = (unsigned char)flags;
	return rec_close(th, p, t);
}

int
dg_rec_overhead(struct dg *g, int64_t tid, uint64_t t0, uint64_t t1,
    uint64_t lock_ns, uint64_t threads_ns, uint64_t counters_ns,
    uint64_t nthreads)
{
	struct dg_thr *th;
	unsigned char *p;
	int rc;

	if ((p = rec_open(g, tid, 56, &th, &rc)) == NULL)
		return rc;
	p[0] = 0x97;
	p[1] = RTPROF_REC_OVERHEAD;
	p = put64(p + 2, 0xcf, t0);
	p = put64(p, 0xcf, t1);
	p = put64(p, 0xcf, lock_ns);
	p = put64(p, 0xcf, threads_ns);
	p = put64(p, 0xcf, counters_ns);
	p = put64(p, 0xcf, nthreads);
	return rec_close(th, p, t0);
}

int
dg_drops(struct dg *g, int64_t tid, uint64_t full, uint64_t nested)
{
	struct dg_thr *t;

	if (g->err != 0)
		return g->err;
	if ((t = thr_get(g, tid)) == NULL)
		return -ENOMEM;
	t->drop_full += full;
	t->drop_nested += nested;
	return g->err;
}

int
dg_flush(struct dg *g)
{
	for (size_t i = 0; i < g->nthr && g->err == 0; i++)
		thr_flush(g, &g->thr[i]);
	return g->err;
}

int
dg_pause(struct dg *g, uint64_t start_ticks, uint64_t end_ticks)
{
	msgpack_packer *pk = pk_start(g);

	msgpack_pack_array(pk, 2);
	msgpack_pack_uint64(pk, start_ticks);
	msgpack_pack_uint64(pk, end_ticks);
	return pk_frame(g, RTPROF_FRAME_PAUSE);
}

int
dg_values(struct dg *g, uint64_t t, const uint32_t *ids, const int64_t *values,
    size_t n)
{
	msgpack_packer *pk = pk_start(g);

	msgpack_pack_array(pk, 2);
	msgpack_pack_uint64(pk, t);
	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < n; i++) {
		msgpack_pack_array(pk, 2);
		msgpack_pack_uint32(pk, ids[i]);
		msgpack_pack_int64(pk, values[i]);
	}
	return pk_frame(g, RTPROF_FRAME_VALUES);
}

int
dg_trailer(struct dg *g, uint64_t stop_ticks, int64_t stop_mono_ns)
{
	msgpack_packer *pk;
	int rc;

	if ((rc = dg_flush(g)) != 0)
		return rc;
	/* write_trailer(): `frames` is the trailer's own seq and `bytes`
	 * what the session wrote before it. */
	pk = pk_start(g);
	msgpack_pack_map(pk, 8);
	pack_str(pk, "stop_ticks");
	msgpack_pack_uint64(pk, stop_ticks);
	pack_str(pk, "stop_mono_ns");
	msgpack_pack_int64(pk, stop_mono_ns);
	pack_str(pk, "stop_wall_ns");
	/* Wrapping, not overflowing: extreme clocks are test input. */
	msgpack_pack_int64(pk, (int64_t)((uint64_t)g->start_wall_ns +
	    ((uint64_t)stop_mono_ns - (uint64_t)g->start_mono_ns)));
	pack_str(pk, "frames");
	msgpack_pack_uint32(pk, g->seq);
	pack_str(pk, "bytes");
	msgpack_pack_uint64(pk, g->sess_bytes);
	pack_str(pk, "chunks_lost");
	msgpack_pack_uint64(pk, 0);
	pack_str(pk, "limit_reached");
	msgpack_pack_false(pk);
	pack_str(pk, "threads");
	msgpack_pack_array(pk, g->nthr);
	for (size_t i = 0; i < g->nthr; i++) {
		msgpack_pack_array(pk, 5);
		msgpack_pack_int64(pk, g->thr[i].tid);
		msgpack_pack_uint64(pk, g->thr[i].recorded);
		msgpack_pack_uint64(pk, 0);
		msgpack_pack_uint64(pk, 0);
		msgpack_pack_uint64(pk, 0);
	}
	return pk_frame(g, RTPROF_FRAME_TRAILER);
}
