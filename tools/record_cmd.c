/*
 * record_cmd.c - `rtprof record` as a command: its options, finding the
 * preload library, starting CMD, waiting for it and the processes it
 * started (record.c keeps the account of their dumps), converting.
 * The exit status is CMD's (128 + N when killed by signal N); 2 when rtprof
 * could not run it (a bad option, no preload library, a command that
 * cannot be executed) or nothing was recorded.
 *
 * Context: the tool's main thread.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "monotonic.h"
#include "record.h"
#include "record_probe.h"
#include "record_int.h"

#ifndef RTPROF_PRELOAD_INSTALLED
#define RTPROF_PRELOAD_INSTALLED "librtprof-preload.so"
#endif
#ifndef RTPROF_INSTALL_LIBDIR
#define RTPROF_INSTALL_LIBDIR "lib"
#endif
#define PRELOAD_NAME "librtprof-preload.so"

static volatile sig_atomic_t child_pid;

/* The options of one run. */
struct ropts {
	const char *out, *interval, *memory, *maxb, *block;
	uint64_t max_total, max_bytes;
	long max_procs;
	char **cmd;             /* CMD and its arguments */
	char def_out[PATH_MAX];
};

/* What a run holds open while CMD runs. */
struct run {
	char dir[PATH_MAX], dump[PATH_MAX], pre[PATH_MAX];
	char sdir[32], spath[64];
	int lfd;
	int fd, pfd[2];         /* CMD's dump file, its pipe */
	pid_t pid;
};

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
	    "                     [--max-bytes N] [--max-total-bytes N]\n"
	    "                     [--block-threshold US] [--max-processes N]\n"
	    "                     -- CMD [ARGS...]\n"
	    "Run CMD with rtprof preloaded: its main thread and every thread\n"
	    "it creates are sampled, calls that block are timed, and every\n"
	    "program it starts is followed; the dumps become one Firefox\n"
	    "Profiler profile.\n"
	    "  -o OUT          the profile (default CMD.json.gz); the dumps are\n"
	    "                  kept in one folder next to it, OUT with\n"
	    "                  .rtprof.d (CMD's main.rtprof, others PID.rtprof;\n"
	    "                  a previous run's dumps there are removed)\n"
	    "  --interval MS   sampling interval, 0.1 to 1000 ms (1)\n"
	    "  --memory MIB    rtprof's chunk memory in each process, at most\n"
	    "                  (32; taken as needed, RTPROF_PREFAULT=1 takes\n"
	    "                  it all at start)\n"
	    "  --max-bytes N   cap on each process's dump (none)\n"
	    "  --max-total-bytes N\n"
	    "                  cap on all dumps together: past it dumps end\n"
	    "                  and later processes are not recorded (none)\n"
	    "  --max-processes N\n"
	    "                  record at most N processes, CMD included; later\n"
	    "                  ones run unrecorded, and the profile says so\n"
	    "                  (64, the most)\n"
	    "  --block-threshold US\n"
	    "                  a blocking call of at least US microseconds\n"
	    "                  carries the stack where it blocked (100;\n"
	    "                  \"off\": never)\n"
	    "Environment: RTPROF_PRELOAD=PATH, the preload library to use.\n"
	    "Exit status: the program's (128 + N when killed by signal N);\n"
	    "2 when rtprof could not run it (no preload library, a command\n"
	    "that cannot be executed) or recorded nothing.\n");
}

/* Is @path a readable file? */
static bool
readable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    access(path, R_OK) == 0;
}

/*
 * The preload library: RTPROF_PRELOAD, else next to this executable (a
 * build tree), else the install's libdir relative to it (PREFIX/bin/rtprof
 * -> PREFIX/lib.../librtprof-preload.so: an install moved or made with
 * --prefix), else the libdir it was configured for.
 * Return: 0 found, -1 not (said, with where it looked).
 */
static int
preload_path(char *out, size_t n)
{
	const char *env = getenv("RTPROF_PRELOAD");
	char exe[PATH_MAX], *slash;
	ssize_t k;

	if (env != NULL && *env != '\0') {
		snprintf(out, n, "%s", env);
		if (readable(out) && strchr(out, ':') == NULL && out[0] == '/')
			return 0;
		fprintf(stderr, PROG ": RTPROF_PRELOAD=%s: not a readable "
		    "file given by its absolute path; the program was not "
		    "run\n", env);
		return -1;
	}
	k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (k > 0) {
		exe[k] = '\0';
		if ((slash = strrchr(exe, '/')) != NULL) {
			*slash = '\0';
			if (snprintf(out, n, "%.3000s/" PRELOAD_NAME, exe) > 0 &&
			    readable(out))
				return 0;
			if (snprintf(out, n, "%.3000s/../" RTPROF_INSTALL_LIBDIR
			    "/" PRELOAD_NAME, exe) > 0 && readable(out))
				return 0;
		}
	}
	snprintf(out, n, "%s", RTPROF_PRELOAD_INSTALLED);
	if (readable(out))
		return 0;
	fprintf(stderr, PROG ": cannot find " PRELOAD_NAME " (looked next to "
	    "this executable, in ../" RTPROF_INSTALL_LIBDIR " from it and in "
	    "%s); set RTPROF_PRELOAD=PATH; the program was not run\n",
	    RTPROF_PRELOAD_INSTALLED);
	return -1;
}

/* The run's dump folder: OUT with its .json.gz / .json suffix replaced
 * by .rtprof.d. */
static void
dump_dir_path(const char *out, char *buf, size_t n)
{
	size_t len = strlen(out);

	if (len > 8 && strcmp(out + len - 8, ".json.gz") == 0)
		len -= 8;
	else if (len > 5 && strcmp(out + len - 5, ".json") == 0)
		len -= 5;
	snprintf(buf, n, "%.*s.rtprof.d", (int)len, out);
}

/*
 * The dump folder, made or emptied of a previous run's dumps (the files
 * ending in .rtprof directly in it: a run's dumps must not mix with an
 * older run's; nothing else in it is touched). Return: 0, -1 (said).
 */
static int
dump_dir_make(const char *dir)
{
	struct dirent *e;
	DIR *d;
	int dfd;

	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, PROG ": %s: %s; the program was not run\n", dir,
		    strerror(errno));
		return -1;
	}
	if ((d = opendir(dir)) == NULL) {
		fprintf(stderr, PROG ": %s: %s; the program was not run\n", dir,
		    strerror(errno));
		return -1;
	}
	dfd = dirfd(d);
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		struct stat st;

		if (len > 7 && strcmp(e->d_name + len - 7, ".rtprof") == 0 &&
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			unlinkat(dfd, e->d_name, 0);
	}
	closedir(d);
	return 0;
}

static int
open_out(void *ctx)
{
	return ((struct tool_out *)ctx)->fd < 0;
}

/* A byte count: a non-negative integer (decimal, 0x hex). */
static bool
parse_bytes(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno == 0 && end != s && *end == '\0' && s[0] != '-';
}

static int
opt_interval(const char *v)
{
	char *end;
	double ms = strtod(v, &end);

	if (end == v || *end != '\0' || !(ms >= 0.1 && ms <= 1000)) {
		fprintf(stderr, PROG ": --interval: not a number of "
		    "milliseconds from 0.1 to 1000: %s\n", v);
		return -1;
	}
	return 0;
}

/* Each process may take this much: at most half of this machine's. */
static int
opt_memory(const char *v)
{
	uint64_t ram = (uint64_t)sysconf(_SC_PHYS_PAGES) *
	    (uint64_t)sysconf(_SC_PAGESIZE) >> 20;
	unsigned long long mib;
	char *end;

	errno = 0;
	mib = strtoull(v, &end, 10);
	if (*v < '0' || *v > '9' || *end != '\0' || errno != 0 || mib < 1 ||
	    mib > ram / 2) {
		fprintf(stderr, PROG ": --memory: not a number of MiB from 1 "
		    "to %llu (half of this machine's memory): %s\n",
		    (unsigned long long)(ram / 2), v);
		return -1;
	}
	return 0;
}

static int
opt_block(const char *v)
{
	char *end;
	double us = strtod(v, &end);

	if (strcmp(v, "off") != 0 && (end == v || *end != '\0' ||
	    !(us >= 0 && us < 1e12))) {
		fprintf(stderr, PROG ": --block-threshold: not a number of "
		    "microseconds or \"off\": %s\n", v);
		return -1;
	}
	return 0;
}

static int
opt_max_procs(const char *v, long *out)
{
	char *end;

	*out = strtol(v, &end, 10);
	if (*v == '\0' || *end != '\0' || *out < 1 ||
	    *out > RECORD_MAX_PROCS) {
		fprintf(stderr, PROG ": --max-processes: not a number from 1 "
		    "to %d: %s\n", RECORD_MAX_PROCS, v);
		return -1;
	}
	return 0;
}

/* One option with its value at argv[*i + 1]. Return: 0, -1 bad (said),
 * 1 not an option with a value. */
static int
parse_valued(struct ropts *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *v;

	if (*i + 1 >= argc)
		return 1;
	v = argv[*i + 1];
	if (strcmp(a, "-o") == 0)
		o->out = v;
	else if (strcmp(a, "--interval") == 0 && opt_interval(v) == 0)
		o->interval = v;
	else if (strcmp(a, "--memory") == 0 && opt_memory(v) == 0)
		o->memory = v;
	else if (strcmp(a, "--max-bytes") == 0 && parse_bytes(v,
	    &o->max_bytes))
		o->maxb = v;
	else if (strcmp(a, "--max-total-bytes") == 0 && parse_bytes(v,
	    &o->max_total) && o->max_total != 0)
		;
	else if (strcmp(a, "--max-processes") == 0 &&
	    opt_max_procs(v, &o->max_procs) == 0)
		;
	else if (strcmp(a, "--block-threshold") == 0 && opt_block(v) == 0)
		o->block = v;
	else if (strcmp(a, "--max-bytes") == 0)
		return fprintf(stderr, PROG ": --max-bytes: not a byte count: "
		    "%s\n", v), -1;
	else if (strcmp(a, "--max-total-bytes") == 0)
		return fprintf(stderr, PROG ": --max-total-bytes: not a byte "
		    "count above 0: %s\n", v), -1;
	else if (strcmp(a, "--interval") == 0 || strcmp(a, "--memory") == 0 ||
	    strcmp(a, "--max-processes") == 0 ||
	    strcmp(a, "--block-threshold") == 0)
		return -1;
	else
		return 1;
	(*i)++;
	return 0;
}

/* Return: -1 go on, else the exit status. */
static int
parse_opts(struct ropts *o, int argc, char **argv)
{
	int i, rc;

	memset(o, 0, sizeof(*o));
	o->max_procs = RECORD_MAX_PROCS;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			record_usage(stdout);
			return 0;
		}
		if ((rc = parse_valued(o, argc, argv, &i)) < 0)
			return 2;
		if (rc == 0)
			continue;
		if (argv[i][0] == '-') {
			fprintf(stderr, PROG ": unknown option %s\n", argv[i]);
			record_usage(stderr);
			return 2;
		}
		break;          /* CMD without "--" */
	}
	if (i >= argc) {
		record_usage(stderr);
		return 2;
	}
	o->cmd = argv + i;
	if (o->out == NULL) {
		const char *base = strrchr(o->cmd[0], '/');

		snprintf(o->def_out, sizeof(o->def_out), "%s.json.gz",
		    base != NULL ? base + 1 : o->cmd[0]);
		o->out = o->def_out;
	}
	return -1;
}

/*
 * The TSC's rate, measured once here for every process of the run
 * (RTPROF_TICK_RATE: core/clock.c takes it instead of sleeping 20 ms in
 * each). x86 only: elsewhere the library's clock needs no calibration.
 * Return: ticks per second, 0 when not measured.
 */
static double
tick_rate(void)
{
#if defined(__x86_64__) || defined(__i386__)
	struct timespec a, b, nap = { 0, 20000000 };
	uint64_t t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &a);
	t0 = __builtin_ia32_rdtsc();
	nanosleep(&nap, NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	t1 = __builtin_ia32_rdtsc();
	return (double)(t1 - t0) * 1e9 / ((double)(b.tv_sec - a.tv_sec) *
	    1e9 + (double)(b.tv_nsec - a.tv_nsec));
#else
	return 0;
#endif
}

/* LD_PRELOAD for the child: the preload library before the user's own
 * preloads; in an AddressSanitizer build (RTPROF_PRELOAD_RUNTIME, see
 * CMakeLists.txt) ASan's shared runtime before both, as ASan requires of
 * the sanitized library in a program built without it. Context: the
 * forked child. */
static void
preload_env(const char *pre, const char *old)
{
#ifdef RTPROF_PRELOAD_RUNTIME
	const char *first = RTPROF_PRELOAD_RUNTIME ":";
#else
	const char *first = "";
#endif
	char *ld;

	if (old == NULL)
		old = "";
	ld = malloc(strlen(first) + strlen(pre) + strlen(old) + 2);
	if (ld == NULL) {
		setenv("LD_PRELOAD", pre, 1);
		return;
	}
	sprintf(ld, "%s%s%s%s", first, pre, old[0] != '\0' ? ":" : "", old);
	setenv("LD_PRELOAD", ld, 1);
}

/* The child's environment. Context: the forked child. */
static void
child_env(const struct ropts *o, const struct run *u, double rate)
{
	const char *old = getenv("LD_PRELOAD");
	char env[64];
	struct stat pst;

	snprintf(env, sizeof(env), "%d", u->pfd[1]);
	setenv("RTPROF_FD", env, 1);
	/* Its identity: a program started by a shell that kept the
	 * variable must not take another file of that number. */
	if (fstat(u->pfd[1], &pst) == 0) {
		snprintf(env, sizeof(env), "%llu:%llu",
		    (unsigned long long)pst.st_dev,
		    (unsigned long long)pst.st_ino);
		setenv("RTPROF_FD_ID", env, 1);
	}
	setenv("RTPROF_SOCK", u->spath, 1);
	if (rate > 0) {
		snprintf(env, sizeof(env), "%.1f", rate);
		setenv("RTPROF_TICK_RATE", env, 1);
	}
	if (o->interval != NULL) {
		snprintf(env, sizeof(env), "%.0f",
		    strtod(o->interval, NULL) * 1000.0);
		setenv("RTPROF_SAMPLE_US", env, 1);
	}
	if (o->memory != NULL) {
		snprintf(env, sizeof(env), "%llu",
		    strtoull(o->memory, NULL, 10) << 20);
		setenv("RTPROF_MEMORY", env, 1);
	}
	if (o->maxb != NULL)
		setenv("RTPROF_MAX_BYTES", o->maxb, 1);
	if (o->block != NULL)
		setenv("RTPROF_BLOCK_THRESHOLD_US", o->block, 1);
	preload_env(u->pre, old);
}

/* The socket on which the processes CMD starts ask for a dump.
 * Return: 0, -1 (said). */
static int
listen_sock(struct run *u)
{
	struct sockaddr_un sa;

	snprintf(u->sdir, sizeof(u->sdir), "/tmp/rtprof-record-XXXXXX");
	if (mkdtemp(u->sdir) == NULL) {
		fprintf(stderr, PROG ": %s: %s\n", u->sdir, strerror(errno));
		return -1;
	}
	snprintf(u->spath, sizeof(u->spath), "%s/sock", u->sdir);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, u->spath, strlen(u->spath) + 1); /* < 64 */
	u->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0);
	if (u->lfd < 0 || bind(u->lfd, (struct sockaddr *)&sa,
	    sizeof(sa)) != 0 || listen(u->lfd, 64) != 0) {
		fprintf(stderr, PROG ": %s: %s\n", u->spath, strerror(errno));
		if (u->lfd >= 0)
			close(u->lfd);
		u->lfd = -1;
		rmdir(u->sdir);
		return -1;
	}
	return 0;
}

static void
run_close(struct run *u)
{
	if (u->lfd >= 0) {
		close(u->lfd);
		unlink(u->spath);
		rmdir(u->sdir);
		u->lfd = -1;
	}
}

/*
 * Fork and exec CMD. An exec that fails is reported through a
 * close-on-exec pipe (its errno), so that rtprof says so and exits 2
 * before any dump exists. Return: 0, -1 (said).
 */
static int
spawn(const struct ropts *o, struct run *u)
{
	struct sigaction sa;
	double rate = tick_rate();
	int ep[2], err = 0;
	ssize_t k;

	if (pipe2(ep, O_CLOEXEC) != 0) {
		fprintf(stderr, PROG ": pipe: %s\n", strerror(errno));
		return -1;
	}
	rtprof_record_say_sampling(PROG);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	u->pid = fork();
	if (u->pid < 0) {
		fprintf(stderr, PROG ": fork: %s\n", strerror(errno));
		close(ep[0]);
		close(ep[1]);
		return -1;
	}
	if (u->pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		/* Not close-on-exec: the program inherits it (the library
		 * moves it out of the program's way). */
		fcntl(u->pfd[1], F_SETFD, 0);
		child_env(o, u, rate);
		execvp(o->cmd[0], o->cmd);
		err = errno;
		k = write(ep[1], &err, sizeof(err));
		(void)k;
		_exit(127);
	}
	child_pid = u->pid;
	close(ep[1]);
	while ((k = read(ep[0], &err, sizeof(err))) < 0 && errno == EINTR)
		;
	close(ep[0]);
	if (k == (ssize_t)sizeof(err)) {
		fprintf(stderr, PROG ": %s: cannot run it: %s; nothing was "
		    "recorded\n", o->cmd[0], strerror(err));
		waitpid(u->pid, NULL, 0);
		child_pid = 0;
		return -1;
	}
	return 0;
}

/* Open the dump, the pipe, the socket, find the library, start CMD.
 * Return: 0, or the exit status (said). */
static int
launch(const struct ropts *o, struct rec *r, struct run *u)
{
	u->lfd = u->fd = u->pfd[0] = u->pfd[1] = -1;
	dump_dir_path(o->out, u->dir, sizeof(u->dir));
	snprintf(u->dump, sizeof(u->dump), "%.4000s/main.rtprof", u->dir);
	r->dir = u->dir;
	r->dump = u->dump;
	if (preload_path(u->pre, sizeof(u->pre)) != 0)
		return 2;
	if (dump_dir_make(u->dir) != 0)
		return 2;
	if (listen_sock(u) != 0)
		return 2;
	/* Orphans of the tree become the launcher's children: gather()
	 * knows when no process is left (and reaps them at the end). */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	/* CMD's dump comes through a pipe too: the launcher counts bytes. */
	if (pipe2(u->pfd, O_CLOEXEC) != 0) {
		fprintf(stderr, PROG ": pipe: %s\n", strerror(errno));
		run_close(u);
		return 2;
	}
	if (spawn(o, u) != 0) {
		close(u->pfd[0]);
		close(u->pfd[1]);
		run_close(u);
		rmdir(u->dir);          /* when empty: nothing ran */
		return 2;
	}
	close(u->pfd[1]);
	u->fd = open(u->dump, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (u->fd < 0) {
		fprintf(stderr, PROG ": %s: %s (the program runs "
		    "unrecorded)\n", u->dump, strerror(errno));
		u->fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	}
	if (rec_proc_add(r, u->dump, u->pfd[0], u->fd, u->pid) == NULL) {
		fprintf(stderr, PROG ": out of memory\n");
		close(u->pfd[0]);
		close(u->fd);
	}
	return 0;
}

/* Copy the pipes until CMD exits (a pidfd wakes the launcher at once;
 * without one, within a round). Return: 0, -1 (said). */
static int
wait_cmd(struct rec *r, struct run *u)
{
#ifdef SYS_pidfd_open
	r->cmd_pidfd = (int)syscall(SYS_pidfd_open, u->pid, 0);
#endif
	for (;;) {
		pid_t w;

		rec_run_once(u->lfd, r, PUMP_MS);
		w = waitpid(u->pid, &r->cmd_status, WNOHANG);
		if (w == u->pid)
			break;
		if (w < 0 && errno != EINTR) {
			fprintf(stderr, PROG ": waitpid: %s\n", strerror(errno));
			return -1;
		}
	}
	r->cmd_done = true;
	child_pid = 0;
	if (r->cmd_pidfd >= 0) {
		close(r->cmd_pidfd);    /* readable from now on: not polled */
		r->cmd_pidfd = -1;
	}
	return 0;
}

/*
 * Is every process of the tree gone? The launcher is a child subreaper
 * (launch()): a process whose parent exited becomes its child, so no
 * child left means no process that could still ask for a dump. Reaps
 * those that exited: called only when every pipe is closed, so ended()
 * has read their exit status already.
 */
static bool
tree_gone(void)
{
	pid_t w;

	while ((w = waitpid(-1, NULL, WNOHANG)) > 0)
		;
	return w < 0 && errno == ECHILD;
}

/*
 * Gathering: the processes CMD started may still be writing. Copy while
 * any dump grows; done when every pipe is closed and no process of the
 * tree is left (when one is, after one quiet round: one that exec'ed or
 * was just started asks a moment later, one not recorded may live on);
 * given up after QUIET_ROUNDS without a byte.
 */
static void
gather(struct rec *r, struct run *u)
{
	for (int quiet = 0; quiet < QUIET_ROUNDS;) {
		uint64_t before = r->progress;
		int64_t end = tool_now_ms() + ROUND_MS;

		do {
			if (rec_open_pipes(r) == 0 && (quiet > 0 ||
			    tree_gone()))
				goto gathered;
			rec_run_once(u->lfd, r, PUMP_MS);
		} while (tool_now_ms() < end);
		quiet = r->progress != before ? 0 : quiet + 1;
	}
gathered:
	rec_give_up(r);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	run_close(u);
}

/* The dumps that hold data; the others are noted and removed.
 * Return: their count (paths into @dumps). */
static int
dumps_kept(struct rec *r, char **dumps)
{
	int n = 0;

	for (int k = 0; k < r->n; k++) {
		if (r->p[k].bytes != 0) {
			dumps[n++] = r->p[k].path;
			continue;
		}
		rec_note(r, "dump left out: no data", &r->p[k], 0, NULL,
		    r->p[k].cut ? "cut by the total byte cap before its "
		    "first frame" : "the process wrote nothing", 0);
		unlink(r->p[k].path);
	}
	if (r->max_total != 0) {
		char why[96];

		snprintf(why, sizeof(why), "%" PRIu64 " bytes written in "
		    "%d dump(s)", r->committed, n);
		rec_note(r, r->cap_reached ? "total byte cap: reached" :
		    "total byte cap: not reached", NULL, 0, NULL, why,
		    (int64_t)r->max_total);
	}
	return n;
}

/* Write the profile @out from @dumps. Return: 0, 2 (said). */
static int
convert_to(struct rec *r, const char *out, char **dumps, int ndumps)
{
	struct tool_convert_opts opts;
	struct tool_out o = { -1, NULL, NULL };
	struct tool_convert_sink sink = { open_out, tool_out_write, &o };
	bool opened = false;
	int rc, werr = 0;

	if (tool_convert_opts_init(&opts, PROG, 0) != 0)
		return 2;
	opts.notes = r->notes;
	opts.nnotes = r->nnotes;
	o.fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (o.fd < 0) {
		fprintf(stderr, PROG ": %s: %s\n", out, strerror(errno));
		tool_convert_opts_free(&opts);
		return 2;
	}
	if (strlen(out) > 3 && strcmp(out + strlen(out) - 3, ".gz") == 0 &&
	    gzout_open(&o.zo, o.fd) != 0) {
		fprintf(stderr, PROG ": %s: cannot compress\n", out);
		close(o.fd);
		tool_convert_opts_free(&opts);
		return 2;
	}
	rc = tool_convert(PROG, dumps, ndumps, &opts, false, isatty(2) != 0,
	    &sink, &opened, &werr);
	if (o.zo != NULL) {
		int zr = gzout_close(o.zo);

		if (zr != 0 && rc == 0)
			rc = 2;
		if (zr != 0 && werr == 0)
			werr = zr;
	}
	if (close(o.fd) != 0 && rc == 0)
		rc = 2;
	tool_convert_opts_free(&opts);
	if (rc == 2) {
		if (werr != 0)
			fprintf(stderr, PROG ": %s: %s\n", out, strerror(-werr));
		unlink(out);
	}
	return rc == 2 ? 2 : 0;
}

/* Convert every dump with data into @o->out. Return: the exit status. */
static int
convert_all(struct rec *r, const struct ropts *o, int code)
{
	char how[96], **dumps;
	int ndumps;

	rec_status_text(r->cmd_status, how, sizeof(how));
	dumps = calloc((size_t)r->n + 1, sizeof(*dumps));
	if (dumps == NULL)
		return 2;
	ndumps = dumps_kept(r, dumps);
	if (ndumps == 0) {
		fprintf(stderr, PROG ": %s %s; no data was recorded: no "
		    "profile\n", o->cmd[0], how);
		free(dumps);
		return code != 0 ? code : 2;
	}
	if (convert_to(r, o->out, dumps, ndumps) != 0) {
		fprintf(stderr, PROG ": %s %s; no profile; the dumps are in "
		    "%s\n", o->cmd[0], how, r->dir);
		free(dumps);
		return code != 0 ? code : 2;
	}
	fprintf(stderr, PROG ": %s %s; wrote %s (%d process%s; dumps in %s/); "
	    "open it with `rtprof view %s` or at "
	    "https://profiler.firefox.com\n", o->cmd[0], how, o->out, ndumps,
	    ndumps > 1 ? "es" : "", r->dir, o->out);
	free(dumps);
	return code;
}

/* Context: main thread. Return: the exit status. */
int
cmd_record(int argc, char **argv)
{
	struct ropts o;
	struct run u;
	struct rec *r;
	int rc, code;

	if ((rc = parse_opts(&o, argc, argv)) >= 0)
		return rc;
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		fprintf(stderr, PROG ": out of memory\n");
		return 2;
	}
	r->cmd_pidfd = -1;
	r->max_total = o.max_total;
	r->max_bytes = o.max_bytes;
	r->max_procs = (int)o.max_procs;
	if ((rc = launch(&o, r, &u)) != 0) {
		rec_free(r);
		return rc;
	}
	{
		const char *base = strrchr(o.cmd[0], '/');

		if (r->p[0].comm[0] == '\0' || r->p[0].comm[0] == ' ')
			snprintf(r->p[0].comm, sizeof(r->p[0].comm), "%s",
			    base != NULL ? base + 1 : o.cmd[0]);
	}
	if (wait_cmd(r, &u) != 0) {
		run_close(&u);
		rec_free(r);
		return 2;
	}
	gather(r, &u);
	code = WIFEXITED(r->cmd_status) ? WEXITSTATUS(r->cmd_status) :
	    WIFSIGNALED(r->cmd_status) ? 128 + WTERMSIG(r->cmd_status) : 2;
	code = convert_all(r, &o, code);
	rec_free(r);
	return code;
}
