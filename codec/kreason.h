/*
 * kreason.h - why a thread went off CPU, named from the kernel's stack at
 * that moment (KSTACK records, docs/wire-format.md), the way latencytap
 * names it: "kernel: pipe_write (pipe full)".
 *
 * The addresses are the running kernel's (KASLR: valid for one boot):
 * they are resolved with /proc/kallsyms of the machine that converts, and
 * only when the dump was recorded in this very boot (the HEADER's
 * machine.boot_id); otherwise the frame says why it is not named.
 *
 * Context: any thread; the table of names is loaded once per process, on
 * first use: from the user's cache of this boot (codec/kcache.h, ~2 ms),
 * else from /proc/kallsyms (~50 ms: the kernel writes it line by line).
 */
#ifndef RTPROF_KREASON_H
#define RTPROF_KREASON_H

#include <stdint.h>

/*
 * rtprof_kreason_of - the reason of kernel stack @ips (@n addresses,
 * outermost first, as in a KSTACK record) recorded in boot @boot_id ("":
 * unknown). Return: its id (>= 0), stable for the process, or -1 (out of
 * memory).
 */
int rtprof_kreason_of(const char *boot_id, const uint64_t *ips, unsigned n);

/*
 * rtprof_kreason_warm - read the kernel's symbols now (~50 ms of system
 * time: /proc/kallsyms comes 4 KiB per read), e.g. on a thread of its
 * own while the recorded program runs, so the conversion does not wait.
 */
void rtprof_kreason_warm(void);

/* The frame text of reason @id: "kernel: pipe_write (pipe full)". */
const char *rtprof_kreason_text(int id);

/* Its reason alone, for grouping: "pipe full" (for an unknown function,
 * "other: FUNCTION"; when not resolved, why). */
const char *rtprof_kreason_short(int id);

#endif /* RTPROF_KREASON_H */
