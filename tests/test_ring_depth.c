/*
 * test_ring_depth - a stream deepens the empty ring of a thread that runs
 * it low, within its share of the memory limit (core/writer.c
 * ring_depth()).
 *
 * The writer refills a thread's ring once per round (flush interval, here
 * 50 ms); between rounds a thread has only what its ring holds. A thread
 * records bursts of N chunks' worth of marks, each far shorter than a round,
 * and sleeps across rounds between them:
 *   - stream, N = 64, prefill 4: the first bursts drop (4 chunks queued),
 *     then the ring has deepened and bursts record whole (no drop in the
 *     last three);
 *   - stream, N = 200 with a pool of ~240 chunks: a thread's ring stops at
 *     half the pool (its share: half of what other rings do not hold), so the
 *     bursts keep dropping (a ring of the full 255 would take them);
 *   - flight recorder, N = 64: refills there recycle kept chunks, so the
 *     ring keeps the prefill and every burst drops;
 *   - stream, prefill 64: a thread that records steadily, 3 chunks every
 *     5 ms (never below a quarter of its ring at a refill, no drop), gets a
 *     ring of twice what it took in 100 ms (~120), so that a burst of 75
 *     chunks after it records whole (64 would drop).
 * Bursts that took longer than a fifth of a round (the thread was off its
 * CPU, and a round may have refilled it meanwhile), or in which a round
 * wrote chunks (a stream's writer goes on while full chunks wait, refilling
 * the ring as the burst runs), are not counted and are recorded again.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rtprof.h"
#include "testutil.h"

#define CHUNK 4096u
#define MARKS_PER_CHUNK (CHUNK / 22u)
#define FLUSH_US 50000u
#define BURSTS 12

static uint64_t
drops(void)
{
	struct rtprof_thread_stats st;

	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&st), 0);
	return st.dropped_full;
}

/* The chunks the writer wrote so far (each round writes what filled). */
static uint64_t
written(void)
{
	struct rtprof_session_status st;

	RTPROF_CHECK_EQ(rtprof_session_status_get(&st), 0);
	return st.chunks_written;
}

/* One burst of @nchunks chunks' worth of marks, undisturbed: its drops. */
static uint64_t
burst(unsigned nchunks)
{
	for (;;) {
		uint64_t d0 = drops(), w0 = written(), t0 = mono_ns(), t1;
		int round;

		for (unsigned i = 0; i < nchunks * MARKS_PER_CHUNK; i++)
			rtprof_mark("burst", RTPROF_CAT_OTHER);
		t1 = mono_ns();
		/* A stream's round that came during the burst wrote chunks
		 * and refilled the ring meanwhile (the writer goes on while
		 * full chunks wait): not a burst between rounds. */
		round = written() != w0;
		/* Across writer rounds: its chunks are collected, the ring
		 * refilled (and deepened) before the next burst; off the
		 * writer's beat by 0-20 ms, so that a burst that met a round
		 * does not meet the next one too. */
		usleep(3 * FLUSH_US + (unsigned)(t1 / 1000 % 20000));
		if (t1 - t0 < FLUSH_US * 1000u / 5 && !round)
			return drops() - d0;
		fprintf(stderr, "test_ring_depth: a burst took %.1f ms%s: "
		    "again\n", (double)(t1 - t0) / 1e6,
		    round ? " with a writer round in it" : "");
	}
}

/* About 1 s of 3 chunks' worth of marks every 5 ms. */
static void
steady(void)
{
	for (int step = 0; step < 200; step++) {
		for (unsigned i = 0; i < 3 * MARKS_PER_CHUNK; i++)
			rtprof_mark("steady", RTPROF_CAT_OTHER);
		usleep(5000);
	}
}

/* @n bursts of @nchunks in a session of @mode with @prefill, after about 1 s
 * of steady() when @warm; their drops in @out. */
static void
session(enum rtprof_mode mode, uint32_t prefill, int warm, unsigned nchunks,
    uint64_t *out, unsigned n)
{
	struct rtprof_settings s;
	struct rtprof_session_status st;
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	RTPROF_CHECK(fd >= 0);
	memset(&s, 0, sizeof(s));
	s.struct_size = sizeof(s);
	s.mode = mode;
	s.fd = fd;
	s.chunk_size = CHUNK;
	s.memory_limit = 1u << 20;
	s.prefill = prefill;
	s.flush_interval_us = FLUSH_US;
	s.sample_interval_us = RTPROF_SAMPLING_OFF;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	usleep(3 * FLUSH_US);
	if (warm)
		steady();
	for (unsigned i = 0; i < n; i++) {
		out[i] = burst(nchunks);
		fprintf(stderr, "test_ring_depth: mode %d, %u chunks: burst %u "
		    "dropped %llu\n", (int)mode, nchunks, i,
		    (unsigned long long)out[i]);
	}
	RTPROF_CHECK_EQ(rtprof_session_status_get(&st), 0);
	RTPROF_CHECK_LE(st.memory_bytes, (uint64_t)(1u << 20) + (64u << 10));
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	close(fd);
}

int
main(void)
{
	uint64_t d[BURSTS];
	int late = 0;

	RTPROF_CHECK_EQ(rtprof_thread_register("burst", 0), 0);

	/* Deepens: early bursts drop, the last three record whole. */
	session(RTPROF_MODE_STREAM, 4, 0, 64, d, BURSTS);
	RTPROF_CHECK(d[0] > 0 || d[1] > 0);
	for (int i = BURSTS - 3; i < BURSTS; i++)
		RTPROF_CHECK_EQ(d[i], 0);

	/* Within its share: half of ~240 chunks holds no burst of 200. */
	session(RTPROF_MODE_STREAM, 4, 0, 200, d, BURSTS);
	for (int i = BURSTS - 5; i < BURSTS; i++)
		late += d[i] > 0;
	RTPROF_CHECK_GE(late, 4);

	/* A flight recorder keeps the prefill. */
	late = 0;
	session(RTPROF_MODE_FLIGHT_RECORDER, 4, 0, 64, d, BURSTS);
	for (int i = BURSTS - 5; i < BURSTS; i++)
		late += d[i] > 0;
	RTPROF_CHECK_GE(late, 4);

	/* Deepened by its steady rate: the first burst after it is whole. */
	session(RTPROF_MODE_STREAM, 64, 1, 75, d, 1);
	RTPROF_CHECK_EQ(d[0], 0);

	RTPROF_CHECK_EQ(rtprof_thread_unregister(), 0);
	printf("test_ring_depth: ok\n");
	return 0;
}
