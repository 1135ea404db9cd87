/*
 * dump_records.c - DATA frames: their header, then each record.
 *
 * Pipeline (dump_int.h): dump_reader.c hands a DATA frame here; its
 * records are walked with records.c's fixed-width walker, and a record
 * the walker does not take (or takes with a field count its array header
 * contradicts) goes through the general cursor below, which checks every
 * element; each record reaches on_record.
 *
 * Context: any thread; each call owns all of its state.
 */
#include "dump_int.h"

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

/* Kinds 13..18, the program's zones, texts, flows and frames. */
static bool
kind_user(unsigned kind)
{
	return kind >= RTPROF_REC_ZONE_BEGIN && kind <= RTPROF_REC_FRAME;
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
	if (kind_user(r->kind)) {
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
		if (!kind_user(r->kind))
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

/* A DATA frame: the 10-integer header with msgpack-c, records walked. */
int
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
	d.bad = mp_unpack_one(r, p, n, &o, &pos);
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
		return dump_report(r, RTPROF_DAMAGE_BAD_PAYLOAD, f->offset,
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
	return dump_report(r, RTPROF_DAMAGE_BAD_RECORD, first_off,
	    base + n - first_off, lost, s, first);
}
