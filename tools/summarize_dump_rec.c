/*
 * summarize_dump_rec.c - aggregating, dumps: a dump's records into the
 * tables of `rtprof summarize`.
 *
 * Pipeline (summarize_int.h): summarize_dump.c's second pass -> here ->
 * summarize_agg.c's tables and the off-CPU table (summarize_block.c). A
 * Blocked marker waits one record of its stream for its BACKTRACE (by
 * stack); a SAMPLE gives its leaf (self) and, with --folded, its stack,
 * which its SAMEs repeat; a KSTACK gives the kernel's reason of the
 * off-CPU spell its SAMPLE starts. Frames are named as the converter
 * names them (symbolized at the sample's time, C++ demangled).
 *
 * Context: the tool's main thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kreason.h"
#include "summarize_int.h"

/* Frame @i of the current record as a name (maybe into @buf): C++ names
 * demangled, as the converter writes them. */
static const char *
frame_name(struct sum *s, const struct rtprof_rec_view *v, unsigned i,
    bool leaf_native, char *buf, size_t n)
{
	struct rtprof_sym r;
	uint64_t a = v->frames[i];

	if (rtprof_rec_frame_is_label(v->label_mask, i))
		return sum_str_of(s, a);
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
		return sum_fail(s, -ENOMEM);
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
	    sum_fail(s, -ENOMEM) : 0;
nomem:
	free(line.p);
	return sum_fail(s, -ENOMEM);
}

/* KSTACK: the kernel's stack where the thread went off CPU, for its
 * SAMPLE of the same time, next in the sampler's stream. */
static int
on_kstack(struct sum *s, const struct rtprof_rec_view *r)
{
	size_t ti = sum_thread_of(s, r->tid);
	int id;

	if (s->err != 0)
		return s->err;
	id = rtprof_kreason_of(s->boot_id, r->frames, r->nframes);
	if (id < 0)
		return sum_fail(s, -ENOMEM);
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
				return sum_fail(s, -ENOMEM);
			s->th[ti].off = s->th[ti].kst_id;
			where_of(s, r, s->th[ti].where, WHERE_MAX);
		}
		s->th[ti].kst_on = false;
	}
	if (s->th[ti].off < 0 || !asleep)
		return 0;
	return sblock_add(s->off, rtprof_kreason_short(s->th[ti].off),
	    s->th[ti].where, s->interval_ms) != 0 ? sum_fail(s, -ENOMEM) : 0;
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
	return agg_add(&s->sig_blocked, key, 1) != 0 ? sum_fail(s, -ENOMEM) : 0;
}

int
sum_pend_flush(struct sum *s, size_t ti, const struct rtprof_rec_view *bt)
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
			return sum_fail(s, -ENOMEM);
		}
	}
	rc = blocked_add(s, p.call, p.ms, f.p != NULL ? f.p : "(no stack)");
	free(f.p);
	return rc;
}

/* A Blocked marker (a TYPED record of its schema) of stream @ti: by call
 * now, by stack with the record after it (sum_pend_flush). */
static int
blocked_marker(struct sum *s, const struct rtprof_rec_view *r, size_t ti)
{
	struct pend *p = &s->th[ti].pend;
	double ms;
	const char *call;

	if ((int)r->id != s->blocked_type || r->nvals < 1 ||
	    r->vals[0].kind != RTPROF_VAL_STRREF || s->tps <= 0)
		return 0;
	ms = (double)(r->t1 - r->t0) / s->tps * 1e3;
	call = sum_str_of(s, r->vals[0].v.ref);
	if (agg_add(&s->blocked, call, ms) != 0)
		return sum_fail(s, -ENOMEM);
	p->on = true;
	s->npend++;
	p->t0 = r->t0;
	p->ms = ms;
	snprintf(p->call, sizeof(p->call), "%s", call);
	return 0;
}

/* The CPU time of a SAMPLE or SAME, per thread. */
static int
cpu_add(struct sum *s, const struct rtprof_rec_view *r, size_t ti)
{
	char key[160];

	snprintf(key, sizeof(key), "%s (pid %" PRId64 ") / %s (tid %" PRId64
	    ")", s->process, s->pid, s->th[ti].name, r->tid);
	if (agg_add(&s->cpu, key, (double)r->cpu_ns / 1e6) != 0)
		return sum_fail(s, -ENOMEM);
	return 0;
}

/* A SAMPLE or SAME of the sampled thread (not the stream's). */
static int
sampler_rec(struct sum *s, const struct rtprof_rec_view *r)
{
	size_t ti = sum_thread_of(s, r->tid);

	if (s->err != 0 || off_cpu(s, r, ti) != 0)
		return s->err;
	s->samples++;
	if (cpu_add(s, r, ti) != 0)
		return s->err;
	if (r->kind == RTPROF_REC_SAMPLE &&
	    (r->flags & RTPROF_SAMPLE_SIG_BLOCKED))
		return sig_blocked(s, r, ti);
	if (r->kind == RTPROF_REC_SAMPLE)
		return sample(s, r, ti);
	/* SAME: the thread's previous stack again. */
	if (s->folded && s->th[ti].last != NULL &&
	    agg_add(&s->folded_stacks, s->th[ti].last, 1) != 0)
		return sum_fail(s, -ENOMEM);
	return 0;
}

int
sum_on_record(void *ctx, const struct rtprof_dump_data *d,
    const struct rtprof_rec_view *r)
{
	struct sum *s = ctx;
	size_t ti = 0;

	if (s->err != 0)
		return s->err;
	if (s->npend != 0 || r->kind == RTPROF_REC_TYPED) {
		ti = sum_thread_of(s, d->tid);  /* the stream's thread */
		if (s->err != 0)
			return s->err;
	}
	/* A backtrace belongs to the Blocked marker just before it. */
	if (s->npend != 0 && s->th[ti].pend.on) {
		sum_pend_flush(s, ti, r->kind == RTPROF_REC_BACKTRACE ? r :
		    NULL);
		if (s->err != 0)
			return s->err;
	}
	switch (r->kind) {
	case RTPROF_REC_TYPED:
		return blocked_marker(s, r, ti);
	case RTPROF_REC_KSTACK:
		return on_kstack(s, r);
	case RTPROF_REC_SAMPLE:
	case RTPROF_REC_SAME:
		return sampler_rec(s, r);
	default:
		return 0;
	}
}
