/*
 * bench_copy - copying a caller's string into a record, in thread CPU time
 * per MB of records: the header's rtprof__copy_str() (memcpy() with a
 * length the compiler is not told the bound of: a call to libc's memcpy)
 * against memcpy() with the bound known (n <= 255, as rtprof_put_str()
 * clamps it: gcc expands it inline as `rep movsq`), for strings of 255, 64
 * and 19 bytes in records laid end to end as in a chunk.
 *
 *   bench_copy [RING_MIB]   (default 512: chunk memory not in cache, as a
 *                            thread finds a chunk the writer drained long
 *                            ago; 1: hot)
 *
 * Each of 3 rounds writes 4 GB of records (a 12-byte head and 4 strings).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "rtprof.h"

static char src[RTPROF_MAX_STRING];

/* This thread's CPU time, s. */
static double
cpu_s(void)
{
	return bench_clock_s(CLOCK_THREAD_CPUTIME_ID);
}

/* A str8 head for @n (clamped as rtprof_put_str() clamps it). */
static inline size_t
str_head(unsigned char *p, size_t n)
{
	if (n > RTPROF_MAX_STRING)
		n = RTPROF_MAX_STRING;
	p[0] = 0xd9;
	p[1] = (unsigned char)n;
	return n;
}

/* The header's copy, as rtprof_put_str() does it now. */
static __attribute__((noinline)) unsigned char *
put_header(unsigned char *p, const char *s, size_t n)
{
	n = str_head(p, n);
	rtprof__copy_str(p + 2, s, n);
	return p + 2 + n;
}

/* The copy before 2026-11-26: memcpy() with the bound (255) known. */
static __attribute__((noinline)) unsigned char *
put_bounded(unsigned char *p, const char *s, size_t n)
{
	n = str_head(p, n);
	memcpy(p + 2, s, n);
	return p + 2 + n;
}

/* ms of CPU per MB of records of 4 strings of @len bytes over @ring. */
static double
pass(int header, unsigned char *m, size_t ring, size_t len)
{
	size_t rec = 12 + 4 * (2 + len), total = 0;
	unsigned char *p = m;
	double t = cpu_s();

	/* The length comes through a volatile: no constant to fold. */
	volatile size_t vlen = len;

	while (total < ((size_t)4 << 30)) {
		if (p + rec > m + ring)
			p = m;
		memset(p, 0x95, 12);
		p += 12;
		for (int f = 0; f < 4; f++)
			p = header ? put_header(p, src, vlen) :
			    put_bounded(p, src, vlen);
		total += rec;
	}
	return (cpu_s() - t) * 1e3 / ((double)total / 1e6);
}

int
main(int argc, char **argv)
{
	size_t ring = (size_t)(argc > 1 ? atoi(argv[1]) : 512) << 20;
	unsigned char *m = ring != 0 ? malloc(ring) : NULL;
	static const size_t lens[] = { 255, 64, 19 };

	if (m == NULL) {
		fprintf(stderr, "usage: bench_copy [RING_MIB >= 1]\n");
		return 2;
	}
	memset(m, 1, ring);
	memset(src, 'a', sizeof(src));
	printf("ring %zu MiB, ms of CPU per MB of records\n", ring >> 20);
	printf("%-8s %-28s %-28s\n", "string", "rtprof__copy_str (libc)",
	    "bounded memcpy (rep movsq)");
	for (int round = 0; round < 3; round++)
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			double a = pass(1, m, ring, lens[i]);
			double b = pass(0, m, ring, lens[i]);

			printf("%-8zu %-28.4f %-28.4f\n", lens[i], a, b);
		}
	free(m);
	return 0;
}
