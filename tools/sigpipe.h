/*
 * sigpipe.h - signals as bytes on a pipe, for the poll() loops of the
 * command-line tools (rtprof view, rtprof capture): the loop polls the read
 * end with its other descriptors, so a Ctrl-C is handled where it is safe,
 * and no signal races with a poll() about to block.
 */
#ifndef RTPROF_TOOLS_SIGPIPE_H
#define RTPROF_TOOLS_SIGPIPE_H

/*
 * tool_sigpipe_open - route @sigs (@n of them) into a pipe (each delivery
 * writes its signal number as one byte) and ignore SIGPIPE.
 * Context: the tool's main thread, once.
 * Return: the pipe's read end (non-blocking, close-on-exec), or -1 with
 * errno set.
 */
int tool_sigpipe_open(const int *sigs, int n);

/* Restore the default action of those signals and close the pipe. */
void tool_sigpipe_close(void);

#endif /* RTPROF_TOOLS_SIGPIPE_H */
