/*
 * gecko_json.c - the streaming JSON writer and its number formatting
 * (gecko_json.h): the converter's last stage before the bytes leave.
 *
 * Context: any thread; a struct json belongs to the one thread using it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gecko_json.h"

void
json_flush(struct json *j)
{
	if (j->err == 0 && j->len != 0)
		j->err = j->write(j->ctx, j->buf, j->len);
	j->len = 0;
}

void
json_raw_slow(struct json *j, const char *p, size_t n)
{
	while (n != 0) {
		size_t room = JSON_BUF - j->len;

		if (room == 0) {
			json_flush(j);
			if (j->err != 0)
				return;
			room = JSON_BUF;
		}
		if (room > n)
			room = n;
		memcpy(j->buf + j->len, p, room);
		j->len += room;
		p += room;
		n -= room;
	}
}

/*
 * A JSON string from arbitrary bytes: invalid UTF-8 becomes U+FFFD, control
 * characters, quotes and backslashes are escaped.
 */
static void
json_strn_body(struct json *j, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s, *e = p + n;

	json_ch(j, '"');
	while (p < e) {
		const unsigned char *q = p;
		unsigned c;
		size_t len, k;
		uint32_t cp;

		/* A run of bytes written as they are: one copy. */
		while (q < e && *q >= 0x20 && *q < 0x80 && *q != '"' &&
		    *q != '\\')
			q++;
		if (q != p) {
			json_raw(j, (const char *)p, (size_t)(q - p));
			p = q;
			continue;
		}
		c = *p;

		if (c < 0x80) {
			if (c == '"' || c == '\\') {
				json_ch(j, '\\');
				json_ch(j, (char)c);
			} else if (c < 0x20) {
				char u[6] = { '\\', 'u', '0', '0', hex[c >> 4],
				    hex[c & 15] };

				json_raw(j, u, 6);
			} else {
				json_ch(j, (char)c);
			}
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			len = 2;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			len = 3;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			len = 4;
			cp = c & 0x07;
		} else {
			len = 0;
			cp = 0;
		}
		for (k = 1; len != 0 && k < len; k++) {
			if (p + k >= e || (p[k] & 0xc0) != 0x80) {
				len = 0;
				break;
			}
			cp = cp << 6 | (p[k] & 0x3f);
		}
		/* Overlong, surrogate or out-of-range sequences are invalid. */
		if (len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)))
			len = 0;
		if (len == 4 && (cp < 0x10000 || cp > 0x10ffff))
			len = 0;
		if (len == 0) {
			json_raw(j, "\xef\xbf\xbd", 3);
			p++;
		} else {
			json_raw(j, (const char *)p, len);
			p += len;
		}
	}
	json_ch(j, '"');
}

void
json_strn(struct json *j, const char *s, size_t n)
{
	json_sep(j);
	json_strn_body(j, s, n);
}

void
json_str(struct json *j, const char *s)
{
	if (s == NULL) {
		json_sep(j);
		json_raw(j, "null", 4);
		return;
	}
	json_strn(j, s, strlen(s));
}

void
json_key(struct json *j, const char *k)
{
	json_sep(j);
	json_strn_body(j, k, strlen(k));
	json_ch(j, ':');
	j->after_key = true;
}

void
json_null(struct json *j)
{
	json_sep(j);
	json_raw(j, "null", 4);
}

void
json_bool(struct json *j, bool v)
{
	json_sep(j);
	if (v)
		json_raw(j, "true", 4);
	else
		json_raw(j, "false", 5);
}


/* "00" to "99": two digits per division. */
static const char digits2[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

size_t
json_fmt_u64(char *out, uint64_t v)
{
	char tmp[20], *p = tmp + sizeof(tmp);
	size_t n;

	while (v >= 100) {
		p -= 2;
		memcpy(p, digits2 + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10) {
		p -= 2;
		memcpy(p, digits2 + 2 * v, 2);
	} else {
		*--p = (char)('0' + v);
	}
	n = (size_t)(tmp + sizeof(tmp) - p);
	memcpy(out, p, n);
	return n;
}

void
json_i64(struct json *j, int64_t v)
{
	char b[21];
	size_t n = 0;

	json_sep(j);
	if (v < 0) {
		b[n++] = '-';
		n += json_fmt_u64(b + n, (uint64_t)0 - (uint64_t)v);
	} else {
		n = json_fmt_u64(b, (uint64_t)v);
	}
	json_raw(j, b, n);
}

/*
 * A double. Values of moderate size (all profile times) get a fixed
 * six-decimal form (ns resolution for ms values) with trailing zeros cut,
 * by hand; others go through snprintf with the shortest round-trip form.
 * NaN and infinities are not JSON: they become null.
 */
/*
 * Times and most numbers: at most 6 decimals (ns in ms), integer-formatted.
 * Return: the length, or 0 when |@v| >= 1e9 (the caller prints it fully).
 */
size_t
json_fmt_ms(char *b, double v)
{
	double scaled;
	int64_t s;
	uint64_t a, ip, fp;
	size_t n = 0;

	if (!(fabs(v) < 1e9))
		return 0;
	scaled = round(v * 1e6);
	s = (int64_t)scaled;
	a = s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
	ip = a / 1000000;
	fp = a % 1000000;
	if (s < 0)
		b[n++] = '-';
	n += json_fmt_u64(b + n, ip);
	if (fp != 0) {
		size_t k = 6;

		/* Six digits, two at a time, trailing zeros cut. */
		b[n++] = '.';
		memcpy(b + n, digits2 + 2 * (fp / 10000), 2);
		memcpy(b + n + 2, digits2 + 2 * (fp / 100 % 100), 2);
		memcpy(b + n + 4, digits2 + 2 * (fp % 100), 2);
		while (b[n + k - 1] == '0')
			k--;
		n += k;
	}
	return n;
}


void
json_f64(struct json *j, double v)
{
	char b[40];
	size_t n = 0;

	if (!isfinite(v)) {
		json_null(j);
		return;
	}
	json_sep(j);
	if ((n = json_fmt_ms(b, v)) != 0) {
		json_raw(j, b, n);
		return;
	}
	snprintf(b, sizeof(b), "%.15g", v);
	if (strtod(b, NULL) != v)
		snprintf(b, sizeof(b), "%.17g", v);
	json_raw(j, b, strlen(b));
}

