/*
 * unwind.h - native stacks from the copy a sampling handler made
 * (core/unwind.c). Internal.
 *
 * Context: the sampler thread only.
 */
#ifndef RTPROF_UNWIND_H
#define RTPROF_UNWIND_H

#include <stdint.h>

#include "../rt/rt_internal.h"

struct rtprof__unwinder;

/* Return: 0 with *@out set, or -ENOMEM. Allocates; scans the modules. */
int rtprof__unwinder_new(struct rtprof__unwinder **out);
void rtprof__unwinder_free(struct rtprof__unwinder *u);
/* Allows one module rescan during the next tick (on an unknown address). */
void rtprof__unwinder_tick(struct rtprof__unwinder *u);

/*
 * rtprof__unwind - unwind the copy in @rq (the thread's stack is
 * [@stack_lo, @stack_hi)).
 * @ips, @sps: out, innermost first: each frame's instruction pointer (the
 * first exact, the others return addresses) and stack pointer.
 * Return: the number of frames (0 when nothing could be unwound);
 * *@truncated set when there were more than @max.
 */
int rtprof__unwind(struct rtprof__unwinder *u,
    const struct rtprof__sample_req *rq, uintptr_t stack_lo,
    uintptr_t stack_hi, uint64_t *ips, uint64_t *sps, int max,
    int *truncated);

#endif /* RTPROF_UNWIND_H */
