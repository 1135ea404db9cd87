/*
 * capture_rec.c - record a dump for test_capture.py: the stream a board
 * would send down its serial line.
 *
 *   capture_rec DUMP N
 *
 * One session, streamed to DUMP in 4 KiB chunks (DATA frames of about 4
 * KiB; enough of them prefilled that no record is dropped), sampling off.
 * Two threads ("main" and "worker") each record N typed "Packet" markers
 * with a payload (i64, u64, f64 and a copied string), instant markers
 * under 48 different static names (48 small STRING frames), begin/end
 * pairs and two counters; so the session has frames of many sizes, from a
 * few tens of bytes to a chunk. The workload is deterministic; times and
 * the session id are not.
 *
 * Context: main thread and one worker thread.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "rtprof.h"

#define N8(p) p "0", p "1", p "2", p "3", p "4", p "5", p "6", p "7"

static const char *const names[48] = {
	N8("tick "), N8("rx "), N8("tx "), N8("dma "), N8("irq "), N8("adc "),
};

static const rtprof_marker_type *packet;
static rtprof_counter *queue, *sent;
static long nmarkers;

static void
workload(int id)
{
	char note[64];

	for (long i = 0; i < nmarkers; i++) {
		rtprof_rec r;
		int len;

		if (i % 16 == 0)
			rtprof_begin("burst", RTPROF_CAT_IO);
		len = snprintf(note, sizeof(note), "thread %d packet %ld%s", id,
		    i, i % 5 == 0 ? " (retry)" : "");
		if (rtprof_marker_open(&r, packet, RTPROF_PHASE_INSTANT,
		    rtprof_now(), 0)) {
			rtprof_put_i64(&r, i);
			rtprof_put_u64(&r, (uint64_t)(64 + i % 1024));
			rtprof_put_f64(&r, (double)(i % 100) / 100.0);
			rtprof_put_str(&r, note, (size_t)len);
			rtprof_marker_close(&r);
		}
		if (i % 8 == 0)
			rtprof_mark(names[(i / 8) % 48], RTPROF_CAT_USER);
		if (i % 4 == 0)
			rtprof_counter_set(queue, i % 32);
		rtprof_counter_add(sent, 64 + i % 1024);
		if (i % 16 == 15)
			rtprof_end("burst", RTPROF_CAT_IO);
	}
}

static void *
worker(void *arg)
{
	(void)arg;
	RTPROF_CHECK_EQ(rtprof_thread_register("worker", 0), 0);
	workload(2);
	RTPROF_CHECK_EQ(rtprof_thread_unregister(), 0);
	return NULL;
}

int
main(int argc, char **argv)
{
	static const struct rtprof_marker_schema schema = {
		.name = "Packet",
		.category = RTPROF_CAT_NETWORK,
		.display = RTPROF_DISPLAY_MARKER_CHART |
		    RTPROF_DISPLAY_MARKER_TABLE,
		.tooltip_label = "Packet {marker.data.seq}",
		.table_label = "{marker.data.note}",
		.nfields = 4,
		.fields = {
			{ "seq", "Sequence", "integer", RTPROF_FIELD_I64 },
			{ "size", "Size", "bytes", RTPROF_FIELD_U64 },
			{ "load", "Load", "percentage", RTPROF_FIELD_F64 },
			{ "note", "Note", "string", RTPROF_FIELD_STR },
		},
	};
	struct rtprof_settings s;
	pthread_t w;
	char *end;
	int fd;

	if (argc != 3 || (nmarkers = strtol(argv[2], &end, 10)) <= 0 ||
	    *end != '\0') {
		fprintf(stderr, "usage: capture_rec DUMP N\n");
		return 2;
	}
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	RTPROF_CHECK(fd >= 0);
	RTPROF_CHECK_EQ(rtprof_thread_register("main", RTPROF_THREAD_MAIN), 0);
	packet = rtprof_marker_type_declare(&schema);
	queue = rtprof_counter_declare("queue", "Link", "frames queued");
	sent = rtprof_counter_declare("sent", "Link", "bytes sent");
	RTPROF_CHECK(packet != NULL && queue != NULL && sent != NULL);

	memset(&s, 0, sizeof(s));
	s.struct_size = sizeof(s);
	s.fd = fd;
	s.chunk_size = 4096;
	s.prefill = 200;        /* the whole workload: nothing dropped */
	s.sample_interval_us = RTPROF_SAMPLING_OFF;
	RTPROF_CHECK_EQ(rtprof_session_start(&s), 0);
	RTPROF_CHECK_EQ(pthread_create(&w, NULL, worker, NULL), 0);
	workload(1);
	RTPROF_CHECK_EQ(pthread_join(w, NULL), 0);
	RTPROF_CHECK_EQ(rtprof_session_stop(), 0);
	close(fd);
	return 0;
}
