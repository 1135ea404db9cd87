/*
 * dump_msgpack.c - untrusted msgpack before and after msgpack-c.
 *
 * Pipeline (dump_int.h): used by dump_records.c and dump_frames.c.
 * mp_check() walks a payload once before msgpack-c sees it (msgpack-c
 * allocates count * 24 bytes up front for every array or map it meets);
 * the getters read msgpack-c objects with the types and bounds a field
 * allows, the first problem noted in the frame's struct dec.
 *
 * Context: any thread; each call owns all of its state.
 */
#include "dump_int.h"

/* ------------------------------------------------------------------ */
/* Raw msgpack: the structural check and a cursor for records.        */


/*
 * mp_check - check that @p[0..@n) starts with one complete msgpack object
 * whose every count is backed by bytes, and give its size in *@used.
 * Return: NULL, or a static message saying what is wrong.
 */
const char *
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

/* ------------------------------------------------------------------ */
/* msgpack-c objects.                                                 */

/* Unpack the first object of @p[0..@n); NULL or why it failed. */
const char *
mp_unpack_one(struct reader *r, const unsigned char *p, size_t n,
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

bool
mp_key_is(const msgpack_object *k, const char *name)
{
	size_t n = strlen(name);

	return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
	    memcmp(k->via.str.ptr, name, n) == 0;
}

/* Integers of any width and sign, as 64 bits (two's complement). */
uint64_t
obj_u64(struct dec *d, const msgpack_object *o)
{
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		return o->via.u64;
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		return (uint64_t)o->via.i64;
	dec_fail(d, "integer expected");
	return 0;
}

int64_t
obj_i64(struct dec *d, const msgpack_object *o)
{
	return (int64_t)obj_u64(d, o);
}

/* An integer in [0, @max]. */
uint64_t
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

double
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

bool
obj_bool(struct dec *d, const msgpack_object *o)
{
	if (o->type == MSGPACK_OBJECT_BOOLEAN)
		return o->via.boolean;
	return obj_u64(d, o) != 0;
}

/* A NUL-terminated copy of a str; "" (and a failure) for other types. */
const char *
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

const char *
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
bool
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
bool
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
