/*
 * convert.c - the dump-to-profile conversion shared by the tools
 * (msgpack2gecko, rtprof view); see convert.h.
 *
 * Context: every function runs on the program's main thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "convert.h"
#include "esc.h"

const char tool_convert_help[] =
    "  --from MS         drop samples, counter values and instant\n"
    "                    markers before MS (ms after the top-level\n"
    "                    start); intervals that overlap are kept whole\n"
    "  --to MS           the same, after MS\n"
    "  --thread NAME     keep only threads named NAME (repeatable);\n"
    "                    each process's main thread is always kept; a\n"
    "                    NAME no thread has is an error (exit 2)\n"
    "  --sysroot DIR     look the recorded program's files up under DIR\n"
    "                    first (a target's root file system); files are\n"
    "                    used only when their build id matches the dump\n"
    "  --debug-dir DIR   also look for separate debug files under DIR\n"
    "                    (DIR/.build-id/xx/rest.debug; repeatable)\n"
    "  --no-symbols      do not symbolize native frames: they stay hex\n"
    "                    addresses for the front-end to look up in libs\n";

/* Context: main thread. */
int
tool_out_write(void *ctx, const void *p, size_t n)
{
	struct tool_out *o = ctx;
	const char *c = p;

	if (o->zo != NULL)
		return gzout_write(o->zo, p, n);
	if (o->gz != NULL) {
		while (n != 0) {
			unsigned part = n > (1u << 30) ? 1u << 30 : (unsigned)n;
			int w, zerr;

			errno = 0;
			w = gzwrite(o->gz, c, part);
			if (w <= 0) {
				/* Z_ERRNO: write(2) failed, errno says why
				 * (ENOSPC, EPIPE...); else zlib's own. */
				(void)gzerror(o->gz, &zerr);
				if (zerr == Z_ERRNO && errno != 0)
					return -errno;
				return zerr == Z_MEM_ERROR ? -ENOMEM : -EIO;
			}
			c += w;
			n -= (size_t)w;
		}
		return 0;
	}
	while (n != 0) {
		ssize_t w = write(o->fd, c, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Context: main thread. */
int
tool_convert_opts_init(struct tool_convert_opts *o, const char *prog,
    int argc)
{
	memset(o, 0, sizeof(*o));
	o->threads = calloc((size_t)argc + 1, sizeof(*o->threads));
	o->debug_dirs = calloc((size_t)argc + 1, sizeof(*o->debug_dirs));
	if (o->threads == NULL || o->debug_dirs == NULL) {
		tool_convert_opts_free(o);
		fprintf(stderr, "%s: out of memory\n", prog);
		return -ENOMEM;
	}
	o->filter.threads = o->threads;
	o->sym.debug_dirs = o->debug_dirs;
	return 0;
}

/* Context: main thread. */
void
tool_convert_opts_free(struct tool_convert_opts *o)
{
	free(o->threads);
	free(o->debug_dirs);
	o->threads = NULL;
	o->debug_dirs = NULL;
}

static bool
parse_ms(const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return errno == 0 && end != s && *end == '\0' && *v == *v;
}

/* Context: main thread. */
int
tool_convert_option(struct tool_convert_opts *o, const char *prog,
    int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	struct stat sb;
	const char *v;

	if (strcmp(a, "--no-symbols") == 0) {
		o->sym.disabled = true;
		return 1;
	}
	if (strcmp(a, "--from") != 0 && strcmp(a, "--to") != 0 &&
	    strcmp(a, "--thread") != 0 && strcmp(a, "--sysroot") != 0 &&
	    strcmp(a, "--debug-dir") != 0)
		return 0;
	if (*i + 1 >= argc) {
		fprintf(stderr, "%s: %s needs an argument\n", prog, a);
		return -1;
	}
	v = argv[++*i];
	if (strcmp(a, "--from") == 0 || strcmp(a, "--to") == 0) {
		bool from = strcmp(a, "--from") == 0;

		if (!parse_ms(v, from ? &o->filter.from_ms :
		    &o->filter.to_ms)) {
			fprintf(stderr, "%s: %s: not a number of ms: %s\n",
			    prog, a, v);
			return -1;
		}
		if (from)
			o->filter.has_from = true;
		else
			o->filter.has_to = true;
	} else if (strcmp(a, "--thread") == 0) {
		o->threads[o->filter.nthreads++] = v;
	} else {
		/* A typo would silently give hex addresses. */
		if (stat(v, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
			fprintf(stderr, "%s: %s: not a directory: %s\n", prog,
			    a, v);
			return -1;
		}
		if (strcmp(a, "--sysroot") == 0)
			o->sym.sysroot = v;
		else
			o->debug_dirs[o->sym.ndebug_dirs++] = v;
	}
	return 1;
}

/* Context: main thread. */
int
tool_convert_check(const struct tool_convert_opts *o, const char *prog)
{
	if (o->filter.has_from && o->filter.has_to &&
	    o->filter.to_ms < o->filter.from_ms) {
		fprintf(stderr, "%s: --to is before --from\n", prog);
		return -1;
	}
	return 0;
}

/* A one-line progress bar on stderr, redrawn at most 10 times a second. */
struct progress {
	const char *prog;
	const char *name;
	uint64_t total;                 /* 0: size unknown (a pipe) */
	double last;
	bool shown;
};

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void
progress_cb(void *ctx, uint64_t offset)
{
	struct progress *p = ctx;
	double t = now_s();

	if (t - p->last < 0.1)
		return;
	p->last = t;
	p->shown = true;
	if (p->total != 0) {
		char bar[31];
		uint64_t off = offset > p->total ? p->total : offset;
		size_t fill = (size_t)(off * 30 / p->total);

		memset(bar, '#', fill);
		memset(bar + fill, ' ', 30 - fill);
		bar[30] = '\0';
		fprintf(stderr, "\r%s: %s [%s] %3u%% %.1f/%.1f MB\033[K",
		    p->prog, p->name, bar, (unsigned)(off * 100 / p->total),
		    (double)off / 1e6, (double)p->total / 1e6);
	} else {
		fprintf(stderr, "\r%s: %s %.1f MB read\033[K", p->prog,
		    p->name, (double)offset / 1e6);
	}
}

static void
progress_end(struct progress *p)
{
	if (p->shown)
		fprintf(stderr, "\r\033[K");
	p->shown = false;
}

/* A dump read for one of the formats: one of the two is set. */
struct any_dump {
	struct rtprof_gecko *g;
	struct rtprof_pprof_dump *p;
};

static void
any_free(struct any_dump *d)
{
	rtprof_gecko_free(d->g);
	rtprof_pprof_dump_free(d->p);
	d->g = NULL;
	d->p = NULL;
}

/* A new, empty dump of @fmt named @name. Return: 0 or -ENOMEM. */
static int
any_new(struct any_dump *d, enum tool_format fmt, const char *name,
    const struct rtprof_gecko_symbols *sym, bool keep_times)
{
	d->g = NULL;
	d->p = NULL;
	if (fmt == TOOL_FORMAT_GECKO) {
		if (rtprof_gecko_new(&d->g, name) != 0)
			return -ENOMEM;
		rtprof_gecko_set_symbols(d->g, sym);
		return 0;
	}
	if (rtprof_pprof_dump_new(&d->p, name) != 0)
		return -ENOMEM;
	rtprof_pprof_dump_set_symbols(d->p, sym);
	if (keep_times)
		rtprof_pprof_dump_keep_times(d->p);
	return 0;
}

static int
any_read_fd(struct any_dump *d, int fd, struct progress *pr,
    struct rtprof_dump_stats *st)
{
	int rc;

	if (d->g != NULL) {
		rtprof_gecko_set_progress(d->g, pr != NULL ? progress_cb :
		    NULL, pr);
		rc = rtprof_gecko_read_fd(d->g, fd, st);
		rtprof_gecko_set_progress(d->g, NULL, NULL);
		return rc;
	}
	rtprof_pprof_dump_set_progress(d->p, pr != NULL ? progress_cb : NULL,
	    pr);
	rc = rtprof_pprof_dump_read_fd(d->p, fd, st);
	rtprof_pprof_dump_set_progress(d->p, NULL, NULL);
	return rc;
}

/*
 * Read the dump @in_path ("-": stdin) into @d, a new dump of @fmt.
 * Context: main thread; blocks in read(2). Return: 0, or 2 (said).
 */
static int
read_any(const char *prog, const char *in_path, bool progress,
    const struct rtprof_gecko_symbols *sym, enum tool_format fmt,
    bool keep_times, struct any_dump *d)
{
	struct rtprof_dump_stats st;
	const char *name = strcmp(in_path, "-") == 0 ? "<stdin>" : in_path;
	struct progress pr = { .prog = prog, .name = name };
	struct stat sb;
	int fd, rc;

	if (strcmp(in_path, "-") == 0) {
		fd = STDIN_FILENO;
	} else {
		fd = open(in_path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "%s: %s: cannot open: %s\n", prog,
			    name, strerror(errno));
			return 2;
		}
	}
	if (any_new(d, fmt, name, sym, keep_times) != 0) {
		fprintf(stderr, "%s: %s: out of memory\n", prog, name);
		if (fd != STDIN_FILENO)
			close(fd);
		return 2;
	}
	if (progress) {
		if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode))
			pr.total = (uint64_t)sb.st_size;
		pr.last = now_s();
	}
	rc = any_read_fd(d, fd, progress ? &pr : NULL, &st);
	progress_end(&pr);
	if (fd != STDIN_FILENO)
		close(fd);
	if (rc == -EPROTONOSUPPORT) {
		fprintf(stderr, "%s: %s: offset %" PRIu64 ": dump format "
		    "version %u is newer than this reader's %d\n", prog, name,
		    st.newer_version_offset, st.newer_version,
		    RTPROF_WIRE_VERSION);
		goto fail;
	}
	if (rc != 0) {
		fprintf(stderr, "%s: %s: offset %" PRIu64 ": %s\n", prog, name,
		    st.bytes, rc < 0 ? strerror(-rc) : "decoding stopped");
		goto fail;
	}
	if (st.frames == 0) {
		fprintf(stderr, "%s: %s: not an rtprof dump (no valid frame "
		    "in %" PRIu64 " bytes)\n", prog, name, st.bytes);
		goto fail;
	}
	return 0;
fail:
	any_free(d);
	return 2;
}

/* Context: main thread. */
int
tool_read_dump(const char *prog, const char *in_path, bool progress,
    const struct rtprof_gecko_symbols *sym, struct rtprof_gecko **gp)
{
	struct any_dump d;

	if (read_any(prog, in_path, progress, sym, TOOL_FORMAT_GECKO, false,
	    &d) != 0)
		return 2;
	*gp = d.g;
	return 0;
}

static size_t
any_sessions(const struct any_dump *d)
{
	return d->g != NULL ? rtprof_gecko_sessions(d->g) :
	    rtprof_pprof_dump_sessions(d->p);
}

static uint64_t
any_problems(const struct any_dump *d)
{
	return d->g != NULL ? rtprof_gecko_problems(d->g) :
	    rtprof_pprof_dump_problems(d->p);
}

/* Tell about damage in @d (exit status 1). */
static void
report_damage(const char *prog, const struct any_dump *d, const char *name)
{
	uint64_t doff;
	const char *dmsg;
	char e[256];
	int rc = d->g != NULL ? rtprof_gecko_first_damage(d->g, &doff, &dmsg) :
	    rtprof_pprof_dump_first_damage(d->p, &doff, &dmsg);

	if (rc == 0)
		fprintf(stderr, "%s: %s: offset %" PRIu64 ": damaged: %s "
		    "(%" PRIu64 " report(s); converted what was readable%s)\n",
		    prog, name, doff, rtprof_esc(e, sizeof(e), dmsg),
		    any_problems(d), d->g != NULL ?
		    ", see profileGatheringLog" : "");
	else
		fprintf(stderr, "%s: %s: frames of sessions without a "
		    "header ignored (their start is missing)\n", prog, name);
}

/*
 * Which --thread names matched a thread of the dumps read so far, and the
 * first distinct thread names seen (for the message when one did not).
 */
#define SEEN_MAX 64

struct thread_match {
	const struct rtprof_gecko_filter *f;
	bool *matched;                  /* per f->threads[] */
	char *copies[SEEN_MAX];
	size_t nseen;
	bool more;                      /* more names than SEEN_MAX */
};

static void
match_name(void *ctx, const char *name)
{
	struct thread_match *m = ctx;
	size_t k;

	for (k = 0; k < m->f->nthreads; k++)
		if (strcmp(name, m->f->threads[k]) == 0)
			m->matched[k] = true;
	for (k = 0; k < m->nseen; k++)
		if (strcmp(name, m->copies[k]) == 0)
			return;
	if (m->nseen == SEEN_MAX || (m->copies[m->nseen] =
	    strdup(name)) == NULL) {
		m->more = true;
		return;
	}
	m->nseen++;
}

static void
match_free(struct thread_match *m)
{
	for (size_t k = 0; k < m->nseen; k++)
		free(m->copies[k]);
	free(m->matched);
}

/*
 * After the last dump: every --thread NAME must name a thread of one of
 * them. Return: 0, or -1 (said, with the names there are).
 */
static int
match_report(const char *prog, const struct thread_match *m)
{
	char e[256];
	int rc = 0;

	for (size_t k = 0; k < m->f->nthreads; k++) {
		if (m->matched[k])
			continue;
		fprintf(stderr, "%s: --thread %s: no thread of that name; the "
		    "threads are:", prog, rtprof_esc(e, sizeof(e),
		    m->f->threads[k]));
		for (size_t i = 0; i < m->nseen; i++)
			fprintf(stderr, "%s \"%s\"", i != 0 ? "," : "",
			    rtprof_esc(e, sizeof(e), m->copies[i]));
		fprintf(stderr, "%s\n", m->nseen == 0 ? " (none named)" :
		    m->more ? ", ..." : "");
		rc = -1;
	}
	return rc;
}

/* The profile being written, in one of the formats: one is set. */
struct any_writer {
	struct rtprof_gecko_writer *g;
	struct rtprof_pprof_writer *p;
};

/*
 * Start the profile in @o->format: the writer, the gathering notes.
 * Return: 0, or -1 (said).
 */
static int
writer_start(const char *prog, const struct tool_convert_opts *o,
    const struct tool_convert_sink *sink, struct any_writer *w)
{
	if (o->format == TOOL_FORMAT_PPROF) {
		if (rtprof_pprof_writer_new(&w->p, &o->filter, sink->write,
		    sink->ctx) == 0)
			return 0;
		fprintf(stderr, "%s: out of memory\n", prog);
		return -1;
	}
	if (rtprof_gecko_writer_new(&w->g, &o->filter, sink->write,
	    sink->ctx) != 0) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return -1;
	}
	for (size_t k = 0; k < o->nnotes; k++) {
		if (rtprof_gecko_writer_note(w->g, &o->notes[k]) == -ENOMEM) {
			fprintf(stderr, "%s: out of memory\n", prog);
			return -1;
		}
	}
	return 0;
}

static int
writer_add(struct any_writer *w, struct any_dump *d)
{
	return w->g != NULL ? rtprof_gecko_writer_add(w->g, d->g) :
	    rtprof_pprof_writer_add(w->p, d->p);
}

/* Finish and free @w (nothing started: 0). */
static int
writer_finish(struct any_writer *w)
{
	int rc = 0;

	if (w->g != NULL)
		rc = rtprof_gecko_writer_finish(w->g);
	if (w->p != NULL)
		rc = rtprof_pprof_writer_finish(w->p);
	w->g = NULL;
	w->p = NULL;
	return rc;
}

/* Context: main thread. */
int
tool_convert(const char *prog, char **in, int nin,
    const struct tool_convert_opts *o, bool quiet, bool progress,
    const struct tool_convert_sink *sink, bool *opened, int *werr)
{
	struct any_writer w = { 0 };
	struct thread_match m = { .f = &o->filter };
	bool keep_times = o->filter.has_from || o->filter.has_to;
	int status = 0, rc = 0;

	*opened = false;
	*werr = 0;
	if (o->filter.nthreads != 0 && (m.matched = calloc(o->filter.nthreads,
	    sizeof(*m.matched))) == NULL) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 2;
	}
	for (int i = 0; i < nin; i++) {
		struct any_dump d;
		const char *name = strcmp(in[i], "-") == 0 ? "<stdin>" : in[i];

		if (read_any(prog, in[i], progress, &o->sym, o->format,
		    keep_times, &d) != 0)
			goto fail;
		if (any_sessions(&d) == 0) {
			fprintf(stderr, "%s: %s: no session header found: "
			    "nothing to convert (the start of the dump is "
			    "missing?)\n", prog, name);
			any_free(&d);
			goto fail;
		}
		if (m.matched != NULL) {
			if (d.g != NULL)
				rtprof_gecko_thread_names(d.g, match_name, &m);
			else
				rtprof_pprof_dump_thread_names(d.p, match_name,
				    &m);
			if (i + 1 == nin && match_report(prog, &m) != 0) {
				any_free(&d);
				goto fail;
			}
		}
		if (!*opened) {
			/* The output is created once the first dump read. */
			if (sink->open != NULL && sink->open(sink->ctx) != 0) {
				any_free(&d);
				goto fail;
			}
			*opened = true;
			if (writer_start(prog, o, sink, &w) != 0) {
				any_free(&d);
				goto fail;
			}
		}
		rc = writer_add(&w, &d);
		if (rc == 0 && any_problems(&d) != 0) {
			status = 1;
			if (!quiet)
				report_damage(prog, &d, name);
		}
		any_free(&d);
		if (rc != 0)
			break;
	}
	if (rc == 0)
		rc = writer_finish(&w);
	else
		writer_finish(&w);
	match_free(&m);
	if (rc != 0) {
		*werr = rc;
		return 2;
	}
	return status;
fail:
	match_free(&m);
	writer_finish(&w);
	return 2;
}
