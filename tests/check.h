/*
 * check.h - assertions for rtprof's tests: print both operands, then abort.
 * Every test is a ctest entry; a failed check exits non-zero.
 */
#ifndef RTPROF_CHECK_H
#define RTPROF_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* RTPROF_TEST_TSAN: built with ThreadSanitizer (timing bounds loosen). */
#if defined(__SANITIZE_THREAD__)
#define RTPROF_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RTPROF_TEST_TSAN 1
#endif
#endif

#define RTPROF_CHECK(cond)                                                     \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
			    __LINE__, #cond);                                  \
			abort();                                               \
		}                                                              \
	} while (0)

#define RTPROF__CHECK_OP(a, op, b)                                             \
	do {                                                                   \
		long long rtprof__a = (long long)(a), rtprof__b = (long long)(b); \
		if (!(rtprof__a op rtprof__b)) {                               \
			fprintf(stderr, "%s:%d: check failed: %s %s %s (%lld vs %lld)\n", \
			    __FILE__, __LINE__, #a, #op, #b, rtprof__a, rtprof__b); \
			abort();                                               \
		}                                                              \
	} while (0)

#define RTPROF_CHECK_EQ(a, b) RTPROF__CHECK_OP(a, ==, b)
#define RTPROF_CHECK_NE(a, b) RTPROF__CHECK_OP(a, !=, b)
#define RTPROF_CHECK_LT(a, b) RTPROF__CHECK_OP(a, <, b)
#define RTPROF_CHECK_LE(a, b) RTPROF__CHECK_OP(a, <=, b)
#define RTPROF_CHECK_GT(a, b) RTPROF__CHECK_OP(a, >, b)
#define RTPROF_CHECK_GE(a, b) RTPROF__CHECK_OP(a, >=, b)

#define RTPROF_CHECK_STREQ(a, b)                                               \
	do {                                                                   \
		const char *rtprof__sa = (a), *rtprof__sb = (b);               \
		if (rtprof__sa == NULL || rtprof__sb == NULL ||                \
		    strcmp(rtprof__sa, rtprof__sb) != 0) {                     \
			fprintf(stderr, "%s:%d: check failed: %s == %s (\"%s\" vs \"%s\")\n", \
			    __FILE__, __LINE__, #a, #b,                        \
			    rtprof__sa ? rtprof__sa : "(null)",                \
			    rtprof__sb ? rtprof__sb : "(null)");               \
			abort();                                               \
		}                                                              \
	} while (0)

#endif /* RTPROF_CHECK_H */
