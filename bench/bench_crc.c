/*
 * bench_crc - the CRC-32C of 1 MiB blocks, in thread CPU time per MB:
 * rtprof's own (three crc32-instruction streams, codec/frame.c built here
 * without ISA-L), ISA-L's crc32_iscsi when found, and a read of one byte
 * per cache line (what reading the lines costs at least).
 *
 *   bench_crc [RING_MIB]   (default 512: cold lines, as the writer reads a
 *                           chunk another CPU wrote; 1: hot, in cache)
 *
 * Each of 3 rounds goes 4 times over the ring; every figure is a round's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "frame.h"
#if defined(RTPROF_BENCH_ISAL)
#include <isa-l/crc.h>
#endif

#define BLK ((size_t)1 << 20)

/* This thread's CPU time, s. */
static double
cpu_s(void)
{
	return bench_clock_s(CLOCK_THREAD_CPUTIME_ID);
}

/* ms of CPU per MB for @what (0 own, 1 ISA-L, 2 line reads) over @ring. */
static double
pass(int what, const unsigned char *m, size_t ring, uint32_t *sink)
{
	double t = cpu_s();
	size_t total = 0;

	for (int it = 0; it < 4; it++)
		for (size_t o = 0; o + BLK <= ring; o += BLK, total += BLK) {
			if (what == 0)
				*sink ^= rtprof_crc32c(0, m + o, BLK);
#if defined(RTPROF_BENCH_ISAL)
			else if (what == 1)
				*sink ^= crc32_iscsi((unsigned char *)m + o,
				    (int)BLK, 0xffffffffu);
#endif
			else
				for (size_t k = 0; k < BLK; k += 64)
					*(volatile uint32_t *)sink += m[o + k];
		}
	return (cpu_s() - t) * 1e3 / ((double)total / 1e6);
}

int
main(int argc, char **argv)
{
	size_t ring = (size_t)(argc > 1 ? atoi(argv[1]) : 512) << 20;
	unsigned char *m = ring >= BLK ? malloc(ring) : NULL;
	uint32_t sink = 0;

	if (m == NULL) {
		fprintf(stderr, "usage: bench_crc [RING_MIB >= 1]\n");
		return 2;
	}
	for (size_t i = 0; i < ring; i++)
		m[i] = (unsigned char)((i * 2654435761u) >> 13);
#if defined(RTPROF_BENCH_ISAL)
	if (rtprof_crc32c(0, m, BLK) != ~crc32_iscsi(m, (int)BLK, 0xffffffffu)) {
		fprintf(stderr, "bench_crc: the two CRCs differ\n");
		return 1;
	}
#endif
	printf("ring %zu MiB, ms of CPU per MB: own, ISA-L, line reads\n",
	    ring >> 20);
	for (int r = 0; r < 3; r++) {
		double own = pass(0, m, ring, &sink), isal = -1;
#if defined(RTPROF_BENCH_ISAL)
		isal = pass(1, m, ring, &sink);
#endif
		printf("%.3f %.3f %.3f\n", own, isal, pass(2, m, ring, &sink));
	}
	free(m);
	return sink == 0x12345678u;   /* keeps the sums */
}
