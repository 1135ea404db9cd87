/*
 * pprof_read.c - a dump read for the pprof writer (pprof.h): per session,
 * its modules over time, label strings, thread names, and the sampler's
 * samples as a stack tree with one count per (thread, stack).
 *
 * Stacks are built as the Gecko converter builds them (codec/gecko.c,
 * on_sample/on_same), so that both profiles hold the same samples.
 *
 * Context: one converter, one thread at a time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "esc.h"
#include "gecko_maps.h"
#include "kreason.h"
#include "pprof_int.h"

#define CLOCK_RATE_MIN 1e3
#define CLOCK_RATE_MAX 1e12

const char *const rtprof_pprof_texts[PTEXT_N] = {
	"(unknown stack)", "(no label)", "(no stack)",
};

#define PUSH(arr, n, cap, val)                                                 \
	(gecko_grow((void **)&(arr), &(cap), (n) + 1, sizeof(*(arr))) != 0    \
	     ? -ENOMEM : ((arr)[(n)++] = (val), 0))

static bool
rate_ok(double tps)
{
	return tps >= CLOCK_RATE_MIN && tps <= CLOCK_RATE_MAX;
}

double
rtprof_pprof_ms(const struct psess *s, uint64_t t)
{
	double dt = (double)(int64_t)(t - s->start_ticks);
	double ns_per_tick = 1e9 / s->tps;

	if (s->have_trailer && s->stop_ticks > s->start_ticks &&
	    s->stop_mono_ns > s->start_mono_ns) {
		double measured = rtprof_ns_diff(s->stop_mono_ns,
		    s->start_mono_ns) / (double)(s->stop_ticks -
		    s->start_ticks);

		if (rate_ok(1e9 / measured))
			ns_per_tick = measured;
	}
	return dt * ns_per_tick / 1e6;
}

uint64_t
rtprof_pprof_end_ticks(const struct psess *s)
{
	if (s->have_trailer)
		return s->stop_ticks;
	return s->have_t ? s->last_t : s->start_ticks;
}

static int
fail(struct rtprof_pprof_dump *d, int err)
{
	if (d->err == 0)
		d->err = err;
	return d->err;
}

static char *
dup_str(struct rtprof_pprof_dump *d, const char *s)
{
	char *c = strdup(s != NULL ? s : "");

	if (c == NULL)
		fail(d, -ENOMEM);
	return c;
}

/* ------------------------------------------------------------------ */
/* Sessions and their tables                                            */

static void
sess_free(struct psess *s)
{
	free(s->process);
	free(s->host);
	free(s->boot_id);
	free(s->sampling);
	for (size_t i = 0; i < s->nmod; i++)
		free(s->mod[i].path);
	free(s->mod);
	free(s->chg);
	for (size_t i = 0; i < s->nimg; i++)
		free(s->img[i].bytes);
	free(s->img);
	for (size_t i = 0; i < s->nstr; i++)
		free(s->str[i].text);
	free(s->str);
	rtprof_idmap_free(&s->str_idx);
	for (size_t i = 0; i < s->nth; i++)
		free(s->th[i].name);
	free(s->th);
	rtprof_idmap_free(&s->th_idx);
	free(s->node);
	pmap_free(&s->node_idx);
	rtprof_idmap_free(&s->stack_idx);
	free(s->agg);
	pmap_free(&s->agg_idx);
	free(s->timed);
	free(s);
}

/* The thread entry of @tid (created). Return: its index, or -1. */
static int64_t
thread_of(struct psess *s, int64_t tid)
{
	struct pthread t = { .tid = tid };
	int64_t i = rtprof_idmap_get(&s->th_idx, tid);

	if (i >= 0)
		return i;
	if (PUSH(s->th, s->nth, s->thcap, t) != 0)
		return -1;
	if (rtprof_idmap_set(&s->th_idx, tid, s->nth - 1) != 0) {
		s->nth--;
		return -1;
	}
	return (int64_t)s->nth - 1;
}

/* The node (@prefix1, @value, @kind, @epoch), created if new; -1: ENOMEM. */
static int64_t
node_of(struct psess *s, uint32_t prefix1, uint64_t value, uint8_t kind,
    uint16_t epoch)
{
	uint64_t b = (uint64_t)prefix1 << 24 | (uint64_t)epoch << 8 | kind;
	int64_t i = pmap_get(&s->node_idx, value, b);
	struct pnode n = { .value = value, .prefix1 = prefix1,
	    .epoch = epoch, .kind = kind };

	if (i >= 0)
		return i;
	if (PUSH(s->node, s->nnode, s->nodecap, n) != 0)
		return -1;
	if (pmap_put(&s->node_idx, value, b, s->nnode - 1) != 0) {
		s->nnode--;
		return -1;
	}
	return (int64_t)s->nnode - 1;
}

int
rtprof_pprof_agg_add(struct psess *s, uint32_t thread, uint32_t node,
    uint64_t count, uint64_t cpu_ns)
{
	int64_t i = pmap_get(&s->agg_idx, thread, node);
	struct pagg a = { .thread = thread, .node = node };

	if (i < 0) {
		if (PUSH(s->agg, s->nagg, s->aggcap, a) != 0)
			return -ENOMEM;
		i = (int64_t)s->nagg - 1;
		if (pmap_put(&s->agg_idx, thread, node,
		    (size_t)i) != 0) {
			s->nagg--;
			return -ENOMEM;
		}
	}
	s->agg[i].count += count;
	s->agg[i].cpu_ns += cpu_ns;
	return 0;
}

/* The map's epoch at @t: how many changes came at or before it. */
static uint16_t
epoch_at(const struct psess *s, uint64_t t)
{
	size_t n = count_le(s->chg, s->nchg, t);

	return n < PEPOCH_MAX ? (uint16_t)n : PEPOCH_MAX;
}

/* ------------------------------------------------------------------ */
/* Samples                                                              */

static int
sample_add(struct rtprof_pprof_dump *d, struct psess *s, int64_t thread,
    int64_t node, const struct rtprof_rec_view *r)
{
	struct ptimed t = { .t = r->t0, .cpu_ns = r->cpu_ns,
	    .thread = (uint32_t)thread, .node = (uint32_t)node };

	if (thread < 0 || node < 0)
		return fail(d, -ENOMEM);
	s->nsamples++;
	if (d->keep_times) {
		if (PUSH(s->timed, s->ntimed, s->timedcap, t) != 0)
			return fail(d, -ENOMEM);
		return 0;
	}
	if (rtprof_pprof_agg_add(s, t.thread, t.node, 1, r->cpu_ns) != 0)
		return fail(d, -ENOMEM);
	return 0;
}

/* The kind of frame @i of SAMPLE @r whose last native frame is @ln. */
static uint8_t
frame_kind(const struct rtprof_rec_view *r, unsigned i, unsigned ln)
{
	if (rtprof_rec_frame_is_label(r->label_mask, i))
		return PNODE_LABEL;
	return i == ln ? PNODE_PC : PNODE_RET;
}

/* A hash of the @n frames of @r, their kinds and @epoch. */
static int64_t
stack_hash(const struct rtprof_rec_view *r, unsigned n, uint16_t epoch)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)n << 16 | epoch);

	for (unsigned i = 0; i < n; i++) {
		h = (h ^ r->frames[i]) * 0xbf58476d1ce4e5b9ull;
		h ^= h >> 31;
	}
	for (unsigned w = 0; w < RTPROF_REC_MASK_WORDS; w++)
		h = (h ^ r->label_mask[w]) * 0x94d049bb133111ebull;
	return (int64_t)(h ^ h >> 29);
}

/* Is @leaf the node path of the @n frames of @r (no hash collision)? */
static bool
stack_is(const struct psess *s, int64_t leaf, const struct rtprof_rec_view *r,
    unsigned n, unsigned ln, uint16_t epoch)
{
	uint32_t i1 = (uint32_t)leaf + 1;

	for (unsigned i = n; i-- > 0; i1 = s->node[i1 - 1].prefix1) {
		const struct pnode *p;
		uint8_t kind = frame_kind(r, i, ln);

		if (i1 == 0 || i1 > s->nnode)
			return false;
		p = &s->node[i1 - 1];
		if (p->value != r->frames[i] || p->kind != kind ||
		    p->epoch != (kind == PNODE_LABEL ? 0 : epoch))
			return false;
	}
	return i1 == 0;
}

/* The leaf node of the @n frames of @r: a whole stack seen before costs
 * one hash and a walk up its path; -1: ENOMEM. */
static int64_t
stack_node(struct psess *s, const struct rtprof_rec_view *r, unsigned n,
    uint16_t epoch)
{
	int64_t h = stack_hash(r, n, epoch), node = -1;
	int64_t hit = rtprof_idmap_get(&s->stack_idx, h);
	unsigned ln = n;
	uint32_t prefix1 = 0;

	for (unsigned i = 0; i < n; i++)
		if (!rtprof_rec_frame_is_label(r->label_mask, i))
			ln = i;
	if (hit >= 0 && stack_is(s, hit, r, n, ln, epoch))
		return hit;
	for (unsigned i = 0; i < n; i++) {
		uint8_t kind = frame_kind(r, i, ln);

		node = node_of(s, prefix1, r->frames[i], kind,
		    kind == PNODE_LABEL ? 0 : epoch);
		if (node < 0)
			return -1;
		prefix1 = (uint32_t)node + 1;
	}
	if (rtprof_idmap_set(&s->stack_idx, h, (size_t)node) != 0)
		return -1;
	return node;
}

/*
 * SAMPLE: the frames (outermost first) become a path of the stack tree;
 * the last native frame is the interrupted instruction, every other one
 * a return address (codec/gecko.c, on_sample).
 */
static int
on_sample(struct rtprof_pprof_dump *d, struct psess *s,
    const struct rtprof_rec_view *r)
{
	int64_t ti = thread_of(s, r->tid), node;
	unsigned n = r->frames != NULL ? r->nframes : 0;

	if (ti < 0)
		return fail(d, -ENOMEM);
	if (n != 0)
		node = stack_node(s, r, n, epoch_at(s, r->t0));
	else if (!s->th[ti].kst_on || s->th[ti].kst_t != r->t0)
		node = node_of(s, 0, r->flags & RTPROF_SAMPLE_LABELS ?
		    PTEXT_NO_LABEL : PTEXT_NO_STACK, PNODE_TEXT, 0);
	else
		node = -1;      /* the kernel's reason alone, below */
	/* The kernel's reason (the KSTACK just before): the leaf, as in the
	 * Gecko profile. */
	if ((node >= 0 || n == 0) && s->th[ti].kst_on &&
	    s->th[ti].kst_t == r->t0)
		node = node_of(s, node >= 0 ? (uint32_t)node + 1 : 0,
		    PTEXT_KERNEL + (uint64_t)s->th[ti].kst_id, PNODE_TEXT, 0);
	s->th[ti].kst_on = false;
	if (node >= 0)
		s->th[ti].last1 = (uint32_t)node + 1;
	return sample_add(d, s, ti, node, r);
}

/* KSTACK: the kernel's stack for the thread's next SAMPLE (same time),
 * named now (codec/kreason.h). */
static int
on_kstack(struct rtprof_pprof_dump *d, struct psess *s,
    const struct rtprof_rec_view *r)
{
	int64_t ti = thread_of(s, r->tid);
	int id;

	if (ti < 0)
		return fail(d, -ENOMEM);
	id = rtprof_kreason_of(s->boot_id, r->frames, r->frames != NULL ?
	    r->nframes : 0);
	if (id < 0)
		return fail(d, -ENOMEM);
	s->th[ti].kst_on = true;
	s->th[ti].kst_t = r->t0;
	s->th[ti].kst_id = id;
	return 0;
}

/* SAME: the previous SAMPLE's stack of that thread. */
static int
on_same(struct rtprof_pprof_dump *d, struct psess *s,
    const struct rtprof_rec_view *r)
{
	int64_t ti = thread_of(s, r->tid), node;

	if (ti < 0)
		return fail(d, -ENOMEM);
	if (s->th[ti].last1 != 0)
		node = s->th[ti].last1 - 1;
	else
		node = node_of(s, 0, PTEXT_UNKNOWN_STACK, PNODE_TEXT, 0);
	return sample_add(d, s, ti, node, r);
}

/* ------------------------------------------------------------------ */
/* Reader callbacks                                                     */

/* The session of the frame: a HEADER starts one; frames of a session
 * whose HEADER was lost are counted, not converted. */
static int
on_frame(void *ctx, const struct rtprof_dump_frame *f)
{
	struct rtprof_pprof_dump *d = ctx;
	struct psess *s = NULL;

	if (d->progress != NULL)
		d->progress(d->progress_ctx, f->offset);
	if (d->cur != NULL && d->cur->session_index == f->session_index)
		return 0;
	for (size_t i = d->nsess; i > 0 && s == NULL; i--)
		if (d->sess[i - 1]->session_index == f->session_index)
			s = d->sess[i - 1];
	if (s == NULL && f->kind == RTPROF_FRAME_HEADER) {
		s = calloc(1, sizeof(*s));
		if (s == NULL || PUSH(d->sess, d->nsess, d->sesscap, s)) {
			free(s);
			return fail(d, -ENOMEM);
		}
		s->session_index = f->session_index;
	}
	d->cur = s;
	if (s == NULL)
		d->ignored_frames++;
	return 0;
}

static int
on_header(void *ctx, const struct rtprof_dump_header *h)
{
	struct rtprof_pprof_dump *d = ctx;
	struct psess *s = d->cur;

	if (s == NULL || s->have_header)
		return 0;
	s->have_header = true;
	s->pid = h->pid;
	s->process = dup_str(d, h->process);
	s->host = dup_str(d, h->machine.hostname);
	s->boot_id = dup_str(d, h->machine.boot_id);
	s->sampling = dup_str(d, h->sampling.method);
	s->tps = rate_ok(h->clock.ticks_per_second) ?
	    h->clock.ticks_per_second : 1e9;
	s->start_ticks = h->clock.start_ticks;
	s->start_mono_ns = h->clock.start_mono_ns;
	s->start_wall_ns = h->clock.start_wall_ns;
	s->sample_interval_us = h->settings.sample_interval_us;
	return d->err;
}

/* Modules @m[0..@n), mapped from @from on. */
static int
add_modules(struct rtprof_pprof_dump *d, struct psess *s,
    const struct rtprof_dump_module *m, size_t n, uint64_t from)
{
	for (size_t i = 0; i < n && d->err == 0; i++) {
		struct pmodule pm = { .from = from, .to = UINT64_MAX,
		    .start = m[i].start, .end = m[i].end,
		    .offset = m[i].offset };

		if (m[i].build_id != NULL) {
			pm.build_id_len = m[i].build_id_len <
			    sizeof(pm.build_id) ? m[i].build_id_len :
			    sizeof(pm.build_id);
			memcpy(pm.build_id, m[i].build_id, pm.build_id_len);
		}
		if ((pm.path = dup_str(d, m[i].path)) == NULL)
			break;
		if (PUSH(s->mod, s->nmod, s->modcap, pm) != 0) {
			free(pm.path);
			return fail(d, -ENOMEM);
		}
	}
	return d->err;
}

static int
on_modules(void *ctx, const struct rtprof_dump_module *m, size_t n)
{
	struct rtprof_pprof_dump *d = ctx;

	if (d->cur == NULL || d->cur->have_modules)
		return 0;
	d->cur->have_modules = true;
	return add_modules(d, d->cur, m, n, 0);
}

/* MODULES_CHANGED: unloaded modules' spans end, loaded ones begin. */
static int
on_module_change(void *ctx, const struct rtprof_dump_module_change *c)
{
	struct rtprof_pprof_dump *d = ctx;
	struct psess *s = d->cur;

	if (s == NULL)
		return 0;
	for (size_t i = 0; i < c->nremoved; i++) {
		const struct rtprof_dump_module *m = &c->removed[i];
		const char *path = m->path != NULL ? m->path : "";

		for (size_t k = s->nmod; k-- > 0;) {
			struct pmodule *pm = &s->mod[k];

			if (pm->to == UINT64_MAX && pm->start == m->start &&
			    pm->end == m->end && strcmp(pm->path, path) == 0) {
				pm->to = c->ticks;
				break;
			}
		}
	}
	if (PUSH(s->chg, s->nchg, s->chgcap, c->ticks) != 0)
		return fail(d, -ENOMEM);
	return add_modules(d, s, c->added, c->nadded, c->ticks);
}

static int
on_image(void *ctx, uint64_t addr, const void *bytes, size_t len)
{
	struct rtprof_pprof_dump *d = ctx;
	struct pimage im = { .addr = addr, .len = len };

	if (d->cur == NULL)
		return 0;
	if ((im.bytes = malloc(len != 0 ? len : 1)) == NULL)
		return fail(d, -ENOMEM);
	memcpy(im.bytes, bytes, len);
	if (PUSH(d->cur->img, d->cur->nimg, d->cur->imgcap, im)) {
		free(im.bytes);
		return fail(d, -ENOMEM);
	}
	return 0;
}

/* A later THREAD frame for the same tid renames it. */
static int
on_thread(void *ctx, const struct rtprof_dump_thread *t)
{
	struct rtprof_pprof_dump *d = ctx;
	int64_t i;

	if (d->cur == NULL)
		return 0;
	if ((i = thread_of(d->cur, t->tid)) < 0)
		return fail(d, -ENOMEM);
	free(d->cur->th[i].name);
	d->cur->th[i].name = dup_str(d, t->name);
	d->cur->th[i].main = (t->flags & 2u) != 0;
	return d->err;
}

/* A later STRING frame for the same address replaces its text. */
static int
on_string(void *ctx, uint64_t ref, const char *text, size_t len)
{
	struct rtprof_pprof_dump *d = ctx;
	struct psess *s = d->cur;
	struct pstr p = { .len = len };

	if (s == NULL || ref == 0)
		return 0;
	if ((p.text = malloc(len + 1)) == NULL)
		return fail(d, -ENOMEM);
	memcpy(p.text, text, len);
	p.text[len] = '\0';
	if (PUSH(s->str, s->nstr, s->strcap, p) != 0 ||
	    rtprof_idmap_set(&s->str_idx, (int64_t)ref, s->nstr - 1) != 0) {
		free(p.text);
		return fail(d, -ENOMEM);
	}
	return 0;
}

static int
on_record(void *ctx, const struct rtprof_dump_data *dd,
    const struct rtprof_rec_view *r)
{
	struct rtprof_pprof_dump *d = ctx;
	struct psess *s = d->cur;

	(void)dd;
	if (s == NULL || d->err != 0)
		return d->err;
	if (!s->have_t || (int64_t)(r->t0 - s->last_t) > 0) {
		s->last_t = r->t0;
		s->have_t = true;
	}
	if (r->kind == RTPROF_REC_SAMPLE)
		return on_sample(d, s, r);
	if (r->kind == RTPROF_REC_SAME)
		return on_same(d, s, r);
	if (r->kind == RTPROF_REC_KSTACK)
		return on_kstack(d, s, r);
	return 0;
}

static int
on_trailer(void *ctx, const struct rtprof_dump_trailer *t)
{
	struct rtprof_pprof_dump *d = ctx;

	if (d->cur == NULL || d->cur->have_trailer)
		return 0;
	d->cur->have_trailer = true;
	d->cur->stop_ticks = t->stop_ticks;
	d->cur->stop_mono_ns = t->stop_mono_ns;
	return 0;
}

static int
on_damage(void *ctx, const struct rtprof_dump_damage *dm)
{
	struct rtprof_pprof_dump *d = ctx;

	if (d->damage++ == 0) {
		d->dmg_offset = dm->offset;
		d->dmg_msg = dm->message;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* API                                                                  */

int
rtprof_pprof_dump_new(struct rtprof_pprof_dump **out, const char *input_name)
{
	struct rtprof_pprof_dump *d = calloc(1, sizeof(*d));

	if (d == NULL || (d->input = strdup(input_name)) == NULL) {
		free(d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

void
rtprof_pprof_dump_free(struct rtprof_pprof_dump *d)
{
	if (d == NULL)
		return;
	for (size_t i = 0; i < d->nsess; i++)
		sess_free(d->sess[i]);
	free(d->sess);
	free(d->input);
	free(d);
}

void
rtprof_pprof_dump_set_symbols(struct rtprof_pprof_dump *d,
    const struct rtprof_gecko_symbols *opt)
{
	memset(&d->symopt, 0, sizeof(d->symopt));
	if (opt != NULL)
		d->symopt = *opt;
}

void
rtprof_pprof_dump_set_progress(struct rtprof_pprof_dump *d,
    rtprof_gecko_progress_cb cb, void *ctx)
{
	d->progress = cb;
	d->progress_ctx = ctx;
}

void
rtprof_pprof_dump_keep_times(struct rtprof_pprof_dump *d)
{
	d->keep_times = true;
}

int
rtprof_pprof_dump_read_fd(struct rtprof_pprof_dump *d, int fd,
    struct rtprof_dump_stats *st)
{
	const struct rtprof_dump_cb cb = {
		.ctx = d, .on_frame = on_frame, .on_header = on_header,
		.on_modules = on_modules, .on_module_change = on_module_change,
		.on_image = on_image, .on_thread = on_thread,
		.on_string = on_string, .on_record = on_record,
		.on_trailer = on_trailer, .on_damage = on_damage,
	};
	int rc = rtprof_dump_read_fd(fd, &cb, st);

	d->cur = NULL;
	return rc != 0 ? rc : d->err;
}

size_t
rtprof_pprof_dump_sessions(const struct rtprof_pprof_dump *d)
{
	size_t n = 0;

	for (size_t i = 0; i < d->nsess; i++)
		n += d->sess[i]->have_header;
	return n;
}

void
rtprof_pprof_dump_thread_names(const struct rtprof_pprof_dump *d,
    void (*fn)(void *ctx, const char *name), void *ctx)
{
	for (size_t i = 0; i < d->nsess; i++)
		for (size_t k = 0; k < d->sess[i]->nth; k++)
			if (d->sess[i]->th[k].name != NULL)
				fn(ctx, d->sess[i]->th[k].name);
}

uint64_t
rtprof_pprof_dump_problems(const struct rtprof_pprof_dump *d)
{
	return d->damage + d->ignored_frames;
}

int
rtprof_pprof_dump_first_damage(const struct rtprof_pprof_dump *d,
    uint64_t *offset, const char **message)
{
	if (d->dmg_msg == NULL)
		return -ENOENT;
	*offset = d->dmg_offset;
	*message = d->dmg_msg;
	return 0;
}
