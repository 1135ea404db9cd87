/*
 * test_roundtrip.c - every recorded event decodes back identical.
 *
 * Records each kind of event with known values through the public API,
 * stops, decodes the dump with codec/ and compares field by field; then the
 * harder paths: many chunks, partial dumps mid-session, flight-recorder
 * recycling, pause, two sessions in one stream, a thread that exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "dumpmodel.h"
#include "rtprof.h"

static int
new_dump(void)
{
	int fd = memfd_create("rtprof-test", MFD_CLOEXEC);

	RTPROF_CHECK(fd >= 0);
	return fd;
}

static void
start_prefill(int fd, enum rtprof_mode mode, uint32_t chunk, uint64_t memory,
    uint32_t prefill)
{
	struct rtprof_settings s;

	memset(&s, 0, sizeof(s));
	s.struct_size = sizeof(s);
	s.fd = fd;
	s.mode = mode;
	s.chunk_size = chunk;
	s.memory_limit = memory;
	s.prefill = prefill;
	s.flush_interval_us = 2000;
	/* The recording core alone: exact chunk budgets, no sampler thread
	 * (tests/test_sampler.c covers it). */
	s.sample_interval_us = RTPROF_SAMPLING_OFF;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
}

static void
start(int fd, enum rtprof_mode mode, uint32_t chunk, uint64_t memory)
{
	start_prefill(fd, mode, chunk, memory, 0);
}

static void
load(struct dm *m, int fd)
{
	RTPROF_CHECK(lseek(fd, 0, SEEK_SET) == 0);
	RTPROF_CHECK_EQ(dm_load_fd(m, fd), 0);
	for (int k = 0; k < 8; k++)
		if (m->damage_by_kind[k] != 0)
			fprintf(stderr, "damage %s: %llu\n", rtprof_dump_damage_name(k),
			    (unsigned long long)m->damage_by_kind[k]);
	RTPROF_CHECK_EQ(m->stats.bad_frames, 0);
	RTPROF_CHECK_EQ(m->stats.skipped_bytes, 0);
	RTPROF_CHECK_EQ(m->stats.seq_gaps, 0);
	RTPROF_CHECK_EQ(m->stats.bad_records, 0);
	RTPROF_CHECK_EQ(m->stats.truncated_tail_bytes, 0);
	RTPROF_CHECK_EQ(m->stats.damage, 0);
}

static pid_t
self_tid(void)
{
	return gettid();
}

static const rtprof_marker_type *all_kinds, *seq_type;
static rtprof_counter *ctr;

/* Every event kind, with values checked after decoding. */
static void
test_every_kind(void)
{
	char longs[400];
	int fd = new_dump();
	struct dm m;
	struct dm_session *s;
	struct dm_thread *th;
	uint64_t t0, t1;
	rtprof_rec r;
	size_t i = 0;

	memset(longs, 'x', sizeof(longs));
	start(fd, RTPROF_MODE_STREAM, 0, 0);
	rtprof_mark("alpha", RTPROF_CAT_AUDIO);
	rtprof_begin("zone", RTPROF_CAT_IO);
	rtprof_end("zone", RTPROF_CAT_IO);
	t0 = rtprof_now();
	t1 = t0 + 12345;
	rtprof_interval("span", RTPROF_CAT_COMPUTE, t0, t1);
	RTPROF_CHECK(rtprof_marker_open(&r, all_kinds, RTPROF_PHASE_INTERVAL, t0, t1));
	rtprof_put_i64(&r, -5);
	rtprof_put_u64(&r, (1ull << 63) + 1);
	rtprof_put_f64(&r, 3.25);
	rtprof_put_static_str(&r, "static-s");
	rtprof_put_str(&r, "copied", 6);
	rtprof_put_str(&r, longs, sizeof(longs));
	rtprof_marker_close(&r);
	RTPROF_CHECK(rtprof_marker_open(&r, seq_type, RTPROF_PHASE_INSTANT, rtprof_now(), 0));
	rtprof_put_u64(&r, 77);
	rtprof_marker_close(&r);
	rtprof_counter_set(ctr, 100);
	rtprof_counter_add(ctr, -3);
	rtprof_thread_sleep();
	rtprof_thread_wake();
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);

	load(&m, fd);
	RTPROF_CHECK_EQ(m.nsessions, 1);
	s = &m.sessions[0];
	RTPROF_CHECK(s->has_trailer);
	RTPROF_CHECK_EQ(s->nschemas, 2);
	RTPROF_CHECK_STREQ(s->schemas[0].name, "AllKinds");
	RTPROF_CHECK_EQ(s->schemas[0].nfields, 6);
	RTPROF_CHECK_EQ(s->ncounters, 1);
	RTPROF_CHECK_STREQ(s->counters[0].name, "ctr");
	RTPROF_CHECK_GT(s->nmodules, 0);
	/* The module map names this executable and librtprof, with their
	 * ELF build ids, and the address of a function here inside its own
	 * module (what offline symbolication needs). */
	{
		int exe = 0, lib = 0;
		uint64_t here = (uint64_t)(uintptr_t)&test_every_kind;

		for (size_t k = 0; k < s->nmodules && k < 32; k++) {
			const char *path = s->modules[k].path;
			size_t len = strlen(path);

			if (len >= 14 && strcmp(path + len - 14, "test_roundtrip") == 0) {
				exe = 1;
				RTPROF_CHECK_EQ(s->modules[k].build_id_len, 20);
				RTPROF_CHECK(here >= s->modules[k].start && here < s->modules[k].end);
			}
			if (strstr(path, "librtprof.so") != NULL) {
				lib = 1;
				RTPROF_CHECK_EQ(s->modules[k].build_id_len, 20);
			}
		}
		RTPROF_CHECK(exe && lib);
	}
	RTPROF_CHECK_GT(s->ticks_per_second, 1e6);
	th = dm_thread(s, self_tid());
	RTPROF_CHECK_STREQ(th->name, "main");
	RTPROF_CHECK(th->flags & RTPROF_THREAD_MAIN);
	RTPROF_CHECK_EQ(th->nrecs, 10);

	RTPROF_CHECK_EQ(th->recs[i].v.kind, 1);
	RTPROF_CHECK_STREQ(th->recs[i].name, "alpha");
	RTPROF_CHECK_EQ(th->recs[i].v.category, RTPROF_CAT_AUDIO);
	i++;
	RTPROF_CHECK_EQ(th->recs[i].v.kind, 2);
	RTPROF_CHECK_STREQ(th->recs[i].name, "zone");
	RTPROF_CHECK_EQ(th->recs[i].v.category, RTPROF_CAT_IO);
	i++;
	RTPROF_CHECK_EQ(th->recs[i].v.kind, 3);
	RTPROF_CHECK_STREQ(th->recs[i].name, "zone");
	RTPROF_CHECK_GE(th->recs[i].v.t0, th->recs[i - 1].v.t0);
	i++;
	RTPROF_CHECK_EQ(th->recs[i].v.kind, 4);
	RTPROF_CHECK_STREQ(th->recs[i].name, "span");
	RTPROF_CHECK_EQ(th->recs[i].v.t0, t0);
	RTPROF_CHECK_EQ(th->recs[i].v.t1, t1);
	i++;
	RTPROF_CHECK_EQ(th->recs[i].v.kind, 5);
	RTPROF_CHECK_EQ(th->recs[i].v.phase, RTPROF_PHASE_INTERVAL);
	RTPROF_CHECK_EQ(th->recs[i].v.id, all_kinds->id);
	RTPROF_CHECK_EQ(th->recs[i].v.t0, t0);
	RTPROF_CHECK_EQ(th->recs[i].v.t1, t1);
	RTPROF_CHECK_EQ(th->recs[i].v.nvals, 6);
	RTPROF_CHECK_EQ(th->recs[i].v.vals[0].kind, RTPROF_VAL_I64);
	RTPROF_CHECK_EQ(th->recs[i].v.vals[0].v.i, -5);
	RTPROF_CHECK_EQ(th->recs[i].v.vals[1].kind, RTPROF_VAL_U64);
	RTPROF_CHECK(th->recs[i].v.vals[1].v.u == (1ull << 63) + 1);
	RTPROF_CHECK_EQ(th->recs[i].v.vals[2].kind, RTPROF_VAL_F64);
	RTPROF_CHECK(th->recs[i].v.vals[2].v.d == 3.25);
	RTPROF_CHECK_EQ(th->recs[i].v.vals[3].kind, RTPROF_VAL_STRREF);
	RTPROF_CHECK_STREQ(dm_string(s, th->recs[i].v.vals[3].v.ref), "static-s");
	RTPROF_CHECK_EQ(th->recs[i].v.vals[4].kind, RTPROF_VAL_STR);
	RTPROF_CHECK_STREQ(th->recs[i].v.vals[4].v.str.p, "copied");
	RTPROF_CHECK_EQ(th->recs[i].v.vals[5].v.str.n, RTPROF_MAX_STRING);
	RTPROF_CHECK(memcmp(th->recs[i].v.vals[5].v.str.p, longs, RTPROF_MAX_STRING) == 0);
	i++;
	RTPROF_CHECK_EQ(th->recs[i].v.kind, 5);
	RTPROF_CHECK_EQ(th->recs[i].v.phase, RTPROF_PHASE_INSTANT);
	RTPROF_CHECK_EQ(th->recs[i].v.vals[0].v.u, 77);
	i++;
	RTPROF_CHECK_EQ(th->recs[i].v.kind, 6);
	RTPROF_CHECK_EQ(th->recs[i].v.id, ctr->id);
	RTPROF_CHECK_EQ(th->recs[i].v.value, 100);
	i++;
	RTPROF_CHECK_EQ(th->recs[i].v.kind, 6);
	RTPROF_CHECK_EQ(th->recs[i].v.value, 97);
	i++;
	RTPROF_CHECK_EQ(th->recs[i].v.kind, 7);
	i++;
	RTPROF_CHECK_EQ(th->recs[i].v.kind, 8);
	/* Times: non-decreasing (apart from the explicit interval), inside
	 * the session. */
	for (i = 1; i < th->nrecs; i++)
		if (th->recs[i].v.kind != 4 && th->recs[i].v.kind != 5)
			RTPROF_CHECK_GE(th->recs[i].v.t0, th->recs[i - 1].v.t0);
	RTPROF_CHECK_GE(th->recs[0].v.t0, s->start_ticks);
	RTPROF_CHECK_LE(th->recs[th->nrecs - 1].v.t0, s->trailer.stop_ticks);
	/* Trailer accounting matches. */
	RTPROF_CHECK_EQ(s->trailer.nthreads, 1);
	RTPROF_CHECK_EQ(s->trailer.threads[0].recorded, 10);
	RTPROF_CHECK_EQ(s->trailer.threads[0].dropped_full, 0);
	dm_free(&m);
	close(fd);
}

static void
seq_mark(uint64_t v)
{
	rtprof_rec r;

	if (rtprof_marker_open(&r, seq_type, RTPROF_PHASE_INSTANT, rtprof_now(), 0)) {
		rtprof_put_u64(&r, v);
		rtprof_marker_close(&r);
	}
}

/* Checks the thread's typed records carry 0..n-1 once each, in order. */
static void
check_sequence(const struct dm_thread *th, uint64_t first, uint64_t n)
{
	uint64_t want = first, seen = 0;

	for (size_t i = 0; i < th->nrecs; i++) {
		if (th->recs[i].v.kind != 5)
			continue;
		RTPROF_CHECK_EQ(th->recs[i].v.vals[0].v.u, want);
		want++;
		seen++;
	}
	RTPROF_CHECK_EQ(seen, n);
}

/* Many chunks and partial dumps while recording: nothing lost, nothing
 * repeated, chunk numbers in order. The thread gets all the chunks it needs
 * up front (prefill 255 x 124 records), so no drop can depend on how fast
 * the writer runs. */
static void
test_chunks_and_dumps(void)
{
	const uint64_t n = 30000;
	struct rtprof_thread_stats st0, st1;
	int fd = new_dump();
	struct dm m;
	struct dm_thread *th;
	uint64_t last_seq = 0;

	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&st0), 0);
	start_prefill(fd, RTPROF_MODE_STREAM, 4096, 64u << 20, 255);
	for (uint64_t i = 0; i < n; i++) {
		seq_mark(i);
		if (i % 4973 == 0)
			RTPROF_CHECK_EQ(rtprof_session_dump(), 0);
	}
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&st1), 0);
	load(&m, fd);
	th = dm_thread(&m.sessions[0], self_tid());
	/* Drops are counted, never silent: records + drops == attempts. */
	RTPROF_CHECK_EQ(th->nrecs + (st1.dropped_full - st0.dropped_full), n);
	RTPROF_CHECK_EQ(st1.dropped_full, st0.dropped_full); /* none expected */
	check_sequence(th, 0, n);
	RTPROF_CHECK_GT(th->data_frames, 100);
	for (size_t i = 0; i < th->nrecs; i++) {
		RTPROF_CHECK_GE(th->recs[i].chunk_seq, last_seq);
		last_seq = th->recs[i].chunk_seq;
	}
	RTPROF_CHECK_GT(last_seq, 50);
	RTPROF_CHECK_EQ(m.sessions[0].trailer.threads[0].recorded, n);
	dm_free(&m);
	close(fd);
}

/* Flight recorder: the newest data under the limit, the rest recycled and
 * counted. */
static void
test_flight_recorder(void)
{
	const uint64_t n = 100000;
	struct rtprof_thread_stats st0, st1;
	int fd = new_dump();
	struct dm m;
	struct dm_session *s;
	struct dm_thread *th;
	uint64_t first, recycled, dropped;

	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&st0), 0);
	start(fd, RTPROF_MODE_FLIGHT_RECORDER, 4096, 16 * 4096 + 16 * 256);
	for (uint64_t i = 0; i < n; i++) {
		seq_mark(i);
		if (i % 250 == 0)
			usleep(3000); /* as in test_chunks_and_dumps */
	}
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&st1), 0);
	load(&m, fd);
	s = &m.sessions[0];
	RTPROF_CHECK_STREQ(s->mode, "flight");
	th = dm_thread(s, self_tid());
	recycled = s->trailer.threads[0].recycled;
	RTPROF_CHECK_GT(recycled, 0);
	RTPROF_CHECK_EQ(recycled, st1.recycled - st0.recycled);
	RTPROF_CHECK_LT(th->nrecs, n / 4);
	/* What is kept is the newest data, contiguous up to the last event;
	 * every event is kept, recycled or counted as dropped. */
	dropped = st1.dropped_full - st0.dropped_full;
	RTPROF_CHECK_EQ(th->nrecs + recycled + dropped, n);
	RTPROF_CHECK_GT(th->nrecs, 0);
	RTPROF_CHECK_GE(th->recs[th->nrecs - 1].v.vals[0].v.u, n - 1 - dropped);
	first = th->recs[0].v.vals[0].v.u;
	if (dropped == 0)
		check_sequence(th, first, n - first);
	RTPROF_CHECK_EQ(s->trailer.threads[0].recorded, th->nrecs);
	dm_free(&m);
	close(fd);
}

/* Pause: nothing recorded while paused; the range is in the dump. */
static void
test_pause(void)
{
	struct rtprof_thread_stats st0, st1;
	int fd = new_dump();
	struct dm m;
	struct dm_session *s;

	start(fd, RTPROF_MODE_STREAM, 0, 0);
	seq_mark(0);
	RTPROF_CHECK_EQ(rtprof_session_pause(), 0);
	RTPROF_CHECK_EQ(rtprof_session_pause(), -EALREADY);
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&st0), 0);
	for (int i = 0; i < 100; i++)
		seq_mark(1000 + i);
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&st1), 0);
	RTPROF_CHECK_EQ(st1.outside - st0.outside, 100);
	RTPROF_CHECK_EQ(rtprof_session_resume(), 0);
	RTPROF_CHECK_EQ(rtprof_session_resume(), -EALREADY);
	seq_mark(1);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	load(&m, fd);
	s = &m.sessions[0];
	check_sequence(dm_thread(s, self_tid()), 0, 2);
	RTPROF_CHECK_EQ(s->npauses, 1);
	RTPROF_CHECK_LT(s->pauses[0].start, s->pauses[0].end);
	RTPROF_CHECK_GT(s->pauses[0].start, dm_thread(s, self_tid())->recs[0].v.t0);
	RTPROF_CHECK_LT(s->pauses[0].end, dm_thread(s, self_tid())->recs[1].v.t0);
	dm_free(&m);
	close(fd);
}

/* Two sessions in one stream: each record in its own session. */
static void
test_two_sessions(void)
{
	int fd = new_dump();
	struct dm m;

	start(fd, RTPROF_MODE_STREAM, 0, 0);
	seq_mark(1);
	seq_mark(2);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	seq_mark(99); /* between sessions: not recorded */
	start(fd, RTPROF_MODE_STREAM, 0, 0);
	seq_mark(3);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	load(&m, fd);
	RTPROF_CHECK_EQ(m.nsessions, 2);
	RTPROF_CHECK_NE(m.sessions[0].id, m.sessions[1].id);
	RTPROF_CHECK_EQ(m.sessions[1].generation, m.sessions[0].generation + 1);
	check_sequence(dm_thread(&m.sessions[0], self_tid()), 1, 2);
	check_sequence(dm_thread(&m.sessions[1], self_tid()), 3, 1);
	for (size_t i = 0; i < 2; i++) {
		struct dm_thread *th = dm_thread(&m.sessions[i], self_tid());
		for (size_t r = 0; r < th->nrecs; r++)
			RTPROF_CHECK_EQ(th->recs[r].generation, m.sessions[i].generation);
	}
	dm_free(&m);
	close(fd);
}

static pid_t exited_tid;
static struct rtprof_thread_stats exited_st;

static void *
short_lived(void *arg)
{
	(void)arg;
	RTPROF_CHECK_EQ(rtprof_thread_register("short-lived", 0), 0);
	RTPROF_CHECK_EQ(rtprof_thread_register("again", 0), -EEXIST);
	exited_tid = gettid();
	for (int i = 0; i < 1000; i++)
		seq_mark((uint64_t)i);
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&exited_st), 0);
	return NULL; /* unregisters itself at exit */
}

/*
 * Wait (up to 10 s) until the dump in @fd settles @tid's counts in a
 * THREAD frame: the writer does it once the exited thread's chunks are all
 * back. Read through a file description of its own (the writer appends at
 * the shared offset of @fd).
 */
static void
wait_settled(int fd, pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	for (int i = 0; i < 1000; i++) {
		int rfd = open(path, O_RDONLY | O_CLOEXEC);
		struct dm m;
		size_t n;

		RTPROF_CHECK(rfd >= 0);
		dm_load_fd(&m, rfd);    /* a frame may be half written */
		close(rfd);
		n = m.nsessions ? dm_thread(&m.sessions[m.nsessions - 1],
		    tid)->nsettled : 0;
		dm_free(&m);
		if (n != 0)
			return;
		usleep(10000);
	}
	RTPROF_CHECK(!"the exited thread's counts were never settled");
}

/* A thread that exits during the session keeps its data and its
 * unregister time; its counts go out in a THREAD frame once its chunks
 * are written, and the trailer does not list it. */
static void
test_exited_thread(void)
{
	int fd = new_dump();
	struct dm m;
	struct dm_thread *th;
	pthread_t t;

	start(fd, RTPROF_MODE_STREAM, 0, 0);
	pthread_create(&t, NULL, short_lived, NULL);
	pthread_join(t, NULL);
	wait_settled(fd, exited_tid);
	seq_mark(5);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	load(&m, fd);
	th = dm_thread(&m.sessions[0], exited_tid);
	RTPROF_CHECK_STREQ(th->name, "short-lived");
	RTPROF_CHECK(th->has_unregister);
	RTPROF_CHECK_GT(th->unregister_ticks, th->register_ticks);
	check_sequence(th, 0, 1000);
	RTPROF_CHECK_LE(th->recs[999].v.t0, th->unregister_ticks);
	RTPROF_CHECK_EQ(th->nsettled, 1);
	RTPROF_CHECK_EQ(th->settled.recorded, 1000);
	RTPROF_CHECK_EQ(th->settled.dropped_full, 0);
	RTPROF_CHECK_EQ(th->settled.recycled, 0);
	RTPROF_CHECK_EQ(m.sessions[0].trailer_entries, 1);   /* main */
	RTPROF_CHECK_EQ(m.sessions[0].trailer.threads[0].tid, self_tid());
	dm_free(&m);
	close(fd);
}

/*
 * Flight recorder: a thread that exits while its chunks are kept stays in
 * the session's accounts until they are recycled for newer data; then its
 * THREAD frame says all of its records were recycled, none recorded.
 */
static void
test_flight_exited_thread(void)
{
	int fd = new_dump();
	struct dm m;
	struct dm_thread *th;
	pthread_t t;
	uint64_t i = 0;

	start(fd, RTPROF_MODE_FLIGHT_RECORDER, 4096, 16 * 4096 + 16 * 256);
	pthread_create(&t, NULL, short_lived, NULL);
	pthread_join(t, NULL);
	/* The main thread's records push the exited thread's chunks out. */
	for (; i < 20000; i++) {
		seq_mark(i);
		if (i % 250 == 0)
			usleep(3000);
	}
	wait_settled(fd, exited_tid);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	load(&m, fd);
	th = dm_thread(&m.sessions[0], exited_tid);
	RTPROF_CHECK(th->has_unregister);
	RTPROF_CHECK_EQ(th->nrecs, 0);
	RTPROF_CHECK_EQ(th->nsettled, 1);
	RTPROF_CHECK_EQ(th->settled.recorded, 0);
	RTPROF_CHECK_GT(th->settled.recycled, 0);
	/* Its drops were final when it exited; the recycling came later. */
	RTPROF_CHECK_EQ(th->settled.dropped_full, exited_st.dropped_full);
	RTPROF_CHECK_EQ(th->settled.recycled + th->settled.dropped_full, 1000);
	RTPROF_CHECK_EQ(m.sessions[0].trailer_entries, 1);   /* main */
	dm_free(&m);
	close(fd);
}

int
main(void)
{
	static const struct rtprof_marker_schema all = {
		"AllKinds", RTPROF_CAT_USER, 0, NULL, NULL, NULL, 6, {
			{ "i", NULL, "integer", RTPROF_FIELD_I64 },
			{ "u", NULL, "integer", RTPROF_FIELD_U64 },
			{ "d", NULL, "decimal", RTPROF_FIELD_F64 },
			{ "s", NULL, "string", RTPROF_FIELD_STATIC_STR },
			{ "c", NULL, "string", RTPROF_FIELD_STR },
			{ "l", NULL, "string", RTPROF_FIELD_STR },
		}
	};
	static const struct rtprof_marker_schema seq = {
		"Seq", RTPROF_CAT_OTHER, 0, NULL, NULL, NULL, 1, {
			{ "n", NULL, "integer", RTPROF_FIELD_U64 },
		}
	};

	RTPROF_CHECK_EQ(rtprof_thread_register("main", 0), 0);
	all_kinds = rtprof_marker_type_declare(&all);
	seq_type = rtprof_marker_type_declare(&seq);
	ctr = rtprof_counter_declare("ctr", "Other", "test counter");
	RTPROF_CHECK(all_kinds && seq_type && ctr);
	test_every_kind();
	test_chunks_and_dumps();
	test_flight_recorder();
	test_pause();
	test_two_sessions();
	test_exited_thread();
	test_flight_exited_thread();
	puts("test_roundtrip: ok");
	return 0;
}
