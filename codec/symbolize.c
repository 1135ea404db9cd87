#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* vasprintf, qsort_r (the build defines it too) */
#endif
/*
 * symbolize.c - offline symbolication with elfutils libdwfl (see
 * symbolize.h). One Dwfl per usable file, reported at bias 0: lookups go
 * to libdwfl with ELF addresses (a runtime address less the load bias the
 * dump implies), so that one file's tables serve every process that
 * mapped it, wherever it was loaded. The files are kept per thread across
 * symbolizers (the converter makes one per process): a file is read, its
 * debug info found and decompressed, once per run, not once per process
 * (MAX_IDLE_FILES unused files are kept; a file that changed on disk is
 * read again).
 *
 * Load bias: the dump records start = load address of the lowest executable
 * PT_LOAD segment and offset = its p_offset; the segment with that p_offset
 * in the file gives p_vaddr, and bias = start - p_vaddr (0 for ET_EXEC).
 *
 * Names come from our own address-sorted table of the module's STT_FUNC
 * symbols (symtab, or the separate debug file's, else .dynsym; aliases:
 * global over weak over local), since dwfl_module_addrinfo scans all
 * symbols per call (~150 us per lookup in libc). Checked equal to libdwfl
 * over all of libc's and libdw's code, except that local STT_NOTYPE labels
 * inside functions (asm) are not names here. file:line come from
 * dwfl_module_getsrc, or, when there is no .debug_aranges (clang), from our
 * table of CU ranges and dwarf_getsrc_die.
 *
 * Context: converter (offline): a symbolizer is used by one thread; the
 * file cache is that thread's own (thread-local).
 */
#include "gecko_maps.h"  /* count_le() */
#include "symbolize.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#define CACHE_BITS 16 /* 65536 entries, ~4 MiB: bounded whatever the dump */
#define CACHE_PROBE 8
/* The detail of every module whose file is missing, refused or not ELF. */
#define NOT_USABLE "not usable"
/* Files no symbolizer uses any more, kept for the next one. */
#define MAX_IDLE_FILES 32

/* One ELF file as libdwfl reads it, at bias 0 (ELF addresses), and the
 * tables built from it; shared by the modules of every symbolizer of a
 * thread that map it. */
struct modfile {
	struct modfile *next;   /* the thread's files, most recent first */
	int refs;               /* modules using it */
	bool keep;              /* kept unused (not an image from a dump) */
	dev_t dev;              /* identity: the file as opened ... */
	ino_t ino;
	off_t size;
	struct timespec mtime;
	char *path;     /* ... under this recorded path (names "lib+0x...") */
	char *debuginfo_path;   /* ... with this debug search list */
	Dwfl_Callbacks cb;
	uint64_t end;   /* ELF address bound of the first mapping seen */
	int nsym;
	bool has_dwarf;
	bool lines_skipped;     /* a separate debug file's lines not read */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	/* CU address ranges, for DWARF without .debug_aranges (clang's
	 * default, which libdw 0.188 does not look past); built lazily. */
	struct curange *cus;
	size_t ncus;
	bool cus_built;
	/* Function symbols sorted by address (dwfl_module_addrinfo scans the
	 * whole symbol table per call); built lazily. */
	struct fsym *syms;
	size_t nsyms;
	bool syms_built;
	/* Names made for functions without a symbol ("lib+0x1a2b"), by
	 * their start in the unwind tables, sorted. */
	struct fname *fnames;
	size_t nfnames, capfnames;
	/* Function starts (ELF addresses, sorted): .eh_frame_hdr's table of
	 * FDE initial locations; built lazily. */
	uint64_t *fstarts;
	size_t nfstarts;
	bool fstarts_built;
};

struct module {
	char *path;     /* as recorded */
	char *detail;   /* one-line explanation, or NULL */
	uint64_t start, end, offset, bias;
	uint64_t from, to;        /* mapped in [from, to) (ticks) */
	unsigned char *bid;       /* build id as recorded, or NULL */
	size_t bidlen;
	enum rtprof_modstatus status;
	struct modfile *f;      /* NULL unless usable */
};

/* This thread's files (see struct modfile). */
static __thread struct modfile *files;

struct fname {
	uint64_t start;   /* ELF address of the function start */
	char *name;
};

/* The ELF image of a module without a file (the vDSO). */
struct image {
	uint64_t addr;
	unsigned char *bytes;
	size_t len;
};

struct fsym {
	uint64_t lo, hi;  /* ELF addresses (the file at bias 0), [lo, hi) */
	uint64_t sec_end; /* end of the symbol's section (bounds size 0) */
	const char *name; /* in the ELF's string table */
	int rank;         /* among aliases: lower wins */
};

struct curange {
	uint64_t lo, hi;  /* DWARF addresses, [lo, hi) */
	Dwarf_Off die;    /* the CU's DIE */
};

struct centry {
	uint64_t addr;
	int mi;         /* the module it was resolved in, -1 none */
	bool used;
	int rc;         /* rtprof_symbolize()'s result */
	struct rtprof_sym sym;
};

struct rtprof_symbolizer {
	char *sysroot;
	char *debuginfo_path;   /* libdwfl's search list */
	bool user_debug;        /* it has directories the user named */
	Dwfl_Callbacks cb;
	struct module *mods;
	size_t nmods, capmods;
	size_t *order;          /* module indexes sorted by start */
	uint64_t *maxend;       /* maxend[i]: largest end of order[0..i] */
	uint64_t *changes;      /* the times the map changed, sorted */
	size_t nchanges;
	bool sorted;
	struct image *images;
	size_t nimages;
	struct centry *cache;   /* 1 << CACHE_BITS entries, allocated lazily */
	struct rtprof_symbolizer_stats stats;
};

static char *
xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);

	if (d != NULL)
		memcpy(d, s, n);
	return d;
}

static char *
xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p = NULL;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		p = NULL;
	va_end(ap);
	return p;
}

static void
file_free(struct modfile *f)
{
	if (f->dwfl != NULL)
		dwfl_end(f->dwfl);
	free(f->cus);
	free(f->syms);
	for (size_t k = 0; k < f->nfnames; k++)
		free(f->fnames[k].name);
	free(f->fnames);
	free(f->fstarts);
	free(f->path);
	free(f->debuginfo_path);
	free(f);
}

/* A module stops using @f; past MAX_IDLE_FILES unused ones, the least
 * recently used are freed, and an unused image (a dump's vDSO: its own
 * in every dump) at once. Context: the thread that owns the cache. */
static void
file_put(struct modfile *f)
{
	struct modfile **pp;
	size_t idle = 0;

	if (f == NULL || --f->refs > 0)
		return;
	for (pp = &files; *pp != NULL;) {
		struct modfile *g = *pp;

		if (g->refs == 0 && (!g->keep || ++idle > MAX_IDLE_FILES)) {
			*pp = g->next;
			file_free(g);
			continue;
		}
		pp = &g->next;
	}
}

/* The file opened as @fd for module @m, already read (then moved to the
 * front of the list), or NULL. */
static struct modfile *
file_find(const struct rtprof_symbolizer *s, const struct stat *st,
    const struct module *m)
{
	for (struct modfile **pp = &files; *pp != NULL; pp = &(*pp)->next) {
		struct modfile *f = *pp;

		if (f->dev != st->st_dev || f->ino != st->st_ino ||
		    f->size != st->st_size ||
		    f->mtime.tv_sec != st->st_mtim.tv_sec ||
		    f->mtime.tv_nsec != st->st_mtim.tv_nsec ||
		    strcmp(f->path, m->path) != 0 ||
		    strcmp(f->debuginfo_path, s->debuginfo_path) != 0)
			continue;
		*pp = f->next;
		f->next = files;
		files = f;
		return f;
	}
	return NULL;
}

/*
 * Does @f's own file carry DWARF (a .debug_info section)? Source lines
 * are read from a module's own debug info; the separate debug file of a
 * stripped one (a distribution's -dbg package under /usr/lib/debug) gives
 * its symbol table, and its lines only with RTPROF_DEBUG_LINES=all:
 * libc6-dbg's compressed DWARF alone took half of the conversion of a
 * recorded `make -j2` (inflated at every conversion, ~50 ms of CPU) for
 * line numbers of libc's functions.
 */
static bool
lines_wanted(struct modfile *f, bool user_debug)
{
	/* The environment read once; the symbolizing thread (one per
	 * conversion): a second one would write the same value. */
	static int all = -1;
	const char *dbg = NULL;
	GElf_Addr bias;
	Elf *e;
	size_t shstr;

	if (all < 0) {
		const char *v = getenv("RTPROF_DEBUG_LINES");

		all = v != NULL && strcmp(v, "all") == 0;
	}
	/* Debug directories the user named (--debug-dir), or a debug file
	 * found outside the system's: its lines are wanted. */
	dwfl_module_info(f->mod, NULL, NULL, NULL, NULL, NULL, NULL, &dbg);
	if (all || user_debug ||
	    (dbg != NULL && strstr(dbg, "/usr/lib/debug/") == NULL))
		return true;
	f->lines_skipped = dbg != NULL;
	e = dwfl_module_getelf(f->mod, &bias);
	if (e == NULL || elf_getshdrstrndx(e, &shstr) != 0)
		return false;
	for (Elf_Scn *scn = elf_nextscn(e, NULL); scn != NULL;
	    scn = elf_nextscn(e, scn)) {
		GElf_Shdr sh;
		const char *name;

		if (gelf_getshdr(scn, &sh) == NULL ||
		    (name = elf_strptr(e, shstr, sh.sh_name)) == NULL)
			continue;
		if (strcmp(name, ".debug_info") == 0 ||
		    strcmp(name, ".zdebug_info") == 0)
			return true;
	}
	return false;
}

/*
 * Reads @fd (consumed) as module @m's file, @used the path it was opened
 * by: reported to a Dwfl of its own at bias 0, its symbol table and debug
 * info looked up (the expensive part: a separate debug file found and
 * decompressed), and added to the thread's files. Return: the file, or
 * NULL with m->status and m->detail set.
 */
static struct modfile *
file_read(struct rtprof_symbolizer *s, struct module *m, int fd,
    const struct stat *st, const char *used)
{
	struct modfile *f = calloc(1, sizeof(*f));
	Dwarf_Addr b;

	if (f == NULL || (f->path = xstrdup(m->path)) == NULL ||
	    (f->debuginfo_path = xstrdup(s->debuginfo_path)) == NULL) {
		close(fd);
		if (f != NULL)
			file_free(f);
		m->status = RTPROF_MOD_BADELF;
		m->detail = xasprintf("out of memory");
		return NULL;
	}
	f->dev = st->st_dev;
	f->ino = st->st_ino;
	f->size = st->st_size;
	f->mtime = st->st_mtim;
	f->end = m->end - m->bias;
	f->cb = s->cb;
	f->cb.debuginfo_path = &f->debuginfo_path;
	if ((f->dwfl = dwfl_begin(&f->cb)) == NULL) {
		close(fd);
		goto fail;
	}
	dwfl_report_begin(f->dwfl);
	f->mod = dwfl_report_elf(f->dwfl, m->path, used, fd, 0, true);
	if (f->mod == NULL) {
		close(fd); /* not consumed on failure */
		goto fail;
	}
	dwfl_report_end(f->dwfl, NULL, NULL);
	f->nsym = dwfl_module_getsymtab(f->mod);
	f->has_dwarf = lines_wanted(f, s->user_debug) &&
	    dwfl_module_getdwarf(f->mod, &b) != NULL;
	f->next = files;
	files = f;
	return f;
fail:
	m->status = RTPROF_MOD_BADELF;
	m->detail = xasprintf("libdwfl: %s", dwfl_errmsg(-1));
	file_free(f);
	return NULL;
}

struct rtprof_symbolizer *
rtprof_symbolizer_new(const char *sysroot, const char *const *debug_dirs,
    size_t ndebug_dirs)
{
	struct rtprof_symbolizer *s = calloc(1, sizeof(*s));
	size_t len = 64;
	char *p;

	if (s == NULL)
		return NULL;
	if (sysroot != NULL && sysroot[0] != 0) {
		size_t n = strlen(sysroot);

		while (n > 1 && sysroot[n - 1] == '/')
			n--;
		s->sysroot = strndup(sysroot, n);
		if (s->sysroot == NULL)
			goto fail;
		len += n + 16;
	}
	for (size_t i = 0; i < ndebug_dirs; i++)
		len += strlen(debug_dirs[i]) + 1;
	/* ":.debug" = next to the file and in .debug/ (for .gnu_debuglink);
	 * absolute entries are also searched for .build-id/xx/rest.debug. */
	s->debuginfo_path = p = malloc(len);
	if (p == NULL)
		goto fail;
	p += sprintf(p, ":.debug");
	for (size_t i = 0; i < ndebug_dirs; i++)
		if (debug_dirs[i] != NULL && debug_dirs[i][0] != 0) {
			p += sprintf(p, ":%s", debug_dirs[i]);
			s->user_debug = true;
		}
	if (s->sysroot != NULL)
		p += sprintf(p, ":%s/usr/lib/debug", s->sysroot);
	sprintf(p, ":/usr/lib/debug");
	s->cb.find_elf = dwfl_build_id_find_elf;
	s->cb.find_debuginfo = dwfl_standard_find_debuginfo;
	s->cb.section_address = dwfl_offline_section_address;
	s->cb.debuginfo_path = &s->debuginfo_path;
	elf_version(EV_CURRENT);
	return s;
fail:
	free(s->sysroot);
	free(s);
	return NULL;
}

void
rtprof_symbolizer_free(struct rtprof_symbolizer *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->nmods; i++) {
		file_put(s->mods[i].f);
		free(s->mods[i].path);
		free(s->mods[i].detail);
		free(s->mods[i].bid);
	}
	for (size_t i = 0; i < s->nimages; i++)
		free(s->images[i].bytes);
	free(s->images);
	free(s->mods);
	free(s->order);
	free(s->maxend);
	free(s->changes);
	free(s->cache);
	free(s->debuginfo_path);
	free(s->sysroot);
	free(s);
}

static void
hex(char *dst, const unsigned char *b, size_t n)
{
	static const char d[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		dst[2 * i] = d[b[i] >> 4];
		dst[2 * i + 1] = d[b[i] & 15];
	}
	dst[2 * n] = 0;
}

/* A path the symbolizer never opens: pseudo-files and devices, whose
 * reads may block, never end or have side effects (@real is resolved). */
static bool
refused_path(const char *real)
{
	static const char *const dirs[] = { "/proc", "/sys", "/dev" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		size_t n = strlen(dirs[i]);

		if (strncmp(real, dirs[i], n) == 0 &&
		    (real[n] == 0 || real[n] == '/'))
			return true;
	}
	return false;
}

/* A file system whose regular files are not files (proc, sysfs...),
 * wherever it is mounted. */
static bool
pseudo_fs(int fd)
{
	struct statfs fs;

	if (fstatfs(fd, &fs) != 0)
		return true;
	switch ((unsigned long)fs.f_type) {
	case PROC_SUPER_MAGIC:
	case SYSFS_MAGIC:
	case DEBUGFS_MAGIC:
	case TRACEFS_MAGIC:
	case SECURITYFS_MAGIC:
	case CGROUP_SUPER_MAGIC:
	case CGROUP2_SUPER_MAGIC:
		return true;
	}
	return false;
}

/*
 * Opens a file a dump named, for reading only if it is a regular file of
 * a real file system: the path is resolved (symlinks in /usr/lib are
 * normal), refused under /proc, /sys and /dev, opened without following a
 * last symlink, without blocking (a FIFO), without becoming a controlling
 * terminal, and checked with fstat. Return: an fd, or -1 whatever the
 * reason (the caller says "not usable" for all of them).
 */
static int
open_named(const char *path)
{
	char *real = realpath(path, NULL);
	struct stat st;
	int fd = -1;

	if (real == NULL)
		return -1;
	if (!refused_path(real))
		fd = open(real, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
		    O_NOFOLLOW);
	free(real);
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    pseudo_fs(fd))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Opens the module's file: sysroot first, then the host path if a build id
 * will verify it. Returns an fd or -1; *used gets the path opened. */
static int
open_module(const struct rtprof_symbolizer *s, const char *path, bool verify,
    char **used)
{
	int fd;

	*used = NULL;
	if (path[0] != '/')
		return -1; /* "[vdso]", "linux-vdso.so.1", empty: no file */
	if (s->sysroot != NULL) {
		char *p = xasprintf("%s%s", s->sysroot, path);

		if (p == NULL)
			return -1;
		fd = open_named(p);
		if (fd >= 0) {
			*used = p;
			return fd;
		}
		free(p);
		if (!verify)
			return -1;
	}
	fd = open_named(path);
	if (fd >= 0)
		*used = xstrdup(path);
	if (fd >= 0 && *used == NULL) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Reads the build id and the load bias from the file. Returns a status. */
static enum rtprof_modstatus
inspect_elf(int fd, struct module *m, const unsigned char *bid, size_t bidlen)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	enum rtprof_modstatus st = RTPROF_MOD_BADELF;
	GElf_Ehdr eh;
	size_t phnum;
	const void *fbid = NULL;
	ssize_t fbidlen;
	bool found = false;

	if (elf == NULL || elf_kind(elf) != ELF_K_ELF || gelf_getehdr(elf, &eh) == NULL ||
	    elf_getphdrnum(elf, &phnum) != 0) {
		/* As for a missing file: says nothing of what is there. */
		m->detail = xasprintf(NOT_USABLE);
		st = RTPROF_MOD_MISSING;
		goto out;
	}
	fbidlen = dwelf_elf_gnu_build_id(elf, &fbid);
	if (bidlen > 0 && (fbidlen != (ssize_t)bidlen || memcmp(fbid, bid, bidlen) != 0)) {
		char a[2 * 64 + 1], b[2 * 64 + 1];

		hex(a, bid, bidlen > 64 ? 64 : bidlen);
		if (fbidlen > 0)
			hex(b, fbid, (size_t)fbidlen > 64 ? 64 : (size_t)fbidlen);
		else
			strcpy(b, "none");
		m->detail = xasprintf("build id mismatch: dump %s, file %s (not used)", a, b);
		st = RTPROF_MOD_MISMATCH;
		goto out;
	}
	for (size_t i = 0; i < phnum && !found; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) == NULL || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		if (m->offset >= ph.p_offset && m->offset - ph.p_offset < (ph.p_filesz ? ph.p_filesz : 1)) {
			uint64_t va = ph.p_vaddr + (m->offset - ph.p_offset);

			m->bias = eh.e_type == ET_EXEC ? 0 : m->start - va;
			found = true;
		}
	}
	if (!found) {
		m->detail = xasprintf("no executable segment at file offset 0x%llx",
		    (unsigned long long)m->offset);
		goto out;
	}
	st = bidlen > 0 ? RTPROF_MOD_OK : RTPROF_MOD_UNVERIFIED;
out:
	if (elf != NULL)
		elf_end(elf);
	return st;
}

/* The image that holds address @start, or NULL. */
static const struct image *
image_at(const struct rtprof_symbolizer *s, uint64_t start)
{
	for (size_t i = 0; i < s->nimages; i++)
		if (start >= s->images[i].addr &&
		    start - s->images[i].addr < s->images[i].len)
			return &s->images[i];
	return NULL;
}

/*
 * A module without a file (path not absolute: the vDSO) read from the
 * image the dump carries for it: an anonymous file with its bytes, which
 * libelf and libdwfl read like any other. Return: an fd, or -1.
 */
static int
open_image(const struct rtprof_symbolizer *s, const struct module *m)
{
	const struct image *im = image_at(s, m->start);
	size_t done = 0;
	int fd;

	if (im == NULL || m->path[0] == '/')
		return -1;
	fd = memfd_create("rtprof-image", MFD_CLOEXEC);
	if (fd < 0) {
		FILE *f = tmpfile();

		fd = f != NULL ? dup(fileno(f)) : -1;
		if (f != NULL)
			fclose(f);
		if (fd < 0)
			return -1;
	}
	while (done < im->len) {
		ssize_t w = write(fd, im->bytes + done, im->len - done);

		if (w <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)w;
	}
	if (lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Why module @m has no file, for the gathering log. */
static char *
missing_detail(const struct rtprof_symbolizer *s, const struct module *m)
{
	/* Missing, unreadable or refused: one message, so that a dump
	 * cannot probe which files exist. */
	if (m->path[0] != '/')
		return xasprintf(NOT_USABLE " (not an absolute path)");
	if (s->sysroot != NULL)
		return xasprintf(NOT_USABLE " (looked under %s%s)", s->sysroot,
		    m->bidlen > 0 ? " and on this machine" : " only: no build id");
	return xasprintf(NOT_USABLE);
}

/* What module @m's file holds: its status and detail (no symbols, no
 * debug info). */
static void
module_tables(struct module *m)
{
	if (m->f->nsym <= 0 && !m->f->has_dwarf) {
		m->status = RTPROF_MOD_NOSYMS;
		m->detail = xasprintf("no symbol table and no debug info");
	} else if (!m->f->has_dwarf) {
		m->detail = xasprintf("%s%s",
		    m->status == RTPROF_MOD_UNVERIFIED ? "no build id in dump (unverified); " : "",
		    m->f->lines_skipped ? "function names from its debug file "
		    "(its source lines with RTPROF_DEBUG_LINES=all)" :
		    "no debug info (function names only)");
	} else if (m->status == RTPROF_MOD_UNVERIFIED) {
		m->detail = xasprintf("no build id in dump (unverified)");
	}
}

/*
 * Opens module @m's file (or the image the dump carries for it), checks
 * it, and takes the thread's copy of that file, read now if no
 * symbolizer of this thread read it yet. Sets its status and detail;
 * m->f is NULL unless it is usable.
 */
static void
module_load(struct rtprof_symbolizer *s, struct module *m)
{
	char *used = NULL;
	int fd = open_module(s, m->path, m->bidlen > 0, &used);
	bool keep = fd >= 0;
	struct stat st;

	if (fd < 0 && (fd = open_image(s, m)) >= 0 &&
	    (used = xstrdup(m->path)) == NULL) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		m->status = RTPROF_MOD_MISSING;
		m->detail = missing_detail(s, m);
		return;
	}
	m->status = inspect_elf(fd, m, m->bid, m->bidlen);
	if (m->status != RTPROF_MOD_OK && m->status != RTPROF_MOD_UNVERIFIED) {
		close(fd);
		goto out;
	}
	if (fstat(fd, &st) != 0) {
		close(fd);
		m->status = RTPROF_MOD_MISSING;
		m->detail = xasprintf(NOT_USABLE);
		goto out;
	}
	if ((m->f = file_find(s, &st, m)) != NULL)
		close(fd);
	else if ((m->f = file_read(s, m, fd, &st, used)) == NULL)
		goto out;
	m->f->keep = keep;
	m->f->refs++;
	module_tables(m);
out:
	free(used);
}

/* The map changed: the module order, the change times and the cache
 * are stale. */
static void
map_changed(struct rtprof_symbolizer *s)
{
	s->sorted = false;
	if (s->cache != NULL)
		memset(s->cache, 0, sizeof(*s->cache) << CACHE_BITS);
}

/* Room for one more module. Return: 0, -1 out of memory. */
static int
mods_reserve(struct rtprof_symbolizer *s)
{
	size_t ncap = s->capmods ? 2 * s->capmods : 16;
	struct module *nm;
	size_t *no;
	uint64_t *ne;

	if (s->nmods < s->capmods)
		return 0;
	nm = realloc(s->mods, ncap * sizeof(*nm));
	if (nm == NULL)
		return -1;
	s->mods = nm;
	no = realloc(s->order, ncap * sizeof(*no));
	if (no == NULL)
		return -1;
	s->order = no;
	ne = realloc(s->maxend, ncap * sizeof(*ne));
	if (ne == NULL)
		return -1;
	s->maxend = ne;
	s->capmods = ncap;
	return 0;
}

int
rtprof_symbolizer_add_module(struct rtprof_symbolizer *s, const char *path,
    uint64_t start, uint64_t end, uint64_t offset,
    const unsigned char *build_id, size_t build_id_len)
{
	struct module *m;

	if (mods_reserve(s) != 0)
		return -1;
	m = &s->mods[s->nmods];
	memset(m, 0, sizeof(*m));
	m->path = xstrdup(path != NULL ? path : "");
	if (m->path == NULL)
		return -1;
	m->start = start;
	m->end = end;
	m->offset = offset;
	m->to = UINT64_MAX;
	if (build_id != NULL && build_id_len > 0) {
		m->bid = malloc(build_id_len);
		if (m->bid == NULL) {
			free(m->path);
			return -1;
		}
		memcpy(m->bid, build_id, build_id_len);
		m->bidlen = build_id_len;
	}
	module_load(s, m);
	s->order[s->nmods] = s->nmods;
	map_changed(s);
	return (int)s->nmods++;
}

int
rtprof_symbolizer_add_image(struct rtprof_symbolizer *s, uint64_t addr,
    const void *bytes, size_t len)
{
	struct image *n = realloc(s->images, (s->nimages + 1) * sizeof(*n));

	if (n == NULL)
		return -1;
	s->images = n;
	n = &s->images[s->nimages];
	n->addr = addr;
	n->len = len;
	n->bytes = malloc(len ? len : 1);
	if (n->bytes == NULL)
		return -1;
	memcpy(n->bytes, bytes, len);
	s->nimages++;
	/* Modules added before it that it holds: read them again. */
	for (size_t i = 0; i < s->nmods; i++) {
		struct module *m = &s->mods[i];

		if (m->f != NULL || m->path[0] == '/' || image_at(s, m->start) != n)
			continue;
		free(m->detail);
		m->detail = NULL;
		module_load(s, m);
		map_changed(s);
	}
	return 0;
}

void
rtprof_symbolizer_module_span(struct rtprof_symbolizer *s, size_t i,
    uint64_t from, uint64_t to)
{
	if (i >= s->nmods)
		return;
	s->mods[i].from = from;
	s->mods[i].to = to;
	map_changed(s);
}

int
rtprof_symbolizer_module_unload(struct rtprof_symbolizer *s, const char *path,
    uint64_t start, uint64_t end, uint64_t t)
{
	for (size_t i = s->nmods; i-- > 0;) {
		struct module *m = &s->mods[i];

		if (m->to == UINT64_MAX && m->start == start && m->end == end &&
		    strcmp(m->path, path != NULL ? path : "") == 0) {
			m->to = t;
			map_changed(s);
			return (int)i;
		}
	}
	return -1;
}

static int
cmp_start(const void *a, const void *b, void *arg)
{
	const struct rtprof_symbolizer *s = arg;
	uint64_t x = s->mods[*(const size_t *)a].start;
	uint64_t y = s->mods[*(const size_t *)b].start;

	return x < y ? -1 : x > y;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The times the map changed: every span's bounds but the open ones. */
static void
build_changes(struct rtprof_symbolizer *s)
{
	size_t n = 0, k = 0;
	uint64_t *c = realloc(s->changes, (2 * s->nmods + 1) * sizeof(*c));

	if (c == NULL)
		return; /* the previous list: added modules found later */
	s->changes = c;
	for (size_t i = 0; i < s->nmods; i++) {
		if (s->mods[i].from != 0)
			c[n++] = s->mods[i].from;
		if (s->mods[i].to != UINT64_MAX)
			c[n++] = s->mods[i].to;
	}
	qsort(c, n, sizeof(*c), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (k == 0 || c[k - 1] != c[i])
			c[k++] = c[i];
	s->nchanges = k;
}

/* Modules by start, the running maximum of their ends, the changes. */
static void
ensure_sorted(struct rtprof_symbolizer *s)
{
	if (s->sorted)
		return;
	qsort_r(s->order, s->nmods, sizeof(*s->order), cmp_start, s);
	for (size_t i = 0; i < s->nmods; i++) {
		uint64_t e = s->mods[s->order[i]].end;

		s->maxend[i] = i > 0 && s->maxend[i - 1] > e ? s->maxend[i - 1] : e;
	}
	build_changes(s);
	s->sorted = true;
}

/* The first time the map changed after @t, or UINT64_MAX. */
static uint64_t
next_change(const struct rtprof_symbolizer *s, uint64_t t)
{
	size_t i = count_le(s->changes, s->nchanges, t);

	return i < s->nchanges ? s->changes[i] : UINT64_MAX;
}

/*
 * The module covering @addr at time @t (RTPROF_SYM_ANYTIME: the last one
 * added that covers it), or -1. Mapped at @t: from <= t < to, the latest
 * from among several. None: a module the next change added (it was loaded
 * before the writer saw it, within a round), else -1.
 */
static int
find_module(struct rtprof_symbolizer *s, uint64_t addr, uint64_t t)
{
	size_t lo = 0, hi = s->nmods;
	uint64_t nxt;
	int best = -1, later = -1;

	if (s->nmods == 0)
		return -1; /* and s->order may be NULL */
	ensure_sorted(s);
	/* Modules whose start <= addr: order[0..lo). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->mods[s->order[mid]].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	nxt = t == RTPROF_SYM_ANYTIME ? UINT64_MAX : next_change(s, t);
	for (; lo > 0 && s->maxend[lo - 1] > addr; lo--) {
		size_t i = s->order[lo - 1];
		const struct module *m = &s->mods[i];

		if (addr >= m->end)
			continue;
		if (t == RTPROF_SYM_ANYTIME) {
			if (best < 0 || i > (size_t)best)
				best = (int)i;
		} else if (m->from <= t && t < m->to) {
			if (best < 0 || m->from > s->mods[best].from)
				best = (int)i;
		} else if (m->from > t && m->from == nxt) {
			later = (int)i;
		}
	}
	return best >= 0 ? best : later;
}

static int
cmp_fsym(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->name, y->name); /* deterministic among equals */
}

static void
build_syms(struct modfile *m)
{
	int n = dwfl_module_getsymtab(m->mod);
	size_t cap = 0, k = 0;

	m->syms_built = true;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf = NULL;
		Dwarf_Addr bias = 0;
		const char *name = dwfl_module_getsym_info(m->mod, i, &sym, &addr,
		    &shndx, &elf, &bias);
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
		uint64_t sec_end = m->end;
		Elf_Scn *scn;
		GElf_Shdr sh;

		if (name == NULL || name[0] == 0 || shndx == SHN_UNDEF ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		if (m->nsyms == cap) {
			size_t ncap = cap ? 2 * cap : 256;
			struct fsym *v = realloc(m->syms, ncap * sizeof(*v));

			if (v == NULL)
				break;
			m->syms = v;
			cap = ncap;
		}
		if (sym.st_size == 0 && elf != NULL && (scn = elf_getscn(elf, shndx)) != NULL &&
		    gelf_getshdr(scn, &sh) != NULL)
			sec_end = sh.sh_addr + sh.sh_size + bias;
		/* Like libdwfl: global over weak over local; sized over not. */
		m->syms[m->nsyms].lo = addr;
		m->syms[m->nsyms].hi = addr + sym.st_size;
		m->syms[m->nsyms].sec_end = sec_end;
		m->syms[m->nsyms].name = name;
		m->syms[m->nsyms].rank = (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 2 : 4) +
		    (sym.st_size == 0);
		m->nsyms++;
	}
	if (m->nsyms == 0)
		return;
	qsort(m->syms, m->nsyms, sizeof(*m->syms), cmp_fsym);
	/* One entry per address (the best alias); size 0 extends to the next
	 * symbol or the end of its section. */
	for (size_t i = 0; i < m->nsyms; i++) {
		if (k > 0 && m->syms[k - 1].lo == m->syms[i].lo) {
			if (m->syms[k - 1].hi < m->syms[i].hi)
				m->syms[k - 1].hi = m->syms[i].hi;
			continue;
		}
		m->syms[k++] = m->syms[i];
	}
	m->nsyms = k;
	for (size_t i = 0; i < m->nsyms; i++) {
		if (m->syms[i].hi == m->syms[i].lo) {
			m->syms[i].hi = m->syms[i].sec_end;
			if (i + 1 < m->nsyms && m->syms[i + 1].lo < m->syms[i].hi)
				m->syms[i].hi = m->syms[i + 1].lo;
		}
	}
}

/* The function symbol containing addr, or NULL. */
static const struct fsym *
find_sym(struct modfile *m, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!m->syms_built)
		build_syms(m);
	hi = m->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Nested symbols: a smaller one may start later and end earlier. */
	for (size_t back = 0; lo > 0 && back < 4; lo--, back++)
		if (addr < m->syms[lo - 1].hi)
			return &m->syms[lo - 1];
	return NULL;
}

static int
cmp_curange(const void *a, const void *b)
{
	const struct curange *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void
build_cus(struct modfile *m, Dwarf *dw)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t ut;
	size_t cap = 0;

	m->cus_built = true;
	while (dwarf_get_units(dw, cu, &cu, NULL, &ut, &cudie, NULL) == 0) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t it = 0;

		if (ut != DW_UT_compile && ut != DW_UT_partial)
			continue;
		while ((it = dwarf_ranges(&cudie, it, &base, &lo, &hi)) > 0) {
			if (lo >= hi)
				continue;
			if (m->ncus == cap) {
				size_t ncap = cap ? 2 * cap : 64;
				struct curange *n = realloc(m->cus, ncap * sizeof(*n));

				if (n == NULL)
					return; /* fewer lines, not wrong ones */
				m->cus = n;
				cap = ncap;
			}
			m->cus[m->ncus].lo = lo;
			m->cus[m->ncus].hi = hi;
			m->cus[m->ncus].die = dwarf_dieoffset(&cudie);
			m->ncus++;
		}
	}
	qsort(m->cus, m->ncus, sizeof(*m->cus), cmp_curange);
}

/* file:line through our own CU range table. */
static void
lineinfo_slow(struct modfile *m, uint64_t addr, struct rtprof_sym *out)
{
	Dwarf_Addr bias;
	Dwarf *dw = dwfl_module_getdwarf(m->mod, &bias);
	size_t lo = 0, hi;
	uint64_t a = addr - bias;
	Dwarf_Die cudie;
	Dwarf_Line *line;
	int lineno = 0;
	const char *file;

	if (dw == NULL)
		return;
	if (!m->cus_built)
		build_cus(m, dw);
	hi = m->ncus;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->cus[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || a >= m->cus[lo - 1].hi)
		return;
	if (dwarf_offdie(dw, m->cus[lo - 1].die, &cudie) == NULL ||
	    (line = dwarf_getsrc_die(&cudie, a)) == NULL)
		return;
	file = dwarf_linesrc(line, NULL, NULL);
	if (file != NULL && dwarf_lineno(line, &lineno) == 0 && lineno > 0) {
		out->file = file;
		out->line = lineno;
	}
}

/* Module @m's name without its directory. */
static const char *
base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b != NULL && b[1] != 0 ? b + 1 : path;
}

/* The name made for the function of @m that starts at @start (an ELF
 * address): "lib+0x1a2b", kept until the symbolizer is freed. */
static const char *
unwind_fname(struct modfile *m, uint64_t start)
{
	size_t lo = 0, hi = m->nfnames;
	char *name;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->fnames[mid].start == start)
			return m->fnames[mid].name;
		if (m->fnames[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (m->nfnames == m->capfnames) {
		size_t ncap = m->capfnames ? 2 * m->capfnames : 64;
		struct fname *n = realloc(m->fnames, ncap * sizeof(*n));

		if (n == NULL)
			return NULL;
		m->fnames = n;
		m->capfnames = ncap;
	}
	name = xasprintf("%s+0x%llx", base_name(m->path),
	    (unsigned long long)start);
	if (name == NULL)
		return NULL;
	memmove(&m->fnames[lo + 1], &m->fnames[lo],
	    (m->nfnames - lo) * sizeof(*m->fnames));
	m->fnames[lo].start = start;
	m->fnames[lo].name = name;
	m->nfnames++;
	return name;
}

/* A little-endian 32-bit value at @p. */
static uint32_t
le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

/*
 * The function starts of @m from its .eh_frame_hdr (PT_GNU_EH_FRAME): the
 * binary search table of FDE initial locations, in the encoding every
 * linker writes (eh_frame_ptr pcrel|sdata4, fde_count udata4, table
 * datarel|sdata4, little-endian); another encoding leaves the table
 * empty (no names from it, not wrong ones).
 */
static void
build_fstarts(struct modfile *m)
{
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(m->mod, &bias);
	size_t phnum;
	Elf_Data *d = NULL;
	GElf_Phdr ph;
	const unsigned char *p;
	uint32_t n;

	m->fstarts_built = true;
	if (elf == NULL || elf_getphdrnum(elf, &phnum) != 0)
		return;
	for (size_t i = 0; i < phnum && d == NULL; i++)
		if (gelf_getphdr(elf, (int)i, &ph) != NULL &&
		    ph.p_type == PT_GNU_EH_FRAME)
			d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset,
			    ph.p_filesz, ELF_T_BYTE);
	if (d == NULL || d->d_size < 12)
		return;
	p = d->d_buf;
	if (p[0] != 1 || p[1] != 0x1b || p[2] != 0x03 || p[3] != 0x3b)
		return;
	n = le32(p + 8);
	if (n == 0 || n > (d->d_size - 12) / 8 ||
	    (m->fstarts = malloc(n * sizeof(*m->fstarts))) == NULL)
		return;
	for (uint32_t i = 0; i < n; i++)
		m->fstarts[i] = ph.p_vaddr + (uint64_t)(int64_t)(int32_t)le32(p + 12 + 8 * i);
	qsort(m->fstarts, n, sizeof(*m->fstarts), cmp_u64);
	m->nfstarts = n;
}

/* The greatest function start <= @a (an ELF address), or -1. */
static int
fstart_of(struct modfile *m, uint64_t a, uint64_t *start)
{
	size_t i;

	if (!m->fstarts_built)
		build_fstarts(m);
	i = count_le(m->fstarts, m->nfstarts, a);
	if (i == 0)
		return -1;
	*start = m->fstarts[i - 1];
	return 0;
}

/*
 * An address no symbol covers: the function that holds it from the
 * unwind tables. An FDE of .eh_frame must cover it (so it is code of a
 * function, not a gap), and that FDE's initial location, the greatest
 * one of .eh_frame_hdr's table not after it, is the function's start:
 * every address of one function gets one name, "lib+0x<start>" (the
 * start's ELF address: for a shared object or a PIE, its offset from
 * the load address). Return: 0 with out->name set, -1 when none.
 */
static int
unwind_name(struct modfile *m, uint64_t addr, struct rtprof_sym *out)
{
	Dwarf_Addr bias = 0;
	Dwarf_CFI *cfi = dwfl_module_eh_cfi(m->mod, &bias);
	Dwarf_Frame *fr = NULL;
	uint64_t start;

	if (cfi == NULL || dwarf_cfi_addrframe(cfi, addr - bias, &fr) != 0) {
		free(fr);
		return -1;
	}
	free(fr);
	if (fstart_of(m, addr - bias, &start) != 0 ||
	    (out->name = unwind_fname(m, start)) == NULL)
		return -1;
	out->sym_offset = addr - (start + bias);
	out->flags |= RTPROF_SYMF_UNWIND;
	return 0;
}

static int
resolve(struct rtprof_symbolizer *s, uint64_t addr, int mi,
    struct rtprof_sym *out)
{
	struct module *m;
	struct modfile *f;
	const struct fsym *fs;
	Dwfl_Line *line;
	uint64_t a;

	memset(out, 0, sizeof(*out));
	out->module = mi;
	if (mi < 0)
		return RTPROF_SYM_NOMODULE;
	m = &s->mods[mi];
	out->file_offset = addr - m->start + m->offset;
	if (m->f == NULL)
		return RTPROF_SYM_UNUSABLE;
	/* The file is reported at bias 0: ELF addresses from here. */
	f = m->f;
	out->vaddr = a = addr - m->bias;
	if ((fs = find_sym(f, a)) != NULL) {
		out->name = fs->name;
		out->sym_offset = a - fs->lo;
	} else {
		(void)unwind_name(f, a, out);
	}
	if (f->has_dwarf && (line = dwfl_module_getsrc(f->mod, a)) != NULL) {
		int lineno = 0;
		const char *file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);

		if (file != NULL && lineno > 0) {
			out->file = file;
			out->line = lineno;
		}
	} else if (f->has_dwarf) {
		lineinfo_slow(f, a, out);
	}
	return out->name != NULL ? RTPROF_SYM_OK : RTPROF_SYM_NOSYM;
}

static inline size_t
hash_addr(uint64_t a, int mi)
{
	a ^= (uint64_t)(unsigned)mi * 0x9e3779b97f4a7c15ULL;
	a ^= a >> 33;
	a *= 0xff51afd7ed558ccdULL;
	a ^= a >> 33;
	return (size_t)(a >> (64 - CACHE_BITS));
}

int
rtprof_symbolize_at(struct rtprof_symbolizer *s, uint64_t addr, uint64_t t,
    struct rtprof_sym *out)
{
	size_t h, mask = ((size_t)1 << CACHE_BITS) - 1;
	struct centry *victim;
	int rc, mi = find_module(s, addr, t);

	s->stats.lookups++;
	if (s->cache == NULL)
		s->cache = calloc((size_t)1 << CACHE_BITS, sizeof(*s->cache));
	if (s->cache == NULL)
		return resolve(s, addr, mi, out);
	h = hash_addr(addr, mi);
	victim = &s->cache[h];
	for (size_t i = 0; i < CACHE_PROBE; i++) {
		struct centry *e = &s->cache[(h + i) & mask];

		if (!e->used) {
			victim = e;
			break;
		}
		if (e->addr == addr && e->mi == mi) {
			s->stats.hits++;
			*out = e->sym;
			return e->rc;
		}
	}
	/* Miss: fill an empty slot of the probe window, else evict the
	 * home slot (bounded size, no rehashing). */
	rc = resolve(s, addr, mi, out);
	victim->addr = addr;
	victim->mi = mi;
	victim->used = true;
	victim->rc = rc;
	victim->sym = *out;
	return rc;
}

int
rtprof_symbolize(struct rtprof_symbolizer *s, uint64_t addr, struct rtprof_sym *out)
{
	return rtprof_symbolize_at(s, addr, RTPROF_SYM_ANYTIME, out);
}

size_t
rtprof_symbolizer_nmodules(const struct rtprof_symbolizer *s)
{
	return s->nmods;
}

enum rtprof_modstatus
rtprof_symbolizer_module(const struct rtprof_symbolizer *s, size_t i,
    const char **path, const char **detail)
{
	if (i >= s->nmods) {
		if (path != NULL)
			*path = NULL;
		if (detail != NULL)
			*detail = NULL;
		return RTPROF_MOD_MISSING;
	}
	if (path != NULL)
		*path = s->mods[i].path;
	if (detail != NULL)
		*detail = s->mods[i].detail;
	return s->mods[i].status;
}

const char *
rtprof_modstatus_name(enum rtprof_modstatus st)
{
	switch (st) {
	case RTPROF_MOD_OK: return "ok";
	case RTPROF_MOD_UNVERIFIED: return "unverified";
	case RTPROF_MOD_MISSING: return "missing";
	case RTPROF_MOD_MISMATCH: return "build id mismatch";
	case RTPROF_MOD_BADELF: return "bad ELF";
	case RTPROF_MOD_NOSYMS: return "no symbols";
	}
	return "?";
}

size_t
rtprof_symbolizer_problems(const struct rtprof_symbolizer *s,
    void (*fn)(void *arg, const char *line), void *arg)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nmods; i++) {
		const struct module *m = &s->mods[i];
		char *l;

		if (m->detail == NULL)
			continue;
		l = xasprintf("%s: %s", m->path[0] ? m->path : "(unnamed)", m->detail);
		if (l != NULL) {
			fn(arg, l);
			free(l);
			n++;
		}
	}
	return n;
}

void
rtprof_symbolizer_stats(const struct rtprof_symbolizer *s,
    struct rtprof_symbolizer_stats *st)
{
	*st = s->stats;
}

/* libstdc++'s demangler (its C ABI entry point). */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
    int *status);

char *
rtprof_demangle(const char *name)
{
	int status = 0;
	char *d;

	if (name[0] != '_' || name[1] != 'Z')
		return NULL;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (status != 0) {
		free(d);
		return NULL;
	}
	return d;
}
