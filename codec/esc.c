/*
 * esc.c - terminal-safe text (see esc.h).
 *
 * Context: any thread; no shared state.
 */
#include <string.h>

#include "esc.h"

/*
 * How many bytes at @s (of @n) form one control character to escape: 0
 * (not a control), 1 (C0, DEL, a lone C1 byte) or 2 (a C1 control in
 * UTF-8: c2 80..c2 9f).
 */
static size_t
ctl_len(const unsigned char *s, size_t n)
{
	if (s[0] < 0x20 || s[0] == 0x7f)
		return 1;
	if (s[0] == 0xc2 && n > 1 && s[1] >= 0x80 && s[1] <= 0x9f)
		return 2;
	if (s[0] >= 0x80 && s[0] <= 0x9f)
		return 1; /* 8-bit C1 for a terminal not in UTF-8 */
	return 0;
}

/*
 * The text of the character at @s (of @n bytes) into @out (room for 9):
 * its escape, or itself. Return: bytes of @s consumed; *@olen the length
 * of @out. A continuation byte 0x80-0x9f after a UTF-8 lead byte is never
 * seen alone: whole UTF-8 sequences pass together.
 */
static size_t
one_char(const unsigned char *s, size_t n, unsigned flags, char *out,
    size_t *olen)
{
	static const char hex[] = "0123456789abcdef";
	size_t c = ctl_len(s, n), k = 0, len = 1;

	if (c == 0 && s[0] >= 0xc0) {
		/* A UTF-8 lead byte: keep its continuation bytes with it. */
		while (len < n && len < 4 && (s[len] & 0xc0) == 0x80)
			len++;
		memcpy(out, s, len);
		*olen = len;
		return len;
	}
	for (size_t i = 0; i < c; i++) {
		out[k++] = '\\';
		out[k++] = 'x';
		out[k++] = hex[s[i] >> 4];
		out[k++] = hex[s[i] & 15];
	}
	if (c == 0) {
		if ((flags & RTPROF_ESC_QUOTE) && (s[0] == '"' || s[0] == '\\'))
			out[k++] = '\\';
		out[k++] = (char)s[0];
		c = 1;
	}
	*olen = k;
	return c;
}

int
rtprof_esc_write(FILE *f, const char *s, size_t n, unsigned flags)
{
	const unsigned char *p = (const unsigned char *)s;
	char buf[16];
	size_t blen;

	while (n > 0) {
		size_t used = one_char(p, n, flags, buf, &blen);

		if (fwrite(buf, 1, blen, f) != blen)
			return EOF;
		p += used;
		n -= used;
	}
	return 0;
}

int
rtprof_esc_puts(FILE *f, const char *s)
{
	return s != NULL ? rtprof_esc_write(f, s, strlen(s), 0) : 0;
}

/* Bytes @s (NUL-terminated) takes escaped. */
static size_t
esc_len(const unsigned char *s, size_t n)
{
	char buf[16];
	size_t blen, total = 0;

	while (n > 0) {
		size_t used = one_char(s, n, 0, buf, &blen);

		total += blen;
		s += used;
		n -= used;
	}
	return total;
}

char *
rtprof_esc(char *dst, size_t cap, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
	size_t n = strlen((const char *)p), k = 0;
	int cut = esc_len(p, n) + 1 > cap;
	char buf[16];
	size_t blen;

	while (n > 0) {
		size_t used = one_char(p, n, 0, buf, &blen);

		/* Cut: stop where "..." still fits after what is written. */
		if (cut && k + blen + 4 > cap) {
			memcpy(dst + k, "...", 3);
			k += 3;
			break;
		}
		memcpy(dst + k, buf, blen);
		k += blen;
		p += used;
		n -= used;
	}
	dst[k] = 0;
	return dst;
}

size_t
rtprof_utf8_seq(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t k = 1; k < len; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[k] & 0x3f);
	}
	if (len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)))
		return 0;
	if (len == 4 && (cp < 0x10000 || cp > 0x10ffff))
		return 0;
	return len;
}
