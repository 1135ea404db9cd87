/*
 * test_dump_reader.c - codec/dump_reader.c against dumps built in memory.
 *
 * Frames are built with msgpack-c's packer, rtprof_frame_hdr_encode() and
 * rtprof_crc32c(), then damaged in the ways docs/wire-format.md names (flipped
 * bits, garbage, truncation, repeats, newer versions, hostile counts). Every
 * callback appends one canonical line to a log; a test compares the log with
 * the expected text and the damage reports with the expected list, printing
 * both sides on mismatch. Needs nothing from rt/ or core/.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* fileno() */
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "dump_reader.h"
#include "frame.h"

/* Under ASan, any single allocation above 256 MiB aborts the test: a
 * hostile count reaching msgpack-c would allocate gigabytes. */
#if defined(__SANITIZE_ADDRESS__)
#define TDR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TDR_ASAN 1
#endif
#endif
#ifdef TDR_ASAN
const char *__asan_default_options(void);

/* ASan's hook for default options. Context: before main(), one thread. */
const char *
__asan_default_options(void)
{
	return "max_allocation_size_mb=256";
}
#endif

#define READ_PIECE_FOR_TEST (1u << 20) /* rtprof_dump_read_mem()'s piece */

static int failures;

#define CHECK_EQ(got, want)                                                    \
	do {                                                                   \
		unsigned long long g_ = (unsigned long long)(got);             \
		unsigned long long w_ = (unsigned long long)(want);            \
		if (g_ != w_) {                                                \
			fprintf(stderr, "%s:%d: %s: got %llu (%#llx), want "   \
			    "%llu (%#llx)\n", __FILE__, __LINE__, #got, g_,    \
			    g_, w_, w_);                                       \
			failures++;                                            \
		}                                                              \
	} while (0)

#define CHECK_STR(got, want) check_str(__FILE__, __LINE__, #got, got, want)

static void
check_str(const char *file, int line, const char *what, const char *got,
    const char *want)
{
	size_t i = 0, ln = 1;

	if (strcmp(got, want) == 0)
		return;
	while (got[i] && got[i] == want[i]) {
		if (got[i] == '\n')
			ln++;
		i++;
	}
	fprintf(stderr, "%s:%d: %s differs at log line %zu\n--- got:\n%s--- "
	    "want:\n%s---\n", file, line, what, ln, got, want);
	failures++;
}

/* ------------------------------------------------------------------ */
/* Growing byte buffers and frames.                                   */

struct buf {
	unsigned char *p;
	size_t n;
	size_t cap;
};

static void
buf_put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;

		while (cap < b->n + n)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (b->p == NULL)
			abort();
		b->cap = cap;
	}
	if (n != 0)
		memcpy(b->p + b->n, p, n);
	b->n += n;
}

/* Insert @n bytes at @at. */
static void
buf_insert(struct buf *b, size_t at, const void *p, size_t n)
{
	size_t tail = b->n - at;

	buf_put(b, p, n); /* grow */
	memmove(b->p + at + n, b->p + at, tail);
	memcpy(b->p + at, p, n);
}

static void
buf_cut(struct buf *b, size_t at, size_t n)
{
	memmove(b->p + at, b->p + at + n, b->n - at - n);
	b->n -= n;
}

static void
buf_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* Where each frame went, to damage it afterwards. */
struct layout {
	size_t off[64];
	size_t size[64];
	int n;
};

static void
put_frame(struct buf *b, struct layout *lay, uint8_t kind, uint8_t version,
    uint32_t session, uint32_t seq, const void *payload, size_t len)
{
	struct rtprof_frame_hdr h = {
		.kind = kind, .version = version, .session = session,
		.seq = seq, .len = (uint32_t)len,
	};
	unsigned char hdr[RTPROF_FRAME_HEADER_SIZE], crc[4];

	if (lay != NULL && lay->n < 64) {
		lay->off[lay->n] = b->n;
		lay->size[lay->n] = RTPROF_FRAME_OVERHEAD + len;
		lay->n++;
	}
	rtprof_frame_hdr_encode(hdr, &h);
	rtprof_put_le32(crc, rtprof_crc32c(0, payload, len));
	buf_put(b, hdr, sizeof(hdr));
	buf_put(b, payload, len);
	buf_put(b, crc, sizeof(crc));
}

/* A packer whose buffer is reset for every payload. */
struct pk {
	msgpack_sbuffer sb;
	msgpack_packer pk;
};

static void
pk_init(struct pk *p)
{
	msgpack_sbuffer_init(&p->sb);
	msgpack_packer_init(&p->pk, &p->sb, msgpack_sbuffer_write);
}

static void
pk_str(struct pk *p, const char *s)
{
	msgpack_pack_str_with_body(&p->pk, s, strlen(s));
}

static void
pk_raw(struct pk *p, const void *s, size_t n)
{
	msgpack_sbuffer_write(&p->sb, s, n);
}

/* The recorder's fixed-width encodings. */
static void
pk_strref(struct pk *p, uint64_t ref)
{
	unsigned char be[8];

	for (int i = 0; i < 8; i++)
		be[i] = (unsigned char)(ref >> (56 - 8 * i));
	msgpack_pack_ext(&p->pk, 8, RTPROF_EXT_STRREF);
	msgpack_pack_ext_body(&p->pk, be, 8);
}

static void
pk_str8(struct pk *p, const char *s)
{
	unsigned char h[2] = { 0xd9, (unsigned char)strlen(s) };

	pk_raw(p, h, 2);
	pk_raw(p, s, strlen(s));
}

static void
pk_emit(struct pk *p, struct buf *b, struct layout *lay, uint8_t kind,
    uint32_t session, uint32_t *seq)
{
	put_frame(b, lay, kind, RTPROF_WIRE_VERSION, session, (*seq)++,
	    p->sb.data, p->sb.size);
	msgpack_sbuffer_clear(&p->sb);
}

/* ------------------------------------------------------------------ */
/* A full session: every frame kind, every record kind.               */

#define REF_TICK 0x5555000010ull
#define REF_RENDER 0x5555000020ull

static void
build_session(struct buf *b, struct layout *lay, uint32_t sid)
{
	static const char *const cats[3][2] = {
		{ "Other", "grey" }, { "Idle", "transparent" },
		{ "Audio", "orange" },
	};
	struct pk p;
	msgpack_packer *k = &p.pk;
	uint32_t seq = 0;

	pk_init(&p);

	/* HEADER, with integers in assorted widths and an unknown key. */
	msgpack_pack_map(k, 13);
	pk_str(&p, "format"); msgpack_pack_uint8(k, 1);
	pk_str(&p, "session"); msgpack_pack_fix_uint32(k, sid);
	pk_str(&p, "generation"); msgpack_pack_fix_uint64(k, 1);
	pk_str(&p, "pid"); msgpack_pack_fix_int32(k, 4242);
	pk_str(&p, "ppid"); msgpack_pack_fix_uint8(k, 1);
	pk_str(&p, "process"); pk_str(&p, "demo");
	pk_str(&p, "exe"); pk_str(&p, "/usr/bin/demo");
	pk_str(&p, "cmdline");
	msgpack_pack_array(k, 2); pk_str(&p, "demo"); pk_str(&p, "--fast");
	pk_str(&p, "machine");
	msgpack_pack_map(k, 5);
	pk_str(&p, "sysname"); pk_str(&p, "Linux");
	pk_str(&p, "release"); pk_str(&p, "6.1.0");
	pk_str(&p, "machine"); pk_str(&p, "x86_64");
	pk_str(&p, "hostname"); pk_str(&p, "box");
	pk_str(&p, "cpus"); msgpack_pack_fix_int16(k, 8);
	pk_str(&p, "clock");
	msgpack_pack_map(k, 5);
	pk_str(&p, "source"); pk_str(&p, "tsc");
	pk_str(&p, "ticks_per_second"); msgpack_pack_double(k, 3e9);
	pk_str(&p, "start_ticks"); msgpack_pack_uint64(k, 1000000);
	pk_str(&p, "start_mono_ns"); msgpack_pack_fix_int64(k, 5000000000);
	pk_str(&p, "start_wall_ns");
	msgpack_pack_int64(k, 1700000000000000000);
	pk_str(&p, "settings");
	msgpack_pack_map(k, 7);
	pk_str(&p, "mode"); pk_str(&p, "stream");
	pk_str(&p, "memory_limit"); msgpack_pack_uint64(k, 16777216);
	pk_str(&p, "chunk_size"); msgpack_pack_uint32(k, 65536);
	pk_str(&p, "prefill"); msgpack_pack_int8(k, 4);
	pk_str(&p, "max_bytes"); msgpack_pack_uint8(k, 0);
	pk_str(&p, "flush_interval_us"); msgpack_pack_uint32(k, 100000);
	pk_str(&p, "sample_interval_us"); msgpack_pack_int16(k, 1000);
	pk_str(&p, "categories");
	msgpack_pack_array(k, 3);
	for (int i = 0; i < 3; i++) {
		msgpack_pack_array(k, 2);
		pk_str(&p, cats[i][0]);
		pk_str(&p, cats[i][1]);
	}
	pk_str(&p, "future");
	msgpack_pack_map(k, 1);
	pk_str(&p, "x");
	msgpack_pack_array(k, 2); msgpack_pack_nil(k); msgpack_pack_true(k);
	pk_emit(&p, b, lay, RTPROF_FRAME_HEADER, sid, &seq);

	/* MODULES */
	msgpack_pack_array(k, 2);
	msgpack_pack_array(k, 5);
	pk_str(&p, "/usr/bin/demo");
	msgpack_pack_uint64(k, 0x400000); msgpack_pack_uint64(k, 0x401000);
	msgpack_pack_uint64(k, 0);
	msgpack_pack_bin_with_body(k, "\xde\xad\xbe\xef", 4);
	msgpack_pack_array(k, 6);
	pk_str(&p, "/lib/libc.so.6");
	msgpack_pack_uint64(k, 0x7f0000000000);
	msgpack_pack_uint64(k, 0x7f0000200000);
	msgpack_pack_uint64(k, 0x1000);
	msgpack_pack_bin(k, 0);
	pk_str(&p, "an element from the future");
	pk_emit(&p, b, lay, RTPROF_FRAME_MODULES, sid, &seq);

	/* THREAD x2 */
	msgpack_pack_map(k, 5);
	pk_str(&p, "tid"); msgpack_pack_int32(k, 4242);
	pk_str(&p, "name"); pk_str(&p, "main");
	pk_str(&p, "flags"); msgpack_pack_uint8(k, 2);
	pk_str(&p, "register_ticks"); msgpack_pack_uint64(k, 1000100);
	pk_str(&p, "unregister_ticks"); msgpack_pack_nil(k);
	pk_emit(&p, b, lay, RTPROF_FRAME_THREAD, sid, &seq);
	msgpack_pack_map(k, 7);
	pk_str(&p, "extra"); msgpack_pack_true(k);
	pk_str(&p, "tid"); msgpack_pack_fix_int64(k, 4243);
	pk_str(&p, "name"); pk_str(&p, "audio");
	pk_str(&p, "flags"); msgpack_pack_uint8(k, 1);
	pk_str(&p, "register_ticks"); msgpack_pack_uint64(k, 1000200);
	pk_str(&p, "unregister_ticks"); msgpack_pack_fix_uint64(k, 1900000);
	/* Final counts of the exited thread, with a count from the future. */
	pk_str(&p, "totals"); msgpack_pack_array(k, 5);
	msgpack_pack_uint64(k, 77); msgpack_pack_uint64(k, 3);
	msgpack_pack_uint64(k, 2); msgpack_pack_uint64(k, 1);
	msgpack_pack_uint64(k, 999);
	pk_emit(&p, b, lay, RTPROF_FRAME_THREAD, sid, &seq);

	/* SCHEMA with one field of each kind */
	msgpack_pack_map(k, 8);
	pk_str(&p, "id"); msgpack_pack_uint16(k, 1);
	pk_str(&p, "name"); pk_str(&p, "Load");
	pk_str(&p, "category"); msgpack_pack_uint8(k, 4);
	pk_str(&p, "display"); msgpack_pack_uint8(k, 3);
	pk_str(&p, "tooltip"); pk_str(&p, "Load {marker.data.a}");
	pk_str(&p, "table"); msgpack_pack_nil(k);
	pk_str(&p, "chart"); pk_str(&p, "Load");
	pk_str(&p, "fields");
	msgpack_pack_array(k, 5);
	{
		static const char *const f[5][3] = {
			{ "a", "A", "integer" }, { "b", "B", "bytes" },
			{ "c", "C", "percentage" }, { "d", "D", "string" },
			{ "e", "E", "string" },
		};

		for (int i = 0; i < 5; i++) {
			msgpack_pack_array(k, 4);
			pk_str(&p, f[i][0]);
			pk_str(&p, f[i][1]);
			pk_str(&p, f[i][2]);
			msgpack_pack_uint8(k, (uint8_t)(i + 1));
		}
	}
	pk_emit(&p, b, lay, RTPROF_FRAME_SCHEMA, sid, &seq);

	/* COUNTER */
	msgpack_pack_map(k, 4);
	pk_str(&p, "id"); msgpack_pack_uint16(k, 3);
	pk_str(&p, "name"); pk_str(&p, "queue");
	pk_str(&p, "category"); pk_str(&p, "Memory");
	pk_str(&p, "description"); pk_str(&p, "queue depth");
	pk_emit(&p, b, lay, RTPROF_FRAME_COUNTER, sid, &seq);

	/* STRING x2, the second holding a NUL byte */
	msgpack_pack_array(k, 2);
	msgpack_pack_uint64(k, REF_TICK);
	pk_str(&p, "tick");
	pk_emit(&p, b, lay, RTPROF_FRAME_STRING, sid, &seq);
	msgpack_pack_array(k, 2);
	msgpack_pack_uint64(k, REF_RENDER);
	msgpack_pack_str_with_body(k, "x\0y", 3);
	pk_emit(&p, b, lay, RTPROF_FRAME_STRING, sid, &seq);

	/* DATA in the recorder's fixed-width subset: every record kind. */
	msgpack_pack_array(k, 10);
	msgpack_pack_int32(k, 4242); msgpack_pack_uint8(k, 1);
	msgpack_pack_uint8(k, 0); msgpack_pack_uint8(k, 0);
	msgpack_pack_uint8(k, 0); msgpack_pack_uint8(k, 9);
	msgpack_pack_uint64(k, 1000500); msgpack_pack_uint64(k, 1000900);
	msgpack_pack_uint8(k, 2); msgpack_pack_uint8(k, 1);
	for (uint8_t kind = 1; kind <= 3; kind++) {
		msgpack_pack_array(k, 4);
		msgpack_pack_uint8(k, kind);
		msgpack_pack_fix_uint64(k, 1000500 + 10u * (kind - 1u));
		pk_strref(&p, kind == 1 ? REF_TICK : REF_RENDER);
		msgpack_pack_uint8(k, kind == 1 ? 4 : 6);
	}
	msgpack_pack_array(k, 5);
	msgpack_pack_uint8(k, 4);
	msgpack_pack_fix_uint64(k, 1000530);
	msgpack_pack_fix_uint64(k, 1000540);
	pk_strref(&p, REF_TICK);
	msgpack_pack_uint8(k, 7);
	msgpack_pack_array(k, 10);
	msgpack_pack_uint8(k, 5);
	msgpack_pack_uint8(k, 1);
	msgpack_pack_fix_uint64(k, 1000550);
	msgpack_pack_fix_uint64(k, 1000560);
	msgpack_pack_fix_uint16(k, 1);
	msgpack_pack_fix_int64(k, -7);
	msgpack_pack_fix_uint64(k, UINT64_MAX);
	msgpack_pack_double(k, 0.25);
	pk_strref(&p, REF_TICK);
	pk_str8(&p, "hello");
	msgpack_pack_array(k, 10);
	msgpack_pack_uint8(k, 5);
	msgpack_pack_uint8(k, 0);
	msgpack_pack_fix_uint64(k, 1000570);
	msgpack_pack_fix_uint64(k, 0);
	msgpack_pack_fix_uint16(k, 1);
	msgpack_pack_fix_int64(k, 5);
	msgpack_pack_fix_uint64(k, 6);
	msgpack_pack_double(k, -1.5);
	pk_strref(&p, REF_RENDER);
	pk_str8(&p, "");
	msgpack_pack_array(k, 4);
	msgpack_pack_uint8(k, 6);
	msgpack_pack_fix_uint64(k, 1000580);
	msgpack_pack_fix_uint16(k, 3);
	msgpack_pack_fix_int64(k, -12);
	msgpack_pack_array(k, 2);
	msgpack_pack_uint8(k, 7);
	msgpack_pack_fix_uint64(k, 1000590);
	msgpack_pack_array(k, 2);
	msgpack_pack_uint8(k, 8);
	msgpack_pack_fix_uint64(k, 1000600);
	pk_emit(&p, b, lay, RTPROF_FRAME_DATA, sid, &seq);

	/* DATA in other msgpack encodings of the same values. */
	msgpack_pack_array(k, 10);
	msgpack_pack_fix_int64(k, 4243); msgpack_pack_fix_uint64(k, 1);
	msgpack_pack_fix_uint64(k, 0); msgpack_pack_fix_uint64(k, 0);
	msgpack_pack_fix_uint64(k, 0); msgpack_pack_fix_uint64(k, 3);
	msgpack_pack_fix_uint64(k, 1000700); msgpack_pack_fix_uint64(k, 1000720);
	msgpack_pack_fix_uint64(k, 0); msgpack_pack_fix_uint64(k, 0);
	msgpack_pack_array(k, 4);
	msgpack_pack_fix_uint8(k, 1);
	msgpack_pack_uint64(k, 1000700);
	pk_raw(&p, "\xc7\x08\x01\x00\x00\x00\x55\x55\x00\x00\x10", 11);
	msgpack_pack_fix_uint16(k, 7);
	pk_raw(&p, "\xdc\x00\x05", 3); /* typed begin, no fields, array 16 */
	msgpack_pack_uint8(k, 5);
	msgpack_pack_fix_int8(k, 2);
	msgpack_pack_uint64(k, 1000710);
	msgpack_pack_uint64(k, 0);
	msgpack_pack_uint16(k, 1);
	msgpack_pack_array(k, 4);
	msgpack_pack_uint8(k, 6);
	msgpack_pack_uint64(k, 1000720);
	msgpack_pack_uint8(k, 3);
	msgpack_pack_int64(k, 100);
	pk_emit(&p, b, lay, RTPROF_FRAME_DATA, sid, &seq);

	/* PAUSE, VALUES, EVENT x2 */
	msgpack_pack_array(k, 2);
	msgpack_pack_uint64(k, 1000610); msgpack_pack_uint64(k, 1000650);
	pk_emit(&p, b, lay, RTPROF_FRAME_PAUSE, sid, &seq);
	msgpack_pack_array(k, 2);
	msgpack_pack_uint64(k, 1000660);
	msgpack_pack_array(k, 2);
	msgpack_pack_array(k, 2);
	msgpack_pack_uint16(k, RTPROF_COUNTER_SELF_MEMORY);
	msgpack_pack_int64(k, 123456);
	msgpack_pack_array(k, 2);
	msgpack_pack_uint16(k, 3);
	msgpack_pack_int64(k, -5);
	pk_emit(&p, b, lay, RTPROF_FRAME_VALUES, sid, &seq);
	msgpack_pack_map(k, 4);
	pk_str(&p, "ticks"); msgpack_pack_uint64(k, 1000670);
	pk_str(&p, "what"); pk_str(&p, "sink_error");
	pk_str(&p, "errno"); msgpack_pack_int(k, 32);
	pk_str(&p, "message"); pk_str(&p, "Broken pipe");
	pk_emit(&p, b, lay, RTPROF_FRAME_EVENT, sid, &seq);
	msgpack_pack_map(k, 3);
	pk_str(&p, "ticks"); msgpack_pack_uint64(k, 1000680);
	pk_str(&p, "what"); pk_str(&p, "limit_reached");
	pk_str(&p, "max_bytes"); msgpack_pack_uint64(k, 1048576);
	pk_emit(&p, b, lay, RTPROF_FRAME_EVENT, sid, &seq);

	/* TRAILER */
	msgpack_pack_map(k, 10);
	pk_str(&p, "stop_ticks"); msgpack_pack_uint64(k, 2000000);
	pk_str(&p, "stop_mono_ns"); msgpack_pack_int64(k, 5333333333);
	pk_str(&p, "stop_wall_ns");
	msgpack_pack_int64(k, 1700000000333333333);
	pk_str(&p, "frames"); msgpack_pack_uint8(k, 14);
	pk_str(&p, "bytes"); msgpack_pack_uint16(k, 1234);
	pk_str(&p, "chunks_lost"); msgpack_pack_uint8(k, 0);
	pk_str(&p, "samples_lost"); msgpack_pack_uint16(k, 321);
	pk_str(&p, "limit_reached"); msgpack_pack_false(k);
	pk_str(&p, "threads_omitted"); msgpack_pack_uint8(k, 5);
	pk_str(&p, "threads");
	msgpack_pack_array(k, 2);
	msgpack_pack_array(k, 5);
	msgpack_pack_int(k, 4242); msgpack_pack_int(k, 9);
	msgpack_pack_int(k, 2); msgpack_pack_int(k, 1); msgpack_pack_int(k, 0);
	msgpack_pack_array(k, 5);
	msgpack_pack_int(k, 4243); msgpack_pack_int(k, 3);
	msgpack_pack_int(k, 0); msgpack_pack_int(k, 0); msgpack_pack_int(k, 0);
	pk_emit(&p, b, lay, RTPROF_FRAME_TRAILER, sid, &seq);

	msgpack_sbuffer_destroy(&p.sb);
}

#define SESSION_FRAMES 15
#define SESSION_RECORDS 12

/* What the log of one session must read; {I} is the session index. */
static const char session_log[] =
"frame {I} HEADER\n"
"header format=1 session={S} gen=1 pid=4242 ppid=1 process=demo "
    "exe=/usr/bin/demo argv=[demo,--fast] machine=Linux/6.1.0/x86_64/box/8 "
    "clock=tsc/3000000000/1000000/5000000000/1700000000000000000 "
    "settings=stream/16777216/65536/4/0/100000/1000 "
    "cats=[Other:grey,Idle:transparent,Audio:orange]\n"
"frame {I} MODULES\n"
"modules 2 [/usr/bin/demo 400000-401000+0 id=deadbeef,"
    "/lib/libc.so.6 7f0000000000-7f0000200000+1000 id=-]\n"
"frame {I} THREAD\n"
"thread 4242 main flags=2 reg=1000100 unreg=-\n"
"frame {I} THREAD\n"
"thread 4243 audio flags=1 reg=1000200 unreg=1900000 "
    "totals=4243:77/3/2/1\n"
"frame {I} SCHEMA\n"
"schema 1 Load cat=4 display=3 tooltip=Load {marker.data.a} table=(nil) "
    "chart=Load fields=[a/A/integer/1,b/B/bytes/2,c/C/percentage/3,"
    "d/D/string/4,e/E/string/5]\n"
"frame {I} COUNTER\n"
"counter 3 queue cat=Memory desc=queue depth\n"
"frame {I} STRING\n"
"string 5555000010 len=4 tick\n"
"frame {I} STRING\n"
"string 5555000020 len=3 x\\0y\n"
"frame {I} DATA\n"
"data tid=4242 gen=1 chunk=0 off=0 idx=0 nrec=9 ticks=1000500..1000900 "
    "drop=2/1\n"
"rec 4242 instant ph=0 t=1000500..1000500 name=5555000010 cat=4 id=0 val=0 "
    "vals=[]\n"
"rec 4242 begin ph=0 t=1000510..1000510 name=5555000020 cat=6 id=0 val=0 "
    "vals=[]\n"
"rec 4242 end ph=0 t=1000520..1000520 name=5555000020 cat=6 id=0 val=0 "
    "vals=[]\n"
"rec 4242 interval ph=0 t=1000530..1000540 name=5555000010 cat=7 id=0 "
    "val=0 vals=[]\n"
"rec 4242 typed ph=1 t=1000550..1000560 name=0 cat=0 id=1 val=0 "
    "vals=[i:-7,u:18446744073709551615,f:0.25,r:5555000010,s:hello]\n"
"rec 4242 typed ph=0 t=1000570..1000570 name=0 cat=0 id=1 val=0 "
    "vals=[i:5,u:6,f:-1.5,r:5555000020,s:]\n"
"rec 4242 counter ph=0 t=1000580..1000580 name=0 cat=0 id=3 val=-12 "
    "vals=[]\n"
"rec 4242 sleep ph=0 t=1000590..1000590 name=0 cat=0 id=0 val=0 vals=[]\n"
"rec 4242 wake ph=0 t=1000600..1000600 name=0 cat=0 id=0 val=0 vals=[]\n"
"frame {I} DATA\n"
"data tid=4243 gen=1 chunk=0 off=0 idx=0 nrec=3 ticks=1000700..1000720 "
    "drop=0/0\n"
"rec 4243 instant ph=0 t=1000700..1000700 name=5555000010 cat=7 id=0 val=0 "
    "vals=[]\n"
"rec 4243 typed ph=2 t=1000710..1000710 name=0 cat=0 id=1 val=0 vals=[]\n"
"rec 4243 counter ph=0 t=1000720..1000720 name=0 cat=0 id=3 val=100 "
    "vals=[]\n"
"frame {I} PAUSE\n"
"pause 1000610..1000650\n"
"frame {I} VALUES\n"
"values 1000660 [65535=123456,3=-5]\n"
"frame {I} EVENT\n"
"event 1000670 sink_error errno=32 msg=Broken pipe max=-\n"
"frame {I} EVENT\n"
"event 1000680 limit_reached errno=- msg=(nil) max=1048576\n"
"frame {I} TRAILER\n"
"trailer stop=2000000/5333333333/1700000000333333333 frames=14 bytes=1234 "
    "lost=0 samples_lost=321 limit=0 omitted=5 "
    "threads=[4242:9/2/1/0,4243:3/0/0/0]\n";

/* ------------------------------------------------------------------ */
/* The log that the callbacks write.                                  */

#define MAX_DAMAGE 32

struct log {
	struct buf text;
	struct rtprof_dump_damage dmg[MAX_DAMAGE];
	int ndmg;
	int abort_on_thread;    /* return this from on_thread */
	unsigned long long frames_seen;
};

static void
logf_(struct log *l, const char *fmt, ...)
{
	char tmp[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	buf_put(&l->text, tmp, (size_t)n < sizeof(tmp) ? (size_t)n :
	    sizeof(tmp) - 1);
}

static void
log_bytes(struct log *l, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\0')
			logf_(l, "\\0");
		else
			buf_put(&l->text, &s[i], 1);
	}
}

static int
cb_frame(void *ctx, const struct rtprof_dump_frame *f)
{
	struct log *l = ctx;
	const char *name = rtprof_dump_frame_kind_name(f->kind);

	l->frames_seen++;
	if (name != NULL)
		logf_(l, "frame %" PRIu64 " %s\n", f->session_index, name);
	else
		logf_(l, "frame %" PRIu64 " #%u\n", f->session_index, f->kind);
	return 0;
}

static int
cb_header(void *ctx, const struct rtprof_dump_header *h)
{
	struct log *l = ctx;

	logf_(l, "header format=%" PRId64 " session=%08x gen=%" PRIu64
	    " pid=%" PRId64 " ppid=%" PRId64 " process=%s exe=%s argv=[",
	    h->format, h->session, h->generation, h->pid, h->ppid, h->process,
	    h->exe);
	for (uint32_t i = 0; i < h->argc; i++)
		logf_(l, "%s%s", i ? "," : "", h->argv[i]);
	if (h->argv[h->argc] != NULL)
		logf_(l, "(argv not NULL-terminated)");
	logf_(l, "] machine=%s/%s/%s/%s/%" PRId64, h->machine.sysname,
	    h->machine.release, h->machine.machine, h->machine.hostname,
	    h->machine.cpus);
	logf_(l, " clock=%s/%.17g/%" PRIu64 "/%" PRId64 "/%" PRId64,
	    h->clock.source, h->clock.ticks_per_second, h->clock.start_ticks,
	    h->clock.start_mono_ns, h->clock.start_wall_ns);
	logf_(l, " settings=%s/%" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64
	    "/%" PRIu64 "/%" PRIu64, h->settings.mode,
	    h->settings.memory_limit, h->settings.chunk_size,
	    h->settings.prefill, h->settings.max_bytes,
	    h->settings.flush_interval_us, h->settings.sample_interval_us);
	logf_(l, " cats=[");
	for (uint32_t i = 0; i < h->ncategories; i++)
		logf_(l, "%s%s:%s", i ? "," : "", h->category_names[i],
		    h->category_colors[i]);
	logf_(l, "]\n");
	return 0;
}

static int
cb_modules(void *ctx, const struct rtprof_dump_module *m, size_t n)
{
	struct log *l = ctx;

	logf_(l, "modules %zu [", n);
	for (size_t i = 0; i < n; i++) {
		logf_(l, "%s%s %" PRIx64 "-%" PRIx64 "+%" PRIx64 " id=",
		    i ? "," : "", m[i].path, m[i].start, m[i].end,
		    m[i].offset);
		if (m[i].build_id_len == 0)
			logf_(l, "-");
		for (size_t j = 0; j < m[i].build_id_len; j++)
			logf_(l, "%02x", m[i].build_id[j]);
	}
	logf_(l, "]\n");
	return 0;
}

static int
cb_thread(void *ctx, const struct rtprof_dump_thread *t)
{
	struct log *l = ctx;

	logf_(l, "thread %" PRId64 " %s flags=%" PRIu64 " reg=%" PRIu64,
	    t->tid, t->name, t->flags, t->register_ticks);
	if (t->has_unregister)
		logf_(l, " unreg=%" PRIu64, t->unregister_ticks);
	else
		logf_(l, " unreg=-");
	if (t->has_totals)
		logf_(l, " totals=%" PRId64 ":%" PRIu64 "/%" PRIu64 "/%" PRIu64
		    "/%" PRIu64, t->totals.tid, t->totals.recorded,
		    t->totals.dropped_full, t->totals.dropped_nested,
		    t->totals.recycled);
	logf_(l, "\n");
	return l->abort_on_thread;
}

static int
cb_schema(void *ctx, const struct rtprof_dump_schema *s)
{
	struct log *l = ctx;

	logf_(l, "schema %u %s cat=%u display=%" PRIu64 " tooltip=%s "
	    "table=%s chart=%s fields=[", s->id, s->name, s->category,
	    s->display, s->tooltip ? s->tooltip : "(nil)",
	    s->table ? s->table : "(nil)", s->chart ? s->chart : "(nil)");
	for (uint32_t i = 0; i < s->nfields; i++)
		logf_(l, "%s%s/%s/%s/%u", i ? "," : "", s->fields[i].key,
		    s->fields[i].label, s->fields[i].format,
		    s->fields[i].kind);
	logf_(l, "]\n");
	return 0;
}

static int
cb_counter(void *ctx, const struct rtprof_dump_counter *c)
{
	struct log *l = ctx;

	logf_(l, "counter %u %s cat=%s desc=%s\n", c->id, c->name,
	    c->category, c->description);
	return 0;
}

static int
cb_string(void *ctx, uint64_t ref, const char *text, size_t len)
{
	struct log *l = ctx;

	logf_(l, "string %" PRIx64 " len=%zu ", ref, len);
	log_bytes(l, text, len);
	if (text[len] != '\0')
		logf_(l, "(not NUL-terminated)");
	logf_(l, "\n");
	return 0;
}

static int
cb_data(void *ctx, const struct rtprof_dump_data *d)
{
	struct log *l = ctx;

	logf_(l, "data tid=%" PRId64 " gen=%" PRIu64 " chunk=%" PRIu64
	    " off=%" PRIu64 " idx=%" PRIu64 " nrec=%" PRIu64 " ticks=%" PRIu64
	    "..%" PRIu64 " drop=%" PRIu64 "/%" PRIu64 "\n", d->tid,
	    d->generation, d->chunk_seq, d->byte_offset, d->record_index,
	    d->nrec, d->first_ticks, d->last_ticks, d->dropped_full,
	    d->dropped_nested);
	return 0;
}

static int
cb_record(void *ctx, const struct rtprof_dump_data *d,
    const struct rtprof_rec_view *r)
{
	struct log *l = ctx;

	logf_(l, "rec %" PRId64 " %s ph=%u t=%" PRIu64 "..%" PRIu64
	    " name=%" PRIx64 " cat=%u id=%u val=%" PRId64 " vals=[", d->tid,
	    rtprof_dump_rec_kind_name(r->kind), r->phase, r->t0, r->t1,
	    r->name, r->category, r->id, r->value);
	for (unsigned i = 0; i < r->nvals; i++) {
		const struct rtprof_val *v = &r->vals[i];

		logf_(l, "%s", i ? "," : "");
		switch (v->kind) {
		case RTPROF_VAL_I64: logf_(l, "i:%" PRId64, v->v.i); break;
		case RTPROF_VAL_U64: logf_(l, "u:%" PRIu64, v->v.u); break;
		case RTPROF_VAL_F64: logf_(l, "f:%.17g", v->v.d); break;
		case RTPROF_VAL_STRREF:
			logf_(l, "r:%" PRIx64, v->v.ref);
			break;
		case RTPROF_VAL_STR:
			logf_(l, "s:");
			log_bytes(l, v->v.str.p, v->v.str.n);
			break;
		}
	}
	logf_(l, "]\n");
	return 0;
}

static int
cb_pause(void *ctx, uint64_t t0, uint64_t t1)
{
	logf_(ctx, "pause %" PRIu64 "..%" PRIu64 "\n", t0, t1);
	return 0;
}

static int
cb_values(void *ctx, uint64_t ticks, size_t n, const uint32_t *ids,
    const int64_t *values)
{
	struct log *l = ctx;

	logf_(l, "values %" PRIu64 " [", ticks);
	for (size_t i = 0; i < n; i++)
		logf_(l, "%s%u=%" PRId64, i ? "," : "", ids[i], values[i]);
	logf_(l, "]\n");
	return 0;
}

static int
cb_event(void *ctx, const struct rtprof_dump_event *e)
{
	struct log *l = ctx;

	logf_(l, "event %" PRIu64 " %s errno=", e->ticks, e->what);
	if (e->has_errno)
		logf_(l, "%" PRId64, e->errnum);
	else
		logf_(l, "-");
	logf_(l, " msg=%s max=", e->message ? e->message : "(nil)");
	if (e->has_max_bytes)
		logf_(l, "%" PRIu64 "\n", e->max_bytes);
	else
		logf_(l, "-\n");
	return 0;
}

static int
cb_trailer(void *ctx, const struct rtprof_dump_trailer *t)
{
	struct log *l = ctx;

	logf_(l, "trailer stop=%" PRIu64 "/%" PRId64 "/%" PRId64 " frames=%"
	    PRIu64 " bytes=%" PRIu64 " lost=%" PRIu64 " samples_lost=%" PRIu64
	    " limit=%d omitted=%" PRIu64 " threads=[", t->stop_ticks,
	    t->stop_mono_ns, t->stop_wall_ns, t->frames, t->bytes,
	    t->chunks_lost, t->samples_lost, (int)t->limit_reached,
	    t->threads_omitted);
	for (size_t i = 0; i < t->nthreads; i++)
		logf_(l, "%s%" PRId64 ":%" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%"
		    PRIu64, i ? "," : "", t->threads[i].tid,
		    t->threads[i].recorded, t->threads[i].dropped_full,
		    t->threads[i].dropped_nested, t->threads[i].recycled);
	logf_(l, "]\n");
	return 0;
}

static int
cb_damage(void *ctx, const struct rtprof_dump_damage *d)
{
	struct log *l = ctx;

	if (d->message == NULL || d->message[0] == '\0') {
		fprintf(stderr, "damage report without a message\n");
		failures++;
	}
	if (l->ndmg < MAX_DAMAGE)
		l->dmg[l->ndmg] = *d;
	l->ndmg++;
	return 0;
}

static const struct rtprof_dump_cb log_cb_template = {
	.on_frame = cb_frame,
	.on_header = cb_header,
	.on_modules = cb_modules,
	.on_thread = cb_thread,
	.on_schema = cb_schema,
	.on_counter = cb_counter,
	.on_string = cb_string,
	.on_data = cb_data,
	.on_record = cb_record,
	.on_pause = cb_pause,
	.on_values = cb_values,
	.on_event = cb_event,
	.on_trailer = cb_trailer,
	.on_damage = cb_damage,
};

/* Decode @b into @l (the log as a NUL-terminated string in l->text). */
static int
decode(const struct buf *b, struct log *l, struct rtprof_dump_stats *st)
{
	struct rtprof_dump_cb cb = log_cb_template;
	int rc;

	cb.ctx = l;
	rc = rtprof_dump_read_mem(b->p, b->n, &cb, st);
	buf_put(&l->text, "", 1);
	return rc;
}

static void
log_free(struct log *l)
{
	buf_free(&l->text);
	memset(l, 0, sizeof(*l));
}

/* ------------------------------------------------------------------ */
/* Expected text.                                                     */

/* session_log with {I} and {S} filled in, appended to @out. */
static void
expect_session(struct buf *out, unsigned idx, uint32_t sid)
{
	char is[16], ss[16];

	snprintf(is, sizeof(is), "%u", idx);
	snprintf(ss, sizeof(ss), "%08x", sid);
	for (const char *p = session_log; *p;) {
		if (strncmp(p, "{I}", 3) == 0) {
			buf_put(out, is, strlen(is));
			p += 3;
		} else if (strncmp(p, "{S}", 3) == 0) {
			buf_put(out, ss, strlen(ss));
			p += 3;
		} else {
			buf_put(out, p++, 1);
		}
	}
}

static void
expect_end(struct buf *out)
{
	buf_put(out, "", 1);
}

/* Remove the block of the @nth (0-based) frame from NUL-terminated @t. */
static void
drop_frame(struct buf *t, int nth)
{
	char *s = (char *)t->p, *p = s, *e;
	int i = -1;

	for (;;) {
		if (strncmp(p, "frame ", 6) == 0 && ++i == nth)
			break;
		p = strchr(p, '\n');
		if (p == NULL)
			abort();
		p++;
	}
	e = strchr(p, '\n') + 1;
	while (*e && strncmp(e, "frame ", 6) != 0)
		e = strchr(e, '\n') + 1;
	buf_cut(t, (size_t)(p - s), (size_t)(e - p));
}

static void
check_damage(int line, const struct log *l, int i,
    enum rtprof_damage_kind kind, uint64_t off, uint64_t len,
    uint64_t count)
{
	const struct rtprof_dump_damage *d;

	if (i >= l->ndmg || i >= MAX_DAMAGE) {
		fprintf(stderr, "%s:%d: damage #%d: got none (%d reports), "
		    "want %s at %" PRIu64 "\n", __FILE__, line, i, l->ndmg,
		    rtprof_dump_damage_name(kind), off);
		failures++;
		return;
	}
	d = &l->dmg[i];
	if (d->kind != kind || d->offset != off || d->length != len ||
	    d->count != count) {
		fprintf(stderr, "%s:%d: damage #%d: got %s off=%" PRIu64
		    " len=%" PRIu64 " count=%" PRIu64 " (%s), want %s off=%"
		    PRIu64 " len=%" PRIu64 " count=%" PRIu64 "\n", __FILE__,
		    line, i, rtprof_dump_damage_name(d->kind), d->offset,
		    d->length, d->count, d->message,
		    rtprof_dump_damage_name(kind), off, len, count);
		failures++;
	}
}

#define CHECK_DAMAGE(l, i, kind, off, len, count) \
	check_damage(__LINE__, l, i, kind, off, len, count)

#define SID1 0xa1b2c3d4u
#define SID2 0x0badf00du

/* ------------------------------------------------------------------ */
/* Tests.                                                             */

static void
test_crc(void)
{
	CHECK_EQ(rtprof_crc32c(0, "123456789", 9), 0xE3069283u);
	/* Incremental use gives the same value. */
	CHECK_EQ(rtprof_crc32c(rtprof_crc32c(0, "1234", 4), "56789", 5),
	    0xE3069283u);
	CHECK_EQ(rtprof_crc32c(0, "", 0), 0);
}

static void
test_full_session(void)
{
	struct buf b = { 0 }, want = { 0 };
	struct layout lay = { 0 };
	struct rtprof_dump_stats st;
	struct log l = { 0 };

	build_session(&b, &lay, SID1);
	CHECK_EQ(lay.n, SESSION_FRAMES);
	expect_session(&want, 1, SID1);
	expect_end(&want);

	CHECK_EQ(decode(&b, &l, &st), 0);
	CHECK_STR((char *)l.text.p, (char *)want.p);
	CHECK_EQ(l.ndmg, 0);
	CHECK_EQ(st.frames, SESSION_FRAMES);
	CHECK_EQ(st.records, SESSION_RECORDS);
	CHECK_EQ(st.sessions, 1);
	CHECK_EQ(st.bytes, b.n);
	CHECK_EQ(st.damage, 0);
	CHECK_EQ(st.bad_frames + st.skipped_bytes + st.seq_gaps +
	    st.seq_dups + st.bad_payloads + st.bad_records +
	    st.truncated_tail_bytes + st.unknown_frames +
	    st.newer_version_frames, 0);
	log_free(&l);

	/* The same through read(2) on a file. */
	{
		FILE *f = tmpfile();
		struct rtprof_dump_cb cb = log_cb_template;

		if (f == NULL || fwrite(b.p, 1, b.n, f) != b.n ||
		    fflush(f) != 0 || lseek(fileno(f), 0, SEEK_SET) != 0) {
			fprintf(stderr, "tmpfile: %s\n", strerror(errno));
			failures++;
		} else {
			memset(&l, 0, sizeof(l));
			cb.ctx = &l;
			CHECK_EQ(rtprof_dump_read_fd(fileno(f), &cb, &st), 0);
			buf_put(&l.text, "", 1);
			CHECK_STR((char *)l.text.p, (char *)want.p);
			CHECK_EQ(st.bytes, b.n);
			log_free(&l);
		}
		if (f != NULL)
			fclose(f);
	}
	/* A bad fd is an I/O error. */
	{
		struct rtprof_dump_cb cb = { 0 };

		CHECK_EQ(rtprof_dump_read_fd(-1, &cb, NULL), -EBADF);
	}
	/* NULL callbacks and NULL stats are fine. */
	{
		struct rtprof_dump_cb cb = { 0 };

		CHECK_EQ(rtprof_dump_read_mem(b.p, b.n, &cb, NULL), 0);
	}
	buf_free(&want);
	buf_free(&b);
}

static void
test_two_sessions(void)
{
	struct buf b = { 0 }, want = { 0 };
	struct rtprof_dump_stats st;
	struct log l = { 0 };

	build_session(&b, NULL, SID1);
	build_session(&b, NULL, SID2);
	expect_session(&want, 1, SID1);
	expect_session(&want, 2, SID2);
	expect_end(&want);
	CHECK_EQ(decode(&b, &l, &st), 0);
	CHECK_STR((char *)l.text.p, (char *)want.p);
	CHECK_EQ(l.ndmg, 0);
	CHECK_EQ(st.sessions, 2);
	CHECK_EQ(st.frames, 2 * SESSION_FRAMES);
	CHECK_EQ(st.records, 2 * SESSION_RECORDS);
	log_free(&l);
	buf_free(&b);
	buf_free(&want);

	/* A session restarted with the same id: a HEADER starts a new one. */
	build_session(&b, NULL, SID1);
	build_session(&b, NULL, SID1);
	expect_session(&want, 1, SID1);
	expect_session(&want, 2, SID1);
	expect_end(&want);
	CHECK_EQ(decode(&b, &l, &st), 0);
	CHECK_STR((char *)l.text.p, (char *)want.p);
	CHECK_EQ(l.ndmg, 0);
	CHECK_EQ(st.sessions, 2);
	log_free(&l);
	buf_free(&b);
	buf_free(&want);
}

static void
test_flipped_bits(void)
{
	struct buf b = { 0 }, want = { 0 };
	struct layout lay = { 0 };
	struct rtprof_dump_stats st;
	struct log l = { 0 };

	/* A bit in the payload of the second THREAD frame (index 3). */
	build_session(&b, &lay, SID1);
	b.p[lay.off[3] + RTPROF_FRAME_HEADER_SIZE + 5] ^= 0x10;
	expect_session(&want, 1, SID1);
	expect_end(&want);
	drop_frame(&want, 3);
	CHECK_EQ(decode(&b, &l, &st), 0);
	CHECK_STR((char *)l.text.p, (char *)want.p);
	CHECK_EQ(l.ndmg, 2);
	CHECK_DAMAGE(&l, 0, RTPROF_DAMAGE_SKIPPED, lay.off[3], lay.size[3], 1);
	CHECK_DAMAGE(&l, 1, RTPROF_DAMAGE_SEQ_GAP, lay.off[4], 0, 1);
	CHECK_EQ(st.bad_frames, 1);
	CHECK_EQ(st.seq_gaps, 1);
	CHECK_EQ(st.skipped_bytes, lay.size[3]);
	CHECK_EQ(st.frames, SESSION_FRAMES - 1);
	log_free(&l);
	buf_free(&want);
	buf_free(&b);

	/* A bit in the header of the first DATA frame (index 8): its header
	 * CRC fails, so it is garbage to the scanner. */
	memset(&lay, 0, sizeof(lay));
	build_session(&b, &lay, SID1);
	b.p[lay.off[8] + 13] ^= 0x01;
	expect_session(&want, 1, SID1);
	expect_end(&want);
	drop_frame(&want, 8);
	CHECK_EQ(decode(&b, &l, &st), 0);
	CHECK_STR((char *)l.text.p, (char *)want.p);
	CHECK_EQ(l.ndmg, 2);
	CHECK_DAMAGE(&l, 0, RTPROF_DAMAGE_SKIPPED, lay.off[8], lay.size[8], 0);
	CHECK_DAMAGE(&l, 1, RTPROF_DAMAGE_SEQ_GAP, lay.off[9], 0, 1);
	CHECK_EQ(st.records, SESSION_RECORDS - 9);
	log_free(&l);
	buf_free(&want);
	buf_free(&b);

	/* The payload CRC itself, of the TRAILER: the last frame is lost and
	 * nothing follows it, so no gap can show; the whole frame is damage,
	 * not a truncated tail. */
	memset(&lay, 0, sizeof(lay));
	build_session(&b, &lay, SID1);
	b.p[b.n - 1] ^= 0x80;
	expect_session(&want, 1, SID1);
	expect_end(&want);
	drop_frame(&want, 14);
	CHECK_EQ(decode(&b, &l, &st), 0);
	CHECK_STR((char *)l.text.p, (char *)want.p);
	CHECK_EQ(l.ndmg, 1);
	CHECK_DAMAGE(&l, 0, RTPROF_DAMAGE_SKIPPED, lay.off[14],
	    lay.size[14], 1);
	CHECK_EQ(st.truncated_tail_bytes, 0);
	CHECK_EQ(st.bad_frames, 1);
	log_free(&l);
	buf_free(&want);
	buf_free(&b);
}

static void
test_garbage(void)
{
	static const unsigned char junk[] =
	    "\xd4RTP\x01\x01\x00\x00 not a frame \xd4\xd4R\xd4RT\x00\xff"
	    "................................................";
	struct buf b = { 0 }, want = { 0 };
	struct layout lay = { 0 };
	struct rtprof_dump_stats st;
	struct log l = { 0 };

	build_session(&b, &lay, SID1);
	buf_insert(&b, lay.off[6], junk, sizeof(junk));
	buf_insert(&b, 0, junk, 7);
	expect_session(&want, 1, SID1);
	expect_end(&want);
	CHECK_EQ(decode(&b, &l, &st), 0);
	CHECK_STR((char *)l.text.p, (char *)want.p);
	CHECK_EQ(l.ndmg, 2);
	CHECK_DAMAGE(&l, 0, RTPROF_DAMAGE_SKIPPED, 0, 7, 0);
	CHECK_DAMAGE(&l, 1, RTPROF_DAMAGE_SKIPPED, lay.off[6] + 7,
	    sizeof(junk), 0);
	CHECK_EQ(st.skipped_bytes, sizeof(junk) + 7);
	CHECK_EQ(st.resyncs, 2);
	CHECK_EQ(st.seq_gaps, 0);
	CHECK_EQ(st.frames, SESSION_FRAMES);
	log_free(&l);
	buf_free(&want);
	buf_free(&b);

	/* Nothing but garbage: no frame, all of it a tail. */
	buf_put(&b, junk, sizeof(junk));
	CHECK_EQ(decode(&b, &l, &st), 0);
	CHECK_STR((char *)l.text.p, "");
	CHECK_EQ(st.frames, 0);
	CHECK_EQ(l.ndmg, 1);
	CHECK_DAMAGE(&l, 0, RTPROF_DAMAGE_TRUNCATED, 0, sizeof(junk), 0);
	log_free(&l);
	buf_free(&b);

	/* Empty input. */
	CHECK_EQ(decode(&b, &l, &st), 0);
	CHECK_EQ(st.frames + st.damage + st.bytes, 0);
	log_free(&l);
}

static void
test_truncated(void)
{
	struct buf b = { 0 }, want = { 0 };
	struct layout lay = { 0 };
	struct rtprof_dump_stats st;
	struct log l = { 0 };
	/* Cut inside the trailer's payload, then inside its header. */
	const size_t cuts[2] = { 40, 10 };

	for (int i = 0; i < 2; i++) {
		memset(&lay, 0, sizeof(lay));
		build_session(&b, &lay, SID1);
		b.n = lay.off[14] + cuts[i];
		expect_session(&want, 1, SID1);
		expect_end(&want);
		drop_frame(&want, 14);
		CHECK_EQ(decode(&b, &l, &st), 0);
		CHECK_STR((char *)l.text.p, (char *)want.p);
		CHECK_EQ(l.ndmg, 1);
		CHECK_DAMAGE(&l, 0, RTPROF_DAMAGE_TRUNCATED, lay.off[14],
		    cuts[i], 0);
		CHECK_EQ(st.truncated_tail_bytes, cuts[i]);
		CHECK_EQ(st.frames, SESSION_FRAMES - 1);
		log_free(&l);
		buf_free(&want);
		buf_free(&b);
	}

	/*
	 * Bytes lost inside a long frame near the end: its intact header
	 * claims more bytes than the stream still has, and a whole frame
	 * hides behind it. The reader must find that frame at end of input.
	 */
	{
		struct pk p;
		uint32_t seq = 0;
		char text[1000];

		memset(&lay, 0, sizeof(lay));
		memset(text, 'z', sizeof(text));
		pk_init(&p);
		msgpack_pack_map(&p.pk, 1);
		pk_str(&p, "format"); msgpack_pack_uint8(&p.pk, 1);
		pk_emit(&p, &b, &lay, RTPROF_FRAME_HEADER, SID1, &seq);
		msgpack_pack_array(&p.pk, 2);
		msgpack_pack_uint64(&p.pk, 1);
		msgpack_pack_str_with_body(&p.pk, text, sizeof(text));
		pk_emit(&p, &b, &lay, RTPROF_FRAME_STRING, SID1, &seq);
		msgpack_pack_array(&p.pk, 2);
		msgpack_pack_uint64(&p.pk, 5);
		msgpack_pack_uint64(&p.pk, 6);
		pk_emit(&p, &b, &lay, RTPROF_FRAME_PAUSE, SID1, &seq);
		msgpack_sbuffer_destroy(&p.sb);
		buf_cut(&b, lay.off[1] + 100, 300);

		CHECK_EQ(decode(&b, &l, &st), 0);
		CHECK_STR((char *)l.text.p, "frame 1 HEADER\n"
		    "header format=1 session=00000000 gen=0 pid=0 ppid=0 "
		    "process= exe= argv=[] machine=////0 clock=/0/0/0/0 "
		    "settings=/0/0/0/0/0/0 cats=[]\n"
		    "frame 1 PAUSE\npause 5..6\n");
		CHECK_EQ(l.ndmg, 2);
		CHECK_DAMAGE(&l, 0, RTPROF_DAMAGE_SKIPPED, lay.off[1],
		    lay.size[1] - 300, 0);
		CHECK_DAMAGE(&l, 1, RTPROF_DAMAGE_SEQ_GAP, lay.off[2] - 300, 0,
		    1);
		CHECK_EQ(st.truncated_tail_bytes, 0);
		log_free(&l);
		buf_free(&b);
	}
}

static void
test_duplicate(void)
{
	struct buf b = { 0 }, want = { 0 };
	struct layout lay = { 0 };
	struct rtprof_dump_stats st;
	struct log l = { 0 };
	unsigned char *copy;

	/* The second DATA frame (index 9) twice in a row. */
	build_session(&b, &lay, SID1);
	copy = malloc(lay.size[9]);
	memcpy(copy, b.p + lay.off[9], lay.size[9]);
	buf_insert(&b, lay.off[10], copy, lay.size[9]);
	free(copy);
	expect_session(&want, 1, SID1);
	expect_end(&want);
	CHECK_EQ(decode(&b, &l, &st), 0);
	CHECK_STR((char *)l.text.p, (char *)want.p);
	CHECK_EQ(l.ndmg, 1);
	CHECK_DAMAGE(&l, 0, RTPROF_DAMAGE_SEQ_DUP, lay.off[10], lay.size[9],
	    9);
	CHECK_EQ(st.seq_dups, 1);
	CHECK_EQ(st.seq_gaps, 0);
	CHECK_EQ(st.records, SESSION_RECORDS);
	log_free(&l);
	buf_free(&want);
	buf_free(&b);

	/*
	 * A frame of session 1 repeated after session 2 began: recognised as
	 * an old frame of session 1, not as a third session.
	 */
	memset(&lay, 0, sizeof(lay));
	build_session(&b, &lay, SID1);
	build_session(&b, &lay, SID2);
	copy = malloc(lay.size[5]);
	memcpy(copy, b.p + lay.off[5], lay.size[5]);
	buf_insert(&b, lay.off[20], copy, lay.size[5]);
	free(copy);
	expect_session(&want, 1, SID1);
	expect_session(&want, 2, SID2);
	expect_end(&want);
	CHECK_EQ(decode(&b, &l, &st), 0);
	CHECK_STR((char *)l.text.p, (char *)want.p);
	CHECK_EQ(l.ndmg, 1);
	CHECK_DAMAGE(&l, 0, RTPROF_DAMAGE_SEQ_DUP, lay.off[20], lay.size[5],
	    5);
	CHECK_EQ(l.dmg[0].session, SID1);
	CHECK_EQ(l.dmg[0].session_index, 1);
	CHECK_EQ(st.sessions, 2);
	log_free(&l);
	buf_free(&want);
	buf_free(&b);

	/* Session 2's HEADER lost: still a second session, gap reported. */
	memset(&lay, 0, sizeof(lay));
	build_session(&b, &lay, SID1);
	build_session(&b, &lay, SID2);
	buf_cut(&b, lay.off[15], lay.size[15]);
	expect_session(&want, 1, SID1);
	expect_session(&want, 2, SID2);
	expect_end(&want);
	drop_frame(&want, 15);
	CHECK_EQ(decode(&b, &l, &st), 0);
	CHECK_STR((char *)l.text.p, (char *)want.p);
	CHECK_EQ(l.ndmg, 1);
	CHECK_DAMAGE(&l, 0, RTPROF_DAMAGE_SEQ_GAP, lay.off[15], 0, 1);
	CHECK_EQ(st.sessions, 2);
	log_free(&l);
	buf_free(&want);
	buf_free(&b);
}

static void
test_versions_and_kinds(void)
{
	struct buf b = { 0 }, want = { 0 };
	struct layout lay = { 0 };
	struct rtprof_dump_stats st;
	struct log l = { 0 };
	static const unsigned char pl[] = { 0x80 }; /* {} */

	/* First valid frame newer: refuse the stream, decode nothing. */
	buf_put(&b, "junk", 4);
	put_frame(&b, NULL, RTPROF_FRAME_HEADER, RTPROF_WIRE_VERSION + 1,
	    SID1, 0, pl, sizeof(pl));
	build_session(&b, NULL, SID2);
	CHECK_EQ(decode(&b, &l, &st), -EPROTONOSUPPORT);
	CHECK_EQ(st.newer_version, RTPROF_WIRE_VERSION + 1);
	CHECK_EQ(st.newer_version_offset, 4);
	CHECK_EQ(st.newer_version_frames, 1);
	CHECK_EQ(l.frames_seen, 0);
	log_free(&l);
	buf_free(&b);

	/* A newer session after a readable one: skipped, reported once. */
	build_session(&b, NULL, SID1);
	lay.n = 0;
	put_frame(&b, &lay, RTPROF_FRAME_HEADER, 7, SID2, 0, pl, sizeof(pl));
	put_frame(&b, &lay, RTPROF_FRAME_THREAD, 7, SID2, 1, pl, sizeof(pl));
	put_frame(&b, &lay, 99, 7, SID2, 2, pl, sizeof(pl));
	expect_session(&want, 1, SID1);
	expect_end(&want);
	CHECK_EQ(decode(&b, &l, &st), 0);
	CHECK_STR((char *)l.text.p, (char *)want.p);
	CHECK_EQ(l.ndmg, 1);
	CHECK_DAMAGE(&l, 0, RTPROF_DAMAGE_NEWER_VERSION, lay.off[0],
	    lay.size[0], 7);
	CHECK_EQ(st.newer_version_frames, 3);
	CHECK_EQ(st.newer_version, 7);
	log_free(&l);
	buf_free(&want);
	buf_free(&b);

	/* Unknown frame kinds, in sequence: skipped without damage. */
	build_session(&b, NULL, SID1);
	put_frame(&b, NULL, 42, RTPROF_WIRE_VERSION, SID1, SESSION_FRAMES,
	    "\x01\x02\x03", 3);
	put_frame(&b, NULL, 0, RTPROF_WIRE_VERSION, SID1, SESSION_FRAMES + 1,
	    "", 0);
	expect_session(&want, 1, SID1);
	buf_put(&want, "frame 1 #42\nframe 1 #0\n", 23);
	expect_end(&want);
	CHECK_EQ(decode(&b, &l, &st), 0);
	CHECK_STR((char *)l.text.p, (char *)want.p);
	CHECK_EQ(l.ndmg, 0);
	CHECK_EQ(st.unknown_frames, 2);
	log_free(&l);
	buf_free(&want);
	buf_free(&b);
}

/* One payload per hostile case, each followed by a good PAUSE frame. */
static void
test_hostile(void)
{
	struct hostile {
		uint8_t kind;
		const char *bytes;
		size_t len;
		enum rtprof_damage_kind dmg;
		const char *message;    /* prefix of the expected message */
	} cases[] = {
		/* A map of 65535 pairs with nothing behind it. */
		{ RTPROF_FRAME_SCHEMA, "\xde\xff\xff", 3,
		  RTPROF_DAMAGE_BAD_PAYLOAD, "msgpack array or map count" },
		/* THREAD {tid: 1, name: array32 of 4G-1} */
		{ RTPROF_FRAME_THREAD, "\x82\xa3tid\x01\xa4name\xdd\xff\xff\xff"
		  "\xff", 16, RTPROF_DAMAGE_BAD_PAYLOAD,
		  "msgpack array or map count" },
		/* VALUES [1, array32 of 20M] with 20 bytes behind it */
		{ RTPROF_FRAME_VALUES, "\x92\x01\xdd\x01\x31\x2d\x00"
		  "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
		  "\x00\x00\x00\x00\x00\x00", 27, RTPROF_DAMAGE_BAD_PAYLOAD,
		  "msgpack array or map count" },
		/* MODULES: a str32 of 4 GiB */
		{ RTPROF_FRAME_MODULES, "\x91\x95\xdb\xff\xff\xff\xff", 7,
		  RTPROF_DAMAGE_BAD_PAYLOAD, "msgpack string, bin or ext" },
		/* THREAD whose name is an integer */
		{ RTPROF_FRAME_THREAD, "\x82\xa3tid\x01\xa4name\x07", 12,
		  RTPROF_DAMAGE_BAD_PAYLOAD, "string expected" },
		/* THREAD whose totals hold 3 counts */
		{ RTPROF_FRAME_THREAD, "\x82\xa3tid\x01\xa6totals\x93\x01"
		  "\x02\x03", 17, RTPROF_DAMAGE_BAD_PAYLOAD,
		  "array too short" },
		/* THREAD without tid */
		{ RTPROF_FRAME_THREAD, "\x81\xa4name\xa1x", 8,
		  RTPROF_DAMAGE_BAD_PAYLOAD, "THREAD without tid" },
		/* STRING that is a map */
		{ RTPROF_FRAME_STRING, "\x80", 1, RTPROF_DAMAGE_BAD_PAYLOAD,
		  "array expected" },
		/* PAUSE truncated inside msgpack */
		{ RTPROF_FRAME_PAUSE, "\x92\x01\xcd\x01", 4,
		  RTPROF_DAMAGE_BAD_PAYLOAD, "msgpack object truncated" },
		/* PAUSE of 3 elements in 2 bytes */
		{ RTPROF_FRAME_PAUSE, "\x93\x01", 2, RTPROF_DAMAGE_BAD_PAYLOAD,
		  "msgpack array or map count" },
		/* An empty payload */
		{ RTPROF_FRAME_EVENT, "", 0, RTPROF_DAMAGE_BAD_PAYLOAD,
		  "msgpack object truncated" },
		/* The reserved byte 0xc1 */
		{ RTPROF_FRAME_COUNTER, "\xc1", 1, RTPROF_DAMAGE_BAD_PAYLOAD,
		  "invalid msgpack" },
		/* DATA header of 9 integers */
		{ RTPROF_FRAME_DATA, "\x99\x01\x01\x01\x01\x01\x00\x01\x01\x01",
		  10, RTPROF_DAMAGE_BAD_PAYLOAD, "array too short" },
		/* DATA claiming 2^64-1 records, holding one */
		{ RTPROF_FRAME_DATA, "\x9a\x01\x01\x00\x00\x00\xcf\xff\xff\xff"
		  "\xff\xff\xff\xff\xff\x00\x00\x00\x00\x92\x07\x05", 22,
		  RTPROF_DAMAGE_BAD_RECORD, "fewer records" },
		/* DATA whose record holds a str32 of 4 GiB */
		{ RTPROF_FRAME_DATA, "\x9a\x01\x01\x00\x00\x00\x02\x00\x00\x00"
		  "\x00\x96\x05\x00\x01\x01\x01\xdb\xff\xff\xff\xff", 22,
		  RTPROF_DAMAGE_BAD_RECORD, "malformed msgpack" },
		/* DATA with a record of unknown kind, then a good one */
		{ RTPROF_FRAME_DATA, "\x9a\x01\x01\x00\x00\x00\x02\x00\x00\x00"
		  "\x00\x92\x63\x05\x92\x07\x05", 17,
		  RTPROF_DAMAGE_BAD_RECORD, "malformed record skipped" },
		/* CATEGORY without its name */
		{ RTPROF_FRAME_CATEGORY, "\x81\xa2id\x09", 5,
		  RTPROF_DAMAGE_BAD_PAYLOAD, "CATEGORY without id or name" },
		/* CATEGORY id 64: past RTPROF_WIRE_MAX_CATEGORIES */
		{ RTPROF_FRAME_CATEGORY, "\x82\xa2id\x40\xa4name\xa1x", 12,
		  RTPROF_DAMAGE_BAD_PAYLOAD, "integer out of range" },
		/* DATA with a zone argument "value" holding a text, then a
		 * good record */
		{ RTPROF_FRAME_DATA, "\x9a\x01\x01\x00\x00\x00\x02\x00\x00\x00"
		  "\x00\x94\x0f\x01\x01\xa1x\x92\x07\x05", 20,
		  RTPROF_DAMAGE_BAD_RECORD, "malformed record skipped" },
		/* DATA with a zone argument of kind 6, then a good record */
		{ RTPROF_FRAME_DATA, "\x9a\x01\x01\x00\x00\x00\x02\x00\x00\x00"
		  "\x00\x94\x0f\x01\x06\x01\x92\x07\x05", 19,
		  RTPROF_DAMAGE_BAD_RECORD, "malformed record skipped" },
		/* DATA with bytes after its records */
		{ RTPROF_FRAME_DATA, "\x9a\x01\x01\x00\x00\x00\x01\x00\x00\x00"
		  "\x00\x92\x07\x05\xc0", 15, RTPROF_DAMAGE_BAD_RECORD,
		  "bytes after" },
	};
	const size_t ncases = sizeof(cases) / sizeof(cases[0]);
	struct buf b = { 0 };
	struct layout lay = { 0 };
	struct rtprof_dump_stats st;
	struct log l = { 0 };
	uint32_t seq = 0;
	struct pk p;

	pk_init(&p);
	msgpack_pack_map(&p.pk, 0);
	pk_emit(&p, &b, &lay, RTPROF_FRAME_HEADER, SID1, &seq);
	for (size_t i = 0; i < ncases; i++) {
		put_frame(&b, &lay, cases[i].kind, RTPROF_WIRE_VERSION, SID1,
		    seq++, cases[i].bytes, cases[i].len);
		msgpack_pack_array(&p.pk, 2);
		msgpack_pack_uint64(&p.pk, i);
		msgpack_pack_uint64(&p.pk, i);
		pk_emit(&p, &b, &lay, RTPROF_FRAME_PAUSE, SID1, &seq);
	}
	/* Nesting deeper than msgpack-c's stack. */
	msgpack_sbuffer_clear(&p.sb);
	for (int i = 0; i < 200; i++)
		msgpack_pack_array(&p.pk, 1);
	msgpack_pack_nil(&p.pk);
	pk_emit(&p, &b, &lay, RTPROF_FRAME_SCHEMA, SID1, &seq);
	/* A command line past the cap, each argument small and real. */
	msgpack_pack_map(&p.pk, 1);
	pk_str(&p, "cmdline");
	msgpack_pack_array(&p.pk, RTPROF_DUMP_MAX_ARGS + 1);
	for (int i = 0; i <= RTPROF_DUMP_MAX_ARGS; i++)
		pk_str(&p, "a");
	seq = 0;
	pk_emit(&p, &b, &lay, RTPROF_FRAME_HEADER, SID2, &seq);
	msgpack_sbuffer_destroy(&p.sb);

	CHECK_EQ(decode(&b, &l, &st), 0);
	CHECK_EQ(l.ndmg, (int)ncases + 2);
	for (size_t i = 0; i < ncases && (int)i < l.ndmg; i++) {
		const struct rtprof_dump_damage *d = &l.dmg[i];

		if (d->kind != cases[i].dmg || strncmp(d->message,
		    cases[i].message, strlen(cases[i].message)) != 0) {
			fprintf(stderr, "hostile case %zu: got %s \"%s\", want "
			    "%s \"%s...\"\n", i,
			    rtprof_dump_damage_name(d->kind), d->message,
			    rtprof_dump_damage_name(cases[i].dmg),
			    cases[i].message);
			failures++;
		}
		CHECK_EQ(d->offset >= lay.off[1 + 2 * i], 1);
	}
	if (l.ndmg == (int)ncases + 2) {
		CHECK_EQ(l.dmg[ncases].kind, RTPROF_DAMAGE_BAD_PAYLOAD);
		CHECK_STR(l.dmg[ncases + 1].message,
		    "array longer than the reader's cap");
	}
	/* Every good PAUSE frame between them came through. */
	for (size_t i = 0; i < ncases; i++) {
		char line[64];

		snprintf(line, sizeof(line), "pause %zu..%zu\n", i, i);
		if (strstr((char *)l.text.p, line) == NULL) {
			fprintf(stderr, "hostile: missing \"%s\"\n", line);
			failures++;
		}
	}
	/* The records that were well formed were delivered (the good one
	 * after each malformed record). */
	CHECK_EQ(st.records, 5);
	CHECK_EQ(st.seq_gaps, 0);
	log_free(&l);
	buf_free(&b);
}

/* More than one read's worth of frames: frames straddle the 1 MiB pieces. */
static void
test_large(void)
{
	struct buf b = { 0 };
	struct rtprof_dump_stats st;
	struct rtprof_dump_cb cb = { 0 };
	uint32_t seq = 0;
	struct pk p;
	const int nframes = 700, nrec = 500;

	pk_init(&p);
	msgpack_pack_map(&p.pk, 0);
	pk_emit(&p, &b, NULL, RTPROF_FRAME_HEADER, SID1, &seq);
	for (int f = 0; f < nframes; f++) {
		msgpack_pack_array(&p.pk, 10);
		msgpack_pack_uint32(&p.pk, 7);
		msgpack_pack_uint32(&p.pk, 1);
		msgpack_pack_uint32(&p.pk, (uint32_t)f);
		for (int i = 0; i < 2; i++)
			msgpack_pack_uint32(&p.pk, 0);
		msgpack_pack_uint32(&p.pk, (uint32_t)nrec);
		for (int i = 0; i < 4; i++)
			msgpack_pack_uint32(&p.pk, 0);
		for (int r = 0; r < nrec; r++) {
			msgpack_pack_array(&p.pk, 2);
			msgpack_pack_uint8(&p.pk, RTPROF_REC_SLEEP);
			msgpack_pack_fix_uint64(&p.pk, (uint64_t)r);
		}
		pk_emit(&p, &b, NULL, RTPROF_FRAME_DATA, SID1, &seq);
	}
	msgpack_sbuffer_destroy(&p.sb);
	CHECK_EQ(b.n > 3u * READ_PIECE_FOR_TEST, 1);
	CHECK_EQ(rtprof_dump_read_mem(b.p, b.n, &cb, &st), 0);
	CHECK_EQ(st.frames, nframes + 1);
	CHECK_EQ(st.records, (uint64_t)nframes * nrec);
	CHECK_EQ(st.damage, 0);
	buf_free(&b);
}

static void
test_abort(void)
{
	struct buf b = { 0 };
	struct rtprof_dump_stats st;
	struct log l = { 0 };

	build_session(&b, NULL, SID1);
	l.abort_on_thread = 7;
	CHECK_EQ(decode(&b, &l, &st), 7);
	/* Stopped at the first THREAD: HEADER, MODULES, THREAD seen. */
	CHECK_EQ(l.frames_seen, 3);
	log_free(&l);
	buf_free(&b);
}

/* Runs every test. Context: main thread. Return: 0, or 1 on a failure. */
int
main(void)
{
	test_crc();
	test_full_session();
	test_two_sessions();
	test_flipped_bits();
	test_garbage();
	test_truncated();
	test_duplicate();
	test_versions_and_kinds();
	test_hostile();
	test_large();
	test_abort();
	if (failures != 0) {
		fprintf(stderr, "test_dump_reader: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_dump_reader: ok\n");
	return 0;
}
