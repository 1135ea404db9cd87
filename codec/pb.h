/*
 * pb.h - a small protocol buffers encoder: varints and length-delimited
 * fields into a growable byte buffer, enough to write pprof's
 * profile.proto (codec/pprof.c) without a code generator.
 *
 * A message is built in a buffer; a sub-message is built in a buffer of
 * its own and added whole (rtprof_pb_msg: its length is then known). The
 * first allocation failure is latched in @err and makes every later call
 * a no-op.
 *
 * Context: any thread; no shared state (one buffer, one thread at a time).
 */
#ifndef RTPROF_PB_H
#define RTPROF_PB_H

#include <stddef.h>
#include <stdint.h>

struct rtprof_pb {
	unsigned char *p;
	size_t n, cap;
	int err;                        /* 0 or -ENOMEM, latched */
};

/* Empty the buffer (its memory is kept; the error too). */
void rtprof_pb_reset(struct rtprof_pb *b);

/* Free the buffer's memory; zeroed, usable again. */
void rtprof_pb_free(struct rtprof_pb *b);

/* Field @field as a varint (uint64, and int64 as its two's complement). */
void rtprof_pb_uint(struct rtprof_pb *b, unsigned field, uint64_t v);

/* The same, left out when @v is 0 (proto3's default). */
void rtprof_pb_uint_opt(struct rtprof_pb *b, unsigned field, uint64_t v);

/* Field @field, length-delimited: @p[0..@n) (a string, bytes). */
void rtprof_pb_bytes(struct rtprof_pb *b, unsigned field, const void *p,
    size_t n);

/* Field @field, length-delimited: the message built in @sub. */
void rtprof_pb_msg(struct rtprof_pb *b, unsigned field,
    const struct rtprof_pb *sub);

/* Field @field, packed repeated varints: @v[0..@n). */
void rtprof_pb_packed(struct rtprof_pb *b, unsigned field, const uint64_t *v,
    size_t n);

#endif /* RTPROF_PB_H */
