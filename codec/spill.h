/*
 * spill.h - append-only record streams kept in one temporary file, so that
 * the converter's memory does not grow with the size of the dump.
 *
 * A spill (struct rtprof_spill) owns one unlinked temporary file and a
 * memory budget for write buffers. Each stream collects records of one kind
 * for one owner (a thread's markers, a thread's samples, a counter's
 * values): records are buffered per stream and written to the file in
 * blocks; a stream remembers its blocks. Reading back gives the records in
 * append order, or, for keyed streams, in key order (stable): a stream
 * whose keys arrived in order is read straight; otherwise it is sorted in
 * memory when it fits half the budget, else by sorted runs merged with a
 * heap (external merge sort). Peak memory is the budget plus one small read
 * buffer per run, whatever the stream sizes.
 *
 * Records are byte strings of at most RTPROF_SPILL_MAX_REC bytes; a keyed
 * stream's records all have one size and their key is the uint64 at offset
 * 0 (native byte order).
 *
 * Errors latch: after the first failure (out of memory, full disk) every
 * call returns it. Context: one thread per spill; no shared state.
 */
#ifndef RTPROF_SPILL_H
#define RTPROF_SPILL_H

#include <stddef.h>
#include <stdint.h>

#define RTPROF_SPILL_MAX_REC 65535

struct rtprof_spill;
struct rtprof_spill_stream;

/*
 * rtprof_spill_new - a spill with @budget bytes of write buffers (at least
 * 1 MiB is used), its file created lazily in @dir (NULL: $TMPDIR, else
 * /tmp) and unlinked at once.
 * Return: 0 with *@out set, or -ENOMEM.
 */
int rtprof_spill_new(struct rtprof_spill **out, const char *dir,
    size_t budget);

/* Frees @sp, its streams and its file (NULL: no-op). */
void rtprof_spill_free(struct rtprof_spill *sp);

/* The first error (negative errno), or 0. */
int rtprof_spill_error(const struct rtprof_spill *sp);

/* Bytes written to the file so far (statistics). */
uint64_t rtprof_spill_file_bytes(const struct rtprof_spill *sp);

/*
 * rtprof_spill_stream_new - a new empty stream. @recsize 0: variable-size
 * records (read in append order); else fixed-size keyed records.
 * Return: the stream (owned by @sp), or NULL (error latched).
 */
struct rtprof_spill_stream *rtprof_spill_stream_new(struct rtprof_spill *sp,
    size_t recsize);

/* Drops a stream's records and blocks (its file space is not reused). */
void rtprof_spill_stream_clear(struct rtprof_spill_stream *st);

/* Records appended to @st. */
uint64_t rtprof_spill_count(const struct rtprof_spill_stream *st);

/* Append one record of @n bytes (the stream's recsize for keyed streams).
 * Return: 0 or the latched error (-ENOMEM, -ENOSPC, -EIO, -EINVAL). */
int rtprof_spill_append(struct rtprof_spill_stream *st, const void *rec,
    size_t n);

/* Called for each record read back; non-zero stops and is returned. */
typedef int (*rtprof_spill_cb)(void *ctx, const void *rec, size_t n);

/*
 * rtprof_spill_read - every record of @st in append order (variable-size
 * streams) or in key order, stable (keyed streams). @st stays readable.
 * Return: 0, the callback's non-zero value, or the latched error.
 */
int rtprof_spill_read(struct rtprof_spill_stream *st, rtprof_spill_cb cb,
    void *ctx);

#endif /* RTPROF_SPILL_H */
