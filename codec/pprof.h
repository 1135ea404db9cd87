/*
 * pprof.h - convert rtprof dumps into a pprof profile (profile.proto,
 * github.com/google/pprof), for the tools built around that format:
 * `go tool pprof`, Grafana Pyroscope, Parca, speedscope.
 *
 * The same shape as the Gecko converter (gecko.h): a dump (struct
 * rtprof_pprof_dump) holds what the dump reader delivered for one dump;
 * a writer turns one or several dumps into one profile, written through
 * a caller-supplied sink as protobuf bytes (the caller gzips them: pprof
 * profiles are gzipped). Every session with a HEADER, of every dump, is
 * one process of the profile.
 *
 * What the profile holds (docs/pprof.md says why):
 * - Sample types samples/count and cpu/nanoseconds (the thread's CPU time
 *   since its previous sample, as threadCPUDelta in the Gecko profile);
 *   period_type cpu/nanoseconds, period the first session's sampling
 *   interval; time_nanos the first session's start (wall clock),
 *   duration_nanos up to the last one's end.
 * - A sample per SAMPLE and SAME record of the sampler, as the Gecko
 *   profile's samples are: the same stacks, frame by frame, with the same
 *   names (a SAME repeats its thread's previous SAMPLE, "(unknown stack)"
 *   when that was lost; "(no label)", "(no stack)" as in Gecko). Samples
 *   of one stack, thread and process are one pprof Sample with their sums.
 *   Labels: "thread" (name) and "tid", "process" (name) and "pid",
 *   "host" (the hostname), "session" (2, 3, ... for a later session of
 *   a pid on that host).
 * - Native frames: a Location per address (a return address is looked up
 *   at address - 1, and that is its address), with the Mapping of the
 *   module (file, build id in hex, start, limit, offset) as the map was at
 *   the sample's time. Symbolized as the Gecko converter does
 *   (codec/symbolize.h; C++ demangled): Function name = the Gecko frame's
 *   name without " (in lib)" (the lib is the mapping), system_name the
 *   symbol as in the symbol table, filename and line from debug info.
 *   Unresolved: "0x<address>" as in Gecko. With symbols off
 *   (rtprof_gecko_symbols.disabled), locations carry no function and the
 *   mappings say so (has_functions false): `pprof` symbolizes them
 *   itself from the files it finds.
 * - Label frames (rtprof labels, merged into native stacks) are
 *   Locations without a mapping, one function each, named by the label.
 * - Filter (rtprof_gecko_filter): samples outside [from, to] (ms after
 *   the first session's start, other processes aligned by wall clock) are
 *   left out, and samples of threads whose name is not one of @threads
 *   (but the main thread's, as in the Gecko profile).
 *
 * Memory: per session, the distinct stacks and one record per distinct
 * (thread, stack); with a time window also 24 bytes per sample until the
 * session is written (the window is known in ms only once the session's
 * trailer is read). Functions and strings are kept for the whole profile.
 *
 * Depends on codec/ only.
 */
#ifndef RTPROF_PPROF_H
#define RTPROF_PPROF_H

#include <stdint.h>

#include "dump_reader.h"
#include "gecko.h"

struct rtprof_pprof_dump;
struct rtprof_pprof_writer;

/*
 * rtprof_pprof_dump_new - a converter for the dump called @input_name
 * (copied). Context: any thread. Return: 0 with *@out set, or -ENOMEM.
 */
int rtprof_pprof_dump_new(struct rtprof_pprof_dump **out,
    const char *input_name);

/* Context: any thread. NULL is a no-op. */
void rtprof_pprof_dump_free(struct rtprof_pprof_dump *d);

/* Symbol options (by reference, as rtprof_gecko_set_symbols). */
void rtprof_pprof_dump_set_symbols(struct rtprof_pprof_dump *d,
    const struct rtprof_gecko_symbols *opt);

/* @cb is called from rtprof_pprof_dump_read_fd() for every frame. */
void rtprof_pprof_dump_set_progress(struct rtprof_pprof_dump *d,
    rtprof_gecko_progress_cb cb, void *ctx);

/*
 * rtprof_pprof_dump_keep_times - keep every sample's time, as a writer
 * with a time window (filter from/to) needs; call before reading.
 */
void rtprof_pprof_dump_keep_times(struct rtprof_pprof_dump *d);

/*
 * rtprof_pprof_dump_read_fd - decode the dump readable from @fd into @d.
 * Context: any thread; blocks in read(2).
 * Return: as rtprof_dump_read_fd(); -ENOMEM (latched).
 */
int rtprof_pprof_dump_read_fd(struct rtprof_pprof_dump *d, int fd,
    struct rtprof_dump_stats *st);

/* Return: the number of sessions with a HEADER. */
size_t rtprof_pprof_dump_sessions(const struct rtprof_pprof_dump *d);

/* @fn with every thread name of every session (what --thread matches). */
void rtprof_pprof_dump_thread_names(const struct rtprof_pprof_dump *d,
    void (*fn)(void *ctx, const char *name), void *ctx);

/* Return: damage reports plus frames of sessions without a HEADER. */
uint64_t rtprof_pprof_dump_problems(const struct rtprof_pprof_dump *d);

/* Return: 0 with the first damage report's offset and message, or
 * -ENOENT. */
int rtprof_pprof_dump_first_damage(const struct rtprof_pprof_dump *d,
    uint64_t *offset, const char **message);

/*
 * rtprof_pprof_writer_new - start a profile written through @write (the
 * protobuf bytes, not compressed). @filter may be NULL; by reference.
 * Context: any thread. Return: 0 with *@out set, or -ENOMEM.
 */
int rtprof_pprof_writer_new(struct rtprof_pprof_writer **out,
    const struct rtprof_gecko_filter *filter, rtprof_gecko_write_cb write,
    void *ctx);

/*
 * rtprof_pprof_writer_add - write every session of @d (symbolized now);
 * @d may be freed after.
 * Return: 0; -ENODATA (no session HEADER); -ENOMEM; or the sink's first
 * error (latched).
 */
int rtprof_pprof_writer_add(struct rtprof_pprof_writer *w,
    struct rtprof_pprof_dump *d);

/*
 * rtprof_pprof_writer_finish - write the profile's last fields and free
 * @w (NULL: no-op).
 * Return: 0; -ENODATA (no session added); -ENOMEM; the sink's error.
 */
int rtprof_pprof_writer_finish(struct rtprof_pprof_writer *w);

#endif /* RTPROF_PPROF_H */
