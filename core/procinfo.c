/*
 * procinfo.c - facts about the process for the dump header: identity,
 * command line, machine, and the module map with ELF build ids.
 *
 * Context: the writer thread, lock held (called while building the header).
 */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
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
	msgpack_pack_map(pk, 5);
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
}

struct mod {
	char path[512];
	uint64_t start, end, offset;
	unsigned char build_id[64];
	size_t build_id_len;
};

struct mods {
	struct mod *v;
	size_t n, cap;
};

static int
phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct mods *m = arg;
	struct mod *d;
	uint64_t lo = UINT64_MAX, hi = 0, off = 0;
	const char *path = info->dlpi_name;
	(void)size;

	if (m->n == m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 32;
		struct mod *nv = realloc(m->v, ncap * sizeof(*nv));
		if (nv == NULL)
			return 1;
		m->v = nv;
		m->cap = ncap;
	}
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
			const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
			const unsigned char *e = p + ph->p_memsz;

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
	}
	if (hi == 0)
		return 0; /* no executable segment (e.g. linux-vdso data) */
	if (path == NULL || path[0] == 0) {
		ssize_t r = m->n == 0 ? readlink("/proc/self/exe", d->path, sizeof(d->path) - 1) : -1;
		if (r > 0)
			d->path[r] = 0;
	} else {
		strncpy(d->path, path, sizeof(d->path) - 1);
	}
	d->start = lo;
	d->end = hi;
	d->offset = off;
	m->n++;
	return 0;
}

/* Packs the MODULES payload: [[path, start, end, offset, build_id]]. */
void
rtprof__pack_modules(struct msgpack_packer *pkv)
{
	msgpack_packer *pk = (msgpack_packer *)pkv;
	struct mods m = { NULL, 0, 0 };

	dl_iterate_phdr(phdr_cb, &m);
	msgpack_pack_array(pk, m.n);
	for (size_t i = 0; i < m.n; i++) {
		msgpack_pack_array(pk, 5);
		pcstr(pk, m.v[i].path);
		msgpack_pack_uint64(pk, m.v[i].start);
		msgpack_pack_uint64(pk, m.v[i].end);
		msgpack_pack_uint64(pk, m.v[i].offset);
		msgpack_pack_bin(pk, m.v[i].build_id_len);
		msgpack_pack_bin_body(pk, m.v[i].build_id, m.v[i].build_id_len);
	}
	free(m.v);
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
