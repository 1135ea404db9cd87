/*
 * summarize_json.h - the small JSON reader of `rtprof summarize`
 * (tools/summarize_json.c): a streaming reader over a plain or gzip file
 * (zlib tells them apart), and a compact DOM for the values read whole (a
 * meta, a thread). JSON as RFC 8259 has it; what is not JSON stops the
 * reading with an error. Context: the tool's main thread.
 */
#ifndef RTPROF_TOOLS_SUMMARIZE_JSON_H
#define RTPROF_TOOLS_SUMMARIZE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#define JR_BUF 65536

struct jr {
	gzFile f;
	unsigned char buf[JR_BUF];
	size_t pos, len;
	bool eof;
	uint64_t off;                   /* bytes consumed, for messages */
};

enum { J_NULL, J_FALSE, J_TRUE, J_NUM, J_STR, J_ARR, J_OBJ };

/* A value: arrays and objects point at their children in `kids` (an
 * object's are key, value, key, value...), strings into `str`. */
struct jv {
	uint8_t t;
	uint32_t n;                     /* string bytes; elements; members */
	union {
		double d;
		size_t off;
	} u;
};

struct jdom {
	struct jv *kids;
	size_t nkids, kcap;
	char *str;
	size_t nstr, scap;
	struct jv *stk;                 /* values being read */
	size_t nstk, stkcap;
	struct jv root;
};

/* A Gecko table {schema: {col: i}, data: [rows]}: column indexes. */
struct jtab {
	const struct jv *data;
	size_t nrows;
	int col[8];
};

void jdom_free(struct jdom *d);

/* Skips white space; returns the next character (not consumed), -1. */
int jr_ws(struct jr *r);

/* Reads one value into @d (reset first): its root. Return: 0, -1 (not
 * JSON), -ENOMEM. */
int jr_dom(struct jr *r, struct jdom *d);

/* Skips one value without keeping it. Return: 0, -1 (not JSON). */
int jr_skip(struct jr *r);

/*
 * Object members one at a time: jr_open() takes the '{', then each
 * jr_member() call reads the next key (into @key) and its ':' and returns
 * 1 (the caller then reads or skips the value), or 0 after the '}'.
 * Arrays likewise with '[' and jr_elem(). Return -1: not JSON.
 */
int jr_open(struct jr *r, int c);
int jr_member(struct jr *r, bool *first, struct jdom *scratch, char *key,
    size_t n);
int jr_elem(struct jr *r, bool *first);

/* DOM access: NULL (false, -1) where the value is absent or of another
 * type. */
const struct jv *jget(const struct jdom *d, const struct jv *o,
    const char *key);
const struct jv *jat(const struct jdom *d, const struct jv *a, size_t i);
bool jnum(const struct jv *v, double *out);
const char *jstr(const struct jdom *d, const struct jv *v);
/* An index (a non-negative integer) or -1. */
int64_t jidx(const struct jv *v);

/* The table @t's columns @cols[0..@ncols) (at most 8) into @out. */
void jtab_open(const struct jdom *d, const struct jv *t,
    const char *const *cols, int ncols, struct jtab *out);
/* Column @c (an index of jtab_open's @cols) of row @i, or NULL. */
const struct jv *jcell(const struct jdom *d, const struct jtab *t, size_t i,
    int c);

#endif /* RTPROF_TOOLS_SUMMARIZE_JSON_H */
