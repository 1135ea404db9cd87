/*
 * summarize.h - `rtprof summarize` (tools/summarize*.c; their shared
 * state and map: summarize_int.h). Context: main thread.
 */
#ifndef RTPROF_TOOLS_SUMMARIZE_H
#define RTPROF_TOOLS_SUMMARIZE_H

#include <stdio.h>

/* Return: the exit status (0, 1 damage, 2 error). */
int cmd_summarize(int argc, char **argv);
void summarize_usage(FILE *f);

/*
 * summarize_check_profile - whether the JSON (or gzip JSON) file @path is
 * a whole Gecko profile: JSON to its end, a top-level meta.version and
 * threads (the file is read through once, in constant memory).
 * Return: 0, or -1 (said on stderr, "@prog: @path: why").
 */
int summarize_check_profile(const char *prog, const char *path);

#endif /* RTPROF_TOOLS_SUMMARIZE_H */
