/*
 * segments.h - the input format of fuzz_records (tests/fuzz/fuzz_records.c)
 * and the conversions between it and a dump; shared with fuzz_gen_seeds,
 * which writes that target's corpus (tests/fuzz/corpus-records/).
 *
 * A segment file is frame payloads without frames: a sequence of
 *
 *   kind (1 byte) | len (2 bytes, little-endian) | len bytes of payload
 *
 * where a last segment whose len runs past the end takes what is left
 * (so every byte string is a valid input). seg_to_dump() wraps each
 * payload in a frame with a valid header and payload CRC-32C
 * (docs/wire-format.md, "Frames"): version 1, one session id, seq 0, 1,
 * 2, ... restarting at 0 at every HEADER segment. A fuzzer mutating a
 * segment file therefore mutates msgpack payloads and records that the
 * decoder really decodes, instead of frames that fail their CRC.
 *
 * Header-only (static functions), used by test programs only.
 * Context: any thread; no shared state.
 */
#ifndef RTPROF_FUZZ_SEGMENTS_H
#define RTPROF_FUZZ_SEGMENTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

#define SEG_SESSION 0x5e65f022u
#define SEG_HEADER_SIZE 3
#define SEG_MAX_PAYLOAD 0xffffu

/* A growing byte buffer; zero it to start, free(p) when done. */
struct seg_buf {
	unsigned char *p;
	size_t n, cap;
};

/* Return: 0, or -1 out of memory (the buffer is left as it was). */
static inline int
seg_put(struct seg_buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		unsigned char *q;

		while (cap < b->n + n)
			cap *= 2;
		if ((q = realloc(b->p, cap)) == NULL)
			return -1;
		b->p = q;
		b->cap = cap;
	}
	if (n != 0)
		memcpy(b->p + b->n, p, n);
	b->n += n;
	return 0;
}

/* The segment at offset @off of @data: *@kind, *@payload, *@len; the
 * offset of the next one in *@next. Return: 1, or 0 when none is left. */
static inline int
seg_next(const uint8_t *data, size_t size, size_t off, uint8_t *kind,
    const uint8_t **payload, size_t *len, size_t *next)
{
	size_t want;

	if (off >= size)
		return 0;
	*kind = data[off];
	if (size - off < SEG_HEADER_SIZE) {
		*payload = data + size;
		*len = 0;
		*next = size;
		return 1;
	}
	want = (size_t)data[off + 1] | (size_t)data[off + 2] << 8;
	off += SEG_HEADER_SIZE;
	if (want > size - off)
		want = size - off;
	*payload = data + off;
	*len = want;
	*next = off + want;
	return 1;
}

/* Append one frame of @kind around @payload to @out. Return: 0 or -1. */
static inline int
seg_frame(struct seg_buf *out, uint8_t kind, uint32_t seq,
    const uint8_t *payload, size_t len)
{
	struct rtprof_frame_hdr h = {
		.kind = kind, .version = RTPROF_WIRE_VERSION,
		.session = SEG_SESSION, .seq = seq, .len = (uint32_t)len,
	};
	unsigned char hdr[RTPROF_FRAME_HEADER_SIZE], crc[4];

	rtprof_frame_hdr_encode(hdr, &h);
	rtprof_put_le32(crc, rtprof_crc32c(0, payload, len));
	if (seg_put(out, hdr, sizeof(hdr)) != 0 ||
	    seg_put(out, payload, len) != 0 ||
	    seg_put(out, crc, sizeof(crc)) != 0)
		return -1;
	return 0;
}

/* The dump of the segments in @data, appended to @out. Return: 0 or -1. */
static inline int
seg_to_dump(const uint8_t *data, size_t size, struct seg_buf *out)
{
	const uint8_t *payload;
	size_t off = 0, len;
	uint32_t seq = 0;
	uint8_t kind;

	while (seg_next(data, size, off, &kind, &payload, &len, &off) == 1) {
		if (kind == RTPROF_FRAME_HEADER)
			seq = 0;
		if (seg_frame(out, kind, seq++, payload, len) != 0)
			return -1;
	}
	return 0;
}

/* Append the segment of one frame payload to @out. Return: 0, -1 out of
 * memory, -2 payload over SEG_MAX_PAYLOAD bytes. */
static inline int
seg_append(struct seg_buf *out, uint8_t kind, const uint8_t *payload,
    size_t len)
{
	unsigned char h[SEG_HEADER_SIZE];

	if (len > SEG_MAX_PAYLOAD)
		return -2;
	h[0] = kind;
	h[1] = (unsigned char)len;
	h[2] = (unsigned char)(len >> 8);
	if (seg_put(out, h, sizeof(h)) != 0 || seg_put(out, payload, len) != 0)
		return -1;
	return 0;
}

/* The size of the DATA header at @p (an array of msgpack integers), or 0
 * when @p does not start with one. Without msgpack-c, which allocates
 * for an array's count before reading its elements. */
static inline size_t
seg_data_header_size(const uint8_t *p, size_t n)
{
	size_t pos, count;

	if (n < 1)
		return 0;
	if ((p[0] & 0xf0) == 0x90) {
		count = p[0] & 0x0f;
		pos = 1;
	} else if (p[0] == 0xdc && n >= 3) {
		count = (size_t)p[1] << 8 | p[2];
		pos = 3;
	} else {
		return 0;
	}
	for (size_t i = 0; i < count; i++) {
		size_t k;

		if (pos >= n)
			return 0;
		if (p[pos] <= 0x7f || p[pos] >= 0xe0)
			k = 0;
		else if (p[pos] == 0xcc || p[pos] == 0xd0)
			k = 1;
		else if (p[pos] == 0xcd || p[pos] == 0xd1)
			k = 2;
		else if (p[pos] == 0xce || p[pos] == 0xd2)
			k = 4;
		else if (p[pos] == 0xcf || p[pos] == 0xd3)
			k = 8;
		else
			return 0;
		if (n - pos - 1 < k)
			return 0;
		pos += 1 + k;
	}
	return pos;
}

#endif /* RTPROF_FUZZ_SEGMENTS_H */
