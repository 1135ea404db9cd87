/*
 * gecko_stacks.c - reading: sampler records -> raw stack trees.
 *
 * Pipeline (gecko_int.h): gecko_read.c hands SAMPLE, SAME and BACKTRACE
 * records here. Each thread keeps a raw stack tree (frames as recorded,
 * de-duplicated by prefix, parents first) and its samples, spilled
 * compact: time, CPU delta, leaf node. A whole stack seen before costs
 * one hash (struct scache). gecko_frames.c symbolizes the tree and folds
 * it into the Gecko tables when the thread is written.
 *
 * Context: any thread; no shared state (gecko.h per function).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gecko_int.h"
#include "kreason.h"

/* The map's epoch at @t: how many changes came at or before it. */
static uint16_t
epoch_at(const struct gsess *g, uint64_t t)
{
	size_t n = count_le(g->chg, g->nchg, t);

	return n < GRAW_EPOCH_MAX ? (uint16_t)n : GRAW_EPOCH_MAX;
}

/* A time within epoch @e (its first instant), for the symbolizer. */
uint64_t
epoch_time(const struct gsess *g, uint16_t e)
{
	return e == 0 || g->nchg == 0 ? 0 : g->chg[(e <= g->nchg ? e : g->nchg) - 1];
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
	s.cpu_ns = cpu_ns;
	s.stack = (uint32_t)node;
	if (!th->has_first || t < th->first_ticks) {
		th->first_ticks = t;
		th->has_first = true;
	}
	th->nsmp++;
	return spill_put(g, &th->smps, GSMP_REC, &s, GSMP_REC);
}

/*
 * The key of a recorded stack: its head [n | idle << 32 | epoch << 40,
 * mask words], then its frames, read where the record has them (a
 * sample whose stack was seen before copies nothing).
 */
#define SKEY_HEAD (1 + RTPROF_REC_MASK_WORDS)

struct skey {
	uint64_t head[SKEY_HEAD];
	const uint64_t *frames;
	unsigned n;
};

static void
scache_key(const struct rtprof_rec_view *r, unsigned n, bool idle,
    uint16_t epoch, struct skey *k)
{
	k->head[0] = (uint64_t)n | (uint64_t)idle << 32 |
	    (uint64_t)epoch << 40;
	memcpy(k->head + 1, r->label_mask, RTPROF_REC_MASK_WORDS * 8);
	k->frames = r->frames;
	k->n = n;
}

/* Four independent lanes over the frames (no multiply waits for the
 * previous one), the head folded in. */
static uint64_t
scache_hash(const struct skey *k)
{
	uint64_t h[4] = { 0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
	    0x165667b19e3779f9ull, 0x27d4eb2f165667c5ull };
	const uint64_t *f = k->frames;
	size_t i = 0;

	for (; i + 4 <= k->n; i += 4)
		for (int l = 0; l < 4; l++)
			h[l] = (h[l] ^ f[i + l]) * 0xbf58476d1ce4e5b9ull;
	for (; i < k->n; i++)
		h[i & 3] = (h[i & 3] ^ f[i]) * 0xbf58476d1ce4e5b9ull;
	for (i = 0; i < SKEY_HEAD; i++)
		h[i & 3] = (h[i & 3] ^ k->head[i]) * 0xbf58476d1ce4e5b9ull;
	for (int l = 1; l < 4; l++)
		h[0] = (h[0] ^ (h[l] >> 29) ^ h[l]) * 0x94d049bb133111ebull;
	return h[0] ^ h[0] >> 31;
}

/* Return: the leaf node cached for @k, or -1. */
static int64_t
scache_get(const struct scache *c, const struct skey *k, uint64_t h)
{
	if (c->nslot == 0)
		return -1;
	for (size_t i = (size_t)h & (c->nslot - 1); c->e[i].key != NULL;
	    i = (i + 1) & (c->nslot - 1))
		if (c->e[i].hash == h && c->e[i].key[0] == k->head[0] &&
		    memcmp(c->e[i].key, k->head, sizeof(k->head)) == 0 &&
		    memcmp(c->e[i].key + SKEY_HEAD, k->frames,
		    (size_t)k->n * 8) == 0)
			return c->e[i].node;
	return -1;
}

/* @k kept (head and frames in one array) with its leaf @node. */
static int
scache_put(struct scache *c, const struct skey *sk, uint64_t h,
    uint32_t node)
{
	size_t words = SKEY_HEAD + sk->n;
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
	memcpy(k, sk->head, sizeof(sk->head));
	memcpy(k + SKEY_HEAD, sk->frames, (size_t)sk->n * 8);
	for (i = (size_t)h & (c->nslot - 1); c->e[i].key != NULL;
	    i = (i + 1) & (c->nslot - 1))
		;
	c->e[i].hash = h;
	c->e[i].key = k;
	c->e[i].node = node;
	c->n++;
	return 0;
}

void
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
int
stacks_sample(struct gsess *g, const struct rtprof_rec_view *r)
{
	struct gthread *th = thread_get(g, r->tid);
	bool idle = (r->flags & RTPROF_SAMPLE_ASLEEP) != 0, kern;
	unsigned n = r->frames != NULL ? r->nframes : 0, last_native = n;
	struct skey key;
	uint64_t h = 0;
	uint32_t prefix1 = 0;
	int64_t node = -1;
	uint16_t epoch = epoch_at(g, r->t0);

	if (th == NULL)
		return g->err;
	/* The kernel's reason, from the KSTACK just before: the leaf. */
	kern = th->kst_on && th->kst_t == r->t0;
	th->kst_on = false;
	g->nsamples++;
	if (r->flags & RTPROF_SAMPLE_TRUNCATED)
		g->ntruncated++;
	if (r->flags & RTPROF_SAMPLE_NO_NATIVE)
		g->nno_native++;
	if (r->flags & RTPROF_SAMPLE_SIG_BLOCKED) {
		g->nsig_blocked++;
		th->nsig_blocked++;
	}
	if (n != 0 && !kern) {
		unsigned labels = 0;

		/* Once a native frame was seen there is nothing to count. */
		for (unsigned w = 0; !g->has_native &&
		    w < RTPROF_REC_MASK_WORDS; w++)
			labels += (unsigned)__builtin_popcountll(
			    r->label_mask[w]);
		if (!g->has_native && labels < n)
			g->has_native = true;
		scache_key(r, n, idle, epoch, &key);
		h = scache_hash(&key);
		node = scache_get(&th->sc, &key, h);
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
		if (idle && i + 1 == n && !kern)
			kind |= RAW_IDLE;
		node = raw_node(g, th, prefix1, r->frames[i], kind,
		    (kind & RAW_KIND_MASK) == RAW_LABEL ? 0 : epoch);
		if (node < 0)
			return g->err;
		prefix1 = (uint32_t)node + 1;
	}
	if (kern)
		node = raw_node(g, th, prefix1, TEXT_KERNEL + (uint64_t)th->kst_id,
		    (uint8_t)(RAW_TEXT | (idle ? RAW_IDLE : 0)), 0);
	else if (n == 0)
		node = raw_node(g, th, 0, r->flags & RTPROF_SAMPLE_LABELS ?
		    TEXT_NO_LABEL : TEXT_NO_STACK,
		    (uint8_t)(RAW_TEXT | (idle ? RAW_IDLE : 0)), 0);
	if (node < 0)
		return g->err;
	if (n != 0 && !kern &&
	    scache_put(&th->sc, &key, h, (uint32_t)node) != 0)
		return gecko_fail(g, -ENOMEM);
	th->last_stack1 = (uint32_t)node + 1;
	return smp_add(g, th, r->t0, r->cpu_ns, node);
}

/*
 * KSTACK: the kernel's stack where a thread went off CPU, for its SAMPLE
 * of the same time, next in the sampler's stream: named now (one frame,
 * codec/kreason.h), added as that sample's leaf.
 */
int
stacks_kstack(struct gsess *g, const struct rtprof_rec_view *r)
{
	struct gthread *th = thread_get(g, r->tid);
	int id;

	if (th == NULL)
		return g->err;
	id = rtprof_kreason_of(g->boot_id, r->frames, r->frames != NULL ?
	    r->nframes : 0);
	if (id < 0)
		return gecko_fail(g, -ENOMEM);
	th->kst_on = true;
	th->kst_t = r->t0;
	th->kst_id = id;
	return 0;
}

/* SAME: the previous SAMPLE's stack of that thread, in O(1). */
int
stacks_same(struct gsess *g, const struct rtprof_rec_view *r)
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
int
stacks_backtrace(struct gsess *g, struct gthread *th,
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

/* The raw node like the Idle leaf @node but awake, if it exists. */
int64_t
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
	memcpy(&s, rec, GSMP_REC);
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
int
callback_twins(struct gsess *g, struct gthread *th)
{
	struct twin_ctx c = { .g = g, .th = th };

	if (th->ncb == 0 || th->nsmp == 0)
		return 0;
	return spill_get(g, th->smps, twin_record, &c);
}
