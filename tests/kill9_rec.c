/*
 * kill9_rec.c - a recorder that test_kill9 kills with SIGKILL and
 * test_memcheck runs under valgrind.
 *
 *   kill9_rec DUMP [MS] [flight] [nosampling] [poison | hole]
 *
 * Three registered threads ("dsp", real-time: sampled from its labels;
 * "worker 1" and "worker 2": interrupted by the sampler's signal) record
 * continuously: labels, begin/end, instant and complete markers, typed
 * markers (every field kind, copied strings of every length from 0 to 40
 * bytes so that records end at every alignment), a shared and a per-thread
 * counter, sleep and wake, with a little computation in between. The
 * session streams to DUMP (created or truncated) in 4 KiB chunks (2 MiB
 * of them) with a 1 ms writer period, so DATA frames reach the file while
 * it runs; the sampler runs every 1 ms unless "nosampling". Without MS it
 * never stops by itself (test_kill9 kills it); with MS it stops the
 * session after MS milliseconds, joins its threads and exits 0 ("flight":
 * flight-recorder mode, 256 KiB of chunks, so the oldest are recycled,
 * written at stop).
 *
 * Under valgrind memcheck (test_memcheck), every thread marks the unused
 * rest of its current chunk undefined before each step: the pool zeroes
 * chunks when it allocates them, so without this a record that leaves a
 * byte unwritten (padding, an unused field) would send zeros and memcheck
 * could not tell. With "poison" it marks the records it already committed
 * undefined too, which the writer then sends: memcheck must report it
 * (test_memcheck's proof that the check can fail). With "hole" it marks
 * nothing itself and every 8th step writes a typed marker whose copied
 * string's 8 bytes are never written: the library marks every chunk
 * undefined when it hands it to a thread (core/pool.c), so memcheck must
 * report the writev too (the proof that chunks kill9_rec does not mark,
 * such as the sampler's, are covered).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rtprof.h"

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define KILL9_MEMCHECK 1
#endif
#endif

#define NTHREADS 3

static const rtprof_marker_type *step_type;
static rtprof_counter *total;
static atomic_int stop;
static int poison, hole;

/*
 * Under memcheck, make the rest of the calling thread's current chunk
 * undefined ("poison": the whole chunk, committed records included). Reads
 * the recording state of the inline fast path (rtprof__tls in rtprof.h,
 * not API): [base, pos) holds the committed records, [pos, end) is the
 * owner's own, not yet committed space; no other thread writes either.
 * Context: the owner thread, between two recording calls.
 */
static void
undefine_chunk(void)
{
#ifdef KILL9_MEMCHECK
	unsigned char *from = poison ? rtprof__tls.base : rtprof__tls.pos;

	if (hole)
		return; /* only the library's own marking (core/pool.c) */
	if (RUNNING_ON_VALGRIND && from != NULL)
		VALGRIND_MAKE_MEM_UNDEFINED(from,
		    (size_t)(rtprof__tls.end - from));
#endif
}

static void
nap_us(long us)
{
	struct timespec t = { .tv_sec = 0, .tv_nsec = us * 1000L };

	/* The sampling signal may cut it short (EINTR): fine. */
	nanosleep(&t, NULL);
}

/* A little work for the sampler to find on the stack. */
static __attribute__((noinline)) double
compute(unsigned n)
{
	volatile double x = 1.0;

	for (unsigned i = 0; i < n; i++)
		x = x * 1.000001 + 0.5 / (i + 1);
	return x;
}

/* Step marker: index, mask, ratio, source, note. */
static void
step_marker(enum rtprof_phase phase, uint64_t t0, uint64_t t1, int64_t i,
    const char *note, size_t len)
{
	rtprof_rec r;

	if (!rtprof_marker_open(&r, step_type, phase, t0, t1))
		return;
	rtprof_put_i64(&r, i);
	rtprof_put_u64(&r, (uint64_t)i * 2654435761u);
	rtprof_put_f64(&r, (double)i / 7.0);
	rtprof_put_static_str(&r, "kill9_rec.c");
	rtprof_put_str(&r, note, len);
	rtprof_marker_close(&r);
}

/* "hole": a step marker whose note's 8 bytes are left unwritten. */
static void
hole_marker(int64_t i)
{
	rtprof_rec r;

	if (!rtprof_marker_open(&r, step_type, RTPROF_PHASE_INSTANT,
	    rtprof_now(), 0))
		return;
	rtprof_put_i64(&r, i);
	rtprof_put_u64(&r, 0);
	rtprof_put_f64(&r, 0.0);
	rtprof_put_static_str(&r, "kill9_rec.c");
	r.p[0] = 0xd9; /* str8 of 8 bytes, which are never written */
	r.p[1] = 8;
	r.p += 2 + 8;
	rtprof_marker_close(&r);
}

struct worker_arg {
	const char *name;
	unsigned flags;
};

static void *
worker(void *p)
{
	static const char text[] = "0123456789abcdefghijklmnopqrstuvwxyzABCD";
	const struct worker_arg *a = p;
	rtprof_counter *mine;
	char cname[32];

	RTPROF_CHECK_EQ(rtprof_thread_register(a->name, a->flags), 0);
	snprintf(cname, sizeof(cname), "%s steps", a->name);
	mine = rtprof_counter_declare(cname, "Steps", "steps of one thread");
	RTPROF_CHECK(mine != NULL);
	for (int64_t i = 0; !atomic_load_explicit(&stop,
	    memory_order_relaxed); i++) {
		size_t len = (size_t)(i % 41);
		uint64_t t0;

		undefine_chunk();
		RTPROF_LABEL_SCOPE("kill9 step");
		rtprof_begin("step", RTPROF_CAT_COMPUTE);
		{
			RTPROF_LABEL_SCOPE("compute");

			t0 = rtprof_now();
			compute(2000);
			rtprof_interval("compute", RTPROF_CAT_COMPUTE, t0,
			    rtprof_now());
		}
		rtprof_mark("tick", RTPROF_CAT_USER);
		step_marker(RTPROF_PHASE_INSTANT, rtprof_now(), 0, i, text, len);
		step_marker(RTPROF_PHASE_INTERVAL, t0, rtprof_now(), i,
		    text + len, sizeof(text) - 1 - len);
		if (hole && i % 8 == 0)
			hole_marker(i);
		rtprof_counter_add(total, 1);
		rtprof_counter_set(mine, i);
		rtprof_end("step", RTPROF_CAT_COMPUTE);
		if (i % 4 == 0) {
			/* Declared asleep: the sampler repeats its stack. */
			rtprof_thread_sleep();
			nap_us(2000);
			rtprof_thread_wake();
		} else {
			nap_us(1000);
		}
	}
	RTPROF_CHECK_EQ(rtprof_thread_unregister(), 0);
	return NULL;
}

int
main(int argc, char **argv)
{
	static const struct rtprof_marker_schema step = {
		.name = "Step",
		.category = RTPROF_CAT_COMPUTE,
		.tooltip_label = "Step {marker.data.index}",
		.table_label = "{marker.data.note}",
		.chart_label = "{marker.data.index}",
		.nfields = 5,
		.fields = {
			{ "index", "Index", "integer", RTPROF_FIELD_I64 },
			{ "mask", "Mask", "integer", RTPROF_FIELD_U64 },
			{ "ratio", "Ratio", "number", RTPROF_FIELD_F64 },
			{ "source", "Source", "file-path",
			    RTPROF_FIELD_STATIC_STR },
			{ "note", "Note", "string", RTPROF_FIELD_STR },
		},
	};
	static const struct worker_arg args[NTHREADS] = {
		{ "dsp", RTPROF_THREAD_RT },
		{ "worker 1", 0 },
		{ "worker 2", 0 },
	};
	struct rtprof_settings s;
	pthread_t th[NTHREADS];
	long ms = -1;
	int fd, flight = 0, sampling = 1;

	for (int i = 2; i < argc; i++) {
		char *end;

		if (strcmp(argv[i], "flight") == 0) {
			flight = 1;
		} else if (strcmp(argv[i], "nosampling") == 0) {
			sampling = 0;
		} else if (strcmp(argv[i], "poison") == 0) {
			poison = 1;
		} else if (strcmp(argv[i], "hole") == 0) {
			hole = 1;
		} else {
			ms = strtol(argv[i], &end, 10);
			if (*end != '\0' || end == argv[i] || ms < 0)
				argc = 0;
		}
	}
	if (argc < 2) {
		fprintf(stderr, "usage: kill9_rec DUMP [MS] [flight] "
		    "[nosampling] [poison | hole]\n");
		return 2;
	}
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	RTPROF_CHECK(fd >= 0);
	step_type = rtprof_marker_type_declare(&step);
	RTPROF_CHECK(step_type != NULL);
	total = rtprof_counter_declare("steps", "Steps", "steps of all threads");
	RTPROF_CHECK(total != NULL);

	memset(&s, 0, sizeof(s));
	s.struct_size = sizeof(s);
	s.fd = fd;
	s.mode = flight ? RTPROF_MODE_FLIGHT_RECORDER : RTPROF_MODE_STREAM;
	s.chunk_size = 4096;
	/* Small pools: allocating (and zeroing) the default 32 MiB would
	 * delay the first frame by tens of milliseconds. */
	s.memory_limit = flight ? 256u << 10 : 2u << 20;
	s.flush_interval_us = 1000;
	s.sample_interval_us = sampling ? 1000 : RTPROF_SAMPLING_OFF;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	for (int i = 0; i < NTHREADS; i++)
		RTPROF_CHECK_EQ(pthread_create(&th[i], NULL, worker,
		    (void *)&args[i]), 0);
	if (ms < 0) {
		for (;;)
			pause();
	}
	nap_us(ms * 1000 % 1000000);
	sleep((unsigned)(ms / 1000));
	atomic_store(&stop, 1);
	for (int i = 0; i < NTHREADS; i++)
		RTPROF_CHECK_EQ(pthread_join(th[i], NULL), 0);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	close(fd);
	return 0;
}
