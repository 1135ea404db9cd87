/*
 * record.c - `rtprof record`: profile an unmodified program.
 *
 *   rtprof record [-o OUT] [--interval MS] [--memory MIB]
 *                 [--max-bytes N] -- CMD [ARGS...]
 *
 * Opens the dump file (OUT with .rtprof instead of .json.gz; the program
 * never opens a path itself), starts CMD with librtprof-preload.so in
 * LD_PRELOAD and the descriptor in RTPROF_FD (core/preload.c: the main
 * thread and every pthread_create thread are registered and sampled), waits
 * for it while forwarding SIGINT/SIGTERM/SIGHUP to it, then converts the
 * dump into OUT (default CMD.json.gz) and keeps the dump next to it. The
 * exit status is the program's (128 + N when it died of signal N).
 *
 * Every program CMD starts (exec, posix_spawn, system) is followed too:
 * RTPROF_SOCK names a Unix socket on which each new process asks for its
 * own dump; the launcher opens OUT.PID.rtprof and passes the descriptor
 * back with SCM_RIGHTS (at most RECORD_MAX_PROCS processes: more are run
 * unrecorded, and said so). A child made by fork() without exec is not
 * recorded (core/state.c). When CMD has exited, the launcher waits for the
 * others while a dump still grows (progress-based patience: two rounds of
 * 500 ms without growth and it stops waiting, naming the dumps it gave
 * up on), then converts all dumps into one multi-process profile.
 *
 * Context: the tool's main thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "convert.h"
#include "record.h"

#define PROG "rtprof record"

#ifndef RTPROF_PRELOAD_INSTALLED
#define RTPROF_PRELOAD_INSTALLED "librtprof-preload.so"
#endif

#define RECORD_MAX_PROCS 64
#define ROUND_MS 500

static volatile sig_atomic_t child_pid;

/* The processes that asked for a dump (besides CMD). */
struct procs {
	char *path[RECORD_MAX_PROCS];
	off_t size[RECORD_MAX_PROCS];
	int n;
	int refused;
};

/* OUT.rtprof -> OUT.PID.rtprof, or OUT.PID-K.rtprof for the K-th image */
static void
proc_path(const char *dump, int pid, int k, char *buf, size_t n)
{
	size_t len = strlen(dump) - strlen(".rtprof");

	if (k == 1)
		snprintf(buf, n, "%.*s.%d.rtprof", (int)len, dump, pid);
	else
		snprintf(buf, n, "%.*s.%d-%d.rtprof", (int)len, dump, pid, k);
}

/* One request on the socket: a pid in, a descriptor out. */
static void
serve(int lfd, const char *dump, struct procs *p)
{
	char req[32], path[PATH_MAX], cbuf[CMSG_SPACE(sizeof(int))], one = 1;
	struct iovec iov = { &one, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int c, fd, pid;
	ssize_t n;

	while ((c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		struct timeval tv = { 1, 0 };

		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		n = read(c, req, sizeof(req) - 1);
		pid = n > 0 ? (req[n] = '\0', atoi(req)) : 0;
		if (pid <= 0) {
			close(c);
			continue;
		}
		if (p->n == RECORD_MAX_PROCS) {
			if (p->refused++ == 0)
				fprintf(stderr, PROG ": more than %d processes:"
				    " pid %d and later ones are not recorded\n",
				    RECORD_MAX_PROCS, pid);
			close(c);       /* no descriptor: it runs unrecorded */
			continue;
		}
		/* A process that exec()s asks again with the same pid: each
		 * image its own dump (OUT.PID.rtprof, OUT.PID-2.rtprof...). */
		proc_path(dump, pid, 1, path, sizeof(path));
		for (int k = 2; (fd = open(path, O_WRONLY | O_CREAT | O_EXCL |
		    O_CLOEXEC, 0644)) < 0 && errno == EEXIST && k < 100; k++)
			proc_path(dump, pid, k, path, sizeof(path));
		if (fd < 0) {
			fprintf(stderr, PROG ": %s: %s\n", path,
			    strerror(errno));
			close(c);
			continue;
		}
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
		if (sendmsg(c, &mh, MSG_NOSIGNAL) == 1 &&
		    (p->path[p->n] = strdup(path)) != NULL)
			p->n++;
		else
			unlink(path);
		close(fd);
		close(c);
	}
}

/* Did any dump of @p grow since the last call? */
static int
grew(struct procs *p)
{
	int any = 0;

	for (int i = 0; i < p->n; i++) {
		struct stat st;

		if (stat(p->path[i], &st) == 0 && st.st_size != p->size[i]) {
			p->size[i] = st.st_size;
			any = 1;
		}
	}
	return any;
}

static void
forward(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

void
record_usage(FILE *f)
{
	fprintf(f,
	    "usage: rtprof record [-o OUT] [--interval MS] [--memory MIB]\n"
	    "                     [--max-bytes N] -- CMD [ARGS...]\n"
	    "Run CMD with rtprof preloaded: its main thread and every thread\n"
	    "it creates are sampled; the dump becomes a Firefox Profiler\n"
	    "profile.\n"
	    "  -o OUT          the profile (default CMD.json.gz); the dump is\n"
	    "                  kept next to it as OUT with .rtprof\n"
	    "  --interval MS   sampling interval, 0.1 to 1000 ms (1)\n"
	    "  --memory MIB    rtprof's chunk memory in the program (32)\n"
	    "  --max-bytes N   cap on the dump's size (none)\n"
	    "Exit status: the program's (128 + N when killed by signal N);\n"
	    "2 when rtprof could not run it.\n");
}

/* The preload library: next to this executable (a build tree), else the
 * installed one. */
static void
preload_path(char *out, size_t n)
{
	char exe[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (k > 0) {
		char *slash;

		exe[k] = '\0';
		slash = strrchr(exe, '/');
		if (slash != NULL) {
			struct stat st;

			snprintf(out, n, "%.*s/librtprof-preload.so",
			    (int)(slash - exe), exe);
			if (stat(out, &st) == 0)
				return;
		}
	}
	snprintf(out, n, "%s", RTPROF_PRELOAD_INSTALLED);
}

/* OUT with its .json.gz / .json suffix replaced by .rtprof. */
static void
dump_path(const char *out, char *buf, size_t n)
{
	size_t len = strlen(out);

	if (len > 8 && strcmp(out + len - 8, ".json.gz") == 0)
		len -= 8;
	else if (len > 5 && strcmp(out + len - 5, ".json") == 0)
		len -= 5;
	snprintf(buf, n, "%.*s.rtprof", (int)len, out);
}

static int
open_out(void *ctx)
{
	return ((struct tool_out *)ctx)->fd < 0;
}

/* Context: main thread. Return: the exit status. */
int
cmd_record(int argc, char **argv)
{
	char def_out[PATH_MAX], dump[PATH_MAX], pre[PATH_MAX], env[64];
	char sdir[] = "/tmp/rtprof-record-XXXXXX", spath[64];
	struct sockaddr_un sa_un;
	struct procs procs = { .n = 0 };
	char **dumps;
	int lfd, quiet_rounds;
	const char *out = NULL, *interval = NULL, *memory = NULL, *maxb = NULL;
	struct sigaction sa;
	struct tool_convert_opts opts;
	struct tool_out o = { -1, NULL };
	struct tool_convert_sink sink = { open_out, tool_out_write, &o };
	bool opened = false;
	int i, fd, status, rc, werr = 0, code;
	pid_t pid;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			record_usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
			out = argv[++i];
		} else if (strcmp(argv[i], "--interval") == 0 && i + 1 < argc) {
			interval = argv[++i];
		} else if (strcmp(argv[i], "--memory") == 0 && i + 1 < argc) {
			memory = argv[++i];
		} else if (strcmp(argv[i], "--max-bytes") == 0 &&
		    i + 1 < argc) {
			maxb = argv[++i];
		} else if (argv[i][0] == '-') {
			fprintf(stderr, PROG ": unknown option %s\n", argv[i]);
			record_usage(stderr);
			return 2;
		} else {
			break;          /* CMD without "--" */
		}
	}
	if (i >= argc) {
		record_usage(stderr);
		return 2;
	}
	if (out == NULL) {
		const char *base = strrchr(argv[i], '/');

		snprintf(def_out, sizeof(def_out), "%s.json.gz",
		    base != NULL ? base + 1 : argv[i]);
		out = def_out;
	}
	dump_path(out, dump, sizeof(dump));
	preload_path(pre, sizeof(pre));
	/* Not close-on-exec: the program inherits it (and keeps it: the
	 * library makes it close-on-exec for what the program starts). */
	fd = open(dump, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, PROG ": %s: %s\n", dump, strerror(errno));
		return 2;
	}

	/* The socket on which the processes CMD starts ask for a dump. */
	if (mkdtemp(sdir) == NULL) {
		fprintf(stderr, PROG ": %s: %s\n", sdir, strerror(errno));
		close(fd);
		return 2;
	}
	snprintf(spath, sizeof(spath), "%s/sock", sdir);
	memset(&sa_un, 0, sizeof(sa_un));
	sa_un.sun_family = AF_UNIX;
	memcpy(sa_un.sun_path, spath, strlen(spath) + 1);  /* < 64 bytes */
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa_un,
	    sizeof(sa_un)) != 0 || listen(lfd, 64) != 0) {
		fprintf(stderr, PROG ": %s: %s\n", spath, strerror(errno));
		close(fd);
		rmdir(sdir);
		return 2;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, PROG ": fork: %s\n", strerror(errno));
		close(fd);
		return 2;
	}
	if (pid == 0) {
		const char *old = getenv("LD_PRELOAD");
		char *ld;

		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		snprintf(env, sizeof(env), "%d", fd);
		setenv("RTPROF_FD", env, 1);
		setenv("RTPROF_SOCK", spath, 1);
		if (interval != NULL) {
			snprintf(env, sizeof(env), "%.0f",
			    strtod(interval, NULL) * 1000.0);
			setenv("RTPROF_SAMPLE_US", env, 1);
		}
		if (memory != NULL) {
			snprintf(env, sizeof(env), "%llu",
			    strtoull(memory, NULL, 10) << 20);
			setenv("RTPROF_MEMORY", env, 1);
		}
		if (maxb != NULL)
			setenv("RTPROF_MAX_BYTES", maxb, 1);
		if (old != NULL && old[0] != '\0' &&
		    (ld = malloc(strlen(pre) + strlen(old) + 2)) != NULL) {
			sprintf(ld, "%s:%s", pre, old);
			setenv("LD_PRELOAD", ld, 1);
		} else {
			setenv("LD_PRELOAD", pre, 1);
		}
		execvp(argv[i], argv + i);
		fprintf(stderr, PROG ": %s: %s\n", argv[i], strerror(errno));
		_exit(127);
	}
	child_pid = pid;
	close(fd);
	for (;;) {
		struct pollfd pf = { lfd, POLLIN, 0 };
		pid_t w;

		poll(&pf, 1, 100);
		serve(lfd, dump, &procs);
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			fprintf(stderr, PROG ": waitpid: %s\n", strerror(errno));
			return 2;
		}
	}
	child_pid = 0;
	/*
	 * Gathering: processes CMD started may still be writing. Wait while
	 * a dump grows; two rounds without growth and we go on without them
	 * (their dumps convert up to their last complete frame).
	 */
	grew(&procs);
	for (quiet_rounds = 0; procs.n > 0 && quiet_rounds < 2;) {
		for (int t = 0; t < ROUND_MS / 100; t++) {
			struct pollfd pf = { lfd, POLLIN, 0 };

			poll(&pf, 1, 100);
			serve(lfd, dump, &procs);
		}
		quiet_rounds = grew(&procs) ? 0 : quiet_rounds + 1;
	}
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	close(lfd);
	unlink(spath);
	rmdir(sdir);
	code = WIFEXITED(status) ? WEXITSTATUS(status) :
	    WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 2;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		/* exec failed (message printed by the child): no dump. */
		unlink(dump);
		return 127;
	}

	/* Convert: a killed program's dump converts up to its last frame. */
	if (tool_convert_opts_init(&opts, PROG, 0) != 0)
		return 2;
	o.fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (o.fd < 0) {
		fprintf(stderr, PROG ": %s: %s\n", out, strerror(errno));
		tool_convert_opts_free(&opts);
		return 2;
	}
	if (strlen(out) > 3 && strcmp(out + strlen(out) - 3, ".gz") == 0) {
		o.gz = gzdopen(dup(o.fd), "wb6");
		if (o.gz == NULL) {
			fprintf(stderr, PROG ": %s: cannot compress\n", out);
			close(o.fd);
			tool_convert_opts_free(&opts);
			return 2;
		}
	}
	dumps = calloc((size_t)procs.n + 1, sizeof(*dumps));
	if (dumps == NULL) {
		close(o.fd);
		tool_convert_opts_free(&opts);
		return 2;
	}
	dumps[0] = dump;
	for (int k = 0; k < procs.n; k++)
		dumps[k + 1] = procs.path[k];
	rc = tool_convert(PROG, dumps, procs.n + 1, &opts, false,
	    isatty(2) != 0, &sink, &opened, &werr);
	free(dumps);
	if (o.gz != NULL && gzclose(o.gz) != Z_OK && rc == 0)
		rc = 2;
	if (close(o.fd) != 0 && rc == 0)
		rc = 2;
	tool_convert_opts_free(&opts);
	if (rc == 2) {
		if (werr != 0)
			fprintf(stderr, PROG ": %s: %s\n", out, strerror(-werr));
		unlink(out);
		fprintf(stderr, PROG ": no profile; the dump is %s\n", dump);
		return code != 0 ? code : 2;
	}
	fprintf(stderr, PROG ": wrote %s (%d process%s; dump %s%s); open it "
	    "with `rtprof view %s` or at https://profiler.firefox.com\n", out,
	    procs.n + 1, procs.n ? "es" : "", dump, procs.n ? " and others "
	    "next to it" : "", out);
	for (int k = 0; k < procs.n; k++)
		free(procs.path[k]);
	return code;
}
