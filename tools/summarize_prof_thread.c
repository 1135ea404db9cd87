/*
 * summarize_prof_thread.c - aggregating, profiles: a profile's thread into
 * the tables of `rtprof summarize`.
 *
 * Pipeline (summarize_int.h): summarize_prof.c's second pass reads a
 * thread whole (a DOM, summarize_json.h) -> here -> summarize_agg.c's
 * tables and the off-CPU table (summarize_block.c). Read as a dump would
 * be: Blocked markers by call and by their cause's stack; the samples'
 * CPU deltas per thread; the leaf of each on-CPU sample (the thread's
 * first, and any other whose leaf is not Idle and whose CPU delta reaches
 * the sampler's own 2%-of-a-tick limit); "kernel: ..." leaves as off-CPU
 * time by reason; with --folded, every sample's stack. Function names
 * lose their " (in lib)" as a dump's do.
 *
 * Context: the tool's main thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "summarize_int.h"

#define PSTACK_MAX 512

/* A thread's tables, read from its DOM, and what names it. */
struct pthread {
	const struct jdom *d;
	const struct jv *strings;
	struct jtab frames, stacks;
	const char *pname, *tname;      /* as a dump's summary names them */
	double pid, tid;
	double interval;                /* one sample's ms */
	int64_t fr[PSTACK_MAX];         /* a stack's frames, leaf first */
};

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
	    sum_fail(s, -ENOMEM) : 0;
}

/* The stack of Blocked marker data @data: its cause's, or the first
 * sample of its own stack table; -1 none. */
static int64_t
marker_stack(const struct jdom *d, const struct jv *data)
{
	static const char *const bcols[] = { "stack" };
	const struct jv *c = jget(d, data, "cause");
	struct jtab bt;

	if (c != NULL)
		return jidx(jget(d, c, "stack"));
	c = jget(d, jget(d, data, "stack"), "samples");
	if (c == NULL)
		return -1;
	jtab_open(d, c, bcols, 1, &bt);
	return jidx(jcell(d, &bt, 0, 0));
}

/* Blocked call @call (@ms) by stack @st: its frames' names, innermost
 * first, separated by KEY_SEP. */
static int
marker_by_stack(struct sum *s, struct pthread *t, const char *call,
    double ms, int64_t st)
{
	struct sbuf f = { 0 };
	size_t n = pstack(t, st, t->fr, PSTACK_MAX);
	int rc;

	for (size_t k = 0; k < n; k++) {
		size_t len;
		const char *loc = ploc(t, t->fr[k], &len);

		if ((k != 0 && sb_add(&f, "\n", 1) != 0) ||
		    sb_add(&f, loc, len) != 0) {
			free(f.p);
			return sum_fail(s, -ENOMEM);
		}
	}
	rc = blocked_add(s, call, ms, f.p != NULL ? f.p : "(no stack)");
	free(f.p);
	return rc;
}

/* Row @i of the markers table @mk: a Blocked marker (an interval with a
 * call), by call, and by stack when it has one. */
static int
prof_marker(struct sum *s, struct pthread *t, const struct jtab *mk,
    size_t i)
{
	const struct jdom *d = t->d;
	const char *name = jstr(d, jat(d, t->strings, (size_t)jidx(
	    jcell(d, mk, i, 0))));
	const struct jv *data = jcell(d, mk, i, 4);
	const char *call = jstr(d, jget(d, data, "call"));
	double a, b, ms;
	int64_t st;

	if (name == NULL || strcmp(name, "Blocked") != 0 ||
	    call == NULL || jidx(jcell(d, mk, i, 3)) != 1 ||
	    !jnum(jcell(d, mk, i, 1), &a) || !jnum(jcell(d, mk, i, 2), &b))
		return 0;
	ms = b - a;
	if (agg_add(&s->blocked, call, ms) != 0)
		return sum_fail(s, -ENOMEM);
	st = marker_stack(d, data);
	if (st < 0)
		return blocked_add(s, call, ms, NULL);
	return marker_by_stack(s, t, call, ms, st);
}

/* An on-CPU sample's leaf (@len bytes of @leaf): a self sample. */
static int
prof_self(struct sum *s, const char *leaf, size_t len)
{
	char *lf = strndup(leaf, len);

	if (lf == NULL || agg_add(&s->self, lf, 1) != 0) {
		free(lf);
		return sum_fail(s, -ENOMEM);
	}
	free(lf);
	return 0;
}

/* A sample's folded line, "process;thread;outer;...;leaf" (t->fr[0..@n),
 * none when @empty). */
static int
prof_folded(struct sum *s, const struct pthread *t, size_t n, bool empty)
{
	struct sbuf line = { 0 };
	int rc = sb_add_frame(&line, t->pname) != 0 ||
	    sb_add(&line, ";", 1) != 0 || sb_add_frame(&line, t->tname) != 0;

	for (size_t k = n; rc == 0 && !empty && k-- > 0;) {
		size_t len;
		const char *loc = ploc(t, t->fr[k], &len);
		char *nm = strndup(loc, len);

		rc = nm == NULL || sb_add(&line, ";", 1) != 0 ||
		    sb_add_frame(&line, nm) != 0;
		free(nm);
	}
	if (rc == 0)
		rc = agg_add(&s->folded_stacks, line.p, 1);
	free(line.p);
	return rc != 0 ? sum_fail(s, -ENOMEM) : 0;
}

/* Row @i of the samples table @smp: its CPU delta (*@cpu_ms, in ms), off
 * CPU by the kernel's reason, self when on CPU (what the dump has as a
 * SAMPLE, not a SAME), and its folded line. */
static int
prof_sample(struct sum *s, const struct pctx *pc, struct pthread *t,
    const struct jtab *smp, size_t i, double *cpu_ms)
{
	const struct jdom *d = t->d;
	int64_t st = jidx(jcell(d, smp, i, 0)), cat = -1;
	double cpu = 0, unit = pc->cpu_ns_per_unit;
	size_t n = st >= 0 ? pstack(t, st, t->fr, PSTACK_MAX) : 0, len;
	const char *leaf = "(no stack)";
	bool on_cpu, empty;

	s->samples++;
	jnum(jcell(d, smp, i, 1), &cpu);
	if (unit > 0)
		*cpu_ms += cpu * unit / 1e6;
	if (n != 0) {
		leaf = ploc(t, t->fr[0], &len);
		cat = jidx(jcell(d, &t->frames, (size_t)t->fr[0], 1));
	} else {
		len = strlen(leaf);
	}
	/* (no stack) as its only frame: no frame at all. */
	empty = n == 0 || (n == 1 && strcmp(leaf, "(no stack)") == 0);
	if (n != 0 && prof_off_cpu(s, t, t->fr, n, leaf, len,
	    t->interval) != 0)
		return s->err;
	on_cpu = i == 0 || ((pc->idle_cat < 0 || cat != pc->idle_cat) &&
	    (unit <= 0 || cpu * unit >= t->interval * 1e6 / 50));
	if (on_cpu && prof_self(s, leaf, len) != 0)
		return s->err;
	if (s->folded && strcmp(leaf, "(unknown stack)") != 0)
		return prof_folded(s, t, n, empty);
	return 0;
}

/* The thread's CPU time: one entry per thread, as in a dump. */
static int
prof_cpu(struct sum *s, const struct pthread *t, double cpu_ms)
{
	char key[200], pl[160];

	snprintf(key, sizeof(key), "%s / %s (tid %.0f)",
	    proc_label(pl, sizeof(pl), t->pname, t->pid), t->tname, t->tid);
	if (agg_add(&s->cpu, key, cpu_ms) != 0)
		return sum_fail(s, -ENOMEM);
	return 0;
}

/* The thread's names, pid, tid, sample interval and tables (@t->d's
 * root, an object). */
static void
prof_thread_open(struct pthread *t, const struct pctx *pc,
    const struct pmeta *pm)
{
	static const char *const fcols[] = { "location", "category" };
	static const char *const scols[] = { "prefix", "frame" };
	const struct jdom *d = t->d;
	const struct jv *th = &d->root;

	t->pname = jstr(d, jget(d, th, "processName"));
	t->tname = jstr(d, jget(d, th, "name"));
	t->interval = pm->interval_ms > 0 ? pm->interval_ms :
	    pc->top.interval_ms > 0 ? pc->top.interval_ms : 1;
	jnum(jget(d, th, "pid"), &t->pid);
	jnum(jget(d, th, "tid"), &t->tid);
	if (t->pname == NULL || t->pname[0] == '\0')
		t->pname = "?";
	if (t->tname == NULL)
		t->tname = "?";
	else if (strcmp(t->tname, "GeckoMain") == 0)
		t->tname = "main";      /* as the dump names it */
	t->strings = jget(d, th, "stringTable");
	jtab_open(d, jget(d, th, "frameTable"), fcols, 2, &t->frames);
	jtab_open(d, jget(d, th, "stackTable"), scols, 2, &t->stacks);
}

int
sum_prof_thread(struct sum *s, struct pctx *pc, const struct pmeta *pm)
{
	static const char *const smpcols[] = { "stack", "threadCPUDelta" };
	static const char *const mcols[] = { "name", "startTime", "endTime",
	    "phase", "data" };
	const struct jdom *d = &pc->d;
	struct pthread t = { .d = d };
	struct jtab smp, mk;
	double cpu_ms = 0;
	bool sampled;

	if (d->root.t != J_OBJ)
		return -1;
	prof_thread_open(&t, pc, pm);
	jtab_open(d, jget(d, &d->root, "samples"), smpcols, 2, &smp);
	jtab_open(d, jget(d, &d->root, "markers"), mcols, 5, &mk);
	for (size_t i = 0; i < mk.nrows; i++)
		if (prof_marker(s, &t, &mk, i) != 0)
			return s->err;
	/* Samples of a thread the sampler saw (it has CPU deltas). */
	sampled = smp.col[1] >= 0;
	for (size_t i = 0; sampled && i < smp.nrows; i++)
		if (prof_sample(s, pc, &t, &smp, i, &cpu_ms) != 0)
			return s->err;
	if (sampled && smp.nrows != 0 && pc->cpu_ns_per_unit > 0)
		return prof_cpu(s, &t, cpu_ms);
	return 0;
}
