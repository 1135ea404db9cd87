/*
 * rtprof_inspect.c - rtprof-inspect: summarise (or list) an rtprof dump.
 *
 *   rtprof-inspect [-v] DUMP|-
 *
 * Prints, per session: the header (process, clock, settings), threads,
 * frames by kind, records per thread by kind, drops reported by DATA
 * frames, events, the trailer's totals checked against the records decoded,
 * and then every damage report. -v also lists every frame and record, one
 * per line, as they are decoded.
 *
 * Exit status: 0 clean; 1 damage found (or record counts that disagree with
 * the trailer for no stated reason), everything still printed; 2 usage
 * error, unreadable input, not a dump (no valid frame at all) or a dump of
 * a newer format version.
 *
 * Uses codec/ only (docs/wire-format.md); the decoder bounds memory, and so
 * does this program: per-thread, per-session, string and damage tables have
 * caps, beyond which it counts what it could not keep.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* gmtime_r() */
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dump_reader.h"
#include "esc.h"

#define PROG "rtprof-inspect"

#define MAX_SESSIONS 65536
#define MAX_THREADS (1u << 20)          /* (session, tid) entries */
#define MAX_STRINGS (1u << 20)          /* -v name table entries */
#define MAX_DAMAGE 10000
#define MAX_EVENTS 32                   /* kept per session */
#define NAME_MAX_SHOWN 80

struct thr {
	uint64_t sidx;                  /* 0 = free slot */
	int64_t tid;
	bool described;                 /* a THREAD frame was seen */
	char name[64];
	uint64_t flags;
	uint64_t reg;
	bool has_unreg;
	uint64_t unreg;
	uint64_t recs[RTPROF_REC_KIND_MAX + 1];
	uint64_t decoded;
	uint64_t data_frames;
	uint64_t dropped_full;
	uint64_t dropped_nested;
	bool settled;           /* counts from THREAD totals or the trailer */
	struct rtprof_dump_trailer_thread tr;
};

struct str_ent {
	uint64_t sidx;                  /* 0 = free slot */
	uint64_t ref;
	char *text;
	size_t len;
};

struct event {
	uint64_t ticks;
	char text[160];
};

struct sess {
	uint64_t index;
	uint32_t id;
	uint64_t offset;                /* first frame */
	uint64_t frames;
	uint64_t kinds[RTPROF_FRAME_KIND_MAX + 1];
	uint64_t unknown_kinds;
	uint64_t damage;
	bool has_header;
	int64_t format;
	uint64_t generation;
	int64_t pid, ppid;
	char process[64];
	char exe[256];
	char cmdline[256];
	char machine[256];
	char clock_source[16];
	double tps;
	uint64_t start_ticks;
	int64_t start_mono_ns, start_wall_ns;
	char settings[320];
	uint32_t ncategories;
	uint64_t nmodules;
	uint64_t records;
	uint64_t pauses;
	uint64_t pause_ticks;
	struct event events[MAX_EVENTS];
	unsigned nevents;
	uint64_t events_dropped;
	bool has_trailer;
	struct {
		uint64_t stop_ticks;
		int64_t stop_mono_ns, stop_wall_ns;
		uint64_t frames, bytes, chunks_lost;
		bool limit_reached;
		size_t nthreads;
		uint64_t threads_omitted;
		uint64_t seen;          /* frames of the session before it */
	} tr;
};

struct insp {
	const char *path;
	bool verbose;
	/* sessions, by index - 1 */
	struct sess *sess;
	size_t nsess;
	size_t cap_sess;
	uint64_t sessions_untracked;
	struct sess *cur;
	uint64_t cur_sidx;
	/* (session, tid) -> struct thr, open addressing */
	struct thr *thr;
	size_t thr_cap;
	size_t thr_n;
	uint64_t thr_untracked;
	/* (session, ref) -> text, for -v */
	struct str_ent *str;
	size_t str_cap;
	size_t str_n;
	/* damage */
	struct rtprof_dump_damage dmg[MAX_DAMAGE];
	size_t ndmg;
	uint64_t dmg_total;
	uint64_t mismatches;            /* trailer disagreements */
};

/* ------------------------------------------------------------------ */
/* Small helpers.                                                     */

/* Every string of a dump is kept escaped for the terminal (esc.h). */
static void
copy_str(char *dst, size_t cap, const char *src)
{
	rtprof_esc(dst, cap, src);
}

/* Escape @buf (capacity @cap, at most 512) where it is. */
static void
esc_in_place(char *buf, size_t cap)
{
	char raw[512];

	snprintf(raw, sizeof(raw), "%s", buf);
	rtprof_esc(buf, cap, raw);
}

/* Append @src, escaped, to @dst (capacity @cap), truncating. */
static void
append(char *dst, size_t cap, const char *fmt, const char *src)
{
	size_t n = strlen(dst);
	char e[256];

	if (n < cap)
		snprintf(dst + n, cap - n, fmt, rtprof_esc(e, sizeof(e), src));
}

static uint64_t
mix(uint64_t a, uint64_t b)
{
	uint64_t x = a * 0x9E3779B97F4A7C15ull ^ b;

	x ^= x >> 30;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 27;
	x *= 0x94D049BB133111EBull;
	x ^= x >> 31;
	return x;
}

/* Print @s as a quoted, escaped string of at most @max bytes. */
static void
print_quoted(FILE *f, const char *s, size_t len, size_t max)
{
	fputc('"', f);
	rtprof_esc_write(f, s, len < max ? len : max, RTPROF_ESC_QUOTE);
	fputc('"', f);
	if (len > max)
		fputs("...", f);
}

static void
print_ns_wall(int64_t ns)
{
	time_t sec = (time_t)(ns / 1000000000);
	long frac = (long)(ns % 1000000000);
	struct tm tm;
	char buf[64];

	if (frac < 0) {
		frac += 1000000000;
		sec--;
	}
	if (gmtime_r(&sec, &tm) == NULL ||
	    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		printf("%" PRId64 " ns", ns);
		return;
	}
	printf("%s.%09ldZ", buf, frac);
}

/* ------------------------------------------------------------------ */
/* Tables.                                                            */

static struct sess *
sess_get(struct insp *in, uint64_t sidx)
{
	if (sidx == 0 || sidx > MAX_SESSIONS)
		return NULL;
	while (in->nsess < sidx) {
		if (in->nsess == in->cap_sess) {
			size_t cap = in->cap_sess ? in->cap_sess * 2 : 4;
			struct sess *s = realloc(in->sess, cap * sizeof(*s));

			if (s == NULL)
				return NULL;
			in->sess = s;
			in->cap_sess = cap;
		}
		memset(&in->sess[in->nsess], 0, sizeof(in->sess[0]));
		in->sess[in->nsess].index = in->nsess + 1;
		in->nsess++;
	}
	return &in->sess[sidx - 1];
}

static struct thr *
thr_slot(struct thr *tab, size_t cap, uint64_t sidx, int64_t tid)
{
	size_t i = (size_t)mix(sidx, (uint64_t)tid) & (cap - 1);

	while (tab[i].sidx != 0 && (tab[i].sidx != sidx || tab[i].tid != tid))
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

/* The entry of (@sidx, @tid), created on first use; NULL beyond the cap. */
static struct thr *
thr_get(struct insp *in, uint64_t sidx, int64_t tid)
{
	struct thr *t;

	if (sidx == 0)
		return NULL;
	if (in->thr_cap == 0 || (in->thr_n + 1) * 2 > in->thr_cap) {
		size_t cap = in->thr_cap ? in->thr_cap * 2 : 64;
		struct thr *tab;

		if (in->thr_n >= MAX_THREADS) {
			t = thr_slot(in->thr, in->thr_cap, sidx, tid);
			if (t->sidx == 0) {
				in->thr_untracked++;
				return NULL;
			}
			return t;
		}
		tab = calloc(cap, sizeof(*tab));
		if (tab == NULL)
			return NULL;
		for (size_t i = 0; i < in->thr_cap; i++)
			if (in->thr[i].sidx != 0)
				*thr_slot(tab, cap, in->thr[i].sidx,
				    in->thr[i].tid) = in->thr[i];
		free(in->thr);
		in->thr = tab;
		in->thr_cap = cap;
	}
	t = thr_slot(in->thr, in->thr_cap, sidx, tid);
	if (t->sidx == 0) {
		memset(t, 0, sizeof(*t));
		t->sidx = sidx;
		t->tid = tid;
		in->thr_n++;
	}
	return t;
}

static struct str_ent *
str_slot(struct str_ent *tab, size_t cap, uint64_t sidx, uint64_t ref)
{
	size_t i = (size_t)mix(sidx, ref) & (cap - 1);

	while (tab[i].sidx != 0 && (tab[i].sidx != sidx || tab[i].ref != ref))
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

/* Remember a static string for -v listings; silently bounded. */
static int
str_put(struct insp *in, uint64_t sidx, uint64_t ref, const char *text,
    size_t len)
{
	struct str_ent *e;
	char *copy;

	if (sidx == 0)
		return 0;
	if (in->str_cap == 0 || (in->str_n + 1) * 2 > in->str_cap) {
		size_t cap = in->str_cap ? in->str_cap * 2 : 256;
		struct str_ent *tab;

		if (in->str_n >= MAX_STRINGS)
			return 0;
		tab = calloc(cap, sizeof(*tab));
		if (tab == NULL)
			return -ENOMEM;
		for (size_t i = 0; i < in->str_cap; i++)
			if (in->str[i].sidx != 0)
				*str_slot(tab, cap, in->str[i].sidx,
				    in->str[i].ref) = in->str[i];
		free(in->str);
		in->str = tab;
		in->str_cap = cap;
	}
	if (len > NAME_MAX_SHOWN)
		len = NAME_MAX_SHOWN;
	copy = malloc(len + 1);
	if (copy == NULL)
		return -ENOMEM;
	memcpy(copy, text, len);
	copy[len] = '\0';
	e = str_slot(in->str, in->str_cap, sidx, ref);
	if (e->sidx == 0) {
		e->sidx = sidx;
		e->ref = ref;
		in->str_n++;
	} else {
		free(e->text);
	}
	e->text = copy;
	e->len = len;
	return 0;
}

/* Print the static string @ref quoted, or its address when unknown. */
static void
print_ref(const struct insp *in, uint64_t ref)
{
	const struct str_ent *e = NULL;

	if (in->str_cap != 0)
		e = str_slot(in->str, in->str_cap, in->cur_sidx, ref);
	if (e != NULL && e->sidx != 0)
		print_quoted(stdout, e->text, e->len, NAME_MAX_SHOWN);
	else
		printf("%#" PRIx64, ref);
}

/* ------------------------------------------------------------------ */
/* Callbacks.                                                         */

static int
on_frame(void *ctx, const struct rtprof_dump_frame *f)
{
	struct insp *in = ctx;
	struct sess *s = sess_get(in, f->session_index);

	in->cur = s;
	in->cur_sidx = s != NULL ? f->session_index : 0;
	if (s == NULL) {
		if (f->session_index > MAX_SESSIONS)
			in->sessions_untracked = f->session_index - MAX_SESSIONS;
		else
			return -ENOMEM;
	} else {
		if (s->frames == 0) {
			s->id = f->session;
			s->offset = f->offset;
		}
		s->frames++;
		if (f->kind >= 1 && f->kind <= RTPROF_FRAME_KIND_MAX)
			s->kinds[f->kind]++;
		else
			s->unknown_kinds++;
	}
	if (in->verbose) {
		const char *name = rtprof_dump_frame_kind_name(f->kind);

		printf("@%" PRIu64 " ", f->offset);
		if (name != NULL)
			printf("%s", name);
		else
			printf("kind-%u (unknown, skipped)", f->kind);
		printf(" session %" PRIu64 " (%08" PRIx32 ") seq %" PRIu32
		    " len %" PRIu32 "\n", f->session_index, f->session, f->seq,
		    f->len);
	}
	return 0;
}

static int
on_header(void *ctx, const struct rtprof_dump_header *h)
{
	struct insp *in = ctx;
	struct sess *s = in->cur;

	if (in->verbose) {
		char p[256], c[64];

		printf("  header process \"%s\" pid %" PRId64 " session %08"
		    PRIx32 " generation %" PRIu64 " clock %s %.0f/s\n",
		    rtprof_esc(p, sizeof(p), h->process), h->pid, h->session,
		    h->generation, rtprof_esc(c, sizeof(c), h->clock.source),
		    h->clock.ticks_per_second);
	}
	if (s == NULL)
		return 0;
	s->has_header = true;
	s->format = h->format;
	s->generation = h->generation;
	s->pid = h->pid;
	s->ppid = h->ppid;
	copy_str(s->process, sizeof(s->process), h->process);
	copy_str(s->exe, sizeof(s->exe), h->exe);
	s->cmdline[0] = '\0';
	for (uint32_t i = 0; i < h->argc; i++)
		append(s->cmdline, sizeof(s->cmdline), i ? " %s" : "%s",
		    h->argv[i]);
	snprintf(s->machine, sizeof(s->machine), "%s %s %s, host %s, %" PRId64
	    " cpus", h->machine.sysname, h->machine.release,
	    h->machine.machine, h->machine.hostname, h->machine.cpus);
	esc_in_place(s->machine, sizeof(s->machine));
	copy_str(s->clock_source, sizeof(s->clock_source), h->clock.source);
	s->tps = h->clock.ticks_per_second;
	s->start_ticks = h->clock.start_ticks;
	s->start_mono_ns = h->clock.start_mono_ns;
	s->start_wall_ns = h->clock.start_wall_ns;
	snprintf(s->settings, sizeof(s->settings), "mode %s, memory_limit %"
	    PRIu64 ", chunk_size %" PRIu64 ", prefill %" PRIu64 ", max_bytes %"
	    PRIu64 ", flush_interval_us %" PRIu64 ", sample_interval_us %"
	    PRIu64, h->settings.mode, h->settings.memory_limit,
	    h->settings.chunk_size, h->settings.prefill, h->settings.max_bytes,
	    h->settings.flush_interval_us, h->settings.sample_interval_us);
	esc_in_place(s->settings, sizeof(s->settings));
	s->ncategories = h->ncategories;
	return 0;
}

static int
on_modules(void *ctx, const struct rtprof_dump_module *m, size_t n)
{
	struct insp *in = ctx;

	if (in->cur != NULL)
		in->cur->nmodules = n;
	for (size_t i = 0; in->verbose && i < n; i++) {
		printf("  module %#" PRIx64 "-%#" PRIx64 " +%#" PRIx64 " ",
		    m[i].start, m[i].end, m[i].offset);
		rtprof_esc_puts(stdout, m[i].path);
		printf(" (build id %zu bytes)\n", m[i].build_id_len);
	}
	return 0;
}

/* A thread's counts, from its last THREAD frame or the trailer: added up,
 * as a tid's counts may come in several parts (docs/wire-format.md). */
static void
settled_add(struct thr *th, const struct rtprof_dump_trailer_thread *c)
{
	th->settled = true;
	rtprof_dump_counts_add(&th->tr, c);
}

static int
on_thread(void *ctx, const struct rtprof_dump_thread *t)
{
	struct insp *in = ctx;
	struct thr *th = thr_get(in, in->cur_sidx, t->tid);

	if (in->verbose) {
		char nm[256];

		printf("  thread %" PRId64 " \"%s\" flags %#" PRIx64
		    " registered %" PRIu64, t->tid,
		    rtprof_esc(nm, sizeof(nm), t->name), t->flags,
		    t->register_ticks);
		if (t->has_unregister)
			printf(" unregistered %" PRIu64, t->unregister_ticks);
		if (t->has_totals)
			printf(" totals recorded %" PRIu64 " dropped full %"
			    PRIu64 " nested %" PRIu64 " recycled %" PRIu64,
			    t->totals.recorded, t->totals.dropped_full,
			    t->totals.dropped_nested, t->totals.recycled);
		printf("\n");
	}
	if (th == NULL)
		return 0;
	/* A later THREAD frame for the same tid replaces an earlier one. */
	th->described = true;
	copy_str(th->name, sizeof(th->name), t->name);
	th->flags = t->flags;
	th->reg = t->register_ticks;
	th->has_unreg = t->has_unregister;
	th->unreg = t->unregister_ticks;
	if (t->has_totals)
		settled_add(th, &t->totals);
	return 0;
}

static int
on_schema(void *ctx, const struct rtprof_dump_schema *s)
{
	struct insp *in = ctx;

	if (in->verbose) {
		char e[256];

		printf("  schema %" PRIu32 " \"%s\" category %" PRIu32
		    " display %#" PRIx64 " fields", s->id,
		    rtprof_esc(e, sizeof(e), s->name), s->category, s->display);
		for (uint32_t i = 0; i < s->nfields; i++)
			printf(" %s:%" PRIu32, rtprof_esc(e, sizeof(e),
			    s->fields[i].key), s->fields[i].kind);
		printf("\n");
	}
	return 0;
}

static int
on_counter(void *ctx, const struct rtprof_dump_counter *c)
{
	struct insp *in = ctx;

	if (in->verbose) {
		char n[256], k[256], d[256];

		printf("  counter %" PRIu32 " \"%s\" category \"%s\""
		    " \"%s\"\n", c->id, rtprof_esc(n, sizeof(n), c->name),
		    rtprof_esc(k, sizeof(k), c->category),
		    rtprof_esc(d, sizeof(d), c->description));
	}
	return 0;
}

static int
on_category(void *ctx, const struct rtprof_dump_category *c)
{
	struct insp *in = ctx;

	if (in->verbose) {
		char n[256], k[256];

		printf("  category %" PRIu32 " \"%s\" color \"%s\"\n", c->id,
		    rtprof_esc(n, sizeof(n), c->name),
		    rtprof_esc(k, sizeof(k), c->color));
	}
	return 0;
}

static int
on_string(void *ctx, uint64_t ref, const char *text, size_t len)
{
	struct insp *in = ctx;

	if (!in->verbose)
		return 0;
	printf("  string %#" PRIx64 " ", ref);
	print_quoted(stdout, text, len, NAME_MAX_SHOWN);
	printf("\n");
	return str_put(in, in->cur_sidx, ref, text, len);
}

static int
on_data(void *ctx, const struct rtprof_dump_data *d)
{
	struct insp *in = ctx;
	struct thr *th = thr_get(in, in->cur_sidx, d->tid);

	if (in->verbose)
		printf("  data tid %" PRId64 " chunk %" PRIu64 " at %" PRIu64
		    "/%" PRIu64 " nrec %" PRIu64 " ticks %" PRIu64 "..%" PRIu64
		    " dropped full %" PRIu64 " nested %" PRIu64 "\n", d->tid,
		    d->chunk_seq, d->byte_offset, d->record_index, d->nrec,
		    d->first_ticks, d->last_ticks, d->dropped_full,
		    d->dropped_nested);
	if (th != NULL) {
		th->data_frames++;
		th->dropped_full += d->dropped_full;
		th->dropped_nested += d->dropped_nested;
	}
	return 0;
}

static void
print_val(const struct insp *in, const struct rtprof_val *v)
{
	switch (v->kind) {
	case RTPROF_VAL_I64:
		printf("%" PRId64, v->v.i);
		break;
	case RTPROF_VAL_U64:
		printf("%" PRIu64, v->v.u);
		break;
	case RTPROF_VAL_F64:
		printf("%g", v->v.d);
		break;
	case RTPROF_VAL_STRREF:
		print_ref(in, v->v.ref);
		break;
	case RTPROF_VAL_STR:
		print_quoted(stdout, v->v.str.p, v->v.str.n, NAME_MAX_SHOWN);
		break;
	}
}

/* Zone, text, flow and frame records: what each adds to the time. */
static void
print_user_rec(struct insp *in, const struct rtprof_rec_view *r)
{
	printf(" t %" PRIu64, r->t0);
	switch (r->kind) {
	case RTPROF_REC_ZONE_BEGIN:
	case RTPROF_REC_TEXT:
	case RTPROF_REC_FLOW:
		if (r->kind == RTPROF_REC_TEXT && r->phase == 1)
			printf("..%" PRIu64, r->t1);
		printf(" ");
		print_ref(in, r->name);
		printf(" category %u", r->category);
		break;
	case RTPROF_REC_FRAME:
		printf(" ");
		print_ref(in, r->name);
		printf(" budget %" PRId64 " ns", r->value);
		return;
	default:
		printf(" zone %" PRIu64, r->zone);
		break;
	}
	if (r->kind == RTPROF_REC_FLOW)
		printf(" flow %#" PRIx64 "%s", r->flow, r->flags ? " last" : "");
	if (r->kind == RTPROF_REC_ZONE_ARG)
		printf(" what %u", r->phase);
	if (r->nvals == 1) {
		printf(" ");
		print_val(in, &r->vals[0]);
	}
}

static int
on_record(void *ctx, const struct rtprof_dump_data *d,
    const struct rtprof_rec_view *r)
{
	struct insp *in = ctx;
	struct thr *th = thr_get(in, in->cur_sidx, d->tid);

	if (th != NULL) {
		th->recs[r->kind <= RTPROF_REC_KIND_MAX ? r->kind : 0]++;
		th->decoded++;
	}
	if (in->cur != NULL)
		in->cur->records++;
	if (!in->verbose)
		return 0;
	printf("    rec tid %" PRId64 " %s", d->tid,
	    rtprof_dump_rec_kind_name(r->kind));
	switch (r->kind) {
	case RTPROF_REC_INSTANT:
	case RTPROF_REC_BEGIN:
	case RTPROF_REC_END:
	case RTPROF_REC_INTERVAL:
		printf(" t %" PRIu64, r->t0);
		if (r->kind == RTPROF_REC_INTERVAL)
			printf("..%" PRIu64, r->t1);
		printf(" ");
		print_ref(in, r->name);
		printf(" category %u", r->category);
		break;
	case RTPROF_REC_TYPED:
		printf(" type %u phase %u t %" PRIu64, r->id, r->phase, r->t0);
		if (r->phase == 1)
			printf("..%" PRIu64, r->t1);
		printf(" [");
		for (unsigned i = 0; i < r->nvals; i++) {
			if (i)
				printf(", ");
			print_val(in, &r->vals[i]);
		}
		printf("]");
		break;
	case RTPROF_REC_COUNTER:
		printf(" t %" PRIu64 " counter %u value %" PRId64, r->t0, r->id,
		    r->value);
		break;
	default:
		if (r->kind >= RTPROF_REC_ZONE_BEGIN &&
		    r->kind <= RTPROF_REC_FRAME)
			print_user_rec(in, r);  /* zones, text, flows, frames */
		else
			printf(" t %" PRIu64, r->t0);
		break;
	}
	printf("\n");
	return 0;
}

static int
on_pause(void *ctx, uint64_t t0, uint64_t t1)
{
	struct insp *in = ctx;

	if (in->cur != NULL) {
		in->cur->pauses++;
		if (t1 > t0)
			in->cur->pause_ticks += t1 - t0;
	}
	if (in->verbose)
		printf("  pause %" PRIu64 "..%" PRIu64 "\n", t0, t1);
	return 0;
}

static int
on_values(void *ctx, uint64_t ticks, size_t n, const uint32_t *ids,
    const int64_t *values)
{
	struct insp *in = ctx;

	if (!in->verbose)
		return 0;
	printf("  values t %" PRIu64, ticks);
	for (size_t i = 0; i < n; i++)
		printf(" %" PRIu32 "=%" PRId64, ids[i], values[i]);
	printf("\n");
	return 0;
}

static int
on_event(void *ctx, const struct rtprof_dump_event *e)
{
	struct insp *in = ctx;
	char text[160];

	if (strcmp(e->what, "sink_error") == 0)
		snprintf(text, sizeof(text), "sink_error: errno %" PRId64
		    " (%s): writing failed, later frames are lost",
		    e->errnum, e->message ? e->message : "?");
	else if (strcmp(e->what, "limit_reached") == 0)
		snprintf(text, sizeof(text), "limit_reached: max_bytes %"
		    PRIu64 ", DATA frames stop here", e->max_bytes);
	else
		snprintf(text, sizeof(text), "%s", e->what);
	esc_in_place(text, sizeof(text));
	if (in->verbose)
		printf("  event t %" PRIu64 " %s\n", e->ticks, text);
	if (in->cur == NULL)
		return 0;
	if (in->cur->nevents < MAX_EVENTS) {
		struct event *ev = &in->cur->events[in->cur->nevents++];

		ev->ticks = e->ticks;
		copy_str(ev->text, sizeof(ev->text), text);
	} else {
		in->cur->events_dropped++;
	}
	return 0;
}

static int
on_trailer(void *ctx, const struct rtprof_dump_trailer *t)
{
	struct insp *in = ctx;
	struct sess *s = in->cur;

	if (in->verbose)
		printf("  trailer stop %" PRIu64 " frames %" PRIu64 " bytes %"
		    PRIu64 " chunks_lost %" PRIu64 " samples_lost %" PRIu64
		    " limit_reached %d threads %zu\n", t->stop_ticks,
		    t->frames, t->bytes, t->chunks_lost, t->samples_lost,
		    (int)t->limit_reached, t->nthreads);
	if (s == NULL)
		return 0;
	s->has_trailer = true;
	s->tr.stop_ticks = t->stop_ticks;
	s->tr.stop_mono_ns = t->stop_mono_ns;
	s->tr.stop_wall_ns = t->stop_wall_ns;
	s->tr.frames = t->frames;
	s->tr.bytes = t->bytes;
	s->tr.chunks_lost = t->chunks_lost;
	s->tr.limit_reached = t->limit_reached;
	s->tr.nthreads = t->nthreads;
	s->tr.threads_omitted = t->threads_omitted;
	s->tr.seen = s->frames - 1;
	for (size_t i = 0; i < t->nthreads; i++) {
		struct thr *th = thr_get(in, in->cur_sidx, t->threads[i].tid);

		if (th != NULL)
			settled_add(th, &t->threads[i]);
	}
	return 0;
}

static int
on_damage(void *ctx, const struct rtprof_dump_damage *d)
{
	struct insp *in = ctx;

	in->dmg_total++;
	if (in->ndmg < MAX_DAMAGE)
		in->dmg[in->ndmg++] = *d;
	if (d->session_index != 0) {
		struct sess *s = sess_get(in, d->session_index);

		if (s != NULL)
			s->damage++;
	}
	if (in->verbose) {
		printf("! @%" PRIu64 " damage %s: ", d->offset,
		    rtprof_dump_damage_name(d->kind));
		rtprof_esc_puts(stdout, d->message);
		printf("\n");
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The report.                                                        */

static int
thr_cmp(const void *a, const void *b)
{
	const struct thr *x = *(const struct thr *const *)a;
	const struct thr *y = *(const struct thr *const *)b;

	if (x->sidx != y->sidx)
		return x->sidx < y->sidx ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return 0;
}

static double
ticks_to_s(const struct sess *s, uint64_t t)
{
	if (!s->has_header || s->tps <= 0)
		return 0;
	return ((double)t - (double)s->start_ticks) / s->tps;
}

static void
print_trailer_check(struct insp *in, const struct sess *s,
    const struct thr *th)
{
	const uint64_t rec = th->tr.recorded, got = th->decoded;

	printf("    tid %" PRId64 ": recorded %" PRIu64 ", decoded %" PRIu64,
	    th->tid, rec, got);
	if (got == rec) {
		printf(": ok");
	} else if (th->tr.recycled != 0 && got + th->tr.recycled == rec) {
		printf(": ok (%" PRIu64 " overwritten in flight-recorder mode)",
		    th->tr.recycled);
	} else if (got < rec && (s->tr.chunks_lost != 0 ||
	    s->tr.limit_reached)) {
		printf(": %" PRIu64 " not in the dump (chunks lost to the size "
		    "cap or a sink error)", rec - got);
	} else if (got < rec) {
		printf(": MISMATCH, %" PRIu64 " missing (frames lost in "
		    "transit)", rec - got);
		in->mismatches++;
	} else {
		printf(": MISMATCH, %" PRIu64 " more than recorded",
		    got - rec);
		in->mismatches++;
	}
	printf("; dropped full %" PRIu64 ", nested %" PRIu64 ", recycled %"
	    PRIu64 "\n", th->tr.dropped_full, th->tr.dropped_nested,
	    th->tr.recycled);
}

/* The session's HEADER: process, program, machine, clock, settings. */
static void
print_header(const struct sess *s)
{
	if (s->has_header) {
		printf("  process   %s (pid %" PRId64 ", ppid %" PRId64
		    "), generation %" PRIu64 ", format %" PRId64 "\n",
		    s->process, s->pid, s->ppid, s->generation, s->format);
		printf("  exe       %s\n", s->exe);
		printf("  cmdline   %s\n", s->cmdline);
		printf("  machine   %s\n", s->machine);
		printf("  clock     %s, %.0f ticks/s, start %" PRIu64
		    " ticks = mono %" PRId64 " ns = wall ", s->clock_source,
		    s->tps, s->start_ticks, s->start_mono_ns);
		print_ns_wall(s->start_wall_ns);
		printf("\n");
		printf("  settings  %s\n", s->settings);
		printf("  modules   %" PRIu64 ", categories %" PRIu32 "\n",
		    s->nmodules, s->ncategories);
	} else {
		printf("  header    MISSING (lost); times below are raw ticks\n");
	}
}

/* Frames by kind, and the pauses. */
static void
print_frames(const struct sess *s)
{
	printf("  frames   ");
	for (unsigned k = 1; k <= RTPROF_FRAME_KIND_MAX; k++)
		printf(" %s %" PRIu64 "%s", rtprof_dump_frame_kind_name(k),
		    s->kinds[k], k < RTPROF_FRAME_KIND_MAX ? "," : "");
	if (s->unknown_kinds != 0)
		printf(", unknown %" PRIu64, s->unknown_kinds);
	printf("\n");
	if (s->pauses != 0)
		printf("  paused    %" PRIu64 " time(s), %.6f s in all\n",
		    s->pauses, s->tps > 0 ? (double)s->pause_ticks / s->tps : 0);
}

/* The threads described (THREAD frames), then those with data only. */
static void
print_threads(const struct sess *s, struct thr **thr, size_t nthr)
{
	printf("  threads\n");
	for (size_t i = 0; i < nthr; i++) {
		const struct thr *th = thr[i];

		if (!th->described)
			continue;
		printf("    tid %" PRId64 " \"%s\"%s%s, registered %" PRIu64,
		    th->tid, th->name, th->flags & 2 ? " main" : "",
		    th->flags & 1 ? " real-time" : "", th->reg);
		if (s->has_header && s->tps > 0)
			printf(" (%+.6f s)", ticks_to_s(s, th->reg));
		if (th->has_unreg) {
			printf(", unregistered %" PRIu64, th->unreg);
			if (s->has_header && s->tps > 0)
				printf(" (%+.6f s)", ticks_to_s(s, th->unreg));
		} else {
			printf(", still registered at the end");
		}
		printf("\n");
	}
	for (size_t i = 0; i < nthr; i++)
		if (!thr[i]->described && thr[i]->data_frames != 0)
			printf("    tid %" PRId64 " (no THREAD frame)\n",
			    thr[i]->tid);
}

/* Records per thread by kind, and its drops. */
static void
print_records(struct thr **thr, size_t nthr)
{
	printf("  records\n");
	for (size_t i = 0; i < nthr; i++) {
		const struct thr *th = thr[i];
		bool first = true;

		if (th->data_frames == 0)
			continue;
		printf("    tid %" PRId64 ": %" PRIu64 " in %" PRIu64
		    " DATA frames (", th->tid, th->decoded, th->data_frames);
		for (unsigned k = 1; k <= RTPROF_REC_KIND_MAX; k++) {
			if (th->recs[k] == 0)
				continue;
			printf("%s%s %" PRIu64, first ? "" : ", ",
			    rtprof_dump_rec_kind_name(k), th->recs[k]);
			first = false;
		}
		printf(")");
		if (th->dropped_full || th->dropped_nested)
			printf("; dropped: %" PRIu64 " no free chunk, %" PRIu64
			    " re-entrant", th->dropped_full,
			    th->dropped_nested);
		printf("\n");
	}
}

/* The EVENT frames kept. */
static void
print_events(const struct sess *s)
{
	if (s->nevents != 0) {
		printf("  events\n");
		for (unsigned i = 0; i < s->nevents; i++)
			printf("    t %" PRIu64 ": %s\n", s->events[i].ticks,
			    s->events[i].text);
		if (s->events_dropped)
			printf("    ... and %" PRIu64 " more\n",
			    s->events_dropped);
	}
}

/* The TRAILER, and each thread's counts checked against what was read. */
static void
print_trailer(struct insp *in, const struct sess *s, struct thr **thr,
    size_t nthr)
{
	if (!s->has_trailer) {
		printf("  trailer   none: the process died, the sink failed, or "
		    "the frame was lost\n");
	} else {
		printf("  trailer   stop %" PRIu64 " ticks", s->tr.stop_ticks);
		if (s->has_header && s->tps > 0)
			printf(" (%.6f s after start)",
			    ticks_to_s(s, s->tr.stop_ticks));
		printf(", %" PRIu64 " frames (%" PRIu64 " decoded) and %" PRIu64
		    " bytes before it, chunks lost %" PRIu64 ", size cap %s\n",
		    s->tr.frames, s->tr.seen, s->tr.bytes, s->tr.chunks_lost,
		    s->tr.limit_reached ? "REACHED" : "not reached");
		if (s->tr.threads_omitted != 0)
			printf("            the counts of %" PRIu64 " thread(s) "
			    "left out (no room under the size cap)\n",
			    s->tr.threads_omitted);
		if (s->has_header && s->tr.stop_mono_ns > s->start_mono_ns &&
		    s->tr.stop_ticks > s->start_ticks)
			printf("            measured rate %.0f ticks/s (header "
			    "says %.0f)\n", (double)(s->tr.stop_ticks -
			    s->start_ticks) * 1e9 / rtprof_ns_diff(
			    s->tr.stop_mono_ns, s->start_mono_ns), s->tps);
		for (size_t i = 0; i < nthr; i++)
			if (thr[i]->settled)
				print_trailer_check(in, s, thr[i]);
		for (size_t i = 0; i < nthr; i++) {
			if (thr[i]->settled || thr[i]->decoded == 0)
				continue;
			printf("    tid %" PRId64 ": decoded %" PRIu64 ", "
			    "MISMATCH, no counts for it (THREAD totals or "
			    "trailer)\n", thr[i]->tid, thr[i]->decoded);
			in->mismatches++;
		}
	}
}

static void
print_session(struct insp *in, const struct sess *s, struct thr **thr,
    size_t nthr)
{
	printf("session %" PRIu64 ": id %08" PRIx32 ", first frame at offset %"
	    PRIu64 ", %" PRIu64 " frames, %" PRIu64 " records\n", s->index,
	    s->id, s->offset, s->frames, s->records);
	print_header(s);
	print_frames(s);
	print_threads(s, thr, nthr);
	print_records(thr, nthr);
	print_events(s);
	print_trailer(in, s, thr, nthr);
	if (s->damage != 0)
		printf("  damage    %" PRIu64 " report(s) tied to this session "
		    "(see below)\n", s->damage);
}

static void
print_report(struct insp *in, const struct rtprof_dump_stats *st)
{
	struct thr **thr = NULL;
	size_t nthr = 0, j = 0;

	if (in->thr_n != 0) {
		thr = malloc(in->thr_n * sizeof(*thr));
		if (thr == NULL) {
			fprintf(stderr, PROG ": %s: out of memory\n", in->path);
			return;
		}
		for (size_t i = 0; i < in->thr_cap; i++)
			if (in->thr[i].sidx != 0)
				thr[nthr++] = &in->thr[i];
		qsort(thr, nthr, sizeof(*thr), thr_cmp);
	}
	for (size_t i = 0; i < in->nsess; i++) {
		const struct sess *s = &in->sess[i];
		size_t k;

		while (j < nthr && thr[j]->sidx < s->index)
			j++;
		for (k = j; k < nthr && thr[k]->sidx == s->index; k++)
			;
		/* No thread at all: thr is NULL, and NULL + 0 is UB. */
		if (s->frames != 0)
			print_session(in, s, k > j ? thr + j : NULL, k - j);
		j = k;
	}
	free(thr);
	if (in->sessions_untracked)
		printf("(%" PRIu64 " more sessions not summarised)\n",
		    in->sessions_untracked);
	if (in->thr_untracked)
		printf("(%" PRIu64 " thread entries not tracked: too many "
		    "threads)\n", in->thr_untracked);

	printf("damage: %" PRIu64 " report(s)\n", in->dmg_total);
	for (size_t i = 0; i < in->ndmg; i++) {
		const struct rtprof_dump_damage *d = &in->dmg[i];

		printf("  offset %" PRIu64 ": %s", d->offset,
		    rtprof_dump_damage_name(d->kind));
		if (d->session_index != 0)
			printf(" (session %" PRIu64 ")", d->session_index);
		switch (d->kind) {
		case RTPROF_DAMAGE_SKIPPED:
			printf(", %" PRIu64 " bytes", d->length);
			if (d->count != 0)
				printf(", %" PRIu64 " frame(s) with a bad "
				    "payload CRC", d->count);
			break;
		case RTPROF_DAMAGE_TRUNCATED:
			printf(", %" PRIu64 " bytes", d->length);
			break;
		case RTPROF_DAMAGE_SEQ_GAP:
			printf(", %" PRIu64 " frame(s) missing", d->count);
			break;
		case RTPROF_DAMAGE_SEQ_DUP:
			printf(", seq %" PRIu64, d->count);
			break;
		case RTPROF_DAMAGE_BAD_PAYLOAD:
			printf(", %s frame", rtprof_dump_frame_kind_name(
			    (unsigned)d->count));
			break;
		case RTPROF_DAMAGE_BAD_RECORD:
			printf(", %" PRIu64 " record(s) lost", d->count);
			break;
		case RTPROF_DAMAGE_NEWER_VERSION:
			printf(", version %" PRIu64, d->count);
			break;
		}
		printf(": ");
		rtprof_esc_puts(stdout, d->message);
		printf("\n");
	}
	if (in->dmg_total > in->ndmg)
		printf("  ... and %" PRIu64 " more\n",
		    in->dmg_total - in->ndmg);
	printf("total: %" PRIu64 " bytes, %" PRIu64 " frames, %" PRIu64
	    " sessions, %" PRIu64 " records; %" PRIu64 " bad frames, %" PRIu64
	    " bytes skipped, %" PRIu64 " frames missing, %" PRIu64
	    " repeated, %" PRIu64 " bad payloads, %" PRIu64 " bad records, %"
	    PRIu64 " tail bytes, %" PRIu64 " unknown frames\n", st->bytes,
	    st->frames, st->sessions, st->records, st->bad_frames,
	    st->skipped_bytes, st->seq_gaps, st->seq_dups, st->bad_payloads,
	    st->bad_records, st->truncated_tail_bytes, st->unknown_frames);
}

static void
insp_free(struct insp *in)
{
	for (size_t i = 0; i < in->str_cap; i++)
		free(in->str[i].text);
	free(in->str);
	free(in->thr);
	free(in->sess);
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [-v] DUMP|-\n"
	    "  Summarise an rtprof dump (docs/wire-format.md); - reads stdin.\n"
	    "  -v  also list every frame and record, one per line\n"
	    "exit: 0 clean, 1 damage found, 2 usage, unreadable, not a dump "
	    "or newer format\n");
}

/*
 * main - rtprof-inspect [-v] DUMP|-
 * Context: main thread; blocks reading the dump.
 * Return: exit status 0, 1 or 2 (see the top of this file).
 */
int
main(int argc, char **argv)
{
	static struct insp in;
	struct rtprof_dump_stats st;
	struct rtprof_dump_cb cb = {
		.ctx = &in,
		.on_frame = on_frame,
		.on_header = on_header,
		.on_modules = on_modules,
		.on_thread = on_thread,
		.on_schema = on_schema,
		.on_counter = on_counter,
		.on_category = on_category,
		.on_string = on_string,
		.on_data = on_data,
		.on_record = on_record,
		.on_pause = on_pause,
		.on_values = on_values,
		.on_event = on_event,
		.on_trailer = on_trailer,
		.on_damage = on_damage,
	};
	const char *path = NULL;
	bool opts_done = false;
	int fd, rc, status;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!opts_done && strcmp(a, "-v") == 0) {
			in.verbose = true;
		} else if (!opts_done && (strcmp(a, "-h") == 0 ||
		    strcmp(a, "--help") == 0)) {
			usage(stdout);
			return 0;
		} else if (!opts_done && strcmp(a, "--") == 0) {
			opts_done = true;
		} else if (!opts_done && a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, PROG ": unknown option %s\n", a);
			usage(stderr);
			return 2;
		} else if (path == NULL) {
			path = a;
		} else {
			fprintf(stderr, PROG ": more than one dump given\n");
			usage(stderr);
			return 2;
		}
	}
	if (path == NULL) {
		usage(stderr);
		return 2;
	}
	if (strcmp(path, "-") == 0) {
		fd = STDIN_FILENO;
		in.path = "<stdin>";
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		in.path = path;
		if (fd < 0) {
			fprintf(stderr, PROG ": %s: cannot open: %s\n", path,
			    strerror(errno));
			return 2;
		}
	}

	rc = rtprof_dump_read_fd(fd, &cb, &st);
	if (fd != STDIN_FILENO)
		close(fd);

	if (rc == -EPROTONOSUPPORT) {
		fprintf(stderr, PROG ": %s: offset %" PRIu64 ": dump format "
		    "version %u is newer than this reader's %d\n", in.path,
		    st.newer_version_offset, st.newer_version,
		    RTPROF_WIRE_VERSION);
		insp_free(&in);
		return 2;
	}
	if (rc < 0 && st.frames == 0) {
		fprintf(stderr, PROG ": %s: offset %" PRIu64 ": %s\n", in.path,
		    st.bytes, strerror(-rc));
		insp_free(&in);
		return 2;
	}
	if (rc == 0 && st.frames == 0) {
		fprintf(stderr, PROG ": %s: not an rtprof dump (no valid frame "
		    "in %" PRIu64 " bytes)\n", in.path, st.bytes);
		insp_free(&in);
		return 2;
	}
	print_report(&in, &st);
	status = in.dmg_total != 0 || in.mismatches != 0 ? 1 : 0;
	if (rc != 0) {
		fprintf(stderr, PROG ": %s: offset %" PRIu64 ": %s\n", in.path,
		    st.bytes, rc < 0 ? strerror(-rc) : "decoding stopped");
		status = 2;
	} else if (in.dmg_total != 0) {
		fprintf(stderr, PROG ": %s: offset %" PRIu64 ": damaged (%"
		    PRIu64 " damage reports, %" PRIu64 " record-count "
		    "mismatches)\n", in.path, in.dmg[0].offset, in.dmg_total,
		    in.mismatches);
	} else if (status == 1) {
		fprintf(stderr, PROG ": %s: %" PRIu64 " record counts disagree "
		    "with the trailer\n", in.path, in.mismatches);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, PROG ": %s: writing the report: %s\n", in.path,
		    strerror(errno));
		status = 2;
	}
	insp_free(&in);
	return status;
}
