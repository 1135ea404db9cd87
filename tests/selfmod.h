/*
 * selfmod.h - the MODULES entry of the object that holds an address in this
 * process, computed as core/procinfo.c records it (lowest executable
 * PT_LOAD, its file offset, the highest executable end, the GNU build id).
 * Test support: for tests that write or check module maps without the
 * recorder.
 */
#ifndef RTPROF_SELFMOD_H
#define RTPROF_SELFMOD_H

#include <stddef.h>
#include <stdint.h>

struct selfmod {
	char path[512];
	uint64_t start, end, offset;
	unsigned char build_id[64];
	size_t build_id_len;
};

/* Return: 0 with *@out filled, -1 when no loaded object holds @addr. */
int selfmod_find(const void *addr, struct selfmod *out);

#endif /* RTPROF_SELFMOD_H */
