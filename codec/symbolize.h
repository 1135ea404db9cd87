/*
 * symbolize.h - offline symbolication of native addresses.
 *
 * The converter feeds the module map of a dump (MODULES frame: path, start,
 * end, offset, build_id; see docs/wire-format.md) into a symbolizer, then
 * resolves runtime addresses of the recorded process to function names and,
 * where debug info exists, source file and line. The ELF files are read with
 * elfutils (libdwfl); nothing of the recorded process is needed but its files.
 *
 *  - A module is used only if the file's GNU build id equals the one in the
 *    dump (wrong symbols are worse than none). A module recorded without a
 *    build id is used unverified.
 *  - The dump is not trusted: a module's file is opened only if, once its
 *    path is resolved, it lies outside /proc, /sys and /dev and is a
 *    regular file (opened non-blocking, never as a controlling terminal,
 *    then checked with fstat; not on proc, sysfs and the like). A file
 *    missing, unreadable, refused or not ELF is "not usable", with no
 *    difference: a dump cannot probe which files exist.
 *  - sysroot (may be NULL): module paths are looked up under it first
 *    (sysroot + "/usr/lib/x.so"); the host path is tried next only when the
 *    dump carries a build id to verify it against.
 *  - Separate debug files are found by build id under each debug directory
 *    (DIR/.build-id/xx/rest.debug, the layout of Debian's -dbgsym packages),
 *    under sysroot/usr/lib/debug, and under /usr/lib/debug; also by
 *    .gnu_debuglink next to the file and in its .debug/ subdirectory.
 *  - Return addresses: a sampled return address points after the call, maybe
 *    into the next line or even the next function. The CALLER looks up
 *    addr - 1 for every frame but the innermost (the interrupted pc).
 *  - Results are cached per address in a fixed-size table (bounded memory);
 *    the strings returned stay valid until rtprof_symbolizer_free().
 *  - Files are read once per thread: the symbolizers a thread makes one
 *    after the other (one per process of a profile) share each file's
 *    symbol and debug tables, whatever address each process loaded it at
 *    (up to 32 files no symbolizer uses are kept for the next one; a file
 *    changed on disk is read again).
 *  - Inlined functions are not expanded: the name is the symbol-table
 *    function containing the address, file:line the line table's entry (which
 *    may lie in an inlined callee's source).
 *
 * Context: converter (offline), single-threaded use per symbolizer; the
 * file cache is per thread.
 */
#ifndef RTPROF_SYMBOLIZE_H
#define RTPROF_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rtprof_symbolizer;

/* Return codes of rtprof_symbolize(). */
enum {
	RTPROF_SYM_OK = 0,        /* name found (file/line if debug info has it) */
	RTPROF_SYM_NOMODULE = -1, /* no module covers the address */
	RTPROF_SYM_UNUSABLE = -2, /* module known, but its file is not usable */
	RTPROF_SYM_NOSYM = -3,    /* module usable, no symbol covers the address */
};

/* Per-module status (see rtprof_symbolizer_module()). */
enum rtprof_modstatus {
	RTPROF_MOD_OK = 0,         /* opened, build id verified */
	RTPROF_MOD_UNVERIFIED,     /* opened, dump has no build id to check */
	RTPROF_MOD_MISSING,        /* not usable: missing, unreadable, not
				    * ELF, or refused (not a regular file;
				    * under /proc, /sys, /dev) */
	RTPROF_MOD_MISMATCH,       /* build id differs: not used */
	RTPROF_MOD_BADELF,         /* no segment maps start (or libdwfl fails) */
	RTPROF_MOD_NOSYMS,         /* opened, but no symbol table nor debug info */
};

/* struct rtprof_sym.flags */
#define RTPROF_SYMF_UNWIND 1u /* no symbol: name is "lib+0x<function start>"
			       * from the unwind tables (see below) */

/* rtprof_symbolize_at()'s time for "whatever the time". */
#define RTPROF_SYM_ANYTIME UINT64_MAX

struct rtprof_sym {
	const char *name;     /* function name (mangled as in the symtab), or NULL */
	unsigned flags;       /* RTPROF_SYMF_* */
	const char *file;     /* source file, or NULL without debug info */
	int line;             /* source line, 0 if unknown */
	int module;           /* index of the module (order of adding), -1 if none */
	uint64_t file_offset; /* addr - start + offset: position in the file */
	uint64_t vaddr;       /* ELF virtual address (as addr2line takes it), or 0 */
	uint64_t sym_offset;  /* addr - start of the function, if name != NULL */
};

/* debug_dirs: extra debug-file roots (--debug-dir); both may be NULL/0.
 * Returns NULL on allocation failure. */
struct rtprof_symbolizer *rtprof_symbolizer_new(const char *sysroot,
    const char *const *debug_dirs, size_t ndebug_dirs);
void rtprof_symbolizer_free(struct rtprof_symbolizer *s);

/* Adds a module as the MODULES frame records it. Returns its index (>= 0),
 * also when the file is unusable (see its status), or -1 on allocation
 * failure. Adding clears the cache. */
int rtprof_symbolizer_add_module(struct rtprof_symbolizer *s, const char *path,
    uint64_t start, uint64_t end, uint64_t offset,
    const unsigned char *build_id, size_t build_id_len);

/*
 * The ELF image of a module that has no file (IMAGE frame: the vDSO),
 * mapped at @addr: a module whose path is not absolute and whose start
 * lies in the image is read from it, whether it was added before or
 * after. Returns 0, or -1 on allocation failure.
 */
int rtprof_symbolizer_add_image(struct rtprof_symbolizer *s, uint64_t addr,
    const void *bytes, size_t len);

/*
 * The module map over time (MODULES_CHANGED frames): module @i was mapped
 * from @from to @to, [from, to) in the session's ticks; an added module
 * is mapped at all times (0, UINT64_MAX) until this is called.
 * rtprof_symbolizer_module_unload() ends at @t the span of the module
 * with this path and range whose span has no end yet (the last such one
 * added): returns its index, or -1 when there is none.
 */
void rtprof_symbolizer_module_span(struct rtprof_symbolizer *s, size_t i,
    uint64_t from, uint64_t to);
int rtprof_symbolizer_module_unload(struct rtprof_symbolizer *s,
    const char *path, uint64_t start, uint64_t end, uint64_t t);

/*
 * Resolves a runtime address (see above for return addresses) as the map
 * was at time @t (ticks): in the module mapped there then, or, when none
 * was, in one the next change added (a library is announced up to one
 * writer round after it was loaded). RTPROF_SYM_ANYTIME: in the last
 * module added that covers it. *out is always filled (fields unknown are
 * NULL/0, module -1 if none).
 *
 * An address that no symbol covers in a usable module is named after
 * the function that holds it in the module's unwind tables (an FDE of
 * .eh_frame covers it; its initial location, from .eh_frame_hdr's
 * table, is the function's start): "lib+0x<start>" (an ELF address: the
 * offset from the load address for a PIE or a shared object) with
 * RTPROF_SYMF_UNWIND, so that the samples
 * of a stripped program's function are one function, as its symbol
 * would make them.
 */
int rtprof_symbolize_at(struct rtprof_symbolizer *s, uint64_t addr,
    uint64_t t, struct rtprof_sym *out);
/* rtprof_symbolize_at(s, addr, RTPROF_SYM_ANYTIME, out). */
int rtprof_symbolize(struct rtprof_symbolizer *s, uint64_t addr,
    struct rtprof_sym *out);

/*
 * rtprof_demangle - a C++ symbol name (_Z...) as people write it
 * (libstdc++'s demangler, which codec/ links).
 * Return: a malloc'ed name, or NULL: @name is not mangled, or not
 * demangled (keep @name).
 */
char *rtprof_demangle(const char *name);

size_t rtprof_symbolizer_nmodules(const struct rtprof_symbolizer *s);
/* Status of module i; *path gets the path as recorded, *detail (may be
 * NULL) a one-line explanation for the profile's gathering log, e.g.
 * "build id mismatch: dump 1a2b..., file 3c4d..." or "no debug info". */
enum rtprof_modstatus rtprof_symbolizer_module(const struct rtprof_symbolizer *s,
    size_t i, const char **path, const char **detail);
const char *rtprof_modstatus_name(enum rtprof_modstatus st);

/* Calls fn once per module that is not fully usable (any status but OK and
 * UNVERIFIED, or usable without debug info) with a line "path: detail".
 * Returns the number of calls. */
size_t rtprof_symbolizer_problems(const struct rtprof_symbolizer *s,
    void (*fn)(void *arg, const char *line), void *arg);

struct rtprof_symbolizer_stats {
	uint64_t lookups, hits;
};
void rtprof_symbolizer_stats(const struct rtprof_symbolizer *s,
    struct rtprof_symbolizer_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* RTPROF_SYMBOLIZE_H */
