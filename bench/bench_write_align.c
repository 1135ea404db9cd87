/*
 * bench_write_align - what the position of a write in a file costs the
 * writing thread, in thread CPU time per MB: write() loops of 1 MiB blocks
 * to one file (in the page cache), at offsets aligned to 1 MiB (the floor
 * of bench_sustained: a plain loop of chunk-sized blocks), 256 KiB, 64 KiB,
 * 4 KiB and 100 bytes, and in the writer's own pattern: a DATA frame (a
 * 92-byte header, a chunk's 1 MiB - 37 bytes of records, a 4-byte CRC)
 * after another in one writev(), with the records at any offset or padded
 * to the next page.
 *
 *   bench_write_align [FILE] [ROUNDS]   (default /tmp/bench-write-align.dat, 5)
 *
 * Each round writes 2000 blocks per case, the cases interleaved; the file
 * is cut back to 0 every 256 blocks (as bench_sustained's trimmer keeps
 * its file small). Prints the median ms/MB of each case and its ratio to
 * the 1 MiB-aligned loop. MB = 10^6 bytes of block (records).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"

#define BLK (1u << 20)
#define BLOCKS 2000
#define CUT_EVERY 256
#define FRAME_HEAD 92       /* frame header + DATA header, typical */
#define FRAME_SHORT 37      /* a chunk's records end short of 1 MiB */
#define MAX_ROUNDS 15

struct wcase {
	const char *name;
	size_t lead;        /* bytes before the first block (alignment) */
	int framed;         /* 1: header, records, CRC; 2: and page-padded */
};

static const struct wcase cases[] = {
	{ "1 MiB-aligned blocks (the floor)", 0, 0 },
	{ "256 KiB-aligned", 256 << 10, 0 },
	{ "64 KiB-aligned", 64 << 10, 0 },
	{ "4 KiB-aligned", 4 << 10, 0 },
	{ "+100 bytes", 100, 0 },
	{ "DATA frames back to back", 0, 1 },
	{ "DATA frames, records page-aligned", 0, 2 },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static unsigned char *blk;
static unsigned char pad[2 * 4096];

/* Bytes of padding before a frame at @off so its records start a page. */
static size_t
page_pad(off_t off)
{
	size_t p = (4096 - (size_t)(off + FRAME_HEAD) % 4096) % 4096;

	return p != 0 && p < 28 ? p + 4096 : p;   /* a frame needs 28 */
}

/* One block of case @c at @off (the file's end). Return: bytes or -1. */
static ssize_t
put_block(int fd, const struct wcase *c, off_t off)
{
	struct iovec v[4];

	if (!c->framed)
		return write(fd, blk, BLK);
	v[0].iov_base = pad;
	v[0].iov_len = c->framed == 2 ? page_pad(off) : 0;
	v[1].iov_base = pad;
	v[1].iov_len = FRAME_HEAD;
	v[2].iov_base = blk;
	v[2].iov_len = BLK - FRAME_SHORT;
	v[3].iov_base = pad;
	v[3].iov_len = 4;
	return writev(fd, v, 4);
}

/* Cut @fd to nothing and write @c's lead. Return: the offset, or -1. */
static off_t
restart(int fd, const struct wcase *c)
{
	if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0)
		return -1;
	if (c->lead != 0 && lseek(fd, (off_t)c->lead, SEEK_SET) < 0)
		return -1;
	return (off_t)c->lead;
}

/* One round of @c: ms of CPU per MB of blocks, or -1. */
static double
run_case(int fd, const struct wcase *c)
{
	double t0 = bench_clock_s(CLOCK_THREAD_CPUTIME_ID), mb = 0;
	off_t off = restart(fd, c);

	for (int i = 0; i < BLOCKS && off >= 0; i++) {
		ssize_t w = put_block(fd, c, off);

		if (w < 0)
			return -1;
		off += w;
		mb += (double)(c->framed ? BLK - FRAME_SHORT : BLK) / 1e6;
		if (i % CUT_EVERY == CUT_EVERY - 1)
			off = restart(fd, c);
	}
	if (off < 0)
		return -1;
	return (bench_clock_s(CLOCK_THREAD_CPUTIME_ID) - t0) * 1e3 / mb;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/tmp/bench-write-align.dat";
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	static double ms[NCASES][MAX_ROUNDS];
	double floor_ms = 0;
	int fd;

	if (rounds < 1 || rounds > MAX_ROUNDS ||
	    (blk = aligned_alloc(4096, BLK)) == NULL)
		return 2;
	memset(blk, 0x5a, BLK);
	memset(pad, 0xa5, sizeof(pad));
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0) {
		perror(path);
		return 2;
	}
	for (int r = 0; r < rounds; r++)
		for (size_t c = 0; c < NCASES; c++)
			if ((ms[c][r] = run_case(fd, &cases[c])) < 0) {
				perror("write");
				return 1;
			}
	printf("write() of 1 MiB blocks to %s, ms of CPU per MB "
	    "(median of %d rounds of %d blocks)\n", path, rounds, BLOCKS);
	for (size_t c = 0; c < NCASES; c++) {
		qsort(ms[c], (size_t)rounds, sizeof(double), cmp_double);
		if (c == 0)
			floor_ms = ms[0][rounds / 2];
		printf("  %-36s %.4f  x%.3f\n", cases[c].name,
		    ms[c][rounds / 2], ms[c][rounds / 2] / floor_ms);
	}
	close(fd);
	unlink(path);
	return 0;
}
