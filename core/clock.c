/*
 * clock.c - choose the tick clock and calibrate it against CLOCK_MONOTONIC.
 *
 * x86: the TSC, when the CPU says it is invariant (CPUID 0x80000007 EDX bit
 * 8) and the kernel trusts it (clocksource "tsc"); aarch64: the virtual
 * counter cntvct_el0 with its architected frequency (Linux always lets EL0
 * read it; on a CPU with a counter erratum the kernel traps the read and
 * returns a corrected value); otherwise, armhf included (see below),
 * CLOCK_MONOTONIC through the vDSO, in ns. RTPROF_CLOCK=monotonic in the
 * environment forces CLOCK_MONOTONIC. The exact rate of each session also
 * follows from its start and stop clock pairs, which the dump carries.
 *
 * armhf (32-bit ARMv7) reads no counter inline: CNTVCT (mrrc p15, 1, c14)
 * exists only on cores with the Generic Timer extension (Cortex-A7/A15/A17,
 * ARMv8 in AArch32), not on the Cortex-A5/A8/A9 of many armhf audio and
 * embedded boards, where it is an undefined instruction (SIGILL); where it
 * exists, a 32-bit kernel grants user access only when no counter erratum
 * workaround is active and does not emulate a trapped read (SIGILL again);
 * nothing visible to user space (AT_HWCAP has no bit for it) says which,
 * short of trying it under a process-wide SIGILL handler, which a library
 * must not install behind its host's back; and 32-bit boot loaders often
 * leave CNTFRQ unset. CLOCK_MONOTONIC through the vDSO reads that same
 * counter when the kernel found it safe, and is correct everywhere.
 * (Where a 64-bit kernel runs armhf programs without a compat vDSO,
 * clock_gettime is a system call: there rtprof_now() is not free of them.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "core.h"

static double clock_rate;  /* ticks per second */
static uint64_t cal_ticks, cal_mono;
static pthread_once_t rate_once = PTHREAD_ONCE_INIT;

/* Clock @id in ns. Context: any thread but an RT one (the vDSO). */
uint64_t
rtprof__clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The same clock as rtprof_now() on every thread. */
static uint64_t
read_ticks(void)
{
	return rtprof__now_fallback();
}

#if defined(__x86_64__) || defined(__i386__)
static int
tsc_usable(void)
{
	unsigned a, b, c, d;
	char src[64] = "";
	FILE *f;

	if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8)))
		return 0;
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (f != NULL) {
		if (fgets(src, sizeof(src), f) == NULL)
			src[0] = 0;
		fclose(f);
	}
	/* The kernel demoted the TSC (unstable across CPUs): do not trust it. */
	return strncmp(src, "tsc", 3) == 0;
}
#endif

/* Context: library constructor (main thread before main()). */
void
rtprof__clock_init(void)
{
	const char *force = getenv("RTPROF_CLOCK");
	int monotonic = force != NULL && strcmp(force, "monotonic") == 0;

	rtprof__clock_kind = 0;
	clock_rate = 1e9;
#if defined(__x86_64__) || defined(__i386__)
	if (!monotonic && tsc_usable())
		rtprof__clock_kind = 1;
#elif defined(__aarch64__)
	if (!monotonic) {
		uint64_t f;
		__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
		/* 0: the firmware never set it; the kernel took the rate
		 * from the device tree, and so must we (monotonic). */
		if (f != 0) {
			rtprof__clock_kind = 2;
			clock_rate = (double)f;
		}
	}
#else
	(void)monotonic;        /* armhf and the rest: monotonic anyway */
#endif
	cal_mono = rtprof__clock_ns(CLOCK_MONOTONIC);
	cal_ticks = read_ticks();
}

/* Context: any thread (reads a value fixed at load time). */
int
rtprof__clock_is_tsc(void)
{
	return rtprof__clock_kind != 0;
}

/* Context: any thread (reads a value fixed at load time). */
const char *
rtprof__clock_source(void)
{
	return rtprof__clock_kind == 1 ? "tsc" : rtprof__clock_kind == 2 ? "cntvct" : "monotonic";
}

/* Context: any non-RT thread. */
void
rtprof__clock_pair(uint64_t *ticks, uint64_t *mono, uint64_t *wall)
{
	/* Read the tick clock between two MONOTONIC reads and take the
	 * tightest of a few tries, so the pair is within ~50 ns. */
	uint64_t best = UINT64_MAX;

	*ticks = *mono = 0;     /* the first try always replaces them */
	for (int i = 0; i < 5; i++) {
		uint64_t m0 = rtprof__clock_ns(CLOCK_MONOTONIC);
		uint64_t t = read_ticks();
		uint64_t m1 = rtprof__clock_ns(CLOCK_MONOTONIC);

		if (m1 - m0 < best) {
			best = m1 - m0;
			*ticks = t;
			*mono = m0 + (m1 - m0) / 2;
		}
	}
	*wall = rtprof__clock_ns(CLOCK_REALTIME);
}

/*
 * RTPROF_TICK_RATE (set by `rtprof record`, which measured the TSC once
 * for the whole run): taken instead of sleeping 20 ms in every recorded
 * process, when plausible: a rate of 100 MHz to 100 GHz, and within 0.5%
 * of this process's own two-point measurement from its constructor to
 * now when at least 2 ms passed (the pair error is ~100 ns). The exact
 * rate of each session still follows from its start and stop clock
 * pairs (the dump carries them). Context: calibrate(). Return: 1 taken.
 */
static int
rate_from_env(void)
{
	const char *v = getenv("RTPROF_TICK_RATE");
	uint64_t t, m, w;
	double r, measured;
	char *end;

	if (v == NULL || rtprof__clock_kind != 1)
		return 0;
	r = strtod(v, &end);
	if (end == v || *end != '\0' || !(r > 1e8 && r < 1e11))
		return 0;
	rtprof__clock_pair(&t, &m, &w);
	if (m - cal_mono >= 2000000u) {
		measured = (double)(t - cal_ticks) * 1e9 /
		    (double)(m - cal_mono);
		if (measured < r * 0.995 || measured > r * 1.005)
			return 0;
	}
	clock_rate = r;
	return 1;
}

static void
calibrate(void)
{
	uint64_t t, m, w, elapsed;
	double measured;

	if (rtprof__clock_kind == 0 || rate_from_env())
		return;
	/* At least 20 ms between the pairs: error below 1e-5 with ~100 ns of
	 * pair uncertainty. */
	elapsed = rtprof__clock_ns(CLOCK_MONOTONIC) - cal_mono;
	if (elapsed < 20000000u) {
		struct timespec ts = { 0, (long)(20000000u - elapsed) };
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	rtprof__clock_pair(&t, &m, &w);
	measured = (double)(t - cal_ticks) * 1e9 / (double)(m - cal_mono);
	/* TSC: the measured rate. cntvct: CNTFRQ_EL0, exact, unless the
	 * firmware set it wrong (the kernel then uses the device tree's). */
	if (rtprof__clock_kind == 1 || measured < clock_rate * 0.99 ||
	    measured > clock_rate * 1.01)
		clock_rate = measured;
}

/* Context: any non-RT thread; the first call may sleep up to 20 ms. */
double
rtprof__clock_rate(void)
{
	pthread_once(&rate_once, calibrate);
	return clock_rate;
}

/* Context: any non-RT thread; may sleep once (calibration). */
RTPROF_API double
rtprof_ticks_per_second(void)
{
	return rtprof__clock_rate();
}
