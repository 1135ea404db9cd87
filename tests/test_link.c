/*
 * test_link.c - a board's slow serial link, with a pseudo-terminal standing
 * in for the UART:
 *   1. rtprof_tty_open() configures the line raw, 8N1, at the given rate,
 *      with no flow control; it refuses unknown rates and non-ttys;
 *   2. a stream paced to the link (link_bytes_per_sec) writes about what
 *      the link carries, not what the threads produce; the oldest unsent
 *      chunks are dropped and counted ("link_behind" events, `recycled`),
 *      the newest data reaches the other end, and every event the thread
 *      attempted is accounted for exactly;
 *   3. a flight recorder dumps on its signal (the handler it replaced is
 *      not called meanwhile and is back after stop).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dumpmodel.h"
#include "rtprof.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ */
/* 1. rtprof_tty_open                                                   */

static void
test_tty_open(void)
{
	struct termios t;
	int m, sl, fd;
	char name[256];

	RTPROF_CHECK_EQ(openpty(&m, &sl, name, NULL, NULL), 0);
	/* A line left cooked, echoing, with flow control, at another rate. */
	RTPROF_CHECK_EQ(tcgetattr(sl, &t), 0);
	t.c_iflag |= IXON | IXOFF | ICRNL;
	t.c_oflag |= OPOST | ONLCR;
	t.c_lflag |= ICANON | ECHO;
	t.c_cflag |= CRTSCTS;
	cfsetspeed(&t, B9600);
	RTPROF_CHECK_EQ(tcsetattr(sl, TCSANOW, &t), 0);

	RTPROF_CHECK_EQ(rtprof_tty_open(name, 115201), -EINVAL);
	RTPROF_CHECK_EQ(rtprof_tty_open("/dev/null", 115200), -ENOTTY);
	RTPROF_CHECK_EQ(rtprof_tty_open("/nonexistent/tty", 115200), -ENOENT);
	fd = rtprof_tty_open(name, 115200);
	RTPROF_CHECK_GE(fd, 0);
	RTPROF_CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	RTPROF_CHECK_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	RTPROF_CHECK_EQ(tcgetattr(fd, &t), 0);
	RTPROF_CHECK_EQ(cfgetospeed(&t), B115200);
	RTPROF_CHECK_EQ(cfgetispeed(&t), B115200);
	RTPROF_CHECK_EQ(t.c_cflag & CSIZE, CS8);
	RTPROF_CHECK_EQ(t.c_cflag & (PARENB | CSTOPB | CRTSCTS), 0);
	RTPROF_CHECK(t.c_cflag & CLOCAL);
	RTPROF_CHECK_EQ(t.c_iflag & (IXON | IXOFF | ICRNL), 0);
	RTPROF_CHECK_EQ(t.c_oflag & OPOST, 0);
	RTPROF_CHECK_EQ(t.c_lflag & (ICANON | ECHO | ISIG), 0);
	/* Bytes pass unchanged: \n stays \n, XON/XOFF bytes are data. */
	{
		const unsigned char out[] = { '\n', 0x11, 0x13, '\r', 0x03, 0 };
		unsigned char in[sizeof(out)];
		size_t got = 0;

		RTPROF_CHECK_EQ(write(fd, out, sizeof(out)), (ssize_t)sizeof(out));
		while (got < sizeof(out)) {
			ssize_t r = read(m, in + got, sizeof(in) - got);

			RTPROF_CHECK_GT(r, 0);
			got += (size_t)r;
		}
		RTPROF_CHECK_EQ(memcmp(in, out, sizeof(out)), 0);
	}
	close(fd);
	close(sl);
	close(m);
	fprintf(stderr, "tty_open: ok\n");
}

/* ------------------------------------------------------------------ */
/* 2. A stream paced to the link                                        */

#define LINK_RATE 20000u        /* bytes/s; a 115200-baud UART is 11520 */
#define RUN_SECONDS 3.0

struct sink {
	int fd;
	unsigned char *buf;
	size_t n, cap;
	atomic_size_t seen;     /* bytes so far, for the main thread */
};

/* The desktop end of the pty: reads until the slave side is closed. */
static void *
reader_main(void *arg)
{
	struct sink *k = arg;

	for (;;) {
		ssize_t r;

		if (k->n == k->cap) {
			k->cap = k->cap ? k->cap * 2 : 1 << 16;
			k->buf = realloc(k->buf, k->cap);
			RTPROF_CHECK(k->buf != NULL);
		}
		r = read(k->fd, k->buf + k->n, k->cap - k->n);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			break;  /* EIO: the slave side is closed */
		}
		k->n += (size_t)r;
		atomic_store(&k->seen, k->n);
	}
	return NULL;
}

struct producer {
	atomic_int stop;
	uint64_t attempted;
	uint64_t first_ticks, last_ticks; /* its first and last events */
	struct rtprof_thread_stats st;
};

/* A busy RT thread: far more data than the link carries. */
static void *
producer_main(void *arg)
{
	struct producer *p = arg;
	struct timespec ms = { 0, 1000000 };

	RTPROF_CHECK_EQ(rtprof_thread_register("busy", RTPROF_THREAD_RT), 0);
	p->first_ticks = rtprof_now();
	while (!atomic_load(&p->stop)) {
		for (int i = 0; i < 200; i++) {
			rtprof_mark("tick", RTPROF_CAT_OTHER);
			p->attempted++;
		}
		p->last_ticks = rtprof_now();
		nanosleep(&ms, NULL);
	}
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&p->st), 0);
	RTPROF_CHECK_EQ(rtprof_thread_unregister(), 0);
	return NULL;
}

static void
test_paced_stream(void)
{
	struct rtprof_settings set;
	struct rtprof_session_status ss;
	struct sink k = { 0 };
	struct producer p = { 0 };
	pthread_t rd, pr;
	struct dm m;
	char name[256];
	int sl, fd, tmp;
	double t0, elapsed;
	size_t before_stop, max_bytes;
	uint64_t recycled, last = 0, first_seen = 0;
	const struct rtprof_dump_trailer_thread *tt;
	const struct dm_thread *th;
	int behind = 0;

	RTPROF_CHECK_EQ(openpty(&k.fd, &sl, name, NULL, NULL), 0);
	fd = rtprof_tty_open(name, 230400);
	RTPROF_CHECK_GE(fd, 0);
	RTPROF_CHECK_EQ(pthread_create(&rd, NULL, reader_main, &k), 0);

	memset(&set, 0, sizeof(set));
	set.struct_size = sizeof(set);
	set.mode = RTPROF_MODE_STREAM;
	set.fd = fd;
	set.memory_limit = 256u << 10;
	set.sample_interval_us = RTPROF_SAMPLING_OFF;
	set.link_bytes_per_sec = LINK_RATE;
	t0 = now_s();
	RTPROF_CHECK_EQ(rtprof_session_start(&set), 0);
	RTPROF_CHECK_EQ(pthread_create(&pr, NULL, producer_main, &p), 0);
	while (now_s() - t0 < RUN_SECONDS)
		usleep(20000);
	atomic_store(&p.stop, 1);
	RTPROF_CHECK_EQ(pthread_join(pr, NULL), 0);
	before_stop = atomic_load(&k.seen);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	elapsed = now_s() - t0;
	RTPROF_CHECK_EQ(rtprof_session_status_get(&ss), 0);
	close(fd);
	close(sl);
	RTPROF_CHECK_EQ(pthread_join(rd, NULL), 0);

	/* What the link carried, decoded. */
	tmp = memfd_create("link", 0);
	RTPROF_CHECK_EQ(write(tmp, k.buf, k.n), (ssize_t)k.n);
	RTPROF_CHECK_EQ(lseek(tmp, 0, SEEK_SET), 0);
	RTPROF_CHECK_EQ(dm_load_fd(&m, tmp), 0);
	close(tmp);
	RTPROF_CHECK_EQ(m.nsessions, 1);
	RTPROF_CHECK_EQ(m.stats.bad_frames, 0);
	RTPROF_CHECK_EQ(m.stats.seq_gaps, 0);
	RTPROF_CHECK(m.sessions[0].has_trailer);
	th = NULL;
	for (size_t i = 0; i < m.sessions[0].nthreads; i++)
		if (strcmp(m.sessions[0].threads[i].name, "busy") == 0)
			th = &m.sessions[0].threads[i];
	RTPROF_CHECK(th != NULL);
	tt = dm_trailer_thread(&m.sessions[0], th->tid);
	RTPROF_CHECK(tt != NULL);
	for (size_t i = 0; i < m.sessions[0].nevents; i++)
		if (strcmp(m.sessions[0].events[i], "link_behind") == 0)
			behind++;
	for (size_t i = 0; i < th->nrecs; i++) {
		if (th->recs[i].v.t0 > last)
			last = th->recs[i].v.t0;
		if (i == 0)
			first_seen = th->recs[i].v.t0;
	}
	/* The trailer's count: the writer may drop more of the thread's full
	 * chunks after the thread read its own stats. */
	recycled = tt->recycled;
	RTPROF_CHECK_LE(p.st.recycled, recycled);
	fprintf(stderr, "paced: %.2f s, %zu bytes over the link (%zu before "
	    "stop), attempted %" PRIu64 ", decoded %zu, recycled %" PRIu64
	    ", dropped full %" PRIu64 ", link_behind events %d\n", elapsed, k.n,
	    before_stop, p.attempted, th->nrecs, recycled, p.st.dropped_full,
	    behind);

	/* Paced: about the link's rate, not the thread's ~3 MB/s. Before
	 * stop at most the credit (1/4 s) beyond the rate; the stop adds the
	 * queue (at most 2 s of link time, or two chunks) and each thread's
	 * partial chunk; descriptors (header, modules, strings) come on top. */
	max_bytes = (size_t)(LINK_RATE * (elapsed + 2.5)) + 3 * 8192 + 32768;
	RTPROF_CHECK_LE(k.n, max_bytes);
	/* Streamed while running, not all at the stop. */
	RTPROF_CHECK_GT(before_stop, 2 * 8192);
	/* The link fell behind: old chunks dropped, counted, announced. */
	RTPROF_CHECK_GT(recycled, 0);
	RTPROF_CHECK_GT(behind, 0);
	/* Exact accounting: every attempt is decoded or counted. */
	RTPROF_CHECK_EQ(tt->recorded, th->nrecs);
	RTPROF_CHECK_EQ(p.st.outside + p.st.late, 0);
	RTPROF_CHECK_EQ(th->nrecs + recycled + p.st.dropped_full +
	    p.st.dropped_nested, p.attempted);
	RTPROF_CHECK_EQ(tt->dropped_full, p.st.dropped_full);
	/* What waited for the link at the stop was the newest data: the
	 * last event that reached the desktop is from the run's last tenth
	 * (the thread's very last ones may have found no free chunk). */
	RTPROF_CHECK_GT(first_seen, 0);
	RTPROF_CHECK_GE(last, p.last_ticks - (p.last_ticks - p.first_ticks) / 10);
	dm_free(&m);
	free(k.buf);
}

/* ------------------------------------------------------------------ */
/* 3. Flight recorder dumped on a signal                                */

static atomic_int old_handler_calls;

static void
old_handler(int sig)
{
	(void)sig;
	atomic_fetch_add(&old_handler_calls, 1);
}

static void
test_dump_signal(void)
{
	struct rtprof_settings set;
	struct rtprof_session_status ss;
	struct rtprof_thread_stats st;
	struct sigaction sa, cur;
	struct dm m;
	int fd = memfd_create("flight", 0), found = 0;
	char path[64];
	double t0;
	uint64_t ticks_last;

	RTPROF_CHECK_GE(fd, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = old_handler;
	RTPROF_CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);

	memset(&set, 0, sizeof(set));
	set.struct_size = sizeof(set);
	set.mode = RTPROF_MODE_STREAM;
	set.fd = fd;
	set.sample_interval_us = RTPROF_SAMPLING_OFF;
	set.dump_signal = SIGUSR1;
	/* Only a flight recorder has something to dump on a signal. */
	RTPROF_CHECK_EQ(rtprof_session_start(&set), -EINVAL);
	set.mode = RTPROF_MODE_FLIGHT_RECORDER;
	set.dump_signal = SIGKILL;
	RTPROF_CHECK_EQ(rtprof_session_start(&set), -EINVAL);
	set.dump_signal = SIGUSR1;
	set.memory_limit = 1u << 20;
	set.chunk_size = 16u << 10;
	RTPROF_CHECK_EQ(rtprof_session_start(&set), 0);

	RTPROF_CHECK_EQ(rtprof_thread_register("recorder", 0), 0);
	for (int i = 0; i < 20000; i++) {
		rtprof_mark("old", RTPROF_CAT_OTHER);
		if (i % 1000 == 999)
			usleep(5000);   /* the writer refills meanwhile */
	}
	/* The last event, once it finds a chunk (the writer refills the
	 * thread's empty ring meanwhile; a slow one under TSan may not). */
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&st), 0);
	for (int tries = 0;; tries++) {
		uint64_t before = st.dropped_full;

		RTPROF_CHECK_LT(tries, 600);
		usleep(50000);
		rtprof_mark("newest", RTPROF_CAT_OTHER);
		ticks_last = rtprof_now();
		RTPROF_CHECK_EQ(rtprof_thread_stats_get(&st), 0);
		if (st.dropped_full == before)
			break;
	}
	/* Nothing written yet: a flight recorder keeps it in memory. */
	RTPROF_CHECK_EQ(rtprof_session_status_get(&ss), 0);
	RTPROF_CHECK_EQ(ss.chunks_written, 0);

	RTPROF_CHECK_EQ(kill(getpid(), SIGUSR1), 0);
	/* The dump so far (no trailer yet), read through a descriptor of
	 * its own (the writer's file offset must not move), until it holds
	 * the newest event: the writer serves the signal at its next round. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	t0 = now_s();
	while (!found && now_s() - t0 < 60) {
		int rd = open(path, O_RDONLY);

		usleep(10000);
		RTPROF_CHECK_GE(rd, 0);
		RTPROF_CHECK_EQ(dm_load_fd(&m, rd), 0);
		close(rd);
		RTPROF_CHECK_LE(m.nsessions, 1);
		for (size_t t = 0; m.nsessions == 1 &&
		    t < m.sessions[0].nthreads; t++) {
			const struct dm_thread *th = &m.sessions[0].threads[t];

			RTPROF_CHECK(!m.sessions[0].has_trailer);
			for (size_t i = 0; i < th->nrecs; i++)
				if (th->recs[i].name != NULL &&
				    strcmp(th->recs[i].name, "newest") == 0 &&
				    th->recs[i].v.t0 <= ticks_last)
					found = 1;
		}
		dm_free(&m);
	}
	RTPROF_CHECK(found);
	RTPROF_CHECK_EQ(rtprof_session_status_get(&ss), 0);
	RTPROF_CHECK_GT(ss.chunks_written, 0);
	RTPROF_CHECK_EQ(atomic_load(&old_handler_calls), 0);

	RTPROF_CHECK_EQ(rtprof_thread_unregister(), 0);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	/* The program's handler is back. */
	RTPROF_CHECK_EQ(sigaction(SIGUSR1, NULL, &cur), 0);
	RTPROF_CHECK(cur.sa_handler == old_handler);
	RTPROF_CHECK_EQ(kill(getpid(), SIGUSR1), 0);
	RTPROF_CHECK_EQ(atomic_load(&old_handler_calls), 1);
	close(fd);
	fprintf(stderr, "dump signal: ok (%" PRIu64 " chunks written)\n",
	    ss.chunks_written);
}

int
main(void)
{
	test_tty_open();
	test_paced_stream();
	test_dump_signal();
	return 0;
}
