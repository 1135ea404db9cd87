/*
 * summarize_json.c - reading, profiles: the JSON under them, for `rtprof
 * summarize`.
 *
 * Pipeline (summarize_int.h): summarize_prof.c reads a profile with this
 * (members one at a time, a meta or a thread whole, into a DOM) -> the
 * thread's tables are aggregated by summarize_prof_thread.c. The API and
 * the DOM's layout are summarize_json.h; this file knows nothing of
 * profiles.
 *
 * Context: the tool's main thread.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gecko_maps.h"
#include "summarize_json.h"

#define J_DEPTH 64

static int
jr_fill(struct jr *r)
{
	int n;

	if (r->eof)
		return -1;
	n = gzread(r->f, r->buf, JR_BUF);
	if (n <= 0) {
		r->eof = true;
		return -1;
	}
	r->pos = 0;
	r->len = (size_t)n;
	return 0;
}

static inline int
jr_peek(struct jr *r)
{
	if (r->pos == r->len && jr_fill(r) != 0)
		return -1;
	return r->buf[r->pos];
}

static inline int
jr_get(struct jr *r)
{
	int c = jr_peek(r);

	if (c >= 0) {
		r->pos++;
		r->off++;
	}
	return c;
}

int
jr_ws(struct jr *r)
{
	for (;;) {
		int c = jr_peek(r);

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			return c;
		jr_get(r);
	}
}

static void
jdom_reset(struct jdom *d)
{
	d->nkids = d->nstr = d->nstk = 0;
	memset(&d->root, 0, sizeof(d->root));
}

void
jdom_free(struct jdom *d)
{
	free(d->kids);
	free(d->str);
	free(d->stk);
	memset(d, 0, sizeof(*d));
}

static int
jpush(struct jdom *d, const struct jv *v)
{
	if (gecko_grow((void **)&d->stk, &d->stkcap, d->nstk + 1, sizeof(*v)))
		return -ENOMEM;
	d->stk[d->nstk++] = *v;
	return 0;
}

static int
jstr_put(struct jdom *d, const char *p, size_t n)
{
	if (gecko_grow((void **)&d->str, &d->scap, d->nstr + n, 1) != 0)
		return -ENOMEM;
	memcpy(d->str + d->nstr, p, n);
	d->nstr += n;
	return 0;
}

static int
hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ?
	    c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static int
jr_hex4(struct jr *r, uint32_t *cp)
{
	*cp = 0;
	for (int i = 0; i < 4; i++) {
		int h = hexval(jr_get(r));

		if (h < 0)
			return -1;
		*cp = *cp << 4 | (uint32_t)h;
	}
	return 0;
}

/* Code point @cp as UTF-8 into @u. Return: its bytes (1 to 4). */
static size_t
utf8_put(uint32_t cp, char *u)
{
	if (cp < 0x80) {
		u[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	u[0] = (char)(0xf0 | cp >> 18);
	u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	u[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The code point of a \u escape (its "\u" read): a surrogate pair as one,
 * a lone surrogate as U+FFFD. Return: 0, -1 (not JSON). */
static int
jr_u_escape(struct jr *r, uint32_t *cp)
{
	uint32_t lo;

	if (jr_hex4(r, cp) != 0)
		return -1;
	if (*cp >= 0xd800 && *cp < 0xdc00 && jr_peek(r) == '\\') {
		jr_get(r);
		if (jr_get(r) != 'u' || jr_hex4(r, &lo) != 0)
			return -1;
		if (lo >= 0xdc00 && lo < 0xe000)
			*cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
		else
			*cp = 0xfffd;
	} else if (*cp >= 0xd800 && *cp < 0xe000) {
		*cp = 0xfffd;
	}
	return 0;
}

/* An escape (its '\\' read) as bytes into @u. Return: how many, or 0 (not
 * JSON). */
static size_t
jr_escape(struct jr *r, char *u)
{
	int c = jr_get(r);
	uint32_t cp;

	switch (c) {
	case '"': case '\\': case '/':
		u[0] = (char)c;
		return 1;
	case 'b': u[0] = '\b'; return 1;
	case 'f': u[0] = '\f'; return 1;
	case 'n': u[0] = '\n'; return 1;
	case 'r': u[0] = '\r'; return 1;
	case 't': u[0] = '\t'; return 1;
	case 'u':
		return jr_u_escape(r, &cp) != 0 ? 0 : utf8_put(cp, u);
	default:
		return 0;
	}
}

/* A string (the opening quote next), pushed as a J_STR value. */
static int
jr_string(struct jr *r, struct jdom *d)
{
	struct jv v = { .t = J_STR };
	size_t start = d->nstr;

	if (jr_get(r) != '"')
		return -1;
	for (;;) {
		int c = jr_get(r);
		char u[4];
		size_t n = 1;

		if (c < 0)
			return -1;
		if (c == '"')
			break;
		if (c != '\\')
			u[0] = (char)c;
		else if ((n = jr_escape(r, u)) == 0)
			return -1;
		if (jstr_put(d, u, n) != 0)
			return -ENOMEM;
	}
	v.n = (uint32_t)(d->nstr - start);
	v.u.off = start;
	if (jstr_put(d, "", 1) != 0)    /* NUL-terminated */
		return -ENOMEM;
	return jpush(d, &v);
}

/* A number or a literal, pushed. */
static int
jr_scalar(struct jr *r, struct jdom *d)
{
	char b[64], *end;
	size_t n = 0;
	struct jv v = { .t = J_NUM };
	int c;

	while ((c = jr_peek(r)) >= 0 && (c == '-' || c == '+' || c == '.' ||
	    (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z')) && n < sizeof(b) - 1)
		b[n++] = (char)jr_get(r);
	b[n] = '\0';
	if (strcmp(b, "null") == 0) {
		v.t = J_NULL;
	} else if (strcmp(b, "true") == 0) {
		v.t = J_TRUE;
	} else if (strcmp(b, "false") == 0) {
		v.t = J_FALSE;
	} else {
		if (n == 0 || !(b[0] == '-' || (b[0] >= '0' && b[0] <= '9')))
			return -1;
		v.u.d = strtod(b, &end);
		if (*end != '\0' || !isfinite(v.u.d))
			return -1;
	}
	return jpush(d, &v);
}

static int jr_value(struct jr *r, struct jdom *d, int depth);

/* The members (@obj) or elements of a container, its opening character
 * read, up to its closing one, each pushed (a member: key, value).
 * Return: 0, -1 (not JSON), -ENOMEM. */
static int
jr_items(struct jr *r, struct jdom *d, bool obj, int depth)
{
	int close = obj ? '}' : ']', c, rc;

	if (jr_ws(r) == close) {
		jr_get(r);
		return 0;
	}
	for (;;) {
		if (obj) {
			if (jr_ws(r) != '"' || (rc = jr_string(r, d)) != 0)
				return rc != 0 ? rc : -1;
			if (jr_ws(r) != ':')
				return -1;
			jr_get(r);
		}
		if ((rc = jr_value(r, d, depth + 1)) != 0)
			return rc;
		c = jr_ws(r);
		jr_get(r);
		if (c == close)
			return 0;
		if (c != ',')
			return -1;
	}
}

/* The container whose items are d->stk[@base...]: the items move to
 * `kids`, contiguous, after every deeper value's; the container is
 * pushed. */
static int
jr_container(struct jdom *d, size_t base, bool obj)
{
	struct jv v;

	memset(&v, 0, sizeof(v));
	v.t = obj ? J_OBJ : J_ARR;
	v.n = (uint32_t)(obj ? (d->nstk - base) / 2 : d->nstk - base);
	v.u.off = d->nkids;
	if (gecko_grow((void **)&d->kids, &d->kcap, d->nkids + (d->nstk - base),
	    sizeof(*d->kids)) != 0)
		return -ENOMEM;
	memcpy(d->kids + d->nkids, d->stk + base,
	    (d->nstk - base) * sizeof(*d->kids));
	d->nkids += d->nstk - base;
	d->nstk = base;
	return jpush(d, &v);
}

/* One whole value, pushed onto d->stk. Return: 0, -1 (not JSON), -ENOMEM. */
static int
jr_value(struct jr *r, struct jdom *d, int depth)
{
	int c = jr_ws(r), rc;
	size_t base;
	bool obj;

	if (c == '"')
		return jr_string(r, d);
	if (c != '{' && c != '[')
		return jr_scalar(r, d);
	if (depth >= J_DEPTH)
		return -1;
	obj = c == '{';
	jr_get(r);
	base = d->nstk;
	if ((rc = jr_items(r, d, obj, depth)) != 0)
		return rc;
	return jr_container(d, base, obj);
}

int
jr_dom(struct jr *r, struct jdom *d)
{
	int rc;

	jdom_reset(d);
	rc = jr_value(r, d, 0);
	if (rc == 0) {
		d->root = d->stk[0];
		d->nstk = 0;
	}
	return rc;
}

int
jr_skip(struct jr *r)
{
	int depth = 0;

	do {
		int c = jr_ws(r);

		if (c < 0)
			return -1;
		if (c == '"') {
			jr_get(r);
			while ((c = jr_get(r)) != '"') {
				if (c < 0)
					return -1;
				if (c == '\\' && jr_get(r) < 0)
					return -1;
			}
		} else if (c == '{' || c == '[') {
			jr_get(r);
			depth++;
		} else if (c == '}' || c == ']') {
			jr_get(r);
			if (--depth < 0)
				return -1;
		} else if (c == ',' || c == ':') {
			if (depth == 0)
				return -1;
			jr_get(r);
		} else {
			size_t n = 0;

			while ((c = jr_peek(r)) >= 0 && c != ',' && c != ']' &&
			    c != '}' && c != ' ' && c != '\n' && c != '\t' &&
			    c != '\r' && c != ':' && c != '"') {
				jr_get(r);
				n++;
			}
			if (n == 0)
				return -1;
		}
	} while (depth > 0);
	return 0;
}

/*
 * Object members one at a time: jr_open() takes the '{', then each
 * jr_member() call reads the next key (into @key) and its ':' and returns
 * 1 (the caller then reads or skips the value), or 0 after the '}'.
 * Arrays likewise with '[' and jr_elem(). Return -1: not JSON.
 */
int
jr_open(struct jr *r, int c)
{
	if (jr_ws(r) != c)
		return -1;
	jr_get(r);
	return 0;
}

static int
jr_more(struct jr *r, int close, bool *first)
{
	int c = jr_ws(r);

	if (c == close) {
		jr_get(r);
		return 0;
	}
	if (!*first) {
		if (c != ',')
			return -1;
		jr_get(r);
	}
	*first = false;
	return 1;
}

int
jr_member(struct jr *r, bool *first, struct jdom *scratch, char *key,
    size_t n)
{
	int rc = jr_more(r, '}', first);

	if (rc <= 0)
		return rc;
	jdom_reset(scratch);
	if (jr_ws(r) != '"' || jr_string(r, scratch) != 0 || jr_ws(r) != ':')
		return -1;
	jr_get(r);
	snprintf(key, n, "%s", scratch->str);
	return 1;
}

int
jr_elem(struct jr *r, bool *first)
{
	return jr_more(r, ']', first);
}

/* DOM access. */
const struct jv *
jget(const struct jdom *d, const struct jv *o, const char *key)
{
	if (o == NULL || o->t != J_OBJ)
		return NULL;
	for (uint32_t i = 0; i < o->n; i++) {
		const struct jv *k = &d->kids[o->u.off + 2 * i];

		if (strcmp(d->str + k->u.off, key) == 0)
			return k + 1;
	}
	return NULL;
}

const struct jv *
jat(const struct jdom *d, const struct jv *a, size_t i)
{
	if (a == NULL || a->t != J_ARR || i >= a->n)
		return NULL;
	return &d->kids[a->u.off + i];
}

bool
jnum(const struct jv *v, double *out)
{
	if (v == NULL || v->t != J_NUM)
		return false;
	*out = v->u.d;
	return true;
}

const char *
jstr(const struct jdom *d, const struct jv *v)
{
	return v != NULL && v->t == J_STR ? d->str + v->u.off : NULL;
}

int64_t
jidx(const struct jv *v)
{
	double x;

	if (!jnum(v, &x) || x < 0 || x > 9e15 || x != floor(x))
		return -1;
	return (int64_t)x;
}

void
jtab_open(const struct jdom *d, const struct jv *t, const char *const *cols,
    int ncols, struct jtab *out)
{
	const struct jv *sc = jget(d, t, "schema");

	out->data = jget(d, t, "data");
	out->nrows = out->data != NULL && out->data->t == J_ARR ?
	    out->data->n : 0;
	for (int i = 0; i < ncols; i++) {
		int64_t c = jidx(jget(d, sc, cols[i]));

		out->col[i] = c >= 0 && c < 1 << 20 ? (int)c : -1;
	}
}

const struct jv *
jcell(const struct jdom *d, const struct jtab *t, size_t i, int c)
{
	if (t->col[c] < 0)
		return NULL;
	return jat(d, jat(d, t->data, i), (size_t)t->col[c]);
}
