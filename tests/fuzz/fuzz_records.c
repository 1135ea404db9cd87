/*
 * fuzz_records.c - libFuzzer target: the payload and record decoders with
 * no frame or CRC in the way.
 *
 * fuzz_dump_reader feeds whole dumps: almost every mutation of a payload
 * breaks its frame's CRC-32C, so the frame is skipped before msgpack is
 * parsed and the record walkers (codec/records.c, the DATA loop and the
 * general record reader of codec/dump_records.c) are barely reached. Here
 * the input is frame payloads without frames (tests/fuzz/segments.h: kind,
 * 2-byte length, payload, repeated), and each input is decoded two ways:
 *
 *   1. rtprof_rec_next() walks every payload straight from its first byte,
 *      and, for DATA payloads, from the byte after the data header (an
 *      array of integers, skipped here without msgpack-c, which would
 *      allocate for a hostile array count before reading it), until it
 *      stops. Checked: it
 *      returns 1, 0 or -EBADMSG only, 0 only at the end; a record's size
 *      is > 0 and within the bytes given; its copied strings lie inside
 *      the record; the view's invariants (dump_touch.h).
 *   2. seg_to_dump() wraps every payload in a frame with valid CRCs, and
 *      rtprof_dump_read_mem() decodes the result with every callback
 *      set: descriptors through msgpack-c, DATA records through
 *      rtprof_rec_next() and the general reader, damage reporting. Every
 *      callback reads what it gets and checks the record views; the
 *      statistics must add up (records delivered never above the DATA
 *      frames' bytes; frames == segments, no CRC damage, as every frame
 *      was framed correctly).
 *
 * Seeds: tests/fuzz/corpus-records/, the payloads of the corpus's dumps
 * (written by fuzz_gen_seeds). fuzz_replay_records runs them in every
 * build.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_touch.h"
#include "records.h"
#include "segments.h"

static void
fail(const char *why, size_t off)
{
	fprintf(stderr, "fuzz_records: %s (payload offset %zu)\n", why, off);
	abort();
}

/* rtprof_rec_next() from @p[0] on, as far as it goes. */
static void
walk(const uint8_t *p, size_t n)
{
	static uint64_t frames[RTPROF_REC_MAX_FRAMES];
	static uint64_t mask[RTPROF_REC_MASK_WORDS];
	struct rtprof_rec_view r;
	size_t pos = 0;

	for (;;) {
		int rc;

		memset(&r, 0xa5, sizeof(r));
		r.frames = (pos & 1) ? NULL : frames;
		r.label_mask = (pos & 2) ? NULL : mask;
		rc = rtprof_rec_next(p + pos, n - pos, &r);
		if (rc == 0) {
			if (pos != n)
				fail("rtprof_rec_next returned 0 before the end", pos);
			return;
		}
		if (rc == -EBADMSG)
			return;
		if (rc != 1)
			fail("rtprof_rec_next returned neither 1, 0 nor -EBADMSG",
			    pos);
		if (r.size == 0 || r.size > n - pos)
			fail("record size 0 or past the bytes given", pos);
		for (unsigned i = 0; i < r.nvals && i < RTPROF_REC_MAX_VALS; i++) {
			const struct rtprof_val *v = &r.vals[i];

			if (v->kind == RTPROF_VAL_STR &&
			    ((const uint8_t *)v->v.str.p < p + pos ||
			    (const uint8_t *)v->v.str.p + v->v.str.n >
			    p + pos + r.size))
				fail("copied string outside its record", pos);
		}
		touch_record(&r);
		pos += r.size;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rtprof_dump_cb cb;
	struct rtprof_dump_stats st;
	struct seg_buf dump = { 0 };
	const uint8_t *payload;
	size_t off = 0, len, nseg = 0, data_bytes = 0;
	uint8_t kind;

	/* 1. The fixed-width walker alone. */
	while (seg_next(data, size, off, &kind, &payload, &len, &off) == 1) {
		size_t used;

		nseg++;
		walk(payload, len);
		if (kind != RTPROF_FRAME_DATA)
			continue;
		data_bytes += len;
		if ((used = seg_data_header_size(payload, len)) != 0)
			walk(payload + used, len - used);
	}

	/* 2. The whole decoder on the same payloads, correctly framed. */
	if (seg_to_dump(data, size, &dump) != 0) {
		free(dump.p);
		return 0;
	}
	touch_callbacks(&cb);
	(void)rtprof_dump_read_mem(dump.p, dump.n, &cb, &st);
	free(dump.p);
	if (st.bad_frames != 0 || st.skipped_bytes != 0 ||
	    st.truncated_tail_bytes != 0)
		fail("a correctly framed input has CRC damage", 0);
	/* A frame of a newer version never comes from seg_to_dump(); a
	 * callback never stops the reader: every segment is a frame. */
	if (st.frames != nseg)
		fail("frames decoded != segments", 0);
	/* Each record takes at least 2 bytes of a DATA payload. */
	if (st.records > data_bytes / 2)
		fail("more records delivered than DATA bytes allow", 0);
	return 0;
}
