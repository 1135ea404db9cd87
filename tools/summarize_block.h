/*
 * summarize_block.h - `rtprof summarize`'s time off CPU by the kernel's
 * reason (tools/summarize_block.c): off-CPU samples that carry the
 * kernel's stack where the thread went off CPU (a KSTACK record in a
 * dump, a "kernel: ..." leaf frame in a profile), grouped by reason, then
 * by the call and stack that waited. Context: the tool's main thread.
 */
#ifndef RTPROF_TOOLS_SUMMARIZE_BLOCK_H
#define RTPROF_TOOLS_SUMMARIZE_BLOCK_H

#include <stddef.h>
#include <stdio.h>

struct sblock;

/* Return: a new, empty table, or NULL (out of memory). */
struct sblock *sblock_new(void);
void sblock_free(struct sblock *b);

/*
 * sblock_add - @ms off CPU for kernel reason @reason ("pipe full"), in
 * @where: the program's side, its innermost frames first, separated by
 * " < " ("write (blocked) < cat+0x5d60"). Return: 0, or -ENOMEM.
 */
int sblock_add(struct sblock *b, const char *reason, const char *where,
    double ms);

/*
 * sblock_reason_of - the reason of a profile's frame text @loc (@len
 * bytes) when it is a kernel frame: "kernel: FN (why)" gives "why",
 * "kernel: FN" gives "other: FN". Return: 1 with @buf set, else 0.
 */
int sblock_reason_of(const char *loc, size_t len, char *buf, size_t n);

/* A dump whose sampler took no kernel stacks, and the sampler's
 * explanation (the HEADER's sampling.why). Return: 0, or -ENOMEM. */
int sblock_refused(struct sblock *b, const char *why);

/* Print the table (the top @top reasons, the top 3 places of each). */
void sblock_print(const struct sblock *b, FILE *f, size_t top);

#endif /* RTPROF_TOOLS_SUMMARIZE_BLOCK_H */
