// bench_cases_cxx.cpp - the C++ operations of bench_hotpath (the
// rtprof::Zone scope object), written as C++ audio code would write them;
// built twice like bench_cases.c: as is (*_on) and with RTPROF_DISABLE
// (*_off, the bare loop).
#ifdef RTPROF_DISABLE
#define BENCH_V(x) x##_off
#else
#define BENCH_V(x) x##_on
#endif

#include "harness.h"

extern "C" {

// The zone ends inside the statement (its own block), so the latency loop
// times the destructor too.
BENCH_DEFINE(BENCH_V(bench_loop_zone_cxx), BENCH_V(bench_lat_zone_cxx),
    { rtprof::Zone z("bench.zone"); })

BENCH_DEFINE(BENCH_V(bench_loop_zone_text_cxx),
    BENCH_V(bench_lat_zone_text_cxx),
    {
	    rtprof::Zone z("bench.zone");
	    z.text(bench_text());
    })

} // extern "C"
