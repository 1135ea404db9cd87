/*
 * test_gecko_json.c - the converter's JSON writer (codec/gecko_json.h):
 * its hand-made number formatting against the C library's, at every
 * digit-count boundary and on pseudo-random values (integers: every
 * digit; times: six decimals rounded to nearest, trailing zeros cut, no
 * "-0", 0 for |v| >= 1e9 so that the caller prints it in full); strings:
 * plain runs copied, quotes, backslashes and controls escaped, invalid
 * UTF-8 replaced; commas placed between elements and after keys; a
 * buffer's worth and more goes out whole through the callback.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gecko_json.h"

static void
check_u64(uint64_t v)
{
	char got[24], want[24];
	size_t n = json_fmt_u64(got, v);

	got[n] = '\0';
	snprintf(want, sizeof(want), "%" PRIu64, v);
	RTPROF_CHECK_STREQ(got, want);
}

/* The reference: the integer of round(v * 1e6) with its decimal point. */
static void
check_ms(double v)
{
	char got[40], want[48], digits[32];
	double scaled = round(v * 1e6);
	int64_t s = (int64_t)scaled;
	uint64_t a = s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
	size_t n = json_fmt_ms(got, v), k;

	if (!(fabs(v) < 1e9)) {
		RTPROF_CHECK_EQ(n, 0);
		return;
	}
	got[n] = '\0';
	snprintf(digits, sizeof(digits), "%07" PRIu64, a);
	k = strlen(digits);
	snprintf(want, sizeof(want), "%s%.*s.%s", s < 0 ? "-" : "",
	    (int)(k - 6), digits, digits + k - 6);
	/* Trailing zeros of the fraction cut, then a bare point. */
	k = strlen(want);
	while (want[k - 1] == '0')
		want[--k] = '\0';
	if (want[k - 1] == '.')
		want[--k] = '\0';
	RTPROF_CHECK_STREQ(got, want);
}

struct sink {
	char *p;
	size_t n, cap, calls;
};

static int
sink_write(void *ctx, const void *p, size_t n)
{
	struct sink *s = ctx;

	RTPROF_CHECK_LE(s->n + n, s->cap);
	memcpy(s->p + s->n, p, n);
	s->n += n;
	s->calls++;
	return 0;
}

static void
check_doc(void)
{
	static const char want[] = "{\"a\":[1,-2,0.5,null,true,\"q\\\"b\\\\"
	    "\\u0001\xc3\xa9\xef\xbf\xbd\"],\"b\":{}}";
	struct sink s = { .cap = 4096 };
	struct json *j = calloc(1, sizeof(*j));

	s.p = malloc(s.cap);
	RTPROF_CHECK(j != NULL && s.p != NULL);
	j->write = sink_write;
	j->ctx = &s;
	json_obj(j);
	json_key(j, "a");
	json_arr(j);
	json_u64(j, 1);
	json_i64(j, -2);
	json_f64(j, 0.5);
	json_f64(j, NAN);
	json_bool(j, true);
	json_strn(j, "q\"b\\\x01\xc3\xa9\xff", 8);
	json_arr_end(j);
	json_key(j, "b");
	json_obj(j);
	json_obj_end(j);
	json_obj_end(j);
	json_flush(j);
	RTPROF_CHECK_EQ(j->err, 0);
	RTPROF_CHECK_EQ(s.n, sizeof(want) - 1);
	RTPROF_CHECK(memcmp(s.p, want, s.n) == 0);
	free(s.p);
	free(j);
}

/* A string longer than the buffer, and many small elements: all out. */
static void
check_big(void)
{
	size_t len = 3 * JSON_BUF + 17;
	struct sink s = { .cap = 2 * len + 16 * 200000 };
	struct json *j = calloc(1, sizeof(*j));
	char *str = malloc(len);

	s.p = malloc(s.cap);
	RTPROF_CHECK(j != NULL && s.p != NULL && str != NULL);
	for (size_t i = 0; i < len; i++)
		str[i] = (char)('a' + i % 26);
	j->write = sink_write;
	j->ctx = &s;
	json_arr(j);
	json_strn(j, str, len);
	for (uint64_t i = 0; i < 200000; i++)
		json_u64(j, i);
	json_arr_end(j);
	json_flush(j);
	RTPROF_CHECK_EQ(j->err, 0);
	RTPROF_CHECK(s.n > len + 2 && s.p[0] == '[' && s.p[1] == '"');
	RTPROF_CHECK(memcmp(s.p + 2, str, len) == 0);
	RTPROF_CHECK(memcmp(s.p + 2 + len, "\",0,1,2,", 8) == 0);
	RTPROF_CHECK(memcmp(s.p + s.n - 8, ",199999]", 8) == 0);
	RTPROF_CHECK_GT(s.calls, 3);
	free(str);
	free(s.p);
	free(j);
}

int
main(void)
{
	uint64_t x = 88172645463325252ull, p = 1;

	check_u64(0);
	check_u64(UINT64_MAX);
	for (int k = 0; k < 20; k++, p *= 10) {
		check_u64(p);
		check_u64(p - 1);
		check_u64(p + 1);
	}
	for (int i = 0; i < 1000000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		check_u64(x >> (x & 63));
		/* Times: ms of a session, sub-ns noise included. */
		check_ms((double)(x % 4000000000000ull) / 1e6 -
		    (x & 1 ? 0.0 : 2000.0));
		check_ms((double)(int64_t)x / 1e10);
	}
	check_ms(0.0);
	check_ms(-0.0);
	check_ms(-4e-7);        /* rounds to 0: no "-0" */
	check_ms(0.0000005);
	check_ms(999999999.9999994);
	check_ms(1e9);
	check_ms(-1e9);
	check_ms(123.000001);
	check_ms(-0.1);
	check_doc();
	check_big();
	printf("ok\n");
	return 0;
}
