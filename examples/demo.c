/*
 * demo.c - the bundled demo: a periodic real-time-style audio callback
 * thread (128 frames at 48 kHz, every 2.67 ms, traced with rtprof_audio:
 * callback markers, load and jitter graphs, and an overrun every ~0.8 s
 * when a callback is made too heavy on purpose), a worker thread that
 * loads files, and the main thread, each recording labels, markers and
 * counters.
 *
 *   rtprof-demo [-o FILE] [-s SECONDS] [-l LOG]   (default: demo.rtprof, 2 s)
 *
 * -l LOG writes what the demo set, for tests to compare the profile with:
 * one line per callback, in order ("callback N voices V load L jitter J
 * heavy_ms H": the voices counter, the load and jitter counters as
 * rtprof_audio_end/begin set them, "-" for no jitter value, and the time
 * spent in the "reverb (heavy)" label), then "thread_ms T" (the audio
 * thread's life) and "overruns N". Kept in memory while it runs.
 *
 * The program opens the output file and hands the descriptor to rtprof:
 * the library itself never opens a path.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rtprof.h"

#define FRAMES 128
#define RATE 48000

static atomic_int running = 1;
static const rtprof_marker_type *load_type;
static rtprof_counter *queue_depth, *voices;
static rtprof_audio audio;

/* What one callback set (-l): filled by the audio thread, written after. */
struct cb_log {
	int voices;
	int64_t load, jitter;
	int has_jitter;
	uint64_t heavy_ticks;
};
static struct cb_log *cb_log;
static size_t cb_log_cap, cb_log_n;
static uint64_t audio_life_ticks;

/* Busy for @us microseconds: a callback made too heavy on purpose. */
static void
burn_us(long us)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000L +
	    (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

static void
add_ns(struct timespec *t, long ns)
{
	t->tv_nsec += ns;
	while (t->tv_nsec >= 1000000000L) {
		t->tv_nsec -= 1000000000L;
		t->tv_sec++;
	}
}

static double
dsp(float *buf, int n, int voices_now)
{
	double acc = 0;

	for (int v = 0; v < voices_now; v++) {
		RTPROF_LABEL_SCOPE("voice");
		for (int i = 0; i < n; i++) {
			buf[i] = sinf((float)(i * (v + 1)) * 0.01f);
			acc += buf[i];
		}
	}
	return acc;
}

/* Callback @n set @nv voices, spent @heavy ticks in the heavy reverb. */
static void
log_callback(uint64_t n, int nv, uint64_t heavy)
{
	struct cb_log *e;

	if (cb_log == NULL || n != cb_log_n || cb_log_n == cb_log_cap)
		return;
	e = &cb_log[cb_log_n++];
	e->voices = nv;
	e->load = audio.load_set;
	e->jitter = audio.jitter_set;
	e->has_jitter = n != 0;
	e->heavy_ticks = heavy;
}

/* The -l file: see the top of this file. Return: 0, or -1 (said). */
static int
write_log(const char *path)
{
	double per_ms = rtprof_ticks_per_second() / 1000.0;
	FILE *f = fopen(path, "w");

	if (f == NULL) {
		fprintf(stderr, "rtprof-demo: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < cb_log_n; i++) {
		const struct cb_log *e = &cb_log[i];

		fprintf(f, "callback %zu voices %d load %" PRId64, i, e->voices,
		    e->load);
		if (e->has_jitter)
			fprintf(f, " jitter %" PRId64, e->jitter);
		else
			fprintf(f, " jitter -");
		fprintf(f, " heavy_ms %.6f\n", (double)e->heavy_ticks / per_ms);
	}
	fprintf(f, "thread_ms %.6f\n", (double)audio_life_ticks / per_ms);
	fprintf(f, "overruns %" PRIu64 "\n", audio.overrun_count);
	if (fclose(f) != 0 || cb_log_n == cb_log_cap) {
		fprintf(stderr, "rtprof-demo: %s: %s\n", path, cb_log_n ==
		    cb_log_cap ? "more callbacks than logged" : strerror(errno));
		return -1;
	}
	return 0;
}

static void *
audio_thread(void *arg)
{
	struct timespec next;
	float buf[FRAMES];
	long period = (long)(1e9 * FRAMES / RATE);
	double sink = 0;
	uint64_t n = 0, t_start;

	(void)arg;
	rtprof_thread_register("audio", RTPROF_THREAD_RT);
	t_start = rtprof_now();
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (atomic_load_explicit(&running, memory_order_relaxed)) {
		int nv = 4 + (int)(n % 64 == 0 ? 40 : n % 7);

		rtprof_audio_begin(&audio, FRAMES, RATE);
		rtprof_label_push("audio callback");
		rtprof_counter_set(voices, nv);
		{
			RTPROF_LABEL_SCOPE("mix");
			sink += dsp(buf, FRAMES, nv);
		}
		{
			RTPROF_LABEL_SCOPE("limiter");
			for (int i = 0; i < FRAMES; i++)
				buf[i] = buf[i] > 0.9f ? 0.9f : buf[i];
		}
		uint64_t heavy = 0;

		if (n % 300 == 299) {   /* too heavy: an overrun */
			uint64_t h0 = rtprof_now();

			{
				RTPROF_LABEL_SCOPE("reverb (heavy)");
				burn_us(3500);
			}
			heavy = rtprof_now() - h0;
		}
		rtprof_label_pop();
		rtprof_audio_end(&audio);
		log_callback(n, nv, heavy);
		if (n % 64 == 0)
			rtprof_mark("heavy block", RTPROF_CAT_AUDIO);
		n++;
		add_ns(&next, period);
		rtprof_thread_sleep();
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		rtprof_thread_wake();
	}
	if (sink == 12345.0)
		puts("");
	audio_life_ticks = rtprof_now() - t_start;
	return NULL;
}

static void *
worker_thread(void *arg)
{
	(void)arg;
	rtprof_thread_register("worker", 0);
	for (int job = 0; atomic_load_explicit(&running, memory_order_relaxed); job++) {
		char name[64];
		rtprof_rec r;
		uint64_t t0 = rtprof_now();
		volatile double x = 0;
		long iters = 200000 + (job % 5) * 100000;

		snprintf(name, sizeof(name), "sample-%03d.wav", job);
		rtprof_counter_add(queue_depth, 1);
		rtprof_begin("decode", RTPROF_CAT_IO);
		for (long i = 0; i < iters; i++)
			x += sqrt((double)i);
		rtprof_end("decode", RTPROF_CAT_IO);
		rtprof_counter_add(queue_depth, -1);
		if (x < 0) /* never: keeps the work from being optimised out */
			puts("negative");
		if (rtprof_marker_open(&r, load_type, RTPROF_PHASE_INTERVAL, t0, rtprof_now())) {
			rtprof_put_str(&r, name, strlen(name));
			rtprof_put_u64(&r, (uint64_t)iters * 4);
			rtprof_marker_close(&r);
		}
		rtprof_thread_sleep();
		usleep(5000);
		rtprof_thread_wake();
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	static const struct rtprof_marker_schema ld = {
		"Load", RTPROF_CAT_IO, 0, "load {marker.data.file}", "{marker.data.file}",
		NULL, 2, {
			{ "file", "File", "string", RTPROF_FIELD_STR },
			{ "bytes", "Bytes", "bytes", RTPROF_FIELD_U64 },
		}
	};
	const char *out = "demo.rtprof", *log = NULL;
	double seconds = 2;
	struct rtprof_settings set;
	pthread_t a, w;
	int fd, opt, rc;

	while ((opt = getopt(argc, argv, "o:s:l:h")) != -1) {
		if (opt == 'o')
			out = optarg;
		else if (opt == 's')
			seconds = atof(optarg);
		else if (opt == 'l')
			log = optarg;
		else {
			fprintf(stderr, "usage: %s [-o FILE] [-s SECONDS] "
			    "[-l LOG]\n", argv[0]);
			return 2;
		}
	}
	if (log != NULL) {
		/* A callback per 2.67 ms, twice over for a late catch-up. */
		cb_log_cap = (size_t)(seconds * 2.0 * RATE / FRAMES) + 1000;
		cb_log = calloc(cb_log_cap, sizeof(*cb_log));
		if (cb_log == NULL) {
			fprintf(stderr, "rtprof-demo: out of memory\n");
			return 1;
		}
	}
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "rtprof-demo: %s: %s\n", out, strerror(errno));
		return 1;
	}
	rtprof_thread_register("main", RTPROF_THREAD_MAIN);
	load_type = rtprof_marker_type_declare(&ld);
	queue_depth = rtprof_counter_declare("queue depth", "Other", "jobs in flight");
	voices = rtprof_counter_declare("voices", "Audio", "voices mixed per callback");
	if (load_type == NULL || queue_depth == NULL || voices == NULL ||
	    rtprof_audio_init(&audio, "audio") != 0) {
		fprintf(stderr, "rtprof-demo: declare: %s\n", strerror(errno));
		return 1;
	}
	memset(&set, 0, sizeof(set));
	set.struct_size = sizeof(set);
	set.fd = fd;
	rc = rtprof_session_start(&set);
	if (rc < 0) {
		fprintf(stderr, "rtprof-demo: start: %s\n", rtprof_strerror(rc));
		return 1;
	}
	pthread_create(&a, NULL, audio_thread, NULL);
	pthread_create(&w, NULL, worker_thread, NULL);
	{
		RTPROF_LABEL_SCOPE("main loop");
		struct timespec end, now;

		clock_gettime(CLOCK_MONOTONIC, &end);
		add_ns(&end, (long)(seconds * 1e9));
		do {
			rtprof_mark("tick", RTPROF_CAT_USER);
			rtprof_thread_sleep();
			usleep(100000);
			rtprof_thread_wake();
			clock_gettime(CLOCK_MONOTONIC, &now);
		} while (now.tv_sec < end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
	}
	atomic_store_explicit(&running, 0, memory_order_relaxed);
	pthread_join(a, NULL);
	pthread_join(w, NULL);
	rc = rtprof_session_stop();
	if (rc < 0) {
		fprintf(stderr, "rtprof-demo: writing %s: %s\n", out, rtprof_strerror(rc));
		return 1;
	}
	close(fd);
	if (log != NULL && write_log(log) != 0)
		return 1;
	free(cb_log);
	printf("rtprof-demo: wrote %s\n", out);
	return 0;
}
