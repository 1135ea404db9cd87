/*
 * gecko_samples_gen.c - deterministic dumps with sampler records for the
 * converter's sample tests (test_gecko_samples.sh, checked by
 * test_gecko_samples.py; keep the three in step).
 *
 *   gecko_samples_gen DIR
 *
 * Writes, with the dump generator (tests/dumpgen.h):
 *   DIR/samples.rtprof  one session: a main thread, a worker, a real-time
 *                       thread, a thread only seen by SAME records, a
 *                       thread never sampled and the sampler; native
 *                       frames are addresses of this program's own
 *                       functions, its MODULES entry taken from its own
 *                       program headers with its real build id;
 *   DIR/plain.rtprof    one session without any sampler record;
 *   DIR/sysroot.rtprof  like samples.rtprof, but the program recorded at
 *                       a path that exists only under a sysroot;
 *   DIR/expect.txt      "key value" lines the checker needs (the
 *                       program's file name, its MODULES entry: start,
 *                       end, offset, build id).
 * Times: 1 tick = 1 ns, the session starts at tick 1000000 (0 ms), so a
 * record at tick 1000000 + k * 1000000 is at k ms.
 *
 * And, with the real recorder (rt/rtprof.h, stream mode, sampled every
 * 1 ms), DIR/real.rtprof: a real-time thread "rt" whose label stack is
 * "rt outer" > "rt inner" from before the session starts until after it
 * stops, so every sample of it has exactly that stack. It is blocked in
 * read(2) (seen in /proc before the session starts) until the main thread
 * records the instant marker "wake" and wakes it; it then spins 20 ms of
 * its own CPU time, measured with CLOCK_THREAD_CPUTIME_ID, records the
 * interval marker "spun" around that, and blocks again until after the
 * stop. DIR/real.txt: what it knows ("samples N": the sampler's count of
 * its samples, from rtprof_thread_stats; "spin_ns N": the CPU time it
 * measured around the spin).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dumpgen.h"
#include "rtprof.h"
#include "selfmod.h"
#include "wire.h"

#define T0 1000000ull
#define MS(k) (T0 + (uint64_t)((k) * 1000000.0 + 0.5))

/* Static strings of the "recorded process" (any nonzero refs). */
#define REF_FRAME_LOOP 0x1000
#define REF_PROCESS_BLOCK 0x1008
#define REF_START 0x1010

/* Native addresses that must stay hex: inside a module whose file does
 * not exist, and outside every module. */
#define FAKE_LIB_START 0x7e0000000000ull
#define ADDR_IN_FAKE_LIB (FAKE_LIB_START + 0x100)
#define ADDR_NOWHERE 0x10ull

enum { MAIN = 100, WORKER = 101, RT = 102, QUIET = 103, SAMPLER = 104,
    LOST = 105, CXX = 106 };

/* A C++ member function (gecko_samples_cxx.cpp): names are demangled. */
const void *gs_cxx_function(void);

/* ---- functions whose addresses are recorded (noinline, global) ---- */

volatile int gs_sink;
void *volatile gs_ra;

#ifdef GECKO_SAMPLES_OTHER
/* gecko_samples_other: another build of this program (its code moved by
 * this function, its own build id), put at the recorded path under a
 * sysroot: symbolizing with it would give wrong names. */
__attribute__((noinline)) void
gs_other(int x)
{
	for (int i = 0; i < x; i++)
		gs_sink += i * x + (gs_sink >> 3);
}
#endif

__attribute__((noinline)) void
gs_inner(int x)
{
	gs_ra = __builtin_return_address(0);
	gs_sink += x;
}

__attribute__((noinline)) void
gs_outer(int x)
{
	gs_inner(x + 1);
	gs_sink += 2;
}

static void
die(const char *what, int err)
{
	fprintf(stderr, "gecko_samples_gen: %s: %s\n", what, strerror(-err));
	exit(1);
}

#define CK(call)                                                               \
	do {                                                                   \
		int rc_ = (call);                                              \
		if (rc_ != 0)                                                  \
			die(#call, rc_);                                       \
	} while (0)

static struct dg *
open_dump(const char *dir, const char *name, int *fd)
{
	char path[4096];
	struct dg *g;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	*fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (*fd < 0)
		die(path, -errno);
	g = dg_open(dg_write_fd, fd, 0);
	if (g == NULL)
		die("dg_open", -ENOMEM);
	return g;
}

static void
close_dump(struct dg *g, int fd)
{
	CK(dg_close(g));
	if (close(fd) != 0)
		die("close", -errno);
}

static void
header(struct dg *g, int64_t pid, const char *process)
{
	struct dg_header h = {
		.pid = pid, .ppid = 1, .process = process,
		.exe = "/usr/bin/gecko_samples_gen",
		.ticks_per_second = 1e9, .start_ticks = T0,
		.start_mono_ns = 5000000000, .start_wall_ns =
		    1700000000000000000, .sample_interval_us = 1000,
	};

	CK(dg_header(g, &h));
}

/* A SAMPLE of @tid in the sampler's stream. @lab: a string of 'L' (label)
 * and 'N' (native), one letter per frame. */
static void
sample(struct dg *g, uint64_t t, int64_t tid, uint64_t cpu, unsigned flags,
    const uint64_t *frames, const char *lab)
{
	uint64_t mask[2] = { 0, 0 };
	size_t n = strlen(lab);

	for (size_t i = 0; i < n; i++)
		if (lab[i] == 'L')
			mask[i / 64] |= 1ull << (i % 64);
	CK(dg_rec_sample(g, SAMPLER, t, tid, cpu, flags, frames, mask, n));
}

/*
 * The real-time thread's asleep samples (no CPU, no label) around an
 * "Audio callback" interval from 3.5 to 5.5 ms, recorded after them: at
 * 3, 3.5 (its first tick), 4, 5 (SAME), 5.5 (its last tick, SAME) and 6
 * ms (SAME). Those inside the callback are not Idle.
 */
static void
audio_callback_samples(struct dg *g)
{
	static const struct dg_field cb[] = {
		{ "frames", "Frames", "integer", 2 },
		{ "budget", "Budget", "milliseconds", 3 },
		{ "used", "Time used", "milliseconds", 3 },
		{ "load", "DSP load", "percentage", 3 },
	};
	static const unsigned kinds[] = { 2, 3, 3, 3 };
	const uint64_t vals[] = { 128, 0, 0, 0 };
	const unsigned fl = RTPROF_SAMPLE_LABELS | RTPROF_SAMPLE_ASLEEP;

	CK(dg_schema(g, 9, "Audio callback", 2, cb, 4));
	sample(g, MS(3), RT, 0, fl, NULL, "");
	sample(g, MS(3.5), RT, 0, fl, NULL, "");
	sample(g, MS(4), RT, 0, fl, NULL, "");
	CK(dg_rec_same(g, SAMPLER, MS(5), RT, 0, RTPROF_SAMPLE_ASLEEP));
	CK(dg_rec_same(g, SAMPLER, MS(5.5), RT, 0, RTPROF_SAMPLE_ASLEEP));
	CK(dg_rec_same(g, SAMPLER, MS(6), RT, 0, RTPROF_SAMPLE_ASLEEP));
	CK(dg_flush(g));
	CK(dg_rec_typed(g, RT, 1, MS(3.5), MS(5.5), 9, kinds, vals, NULL,
	    4));
}

/* The session of samples.rtprof / sysroot.rtprof; @path: the program's
 * path as recorded. */
static void
write_samples(struct dg *g, const struct selfmod *self, const char *path)
{
	static const unsigned char fake_id[20] = { 0xde, 0xad, 0xbe, 0xef };
	struct dg_module mods[2] = {
		{ .path = path, .start = self->start, .end = self->end,
		  .offset = self->offset, .build_id = self->build_id,
		  .build_id_len = self->build_id_len },
		{ .path = "/nonexistent/rtprof/libfake.so",
		  .start = FAKE_LIB_START, .end = FAKE_LIB_START + 0x10000,
		  .offset = 0, .build_id = fake_id,
		  .build_id_len = sizeof(fake_id) },
	};
	uint64_t inner = (uint64_t)(uintptr_t)&gs_inner;
	uint64_t ra = (uint64_t)(uintptr_t)gs_ra;     /* in gs_outer */
	uint64_t f[8];

	header(g, 4242, "gecko_samples");
	CK(dg_modules(g, mods, 2));
	CK(dg_thread(g, MAIN, "main", 2, MS(0), 0));
	CK(dg_thread(g, WORKER, "worker", 0, MS(0), 0));
	CK(dg_thread(g, RT, "audio", 1, MS(0), 0));
	CK(dg_thread(g, QUIET, "quiet", 0, MS(0), 0));
	CK(dg_thread(g, SAMPLER, "rtprof sampler", 4, MS(0), 0));
	CK(dg_thread(g, LOST, "lost", 0, MS(0), 0));
	CK(dg_thread(g, CXX, "cxx", 0, MS(0), 0));
	CK(dg_string(g, REF_FRAME_LOOP, "frame loop"));
	CK(dg_string(g, REF_PROCESS_BLOCK, "process block"));
	CK(dg_string(g, REF_START, "start"));

	/* Threads' own records: a marker, sleep/wake of the never-sampled
	 * thread (its placeholder samples). */
	CK(dg_rec_instant(g, MAIN, MS(0.5), REF_START, 7));
	CK(dg_rec_sleep(g, QUIET, MS(2)));
	CK(dg_rec_wake(g, QUIET, MS(3)));

	/* Worker: outer (return address) > label > inner (interrupted pc). */
	f[0] = ra;
	f[1] = REF_FRAME_LOOP;
	f[2] = inner;
	sample(g, MS(1), WORKER, 0, 0, f, "NLN");
	sample(g, MS(2), WORKER, 500000, 0, f, "NLN");    /* same stack */
	f[2] = REF_PROCESS_BLOCK;
	sample(g, MS(3), WORKER, 250000, 0, f, "NLL");    /* shared prefix */
	CK(dg_rec_same(g, SAMPLER, MS(4), WORKER, 0, RTPROF_SAMPLE_ASLEEP));
	/* The worker's own chunks: one, then 5 + 2 events dropped before
	 * the next: a "Dropped events" marker from 2.5 to 3.5 ms. */
	CK(dg_rec_instant(g, WORKER, MS(2.5), REF_START, 7));
	CK(dg_flush(g));
	CK(dg_drops(g, WORKER, 5, 2));
	CK(dg_rec_instant(g, WORKER, MS(3.5), REF_START, 7));
	CK(dg_rec_same(g, SAMPLER, MS(5), WORKER, 1000, 0));
	/* Out of time order in the stream: the converter sorts. */
	f[2] = inner;
	sample(g, MS(7), WORKER, 7000, 0, f, "NLN");
	sample(g, MS(6), WORKER, 6000, 0, f, "NLN");

	/* Main: the same address as a return address (looked up at - 1: not
	 * gs_inner) and as the last native frame (exact: gs_inner), then a
	 * label after the last native frame. */
	f[0] = inner;
	f[1] = inner;
	f[2] = REF_FRAME_LOOP;
	sample(g, MS(1), MAIN, 0, 0, f, "NNL");
	/* Natives that stay hex: a module without a file, no module. */
	f[0] = ADDR_IN_FAKE_LIB;
	f[1] = ADDR_NOWHERE;
	sample(g, MS(2), MAIN, 100, 0, f, "NN");

	/* The real-time thread: label-only samples, one without labels. */
	f[0] = REF_PROCESS_BLOCK;
	sample(g, MS(1), RT, 0, RTPROF_SAMPLE_LABELS, f, "L");
	sample(g, MS(2), RT, 10, RTPROF_SAMPLE_LABELS, f, "");
	audio_callback_samples(g);
	/* C++: the leaf is rtprof_test::Mixer::process(int). */
	f[0] = (uint64_t)(uintptr_t)gs_cxx_function();
	sample(g, MS(1), CXX, 0, 0, f, "N");
	/* A thread whose SAMPLE was lost: SAME has an unknown stack. */
	CK(dg_rec_same(g, SAMPLER, MS(1), LOST, 0, 0));
	CK(dg_rec_same(g, SAMPLER, MS(2), LOST, 0, RTPROF_SAMPLE_ASLEEP));

	/* The sampler's own cost and the process memory counter. */
	CK(dg_rec_overhead(g, SAMPLER, MS(1), MS(1.02), 1000, 20000, 3000,
	    3));
	CK(dg_rec_counter(g, SAMPLER, MS(1.02), RTPROF_COUNTER_PROCESS_MEMORY,
	    10000000));
	CK(dg_rec_overhead(g, SAMPLER, MS(2), MS(2.01), 2000, 10000, 1000,
	    2));
	CK(dg_rec_counter(g, SAMPLER, MS(2.01), RTPROF_COUNTER_PROCESS_MEMORY,
	    12000000));
	CK(dg_trailer(g, MS(10), 5000000000 + 10000000));
}

/* ---- DIR/real.rtprof: the real recorder ---- */

#define SPIN_NS 20000000ll

static int real_go[2], real_done[2];   /* pipes: main -> rt, rt -> main */
static pid_t real_tid;
static int64_t real_spin_ns;
static uint64_t real_samples;

static int64_t
thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		die("clock_gettime", -errno);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
pipe_put(int fd)
{
	char c = 1;

	if (write(fd, &c, 1) != 1)
		die("write", -errno);
}

static void
pipe_get(int fd)
{
	char c;

	if (read(fd, &c, 1) != 1)   /* restarted after a signal */
		die("read", -EIO);
}

static void
nap_ms(long ms)
{
	struct timespec t = { .tv_sec = 0, .tv_nsec = ms * 1000000L };

	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

/* Whether thread @tid is asleep ('S' in /proc/self/task/TID/stat). */
static int
task_sleeping(pid_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(path, -errno);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		die(path, -EIO);
	buf[n] = '\0';
	p = strrchr(buf, ')');  /* "tid (comm) S ..." */
	return p != NULL && p[1] == ' ' && p[2] == 'S';
}

static void *
real_rt(void *arg)
{
	struct rtprof_thread_stats st0, st1;
	int64_t c0;
	uint64_t t0;

	(void)arg;
	CK(rtprof_thread_register("rt", RTPROF_THREAD_RT));
	real_tid = (pid_t)syscall(SYS_gettid);
	rtprof_label_push("rt outer");
	rtprof_label_push("rt inner");
	CK(rtprof_thread_stats_get(&st0));
	pipe_put(real_done[1]);         /* ready */
	pipe_get(real_go[0]);           /* blocked until "wake" */
	t0 = rtprof_now();
	c0 = thread_cpu_ns();
	while (thread_cpu_ns() - c0 < SPIN_NS)
		gs_sink++;
	real_spin_ns = thread_cpu_ns() - c0;
	rtprof_interval("spun", RTPROF_CAT_OTHER, t0, rtprof_now());
	pipe_put(real_done[1]);         /* spun */
	pipe_get(real_go[0]);           /* blocked until after the stop */
	CK(rtprof_thread_stats_get(&st1));
	real_samples = st1.samples - st0.samples;
	rtprof_label_pop();
	rtprof_label_pop();
	CK(rtprof_thread_unregister());
	return NULL;
}

/* Sleep until the sampler has sampled the calling (registered) thread
 * @n more times, at most 5 s: on a loaded machine its ticks come late. */
static void
await_samples(uint64_t n)
{
	struct rtprof_thread_stats st0, st;

	CK(rtprof_thread_stats_get(&st0));
	for (int i = 0; i < 1000; i++) {
		nap_ms(5);
		CK(rtprof_thread_stats_get(&st));
		if (st.samples >= st0.samples + n)
			return;
	}
}

static void
record_real(const char *dir)
{
	struct rtprof_settings s;
	char path[4096];
	pthread_t rt;
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s/real.rtprof", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die(path, -errno);
	if (pipe(real_go) != 0 || pipe(real_done) != 0)
		die("pipe", -errno);
	/* Real-time too: never interrupted, sampled from its labels. */
	CK(rtprof_thread_register("main", RTPROF_THREAD_RT));
	if (pthread_create(&rt, NULL, real_rt, NULL) != 0)
		die("pthread_create", -EAGAIN);
	pipe_get(real_done[0]);
	/* Blocked in read(2) before the session starts: its CPU clock does
	 * not move until "wake". */
	while (!task_sleeping(real_tid))
		nap_ms(1);
	memset(&s, 0, sizeof(s));
	s.struct_size = sizeof(s);
	s.fd = fd;
	s.sample_interval_us = 1000;
	CK(rtprof_session_start(&s));
	await_samples(5);               /* samples while it is blocked */
	rtprof_mark("wake", RTPROF_CAT_OTHER);
	pipe_put(real_go[1]);
	pipe_get(real_done[0]);
	await_samples(5);               /* samples after it blocked again */
	CK(rtprof_session_stop());
	pipe_put(real_go[1]);
	if (pthread_join(rt, NULL) != 0)
		die("pthread_join", -EINVAL);
	CK(rtprof_thread_unregister());
	if (close(fd) != 0)
		die("close", -errno);

	snprintf(path, sizeof(path), "%s/real.txt", dir);
	f = fopen(path, "w");
	if (f == NULL)
		die(path, -errno);
	fprintf(f, "samples %llu\n", (unsigned long long)real_samples);
	fprintf(f, "spin_ns %lld\n", (long long)real_spin_ns);
	if (fclose(f) != 0)
		die(path, -errno);
}

int
main(int argc, char **argv)
{
	struct selfmod self;
	struct dg *g;
	char path[4096];
	FILE *f;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: gecko_samples_gen DIR\n");
		return 2;
	}
	gs_outer(1);    /* sets gs_ra: a return address inside gs_outer */
	if (selfmod_find((const void *)&gs_inner, &self) != 0 ||
	    self.build_id_len == 0) {
		fprintf(stderr, "gecko_samples_gen: own module or build id "
		    "not found\n");
		return 1;
	}

	g = open_dump(argv[1], "samples.rtprof", &fd);
	write_samples(g, &self, self.path);
	close_dump(g, fd);

	g = open_dump(argv[1], "sysroot.rtprof", &fd);
	write_samples(g, &self, "/rtprof-nonexistent/bin/gecko_samples_gen");
	close_dump(g, fd);

	g = open_dump(argv[1], "plain.rtprof", &fd);
	header(g, 4343, "plain");
	CK(dg_thread(g, 200, "main", 2, MS(0), 0));
	CK(dg_string(g, REF_START, "start"));
	CK(dg_rec_instant(g, 200, MS(1), REF_START, 0));
	CK(dg_trailer(g, MS(3), 5000000000 + 3000000));
	close_dump(g, fd);

	snprintf(path, sizeof(path), "%s/expect.txt", argv[1]);
	f = fopen(path, "w");
	if (f == NULL)
		die(path, -errno);
	fprintf(f, "exe %s\n", self.path);
	fprintf(f, "lib %s\n", strrchr(self.path, '/') + 1);
	fprintf(f, "inner 0x%llx\n", (unsigned long long)(uintptr_t)&gs_inner);
	fprintf(f, "start %llu\nend %llu\noffset %llu\nbuildid ",
	    (unsigned long long)self.start, (unsigned long long)self.end,
	    (unsigned long long)self.offset);
	for (size_t i = 0; i < self.build_id_len; i++)
		fprintf(f, "%02x", self.build_id[i]);
	fprintf(f, "\n");
	if (fclose(f) != 0)
		die(path, -errno);

	record_real(argv[1]);
	return 0;
}
