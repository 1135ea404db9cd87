/*
 * monotonic.h - CLOCK_MONOTONIC in milliseconds, for the tools' deadlines
 * and status lines (rtprof view's server, rtprof capture, rtprof record's
 * gathering). Context: any thread.
 */
#ifndef RTPROF_TOOLS_MONOTONIC_H
#define RTPROF_TOOLS_MONOTONIC_H

#include <stdint.h>
#include <time.h>

static inline int64_t
tool_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

#endif /* RTPROF_TOOLS_MONOTONIC_H */
