/*
 * kill9_check.c - check a dump whose writer may have been killed at any
 * moment (test_kill9).
 *
 *   kill9_check DUMP
 *
 * Walks the frames from offset 0 by their lengths, independently of the
 * decoder: every complete frame must have its sync bytes, a good header
 * CRC, a good payload CRC, the session id of the first one and the next
 * seq (0, 1, 2, ...); what follows the last complete frame, when it is
 * not the end of the file, is the truncated tail. Then decodes the file
 * with rtprof_dump_read_mem() and checks that the decoder agrees: every
 * complete frame delivered, every record of every DATA frame delivered,
 * and no damage but one TRUNCATED report covering exactly the tail.
 *
 * Prints one line, "FRAMES RECORDS TAIL_BYTES FILE_BYTES TRAILER(0/1)"
 * (RECORDS: the records of every complete DATA frame), and exits
 * 0; exits 1 (saying why on stderr) when a check fails, 2 on usage or
 * I/O errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dump_reader.h"
#include "frame.h"

struct seen {
	uint64_t frames;        /* delivered (on_frame) */
	uint64_t nrec;          /* sum of the DATA frames' nrec */
	uint64_t records;       /* records delivered */
	uint64_t damage;
	uint64_t truncated;     /* TRUNCATED reports */
	uint64_t trunc_offset, trunc_length;
	uint64_t trailers;
};

static int
on_frame(void *ctx, const struct rtprof_dump_frame *f)
{
	struct seen *s = ctx;

	s->frames++;
	if (f->kind == RTPROF_FRAME_TRAILER)
		s->trailers++;
	return 0;
}

static int
on_data(void *ctx, const struct rtprof_dump_data *d)
{
	struct seen *s = ctx;

	s->nrec += d->nrec;
	return 0;
}

static int
on_record(void *ctx, const struct rtprof_dump_data *d,
    const struct rtprof_rec_view *r)
{
	struct seen *s = ctx;

	(void)d;
	(void)r;
	s->records++;
	return 0;
}

static int
on_damage(void *ctx, const struct rtprof_dump_damage *d)
{
	struct seen *s = ctx;

	s->damage++;
	if (d->kind == RTPROF_DAMAGE_TRUNCATED) {
		s->truncated++;
		s->trunc_offset = d->offset;
		s->trunc_length = d->length;
	} else {
		fprintf(stderr, "kill9_check: damage at offset %" PRIu64
		    ": %s: %s\n", d->offset, rtprof_dump_damage_name(d->kind),
		    d->message);
	}
	return 0;
}

static unsigned char *
slurp(const char *path, size_t *len)
{
	unsigned char *buf;
	struct stat sb;
	size_t got = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) != 0) {
		fprintf(stderr, "kill9_check: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	buf = malloc((size_t)sb.st_size + 1);
	if (buf == NULL) {
		close(fd);
		return NULL;
	}
	while (got < (size_t)sb.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)sb.st_size - got);

		if (r <= 0) {
			fprintf(stderr, "kill9_check: %s: short read\n", path);
			free(buf);
			close(fd);
			return NULL;
		}
		got += (size_t)r;
	}
	close(fd);
	*len = got;
	return buf;
}

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "kill9_check: %s: ", path);                    \
		fprintf(stderr, __VA_ARGS__);                                  \
		fputc('\n', stderr);                                           \
		bad = 1;                                                       \
	} while (0)

int
main(int argc, char **argv)
{
	struct rtprof_dump_cb cb = {
		.on_frame = on_frame,
		.on_data = on_data,
		.on_record = on_record,
		.on_damage = on_damage,
	};
	struct rtprof_dump_stats st;
	struct seen s;
	const char *path;
	unsigned char *buf;
	size_t len, off = 0, tail;
	uint64_t frames = 0;
	uint32_t session = 0;
	int bad = 0, trailer = 0, rc;

	if (argc != 2) {
		fprintf(stderr, "usage: kill9_check DUMP\n");
		return 2;
	}
	path = argv[1];
	buf = slurp(path, &len);
	if (buf == NULL)
		return 2;

	/* The frames as they were written, one after the other. */
	while (len - off >= RTPROF_FRAME_HEADER_SIZE) {
		struct rtprof_frame_hdr h;
		const unsigned char *p = buf + off;

		if (rtprof_frame_hdr_decode(p, &h) != 0) {
			FAIL("offset %zu: a whole frame header that does not "
			    "decode", off);
			break;
		}
		if (len - off < RTPROF_FRAME_OVERHEAD + (size_t)h.len)
			break;  /* the frame being written when killed */
		if (rtprof_crc32c(0, p + RTPROF_FRAME_HEADER_SIZE, h.len) !=
		    rtprof_le32(p + RTPROF_FRAME_HEADER_SIZE + h.len)) {
			FAIL("offset %zu: a whole frame with a bad payload "
			    "CRC", off);
			break;
		}
		if (frames == 0)
			session = h.session;
		if (h.session != session || h.seq != frames)
			FAIL("offset %zu: session %08" PRIx32 " seq %" PRIu32
			    ", want %08" PRIx32 " seq %" PRIu64, off, h.session,
			    h.seq, session, frames);
		if (trailer)
			FAIL("offset %zu: a frame after the trailer", off);
		if (h.kind == RTPROF_FRAME_TRAILER)
			trailer = 1;
		if ((frames == 0) != (h.kind == RTPROF_FRAME_HEADER))
			FAIL("offset %zu: frame %" PRIu64 " is of kind %u",
			    off, frames, h.kind);
		frames++;
		off += RTPROF_FRAME_OVERHEAD + (size_t)h.len;
	}
	tail = len - off;

	/* What the decoder makes of it. */
	memset(&s, 0, sizeof(s));
	cb.ctx = &s;
	rc = rtprof_dump_read_mem(buf, len, &cb, &st);
	if (rc != 0)
		FAIL("rtprof_dump_read_mem: %d", rc);
	if (st.frames != frames || s.frames != frames)
		FAIL("%" PRIu64 " frames decoded (%" PRIu64 " delivered), "
		    "%" PRIu64 " complete in the file", st.frames, s.frames,
		    frames);
	if (s.records != s.nrec || st.records != s.nrec)
		FAIL("%" PRIu64 " records delivered, the DATA frames hold %"
		    PRIu64, s.records, s.nrec);
	if (st.bad_frames || st.skipped_bytes || st.seq_gaps || st.seq_dups ||
	    st.bad_payloads || st.bad_records || st.unknown_frames ||
	    st.newer_version_frames)
		FAIL("damage before the cut: %" PRIu64 " bad frames, %" PRIu64
		    " bytes skipped, %" PRIu64 " frames missing, %" PRIu64
		    " repeated, %" PRIu64 " bad payloads, %" PRIu64
		    " bad records, %" PRIu64 " unknown", st.bad_frames,
		    st.skipped_bytes, st.seq_gaps, st.seq_dups,
		    st.bad_payloads, st.bad_records, st.unknown_frames);
	if (st.truncated_tail_bytes != tail)
		FAIL("truncated tail of %" PRIu64 " bytes reported, %zu in "
		    "the file", st.truncated_tail_bytes, tail);
	if (tail == 0 && (s.damage != 0 || st.damage != 0))
		FAIL("%" PRIu64 " damage report(s) for a file that ends on a "
		    "frame boundary", st.damage);
	if (tail != 0 && (s.damage != 1 || s.truncated != 1 ||
	    s.trunc_offset != off || s.trunc_length != tail))
		FAIL("%" PRIu64 " damage report(s), %" PRIu64 " truncated "
		    "(offset %" PRIu64 ", %" PRIu64 " bytes), want one: "
		    "offset %zu, %zu bytes", s.damage, s.truncated,
		    s.trunc_offset, s.trunc_length, off, tail);
	if (s.trailers != (uint64_t)trailer)
		FAIL("%" PRIu64 " trailers decoded, %d in the file",
		    s.trailers, trailer);
	free(buf);
	printf("%" PRIu64 " %" PRIu64 " %zu %zu %d\n", frames, s.nrec, tail,
	    len, trailer);
	return bad;
}
