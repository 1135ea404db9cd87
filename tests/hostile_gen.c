/*
 * hostile_gen.c - dumps and streams made to hurt the tools that read them
 * (issue 18): tests/test_hostile.py feeds them to msgpack2gecko, rtprof
 * summarize, rtprof-inspect and rtprof capture.
 *
 *   hostile_gen modules OUT PATH...   a session whose module map names each
 *                                     PATH (a fake build id), with samples
 *                                     whose native frames lie in each one
 *   hostile_gen escapes OUT           terminal escapes and C0/C1 controls in
 *                                     every string a dump carries
 *   hostile_gen extremes OUT          sessions with extreme clocks and pids
 *                                     (INT64_MIN/MAX, INT_MAX), no module
 *                                     map and native frames in the samples
 *   hostile_gen badheader OUT         HEADER frames whose payload is not a
 *                                     header, then a session's other frames
 *   hostile_gen bogus OUT N           N frame headers with valid CRCs, each
 *                                     claiming a 16 MiB payload, every 24
 *                                     bytes, then 16 MiB of zeros, then one
 *                                     intact session
 *   hostile_gen sessions OUT N        N small intact sessions in a row
 *   hostile_gen samepid OUT N         N small sessions, all of pid 7000
 *   hostile_gen schemas OUT N         N small sessions, each declaring
 *                                     one marker schema (id 3) and using it
 *   hostile_gen threads OUT N         one session whose sampler reports N
 *                                     thread ids (a SAME record each)
 *   hostile_gen strings OUT N         one session with N strings and a
 *                                     Blocked marker naming each one
 *   hostile_gen clocks OUT            sessions whose clock rate is 1e-300,
 *                                     a denormal, 1e300 (no usable trailer
 *                                     pair), with samples, markers, counters
 *   hostile_gen categories OUT        a top level with 2 categories, then a
 *                                     session with 41 (one unnamed) using
 *                                     the last; an unnamed schema and field
 *   hostile_gen wrap OUT              a session starting 1500 ticks before
 *                                     the tick counter wraps, recording
 *                                     across the wrap
 *   hostile_gen utf8 OUT              a process, a thread and a label
 *                                     whose names are not UTF-8, with
 *                                     samples of that label
 *
 * OUT "-" is stdout. Deterministic. Exit 0, or 2 on a usage or write error.
 *
 * Context: single-threaded program.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "dumpgen.h"
#include "frame.h"

#define PROG "hostile_gen"
#define TID_MAIN 100
#define TID_SAMPLER 101
#define MOD_SIZE 0x100000ull
#define MOD_BASE 0x400000000ull

/* What a terminal must never get raw: a title change (OSC 0, BEL), a
 * screen clear (CSI 2J), DEL and a C1 CSI (U+009B) in UTF-8. */
#define EVIL "\x1b]0;pwned\x07\x1b[2J\x7f\xc2\x9b" "31m"

static const unsigned char fake_bid[20] = {
	0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
	15, 16
};

static int
begin_session(struct dg *g, const struct dg_header *h)
{
	int rc = dg_header(g, h);

	if (rc == 0)
		rc = dg_thread(g, TID_MAIN, "main", 2, h->start_ticks, 0);
	if (rc == 0)
		rc = dg_thread(g, TID_SAMPLER, "sampler", 4, h->start_ticks, 0);
	return rc;
}

/* One sample of the main thread: @n native frames (outermost first). */
static int
sample(struct dg *g, uint64_t t, const uint64_t *frames, size_t n)
{
	uint64_t mask = 0;

	return dg_rec_sample(g, TID_SAMPLER, t, TID_MAIN, 1000000, 0, frames,
	    &mask, n);
}

static int
gen_modules(struct dg *g, char **paths, size_t n)
{
	struct dg_header h = { .pid = 4242, .start_ticks = 1000,
		.start_mono_ns = 1000, .start_wall_ns = 1700000000000000000 };
	struct dg_module *m = calloc(n, sizeof(*m));
	uint64_t *frames = calloc(n, sizeof(*frames));
	int rc;

	if (m == NULL || frames == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		m[i].path = paths[i];
		m[i].start = MOD_BASE + i * MOD_SIZE;
		m[i].end = m[i].start + MOD_SIZE;
		m[i].build_id = fake_bid;
		m[i].build_id_len = sizeof(fake_bid);
		frames[i] = m[i].start + 0x1234;
	}
	rc = begin_session(g, &h);
	if (rc == 0)
		rc = dg_modules(g, m, n);
	for (uint64_t k = 0; k < 4 && rc == 0; k++)
		rc = sample(g, h.start_ticks + (k + 1) * 1000000, frames, n);
	if (rc == 0)
		rc = dg_trailer(g, h.start_ticks + 10000000, 10000000 + 1000);
out:
	free(m);
	free(frames);
	return rc;
}

static int
escapes_descriptors(struct dg *g)
{
	static const struct dg_field f[] = {
		{ "why" EVIL, "Why" EVIL, "string", 5 },
		{ "what" EVIL, "What" EVIL, "unique-string", 4 },
	};
	static const struct dg_field blocked[] = {
		{ "call", "Call", "unique-string", 4 },
	};
	static const struct dg_module m = {
		"/nonexistent/lib" EVIL ".so", MOD_BASE, MOD_BASE + MOD_SIZE,
		0, NULL, 0
	};
	int rc = dg_modules(g, &m, 1);

	if (rc == 0)
		rc = dg_thread(g, TID_MAIN + 2, "worker" EVIL, 0, 1000, 0);
	if (rc == 0)
		rc = dg_string(g, 0x1000, "marker" EVIL);
	if (rc == 0)
		rc = dg_string(g, 0x2000, "label" EVIL);
	if (rc == 0)
		rc = dg_string(g, 0x3000, "read" EVIL);
	if (rc == 0)
		rc = dg_schema(g, 1, "Schema" EVIL, 2, f, 2);
	if (rc == 0) /* rtprof summarize's "by call" table */
		rc = dg_schema(g, 2, "Blocked", 2, blocked, 1);
	if (rc == 0)
		rc = dg_counter(g, 1, "counter" EVIL, "cat" EVIL, "desc" EVIL);
	if (rc == 0)
		rc = dg_event(g, 2000, "event" EVIL, 0, NULL, 0);
	if (rc == 0)
		rc = dg_event(g, 2001, "sink_error", 5, "msg" EVIL, 0);
	return rc;
}

static int
escapes_records(struct dg *g, int64_t tid)
{
	static const unsigned kinds[] = { 5, 4 };
	static const uint64_t vals[] = { 0, 0x1000 };
	static const char *const strs[] = { "str" EVIL, NULL };
	const uint64_t frames[] = { MOD_BASE + 0x10, 0x2000 };
	const uint64_t mask = 2; /* frame 1: the label */
	const uint64_t call = 0x3000;
	int rc = 0;

	for (uint64_t k = 0; k < 3 && rc == 0; k++) {
		uint64_t t = 2000000 * (k + 1);

		rc = dg_rec_begin(g, tid, t, 0x1000, 1);
		if (rc == 0)
			rc = dg_rec_end(g, tid, t + 500000, 0x1000, 1);
		if (rc == 0)
			rc = dg_rec_instant(g, tid, t, 0x1000, 1);
		if (rc == 0)
			rc = dg_rec_typed(g, tid, 1, t, t + 1000, 1, kinds, vals,
			    strs, 2);
		if (rc == 0)
			rc = dg_rec_typed(g, tid, 1, t, t + 2000, 2, kinds + 1,
			    &call, NULL, 1);
		if (rc == 0)
			rc = dg_rec_counter(g, tid, t, 1, (int64_t)k);
		if (rc == 0)
			rc = dg_rec_sample(g, TID_SAMPLER, t, tid, 1000000, 0,
			    frames, &mask, 2);
		if (rc == 0)
			rc = dg_rec_sleep(g, tid, t + 600000);
		if (rc == 0)
			rc = dg_rec_wake(g, tid, t + 900000);
	}
	return rc;
}

static int
gen_escapes(struct dg *g)
{
	struct dg_header h = { .pid = 4243, .process = "proc" EVIL,
		.exe = "/bin/exe" EVIL, .machine = "mach" EVIL,
		.start_ticks = 1000, .start_mono_ns = 1000,
		.start_wall_ns = 1700000000000000000 };
	int rc = begin_session(g, &h);

	if (rc == 0)
		rc = escapes_descriptors(g);
	if (rc == 0)
		rc = escapes_records(g, TID_MAIN + 2);
	if (rc == 0)
		rc = dg_trailer(g, 20000000, 20000000);
	return rc;
}

/* Records, counters, values and a pause at the ends of their types. */
static int
extreme_records(struct dg *g, uint64_t t0, uint64_t t1)
{
	static const struct dg_field f[] = { { "n", "N", "integer", 1 } };
	static const unsigned kinds[] = { 1 };
	static const int64_t v[] = { INT64_MIN, INT64_MAX, INT64_MIN, -1 };
	static const uint32_t ids[] = { 7 };
	int rc = dg_schema(g, 1, "S", 2, f, 1);

	if (rc == 0)
		rc = dg_counter(g, 7, "c", "Other", "d");
	for (size_t k = 0; k < 4 && rc == 0; k++) {
		uint64_t t = k & 1 ? t1 : t0, val = (uint64_t)v[k];

		rc = dg_rec_counter(g, TID_MAIN, t, 7, v[k]);
		if (rc == 0)
			rc = dg_rec_typed(g, TID_MAIN, 1, t, k & 1 ? t0 : t1,
			    1, kinds, &val, NULL, 1);
		if (rc == 0)
			rc = dg_values(g, t, ids, &v[k], 1);
		if (rc == 0)
			rc = dg_rec_interval(g, TID_MAIN, t1, t0, 0x10, 1);
	}
	if (rc == 0)
		rc = dg_pause(g, t1, t0);
	return rc;
}

/* Sessions whose clock pairs and pids sit at the ends of their types. */
static int
gen_extremes(struct dg *g)
{
	static const struct {
		int64_t pid, ppid, mono, wall, stop_mono;
		uint64_t start_ticks, stop_ticks;
	} x[] = {
		{ INT64_MAX, INT64_MIN, INT64_MAX, INT64_MAX, INT64_MIN,
		  UINT64_MAX - 5, 3 },
		{ INT_MAX, INT_MIN, INT64_MIN, INT64_MIN, INT64_MAX, 0,
		  UINT64_MAX },
		{ INT64_MIN, -1, INT64_MIN, INT64_MAX, 0, UINT64_MAX / 2,
		  UINT64_MAX },
		{ (int64_t)INT_MAX + 1, INT_MAX, 0, INT64_MIN + 1, INT64_MAX,
		  1, 2 },
	};
	const uint64_t frames[] = { 0x401000, 0x402000 };
	int rc = 0;

	for (size_t i = 0; i < sizeof(x) / sizeof(x[0]) && rc == 0; i++) {
		struct dg_header h = { .pid = x[i].pid, .ppid = x[i].ppid,
			.start_ticks = x[i].start_ticks,
			.start_mono_ns = x[i].mono, .start_wall_ns = x[i].wall,
			.session = (uint32_t)(0x5e550000u + i) };

		rc = begin_session(g, &h);
		for (uint64_t k = 0; k < 3 && rc == 0; k++)
			rc = sample(g, x[i].start_ticks + k * (UINT64_MAX / 4),
			    frames, 2);
		if (rc == 0)
			rc = extreme_records(g, x[i].start_ticks,
			    x[i].stop_ticks);
		if (rc == 0)
			rc = dg_trailer(g, x[i].stop_ticks, x[i].stop_mono);
	}
	return rc;
}

/* A frame of @kind with a raw @payload, CRCs right. */
static int
raw_frame(FILE *f, uint8_t kind, uint32_t session, uint32_t seq,
    const void *payload, uint32_t len)
{
	struct rtprof_frame_hdr h = { .kind = kind, .version = 1,
		.session = session, .seq = seq, .len = len };
	unsigned char hdr[RTPROF_FRAME_HEADER_SIZE], crc[4];

	rtprof_frame_hdr_encode(hdr, &h);
	rtprof_put_le32(crc, rtprof_crc32c(0, payload, len));
	return fwrite(hdr, sizeof(hdr), 1, f) == 1 &&
	    (len == 0 || fwrite(payload, len, 1, f) == 1) &&
	    fwrite(crc, 4, 1, f) == 1 ? 0 : -EIO;
}

/* HEADER frames whose payloads are not headers (nil, an empty map, a
 * string, garbage), each followed by a THREAD and a TRAILER frame. */
static int
gen_badheader(FILE *f)
{
	static const unsigned char nil[] = { 0xc0 }, map0[] = { 0x80 },
	    str[] = { 0xa3, 'a', 'b', 'c' }, junk[] = { 0xc1, 0xff, 0x00 },
	    thr[] = { 0x80 }, trl[] = { 0x90 };
	static const struct { const unsigned char *p; uint32_t n; } bad[] = {
		{ nil, 1 }, { map0, 1 }, { str, 4 }, { junk, 3 }, { NULL, 0 },
	};
	int rc = 0;

	for (uint32_t i = 0; i < 5 && rc == 0; i++) {
		uint32_t sess = 0xbad00000u + i;

		rc = raw_frame(f, RTPROF_FRAME_HEADER, sess, 0, bad[i].p,
		    bad[i].n);
		if (rc == 0)
			rc = raw_frame(f, RTPROF_FRAME_THREAD, sess, 1, thr, 1);
		if (rc == 0)
			rc = raw_frame(f, RTPROF_FRAME_TRAILER, sess, 2, trl, 1);
	}
	return rc;
}

/* The header of a small session of @pid. */
static struct dg_header
small_header(int64_t pid, uint32_t session)
{
	struct dg_header h = { .pid = pid, .start_ticks = 1000,
		.start_mono_ns = 1000, .start_wall_ns = 1700000000000000000,
		.session = session };

	return h;
}

static int
gen_one_small(struct dg *g, int64_t pid, uint32_t session)
{
	struct dg_header h = small_header(pid, session);
	int rc = begin_session(g, &h);

	if (rc == 0)
		rc = dg_rec_instant(g, TID_MAIN, 2000, 0x10, 1);
	if (rc == 0)
		rc = dg_trailer(g, 3000, 3000);
	return rc;
}

static int
gen_sessions(struct dg *g, unsigned long n)
{
	int rc = 0;

	for (unsigned long i = 0; i < n && rc == 0; i++)
		rc = gen_one_small(g, 5000 + (int64_t)(i & 0xfff),
		    0x5e000000u + (uint32_t)i);
	return rc;
}

/* @n sessions of one pid, each with one thread and one marker. */
static int
gen_samepid(struct dg *g, unsigned long n)
{
	int rc = 0;

	for (unsigned long i = 0; i < n && rc == 0; i++)
		rc = gen_one_small(g, 7000, 0x5a000000u + (uint32_t)i);
	return rc;
}

/* @n sessions, each declaring marker schema 3 and writing one marker. */
static int
gen_schemas(struct dg *g, unsigned long n)
{
	static const struct dg_field f[] = { { "n", "N", "integer", 1 } };
	static const unsigned kinds[] = { 1 };
	static const uint64_t v[] = { 42 };
	int rc = 0;

	for (unsigned long i = 0; i < n && rc == 0; i++) {
		struct dg_header h = small_header(8000 + (int64_t)i,
		    0x5c000000u + (uint32_t)i);

		rc = dg_header(g, &h);
		if (rc == 0)
			rc = dg_schema(g, 3, "Typed", 2, f, 1);
		if (rc == 0)
			rc = dg_rec_typed(g, TID_MAIN, 1, 2000, 2500, 3, kinds,
			    v, NULL, 1);
		if (rc == 0)
			rc = dg_trailer(g, 3000, 3000);
	}
	return rc;
}

/* One session whose sampler reports @n thread ids, one SAME each. */
static int
gen_threads(struct dg *g, unsigned long n)
{
	struct dg_header h = { .pid = 4244, .start_ticks = 1000,
		.start_mono_ns = 1000, .start_wall_ns = 1700000000000000000 };
	int rc = begin_session(g, &h);

	for (unsigned long i = 0; i < n && rc == 0; i++)
		rc = dg_rec_same(g, TID_SAMPLER, 2000 + i, 1000 + (int64_t)i,
		    1000, 0);
	if (rc == 0)
		rc = dg_trailer(g, 3000 + n, 3000 + n);
	return rc;
}

/* One session with @n strings, each the call of one Blocked marker. */
static int
gen_strings(struct dg *g, unsigned long n)
{
	static const struct dg_field f[] = {
		{ "call", "Call", "unique-string", 4 },
	};
	static const unsigned kinds[] = { 4 };
	struct dg_header h = { .pid = 4245, .start_ticks = 1000,
		.start_mono_ns = 1000, .start_wall_ns = 1700000000000000000 };
	char name[32];
	int rc = begin_session(g, &h);

	if (rc == 0)
		rc = dg_schema(g, 2, "Blocked", 2, f, 1);
	for (unsigned long i = 0; i < n && rc == 0; i++) {
		snprintf(name, sizeof(name), "call%lu", i);
		rc = dg_string(g, 0x1000 + i, name);
	}
	for (unsigned long i = 0; i < n && rc == 0; i++) {
		uint64_t ref = 0x1000 + i;

		rc = dg_rec_typed(g, TID_MAIN, 1, 2000 + i, 2100 + i, 2,
		    kinds, &ref, NULL, 1);
	}
	if (rc == 0)
		rc = dg_trailer(g, 3000 + n, 3000 + n);
	return rc;
}

/* @n headers claiming RTPROF_FRAME_MAX_PAYLOAD bytes each, back to back,
 * then enough zeros for every claim to fit, then one intact session. */
static int
gen_bogus(struct dg *g, FILE *f, unsigned long n)
{
	static unsigned char zeros[1 << 16];
	unsigned char hdr[RTPROF_FRAME_HEADER_SIZE];

	for (unsigned long i = 0; i < n; i++) {
		struct rtprof_frame_hdr h = { .kind = RTPROF_FRAME_DATA,
			.version = 1, .session = 0xb0b0b0b0u,
			.seq = (uint32_t)i + 1,
			.len = RTPROF_FRAME_MAX_PAYLOAD };

		rtprof_frame_hdr_encode(hdr, &h);
		if (fwrite(hdr, sizeof(hdr), 1, f) != 1)
			return -EIO;
	}
	for (size_t k = 0; k < RTPROF_FRAME_MAX_PAYLOAD / sizeof(zeros) + 1; k++)
		if (fwrite(zeros, sizeof(zeros), 1, f) != 1)
			return -EIO;
	if (fflush(f) != 0)
		return -EIO;
	return gen_one_small(g, 5001, 0x600d0001u);
}

/* Samples, markers and counter values at start + k * @step, k = 1..6. */
static int
timed_records(struct dg *g, uint64_t start, uint64_t step, unsigned cat)
{
	static const uint64_t frames[] = { 0x401000, 0x402000 };
	int rc = dg_counter(g, 9, "level", "Other", "a gauge");

	for (uint64_t k = 1; k <= 6 && rc == 0; k++) {
		uint64_t t = start + k * step;

		rc = sample(g, t, frames, 2);
		if (rc == 0)
			rc = dg_rec_interval(g, TID_MAIN, t, t + step / 2, 0x10,
			    cat);
		if (rc == 0)
			rc = dg_rec_counter(g, TID_MAIN, t, 9, (int64_t)k);
	}
	if (rc == 0)
		rc = dg_string(g, 0x10, "work");
	return rc;
}

static int
gen_clocks(struct dg *g)
{
	static const double rates[] = { 1e-300, 4.9e-324, 1e300 };
	int rc = 0;

	for (size_t i = 0; i < 3 && rc == 0; i++) {
		struct dg_header h = small_header(9000 + (int64_t)i,
		    0x5d000000u + (uint32_t)i);

		h.ticks_per_second = rates[i];
		rc = begin_session(g, &h);
		if (rc == 0)
			rc = timed_records(g, h.start_ticks, 1000000, 2);
		if (rc == 0)    /* stop mono = start mono: no measured rate */
			rc = dg_trailer(g, h.start_ticks + 8000000,
			    h.start_mono_ns);
	}
	return rc;
}

static int
gen_categories(struct dg *g)
{
	static const char *const two[] = { "A", "B" };
	static const struct dg_field f[] = { { "", "", "integer", 1 } };
	static const unsigned kinds[] = { 1 };
	static const uint64_t v[] = { 7 };
	const char *many[41];
	char names[41][8];
	struct dg_header h = small_header(9100, 0x5f000001u);
	int rc;

	h.categories = two;
	h.ncategories = 2;
	rc = begin_session(g, &h);
	if (rc == 0)
		rc = timed_records(g, h.start_ticks, 1000000, 1);
	if (rc == 0)
		rc = dg_trailer(g, h.start_ticks + 8000000, 8000000 + 1000);
	for (int i = 0; i < 41; i++) {
		snprintf(names[i], sizeof(names[i]), "C%d", i);
		many[i] = i == 20 ? "" : names[i];
	}
	h = small_header(9101, 0x5f000002u);
	h.categories = many;
	h.ncategories = 41;
	if (rc == 0)
		rc = begin_session(g, &h);
	if (rc == 0)
		rc = timed_records(g, h.start_ticks, 1000000, 40);
	if (rc == 0)
		rc = dg_schema(g, 5, "", 20, f, 1);
	if (rc == 0)
		rc = dg_rec_typed(g, TID_MAIN, 1, 2000, 3000, 5, kinds, v, NULL,
		    1);
	if (rc == 0)
		rc = dg_trailer(g, h.start_ticks + 8000000, 8000000 + 1000);
	return rc;
}

static int
gen_wrap(struct dg *g)
{
	struct dg_header h = small_header(9200, 0x5e5e0001u);
	int rc;

	h.start_ticks = UINT64_MAX - 1500;
	rc = begin_session(g, &h);
	if (rc == 0)
		rc = timed_records(g, h.start_ticks, 500, 2);
	if (rc == 0)
		rc = dg_trailer(g, h.start_ticks + 4000, 1000 + 4000);
	return rc;
}

/* Not UTF-8: a lone continuation byte, a byte never in UTF-8, an overlong
 * '/', a surrogate, a sequence cut short at the end. */
#define NOT_UTF8 "\x80" "a\xff" "b\xc0\xaf" "c\xed\xa0\x80" "d\xe2\x82"

static int
gen_utf8(struct dg *g)
{
	struct dg_header h = small_header(9300, 0x0f8f0001u);
	const uint64_t frames[] = { 0x2000 }, mask = 1;
	int rc;

	h.process = "proc" NOT_UTF8;
	rc = begin_session(g, &h);
	if (rc == 0)
		rc = dg_thread(g, TID_MAIN + 2, "worker" NOT_UTF8, 0, 1000, 0);
	if (rc == 0)
		rc = dg_string(g, 0x2000, "label" NOT_UTF8);
	for (uint64_t k = 1; k <= 3 && rc == 0; k++)
		rc = dg_rec_sample(g, TID_SAMPLER, 1000 + k * 1000000,
		    TID_MAIN + 2, 1000, 0, frames, &mask, 1);
	if (rc == 0)
		rc = dg_trailer(g, 1000 + 5000000, 1000 + 5000000);
	return rc;
}

static int
write_file(void *ctx, const void *p, size_t n)
{
	return fwrite(p, 1, n, ctx) == n ? 0 : -EIO;
}

static void
usage(void)
{
	fprintf(stderr, "usage: " PROG " modules OUT PATH... | escapes OUT | "
	    "extremes OUT | badheader OUT | bogus OUT N | sessions OUT N | "
	    "samepid OUT N | schemas OUT N | threads OUT N | strings OUT N | "
	    "clocks OUT | categories OUT | wrap OUT | utf8 OUT\n");
}

static int
run(const char *mode, FILE *f, struct dg *g, int argc, char **argv)
{
	unsigned long n = argc > 3 ? strtoul(argv[3], NULL, 0) : 0;

	if (strcmp(mode, "modules") == 0 && argc > 3)
		return gen_modules(g, argv + 3, (size_t)(argc - 3));
	if (strcmp(mode, "escapes") == 0)
		return gen_escapes(g);
	if (strcmp(mode, "extremes") == 0)
		return gen_extremes(g);
	if (strcmp(mode, "badheader") == 0)
		return gen_badheader(f);
	if (strcmp(mode, "bogus") == 0 && n > 0)
		return gen_bogus(g, f, n);
	if (strcmp(mode, "sessions") == 0 && n > 0)
		return gen_sessions(g, n);
	if (strcmp(mode, "samepid") == 0 && n > 0)
		return gen_samepid(g, n);
	if (strcmp(mode, "schemas") == 0 && n > 0)
		return gen_schemas(g, n);
	if (strcmp(mode, "threads") == 0 && n > 0)
		return gen_threads(g, n);
	if (strcmp(mode, "strings") == 0 && n > 0)
		return gen_strings(g, n);
	if (strcmp(mode, "clocks") == 0)
		return gen_clocks(g);
	if (strcmp(mode, "categories") == 0)
		return gen_categories(g);
	if (strcmp(mode, "wrap") == 0)
		return gen_wrap(g);
	if (strcmp(mode, "utf8") == 0)
		return gen_utf8(g);
	usage();
	return -EINVAL;
}

int
main(int argc, char **argv)
{
	FILE *f;
	struct dg *g;
	int rc;

	if (argc < 3) {
		usage();
		return 2;
	}
	f = strcmp(argv[2], "-") == 0 ? stdout : fopen(argv[2], "wb");
	if (f == NULL) {
		fprintf(stderr, PROG ": %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	g = dg_open(write_file, f, 0);
	if (g == NULL)
		return 2;
	rc = run(argv[1], f, g, argc, argv);
	if (dg_close(g) != 0 && rc == 0)
		rc = -EIO;
	if (fclose(f) != 0 && rc == 0)
		rc = -EIO;
	if (rc != 0 && rc != -EINVAL)
		fprintf(stderr, PROG ": %s: %s\n", argv[2], strerror(-rc));
	return rc == 0 ? 0 : 2;
}
