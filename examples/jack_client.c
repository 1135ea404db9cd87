/*
 * jack_client.c - a JACK client traced with rtprof's audio callback API.
 *
 *   rtprof-jack-client -o DUMP [-n SERVER] [-p PHASES]
 *
 * Its process callback runs a synthetic DSP chain (stages "mix", "filter",
 * "reverb", each a label) whose cost is a share of the callback's budget
 * (frames / sample rate) set from another thread: PHASES is a list like
 * "light:2,heavy:1,light:2" (seconds each; light = 10% of the budget,
 * heavy = 150%: every heavy callback overruns). Each phase is an interval
 * marker "phase light" / "phase heavy" on the main thread. JACK's own xrun
 * callback is counted; at the end the program prints one line:
 *
 *   callbacks N overruns N jack_xruns N seconds S rate R frames F
 *
 * JACK's threads register in its thread-init callback as real-time threads
 * (RTPROF_THREAD_RT: the sampler reads their labels, never signals them);
 * the one with the "Audio callback" markers is the process thread.
 * The program opens DUMP and hands the descriptor to rtprof.
 *
 * Context: main thread (control), JACK's process thread (callback, RT),
 * JACK's notification thread (xrun callback).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jack/jack.h>

#include "rtprof.h"

#define LIGHT 0.1
#define HEAVY 1.5

static rtprof_audio audio;
static jack_port_t *out_port;
static _Atomic(double) load_share = LIGHT;
static double heavy_share = HEAVY;
static atomic_uint jack_xruns;
static atomic_int stopping;

static uint64_t
mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);     /* vDSO: no system call */
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A DSP stage: writes the buffer until @until (ns) has passed. */
static void
stage(float *buf, jack_nframes_t n, uint64_t until, float k)
{
	unsigned pass = 0;

	do {
		for (jack_nframes_t i = 0; i < n; i++)
			buf[i] = buf[i] * 0.5f + k * (float)((i + pass) & 7);
		pass++;
	} while (mono_ns() < until);
}

/* Context: JACK's process thread (real-time); wait-free rtprof calls. */
static int
process(jack_nframes_t nframes, void *arg)
{
	jack_client_t *client = arg;
	float *buf = jack_port_get_buffer(out_port, nframes);
	jack_nframes_t rate = jack_get_sample_rate(client);
	uint64_t t0 = mono_ns();
	double budget_ns = (double)nframes * 1e9 / (double)rate;
	double share = atomic_load_explicit(&load_share, memory_order_relaxed);

	/* One frame of the "JACK period" track per callback, start to
	 * start; red when 1.5 periods or more (a cycle JACK delayed or
	 * skipped): the period itself jitters by microseconds both ways. */
	rtprof_frame_mark_budget("JACK period", (uint64_t)(1.5 * budget_ns));
	rtprof_audio_begin(&audio, nframes, rate);
	RTPROF_LABEL_SCOPE("process");
	{
		/* The stage as a label (in the samples) and a zone (in the
		 * marker chart, with the buffer size). */
		RTPROF_LABEL_SCOPE("mix");
		RTPROF_ZONE_SCOPE(z, "mix", RTPROF_CAT_AUDIO);
		rtprof_zone_value(z, nframes);
		stage(buf, nframes, t0 + (uint64_t)(share * budget_ns * 0.4),
		    0.1f);
	}
	{
		RTPROF_LABEL_SCOPE("filter");
		RTPROF_ZONE_SCOPE(z, "filter", RTPROF_CAT_AUDIO);
		stage(buf, nframes, t0 + (uint64_t)(share * budget_ns * 0.7),
		    0.2f);
	}
	{
		RTPROF_LABEL_SCOPE("reverb");
		RTPROF_ZONE_SCOPE(z, "reverb", RTPROF_CAT_AUDIO);
		stage(buf, nframes, t0 + (uint64_t)(share * budget_ns), 0.3f);
	}
	rtprof_audio_end(&audio);
	return 0;
}

/*
 * Context: every thread JACK creates for this client (the process thread,
 * and with JACK2 its notification threads too), before it runs.
 * Registration may allocate: here, never in the process callback.
 */
static void
thread_init(void *arg)
{
	(void)arg;
	rtprof_thread_register("jack client", RTPROF_THREAD_RT);
}

/* Context: JACK's notification thread. */
static int
xrun(void *arg)
{
	(void)arg;
	atomic_fetch_add(&jack_xruns, 1);
	rtprof_mark("JACK xrun", RTPROF_CAT_AUDIO);
	return 0;
}

static void
on_signal(int sig)
{
	(void)sig;
	atomic_store(&stopping, 1);
}

static void
sleep_s(double s)
{
	struct timespec t;
	uint64_t end = mono_ns() + (uint64_t)(s * 1e9);

	while (!atomic_load(&stopping) && mono_ns() < end) {
		t.tv_sec = 0;
		t.tv_nsec = 10000000;
		nanosleep(&t, NULL);
	}
}

int
main(int argc, char **argv)
{
	const char *out = NULL, *server = NULL, *phases = "light:2,heavy:1,light:2";
	struct rtprof_settings set;
	jack_options_t opts = JackNoStartServer;
	jack_status_t status;
	jack_client_t *client;
	char *list, *save = NULL, *tok;
	uint64_t t_start;
	int fd, opt, rc;

	while ((opt = getopt(argc, argv, "o:n:p:H:h")) != -1) {
		if (opt == 'H')
			heavy_share = atof(optarg);
		else if (opt == 'o')
			out = optarg;
		else if (opt == 'n')
			server = optarg;
		else if (opt == 'p')
			phases = optarg;
		else
			break;
	}
	if (opt != -1 || out == NULL || optind != argc) {
		fprintf(stderr, "usage: %s -o DUMP [-n SERVER] [-p PHASES] "
		    "[-H HEAVY_SHARE]\n", argv[0]);
		return 2;
	}
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "rtprof-jack-client: %s: %s\n", out,
		    strerror(errno));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	rtprof_thread_register("main", RTPROF_THREAD_MAIN);
	if ((rc = rtprof_audio_init(&audio, "jack")) != 0) {
		fprintf(stderr, "rtprof-jack-client: audio init: %s\n",
		    rtprof_strerror(rc));
		return 1;
	}
	memset(&set, 0, sizeof(set));
	set.struct_size = sizeof(set);
	set.fd = fd;
	set.memory_limit = 64u << 20;
	if ((rc = rtprof_session_start(&set)) != 0) {
		fprintf(stderr, "rtprof-jack-client: start: %s\n",
		    rtprof_strerror(rc));
		return 1;
	}
	if (server != NULL)
		opts |= JackServerName;
	client = jack_client_open("rtprof-jack-client", opts, &status, server);
	if (client == NULL) {
		fprintf(stderr, "rtprof-jack-client: no JACK server (status "
		    "0x%x)\n", (unsigned)status);
		rtprof_session_stop();
		return 1;
	}
	out_port = jack_port_register(client, "out", JACK_DEFAULT_AUDIO_TYPE,
	    JackPortIsOutput, 0);
	jack_set_thread_init_callback(client, thread_init, NULL);
	jack_set_process_callback(client, process, client);
	jack_set_xrun_callback(client, xrun, NULL);
	if (out_port == NULL || jack_activate(client) != 0) {
		fprintf(stderr, "rtprof-jack-client: cannot activate\n");
		jack_client_close(client);
		rtprof_session_stop();
		return 1;
	}
	t_start = mono_ns();
	list = strdup(phases);
	for (tok = strtok_r(list, ",", &save); tok != NULL && !stopping;
	    tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');
		double secs = colon != NULL ? atof(colon + 1) : 1.0;
		int heavy;

		if (colon != NULL)
			*colon = '\0';
		heavy = strcmp(tok, "heavy") == 0;
		atomic_store(&load_share, heavy ? heavy_share : LIGHT);
		rtprof_begin(heavy ? "phase heavy" : "phase light",
		    RTPROF_CAT_AUDIO);
		sleep_s(secs);
		rtprof_end(heavy ? "phase heavy" : "phase light",
		    RTPROF_CAT_AUDIO);
	}
	free(list);
	jack_deactivate(client);
	printf("callbacks %llu overruns %llu jack_xruns %u seconds %.3f "
	    "rate %u frames %u\n", (unsigned long long)audio.callbacks,
	    (unsigned long long)audio.overrun_count,
	    atomic_load(&jack_xruns), (double)(mono_ns() - t_start) / 1e9,
	    (unsigned)jack_get_sample_rate(client),
	    (unsigned)jack_get_buffer_size(client));
	jack_client_close(client);
	rc = rtprof_session_stop();
	close(fd);
	return rc == 0 ? 0 : 1;
}
