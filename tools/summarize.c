/*
 * summarize.c - `rtprof summarize`: a dump read for people.
 *
 *   rtprof summarize [--top N] [--folded] [--sysroot DIR] DUMP...
 *
 * Reads dumps with the codec's reader (no profile is built) and prints:
 * time blocked by call ("Blocked" markers of `rtprof record`: count, total,
 * mean, longest), CPU time per thread (the sampler's CPU deltas), and the
 * top functions by self samples (the leaf frame of each sample, symbolized
 * like the converter does); with --folded, folded stacks instead ("a;b;c
 * N" lines, outermost first, for flame-graph tools). Several dumps (one per
 * process) are aggregated.
 *
 * Context: the tool's main thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dump_reader.h"
#include "summarize.h"
#include "symbolize.h"

#define PROG "rtprof summarize"

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

/* What the reader callbacks fill, across dumps. */
struct sum {
	const char *sysroot;
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
	int blocked_type;               /* SCHEMA id of "Blocked", -1 */
	struct { int64_t tid; char name[64]; char *last; } *th;
	size_t nth, thcap;
	/* Across dumps: */
	struct agg blocked, cpu, self, folded_stacks;
	uint64_t samples;
};

static const char *
str_of(const struct sum *s, uint64_t ref)
{
	for (size_t i = 0; i < s->nstr; i++)
		if (s->str[i].ref == ref)
			return s->str[i].text;
	return "?";
}

/* The thread entry of @tid (created). */
static size_t
thread_of(struct sum *s, int64_t tid)
{
	for (size_t i = 0; i < s->nth; i++)
		if (s->th[i].tid == tid)
			return i;
	if (s->nth == s->thcap) {
		size_t nc = s->thcap ? s->thcap * 2 : 16;
		void *n = realloc(s->th, nc * sizeof(*s->th));

		if (n == NULL) {
			s->err = -ENOMEM;
			return 0;
		}
		s->th = n;
		s->thcap = nc;
	}
	memset(&s->th[s->nth], 0, sizeof(s->th[s->nth]));
	s->th[s->nth].tid = tid;
	snprintf(s->th[s->nth].name, sizeof(s->th[s->nth].name), "thread %"
	    PRId64, tid);
	return s->nth++;
}

static int
on_header(void *ctx, const struct rtprof_dump_header *h)
{
	struct sum *s = ctx;

	s->tps = h->clock.ticks_per_second;
	s->pid = h->pid;
	snprintf(s->process, sizeof(s->process), "%s",
	    h->process != NULL ? h->process : "?");
	return 0;
}

static int
on_modules(void *ctx, const struct rtprof_dump_module *m, size_t n)
{
	struct sum *s = ctx;

	if (s->sym == NULL &&
	    (s->sym = rtprof_symbolizer_new(s->sysroot, NULL, 0)) == NULL)
		return s->err = -ENOMEM;
	for (size_t i = 0; i < n; i++)
		rtprof_symbolizer_add_module(s->sym, m[i].path, m[i].start,
		    m[i].end, m[i].offset, m[i].build_id, m[i].build_id_len);
	return 0;
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

	if (s->nstr == s->strcap) {
		size_t nc = s->strcap ? s->strcap * 2 : 256;
		void *n = realloc(s->str, nc * sizeof(*s->str));

		if (n == NULL)
			return s->err = -ENOMEM;
		s->str = n;
		s->strcap = nc;
	}
	if ((s->str[s->nstr].text = strndup(text, len)) == NULL)
		return s->err = -ENOMEM;
	s->str[s->nstr++].ref = ref;
	return 0;
}

/* Frame @i of the current record as a name (into @buf). */
static const char *
frame_name(struct sum *s, const struct rtprof_rec_view *v, unsigned i,
    bool leaf_native, char *buf, size_t n)
{
	struct rtprof_sym r;
	uint64_t a = v->frames[i];

	if (rtprof_rec_frame_is_label(v->label_mask, i))
		return str_of(s, a);
	if (s->sym != NULL && a > 0 && rtprof_symbolize(s->sym,
	    leaf_native ? a : a - 1, &r) == RTPROF_SYM_OK && r.name != NULL)
		return r.name;
	snprintf(buf, n, "0x%" PRIx64, a);
	return buf;
}

/* A SAMPLE: its leaf (self) and, with --folded, the whole stack. */
static int
sample(struct sum *s, const struct rtprof_rec_view *r, size_t ti)
{
	char buf[32], *line;
	size_t len = 0, cap = 256;
	unsigned last_native = r->nframes;
	const char *name;

	for (unsigned i = 0; i < r->nframes; i++)
		if (!rtprof_rec_frame_is_label(r->label_mask, i))
			last_native = i;
	name = r->nframes == 0 ? "(no stack)" : frame_name(s, r,
	    r->nframes - 1, r->nframes - 1 == last_native, buf, sizeof(buf));
	if (agg_add(&s->self, name, 1) != 0)
		return s->err = -ENOMEM;
	if (!s->folded)
		return 0;
	/* "process;thread;outer;...;leaf" */
	if ((line = malloc(cap)) == NULL)
		return s->err = -ENOMEM;
	len = (size_t)snprintf(line, cap, "%s;%s", s->process,
	    s->th[ti].name);
	for (unsigned i = 0; i < r->nframes; i++) {
		const char *f = frame_name(s, r, i, i == last_native, buf,
		    sizeof(buf));
		size_t fl = strlen(f);

		if (len + fl + 2 > cap) {
			char *n;

			cap = (len + fl + 2) * 2;
			if ((n = realloc(line, cap)) == NULL) {
				free(line);
				return s->err = -ENOMEM;
			}
			line = n;
		}
		line[len++] = ';';
		for (size_t k = 0; k < fl; k++)         /* ';' separates */
			line[len++] = f[k] == ';' ? ':' : f[k];
		line[len] = '\0';
	}
	free(s->th[ti].last);
	s->th[ti].last = line;
	return agg_add(&s->folded_stacks, line, 1) != 0 ?
	    (s->err = -ENOMEM) : 0;
}

static int
on_record(void *ctx, const struct rtprof_dump_data *d,
    const struct rtprof_rec_view *r)
{
	struct sum *s = ctx;
	size_t ti;

	(void)d;
	switch (r->kind) {
	case RTPROF_REC_TYPED:
		if ((int)r->id != s->blocked_type || r->nvals < 1 ||
		    r->vals[0].kind != RTPROF_VAL_STRREF || s->tps <= 0)
			return 0;
		return agg_add(&s->blocked, str_of(s, r->vals[0].v.ref),
		    (double)(r->t1 - r->t0) / s->tps * 1e3) != 0 ?
		    (s->err = -ENOMEM) : 0;
	case RTPROF_REC_SAMPLE:
	case RTPROF_REC_SAME:
		ti = thread_of(s, r->tid);
		if (s->err != 0)
			return s->err;
		s->samples++;
		{
			char key[160];

			snprintf(key, sizeof(key), "%s (pid %" PRId64 ") / %s "
			    "(tid %" PRId64 ")", s->process, s->pid,
			    s->th[ti].name, r->tid);
			if (agg_add(&s->cpu, key, (double)r->cpu_ns / 1e6) != 0)
				return s->err = -ENOMEM;
		}
		if (r->kind == RTPROF_REC_SAMPLE)
			return sample(s, r, ti);
		/* SAME: the thread's previous stack again. */
		if (s->folded && s->th[ti].last != NULL &&
		    agg_add(&s->folded_stacks, s->th[ti].last, 1) != 0)
			return s->err = -ENOMEM;
		return 0;
	default:
		return 0;
	}
}

static void
reset_dump(struct sum *s)
{
	rtprof_symbolizer_free(s->sym);
	s->sym = NULL;
	for (size_t i = 0; i < s->nstr; i++)
		free(s->str[i].text);
	s->nstr = 0;
	for (size_t i = 0; i < s->nth; i++)
		free(s->th[i].last);
	s->nth = 0;
	s->blocked_type = -1;
	s->tps = 0;
}

void
summarize_usage(FILE *f)
{
	fprintf(f,
	    "usage: rtprof summarize [--top N] [--folded] [--sysroot DIR] "
	    "DUMP...\n"
	    "Time blocked by call, CPU time per thread and the top functions\n"
	    "by self samples of rtprof dumps (several: aggregated).\n"
	    "  --top N         rows per table (20)\n"
	    "  --folded        print folded stacks (\"a;b;c N\") instead, for\n"
	    "                  flame-graph tools\n"
	    "  --sysroot DIR   where the recorded machine's files are\n"
	    "Exit status: 0; 1 a dump had damage (what could be read was\n"
	    "summarized); 2 usage error or unreadable dump.\n");
}

/* Context: main thread. Return: the exit status. */
int
cmd_summarize(int argc, char **argv)
{
	struct sum s;
	struct rtprof_dump_cb cb = {
		.on_header = on_header, .on_modules = on_modules,
		.on_thread = on_thread, .on_schema = on_schema,
		.on_string = on_string, .on_record = on_record,
	};
	struct rtprof_dump_stats st;
	struct agg_ent *v;
	size_t top = 20;
	int i, status = 0;

	memset(&s, 0, sizeof(s));
	s.blocked_type = -1;
	cb.ctx = &s;
	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
		if (strcmp(argv[i], "--top") == 0 && i + 1 < argc) {
			top = (size_t)strtoul(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--folded") == 0) {
			s.folded = true;
		} else if (strcmp(argv[i], "--sysroot") == 0 && i + 1 < argc) {
			s.sysroot = argv[++i];
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
	for (; i < argc; i++) {
		/* Twice: first the threads' last names (a thread named after
		 * its comm is described again at exit), then everything. */
		struct rtprof_dump_cb names = { .ctx = &s,
		    .on_thread = on_thread };
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC), rc;

		if (fd < 0) {
			fprintf(stderr, PROG ": %s: %s\n", argv[i],
			    strerror(errno));
			return 2;
		}
		rc = rtprof_dump_read_fd(fd, &names, &st);
		if (rc == 0 && lseek(fd, 0, SEEK_SET) == 0) {
			s.names_final = true;
			rc = rtprof_dump_read_fd(fd, &cb, &st);
		}
		s.names_final = false;
		close(fd);
		if (rc != 0 || s.err != 0 || st.frames == 0) {
			fprintf(stderr, PROG ": %s: %s\n", argv[i], st.frames == 0 ?
			    "not an rtprof dump" : strerror(-(rc ? rc : s.err)));
			return 2;
		}
		if (st.damage != 0) {
			fprintf(stderr, PROG ": %s: %" PRIu64 " damage report(s):"
			    " summarized what could be read\n", argv[i],
			    st.damage);
			status = 1;
		}
		reset_dump(&s);
	}
	if (s.folded) {
		v = agg_sorted(&s.folded_stacks);
		for (size_t k = 0; v != NULL && k < s.folded_stacks.n; k++)
			printf("%s %" PRIu64 "\n", v[k].key, v[k].n);
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
		printf("  %-24s %10" PRIu64 " %12.3f %10.3f %10.3f\n", v[k].key,
		    v[k].n, v[k].total, v[k].total / (double)v[k].n, v[k].max);
	free(v);
	printf("\nCPU time by thread (from %" PRIu64 " samples):\n", s.samples);
	v = agg_sorted(&s.cpu);
	for (size_t k = 0; v != NULL && k < s.cpu.n && k < top; k++)
		printf("  %12.3f ms  %s\n", v[k].total, v[k].key);
	free(v);
	printf("\nTop functions by self samples:\n");
	v = agg_sorted(&s.self);
	for (size_t k = 0, all = 0; v != NULL && k < s.self.n && k < top;
	    k++) {
		if (k == 0)
			for (size_t j = 0; j < s.self.n; j++)
				all += v[j].n;
		printf("  %8" PRIu64 "  %5.1f%%  %s\n", v[k].n,
		    100.0 * (double)v[k].n / (double)all, v[k].key);
	}
	free(v);
out:
	agg_free(&s.blocked);
	agg_free(&s.cpu);
	agg_free(&s.self);
	agg_free(&s.folded_stacks);
	free(s.str);
	free(s.th);
	return status;
}
