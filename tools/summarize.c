/*
 * summarize.c - `rtprof summarize`: dumps or profiles read for people.
 *
 *   rtprof summarize [--top N] [--folded] [--sysroot DIR] [--no-symbols]
 *                    FILE...
 *
 * FILE is an rtprof dump, or a profile already converted from dumps (a
 * Gecko profile, .json or .json.gz, as msgpack2gecko and `rtprof record`
 * write it); several, of either kind, are aggregated (one per process).
 * Prints:
 *   - time blocked by call ("Blocked" markers of `rtprof record`: count,
 *     total, mean, longest);
 *   - time blocked by stack: the calls that blocked at least the
 *     threshold carry the stack where they blocked (a BACKTRACE record
 *     after the marker in a dump; the marker's cause in a profile); calls
 *     with the same call and the same stack (function names, so across
 *     threads and processes) are one row, the top N by total time;
 *   - CPU time per thread (the sampler's CPU deltas: threadCPUDelta);
 *   - the top functions by self samples: the leaf of each on-CPU sample
 *     (in a dump a SAMPLE record, not a SAME: the thread had not run or
 *     was asleep; in a profile the thread's first sample, and any other
 *     whose leaf is not Idle and whose CPU delta reaches the sampler's own
 *     2%-of-a-tick limit), symbolized like the converter does;
 *   - samples without a stack because the thread blocked the sampling
 *     signal (flag SIG_BLOCKED, dumps only: a profile does not say), per
 *     thread: not counted as self samples, no folded stack;
 *   - time off CPU by the kernel's reason (tools/summarize_block.c):
 *     off-CPU samples with the kernel's stack where the thread went off
 *     CPU (KSTACK records; "kernel: ..." leaf frames in a profile);
 *   - with --folded, folded stacks instead ("a;b;c N" lines, outermost
 *     first, for flame-graph tools).
 * A dump is read with the codec's reader (no profile is built); a profile
 * with the small JSON reader below, zlib-inflated when it is gzip: one
 * pass finds the metas (the top-level one is written last), a second one
 * reads the threads one at a time, so memory follows the largest thread,
 * not the whole profile.
 *
 * Context: the tool's main thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "dump_reader.h"
#include "esc.h"
#include "idmap.h"
#include "kreason.h"
#include "summarize.h"
#include "summarize_block.h"
#include "symbolize.h"

#define PROG "rtprof summarize"

/* Separates the call and the frames of a by-stack key. */
#define KEY_SEP '\n'

/* A name -> (count, total, max) table, linear probing on a string hash. */
struct agg {
	struct agg_ent {
		char *key;
		uint64_t n;
		double total, max;
	} *e;
	size_t n, cap;
};

static uint64_t
hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h;
}

static int
agg_add(struct agg *a, const char *key, double v)
{
	size_t i;

	if ((a->n + 1) * 2 > a->cap) {
		size_t nc = a->cap ? a->cap * 2 : 256;
		struct agg_ent *ne = calloc(nc, sizeof(*ne));

		if (ne == NULL)
			return -ENOMEM;
		for (size_t k = 0; k < a->cap; k++) {
			if (a->e[k].key == NULL)
				continue;
			for (i = hash_str(a->e[k].key) & (nc - 1);
			    ne[i].key != NULL; i = (i + 1) & (nc - 1))
				;
			ne[i] = a->e[k];
		}
		free(a->e);
		a->e = ne;
		a->cap = nc;
	}
	for (i = hash_str(key) & (a->cap - 1); a->e[i].key != NULL;
	    i = (i + 1) & (a->cap - 1))
		if (strcmp(a->e[i].key, key) == 0)
			break;
	if (a->e[i].key == NULL) {
		if ((a->e[i].key = strdup(key)) == NULL)
			return -ENOMEM;
		a->n++;
	}
	a->e[i].n++;
	a->e[i].total += v;
	if (v > a->e[i].max)
		a->e[i].max = v;
	return 0;
}

static int
by_total(const void *x, const void *y)
{
	const struct agg_ent *a = x, *b = y;

	return a->total < b->total ? 1 : a->total > b->total ? -1 :
	    strcmp(a->key, b->key);
}

/* The entries sorted by total, biggest first (a new array). */
static struct agg_ent *
agg_sorted(const struct agg *a)
{
	struct agg_ent *v = malloc((a->n ? a->n : 1) * sizeof(*v));
	size_t k = 0;

	if (v == NULL)
		return NULL;
	for (size_t i = 0; i < a->cap; i++)
		if (a->e[i].key != NULL)
			v[k++] = a->e[i];
	qsort(v, k, sizeof(*v), by_total);
	return v;
}

static void
agg_free(struct agg *a)
{
	for (size_t i = 0; i < a->cap; i++)
		free(a->e[i].key);
	free(a->e);
}

/* A growing string (keys and folded lines). */
struct sbuf {
	char *p;
	size_t n, cap;
};

static int
sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t nc = (b->n + n + 1) * 2;
		char *p = realloc(b->p, nc);

		if (p == NULL)
			return -ENOMEM;
		b->p = p;
		b->cap = nc;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
	return 0;
}

/* A frame name in a folded line: ';' separates frames. */
static int
sb_add_frame(struct sbuf *b, const char *s)
{
	size_t n = strlen(s), at = b->n;

	if (sb_add(b, s, n) != 0)
		return -ENOMEM;
	for (size_t k = at; k < b->n; k++)
		if (b->p[k] == ';')
			b->p[k] = ':';
	return 0;
}

/* A Blocked marker waiting for the record after it (its BACKTRACE). */
struct pend {
	bool on;
	uint64_t t0;
	double ms;
	char call[64];
};

/* What the readers fill, across inputs. */
struct sum {
	const char *sysroot;
	bool no_symbols;                /* native frames stay hex */
	bool folded;
	bool names_final;               /* second pass: names are known */
	int err;
	/* Per dump: */
	double tps;
	int64_t pid;
	char process[64];
	struct rtprof_symbolizer *sym;
	struct { uint64_t ref; char *text; } *str;
	size_t nstr, strcap;
	struct rtprof_idmap str_idx;    /* ref -> str[] (the first one) */
	int blocked_type;               /* SCHEMA id of "Blocked", -1 */
	char boot_id[64];               /* the dump's boot (KSTACK addresses) */
	double interval_ms;             /* one sample's time */
	struct {
		int64_t tid;
		char name[64];
		char *last;
		struct pend pend;
		/* A KSTACK for its SAMPLE at kst_t; the reason (reason id)
		 * and place of its current off-CPU spell (off: -1 none). */
		bool kst_on;
		uint64_t kst_t;
		int kst_id, off;
		char *where;    /* allocated at its first kernel stack only:
				 * 300,000 threads stay within 256 MiB */
	} *th;
	size_t nth, thcap;
	size_t th_last;                 /* thread_of() cache */
	struct rtprof_idmap th_idx;     /* tid -> th[] */
	size_t npend;                   /* threads with a pending marker */
	/* Across inputs: */
	struct agg blocked, bstack, cpu, self, folded_stacks;
	struct agg sig_blocked;         /* SAMPLEs with the signal blocked */
	struct sblock *off;             /* off-CPU time by kernel reason */
	uint64_t nostack_n;             /* Blocked without a backtrace */
	double nostack_ms;
	uint64_t samples;
};

static int
fail(struct sum *s, int err)
{
	if (s->err == 0)
		s->err = err;
	return s->err;
}

/* One Blocked call (by call), and by stack when @frames is not NULL:
 * the names innermost first, separated by KEY_SEP. */
static int
blocked_add(struct sum *s, const char *call, double ms, const char *frames)
{
	struct sbuf k = { 0 };
	int rc;

	if (frames == NULL) {
		s->nostack_n++;
		s->nostack_ms += ms;
		return 0;
	}
	if (sb_add(&k, call, strlen(call)) != 0 ||
	    sb_add(&k, "\n", 1) != 0 || sb_add(&k, frames, strlen(frames)))
		rc = -ENOMEM;
	else
		rc = agg_add(&s->bstack, k.p, ms);
	free(k.p);
	return rc != 0 ? fail(s, rc) : 0;
}

/* ------------------------------------------------------------------ */
/* Dumps                                                                */

static const char *
str_of(const struct sum *s, uint64_t ref)
{
	int64_t i = rtprof_idmap_get(&s->str_idx, (int64_t)ref);

	return i >= 0 ? s->str[i].text : "?";
}

/* The thread entry of @tid (created). */
static size_t
thread_of(struct sum *s, int64_t tid)
{
	int64_t i;

	if (s->th_last < s->nth && s->th[s->th_last].tid == tid)
		return s->th_last;
	i = rtprof_idmap_get(&s->th_idx, tid);
	if (i >= 0)
		return s->th_last = (size_t)i;
	if (s->nth == s->thcap) {
		size_t nc = s->thcap ? s->thcap * 2 : 16;
		void *n = realloc(s->th, nc * sizeof(*s->th));

		if (n == NULL) {
			fail(s, -ENOMEM);
			return 0;
		}
		s->th = n;
		s->thcap = nc;
	}
	if (rtprof_idmap_set(&s->th_idx, tid, s->nth) != 0) {
		fail(s, -ENOMEM);
		return 0;
	}
	memset(&s->th[s->nth], 0, sizeof(s->th[s->nth]));
	s->th[s->nth].tid = tid;
	s->th[s->nth].off = -1;
	snprintf(s->th[s->nth].name, sizeof(s->th[s->nth].name), "thread %"
	    PRId64, tid);
	return s->th_last = s->nth++;
}

static int
on_header(void *ctx, const struct rtprof_dump_header *h)
{
	struct sum *s = ctx;

	s->tps = h->clock.ticks_per_second;
	s->pid = h->pid;
	snprintf(s->boot_id, sizeof(s->boot_id), "%s",
	    h->machine.boot_id != NULL ? h->machine.boot_id : "");
	s->interval_ms = (double)h->settings.sample_interval_us / 1e3;
	if (h->sampling.kernel_stacks == 0 &&
	    strcmp(h->sampling.method, "off") != 0 &&
	    sblock_refused(s->off, h->sampling.why) != 0)
		return fail(s, -ENOMEM);
	snprintf(s->process, sizeof(s->process), "%s",
	    h->process != NULL ? h->process : "?");
	return 0;
}

/* The symbolizer of the dump (made in the first pass), or NULL. */
static struct rtprof_symbolizer *
sym_of(struct sum *s)
{
	if (s->no_symbols)
		return NULL;
	if (s->sym == NULL &&
	    (s->sym = rtprof_symbolizer_new(s->sysroot, NULL, 0)) == NULL)
		fail(s, -ENOMEM);
	return s->sym;
}

/* Modules @m[0..@n), mapped from @from on. */
static int
add_modules(struct sum *s, const struct rtprof_dump_module *m, size_t n,
    uint64_t from)
{
	struct rtprof_symbolizer *sym = sym_of(s);

	for (size_t i = 0; sym != NULL && i < n; i++) {
		int k = rtprof_symbolizer_add_module(sym, m[i].path,
		    m[i].start, m[i].end, m[i].offset, m[i].build_id,
		    m[i].build_id_len);

		if (k < 0)
			return fail(s, -ENOMEM);
		rtprof_symbolizer_module_span(sym, (size_t)k, from, UINT64_MAX);
	}
	return s->err;
}

/* First pass: the module map over time (samples are named as it was at
 * their time in the second). */
static int
on_modules(void *ctx, const struct rtprof_dump_module *m, size_t n)
{
	return add_modules(ctx, m, n, 0);
}

static int
on_module_change(void *ctx, const struct rtprof_dump_module_change *c)
{
	struct sum *s = ctx;
	struct rtprof_symbolizer *sym = sym_of(s);

	for (size_t i = 0; sym != NULL && i < c->nremoved; i++)
		(void)rtprof_symbolizer_module_unload(sym, c->removed[i].path,
		    c->removed[i].start, c->removed[i].end, c->ticks);
	return add_modules(s, c->added, c->nadded, c->ticks);
}

static int
on_image(void *ctx, uint64_t addr, const void *bytes, size_t len)
{
	struct sum *s = ctx;
	struct rtprof_symbolizer *sym = sym_of(s);

	if (sym != NULL && rtprof_symbolizer_add_image(sym, addr, bytes, len))
		return fail(s, -ENOMEM);
	return s->err;
}

static int
on_thread(void *ctx, const struct rtprof_dump_thread *t)
{
	struct sum *s = ctx;
	size_t i = thread_of(s, t->tid);

	if (s->err == 0 && t->name != NULL && !s->names_final)
		snprintf(s->th[i].name, sizeof(s->th[i].name), "%s", t->name);
	return s->err;
}

static int
on_schema(void *ctx, const struct rtprof_dump_schema *sc)
{
	struct sum *s = ctx;

	if (sc->name != NULL && strcmp(sc->name, "Blocked") == 0)
		s->blocked_type = (int)sc->id;
	return 0;
}

static int
on_string(void *ctx, uint64_t ref, const char *text, size_t len)
{
	struct sum *s = ctx;

	if (rtprof_idmap_get(&s->str_idx, (int64_t)ref) >= 0)
		return 0;       /* the first text of a ref is the one used */
	if (s->nstr == s->strcap) {
		size_t nc = s->strcap ? s->strcap * 2 : 256;
		void *n = realloc(s->str, nc * sizeof(*s->str));

		if (n == NULL)
			return fail(s, -ENOMEM);
		s->str = n;
		s->strcap = nc;
	}
	if (rtprof_idmap_set(&s->str_idx, (int64_t)ref, s->nstr) != 0 ||
	    (s->str[s->nstr].text = strndup(text, len)) == NULL) {
		rtprof_idmap_clear(&s->str_idx);        /* str_of: "?" */
		return fail(s, -ENOMEM);
	}
	s->str[s->nstr++].ref = ref;
	return 0;
}

/* Frame @i of the current record as a name (maybe into @buf): C++ names
 * demangled, as the converter writes them. */
static const char *
frame_name(struct sum *s, const struct rtprof_rec_view *v, unsigned i,
    bool leaf_native, char *buf, size_t n)
{
	struct rtprof_sym r;
	uint64_t a = v->frames[i];

	if (rtprof_rec_frame_is_label(v->label_mask, i))
		return str_of(s, a);
	if (s->sym != NULL && a > 0 && rtprof_symbolize_at(s->sym,
	    leaf_native ? a : a - 1, v->t0, &r) == RTPROF_SYM_OK &&
	    r.name != NULL) {
		char *d = rtprof_demangle(r.name);

		if (d == NULL)
			return r.name;
		snprintf(buf, n, "%s", d);
		free(d);
		return buf;
	}
	snprintf(buf, n, "0x%" PRIx64, a);
	return buf;
}

/* A SAMPLE: its leaf (self) and, with --folded, the whole stack. */
static int
sample(struct sum *s, const struct rtprof_rec_view *r, size_t ti)
{
	char buf[1024];
	struct sbuf line = { 0 };
	unsigned last_native = r->nframes;
	const char *name;

	for (unsigned i = 0; i < r->nframes; i++)
		if (!rtprof_rec_frame_is_label(r->label_mask, i))
			last_native = i;
	name = r->nframes == 0 ? "(no stack)" : frame_name(s, r,
	    r->nframes - 1, r->nframes - 1 == last_native, buf, sizeof(buf));
	if (agg_add(&s->self, name, 1) != 0)
		return fail(s, -ENOMEM);
	if (!s->folded)
		return 0;
	/* "process;thread;outer;...;leaf" */
	if (sb_add_frame(&line, s->process) != 0 || sb_add(&line, ";", 1) ||
	    sb_add_frame(&line, s->th[ti].name) != 0)
		goto nomem;
	for (unsigned i = 0; i < r->nframes; i++)
		if (sb_add(&line, ";", 1) != 0 || sb_add_frame(&line,
		    frame_name(s, r, i, i == last_native, buf, sizeof(buf))))
			goto nomem;
	/* The kernel's reason (a KSTACK before it): the leaf, as in a
	 * profile. */
	if (s->th[ti].off >= 0 && (sb_add(&line, ";", 1) != 0 ||
	    sb_add_frame(&line, rtprof_kreason_text(s->th[ti].off)) != 0))
		goto nomem;
	free(s->th[ti].last);
	s->th[ti].last = line.p;
	return agg_add(&s->folded_stacks, line.p, 1) != 0 ?
	    fail(s, -ENOMEM) : 0;
nomem:
	free(line.p);
	return fail(s, -ENOMEM);
}

/* KSTACK: the kernel's stack where the thread went off CPU, for its
 * SAMPLE of the same time, next in the sampler's stream. */
static int
on_kstack(struct sum *s, const struct rtprof_rec_view *r)
{
	size_t ti = thread_of(s, r->tid);
	int id;

	if (s->err != 0)
		return s->err;
	id = rtprof_kreason_of(s->boot_id, r->frames, r->nframes);
	if (id < 0)
		return fail(s, -ENOMEM);
	s->th[ti].kst_on = true;
	s->th[ti].kst_t = r->t0;
	s->th[ti].kst_id = id;
	return 0;
}

/* The innermost frames of SAMPLE @r, " < " between them, into @buf. */
static void
where_of(struct sum *s, const struct rtprof_rec_view *r, char *buf,
    size_t n)
{
	char nb[1024];
	size_t at = 0;
	unsigned last_native = r->nframes;

	for (unsigned i = 0; i < r->nframes; i++)
		if (!rtprof_rec_frame_is_label(r->label_mask, i))
			last_native = i;
	snprintf(buf, n, "(no stack)");
	for (unsigned i = r->nframes, k = 0; i-- > 0 && k < 4 && at < n;
	    k++)
		at += (size_t)snprintf(buf + at, n - at, "%s%s", k ? " < " : "",
		    frame_name(s, r, i, i == last_native, nb, sizeof(nb)));
}

#define WHERE_MAX 256    /* a place that waited: its innermost frames */

/* An off-CPU sample of a spell whose kernel stack is known: a SAMPLE
 * right after its KSTACK starts the spell, its SAMEs go on with it. */
static int
off_cpu(struct sum *s, const struct rtprof_rec_view *r, size_t ti)
{
	bool asleep = (r->flags & RTPROF_SAMPLE_ASLEEP) != 0;

	if (r->kind == RTPROF_REC_SAMPLE) {
		s->th[ti].off = -1;
		if (s->th[ti].kst_on && s->th[ti].kst_t == r->t0 && asleep) {
			if (s->th[ti].where == NULL &&
			    (s->th[ti].where = malloc(WHERE_MAX)) == NULL)
				return fail(s, -ENOMEM);
			s->th[ti].off = s->th[ti].kst_id;
			where_of(s, r, s->th[ti].where, WHERE_MAX);
		}
		s->th[ti].kst_on = false;
	}
	if (s->th[ti].off < 0 || !asleep)
		return 0;
	return sblock_add(s->off, rtprof_kreason_short(s->th[ti].off),
	    s->th[ti].where, s->interval_ms) != 0 ? fail(s, -ENOMEM) : 0;
}

/* A SAMPLE of a thread that blocked the sampling signal: no stack (its
 * labels at most), counted per thread; the SAMEs after it repeat none. */
static int
sig_blocked(struct sum *s, const struct rtprof_rec_view *r, size_t ti)
{
	char key[160];

	free(s->th[ti].last);
	s->th[ti].last = NULL;
	snprintf(key, sizeof(key), "\"%s\" (tid %" PRId64 ", %s pid %"
	    PRId64 ")", s->th[ti].name, r->tid, s->process, s->pid);
	return agg_add(&s->sig_blocked, key, 1) != 0 ? fail(s, -ENOMEM) : 0;
}

/* The pending Blocked marker of stream @ti, with the stack of @bt (a
 * BACKTRACE record of the same start) or without one. */
static int
pend_flush(struct sum *s, size_t ti, const struct rtprof_rec_view *bt)
{
	struct pend p = s->th[ti].pend;
	struct sbuf f = { 0 };
	char buf[1024];
	int rc;

	if (!p.on)
		return 0;
	s->th[ti].pend.on = false;
	s->npend--;
	if (bt == NULL || bt->t0 != p.t0)
		return blocked_add(s, p.call, p.ms, NULL);
	/* Innermost first; every native frame is a return address. */
	for (unsigned i = bt->nframes; i-- > 0;) {
		const char *nm = frame_name(s, bt, i, false, buf, sizeof(buf));

		if ((i + 1 != bt->nframes && sb_add(&f, "\n", 1) != 0) ||
		    sb_add(&f, nm, strlen(nm)) != 0) {
			free(f.p);
			return fail(s, -ENOMEM);
		}
	}
	rc = blocked_add(s, p.call, p.ms, f.p != NULL ? f.p : "(no stack)");
	free(f.p);
	return rc;
}

static int
on_record(void *ctx, const struct rtprof_dump_data *d,
    const struct rtprof_rec_view *r)
{
	struct sum *s = ctx;
	size_t ti = 0;

	if (s->err != 0)
		return s->err;
	if (s->npend != 0 || r->kind == RTPROF_REC_TYPED) {
		ti = thread_of(s, d->tid);      /* the stream's thread */
		if (s->err != 0)
			return s->err;
	}
	/* A backtrace belongs to the Blocked marker just before it. */
	if (s->npend != 0 && s->th[ti].pend.on) {
		pend_flush(s, ti, r->kind == RTPROF_REC_BACKTRACE ? r : NULL);
		if (s->err != 0)
			return s->err;
	}
	switch (r->kind) {
	case RTPROF_REC_TYPED:
		if ((int)r->id != s->blocked_type || r->nvals < 1 ||
		    r->vals[0].kind != RTPROF_VAL_STRREF || s->tps <= 0)
			return 0;
		{
			struct pend *p = &s->th[ti].pend;
			double ms = (double)(r->t1 - r->t0) / s->tps * 1e3;
			const char *call = str_of(s, r->vals[0].v.ref);

			if (agg_add(&s->blocked, call, ms) != 0)
				return fail(s, -ENOMEM);
			p->on = true;
			s->npend++;
			p->t0 = r->t0;
			p->ms = ms;
			snprintf(p->call, sizeof(p->call), "%s", call);
		}
		return 0;
	case RTPROF_REC_KSTACK:
		return on_kstack(s, r);
	case RTPROF_REC_SAMPLE:
	case RTPROF_REC_SAME:
		ti = thread_of(s, r->tid);
		if (s->err != 0 || off_cpu(s, r, ti) != 0)
			return s->err;
		s->samples++;
		{
			char key[160];

			snprintf(key, sizeof(key), "%s (pid %" PRId64 ") / %s "
			    "(tid %" PRId64 ")", s->process, s->pid,
			    s->th[ti].name, r->tid);
			if (agg_add(&s->cpu, key, (double)r->cpu_ns / 1e6) != 0)
				return fail(s, -ENOMEM);
		}
		if (r->kind == RTPROF_REC_SAMPLE &&
		    (r->flags & RTPROF_SAMPLE_SIG_BLOCKED))
			return sig_blocked(s, r, ti);
		if (r->kind == RTPROF_REC_SAMPLE)
			return sample(s, r, ti);
		/* SAME: the thread's previous stack again. */
		if (s->folded && s->th[ti].last != NULL &&
		    agg_add(&s->folded_stacks, s->th[ti].last, 1) != 0)
			return fail(s, -ENOMEM);
		return 0;
	default:
		return 0;
	}
}

static void
reset_dump(struct sum *s)
{
	for (size_t i = 0; i < s->nth; i++)
		pend_flush(s, i, NULL);
	rtprof_symbolizer_free(s->sym);
	s->sym = NULL;
	for (size_t i = 0; i < s->nstr; i++)
		free(s->str[i].text);
	s->nstr = 0;
	rtprof_idmap_clear(&s->str_idx);
	for (size_t i = 0; i < s->nth; i++) {
		free(s->th[i].last);
		free(s->th[i].where);
	}
	s->nth = 0;
	rtprof_idmap_clear(&s->th_idx);
	s->blocked_type = -1;
	s->tps = 0;
}

/* Context: main thread. Return: 0, 1 (damage) or 2 (error printed). */
static int
read_dump(struct sum *s, const char *path)
{
	struct rtprof_dump_cb cb = {
		.ctx = s,
		.on_header = on_header,
		.on_thread = on_thread, .on_schema = on_schema,
		.on_string = on_string, .on_record = on_record,
	};
	/* Twice: first the threads' last names (a thread named after its
	 * comm is described again at exit) and the module map over time,
	 * then everything. */
	struct rtprof_dump_cb names = { .ctx = s, .on_thread = on_thread,
		.on_modules = on_modules, .on_module_change = on_module_change,
		.on_image = on_image };
	struct rtprof_dump_stats st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return 2;
	}
	rc = rtprof_dump_read_fd(fd, &names, &st);
	if (rc == 0 && lseek(fd, 0, SEEK_SET) == 0) {
		s->names_final = true;
		rc = rtprof_dump_read_fd(fd, &cb, &st);
	}
	s->names_final = false;
	close(fd);
	reset_dump(s);
	if (rc != 0 || s->err != 0 || st.frames == 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, st.frames == 0 ?
		    "not an rtprof dump" : strerror(-(rc ? rc : s->err)));
		return 2;
	}
	if (st.damage != 0) {
		fprintf(stderr, PROG ": %s: %" PRIu64 " damage report(s):"
		    " summarized what could be read\n", path, st.damage);
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* JSON                                                                 */

/*
 * A streaming reader over a plain or gzip file (zlib tells them apart),
 * and a compact DOM for the values read whole (a meta, a thread). JSON as
 * RFC 8259 has it; what is not JSON stops the reading with an error.
 */
#define JR_BUF 65536
#define J_DEPTH 64

struct jr {
	gzFile f;
	unsigned char buf[JR_BUF];
	size_t pos, len;
	bool eof;
	uint64_t off;                   /* bytes consumed, for messages */
};

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

/* Skips white space; returns the next character (not consumed), -1. */
static int
jr_ws(struct jr *r)
{
	for (;;) {
		int c = jr_peek(r);

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			return c;
		jr_get(r);
	}
}

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

static void
jdom_reset(struct jdom *d)
{
	d->nkids = d->nstr = d->nstk = 0;
	memset(&d->root, 0, sizeof(d->root));
}

static void
jdom_free(struct jdom *d)
{
	free(d->kids);
	free(d->str);
	free(d->stk);
	memset(d, 0, sizeof(*d));
}

static int
vgrow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t nc;
	void *np;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap : 64;
	while (nc < need)
		nc *= 2;
	np = realloc(*p, nc * size);
	if (np == NULL)
		return -ENOMEM;
	*p = np;
	*cap = nc;
	return 0;
}

static int
jpush(struct jdom *d, const struct jv *v)
{
	if (vgrow((void **)&d->stk, &d->stkcap, d->nstk + 1, sizeof(*v)))
		return -ENOMEM;
	d->stk[d->nstk++] = *v;
	return 0;
}

static int
jstr_put(struct jdom *d, const char *p, size_t n)
{
	if (vgrow((void **)&d->str, &d->scap, d->nstr + n, 1) != 0)
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
		uint32_t cp, lo;
		size_t n;

		if (c < 0)
			return -1;
		if (c == '"')
			break;
		if (c != '\\') {
			char ch = (char)c;

			if (jstr_put(d, &ch, 1) != 0)
				return -ENOMEM;
			continue;
		}
		c = jr_get(r);
		switch (c) {
		case '"': case '\\': case '/':
			u[0] = (char)c;
			n = 1;
			break;
		case 'b': u[0] = '\b'; n = 1; break;
		case 'f': u[0] = '\f'; n = 1; break;
		case 'n': u[0] = '\n'; n = 1; break;
		case 'r': u[0] = '\r'; n = 1; break;
		case 't': u[0] = '\t'; n = 1; break;
		case 'u':
			if (jr_hex4(r, &cp) != 0)
				return -1;
			if (cp >= 0xd800 && cp < 0xdc00 && jr_peek(r) == '\\') {
				jr_get(r);
				if (jr_get(r) != 'u' || jr_hex4(r, &lo) != 0)
					return -1;
				if (lo >= 0xdc00 && lo < 0xe000)
					cp = 0x10000 + ((cp - 0xd800) << 10) +
					    (lo - 0xdc00);
				else
					cp = 0xfffd;
			} else if (cp >= 0xd800 && cp < 0xe000) {
				cp = 0xfffd;
			}
			if (cp < 0x80) {
				u[0] = (char)cp;
				n = 1;
			} else if (cp < 0x800) {
				u[0] = (char)(0xc0 | cp >> 6);
				u[1] = (char)(0x80 | (cp & 0x3f));
				n = 2;
			} else if (cp < 0x10000) {
				u[0] = (char)(0xe0 | cp >> 12);
				u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
				u[2] = (char)(0x80 | (cp & 0x3f));
				n = 3;
			} else {
				u[0] = (char)(0xf0 | cp >> 18);
				u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
				u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
				u[3] = (char)(0x80 | (cp & 0x3f));
				n = 4;
			}
			break;
		default:
			return -1;
		}
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

/* One whole value, pushed onto d->stk. Return: 0, -1 (not JSON), -ENOMEM. */
static int
jr_value(struct jr *r, struct jdom *d, int depth)
{
	int c = jr_ws(r), close, rc;
	size_t base;
	bool obj;
	struct jv v;

	if (c == '"')
		return jr_string(r, d);
	if (c != '{' && c != '[')
		return jr_scalar(r, d);
	if (depth >= J_DEPTH)
		return -1;
	obj = c == '{';
	close = obj ? '}' : ']';
	jr_get(r);
	base = d->nstk;
	if (jr_ws(r) == close) {
		jr_get(r);
	} else {
		for (;;) {
			if (obj) {
				if (jr_ws(r) != '"' ||
				    (rc = jr_string(r, d)) != 0)
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
				break;
			if (c != ',')
				return -1;
		}
	}
	/* The children, contiguous, after every deeper value's. */
	memset(&v, 0, sizeof(v));
	v.t = obj ? J_OBJ : J_ARR;
	v.n = (uint32_t)(obj ? (d->nstk - base) / 2 : d->nstk - base);
	v.u.off = d->nkids;
	if (vgrow((void **)&d->kids, &d->kcap, d->nkids + (d->nstk - base),
	    sizeof(*d->kids)) != 0)
		return -ENOMEM;
	memcpy(d->kids + d->nkids, d->stk + base,
	    (d->nstk - base) * sizeof(*d->kids));
	d->nkids += d->nstk - base;
	d->nstk = base;
	return jpush(d, &v);
}

/* Reads one value into @d (reset first): its root. */
static int
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

/* Skips one value without keeping it. */
static int
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
static int
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

static int
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

static int
jr_elem(struct jr *r, bool *first)
{
	return jr_more(r, ']', first);
}

/* DOM access. */
static const struct jv *
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

static const struct jv *
jat(const struct jdom *d, const struct jv *a, size_t i)
{
	if (a == NULL || a->t != J_ARR || i >= a->n)
		return NULL;
	return &d->kids[a->u.off + i];
}

static bool
jnum(const struct jv *v, double *out)
{
	if (v == NULL || v->t != J_NUM)
		return false;
	*out = v->u.d;
	return true;
}

static const char *
jstr(const struct jdom *d, const struct jv *v)
{
	return v != NULL && v->t == J_STR ? d->str + v->u.off : NULL;
}

/* An index (a non-negative integer) or -1. */
static int64_t
jidx(const struct jv *v)
{
	double x;

	if (!jnum(v, &x) || x < 0 || x > 9e15 || x != floor(x))
		return -1;
	return (int64_t)x;
}

/* A Gecko table {schema: {col: i}, data: [rows]}: column indexes. */
struct jtab {
	const struct jv *data;
	size_t nrows;
	int col[8];
};

static void
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

/* Column @c (an index of jtab_open's @cols) of row @i, or NULL. */
static const struct jv *
jcell(const struct jdom *d, const struct jtab *t, size_t i, int c)
{
	if (t->col[c] < 0)
		return NULL;
	return jat(d, jat(d, t->data, i), (size_t)t->col[c]);
}

/* ------------------------------------------------------------------ */
/* Profiles                                                             */

/* What a process's meta says (and the top level's for all). */
struct pmeta {
	double interval_ms;             /* 0: unknown */
};

struct pctx {
	struct pmeta top;
	struct pmeta *sub;              /* processes[i].meta */
	size_t nsub, subcap;
	double cpu_ns_per_unit;         /* threadCPUDelta unit; 0: unknown */
	int64_t idle_cat;               /* the "Idle" category, -1 */
	bool has_version, has_threads;  /* top-level meta.version, threads */
	struct jdom d, scratch;
};

static void
read_meta(struct pctx *pc, const struct jdom *d, const struct jv *m,
    struct pmeta *out, bool top)
{
	const struct jv *cats, *u;
	double x;

	if (jnum(jget(d, m, "interval"), &x) && x > 0)
		out->interval_ms = x;
	if (!top)
		return;
	u = jget(d, jget(d, m, "sampleUnits"), "threadCPUDelta");
	if (jstr(d, u) != NULL) {
		if (strcmp(jstr(d, u), "ns") == 0)
			pc->cpu_ns_per_unit = 1.0;
		else if (strcmp(jstr(d, u), "\xc2\xb5s") == 0)
			pc->cpu_ns_per_unit = 1e3;
	}
	cats = jget(d, m, "categories");
	for (size_t i = 0; cats != NULL && i < cats->n; i++) {
		const char *n = jstr(d, jget(d, jat(d, cats, i), "name"));

		if (n != NULL && strcmp(n, "Idle") == 0) {
			pc->idle_cat = (int64_t)i;
			break;
		}
	}
}

/*
 * Walk a profile: call @fn(@s, @r, @pc, KEY, PROC) for every member of the
 * top-level object (PROC -1) and of each processes[] element (PROC its
 * index); @fn reads or skips the member's value. Return: 0, or the first
 * non-zero from @fn or the reader.
 */
typedef int (*member_fn)(struct sum *s, struct jr *r, struct pctx *pc,
    const char *key, long proc);

static int
walk_profile(struct sum *s, struct jr *r, struct pctx *pc, member_fn fn)
{
	char key[64];
	bool first = true;
	int rc;

	if (jr_open(r, '{') != 0)
		return -1;
	while ((rc = jr_member(r, &first, &pc->scratch, key,
	    sizeof(key))) == 1) {
		bool pfirst = true;
		long proc = 0;

		if (strcmp(key, "processes") != 0) {
			if ((rc = fn(s, r, pc, key, -1)) != 0)
				return rc;
			continue;
		}
		if (jr_open(r, '[') != 0)
			return -1;
		while ((rc = jr_elem(r, &pfirst)) == 1) {
			bool mfirst = true;

			if (jr_open(r, '{') != 0)
				return -1;
			while ((rc = jr_member(r, &mfirst, &pc->scratch, key,
			    sizeof(key))) == 1)
				if ((rc = fn(s, r, pc, key, proc)) != 0)
					return rc;
			if (rc < 0)
				return rc;
			proc++;
		}
		if (rc < 0)
			return rc;
	}
	return rc;
}

static int
skip_member(struct jr *r)
{
	return jr_skip(r) != 0 ? -1 : 0;
}

/* First pass: the top-level meta (written last) and every sub-process's. */
static int
meta_member(struct sum *s, struct jr *r, struct pctx *pc, const char *key,
    long proc)
{
	struct pmeta *pm = &pc->top;
	int rc;

	(void)s;
	if (proc < 0 && strcmp(key, "threads") == 0)
		pc->has_threads = true;
	if (strcmp(key, "meta") != 0)
		return skip_member(r);
	if (proc >= 0) {
		if ((size_t)proc >= pc->nsub) {
			if (vgrow((void **)&pc->sub, &pc->subcap,
			    (size_t)proc + 1, sizeof(*pc->sub)) != 0)
				return -ENOMEM;
			memset(&pc->sub[pc->nsub], 0, ((size_t)proc + 1 -
			    pc->nsub) * sizeof(*pc->sub));
			pc->nsub = (size_t)proc + 1;
		}
		pm = &pc->sub[proc];
	}
	if ((rc = jr_dom(r, &pc->d)) != 0)
		return rc;
	if (proc < 0) {
		double v;

		pc->has_version = jnum(jget(&pc->d, &pc->d.root, "version"),
		    &v);
	}
	read_meta(pc, &pc->d, &pc->d.root, pm, proc < 0);
	return 0;
}

/* "name (in lib)" -> "name" (as a dump's summary names functions). */
static size_t
func_len(const char *loc)
{
	size_t n = strlen(loc);
	const char *in = NULL;

	if (n == 0 || loc[n - 1] != ')')
		return n;
	for (const char *p = strstr(loc, " (in "); p != NULL;
	    p = strstr(p + 1, " (in "))
		in = p;
	return in != NULL ? (size_t)(in - loc) : n;
}

/* A thread's tables, read from its DOM. */
struct pthread {
	const struct jdom *d;
	const struct jv *strings;
	struct jtab frames, stacks;
};

static const char *
ploc(const struct pthread *t, int64_t frame, size_t *len)
{
	const char *s = NULL;
	int64_t loc;

	if (frame >= 0 && (size_t)frame < t->frames.nrows) {
		loc = jidx(jcell(t->d, &t->frames, (size_t)frame, 0));
		s = jstr(t->d, jat(t->d, t->strings, loc >= 0 ? (size_t)loc :
		    SIZE_MAX));
	}
	if (s == NULL)
		s = "?";
	if (strcmp(s, "(no label)") == 0)
		s = "(no stack)";
	*len = func_len(s);
	return s;
}

/* The frames of stack @st, leaf first (at most @max): frame indexes. */
static size_t
pstack(const struct pthread *t, int64_t st, int64_t *out, size_t max)
{
	size_t n = 0;

	while (st >= 0 && (size_t)st < t->stacks.nrows && n < max) {
		int64_t pre;

		out[n++] = jidx(jcell(t->d, &t->stacks, (size_t)st, 1));
		pre = jidx(jcell(t->d, &t->stacks, (size_t)st, 0));
		if (pre >= st)          /* parents come first: no cycles */
			break;
		st = pre;
	}
	return n;
}

#define PSTACK_MAX 512

/*
 * "NAME (pid PID)": a process as the CPU table names it. A process shown
 * under a made-up pid (a reused pid, or a later session) carries its own
 * suffix, "NAME (pid 9201)" or "NAME (session 2)": that suffix and the
 * profile's pid share one pair of parentheses, "NAME (pid 9201, profile
 * pid 25175025)", so that the two processes stay apart.
 */
static const char *
proc_label(char *buf, size_t n, const char *pname, double pid)
{
	const char *o = strrchr(pname, '(');
	size_t len = strlen(pname);

	if (o != NULL && o > pname && o[-1] == ' ' && pname[len - 1] == ')' &&
	    (strncmp(o, "(pid ", 5) == 0 || strncmp(o, "(session ", 9) == 0))
		snprintf(buf, n, "%.*s, profile pid %.0f)", (int)(len - 1),
		    pname, pid);
	else
		snprintf(buf, n, "%s (pid %.0f)", pname, pid);
	return buf;
}

/* A profile's sample whose leaf is the kernel's reason (@fr: its frames,
 * innermost first): off-CPU time by that reason, with the frames above. */
static int
prof_off_cpu(struct sum *s, const struct pthread *t, const int64_t *fr,
    size_t n, const char *leaf, size_t len, double ms)
{
	char reason[160], where[256];
	size_t at = 0;

	if (!sblock_reason_of(leaf, len, reason, sizeof(reason)))
		return 0;
	snprintf(where, sizeof(where), "(no stack)");
	for (size_t k = 1; k < n && k < 5 && at < sizeof(where); k++) {
		size_t fl;
		const char *loc = ploc(t, fr[k], &fl);

		at += (size_t)snprintf(where + at, sizeof(where) - at,
		    "%s%.*s", k > 1 ? " < " : "", (int)fl, loc);
	}
	return sblock_add(s->off, reason, where, ms) != 0 ?
	    fail(s, -ENOMEM) : 0;
}

/* One thread object (its DOM in pc->d) of a process whose meta is @pm. */
static int
prof_thread(struct sum *s, struct pctx *pc, const struct pmeta *pm)
{
	static const char *const fcols[] = { "location", "category" };
	static const char *const scols[] = { "prefix", "frame" };
	static const char *const smpcols[] = { "stack", "threadCPUDelta" };
	static const char *const mcols[] = { "name", "startTime", "endTime",
	    "phase", "data" };
	const struct jdom *d = &pc->d;
	const struct jv *th = &d->root;
	struct pthread t = { .d = d };
	struct jtab smp, mk;
	const char *pname = jstr(d, jget(d, th, "processName"));
	const char *tname = jstr(d, jget(d, th, "name"));
	double pid = 0, tid = 0, interval = pm->interval_ms > 0 ?
	    pm->interval_ms : pc->top.interval_ms > 0 ? pc->top.interval_ms : 1;
	double idle_ns = interval * 1e6 / 50, cpu_ms = 0;
	int64_t fr[PSTACK_MAX];
	bool sampled;
	char key[200], pl[160];

	if (th->t != J_OBJ)
		return -1;
	jnum(jget(d, th, "pid"), &pid);
	jnum(jget(d, th, "tid"), &tid);
	if (pname == NULL || pname[0] == '\0')
		pname = "?";
	if (tname == NULL)
		tname = "?";
	else if (strcmp(tname, "GeckoMain") == 0)
		tname = "main";         /* as the dump names it */
	t.strings = jget(d, th, "stringTable");
	jtab_open(d, jget(d, th, "frameTable"), fcols, 2, &t.frames);
	jtab_open(d, jget(d, th, "stackTable"), scols, 2, &t.stacks);
	jtab_open(d, jget(d, th, "samples"), smpcols, 2, &smp);
	jtab_open(d, jget(d, th, "markers"), mcols, 5, &mk);

	/* Blocked markers: by call, and by stack when they have one. */
	for (size_t i = 0; i < mk.nrows; i++) {
		const char *name = jstr(d, jat(d, t.strings, (size_t)jidx(
		    jcell(d, &mk, i, 0))));
		const struct jv *data = jcell(d, &mk, i, 4), *c;
		const char *call = jstr(d, jget(d, data, "call"));
		double a, b, ms;
		int64_t st = -1;
		struct sbuf f = { 0 };
		size_t n;
		int rc;

		if (name == NULL || strcmp(name, "Blocked") != 0 ||
		    call == NULL || jidx(jcell(d, &mk, i, 3)) != 1 ||
		    !jnum(jcell(d, &mk, i, 1), &a) ||
		    !jnum(jcell(d, &mk, i, 2), &b))
			continue;
		ms = b - a;
		if (agg_add(&s->blocked, call, ms) != 0)
			return fail(s, -ENOMEM);
		c = jget(d, data, "cause");
		if (c != NULL) {
			st = jidx(jget(d, c, "stack"));
		} else if ((c = jget(d, jget(d, data, "stack"), "samples")) !=
		    NULL) {
			static const char *const bcols[] = { "stack" };
			struct jtab bt;

			jtab_open(d, c, bcols, 1, &bt);
			st = jidx(jcell(d, &bt, 0, 0));
		}
		if (st < 0) {
			blocked_add(s, call, ms, NULL);
			continue;
		}
		n = pstack(&t, st, fr, PSTACK_MAX);
		for (size_t k = 0; k < n; k++) {
			size_t len;
			const char *loc = ploc(&t, fr[k], &len);

			if ((k != 0 && sb_add(&f, "\n", 1) != 0) ||
			    sb_add(&f, loc, len) != 0) {
				free(f.p);
				return fail(s, -ENOMEM);
			}
		}
		rc = blocked_add(s, call, ms, f.p != NULL ? f.p : "(no stack)");
		free(f.p);
		if (rc != 0)
			return rc;
	}

	/* Samples of a thread the sampler saw (it has CPU deltas). */
	sampled = smp.col[1] >= 0;
	for (size_t i = 0; sampled && i < smp.nrows; i++) {
		int64_t st = jidx(jcell(d, &smp, i, 0)), cat = -1;
		double cpu = 0;
		size_t n = st >= 0 ? pstack(&t, st, fr, PSTACK_MAX) : 0, len;
		const char *leaf = "(no stack)";
		bool on_cpu, empty;

		s->samples++;
		jnum(jcell(d, &smp, i, 1), &cpu);
		if (pc->cpu_ns_per_unit > 0)
			cpu_ms += cpu * pc->cpu_ns_per_unit / 1e6;
		if (n != 0) {
			leaf = ploc(&t, fr[0], &len);
			cat = jidx(jcell(d, &t.frames, (size_t)fr[0], 1));
		} else {
			len = strlen(leaf);
		}
		/* (no stack) as its only frame: no frame at all. */
		empty = n == 0 || (n == 1 && strcmp(leaf, "(no stack)") == 0);
		if (n != 0 && prof_off_cpu(s, &t, fr, n, leaf, len,
		    interval) != 0)
			return s->err;
		/* On CPU: what the dump has as a SAMPLE, not a SAME. */
		on_cpu = i == 0 || ((pc->idle_cat < 0 ||
		    cat != pc->idle_cat) && (pc->cpu_ns_per_unit <= 0 ||
		    cpu * pc->cpu_ns_per_unit >= idle_ns));
		if (on_cpu) {
			char *lf = strndup(leaf, len);

			if (lf == NULL || agg_add(&s->self, lf, 1) != 0) {
				free(lf);
				return fail(s, -ENOMEM);
			}
			free(lf);
		}
		if (s->folded && strcmp(leaf, "(unknown stack)") != 0) {
			struct sbuf line = { 0 };
			int rc = sb_add_frame(&line, pname) != 0 ||
			    sb_add(&line, ";", 1) != 0 ||
			    sb_add_frame(&line, tname) != 0;

			for (size_t k = n; rc == 0 && !empty && k-- > 0;) {
				const char *loc = ploc(&t, fr[k], &len);
				char *nm = strndup(loc, len);

				rc = nm == NULL || sb_add(&line, ";", 1) != 0 ||
				    sb_add_frame(&line, nm) != 0;
				free(nm);
			}
			if (rc == 0)
				rc = agg_add(&s->folded_stacks, line.p, 1);
			free(line.p);
			if (rc != 0)
				return fail(s, -ENOMEM);
		}
	}
	if (sampled && smp.nrows != 0 && pc->cpu_ns_per_unit > 0) {
		/* One CPU entry per thread, as in a dump (n: its samples). */
		snprintf(key, sizeof(key), "%s / %s (tid %.0f)",
		    proc_label(pl, sizeof(pl), pname, pid), tname, tid);
		if (agg_add(&s->cpu, key, cpu_ms) != 0)
			return fail(s, -ENOMEM);
	}
	return 0;
}

/* Every thread of the array the reader is at (threads of @pm's process). */
static int
prof_threads(struct sum *s, struct jr *r, struct pctx *pc,
    const struct pmeta *pm)
{
	bool first = true;
	int rc;

	if (jr_open(r, '[') != 0)
		return -1;
	while ((rc = jr_elem(r, &first)) == 1) {
		if ((rc = jr_dom(r, &pc->d)) != 0)
			return rc;
		if ((rc = prof_thread(s, pc, pm)) != 0)
			return rc;
	}
	return rc;
}

/* Second pass: the threads, top level then processes[]. */
static int
threads_member(struct sum *s, struct jr *r, struct pctx *pc, const char *key,
    long proc)
{
	static const struct pmeta none;
	const struct pmeta *pm = proc < 0 ? &pc->top :
	    (size_t)proc < pc->nsub ? &pc->sub[proc] : &none;

	if (strcmp(key, "threads") != 0)
		return skip_member(r);
	return prof_threads(s, r, pc, pm);
}

static int
scan_threads(struct sum *s, struct jr *r, struct pctx *pc)
{
	return walk_profile(s, r, pc, threads_member);
}

/*
 * One pass of @fn over the profile @path. Return: as @fn; 2 unreadable;
 * -1 not JSON, or bytes after it (*@bad: the offset).
 */
static int
prof_pass(struct sum *s, struct pctx *pc, const char *path,
    int (*fn)(struct sum *, struct jr *, struct pctx *), uint64_t *bad)
{
	struct jr *r = calloc(1, sizeof(*r));
	int rc;

	if (r == NULL)
		return -ENOMEM;
	r->f = gzopen(path, "rb");
	if (r->f == NULL) {
		free(r);
		return 2;
	}
	gzbuffer(r->f, 1 << 17);
	rc = fn(s, r, pc);
	if (rc == 0 && jr_ws(r) >= 0)
		rc = -1;                /* bytes after the profile */
	*bad = r->off;
	gzclose(r->f);
	free(r);
	return rc;
}

static int
metas_pass(struct sum *s, struct jr *r, struct pctx *pc)
{
	return walk_profile(s, r, pc, meta_member);
}

/*
 * The first pass over the profile @path (the metas), and the check that
 * it is one: JSON to its end (not cut), a top-level meta.version and
 * threads. Return: 0; 2 (said, "@prog: @path: ...").
 */
static int
first_pass(const char *prog, struct sum *s, struct pctx *pc, const char *path)
{
	uint64_t bad = 0;
	int rc = prof_pass(s, pc, path, metas_pass, &bad);

	if (rc == -1)
		fprintf(stderr, "%s: %s: byte %" PRIu64 ": not a JSON "
		    "profile (cut short, or not JSON)\n", prog, path, bad);
	else if (rc == 2 || rc == -ENOMEM)
		fprintf(stderr, "%s: %s: %s\n", prog, path, rc == 2 ?
		    strerror(errno ? errno : EIO) : strerror(ENOMEM));
	else if (rc == 0 && (!pc->has_version || !pc->has_threads))
		fprintf(stderr, "%s: %s: not a Firefox Profiler (Gecko) "
		    "profile: no %s\n", prog, path, !pc->has_version ?
		    "meta.version" : "threads");
	else if (rc == 0)
		return 0;
	return 2;
}

static void
pctx_free(struct pctx *pc)
{
	jdom_free(&pc->d);
	jdom_free(&pc->scratch);
	free(pc->sub);
}

/* Context: main thread. Return: 0, or 2 (error printed). */
static int
read_profile(struct sum *s, const char *path)
{
	struct pctx pc;
	uint64_t bad = 0;
	int rc;

	memset(&pc, 0, sizeof(pc));
	pc.idle_cat = -1;
	rc = first_pass(PROG, s, &pc, path);
	if (rc == 0)
		rc = prof_pass(s, &pc, path, scan_threads, &bad);
	pctx_free(&pc);
	if (rc == -1)
		fprintf(stderr, PROG ": %s: byte %" PRIu64 ": not a JSON "
		    "profile\n", path, bad);
	if (rc == -ENOMEM || s->err != 0)
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(ENOMEM));
	return rc == 0 && s->err == 0 ? 0 : 2;
}

/* Context: main thread. */
int
summarize_check_profile(const char *prog, const char *path)
{
	struct pctx pc;
	struct sum s;
	int rc;

	memset(&pc, 0, sizeof(pc));
	memset(&s, 0, sizeof(s));
	pc.idle_cat = -1;
	rc = first_pass(prog, &s, &pc, path);
	pctx_free(&pc);
	return rc == 0 ? 0 : -1;
}

/* A converted profile (JSON, maybe gzip), else a dump? */
static int
is_profile(const char *path, bool *yes)
{
	unsigned char b[64];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, b, sizeof(b));
	close(fd);
	*yes = false;
	if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
		*yes = true;
		return 0;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t')
			continue;
		*yes = b[i] == '{';
		break;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The report                                                           */

void
summarize_usage(FILE *f)
{
	fprintf(f,
	    "usage: rtprof summarize [--top N] [--folded] [--sysroot DIR] "
	    "[--no-symbols] FILE...\n"
	    "Time blocked by call and by stack, CPU time per thread and the\n"
	    "top functions by self samples of rtprof dumps or of profiles\n"
	    "converted from them (.json, .json.gz); several: aggregated.\n"
	    "  --top N         rows per table, the by-stack one included: the\n"
	    "                  N biggest by total, then how many more (20)\n"
	    "  --folded        print folded stacks (\"a;b;c N\") instead, for\n"
	    "                  flame-graph tools\n"
	    "  --sysroot DIR   where the recorded machine's files are (dumps)\n"
	    "  --no-symbols    do not symbolize native frames: they stay hex\n"
	    "                  (no file a dump names is opened)\n"
	    "Exit status: 0; 1 a dump had damage (what could be read was\n"
	    "summarized); 2 usage error, unreadable input, or a FILE that is\n"
	    "neither a dump nor a whole profile (JSON that is cut short or\n"
	    "has no meta.version and threads).\n");
}

static void
print_by_stack(const struct sum *s, size_t top)
{
	struct agg_ent *v = agg_sorted(&s->bstack);

	printf("\nTime blocked, by stack (calls that blocked at least the "
	    "threshold,\nwith the stack where they blocked, innermost "
	    "frame first):\n");
	if (s->bstack.n == 0)
		printf("  (no backtrace recorded)\n");
	for (size_t k = 0; v != NULL && k < s->bstack.n && k < top; k++) {
		const char *p = v[k].key, *nl = strchr(p, KEY_SEP);

		/* Names from the dump or profile: escaped (esc.h). */
		printf("  ");
		rtprof_esc_write(stdout, p, nl != NULL ? (size_t)(nl - p) :
		    strlen(p), 0);
		printf(": %" PRIu64 " call%s, %.3f ms (mean %.3f ms, "
		    "max %.3f ms)\n", v[k].n, v[k].n == 1 ? "" : "s", v[k].total,
		    v[k].total / (double)v[k].n, v[k].max);
		while (nl != NULL) {
			p = nl + 1;
			nl = strchr(p, KEY_SEP);
			printf("        ");
			rtprof_esc_write(stdout, p, nl != NULL ?
			    (size_t)(nl - p) : strlen(p), 0);
			printf("\n");
		}
	}
	if (s->bstack.n > top)
		printf("  (%zu more stacks)\n", s->bstack.n - top);
	if (s->nostack_n != 0)
		printf("  (without a stack: %" PRIu64 " call%s, %.3f ms: "
		    "under the threshold)\n", s->nostack_n,
		    s->nostack_n == 1 ? "" : "s", s->nostack_ms);
	free(v);
}

/* CPU time per thread: the top @top, how many more, and the total. */
static void
print_cpu(const struct sum *s, size_t top)
{
	struct agg_ent *v = agg_sorted(&s->cpu);
	double total = 0, rest = 0;
	char e[1024];

	printf("\nCPU time by thread (from %" PRIu64 " samples):\n",
	    s->samples);
	for (size_t k = 0; v != NULL && k < s->cpu.n; k++) {
		total += v[k].total;
		if (k < top)
			printf("  %12.3f ms  %s\n", v[k].total,
			    rtprof_esc(e, sizeof(e), v[k].key));
		else
			rest += v[k].total;
	}
	if (v != NULL && s->cpu.n > top)
		printf("  %12.3f ms  (%zu more thread%s)\n", rest,
		    s->cpu.n - top, s->cpu.n - top == 1 ? "" : "s");
	if (v != NULL)
		printf("  %12.3f ms  total, %zu thread%s\n", total, s->cpu.n,
		    s->cpu.n == 1 ? "" : "s");
	free(v);
}

/* Context: main thread. Return: the exit status. */
int
cmd_summarize(int argc, char **argv)
{
	struct sum s;
	struct agg_ent *v;
	char e[1024];                   /* a name, escaped */
	size_t top = 20;
	int i, status = 0;

	memset(&s, 0, sizeof(s));
	s.blocked_type = -1;
	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
		if (strcmp(argv[i], "--top") == 0 && i + 1 < argc) {
			const char *a = argv[++i];
			char *end;

			errno = 0;
			top = (size_t)strtoul(a, &end, 10);
			if (*a < '0' || *a > '9' || *end != '\0' ||
			    errno != 0 || top == 0) {
				fprintf(stderr, PROG ": --top: not a number "
				    "of rows above 0: %s\n", a);
				return 2;
			}
		} else if (strcmp(argv[i], "--folded") == 0) {
			s.folded = true;
		} else if (strcmp(argv[i], "--sysroot") == 0 && i + 1 < argc) {
			s.sysroot = argv[++i];
		} else if (strcmp(argv[i], "--no-symbols") == 0) {
			s.no_symbols = true;
		} else if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			summarize_usage(stdout);
			return 0;
		} else {
			fprintf(stderr, PROG ": unknown option %s\n", argv[i]);
			summarize_usage(stderr);
			return 2;
		}
	}
	if (i >= argc) {
		summarize_usage(stderr);
		return 2;
	}
	s.off = sblock_new();
	if (s.off == NULL) {
		fprintf(stderr, PROG ": out of memory\n");
		return 2;
	}
	for (; i < argc; i++) {
		bool prof;
		int rc = is_profile(argv[i], &prof);

		if (rc != 0) {
			fprintf(stderr, PROG ": %s: %s\n", argv[i],
			    strerror(-rc));
			status = 2;
			goto out;
		}
		rc = prof ? read_profile(&s, argv[i]) : read_dump(&s, argv[i]);
		if (rc == 2) {
			status = 2;
			goto out;
		}
		if (rc == 1)
			status = 1;
	}
	if (s.folded) {
		v = agg_sorted(&s.folded_stacks);
		for (size_t k = 0; v != NULL && k < s.folded_stacks.n; k++) {
			rtprof_esc_puts(stdout, v[k].key);
			printf(" %" PRIu64 "\n", v[k].n);
		}
		free(v);
		goto out;
	}
	printf("Time blocked, by call (rtprof record's \"Blocked\" markers):\n");
	v = agg_sorted(&s.blocked);
	if (s.blocked.n == 0)
		printf("  (none recorded)\n");
	else
		printf("  %-24s %10s %12s %10s %10s\n", "call", "count",
		    "total ms", "mean ms", "max ms");
	for (size_t k = 0; v != NULL && k < s.blocked.n && k < top; k++)
		printf("  %-24s %10" PRIu64 " %12.3f %10.3f %10.3f\n",
		    rtprof_esc(e, sizeof(e), v[k].key), v[k].n, v[k].total,
		    v[k].total / (double)v[k].n, v[k].max);
	free(v);
	if (s.blocked.n != 0)
		print_by_stack(&s, top);
	sblock_print(s.off, stdout, top);
	print_cpu(&s, top);
	v = agg_sorted(&s.sig_blocked);
	if (s.sig_blocked.n != 0)
		printf("\nSamples without a stack, the sampling signal "
		    "blocked:\n");
	for (size_t k = 0; v != NULL && k < s.sig_blocked.n && k < top; k++)
		printf("  %" PRIu64 " samples of thread %s had the signal "
		    "blocked\n", v[k].n, v[k].key);
	if (s.sig_blocked.n > top)
		printf("  (%zu more threads)\n", s.sig_blocked.n - top);
	free(v);
	printf("\nTop functions by self samples:\n");
	v = agg_sorted(&s.self);
	for (size_t k = 0, all = 0; v != NULL && k < s.self.n && k < top;
	    k++) {
		if (k == 0)
			for (size_t j = 0; j < s.self.n; j++)
				all += v[j].n;
		printf("  %8" PRIu64 "  %5.1f%%  %s\n", v[k].n,
		    100.0 * (double)v[k].n / (double)all,
		    rtprof_esc(e, sizeof(e), v[k].key));
	}
	free(v);
out:
	sblock_free(s.off);
	agg_free(&s.blocked);
	agg_free(&s.bstack);
	agg_free(&s.cpu);
	agg_free(&s.self);
	agg_free(&s.folded_stacks);
	agg_free(&s.sig_blocked);
	free(s.str);
	free(s.th);
	rtprof_idmap_free(&s.str_idx);
	rtprof_idmap_free(&s.th_idx);
	return status;
}
