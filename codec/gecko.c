/*
 * gecko.c - rtprof dumps -> Firefox Profiler Gecko profile.
 *
 * Two phases. Reading: the dump reader's callbacks copy what the profile
 * needs (header, modules, thread, schema, counter and string descriptors,
 * markers, sleep/wake events, counter values, pauses) into one struct
 * gsess per session that has a HEADER; damage reports and statistics stay
 * with the dump (struct rtprof_gecko). The sampler's SAMPLE/SAME records go
 * to the sampled thread as compact samples (time, CPU delta, node of the
 * thread's raw stack tree: frames as recorded, de-duplicated by prefix);
 * OVERHEAD records stay on the sampler thread. A BACKTRACE record becomes
 * a path of its thread's raw stack tree too, kept with the marker just
 * before it (a finished marker waits one record for it). Writing: a small
 * streaming JSON writer (hand-rolled number formatting, first error
 * latched) emits
 * each session as a process object: libs, counters, pausedRanges, one
 * thread object per thread, each with its own de-duplicated string, frame
 * and stack tables (a raw stack tree is symbolized and folded into them
 * then), and the gathering log. The first session written is the top
 * level: its "processes" array stays open for the others, and its meta
 * (captured in memory) is written last, with a profiling range covering
 * every process, and presymbolicated / sampleUnits for all of them.
 *
 * Times: every time in a process is ms relative to its own meta.startTime
 * (its session's start wall clock), computed by gecko_ms() only; the
 * --from/--to window (top-level ms) is moved into each session's own ms.
 *
 * Context: any thread; no shared state: a struct rtprof_gecko and its
 * writer belong to the one thread that uses them (gecko.h per function).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "esc.h"
#include "gecko.h"
#include "gecko_counters.h"
#include "idmap.h"
#include "spill.h"
#include "symbolize.h"

#define GECKO_VERSION 36
#define GECKO_MAX_CATEGORIES 256
#define GECKO_MAX_DAMAGE 1000      /* damage entries kept for the log */
#define GECKO_MAX_EVENTS 64        /* EVENT frames kept for the log */
#define GECKO_PAIR_SEARCH 256      /* open begins searched for an end */
#define GECKO_MAX_OPEN 4096        /* open begins kept per thread */
#define GECKO_SPILL_BUDGET (32u << 20) /* write buffers of spilled streams */
#define GECKO_SELF_MEMORY_NAME "rtprof memory"
#define GECKO_PROCESS_MEMORY_NAME "Process memory"
#define GECKO_OVERHEAD_SCHEMA "ProfilerOverhead"
#define GECKO_DROPPED_SCHEMA "rtprof.Dropped"
/* A memory counter starts with a 0 this long before its first level. */
#define GECKO_COUNTER_LEAD_MS 0.001
/* The sampler's overhead: one marker per window of this many ms. */
#define GECKO_OVERHEAD_WINDOW_MS 100.0
#define GECKO_OVERHEAD_WINDOW_TEXT "100 ms"
/* THREAD frame flags (rtprof_thread_flags). */
#define GECKO_THREAD_RT 1u
#define GECKO_THREAD_SAMPLER 4u
/* gmark.kind of a "Dropped events" marker (not a record kind). */
#define GMARK_DROPPED 0x80

/* ------------------------------------------------------------------ */
/* Streaming JSON writer                                                */

#define JSON_BUF 65536
#define JSON_DEPTH 32

struct json {
	rtprof_gecko_write_cb write;
	void *ctx;
	int err;                        /* first error, latched */
	size_t len;
	int depth;
	bool first[JSON_DEPTH];         /* no element yet at this depth */
	bool after_key;
	char buf[JSON_BUF];
};

static void
json_flush(struct json *j)
{
	if (j->err == 0 && j->len != 0)
		j->err = j->write(j->ctx, j->buf, j->len);
	j->len = 0;
}

static void
json_raw(struct json *j, const char *p, size_t n)
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

static inline void
json_ch(struct json *j, char c)
{
	if (j->len == JSON_BUF)
		json_flush(j);
	j->buf[j->len++] = c;
}

/* Comma handling: every value and key calls this first. */
static void
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

static void
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

static void
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
		unsigned c = *p;
		size_t len, k;
		uint32_t cp;

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

static void
json_strn(struct json *j, const char *s, size_t n)
{
	json_sep(j);
	json_strn_body(j, s, n);
}

static void
json_str(struct json *j, const char *s)
{
	if (s == NULL) {
		json_sep(j);
		json_raw(j, "null", 4);
		return;
	}
	json_strn(j, s, strlen(s));
}

static void
json_key(struct json *j, const char *k)
{
	json_sep(j);
	json_strn_body(j, k, strlen(k));
	json_ch(j, ':');
	j->after_key = true;
}

static void
json_null(struct json *j)
{
	json_sep(j);
	json_raw(j, "null", 4);
}

static void
json_bool(struct json *j, bool v)
{
	json_sep(j);
	if (v)
		json_raw(j, "true", 4);
	else
		json_raw(j, "false", 5);
}

/* Digits of @v, most significant first, into @out; returns the count. */
static size_t
fmt_u64(char *out, uint64_t v)
{
	char tmp[20];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

static void
json_u64(struct json *j, uint64_t v)
{
	char b[20];

	json_sep(j);
	json_raw(j, b, fmt_u64(b, v));
}

static void
json_i64(struct json *j, int64_t v)
{
	char b[21];
	size_t n = 0;

	json_sep(j);
	if (v < 0) {
		b[n++] = '-';
		n += fmt_u64(b + n, (uint64_t)0 - (uint64_t)v);
	} else {
		n = fmt_u64(b, (uint64_t)v);
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
static size_t
fmt_ms(char *b, double v)
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
	n += fmt_u64(b + n, ip);
	if (fp != 0) {
		b[n++] = '.';
		for (uint64_t d = 100000; d > 0 && fp != 0; d /= 10) {
			b[n++] = (char)('0' + fp / d);
			fp %= d;
		}
	}
	return n;
}

/* An element already formatted as JSON (@p, @n bytes). */
static void
json_elem(struct json *j, const char *p, size_t n)
{
	json_sep(j);
	json_raw(j, p, n);
}

static void
json_f64(struct json *j, double v)
{
	char b[40];
	size_t n = 0;

	if (!isfinite(v)) {
		json_null(j);
		return;
	}
	json_sep(j);
	if ((n = fmt_ms(b, v)) != 0) {
		json_raw(j, b, n);
		return;
	}
	snprintf(b, sizeof(b), "%.15g", v);
	if (strtod(b, NULL) != v)
		snprintf(b, sizeof(b), "%.17g", v);
	json_raw(j, b, strlen(b));
}

/* ------------------------------------------------------------------ */
/* Small containers                                                     */

/* Grow *@p (elements of @size) to hold @need elements. */
static int
grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t ncap;
	void *np;

	if (need <= *cap)
		return 0;
	ncap = *cap != 0 ? *cap : 4;
	while (ncap < need)
		ncap *= 2;
	if (ncap > SIZE_MAX / size)
		return -ENOMEM;
	np = realloc(*p, ncap * size);
	if (np == NULL)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

#define VEC_PUSH(g, arr, n, cap, val)                                          \
	(grow((void **)&(arr), &(cap), (n) + 1, sizeof(*(arr))) != 0           \
	     ? gecko_fail((g), -ENOMEM)                                        \
	     : ((arr)[(n)++] = (val), 0))

static uint64_t
hash_bytes(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull;

	while (n-- != 0)
		h = (h ^ *s++) * 0x100000001b3ull;
	return h;
}

static char *
dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d != NULL) {
		if (n != 0)
			memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* NULL stays NULL; *@err set on allocation failure. */
static char *
dup_opt(const char *s, int *err)
{
	char *d;

	if (s == NULL)
		return NULL;
	d = dup_n(s, strlen(s));
	if (d == NULL)
		*err = -ENOMEM;
	return d;
}

/* A de-duplicated string table: an array plus an open-addressing index. */
struct strtab {
	char **s;
	size_t *len;
	size_t n, cap, lcap;
	uint32_t *slot;                 /* index + 1, 0 = empty */
	size_t nslot;
};

static void
strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->len);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

static int
strtab_rehash(struct strtab *t)
{
	size_t ns = t->nslot != 0 ? t->nslot * 2 : 64;
	uint32_t *slot = calloc(ns, sizeof(*slot));

	if (slot == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		size_t h = (size_t)hash_bytes(t->s[i], t->len[i]) & (ns - 1);

		while (slot[h] != 0)
			h = (h + 1) & (ns - 1);
		slot[h] = (uint32_t)(i + 1);
	}
	free(t->slot);
	t->slot = slot;
	t->nslot = ns;
	return 0;
}

/* Return: the index of @s[0..@n) in @t, added if new, or -ENOMEM. */
static int64_t
strtab_intern(struct strtab *t, const char *s, size_t n)
{
	size_t h;
	char *d;

	if ((t->n + 1) * 2 > t->nslot && strtab_rehash(t) != 0)
		return -ENOMEM;
	h = (size_t)hash_bytes(s, n) & (t->nslot - 1);
	while (t->slot[h] != 0) {
		size_t i = t->slot[h] - 1;

		if (t->len[i] == n && memcmp(t->s[i], s, n) == 0)
			return (int64_t)i;
		h = (h + 1) & (t->nslot - 1);
	}
	if (t->n >= UINT32_MAX - 1 ||
	    grow((void **)&t->s, &t->cap, t->n + 1, sizeof(*t->s)) != 0 ||
	    grow((void **)&t->len, &t->lcap, t->n + 1, sizeof(*t->len)) != 0)
		return -ENOMEM;
	d = dup_n(s, n);
	if (d == NULL)
		return -ENOMEM;
	t->s[t->n] = d;
	t->len[t->n] = n;
	t->slot[h] = (uint32_t)(t->n + 1);
	return (int64_t)t->n++;
}

/* Static strings of the recording process: address -> text. */
struct strmap_ent {
	uint64_t ref;                   /* 0 = empty (no string lives at 0) */
	char *text;
	size_t len;
};

struct strmap {
	struct strmap_ent *e;
	size_t n, nslot;
};

static struct strmap_ent *
strmap_find(const struct strmap *m, uint64_t ref)
{
	size_t h;

	if (m->nslot == 0 || ref == 0)
		return NULL;
	h = (size_t)hash_bytes(&ref, sizeof(ref)) & (m->nslot - 1);
	while (m->e[h].ref != 0) {
		if (m->e[h].ref == ref)
			return &m->e[h];
		h = (h + 1) & (m->nslot - 1);
	}
	return NULL;
}

static int
strmap_put(struct strmap *m, uint64_t ref, const char *text, size_t len)
{
	struct strmap_ent *e;
	size_t h;
	char *d;

	if (ref == 0)
		return 0;
	if ((m->n + 1) * 2 > m->nslot) {
		size_t ns = m->nslot != 0 ? m->nslot * 2 : 8;
		struct strmap_ent *ne = calloc(ns, sizeof(*ne));

		if (ne == NULL)
			return -ENOMEM;
		for (size_t i = 0; i < m->nslot; i++) {
			if (m->e[i].ref == 0)
				continue;
			h = (size_t)hash_bytes(&m->e[i].ref, 8) & (ns - 1);
			while (ne[h].ref != 0)
				h = (h + 1) & (ns - 1);
			ne[h] = m->e[i];
		}
		free(m->e);
		m->e = ne;
		m->nslot = ns;
	}
	d = dup_n(text, len);
	if (d == NULL)
		return -ENOMEM;
	e = strmap_find(m, ref);
	if (e != NULL) {
		/* A later STRING frame for the same address replaces it. */
		free(e->text);
		e->text = d;
		e->len = len;
		return 0;
	}
	h = (size_t)hash_bytes(&ref, sizeof(ref)) & (m->nslot - 1);
	while (m->e[h].ref != 0)
		h = (h + 1) & (m->nslot - 1);
	m->e[h].ref = ref;
	m->e[h].text = d;
	m->e[h].len = len;
	m->n++;
	return 0;
}

/*
 * A pair of integers -> array index, open addressing: the raw stack tree
 * (value, prefix and kind), and the de-duplication of frames (location,
 * category) and stacks (prefix, frame) when a thread is written.
 */
struct pmap {
	struct pmap_ent {
		uint64_t a, b;
		uint32_t idx1;          /* index + 1, 0 = empty */
	} *e;
	size_t n, nslot;
};

static uint64_t
pmap_hash(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ b * 0xc2b2ae3d27d4eb4full;

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ h >> 32;
}

static int64_t
pmap_get(const struct pmap *m, uint64_t a, uint64_t b)
{
	size_t h;

	if (m->nslot == 0)
		return -1;
	h = (size_t)pmap_hash(a, b) & (m->nslot - 1);
	while (m->e[h].idx1 != 0) {
		if (m->e[h].a == a && m->e[h].b == b)
			return (int64_t)m->e[h].idx1 - 1;
		h = (h + 1) & (m->nslot - 1);
	}
	return -1;
}

/* (@a, @b) must not be in @m yet. */
static int
pmap_put(struct pmap *m, uint64_t a, uint64_t b, size_t idx)
{
	size_t h;

	if (idx >= UINT32_MAX - 1)
		return -ENOMEM;
	if ((m->n + 1) * 2 > m->nslot) {
		size_t ns = m->nslot != 0 ? m->nslot * 2 : 8;
		struct pmap_ent *ne = calloc(ns, sizeof(*ne));

		if (ne == NULL)
			return -ENOMEM;
		for (size_t i = 0; i < m->nslot; i++) {
			if (m->e[i].idx1 == 0)
				continue;
			h = (size_t)pmap_hash(m->e[i].a, m->e[i].b) & (ns - 1);
			while (ne[h].idx1 != 0)
				h = (h + 1) & (ns - 1);
			ne[h] = m->e[i];
		}
		free(m->e);
		m->e = ne;
		m->nslot = ns;
	}
	h = (size_t)pmap_hash(a, b) & (m->nslot - 1);
	while (m->e[h].idx1 != 0)
		h = (h + 1) & (m->nslot - 1);
	m->e[h].a = a;
	m->e[h].b = b;
	m->e[h].idx1 = (uint32_t)(idx + 1);
	m->n++;
	return 0;
}

static void
pmap_free(struct pmap *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}

/* ------------------------------------------------------------------ */
/* Converter state                                                      */

struct gmark {
	uint64_t t0, t1;                /* ticks; t1 for phases 1 and 3 */
	uint64_t name;                  /* STRREF (untyped markers) */
	uint32_t seq;                   /* arrival order, for a stable sort */
	uint16_t type;                  /* SCHEMA id (typed markers) */
	uint8_t kind;                   /* RTPROF_REC_* */
	uint8_t phase;                  /* Gecko phase 0..3 */
	uint8_t category;
	uint8_t nvals;
	uint32_t stack1;                /* BACKTRACE: raw stack node + 1, 0 none */
	struct rtprof_val *vals;        /* typed fields; copied strings owned */
};

/* A placeholder sample: a sleep/wake change of a thread not sampled. */
/*
 * Keyed spill records start with key = time_key(t): the spill sorts by
 * it, and raw ticks are not in time order when the clock wraps past
 * UINT64_MAX after the session's start.
 */
struct gsample {
	uint64_t key;
	uint64_t t;
	uint32_t seq;
	bool idle;
};

/*
 * A sampler sample (SAMPLE or SAME record) of a thread: kept compact, the
 * stack is a node of the thread's raw stack tree.
 */
struct gsmp {
	uint64_t key;                   /* time_key(t) */
	uint64_t t;
	uint64_t cpu_ns;
	uint32_t stack;                 /* index into gthread.rs, or GSMP_CB_* */
	uint32_t seq;                   /* arrival order, for a stable sort */
};

/*
 * The start and the end of an "Audio callback" interval of the thread,
 * kept among its samples (stack GSMP_CB_BEGIN / GSMP_CB_END; not
 * samples): read back in time order with them, they say which samples
 * fall inside a callback, which are never Idle (write_sampled).
 */
#define GSMP_CB_BEGIN UINT32_MAX
#define GSMP_CB_END (UINT32_MAX - 1)

/*
 * Kinds of raw stack nodes. A native frame is a return address (looked
 * up at address - 1) or the interrupted instruction (the last native
 * frame of a SAMPLE); a text frame is one of raw_texts[] (value).
 * RAW_IDLE marks the leaf of an asleep sample (Idle category).
 */
enum {
	RAW_LABEL = 0,
	RAW_RET = 1,
	RAW_PC = 2,
	RAW_TEXT = 3,
	RAW_KIND_MASK = 3,
	RAW_IDLE = 4,
};

enum {
	TEXT_UNKNOWN_STACK,             /* SAME without a previous SAMPLE */
	TEXT_NO_LABEL,                  /* label-only sample without labels */
	TEXT_NO_STACK,                  /* no frame at all */
};

static const char *const raw_texts[] = {
	"(unknown stack)", "(no label)", "(no stack)",
};

/*
 * A node of a thread's raw stack tree: one frame as recorded, below its
 * prefix node (nodes are created parents first). Symbolized and turned
 * into the Gecko frame and stack tables when the thread is written.
 */
struct grawstack {
	uint64_t value;                 /* address, STRREF or TEXT_* */
	uint32_t prefix1;               /* prefix node + 1, 0 = root */
	uint16_t epoch;                 /* native: the map's (gsess.chg) */
	uint8_t kind;                   /* RAW_* */
};

#define GRAW_EPOCH_MAX UINT16_MAX

/*
 * Whole recorded stacks (frames, label mask, idle) -> leaf node of the raw
 * tree: a sample whose stack was seen before costs one hash and one
 * compare instead of a lookup per frame. Holds each unique stack once.
 */
struct scache {
	struct scache_ent {
		uint64_t hash;
		uint64_t *key;          /* nframes, mask words, frames; NULL: empty */
		uint32_t node;
	} *e;
	size_t n, nslot;
};

/* An OVERHEAD record of the sampler thread: a profiler-overhead marker. */
struct govh {
	uint64_t t0, t1;
	uint64_t v[4];                  /* lock, threads, counters ns; n */
};

struct gthread {
	int64_t tid;
	char *name;
	uint64_t flags;
	bool described;                 /* a THREAD frame was seen */
	bool has_reg;
	uint64_t reg;
	bool has_unreg;
	uint64_t unreg;
	uint64_t first_ticks;           /* first record, when not described */
	uint64_t last_data;             /* last_ticks of its previous DATA */
	bool has_last_data;
	bool has_first;
	/*
	 * What grows with the dump is spilled (codec/spill.h): markers in
	 * arrival order; placeholder samples, sampler samples and overhead
	 * records keyed by time. Only open begins (waiting for their end)
	 * stay in memory, at most GECKO_MAX_OPEN.
	 */
	struct rtprof_spill_stream *ms; /* finished markers (serialized) */
	uint64_t nm;
	struct gmark *open;             /* unmatched begins, oldest first */
	size_t nopen, opencap;
	/*
	 * The last finished marker waits here until the thread's next
	 * record: a BACKTRACE right after it (same start) is its stack.
	 * last_open: the last marker was a begin (open[nopen - 1]).
	 */
	struct gmark pend;
	bool has_pend, last_open;
	struct rtprof_spill_stream *ps; /* placeholder samples (gsample) */
	uint64_t ns;
	struct rtprof_spill_stream *smps; /* sampler samples (gsmp) */
	uint64_t nsmp;
	uint64_t ncb;                   /* callback intervals among smps */
	uint64_t nsig_blocked;          /* SAMPLEs flagged SIG_BLOCKED */
	struct grawstack *rs;           /* raw stack tree */
	size_t nrs, rscap;
	struct pmap rs_idx;             /* (value, prefix1 << 8 | kind) */
	struct scache sc;               /* whole recorded stack -> leaf node */
	uint32_t last_stack1;           /* last SAMPLE's leaf + 1, 0: none */
	struct rtprof_spill_stream *ovs; /* OVERHEAD records (govh) */
	uint64_t novh;
	uint64_t recs;                  /* records decoded */
	uint64_t dropped_full, dropped_nested;
	bool settled;           /* counts from THREAD totals or the trailer */
	struct rtprof_dump_trailer_thread tr;
};

struct gschema {
	bool present;
	uint32_t id;
	char *name;
	uint32_t category;
	uint64_t display;
	char *tooltip, *table, *chart;
	uint32_t nfields;
	struct {
		char *key, *label, *format;
		uint32_t kind;
		/* Resolved once (write_marker runs per marker): */
		const char *ofmt;       /* the format written (field_format) */
		bool idx;               /* its values are stringTable indexes */
		bool is_type;           /* key "type": the payload's own */
	} *f;
};

struct gcval {
	uint64_t key;                   /* time_key(t) */
	uint64_t t;
	int64_t v;
	uint32_t seq;
};

struct gcounter {
	uint32_t id;
	char *name, *category, *description;
	char *unit;                     /* NULL: none given */
	uint32_t kind;                  /* RTPROF_WIRE_COUNTER_* */
	struct rtprof_spill_stream *vs; /* values (gcval), keyed by time */
	uint64_t ns;
};

struct gdamage {
	enum rtprof_damage_kind kind;
	uint64_t offset, length, count, session_index;
	const char *message;            /* static */
};

struct gevent {
	uint64_t ticks;
	char *what;
	bool has_errno;
	int64_t errnum;
	char *message;
	bool has_max_bytes;
	uint64_t max_bytes;
};

struct gmodule {
	char *path;
	uint64_t start, end, offset;
	unsigned char build_id[64];
	size_t build_id_len;
	uint64_t from, to;              /* mapped in [from, to) (ticks) */
};

/* IMAGE: a module's ELF image (the vDSO), for the symbolizer. */
struct gimage {
	uint64_t addr;
	unsigned char *bytes;
	size_t len;
};

struct gecko_cat {
	char *name;
	const char *color;              /* static: one of the allowed names */
};

/* One session (one HEADER) of a dump: one process of the profile. */
struct gsess {
	int err;                        /* first error, latched */
	struct rtprof_gecko *file;      /* the dump it came from */
	uint64_t session_index;         /* the reader's session index */
	uint64_t ordinal;               /* 1, 2, ...: sessions with a HEADER */
	uint64_t frames;                /* frames of this session */
	uint32_t seq;

	/* Set by the writer. */
	const struct rtprof_gecko_note *notes;  /* the writer's */
	size_t nnotes;
	bool top;                       /* the top-level process */
	int64_t out_pid;
	char out_name[256];
	const struct rtprof_gecko_filter *flt;  /* NULL: no filter */
	double win_a, win_b;            /* time window, own ms */

	/* HEADER */
	bool have_header;
	int64_t pid, ppid;
	char *process, *exe;
	char *sysname, *release, *machine, *hostname;
	int64_t cpus;
	char *clock_source;
	double ticks_per_second;        /* plausible (clock_rate_ok()) */
	bool rate_replaced;             /* the HEADER's was not: 1e9 */
	double bad_rate;                /* the HEADER's then */
	uint64_t start_ticks;
	int64_t start_mono_ns, start_wall_ns;
	char *mode;
	uint64_t sample_interval_us;
	char *sampling_method, *sampling_why;   /* "" in older dumps */
	uint32_t ndump_cat;
	struct gecko_cat cat[GECKO_MAX_CATEGORIES];
	uint32_t ncat;
	uint32_t *cat_out;              /* written index of each (out_cat) */
	uint32_t cat_default, cat_idle, cat_profiler, cat_user;

	/* Sampler records. */
	uint64_t nsamples, nsame, nsame_unknown, ntruncated, nno_native;
	uint64_t nsig_blocked;          /* of nsamples: the signal blocked */
	uint64_t nbacktraces, nbt_unmatched;    /* BACKTRACE records */
	bool has_native;                /* a native frame was recorded */
	uint64_t ovh_ticks, ovh_sum[4], ovh_max;

	/* TRAILER */
	bool have_trailer;
	uint64_t stop_ticks;
	int64_t stop_mono_ns;
	uint64_t tr_chunks_lost;
	uint64_t tr_threads_omitted;    /* counts the size cap left out */
	bool tr_limit_reached;

	struct gmodule *mod;
	size_t nmod, modcap;
	bool have_modules;
	/* MODULES_CHANGED times in stream order (the writer's, increasing):
	 * a native frame's epoch is how many of them precede its sample
	 * (GRAW_EPOCH_MAX at most), and it is symbolized as the map was
	 * then. */
	uint64_t *chg;
	size_t nchg, chgcap;
	struct gimage *img;
	size_t nimg, imgcap;
	struct gthread *th;
	size_t nth, thcap;
	size_t th_last;                 /* lookup cache */
	struct rtprof_idmap th_idx;            /* tid -> th[] */
	struct gschema *schema;         /* as declared (schema_of()) */
	size_t nschema, schemacap;
	struct rtprof_idmap schema_idx; /* schema id -> schema[] */
	struct gcounter *ctr;
	size_t nctr, ctrcap;
	struct rtprof_idmap ctr_idx;           /* counter id -> ctr[] */
	struct strmap strings;
	uint64_t (*pause)[2];
	size_t npause, pausecap;
	struct gdamage *dmg;
	size_t ndmg, dmgcap;
	uint64_t dmg_total;
	struct gevent *ev;
	size_t nev, evcap;
	uint64_t ev_total;
	uint64_t recs_by_kind[RTPROF_REC_KIND_MAX + 1];
	uint64_t first_t, last_t;
	bool have_t;

	/* Symbolication, while the session is written. */
	size_t th_nrs;                  /* raw nodes of the thread written */
	struct rtprof_symbolizer *sym;
	bool sym_tried;
	uint64_t sym_addrs, sym_resolved;
};

/* One dump: its sessions, the decoder's statistics and damage reports. */
struct rtprof_gecko {
	int err;                        /* first error, latched */
	char *input;
	struct gsess **sess;            /* sessions with a HEADER, in order */
	size_t nsess, sesscap;
	struct gsess *cur;              /* session of the frame being read */
	uint64_t ignored_frames;        /* frames of headerless sessions */
	uint64_t ignored_sessions;
	uint64_t last_ignored_session;
	struct gdamage *dmg;
	size_t ndmg, dmgcap;
	uint64_t dmg_total;
	struct rtprof_dump_stats stats;
	rtprof_gecko_progress_cb progress;
	void *progress_ctx;
	struct rtprof_gecko_symbols symopt;     /* by reference */
	struct rtprof_spill *spill;     /* every session's spilled streams */
};

static struct gsess *
cur_sess(void *ctx)
{
	return ((struct rtprof_gecko *)ctx)->cur;
}

static void gsess_free(struct gsess *g);

static int
gecko_fail(struct gsess *g, int err)
{
	if (g->err == 0)
		g->err = err;
	return err;
}

/*
 * Append @rec (@n bytes) to the stream *@st, created at its first record
 * (@recsize 0: variable-size records). Errors latch in @g.
 */
static int
spill_put(struct gsess *g, struct rtprof_spill_stream **st, size_t recsize,
    const void *rec, size_t n)
{
	int rc;

	if (*st == NULL &&
	    (*st = rtprof_spill_stream_new(g->file->spill, recsize)) == NULL)
		return gecko_fail(g, rtprof_spill_error(g->file->spill));
	rc = rtprof_spill_append(*st, rec, n);
	return rc != 0 ? gecko_fail(g, rc) : 0;
}

/* Read a stream back (nothing when it was never created). */
static int
spill_get(struct gsess *g, struct rtprof_spill_stream *st, rtprof_spill_cb cb,
    void *ctx)
{
	int rc;

	if (st == NULL || g->err != 0)
		return g->err;
	rc = rtprof_spill_read(st, cb, ctx);
	return rc < 0 ? gecko_fail(g, rc) : rc;
}

/*
 * gecko_ms - the one tick -> profile time conversion: ms relative to
 * meta.startTime (the session's start). The rate is the HEADER's
 * ticks_per_second, or, when the TRAILER's stop pair is known, the rate
 * measured over the whole session (docs/wire-format.md, HEADER).
 */
/*
 * A clock rate times can be computed with: 1 kHz to 1 THz. A dump's rate
 * may be anything (1e-300, a denormal, NaN): 1e9 / rate is then infinite
 * and every time null in the profile, which the front-end rejects.
 */
#define CLOCK_RATE_MIN 1e3
#define CLOCK_RATE_MAX 1e12

static bool
clock_rate_ok(double ticks_per_second)
{
	return ticks_per_second >= CLOCK_RATE_MIN &&
	    ticks_per_second <= CLOCK_RATE_MAX;
}

static double
gecko_ms(const struct gsess *g, uint64_t ticks)
{
	double dt = (double)(int64_t)(ticks - g->start_ticks);
	double ns_per_tick = 1e9 / g->ticks_per_second;

	if (g->have_trailer && g->stop_ticks > g->start_ticks &&
	    g->stop_mono_ns > g->start_mono_ns) {
		double measured = rtprof_ns_diff(g->stop_mono_ns,
		    g->start_mono_ns) / (double)(g->stop_ticks -
		    g->start_ticks);

		if (clock_rate_ok(1e9 / measured))
			ns_per_tick = measured;
	}
	return dt * ns_per_tick / 1e6;
}

/*
 * The sort key of tick @t: its signed distance from the session's start,
 * biased to unsigned, so that keys are in time order (gecko_ms()'s) even
 * when the clock wrapped past UINT64_MAX after the start.
 */
static uint64_t
time_key(const struct gsess *g, uint64_t t)
{
	return (t - g->start_ticks) ^ (1ull << 63);
}

static struct gthread *
thread_get(struct gsess *g, int64_t tid)
{
	struct gthread t;
	int64_t i;

	if (g->th_last < g->nth && g->th[g->th_last].tid == tid)
		return &g->th[g->th_last];
	i = rtprof_idmap_get(&g->th_idx, tid);
	if (i >= 0) {
		g->th_last = (size_t)i;
		return &g->th[i];
	}
	memset(&t, 0, sizeof(t));
	t.tid = tid;
	if (VEC_PUSH(g, g->th, g->nth, g->thcap, t) != 0)
		return NULL;
	if (rtprof_idmap_set(&g->th_idx, tid, g->nth - 1) != 0) {
		gecko_fail(g, -ENOMEM);
		return NULL;
	}
	g->th_last = g->nth - 1;
	return &g->th[g->nth - 1];
}

static void
note_time(struct gsess *g, uint64_t t)
{
	if (!g->have_t) {
		g->first_t = g->last_t = t;
		g->have_t = true;
	}
	if (t < g->first_t)
		g->first_t = t;
	if (t > g->last_t)
		g->last_t = t;
}

/* ------------------------------------------------------------------ */
/* Reading: dump reader callbacks                                       */

static const char *const gecko_colors[] = {
	"transparent", "purple", "green", "orange", "yellow", "lightblue",
	"blue", "brown", "magenta", "red", "lightred", "darkgrey", "grey",
};

static const char *
color_of(const char *c)
{
	for (size_t i = 0; i < sizeof(gecko_colors) / sizeof(*gecko_colors);
	    i++)
		if (c != NULL && strcmp(c, gecko_colors[i]) == 0)
			return gecko_colors[i];
	return "grey";
}

static int
cat_add(struct gsess *g, const char *name, const char *color)
{
	char buf[32];

	if (g->ncat >= GECKO_MAX_CATEGORIES)
		return -1;
	if (name[0] == '\0') {         /* the front-end would show nothing */
		snprintf(buf, sizeof(buf), "Category %" PRIu32, g->ncat);
		name = buf;
	}
	g->cat[g->ncat].name = dup_opt(name, &g->err);
	g->cat[g->ncat].color = color_of(color);
	return (int)g->ncat++;
}

/*
 * Every session with a HEADER becomes its own process. Frames of a session
 * whose HEADER was lost have no clock: they are counted and ignored.
 */
static int
on_frame(void *ctx, const struct rtprof_dump_frame *f)
{
	struct rtprof_gecko *fg = ctx;
	struct gsess *g = fg->cur;

	if (fg->progress != NULL)
		fg->progress(fg->progress_ctx, f->offset);
	if (g != NULL && g->session_index == f->session_index) {
		g->frames++;
		return 0;
	}
	g = NULL;
	for (size_t i = fg->nsess; i > 0; i--) {
		if (fg->sess[i - 1]->session_index == f->session_index) {
			g = fg->sess[i - 1];
			break;
		}
	}
	if (g == NULL && f->kind == RTPROF_FRAME_HEADER) {
		g = calloc(1, sizeof(*g));
		if (g == NULL || grow((void **)&fg->sess, &fg->sesscap,
		    fg->nsess + 1, sizeof(*fg->sess)) != 0) {
			free(g);
			fg->err = -ENOMEM;
			return -ENOMEM;
		}
		g->file = fg;
		g->session_index = f->session_index;
		g->ordinal = fg->nsess + 1;
		fg->sess[fg->nsess++] = g;
	}
	fg->cur = g;
	if (g != NULL)
		g->frames++;
	if (g == NULL) {
		fg->ignored_frames++;
		if (f->session_index != fg->last_ignored_session) {
			fg->last_ignored_session = f->session_index;
			fg->ignored_sessions++;
		}
	}
	return 0;
}

static int
on_header(void *ctx, const struct rtprof_dump_header *h)
{
	struct gsess *g = cur_sess(ctx);
	uint32_t i, ndump;

	if (g == NULL || g->have_header)
		return 0;
	g->have_header = true;
	g->pid = h->pid;
	g->ppid = h->ppid;
	g->process = dup_opt(h->process, &g->err);
	g->exe = dup_opt(h->exe, &g->err);
	g->sysname = dup_opt(h->machine.sysname, &g->err);
	g->release = dup_opt(h->machine.release, &g->err);
	g->machine = dup_opt(h->machine.machine, &g->err);
	g->hostname = dup_opt(h->machine.hostname, &g->err);
	g->cpus = h->machine.cpus;
	g->clock_source = dup_opt(h->clock.source, &g->err);
	g->ticks_per_second = h->clock.ticks_per_second;
	if (!clock_rate_ok(g->ticks_per_second)) {
		/* Said in the gathering log (clockNote). */
		g->rate_replaced = true;
		g->bad_rate = g->ticks_per_second;
		g->ticks_per_second = 1e9;
	}
	g->start_ticks = h->clock.start_ticks;
	g->start_mono_ns = h->clock.start_mono_ns;
	g->start_wall_ns = h->clock.start_wall_ns;
	g->mode = dup_opt(h->settings.mode, &g->err);
	g->sample_interval_us = h->settings.sample_interval_us;
	g->sampling_method = dup_opt(h->sampling.method, &g->err);
	g->sampling_why = dup_opt(h->sampling.why, &g->err);

	/*
	 * The dump's categories keep their ids as indexes; room is left for
	 * an Idle and a grey default category when the dump has none.
	 */
	ndump = h->ncategories;
	if (ndump > GECKO_MAX_CATEGORIES - 2)
		ndump = GECKO_MAX_CATEGORIES - 2;
	g->ndump_cat = ndump;
	g->cat_default = g->cat_idle = g->cat_profiler = UINT32_MAX;
	g->cat_user = UINT32_MAX;
	for (i = 0; i < ndump; i++) {
		const char *n = h->category_names[i];

		cat_add(g, n != NULL ? n : "", h->category_colors[i]);
		if (n != NULL && strcmp(n, "Idle") == 0 &&
		    g->cat_idle == UINT32_MAX)
			g->cat_idle = i;
		if (n != NULL && strcmp(n, "Profiler") == 0 &&
		    g->cat_profiler == UINT32_MAX)
			g->cat_profiler = i;
		if (n != NULL && strcmp(n, "User") == 0 &&
		    g->cat_user == UINT32_MAX)
			g->cat_user = i;
		if (strcmp(g->cat[i].color, "grey") == 0 &&
		    g->cat_default == UINT32_MAX)
			g->cat_default = i;
	}
	if (g->cat_default == UINT32_MAX)
		g->cat_default = (uint32_t)cat_add(g, "Other", "grey");
	if (g->cat_idle == UINT32_MAX)
		g->cat_idle = (uint32_t)cat_add(g, "Idle", "transparent");
	if (g->cat_profiler == UINT32_MAX)
		g->cat_profiler = g->cat_default;
	/* Labels are code regions the developer named: "User". */
	if (g->cat_user == UINT32_MAX)
		g->cat_user = g->cat_default;
	return g->err;
}

static int add_gmodules(struct gsess *g, const struct rtprof_dump_module *m,
    size_t n, uint64_t from);

static int
on_modules(void *ctx, const struct rtprof_dump_module *m, size_t n)
{
	struct gsess *g = cur_sess(ctx);

	if (g == NULL || g->have_modules)
		return 0;
	g->have_modules = true;
	return add_gmodules(g, m, n, 0);
}

/* Modules @m[0..@n) mapped from @from on. */
static int
add_gmodules(struct gsess *g, const struct rtprof_dump_module *m, size_t n,
    uint64_t from)
{
	for (size_t i = 0; i < n; i++) {
		struct gmodule gm;

		memset(&gm, 0, sizeof(gm));
		gm.from = from;
		gm.to = UINT64_MAX;
		gm.path = dup_opt(m[i].path != NULL ? m[i].path : "", &g->err);
		gm.start = m[i].start;
		gm.end = m[i].end;
		gm.offset = m[i].offset;
		gm.build_id_len = m[i].build_id_len;
		if (gm.build_id_len > sizeof(gm.build_id))
			gm.build_id_len = sizeof(gm.build_id);
		if (m[i].build_id != NULL)
			memcpy(gm.build_id, m[i].build_id, gm.build_id_len);
		else
			gm.build_id_len = 0;
		if (VEC_PUSH(g, g->mod, g->nmod, g->modcap, gm) != 0) {
			free(gm.path);
			break;
		}
	}
	return g->err;
}

/* The module @m mapped now: its span ends at @t. */
static void
end_gmodule(struct gsess *g, const struct rtprof_dump_module *m, uint64_t t)
{
	const char *path = m->path != NULL ? m->path : "";

	for (size_t i = g->nmod; i-- > 0;) {
		struct gmodule *gm = &g->mod[i];

		if (gm->to == UINT64_MAX && gm->start == m->start &&
		    gm->end == m->end && strcmp(gm->path, path) == 0) {
			gm->to = t;
			return;
		}
	}
}

/* MODULES_CHANGED: unloaded modules' spans end, loaded ones begin. */
static int
on_module_change(void *ctx, const struct rtprof_dump_module_change *c)
{
	struct gsess *g = cur_sess(ctx);

	if (g == NULL)
		return 0;
	for (size_t i = 0; i < c->nremoved; i++)
		end_gmodule(g, &c->removed[i], c->ticks);
	if (VEC_PUSH(g, g->chg, g->nchg, g->chgcap, c->ticks) != 0)
		return g->err;
	return add_gmodules(g, c->added, c->nadded, c->ticks);
}

/* IMAGE: kept for the symbolizer. */
static int
on_image(void *ctx, uint64_t addr, const void *bytes, size_t len)
{
	struct gsess *g = cur_sess(ctx);
	struct gimage im = { .addr = addr, .len = len };

	if (g == NULL)
		return 0;
	if ((im.bytes = malloc(len ? len : 1)) == NULL)
		return gecko_fail(g, -ENOMEM);
	memcpy(im.bytes, bytes, len);
	if (VEC_PUSH(g, g->img, g->nimg, g->imgcap, im) != 0)
		free(im.bytes);
	return g->err;
}

/* The map's epoch at @t: how many changes came at or before it. */
static uint16_t
epoch_at(const struct gsess *g, uint64_t t)
{
	size_t lo = 0, hi = g->nchg;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (g->chg[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < GRAW_EPOCH_MAX ? (uint16_t)lo : GRAW_EPOCH_MAX;
}

/* A time within epoch @e (its first instant), for the symbolizer. */
static uint64_t
epoch_time(const struct gsess *g, uint16_t e)
{
	return e == 0 || g->nchg == 0 ? 0 : g->chg[(e <= g->nchg ? e : g->nchg) - 1];
}

/* A thread's counts, from its last THREAD frame or the trailer: added up,
 * as a tid's counts may come in several parts (docs/wire-format.md). */
static void
settled_add(struct gthread *th, const struct rtprof_dump_trailer_thread *c)
{
	th->settled = true;
	rtprof_dump_counts_add(&th->tr, c);
}

static int
on_thread(void *ctx, const struct rtprof_dump_thread *t)
{
	struct gsess *g = cur_sess(ctx);
	struct gthread *th;

	if (g == NULL)
		return 0;
	th = thread_get(g, t->tid);
	if (th == NULL)
		return g->err;
	/* A later THREAD frame for the same tid replaces an earlier one. */
	free(th->name);
	th->name = dup_opt(t->name != NULL ? t->name : "", &g->err);
	th->flags = t->flags;
	th->described = true;
	th->has_reg = true;
	th->reg = t->register_ticks;
	th->has_unreg = t->has_unregister;
	th->unreg = t->unregister_ticks;
	if (t->has_totals)
		settled_add(th, &t->totals);
	return g->err;
}

static bool format_is_index(const char *f);
static const char *field_format(const char *declared, uint32_t kind);

/* Marker schema @id of @g, NULL when the session did not declare it. */
static const struct gschema *
schema_of(const struct gsess *g, uint32_t id)
{
	int64_t i = rtprof_idmap_get(&g->schema_idx, id);

	return i >= 0 ? &g->schema[i] : NULL;
}

static void
schema_clear(struct gschema *sc)
{
	free(sc->name);
	free(sc->tooltip);
	free(sc->table);
	free(sc->chart);
	for (uint32_t k = 0; k < sc->nfields; k++) {
		free(sc->f[k].key);
		free(sc->f[k].label);
		free(sc->f[k].format);
	}
	free(sc->f);
	memset(sc, 0, sizeof(*sc));
}

/*
 * The entry of schema @id, emptied (a later SCHEMA frame for an id
 * replaces the earlier one); NULL on ENOMEM. The table holds what the
 * session declares: a session of one schema costs one entry, not 65536.
 */
static struct gschema *
schema_slot(struct gsess *g, uint32_t id)
{
	int64_t i = rtprof_idmap_get(&g->schema_idx, id);
	struct gschema *sc;

	if (i >= 0) {
		sc = &g->schema[i];
	} else {
		if (grow((void **)&g->schema, &g->schemacap, g->nschema + 1,
		    sizeof(*g->schema)) != 0 ||
		    rtprof_idmap_set(&g->schema_idx, id, g->nschema) != 0) {
			gecko_fail(g, -ENOMEM);
			return NULL;
		}
		sc = &g->schema[g->nschema++];
		memset(sc, 0, sizeof(*sc));
	}
	schema_clear(sc);
	sc->id = id;
	sc->present = true;
	return sc;
}

/* @name, or when empty (the front-end shows nothing) @fmt with @n. */
static char *
dup_named(const char *name, const char *fmt, uint32_t n, int *err)
{
	char buf[48];

	if (name != NULL && name[0] != '\0')
		return dup_opt(name, err);
	snprintf(buf, sizeof(buf), fmt, n);
	return dup_opt(buf, err);
}

static int
on_schema(void *ctx, const struct rtprof_dump_schema *s)
{
	struct gsess *g = cur_sess(ctx);
	struct gschema *sc;

	if (g == NULL || s->id > 65535)
		return 0;
	sc = schema_slot(g, s->id);
	if (sc == NULL)
		return g->err;
	sc->name = dup_named(s->name, "Marker type %u", s->id, &g->err);
	sc->category = s->category;
	sc->display = s->display;
	sc->tooltip = dup_opt(s->tooltip, &g->err);
	sc->table = dup_opt(s->table, &g->err);
	sc->chart = dup_opt(s->chart, &g->err);
	if (s->nfields != 0) {
		sc->f = calloc(s->nfields, sizeof(*sc->f));
		if (sc->f == NULL)
			return gecko_fail(g, -ENOMEM);
		sc->nfields = s->nfields;
	}
	for (uint32_t i = 0; i < s->nfields; i++) {
		const struct rtprof_dump_field *f = &s->fields[i];

		sc->f[i].key = dup_named(f->key, "field%u", i + 1, &g->err);
		sc->f[i].label = dup_named(f->label, "Field %u", i + 1,
		    &g->err);
		sc->f[i].format = dup_opt(f->format != NULL ? f->format : "",
		    &g->err);
		sc->f[i].kind = f->kind;
		if (g->err == 0) {
			sc->f[i].ofmt = field_format(sc->f[i].format, f->kind);
			sc->f[i].idx = format_is_index(sc->f[i].ofmt);
			sc->f[i].is_type = strcmp(sc->f[i].key, "type") == 0;
		}
	}
	return g->err;
}

static struct gcounter *
counter_get(struct gsess *g, uint32_t id)
{
	struct gcounter c;
	int64_t i = rtprof_idmap_get(&g->ctr_idx, id);

	if (i >= 0)
		return &g->ctr[i];
	memset(&c, 0, sizeof(c));
	c.id = id;
	if (VEC_PUSH(g, g->ctr, g->nctr, g->ctrcap, c) != 0)
		return NULL;
	if (rtprof_idmap_set(&g->ctr_idx, id, g->nctr - 1) != 0) {
		gecko_fail(g, -ENOMEM);
		return NULL;
	}
	return &g->ctr[g->nctr - 1];
}

static int
on_counter(void *ctx, const struct rtprof_dump_counter *c)
{
	struct gsess *g = cur_sess(ctx);
	struct gcounter *gc;

	if (g == NULL)
		return 0;
	gc = counter_get(g, c->id);
	if (gc == NULL)
		return g->err;
	free(gc->name);
	free(gc->category);
	free(gc->description);
	free(gc->unit);
	gc->kind = c->kind;
	gc->unit = dup_opt(c->unit, &g->err);
	gc->name = dup_opt(c->name, &g->err);
	gc->category = dup_opt(c->category, &g->err);
	gc->description = dup_opt(c->description, &g->err);
	return g->err;
}

static int
counter_value(struct gsess *g, uint32_t id, uint64_t t, int64_t v)
{
	struct gcounter *gc = counter_get(g, id);
	struct gcval cv;

	if (gc == NULL)
		return g->err;
	memset(&cv, 0, sizeof(cv));     /* no padding bytes in the file */
	cv.key = time_key(g, t);
	cv.t = t;
	cv.v = v;
	cv.seq = g->seq++;
	note_time(g, t);
	gc->ns++;
	return spill_put(g, &gc->vs, sizeof(cv), &cv, sizeof(cv));
}

static int
on_string(void *ctx, uint64_t ref, const char *text, size_t len)
{
	struct gsess *g = cur_sess(ctx);

	if (g == NULL)
		return 0;
	if (strmap_put(&g->strings, ref, text, len) != 0)
		return gecko_fail(g, -ENOMEM);
	return 0;
}

static int marker_add(struct gsess *g, struct gthread *th, struct gmark *m);

static int
on_data(void *ctx, const struct rtprof_dump_data *d)
{
	struct gsess *g = cur_sess(ctx);
	struct gthread *th;

	if (g == NULL)
		return 0;
	th = thread_get(g, d->tid);
	if (th == NULL)
		return g->err;
	th->dropped_full += d->dropped_full;
	th->dropped_nested += d->dropped_nested;
	/*
	 * Events dropped since the thread's previous chunk: a "Dropped
	 * events" interval from its previous chunk's last record to this
	 * chunk's first, so the timeline shows where data is missing.
	 */
	if (d->byte_offset == 0 && (d->dropped_full || d->dropped_nested)) {
		struct gmark m;
		struct rtprof_val *v = calloc(2, sizeof(*v));

		if (v == NULL)
			return gecko_fail(g, -ENOMEM);
		memset(&m, 0, sizeof(m));
		m.kind = GMARK_DROPPED;
		m.phase = 1;
		m.t0 = th->has_last_data && th->last_data <= d->first_ticks ?
		    th->last_data : d->first_ticks;
		m.t1 = d->first_ticks;
		m.nvals = 2;
		v[0].kind = RTPROF_VAL_U64;
		v[0].v.u = d->dropped_full;
		v[1].kind = RTPROF_VAL_U64;
		v[1].v.u = d->dropped_nested;
		m.vals = v;
		note_time(g, m.t1);
		if (marker_add(g, th, &m) != 0)
			return g->err;
	}
	if (d->nrec != 0) {
		th->last_data = d->last_ticks;
		th->has_last_data = true;
	}
	return 0;
}

static int
sample_add(struct gsess *g, struct gthread *th, uint64_t t, bool idle)
{
	struct gsample s;

	memset(&s, 0, sizeof(s));
	s.key = time_key(g, t);
	s.t = t;
	s.seq = g->seq++;
	s.idle = idle;
	th->ns++;
	return spill_put(g, &th->ps, sizeof(s), &s, sizeof(s));
}

/* Does the begin @b pair with the end @e (same name, or same type)? */
static bool
pairs_with(const struct gmark *b, const struct gmark *e)
{
	if (b->kind != e->kind)
		return false;
	if (b->kind == RTPROF_REC_TYPED)
		return b->type == e->type;
	return b->name == e->name;
}

/*
 * A finished marker in the thread's spilled stream: its fixed part, then
 * each typed field as its kind byte and 8 bytes, or (copied strings) a
 * 16-bit length and the bytes. Frees @m's fields.
 */
struct gmark_rec {
	uint64_t t0, t1, name;
	uint32_t stack1;
	uint16_t type;
	uint8_t kind, phase, category, nvals;
};

static int
marker_spill(struct gsess *g, struct gthread *th, struct gmark *m)
{
	unsigned char buf[sizeof(struct gmark_rec) + RTPROF_REC_MAX_VALS *
	    (3 + 256)];
	struct gmark_rec h;
	size_t n = sizeof(h);

	memset(&h, 0, sizeof(h));
	h.t0 = m->t0;
	h.t1 = m->t1;
	h.name = m->name;
	h.stack1 = m->stack1;
	h.type = m->type;
	h.kind = m->kind;
	h.phase = m->phase;
	h.category = m->category;
	h.nvals = m->nvals;
	memcpy(buf, &h, sizeof(h));
	for (unsigned i = 0; i < m->nvals; i++) {
		const struct rtprof_val *v = &m->vals[i];

		buf[n++] = (unsigned char)v->kind;
		if (v->kind == RTPROF_VAL_STR) {
			uint16_t len = (uint16_t)(v->v.str.n < 256 ?
			    v->v.str.n : 255);

			memcpy(buf + n, &len, 2);
			memcpy(buf + n + 2, v->v.str.p, len);
			n += 2 + len;
		} else {
			memcpy(buf + n, &v->v.u, 8);
			n += 8;
		}
	}
	free(m->vals);
	m->vals = NULL;
	th->nm++;
	return spill_put(g, &th->ms, 0, buf, n);
}

/* The inverse of marker_spill(): @m's fields point into @rec and @vals. */
static void
marker_unspill(const unsigned char *rec, struct gmark *m,
    struct rtprof_val *vals)
{
	struct gmark_rec h;
	size_t n = sizeof(h);

	memcpy(&h, rec, sizeof(h));
	memset(m, 0, sizeof(*m));
	m->t0 = h.t0;
	m->t1 = h.t1;
	m->name = h.name;
	m->stack1 = h.stack1;
	m->type = h.type;
	m->kind = h.kind;
	m->phase = h.phase;
	m->category = h.category;
	m->nvals = h.nvals <= RTPROF_REC_MAX_VALS ? h.nvals : 0;
	m->vals = vals;
	for (unsigned i = 0; i < m->nvals; i++) {
		vals[i].kind = rec[n++];
		if (vals[i].kind == RTPROF_VAL_STR) {
			uint16_t len;

			memcpy(&len, rec + n, 2);
			vals[i].v.str.p = (const char *)rec + n + 2;
			vals[i].v.str.n = len;
			n += 2 + len;
		} else {
			memcpy(&vals[i].v.u, rec + n, 8);
			n += 8;
		}
	}
}

/* The pending marker (if any) joins the thread's finished markers. */
static int
pend_flush(struct gsess *g, struct gthread *th)
{
	if (!th->has_pend)
		return 0;
	th->has_pend = false;
	return marker_spill(g, th, &th->pend);
}

/* Is @m a complete "Audio callback" interval (rtprof_audio_end)? */
static bool
is_audio_callback(const struct gsess *g, const struct gmark *m)
{
	const struct gschema *sc;

	if (m->kind != RTPROF_REC_TYPED || m->phase != 1 || m->t1 < m->t0)
		return false;
	sc = schema_of(g, m->type);
	return sc != NULL && sc->present && sc->name != NULL &&
	    strcmp(sc->name, "Audio callback") == 0;
}

/*
 * An "Audio callback" interval joins @th's samples as two marks (struct
 * gsmp, GSMP_CB_*). The start is keyed one tick early and the end one
 * tick late, so that a sample taken at the callback's first or last tick
 * sorts inside, whichever arrived first (records of one key keep their
 * arrival order).
 */
static int
callback_add(struct gsess *g, struct gthread *th, const struct gmark *m)
{
	struct gsmp s;

	memset(&s, 0, sizeof(s));
	s.t = m->t0 != 0 ? m->t0 - 1 : 0;
	s.key = time_key(g, s.t);
	s.stack = GSMP_CB_BEGIN;
	s.seq = g->seq++;
	if (spill_put(g, &th->smps, sizeof(s), &s, sizeof(s)) != 0)
		return g->err;
	s.t = m->t1 != UINT64_MAX ? m->t1 + 1 : m->t1;
	s.key = time_key(g, s.t);
	s.stack = GSMP_CB_END;
	s.seq = g->seq++;
	th->ncb++;
	return spill_put(g, &th->smps, sizeof(s), &s, sizeof(s));
}

/* A finished marker: pending until the thread's next record. */
static int
marker_finish(struct gsess *g, struct gthread *th, struct gmark *m)
{
	if (is_audio_callback(g, m) && callback_add(g, th, m) != 0) {
		free(m->vals);
		m->vals = NULL;
		return g->err;
	}
	if (pend_flush(g, th) != 0) {
		free(m->vals);
		m->vals = NULL;
		return g->err;
	}
	th->pend = *m;
	th->has_pend = true;
	th->last_open = false;
	return 0;
}

static int
marker_add(struct gsess *g, struct gthread *th, struct gmark *m)
{
	m->seq = g->seq++;
	if (m->phase == 3) {
		/*
		 * An end pairs with the latest open begin of the same name:
		 * the begin becomes a complete interval (phase 1), which the
		 * front-end displays better than a 2/3 pair.
		 */
		size_t lim = th->nopen > GECKO_PAIR_SEARCH ?
		    th->nopen - GECKO_PAIR_SEARCH : 0;

		for (size_t i = th->nopen; i > lim; i--) {
			struct gmark b = th->open[i - 1];

			if (!pairs_with(&b, m))
				continue;
			b.phase = 1;
			b.t1 = m->t0 >= b.t0 ? m->t0 : b.t0;
			memmove(&th->open[i - 1], &th->open[i],
			    (th->nopen - i) * sizeof(*th->open));
			th->nopen--;
			free(m->vals);
			m->vals = NULL;
			return marker_finish(g, th, &b);
		}
		m->t1 = m->t0;
	}
	if (m->phase != 2)
		return marker_finish(g, th, m);
	if (pend_flush(g, th) != 0) {
		free(m->vals);
		return g->err;
	}
	/* Too many open: the oldest stays an unmatched begin (phase 2). */
	if (th->nopen == GECKO_MAX_OPEN) {
		struct gmark old = th->open[0];

		memmove(&th->open[0], &th->open[1],
		    (th->nopen - 1) * sizeof(*th->open));
		th->nopen--;
		if (marker_spill(g, th, &old) != 0)
			return g->err;
	}
	if (VEC_PUSH(g, th->open, th->nopen, th->opencap, *m) != 0) {
		free(m->vals);
		return g->err;
	}
	th->last_open = true;
	return 0;
}

/* After the last record: begins that never ended stay phase 2. */
static void
markers_close(struct gsess *g)
{
	for (size_t i = 0; i < g->nth; i++) {
		struct gthread *th = &g->th[i];

		pend_flush(g, th);
		for (size_t k = 0; k < th->nopen; k++)
			marker_spill(g, th, &th->open[k]);
		th->nopen = 0;
		th->last_open = false;
	}
}

/* Copy the typed fields of @r, copied strings included. */
static struct rtprof_val *
vals_copy(struct gsess *g, const struct rtprof_rec_view *r)
{
	size_t n = r->nvals, bytes = 0, off;
	struct rtprof_val *v;
	char *s;

	if (n == 0)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (r->vals[i].kind == RTPROF_VAL_STR)
			bytes += r->vals[i].v.str.n + 1;
	v = malloc(n * sizeof(*v) + bytes);
	if (v == NULL) {
		gecko_fail(g, -ENOMEM);
		return NULL;
	}
	s = (char *)(v + n);
	off = 0;
	for (size_t i = 0; i < n; i++) {
		v[i] = r->vals[i];
		if (v[i].kind != RTPROF_VAL_STR)
			continue;
		if (v[i].v.str.n != 0)
			memcpy(s + off, r->vals[i].v.str.p, v[i].v.str.n);
		s[off + v[i].v.str.n] = '\0';
		v[i].v.str.p = s + off;
		off += v[i].v.str.n + 1;
	}
	return v;
}

/*
 * The raw stack node (@prefix1, @value, @kind) of @th, created if new.
 * Return: its index, or -1 (out of memory, latched).
 */
static int64_t
raw_node(struct gsess *g, struct gthread *th, uint32_t prefix1,
    uint64_t value, uint8_t kind, uint16_t epoch)
{
	uint64_t b = (uint64_t)prefix1 << 24 | (uint64_t)epoch << 8 | kind;
	int64_t i = pmap_get(&th->rs_idx, value, b);
	struct grawstack n = { .value = value, .prefix1 = prefix1,
	    .kind = kind, .epoch = epoch };

	if (i >= 0)
		return i;
	if (VEC_PUSH(g, th->rs, th->nrs, th->rscap, n) != 0)
		return -1;
	if (pmap_put(&th->rs_idx, value, b, th->nrs - 1) != 0) {
		th->nrs--;
		gecko_fail(g, -ENOMEM);
		return -1;
	}
	return (int64_t)th->nrs - 1;
}

/* The node like @node with the Idle mark set or cleared (the leaf). */
static int64_t
raw_idle(struct gsess *g, struct gthread *th, uint32_t node, bool idle)
{
	const struct grawstack *n = &th->rs[node];

	if (((n->kind & RAW_IDLE) != 0) == idle)
		return node;
	return raw_node(g, th, n->prefix1, n->value,
	    (uint8_t)((n->kind & RAW_KIND_MASK) | (idle ? RAW_IDLE : 0)),
	    n->epoch);
}

static int
smp_add(struct gsess *g, struct gthread *th, uint64_t t, uint64_t cpu_ns,
    int64_t node)
{
	struct gsmp s;

	if (node < 0)
		return g->err;
	memset(&s, 0, sizeof(s));
	s.key = time_key(g, t);
	s.t = t;
	s.cpu_ns = cpu_ns;
	s.stack = (uint32_t)node;
	s.seq = g->seq++;
	if (!th->has_first || t < th->first_ticks) {
		th->first_ticks = t;
		th->has_first = true;
	}
	th->nsmp++;
	return spill_put(g, &th->smps, sizeof(s), &s, sizeof(s));
}

/* The key of a recorded stack: [n | idle << 32, mask words, frames]. */
static size_t
scache_key(const struct rtprof_rec_view *r, unsigned n, bool idle,
    uint16_t epoch, uint64_t *key)
{
	key[0] = (uint64_t)n | (uint64_t)idle << 32 | (uint64_t)epoch << 40;
	memcpy(key + 1, r->label_mask, RTPROF_REC_MASK_WORDS * 8);
	memcpy(key + 1 + RTPROF_REC_MASK_WORDS, r->frames, (size_t)n * 8);
	return 1 + RTPROF_REC_MASK_WORDS + n;
}

/* Four independent lanes: no multiply waits for the previous one. */
static uint64_t
scache_hash(const uint64_t *key, size_t words)
{
	uint64_t h[4] = { 0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
	    0x165667b19e3779f9ull, 0x27d4eb2f165667c5ull };
	size_t i = 0;

	for (; i + 4 <= words; i += 4)
		for (int k = 0; k < 4; k++)
			h[k] = (h[k] ^ key[i + k]) * 0xbf58476d1ce4e5b9ull;
	for (; i < words; i++)
		h[i & 3] = (h[i & 3] ^ key[i]) * 0xbf58476d1ce4e5b9ull;
	for (int k = 1; k < 4; k++)
		h[0] = (h[0] ^ (h[k] >> 29) ^ h[k]) * 0x94d049bb133111ebull;
	return h[0] ^ h[0] >> 31;
}

/* Return: the leaf node cached for @key, or -1. */
static int64_t
scache_get(const struct scache *c, const uint64_t *key, size_t words,
    uint64_t h)
{
	if (c->nslot == 0)
		return -1;
	for (size_t i = (size_t)h & (c->nslot - 1); c->e[i].key != NULL;
	    i = (i + 1) & (c->nslot - 1))
		if (c->e[i].hash == h && c->e[i].key[0] == key[0] &&
		    memcmp(c->e[i].key, key, words * 8) == 0)
			return c->e[i].node;
	return -1;
}

static int
scache_put(struct scache *c, const uint64_t *key, size_t words, uint64_t h,
    uint32_t node)
{
	uint64_t *k;
	size_t i;

	if ((c->n + 1) * 2 > c->nslot) {
		size_t ns = c->nslot != 0 ? c->nslot * 2 : 256;
		struct scache_ent *ne = calloc(ns, sizeof(*ne));

		if (ne == NULL)
			return -ENOMEM;
		for (size_t j = 0; j < c->nslot; j++) {
			if (c->e[j].key == NULL)
				continue;
			for (i = (size_t)c->e[j].hash & (ns - 1);
			    ne[i].key != NULL; i = (i + 1) & (ns - 1))
				;
			ne[i] = c->e[j];
		}
		free(c->e);
		c->e = ne;
		c->nslot = ns;
	}
	k = malloc(words * 8);
	if (k == NULL)
		return -ENOMEM;
	memcpy(k, key, words * 8);
	for (i = (size_t)h & (c->nslot - 1); c->e[i].key != NULL;
	    i = (i + 1) & (c->nslot - 1))
		;
	c->e[i].hash = h;
	c->e[i].key = k;
	c->e[i].node = node;
	c->n++;
	return 0;
}

static void
scache_free(struct scache *c)
{
	for (size_t i = 0; i < c->nslot; i++)
		free(c->e[i].key);
	free(c->e);
}

/*
 * SAMPLE: the frames (outermost first) become a path of the sampled
 * thread's raw stack tree; the last native frame is the interrupted
 * instruction, every other one a return address; an asleep sample's leaf
 * is marked Idle.
 */
static int
on_sample(struct gsess *g, const struct rtprof_rec_view *r)
{
	struct gthread *th = thread_get(g, r->tid);
	bool idle = (r->flags & RTPROF_SAMPLE_ASLEEP) != 0;
	unsigned n = r->frames != NULL ? r->nframes : 0, last_native = n;
	uint64_t key[1 + RTPROF_REC_MASK_WORDS + RTPROF_REC_MAX_FRAMES], h;
	size_t words;
	uint32_t prefix1 = 0;
	int64_t node = -1;
	uint16_t epoch = epoch_at(g, r->t0);

	if (th == NULL)
		return g->err;
	g->nsamples++;
	if (r->flags & RTPROF_SAMPLE_TRUNCATED)
		g->ntruncated++;
	if (r->flags & RTPROF_SAMPLE_NO_NATIVE)
		g->nno_native++;
	if (r->flags & RTPROF_SAMPLE_SIG_BLOCKED) {
		g->nsig_blocked++;
		th->nsig_blocked++;
	}
	if (n != 0) {
		unsigned labels = 0;

		for (unsigned w = 0; w < RTPROF_REC_MASK_WORDS; w++)
			labels += (unsigned)__builtin_popcountll(
			    r->label_mask[w]);
		if (labels < n)
			g->has_native = true;
		words = scache_key(r, n, idle, epoch, key);
		h = scache_hash(key, words);
		node = scache_get(&th->sc, key, words, h);
		if (node >= 0) {
			th->last_stack1 = (uint32_t)node + 1;
			return smp_add(g, th, r->t0, r->cpu_ns, node);
		}
	}
	for (unsigned i = 0; i < n; i++)
		if (!rtprof_rec_frame_is_label(r->label_mask, i))
			last_native = i;
	for (unsigned i = 0; i < n; i++) {
		uint8_t kind;

		if (rtprof_rec_frame_is_label(r->label_mask, i)) {
			kind = RAW_LABEL;
		} else {
			kind = i == last_native ? RAW_PC : RAW_RET;
			g->has_native = true;
		}
		if (idle && i + 1 == n)
			kind |= RAW_IDLE;
		node = raw_node(g, th, prefix1, r->frames[i], kind,
		    (kind & RAW_KIND_MASK) == RAW_LABEL ? 0 : epoch);
		if (node < 0)
			return g->err;
		prefix1 = (uint32_t)node + 1;
	}
	if (n == 0)
		node = raw_node(g, th, 0, r->flags & RTPROF_SAMPLE_LABELS ?
		    TEXT_NO_LABEL : TEXT_NO_STACK,
		    (uint8_t)(RAW_TEXT | (idle ? RAW_IDLE : 0)), 0);
	if (node < 0)
		return g->err;
	if (n != 0 && scache_put(&th->sc, key, words, h, (uint32_t)node) != 0)
		return gecko_fail(g, -ENOMEM);
	th->last_stack1 = (uint32_t)node + 1;
	return smp_add(g, th, r->t0, r->cpu_ns, node);
}

/* SAME: the previous SAMPLE's stack of that thread, in O(1). */
static int
on_same(struct gsess *g, const struct rtprof_rec_view *r)
{
	struct gthread *th = thread_get(g, r->tid);
	bool idle = (r->flags & RTPROF_SAMPLE_ASLEEP) != 0;
	int64_t node;

	if (th == NULL)
		return g->err;
	g->nsame++;
	if (th->last_stack1 != 0) {
		node = raw_idle(g, th, th->last_stack1 - 1, idle);
	} else {
		/* Its SAMPLE was lost (or recycled in flight mode). */
		g->nsame_unknown++;
		node = raw_node(g, th, 0, TEXT_UNKNOWN_STACK,
		    (uint8_t)(RAW_TEXT | (idle ? RAW_IDLE : 0)), 0);
	}
	return smp_add(g, th, r->t0, r->cpu_ns, node);
}

/*
 * BACKTRACE: the stack of the marker recorded just before it on the same
 * thread (same start time), a path of that thread's raw stack tree whose
 * native frames are all return addresses (the thread was in a call). A
 * BACKTRACE whose marker was lost (or does not match) is counted, unused.
 */
static int
on_backtrace(struct gsess *g, struct gthread *th,
    const struct rtprof_rec_view *r)
{
	struct gmark *m = NULL;
	unsigned n = r->frames != NULL ? r->nframes : 0;
	uint32_t prefix1 = 0;
	int64_t node = -1;
	uint16_t epoch = epoch_at(g, r->t0);

	if (th->has_pend)
		m = &th->pend;
	else if (th->last_open && th->nopen != 0)
		m = &th->open[th->nopen - 1];
	if (m == NULL || m->kind == GMARK_DROPPED || m->t0 != r->t0 ||
	    m->stack1 != 0) {
		g->nbt_unmatched++;
		return 0;
	}
	for (unsigned i = 0; i < n; i++) {
		bool label = rtprof_rec_frame_is_label(r->label_mask, i);

		if (!label)
			g->has_native = true;
		node = raw_node(g, th, prefix1, r->frames[i],
		    label ? RAW_LABEL : RAW_RET, label ? 0 : epoch);
		if (node < 0)
			return g->err;
		prefix1 = (uint32_t)node + 1;
	}
	if (n == 0 && (node = raw_node(g, th, 0, TEXT_NO_STACK,
	    RAW_TEXT, 0)) < 0)
		return g->err;
	/* raw_node() may have moved nothing but th->rs: @m is still valid. */
	m->stack1 = (uint32_t)node + 1;
	g->nbacktraces++;
	return 0;
}

/* OVERHEAD: a marker on the sampler thread, and the session's totals. */
static int
on_overhead(struct gsess *g, struct gthread *th,
    const struct rtprof_rec_view *r)
{
	struct govh o = { .t0 = r->t0, .t1 = r->t1 >= r->t0 ? r->t1 : r->t0 };
	uint64_t total;

	memcpy(o.v, r->overhead, sizeof(o.v));
	total = o.v[0] + o.v[1] + o.v[2];
	g->ovh_ticks++;
	for (int i = 0; i < 4; i++)
		g->ovh_sum[i] += o.v[i];
	if (total > g->ovh_max)
		g->ovh_max = total;
	note_time(g, o.t1);
	th->novh++;
	return spill_put(g, &th->ovs, sizeof(o), &o, sizeof(o));
}

static int
on_record(void *ctx, const struct rtprof_dump_data *d,
    const struct rtprof_rec_view *r)
{
	struct gsess *g = cur_sess(ctx);
	const struct gschema *sc;
	struct gthread *th;
	struct gmark m;

	if (g == NULL)
		return 0;
	th = thread_get(g, d->tid);
	if (th == NULL)
		return g->err;
	th->recs++;
	if (r->kind <= RTPROF_REC_KIND_MAX)
		g->recs_by_kind[r->kind]++;
	if (r->kind == RTPROF_REC_BACKTRACE)
		return on_backtrace(g, th, r);
	/* Any other record: the pending marker has no backtrace coming. */
	if (th->has_pend && pend_flush(g, th) != 0)
		return g->err;
	if (!th->has_first || r->t0 < th->first_ticks) {
		th->first_ticks = r->t0;
		th->has_first = true;
	}
	note_time(g, r->t0);
	memset(&m, 0, sizeof(m));
	m.kind = r->kind;
	m.t0 = r->t0;
	m.name = r->name;
	m.category = r->category;
	switch (r->kind) {
	case RTPROF_REC_INSTANT:
		m.phase = 0;
		return marker_add(g, th, &m);
	case RTPROF_REC_BEGIN:
		m.phase = 2;
		return marker_add(g, th, &m);
	case RTPROF_REC_END:
		m.kind = RTPROF_REC_BEGIN;      /* pairs with a begin */
		m.phase = 3;
		return marker_add(g, th, &m);
	case RTPROF_REC_INTERVAL:
		m.phase = 1;
		m.t1 = r->t1 >= r->t0 ? r->t1 : r->t0;
		note_time(g, m.t1);
		return marker_add(g, th, &m);
	case RTPROF_REC_TYPED:
		if (r->phase > 3)
			return 0;
		m.phase = r->phase;
		m.type = r->id;
		m.t1 = r->phase == 1 && r->t1 >= r->t0 ? r->t1 : r->t0;
		m.nvals = (uint8_t)r->nvals;
		m.vals = vals_copy(g, r);
		if (g->err != 0)
			return g->err;
		sc = schema_of(g, r->id);
		m.category = sc != NULL ? (uint8_t)sc->category : 0;
		note_time(g, m.t1);
		return marker_add(g, th, &m);
	case RTPROF_REC_COUNTER:
		return counter_value(g, r->id, r->t0, r->value);
	case RTPROF_REC_SLEEP:
		return sample_add(g, th, r->t0, true);
	case RTPROF_REC_WAKE:
		return sample_add(g, th, r->t0, false);
	/* Sampler records: @th (the sampler) may move in thread_get(). */
	case RTPROF_REC_SAMPLE:
		return on_sample(g, r);
	case RTPROF_REC_SAME:
		return on_same(g, r);
	case RTPROF_REC_OVERHEAD:
		return on_overhead(g, th, r);
	default:
		return 0;
	}
}

static int
on_pause(void *ctx, uint64_t start_ticks, uint64_t end_ticks)
{
	struct gsess *g = cur_sess(ctx);
	uint64_t p[2] = { start_ticks, end_ticks >= start_ticks ? end_ticks :
	    start_ticks };

	if (g == NULL)
		return 0;
	if (grow((void **)&g->pause, &g->pausecap, g->npause + 1,
	    sizeof(*g->pause)) != 0)
		return gecko_fail(g, -ENOMEM);
	g->pause[g->npause][0] = p[0];
	g->pause[g->npause][1] = p[1];
	g->npause++;
	return 0;
}

static int
on_values(void *ctx, uint64_t ticks, size_t n, const uint32_t *ids,
    const int64_t *values)
{
	struct gsess *g = cur_sess(ctx);

	if (g == NULL)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (counter_value(g, ids[i], ticks, values[i]) != 0)
			return g->err;
	return 0;
}

static int
on_event(void *ctx, const struct rtprof_dump_event *e)
{
	struct gsess *g = cur_sess(ctx);
	struct gevent ev;

	if (g == NULL)
		return 0;
	g->ev_total++;
	if (g->nev >= GECKO_MAX_EVENTS)
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.ticks = e->ticks;
	ev.what = dup_opt(e->what != NULL ? e->what : "", &g->err);
	ev.has_errno = e->has_errno;
	ev.errnum = e->errnum;
	ev.message = dup_opt(e->message, &g->err);
	ev.has_max_bytes = e->has_max_bytes;
	ev.max_bytes = e->max_bytes;
	if (VEC_PUSH(g, g->ev, g->nev, g->evcap, ev) != 0) {
		free(ev.what);
		free(ev.message);
	}
	return g->err;
}

static int
on_trailer(void *ctx, const struct rtprof_dump_trailer *t)
{
	struct gsess *g = cur_sess(ctx);

	if (g == NULL)
		return 0;
	g->have_trailer = true;
	g->stop_ticks = t->stop_ticks;
	g->stop_mono_ns = t->stop_mono_ns;
	g->tr_chunks_lost = t->chunks_lost;
	g->tr_threads_omitted = t->threads_omitted;
	g->tr_limit_reached = t->limit_reached;
	for (size_t i = 0; i < t->nthreads; i++) {
		struct gthread *th = thread_get(g, t->threads[i].tid);

		if (th == NULL)
			return g->err;
		settled_add(th, &t->threads[i]);
	}
	return 0;
}

static int
on_damage(void *ctx, const struct rtprof_dump_damage *d)
{
	struct rtprof_gecko *g = ctx;
	struct gdamage gd = {
		.kind = d->kind, .offset = d->offset, .length = d->length,
		.count = d->count, .session_index = d->session_index,
		.message = d->message,
	};

	g->dmg_total++;
	if (g->ndmg >= GECKO_MAX_DAMAGE)
		return 0;
	if (grow((void **)&g->dmg, &g->dmgcap, g->ndmg + 1,
	    sizeof(*g->dmg)) != 0) {
		g->err = -ENOMEM;
		return -ENOMEM;
	}
	g->dmg[g->ndmg++] = gd;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Public: lifetime and reading                                         */

int
rtprof_gecko_new(struct rtprof_gecko **out, const char *input_name)
{
	struct rtprof_gecko *g = calloc(1, sizeof(*g));

	if (g == NULL)
		return -ENOMEM;
	g->input = dup_opt(input_name != NULL ? input_name : "", &g->err);
	if (g->err != 0 || rtprof_spill_new(&g->spill, NULL,
	    GECKO_SPILL_BUDGET) != 0) {
		free(g->input);
		free(g);
		return -ENOMEM;
	}
	*out = g;
	return 0;
}

void
rtprof_gecko_free(struct rtprof_gecko *g)
{
	if (g == NULL)
		return;
	free(g->input);
	for (size_t i = 0; i < g->nsess; i++)
		gsess_free(g->sess[i]);
	free(g->sess);
	free(g->dmg);
	rtprof_spill_free(g->spill);
	free(g);
}

void
rtprof_gecko_set_symbols(struct rtprof_gecko *g,
    const struct rtprof_gecko_symbols *opt)
{
	if (opt != NULL)
		g->symopt = *opt;
	else
		memset(&g->symopt, 0, sizeof(g->symopt));
}

void
rtprof_gecko_set_progress(struct rtprof_gecko *g, rtprof_gecko_progress_cb cb,
    void *ctx)
{
	g->progress = cb;
	g->progress_ctx = ctx;
}

static void
gsess_free(struct gsess *g)
{
	if (g == NULL)
		return;
	free(g->process);
	free(g->exe);
	free(g->sysname);
	free(g->release);
	free(g->machine);
	free(g->hostname);
	free(g->clock_source);
	free(g->mode);
	free(g->sampling_method);
	free(g->sampling_why);
	for (uint32_t i = 0; i < g->ncat; i++)
		free(g->cat[i].name);
	free(g->cat_out);
	for (size_t i = 0; i < g->nmod; i++)
		free(g->mod[i].path);
	free(g->mod);
	free(g->chg);
	for (size_t i = 0; i < g->nimg; i++)
		free(g->img[i].bytes);
	free(g->img);
	for (size_t i = 0; i < g->nth; i++) {
		struct gthread *th = &g->th[i];

		free(th->name);
		/* Streams belong to the converter's spill. */
		for (size_t k = 0; k < th->nopen; k++)
			free(th->open[k].vals);
		free(th->open);
		if (th->has_pend)
			free(th->pend.vals);
		free(th->rs);
		pmap_free(&th->rs_idx);
		scache_free(&th->sc);
	}
	free(g->th);
	rtprof_idmap_free(&g->th_idx);
	rtprof_idmap_free(&g->ctr_idx);
	for (size_t i = 0; i < g->nschema; i++)
		schema_clear(&g->schema[i]);
	free(g->schema);
	rtprof_idmap_free(&g->schema_idx);
	for (size_t i = 0; i < g->nctr; i++) {
		free(g->ctr[i].name);
		free(g->ctr[i].category);
		free(g->ctr[i].description);
		free(g->ctr[i].unit);
	}
	free(g->ctr);
	for (size_t i = 0; i < g->strings.nslot; i++)
		free(g->strings.e[i].text);
	free(g->strings.e);
	free(g->pause);
	for (size_t i = 0; i < g->nev; i++) {
		free(g->ev[i].what);
		free(g->ev[i].message);
	}
	free(g->ev);
	rtprof_symbolizer_free(g->sym);
	free(g);
}

int
rtprof_gecko_read_fd(struct rtprof_gecko *g, int fd,
    struct rtprof_dump_stats *st)
{
	struct rtprof_dump_cb cb = {
		.ctx = g,
		.on_frame = on_frame,
		.on_header = on_header,
		.on_modules = on_modules,
		.on_module_change = on_module_change,
		.on_image = on_image,
		.on_thread = on_thread,
		.on_schema = on_schema,
		.on_counter = on_counter,
		.on_string = on_string,
		.on_data = on_data,
		.on_record = on_record,
		.on_pause = on_pause,
		.on_values = on_values,
		.on_event = on_event,
		.on_trailer = on_trailer,
		.on_damage = on_damage,
	};
	int rc = rtprof_dump_read_fd(fd, &cb, &g->stats);

	if (st != NULL)
		*st = g->stats;
	g->cur = NULL;
	for (size_t i = 0; i < g->nsess; i++)
		markers_close(g->sess[i]);
	for (size_t i = 0; i < g->nsess && g->err == 0; i++)
		g->err = g->sess[i]->err;
	/*
	 * A session whose HEADER frame arrived but could not be decoded has
	 * no clock either: ignored like a headerless one, once.
	 */
	for (size_t i = 0; i < g->nsess; i++) {
		if (g->sess[i]->have_header || g->sess[i]->frames == 0)
			continue;
		g->ignored_frames += g->sess[i]->frames;
		g->ignored_sessions++;
		g->sess[i]->frames = 0;
	}
	if (g->err != 0)
		return g->err;
	return rc;
}

uint64_t
rtprof_gecko_problems(const struct rtprof_gecko *g)
{
	return g->dmg_total + g->ignored_frames;
}

int
rtprof_gecko_first_damage(const struct rtprof_gecko *g, uint64_t *offset,
    const char **message)
{
	if (g->ndmg == 0)
		return -ENOENT;
	*offset = g->dmg[0].offset;
	*message = g->dmg[0].message;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Writing                                                              */

/* Per-thread output state: tables built while the thread is written. */
struct tout {
	struct strtab str;
	int64_t frame_awake, frame_idle;        /* frameTable rows or -1 */
	int64_t stack_awake, stack_idle;
	int64_t nframes, nstacks;
};

static const char *
string_text(const struct gsess *g, uint64_t ref, char *buf,
    size_t size, size_t *len)
{
	const struct strmap_ent *e = strmap_find(&g->strings, ref);

	if (e != NULL) {
		*len = e->len;
		return e->text;
	}
	snprintf(buf, size, "(unknown string 0x%" PRIx64 ")", ref);
	*len = strlen(buf);
	return buf;
}

static int64_t
intern(struct gsess *g, struct tout *to, const char *s, size_t n)
{
	int64_t i = strtab_intern(&to->str, s, n);

	if (i < 0) {
		gecko_fail(g, -ENOMEM);
		return 0;
	}
	return i;
}

static uint32_t
cat_index(const struct gsess *g, uint32_t id)
{
	return id < g->ndump_cat ? id : g->cat_default;
}

/*
 * The index written for @g's category @idx. The front-end reads the
 * categories of the top-level meta only, so a sub-process's index is
 * mapped to the top-level category of the same name, else to its
 * default one (a sub-process with more categories than the top level
 * wrote indexes past the end of that list).
 */
static uint32_t
out_cat(const struct gsess *g, uint32_t idx)
{
	return g->cat_out != NULL && idx < g->ncat ? g->cat_out[idx] : idx;
}

static const char *
display_name(unsigned bit)
{
	static const char *const names[] = {
		"marker-chart", "marker-table", "timeline-overview",
		"timeline-memory", "timeline-ipc", "timeline-fileio",
		"stack-chart",
	};

	return bit < sizeof(names) / sizeof(*names) ? names[bit] : NULL;
}

static bool
format_known(const char *f)
{
	static const char *const formats[] = {
		"url", "file-path", "sanitized-string", "string",
		"unique-string", "flow-id", "terminating-flow-id", "duration",
		"time", "seconds", "milliseconds", "microseconds",
		"nanoseconds", "bytes", "percentage", "integer", "decimal",
		"hexadecimal", "pid", "tid", "list",
	};

	for (size_t i = 0; i < sizeof(formats) / sizeof(*formats); i++)
		if (strcmp(f, formats[i]) == 0)
			return true;
	return false;
}

/* Formats whose values are stringTable indexes. */
static bool
format_is_index(const char *f)
{
	return strcmp(f, "unique-string") == 0 || strcmp(f, "flow-id") == 0 ||
	    strcmp(f, "terminating-flow-id") == 0;
}

/* The format written for a field: as declared when valid, else by kind. */
static const char *
field_format(const char *declared, uint32_t kind)
{
	if (declared != NULL && format_known(declared))
		return declared;
	switch (kind) {
	case 1:
	case 2:
		return "integer";
	case 3:
		return "decimal";
	default:
		return "string";
	}
}


static void
write_schema(struct json *j, const struct gschema *sc)
{

	json_obj(j);
	json_key(j, "name");
	json_str(j, sc->name);
	json_key(j, "display");
	json_arr(j);
	if ((sc->display & 0x7f) == 0) {
		json_str(j, "marker-chart");
		json_str(j, "marker-table");
	}
	for (unsigned b = 0; b < 7; b++)
		if (sc->display & (1u << b))
			json_str(j, display_name(b));
	json_arr_end(j);
	if (sc->tooltip != NULL) {
		json_key(j, "tooltipLabel");
		json_str(j, sc->tooltip);
	}
	if (sc->table != NULL) {
		json_key(j, "tableLabel");
		json_str(j, sc->table);
	}
	if (sc->chart != NULL) {
		json_key(j, "chartLabel");
		json_str(j, sc->chart);
	}
	json_key(j, "data");
	json_arr(j);
	for (uint32_t i = 0; i < sc->nfields; i++) {
		const char *fmt = field_format(sc->f[i].format, sc->f[i].kind);

		/* "type" is the payload's schema selector: never a field. */
		if (strcmp(sc->f[i].key, "type") == 0)
			continue;
		json_obj(j);
		json_key(j, "key");
		json_str(j, sc->f[i].key);
		json_key(j, "label");
		json_str(j, sc->f[i].label[0] != '\0' ? sc->f[i].label :
		    sc->f[i].key);
		json_key(j, "format");
		json_str(j, fmt);
		if (sc->f[i].kind >= 4 && !format_is_index(fmt)) {
			json_key(j, "searchable");
			json_bool(j, true);
		}
		json_obj_end(j);
	}
	json_arr_end(j);
	json_obj_end(j);
}

#define RTPROF_PAUSE_SCHEMA "rtprof.Paused"

static double
sess_interval(const struct gsess *g)
{
	double interval = (double)g->sample_interval_us / 1000.0;

	/* 0xFFFFFFFF: recorded without the sampler (RTPROF_SAMPLING_OFF). */
	if (g->sample_interval_us >= 0xFFFFFFFFu)
		return 1.0;
	return interval > 0.0 ? interval : 1.0;
}

/*
 * The session's range in its own ms: from its start to the stop pair,
 * widened to every event (the last VALUES frame may be stamped after the
 * stop pair was read), plus one interval.
 */
static void
sess_range(const struct gsess *g, double *start, double *end)
{
	double e = 0.0;

	if (g->have_trailer)
		e = gecko_ms(g, g->stop_ticks);
	if (g->have_t && gecko_ms(g, g->last_t) > e)
		e = gecko_ms(g, g->last_t);
	*start = 0.0;
	*end = e + sess_interval(g);
}

/*
 * Are the session's frame locations final? Not when native frames were
 * recorded and symbolication is off: the front-end may then symbolicate
 * the hex addresses through libs.
 */
static bool
sess_presymbolicated(const struct gsess *g)
{
	return !(g->has_native && g->file->symopt.disabled);
}

/* Does the session hold sampler samples (threadCPUDelta columns)? */
static bool
sess_sampled(const struct gsess *g)
{
	return g->nsamples + g->nsame != 0;
}

/* The sample units of threadCPUDelta (cpu_ns of SAMPLE/SAME records). */
static void
write_sample_units(struct json *j)
{
	json_key(j, "sampleUnits");
	json_obj(j);
	json_key(j, "time");
	json_str(j, "ms");
	json_key(j, "eventDelay");
	json_str(j, "ms");
	json_key(j, "threadCPUDelta");
	json_str(j, "ns");
	json_obj_end(j);
}

/* Events a thread dropped at the source (DATA frame drop counts). */
static void
write_dropped_schema(struct json *j)
{
	json_obj(j);
	json_key(j, "name");
	json_str(j, GECKO_DROPPED_SCHEMA);
	json_key(j, "display");
	json_arr(j);
	json_str(j, "marker-chart");
	json_str(j, "marker-table");
	json_str(j, "timeline-overview");
	json_arr_end(j);
	json_key(j, "tooltipLabel");
	json_str(j, "{marker.data.full} events dropped (no free chunk), "
	    "{marker.data.nested} re-entrant");
	json_key(j, "tableLabel");
	json_str(j, "dropped: {marker.data.full} no free chunk, "
	    "{marker.data.nested} re-entrant");
	json_key(j, "chartLabel");
	json_str(j, "dropped {marker.data.full}");
	json_key(j, "data");
	json_arr(j);
	json_obj(j);
	json_key(j, "key");
	json_str(j, "full");
	json_key(j, "label");
	json_str(j, "No free chunk");
	json_key(j, "format");
	json_str(j, "integer");
	json_obj_end(j);
	json_obj(j);
	json_key(j, "key");
	json_str(j, "nested");
	json_key(j, "label");
	json_str(j, "Re-entrant (signal handler)");
	json_key(j, "format");
	json_str(j, "integer");
	json_obj_end(j);
	json_obj(j);
	json_key(j, "label");
	json_str(j, "Description");
	json_key(j, "value");
	json_str(j, "the thread recorded these events while rtprof had no "
	    "free chunk for it (memory limit, writer behind) or while it was "
	    "already recording (a signal handler): they are not in the "
	    "profile");
	json_obj_end(j);
	json_arr_end(j);
	json_obj_end(j);
}

/* The schema of the sampler's OVERHEAD markers (one per tick). */
static void
write_overhead_schema(struct json *j)
{
	static const char *const f[][3] = {
		{ "total", "Total", "nanoseconds" },
		{ "ticks", "Sampler ticks", "integer" },
		{ "max", "Longest tick", "nanoseconds" },
		{ "lock", "Lock", "nanoseconds" },
		{ "threads", "Sampling threads", "nanoseconds" },
		{ "counters", "Sampling counters", "nanoseconds" },
		{ "nthreads", "Threads sampled (most in a tick)", "integer" },
	};

	json_obj(j);
	json_key(j, "name");
	json_str(j, GECKO_OVERHEAD_SCHEMA);
	json_key(j, "display");
	json_arr(j);
	json_str(j, "marker-chart");
	json_str(j, "marker-table");
	json_arr_end(j);
	json_key(j, "tooltipLabel");
	json_str(j, "Sampler: {marker.data.total} in {marker.data.ticks} "
	    "ticks (longest {marker.data.max})");
	json_key(j, "tableLabel");
	json_str(j, "{marker.data.total} in {marker.data.ticks} ticks: lock "
	    "{marker.data.lock}, threads {marker.data.threads}, counters "
	    "{marker.data.counters}");
	json_key(j, "chartLabel");
	json_str(j, "{marker.data.total}");
	json_key(j, "data");
	json_arr(j);
	for (size_t i = 0; i < sizeof(f) / sizeof(*f); i++) {
		json_obj(j);
		json_key(j, "key");
		json_str(j, f[i][0]);
		json_key(j, "label");
		json_str(j, f[i][1]);
		json_key(j, "format");
		json_str(j, f[i][2]);
		json_obj_end(j);
	}
	json_obj(j);
	json_key(j, "label");
	json_str(j, "Description");
	json_key(j, "value");
	json_str(j, "Time the rtprof sampler spent in its ticks of this "
	    "window (at most " GECKO_OVERHEAD_WINDOW_TEXT "; its own "
	    "thread's CPU, not the sampled threads')");
	json_obj_end(j);
	json_arr_end(j);
	/* No graph: a marker track is shown whatever its thread, and the
	 * sampler thread is hidden on load. */
	json_obj_end(j);
}

/*
 * The meta object, without the profiling range (see the writer). @top:
 * presymbolicated and sampleUnits depend on every process of the profile
 * and are written by rtprof_gecko_writer_finish(); the front-end reads
 * them from the top-level meta only.
 */
static void write_counter_schemas(struct gsess *g, struct json *j);

static int
schema_cmp(const void *a, const void *b)
{
	const struct gschema *x = *(const struct gschema *const *)a;
	const struct gschema *y = *(const struct gschema *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* @g's schemas in id order (malloc'ed), NULL when none or on ENOMEM. */
static const struct gschema **
schema_order(struct gsess *g)
{
	const struct gschema **o;

	if (g->nschema == 0)
		return NULL;
	o = malloc(g->nschema * sizeof(*o));
	if (o == NULL) {
		gecko_fail(g, -ENOMEM);
		return NULL;
	}
	for (size_t i = 0; i < g->nschema; i++)
		o[i] = &g->schema[i];
	qsort(o, g->nschema, sizeof(*o), schema_cmp);
	return o;
}

static void
write_meta(struct gsess *g, struct json *j, bool top)
{
	double interval = sess_interval(g);
	const struct gschema **order;
	struct strtab seen;
	char oscpu[256];

	json_obj(j);
	json_key(j, "version");
	json_u64(j, GECKO_VERSION);
	json_key(j, "interval");
	json_f64(j, interval);
	json_key(j, "startTime");
	json_f64(j, (double)g->start_wall_ns / 1e6);
	json_key(j, "shutdownTime");
	json_null(j);
	json_key(j, "processType");
	json_u64(j, 0);
	json_key(j, "product");
	json_str(j, "rtprof");
	json_key(j, "platform");
	json_str(j, g->sysname != NULL ? g->sysname : "");
	snprintf(oscpu, sizeof(oscpu), "%s %s %s",
	    g->sysname != NULL ? g->sysname : "",
	    g->release != NULL ? g->release : "",
	    g->machine != NULL ? g->machine : "");
	json_key(j, "oscpu");
	json_str(j, oscpu);
	json_key(j, "abi");
	json_str(j, g->machine != NULL ? g->machine : "");
	if (g->cpus > 0) {
		json_key(j, "logicalCPUs");
		json_i64(j, g->cpus);
	}
	if (g->sampling_method != NULL && g->sampling_method[0] != '\0') {
		/* Not read by the front-end; for people and tools (the
		 * gathering log says the same per process). */
		json_key(j, "rtprofSampling");
		json_obj(j);
		json_key(j, "method");
		json_str(j, g->sampling_method);
		json_key(j, "why");
		json_str(j, g->sampling_why != NULL ? g->sampling_why : "");
		json_obj_end(j);
	}
	json_key(j, "stackwalk");
	json_u64(j, 0);
	json_key(j, "debug");
	json_u64(j, 0);
	if (!top) {
		json_key(j, "presymbolicated");
		json_bool(j, sess_presymbolicated(g));
	}
	json_key(j, "categories");
	json_arr(j);
	for (uint32_t i = 0; i < g->ncat; i++) {
		json_obj(j);
		json_key(j, "name");
		json_str(j, g->cat[i].name != NULL ? g->cat[i].name : "");
		json_key(j, "color");
		json_str(j, g->cat[i].color);
		json_key(j, "subcategories");
		json_arr(j);
		json_str(j, "Other");
		json_arr_end(j);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_key(j, "markerSchema");
	json_arr(j);
	/*
	 * Schema names must be unique: the first type of a name wins (its
	 * markers and those of later types with the same name share it).
	 */
	memset(&seen, 0, sizeof(seen));
	order = schema_order(g);
	for (size_t i = 0; order != NULL && i < g->nschema; i++) {
		const struct gschema *sc = order[i];
		size_t before = seen.n;

		if (strtab_intern(&seen, sc->name, strlen(sc->name)) < 0) {
			gecko_fail(g, -ENOMEM);
			break;
		}
		if (seen.n != before)
			write_schema(j, sc);
	}
	free(order);
	strtab_free(&seen);
	/* rtprof's own marker types. */
	json_obj(j);
	json_key(j, "name");
	json_str(j, RTPROF_PAUSE_SCHEMA);
	json_key(j, "display");
	json_arr(j);
	json_str(j, "marker-chart");
	json_str(j, "marker-table");
	json_str(j, "timeline-overview");
	json_arr_end(j);
	json_key(j, "tooltipLabel");
	json_str(j, "Recording paused");
	json_key(j, "tableLabel");
	json_str(j, "Recording paused");
	json_key(j, "chartLabel");
	json_str(j, "paused");
	json_key(j, "data");
	json_arr(j);
	json_obj(j);
	json_key(j, "label");
	json_str(j, "Description");
	json_key(j, "value");
	json_str(j, "rtprof recorded nothing in this range "
	    "(rtprof_session_pause)");
	json_obj_end(j);
	json_arr_end(j);
	json_obj_end(j);
	write_overhead_schema(j);
	write_dropped_schema(j);
	write_counter_schemas(g, j);
	json_arr_end(j);
	json_obj_end(j);
}

static const char *
basename_of(const char *p)
{
	const char *s = strrchr(p, '/');

	return s != NULL ? s + 1 : p;
}

static int
mod_cmp(const void *a, const void *b)
{
	const struct gmodule *x = *(const struct gmodule *const *)a;
	const struct gmodule *y = *(const struct gmodule *const *)b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Breakpad id of an ELF build id: its first 16 bytes read as a GUID (the
 * first three fields byte-swapped, as Breakpad's dump_syms does), upper
 * hex, then the age "0". Empty build id: "".
 */
static void
breakpad_id(const struct gmodule *m, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	static const int order[16] = { 3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11,
	    12, 13, 14, 15 };
	unsigned char id[16] = { 0 };
	size_t n = m->build_id_len < 16 ? m->build_id_len : 16;

	if (m->build_id_len == 0) {
		out[0] = '\0';
		return;
	}
	memcpy(id, m->build_id, n);
	for (int i = 0; i < 16; i++) {
		out[2 * i] = hex[id[order[i]] >> 4];
		out[2 * i + 1] = hex[id[order[i]] & 15];
	}
	out[32] = '0';
	out[33] = '\0';
}

static void
write_libs(struct gsess *g, struct json *j)
{
	const struct gmodule **v = NULL;
	uint64_t last_end = 0;

	json_key(j, "libs");
	json_arr(j);
	if (g->nmod != 0) {
		v = malloc(g->nmod * sizeof(*v));
		if (v == NULL) {
			gecko_fail(g, -ENOMEM);
			json_arr_end(j);
			return;
		}
	}
	for (size_t i = 0; i < g->nmod; i++)
		v[i] = &g->mod[i];
	if (g->nmod > 1)
		qsort(v, g->nmod, sizeof(*v), mod_cmp);
	for (size_t i = 0; i < g->nmod; i++) {
		const struct gmodule *m = v[i];
		char bp[34];

		/* The front-end needs sorted, non-overlapping ranges. */
		if (m->end <= m->start || (i != 0 && m->start < last_end))
			continue;
		last_end = m->end;
		breakpad_id(m, bp);
		json_obj(j);
		json_key(j, "start");
		json_u64(j, m->start);
		json_key(j, "end");
		json_u64(j, m->end);
		json_key(j, "offset");
		json_u64(j, m->offset);
		json_key(j, "name");
		json_str(j, basename_of(m->path));
		json_key(j, "path");
		json_str(j, m->path);
		json_key(j, "debugName");
		json_str(j, basename_of(m->path));
		json_key(j, "debugPath");
		json_str(j, m->path);
		json_key(j, "breakpadId");
		json_str(j, bp);
		json_key(j, "arch");
		json_str(j, g->machine != NULL ? g->machine : "");
		json_obj_end(j);
	}
	free(v);
	json_arr_end(j);
}

static bool
in_win(const struct gsess *g, double t)
{
	return t >= g->win_a && t <= g->win_b;
}

static bool
overlaps_win(const struct gsess *g, double t0, double t1)
{
	return t0 <= g->win_b && t1 >= g->win_a;
}

/* How counter @c is shown (gecko_counters.h). */
static void
counter_view(const struct gcounter *c, struct gecko_counter_view *v)
{
	bool builtin = c->id == RTPROF_COUNTER_SELF_MEMORY ||
	    c->id == RTPROF_COUNTER_PROCESS_MEMORY;

	gecko_counter_view(c->kind, c->category, c->unit, builtin, v);
}

/* Counter @c's name as shown ("counter N" when it was never described). */
static const char *
counter_name(const struct gcounter *c, char *buf, size_t n)
{
	if (c->id == RTPROF_COUNTER_SELF_MEMORY)
		return GECKO_SELF_MEMORY_NAME;
	if (c->id == RTPROF_COUNTER_PROCESS_MEMORY)
		return GECKO_PROCESS_MEMORY_NAME;
	if (c->name != NULL)
		return c->name;
	snprintf(buf, n, "counter %" PRIu32, c->id);
	return buf;
}

static const char *
counter_description(const struct gcounter *c)
{
	if (c->id == RTPROF_COUNTER_SELF_MEMORY)
		return "rtprof's own memory: chunks, thread records, "
		    "descriptors";
	if (c->id == RTPROF_COUNTER_PROCESS_MEMORY)
		return "the process's resident memory (/proc/self/statm), "
		    "read by the sampler";
	return c->description != NULL ? c->description : "";
}

/*
 * Reading a counter's values back. Every value is the counter's level
 * then (records and VALUES frames carry it, not a change). A value equal
 * to the previous one adds nothing: registered threads report a change
 * both as a record and in the next VALUES frame. Values outside the
 * window are skipped.
 */
struct cval_ctx {
	struct gsess *g;
	struct json *j;
	struct tout *to;                /* markers: the thread's strings */
	const struct gcounter *c;
	struct gecko_counter_view view;
	bool have_prev, have_held;
	int64_t prev;
	struct gcval held;              /* a marker waiting for its end */
	uint64_t inwin, written;
	double last_ms;                 /* time of the last row written */
};

static int
cval_count(void *ctx, const void *rec, size_t n)
{
	struct cval_ctx *c = ctx;
	struct gcval v;

	(void)n;
	memcpy(&v, rec, sizeof(v));
	c->inwin += in_win(c->g, gecko_ms(c->g, v.t));
	return 0;
}

/* Does counter @c have a value inside the window? */
static bool
counter_in_win(struct gsess *g, const struct gcounter *c)
{
	struct cval_ctx cx = { .g = g };

	/* Without a window every value is in it. */
	if (isinf(g->win_a) && isinf(g->win_b))
		return c->ns != 0;
	spill_get(g, c->vs, cval_count, &cx);
	return cx.inwin != 0;
}

/* Is @v a new level inside the window (cval_ctx's rules)? */
static bool
cval_take(struct cval_ctx *c, const struct gcval *v)
{
	if (c->have_prev && v->v == c->prev)
		return false;
	return in_win(c->g, gecko_ms(c->g, v->t));
}

/* A memory counter row: the change since the previous level. */
static void
cval_row(struct json *j, double t, int64_t delta)
{
	json_arr(j);
	json_f64(j, t);
	json_i64(j, delta);
	json_arr_end(j);
}

/*
 * A memory counter: the front-end zeroes the first change and draws the
 * running sum, so a row of 0 just before the first level comes first
 * (the graph starts from 0 bytes and the first level is kept).
 */
static int
cval_memory(void *ctx, const void *rec, size_t n)
{
	struct cval_ctx *c = ctx;
	struct gcval v;
	double t;

	(void)n;
	memcpy(&v, rec, sizeof(v));
	if (!cval_take(c, &v))
		return 0;
	t = gecko_ms(c->g, v.t);
	if (c->written == 0)
		cval_row(c->j, t - GECKO_COUNTER_LEAD_MS, 0);
	cval_row(c->j, t, (int64_t)((uint64_t)v.v - (uint64_t)(c->written ?
	    c->prev : 0)));
	c->written++;
	c->last_ms = t;
	c->prev = v.v;
	c->have_prev = true;
	return 0;
}

static double counter_end_ms(const struct gsess *g);

static void
write_memory_counter(struct gsess *g, struct json *j,
    const struct gcounter *c)
{
	struct cval_ctx cx = { .g = g, .j = j, .c = c };
	char buf[64];

	json_obj(j);
	json_key(j, "name");
	json_str(j, counter_name(c, buf, sizeof(buf)));
	json_key(j, "category");
	json_str(j, "Memory");
	json_key(j, "description");
	json_str(j, counter_description(c));
	json_key(j, "samples");
	json_obj(j);
	json_key(j, "schema");
	json_obj(j);
	json_key(j, "time");
	json_u64(j, 0);
	json_key(j, "count");
	json_u64(j, 1);
	json_obj_end(j);
	json_key(j, "data");
	json_arr(j);
	spill_get(g, c->vs, cval_memory, &cx);
	/* The last level lasts to the end (no change: a row of 0). */
	if (cx.written != 0 && counter_end_ms(g) > cx.last_ms)
		cval_row(j, counter_end_ms(g), 0);
	json_arr_end(j);
	json_obj_end(j);
	json_obj_end(j);
}

/* Memory counters only: gauges and counts are marker graphs. */
static void
write_counters(struct gsess *g, struct json *j)
{
	json_key(j, "counters");
	json_arr(j);
	for (size_t i = 0; i < g->nctr; i++) {
		struct gecko_counter_view v;

		counter_view(&g->ctr[i], &v);
		if (v.show == GECKO_SHOW_MEMORY &&
		    counter_in_win(g, &g->ctr[i]))
			write_memory_counter(g, j, &g->ctr[i]);
	}
	json_arr_end(j);
}

/* The schema of a gauge's or count's graph: a track of its values. */
static void
write_counter_schema(struct gsess *g, struct json *j,
    const struct gcounter *c, const struct gecko_counter_view *v)
{
	char name[300], buf[64];
	const char *cname = counter_name(c, buf, sizeof(buf));

	gecko_counter_schema_name(cname, name, sizeof(name));
	json_obj(j);
	json_key(j, "name");
	json_str(j, name);
	json_key(j, "display");         /* the graph only */
	json_arr(j);
	json_arr_end(j);
	json_key(j, "tooltipLabel");
	json_str(j, "{marker.name}: {marker.data.value}");
	json_key(j, "tableLabel");
	json_str(j, "{marker.data.value}");
	json_key(j, "chartLabel");
	json_str(j, "{marker.data.value}");
	json_key(j, "description");
	json_str(j, counter_description(c));
	json_key(j, "data");
	json_arr(j);
	json_obj(j);
	json_key(j, "key");
	json_str(j, "value");
	json_key(j, "label");
	json_str(j, v->show == GECKO_SHOW_COUNT ? "Count" : "Value");
	json_key(j, "format");
	json_str(j, v->format);
	json_obj_end(j);
	json_obj(j);
	json_key(j, "label");
	json_str(j, "Description");
	json_key(j, "value");
	json_str(j, counter_description(c));
	json_obj_end(j);
	json_arr_end(j);
	json_key(j, "graphs");
	json_arr(j);
	json_obj(j);
	json_key(j, "key");
	json_str(j, "value");
	json_key(j, "type");
	json_str(j, v->graph);
	json_key(j, "color");
	json_str(j, v->show == GECKO_SHOW_COUNT ? "red" : "blue");
	json_obj_end(j);
	json_arr_end(j);
	json_obj_end(j);
	(void)g;
}

static void
write_counter_schemas(struct gsess *g, struct json *j)
{
	for (size_t i = 0; i < g->nctr; i++) {
		struct gecko_counter_view v;

		/* Even without a value inside the window: the level in
		 * effect then is shown. */
		counter_view(&g->ctr[i], &v);
		if (v.show != GECKO_SHOW_MEMORY && g->ctr[i].ns != 0)
			write_counter_schema(g, j, &g->ctr[i], &v);
	}
}

/* The category index of a counter's markers: its category's, by name. */
static uint32_t
counter_cat(const struct gsess *g, const struct gcounter *c)
{
	for (uint32_t i = 0; c->category != NULL && i < g->ncat; i++)
		if (g->cat[i].name != NULL &&
		    strcmp(g->cat[i].name, c->category) == 0)
			return i;
	return g->cat_default;
}

/*
 * One level of a gauge or count, from when it was set to when the next
 * one was (@t1): the graph is a step at each change.
 */
static void
write_counter_marker(struct cval_ctx *c, const struct gcval *v, double t0,
    double t1)
{
	char buf[64], name[300];
	const char *cname = counter_name(c->c, buf, sizeof(buf));
	struct json *j = c->j;

	gecko_counter_schema_name(cname, name, sizeof(name));
	json_arr(j);
	json_i64(j, intern(c->g, c->to, cname, strlen(cname)));
	json_f64(j, t0);
	json_f64(j, t1 >= t0 ? t1 : t0);
	json_u64(j, 1);
	json_u64(j, out_cat(c->g, counter_cat(c->g, c->c)));
	json_obj(j);
	json_key(j, "type");
	json_str(j, name);
	json_key(j, "value");
	if (c->view.scale == 1.0)
		json_i64(j, v->v);
	else
		json_f64(j, (double)v->v * c->view.scale);
	json_obj_end(j);
	json_arr_end(j);
}

/*
 * A level, held until the next one is known (its end). The level in
 * effect when the window starts is shown from the window's start.
 */
static int
cval_marker(void *ctx, const void *rec, size_t n)
{
	struct cval_ctx *c = ctx;
	struct gcval v;
	double t;

	(void)n;
	memcpy(&v, rec, sizeof(v));
	if (c->have_prev && v.v == c->prev)
		return 0;
	t = gecko_ms(c->g, v.t);
	if (t > c->g->win_b)
		return 1;               /* sorted: nothing more to write */
	if (c->have_held && t >= c->g->win_a)
		write_counter_marker(c, &c->held, c->last_ms, t);
	c->held = v;
	c->have_held = true;
	c->last_ms = t > c->g->win_a ? t : c->g->win_a;
	c->prev = v.v;
	c->have_prev = true;
	return 0;
}

/* The end of the session's data, or of the window when it ends before. */
static double
counter_end_ms(const struct gsess *g)
{
	double end = gecko_ms(g, g->have_trailer ? g->stop_ticks : g->last_t);

	return end < g->win_b ? end : g->win_b;
}

/* Every gauge and count as markers of the main thread (their graphs). */
static void
write_counter_markers(struct gsess *g, struct json *j, struct tout *to)
{
	for (size_t i = 0; i < g->nctr; i++) {
		struct cval_ctx cx = { .g = g, .j = j, .to = to,
		    .c = &g->ctr[i] };

		counter_view(cx.c, &cx.view);
		if (cx.view.show == GECKO_SHOW_MEMORY)
			continue;
		spill_get(g, cx.c->vs, cval_marker, &cx);
		if (cx.have_held)
			write_counter_marker(&cx, &cx.held, cx.last_ms,
			    counter_end_ms(g));
	}
}

static void
write_paused_ranges(struct gsess *g, struct json *j)
{
	json_key(j, "pausedRanges");
	json_arr(j);
	for (size_t i = 0; i < g->npause; i++) {
		if (!overlaps_win(g, gecko_ms(g, g->pause[i][0]),
		    gecko_ms(g, g->pause[i][1])))
			continue;
		json_obj(j);
		json_key(j, "startTime");
		json_f64(j, gecko_ms(g, g->pause[i][0]));
		json_key(j, "endTime");
		json_f64(j, gecko_ms(g, g->pause[i][1]));
		json_key(j, "reason");
		json_str(j, "profiler-paused");
		json_obj_end(j);
	}
	json_arr_end(j);
}

static void
log_sym_problem(void *arg, const char *line)
{
	json_str(arg, line);
}

/* The sampler's records: samples and the profiler's own cost. */
static void
write_sampler_log(struct gsess *g, struct json *j)
{
	const struct rtprof_gecko_symbols *so = &g->file->symopt;

	json_key(j, "sampler");
	json_obj(j);
	json_key(j, "samples");
	json_u64(j, g->nsamples);
	json_key(j, "sameStack");
	json_u64(j, g->nsame);
	json_key(j, "sameStackUnknown");
	json_u64(j, g->nsame_unknown);
	json_key(j, "truncated");
	json_u64(j, g->ntruncated);
	json_key(j, "noNativeFrames");
	json_u64(j, g->nno_native);
	json_key(j, "signalBlocked");
	json_u64(j, g->nsig_blocked);
	json_obj_end(j);
	if (g->ovh_ticks != 0) {
		uint64_t total = g->ovh_sum[0] + g->ovh_sum[1] + g->ovh_sum[2];

		json_key(j, "samplerOverhead");
		json_obj(j);
		json_key(j, "ticks");
		json_u64(j, g->ovh_ticks);
		json_key(j, "totalNs");
		json_u64(j, total);
		json_key(j, "meanNsPerTick");
		json_f64(j, (double)total / (double)g->ovh_ticks);
		json_key(j, "maxNsPerTick");
		json_u64(j, g->ovh_max);
		json_key(j, "lockNs");
		json_u64(j, g->ovh_sum[0]);
		json_key(j, "threadsNs");
		json_u64(j, g->ovh_sum[1]);
		json_key(j, "countersNs");
		json_u64(j, g->ovh_sum[2]);
		json_key(j, "meanThreadsPerTick");
		json_f64(j, (double)g->ovh_sum[3] / (double)g->ovh_ticks);
		json_obj_end(j);
	}
	json_key(j, "symbolication");
	json_obj(j);
	json_key(j, "ran");
	json_bool(j, g->sym != NULL);
	if (so->disabled) {
		json_key(j, "disabled");
		json_bool(j, true);
	}
	if (so->sysroot != NULL) {
		json_key(j, "sysroot");
		json_str(j, so->sysroot);
	}
	json_key(j, "addresses");
	json_u64(j, g->sym_addrs);
	json_key(j, "resolved");
	json_u64(j, g->sym_resolved);
	if (g->sym != NULL) {
		json_key(j, "moduleProblems");
		json_arr(j);
		rtprof_symbolizer_problems(g->sym, log_sym_problem, j);
		json_arr_end(j);
	}
	json_obj_end(j);
}

/*
 * The gathering notes (rtprof_gecko_writer_note): all of them in the
 * top-level process, the ones about its own dump in any other.
 */
static void
write_notes(struct gsess *g, struct json *j)
{
	bool any = false;

	for (size_t i = 0; i < g->nnotes; i++) {
		const struct rtprof_gecko_note *n = &g->notes[i];
		bool mine = n->dump != NULL && strcmp(n->dump, g->file->input) == 0;

		if (!g->top && !mine)
			continue;
		if (!any) {
			json_key(j, "gathering");
			json_arr(j);
			any = true;
		}
		json_obj(j);
		json_key(j, "what");
		json_str(j, n->what);
		if (n->pid != 0) {
			json_key(j, "pid");
			json_i64(j, n->pid);
		}
		if (n->program != NULL) {
			json_key(j, "program");
			json_str(j, n->program);
		}
		if (n->reason != NULL) {
			json_key(j, "reason");
			json_str(j, n->reason);
		}
		if (n->dump != NULL) {
			json_key(j, "dump");
			json_str(j, n->dump);
			if (g->top) {
				json_key(j, "thisProcess");
				json_bool(j, mine);
			}
		}
		if (n->bytes >= 0) {
			json_key(j, "bytes");
			json_i64(j, n->bytes);
		}
		if (n->wall_ns != 0) {
			char buf[48];
			time_t sec = (time_t)(n->wall_ns / 1000000000);
			struct tm tm;

			/* ms in this process's time, like its markers. */
			json_key(j, "time");
			json_f64(j, rtprof_ns_diff(n->wall_ns,
			    g->start_wall_ns) / 1e6);
			if (gmtime_r(&sec, &tm) != NULL) {
				size_t k = strftime(buf, sizeof(buf),
				    "%Y-%m-%dT%H:%M:%S", &tm);

				snprintf(buf + k, sizeof(buf) - k, ".%03dZ",
				    (int)(n->wall_ns / 1000000 % 1000));
				json_key(j, "wallClock");
				json_str(j, buf);
			}
		}
		json_obj_end(j);
	}
	if (any)
		json_arr_end(j);
}

/* Why the times of @g are not at its HEADER's clock rate. */
static void
write_clock_note(const struct gsess *g, struct json *j)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "the dump's clock rate, %g ticks per "
	    "second, is not a plausible one (%g to %g): times are "
	    "computed at 1e9 (ticks taken as nanoseconds), or at the rate "
	    "measured between the header and the trailer", g->bad_rate,
	    CLOCK_RATE_MIN, CLOCK_RATE_MAX);
	json_key(j, "clockNote");
	json_str(j, msg);
}

static void
write_gathering_log(struct gsess *g, struct json *j)
{
	const struct rtprof_gecko *fg = g->file;
	const struct rtprof_dump_stats *st = &fg->stats;

	json_key(j, "profileGatheringLog");
	json_obj(j);
	json_key(j, "converter");
	json_str(j, "msgpack2gecko (rtprof) milestone 2");
	json_key(j, "input");
	json_str(j, fg->input);
	json_key(j, "session");
	json_u64(j, g->ordinal);
	json_key(j, "pid");
	json_i64(j, g->pid);
	if (g->out_pid != g->pid) {
		json_key(j, "pidNote");
		json_str(j, "pid already used by an earlier process of this "
		    "profile: the front-end keeps one main thread per pid, so "
		    "this process is shown under a made-up pid");
	}
	if (g->flt != NULL && (g->flt->has_from || g->flt->has_to ||
	    g->flt->nthreads != 0)) {
		json_key(j, "filtered");
		json_bool(j, true);
	}
	if (g->sampling_method != NULL && g->sampling_method[0] != '\0') {
		/* How the stacks were taken, and why (the setting that would
		 * allow perf events where signals were used). */
		json_key(j, "sampling");
		json_obj(j);
		json_key(j, "method");
		json_str(j, g->sampling_method);
		json_key(j, "why");
		json_str(j, g->sampling_why != NULL ? g->sampling_why : "");
		json_obj_end(j);
	}
	if (g->rate_replaced)
		write_clock_note(g, j);
	json_key(j, "bytesRead");
	json_u64(j, st->bytes);
	json_key(j, "frames");
	json_u64(j, st->frames);
	json_key(j, "records");
	json_u64(j, st->records);
	json_key(j, "damageReports");
	json_u64(j, fg->dmg_total);
	json_key(j, "damage");
	json_arr(j);
	for (size_t i = 0; i < fg->ndmg; i++) {
		const struct gdamage *d = &fg->dmg[i];

		json_obj(j);
		json_key(j, "kind");
		json_str(j, rtprof_dump_damage_name(d->kind));
		json_key(j, "offset");
		json_u64(j, d->offset);
		json_key(j, "length");
		json_u64(j, d->length);
		json_key(j, "count");
		json_u64(j, d->count);
		json_key(j, "session");
		json_u64(j, d->session_index);
		json_key(j, "message");
		json_str(j, d->message != NULL ? d->message : "");
		json_obj_end(j);
	}
	json_arr_end(j);
	if (fg->dmg_total > fg->ndmg) {
		json_key(j, "damageNotListed");
		json_u64(j, fg->dmg_total - fg->ndmg);
	}
	json_key(j, "damagedFrames");
	json_u64(j, st->bad_frames);
	json_key(j, "skippedBytes");
	json_u64(j, st->skipped_bytes);
	json_key(j, "sequenceGaps");
	json_u64(j, st->seq_gaps);
	json_key(j, "repeatedFrames");
	json_u64(j, st->seq_dups);
	json_key(j, "badPayloads");
	json_u64(j, st->bad_payloads);
	json_key(j, "badRecords");
	json_u64(j, st->bad_records);
	json_key(j, "truncatedTailBytes");
	json_u64(j, st->truncated_tail_bytes);
	json_key(j, "unknownFrames");
	json_u64(j, st->unknown_frames);
	json_key(j, "newerVersionFrames");
	json_u64(j, st->newer_version_frames);
	json_key(j, "sessions");
	json_u64(j, st->sessions);
	json_key(j, "ignoredSessions");
	json_u64(j, fg->ignored_sessions);
	json_key(j, "ignoredFrames");
	json_u64(j, fg->ignored_frames);
	json_key(j, "trailer");
	json_bool(j, g->have_trailer);
	if (!g->have_trailer) {
		json_key(j, "incomplete");
		json_str(j, "the dump ends without a trailer: the process was "
		    "still running, stopped or killed when the dump was read "
		    "(what it wrote until then is here; what it had not "
		    "written yet is missing)");
	}
	if (g->have_trailer) {
		json_key(j, "chunksLost");
		json_u64(j, g->tr_chunks_lost);
		if (g->tr_threads_omitted != 0) {
			json_key(j, "threadCountsOmitted");
			json_u64(j, g->tr_threads_omitted);
		}
		json_key(j, "limitReached");
		json_bool(j, g->tr_limit_reached);
	}
	json_key(j, "threads");
	json_arr(j);
	for (size_t i = 0; i < g->nth; i++) {
		const struct gthread *th = &g->th[i];

		json_obj(j);
		json_key(j, "tid");
		json_i64(j, th->tid);
		json_key(j, "recordsDecoded");
		json_u64(j, th->recs);
		json_key(j, "droppedFull");
		json_u64(j, th->dropped_full);
		json_key(j, "droppedNested");
		json_u64(j, th->dropped_nested);
		if (th->flags & GECKO_THREAD_RT) {
			json_key(j, "realTime");
			json_bool(j, true);
		}
		if (th->flags & GECKO_THREAD_SAMPLER) {
			json_key(j, "sampler");
			json_bool(j, true);
		}
		if (th->nsmp != 0) {
			json_key(j, "samples");
			json_u64(j, th->nsmp);
		}
		if (th->settled) {
			json_key(j, "recorded");
			json_u64(j, th->tr.recorded);
			json_key(j, "trailerDroppedFull");
			json_u64(j, th->tr.dropped_full);
			json_key(j, "trailerDroppedNested");
			json_u64(j, th->tr.dropped_nested);
			json_key(j, "recycled");
			json_u64(j, th->tr.recycled);
			json_key(j, "recordsMissing");
			json_u64(j, th->tr.recorded > th->recs ?
			    th->tr.recorded - th->recs : 0);
		}
		json_obj_end(j);
	}
	json_arr_end(j);
	json_key(j, "events");
	json_arr(j);
	for (size_t i = 0; i < g->nev; i++) {
		const struct gevent *e = &g->ev[i];

		json_obj(j);
		json_key(j, "what");
		json_str(j, e->what);
		json_key(j, "time");
		json_f64(j, gecko_ms(g, e->ticks));
		if (e->has_errno) {
			json_key(j, "errno");
			json_i64(j, e->errnum);
		}
		if (e->message != NULL) {
			json_key(j, "message");
			json_str(j, e->message);
		}
		if (e->has_max_bytes) {
			json_key(j, "maxBytes");
			json_u64(j, e->max_bytes);
		}
		json_obj_end(j);
	}
	json_arr_end(j);
	if (g->nbacktraces != 0 || g->nbt_unmatched != 0) {
		json_key(j, "backtraces");
		json_u64(j, g->nbacktraces);
		json_key(j, "backtracesWithoutMarker");
		json_u64(j, g->nbt_unmatched);
	}
	write_notes(g, j);
	write_sampler_log(g, j);
	json_obj_end(j);
}

static void
write_field_value(struct gsess *g, struct json *j, struct tout *to,
    bool idx, uint32_t kind, const struct rtprof_val *v)
{
	char buf[64];
	const char *s = NULL;
	size_t n = 0;

	switch (v->kind) {
	case RTPROF_VAL_STRREF:
		s = string_text(g, v->v.ref, buf, sizeof(buf), &n);
		break;
	case RTPROF_VAL_STR:
		s = v->v.str.p;
		n = v->v.str.n;
		break;
	case RTPROF_VAL_F64:
		if (idx) {
			snprintf(buf, sizeof(buf), "%.17g", v->v.d);
			s = buf;
			n = strlen(buf);
		} else {
			json_f64(j, v->v.d);
			return;
		}
		break;
	case RTPROF_VAL_I64:
	case RTPROF_VAL_U64:
		/* General encodings are tagged by sign: the schema decides. */
		if (idx) {
			if (kind == 1 || v->kind == RTPROF_VAL_I64)
				snprintf(buf, sizeof(buf), "%" PRId64, v->v.i);
			else
				snprintf(buf, sizeof(buf), "%" PRIu64, v->v.u);
			s = buf;
			n = strlen(buf);
		} else if (kind == 3) {
			json_f64(j, v->kind == RTPROF_VAL_I64 ? (double)v->v.i :
			    (double)v->v.u);
			return;
		} else if (kind == 1 || (kind != 2 &&
		    v->kind == RTPROF_VAL_I64)) {
			json_i64(j, v->v.i);
			return;
		} else {
			json_u64(j, v->v.u);
			return;
		}
		break;
	}
	if (s == NULL) {
		json_null(j);
		return;
	}
	if (idx)
		json_i64(j, intern(g, to, s, n));
	else
		json_strn(j, s, n);
}

/*
 * The marker's backtrace (@stack: a stackTable index, or -1): a one-sample
 * "stack" the front-end turns into the marker's cause, re-based onto its
 * merged stack table (process-profile.ts, _convertStackToCause), and the
 * same as "cause" for tools that read the file itself (rtprof summarize).
 * A "cause" alone would not be re-based: only right for the first thread.
 */
static void
write_marker_stack(struct gsess *g, struct json *j, int64_t stack,
    int64_t tid, double t)
{
	(void)g;
	json_key(j, "stack");
	json_obj(j);
	json_key(j, "tid");
	json_i64(j, tid);
	json_key(j, "samples");
	json_obj(j);
	json_key(j, "schema");
	json_obj(j);
	json_key(j, "stack");
	json_u64(j, 0);
	json_key(j, "time");
	json_u64(j, 1);
	json_obj_end(j);
	json_key(j, "data");
	json_arr(j);
	json_arr(j);
	json_i64(j, stack);
	json_f64(j, t);
	json_arr_end(j);
	json_arr_end(j);
	json_obj_end(j);
	json_obj_end(j);
	json_key(j, "cause");
	json_obj(j);
	json_key(j, "tid");
	json_i64(j, tid);
	json_key(j, "time");
	json_f64(j, t);
	json_key(j, "stack");
	json_i64(j, stack);
	json_obj_end(j);
}

static void
write_marker(struct gsess *g, struct json *j, struct tout *to,
    const struct gmark *m, int64_t stack, int64_t tid)
{
	const struct gschema *sc = NULL;
	char buf[64];
	const char *name;
	size_t n;

	if (m->kind == RTPROF_REC_TYPED)
		sc = schema_of(g, m->type);
	json_arr(j);
	if (m->kind == GMARK_DROPPED) {
		name = "Dropped events";
		n = strlen(name);
	} else if (m->kind == RTPROF_REC_TYPED) {
		if (sc != NULL) {
			name = sc->name;
			n = strlen(name);
		} else {
			snprintf(buf, sizeof(buf), "(unknown marker type %u)",
			    (unsigned)m->type);
			name = buf;
			n = strlen(buf);
		}
	} else {
		name = string_text(g, m->name, buf, sizeof(buf), &n);
	}
	json_i64(j, intern(g, to, name, n));
	switch (m->phase) {
	case 0:
	case 2:
		json_f64(j, gecko_ms(g, m->t0));
		json_null(j);
		break;
	case 1:
		json_f64(j, gecko_ms(g, m->t0));
		json_f64(j, gecko_ms(g, m->t1));
		break;
	default:
		json_null(j);
		json_f64(j, gecko_ms(g, m->t0));
		break;
	}
	json_u64(j, m->phase);
	if (m->kind == GMARK_DROPPED) {
		json_u64(j, out_cat(g, g->cat_profiler));
		json_obj(j);
		json_key(j, "type");
		json_str(j, GECKO_DROPPED_SCHEMA);
		json_key(j, "full");
		json_u64(j, m->nvals > 0 ? m->vals[0].v.u : 0);
		json_key(j, "nested");
		json_u64(j, m->nvals > 1 ? m->vals[1].v.u : 0);
		json_obj_end(j);
		json_arr_end(j);
		return;
	}
	json_u64(j, out_cat(g, cat_index(g, m->category)));
	if (sc == NULL && stack < 0) {
		json_null(j);
	} else {
		json_obj(j);
		if (sc != NULL) {
			json_key(j, "type");
			json_str(j, sc->name);
		}
		for (uint32_t i = 0; sc != NULL && i < sc->nfields &&
		    i < m->nvals; i++) {
			/* Ours when there is a backtrace. */
			if (sc->f[i].is_type || (stack >= 0 &&
			    (strcmp(sc->f[i].key, "stack") == 0 ||
			    strcmp(sc->f[i].key, "cause") == 0)))
				continue;
			json_key(j, sc->f[i].key);
			write_field_value(g, j, to, sc->f[i].idx,
			    sc->f[i].kind, &m->vals[i]);
		}
		if (stack >= 0)
			write_marker_stack(g, j, stack, tid,
			    gecko_ms(g, m->t0));
		json_obj_end(j);
	}
	json_arr_end(j);
}

/* Is the marker @m (in its own phase) inside the time window? */
static bool
marker_in_win(const struct gsess *g, const struct gmark *m)
{
	double t0 = gecko_ms(g, m->t0);

	if (m->phase == 1)
		return overlaps_win(g, t0, gecko_ms(g, m->t1));
	return in_win(g, t0);
}

static void
write_pause_marker(struct gsess *g, struct json *j, struct tout *to,
    size_t i)
{
	json_arr(j);
	json_i64(j, intern(g, to, "Paused", 6));
	json_f64(j, gecko_ms(g, g->pause[i][0]));
	json_f64(j, gecko_ms(g, g->pause[i][1]));
	json_u64(j, 1);
	json_u64(j, out_cat(g, g->cat_profiler));
	json_obj(j);
	json_key(j, "type");
	json_str(j, RTPROF_PAUSE_SCHEMA);
	json_obj_end(j);
	json_arr_end(j);
}

static void
write_table_schema(struct json *j, const char *const *cols, size_t n)
{
	json_key(j, "schema");
	json_obj(j);
	for (size_t i = 0; i < n; i++) {
		json_key(j, cols[i]);
		json_u64(j, i);
	}
	json_obj_end(j);
}

static void
write_sample(struct gsess *g, struct json *j, struct tout *to, double t,
    bool idle)
{
	(void)g;
	if (idle && to->stack_idle < 0) {
		to->frame_idle = to->nframes++;
		to->stack_idle = to->nstacks++;
	}
	json_arr(j);
	json_i64(j, idle ? to->stack_idle : to->stack_awake);
	json_f64(j, t);
	json_u64(j, 0);
	json_arr_end(j);
}

static const char *const stack_cols[] = { "prefix", "frame" };
static const char *const frame_cols[] = { "location", "relevantForJS",
    "innerWindowID", "implementation", "line", "column", "category",
    "subcategory" };

/*
 * Placeholder samples, for a thread the sampler never sampled (none ran,
 * or a thread it does not see): one at registration and one at each
 * SLEEP (Idle frame) and WAKE (awake frame), so that no thread is
 * sample-less. Each stack is a single root frame named after the thread.
 */
/* Placeholder samples: the state machine over sleep/wake changes. */
struct ph_ctx {
	struct gsess *g;
	struct json *j;
	struct tout *to;
	bool idle, have_pre, pre_idle;
	size_t emitted;
	double last;
};

static void
ph_step(struct ph_ctx *c, double t, bool st)
{
	struct gsess *g = c->g;

	c->idle = st;
	if (t < c->last)
		t = c->last;
	c->last = t;
	if (t < g->win_a) {
		c->have_pre = true;
		c->pre_idle = st;
	} else if (t <= g->win_b) {
		if (c->have_pre) {
			write_sample(g, c->j, c->to, g->win_a, c->pre_idle);
			c->emitted++;
			c->have_pre = false;
		}
		write_sample(g, c->j, c->to, t, st);
		c->emitted++;
	}
}

static int
ph_record(void *ctx, const void *rec, size_t n)
{
	struct ph_ctx *c = ctx;
	struct gsample s;

	(void)n;
	memcpy(&s, rec, sizeof(s));
	if (s.idle != c->idle)          /* a change of state */
		ph_step(c, gecko_ms(c->g, s.t), s.idle);
	return 0;
}

struct otables;
static void write_stack_rows(struct json *j, const struct otables *o,
    uint32_t off);
static void write_frame_rows(struct json *j, const struct otables *o);

/*
 * @o: the tables of the thread's marker backtraces (NULL: none), written
 * after the placeholder rows: stack and frame PLACEHOLDER_ROWS on (the
 * idle rows then always exist).
 */
#define PLACEHOLDER_ROWS 2

static void
write_placeholder(struct gsess *g, struct json *j, struct gthread *th,
    struct tout *to, const char *tname, double reg, const struct otables *o)
{
	static const char *const sample_cols[] = { "stack", "time",
	    "eventDelay" };
	/*
	 * rtprof's sampler thread is Idle: the front-end then hides it on
	 * load (its activity is 0; its cost is in its overhead markers).
	 */
	bool sampler = th != NULL && (th->flags & GECKO_THREAD_SAMPLER) != 0;
	double first;
	int64_t loc;

	loc = intern(g, to, tname, strlen(tname));
	to->frame_awake = to->frame_idle = -1;
	to->stack_awake = to->stack_idle = -1;
	json_key(j, "samples");
	json_obj(j);
	write_table_schema(j, sample_cols, 3);
	json_key(j, "data");
	json_arr(j);
	first = reg > 0.0 ? reg : 0.0;
	to->stack_awake = 0;
	to->frame_awake = 0;
	to->nstacks = to->nframes = 1;
	if (o != NULL) {
		to->stack_idle = to->frame_idle = 1;
		to->nstacks = to->nframes = PLACEHOLDER_ROWS;
	}
	/*
	 * The state changes, in time order, starting awake at registration.
	 * With a time window, the state in effect at its start becomes a
	 * sample at its start; changes outside it are dropped.
	 */
	{
		struct ph_ctx c = { .g = g, .j = j, .to = to, .last = first };

		ph_step(&c, first, sampler);
		if (th != NULL)
			spill_get(g, th->ps, ph_record, &c);
		if (c.have_pre && g->win_a <= g->win_b) {
			write_sample(g, j, to, g->win_a, c.pre_idle);
			c.emitted++;
		}
		if (c.emitted == 0)     /* every thread keeps one sample */
			write_sample(g, j, to, isfinite(g->win_a) ?
			    g->win_a : first, sampler);
	}
	json_arr_end(j);
	json_obj_end(j);

	json_key(j, "stackTable");
	json_obj(j);
	write_table_schema(j, stack_cols, 2);
	json_key(j, "data");
	json_arr(j);
	json_arr(j);
	json_null(j);
	json_i64(j, to->frame_awake);
	json_arr_end(j);
	if (to->stack_idle >= 0) {
		json_arr(j);
		json_null(j);
		json_i64(j, to->frame_idle);
		json_arr_end(j);
	}
	if (o != NULL)
		write_stack_rows(j, o, PLACEHOLDER_ROWS);
	json_arr_end(j);
	json_obj_end(j);

	json_key(j, "frameTable");
	json_obj(j);
	write_table_schema(j, frame_cols, 8);
	json_key(j, "data");
	json_arr(j);
	for (int f = 0; f < 2; f++) {
		if (f == 1 && to->frame_idle < 0)
			break;
		json_arr(j);
		json_i64(j, loc);
		json_bool(j, false);
		json_null(j);
		json_null(j);
		json_null(j);
		json_null(j);
		json_u64(j, out_cat(g, f == 0 ? g->cat_default : g->cat_idle));
		json_u64(j, 0);
		json_arr_end(j);
	}
	if (o != NULL)
		write_frame_rows(j, o);
	json_arr_end(j);
	json_obj_end(j);
}

/* The Gecko tables of a sampled thread (write_sampled). */
struct oframe {
	uint32_t loc;                   /* stringTable index */
	uint32_t cat;
	int32_t line;                   /* 0: unknown */
};

struct ostack {
	uint32_t prefix1;               /* prefix + 1, 0: root */
	uint32_t frame;
};

struct otables {
	struct oframe *f;
	size_t nf, fcap;
	struct ostack *s;
	size_t ns, scap;
	struct pmap fidx;               /* (location, category) -> f[] */
	struct pmap sidx;               /* (prefix1, frame) -> s[] */
	struct pmap raw;                /* raw (value, kind) -> f[] */
	uint32_t *map;                  /* raw stack node -> s[] */
};

static void
otables_free(struct otables *o)
{
	free(o->f);
	free(o->s);
	pmap_free(&o->fidx);
	pmap_free(&o->sidx);
	pmap_free(&o->raw);
	free(o->map);
}

/*
 * The session's symbolizer, created at its first native frame with every
 * module of its MODULES and MODULES_CHANGED frames and their spans (in
 * order: a module's index is its gmodule index) and its IMAGEs. Return: NULL when symbolication is off or failed.
 */
static struct rtprof_symbolizer *
sym_get(struct gsess *g)
{
	const struct rtprof_gecko_symbols *so = &g->file->symopt;

	if (g->sym != NULL || g->sym_tried || so->disabled)
		return g->sym;
	g->sym_tried = true;
	g->sym = rtprof_symbolizer_new(so->sysroot, so->debug_dirs,
	    so->ndebug_dirs);
	if (g->sym == NULL) {
		gecko_fail(g, -ENOMEM);
		return NULL;
	}
	for (size_t i = 0; i < g->nimg; i++)
		if (rtprof_symbolizer_add_image(g->sym, g->img[i].addr,
		    g->img[i].bytes, g->img[i].len) != 0)
			return gecko_fail(g, -ENOMEM), g->sym;
	for (size_t i = 0; i < g->nmod; i++) {
		const struct gmodule *m = &g->mod[i];
		int k = rtprof_symbolizer_add_module(g->sym, m->path, m->start,
		    m->end, m->offset, m->build_id_len != 0 ? m->build_id :
		    NULL, m->build_id_len);

		if (k < 0) {
			gecko_fail(g, -ENOMEM);
			break;
		}
		rtprof_symbolizer_module_span(g->sym, (size_t)k, m->from, m->to);
	}
	return g->sym;
}

/*
 * C++ names read as people write them: libstdc++'s demangler (the C ABI
 * entry point; the converter links libstdc++, which every C++ program on
 * the machine has too). Return: a malloc'ed name, or NULL to keep @name.
 */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
    int *status);

static char *
demangle(const char *name)
{
	int status = 0;
	char *d;

	if (name[0] != '_' || name[1] != 'Z')
		return NULL;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (status != 0) {
		free(d);
		return NULL;
	}
	return d;
}

/*
 * The location of native frame @addr, sampled at @t: "name (in lib)"
 * (*@line from debug info, else 0) when symbolized (in the module mapped
 * there at @t; "lib+0x1a2b (in lib)" for a function without a symbol,
 * named by its start in the unwind tables), else the absolute address in
 * hex (which the front-end can look up in libs). A return address (@ret)
 * is looked up at @addr - 1, inside the call.
 */
static int64_t
native_location(struct gsess *g, struct tout *to, uint64_t addr, bool ret,
    uint64_t t, int32_t *line)
{
	struct rtprof_symbolizer *sym = sym_get(g);
	struct rtprof_sym r;
	char buf[32];

	*line = 0;
	g->sym_addrs++;
	if (sym != NULL && addr > (uint64_t)ret &&
	    rtprof_symbolize_at(sym, ret ? addr - 1 : addr, t, &r) ==
	    RTPROF_SYM_OK && r.name != NULL && r.module >= 0 &&
	    (size_t)r.module < g->nmod) {
		const char *lib = basename_of(g->mod[r.module].path);
		char *dm = demangle(r.name);
		const char *name = dm != NULL ? dm : r.name;
		size_t nn = strlen(name), nl = strlen(lib);
		char *s = malloc(nn + nl + 7);
		int64_t loc;

		if (s == NULL) {
			free(dm);
			gecko_fail(g, -ENOMEM);
			return 0;
		}
		memcpy(s, name, nn);
		free(dm);
		memcpy(s + nn, " (in ", 5);
		memcpy(s + nn + 5, lib, nl);
		s[nn + 5 + nl] = ')';
		loc = intern(g, to, s, nn + nl + 6);
		free(s);
		g->sym_resolved++;
		/*
		 * r.file is dropped: the Gecko format has no file for a
		 * native frame that the front-end shows. "name (in lib)
		 * (file:line)" is read as native with the suffix thrown
		 * away, "name (file:line)" as JavaScript; the line goes in
		 * frameTable.line. See docs/native-frames.md.
		 */
		*line = r.line > 0 ? r.line : 0;
		return loc;
	}
	snprintf(buf, sizeof(buf), "0x%" PRIx64, addr);
	return intern(g, to, buf, strlen(buf));
}

/*
 * The frameTable row of raw node @n: one row per distinct (location,
 * category); an Idle leaf is a row of its own with the same location (the
 * front-end takes a sample's category from its leaf frame).
 * Return: the row, or -1 (out of memory, latched).
 */
static int64_t
out_frame(struct gsess *g, struct tout *to, struct otables *o,
    const struct grawstack *n)
{
	uint8_t kind = n->kind & RAW_KIND_MASK;
	uint64_t rk = (uint64_t)n->epoch << 8 | n->kind;
	int64_t f = pmap_get(&o->raw, n->value, rk), loc;
	const char *txt;
	char buf[64];
	int32_t line = 0;
	uint32_t cat;
	size_t len;

	if (f >= 0)
		return f;
	switch (kind) {
	case RAW_LABEL:
		txt = string_text(g, n->value, buf, sizeof(buf), &len);
		loc = intern(g, to, txt, len);
		cat = g->cat_user;
		break;
	case RAW_TEXT:
		txt = n->value < sizeof(raw_texts) / sizeof(*raw_texts) ?
		    raw_texts[n->value] : "?";
		loc = intern(g, to, txt, strlen(txt));
		cat = g->cat_default;
		break;
	default:
		loc = native_location(g, to, n->value, kind == RAW_RET,
		    epoch_time(g, n->epoch), &line);
		cat = g->cat_default;
		break;
	}
	if (n->kind & RAW_IDLE)
		cat = g->cat_idle;
	cat = out_cat(g, cat);
	if (g->err != 0)
		return -1;
	f = pmap_get(&o->fidx, (uint64_t)loc, cat);
	if (f < 0) {
		struct oframe of = { .loc = (uint32_t)loc, .cat = cat,
		    .line = line };

		if (VEC_PUSH(g, o->f, o->nf, o->fcap, of) != 0)
			return -1;
		f = (int64_t)o->nf - 1;
		if (pmap_put(&o->fidx, (uint64_t)loc, cat, (size_t)f) != 0)
			return gecko_fail(g, -ENOMEM), -1;
	} else if (o->f[f].line == 0) {
		o->f[f].line = line;
	}
	if (pmap_put(&o->raw, n->value, rk, (size_t)f) != 0)
		return gecko_fail(g, -ENOMEM), -1;
	return f;
}

/*
 * Turn @th's raw stack tree into de-duplicated frame and stack tables.
 * Raw nodes come parents first, so every stack's prefix is created (and
 * numbered) before it.
 */
static int
build_tables(struct gsess *g, struct tout *to, struct gthread *th,
    struct otables *o)
{
	o->map = malloc((th->nrs != 0 ? th->nrs : 1) * sizeof(*o->map));
	if (o->map == NULL)
		return gecko_fail(g, -ENOMEM);
	for (size_t i = 0; i < th->nrs; i++) {
		const struct grawstack *n = &th->rs[i];
		int64_t f = out_frame(g, to, o, n), s;
		uint32_t p1;

		if (f < 0)
			return g->err;
		p1 = n->prefix1 != 0 ? o->map[n->prefix1 - 1] + 1 : 0;
		s = pmap_get(&o->sidx, p1, (uint64_t)f);
		if (s < 0) {
			struct ostack os = { .prefix1 = p1,
			    .frame = (uint32_t)f };

			if (VEC_PUSH(g, o->s, o->ns, o->scap, os) != 0)
				return g->err;
			s = (int64_t)o->ns - 1;
			if (pmap_put(&o->sidx, p1, (uint64_t)f, (size_t)s) != 0)
				return gecko_fail(g, -ENOMEM);
		}
		o->map[i] = (uint32_t)s;
	}
	return 0;
}


/* One samples row [stack, time, eventDelay, threadCPUDelta], formatted
 * at once (a profile has millions of them). */
static void
write_smp(struct gsess *g, struct json *j, const struct otables *o,
    const struct gsmp *s, double t, uint64_t cpu_ns)
{
	char b[96];
	size_t n = 0, m;

	(void)g;
	b[n++] = '[';
	n += fmt_u64(b + n, o->map[s->stack]);
	b[n++] = ',';
	if ((m = fmt_ms(b + n, t)) == 0) {      /* beyond 11 days: rare */
		json_arr(j);
		json_u64(j, o->map[s->stack]);
		json_f64(j, t);
		json_u64(j, 0);
		json_u64(j, cpu_ns);
		json_arr_end(j);
		return;
	}
	n += m;
	memcpy(b + n, ",0,", 3);
	n += 3;
	n += fmt_u64(b + n, cpu_ns);
	b[n++] = ']';
	json_elem(j, b, n);
}

/*
 * Inside how many "Audio callback" intervals a thread is, its samples
 * read back in time order (struct gsmp, GSMP_CB_* marks among them).
 * Return: true for a mark (not a sample).
 */
static bool
cb_depth_step(uint64_t *depth, const struct gsmp *s)
{
	if (s->stack == GSMP_CB_BEGIN) {
		++*depth;
		return true;
	}
	if (s->stack == GSMP_CB_END) {
		if (*depth != 0)
			--*depth;
		return true;
	}
	return false;
}

/* The raw node like the Idle leaf @node but awake, if it exists. */
static int64_t
raw_awake_find(const struct gthread *th, uint32_t node)
{
	const struct grawstack *n = &th->rs[node];
	uint8_t kind = n->kind & RAW_KIND_MASK;

	return pmap_get(&th->rs_idx, n->value, (uint64_t)n->prefix1 << 24 |
	    (uint64_t)n->epoch << 8 | kind);
}

/* Creating the awake twins of Idle samples inside callbacks. */
struct twin_ctx {
	struct gsess *g;
	struct gthread *th;
	uint64_t depth;
};

static int
twin_record(void *ctx, const void *rec, size_t n)
{
	struct twin_ctx *c = ctx;
	struct gsmp s;

	(void)n;
	memcpy(&s, rec, sizeof(s));
	if (cb_depth_step(&c->depth, &s) || c->depth == 0 ||
	    s.stack >= c->th->nrs || !(c->th->rs[s.stack].kind & RAW_IDLE))
		return 0;
	return raw_idle(c->g, c->th, s.stack, false) < 0 ? c->g->err : 0;
}

/*
 * A sample inside an "Audio callback" interval of its thread is never
 * Idle (the thread was in its callback, whatever its CPU said: waiting
 * for a CPU, or sampled at the callback's first instant): the awake twin
 * of every such Idle leaf is made before the tables are built.
 */
static int
callback_twins(struct gsess *g, struct gthread *th)
{
	struct twin_ctx c = { .g = g, .th = th };

	if (th->ncb == 0 || th->nsmp == 0)
		return 0;
	return spill_get(g, th->smps, twin_record, &c);
}

/* Reading a thread's sampler samples back (write_sampled). */
struct smp_ctx {
	struct gsess *g;
	struct json *j;
	const struct gthread *th;
	const struct otables *o;
	size_t emitted;
	uint64_t depth;                 /* inside callbacks (cb_depth_step) */
	bool have_before, have_first;
	struct gsmp before, first;      /* last before the window; first */
};

static int
smp_record(void *ctx, const void *rec, size_t n)
{
	struct smp_ctx *c = ctx;
	struct gsmp s;
	double t;

	(void)n;
	memcpy(&s, rec, sizeof(s));
	if (cb_depth_step(&c->depth, &s))
		return 0;
	if (c->depth != 0 && s.stack < c->th->nrs &&
	    (c->th->rs[s.stack].kind & RAW_IDLE)) {
		int64_t awake = raw_awake_find(c->th, s.stack);

		if (awake >= 0)
			s.stack = (uint32_t)awake;
	}
	if (!c->have_first) {
		c->first = s;
		c->have_first = true;
	}
	t = gecko_ms(c->g, s.t);
	if (t < c->g->win_a) {
		c->before = s;
		c->have_before = true;
		return 0;
	}
	if (t > c->g->win_b)
		return 1;               /* sorted: nothing more to write */
	write_smp(c->g, c->j, c->o, &s, t, s.cpu_ns);
	c->emitted++;
	return 0;
}

/* Stack rows of @o, every index moved by @off. */
static void
write_stack_rows(struct json *j, const struct otables *o, uint32_t off)
{
	for (size_t k = 0; k < o->ns; k++) {
		json_arr(j);
		if (o->s[k].prefix1 != 0)
			json_u64(j, o->s[k].prefix1 - 1 + off);
		else
			json_null(j);
		json_u64(j, o->s[k].frame + off);
		json_arr_end(j);
	}
}

/* Frame rows of @o (after others: they hold no frame index). */
static void
write_frame_rows(struct json *j, const struct otables *o)
{
	for (size_t k = 0; k < o->nf; k++) {
		json_arr(j);
		json_u64(j, o->f[k].loc);
		json_bool(j, false);
		json_null(j);
		json_null(j);
		if (o->f[k].line > 0)
			json_i64(j, o->f[k].line);
		else
			json_null(j);
		json_null(j);
		json_u64(j, o->f[k].cat);
		json_u64(j, 0);
		json_arr_end(j);
	}
}

/*
 * Samples, stackTable and frameTable of a thread the sampler sampled: its
 * SAMPLE/SAME records in time order (the sampler writes each thread's in
 * order, but a sort is cheap insurance), each with its CPU time since the previous one.
 * @o: the thread's tables, built (build_tables) or not (@ok false).
 */
static void
write_sampled(struct gsess *g, struct json *j, struct gthread *th,
    const struct otables *o, bool ok)
{
	static const char *const sample_cols[] = { "stack", "time",
	    "eventDelay", "threadCPUDelta" };
	struct smp_ctx c = { .g = g, .j = j, .th = th, .o = o };

	json_key(j, "samples");
	json_obj(j);
	write_table_schema(j, sample_cols, 4);
	json_key(j, "data");
	json_arr(j);
	/* In time order (the spill sorts when they did not arrive so). */
	if (ok)
		spill_get(g, th->smps, smp_record, &c);
	/*
	 * Nothing inside the time window: the stack in effect at its start
	 * (or the first one) as its one sample, so the thread keeps a sample.
	 */
	if (ok && c.emitted == 0 && (c.have_before || c.have_first))
		write_smp(g, j, o, c.have_before ? &c.before : &c.first,
		    isfinite(g->win_a) ? g->win_a : g->win_b, 0);
	json_arr_end(j);
	json_obj_end(j);

	json_key(j, "stackTable");
	json_obj(j);
	write_table_schema(j, stack_cols, 2);
	json_key(j, "data");
	json_arr(j);
	if (ok)
		write_stack_rows(j, o, 0);
	json_arr_end(j);
	json_obj_end(j);

	json_key(j, "frameTable");
	json_obj(j);
	write_table_schema(j, frame_cols, 8);
	json_key(j, "data");
	json_arr(j);
	if (ok)
		write_frame_rows(j, o);
	json_arr_end(j);
	json_obj_end(j);
}

/*
 * The sampler's ticks of one window (at most GECKO_OVERHEAD_WINDOW_MS):
 * one marker, not one per tick.
 */
struct ovh_win {
	bool open;
	double t0, t1;                  /* first tick's start, last's end */
	uint64_t ticks, sum[3], max, nthreads;
};

static void
ovh_win_add(struct ovh_win *w, const struct govh *o, double t0, double t1)
{
	uint64_t total = o->v[0] + o->v[1] + o->v[2];

	if (!w->open) {
		memset(w, 0, sizeof(*w));
		w->open = true;
		w->t0 = t0;
	}
	w->t1 = t1 > w->t1 ? t1 : w->t1;
	w->ticks++;
	for (int i = 0; i < 3; i++)
		w->sum[i] += o->v[i];
	if (total > w->max)
		w->max = total;
	if (o->v[3] > w->nthreads)
		w->nthreads = o->v[3];
}

static void
write_overhead_marker(struct gsess *g, struct json *j, struct tout *to,
    const struct ovh_win *w)
{
	static const char name[] = "Profiler overhead";

	json_arr(j);
	json_i64(j, intern(g, to, name, sizeof(name) - 1));
	json_f64(j, w->t0);
	json_f64(j, w->t1);
	json_u64(j, 1);
	json_u64(j, out_cat(g, g->cat_profiler));
	json_obj(j);
	json_key(j, "type");
	json_str(j, GECKO_OVERHEAD_SCHEMA);
	json_key(j, "total");
	json_u64(j, w->sum[0] + w->sum[1] + w->sum[2]);
	json_key(j, "ticks");
	json_u64(j, w->ticks);
	json_key(j, "max");
	json_u64(j, w->max);
	json_key(j, "lock");
	json_u64(j, w->sum[0]);
	json_key(j, "threads");
	json_u64(j, w->sum[1]);
	json_key(j, "counters");
	json_u64(j, w->sum[2]);
	json_key(j, "nthreads");
	json_u64(j, w->nthreads);
	json_obj_end(j);
	json_arr_end(j);
}

/* Reading a thread's markers back (write_thread). */
struct mark_ctx {
	struct gsess *g;
	struct json *j;
	struct tout *to;
	const struct otables *o;        /* NULL: no backtraces */
	uint32_t stack_off;             /* o's stack rows start here */
	int64_t tid;
	struct ovh_win ovh;             /* overhead ticks not yet written */
};

static int
mark_record(void *ctx, const void *rec, size_t n)
{
	struct mark_ctx *c = ctx;
	struct rtprof_val vals[RTPROF_REC_MAX_VALS];
	struct gmark m;

	(void)n;
	marker_unspill(rec, &m, vals);
	if (marker_in_win(c->g, &m))
		write_marker(c->g, c->j, c->to, &m, c->o != NULL &&
		    m.stack1 != 0 && m.stack1 - 1 < c->g->th_nrs ?
		    (int64_t)c->o->map[m.stack1 - 1] + c->stack_off : -1,
		    c->tid);
	return 0;
}

static int
ovh_record(void *ctx, const void *rec, size_t n)
{
	struct mark_ctx *c = ctx;
	struct govh o;
	double t0, t1;

	(void)n;
	memcpy(&o, rec, sizeof(o));
	t0 = gecko_ms(c->g, o.t0);
	t1 = gecko_ms(c->g, o.t1);
	if (!overlaps_win(c->g, t0, t1))
		return 0;
	if (c->ovh.open && t1 - c->ovh.t0 > GECKO_OVERHEAD_WINDOW_MS) {
		write_overhead_marker(c->g, c->j, c->to, &c->ovh);
		c->ovh.open = false;
	}
	ovh_win_add(&c->ovh, &o, t0, t1);
	return 0;
}

/*
 * The track name of a real-time thread. The front-end keeps a thread
 * whose name starts with "Audio" visible whenever it ran at all and
 * ranks it 40 times its CPU for the thread selected on load (tracks.ts,
 * _isFirefoxMediaThreadWhichIsUsuallyIdle); nothing else of a Gecko
 * profile says which threads to show or select (meta.initialVisibleThreads
 * and initialSelectedThreads do not survive its Gecko import). So: "audio"
 * becomes "Audio", another name gets "Audio RT: " in front.
 */
static const char *
rt_track_name(const char *name, char *buf, size_t n)
{
	if (strncmp(name, "Audio", 5) == 0)
		return name;
	if (strncmp(name, "audio", 5) == 0)
		snprintf(buf, n, "A%s", name + 1);
	else
		snprintf(buf, n, "Audio RT: %s", name);
	return buf;
}

/*
 * One thread. @th NULL: the synthetic GeckoMain of a dump without a main
 * thread (no markers; one sample at the session start).
 */
static void
write_thread(struct gsess *g, struct json *j, struct gthread *th,
    bool main)
{
	static const char *const marker_cols[] = { "name", "startTime",
	    "endTime", "phase", "category", "data" };
	struct tout to;
	struct otables o;
	bool tables_ok = false;
	char namebuf[300];
	const char *tname;
	double reg = 0.0;
	size_t k;

	memset(&to, 0, sizeof(to));
	if (th != NULL && th->name != NULL && th->name[0] != '\0' &&
	    (th->flags & GECKO_THREAD_RT) != 0) {
		tname = rt_track_name(th->name, namebuf, sizeof(namebuf));
	} else if (th != NULL && th->name != NULL && th->name[0] != '\0') {
		tname = th->name;
	} else if (th != NULL) {
		snprintf(namebuf, sizeof(namebuf), "thread %" PRId64, th->tid);
		tname = namebuf;
	} else {
		tname = g->process != NULL ? g->process : "main";
	}
	if (th != NULL && th->has_reg)
		reg = gecko_ms(g, th->reg);
	else if (th != NULL && th->has_first)
		reg = gecko_ms(g, th->first_ticks);

	json_obj(j);
	json_key(j, "name");
	json_str(j, main ? "GeckoMain" : tname);
	json_key(j, "processType");
	json_str(j, "default");
	json_key(j, "processName");
	json_str(j, g->out_name);
	json_key(j, "pid");
	json_i64(j, g->out_pid);
	json_key(j, "tid");
	json_i64(j, th != NULL ? th->tid : g->pid);
	json_key(j, "registerTime");
	json_f64(j, reg);
	json_key(j, "unregisterTime");
	if (th != NULL && th->has_unreg) {
		double u = gecko_ms(g, th->unreg);

		json_f64(j, u >= reg ? u : reg);
	} else {
		json_null(j);
	}

	/*
	 * Markers as they were recorded (an interval when its end came; the
	 * front-end sorts them), then the sampler's overhead markers; the
	 * pauses go on the main thread. The frame and stack tables are built
	 * before (a marker names its backtrace's stack): the sampler's
	 * stacks and the backtraces share them.
	 */
	memset(&o, 0, sizeof(o));
	if (th != NULL)
		callback_twins(g, th);
	if (th != NULL && th->nrs != 0)
		tables_ok = build_tables(g, &to, th, &o) == 0;
	json_key(j, "markers");
	json_obj(j);
	write_table_schema(j, marker_cols, 6);
	json_key(j, "data");
	json_arr(j);
	if (th != NULL) {
		struct mark_ctx mc = { .g = g, .j = j, .to = &to,
		    .o = tables_ok ? &o : NULL, .tid = th->tid,
		    .stack_off = th->nsmp != 0 ? 0 : PLACEHOLDER_ROWS };

		g->th_nrs = th->nrs;
		spill_get(g, th->ms, mark_record, &mc);
		spill_get(g, th->ovs, ovh_record, &mc);
		if (mc.ovh.open)
			write_overhead_marker(g, j, &to, &mc.ovh);
	}
	if (main)
		write_counter_markers(g, j, &to);
	if (main)
		for (k = 0; k < g->npause; k++)
			if (overlaps_win(g, gecko_ms(g, g->pause[k][0]),
			    gecko_ms(g, g->pause[k][1])))
				write_pause_marker(g, j, &to, k);
	json_arr_end(j);
	json_obj_end(j);

	/* Real samples where the sampler saw the thread, else placeholders
	 * (and the backtraces' tables after theirs). */
	if (th != NULL && th->nsmp != 0)
		write_sampled(g, j, th, &o, tables_ok);
	else
		write_placeholder(g, j, th, &to, tname, reg,
		    tables_ok ? &o : NULL);
	otables_free(&o);

	/* Last: every string interned above. */
	json_key(j, "stringTable");
	json_arr(j);
	for (k = 0; k < to.str.n; k++)
		json_strn(j, to.str.s[k], to.str.len[k]);
	json_arr_end(j);
	json_obj_end(j);
	strtab_free(&to.str);
}

/* Is the (non-main) thread @th written, given the filter and window? */
static bool
thread_kept(const struct gsess *g, const struct gthread *th)
{
	const struct rtprof_gecko_filter *f = g->flt;
	double reg = 0.0;

	if (f != NULL && f->nthreads != 0) {
		size_t i;

		for (i = 0; i < f->nthreads; i++)
			if (th->name != NULL && strcmp(th->name,
			    f->threads[i]) == 0)
				break;
		if (i == f->nthreads)
			return false;
	}
	if (th->has_reg)
		reg = gecko_ms(g, th->reg);
	else if (th->has_first)
		reg = gecko_ms(g, th->first_ticks);
	if (reg > g->win_b)
		return false;
	if (th->has_unreg && gecko_ms(g, th->unreg) < g->win_a)
		return false;
	return true;
}

/* Grows a buffer: the captured top-level meta. */
struct membuf {
	char *p;
	size_t n, cap;
};

static int
membuf_write(void *ctx, const void *p, size_t n)
{
	struct membuf *b = ctx;

	if (grow((void **)&b->p, &b->cap, b->n + n, 1) != 0)
		return -ENOMEM;
	memcpy(b->p + b->n, p, n);
	b->n += n;
	return 0;
}

struct rtprof_gecko_writer {
	struct json *j;
	struct rtprof_gecko_note *notes;        /* strings owned */
	size_t nnotes, notecap;
	const struct rtprof_gecko_filter *flt;
	int err;
	bool top_done;
	int64_t top_wall_ns;            /* top-level meta.startTime, ns */
	char **top_cat;                 /* the top level's category names */
	uint32_t ntop_cat, top_cat_default;
	struct membuf meta;             /* top-level meta, without range */
	bool have_range;
	double range_a, range_b;        /* top-level ms */
	struct rtprof_idmap pids;       /* pids written so far */
	struct rtprof_idmap pid_next;   /* dump pid -> next k to try */
	bool sampled;                   /* a session has sampler samples */
	bool unsymbolized;              /* a session's natives stay hex */
};

int
rtprof_gecko_writer_new(struct rtprof_gecko_writer **out,
    const struct rtprof_gecko_filter *filter, rtprof_gecko_write_cb write,
    void *ctx)
{
	struct rtprof_gecko_writer *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return -ENOMEM;
	w->j = calloc(1, sizeof(*w->j));
	if (w->j == NULL) {
		free(w);
		return -ENOMEM;
	}
	w->j->write = write;
	w->j->ctx = ctx;
	w->flt = filter;
	*out = w;
	return 0;
}

static bool
pid_used(const struct rtprof_gecko_writer *w, int64_t pid)
{
	return rtprof_idmap_get(&w->pids, pid) >= 0;
}

/*
 * The pid @g is written with: its own, or the first free one of pid + k *
 * 4194304 (above PID_MAX_LIMIT; wrapping: a dump's pid may be anything).
 * Each dump pid remembers the k it reached, so N sessions of one pid cost
 * O(N), not O(N^2) probes.
 */
static int
choose_pid(struct rtprof_gecko_writer *w, int64_t dpid, int64_t *out)
{
	int64_t k0 = rtprof_idmap_get(&w->pid_next, dpid);
	uint64_t k = k0 > 0 ? (uint64_t)k0 : 0;
	int64_t pid = (int64_t)((uint64_t)dpid + k * 4194304u);

	while (pid_used(w, pid))
		pid = (int64_t)((uint64_t)dpid + ++k * 4194304u);
	if (rtprof_idmap_set(&w->pid_next, dpid, (size_t)k + 1) != 0 ||
	    rtprof_idmap_set(&w->pids, pid, 0) != 0)
		return -ENOMEM;
	*out = pid;
	return 0;
}

/* Choose the pid and process name that @g is shown with. */
static int
name_process(struct rtprof_gecko_writer *w, struct gsess *g)
{
	const char *p = g->process != NULL ? g->process : "";
	int64_t pid;

	if (choose_pid(w, g->pid, &pid) != 0)
		return -ENOMEM;
	g->out_pid = pid;
	if (g->ordinal > 1)
		snprintf(g->out_name, sizeof(g->out_name), "%s (session %"
		    PRIu64 ")", p, g->ordinal);
	else if (pid != g->pid)
		snprintf(g->out_name, sizeof(g->out_name), "%s (pid %" PRId64
		    ")", p, g->pid);
	else
		snprintf(g->out_name, sizeof(g->out_name), "%s", p);
	return 0;
}

/* The process object's members other than meta and processes. */
static void
write_process_body(struct gsess *g, struct json *j)
{
	struct gthread *main_th = NULL;

	for (size_t i = 0; i < g->nth; i++) {
		if (g->th[i].flags & 2) {
			main_th = &g->th[i];
			break;
		}
	}
	write_libs(g, j);
	json_key(j, "pages");
	json_arr(j);
	json_arr_end(j);
	write_counters(g, j);
	write_paused_ranges(g, j);
	json_key(j, "threads");
	json_arr(j);
	/*
	 * GeckoMain first. A dump without a main thread still gets one (a
	 * synthetic thread with tid = pid and one sample at the session
	 * start): counters and the process track need it.
	 */
	write_thread(g, j, main_th, true);
	for (size_t i = 0; i < g->nth && j->err == 0 && g->err == 0; i++)
		if (&g->th[i] != main_th && thread_kept(g, &g->th[i]))
			write_thread(g, j, &g->th[i], false);
	json_arr_end(j);
	/* After the threads: it tells how symbolication went. */
	write_gathering_log(g, j);
	rtprof_symbolizer_free(g->sym);
	g->sym = NULL;
}

/* Keep the top level's category names (@g is the top level). */
static int
keep_top_cats(struct rtprof_gecko_writer *w, const struct gsess *g)
{
	w->top_cat = calloc(g->ncat + 1, sizeof(*w->top_cat));
	if (w->top_cat == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < g->ncat; i++) {
		w->top_cat[i] = strdup(g->cat[i].name != NULL ?
		    g->cat[i].name : "");
		if (w->top_cat[i] == NULL)
			return -ENOMEM;
		w->ntop_cat = i + 1;
	}
	w->top_cat_default = g->cat_default;
	return 0;
}

/* @g's category indexes in the top level's list (a sub-process). */
static int
map_cats(const struct rtprof_gecko_writer *w, struct gsess *g)
{
	g->cat_out = calloc(g->ncat + 1, sizeof(*g->cat_out));
	if (g->cat_out == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < g->ncat; i++) {
		g->cat_out[i] = w->top_cat_default;
		for (uint32_t k = 0; k < w->ntop_cat; k++) {
			if (g->cat[i].name != NULL &&
			    strcmp(g->cat[i].name, w->top_cat[k]) == 0) {
				g->cat_out[i] = k;
				break;
			}
		}
	}
	return 0;
}

static int
write_session(struct rtprof_gecko_writer *w, struct gsess *g)
{
	struct json *j = w->j;
	double delta, a, b;

	if (g->err != 0)
		return g->err;
	if (!w->top_done)
		w->top_wall_ns = g->start_wall_ns;
	delta = rtprof_ns_diff(g->start_wall_ns, w->top_wall_ns) / 1e6;
	g->flt = w->flt;
	g->notes = w->notes;
	g->nnotes = w->nnotes;
	g->top = !w->top_done;
	g->win_a = w->flt != NULL && w->flt->has_from ?
	    w->flt->from_ms - delta : -INFINITY;
	g->win_b = w->flt != NULL && w->flt->has_to ?
	    w->flt->to_ms - delta : INFINITY;
	if (name_process(w, g) != 0 ||
	    (w->top_done ? map_cats(w, g) : keep_top_cats(w, g)) != 0)
		return -ENOMEM;
	w->sampled |= sess_sampled(g);
	w->unsymbolized |= !sess_presymbolicated(g);

	sess_range(g, &a, &b);
	a += delta;
	b += delta;
	if (w->flt != NULL && w->flt->has_from && a < w->flt->from_ms)
		a = w->flt->from_ms;
	if (w->flt != NULL && w->flt->has_to && b > w->flt->to_ms)
		b = w->flt->to_ms;
	if (b < a)
		b = a;
	if (!w->have_range || a < w->range_a)
		w->range_a = a;
	if (!w->have_range || b > w->range_b)
		w->range_b = b;
	w->have_range = true;

	if (!w->top_done) {
		/*
		 * Top level: its meta is captured now and written last, with
		 * a profiling range that covers every process; the
		 * "processes" array stays open for the other sessions.
		 */
		struct json *mj = calloc(1, sizeof(*mj));

		if (mj == NULL)
			return -ENOMEM;
		mj->write = membuf_write;
		mj->ctx = &w->meta;
		write_meta(g, mj, true);
		json_flush(mj);
		if (mj->err != 0 || w->meta.n < 2) {
			int e = mj->err != 0 ? mj->err : -ENOMEM;

			free(mj);
			return e;
		}
		free(mj);
		w->top_done = true;
		json_obj(j);
		write_process_body(g, j);
		json_key(j, "processes");
		json_arr(j);
	} else {
		json_obj(j);
		json_key(j, "meta");
		write_meta(g, j, false);
		json_key(j, "processes");
		json_arr(j);
		json_arr_end(j);
		write_process_body(g, j);
		json_obj_end(j);
	}
	if (g->err != 0)
		return g->err;
	return j->err;
}

int
rtprof_gecko_writer_add(struct rtprof_gecko_writer *w, struct rtprof_gecko *g)
{
	if (w->err != 0)
		return w->err;
	if (g->err != 0)
		return w->err = g->err;
	if (rtprof_gecko_sessions(g) == 0)
		return -ENODATA;
	for (size_t i = 0; i < g->nsess && w->err == 0; i++)
		if (g->sess[i]->have_header)
			w->err = write_session(w, g->sess[i]);
	return w->err;
}

int
rtprof_gecko_writer_finish(struct rtprof_gecko_writer *w)
{
	struct json *j;
	int rc;

	if (w == NULL)
		return 0;
	j = w->j;
	rc = w->err;
	if (rc == 0 && !w->top_done)
		rc = -ENODATA;
	if (rc == 0) {
		json_arr_end(j);                /* processes */
		json_key(j, "meta");
		json_obj(j);
		json_key(j, "profilingStartTime");
		json_f64(j, w->range_a);
		json_key(j, "profilingEndTime");
		json_f64(j, w->range_b);
		json_key(j, "presymbolicated");
		json_bool(j, !w->unsymbolized);
		if (w->sampled)
			write_sample_units(j);
		/* The captured meta, its opening brace replaced by a comma. */
		json_ch(j, ',');
		json_raw(j, w->meta.p + 1, w->meta.n - 1);
		j->depth--;
		json_obj_end(j);                /* top level */
		json_ch(j, '\n');
		json_flush(j);
		rc = j->err;
	}
	free(w->meta.p);
	rtprof_idmap_free(&w->pids);
	for (uint32_t i = 0; i < w->ntop_cat; i++)
		free(w->top_cat[i]);
	free(w->top_cat);
	rtprof_idmap_free(&w->pid_next);
	for (size_t i = 0; i < w->nnotes; i++) {
		free((char *)w->notes[i].what);
		free((char *)w->notes[i].dump);
		free((char *)w->notes[i].program);
		free((char *)w->notes[i].reason);
	}
	free(w->notes);
	free(j);
	free(w);
	return rc;
}

int
rtprof_gecko_writer_note(struct rtprof_gecko_writer *w,
    const struct rtprof_gecko_note *n)
{
	struct rtprof_gecko_note c = *n;
	int err = 0;

	if (n->what == NULL)
		return -EINVAL;
	if (w->top_done)
		return -EBUSY;
	c.what = dup_opt(n->what, &err);
	c.dump = dup_opt(n->dump, &err);
	c.program = dup_opt(n->program, &err);
	c.reason = dup_opt(n->reason, &err);
	if (err == 0 && grow((void **)&w->notes, &w->notecap, w->nnotes + 1,
	    sizeof(*w->notes)) != 0)
		err = -ENOMEM;
	if (err != 0) {
		free((char *)c.what);
		free((char *)c.dump);
		free((char *)c.program);
		free((char *)c.reason);
		return -ENOMEM;
	}
	w->notes[w->nnotes++] = c;
	return 0;
}

int
rtprof_gecko_write(struct rtprof_gecko *g, rtprof_gecko_write_cb write,
    void *ctx)
{
	struct rtprof_gecko_writer *w;
	int rc;

	if (g->err != 0)
		return g->err;
	rc = rtprof_gecko_writer_new(&w, NULL, write, ctx);
	if (rc != 0)
		return rc;
	rc = rtprof_gecko_writer_add(w, g);
	if (rc != 0) {
		w->err = rc;
		rtprof_gecko_writer_finish(w);
		return rc;
	}
	return rtprof_gecko_writer_finish(w);
}

size_t
rtprof_gecko_sessions(const struct rtprof_gecko *g)
{
	size_t n = 0;

	for (size_t i = 0; i < g->nsess; i++)
		n += g->sess[i]->have_header;
	return n;
}

/* Context: the caller's thread. */
void
rtprof_gecko_thread_names(const struct rtprof_gecko *g,
    void (*fn)(void *ctx, const char *name), void *ctx)
{
	for (size_t i = 0; i < g->nsess; i++) {
		const struct gsess *s = g->sess[i];

		if (!s->have_header)
			continue;
		for (size_t k = 0; k < s->nth; k++)
			if (s->th[k].name != NULL && s->th[k].name[0] != '\0')
				fn(ctx, s->th[k].name);
	}
}

/* ------------------------------------------------------------------ */
/* --info                                                               */

static void
print_session(const struct gsess *g, FILE *out)
{
	uint64_t drop_full = 0, drop_nested = 0;
	size_t nschema;

	fprintf(out, "session %" PRIu64 ":\n", g->ordinal);
	{
		char p[256], e[1024], c[64];

		/* Dump strings, escaped for the terminal (esc.h). */
		fprintf(out, "process %" PRId64 " \"%s\" (%s), clock %s at "
		    "%.0f ticks/s, ", g->pid, rtprof_esc(p, sizeof(p), g->process),
		    rtprof_esc(e, sizeof(e), g->exe),
		    rtprof_esc(c, sizeof(c), g->clock_source != NULL ?
		    g->clock_source : "?"), g->ticks_per_second);
		/* RTPROF_SAMPLING_OFF (0xffffffff): the session ran without
		 * the sampler. */
		if (g->sample_interval_us >= 0xffffffffu)
			fputs("sampler off\n", out);
		else
			fprintf(out, "sample interval %" PRIu64 " us\n",
			    g->sample_interval_us);
		if (g->sampling_method != NULL && g->sampling_method[0])
			fprintf(out, "sampling: %s (%s)\n", g->sampling_method,
			    g->sampling_why != NULL ? g->sampling_why : "");
		if (g->have_t)
			fprintf(out, "events from %.3f ms to %.3f ms\n",
			    gecko_ms(g, g->first_t), gecko_ms(g, g->last_t));
		fprintf(out, "session %s trailer", g->have_trailer ?
		    "ends with a" : "has no");
		if (g->have_trailer)
			fprintf(out, " (stop at %.3f ms)",
			    gecko_ms(g, g->stop_ticks));
		if (g->tr_threads_omitted != 0)
			fprintf(out, "; the size cap left the counts of %"
			    PRIu64 " thread(s) out of it",
			    g->tr_threads_omitted);
		fprintf(out, "\n");
	}
	fprintf(out, "%zu thread(s):\n", g->nth);
	for (size_t i = 0; i < g->nth; i++) {
		const struct gthread *th = &g->th[i];
		char nm[256];

		drop_full += th->dropped_full;
		drop_nested += th->dropped_nested;
		fprintf(out, "  tid %" PRId64 " \"%s\"%s%s%s: %" PRIu64
		    " records, %" PRIu64 " samples", th->tid,
		    rtprof_esc(nm, sizeof(nm), th->name),
		    th->flags & 2 ? " main" : "",
		    th->flags & 1 ? " real-time" : "",
		    th->flags & 4 ? " sampler" : "", th->recs, th->nsmp);
		if (g->have_header && th->has_reg)
			fprintf(out, ", registered %.3f ms",
			    gecko_ms(g, th->reg));
		if (g->have_header && th->has_unreg)
			fprintf(out, ", exited %.3f ms", gecko_ms(g, th->unreg));
		if (th->dropped_full != 0 || th->dropped_nested != 0)
			fprintf(out, ", dropped %" PRIu64 " (full) %" PRIu64
			    " (nested)", th->dropped_full, th->dropped_nested);
		fprintf(out, "\n");
	}
	fprintf(out, "records:");
	for (unsigned k = 1; k <= RTPROF_REC_KIND_MAX; k++)
		fprintf(out, " %s %" PRIu64, rtprof_dump_rec_kind_name(k),
		    g->recs_by_kind[k]);
	nschema = g->nschema;
	fprintf(out, "\n%zu counter(s), %zu marker type(s), %zu pause(s), "
	    "%" PRIu64 " event(s)\n", g->nctr, nschema, g->npause,
	    g->ev_total);
	fprintf(out, "dropped at the source: %" PRIu64 " (no chunk), %" PRIu64
	    " (re-entrant)\n", drop_full, drop_nested);
	/* A sample of a thread that blocked the signal has no stack (its
	 * labels at most): not counted as one. */
	fprintf(out, "samples: %" PRIu64 " with a stack, %" PRIu64 " same "
	    "stack (%" PRIu64 " unknown), %" PRIu64 " truncated, %" PRIu64
	    " with the signal blocked\n", g->nsamples - g->nsig_blocked,
	    g->nsame, g->nsame_unknown, g->ntruncated, g->nsig_blocked);
	for (size_t i = 0; i < g->nth; i++)
		if (g->th[i].nsig_blocked != 0)
			fprintf(out, "  %" PRIu64 " samples of thread \"%s\" "
			    "(tid %" PRId64 ") had the signal blocked\n",
			    g->th[i].nsig_blocked, g->th[i].name != NULL ?
			    g->th[i].name : "", g->th[i].tid);
	if (g->ovh_ticks != 0)
		fprintf(out, "sampler overhead: %" PRIu64 " ticks, %.0f ns "
		    "per tick on average, %" PRIu64 " ns at most\n",
		    g->ovh_ticks, (double)(g->ovh_sum[0] + g->ovh_sum[1] +
		    g->ovh_sum[2]) / (double)g->ovh_ticks, g->ovh_max);
}

int
rtprof_gecko_print_info(const struct rtprof_gecko *g, FILE *out)
{
	const struct rtprof_dump_stats *st = &g->stats;

	fprintf(out, "%s: %" PRIu64 " bytes, %" PRIu64 " frames, %" PRIu64
	    " session(s)\n", g->input, st->bytes, st->frames, st->sessions);
	if (g->nsess == 0)
		fprintf(out, "no session header: nothing to convert\n");
	for (size_t i = 0; i < g->nsess; i++)
		if (g->sess[i]->have_header)
			print_session(g->sess[i], out);
	if (g->ignored_frames != 0)
		fprintf(out, "ignored: %" PRIu64 " frame(s) of %" PRIu64
		    " session(s) without a header\n", g->ignored_frames,
		    g->ignored_sessions);
	fprintf(out, "damage: %" PRIu64 " report(s)\n", g->dmg_total);
	for (size_t i = 0; i < g->ndmg; i++) {
		fprintf(out, "  offset %" PRIu64 ": %s: ", g->dmg[i].offset,
		    rtprof_dump_damage_name(g->dmg[i].kind));
		rtprof_esc_puts(out, g->dmg[i].message);
		fprintf(out, " (count %" PRIu64 ")\n", g->dmg[i].count);
	}
	return ferror(out) ? -EIO : 0;
}
