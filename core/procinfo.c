/*
 * procinfo.c - facts about the process for the dump header: identity,
 * command line, machine, and the module map with ELF build ids.
 *
 * Context: the writer thread, lock held (called while building the header,
 * and each round for the module map).
 */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <msgpack.h>

#include "core.h"

static void
pstr(msgpack_packer *pk, const char *s, size_t n)
{
	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

static void
pcstr(msgpack_packer *pk, const char *s)
{
	pstr(pk, s, strlen(s));
}

/* Reads a small /proc file; returns bytes read (0 on failure). */
static size_t
read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;

	if (fd < 0)
		return 0;
	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	return n;
}

/*
 * rtprof__task_file - /proc/self/task/@tid/@name into @buf, NUL-terminated
 * (at most @cap - 1 bytes). Return: the bytes read, 0 on failure.
 * Context: any non-RT thread (the sampler).
 */
size_t
rtprof__task_file(pid_t tid, const char *name, char *buf, size_t cap)
{
	char path[64];
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, name);
	n = cap > 0 ? read_small(path, buf, cap - 1) : 0;
	if (cap > 0)
		buf[n] = '\0';
	return n;
}

/* Packs 6 map pairs: pid, ppid, process, exe, cmdline, machine. */
void
rtprof__pack_process(struct msgpack_packer *pkv)
{
	msgpack_packer *pk = (msgpack_packer *)pkv;
	char buf[8192], exe[4096];
	struct utsname u;
	size_t n, argc = 0;
	ssize_t el;

	pcstr(pk, "pid");
	msgpack_pack_int32(pk, getpid());
	pcstr(pk, "ppid");
	msgpack_pack_int32(pk, getppid());
	pcstr(pk, "process");
	n = read_small("/proc/self/comm", buf, sizeof(buf));
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == 0))
		n--;
	pstr(pk, buf, n);
	pcstr(pk, "exe");
	el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	pstr(pk, exe, el > 0 ? (size_t)el : 0);
	pcstr(pk, "cmdline");
	n = read_small("/proc/self/cmdline", buf, sizeof(buf));
	for (size_t i = 0; i < n; i++)
		argc += buf[i] == 0;
	if (n > 0 && buf[n - 1] != 0)
		argc++; /* truncated last argument */
	msgpack_pack_array(pk, argc);
	for (size_t i = 0; i < n;) {
		size_t len = strnlen(buf + i, n - i);
		pstr(pk, buf + i, len);
		i += len + 1;
	}
	pcstr(pk, "machine");
	if (uname(&u) != 0)
		memset(&u, 0, sizeof(u));
	msgpack_pack_map(pk, 6);
	pcstr(pk, "sysname");
	pcstr(pk, u.sysname);
	pcstr(pk, "release");
	pcstr(pk, u.release);
	pcstr(pk, "machine");
	pcstr(pk, u.machine);
	pcstr(pk, "hostname");
	pcstr(pk, u.nodename);
	pcstr(pk, "cpus");
	msgpack_pack_int64(pk, sysconf(_SC_NPROCESSORS_ONLN));
	/* The boot: kernel addresses (KSTACK) are valid in it alone. */
	pcstr(pk, "boot_id");
	n = read_small("/proc/sys/kernel/random/boot_id", buf, sizeof(buf));
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == 0))
		n--;
	pstr(pk, buf, n);
}

/*
 * The module map. A session keeps the map it announced (struct
 * rtprof__modset, sorted by start); the writer compares glibc's
 * dl_iterate_phdr load and unload counters with the ones of its last scan
 * each round (rtprof__modules_stale(): one callback, no allocation) and
 * rescans only when they moved, to announce what was loaded and unloaded
 * (docs/wire-format.md, MODULES_CHANGED).
 */
struct rtprof__mod {
	char path[512];
	uint64_t start, end, offset;
	unsigned char build_id[64];
	size_t build_id_len;
};

struct rtprof__modset {
	struct rtprof__mod *v;
	size_t n, cap;
	unsigned long long adds, subs;  /* glibc's counters at the scan */
	int counted;                    /* adds/subs are known */
};

/* The GNU build id note of a PT_NOTE segment mapped at @p, into @d. */
static void
note_build_id(const unsigned char *p, size_t len, struct rtprof__mod *d)
{
	const unsigned char *e = p + len;

	while (p + sizeof(ElfW(Nhdr)) <= e) {
		const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
		size_t nsz = (nh->n_namesz + 3) & ~3u, dsz = (nh->n_descsz + 3) & ~3u;
		const unsigned char *desc = p + sizeof(*nh) + nsz;

		if (desc + dsz > e)
			break;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
		    memcmp(p + sizeof(*nh), "GNU", 4) == 0 &&
		    nh->n_descsz <= sizeof(d->build_id)) {
			memcpy(d->build_id, desc, nh->n_descsz);
			d->build_id_len = nh->n_descsz;
		}
		p = desc + dsz;
	}
}

/* Room for one more module in @m. Return: 0, -1 out of memory. */
static int
modset_reserve(struct rtprof__modset *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 32;
	struct rtprof__mod *nv;

	if (m->n < m->cap)
		return 0;
	nv = realloc(m->v, ncap * sizeof(*nv));
	if (nv == NULL)
		return -1;
	m->v = nv;
	m->cap = ncap;
	return 0;
}

/* glibc's load and unload counters from the callback's @info, if this
 * glibc has them. */
static int
phdr_counters(const struct dl_phdr_info *info, size_t size,
    unsigned long long c[2])
{
	if (size < offsetof(struct dl_phdr_info, dlpi_subs) +
	    sizeof(info->dlpi_subs))
		return 0;
	c[0] = info->dlpi_adds;
	c[1] = info->dlpi_subs;
	return 1;
}

/*
 * The path the dump gives a loaded object: the loader's name, made
 * absolute when it is relative (dlopen("plugins/x.so")), as the program's
 * working directory resolves it now; a name without a '/'
 * ("linux-vdso.so.1") is not a file and stays.
 */
static void
module_path(const char *name, char *out, size_t cap)
{
	char *real = NULL;

	if (name[0] != '/' && strchr(name, '/') != NULL)
		real = realpath(name, NULL);
	strncpy(out, real != NULL ? real : name, cap - 1);
	out[cap - 1] = 0;
	free(real);
}

static int
phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct rtprof__modset *m = arg;
	struct rtprof__mod *d;
	uint64_t lo = UINT64_MAX, hi = 0, off = 0;
	const char *path = info->dlpi_name;
	unsigned long long c[2];

	if (m->n == 0 && phdr_counters(info, size, c)) {
		m->adds = c[0];
		m->subs = c[1];
		m->counted = 1;
	}
	if (modset_reserve(m) != 0)
		return 1;
	d = &m->v[m->n];
	memset(d, 0, sizeof(*d));
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			if (info->dlpi_addr + ph->p_vaddr < lo) {
				lo = info->dlpi_addr + ph->p_vaddr;
				off = ph->p_offset;
			}
			if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
				hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		} else if (ph->p_type == PT_NOTE) {
			note_build_id((const unsigned char *)(info->dlpi_addr +
			    ph->p_vaddr), ph->p_memsz, d);
		}
	}
	if (hi == 0)
		return 0; /* no executable segment (e.g. linux-vdso data) */
	if (path == NULL || path[0] == 0) {
		ssize_t r = m->n == 0 ? readlink("/proc/self/exe", d->path, sizeof(d->path) - 1) : -1;
		if (r > 0)
			d->path[r] = 0;
	} else {
		module_path(path, d->path, sizeof(d->path));
	}
	d->start = lo;
	d->end = hi;
	d->offset = off;
	m->n++;
	return 0;
}

static int
cmp_mod(const void *a, const void *b)
{
	const struct rtprof__mod *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return strcmp(x->path, y->path);
}

/*
 * The loaded objects now, sorted by start. Context: the writer thread,
 * lock held (glibc's loader lock is taken inside dl_iterate_phdr).
 * Return: the set (free with rtprof__modset_free()), NULL out of memory.
 */
struct rtprof__modset *
rtprof__modules_scan(void)
{
	struct rtprof__modset *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return NULL;
	dl_iterate_phdr(phdr_cb, m);
	if (m->n > 1)
		qsort(m->v, m->n, sizeof(*m->v), cmp_mod);
	return m;
}

void
rtprof__modset_free(struct rtprof__modset *m)
{
	if (m == NULL)
		return;
	free(m->v);
	free(m);
}

static int
counters_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *c = arg;

	if (!phdr_counters(info, size, c))
		c[2] = 1;
	return 1; /* the first object is enough */
}

/*
 * Has something been loaded or unloaded since @m was scanned? One
 * dl_iterate_phdr callback; a glibc without the counters says yes (a
 * rescan finds no change and writes nothing). Context: the writer thread.
 */
int
rtprof__modules_stale(const struct rtprof__modset *m)
{
	unsigned long long c[3] = { 0, 0, 0 };

	if (m == NULL || !m->counted)
		return 1;
	dl_iterate_phdr(counters_cb, c);
	return c[2] != 0 || c[0] != m->adds || c[1] != m->subs;
}

static void
pack_mod(msgpack_packer *pk, const struct rtprof__mod *d)
{
	msgpack_pack_array(pk, 5);
	pcstr(pk, d->path);
	msgpack_pack_uint64(pk, d->start);
	msgpack_pack_uint64(pk, d->end);
	msgpack_pack_uint64(pk, d->offset);
	msgpack_pack_bin(pk, d->build_id_len);
	msgpack_pack_bin_body(pk, d->build_id, d->build_id_len);
}

/* Packs the MODULES payload: [[path, start, end, offset, build_id]]. */
void
rtprof__pack_modules(struct msgpack_packer *pkv, const struct rtprof__modset *m)
{
	msgpack_packer *pk = (msgpack_packer *)pkv;

	msgpack_pack_array(pk, m != NULL ? m->n : 0);
	for (size_t i = 0; m != NULL && i < m->n; i++)
		pack_mod(pk, &m->v[i]);
}

/* Is module @d (equal path, range, offset and build id) in @m? */
static int
modset_has(const struct rtprof__modset *m, const struct rtprof__mod *d)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp_mod(&m->v[mid], d);

		if (c == 0)
			return m->v[mid].offset == d->offset &&
			    m->v[mid].build_id_len == d->build_id_len &&
			    memcmp(m->v[mid].build_id, d->build_id,
			    d->build_id_len) == 0;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* How many modules of @a are not in @b. */
static size_t
count_missing(const struct rtprof__modset *a, const struct rtprof__modset *b)
{
	size_t n = 0;

	for (size_t i = 0; i < a->n; i++)
		n += !modset_has(b, &a->v[i]);
	return n;
}

/* Packs the modules of @a that are not in @b. */
static void
pack_missing(msgpack_packer *pk, const struct rtprof__modset *a,
    const struct rtprof__modset *b)
{
	msgpack_pack_array(pk, count_missing(a, b));
	for (size_t i = 0; i < a->n; i++)
		if (!modset_has(b, &a->v[i]))
			pack_mod(pk, &a->v[i]);
}

/*
 * Does the map @now differ from @was (a module loaded or unloaded, or
 * both)? Context: the writer thread.
 */
int
rtprof__modules_differ(const struct rtprof__modset *was,
    const struct rtprof__modset *now)
{
	return count_missing(now, was) != 0 || count_missing(was, now) != 0;
}

/*
 * Packs the MODULES_CHANGED payload from map @was to map @now, seen at
 * @ticks: {ticks, added: [module], removed: [module]}. Context: the
 * writer thread.
 */
void
rtprof__pack_module_changes(struct msgpack_packer *pkv, uint64_t ticks,
    const struct rtprof__modset *was, const struct rtprof__modset *now)
{
	msgpack_packer *pk = (msgpack_packer *)pkv;

	msgpack_pack_map(pk, 3);
	pcstr(pk, "ticks");
	msgpack_pack_uint64(pk, ticks);
	pcstr(pk, "added");
	pack_missing(pk, now, was);
	pcstr(pk, "removed");
	pack_missing(pk, was, now);
}

/* The length of the mapping that starts at @addr (/proc/self/maps), or 0. */
static size_t
mapping_len(uintptr_t addr)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	size_t len = 0;

	if (f == NULL)
		return 0;
	while (len == 0 && fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo == addr &&
		    hi > lo)
			len = hi - lo;
	}
	fclose(f);
	return len;
}

/* The extent of the ELF image at @eh: headers, segments and section
 * headers, at most @cap bytes (0 when it is not ELF or larger). */
static size_t
elf_extent(const ElfW(Ehdr) *eh, size_t cap)
{
	const ElfW(Phdr) *ph;
	size_t n;

	if (cap < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_phoff > cap || eh->e_phnum > (cap - eh->e_phoff) / sizeof(*ph))
		return 0;
	ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
	n = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > n)
			n = ph[i].p_offset + ph[i].p_filesz;
	return n <= cap ? n : 0;
}

#define VDSO_MAX (64u << 10)

/*
 * The vDSO's ELF image, which the kernel maps into the process (no file
 * holds it; its dynamic symbol table names its functions): *@base where
 * it is mapped, *@image and *@n its bytes (ELF header to the end of its
 * segments and section headers). Context: the writer thread.
 * Return: 0, -1 no vDSO (or not one this code can read whole).
 */
int
rtprof__vdso_image(uint64_t *base, const void **image, size_t *n)
{
	uintptr_t b = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	size_t map;

	if (b == 0 || (map = mapping_len(b)) == 0)
		return -1;
	*n = elf_extent((const ElfW(Ehdr) *)b, map < VDSO_MAX ? map : VDSO_MAX);
	if (*n == 0)
		return -1;
	*base = b;
	*image = (const void *)b;
	return 0;
}

/* Resident set size of the process in bytes, or 0. Context: any thread. */
uint64_t
rtprof__process_rss(void)
{
	char buf[128];
	size_t n = read_small("/proc/self/statm", buf, sizeof(buf) - 1);
	unsigned long long size = 0, rss = 0;

	buf[n] = 0;
	if (sscanf(buf, "%llu %llu", &size, &rss) != 2)
		return 0;
	return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}
