/*
 * summarize_prof.c - reading, profiles: a converted profile (Gecko JSON,
 * maybe gzip) for `rtprof summarize`.
 *
 * Pipeline (summarize_int.h): the command -> sum_read_profile() -> two
 * passes of the JSON reader (summarize_json.c): one finds the metas (the
 * top-level one is written last: sampling interval, CPU delta unit, the
 * Idle category) and checks that the file is a whole profile; a second
 * one reads the threads one at a time, each whole into a DOM, for
 * summarize_prof_thread.c, so memory follows the largest thread, not the
 * whole profile.
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

#include "gecko_maps.h"
#include "summarize.h"
#include "summarize_int.h"

/* What meta @m says, into @out; the top level's (@top) also the unit of
 * the CPU deltas and the Idle category, into @pc. */
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
			if (gecko_grow((void **)&pc->sub, &pc->subcap,
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
		if ((rc = sum_prof_thread(s, pc, pm)) != 0)
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
int
sum_read_profile(struct sum *s, const char *path)
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
int
sum_is_profile(const char *path, bool *yes)
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
