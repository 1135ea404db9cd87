/*
 * gecko.h - convert one rtprof dump into a Firefox Profiler "Gecko" profile.
 *
 * Milestone 1 of msgpack2gecko (issue 3): one dump, one session, one
 * process. The converter collects what the dump reader delivers
 * (dump_reader.h), then writes the profile as JSON, progressively, through
 * a caller-supplied sink. What the front-end needs is described in
 * /work/shared/docs/gecko-format.md.
 *
 * Choices made here:
 * - The process's main thread (THREAD flags bit 1) is written first, named
 *   "GeckoMain" and labelled with the process name. A dump without one gets
 *   a made-up GeckoMain thread (tid = pid, no markers, one sample at the
 *   session start): counters and the process track need it.
 * - BEGIN/END pairs (and typed phase 2/3 pairs of one type) become one
 *   phase-1 interval carrying the begin's payload; unmatched halves stay
 *   phase 2 or 3.
 * - Samples are a placeholder until the sampler exists: one at
 *   registration and one per sleep/wake change, each a single root frame
 *   named after the thread, in the Idle category while asleep.
 * - Pauses become pausedRanges and "Paused" markers on GeckoMain.
 *
 * Memory is not yet bounded by the number of unique strings: markers and
 * counter values are kept until the profile is written (milestone 2 spills
 * them). Depends on codec/ only, never on rt/ or core/.
 */
#ifndef RTPROF_GECKO_H
#define RTPROF_GECKO_H

#include <stdint.h>
#include <stdio.h>

#include "dump_reader.h"

struct rtprof_gecko;

/*
 * Output sink: write all @n bytes of @p. Return 0 or a negative errno;
 * the writer stops at (and returns) the first error.
 */
typedef int (*rtprof_gecko_write_cb)(void *ctx, const void *p, size_t n);

/*
 * rtprof_gecko_new - a converter for the dump called @input_name (shown in
 * the profile's gathering log; copied).
 *
 * Context: any thread; allocates.
 * Return: 0 with *@out set, or -ENOMEM.
 */
int rtprof_gecko_new(struct rtprof_gecko **out, const char *input_name);

/* Context: any thread. Frees @g and everything it holds; NULL is a no-op. */
void rtprof_gecko_free(struct rtprof_gecko *g);

/*
 * rtprof_gecko_read_fd - decode the dump readable from @fd into @g.
 * @st: the decoder's statistics (may be NULL).
 *
 * The first session with a HEADER is converted; frames of any other session
 * are counted and reported in the gathering log (several sessions and
 * several dumps are milestone 2).
 *
 * Context: any thread; blocks in read(2).
 * Return: as rtprof_dump_read_fd(); -ENOMEM when the converter ran out of
 * memory (its first error is latched).
 */
int rtprof_gecko_read_fd(struct rtprof_gecko *g, int fd,
    struct rtprof_dump_stats *st);

/*
 * rtprof_gecko_write - write the profile as JSON through @write.
 *
 * Context: any thread; calls @write many times, in order.
 * Return: 0; -ENODATA when no session HEADER was decoded (there is no
 * clock to convert times with); -ENOMEM; or the sink's first error.
 */
int rtprof_gecko_write(struct rtprof_gecko *g, rtprof_gecko_write_cb write,
    void *ctx);

/*
 * rtprof_gecko_print_info - print a short human summary of the decoded dump
 * (process, threads, time span, event counts, drops, damage) to @out.
 *
 * Context: any thread.
 * Return: 0, or -EIO when writing to @out failed.
 */
int rtprof_gecko_print_info(const struct rtprof_gecko *g, FILE *out);

/*
 * rtprof_gecko_problems - how many things the gathering log reports as lost
 * or ignored: damage reports of the decoder plus frames of ignored sessions.
 *
 * Context: any thread.
 * Return: the count (0 for a clean dump).
 */
uint64_t rtprof_gecko_problems(const struct rtprof_gecko *g);

/*
 * rtprof_gecko_first_damage - stream offset of the first damage report.
 *
 * Context: any thread.
 * Return: 0 with *@offset and *@message set, or -ENOENT when there is none.
 */
int rtprof_gecko_first_damage(const struct rtprof_gecko *g, uint64_t *offset,
    const char **message);

#endif /* RTPROF_GECKO_H */
