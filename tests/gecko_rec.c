/*
 * gecko_rec.c - record the deterministic dump that test_gecko converts.
 *
 *   gecko_rec DUMP [nomain | twice]
 *
 * Main thread and a worker that exits early; instant, begin/end, complete
 * and typed markers (every field kind, including a copied string that is
 * not valid UTF-8 and a unique-string field); a user counter and a
 * "Memory" counter; a pause (with a marker inside it, which must not
 * appear); sleep and wake. tests/test_gecko_content.py knows exactly what
 * this program records: keep the two in step. With "nomain", only the
 * worker registers (the converter must make up a GeckoMain thread). With
 * "twice", the main thread records two sessions into the same dump, one
 * instant marker each ("first", then "second"), 20 ms apart. With the
 * environment variable GECKO_REC_WAIT set, the default recording waits for
 * a byte on stdin just before starting its session, and prints the wall
 * clock (CLOCK_REALTIME, ns) read just before the start (tests start two
 * recorders a known delay apart, without process start-up jitter, and know
 * when each session really started).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rtprof.h"

static const rtprof_marker_type *load_type;

static void
nap_ms(long ms)
{
	struct timespec t = { .tv_sec = 0, .tv_nsec = ms * 1000000L };

	nanosleep(&t, NULL);
}

/* Load marker: count, size, ratio, file, note, tag. */
static void
load_marker(enum rtprof_phase phase, uint64_t t0, uint64_t t1, int64_t count,
    const char *note)
{
	rtprof_rec r;

	if (!rtprof_marker_open(&r, load_type, phase, t0, t1))
		return;
	rtprof_put_i64(&r, count);
	rtprof_put_u64(&r, 4096);
	rtprof_put_f64(&r, 0.5);
	rtprof_put_static_str(&r, "/data/a.wav");
	rtprof_put_str(&r, note, strlen(note));
	rtprof_put_str(&r, "tag-1", 5);
	rtprof_marker_close(&r);
}

static void *
worker(void *arg)
{
	(void)arg;
	RTPROF_CHECK_EQ(rtprof_thread_register("worker", 0), 0);
	rtprof_mark("worker start", RTPROF_CAT_USER);
	rtprof_thread_sleep();
	nap_ms(2);
	rtprof_thread_wake();
	load_marker(RTPROF_PHASE_BEGIN, rtprof_now(), 0, 7, "begun");
	nap_ms(1);
	load_marker(RTPROF_PHASE_END, rtprof_now(), 0, 8, "ended");
	RTPROF_CHECK_EQ(rtprof_thread_unregister(), 0);
	return NULL;
}

int
main(int argc, char **argv)
{
	static const struct rtprof_marker_schema load = {
		.name = "Load",
		.category = RTPROF_CAT_IO,
		.display = RTPROF_DISPLAY_MARKER_CHART |
		    RTPROF_DISPLAY_MARKER_TABLE |
		    RTPROF_DISPLAY_TIMELINE_OVERVIEW,
		.tooltip_label = "Load {marker.data.file}",
		.table_label = "{marker.data.note}",
		.chart_label = "{marker.data.count}",
		.nfields = 6,
		.fields = {
			{ "count", "Count", "integer", RTPROF_FIELD_I64 },
			{ "size", "Size", "bytes", RTPROF_FIELD_U64 },
			{ "ratio", "Ratio", "percentage", RTPROF_FIELD_F64 },
			{ "file", "File", "file-path", RTPROF_FIELD_STATIC_STR },
			{ "note", "Note", "string", RTPROF_FIELD_STR },
			{ "tag", "Tag", "unique-string", RTPROF_FIELD_STR },
		},
	};
	struct rtprof_settings s;
	rtprof_counter *queue, *heap;
	pthread_t w;
	uint64_t t0;
	int fd;

	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "nomain") &&
	    strcmp(argv[2], "twice"))) {
		fprintf(stderr, "usage: gecko_rec DUMP [nomain | twice]\n");
		return 2;
	}
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	RTPROF_CHECK(fd >= 0);
	if (argc == 3 && strcmp(argv[2], "twice") == 0) {
		RTPROF_CHECK_EQ(rtprof_thread_register("main",
		    RTPROF_THREAD_MAIN), 0);
		memset(&s, 0, sizeof(s));
		s.struct_size = sizeof(s);
		s.fd = fd;
		s.sample_interval_us = RTPROF_SAMPLING_OFF;
		RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
		rtprof_mark("first", RTPROF_CAT_USER);
		RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
		nap_ms(20);
		RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
		rtprof_mark("second", RTPROF_CAT_USER);
		RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
		close(fd);
		return 0;
	}
	if (argc == 3) {
		load_type = rtprof_marker_type_declare(&load);
		RTPROF_CHECK(load_type != NULL);
		memset(&s, 0, sizeof(s));
		s.struct_size = sizeof(s);
		s.fd = fd;
		s.sample_interval_us = RTPROF_SAMPLING_OFF;
		RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
		RTPROF_CHECK_EQ(pthread_create(&w, NULL, worker, NULL), 0);
		RTPROF_CHECK_EQ(pthread_join(w, NULL), 0);
		RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
		close(fd);
		return 0;
	}
	RTPROF_CHECK_EQ(rtprof_thread_register("main", RTPROF_THREAD_MAIN), 0);
	load_type = rtprof_marker_type_declare(&load);
	RTPROF_CHECK(load_type != NULL);
	queue = rtprof_counter_declare("queue depth", "Queue", "items queued");
	heap = rtprof_counter_declare("heap", "Memory", "bytes allocated");
	RTPROF_CHECK(queue != NULL && heap != NULL);

	if (getenv("GECKO_REC_WAIT") != NULL) {
		char go;

		RTPROF_CHECK_EQ(read(STDIN_FILENO, &go, 1), 1);
	}
	memset(&s, 0, sizeof(s));
	s.struct_size = sizeof(s);
	s.fd = fd;
	/* Markers and counters only: samples have their own tests. */
	s.sample_interval_us = RTPROF_SAMPLING_OFF;
	s.flush_interval_us = 2000;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	if (getenv("GECKO_REC_WAIT") != NULL) {
		/* The wall clock right after the session took its start pair
		 * (setting up the chunk pool before it takes a while under
		 * sanitizers): test_gecko_multi compares the two. */
		struct timespec now;

		RTPROF_CHECK_EQ(clock_gettime(CLOCK_REALTIME, &now), 0);
		printf("%lld\n", (long long)now.tv_sec * 1000000000LL +
		    now.tv_nsec);
		fflush(stdout);
	}

	rtprof_mark("start", RTPROF_CAT_USER);
	rtprof_begin("phase A", RTPROF_CAT_IO);
	nap_ms(1);
	rtprof_end("phase A", RTPROF_CAT_IO);
	t0 = rtprof_now();
	nap_ms(1);
	rtprof_interval("compute", RTPROF_CAT_COMPUTE, t0, rtprof_now());
	load_marker(RTPROF_PHASE_INSTANT, rtprof_now(), 0, 1,
	    "bad \xff utf8 \"q\" \\");
	t0 = rtprof_now();
	nap_ms(1);
	load_marker(RTPROF_PHASE_INTERVAL, t0, rtprof_now(), 2, "ok");
	rtprof_counter_set(queue, 3);
	rtprof_counter_set(queue, 5);
	rtprof_counter_add(heap, 1000);
	rtprof_counter_add(heap, 500);
	rtprof_counter_add(heap, -200);

	RTPROF_CHECK_EQ(rtprof_session_pause(), 0);
	rtprof_mark("hidden", RTPROF_CAT_USER);
	nap_ms(2);
	RTPROF_CHECK_EQ(rtprof_session_resume(), 0);

	RTPROF_CHECK_EQ(pthread_create(&w, NULL, worker, NULL), 0);
	RTPROF_CHECK_EQ(pthread_join(w, NULL), 0);

	rtprof_thread_sleep();
	nap_ms(2);
	rtprof_thread_wake();
	rtprof_mark("end", RTPROF_CAT_USER);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	close(fd);
	return 0;
}
