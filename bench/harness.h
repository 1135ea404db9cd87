/*
 * harness.h - the one benchmark harness of rtprof (style.md point 14):
 * timing, pinning, TSC calibration, medians, latency histograms, and the
 * macro that defines a benchmark's timed loops from one operation.
 *
 * Every timed operation is defined once with BENCH_DEFINE(), which makes
 * two out-of-line functions:
 *   bench_loop_<name>(ctx, n)      n operations back to back; the
 *                                  throughput loop, and the function that
 *                                  callgrind's --toggle-collect=bench_loop_*
 *                                  counts (bench/run_callgrind.sh);
 *   bench_lat_<name>(ctx, n, h)    n operations, each timed alone with a
 *                                  fenced rdtsc pair into histogram h.
 * A compiler barrier follows each operation in both, so the loop keeps
 * one operation per iteration and the disabled build (RTPROF_DISABLE)
 * measures the bare loop.
 *
 * Context: benchmark threads only; nothing here is part of the library.
 */
#ifndef RTPROF_BENCH_HARNESS_H
#define RTPROF_BENCH_HARNESS_H

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rtprof.h"

#define BENCH_LOOP __attribute__((noinline, used))
#define BENCH_BARRIER() __asm__ __volatile__("" : : : "memory")
/* A dynamic text (a file name) the compiler cannot see: no constant
 * folding of its length or copy. */
#define BENCH_TEXT "bench-file-0001.wav"       /* 19 bytes */
static inline const char *
bench_text(void)
{
	static char buf[32] = BENCH_TEXT;
	const char *p = buf;

	__asm__("" : "+r"(p));
	return p;
}

/* What a benchmark loop may use; set up once by the driver. */
struct bench_ctx {
	const rtprof_marker_type *type2; /* a marker type with two i64 fields */
	rtprof_counter *counter;
	rtprof_audio *audio;             /* an audio callback site */
};

/* Latency histogram in TSC ticks: one bucket per tick, then overflow. */
#define BENCH_HIST_BUCKETS (1u << 16)

struct bench_hist {
	uint32_t *b;       /* BENCH_HIST_BUCKETS counts */
	uint64_t n;        /* samples */
	uint64_t over;     /* samples >= BENCH_HIST_BUCKETS ticks */
	uint64_t max;      /* largest sample, ticks */
};

static inline uint64_t
bench_tsc(void)
{
	return __builtin_ia32_rdtsc();
}

/* A fenced timestamp: earlier instructions finish before, later ones do
 * not start before (lfence on both sides of rdtsc). */
static inline __attribute__((always_inline)) uint64_t
bench_tsc_fenced(void)
{
	uint64_t t;

	__builtin_ia32_lfence();
	t = __builtin_ia32_rdtsc();
	__builtin_ia32_lfence();
	return t;
}

static inline __attribute__((always_inline)) void
bench_hist_add(struct bench_hist *h, uint64_t d)
{
	h->n++;
	if (d > h->max)
		h->max = d;
	if (d < BENCH_HIST_BUCKETS)
		h->b[d]++;
	else
		h->over++;
}

/* Smallest tick count at or below which a fraction q of samples lie. */
static inline uint64_t
bench_hist_quantile(const struct bench_hist *h, double q)
{
	uint64_t want = (uint64_t)(q * (double)h->n + 0.999999), acc = 0;

	if (want == 0)
		want = 1;
	for (uint64_t i = 0; i < BENCH_HIST_BUCKETS; i++) {
		acc += h->b[i];
		if (acc >= want)
			return i;
	}
	return h->max;
}

static inline uint64_t
bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Pin the calling thread to @cpu. Return: 0 or -1 (ignored by callers
 * that can live without it; the result is reported). */
static inline int
bench_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* TSC ticks per ns, measured against CLOCK_MONOTONIC over @ms ms. */
static inline double
bench_tsc_per_ns(unsigned ms)
{
	struct timespec d = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	uint64_t n0 = bench_now_ns(), t0 = bench_tsc();
	uint64_t n1, t1;

	while (nanosleep(&d, &d) != 0)
		;
	n1 = bench_now_ns();
	t1 = bench_tsc();
	return (double)(t1 - t0) / (double)(n1 - n0);
}

static inline int
bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of @n values (sorts @v). */
static inline double
bench_median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * BENCH_DEFINE(loop, lat, ...) - define the throughput loop @loop and the
 * latency loop @lat of one operation, the statements in the variadic part
 * (they may use `c`, the const struct bench_ctx *, and `i`, the iteration).
 */
#define BENCH_DEFINE(loop, lat, ...)                                           \
	BENCH_LOOP void                                                        \
	loop(const struct bench_ctx *c, uint64_t n)                            \
	{                                                                      \
		(void)c;                                                       \
		for (uint64_t i = 0; i < n; i++) {                             \
			__VA_ARGS__;                                           \
			BENCH_BARRIER();                                       \
		}                                                              \
	}                                                                      \
	BENCH_LOOP void                                                        \
	lat(const struct bench_ctx *c, uint64_t n, struct bench_hist *h)       \
	{                                                                      \
		(void)c;                                                       \
		for (uint64_t i = 0; i < n; i++) {                             \
			uint64_t t0_ = bench_tsc_fenced();                     \
			__VA_ARGS__;                                           \
			BENCH_BARRIER();                                       \
			bench_hist_add(h, bench_tsc_fenced() - t0_);           \
		}                                                              \
	}

typedef void bench_loop_fn(const struct bench_ctx *c, uint64_t n);
typedef void bench_lat_fn(const struct bench_ctx *c, uint64_t n,
    struct bench_hist *h);

/*
 * The rtprof operations, each built twice (bench/bench_cases.c): with the
 * library (suffix _on) and with RTPROF_DISABLE (suffix _off).
 * X(name, records written per operation, description)
 */
#define BENCH_RT_CASES(X)                                                      \
	X(mark, 1, "rtprof_mark: instant marker")                              \
	X(interval, 2, "rtprof_begin + rtprof_end: one interval")              \
	X(marker2, 1, "typed marker: open + 2x put_i64 + close")               \
	X(label, 0, "rtprof_label_push + rtprof_label_pop")                    \
	X(counter, 1, "rtprof_counter_add")                                    \
	X(audio, 3, "rtprof_audio_begin + _end: one traced 128-frame callback") \
	X(zone, 2, "rtprof_zone_begin + rtprof_zone_end: one zone (C)")        \
	X(zone_cxx, 2, "rtprof::Zone in a scope: one zone (C++)")              \
	X(zone_text_cxx, 3, "rtprof::Zone + .text(19 B): a zone with a text")  \
	X(text, 1, "rtprof_text: instant marker with a 19-byte text")          \
	X(frame, 1, "rtprof_frame_mark_budget: one frame mark")

#ifdef __cplusplus
extern "C" {
#endif
#define BENCH_DECLARE_RT(name, recs, desc)                                     \
	bench_loop_fn bench_loop_##name##_on, bench_loop_##name##_off;         \
	bench_lat_fn bench_lat_##name##_on, bench_lat_##name##_off;
BENCH_RT_CASES(BENCH_DECLARE_RT)
#undef BENCH_DECLARE_RT
#ifdef __cplusplus
}
#endif

/* Is @name one of the comma-separated @only (NULL: everything)? */
static inline int
bench_selected(const char *only, const char *name)
{
	size_t n = strlen(name);
	const char *p = only;

	if (only == NULL)
		return 1;
	while ((p = strstr(p, name)) != NULL) {
		if ((p == only || p[-1] == ',') && (p[n] == ',' || p[n] == 0))
			return 1;
		p += n;
	}
	return 0;
}

/* A benchmark's target: @value measured against @limit (@rule says how). */
struct bench_target {
	const char *name;
	const char *rule;
	double value, limit;
	int known;              /* measured in this run */
	uint64_t drops;         /* events its run(s) dropped: > 0 fails it */
};

/* A target passes when measured, without drops, within its limit. */
static inline int
bench_target_pass(const struct bench_target *t)
{
	return t->known && t->drops == 0 && t->value <= t->limit;
}

#endif /* RTPROF_BENCH_HARNESS_H */
