/*
 * bench_sustained.c - sustained recording: N threads record continuously
 * while the writer thread drains the session to a file. For each N (1, 2,
 * one per CPU) the highest event rate with no drop, per thread and in
 * total, and the writer's MB/s against a plain write() loop of the same
 * chunk size to the same file, in the same run.
 *
 *   bench_sustained [--threads N[,N...]] [--seconds S] [--probe-s P]
 *                   [--chunk-kib C] [--prefill K] [--memory-mib M]
 *                   [--flush-us U] [--file PATH] [--start-rate R] [--rate R]
 *                   [--trim-mib T] [--floor-ring-mib F] [--payload B]
 *                   [--fifo] [--writer-prio P] [--json]
 *
 * --payload B: each event is a typed marker carrying B bytes of text (in
 * string fields of at most RTPROF_MAX_STRING bytes; B <= 2550) instead of
 * an rtprof_mark of 22 bytes. A mark measures the recording threads: on
 * 2 vCPUs they cannot produce bytes as fast as write() takes them, so the
 * writer's MB/s is theirs. Records of ~1 KB measure the writer's own
 * throughput, which is what the comparison with write() is about.
 *
 * Method. A run: a session streams to PATH (truncated; RTPROF_MODE_STREAM,
 * chunk C KiB, prefill K, memory_limit M MiB: the buffer between the
 * threads and the writer is bounded, so a rate the writer cannot sustain
 * drops within the run); N registered threads each record R rtprof_mark
 * events per second, paced in 1 ms steps on an absolute CLOCK_MONOTONIC
 * grid (R/1000 marks, then clock_nanosleep to the next step; a thread that
 * falls behind records its backlog without sleeping), for S seconds; then
 * the session stops (the dump is complete). A run passes when no event
 * was dropped (rtprof_thread_stats_get: dropped_full, dropped_nested, in
 * every thread), no chunk was lost (session status chunks_lost), and every
 * thread offered its full count within S + 5% (the CPU kept up).
 *
 * Search: probes of P seconds from R0 (1e6/s per thread), doubling while
 * they pass, then 5 bisection steps between the last pass and the first
 * failure; the best passing rate is then confirmed with a run of S
 * seconds, and lowered until a confirmation passes (at most 4 runs; see
 * confirm()).
 * The figures reported are those of the confirming run: rate per thread
 * and total, bytes written, writer MB/s (bytes of the dump / run wall
 * time), the writer thread's CPU time, and the load average.
 *
 * Floors: a plain write() loop of C KiB blocks to the same PATH
 * (truncated), as many bytes as the confirming run wrote, timed right
 * before and right after that run; MB/s of the faster. Three loops: "hot"
 * writes one block again and again (in cache); "fed" writes blocks that a
 * feeder thread fills at most 4 MiB ahead, as a recording thread fills
 * the writer's chunks on another CPU since its previous round: the
 * like-for-like floor; "cold" writes its blocks in turn from F MiB
 * (--floor-ring-mib, default 512; 0: no cold floor), data in no cache.
 * Each writes C KiB-aligned blocks, which the page cache takes ~12%
 * cheaper than a framed stream's writes (bench_write_align).
 * ratio = writer MB/s / write MB/s, at the highest rate without
 * drops, against each: how close recording comes to what the file can
 * take. Note that at the highest passing rate the writer's MB/s
 * is the threads' byte rate: when the threads cannot produce faster than
 * the writer drains (CPU-bound), the ratio says so (see BENCHMARKS.md).
 *
 * --fifo: the recording threads, the writer thread and the write() floor
 * run SCHED_FIFO 50, so that other tenants of a shared machine do not
 * decide the figures (needs root or CAP_SYS_NICE).
 * --writer-prio P (with --fifo): the writer runs SCHED_FIFO P instead (51:
 * above the recording threads, which then never delay it; not what an
 * audio program would choose, a bound of what the writer takes when the
 * CPUs are shared). The trimmer runs one above the writer and the threads.
 *
 * MB = 10^6 bytes. Never a ctest entry (time-based).
 */

#include <dirent.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "harness.h"
#include "rtprof.h"

#define MAX_THREADS 64

struct opts {
	unsigned threads[8], nthreads;
	double seconds, probe_s, start_rate, rate;
	uint32_t chunk_kib, prefill, flush_us;
	uint64_t memory_mib, trim_mib, floor_ring_mib;
	const char *file;
	int fifo, json;
	int writer_prio;         /* SCHED_FIFO priority of the writer */
	unsigned payload;        /* bytes of text per event; 0: rtprof_mark */
};

/* The --payload marker type and its text. */
static const rtprof_marker_type *payload_type;
static unsigned payload_fields;
static char payload_text[RTPROF_MAX_STRING];

/* One recording thread of a run. */
struct worker {
	pthread_t th;
	double rate;             /* events per second */
	double seconds;
	int fifo;
	unsigned payload;
	pthread_barrier_t *go;
	uint64_t offered;        /* events it recorded (called rtprof_mark) */
	uint64_t target;
	double elapsed;          /* s from the start to its last event */
	double cpu;              /* s of its own CPU time recording */
	struct rtprof_thread_stats st;
	int err;
};

struct run {
	double rate, seconds, wall;
	unsigned n;
	uint64_t offered, target, drops, bytes, chunks_lost;
	double writer_cpu;       /* s of the writer thread's CPU time */
	double threads_cpu;      /* s of the recording threads' CPU time */
	int kept_pace, pass;
};

static void
sleep_until(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u),
		(long)(ns % 1000000000u) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	    EINTR)
		;
}

static double
own_cpu_s(void)
{
	return bench_clock_s(CLOCK_THREAD_CPUTIME_ID);
}

static void
set_fifo(void)
{
	struct sched_param sp = { .sched_priority = 50 };

	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0)
		fprintf(stderr, "bench_sustained: SCHED_FIFO refused\n");
}

/* Record @w->rate marks per second for @w->seconds, in 1 ms steps.
 * Context: its own thread (registered here). */
/* Declare the --payload marker type: @bytes of text in string fields. */
static int
declare_payload(unsigned bytes)
{
	static const char *const keys[RTPROF_MAX_FIELDS] = {
		"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9" };
	struct rtprof_marker_schema sc;

	memset(&sc, 0, sizeof(sc));
	sc.name = "sustained.payload";
	sc.category = RTPROF_CAT_OTHER;
	payload_fields = (bytes + RTPROF_MAX_STRING - 1) / RTPROF_MAX_STRING;
	sc.nfields = payload_fields;
	for (unsigned i = 0; i < payload_fields; i++) {
		sc.fields[i].key = keys[i];
		sc.fields[i].kind = RTPROF_FIELD_STR;
	}
	for (unsigned i = 0; i < sizeof(payload_text); i++)
		payload_text[i] = (char)('a' + i % 26);
	payload_type = rtprof_marker_type_declare(&sc);
	return payload_type != NULL ? 0 : -1;
}

/* One event of @bytes of text (the fields filled in turn). */
static void
record_payload(unsigned bytes)
{
	rtprof_rec r;

	if (!rtprof_marker_open(&r, payload_type, RTPROF_PHASE_INSTANT,
	    rtprof_now(), 0))
		return;
	for (unsigned i = 0; i < payload_fields; i++) {
		unsigned n = bytes > RTPROF_MAX_STRING ? RTPROF_MAX_STRING :
		    bytes;

		rtprof_put_str(&r, payload_text, n);
		bytes -= n;
	}
	rtprof_marker_close(&r);
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t t0, step = 1000000, steps, due = 0;
	double per_step = w->rate / 1000.0;

	if ((w->err = rtprof_thread_register("sustained", 0)) != 0)
		return NULL;
	if (w->fifo)
		set_fifo();
	steps = (uint64_t)(w->seconds * 1000.0);
	w->target = (uint64_t)(per_step * (double)steps);
	pthread_barrier_wait(w->go);
	w->cpu = own_cpu_s();
	t0 = bench_now_ns();
	for (uint64_t i = 1; i <= steps; i++) {
		due = (uint64_t)(per_step * (double)i);
		while (w->offered < due) {
			if (w->payload == 0)
				rtprof_mark("sustained", RTPROF_CAT_OTHER);
			else
				record_payload(w->payload);
			w->offered++;
		}
		sleep_until(t0 + i * step);
	}
	w->elapsed = (double)(bench_now_ns() - t0) / 1e9;
	w->cpu = own_cpu_s() - w->cpu;
	rtprof_thread_stats_get(&w->st);
	rtprof_thread_unregister();
	return NULL;
}

/* The writer thread's tid, found by its name; 0: not found. */
static pid_t
writer_tid(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t tid = 0;

	while (d != NULL && tid == 0 && (e = readdir(d)) != NULL) {
		char path[300], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		if (fgets(comm, sizeof(comm), f) != NULL &&
		    strncmp(comm, "rtprof-writer", 13) == 0)
			tid = (pid_t)atoi(e->d_name);
		fclose(f);
	}
	if (d != NULL)
		closedir(d);
	return tid;
}

/* CPU seconds of thread @tid of this process; -1: unknown. */
static double
thread_cpu_s(pid_t tid)
{
	/* The kernel's per-thread CPU clock id (MAKE_THREAD_CPUCLOCK). */
	clockid_t cid = (clockid_t)((~tid << 3) | 6);

	return tid != 0 ? bench_clock_s(cid) : -1;
}

/* With --fifo the writer runs SCHED_FIFO too: what is measured is then
 * rtprof's writer, not its share of a CPU among other tenants. */
static void
writer_fifo(pid_t tid, int prio)
{
	struct sched_param sp = { .sched_priority = prio };

	if (tid != 0 && sched_setscheduler(tid, SCHED_FIFO, &sp) != 0)
		fprintf(stderr, "bench_sustained: writer SCHED_FIFO refused\n");
}

/*
 * The file is cut back to nothing (ftruncate) whenever it holds more than
 * --trim-mib: the writes go on at their offset (a sparse file), so the
 * page cache holds at most that much of it and the kernel's dirty-page
 * limits never throttle the writes (10 s at GB/s would otherwise fill
 * them and the disk's writeback would set the rate). The write() floor
 * is cut back the same way, by the same thread beside it (until
 * 2026-11-26 in its own loop: it then never waited for the inode's lock
 * that a truncation holds, as the writer does, and its CPU time held the
 * truncations).
 */
struct trimmer {
	pthread_t th;
	int fd;
	off_t limit;
	int fifo;                /* its SCHED_FIFO priority; 0: none */
	atomic_int stop;
};

/* Cut @fd back when it holds more than @limit bytes (blocks: the file is
 * sparse after the first cut). */
static void
trim_fd(int fd, off_t limit)
{
	struct stat st;

	if (limit > 0 && fstat(fd, &st) == 0 && (off_t)st.st_blocks * 512 > limit)
		(void)ftruncate(fd, 0);
}

/* Context: its own thread, while a run lasts. */
static void *
trimmer_main(void *arg)
{
	struct trimmer *tr = arg;
	struct timespec ts = { 0, 5000000 };
	/* With --fifo, above the writer and the recording threads: a
	 * truncation holds the inode's lock, and a trimmer starved by them
	 * would stall the writer's (or the floor's) write() behind it for
	 * as long (priority inversion). It sleeps 5 ms between checks. */
	struct sched_param sp = { .sched_priority = tr->fifo };

	if (tr->fifo != 0 && pthread_setschedparam(pthread_self(), SCHED_FIFO,
	    &sp) != 0)
		fprintf(stderr, "bench_sustained: trimmer SCHED_FIFO refused\n");

	while (!atomic_load(&tr->stop)) {
		trim_fd(tr->fd, tr->limit);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* Start @tr on @fd as --trim-mib and --fifo say. */
static void
trimmer_start(struct trimmer *tr, const struct opts *o, int fd)
{
	tr->fd = fd;
	tr->limit = (off_t)(o->trim_mib << 20);
	tr->fifo = o->fifo ? (o->writer_prio > 50 ? o->writer_prio : 50) + 1 : 0;
	atomic_init(&tr->stop, 0);
	if (o->trim_mib != 0)
		pthread_create(&tr->th, NULL, trimmer_main, tr);
}

static int
start_session(const struct opts *o, int fd)
{
	struct rtprof_settings s;

	memset(&s, 0, sizeof(s));
	s.struct_size = sizeof(s);
	s.mode = RTPROF_MODE_STREAM;
	s.fd = fd;
	s.memory_limit = o->memory_mib << 20;
	s.chunk_size = o->chunk_kib << 10;
	s.prefill = o->prefill;
	s.flush_interval_us = o->flush_us;
	s.sample_interval_us = RTPROF_SAMPLING_OFF;
	return rtprof_session_start(&s);
}

/* Sum the workers' figures into @r and decide whether the run passed. */
static void
run_account(struct run *r, const struct worker *w, unsigned n)
{
	double slowest = 0;

	for (unsigned i = 0; i < n; i++) {
		r->offered += w[i].offered;
		r->target += w[i].target;
		r->drops += w[i].st.dropped_full + w[i].st.dropped_nested;
		r->threads_cpu += w[i].cpu;
		if (w[i].elapsed > slowest)
			slowest = w[i].elapsed;
	}
	r->kept_pace = slowest <= r->seconds * 1.05;
	r->pass = r->drops == 0 && r->chunks_lost == 0 && r->kept_pace &&
	    r->offered == r->target;
}

static int
spawn(struct worker *w, unsigned n, const struct opts *o, double rate,
    double seconds, pthread_barrier_t *go)
{
	for (unsigned i = 0; i < n; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].rate = rate;
		w[i].seconds = seconds;
		w[i].fifo = o->fifo;
		w[i].payload = o->payload;
		w[i].go = go;
		if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0)
			return -1;
	}
	return 0;
}

/* One run of @n threads at @rate per thread for @seconds. */
static int
run_once(const struct opts *o, unsigned n, double rate, double seconds,
    struct run *r)
{
	static struct worker w[MAX_THREADS];
	struct rtprof_session_status ss;
	pthread_barrier_t go;
	uint64_t t0;
	double cpu0;
	pid_t wtid;
	struct trimmer tr;
	int fd = open(o->file, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || start_session(o, fd) != 0) {
		fprintf(stderr, "bench_sustained: cannot start on %s\n", o->file);
		return -1;
	}
	memset(r, 0, sizeof(*r));
	r->rate = rate;
	r->seconds = seconds;
	r->n = n;
	pthread_barrier_init(&go, NULL, n + 1);
	if (spawn(w, n, o, rate, seconds, &go) != 0)
		return -1;
	trimmer_start(&tr, o, fd);
	/* The writer names itself once it runs: wait for it (up to 0.1 s). */
	for (int i = 0; i < 100 && (wtid = writer_tid()) == 0; i++)
		usleep(1000);
	if (o->fifo)
		writer_fifo(wtid, o->writer_prio);
	cpu0 = thread_cpu_s(wtid);
	pthread_barrier_wait(&go);
	t0 = bench_now_ns();
	for (unsigned i = 0; i < n; i++)
		pthread_join(w[i].th, NULL);
	r->writer_cpu = thread_cpu_s(wtid) - cpu0;
	rtprof_session_stop();
	atomic_store(&tr.stop, 1);
	if (o->trim_mib != 0)
		pthread_join(tr.th, NULL);
	r->wall = (double)(bench_now_ns() - t0) / 1e9;
	rtprof_session_status_get(&ss);
	r->bytes = ss.bytes_written;
	r->chunks_lost = ss.chunks_lost;
	close(fd);
	pthread_barrier_destroy(&go);
	for (unsigned i = 0; i < n; i++)
		if (w[i].err != 0)
			return -1;
	run_account(r, w, n);
	return 0;
}

/*
 * The floors' blocks. "hot": one block, written again and again (in
 * cache). "cold": blocks in turn from --floor-ring-mib of memory (in no
 * cache). "fed": blocks that a feeder thread fills (every byte) at most
 * FED_AHEAD blocks ahead of the write() loop, so the loop reads what
 * another CPU wrote a few MB before, as the writer reads a chunk that a
 * recording thread filled since its previous round.
 */
enum floor_kind { FLOOR_HOT, FLOOR_COLD, FLOOR_FED };

#define FED_BLOCKS 8
#define FED_AHEAD 4

struct floor_src {
	enum floor_kind kind;
	unsigned char *buf;
	size_t blk, ring;
	uint64_t next;           /* blocks handed to write() so far */
	atomic_uint_fast64_t filled, done;  /* fed: blocks filled, written */
	atomic_int stop;
	int fifo;
	pthread_t feeder;
};

/* Fill the fed floor's blocks ahead of the loop.
 * Context: its own thread; filled is its (release), done the loop's. */
static void *
feeder_main(void *arg)
{
	struct floor_src *f = arg;
	struct timespec nap = { 0, 100000 };   /* a block is written in ~0.25 ms */

	if (f->fifo)
		set_fifo();
	for (uint64_t i = 0; !atomic_load_explicit(&f->stop,
	    memory_order_relaxed); ) {
		if (i - atomic_load_explicit(&f->done, memory_order_acquire) >=
		    FED_AHEAD) {
			nanosleep(&nap, NULL);
			continue;
		}
		memset(f->buf + (i % FED_BLOCKS) * f->blk, (int)(i & 0xff),
		    f->blk);
		atomic_store_explicit(&f->filled, ++i, memory_order_release);
	}
	return NULL;
}

static int
floor_src_open(struct floor_src *f, const struct opts *o, enum floor_kind k)
{
	memset(f, 0, sizeof(*f));
	f->kind = k;
	f->blk = (size_t)o->chunk_kib << 10;
	f->ring = k == FLOOR_COLD ? (size_t)o->floor_ring_mib << 20 :
	    k == FLOOR_FED ? FED_BLOCKS * f->blk : f->blk;
	f->fifo = o->fifo;
	if ((f->buf = malloc(f->ring)) == NULL)
		return -1;
	memset(f->buf, 0x5a, f->ring);
	if (k == FLOOR_FED &&
	    pthread_create(&f->feeder, NULL, feeder_main, f) != 0) {
		free(f->buf);
		return -1;
	}
	return 0;
}

/* The next block to write (fed: waits for the feeder).
 * Context: the floor's loop. */
static const unsigned char *
floor_src_next(struct floor_src *f)
{
	uint64_t i = f->next++;

	if (f->kind == FLOOR_FED) {
		if (i > 0)
			atomic_store_explicit(&f->done, i, memory_order_release);
		while (atomic_load_explicit(&f->filled, memory_order_acquire)
		    <= i)
			;
		return f->buf + (i % FED_BLOCKS) * f->blk;
	}
	return f->buf + (i % (f->ring / f->blk)) * f->blk;
}

static void
floor_src_close(struct floor_src *f)
{
	if (f->kind == FLOOR_FED) {
		atomic_store(&f->stop, 1);
		atomic_store(&f->done, f->next + FED_AHEAD);
		pthread_join(f->feeder, NULL);
	}
	free(f->buf);
}

/* MB/s of a plain write() loop of chunk-sized blocks of @kind, @bytes in
 * all, to the same file (truncated, and cut back like the run's);
 * *@cpu_per_mb: its CPU seconds per MB. */
static double
write_floor(const struct opts *o, enum floor_kind kind, uint64_t bytes,
    double *cpu_per_mb)
{
	struct floor_src src;
	int fd = open(o->file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	uint64_t done = 0, t0;
	struct trimmer tr;
	double cpu;

	if (fd < 0 || floor_src_open(&src, o, kind) != 0) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	/* Cut back by the same trimmer thread as the runs: both wait alike
	 * for its truncations (the inode's lock), and neither's CPU time
	 * holds them. */
	trimmer_start(&tr, o, fd);
	cpu = own_cpu_s();
	t0 = bench_now_ns();
	while (done < bytes) {
		ssize_t k = write(fd, floor_src_next(&src), src.blk);

		if (k <= 0)
			break;
		done += (uint64_t)k;
	}
	t0 = bench_now_ns() - t0;
	*cpu_per_mb = (own_cpu_s() - cpu) / ((double)done / 1e6);
	atomic_store(&tr.stop, 1);
	if (o->trim_mib != 0)
		pthread_join(tr.th, NULL);
	close(fd);
	floor_src_close(&src);
	return (double)done / 1e6 / ((double)t0 / 1e9);
}

static void
report_probe(const struct run *r)
{
	fprintf(stderr, "  probe %u x %.3g/s %.1fs: %s (drops %" PRIu64
	    ", lost %" PRIu64 ", pace %s, %.1f MB/s)\n", r->n, r->rate,
	    r->seconds, r->pass ? "pass" : "FAIL", r->drops, r->chunks_lost,
	    r->kept_pace ? "ok" : "behind", (double)r->bytes / 1e6 / r->wall);
	if (r->bytes > 0)
		fprintf(stderr, "    writer CPU %.3f ms/MB, recording threads"
		    " %.3f ms/MB\n", 1e3 * r->writer_cpu / ((double)r->bytes / 1e6),
		    1e3 * r->threads_cpu / ((double)r->bytes / 1e6));
}

/* Bytes per recorded event in the latest run (22 for rtprof_mark before
 * any): what the floor before a confirmation writes is sized by it. */
static double event_bytes = 22;

static void
note_event_bytes(const struct run *r)
{
	if (r->offered > r->drops)
		event_bytes = (double)r->bytes / (double)(r->offered - r->drops);
}

/* Probe at @rate; -1 on error, else whether it passed. */
static int
probe(const struct opts *o, unsigned n, double rate, double s)
{
	struct run r;

	if (run_once(o, n, rate, s, &r) != 0)
		return -1;
	note_event_bytes(&r);
	report_probe(&r);
	return r.pass;
}

/* The highest passing per-thread rate found by probes (0: none). */
static double
search(const struct opts *o, unsigned n)
{
	double lo = 0, hi = 0, rate = o->start_rate;
	int p;

	while (hi == 0 && rate < 1e9) {
		if ((p = probe(o, n, rate, o->probe_s)) < 0)
			return 0;
		if (p)
			lo = rate, rate *= 2;
		else
			hi = rate;
	}
	if (lo == 0) {
		/* Even the start failed: go down instead. */
		for (rate = o->start_rate / 2; rate >= 1000 && lo == 0;
		    rate /= 2)
			if (probe(o, n, rate, o->probe_s) == 1)
				lo = rate, hi = rate * 2;
	}
	for (int i = 0; i < 5 && lo != 0 && hi != 0; i++) {
		rate = (lo + hi) / 2;
		if ((p = probe(o, n, rate, o->probe_s)) < 0)
			return lo;
		if (p)
			lo = rate;
		else
			hi = rate;
	}
	return lo;
}

static double
loadavg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f != NULL) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

/* A floor: the faster of its loops before and after the run. */
struct floor {
	double mbs, cpu_mb;
};

struct result {
	struct run r;
	struct floor hot, cold, fed;  /* enum floor_kind; cold.mbs 0: none */
	double load;
	int confirmed;
};

/* Time the floor of @kind before (@after 0) or after a run of @bytes into
 * @f, keeping the faster. */
static void
floor_time(const struct opts *o, enum floor_kind kind, uint64_t bytes,
    int after, struct floor *f)
{
	double c, m = write_floor(o, kind, bytes, &c);

	if (!after || m > f->mbs)
		f->mbs = m;
	if (!after || c < f->cpu_mb)
		f->cpu_mb = c;
}

/* Both floors, for a run of @bytes. */
static void
floors_time(const struct opts *o, uint64_t bytes, int after,
    struct result *res)
{
	floor_time(o, FLOOR_HOT, bytes, after, &res->hot);
	if (o->floor_ring_mib != 0)
		floor_time(o, FLOOR_COLD, bytes, after, &res->cold);
	floor_time(o, FLOOR_FED, bytes, after, &res->fed);
}

/*
 * Confirm @rate with full-length runs. After a failure the next rate is
 * 95% of what that run recorded per second (offered - dropped), and at
 * most 90% of the rate tried: a short probe can pass above what the
 * writer sustains for longer (the page cache's dirty limit is reached).
 */
static void
confirm(const struct opts *o, unsigned n, double rate, struct result *res)
{
	for (int i = 0; i < 4 && rate > 0; i++) {
		double kept;

		res->load = loadavg();
		floors_time(o, (uint64_t)(rate * n * event_bytes * o->seconds),
		    0, res);
		if (run_once(o, n, rate, o->seconds, &res->r) != 0)
			return;
		note_event_bytes(&res->r);
		floors_time(o, res->r.bytes, 1, res);
		report_probe(&res->r);
		if (res->r.pass) {
			res->confirmed = 1;
			return;
		}
		kept = (double)(res->r.offered - res->r.drops) / n / o->seconds;
		rate = 0.95 * kept < 0.9 * rate ? 0.95 * kept : 0.9 * rate;
	}
}

/* @mbs against floor @f (0 when there is none). */
static double
ratio_to(double mbs, const struct floor *f)
{
	return f->mbs > 0 ? mbs / f->mbs : 0;
}

/* Met: confirmed without drops and at >= 0.8 of floor @f. */
static const char *
pass_str(const struct result *res, const struct floor *f)
{
	return res->confirmed && ratio_to((double)res->r.bytes / 1e6 /
	    res->r.wall, f) >= 0.8 ? "true" : "false";
}

static void
print_result(const struct opts *o, const struct result *res, int first)
{
	const struct run *r = &res->r;
	double mbs = (double)r->bytes / 1e6 / r->wall;
	double mb = (double)r->bytes / 1e6;

	fprintf(stderr, "%-7u %11.4g %11.4g %8.1f %8.1f %6.3f %8.1f %6.3f "
	    "%8.1f %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %5.2f %s\n", r->n,
	    r->rate, r->rate * r->n, mbs, res->hot.mbs, ratio_to(mbs, &res->hot),
	    res->fed.mbs, ratio_to(mbs, &res->fed), res->cold.mbs,
	    ratio_to(mbs, &res->cold), 1e3 * r->writer_cpu / mb,
	    1e3 * res->hot.cpu_mb, 1e3 * res->fed.cpu_mb, 1e3 * res->cold.cpu_mb,
	    1e3 * r->threads_cpu / mb, res->load,
	    res->confirmed ? "pass" : "FAIL (drops)");
	if (!o->json)
		return;
	printf("%s{\"threads\": %u, \"seconds\": %.1f, \"rate_per_thread\": %.0f,"
	    " \"rate_total\": %.0f, \"bytes\": %" PRIu64 ", \"drops\": %" PRIu64
	    ", \"chunks_lost\": %" PRIu64 ", \"writer_mb_s\": %.1f, "
	    "\"write_floor_mb_s\": %.1f, \"ratio\": %.3f, "
	    "\"fed_floor_mb_s\": %.1f, \"ratio_fed\": %.3f, "
	    "\"cold_floor_mb_s\": %.1f, \"ratio_cold\": %.3f, "
	    "\"writer_cpu_s\": %.2f, \"writer_cpu_ms_per_mb\": %.4f, "
	    "\"write_cpu_ms_per_mb\": %.4f, \"fed_cpu_ms_per_mb\": %.4f, "
	    "\"cold_cpu_ms_per_mb\": %.4f, "
	    "\"threads_cpu_ms_per_mb\": %.4f, \"loadavg\": %.2f, "
	    "\"pass\": %s, \"pass_fed\": %s, \"pass_cold\": %s}",
	    first ? "" : ",\n  ", r->n, r->seconds, r->rate, r->rate * r->n,
	    r->bytes, r->drops, r->chunks_lost, mbs, res->hot.mbs,
	    ratio_to(mbs, &res->hot), res->fed.mbs, ratio_to(mbs, &res->fed),
	    res->cold.mbs, ratio_to(mbs, &res->cold), r->writer_cpu,
	    1e3 * r->writer_cpu / mb, 1e3 * res->hot.cpu_mb,
	    1e3 * res->fed.cpu_mb, 1e3 * res->cold.cpu_mb,
	    1e3 * r->threads_cpu / mb, res->load, pass_str(res, &res->hot),
	    pass_str(res, &res->fed), pass_str(res, &res->cold));
}

static void
usage(void)
{
	fprintf(stderr, "usage: bench_sustained [--threads N[,N...]] "
	    "[--seconds S] [--probe-s P] [--chunk-kib C] [--prefill K] "
	    "[--memory-mib M] [--flush-us U] [--file PATH] [--start-rate R] "
	    "[--rate R] [--trim-mib T] [--floor-ring-mib F] [--payload B] "
	    "[--fifo] [--writer-prio P] [--json]\n");
	exit(2);
}

static void
parse_threads(struct opts *o, const char *s)
{
	char *end;

	o->nthreads = 0;
	while (*s != '\0' && o->nthreads < 8) {
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v == 0 || v > MAX_THREADS)
			usage();
		o->threads[o->nthreads++] = (unsigned)v;
		s = *end == ',' ? end + 1 : end;
	}
}

static void
defaults(struct opts *o)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	static char path[512];
	const char *tmp = getenv("TMPDIR");

	memset(o, 0, sizeof(*o));
	o->threads[0] = 1;
	o->threads[1] = 2;
	o->nthreads = 2;
	if (ncpu > 2 && ncpu <= MAX_THREADS)
		o->threads[o->nthreads++] = (unsigned)ncpu;
	o->seconds = 10;
	o->writer_prio = 50;
	o->probe_s = 2;
	o->start_rate = 1e6;
	o->chunk_kib = 1024;
	o->prefill = 64;
	o->memory_mib = 512;
	o->trim_mib = 256;
	o->floor_ring_mib = 512;
	o->flush_us = 1000;
	snprintf(path, sizeof(path), "%s/rtprof-sustained-%d.dump",
	    tmp != NULL ? tmp : "/tmp", (int)getpid());
	o->file = path;
}

static void
parse(struct opts *o, int argc, char **argv)
{
	defaults(o);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--fifo")) {
			o->fifo = 1;
			continue;
		}
		if (!strcmp(a, "--writer-prio") && v != NULL) {
			o->writer_prio = atoi(v);
			i++;
			continue;
		}
		if (!strcmp(a, "--json")) {
			o->json = 1;
			continue;
		}
		if (v == NULL)
			usage();
		i++;
		if (!strcmp(a, "--threads"))
			parse_threads(o, v);
		else if (!strcmp(a, "--seconds"))
			o->seconds = atof(v);
		else if (!strcmp(a, "--probe-s"))
			o->probe_s = atof(v);
		else if (!strcmp(a, "--chunk-kib"))
			o->chunk_kib = (uint32_t)atoi(v);
		else if (!strcmp(a, "--prefill"))
			o->prefill = (uint32_t)atoi(v);
		else if (!strcmp(a, "--memory-mib"))
			o->memory_mib = (uint64_t)atoll(v);
		else if (!strcmp(a, "--flush-us"))
			o->flush_us = (uint32_t)atoi(v);
		else if (!strcmp(a, "--floor-ring-mib"))
			o->floor_ring_mib = (uint64_t)atoll(v);
		else if (!strcmp(a, "--trim-mib"))
			o->trim_mib = (uint64_t)atoll(v);
		else if (!strcmp(a, "--file"))
			o->file = v;
		else if (!strcmp(a, "--start-rate"))
			o->start_rate = atof(v);
		else if (!strcmp(a, "--rate"))
			o->rate = atof(v);
		else if (!strcmp(a, "--payload"))
			o->payload = (unsigned)atoi(v);
		else
			usage();
	}
	if (o->seconds <= 0 || o->probe_s <= 0 || o->chunk_kib < 4 ||
	    o->start_rate < 1000 ||
	    o->payload > RTPROF_MAX_FIELDS * RTPROF_MAX_STRING)
		usage();
}

int
main(int argc, char **argv)
{
	struct opts o;

	parse(&o, argc, argv);
	if (o.payload > 0 && declare_payload(o.payload) != 0) {
		fprintf(stderr, "bench_sustained: cannot declare the payload "
		    "marker type\n");
		return 1;
	}
	if (o.fifo)
		set_fifo();     /* the write() floor runs on this thread */
	fprintf(stderr, "bench_sustained: %u s runs (probes %.1f s), chunk %u KiB, "
	    "prefill %u, memory %" PRIu64 " MiB, flush %u us, file %s%s, "
	    "events: %s\n",
	    (unsigned)o.seconds, o.probe_s, o.chunk_kib, o.prefill,
	    o.memory_mib, o.flush_us, o.file, o.fifo ? ", SCHED_FIFO" : "",
	    o.payload ? "typed markers with text" : "rtprof_mark");
	if (o.payload)
		fprintf(stderr, "  %u bytes of text per event\n", o.payload);
	static struct result res[8];

	for (unsigned i = 0; i < o.nthreads; i++) {
		if (o.rate > 0) {
			/* No search: one confirmation at the rate given (A/B
			 * runs of the writer's CPU per MB at the same load). */
			fprintf(stderr, "threads %u: at %.3g/s\n", o.threads[i],
			    o.rate);
			if (o.payload > 0)
				event_bytes = 1.03 * o.payload;
			confirm(&o, o.threads[i], o.rate, &res[i]);
			continue;
		}
		fprintf(stderr, "threads %u: searching\n", o.threads[i]);
		confirm(&o, o.threads[i], search(&o, o.threads[i]), &res[i]);
	}
	/* MB/s and ratio against each floor; then CPU ms per MB: the writer,
	 * the hot, fed and cold floors, the recording threads. */
	fprintf(stderr, "%-7s %11s %11s %8s %8s %6s %8s %6s %8s %6s %6s %6s "
	    "%6s %6s %6s %5s %s\n", "threads", "rate/thr", "rate total", "MB/s",
	    "hot", "ratio", "fed", "ratio", "cold", "ratio", "wr", "hot", "fed",
	    "cold", "thr", "load", "0 drops");
	if (o.json)
		printf("{\"runs\": [");
	for (unsigned i = 0; i < o.nthreads; i++)
		print_result(&o, &res[i], i == 0);
	if (o.json)
		printf("]}\n");
	unlink(o.file);
	return 0;
}
