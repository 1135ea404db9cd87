#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* vasprintf, qsort_r (the build defines it too) */
#endif
/*
 * symbolize.c - offline symbolication with elfutils libdwfl (see
 * symbolize.h). One Dwfl per usable module: the module is reported at the
 * load bias the dump implies, so runtime addresses go to libdwfl unchanged.
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
 * Context: converter (offline), single-threaded.
 */
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
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#define CACHE_BITS 16 /* 65536 entries, ~4 MiB: bounded whatever the dump */
#define CACHE_PROBE 8
/* The detail of every module whose file is missing, refused or not ELF. */
#define NOT_USABLE "not usable"

struct module {
	char *path;     /* as recorded */
	char *detail;   /* one-line explanation, or NULL */
	uint64_t start, end, offset, bias;
	enum rtprof_modstatus status;
	bool has_dwarf;
	Dwfl *dwfl;     /* NULL unless usable */
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
};

struct fsym {
	uint64_t lo, hi;  /* runtime addresses, [lo, hi) */
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
	bool used;
	int rc;         /* rtprof_symbolize()'s result */
	struct rtprof_sym sym;
};

struct rtprof_symbolizer {
	char *sysroot;
	char *debuginfo_path;   /* libdwfl's search list */
	Dwfl_Callbacks cb;
	struct module *mods;
	size_t nmods, capmods;
	size_t *order;          /* module indexes sorted by start */
	bool sorted;
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
		if (debug_dirs[i] != NULL && debug_dirs[i][0] != 0)
			p += sprintf(p, ":%s", debug_dirs[i]);
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
		if (s->mods[i].dwfl != NULL)
			dwfl_end(s->mods[i].dwfl);
		free(s->mods[i].cus);
		free(s->mods[i].syms);
		free(s->mods[i].path);
		free(s->mods[i].detail);
	}
	free(s->mods);
	free(s->order);
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

int
rtprof_symbolizer_add_module(struct rtprof_symbolizer *s, const char *path,
    uint64_t start, uint64_t end, uint64_t offset,
    const unsigned char *build_id, size_t build_id_len)
{
	struct module *m;
	char *used = NULL;
	int fd;

	if (s->nmods == s->capmods) {
		size_t ncap = s->capmods ? 2 * s->capmods : 16;
		struct module *nm = realloc(s->mods, ncap * sizeof(*nm));
		size_t *no;

		if (nm == NULL)
			return -1;
		s->mods = nm;
		no = realloc(s->order, ncap * sizeof(*no));
		if (no == NULL)
			return -1;
		s->order = no;
		s->capmods = ncap;
	}
	m = &s->mods[s->nmods];
	memset(m, 0, sizeof(*m));
	m->path = xstrdup(path != NULL ? path : "");
	if (m->path == NULL)
		return -1;
	m->start = start;
	m->end = end;
	m->offset = offset;
	if (build_id == NULL)
		build_id_len = 0;

	fd = open_module(s, m->path, build_id_len > 0, &used);
	if (fd < 0) {
		/* Missing, unreadable or refused: one message, so that a
		 * dump cannot probe which files exist. */
		m->status = RTPROF_MOD_MISSING;
		if (m->path[0] != '/')
			m->detail = xasprintf(NOT_USABLE " (not an absolute path)");
		else if (s->sysroot != NULL)
			m->detail = xasprintf(NOT_USABLE " (looked under %s%s)", s->sysroot,
			    build_id_len > 0 ? " and on this machine" : " only: no build id");
		else
			m->detail = xasprintf(NOT_USABLE);
		goto done;
	}
	m->status = inspect_elf(fd, m, build_id, build_id_len);
	if (m->status != RTPROF_MOD_OK && m->status != RTPROF_MOD_UNVERIFIED) {
		close(fd);
		goto done;
	}
	m->dwfl = dwfl_begin(&s->cb);
	if (m->dwfl == NULL) {
		close(fd);
		m->status = RTPROF_MOD_BADELF;
		m->detail = xasprintf("libdwfl: %s", dwfl_errmsg(-1));
		goto done;
	}
	dwfl_report_begin(m->dwfl);
	m->mod = dwfl_report_elf(m->dwfl, m->path, used, fd, m->bias, true);
	if (m->mod == NULL) {
		close(fd); /* not consumed on failure */
		m->status = RTPROF_MOD_BADELF;
		m->detail = xasprintf("libdwfl: %s", dwfl_errmsg(-1));
		dwfl_end(m->dwfl);
		m->dwfl = NULL;
		goto done;
	}
	dwfl_report_end(m->dwfl, NULL, NULL);
	{
		Dwarf_Addr b;
		int nsym = dwfl_module_getsymtab(m->mod);

		m->has_dwarf = dwfl_module_getdwarf(m->mod, &b) != NULL;
		if (nsym <= 0 && !m->has_dwarf) {
			m->status = RTPROF_MOD_NOSYMS;
			m->detail = xasprintf("no symbol table and no debug info");
		} else if (!m->has_dwarf) {
			m->detail = xasprintf("%sno debug info (function names only)",
			    m->status == RTPROF_MOD_UNVERIFIED ? "no build id in dump (unverified); " : "");
		} else if (m->status == RTPROF_MOD_UNVERIFIED) {
			m->detail = xasprintf("no build id in dump (unverified)");
		}
	}
done:
	free(used);
	s->order[s->nmods] = s->nmods;
	s->sorted = false;
	if (s->cache != NULL)
		memset(s->cache, 0, sizeof(*s->cache) << CACHE_BITS);
	return (int)s->nmods++;
}

static int
cmp_start(const void *a, const void *b, void *arg)
{
	const struct rtprof_symbolizer *s = arg;
	uint64_t x = s->mods[*(const size_t *)a].start;
	uint64_t y = s->mods[*(const size_t *)b].start;

	return x < y ? -1 : x > y;
}

/* The module covering addr, or -1. */
static int
find_module(struct rtprof_symbolizer *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nmods;

	if (s->nmods == 0)
		return -1; /* and s->order may be NULL */
	if (!s->sorted) {
		qsort_r(s->order, s->nmods, sizeof(*s->order), cmp_start, s);
		s->sorted = true;
	}
	/* Last module whose start <= addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->mods[s->order[mid]].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	lo--;
	if (addr < s->mods[s->order[lo]].end)
		return (int)s->order[lo];
	return -1;
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
build_syms(struct module *m)
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
find_sym(struct module *m, uint64_t addr)
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
build_cus(struct module *m, Dwarf *dw)
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
lineinfo_slow(struct module *m, uint64_t addr, struct rtprof_sym *out)
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

static int
resolve(struct rtprof_symbolizer *s, uint64_t addr, struct rtprof_sym *out)
{
	int mi = find_module(s, addr);
	struct module *m;
	const struct fsym *fs;
	Dwfl_Line *line;

	memset(out, 0, sizeof(*out));
	out->module = mi;
	if (mi < 0)
		return RTPROF_SYM_NOMODULE;
	m = &s->mods[mi];
	out->file_offset = addr - m->start + m->offset;
	if (m->mod == NULL)
		return RTPROF_SYM_UNUSABLE;
	out->vaddr = addr - m->bias;
	if ((fs = find_sym(m, addr)) != NULL) {
		out->name = fs->name;
		out->sym_offset = addr - fs->lo;
	}
	if (m->has_dwarf && (line = dwfl_module_getsrc(m->mod, addr)) != NULL) {
		int lineno = 0;
		const char *file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);

		if (file != NULL && lineno > 0) {
			out->file = file;
			out->line = lineno;
		}
	} else if (m->has_dwarf) {
		lineinfo_slow(m, addr, out);
	}
	return out->name != NULL ? RTPROF_SYM_OK : RTPROF_SYM_NOSYM;
}

static inline size_t
hash_addr(uint64_t a)
{
	a ^= a >> 33;
	a *= 0xff51afd7ed558ccdULL;
	a ^= a >> 33;
	return (size_t)(a >> (64 - CACHE_BITS));
}

int
rtprof_symbolize(struct rtprof_symbolizer *s, uint64_t addr, struct rtprof_sym *out)
{
	size_t h, mask = ((size_t)1 << CACHE_BITS) - 1;
	struct centry *victim;
	int rc;

	s->stats.lookups++;
	if (s->cache == NULL)
		s->cache = calloc((size_t)1 << CACHE_BITS, sizeof(*s->cache));
	if (s->cache == NULL)
		return resolve(s, addr, out);
	h = hash_addr(addr);
	victim = &s->cache[h];
	for (size_t i = 0; i < CACHE_PROBE; i++) {
		struct centry *e = &s->cache[(h + i) & mask];

		if (!e->used) {
			victim = e;
			break;
		}
		if (e->addr == addr) {
			s->stats.hits++;
			*out = e->sym;
			return e->rc;
		}
	}
	/* Miss: fill an empty slot of the probe window, else evict the
	 * home slot (bounded size, no rehashing). */
	rc = resolve(s, addr, out);
	victim->addr = addr;
	victim->used = true;
	victim->rc = rc;
	victim->sym = *out;
	return rc;
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
