/*
 * test_link.c - a board's slow serial link, with a pseudo-terminal standing
 * in for the UART:
 *   1. rtprof_tty_open() configures the line raw, 8N1, at the given rate,
 *      with no flow control; it refuses unknown rates and non-ttys;
 *   2. a stream paced to the link (link_bytes_per_sec) writes about what
 *      the link carries, not what the threads produce; the oldest unsent
 *      chunks are dropped and counted ("link_behind" events, `recycled`),
 *      the newest data reaches the other end, and every event the thread
 *      attempted is accounted for exactly. The busy real-time thread
 *      numbers its events ("Seq" markers, n = 0, 1, 2 ...): what arrives
 *      is in order, ends with its last event and the chunks before it
 *      without a gap (the newest), and every missing range is
 *      whole dropped chunks (exactly `recycled` events: each decoded
 *      chunk but the last holds the same number of records) plus the
 *      events the next chunk's header says found no chunk. Nothing on
 *      that thread waits for the link: each recording call is timed
 *      (rtprof_now() around it) and the thread's context switches counted
 *      around each batch of calls (getrusage RUSAGE_THREAD): no batch
 *      makes a voluntary switch (not asserted under TSan, whose runtime
 *      may wait on its own locks, nor under qemu-user, RTPROF_TEST_EMULATED,
 *      whose own threads switch; and one in a page fault while the kernel
 *      migrated pages is excused, testutil.h: pages_migrated(), its time
 *      not bounded either), and the longest call of a batch the
 *      thread was not preempted in (not switched out at all, under TSan
 *      or qemu-user) stays under MAX_CALL_NS (1 ms; 50 ms under TSan or
 *      qemu-user), far below the link time of one chunk (250 ms) that a
 *      call waiting for the link would take;
 *   3. a flight recorder dumps on its signal (the handler it replaced is
 *      not called meanwhile and is back after stop).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dump_reader.h"
#include "dumpmodel.h"
#include "rtprof.h"
#include "testutil.h"

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
/* The chunk size a link rate gives when none is set (core/state.c):
 * about 1/4 s of link time. */
#define LINK_CHUNK (LINK_RATE / 4)
#define RUN_SECONDS 3.0
#define BATCH 200               /* recording calls between two sleeps */

/* The longest a recording call may take when its thread was not switched
 * out: a call waiting for the link would take about the link time of a
 * chunk (LINK_CHUNK / LINK_RATE, 250 ms). Under TSan its runtime does
 * its own bookkeeping inside an instrumented call now and then (up to
 * 9.7 ms of CPU seen in test_sink_faults); under qemu-user the first run
 * of a code path is translated first. */
#define MAX_CALL_NS 1000000.0
#define MAX_CALL_NS_SLOW 50000000.0

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

static const rtprof_marker_type *seq_type;

struct producer {
	atomic_int stop;
	uint64_t attempted;     /* events attempted, also the next "n" */
	uint64_t first_ticks, last_ticks; /* its first and last events */
	/* Every recording call timed (ticks), and per batch of calls the
	 * thread's context switches: voluntary (it slept or waited),
	 * involuntary (preempted: a loaded machine). */
	uint64_t calls, max_ticks;
	uint64_t max_unswitched_ticks;  /* in batches with no switch */
	uint64_t max_unpreempted_ticks; /* in batches with no involuntary one */
	uint64_t max_faulted_ticks; /* in those that slept in a page fault */
	uint64_t batches, blocked_batches, preempted_batches;
	uint64_t blocked_faulted; /* blocked batches with a page fault */
	uint64_t migrated;      /* pages the kernel moved meanwhile */
	uint64_t final_tries;   /* attempts at a last event that arrives */
	struct rtprof_thread_stats st;
};

static void
thread_switches(long *vcsw, long *ivcsw, long *faults)
{
	struct rusage ru;

	RTPROF_CHECK_EQ(getrusage(RUSAGE_THREAD, &ru), 0);
	*vcsw = ru.ru_nvcsw;
	*ivcsw = ru.ru_nivcsw;
	*faults = ru.ru_minflt + ru.ru_majflt;
}

/* One recording call, timed: a "Seq" marker whose field n is the event's
 * number (its open, put and close count as one call). Return its ticks. */
static uint64_t
seq_call(struct producer *p)
{
	rtprof_rec r;
	uint64_t t0 = rtprof_now(), d;

	if (rtprof_marker_open(&r, seq_type, RTPROF_PHASE_INSTANT, t0, 0)) {
		rtprof_put_u64(&r, p->attempted);
		rtprof_marker_close(&r);
	}
	d = rtprof_now() - t0;
	p->attempted++;
	p->calls++;
	if (d > p->max_ticks)
		p->max_ticks = d;
	return d;
}

/* A busy RT thread: far more data than the link carries. */
static void *
producer_main(void *arg)
{
	struct producer *p = arg;
	struct timespec ms = { 0, 1000000 };

	RTPROF_CHECK_EQ(rtprof_thread_register("busy", RTPROF_THREAD_RT), 0);
	p->first_ticks = rtprof_now();
	p->migrated = pages_migrated();
	while (!atomic_load(&p->stop)) {
		uint64_t worst = 0;
		long vcsw0, ivcsw0, vcsw1, ivcsw1, f0, f1;

		thread_switches(&vcsw0, &ivcsw0, &f0);
		for (int i = 0; i < BATCH; i++) {
			uint64_t d = seq_call(p);

			if (d > worst)
				worst = d;
		}
		p->last_ticks = rtprof_now();
		thread_switches(&vcsw1, &ivcsw1, &f1);
		p->batches++;
		if (vcsw1 != vcsw0) {
			p->blocked_batches++;
			p->blocked_faulted += f1 != f0;
		} else if (ivcsw1 != ivcsw0)
			p->preempted_batches++;
		else if (worst > p->max_unswitched_ticks)
			p->max_unswitched_ticks = worst;
		/* A call that waited (a voluntary switch) is timed too; apart
		 * when it slept in a page fault (see the checks). */
		if (ivcsw1 == ivcsw0 && vcsw1 != vcsw0 && f1 != f0) {
			if (worst > p->max_faulted_ticks)
				p->max_faulted_ticks = worst;
		} else if (ivcsw1 == ivcsw0 && worst > p->max_unpreempted_ticks) {
			p->max_unpreempted_ticks = worst;
		}
		nanosleep(&ms, NULL);
	}
	p->migrated = pages_migrated() - p->migrated;
	/* The thread's newest event: once the writer has refilled its ring
	 * (it drops what finds no free chunk), a last one is recorded. */
	for (;;) {
		struct rtprof_thread_stats s0, s1;

		RTPROF_CHECK_LT(p->final_tries, 600);
		p->final_tries++;
		usleep(20000);
		RTPROF_CHECK_EQ(rtprof_thread_stats_get(&s0), 0);
		seq_call(p);
		p->last_ticks = rtprof_now();
		RTPROF_CHECK_EQ(rtprof_thread_stats_get(&s1), 0);
		if (s1.dropped_full == s0.dropped_full)
			break;
	}
	RTPROF_CHECK_EQ(rtprof_thread_stats_get(&p->st), 0);
	RTPROF_CHECK_EQ(rtprof_thread_unregister(), 0);
	return NULL;
}

/* The DATA frame headers of one thread, in stream order. */
struct data_hdrs {
	int64_t tid;
	struct rtprof_dump_data *d;
	size_t n, cap;
};

static int
hdr_on_data(void *ctx, const struct rtprof_dump_data *d)
{
	struct data_hdrs *h = ctx;

	if (d->tid != h->tid)
		return 0;
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 256;
		h->d = realloc(h->d, h->cap * sizeof(*h->d));
		RTPROF_CHECK(h->d != NULL);
	}
	h->d[h->n++] = *d;
	return 0;
}

/* The header of @th's chunk @seq (its first part), or NULL. */
static const struct rtprof_dump_data *
chunk_hdr(const struct data_hdrs *h, uint64_t seq)
{
	for (size_t i = 0; i < h->n; i++)
		if (h->d[i].chunk_seq == seq && h->d[i].record_index == 0)
			return &h->d[i];
	return NULL;
}

/*
 * The producer's numbered events as they arrived (@th, DATA headers @h):
 * in order, the newest present, and every missing range whole chunks the
 * link dropped plus events that found no chunk. Checks:
 *  - every record is a "Seq" marker; n increases by one within a chunk,
 *    chunks arrive in chunk_seq order, each whole (parts contiguous);
 *  - every chunk that arrived holds the same number C of records but the
 *    thread's last (not full, at most C): a dropped chunk held C too;
 *  - the last n is the last event attempted, and at least the last
 *    LINK_RATE / LINK_CHUNK chunks (1 s of link time; the queue holds 2 s)
 *    arrived without a chunk missing between them: what waited for the
 *    link when the thread stopped was its newest data, the oldest unsent
 *    chunks having been dropped (dropping the newest leaves only the last
 *    one after a gap);
 *  - at each chunk boundary (and before the first chunk that arrived),
 *    with k chunks missing by chunk_seq, the events missing between the
 *    two are k * C plus the events the next chunk's header counts as
 *    dropped (no chunk), plus, only when k > 0, the dropped events that
 *    the missing chunks' headers carried: never fewer;
 *  - k summed over all boundaries times C is the thread's `recycled`
 *    (trailer): the events dropped for the link are exactly the missing
 *    chunks; what else is missing is its dropped_full, exactly.
 * Return the number of chunks dropped.
 */
static uint64_t
check_seq_stream(const struct dm_thread *th, const struct data_hdrs *h,
    const struct rtprof_dump_trailer_thread *tt, const struct producer *p)
{
	uint64_t c = 0, missing_chunks = 0, hdr_drops = 0, lost_drops = 0;
	uint64_t prev_cs = 0, prev_n = 0, nrec_chunk = 0, nchunks = 0;
	uint64_t run = 0;       /* chunks since the last one missing */
	int have_prev = 0;

	RTPROF_CHECK_GT(th->nrecs, 0);
	/* Chunks arrive in order, each whole. */
	for (size_t i = 0; i < h->n; i++) {
		if (h->d[i].record_index == 0) {
			RTPROF_CHECK(i == 0 ||
			    h->d[i].chunk_seq > h->d[i - 1].chunk_seq);
			RTPROF_CHECK_EQ(h->d[i].byte_offset, 0);
			hdr_drops += h->d[i].dropped_full;
		} else {
			RTPROF_CHECK(i > 0);
			RTPROF_CHECK_EQ(h->d[i].chunk_seq, h->d[i - 1].chunk_seq);
			RTPROF_CHECK_EQ(h->d[i].record_index,
			    h->d[i - 1].record_index + h->d[i - 1].nrec);
			RTPROF_CHECK_EQ(h->d[i].dropped_full, 0);
		}
	}
	for (size_t i = 0; i <= th->nrecs; i++) {
		const struct dm_rec *r = i < th->nrecs ? &th->recs[i] : NULL;
		uint64_t n, k, gap;
		const struct rtprof_dump_data *d;

		if (r != NULL) {
			RTPROF_CHECK_EQ(r->v.kind, RTPROF_REC_TYPED);
			RTPROF_CHECK_EQ(r->v.id, seq_type->id);
			RTPROF_CHECK_EQ(r->v.nvals, 1);
			RTPROF_CHECK_EQ(r->v.vals[0].kind, RTPROF_VAL_U64);
		}
		if (r != NULL && have_prev && r->chunk_seq == prev_cs) {
			/* Within a chunk: no event is ever missing. */
			RTPROF_CHECK_EQ(r->v.vals[0].v.u, prev_n + 1);
			prev_n = r->v.vals[0].v.u;
			nrec_chunk++;
			continue;
		}
		/* A chunk ends (the previous one) or begins. */
		if (have_prev) {
			nchunks++;
			if (c == 0)
				c = nrec_chunk;
			if (r != NULL)  /* not the thread's last chunk: full */
				RTPROF_CHECK_EQ(nrec_chunk, c);
			else
				RTPROF_CHECK_LE(nrec_chunk, c);
		}
		if (r == NULL)
			break;
		n = r->v.vals[0].v.u;
		RTPROF_CHECK(!have_prev || r->chunk_seq > prev_cs);
		RTPROF_CHECK(!have_prev || n > prev_n);
		k = have_prev ? r->chunk_seq - prev_cs - 1 : r->chunk_seq;
		gap = have_prev ? n - prev_n - 1 : n;
		d = chunk_hdr(h, r->chunk_seq);
		RTPROF_CHECK(d != NULL);
		/* The missing chunks' records (C each, counted below once C is
		 * known) and the drops before this chunk. */
		RTPROF_CHECK_GE(gap, d->dropped_full);
		if (k == 0)
			RTPROF_CHECK_EQ(gap, d->dropped_full);
		else
			RTPROF_CHECK_GT(gap, d->dropped_full);
		missing_chunks += k;
		run = k > 0 ? 1 : run + 1;
		lost_drops += gap - d->dropped_full;     /* k * C + lost */
		prev_cs = r->chunk_seq;
		prev_n = n;
		nrec_chunk = 1;
		have_prev = 1;
	}
	RTPROF_CHECK_GT(c, 0);
	/* k * C of every boundary's missing events were records. */
	RTPROF_CHECK_GE(lost_drops, missing_chunks * c);
	lost_drops -= missing_chunks * c;
	fprintf(stderr, "paced: %" PRIu64 " chunks of %" PRIu64 " records "
	    "arrived, %" PRIu64 " dropped unsent (%" PRIu64 " records), last "
	    "n %" PRIu64 " of %" PRIu64 ", the last %" PRIu64 " chunks without "
	    "a gap; dropped_full %" PRIu64 " (%" PRIu64 " in headers that "
	    "arrived, %" PRIu64 " in those dropped)\n",
	    nchunks, c, missing_chunks, missing_chunks * c, prev_n,
	    p->attempted, run, tt->dropped_full, hdr_drops, lost_drops);
	/* The newest data arrived: the thread's last event, and before it
	 * the chunks that waited for the link when the thread stopped (up
	 * to two seconds of link time, 2 * LINK_RATE / LINK_CHUNK chunks;
	 * the oldest were dropped, never these). */
	RTPROF_CHECK_EQ(prev_n + 1, p->attempted);
	RTPROF_CHECK_GE(run, LINK_RATE / LINK_CHUNK);
	/* The gaps are exactly whole dropped chunks (recycled) plus the
	 * events that found no chunk (dropped_full). */
	RTPROF_CHECK_GT(missing_chunks, 0);
	RTPROF_CHECK_EQ(missing_chunks * c, tt->recycled);
	RTPROF_CHECK_EQ(hdr_drops + lost_drops, tt->dropped_full);
	return missing_chunks;
}

static void
test_paced_stream(void)
{
	static const struct rtprof_marker_schema seq = {
		.name = "Seq",
		.category = RTPROF_CAT_OTHER,
		.nfields = 1,
		.fields = { { "n", NULL, "integer", RTPROF_FIELD_U64 } },
	};
	struct rtprof_settings set;
	struct rtprof_session_status ss;
	struct sink k = { 0 };
	struct producer p = { 0 };
	struct data_hdrs h = { 0 };
	struct rtprof_dump_cb cb = { 0 };
	pthread_t rd, pr;
	struct dm m;
	char name[256];
	int sl, fd, tmp, slow;
	double t0, elapsed, tps, max_call_ns, max_unswitched_ns, max_ns;
	double chunk_ns, bound_ns;
	size_t before_stop, max_bytes;
	uint64_t recycled, last = 0, first_seen = 0;
	const struct rtprof_dump_trailer_thread *tt;
	const struct dm_thread *th;
	int behind = 0;

	seq_type = rtprof_marker_type_declare(&seq);
	RTPROF_CHECK(seq_type != NULL);
	tps = rtprof_ticks_per_second();
	RTPROF_CHECK_GT(tps, 0);
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
	RTPROF_CHECK_EQ(tt->dropped_nested, 0);
	/* What waited for the link at the stop was the newest data: the
	 * last event that reached the desktop is from the run's end. */
	RTPROF_CHECK_GT(first_seen, 0);
	RTPROF_CHECK_GE(last, p.last_ticks - (p.last_ticks - p.first_ticks) / 10);

	/* Which events arrived: the newest, in order, the gaps whole dropped
	 * chunks (see check_seq_stream()). */
	h.tid = th->tid;
	cb.ctx = &h;
	cb.on_data = hdr_on_data;
	RTPROF_CHECK_EQ(rtprof_dump_read_mem(k.buf, k.n, &cb, NULL), 0);
	check_seq_stream(th, &h, tt, &p);

	/* Nothing on the RT thread waited for the link. */
	max_unswitched_ns = (double)p.max_unswitched_ticks / tps * 1e9;
	max_ns = (double)p.max_ticks / tps * 1e9;
	chunk_ns = (double)LINK_CHUNK / LINK_RATE * 1e9;
#ifdef RTPROF_TEST_TSAN
	slow = 1;
#else
	slow = getenv("RTPROF_TEST_EMULATED") != NULL;
#endif
	/* Bounded: the calls of every batch the thread was not preempted in
	 * (one that waited included); under TSan or qemu-user, whose own
	 * locks and threads switch, those of batches with no switch. */
	if (p.migrated == 0 && p.max_faulted_ticks > p.max_unpreempted_ticks)
		p.max_unpreempted_ticks = p.max_faulted_ticks;
	max_call_ns = slow ? max_unswitched_ns :
	    (double)p.max_unpreempted_ticks / tps * 1e9;
	bound_ns = slow ? MAX_CALL_NS_SLOW : MAX_CALL_NS;
	fprintf(stderr, "paced: %" PRIu64 " recording calls on the RT thread "
	    "in %" PRIu64 " batches: longest %.3f ms, %.3f ms in a batch not "
	    "switched out, %.3f ms bounded (bound %.0f ms; one chunk is %.0f "
	    "ms of link time); %" PRIu64 " batches preempted, %" PRIu64
	    " made a voluntary switch; %" PRIu64 " tries for the last event\n",
	    p.calls, p.batches, max_ns / 1e6, max_unswitched_ns / 1e6,
	    max_call_ns / 1e6, bound_ns / 1e6,
	    chunk_ns / 1e6, p.preempted_batches, p.blocked_batches,
	    p.final_tries);
	/* Most batches ran unswitched: the bound below means something. */
	RTPROF_CHECK_GT(p.batches, 100);
	RTPROF_CHECK_LT(p.preempted_batches + p.blocked_batches,
	    p.batches / 2);
	RTPROF_CHECK_LT(max_call_ns, bound_ns);
	RTPROF_CHECK_LT(max_call_ns * 5, chunk_ns);
	/* No recording call slept or waited; one that slept in a page
	 * fault while the kernel migrated pages (testutil.h,
	 * pages_migrated()) waited for the kernel's copy, not the link. */
	if (p.blocked_faulted > 0 && p.migrated > 0)
		fprintf(stderr, "paced: %" PRIu64 " batches slept in a page fault "
		    "while the kernel migrated %" PRIu64 " pages (compaction)\n",
		    p.blocked_faulted, p.migrated);
	if (!slow)
		RTPROF_CHECK_EQ(p.blocked_batches - (p.migrated > 0 ?
		    p.blocked_faulted : 0), 0);
	free(h.d);
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
