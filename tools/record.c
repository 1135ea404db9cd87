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
 * (default CMD.json.gz) and keeps them next to it (OUT with .rtprof
 * instead of .json.gz). The exit status is the program's (128 + N when it
 * died of signal N).
 *
 * Every program CMD starts (exec, posix_spawn, system) is followed too:
 * RTPROF_SOCK names a Unix socket on which each new process asks for its
 * own dump (at most RECORD_MAX_PROCS processes: more are run unrecorded,
 * and said so). A child made by fork() without exec asks too, once it
 * used 2 ms of CPU or lived 50 ms (core/state.c, follow_start: a child
 * that execs or exits before, a shell running a command, is not a process
 * of its own in the profile; the program it execs is).
 *
 * The processes never open a path: each gets the write end of a pipe
 * (inherited by CMD, passed with SCM_RIGHTS to the others), and the
 * launcher copies what comes out of each pipe into that process's dump
 * file (OUT.PID.rtprof, OUT.PID-K.rtprof for its K-th image). So it keeps
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

#include "record_probe.h"
#include "convert.h"
#include "record.h"
#include "wire.h"

#define PROG "rtprof record"

#ifndef RTPROF_PRELOAD_INSTALLED
#define RTPROF_PRELOAD_INSTALLED "librtprof-preload.so"
#endif

#define RECORD_MAX_PROCS 64
#define ROUND_MS 500
#define QUIET_ROUNDS 2
#define PUMP_MS 50
#define PIPE_BYTES (1 << 20)
#define PUMP_CHUNK 65536
#define PUMP_MAX_PER_CALL (1u << 20)    /* then the other pipes */
#define MAX_NOTES 256

static volatile sig_atomic_t child_pid;

/* One recorded process image: its pipe and its dump file. */
struct proc {
	char *path;             /* the dump file */
	int in;                 /* read end of its pipe; -1 once closed */
	int out;                /* the dump file; -1 once closed */
	pid_t pid;
	char comm[64];          /* its name when it asked */
	unsigned long long start;       /* /proc starttime (pid reuse) */
	uint64_t bytes;         /* written to the file */
	uint64_t dropped;       /* read and dropped (cut) */
	int64_t last_data_ns;   /* CLOCK_REALTIME of its last byte */
	bool cut;               /* a cap (or a write error) cut it */
	bool trailer;           /* its last session's TRAILER came */
	uint64_t frame_at;      /* file offset of the frame being copied */
	/* Frame boundaries: the header of the next frame, or how many
	 * bytes of the current one are still to come. */
	unsigned char hdr[RTPROF_FRAME_HEADER_SIZE];
	size_t hlen;
	uint64_t left;
	bool raw;               /* not frames: cut at any byte */
};

struct rec {
	const char *dump;       /* CMD's dump: OUT.rtprof */
	struct proc p[RECORD_MAX_PROCS + 1];    /* [0]: CMD */
	int n;
	uint64_t max_total;     /* 0: no total cap */
	uint64_t max_bytes;     /* per process (--max-bytes), 0: none */
	uint64_t committed;     /* bytes written or promised (frames begun) */
	bool cap_reached;
	int max_procs;          /* --max-processes, <= RECORD_MAX_PROCS */
	int refused;            /* over max_procs */
	int refused_cap;        /* after the total cap */
	uint64_t progress;      /* bytes read, processes added */
	struct rtprof_gecko_note notes[MAX_NOTES];      /* strings owned */
	size_t nnotes;
};

static int64_t
wall_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A note for the profile's gathering log (strings copied). */
static void
note(struct rec *r, const char *what, const struct proc *p, pid_t pid,
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

/* /proc/PID/stat: its state letter and start time. Return: 0, -1 gone. */
static int
proc_stat(pid_t pid, char *state, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	ssize_t k;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	k = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (k <= 0)
		return -1;
	buf[k] = '\0';
	/* "pid (comm) S ppid ...": comm may hold anything; the last ')'. */
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ')
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

/* A new process: pipe @in to the file @out. */
static struct proc *
proc_add(struct rec *r, const char *path, int in, int out, pid_t pid)
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
			note(r, "dump cut", p, 0, NULL, why,
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
		note(r, "total byte cap reached", p, 0, NULL, why,
		    (int64_t)r->max_total);
	}
	snprintf(why, sizeof(why), "the total byte cap (%" PRIu64 ") was "
	    "reached: the dump ends after %" PRIu64 " bytes (whole frames); "
	    "what the process wrote after is dropped", r->max_total,
	    p->bytes);
	note(r, "dump cut by the total byte cap", p, 0, NULL, why,
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
	note(r, "dump cut by the per-process byte cap", p, 0, NULL, why,
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
	char why[300];

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
	snprintf(why, sizeof(why), "the process ended without finishing its "
	    "dump (killed, e.g. by SIGKILL, or crashed): %s; the dump ends at "
	    "its last complete frame, after %" PRIu64 " bytes (%" PRIu64
	    " bytes of a partial frame dropped)", p->trailer ? "its last "
	    "frame is incomplete" : "no trailer", p->bytes, part);
	fprintf(stderr, PROG ": %s: %s\n", p->path, why);
	note(r, "dump truncated", p, 0, NULL, why, (int64_t)p->bytes);
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

/* One request on the socket: a pid in, the write end of a pipe out. */
static void
serve(int lfd, struct rec *r)
{
	char req[32], path[PATH_MAX], cbuf[CMSG_SPACE(sizeof(int))], one = 1;
	char comm[64];
	struct iovec iov = { &one, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int c, fd, pfd[2], pid;
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
			note(r, "process not recorded", NULL, pid, comm, why,
			    -1);
			close(c);
			continue;
		}
		/* A process that exec()s asks again with the same pid: each
		 * image its own dump (OUT.PID.rtprof, OUT.PID-2.rtprof...). */
		proc_path(r->dump, pid, 1, path, sizeof(path));
		for (int k = 2; (fd = open(path, O_WRONLY | O_CREAT | O_EXCL |
		    O_CLOEXEC, 0644)) < 0 && errno == EEXIST && k < 100; k++)
			proc_path(r->dump, pid, k, path, sizeof(path));
		if (fd < 0 || pipe2(pfd, O_CLOEXEC) != 0) {
			fprintf(stderr, PROG ": %s: %s\n", path,
			    strerror(errno));
			if (fd >= 0) {
				close(fd);
				unlink(path);
			}
			close(c);
			continue;
		}
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pfd[1], sizeof(int));
		if (sendmsg(c, &mh, MSG_NOSIGNAL) != 1 ||
		    proc_add(r, path, pfd[0], fd, pid) == NULL) {
			close(pfd[0]);
			close(fd);
			unlink(path);
		}
		close(pfd[1]);
		close(c);
	}
}

/*
 * Wait up to @ms for a process asking for a dump, then copy what every
 * pipe holds. The pipes are drained on this cadence, not at each write:
 * the launcher wakes 1000 / PUMP_MS times a second, not at every flush of
 * every process (it would take CPU time from the profiled program on a
 * small machine); a pipe holds PIPE_BYTES meanwhile, and a writer that
 * fills it waits for the next round (its write timeout is seconds).
 */
static void
run_once(int lfd, struct rec *r, int ms)
{
	struct pollfd pf = { lfd, POLLIN, 0 };

	if (poll(&pf, 1, ms) > 0)
		serve(lfd, r);
	for (int i = 0; i < r->n; i++)
		if (r->p[i].in >= 0)
			pump(r, &r->p[i]);
}

static int
open_pipes(const struct rec *r)
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
static void
give_up(struct rec *r)
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
			proc_comm(p->pid, comm, sizeof(comm));
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
		note(r, "gave up waiting for the process", p, 0, NULL, why,
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
	    "                  kept next to it as OUT with .rtprof\n"
	    "  --interval MS   sampling interval, 0.1 to 1000 ms (1)\n"
	    "  --memory MIB    rtprof's chunk memory in each process (32)\n"
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

/* A byte count: a non-negative integer (decimal, 0x hex). */
static bool
parse_bytes(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno == 0 && end != s && *end == '\0' && s[0] != '-';
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

static void
rec_free(struct rec *r)
{
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

/* Context: main thread. Return: the exit status. */
int
cmd_record(int argc, char **argv)
{
	char def_out[PATH_MAX], dump[PATH_MAX], pre[PATH_MAX], env[64];
	char sdir[] = "/tmp/rtprof-record-XXXXXX", spath[64];
	struct sockaddr_un sa_un;
	struct rec *r;
	char **dumps;
	int lfd, quiet_rounds, ndumps;
	const char *out = NULL, *interval = NULL, *memory = NULL, *maxb = NULL;
	const char *block = NULL;
	uint64_t max_total = 0, max_bytes = 0;
	long max_procs = RECORD_MAX_PROCS;
	double us;
	struct sigaction sa;
	struct tool_convert_opts opts;
	struct tool_out o = { -1, NULL };
	struct tool_convert_sink sink = { open_out, tool_out_write, &o };
	bool opened = false;
	int i, fd, pfd[2], status, rc, werr = 0, code;
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
			char *end;
			double ms;

			interval = argv[++i];
			ms = strtod(interval, &end);
			if (end == interval || *end != '\0' ||
			    !(ms >= 0.1 && ms <= 1000)) {
				fprintf(stderr, PROG ": --interval: not a number "
				    "of milliseconds from 0.1 to 1000: %s\n",
				    interval);
				return 2;
			}
		} else if (strcmp(argv[i], "--memory") == 0 && i + 1 < argc) {
			/* Each process preallocates this much: at most half
			 * of this machine's memory. */
			uint64_t ram = (uint64_t)sysconf(_SC_PHYS_PAGES) *
			    (uint64_t)sysconf(_SC_PAGESIZE) >> 20;
			unsigned long long mib;
			char *end;

			memory = argv[++i];
			errno = 0;
			mib = strtoull(memory, &end, 10);
			if (*memory < '0' || *memory > '9' || *end != '\0' ||
			    errno != 0 || mib < 1 || mib > ram / 2) {
				fprintf(stderr, PROG ": --memory: not a number "
				    "of MiB from 1 to %llu (half of this "
				    "machine's memory): %s\n",
				    (unsigned long long)(ram / 2), memory);
				return 2;
			}
		} else if (strcmp(argv[i], "--max-bytes") == 0 &&
		    i + 1 < argc) {
			maxb = argv[++i];
			if (!parse_bytes(maxb, &max_bytes)) {
				fprintf(stderr, PROG ": --max-bytes: not a "
				    "byte count: %s\n", maxb);
				return 2;
			}
		} else if (strcmp(argv[i], "--max-total-bytes") == 0 &&
		    i + 1 < argc) {
			if (!parse_bytes(argv[++i], &max_total) ||
			    max_total == 0) {
				fprintf(stderr, PROG ": --max-total-bytes: not a "
				    "byte count above 0: %s\n", argv[i]);
				return 2;
			}
		} else if (strcmp(argv[i], "--max-processes") == 0 &&
		    i + 1 < argc) {
			char *end;

			max_procs = strtol(argv[++i], &end, 10);
			if (*argv[i] == '\0' || *end != '\0' || max_procs < 1 ||
			    max_procs > RECORD_MAX_PROCS) {
				fprintf(stderr, PROG ": --max-processes: not a "
				    "number from 1 to %d: %s\n",
				    RECORD_MAX_PROCS, argv[i]);
				return 2;
			}
		} else if (strcmp(argv[i], "--block-threshold") == 0 &&
		    i + 1 < argc) {
			char *end;

			block = argv[++i];
			us = strtod(block, &end);
			if (strcmp(block, "off") != 0 && (end == block ||
			    *end != '\0' || !(us >= 0 && us < 1e12))) {
				fprintf(stderr, PROG ": --block-threshold: not "
				    "a number of microseconds or \"off\": %s\n",
				    block);
				return 2;
			}
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
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		fprintf(stderr, PROG ": out of memory\n");
		return 2;
	}
	r->max_total = max_total;
	r->max_bytes = max_bytes;
	r->max_procs = (int)max_procs;
	dump_path(out, dump, sizeof(dump));
	r->dump = dump;
	preload_path(pre, sizeof(pre));
	fd = open(dump, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, PROG ": %s: %s\n", dump, strerror(errno));
		free(r);
		return 2;
	}
	/* CMD's dump comes through a pipe too: the launcher counts bytes. */
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		fprintf(stderr, PROG ": pipe: %s\n", strerror(errno));
		close(fd);
		free(r);
		return 2;
	}

	/* The socket on which the processes CMD starts ask for a dump. */
	if (mkdtemp(sdir) == NULL) {
		fprintf(stderr, PROG ": %s: %s\n", sdir, strerror(errno));
		close(fd);
		close(pfd[0]);
		close(pfd[1]);
		free(r);
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
		close(pfd[0]);
		close(pfd[1]);
		rmdir(sdir);
		free(r);
		return 2;
	}

	rtprof_record_say_sampling(PROG);
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
		close(pfd[0]);
		close(pfd[1]);
		free(r);
		return 2;
	}
	if (pid == 0) {
		const char *old = getenv("LD_PRELOAD");
		char *ld;

		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		/* Not close-on-exec: the program inherits it (and keeps it:
		 * the library makes it close-on-exec for what it starts). */
		fcntl(pfd[1], F_SETFD, 0);
		snprintf(env, sizeof(env), "%d", pfd[1]);
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
		if (block != NULL)
			setenv("RTPROF_BLOCK_THRESHOLD_US", block, 1);
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
	close(pfd[1]);
	if (proc_add(r, dump, pfd[0], fd, pid) == NULL) {
		fprintf(stderr, PROG ": out of memory\n");
		close(pfd[0]);
		close(fd);
	} else {
		const char *base = strrchr(argv[i], '/');

		snprintf(r->p[0].comm, sizeof(r->p[0].comm), "%s",
		    base != NULL ? base + 1 : argv[i]);
	}
	for (;;) {
		pid_t w;

		run_once(lfd, r, PUMP_MS);
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			fprintf(stderr, PROG ": waitpid: %s\n", strerror(errno));
			rec_free(r);
			return 2;
		}
	}
	child_pid = 0;
	/*
	 * Gathering: the processes CMD started may still be writing. Copy
	 * while any dump grows; done when every pipe is closed (after one
	 * quiet round when there were other processes: an exec'ing one asks
	 * again a moment later); given up after QUIET_ROUNDS without a byte.
	 */
	for (quiet_rounds = 0; quiet_rounds < QUIET_ROUNDS;) {
		uint64_t before = r->progress;
		int64_t end = wall_ns() + (int64_t)ROUND_MS * 1000000;

		while (wall_ns() < end) {
			if (open_pipes(r) == 0 && (r->n == 1 ||
			    quiet_rounds > 0))
				goto gathered;
			run_once(lfd, r, PUMP_MS);
		}
		quiet_rounds = r->progress != before ? 0 : quiet_rounds + 1;
	}
gathered:
	give_up(r);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	close(lfd);
	unlink(spath);
	rmdir(sdir);
	code = WIFEXITED(status) ? WEXITSTATUS(status) :
	    WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 2;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127 &&
	    r->p[0].bytes == 0) {
		/* exec failed (message printed by the child): no dump. */
		unlink(dump);
		rec_free(r);
		return 127;
	}

	/* Convert: a killed program's dump converts up to its last frame;
	 * a dump that got no byte (cut at once, died first) is left out. */
	if (tool_convert_opts_init(&opts, PROG, 0) != 0) {
		rec_free(r);
		return 2;
	}
	dumps = calloc((size_t)r->n + 1, sizeof(*dumps));
	if (dumps == NULL) {
		tool_convert_opts_free(&opts);
		rec_free(r);
		return 2;
	}
	ndumps = 0;
	for (int k = 0; k < r->n; k++) {
		if (r->p[k].bytes != 0) {
			dumps[ndumps++] = r->p[k].path;
			continue;
		}
		note(r, "dump left out: no data", &r->p[k], 0, NULL,
		    r->p[k].cut ? "cut by the total byte cap before its "
		    "first frame" : "the process wrote nothing", 0);
		unlink(r->p[k].path);
	}
	if (ndumps == 0) {
		fprintf(stderr, PROG ": no data was recorded: no profile\n");
		free(dumps);
		tool_convert_opts_free(&opts);
		rec_free(r);
		return code != 0 ? code : 2;
	}
	if (r->max_total != 0) {
		char why[96];

		snprintf(why, sizeof(why), "%" PRIu64 " bytes written in "
		    "%d dump(s)", r->committed, ndumps);
		note(r, r->cap_reached ? "total byte cap: reached" :
		    "total byte cap: not reached", NULL, 0, NULL, why,
		    (int64_t)r->max_total);
	}
	opts.notes = r->notes;
	opts.nnotes = r->nnotes;
	o.fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (o.fd < 0) {
		fprintf(stderr, PROG ": %s: %s\n", out, strerror(errno));
		free(dumps);
		tool_convert_opts_free(&opts);
		rec_free(r);
		return 2;
	}
	if (strlen(out) > 3 && strcmp(out + strlen(out) - 3, ".gz") == 0) {
		o.gz = gzdopen(dup(o.fd), "wb6");
		if (o.gz == NULL) {
			fprintf(stderr, PROG ": %s: cannot compress\n", out);
			close(o.fd);
			free(dumps);
			tool_convert_opts_free(&opts);
			rec_free(r);
			return 2;
		}
	}
	rc = tool_convert(PROG, dumps, ndumps, &opts, false, isatty(2) != 0,
	    &sink, &opened, &werr);
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
		rec_free(r);
		return code != 0 ? code : 2;
	}
	fprintf(stderr, PROG ": wrote %s (%d process%s; dump %s%s); open it "
	    "with `rtprof view %s` or at https://profiler.firefox.com\n", out,
	    ndumps, ndumps > 1 ? "es" : "", dump, ndumps > 1 ? " and others "
	    "next to it" : "", out);
	rec_free(r);
	return code;
}
