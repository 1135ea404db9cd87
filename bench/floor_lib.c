/*
 * floor_lib.c - librtprof_bench_floor.so: the recording floor built the
 * same way as librtprof (shared, -O2 -fPIC, hidden visibility with exported
 * entry points) so that the benchmark can compare rtprof against a floor
 * that pays for a shared-library call too. See floor.h.
 */
#include "floor.h"

/* Default visibility and no TLS model attribute: the compiler must assume
 * general-dynamic TLS (a __tls_get_addr call), as for any library variable
 * that could be reached from a dlopen()ed object. */
__attribute__((visibility("default"))) __thread struct floor_tls floor_gd_tls;

/* Initial-exec, as librtprof's own rtprof__tls. */
static __thread struct floor_tls floor_ie_tls
    __attribute__((tls_model("initial-exec")));

/* Context: owner thread; wait-free. */
FLOOR_API void
floor_shlib_record(const void *name)
{
	floor_put(&floor_gd_tls, name);
}

/* Context: owner thread; wait-free. */
FLOOR_API void
floor_shlib_ie_record(const void *name)
{
	floor_put(&floor_ie_tls, name);
}

/* Context: owner thread. */
FLOOR_API uint64_t
floor_shlib_count(void)
{
	return __atomic_load_n(&floor_gd_tls.idx, __ATOMIC_RELAXED) +
	    __atomic_load_n(&floor_ie_tls.idx, __ATOMIC_RELAXED);
}
