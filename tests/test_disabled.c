/*
 * test_disabled.c - built with -DRTPROF_DISABLE and NOT linked with
 * librtprof: every call must compile to nothing. test_disabled.cmake checks
 * the object file references no rtprof symbol at all.
 */
#include <stdio.h>

#include "rtprof.h"

int
main(void)
{
	static const struct rtprof_marker_schema s = { "X", RTPROF_CAT_OTHER, 0,
		NULL, NULL, NULL, 0, { { NULL, NULL, NULL, RTPROF_FIELD_I64 } } };
	const rtprof_marker_type *t = rtprof_marker_type_declare(&s);
	rtprof_counter *c = rtprof_counter_declare("c", NULL, NULL);
	struct rtprof_settings set = { sizeof(set), RTPROF_MODE_STREAM, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	rtprof_rec r;

	rtprof_thread_register("main", 0);
	rtprof_session_start(&set);
	{
		RTPROF_LABEL_SCOPE("scope");
		rtprof_mark("m", RTPROF_CAT_OTHER);
		rtprof_begin("b", RTPROF_CAT_OTHER);
		rtprof_end("b", RTPROF_CAT_OTHER);
		if (rtprof_marker_open(&r, t, RTPROF_PHASE_INSTANT, rtprof_now(), 0)) {
			rtprof_put_i64(&r, 1);
			rtprof_marker_close(&r);
		}
		rtprof_counter_add(c, 1);
	}
	rtprof_session_stop();
	puts("test_disabled: ok");
	return 0;
}
