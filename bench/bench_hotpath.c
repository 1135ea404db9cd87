/*
 * bench_hotpath.c - the cost of rtprof's recording calls against a floor
 * and a mutex baseline, in one binary and one run.
 *
 *   bench_hotpath [--json] [--runs N] [--events M] [--lat-events L]
 *                 [--ir FILE] [--only CASE[,CASE...]] [--fifo]
 *                 [--flush-us U] [--prefill P] [--chunk-kib C]
 *                 [--memory-mib M]
 *   bench_hotpath --callgrind CASE --events K     (bench/run_callgrind.sh)
 *   bench_hotpath --list
 *
 * Cases (ns per operation; an operation is one API call pattern):
 *   rdtsc            reference: one rdtsc
 *   floor_inline     rdtsc + 16-byte record in place in a thread-local
 *                    array + release store of the index, inline in this
 *                    binary (local-exec TLS)
 *   floor_shlib      the same, called in librtprof_bench_floor.so (built
 *                    like librtprof), general-dynamic TLS: THE floor the
 *                    targets refer to
 *   floor_shlib_ie   the same library call with initial-exec TLS
 *   mutex_1t         the 16-byte record (rdtsc inside) into one shared
 *                    array under a pthread mutex, one thread
 *   mutex_2t         the same, two threads on two CPUs contending;
 *                    time per event per thread (wall time / events of one
 *                    thread)
 *   mark, interval, marker2, label, counter
 *                    rtprof's public inline API on a registered thread,
 *                    a session streaming to /dev/null with its writer
 *                    thread draining (bench_cases.c)
 *   *_disabled       the same source built with RTPROF_DISABLE: the bare
 *                    loop, subtracted to give "over disabled"
 *
 * Method: the session is started first (so its writer thread is not
 * pinned), then this thread is pinned to CPU 0 (the mutex helper to
 * CPU 1); with --fifo both also run SCHED_FIFO (as an audio thread would),
 * so other processes cannot preempt them. Each case: one warm-up run
 * dropped, then N runs of M operations timed with CLOCK_MONOTONIC around
 * the batch; median and minimum of the per-operation time. A run during
 * which the thread waited for a CPU (its run_delay in
 * /proc/thread-self/schedstat grew by more than 1% of the run) is
 * "disturbed": the median is taken over the undisturbed runs when there
 * are at least 3, and the count is reported. Before every run
 * rtprof_session_dump() waits until the writer has written everything and
 * refilled the thread's empty chunks, so each run starts from the same
 * state; during the run the writer drains concurrently on the other CPU.
 * Drops (no free chunk) are counted per case from rtprof_thread_stats_get().
 *
 * Latency: L operations, each timed alone between two fenced rdtsc reads
 * (lfence; rdtsc; lfence), histogrammed in ticks; the median cost of an
 * empty pair (the *_disabled mark loop) is subtracted; ticks are converted
 * with a TSC rate calibrated against CLOCK_MONOTONIC. The L operations run
 * in batches of 250 000 with a settle() and a pause between batches (see
 * LAT_BATCH: never RT-throttled); a latency target fails when its run
 * dropped events, and every target fails when its case's runs did.
 *
 * Instructions: `valgrind --tool=callgrind --collect-atstart=no
 * --toggle-collect='bench_loop_*'` counts only the timed loops, on the
 * threads running them (the writer thread is not counted).
 * bench/run_callgrind.sh runs each case with two loop lengths and divides
 * the difference, which removes every fixed cost, and writes a file that
 * --ir merges into the report.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "floor.h"
#include "harness.h"

/* ------------------------------------------------------------------ */
/* Floors and baselines                                                 */

static __thread struct floor_tls floor_inline_tls;

/* A shared buffer under a mutex: the simplest thread-safe recorder. */
static struct {
	pthread_mutex_t mu;
	uint64_t idx;
	struct floor_rec buf[FLOOR_RECS];
} mtx = { PTHREAD_MUTEX_INITIALIZER, 0, { { 0, NULL } } };

static inline __attribute__((always_inline)) void
mutex_put(const void *name)
{
	struct floor_rec *r;

	pthread_mutex_lock(&mtx.mu);
	r = &mtx.buf[mtx.idx & (FLOOR_RECS - 1)];
	r->ts = __builtin_ia32_rdtsc();
	r->name = name;
	mtx.idx++;
	pthread_mutex_unlock(&mtx.mu);
}

static inline __attribute__((always_inline)) void
bench_keep(uint64_t v)
{
	__asm__ __volatile__("" : : "r"(v));
}

BENCH_DEFINE(bench_loop_rdtsc, bench_lat_rdtsc, bench_keep(bench_tsc()))
BENCH_DEFINE(bench_loop_floor_inline, bench_lat_floor_inline,
    floor_put(&floor_inline_tls, "bench.floor"))
BENCH_DEFINE(bench_loop_floor_shlib, bench_lat_floor_shlib,
    floor_shlib_record("bench.floor"))
BENCH_DEFINE(bench_loop_floor_shlib_ie, bench_lat_floor_shlib_ie,
    floor_shlib_ie_record("bench.floor"))
BENCH_DEFINE(bench_loop_mutex, bench_lat_mutex, mutex_put("bench.mutex"))

/* ------------------------------------------------------------------ */
/* Case table                                                           */

enum bench_group { G_REF, G_FLOOR, G_BASELINE, G_RTPROF, G_DISABLED };

static const char *const group_names[] = {
	"reference", "floor", "baseline", "rtprof", "rtprof_disabled"
};

struct bench_case {
	const char *name;
	const char *desc;
	enum bench_group group;
	unsigned recs;        /* records per operation (rtprof) */
	unsigned threads;     /* 2: also run on a helper thread on CPU 1 */
	int latency;          /* measure the latency distribution too */
	bench_loop_fn *loop;
	bench_lat_fn *lat;
	const char *off;      /* name of the disabled twin, or NULL */

	/* results */
	int done;
	double median_ns, min_ns;
	unsigned runs_used, runs_disturbed;
	double ir;            /* < 0: unknown */
	uint64_t drops_full, drops_nested, outside;
	int lat_done;
	double lat_ns[5];     /* p50, p99, p99.9, p99.99, max (overhead removed) */
	uint64_t lat_n, lat_over;
	uint64_t lat_drops;
	double lat_wait_ms;   /* time the thread waited for a CPU meanwhile */
	double lat_steal_ms;  /* CPU 0's steal time meanwhile */
};

#define RT_ON(op, nrec, text)                                                  \
	{ .name = #op, .desc = text, .group = G_RTPROF, .recs = nrec,          \
	  .threads = 1, .latency = 1, .loop = bench_loop_##op##_on,            \
	  .lat = bench_lat_##op##_on, .off = #op "_disabled", .ir = -1 },
#define RT_OFF(op, nrec, text)                                                 \
	{ .name = #op "_disabled", .desc = text " (RTPROF_DISABLE)",           \
	  .group = G_DISABLED, .threads = 1, .loop = bench_loop_##op##_off,    \
	  .lat = bench_lat_##op##_off, .ir = -1 },
#define OTHER(nm, text, grp, nthreads, lat_too, fn)                            \
	{ .name = nm, .desc = text, .group = grp, .threads = nthreads,         \
	  .latency = lat_too, .loop = bench_loop_##fn, .lat = bench_lat_##fn,  \
	  .ir = -1 },

static struct bench_case cases[] = {
	OTHER("rdtsc", "one rdtsc (reference)", G_REF, 1, 0, rdtsc)
	OTHER("floor_inline", "rdtsc + 16 B in place + release index; inline, local-exec TLS",
	    G_FLOOR, 1, 1, floor_inline)
	OTHER("floor_shlib", "the floor as a call into a shared library, general-dynamic TLS",
	    G_FLOOR, 1, 1, floor_shlib)
	OTHER("floor_shlib_ie", "the floor as a call into a shared library, initial-exec TLS",
	    G_FLOOR, 1, 0, floor_shlib_ie)
	OTHER("mutex_1t", "16 B record (rdtsc) into a shared array under a pthread mutex, 1 thread",
	    G_BASELINE, 1, 0, mutex)
	OTHER("mutex_2t", "the same, 2 threads contending (per event per thread)",
	    G_BASELINE, 2, 0, mutex)
	BENCH_RT_CASES(RT_ON)
	BENCH_RT_CASES(RT_OFF)
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static struct bench_case *
case_find(const char *name)
{
	for (size_t i = 0; i < NCASES; i++)
		if (strcmp(cases[i].name, name) == 0)
			return &cases[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Running                                                              */

static struct bench_ctx ctx;
static int pinned_main, pinned_helper = -1;
static int have_session, use_fifo, fifo_ok = -1;

/* SCHED_FIFO for the calling thread if --fifo. Return: 1 set, 0 not. */
static int
set_fifo(void)
{
	struct sched_param sp = { .sched_priority = 50 };

	if (!use_fifo)
		return 0;
	return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
}

/* ns the calling thread has spent runnable but waiting for a CPU. */
static uint64_t
run_delay_ns(void)
{
	unsigned long long run = 0, wait = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "re");

	if (f == NULL)
		return 0;
	if (fscanf(f, "%llu %llu", &run, &wait) != 2)
		wait = 0;
	fclose(f);
	return wait;
}

/* Before each run: everything written, the empty chunks refilled. */
static void
settle(void)
{
	if (have_session)
		(void)rtprof_session_dump();
}

struct helper {
	const struct bench_case *bc;
	uint64_t n;
	pthread_barrier_t *bar;
	uint64_t t0, t1, wait;
};

static void *
helper_main(void *arg)
{
	struct helper *h = arg;
	uint64_t w;

	pinned_helper = bench_pin(1) == 0;
	(void)set_fifo();
	pthread_barrier_wait(h->bar);
	w = run_delay_ns();
	h->t0 = bench_now_ns();
	h->bc->loop(&ctx, h->n);
	h->t1 = bench_now_ns();
	h->wait = run_delay_ns() - w;
	return NULL;
}

/* A run is disturbed when a thread of it waited for a CPU for more than
 * 1% of the run. */
static int
disturbed(uint64_t wait, uint64_t elapsed)
{
	return wait * 100 > elapsed;
}

/* Return: ns per operation (per thread for two threads); *dist: disturbed. */
static double
run_once(const struct bench_case *bc, uint64_t n, int *dist)
{
	pthread_barrier_t bar;
	struct helper h = { bc, n, &bar, 0, 0, 0 };
	pthread_t tid;
	uint64_t t0, t1, w;

	if (bc->threads < 2) {
		w = run_delay_ns();
		t0 = bench_now_ns();
		bc->loop(&ctx, n);
		t1 = bench_now_ns();
		*dist = disturbed(run_delay_ns() - w, t1 - t0);
		return (double)(t1 - t0) / (double)n;
	}
	pthread_barrier_init(&bar, NULL, 2);
	if (pthread_create(&tid, NULL, helper_main, &h) != 0) {
		fprintf(stderr, "bench: pthread_create failed\n");
		exit(1);
	}
	pthread_barrier_wait(&bar);
	w = run_delay_ns();
	t0 = bench_now_ns();
	bc->loop(&ctx, n);
	t1 = bench_now_ns();
	w = run_delay_ns() - w;
	pthread_join(tid, NULL);
	pthread_barrier_destroy(&bar);
	/* wall time while both ran their n events */
	if (h.t0 < t0)
		t0 = h.t0;
	if (h.t1 > t1)
		t1 = h.t1;
	*dist = disturbed(w > h.wait ? w : h.wait, t1 - t0);
	return (double)(t1 - t0) / (double)n;
}

static void
stats_now(struct rtprof_thread_stats *st)
{
	memset(st, 0, sizeof(*st));
	(void)rtprof_thread_stats_get(st);
}

static void
run_case(struct bench_case *bc, unsigned runs, uint64_t n)
{
	struct rtprof_thread_stats a, b;
	double all[64], clean[64];
	unsigned nclean = 0;
	int dist;

	stats_now(&a);
	settle();
	(void)run_once(bc, n, &dist); /* warm-up, dropped */
	for (unsigned r = 0; r < runs; r++) {
		settle();
		all[r] = run_once(bc, n, &dist);
		if (!dist)
			clean[nclean++] = all[r];
	}
	stats_now(&b);
	bc->drops_full = b.dropped_full - a.dropped_full;
	bc->drops_nested = b.dropped_nested - a.dropped_nested;
	bc->outside = b.outside - a.outside;
	bc->runs_disturbed = runs - nclean;
	if (nclean >= 3) {
		bc->runs_used = nclean;
		bc->median_ns = bench_median(clean, nclean);
		bc->min_ns = clean[0]; /* sorted by bench_median() */
	} else {
		bc->runs_used = runs;
		bc->median_ns = bench_median(all, runs);
		bc->min_ns = all[0];
	}
	bc->done = 1;
}

/*
 * Latency runs go in batches with a settle() between them, so the writer
 * keeps up (no drops), and a pause after each: a SCHED_FIFO thread may run
 * only kernel.sched_rt_runtime_us of every sched_rt_period_us (950 ms of
 * 1 s here), and one that runs batch after batch is throttled, off its CPU
 * for the rest of the period (milliseconds: the maxima issue 17 found).
 * A pause of a third of the batch keeps the thread under 75% of any
 * period. What still kept the thread off its CPU is named per case: time
 * runnable but waiting (schedstat run_delay: under SCHED_FIFO, throttling
 * or a higher-priority task) and the CPU's steal time (the hypervisor).
 */
#define LAT_BATCH 250000u

/* Sleep a third of @busy_ns (at least 1 ms). */
static void
lat_pause(uint64_t busy_ns)
{
	uint64_t ns = busy_ns / 3 > 1000000 ? busy_ns / 3 : 1000000;
	struct timespec ts = { (time_t)(ns / 1000000000u),
		(long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Steal time of CPU @cpu so far, in ms (/proc/stat, USER_HZ ticks). */
static double
steal_ms(int cpu)
{
	char line[512], want[16];
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "re");
	double ms = 0;
	long hz = sysconf(_SC_CLK_TCK);

	if (f == NULL)
		return 0;
	snprintf(want, sizeof(want), "cpu%d ", cpu);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, want, strlen(want)) != 0)
			continue;
		if (sscanf(line + strlen(want), "%llu %llu %llu %llu %llu %llu %llu %llu",
		    &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8)
			ms = (double)v[7] * 1000.0 / (double)(hz > 0 ? hz : 100);
		break;
	}
	fclose(f);
	return ms;
}

/* Median ticks of an empty fenced rdtsc pair. */
static uint64_t pair_ticks;

static void
run_latency(struct bench_case *bc, uint64_t n, double tsc_per_ns)
{
	struct bench_hist h = { NULL, 0, 0, 0 };
	struct rtprof_thread_stats a, b;
	static const double q[4] = { 0.5, 0.99, 0.999, 0.9999 };

	h.b = calloc(BENCH_HIST_BUCKETS, sizeof(*h.b));
	if (h.b == NULL) {
		fprintf(stderr, "bench: out of memory\n");
		exit(1);
	}
	settle();
	bc->lat(&ctx, n / 100, &h); /* warm-up, dropped */
	memset(h.b, 0, BENCH_HIST_BUCKETS * sizeof(*h.b));
	h.n = h.over = h.max = 0;
	stats_now(&a);
	bc->lat_wait_ms = 0;
	bc->lat_steal_ms = -steal_ms(0);
	for (uint64_t done = 0, k; done < n; done += k) {
		uint64_t w, t0;

		k = n - done < LAT_BATCH ? n - done : LAT_BATCH;
		settle();
		w = run_delay_ns();
		t0 = bench_now_ns();
		bc->lat(&ctx, k, &h);
		t0 = bench_now_ns() - t0;
		bc->lat_wait_ms += (double)(run_delay_ns() - w) / 1e6;
		lat_pause(t0);
	}
	bc->lat_steal_ms += steal_ms(0);
	stats_now(&b);
	for (int i = 0; i < 4; i++) {
		uint64_t t = bench_hist_quantile(&h, q[i]);

		bc->lat_ns[i] = (double)(t > pair_ticks ? t - pair_ticks : 0) / tsc_per_ns;
	}
	bc->lat_ns[4] = (double)(h.max > pair_ticks ? h.max - pair_ticks : 0) / tsc_per_ns;
	bc->lat_n = h.n;
	bc->lat_over = h.over;
	bc->lat_drops = (b.dropped_full - a.dropped_full) +
	    (b.dropped_nested - a.dropped_nested);
	bc->lat_done = 1;
	free(h.b);
}

static uint64_t
measure_pair_ticks(uint64_t n)
{
	struct bench_hist h = { NULL, 0, 0, 0 };
	uint64_t t;

	h.b = calloc(BENCH_HIST_BUCKETS, sizeof(*h.b));
	if (h.b == NULL)
		exit(1);
	bench_lat_mark_off(&ctx, n, &h);
	t = bench_hist_quantile(&h, 0.5);
	free(h.b);
	return t;
}

/* ------------------------------------------------------------------ */
/* Instruction counts from bench/run_callgrind.sh                       */

static int
read_ir(const char *path)
{
	char line[256], name[128];
	double ir;
	FILE *f = fopen(path, "r");

	if (f == NULL) {
		fprintf(stderr, "bench: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		struct bench_case *bc;

		if (line[0] == '#' || sscanf(line, "%127s %lf", name, &ir) != 2)
			continue;
		if ((bc = case_find(name)) != NULL)
			bc->ir = ir;
	}
	fclose(f);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Report                                                               */

/* What the latency run's maximum can be blamed on, from what was seen. */
static const char *
max_cause(const struct bench_case *c)
{
	if (c->lat_ns[4] < 20000)
		return "-";
	if (c->lat_wait_ms * 1e6 >= c->lat_ns[4] * 0.5)
		return fifo_ok > 0 ? "runqueue wait (RT throttle or higher prio)" :
		    "runqueue wait (other tasks)";
	if (c->lat_steal_ms > 0)
		return "hypervisor steal (or an interrupt)";
	return "interrupt or hypervisor (no wait, no steal seen)";
}

static const char *
pf(int ok)
{
	return ok ? "pass" : "fail";
}

#define AUDIO_BUDGET_NS (128 * 1e9 / 48000)

/* Drops of a case's timed runs, of its latency run. */
static uint64_t
drops_of(const struct bench_case *c)
{
	return c->drops_full + c->drops_nested;
}

/* Today's label push + pop (commit d9a07df, callgrind): the "no slower"
 * reference of issue 17. */
#define LABEL_IR_BEFORE 62

static unsigned
compute_targets(struct bench_target *t)
{
	const struct bench_case *fi = case_find("floor_inline");
	const struct bench_case *mk = case_find("mark");
	const struct bench_case *iv = case_find("interval");
	const struct bench_case *ct = case_find("counter");
	const struct bench_case *lb = case_find("label");
	const struct bench_case *m2 = case_find("mutex_2t");
	const struct bench_case *au = case_find("audio");
	const struct bench_case *zc = case_find("zone_cxx");
	const struct bench_case *tx = case_find("text");
	unsigned n = 0;

	t[n++] = (struct bench_target){ "mark_le_1.15x_floor_inline",
		"median ns of rtprof_mark <= 1.15 x floor_inline (like for like: "
		"both inline, no call)",
		mk->median_ns, 1.15 * fi->median_ns, mk->done && fi->done,
		drops_of(mk) };
	t[n++] = (struct bench_target){ "mark_ir_le_30",
		"callgrind instructions per rtprof_mark <= 30",
		mk->ir, 30, mk->ir >= 0, drops_of(mk) };
	t[n++] = (struct bench_target){ "interval_ir_le_55",
		"callgrind instructions per rtprof_begin + rtprof_end <= 55",
		iv->ir, 55, iv->ir >= 0, drops_of(iv) };
	t[n++] = (struct bench_target){ "counter_ir_le_30",
		"callgrind instructions per rtprof_counter_add <= 30",
		ct->ir, 30, ct->ir >= 0, drops_of(ct) };
	t[n++] = (struct bench_target){ "label_ir_no_more_than_before",
		"callgrind instructions per label push + pop <= 62 (d9a07df)",
		lb->ir, LABEL_IR_BEFORE, lb->ir >= 0, drops_of(lb) };
	t[n++] = (struct bench_target){ "interval_3x_faster_than_mutex_2t",
		"begin + end <= (2 records x mutex_2t per record) / 3",
		iv->median_ns, 2 * m2->median_ns / 3, iv->done && m2->done,
		drops_of(iv) };
	/* Issue 19: a zone costs what an interval does, a text marker
	 * (19-byte copy) what an instant marker does, give or take. */
	t[n++] = (struct bench_target){ "zone_cxx_le_1.25x_interval",
		"median ns of an rtprof::Zone <= 1.25 x rtprof_begin + rtprof_end",
		zc->median_ns, 1.25 * iv->median_ns, zc->done && iv->done,
		drops_of(zc) };
	t[n++] = (struct bench_target){ "text_le_1.5x_mark",
		"median ns of rtprof_text (19 B) <= 1.5 x rtprof_mark",
		tx->median_ns, 1.5 * mk->median_ns, tx->done && mk->done,
		drops_of(tx) };
	t[n++] = (struct bench_target){ "mark_p9999_le_100ns",
		"p99.99 latency of rtprof_mark <= 100 ns",
		mk->lat_ns[3], 100, mk->lat_done, mk->lat_drops };
	/* Issue 6: tracing one 128-frame / 48 kHz callback (2.667 ms). */
	t[n++] = (struct bench_target){ "audio_cb_le_0.1pct_budget",
		"median % of a 128-frame / 48 kHz budget to trace a callback "
		"(begin + end + counters) <= 0.1",
		au->median_ns / AUDIO_BUDGET_NS * 100, 0.1, au->done,
		drops_of(au) };
	t[n++] = (struct bench_target){ "audio_cb_p9999_le_0.1pct_budget",
		"the same at p99.99 of the latency run <= 0.1",
		au->lat_ns[3] / AUDIO_BUDGET_NS * 100, 0.1, au->lat_done,
		au->lat_drops };
	return n;
}

static void
json_num(const char *key, double v, int known, const char *sep)
{
	if (known)
		printf("\"%s\": %.3f%s", key, v, sep);
	else
		printf("\"%s\": null%s", key, sep);
}

static void
report(FILE *out, int json, const struct rtprof_session_status *ss,
    const struct rtprof_settings *set, double tsc_per_ns, unsigned runs,
    uint64_t events, uint64_t lat_events)
{
	const struct bench_case *fs = case_find("floor_shlib");
	const struct bench_case *fi = case_find("floor_inline");
	struct bench_target t[12];
	unsigned nt = compute_targets(t);

	fprintf(out, "\nbench_hotpath: %u runs x %" PRIu64 " ops, median (min); "
	    "TSC %.3f GHz; pinned: main %s, helper %s; %s\n", runs, events,
	    tsc_per_ns, pinned_main ? "cpu0" : "no",
	    pinned_helper < 0 ? "-" : pinned_helper ? "cpu1" : "no",
	    fifo_ok > 0 ? "SCHED_FIFO" : "SCHED_OTHER");
	fprintf(out, "session: stream to /dev/null, chunk %u KiB, prefill %u, "
	    "flush every %u us, memory limit %" PRIu64 " MiB\n",
	    set->chunk_size >> 10, set->prefill, set->flush_interval_us,
	    set->memory_limit >> 20);
	fprintf(out, "%-18s %8s %8s %7s %9s %8s %9s %7s %5s  %s\n", "case", "ns/op",
	    "min", "Ir/op", "x f_shlib", "x f_inl", "-disabled", "drops",
	    "dist", "");
	for (size_t i = 0; i < NCASES; i++) {
		const struct bench_case *c = &cases[i];
		const struct bench_case *off = c->off ? case_find(c->off) : NULL;
		char ir[32] = "-", d[32] = "", drops[32] = "-";

		if (!c->done)
			continue;
		if (c->ir >= 0)
			snprintf(ir, sizeof(ir), "%.1f", c->ir);
		if (off != NULL && off->done)
			snprintf(d, sizeof(d), "%.2f", c->median_ns - off->median_ns);
		if (c->group == G_RTPROF)
			snprintf(drops, sizeof(drops), "%" PRIu64,
			    c->drops_full + c->drops_nested);
		fprintf(out, "%-18s %8.2f %8.2f %7s %9.2f %8.2f %9s %7s %2u/%-2u  %s\n",
		    c->name, c->median_ns, c->min_ns, ir,
		    c->median_ns / fs->median_ns, c->median_ns / fi->median_ns, d,
		    drops, c->runs_disturbed, runs,
		    c->drops_full + c->drops_nested + c->outside ?
		    "(DROPS/OUTSIDE EVENTS: figure distorted)" : "");
	}
	fprintf(out, "\nlatency per op over %" PRIu64 " ops, ns, fenced rdtsc pair "
	    "(%.1f ns) subtracted:\n", lat_events, (double)pair_ticks / tsc_per_ns);
	fprintf(out, "%-18s %8s %8s %8s %8s %9s %8s %8s %8s  %s\n", "case", "p50",
	    "p99", "p99.9", "p99.99", "max", "drops", "wait ms", "steal ms",
	    "max from");
	for (size_t i = 0; i < NCASES; i++) {
		const struct bench_case *c = &cases[i];

		if (!c->lat_done)
			continue;
		fprintf(out, "%-18s %8.1f %8.1f %8.1f %8.1f %9.1f %8" PRIu64
		    " %8.2f %8.0f  %s\n", c->name, c->lat_ns[0], c->lat_ns[1],
		    c->lat_ns[2], c->lat_ns[3], c->lat_ns[4], c->lat_drops,
		    c->lat_wait_ms, c->lat_steal_ms, max_cause(c));
	}
	fprintf(out, "\ntargets:\n");
	for (unsigned i = 0; i < nt; i++)
		fprintf(out, "  %-34s %-7s %8.2f vs limit %8.2f  (%s)%s\n",
		    t[i].name, t[i].known ? pf(bench_target_pass(&t[i])) :
		    "unknown", t[i].value, t[i].limit, t[i].rule,
		    t[i].drops ? " [its run dropped events]" : "");
	fprintf(out, "\nsession: %" PRIu64 " bytes, %" PRIu64 " chunks written, %"
	    PRIu64 " lost, sink error %d\n", ss->bytes_written,
	    ss->chunks_written, ss->chunks_lost, ss->sink_error);

	if (!json)
		return;
	printf("{\n\"machine\": {\"cpus\": %ld, \"tsc_ghz\": %.4f, "
	    "\"pinned_main\": %s, \"pinned_helper\": %s, \"sched\": \"%s\"},\n",
	    sysconf(_SC_NPROCESSORS_ONLN), tsc_per_ns,
	    pinned_main ? "true" : "false", pinned_helper > 0 ? "true" : "false",
	    fifo_ok > 0 ? "SCHED_FIFO" : "SCHED_OTHER");
	printf("\"method\": {\"runs\": %u, \"ops_per_run\": %" PRIu64
	    ", \"latency_ops\": %" PRIu64 ", \"stat\": \"median of undisturbed "
	    "runs, ns per op\", \"session\": {\"mode\": \"stream\", \"sink\": "
	    "\"/dev/null\", \"chunk_size\": %u, \"prefill\": %u, "
	    "\"flush_interval_us\": %u, \"memory_limit\": %" PRIu64 "}},\n",
	    runs, events, lat_events, set->chunk_size, set->prefill,
	    set->flush_interval_us, set->memory_limit);
	printf("\"cases\": [\n");
	for (size_t i = 0, first = 1; i < NCASES; i++) {
		const struct bench_case *c = &cases[i];
		const struct bench_case *off = c->off ? case_find(c->off) : NULL;
		uint64_t drops = c->drops_full + c->drops_nested;

		if (!c->done)
			continue;
		printf("%s  {\"name\": \"%s\", \"group\": \"%s\", \"desc\": \"%s\", "
		    "\"records_per_op\": %u, ", first ? "" : ",\n", c->name,
		    group_names[c->group], c->desc, c->recs);
		first = 0;
		json_num("median_ns", c->median_ns, 1, ", ");
		json_num("min_ns", c->min_ns, 1, ", ");
		printf("\"runs_used\": %u, \"runs_disturbed\": %u, ", c->runs_used,
		    c->runs_disturbed);
		json_num("ir", c->ir, c->ir >= 0, ", ");
		json_num("ratio_floor_shlib", c->median_ns / fs->median_ns, 1, ", ");
		json_num("ratio_floor_inline", c->median_ns / fi->median_ns, 1, ", ");
		json_num("ir_ratio_floor_shlib", c->ir / fs->ir, c->ir >= 0 && fs->ir > 0, ", ");
		json_num("ns_over_disabled", off ? c->median_ns - off->median_ns : 0,
		    off != NULL && off->done, ", ");
		json_num("ir_over_disabled", off ? c->ir - off->ir : 0,
		    off != NULL && c->ir >= 0 && off->ir >= 0, ", ");
		printf("\"drops\": %" PRIu64 ", \"dropped_full\": %" PRIu64
		    ", \"dropped_nested\": %" PRIu64 ", \"outside\": %" PRIu64
		    ", \"distorted_by_drops\": %s}", drops, c->drops_full,
		    c->drops_nested, c->outside, drops + c->outside ? "true" : "false");
	}
	printf("\n],\n\"latency\": {\n  \"ops\": %" PRIu64 ", \"pair_overhead_ns\": %.2f,\n",
	    lat_events, (double)pair_ticks / tsc_per_ns);
	printf("  \"cases\": {");
	for (size_t i = 0, first = 1; i < NCASES; i++) {
		const struct bench_case *c = &cases[i];

		if (!c->lat_done)
			continue;
		printf("%s\n    \"%s\": {\"p50_ns\": %.1f, \"p99_ns\": %.1f, "
		    "\"p99_9_ns\": %.1f, \"p99_99_ns\": %.1f, \"max_ns\": %.1f, "
		    "\"ops\": %" PRIu64 ", \"over_histogram\": %" PRIu64
		    ", \"drops\": %" PRIu64 ", \"cpu_wait_ms\": %.3f, "
		    "\"steal_ms\": %.0f, \"max_from\": \"%s\"}",
		    first ? "" : ",", c->name, c->lat_ns[0], c->lat_ns[1],
		    c->lat_ns[2], c->lat_ns[3], c->lat_ns[4], c->lat_n, c->lat_over,
		    c->lat_drops, c->lat_wait_ms, c->lat_steal_ms, max_cause(c));
		first = 0;
	}
	printf("\n  }\n},\n\"targets\": {");
	for (unsigned i = 0; i < nt; i++)
		printf("%s\n  \"%s\": \"%s\"", i ? "," : "", t[i].name,
		    t[i].known ? pf(bench_target_pass(&t[i])) : "unknown");
	printf("\n},\n\"target_details\": {");
	for (unsigned i = 0; i < nt; i++) {
		printf("%s\n  \"%s\": {\"rule\": \"%s\", ", i ? "," : "", t[i].name,
		    t[i].rule);
		json_num("value", t[i].value, t[i].known, ", ");
		printf("\"drops\": %" PRIu64 ", ", t[i].drops);
		json_num("limit", t[i].limit, 1, "}");
	}
	printf("\n},\n\"session\": {\"bytes_written\": %" PRIu64
	    ", \"chunks_written\": %" PRIu64 ", \"chunks_lost\": %" PRIu64
	    ", \"sink_error\": %d}\n}\n", ss->bytes_written, ss->chunks_written,
	    ss->chunks_lost, ss->sink_error);
}

/* ------------------------------------------------------------------ */

static void
usage(void)
{
	fprintf(stderr,
	    "usage: bench_hotpath [--json] [--runs N] [--events M] [--lat-events L]\n"
	    "                     [--ir FILE] [--only CASE,...] [--fifo]\n"
	    "                     [--flush-us U] [--prefill P] [--chunk-kib C]\n"
	    "                     [--memory-mib M]\n"
	    "       bench_hotpath --callgrind CASE [--events K]\n"
	    "       bench_hotpath --list\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static const struct rtprof_marker_schema schema2 = {
		.name = "bench.marker2",
		.category = RTPROF_CAT_OTHER,
		.nfields = 2,
		.fields = {
			{ "a", NULL, "integer", RTPROF_FIELD_I64 },
			{ "b", NULL, "integer", RTPROF_FIELD_I64 },
		},
	};
	struct rtprof_settings set;
	struct rtprof_session_status ss;
	unsigned runs = 11, flush_us = 1000, prefill = 64, chunk_kib = 1024;
	unsigned memory_mib = 0;
	uint64_t events = 200000, lat_events = 10000000;
	const char *irfile = NULL, *cg = NULL, *only = NULL;
	int json = 0, rc, fd;
	double tsc_per_ns;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--json") == 0)
			json = 1;
		else if (strcmp(a, "--list") == 0) {
			for (size_t k = 0; k < NCASES; k++)
				printf("%s\t%u\t%s\n", cases[k].name,
				    cases[k].threads, cases[k].desc);
			return 0;
		} else if (i + 1 < argc && strcmp(a, "--runs") == 0)
			runs = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (i + 1 < argc && strcmp(a, "--events") == 0)
			events = strtoull(argv[++i], NULL, 0);
		else if (i + 1 < argc && strcmp(a, "--lat-events") == 0)
			lat_events = strtoull(argv[++i], NULL, 0);
		else if (i + 1 < argc && strcmp(a, "--ir") == 0)
			irfile = argv[++i];
		else if (i + 1 < argc && strcmp(a, "--callgrind") == 0)
			cg = argv[++i];
		else if (i + 1 < argc && strcmp(a, "--only") == 0)
			only = argv[++i];
		else if (strcmp(a, "--fifo") == 0)
			use_fifo = 1;
		else if (i + 1 < argc && strcmp(a, "--flush-us") == 0)
			flush_us = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (i + 1 < argc && strcmp(a, "--prefill") == 0)
			prefill = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (i + 1 < argc && strcmp(a, "--chunk-kib") == 0)
			chunk_kib = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (i + 1 < argc && strcmp(a, "--memory-mib") == 0)
			memory_mib = (unsigned)strtoul(argv[++i], NULL, 0);
		else
			usage();
	}
	if (runs == 0 || runs > 64 || events == 0)
		usage();

	ctx.type2 = rtprof_marker_type_declare(&schema2);
	ctx.counter = rtprof_counter_declare("bench.counter", "bench", "bench counter");
	{
		static rtprof_audio audio;

		ctx.audio = &audio;
		if (rtprof_audio_init(&audio, "bench") != 0) {
			fprintf(stderr, "bench_hotpath: rtprof_audio_init failed\n");
			return 1;
		}
	}
	if (ctx.type2 == NULL || ctx.counter == NULL) {
		fprintf(stderr, "bench: declare failed: %s\n", strerror(errno));
		return 1;
	}
	if ((rc = rtprof_thread_register("bench", RTPROF_THREAD_RT)) != 0) {
		fprintf(stderr, "bench: register: %s\n", rtprof_strerror(rc));
		return 1;
	}
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		perror("bench: /dev/null");
		return 1;
	}
	memset(&set, 0, sizeof(set));
	set.struct_size = sizeof(set);
	set.mode = RTPROF_MODE_STREAM;
	set.fd = fd;
	/* The pool is allocated and touched at session start: under
	 * valgrind (--callgrind) 1 GiB would take minutes, and K <= 1e6
	 * operations need far less. */
	if (memory_mib == 0)
		memory_mib = cg != NULL ? 128 : 1024;
	set.memory_limit = (uint64_t)memory_mib << 20;
	set.chunk_size = chunk_kib << 10;
	set.prefill = prefill;
	set.flush_interval_us = flush_us;
	/* Started before pinning: the writer thread inherits no affinity. */
	if ((rc = rtprof_session_start(&set)) != 0) {
		fprintf(stderr, "bench: session start: %s\n", rtprof_strerror(rc));
		return 1;
	}
	have_session = 1;
	pinned_main = bench_pin(0) == 0;
	fifo_ok = set_fifo();
	settle();

	if (cg != NULL) {
		/* One loop of exactly `events` operations, nothing else timed. */
		struct bench_case *bc = case_find(cg);

		if (bc == NULL) {
			fprintf(stderr, "bench: unknown case %s\n", cg);
			return 2;
		}
		int dist;

		(void)run_once(bc, events, &dist);
		rtprof_session_stop();
		return 0;
	}

	if (irfile != NULL && read_ir(irfile) != 0)
		return 1;
	tsc_per_ns = bench_tsc_per_ns(200);
	for (size_t i = 0; i < NCASES; i++)
		if (bench_selected(only, cases[i].name))
			run_case(&cases[i], runs, events);
	pair_ticks = measure_pair_ticks(1000000);
	for (size_t i = 0; i < NCASES; i++)
		if (cases[i].latency && lat_events > 0 && bench_selected(only, cases[i].name))
			run_latency(&cases[i], lat_events, tsc_per_ns);

	rc = rtprof_session_stop();
	memset(&ss, 0, sizeof(ss));
	(void)rtprof_session_status_get(&ss);
	if (rc != 0)
		fprintf(stderr, "bench: session stop: %s\n", rtprof_strerror(rc));
	if (!case_find("floor_shlib")->done || !case_find("floor_inline")->done) {
		fprintf(stderr, "bench: the floors must be among the cases run\n");
		return 1;
	}
	report(json ? stderr : stdout, json, &ss, &set, tsc_per_ns, runs, events,
	    lat_events);
	close(fd);
	return 0;
}
