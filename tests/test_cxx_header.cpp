// test_cxx_header.cpp - rtprof.h compiles as C++ with -Wall -Wextra
// -Wpedantic -Werror, and the API works from C++ (most audio code is C++).
#include "rtprof.h"

#include <cstdio>
#include <cstring>

int
main()
{
	static const rtprof_marker_schema schema = {
		"Cxx", RTPROF_CAT_AUDIO, 0, nullptr, nullptr, nullptr, 1,
		{ { "n", "N", "integer", RTPROF_FIELD_I64 } }
	};
	if (rtprof_thread_register("cxx", RTPROF_THREAD_RT) != 0)
		return 1;
	const rtprof_marker_type *t = rtprof_marker_type_declare(&schema);
	rtprof_counter *c = rtprof_counter_declare("c", "Other", "");
	if (t == nullptr || c == nullptr)
		return 1;
	{
		RTPROF_LABEL_SCOPE("scope");
		rtprof_mark("m", RTPROF_CAT_OTHER);
		rtprof_begin("b", RTPROF_CAT_OTHER);
		rtprof_end("b", RTPROF_CAT_OTHER);
		rtprof_interval("i", RTPROF_CAT_OTHER, rtprof_now(), rtprof_now());
		rtprof_rec r;
		if (rtprof_marker_open(&r, t, RTPROF_PHASE_INSTANT, rtprof_now(), 0)) {
			rtprof_put_i64(&r, -1);
			rtprof_marker_close(&r);
		}
		rtprof_counter_add(c, 2);
		rtprof_thread_sleep();
		rtprof_thread_wake();
	}
	rtprof_thread_stats st;
	if (rtprof_thread_stats_get(&st) != 0)
		return 1;
	// No session ran: all 8 recording calls were counted as outside.
	if (st.outside != 8) {
		std::printf("outside %llu, want 8\n", (unsigned long long)st.outside);
		return 1;
	}
	std::puts("test_cxx_header: ok");
	return 0;
}
