/*
 * soak_check.c - the soak test's reader (scripts/soak.sh; not a ctest
 * entry): decodes a dump from standard input as it streams, in memory that
 * does not grow with the dump, and prints what scripts/soak.sh checks
 * against the recorder's own accounting (tests/soak_rec.c):
 *   tid TID RECORDS DATA_FRAMES CHUNKS DATA_FULL DATA_NESTED SETTLED
 *       TR_RECORDED TR_FULL TR_NESTED TR_RECYCLED FLAGS
 *     per thread id (a tid reused by a later thread sums both); CHUNKS
 *     counts chunks (DATA parts at record 0), DATA_FRAMES every part;
 *     SETTLED: 1 when the dump gave the tid's counts (TR_*: from THREAD
 *     frames' totals and the trailer's entries, added up);
 *   mem SECONDS SELF_BYTES RSS_BYTES
 *     once a second of recording time: the profiler's own memory (VALUES
 *     frames and the sampler's counter 65535) and the process's resident
 *     memory as the sampler read it (counter 65534);
 *   session SESSIONS HAS_TRAILER CHUNKS_LOST LIMIT_REACHED EVENTS GAPS
 *     GAPS: chunk parts out of order or missing (chunk_seq / record_index);
 *   counts THREAD_TOTALS TRAILER_ENTRIES
 *     how many THREAD frames carried totals, how many entries the trailer
 *     had;
 *   stream BYTES FRAMES RECORDS DAMAGE SAMPLES OVERHEAD SECONDS
 * Exit 0 when the dump was read to its end, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dump_reader.h"

struct tacc {
	int64_t tid;            /* 0: free */
	uint64_t records, data_frames, chunks, data_full, data_nested;
	int settled;
	struct rtprof_dump_trailer_thread tr;
	uint64_t flags;
	int64_t last_chunk;
	uint64_t last_end;
};

static struct {
	struct tacc *t;
	size_t cap, n;
	uint64_t sessions, has_trailer, chunks_lost, limit, events, gaps;
	uint64_t damage, samples, overhead;
	uint64_t thread_totals, trailer_entries; /* where the counts came */
	double tps;
	uint64_t start_ticks, last_ticks;
	int64_t self_mem, rss;
	uint64_t next_second;
} D;

static struct tacc *
tacc(int64_t tid)
{
	size_t i;

	if (D.n * 2 >= D.cap) {
		size_t ncap = D.cap ? D.cap * 2 : 1024;
		struct tacc *nt = calloc(ncap, sizeof(*nt));

		if (nt == NULL) {
			perror("soak_check");
			exit(1);
		}
		for (size_t k = 0; k < D.cap; k++) {
			if (D.t[k].tid == 0)
				continue;
			for (i = ((uint64_t)D.t[k].tid * 0x9E3779B97F4A7C15ull) >> 40 &
			    (ncap - 1); nt[i].tid != 0; i = (i + 1) & (ncap - 1))
				;
			nt[i] = D.t[k];
		}
		free(D.t);
		D.t = nt;
		D.cap = ncap;
	}
	for (i = ((uint64_t)tid * 0x9E3779B97F4A7C15ull) >> 40 & (D.cap - 1);
	    D.t[i].tid != 0; i = (i + 1) & (D.cap - 1))
		if (D.t[i].tid == tid)
			return &D.t[i];
	D.t[i].tid = tid;
	D.t[i].last_chunk = -1;
	D.n++;
	return &D.t[i];
}

/* Once a second of recording time: the memory figures seen last. */
static void
tick(uint64_t ticks)
{
	uint64_t s;

	if (D.tps <= 0 || ticks < D.start_ticks)
		return;
	s = (uint64_t)((double)(ticks - D.start_ticks) / D.tps);
	if (ticks > D.last_ticks)
		D.last_ticks = ticks;
	if (s >= D.next_second && D.self_mem > 0 && D.rss > 0) {
		printf("mem %llu %lld %lld\n", (unsigned long long)s,
		    (long long)D.self_mem, (long long)D.rss);
		D.next_second = s + 1;
	}
}

static int
on_header(void *c, const struct rtprof_dump_header *h)
{
	(void)c;
	D.sessions++;
	D.tps = h->clock.ticks_per_second;
	D.start_ticks = h->clock.start_ticks;
	return 0;
}

/* A thread's counts, from its last THREAD frame or the trailer: added up
 * per tid (docs/wire-format.md). */
static void
settled_add(const struct rtprof_dump_trailer_thread *c)
{
	struct tacc *a = tacc(c->tid);

	a->settled = 1;
	rtprof_dump_counts_add(&a->tr, c);
}

static int
on_thread(void *c, const struct rtprof_dump_thread *t)
{
	(void)c;
	tacc(t->tid)->flags |= t->flags;
	if (t->has_totals) {
		D.thread_totals++;
		settled_add(&t->totals);
	}
	return 0;
}

static int
on_data(void *c, const struct rtprof_dump_data *d)
{
	struct tacc *a = tacc(d->tid);

	(void)c;
	a->data_frames++;
	a->data_full += d->dropped_full;
	a->data_nested += d->dropped_nested;
	if (d->record_index == 0)
		a->chunks++;
	/* A chunk's next part starts where the previous ended; a new chunk
	 * is the next one, or chunk 0 of a new thread with the same tid. */
	if ((int64_t)d->chunk_seq == a->last_chunk) {
		if (d->record_index != a->last_end)
			D.gaps++;
	} else if (d->record_index != 0 ||
	    ((int64_t)d->chunk_seq != a->last_chunk + 1 && d->chunk_seq != 0)) {
		D.gaps++;
	}
	a->last_chunk = (int64_t)d->chunk_seq;
	a->last_end = d->record_index + d->nrec;
	return 0;
}

static int
on_record(void *c, const struct rtprof_dump_data *d,
    const struct rtprof_rec_view *r)
{
	(void)c;
	tacc(d->tid)->records++;
	if (r->kind == RTPROF_REC_SAMPLE || r->kind == RTPROF_REC_SAME)
		D.samples++;
	if (r->kind == RTPROF_REC_OVERHEAD)
		D.overhead++;
	if (r->kind == RTPROF_REC_COUNTER) {
		if (r->id == RTPROF_COUNTER_PROCESS_MEMORY)
			D.rss = r->value;
		else if (r->id == RTPROF_COUNTER_SELF_MEMORY)
			D.self_mem = r->value;
		tick(r->t0);
	}
	return 0;
}

static int
on_values(void *c, uint64_t t, size_t n, const uint32_t *ids, const int64_t *v)
{
	(void)c;
	for (size_t i = 0; i < n; i++)
		if (ids[i] == RTPROF_COUNTER_SELF_MEMORY)
			D.self_mem = v[i];
	tick(t);
	return 0;
}

static int
on_event(void *c, const struct rtprof_dump_event *e)
{
	(void)c;
	fprintf(stderr, "soak_check: EVENT %s\n", e->what ? e->what : "?");
	D.events++;
	return 0;
}

static int
on_trailer(void *c, const struct rtprof_dump_trailer *t)
{
	(void)c;
	D.has_trailer++;
	D.chunks_lost += t->chunks_lost;
	D.limit += t->limit_reached;
	D.trailer_entries += t->nthreads;
	for (size_t i = 0; i < t->nthreads; i++)
		settled_add(&t->threads[i]);
	return 0;
}

static int
on_damage(void *c, const struct rtprof_dump_damage *d)
{
	(void)c;
	fprintf(stderr, "soak_check: damage %s at %llu: %s\n",
	    rtprof_dump_damage_name(d->kind), (unsigned long long)d->offset,
	    d->message ? d->message : "");
	D.damage++;
	return 0;
}

int
main(void)
{
	struct rtprof_dump_cb cb = {
		.on_header = on_header, .on_thread = on_thread,
		.on_data = on_data, .on_record = on_record,
		.on_values = on_values, .on_event = on_event,
		.on_trailer = on_trailer, .on_damage = on_damage,
	};
	struct rtprof_dump_stats st;
	int rc = rtprof_dump_read_fd(STDIN_FILENO, &cb, &st);

	for (size_t i = 0; i < D.cap; i++) {
		const struct tacc *a = &D.t[i];

		if (a->tid == 0)
			continue;
		printf("tid %lld %llu %llu %llu %llu %llu %d %llu %llu %llu %llu "
		    "%llu\n", (long long)a->tid, (unsigned long long)a->records,
		    (unsigned long long)a->data_frames,
		    (unsigned long long)a->chunks,
		    (unsigned long long)a->data_full,
		    (unsigned long long)a->data_nested, a->settled,
		    (unsigned long long)a->tr.recorded,
		    (unsigned long long)a->tr.dropped_full,
		    (unsigned long long)a->tr.dropped_nested,
		    (unsigned long long)a->tr.recycled,
		    (unsigned long long)a->flags);
	}
	printf("session %llu %llu %llu %llu %llu %llu\n",
	    (unsigned long long)D.sessions, (unsigned long long)D.has_trailer,
	    (unsigned long long)D.chunks_lost, (unsigned long long)D.limit,
	    (unsigned long long)D.events, (unsigned long long)D.gaps);
	printf("counts %llu %llu\n", (unsigned long long)D.thread_totals,
	    (unsigned long long)D.trailer_entries);
	printf("stream %llu %llu %llu %llu %llu %llu %.1f\n",
	    (unsigned long long)st.bytes, (unsigned long long)st.frames,
	    (unsigned long long)st.records,
	    (unsigned long long)(st.damage + D.damage),
	    (unsigned long long)D.samples, (unsigned long long)D.overhead,
	    D.tps > 0 ? (double)(D.last_ticks - D.start_ticks) / D.tps : 0.0);
	if (rc != 0)
		fprintf(stderr, "soak_check: reading the dump: %d\n", rc);
	return rc == 0 ? 0 : 1;
}
