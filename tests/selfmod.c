/*
 * selfmod.c - see selfmod.h.
 */
#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "selfmod.h"

struct find {
	uint64_t addr;
	struct selfmod *m;
	int found;
};

static void
build_id_of(const struct dl_phdr_info *info, const ElfW(Phdr) *ph,
    struct selfmod *d)
{
	const unsigned char *p = (const unsigned char *)(info->dlpi_addr +
	    ph->p_vaddr);
	const unsigned char *e = p + ph->p_memsz;

	while (p + sizeof(ElfW(Nhdr)) <= e) {
		const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
		size_t nsz = (nh->n_namesz + 3) & ~3u;
		size_t dsz = (nh->n_descsz + 3) & ~3u;
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

static int
phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find *f = arg;
	struct selfmod d;
	uint64_t lo = UINT64_MAX, hi = 0, off = 0;

	(void)size;
	memset(&d, 0, sizeof(d));
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			if (a < lo) {
				lo = a;
				off = ph->p_offset;
			}
			if (a + ph->p_memsz > hi)
				hi = a + ph->p_memsz;
		} else if (ph->p_type == PT_NOTE) {
			build_id_of(info, ph, &d);
		}
	}
	if (hi == 0 || f->addr < lo || f->addr >= hi)
		return 0;
	if (info->dlpi_name == NULL || info->dlpi_name[0] == 0) {
		ssize_t r = readlink("/proc/self/exe", d.path,
		    sizeof(d.path) - 1);

		if (r <= 0)
			return 0;
		d.path[r] = 0;
	} else {
		strncpy(d.path, info->dlpi_name, sizeof(d.path) - 1);
	}
	d.start = lo;
	d.end = hi;
	d.offset = off;
	*f->m = d;
	f->found = 1;
	return 1;
}

int
selfmod_find(const void *addr, struct selfmod *out)
{
	struct find f = { .addr = (uint64_t)(uintptr_t)addr, .m = out };

	dl_iterate_phdr(phdr_cb, &f);
	return f.found ? 0 : -1;
}
