/*
 * test_session.c - the control API: errors, calls from other threads,
 * status and the profiler's own memory, the sample interval's bounds, and
 * the RTPROF_FD autostart.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "dump_reader.h"
#include "dumpmodel.h"
#include "rtprof.h"

static struct rtprof_settings
settings(int fd)
{
	struct rtprof_settings s;

	memset(&s, 0, sizeof(s));
	s.struct_size = sizeof(s);
	s.fd = fd;
	return s;
}

static void
test_errors(void)
{
	struct rtprof_settings s = settings(-1);
	struct rtprof_session_status st;
	int fd = memfd_create("d", MFD_CLOEXEC);

	RTPROF_CHECK_EQ(rtprof_session_stop(), -ENOENT);
	RTPROF_CHECK_EQ(rtprof_session_pause(), -ENOENT);
	RTPROF_CHECK_EQ(rtprof_session_resume(), -ENOENT);
	RTPROF_CHECK_EQ(rtprof_session_dump(), -ENOENT);
	RTPROF_CHECK_EQ(rtprof_session_start(NULL), -EINVAL);
	RTPROF_CHECK_EQ(rtprof_session_start(&s), -EINVAL);
	s.fd = 1000; /* not open */
	RTPROF_CHECK_EQ(rtprof_session_start(&s), -EINVAL);
	s = settings(fd);
	s.chunk_size = 100; /* below the smallest chunk */
	RTPROF_CHECK_EQ(rtprof_session_start(&s), -EINVAL);
	s = settings(fd);
	s.mode = (enum rtprof_mode)7;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), -EINVAL);
	s = settings(fd);
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	RTPROF_CHECK_EQ(rtprof_session_start(&s), -EBUSY);
	RTPROF_CHECK_EQ(rtprof_session_status_get(&st), 0);
	RTPROF_CHECK(st.running);
	RTPROF_CHECK_GT(st.generation, 0);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	RTPROF_CHECK_EQ(rtprof_session_stop(), -ENOENT);
	RTPROF_CHECK_EQ(rtprof_session_status_get(&st), 0);
	RTPROF_CHECK(!st.running);
	RTPROF_CHECK_GT(st.bytes_written, 0);
	RTPROF_CHECK_EQ(st.sink_error, 0);
	RTPROF_CHECK_STREQ(rtprof_strerror(-EBUSY), "a session is already running");
	close(fd);
}

static int
on_header_interval(void *ctx, const struct rtprof_dump_header *h)
{
	*(uint64_t *)ctx = h->settings.sample_interval_us;
	return 0;
}

/*
 * The sample interval: 100 us .. 1 s (both ends accepted), 0 for the
 * default 1 ms, which the dump header records as 1000 us.
 */
static void
test_interval(void)
{
	static const struct { uint32_t us; int rc; } cases[] = {
		{ 99, -EINVAL }, { 100, 0 }, { 1000000, 0 },
		{ 1000001, -EINVAL }, { 1, -EINVAL }, { RTPROF_SAMPLING_OFF, 0 },
	};
	struct rtprof_settings s;
	struct rtprof_session_status st;
	struct rtprof_dump_stats ds;
	uint64_t got = 0;
	struct rtprof_dump_cb cb = { .ctx = &got,
	    .on_header = on_header_interval };
	int fd = memfd_create("d", MFD_CLOEXEC);

	RTPROF_CHECK(fd >= 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		s = settings(fd);
		s.sample_interval_us = cases[i].us;
		RTPROF_CHECK_EQ(rtprof_session_start(&s), cases[i].rc);
		RTPROF_CHECK_EQ(rtprof_session_status_get(&st), 0);
		RTPROF_CHECK_EQ(st.running, cases[i].rc == 0);
		if (cases[i].rc == 0)
			RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	}
	/* The default, read back from the dump's header. */
	RTPROF_CHECK_EQ(ftruncate(fd, 0), 0);
	RTPROF_CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
	s = settings(fd);
	RTPROF_CHECK_EQ(s.sample_interval_us, 0);
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	RTPROF_CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
	RTPROF_CHECK_EQ(rtprof_dump_read_fd(fd, &cb, &ds), 0);
	RTPROF_CHECK_EQ(ds.damage, 0);
	RTPROF_CHECK_EQ(got, 1000);
	close(fd);
}

static atomic_int recording = 1;
static atomic_ulong attempts;

static void *
recorder(void *arg)
{
	(void)arg;
	rtprof_thread_register("recorder", 0);
	while (atomic_load(&recording)) {
		rtprof_mark("r", RTPROF_CAT_OTHER);
		atomic_fetch_add(&attempts, 1);
	}
	return NULL;
}

struct ctl {
	int fd;
	int rc_start, rc_stop;
	rtprof_counter *counter;
};

static void *
controller(void *arg)
{
	struct ctl *c = arg;
	struct rtprof_settings s = settings(c->fd);

	c->rc_start = rtprof_session_start(&s);
	usleep(100000);
	/* Not a registered thread: no record, but the value is sampled. */
	rtprof_counter_set(c->counter, 4242);
	c->rc_stop = rtprof_session_stop();
	return NULL;
}

/* Start and stop from an unregistered thread while another records; the
 * profiler's memory is reported in the status and in VALUES frames. */
static void
test_other_threads(void)
{
	struct ctl c = { memfd_create("d", MFD_CLOEXEC), -1, -1,
		rtprof_counter_declare("from-unregistered", "Other", "") };
	struct rtprof_session_status st;
	pthread_t r, k;
	struct dm m;
	struct dm_session *s;
	size_t recs = 0;

	pthread_create(&r, NULL, recorder, NULL);
	pthread_create(&k, NULL, controller, &c);
	pthread_join(k, NULL);
	atomic_store(&recording, 0);
	pthread_join(r, NULL);
	RTPROF_CHECK_EQ(c.rc_start, 0);
	RTPROF_CHECK_EQ(c.rc_stop, 0);
	RTPROF_CHECK_EQ(rtprof_session_status_get(&st), 0);
	RTPROF_CHECK_GT(st.memory_bytes, 0);
	lseek(c.fd, 0, SEEK_SET);
	RTPROF_CHECK_EQ(dm_load_fd(&m, c.fd), 0);
	RTPROF_CHECK_EQ(m.stats.damage, 0);
	s = &m.sessions[0];
	RTPROF_CHECK(s->has_trailer);
	RTPROF_CHECK_GT(s->nvalues, 0);
	{
		int found;

		RTPROF_CHECK_GT(dm_value(s, 0xFFFF, &found), 0); /* own memory */
		RTPROF_CHECK(found);
		RTPROF_CHECK_EQ(dm_value(s, c.counter->id, &found), 4242);
		RTPROF_CHECK(found);
	}
	for (size_t i = 0; i < s->nthreads; i++)
		if (strcmp(s->threads[i].name, "recorder") == 0)
			recs = s->threads[i].nrecs;
	RTPROF_CHECK_GT(recs, 1000);
	RTPROF_CHECK_LT(recs, atomic_load(&attempts) + 1);
	dm_free(&m);
	close(c.fd);
}

/* RTPROF_FD starts a session at process start and finishes it at exit. */
static void
test_autostart(const char *self)
{
	int fd = memfd_create("auto", 0); /* inherited across exec */
	char buf[16];
	pid_t pid;
	int status;
	struct dm m;
	struct dm_thread *th;

	RTPROF_CHECK(fd >= 0);
	snprintf(buf, sizeof(buf), "%d", fd);
	pid = fork();
	if (pid == 0) {
		setenv("RTPROF_FD", buf, 1);
		execl(self, self, "--autostart-child", (char *)NULL);
		_exit(127);
	}
	RTPROF_CHECK_EQ(waitpid(pid, &status, 0), pid);
	RTPROF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	lseek(fd, 0, SEEK_SET);
	RTPROF_CHECK_EQ(dm_load_fd(&m, fd), 0);
	RTPROF_CHECK_EQ(m.stats.damage, 0);
	RTPROF_CHECK_EQ(m.nsessions, 1);
	RTPROF_CHECK(m.sessions[0].has_trailer);
	RTPROF_CHECK_EQ(m.sessions[0].pid, pid);
	th = dm_thread(&m.sessions[0], pid);
	RTPROF_CHECK_STREQ(th->name, "main");
	RTPROF_CHECK_EQ(th->nrecs, 3);
	RTPROF_CHECK_STREQ(th->recs[2].name, "child-3");
	dm_free(&m);
	close(fd);
}

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--autostart-child") == 0) {
		/* Registered and recording since before main(). */
		rtprof_mark("child-1", RTPROF_CAT_OTHER);
		rtprof_mark("child-2", RTPROF_CAT_OTHER);
		rtprof_mark("child-3", RTPROF_CAT_OTHER);
		return 0; /* the atexit handler finishes the dump */
	}
	test_errors();
	test_interval();
	test_other_threads();
	test_autostart(argv[0]);
	puts("test_session: ok");
	return 0;
}
