/*
 * perf_probe.h - the perf events the sampler opens, and whether this
 * process may open them (core/perf_probe.c). No state: also built into
 * the rtprof tool, whose `record` says once why a program will be
 * sampled with signals. Internal.
 */
#ifndef RTPROF_PERF_PROBE_H
#define RTPROF_PERF_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include <linux/perf_event.h>

/* What the kernel allows this process: */
enum {
	RTPROF__PERF_NONE = 0,  /* no perf events: the signal fallback */
	RTPROF__PERF_USER = 1,  /* samples of user code only */
	RTPROF__PERF_KERNEL = 2 /* and kernel-side: stacks where threads block */
};

/* The attributes of a thread's task-clock (@cs 0) or context-switch (@cs
 * 1) event: user registers and stack, CLOCK_MONOTONIC times. */
void rtprof__perf_attr(struct perf_event_attr *a, int cs,
    uint64_t interval_ns, int kernel);

/* perf_event_open(2) for thread @tid (0: the caller), close-on-exec. */
/* Add the kernel's callchain to a context-switch event's samples. */
void rtprof__perf_attr_kstack(struct perf_event_attr *a);

/* Return: 0 when kernel stacks at context switches are allowed, else the
 * errno the kernel gave. */
int rtprof__perf_probe_kstack(void);

int rtprof__perf_open(struct perf_event_attr *a, int tid);

/* Try the sampler's event on the calling thread, kernel-side first.
 * Return: RTPROF__PERF_*; *@err the errno of the last refusal (0: none,
 * or the architecture has no perf registers here). */
int rtprof__perf_probe(int *err);

/* A sentence for people: how @level samples, or why perf events were
 * refused (@err) and the one setting that allows them. */
void rtprof__perf_why(int level, int err, char *buf, size_t n);

#endif /* RTPROF_PERF_PROBE_H */
