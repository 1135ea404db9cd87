/*
 * module_plugin.c - a library that module_host loads after the session
 * started (dlopen), built twice (PLUGIN_SPIN names the function): the
 * plugin of test_modules.py, whose function must be named by its own
 * symbol, and told apart from the other build loaded at the same address
 * after the first one was unloaded.
 */
#include <time.h>

#ifndef PLUGIN_SPIN
#error "PLUGIN_SPIN names the function"
#endif

static double
thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Spins for @seconds of this thread's CPU time; returns a checksum. */
__attribute__((noinline, visibility("default"))) unsigned long
PLUGIN_SPIN(double seconds)
{
	double end = thread_cpu_s() + seconds;
	volatile unsigned long acc = 1;

	do {
		for (unsigned i = 0; i < (1u << 16); i++)
			acc = acc * 6364136223846793005ul + i;
	} while (thread_cpu_s() < end);
	return acc;
}
