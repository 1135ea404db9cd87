/*
 * test_sampler_churn.c - threads come and go at a high rate while the
 * sampler samples every 100 us (run under TSan and ASan by test.sh).
 *
 * 4 spawner threads each start short-lived threads one after another
 * (2000 in all): each registers, pushes a label, spins for a random few
 * microseconds to a millisecond, and exits, half of them unregistering
 * explicitly and half through the thread-exit destructor; some sleep
 * (declared) before they exit. Checks: nothing crashes or deadlocks; the
 * dump decodes without damage; every sample names a thread the dump
 * describes; no sample of a thread is later than its unregistration (an
 * exited thread is never sampled or signalled); most threads were sampled
 * at least once, the sampler kept ticking.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dump_reader.h"
#include "rtprof.h"

#define SPAWNERS 4
#define PER_SPAWNER 500

static _Thread_local volatile uint64_t sink;

static uint64_t
rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *
short_main(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg, t0, spin_ns;

	RTPROF_CHECK_EQ(rtprof_thread_register("short", 0), 0);
	rtprof_label_push("short-work");
	spin_ns = 2000 + rnd(&seed) % 1000000;
	t0 = mono_ns();
	while (mono_ns() - t0 < spin_ns)
		sink = sink * 3 + 1;
	if (rnd(&seed) % 4 == 0) {
		struct timespec ts = { 0, 200000 };

		rtprof_thread_sleep();
		while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
			;
		rtprof_thread_wake();
	}
	rtprof_label_pop();
	if (rnd(&seed) % 2)
		RTPROF_CHECK_EQ(rtprof_thread_unregister(), 0);
	return NULL;            /* else: the exit destructor unregisters */
}

static void *
spawner_main(void *arg)
{
	uintptr_t id = (uintptr_t)arg;

	for (uintptr_t i = 0; i < PER_SPAWNER; i++) {
		pthread_t t;

		RTPROF_CHECK_EQ(pthread_create(&t, NULL, short_main,
		    (void *)(id * 100000 + i + 1)), 0);
		RTPROF_CHECK_EQ(pthread_join(t, NULL), 0);
	}
	return NULL;
}

/* Decoding. */
struct th {
	int64_t tid;
	int has_unreg;
	uint64_t unreg;
	uint64_t last_sample;
	uint64_t samples;
};

static struct {
	struct th *v;
	size_t n, cap;
	uint64_t samples, unknown, overhead;
	double tps;
} D;

static struct th *
find(int64_t tid, int add)
{
	for (size_t i = D.n; i-- > 0;)
		if (D.v[i].tid == tid)
			return &D.v[i];
	if (!add)
		return NULL;
	if (D.n == D.cap) {
		D.cap = D.cap ? D.cap * 2 : 1024;
		D.v = realloc(D.v, D.cap * sizeof(*D.v));
		RTPROF_CHECK(D.v != NULL);
	}
	memset(&D.v[D.n], 0, sizeof(D.v[D.n]));
	D.v[D.n].tid = tid;
	return &D.v[D.n++];
}

static int
on_header(void *ctx, const struct rtprof_dump_header *h)
{
	(void)ctx;
	D.tps = h->clock.ticks_per_second;
	return 0;
}

static int
on_thread(void *ctx, const struct rtprof_dump_thread *t)
{
	struct th *x = find(t->tid, 1);

	(void)ctx;
	if (t->has_unregister) {
		x->has_unreg = 1;
		x->unreg = t->unregister_ticks;
	}
	return 0;
}

static int
on_record(void *ctx, const struct rtprof_dump_data *d,
    const struct rtprof_rec_view *r)
{
	struct th *x;

	(void)ctx;
	(void)d;
	if (r->kind == RTPROF_REC_OVERHEAD)
		D.overhead++;
	if (r->kind != RTPROF_REC_SAMPLE && r->kind != RTPROF_REC_SAME)
		return 0;
	D.samples++;
	x = find(r->tid, 0);
	if (x == NULL) {
		D.unknown++;
		return 0;
	}
	x->samples++;
	if (r->t0 > x->last_sample)
		x->last_sample = r->t0;
	return 0;
}

int
main(void)
{
	char path[] = "/tmp/rtprof-churn-XXXXXX";
	struct rtprof_settings set;
	struct rtprof_dump_cb cb = { .on_header = on_header,
	    .on_thread = on_thread, .on_record = on_record };
	struct rtprof_dump_stats st;
	pthread_t sp[SPAWNERS];
	size_t shorts = 0, sampled = 0, late = 0;
	uint64_t slack;
	int fd = mkstemp(path);

	RTPROF_CHECK(fd >= 0);
	unlink(path);
	memset(&set, 0, sizeof(set));
	set.struct_size = sizeof(set);
	set.fd = fd;
	set.memory_limit = 64u << 20;
	set.chunk_size = 16384;
	set.sample_interval_us = 100;
	RTPROF_CHECK_EQ(rtprof_session_start(&set), 0);
	for (uintptr_t i = 0; i < SPAWNERS; i++)
		RTPROF_CHECK_EQ(pthread_create(&sp[i], NULL, spawner_main,
		    (void *)i), 0);
	for (int i = 0; i < SPAWNERS; i++)
		RTPROF_CHECK_EQ(pthread_join(sp[i], NULL), 0);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);

	RTPROF_CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
	RTPROF_CHECK_EQ(rtprof_dump_read_fd(fd, &cb, &st), 0);
	close(fd);
	RTPROF_CHECK_EQ(st.damage, 0);
	slack = (uint64_t)(D.tps * 50e-6);
	for (size_t i = 0; i < D.n; i++) {
		const struct th *x = &D.v[i];

		if (!x->has_unreg)
			continue;       /* the sampler itself */
		shorts++;
		sampled += x->samples != 0;
		/* 50 us of slack: the vCPUs' counters differ by a few us
		 * (docs/wire-format.md); a sample of an exited thread would
		 * be at least a tick (100 us) late. */
		if (x->samples != 0 && x->last_sample > x->unreg + slack)
			late++;
	}
	fprintf(stderr, "churn: %zu threads, %zu sampled, %" PRIu64
	    " samples, %" PRIu64 " ticks, %" PRIu64 " of unknown threads, %zu"
	    " sampled after unregistering\n", shorts, sampled, D.samples,
	    D.overhead, D.unknown, late);
	RTPROF_CHECK_EQ(shorts, SPAWNERS * PER_SPAWNER);
	RTPROF_CHECK_EQ(D.unknown, 0);
	RTPROF_CHECK_EQ(late, 0);
	RTPROF_CHECK_GT(sampled, shorts / 4);
	RTPROF_CHECK_GT(D.overhead, 100);
	free(D.v);
	printf("test_sampler_churn: ok\n");
	return 0;
}
