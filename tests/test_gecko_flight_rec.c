/*
 * test_gecko_flight_rec.c - a real flight-recorder dump that overflows its
 * memory limit, for test_gecko_flight.py (keep the two in step).
 *
 *   test_gecko_flight_rec DUMP
 *
 * The main thread registers as "main", starts a flight-recorder session
 * (RTPROF_MODE_FLIGHT_RECORDER, 4 KiB chunks, about 16 of them, no
 * sampler) on DUMP and records N instant "Seq" markers whose field "n" is
 * 0, 1, ..., N - 1: far more than the memory holds, so the oldest chunks
 * are recycled. rtprof_session_stop() writes what is kept. It then prints
 * what the recorder knows, "key value" lines on stdout: tid, n (markers
 * attempted), recycled, dropped_full, dropped_nested (this thread's
 * rtprof_thread_stats over the session).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "rtprof.h"

#define N 100000
#define CHUNK 4096

static const rtprof_marker_type *seq_type;

static void
seq_mark(uint64_t v)
{
	rtprof_rec r;

	if (rtprof_marker_open(&r, seq_type, RTPROF_PHASE_INSTANT,
	    rtprof_now(), 0)) {
		rtprof_put_u64(&r, v);
		rtprof_marker_close(&r);
	}
}

int
main(int argc, char **argv)
{
	static const struct rtprof_marker_schema seq = {
		.name = "Seq",
		.category = RTPROF_CAT_OTHER,
		.nfields = 1,
		.fields = { { "n", NULL, "integer", RTPROF_FIELD_U64 } },
	};
	struct rtprof_thread_stats st0, st1;
	struct rtprof_settings s;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: test_gecko_flight_rec DUMP\n");
		return 2;
	}
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	RTPROF_CHECK(fd >= 0);
	RTPROF_CHECK_EQ(rtprof_thread_register("main", 0), 0);
	seq_type = rtprof_marker_type_declare(&seq);
	RTPROF_CHECK(seq_type != NULL);
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&st0), 0);

	memset(&s, 0, sizeof(s));
	s.struct_size = sizeof(s);
	s.fd = fd;
	s.mode = RTPROF_MODE_FLIGHT_RECORDER;
	s.chunk_size = CHUNK;
	s.memory_limit = 16 * CHUNK + 16 * 256;
	s.flush_interval_us = 2000;
	s.sample_interval_us = RTPROF_SAMPLING_OFF;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	for (uint64_t i = 0; i < N; i++) {
		seq_mark(i);
		/* Let the writer thread release full chunks now and then (as
		 * tests/test_roundtrip.c does): recycled, not dropped. */
		if (i % 250 == 0)
			usleep(3000);
	}
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&st1), 0);
	RTPROF_CHECK_EQ(close(fd), 0);

	printf("tid %d\n", (int)gettid());
	printf("n %d\n", N);
	printf("recycled %" PRIu64 "\n", st1.recycled - st0.recycled);
	printf("dropped_full %" PRIu64 "\n", st1.dropped_full -
	    st0.dropped_full);
	printf("dropped_nested %" PRIu64 "\n", st1.dropped_nested -
	    st0.dropped_nested);
	return fflush(stdout) == 0 ? 0 : 1;
}
