// zones_rec.cpp - record the dump test_zones.py converts and checks: the
// zone, text, flow, frame and category calls of rtprof.h, from C++ (the
// rtprof::Zone scope object) and through the C calls.
//
//   zones_rec DUMP
//
// test_zones.py knows what this program records; keep the two in step.
// Main thread "main":
//  - categories "DSP" (magenta) and "Disk" (brown) declared; "DSP" again
//    (same id), "Audio" (the built-in id 2), a bad colour (-EINVAL);
//  - rtprof::Zone "process" (DSP) with text "file-7.wav" (the buffer is
//    overwritten right after) and value 42, holding zone "inner" (User)
//    and a zone named after its function, "named_function";
//  - two overlapping zones both named "step" (Disk): the first begun ends
//    first, so only pairing by handle gets both right;
//  - zone "gain" (Audio) with the value 0.25, drawn red, a C scope zone "c scope"
//    (Compute) with a 300-byte text (kept: 255 bytes);
//  - text instants "open" (Disk) "/tmp/a file.wav" and "long" (300 'y'),
//    a text interval "load" (Disk) "plugin.so";
//  - 3 jobs: "job sent" (flow mark), handed to the worker, which runs a
//    zone "job" (DSP) carrying the flow and marks "job done"; back on
//    main, "job result" finishes the flow;
//  - frame set "audio block" (budget 2 ms): 13 marks, frames 5 and 10
//    take 5 ms; frame set "video" (no budget): 11 marks, frame 7 takes
//    20 ms, the others 1 ms;
//  - zone "never ends" (DSP), begun and never ended; then an end of a
//    zone that never began (handle 12345).
// Worker thread "worker": the "job" zones and "job done" marks.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "check.h"
#include "rtprof.h"

static int dsp, disk;
static int to_worker[2], to_main[2];

static void
nap_us(long us)
{
	struct timespec t = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&t, nullptr);
}

static void
named_function()
{
	RTPROF_ZONE_FUNC();
	nap_us(200);
}

static void *
worker(void *)
{
	uint64_t id;

	RTPROF_CHECK_EQ(rtprof_thread_register("worker", 0), 0);
	while (read(to_worker[0], &id, sizeof(id)) == (ssize_t)sizeof(id)) {
		{
			rtprof::Zone z("job", (unsigned)dsp);
			z.flow(id);
			nap_us(300);
		}
		rtprof_flow_mark("job done", (unsigned)dsp, id);
		RTPROF_CHECK(write(to_main[1], &id, sizeof(id)) ==
		    (ssize_t)sizeof(id));
	}
	RTPROF_CHECK_EQ(rtprof_thread_unregister(), 0);
	return nullptr;
}

static void
categories()
{
	dsp = rtprof_category_declare("DSP", "magenta");
	disk = rtprof_category_declare("Disk", "brown");
	RTPROF_CHECK(dsp >= RTPROF_CAT_COUNT && disk == dsp + 1);
	RTPROF_CHECK_EQ(rtprof_category_declare("DSP", "red"), dsp);
	RTPROF_CHECK_EQ(rtprof_category_declare("Audio", "red"),
	    (int)RTPROF_CAT_AUDIO);
	RTPROF_CHECK_EQ(rtprof_category_declare("X", "chartreuse"), -EINVAL);
	RTPROF_CHECK_EQ(rtprof_category_declare("", "red"), -EINVAL);
}

static void
zones()
{
	char buf[400];

	{
		rtprof::Zone z("process", (unsigned)dsp);
		std::snprintf(buf, sizeof(buf), "file-%d.wav", 7);
		z.text(buf);
		std::memset(buf, 'X', 20);      // copied: no effect
		z.value((int64_t)42);
		{
			RTPROF_ZONE("inner");
			nap_us(100);
		}
		named_function();
	}
	rtprof_zone a = rtprof_zone_begin("step", (unsigned)disk);
	nap_us(100);
	rtprof_zone b = rtprof_zone_begin("step", (unsigned)disk);
	nap_us(100);
	rtprof_zone_end(a);
	nap_us(300);
	rtprof_zone_end(b);
	{
		rtprof::Zone z("gain", RTPROF_CAT_AUDIO);
		z.value(0.25);
		z.color(RTPROF_COLOR_RED);      // over Audio's orange
	}
	std::memset(buf, 'z', 300);
	buf[300] = '\0';
	{
		RTPROF_ZONE_SCOPE(zs, "c scope", RTPROF_CAT_COMPUTE);
		rtprof_zone_text(zs, buf);
	}
}

static void
texts()
{
	char buf[400];
	uint64_t t0;

	std::snprintf(buf, sizeof(buf), "/tmp/a file.wav");
	rtprof_text("open", (unsigned)disk, buf);
	std::memset(buf, 'y', 300);
	buf[300] = '\0';
	rtprof_text("long", RTPROF_CAT_USER, buf);
	t0 = rtprof_now();
	nap_us(200);
	rtprof_text_interval("load", (unsigned)disk, t0, rtprof_now(),
	    "plugin.so");
}

static void
flows()
{
	for (int i = 0; i < 3; i++) {
		uint64_t id = rtprof_flow_new(), back = 0;

		rtprof_flow_mark("job sent", (unsigned)dsp, id);
		RTPROF_CHECK(write(to_worker[1], &id, sizeof(id)) ==
		    (ssize_t)sizeof(id));
		RTPROF_CHECK(read(to_main[0], &back, sizeof(back)) ==
		    (ssize_t)sizeof(back));
		RTPROF_CHECK(back == id);
		rtprof_flow_finish("job result", (unsigned)dsp, id);
	}
}

static void
frames()
{
	rtprof_frame_mark_budget("audio block", 2000000);
	for (int i = 1; i <= 12; i++) {
		nap_us(i == 5 || i == 10 ? 5000 : 500);
		rtprof_frame_mark_budget("audio block", 2000000);
	}
	rtprof_frame_mark("video");
	for (int i = 1; i <= 10; i++) {
		nap_us(i == 7 ? 20000 : 1000);
		rtprof_frame_mark("video");
	}
}

int
main(int argc, char **argv)
{
	struct rtprof_settings s;
	pthread_t w;
	int fd;

	if (argc != 2) {
		std::fprintf(stderr, "usage: zones_rec DUMP\n");
		return 2;
	}
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	RTPROF_CHECK(fd >= 0);
	RTPROF_CHECK(pipe(to_worker) == 0 && pipe(to_main) == 0);
	RTPROF_CHECK_EQ(rtprof_thread_register("main", RTPROF_THREAD_MAIN), 0);
	categories();
	std::memset(&s, 0, sizeof(s));
	s.struct_size = sizeof(s);
	s.fd = fd;
	s.sample_interval_us = RTPROF_SAMPLING_OFF;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	RTPROF_CHECK_EQ(pthread_create(&w, nullptr, worker, nullptr), 0);
	zones();
	texts();
	flows();
	frames();
	(void)rtprof_zone_begin("never ends", (unsigned)dsp);
	{
		// A handle no begin of this thread made (as after a dropped
		// begin, the end still recorded): ignored, and counted.
		rtprof_zone stray = { 12345 };

		rtprof_zone_end(stray);
	}
	close(to_worker[1]);
	RTPROF_CHECK_EQ(pthread_join(w, nullptr), 0);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	close(fd);
	return 0;
}
