/*
 * sigpipe.c - signals as bytes on a pipe (see sigpipe.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "sigpipe.h"

static int pipe_fd[2] = { -1, -1 };
static int routed[8];
static int nrouted;

/* Context: signal handler, any thread; async-signal-safe. */
static void
on_signal(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;

	(void)!write(pipe_fd[1], &b, 1);
	errno = saved;
}

/* Context: the tool's main thread. */
int
tool_sigpipe_open(const int *sigs, int n)
{
	struct sigaction sa;

	if (n > (int)(sizeof(routed) / sizeof(routed[0]))) {
		errno = EINVAL;
		return -1;
	}
	if (pipe2(pipe_fd, O_NONBLOCK | O_CLOEXEC) != 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	for (nrouted = 0; nrouted < n; nrouted++) {
		routed[nrouted] = sigs[nrouted];
		sigaction(sigs[nrouted], &sa, NULL);
	}
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	return pipe_fd[0];
}

/* Context: the tool's main thread. */
void
tool_sigpipe_close(void)
{
	if (pipe_fd[0] < 0)
		return;
	for (int i = 0; i < nrouted; i++)
		signal(routed[i], SIG_DFL);
	nrouted = 0;
	close(pipe_fd[0]);
	close(pipe_fd[1]);
	pipe_fd[0] = pipe_fd[1] = -1;
}
