/*
 * bench_cases.c - the rtprof operations measured by bench_hotpath, written
 * as an application would write them (the public inline API only).
 *
 * Built twice (bench/CMakeLists.txt): as is (functions *_on) and with
 * RTPROF_DISABLE (functions *_off, every call compiles to nothing), so the
 * driver reports each operation's cost over the bare loop (style.md 14).
 */
#ifdef RTPROF_DISABLE
#define BENCH_V(x) x##_off
#else
#define BENCH_V(x) x##_on
#endif

#include "harness.h"

BENCH_DEFINE(BENCH_V(bench_loop_mark), BENCH_V(bench_lat_mark),
    rtprof_mark("bench.mark", RTPROF_CAT_OTHER))

BENCH_DEFINE(BENCH_V(bench_loop_interval), BENCH_V(bench_lat_interval),
    rtprof_begin("bench.interval", RTPROF_CAT_OTHER);
    rtprof_end("bench.interval", RTPROF_CAT_OTHER))

BENCH_DEFINE(BENCH_V(bench_loop_marker2), BENCH_V(bench_lat_marker2),
    rtprof_rec r;
    if (rtprof_marker_open(&r, c->type2, RTPROF_PHASE_INSTANT, rtprof_now(), 0)) {
	    rtprof_put_i64(&r, (int64_t)i);
	    rtprof_put_i64(&r, -(int64_t)i);
	    rtprof_marker_close(&r);
    })

BENCH_DEFINE(BENCH_V(bench_loop_label), BENCH_V(bench_lat_label),
    rtprof_label_push("bench.label");
    rtprof_label_pop())

BENCH_DEFINE(BENCH_V(bench_loop_counter), BENCH_V(bench_lat_counter),
    rtprof_counter_add(c->counter, 1))

BENCH_DEFINE(BENCH_V(bench_loop_audio), BENCH_V(bench_lat_audio),
    rtprof_audio_begin(c->audio, 128, 48000);
    rtprof_audio_end(c->audio))

BENCH_DEFINE(BENCH_V(bench_loop_zone), BENCH_V(bench_lat_zone),
    rtprof_zone z = rtprof_zone_begin("bench.zone", RTPROF_CAT_USER);
    rtprof_zone_end(z))

BENCH_DEFINE(BENCH_V(bench_loop_text), BENCH_V(bench_lat_text),
    rtprof_text("bench.text", RTPROF_CAT_USER, bench_text()))

BENCH_DEFINE(BENCH_V(bench_loop_frame), BENCH_V(bench_lat_frame),
    rtprof_frame_mark_budget("bench.frame", 2666667))
