/*
 * record_probe.c - `rtprof record` says once how the processes it starts
 * will be sampled, instead of every process saying it on the program's
 * stderr. Context: the launcher's main thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/perf_probe.h"
#include "record_probe.h"

void
rtprof_record_say_sampling(const char *prog)
{
	const char *env = getenv("RTPROF_SAMPLER");
	char why[320];
	int err = 0, level;

	if (env != NULL && strcmp(env, "signal") == 0)
		return;
	level = rtprof__perf_probe(&err);
	if (level == RTPROF__PERF_KERNEL || (level == RTPROF__PERF_NONE &&
	    err == 0))
		return;
	rtprof__perf_why(level, err, why, sizeof(why));
	if (level == RTPROF__PERF_NONE)
		fprintf(stderr, "%s: sampling with signals (a blocking call may "
		    "end with EINTR): %s\n", prog, why);
	else
		fprintf(stderr, "%s: note: sampling with %s\n", prog, why);
	setenv("RTPROF_SAMPLER_QUIET", "1", 1);
}
