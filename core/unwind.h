/*
 * unwind.h - native stacks from the copy a sampling handler made
 * (core/unwind.c). Internal.
 *
 * Context: the thread that owns the struct rtprof__unwinder (the sampler).
 */
#ifndef RTPROF_UNWIND_H
#define RTPROF_UNWIND_H

#include <stdint.h>

#include "../rt/rt_internal.h"

struct rtprof__unwinder;
struct rtprof__call;

/*
 * A thread's registers and a copy of the top of its stack, made by its
 * own signal handler (struct rtprof__sample_req) or by the kernel (a perf
 * event's sample, core/sample_perf.c).
 */
struct rtprof__ucopy {
	int have_regs;                  /* registers known for this arch */
	const uint64_t *regs;           /* RTPROF__NREGS, libunwind's numbering */
	uintptr_t sp;                   /* the stack pointer the copy starts at */
	uint32_t stack_len;             /* bytes copied from sp */
	const unsigned char *stack;
};

/* The view of a signal handler's copy. */
static inline struct rtprof__ucopy
rtprof__ucopy_of_req(const struct rtprof__sample_req *rq)
{
	struct rtprof__ucopy c = { rq->have_regs, rq->regs, rq->sp,
	    rq->stack_len, rq->stack };

	return c;
}

/* Return: 0 with *@out set, or -ENOMEM. Allocates; scans the modules. */
int rtprof__unwinder_new(struct rtprof__unwinder **out);
void rtprof__unwinder_free(struct rtprof__unwinder *u);
/* Allows one module rescan during the next tick (on an unknown address). */
void rtprof__unwinder_tick(struct rtprof__unwinder *u);

/*
 * rtprof__unwind - unwind the copy @c (the thread's stack is
 * [@stack_lo, @stack_hi); 0, 0 when unknown: then no read outside the copy
 * may land in any stack).
 * @ips, @sps: out, innermost first: each frame's instruction pointer (the
 * first exact, the others return addresses) and stack pointer.
 * Frames in rtprof's own libraries (librtprof, librtprof-preload's
 * wrappers) are left out: the program's caller is the frame that counts;
 * under two of them in a row (the recorder's own work inside a wrapper)
 * the inner frames are left out too.
 * @call: out, the wrapped call (core/calls.h) the thread was in, or NULL:
 * the innermost wrapper frame that the program called (not rtprof); the
 * frames inside it (libc's side of the call) are left out too, and the
 * caller adds the call's frame at the leaf; &rtprof__call_self when the
 * leaf frames are rtprof's own, not under a wrapper (the recorder's work
 * on the thread: its start-up wait for the sampler).
 * Return: the number of frames (0 when nothing could be unwound);
 * *@truncated set when there were more than @max, or when the copy ended
 * before the root (a read above it inside [@stack_lo, @stack_hi)).
 */
int rtprof__unwind(struct rtprof__unwinder *u,
    const struct rtprof__ucopy *c, uintptr_t stack_lo,
    uintptr_t stack_hi, uint64_t *ips, uint64_t *sps, int max,
    int *truncated, const struct rtprof__call **call);

#endif /* RTPROF_UNWIND_H */
