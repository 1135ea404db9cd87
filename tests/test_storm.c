/*
 * test_storm.c - storms (issue 8, reliability), each checked by decoding
 * the dump and accounting for every event exactly.
 *
 *   test_storm threads [N]   N short-lived threads (default 10000)
 *   test_storm control [S]   control calls from several threads, S seconds
 *                            (default 5)
 *   test_storm onechunk      a memory limit of a single chunk
 *
 * Environment: RTPROF_TEST_TSAN=1 (the TSan build, set by ctest) makes the
 * sampling intervals longer (the counts are the same in every build);
 * STORM_SEED=n fixes the random choices (not the scheduling);
 * STORM_SAVE=path keeps a copy of the (last) stream; STORM_STRICT=0 lets
 * the control storm pass with sessions' frames interleaved (the issue
 * described in run_control(), fixed: a start waits for the sessions still
 * being written).
 *
 * Every recording thread ("worker") records typed markers of the "storm"
 * types whose first two fields are its logical id and a per-worker
 * sequence number (a "stormfat" type adds a copied string so that chunks
 * fill after a few records), and counts its own attempts; the decoder
 * (check_stream) follows every record back to its worker:
 *   - each (worker, seq) at most once in the whole stream, only if the
 *     worker's marker_open succeeded, under the worker's tid, in strictly
 *     increasing seq order within a session and from one session to the
 *     next (by generation);
 *   - per session and tid: records decoded == the trailer's `recorded`;
 *     the DATA headers' drops <= the trailer's (which counts the thread's
 *     whole session: drops after its last chunk, or of a thread that never
 *     got one, too); recycled only in the flight recorder; chunk
 *     parts in order with no part repeated (chunk_seq, record_index);
 *     every DATA frame carries its session's generation and comes inside
 *     its session (frame session id), every session has its HEADER,
 *     VALUES and TRAILER, no damage, no lost chunk, no EVENT;
 *   - every SAMPLE/SAME names a thread the session described;
 *   - per worker: decoded + dropped_full + dropped_nested + outside + late
 *     + recycled == attempts, from rtprof_thread_stats_get() read once the
 *     statistics are final (see each test).
 *   - the dump's own drop counts: per worker, the trailers' drops summed
 *     over its sessions == its statistics' drops where the test makes them
 *     final while the session runs (threads, onechunk: exact), and <= in
 *     the control storm (a drop counted by a thread that passed its state
 *     check just before a stop, settled after the session's trailer, is as
 *     late as a record: it belongs to no session). Each test prints the drops not in any
 *     trailer.
 *
 * threads: a stream session with sampling on (1 ms, 2 ms under TSan) and a
 *   2 MiB pool of 4 KiB chunks that the threads' prefill (2 each) and the
 *   exited threads' chunks not back yet can exhaust (so some drop), while
 *   10000 threads are created in a sliding window of at most 200 alive;
 *   each registers (every 4th real-time), records 16..64 typed markers
 *   (some spin meanwhile so the sampler
 *   signals them, some declare a sleep), reads its statistics, unregisters
 *   (half explicitly, half by the thread-exit destructor) and exits. The
 *   session runs until every thread is joined, so a thread's statistics
 *   are final when it reads them (no record can be late or recycled):
 *   committed == decoded and committed + drops == attempts, exactly, for
 *   every thread; per tid, the trailer's drops == the threads' drops;
 *   every thread has its THREAD frame (name, tid, exit).
 * control: 4 workers record while 3 control threads call start (random
 *   settings: stream or flight recorder, sampling on or off, small pools),
 *   stop, pause, resume, dump and status in a tight loop, unsynchronised,
 *   all sessions appending to one descriptor; a watchdog fails the test
 *   if the control calls stop making progress (deadlock). Every return
 *   code must be one the state allows. Then the quiesce of test_stress.c:
 *   one session started and stopped after the storm, one recording call
 *   per worker (retires its chunk, counted `outside`), one more session
 *   started and stopped (its closing collect drains those chunks): the
 *   statistics are final. Also: every record of a session is timed before
 *   that session's closing snapshot (its last VALUES frame) and every
 *   typed marker's call returned after the session started (+/- 50 us of
 *   TSC skew between vCPUs), so no record lands in a session it was not
 *   recorded in.
 * onechunk: memory_limit == chunk_size (4 KiB; and the default 64 KiB),
 *   stream and flight recorder, sampling on, 4 workers record 20000
 *   events each into the single chunk of the pool: drops (checked > 0),
 *   exact accounting as above (the trailers' drops too), every committed
 *   record decoded (stream) or recycled (flight), and the pool still holds
 *   its one chunk after a dump request (core/pool.c once freed it when it
 *   first came back, and the session recorded nothing more).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "testutil.h"
#include "dump_reader.h"
#include "rtprof.h"

#if defined(__SANITIZE_ADDRESS__)
#define STORM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STORM_ASAN 1
#endif
#endif

#define MAX_WORKERS 20000
#define SLACK_US 50

/* ------------------------------------------------------------------ */
/* Small helpers                                                        */

static int
under_tsan(void)
{
	const char *v = getenv("RTPROF_TEST_TSAN");

	return v != NULL && *v != '\0' && *v != '0';
}

static int
new_sink(void)
{
	int fd = memfd_create("rtprof-storm", MFD_CLOEXEC);

	if (fd < 0) {
		char path[] = "/tmp/rtprof-storm-XXXXXX";

		fd = mkstemp(path);
		RTPROF_CHECK(fd >= 0);
		unlink(path);
	}
	RTPROF_CHECK_EQ(fcntl(fd, F_SETFL, O_APPEND), 0);
	return fd;
}

static uint64_t base_seed;

/* STORM_SAVE=path: keep a copy of the stream (the last one of the run). */
static void
save_stream(int fd)
{
	const char *path = getenv("STORM_SAVE");
	char buf[65536];
	ssize_t n;
	int out;

	if (path == NULL || *path == '\0')
		return;
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	RTPROF_CHECK(out >= 0);
	RTPROF_CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		RTPROF_CHECK_EQ(write(out, buf, (size_t)n), n);
	close(out);
}

/* ------------------------------------------------------------------ */
/* Workers                                                              */

struct wsess {
	uint64_t sidx;  /* session index + 1; 0: free */
	int64_t last;   /* last seq decoded in that session */
};

struct worker {
	uint32_t id;
	pid_t tid;
	char name[24];
	unsigned flags;
	/* Attempts per kind; written by the owner thread only. */
	uint64_t n_typed, n_counter, n_sleep, n_wake;
	uint64_t typed_committed;
	uint8_t *committed;     /* bit per seq: marker_open succeeded */
	uint64_t *post;         /* clock after the call (track_post) */
	size_t cap;
	struct rtprof_thread_stats st;
	int stats_ok;
	/* Decoding side (main thread). */
	uint8_t *seen;
	int64_t max_seq;        /* highest seq decoded, any session */
	uint64_t max_seq_sidx;  /* its session index + 1 */
	struct wsess ws[4];     /* order within the latest sessions */
	uint64_t decoded_typed;
	uint64_t decoded_all;   /* every record under its tid (unique tids) */
	int thread_frame, exit_frame;
};

static struct worker *workers[MAX_WORKERS];
static atomic_uint nworkers;
static int track_post;          /* keep each typed marker's post clock */

static const rtprof_marker_type *storm_type, *fat_type;
static rtprof_counter *storm_ctr;

static const char pad[RTPROF_MAX_STRING] =
    "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"
    "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"
    "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz";

static const rtprof_marker_type *
declare_type(int fat)
{
	struct rtprof_marker_schema sc;
	const rtprof_marker_type *t;

	memset(&sc, 0, sizeof(sc));
	sc.name = fat ? "stormfat" : "storm";
	sc.category = RTPROF_CAT_USER;
	sc.nfields = fat ? 3 : 2;
	sc.fields[0].key = "id";
	sc.fields[0].format = "integer";
	sc.fields[0].kind = RTPROF_FIELD_U64;
	sc.fields[1].key = "seq";
	sc.fields[1].format = "integer";
	sc.fields[1].kind = RTPROF_FIELD_U64;
	sc.fields[2].key = "pad";
	sc.fields[2].format = "string";
	sc.fields[2].kind = RTPROF_FIELD_STR;
	t = rtprof_marker_type_declare(&sc);
	RTPROF_CHECK(t != NULL);
	return t;
}

static void
declare_all(void)
{
	storm_type = declare_type(0);
	fat_type = declare_type(1);
	storm_ctr = rtprof_counter_declare("storm.count", "Storm", "events");
	RTPROF_CHECK(storm_ctr != NULL);
}

static struct worker *
worker_new(unsigned flags)
{
	unsigned id = atomic_fetch_add(&nworkers, 1);
	struct worker *w;

	RTPROF_CHECK_LT(id, MAX_WORKERS);
	w = calloc(1, sizeof(*w));
	RTPROF_CHECK(w != NULL);
	w->id = id;
	w->flags = flags;
	w->max_seq = -1;
	snprintf(w->name, sizeof(w->name), "storm%u", id);
	workers[id] = w;
	return w;
}

static void
worker_grow(struct worker *w, size_t need)
{
	size_t ncap = w->cap ? w->cap : 64;

	while (ncap < need)
		ncap *= 2;
	if (ncap == w->cap)
		return;
	w->committed = realloc(w->committed, ncap / 8);
	RTPROF_CHECK(w->committed != NULL);
	memset(w->committed + w->cap / 8, 0, (ncap - w->cap) / 8);
	if (track_post) {
		w->post = realloc(w->post, ncap * sizeof(*w->post));
		RTPROF_CHECK(w->post != NULL);
	}
	w->cap = ncap;
}

static void
worker_register(struct worker *w)
{
	RTPROF_CHECK_EQ(rtprof_thread_register(w->name, w->flags), 0);
	w->tid = gettid_();
}

static uint64_t
worker_attempts(const struct worker *w)
{
	return w->n_typed + w->n_counter + w->n_sleep + w->n_wake;
}

/* One typed marker; @fat: with a copied string. Returns 1 if committed. */
static int
rec_typed(struct worker *w, int fat)
{
	uint64_t seq = w->n_typed++;
	rtprof_rec rec;
	int ok = 0;

	if (seq >= w->cap)
		worker_grow(w, seq + 1);
	if (rtprof_marker_open(&rec, fat ? fat_type : storm_type,
	    RTPROF_PHASE_INSTANT, rtprof_now(), 0)) {
		rtprof_put_u64(&rec, w->id);
		rtprof_put_u64(&rec, seq);
		if (fat)
			rtprof_put_str(&rec, pad, 8 + seq % 193);
		rtprof_marker_close(&rec);
		ok = 1;
	}
	if (track_post)
		w->post[seq] = rtprof_now();
	if (ok) {
		w->committed[seq / 8] |= (uint8_t)(1u << (seq % 8));
		w->typed_committed++;
	}
	return ok;
}

/* A random event: typed (plain or fat), counter, or sleep + wake. */
static void
rec_one(struct worker *w, struct rng *g)
{
	unsigned k = rng_next(g) % 100;

	if (k < 55) {
		rec_typed(w, 0);
	} else if (k < 75) {
		rec_typed(w, 1);
	} else if (k < 90) {
		w->n_counter++;
		rtprof_counter_add(storm_ctr, 1);
	} else {
		w->n_sleep++;
		rtprof_thread_sleep();
		w->n_wake++;
		rtprof_thread_wake();
	}
}

/* ------------------------------------------------------------------ */
/* The decoder's side                                                   */

struct tacc {
	int64_t tid;            /* 0: free slot */
	uint64_t decoded;
	uint64_t data_full, data_nested;
	int64_t last_chunk;     /* last DATA part: chunk_seq */
	uint64_t last_rec_end;  /* and its record_index + nrec */
	int in_trailer;         /* counts given: THREAD totals or trailer */
	struct rtprof_dump_trailer_thread tr; /* the dump's counts */
	int has_thread, has_exit;
	int settled_by_thread;  /* a THREAD frame with totals came */
	uint64_t flags;
};

struct csess {
	uint32_t id;
	uint64_t index;         /* 1, 2, ... in stream order of HEADERs */
	uint64_t gen;
	int flight;
	uint64_t start_ticks, stop_ticks, close_ticks;
	uint64_t max_ts;
	int has_header, has_values, has_trailer;
	uint64_t thread_totals, trailer_entries; /* where the counts came */
	uint64_t chunks_lost, nevents;
	int limit_reached;
	struct tacc *t;
	size_t tcap, tn;
	int64_t sampler_tid;
	uint64_t samples, sames, overheads, unknown_sampled, records;
	uint64_t data_frames;
};

struct checker {
	struct csess *s;
	size_t n, cap;
	struct csess *cur;      /* the session of the frame being delivered */
	uint64_t interleaved;   /* frames of a session after a newer HEADER */
	uint64_t headers_reordered; /* a HEADER after one of a later generation */
	uint64_t damage;
	double tps;
	uint64_t slack;
};

static struct tacc *
tacc_get(struct csess *s, int64_t tid, int create)
{
	size_t i;

	if (s->tn * 2 >= s->tcap) {
		size_t ncap = s->tcap ? s->tcap * 2 : 64;
		struct tacc *nt = calloc(ncap, sizeof(*nt));

		RTPROF_CHECK(nt != NULL);
		for (size_t k = 0; k < s->tcap; k++) {
			if (s->t[k].tid == 0)
				continue;
			for (i = ((uint64_t)s->t[k].tid * 0x9E3779B97F4A7C15ull) >> 40 &
			    (ncap - 1); nt[i].tid != 0; i = (i + 1) & (ncap - 1))
				;
			nt[i] = s->t[k];
		}
		free(s->t);
		s->t = nt;
		s->tcap = ncap;
	}
	for (i = ((uint64_t)tid * 0x9E3779B97F4A7C15ull) >> 40 & (s->tcap - 1);
	    s->t[i].tid != 0; i = (i + 1) & (s->tcap - 1))
		if (s->t[i].tid == tid)
			return &s->t[i];
	if (!create)
		return NULL;
	RTPROF_CHECK(tid != 0);
	memset(&s->t[i], 0, sizeof(s->t[i]));
	s->t[i].tid = tid;
	s->t[i].last_chunk = -1;
	s->tn++;
	return &s->t[i];
}

static struct csess *
sess_by_id(struct checker *c, uint32_t id)
{
	for (size_t i = c->n; i-- > 0;)
		if (c->s[i].id == id)
			return &c->s[i];
	return NULL;
}

static int
ck_frame(void *ctx, const struct rtprof_dump_frame *f)
{
	struct checker *c = ctx;

	if (f->kind == RTPROF_FRAME_HEADER) {
		RTPROF_CHECK(sess_by_id(c, f->session) == NULL);
		if (c->n == c->cap) {
			c->cap = c->cap ? c->cap * 2 : 64;
			c->s = realloc(c->s, c->cap * sizeof(*c->s));
			RTPROF_CHECK(c->s != NULL);
		}
		c->cur = &c->s[c->n++];
		memset(c->cur, 0, sizeof(*c->cur));
		c->cur->id = f->session;
		c->cur->index = c->n;
		RTPROF_CHECK_EQ(f->seq, 0);
		return 0;
	}
	c->cur = sess_by_id(c, f->session);
	/* Every frame of a session comes after its HEADER, before its
	 * TRAILER (which is its last frame). */
	RTPROF_CHECK(c->cur != NULL);
	RTPROF_CHECK(!c->cur->has_trailer);
	if (c->cur != &c->s[c->n - 1])
		c->interleaved++;
	return 0;
}

static int
ck_header(void *ctx, const struct rtprof_dump_header *h)
{
	struct checker *c = ctx;
	struct csess *s = c->cur;

	RTPROF_CHECK_EQ(s->id, h->session);
	s->has_header = 1;
	s->gen = h->generation;
	s->start_ticks = h->clock.start_ticks;
	s->flight = h->settings.mode != NULL && strcmp(h->settings.mode, "flight") == 0;
	RTPROF_CHECK(h->clock.ticks_per_second > 0);
	if (c->tps == 0) {
		c->tps = h->clock.ticks_per_second;
		c->slack = (uint64_t)(c->tps / 1e6 * SLACK_US) + 1;
	}
	RTPROF_CHECK(h->clock.ticks_per_second == c->tps);
	/* Generations are unique. */
	for (size_t i = 0; i + 1 < c->n; i++)
		RTPROF_CHECK_NE(c->s[i].gen, s->gen);
	if (c->n > 1 && s->gen < c->s[c->n - 2].gen)
		c->headers_reordered++;
	return 0;
}

/* The worker a THREAD frame's or a record's name points to, or NULL. */
static struct worker *
worker_of_name(const char *name)
{
	unsigned id;
	char tail;

	if (name == NULL || sscanf(name, "storm%u%c", &id, &tail) != 1 ||
	    id >= atomic_load(&nworkers))
		return NULL;
	return workers[id];
}

/* A thread's counts, from its last THREAD frame or the trailer: added up,
 * as a tid's counts may come in several parts (docs/wire-format.md). */
static void
settled_add(struct tacc *a, const struct rtprof_dump_trailer_thread *n)
{
	a->in_trailer = 1;
	rtprof_dump_counts_add(&a->tr, n);
}

static int
ck_thread(void *ctx, const struct rtprof_dump_thread *t)
{
	struct checker *c = ctx;
	struct tacc *a = tacc_get(c->cur, t->tid, 1);
	struct worker *w;

	a->has_thread = 1;
	a->flags = t->flags;
	a->has_exit |= t->has_unregister;
	if (t->has_totals) {
		/* Final counts: of an exited thread, once. */
		RTPROF_CHECK(t->has_unregister);
		RTPROF_CHECK(!a->settled_by_thread);
		a->settled_by_thread = 1;
		c->cur->thread_totals++;
		settled_add(a, &t->totals);
	}
	if (t->flags & RTPROF_THREAD_SAMPLER) {
		RTPROF_CHECK(c->cur->sampler_tid == 0 || c->cur->sampler_tid == t->tid);
		c->cur->sampler_tid = t->tid;
		return 0;
	}
	w = worker_of_name(t->name);
	if (w != NULL) {
		RTPROF_CHECK_EQ(w->tid, t->tid);
		RTPROF_CHECK_EQ(t->flags & RTPROF_THREAD_RT, w->flags & RTPROF_THREAD_RT);
		w->thread_frame = 1;
		w->exit_frame |= t->has_unregister;
	}
	return 0;
}

static int
ck_data(void *ctx, const struct rtprof_dump_data *d)
{
	struct checker *c = ctx;
	struct csess *s = c->cur;
	struct tacc *a = tacc_get(s, d->tid, 1);

	RTPROF_CHECK_EQ(d->generation, s->gen);
	/* Parts in order, none repeated: a new chunk starts at its first
	 * record (or later, when its first part went with a recycled or
	 * late...: not in these tests' sessions but the flight recorder,
	 * which recycles whole chunks only), a chunk's next part where the
	 * previous one ended. */
	if ((int64_t)d->chunk_seq == a->last_chunk) {
		RTPROF_CHECK_EQ(d->record_index, a->last_rec_end);
		RTPROF_CHECK_EQ(d->dropped_full, 0);
		RTPROF_CHECK_EQ(d->dropped_nested, 0);
	} else {
		RTPROF_CHECK_GT((int64_t)d->chunk_seq, a->last_chunk);
		RTPROF_CHECK_EQ(d->record_index, 0);
		if (!s->flight)
			RTPROF_CHECK_EQ(d->chunk_seq, (uint64_t)(a->last_chunk + 1));
	}
	RTPROF_CHECK_GT(d->nrec, 0);
	a->last_chunk = (int64_t)d->chunk_seq;
	a->last_rec_end = d->record_index + d->nrec;
	a->data_full += d->dropped_full;
	a->data_nested += d->dropped_nested;
	s->data_frames++;
	return 0;
}

static void
ck_typed(struct checker *c, struct csess *s, const struct rtprof_dump_data *d,
    const struct rtprof_rec_view *r)
{
	uint64_t id, seq;
	struct worker *w;
	struct wsess *ws = NULL;

	RTPROF_CHECK(r->id == storm_type->id || r->id == fat_type->id);
	RTPROF_CHECK_EQ(r->nvals, r->id == fat_type->id ? 3 : 2);
	RTPROF_CHECK_EQ(r->vals[0].kind, RTPROF_VAL_U64);
	RTPROF_CHECK_EQ(r->vals[1].kind, RTPROF_VAL_U64);
	id = r->vals[0].v.u;
	seq = r->vals[1].v.u;
	RTPROF_CHECK_LT(id, atomic_load(&nworkers));
	w = workers[id];
	RTPROF_CHECK_EQ(w->tid, d->tid);
	RTPROF_CHECK_LT(seq, w->n_typed);
	if (r->nvals == 3) {
		RTPROF_CHECK_EQ(r->vals[2].kind, RTPROF_VAL_STR);
		RTPROF_CHECK_EQ(r->vals[2].v.str.n, 8 + seq % 193);
		RTPROF_CHECK(memcmp(r->vals[2].v.str.p, pad, 8 + seq % 193) == 0);
	}
	/* Only what was committed, once. */
	RTPROF_CHECK(w->committed[seq / 8] & (1u << (seq % 8)));
	if (w->seen == NULL) {
		w->seen = calloc(w->cap / 8 + 1, 1);
		RTPROF_CHECK(w->seen != NULL);
	}
	RTPROF_CHECK(!(w->seen[seq / 8] & (1u << (seq % 8))));
	w->seen[seq / 8] |= (uint8_t)(1u << (seq % 8));
	/* In order within the session, and after everything of the worker's
	 * older sessions (a flight recorder's kept chunks may be written
	 * after the next session's first frames: order by generation). */
	for (int i = 0; i < 4; i++)
		if (w->ws[i].sidx == s->index)
			ws = &w->ws[i];
	if (ws == NULL) {
		int old = 0;

		for (int i = 1; i < 4; i++)
			if (w->ws[i].sidx < w->ws[old].sidx)
				old = i;
		ws = &w->ws[old];
		ws->sidx = s->index;
		ws->last = -1;
	}
	RTPROF_CHECK_GT((int64_t)seq, ws->last);
	ws->last = (int64_t)seq;
	if ((int64_t)seq > w->max_seq) {
		/* a record of a later seq may only be of this session or a
		 * later one */
		if (w->max_seq_sidx != 0)
			RTPROF_CHECK_GE(s->gen, c->s[w->max_seq_sidx - 1].gen);
		w->max_seq = (int64_t)seq;
		w->max_seq_sidx = s->index;
	} else {
		RTPROF_CHECK_LT(s->gen, c->s[w->max_seq_sidx - 1].gen);
	}
	/* The call returned after its session started. */
	if (track_post)
		RTPROF_CHECK_GE(w->post[seq] + c->slack, s->start_ticks);
	w->decoded_typed++;
}

static int
ck_record(void *ctx, const struct rtprof_dump_data *d,
    const struct rtprof_rec_view *r)
{
	struct checker *c = ctx;
	struct csess *s = c->cur;
	struct tacc *a = tacc_get(s, d->tid, 1), *sampled;

	a->decoded++;
	s->records++;
	if (r->t0 > s->max_ts && r->kind != RTPROF_REC_OVERHEAD)
		s->max_ts = r->t0;
	switch (r->kind) {
	case RTPROF_REC_TYPED:
		ck_typed(c, s, d, r);
		break;
	case RTPROF_REC_SAMPLE:
	case RTPROF_REC_SAME:
		RTPROF_CHECK_EQ(d->tid, s->sampler_tid);
		sampled = tacc_get(s, r->tid, 0);
		if (sampled == NULL || !sampled->has_thread)
			s->unknown_sampled++;
		if (r->kind == RTPROF_REC_SAMPLE)
			s->samples++;
		else
			s->sames++;
		break;
	case RTPROF_REC_OVERHEAD:
		RTPROF_CHECK_EQ(d->tid, s->sampler_tid);
		s->overheads++;
		break;
	case RTPROF_REC_KSTACK:  /* where the kernel allows kernel stacks */
		RTPROF_CHECK_EQ(d->tid, s->sampler_tid);
		break;
	case RTPROF_REC_COUNTER:
	case RTPROF_REC_SLEEP:
	case RTPROF_REC_WAKE:
		break;
	default:
		fprintf(stderr, "test_storm: unexpected record kind %u\n", r->kind);
		RTPROF_CHECK(0);
	}
	return 0;
}

static int
ck_values(void *ctx, uint64_t t, size_t n, const uint32_t *ids, const int64_t *v)
{
	struct checker *c = ctx;

	(void)n, (void)ids, (void)v;
	c->cur->close_ticks = t;
	c->cur->has_values = 1;
	return 0;
}

static int
ck_event(void *ctx, const struct rtprof_dump_event *e)
{
	struct checker *c = ctx;

	fprintf(stderr, "test_storm: EVENT %s in session %llu\n",
	    e->what ? e->what : "?", (unsigned long long)c->cur->index);
	c->cur->nevents++;
	return 0;
}

static int
ck_trailer(void *ctx, const struct rtprof_dump_trailer *t)
{
	struct checker *c = ctx;
	struct csess *s = c->cur;

	s->has_trailer = 1;
	s->stop_ticks = t->stop_ticks;
	s->chunks_lost = t->chunks_lost;
	s->limit_reached = t->limit_reached;
	s->trailer_entries = t->nthreads;
	for (size_t i = 0; i < t->nthreads; i++)
		settled_add(tacc_get(s, t->threads[i].tid, 1), &t->threads[i]);
	return 0;
}

static int
ck_damage(void *ctx, const struct rtprof_dump_damage *d)
{
	struct checker *c = ctx;

	fprintf(stderr, "test_storm: damage %s at %llu: %s\n",
	    rtprof_dump_damage_name(d->kind), (unsigned long long)d->offset,
	    d->message ? d->message : "");
	c->damage++;
	return 0;
}

/* Totals over the sessions, for the report. */
struct totals {
	uint64_t sessions, records, samples, sames, overheads, data_frames;
	uint64_t tr_full, tr_nested, tr_recycled;
	uint64_t bytes;
};

/*
 * Decode the stream in @fd and check everything a dump alone can tell
 * (see the top of the file); the caller then checks the workers.
 */
static void
check_stream(int fd, struct checker *c, struct totals *tot)
{
	struct rtprof_dump_cb cb;
	struct rtprof_dump_stats st;

	save_stream(fd);
	memset(c, 0, sizeof(*c));
	memset(tot, 0, sizeof(*tot));
	memset(&cb, 0, sizeof(cb));
	cb.ctx = c;
	cb.on_frame = ck_frame;
	cb.on_header = ck_header;
	cb.on_thread = ck_thread;
	cb.on_data = ck_data;
	cb.on_record = ck_record;
	cb.on_values = ck_values;
	cb.on_event = ck_event;
	cb.on_trailer = ck_trailer;
	cb.on_damage = ck_damage;
	RTPROF_CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
	RTPROF_CHECK_EQ(rtprof_dump_read_fd(fd, &cb, &st), 0);
	RTPROF_CHECK_EQ(c->damage, 0);
	RTPROF_CHECK_EQ(st.damage, 0);
	RTPROF_CHECK_EQ(st.bad_frames, 0);
	RTPROF_CHECK_EQ(st.skipped_bytes, 0);
	RTPROF_CHECK_EQ(st.seq_gaps, 0);
	RTPROF_CHECK_EQ(st.seq_dups, 0);
	RTPROF_CHECK_EQ(st.bad_payloads, 0);
	RTPROF_CHECK_EQ(st.bad_records, 0);
	RTPROF_CHECK_EQ(st.truncated_tail_bytes, 0);
	RTPROF_CHECK_EQ(st.unknown_frames, 0);
	RTPROF_CHECK_EQ(st.sessions, c->n);
	tot->bytes = st.bytes;
	tot->sessions = c->n;

	for (size_t i = 0; i < c->n; i++) {
		struct csess *s = &c->s[i];

		RTPROF_CHECK(s->has_header);
		RTPROF_CHECK(s->has_trailer);
		RTPROF_CHECK(s->has_values);
		RTPROF_CHECK_EQ(s->chunks_lost, 0);
		RTPROF_CHECK(!s->limit_reached);
		RTPROF_CHECK_EQ(s->nevents, 0);
		RTPROF_CHECK_LE(s->start_ticks, s->stop_ticks);
		RTPROF_CHECK_LE(s->stop_ticks, s->close_ticks + c->slack);
		/* Nothing recorded after the session's closing snapshot. */
		RTPROF_CHECK_LE(s->max_ts, s->close_ticks + c->slack);
		RTPROF_CHECK_EQ(s->unknown_sampled, 0);
		for (size_t k = 0; k < s->tcap; k++) {
			struct tacc *a = &s->t[k];

			if (a->tid == 0)
				continue;
			if (a->decoded > 0) {
				RTPROF_CHECK(a->has_thread);
				RTPROF_CHECK(a->in_trailer);
			}
			RTPROF_CHECK_EQ(a->decoded, a->in_trailer ? a->tr.recorded : 0);
			RTPROF_CHECK_LE(a->data_full, a->tr.dropped_full);
			RTPROF_CHECK_LE(a->data_nested, a->tr.dropped_nested);
			if (!s->flight)
				RTPROF_CHECK_EQ(a->tr.recycled, 0);
			tot->tr_full += a->tr.dropped_full;
			tot->tr_nested += a->tr.dropped_nested;
			tot->tr_recycled += a->tr.recycled;
		}
		tot->records += s->records;
		tot->samples += s->samples;
		tot->sames += s->sames;
		tot->overheads += s->overheads;
		tot->data_frames += s->data_frames;
	}
}

/* A worker's records in all sessions (its tid is its own for the run). */
static void
worker_decoded(struct checker *c, struct worker *w, uint64_t *full,
    uint64_t *nested, uint64_t *recycled)
{
	*full = *nested = *recycled = 0;
	w->decoded_all = 0;
	for (size_t i = 0; i < c->n; i++) {
		struct tacc *a = tacc_get(&c->s[i], w->tid, 0);

		if (a == NULL)
			continue;
		w->decoded_all += a->decoded;
		*full += a->tr.dropped_full;
		*nested += a->tr.dropped_nested;
		*recycled += a->tr.recycled;
	}
}

/*
 * Exact accounting of a long-lived worker (its tid is its own for the
 * whole stream): decoded + drops + outside + late + recycled == attempts.
 * Adds the dump's drops for it to *@dump_drops.
 */
static void
check_worker(struct checker *c, struct worker *w, uint64_t *dump_drops,
    int drops)
{
	uint64_t full, nested, recycled, sum;

	RTPROF_CHECK(w->stats_ok);
	worker_decoded(c, w, &full, &nested, &recycled);
	sum = w->decoded_all + w->st.dropped_full + w->st.dropped_nested +
	    w->st.outside + w->st.late + w->st.recycled;
	if (sum != worker_attempts(w))
		fprintf(stderr, "%s (tid %d): attempts %llu != decoded %llu + "
		    "dropped_full %llu + dropped_nested %llu + outside %llu + "
		    "late %llu + recycled %llu = %llu\n", w->name, (int)w->tid,
		    (unsigned long long)worker_attempts(w),
		    (unsigned long long)w->decoded_all,
		    (unsigned long long)w->st.dropped_full,
		    (unsigned long long)w->st.dropped_nested,
		    (unsigned long long)w->st.outside,
		    (unsigned long long)w->st.late,
		    (unsigned long long)w->st.recycled, (unsigned long long)sum);
	RTPROF_CHECK_EQ(sum, worker_attempts(w));
	RTPROF_CHECK_LE(w->decoded_typed, w->typed_committed);
	RTPROF_CHECK_LE(w->typed_committed - w->decoded_typed,
	    w->st.late + w->st.recycled);
	/* The dump's drop counts: == the statistics (@drops 2), never more
	 * (@drops 1), or only counted (@drops 0: see run_control()); recycled
	 * agrees exactly. */
	if (drops == 2) {
		RTPROF_CHECK_EQ(full, w->st.dropped_full);
		RTPROF_CHECK_EQ(nested, w->st.dropped_nested);
	} else if (drops == 1) {
		RTPROF_CHECK_LE(full, w->st.dropped_full);
		RTPROF_CHECK_LE(nested, w->st.dropped_nested);
	}
	RTPROF_CHECK_EQ(recycled, w->st.recycled);
	*dump_drops += full + nested;
}

static void
free_checker(struct checker *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->s[i].t);
	free(c->s);
	memset(c, 0, sizeof(*c));
}

static void
free_workers(void)
{
	for (unsigned i = 0; i < atomic_load(&nworkers); i++) {
		free(workers[i]->committed);
		free(workers[i]->post);
		free(workers[i]->seen);
		free(workers[i]);
		workers[i] = NULL;
	}
	atomic_store(&nworkers, 0);
}

/* ------------------------------------------------------------------ */
/* threads: many short-lived threads                                    */

static void *
short_main(void *arg)
{
	struct worker *w = arg;
	struct rng g;
	unsigned k;

	rng_seed(&g, base_seed ^ ((uint64_t)w->id << 20));
	k = 16 + rng_next(&g) % 49;
	worker_register(w);
	worker_grow(w, k);
	rtprof_label_push("storm thread");
	for (unsigned i = 0; i < k; i++) {
		rec_typed(w, rng_next(&g) % 4 == 0);
		if (i == k / 2) {
			/* Some run a while (the sampler signals them),
			 * some declare a sleep (not recording events). */
			unsigned what = rng_next(&g) % 16;

			if (what == 0) {
				spin_us(300 + rng_next(&g) % 700);
			} else if (what == 1) {
				w->n_sleep++;
				rtprof_thread_sleep();
				sleep_us(100 + rng_next(&g) % 400);
				w->n_wake++;
				rtprof_thread_wake();
			}
		}
	}
	rtprof_label_pop();
	/* The session runs until every thread is joined: nothing of ours
	 * can be late or recycled, and we record no more, so our
	 * statistics are final now. */
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&w->st), 0);
	w->stats_ok = 1;
	if (w->id % 2)
		RTPROF_CHECK_EQ(rtprof_thread_unregister(), 0);
	return NULL; /* else the thread-exit destructor unregisters */
}

static int
run_threads(int argc, char **argv)
{
	unsigned n = 10000, window = 200;
	struct rtprof_settings set;
	struct checker c;
	struct csess expect;    /* per tid: records expected in the dump */
	struct totals tot;
	pthread_t *th;
	pthread_attr_t attr;
	uint64_t t0, t_rec, t_check, attempts = 0, committed = 0, full = 0,
	    nested = 0, dump_drops = 0, in_dump = 0, no_data = 0, tids = 0;
	unsigned head = 0, alive = 0;
	int fd = new_sink();

	if (argc > 2)
		n = (unsigned)atoi(argv[2]);
	RTPROF_CHECK(n >= 1 && n <= MAX_WORKERS);
	th = calloc(window, sizeof(*th));
	RTPROF_CHECK(th != NULL);
	declare_all();
	memset(&set, 0, sizeof(set));
	set.struct_size = sizeof(set);
	set.fd = fd;
	set.mode = RTPROF_MODE_STREAM;
	set.chunk_size = 4096;
	/* 2 MiB (about 480 chunks) for up to 200 live threads that each
	 * want 2, and exited ones whose chunks are not back yet: some drop. */
	set.memory_limit = 2u << 20;
	set.prefill = 2;
	set.flush_interval_us = 2000;
	set.sample_interval_us = under_tsan() ? 2000 : 1000;
	RTPROF_CHECK_EQ(rtprof_session_start(&set), 0);

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 512u << 10);
	t0 = mono_ns();
	for (unsigned i = 0; i < n; i++) {
		struct worker *w = worker_new(i % 4 == 0 ? RTPROF_THREAD_RT : 0);

		if (alive == window) {
			RTPROF_CHECK_EQ(pthread_join(th[head], NULL), 0);
			alive--;
		}
		RTPROF_CHECK_EQ(pthread_create(&th[head], &attr, short_main, w), 0);
		head = (head + 1) % window;
		alive++;
	}
	for (; alive > 0; alive--) {
		RTPROF_CHECK_EQ(pthread_join(th[head], NULL), 0);
		head = (head + 1) % window;
	}
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	t_rec = mono_ns();
	pthread_attr_destroy(&attr);

	check_stream(fd, &c, &tot);
	RTPROF_CHECK_EQ(c.n, 1);
	RTPROF_CHECK_EQ(c.interleaved, 0);
	tids = c.s[0].tn;
	memset(&expect, 0, sizeof(expect));
	for (unsigned i = 0; i < n; i++) {
		struct worker *w = workers[i];
		struct tacc *e;
		uint64_t drops;

		RTPROF_CHECK(w->stats_ok);
		RTPROF_CHECK_EQ(w->st.outside, 0);
		RTPROF_CHECK_EQ(w->st.late, 0);
		RTPROF_CHECK_EQ(w->st.recycled, 0);
		drops = w->st.dropped_full + w->st.dropped_nested;
		/* Every committed typed marker is in the dump; every event
		 * not in the dump was dropped and counted (sleep and wake
		 * records are counted by tid below). */
		RTPROF_CHECK_EQ(w->decoded_typed, w->typed_committed);
		RTPROF_CHECK_LE(w->n_typed - w->typed_committed, drops);
		RTPROF_CHECK_GE(worker_attempts(w), drops);
		e = tacc_get(&expect, w->tid, 1);
		e->decoded += worker_attempts(w) - drops;
		e->tr.dropped_full += w->st.dropped_full;
		e->tr.dropped_nested += w->st.dropped_nested;
		/* Described: a THREAD frame with its name, tid and exit. */
		RTPROF_CHECK(w->thread_frame);
		RTPROF_CHECK(w->exit_frame);
		attempts += worker_attempts(w);
		committed += worker_attempts(w) - drops;
		full += w->st.dropped_full;
		nested += w->st.dropped_nested;
		if (w->decoded_typed > 0)
			in_dump++;
		else
			no_data++;
	}
	/* Exact, per tid (a tid may be reused by a later thread): records
	 * decoded == attempts - drops of the threads that had it, and no
	 * other thread but the sampler has records. */
	for (size_t k = 0; k < expect.tcap; k++) {
		const struct tacc *e = &expect.t[k];
		const struct tacc *a;

		if (e->tid == 0)
			continue;
		a = tacc_get(&c.s[0], e->tid, 0);
		if ((a ? a->decoded : 0) != e->decoded)
			fprintf(stderr, "tid %lld: %llu records decoded, %llu "
			    "attempted and not dropped\n", (long long)e->tid,
			    (unsigned long long)(a ? a->decoded : 0),
			    (unsigned long long)e->decoded);
		RTPROF_CHECK_EQ(a ? a->decoded : 0, e->decoded);
		/* The trailer counts every drop of the session, also those
		 * after a thread's last chunk and those of threads that
		 * never got one. */
		RTPROF_CHECK_EQ(a ? a->tr.dropped_full : 0, e->tr.dropped_full);
		RTPROF_CHECK_EQ(a ? a->tr.dropped_nested : 0, e->tr.dropped_nested);
		dump_drops += a ? a->tr.dropped_full + a->tr.dropped_nested : 0;
	}
	for (size_t k = 0; k < c.s[0].tcap; k++) {
		const struct tacc *a = &c.s[0].t[k];

		if (a->tid != 0 && a->decoded > 0 && a->tid != c.s[0].sampler_tid)
			RTPROF_CHECK(tacc_get(&expect, a->tid, 0) != NULL);
	}
	RTPROF_CHECK_EQ(dump_drops, full + nested);
	/* An exited thread's counts go out in its last THREAD frame once its
	 * chunks are back, and the session forgets it: the trailer lists at
	 * most the last window of threads (they exit just before the stop),
	 * not all n. */
	RTPROF_CHECK_LE(c.s[0].trailer_entries, window + 8);
	RTPROF_CHECK_GE(c.s[0].thread_totals + window, n);
	t_check = mono_ns();
	printf("test_storm threads: OK seed=%llu threads=%u (window %u, tids %llu) "
	    "attempts=%llu recorded=%llu dropped_full=%llu dropped_nested=%llu "
	    "| threads with records %llu, without %llu; drops in the trailer %llu, "
	    "not in a trailer %llu; counts in THREAD frames %llu, trailer "
	    "entries %llu | samples=%llu same=%llu overhead=%llu "
	    "records=%llu bytes=%llu | %.1f s recording, %.1f s checking\n",
	    (unsigned long long)base_seed, n, window, (unsigned long long)tids,
	    (unsigned long long)attempts, (unsigned long long)committed,
	    (unsigned long long)full, (unsigned long long)nested,
	    (unsigned long long)in_dump, (unsigned long long)no_data,
	    (unsigned long long)dump_drops,
	    (unsigned long long)(full + nested - dump_drops),
	    (unsigned long long)c.s[0].thread_totals,
	    (unsigned long long)c.s[0].trailer_entries,
	    (unsigned long long)tot.samples, (unsigned long long)tot.sames,
	    (unsigned long long)tot.overheads, (unsigned long long)tot.records,
	    (unsigned long long)tot.bytes, (double)(t_rec - t0) / 1e9,
	    (double)(t_check - t_rec) / 1e9);
	free(expect.t);
	free_checker(&c);
	free_workers();
	free(th);
	close(fd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* control: start/stop/pause/resume/dump from several threads           */

#define CTL_THREADS 3
#define CTL_WORKERS 4

static atomic_int time_up, workers_stop;
static atomic_uint_fast64_t ctl_progress;
static int ctl_sink = -1;

/* Successful calls and expected refusals, per control thread. */
struct ctl_counts {
	uint64_t start, ebusy, stop, stop_noent, pause, pause_noent, pause_already,
	    resume, resume_noent, resume_already, dump, dump_noent, status;
};
static struct ctl_counts ctl_counts[CTL_THREADS];

/* Workers' phases for the final quiesce. */
static pthread_barrier_t q_bar;

static void *
ctl_worker_main(void *arg)
{
	struct worker *w = arg;
	struct rng g;

	rng_seed(&g, base_seed ^ ((uint64_t)w->id << 24) ^ 0xC7);
	worker_register(w);
	while (!atomic_load_explicit(&workers_stop, memory_order_relaxed)) {
		unsigned burst = 1 + rng_next(&g) % 32, p;

		for (unsigned i = 0; i < burst; i++)
			rec_one(w, &g);
		/* Bounded volume (every post clock is kept); spins keep
		 * more threads runnable than there are CPUs. */
		p = rng_next(&g) % 4;
		if (p == 0)
			spin_us(rng_next(&g) % 500);
		else if (p == 1)
			sleep_us(rng_next(&g) % 500);
		else if (p == 2)
			sched_yield();
	}
	/* Quiesce (test_stress.c): once every worker stopped recording
	 * (B0), main starts and stops a session newer than any we recorded
	 * into (B1); one recording call then retires our chunk (its
	 * generation is older than the state word's) and counts as
	 * outside (B2); main starts and stops one more session, whose
	 * closing collect drains that chunk (B3): no record of ours can
	 * still become late. */
	pthread_barrier_wait(&q_bar);
	pthread_barrier_wait(&q_bar);
	{
		struct rtprof_thread_stats s0, s1;

		RTPROF_CHECK_EQ(rtprof_thread_stats_get(&s0), 0);
		RTPROF_CHECK_EQ(rec_typed(w, 0), 0);
		RTPROF_CHECK_EQ(rtprof_thread_stats_get(&s1), 0);
		RTPROF_CHECK_EQ(s1.outside, s0.outside + 1);
	}
	pthread_barrier_wait(&q_bar);
	pthread_barrier_wait(&q_bar);
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&w->st), 0);
	w->stats_ok = 1;
	return NULL;
}

static void
ctl_settings(struct rng *g, struct rtprof_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->struct_size = sizeof(*s);
	s->fd = ctl_sink;
	s->mode = rng_next(g) % 3 == 0 ? RTPROF_MODE_FLIGHT_RECORDER :
	    RTPROF_MODE_STREAM;
	s->chunk_size = rng_next(g) % 2 ? 4096 : 8192;
	s->memory_limit = s->chunk_size * (2 + rng_next(g) % 62);
	s->prefill = 1 + rng_next(g) % 4;
	s->flush_interval_us = 500 + rng_next(g) % 10000;
	s->sample_interval_us = rng_next(g) % 2 ? RTPROF_SAMPLING_OFF :
	    (under_tsan() ? 1000 : 200) + rng_next(g) % 2000;
}

static void *
ctl_main(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	struct ctl_counts *n = &ctl_counts[me];
	struct rng g;

	rng_seed(&g, base_seed ^ 0xC047 ^ ((uint64_t)me << 40));
	while (!atomic_load(&time_up)) {
		struct rtprof_settings set;
		struct rtprof_session_status st;
		int rc;

		switch (rng_next(&g) % 8) {
		case 0:
		case 1:
			ctl_settings(&g, &set);
			rc = rtprof_session_start(&set);
			RTPROF_CHECK(rc == 0 || rc == -EBUSY);
			rc == 0 ? n->start++ : n->ebusy++;
			break;
		case 2:
			rc = rtprof_session_stop();
			RTPROF_CHECK(rc == 0 || rc == -ENOENT);
			rc == 0 ? n->stop++ : n->stop_noent++;
			break;
		case 3:
			rc = rtprof_session_pause();
			RTPROF_CHECK(rc == 0 || rc == -ENOENT || rc == -EALREADY);
			rc == 0 ? n->pause++ : rc == -ENOENT ? n->pause_noent++ :
			    n->pause_already++;
			break;
		case 4:
			rc = rtprof_session_resume();
			RTPROF_CHECK(rc == 0 || rc == -ENOENT || rc == -EALREADY);
			rc == 0 ? n->resume++ : rc == -ENOENT ? n->resume_noent++ :
			    n->resume_already++;
			break;
		case 5:
			rc = rtprof_session_dump();
			RTPROF_CHECK(rc == 0 || rc == -ENOENT);
			rc == 0 ? n->dump++ : n->dump_noent++;
			break;
		case 6:
			rc = rtprof_session_status_get(&st);
			RTPROF_CHECK(rc == 0 || rc == -ENOENT);
			RTPROF_CHECK_EQ(st.sink_error, 0);
			RTPROF_CHECK_EQ(st.chunks_lost, 0);
			RTPROF_CHECK(!st.limit_reached);
			n->status++;
			break;
		default:
			/* Mostly a tight loop; now and then a breath so that
			 * sessions also run long enough to fill chunks. */
			if (rng_next(&g) % 4 == 0)
				sleep_us(rng_next(&g) % 3000);
			break;
		}
		atomic_fetch_add_explicit(&ctl_progress, 1, memory_order_relaxed);
	}
	return NULL;
}

/* Fails the test when the control calls make no progress (a deadlock). */
static atomic_int watchdog_stop;

static void *
watchdog_main(void *arg)
{
	uint64_t last = (uint64_t)-1;
	int still = 0;

	(void)arg;
	while (!atomic_load(&watchdog_stop)) {
		uint64_t now = atomic_load(&ctl_progress);

		sleep_us(100000);
		if (now == last) {
			if (++still == 600) {
				fprintf(stderr, "test_storm control: no control call "
				    "returned for 60 s: deadlock\n");
				abort();
			}
		} else {
			still = 0;
		}
		last = now;
	}
	return NULL;
}

static void
start_stop_once(void)
{
	struct rtprof_settings set;

	memset(&set, 0, sizeof(set));
	set.struct_size = sizeof(set);
	set.fd = ctl_sink;
	set.chunk_size = 4096;
	set.memory_limit = 64 * 4096;
	set.sample_interval_us = RTPROF_SAMPLING_OFF;
	RTPROF_CHECK_EQ(rtprof_session_start(&set), 0);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
}

static int
run_control(int argc, char **argv)
{
	pthread_t ctl[CTL_THREADS], wk[CTL_WORKERS], dog;
	unsigned seconds = 5;
	struct checker c;
	struct totals tot;
	struct ctl_counts sum;
	uint64_t t0, t_rec, t_check, attempts = 0, decoded = 0, full = 0,
	    nested = 0, outside = 0, late = 0, recycled = 0, dump_drops = 0;
	const char *env = getenv("STORM_STRICT");
	int rc, strict = env == NULL || atoi(env) != 0;

	if (argc > 2)
		seconds = (unsigned)atoi(argv[2]);
	RTPROF_CHECK(seconds >= 1);
	track_post = 1;
	declare_all();
	ctl_sink = new_sink();
	pthread_barrier_init(&q_bar, NULL, CTL_WORKERS + 1);
	for (int i = 0; i < CTL_WORKERS; i++) {
		struct worker *w = worker_new(i == 0 ? RTPROF_THREAD_RT : 0);

		RTPROF_CHECK_EQ(pthread_create(&wk[i], NULL, ctl_worker_main, w), 0);
	}
	RTPROF_CHECK_EQ(pthread_create(&dog, NULL, watchdog_main, NULL), 0);
	t0 = mono_ns();
	for (uintptr_t i = 0; i < CTL_THREADS; i++)
		RTPROF_CHECK_EQ(pthread_create(&ctl[i], NULL, ctl_main, (void *)i), 0);
	sleep(seconds);
	atomic_store(&time_up, 1);
	for (int i = 0; i < CTL_THREADS; i++)
		RTPROF_CHECK_EQ(pthread_join(ctl[i], NULL), 0);
	/* A session may still run, or be paused. */
	rc = rtprof_session_stop();
	RTPROF_CHECK(rc == 0 || rc == -ENOENT);
	atomic_store(&workers_stop, 1);
	/* Quiesce (ctl_worker_main). */
	pthread_barrier_wait(&q_bar);           /* B0 */
	start_stop_once();
	pthread_barrier_wait(&q_bar);           /* B1 */
	pthread_barrier_wait(&q_bar);           /* B2 */
	start_stop_once();
	pthread_barrier_wait(&q_bar);           /* B3 */
	for (int i = 0; i < CTL_WORKERS; i++)
		RTPROF_CHECK_EQ(pthread_join(wk[i], NULL), 0);
	atomic_store(&watchdog_stop, 1);
	RTPROF_CHECK_EQ(pthread_join(dog, NULL), 0);
	t_rec = mono_ns();

	check_stream(ctl_sink, &c, &tot);
	/*
	 * Known issue (RELIABILITY.md, "Storms"): rtprof_session_start() on
	 * one thread while rtprof_session_stop() on another still waits for
	 * its trailer starts the next session at once. Then (1) the writer
	 * queues the new session's HEADER and DATA before the old session's
	 * last frames (docs/wire-format.md says frames of two sessions never
	 * interleave), and (2) the start re-baselines every thread's drop
	 * counters before the writer settled the old session's drops, whose
	 * trailer then reports the threads' lifetime drops (thousands of
	 * times too many). A start now waits for the sessions still being
	 * written (core/session.c); both are counted, printed and, unless
	 * STORM_STRICT=0, fail the test. Everything else is checked per
	 * session, by session id.
	 */
	if (strict) {
		RTPROF_CHECK_EQ(c.interleaved, 0);
		RTPROF_CHECK_EQ(c.headers_reordered, 0);
	}
	memset(&sum, 0, sizeof(sum));
	for (int i = 0; i < CTL_THREADS; i++) {
		uint64_t *a = (uint64_t *)&sum, *b = (uint64_t *)&ctl_counts[i];

		for (size_t k = 0; k < sizeof(sum) / sizeof(uint64_t); k++)
			a[k] += b[k];
	}
	/* One session per successful start, and the two of the quiesce. */
	RTPROF_CHECK_EQ(c.n, sum.start + 2);
	for (int i = 0; i < CTL_WORKERS; i++) {
		struct worker *w = workers[i];

		check_worker(&c, w, &dump_drops, 0);
		RTPROF_CHECK(w->thread_frame);
		attempts += worker_attempts(w);
		decoded += w->decoded_all;
		full += w->st.dropped_full;
		nested += w->st.dropped_nested;
		outside += w->st.outside;
		late += w->st.late;
		recycled += w->st.recycled;
	}
	t_check = mono_ns();
	printf("test_storm control: OK seed=%llu %us, %d control threads: "
	    "start=%llu (ebusy %llu) stop=%llu (enoent %llu) pause=%llu "
	    "(enoent %llu, ealready %llu) resume=%llu (enoent %llu, ealready "
	    "%llu) dump=%llu (enoent %llu) status=%llu | sessions=%llu "
	    "interleaved frames=%llu headers out of order=%llu%s | %d workers: attempts=%llu decoded=%llu "
	    "dropped_full=%llu dropped_nested=%llu outside=%llu late=%llu "
	    "recycled=%llu; drops in the trailers %llu (%s %llu) | "
	    "samples=%llu same=%llu overhead=%llu records=%llu bytes=%llu | "
	    "%.1f s, %.1f s checking\n",
	    (unsigned long long)base_seed, seconds, CTL_THREADS,
	    (unsigned long long)sum.start, (unsigned long long)sum.ebusy,
	    (unsigned long long)sum.stop, (unsigned long long)sum.stop_noent,
	    (unsigned long long)sum.pause, (unsigned long long)sum.pause_noent,
	    (unsigned long long)sum.pause_already,
	    (unsigned long long)sum.resume, (unsigned long long)sum.resume_noent,
	    (unsigned long long)sum.resume_already,
	    (unsigned long long)sum.dump, (unsigned long long)sum.dump_noent,
	    (unsigned long long)sum.status, (unsigned long long)c.n,
	    (unsigned long long)c.interleaved,
	    (unsigned long long)c.headers_reordered,
	    c.interleaved + c.headers_reordered ? " (KNOWN ISSUE)" : "",
	    CTL_WORKERS,
	    (unsigned long long)attempts, (unsigned long long)decoded,
	    (unsigned long long)full, (unsigned long long)nested,
	    (unsigned long long)outside, (unsigned long long)late,
	    (unsigned long long)recycled, (unsigned long long)dump_drops,
	    dump_drops <= full + nested ? "not in a trailer" :
	    "KNOWN ISSUE: more than the threads counted, by",
	    (unsigned long long)(dump_drops <= full + nested ?
	    full + nested - dump_drops : dump_drops - (full + nested)),
	    (unsigned long long)tot.samples, (unsigned long long)tot.sames,
	    (unsigned long long)tot.overheads, (unsigned long long)tot.records,
	    (unsigned long long)tot.bytes, (double)(t_rec - t0) / 1e9,
	    (double)(t_check - t_rec) / 1e9);
	free_checker(&c);
	free_workers();
	pthread_barrier_destroy(&q_bar);
	close(ctl_sink);
	return 0;
}

/* ------------------------------------------------------------------ */
/* onechunk: memory_limit == chunk_size                                 */

#define OC_WORKERS 4

static pthread_barrier_t oc_bar;
static uint64_t oc_quota;

static void *
oc_worker_main(void *arg)
{
	struct worker *w = arg;
	struct rng g;

	rng_seed(&g, base_seed ^ ((uint64_t)w->id << 28) ^ 0x0C);
	worker_register(w);
	pthread_barrier_wait(&oc_bar);      /* session started */
	/* Bursts of up to 64 events (two or three 4 KiB chunks' worth)
	 * with short naps: the recording spans many writer rounds, so the
	 * single chunk goes round between the threads (and the sampler). */
	while (worker_attempts(w) < oc_quota) {
		unsigned burst = 1 + rng_next(&g) % 64;

		for (unsigned i = 0; i < burst && worker_attempts(w) < oc_quota; i++)
			rec_one(w, &g);
		if (rng_next(&g) % 2)
			sleep_us(rng_next(&g) % 400);
		else
			spin_us(rng_next(&g) % 200);
	}
	pthread_barrier_wait(&oc_bar);      /* everyone is done */
	pthread_barrier_wait(&oc_bar);      /* session stopped */
	/* The stop's closing snapshot took every committed record of our
	 * current chunk; retiring it later finds nothing new: the
	 * statistics are final. */
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&w->st), 0);
	w->stats_ok = 1;
	return NULL;
}

static void
run_onechunk_one(enum rtprof_mode mode, uint32_t chunk)
{
	pthread_t wk[OC_WORKERS];
	struct rtprof_settings set;
	struct rtprof_session_status st;
	struct checker c;
	struct totals tot;
	uint64_t attempts = 0, decoded = 0, full = 0, nested = 0, recycled = 0,
	    dump_drops = 0, t0 = mono_ns();
	int fd = new_sink();

	oc_quota = 20000;
	pthread_barrier_init(&oc_bar, NULL, OC_WORKERS + 1);
	for (int i = 0; i < OC_WORKERS; i++) {
		struct worker *w = worker_new(i == 0 ? RTPROF_THREAD_RT : 0);

		RTPROF_CHECK_EQ(pthread_create(&wk[i], NULL, oc_worker_main, w), 0);
	}
	memset(&set, 0, sizeof(set));
	set.struct_size = sizeof(set);
	set.fd = fd;
	set.mode = mode;
	set.chunk_size = chunk;
	set.memory_limit = chunk;   /* exactly one chunk */
	set.sample_interval_us = under_tsan() ? 1000 : 200;
	set.flush_interval_us = 1000;
	RTPROF_CHECK_EQ(rtprof_session_start(&set), 0);
	pthread_barrier_wait(&oc_bar);
	pthread_barrier_wait(&oc_bar);
	/* The pool still has its one chunk: written chunks come back to it
	 * (the dump request writes everything and returns what it wrote);
	 * none was allocated past the limit, none freed for good. */
	RTPROF_CHECK_EQ(rtprof_session_dump(), 0);
	RTPROF_CHECK_EQ(rtprof_session_status_get(&st), 0);
	RTPROF_CHECK_EQ(st.pool_chunks, 1);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	pthread_barrier_wait(&oc_bar);
	for (int i = 0; i < OC_WORKERS; i++)
		RTPROF_CHECK_EQ(pthread_join(wk[i], NULL), 0);

	check_stream(fd, &c, &tot);
	RTPROF_CHECK_EQ(c.n, 1);
	for (int i = 0; i < OC_WORKERS; i++) {
		struct worker *w = workers[i];

		check_worker(&c, w, &dump_drops, 2);
		RTPROF_CHECK(w->thread_frame);
		RTPROF_CHECK_EQ(w->st.outside, 0);
		RTPROF_CHECK_EQ(w->st.late, 0);
		/* Everything committed is in the dump (stream), or in the
		 * dump or recycled (flight recorder; check_worker()). */
		if (mode == RTPROF_MODE_STREAM)
			RTPROF_CHECK_EQ(w->decoded_typed, w->typed_committed);
		attempts += worker_attempts(w);
		decoded += w->decoded_all;
		full += w->st.dropped_full;
		nested += w->st.dropped_nested;
		recycled += w->st.recycled;
	}
	/* One chunk for four threads (and the sampler) writing far more
	 * than a chunk, faster than the writer hands it back: drops. */
	RTPROF_CHECK_GT(full, 0);
	if (mode == RTPROF_MODE_STREAM)
		RTPROF_CHECK_EQ(recycled, 0);
	printf("test_storm onechunk: OK %s chunk=%u memory_limit=%u: %d workers: "
	    "attempts=%llu decoded=%llu dropped_full=%llu dropped_nested=%llu "
	    "recycled=%llu; drops in the trailers %llu, not in a trailer %llu | "
	    "samples=%llu same=%llu overhead=%llu records=%llu data frames=%llu "
	    "bytes=%llu | %.1f s\n",
	    mode == RTPROF_MODE_STREAM ? "stream" : "flight", chunk, chunk,
	    OC_WORKERS, (unsigned long long)attempts, (unsigned long long)decoded,
	    (unsigned long long)full, (unsigned long long)nested,
	    (unsigned long long)recycled, (unsigned long long)dump_drops,
	    (unsigned long long)(full + nested - dump_drops),
	    (unsigned long long)tot.samples, (unsigned long long)tot.sames,
	    (unsigned long long)tot.overheads, (unsigned long long)tot.records,
	    (unsigned long long)tot.data_frames, (unsigned long long)tot.bytes,
	    (double)(mono_ns() - t0) / 1e9);
	free_checker(&c);
	free_workers();
	pthread_barrier_destroy(&oc_bar);
	close(fd);
}

static int
run_onechunk(void)
{
	declare_all();
	run_onechunk_one(RTPROF_MODE_STREAM, 4096);
	run_onechunk_one(RTPROF_MODE_FLIGHT_RECORDER, 4096);
	run_onechunk_one(RTPROF_MODE_STREAM, 65536);
	run_onechunk_one(RTPROF_MODE_FLIGHT_RECORDER, 65536);
	return 0;
}

int
main(int argc, char **argv)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	base_seed = getenv("STORM_SEED") ? strtoull(getenv("STORM_SEED"), NULL, 0) :
	    (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 20) ^ (uint64_t)getpid();
	if (argc > 1 && strcmp(argv[1], "threads") == 0)
		return run_threads(argc, argv);
	if (argc > 1 && strcmp(argv[1], "control") == 0)
		return run_control(argc, argv);
	if (argc > 1 && strcmp(argv[1], "onechunk") == 0)
		return run_onechunk();
	fprintf(stderr, "usage: %s threads [N] | control [SECONDS] | onechunk\n",
	    argv[0]);
	return 2;
}
