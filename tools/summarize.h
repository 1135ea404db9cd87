/*
 * summarize.h - `rtprof summarize` (tools/summarize.c). Context: main
 * thread.
 */
#ifndef RTPROF_TOOLS_SUMMARIZE_H
#define RTPROF_TOOLS_SUMMARIZE_H

#include <stdio.h>

/* Return: the exit status (0, 1 damage, 2 error). */
int cmd_summarize(int argc, char **argv);
void summarize_usage(FILE *f);

#endif /* RTPROF_TOOLS_SUMMARIZE_H */
