/*
 * record_probe.c - `rtprof record` says once how the processes it starts
 * will be sampled, instead of every process saying it on the program's
 * stderr, and starts reading the kernel's symbols when the processes will
 * take kernel stacks. Context: the launcher's main thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/perf_probe.h"
#include "kreason.h"
#include "record_probe.h"

static void *
warm(void *arg)
{
	(void)arg;
	rtprof_kreason_warm();
	return NULL;
}

/* The processes will take the kernel's stacks where they block: the
 * converter will name the reasons with the kernel's symbols, read now on
 * a thread of their own while the program runs (not after it). */
static void
kernel_symbols_early(void)
{
	pthread_attr_t a;
	pthread_t t;

	if (rtprof__perf_probe_kstack() != 0 || pthread_attr_init(&a) != 0)
		return;
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_create(&t, &a, warm, NULL);
	pthread_attr_destroy(&a);
}

void
rtprof_record_say_sampling(const char *prog)
{
	const char *env = getenv("RTPROF_SAMPLER");
	char why[320];
	int err = 0, level;

	if (env != NULL && strcmp(env, "signal") == 0)
		return;
	level = rtprof__perf_probe(&err);
	if (level == RTPROF__PERF_KERNEL)
		kernel_symbols_early();
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
