/*
 * board_app.c - a program as it runs on a board: it never mentions a
 * session. The environment starts one at load (core/state.c autostart:
 * RTPROF_SERIAL=DEVICE, RTPROF_BAUD=N: the library opens the UART and paces
 * the writer to it) and the exit finishes it.
 *
 *   board_app SECONDS
 *
 * A "sensor" thread records far more than a 115200-baud line carries
 * (typed markers, labels, a counter) so the link falls behind; the main
 * thread spins in board_compute() so that samples carry native frames.
 * Context: main thread and one sensor thread.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "rtprof.h"
#include "testutil.h"

static atomic_int running = 1;

static void *
sensor_main(void *arg)
{
	rtprof_counter *level = rtprof_counter_declare("sensor level", NULL,
	    "a reading");
	struct timespec ms = { 0, 1000000 };
	long i = 0;

	(void)arg;
	rtprof_thread_register("sensor", 0);
	while (atomic_load(&running)) {
		rtprof_label_push("read sensor");
		for (int k = 0; k < 50; k++, i++) {
			rtprof_mark("sample", RTPROF_CAT_IO);
			rtprof_counter_set(level, i % 100);
		}
		rtprof_label_pop();
		nanosleep(&ms, NULL);
	}
	rtprof_thread_unregister();
	return NULL;
}

__attribute__((noinline)) static double
board_compute(double t_end)
{
	volatile double x = 0;

	while (now_s() < t_end)
		for (int i = 0; i < 10000; i++)
			x += i * 0.5;
	return x;
}

int
main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	struct rtprof_session_status st;
	pthread_t th;

	if (rtprof_session_status_get(&st) != 0 || !st.running) {
		fprintf(stderr, "board_app: no session (RTPROF_SERIAL unset "
		    "or the line could not be opened)\n");
		return 1;
	}
	{
		struct timespec w;

		/* For the test: when main() began, on the wall clock and as
		 * a marker (the session began before, when the library was
		 * loaded: how long before depends on the machine's load). */
		rtprof_mark("main began", RTPROF_CAT_OTHER);
		clock_gettime(CLOCK_REALTIME, &w);
		printf("started %.6f\n", (double)w.tv_sec + w.tv_nsec / 1e9);
		fflush(stdout);
	}
	pthread_create(&th, NULL, sensor_main, NULL);
	rtprof_label_push("compute");
	board_compute(now_s() + secs);
	rtprof_label_pop();
	atomic_store(&running, 0);
	pthread_join(th, NULL);
	return 0;       /* the session ends at exit (autostart's atexit) */
}
