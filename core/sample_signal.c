/*
 * sample_signal.c - the sampler's signal path: a thread's stack asked for
 * with a signal, copied by its handler (rt/rt_signal.c), unwound here.
 *
 * Used for threads the perf-event path (sample_perf.c) cannot take. A
 * thread is asked for a copy of its stack with the sampling signal, a
 * real-time signal chosen once per process (rtprof__sample_signal: not
 * SIGPROF, which is the program's; see rt/rt_signal.c); the copy is
 * unwound (core/unwind.c) and merged with the labels by stack address into
 * one SAMPLE record. A thread that waits for a CPU answers only when it is
 * scheduled, often a time slice later: its request stays asked in its
 * slot and the sampler goes on; at a later tick the answer becomes the
 * sample of the tick that asked (the thread has not run since: its stack
 * then is the one it had). Meanwhile the thread gets no other sample.
 * There are as many slots as threads wait at once (blocks of
 * RTPROF__SAMPLE_BLOCK, added when all are asked, up to
 * RTPROF__SAMPLE_SLOTS_MAX). A thread that has not answered after
 * PENDING_MAX_NS, or a request for which no slot is left, gets a sample
 * without native frames (flag NO_NATIVE); one that blocks the signal gets
 * NO_NATIVE | SIG_BLOCKED, and is asked less often after that (and never
 * signalled again while it still blocks it: real-time signals queue).
 * Should the program install its own handler on the sampling signal, the
 * sampler steps aside (step_aside(): no more signals in this process).
 *
 * Context: the sampler thread, with the core lock held (which keeps thread
 * records alive: a thread that unregistered is never signalled), except
 * where a function says otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "calls.h"
#include "sampler_int.h"
#include "unwind.h"
#include "../codec/wire.h"

/*
 * How long the sampler waits for a thread's handler before it goes on to
 * the next thread (leaving the request asked); how long a request may stay
 * asked before the sampler gives up on it, and how much CPU a thread that
 * has not answered may use before its blocked signal counts; how often
 * the sampler checks that the sampling signal's handler is still its own.
 */
#define SAMPLE_WAIT_NS 2000000
#define PENDING_MAX_NS 200000000
#define MASK_CPU_NS 1000000
#define CHECK_NS 1000000
#define BLOCK_BYTES (RTPROF__SAMPLE_BLOCK * sizeof(struct rtprof__sample_req))

/*
 * The slots: the blocks themselves are in rtprof__sample_blocks (the
 * handlers read them). Only the sampler thread touches these, and an
 * unregistering thread in rtprof__sampler_forget: both with the core lock
 * held.
 */
static struct rtprof__thread *slot_of[RTPROF__SAMPLE_SLOTS_MAX];
static uint32_t nslots;         /* slots in the blocks allocated */
static uint32_t slots_used;     /* the most ever asked at once */
static uint64_t req_seq;
/* The program took the sampling signal: no more signals (step_aside()). */
static int aside;
static uint64_t checked_ns;     /* last look at the signal's handler */

/* Slot @i (< nslots). Context: as pending(). */
static struct rtprof__sample_req *
slot_at(uint32_t i)
{
	/* relaxed: the sampler stored the block itself, under the lock. */
	return atomic_load_explicit(&rtprof__sample_blocks[i /
	    RTPROF__SAMPLE_BLOCK], memory_order_relaxed) +
	    i % RTPROF__SAMPLE_BLOCK;
}

/*
 * The slot of @th's request still asked from an earlier tick, or NULL (at
 * most one is @th's). Context: sampler thread or @th unregistering, lock
 * held.
 */
static struct rtprof__sample_req *
pending(const struct rtprof__thread *th)
{
	uint32_t i = atomic_load_explicit(&th->s_slot, memory_order_relaxed);

	if (i == 0 || i > nslots || slot_of[i - 1] != th)
		return NULL;
	return slot_at(i - 1);
}

/*
 * One more block of slots, mapped untouched (only the slots handlers
 * write cost memory), published (release) for the handlers; never
 * unmapped. Return: 0, or -ENOMEM (no memory, or all blocks in use).
 * Context: sampler thread (or the control thread in rtprof__sig_setup),
 * lock held.
 */
static int
block_add(void)
{
	void *p;

	if (nslots >= RTPROF__SAMPLE_SLOTS_MAX)
		return -ENOMEM;
	p = mmap(NULL, BLOCK_BYTES, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	/* release: the zeroed (IDLE) slots before a handler can see them. */
	atomic_store_explicit(&rtprof__sample_blocks[nslots /
	    RTPROF__SAMPLE_BLOCK], p, memory_order_release);
	nslots += RTPROF__SAMPLE_BLOCK;
	return 0;
}

/*
 * A free slot for @th's request, its memory counted the first time it is
 * used; a new block when all are asked. Return: the slot, or NULL.
 * Context: sampler thread, lock held.
 */
static struct rtprof__sample_req *
slot_take(const rtprof_lock *lk, struct rtprof__thread *th)
{
	uint32_t i = 0;

	while (i < nslots && slot_of[i] != NULL)
		i++;
	if (i == nslots && block_add() != 0)
		return NULL;
	if (i + 1 > slots_used) {
		rtprof__core_get(lk)->memory += sizeof(struct rtprof__sample_req);
		slots_used = i + 1;
	}
	slot_of[i] = th;
	atomic_store_explicit(&th->s_slot, i + 1, memory_order_relaxed);
	return slot_at(i);
}

/*
 * Withdraw @rq. Return: 1 when no handler answers it any more, 0 when the
 * handler has it (claimed or done: it finishes, bounded; wait for DONE
 * with done_wait()). Context: as pending().
 */
static int
withdraw(struct rtprof__sample_req *rq)
{
	uint64_t st = atomic_load_explicit(&rq->state, memory_order_acquire);

	if ((st & 3) != RTPROF__REQ_ASKED)
		return (st & 3) == RTPROF__REQ_IDLE;
	return atomic_compare_exchange_strong_explicit(&rq->state, &st,
	    (st & ~(uint64_t)3) | RTPROF__REQ_IDLE, memory_order_acq_rel,
	    memory_order_acquire);
}

/* Wait for a claimed request's copy (bounded). Context: as pending(). */
static void
done_wait(struct rtprof__sample_req *rq)
{
	/* acquire: pairs with the handler's release of DONE. */
	while ((atomic_load_explicit(&rq->state, memory_order_acquire) & 3) !=
	    RTPROF__REQ_DONE) {
		struct timespec ts = { 0, 10000 };

		nanosleep(&ts, NULL);
	}
}

/* Free @th's slot @rq (withdrawn or done). Context: as pending(). */
static void
slot_free(struct rtprof__thread *th, struct rtprof__sample_req *rq)
{
	uint32_t i = atomic_load_explicit(&th->s_slot, memory_order_relaxed);

	atomic_store_explicit(&rq->state, 0, memory_order_relaxed);
	atomic_store_explicit(&th->s_slot, 0, memory_order_relaxed);
	slot_of[i - 1] = NULL;
}

/*
 * Ask @th for a copy of its stack in a free slot. Return: the slot, with
 * the copy complete (DONE), or NULL: no slot was free, the thread is gone,
 * or it did not answer by the deadline, in which case its request stays
 * asked in its slot (pending()) for a later tick.
 * Context: sampler thread, lock held (keeps @th registered).
 */
static struct rtprof__sample_req *
ask(const rtprof_lock *lk, struct rtprof__thread *th, uint64_t deadline)
{
	struct rtprof__sample_req *rq = slot_take(lk, th);
	uint64_t seq = ++req_seq << 2, st, t0;
	int spins = 0;

	if (rq == NULL)
		return NULL;
	atomic_store_explicit(&rq->target, th, memory_order_relaxed);
	/* release: `target` and th->s_slot before the request; pairs with
	 * the handler's acquire load of `state`. */
	atomic_store_explicit(&rq->state, seq | RTPROF__REQ_ASKED,
	    memory_order_release);
	if (syscall(SYS_tgkill, (int)rtprof__sample_pid, (int)th->tid,
	    atomic_load_explicit(&rtprof__sample_signal,
	    memory_order_relaxed)) != 0) {
		withdraw(rq);   /* no signal: no handler can claim it */
		slot_free(th, rq);
		return NULL;
	}
	t0 = rtprof__mono_ns();
	for (;;) {
		/* acquire: pairs with the handler's release of DONE. */
		st = atomic_load_explicit(&rq->state, memory_order_acquire);
		if (st == (seq | RTPROF__REQ_DONE))
			return rq;
		if (st == (seq | RTPROF__REQ_ASKED) &&
		    (rtprof__mono_ns() - t0 > SAMPLE_WAIT_NS ||
		    rtprof__mono_ns() > deadline))
			return NULL;    /* still asked: a later tick sees */
		/*
		 * Claimed: the handler is copying (bounded); keep waiting.
		 * Spin briefly (delivery to a running thread takes ~10 us
		 * here), then sleep in short steps. Never sched_yield: under
		 * CFS a yielding sampler waits for the others' whole slices.
		 */
		if (++spins < 200) {
			ck_pr_stall();
		} else {
			struct timespec ts = { 0, 10000 };

			nanosleep(&ts, NULL);
		}
	}
}

/*
 * Merge the native frames (@ips/@sps innermost first) and the labels
 * (outermost first) into @out, outermost first. A label belongs to the
 * outermost frame whose stack pointer is at or below the stack pointer it
 * was pushed at (stacks grow down; push records its caller's SP).
 * Return: the number of frames.
 */
static unsigned
merge(const uint64_t *ips, const uint64_t *sps, int n, const char *const *lab,
    const uintptr_t *lsp, unsigned nl, uint64_t *out, unsigned char *is_label)
{
	unsigned k = 0, li = 0;

	for (int i = n - 1; i >= 0; i--) {
		out[k] = ips[i];
		is_label[k++] = 0;
		while (li < nl && lsp[li] >= sps[i]) {
			out[k] = (uint64_t)(uintptr_t)lab[li++];
			is_label[k++] = 1;
		}
	}
	while (li < nl) {
		out[k] = (uint64_t)(uintptr_t)lab[li++];
		is_label[k++] = 1;
	}
	return k;
}

/* Does thread @tid block the sampling signal? (/proc/self/task/TID/status,
 * SigBlk) */
static int
blocks_signal(pid_t tid)
{
	char buf[2048];
	unsigned long long mask = 0;
	const char *p;

	if (rtprof__task_file(tid, "status", buf, sizeof(buf)) == 0)
		return 0;
	p = strstr(buf, "SigBlk:");
	if (p == NULL || sscanf(p + 7, "%llx", &mask) != 1)
		return 0;
	return (mask >> (atomic_load_explicit(&rtprof__sample_signal,
	    memory_order_relaxed) - 1)) & 1;
}

/*
 * A thread that blocks the sampling signal would cost every tick the full
 * wait: after each miss in a row it is skipped for twice as many ticks, up
 * to 1024 (s_misses counts only such misses). A thread that was only slow
 * to get a CPU (its handler runs when it is scheduled) keeps its request
 * for a later tick instead.
 * Context: sampler thread, lock held.
 */
static int
can_ask(struct rtprof__thread *th)
{
	if (th->s_skip == 0)
		return 1;
	th->s_skip--;
	return 0;
}

static void
back_off(struct rtprof__thread *th)
{
	if (th->s_misses < 10)
		th->s_misses++;
	th->s_skip = 1u << th->s_misses;
}

/*
 * @th's SAMPLE at @t from the answer in @rq: its native frames merged with
 * the labels the handler copied. Context: sampler thread, lock held.
 */
static void
sample_native(struct rtprof__thread *th, const struct rtprof__sample_req *rq,
    uint64_t t, uint64_t d, unsigned flags)
{
	uint64_t frames[RTPROF_REC_MAX_FRAMES];
	unsigned char is_label[RTPROF_REC_MAX_FRAMES];
	uint64_t ips[RTPROF__MAX_NATIVE], sps[RTPROF__MAX_NATIVE];
	struct rtprof__ucopy uc = rtprof__ucopy_of_req(rq);
	const struct rtprof__call *call;
	int trunc = 0, nn = rtprof__unwind(rtprof__sampler_unw, &uc, th->stack_lo,
	    th->stack_hi, ips, sps, RTPROF__MAX_NATIVE, &trunc, &call);
	unsigned n;

	if (trunc)
		flags |= RTPROF_SAMPLE_TRUNCATED;
	if (nn == 0)
		flags |= RTPROF_SAMPLE_NO_NATIVE;
	n = merge(ips, sps, nn, rq->labels, rq->label_sp, rq->nlabels, frames,
	    is_label);
	/* Inside a wrapped call, running (it took the signal). */
	if (call != NULL && call != &rtprof__call_self)
		n = rtprof__leaf_label(frames, is_label, n, call->on_cpu);
	rtprof__rec_sample(t, th->tid, d, flags, frames, is_label, n);
	th->s_misses = 0;
	th->s_has_stack = 1;
}

/*
 * Drop @th's request still asked, if any (its session ended, or it
 * unregistered). Context: as pending().
 */
static void
forget(struct rtprof__thread *th)
{
	struct rtprof__sample_req *rq = pending(th);

	if (rq != NULL) {
		if (!withdraw(rq))
			done_wait(rq);
		slot_free(th, rq);
	}
}

/*
 * @th's request asked at an earlier tick (or just now): answered, its
 * SAMPLE with the time and CPU delta of the tick that asked (the thread
 * had not run since, or it would have answered: its stack is the one it
 * had then). Not answered after PENDING_MAX_NS, or by a thread that ran
 * MASK_CPU_NS meanwhile with the signal blocked: a sample with labels
 * only. (A thread that has not run can show the signal blocked too: one
 * preempted on its way out of the previous request's handler.)
 * Return: 1 while it stays asked (the thread gets no other sample
 * meanwhile). Context: sampler thread, lock held.
 */
int
rtprof__sig_settle(const rtprof_lock *lk, struct rtprof__thread *th, uint64_t now)
{
	struct rtprof__sample_req *rq = pending(th);
	int64_t cpu;
	uint64_t st;
	int blocks = 0;

	if (rq == NULL)
		return 0;
	/* acquire: pairs with the handler's release of DONE. */
	st = atomic_load_explicit(&rq->state, memory_order_acquire);
	if ((st & 3) == RTPROF__REQ_ASKED && !aside) {
		cpu = rtprof__cpu_ns(th);
		blocks = cpu >= 0 &&
		    (uint64_t)cpu - th->s_cpu_last >= MASK_CPU_NS &&
		    blocks_signal(th->tid);
		if (!blocks && now - th->s_mono_last < PENDING_MAX_NS)
			return 1;
	}
	/* Asked only of an awake thread: no flag but why it has no frames. */
	if (withdraw(rq)) {
		rtprof__sample_labels(lk, th, th->s_ask_t, th->s_ask_cpu,
		    RTPROF_SAMPLE_NO_NATIVE |
		    (blocks ? RTPROF_SAMPLE_SIG_BLOCKED : 0), 0, NULL);
		if (blocks)
			back_off(th);
	} else {
		done_wait(rq);
		sample_native(th, rq, th->s_ask_t, th->s_ask_cpu, 0);
	}
	slot_free(th, rq);
	return 0;
}

/*
 * The program installed its own handler on the sampling signal: send no
 * more signals in this process (its handler, or its SIG_DFL, would get
 * them), say so once on stderr and with a marker on the sampler's thread.
 * Threads get samples without native frames from now on.
 * Context: sampler thread, lock held.
 */
static void
step_aside(int sig)
{
	aside = 1;
	fprintf(stderr, "rtprof: the program installed its own handler for "
	    "signal %d (SIGRTMIN+%d), which rtprof samples with: no more "
	    "native stacks from signals in process %d\n", sig, sig - SIGRTMIN,
	    (int)getpid());
	rtprof_mark("rtprof: sampling signal taken by the program",
	    RTPROF_CAT_OTHER);
}

/*
 * May the sampler still send its signal? Its handler is looked at once in
 * CHECK_NS at most (one sigaction() call, not one per sample): the program
 * can have replaced it since, and then gets the signals of that interval
 * at most. Context: sampler thread, lock held.
 */
static int
signal_ours(uint64_t now)
{
	int sig = atomic_load_explicit(&rtprof__sample_signal,
	    memory_order_relaxed);
	struct sigaction cur;

	if (aside || now - checked_ns < CHECK_NS)
		return !aside;
	checked_ns = now;
	if (sigaction(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
	    cur.sa_sigaction == rtprof__sample_handler)
		return 1;
	step_aside(sig);
	return 0;
}

/*
 * Ask @th for its stack with the signal; its SAMPLE at @t (CPU delta @d)
 * is written now, or by rtprof__sig_settle() at a later tick when the
 * thread has not answered yet (it waits for a CPU).
 * Context: sampler thread, lock held.
 */
void
rtprof__sig_sample(const rtprof_lock *lk, struct rtprof__thread *th,
    uint64_t t, uint64_t d, unsigned flags, uint64_t now, uint64_t deadline)
{
	struct rtprof__sample_req *rq;
	unsigned none = flags | RTPROF_SAMPLE_NO_NATIVE;

	if (!can_ask(th)) {     /* it blocked the signal when last asked */
		rtprof__sample_labels(lk, th, t, d,
		    none | RTPROF_SAMPLE_SIG_BLOCKED, 0, NULL);
		return;
	}
	if (!signal_ours(now)) {
		rtprof__sample_labels(lk, th, t, d, none, 0, NULL);
		return;
	}
	/* Blocked last time and still: a real-time signal would only queue
	 * up behind the one it has not taken yet. */
	if (th->s_misses != 0 && blocks_signal(th->tid)) {
		rtprof__sample_labels(lk, th, t, d,
		    none | RTPROF_SAMPLE_SIG_BLOCKED, 0, NULL);
		back_off(th);
		return;
	}
	rq = ask(lk, th, deadline);
	if (rq != NULL) {
		sample_native(th, rq, t, d, flags);
		slot_free(th, rq);
		return;
	}
	if (pending(th) == NULL) {      /* no free slot, or no such thread */
		rtprof__sample_labels(lk, th, t, d, none, 0, NULL);
		return;
	}
	/* Not answered yet: settle() writes it, now if the thread ran with
	 * the signal blocked, else at a later tick. */
	th->s_ask_t = t;
	th->s_ask_cpu = d;
	rtprof__sig_settle(lk, th, now);
}

/*
 * Drop every request still asked (the session stopped or paused).
 * Context: sampler thread, lock held.
 */
void
rtprof__sig_forget_all(void)
{
	for (uint32_t i = 0; i < nslots; i++)
		if (slot_of[i] != NULL)
			forget(slot_of[i]);
}

/*
 * rtprof__sampler_forget - @th unregisters: its request still asked, if
 * any, is dropped, so that no thread later registered at the same address
 * answers it. Context: the owner thread, lock held.
 */
void
rtprof__sampler_forget(const rtprof_lock *lk, struct rtprof__thread *th)
{
	(void)lk;
	forget(th);
}

/*
 * The real-time signal the sampler would take now: from SIGRTMAX down to
 * SIGRTMIN (glibc keeps its own signals below that), the first nobody
 * handles or ignores (SIG_DFL). Return: it, or 0. Context: any thread.
 */
static int
choose_signal(void)
{
	struct sigaction cur;

	for (int sig = SIGRTMAX; sig >= SIGRTMIN; sig--)
		if (sigaction(sig, NULL, &cur) == 0 &&
		    !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL)
			return sig;
	return 0;
}

/*
 * rtprof__sig_taken - is @sig the sampling signal: the one in use (the
 * sampler and its handler stay for the process's life), or, none chosen
 * yet and @sampling, the one rtprof__sig_setup would choose now? For the
 * flight recorder's dump signal, checked before the sampler starts.
 * Context: any thread.
 */
int
rtprof__sig_taken(int sig, int sampling)
{
	int cur = atomic_load_explicit(&rtprof__sample_signal,
	    memory_order_relaxed);

	if (cur != 0)
		return sig == cur;
	return sampling && sig == choose_signal();
}

/*
 * The sampling signal's handler is installed already: a fork child (the
 * parent's copy of it). Keep the signal and the handler it replaced then;
 * forget the requests the parent had asked (the slots are the child's
 * copies). Context: control thread, lock held.
 */
static int
inherited(void)
{
	int sig = atomic_load_explicit(&rtprof__sample_signal,
	    memory_order_relaxed);
	struct sigaction cur;

	if (sig == 0 || sigaction(sig, NULL, &cur) != 0 ||
	    !(cur.sa_flags & SA_SIGINFO) ||
	    cur.sa_sigaction != rtprof__sample_handler)
		return 0;
	for (uint32_t i = 0; i < nslots; i++) {
		atomic_store_explicit(&slot_at(i)->state, 0,
		    memory_order_relaxed);
		slot_of[i] = NULL;
	}
	return 1;
}

/*
 * rtprof__sig_setup - choose the sampling signal and install its handler,
 * once per process, with a first block of request slots (a fork child
 * keeps the parent's signal and handler, see inherited()).
 * Context: control thread, lock held. Return: 0, -ENOMEM or -EAGAIN (no
 * free real-time signal, or sigaction failed).
 */
int
rtprof__sig_setup(const rtprof_lock *lk)
{
	struct sigaction sa;
	int sig;

	(void)lk;
	rtprof__sample_pid = getpid();
	aside = 0;
	checked_ns = 0;
	if (nslots == 0 && block_add() != 0)
		return -ENOMEM;
	if (inherited())
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = rtprof__sample_handler;
	/* SA_RESTART: interrupted read/write and friends restart; calls that
	 * never restart (poll, nanosleep...) return EINTR, as with any
	 * signal-based profiler. The sampler signals a thread only when it
	 * used CPU since its previous sample, which keeps a thread blocked in
	 * one call from being interrupted again and again. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (;;) {
		sig = choose_signal();
		if (sig == 0)
			return -EAGAIN;
		/* Before the handler: it reads neither until its signal. */
		atomic_store_explicit(&rtprof__sample_signal, sig,
		    memory_order_relaxed);
		if (sigaction(sig, &sa, &rtprof__sample_prev) != 0)
			return -EAGAIN;
		if (rtprof__sample_prev.sa_handler == SIG_DFL &&
		    !(rtprof__sample_prev.sa_flags & SA_SIGINFO))
			return 0;
		/* Taken meanwhile by another thread: give it back. */
		sigaction(sig, &rtprof__sample_prev, NULL);
	}
}

/* Undo rtprof__sig_setup (the sampler thread could not start). The slot
 * blocks stay: a handler may be reading them. Context: control thread,
 * lock held. */
void
rtprof__sig_teardown(const rtprof_lock *lk)
{
	int sig = atomic_load_explicit(&rtprof__sample_signal,
	    memory_order_relaxed);

	(void)lk;
	if (sig != 0)
		sigaction(sig, &rtprof__sample_prev, NULL);
}
