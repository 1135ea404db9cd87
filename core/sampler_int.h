/*
 * sampler_int.h - what the sampler's parts share. Internal.
 *
 *   sampler.c        the sampler thread: tick loop, which path samples a
 *                    thread, counters, its own cost
 *   sample_rec.c     the records it writes (SAMPLE, SAME, COUNTER, ...)
 *   sample_signal.c  the signal path: a stack copied by the thread's own
 *                    handler (rt/rt_signal.c)
 *   sample_perf.c    the perf-event path: stacks the kernel copies
 *   unwind.c         libunwind over a stack copy, whoever made it
 *
 * Context: the sampler thread, with the core lock held, unless a function
 * says otherwise.
 */
#ifndef RTPROF_SAMPLER_INT_H
#define RTPROF_SAMPLER_INT_H

#include <stdint.h>
#include <time.h>

#include "core.h"
#include "../codec/wire.h"

struct rtprof__unwinder;

/* The sampler thread's unwinder (sampler.c). */
extern struct rtprof__unwinder *rtprof__sampler_unw;

/* sample_rec.c */
void rtprof__rec_counter(uint64_t t, uint16_t id, int64_t v);
void rtprof__rec_same(uint64_t t, pid_t tid, uint64_t cpu, unsigned flags);
/* @frames outermost first, @is_label[i] set for labels. */
void rtprof__rec_sample(uint64_t t, pid_t tid, uint64_t cpu, unsigned flags,
    const uint64_t *frames, const unsigned char *is_label, unsigned n);
/* @label (static) after the @n frames, the last one replaced when they
 * are RTPROF_REC_MAX_FRAMES already. Return: the new count. */
static inline unsigned
rtprof__leaf_label(uint64_t *frames, unsigned char *is_label, unsigned n,
    const char *label)
{
	if (n == RTPROF_REC_MAX_FRAMES)
		n--;
	frames[n] = (uint64_t)(uintptr_t)label;
	is_label[n] = 1;
	return n + 1;
}
/* @n kernel addresses, innermost first (written outermost first). */
void rtprof__rec_kstack(uint64_t t, pid_t tid, const uint64_t *ips,
    unsigned n);
void rtprof__rec_overhead(uint64_t t0, uint64_t t1, const uint64_t v[4]);
/* @th's SAMPLE with its labels only, read under its ck_sequence; with
 * @bare_flags added when it has none; then @leaf, a static string, unless
 * NULL (the wrapped call it waits in). */
void rtprof__sample_labels(const rtprof_lock *lk, struct rtprof__thread *th,
    uint64_t t, uint64_t d, unsigned flags, unsigned bare_flags,
    const char *leaf);

/* sample_signal.c */
int rtprof__sig_setup(const rtprof_lock *lk);
void rtprof__sig_teardown(const rtprof_lock *lk);
/* Return 1 while @th's earlier request stays asked (no other sample). */
int rtprof__sig_settle(const rtprof_lock *lk, struct rtprof__thread *th,
    uint64_t now);
void rtprof__sig_sample(const rtprof_lock *lk, struct rtprof__thread *th,
    uint64_t t, uint64_t d, unsigned flags, uint64_t now, uint64_t deadline);
void rtprof__sig_forget_all(void);

/* sample_perf.c */
int rtprof__perf_attach(const rtprof_lock *lk, struct rtprof__thread *th,
    uint64_t interval_ns);
int rtprof__perf_tick(const rtprof_lock *lk, struct rtprof__thread *th,
    uint64_t now_mono, uint64_t interval_ns);
void rtprof__perf_orphans(const rtprof_lock *lk, int drain_them);
int rtprof__perf_wanted(const rtprof_lock *lk, const struct rtprof__thread *th);
int rtprof__perf_usable(const rtprof_lock *lk);
uint64_t rtprof__perf_lost(const rtprof_lock *lk);

/* CPU ns used by @th so far, or -1 when its clock is gone. */
static inline int64_t
rtprof__cpu_ns(const struct rtprof__thread *th)
{
	struct timespec ts;

	if (clock_gettime(th->cpu_clock, &ts) != 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif /* RTPROF_SAMPLER_INT_H */
