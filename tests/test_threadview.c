/*
 * test_threadview.c - what the sampler may observe of a running thread:
 * the label stack read consistently while the owner pushes and pops, the
 * sleep tri-state, and the tick clock's calibration.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core.h"

#define LEVELS 6
static const char *fam_a[LEVELS] = { "a0", "a1", "a2", "a3", "a4", "a5" };
static const char *fam_b[LEVELS] = { "b0", "b1", "b2", "b3", "b4", "b5" };

static _Atomic(struct rtprof__thread *) owner_th;
static atomic_int stop_owner;
static atomic_ulong owner_rounds;

/* The owner alternates label families, but only ever switches family after
 * popping down to an empty stack. A consistent read therefore never mixes
 * families and always has label i at level i; a torn read would. */
static void *
owner(void *arg)
{
	(void)arg;
	RTPROF_CHECK_EQ(rtprof_thread_register("owner", RTPROF_THREAD_RT), 0);
	atomic_store(&owner_th, (struct rtprof__thread *)rtprof__tls.thread);
	for (unsigned long round = 0; !atomic_load(&stop_owner); round++) {
		const char **fam = round & 1 ? fam_b : fam_a;

		for (int i = 0; i < LEVELS; i++)
			rtprof_label_push(fam[i]);
		/* Churn the top levels within the family. */
		for (int k = 0; k < 4; k++) {
			rtprof_label_pop();
			rtprof_label_pop();
			rtprof_label_push(fam[LEVELS - 2]);
			rtprof_label_push(fam[LEVELS - 1]);
		}
		for (int i = 0; i < LEVELS; i++)
			rtprof_label_pop();
		atomic_fetch_add(&owner_rounds, 1);
	}
	return NULL;
}

static void
test_labels_consistent(void)
{
	pthread_t t;
	struct rtprof__thread *th;
	unsigned long reads = 0, busy = 0, nonempty = 0;

	struct timespec t0, now;

	pthread_create(&t, NULL, owner, NULL);
	while ((th = atomic_load(&owner_th)) == NULL)
		sched_yield();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* Enough reads that overlap the owner's writes, however the two
	 * threads get scheduled on a loaded machine (bounded: 60 s). */
	while (reads < 200000 || nonempty < 20000 || atomic_load(&owner_rounds) < 1000) {
		const char *out[RTPROF_MAX_LABELS];
		const rtprof_lock *lk = rtprof__lock();
		int d = rtprof__labels_read(lk, th, out, RTPROF_MAX_LABELS);

		rtprof__unlock(lk);
		clock_gettime(CLOCK_MONOTONIC, &now);
		RTPROF_CHECK_LT(now.tv_sec - t0.tv_sec, 60);
		if (d == -EAGAIN) {
			busy++;
			continue;
		}
		RTPROF_CHECK_GE(d, 0);
		RTPROF_CHECK_LE(d, LEVELS);
		reads++;
		if (d > 0) {
			const char **fam = out[0][0] == 'a' ? fam_a : fam_b;

			nonempty++;
			for (int i = 0; i < d; i++)
				RTPROF_CHECK_STREQ(out[i], fam[i]);
		}
	}
	atomic_store(&stop_owner, 1);
	pthread_join(t, NULL);
	RTPROF_CHECK_GT(nonempty, 0);
	printf("labels: %lu consistent reads (%lu non-empty), %lu busy, %lu owner rounds\n",
	    reads, nonempty, busy, atomic_load(&owner_rounds));
}

static void
test_label_overflow(void)
{
	struct rtprof__thread *th = rtprof__tls.thread;
	const char *out[RTPROF_MAX_LABELS];
	const rtprof_lock *lk;
	int d;

	for (int i = 0; i < RTPROF_MAX_LABELS + 5; i++)
		rtprof_label_push("deep");
	lk = rtprof__lock();
	d = rtprof__labels_read(lk, th, out, RTPROF_MAX_LABELS);
	rtprof__unlock(lk);
	RTPROF_CHECK_EQ(d, RTPROF_MAX_LABELS);
	/* Pops past the stored depth keep the count right. */
	for (int i = 0; i < RTPROF_MAX_LABELS + 3; i++)
		rtprof_label_pop();
	lk = rtprof__lock();
	d = rtprof__labels_read(lk, th, out, RTPROF_MAX_LABELS);
	rtprof__unlock(lk);
	RTPROF_CHECK_EQ(d, 2);
	rtprof_label_pop();
	rtprof_label_pop();
	rtprof_label_pop(); /* one too many: ignored */
	{
		RTPROF_LABEL_SCOPE("scoped");
		lk = rtprof__lock();
		d = rtprof__labels_read(lk, th, out, RTPROF_MAX_LABELS);
		rtprof__unlock(lk);
		RTPROF_CHECK_EQ(d, 1);
		RTPROF_CHECK_STREQ(out[0], "scoped");
	}
	lk = rtprof__lock();
	d = rtprof__labels_read(lk, th, out, RTPROF_MAX_LABELS);
	rtprof__unlock(lk);
	RTPROF_CHECK_EQ(d, 0);
}

static void
test_sleep_states(void)
{
	struct rtprof__thread *th = rtprof__tls.thread;
	const rtprof_lock *lk;

	lk = rtprof__lock();
	RTPROF_CHECK_EQ(rtprof__sleep_observe(lk, th), RTPROF__AWAKE);
	rtprof__unlock(lk);
	rtprof_thread_sleep();
	lk = rtprof__lock();
	RTPROF_CHECK_EQ(rtprof__sleep_observe(lk, th), RTPROF__ASLEEP);
	RTPROF_CHECK_EQ(rtprof__sleep_observe(lk, th), RTPROF__ASLEEP_SAMPLED);
	RTPROF_CHECK_EQ(rtprof__sleep_observe(lk, th), RTPROF__ASLEEP_SAMPLED);
	rtprof__unlock(lk);
	rtprof_thread_wake();
	lk = rtprof__lock();
	RTPROF_CHECK_EQ(rtprof__sleep_observe(lk, th), RTPROF__AWAKE);
	rtprof__unlock(lk);
}

/* Ticks converted with the calibrated rate agree with CLOCK_MONOTONIC. */
static void
test_clock(void)
{
	double rate = rtprof__clock_rate();
	uint64_t t0, m0, w0, t1, m1, w1;
	double err;

	rtprof__clock_pair(&t0, &m0, &w0);
	usleep(200000);
	rtprof__clock_pair(&t1, &m1, &w1);
	err = ((double)(t1 - t0) / rate * 1e9 - (double)(m1 - m0)) / (double)(m1 - m0);
	printf("clock: %s, %.0f ticks/s, error over %.0f ms: %.2e\n",
	    rtprof__clock_source(), rate, (double)(m1 - m0) / 1e6, err);
	RTPROF_CHECK(err < 1e-3 && err > -1e-3);
	RTPROF_CHECK_GT(w1, w0);
	/*
	 * The cheapest usable clock: the generic timer's virtual counter on
	 * aarch64 (its rate from CNTFRQ_EL0, set here and under qemu-user);
	 * the TSC on x86 where the kernel itself keeps time with it; the
	 * vDSO's CLOCK_MONOTONIC otherwise (armhf: the vDSO reads the counter
	 * where the kernel lets it).
	 */
#if defined(__aarch64__)
	RTPROF_CHECK(strcmp(rtprof__clock_source(), "cntvct") == 0);
#elif defined(__x86_64__) || defined(__i386__)
	{
		char src[64] = "";
		FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/"
		    "current_clocksource", "re");

		if (f != NULL) {
			if (fgets(src, sizeof(src), f) == NULL)
				src[0] = '\0';
			fclose(f);
		}
		if (strncmp(src, "tsc", 3) == 0)
			RTPROF_CHECK(strcmp(rtprof__clock_source(), "tsc") == 0);
	}
#else
	RTPROF_CHECK(strcmp(rtprof__clock_source(), "monotonic") == 0);
#endif
	/* rtprof_now() on this thread reads the same clock. */
	t0 = rtprof_now();
	rtprof__clock_pair(&t1, &m1, &w1);
	RTPROF_CHECK_LE(t0, t1);
}

int
main(void)
{
	RTPROF_CHECK_EQ(rtprof_thread_register("main", 0), 0);
	test_labels_consistent();
	test_label_overflow();
	test_sleep_states();
	test_clock();
	puts("test_threadview: ok");
	return 0;
}
