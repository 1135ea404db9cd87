/*
 * fuzz_pprof.c - libFuzzer target: the pprof writer (codec/pprof.h) on
 * arbitrary bytes: the dump read by rtprof_pprof_dump_read_fd() (through
 * a memfd), then written as a profile into memory, twice: whole, and cut
 * down by a filter derived from a hash of the input (a time window, a
 * thread name; inputs under 16 KiB added twice, as two dumps).
 * Symbolization is off (the fuzzer must not open the files a mutated
 * MODULES frame names).
 *
 * What a successful writer produced is checked, and a failure aborts:
 * the protobuf wire format (varint and length-delimited fields only, no
 * length past its message, every message field of profile.proto parsed
 * as a message down to Label and Line), every string valid UTF-8,
 * string_table[0] = "", and every
 * string index (names, labels, files, build ids, value types, comments)
 * and every id a sample, location or line refers to exists.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "esc.h"
#include "pprof.h"

#define OUT_MAX (64u << 20)

static volatile size_t sink;

/* The profile as written. */
struct out {
	unsigned char *p;
	size_t n, cap;
	bool over;
};

static int
write_cb(void *ctx, const void *p, size_t n)
{
	struct out *o = ctx;

	if (o->over || n > OUT_MAX - o->n) {
		o->over = true;
		return 0;
	}
	if (o->n + n > o->cap) {
		size_t nc = o->cap ? o->cap : 4096;

		while (nc < o->n + n)
			nc *= 2;
		if ((o->p = realloc(o->p, nc)) == NULL)
			abort();
		o->cap = nc;
	}
	memcpy(o->p + o->n, p, n);
	o->n += n;
	return 0;
}

/* ------------------------------------------------------------------ */
/* A protobuf reader for the checks                                     */

struct pbr {
	const unsigned char *p, *end;
};

static void
bad(const char *why)
{
	fprintf(stderr, "fuzz_pprof: malformed profile: %s\n", why);
	abort();
}

static uint64_t
varint(struct pbr *r)
{
	uint64_t v = 0;

	for (int s = 0; s < 64; s += 7) {
		if (r->p >= r->end)
			bad("varint past the end");
		v |= (uint64_t)(*r->p & 0x7f) << s;
		if ((*r->p++ & 0x80) == 0)
			return v;
	}
	bad("varint longer than 10 bytes");
	return 0;
}

/* The next field: 0 at the end; *@v the varint, or @sub the bytes. */
static unsigned
field(struct pbr *r, uint64_t *v, struct pbr *sub)
{
	uint64_t tag, len;

	if (r->p == r->end)
		return 0;
	tag = varint(r);
	if ((tag & 7) == 0) {
		*v = varint(r);
	} else if ((tag & 7) == 2) {
		len = varint(r);
		if (len > (uint64_t)(r->end - r->p))
			bad("length past the message");
		sub->p = r->p;
		sub->end = r->p + len;
		r->p += len;
		*v = UINT64_MAX;
	} else {
		bad("a wire type other than varint and length-delimited");
	}
	if (tag >> 3 == 0)
		bad("field number 0");
	return (unsigned)(tag >> 3);
}

/* What the profile defines and refers to. */
struct seen {
	uint64_t nstr, first_str_len;
	uint64_t max_str;               /* largest string index used */
	uint64_t max_fn, max_loc, max_map;      /* largest ids defined */
	uint64_t ref_fn, ref_loc, ref_map;      /* largest ids referred to */
	uint64_t ids;                   /* count of defined ids */
};

static void
use_str(struct seen *s, uint64_t v)
{
	if (v > s->max_str)
		s->max_str = v;
}

static void
ref(uint64_t *max, uint64_t v)
{
	if (v > *max)
		*max = v;
}

/* Fields @str (a bit per field number) are string indexes; a field @ref
 * refers to an id (*@refmax). Return: the message's id (field 1). */
static uint64_t
message(struct pbr r, struct seen *s, uint32_t str, unsigned reff,
    uint64_t *refmax)
{
	struct pbr sub;
	uint64_t v, id = 0;
	unsigned f;

	while ((f = field(&r, &v, &sub)) != 0) {
		if (f < 32 && (str >> f & 1) && v != UINT64_MAX)
			use_str(s, v);
		if (f == 1 && v != UINT64_MAX)
			id = v;
		if (f == reff && v != UINT64_MAX)
			ref(refmax, v);
	}
	return id;
}

static void
sample(struct pbr r, struct seen *s)
{
	struct pbr sub, packed;
	uint64_t v;
	unsigned f;

	while ((f = field(&r, &v, &sub)) != 0) {
		if (f == 1 && v == UINT64_MAX) {
			packed = sub;
			while (packed.p < packed.end)
				ref(&s->ref_loc, varint(&packed));
		} else if (f == 1) {
			ref(&s->ref_loc, v);
		} else if (f == 2 && v == UINT64_MAX) {
			packed = sub;
			while (packed.p < packed.end)
				(void)varint(&packed);
		} else if (f == 3 && v == UINT64_MAX) {
			(void)message(sub, s, 1u << 1 | 1u << 2 | 1u << 4, 0,
			    NULL);
		} else if (f == 3) {
			bad("a label not a message");
		}
	}
}

static void
location(struct pbr r, struct seen *s)
{
	struct pbr sub;
	uint64_t v, id = 0;
	unsigned f;

	while ((f = field(&r, &v, &sub)) != 0) {
		if (f == 1)
			id = v;
		else if (f == 2 && v != UINT64_MAX)
			ref(&s->ref_map, v);
		else if (f == 4 && v == UINT64_MAX)
			(void)message(sub, s, 0, 1, &s->ref_fn);
		else if (f == 4)
			bad("a line not a message");
	}
	if (id == 0 || id != s->max_loc + 1)
		bad("location ids not 1, 2, 3...");
	s->max_loc = id;
}

static void
check_profile(const struct out *o)
{
	struct pbr r = { o->p, o->p + o->n }, sub;
	struct seen s;
	uint64_t v, id;
	unsigned f;

	memset(&s, 0, sizeof(s));
	while ((f = field(&r, &v, &sub)) != 0) {
		switch (f) {
		case 1: case 11:        /* ValueType */
			(void)message(sub, &s, 1u << 1 | 1u << 2, 0, NULL);
			break;
		case 2:
			sample(sub, &s);
			break;
		case 3:
			id = message(sub, &s, 1u << 5 | 1u << 6, 0, NULL);
			if (id != s.max_map + 1)
				bad("mapping ids not 1, 2, 3...");
			s.max_map = id;
			break;
		case 4:
			location(sub, &s);
			break;
		case 5:
			id = message(sub, &s, 1u << 2 | 1u << 3 | 1u << 4, 0,
			    NULL);
			if (id != s.max_fn + 1)
				bad("function ids not 1, 2, 3...");
			s.max_fn = id;
			break;
		case 6:
			if (v != UINT64_MAX)
				bad("a string not length-delimited");
			if (s.nstr++ == 0)
				s.first_str_len = (uint64_t)(sub.end - sub.p);
			for (const unsigned char *c = sub.p; c < sub.end;) {
				size_t k = rtprof_utf8_seq(c,
				    (size_t)(sub.end - c));

				if (k == 0)
					bad("a string not UTF-8");
				c += k;
			}
			break;
		case 13:
			use_str(&s, v);
			break;
		default:
			break;
		}
	}
	if (s.nstr == 0 || s.first_str_len != 0)
		bad("string_table[0] is not \"\"");
	if (s.max_str >= s.nstr)
		bad("a string index past the string table");
	if (s.ref_fn > s.max_fn || s.ref_loc > s.max_loc ||
	    s.ref_map > s.max_map)
		bad("an id referred to and not defined");
	sink += (size_t)(s.nstr + s.max_loc);
}

/* ------------------------------------------------------------------ */
/* Converting                                                           */

static int mem_fd = -1;

static struct rtprof_pprof_dump *
read_dump(const char *name, bool keep_times)
{
	static const struct rtprof_gecko_symbols nosym = { .disabled = true };
	struct rtprof_pprof_dump *d;
	struct rtprof_dump_stats st;
	uint64_t off;
	const char *msg;

	if (rtprof_pprof_dump_new(&d, name) != 0)
		return NULL;
	rtprof_pprof_dump_set_symbols(d, &nosym);
	if (keep_times)
		rtprof_pprof_dump_keep_times(d);
	if (lseek(mem_fd, 0, SEEK_SET) != 0)
		abort();
	(void)rtprof_pprof_dump_read_fd(d, mem_fd, &st);
	sink += (size_t)(st.bytes + rtprof_pprof_dump_problems(d) +
	    rtprof_pprof_dump_sessions(d));
	if (rtprof_pprof_dump_first_damage(d, &off, &msg) == 0)
		sink += strlen(msg) + (size_t)off;
	return d;
}

/* Write @ndumps reads of the input through @filt; check the output. */
static void
convert(const struct rtprof_gecko_filter *filt, int ndumps)
{
	bool times = filt != NULL && (filt->has_from || filt->has_to);
	struct rtprof_pprof_writer *w;
	struct out o = { 0 };
	int rc = 0, frc;

	if (rtprof_pprof_writer_new(&w, filt, write_cb, &o) != 0)
		return;
	for (int k = 0; k < ndumps && rc == 0; k++) {
		struct rtprof_pprof_dump *d = read_dump(k ? "fuzz-b.rtprof" :
		    "fuzz-a.rtprof", times);

		if (d == NULL) {
			rc = -1;
			break;
		}
		rc = rtprof_pprof_writer_add(w, d);
		rtprof_pprof_dump_free(d);
	}
	frc = rtprof_pprof_writer_finish(w);
	if (rc == 0 && frc == 0 && !o.over)
		check_profile(&o);
	free(o.p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "main", "audio", "worker" };
	struct rtprof_gecko_filter filt;
	uint64_t h = 14695981039346656037ull;
	size_t done = 0;

	if (mem_fd < 0 && (mem_fd = memfd_create("fuzz_pprof",
	    MFD_CLOEXEC)) < 0) {
		perror("fuzz_pprof: memfd_create");
		abort();
	}
	if (ftruncate(mem_fd, 0) != 0)
		abort();
	while (done < size) {
		ssize_t n = pwrite(mem_fd, data + done, size - done,
		    (off_t)done);

		if (n <= 0)
			abort();
		done += (size_t)n;
	}
	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 1099511628211ull;
	convert(NULL, 1);
	memset(&filt, 0, sizeof(filt));
	filt.has_from = (h & 3) != 0;
	filt.has_to = (h & 3) != 1;
	filt.from_ms = (double)((int)(h >> 8 & 0xfff) - 256) / 16.0;
	filt.to_ms = filt.from_ms + (double)((int)(h >> 20 & 0xfff) - 64) / 8.0;
	if (h >> 32 & 1) {
		filt.threads = names + (h >> 33 & 1);
		filt.nthreads = 1 + (h >> 34 & 1);
	}
	convert(&filt, size < 16384 ? 2 : 1);
	return 0;
}
