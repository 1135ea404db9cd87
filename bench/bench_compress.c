/*
 * bench_compress.c - the compressors a .json.gz could be made with, on a
 * profile's JSON (BENCHMARKS.md, "Converter throughput").
 *
 *   bench_compress FILE.json
 *
 * Reads FILE into memory and compresses it, fed in 64 KiB pieces as the
 * converter's JSON writer hands them over, with zlib (levels 1 and 6, one
 * gzip stream), ISA-L's igzip (levels 0-3, one stream; when built with
 * libisal) and libdeflate (levels 1, 3, 6: whole buffers only, so 4 MiB
 * gzip members; when built with libdeflate). Prints, per compressor, the
 * CPU time's MB/s of JSON (CLOCK_PROCESS_CPUTIME_ID) and the size as a
 * fraction of the JSON.
 *
 * Context: single-threaded program.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#ifdef RTPROF_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif
#ifdef RTPROF_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "clock.h"

#define PIECE (64u << 10)

/* This process's CPU time, s (one thread). */
static double
cpu_s(void)
{
	return bench_clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

static void
report(const char *name, int level, size_t in, size_t out, double secs)
{
	printf("  %-28s level %d: %7.1f MB/s  size %.3f of the JSON\n", name,
	    level, (double)in / 1e6 / secs, (double)out / (double)in);
}

static void
run_zlib(const unsigned char *p, size_t n, unsigned char *o, size_t cap,
    int level)
{
	z_stream z;
	double t;

	memset(&z, 0, sizeof(z));
	deflateInit2(&z, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
	z.next_out = o;
	z.avail_out = (uInt)cap;
	t = cpu_s();
	for (size_t off = 0; off < n; off += PIECE) {
		z.next_in = (unsigned char *)p + off;
		z.avail_in = (uInt)(n - off < PIECE ? n - off : PIECE);
		deflate(&z, off + PIECE >= n ? Z_FINISH : Z_NO_FLUSH);
	}
	report("zlib", level, n, z.total_out, cpu_s() - t);
	deflateEnd(&z);
}

#ifdef RTPROF_HAVE_ISAL
static void
run_isal(const unsigned char *p, size_t n, unsigned char *o, size_t cap,
    int level)
{
	static const uint32_t lbuf[] = { 0, ISAL_DEF_LVL1_DEFAULT,
	    ISAL_DEF_LVL2_DEFAULT, ISAL_DEF_LVL3_DEFAULT };
	struct isal_zstream s;
	unsigned char *lb = level ? malloc(lbuf[level]) : NULL;
	double t;

	isal_deflate_init(&s);
	s.level = (uint32_t)level;
	s.level_buf = lb;
	s.level_buf_size = lbuf[level];
	s.gzip_flag = IGZIP_GZIP;
	s.next_out = o;
	s.avail_out = (uint32_t)cap;
	t = cpu_s();
	for (size_t off = 0; off < n; off += PIECE) {
		s.next_in = (unsigned char *)p + off;
		s.avail_in = (uint32_t)(n - off < PIECE ? n - off : PIECE);
		s.end_of_stream = off + PIECE >= n;
		isal_deflate(&s);
	}
	report("isa-l igzip", level, n, s.total_out, cpu_s() - t);
	free(lb);
}
#endif

#ifdef RTPROF_HAVE_LIBDEFLATE
static void
run_libdeflate(const unsigned char *p, size_t n, unsigned char *o,
    size_t cap, int level)
{
	struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
	size_t out = 0;
	double t = cpu_s();

	for (size_t off = 0; off < n; off += 4u << 20)
		out += libdeflate_gzip_compress(c, p + off, n - off < (4u << 20) ?
		    n - off : 4u << 20, o, cap);
	report("libdeflate (4 MiB members)", level, n, out, cpu_s() - t);
	libdeflate_free_compressor(c);
}
#endif

int
main(int argc, char **argv)
{
	FILE *f;
	unsigned char *p, *o;
	long n;

	if (argc != 2 || (f = fopen(argv[1], "rb")) == NULL) {
		fprintf(stderr, "usage: bench_compress FILE.json\n");
		return 2;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	p = malloc((size_t)n + 1);
	o = malloc((size_t)n + (size_t)n / 8 + 65536);
	if (p == NULL || o == NULL || fread(p, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "bench_compress: cannot read %s\n", argv[1]);
		return 1;
	}
	fclose(f);
	printf("%s: %.1f MB\n", argv[1], (double)n / 1e6);
	run_zlib(p, (size_t)n, o, (size_t)n + (size_t)n / 8 + 65536, 1);
	run_zlib(p, (size_t)n, o, (size_t)n + (size_t)n / 8 + 65536, 6);
#ifdef RTPROF_HAVE_ISAL
	for (int l = 0; l <= 3; l++)
		run_isal(p, (size_t)n, o, (size_t)n + (size_t)n / 8 + 65536, l);
#endif
#ifdef RTPROF_HAVE_LIBDEFLATE
	for (int l = 1; l <= 6; l += l == 1 ? 2 : 3)
		run_libdeflate(p, (size_t)n, o, (size_t)n + (size_t)n / 8 + 65536,
		    l);
#endif
	free(p);
	free(o);
	return 0;
}
