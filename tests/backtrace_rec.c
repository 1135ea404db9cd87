/*
 * backtrace_rec.c - a dump with "Blocked" markers and their BACKTRACE
 * records (docs/wire-format.md), written with the recorder itself, for
 * tests/test_backtrace.py (which knows exactly what is here: keep the two
 * in step).
 *
 *   backtrace_rec DUMP [sampled]
 *
 * The records are those librtprof-preload.so writes (core/preload.c): a
 * typed "Blocked" interval {call, fd, bytes}, then [12, t0, flags,
 * frame...] with the stack where the call blocked, outermost first, every
 * native frame a return address. Here the stack is taken with glibc's
 * backtrace(), so this test runs in every build (sanitizers included),
 * without LD_PRELOAD:
 *   - main thread: 3 x "fsync" from bt_outer() > bt_inner(), the stack
 *     ending (innermost) with the label frame "bt label"; 1 x
 *     "nanosleep" without a backtrace (a call under the threshold); then
 *     a BACKTRACE that follows no marker of its start (counted, unused);
 *   - thread "worker": 1 x "read" from bt_worker(), with its backtrace.
 * Without "sampled" the session does not sample (the threads get
 * placeholder samples, the backtraces their own stack rows after them);
 * with it, the sampler runs every ms while the main thread also spins in
 * bt_spin() for ~30 ms.
 */
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rtprof.h"
#include "wire.h"
#include "../core/blocked_schema.h"

static const rtprof_marker_type *blocked_type;
static volatile unsigned long sink;


static void
nap_us(long us)
{
	struct timespec t = { 0, us * 1000L };

	nanosleep(&t, NULL);
}

/* [12, t0, flags, frame...]: natives outermost first, then @label. */
static void
put_backtrace(uint64_t t0, void *const *ret, int n, const char *label)
{
	unsigned k = (unsigned)n + (label != NULL), arr = 3 + k;
	unsigned char *p = rtprof__open(14 + (size_t)k * 10);

	RTPROF_CHECK(p != NULL);
	p[0] = 0xdc;
	p[1] = (unsigned char)(arr >> 8);
	p[2] = (unsigned char)arr;
	p[3] = RTPROF_REC_BACKTRACE;
	p = rtprof__put_u64(p + 4, 0xcf, t0);
	*p++ = 0;
	for (int i = n - 1; i >= 0; i--)
		p = rtprof__put_u64(p, 0xcf, (uint64_t)(uintptr_t)ret[i]);
	if (label != NULL)
		p = rtprof__put_ptr(p, label);
	rtprof__close(p);
}

/*
 * A call of @call that "blocks" ~1 ms: its marker, then (@with_bt) the
 * stack of the function that called this one (innermost first from
 * backtrace(), from this function's return address on: its own frame and
 * whatever backtrace() adds, a sanitizer's interceptor, are skipped).
 */
__attribute__((noinline)) void
blocked_call(const char *call, int with_bt, const char *label)
{
	void *ret[64], *caller = __builtin_return_address(0);
	int n = backtrace(ret, 64), skip = 1;
	uint64_t t0 = rtprof_now(), t1;
	rtprof_rec r;

	for (int i = 0; i < n; i++) {
		if (ret[i] == caller) {
			skip = i;
			break;
		}
	}

	nap_us(1000);
	t1 = rtprof_now();
	RTPROF_CHECK(rtprof_marker_open(&r, blocked_type,
	    RTPROF_PHASE_INTERVAL, t0, t1));
	rtprof_put_static_str(&r, call);
	rtprof_put_i64(&r, 3);
	rtprof_put_i64(&r, -1);
	rtprof_put_str(&r, "", 0);
	rtprof_marker_close(&r);
	RTPROF_CHECK(n > skip + 1);
	if (with_bt)
		put_backtrace(t0, ret + skip, n - skip, label);
}

__attribute__((noinline)) void
bt_inner(void)
{
	blocked_call("fsync", 1, "bt label");
	sink++;
}

__attribute__((noinline)) void
bt_outer(void)
{
	for (int i = 0; i < 3; i++)
		bt_inner();
	sink++;
}

__attribute__((noinline)) void
bt_spin(long ms)
{
	uint64_t end = rtprof_now() + (uint64_t)(ms / 1e3 *
	    rtprof_ticks_per_second());

	while (rtprof_now() < end)
		sink++;
}

__attribute__((noinline)) void
bt_worker(void)
{
	blocked_call("read", 1, NULL);
	sink++;
}

static void *
worker(void *arg)
{
	(void)arg;
	RTPROF_CHECK_EQ(rtprof_thread_register("worker", 0), 0);
	bt_worker();
	RTPROF_CHECK_EQ(rtprof_thread_unregister(), 0);
	return NULL;
}

int
main(int argc, char **argv)
{
	struct rtprof_settings s;
	void *ret[4] = { (void *)(uintptr_t)bt_outer };
	pthread_t w;
	int fd, sampled = argc == 3 && strcmp(argv[2], "sampled") == 0;

	if (argc < 2 || argc > 3 || (argc == 3 && !sampled)) {
		fprintf(stderr, "usage: backtrace_rec DUMP [sampled]\n");
		return 2;
	}
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	RTPROF_CHECK(fd >= 0);
	RTPROF_CHECK_EQ(rtprof_thread_register("main", RTPROF_THREAD_MAIN), 0);
	blocked_type = rtprof_marker_type_declare(&rtprof__blocked_path_schema);
	RTPROF_CHECK(blocked_type != NULL);
	memset(&s, 0, sizeof(s));
	s.struct_size = sizeof(s);
	s.fd = fd;
	s.sample_interval_us = sampled ? 1000 : RTPROF_SAMPLING_OFF;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);

	if (sampled)
		bt_spin(30);
	bt_outer();
	blocked_call("nanosleep", 0, NULL);
	/* A backtrace whose marker is not right before it: not used. */
	put_backtrace(1, ret, 1, NULL);
	RTPROF_CHECK_EQ(pthread_create(&w, NULL, worker, NULL), 0);
	RTPROF_CHECK_EQ(pthread_join(w, NULL), 0);
	if (sampled)
		bt_spin(10);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	close(fd);
	return 0;
}
