/*
 * records.c - bounds-checked walker for the fixed-width record subset.
 *
 * Context: any thread; no shared state.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "records.h"

static uint64_t
be64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return __builtin_bswap64(v);
}

/* Reads one 9-byte integer (tag @tag) at *@p; -1 on mismatch. */
static int
get_tagged64(const unsigned char **p, const unsigned char *e, unsigned char tag,
    uint64_t *v)
{
	if (e - *p < 9 || (*p)[0] != tag)
		return -1;
	*v = be64(*p + 1);
	*p += 9;
	return 0;
}

static int
get_ref(const unsigned char **p, const unsigned char *e, uint64_t *v)
{
	if (e - *p < 10 || (*p)[0] != 0xd7 || (*p)[1] != RTPROF_EXT_STRREF)
		return -1;
	*v = be64(*p + 2);
	*p += 10;
	return 0;
}

static int
get_fixint(const unsigned char **p, const unsigned char *e, uint8_t *v)
{
	if (e - *p < 1 || (*p)[0] > 0x7f)
		return -1;
	*v = (*p)[0];
	*p += 1;
	return 0;
}

static int
get_field(const unsigned char **p, const unsigned char *e, struct rtprof_val *v)
{
	if (e - *p < 1)
		return -1;
	switch ((*p)[0]) {
	case 0xd3:
		v->kind = RTPROF_VAL_I64;
		return get_tagged64(p, e, 0xd3, &v->v.u);
	case 0xcf:
		v->kind = RTPROF_VAL_U64;
		return get_tagged64(p, e, 0xcf, &v->v.u);
	case 0xcb:
		v->kind = RTPROF_VAL_F64;
		if (get_tagged64(p, e, 0xcb, &v->v.u) != 0)
			return -1;
		{
			uint64_t u = v->v.u;
			memcpy(&v->v.d, &u, 8);
		}
		return 0;
	case 0xd7:
		v->kind = RTPROF_VAL_STRREF;
		return get_ref(p, e, &v->v.ref);
	case 0xd9:
		if (e - *p < 2 || e - *p - 2 < (*p)[1])
			return -1;
		v->kind = RTPROF_VAL_STR;
		v->v.str.n = (*p)[1];
		v->v.str.p = (const char *)*p + 2;
		*p += 2 + (*p)[1];
		return 0;
	default:
		return -1;
	}
}

/*
 * @n frames of a SAMPLE or BACKTRACE: a STRREF is a label, a uint64 a
 * native address; stored when the caller gave arrays.
 */
static int
get_frames(const unsigned char **p, const unsigned char *e, unsigned n,
    struct rtprof_rec_view *r)
{
	r->nframes = n;
	if (r->label_mask != NULL)
		memset(r->label_mask, 0, RTPROF_REC_MASK_WORDS * 8);
	for (unsigned i = 0; i < n; i++) {
		uint64_t v;
		bool label = e - *p >= 1 && (*p)[0] == 0xd7;

		if (label ? get_ref(p, e, &v) : get_tagged64(p, e, 0xcf, &v))
			return -1;
		if (r->frames != NULL)
			r->frames[i] = v;
		if (label && r->label_mask != NULL)
			r->label_mask[i / 64] |= 1ull << (i % 64);
	}
	return 0;
}

/* [14, t, zone], [15, zone, what, value]. */
static int
get_zone_rec(const unsigned char **p, const unsigned char *e, unsigned arr,
    struct rtprof_rec_view *r)
{
	if (r->kind == RTPROF_REC_ZONE_END)
		return arr != 3 || get_tagged64(p, e, 0xcf, &r->t0) ||
		    get_tagged64(p, e, 0xcf, &r->zone) ? -1 : 0;
	if (arr != 4 || get_tagged64(p, e, 0xcf, &r->zone) ||
	    get_fixint(p, e, &r->phase) || r->phase == 0 ||
	    r->phase > RTPROF_ZONE_ARG_MAX || get_field(p, e, &r->vals[0]))
		return -1;
	r->t0 = r->zone;
	r->nvals = 1;
	switch (r->vals[0].kind) {
	case RTPROF_VAL_I64:
	case RTPROF_VAL_F64:
		return r->phase == RTPROF_ZONE_ARG_VALUE ? 0 : -1;
	case RTPROF_VAL_STR:
		return r->phase == RTPROF_ZONE_ARG_TEXT ? 0 : -1;
	case RTPROF_VAL_U64:
		return r->phase >= RTPROF_ZONE_ARG_FLOW ? 0 : -1;
	default:
		return -1;
	}
}

/* [16, t0, t1, name, cat, text], [17, t, name, cat, flow, last],
 * [18, t, name, budget_ns]. */
static int
get_named_rec(const unsigned char **p, const unsigned char *e, unsigned arr,
    struct rtprof_rec_view *r)
{
	uint64_t u;

	switch (r->kind) {
	case RTPROF_REC_TEXT:
		if (arr != 6 || get_tagged64(p, e, 0xcf, &r->t0) ||
		    get_tagged64(p, e, 0xcf, &r->t1) || get_ref(p, e, &r->name) ||
		    get_fixint(p, e, &r->category) ||
		    get_field(p, e, &r->vals[0]) ||
		    r->vals[0].kind != RTPROF_VAL_STR)
			return -1;
		r->nvals = 1;
		r->phase = r->t1 != 0;
		if (r->t1 == 0)
			r->t1 = r->t0;
		return 0;
	case RTPROF_REC_FLOW:
		return arr != 6 || get_tagged64(p, e, 0xcf, &r->t0) ||
		    get_ref(p, e, &r->name) || get_fixint(p, e, &r->category) ||
		    get_tagged64(p, e, 0xcf, &r->flow) ||
		    get_fixint(p, e, &r->flags) || r->flags > 1 ? -1 : 0;
	default:    /* RTPROF_REC_FRAME */
		if (arr != 4 || get_tagged64(p, e, 0xcf, &r->t0) ||
		    get_ref(p, e, &r->name) || get_tagged64(p, e, 0xcf, &u))
			return -1;
		r->value = (int64_t)u;
		return 0;
	}
}

int
rtprof_rec_next(const unsigned char *p, size_t n, struct rtprof_rec_view *r)
{
	const unsigned char *s = p, *e = p + n;
	unsigned arr;
	uint64_t id;

	if (n == 0)
		return 0;
	if ((p[0] & 0xf0) == 0x90 && n >= 2) {
		arr = p[0] & 0x0f;
		p += 1;
	} else if (p[0] == 0xdc && n >= 4) {
		/* array16: SAMPLE and BACKTRACE records only (they may have
		 * more than 15 elements). */
		arr = (unsigned)p[1] << 8 | p[2];
		p += 3;
		if (p[0] != RTPROF_REC_SAMPLE && p[0] != RTPROF_REC_BACKTRACE &&
		    p[0] != RTPROF_REC_KSTACK)
			return -EBADMSG;
	} else {
		return -EBADMSG;
	}
	r->kind = p[0];
	r->nvals = 0;
	r->nframes = 0;
	r->flags = 0;
	r->tid = 0;
	r->cpu_ns = 0;
	r->phase = 0;
	r->category = 0;
	r->id = 0;
	r->t1 = 0;
	r->name = 0;
	r->value = 0;
	r->zone = 0;
	r->flow = 0;
	p += 1;
	switch (r->kind) {
	case RTPROF_REC_INSTANT:
	case RTPROF_REC_BEGIN:
	case RTPROF_REC_END:
	case RTPROF_REC_ZONE_BEGIN:
		if (arr != 4 || get_tagged64(&p, e, 0xcf, &r->t0) ||
		    get_ref(&p, e, &r->name) || get_fixint(&p, e, &r->category))
			return -EBADMSG;
		r->t1 = r->t0;
		break;
	case RTPROF_REC_INTERVAL:
		if (arr != 5 || get_tagged64(&p, e, 0xcf, &r->t0) ||
		    get_tagged64(&p, e, 0xcf, &r->t1) ||
		    get_ref(&p, e, &r->name) || get_fixint(&p, e, &r->category))
			return -EBADMSG;
		break;
	case RTPROF_REC_TYPED:
		if (arr < 5 || arr - 5 > RTPROF_REC_MAX_VALS ||
		    get_fixint(&p, e, &r->phase) || r->phase > 3 ||
		    get_tagged64(&p, e, 0xcf, &r->t0) ||
		    get_tagged64(&p, e, 0xcf, &r->t1))
			return -EBADMSG;
		if (e - p < 3 || p[0] != 0xcd)
			return -EBADMSG;
		r->id = (uint16_t)(p[1] << 8 | p[2]);
		p += 3;
		r->nvals = arr - 5;
		for (unsigned i = 0; i < r->nvals; i++)
			if (get_field(&p, e, &r->vals[i]) != 0)
				return -EBADMSG;
		if (r->phase != 1)
			r->t1 = r->t0;
		break;
	case RTPROF_REC_COUNTER:
		if (arr != 4 || get_tagged64(&p, e, 0xcf, &r->t0))
			return -EBADMSG;
		if (e - p < 3 || p[0] != 0xcd)
			return -EBADMSG;
		r->id = (uint16_t)(p[1] << 8 | p[2]);
		p += 3;
		if (get_tagged64(&p, e, 0xd3, &id))
			return -EBADMSG;
		r->value = (int64_t)id;
		r->t1 = r->t0;
		break;
	case RTPROF_REC_SLEEP:
	case RTPROF_REC_WAKE:
		if (arr != 2 || get_tagged64(&p, e, 0xcf, &r->t0))
			return -EBADMSG;
		r->t1 = r->t0;
		break;
	case RTPROF_REC_SAMPLE:
	case RTPROF_REC_SAME:
		if (arr < 5 || (r->kind == RTPROF_REC_SAME && arr != 5) ||
		    arr - 5 > RTPROF_REC_MAX_FRAMES ||
		    get_tagged64(&p, e, 0xcf, &r->t0) ||
		    get_tagged64(&p, e, 0xd3, &id) ||
		    get_tagged64(&p, e, 0xcf, &r->cpu_ns) ||
		    get_fixint(&p, e, &r->flags))
			return -EBADMSG;
		r->tid = (int64_t)id;
		r->t1 = r->t0;
		if (get_frames(&p, e, arr - 5, r) != 0)
			return -EBADMSG;
		break;
	case RTPROF_REC_BACKTRACE:
		if (arr < 3 || arr - 3 > RTPROF_REC_MAX_FRAMES ||
		    get_tagged64(&p, e, 0xcf, &r->t0) ||
		    get_fixint(&p, e, &r->flags))
			return -EBADMSG;
		r->t1 = r->t0;
		if (get_frames(&p, e, arr - 3, r) != 0)
			return -EBADMSG;
		break;
	case RTPROF_REC_KSTACK:
		if (arr < 3 || arr - 3 > RTPROF_REC_MAX_FRAMES ||
		    get_tagged64(&p, e, 0xcf, &r->t0) ||
		    get_tagged64(&p, e, 0xd3, &id))
			return -EBADMSG;
		r->tid = (int64_t)id;
		r->t1 = r->t0;
		if (get_frames(&p, e, arr - 3, r) != 0)
			return -EBADMSG;
		break;
	case RTPROF_REC_OVERHEAD:
		if (arr != 7 || get_tagged64(&p, e, 0xcf, &r->t0) ||
		    get_tagged64(&p, e, 0xcf, &r->t1))
			return -EBADMSG;
		for (unsigned i = 0; i < 4; i++)
			if (get_tagged64(&p, e, 0xcf, &r->overhead[i]))
				return -EBADMSG;
		break;
	case RTPROF_REC_ZONE_END:
	case RTPROF_REC_ZONE_ARG:
		if (get_zone_rec(&p, e, arr, r) != 0)
			return -EBADMSG;
		if (r->kind == RTPROF_REC_ZONE_END)
			r->t1 = r->t0;
		break;
	case RTPROF_REC_TEXT:
	case RTPROF_REC_FLOW:
	case RTPROF_REC_FRAME:
		if (get_named_rec(&p, e, arr, r) != 0)
			return -EBADMSG;
		if (r->kind != RTPROF_REC_TEXT)
			r->t1 = r->t0;
		break;
	default:
		return -EBADMSG;
	}
	r->size = (size_t)(p - s);
	return 1;
}
