/*
 * esc.h - text from a dump, made safe to show on a terminal.
 *
 * A dump is input from elsewhere: its strings (thread, process, module,
 * marker, counter and label names, messages) may hold terminal controls
 * that change a window's title, clear the screen or worse. Every tool that
 * prints them does so through these functions, which show each control as
 * \xNN: the C0 controls (0x00-0x1f, tab and newline included), DEL (0x7f)
 * and the C1 controls U+0080..U+009F in their UTF-8 form (c2 80..c2 9f,
 * shown as \xc2\xNN) or as lone bytes (0x80-0x9f after no UTF-8 lead
 * byte, for a terminal not in UTF-8). Everything else, UTF-8 included,
 * passes.
 *
 * Also: the difference of two 64-bit clock readings from a dump, which
 * may lie anywhere in int64_t, without signed overflow; the length of a
 * valid UTF-8 character.
 *
 * Bytes in, bytes out: no allocation, no global state; any thread.
 */
#ifndef RTPROF_ESC_H
#define RTPROF_ESC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Also escape '"' and '\\' (for a string shown between quotes). */
#define RTPROF_ESC_QUOTE 1u

/*
 * rtprof_esc_write - write @n bytes of @s to @f with every control
 * escaped (and with RTPROF_ESC_QUOTE in @flags, quotes and backslashes).
 * Return: 0, or EOF when writing failed.
 */
int rtprof_esc_write(FILE *f, const char *s, size_t n, unsigned flags);

/* rtprof_esc_write() of the NUL-terminated @s (NULL: nothing). */
int rtprof_esc_puts(FILE *f, const char *s);

/*
 * rtprof_esc - @s (NUL-terminated; NULL as "") escaped into @dst of @cap
 * bytes (at least 4), always terminated; a string that does not fit is cut
 * at a whole character or escape and ends in "...".
 * Return: @dst, for use as a printf argument.
 */
char *rtprof_esc(char *dst, size_t cap, const char *s);

/*
 * rtprof_utf8_seq - the length of the UTF-8 sequence at @p (@n bytes
 * there, n > 0): 1 for ASCII, 2-4 for a valid multibyte character, 0 for
 * an invalid one (a stray or bad continuation byte, an overlong form, a
 * surrogate, past U+10FFFF, cut by the end), which a profile writes as
 * U+FFFD.
 */
size_t rtprof_utf8_seq(const unsigned char *p, size_t n);

/* @a - @b in ns as a double: exact when it fits in int64_t, never a
 * signed overflow when it does not. */
static inline double
rtprof_ns_diff(int64_t a, int64_t b)
{
	int64_t d;

	if (!__builtin_sub_overflow(a, b, &d))
		return (double)d;
	return (double)a - (double)b;
}

#endif /* RTPROF_ESC_H */
