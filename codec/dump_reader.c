/*
 * dump_reader.c - streaming decoder of rtprof dumps (docs/wire-format.md):
 * the read loop, sessions and sequence numbers, damage reports.
 *
 * Pipeline (dump_int.h): bytes -> rtprof_scanner (frame.c: sync, CRCs,
 * resync) -> session/seq bookkeeping (here) -> payload decoding
 * (dump_records.c, dump_frames.c) -> callbacks.
 *
 * Payloads are untrusted even when their CRC is right (a buggy or hostile
 * writer computes CRCs too). msgpack-c allocates count * 24 bytes up front
 * for every array or map it meets, so before a payload reaches it,
 * mp_check() walks the bytes once and refuses any container whose count
 * exceeds the bytes left (every element takes at least one byte) and any
 * payload of more than RTPROF_DUMP_MAX_OBJECTS objects. msgpack-c itself
 * refuses nesting deeper than 32. Semantic caps (RTPROF_DUMP_MAX_*) then
 * bound what the reader copies into its own arena.
 *
 * Context: any thread; each call owns all of its state.
 */
#include <unistd.h>

#include "dump_int.h"

void *
dump_arena_alloc(struct arena *a, size_t n)
{
	const size_t al = alignof(max_align_t);
	struct arena_blk *b = a->head;
	size_t need;
	void *p;

	/* Callers pass sizes bounded by the frame size and the caps. */
	if (n > SIZE_MAX / 2)
		return NULL;
	need = n ? (n + al - 1) & ~(al - 1) : al;
	if (b == NULL || b->cap - b->used < need) {
		size_t cap = need > ARENA_BLOCK ? need : ARENA_BLOCK;

		b = malloc(sizeof(*b) + cap);
		if (b == NULL)
			return NULL;
		b->next = a->head;
		b->cap = cap;
		b->used = 0;
		a->head = b;
	}
	p = (unsigned char *)b->data + b->used;
	b->used += need;
	return p;
}

/* Forget everything; keep one default-sized block for the next frame. */
void
dump_arena_reset(struct arena *a)
{
	struct arena_blk *b = a->head, *keep = NULL;

	while (b != NULL) {
		struct arena_blk *next = b->next;

		if (keep == NULL && b->cap == ARENA_BLOCK)
			keep = b;
		else
			free(b);
		b = next;
	}
	if (keep != NULL) {
		keep->next = NULL;
		keep->used = 0;
	}
	a->head = keep;
}

static void
arena_free(struct arena *a)
{
	dump_arena_reset(a);
	free(a->head);
	a->head = NULL;
}

int
dump_report(struct reader *r, enum rtprof_damage_kind kind, uint64_t offset,
    uint64_t length, uint64_t count, const struct sess_slot *s,
    const char *msg)
{
	struct rtprof_dump_damage d = {
		.kind = kind,
		.offset = offset,
		.length = length,
		.count = count,
		.session_index = s ? s->index : 0,
		.session = s ? s->id : 0,
		.message = msg,
	};

	r->st->damage++;
	if (r->cb->on_damage != NULL)
		return r->cb->on_damage(r->cb->ctx, &d);
	return 0;
}


/* ------------------------------------------------------------------ */
/* Frames, sessions, sequence numbers.                                */

static struct sess_slot *
sess_find(struct reader *r, uint32_t id)
{
	for (int i = 0; i < SESSION_SLOTS; i++)
		if (r->sess[i].index != 0 && r->sess[i].id == id)
			return &r->sess[i];
	return NULL;
}

static struct sess_slot *
sess_new(struct reader *r, uint32_t id)
{
	struct sess_slot *s = sess_find(r, id);

	if (s == NULL) {
		s = &r->sess[0];
		for (int i = 1; i < SESSION_SLOTS; i++)
			if (r->sess[i].stamp < s->stamp)
				s = &r->sess[i];
	}
	s->id = id;
	s->index = ++r->st->sessions;
	s->next_seq = 0;
	return s;
}

static int
handle_frame(struct reader *r, const struct rtprof_frame *f)
{
	const struct rtprof_frame_hdr *h = &f->hdr;
	const uint64_t size = RTPROF_FRAME_OVERHEAD + (uint64_t)h->len;
	struct rtprof_dump_frame df;
	struct sess_slot *s;
	int rc;

	r->st->frames++;
	r->st->bad_frames = r->sc.bad_frames;
	if (f->offset > r->expect_off) {
		uint64_t skipped = f->offset - r->expect_off;
		uint64_t bad = r->sc.bad_frames - r->bad_seen;

		r->bad_seen = r->sc.bad_frames;
		r->st->skipped_bytes += skipped;
		r->st->resyncs++;
		rc = dump_report(r, RTPROF_DAMAGE_SKIPPED, r->expect_off, skipped,
		    bad, NULL, bad ? "damaged frames skipped (payload CRC mismatch)" :
		    "bytes skipped (no valid frame header)");
		if (rc != 0)
			return rc;
	}
	r->expect_off = f->offset + size;

	if (h->version > RTPROF_WIRE_VERSION) {
		if (r->st->newer_version_frames++ == 0)
			r->st->newer_version_offset = f->offset;
		if (h->version > r->st->newer_version)
			r->st->newer_version = h->version;
		if (!r->any_frame)
			return -EPROTONOSUPPORT;
		if (r->newer_reported && r->newer_session == h->session &&
		    h->kind != RTPROF_FRAME_HEADER)
			return 0;
		r->newer_reported = true;
		r->newer_session = h->session;
		return dump_report(r, RTPROF_DAMAGE_NEWER_VERSION, f->offset, size,
		    h->version, NULL,
		    "frame of a newer format version skipped");
	}
	r->any_frame = true;
	r->newer_reported = false;

	if (h->kind == RTPROF_FRAME_HEADER) {
		s = sess_new(r, h->session);
	} else {
		s = sess_find(r, h->session);
		if (s == NULL)
			s = sess_new(r, h->session);
	}
	s->stamp = ++r->stamp;
	if (h->seq > s->next_seq) {
		uint64_t gap = h->seq - s->next_seq;
		bool headless = s->next_seq == 0 && h->kind != RTPROF_FRAME_HEADER;

		r->st->seq_gaps += gap;
		rc = dump_report(r, RTPROF_DAMAGE_SEQ_GAP, f->offset, 0, gap, s,
		    headless ? "frames missing, the session's HEADER among them" :
		    "frames missing (sequence gap)");
		if (rc != 0)
			return rc;
	} else if (h->seq < s->next_seq) {
		r->st->seq_dups++;
		return dump_report(r, RTPROF_DAMAGE_SEQ_DUP, f->offset, size,
		    h->seq, s, "frame repeated or out of order, skipped");
	}
	s->next_seq = h->seq + 1;

	df.offset = f->offset;
	df.session_index = s->index;
	df.session = h->session;
	df.seq = h->seq;
	df.len = h->len;
	df.kind = h->kind;
	df.version = h->version;
	if (r->cb->on_frame != NULL &&
	    (rc = r->cb->on_frame(r->cb->ctx, &df)) != 0)
		return rc;

	if (h->kind == RTPROF_FRAME_DATA)
		return frame_data(r, f, s);
	if (h->kind >= RTPROF_FRAME_HEADER && h->kind <= RTPROF_FRAME_KIND_MAX)
		return frame_object(r, f, s);
	r->st->unknown_frames++;
	return 0;
}

static int
reader_drain(struct reader *r)
{
	struct rtprof_frame f;
	int rc;

	while (rtprof_scanner_next(&r->sc, &f) == 1)
		if ((rc = handle_frame(r, &f)) != 0)
			return rc;
	return 0;
}

/*
 * At end of stream the scanner may hold a frame whose header is intact but
 * whose bytes were partly lost: it waits for a length that never comes,
 * and intact frames may sit behind it. Drop one byte at a time (the
 * scanner skips to the next sync candidate) until every held byte is
 * either a frame or the tail.
 */
static int
reader_finish(struct reader *r)
{
	uint64_t tail, bad;
	int rc;

	while (rtprof_scanner_pending(&r->sc) > 0) {
		rtprof_scanner_drop(&r->sc);
		if ((rc = reader_drain(r)) != 0)
			return rc;
	}
	r->st->bad_frames = r->sc.bad_frames;
	if (r->sc.offset <= r->expect_off)
		return 0;
	tail = r->sc.offset - r->expect_off;
	bad = r->sc.bad_frames - r->bad_seen;
	if (bad != 0) {
		/* Whole frames whose payload CRC failed: damage, not a tail
		 * cut short (a cut frame may follow them; it is counted in
		 * the same run). */
		r->st->skipped_bytes += tail;
		r->st->resyncs++;
		return dump_report(r, RTPROF_DAMAGE_SKIPPED, r->expect_off, tail,
		    bad, NULL, "damaged frames skipped at the end of the stream");
	}
	r->st->truncated_tail_bytes = tail;
	return dump_report(r, RTPROF_DAMAGE_TRUNCATED, r->expect_off, tail, 0,
	    NULL, "truncated tail: bytes at the end do not form a frame");
}

static int
reader_init(struct reader *r, const struct rtprof_dump_cb *cb,
    struct rtprof_dump_stats *st)
{
	memset(r, 0, sizeof(*r));
	r->cb = cb;
	r->st = st != NULL ? st : &r->own_st;
	memset(r->st, 0, sizeof(*r->st));
	msgpack_unpacked_init(&r->up);
	return rtprof_scanner_init(&r->sc);
}

static void
reader_fini(struct reader *r)
{
	r->st->bad_frames = r->sc.bad_frames;
	msgpack_unpacked_destroy(&r->up);
	arena_free(&r->ar);
	rtprof_scanner_free(&r->sc);
}

int
rtprof_dump_read_fd(int fd, const struct rtprof_dump_cb *cb,
    struct rtprof_dump_stats *st)
{
	struct reader r;
	int rc = reader_init(&r, cb, st);

	while (rc == 0) {
		size_t n = READ_PIECE;
		unsigned char *p = rtprof_scanner_space(&r.sc, &n);
		ssize_t got;

		if (p == NULL) {
			rc = -ENOMEM;
			break;
		}
		got = read(fd, p, n < READ_PIECE ? n : READ_PIECE);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (got == 0) {
			rc = reader_finish(&r);
			break;
		}
		rtprof_scanner_commit(&r.sc, (size_t)got);
		r.st->bytes += (uint64_t)got;
		rc = reader_drain(&r);
	}
	reader_fini(&r);
	return rc;
}

int
rtprof_dump_read_mem(const void *buf, size_t len,
    const struct rtprof_dump_cb *cb, struct rtprof_dump_stats *st)
{
	const unsigned char *src = buf;
	struct reader r;
	size_t done = 0;
	int rc = reader_init(&r, cb, st);

	while (rc == 0 && done < len) {
		size_t want = len - done < READ_PIECE ? len - done : READ_PIECE;
		size_t n = want;
		unsigned char *p = rtprof_scanner_space(&r.sc, &n);

		if (p == NULL) {
			rc = -ENOMEM;
			break;
		}
		memcpy(p, src + done, want);
		done += want;
		rtprof_scanner_commit(&r.sc, want);
		r.st->bytes += want;
		rc = reader_drain(&r);
	}
	if (rc == 0)
		rc = reader_finish(&r);
	reader_fini(&r);
	return rc;
}

const char *
rtprof_dump_frame_kind_name(unsigned kind)
{
	static const char *const names[] = {
		NULL, "HEADER", "MODULES", "THREAD", "SCHEMA", "COUNTER",
		"STRING", "DATA", "PAUSE", "VALUES", "EVENT", "TRAILER",
		"MODULES_CHANGED", "IMAGE", "CATEGORY",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : NULL;
}

const char *
rtprof_dump_rec_kind_name(unsigned kind)
{
	static const char *const names[] = {
		NULL, "instant", "begin", "end", "interval", "typed",
		"counter", "sleep", "wake", "sample", "same", "overhead",
		"backtrace", "zone_begin", "zone_end", "zone_arg", "text",
		"flow", "frame", "kstack",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : NULL;
}

const char *
rtprof_dump_damage_name(enum rtprof_damage_kind kind)
{
	switch (kind) {
	case RTPROF_DAMAGE_SKIPPED: return "skipped";
	case RTPROF_DAMAGE_SEQ_GAP: return "seq-gap";
	case RTPROF_DAMAGE_SEQ_DUP: return "seq-dup";
	case RTPROF_DAMAGE_BAD_PAYLOAD: return "bad-payload";
	case RTPROF_DAMAGE_BAD_RECORD: return "bad-record";
	case RTPROF_DAMAGE_TRUNCATED: return "truncated";
	case RTPROF_DAMAGE_NEWER_VERSION: return "newer-version";
	}
	return "unknown";
}

void
rtprof_dump_counts_add(struct rtprof_dump_trailer_thread *sum,
    const struct rtprof_dump_trailer_thread *c)
{
	sum->tid = c->tid;
	sum->recorded = sat_add(sum->recorded, c->recorded);
	sum->dropped_full = sat_add(sum->dropped_full, c->dropped_full);
	sum->dropped_nested = sat_add(sum->dropped_nested, c->dropped_nested);
	sum->recycled = sat_add(sum->recycled, c->recycled);
}
