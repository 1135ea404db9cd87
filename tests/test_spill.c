/*
 * test_spill.c - codec/spill: record streams in a temporary file.
 *
 * - Many interleaved variable-size streams under a 1 MiB budget come back
 *   byte-exact in append order, and the file holds what did not fit.
 * - Keyed streams: appended in order, read straight; out of order and
 *   small, sorted in memory; out of order and much larger than the budget,
 *   sorted by runs and a merge: always in key order and stable (equal keys
 *   keep their append order), nothing lost or duplicated.
 * - Errors latch: a spill directory that does not exist, a file size limit
 *   (EFBIG) hit while writing; the caller gets the error, no crash.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "check.h"
#include "spill.h"

struct vctx {
	uint32_t stream, next, count;
};

static uint32_t
rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33);
}

/* Record @i of stream @s: its length and bytes are derived from (s, i). */
static size_t
make_var(uint32_t s, uint32_t i, unsigned char *out)
{
	size_t n = (size_t)((s * 131u + i * 7u) % 301u);

	for (size_t k = 0; k < n; k++)
		out[k] = (unsigned char)(s + i + k);
	if (n >= 8) {
		memcpy(out, &s, 4);
		memcpy(out + 4, &i, 4);
	}
	return n;
}

static int
check_var(void *ctx, const void *rec, size_t n)
{
	struct vctx *c = ctx;
	unsigned char want[301];
	size_t wn = make_var(c->stream, c->next, want);

	RTPROF_CHECK_EQ(n, wn);
	RTPROF_CHECK(memcmp(rec, want, n) == 0);
	c->next++;
	return 0;
}

static void
test_variable(void)
{
	enum { NS = 100, NR = 3000 };
	struct rtprof_spill *sp;
	struct rtprof_spill_stream *st[NS];
	unsigned char b[301];

	RTPROF_CHECK_EQ(rtprof_spill_new(&sp, NULL, 1 << 20), 0);
	for (uint32_t s = 0; s < NS; s++) {
		st[s] = rtprof_spill_stream_new(sp, 0);
		RTPROF_CHECK(st[s] != NULL);
	}
	for (uint32_t i = 0; i < NR; i++)
		for (uint32_t s = 0; s < NS; s++)
			RTPROF_CHECK_EQ(rtprof_spill_append(st[s], b,
			    make_var(s, i, b)), 0);
	/* ~45 MB appended, 1 MiB of buffers: most of it is in the file. */
	RTPROF_CHECK_GT(rtprof_spill_file_bytes(sp), 30u << 20);
	for (uint32_t s = 0; s < NS; s++) {
		struct vctx c = { .stream = s };

		RTPROF_CHECK_EQ(rtprof_spill_count(st[s]), NR);
		RTPROF_CHECK_EQ(rtprof_spill_read(st[s], check_var, &c), 0);
		RTPROF_CHECK_EQ(c.next, NR);
		/* Readable twice. */
		c.next = 0;
		RTPROF_CHECK_EQ(rtprof_spill_read(st[s], check_var, &c), 0);
		RTPROF_CHECK_EQ(c.next, NR);
	}
	rtprof_spill_free(sp);
}

struct krec {
	uint64_t key;
	uint64_t seq;
};

struct kctx {
	uint64_t n, last_key, last_seq, sum_seq;
	int any;
};

static int
check_sorted(void *ctx, const void *rec, size_t n)
{
	struct kctx *c = ctx;
	struct krec r;

	RTPROF_CHECK_EQ(n, sizeof(r));
	memcpy(&r, rec, sizeof(r));
	if (c->any) {
		RTPROF_CHECK_GE(r.key, c->last_key);
		if (r.key == c->last_key)
			RTPROF_CHECK_GT(r.seq, c->last_seq);    /* stable */
	}
	c->any = 1;
	c->last_key = r.key;
	c->last_seq = r.seq;
	c->sum_seq += r.seq;
	c->n++;
	return 0;
}

/* @n records; keys in order when @ordered, else random with many ties. */
static void
keyed(uint64_t n, int ordered, size_t budget)
{
	struct rtprof_spill *sp;
	struct rtprof_spill_stream *st, *other;
	struct kctx c = { 0 };
	uint64_t seed = n;

	RTPROF_CHECK_EQ(rtprof_spill_new(&sp, NULL, budget), 0);
	st = rtprof_spill_stream_new(sp, sizeof(struct krec));
	other = rtprof_spill_stream_new(sp, 0);    /* interleaved noise */
	RTPROF_CHECK(st != NULL && other != NULL);
	for (uint64_t i = 0; i < n; i++) {
		struct krec r = { .key = ordered ? i / 3 : rnd(&seed) % 1000,
		    .seq = i };

		RTPROF_CHECK_EQ(rtprof_spill_append(st, &r, sizeof(r)), 0);
		if (i % 16 == 0)
			RTPROF_CHECK_EQ(rtprof_spill_append(other, &r, 5), 0);
	}
	RTPROF_CHECK_EQ(rtprof_spill_read(st, check_sorted, &c), 0);
	RTPROF_CHECK_EQ(c.n, n);
	RTPROF_CHECK_EQ(c.sum_seq, n * (n - 1) / 2);    /* each seq once */
	rtprof_spill_free(sp);
}

static int
count_cb(void *ctx, const void *rec, size_t n)
{
	(void)rec;
	(void)n;
	++*(uint64_t *)ctx;
	return 0;
}

static void
test_errors(void)
{
	struct rtprof_spill *sp;
	struct rtprof_spill_stream *st;
	unsigned char b[200] = { 0 };
	struct rlimit old, lim;
	int rc = 0;
	uint64_t got = 0;

	/* No such directory: the first write to the file fails, latched. */
	RTPROF_CHECK_EQ(rtprof_spill_new(&sp, "/nonexistent/rtprof", 1 << 20), 0);
	st = rtprof_spill_stream_new(sp, 0);
	for (int i = 0; i < 100000 && rc == 0; i++)
		rc = rtprof_spill_append(st, b, sizeof(b));
	RTPROF_CHECK_EQ(rc, -ENOENT);
	RTPROF_CHECK_EQ(rtprof_spill_error(sp), -ENOENT);
	RTPROF_CHECK_EQ(rtprof_spill_append(st, b, 1), -ENOENT);
	RTPROF_CHECK_EQ(rtprof_spill_read(st, count_cb, &got), -ENOENT);
	rtprof_spill_free(sp);

	/* A full disk, as the file size limit: EFBIG, latched. */
	signal(SIGXFSZ, SIG_IGN);
	RTPROF_CHECK_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 2 << 20;
	RTPROF_CHECK_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
	RTPROF_CHECK_EQ(rtprof_spill_new(&sp, NULL, 1 << 20), 0);
	st = rtprof_spill_stream_new(sp, 0);
	rc = 0;
	for (int i = 0; i < 100000 && rc == 0; i++)
		rc = rtprof_spill_append(st, b, sizeof(b));
	RTPROF_CHECK_EQ(rc, -EFBIG);
	rtprof_spill_free(sp);
	RTPROF_CHECK_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);

	/* Bad record sizes. */
	RTPROF_CHECK_EQ(rtprof_spill_new(&sp, NULL, 1 << 20), 0);
	st = rtprof_spill_stream_new(sp, 16);
	RTPROF_CHECK_EQ(rtprof_spill_append(st, b, 15), -EINVAL);
	rtprof_spill_free(sp);
}

int
main(void)
{
	test_variable();
	keyed(100000, 1, 1 << 20);      /* in order: read straight */
	keyed(50000, 0, 8 << 20);       /* out of order, fits: in memory */
	keyed(1000000, 0, 1 << 20);     /* 16 MB out of order: runs + merge */
	test_errors();
	printf("test_spill: ok\n");
	return 0;
}
