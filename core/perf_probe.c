/*
 * perf_probe.c - the sampler's perf events, and whether this process may
 * open them. No state, any thread.
 *
 * The kernel refuses them to processes without privileges where
 * kernel.perf_event_paranoid is above 2 (Debian's and Android's kernels
 * allow 3: nothing at all), refuses kernel-side sampling (the stacks where
 * threads go off CPU) above 1, and a seccomp filter (a container's default
 * profile) may refuse the system call whatever the setting. Root and
 * CAP_PERFMON are never refused.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "perf_probe.h"

#if defined(__x86_64__)
/* AX BX CX DX SI DI BP SP IP (bits 0-8), R8-R15 (16-23). */
#define REGS_MASK (0x1ffull | (0xffull << 16))
#elif defined(__aarch64__)
#define REGS_MASK ((1ull << 33) - 1)    /* X0-X30, SP, PC */
#elif defined(__arm__)
#define REGS_MASK 0xffffull             /* R0-R15 */
#else
#define REGS_MASK 0ull                  /* not sampled with perf here */
#endif

#define STACK_CLOCK 16384       /* user stack bytes per task-clock sample */
#define STACK_CS 8192           /* the same where a thread goes off CPU */

void
rtprof__perf_attr(struct perf_event_attr *a, int cs, uint64_t interval_ns,
    int kernel)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = cs ? PERF_COUNT_SW_CONTEXT_SWITCHES : PERF_COUNT_SW_TASK_CLOCK;
	a->sample_period = cs ? 1 : interval_ns;
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID |
	    PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = REGS_MASK;
	a->sample_stack_user = cs ? STACK_CS : STACK_CLOCK;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->sample_id_all = 1;
	a->context_switch = !cs;
	a->exclude_kernel = !kernel;
	a->exclude_hv = 1;
}

/*
 * rtprof__perf_attr_kstack - @a (a context-switch event) also takes the
 * kernel's stack where the thread goes off CPU: its callchain, kernel
 * frames only (the user stack is copied as before), so the reason can be
 * named (docs/wire-format.md, KSTACK).
 */
void
rtprof__perf_attr_kstack(struct perf_event_attr *a)
{
	a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	a->exclude_callchain_user = 1;
}

/*
 * rtprof__perf_probe_kstack - may this process take kernel stacks at
 * context switches? Context: the sampler (its own thread is tried).
 * Return: 0, or the errno the kernel refused with.
 */
int
rtprof__perf_probe_kstack(void)
{
	struct perf_event_attr a;
	int fd;

	rtprof__perf_attr(&a, 1, 1000000, 1);
	rtprof__perf_attr_kstack(&a);
	fd = rtprof__perf_open(&a, 0);
	if (fd < 0)
		return errno != 0 ? errno : EINVAL;
	close(fd);
	return 0;
}

int
rtprof__perf_open(struct perf_event_attr *a, int tid)
{
	return (int)syscall(SYS_perf_event_open, a, tid, -1, -1,
	    PERF_FLAG_FD_CLOEXEC);
}

int
rtprof__perf_probe(int *err)
{
	struct perf_event_attr a;

	*err = 0;
	if (REGS_MASK == 0)
		return RTPROF__PERF_NONE;
	for (int k = 1; k >= 0; k--) {
		int fd;

		rtprof__perf_attr(&a, 0, 1000000, k);
		fd = rtprof__perf_open(&a, 0);
		if (fd >= 0) {
			close(fd);
			return k ? RTPROF__PERF_KERNEL : RTPROF__PERF_USER;
		}
		*err = errno;
	}
	return RTPROF__PERF_NONE;
}

/* A number from a /proc file (@key: the line's start, NULL: the first
 * number of the file), or @dflt. */
static int
proc_int(const char *path, const char *key, int dflt)
{
	char line[256];
	FILE *f = fopen(path, "re");
	int v = dflt;

	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		if (key == NULL) {
			if (sscanf(line, "%d", &v) != 1)
				v = dflt;
			break;
		}
		if (strncmp(line, key, strlen(key)) == 0) {
			if (sscanf(line + strlen(key), "%d", &v) != 1)
				v = dflt;
			break;
		}
	}
	if (f != NULL)
		fclose(f);
	return v;
}

void
rtprof__perf_why(int level, int err, char *buf, size_t n)
{
	int par = proc_int("/proc/sys/kernel/perf_event_paranoid", NULL, -99);
	int sec = proc_int("/proc/self/status", "Seccomp:", 0);

	if (level == RTPROF__PERF_KERNEL && err == 0)
		snprintf(buf, n, "perf events: task-clock samples, context "
		    "switches with the stacks where threads block, the "
		    "kernel's included (why they block)");
	else if (level == RTPROF__PERF_KERNEL)
		snprintf(buf, n, "perf events: task-clock samples, context "
		    "switches with the stacks where threads block (kernel "
		    "stacks refused: %s: no reasons for blocking)",
		    strerror(err));
	else if (level == RTPROF__PERF_USER)
		snprintf(buf, n, "perf events: task-clock samples of user code "
		    "(perf_event_paranoid %d allows no kernel-side sampling: "
		    "sudo sysctl kernel.perf_event_paranoid=1 adds the stacks "
		    "where threads block)", par);
	else if (err == 0)
		snprintf(buf, n, "no perf registers for this architecture");
	else if ((err == EACCES || err == EPERM) && sec != 0)
		snprintf(buf, n, "perf events refused (%s) under a seccomp "
		    "filter (Seccomp: %d in /proc/self/status; a container's "
		    "default profile does this): allow the perf_event_open "
		    "system call", strerror(err), sec);
	else if (err == EACCES || err == EPERM)
		snprintf(buf, n, "perf events refused (perf_event_paranoid "
		    "%d): sudo sysctl kernel.perf_event_paranoid=2 allows "
		    "them (1: with the stacks where threads block), as does "
		    "CAP_PERFMON", par);
	else
		snprintf(buf, n, "perf_event_open failed: %s", strerror(err));
}
