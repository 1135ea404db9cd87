/*
 * gecko_frames.c - writing: raw stack tree -> Gecko frame and stack tables.
 *
 * Pipeline (gecko_int.h): when gecko_thread.c writes a thread, its raw
 * stack tree (gecko_stacks.c) is symbolized (symbolize.h: "name (in
 * lib)", C++ demangled, the line from debug info) and folded into
 * de-duplicated frame and stack tables, shared by its samples
 * (gecko_samples.c) and its markers' backtraces (gecko_thread.c).
 *
 * Context: any thread; no shared state (gecko.h per function).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gecko_int.h"
#include "kreason.h"

static const char *const raw_texts[] = {
	"(unknown stack)", "(no label)", "(no stack)",
};

void
otables_free(struct otables *o)
{
	free(o->f);
	free(o->s);
	pmap_free(&o->fidx);
	pmap_free(&o->sidx);
	pmap_free(&o->raw);
	free(o->map);
}

/*
 * The session's symbolizer, created at its first native frame with every
 * module of its MODULES and MODULES_CHANGED frames and their spans (in
 * order: a module's index is its gmodule index) and its IMAGEs. Return: NULL when symbolication is off or failed.
 */
static struct rtprof_symbolizer *
sym_get(struct gsess *g)
{
	const struct rtprof_gecko_symbols *so = &g->file->symopt;

	if (g->sym != NULL || g->sym_tried || so->disabled)
		return g->sym;
	g->sym_tried = true;
	g->sym = rtprof_symbolizer_new(so->sysroot, so->debug_dirs,
	    so->ndebug_dirs);
	if (g->sym == NULL) {
		gecko_fail(g, -ENOMEM);
		return NULL;
	}
	for (size_t i = 0; i < g->nimg; i++)
		if (rtprof_symbolizer_add_image(g->sym, g->img[i].addr,
		    g->img[i].bytes, g->img[i].len) != 0)
			return gecko_fail(g, -ENOMEM), g->sym;
	for (size_t i = 0; i < g->nmod; i++) {
		const struct gmodule *m = &g->mod[i];
		int k = rtprof_symbolizer_add_module(g->sym, m->path, m->start,
		    m->end, m->offset, m->build_id_len != 0 ? m->build_id :
		    NULL, m->build_id_len);

		if (k < 0) {
			gecko_fail(g, -ENOMEM);
			break;
		}
		rtprof_symbolizer_module_span(g->sym, (size_t)k, m->from, m->to);
	}
	return g->sym;
}

/* "0x" and @v in lower-case hex, no leading zeros, into @b (19 bytes);
 * returns the length (what "0x%" PRIx64 prints, without its cost). */
static size_t
hex_addr(char *b, uint64_t v)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[16], *p = tmp + sizeof(tmp);
	size_t n;

	do {
		*--p = hex[v & 15];
		v >>= 4;
	} while (v != 0);
	n = (size_t)(tmp + sizeof(tmp) - p);
	b[0] = '0';
	b[1] = 'x';
	memcpy(b + 2, p, n);
	return n + 2;
}

/*
 * The location of native frame @addr, sampled at @t: "name (in lib)"
 * (*@line from debug info, else 0) when symbolized (in the module mapped
 * there at @t; "lib+0x1a2b (in lib)" for a function without a symbol,
 * named by its start in the unwind tables), else the absolute address in
 * hex (which the front-end can look up in libs). A return address (@ret)
 * is looked up at @addr - 1, inside the call.
 */
static int64_t
native_location(struct gsess *g, struct tout *to, uint64_t addr, bool ret,
    uint64_t t, int32_t *line)
{
	struct rtprof_symbolizer *sym = sym_get(g);
	struct rtprof_sym r;
	char buf[32];

	*line = 0;
	g->sym_addrs++;
	if (sym != NULL && addr > (uint64_t)ret &&
	    rtprof_symbolize_at(sym, ret ? addr - 1 : addr, t, &r) ==
	    RTPROF_SYM_OK && r.name != NULL && r.module >= 0 &&
	    (size_t)r.module < g->nmod) {
		const char *lib = gecko_basename(g->mod[r.module].path);
		char *dm = rtprof_demangle(r.name);
		const char *name = dm != NULL ? dm : r.name;
		size_t nn = strlen(name), nl = strlen(lib);
		char *s = malloc(nn + nl + 7);
		int64_t loc;

		if (s == NULL) {
			free(dm);
			gecko_fail(g, -ENOMEM);
			return 0;
		}
		memcpy(s, name, nn);
		free(dm);
		memcpy(s + nn, " (in ", 5);
		memcpy(s + nn + 5, lib, nl);
		s[nn + 5 + nl] = ')';
		loc = tout_intern(g, to, s, nn + nl + 6);
		free(s);
		g->sym_resolved++;
		/*
		 * r.file is dropped: the Gecko format has no file for a
		 * native frame that the front-end shows. "name (in lib)
		 * (file:line)" is read as native with the suffix thrown
		 * away, "name (file:line)" as JavaScript; the line goes in
		 * frameTable.line. See docs/native-frames.md.
		 */
		*line = r.line > 0 ? r.line : 0;
		return loc;
	}
	return tout_intern(g, to, buf, hex_addr(buf, addr));
}

/*
 * The frameTable row of raw node @n: one row per distinct (location,
 * category); an Idle leaf is a row of its own with the same location (the
 * front-end takes a sample's category from its leaf frame).
 * Return: the row, or -1 (out of memory, latched).
 */
static int64_t
out_frame(struct gsess *g, struct tout *to, struct otables *o,
    const struct grawstack *n)
{
	uint8_t kind = n->kind & RAW_KIND_MASK;
	uint64_t rk = (uint64_t)n->epoch << 8 | n->kind;
	int64_t f = pmap_get(&o->raw, n->value, rk), loc;
	const char *txt;
	char buf[64];
	int32_t line = 0;
	uint32_t cat;
	size_t len;

	if (f >= 0)
		return f;
	switch (kind) {
	case RAW_LABEL:
		txt = string_text(g, n->value, buf, sizeof(buf), &len);
		loc = tout_intern(g, to, txt, len);
		cat = g->cat_user;
		break;
	case RAW_TEXT:
		txt = n->value >= TEXT_KERNEL ?
		    rtprof_kreason_text((int)(n->value - TEXT_KERNEL)) :
		    n->value < sizeof(raw_texts) / sizeof(*raw_texts) ?
		    raw_texts[n->value] : "?";
		loc = tout_intern(g, to, txt, strlen(txt));
		cat = g->cat_default;
		break;
	default:
		loc = native_location(g, to, n->value, kind == RAW_RET,
		    epoch_time(g, n->epoch), &line);
		cat = g->cat_default;
		break;
	}
	if (n->kind & RAW_IDLE)
		cat = g->cat_idle;
	cat = out_cat(g, cat);
	if (g->err != 0)
		return -1;
	f = pmap_get(&o->fidx, (uint64_t)loc, cat);
	if (f < 0) {
		struct oframe of = { .loc = (uint32_t)loc, .cat = cat,
		    .line = line };

		if (VEC_PUSH(g, o->f, o->nf, o->fcap, of) != 0)
			return -1;
		f = (int64_t)o->nf - 1;
		if (pmap_put(&o->fidx, (uint64_t)loc, cat, (size_t)f) != 0)
			return gecko_fail(g, -ENOMEM), -1;
	} else if (o->f[f].line == 0) {
		o->f[f].line = line;
	}
	if (pmap_put(&o->raw, n->value, rk, (size_t)f) != 0)
		return gecko_fail(g, -ENOMEM), -1;
	return f;
}

/*
 * Turn @th's raw stack tree into de-duplicated frame and stack tables.
 * Raw nodes come parents first, so every stack's prefix is created (and
 * numbered) before it.
 */
int
build_tables(struct gsess *g, struct tout *to, struct gthread *th,
    struct otables *o)
{
	o->map = malloc((th->nrs != 0 ? th->nrs : 1) * sizeof(*o->map));
	if (o->map == NULL)
		return gecko_fail(g, -ENOMEM);
	for (size_t i = 0; i < th->nrs; i++) {
		const struct grawstack *n = &th->rs[i];
		int64_t f = out_frame(g, to, o, n), s;
		uint32_t p1;

		if (f < 0)
			return g->err;
		p1 = n->prefix1 != 0 ? o->map[n->prefix1 - 1] + 1 : 0;
		s = pmap_get(&o->sidx, p1, (uint64_t)f);
		if (s < 0) {
			struct ostack os = { .prefix1 = p1,
			    .frame = (uint32_t)f };

			if (VEC_PUSH(g, o->s, o->ns, o->scap, os) != 0)
				return g->err;
			s = (int64_t)o->ns - 1;
			if (pmap_put(&o->sidx, p1, (uint64_t)f, (size_t)s) != 0)
				return gecko_fail(g, -ENOMEM);
		}
		o->map[i] = (uint32_t)s;
	}
	return 0;
}
