/*
 * pprof_write.c - sessions read by pprof_read.c written as one pprof
 * profile (profile.proto of github.com/google/pprof; pprof.h).
 *
 * The profile is streamed: a top-level message is the concatenation of
 * its fields, in any order, so each Function, Mapping, Location, Sample
 * and string is written as soon as it exists (its ids and string indexes
 * only grow), and the scalar fields last. Only functions and strings are
 * kept for the whole profile; locations and mappings per session (each
 * process has its own address space).
 *
 * Context: one writer, one thread at a time.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "esc.h"
#include "gecko_maps.h"
#include "pb.h"
#include "pprof_int.h"
#include "symbolize.h"

/* profile.proto field numbers. */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5, PROFILE_STRING = 6,
	PROFILE_TIME = 9, PROFILE_DURATION = 10, PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12, PROFILE_COMMENT = 13,
	VT_TYPE = 1, VT_UNIT = 2,
	SAMPLE_LOCATION = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3,
	MAPPING_ID = 1, MAPPING_START = 2, MAPPING_LIMIT = 3,
	MAPPING_OFFSET = 4, MAPPING_FILE = 5, MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7, MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINES = 9,
	LOCATION_ID = 1, LOCATION_MAPPING = 2, LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,
	LINE_FUNCTION = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
};

#define OUT_FLUSH (64u << 10)

struct rtprof_pprof_writer {
	int err;                        /* first error, latched */
	const struct rtprof_gecko_filter *flt;
	rtprof_gecko_write_cb write;
	void *ctx;
	struct rtprof_pb out;           /* written, not yet flushed */
	struct rtprof_pb msg, sub;      /* scratch messages */
	struct strtab str;
	size_t nstr_out;                /* strings written */
	struct pmap fn_idx;   /* (name, system_name|file) -> id-1 */
	uint64_t nfn, nloc, nmap;
	bool started;
	int64_t top_wall_ns;            /* the first session's start */
	double range_a, range_b;        /* ms after it */
	uint64_t nsamples, nsess;
	int64_t *comments;              /* string indexes */
	size_t ncomments, commentcap;
	struct pmap pid_idx;            /* (host, pid) -> pid_seen[] */
	int64_t *pid_seen;              /* sessions of it so far */
	size_t npid, pid_cap;
};

/* Per session while it is written. */
struct wsess {
	struct rtprof_pprof_writer *w;
	struct psess *s;
	const struct rtprof_gecko_symbols *so;
	struct rtprof_symbolizer *sym;
	uint64_t *node_loc;             /* node -> location id, 0: not yet */
	uint64_t *mod_map;              /* module -> mapping id, 0: not yet */
	struct pmap loc_idx;  /* (address, function|mapping) */
	uint64_t *stack;                /* a sample's locations, leaf first */
	size_t stackcap;
	int64_t k_thread, k_tid, k_process, k_pid, v_process;
	int64_t k_host, v_host;         /* v_host 0: no hostname */
	int64_t k_session, session;     /* session 0: the pid's first */
};

static int
wfail(struct rtprof_pprof_writer *w, int err)
{
	if (w->err == 0)
		w->err = err;
	return w->err;
}

/* Send what is buffered to the sink (all of it when @all). */
static int
flush(struct rtprof_pprof_writer *w, bool all)
{
	int rc;

	if (w->out.err != 0)
		return wfail(w, w->out.err);
	if (w->err != 0 || w->out.n == 0 || (!all && w->out.n < OUT_FLUSH))
		return w->err;
	rc = w->write(w->ctx, w->out.p, w->out.n);
	rtprof_pb_reset(&w->out);
	return rc != 0 ? wfail(w, rc) : 0;
}

/* Field @field of the profile: the message built in w->msg. */
static void
emit(struct rtprof_pprof_writer *w, unsigned field)
{
	rtprof_pb_msg(&w->out, field, &w->msg);
	rtprof_pb_reset(&w->msg);
	flush(w, false);
}

/*
 * @s[0..@n) with every invalid UTF-8 sequence as U+FFFD, as the Gecko
 * profile's JSON has it (protobuf strings are UTF-8).
 * Return: 0 when @s is valid as it is; 1 with *@out a malloc'ed copy of
 * *@len bytes; -ENOMEM.
 */
static int
utf8_fixed(const char *s, size_t n, char **out, size_t *len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, k, o = 0;
	char *d;

	while (i < n && (k = rtprof_utf8_seq(p + i, n - i)) != 0)
		i += k;
	if (i == n)
		return 0;
	if ((d = malloc(n * 3 + 1)) == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i += k != 0 ? k : 1) {
		k = rtprof_utf8_seq(p + i, n - i);
		memcpy(d + o, k != 0 ? s + i : "\xef\xbf\xbd", k != 0 ? k : 3);
		o += k != 0 ? k : 3;
	}
	*out = d;
	*len = o;
	return 1;
}

/* The string table index of @s[0..@n), written if new. */
static int64_t
str_n(struct rtprof_pprof_writer *w, const char *s, size_t n)
{
	char *fixed = NULL;
	size_t flen = 0;
	int f = utf8_fixed(s, n, &fixed, &flen);
	int64_t i;

	if (f < 0) {
		wfail(w, -ENOMEM);
		return 0;
	}
	i = f != 0 ? strtab_intern(&w->str, fixed, flen) :
	    strtab_intern(&w->str, s, n);
	free(fixed);
	if (i < 0) {
		wfail(w, -ENOMEM);
		return 0;
	}
	for (; w->nstr_out < w->str.n; w->nstr_out++)
		rtprof_pb_bytes(&w->out, PROFILE_STRING,
		    w->str.s[w->nstr_out], w->str.len[w->nstr_out]);
	return i;
}

static int64_t
str_of(struct rtprof_pprof_writer *w, const char *s)
{
	return str_n(w, s, strlen(s));
}

static void
value_type(struct rtprof_pprof_writer *w, unsigned field, const char *type,
    const char *unit)
{
	int64_t t = str_of(w, type), u = str_of(w, unit);

	rtprof_pb_uint_opt(&w->msg, VT_TYPE, (uint64_t)t);
	rtprof_pb_uint_opt(&w->msg, VT_UNIT, (uint64_t)u);
	emit(w, field);
}

static uint64_t ns_of(double ns);

/* The profile's first fields, at the first session (@s: its period). */
static void
start(struct rtprof_pprof_writer *w, const struct psess *s)
{
	w->started = true;
	w->top_wall_ns = s->start_wall_ns;
	str_n(w, "", 0);                /* string_table[0] is "" */
	value_type(w, PROFILE_SAMPLE_TYPE, "samples", "count");
	value_type(w, PROFILE_SAMPLE_TYPE, "cpu", "nanoseconds");
	value_type(w, PROFILE_PERIOD_TYPE, "cpu", "nanoseconds");
	rtprof_pb_uint_opt(&w->out, PROFILE_PERIOD,
	    ns_of((double)s->sample_interval_us * 1000.0));
}

/* ------------------------------------------------------------------ */
/* Functions, mappings, locations                                       */

/* The id of the function (@name[0..@len), @sys, @file), written if new. */
static uint64_t
function_id_n(struct rtprof_pprof_writer *w, const char *name, size_t len,
    const char *sys, const char *file)
{
	int64_t n = str_n(w, name, len), y = str_of(w, sys),
	    f = str_of(w, file);
	uint64_t b = (uint64_t)y << 32 | (uint64_t)f;
	int64_t i = pmap_get(&w->fn_idx, (uint64_t)n, b);

	if (i >= 0)
		return (uint64_t)i + 1;
	if (pmap_put(&w->fn_idx, (uint64_t)n, b, w->nfn) != 0) {
		wfail(w, -ENOMEM);
		return 0;
	}
	rtprof_pb_uint(&w->msg, FUNCTION_ID, ++w->nfn);
	rtprof_pb_uint_opt(&w->msg, FUNCTION_NAME, (uint64_t)n);
	rtprof_pb_uint_opt(&w->msg, FUNCTION_SYSTEM_NAME, (uint64_t)y);
	rtprof_pb_uint_opt(&w->msg, FUNCTION_FILENAME, (uint64_t)f);
	emit(w, PROFILE_FUNCTION);
	return w->nfn;
}

static uint64_t
function_id(struct rtprof_pprof_writer *w, const char *name, const char *sys,
    const char *file)
{
	return function_id_n(w, name, strlen(name), sys, file);
}

/* The mapping id of module @m of the session (-1: none, 0), written at
 * its first use. */
static uint64_t
mapping_id(struct wsess *ws, int64_t m)
{
	struct rtprof_pprof_writer *w = ws->w;
	const struct pmodule *pm;
	char hex[2 * sizeof(pm->build_id) + 1];
	bool sym = !ws->so->disabled;

	if (m < 0 || (size_t)m >= ws->s->nmod)
		return 0;
	if (ws->mod_map[m] != 0)
		return ws->mod_map[m];
	pm = &ws->s->mod[m];
	for (size_t i = 0; i < pm->build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", pm->build_id[i]);
	hex[2 * pm->build_id_len] = '\0';
	ws->mod_map[m] = ++w->nmap;
	rtprof_pb_uint(&w->msg, MAPPING_ID, w->nmap);
	rtprof_pb_uint_opt(&w->msg, MAPPING_START, pm->start);
	rtprof_pb_uint_opt(&w->msg, MAPPING_LIMIT, pm->end);
	rtprof_pb_uint_opt(&w->msg, MAPPING_OFFSET, pm->offset);
	rtprof_pb_uint_opt(&w->msg, MAPPING_FILE, (uint64_t)str_of(w,
	    pm->path));
	rtprof_pb_uint_opt(&w->msg, MAPPING_BUILD_ID, (uint64_t)str_of(w, hex));
	rtprof_pb_uint_opt(&w->msg, MAPPING_HAS_FUNCTIONS, sym);
	rtprof_pb_uint_opt(&w->msg, MAPPING_HAS_FILENAMES, sym);
	rtprof_pb_uint_opt(&w->msg, MAPPING_HAS_LINES, sym);
	emit(w, PROFILE_MAPPING);
	return w->nmap;
}

/* The module mapped at @addr at @t (the last added whose span holds @t,
 * else the last added that covers @addr), or -1. */
static int64_t
module_at(const struct psess *s, uint64_t addr, uint64_t t)
{
	int64_t any = -1;

	for (size_t i = s->nmod; i-- > 0;) {
		const struct pmodule *m = &s->mod[i];

		if (addr < m->start || addr >= m->end)
			continue;
		if (t >= m->from && t < m->to)
			return (int64_t)i;
		if (any < 0)
			any = (int64_t)i;
	}
	return any;
}

/* The id of the location (@addr, @fn, @line, @map), written if new. */
static uint64_t
location_id(struct wsess *ws, uint64_t addr, uint64_t fn, int line,
    uint64_t map)
{
	struct rtprof_pprof_writer *w = ws->w;
	uint64_t b = fn << 32 | (map & 0xffffffffu);
	int64_t i = pmap_get(&ws->loc_idx, addr, b);

	if (i >= 0)
		return (uint64_t)i;
	if (pmap_put(&ws->loc_idx, addr, b, w->nloc + 1) != 0) {
		wfail(w, -ENOMEM);
		return 0;
	}
	rtprof_pb_uint(&w->msg, LOCATION_ID, ++w->nloc);
	rtprof_pb_uint_opt(&w->msg, LOCATION_MAPPING, map);
	rtprof_pb_uint_opt(&w->msg, LOCATION_ADDRESS, addr);
	if (fn != 0) {
		rtprof_pb_reset(&w->sub);
		rtprof_pb_uint(&w->sub, LINE_FUNCTION, fn);
		rtprof_pb_uint_opt(&w->sub, LINE_LINE, line > 0 ?
		    (uint64_t)line : 0);
		rtprof_pb_msg(&w->msg, LOCATION_LINE, &w->sub);
	}
	emit(w, PROFILE_LOCATION);
	return w->nloc;
}

/* The session's symbolizer, as the Gecko converter makes it (sym_get):
 * NULL when symbols are off or it could not be made. */
static struct rtprof_symbolizer *
make_symbolizer(struct wsess *ws)
{
	const struct psess *s = ws->s;
	struct rtprof_symbolizer *sym;

	if (ws->so->disabled)
		return NULL;
	sym = rtprof_symbolizer_new(ws->so->sysroot, ws->so->debug_dirs,
	    ws->so->ndebug_dirs);
	if (sym == NULL) {
		wfail(ws->w, -ENOMEM);
		return NULL;
	}
	for (size_t i = 0; i < s->nimg; i++)
		if (rtprof_symbolizer_add_image(sym, s->img[i].addr,
		    s->img[i].bytes, s->img[i].len) != 0)
			wfail(ws->w, -ENOMEM);
	for (size_t i = 0; i < s->nmod; i++) {
		const struct pmodule *m = &s->mod[i];
		int k = rtprof_symbolizer_add_module(sym, m->path, m->start,
		    m->end, m->offset, m->build_id_len != 0 ? m->build_id :
		    NULL, m->build_id_len);

		if (k < 0) {
			wfail(ws->w, -ENOMEM);
			break;
		}
		rtprof_symbolizer_module_span(sym, (size_t)k, m->from, m->to);
	}
	return sym;
}

/*
 * The location of native frame @n: symbolized as the Gecko converter's
 * native_location() does (a return address looked up at address - 1),
 * named without its " (in lib)": the lib is the mapping.
 */
static uint64_t
native_loc(struct wsess *ws, const struct pnode *n)
{
	const struct psess *s = ws->s;
	bool ret = n->kind == PNODE_RET;
	uint64_t t = n->epoch == 0 || s->nchg == 0 ? 0 :
	    s->chg[(n->epoch <= s->nchg ? n->epoch : s->nchg) - 1];
	uint64_t at = ret && n->value > 0 ? n->value - 1 : n->value, fn;
	struct rtprof_sym r;
	char hex[32];

	if (ws->sym == NULL)            /* for pprof to symbolize */
		return location_id(ws, at, 0, 0,
		    mapping_id(ws, module_at(s, at, t)));
	if (n->value > (uint64_t)ret && rtprof_symbolize_at(ws->sym, at, t,
	    &r) == RTPROF_SYM_OK && r.name != NULL && r.module >= 0 &&
	    (size_t)r.module < s->nmod) {
		char *dm = rtprof_demangle(r.name);

		fn = function_id(ws->w, dm != NULL ? dm : r.name, r.name,
		    r.file != NULL ? r.file : "");
		free(dm);
		return location_id(ws, at, fn, r.line,
		    mapping_id(ws, r.module));
	}
	snprintf(hex, sizeof(hex), "0x%" PRIx64, n->value);
	fn = function_id(ws->w, hex, "", "");
	return location_id(ws, at, fn, 0,
	    mapping_id(ws, module_at(s, at, t)));
}

/* The location of a label or text frame: no mapping, one function. */
static uint64_t
named_loc(struct wsess *ws, const struct pnode *n)
{
	const struct psess *s = ws->s;
	char buf[64];
	const char *name = buf;
	size_t len;
	int64_t i;

	if (n->kind == PNODE_TEXT) {
		name = n->value < PTEXT_N ? rtprof_pprof_texts[n->value] : "?";
		len = strlen(name);
	} else if ((i = rtprof_idmap_get(&s->str_idx,
	    (int64_t)n->value)) >= 0) {
		name = s->str[i].text;
		len = s->str[i].len;
	} else {
		snprintf(buf, sizeof(buf), "(unknown string 0x%" PRIx64 ")",
		    n->value);
		len = strlen(buf);
	}
	return location_id(ws, 0, function_id_n(ws->w, name, len, "", ""), 0,
	    0);
}

/* Node @i's location id (nodes are made parents first, any order works). */
static uint64_t
node_loc(struct wsess *ws, uint32_t i)
{
	const struct pnode *n = &ws->s->node[i];

	if (ws->node_loc[i] == 0)
		ws->node_loc[i] = n->kind == PNODE_RET || n->kind == PNODE_PC ?
		    native_loc(ws, n) : named_loc(ws, n);
	return ws->node_loc[i];
}

/* ------------------------------------------------------------------ */
/* Samples                                                              */

static void
label(struct rtprof_pprof_writer *w, int64_t key, int64_t str, int64_t num,
    bool is_num)
{
	rtprof_pb_reset(&w->sub);
	rtprof_pb_uint(&w->sub, LABEL_KEY, (uint64_t)key);
	if (is_num)
		rtprof_pb_uint(&w->sub, LABEL_NUM, (uint64_t)num);
	else
		rtprof_pb_uint_opt(&w->sub, LABEL_STR, (uint64_t)str);
	rtprof_pb_msg(&w->msg, SAMPLE_LABEL, &w->sub);
}

/* Is thread @t kept by the filter's names? The main thread always is,
 * as in the Gecko profile. */
static bool
thread_kept(const struct rtprof_pprof_writer *w, const struct pthread *t)
{
	if (w->flt == NULL || w->flt->nthreads == 0 || t->main)
		return true;
	for (size_t i = 0; i < w->flt->nthreads; i++)
		if (t->name != NULL && strcmp(t->name, w->flt->threads[i]) == 0)
			return true;
	return false;
}

static void
write_sample(struct wsess *ws, const struct pagg *a)
{
	struct rtprof_pprof_writer *w = ws->w;
	const struct pthread *t = &ws->s->th[a->thread];
	uint64_t v[2] = { a->count, a->cpu_ns };
	size_t n = 0;
	char tname[32];

	for (uint32_t i1 = a->node + 1; i1 != 0 && w->err == 0;
	    i1 = ws->s->node[i1 - 1].prefix1) {
		if (gecko_grow((void **)&ws->stack, &ws->stackcap, n + 1,
		    sizeof(*ws->stack)) != 0) {
			wfail(w, -ENOMEM);
			return;
		}
		ws->stack[n++] = node_loc(ws, i1 - 1);
	}
	snprintf(tname, sizeof(tname), "thread %" PRId64, t->tid);
	rtprof_pb_packed(&w->msg, SAMPLE_LOCATION, ws->stack, n);
	rtprof_pb_packed(&w->msg, SAMPLE_VALUE, v, 2);
	label(w, ws->k_thread, str_of(w, t->name != NULL ? t->name : tname),
	    0, false);
	label(w, ws->k_tid, 0, t->tid, true);
	label(w, ws->k_process, ws->v_process, 0, false);
	label(w, ws->k_pid, 0, ws->s->pid, true);
	if (ws->v_host != 0)
		label(w, ws->k_host, ws->v_host, 0, false);
	if (ws->session != 0)
		label(w, ws->k_session, 0, ws->session, true);
	emit(w, PROFILE_SAMPLE);
	w->nsamples += a->count;
}

/* With a time window: the samples inside it, aggregated. */
static int
window_samples(struct wsess *ws, double delta)
{
	const struct rtprof_gecko_filter *f = ws->w->flt;
	struct psess *s = ws->s;

	for (size_t i = 0; i < s->ntimed; i++) {
		const struct ptimed *p = &s->timed[i];
		double t = rtprof_pprof_ms(s, p->t) + delta;

		if ((f != NULL && f->has_from && t < f->from_ms) ||
		    (f != NULL && f->has_to && t > f->to_ms))
			continue;
		if (rtprof_pprof_agg_add(s, p->thread, p->node, 1,
		    p->cpu_ns) != 0)
			return wfail(ws->w, -ENOMEM);
	}
	return 0;
}

/* The session's span in the top-level ms, cut to the window. */
static void
note_range(struct rtprof_pprof_writer *w, const struct psess *s, double delta)
{
	const struct rtprof_gecko_filter *f = w->flt;
	double a = delta, b = rtprof_pprof_ms(s, rtprof_pprof_end_ticks(s)) +
	    delta;

	if (f != NULL && f->has_from && a < f->from_ms)
		a = f->from_ms;
	if (f != NULL && f->has_to && b > f->to_ms)
		b = f->to_ms;
	if (b < a)
		b = a;
	if (w->nsess == 0 || a < w->range_a)
		w->range_a = a;
	if (w->nsess == 0 || b > w->range_b)
		w->range_b = b;
}

static void
comment(struct rtprof_pprof_writer *w, const char *text)
{
	int64_t i = str_of(w, text);

	if (gecko_grow((void **)&w->comments, &w->commentcap,
	    w->ncomments + 1, sizeof(*w->comments)) != 0) {
		wfail(w, -ENOMEM);
		return;
	}
	w->comments[w->ncomments++] = i;
}

/*
 * The how-manieth session of pid @pid on host @host this is: 0 for the
 * first, then 2, 3, ... (a program that recorded twice, or boards of a
 * fleet that agree on a hostname): a label tells them apart, as the Gecko
 * profile's "NAME (session N)".
 */
static int64_t
session_of(struct rtprof_pprof_writer *w, int64_t host, int64_t pid)
{
	int64_t i = pmap_get(&w->pid_idx, (uint64_t)host, (uint64_t)pid);

	if (i >= 0)
		return ++w->pid_seen[i];
	if (gecko_grow((void **)&w->pid_seen, &w->pid_cap, w->npid + 1,
	    sizeof(*w->pid_seen)) != 0 ||
	    pmap_put(&w->pid_idx, (uint64_t)host, (uint64_t)pid,
	    w->npid) != 0) {
		wfail(w, -ENOMEM);
		return 0;
	}
	w->pid_seen[w->npid++] = 1;
	return 0;
}

static int
write_session(struct rtprof_pprof_writer *w, struct psess *s,
    const struct rtprof_gecko_symbols *so)
{
	struct wsess ws = { .w = w, .s = s, .so = so };
	char buf[512];
	double delta;

	if (!w->started)
		start(w, s);
	delta = rtprof_ns_diff(s->start_wall_ns, w->top_wall_ns) / 1e6;
	ws.node_loc = calloc(s->nnode + 1, sizeof(*ws.node_loc));
	ws.mod_map = calloc(s->nmod + 1, sizeof(*ws.mod_map));
	if (ws.node_loc == NULL || ws.mod_map == NULL)
		wfail(w, -ENOMEM);
	if (s->ntimed != 0)
		window_samples(&ws, delta);
	ws.sym = w->err == 0 ? make_symbolizer(&ws) : NULL;
	ws.k_thread = str_of(w, "thread");
	ws.k_tid = str_of(w, "tid");
	ws.k_process = str_of(w, "process");
	ws.k_pid = str_of(w, "pid");
	ws.v_process = str_of(w, s->process);
	ws.k_host = str_of(w, "host");
	ws.v_host = str_of(w, s->host);
	ws.k_session = str_of(w, "session");
	ws.session = session_of(w, ws.v_host, s->pid);
	for (size_t i = 0; i < s->nagg && w->err == 0; i++)
		if (thread_kept(w, &s->th[s->agg[i].thread]))
			write_sample(&ws, &s->agg[i]);
	note_range(w, s, delta);
	snprintf(buf, sizeof(buf), "%s (pid %" PRId64 "): %" PRIu64 " samples"
	    " (%s, every %" PRIu64 " us)", s->process, s->pid, s->nsamples,
	    s->sampling[0] != '\0' ? s->sampling : "sampling",
	    s->sample_interval_us);
	comment(w, buf);
	w->nsess++;
	rtprof_symbolizer_free(ws.sym);
	pmap_free(&ws.loc_idx);
	free(ws.node_loc);
	free(ws.mod_map);
	free(ws.stack);
	return flush(w, false);
}

/* ------------------------------------------------------------------ */
/* API                                                                  */

int
rtprof_pprof_writer_new(struct rtprof_pprof_writer **out,
    const struct rtprof_gecko_filter *filter, rtprof_gecko_write_cb write,
    void *ctx)
{
	struct rtprof_pprof_writer *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return -ENOMEM;
	w->flt = filter;
	w->write = write;
	w->ctx = ctx;
	*out = w;
	return 0;
}

int
rtprof_pprof_writer_add(struct rtprof_pprof_writer *w,
    struct rtprof_pprof_dump *d)
{
	size_t n = 0;

	if (w->err != 0)
		return w->err;
	if (d->err != 0)
		return wfail(w, d->err);
	if (w->flt != NULL && (w->flt->has_from || w->flt->has_to) &&
	    !d->keep_times)
		return -EINVAL;
	for (size_t i = 0; i < d->nsess && w->err == 0; i++) {
		if (!d->sess[i]->have_header)
			continue;
		write_session(w, d->sess[i], &d->symopt);
		n++;
	}
	if (w->err == 0 && n == 0)
		return -ENODATA;
	return w->err;
}

/* @ns as an int64 field: 0 when out of [0, INT64_MAX] or not finite (a
 * dump's clock may say anything). */
static uint64_t
ns_of(double ns)
{
	if (!(ns >= 0.0 && ns < 9.2e18))
		return 0;
	return (uint64_t)llround(ns);
}

static void
writer_free(struct rtprof_pprof_writer *w)
{
	rtprof_pb_free(&w->out);
	rtprof_pb_free(&w->msg);
	rtprof_pb_free(&w->sub);
	strtab_free(&w->str);
	pmap_free(&w->fn_idx);
	free(w->comments);
	pmap_free(&w->pid_idx);
	free(w->pid_seen);
	free(w);
}

int
rtprof_pprof_writer_finish(struct rtprof_pprof_writer *w)
{
	char buf[128];
	int rc;

	if (w == NULL)
		return 0;
	if (w->err == 0 && w->nsess == 0)
		w->err = -ENODATA;
	if (w->err == 0) {
		snprintf(buf, sizeof(buf), "rtprof: %" PRIu64 " samples of %"
		    PRIu64 " process(es)", w->nsamples, w->nsess);
		comment(w, buf);
		for (size_t i = 0; i < w->ncomments; i++)
			rtprof_pb_uint(&w->out, PROFILE_COMMENT,
			    (uint64_t)w->comments[i]);
		rtprof_pb_uint_opt(&w->out, PROFILE_TIME, ns_of(
		    (double)w->top_wall_ns + w->range_a * 1e6));
		rtprof_pb_uint_opt(&w->out, PROFILE_DURATION, ns_of(
		    (w->range_b - w->range_a) * 1e6));
		flush(w, true);
	}
	rc = w->err;
	writer_free(w);
	return rc;
}
