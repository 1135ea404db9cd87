/*
 * fuzz_convert.c - libFuzzer target: the whole converter (codec/gecko.h) on
 * arbitrary bytes: the dump decoded by rtprof_gecko_read_fd() (through a
 * memfd: there is no in-memory variant), then written as a profile by
 * rtprof_gecko_writer_*() into a sink that checks and discards it.
 *
 * Every input is converted twice, each time from a fresh converter:
 *   A. the whole profile (no filter), with --info's summary, the problem
 *      count and the first damage report;
 *   B. cut down by a filter derived from a hash of the input (a time window
 *      [from, to] in ms, possibly empty, inverted, negative or open on one
 *      side; sometimes a thread-name filter); inputs under 16 KiB are added
 *      twice to this writer (two dumps: the multi-process and pid-clash
 *      paths).
 * Symbolization is off (struct rtprof_gecko_symbols.disabled): the
 * fuzzer must not open the files a mutated MODULES frame names.
 *
 * The sink touches every byte and checks that what a successful writer
 * produced is well-formed JSON at the token level (balanced and matching
 * brackets, strings closed and free of raw control characters, bare words
 * only true/false/null or JSON numbers: no nan, inf or stray bytes), and
 * aborts otherwise, so malformed output is a crash like a bad pointer.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gecko.h"

static volatile size_t sink;

/* ------------------------------------------------------------------ */
/* A streaming token-level JSON checker                                 */

struct jcheck {
	char stack[512];        /* open brackets; deeper is counted only */
	size_t depth;
	int in_str, esc, hex;   /* inside a string; after '\'; \u digits left */
	char word[40];          /* the bare word being read */
	size_t nword;
	int bad;
	const char *why;
	uint64_t bytes;
	uint64_t sum;
};

static void
jc_fail(struct jcheck *c, const char *why)
{
	if (!c->bad) {
		c->bad = 1;
		c->why = why;
	}
}

static int
is_number(const char *s, size_t n)
{
	size_t i = 0, d;

	if (i < n && s[i] == '-')
		i++;
	for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		;
	if (i == d || (s[d] == '0' && i - d > 1))
		return 0;
	if (i < n && s[i] == '.') {
		for (d = ++i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return 0;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return 0;
	}
	return i == n;
}

static void
jc_word_end(struct jcheck *c)
{
	const char *w = c->word;
	size_t n = c->nword;

	if (n == 0)
		return;
	c->nword = 0;
	if (n > sizeof(c->word) - 1) {
		jc_fail(c, "bare word too long");
		return;
	}
	if ((n == 4 && memcmp(w, "true", 4) == 0) ||
	    (n == 5 && memcmp(w, "false", 5) == 0) ||
	    (n == 4 && memcmp(w, "null", 4) == 0) || is_number(w, n))
		return;
	jc_fail(c, "bad bare word (not true/false/null/number)");
}

static void
jc_feed(struct jcheck *c, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n && !c->bad; i++) {
		unsigned char ch = p[i];

		c->sum += ch;
		if (c->in_str) {
			if (c->hex > 0) {
				if (!((ch >= '0' && ch <= '9') ||
				    (ch >= 'a' && ch <= 'f') ||
				    (ch >= 'A' && ch <= 'F')))
					jc_fail(c, "bad \\u escape");
				c->hex--;
			} else if (c->esc) {
				c->esc = 0;
				if (ch == 'u')
					c->hex = 4;
				else if (strchr("\"\\/bfnrt", ch) == NULL || ch == 0)
					jc_fail(c, "bad escape");
			} else if (ch == '\\') {
				c->esc = 1;
			} else if (ch == '"') {
				c->in_str = 0;
			} else if (ch < 0x20) {
				jc_fail(c, "raw control character in a string");
			}
			continue;
		}
		switch (ch) {
		case ' ': case '\n': case '\r': case '\t':
		case ',': case ':':
			jc_word_end(c);
			break;
		case '"':
			jc_word_end(c);
			c->in_str = 1;
			break;
		case '{': case '[':
			jc_word_end(c);
			if (c->depth < sizeof(c->stack))
				c->stack[c->depth] = (char)ch;
			c->depth++;
			break;
		case '}': case ']':
			jc_word_end(c);
			if (c->depth == 0) {
				jc_fail(c, "closing bracket at depth 0");
				break;
			}
			c->depth--;
			if (c->depth < sizeof(c->stack) &&
			    c->stack[c->depth] != (ch == '}' ? '{' : '['))
				jc_fail(c, "mismatched bracket");
			break;
		default:
			if (c->nword < sizeof(c->word))
				c->word[c->nword] = (char)ch;
			c->nword++;
			break;
		}
	}
	c->bytes += n;
}

static void
jc_end(struct jcheck *c)
{
	jc_word_end(c);
	if (c->in_str)
		jc_fail(c, "unterminated string");
	if (c->depth != 0)
		jc_fail(c, "unclosed bracket");
	if (c->bytes == 0)
		jc_fail(c, "empty profile");
}

static int
write_cb(void *ctx, const void *p, size_t n)
{
	jc_feed(ctx, p, n);
	return 0;
}

static void
jc_verdict(struct jcheck *c, int rc, const char *what)
{
	sink += (size_t)c->sum;
	if (rc != 0)
		return; /* an incomplete profile: only its bytes were touched */
	jc_end(c);
	if (c->bad) {
		fprintf(stderr, "fuzz_convert: %s: malformed JSON after %llu bytes: "
		    "%s\n", what, (unsigned long long)c->bytes, c->why);
		abort();
	}
}

/* ------------------------------------------------------------------ */
/* Converting                                                           */

static int mem_fd = -1;
static FILE *devnull;

static void
progress(void *ctx, uint64_t offset)
{
	(void)ctx;
	sink += (size_t)offset;
}

/* A fresh converter holding the dump in @data. NULL: out of memory. */
static struct rtprof_gecko *
convert(const char *name)
{
	static const struct rtprof_gecko_symbols nosym = { .disabled = true };
	struct rtprof_gecko *g;
	struct rtprof_dump_stats st;

	if (rtprof_gecko_new(&g, name) != 0)
		return NULL;
	rtprof_gecko_set_symbols(g, &nosym);
	rtprof_gecko_set_progress(g, progress, NULL);
	if (lseek(mem_fd, 0, SEEK_SET) != 0) {
		perror("fuzz_convert: lseek");
		abort();
	}
	(void)rtprof_gecko_read_fd(g, mem_fd, &st);
	sink += (size_t)(st.bytes + st.damage);
	return g;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "main", "audio", "GeckoMain",
	    "rtprof-sampler" };
	struct rtprof_gecko_filter filt;
	struct rtprof_gecko_writer *w;
	struct rtprof_gecko *g;
	struct jcheck jc;
	uint64_t h = 14695981039346656037ull, off;
	const char *msg;
	size_t done = 0;
	int rc, frc;

	if (mem_fd < 0) {
		mem_fd = memfd_create("fuzz_convert", MFD_CLOEXEC);
		devnull = fopen("/dev/null", "w");
		if (mem_fd < 0 || devnull == NULL) {
			perror("fuzz_convert: memfd_create or /dev/null");
			abort();
		}
	}
	if (ftruncate(mem_fd, 0) != 0) {
		perror("fuzz_convert: ftruncate");
		abort();
	}
	while (done < size) {
		ssize_t n = pwrite(mem_fd, data + done, size - done, (off_t)done);

		if (n <= 0) {
			perror("fuzz_convert: pwrite");
			abort();
		}
		done += (size_t)n;
	}
	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 1099511628211ull;

	/* A: everything. */
	if ((g = convert("fuzz-a.rtprof")) == NULL)
		return 0;
	(void)rtprof_gecko_print_info(g, devnull);
	sink += (size_t)rtprof_gecko_problems(g) + rtprof_gecko_sessions(g);
	if (rtprof_gecko_first_damage(g, &off, &msg) == 0)
		sink += strlen(msg) + (size_t)off;
	memset(&jc, 0, sizeof(jc));
	if (rtprof_gecko_writer_new(&w, NULL, write_cb, &jc) == 0) {
		rc = rtprof_gecko_writer_add(w, g);
		rtprof_gecko_free(g);
		frc = rtprof_gecko_writer_finish(w);
		jc_verdict(&jc, rc != 0 ? rc : frc, "unfiltered");
	} else {
		rtprof_gecko_free(g);
	}

	/* B: a filter from the hash: window in ms around the start. */
	memset(&filt, 0, sizeof(filt));
	filt.has_from = (h & 3) != 0;
	filt.has_to = (h & 3) != 1;
	filt.from_ms = (double)((int)(h >> 8 & 0xfff) - 256) / 16.0;
	filt.to_ms = filt.from_ms + (double)((int)(h >> 20 & 0xfff) - 64) / 8.0;
	if (h >> 32 & 1) {
		filt.threads = names + (h >> 33 & 1);
		filt.nthreads = 1 + (h >> 34 & 1);
	}
	memset(&jc, 0, sizeof(jc));
	if (rtprof_gecko_writer_new(&w, &filt, write_cb, &jc) != 0)
		return 0;
	rc = 0;
	for (int k = 0; k < (size < 16384 ? 2 : 1) && rc == 0; k++) {
		if ((g = convert(k ? "fuzz-c.rtprof" :
		    "fuzz-b.rtprof")) == NULL) {
			rc = -ENOMEM;
			break;
		}
		rc = rtprof_gecko_writer_add(w, g);
		rtprof_gecko_free(g);
	}
	frc = rtprof_gecko_writer_finish(w);
	jc_verdict(&jc, rc != 0 ? rc : frc, "filtered");
	return 0;
}
