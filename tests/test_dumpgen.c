/*
 * test_dumpgen.c - tests/dumpgen.c against the strict decoder.
 *
 * Two sessions with every frame kind and every record kind (SAMPLE with
 * mixed label and native frames, more than 15 frames and the 128-frame
 * maximum; SAME; OVERHEAD; typed markers with all five field kinds) are
 * written to memory in small DATA frames, decoded with
 * rtprof_dump_read_mem(), and every value is compared with what was
 * written; the reader must report no damage at all. A failing sink must
 * latch its error.
 *
 * Context: one thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dump_reader.h"
#include "dumpgen.h"

#define MAXREC 2048
#define MAXSTREAM 8

/* A record as written, to compare with the decoded one. */
struct exp_rec {
	size_t sess;                    /* 1, 2 */
	int64_t stream;                 /* tid whose DATA frame holds it */
	struct rtprof_rec_view v;
	uint64_t frames[RTPROF_REC_MAX_FRAMES];
	uint64_t mask[RTPROF_REC_MASK_WORDS];
	char strs[10][256];
};

/* What a session was written with. */
struct exp_sess {
	struct dg_header h;
	uint32_t id;
	uint64_t bytes;                 /* bytes before the trailer */
	int64_t tids[MAXSTREAM];
	uint64_t recorded[MAXSTREAM];
	size_t ntids;
	uint64_t stop_ticks;
	int64_t stop_mono_ns;
};

static struct exp_rec exp_recs[MAXREC];
static size_t nexp;
static struct exp_sess sess[2];
static size_t nsess;

/* Decoder side. */
struct got {
	size_t sess;                    /* session being decoded, 1-based */
	uint32_t next_seq;
	uint64_t kinds[RTPROF_FRAME_KIND_MAX + 1];
	size_t next_rec;                /* per session: scan position */
	uint64_t chunk_seq[2][MAXSTREAM];
	uint64_t data_left;             /* records the DATA header promised */
	struct rtprof_dump_data data;
	uint64_t nrecords, modules, threads, schemas, counters, strings;
	uint64_t pauses, values, events, trailers;
	size_t rec_done[MAXREC];
};

static struct got got;

/* ------------------------------------------------------------------ */
/* Generation with expectations.                                        */

static struct exp_rec *
expect(int64_t stream, unsigned kind)
{
	struct exp_rec *e;

	RTPROF_CHECK(nexp < MAXREC);
	e = &exp_recs[nexp++];
	memset(e, 0, sizeof(*e));
	e->sess = nsess;
	e->stream = stream;
	e->v.kind = (uint8_t)kind;
	return e;
}

static void
stream_count(int64_t stream)
{
	struct exp_sess *s = &sess[nsess - 1];

	for (size_t i = 0; i < s->ntids; i++)
		if (s->tids[i] == stream) {
			s->recorded[i]++;
			return;
		}
	RTPROF_CHECK(s->ntids < MAXSTREAM);
	s->tids[s->ntids] = stream;
	s->recorded[s->ntids++] = 1;
}

static void
e_marker(struct dg *g, unsigned kind, int64_t tid, uint64_t t, uint64_t ref,
    unsigned cat)
{
	struct exp_rec *e = expect(tid, kind);
	int rc;

	e->v.t0 = e->v.t1 = t;
	e->v.name = ref;
	e->v.category = (uint8_t)cat;
	if (kind == RTPROF_REC_INSTANT)
		rc = dg_rec_instant(g, tid, t, ref, cat);
	else if (kind == RTPROF_REC_BEGIN)
		rc = dg_rec_begin(g, tid, t, ref, cat);
	else
		rc = dg_rec_end(g, tid, t, ref, cat);
	RTPROF_CHECK_EQ(rc, 0);
	stream_count(tid);
}

static void
e_interval(struct dg *g, int64_t tid, uint64_t t0, uint64_t t1, uint64_t ref,
    unsigned cat)
{
	struct exp_rec *e = expect(tid, RTPROF_REC_INTERVAL);

	e->v.t0 = t0;
	e->v.t1 = t1;
	e->v.name = ref;
	e->v.category = (uint8_t)cat;
	RTPROF_CHECK_EQ(dg_rec_interval(g, tid, t0, t1, ref, cat), 0);
	stream_count(tid);
}

static void
e_typed(struct dg *g, int64_t tid, unsigned phase, uint64_t t0, uint64_t t1,
    unsigned type, const unsigned *kinds, const uint64_t *vals,
    const char *const *strs, size_t n)
{
	struct exp_rec *e = expect(tid, RTPROF_REC_TYPED);

	e->v.phase = (uint8_t)phase;
	e->v.t0 = t0;
	e->v.t1 = phase == 1 ? t1 : t0;
	e->v.id = (uint16_t)type;
	e->v.nvals = (unsigned)n;
	for (size_t i = 0; i < n; i++) {
		struct rtprof_val *v = &e->v.vals[i];

		v->kind = (enum rtprof_val_kind)kinds[i];
		if (kinds[i] == 3)
			memcpy(&v->v.d, &vals[i], 8);
		else if (kinds[i] == 5) {
			size_t len = strnlen(strs[i], 255);

			memcpy(e->strs[i], strs[i], len);
			v->v.str.p = e->strs[i];
			v->v.str.n = (uint32_t)len;
		} else {
			v->v.u = vals[i];
		}
	}
	RTPROF_CHECK_EQ(dg_rec_typed(g, tid, phase, t0, t1, type, kinds, vals,
	    strs, n), 0);
	stream_count(tid);
}

static void
e_counter(struct dg *g, int64_t tid, uint64_t t, unsigned id, int64_t value)
{
	struct exp_rec *e = expect(tid, RTPROF_REC_COUNTER);

	e->v.t0 = e->v.t1 = t;
	e->v.id = (uint16_t)id;
	e->v.value = value;
	RTPROF_CHECK_EQ(dg_rec_counter(g, tid, t, id, value), 0);
	stream_count(tid);
}

static void
e_sleepwake(struct dg *g, int64_t tid, uint64_t t, int sleep)
{
	struct exp_rec *e = expect(tid, sleep ? RTPROF_REC_SLEEP :
	    RTPROF_REC_WAKE);

	e->v.t0 = e->v.t1 = t;
	RTPROF_CHECK_EQ(sleep ? dg_rec_sleep(g, tid, t) :
	    dg_rec_wake(g, tid, t), 0);
	stream_count(tid);
}

static void
e_sample(struct dg *g, int64_t tid, uint64_t t, int64_t stid, uint64_t cpu,
    unsigned flags, const uint64_t *frames, const uint64_t *mask, size_t n)
{
	struct exp_rec *e = expect(tid, RTPROF_REC_SAMPLE);

	e->v.t0 = e->v.t1 = t;
	e->v.tid = stid;
	e->v.cpu_ns = cpu;
	e->v.flags = (uint8_t)flags;
	e->v.nframes = (unsigned)n;
	memcpy(e->frames, frames, n * sizeof(*frames));
	if (mask != NULL)
		for (size_t i = 0; i < n; i++)
			e->mask[i / 64] |= mask[i / 64] & 1ull << (i % 64);
	RTPROF_CHECK_EQ(dg_rec_sample(g, tid, t, stid, cpu, flags, frames, mask,
	    n), 0);
	stream_count(tid);
}

static void
e_same(struct dg *g, int64_t tid, uint64_t t, int64_t stid, uint64_t cpu,
    unsigned flags)
{
	struct exp_rec *e = expect(tid, RTPROF_REC_SAME);

	e->v.t0 = e->v.t1 = t;
	e->v.tid = stid;
	e->v.cpu_ns = cpu;
	e->v.flags = (uint8_t)flags;
	RTPROF_CHECK_EQ(dg_rec_same(g, tid, t, stid, cpu, flags), 0);
	stream_count(tid);
}

static void
e_overhead(struct dg *g, int64_t tid, uint64_t t0, uint64_t t1,
    const uint64_t o[4])
{
	struct exp_rec *e = expect(tid, RTPROF_REC_OVERHEAD);

	e->v.t0 = t0;
	e->v.t1 = t1;
	memcpy(e->v.overhead, o, sizeof(e->v.overhead));
	RTPROF_CHECK_EQ(dg_rec_overhead(g, tid, t0, t1, o[0], o[1], o[2], o[3]),
	    0);
	stream_count(tid);
}

/* ------------------------------------------------------------------ */
/* The dump.                                                            */

enum {
	TID_MAIN = 4242,
	TID_AUDIO = 4243,
	TID_SAMPLER = 4244,
	REF_LOOP = 0x401000,
	REF_DECODE = 0x401010,
	REF_LABEL_A = 0x401020,
	REF_LABEL_B = 0x401030,
	REF_STATIC_VAL = 0x401040,
	SCHEMA_ID = 7
};

static const unsigned char build_id[] = { 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02 };
static const struct dg_module mods[] = {
	{ "/usr/bin/fake", 0x555500000000, 0x555500100000, 0x1000, build_id,
	    sizeof(build_id) },
	{ "/lib/libc.so.6", 0x7f0000000000, 0x7f0000200000, 0, NULL, 0 },
};
static const struct dg_field fields[] = {
	{ "i", "Signed", "integer", 1 },
	{ "u", "Unsigned", "bytes", 2 },
	{ "d", "Double", "duration", 3 },
	{ "s", "Static", "string", 4 },
	{ "c", NULL, NULL, 5 },
};
static const unsigned field_kinds[] = { 1, 2, 3, 4, 5 };

static void
session(struct dg *g, struct dg_mem *m, int which)
{
	struct exp_sess *s = &sess[nsess++];
	size_t start_n = m->n;
	uint64_t base = which ? 5000000 : 1000;
	uint64_t frames[RTPROF_REC_MAX_FRAMES], mask[RTPROF_REC_MASK_WORDS];
	uint64_t ov[4] = { 120, 3400, 56, 3 };
	uint32_t vids[3] = { 1, 2, 0xffff };
	int64_t vvals[3] = { -5, INT64_MAX, 123456789 };
	double dv = -2.5e-3;
	uint64_t dbits;
	const char *strs[5] = { NULL, NULL, NULL, NULL, "copied \"text\" \xff" };
	char longstr[400];
	uint64_t vals[5];

	memset(s, 0, sizeof(*s));
	s->h.pid = which ? 777 : 4242;
	s->h.ppid = 1;
	s->h.process = which ? "second" : NULL;
	s->h.exe = which ? "/usr/bin/second" : NULL;
	s->h.machine = which ? "aarch64" : NULL;
	s->h.ticks_per_second = which ? 24e6 : 0;
	s->h.start_ticks = base;
	s->h.start_mono_ns = which ? 9000000000 : 1000000;
	s->h.start_wall_ns = 1700000000000000000;
	s->h.mode = which ? "flight" : NULL;
	s->h.sample_interval_us = which ? 250 : 0;
	s->h.generation = which ? 2 : 0;
	RTPROF_CHECK_EQ(dg_header(g, &s->h), 0);
	s->id = dg_session(g);
	RTPROF_CHECK_NE(s->id, 0);
	RTPROF_CHECK_EQ(dg_modules(g, mods, 2), 0);
	RTPROF_CHECK_EQ(dg_thread(g, TID_MAIN, "main", 2, base, 0), 0);
	RTPROF_CHECK_EQ(dg_thread(g, TID_AUDIO, "audio", 1, base + 1, 0), 0);
	RTPROF_CHECK_EQ(dg_thread(g, TID_SAMPLER, "rtprof-sampler", 4, base + 2,
	    0), 0);
	RTPROF_CHECK_EQ(dg_schema(g, SCHEMA_ID, "AllKinds", 4, fields, 5), 0);
	RTPROF_CHECK_EQ(dg_schema_ex(g, SCHEMA_ID + 1, "Labelled", 2, 0x45,
	    "{marker.name} tip", "table", "chart", fields, 1), 0);
	RTPROF_CHECK_EQ(dg_counter(g, 1, "queue", "Memory", "bytes queued"), 0);
	RTPROF_CHECK_EQ(dg_counter(g, 2, "frames", "Audio", "frames"), 0);
	RTPROF_CHECK_EQ(dg_string(g, REF_LOOP, "loop"), 0);
	RTPROF_CHECK_EQ(dg_string(g, REF_DECODE, "decode"), 0);
	RTPROF_CHECK_EQ(dg_string(g, REF_LABEL_A, "label A"), 0);
	RTPROF_CHECK_EQ(dg_string(g, REF_LABEL_B, "label B"), 0);
	RTPROF_CHECK_EQ(dg_string(g, REF_STATIC_VAL, "static value"), 0);

	e_marker(g, RTPROF_REC_INSTANT, TID_MAIN, base + 10, REF_LOOP, 7);
	e_marker(g, RTPROF_REC_BEGIN, TID_MAIN, base + 11, REF_DECODE, 4);
	e_marker(g, RTPROF_REC_END, TID_MAIN, base + 20, REF_DECODE, 4);
	e_interval(g, TID_AUDIO, base + 5, base + 30, REF_LOOP, 2);
	memcpy(&dbits, &dv, 8);
	vals[0] = (uint64_t)INT64_MIN;
	vals[1] = UINT64_MAX;
	vals[2] = dbits;
	vals[3] = REF_STATIC_VAL;
	vals[4] = 0;
	for (unsigned ph = 0; ph < 4; ph++)
		e_typed(g, TID_AUDIO, ph, base + 40 + ph, base + 90, SCHEMA_ID,
		    field_kinds, vals, strs, 5);
	/* A copied string beyond 255 bytes is cut at 255 (rtprof_put_str). */
	memset(longstr, 'x', sizeof(longstr) - 1);
	longstr[sizeof(longstr) - 1] = 0;
	strs[4] = longstr;
	e_typed(g, TID_MAIN, 1, base + 50, base + 60, SCHEMA_ID, field_kinds,
	    vals, strs, 5);
	e_typed(g, TID_MAIN, 0, base + 51, 0, SCHEMA_ID + 1, field_kinds, vals,
	    NULL, 1);
	e_counter(g, TID_MAIN, base + 52, 1, -1);
	e_counter(g, TID_MAIN, base + 53, 2, INT64_MIN);
	e_sleepwake(g, TID_MAIN, base + 54, 1);

	/* Samples: mixed frames, 3 / 20 / 128 deep; SAME; OVERHEAD. */
	for (size_t i = 0; i < RTPROF_REC_MAX_FRAMES; i++)
		frames[i] = 0x555500001000 + i * 0x40 + 5;
	memset(mask, 0, sizeof(mask));
	frames[0] = REF_LABEL_A;
	mask[0] |= 1;
	frames[7] = REF_LABEL_B;
	mask[0] |= 1ull << 7;
	frames[100] = REF_LABEL_A;
	mask[1] |= 1ull << (100 - 64);
	e_sample(g, TID_SAMPLER, base + 60, TID_MAIN, 0, 0, frames, mask, 3);
	e_sample(g, TID_SAMPLER, base + 61, TID_AUDIO, 1500, 2, frames, mask,
	    20);
	e_sample(g, TID_SAMPLER, base + 62, TID_MAIN, 250000, 4, frames, mask,
	    RTPROF_REC_MAX_FRAMES);
	e_sample(g, TID_SAMPLER, base + 63, TID_AUDIO, 7, 8, frames, NULL, 16);
	e_sample(g, TID_SAMPLER, base + 64, -1, 0, 8, frames, NULL, 0);
	e_same(g, TID_SAMPLER, base + 65, TID_MAIN, 12, 1);
	e_overhead(g, TID_SAMPLER, base + 60, base + 66, ov);
	e_counter(g, TID_SAMPLER, base + 66, 0xfffe, 12345678);
	e_counter(g, TID_SAMPLER, base + 66, 0xffff, 65536);
	e_sleepwake(g, TID_MAIN, base + 70, 0);
	/* Enough records to need several DATA frames per thread. */
	for (unsigned i = 0; i < 200; i++) {
		e_marker(g, RTPROF_REC_INSTANT, TID_AUDIO, base + 100 + i,
		    REF_LOOP, i % 9);
		if (i % 10 == 0)
			e_same(g, TID_SAMPLER, base + 100 + i, TID_AUDIO, i, 1);
	}
	RTPROF_CHECK_EQ(dg_flush(g), 0);
	RTPROF_CHECK_EQ(dg_pause(g, base + 400, base + 500), 0);
	e_marker(g, RTPROF_REC_INSTANT, TID_MAIN, base + 510, REF_LOOP, 0);
	RTPROF_CHECK_EQ(dg_values(g, base + 520, vids, vvals, 3), 0);
	RTPROF_CHECK_EQ(dg_values(g, base + 521, NULL, NULL, 0), 0);
	if (which) {
		RTPROF_CHECK_EQ(dg_event(g, base + 530, "sink_error", EPIPE,
		    "Broken pipe", 0), 0);
		RTPROF_CHECK_EQ(dg_event(g, base + 531, "limit_reached", 0,
		    NULL, 1 << 20), 0);
		RTPROF_CHECK_EQ(dg_event(g, base + 532, "other", 0, NULL, 0), 0);
	}
	/* A thread that exits: its THREAD frame again. */
	RTPROF_CHECK_EQ(dg_thread(g, TID_AUDIO, "audio", 1, base + 1,
	    base + 600), 0);
	s->stop_ticks = base + 700;
	s->stop_mono_ns = s->h.start_mono_ns + 700;
	/* The trailer's frames and bytes: everything before it, with the
	 * pending DATA frame, which dg_trailer() flushes first. */
	RTPROF_CHECK_EQ(dg_flush(g), 0);
	s->bytes = m->n - start_n;
	RTPROF_CHECK_EQ(dg_trailer(g, s->stop_ticks, s->stop_mono_ns), 0);
}

/* ------------------------------------------------------------------ */
/* Decoding and comparing.                                              */

static struct exp_sess *
cur_sess(void)
{
	RTPROF_CHECK(got.sess >= 1 && got.sess <= nsess);
	return &sess[got.sess - 1];
}

static int
on_frame(void *ctx, const struct rtprof_dump_frame *f)
{
	(void)ctx;
	if (f->kind == RTPROF_FRAME_HEADER) {
		got.sess++;
		got.next_seq = 0;
	}
	RTPROF_CHECK_EQ(f->session_index, got.sess);
	RTPROF_CHECK_EQ(f->session, cur_sess()->id);
	RTPROF_CHECK_EQ(f->seq, got.next_seq);
	RTPROF_CHECK_EQ(f->version, 1);
	RTPROF_CHECK(f->kind >= 1 && f->kind <= RTPROF_FRAME_KIND_MAX);
	got.next_seq++;
	got.kinds[f->kind]++;
	/* Every record of a DATA frame arrives before the next frame. */
	RTPROF_CHECK_EQ(got.data_left, 0);
	return 0;
}

static int
on_header(void *ctx, const struct rtprof_dump_header *h)
{
	const struct exp_sess *s = cur_sess();
	const struct dg_header *e = &s->h;

	(void)ctx;
	RTPROF_CHECK_EQ(h->format, 1);
	RTPROF_CHECK_EQ(h->session, s->id);
	RTPROF_CHECK_EQ(h->generation, e->generation ? e->generation : 1);
	RTPROF_CHECK_EQ(h->pid, e->pid);
	RTPROF_CHECK_EQ(h->ppid, e->ppid);
	RTPROF_CHECK_STREQ(h->process, e->process ? e->process : "dumpgen");
	RTPROF_CHECK_STREQ(h->exe, e->exe ? e->exe : "");
	RTPROF_CHECK_EQ(h->argc, 1);
	RTPROF_CHECK_STREQ(h->argv[0], h->process);
	RTPROF_CHECK(h->argv[1] == NULL);
	RTPROF_CHECK_STREQ(h->machine.machine, e->machine ? e->machine :
	    "x86_64");
	RTPROF_CHECK_STREQ(h->machine.sysname, "Linux");
	RTPROF_CHECK(h->clock.ticks_per_second == (e->ticks_per_second > 0 ?
	    e->ticks_per_second : 1e9));
	RTPROF_CHECK_STREQ(h->clock.source, e->ticks_per_second > 0 ? "tsc" :
	    "monotonic");
	RTPROF_CHECK_EQ(h->clock.start_ticks, e->start_ticks);
	RTPROF_CHECK_EQ(h->clock.start_mono_ns, e->start_mono_ns);
	RTPROF_CHECK_EQ(h->clock.start_wall_ns, e->start_wall_ns);
	RTPROF_CHECK_STREQ(h->settings.mode, e->mode ? e->mode : "stream");
	RTPROF_CHECK_EQ(h->settings.sample_interval_us,
	    e->sample_interval_us ? e->sample_interval_us : 1000);
	RTPROF_CHECK_EQ(h->settings.chunk_size, 256);
	RTPROF_CHECK_EQ(h->ncategories, RTPROF_WIRE_NCATEGORIES);
	RTPROF_CHECK_STREQ(h->category_names[2], "Audio");
	RTPROF_CHECK_STREQ(h->category_colors[8], "purple");
	return 0;
}

static int
on_modules(void *ctx, const struct rtprof_dump_module *m, size_t n)
{
	(void)ctx;
	RTPROF_CHECK_EQ(n, 2);
	for (size_t i = 0; i < n; i++) {
		RTPROF_CHECK_STREQ(m[i].path, mods[i].path);
		RTPROF_CHECK_EQ(m[i].start, mods[i].start);
		RTPROF_CHECK_EQ(m[i].end, mods[i].end);
		RTPROF_CHECK_EQ(m[i].offset, mods[i].offset);
		RTPROF_CHECK_EQ(m[i].build_id_len, mods[i].build_id_len);
		RTPROF_CHECK(mods[i].build_id_len == 0 ||
		    memcmp(m[i].build_id, mods[i].build_id,
		    mods[i].build_id_len) == 0);
	}
	got.modules++;
	return 0;
}

static int
on_thread(void *ctx, const struct rtprof_dump_thread *t)
{
	uint64_t base = cur_sess()->h.start_ticks;

	(void)ctx;
	got.threads++;
	switch (t->tid) {
	case TID_MAIN:
		RTPROF_CHECK_STREQ(t->name, "main");
		RTPROF_CHECK_EQ(t->flags, 2);
		RTPROF_CHECK_EQ(t->register_ticks, base);
		RTPROF_CHECK(!t->has_unregister);
		break;
	case TID_AUDIO:
		RTPROF_CHECK_STREQ(t->name, "audio");
		RTPROF_CHECK_EQ(t->flags, 1);
		RTPROF_CHECK_EQ(t->register_ticks, base + 1);
		/* Announced alive, then again at exit. */
		if (t->has_unregister)
			RTPROF_CHECK_EQ(t->unregister_ticks, base + 600);
		break;
	case TID_SAMPLER:
		RTPROF_CHECK_STREQ(t->name, "rtprof-sampler");
		RTPROF_CHECK_EQ(t->flags, 4);
		RTPROF_CHECK_EQ(t->register_ticks, base + 2);
		RTPROF_CHECK(!t->has_unregister);
		break;
	default:
		RTPROF_CHECK(!"unexpected thread");
	}
	return 0;
}

static int
on_schema(void *ctx, const struct rtprof_dump_schema *s)
{
	(void)ctx;
	got.schemas++;
	if (s->id == SCHEMA_ID) {
		RTPROF_CHECK_STREQ(s->name, "AllKinds");
		RTPROF_CHECK_EQ(s->category, 4);
		RTPROF_CHECK_EQ(s->display, 3);
		RTPROF_CHECK(s->tooltip == NULL && s->table == NULL &&
		    s->chart == NULL);
		RTPROF_CHECK_EQ(s->nfields, 5);
		for (unsigned i = 0; i < 5; i++) {
			RTPROF_CHECK_STREQ(s->fields[i].key, fields[i].key);
			RTPROF_CHECK_STREQ(s->fields[i].label, fields[i].label ?
			    fields[i].label : fields[i].key);
			RTPROF_CHECK_STREQ(s->fields[i].format,
			    fields[i].format ? fields[i].format : "string");
			RTPROF_CHECK_EQ(s->fields[i].kind, fields[i].kind);
		}
	} else {
		RTPROF_CHECK_EQ(s->id, SCHEMA_ID + 1);
		RTPROF_CHECK_STREQ(s->name, "Labelled");
		RTPROF_CHECK_EQ(s->category, 2);
		RTPROF_CHECK_EQ(s->display, 0x45);
		RTPROF_CHECK_STREQ(s->tooltip, "{marker.name} tip");
		RTPROF_CHECK_STREQ(s->table, "table");
		RTPROF_CHECK_STREQ(s->chart, "chart");
		RTPROF_CHECK_EQ(s->nfields, 1);
	}
	return 0;
}

static int
on_counter(void *ctx, const struct rtprof_dump_counter *c)
{
	(void)ctx;
	got.counters++;
	RTPROF_CHECK(c->id == 1 || c->id == 2);
	RTPROF_CHECK_STREQ(c->name, c->id == 1 ? "queue" : "frames");
	RTPROF_CHECK_STREQ(c->category, c->id == 1 ? "Memory" : "Audio");
	RTPROF_CHECK_STREQ(c->description, c->id == 1 ? "bytes queued" :
	    "frames");
	return 0;
}

static int
on_string(void *ctx, uint64_t ref, const char *text, size_t len)
{
	static const struct { uint64_t ref; const char *text; } want[] = {
		{ REF_LOOP, "loop" }, { REF_DECODE, "decode" },
		{ REF_LABEL_A, "label A" }, { REF_LABEL_B, "label B" },
		{ REF_STATIC_VAL, "static value" },
	};
	size_t i;

	(void)ctx;
	got.strings++;
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (want[i].ref == ref)
			break;
	RTPROF_CHECK(i < sizeof(want) / sizeof(want[0]));
	RTPROF_CHECK_EQ(len, strlen(want[i].text));
	RTPROF_CHECK_STREQ(text, want[i].text);
	return 0;
}

static size_t
stream_index(const struct exp_sess *s, int64_t tid)
{
	for (size_t i = 0; i < s->ntids; i++)
		if (s->tids[i] == tid)
			return i;
	RTPROF_CHECK(!"DATA frame of an unknown thread");
	return 0;
}

static int
on_data(void *ctx, const struct rtprof_dump_data *d)
{
	const struct exp_sess *s = cur_sess();
	size_t k = stream_index(s, d->tid);

	(void)ctx;
	RTPROF_CHECK_EQ(d->generation, s->h.generation ? s->h.generation : 1);
	RTPROF_CHECK_EQ(d->chunk_seq, got.chunk_seq[got.sess - 1][k]++);
	RTPROF_CHECK_EQ(d->byte_offset, 0);
	RTPROF_CHECK_EQ(d->record_index, 0);
	RTPROF_CHECK_GT(d->nrec, 0);
	RTPROF_CHECK_LE(d->first_ticks, d->last_ticks);
	RTPROF_CHECK_EQ(d->dropped_full, 0);
	RTPROF_CHECK_EQ(d->dropped_nested, 0);
	got.data = *d;
	got.data_left = d->nrec;
	return 0;
}

/* The next expected record of @stream in the current session. */
static struct exp_rec *
next_expected(int64_t stream)
{
	for (size_t i = 0; i < nexp; i++)
		if (!got.rec_done[i] && exp_recs[i].sess == got.sess &&
		    exp_recs[i].stream == stream) {
			got.rec_done[i] = 1;
			return &exp_recs[i];
		}
	RTPROF_CHECK(!"more records than written");
	return NULL;
}

static void
check_val(const struct rtprof_val *g, const struct rtprof_val *e)
{
	RTPROF_CHECK_EQ(g->kind, e->kind);
	switch (e->kind) {
	case RTPROF_VAL_F64:
		RTPROF_CHECK(memcmp(&g->v.d, &e->v.d, 8) == 0);
		break;
	case RTPROF_VAL_STR:
		RTPROF_CHECK_EQ(g->v.str.n, e->v.str.n);
		RTPROF_CHECK(memcmp(g->v.str.p, e->v.str.p, e->v.str.n) == 0);
		break;
	default:
		RTPROF_CHECK_EQ(g->v.u, e->v.u);
		break;
	}
}

static int
on_record(void *ctx, const struct rtprof_dump_data *d,
    const struct rtprof_rec_view *r)
{
	const struct exp_rec *e = next_expected(d->tid);

	(void)ctx;
	RTPROF_CHECK_GT(got.data_left, 0);
	got.data_left--;
	got.nrecords++;
	RTPROF_CHECK_GE(r->t0, d->first_ticks);
	RTPROF_CHECK_LE(r->t0, d->last_ticks);
	RTPROF_CHECK_EQ(r->kind, e->v.kind);
	RTPROF_CHECK_EQ(r->t0, e->v.t0);
	RTPROF_CHECK_EQ(r->t1, e->v.t1);
	switch (e->v.kind) {
	case RTPROF_REC_INSTANT:
	case RTPROF_REC_BEGIN:
	case RTPROF_REC_END:
	case RTPROF_REC_INTERVAL:
		RTPROF_CHECK_EQ(r->name, e->v.name);
		RTPROF_CHECK_EQ(r->category, e->v.category);
		break;
	case RTPROF_REC_TYPED:
		RTPROF_CHECK_EQ(r->phase, e->v.phase);
		RTPROF_CHECK_EQ(r->id, e->v.id);
		RTPROF_CHECK_EQ(r->nvals, e->v.nvals);
		for (unsigned i = 0; i < e->v.nvals; i++)
			check_val(&r->vals[i], &e->v.vals[i]);
		break;
	case RTPROF_REC_COUNTER:
		RTPROF_CHECK_EQ(r->id, e->v.id);
		RTPROF_CHECK_EQ(r->value, e->v.value);
		break;
	case RTPROF_REC_SAMPLE:
		RTPROF_CHECK_EQ(r->nframes, e->v.nframes);
		for (unsigned i = 0; i < e->v.nframes; i++) {
			RTPROF_CHECK_EQ(r->frames[i], e->frames[i]);
			RTPROF_CHECK_EQ(rtprof_rec_frame_is_label(r->label_mask,
			    i), rtprof_rec_frame_is_label(e->mask, i));
		}
		/* fall through */
	case RTPROF_REC_SAME:
		RTPROF_CHECK_EQ(r->tid, e->v.tid);
		RTPROF_CHECK_EQ(r->cpu_ns, e->v.cpu_ns);
		RTPROF_CHECK_EQ(r->flags, e->v.flags);
		break;
	case RTPROF_REC_OVERHEAD:
		for (unsigned i = 0; i < 4; i++)
			RTPROF_CHECK_EQ(r->overhead[i], e->v.overhead[i]);
		break;
	default:
		break;
	}
	return 0;
}

static int
on_pause(void *ctx, uint64_t start, uint64_t end)
{
	uint64_t base = cur_sess()->h.start_ticks;

	(void)ctx;
	got.pauses++;
	RTPROF_CHECK_EQ(start, base + 400);
	RTPROF_CHECK_EQ(end, base + 500);
	return 0;
}

static int
on_values(void *ctx, uint64_t ticks, size_t n, const uint32_t *ids,
    const int64_t *values)
{
	uint64_t base = cur_sess()->h.start_ticks;

	(void)ctx;
	got.values++;
	if (n == 0) {
		RTPROF_CHECK_EQ(ticks, base + 521);
		return 0;
	}
	RTPROF_CHECK_EQ(ticks, base + 520);
	RTPROF_CHECK_EQ(n, 3);
	RTPROF_CHECK_EQ(ids[0], 1);
	RTPROF_CHECK_EQ(values[0], -5);
	RTPROF_CHECK_EQ(ids[1], 2);
	RTPROF_CHECK(values[1] == INT64_MAX);
	RTPROF_CHECK_EQ(ids[2], 0xffff);
	RTPROF_CHECK_EQ(values[2], 123456789);
	return 0;
}

static int
on_event(void *ctx, const struct rtprof_dump_event *e)
{
	uint64_t base = cur_sess()->h.start_ticks;

	(void)ctx;
	got.events++;
	if (strcmp(e->what, "sink_error") == 0) {
		RTPROF_CHECK_EQ(e->ticks, base + 530);
		RTPROF_CHECK(e->has_errno && !e->has_max_bytes);
		RTPROF_CHECK_EQ(e->errnum, EPIPE);
		RTPROF_CHECK_STREQ(e->message, "Broken pipe");
	} else if (strcmp(e->what, "limit_reached") == 0) {
		RTPROF_CHECK_EQ(e->ticks, base + 531);
		RTPROF_CHECK(!e->has_errno && e->has_max_bytes);
		RTPROF_CHECK_EQ(e->max_bytes, 1 << 20);
	} else {
		RTPROF_CHECK_STREQ(e->what, "other");
		RTPROF_CHECK_EQ(e->ticks, base + 532);
		RTPROF_CHECK(!e->has_errno && !e->has_max_bytes);
	}
	return 0;
}

static int
on_trailer(void *ctx, const struct rtprof_dump_trailer *t)
{
	const struct exp_sess *s = cur_sess();

	(void)ctx;
	got.trailers++;
	RTPROF_CHECK_EQ(t->stop_ticks, s->stop_ticks);
	RTPROF_CHECK_EQ(t->stop_mono_ns, s->stop_mono_ns);
	RTPROF_CHECK_EQ(t->stop_wall_ns, s->h.start_wall_ns + 700);
	/* The trailer's own seq: every frame of the session before it. */
	RTPROF_CHECK_EQ(t->frames, got.next_seq - 1);
	RTPROF_CHECK_EQ(t->bytes, s->bytes);
	RTPROF_CHECK_EQ(t->chunks_lost, 0);
	RTPROF_CHECK(!t->limit_reached);
	RTPROF_CHECK_EQ(t->nthreads, s->ntids);
	for (size_t i = 0; i < t->nthreads; i++) {
		size_t k = stream_index(s, t->threads[i].tid);

		RTPROF_CHECK_EQ(t->threads[i].recorded, s->recorded[k]);
		RTPROF_CHECK_EQ(t->threads[i].dropped_full, 0);
		RTPROF_CHECK_EQ(t->threads[i].dropped_nested, 0);
		RTPROF_CHECK_EQ(t->threads[i].recycled, 0);
	}
	return 0;
}

static int
on_damage(void *ctx, const struct rtprof_dump_damage *d)
{
	(void)ctx;
	fprintf(stderr, "damage: %s at %" PRIu64 ": %s\n",
	    rtprof_dump_damage_name(d->kind), d->offset, d->message);
	RTPROF_CHECK(!"the decoder reported damage");
	return 0;
}

/* ------------------------------------------------------------------ */
/* A sink that fails: the first error is latched and returned.          */

struct failing {
	size_t left;
	unsigned calls_after;
};

static int
failing_write(void *ctx, const void *p, size_t n)
{
	struct failing *f = ctx;

	(void)p;
	if (f->left == 0) {
		f->calls_after++;
		return -ENOSPC;
	}
	if (n > f->left) {
		f->left = 0;
		f->calls_after++;
		return -ENOSPC;
	}
	f->left -= n;
	return 0;
}

static void
test_sink_error(void)
{
	struct failing f = { 1000, 0 };
	struct dg *g = dg_open(failing_write, &f, 0);
	struct dg_header h = { .pid = 1 };
	int rc = 0;

	RTPROF_CHECK(g != NULL);
	RTPROF_CHECK_EQ(dg_header(g, &h), 0);
	for (int i = 0; i < 10 && rc == 0; i++)
		rc = dg_string(g, 0x1000 + (uint64_t)i, "a string of some length");
	RTPROF_CHECK_EQ(rc, -ENOSPC);
	RTPROF_CHECK_EQ(f.calls_after, 1);
	RTPROF_CHECK_EQ(dg_rec_instant(g, 1, 1, 0x1000, 0), -ENOSPC);
	RTPROF_CHECK_EQ(dg_flush(g), -ENOSPC);
	RTPROF_CHECK_EQ(f.calls_after, 1);
	RTPROF_CHECK_EQ(dg_close(g), -ENOSPC);
}

int
main(void)
{
	struct dg_mem m = { 0 };
	struct dg *g = dg_open(dg_write_mem, &m, 256);
	struct rtprof_dump_cb cb = {
		.on_frame = on_frame,
		.on_header = on_header,
		.on_modules = on_modules,
		.on_thread = on_thread,
		.on_schema = on_schema,
		.on_counter = on_counter,
		.on_string = on_string,
		.on_data = on_data,
		.on_record = on_record,
		.on_pause = on_pause,
		.on_values = on_values,
		.on_event = on_event,
		.on_trailer = on_trailer,
		.on_damage = on_damage,
	};
	struct rtprof_dump_stats st;
	uint64_t data_frames;

	RTPROF_CHECK(g != NULL);
	session(g, &m, 0);
	session(g, &m, 1);
	RTPROF_CHECK_EQ(dg_bytes(g), m.n);
	RTPROF_CHECK_EQ(dg_close(g), 0);
	RTPROF_CHECK(sess[0].id != sess[1].id);

	RTPROF_CHECK_EQ(rtprof_dump_read_mem(m.p, m.n, &cb, &st), 0);
	RTPROF_CHECK_EQ(got.sess, 2);
	RTPROF_CHECK_EQ(got.data_left, 0);
	RTPROF_CHECK_EQ(got.nrecords, nexp);
	for (size_t i = 0; i < nexp; i++)
		RTPROF_CHECK(got.rec_done[i]);
	RTPROF_CHECK_EQ(got.modules, 2);
	RTPROF_CHECK_EQ(got.threads, 8);
	RTPROF_CHECK_EQ(got.schemas, 4);
	RTPROF_CHECK_EQ(got.counters, 4);
	RTPROF_CHECK_EQ(got.strings, 10);
	RTPROF_CHECK_EQ(got.pauses, 2);
	RTPROF_CHECK_EQ(got.values, 4);
	RTPROF_CHECK_EQ(got.events, 3);
	RTPROF_CHECK_EQ(got.trailers, 2);
	/* Every kind dumpgen writes (module changes and images come from
	 * the recorder only: tests/test_modules.py). */
	for (unsigned k = 1; k <= RTPROF_FRAME_TRAILER; k++)
		RTPROF_CHECK_GT(got.kinds[k], 0);
	/* Small frames: the records took many DATA frames. */
	data_frames = got.kinds[RTPROF_FRAME_DATA];
	RTPROF_CHECK_GT(data_frames, 20);

	RTPROF_CHECK_EQ(st.bytes, m.n);
	RTPROF_CHECK_EQ(st.sessions, 2);
	RTPROF_CHECK_EQ(st.records, nexp);
	RTPROF_CHECK_EQ(st.damage, 0);
	RTPROF_CHECK_EQ(st.bad_frames, 0);
	RTPROF_CHECK_EQ(st.skipped_bytes, 0);
	RTPROF_CHECK_EQ(st.resyncs, 0);
	RTPROF_CHECK_EQ(st.seq_gaps, 0);
	RTPROF_CHECK_EQ(st.seq_dups, 0);
	RTPROF_CHECK_EQ(st.bad_payloads, 0);
	RTPROF_CHECK_EQ(st.bad_records, 0);
	RTPROF_CHECK_EQ(st.truncated_tail_bytes, 0);
	RTPROF_CHECK_EQ(st.unknown_frames, 0);
	RTPROF_CHECK_EQ(st.newer_version_frames, 0);
	free(m.p);

	test_sink_error();
	printf("test_dumpgen: %zu records, %" PRIu64 " DATA frames, 2 "
	    "sessions: ok\n", nexp, data_frames);
	return 0;
}
