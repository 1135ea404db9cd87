/*
 * gzout.h - a gzip writer that compresses on a second thread.
 *
 * The converter's last step: the JSON it writes (`.json.gz`, the form
 * users open) is compressed while the next bytes are converted, so the
 * conversion's wall time is about that of converting alone on a machine
 * with a second CPU. One gzip member (a single DEFLATE stream: browsers'
 * DecompressionStream reads it). With ISA-L (libisal, Debian's
 * libisal-dev) at its level 1, compression costs about a tenth of what
 * zlib at level 6 does for a file 10% larger (BENCHMARKS.md, "Converter
 * throughput"); without it, zlib at level 6 on the second thread.
 *
 * Memory: GZOUT_NBUF input blocks of GZOUT_BLOCK bytes, one output
 * buffer and the compressor's state (under 8 MiB in all).
 *
 * Context: gzout_open(), gzout_write() and gzout_close() run on one
 * caller thread (the producer); the compressing thread is gzout's own
 * and only takes full blocks, writes to the descriptor and hands the
 * blocks back (mutex and condition variable in gzout.c).
 */
#ifndef RTPROF_TOOLS_GZOUT_H
#define RTPROF_TOOLS_GZOUT_H

#include <stddef.h>

#define GZOUT_BLOCK (1u << 20)
#define GZOUT_NBUF 4

struct gzout;

/* Which compressor gzout was built with: "isa-l level 1" or "zlib level 6". */
extern const char gzout_compressor[];

/*
 * gzout_open - start compressing into @fd (left open; written with
 * write(2) from the compressing thread until gzout_close()).
 * Context: producer thread. Return: 0 with *@out set, or a negative errno.
 */
int gzout_open(struct gzout **out, int fd);

/*
 * gzout_write - append @p[0..@n) to the uncompressed stream. Blocks when
 * every buffer waits for the compressor.
 * Context: producer thread.
 * Return: 0, or the first error (negative errno: write(2)'s, -ENOMEM,
 * -EIO from the compressor), latched: every later call returns it.
 */
int gzout_write(struct gzout *z, const void *p, size_t n);

/*
 * gzout_close - end the stream (the gzip trailer is written), stop the
 * compressing thread and free @z (NULL: no-op). @fd is not closed.
 * Context: producer thread. Return: 0 or the first error.
 */
int gzout_close(struct gzout *z);

#endif
