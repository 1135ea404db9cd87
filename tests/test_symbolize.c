/*
 * test_symbolize.c - the offline symbolizer (codec/symbolize.c) resolves
 * this test program's own functions (name, file, line) and a libc function
 * from the module map as a dump would carry it; rejects a wrong build id;
 * reports a missing file; finds files under --sysroot and separate debug
 * files under --debug-dir by build id; caches; refuses what a hostile
 * module map names (FIFO, devices, /proc, directories) with one message.
 * Prints lookup timings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "selfmod.h"
#include "symbolize.h"

/* ---- targets (non-static, noinline; line numbers are checked) ---- */

volatile int sink;
void *volatile g_ra;
int g_call_line;

enum { LINE_A = __LINE__ + 1 };
__attribute__((noinline)) int sym_target_a(int x) {
	sink += x;
	return sink * 3;
}

__attribute__((noinline)) int
grab_ra(int x)
{
	g_ra = __builtin_return_address(0);
	sink += x;
	return sink;
}

__attribute__((noinline)) int
sym_target_b(int x)
{
	int r = grab_ra(x + 1); g_call_line = __LINE__;
	return r + sink;
}

/* ---- the module map, as core/procinfo.c records it ---- */

static struct selfmod
module_of(const void *addr)
{
	struct selfmod m;

	RTPROF_CHECK_EQ(selfmod_find(addr, &m), 0);
	return m;
}

static int
add(struct rtprof_symbolizer *s, const struct selfmod *m, const char *path)
{
	return rtprof_symbolizer_add_module(s, path ? path : m->path, m->start,
	    m->end, m->offset, m->build_id, m->build_id_len);
}

static int
ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);

	return s != NULL && a >= b && strcmp(s + a - b, suffix) == 0;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void
print_problem(void *arg, const char *line)
{
	int *n = arg;

	(*n)++;
	printf("  problem: %s\n", line);
}

/* Own functions resolve to name, file and line. */
static void
check_self(struct rtprof_symbolizer *s, int mi)
{
	struct rtprof_sym r;

	RTPROF_CHECK_EQ(rtprof_symbolize(s, (uint64_t)(uintptr_t)&sym_target_a, &r), RTPROF_SYM_OK);
	RTPROF_CHECK_STREQ(r.name, "sym_target_a");
	RTPROF_CHECK_EQ(r.module, mi);
	RTPROF_CHECK_EQ(r.sym_offset, 0);
	RTPROF_CHECK(ends_with(r.file, "test_symbolize.c"));
	/* The entry's line: the declarator, or at -O2 the first statement. */
	RTPROF_CHECK_GE(r.line, LINE_A);
	RTPROF_CHECK_LE(r.line, LINE_A + 2);

	/* A return address, looked up at ra - 1: the line of the call. */
	RTPROF_CHECK_EQ(rtprof_symbolize(s, (uint64_t)(uintptr_t)g_ra - 1, &r), RTPROF_SYM_OK);
	RTPROF_CHECK_STREQ(r.name, "sym_target_b");
	RTPROF_CHECK_GT(r.sym_offset, 0);
	RTPROF_CHECK(ends_with(r.file, "test_symbolize.c"));
	RTPROF_CHECK_EQ(r.line, g_call_line);
}

static void
run(const char *cmd)
{
	printf("  $ %s\n", cmd);
	fflush(stdout);
	RTPROF_CHECK_EQ(system(cmd), 0);
}

/*
 * Hostile module maps: paths naming a FIFO (a plain open would block for
 * ever), devices, /proc and /sys files, a directory, a non-ELF file,
 * symlinks to some of them, a missing file, and the same through a
 * sysroot with "..": none is used and every one gets the same detail, so
 * that a dump cannot tell which files exist. A symlink to a real module
 * is followed (symlinks in /usr/lib are normal).
 */
static void
check_hostile_paths(const struct selfmod *self)
{
	char dir[] = "/tmp/rtprof-symh-XXXXXX", cmd[4096], p[512];
	static const char *const inside[] = { "fifo", "subdir", "notelf",
		"to-zero", "to-mem", "to-fifo", "missing" };
	static const char *const abs[] = { "/dev/zero", "/dev/urandom",
		"/dev/tty", "/proc/self/mem", "/proc/kmsg", "/sys/kernel/notes",
		"/tmp" };
	struct rtprof_symbolizer *s = rtprof_symbolizer_new(NULL, NULL, 0);
	const char *detail;
	size_t n = 0;

	RTPROF_CHECK(mkdtemp(dir) != NULL);
	snprintf(cmd, sizeof(cmd), "cd %s && mkfifo fifo && mkdir subdir && "
	    "echo hello > notelf && ln -s /dev/zero to-zero && "
	    "ln -s /proc/self/mem to-mem && ln -s fifo to-fifo && "
	    "ln -s '%s' to-self", dir, self->path);
	run(cmd);
	alarm(60); /* a FIFO opened for reading would block here */
	for (size_t i = 0; i < sizeof(inside) / sizeof(inside[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, inside[i]);
		RTPROF_CHECK_EQ(add(s, self, p), (int)n++);
	}
	for (size_t i = 0; i < sizeof(abs) / sizeof(abs[0]); i++)
		RTPROF_CHECK_EQ(add(s, self, abs[i]), (int)n++);
	for (size_t i = 0; i < n; i++) {
		RTPROF_CHECK_EQ(rtprof_symbolizer_module(s, i, NULL, &detail),
		    RTPROF_MOD_MISSING);
		RTPROF_CHECK_STREQ(detail, "not usable");
	}
	snprintf(p, sizeof(p), "%s/to-self", dir);
	RTPROF_CHECK_EQ(add(s, self, p), (int)n);
	RTPROF_CHECK_EQ(rtprof_symbolizer_module(s, n, NULL, NULL), RTPROF_MOD_OK);
	rtprof_symbolizer_free(s);
	/* Under a sysroot, ".." leads out of it to /proc: refused too. */
	s = rtprof_symbolizer_new(dir, NULL, 0);
	add(s, self, "/../../../../../proc/self/mem");
	RTPROF_CHECK_EQ(rtprof_symbolizer_module(s, 0, NULL, &detail),
	    RTPROF_MOD_MISSING);
	RTPROF_CHECK(strncmp(detail, "not usable", 10) == 0);
	rtprof_symbolizer_free(s);
	alarm(0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	run(cmd);
}

/* No module at all: every address is NOMODULE (no sort of an empty,
 * unallocated table). */
static void
check_no_modules(void)
{
	struct rtprof_symbolizer *s = rtprof_symbolizer_new(NULL, NULL, 0);
	struct rtprof_sym r;

	RTPROF_CHECK_EQ(rtprof_symbolize(s, 0x401000, &r), RTPROF_SYM_NOMODULE);
	RTPROF_CHECK_EQ(r.module, -1);
	rtprof_symbolizer_free(s);
}

/*
 * The map over time: the same range held by module 0 until tick 100 and
 * by module 1 from tick 200 (unloaded at 100, another loaded there and
 * seen at 200). A lookup takes the module mapped at its time; between
 * the two (loaded before the writer saw it) the one the next change
 * added; an address outside both is in no module at any time.
 */
static void
check_spans(const struct selfmod *self)
{
	struct rtprof_symbolizer *s = rtprof_symbolizer_new(NULL, NULL, 0);
	uint64_t a = (uint64_t)(uintptr_t)&sym_target_a;
	struct rtprof_sym r;

	RTPROF_CHECK_EQ(add(s, self, NULL), 0);
	RTPROF_CHECK_EQ(add(s, self, NULL), 1);
	/* Module 0 unloaded at 100 (the last one added with that range is
	 * 1: end it first, then give it its own span), 1 loaded at 200. */
	RTPROF_CHECK_EQ(rtprof_symbolizer_module_unload(s, self->path,
	    self->start, self->end, 100), 1);
	rtprof_symbolizer_module_span(s, 0, 0, 100);
	rtprof_symbolizer_module_span(s, 1, 200, UINT64_MAX);
	RTPROF_CHECK_EQ(rtprof_symbolize_at(s, a, 50, &r), RTPROF_SYM_OK);
	RTPROF_CHECK_EQ(r.module, 0);
	RTPROF_CHECK_STREQ(r.name, "sym_target_a");
	RTPROF_CHECK_EQ(rtprof_symbolize_at(s, a, 99, &r), RTPROF_SYM_OK);
	RTPROF_CHECK_EQ(r.module, 0);
	RTPROF_CHECK_EQ(rtprof_symbolize_at(s, a, 150, &r), RTPROF_SYM_OK);
	RTPROF_CHECK_EQ(r.module, 1);
	RTPROF_CHECK_EQ(rtprof_symbolize_at(s, a, 250, &r), RTPROF_SYM_OK);
	RTPROF_CHECK_EQ(r.module, 1);
	/* Cached per module: the time picks again. */
	RTPROF_CHECK_EQ(rtprof_symbolize_at(s, a, 10, &r), RTPROF_SYM_OK);
	RTPROF_CHECK_EQ(r.module, 0);
	RTPROF_CHECK_EQ(rtprof_symbolize(s, a, &r), RTPROF_SYM_OK);
	RTPROF_CHECK_EQ(r.module, 1);
	/* Module 1 unloaded at 300, its span keeps its start; nothing
	 * after it: no module at 350, still module 1 at 250. */
	RTPROF_CHECK_EQ(rtprof_symbolizer_module_unload(s, self->path,
	    self->start, self->end, 300), 1);
	RTPROF_CHECK_EQ(rtprof_symbolizer_module_unload(s, self->path,
	    self->start, self->end, 400), -1);
	RTPROF_CHECK_EQ(rtprof_symbolize_at(s, a, 350, &r), RTPROF_SYM_NOMODULE);
	RTPROF_CHECK_EQ(r.module, -1);
	RTPROF_CHECK_EQ(rtprof_symbolize_at(s, a, 250, &r), RTPROF_SYM_OK);
	RTPROF_CHECK_EQ(r.module, 1);
	RTPROF_CHECK_EQ(rtprof_symbolize_at(s, a, 50, &r), RTPROF_SYM_OK);
	RTPROF_CHECK_EQ(r.module, 0);
	rtprof_symbolizer_free(s);
}

/*
 * The vDSO: no file ("linux-vdso.so.1"), named from the ELF image the
 * dump carries (IMAGE frame), added before or after the module.
 */
static void
check_vdso(void)
{
	uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	struct selfmod v;
	struct rtprof_sym r;
	FILE *f;
	char line[256];
	size_t len = 0;

	if (base == 0 || selfmod_find((const void *)(base + 0x800), &v) != 0) {
		printf("vdso: none here, not checked\n");
		return;
	}
	f = fopen("/proc/self/maps", "r");
	RTPROF_CHECK(f != NULL);
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo == base)
			len = hi - lo;
	}
	fclose(f);
	RTPROF_CHECK_GT(len, 0);
	for (int order = 0; order < 2; order++) {
		struct rtprof_symbolizer *s = rtprof_symbolizer_new(NULL, NULL, 0);
		uint64_t a = 0;
		const char *detail;

		if (order == 0)
			RTPROF_CHECK_EQ(rtprof_symbolizer_add_image(s, base,
			    (const void *)base, len), 0);
		RTPROF_CHECK_EQ(rtprof_symbolizer_add_module(s, v.path, v.start,
		    v.end, v.offset, v.build_id, v.build_id_len), 0);
		if (order == 1) {
			RTPROF_CHECK_EQ(rtprof_symbolize(s, v.start, &r),
			    RTPROF_SYM_UNUSABLE);
			RTPROF_CHECK_EQ(rtprof_symbolizer_add_image(s, base,
			    (const void *)base, len), 0);
		}
		RTPROF_CHECK_EQ(rtprof_symbolizer_module(s, 0, NULL, &detail),
		    RTPROF_MOD_OK);
		/* Some address of the vDSO's code is __vdso_clock_gettime. */
		for (uint64_t p = v.start; p < v.end && a == 0; p += 4)
			if (rtprof_symbolize(s, p, &r) == RTPROF_SYM_OK &&
			    strstr(r.name, "clock_gettime") != NULL)
				a = p;
		RTPROF_CHECK(a != 0);
		printf("vdso (image %s the module): %s at %#llx\n",
		    order == 0 ? "before" : "after", r.name,
		    (unsigned long long)a);
		rtprof_symbolizer_free(s);
	}
}

/*
 * libc's separate debug file in the system's directory (libc6-dbg), when
 * installed: its function names, not its source lines (inflating its
 * DWARF took half of a recorded make's conversion), and the module says
 * how to get them; RTPROF_DEBUG_LINES=all reads them.
 */
static void
check_system_lines(struct rtprof_symbolizer *s, int li,
    const struct selfmod *libc, const struct rtprof_sym *r)
{
	char dbg[300], *p = dbg;
	const char *detail = NULL, *all = getenv("RTPROF_DEBUG_LINES");
	struct stat sb;

	if (libc->build_id_len < 2)
		return;
	p += sprintf(p, "/usr/lib/debug/.build-id/%02x/", libc->build_id[0]);
	for (size_t i = 1; i < libc->build_id_len; i++)
		p += sprintf(p, "%02x", libc->build_id[i]);
	strcpy(p, ".debug");
	if (stat(dbg, &sb) != 0) {
		printf("no %s: system lines not checked\n", dbg);
		return;
	}
	rtprof_symbolizer_module(s, li, NULL, &detail);
	if (all != NULL && strcmp(all, "all") == 0) {
		RTPROF_CHECK(r->file != NULL && r->line > 0);
		return;
	}
	RTPROF_CHECK(r->file == NULL);
	RTPROF_CHECK(detail != NULL &&
	    strstr(detail, "RTPROF_DEBUG_LINES=all") != NULL);
}

int
main(void)
{
	ldiv_t (*volatile libc_fn)(long, long) = ldiv;
	struct selfmod self, libc;
	struct rtprof_symbolizer *s;
	struct rtprof_sym r, r2;
	const char *path, *detail;
	int mi, li, n;

	sym_target_b(sym_target_a(1));
	self = module_of((const void *)&sym_target_a);
	RTPROF_CHECK_GT(self.build_id_len, 0); /* linked with --build-id */
	libc = module_of((const void *)libc_fn);
	printf("self: %s [%#llx, %#llx) offset %#llx\nlibc: %s\n", self.path,
	    (unsigned long long)self.start, (unsigned long long)self.end,
	    (unsigned long long)self.offset, libc.path);

	/* 1. Own module and libc, as the dump records them. */
	s = rtprof_symbolizer_new(NULL, NULL, 0);
	RTPROF_CHECK(s != NULL);
	li = add(s, &libc, NULL);
	mi = add(s, &self, NULL);
	RTPROF_CHECK_EQ(li, 0);
	RTPROF_CHECK_EQ(mi, 1);
	RTPROF_CHECK_EQ(rtprof_symbolizer_module(s, 1, &path, &detail), RTPROF_MOD_OK);
	RTPROF_CHECK_STREQ(path, self.path);
	check_self(s, mi);
	RTPROF_CHECK_EQ(rtprof_symbolize(s, (uint64_t)(uintptr_t)libc_fn, &r), RTPROF_SYM_OK);
	RTPROF_CHECK_STREQ(r.name, "ldiv");
	RTPROF_CHECK_EQ(r.module, li);
	printf("ldiv: %s:%d (libc debug info %s)\n", r.file ? r.file : "?", r.line,
	    r.file ? "found" : "absent");
	check_system_lines(s, li, &libc, &r);
	/* Outside every module. */
	RTPROF_CHECK_EQ(rtprof_symbolize(s, 16, &r), RTPROF_SYM_NOMODULE);
	RTPROF_CHECK_EQ(r.module, -1);
	RTPROF_CHECK(r.name == NULL);

	/* Cache: same answers, same strings; hits counted. */
	{
		struct rtprof_symbolizer_stats st0, st1;
		uint64_t a = (uint64_t)(uintptr_t)&sym_target_a;

		rtprof_symbolizer_stats(s, &st0);
		RTPROF_CHECK_EQ(rtprof_symbolize(s, a, &r), RTPROF_SYM_OK);
		RTPROF_CHECK_EQ(rtprof_symbolize(s, a, &r2), RTPROF_SYM_OK);
		RTPROF_CHECK(memcmp(&r, &r2, sizeof(r)) == 0);
		RTPROF_CHECK(r.name == r2.name && r.file == r2.file);
		rtprof_symbolizer_stats(s, &st1);
		RTPROF_CHECK_EQ(st1.lookups - st0.lookups, 2);
		RTPROF_CHECK_EQ(st1.hits - st0.hits, 2);
	}

	/* Timing: distinct addresses across the executable's code, uncached
	 * then cached (not asserted). */
	{
		uint64_t size = self.end - self.start, base = self.start;
		int N = size < 20000 ? (int)size : 20000;
		uint64_t step = size / (uint64_t)N;
		struct rtprof_symbolizer *t = rtprof_symbolizer_new(NULL, NULL, 0);
		double t0, t1, t2;
		int found = 0;

		RTPROF_CHECK(t != NULL);
		add(t, &self, NULL);
		t0 = now();
		for (int i = 0; i < N; i++)
			found += rtprof_symbolize(t, base + (uint64_t)i * step, &r) == 0;
		t1 = now();
		for (int i = 0; i < N; i++)
			rtprof_symbolize(t, base + (uint64_t)i * step, &r);
		t2 = now();
		printf("timing: %d addresses (%d named): uncached %.0f ns/lookup, cached %.0f ns/lookup\n",
		    N, found, (t1 - t0) / N * 1e9, (t2 - t1) / N * 1e9);
		rtprof_symbolizer_free(t);
	}
	rtprof_symbolizer_free(s);

	/* The same file in another process, loaded 16 MiB higher (ASLR): a
	 * second symbolizer, made after the first is freed, shares the
	 * thread's copy of the file (read once) and names every address by
	 * its own load bias: the same function, offset, ELF address, file
	 * and line as at the real load address. */
	{
		const uint64_t shift = 16u << 20;
		const uint64_t ra = (uint64_t)(uintptr_t)g_ra - 1;
		struct selfmod moved = self;
		struct rtprof_sym r0, r3;

		s = rtprof_symbolizer_new(NULL, NULL, 0);
		RTPROF_CHECK_EQ(add(s, &self, NULL), 0);
		RTPROF_CHECK_EQ(rtprof_symbolize(s, ra, &r0), RTPROF_SYM_OK);
		r0.name = NULL;         /* freed with s: not compared */
		r0.file = NULL;
		rtprof_symbolizer_free(s);
		moved.start += shift;
		moved.end += shift;
		s = rtprof_symbolizer_new(NULL, NULL, 0);
		RTPROF_CHECK_EQ(add(s, &moved, NULL), 0);
		RTPROF_CHECK_EQ(rtprof_symbolize(s, ra + shift, &r3),
		    RTPROF_SYM_OK);
		RTPROF_CHECK_STREQ(r3.name, "sym_target_b");
		RTPROF_CHECK_EQ(r3.line, g_call_line);
		RTPROF_CHECK(ends_with(r3.file, "test_symbolize.c"));
		RTPROF_CHECK_EQ(r3.vaddr, r0.vaddr);
		RTPROF_CHECK_EQ(r3.sym_offset, r0.sym_offset);
		RTPROF_CHECK_EQ(r3.file_offset, r0.file_offset);
		RTPROF_CHECK_EQ(rtprof_symbolize(s, (uint64_t)(uintptr_t)
		    &sym_target_a + shift, &r3), RTPROF_SYM_OK);
		RTPROF_CHECK_STREQ(r3.name, "sym_target_a");
		RTPROF_CHECK_EQ(r3.sym_offset, 0);
		/* Nothing at the old address in that process. */
		RTPROF_CHECK_EQ(rtprof_symbolize(s, (uint64_t)(uintptr_t)
		    &sym_target_a, &r3), RTPROF_SYM_NOMODULE);
		rtprof_symbolizer_free(s);
	}

	/* 2. Wrong build id: rejected, nothing resolved. Missing file. */
	{
		struct selfmod bad = self;
		int np = 0;

		bad.build_id[0] ^= 0xff;
		s = rtprof_symbolizer_new(NULL, NULL, 0);
		RTPROF_CHECK_EQ(add(s, &bad, NULL), 0);
		RTPROF_CHECK_EQ(rtprof_symbolizer_module(s, 0, NULL, &detail), RTPROF_MOD_MISMATCH);
		RTPROF_CHECK(detail != NULL && strstr(detail, "mismatch") != NULL);
		RTPROF_CHECK_EQ(rtprof_symbolize(s, (uint64_t)(uintptr_t)&sym_target_a, &r),
		    RTPROF_SYM_UNUSABLE);
		RTPROF_CHECK(r.name == NULL && r.file == NULL);
		RTPROF_CHECK_EQ(r.module, 0);
		RTPROF_CHECK_EQ(r.file_offset,
		    (uint64_t)(uintptr_t)&sym_target_a - self.start + self.offset);

		RTPROF_CHECK_EQ(add(s, &libc, "/nonexistent/rtprof/libgone.so"), 1);
		RTPROF_CHECK_EQ(rtprof_symbolizer_module(s, 1, NULL, NULL), RTPROF_MOD_MISSING);
		RTPROF_CHECK_EQ(rtprof_symbolize(s, (uint64_t)(uintptr_t)libc_fn, &r),
		    RTPROF_SYM_UNUSABLE);
		RTPROF_CHECK_EQ(r.module, 1);
		RTPROF_CHECK_EQ(rtprof_symbolizer_problems(s, print_problem, &np), 2);
		RTPROF_CHECK_EQ(np, 2);
		rtprof_symbolizer_free(s);
	}

	/* 3. --sysroot: the file exists only under DIR at its recorded path;
	 * then --debug-dir: a stripped copy there plus its separate debug file
	 * at DEBUG/.build-id/xx/rest.debug. */
	{
		char dir[] = "/tmp/rtprof-sym-XXXXXX", cmd[4096], bid[129];
		const char *fake = "/rtprof-nonexistent/bin/test_symbolize";
		const char *dbg[1];
		struct stat sb;

		RTPROF_CHECK(mkdtemp(dir) != NULL);
		snprintf(cmd, sizeof(cmd), "mkdir -p %s/rtprof-nonexistent/bin && cp '%s' %s%s",
		    dir, self.path, dir, fake);
		run(cmd);
		s = rtprof_symbolizer_new(dir, NULL, 0);
		RTPROF_CHECK_EQ(add(s, &self, fake), 0);
		RTPROF_CHECK_EQ(rtprof_symbolizer_module(s, 0, NULL, NULL), RTPROF_MOD_OK);
		check_self(s, 0);
		rtprof_symbolizer_free(s);
		/* Without the sysroot the fake path does not exist. */
		s = rtprof_symbolizer_new(NULL, NULL, 0);
		add(s, &self, fake);
		RTPROF_CHECK_EQ(rtprof_symbolizer_module(s, 0, NULL, NULL), RTPROF_MOD_MISSING);
		rtprof_symbolizer_free(s);

		for (size_t i = 0; i < self.build_id_len; i++)
			sprintf(bid + 2 * i, "%02x", self.build_id[i]);
		if (stat("/usr/bin/objcopy", &sb) != 0) {
			printf("objcopy missing: --debug-dir part skipped\n");
		} else {
			snprintf(cmd, sizeof(cmd),
			    "cd %s && mkdir -p debug/.build-id/%.2s && "
			    "objcopy --only-keep-debug .%s debug/.build-id/%.2s/%s.debug && "
			    "objcopy --strip-debug --strip-unneeded .%s",
			    dir, bid, fake, bid, bid + 2, fake);
			run(cmd);
			/* Stripped, no debug dir: names from .dynsym at best,
			 * never a file and line. */
			s = rtprof_symbolizer_new(dir, NULL, 0);
			add(s, &self, fake);
			n = rtprof_symbolize(s, (uint64_t)(uintptr_t)&sym_target_a, &r);
			printf("stripped, no debug dir: rc %d name %s file %s\n", n,
			    r.name ? r.name : "-", r.file ? r.file : "-");
			RTPROF_CHECK(r.file == NULL);
			rtprof_symbolizer_free(s);
			/* With the debug dir: everything back. */
			snprintf(cmd, sizeof(cmd), "%s/debug", dir);
			dbg[0] = cmd;
			s = rtprof_symbolizer_new(dir, dbg, 1);
			add(s, &self, fake);
			RTPROF_CHECK_EQ(rtprof_symbolizer_module(s, 0, NULL, &detail), RTPROF_MOD_OK);
			RTPROF_CHECK(detail == NULL);
			check_self(s, 0);
			rtprof_symbolizer_free(s);
		}
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		run(cmd);
	}
	check_no_modules();
	check_spans(&self);
	check_vdso();
	check_hostile_paths(&self);
	printf("test_symbolize: ok\n");
	return 0;
}
