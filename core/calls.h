/*
 * calls.h - the calls librtprof-preload's wrappers intercept, as the
 * sampler names them (core/calls.c). Internal.
 *
 * A sample taken while the thread was inside a wrapped call (read, write,
 * pselect, wait4, sleep, open...) is charged to the caller's stack plus one
 * label frame naming the call and whether the thread was on CPU or off it
 * then: "read (on CPU)", "read (blocked)". The sampler knows it two ways:
 *   - from the stack (perf events' copies, signal handlers' copies): the
 *     innermost frame in a wrapper's code, called by the program, is the
 *     call (core/unwind.c); the frames inside it (libc's side of the call)
 *     are left out;
 *   - from the thread's sleep word (signal path, or a perf-path thread
 *     whose off-CPU stack is unknown): the wrapper stores the call's
 *     number with the asleep state, one release store in and one out
 *     (core/preload.c, blk_begin/blk_end), read by the sampler at its
 *     tick while the thread is still in the call.
 */
#ifndef RTPROF_CALLS_H
#define RTPROF_CALLS_H

#include <stdint.h>

#include "../rt/rtprof.h"

/* The sleep word (struct rtprof__thread): state in bits 0-1, the wrapped
 * call's number (0: none) above. */
#define RTPROF__SLEEP_STATE(w) ((w) & 3u)
#define RTPROF__SLEEP_CALL(w) ((w) >> 2)

/* One wrapped call. Static strings: a SAMPLE refers to them (STRREF). */
struct rtprof__call {
	unsigned id;            /* its number, 1.. (the sleep word's) */
	const char *name;       /* as in its "Blocked" marker: "read" */
	const char *on_cpu;     /* "read (on CPU)" */
	const char *blocked;    /* "read (blocked)" */
};

/* The recorder's own wait, where a thread went off CPU inside rtprof's
 * code that no wrapper of the program's calls leads to (its start-up
 * waits for the sampler): "rtprof (recorder, blocked)". Its id is 0. */
extern const struct rtprof__call rtprof__call_self;

/* A wrapper's code: [lo, hi). */
struct rtprof__call_fn {
	uintptr_t lo, hi;
	const struct rtprof__call *call;
};

/*
 * rtprof__calls_set - the wrappers of this process, once, by
 * librtprof-preload's constructor (copied; @fns need not stay).
 * Context: the dynamic loader's thread, before the program's main.
 */
RTPROF_API void rtprof__calls_set(const struct rtprof__call_fn *fns,
    unsigned n);

/* The call whose wrapper's code holds @ip, or NULL. Context: any thread. */
const struct rtprof__call *rtprof__call_at(uintptr_t ip);

/* The call numbered @id (a sleep word's), or NULL. Context: any thread. */
const struct rtprof__call *rtprof__call_of(unsigned id);

#endif /* RTPROF_CALLS_H */
