/*
 * rt_signal.c - the sampling signal's handler: runs on the sampled thread.
 *
 * The sampler (core/sample_signal.c) asks a thread for its stack through a
 * slot (struct rtprof__sample_req) and the sampling signal sent with
 * tgkill. This handler, on that thread, only copies: its registers from
 * the signal context, the used part of its stack (at most
 * RTPROF__STACK_COPY bytes from the interrupted stack pointer), and its
 * label stack with the stack pointers the labels were pushed at. The
 * sampler unwinds the copy later, on its own thread, where taking locks
 * (the dynamic loader's, libunwind's) can never deadlock against the
 * interrupted code: the handler takes no lock, allocates nothing, makes no
 * system call, and is bounded by one copy of at most 64 KiB (docs:
 * BENCHMARKS.md, "Sampler").
 *
 * The sampling signal is not SIGPROF, which belongs to the program (its
 * own handler, setitimer(ITIMER_PROF), GNU sort's cleanup handler): it is
 * a real-time signal that nobody had a handler for when the sampler
 * started (rtprof__sample_signal: from SIGRTMAX down, the first whose
 * disposition was SIG_DFL; glibc's SIGRTMIN is above the signals glibc
 * keeps for itself). A signal of that number that the sampler did not send
 * (not SI_TKILL from this process) goes to the handler it replaced. Should
 * the program install a handler of its own on that signal later, the
 * sampler notices within a tick and sends no more signals in this process
 * (core/sample_signal.c, step_aside()): the program's handler would get
 * at most the signals of that tick.
 *
 * Context: the owner thread, in signal context. Async-signal-safe.
 */
#include <errno.h>
#include <string.h>
#include <ucontext.h>

#include "rt_internal.h"

struct rtprof__sample_req *_Atomic rtprof__sample_blocks[RTPROF__SAMPLE_BLOCKS];
struct sigaction rtprof__sample_prev;
pid_t rtprof__sample_pid;
_Atomic int rtprof__sample_signal;

/* A sampling signal that is not the sampler's goes to the handler it
 * replaced (SIG_DFL: nothing; a real-time signal's default would end the
 * process). */
static void
chain(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *p = &rtprof__sample_prev;

	if (p->sa_flags & SA_SIGINFO) {
		if (p->sa_sigaction != NULL)
			p->sa_sigaction(sig, si, uc);
	} else if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN &&
	    p->sa_handler != NULL) {
		p->sa_handler(sig);
	}
}

/*
 * Copy @n bytes of the thread's own stack, a pointer-sized word at a time
 * (8 bytes on 64-bit targets; 4 on armhf, whose stack pointer is only
 * word-aligned between calls). Not memcpy: under AddressSanitizer the
 * stack has poisoned red zones that a profiler may read, and an
 * instrumented copy would report them.
 */
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize_address, no_sanitize("thread")))
#endif
static void
copy_stack(unsigned char *dst, uintptr_t src, size_t n)
{
	const uintptr_t *s = (const uintptr_t *)src;
	uintptr_t *d = (uintptr_t *)(void *)dst;

	for (size_t i = 0; i < n / sizeof(uintptr_t); i++)
		d[i] = s[i];
}

/* Registers in libunwind's numbering; 0 when the architecture has no
 * native unwinding here (label-only samples). */
static int
copy_regs(struct rtprof__sample_req *rq, const ucontext_t *uc)
{
#if defined(__x86_64__)
	/* UNW_X86_64_RAX..R15 = 0..15 (DWARF order), RIP = 16. */
	static const int map[17] = {
		REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP,
		REG_RSP, REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13,
		REG_R14, REG_R15, REG_RIP
	};

	for (int i = 0; i < 17; i++)
		rq->regs[i] = (uint64_t)uc->uc_mcontext.gregs[map[i]];
	rq->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	return 1;
#elif defined(__aarch64__)
	/* UNW_AARCH64_X0..X30 = 0..30, SP = 31, PC = 32. */
	for (int i = 0; i < 31; i++)
		rq->regs[i] = uc->uc_mcontext.regs[i];
	rq->regs[31] = uc->uc_mcontext.sp;
	rq->regs[32] = uc->uc_mcontext.pc;
	rq->sp = (uintptr_t)uc->uc_mcontext.sp;
	return 1;
#elif defined(__arm__)
	/* UNW_ARM_R0..R15 = 0..15: R11 fp, R12 ip, R13 sp, R14 lr, R15 pc
	 * (the instruction's address, also in Thumb state). */
	const mcontext_t *m = &uc->uc_mcontext;

	rq->regs[0] = m->arm_r0;
	rq->regs[1] = m->arm_r1;
	rq->regs[2] = m->arm_r2;
	rq->regs[3] = m->arm_r3;
	rq->regs[4] = m->arm_r4;
	rq->regs[5] = m->arm_r5;
	rq->regs[6] = m->arm_r6;
	rq->regs[7] = m->arm_r7;
	rq->regs[8] = m->arm_r8;
	rq->regs[9] = m->arm_r9;
	rq->regs[10] = m->arm_r10;
	rq->regs[11] = m->arm_fp;
	rq->regs[12] = m->arm_ip;
	rq->regs[13] = m->arm_sp;
	rq->regs[14] = m->arm_lr;
	rq->regs[15] = m->arm_pc;
	rq->sp = (uintptr_t)m->arm_sp;
	return 1;
#else
	(void)rq;
	(void)uc;
	return 0;
#endif
}

/*
 * The slot asked of @th, in the state *@st read with acquire (pairs with
 * the sampler's release store of seq|ASKED, so `target` is the one written
 * for this request), or NULL: none (a late signal, for a request the
 * sampler withdrew). Context: @th's sampling signal handler.
 */
static struct rtprof__sample_req *
asked_slot(const struct rtprof__thread *th, uint64_t *st)
{
	uint32_t i = atomic_load_explicit(&th->s_slot, memory_order_relaxed);
	struct rtprof__sample_req *blk;

	if (i == 0 || i > RTPROF__SAMPLE_SLOTS_MAX)
		return NULL;
	i--;
	/* acquire: pairs with the sampler's release store of the block. */
	blk = atomic_load_explicit(&rtprof__sample_blocks[i /
	    RTPROF__SAMPLE_BLOCK], memory_order_acquire);
	if (blk == NULL)
		return NULL;
	blk += i % RTPROF__SAMPLE_BLOCK;
	*st = atomic_load_explicit(&blk->state, memory_order_acquire);
	if ((*st & 3) != RTPROF__REQ_ASKED ||
	    atomic_load_explicit(&blk->target, memory_order_relaxed) != th)
		return NULL;
	return blk;
}

/* Context: owner thread, signal context; async-signal-safe, bounded. */
void
rtprof__sample_handler(int sig, siginfo_t *si, void *ucv)
{
	struct rtprof__thread *th = rtprof__tls.thread;
	struct rtprof__sample_req *rq;
	uint64_t st = 0;
	uint32_t d;
	int saved = errno;

	if (si == NULL || si->si_code != SI_TKILL ||
	    si->si_pid != rtprof__sample_pid) {
		chain(sig, si, ucv);
		goto out;
	}
	if (th == NULL || (rq = asked_slot(th, &st)) == NULL)
		goto out;
	if (!atomic_compare_exchange_strong_explicit(&rq->state, &st,
	    (st & ~(uint64_t)3) | RTPROF__REQ_CLAIMED, memory_order_acquire,
	    memory_order_relaxed))
		goto out;       /* the sampler gave up on this request */
	atomic_fetch_add_explicit(&th->signals, 1, memory_order_relaxed);

	rq->have_regs = copy_regs(rq, ucv);
	rq->stack_len = 0;
	if (rq->have_regs && th->stack_hi > rq->sp && rq->sp >= th->stack_lo &&
	    rq->sp % sizeof(uintptr_t) == 0) {
		size_t n = th->stack_hi - rq->sp;

		if (n > RTPROF__STACK_COPY)
			n = RTPROF__STACK_COPY;
		copy_stack(rq->stack, rq->sp, n);
		rq->stack_len = (uint32_t)(n & ~(sizeof(uintptr_t) - 1));
	}
	/*
	 * Own labels: push stores the entry, then (signal fence) the depth,
	 * so every entry below the depth read here is complete, whatever
	 * push or pop this signal interrupted.
	 */
	d = atomic_load_explicit(&th->label_depth, memory_order_relaxed);
	atomic_signal_fence(memory_order_acquire);
	if (d > RTPROF_MAX_LABELS)
		d = RTPROF_MAX_LABELS;
	for (uint32_t i = 0; i < d; i++) {
		rq->labels[i] = atomic_load_explicit(&th->labels[i],
		    memory_order_relaxed);
		rq->label_sp[i] = th->label_sp[i];
	}
	rq->nlabels = d;
	/* release: the copy before DONE; pairs with the sampler's acquire. */
	atomic_store_explicit(&rq->state, (st & ~(uint64_t)3) |
	    RTPROF__REQ_DONE, memory_order_release);
out:
	errno = saved;
}
