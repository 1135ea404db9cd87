/*
 * record.h - `rtprof record` (tools/record.c). Context: main thread.
 */
#ifndef RTPROF_TOOLS_RECORD_H
#define RTPROF_TOOLS_RECORD_H

#include <stdio.h>

/* Return: the exit status (the program's, or 2 / 127). */
int cmd_record(int argc, char **argv);
void record_usage(FILE *f);

#endif /* RTPROF_TOOLS_RECORD_H */
