/*
 * test_rtsafe.c - the recording calls are RT-safe: no syscall, no allocation.
 *
 * A child process (this executable re-executed with --child) runs a session
 * with a tiny chunk pool and two threads that, once set up, forbid
 * themselves every syscall but exit(2) with a per-thread seccomp filter
 * (SECCOMP_RET_TRAP: a forbidden syscall raises SIGSYS, whose handler
 * reports the syscall number and a backtrace) and count every allocation
 * they make (malloc interposition, or the sanitizer allocator hooks when
 * the test is built with ASan/TSan):
 *
 *  - "rt", registered: records thousands of events of every kind (marks,
 *    begin/end, intervals, typed markers with every field kind including
 *    truncated strings, counters, sleep/wake, zones with every argument,
 *    text markers, flow and frame marks, audio callbacks: within
 *    budget, and over it, so with overrun markers and the overrun
 *    counter), pushes labels past
 *    RTPROF_MAX_LABELS, reads rtprof_now and its own statistics, runs out of
 *    chunks (dropped_full > 0, seen from inside the filter), keeps recording
 *    while the writer refills it, then leaves with a raw exit(2);
 *  - "unregistered": makes every recording call without being registered;
 *    each must return at once, record nothing and make no syscall.
 *
 * The child's main thread (no filter) then stops the session. The parent
 * checks the child's exit, zero allocations, and decodes the dump: every
 * record the rt thread made is there, kind by kind (attempted - dropped,
 * counted call by call inside the filter), drops agree with the DATA
 * headers and the trailer, contents are right, the unregistered thread is
 * absent.
 *
 * The child runs twice: with the default clock (TSC on x86) and with
 * RTPROF_CLOCK=monotonic (the vDSO fallback of rtprof_now; there
 * rtprof_now() on an unregistered thread must read the session clock too).
 * Results go from child to parent through a shared mapping (memfd): the
 * filtered threads cannot write(2).
 *
 * A third part (no seccomp: returning from a signal handler is a syscall)
 * checks re-entrancy: a signal handler that records on the thread it
 * interrupts gets a record or a counted nested drop, whatever instruction
 * it interrupts; the dump's accounting stays exact.
 *
 * Usage: test_rtsafe [seccomp] [monotonic] [reentrancy]   (default: all)
 * RTPROF_TEST_INJECT=syscall|alloc makes the rt thread break the rules once
 * under its filter, to show that the test notices (it must then fail).
 */
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "check.h"
#include "dumpmodel.h"
#include "rtprof.h"

/* ------------------------------------------------------------------ */
/* Sanitizer detection: their allocators cannot be interposed, but they  */
/* call hooks on every allocation, on the allocating thread.            */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define USE_SAN_HOOKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||     \
    __has_feature(memory_sanitizer)
#define USE_SAN_HOOKS 1
#endif
#endif
#ifdef USE_SAN_HOOKS
#include <sanitizer/allocator_interface.h>
#endif
/* TSan's runtime makes syscalls for the threads it watches (it defers and
 * wraps signal handlers, flushes its traces): no seccomp filter under it. */
#if defined(__SANITIZE_THREAD__)
#define NO_SECCOMP "ThreadSanitizer"
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NO_SECCOMP "ThreadSanitizer"
#endif
#endif
#ifdef NO_SECCOMP
/* The rules of tests/tsan.supp, built in so that the test also runs clean
 * under TSan outside ctest (ctest gives every test of the TSan build that
 * file through TSAN_OPTIONS; TSan applies both). Reasons: RELIABILITY.md. */
const char *__tsan_default_suppressions(void);
const char *
__tsan_default_suppressions(void)
{
	return "race:ck_ring_*\nrace:_ck_ring_*\nrace:ck_sequence_*\n"
	    "race:ck_pr_md_load_uint\nrace:ck_pr_md_store_uint\n";
}
#endif

#if defined(__x86_64__)
#define AUDIT_ARCH_SELF AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_SELF AUDIT_ARCH_AARCH64
#elif defined(__i386__)
#define AUDIT_ARCH_SELF AUDIT_ARCH_I386
#elif defined(__arm__) && !defined(__ARMEB__)
#define AUDIT_ARCH_SELF AUDIT_ARCH_ARM
#endif

#define NKINDS 19 /* record kinds 1..18 (9..12 are the sampler's) */
#define WHO_RT 1
#define WHO_UNREG 2

#define BURST_ROUNDS 2000
#define UNREG_ROUNDS 5000
#define LONG_LEN 300

/* Everything the child reports; lives in a MAP_SHARED memfd. */
struct shm {
	/* Progress, set by the child's threads. */
	_Atomic int rt_phase;        /* 1: burst done; 2: done */
	_Atomic int stop_recording;  /* set by the child's main thread */
	_Atomic int unreg_done;

	/* A trapped syscall (SIGSYS handler). */
	_Atomic int trapped;
	_Atomic int trap_bt_done;
	int trap_nr;
	int trap_who;
	void *trap_addr;
	void *trap_bt[64];
	int trap_nbt;

	/* Allocations made by an armed thread. */
	_Atomic uint64_t allocs;
	_Atomic uint64_t frees;
	_Atomic int alloc_who;
	size_t alloc_size;
	void *alloc_caller;
	int san_hooks;               /* counted with sanitizer hooks */

	/* Setup results. */
	int rt_register_rc;
	int rt_seccomp_rc;
	int unreg_seccomp_rc;
	int rt_tid, unreg_tid;
	uint16_t type_all_id, type_big_id, counter_id;
	/* The audio callback API (rtprof_audio_begin/end) on the rt thread:
	 * its records are several per call, so they are counted together. */
	uint16_t audio_type_id, audio_ctr_id[3];
	uint64_t audio_attempted, audio_recorded;
	/* A second site whose every callback overruns (a 1 us budget): the
	 * overrun path under the filter. Its callbacks' records are counted
	 * with the first site's. */
	uint16_t overrun_type_id, ov_ctr_id[3];
	uint64_t ov_calls, ov_callbacks, ov_overruns;
	int64_t ov_counter_value;

	/* The rt thread's accounting, call by call. */
	uint64_t attempted[NKINDS];
	uint64_t recorded[NKINDS];
	uint64_t typed_all_recorded, typed_big_recorded;
	uint64_t typed_phase_recorded[4];
	uint64_t bad_delta;          /* a call changed the drop sum by > 1 */
	uint64_t stats_errors;       /* rtprof_thread_stats_get() != 0 */
	uint64_t now_calls;
	int cat_rt;             /* the category the child declared */
	uint64_t rounds;
	struct rtprof_thread_stats burst_stats;
	struct rtprof_thread_stats final_stats;
	uint64_t final_tries;

	/* The unregistered thread. */
	uint64_t unreg_errors;
	char unreg_msg[96];
	uint64_t unreg_now_ticks, unreg_now_mono; /* before its filter */
	int64_t unreg_counter_value;

	/* The child's main thread. */
	int start_rc;
	int stop_rc;
	int status_rc;
	struct rtprof_session_status status;
	int status_after_rc;
	struct rtprof_session_status status_after;
	int64_t rt_counter_value;
};

static struct shm *shm;
static rtprof_audio audio_rt, audio_ov;
/* RTPROF_TEST_INJECT=syscall|alloc: the rt thread breaks the rules once,
 * under its filter, to show that this test notices (a harness self-check). */
static int inject;
static __thread int armed;   /* this thread counts its allocations */
static __thread int who;     /* WHO_RT, WHO_UNREG, or 0 */

/* ------------------------------------------------------------------ */
/* Allocation counting                                                  */

__attribute__((noinline)) static void
note_alloc(size_t size, void *caller)
{
	if (shm == NULL)
		return;
	if (atomic_fetch_add(&shm->allocs, 1) == 0) {
		shm->alloc_size = size;
		shm->alloc_caller = caller;
		atomic_store(&shm->alloc_who, who);
	}
}

#ifdef USE_SAN_HOOKS

static void
san_malloc_hook(const volatile void *p, size_t size)
{
	(void)p;
	if (armed)
		note_alloc(size, __builtin_return_address(0));
}

static void
san_free_hook(const volatile void *p)
{
	if (armed && p != NULL && shm != NULL)
		atomic_fetch_add(&shm->frees, 1);
}

static void
alloc_counting_init(void)
{
	__sanitizer_install_malloc_and_free_hooks(san_malloc_hook, san_free_hook);
	shm->san_hooks = 1;
}

#else /* interpose glibc's malloc family */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

#define NOTE(sz)                                                               \
	do {                                                                   \
		if (armed)                                                     \
			note_alloc((sz), __builtin_return_address(0));         \
	} while (0)

__attribute__((visibility("default"))) void *
malloc(size_t n)
{
	NOTE(n);
	return __libc_malloc(n);
}

__attribute__((visibility("default"))) void *
calloc(size_t n, size_t m)
{
	NOTE(n * m);
	return __libc_calloc(n, m);
}

__attribute__((visibility("default"))) void *
realloc(void *p, size_t n)
{
	NOTE(n);
	return __libc_realloc(p, n);
}

__attribute__((visibility("default"))) void *
reallocarray(void *p, size_t n, size_t m)
{
	size_t sz;

	if (__builtin_mul_overflow(n, m, &sz)) {
		errno = ENOMEM;
		return NULL;
	}
	NOTE(sz);
	return __libc_realloc(p, sz);
}

__attribute__((visibility("default"))) void
free(void *p)
{
	if (armed && p != NULL && shm != NULL)
		atomic_fetch_add(&shm->frees, 1);
	__libc_free(p);
}

__attribute__((visibility("default"))) void *
memalign(size_t align, size_t n)
{
	NOTE(n);
	return __libc_memalign(align, n);
}

__attribute__((visibility("default"))) void *
aligned_alloc(size_t align, size_t n)
{
	NOTE(n);
	return __libc_memalign(align, n);
}

__attribute__((visibility("default"))) int
posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	NOTE(n);
	if (align < sizeof(void *) || (align & (align - 1)) != 0)
		return EINVAL;
	p = __libc_memalign(align, n);
	if (p == NULL)
		return ENOMEM;
	*out = p;
	return 0;
}

__attribute__((visibility("default"))) void *
valloc(size_t n)
{
	NOTE(n);
	return __libc_valloc(n);
}

__attribute__((visibility("default"))) void *
pvalloc(size_t n)
{
	NOTE(n);
	return __libc_pvalloc(n);
}

static void
alloc_counting_init(void)
{
	shm->san_hooks = 0;
}

#endif /* USE_SAN_HOOKS */

/* ------------------------------------------------------------------ */
/* The seccomp filter: exit(2) only; everything else traps.             */

static void
spin(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#elif defined(__aarch64__)
		__asm__ __volatile__("yield");
#else
		__asm__ __volatile__("" ::: "memory");
#endif
	}
}

static void
on_sigsys(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	/* No syscall here (rt_sigreturn is one too): report and spin until
	 * the child's main thread, which has no filter, ends the process. */
	shm->trap_nr = si->si_syscall;
	shm->trap_addr = si->si_call_addr;
	shm->trap_who = who;
	atomic_store(&shm->trapped, 1);
	shm->trap_nbt = backtrace(shm->trap_bt, 64); /* libgcc_s preloaded */
	atomic_store(&shm->trap_bt_done, 1);
	for (;;)
		spin(1000);
}

/* Return: 0 or -errno. */
static int
forbid_syscalls(void)
{
#if defined(NO_SECCOMP)
	return 0;
#elif defined(AUDIT_ARCH_SELF)
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_SELF, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -errno;
	/* No SECCOMP_FILTER_FLAG_TSYNC: this thread only. */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
		return -errno;
	return 0;
#else
	return -ENOSYS;
#endif
}

/*
 * Leave the thread with exit(2) itself: pthread_exit() and returning from
 * the start routine make syscalls (futex, munmap, ...). The thread is never
 * joined; the process ends with _exit() from the main thread.
 * Not noreturn, as far as the compiler can tell: ASan calls sigaltstack(2)
 * in __asan_handle_no_return before every call to a noreturn function.
 */
static long (*volatile raw_syscall)(long, ...) = syscall;
static volatile int keep_exiting = 1;

static void
raw_thread_exit(void)
{
	while (keep_exiting)
		raw_syscall(SYS_exit, 0);
}

/* ------------------------------------------------------------------ */
/* The child                                                            */

static const rtprof_marker_type *type_all, *type_big;
static rtprof_counter *counter_rt, *counter_unreg;
static int cat_rt;      /* a declared category */

static const char copied[] = "copied-string-0123456789";
static char long_str[LONG_LEN + 1];

static const struct rtprof_marker_schema schema_all = {
	.name = "rt.typed",
	.category = RTPROF_CAT_AUDIO,
	.tooltip_label = "{marker.data.i}",
	.nfields = 5,
	.fields = {
		{ "i", "signed", "integer", RTPROF_FIELD_I64 },
		{ "u", "unsigned", "integer", RTPROF_FIELD_U64 },
		{ "f", "double", "number", RTPROF_FIELD_F64 },
		{ "s", "static", "string", RTPROF_FIELD_STATIC_STR },
		{ "c", "copied", "string", RTPROF_FIELD_STR },
	},
};

/* RTPROF_MAX_FIELDS copied strings; filled in by child_main(). */
static struct rtprof_marker_schema schema_big = {
	.name = "rt.big",
	.category = RTPROF_CAT_OTHER,
};
static const char *const big_keys[] = { "a", "b", "c", "d", "e", "f", "g",
	"h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t" };
_Static_assert(RTPROF_MAX_FIELDS <= sizeof(big_keys) / sizeof(big_keys[0]),
    "enough keys");

static void
init_long_str(void)
{
	for (int i = 0; i < LONG_LEN; i++)
		long_str[i] = (char)('A' + i % 26);
	long_str[LONG_LEN] = 0;
}

static uint64_t
drop_sum(void)
{
	struct rtprof_thread_stats st;

	if (rtprof_thread_stats_get(&st) != 0) {
		shm->stats_errors++;
		return 0;
	}
	return st.dropped_full + st.dropped_nested + st.outside;
}

/* One recording call of record kind @k; counts whether it was recorded. */
#define REC(k, call)                                                           \
	do {                                                                   \
		uint64_t rec_before_ = drop_sum(), rec_delta_;                 \
		call;                                                          \
		rec_delta_ = drop_sum() - rec_before_;                         \
		shm->attempted[k]++;                                           \
		if (rec_delta_ == 0)                                           \
			shm->recorded[k]++;                                    \
		else if (rec_delta_ != 1)                                      \
			shm->bad_delta++;                                      \
	} while (0)

/* Round @i's typed record. Its phase is the one after the last recorded
 * (not i % 4: a 4-KiB chunk holds a round or two, and which rounds find a
 * free chunk depends on the writer's pace, so under load a phase could
 * miss every chunk); its value u = 4i + phase. */
static void
typed_all(uint64_t round)
{
	enum rtprof_phase ph = (enum rtprof_phase)(shm->typed_all_recorded % 4);
	uint64_t i = round * 4 + ph;
	uint64_t before = drop_sum(), t0 = rtprof_now(), t1 = rtprof_now() + 1;
	rtprof_rec r;
	int on;

	shm->now_calls += 2;
	on = rtprof_marker_open(&r, type_all, ph, t0, t1);
	if (on) {
		rtprof_put_i64(&r, -(int64_t)i);
		rtprof_put_u64(&r, i);
		rtprof_put_f64(&r, (double)i * 0.5);
		rtprof_put_static_str(&r, "static-field");
		rtprof_put_str(&r, copied, i % (sizeof(copied) - 1));
		rtprof_marker_close(&r);
	}
	shm->attempted[RTPROF_REC_TYPED]++;
	if (drop_sum() - before != (on ? 0u : 1u))
		shm->bad_delta++;
	if (on) {
		shm->recorded[RTPROF_REC_TYPED]++;
		/* relaxed: the main thread waits for a count. */
		__atomic_store_n(&shm->typed_all_recorded,
		    shm->typed_all_recorded + 1, __ATOMIC_RELAXED);
		shm->typed_phase_recorded[ph]++;
	}
}

/* The largest record there is: 12 copied strings, each truncated. */
static void
typed_big(void)
{
	uint64_t before = drop_sum();
	rtprof_rec r;
	int on = rtprof_marker_open(&r, type_big, RTPROF_PHASE_INSTANT,
	    rtprof_now(), 0);

	shm->now_calls++;
	if (on) {
		for (int f = 0; f < RTPROF_MAX_FIELDS; f++)
			rtprof_put_str(&r, long_str, LONG_LEN);
		rtprof_marker_close(&r);
	}
	shm->attempted[RTPROF_REC_TYPED]++;
	if (drop_sum() - before != (on ? 0u : 1u))
		shm->bad_delta++;
	if (on) {
		shm->recorded[RTPROF_REC_TYPED]++;
		shm->typed_big_recorded++;
	}
}

static void
deep_scopes(int depth)
{
	RTPROF_LABEL_SCOPE("rt.deep-scope");

	if (depth > 0)
		deep_scopes(depth - 1);
	else
		REC(RTPROF_REC_INSTANT, rtprof_mark("rt.deepest", RTPROF_CAT_USER));
}

/* Zones with every argument, text markers (texts cut at 255 bytes too),
 * flow and frame marks. A zone whose begin was dropped records nothing
 * more, and counts no drop either: its arguments are not attempted. */
static void
rt_zones(uint64_t i)
{
	char text[300];
	/* Short texts, one cut at 255 bytes every 16 calls: the chunk pool
	 * is tiny, and the other kinds (the overrun site) need room too. */
	size_t n = i % 16 == 0 ? sizeof(text) - 1 : (size_t)(i % 20);
	rtprof_zone z = { 0 };
	uint64_t t0;

	memset(text, 'a' + (int)(i % 26), n);
	text[n == sizeof(text) ? n - 1 : n] = '\0';
	REC(RTPROF_REC_ZONE_BEGIN, z = rtprof_zone_begin("rt.zone",
	    (unsigned)cat_rt));
	if (z.t != 0) {
		REC(RTPROF_REC_ZONE_ARG, rtprof_zone_value(z, (int64_t)i));
		REC(RTPROF_REC_ZONE_ARG, rtprof_zone_value_f64(z, 0.5));
		REC(RTPROF_REC_ZONE_ARG, rtprof_zone_text(z, text));
		REC(RTPROF_REC_ZONE_ARG, rtprof_zone_flow(z, i));
		REC(RTPROF_REC_ZONE_ARG, rtprof_zone_flow_end(z, i));
		REC(RTPROF_REC_ZONE_ARG, rtprof_zone_color(z, RTPROF_COLOR_TEAL));
		REC(RTPROF_REC_ZONE_END, rtprof_zone_end(z));
	}
	REC(RTPROF_REC_TEXT, rtprof_text("rt.text", RTPROF_CAT_IO, text));
	t0 = rtprof_now();
	shm->now_calls++;
	REC(RTPROF_REC_TEXT, rtprof_text_interval("rt.text-interval",
	    (unsigned)cat_rt, t0, rtprof_now(), text));
	REC(RTPROF_REC_FLOW, rtprof_flow_mark("rt.flow", RTPROF_CAT_USER,
	    rtprof_flow_new()));
	REC(RTPROF_REC_FLOW, rtprof_flow_finish("rt.flow-end", RTPROF_CAT_USER,
	    i));
	REC(RTPROF_REC_FRAME, rtprof_frame_mark_budget("rt.frame", 1000));
}

/* One round: every kind of event. */
static void
rt_round(uint64_t i)
{
	uint64_t t0, t1;

	REC(RTPROF_REC_INSTANT, rtprof_mark("rt.mark", RTPROF_CAT_AUDIO));
	REC(RTPROF_REC_BEGIN, rtprof_begin("rt.span", RTPROF_CAT_COMPUTE));
	REC(RTPROF_REC_END, rtprof_end("rt.span", RTPROF_CAT_COMPUTE));
	t0 = rtprof_now();
	t1 = rtprof_now();
	shm->now_calls += 2;
	REC(RTPROF_REC_INTERVAL, rtprof_interval("rt.interval", RTPROF_CAT_IO, t0, t1));
	typed_all(i);
	if (i % 16 == 0)
		typed_big();
	REC(RTPROF_REC_COUNTER, rtprof_counter_add(counter_rt, 1));
	REC(RTPROF_REC_COUNTER, rtprof_counter_set(counter_rt, (int64_t)i));
	if (i % 2 == 0)         /* not in the overrun site's rounds */
		rt_zones(i / 2);
	{
		/* A 1 s budget: never an overrun. begin: the jitter counter
		 * (from the second call on); end: the callback marker and the
		 * load counter. */
		uint64_t before = drop_sum();
		unsigned n = audio_rt.prev_begin != 0 ? 3 : 2;

		rtprof_audio_begin(&audio_rt, 48000, 48000);
		rtprof_audio_end(&audio_rt);
		shm->now_calls += 2;
		shm->audio_attempted += n;
		shm->audio_recorded += n - (drop_sum() - before);
	}
	if (i % 4 == 1) {
		/* 1 frame at 1 MHz: a 1 us budget, and at least 3 us used: an
		 * overrun every time. begin: jitter (from the second call on);
		 * end: the callback marker, the overrun marker, the overrun
		 * counter, the load counter. */
		uint64_t before = drop_sum();
		unsigned n = audio_ov.prev_begin != 0 ? 5 : 4;

		rtprof_audio_begin(&audio_ov, 1, 1000000);
		while ((double)(rtprof_now() - audio_ov.t_begin) <
		    3.0 * audio_ov.ticks_per_us)
			shm->now_calls++;
		rtprof_audio_end(&audio_ov);
		shm->now_calls += 2;
		shm->ov_calls++;
		shm->audio_attempted += n;
		shm->audio_recorded += n - (drop_sum() - before);
	}
	rtprof_label_push("rt.label");
	{
		RTPROF_LABEL_SCOPE("rt.scope");
		REC(RTPROF_REC_SLEEP, rtprof_thread_sleep());
		REC(RTPROF_REC_WAKE, rtprof_thread_wake());
	}
	rtprof_label_pop();
	if (i % 64 == 0) {
		/* Deeper than RTPROF_MAX_LABELS, both ways. */
		for (int d = 0; d < RTPROF_MAX_LABELS + 8; d++)
			rtprof_label_push("rt.deep");
		REC(RTPROF_REC_INSTANT, rtprof_mark("rt.in-deep", RTPROF_CAT_USER));
		for (int d = 0; d < RTPROF_MAX_LABELS + 8; d++)
			rtprof_label_pop();
		deep_scopes(RTPROF_MAX_LABELS + 8);
		/* More pops than pushes are ignored. */
		rtprof_label_pop();
	}
}

static void *
rt_main(void *arg)
{
	struct rtprof_thread_stats st;
	uint64_t i = 0;
	int rc;

	(void)arg;
	who = WHO_RT;
	shm->rt_tid = (int)syscall(SYS_gettid);
	shm->rt_register_rc = rtprof_thread_register("rt-filtered", RTPROF_THREAD_RT);
	if (shm->rt_register_rc != 0) {
		atomic_store(&shm->rt_phase, -1);
		return NULL;
	}

	/* From here: no allocation, no syscall but exit(2). */
	armed = 1;
	rc = forbid_syscalls();
	shm->rt_seccomp_rc = rc;
	if (rc != 0) {
		armed = 0;
		atomic_store(&shm->rt_phase, -1);
		return NULL;
	}

	/* A burst: far more than the one prefilled chunk holds. */
	for (; i < BURST_ROUNDS; i++)
		rt_round(i);
	if (inject == 1)
		syscall(SYS_getppid);
	else if (inject == 2) {
		void *volatile p = malloc(32); /* volatile: not elided */

		free(p);
	}
	if (rtprof_thread_stats_get(&st) != 0)
		shm->stats_errors++;
	shm->burst_stats = st;
	atomic_store(&shm->rt_phase, 1);

	/* Keep recording across the writer's refills (chunks retired to the
	 * full ring and new ones taken, all under the filter). */
	while (!atomic_load(&shm->stop_recording)) {
		rt_round(i++);
		spin(20000);
	}

	/* End with a recorded event, so that every drop is carried by a
	 * chunk header (drops are reported with the next chunk taken). */
	for (;;) {
		uint64_t before = drop_sum();

		shm->final_tries++;
		REC(RTPROF_REC_INSTANT, rtprof_mark("rt.final", RTPROF_CAT_OTHER));
		if (drop_sum() == before)
			break;
		if (atomic_load(&shm->stop_recording) > 1)
			break; /* the main thread gave up waiting */
		spin(100000);
	}
	if (rtprof_thread_stats_get(&st) != 0)
		shm->stats_errors++;
	shm->final_stats = st;
	shm->rounds = i;
	shm->rt_counter_value = __atomic_load_n(&counter_rt->value, __ATOMIC_RELAXED);
	shm->ov_callbacks = audio_ov.callbacks;
	shm->ov_overruns = audio_ov.overrun_count;
	shm->ov_counter_value = __atomic_load_n(&audio_ov.overruns->value,
	    __ATOMIC_RELAXED);
	atomic_store(&shm->rt_phase, 2);
	raw_thread_exit();
	return NULL;
}

static void
unreg_fail(const char *msg)
{
	if (shm->unreg_errors++ == 0) {
		size_t n = strlen(msg);

		if (n >= sizeof(shm->unreg_msg))
			n = sizeof(shm->unreg_msg) - 1;
		memcpy(shm->unreg_msg, msg, n);
		shm->unreg_msg[n] = 0;
	}
}

static void *
unreg_main(void *arg)
{
	struct timespec ts;
	struct rtprof_thread_stats st;

	(void)arg;
	who = WHO_UNREG;
	shm->unreg_tid = (int)syscall(SYS_gettid);
	/* rtprof_now() on an unregistered thread, against CLOCK_MONOTONIC
	 * (compared by the parent when the session clock is monotonic). */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	shm->unreg_now_ticks = rtprof_now();
	shm->unreg_now_mono = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;

	armed = 1;
	shm->unreg_seccomp_rc = forbid_syscalls();
	if (shm->unreg_seccomp_rc != 0) {
		armed = 0;
		atomic_store(&shm->unreg_done, -1);
		return NULL;
	}
	for (int i = 0; i < UNREG_ROUNDS; i++) {
		uint64_t t0 = rtprof_now(), t1 = rtprof_now();
		rtprof_rec r;

		if (t0 == 0)
			unreg_fail("rtprof_now() returned 0");
		rtprof_mark("unreg.mark", RTPROF_CAT_OTHER);
		rtprof_begin("unreg.span", RTPROF_CAT_OTHER);
		rtprof_end("unreg.span", RTPROF_CAT_OTHER);
		rtprof_interval("unreg.interval", RTPROF_CAT_OTHER, t0, t1);
		if (rtprof_marker_open(&r, type_all, RTPROF_PHASE_INSTANT, t0, 0))
			unreg_fail("rtprof_marker_open() succeeded unregistered");
		if (rtprof_marker_open(&r, type_big, RTPROF_PHASE_INTERVAL, t0, t1))
			unreg_fail("rtprof_marker_open(big) succeeded unregistered");
		rtprof_counter_add(counter_unreg, 2);
		rtprof_counter_set(counter_unreg, __atomic_load_n(&counter_unreg->value,
		    __ATOMIC_RELAXED) - 1);
		rtprof_label_push("unreg.label");
		{
			RTPROF_LABEL_SCOPE("unreg.scope");
			rtprof_thread_sleep();
			rtprof_thread_wake();
		}
		rtprof_label_pop();
		rtprof_label_pop(); /* more pops than pushes */
		{
			rtprof_zone z = rtprof_zone_begin("unreg.zone", 9);

			if (z.t != 0)
				unreg_fail("rtprof_zone_begin() recorded unregistered");
			rtprof_zone_value(z, 1);
			rtprof_zone_text(z, "unreg");
			rtprof_zone_end(z);
			z.t = t0;       /* a handle from elsewhere: still nothing */
			rtprof_zone_text(z, "unreg");
			rtprof_zone_flow(z, 1);
			rtprof_zone_end(z);
			rtprof_text("unreg.text", RTPROF_CAT_OTHER, "unreg");
			rtprof_flow_mark("unreg.flow", RTPROF_CAT_OTHER,
			    rtprof_flow_new());
			rtprof_frame_mark("unreg.frame");
		}
		if (rtprof_thread_stats_get(&st) != -ENOENT)
			unreg_fail("rtprof_thread_stats_get() != -ENOENT unregistered");
	}
	shm->unreg_counter_value = __atomic_load_n(&counter_unreg->value, __ATOMIC_RELAXED);
	atomic_store(&shm->unreg_done, 1);
	raw_thread_exit();
	return NULL;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Context: the child's main thread (no filter). Ends the child on a trap. */
static void
check_trapped(void)
{
	if (!atomic_load(&shm->trapped))
		return;
	for (int i = 0; i < 200 && !atomic_load(&shm->trap_bt_done); i++)
		sleep_ms(5);
	fprintf(stderr, "child: %s thread made syscall %d (at %p) under its "
	    "seccomp filter; backtrace:\n",
	    shm->trap_who == WHO_RT ? "the registered rt" :
	    shm->trap_who == WHO_UNREG ? "the unregistered" : "an unknown",
	    shm->trap_nr, shm->trap_addr);
	if (atomic_load(&shm->trap_bt_done))
		backtrace_symbols_fd(shm->trap_bt, shm->trap_nbt, 2);
	_exit(77);
}

/* Wait (polling) until *v reaches @want (or goes negative). */
static int
wait_for(_Atomic int *v, int want, long timeout_ms)
{
	for (long t = 0; t < timeout_ms; t += 5) {
		int x = atomic_load(v);

		check_trapped();
		if (x >= want || x < 0)
			return x;
		sleep_ms(5);
	}
	return atomic_load(v);
}

static int
child_main(int dumpfd)
{
	struct rtprof_settings set;
	pthread_t rt, unreg;
	void *bt[4];
	struct sigaction sa;

	/* The SIGSYS handler's backtrace() must not load libgcc_s then. */
	backtrace(bt, 4);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) != 0) {
		perror("sigaction");
		return 2;
	}
	alloc_counting_init();
	if (getenv("RTPROF_TEST_INJECT") != NULL)
		inject = strcmp(getenv("RTPROF_TEST_INJECT"), "syscall") == 0 ? 1 :
		    strcmp(getenv("RTPROF_TEST_INJECT"), "alloc") == 0 ? 2 : 0;

	/* Declarations are the main thread's job, before the threads run. */
	schema_big.nfields = RTPROF_MAX_FIELDS;
	for (int f = 0; f < RTPROF_MAX_FIELDS; f++) {
		schema_big.fields[f].key = big_keys[f];
		schema_big.fields[f].format = "string";
		schema_big.fields[f].kind = RTPROF_FIELD_STR;
	}
	type_all = rtprof_marker_type_declare(&schema_all);
	type_big = rtprof_marker_type_declare(&schema_big);
	counter_rt = rtprof_counter_declare("rt.counter", "Test", "set by the rt thread");
	cat_rt = rtprof_category_declare("rt.category", "magenta");
	RTPROF_CHECK_GE(cat_rt, RTPROF_CAT_COUNT);
	shm->cat_rt = cat_rt;
	counter_unreg = rtprof_counter_declare("unreg.counter", "Test", NULL);
	if (type_all == NULL || type_big == NULL || counter_rt == NULL || counter_unreg == NULL) {
		perror("declare");
		return 2;
	}
	shm->type_all_id = type_all->id;
	shm->type_big_id = type_big->id;
	shm->counter_id = counter_rt->id;
	if (rtprof_audio_init(&audio_rt, "rt") != 0) {
		perror("rtprof_audio_init");
		return 2;
	}
	shm->audio_type_id = audio_rt.cb_type->id;
	shm->audio_ctr_id[0] = audio_rt.load->id;
	shm->audio_ctr_id[1] = audio_rt.jitter->id;
	shm->audio_ctr_id[2] = audio_rt.overruns->id;
	if (rtprof_audio_init(&audio_ov, "ov") != 0) {
		perror("rtprof_audio_init");
		return 2;
	}
	shm->overrun_type_id = audio_ov.overrun_type->id;
	shm->ov_ctr_id[0] = audio_ov.load->id;
	shm->ov_ctr_id[1] = audio_ov.jitter->id;
	shm->ov_ctr_id[2] = audio_ov.overruns->id;

	/* A tiny pool: 4 chunks of 4 KiB, one prefilled, refilled once per
	 * second: the rt thread runs out of chunks under its filter. */
	memset(&set, 0, sizeof(set));
	set.struct_size = sizeof(set);
	set.mode = RTPROF_MODE_STREAM;
	set.fd = dumpfd;
	set.chunk_size = 4096;
	set.memory_limit = 4 * (4096 + 256);
	set.prefill = 1;
	set.flush_interval_us = 1000000;
	shm->start_rc = rtprof_session_start(&set);
	if (shm->start_rc != 0) {
		fprintf(stderr, "child: rtprof_session_start: %s\n",
		    rtprof_strerror(shm->start_rc));
		return 2;
	}

	if (pthread_create(&unreg, NULL, unreg_main, NULL) != 0 ||
	    pthread_create(&rt, NULL, rt_main, NULL) != 0) {
		perror("pthread_create");
		return 2;
	}
	if (wait_for(&shm->rt_phase, 1, 60000) != 1) {
		fprintf(stderr, "child: rt thread setup failed or stuck (phase %d, "
		    "register %d, seccomp %d)\n", atomic_load(&shm->rt_phase),
		    shm->rt_register_rc, shm->rt_seccomp_rc);
		return 3;
	}
	/* Let it record across a few writer rounds (1 s apart), and until
	 * its typed record went into a chunk in each phase twice (a loaded
	 * machine gives fewer writer rounds in 2.5 s: at most 60 s). */
	for (int t = 0; t < 2500 || (t < 60000 && __atomic_load_n(
	    &shm->typed_all_recorded, __ATOMIC_RELAXED) < 8); t += 5) {
		check_trapped();
		sleep_ms(5);
	}
	atomic_store(&shm->stop_recording, 1);
	if (wait_for(&shm->rt_phase, 2, 30000) != 2) {
		atomic_store(&shm->stop_recording, 2);
		if (wait_for(&shm->rt_phase, 2, 5000) != 2) {
			fprintf(stderr, "child: rt thread did not finish\n");
			return 3;
		}
	}
	if (wait_for(&shm->unreg_done, 1, 30000) != 1) {
		fprintf(stderr, "child: unregistered thread failed or stuck (%d, "
		    "seccomp %d)\n", atomic_load(&shm->unreg_done),
		    shm->unreg_seccomp_rc);
		return 3;
	}
	check_trapped();
	shm->status_rc = rtprof_session_status_get(&shm->status);
	shm->stop_rc = rtprof_session_stop();
	shm->status_after_rc = rtprof_session_status_get(&shm->status_after);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The parent                                                           */


/*
 * The rt thread's zones, texts, flows and frames (rt_zones): names,
 * categories, a zone's arguments and end naming the zone begun just
 * before (@zone_open: its start, 0 when none is open), texts of one
 * letter cut at RTPROF_MAX_TEXT.
 */
static void
check_user_rec(const struct dm_rec *r, uint64_t *zone_open)
{
	const struct rtprof_rec_view *v = &r->v;

	switch (v->kind) {
	case RTPROF_REC_ZONE_BEGIN:
		RTPROF_CHECK_STREQ(r->name, "rt.zone");
		RTPROF_CHECK_EQ(v->category, (unsigned)shm->cat_rt);
		*zone_open = v->t0;
		break;
	case RTPROF_REC_ZONE_ARG:
	case RTPROF_REC_ZONE_END:
		RTPROF_CHECK_EQ(v->zone, *zone_open);
		RTPROF_CHECK_NE(v->zone, 0);
		if (v->kind == RTPROF_REC_ZONE_END) {
			RTPROF_CHECK_GE(v->t0, v->zone);
			*zone_open = 0;
		} else if (v->phase == RTPROF_ZONE_ARG_TEXT) {
			RTPROF_CHECK_LE(v->vals[0].v.str.n, RTPROF_MAX_TEXT);
		}
		break;
	case RTPROF_REC_TEXT:
		RTPROF_CHECK(strcmp(r->name, "rt.text") == 0 ||
		    strcmp(r->name, "rt.text-interval") == 0);
		RTPROF_CHECK_LE(v->vals[0].v.str.n, RTPROF_MAX_TEXT);
		for (uint32_t k = 1; k < v->vals[0].v.str.n; k++)
			RTPROF_CHECK_EQ(v->vals[0].v.str.p[k], v->vals[0].v.str.p[0]);
		RTPROF_CHECK(v->t1 >= v->t0);
		break;
	case RTPROF_REC_FLOW:
		RTPROF_CHECK(strcmp(r->name, v->flags ? "rt.flow-end" :
		    "rt.flow") == 0);
		break;
	case RTPROF_REC_FRAME:
		RTPROF_CHECK_STREQ(r->name, "rt.frame");
		RTPROF_CHECK_EQ(v->value, 1000);
		break;
	default:
		break;
	}
}
static void
check_contents(const struct dm_session *s, const struct dm_thread *th)
{
	uint64_t typed_all_n = 0, typed_big_n = 0, phases[4] = { 0 };
	uint64_t last_t = 0;
	/* A thread's records are in time order, give or take what the TSCs of
	 * two CPUs may differ by when the thread migrates (1 ms: generous). */
	uint64_t slack = (uint64_t)(s->ticks_per_second / 1000);
	int counter_seen = 0;
	/* The overrun site: its last callback marker (an overrun marker has
	 * the same interval), counts and counter values seen. */
	const struct rtprof_rec_view *ov_cb = NULL;
	uint64_t ov_cbs = 0, ov_markers = 0, ov_last_count = 0;
	uint64_t ov_loads = 0, ov_jitters = 0, ov_steps = 0;
	int64_t ov_last_total = 0;
	const double ov_budget = 1.0 * 1000.0 / 1000000.0;
	/* The zone begun last, until its end (which may have been dropped:
	 * the next begin replaces it). */
	uint64_t zone_open = 0;

	for (size_t i = 0; i < th->nrecs; i++) {
		const struct dm_rec *r = &th->recs[i];
		const struct rtprof_rec_view *v = &r->v;

		/* An interval is recorded at its end (t1), its t0 may be
		 * older than the records made meanwhile (an audio callback's
		 * jitter counter): ordered by the later of the two. */
		uint64_t t_rec = v->t1 > v->t0 ? v->t1 : v->t0;

		RTPROF_CHECK((v->kind >= 1 && v->kind <= 8) ||
		    (v->kind >= RTPROF_REC_ZONE_BEGIN &&
		    v->kind <= RTPROF_REC_FRAME));
		RTPROF_CHECK_GE(t_rec + slack, last_t);
		if (t_rec > last_t)
			last_t = t_rec;
		switch (v->kind) {
		case RTPROF_REC_INSTANT:
			RTPROF_CHECK(r->name != NULL);
			RTPROF_CHECK(strcmp(r->name, "rt.mark") == 0 ||
			    strcmp(r->name, "rt.in-deep") == 0 ||
			    strcmp(r->name, "rt.deepest") == 0 ||
			    strcmp(r->name, "rt.final") == 0);
			break;
		case RTPROF_REC_BEGIN:
		case RTPROF_REC_END:
			RTPROF_CHECK_STREQ(r->name, "rt.span");
			RTPROF_CHECK_EQ(v->category, RTPROF_CAT_COMPUTE);
			break;
		case RTPROF_REC_INTERVAL:
			RTPROF_CHECK_STREQ(r->name, "rt.interval");
			RTPROF_CHECK_EQ(v->category, RTPROF_CAT_IO);
			RTPROF_CHECK(v->t1 >= v->t0);
			break;
		case RTPROF_REC_TYPED:
			if (v->id == shm->audio_type_id &&
			    v->nvals == 4 && v->vals[0].v.u == 1) {
				/* The overrun site: 1 frame at 1 MHz, 3 us or
				 * more used, load = used / budget. */
				RTPROF_CHECK_EQ(v->phase, RTPROF_PHASE_INTERVAL);
				RTPROF_CHECK(v->vals[1].v.d == ov_budget);
				RTPROF_CHECK(v->vals[2].v.d >= 0.003);
				RTPROF_CHECK(v->vals[3].v.d ==
				    v->vals[2].v.d / v->vals[1].v.d);
				RTPROF_CHECK_GT(v->t1, v->t0);
				ov_cb = v;
				ov_cbs++;
			} else if (v->id == shm->audio_type_id) {
				/* frames, budget, used, load: 48000 at 48 kHz. */
				RTPROF_CHECK_EQ(v->phase, RTPROF_PHASE_INTERVAL);
				RTPROF_CHECK_EQ(v->nvals, 4);
				RTPROF_CHECK_EQ(v->vals[0].v.u, 48000);
				RTPROF_CHECK(v->vals[1].v.d == 1000.0);
				RTPROF_CHECK(v->vals[2].v.d >= 0.0 &&
				    v->vals[2].v.d < 1000.0);
				RTPROF_CHECK(v->vals[3].v.d ==
				    v->vals[2].v.d / v->vals[1].v.d);
			} else if (v->id == shm->overrun_type_id) {
				/* count, budget, used, over: only the overrun
				 * site overruns; count goes up (by one unless
				 * records were dropped in between). */
				RTPROF_CHECK_EQ(v->phase, RTPROF_PHASE_INTERVAL);
				RTPROF_CHECK_EQ(v->nvals, 4);
				RTPROF_CHECK_GT(v->vals[0].v.u, ov_last_count);
				RTPROF_CHECK_LE(v->vals[0].v.u, shm->ov_overruns);
				ov_last_count = v->vals[0].v.u;
				RTPROF_CHECK(v->vals[1].v.d == ov_budget);
				RTPROF_CHECK(v->vals[2].v.d >= 0.003);
				RTPROF_CHECK(v->vals[3].v.d ==
				    v->vals[2].v.d - v->vals[1].v.d);
				/* Right after its callback's marker. */
				if (i > 0 && ov_cb == &th->recs[i - 1].v) {
					RTPROF_CHECK_EQ(v->t0, ov_cb->t0);
					RTPROF_CHECK_EQ(v->t1, ov_cb->t1);
					RTPROF_CHECK(v->vals[2].v.d ==
					    ov_cb->vals[2].v.d);
				}
				ov_markers++;
			} else if (v->id == shm->type_all_id) {
				uint64_t u;
				const char *st;

				typed_all_n++;
				RTPROF_CHECK_LT(v->phase, 4);
				phases[v->phase]++;
				RTPROF_CHECK_EQ(v->nvals, 5);
				RTPROF_CHECK_EQ(v->vals[0].kind, RTPROF_VAL_I64);
				RTPROF_CHECK_EQ(v->vals[1].kind, RTPROF_VAL_U64);
				RTPROF_CHECK_EQ(v->vals[2].kind, RTPROF_VAL_F64);
				RTPROF_CHECK_EQ(v->vals[3].kind, RTPROF_VAL_STRREF);
				RTPROF_CHECK_EQ(v->vals[4].kind, RTPROF_VAL_STR);
				u = v->vals[1].v.u;
				RTPROF_CHECK_EQ(v->vals[0].v.i, -(int64_t)u);
				RTPROF_CHECK(v->vals[2].v.d == (double)u * 0.5);
				RTPROF_CHECK_EQ(u % 4, v->phase);
				st = dm_string(s, v->vals[3].v.ref);
				RTPROF_CHECK_STREQ(st, "static-field");
				RTPROF_CHECK_EQ(v->vals[4].v.str.n, u % (sizeof(copied) - 1));
				RTPROF_CHECK(memcmp(v->vals[4].v.str.p, copied,
				    v->vals[4].v.str.n) == 0);
				/* The view gives t1 = t0 when there is no end. */
				if (v->phase == RTPROF_PHASE_INTERVAL)
					RTPROF_CHECK_GT(v->t1, v->t0);
				else
					RTPROF_CHECK_EQ(v->t1, v->t0);
			} else {
				RTPROF_CHECK_EQ(v->id, shm->type_big_id);
				typed_big_n++;
				RTPROF_CHECK_EQ(v->phase, RTPROF_PHASE_INSTANT);
				RTPROF_CHECK_EQ(v->nvals, RTPROF_MAX_FIELDS);
				for (unsigned f = 0; f < v->nvals; f++) {
					RTPROF_CHECK_EQ(v->vals[f].kind, RTPROF_VAL_STR);
					/* truncated to RTPROF_MAX_STRING */
					RTPROF_CHECK_EQ(v->vals[f].v.str.n, RTPROF_MAX_STRING);
					RTPROF_CHECK(memcmp(v->vals[f].v.str.p, long_str,
					    RTPROF_MAX_STRING) == 0);
				}
			}
			break;
		case RTPROF_REC_COUNTER:
			if (v->id == shm->audio_ctr_id[0] ||
			    v->id == shm->audio_ctr_id[1])
				break;  /* load, jitter (no overrun here) */
			if (v->id == shm->ov_ctr_id[0]) {
				RTPROF_CHECK_GE(v->value, 3000); /* per mille */
				ov_loads++;
				break;
			}
			if (v->id == shm->ov_ctr_id[1]) {
				ov_jitters++;
				break;
			}
			if (v->id == shm->ov_ctr_id[2]) {
				/* The running count of overruns. */
				RTPROF_CHECK_GT(v->value, ov_last_total);
				RTPROF_CHECK_LE(v->value, (int64_t)shm->ov_overruns);
				ov_last_total = v->value;
				ov_steps++;
				break;
			}
			RTPROF_CHECK_EQ(v->id, shm->counter_id);
			counter_seen = 1;
			break;
		default:
			check_user_rec(r, &zone_open);
			break;
		}
	}
	RTPROF_CHECK_EQ(typed_all_n, shm->typed_all_recorded);
	RTPROF_CHECK_EQ(typed_big_n, shm->typed_big_recorded);
	for (int p = 0; p < 4; p++) {
		RTPROF_CHECK_EQ(phases[p], shm->typed_phase_recorded[p]);
		RTPROF_CHECK_GT(phases[p], 0);
	}
	RTPROF_CHECK(counter_seen);
	/* The overrun path: every callback of the site overran, and its
	 * markers and counter values were recorded under the filter. */
	printf("  overrun site: %" PRIu64 " calls, %" PRIu64 " callbacks, %"
	    PRIu64 " overruns (counter %" PRId64 "); decoded %" PRIu64
	    " callback and %" PRIu64 " overrun markers, %" PRIu64 " load, %"
	    PRIu64 " jitter, %" PRIu64 " overrun counter values\n",
	    shm->ov_calls, shm->ov_callbacks, shm->ov_overruns,
	    shm->ov_counter_value, ov_cbs, ov_markers, ov_loads, ov_jitters,
	    ov_steps);
	RTPROF_CHECK_GT(shm->ov_calls, 0);
	RTPROF_CHECK_EQ(shm->ov_callbacks, shm->ov_calls);
	RTPROF_CHECK_EQ(shm->ov_overruns, shm->ov_callbacks);
	RTPROF_CHECK_EQ(shm->ov_counter_value, (int64_t)shm->ov_overruns);
	RTPROF_CHECK_GT(ov_cbs, 0);
	RTPROF_CHECK_GT(ov_markers, 0);
	RTPROF_CHECK_GT(ov_loads, 0);
	RTPROF_CHECK_GT(ov_jitters, 0);
	RTPROF_CHECK_GT(ov_steps, 0);
	RTPROF_CHECK_LE(ov_markers, shm->ov_overruns);
}

static void
check_dump(int fd, int monotonic)
{
	struct dm m;
	const struct dm_session *s;
	const struct dm_thread *th;
	const struct rtprof_dump_trailer_thread *tt;
	uint64_t want = 0, attempted = 0, drops, audio_typed = 0, audio_ctr = 0;
	const struct rtprof_thread_stats *fs = &shm->final_stats;

	RTPROF_CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
	RTPROF_CHECK_EQ(dm_load_fd(&m, fd), 0);
	RTPROF_CHECK_EQ(m.stats.bad_frames, 0);
	RTPROF_CHECK_EQ(m.stats.skipped_bytes, 0);
	RTPROF_CHECK_EQ(m.stats.seq_gaps, 0);
	RTPROF_CHECK_EQ(m.stats.seq_dups, 0);
	RTPROF_CHECK_EQ(m.stats.bad_payloads, 0);
	RTPROF_CHECK_EQ(m.stats.bad_records, 0);
	RTPROF_CHECK_EQ(m.stats.truncated_tail_bytes, 0);
	RTPROF_CHECK_EQ(m.stats.damage, 0);
	RTPROF_CHECK_EQ(m.nsessions, 1);
	s = &m.sessions[0];
	printf("  dump: clock %s, %zu threads, %" PRIu64 " frames\n",
	    s->clock_source, s->nthreads, m.stats.frames);
	RTPROF_CHECK(s->ticks_per_second > 0);
	RTPROF_CHECK_STREQ(s->mode, "stream");
	if (monotonic)
		RTPROF_CHECK_STREQ(s->clock_source, "monotonic");
	else
		RTPROF_CHECK(strcmp(s->clock_source, "tsc") == 0 ||
		    strcmp(s->clock_source, "cntvct") == 0 ||
		    strcmp(s->clock_source, "monotonic") == 0);
	RTPROF_CHECK(s->has_trailer);
	RTPROF_CHECK(!s->trailer.limit_reached);
	RTPROF_CHECK_EQ(s->trailer.chunks_lost, 0);

	/* The unregistered thread recorded nothing. */
	RTPROF_CHECK(dm_find_thread(s, shm->unreg_tid) == NULL);
	RTPROF_CHECK(dm_trailer_thread(s, shm->unreg_tid) == NULL);

	th = dm_find_thread(s, shm->rt_tid);
	RTPROF_CHECK(th != NULL);
	RTPROF_CHECK_STREQ(th->name, "rt-filtered");
	RTPROF_CHECK(th->flags & RTPROF_THREAD_RT);

	/* The audio API's records, counted apart (several per call). */
	for (size_t i = 0; i < th->nrecs; i++) {
		const struct rtprof_rec_view *v = &th->recs[i].v;

		if (v->kind == RTPROF_REC_TYPED &&
		    (v->id == shm->audio_type_id ||
		    v->id == shm->overrun_type_id))
			audio_typed++;
		else if (v->kind == RTPROF_REC_COUNTER &&
		    (v->id == shm->audio_ctr_id[0] ||
		    v->id == shm->audio_ctr_id[1] ||
		    v->id == shm->audio_ctr_id[2] ||
		    v->id == shm->ov_ctr_id[0] ||
		    v->id == shm->ov_ctr_id[1] ||
		    v->id == shm->ov_ctr_id[2]))
			audio_ctr++;
	}
	printf("  audio: attempted %" PRIu64 ", recorded %" PRIu64
	    ", decoded %" PRIu64 " (%" PRIu64 " callbacks)\n",
	    shm->audio_attempted, shm->audio_recorded, audio_typed + audio_ctr,
	    audio_typed);
	RTPROF_CHECK_GT(audio_typed, 0);
	RTPROF_CHECK_EQ(audio_typed + audio_ctr, shm->audio_recorded);
	want += shm->audio_recorded;
	attempted += shm->audio_attempted;
	/* Exact accounting, kind by kind. */
	for (int k = 1; k < NKINDS; k++) {
		if (k >= RTPROF_REC_SAMPLE && k <= RTPROF_REC_BACKTRACE)
			continue;       /* the sampler's and preload's */
		size_t got = dm_count(&m, shm->rt_tid, k) -
		    (k == RTPROF_REC_TYPED ? audio_typed :
		    k == RTPROF_REC_COUNTER ? audio_ctr : 0);

		printf("  kind %d: attempted %" PRIu64 ", recorded %" PRIu64
		    ", decoded %zu\n", k, shm->attempted[k], shm->recorded[k],
		    got);
		RTPROF_CHECK_GT(shm->recorded[k], 0);
		RTPROF_CHECK_EQ(got, shm->recorded[k]);
		want += shm->recorded[k];
		attempted += shm->attempted[k];
	}
	drops = fs->dropped_full + fs->dropped_nested + fs->outside;
	RTPROF_CHECK_EQ(th->nrecs, want);
	RTPROF_CHECK_EQ(th->nrecs, attempted - drops);
	RTPROF_CHECK_EQ(th->drops_full, fs->dropped_full);
	RTPROF_CHECK_EQ(th->drops_nested, fs->dropped_nested);
	tt = dm_trailer_thread(s, shm->rt_tid);
	RTPROF_CHECK(tt != NULL);
	RTPROF_CHECK_EQ(tt->recorded, th->nrecs);
	RTPROF_CHECK_EQ(tt->dropped_full, fs->dropped_full);
	RTPROF_CHECK_EQ(tt->dropped_nested, 0);
	RTPROF_CHECK_EQ(tt->recycled, 0);
	/* Each chunk taken is in the dump, once (a chunk written in parts,
	 * its committed part by the writer's 200 ms partials then the rest,
	 * has one DATA frame at offset 0: under load, 5 frames for 4). */
	RTPROF_CHECK_EQ(th->chunk_starts, fs->chunks);
	RTPROF_CHECK_GE(th->data_frames, fs->chunks);
	check_contents(s, th);

	/* Declarations made it too. */
	RTPROF_CHECK_EQ(s->nschemas, 4);       /* + the audio API's two */
	RTPROF_CHECK_EQ(s->ncounters, 8);      /* + its three per site */
	dm_free(&m);
}

static int
run_child(const char *self, int monotonic)
{
	char path[] = "/tmp/rtprof-rtsafe-XXXXXX";
	char fdarg[16], shmarg[16];
	int dumpfd, shmfd, status;
	uint64_t allocs, frees;
	pid_t pid;
	int rc;

	printf("== rt thread under seccomp, clock %s\n",
	    monotonic ? "monotonic (vDSO)" : "default");
	fflush(stdout);
	dumpfd = mkstemp(path);
	RTPROF_CHECK(dumpfd >= 0);
	unlink(path); /* read back through dumpfd */
	shmfd = memfd_create("rtsafe-shm", 0);
	RTPROF_CHECK(shmfd >= 0);
	RTPROF_CHECK_EQ(ftruncate(shmfd, sizeof(struct shm)), 0);
	shm = mmap(NULL, sizeof(struct shm), PROT_READ | PROT_WRITE, MAP_SHARED, shmfd, 0);
	RTPROF_CHECK(shm != MAP_FAILED);
	memset(shm, 0, sizeof(*shm));

	snprintf(fdarg, sizeof(fdarg), "%d", dumpfd);
	snprintf(shmarg, sizeof(shmarg), "%d", shmfd);
	pid = fork();
	RTPROF_CHECK(pid >= 0);
	if (pid == 0) {
		char *argv[] = { (char *)self, "--child", fdarg, shmarg, NULL };

		if (monotonic)
			setenv("RTPROF_CLOCK", "monotonic", 1);
		else
			unsetenv("RTPROF_CLOCK");
		execv("/proc/self/exe", argv);
		execv(self, argv);
		perror("execv");
		_exit(127);
	}
	RTPROF_CHECK_EQ(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "child killed by signal %d (%s)%s\n", WTERMSIG(status),
		    strsignal(WTERMSIG(status)),
		    WTERMSIG(status) == SIGSYS ? ": a forbidden syscall" : "");
		abort();
	}
	RTPROF_CHECK(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77) {
		fprintf(stderr, "FAIL: a recording call made syscall %d under the "
		    "filter (see the child's backtrace above)\n", shm->trap_nr);
		abort();
	}
	RTPROF_CHECK_EQ(WEXITSTATUS(status), 0);

	RTPROF_CHECK_EQ(shm->rt_register_rc, 0);
	RTPROF_CHECK_EQ(shm->rt_seccomp_rc, 0);
	RTPROF_CHECK_EQ(shm->unreg_seccomp_rc, 0);
	RTPROF_CHECK_EQ(atomic_load(&shm->trapped), 0);

	printf("  rounds %" PRIu64 ", rtprof_now calls %" PRIu64 ", tries to end "
	    "on a recorded event %" PRIu64 "\n", shm->rounds, shm->now_calls,
	    shm->final_tries);
	printf("  burst stats: dropped_full %" PRIu64 " chunks %" PRIu64 "\n",
	    shm->burst_stats.dropped_full, shm->burst_stats.chunks);
	printf("  final stats: dropped_full %" PRIu64 " nested %" PRIu64
	    " outside %" PRIu64 " late %" PRIu64 " chunks %" PRIu64 "\n",
	    shm->final_stats.dropped_full, shm->final_stats.dropped_nested,
	    shm->final_stats.outside, shm->final_stats.late,
	    shm->final_stats.chunks);
#ifdef NO_SECCOMP
	printf("  SKIPPED: no seccomp filter under " NO_SECCOMP "; syscalls "
	    "are not checked, allocations are\n");
#endif
	if (shm->san_hooks)
		printf("  allocations counted with the sanitizer allocator hooks "
		    "(malloc cannot be interposed under a sanitizer)\n");
	allocs = atomic_load(&shm->allocs);
	frees = atomic_load(&shm->frees);
	printf("  allocations by filtered threads: %" PRIu64 " (frees %" PRIu64 ")\n",
	    allocs, frees);
	if (allocs != 0) {
		fprintf(stderr, "FAIL: the %s thread allocated %zu bytes from %p\n",
		    atomic_load(&shm->alloc_who) == WHO_RT ? "rt" : "unregistered",
		    shm->alloc_size, shm->alloc_caller);
		backtrace_symbols_fd(&shm->alloc_caller, 1, 2);
	}
	RTPROF_CHECK_EQ(allocs, 0);
	RTPROF_CHECK_EQ(frees, 0);

	/* The rt thread's own view, from inside the filter. */
	RTPROF_CHECK_EQ(shm->stats_errors, 0);
	RTPROF_CHECK_EQ(shm->bad_delta, 0);
	RTPROF_CHECK_GT(shm->burst_stats.dropped_full, 0);
	RTPROF_CHECK_GE(shm->final_stats.chunks, 2); /* refilled under the filter */
	RTPROF_CHECK_EQ(shm->final_stats.dropped_nested, 0);
	RTPROF_CHECK_EQ(shm->final_stats.outside, 0);
	RTPROF_CHECK_EQ(shm->final_stats.late, 0);
	RTPROF_CHECK_EQ(shm->rt_counter_value, (int64_t)shm->rounds - 1);

	/* The unregistered thread. */
	if (shm->unreg_errors)
		fprintf(stderr, "unregistered thread: %s\n", shm->unreg_msg);
	RTPROF_CHECK_EQ(shm->unreg_errors, 0);
	RTPROF_CHECK_EQ(shm->unreg_counter_value, UNREG_ROUNDS);
	if (monotonic) {
		/* rtprof_now(): "ticks of the session clock", any thread. */
		int64_t d = (int64_t)(shm->unreg_now_ticks - shm->unreg_now_mono);

		printf("  unregistered rtprof_now %" PRIu64 " vs CLOCK_MONOTONIC %"
		    PRIu64 " ns\n", shm->unreg_now_ticks, shm->unreg_now_mono);
		RTPROF_CHECK(d > -1000000000 && d < 1000000000);
	}

	/* The control side. */
	RTPROF_CHECK_EQ(shm->start_rc, 0);
	RTPROF_CHECK_EQ(shm->status_rc, 0);
	RTPROF_CHECK_EQ(shm->status.sink_error, 0);
	RTPROF_CHECK_EQ(shm->stop_rc, 0);
	RTPROF_CHECK_EQ(shm->status_after_rc, 0); /* the last session's report */
	RTPROF_CHECK_EQ(shm->status_after.running, 0);
	RTPROF_CHECK_EQ(shm->status_after.sink_error, 0);
	RTPROF_CHECK_EQ(shm->status_after.limit_reached, 0);

	check_dump(dumpfd, monotonic);
	rc = 0;
	close(dumpfd);
	munmap(shm, sizeof(*shm));
	close(shmfd);
	shm = NULL;
	printf("  ok\n");
	return rc;
}

/* ------------------------------------------------------------------ */
/* Signal handlers that record on the thread they interrupt              */
/*
 * rtprof.h: dropped_nested counts "re-entrant call, e.g. from a signal
 * handler". A registered thread records marks as fast as it can with a
 * tiny pool refilled every millisecond (chunk changes and "no free chunk"
 * all the time) while its own signal handler, run some 100000 times a
 * second, records marks and (larger) intervals. Whatever instruction a
 * signal interrupts, the outcome must be a record or a counted drop: the
 * decoded dump holds exactly attempted - dropped records, the drops in the
 * trailer match the thread's own counters, and nothing is corrupted (the
 * ASan build catches a write past a chunk).
 * No seccomp here: returning from a handler is a syscall (rt_sigreturn).
 */

#define RE_SECONDS 3

struct reent {
	_Atomic int started, done;
	int tid;
	uint64_t attempted, loop_attempted, handler_calls, sent;
	struct rtprof_thread_stats st;
	int start_rc, stop_rc;
};

static struct reent *re;
static __thread int re_recorder;
static __thread uint64_t re_handler_calls;

static void
on_sigusr2(int sig)
{
	int e = errno;

	(void)sig;
	if (re_recorder) {
		if (re_handler_calls++ & 1) {
			rtprof_mark("re.signal", RTPROF_CAT_OTHER);
		} else {
			uint64_t t = rtprof_now();

			rtprof_interval("re.signal-interval", RTPROF_CAT_OTHER, t, t);
		}
	}
	errno = e;
}

static void *
re_recorder_main(void *arg)
{
	struct rtprof_thread_stats st;
	struct timespec t0, t;
	uint64_t att = 0, c0;
	sigset_t set;

	(void)arg;
	if (rtprof_thread_register("re-recorder", RTPROF_THREAD_RT) != 0)
		abort();
	re->tid = (int)syscall(SYS_gettid);
	re_recorder = 1;
	atomic_store(&re->started, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0;; i++) {
		rtprof_mark("re.loop", RTPROF_CAT_USER);
		att++;
		if ((i & 1023) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0.tv_sec >= RE_SECONDS)
				break;
		}
	}
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	re->loop_attempted = att;
	/* End right after a chunk take: the dump then carries every drop. */
	if (rtprof_thread_stats_get(&st) != 0)
		abort();
	c0 = st.chunks;
	do {
		rtprof_mark("re.final", RTPROF_CAT_USER);
		att++;
		if (rtprof_thread_stats_get(&st) != 0)
			abort();
		if (st.chunks == c0)
			sched_yield();
	} while (st.chunks == c0);
	re->handler_calls = re_handler_calls;
	re->attempted = att + re_handler_calls;
	re->st = st;
	atomic_store(&re->done, 1);
	return NULL;
}

static int
reent_child(int dumpfd)
{
	struct rtprof_settings set;
	struct sigaction sa;
	pthread_t th;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr2;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR2, &sa, NULL) != 0)
		return 2;
	memset(&set, 0, sizeof(set));
	set.struct_size = sizeof(set);
	set.fd = dumpfd;
	set.chunk_size = 4096;
	set.memory_limit = 8 * (4096 + 256);
	set.prefill = 2;
	set.flush_interval_us = 1000;
	re->start_rc = rtprof_session_start(&set);
	if (re->start_rc != 0)
		return 2;
	if (pthread_create(&th, NULL, re_recorder_main, NULL) != 0)
		return 2;
	while (!atomic_load(&re->started))
		sched_yield();
	/* Pelt it until it is done (the handle stays valid until the join). */
	while (!atomic_load(&re->done)) {
		pthread_kill(th, SIGUSR2);
		re->sent++;
	}
	pthread_join(th, NULL);
	re->stop_rc = rtprof_session_stop();
	return 0;
}

static void
run_reentrancy(void)
{
	char path[] = "/tmp/rtprof-reent-XXXXXX";
	const struct rtprof_thread_stats *st;
	const struct dm_session *s;
	const struct dm_thread *th;
	const struct rtprof_dump_trailer_thread *tt;
	struct dm m;
	uint64_t drops, signal_recs = 0;
	int dumpfd, status;
	pid_t pid;

	printf("== signal handlers recording on the interrupted thread (%d s)\n",
	    RE_SECONDS);
	fflush(stdout);
	dumpfd = mkstemp(path);
	RTPROF_CHECK(dumpfd >= 0);
	unlink(path); /* read back through dumpfd */
	re = mmap(NULL, sizeof(*re), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	RTPROF_CHECK(re != MAP_FAILED);
	memset(re, 0, sizeof(*re));
	pid = fork();
	RTPROF_CHECK(pid >= 0);
	if (pid == 0)
		_exit(reent_child(dumpfd));
	RTPROF_CHECK_EQ(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fprintf(stderr, "FAIL: the child died of signal %d (%s)\n",
		    WTERMSIG(status), strsignal(WTERMSIG(status)));
	RTPROF_CHECK(WIFEXITED(status));
	RTPROF_CHECK_EQ(WEXITSTATUS(status), 0);
	RTPROF_CHECK_EQ(re->start_rc, 0);
	RTPROF_CHECK_EQ(re->stop_rc, 0);
	st = &re->st;
	drops = st->dropped_full + st->dropped_nested + st->outside;
	printf("  %" PRIu64 " signals sent, %" PRIu64 " handled; %" PRIu64
	    " events attempted; dropped_full %" PRIu64 ", dropped_nested %" PRIu64
	    ", chunks %" PRIu64 "\n", re->sent, re->handler_calls, re->attempted,
	    st->dropped_full, st->dropped_nested, st->chunks);
	RTPROF_CHECK_GT(re->handler_calls, 0);
	/* Only a handler's call can be nested; more means a stuck guard. */
	RTPROF_CHECK_LE(st->dropped_nested, re->handler_calls);
	RTPROF_CHECK_EQ(st->outside, 0);

	RTPROF_CHECK_EQ(lseek(dumpfd, 0, SEEK_SET), 0);
	RTPROF_CHECK_EQ(dm_load_fd(&m, dumpfd), 0);
	RTPROF_CHECK_EQ(m.stats.damage, 0);
	RTPROF_CHECK_EQ(m.stats.bad_records, 0);
	RTPROF_CHECK_EQ(m.nsessions, 1);
	s = &m.sessions[0];
	RTPROF_CHECK(s->has_trailer);
	th = dm_find_thread(s, re->tid);
	RTPROF_CHECK(th != NULL);
	for (size_t i = 0; i < th->nrecs; i++) {
		const struct dm_rec *r = &th->recs[i];

		RTPROF_CHECK(r->name != NULL);
		if (strncmp(r->name, "re.signal", 9) == 0)
			signal_recs++;
		else
			RTPROF_CHECK(strcmp(r->name, "re.loop") == 0 ||
			    strcmp(r->name, "re.final") == 0);
	}
	tt = dm_trailer_thread(s, re->tid);
	RTPROF_CHECK(tt != NULL);
	printf("  dump: %zu records (%" PRIu64 " from the handler), expected %"
	    PRIu64 "; trailer: recorded %" PRIu64 ", dropped_full %" PRIu64
	    ", dropped_nested %" PRIu64 "\n", th->nrecs, signal_recs,
	    re->attempted - drops, tt->recorded, tt->dropped_full,
	    tt->dropped_nested);
	RTPROF_CHECK_EQ(th->nrecs, re->attempted - drops);
	RTPROF_CHECK_EQ(tt->recorded, th->nrecs);
	RTPROF_CHECK_EQ(tt->dropped_full, st->dropped_full);
	RTPROF_CHECK_EQ(tt->dropped_nested, st->dropped_nested);
	RTPROF_CHECK_EQ(th->drops_full, st->dropped_full);
	RTPROF_CHECK_EQ(th->drops_nested, st->dropped_nested);
	dm_free(&m);
	close(dumpfd);
	munmap(re, sizeof(*re));
	re = NULL;
	printf("  ok\n");
}

static int
want_part(int argc, char **argv, const char *name)
{
	if (argc <= 1)
		return 1;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return 1;
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--child") == 0) {
		int shmfd = atoi(argv[3]);
		int rc;

		shm = mmap(NULL, sizeof(struct shm), PROT_READ | PROT_WRITE,
		    MAP_SHARED, shmfd, 0);
		if (shm == MAP_FAILED) {
			perror("mmap");
			_exit(2);
		}
		init_long_str();
		rc = child_main(atoi(argv[2]));
		fflush(NULL);
		/* The filtered threads are gone (exit(2)) or spinning: end
		 * the process without running exit handlers. */
		_exit(rc);
	}

	init_long_str();
	setvbuf(stdout, NULL, _IOLBF, 0);
#if !defined(AUDIT_ARCH_SELF)
	printf("SKIP: no seccomp architecture constant for this machine\n");
	return 0;
#else
	{
		void *bt[4];

		/* Load libgcc_s now (backtrace), before any fork. */
		backtrace(bt, 4);
	}
#endif
	/* Parts: seccomp, monotonic, reentrancy (default: all). */
	if (want_part(argc, argv, "seccomp"))
		run_child(argv[0], 0);
	if (want_part(argc, argv, "monotonic"))
		run_child(argv[0], 1);
	if (want_part(argc, argv, "reentrancy"))
		run_reentrancy();
	printf("test_rtsafe: ok\n");
	return 0;
}
