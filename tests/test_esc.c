/*
 * test_esc.c - terminal-safe text (codec/esc.h): every C0 control, DEL
 * and C1 control (UTF-8 or a lone byte) comes out as \xNN, other text
 * (UTF-8 included) unchanged; a string cut to fit never splits an escape
 * or a UTF-8 character and ends in "..."; quotes with RTPROF_ESC_QUOTE;
 * clock differences at the ends of int64_t without overflow.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "esc.h"

static void
check_esc(size_t cap, const char *in, const char *want)
{
	char buf[256];

	RTPROF_CHECK_STREQ(rtprof_esc(buf, cap, in), want);
	RTPROF_CHECK_LE(strlen(buf) + 1, cap);
}

/* rtprof_esc_write() of @n bytes of @in, with @flags. */
static void
check_write(const char *in, size_t n, unsigned flags, const char *want)
{
	char out[256] = { 0 };
	FILE *f = fmemopen(out, sizeof(out) - 1, "w");

	RTPROF_CHECK(f != NULL);
	RTPROF_CHECK_EQ(rtprof_esc_write(f, in, n, flags), 0);
	fclose(f);
	RTPROF_CHECK_STREQ(out, want);
}

int
main(void)
{
	/* Controls escaped, text as it is. */
	check_esc(256, "plain text, caf\xc3\xa9 \xe6\x97\xa5 \xc2\xa9",
	    "plain text, caf\xc3\xa9 \xe6\x97\xa5 \xc2\xa9");
	check_esc(256, "\x1b]0;t\x07\x1b[2J", "\\x1b]0;t\\x07\\x1b[2J");
	check_esc(256, "a\tb\nc\rd\x7f", "a\\x09b\\x0ac\\x0dd\\x7f");
	check_esc(256, "x\xc2\x9b" "31m\xc2\x80\xc2\x9f", "x\\xc2\\x9b31m"
	    "\\xc2\\x80\\xc2\\x9f");
	check_esc(256, "lone \x9b and \x85", "lone \\x9b and \\x85");
	check_esc(256, NULL, "");
	/* Cut to fit: whole escapes and characters, then "...". */
	check_esc(8, "abcdefghij", "abcd...");
	check_esc(8, "abcdefg", "abcdefg");
	check_esc(8, "ab\x1b", "ab\\x1b");
	check_esc(8, "ab\x1b" "c", "ab\\x1bc");
	check_esc(8, "ab\x1b" "cd", "ab...");
	check_esc(6, "\xc3\xa9\xc3\xa9\xc3\xa9", "\xc3\xa9...");
	check_esc(4, "\x1b\x1b", "...");
	/* Bytes with NULs; quotes. */
	check_write("a\0b", 3, 0, "a\\x00b");
	check_write("say \"hi\\\"\x1b", 10, RTPROF_ESC_QUOTE,
	    "say \\\"hi\\\\\\\"\\x1b");
	check_write("say \"hi\"", 8, 0, "say \"hi\"");
	/* Differences of clock readings anywhere in int64_t. */
	RTPROF_CHECK(rtprof_ns_diff(5, 3) == 2.0);
	RTPROF_CHECK(rtprof_ns_diff(INT64_MAX, INT64_MAX - 7) == 7.0);
	RTPROF_CHECK(rtprof_ns_diff(INT64_MAX, INT64_MIN) > 1.8e19);
	RTPROF_CHECK(rtprof_ns_diff(INT64_MIN, INT64_MAX) < -1.8e19);
	RTPROF_CHECK(rtprof_ns_diff(INT64_MIN, 1) < -9.2e18);
	puts("test_esc: ok");
	return 0;
}
