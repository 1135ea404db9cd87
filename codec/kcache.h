/*
 * kcache.h - the kernel's text symbols of this boot, kept between runs in
 * the user's cache directory (as perf keeps kallsyms in ~/.debug).
 *
 * Reading /proc/kallsyms costs ~50 ms of CPU (the kernel formats it line
 * by line), which `rtprof record` paid once per run, a large share of a
 * short run's cost. The cache holds the parsed, sorted table, named by
 * the boot id and a hash of the loaded modules (their addresses change
 * when a module is loaded again), readable by its owner only (0600: kernel
 * addresses are what kptr_restrict hides from others).
 *
 * Context: any thread; no state.
 */
#ifndef RTPROF_KCACHE_H
#define RTPROF_KCACHE_H

#include <stddef.h>
#include <stdint.h>

struct rtprof_ksym {
	uint64_t addr;
	uint32_t name;          /* offset of its NUL-terminated name in blob */
	uint32_t pad;           /* 0 */
};

/*
 * rtprof_kcache_path - the cache file for boot @boot and the modules now
 * loaded, into @buf (@n bytes), its directory created (0700).
 * Return: 0, or -1 (no cache directory: $XDG_CACHE_HOME, $HOME unset, or
 * RTPROF_KSYMS_CACHE=0).
 */
int rtprof_kcache_path(const char *boot, char *buf, size_t n);

/*
 * rtprof_kcache_read - the table in @path, checked: a regular file of the
 * caller's own, not writable by others, whose every name offset is inside
 * its names and whose addresses ascend. Return: 0 with *@sym and *@blob
 * malloc'ed, or -1 (absent or not valid: read kallsyms again).
 */
int rtprof_kcache_read(const char *path, struct rtprof_ksym **sym,
    size_t *nsym, char **blob, size_t *blen);

/* rtprof_kcache_write - keep the table (@nsym sorted symbols, names in
 * @blob) in @path, atomically (a temporary file renamed), and remove the
 * tables of other boots beside it. Errors are ignored: it is a cache. */
void rtprof_kcache_write(const char *path, const struct rtprof_ksym *sym,
    size_t nsym, const char *blob, size_t blen);

#endif /* RTPROF_KCACHE_H */
