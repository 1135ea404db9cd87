/*
 * dump_reader.c - streaming decoder of rtprof dumps (docs/wire-format.md).
 *
 * Pipeline: bytes -> rtprof_scanner (frame.c: sync, CRCs, resync) ->
 * session/seq bookkeeping -> payload decoding -> callbacks.
 *
 * Payloads are untrusted even when their CRC is right (a buggy or hostile
 * writer computes CRCs too). msgpack-c allocates count * 24 bytes up front
 * for every array or map it meets, so before a payload reaches it,
 * mp_check() walks the bytes once and refuses any container whose count
 * exceeds the bytes left (every element takes at least one byte) and any
 * payload of more than RTPROF_DUMP_MAX_OBJECTS objects. msgpack-c itself
 * refuses nesting deeper than 32. Semantic caps (RTPROF_DUMP_MAX_*) then
 * bound what the reader copies into its own arena.
 *
 * Context: any thread; each call owns all of its state.
 */
#include <errno.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "dump_reader.h"
#include "frame.h"

#define READ_PIECE (1u << 20)
#define SESSION_SLOTS 8
#define ARENA_BLOCK (64u << 10)

/* ------------------------------------------------------------------ */
/* Arena for the strings and arrays handed to one frame's callbacks.  */

struct arena_blk {
	struct arena_blk *next;
	size_t cap;
	size_t used;
	max_align_t data[];
};

struct arena {
	struct arena_blk *head;
};

static void *
arena_alloc(struct arena *a, size_t n)
{
	const size_t al = alignof(max_align_t);
	struct arena_blk *b = a->head;
	size_t need;
	void *p;

	/* Callers pass sizes bounded by the frame size and the caps. */
	if (n > SIZE_MAX / 2)
		return NULL;
	need = n ? (n + al - 1) & ~(al - 1) : al;
	if (b == NULL || b->cap - b->used < need) {
		size_t cap = need > ARENA_BLOCK ? need : ARENA_BLOCK;

		b = malloc(sizeof(*b) + cap);
		if (b == NULL)
			return NULL;
		b->next = a->head;
		b->cap = cap;
		b->used = 0;
		a->head = b;
	}
	p = (unsigned char *)b->data + b->used;
	b->used += need;
	return p;
}

/* Forget everything; keep one default-sized block for the next frame. */
static void
arena_reset(struct arena *a)
{
	struct arena_blk *b = a->head, *keep = NULL;

	while (b != NULL) {
		struct arena_blk *next = b->next;

		if (keep == NULL && b->cap == ARENA_BLOCK)
			keep = b;
		else
			free(b);
		b = next;
	}
	if (keep != NULL) {
		keep->next = NULL;
		keep->used = 0;
	}
	a->head = keep;
}

static void
arena_free(struct arena *a)
{
	arena_reset(a);
	free(a->head);
	a->head = NULL;
}

/* ------------------------------------------------------------------ */
/* Reader state.                                                      */

struct sess_slot {
	uint64_t index;         /* session_index; 0 = free slot */
	uint64_t stamp;         /* last use, for eviction */
	uint32_t id;
	uint32_t next_seq;
};

struct reader {
	const struct rtprof_dump_cb *cb;
	struct rtprof_dump_stats *st;
	struct rtprof_dump_stats own_st;
	struct rtprof_scanner sc;
	struct arena ar;
	msgpack_unpacked up;
	uint64_t expect_off;    /* stream offset just after the last frame */
	uint64_t bad_seen;      /* sc.bad_frames already reported */
	uint64_t stamp;
	struct sess_slot sess[SESSION_SLOTS];
	bool any_frame;         /* a frame of a readable version was seen */
	bool newer_reported;
	uint32_t newer_session;
	/* SAMPLE frames of the record being delivered. */
	uint64_t frames[RTPROF_REC_MAX_FRAMES];
	uint64_t label_mask[RTPROF_REC_MASK_WORDS];
};

/* Per-frame decode state: the first problem found, or an allocation error. */
struct dec {
	struct reader *r;
	const char *bad;
	int err;
};

static void
dec_fail(struct dec *d, const char *why)
{
	if (d->bad == NULL)
		d->bad = why;
}

static void *
dec_alloc(struct dec *d, size_t n)
{
	void *p = arena_alloc(&d->r->ar, n);

	if (p == NULL)
		d->err = -ENOMEM;
	return p;
}

static int
report(struct reader *r, enum rtprof_damage_kind kind, uint64_t offset,
    uint64_t length, uint64_t count, const struct sess_slot *s,
    const char *msg)
{
	struct rtprof_dump_damage d = {
		.kind = kind,
		.offset = offset,
		.length = length,
		.count = count,
		.session_index = s ? s->index : 0,
		.session = s ? s->id : 0,
		.message = msg,
	};

	r->st->damage++;
	if (r->cb->on_damage != NULL)
		return r->cb->on_damage(r->cb->ctx, &d);
	return 0;
}

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* ------------------------------------------------------------------ */
/* Raw msgpack: the structural check and a cursor for records.        */

static uint64_t
be_n(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/*
 * mp_check - check that @p[0..@n) starts with one complete msgpack object
 * whose every count is backed by bytes, and give its size in *@used.
 * Return: NULL, or a static message saying what is wrong.
 */
static const char *
mp_check(const unsigned char *p, size_t n, size_t *used)
{
	size_t i = 0, todo = 1, objs = 0;

	while (todo > 0) {
		uint64_t len = 0, items = 0;
		unsigned hl = 0, per = 0;
		unsigned char c;

		if (i >= n)
			return "msgpack object truncated";
		if (++objs > RTPROF_DUMP_MAX_OBJECTS)
			return "too many msgpack objects in one frame";
		todo--;
		c = p[i++];
		if (c <= 0x7f || c >= 0xe0) {
			continue;
		} else if (c <= 0x8f) {
			items = 2u * (c & 0x0fu);
		} else if (c <= 0x9f) {
			items = c & 0x0fu;
		} else if (c <= 0xbf) {
			len = c & 0x1fu;
		} else {
			switch (c) {
			case 0xc0: case 0xc2: case 0xc3: break;
			case 0xcc: case 0xd0: len = 1; break;
			case 0xcd: case 0xd1: len = 2; break;
			case 0xca: case 0xce: case 0xd2: len = 4; break;
			case 0xcb: case 0xcf: case 0xd3: len = 8; break;
			case 0xd4: len = 2; break;      /* fixext: type + data */
			case 0xd5: len = 3; break;
			case 0xd6: len = 5; break;
			case 0xd7: len = 9; break;
			case 0xd8: len = 17; break;
			case 0xc4: case 0xd9: hl = 1; break;
			case 0xc5: case 0xda: hl = 2; break;
			case 0xc6: case 0xdb: hl = 4; break;
			case 0xc7: hl = 1; len = 1; break; /* ext: + type */
			case 0xc8: hl = 2; len = 1; break;
			case 0xc9: hl = 4; len = 1; break;
			case 0xdc: hl = 2; per = 1; break;
			case 0xdd: hl = 4; per = 1; break;
			case 0xde: hl = 2; per = 2; break;
			case 0xdf: hl = 4; per = 2; break;
			default:
				return "invalid msgpack type byte 0xc1";
			}
		}
		if (hl != 0) {
			uint64_t v;

			if (n - i < hl)
				return "msgpack object truncated";
			v = be_n(p + i, hl);
			i += hl;
			if (per != 0)
				items = v * per;
			else
				len += v;
		}
		if (len > n - i)
			return hl ? "msgpack string, bin or ext longer than the frame" :
			    "msgpack object truncated";
		i += (size_t)len;
		/* Every object still to come takes at least one byte. */
		if (items > n - i || todo + items > n - i)
			return "msgpack array or map count larger than the frame";
		todo += (size_t)items;
	}
	*used = i;
	return NULL;
}

struct cur {
	const unsigned char *p;
	const unsigned char *e;
};

static int
cur_take(struct cur *c, size_t k, const unsigned char **out)
{
	if ((size_t)(c->e - c->p) < k)
		return -1;
	*out = c->p;
	c->p += k;
	return 0;
}

/* Any msgpack integer, as 64 bits; *@sgn when encoded as a signed type. */
static int
cur_int(struct cur *c, uint64_t *v, bool *sgn)
{
	const unsigned char *b;
	unsigned char t;
	unsigned k;

	if (cur_take(c, 1, &b) != 0)
		return -1;
	t = b[0];
	*sgn = false;
	if (t <= 0x7f) {
		*v = t;
		return 0;
	}
	if (t >= 0xe0) {
		*v = (uint64_t)((int)t - 256);
		*sgn = true;
		return 0;
	}
	switch (t) {
	case 0xcc: case 0xd0: k = 1; break;
	case 0xcd: case 0xd1: k = 2; break;
	case 0xce: case 0xd2: k = 4; break;
	case 0xcf: case 0xd3: k = 8; break;
	default:
		return -1;
	}
	if (cur_take(c, k, &b) != 0)
		return -1;
	*v = be_n(b, k);
	if (t >= 0xd0) {
		*sgn = true;
		if (k < 8 && (*v >> (8 * k - 1)) != 0)
			*v |= ~(uint64_t)0 << (8 * k);
	}
	return 0;
}

/* An integer in [0, @max]. */
static int
cur_max(struct cur *c, uint64_t max, uint64_t *v)
{
	bool sgn;

	if (cur_int(c, v, &sgn) != 0 || (sgn && (int64_t)*v < 0) || *v > max)
		return -1;
	return 0;
}

static int
cur_array(struct cur *c, uint32_t *n)
{
	const unsigned char *b;

	if (cur_take(c, 1, &b) != 0)
		return -1;
	if ((b[0] & 0xf0) == 0x90) {
		*n = b[0] & 0x0f;
		return 0;
	}
	if (b[0] == 0xdc || b[0] == 0xdd) {
		unsigned k = b[0] == 0xdc ? 2 : 4;

		if (cur_take(c, k, &b) != 0)
			return -1;
		*n = (uint32_t)be_n(b, k);
		return 0;
	}
	return -1;
}

/* STRREF: ext type 1 with 8 bytes of big-endian address (fixext 8/ext 8). */
static int
cur_strref(struct cur *c, uint64_t *ref)
{
	const unsigned char *b;

	if (cur_take(c, 1, &b) != 0)
		return -1;
	if (b[0] == 0xc7) {
		if (cur_take(c, 1, &b) != 0 || b[0] != 8)
			return -1;
	} else if (b[0] != 0xd7) {
		return -1;
	}
	if (cur_take(c, 9, &b) != 0 || b[0] != RTPROF_EXT_STRREF)
		return -1;
	*ref = be_n(b + 1, 8);
	return 0;
}

/* One typed-marker field value, tagged by its encoding. */
static int
cur_val(struct cur *c, struct rtprof_val *v)
{
	const unsigned char *b;
	unsigned char t;
	uint64_t n;
	bool sgn;

	if (c->p >= c->e)
		return -1;
	t = c->p[0];
	if (t <= 0x7f || t >= 0xe0 || (t >= 0xcc && t <= 0xd3)) {
		if (cur_int(c, &n, &sgn) != 0)
			return -1;
		v->kind = sgn ? RTPROF_VAL_I64 : RTPROF_VAL_U64;
		v->v.u = n;
		return 0;
	}
	if (t == 0xca || t == 0xcb) {
		c->p++;
		if (cur_take(c, t == 0xca ? 4 : 8, &b) != 0)
			return -1;
		v->kind = RTPROF_VAL_F64;
		if (t == 0xca) {
			uint32_t u = (uint32_t)be_n(b, 4);
			float f;

			memcpy(&f, &u, 4);
			v->v.d = f;
		} else {
			uint64_t u = be_n(b, 8);

			memcpy(&v->v.d, &u, 8);
		}
		return 0;
	}
	if (t == 0xd7 || t == 0xc7) {
		v->kind = RTPROF_VAL_STRREF;
		return cur_strref(c, &v->v.ref);
	}
	if ((t & 0xe0) == 0xa0 || t == 0xd9 || t == 0xda || t == 0xdb) {
		unsigned k = t == 0xd9 ? 1 : t == 0xda ? 2 : t == 0xdb ? 4 : 0;

		c->p++;
		if (k == 0)
			n = t & 0x1f;
		else if (cur_take(c, k, &b) != 0)
			return -1;
		else
			n = be_n(b, k);
		if (cur_take(c, (size_t)n, &b) != 0)
			return -1;
		v->kind = RTPROF_VAL_STR;
		v->v.str.p = (const char *)b;
		v->v.str.n = (uint32_t)n;
		return 0;
	}
	return -1;
}

/* @n frames of a SAMPLE or BACKTRACE (a STRREF is a label). */
static int
cur_frames(struct cur *c, unsigned n, struct rtprof_rec_view *r)
{
	r->nframes = n;
	if (r->label_mask != NULL)
		memset(r->label_mask, 0, RTPROF_REC_MASK_WORDS * 8);
	for (unsigned i = 0; i < n; i++) {
		uint64_t f;
		bool label = c->p < c->e && (c->p[0] == 0xd7 || c->p[0] == 0xc7);

		if (label ? cur_strref(c, &f) : cur_max(c, UINT64_MAX, &f))
			return -1;
		if (r->frames != NULL)
			r->frames[i] = f;
		if (label && r->label_mask != NULL)
			r->label_mask[i / 64] |= 1ull << (i % 64);
	}
	return 0;
}

/* The times and names rec_general() fills in for every kind. */
struct gen_common {
	uint64_t t0, t1, name, cat, phase;
};

/* Zone, text, flow and frame records (kinds 13..18) in any encoding. */
static int
general_user(struct cur *c, uint32_t arr, struct rtprof_rec_view *r,
    struct gen_common *k)
{
	uint64_t v;

	switch (r->kind) {
	case RTPROF_REC_ZONE_BEGIN:
		return arr != 4 || cur_max(c, UINT64_MAX, &k->t0) ||
		    cur_strref(c, &k->name) || cur_max(c, 127, &k->cat) ? -1 : 0;
	case RTPROF_REC_ZONE_END:
		return arr != 3 || cur_max(c, UINT64_MAX, &k->t0) ||
		    cur_max(c, UINT64_MAX, &r->zone) ? -1 : 0;
	case RTPROF_REC_ZONE_ARG:
		if (arr != 4 || cur_max(c, UINT64_MAX, &r->zone) ||
		    cur_max(c, RTPROF_ZONE_ARG_MAX, &k->phase) ||
		    k->phase == 0 || cur_val(c, &r->vals[0]) != 0)
			return -1;
		k->t0 = r->zone;
		r->nvals = 1;
		if (k->phase == RTPROF_ZONE_ARG_TEXT)
			return r->vals[0].kind == RTPROF_VAL_STR ? 0 : -1;
		if (k->phase >= RTPROF_ZONE_ARG_FLOW)
			return r->vals[0].kind == RTPROF_VAL_U64 ? 0 : -1;
		return r->vals[0].kind == RTPROF_VAL_STR ||
		    r->vals[0].kind == RTPROF_VAL_STRREF ? -1 : 0;
	case RTPROF_REC_TEXT:
		if (arr != 6 || cur_max(c, UINT64_MAX, &k->t0) ||
		    cur_max(c, UINT64_MAX, &k->t1) || cur_strref(c, &k->name) ||
		    cur_max(c, 127, &k->cat) || cur_val(c, &r->vals[0]) != 0 ||
		    r->vals[0].kind != RTPROF_VAL_STR)
			return -1;
		r->nvals = 1;
		k->phase = k->t1 != 0;
		return 0;
	case RTPROF_REC_FLOW:
		if (arr != 6 || cur_max(c, UINT64_MAX, &k->t0) ||
		    cur_strref(c, &k->name) || cur_max(c, 127, &k->cat) ||
		    cur_max(c, UINT64_MAX, &r->flow) || cur_max(c, 1, &v))
			return -1;
		r->flags = (uint8_t)v;
		return 0;
	case RTPROF_REC_FRAME:
		if (arr != 4 || cur_max(c, UINT64_MAX, &k->t0) ||
		    cur_strref(c, &k->name) || cur_max(c, UINT64_MAX, &v))
			return -1;
		r->value = (int64_t)v;
		return 0;
	default:
		return -1;
	}
}

/*
 * rec_general - decode a record in any msgpack encoding into the same view
 * rtprof_rec_next() fills (t1 = t0 where the record has no end time).
 */
static int
rec_general(const unsigned char *p, size_t n, struct rtprof_rec_view *r)
{
	struct cur c = { p, p + n };
	uint32_t arr;
	uint64_t v, name = 0, t0 = 0, t1 = 0, cat = 0, id = 0, phase = 0;
	bool sgn;

	if (cur_array(&c, &arr) != 0 || arr < 2 ||
	    cur_max(&c, RTPROF_REC_KIND_MAX, &v) != 0)
		return -1;
	r->kind = (uint8_t)v;
	r->nvals = 0;
	r->value = 0;
	r->nframes = 0;
	r->flags = 0;
	r->tid = 0;
	r->cpu_ns = 0;
	r->zone = 0;
	r->flow = 0;
	if (r->kind >= RTPROF_REC_ZONE_BEGIN) {
		struct gen_common k = { 0, 0, 0, 0, 0 };

		if (general_user(&c, arr, r, &k) != 0)
			return -1;
		t0 = k.t0;
		t1 = k.t1 != 0 ? k.t1 : k.t0;
		name = k.name;
		cat = k.cat;
		phase = k.phase;
	}
	switch (r->kind) {
	case RTPROF_REC_INSTANT:
	case RTPROF_REC_BEGIN:
	case RTPROF_REC_END:
		if (arr != 4 || cur_max(&c, UINT64_MAX, &t0) ||
		    cur_strref(&c, &name) || cur_max(&c, UINT8_MAX, &cat))
			return -1;
		t1 = t0;
		break;
	case RTPROF_REC_INTERVAL:
		if (arr != 5 || cur_max(&c, UINT64_MAX, &t0) ||
		    cur_max(&c, UINT64_MAX, &t1) || cur_strref(&c, &name) ||
		    cur_max(&c, UINT8_MAX, &cat))
			return -1;
		break;
	case RTPROF_REC_TYPED:
		if (arr < 5 || arr - 5 > RTPROF_REC_MAX_VALS ||
		    cur_max(&c, 3, &phase) || cur_max(&c, UINT64_MAX, &t0) ||
		    cur_max(&c, UINT64_MAX, &t1) ||
		    cur_max(&c, UINT16_MAX, &id))
			return -1;
		r->nvals = arr - 5;
		for (unsigned i = 0; i < r->nvals; i++)
			if (cur_val(&c, &r->vals[i]) != 0)
				return -1;
		if (phase != 1)
			t1 = t0;
		break;
	case RTPROF_REC_COUNTER:
		if (arr != 4 || cur_max(&c, UINT64_MAX, &t0) ||
		    cur_max(&c, UINT16_MAX, &id) || cur_int(&c, &v, &sgn))
			return -1;
		r->value = (int64_t)v;
		t1 = t0;
		break;
	case RTPROF_REC_SLEEP:
	case RTPROF_REC_WAKE:
		if (arr != 2 || cur_max(&c, UINT64_MAX, &t0))
			return -1;
		t1 = t0;
		break;
	case RTPROF_REC_SAMPLE:
	case RTPROF_REC_SAME:
		if (arr < 5 || (r->kind == RTPROF_REC_SAME && arr != 5) ||
		    arr - 5 > RTPROF_REC_MAX_FRAMES ||
		    cur_max(&c, UINT64_MAX, &t0) || cur_int(&c, &v, &sgn) ||
		    cur_max(&c, UINT64_MAX, &r->cpu_ns) ||
		    cur_max(&c, UINT8_MAX, &id))
			return -1;
		r->tid = (int64_t)v;
		r->flags = (uint8_t)id;
		id = 0;
		t1 = t0;
		if (cur_frames(&c, arr - 5, r) != 0)
			return -1;
		break;
	case RTPROF_REC_BACKTRACE:
		if (arr < 3 || arr - 3 > RTPROF_REC_MAX_FRAMES ||
		    cur_max(&c, UINT64_MAX, &t0) ||
		    cur_max(&c, UINT8_MAX, &id))
			return -1;
		r->flags = (uint8_t)id;
		id = 0;
		t1 = t0;
		if (cur_frames(&c, arr - 3, r) != 0)
			return -1;
		break;
	case RTPROF_REC_KSTACK:
		if (arr < 3 || arr - 3 > RTPROF_REC_MAX_FRAMES ||
		    cur_max(&c, UINT64_MAX, &t0) || cur_int(&c, &v, &sgn))
			return -1;
		r->tid = (int64_t)v;
		t1 = t0;
		if (cur_frames(&c, arr - 3, r) != 0)
			return -1;
		break;
	case RTPROF_REC_OVERHEAD:
		if (arr != 7 || cur_max(&c, UINT64_MAX, &t0) ||
		    cur_max(&c, UINT64_MAX, &t1))
			return -1;
		for (unsigned i = 0; i < 4; i++)
			if (cur_max(&c, UINT64_MAX, &r->overhead[i]))
				return -1;
		break;
	default:        /* kinds 13..18: general_user() */
		if (r->kind < RTPROF_REC_ZONE_BEGIN)
			return -1;
		break;
	}
	r->phase = (uint8_t)phase;
	r->category = (uint8_t)cat;
	r->id = (uint16_t)id;
	r->t0 = t0;
	r->t1 = t1;
	r->name = name;
	r->size = (size_t)(c.p - p);
	return 0;
}

static int
rec_decode(const unsigned char *p, size_t n, struct rtprof_rec_view *r)
{
	int rc = rtprof_rec_next(p, n, r);

	/*
	 * A typed record is [5, phase, t0, t1, type, field...]: five
	 * elements before the fields. Cross-check the walker's field count
	 * against the array header and let the general reader decide when
	 * they disagree, so a walker off by one cannot desynchronise the
	 * rest of the frame.
	 */
	if (rc == 1 && r->kind == RTPROF_REC_TYPED &&
	    (unsigned)(p[0] & 0x0f) != 5 + r->nvals)
		rc = -EBADMSG;
	if (rc == 1)
		return 0;
	return rec_general(p, n, r);
}

/* ------------------------------------------------------------------ */
/* msgpack-c objects.                                                 */

/* Unpack the first object of @p[0..@n); NULL or why it failed. */
static const char *
unpack_one(struct reader *r, const unsigned char *p, size_t n,
    msgpack_object *o, size_t *used)
{
	size_t len = 0, off = 0;
	const char *why = mp_check(p, n, &len);

	if (why != NULL)
		return why;
	if (msgpack_unpack_next(&r->up, (const char *)p, len, &off) !=
	    MSGPACK_UNPACK_SUCCESS || off != len)
		return "msgpack-c refused the payload (nested too deep?)";
	*o = r->up.data;
	if (used != NULL)
		*used = len;
	return NULL;
}

static bool
key_is(const msgpack_object *k, const char *name)
{
	size_t n = strlen(name);

	return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
	    memcmp(k->via.str.ptr, name, n) == 0;
}

/* Integers of any width and sign, as 64 bits (two's complement). */
static uint64_t
obj_u64(struct dec *d, const msgpack_object *o)
{
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		return o->via.u64;
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		return (uint64_t)o->via.i64;
	dec_fail(d, "integer expected");
	return 0;
}

static int64_t
obj_i64(struct dec *d, const msgpack_object *o)
{
	return (int64_t)obj_u64(d, o);
}

/* An integer in [0, @max]. */
static uint64_t
obj_max(struct dec *d, const msgpack_object *o, uint64_t max)
{
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= max)
		return o->via.u64;
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ||
	    o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		dec_fail(d, "integer out of range");
	else
		dec_fail(d, "integer expected");
	return 0;
}

static double
obj_f64(struct dec *d, const msgpack_object *o)
{
	switch (o->type) {
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return o->via.f64;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		return (double)o->via.u64;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return (double)o->via.i64;
	default:
		dec_fail(d, "number expected");
		return 0;
	}
}

static bool
obj_bool(struct dec *d, const msgpack_object *o)
{
	if (o->type == MSGPACK_OBJECT_BOOLEAN)
		return o->via.boolean;
	return obj_u64(d, o) != 0;
}

/* A NUL-terminated copy of a str; "" (and a failure) for other types. */
static const char *
obj_str(struct dec *d, const msgpack_object *o, size_t *len)
{
	char *s;

	if (len != NULL)
		*len = 0;
	if (o->type != MSGPACK_OBJECT_STR) {
		dec_fail(d, "string expected");
		return "";
	}
	s = dec_alloc(d, (size_t)o->via.str.size + 1);
	if (s == NULL)
		return "";
	if (o->via.str.size != 0)
		memcpy(s, o->via.str.ptr, o->via.str.size);
	s[o->via.str.size] = '\0';
	if (len != NULL)
		*len = o->via.str.size;
	return s;
}

static const char *
obj_str_or_nil(struct dec *d, const msgpack_object *o)
{
	if (o->type == MSGPACK_OBJECT_NIL)
		return NULL;
	return obj_str(d, o, NULL);
}

/*
 * The elements of an array of at least @min and at most @max elements in
 * *@a (NULL when empty). Return: false (and a failure) for anything else.
 */
static bool
obj_array(struct dec *d, const msgpack_object *o, uint32_t min, uint32_t max,
    const msgpack_object **a, uint32_t *n)
{
	*a = NULL;
	*n = 0;
	if (o->type != MSGPACK_OBJECT_ARRAY) {
		dec_fail(d, "array expected");
		return false;
	}
	if (o->via.array.size < min) {
		dec_fail(d, "array too short");
		return false;
	}
	if (o->via.array.size > max) {
		dec_fail(d, "array longer than the reader's cap");
		return false;
	}
	*n = o->via.array.size;
	*a = *n ? o->via.array.ptr : NULL;
	return true;
}

/* The pairs of a map in *@kv (NULL when empty). Return: false if no map. */
static bool
obj_map(struct dec *d, const msgpack_object *o, const msgpack_object_kv **kv,
    uint32_t *n)
{
	*kv = NULL;
	*n = 0;
	if (o->type != MSGPACK_OBJECT_MAP) {
		dec_fail(d, "map expected");
		return false;
	}
	*n = o->via.map.size;
	*kv = *n ? o->via.map.ptr : NULL;
	return true;
}

/* ------------------------------------------------------------------ */
/* Frame payloads.                                                    */

static const char *const empty_list[1] = { NULL };

static void
dec_machine(struct dec *d, const msgpack_object *o, struct rtprof_dump_header *h)
{
	const msgpack_object_kv *kv;
	uint32_t n;

	obj_map(d, o, &kv, &n);

	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (key_is(k, "sysname"))
			h->machine.sysname = obj_str(d, v, NULL);
		else if (key_is(k, "release"))
			h->machine.release = obj_str(d, v, NULL);
		else if (key_is(k, "machine"))
			h->machine.machine = obj_str(d, v, NULL);
		else if (key_is(k, "hostname"))
			h->machine.hostname = obj_str(d, v, NULL);
		else if (key_is(k, "cpus"))
			h->machine.cpus = obj_i64(d, v);
		else if (key_is(k, "boot_id"))
			h->machine.boot_id = obj_str(d, v, NULL);
	}
}

static void
dec_clock(struct dec *d, const msgpack_object *o, struct rtprof_dump_header *h)
{
	const msgpack_object_kv *kv;
	uint32_t n;

	obj_map(d, o, &kv, &n);

	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (key_is(k, "source"))
			h->clock.source = obj_str(d, v, NULL);
		else if (key_is(k, "ticks_per_second"))
			h->clock.ticks_per_second = obj_f64(d, v);
		else if (key_is(k, "start_ticks"))
			h->clock.start_ticks = obj_u64(d, v);
		else if (key_is(k, "start_mono_ns"))
			h->clock.start_mono_ns = obj_i64(d, v);
		else if (key_is(k, "start_wall_ns"))
			h->clock.start_wall_ns = obj_i64(d, v);
	}
}

static void
dec_settings(struct dec *d, const msgpack_object *o,
    struct rtprof_dump_header *h)
{
	const msgpack_object_kv *kv;
	uint32_t n;

	obj_map(d, o, &kv, &n);

	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (key_is(k, "mode"))
			h->settings.mode = obj_str(d, v, NULL);
		else if (key_is(k, "memory_limit"))
			h->settings.memory_limit = obj_u64(d, v);
		else if (key_is(k, "chunk_size"))
			h->settings.chunk_size = obj_u64(d, v);
		else if (key_is(k, "prefill"))
			h->settings.prefill = obj_u64(d, v);
		else if (key_is(k, "max_bytes"))
			h->settings.max_bytes = obj_u64(d, v);
		else if (key_is(k, "flush_interval_us"))
			h->settings.flush_interval_us = obj_u64(d, v);
		else if (key_is(k, "sample_interval_us"))
			h->settings.sample_interval_us = obj_u64(d, v);
	}
}

static void
dec_sampling(struct dec *d, const msgpack_object *o,
    struct rtprof_dump_header *h)
{
	const msgpack_object_kv *kv;
	uint32_t n;

	obj_map(d, o, &kv, &n);
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (key_is(k, "method"))
			h->sampling.method = obj_str(d, v, NULL);
		else if (key_is(k, "why"))
			h->sampling.why = obj_str(d, v, NULL);
		else if (key_is(k, "kernel_stacks"))
			h->sampling.kernel_stacks = v->type ==
			    MSGPACK_OBJECT_BOOLEAN ? v->via.boolean : -1;
	}
}

static void
dec_cmdline(struct dec *d, const msgpack_object *o,
    struct rtprof_dump_header *h)
{
	const msgpack_object *a;
	const char **argv;
	uint32_t n;

	if (!obj_array(d, o, 0, RTPROF_DUMP_MAX_ARGS, &a, &n))
		return;
	argv = dec_alloc(d, ((size_t)n + 1) * sizeof(*argv));
	if (argv == NULL)
		return;
	for (uint32_t i = 0; i < n; i++)
		argv[i] = obj_str(d, &a[i], NULL);
	argv[n] = NULL;
	h->argc = n;
	h->argv = argv;
}

static void
dec_categories(struct dec *d, const msgpack_object *o,
    struct rtprof_dump_header *h)
{
	const msgpack_object *a, *e;
	const char **names, **colors;
	uint32_t n, m;

	if (!obj_array(d, o, 0, RTPROF_DUMP_MAX_CATEGORIES, &a, &n))
		return;
	names = dec_alloc(d, ((size_t)n + 1) * sizeof(*names));
	colors = dec_alloc(d, ((size_t)n + 1) * sizeof(*colors));
	if (names == NULL || colors == NULL)
		return;
	for (uint32_t i = 0; i < n; i++) {
		bool ok = obj_array(d, &a[i], 2, UINT32_MAX, &e, &m);

		names[i] = ok ? obj_str(d, &e[0], NULL) : "";
		colors[i] = ok ? obj_str(d, &e[1], NULL) : "";
	}
	names[n] = colors[n] = NULL;
	h->ncategories = n;
	h->category_names = names;
	h->category_colors = colors;
}

static int
frame_header(struct dec *d, const msgpack_object *o)
{
	struct rtprof_dump_header h;
	const struct rtprof_dump_cb *cb = d->r->cb;
	const msgpack_object_kv *kv;
	uint32_t n;

	obj_map(d, o, &kv, &n);
	memset(&h, 0, sizeof(h));
	h.process = h.exe = "";
	h.argv = empty_list;
	h.machine.sysname = h.machine.release = h.machine.machine = "";
	h.machine.hostname = h.machine.boot_id = "";
	h.clock.source = "";
	h.settings.mode = "";
	h.sampling.method = h.sampling.why = "";
	h.sampling.kernel_stacks = -1;
	h.category_names = h.category_colors = empty_list;
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (key_is(k, "format"))
			h.format = obj_i64(d, v);
		else if (key_is(k, "session"))
			h.session = (uint32_t)obj_max(d, v, UINT32_MAX);
		else if (key_is(k, "generation"))
			h.generation = obj_u64(d, v);
		else if (key_is(k, "pid"))
			h.pid = obj_i64(d, v);
		else if (key_is(k, "ppid"))
			h.ppid = obj_i64(d, v);
		else if (key_is(k, "process"))
			h.process = obj_str(d, v, NULL);
		else if (key_is(k, "exe"))
			h.exe = obj_str(d, v, NULL);
		else if (key_is(k, "cmdline"))
			dec_cmdline(d, v, &h);
		else if (key_is(k, "machine"))
			dec_machine(d, v, &h);
		else if (key_is(k, "clock"))
			dec_clock(d, v, &h);
		else if (key_is(k, "settings"))
			dec_settings(d, v, &h);
		else if (key_is(k, "sampling"))
			dec_sampling(d, v, &h);
		else if (key_is(k, "categories"))
			dec_categories(d, v, &h);
	}
	if (d->bad || d->err || cb->on_header == NULL)
		return 0;
	return cb->on_header(cb->ctx, &h);
}

/* An array of modules, [[path, start, end, offset, build_id], ...], into
 * *@out (decoder arena) and *@n. */
static void
dec_modules(struct dec *d, const msgpack_object *o,
    struct rtprof_dump_module **out, uint32_t *n)
{
	const msgpack_object *a, *e;
	struct rtprof_dump_module *m;
	uint32_t k;

	*out = NULL;
	*n = 0;
	if (!obj_array(d, o, 0, RTPROF_DUMP_MAX_MODULES, &a, n))
		return;
	m = dec_alloc(d, ((size_t)*n + 1) * sizeof(*m));
	if (m == NULL) {
		*n = 0;
		return;
	}
	for (uint32_t i = 0; i < *n; i++) {
		bool ok = obj_array(d, &a[i], 5, UINT32_MAX, &e, &k);

		memset(&m[i], 0, sizeof(m[i]));
		m[i].path = "";
		if (!ok)
			continue;
		m[i].path = obj_str(d, &e[0], NULL);
		m[i].start = obj_u64(d, &e[1]);
		m[i].end = obj_u64(d, &e[2]);
		m[i].offset = obj_u64(d, &e[3]);
		if (e[4].type == MSGPACK_OBJECT_BIN) {
			m[i].build_id_len = e[4].via.bin.size;
			if (m[i].build_id_len != 0)
				m[i].build_id =
				    (const unsigned char *)e[4].via.bin.ptr;
		} else if (e[4].type != MSGPACK_OBJECT_NIL) {
			dec_fail(d, "bin expected (build id)");
		}
	}
	*out = m;
}

static int
frame_modules(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	struct rtprof_dump_module *m;
	uint32_t n;

	dec_modules(d, o, &m, &n);
	if (d->bad || d->err || cb->on_modules == NULL)
		return 0;
	return cb->on_modules(cb->ctx, m, n);
}

/* MODULES_CHANGED: {ticks, added: [module], removed: [module]}. */
static int
frame_modules_changed(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	struct rtprof_dump_module_change c;
	struct rtprof_dump_module *m;
	const msgpack_object_kv *kv;
	bool has_ticks = false;
	uint32_t n, k;
	bool is_map = obj_map(d, o, &kv, &n);

	memset(&c, 0, sizeof(c));
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *key = &kv[i].key, *v = &kv[i].val;

		if (key_is(key, "ticks")) {
			c.ticks = obj_u64(d, v);
			has_ticks = true;
		} else if (key_is(key, "added")) {
			dec_modules(d, v, &m, &k);
			c.added = m;
			c.nadded = k;
		} else if (key_is(key, "removed")) {
			dec_modules(d, v, &m, &k);
			c.removed = m;
			c.nremoved = k;
		}
	}
	if (is_map && !has_ticks)
		dec_fail(d, "MODULES_CHANGED without ticks");
	if (d->bad || d->err || cb->on_module_change == NULL)
		return 0;
	return cb->on_module_change(cb->ctx, &c);
}

/* IMAGE: [address, bytes]. */
static int
frame_image(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	const msgpack_object *e;
	uint32_t n;
	uint64_t addr;

	if (!obj_array(d, o, 2, 2, &e, &n))
		return 0;
	addr = obj_u64(d, &e[0]);
	if (e[1].type != MSGPACK_OBJECT_BIN)
		dec_fail(d, "bin expected (image)");
	if (d->bad || d->err || cb->on_image == NULL)
		return 0;
	return cb->on_image(cb->ctx, addr, e[1].via.bin.ptr, e[1].via.bin.size);
}

static int
frame_thread(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	struct rtprof_dump_thread t;
	bool has_tid = false;
	const msgpack_object_kv *kv;
	uint32_t n;
	bool is_map = obj_map(d, o, &kv, &n);

	memset(&t, 0, sizeof(t));
	t.name = "";
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (key_is(k, "tid")) {
			t.tid = obj_i64(d, v);
			has_tid = true;
		} else if (key_is(k, "name")) {
			t.name = obj_str(d, v, NULL);
		} else if (key_is(k, "flags")) {
			t.flags = obj_u64(d, v);
		} else if (key_is(k, "register_ticks")) {
			t.register_ticks = obj_u64(d, v);
		} else if (key_is(k, "unregister_ticks")) {
			t.has_unregister = v->type != MSGPACK_OBJECT_NIL;
			if (t.has_unregister)
				t.unregister_ticks = obj_u64(d, v);
		} else if (key_is(k, "totals")) {
			const msgpack_object *e;
			uint32_t m;

			t.has_totals = obj_array(d, v, 4, UINT32_MAX, &e, &m);
			if (t.has_totals) {
				t.totals.recorded = obj_u64(d, &e[0]);
				t.totals.dropped_full = obj_u64(d, &e[1]);
				t.totals.dropped_nested = obj_u64(d, &e[2]);
				t.totals.recycled = obj_u64(d, &e[3]);
			}
		}
	}
	if (is_map && !has_tid)
		dec_fail(d, "THREAD without tid");
	t.totals.tid = t.tid;
	if (d->bad || d->err || cb->on_thread == NULL)
		return 0;
	return cb->on_thread(cb->ctx, &t);
}

static void
dec_fields(struct dec *d, const msgpack_object *o,
    struct rtprof_dump_schema *s)
{
	const msgpack_object *a, *e;
	struct rtprof_dump_field *f;
	uint32_t n, k;

	if (!obj_array(d, o, 0, RTPROF_DUMP_MAX_FIELDS, &a, &n))
		return;
	f = dec_alloc(d, ((size_t)n + 1) * sizeof(*f));
	if (f == NULL)
		return;
	for (uint32_t i = 0; i < n; i++) {
		bool ok = obj_array(d, &a[i], 4, UINT32_MAX, &e, &k);

		f[i].key = f[i].label = f[i].format = "";
		f[i].kind = 0;
		if (!ok)
			continue;
		f[i].key = obj_str(d, &e[0], NULL);
		f[i].label = obj_str(d, &e[1], NULL);
		f[i].format = obj_str(d, &e[2], NULL);
		f[i].kind = (uint32_t)obj_max(d, &e[3], UINT32_MAX);
	}
	s->nfields = n;
	s->fields = f;
}

static int
frame_schema(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	struct rtprof_dump_schema s;
	bool has_id = false;
	const msgpack_object_kv *kv;
	uint32_t n;
	bool is_map = obj_map(d, o, &kv, &n);

	memset(&s, 0, sizeof(s));
	s.name = "";
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (key_is(k, "id")) {
			s.id = (uint32_t)obj_max(d, v, UINT32_MAX);
			has_id = true;
		} else if (key_is(k, "name")) {
			s.name = obj_str(d, v, NULL);
		} else if (key_is(k, "category")) {
			s.category = (uint32_t)obj_max(d, v, UINT32_MAX);
		} else if (key_is(k, "display")) {
			s.display = obj_u64(d, v);
		} else if (key_is(k, "tooltip")) {
			s.tooltip = obj_str_or_nil(d, v);
		} else if (key_is(k, "table")) {
			s.table = obj_str_or_nil(d, v);
		} else if (key_is(k, "chart")) {
			s.chart = obj_str_or_nil(d, v);
		} else if (key_is(k, "fields")) {
			dec_fields(d, v, &s);
		}
	}
	if (is_map && !has_id)
		dec_fail(d, "SCHEMA without id");
	if (d->bad || d->err || cb->on_schema == NULL)
		return 0;
	return cb->on_schema(cb->ctx, &s);
}

static int
frame_counter(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	struct rtprof_dump_counter c;
	bool has_id = false;
	const msgpack_object_kv *kv;
	uint32_t n;
	bool is_map = obj_map(d, o, &kv, &n);

	memset(&c, 0, sizeof(c));
	c.name = c.category = c.description = c.unit = "";
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (key_is(k, "id")) {
			c.id = (uint32_t)obj_max(d, v, UINT32_MAX);
			has_id = true;
		} else if (key_is(k, "name")) {
			c.name = obj_str(d, v, NULL);
		} else if (key_is(k, "category")) {
			c.category = obj_str(d, v, NULL);
		} else if (key_is(k, "description")) {
			c.description = obj_str(d, v, NULL);
		} else if (key_is(k, "kind")) {
			c.kind = (uint32_t)obj_max(d, v, UINT32_MAX);
		} else if (key_is(k, "unit")) {
			c.unit = obj_str(d, v, NULL);
		}
	}
	if (is_map && !has_id)
		dec_fail(d, "COUNTER without id");
	if (d->bad || d->err || cb->on_counter == NULL)
		return 0;
	return cb->on_counter(cb->ctx, &c);
}

static int
frame_string(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	const msgpack_object *a;
	uint64_t ref;
	const char *text;
	size_t len;
	uint32_t n;

	if (!obj_array(d, o, 2, UINT32_MAX, &a, &n))
		return 0;
	ref = obj_u64(d, &a[0]);
	text = obj_str(d, &a[1], &len);
	if (d->bad || d->err || cb->on_string == NULL)
		return 0;
	return cb->on_string(cb->ctx, ref, text, len);
}

static int
frame_pause(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	const msgpack_object *a;
	uint64_t t0, t1;
	uint32_t n;

	if (!obj_array(d, o, 2, UINT32_MAX, &a, &n))
		return 0;
	t0 = obj_u64(d, &a[0]);
	t1 = obj_u64(d, &a[1]);
	if (d->bad || cb->on_pause == NULL)
		return 0;
	return cb->on_pause(cb->ctx, t0, t1);
}

static int
frame_values(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	const msgpack_object *a, *pairs, *e;
	uint32_t n, m, k;
	uint64_t ticks;
	uint32_t *ids;
	int64_t *vals;

	if (!obj_array(d, o, 2, UINT32_MAX, &a, &n))
		return 0;
	ticks = obj_u64(d, &a[0]);
	if (!obj_array(d, &a[1], 0, RTPROF_DUMP_MAX_VALUES, &pairs, &m))
		return 0;
	ids = dec_alloc(d, ((size_t)m + 1) * sizeof(*ids));
	vals = dec_alloc(d, ((size_t)m + 1) * sizeof(*vals));
	if (ids == NULL || vals == NULL)
		return 0;
	for (uint32_t i = 0; i < m; i++) {
		bool ok = obj_array(d, &pairs[i], 2, UINT32_MAX, &e, &k);

		ids[i] = 0;
		vals[i] = 0;
		if (!ok)
			continue;
		ids[i] = (uint32_t)obj_max(d, &e[0], UINT32_MAX);
		vals[i] = obj_i64(d, &e[1]);
	}
	if (d->bad || d->err || cb->on_values == NULL)
		return 0;
	return cb->on_values(cb->ctx, ticks, m, ids, vals);
}

static int
frame_event(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	struct rtprof_dump_event e;
	bool has_what = false;
	const msgpack_object_kv *kv;
	uint32_t n;
	bool is_map = obj_map(d, o, &kv, &n);

	memset(&e, 0, sizeof(e));
	e.what = "";
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (key_is(k, "ticks")) {
			e.ticks = obj_u64(d, v);
		} else if (key_is(k, "what")) {
			e.what = obj_str(d, v, NULL);
			has_what = true;
		} else if (key_is(k, "errno")) {
			e.errnum = obj_i64(d, v);
			e.has_errno = true;
		} else if (key_is(k, "message")) {
			e.message = obj_str(d, v, NULL);
		} else if (key_is(k, "max_bytes")) {
			e.max_bytes = obj_u64(d, v);
			e.has_max_bytes = true;
		}
	}
	if (is_map && !has_what)
		dec_fail(d, "EVENT without what");
	if (d->bad || d->err || cb->on_event == NULL)
		return 0;
	return cb->on_event(cb->ctx, &e);
}

static void
dec_trailer_threads(struct dec *d, const msgpack_object *o,
    struct rtprof_dump_trailer *t)
{
	struct rtprof_dump_trailer_thread *th;
	const msgpack_object *a, *e;
	uint32_t n, k;

	if (!obj_array(d, o, 0, RTPROF_DUMP_MAX_THREADS, &a, &n))
		return;
	th = dec_alloc(d, ((size_t)n + 1) * sizeof(*th));
	if (th == NULL)
		return;
	for (uint32_t i = 0; i < n; i++) {
		bool ok = obj_array(d, &a[i], 5, UINT32_MAX, &e, &k);

		memset(&th[i], 0, sizeof(th[i]));
		if (!ok)
			continue;
		th[i].tid = obj_i64(d, &e[0]);
		th[i].recorded = obj_u64(d, &e[1]);
		th[i].dropped_full = obj_u64(d, &e[2]);
		th[i].dropped_nested = obj_u64(d, &e[3]);
		th[i].recycled = obj_u64(d, &e[4]);
	}
	t->nthreads = n;
	t->threads = th;
}

static int
frame_trailer(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	struct rtprof_dump_trailer t;
	const msgpack_object_kv *kv;
	uint32_t n;

	obj_map(d, o, &kv, &n);
	memset(&t, 0, sizeof(t));
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (key_is(k, "stop_ticks"))
			t.stop_ticks = obj_u64(d, v);
		else if (key_is(k, "stop_mono_ns"))
			t.stop_mono_ns = obj_i64(d, v);
		else if (key_is(k, "stop_wall_ns"))
			t.stop_wall_ns = obj_i64(d, v);
		else if (key_is(k, "frames"))
			t.frames = obj_u64(d, v);
		else if (key_is(k, "bytes"))
			t.bytes = obj_u64(d, v);
		else if (key_is(k, "chunks_lost"))
			t.chunks_lost = obj_u64(d, v);
		else if (key_is(k, "limit_reached"))
			t.limit_reached = obj_bool(d, v);
		else if (key_is(k, "threads"))
			dec_trailer_threads(d, v, &t);
		else if (key_is(k, "threads_omitted"))
			t.threads_omitted = obj_u64(d, v);
	}
	if (d->bad || d->err || cb->on_trailer == NULL)
		return 0;
	return cb->on_trailer(cb->ctx, &t);
}

/* A DATA frame: the 10-integer header with msgpack-c, records walked. */
static int
frame_data(struct reader *r, const struct rtprof_frame *f,
    const struct sess_slot *s)
{
	const struct rtprof_dump_cb *cb = r->cb;
	const unsigned char *p = f->payload;
	const size_t n = f->hdr.len;
	const uint64_t base = f->offset + RTPROF_FRAME_HEADER_SIZE;
	struct dec d = { .r = r };
	struct rtprof_dump_data dh = { 0 };
	struct rtprof_rec_view rec;
	msgpack_object o;
	const msgpack_object *a;
	const char *first = NULL;
	uint64_t done = 0, lost = 0, first_off = 0;
	size_t pos = 0;
	uint32_t k;
	int rc;

	rec.frames = r->frames;
	rec.label_mask = r->label_mask;
	d.bad = unpack_one(r, p, n, &o, &pos);
	if (d.bad == NULL && obj_array(&d, &o, 10, UINT32_MAX, &a, &k)) {
		dh.tid = obj_i64(&d, &a[0]);
		dh.generation = obj_u64(&d, &a[1]);
		dh.chunk_seq = obj_u64(&d, &a[2]);
		dh.byte_offset = obj_u64(&d, &a[3]);
		dh.record_index = obj_u64(&d, &a[4]);
		dh.nrec = obj_u64(&d, &a[5]);
		dh.first_ticks = obj_u64(&d, &a[6]);
		dh.last_ticks = obj_u64(&d, &a[7]);
		dh.dropped_full = obj_u64(&d, &a[8]);
		dh.dropped_nested = obj_u64(&d, &a[9]);
	}
	msgpack_unpacked_destroy(&r->up);
	if (d.bad != NULL) {
		r->st->bad_payloads++;
		return report(r, RTPROF_DAMAGE_BAD_PAYLOAD, f->offset,
		    RTPROF_FRAME_OVERHEAD + (uint64_t)n, f->hdr.kind, s,
		    d.bad);
	}
	if (cb->on_data != NULL && (rc = cb->on_data(cb->ctx, &dh)) != 0)
		return rc;

	/* Each pass consumes bytes or ends the loop, whatever nrec says. */
	while (done + lost < dh.nrec) {
		size_t sz;

		if (pos == n) {
			if (first == NULL) {
				first = "fewer records than the data header's nrec";
				first_off = base + pos;
			}
			lost += dh.nrec - done - lost;
			break;
		}
		if (rec_decode(p + pos, n - pos, &rec) == 0) {
			pos += rec.size;
			done++;
			r->st->records++;
			if (cb->on_record != NULL &&
			    (rc = cb->on_record(cb->ctx, &dh, &rec)) != 0)
				return rc;
			continue;
		}
		if (first == NULL)
			first_off = base + pos;
		lost++;
		if (mp_check(p + pos, n - pos, &sz) == NULL) {
			if (first == NULL)
				first = "malformed record skipped";
			pos += sz;
		} else {
			if (first == NULL)
				first = "malformed msgpack in records: rest of the frame lost";
			lost += dh.nrec - done - lost;
			pos = n;
			break;
		}
	}
	if (pos < n && first == NULL) {
		first = "bytes after the data header's nrec records";
		first_off = base + pos;
	}
	if (first == NULL)
		return 0;
	r->st->bad_records = sat_add(r->st->bad_records, lost);
	return report(r, RTPROF_DAMAGE_BAD_RECORD, first_off,
	    base + n - first_off, lost, s, first);
}

/* CATEGORY: {id, name, color}; id and name required. */
static int
frame_category(struct dec *d, const msgpack_object *o)
{
	const struct rtprof_dump_cb *cb = d->r->cb;
	struct rtprof_dump_category c;
	bool has_id = false;
	const msgpack_object_kv *kv;
	uint32_t n;
	bool is_map = obj_map(d, o, &kv, &n);

	memset(&c, 0, sizeof(c));
	c.name = NULL;
	c.color = "";
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;

		if (key_is(k, "id")) {
			c.id = (uint32_t)obj_max(d, v,
			    RTPROF_WIRE_MAX_CATEGORIES - 1);
			has_id = true;
		} else if (key_is(k, "name")) {
			c.name = obj_str(d, v, NULL);
		} else if (key_is(k, "color")) {
			c.color = obj_str(d, v, NULL);
		}
	}
	if (is_map && (!has_id || c.name == NULL))
		dec_fail(d, "CATEGORY without id or name");
	if (d->bad || d->err || cb->on_category == NULL)
		return 0;
	return cb->on_category(cb->ctx, &c);
}

/* Any frame but DATA: one msgpack object, decoded by kind. */
static int
frame_object(struct reader *r, const struct rtprof_frame *f,
    const struct sess_slot *s)
{
	struct dec d = { .r = r };
	msgpack_object o;
	size_t used = 0;
	int rc = 0;

	d.bad = unpack_one(r, f->payload, f->hdr.len, &o, &used);
	/* The payload is exactly one object (docs/wire-format.md): bytes
	 * after it mean the writer and reader disagree on its shape, e.g. a
	 * map whose count is short. Extensions add map keys instead. */
	if (d.bad == NULL && used != f->hdr.len)
		d.bad = "bytes after the payload object";
	if (d.bad == NULL) {
		switch (f->hdr.kind) {
		case RTPROF_FRAME_HEADER: rc = frame_header(&d, &o); break;
		case RTPROF_FRAME_MODULES: rc = frame_modules(&d, &o); break;
		case RTPROF_FRAME_THREAD: rc = frame_thread(&d, &o); break;
		case RTPROF_FRAME_SCHEMA: rc = frame_schema(&d, &o); break;
		case RTPROF_FRAME_COUNTER: rc = frame_counter(&d, &o); break;
		case RTPROF_FRAME_STRING: rc = frame_string(&d, &o); break;
		case RTPROF_FRAME_PAUSE: rc = frame_pause(&d, &o); break;
		case RTPROF_FRAME_VALUES: rc = frame_values(&d, &o); break;
		case RTPROF_FRAME_EVENT: rc = frame_event(&d, &o); break;
		case RTPROF_FRAME_TRAILER: rc = frame_trailer(&d, &o); break;
		case RTPROF_FRAME_MODULES_CHANGED:
			rc = frame_modules_changed(&d, &o);
			break;
		case RTPROF_FRAME_IMAGE: rc = frame_image(&d, &o); break;
		case RTPROF_FRAME_CATEGORY: rc = frame_category(&d, &o); break;
		default: break;
		}
	}
	msgpack_unpacked_destroy(&r->up);
	arena_reset(&r->ar);
	if (rc != 0)
		return rc;
	if (d.err != 0)
		return d.err;
	if (d.bad == NULL)
		return 0;
	r->st->bad_payloads++;
	return report(r, RTPROF_DAMAGE_BAD_PAYLOAD, f->offset,
	    RTPROF_FRAME_OVERHEAD + (uint64_t)f->hdr.len, f->hdr.kind, s,
	    d.bad);
}

/* ------------------------------------------------------------------ */
/* Frames, sessions, sequence numbers.                                */

static struct sess_slot *
sess_find(struct reader *r, uint32_t id)
{
	for (int i = 0; i < SESSION_SLOTS; i++)
		if (r->sess[i].index != 0 && r->sess[i].id == id)
			return &r->sess[i];
	return NULL;
}

static struct sess_slot *
sess_new(struct reader *r, uint32_t id)
{
	struct sess_slot *s = sess_find(r, id);

	if (s == NULL) {
		s = &r->sess[0];
		for (int i = 1; i < SESSION_SLOTS; i++)
			if (r->sess[i].stamp < s->stamp)
				s = &r->sess[i];
	}
	s->id = id;
	s->index = ++r->st->sessions;
	s->next_seq = 0;
	return s;
}

static int
handle_frame(struct reader *r, const struct rtprof_frame *f)
{
	const struct rtprof_frame_hdr *h = &f->hdr;
	const uint64_t size = RTPROF_FRAME_OVERHEAD + (uint64_t)h->len;
	struct rtprof_dump_frame df;
	struct sess_slot *s;
	int rc;

	r->st->frames++;
	r->st->bad_frames = r->sc.bad_frames;
	if (f->offset > r->expect_off) {
		uint64_t skipped = f->offset - r->expect_off;
		uint64_t bad = r->sc.bad_frames - r->bad_seen;

		r->bad_seen = r->sc.bad_frames;
		r->st->skipped_bytes += skipped;
		r->st->resyncs++;
		rc = report(r, RTPROF_DAMAGE_SKIPPED, r->expect_off, skipped,
		    bad, NULL, bad ? "damaged frames skipped (payload CRC mismatch)" :
		    "bytes skipped (no valid frame header)");
		if (rc != 0)
			return rc;
	}
	r->expect_off = f->offset + size;

	if (h->version > RTPROF_WIRE_VERSION) {
		if (r->st->newer_version_frames++ == 0)
			r->st->newer_version_offset = f->offset;
		if (h->version > r->st->newer_version)
			r->st->newer_version = h->version;
		if (!r->any_frame)
			return -EPROTONOSUPPORT;
		if (r->newer_reported && r->newer_session == h->session &&
		    h->kind != RTPROF_FRAME_HEADER)
			return 0;
		r->newer_reported = true;
		r->newer_session = h->session;
		return report(r, RTPROF_DAMAGE_NEWER_VERSION, f->offset, size,
		    h->version, NULL,
		    "frame of a newer format version skipped");
	}
	r->any_frame = true;
	r->newer_reported = false;

	if (h->kind == RTPROF_FRAME_HEADER) {
		s = sess_new(r, h->session);
	} else {
		s = sess_find(r, h->session);
		if (s == NULL)
			s = sess_new(r, h->session);
	}
	s->stamp = ++r->stamp;
	if (h->seq > s->next_seq) {
		uint64_t gap = h->seq - s->next_seq;
		bool headless = s->next_seq == 0 && h->kind != RTPROF_FRAME_HEADER;

		r->st->seq_gaps += gap;
		rc = report(r, RTPROF_DAMAGE_SEQ_GAP, f->offset, 0, gap, s,
		    headless ? "frames missing, the session's HEADER among them" :
		    "frames missing (sequence gap)");
		if (rc != 0)
			return rc;
	} else if (h->seq < s->next_seq) {
		r->st->seq_dups++;
		return report(r, RTPROF_DAMAGE_SEQ_DUP, f->offset, size,
		    h->seq, s, "frame repeated or out of order, skipped");
	}
	s->next_seq = h->seq + 1;

	df.offset = f->offset;
	df.session_index = s->index;
	df.session = h->session;
	df.seq = h->seq;
	df.len = h->len;
	df.kind = h->kind;
	df.version = h->version;
	if (r->cb->on_frame != NULL &&
	    (rc = r->cb->on_frame(r->cb->ctx, &df)) != 0)
		return rc;

	if (h->kind == RTPROF_FRAME_DATA)
		return frame_data(r, f, s);
	if (h->kind >= RTPROF_FRAME_HEADER && h->kind <= RTPROF_FRAME_KIND_MAX)
		return frame_object(r, f, s);
	r->st->unknown_frames++;
	return 0;
}

static int
reader_drain(struct reader *r)
{
	struct rtprof_frame f;
	int rc;

	while (rtprof_scanner_next(&r->sc, &f) == 1)
		if ((rc = handle_frame(r, &f)) != 0)
			return rc;
	return 0;
}

/*
 * At end of stream the scanner may hold a frame whose header is intact but
 * whose bytes were partly lost: it waits for a length that never comes,
 * and intact frames may sit behind it. Drop one byte at a time (the
 * scanner skips to the next sync candidate) until every held byte is
 * either a frame or the tail.
 */
static int
reader_finish(struct reader *r)
{
	uint64_t tail, bad;
	int rc;

	while (rtprof_scanner_pending(&r->sc) > 0) {
		rtprof_scanner_drop(&r->sc);
		if ((rc = reader_drain(r)) != 0)
			return rc;
	}
	r->st->bad_frames = r->sc.bad_frames;
	if (r->sc.offset <= r->expect_off)
		return 0;
	tail = r->sc.offset - r->expect_off;
	bad = r->sc.bad_frames - r->bad_seen;
	if (bad != 0) {
		/* Whole frames whose payload CRC failed: damage, not a tail
		 * cut short (a cut frame may follow them; it is counted in
		 * the same run). */
		r->st->skipped_bytes += tail;
		r->st->resyncs++;
		return report(r, RTPROF_DAMAGE_SKIPPED, r->expect_off, tail,
		    bad, NULL, "damaged frames skipped at the end of the stream");
	}
	r->st->truncated_tail_bytes = tail;
	return report(r, RTPROF_DAMAGE_TRUNCATED, r->expect_off, tail, 0,
	    NULL, "truncated tail: bytes at the end do not form a frame");
}

static int
reader_init(struct reader *r, const struct rtprof_dump_cb *cb,
    struct rtprof_dump_stats *st)
{
	memset(r, 0, sizeof(*r));
	r->cb = cb;
	r->st = st != NULL ? st : &r->own_st;
	memset(r->st, 0, sizeof(*r->st));
	msgpack_unpacked_init(&r->up);
	return rtprof_scanner_init(&r->sc);
}

static void
reader_fini(struct reader *r)
{
	r->st->bad_frames = r->sc.bad_frames;
	msgpack_unpacked_destroy(&r->up);
	arena_free(&r->ar);
	rtprof_scanner_free(&r->sc);
}

int
rtprof_dump_read_fd(int fd, const struct rtprof_dump_cb *cb,
    struct rtprof_dump_stats *st)
{
	struct reader r;
	int rc = reader_init(&r, cb, st);

	while (rc == 0) {
		size_t n = READ_PIECE;
		unsigned char *p = rtprof_scanner_space(&r.sc, &n);
		ssize_t got;

		if (p == NULL) {
			rc = -ENOMEM;
			break;
		}
		got = read(fd, p, n < READ_PIECE ? n : READ_PIECE);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (got == 0) {
			rc = reader_finish(&r);
			break;
		}
		rtprof_scanner_commit(&r.sc, (size_t)got);
		r.st->bytes += (uint64_t)got;
		rc = reader_drain(&r);
	}
	reader_fini(&r);
	return rc;
}

int
rtprof_dump_read_mem(const void *buf, size_t len,
    const struct rtprof_dump_cb *cb, struct rtprof_dump_stats *st)
{
	const unsigned char *src = buf;
	struct reader r;
	size_t done = 0;
	int rc = reader_init(&r, cb, st);

	while (rc == 0 && done < len) {
		size_t want = len - done < READ_PIECE ? len - done : READ_PIECE;
		size_t n = want;
		unsigned char *p = rtprof_scanner_space(&r.sc, &n);

		if (p == NULL) {
			rc = -ENOMEM;
			break;
		}
		memcpy(p, src + done, want);
		done += want;
		rtprof_scanner_commit(&r.sc, want);
		r.st->bytes += want;
		rc = reader_drain(&r);
	}
	if (rc == 0)
		rc = reader_finish(&r);
	reader_fini(&r);
	return rc;
}

const char *
rtprof_dump_frame_kind_name(unsigned kind)
{
	static const char *const names[] = {
		NULL, "HEADER", "MODULES", "THREAD", "SCHEMA", "COUNTER",
		"STRING", "DATA", "PAUSE", "VALUES", "EVENT", "TRAILER",
		"MODULES_CHANGED", "IMAGE", "CATEGORY",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : NULL;
}

const char *
rtprof_dump_rec_kind_name(unsigned kind)
{
	static const char *const names[] = {
		NULL, "instant", "begin", "end", "interval", "typed",
		"counter", "sleep", "wake", "sample", "same", "overhead",
		"backtrace", "zone_begin", "zone_end", "zone_arg", "text",
		"flow", "frame", "kstack",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : NULL;
}

const char *
rtprof_dump_damage_name(enum rtprof_damage_kind kind)
{
	switch (kind) {
	case RTPROF_DAMAGE_SKIPPED: return "skipped";
	case RTPROF_DAMAGE_SEQ_GAP: return "seq-gap";
	case RTPROF_DAMAGE_SEQ_DUP: return "seq-dup";
	case RTPROF_DAMAGE_BAD_PAYLOAD: return "bad-payload";
	case RTPROF_DAMAGE_BAD_RECORD: return "bad-record";
	case RTPROF_DAMAGE_TRUNCATED: return "truncated";
	case RTPROF_DAMAGE_NEWER_VERSION: return "newer-version";
	}
	return "unknown";
}

void
rtprof_dump_counts_add(struct rtprof_dump_trailer_thread *sum,
    const struct rtprof_dump_trailer_thread *c)
{
	sum->tid = c->tid;
	sum->recorded = sat_add(sum->recorded, c->recorded);
	sum->dropped_full = sat_add(sum->dropped_full, c->dropped_full);
	sum->dropped_nested = sat_add(sum->dropped_nested, c->dropped_nested);
	sum->recycled = sat_add(sum->recycled, c->recycled);
}
