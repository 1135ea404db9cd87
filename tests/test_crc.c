/*
 * test_crc.c - CRC-32C: the check value, and the hardware and table
 * implementations agree on every length and alignment, chained or not;
 * rtprof_crc32c_combine() equals the CRC of the concatenation. The
 * scanner (whose hunt checks payloads from prefix CRCs and combine) finds
 * exactly the frames a naive search with a direct CRC finds, in hostile
 * streams fed in random pieces: valid frames, frames inside the claimed
 * extent of bogus headers (long and short claims), cut frames, garbage.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "frame.h"

#define STREAM_MAX (1u << 20)

static unsigned
rnd(unsigned n)
{
	return (unsigned)rand() % n;
}

/* Appends a frame of @len payload bytes at @p; @good: its payload CRC is
 * right; @claim: the length its header says. Return: bytes written. */
static size_t
put_frame(unsigned char *p, uint32_t len, uint32_t claim, int good)
{
	struct rtprof_frame_hdr h = { .kind = 7, .version = 1,
		.session = 0x5e55, .seq = rnd(100), .len = claim };

	rtprof_frame_hdr_encode(p, &h);
	for (uint32_t i = 0; i < len; i++)
		p[RTPROF_FRAME_HEADER_SIZE + i] = (unsigned char)rand();
	rtprof_put_le32(p + RTPROF_FRAME_HEADER_SIZE + len,
	    rtprof_crc32c(0, p + RTPROF_FRAME_HEADER_SIZE, len) ^ !good);
	return RTPROF_FRAME_OVERHEAD + len;
}

/* A hostile stream: intact frames, damaged ones, headers claiming far
 * more than follows (some with intact frames inside their extent), cut
 * frames, garbage with sync bytes. Return: its length. */
static size_t
make_stream(unsigned char *b)
{
	size_t n = 0;

	while (n + 70000 < STREAM_MAX) {
		unsigned k = rnd(6), len = rnd(2000);

		if (k == 0)
			n += put_frame(b + n, len, len, 1);
		else if (k == 1)
			n += put_frame(b + n, len, len, 0);
		else if (k == 2)  /* a bogus claim, then frames inside it */
			n += put_frame(b + n, 0, rnd(3) ? rnd(60000) :
			    RTPROF_FRAME_MAX_PAYLOAD, 1) - 4;
		else if (k == 3)  /* cut short */
			n += put_frame(b + n, len, len, 1) - 1 - rnd(len + 4);
		else
			for (unsigned i = rnd(64); i-- > 0;)
				b[n++] = rnd(4) ? 0xD4 : (unsigned char)rand();
	}
	return n;
}

/* The frames' offsets as the format defines them: at each candidate, a
 * valid header whose whole frame is there with a right CRC is a frame;
 * else move on by one byte. */
static size_t
naive_scan(const unsigned char *b, size_t n, uint64_t *offs)
{
	size_t i = 0, k = 0;

	while (i + RTPROF_FRAME_HEADER_SIZE <= n) {
		struct rtprof_frame_hdr h;

		if (rtprof_frame_hdr_decode(b + i, &h) == 0 &&
		    i + RTPROF_FRAME_OVERHEAD + h.len <= n &&
		    rtprof_crc32c(0, b + i + RTPROF_FRAME_HEADER_SIZE, h.len) ==
		    rtprof_le32(b + i + RTPROF_FRAME_HEADER_SIZE + h.len)) {
			offs[k++] = i;
			i += RTPROF_FRAME_OVERHEAD + h.len;
		} else {
			i++;
		}
	}
	return k;
}

static void
check_scanner(void)
{
	unsigned char *b = malloc(STREAM_MAX);
	uint64_t *want = malloc(STREAM_MAX / 28 * sizeof(*want));

	RTPROF_CHECK(b != NULL && want != NULL);
	for (int round = 0; round < 20; round++) {
		struct rtprof_scanner sc;
		struct rtprof_frame f;
		size_t n = make_stream(b), nwant = naive_scan(b, n, want);
		size_t fed = 0, got = 0;

		RTPROF_CHECK_EQ(rtprof_scanner_init(&sc), 0);
		while (fed < n) {
			size_t room = 1 + rnd(100000), take;
			unsigned char *p = rtprof_scanner_space(&sc, &room);

			RTPROF_CHECK(p != NULL);
			take = n - fed < room ? n - fed : room;
			memcpy(p, b + fed, take);
			rtprof_scanner_commit(&sc, take);
			fed += take;
			while ((fed < n ? rtprof_scanner_next(&sc, &f) :
			    rtprof_scanner_next_eof(&sc, &f)) == 1) {
				RTPROF_CHECK(got < nwant);
				RTPROF_CHECK_EQ(f.offset, want[got]);
				got++;
			}
		}
		RTPROF_CHECK_EQ(got, nwant);
		RTPROF_CHECK_GT(sc.bad_frames, 0);
		rtprof_scanner_free(&sc);
	}
	free(want);
	free(b);
}

/* Buffers long enough for the hardware path's three streams (3 x 2048
 * bytes and more): the same CRC as the tables, whatever the length around
 * the stream boundaries, the alignment, and the starting CRC. */
static void
check_long(void)
{
	static const size_t lens[] = { 6143, 6144, 6145, 6151, 12288, 12295,
		20000, 65536, 1048576 + 35 };
	size_t cap = 1048576 + 64;
	unsigned char *b = malloc(cap);

	RTPROF_CHECK(b != NULL);
	for (size_t i = 0; i < cap; i++)
		b[i] = (unsigned char)rand();
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (size_t off = 0; off < 9; off += 4)
			RTPROF_CHECK_EQ(rtprof_crc32c(0x1234u, b + off, lens[i]),
			    rtprof_crc32c_portable(0x1234u, b + off, lens[i]));
	free(b);
}

int
main(void)
{
	unsigned char buf[4096 + 16];

	RTPROF_CHECK_EQ(rtprof_crc32c(0, "123456789", 9), 0xE3069283u);
	RTPROF_CHECK_EQ(rtprof_crc32c_portable(0, "123456789", 9), 0xE3069283u);
	srand(1);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)rand();
	for (size_t off = 0; off < 16; off++)
		for (size_t len = 0; len < 600; len++)
			RTPROF_CHECK_EQ(rtprof_crc32c(0, buf + off, len),
			    rtprof_crc32c_portable(0, buf + off, len));
	/* Chained in pieces == at once (the writer CRCs header + records). */
	for (size_t cut = 0; cut <= 4096; cut += 37) {
		uint32_t a = rtprof_crc32c(rtprof_crc32c(0, buf, cut), buf + cut, 4096 - cut);
		RTPROF_CHECK_EQ(a, rtprof_crc32c_portable(0, buf, 4096));
	}
	/* combine == the CRC of the concatenation, any split. */
	for (size_t cut = 0; cut <= 4096; cut += 13)
		RTPROF_CHECK_EQ(rtprof_crc32c_combine(rtprof_crc32c(0, buf, cut),
		    rtprof_crc32c(0, buf + cut, 4096 - cut), 4096 - cut),
		    rtprof_crc32c(0, buf, 4096));
	check_long();
	check_scanner();
	puts("test_crc: ok");
	return 0;
}
