/*
 * rt_zone.c - the state behind the inline zone, text, flow and frame
 * calls of rtprof.h (their records are written inline, like the other
 * markers): the flow id source.
 *
 * Context: any thread; RT-safe.
 */
#include <unistd.h>

#include "rt_internal.h"

/* The count of rtprof_flow_new(): atomic add, relaxed (any thread). */
RTPROF_API uint64_t rtprof__flow_next;
/* The process id << 32, set at load before any thread can ask. */
RTPROF_API uint64_t rtprof__flow_base;

__attribute__((constructor)) static void
flow_base_init(void)
{
	rtprof__flow_base = (uint64_t)(uint32_t)getpid() << 32;
}
