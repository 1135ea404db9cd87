/*
 * sample_perf.c - the sampler's perf-event path: stacks the kernel copies,
 * no signal to the program.
 *
 * For each sampled thread (not real-time, pushing no labels) the sampler
 * opens two of the kernel's software events on that thread alone
 * (perf_event_open(2), pid = its tid, cpu = -1), sharing one ring buffer:
 *   - task-clock, one sample per sample_interval_us of the thread's own
 *     CPU time, so a thread waiting for a CPU is never sampled where it was
 *     preempted, with its user registers and the top RTPROF__PERF_STACK
 *     bytes of its user stack; and context-switch records (switch in, out,
 *     out preempted), timestamped on CLOCK_MONOTONIC, which say exactly
 *     when it ran;
 *   - context-switches, period 1, with the same registers and stack: the
 *     place where the thread went off CPU (needs kernel-side sampling:
 *     perf_event_paranoid <= 1 or CAP_PERFMON; without it a thread asleep
 *     gets idle samples without native frames), and the kernel's own
 *     stack there (its callchain, kernel frames only), written as a
 *     KSTACK record before the off-CPU SAMPLE: the converter names the
 *     reason from it (a pipe full, a futex, the journal in fsync; the
 *     addresses are resolved where /proc/kallsyms is, not here: reading
 *     it costs ~40 ms of CPU, docs/wire-format.md).
 * Each tick the sampler drains the rings (sampler thread only: the kernel
 * is the producer, data_head acquire / data_tail release) and unwinds the
 * copies with core/unwind.c, as it unwinds a signal handler's copy. A
 * thread that went off CPU of its own accord (not preempted) gets, at the
 * first tick after, one SAMPLE with the stack where it blocked (flag
 * ASLEEP: the Idle category), then SAME records while it stays off CPU;
 * a thread that ran since has no stack repeated (a sample on CPU is never
 * Idle, whatever the thread declared with rtprof_thread_sleep: the switch
 * records say when it ran). CPU time per record comes
 * from the switch records (time on CPU), not from a clock read.
 *
 * The descriptors are the profiler's, not the program's: the sampler
 * thread opens them in a file table of its own (sampler.c), and before one
 * is closed its event id is checked (PERF_EVENT_IOC_ID), so a number is
 * never closed that is not that event (where the private table was
 * refused, the program may have reused it). A fork child drops the
 * parent's: neither their descriptors nor their rings (VM_DONTCOPY) are
 * in it.
 *
 * Context: the sampler thread with the core lock held, unless a function
 * says otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

#include "calls.h"
#include "perf_probe.h"
#include "sampler_int.h"
#include "unwind.h"
#include "../codec/wire.h"

#define PERF_STACK 16384        /* most stack bytes in a sample */
#define RING_PAGES 128          /* data pages per thread's ring (512 KiB) */
#define RING_PAGES_MIN 8
#define CS_RING_PAGES 8         /* the switch stacks' ring (32 KiB: 3) */
#define REC_MAX 65536           /* a record's size is a u16 */
#define KSTACK_MAX 64           /* kernel frames kept where it blocks */

enum pstate { PS_UNKNOWN, PS_ON, PS_OFF, PS_PREEMPTED };

struct rtprof__perf {
	struct rtprof__perf *next;      /* orphans: the thread is gone */
	pid_t tid;
	uintptr_t stack_lo, stack_hi;   /* its stack, to tell a copy ended */
	int fd, fd_cs;                  /* -1: none */
	uint64_t id, id_cs;             /* PERF_EVENT_IOC_ID of each */
	struct perf_event_mmap_page *meta;
	unsigned char *data;
	size_t data_size, map_len;
	/* The context-switch samples' own ring, written backward and
	 * overwritten (NULL: they share the ring above, an older kernel). */
	struct perf_event_mmap_page *cs_meta;
	const unsigned char *cs_data;
	size_t cs_size, cs_map_len;
	uint64_t lost;                  /* records the kernel could not write */
	uint64_t until;                 /* MONOTONIC ns it unregistered; 0 */
	struct rtprof__thread *th;      /* an orphan's thread (kept alive) */
	/* What the switch records say (CLOCK_MONOTONIC ns). */
	enum pstate state;
	uint64_t open_mono, in_mono, off_mono;
	uint64_t acc_ns;                /* on-CPU ns up to in_mono */
	uint64_t cpu_emitted;           /* cpu_at() of the last record */
	int64_t open_cpu;               /* its CPU clock at open */
	int off_sampled;                /* this off-CPU spell has a SAMPLE */
	uint64_t idle_next;             /* its next SAME (MONOTONIC ns) */
	/* The last context-switch sample since the thread last ran in. */
	int cs_valid;
	uint64_t cs_regs[RTPROF__NREGS];
	uintptr_t cs_sp;
	uint32_t cs_len;
	unsigned char cs_stack[PERF_STACK];
	/* The kernel's stack in that sample, innermost first. */
	unsigned cs_kn;
	uint64_t cs_kips[KSTACK_MAX];
};

/* Under the core lock (the sampler; the writer asks for the method). */
static struct {
	int decided;            /* method chosen for the process */
	int usable;             /* perf events can be opened */
	int kernel;             /* kernel-side sampling allowed (cs stacks) */
	int kstack;             /* and the kernel's stacks at switches */
	int kstack_errno;       /* why not (kernel-side sampling allowed) */
	int why_errno;
	int valgrind;           /* the kernel would see valgrind's registers */
	uint64_t t0, m0;        /* a (ticks, mono) pair */
	double tick_per_ns;
	struct rtprof__perf *orphans;
	unsigned char rec[REC_MAX];
	uint64_t lost;          /* records lost, all threads */
	uint64_t opened, refused;
} P;

#if defined(__x86_64__)
/* perf's x86 register bits (core/perf_probe.c): AX BX CX DX SI DI BP SP
 * IP, R8-R15; values come in bit order. Their libunwind numbers. */
static const unsigned char unw_of[17] = {
	0, 3, 2, 1, 4, 5, 6, 7, 16, 8, 9, 10, 11, 12, 13, 14, 15
};
#define NREGS_PERF 17
#elif defined(__aarch64__)
/* X0-X30, SP, PC: the same numbers as libunwind's. */
#define NREGS_PERF 33
#define SP_REG 31
#elif defined(__arm__)
#define NREGS_PERF 16
#define SP_REG 13
#else
#define NREGS_PERF 1            /* never sampled: rtprof__perf_probe() */
#define SP_REG 0
#endif

/* Close @fd only if it still is the event @id (the program may have
 * closed it and reused the number). */
static void
fd_close_checked(int fd, uint64_t id)
{
	uint64_t now = 0;

	if (fd >= 0 && ioctl(fd, PERF_EVENT_IOC_ID, &now) == 0 && now == id)
		close(fd);
}

/* The ring: 1 + 2^k pages, fewer when the locked-memory limit refuses. */
static int
ring_map(struct rtprof__perf *p)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	for (size_t n = RING_PAGES; n >= RING_PAGES_MIN; n /= 2) {
		void *m = mmap(NULL, (n + 1) * pg, PROT_READ | PROT_WRITE,
		    MAP_SHARED, p->fd, 0);

		if (m != MAP_FAILED) {
			p->meta = m;
			p->data = (unsigned char *)m + pg;
			p->data_size = n * pg;
			p->map_len = (n + 1) * pg;
			return 0;
		}
	}
	return -1;
}

/*
 * The context-switch event's ring: written backward by the kernel, and
 * mapped read-only, so that it overwrites its oldest records instead of
 * losing new ones (perf's overwrite mode). Only the newest record is read
 * (cs_newest): where the thread went off CPU last. A thread that switches
 * every 20 us (a pipeline's stages) copies its stack at every switch, far
 * more than a drain every 5 ms could read; in the shared ring those copies
 * overflowed it and took the switch records and clock samples with them.
 * Return: 0, or -1 (the caller falls back to the shared ring).
 */
static int
cs_ring_map(struct rtprof__perf *p)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, (CS_RING_PAGES + 1) * pg, PROT_READ, MAP_SHARED,
	    p->fd_cs, 0);

	if (m == MAP_FAILED)
		return -1;
	p->cs_meta = m;
	p->cs_data = (const unsigned char *)m + pg;
	p->cs_size = CS_RING_PAGES * pg;
	p->cs_map_len = (CS_RING_PAGES + 1) * pg;
	return 0;
}

/* Free @p: its events closed (when still ours), its rings unmapped.
 * Context: the sampler, or a thread with the lock held. */
static void
perf_free(struct rtprof__perf *p)
{
	if (p->cs_meta != NULL)
		munmap(p->cs_meta, p->cs_map_len);
	if (p->meta != NULL)
		munmap(p->meta, p->map_len);
	fd_close_checked(p->fd_cs, p->id_cs);
	fd_close_checked(p->fd, p->id);
	free(p);
}

/*
 * @p's context-switch event, in a ring of its own written backward
 * (cs_ring_map); where the kernel refuses that (before Linux 4.7), in the
 * clock event's ring (SET_OUTPUT), read in order with the rest.
 */
static void
cs_open(struct rtprof__perf *p, pid_t tid, uint64_t interval_ns)
{
	struct perf_event_attr a;

	for (int backward = 1; backward >= 0 && p->fd_cs < 0; backward--) {
		rtprof__perf_attr(&a, 1, interval_ns, 1);
		if (P.kstack)
			rtprof__perf_attr_kstack(&a);
		a.write_backward = (unsigned)backward;
		p->fd_cs = rtprof__perf_open(&a, tid);
		if (p->fd_cs < 0)
			continue;
		p->fd_cs = rtprof__fd_high(p->fd_cs, 0);
		ioctl(p->fd_cs, PERF_EVENT_IOC_ID, &p->id_cs);
		if (backward ? cs_ring_map(p) != 0 :
		    ioctl(p->fd_cs, PERF_EVENT_IOC_SET_OUTPUT, p->fd) != 0) {
			close(p->fd_cs);
			p->fd_cs = -1;
		}
	}
}

/* Open both events for @tid. Return: the state, or NULL with errno. */
static struct rtprof__perf *
perf_new(pid_t tid, uint64_t interval_ns)
{
	struct rtprof__perf *p = calloc(1, sizeof(*p));
	struct perf_event_attr a;

	if (p == NULL)
		return NULL;
	p->tid = tid;
	p->fd_cs = -1;
	rtprof__perf_attr(&a, 0, interval_ns, P.kernel);
	p->fd = rtprof__perf_open(&a, tid);
	if (p->fd >= 0)
		p->fd = rtprof__fd_high(p->fd, 0);
	if (p->fd < 0 || ring_map(p) != 0) {
		int e = p->fd < 0 ? errno : ENOMEM;

		if (p->fd >= 0)
			close(p->fd);
		free(p);
		errno = e;
		return NULL;
	}
	ioctl(p->fd, PERF_EVENT_IOC_ID, &p->id);
	if (P.kernel)
		cs_open(p, tid, interval_ns);
	return p;
}

/* ------------------------------------------------------------------ */
/* Method                                                               */

/* Try both settings once on this thread: kernel-side sampling (for the
 * stacks where threads block), then user-side only. Context: sampler. */
static void
decide(void)
{
	const char *env = getenv("RTPROF_SAMPLER");
	int level = RTPROF__PERF_NONE;

	P.decided = 1;
	P.valgrind = RUNNING_ON_VALGRIND != 0;
	P.why_errno = 0;
	if (!P.valgrind && (env == NULL || strcmp(env, "signal") != 0))
		level = rtprof__perf_probe(&P.why_errno);
	P.usable = level != RTPROF__PERF_NONE;
	P.kernel = level == RTPROF__PERF_KERNEL;
	P.kstack_errno = P.kernel ? rtprof__perf_probe_kstack() : 0;
	P.kstack = P.kernel && P.kstack_errno == 0;
	/* Refused: said once, on the program's stderr, unless a launcher
	 * (rtprof record) said it already for the whole run. */
	if (level == RTPROF__PERF_NONE && P.why_errno != 0 &&
	    getenv("RTPROF_SAMPLER_QUIET") == NULL) {
		char why[320];

		rtprof__perf_why(level, P.why_errno, why, sizeof(why));
		fprintf(stderr, "rtprof: sampling with signals (a blocking call "
		    "may end with EINTR): %s\n", why);
	}
}

/*
 * rtprof__perf_method - how this process samples, and why: "perf" (with
 * @why "kernel" or "user only") or "signal" (why perf events were not
 * used). Decides once. Context: any thread with the lock held.
 */
const char *
rtprof__perf_method(const rtprof_lock *lk, char *why, size_t n)
{
	const char *env = getenv("RTPROF_SAMPLER");

	(void)lk;
	if (!P.decided)
		decide();
	if (P.usable) {
		rtprof__perf_why(P.kernel ? RTPROF__PERF_KERNEL :
		    RTPROF__PERF_USER, P.kstack_errno, why, n);
		return "perf";
	}
	if (P.valgrind)
		snprintf(why, n, "running under valgrind: the kernel would "
		    "sample valgrind's registers, not the program's");
	else if (P.why_errno == 0 && env != NULL && strcmp(env, "signal") == 0)
		snprintf(why, n, "RTPROF_SAMPLER=signal");
	else
		rtprof__perf_why(RTPROF__PERF_NONE, P.why_errno, why, n);
	return "signal";
}

/* Context: any thread with the lock held, after rtprof__perf_method. */
int
rtprof__perf_kstacks(const rtprof_lock *lk)
{
	(void)lk;
	return P.decided && P.usable && P.kstack;
}

/* ------------------------------------------------------------------ */
/* Records                                                              */

static uint64_t
ticks_of(uint64_t mono)
{
	if (mono >= P.m0)
		return P.t0 + (uint64_t)((double)(mono - P.m0) * P.tick_per_ns);
	return P.t0 - (uint64_t)((double)(P.m0 - mono) * P.tick_per_ns);
}

/* @p's CPU ns at @mono by its switch records. */
static uint64_t
cpu_at(const struct rtprof__perf *p, uint64_t mono)
{
	uint64_t in = p->state == PS_ON ? p->in_mono :
	    p->state == PS_UNKNOWN ? p->open_mono : mono;

	return p->acc_ns + (mono > in ? mono - in : 0);
}

/* The CPU ns since @p's previous record, up to @mono. */
static uint64_t
cpu_delta(struct rtprof__perf *p, uint64_t mono)
{
	uint64_t c = cpu_at(p, mono), d = c > p->cpu_emitted ?
	    c - p->cpu_emitted : 0;

	if (c > p->cpu_emitted)
		p->cpu_emitted = c;
	return d;
}

/*
 * One SAMPLE from a copy: native frames, outermost first, then the frame
 * of the wrapped call the thread was in (core/calls.h): on CPU (a
 * task-clock sample) or blocked (@off: where it went off CPU). @in_call:
 * the call its sleep word names, for a copy that has no frames.
 */
static void
emit(struct rtprof__perf *p, const struct rtprof__ucopy *uc, uint64_t mono,
    unsigned flags, int off, const struct rtprof__call *in_call)
{
	uint64_t ips[RTPROF__MAX_NATIVE], sps[RTPROF__MAX_NATIVE];
	uint64_t frames[RTPROF__MAX_NATIVE + 1];
	unsigned char is_label[RTPROF__MAX_NATIVE + 1] = { 0 };
	const struct rtprof__call *call = NULL;
	int trunc = 0, n = uc == NULL ? 0 : rtprof__unwind(rtprof__sampler_unw,
	    uc, p->stack_lo, p->stack_hi, ips, sps, RTPROF__MAX_NATIVE, &trunc,
	    &call);

	for (int i = 0; i < n; i++)
		frames[i] = ips[n - 1 - i];
	if (trunc)
		flags |= RTPROF_SAMPLE_TRUNCATED;
	if (n == 0) {
		flags |= RTPROF_SAMPLE_NO_NATIVE;
		call = in_call;
	}
	/* The recorder's work on CPU stays charged to its caller, as
	 * before (rtprof's API calls in an instrumented program). */
	if (!off && call == &rtprof__call_self)
		call = NULL;
	if (call != NULL) {
		frames[n] = (uint64_t)(uintptr_t)(off ? call->blocked :
		    call->on_cpu);
		is_label[n++] = 1;
	}
	rtprof__rec_sample(ticks_of(mono), p->tid, cpu_delta(p, mono), flags,
	    frames, is_label, (unsigned)n);
}

/* ------------------------------------------------------------------ */
/* The ring                                                             */

/* The parts of a SAMPLE this file asks for. */
struct psample {
	uint64_t id, time;
	uint32_t tid;
	uint64_t nchain;                /* callchain entries (cs events) */
	const unsigned char *chain;
	uint64_t abi;
	uint64_t regs[RTPROF__NREGS];
	uintptr_t sp;
	const unsigned char *stack;
	uint64_t stack_len;
};

/* @p's context-switch event has a callchain (id @id). */
static int
has_chain(const struct rtprof__perf *p, uint64_t id)
{
	return P.kstack && p->fd_cs >= 0 && id == p->id_cs;
}

static int
parse_sample(const struct rtprof__perf *p, const unsigned char *r,
    size_t len, struct psample *s)
{
	const unsigned char *e = r + len, *q = r + sizeof(struct perf_event_header);
	uint64_t v[NREGS_PERF], sz;
	uint32_t pt[2];

	if (q + 8 + 8 + 8 > e)
		return -1;
	memcpy(&s->id, q, 8);
	memcpy(pt, q + 8, 8);
	s->tid = pt[1];
	memcpy(&s->time, q + 16, 8);
	q += 24;
	s->nchain = 0;
	s->chain = NULL;
	if (has_chain(p, s->id)) {
		if (q + 8 > e)
			return -1;
		memcpy(&s->nchain, q, 8);
		if (s->nchain > (uint64_t)(e - q - 8) / 8)
			return -1;
		s->chain = q + 8;
		q += 8 + s->nchain * 8;
	}
	if (q + 8 > e)
		return -1;
	memcpy(&s->abi, q, 8);
	q += 8;
	memset(s->regs, 0, sizeof(s->regs));
	s->sp = 0;
	if (s->abi != PERF_SAMPLE_REGS_ABI_NONE) {
		if (q + 8 * NREGS_PERF > e)
			return -1;
		memcpy(v, q, 8 * NREGS_PERF);
		q += 8 * NREGS_PERF;
#if defined(__x86_64__)
		for (int i = 0; i < NREGS_PERF; i++)
			s->regs[unw_of[i]] = v[i];
		s->sp = (uintptr_t)v[7];
#else
		for (int i = 0; i < NREGS_PERF; i++)
			s->regs[i] = v[i];
		s->sp = (uintptr_t)v[SP_REG];
#endif
	}
	if (q + 8 > e)
		return -1;
	memcpy(&sz, q, 8);
	q += 8;
	s->stack = q;
	s->stack_len = 0;
	if (sz != 0) {
		if (q + sz + 8 > e)
			return -1;
		memcpy(&s->stack_len, q + sz, 8);
		if (s->stack_len > sz)
			s->stack_len = sz;
	}
	return 0;
}

/* The sample_id trailer of a non-sample record: its time. */
static uint64_t
id_time(const unsigned char *r, size_t len)
{
	uint64_t t = 0;

	/* TID (8), TIME (8), IDENTIFIER (8) at the end. */
	if (len >= sizeof(struct perf_event_header) + 24)
		memcpy(&t, r + len - 16, 8);
	return t;
}

static void
on_switch(struct rtprof__perf *p, uint16_t misc, uint64_t t)
{
	if (!(misc & PERF_RECORD_MISC_SWITCH_OUT)) {
		p->state = PS_ON;
		p->in_mono = t;
		p->cs_valid = 0;
		p->cs_kn = 0;
		p->off_sampled = 0;
		return;
	}
	p->acc_ns = cpu_at(p, t);
	p->state = (misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ?
	    PS_PREEMPTED : PS_OFF;
	p->off_mono = t;
}

/* The kernel frames of @s's callchain (innermost first; the context
 * markers, PERF_CONTEXT_*, left out). */
static void
kstack_keep(struct rtprof__perf *p, const struct psample *s)
{
	p->cs_kn = 0;
	for (uint64_t i = 0; i < s->nchain && p->cs_kn < KSTACK_MAX; i++) {
		uint64_t ip;

		memcpy(&ip, s->chain + i * 8, 8);
		if (ip >= PERF_CONTEXT_MAX)
			continue;
		p->cs_kips[p->cs_kn++] = ip;
	}
}

static void
on_sample(struct rtprof__perf *p, const struct psample *s)
{
	struct rtprof__ucopy uc = { s->abi != PERF_SAMPLE_REGS_ABI_NONE,
	    s->regs, s->sp, (uint32_t)s->stack_len, s->stack };

	if (s->id == p->id_cs && p->fd_cs >= 0) {
		/* Where it goes off CPU; kept until we know it stays off. */
		p->cs_valid = uc.have_regs;
		memcpy(p->cs_regs, s->regs, sizeof(p->cs_regs));
		p->cs_sp = s->sp;
		p->cs_len = (uint32_t)s->stack_len;
		memcpy(p->cs_stack, s->stack, s->stack_len);
		kstack_keep(p, s);
		return;
	}
	if (p->state == PS_UNKNOWN) {
		p->state = PS_ON;
		p->in_mono = p->open_mono;
	}
	/* A sample of its exit path, after it unregistered: not its own. */
	if (p->until != 0 && s->time > p->until)
		return;
	emit(p, &uc, s->time, 0, 0, NULL);
}

/* One record at @r (@len bytes, contiguous). */
static void
on_record(struct rtprof__perf *p, const unsigned char *r, size_t len)
{
	struct perf_event_header h;
	struct psample s;

	memcpy(&h, r, sizeof(h));
	switch (h.type) {
	case PERF_RECORD_SAMPLE:
		if (parse_sample(p, r, len, &s) == 0)
			on_sample(p, &s);
		break;
	case PERF_RECORD_SWITCH:
		on_switch(p, h.misc, id_time(r, len));
		break;
	case PERF_RECORD_LOST:
		if (len >= sizeof(h) + 16) {
			uint64_t n;

			memcpy(&n, r + sizeof(h) + 8, 8);
			p->lost += n;
			P.lost += n;
		}
		break;
	default:
		break;
	}
}

/* Drain @p's ring. Context: sampler thread (the ring's one reader). */
static void
drain(struct rtprof__perf *p)
{
	/* acquire: the records before data_head are complete. */
	uint64_t head = __atomic_load_n(&p->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = p->meta->data_tail;
	size_t mask = p->data_size - 1;

	while (tail + sizeof(struct perf_event_header) <= head) {
		struct perf_event_header h;
		size_t off = (size_t)(tail & mask), first;
		const unsigned char *r;

		first = p->data_size - off;
		if (first >= sizeof(h)) {
			memcpy(&h, p->data + off, sizeof(h));
		} else {
			memcpy(&h, p->data + off, first);
			memcpy((unsigned char *)&h + first, p->data,
			    sizeof(h) - first);
		}
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		if (first >= h.size) {
			r = p->data + off;
		} else {
			memcpy(P.rec, p->data + off, first);
			memcpy(P.rec + first, p->data, h.size - first);
			r = P.rec;
		}
		on_record(p, r, h.size);
		tail += h.size;
	}
	/* release: our reads of the records before the kernel reuses them. */
	__atomic_store_n(&p->meta->data_tail, tail, __ATOMIC_RELEASE);
}

/*
 * The newest record of @p's backward ring, where the thread went off CPU
 * last, into cs_regs/cs_stack/cs_kips, if it belongs to the spell that
 * began at off_mono (taken after the thread last ran in, at most 1 ms
 * after its switch record). The ring is not paused: the thread is off CPU,
 * and a record copied while the kernel wrote more than the rest of the
 * ring behind it is refused. Context: sampler thread (the ring's reader).
 */
static void
cs_newest(struct rtprof__perf *p)
{
	/* acquire: the record at data_head is complete. */
	uint64_t head = __atomic_load_n(&p->cs_meta->data_head, __ATOMIC_ACQUIRE);
	size_t mask = p->cs_size - 1, off = (size_t)(head & mask), first;
	struct perf_event_header h;
	struct psample s;

	p->cs_valid = 0;
	p->cs_kn = 0;
	if (head == 0)          /* nothing written yet */
		return;
	first = p->cs_size - off;
	if (first >= sizeof(h)) {
		memcpy(&h, p->cs_data + off, sizeof(h));
	} else {
		memcpy(&h, p->cs_data + off, first);
		memcpy((unsigned char *)&h + first, p->cs_data, sizeof(h) - first);
	}
	if (h.type != PERF_RECORD_SAMPLE || h.size < sizeof(h) ||
	    h.size > p->cs_size / 2)
		return;
	memcpy(P.rec, p->cs_data + off, first < h.size ? first : h.size);
	if (first < h.size)
		memcpy(P.rec + first, p->cs_data, h.size - first);
	/* acquire: the copy is read before data_head is looked at again;
	 * the ring moves backward: head - now is what was written since,
	 * plus at most one record being written. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (head - __atomic_load_n(&p->cs_meta->data_head, __ATOMIC_RELAXED) >
	    p->cs_size / 2 - h.size)
		return;
	if (parse_sample(p, P.rec, h.size, &s) != 0 || s.id != p->id_cs ||
	    (p->in_mono != 0 && s.time < p->in_mono) ||
	    s.time > p->off_mono + 1000000)
		return;
	p->cs_valid = s.abi != PERF_SAMPLE_REGS_ABI_NONE;
	memcpy(p->cs_regs, s.regs, sizeof(p->cs_regs));
	p->cs_sp = s.sp;
	p->cs_len = (uint32_t)s.stack_len;
	memcpy(p->cs_stack, s.stack, s.stack_len);
	kstack_keep(p, &s);
}

/* ------------------------------------------------------------------ */
/* Per tick                                                             */

/*
 * After the drain: a thread off CPU of its own accord gets one SAMPLE
 * with the stack where it went off (or none known), then SAME records.
 * A thread whose state is still unknown and whose CPU clock has not moved
 * since the events were opened has been asleep since before: the same.
 */
/* Is thread @tid waiting for a CPU (state R in /proc)? Read once per
 * thread at most: only while no switch record has said. */
static int
runnable(pid_t tid)
{
	char buf[256];
	const char *q;

	if (rtprof__task_file(tid, "stat", buf, sizeof(buf)) == 0)
		return 0;
	q = strrchr(buf, ')');
	return q != NULL && q[1] == ' ' && q[2] == 'R';
}

/* The first record of @th's spell off CPU: the kernel's stack where it
 * went off (KSTACK), then a SAMPLE with its own stack there, or the call
 * its sleep word names when the stack is not known. Context: sampler
 * thread, lock held (the ring's one reader). */
static void
idle_first(struct rtprof__thread *th, struct rtprof__perf *p,
    uint64_t interval_ns)
{
	/* relaxed: a hint, for a stack not known. */
	uint32_t w = atomic_load_explicit(&th->sleep, memory_order_relaxed);
	struct rtprof__ucopy uc;

	if (p->cs_meta != NULL)
		cs_newest(p);
	uc = (struct rtprof__ucopy){ 1, p->cs_regs, p->cs_sp, p->cs_len,
	    p->cs_stack };
	if (p->cs_kn != 0)      /* before its SAMPLE, same time */
		rtprof__rec_kstack(ticks_of(p->off_mono), p->tid, p->cs_kips,
		    p->cs_kn);
	emit(p, p->cs_valid ? &uc : NULL, p->off_mono, RTPROF_SAMPLE_ASLEEP, 1,
	    rtprof__call_of(RTPROF__SLEEP_CALL(w)));
	atomic_fetch_add_explicit(&th->samples, 1, memory_order_relaxed);
	p->off_sampled = 1;
	p->idle_next = p->off_mono + interval_ns;
}

static void
idle(struct rtprof__thread *th, struct rtprof__perf *p, uint64_t now_mono,
    uint64_t interval_ns)
{
	/* No switch record since the events were opened and no CPU used:
	 * asleep since before (its stack unknown), or waiting for a CPU. */
	if (p->state == PS_UNKNOWN && now_mono - p->open_mono > 2000000 &&
	    rtprof__cpu_ns(th) == p->open_cpu) {
		p->state = runnable(p->tid) ? PS_PREEMPTED : PS_OFF;
		p->off_mono = p->open_mono;
	}
	if (p->state != PS_OFF)
		return;
	if (!p->off_sampled)
		idle_first(th, p, interval_ns);
	/* One SAME per interval of the spell so far: the ticks come less
	 * often than the interval when every thread is on this path. */
	for (; p->idle_next <= now_mono; p->idle_next += interval_ns) {
		rtprof__rec_same(ticks_of(p->idle_next), p->tid, 0,
		    RTPROF_SAMPLE_ASLEEP);
		atomic_fetch_add_explicit(&th->samples, 1, memory_order_relaxed);
	}
}

/* Does @th belong on the perf path? Real-time threads are sampled from
 * their labels; a thread that pushed labels keeps the signal path, whose
 * handler copies the labels with the stack at the same instant. */
static int
wants_perf(const struct rtprof__thread *th)
{
	return !(th->flags & (RTPROF_THREAD_RT | RTPROF_THREAD_SAMPLER)) &&
	    ck_pr_load_uint(&th->label_seq.sequence) == 0;
}

/* Does this process sample with perf events? Context: lock held. */
int
rtprof__perf_usable(const rtprof_lock *lk)
{
	(void)lk;
	return P.decided && P.usable;
}

/* Will @th be sampled with perf events? Context: lock held. */
int
rtprof__perf_wanted(const rtprof_lock *lk, const struct rtprof__thread *th)
{
	(void)lk;
	return P.decided && P.usable && wants_perf(th);
}

/*
 * rtprof__perf_attach - a new session samples @th: open its events when
 * the perf path is usable and fits the thread. Return: 1 on the perf
 * path, 0 for the signal path.
 */
int
rtprof__perf_attach(const rtprof_lock *lk, struct rtprof__thread *th,
    uint64_t interval_ns)
{
	struct rtprof__perf *p;
	uint64_t w;

	if (!P.decided)
		decide();
	if (!P.usable || !wants_perf(th) || th->s_perf != NULL)
		return th->s_perf != NULL;
	if (P.tick_per_ns == 0) {
		rtprof__clock_pair(&P.t0, &P.m0, &w);
		P.tick_per_ns = rtprof__clock_rate() / 1e9;
	}
	p = perf_new(th->tid, interval_ns);
	if (p == NULL) {
		P.refused++;
		return 0;
	}
	P.opened++;
	/* Its ring is the profiler's memory too (locked by the kernel). */
	rtprof__core_get(lk)->memory += p->map_len + p->cs_map_len +
	    sizeof(*p);
	p->open_mono = rtprof__mono_ns();
	p->open_cpu = rtprof__cpu_ns(th);
	p->state = PS_UNKNOWN;
	p->stack_lo = th->stack_lo;
	p->stack_hi = th->stack_hi;
	th->s_perf = p;
	return 1;
}

/*
 * rtprof__perf_tick - @th's records of this tick. Return: 1 when the
 * perf path sampled it, 0 when the signal path must (it has no events, or
 * it began to push labels: its events are closed after a last drain).
 */
int
rtprof__perf_tick(const rtprof_lock *lk, struct rtprof__thread *th,
    uint64_t now_mono, uint64_t interval_ns)
{
	struct rtprof__perf *p = th->s_perf;

	if (p == NULL)
		return 0;
	drain(p);
	if (!wants_perf(th)) {
		rtprof__perf_detach(lk, th);
		return 0;
	}
	idle(th, p, now_mono, interval_ns);
	return 1;
}

/*
 * rtprof__perf_detach - @th leaves the perf path (it unregisters, or its
 * session ended): its events go to the orphans, drained at the next tick
 * and closed. Context: the sampler, or @th unregistering; lock held.
 */
void
rtprof__perf_detach(const rtprof_lock *lk, struct rtprof__thread *th)
{
	struct rtprof__perf *p = th->s_perf;

	(void)lk;
	if (p == NULL)
		return;
	th->s_perf = NULL;
	th->s_perf_orphan = 1;
	p->th = th;
	p->until = rtprof__mono_ns();
	p->next = P.orphans;
	P.orphans = p;
}

/* Drain and close the orphans. @drain_them 0: the session is over, no
 * drain. */
void
rtprof__perf_orphans(const rtprof_lock *lk, int drain_them)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	struct rtprof__perf *p;

	while ((p = P.orphans) != NULL) {
		P.orphans = p->next;
		if (drain_them)
			drain(p);
		if (p->th != NULL)
			p->th->s_perf_orphan = 0;       /* may be freed now */
		c->memory -= p->map_len + p->cs_map_len + sizeof(*p);
		perf_free(p);
	}
}

/* rtprof__perf_lost - records the kernel could not write, all threads. */
uint64_t
rtprof__perf_lost(const rtprof_lock *lk)
{
	(void)lk;
	return P.lost;
}

/*
 * rtprof__perf_fork_child - the parent's events are not this process's:
 * forget them (their descriptors were in the parent's sampler's own file
 * table, their rings are not mapped here). Context: fork child, no other
 * thread.
 */
void
rtprof__perf_fork_child(struct rtprof__thread *threads)
{
	struct rtprof__perf *p;

	for (struct rtprof__thread *th = threads; th != NULL; th = th->next) {
		p = th->s_perf;
		th->s_perf = NULL;
		th->s_perf_orphan = 0;
		if (p != NULL) {
			p->next = P.orphans;
			P.orphans = p;
		}
	}
	while ((p = P.orphans) != NULL) {
		P.orphans = p->next;
		free(p);        /* its descriptors were the sampler's */
	}
}
