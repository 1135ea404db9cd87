/*
 * module_host.c - the programs of test_modules.py (module map over time,
 * the vDSO, stripped binaries). Linked with librtprof: RTPROF_FD=N
 * records it from process start; it also runs under `rtprof record`.
 *
 *   module_host plugin LIB_A LIB_B  after the session started: dlopen
 *       LIB_A, run its plugin_a_spin for 0.6 s of CPU, dlclose it (it is
 *       unloaded), then dlopen LIB_B (the same code with another name:
 *       the loader usually puts it where LIB_A was) and run plugin_b_spin
 *       for 0.3 s. Prints "a-spin ADDR", "b-spin ADDR", "a-unloaded 0|1".
 *   module_host spin                exe_spin (in this executable) for
 *       0.6 s of CPU: a stripped copy has no symbol for it. Prints
 *       "exe-spin ADDR".
 *   module_host vdso                clock_gettime(CLOCK_THREAD_CPUTIME_ID)
 *       in a loop for 0.5 s of CPU (the vDSO's code, then the kernel).
 *       Prints "vdso-range LO HI" from /proc/self/maps.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rtprof.h>

static double
thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs @name of library @path for @seconds of CPU; prints its address.
 * Return: the handle (NULL: failed, said). */
static void *
run_plugin(const char *path, const char *name, double seconds)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	unsigned long (*fn)(double);

	if (h == NULL) {
		fprintf(stderr, "module_host: %s\n", dlerror());
		return NULL;
	}
	*(void **)&fn = dlsym(h, name);
	if (fn == NULL) {
		fprintf(stderr, "module_host: %s\n", dlerror());
		dlclose(h);
		return NULL;
	}
	printf("%c-spin %#lx\n", name[7], (unsigned long)(uintptr_t)fn);
	fflush(stdout);
	fn(seconds);
	return h;
}

static int
plugin(const char *a, const char *b)
{
	void *h;

	usleep(50000); /* the session's first module map is written */
	if ((h = run_plugin(a, "plugin_a_spin", 0.6)) == NULL)
		return 1;
	dlclose(h);
	h = dlopen(a, RTLD_NOW | RTLD_NOLOAD);
	printf("a-unloaded %d\n", h == NULL);
	if (h != NULL)
		dlclose(h);
	if ((h = run_plugin(b, "plugin_b_spin", 0.3)) == NULL)
		return 1;
	dlclose(h);
	return 0;
}

/* The hot function of a stripped copy: several instructions in its loop,
 * one function. */
__attribute__((noinline)) static unsigned long
exe_spin(double seconds)
{
	double end = thread_cpu_s() + seconds;
	volatile unsigned long acc = 1, b = 3;

	do {
		for (unsigned i = 0; i < (1u << 16); i++) {
			acc = acc * 6364136223846793005ul + i;
			b ^= acc >> 7;
		}
	} while (thread_cpu_s() < end);
	return acc + b;
}

static int
vdso(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	double end;
	struct timespec ts;

	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi;

		if (strstr(line, "[vdso]") != NULL &&
		    sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			printf("vdso-range %lu %lu\n", lo, hi);
	}
	if (f != NULL)
		fclose(f);
	end = thread_cpu_s() + 0.5;
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	while ((double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 < end);
	return 0;
}

int
main(int argc, char **argv)
{
	/* Sampled when linked (RTPROF_FD); under `rtprof record` the
	 * preload library registers it already. */
	(void)rtprof_thread_register("main", RTPROF_THREAD_MAIN);
	if (argc == 4 && strcmp(argv[1], "plugin") == 0)
		return plugin(argv[2], argv[3]);
	if (argc == 2 && strcmp(argv[1], "spin") == 0) {
		printf("exe-spin %#lx\n", (unsigned long)(uintptr_t)&exe_spin);
		fflush(stdout);
		return exe_spin(0.6) == 0;
	}
	if (argc == 2 && strcmp(argv[1], "vdso") == 0)
		return vdso();
	fprintf(stderr, "usage: module_host plugin LIB_A LIB_B | spin | vdso\n");
	return 2;
}
