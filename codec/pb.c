/*
 * pb.c - a small protocol buffers encoder (pb.h). Wire types: 0 varint,
 * 2 length-delimited (protobuf's encoding documentation).
 *
 * Context: any thread; no shared state.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pb.h"

#define WIRE_VARINT 0u
#define WIRE_LEN 2u

/* Room for @n more bytes. Return: false (error latched) when none. */
static bool
room(struct rtprof_pb *b, size_t n)
{
	size_t nc;
	void *np;

	if (b->err != 0)
		return false;
	if (b->cap - b->n >= n)
		return true;
	nc = b->cap != 0 ? b->cap : 256;
	while (nc - b->n < n) {
		if (nc > SIZE_MAX / 2) {
			b->err = -ENOMEM;
			return false;
		}
		nc *= 2;
	}
	np = realloc(b->p, nc);
	if (np == NULL) {
		b->err = -ENOMEM;
		return false;
	}
	b->p = np;
	b->cap = nc;
	return true;
}

static void
varint(struct rtprof_pb *b, uint64_t v)
{
	if (!room(b, 10))
		return;
	while (v >= 0x80) {
		b->p[b->n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	b->p[b->n++] = (unsigned char)v;
}

static size_t
varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

void
rtprof_pb_reset(struct rtprof_pb *b)
{
	b->n = 0;
}

void
rtprof_pb_free(struct rtprof_pb *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void
rtprof_pb_uint(struct rtprof_pb *b, unsigned field, uint64_t v)
{
	varint(b, (uint64_t)field << 3 | WIRE_VARINT);
	varint(b, v);
}

void
rtprof_pb_uint_opt(struct rtprof_pb *b, unsigned field, uint64_t v)
{
	if (v != 0)
		rtprof_pb_uint(b, field, v);
}

void
rtprof_pb_bytes(struct rtprof_pb *b, unsigned field, const void *p, size_t n)
{
	varint(b, (uint64_t)field << 3 | WIRE_LEN);
	varint(b, n);
	if (n == 0 || !room(b, n))
		return;
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

void
rtprof_pb_msg(struct rtprof_pb *b, unsigned field, const struct rtprof_pb *sub)
{
	if (sub->err != 0 && b->err == 0)
		b->err = sub->err;
	rtprof_pb_bytes(b, field, sub->p, sub->n);
}

void
rtprof_pb_packed(struct rtprof_pb *b, unsigned field, const uint64_t *v,
    size_t n)
{
	size_t len = 0;

	if (n == 0)
		return;
	for (size_t i = 0; i < n; i++)
		len += varint_len(v[i]);
	varint(b, (uint64_t)field << 3 | WIRE_LEN);
	varint(b, len);
	if (!room(b, len))
		return;
	for (size_t i = 0; i < n; i++)
		varint(b, v[i]);
}
