/*
 * gecko_json.h - the converter's last stage: a streaming JSON writer.
 *
 * Pipeline (gecko_int.h): dump reader -> callbacks (gecko_read.c) ->
 * session state -> writers of the profile's parts -> this writer -> the
 * caller's write callback (a file, gzip). Values go into a 64 KiB buffer
 * handed to the callback when full; commas are placed by the writer
 * (every value and key calls json_sep() first); the first error (of the
 * callback, or nesting deeper than JSON_DEPTH) is latched in j->err and
 * every later call is a no-op for the caller to check once at the end.
 * Numbers are formatted by hand (json_fmt_u64, json_fmt_ms): a profile is
 * mostly numbers. Depends on nothing of the converter: a benchmark can
 * time it alone (bench/bench_convert.c).
 *
 * Context: any thread; a struct json belongs to the one thread using it.
 */
#ifndef RTPROF_GECKO_JSON_H
#define RTPROF_GECKO_JSON_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define JSON_BUF 65536
#define JSON_DEPTH 32

/* Where the bytes go: 0 or a negative errno (latched). */
typedef int (*json_write_cb)(void *ctx, const void *p, size_t n);

struct json {
	json_write_cb write;
	void *ctx;
	int err;                        /* first error, latched */
	size_t len;
	int depth;
	bool first[JSON_DEPTH];         /* no element yet at this depth */
	bool after_key;
	char buf[JSON_BUF];
};

/* Hand the buffered bytes to j->write. */
void json_flush(struct json *j);

/* json_raw()'s way when the bytes do not fit in the buffer. */
void json_raw_slow(struct json *j, const char *p, size_t n);

/* Bytes @p[0..@n) as they are (already JSON). */
static inline void
json_raw(struct json *j, const char *p, size_t n)
{
	if (n <= JSON_BUF - j->len) {
		memcpy(j->buf + j->len, p, n);
		j->len += n;
		return;
	}
	json_raw_slow(j, p, n);
}

static inline void
json_ch(struct json *j, char c)
{
	if (j->len == JSON_BUF)
		json_flush(j);
	j->buf[j->len++] = c;
}

/* Comma handling: every value and key calls this first. */
static inline void
json_sep(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->depth > 0) {
		if (!j->first[j->depth - 1])
			json_ch(j, ',');
		j->first[j->depth - 1] = false;
	}
}

static inline void
json_open(struct json *j, char c)
{
	json_sep(j);
	json_ch(j, c);
	if (j->depth >= JSON_DEPTH) {
		if (j->err == 0)
			j->err = -EOVERFLOW;
		return;
	}
	j->first[j->depth++] = true;
}

static inline void
json_close(struct json *j, char c)
{
	if (j->depth > 0)
		j->depth--;
	json_ch(j, c);
}

#define json_obj(j) json_open((j), '{')
#define json_obj_end(j) json_close((j), '}')
#define json_arr(j) json_open((j), '[')
#define json_arr_end(j) json_close((j), ']')

/* A string from arbitrary bytes (invalid UTF-8 becomes U+FFFD). */
void json_strn(struct json *j, const char *s, size_t n);
/* A C string; NULL is null. */
void json_str(struct json *j, const char *s);
/* An object key (a C string); the next value is its value. */
void json_key(struct json *j, const char *k);

/* A key given already quoted with its colon (@quoted[0..@n)). */
static inline void
json_key_raw(struct json *j, const char *quoted, size_t n)
{
	json_sep(j);
	json_raw(j, quoted, n);
	j->after_key = true;
}

/* json_key() of a string literal of plain characters (no quote,
 * backslash, control or non-ASCII byte), without looking at it. */
#define json_key_lit(j, k)                                                     \
	json_key_raw((j), "\"" k "\":", sizeof("\"" k "\":") - 1)
void json_null(struct json *j);
void json_bool(struct json *j, bool v);
void json_i64(struct json *j, int64_t v);
/* A double; NaN and infinities are null. */
void json_f64(struct json *j, double v);

/* Digits of @v, most significant first, into @out (20 bytes); returns
 * the count. */
size_t json_fmt_u64(char *out, uint64_t v);

static inline void
json_u64(struct json *j, uint64_t v)
{
	char b[20];

	json_sep(j);
	json_raw(j, b, json_fmt_u64(b, v));
}

/* An element already formatted as JSON (@p, @n bytes). */
static inline void
json_elem(struct json *j, const char *p, size_t n)
{
	json_sep(j);
	json_raw(j, p, n);
}

/*
 * @v with at most 6 decimals (ns in ms), trailing zeros cut, into @b (at
 * least 28 bytes). Return: the length, or 0 when |@v| >= 1e9 (the caller
 * prints it fully, json_f64 does).
 */
size_t json_fmt_ms(char *b, double v);

#endif
