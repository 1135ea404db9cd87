/*
 * test_gzout.c - gzip on a second thread (tools/gzout.h): what goes in,
 * written in pieces of every size (a byte, a block and a half, many
 * blocks at once), comes out of zlib's gunzip byte for byte as one gzip
 * member; an empty stream is a valid empty gzip file; a descriptor that
 * fails (a pipe whose reader is gone, a full device) makes a write or
 * the close return write(2)'s error, never hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "gzout.h"

/* JSON-like bytes, compressible but not trivially: a counter in text. */
static unsigned char *
make_input(size_t n)
{
	unsigned char *p = malloc(n);
	size_t i = 0;
	uint64_t k = 0;

	RTPROF_CHECK(p != NULL);
	while (i < n) {
		char row[48];
		int m = snprintf(row, sizeof(row), "[%llu,%llu.%03u,0,%u],",
		    (unsigned long long)(k % 997), (unsigned long long)k,
		    (unsigned)(k * 7 % 1000), (unsigned)(k * 31 % 100000));

		for (int j = 0; j < m && i < n; j++)
			p[i++] = (unsigned char)row[j];
		k++;
	}
	return p;
}

/*
 * Inflate the file @fd (from its start) as ONE gzip member that ends the
 * file (zlib, windowBits 31), and compare with @want[0..@n).
 */
static void
check_gunzip(int fd, const unsigned char *want, size_t n)
{
	off_t size = lseek(fd, 0, SEEK_END);
	unsigned char *gz = malloc((size_t)size + 1), *got = malloc(n + 1);
	z_stream s;

	RTPROF_CHECK(gz != NULL && got != NULL);
	RTPROF_CHECK_EQ(pread(fd, gz, (size_t)size, 0), size);
	memset(&s, 0, sizeof(s));
	RTPROF_CHECK_EQ(inflateInit2(&s, 31), Z_OK);
	s.next_in = gz;
	s.avail_in = (uInt)size;
	s.next_out = got;
	s.avail_out = (uInt)n + 1;
	RTPROF_CHECK_EQ(inflate(&s, Z_FINISH), Z_STREAM_END);
	RTPROF_CHECK_EQ(s.avail_in, 0);         /* nothing after the member */
	RTPROF_CHECK_EQ(s.total_out, n);
	RTPROF_CHECK(memcmp(got, want, n) == 0);
	inflateEnd(&s);
	free(gz);
	free(got);
}

/* Compress @n bytes of @in written in pieces of @piece bytes. */
static void
round_trip(const unsigned char *in, size_t n, size_t piece)
{
	char path[] = "/tmp/test_gzout-XXXXXX";
	int fd = mkstemp(path);
	struct gzout *z;

	RTPROF_CHECK(fd >= 0);
	unlink(path);
	RTPROF_CHECK_EQ(gzout_open(&z, fd), 0);
	for (size_t off = 0; off < n; off += piece)
		RTPROF_CHECK_EQ(gzout_write(z, in + off, n - off < piece ?
		    n - off : piece), 0);
	RTPROF_CHECK_EQ(gzout_close(z), 0);
	check_gunzip(fd, in, n);
	close(fd);
}

/* Writing into @fd fails: the error comes back, from a write or close. */
static void
check_fails(int fd, int want)
{
	unsigned char *in = make_input(3 * GZOUT_BLOCK);
	struct gzout *z;
	int rc = 0;

	RTPROF_CHECK_EQ(gzout_open(&z, fd), 0);
	for (int i = 0; i < 40 && rc == 0; i++)
		rc = gzout_write(z, in, 3 * GZOUT_BLOCK);
	if (rc == 0)
		rc = gzout_close(z);
	else
		RTPROF_CHECK_EQ(gzout_close(z), rc);
	RTPROF_CHECK_EQ(rc, want);
	free(in);
}

int
main(void)
{
	size_t big = 5 * GZOUT_BLOCK + 12345;
	unsigned char *in = make_input(big);
	int p[2], full;

	printf("compressor: %s\n", gzout_compressor);
	round_trip(in, 0, 1);
	round_trip(in, 1000, 1);
	round_trip(in, big, GZOUT_BLOCK + GZOUT_BLOCK / 2);
	round_trip(in, big, 65536);
	round_trip(in, big, big);
	/* More than every buffer at once: the writer waits, then goes on. */
	round_trip(in, big, 4099);
	free(in);

	signal(SIGPIPE, SIG_IGN);
	RTPROF_CHECK_EQ(pipe(p), 0);
	close(p[0]);
	check_fails(p[1], -EPIPE);
	close(p[1]);
	full = open("/dev/full", O_WRONLY | O_CLOEXEC);
	if (full >= 0) {
		check_fails(full, -ENOSPC);
		close(full);
	}
	printf("ok\n");
	return 0;
}
