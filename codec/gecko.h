/*
 * gecko.h - convert rtprof dumps into a Firefox Profiler "Gecko" profile.
 *
 * msgpack2gecko (issue 3). A converter (struct rtprof_gecko) collects what
 * the dump reader delivers for one dump (dump_reader.h); a writer (struct
 * rtprof_gecko_writer) turns one or several converted dumps into one
 * profile, written progressively as JSON through a caller-supplied sink.
 * What the front-end needs is described in
 * /work/shared/docs/gecko-format.md.
 *
 * Processes: every session with a HEADER (of every dump) is one process.
 * The first session of the first dump is the top level; every other one is
 * an entry of the top level's "processes", with its own meta.startTime (its
 * own wall clock at start: the front-end shifts its times by the startTime
 * difference). The front-end groups tracks by pid and keeps one GeckoMain
 * per pid, so a session whose pid is already used by an earlier process
 * (a program that recorded twice) gets a made-up pid, pid + k * 4194304
 * (above Linux's PID_MAX_LIMIT, so it collides with no real pid), and a
 * process name "NAME (session N)" / "NAME (pid P)"; the real pid stays in
 * the gathering log. The top-level meta is written last so that its
 * profilingStartTime/EndTime cover every process.
 *
 * Memory: a dump is converted whole before its processes are written;
 * rtprof_gecko_writer_add() writes them out so the caller can free the
 * dump before reading the next one (only a few hundred bytes of the first
 * one are kept, the top-level meta).
 *
 * Choices made here:
 * - The process's main thread (THREAD flags bit 1) is written first, named
 *   "GeckoMain" and labelled with the process name. A dump without one gets
 *   a made-up GeckoMain thread (tid = pid, no markers, one sample at the
 *   session start): counters and the process track need it.
 * - BEGIN/END pairs (and typed phase 2/3 pairs of one type) become one
 *   phase-1 interval carrying the begin's payload; unmatched halves stay
 *   phase 2 or 3.
 * - Samples: the sampler thread's SAMPLE and SAME records (each naming
 *   the sampled thread) become the sampled thread's samples, with
 *   threadCPUDelta (ns) and per-thread de-duplicated frame and stack
 *   tables. Labels are frames in the "User" category; native addresses
 *   are symbolized offline (codec/symbolize.h; the last native frame of a
 *   sample is the interrupted instruction, the others return addresses,
 *   looked up at address - 1) into "name (in lib)" with the line in the
 *   frame table, or stay "0x..." for the front-end to look up in libs. An
 *   asleep sample's leaf frame is a separate frame row in the Idle
 *   category. A SAME without a known previous SAMPLE is "(unknown
 *   stack)". Threads the sampler never sampled keep placeholder samples:
 *   one at registration and one per sleep/wake change, each a single root
 *   frame named after the thread, in the Idle category while asleep.
 * - A BACKTRACE record (the stack where a "Blocked" call of `rtprof
 *   record` blocked) gives the marker just before it on its thread a
 *   stack in that thread's stack table, symbolized like samples (every
 *   native frame a return address): the marker's data gets "stack" (a
 *   one-sample backtrace, which the front-end turns into the marker's
 *   cause, re-based onto its merged stack table) and "cause" {tid, time,
 *   stack} for tools reading the file. A thread with backtraces and no
 *   sampler sample has them after its placeholder rows.
 * - The sampler thread is an ordinary thread; its OVERHEAD records are
 *   "ProfilerOverhead" interval markers (with a graph track) and a total
 *   in the gathering log. Counter 65534 is the "Process memory" track.
 * - Pauses become pausedRanges and "Paused" markers on GeckoMain.
 *
 * Memory is not yet bounded by the number of unique strings: the markers,
 * counter values and samples (24 bytes each, plus one raw stack node per
 * distinct stack prefix of each thread) of a whole dump are kept until its
 * processes are written (spilling them is still to do). Symbolication
 * (one symbolizer per session, while it is written) keeps a bounded cache. Depends on codec/ only, never on
 * rt/ or core/.
 */
#ifndef RTPROF_GECKO_H
#define RTPROF_GECKO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dump_reader.h"

struct rtprof_gecko;
struct rtprof_gecko_writer;

/* Called for every frame read, with its stream offset (progress bars). */
typedef void (*rtprof_gecko_progress_cb)(void *ctx, uint64_t offset);

/*
 * What to write (rtprof_gecko_writer_new). Times are ms relative to the
 * top-level meta.startTime (the first dump's first session). Samples,
 * counter values, instant markers outside [from, to] are dropped; interval
 * markers and paused ranges that overlap it are kept whole. A thread is
 * kept when its name is one of @threads (all when @nthreads is 0); each
 * process's GeckoMain is always kept (counters need it).
 */
struct rtprof_gecko_filter {
	bool has_from, has_to;
	double from_ms, to_ms;
	const char *const *threads;
	size_t nthreads;
};

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
 * Every session with a HEADER is converted (one process each); frames of
 * a session whose HEADER is missing are counted and reported in the
 * gathering log.
 *
 * Context: any thread; blocks in read(2).
 * Return: as rtprof_dump_read_fd(); -ENOMEM when the converter ran out of
 * memory (its first error is latched).
 */
int rtprof_gecko_read_fd(struct rtprof_gecko *g, int fd,
    struct rtprof_dump_stats *st);

/*
 * Symbolication of native frames (rtprof_gecko_set_symbols). Default:
 * on, files looked up at their recorded paths.
 */
struct rtprof_gecko_symbols {
	bool disabled;                  /* addresses stay "0x..." */
	const char *sysroot;            /* NULL: none (symbolize.h) */
	const char *const *debug_dirs;  /* extra debug-file roots */
	size_t ndebug_dirs;
};

/*
 * rtprof_gecko_set_symbols - how native frames of @g are symbolized when
 * it is written. @opt is copied, its strings are not: they must outlive
 * the writing of @g. NULL restores the default.
 *
 * Context: any thread, before rtprof_gecko_writer_add().
 */
void rtprof_gecko_set_symbols(struct rtprof_gecko *g,
    const struct rtprof_gecko_symbols *opt);

/* Context: any thread. @cb is called from rtprof_gecko_read_fd(). */
void rtprof_gecko_set_progress(struct rtprof_gecko *g,
    rtprof_gecko_progress_cb cb, void *ctx);

/* Return: the number of sessions whose HEADER was decoded so far. */
size_t rtprof_gecko_sessions(const struct rtprof_gecko *g);

/*
 * rtprof_gecko_thread_names - call @fn with the name of every named thread
 * of every session of @g (as recorded: what --thread matches), in session
 * and registration order; a name may come more than once.
 * Context: any thread, after rtprof_gecko_read_fd().
 */
void rtprof_gecko_thread_names(const struct rtprof_gecko *g,
    void (*fn)(void *ctx, const char *name), void *ctx);

/*
 * rtprof_gecko_writer_new - start a profile written through @write.
 * @filter: may be NULL (everything); copied by reference, must outlive
 * the writer.
 *
 * Context: any thread; allocates.
 * Return: 0 with *@out set, or -ENOMEM.
 */
int rtprof_gecko_writer_new(struct rtprof_gecko_writer **out,
    const struct rtprof_gecko_filter *filter, rtprof_gecko_write_cb write,
    void *ctx);

/*
 * A note from whoever gathered the dumps (`rtprof record`: a process it
 * gave up waiting for, a byte cap reached, a process it did not record).
 * Written in the profileGatheringLog, under "gathering", of the top-level
 * process (every note) and of each process converted from the dump the
 * note names (its input name, as given to rtprof_gecko_new()).
 */
struct rtprof_gecko_note {
	const char *what;       /* what happened (required) */
	const char *dump;       /* the dump it is about; NULL: none */
	int64_t pid;            /* the process it is about; 0: none */
	const char *program;    /* that process's name; NULL: none */
	const char *reason;     /* why, for people; NULL: none */
	int64_t wall_ns;        /* when (CLOCK_REALTIME, ns); 0: unknown */
	int64_t bytes;          /* a byte count it is about; -1: none */
};

/*
 * rtprof_gecko_writer_note - add @n (copied) to the profile's gathering
 * log. Its time is written in each process's own ms (relative to its
 * meta.startTime) and as an ISO 8601 UTC wall clock.
 *
 * Context: any thread, before the first rtprof_gecko_writer_add().
 * Return: 0, -EINVAL (no @n->what), -EBUSY (a session was written) or
 * -ENOMEM.
 */
int rtprof_gecko_writer_note(struct rtprof_gecko_writer *w,
    const struct rtprof_gecko_note *n);

/*
 * rtprof_gecko_writer_add - write every session of @g (one process each).
 * The first session ever added is the top level. @g may be freed after.
 *
 * Context: any thread; calls the sink.
 * Return: 0; -ENODATA when @g has no session HEADER (nothing written);
 * -ENOMEM; or the sink's first error (latched).
 */
int rtprof_gecko_writer_add(struct rtprof_gecko_writer *w,
    struct rtprof_gecko *g);

/*
 * rtprof_gecko_writer_finish - close the profile and free @w (NULL: no-op).
 *
 * Return: 0; -ENODATA when no session was added; -ENOMEM; or the sink's
 * first error.
 */
int rtprof_gecko_writer_finish(struct rtprof_gecko_writer *w);

/*
 * rtprof_gecko_write - one dump, whole, as a profile through @write
 * (writer_new + writer_add + writer_finish without a filter).
 *
 * Context: any thread; calls @write many times, in order.
 * Return: as rtprof_gecko_writer_finish().
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
