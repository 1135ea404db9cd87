/*
 * gen_seeds.c - write the generated part of the fuzz corpora, reproducibly:
 *
 *   fuzz_gen_seeds CORPUS RECORDS [FROM]
 *
 * CORPUS (tests/fuzz/corpus/: fuzz_dump_reader, fuzz_convert) gets
 *   sampler-one.rtprof   one session: MODULES (an executable with a build
 *                        id), an RT thread (label-only samples), a main
 *                        thread, a worker that sleeps (asleep samples,
 *                        SAME), the sampler thread (SAMPLE, SAME, a SAME
 *                        with no previous SAMPLE, truncated and no-native
 *                        samples, OVERHEAD, counters 65534/65535), markers
 *                        of every kind, a schema with every field kind,
 *                        counters, VALUES, a PAUSE, the trailer. No drops:
 *                        tests/test_gecko_errors.py adds its own to this
 *                        file and checks its clean --info says 0 and 0.
 *   sampler-two.rtprof   two sessions of the same pid (the second a
 *                        flight recorder with an EVENT and a thread that
 *                        unregistered, its counts settled in its last
 *                        THREAD frame's totals), both sampled; drops at
 *                        the source in both (main: 3 full + 1 nested in
 *                        a DATA header of each session).
 *   sampler-one-*.damaged  sampler-one damaged one way each, so that the
 *                        fuzzers start from every kind of damage the
 *                        reader handles (not *.rtprof: tests/test_gecko.sh
 *                        converts every *.rtprof of the corpus expecting a
 *                        clean dump):
 *       record-flip      a record's kind byte in the middle DATA frame set
 *                        to 0x7f, the payload CRC fixed: 1 bad record;
 *       crc-flip         the same byte, CRC not fixed: 1 bad frame, a gap;
 *       bad-schema       the SCHEMA payload's first byte made nil, CRC
 *                        fixed: 1 bad payload;
 *       truncated        cut in the middle of the last DATA frame's
 *                        payload: a truncated tail;
 *       dup-frame        the middle DATA frame sent twice: 1 repeated;
 *       garbage          64 bytes of noise (with sync-byte look-alikes)
 *                        before the middle DATA frame: 64 bytes skipped.
 * RECORDS (tests/fuzz/corpus-records/: fuzz_records, whose input is frame
 * payloads without frames, tests/fuzz/segments.h) gets, for each clean dump
 * of the corpus (the two above, and the recorder's own all-kinds.rtprof,
 * demo-stream.rtprof and zones.rtprof (tests/zones_rec: zones, text,
 * flows, frames, declared categories), read from FROM, default CORPUS):
 *   NAME.seg             every frame's payload, in order;
 *   NAME-data.seg        its first DATA payload alone;
 * and general.seg: one DATA payload whose records of every kind are in
 * msgpack encodings outside the recorder's fixed-width subset (smallest
 * integers, float32, str8/str16, ext8 STRREFs, an array16 SAMPLE), which
 * only the general record reader of codec/dump_records.c decodes.
 *
 * Every file is checked before it is written: decoded with
 * rtprof_dump_read_mem(), a clean dump must show no damage, a damaged one
 * exactly its damage, a segment file framed again (seg_to_dump) the same
 * records as its dump, with no damage.
 *
 * Deterministic (no clock, no randomness): regenerating gives the same
 * bytes; the ctest entry fuzz_seeds_current (tests/fuzz/check_seeds.sh)
 * fails when a committed file differs from what this program writes.
 * Context: single-threaded program.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "dump_reader.h"
#include "dumpgen.h"
#include "segments.h"

#define TPS 1000000000ull
#define T0 7000000000000ull
#define US 1000ull
#define MS 1000000ull

#define EXE 0x555555554000ull
#define LIBC 0x7ffff7c00000ull
#define REF 0x555555a00000ull

enum { T_AUDIO = 4001, T_MAIN = 4000, T_WORK = 4002, T_SAMPLER = 4003 };

static const unsigned char build_id[20] = {
	0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
	15, 16,
};

static const char *const strs[] = {
	"audio callback", "mix", "decode", "xrun", "flush", "request",
	"opus",
};
#define NSTRS (sizeof(strs) / sizeof(strs[0]))
#define SREF(i) (REF + 32 * (uint64_t)(i))

#define CHECK(x) do { if ((rc = (x)) != 0) return rc; } while (0)
#define NO_DROPS 1000u

static int
preamble(struct dg *g, uint32_t session, uint64_t gen, uint64_t t0,
    const char *mode)
{
	static const struct dg_field block[] = {
		{ "frames", "Frames", "integer", 1 },
		{ "size", "Size", "bytes", 2 },
		{ "load", "Load", "percentage", 3 },
		{ "codec", "Codec", "string", 4 },
		{ "file", "File", "file-path", 5 },
	};
	struct dg_module mods[] = {
		{ "/usr/bin/seedapp", EXE, EXE + 0x100000, 0, build_id,
		    sizeof(build_id) },
		{ "/lib/x86_64-linux-gnu/libc.so.6", LIBC, LIBC + 0x200000,
		    0x1000, NULL, 0 },
	};
	struct dg_header h = {
		.pid = 4000,
		.ppid = 1,
		.process = "seedapp",
		.exe = "/usr/bin/seedapp",
		.ticks_per_second = (double)TPS,
		.start_ticks = t0,
		.start_mono_ns = (int64_t)t0,
		.start_wall_ns = 1700000000000000000ll + (int64_t)(t0 - T0),
		.mode = mode,
		.sample_interval_us = 100,
		.generation = gen,
		.session = session,
	};
	int rc;

	CHECK(dg_header(g, &h));
	CHECK(dg_modules(g, mods, 2));
	for (unsigned i = 0; i < NSTRS; i++)
		CHECK(dg_string(g, SREF(i), strs[i]));
	CHECK(dg_schema_ex(g, 1, "Block", 2, 0,
	    "{marker.data.frames} ({marker.data.codec})", "{marker.data.file}",
	    NULL, block, 5));
	CHECK(dg_counter(g, 1, "queue", "Other", "items waiting"));
	CHECK(dg_thread(g, T_MAIN, "main", 2, t0, 0));
	CHECK(dg_thread(g, T_AUDIO, "audio", 1, t0 + 10 * US, 0));
	CHECK(dg_thread(g, T_WORK, "worker", 0, t0 + 20 * US,
	    gen == 2 ? t0 + 800 * US : 0));
	return dg_thread(g, T_SAMPLER, "rtprof-sampler", 4, t0, 0);
}

/* @ticks sampler ticks of 100 us from @t0, with the workers' own records;
 * drops at the source for main in tick @drops_at (none when >= @ticks). */
static int
body(struct dg *g, uint64_t t0, unsigned ticks, int same_first,
    unsigned drops_at)
{
	static const unsigned kinds[] = { 1, 2, 3, 4, 5 };
	uint64_t stack[6], mask;
	int rc;

	if (same_first) /* a SAME whose SAMPLE the reader never saw */
		CHECK(dg_rec_same(g, T_SAMPLER, t0 + 5 * US, T_MAIN, 1000, 0));
	for (unsigned k = 0; k < ticks; k++) {
		uint64_t t = t0 + 100 * US * k, load;
		double ld = (double)(k % 10) / 10;
		uint64_t vals[5];
		const char *sv[5] = { NULL, NULL, NULL, NULL, "/srv/a.opus" };

		/* main: a stack of native frames and a label */
		stack[0] = EXE + 0x1000 + 16 * (k % 3);
		stack[1] = SREF(1);
		stack[2] = LIBC + 0x2345;
		stack[3] = EXE + 0x2000 + 8 * (k % 2);
		mask = 1u << 1;
		CHECK(dg_rec_sample(g, T_SAMPLER, t + 10 * US, T_MAIN,
		    k ? 90 * US : 0, k == 3 ? 4 : 0, stack, &mask, 4));
		/* audio: label-only */
		stack[0] = SREF(0);
		stack[1] = SREF(k % 2 ? 1 : 2);
		mask = 3;
		CHECK(dg_rec_sample(g, T_SAMPLER, t + 11 * US, T_AUDIO,
		    k ? 50 * US : 0, 2, stack, &mask, 2));
		/* worker: asleep every other tick (SAME), no native frames
		 * once */
		if (k % 2 == 1) {
			CHECK(dg_rec_same(g, T_SAMPLER, t + 12 * US, T_WORK, 0,
			    1));
		} else {
			stack[0] = EXE + 0x3000;
			stack[1] = LIBC + 0x100;
			mask = 0;
			CHECK(dg_rec_sample(g, T_SAMPLER, t + 12 * US, T_WORK,
			    20 * US, k == 4 ? 8 : 0, stack, &mask,
			    k == 4 ? 0 : 2));
		}
		CHECK(dg_rec_counter(g, T_SAMPLER, t + 13 * US, 65534,
		    (int64_t)(4096 * (100 + k))));
		CHECK(dg_rec_counter(g, T_SAMPLER, t + 13 * US, 65535,
		    (int64_t)(65536 + k)));
		CHECK(dg_rec_overhead(g, T_SAMPLER, t, t + 15 * US, 1000,
		    12000, 2000, 3));

		/* the workers' own records */
		memcpy(&load, &ld, 8);
		vals[0] = 128;
		vals[1] = 4096 + k;
		vals[2] = load;
		vals[3] = SREF(6);
		vals[4] = 0;
		CHECK(dg_rec_typed(g, T_AUDIO, 1, t + 20 * US, t + 60 * US, 1,
		    kinds, vals, sv, 5));
		if (k == 5)
			CHECK(dg_rec_instant(g, T_AUDIO, t + 61 * US, SREF(3),
			    2));
		CHECK(dg_rec_begin(g, T_MAIN, t + 20 * US, SREF(4), 1));
		CHECK(dg_rec_counter(g, T_MAIN, t + 30 * US, 1, (int64_t)k));
		CHECK(dg_rec_end(g, T_MAIN, t + 40 * US, SREF(4), 1));
		if (k == 2)
			CHECK(dg_rec_begin(g, T_MAIN, t + 50 * US, SREF(5), 1));
		if (k % 2 == 0) {
			CHECK(dg_rec_interval(g, T_WORK, t + 21 * US,
			    t + 31 * US, SREF(5), 5));
			CHECK(dg_rec_sleep(g, T_WORK, t + 40 * US));
		} else {
			CHECK(dg_rec_wake(g, T_WORK, t + 90 * US));
		}
		if (k == drops_at)
			CHECK(dg_drops(g, T_MAIN, 3, 1));
	}
	return 0;
}

static int
write_one(struct dg *g)
{
	uint32_t ids[1] = { 1 };
	int64_t v[1] = { 7 };
	int rc;

	CHECK(preamble(g, 0x5eed0001u, 1, T0, "stream"));
	CHECK(body(g, T0 + 100 * US, 6, 1, NO_DROPS));
	CHECK(dg_flush(g));
	CHECK(dg_values(g, T0 + 800 * US, ids, v, 1));
	CHECK(dg_pause(g, T0 + 900 * US, T0 + 1000 * US));
	CHECK(body(g, T0 + 1100 * US, 6, 0, NO_DROPS));
	CHECK(dg_values(g, T0 + 2 * MS, ids, v, 1));
	return dg_trailer(g, T0 + 2 * MS, (int64_t)(T0 + 2 * MS));
}

static int
write_two(struct dg *g)
{
	uint64_t t1 = T0 + 10 * MS;
	uint32_t ids[1] = { 1 };
	int64_t v[1] = { 3 };
	int rc;

	CHECK(preamble(g, 0x5eed0002u, 1, T0, "stream"));
	CHECK(body(g, T0 + 100 * US, 5, 0, 2));
	CHECK(dg_values(g, T0 + MS, ids, v, 1));
	CHECK(dg_trailer(g, T0 + MS, (int64_t)(T0 + MS)));
	CHECK(preamble(g, 0x5eed0003u, 2, t1, "flight"));
	CHECK(dg_event(g, t1 + 50 * US, "sink_error", -32, "Broken pipe", 0));
	CHECK(body(g, t1 + 100 * US, 5, 1, 3));
	CHECK(dg_thread_settle(g, T_WORK, "worker", 0, t1 + 20 * US,
	    t1 + 800 * US));
	CHECK(dg_values(g, t1 + MS, ids, v, 1));
	return dg_trailer(g, t1 + MS, (int64_t)(t1 + MS));
}


/* ------------------------------------------------------------------ */
/* Files and checks                                                     */

static int
dump_mem(int (*fn)(struct dg *), struct seg_buf *out)
{
	struct dg_mem mem;
	struct dg *g;
	int rc;

	memset(&mem, 0, sizeof(mem));
	g = dg_open(dg_write_mem, &mem, 256);
	if (g == NULL)
		return -1;
	rc = fn(g);
	if (dg_close(g) != 0 || rc != 0) {
		free(mem.p);
		return -1;
	}
	out->p = mem.p;
	out->n = mem.n;
	out->cap = mem.cap;
	return 0;
}

static int
save(const char *dir, const char *name, const void *p, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		return -1;
	}
	printf("%s: %zu bytes\n", path, n);
	return 0;
}

static int
load(const char *dir, const char *name, struct seg_buf *b)
{
	char path[4096], piece[65536];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "rb")) == NULL) {
		perror(path);
		return -1;
	}
	while ((n = fread(piece, 1, sizeof(piece), f)) > 0)
		if (seg_put(b, piece, n) != 0)
			break;
	n = (size_t)ferror(f);
	fclose(f);
	return n ? -1 : 0;
}

static int
bad(const char *name, const char *why)
{
	fprintf(stderr, "fuzz_gen_seeds: %s: %s\n", name, why);
	return -1;
}

static void
stats(const void *p, size_t n, struct rtprof_dump_stats *st)
{
	struct rtprof_dump_cb cb;

	memset(&cb, 0, sizeof(cb));
	if (rtprof_dump_read_mem(p, n, &cb, st) != 0)
		st->damage = ~0ull;
}

/* The frames of a clean dump: offset, kind, payload length. */
struct frame_at {
	size_t off;
	uint8_t kind;
	size_t len;
};

static size_t
frames_of(const struct seg_buf *d, struct frame_at *fa, size_t max)
{
	size_t off = 0, n = 0;

	while (off + RTPROF_FRAME_OVERHEAD <= d->n && n < max) {
		struct rtprof_frame_hdr h;

		if (rtprof_frame_hdr_decode(d->p + off, &h) != 0 ||
		    h.len > d->n - off - RTPROF_FRAME_OVERHEAD)
			return 0;
		fa[n].off = off;
		fa[n].kind = h.kind;
		fa[n].len = h.len;
		n++;
		off += RTPROF_FRAME_OVERHEAD + h.len;
	}
	return off == d->n ? n : 0;
}

static void
fix_crc(unsigned char *dump, const struct frame_at *f)
{
	const unsigned char *p = dump + f->off + RTPROF_FRAME_HEADER_SIZE;

	rtprof_put_le32(dump + f->off + RTPROF_FRAME_HEADER_SIZE + f->len,
	    rtprof_crc32c(0, p, f->len));
}

/* ------------------------------------------------------------------ */
/* Damaged dumps                                                        */

enum { MAX_FRAMES = 4096 };

static int
damaged(const char *dir, const struct seg_buf *one)
{
	static struct frame_at fa[MAX_FRAMES];
	size_t nf = frames_of(one, fa, MAX_FRAMES), data[MAX_FRAMES], nd = 0;
	const struct frame_at *mid, *last, *schema = NULL;
	struct rtprof_dump_stats st;
	struct seg_buf b;
	size_t hs, at;
	unsigned char noise[64];
	int rc = 0;

	for (size_t i = 0; i < nf; i++) {
		if (fa[i].kind == RTPROF_FRAME_DATA)
			data[nd++] = i;
		if (fa[i].kind == RTPROF_FRAME_SCHEMA && schema == NULL)
			schema = &fa[i];
	}
	if (nd < 3 || schema == NULL)
		return bad("sampler-one", "too few DATA frames or no SCHEMA");
	mid = &fa[data[nd / 2]];
	last = &fa[data[nd - 1]];
	hs = seg_data_header_size(one->p + mid->off + RTPROF_FRAME_HEADER_SIZE,
	    mid->len);
	if (hs == 0 || hs + 2 > mid->len)
		return bad("sampler-one", "middle DATA frame has no record");
	/* The first record's kind byte, after its array header (fixarray, or
	 * array16 for a SAMPLE). */
	at = mid->off + RTPROF_FRAME_HEADER_SIZE + hs;
	at += one->p[at] == 0xdc ? 3 : 1;

	/* record-flip: CRC fixed, one record lost. */
	memset(&b, 0, sizeof(b));
	if (seg_put(&b, one->p, one->n) != 0)
		return -1;
	b.p[at] = 0x7f;
	fix_crc(b.p, mid);
	stats(b.p, b.n, &st);
	if (st.bad_records != 1 || st.bad_frames != 0 || st.damage != 1)
		rc = bad("record-flip", "not exactly one bad record");
	else
		rc = save(dir, "sampler-one-record-flip.damaged", b.p, b.n);

	/* crc-flip: the same byte, CRC left: the frame is skipped. */
	if (rc == 0) {
		memcpy(b.p, one->p, one->n);
		b.p[at] = 0x7f;
		stats(b.p, b.n, &st);
		if (st.bad_frames != 1 || st.seq_gaps != 1 || st.bad_records != 0)
			rc = bad("crc-flip", "not one bad frame and a gap");
		else
			rc = save(dir, "sampler-one-crc-flip.damaged", b.p, b.n);
	}

	/* bad-schema: the payload is nil and bytes: a bad payload. */
	if (rc == 0) {
		memcpy(b.p, one->p, one->n);
		b.p[schema->off + RTPROF_FRAME_HEADER_SIZE] = 0xc0;
		fix_crc(b.p, schema);
		stats(b.p, b.n, &st);
		if (st.bad_payloads != 1 || st.bad_frames != 0)
			rc = bad("bad-schema", "not exactly one bad payload");
		else
			rc = save(dir, "sampler-one-bad-schema.damaged", b.p, b.n);
	}

	/* truncated: cut inside the last DATA frame's payload. */
	if (rc == 0) {
		size_t cut = last->off + RTPROF_FRAME_HEADER_SIZE + last->len / 2;

		stats(one->p, cut, &st);
		if (st.truncated_tail_bytes != cut - last->off ||
		    st.bad_frames != 0)
			rc = bad("truncated", "not a truncated tail");
		else
			rc = save(dir, "sampler-one-truncated.damaged", one->p, cut);
	}

	/* dup-frame: the middle DATA frame twice in a row. */
	if (rc == 0) {
		size_t flen = RTPROF_FRAME_OVERHEAD + mid->len;

		b.n = 0;
		if (seg_put(&b, one->p, mid->off + flen) != 0 ||
		    seg_put(&b, one->p + mid->off, flen) != 0 ||
		    seg_put(&b, one->p + mid->off + flen,
		    one->n - mid->off - flen) != 0)
			rc = -1;
		stats(b.p, b.n, &st);
		if (rc == 0 && (st.seq_dups != 1 || st.damage != 1))
			rc = bad("dup-frame", "not exactly one repeated frame");
		else if (rc == 0)
			rc = save(dir, "sampler-one-dup-frame.damaged", b.p, b.n);
	}

	/* garbage: 64 bytes before the middle DATA frame, among them sync
	 * bytes that start no valid header. */
	if (rc == 0) {
		for (size_t i = 0; i < sizeof(noise); i++)
			noise[i] = (unsigned char)(i * 151 + 7);
		memcpy(noise + 10, "\xd4RTP", 4);
		memcpy(noise + 40, "\xd4RT", 3);
		b.n = 0;
		if (seg_put(&b, one->p, mid->off) != 0 ||
		    seg_put(&b, noise, sizeof(noise)) != 0 ||
		    seg_put(&b, one->p + mid->off, one->n - mid->off) != 0)
			rc = -1;
		stats(b.p, b.n, &st);
		if (rc == 0 && (st.skipped_bytes != sizeof(noise) ||
		    st.bad_frames != 0 || st.seq_gaps != 0))
			rc = bad("garbage", "not 64 bytes skipped");
		else if (rc == 0)
			rc = save(dir, "sampler-one-garbage.damaged", b.p, b.n);
	}
	free(b.p);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Segment files (fuzz_records)                                         */

/* @name.seg and @name-data.seg from the clean dump @d. */
static int
segments(const char *dir, const char *name, const struct seg_buf *d)
{
	static struct frame_at fa[MAX_FRAMES];
	size_t nf = frames_of(d, fa, MAX_FRAMES);
	struct rtprof_dump_stats st0, st;
	struct seg_buf all = { 0 }, one = { 0 }, back = { 0 };
	char fname[256];
	int rc = 0;

	stats(d->p, d->n, &st0);
	if (nf == 0 || st0.damage != 0)
		return bad(name, "not a clean dump");
	for (size_t i = 0; i < nf && rc == 0; i++) {
		const unsigned char *p = d->p + fa[i].off +
		    RTPROF_FRAME_HEADER_SIZE;

		if (seg_append(&all, fa[i].kind, p, fa[i].len) != 0)
			rc = bad(name, "payload over 64 KiB or out of memory");
		if (rc == 0 && one.n == 0 && fa[i].kind == RTPROF_FRAME_DATA &&
		    seg_append(&one, fa[i].kind, p, fa[i].len) != 0)
			rc = -1;
	}
	/* Framed again, the segments decode to the same records. */
	if (rc == 0 && seg_to_dump(all.p, all.n, &back) != 0)
		rc = -1;
	if (rc == 0) {
		stats(back.p, back.n, &st);
		if (st.damage != 0 || st.records != st0.records ||
		    st.frames != st0.frames || st.sessions != st0.sessions)
			rc = bad(name, "its segments do not decode as the dump");
	}
	if (rc == 0 && one.n == 0)
		rc = bad(name, "no DATA frame");
	snprintf(fname, sizeof(fname), "%s.seg", name);
	if (rc == 0)
		rc = save(dir, fname, all.p, all.n);
	snprintf(fname, sizeof(fname), "%s-data.seg", name);
	if (rc == 0)
		rc = save(dir, fname, one.p, one.n);
	free(all.p);
	free(one.p);
	free(back.p);
	return rc;
}

static void
pk_ref(msgpack_packer *pk, uint64_t ref)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(ref >> (56 - 8 * i));
	msgpack_pack_ext(pk, 8, RTPROF_EXT_STRREF);
	msgpack_pack_ext_body(pk, b, 8);
}

/* A STRREF as ext 8 (0xc7, length 8, type 1): the other encoding. */
static void
pk_ref8(msgpack_sbuffer *sb, uint64_t ref)
{
	unsigned char b[11] = { 0xc7, 8, RTPROF_EXT_STRREF };

	for (int i = 0; i < 8; i++)
		b[3 + i] = (unsigned char)(ref >> (56 - 8 * i));
	msgpack_sbuffer_write(sb, (const char *)b, sizeof(b));
}

/* Records 13..18 (zones, text, flow, frame) in general encodings. */
static void
general_user(msgpack_packer *pk, msgpack_sbuffer *sb)
{
	/* 13: ZONE_BEGIN [13, t, name, cat], ext 8 STRREF */
	msgpack_pack_array(pk, 4);
	msgpack_pack_uint64(pk, 13);
	msgpack_pack_uint64(pk, 300);
	pk_ref8(sb, SREF(3));
	msgpack_pack_uint64(pk, 9);
	/* 15: ZONE_ARG [15, zone, what, value]: a fixstr text, an int */
	msgpack_pack_array(pk, 4);
	msgpack_pack_uint64(pk, 15);
	msgpack_pack_uint64(pk, 300);
	msgpack_pack_uint64(pk, 2);
	msgpack_pack_str(pk, 5);
	msgpack_pack_str_body(pk, "a.wav", 5);
	msgpack_pack_array(pk, 4);
	msgpack_pack_uint64(pk, 15);
	msgpack_pack_uint64(pk, 300);
	msgpack_pack_uint64(pk, 1);
	msgpack_pack_int64(pk, -7);
	msgpack_pack_array(pk, 4);      /* a colour */
	msgpack_pack_uint64(pk, 15);
	msgpack_pack_uint64(pk, 300);
	msgpack_pack_uint64(pk, 5);
	msgpack_pack_uint64(pk, 8);
	/* 14: ZONE_END [14, t, zone] */
	msgpack_pack_array(pk, 3);
	msgpack_pack_uint64(pk, 14);
	msgpack_pack_uint64(pk, 310);
	msgpack_pack_uint64(pk, 300);
	/* 16: TEXT [16, t0, t1, name, cat, text] (an interval) */
	msgpack_pack_array(pk, 6);
	msgpack_pack_uint64(pk, 16);
	msgpack_pack_uint64(pk, 320);
	msgpack_pack_uint64(pk, 330);
	pk_ref(pk, SREF(4));
	msgpack_pack_uint64(pk, 3);
	msgpack_pack_str(pk, 9);
	msgpack_pack_str_body(pk, "plugin.so", 9);
	/* 17: FLOW [17, t, name, cat, flow, last]; 18: FRAME [18, t, name,
	 * budget_ns] */
	msgpack_pack_array(pk, 6);
	msgpack_pack_uint64(pk, 17);
	msgpack_pack_uint64(pk, 340);
	pk_ref(pk, SREF(5));
	msgpack_pack_uint64(pk, 7);
	msgpack_pack_uint64(pk, 0x1234500000001ull);
	msgpack_pack_uint64(pk, 1);
	msgpack_pack_array(pk, 4);
	msgpack_pack_uint64(pk, 18);
	msgpack_pack_uint64(pk, 350);
	pk_ref(pk, SREF(6));
	msgpack_pack_uint64(pk, 2666667);
}

/* general.seg: a DATA payload of records in general msgpack encodings. */
static int
general(const char *dir)
{
	static const char longstr[300] = "a str16 value";
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct seg_buf seg = { 0 }, back = { 0 };
	struct rtprof_dump_stats st;
	const unsigned nrec = 20;
	int rc = 0;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	/* DATA header: tid, generation, chunk, offset, index, nrec, first,
	 * last, dropped full, dropped nested. */
	msgpack_pack_array(&pk, 10);
	msgpack_pack_int64(&pk, T_MAIN);
	msgpack_pack_uint64(&pk, 1);
	msgpack_pack_uint64(&pk, 0);
	msgpack_pack_uint64(&pk, 0);
	msgpack_pack_uint64(&pk, 0);
	msgpack_pack_uint64(&pk, nrec);
	msgpack_pack_uint64(&pk, 100);
	msgpack_pack_uint64(&pk, 300);
	msgpack_pack_uint64(&pk, 2);
	msgpack_pack_uint64(&pk, 1);
	/* 1-3: INSTANT, BEGIN (ext 8 STRREF), END: [k, t, name, cat] */
	for (unsigned k = 1; k <= 3; k++) {
		msgpack_pack_array(&pk, 4);
		msgpack_pack_uint64(&pk, k);
		msgpack_pack_uint64(&pk, 100 + k);
		if (k == 2)
			pk_ref8(&sb, SREF(1));
		else
			pk_ref(&pk, SREF(k));
		msgpack_pack_uint64(&pk, k);
	}
	/* 4: INTERVAL [4, t0, t1, name, cat] */
	msgpack_pack_array(&pk, 5);
	msgpack_pack_uint64(&pk, 4);
	msgpack_pack_uint64(&pk, 110);
	msgpack_pack_uint64(&pk, 70000);
	pk_ref(&pk, SREF(5));
	msgpack_pack_uint64(&pk, 4);
	/* 5: TYPED [5, phase, t0, t1, type, fields...]: every encoding. */
	msgpack_pack_array(&pk, 5 + 9);
	msgpack_pack_uint64(&pk, 5);
	msgpack_pack_uint64(&pk, 1);
	msgpack_pack_uint64(&pk, 120);
	msgpack_pack_uint64(&pk, 130);
	msgpack_pack_uint64(&pk, 1);
	msgpack_pack_int64(&pk, -5);            /* negative fixint */
	msgpack_pack_int64(&pk, -40000);        /* int32 */
	msgpack_pack_uint64(&pk, 4096);         /* uint16 */
	msgpack_pack_float(&pk, 0.5f);          /* float32 */
	msgpack_pack_double(&pk, 0.25);         /* float64 */
	msgpack_pack_str(&pk, 4);               /* fixstr */
	msgpack_pack_str_body(&pk, "opus", 4);
	msgpack_pack_str(&pk, sizeof(longstr)); /* str16 */
	msgpack_pack_str_body(&pk, longstr, sizeof(longstr));
	pk_ref(&pk, SREF(6));                   /* STRREF */
	pk_ref8(&sb, SREF(6));                  /* STRREF, ext 8 */
	/* 6: COUNTER [6, t, id, value] */
	msgpack_pack_array(&pk, 4);
	msgpack_pack_uint64(&pk, 6);
	msgpack_pack_uint64(&pk, 140);
	msgpack_pack_uint64(&pk, 1);
	msgpack_pack_int64(&pk, -3);
	/* 7, 8: SLEEP, WAKE [k, t] */
	for (unsigned k = 7; k <= 8; k++) {
		msgpack_pack_array(&pk, 2);
		msgpack_pack_uint64(&pk, k);
		msgpack_pack_uint64(&pk, 150 + k);
	}
	/* 9: SAMPLE [9, t, tid, cpu_ns, flags, frames...] as array16, 20
	 * frames: native addresses and labels (both STRREF encodings). */
	msgpack_pack_array(&pk, 5 + 20);
	msgpack_pack_uint64(&pk, 9);
	msgpack_pack_uint64(&pk, 200);
	msgpack_pack_int64(&pk, T_WORK);
	msgpack_pack_uint64(&pk, 90000);
	msgpack_pack_uint64(&pk, 4);
	for (unsigned i = 0; i < 20; i++) {
		if (i % 5 == 1)
			pk_ref(&pk, SREF(i % 7));
		else if (i % 5 == 3)
			pk_ref8(&sb, SREF(i % 7));
		else
			msgpack_pack_uint64(&pk, EXE + 0x1000 + 16 * i);
	}
	/* 10: SAME [10, t, tid, cpu_ns, flags] */
	msgpack_pack_array(&pk, 5);
	msgpack_pack_uint64(&pk, 10);
	msgpack_pack_uint64(&pk, 210);
	msgpack_pack_int64(&pk, T_WORK);
	msgpack_pack_uint64(&pk, 0);
	msgpack_pack_uint64(&pk, 1);
	/* 11: OVERHEAD [11, t0, t1, lock, threads, counters, n] */
	msgpack_pack_array(&pk, 7);
	msgpack_pack_uint64(&pk, 11);
	msgpack_pack_uint64(&pk, 220);
	msgpack_pack_uint64(&pk, 230);
	msgpack_pack_uint64(&pk, 1000);
	msgpack_pack_uint64(&pk, 70000);
	msgpack_pack_uint64(&pk, 300);
	msgpack_pack_uint64(&pk, 3);
	/* 12: BACKTRACE [12, t, flags, frames...] */
	msgpack_pack_array(&pk, 3 + 3);
	msgpack_pack_uint64(&pk, 12);
	msgpack_pack_uint64(&pk, 240);
	msgpack_pack_uint64(&pk, 0);
	msgpack_pack_uint64(&pk, EXE + 0x2000);
	pk_ref(&pk, SREF(2));
	msgpack_pack_uint64(&pk, LIBC + 0x100);
	/* 13: a second INSTANT with a uint8 category and uint32 time. */
	msgpack_pack_array(&pk, 4);
	msgpack_pack_uint64(&pk, 1);
	msgpack_pack_uint64(&pk, 100000);
	pk_ref(&pk, SREF(0));
	msgpack_pack_uint64(&pk, 200);
	general_user(&pk, &sb);

	if (seg_append(&seg, RTPROF_FRAME_DATA, (const uint8_t *)sb.data,
	    sb.size) != 0 || seg_to_dump(seg.p, seg.n, &back) != 0)
		rc = -1;
	msgpack_sbuffer_destroy(&sb);
	if (rc == 0) {
		stats(back.p, back.n, &st);
		/* Headless (no HEADER segment): one gap report, nothing else. */
		if (st.records != nrec || st.bad_records != 0 ||
		    st.bad_payloads != 0)
			rc = bad("general.seg", "records not all decoded");
	}
	if (rc == 0)
		rc = save(dir, "general.seg", seg.p, seg.n);
	free(seg.p);
	free(back.p);
	return rc;
}

int
main(int argc, char **argv)
{
	static const char *const recorder[] = { "all-kinds.rtprof",
	    "demo-stream.rtprof", "zones.rtprof" };
	struct seg_buf one = { 0 }, two = { 0 };
	const char *from;
	int rc;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: fuzz_gen_seeds CORPUS RECORDS [FROM]\n");
		return 2;
	}
	from = argc == 4 ? argv[3] : argv[1];
	rc = dump_mem(write_one, &one) != 0 || dump_mem(write_two, &two) != 0;
	if (rc == 0) {
		struct rtprof_dump_stats st;

		stats(two.p, two.n, &st);
		if (st.damage != 0 || st.sessions != 2)
			rc = bad("sampler-two", "not two clean sessions");
	}
	rc = rc || save(argv[1], "sampler-one.rtprof", one.p, one.n) ||
	    save(argv[1], "sampler-two.rtprof", two.p, two.n) ||
	    damaged(argv[1], &one) ||
	    segments(argv[2], "sampler-one", &one) ||
	    segments(argv[2], "sampler-two", &two);
	for (size_t i = 0; rc == 0 && i < sizeof(recorder) / sizeof(recorder[0]);
	    i++) {
		struct seg_buf d = { 0 };
		char name[64];

		snprintf(name, sizeof(name), "%.*s",
		    (int)(strlen(recorder[i]) - strlen(".rtprof")), recorder[i]);
		rc = load(from, recorder[i], &d) || segments(argv[2], name, &d);
		free(d.p);
	}
	rc = rc || general(argv[2]);
	free(one.p);
	free(two.p);
	if (rc != 0)
		fprintf(stderr, "fuzz_gen_seeds: failed\n");
	return rc != 0;
}
