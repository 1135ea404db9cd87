/*
 * summarize_dump.c - reading, dumps: the dump reader's callbacks for
 * `rtprof summarize`, all but the records' (header, threads, schemas,
 * strings, module map).
 *
 * Pipeline (summarize_int.h): the command -> sum_read_dump() -> the codec's
 * reader (dump_reader.c), twice: first the threads' last names and the
 * module map over time (for the symbolizer), then everything, the records
 * going to summarize_dump_rec.c. What a dump alone needs (strings,
 * threads, symbolizer) is cleared after it; the tables stay.
 *
 * Context: the tool's main thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "summarize_int.h"


const char *
sum_str_of(const struct sum *s, uint64_t ref)
{
	int64_t i = rtprof_idmap_get(&s->str_idx, (int64_t)ref);

	return i >= 0 ? s->str[i].text : "?";
}

size_t
sum_thread_of(struct sum *s, int64_t tid)
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
			sum_fail(s, -ENOMEM);
			return 0;
		}
		s->th = n;
		s->thcap = nc;
	}
	if (rtprof_idmap_set(&s->th_idx, tid, s->nth) != 0) {
		sum_fail(s, -ENOMEM);
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
		return sum_fail(s, -ENOMEM);
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
		sum_fail(s, -ENOMEM);
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
			return sum_fail(s, -ENOMEM);
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
		return sum_fail(s, -ENOMEM);
	return s->err;
}

static int
on_thread(void *ctx, const struct rtprof_dump_thread *t)
{
	struct sum *s = ctx;
	size_t i = sum_thread_of(s, t->tid);

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
			return sum_fail(s, -ENOMEM);
		s->str = n;
		s->strcap = nc;
	}
	if (rtprof_idmap_set(&s->str_idx, (int64_t)ref, s->nstr) != 0 ||
	    (s->str[s->nstr].text = strndup(text, len)) == NULL) {
		rtprof_idmap_clear(&s->str_idx);        /* str_of: "?" */
		return sum_fail(s, -ENOMEM);
	}
	s->str[s->nstr++].ref = ref;
	return 0;
}

static void
reset_dump(struct sum *s)
{
	for (size_t i = 0; i < s->nth; i++)
		sum_pend_flush(s, i, NULL);
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
int
sum_read_dump(struct sum *s, const char *path)
{
	struct rtprof_dump_cb cb = {
		.ctx = s,
		.on_header = on_header,
		.on_thread = on_thread, .on_schema = on_schema,
		.on_string = on_string, .on_record = sum_on_record,
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
