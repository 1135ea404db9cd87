/*
 * writer_out.c - writing a round's batch to each session's descriptor,
 * without the core lock: frames (header, payload, CRC-32C), a STRING frame
 * for every static name before the first DATA frame that uses it, the
 * DATA frames of chunk ranges (one pass over their records: names, first
 * and last timestamps, the CRC), the size cap (max_bytes) with its limit
 * EVENT, and the TRAILER. The descriptor is checked to be the session's
 * own before every write, and no write blocks past write_timeout_ms.
 *
 * Context: the writer thread, lock NOT held; it owns the batch, the sink
 * fields of the sessions (SINK_SET: read by rtprof_session_status_get()
 * with relaxed loads) and each session's acct array meanwhile.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

#include "core.h"
#include "writer_int.h"

static int
strset_add(struct strset *set, uint64_t ref)
{
	size_t i;

	if (set->n * 2 >= set->cap) {
		size_t ncap = set->cap ? set->cap * 2 : 1024;
		uint64_t *ns = calloc(ncap, sizeof(*ns));

		if (ns == NULL)
			return 1; /* cannot remember: send it again, harmless */
		for (i = 0; i < set->cap; i++) {
			uint64_t v = set->slots[i];
			size_t j;

			if (v == 0)
				continue;
			for (j = (v * 0x9E3779B97F4A7C15ull) >> 40 & (ncap - 1);
			    ns[j] != 0; j = (j + 1) & (ncap - 1))
				;
			ns[j] = v;
		}
		free(set->slots);
		set->slots = ns;
		set->cap = ncap;
	}
	for (i = (ref * 0x9E3779B97F4A7C15ull) >> 40 & (set->cap - 1);
	    set->slots[i] != 0; i = (i + 1) & (set->cap - 1))
		if (set->slots[i] == ref)
			return 0;
	set->slots[i] = ref;
	set->n++;
	return 1;
}

/*
 * One write(2) that cannot block: the caller owns the fd and may have left
 * it in blocking mode, and POLLOUT only promises room for a few bytes (a
 * blocking write of more waits for all of it, past any timeout).
 */
static ssize_t
sink_write_some(int fd, const struct stat *st, const struct iovec *iov, int n)
{
	struct iovec cut[8];
	int fl = fcntl(fd, F_GETFL);

	if (n > IOV_MAX)
		n = IOV_MAX;
	if (fl < 0 || (fl & O_NONBLOCK))
		return writev(fd, iov, n);
	if (S_ISSOCK(st->st_mode)) {
		struct msghdr m;

		memset(&m, 0, sizeof(m));
		m.msg_iov = (struct iovec *)iov;
		m.msg_iovlen = (size_t)n;
		return sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	if (S_ISFIFO(st->st_mode)) {
		/* POLLOUT on a pipe: one pipe buffer is free, so PIPE_BUF
		 * bytes go in without waiting. */
		size_t room = PIPE_BUF;
		int k;

		for (k = 0; k < n && k < 8 && room > 0; k++) {
			cut[k] = iov[k];
			if (cut[k].iov_len > room)
				cut[k].iov_len = room;
			room -= cut[k].iov_len;
		}
		return writev(fd, cut, k);
	}
	return writev(fd, iov, n);
}

/*
 * Is @s's descriptor still the one it started on? A program may close its
 * descriptors (close_range, a daemon) and open files that get the number,
 * or dup2 over it (bash `exec 3>a`): the writer must never write into
 * those. Compared by identity (st_dev, st_ino), before each write; @st
 * gets what fstat() says (its type tells sink_write_some() how to write).
 * Context: writer thread.
 */
static int
sink_is_ours(const struct rtprof__session *s, struct stat *st)
{
	return fstat(s->set.fd, st) == 0 && st->st_dev == s->sink_dev &&
	    st->st_ino == s->sink_ino;
}

/* How long @s's writes may go without progress now: write_timeout_ms,
 * at most RTPROF__FINAL_WAIT_MS once the session is stopping (a stalled
 * reader must not hold the program's exit). Context: writer thread. */
static int
sink_timeout_ms(const struct rtprof__session *s)
{
	int ms = (int)s->set.write_timeout_ms;

	/* acquire: pairs with the release in rtprof_session_stop(). */
	if (atomic_load_explicit(&s->stopping, memory_order_acquire) &&
	    ms > RTPROF__FINAL_WAIT_MS)
		ms = RTPROF__FINAL_WAIT_MS;
	return ms;
}

#define SINK_POLL_SLICE_MS 100

/* Context: writer thread. Return: ms since @t0. */
static int
ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int)((t.tv_sec - t0->tv_sec) * 1000 +
	    (t.tv_nsec - t0->tv_nsec) / 1000000);
}

/* Consume the SIGPIPE that this thread (every signal blocked) has pending
 * after an EPIPE. Context: writer thread. */
static void
eat_sigpipe(void)
{
	sigset_t pipe;
	struct timespec zero = { 0, 0 };

	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	sigtimedwait(&pipe, NULL, &zero);
}

/* Advance @iov/@n past @r bytes written. */
static void
iov_advance(struct iovec **iov, int *n, size_t r)
{
	while (*n > 0 && r >= (*iov)->iov_len) {
		r -= (*iov)->iov_len;
		(*iov)++;
		(*n)--;
	}
	if (*n > 0) {
		(*iov)->iov_base = (char *)(*iov)->iov_base + r;
		(*iov)->iov_len -= r;
	}
}

/*
 * Write all of @iov, giving up after sink_timeout_ms() without progress
 * (polled in slices, so a stop during a stall shortens the wait), or
 * at once when the descriptor is no longer the sink (-EBADF: nothing is
 * written into it). Context: writer thread, lock NOT held.
 * Return: 0 or a negative errno.
 */
static int
sink_writev(struct rtprof__session *s, struct iovec *iov, int n)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (n > 0) {
		struct pollfd p = { s->set.fd, POLLOUT, 0 };
		struct stat st;
		int left = sink_timeout_ms(s) - ms_since(&t0);
		ssize_t r;
		int pr;

		if (left <= 0)
			return -ETIMEDOUT;
		pr = poll(&p, 1, left < SINK_POLL_SLICE_MS ? left :
		    SINK_POLL_SLICE_MS);
		if (pr < 0 && errno != EINTR)
			return -errno;
		if (pr > 0 && (p.revents & POLLNVAL))
			return -EBADF;
		if (pr <= 0)
			continue;
		if (!sink_is_ours(s, &st))
			return -EBADF;
		r = sink_write_some(s->set.fd, &st, iov, n);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN ||
			    errno == EWOULDBLOCK)
				continue;
			if (errno == EPIPE)
				eat_sigpipe();
			return -errno;
		}
		/* Progress: the timeout counts from here (a slow serial
		 * line is not a stuck one). */
		if (r > 0)
			clock_gettime(CLOCK_MONOTONIC, &t0);
		iov_advance(&iov, &n, (size_t)r);
	}
	return 0;
}

static uint64_t
trailer_reserve(const struct rtprof__session *s)
{
	/* Room kept for the limit EVENT and the TRAILER frames. */
	return 512 + 64 * (uint64_t)s->nacct;
}

static void write_event_limit(struct rtprof__session *s);

/*
 * write_frame_crc - frame @np payload pieces and write them; @tail_crc: the
 * last piece's own CRC-32C, already taken (joined by
 * rtprof_crc32c_combine()), or NULL: taken here.
 * Under max_bytes every frame but the limit EVENT and the TRAILER leaves
 * room for those two, and the first frame refused for the cap, whatever
 * its kind, writes the limit EVENT (docs/wire-format.md, EVENT).
 * Return: 0 written, -1 not written (sink error or cap; counted).
 */
static int
write_frame_crc(struct rtprof__session *s, uint8_t kind,
    const struct iovec *payload, int np, const uint32_t *tail_crc)
{
	int capped = kind != RTPROF_FRAME_EVENT && kind != RTPROF_FRAME_TRAILER;
	unsigned char hdr[RTPROF_FRAME_HEADER_SIZE], crcb[4];
	struct iovec iov[8];
	struct rtprof_frame_hdr h;
	size_t len = 0;
	uint32_t crc = 0;
	int rc;

	if (s->sink_error != 0)
		return -1;
	for (int i = 0; i < np; i++)
		len += payload[i].iov_len;
	if (s->set.max_bytes != 0 &&
	    s->bytes + len + RTPROF_FRAME_OVERHEAD +
	    (capped ? trailer_reserve(s) : 0) > s->set.max_bytes) {
		if (capped && !s->limit_reached) {
			SINK_SET(s->limit_reached, 1);
			write_event_limit(s);
		}
		SINK_SET(s->limit_reached, 1);
		return -1;
	}
	h.kind = kind;
	h.version = RTPROF_WIRE_VERSION;
	h.session = s->id;
	h.seq = s->frame_seq;
	h.len = (uint32_t)len;
	rtprof_frame_hdr_encode(hdr, &h);
	iov[0].iov_base = hdr;
	iov[0].iov_len = sizeof(hdr);
	for (int i = 0; i < np; i++) {
		iov[1 + i] = payload[i];
		if (i == np - 1 && tail_crc != NULL)
			crc = rtprof_crc32c_combine(crc, *tail_crc,
			    payload[i].iov_len);
		else
			crc = rtprof_crc32c(crc, payload[i].iov_base,
			    payload[i].iov_len);
	}
	rtprof_put_le32(crcb, crc);
	iov[1 + np].iov_base = crcb;
	iov[1 + np].iov_len = 4;
	rc = sink_writev(s, iov, np + 2);
	if (rc < 0) {
		SINK_SET(s->sink_error, rc);
		return -1;
	}
	s->frame_seq++;
	SINK_SET(s->bytes, s->bytes + len + RTPROF_FRAME_OVERHEAD);
	return 0;
}

/* write_frame_crc() taking every piece's CRC here. */
static int
write_frame(struct rtprof__session *s, uint8_t kind, const struct iovec *payload,
    int np)
{
	return write_frame_crc(s, kind, payload, np, NULL);
}

static int
write_buf(struct rtprof__session *s, uint8_t kind, const msgpack_sbuffer *b)
{
	struct iovec v = { b->data, b->size };

	return write_frame(s, kind, &v, 1);
}

static void
write_event_limit(struct rtprof__session *s)
{
	msgpack_sbuffer b;
	msgpack_packer pk;

	msgpack_sbuffer_init(&b);
	msgpack_packer_init(&pk, &b, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	rtprof__pack_key(&pk, "ticks");
	msgpack_pack_uint64(&pk, rtprof_now());
	rtprof__pack_key(&pk, "what");
	rtprof__pack_str(&pk, "limit_reached");
	rtprof__pack_key(&pk, "max_bytes");
	msgpack_pack_uint64(&pk, s->set.max_bytes);
	write_buf(s, RTPROF_FRAME_EVENT, &b);
	msgpack_sbuffer_destroy(&b);
}

static void
write_string(struct rtprof__session *s, uint64_t ref)
{
	const char *text = (const char *)(uintptr_t)ref;
	struct strset *set = s->strings;
	msgpack_sbuffer b;
	msgpack_packer pk;
	size_t len;

	if (set == NULL) {
		set = s->strings = calloc(1, sizeof(*set));
		if (set == NULL)
			return;
	}
	if (ref == 0 || !strset_add(set, ref))
		return;
	len = strnlen(text, 4096);
	msgpack_sbuffer_init(&b);
	msgpack_packer_init(&pk, &b, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 2);
	msgpack_pack_uint64(&pk, ref);
	msgpack_pack_str(&pk, len);
	msgpack_pack_str_body(&pk, text, len);
	write_buf(s, RTPROF_FRAME_STRING, &b);
	msgpack_sbuffer_destroy(&b);
}

/*
 * The records rtprof__mark4() and rtprof__counter_rec() write, read
 * without the general walker (most records of a busy stream): an instant,
 * begin or end marker [0x94, kind, 0xcf ts, 0xd7 0x01 name, cat] of 22
 * bytes, or a counter [0x94, 6, 0xcf ts, 0xcd id, 0xd3 value] of 23.
 * Return: its size with *@t0 and *@name (0: none), or 0: not one of them.
 */
static size_t
fast_record(const unsigned char *p, size_t n, uint64_t *t0, uint64_t *name)
{
	if (n < 22 || p[0] != 0x94 || p[2] != 0xcf)
		return 0;
	if (p[1] >= RTPROF__REC_INSTANT && p[1] <= RTPROF__REC_END &&
	    p[11] == 0xd7 && p[12] == 0x01 && p[21] < 0x80) {
		*t0 = rtprof_be64(p + 3);
		*name = rtprof_be64(p + 13);
		return 22;
	}
	if (p[1] == RTPROF__REC_COUNTER && n >= 23 && p[11] == 0xcd &&
	    p[14] == 0xd3) {
		*t0 = rtprof_be64(p + 3);
		*name = 0;
		return 23;
	}
	return 0;
}

/* The strings of a record decoded by the general walker. */
static void
record_strings(struct rtprof__session *s, const struct rtprof_rec_view *r,
    const uint64_t *mask)
{
	if (r->name != 0)
		write_string(s, r->name);
	for (unsigned i = 0; i < r->nvals; i++)
		if (r->vals[i].kind == RTPROF_VAL_STRREF)
			write_string(s, r->vals[i].v.ref);
	for (unsigned i = 0; i < r->nframes; i++)    /* labels */
		if (rtprof_rec_frame_is_label(mask, i))
			write_string(s, r->frames[i]);
}

/*
 * One pass over a range's records: send a STRING frame for every static
 * string not sent yet (before the DATA frame that uses it) and find the
 * first and last timestamps. A name that repeats the previous record's is
 * known already. (Taking the CRC-32C in this pass, 24 KiB at a time while
 * the bytes are in cache, was tried: the writer spent 5-17% more CPU per
 * MB than with one CRC pass over the whole range afterwards.)
 */
static void
scan_records(struct rtprof__session *s, const unsigned char *p, size_t n,
    uint64_t *first, uint64_t *last)
{
	uint64_t frames[RTPROF_REC_MAX_FRAMES], mask[RTPROF_REC_MASK_WORDS];
	struct rtprof_rec_view r = { .frames = frames, .label_mask = mask };
	uint64_t t0, name, prev_name = 0;
	int any = 0;
	size_t k;

	*first = *last = 0;
	for (; n > 0; p += k, n -= k) {
		/* The chunk was written on another CPU: ask for its lines
		 * ahead of the pass (a prefetch never faults). */
		__builtin_prefetch(p + 512, 0, 0);
		if ((k = fast_record(p, n, &t0, &name)) != 0) {
			if (name != prev_name && name != 0)
				write_string(s, name);
			prev_name = name != 0 ? name : prev_name;
		} else if (rtprof_rec_next(p, n, &r) == 1) {
			k = r.size;
			t0 = r.t0;
			record_strings(s, &r, mask);
		} else {
			break;
		}
		if (!any)
			*first = t0;
		any = 1;
		if (t0 > *last)
			*last = t0;
	}
}

static void
write_data(struct witem *w)
{
	struct rtprof__session *s = w->s;
	struct rtprof__chunk *k = w->k;
	uint32_t from = (uint32_t)w->from, to = (uint32_t)w->to;
	const unsigned char *p = k->data + from;
	size_t n = to - from;
	uint64_t first, last;
	uint32_t data_crc;
	unsigned char hb[128];
	msgpack_sbuffer b = { 0, (char *)hb, sizeof(hb) };
	msgpack_packer pk;
	struct iovec v[2];
	int first_part = word_nrec(w->from) == 0;

	if (s->sink_error != 0 || (s->limit_reached && s->set.max_bytes)) {
		SINK_SET(s->chunks_lost, s->chunks_lost + 1);
		rtprof__unrecord(s, w->th, word_nrec(w->to) - word_nrec(w->from));
		return;
	}
	/* The CRC first: it reads the chunk (written on another CPU) at the
	 * speed of its lines, and the pass after it finds them in cache. */
	data_crc = rtprof_crc32c(0, p, n);
	scan_records(s, p, n, &first, &last);
	if (s->sink_error != 0 || (s->limit_reached && s->set.max_bytes)) {
		/* A STRING frame of these records was refused for the cap:
		 * no DATA frame with names the reader cannot resolve. */
		SINK_SET(s->chunks_lost, s->chunks_lost + 1);
		rtprof__unrecord(s, w->th, word_nrec(w->to) - word_nrec(w->from));
		return;
	}
	/* A fixed stack buffer is enough for 10 integers; sbuffer_write
	 * would realloc() it, so size it well above the 91-byte maximum. */
	b.size = 0;
	msgpack_packer_init(&pk, &b, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 10);
	msgpack_pack_int32(&pk, w->th->tid);
	msgpack_pack_uint32(&pk, RTPROF__STATE_GEN(k->state));
	msgpack_pack_uint32(&pk, k->seq);
	msgpack_pack_uint32(&pk, from);
	msgpack_pack_uint32(&pk, word_nrec(w->from));
	msgpack_pack_uint32(&pk, word_nrec(w->to) - word_nrec(w->from));
	msgpack_pack_uint64(&pk, first);
	msgpack_pack_uint64(&pk, last);
	msgpack_pack_uint64(&pk, first_part ? k->drops_full : 0);
	msgpack_pack_uint64(&pk, first_part ? k->drops_nested : 0);
	v[0].iov_base = b.data;
	v[0].iov_len = b.size;
	v[1].iov_base = (void *)p;
	v[1].iov_len = n;
	if (write_frame_crc(s, RTPROF_FRAME_DATA, v, 2, &data_crc) == 0) {
		SINK_SET(s->chunks_written, s->chunks_written + 1);
	} else {
		SINK_SET(s->chunks_lost, s->chunks_lost + 1);
		rtprof__unrecord(s, w->th, word_nrec(w->to) - word_nrec(w->from));
	}
}

/* Pack @a as a trailer entry [tid, recorded, full, nested, recycled]. */
static void
pack_acct(msgpack_packer *pk, const struct rtprof__acct *a)
{
	msgpack_pack_array(pk, 5);
	msgpack_pack_int32(pk, a->tid);
	msgpack_pack_uint64(pk, a->recorded);
	msgpack_pack_uint64(pk, a->dropped_full);
	msgpack_pack_uint64(pk, a->dropped_nested);
	msgpack_pack_uint64(pk, a->recycled);
}

/*
 * The TRAILER. Under a size cap it may not have room for every thread's
 * counts: threads that came and went after the cap have entries that no
 * reserve foresaw (trailer_reserve() counts the entries at the time of each
 * frame). Then it lists those it can, the threads with records in the dump
 * first, and says how many it left out (`threads_omitted`), rather than
 * not fitting at all. Context: writer thread, lock NOT held.
 */
static void
write_trailer(struct rtprof__session *s)
{
	/* The map header, "threads_omitted" and "threads" keys, their values'
	 * headers: at most 1 + 16 + 5 + 8 + 5 bytes. */
	const size_t slack = 40;
	msgpack_sbuffer b, f, e;
	msgpack_packer pk;
	uint64_t room = UINT64_MAX;
	uint32_t n = 0;

	if (s->set.max_bytes != 0)
		room = s->set.max_bytes > s->bytes + RTPROF_FRAME_OVERHEAD ?
		    s->set.max_bytes - s->bytes - RTPROF_FRAME_OVERHEAD : 0;
	msgpack_sbuffer_init(&f);
	msgpack_packer_init(&pk, &f, msgpack_sbuffer_write);
	rtprof__pack_key(&pk, "stop_ticks");
	msgpack_pack_uint64(&pk, s->stop_ticks);
	rtprof__pack_key(&pk, "stop_mono_ns");
	msgpack_pack_uint64(&pk, s->stop_mono);
	rtprof__pack_key(&pk, "stop_wall_ns");
	msgpack_pack_uint64(&pk, s->stop_wall);
	rtprof__pack_key(&pk, "frames");
	msgpack_pack_uint32(&pk, s->frame_seq);
	rtprof__pack_key(&pk, "bytes");
	msgpack_pack_uint64(&pk, s->bytes);
	rtprof__pack_key(&pk, "chunks_lost");
	msgpack_pack_uint64(&pk, s->chunks_lost);
	rtprof__pack_key(&pk, "samples_lost");
	msgpack_pack_uint64(&pk, s->samples_lost);
	rtprof__pack_key(&pk, "limit_reached");
	if (s->limit_reached)
		msgpack_pack_true(&pk);
	else
		msgpack_pack_false(&pk);

	msgpack_sbuffer_init(&e);
	msgpack_packer_init(&pk, &e, msgpack_sbuffer_write);
	for (int with_records = 1; with_records >= 0; with_records--) {
		for (uint32_t i = 0; i < s->nacct; i++) {
			size_t before = e.size;

			if ((s->acct[i].recorded != 0) != with_records)
				continue;
			pack_acct(&pk, &s->acct[i]);
			if (f.size + slack + e.size > room) {
				e.size = before;
				with_records = -1;
				break;
			}
			n++;
		}
	}

	msgpack_sbuffer_init(&b);
	msgpack_packer_init(&pk, &b, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, n < s->nacct ? 10 : 9);
	msgpack_sbuffer_write(&b, f.data, f.size);
	if (n < s->nacct) {
		rtprof__pack_key(&pk, "threads_omitted");
		msgpack_pack_uint32(&pk, s->nacct - n);
	}
	rtprof__pack_key(&pk, "threads");
	msgpack_pack_array(&pk, n);
	if (e.size != 0)
		msgpack_sbuffer_write(&b, e.data, e.size);
	write_buf(s, RTPROF_FRAME_TRAILER, &b);
	msgpack_sbuffer_destroy(&b);
	msgpack_sbuffer_destroy(&e);
	msgpack_sbuffer_destroy(&f);
}

/*
 * A THREAD frame that settled @a's counts was not written (the size cap;
 * or a sink error, after which the trailer is lost too): the trailer
 * lists them instead. Context: writer thread, lock NOT held (the acct
 * array is the writer's own).
 */
static void
unsettle(struct rtprof__session *s, const struct rtprof__acct *a)
{
	if (rtprof__acct_reserve(s) == 0)       /* else out of memory: lost */
		s->acct[s->nacct++] = *a;
}

/* Context: writer thread, lock NOT held. */
void
rtprof__write_batch(void)
{
	for (size_t i = 0; i < rtprof__batch.n; i++) {
		struct witem *w = &rtprof__batch.v[i];

		switch (w->kind) {
		case W_FRAME:
			if (write_buf(w->s, w->frame, &w->buf) != 0 &&
			    w->settles)
				unsettle(w->s, &w->settled);
			break;
		case W_DATA:
			write_data(w);
			break;
		case W_TRAILER:
			write_trailer(w->s);
			break;
		case W_DUMPED:
			break;
		}
	}
}

