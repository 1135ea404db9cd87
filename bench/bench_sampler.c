/*
 * bench_sampler.c - what sampling costs the sampled thread, against the
 * floor of signal delivery, and what it costs the sampler, in one run.
 *
 *   bench_sampler [--json] [--quick] [--runs N] [--run-ms MS]
 *                 [--alt-ms A] [--handler-iters I] [--sleep-s S]
 *                 [--sleepers K]
 *                 [--only PART[,PART...]] [--fifo]
 *                 PART: handler, steal, sleepers
 *
 * Parts (run in this order):
 *
 *   handler   The in-handler cost of the unwind alternatives, on one thread
 *             that signals itself (tgkill to its own tid, SIGUSR2) at the
 *             bottom of a recursion of depth 10 and 50: an empty handler,
 *             a frame-pointer walk, unw_backtrace (libunwind, local),
 *             unw_init_local2(UNW_INIT_SIGNAL_FRAME) + unw_step, and the
 *             copy of registers + used stack that rtprof's handler makes
 *             (rt/rt_signal.c: a word loop, at most 64 KiB from the
 *             interrupted stack pointer to the top of the stack). Times:
 *             rdtsc at the handler's entry and exit ("in handler") and
 *             around the tgkill call ("round trip", which includes the
 *             kernel's signal delivery and sigreturn). I iterations each,
 *             medians. The copy goes to a buffer that stays in this CPU's
 *             cache, unlike rtprof's, which the sampler reads on the other
 *             CPU: part "steal" measures that case as a whole.
 *
 *   steal     Time stolen from a busy thread. The target (registered, not
 *             RT, pinned to CPU 0) recurses to depth D (10, 50; noinline
 *             frames with 48 bytes of locals each) and runs a fixed
 *             multiply-xorshift loop for MS ms, counting work units; its
 *             rate is units per second of its own CPU time and per wall
 *             second. Configurations, each with an rtprof session streaming
 *             to a memfd (stream mode, 64 MiB, 64 KiB chunks):
 *               base       sample_interval_us = RTPROF_SAMPLING_OFF
 *               floor_1k   a helper thread on CPU 1 sends SIGUSR2 with
 *               floor_10k  tgkill every 1000 / 100 us (absolute sleeps on
 *                          a grid, like the sampler) to the target, whose
 *                          handler only counts (one relaxed increment),
 *                          and waits for the handler as the sampler does
 *                          (spin, 2 ms limit): the delivery floor
 *               rtprof_1k  rtprof's sampler, sample_interval_us 1000 / 100,
 *               rtprof_10k its thread ("rtprof-sampler") pinned to CPU 1
 *             (rtprof's writer is pinned to CPU 1 too). Samples delivered
 *             per second: handler invocations in the window (the floor's
 *             counter; rtprof_thread_stats_get().signals for rtprof).
 *             overhead = 1 - rate / rate(base), per clock; cost per sample
 *             = overhead / (samples per second of the same clock): the
 *             time one sample took from the target (if each sample steals
 *             c s, a second of the target's time does 1 - sps * c seconds
 *             of work). Rates and samples per second are medians over the
 *             runs; configurations are interleaved (one run of each, N
 *             times, after one dropped warm-up round) so drift hits all of
 *             them alike. A run in which the target waited for a CPU for
 *             more than 1% of the window (/proc/thread-self/schedstat) is
 *             disturbed and left out when at least 3 undisturbed runs
 *             remain. The sampler's side comes from the dump: the OVERHEAD
 *             records inside the target's window give threads_ns per
 *             thread sampled (signal, wait for the handler, remote unwind,
 *             SAMPLE record) and the whole tick; the floor's helper times
 *             tgkill -> handler seen (its round trip) for comparison.
 *             Then, the same target in alternating blocks (--alt-ms A per
 *             configuration, 6400): runs of 800 ms in which sampling is
 *             switched off and on every 50 ms (rtprof: session pause /
 *             resume; floor: the signaller skips its ticks); each "on"
 *             block is compared with the mean of its two "off" neighbours,
 *             which cancels drift slower than ~100 ms (the machine's
 *             throughput moves by a few % between runs of 500 ms, as much
 *             as 1 kHz sampling costs). Medians over the blocks; the
 *             targets use these figures when they exist.
 *
 *   sleepers  K threads (100) registered, declared asleep with
 *             rtprof_thread_sleep(), blocked on a condition variable for
 *             S s (10) while the sampler runs at 1 kHz and one busy thread
 *             records a marker every 64 work units. From the OVERHEAD
 *             records: per second of the session, the median threads_ns of
 *             a tick; the ratio last second / first second (flat: O(1) per
 *             sleeper and tick). A control session of S/5 s (at least 1 s)
 *             with the busy thread alone, before the sleepers exist, gives
 *             the per-sleeper cost by difference.
 *
 * --fifo: the target, the floor's signaller, rtprof's sampler thread and
 * the handler part's threads run SCHED_FIFO 50 (needs root or
 * CAP_SYS_NICE), so the other tenants of the machine cannot preempt them;
 * runs are then spaced by a quarter of their length so the target stays
 * below the RT throttling limit. RT threads have no timer slack, so under
 * --fifo the signaller and the sampler also keep their 100 us grid (under
 * SCHED_OTHER the default 50 us slack stretches it: fewer than 10k
 * samples/s are delivered at "10 kHz"; costs are per delivered sample).
 * The sleepers part's busy thread and sleepers stay SCHED_OTHER.
 *
 * Output: the human table on stderr with --json (one JSON object on
 * stdout), else on stdout. --quick: 3 runs of 250 ms, 1.6 s of
 * alternating blocks per configuration, 2000 handler iterations, 3 s of
 * sleepers (~35 s in all); the default (9 runs of 500 ms, 6.4 s of blocks,
 * 20000 iterations, 10 s of sleepers) takes ~3 minutes.
 *
 * Context: a benchmark; never a ctest entry. Needs 2 CPUs for the pinning
 * to mean anything (it is reported).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY /* the local unwinder (libunwind.so) */
#include <libunwind.h>

#include "dump_reader.h"
#include "harness.h"
#include "unwind.h"          /* core/unwind.c, built into this benchmark */

#define MAX_RUNS 64
#define NDEPTH 2
static const unsigned depths[NDEPTH] = { 10, 50 };

static double tsc_per_ns;
static int ncpus;
static int use_fifo;
static int fifo_target = -1, fifo_helpers = -1; /* -1 not tried, 0 failed */

/* ------------------------------------------------------------------ */
/* Small helpers                                                        */

static void
die(const char *what, int err)
{
	fprintf(stderr, "bench_sampler: %s: %s\n", what, strerror(err));
	exit(1);
}

static void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (p == NULL)
		die("calloc", ENOMEM);
	return p;
}

static pid_t
gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static uint64_t
thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ns the thread whose schedstat is open on @fd has waited for a CPU. */
static uint64_t
run_delay_fd(int fd)
{
	char buf[128];
	unsigned long long run = 0, wait = 0;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (sscanf(buf, "%llu %llu", &run, &wait) != 2)
		return 0;
	return wait;
}

/* Pin thread @tid (0: the caller) to @cpu. Return: 1 pinned, 0 not. */
static int
pin_tid(pid_t tid, int cpu)
{
	cpu_set_t set;

	if (cpu >= ncpus)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(tid, sizeof(set), &set) == 0;
}

/* SCHED_FIFO 50 for thread @tid (0: the caller) if --fifo.
 * Return: 1 set, 0 not (or not asked). */
static int
set_fifo(pid_t tid)
{
	struct sched_param sp = { .sched_priority = 50 };

	if (!use_fifo)
		return 0;
	return sched_setscheduler(tid, SCHED_FIFO, &sp) == 0;
}

static void
fifo_note(int *flag, int ok)
{
	if (*flag != 0)
		*flag = ok;
}

/* The tid of this process's thread named @comm, or 0. */
static pid_t
find_tid(const char *comm)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t found = 0;

	if (d == NULL)
		return 0;
	while (found == 0 && (e = readdir(d)) != NULL) {
		char path[300], name[64];
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if ((f = fopen(path, "re")) == NULL)
			continue;
		if (fgets(name, sizeof(name), f) != NULL) {
			name[strcspn(name, "\n")] = 0;
			if (strcmp(name, comm) == 0)
				found = (pid_t)atoi(e->d_name);
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

static double
median_of(const double *v, unsigned n)
{
	double tmp[MAX_RUNS];

	if (n == 0)
		return 0;
	memcpy(tmp, v, n * sizeof(*v));
	return bench_median(tmp, n);
}

/* Median of a large array (sorted in place). */
static double
median_big(double *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ------------------------------------------------------------------ */
/* The sampled code: recursion and work                                 */

typedef void bottom_fn(void *arg);

/* One frame with 48 bytes of locals; not a tail call (the volatile read
 * after the call), so D calls make D frames. */
static __attribute__((noinline)) unsigned
recurse(unsigned depth, bottom_fn *fn, void *arg)
{
	volatile unsigned char pad[48];
	unsigned r;

	pad[0] = (unsigned char)depth;
	pad[47] = 1;
	if (depth <= 1) {
		fn(arg);
		r = 0;
	} else {
		r = recurse(depth - 1, fn, arg);
	}
	return r + pad[0] + pad[47];
}

/* One work unit: 32 dependent multiply-add-xorshift rounds (~60 ns). */
static inline __attribute__((always_inline)) uint64_t
work_unit(uint64_t x)
{
	for (int k = 0; k < 32; k++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		x ^= x >> 29;
	}
	return x;
}

/* ------------------------------------------------------------------ */
/* Part "handler": in-handler cost of the unwind alternatives            */

enum hmode { H_EMPTY, H_FP, H_UNW_BT, H_UNW_STEP, H_COPY, H_NMODES };

static const char *const hmode_names[H_NMODES] = {
	"empty", "frame_pointers", "unw_backtrace", "unw_step", "stack_copy"
};
static const char *const hmode_desc[H_NMODES] = {
	"empty handler (rdtsc pair only)",
	"walk the rbp chain from the signal context",
	"unw_backtrace() (libunwind local, cached)",
	"unw_init_local2(SIGNAL_FRAME) + unw_step loop",
	"registers + used stack copied as rtprof does (word loop, <= 64 KiB)"
};

#define H_MAX_FRAMES 128
#define H_COPY_MAX (64 * 1024)

static struct {
	enum hmode mode;
	uintptr_t stack_lo, stack_hi;
	uint64_t h0, h1;          /* rdtsc at entry / exit */
	unsigned frames;
	size_t bytes;
	void *ips[H_MAX_FRAMES];
	/* stack_copy writes a request as rtprof's handler does, so that
	 * rtprof's own unwinder (core/unwind.c) can unwind it. */
	struct rtprof__sample_req *rq;
} hs;

static void
handler_alt(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint64_t t0 = bench_tsc_fenced();
	unsigned n = 0;

	(void)sig;
	(void)si;
	switch (hs.mode) {
	case H_EMPTY:
		break;
	case H_FP: {
		uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];

		hs.ips[n++] = (void *)(uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
		while (n < H_MAX_FRAMES && fp % 8 == 0 && fp >= hs.stack_lo &&
		    fp + 16 <= hs.stack_hi) {
			const uintptr_t *f = (const uintptr_t *)fp;

			if (f[1] == 0)
				break;
			hs.ips[n++] = (void *)f[1];
			if (f[0] <= fp)
				break;
			fp = f[0];
		}
		break;
	}
	case H_UNW_BT: {
		int k = unw_backtrace(hs.ips, H_MAX_FRAMES);

		n = k > 0 ? (unsigned)k : 0;
		break;
	}
	case H_UNW_STEP: {
		unw_cursor_t cur;
		unw_word_t ip;

		if (unw_init_local2(&cur, (unw_context_t *)uc,
		    UNW_INIT_SIGNAL_FRAME) != 0)
			break;
		do {
			if (unw_get_reg(&cur, UNW_REG_IP, &ip) != 0)
				break;
			hs.ips[n++] = (void *)(uintptr_t)ip;
		} while (n < H_MAX_FRAMES && unw_step(&cur) > 0);
		break;
	}
	case H_COPY: {
		/* As rt/rt_signal.c: 17 registers, then the stack from the
		 * interrupted sp to the top, at most 64 KiB, in 8-byte words. */
		static const int map[17] = {
			REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
			REG_RBP, REG_RSP, REG_R8, REG_R9, REG_R10, REG_R11,
			REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP
		};
		struct rtprof__sample_req *rq = hs.rq;
		uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
		size_t len = 0;

		for (int i = 0; i < 17; i++)
			rq->regs[i] = (uint64_t)uc->uc_mcontext.gregs[map[i]];
		rq->sp = sp;
		rq->have_regs = 1;
		if (hs.stack_hi > sp && sp >= hs.stack_lo && sp % 8 == 0) {
			const volatile uint64_t *s = (const volatile uint64_t *)sp;
			uint64_t *d = (uint64_t *)(void *)rq->stack;

			len = hs.stack_hi - sp;
			if (len > H_COPY_MAX)
				len = H_COPY_MAX;
			for (size_t i = 0; i < len / 8; i++)
				d[i] = s[i];
		}
		rq->stack_len = (uint32_t)(len & ~(size_t)7);
		rq->nlabels = 0;
		hs.bytes = len;
		break;
	}
	case H_NMODES:
		break;
	}
	hs.frames = n;
	hs.h0 = t0;
	hs.h1 = bench_tsc_fenced();
}

struct hres {
	double in_ns[NDEPTH];      /* median in-handler time */
	double rt_ns[NDEPTH];      /* median tgkill round trip */
	double in_p90[NDEPTH];
	unsigned frames[NDEPTH];
	size_t bytes[NDEPTH];
};

static struct hres hres[H_NMODES];
static unsigned h_iters = 20000;
static int h_pinned;

/*
 * rtprof's remote unwind of the stack_copy request, on a helper thread on
 * CPU 1 as on the sampler (the copy's cache lines move between the CPUs
 * as they do in rtprof), in lockstep with the signalling thread.
 */
static struct {
	_Atomic unsigned seq, done;
	_Atomic int quit;
	double *ns;
	unsigned n;
	int frames, truncated, pinned, ok;
	double med_ns[NDEPTH], p90_ns[NDEPTH];
	unsigned nframes[NDEPTH];
} uw;

static void *
unwinder_main(void *arg)
{
	struct rtprof__unwinder *u = NULL;
	uint64_t ips[RTPROF__MAX_NATIVE], sps[RTPROF__MAX_NATIVE];
	unsigned last = 0;

	(void)arg;
	uw.pinned = pin_tid(0, 1);
	(void)set_fifo(0);
	uw.ok = rtprof__unwinder_new(&u) == 0;
	atomic_store_explicit(&uw.done, 0, memory_order_release);
	while (uw.ok) {
		unsigned s = atomic_load_explicit(&uw.seq, memory_order_acquire);
		uint64_t t0, t1;
		struct rtprof__ucopy uc;
		int trunc = 0, nn;
		const struct rtprof__call *call;

		if (s == last) {
			if (atomic_load_explicit(&uw.quit, memory_order_relaxed))
				break;
			__builtin_ia32_pause();
			continue;
		}
		last = s;
		t0 = bench_tsc_fenced();
		rtprof__unwinder_tick(u);
		uc = rtprof__ucopy_of_req(hs.rq);
		nn = rtprof__unwind(u, &uc, hs.stack_lo, hs.stack_hi, ips, sps,
		    RTPROF__MAX_NATIVE, &trunc, &call);
		t1 = bench_tsc_fenced();
		if (uw.n < h_iters)
			uw.ns[uw.n++] = (double)(t1 - t0) / tsc_per_ns;
		uw.frames = nn;
		uw.truncated = trunc;
		atomic_store_explicit(&uw.done, s, memory_order_release);
	}
	if (u != NULL)
		rtprof__unwinder_free(u);
	return NULL;
}

struct hctx {
	unsigned di;
};

/* At the bottom of the recursion: every mode, I self-signals each. */
static void
handler_bottom(void *arg)
{
	const struct hctx *hc = arg;
	double *in = xcalloc(h_iters, sizeof(*in));
	double *rt = xcalloc(h_iters, sizeof(*rt));
	pid_t pid = getpid(), tid = gettid_();

	for (int m = 0; m < H_NMODES; m++) {
		hs.mode = (enum hmode)m;
		for (unsigned i = 0; i < 200; i++) /* warm-up: caches, tables */
			syscall(SYS_tgkill, (int)pid, (int)tid, SIGUSR2);
		for (unsigned i = 0; i < h_iters; i++) {
			uint64_t t0 = bench_tsc_fenced(), t1;

			syscall(SYS_tgkill, (int)pid, (int)tid, SIGUSR2);
			t1 = bench_tsc_fenced();
			rt[i] = (double)(t1 - t0) / tsc_per_ns;
			in[i] = (double)(hs.h1 - hs.h0) / tsc_per_ns;
		}
		hres[m].frames[hc->di] = hs.frames;
		hres[m].bytes[hc->di] = m == H_COPY ? hs.bytes : 0;
		hres[m].rt_ns[hc->di] = median_big(rt, h_iters);
		hres[m].in_ns[hc->di] = median_big(in, h_iters);
		hres[m].in_p90[hc->di] = in[(size_t)((double)h_iters * 0.9)];
	}
	/* The copy unwound by rtprof's unwinder on CPU 1. */
	hs.mode = H_COPY;
	uw.n = 0;
	for (unsigned i = 0; uw.ok && i < h_iters + 200; i++) {
		unsigned s;

		syscall(SYS_tgkill, (int)pid, (int)tid, SIGUSR2);
		if (i == 200)
			uw.n = 0; /* warm-up done (the unwinder is idle now) */
		s = atomic_load_explicit(&uw.seq, memory_order_relaxed) + 1;
		atomic_store_explicit(&uw.seq, s, memory_order_release);
		while (atomic_load_explicit(&uw.done, memory_order_acquire) != s)
			__builtin_ia32_pause();
	}
	if (uw.ok) {
		uw.nframes[hc->di] = (unsigned)uw.frames;
		uw.med_ns[hc->di] = median_big(uw.ns, uw.n);
		uw.p90_ns[hc->di] = uw.ns[(size_t)((double)uw.n * 0.9)];
	}
	free(in);
	free(rt);
}

static void *
handler_main(void *arg)
{
	pthread_attr_t a;
	void *lo = NULL;
	size_t size = 0;

	(void)arg;
	h_pinned = pin_tid(0, 0);
	(void)set_fifo(0);
	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		if (pthread_attr_getstack(&a, &lo, &size) == 0) {
			hs.stack_lo = (uintptr_t)lo;
			hs.stack_hi = (uintptr_t)lo + size;
		}
		pthread_attr_destroy(&a);
	}
	for (unsigned di = 0; di < NDEPTH; di++) {
		struct hctx hc = { di };

		(void)recurse(depths[di], handler_bottom, &hc);
	}
	return NULL;
}

static void
part_handler(void)
{
	struct sigaction sa, old;
	pthread_t t, ut;
	int rc;

	hs.rq = aligned_alloc(64, (sizeof(*hs.rq) + 63) & ~(size_t)63);
	uw.ns = xcalloc(h_iters, sizeof(*uw.ns));
	if (hs.rq == NULL)
		die("aligned_alloc", ENOMEM);
	memset(hs.rq, 0, sizeof(*hs.rq));
	atomic_store_explicit(&uw.done, ~0u, memory_order_relaxed);
	if ((rc = pthread_create(&ut, NULL, unwinder_main, NULL)) != 0)
		die("pthread_create", rc);
	while (atomic_load_explicit(&uw.done, memory_order_acquire) == ~0u)
		sleep_ms(1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler_alt;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR2, &sa, &old) != 0)
		die("sigaction", errno);
	if ((rc = pthread_create(&t, NULL, handler_main, NULL)) != 0)
		die("pthread_create", rc);
	pthread_join(t, NULL);
	atomic_store_explicit(&uw.quit, 1, memory_order_relaxed);
	pthread_join(ut, NULL);
	sigaction(SIGUSR2, &old, NULL);
	free(uw.ns);
}

/* ------------------------------------------------------------------ */
/* Dump decoding: OVERHEAD and SAMPLE records                            */

struct tickrec {
	uint64_t t0, t1;
	uint64_t lock_ns, threads_ns, counters_ns, n;
};

struct decoded {
	double tps;                     /* ticks per second (HEADER) */
	int64_t tid;                    /* SAMPLE / SAME records of this thread */
	struct tickrec *ticks;
	size_t nticks, cap;
	double *frames;                 /* nframes of @tid's SAMPLEs */
	size_t nframes, fcap;
	uint64_t *rec_t;                /* times of @tid's SAMPLE / SAME */
	unsigned char *rec_sig;         /* 1: a SAMPLE with native frames */
	size_t nrec, rcap;
	uint64_t samples, same, no_native, asleep_same, all_same, all_samples;
};

static int
dec_header(void *ctx, const struct rtprof_dump_header *h)
{
	struct decoded *d = ctx;

	d->tps = h->clock.ticks_per_second;
	return 0;
}

/* Keep the time of a SAMPLE / SAME of the thread of interest. */
static int
rec_time(struct decoded *d, uint64_t t, int sig)
{
	if (d->nrec == d->rcap) {
		size_t nc = d->rcap ? d->rcap * 2 : 4096;
		uint64_t *n = realloc(d->rec_t, nc * sizeof(*n));
		unsigned char *f;

		if (n == NULL)
			return -ENOMEM;
		d->rec_t = n;
		if ((f = realloc(d->rec_sig, nc)) == NULL)
			return -ENOMEM;
		d->rec_sig = f;
		d->rcap = nc;
	}
	d->rec_t[d->nrec] = t;
	d->rec_sig[d->nrec++] = (unsigned char)sig;
	return 0;
}

static int
dec_record(void *ctx, const struct rtprof_dump_data *dd,
    const struct rtprof_rec_view *r)
{
	struct decoded *d = ctx;

	(void)dd;
	if (r->kind == RTPROF_REC_OVERHEAD) {
		if (d->nticks == d->cap) {
			size_t nc = d->cap ? d->cap * 2 : 4096;
			struct tickrec *n = realloc(d->ticks, nc * sizeof(*n));

			if (n == NULL)
				return -ENOMEM;
			d->ticks = n;
			d->cap = nc;
		}
		d->ticks[d->nticks++] = (struct tickrec){ r->t0, r->t1,
			r->overhead[0], r->overhead[1], r->overhead[2],
			r->overhead[3] };
	} else if (r->kind == RTPROF_REC_SAMPLE) {
		d->all_samples++;
		if (r->tid != d->tid)
			return 0;
		d->samples++;
		if (r->flags & RTPROF_SAMPLE_NO_NATIVE)
			d->no_native++;
		if (d->nframes == d->fcap) {
			size_t nc = d->fcap ? d->fcap * 2 : 4096;
			double *n = realloc(d->frames, nc * sizeof(*n));

			if (n == NULL)
				return -ENOMEM;
			d->frames = n;
			d->fcap = nc;
		}
		d->frames[d->nframes++] = r->nframes;
		return rec_time(d, r->t0, !(r->flags &
		    (RTPROF_SAMPLE_NO_NATIVE | RTPROF_SAMPLE_LABELS)));
	} else if (r->kind == RTPROF_REC_SAME) {
		d->all_same++;
		if (r->flags & RTPROF_SAMPLE_ASLEEP)
			d->asleep_same++;
		if (r->tid == d->tid) {
			d->same++;
			return rec_time(d, r->t0, 0);
		}
	}
	return 0;
}

/* Decode the dump in @fd (from offset 0). Return: 0 or a negative errno. */
static int
decode_fd(int fd, struct decoded *d)
{
	struct rtprof_dump_cb cb;
	struct rtprof_dump_stats st;
	int rc;

	memset(&cb, 0, sizeof(cb));
	cb.ctx = d;
	cb.on_header = dec_header;
	cb.on_record = dec_record;
	if (lseek(fd, 0, SEEK_SET) != 0)
		return -errno;
	rc = rtprof_dump_read_fd(fd, &cb, &st);
	if (rc == 0 && (st.bad_records || st.bad_payloads || st.seq_gaps))
		fprintf(stderr, "bench_sampler: dump damaged: %" PRIu64 " bad "
		    "records, %" PRIu64 " bad payloads, %" PRIu64 " gaps\n",
		    st.bad_records, st.bad_payloads, st.seq_gaps);
	return rc;
}

static void
decoded_free(struct decoded *d)
{
	free(d->ticks);
	free(d->frames);
	free(d->rec_t);
	free(d->rec_sig);
	memset(d, 0, sizeof(*d));
}

/* ------------------------------------------------------------------ */
/* Sessions                                                             */

static int dump_fd = -1;
static int pinned_sampler, pinned_writer;

/* Start a session streaming into the (emptied) memfd. */
static void
session_start(uint32_t interval_us, uint64_t memory, uint32_t prefill)
{
	struct rtprof_settings set;
	int rc;

	if (ftruncate(dump_fd, 0) != 0 || lseek(dump_fd, 0, SEEK_SET) != 0)
		die("memfd reset", errno);
	memset(&set, 0, sizeof(set));
	set.struct_size = sizeof(set);
	set.mode = RTPROF_MODE_STREAM;
	set.fd = dump_fd;
	set.memory_limit = memory;
	set.chunk_size = 64 << 10;
	set.prefill = prefill;
	set.flush_interval_us = 10000;
	set.sample_interval_us = interval_us;
	if ((rc = rtprof_session_start(&set)) != 0) {
		fprintf(stderr, "bench_sampler: session start: %s\n",
		    rtprof_strerror(rc));
		exit(1);
	}
	/* The library's threads exist from their first session on: keep
	 * them on CPU 1, off the measured thread's CPU. */
	if (!pinned_writer) {
		pid_t w = find_tid("rtprof-writer");

		pinned_writer = w != 0 && pin_tid(w, 1) ? 1 : -1;
	}
	if (pinned_sampler <= 0 && interval_us != RTPROF_SAMPLING_OFF) {
		pid_t s = find_tid("rtprof-sampler");

		pinned_sampler = s != 0 && pin_tid(s, 1) ? 1 : -1;
		if (s != 0 && use_fifo)
			fifo_note(&fifo_helpers, set_fifo(s));
	}
}

static void
session_stop(void)
{
	int rc = rtprof_session_stop();

	if (rc != 0) {
		fprintf(stderr, "bench_sampler: session stop: %s\n",
		    rtprof_strerror(rc));
		exit(1);
	}
}

/* ------------------------------------------------------------------ */
/* Part "steal": the target thread, the floor's signaller               */

/* Handler invocations of the floor's handler (only the target gets
 * them; single writer: a relaxed load + store, no locked instruction). */
static _Atomic uint64_t floor_handled;

static void
handler_floor(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	atomic_store_explicit(&floor_handled,
	    atomic_load_explicit(&floor_handled, memory_order_relaxed) + 1,
	    memory_order_relaxed);
}

/* What the target measured over one window. */
struct window {
	uint64_t units, cpu_ns, wall_ns, wait_ns;
	uint64_t signals, samples, floor_handled;
	uint64_t tsc0, tsc1;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int cmd;                 /* 0 idle, 1 run, 2 quit */
	int done;
	unsigned depth;
	uint64_t run_ticks;
	int alt;                 /* run in blocks (part "steal", alternating) */
	struct window w;
	pid_t tid;
	int pinned;
	int schedstat_fd;
	uint64_t sink;
} tg = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,
	 .schedstat_fd = -1 };

/*
 * Alternating blocks: the driver flips alt_phase every ALT_BLOCK_MS
 * (sampling off / on); the target closes a block at each flip it sees and
 * records its work, CPU time, handler invocations and CPU wait.
 */
#define ALT_BLOCK_MS 50
#define ALT_SUB_MS 800           /* one target run: 16 blocks */
#define ALT_MAX_BLOCKS 4096

struct block {
	uint64_t units, cpu_ns, sig, wait_ns;
	int phase;
	unsigned sub;            /* which target run */
};

static _Atomic int alt_phase;
static struct {
	struct block b[ALT_MAX_BLOCKS];
	unsigned n;
	unsigned sub;
} altb;

static void
stats_now(struct rtprof_thread_stats *st)
{
	memset(st, 0, sizeof(*st));
	(void)rtprof_thread_stats_get(st);
}

/* Handler invocations so far: the floor's and rtprof's (one is 0). */
static uint64_t
signals_now(void)
{
	struct rtprof_thread_stats st;

	stats_now(&st);
	return st.signals + atomic_load_explicit(&floor_handled,
	    memory_order_relaxed);
}

/* Alternating blocks, at the bottom of the recursion. */
static __attribute__((noinline)) void
target_bottom_alt(void *arg)
{
	uint64_t x = 88172645463325252ull, units = 0, deadline;
	uint64_t c_last, u_last = 0, s_last, w_last;
	int ph = atomic_load_explicit(&alt_phase, memory_order_relaxed);

	(void)arg;
	w_last = run_delay_fd(tg.schedstat_fd);
	s_last = signals_now();
	c_last = thread_cpu_ns();
	deadline = bench_tsc() + tg.run_ticks;
	for (;;) {
		int p, end;

		for (int k = 0; k < 8; k++)
			x = work_unit(x);
		units += 8;
		p = atomic_load_explicit(&alt_phase, memory_order_relaxed);
		end = bench_tsc() >= deadline;
		if (p != ph || end) {
			uint64_t c = thread_cpu_ns(), sg = signals_now();
			uint64_t wt = run_delay_fd(tg.schedstat_fd);

			if (altb.n < ALT_MAX_BLOCKS)
				altb.b[altb.n++] = (struct block){ units - u_last,
					c - c_last, sg - s_last, wt - w_last, ph,
					altb.sub };
			u_last = units;
			c_last = c;
			s_last = sg;
			w_last = wt;
			ph = p;
			if (end)
				break;
		}
	}
	tg.sink += x;
}

/* The measured window, at the bottom of the recursion. */
static __attribute__((noinline)) void
target_bottom(void *arg)
{
	struct window *w = arg;
	struct rtprof_thread_stats a, b;
	uint64_t x = 88172645463325252ull, units = 0, deadline;
	uint64_t c0, m0, s0, f0;

	stats_now(&a);
	f0 = atomic_load_explicit(&floor_handled, memory_order_relaxed);
	s0 = run_delay_fd(tg.schedstat_fd);
	m0 = bench_now_ns();
	c0 = thread_cpu_ns();
	w->tsc0 = bench_tsc();
	deadline = w->tsc0 + tg.run_ticks;
	for (;;) {
		for (int k = 0; k < 8; k++)
			x = work_unit(x);
		units += 8;
		if (bench_tsc() >= deadline)
			break;
	}
	w->tsc1 = bench_tsc();
	w->cpu_ns = thread_cpu_ns() - c0;
	w->wall_ns = bench_now_ns() - m0;
	w->wait_ns = run_delay_fd(tg.schedstat_fd) - s0;
	w->floor_handled = atomic_load_explicit(&floor_handled,
	    memory_order_relaxed) - f0;
	stats_now(&b);
	w->signals = b.signals - a.signals;
	w->samples = b.samples - a.samples;
	w->units = units;
	tg.sink += x;
}

static void *
target_main(void *arg)
{
	int rc;

	(void)arg;
	tg.tid = gettid_();
	tg.pinned = pin_tid(0, 0);
	if (use_fifo)
		fifo_target = set_fifo(0);
	tg.schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	if ((rc = rtprof_thread_register("bench.target", 0)) != 0) {
		fprintf(stderr, "bench_sampler: register: %s\n", rtprof_strerror(rc));
		exit(1);
	}
	pthread_mutex_lock(&tg.mu);
	for (;;) {
		struct window w;
		unsigned depth;

		while (tg.cmd == 0)
			pthread_cond_wait(&tg.cv, &tg.mu);
		if (tg.cmd == 2)
			break;
		depth = tg.depth;
		pthread_mutex_unlock(&tg.mu);
		memset(&w, 0, sizeof(w));
		(void)recurse(depth, tg.alt ? target_bottom_alt : target_bottom, &w);
		pthread_mutex_lock(&tg.mu);
		tg.w = w;
		tg.cmd = 0;
		tg.done = 1;
		pthread_cond_broadcast(&tg.cv);
	}
	pthread_mutex_unlock(&tg.mu);
	close(tg.schedstat_fd);
	return NULL;
}

static void
target_start(unsigned depth, uint64_t run_ticks, int alt)
{
	pthread_mutex_lock(&tg.mu);
	tg.depth = depth;
	tg.run_ticks = run_ticks;
	tg.alt = alt;
	tg.done = 0;
	tg.cmd = 1;
	pthread_cond_broadcast(&tg.cv);
	pthread_mutex_unlock(&tg.mu);
}

static int
target_done(void)
{
	int d;

	pthread_mutex_lock(&tg.mu);
	d = tg.done;
	pthread_mutex_unlock(&tg.mu);
	return d;
}

static struct window
target_wait(void)
{
	struct window w;

	pthread_mutex_lock(&tg.mu);
	while (!tg.done)
		pthread_cond_wait(&tg.cv, &tg.mu);
	w = tg.w;
	pthread_mutex_unlock(&tg.mu);
	return w;
}

static struct window
target_run(unsigned depth, uint64_t run_ticks)
{
	target_start(depth, run_ticks, 0);
	return target_wait();
}

/* The floor's signaller: tgkill on a grid, wait for the handler. */
struct signaller {
	uint64_t period_ns;
	_Atomic int stop;
	double *rt_ns;           /* round trips, ns */
	size_t n, cap;
	uint64_t sent, missed;
	int pinned;
	int alt;                 /* send only while alt_phase is 1 */
};

#define WAIT_LIMIT_NS 2000000

static void *
signaller_main(void *arg)
{
	struct signaller *s = arg;
	pid_t pid = getpid();
	uint64_t next = bench_now_ns() + s->period_ns;
	uint64_t limit = (uint64_t)(WAIT_LIMIT_NS * tsc_per_ns);

	s->pinned = pin_tid(0, 1);
	if (use_fifo)
		fifo_note(&fifo_helpers, set_fifo(0));
	while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		struct timespec ts = { (time_t)(next / 1000000000u),
			(long)(next % 1000000000u) };
		uint64_t now, before, t0, t1;

		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		now = bench_now_ns();
		next += s->period_ns;
		if (next <= now)
			next = now + s->period_ns;
		if (s->alt && !atomic_load_explicit(&alt_phase, memory_order_relaxed))
			continue;
		before = atomic_load_explicit(&floor_handled, memory_order_acquire);
		t0 = bench_tsc();
		if (syscall(SYS_tgkill, (int)pid, (int)tg.tid, SIGUSR2) != 0)
			continue;
		s->sent++;
		for (;;) {
			t1 = bench_tsc();
			if (atomic_load_explicit(&floor_handled,
			    memory_order_acquire) != before)
				break;
			if (t1 - t0 > limit) {
				s->missed++;
				break;
			}
			__builtin_ia32_pause();
		}
		if (s->n < s->cap)
			s->rt_ns[s->n++] = (double)(t1 - t0) / tsc_per_ns;
	}
	return NULL;
}

enum cfg_kind { K_BASE, K_FLOOR, K_RTPROF };

struct steal_cfg {
	char name[24];
	enum cfg_kind kind;
	unsigned hz;
	unsigned di;             /* depth index */
	/* per run */
	unsigned nrun;
	double rate_cpu[MAX_RUNS], rate_wall[MAX_RUNS];
	double sps_cpu[MAX_RUNS], sps_wall[MAX_RUNS];
	double side_ns[MAX_RUNS];    /* sampler side per sample, median */
	double side_p90[MAX_RUNS];
	double tick_ns[MAX_RUNS];    /* rtprof: whole tick, median */
	double busy_pct[MAX_RUNS];   /* sampler/signaller busy share */
	double frames[MAX_RUNS];     /* rtprof: median frames per SAMPLE */
	int dist[MAX_RUNS];
	uint64_t no_native, samples_dec, missed;
	/* results */
	unsigned used, disturbed;
	double m_rate_cpu, m_rate_wall, m_sps_cpu, m_sps_wall;
	double spread;               /* (max - min) / median of rate_cpu */
	double ovh_cpu, ovh_wall, cost_cpu_ns, cost_wall_ns;
	double m_side_ns, m_side_p90, m_tick_ns, m_busy_pct, m_frames;
	double ovh_pair, cost_pair_ns; /* per round against that round's base */
	unsigned npair;
};

#define NCFG_PER_DEPTH 5
static struct steal_cfg cfgs[NDEPTH * NCFG_PER_DEPTH];
static unsigned s_runs = 9, s_run_ms = 500;

static void
cfg_init(void)
{
	static const struct { const char *n; enum cfg_kind k; unsigned hz; }
	    proto[NCFG_PER_DEPTH] = {
		{ "base", K_BASE, 0 },
		{ "floor_1k", K_FLOOR, 1000 },
		{ "floor_10k", K_FLOOR, 10000 },
		{ "rtprof_1k", K_RTPROF, 1000 },
		{ "rtprof_10k", K_RTPROF, 10000 },
	};

	for (unsigned di = 0; di < NDEPTH; di++)
		for (unsigned k = 0; k < NCFG_PER_DEPTH; k++) {
			struct steal_cfg *c = &cfgs[di * NCFG_PER_DEPTH + k];

			snprintf(c->name, sizeof(c->name), "%s", proto[k].n);
			c->kind = proto[k].k;
			c->hz = proto[k].hz;
			c->di = di;
		}
}

/* The rtprof side of one run: ticks inside the window. */
static void
rtprof_side(struct steal_cfg *c, unsigned r, const struct window *w)
{
	struct decoded d;
	double *per, *tick;
	size_t n = 0;
	double busy = 0;
	int rc;

	memset(&d, 0, sizeof(d));
	d.tid = tg.tid;
	if ((rc = decode_fd(dump_fd, &d)) != 0)
		die("decode dump", -rc);
	per = xcalloc(d.nticks, sizeof(*per));
	tick = xcalloc(d.nticks, sizeof(*tick));
	for (size_t i = 0; i < d.nticks; i++) {
		const struct tickrec *t = &d.ticks[i];

		if (t->t0 < w->tsc0 || t->t1 > w->tsc1 || t->n == 0)
			continue;
		per[n] = (double)t->threads_ns / (double)t->n;
		tick[n++] = (double)(t->lock_ns + t->threads_ns + t->counters_ns);
		busy += (double)(t->t1 - t->t0);
	}
	c->side_ns[r] = median_big(per, n);
	c->side_p90[r] = n ? per[(size_t)((double)n * 0.9)] : 0;
	c->tick_ns[r] = median_big(tick, n);
	c->busy_pct[r] = 100.0 * busy / (double)(w->tsc1 - w->tsc0);
	c->frames[r] = median_big(d.frames, d.nframes);
	c->no_native += d.no_native;
	c->samples_dec += d.samples;
	free(per);
	free(tick);
	decoded_free(&d);
}

static void
steal_run(struct steal_cfg *c, unsigned r, int keep)
{
	struct signaller sg;
	pthread_t st;
	struct window w;
	uint64_t run_ticks = (uint64_t)((double)s_run_ms * 1e6 * tsc_per_ns);
	int rc;

	session_start(c->kind == K_RTPROF ? 1000000u / c->hz : RTPROF_SAMPLING_OFF,
	    64u << 20, 4);
	memset(&sg, 0, sizeof(sg));
	if (c->kind == K_FLOOR) {
		sg.period_ns = 1000000000u / c->hz;
		sg.cap = (size_t)c->hz * (s_run_ms / 1000 + 2) + 4096;
		sg.rt_ns = xcalloc(sg.cap, sizeof(*sg.rt_ns));
		if ((rc = pthread_create(&st, NULL, signaller_main, &sg)) != 0)
			die("pthread_create", rc);
	}
	w = target_run(depths[c->di], run_ticks);
	if (c->kind == K_FLOOR) {
		atomic_store_explicit(&sg.stop, 1, memory_order_relaxed);
		pthread_join(st, NULL);
	}
	session_stop();
	/* Under --fifo, keep the target's CPU share well below the RT
	 * throttling limit (kernel.sched_rt_runtime_us, 95%). */
	if (use_fifo)
		sleep_ms(s_run_ms / 4 < 50 ? 50 : s_run_ms / 4);
	if (!keep) {
		free(sg.rt_ns);
		return;
	}
	c->rate_cpu[r] = (double)w.units / ((double)w.cpu_ns / 1e9);
	c->rate_wall[r] = (double)w.units / ((double)w.wall_ns / 1e9);
	if (c->kind == K_FLOOR) {
		c->sps_cpu[r] = (double)w.floor_handled / ((double)w.cpu_ns / 1e9);
		c->sps_wall[r] = (double)w.floor_handled / ((double)w.wall_ns / 1e9);
		c->side_ns[r] = median_big(sg.rt_ns, sg.n);
		c->side_p90[r] = sg.n ? sg.rt_ns[(size_t)((double)sg.n * 0.9)] : 0;
		c->missed += sg.missed;
		c->busy_pct[r] = 0;
	} else if (c->kind == K_RTPROF) {
		c->sps_cpu[r] = (double)w.signals / ((double)w.cpu_ns / 1e9);
		c->sps_wall[r] = (double)w.signals / ((double)w.wall_ns / 1e9);
		rtprof_side(c, r, &w);
	}
	c->dist[r] = w.wait_ns * 100 > w.wall_ns;
	c->nrun = r + 1;
	free(sg.rt_ns);
}

static void
steal_summarise(void)
{
	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		struct steal_cfg *c = &cfgs[i];
		double rc_[MAX_RUNS], rw[MAX_RUNS], sc[MAX_RUNS], sw[MAX_RUNS];
		double sd[MAX_RUNS], tk[MAX_RUNS], bp[MAX_RUNS], fr[MAX_RUNS];
		double s9[MAX_RUNS];
		unsigned n = 0, clean = 0;

		for (unsigned r = 0; r < c->nrun; r++)
			clean += !c->dist[r];
		for (unsigned r = 0; r < c->nrun; r++) {
			if (clean >= 3 && c->dist[r])
				continue;
			rc_[n] = c->rate_cpu[r];
			rw[n] = c->rate_wall[r];
			sc[n] = c->sps_cpu[r];
			sw[n] = c->sps_wall[r];
			sd[n] = c->side_ns[r];
			s9[n] = c->side_p90[r];
			tk[n] = c->tick_ns[r];
			bp[n] = c->busy_pct[r];
			fr[n] = c->frames[r];
			n++;
		}
		c->used = n;
		c->disturbed = c->nrun - clean;
		c->m_rate_cpu = median_of(rc_, n);
		c->m_rate_wall = median_of(rw, n);
		c->m_sps_cpu = median_of(sc, n);
		c->m_sps_wall = median_of(sw, n);
		c->m_side_ns = median_of(sd, n);
		c->m_side_p90 = median_of(s9, n);
		c->m_tick_ns = median_of(tk, n);
		c->m_busy_pct = median_of(bp, n);
		c->m_frames = median_of(fr, n);
		qsort(rc_, n, sizeof(double), bench_cmp_double);
		c->spread = n ? (rc_[n - 1] - rc_[0]) / c->m_rate_cpu : 0;
	}
	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		struct steal_cfg *c = &cfgs[i];
		const struct steal_cfg *b = &cfgs[c->di * NCFG_PER_DEPTH];

		if (c->kind == K_BASE)
			continue;
		c->ovh_cpu = 1 - c->m_rate_cpu / b->m_rate_cpu;
		c->ovh_wall = 1 - c->m_rate_wall / b->m_rate_wall;
		c->cost_cpu_ns = c->m_sps_cpu > 0 ? c->ovh_cpu / c->m_sps_cpu * 1e9 : 0;
		c->cost_wall_ns = c->m_sps_wall > 0 ? c->ovh_wall / c->m_sps_wall * 1e9 : 0;
		{
			double o[MAX_RUNS];
			unsigned k = 0;

			for (unsigned r = 0; r < c->nrun && r < b->nrun; r++)
				if (!c->dist[r] && !b->dist[r])
					o[k++] = 1 - c->rate_cpu[r] / b->rate_cpu[r];
			c->npair = k;
			c->ovh_pair = median_of(o, k);
			c->cost_pair_ns = c->m_sps_cpu > 0 ?
			    c->ovh_pair / c->m_sps_cpu * 1e9 : 0;
		}
	}
}

/* Alternating-block results of one configuration. */
struct alt_cfg {
	const char *name;
	enum cfg_kind kind;
	unsigned hz, di;
	unsigned blocks, pairs, dropped;
	double ovh_pct, cost_ns, sps_on, cost_iqr[2];
};

#define NALT (NDEPTH * 4)
static struct alt_cfg alts[NALT];
static unsigned alt_ms = 6400;
static int done_alt;

/*
 * One configuration: ALT_SUB_MS target runs until @alt_ms, sampling
 * switched on and off every ALT_BLOCK_MS (rtprof: session pause/resume;
 * floor: the signaller skips its ticks). Each "on" block is compared with
 * the mean of its two "off" neighbours of the same run (linear drift
 * cancels): overhead = 1 - rate_on / rate_off, cost per sample =
 * overhead / (samples/s on - samples/s off), CPU clock; medians over the
 * blocks. Blocks whose thread waited for a CPU > 1% are left out.
 */
static void
alt_run(struct alt_cfg *a)
{
	uint64_t sub_ticks = (uint64_t)((double)ALT_SUB_MS * 1e6 * tsc_per_ns);
	double *ovh, *cost, *sps;
	unsigned np = 0;
	int rc;

	altb.n = 0;
	for (altb.sub = 0; altb.sub < (alt_ms + ALT_SUB_MS - 1) / ALT_SUB_MS;
	    altb.sub++) {
		struct signaller sg;
		pthread_t st;

		session_start(a->kind == K_RTPROF ? 1000000u / a->hz :
		    RTPROF_SAMPLING_OFF, 64u << 20, 4);
		if (a->kind == K_RTPROF)
			(void)rtprof_session_pause();
		atomic_store_explicit(&alt_phase, 0, memory_order_relaxed);
		memset(&sg, 0, sizeof(sg));
		if (a->kind == K_FLOOR) {
			sg.period_ns = 1000000000u / a->hz;
			sg.alt = 1;
			if ((rc = pthread_create(&st, NULL, signaller_main, &sg)) != 0)
				die("pthread_create", rc);
		}
		target_start(depths[a->di], sub_ticks, 1);
		while (!target_done()) {
			int p;

			sleep_ms(ALT_BLOCK_MS);
			p = !atomic_load_explicit(&alt_phase, memory_order_relaxed);
			if (a->kind == K_RTPROF) {
				if (p)
					(void)rtprof_session_resume();
				else
					(void)rtprof_session_pause();
			}
			atomic_store_explicit(&alt_phase, p, memory_order_relaxed);
		}
		(void)target_wait();
		if (a->kind == K_FLOOR) {
			atomic_store_explicit(&sg.stop, 1, memory_order_relaxed);
			pthread_join(st, NULL);
		}
		if (a->kind == K_RTPROF)
			(void)rtprof_session_resume();
		session_stop();
		if (use_fifo)
			sleep_ms(ALT_SUB_MS / 4);
	}
	ovh = xcalloc(altb.n, sizeof(*ovh));
	cost = xcalloc(altb.n, sizeof(*cost));
	sps = xcalloc(altb.n, sizeof(*sps));
	a->blocks = altb.n;
	for (unsigned i = 1; i + 1 < altb.n; i++) {
		const struct block *l = &altb.b[i - 1], *m = &altb.b[i],
		    *r = &altb.b[i + 1];
		double ron, roff, son, soff;

		if (m->phase != 1 || l->phase != 0 || r->phase != 0 ||
		    l->sub != m->sub || r->sub != m->sub ||
		    m->cpu_ns < ALT_BLOCK_MS * 500000ull ||
		    l->cpu_ns < ALT_BLOCK_MS * 500000ull ||
		    r->cpu_ns < ALT_BLOCK_MS * 500000ull)
			continue;
		if (m->wait_ns * 100 > m->cpu_ns || l->wait_ns * 100 > l->cpu_ns ||
		    r->wait_ns * 100 > r->cpu_ns) {
			a->dropped++;
			continue;
		}
		ron = (double)m->units / (double)m->cpu_ns;
		roff = ((double)l->units / (double)l->cpu_ns +
		    (double)r->units / (double)r->cpu_ns) / 2;
		son = (double)m->sig / ((double)m->cpu_ns / 1e9);
		soff = ((double)l->sig / ((double)l->cpu_ns / 1e9) +
		    (double)r->sig / ((double)r->cpu_ns / 1e9)) / 2;
		if (son - soff <= 0)
			continue;
		ovh[np] = 1 - ron / roff;
		cost[np] = ovh[np] / (son - soff) * 1e9;
		sps[np++] = son;
	}
	a->pairs = np;
	a->ovh_pct = 100 * median_big(ovh, np);
	a->cost_ns = median_big(cost, np);
	a->cost_iqr[0] = np ? cost[np / 4] : 0;
	a->cost_iqr[1] = np ? cost[(3 * np) / 4] : 0;
	a->sps_on = median_big(sps, np);
	free(ovh);
	free(cost);
	free(sps);
}

static void
part_alt(void)
{
	static const struct { const char *n; enum cfg_kind k; unsigned hz; }
	    proto[4] = {
		{ "floor_1k", K_FLOOR, 1000 },
		{ "rtprof_1k", K_RTPROF, 1000 },
		{ "floor_10k", K_FLOOR, 10000 },
		{ "rtprof_10k", K_RTPROF, 10000 },
	};

	for (unsigned di = 0; di < NDEPTH; di++)
		for (unsigned k = 0; k < 4; k++) {
			struct alt_cfg *a = &alts[di * 4 + k];

			*a = (struct alt_cfg){ .name = proto[k].n,
				.kind = proto[k].k, .hz = proto[k].hz, .di = di };
			alt_run(a);
			fprintf(stderr, "\ralternating: %u/%u", di * 4 + k + 1, NALT);
		}
	fprintf(stderr, "\n");
	done_alt = 1;
}

static const struct alt_cfg *
alt_get(unsigned di, const char *name)
{
	for (unsigned k = 0; k < 4; k++)
		if (strcmp(alts[di * 4 + k].name, name) == 0)
			return &alts[di * 4 + k];
	return NULL;
}

static void
part_steal(void)
{
	struct sigaction sa, old;
	pthread_t t;
	int rc;
	const size_t ncfg = sizeof(cfgs) / sizeof(cfgs[0]);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler_floor;
	sa.sa_flags = SA_SIGINFO | SA_RESTART; /* as rtprof's */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR2, &sa, &old) != 0)
		die("sigaction", errno);
	cfg_init();
	if ((rc = pthread_create(&t, NULL, target_main, NULL)) != 0)
		die("pthread_create", rc);
	/* One warm-up round, dropped; then N interleaved rounds. */
	for (size_t i = 0; i < ncfg; i++)
		steal_run(&cfgs[i], 0, 0);
	for (unsigned r = 0; r < s_runs; r++) {
		for (size_t i = 0; i < ncfg; i++)
			steal_run(&cfgs[i], r, 1);
		fprintf(stderr, "\rsteal: round %u/%u", r + 1, s_runs);
	}
	fprintf(stderr, "\n");
	if (alt_ms > 0)
		part_alt();
	pthread_mutex_lock(&tg.mu);
	tg.cmd = 2;
	pthread_cond_broadcast(&tg.cv);
	pthread_mutex_unlock(&tg.mu);
	pthread_join(t, NULL);
	sigaction(SIGUSR2, &old, NULL);
	steal_summarise();
}

/* ------------------------------------------------------------------ */
/* Part "sleepers"                                                      */

static unsigned sl_count = 100, sl_secs = 10;

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;       /* sleepers wait here */
	pthread_cond_t ready_cv; /* the driver waits here */
	unsigned ready;
	int release;
} slp = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
	  PTHREAD_COND_INITIALIZER, 0, 0 };

static void *
sleeper_main(void *arg)
{
	char name[32];

	snprintf(name, sizeof(name), "bench.sleeper.%u", (unsigned)(uintptr_t)arg);
	if (rtprof_thread_register(name, 0) != 0)
		return NULL;
	pthread_mutex_lock(&slp.mu);
	rtprof_thread_sleep();
	slp.ready++;
	pthread_cond_signal(&slp.ready_cv);
	while (!slp.release)
		pthread_cond_wait(&slp.cv, &slp.mu);
	pthread_mutex_unlock(&slp.mu);
	rtprof_thread_wake();
	return NULL;
}

static struct {
	_Atomic int stop, ready;
	pid_t tid;
	int pinned;
	uint64_t marks, drops;
	uint64_t sink;
} busy;

static void *
busy_main(void *arg)
{
	struct rtprof_thread_stats a, b;
	uint64_t x = 1, marks = 0;

	(void)arg;
	busy.tid = gettid_();
	busy.pinned = pin_tid(0, 0);
	if (rtprof_thread_register("bench.busy", 0) != 0)
		exit(1);
	atomic_store_explicit(&busy.ready, 1, memory_order_release);
	stats_now(&a);
	while (!atomic_load_explicit(&busy.stop, memory_order_relaxed)) {
		for (int k = 0; k < 64; k++)
			x = work_unit(x);
		rtprof_mark("bench.busy", RTPROF_CAT_COMPUTE);
		marks++;
	}
	stats_now(&b);
	busy.marks = marks;
	busy.drops = (b.dropped_full - a.dropped_full) +
	    (b.dropped_nested - a.dropped_nested);
	busy.sink = x;
	return NULL;
}

#define SL_MAX_SECS 120


/*
 * The OVERHEAD records in the memfd. The busy thread costs a tick a
 * signal, a wait and an unwind when it ran since its previous sample, a
 * SAME otherwise (when another process had its CPU): ticks are split by
 * whether the busy thread was signalled (a SAMPLE with native frames in
 * the tick), and the figures are medians over the signalled ticks, so a
 * change in the busy thread's luck does not pass for a change in the
 * sleepers' cost.
 */
struct sl_stats {
	unsigned secs;
	double sec_pre[SL_MAX_SECS];    /* median ns before the busy thread */
	double sec_med[SL_MAX_SECS];    /* signalled ticks: median threads_ns */
	double sec_all[SL_MAX_SECS];    /* all ticks */
	double sec_n[SL_MAX_SECS];      /* threads per tick */
	unsigned sec_sig[SL_MAX_SECS];  /* signalled ticks */
	unsigned sec_ticks[SL_MAX_SECS];
	double med_ns, med_other_ns, med_tick_ns, busy_pct, med_pre_ns;
	uint64_t ticks, sig_ticks, pre_ticks;
};

struct sl_result {
	struct sl_stats m, c;    /* main session, control session */
	double ratio, ratio_all, per_sleeper_ns, per_sleeper_diff_ns;
	unsigned secs, ctrl_ms;
	uint64_t asleep_same, all_same, all_samples;
	uint64_t marks, drops;
	int done;
};

static struct sl_result slr;

static void
sl_decode(int64_t busy_tid, struct sl_stats *o, struct decoded *out)
{
	struct decoded d;
	double *v, *va, *tk, *nn, *vo, *pre, *vp;
	unsigned char *sig;
	uint64_t first;
	double busy_t = 0;
	size_t nv = 0, nvo = 0;
	int rc;

	memset(o, 0, sizeof(*o));
	memset(&d, 0, sizeof(d));
	d.tid = busy_tid;
	if ((rc = decode_fd(dump_fd, &d)) != 0)
		die("decode dump", -rc);
	if (d.nticks == 0 || d.tps <= 0) {
		*out = d;
		return;
	}
	v = xcalloc(d.nticks, sizeof(*v));
	va = xcalloc(d.nticks, sizeof(*va));
	vo = xcalloc(d.nticks, sizeof(*vo));
	tk = xcalloc(d.nticks, sizeof(*tk));
	nn = xcalloc(d.nticks, sizeof(*nn));
	pre = xcalloc(d.nticks, sizeof(*pre));
	vp = xcalloc(d.nticks, sizeof(*vp));
	sig = xcalloc(d.nticks, 1);
	/*
	 * Both in time order: one merge. The sampler visits threads newest
	 * first, so the sleepers (registered after the busy thread) come
	 * before it: the busy thread's record time minus the tick's start,
	 * less the lock, is what the tick spent on the sleepers.
	 */
	for (size_t i = 0, k = 0; i < d.nticks; i++) {
		while (k < d.nrec && d.rec_t[k] < d.ticks[i].t0)
			k++;
		pre[i] = -1;
		if (k < d.nrec && d.rec_t[k] <= d.ticks[i].t1) {
			sig[i] = d.rec_sig[k];
			pre[i] = (double)(d.rec_t[k] - d.ticks[i].t0) * 1e9 / d.tps -
			    (double)d.ticks[i].lock_ns;
			if (pre[i] < 0)
				pre[i] = 0;
			vp[o->pre_ticks++] = pre[i];
		}
		o->sig_ticks += sig[i];
	}
	o->med_pre_ns = median_big(vp, o->pre_ticks);
	first = d.ticks[0].t0;
	for (size_t i = 0; i < d.nticks; i++) {
		tk[i] = (double)(d.ticks[i].lock_ns + d.ticks[i].threads_ns +
		    d.ticks[i].counters_ns);
		busy_t += (double)(d.ticks[i].t1 - d.ticks[i].t0);
		if (sig[i])
			v[nv++] = (double)d.ticks[i].threads_ns;
		else
			vo[nvo++] = (double)d.ticks[i].threads_ns;
	}
	o->ticks = d.nticks;
	o->busy_pct = 100.0 * busy_t /
	    (double)(d.ticks[d.nticks - 1].t1 - first);
	o->med_ns = median_big(v, nv);
	o->med_other_ns = median_big(vo, nvo);
	o->med_tick_ns = median_big(tk, d.nticks);
	for (size_t i = 0, j; i < d.nticks; i = j) {
		unsigned s = (unsigned)((double)(d.ticks[i].t0 - first) / d.tps);
		size_t k = 0, ka = 0, kp = 0;

		for (j = i; j < d.nticks && (unsigned)((double)(d.ticks[j].t0 -
		    first) / d.tps) == s; j++) {
			if (sig[j])
				v[k++] = (double)d.ticks[j].threads_ns;
			if (pre[j] >= 0)
				vp[kp++] = pre[j];
			nn[ka] = (double)d.ticks[j].n;
			va[ka++] = (double)d.ticks[j].threads_ns;
		}
		if (s >= SL_MAX_SECS)
			break;
		o->sec_med[s] = median_big(v, k);
		o->sec_pre[s] = median_big(vp, kp);
		o->sec_all[s] = median_big(va, ka);
		o->sec_n[s] = median_big(nn, ka);
		o->sec_sig[s] = (unsigned)k;
		o->sec_ticks[s] = (unsigned)ka;
		o->secs = s + 1;
	}
	free(v);
	free(va);
	free(vo);
	free(tk);
	free(nn);
	free(pre);
	free(vp);
	free(sig);
	*out = d;
}

static void
part_sleepers(void)
{
	pthread_t bt, *st = xcalloc(sl_count, sizeof(*st));
	struct decoded d;
	unsigned created = 0;
	unsigned ctrl_ms = sl_secs * 1000 / 5 < 1000 ? 1000 : sl_secs * 1000 / 5;
	uint64_t mem = (uint64_t)(sl_count + 8) * 4 * (64 << 10) + (64u << 20);
	int rc;

	if ((rc = pthread_create(&bt, NULL, busy_main, NULL)) != 0)
		die("pthread_create", rc);
	while (atomic_load_explicit(&busy.ready, memory_order_acquire) == 0)
		sleep_ms(1);
	/* Control: the busy thread alone (no sleepers yet). */
	session_start(1000, mem, 4);
	sleep_ms(ctrl_ms);
	session_stop();
	sl_decode(busy.tid, &slr.c, &d);
	decoded_free(&d);
	slr.ctrl_ms = ctrl_ms;

	/* The sleepers register and declare themselves asleep before the
	 * session starts; the session's first tick sees them asleep. */
	for (unsigned i = 0; i < sl_count; i++) {
		if (pthread_create(&st[i], NULL, sleeper_main,
		    (void *)(uintptr_t)i) != 0)
			break;
		created++;
	}
	pthread_mutex_lock(&slp.mu);
	while (slp.ready < created)
		pthread_cond_wait(&slp.ready_cv, &slp.mu);
	pthread_mutex_unlock(&slp.mu);
	session_start(1000, mem, 4);
	sleep_ms(sl_secs * 1000);
	session_stop();

	pthread_mutex_lock(&slp.mu);
	slp.release = 1;
	pthread_cond_broadcast(&slp.cv);
	pthread_mutex_unlock(&slp.mu);
	for (unsigned i = 0; i < created; i++)
		pthread_join(st[i], NULL);
	atomic_store_explicit(&busy.stop, 1, memory_order_relaxed);
	pthread_join(bt, NULL);

	sl_decode(busy.tid, &slr.m, &d);
	slr.asleep_same = d.asleep_same;
	slr.all_same = d.all_same;
	slr.all_samples = d.all_samples;
	decoded_free(&d);
	/* A partial last second has fewer ticks: compare whole seconds. */
	slr.secs = slr.m.secs;
	if (slr.secs >= 2 && slr.m.sec_ticks[slr.secs - 1] <
	    slr.m.sec_ticks[slr.secs - 2] / 2)
		slr.secs--;
	slr.ratio = slr.secs > 0 && slr.m.sec_pre[0] > 0 ?
	    slr.m.sec_pre[slr.secs - 1] / slr.m.sec_pre[0] : 0;
	slr.ratio_all = slr.secs > 0 && slr.m.sec_med[0] > 0 ?
	    slr.m.sec_med[slr.secs - 1] / slr.m.sec_med[0] : 0;
	slr.per_sleeper_ns = created ?
	    (slr.m.med_pre_ns - slr.c.med_pre_ns) / created : 0;
	slr.per_sleeper_diff_ns = created ?
	    (slr.m.med_ns - slr.c.med_ns) / created : 0;
	slr.marks = busy.marks;
	slr.drops = busy.drops;
	slr.done = 1;
	sl_count = created;
	free(st);
}

/* ------------------------------------------------------------------ */
/* Report                                                               */

static int done_handler, done_steal;

static const char *
pf(int ok)
{
	return ok ? "pass" : "fail";
}

static const struct steal_cfg *
cfg_get(unsigned di, const char *name)
{
	for (unsigned k = 0; k < NCFG_PER_DEPTH; k++)
		if (strcmp(cfgs[di * NCFG_PER_DEPTH + k].name, name) == 0)
			return &cfgs[di * NCFG_PER_DEPTH + k];
	return NULL;
}

/*
 * The targets use the alternating blocks when they ran (drift cancels;
 * at 1 kHz the interleaved runs' medians move by +-0.5% of the rate from
 * one invocation to the next, as much as the effect), else the runs.
 */
static unsigned
compute_targets(struct bench_target *t)
{
	unsigned n = 0;

	if (done_alt) {
		const struct alt_cfg *f10 = alt_get(0, "floor_10k");
		const struct alt_cfg *r10 = alt_get(0, "rtprof_10k");
		const struct alt_cfg *f1 = alt_get(0, "floor_1k");
		const struct alt_cfg *r1 = alt_get(0, "rtprof_1k");
		const struct alt_cfg *r1d = alt_get(1, "rtprof_1k");

		t[n++] = (struct bench_target){ "cost_d10_10k_le_1.2x_floor",
			"ns stolen per sample, depth 10, 10 kHz, alternating "
			"blocks: rtprof / empty-handler floor <= 1.2",
			r10->cost_ns / f10->cost_ns, 1.2, f10->cost_ns > 0, 0 };
		t[n++] = (struct bench_target){ "cost_d10_1k_le_1.2x_floor",
			"the same at 1 kHz (10x fewer samples: noisier)",
			r1->cost_ns / f1->cost_ns, 1.2, f1->cost_ns > 0, 0 };
		t[n++] = (struct bench_target){ "overhead_d10_1k_le_1pct",
			"target work rate lost at 1 kHz, depth 10, alternating "
			"blocks, %", r1->ovh_pct, 1, r1->pairs > 0, 0 };
		t[n++] = (struct bench_target){ "overhead_d50_1k_le_1pct",
			"the same at depth 50, %", r1d->ovh_pct, 1, r1d->pairs > 0, 0 };
	} else if (done_steal) {
		const struct steal_cfg *f10 = cfg_get(0, "floor_10k");
		const struct steal_cfg *r10 = cfg_get(0, "rtprof_10k");
		const struct steal_cfg *f1 = cfg_get(0, "floor_1k");
		const struct steal_cfg *r1 = cfg_get(0, "rtprof_1k");
		const struct steal_cfg *r1d = cfg_get(1, "rtprof_1k");

		t[n++] = (struct bench_target){ "cost_d10_10k_le_1.2x_floor",
			"ns stolen per sample (CPU clock), depth 10, 10 kHz: "
			"rtprof / empty-handler floor <= 1.2",
			r10->cost_cpu_ns / f10->cost_cpu_ns, 1.2,
			f10->cost_cpu_ns > 0, 0 };
		t[n++] = (struct bench_target){ "cost_d10_1k_le_1.2x_floor",
			"the same at 1 kHz (10x fewer samples: noisier)",
			r1->cost_cpu_ns / f1->cost_cpu_ns, 1.2,
			f1->cost_cpu_ns > 0, 0 };
		t[n++] = (struct bench_target){ "overhead_d10_1k_le_1pct",
			"target work rate (CPU clock) lost at 1 kHz, depth 10, %",
			100 * r1->ovh_cpu, 1, 1, 0 };
		t[n++] = (struct bench_target){ "overhead_d50_1k_le_1pct",
			"the same at depth 50, %", 100 * r1d->ovh_cpu, 1, 1, 0 };
	}
	if (slr.done)
		t[n++] = (struct bench_target){ "sleepers_flat",
			"median ns per tick spent on the sleepers, last second / "
			"first second <= 1.25 (this benchmark's rule for flat)",
			slr.ratio, 1.25, slr.secs >= 2, 0 };
	return n;
}

static void
report_text(FILE *out)
{
	struct bench_target t[8];
	unsigned nt;

	fprintf(out, "\nbench_sampler: TSC %.3f GHz, %d CPUs; %s\n", tsc_per_ns,
	    ncpus, !use_fifo ? "SCHED_OTHER" : fifo_target != 0 &&
	    fifo_helpers != 0 ? "SCHED_FIFO (target, signaller, sampler, "
	    "handler part)" : "--fifo FAILED (SCHED_OTHER)");
	if (done_handler) {
		fprintf(out, "\nin-handler cost, thread signalling itself "
		    "(SIGUSR2), %u iterations, median ns (p90); pinned cpu0: %s\n",
		    h_iters, h_pinned ? "yes" : "no");
		fprintf(out, "%-15s %10s %9s %6s %9s   %10s %9s %6s %9s\n",
		    "method", "d10 in", "p90", "frames", "roundtrip",
		    "d50 in", "p90", "frames", "roundtrip");
		for (int m = 0; m < H_NMODES; m++) {
			const struct hres *h = &hres[m];

			fprintf(out, "%-15s %10.1f %9.1f %6u %9.1f   %10.1f %9.1f %6u %9.1f\n",
			    hmode_names[m], h->in_ns[0], h->in_p90[0], h->frames[0],
			    h->rt_ns[0], h->in_ns[1], h->in_p90[1], h->frames[1],
			    h->rt_ns[1]);
		}
		fprintf(out, "stack_copy bytes: d10 %zu, d50 %zu\n",
		    hres[H_COPY].bytes[0], hres[H_COPY].bytes[1]);
		if (uw.ok)
			fprintf(out, "rtprof remote unwind of that copy (core/unwind.c) "
			    "on CPU 1%s: d10 %.0f ns (p90 %.0f, %u frames), d50 %.0f ns "
			    "(p90 %.0f, %u frames)\n", uw.pinned ? "" : " (NOT pinned)",
			    uw.med_ns[0], uw.p90_ns[0], uw.nframes[0], uw.med_ns[1],
			    uw.p90_ns[1], uw.nframes[1]);
	}
	if (done_steal) {
		fprintf(out, "\nstolen from a busy target: %u runs x %u ms "
		    "(+1 warm-up round), medians; pinned: target %s, sampler %s, "
		    "writer %s, signaller cpu1\n", s_runs, s_run_ms,
		    tg.pinned ? "cpu0" : "no", pinned_sampler > 0 ? "cpu1" : "no",
		    pinned_writer > 0 ? "cpu1" : "no");
		fprintf(out, "%-3s %-11s %10s %7s %9s %8s %8s %8s %8s %9s %8s %8s %9s %7s %6s %5s\n",
		    "D", "config", "units/cpus", "spread", "samples/s", "ovh cpu%",
		    "ovh wall", "ovh pair", "ns/smp", "ns/smp wl", "ns/smp pr", "x floor",
		    "side ns", "tick ns", "frames", "dist");
		for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
			const struct steal_cfg *c = &cfgs[i];
			const struct steal_cfg *f = NULL;
			char ratio[16] = "", side[16] = "", tick[16] = "", fr[16] = "";

			if (c->kind == K_RTPROF)
				f = cfg_get(c->di, c->hz == 1000 ? "floor_1k" : "floor_10k");
			if (f != NULL && f->cost_cpu_ns > 0)
				snprintf(ratio, sizeof(ratio), "%.2f",
				    c->cost_cpu_ns / f->cost_cpu_ns);
			if (c->kind != K_BASE)
				snprintf(side, sizeof(side), "%.0f", c->m_side_ns);
			if (c->kind == K_RTPROF) {
				snprintf(tick, sizeof(tick), "%.0f", c->m_tick_ns);
				snprintf(fr, sizeof(fr), "%.0f", c->m_frames);
			}
			if (c->kind == K_BASE)
				fprintf(out, "%-3u %-11s %10.4g %6.2f%% %9s %8s %8s %8s %8s %9s %8s %8s %9s %7s %6s %2u/%-2u\n",
				    depths[c->di], c->name, c->m_rate_cpu,
				    100 * c->spread, "-", "-", "-", "-", "-", "-",
				    "-", "", "", "", "", c->disturbed, c->nrun);
			else
				fprintf(out, "%-3u %-11s %10.4g %6.2f%% %9.0f %8.2f %8.2f %8.2f %8.0f %9.0f %8.0f %8s %9s %7s %6s %2u/%-2u\n",
				    depths[c->di], c->name, c->m_rate_cpu,
				    100 * c->spread, c->m_sps_wall, 100 * c->ovh_cpu,
				    100 * c->ovh_wall, 100 * c->ovh_pair,
				    c->cost_cpu_ns, c->cost_wall_ns,
				    c->cost_pair_ns, ratio, side, tick, fr,
				    c->disturbed, c->nrun);
		}
		fprintf(out, "(units/cpus: work units per CPU-second of the target; "
		    "spread: (max-min)/median over the runs used; ns/smp: ns stolen "
		    "per sample, CPU clock; wl: wall clock; pair/pr: median over the "
		    "rounds of the loss against the same round's base; side ns: "
		    "sampler side per sample, wall time (floor: tgkill -> handler "
		    "seen; rtprof: threads_ns of OVERHEAD); tick ns: whole tick)\n");
		for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
			const struct steal_cfg *c = &cfgs[i];

			if (c->kind == K_RTPROF && (c->no_native || c->samples_dec == 0))
				fprintf(out, "note: D %u %s: %" PRIu64 " of %" PRIu64
				    " SAMPLEs without native frames\n", depths[c->di],
				    c->name, c->no_native, c->samples_dec);
			if (c->kind == K_FLOOR && c->missed)
				fprintf(out, "note: D %u %s: %" PRIu64 " signals not "
				    "answered within 2 ms\n", depths[c->di], c->name,
				    c->missed);
		}
		for (unsigned di = 0; di < NDEPTH; di++) {
			const struct steal_cfg *r1 = cfg_get(di, "rtprof_1k");
			const struct steal_cfg *r10 = cfg_get(di, "rtprof_10k");

			fprintf(out, "sampler ticks' wall time / window: D %u: "
			    "1 kHz %.2f%%, 10 kHz %.2f%%\n", depths[di],
			    r1->m_busy_pct, r10->m_busy_pct);
		}
	}
	if (done_alt) {
		fprintf(out, "\nalternating %u ms blocks (sampling off/on) in runs of "
		    "%u ms, %u ms per configuration; medians over the on-blocks, "
		    "each against its two off neighbours (CPU clock):\n",
		    ALT_BLOCK_MS, ALT_SUB_MS, alt_ms);
		fprintf(out, "%-3s %-11s %6s %6s %9s %8s %8s %17s %8s\n", "D",
		    "config", "blocks", "pairs", "samples/s", "ovh cpu%", "ns/smp",
		    "ns/smp IQR", "x floor");
		for (unsigned i = 0; i < NALT; i++) {
			const struct alt_cfg *a = &alts[i];
			const struct alt_cfg *f = a->kind == K_RTPROF ? alt_get(a->di,
			    a->hz == 1000 ? "floor_1k" : "floor_10k") : NULL;
			char ratio[16] = "";

			if (f != NULL && f->cost_ns > 0)
				snprintf(ratio, sizeof(ratio), "%.2f", a->cost_ns / f->cost_ns);
			fprintf(out, "%-3u %-11s %6u %6u %9.0f %8.2f %8.0f %8.0f..%-7.0f %8s%s\n",
			    depths[a->di], a->name, a->blocks, a->pairs, a->sps_on,
			    a->ovh_pct, a->cost_ns, a->cost_iqr[0], a->cost_iqr[1],
			    ratio, a->dropped ? " (blocks disturbed)" : "");
		}
	}
	if (slr.done) {
		fprintf(out, "\nsleepers: %u threads asleep for %u s at 1 kHz, one busy "
		    "thread (%" PRIu64 " marks, %" PRIu64 " dropped); %" PRIu64
		    " ticks, %" PRIu64 " SAME records (%" PRIu64 " asleep), %"
		    PRIu64 " SAMPLEs\n", sl_count, sl_secs, slr.marks, slr.drops,
		    slr.m.ticks, slr.all_same, slr.asleep_same, slr.all_samples);
		fprintf(out, "per second of the session, median ns a tick spent on "
		    "the sleepers (before the busy thread's record, lock "
		    "excluded):\n ");
		for (unsigned s = 0; s < slr.secs; s++)
			fprintf(out, " %.0f", slr.m.sec_pre[s]);
		fprintf(out, "\n  threads_ns, ticks in which the busy thread was "
		    "signalled (count):\n ");
		for (unsigned s = 0; s < slr.secs; s++)
			fprintf(out, " %.0f (%u)", slr.m.sec_med[s], slr.m.sec_sig[s]);
		fprintf(out, "\n  threads_ns, all ticks:");
		for (unsigned s = 0; s < slr.secs; s++)
			fprintf(out, " %.0f", slr.m.sec_all[s]);
		fprintf(out, "\n  (threads per tick: %.0f; ticks in the first / last "
		    "second: %u / %u)\n", slr.m.sec_n[0], slr.m.sec_ticks[0],
		    slr.secs ? slr.m.sec_ticks[slr.secs - 1] : 0);
		fprintf(out, "last / first second: %.3f on the sleepers' part, %.3f "
		    "on threads_ns of signalled ticks\n", slr.ratio, slr.ratio_all);
		fprintf(out, "whole run: sleepers' part %.0f ns per tick; %.0f ns per "
		    "signalled tick (%" PRIu64 " of %" PRIu64 "), %.0f ns per other "
		    "tick; whole tick %.0f ns; ticks' wall time %.2f%%\n",
		    slr.m.med_pre_ns, slr.m.med_ns, slr.m.sig_ticks, slr.m.ticks,
		    slr.m.med_other_ns, slr.m.med_tick_ns, slr.m.busy_pct);
		fprintf(out, "control (busy thread alone, %u ms): %.0f ns before "
		    "the busy thread, %.0f ns per signalled tick (%" PRIu64 " of %"
		    PRIu64 "), %.0f ns per other tick\n", slr.ctrl_ms,
		    slr.c.med_pre_ns, slr.c.med_ns, slr.c.sig_ticks, slr.c.ticks,
		    slr.c.med_other_ns);
		fprintf(out, "per sleeper and tick: %.0f ns (sleepers' part); %.0f ns "
		    "(difference of signalled ticks' threads_ns)\n",
		    slr.per_sleeper_ns, slr.per_sleeper_diff_ns);
	}
	nt = compute_targets(t);
	if (nt) {
		fprintf(out, "\ntargets:\n");
		for (unsigned i = 0; i < nt; i++)
			fprintf(out, "  %-28s %-7s %8.3f vs limit %6.2f  (%s)\n",
			    t[i].name, t[i].known ? pf(t[i].value <= t[i].limit) :
			    "unknown", t[i].value, t[i].limit, t[i].rule);
	}
}

static void
json_num(const char *key, double v, const char *sep)
{
	printf("\"%s\": %.4g%s", key, v, sep);
}

static void
report_json(void)
{
	struct bench_target t[8];
	unsigned nt = compute_targets(t);

	printf("{\n\"machine\": {\"cpus\": %d, \"tsc_ghz\": %.4f, \"sched\": \"%s\"},\n",
	    ncpus, tsc_per_ns, use_fifo && fifo_target != 0 && fifo_helpers != 0 ?
	    "SCHED_FIFO" : "SCHED_OTHER");
	if (done_handler) {
		printf("\"handler\": {\"iterations\": %u, \"pinned\": %s, "
		    "\"stat\": \"median ns\", \"methods\": {", h_iters,
		    h_pinned ? "true" : "false");
		for (int m = 0; m < H_NMODES; m++) {
			printf("%s\n  \"%s\": {\"desc\": \"%s\"", m ? "," : "",
			    hmode_names[m], hmode_desc[m]);
			for (unsigned di = 0; di < NDEPTH; di++)
				printf(", \"d%u\": {\"in_handler_ns\": %.1f, "
				    "\"in_handler_p90_ns\": %.1f, \"roundtrip_ns\": %.1f, "
				    "\"frames\": %u, \"bytes\": %zu}", depths[di],
				    hres[m].in_ns[di], hres[m].in_p90[di],
				    hres[m].rt_ns[di], hres[m].frames[di],
				    hres[m].bytes[di]);
			printf("}");
		}
		printf("\n}, \"rtprof_remote_unwind\": {\"ok\": %s, \"pinned_cpu1\": %s",
		    uw.ok ? "true" : "false", uw.pinned ? "true" : "false");
		for (unsigned di = 0; di < NDEPTH; di++)
			printf(", \"d%u\": {\"median_ns\": %.1f, \"p90_ns\": %.1f, "
			    "\"frames\": %u}", depths[di], uw.med_ns[di], uw.p90_ns[di],
			    uw.nframes[di]);
		printf("}},\n");
	}
	if (done_steal) {
		printf("\"steal\": {\"runs\": %u, \"run_ms\": %u, \"pinned_target\": %s, "
		    "\"pinned_sampler\": %s, \"pinned_writer\": %s, \"configs\": [",
		    s_runs, s_run_ms, tg.pinned ? "true" : "false",
		    pinned_sampler > 0 ? "true" : "false",
		    pinned_writer > 0 ? "true" : "false");
		for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
			const struct steal_cfg *c = &cfgs[i];
			const struct steal_cfg *f = c->kind == K_RTPROF ?
			    cfg_get(c->di, c->hz == 1000 ? "floor_1k" : "floor_10k") : NULL;

			printf("%s\n  {\"depth\": %u, \"config\": \"%s\", \"hz\": %u, ",
			    i ? "," : "", depths[c->di], c->name, c->hz);
			json_num("units_per_cpu_s", c->m_rate_cpu, ", ");
			json_num("units_per_wall_s", c->m_rate_wall, ", ");
			json_num("rate_spread", c->spread, ", ");
			json_num("samples_per_wall_s", c->m_sps_wall, ", ");
			json_num("samples_per_cpu_s", c->m_sps_cpu, ", ");
			json_num("overhead_cpu_pct", 100 * c->ovh_cpu, ", ");
			json_num("overhead_wall_pct", 100 * c->ovh_wall, ", ");
			json_num("ns_per_sample_cpu", c->cost_cpu_ns, ", ");
			json_num("ns_per_sample_wall", c->cost_wall_ns, ", ");
			if (f != NULL && f->cost_cpu_ns > 0)
				json_num("ratio_floor_cpu", c->cost_cpu_ns / f->cost_cpu_ns, ", ");
			if (f != NULL && f->cost_wall_ns > 0)
				json_num("ratio_floor_wall", c->cost_wall_ns / f->cost_wall_ns, ", ");
			json_num("overhead_paired_cpu_pct", 100 * c->ovh_pair, ", ");
			json_num("ns_per_sample_paired_cpu", c->cost_pair_ns, ", ");
			json_num("sampler_side_ns_per_sample", c->m_side_ns, ", ");
			json_num("sampler_side_p90_ns", c->m_side_p90, ", ");
			json_num("tick_ns", c->m_tick_ns, ", ");
			json_num("sampler_busy_pct", c->m_busy_pct, ", ");
			json_num("frames_per_sample", c->m_frames, ", ");
			printf("\"runs_units_per_cpu_s\": [");
			for (unsigned r = 0; r < c->nrun; r++)
				printf("%s%.6g", r ? ", " : "", c->rate_cpu[r]);
			printf("], \"runs_disturbed_mask\": [");
			for (unsigned r = 0; r < c->nrun; r++)
				printf("%s%d", r ? ", " : "", c->dist[r]);
			printf("], \"runs_samples_per_wall_s\": [");
			for (unsigned r = 0; r < c->nrun; r++)
				printf("%s%.1f", r ? ", " : "", c->sps_wall[r]);
			printf("], ");
			printf("\"no_native\": %" PRIu64 ", \"missed\": %" PRIu64
			    ", \"runs_used\": %u, \"runs_disturbed\": %u}",
			    c->no_native, c->missed, c->used, c->disturbed);
		}
		printf("\n]},\n");
	}
	if (done_alt) {
		printf("\"alternating\": {\"block_ms\": %u, \"run_ms\": %u, "
		    "\"ms_per_config\": %u, \"configs\": [", ALT_BLOCK_MS,
		    ALT_SUB_MS, alt_ms);
		for (unsigned i = 0; i < NALT; i++) {
			const struct alt_cfg *a = &alts[i];
			const struct alt_cfg *f = a->kind == K_RTPROF ? alt_get(a->di,
			    a->hz == 1000 ? "floor_1k" : "floor_10k") : NULL;

			printf("%s\n  {\"depth\": %u, \"config\": \"%s\", \"hz\": %u, "
			    "\"blocks\": %u, \"pairs\": %u, \"pairs_disturbed\": %u, ",
			    i ? "," : "", depths[a->di], a->name, a->hz, a->blocks,
			    a->pairs, a->dropped);
			json_num("samples_per_cpu_s_on", a->sps_on, ", ");
			json_num("overhead_cpu_pct", a->ovh_pct, ", ");
			json_num("ns_per_sample_cpu", a->cost_ns, ", ");
			json_num("ns_per_sample_q1", a->cost_iqr[0], ", ");
			if (f != NULL && f->cost_ns > 0)
				json_num("ratio_floor", a->cost_ns / f->cost_ns, ", ");
			json_num("ns_per_sample_q3", a->cost_iqr[1], "}");
		}
		printf("\n]},\n");
	}
	if (slr.done) {
		printf("\"sleepers\": {\"threads\": %u, \"seconds\": %u, "
		    "\"per_second_sleepers_ns\": [", sl_count, sl_secs);
		for (unsigned s = 0; s < slr.secs; s++)
			printf("%s%.0f", s ? ", " : "", slr.m.sec_pre[s]);
		printf("], \"per_second_threads_ns\": [");
		for (unsigned s = 0; s < slr.secs; s++)
			printf("%s%.0f", s ? ", " : "", slr.m.sec_med[s]);
		printf("], \"per_second_signalled_ticks\": [");
		for (unsigned s = 0; s < slr.secs; s++)
			printf("%s%u", s ? ", " : "", slr.m.sec_sig[s]);
		printf("], \"per_second_threads_ns_all_ticks\": [");
		for (unsigned s = 0; s < slr.secs; s++)
			printf("%s%.0f", s ? ", " : "", slr.m.sec_all[s]);
		printf("], ");
		json_num("last_first_ratio", slr.ratio, ", ");
		json_num("last_first_ratio_threads_ns", slr.ratio_all, ", ");
		json_num("median_sleepers_ns", slr.m.med_pre_ns, ", ");
		json_num("control_before_busy_ns", slr.c.med_pre_ns, ", ");
		json_num("per_sleeper_diff_ns", slr.per_sleeper_diff_ns, ", ");
		json_num("median_threads_ns", slr.m.med_ns, ", ");
		json_num("median_threads_ns_other_ticks", slr.m.med_other_ns, ", ");
		json_num("median_tick_ns", slr.m.med_tick_ns, ", ");
		json_num("ticks_wall_pct", slr.m.busy_pct, ", ");
		json_num("control_threads_ns", slr.c.med_ns, ", ");
		json_num("control_threads_ns_other_ticks", slr.c.med_other_ns, ", ");
		json_num("per_sleeper_ns", slr.per_sleeper_ns, ", ");
		printf("\"ticks\": %" PRIu64 ", \"signalled_ticks\": %" PRIu64
		    ", \"same\": %" PRIu64 ", \"same_asleep\": %" PRIu64
		    ", \"samples\": %" PRIu64 ", \"marks\": %" PRIu64
		    ", \"drops\": %" PRIu64 "},\n", slr.m.ticks, slr.m.sig_ticks,
		    slr.all_same, slr.asleep_same, slr.all_samples, slr.marks,
		    slr.drops);
	}
	printf("\"targets\": {");
	for (unsigned i = 0; i < nt; i++) {
		printf("%s\n  \"%s\": {\"result\": \"%s\", \"rule\": \"%s\", ",
		    i ? "," : "", t[i].name, t[i].known ?
		    pf(t[i].value <= t[i].limit) : "unknown", t[i].rule);
		json_num("value", t[i].value, ", ");
		json_num("limit", t[i].limit, "}");
	}
	printf("\n}\n}\n");
}

/* ------------------------------------------------------------------ */

static void
usage(void)
{
	fprintf(stderr,
	    "usage: bench_sampler [--json] [--quick] [--runs N] [--run-ms MS]\n"
	    "                     [--handler-iters I] [--sleep-s S] [--sleepers K]\n"
	    "                     [--alt-ms A]\n"
	    "                     [--only handler,steal,sleepers] [--fifo]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	const char *only = NULL;
	int json = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--json") == 0)
			json = 1;
		else if (strcmp(a, "--quick") == 0) {
			s_runs = 3;
			s_run_ms = 250;
			h_iters = 2000;
			sl_secs = 3;
			alt_ms = 1600;
		} else if (i + 1 < argc && strcmp(a, "--runs") == 0)
			s_runs = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (i + 1 < argc && strcmp(a, "--run-ms") == 0)
			s_run_ms = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (i + 1 < argc && strcmp(a, "--handler-iters") == 0)
			h_iters = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (i + 1 < argc && strcmp(a, "--sleep-s") == 0)
			sl_secs = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (i + 1 < argc && strcmp(a, "--sleepers") == 0)
			sl_count = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (i + 1 < argc && strcmp(a, "--only") == 0)
			only = argv[++i];
		else if (i + 1 < argc && strcmp(a, "--alt-ms") == 0)
			alt_ms = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (strcmp(a, "--fifo") == 0)
			use_fifo = 1;
		else
			usage();
	}
	if (s_runs == 0 || s_runs > MAX_RUNS || s_run_ms < 10 || h_iters < 10 ||
	    sl_secs < 2 || sl_secs > SL_MAX_SECS - 1)
		usage();

	ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	dump_fd = memfd_create("bench_sampler.dump", MFD_CLOEXEC);
	if (dump_fd < 0)
		die("memfd_create", errno);
	/* The driver stays off the target's CPU; the library's threads are
	 * pinned explicitly (session_start). */
	(void)pin_tid(0, 1);
	tsc_per_ns = bench_tsc_per_ns(200);

	if (bench_selected(only, "handler")) {
		fprintf(stderr, "handler: in-handler cost of the unwind methods\n");
		part_handler();
		done_handler = 1;
	}
	if (bench_selected(only, "steal")) {
		fprintf(stderr, "steal: %u configurations x (%u + 1) runs x %u ms\n",
		    NDEPTH * NCFG_PER_DEPTH, s_runs, s_run_ms);
		part_steal();
		done_steal = 1;
	}
	if (bench_selected(only, "sleepers")) {
		fprintf(stderr, "sleepers: %u threads, %u s\n", sl_count, sl_secs);
		part_sleepers();
	}
	report_text(json ? stderr : stdout);
	if (json)
		report_json();
	close(dump_fd);
	return 0;
}
