/*
 * record.c - `rtprof record`: profile an unmodified program.
 *
 *   rtprof record [-o OUT] [--interval MS] [--memory MIB] [--max-bytes N]
 *                 [--max-total-bytes N] [--block-threshold US]
 *                 -- CMD [ARGS...]
 *
 * Starts CMD with librtprof-preload.so in LD_PRELOAD and a dump descriptor
 * in RTPROF_FD (core/preload.c: the main thread and every pthread_create
 * thread are registered and sampled; blocking calls are timed, those of at
 * least --block-threshold carry their stack), waits for it while
 * forwarding SIGINT/SIGTERM/SIGHUP to it, then converts the dumps into OUT
 * (default CMD.json.gz) and keeps them in one folder next to it (OUT with
 * .rtprof.d instead of .json.gz: CMD's dump main.rtprof, the others
 * PID.rtprof; a previous run's dumps in it are removed first). The exit
 * status is the program's (128 + N when it died of signal N).
 *
 * Every program CMD starts (exec, posix_spawn, system) is followed too:
 * RTPROF_SOCK names a Unix socket on which each new process asks for its
 * own dump (at most RECORD_MAX_PROCS processes: more are run unrecorded,
 * and said so). The launcher takes the asker's pid and uid from the
 * kernel (SO_PEERCRED; another user's process is refused) and never
 * waits for one: a request not there yet is polled with the pipes. A child made by fork() without exec asks too, once it
 * used 2 ms of CPU or lived 50 ms (core/state.c, follow_start: a child
 * that execs or exits before, a shell running a command, is not a process
 * of its own in the profile; the program it execs is).
 *
 * The processes never open a path: each gets the write end of a pipe
 * (inherited by CMD, passed with SCM_RIGHTS to the others), and the
 * launcher copies what comes out of each pipe into that process's dump
 * file in the run's folder (OUT.rtprof.d/PID.rtprof, PID-K.rtprof for its
 * K-th image; CMD's is main.rtprof). So it keeps
 * the account of every byte: with --max-total-bytes, once the dumps
 * together would pass the cap, each dump is cut at its next frame
 * boundary (a dump stays whole frames: it converts, it only ends early)
 * and what follows is read and dropped (the program never blocks on it,
 * and never learns: nothing is fatal to it), and later processes are run
 * unrecorded; the disk gets at most the cap. --max-bytes is the per-
 * process cap: each process keeps it itself (RTPROF_MAX_BYTES: it ends
 * its dump with a clean trailer saying the limit was reached), and the
 * launcher enforces it too, the same way as the total cap: a process that
 * ignores it (its environment lost the variable, a program linked with
 * its own settings) has its dump cut at the last frame that fits, and
 * the gathering log says so. The bytes reach the disk only through the
 * launcher, so the cap holds whatever the process does.
 *
 * A process that dies without finishing its dump (SIGKILL, a crash) leaves
 * it without a trailer, maybe in the middle of a frame: at the end of its
 * pipe, the partial frame is cut off the file (the dump ends at its last
 * complete frame, and converts up to there), and the gathering log names
 * the dump as truncated.
 *
 * When CMD has exited, the launcher keeps copying while another process's
 * dump still grows (progress-based patience): it is done when every pipe
 * is closed (every process exited, or exec'd and asked again), and gives
 * up after two rounds of ROUND_MS without a byte from anyone (a frozen or
 * stopped process, or one that simply lives on). Every dump it gave up on
 * is named in the profile's profileGatheringLog ("gathering"): pid,
 * program, why (its /proc state: stopped, or no progress) and when; so is
 * every process cut by the total cap or not recorded. Then everything is
 * converted into one multi-process profile.
 *
 * Context: the tool's main thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include <time.h>
#include <unistd.h>

#include "convert.h"
#include "record.h"
#include "wire.h"

#include "record_int.h"

static int64_t
wall_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A note for the profile's gathering log (strings copied). */
void
rec_note(struct rec *r, const char *what, const struct proc *p, pid_t pid,
    const char *program, const char *reason, int64_t bytes)
{
	struct rtprof_gecko_note *n;

	if (r->nnotes == MAX_NOTES)
		return;
	n = &r->notes[r->nnotes++];
	memset(n, 0, sizeof(*n));
	n->what = strdup(what);
	n->dump = p != NULL ? strdup(p->path) : NULL;
	n->pid = p != NULL ? p->pid : pid;
	program = p != NULL ? p->comm : program;
	n->program = program != NULL && program[0] != '\0' ?
	    strdup(program) : NULL;
	n->reason = reason != NULL ? strdup(reason) : NULL;
	n->wall_ns = wall_ns();
	n->bytes = bytes;
	if (n->what == NULL)
		r->nnotes--;
}

/* /proc/PID/comm; "" when gone. */
static void
proc_comm(pid_t pid, char *buf, size_t n)
{
	char path[64];
	ssize_t k;
	int fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	k = read(fd, buf, n - 1);
	close(fd);
	if (k <= 0) {
		buf[0] = '\0';
		return;
	}
	buf[k] = '\0';
	if (buf[k - 1] == '\n')
		buf[k - 1] = '\0';
}

void
rec_proc_name(pid_t pid, char *buf, size_t n)
{
	char path[64], raw[512];
	ssize_t k;
	size_t o = 0;
	int fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	k = read(fd, raw, sizeof(raw) - 1);
	close(fd);
	if (k <= 0)
		return;
	raw[k] = '\0';
	/* argv[0]'s base name, then the arguments, spaces between. */
	for (ssize_t i = 0; i < k && o + 1 < n; i++) {
		if (i == 0) {
			const char *b = strrchr(raw, '/');

			if (b != NULL && (ssize_t)(b - raw) < k) {
				i = b + 1 - raw;
				if (i >= k)
					break;
			}
		}
		buf[o++] = raw[i] == '\0' ? ' ' : raw[i];
	}
	while (o > 0 && buf[o - 1] == ' ')
		o--;
	buf[o] = '\0';
	if (o + 1 == n && n > 4)
		memcpy(buf + n - 4, "...", 4);
}

/* /proc/PID/stat into @buf. Return: the ") " before field 3 (the last
 * ')': comm may hold anything), NULL gone. */
static char *
stat_fields(pid_t pid, char *buf, size_t n)
{
	char path[64], *p;
	ssize_t k;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	k = read(fd, buf, n - 1);
	close(fd);
	if (k <= 0)
		return NULL;
	buf[k] = '\0';
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ')
		return NULL;
	return p;
}

/* /proc/PID/stat: its state letter and start time. Return: 0, -1 gone. */
static int
proc_stat(pid_t pid, char *state, unsigned long long *start)
{
	char buf[2048], *p;

	/* "pid (comm) S ppid ...": comm may hold anything; the last ')'. */
	if ((p = stat_fields(pid, buf, sizeof(buf))) == NULL)
		return -1;
	*state = p[2];
	p += 3;                 /* the space before field 4, ppid */
	/* Field 22, starttime: 18 fields after ppid. */
	for (int i = 0; i < 19 && p != NULL; i++)
		if ((p = strchr(p, ' ')) != NULL)
			p++;
	*start = p != NULL ? strtoull(p, NULL, 10) : 0;
	return 0;
}

/* DIR/PID.rtprof, or DIR/PID-K.rtprof for the K-th image */
static void
proc_path(const char *dir, int pid, int k, char *buf, size_t n)
{
	if (k == 1)
		snprintf(buf, n, "%s/%d.rtprof", dir, pid);
	else
		snprintf(buf, n, "%s/%d-%d.rtprof", dir, pid, k);
}

/* A new process: pipe @in to the file @out. */
struct proc *
rec_proc_add(struct rec *r, const char *path, int in, int out, pid_t pid)
{
	struct proc *p = &r->p[r->n];
	char st;

	memset(p, 0, sizeof(*p));
	if ((p->path = strdup(path)) == NULL)
		return NULL;
	p->in = in;
	p->out = out;
	p->pid = pid;
	p->last_data_ns = wall_ns();
	rec_proc_name(pid, p->comm, sizeof(p->comm));
	if (p->comm[0] == '\0')
		proc_comm(pid, p->comm, sizeof(p->comm));
	if (proc_stat(pid, &st, &p->start) != 0)
		p->start = 0;
	fcntl(in, F_SETFL, O_NONBLOCK);
	/* What a process writes between two rounds; the first pipes get
	 * more (the user's pipe pages are the program's too: past a limit,
	 * new pipes get one page). */
	fcntl(in, F_SETPIPE_SZ, r->n < 16 ? PIPE_BYTES : PIPE_BYTES / 4);
	r->n++;
	r->progress++;
	return p;
}

/* Write all of @b to @p's file; a failure cuts the dump. */
static void
put(struct rec *r, struct proc *p, const unsigned char *b, size_t n)
{
	while (n != 0 && !p->cut) {
		ssize_t w = write(p->out, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			char why[160];

			snprintf(why, sizeof(why), "writing the dump failed: "
			    "%s; the rest of the process's data is dropped",
			    strerror(w < 0 ? errno : EIO));
			fprintf(stderr, PROG ": %s: %s\n", p->path, why);
			rec_note(r, "dump cut", p, 0, NULL, why,
			    (int64_t)p->bytes);
			p->cut = true;
			p->dropped += n;
			return;
		}
		p->bytes += (uint64_t)w;
		b += w;
		n -= (size_t)w;
	}
}

/* The total cap cuts @p here (the next frame would not fit). */
static void
cut(struct rec *r, struct proc *p, uint64_t need)
{
	char why[200];

	if (!r->cap_reached) {
		r->cap_reached = true;
		fprintf(stderr, PROG ": the dumps reached the total cap of "
		    "%" PRIu64 " bytes: they end there, later processes are "
		    "not recorded\n", r->max_total);
		snprintf(why, sizeof(why), "%" PRIu64 " bytes written: a "
		    "frame of %" PRIu64 " more would pass the cap",
		    r->committed, need);
		rec_note(r, "total byte cap reached", p, 0, NULL, why,
		    (int64_t)r->max_total);
	}
	snprintf(why, sizeof(why), "the total byte cap (%" PRIu64 ") was "
	    "reached: the dump ends after %" PRIu64 " bytes (whole frames); "
	    "what the process wrote after is dropped", r->max_total,
	    p->bytes);
	rec_note(r, "dump cut by the total byte cap", p, 0, NULL, why,
	    (int64_t)p->bytes);
	p->cut = true;
}

/* The per-process cap cuts @p here (the next frame would not fit). */
static void
cut_proc(struct rec *r, struct proc *p, uint64_t need)
{
	char why[240];

	snprintf(why, sizeof(why), "the per-process byte cap (--max-bytes "
	    "%" PRIu64 ") was reached: the process did not stop at it "
	    "itself; the dump ends after %" PRIu64 " bytes (whole frames, a "
	    "frame of %" PRIu64 " more would pass it); what the process "
	    "wrote after is dropped", r->max_bytes, p->bytes, need);
	fprintf(stderr, PROG ": %s: %s\n", p->path, why);
	rec_note(r, "dump cut by the per-process byte cap", p, 0, NULL, why,
	    (int64_t)r->max_bytes);
	p->cut = true;
}

/*
 * Bytes read from @p's pipe: into its file, frame by frame while the
 * total cap allows (a frame is admitted whole, its bytes promised, before
 * the first is written), dropped once cut.
 */
static void
feed(struct rec *r, struct proc *p, const unsigned char *b, size_t n)
{
	while (n != 0) {
		size_t k;

		if (p->cut) {
			p->dropped += n;
			return;
		}
		if (p->raw) {
			/* Not a frame stream: cut at the byte (the lower of
			 * the two caps). */
			size_t kp = n, kt = n;

			if (r->max_bytes != 0 && p->bytes + n > r->max_bytes)
				kp = (size_t)(r->max_bytes - p->bytes);
			if (r->max_total != 0 && r->committed + n >
			    r->max_total)
				kt = (size_t)(r->max_total - r->committed);
			k = kp < kt ? kp : kt;
			r->committed += k;
			put(r, p, b, k);
			if (k < n) {
				if (kt <= kp)
					cut(r, p, n - k);
				else
					cut_proc(r, p, n - k);
				p->dropped += n - k;
			}
			return;
		}
		if (p->left != 0) {
			k = n < p->left ? n : (size_t)p->left;
			put(r, p, b, k);
			p->left -= k;
			b += k;
			n -= k;
			continue;
		}
		/* A frame header, maybe in pieces. */
		k = sizeof(p->hdr) - p->hlen;
		if (k > n)
			k = n;
		memcpy(p->hdr + p->hlen, b, k);
		p->hlen += k;
		b += k;
		n -= k;
		if (p->hlen < sizeof(p->hdr))
			return;
		p->hlen = 0;
		{
			const unsigned char *h = p->hdr;
			uint64_t len = (uint64_t)h[16] | (uint64_t)h[17] << 8 |
			    (uint64_t)h[18] << 16 | (uint64_t)h[19] << 24;
			uint64_t size = RTPROF_FRAME_OVERHEAD + len;

			if (h[0] != RTPROF_FRAME_SYNC0 ||
			    h[1] != RTPROF_FRAME_SYNC1 ||
			    h[2] != RTPROF_FRAME_SYNC2 ||
			    h[3] != RTPROF_FRAME_SYNC3 ||
			    len > RTPROF_FRAME_MAX_PAYLOAD) {
				/* Not frames after all: bytes from here. */
				p->raw = true;
				feed(r, p, h, sizeof(p->hdr));
				continue;
			}
			if (r->cap_reached || (r->max_total != 0 &&
			    r->committed + size > r->max_total)) {
				cut(r, p, size);
				p->dropped += sizeof(p->hdr);
				continue;
			}
			if (r->max_bytes != 0 &&
			    p->bytes + size > r->max_bytes) {
				cut_proc(r, p, size);
				p->dropped += sizeof(p->hdr);
				continue;
			}
			if (h[4] == RTPROF_FRAME_HEADER)
				p->trailer = false;     /* a new session */
			else if (h[4] == RTPROF_FRAME_TRAILER)
				p->trailer = true;
			r->committed += size;
			p->frame_at = p->bytes;
			put(r, p, h, sizeof(p->hdr));
			p->left = size - sizeof(p->hdr);
		}
	}
}

void
rec_status_text(int status, char *buf, size_t n)
{
	if (WIFEXITED(status)) {
		snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		const char *abbr = sigabbrev_np(WTERMSIG(status));

		snprintf(buf, n, "killed by SIG%s (signal %d)%s",
		    abbr != NULL ? abbr : "?", WTERMSIG(status),
		    WCOREDUMP(status) ? ", core dumped" : "");
	} else {
		snprintf(buf, n, "ended (wait status 0x%x)", status);
	}
}

/* /proc/PID/stat field 52, exit_code: readable while the process is a
 * zombie. Return: 0 and the wait status, -1 not a zombie (yet) or gone. */
static int
zombie_status(pid_t pid, unsigned long long start, int *status)
{
	char buf[2048], *q;
	unsigned long long st0 = 0;

	if ((q = stat_fields(pid, buf, sizeof(buf))) == NULL || q[2] != 'Z')
		return -1;
	/* Fields 3.. after ") ": field 22 starttime, field 52 exit_code. */
	q += 2;
	for (int f = 3; f < 52 && q != NULL; f++) {
		if (f == 22)
			st0 = strtoull(q, NULL, 10);
		if ((q = strchr(q, ' ')) != NULL)
			q++;
	}
	if (q == NULL || (start != 0 && st0 != start))
		return -1;
	*status = atoi(q);
	return 0;
}

/*
 * What ended @p, as exactly as the launcher can know it: CMD's wait
 * status; another process's exit code while it is a zombie (its pipe
 * ends a moment before: looked for up to 20 ms); else unknown (its
 * parent reaped it first).
 */
static void
end_text(struct rec *r, const struct proc *p, char *buf, size_t n)
{
	int status;

	if (p == &r->p[0] && r->cmd_done) {
		rec_status_text(r->cmd_status, buf, n);
		return;
	}
	for (int i = 0; i < 40; i++) {
		struct timespec ms = { 0, 500000 };

		if (zombie_status(p->pid, p->start, &status) == 0) {
			rec_status_text(status, buf, n);
			return;
		}
		nanosleep(&ms, NULL);
	}
	snprintf(buf, n, "its exit status is unknown (reaped by its parent "
	    "first, or still running with its dump descriptor closed: a "
	    "lost sink)");
}

/*
 * @p's pipe ended. A process that died without finishing its dump (killed,
 * crashed) may have stopped in the middle of a frame: the partial frame is
 * cut off the file (the dump ends at its last complete frame) and its
 * promised bytes are given back to the total cap; a dump without its
 * trailer is named in the gathering log either way.
 */
static void
ended(struct rec *r, struct proc *p)
{
	uint64_t part = 0;
	char why[400], how[160];

	if (p->raw || p->bytes == 0 || p->cut)
		return;         /* a cut dump ends at whole frames, said so */
	if (p->left != 0) {
		part = p->bytes - p->frame_at;
		if (p->out >= 0 && ftruncate(p->out, (off_t)p->frame_at) == 0) {
			r->committed -= part + p->left;
			p->bytes = p->frame_at;
		} else {
			part = 0;
		}
	}
	part += p->hlen;
	p->left = 0;
	p->hlen = 0;
	if (p->trailer && part == 0)
		return;
	end_text(r, p, how, sizeof(how));
	snprintf(why, sizeof(why), "the process ended without finishing its "
	    "dump: %s; %s; the dump ends at its last complete frame, after %"
	    PRIu64 " bytes (%" PRIu64 " bytes of a partial frame dropped)",
	    how, p->trailer ? "its last frame is incomplete" : "no trailer",
	    p->bytes, part);
	fprintf(stderr, PROG ": %s: %s\n", p->path, why);
	rec_note(r, "dump truncated", p, 0, NULL, why, (int64_t)p->bytes);
}

/* What is in @p's pipe now (bounded: the other pipes get their turn). */
static void
pump(struct rec *r, struct proc *p)
{
	static unsigned char buf[PUMP_CHUNK];
	size_t got = 0;

	while (p->in >= 0 && got < PUMP_MAX_PER_CALL) {
		ssize_t k = read(p->in, buf, sizeof(buf));

		if (k > 0) {
			feed(r, p, buf, (size_t)k);
			got += (size_t)k;
			r->progress += (uint64_t)k;
			p->last_data_ns = wall_ns();
			continue;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		/* End of data: every writer closed it (exit, exec, death). */
		close(p->in);
		p->in = -1;
		ended(r, p);
		if (p->out >= 0) {
			close(p->out);
			p->out = -1;
		}
	}
}

/* The request of @pid came on @c: the write end of a pipe out (or
 * nothing: it runs unrecorded). Closes @c. */
static void
answer(struct rec *r, int c, pid_t pid)
{
	char path[PATH_MAX], cbuf[CMSG_SPACE(sizeof(int))], one = 1;
	char comm[64];
	struct iovec iov = { &one, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd, pfd[2];

	if (r->cap_reached || r->n == r->max_procs) {
		/* No descriptor: it runs unrecorded. */
		bool cap = r->cap_reached;
		char why[64];

		proc_comm(pid, comm, sizeof(comm));
		snprintf(why, sizeof(why), cap ? "the total byte cap "
		    "was reached" : "more than %d processes "
		    "(--max-processes)", r->max_procs);
		if (cap ? r->refused_cap++ == 0 : r->refused++ == 0)
			fprintf(stderr, PROG ": %s: pid %d and later "
			    "processes are not recorded\n", why, pid);
		rec_note(r, "process not recorded", NULL, pid, comm, why, -1);
		close(c);
		return;
	}
	/* A process that exec()s asks again with the same pid: each image its
	 * own dump (PID.rtprof, PID-2.rtprof...). */
	proc_path(r->dir, pid, 1, path, sizeof(path));
	for (int k = 2; (fd = open(path, O_WRONLY | O_CREAT | O_EXCL |
	    O_CLOEXEC, 0644)) < 0 && errno == EEXIST && k < 100; k++)
		proc_path(r->dir, pid, k, path, sizeof(path));
	if (fd < 0 || pipe2(pfd, O_CLOEXEC) != 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
		close(c);
		return;
	}
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &pfd[1], sizeof(int));
	if (sendmsg(c, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) != 1 ||
	    rec_proc_add(r, path, pfd[0], fd, pid) == NULL) {
		close(pfd[0]);
		close(fd);
		unlink(path);
	}
	close(pfd[1]);
	close(c);
}

/*
 * Who is on @c: its pid from the kernel (SO_PEERCRED), not from what it
 * says; a process of another user is refused (the socket's folder is the
 * launcher's user's only, but a process may change its uid, setuid).
 * Return: its pid, 0 refused (said once).
 */
static pid_t
peer(struct rec *r, int c)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 ||
	    len != sizeof(cr) || cr.pid <= 0)
		return 0;
	if (cr.uid != getuid()) {
		char why[96], comm[64];

		proc_comm(cr.pid, comm, sizeof(comm));
		snprintf(why, sizeof(why), "it runs as uid %u, not the "
		    "launcher's %u", (unsigned)cr.uid, (unsigned)getuid());
		if (r->refused_uid++ == 0)
			fprintf(stderr, PROG ": pid %d asked for a dump and was "
			    "refused: %s\n", (int)cr.pid, why);
		rec_note(r, "process not recorded", NULL, cr.pid, comm, why,
		    -1);
		return 0;
	}
	return cr.pid;
}

/* Read @i's request if it came (what it says is not used: the pid is the
 * kernel's); answer it, drop it past PENDING_MS. Return: true when it is
 * done with (removed from the list). */
static bool
pend_try(struct rec *r, int i)
{
	char req[32];
	ssize_t n = read(r->pend[i].fd, req, sizeof(req));

	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		if (wall_ns() - r->pend[i].since_ns < (int64_t)PENDING_MS *
		    1000000)
			return false;
		close(r->pend[i].fd);           /* silent: dropped */
	} else if (n > 0) {
		answer(r, r->pend[i].fd, r->pend[i].pid);
	} else {
		close(r->pend[i].fd);           /* gone before asking */
	}
	r->pend[i] = r->pend[--r->npend];
	return true;
}

/* Every connection waiting on the socket, never blocking: each is checked
 * (peer()), then answered when its request is there, else kept pending
 * (MAX_PENDING: the oldest is dropped for a new one). */
static void
serve(int lfd, struct rec *r)
{
	int c;

	while ((c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC |
	    SOCK_NONBLOCK)) >= 0) {
		pid_t pid = peer(r, c);

		if (pid == 0) {
			close(c);
			continue;
		}
		if (r->npend == MAX_PENDING) {
			close(r->pend[0].fd);
			r->pend[0] = r->pend[--r->npend];
		}
		r->pend[r->npend].fd = c;
		r->pend[r->npend].pid = pid;
		r->pend[r->npend].since_ns = wall_ns();
		pend_try(r, r->npend++);
	}
}

/*
 * Wait up to @ms for a process asking for a dump, CMD's exit or a dump's
 * end, then copy what every pipe holds. The pipes are drained on this
 * cadence, not at each write: the launcher wakes 1000 / PUMP_MS times a
 * second, not at every flush of every process (it would take CPU time
 * from the profiled program on a small machine); a pipe holds PIPE_BYTES
 * meanwhile, and a writer that fills it waits for the next round (its
 * write timeout is seconds). A pipe is polled for its end only (no
 * events asked: POLLHUP when its last writer is gone), so that the
 * launcher never waits a round for a process that is done.
 */
void
rec_run_once(int lfd, struct rec *r, int ms)
{
	struct pollfd pf[2 + MAX_PENDING + RECORD_MAX_PROCS + 1];
	nfds_t n = 0;

	pf[n++] = (struct pollfd){ lfd, POLLIN, 0 };
	for (int i = 0; i < r->npend; i++)
		pf[n++] = (struct pollfd){ r->pend[i].fd, POLLIN, 0 };
	if (r->cmd_pidfd >= 0)
		pf[n++] = (struct pollfd){ r->cmd_pidfd, POLLIN, 0 };
	for (int i = 0; i < r->n; i++)
		if (r->p[i].in >= 0)
			pf[n++] = (struct pollfd){ r->p[i].in, 0, 0 };
	/* A pending client that stays silent is dropped on time. */
	if (r->npend > 0 && ms > PUMP_MS)
		ms = PUMP_MS;
	if (poll(pf, n, ms) > 0 && (pf[0].revents & POLLIN))
		serve(lfd, r);
	for (int i = r->npend - 1; i >= 0; i--)
		pend_try(r, i);
	for (int i = 0; i < r->n; i++)
		if (r->p[i].in >= 0)
			pump(r, &r->p[i]);
}

int
rec_open_pipes(const struct rec *r)
{
	int k = 0;

	for (int i = 0; i < r->n; i++)
		k += r->p[i].in >= 0;
	return k;
}

/*
 * Gathering gave up on the dumps still open: say which process, why and
 * when, on stderr and in the profile.
 */
void
rec_give_up(struct rec *r)
{
	int64_t now = wall_ns();

	for (int i = 0; i < r->n; i++) {
		struct proc *p = &r->p[i];
		unsigned long long start = 0;
		char st = '?', why[256], comm[64];
		const char *state;
		double idle_s;

		if (p->in < 0)
			continue;
		pump(r, p);             /* what it still had */
		if (p->in < 0)
			continue;
		idle_s = (double)(now - p->last_data_ns) / 1e9;
		if (proc_stat(p->pid, &st, &start) != 0 ||
		    (p->start != 0 && start != p->start)) {
			snprintf(why, sizeof(why), "no progress: the process "
			    "is gone but its dump descriptor is still open "
			    "(inherited by a process it started?); no data "
			    "for %.1f s", idle_s);
		} else {
			rec_proc_name(p->pid, comm, sizeof(comm));
			if (comm[0] != '\0')
				snprintf(p->comm, sizeof(p->comm), "%s", comm);
			switch (st) {
			case 'T':
				state = "stopped (SIGSTOP or another stop "
				    "signal; /proc state T)";
				break;
			case 't':
				state = "stopped by a debugger (/proc state t)";
				break;
			case 'D':
				state = "no progress: in an uninterruptible "
				    "wait (/proc state D)";
				break;
			case 'Z':
				state = "exited, not reaped yet (zombie), its "
				    "dump descriptor still open elsewhere";
				break;
			default:
				state = NULL;
			}
			if (state != NULL)
				snprintf(why, sizeof(why), "%s; no data for "
				    "%.1f s", state, idle_s);
			else
				snprintf(why, sizeof(why), "no progress: "
				    "still running (/proc state %c) but its "
				    "dump did not grow for %.1f s", st, idle_s);
		}
		fprintf(stderr, PROG ": gave up waiting for pid %d (%s): %s; "
		    "its dump %s ends here\n", (int)p->pid, p->comm[0] ?
		    p->comm : "?", why, p->path);
		rec_note(r, "gave up waiting for the process", p, 0, NULL, why,
		    (int64_t)p->bytes);
		close(p->in);
		p->in = -1;
		if (p->out >= 0) {
			close(p->out);
			p->out = -1;
		}
	}
}

static void
notes_free(struct rec *r)
{
	for (size_t i = 0; i < r->nnotes; i++) {
		free((char *)r->notes[i].what);
		free((char *)r->notes[i].dump);
		free((char *)r->notes[i].program);
		free((char *)r->notes[i].reason);
	}
	r->nnotes = 0;
}

void
rec_free(struct rec *r)
{
	if (r->cmd_pidfd >= 0)
		close(r->cmd_pidfd);
	for (int i = 0; i < r->npend; i++)
		close(r->pend[i].fd);
	for (int i = 0; i < r->n; i++) {
		if (r->p[i].in >= 0)
			close(r->p[i].in);
		if (r->p[i].out >= 0)
			close(r->p[i].out);
		free(r->p[i].path);
	}
	notes_free(r);
	free(r);
}

