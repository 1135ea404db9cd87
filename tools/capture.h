/*
 * capture.h - `rtprof capture` (tools/capture.c). Context: main thread.
 */
#ifndef RTPROF_TOOLS_CAPTURE_H
#define RTPROF_TOOLS_CAPTURE_H

#include <stdio.h>

/* Return: the exit status (see capture_usage()). */
int cmd_capture(int argc, char **argv);
void capture_usage(FILE *f);

#endif /* RTPROF_TOOLS_CAPTURE_H */
