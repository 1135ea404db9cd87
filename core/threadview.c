/*
 * threadview.c - what another thread (the sampler) may observe of a
 * registered thread without stopping it: its label stack, read consistently
 * under the thread's ck_sequence, and its sleep tri-state.
 *
 * Context: any thread other than the owner, with the core lock held so the
 * thread record stays alive (the sampler holds it while it samples).
 */
#include <errno.h>

#include "calls.h"
#include "core.h"

/*
 * rtprof__labels_read - copy @th's label stack, outermost first.
 * Bounded: when the owner is in the middle of a push or pop (or was
 * preempted there) for 16 tries, it gives up instead of spinning, so a
 * sampler never waits on a real-time thread.
 * Return: the depth copied (at most @max), or -EAGAIN.
 */
int
rtprof__labels_read(const rtprof_lock *lk, struct rtprof__thread *th,
    const char **out, unsigned max)
{
	(void)lk;
	for (int tries = 0; tries < 16; tries++) {
		unsigned v = ck_pr_load_uint(&th->label_seq.sequence);
		uint32_t d;

		if (v & 1) {
			ck_pr_stall();
			continue;
		}
		/* Pairs with the store fences in ck_sequence_write_begin/end
		 * (rtprof__label_push/pop, rt/). */
		ck_pr_fence_load();
		RTPROF__HANDOVER_ACQUIRE(&th->label_seq);
		d = atomic_load_explicit(&th->label_depth, memory_order_relaxed);
		if (d > max)
			d = max;
		for (uint32_t i = 0; i < d; i++)
			out[i] = atomic_load_explicit(&th->labels[i], memory_order_relaxed);
		if (!ck_sequence_read_retry(&th->label_seq, v))
			return (int)d;
	}
	return -EAGAIN;
}

/*
 * rtprof__sleep_observe - the sampler's view of @th's sleep word: its state
 * (RTPROF__SLEEP_STATE) and the wrapped call it is in, if any
 * (RTPROF__SLEEP_CALL, core/calls.h). A thread seen asleep for the first
 * time moves to asleep-sampled (one CAS, the call kept), so the next tick
 * can repeat its previous sample in O(1).
 * Return: the word before the call (state RTPROF__AWAKE, RTPROF__ASLEEP
 * or RTPROF__ASLEEP_SAMPLED).
 */
uint32_t
rtprof__sleep_observe(const rtprof_lock *lk, struct rtprof__thread *th)
{
	/* acquire: pairs with the release store in rtprof_thread_sleep/wake
	 * and in the preload wrappers. */
	uint32_t s = atomic_load_explicit(&th->sleep, memory_order_acquire);

	(void)lk;
	if (RTPROF__SLEEP_STATE(s) == RTPROF__ASLEEP) {
		uint32_t want = s;

		/* The owner may wake up meanwhile: then the CAS fails and the
		 * thread is treated as awake (it is). */
		if (!atomic_compare_exchange_strong_explicit(&th->sleep, &want,
		    s - RTPROF__ASLEEP + RTPROF__ASLEEP_SAMPLED,
		    memory_order_acq_rel, memory_order_acquire))
			return want;
	}
	return s;
}
