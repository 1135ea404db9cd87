/*
 * test_capture_scan.c - the scanner calls `rtprof capture` relies on
 * (codec/frame.h): rtprof_scanner_next_eof() finds the intact frames held
 * behind a frame that lost bytes and can no longer complete, and consumes
 * a cut tail; rtprof_frame.raw is the frame exactly as it was in the
 * stream.
 *
 * Context: main thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "frame.h"

/* A frame with @len payload bytes (pattern from @fill) at @out. */
static size_t
make_frame(unsigned char *out, uint8_t kind, uint32_t seq, uint32_t len,
    unsigned char fill)
{
	struct rtprof_frame_hdr h = {
		.kind = kind, .version = 1, .session = 0x1234abcd, .seq = seq,
		.len = len,
	};
	unsigned char *p = out + RTPROF_FRAME_HEADER_SIZE;

	rtprof_frame_hdr_encode(out, &h);
	for (uint32_t i = 0; i < len; i++)
		p[i] = (unsigned char)(fill + i * 7);
	rtprof_put_le32(p + len, rtprof_crc32c(0, p, len));
	return RTPROF_FRAME_OVERHEAD + len;
}

/* Feed @n bytes of @buf in pieces of @piece bytes. */
static void
feed(struct rtprof_scanner *s, const unsigned char *buf, size_t n,
    size_t piece)
{
	while (n > 0) {
		size_t k = n < piece ? n : piece, room = k;
		unsigned char *p = rtprof_scanner_space(s, &room);

		RTPROF_CHECK(p != NULL && room >= k);
		memcpy(p, buf, k);
		rtprof_scanner_commit(s, k);
		buf += k;
		n -= k;
	}
}

static void
expect_frame(const struct rtprof_frame *f, const unsigned char *stream,
    size_t off, size_t size, uint32_t seq)
{
	RTPROF_CHECK_EQ(f->offset, off);
	RTPROF_CHECK_EQ(f->hdr.seq, seq);
	RTPROF_CHECK_EQ((size_t)f->hdr.len + RTPROF_FRAME_OVERHEAD, size);
	RTPROF_CHECK(memcmp(f->raw, stream + off, size) == 0);
	RTPROF_CHECK(f->payload == f->raw + RTPROF_FRAME_HEADER_SIZE);
}

int
main(void)
{
	unsigned char a[64], b[160], c[64], st[512];
	size_t na, nb, nc, n, bcut = 50;
	struct rtprof_scanner s;
	struct rtprof_frame f;

	na = make_frame(a, 7, 1, 10, 1);
	nb = make_frame(b, 7, 2, 100, 2);
	nc = make_frame(c, 11, 3, 5, 3);

	/* A, then B with its last 50 payload bytes lost, then C: B claims
	 * more bytes than follow it, so only the end of the stream tells
	 * that it cannot complete; C behind it is still found. */
	n = 0;
	memcpy(st + n, a, na), n += na;
	memcpy(st + n, b, nb - bcut - 4), n += nb - bcut - 4;
	memcpy(st + n, c, nc), n += nc;
	for (size_t piece = 1; piece <= n; piece = piece * 3 + 1) {
		RTPROF_CHECK_EQ(rtprof_scanner_init(&s), 0);
		feed(&s, st, n, piece);
		RTPROF_CHECK_EQ(rtprof_scanner_next(&s, &f), 1);
		expect_frame(&f, st, 0, na, 1);
		RTPROF_CHECK_EQ(rtprof_scanner_next(&s, &f), 0);
		RTPROF_CHECK_EQ(rtprof_scanner_pending(&s), n - na);
		RTPROF_CHECK_EQ(rtprof_scanner_next_eof(&s, &f), 1);
		expect_frame(&f, st, n - nc, nc, 3);
		RTPROF_CHECK_EQ(rtprof_scanner_next_eof(&s, &f), 0);
		RTPROF_CHECK_EQ(rtprof_scanner_pending(&s), 0);
		RTPROF_CHECK_EQ(s.frames, 2);
		RTPROF_CHECK_EQ(s.bad_frames, 0);  /* B's CRC never checked */
		RTPROF_CHECK_EQ(s.skipped_bytes, n - na - nc);
		RTPROF_CHECK_EQ(s.offset, n);
		rtprof_scanner_free(&s);
	}

	/* A clean stream: next_eof() finds nothing more and skips nothing;
	 * a whole frame with a bad payload CRC is counted as a bad frame. */
	n = 0;
	memcpy(st + n, a, na), n += na;
	memcpy(st + n, b, nb), n += nb;
	st[n - 10] ^= 0x40;                     /* B's payload */
	memcpy(st + n, c, nc), n += nc;
	RTPROF_CHECK_EQ(rtprof_scanner_init(&s), 0);
	feed(&s, st, n, n);
	RTPROF_CHECK_EQ(rtprof_scanner_next_eof(&s, &f), 1);
	expect_frame(&f, st, 0, na, 1);
	RTPROF_CHECK_EQ(rtprof_scanner_next_eof(&s, &f), 1);
	expect_frame(&f, st, na + nb, nc, 3);
	RTPROF_CHECK_EQ(rtprof_scanner_next_eof(&s, &f), 0);
	RTPROF_CHECK_EQ(s.bad_frames, 1);
	RTPROF_CHECK_EQ(s.skipped_bytes, nb);
	rtprof_scanner_free(&s);

	/* A tail shorter than a header, and one that is a cut frame: both
	 * consumed, neither is a frame. */
	for (size_t cut = 1; cut < nb; cut += 13) {
		n = 0;
		memcpy(st + n, a, na), n += na;
		memcpy(st + n, b, cut), n += cut;
		RTPROF_CHECK_EQ(rtprof_scanner_init(&s), 0);
		feed(&s, st, n, 7);
		RTPROF_CHECK_EQ(rtprof_scanner_next(&s, &f), 1);
		RTPROF_CHECK_EQ(rtprof_scanner_next(&s, &f), 0);
		RTPROF_CHECK_EQ(rtprof_scanner_next_eof(&s, &f), 0);
		RTPROF_CHECK_EQ(rtprof_scanner_pending(&s), 0);
		RTPROF_CHECK_EQ(s.skipped_bytes, cut);
		RTPROF_CHECK_EQ(s.bad_frames, 0);
		rtprof_scanner_free(&s);
	}
	printf("test_capture_scan: ok\n");
	return 0;
}
