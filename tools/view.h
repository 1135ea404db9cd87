/*
 * view.h - `rtprof view` (tools/view.c). Context: main thread.
 */
#ifndef RTPROF_TOOLS_VIEW_H
#define RTPROF_TOOLS_VIEW_H

#include <stdio.h>

/* Return: the exit status (see view_usage()). */
int cmd_view(int argc, char **argv);
void view_usage(FILE *f);

#endif /* RTPROF_TOOLS_VIEW_H */
