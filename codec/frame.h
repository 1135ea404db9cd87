/*
 * frame.h - self-delimiting, CRC-checked frames (docs/wire-format.md).
 *
 * Bytes in, bytes out: no I/O, no allocation, no global state. Every
 * function may run on any thread.
 */
#ifndef RTPROF_FRAME_H
#define RTPROF_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wire.h"

/* CRC-32C (Castagnoli), reflected, init and final xor 0xFFFFFFFF; the
 * hardware instruction where the CPU has one. Chainable: pass the previous
 * result as @crc (0 to start). */
uint32_t rtprof_crc32c(uint32_t crc, const void *buf, size_t len);
/* The same with tables only (what rtprof_crc32c falls back to). */
uint32_t rtprof_crc32c_portable(uint32_t crc, const void *buf, size_t len);

/*
 * rtprof_crc32c_combine - the CRC-32C of A followed by B from the CRC-32C
 * of A (@crc_a), of B (@crc_b) and B's length, in O(log @len_b): what the
 * scanner uses to check a payload from prefix CRCs (see below).
 */
uint32_t rtprof_crc32c_combine(uint32_t crc_a, uint32_t crc_b,
    uint64_t len_b);

struct rtprof_frame_hdr {
	uint8_t kind;
	uint8_t version;
	uint32_t session;  /* random id of the session that wrote the frame */
	uint32_t seq;      /* frame number within the session, header = 0 */
	uint32_t len;      /* payload bytes */
};

/* Writes the 24-byte frame header into @out. */
void rtprof_frame_hdr_encode(unsigned char out[RTPROF_FRAME_HEADER_SIZE],
    const struct rtprof_frame_hdr *h);

/*
 * rtprof_frame_hdr_decode - check and parse a frame header.
 * Return: 0, or -EBADMSG (no sync, bad header CRC, length over the maximum).
 */
int rtprof_frame_hdr_decode(const unsigned char in[RTPROF_FRAME_HEADER_SIZE],
    struct rtprof_frame_hdr *h);

/* A big-endian 64-bit integer (msgpack's), for the core's record pass. */
static inline uint64_t
rtprof_be64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return __builtin_bswap64(v);
}

/* Little-endian helpers shared by the codec. */
static inline uint32_t
rtprof_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static inline void
rtprof_put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/*
 * A streaming frame scanner: feed it bytes in pieces of any size, take
 * whole frames out. It keeps at most one frame (header, payload, CRC) plus
 * one read's worth of bytes, so memory is bounded by the largest frame.
 * Damage (bad header CRC, bad payload CRC, garbage) is skipped byte by byte
 * until the next valid header, and counted.
 *
 * Linear in the bytes fed, whatever they are: while it hunts, it keeps the
 * CRC of the stream from where the hunt began at every 256th byte, so that
 * the payload CRC of a header found in the garbage costs at most 512 bytes
 * of CRC, not its claimed length (a stream of bogus headers claiming 16 MiB
 * each would otherwise cost 16 MiB of CRC per header).
 */
struct rtprof_crcidx;

struct rtprof_scanner {
	unsigned char *buf;
	size_t cap;
	size_t start;         /* first unconsumed byte in buf */
	size_t fill;          /* bytes in buf */
	uint64_t offset;      /* stream offset of buf[start] */
	/* Statistics. */
	uint64_t frames;
	uint64_t bad_frames;   /* header valid, payload CRC wrong */
	uint64_t skipped_bytes; /* garbage between frames */
	uint64_t resyncs;      /* times the scanner had to hunt for a header */
	int hunting;           /* inside a run of garbage */
	struct rtprof_crcidx *idx; /* prefix CRCs while hunting (frame.c) */
};

struct rtprof_frame {
	struct rtprof_frame_hdr hdr;
	const unsigned char *payload; /* valid until the next scanner call */
	uint64_t offset;              /* stream offset of the frame's sync */
	/* The whole frame as it was in the stream, header to payload CRC
	 * (RTPROF_FRAME_OVERHEAD + hdr.len bytes, contiguous): for copying
	 * it verbatim. Valid until the next scanner call. */
	const unsigned char *raw;
};

/* Return: 0 or -ENOMEM. */
int rtprof_scanner_init(struct rtprof_scanner *s);
void rtprof_scanner_free(struct rtprof_scanner *s);

/*
 * rtprof_scanner_space - room for new bytes: at least *@n (0: a default
 * read size); on return *@n is the room given. Then call
 * rtprof_scanner_commit() with how many bytes were put there.
 * Return: where to put them, or NULL with errno ENOMEM.
 */
unsigned char *rtprof_scanner_space(struct rtprof_scanner *s, size_t *n);
void rtprof_scanner_commit(struct rtprof_scanner *s, size_t n);

/*
 * rtprof_scanner_next - the next whole valid frame.
 * Return: 1 with *@f filled, 0 when more bytes are needed.
 */
int rtprof_scanner_next(struct rtprof_scanner *s, struct rtprof_frame *f);

/* Bytes held that do not (yet) form a frame: a truncated tail at EOF. */
size_t rtprof_scanner_pending(const struct rtprof_scanner *s);
/* Drop the first held byte (end of stream: a frame that will never
 * complete may hide intact ones behind it). */
void rtprof_scanner_drop(struct rtprof_scanner *s);

/*
 * rtprof_scanner_next_eof - rtprof_scanner_next() once the stream has
 * ended (no byte will be committed any more). A frame whose header is
 * intact but whose length runs past the bytes held can no longer complete
 * (it lost bytes, or the stream was cut inside it): its sync byte is
 * skipped, as for a bad payload CRC, and the hunt goes on, so that intact
 * frames held behind it are still found. Bytes skipped this way are
 * counted in skipped_bytes; they are not a bad frame (its CRC was never
 * checked). Call until it returns 0: everything held is then consumed.
 * Return: 1 with *@f filled, 0 when no whole frame is left.
 */
int rtprof_scanner_next_eof(struct rtprof_scanner *s, struct rtprof_frame *f);

#endif /* RTPROF_FRAME_H */
