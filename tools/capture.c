/*
 * capture.c - `rtprof capture`: a dump stream from a board into files.
 *
 *   rtprof capture [--serial DEVICE [--baud N] | --tcp HOST:PORT |
 *                   --unix PATH | -] -o DIR [--max-sessions N] [--quiet]
 *
 * Reads the byte stream a recording process writes to its descriptor (a
 * UART, a TCP or Unix stream socket, or stdin, e.g. piped from ssh), finds
 * the frames in it with the codec's resynchronising scanner (codec/frame.h;
 * docs/wire-format.md, "Reading": a bad header CRC resumes the search one
 * byte later, a bad payload CRC counts a damaged frame and resumes one byte
 * after its sync) and writes every intact frame, byte for byte, into a file
 * of its session: DIR/capture-N-SSSSSSSS.rtprof, N counting sessions from
 * 1 (after the highest N already in DIR), SSSSSSSS the session id in hex.
 * A HEADER frame starts a new session (a board that resets starts a new
 * one with a new random id); frames of a session whose HEADER was lost go
 * to a file of their own, named ...-noheader.rtprof, which msgpack2gecko
 * refuses ("no session header found"). Nothing but intact frames is
 * written, so every file is a valid dump: what was lost shows as sequence
 * gaps when it is converted.
 *
 * A frame that lost bytes inside claims more bytes than it has: it is
 * known damaged once that many bytes have arrived, and the intact frames
 * behind it are written then, or when the capture ends (the stream ended
 * or was stopped: what the scanner holds is settled at once).
 *
 * At most --max-sessions files (CAP_MAX_SESSIONS by default) are created:
 * a stream of tiny sessions, hostile or broken, would otherwise become
 * that many files. The frames of later sessions are counted, not written,
 * and the capture exits 1.
 *
 * Memory is bounded by the scanner: one frame (at most
 * RTPROF_FRAME_MAX_PAYLOAD bytes) plus one read (CAP_READ), and a fixed
 * table of the CAP_KEEP most recent sessions.
 *
 * Statistics go to stderr on one status line, rewritten in place when
 * stderr is a terminal, else one line every CAP_LOG_MS when something
 * changed; a summary follows at the end (end of stream, hang-up, Ctrl-C,
 * SIGTERM, SIGHUP). The files are written with write(2) frame by frame, so
 * a capture that is killed leaves whole frames behind (the last one may be
 * cut: a truncated tail for the reader).
 *
 * Context: the program has one thread, the main thread; every function
 * below runs on it (the signal handler excepted, which only writes to the
 * pipe).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "sigpipe.h"
#include "frame.h"

#define PROG "rtprof capture"

#define CAP_READ (64u << 10)            /* bytes per read(2) */
#define CAP_KEEP 64                     /* sessions remembered */
#define CAP_TTY_MS 250                  /* status redraw, terminal */
#define CAP_LOG_MS 5000                 /* status line, not a terminal */
#define CAP_MAX_SESSIONS 1000           /* files per run, by default */

/* Exit statuses (also in capture_usage()). */
enum {
	CAP_OK = 0,
	CAP_DAMAGED = 1,
	CAP_USAGE = 2,
	CAP_INPUT = 3,
	CAP_OUTPUT = 4,
};

enum cap_input {
	IN_NONE,
	IN_SERIAL,
	IN_TCP,
	IN_UNIX,
	IN_STDIN,
};

/* One session: its file and what was seen of it. */
struct cap_sess {
	uint32_t id;
	unsigned num;                   /* N in the file name */
	bool header;                    /* began with its HEADER frame */
	bool trailer;                   /* its TRAILER frame was captured */
	uint64_t next_seq;
	uint64_t frames, missing, repeated;
	char name[64];                  /* capture-N-SSSSSSSS[-noheader]... */
};

struct capture {
	const char *dir;
	bool quiet;
	bool status_tty;                /* stderr is a terminal */
	bool status_shown;              /* a status line is on the terminal */
	int in_fd;
	int out_fd;                     /* cur's file, or -1 */
	struct cap_sess *cur;
	struct cap_sess sess[CAP_KEEP]; /* ring: session k at [(k-1) % KEEP] */
	uint64_t nsess;
	uint64_t max_sess;              /* --max-sessions */
	/* Sessions past max_sess: counted, not written. */
	uint64_t over_sess, over_frames;
	uint32_t over_id;               /* the last one's id */
	unsigned next_num;
	struct rtprof_scanner sc;
	/* Statistics. */
	uint64_t bytes;                 /* read from the input */
	uint64_t frames;                /* intact frames written */
	uint64_t gaps;                  /* frames missing by seq */
	uint64_t repeated;              /* seq at or below the last one */
	uint64_t garbage;               /* bytes outside intact frames */
	uint64_t tail;                  /* truncated tail at the end */
	uint64_t expect_off;            /* stream offset after the last frame */
	uint64_t bad_at_frame;          /* sc.bad_frames at the last frame */
	uint64_t logged_bytes;          /* bytes at the last status line */
	bool out_failed;
};

void
capture_usage(FILE *f)
{
	fprintf(f,
	    "usage: " PROG " INPUT -o DIR [--max-sessions N] [--quiet]\n"
	    "Capture the dump stream of a recording process (a board's\n"
	    "serial line, a socket, a pipe) into DIR: every intact frame\n"
	    "is written as it was sent, one file per session\n"
	    "(DIR/capture-N-SESSION.rtprof; a board that resets starts a\n"
	    "new session). Damage is skipped as the reader does: bad frames\n"
	    "are dropped and counted, and what is lost shows as sequence\n"
	    "gaps when the files are converted (msgpack2gecko DIR/*.rtprof).\n"
	    "INPUT is one of:\n"
	    "  --serial DEVICE   a serial line (a tty: raw mode, 8N1, no\n"
	    "                    flow control, modem lines ignored)\n"
	    "  --baud N          its rate, a standard one (default 115200)\n"
	    "  --tcp HOST:PORT   connect to a TCP server ([v6addr]:PORT)\n"
	    "  --unix PATH       connect to a Unix stream socket\n"
	    "  -                 stdin (e.g. ssh board 'cat /dev/ttyS1')\n"
	    "options:\n"
	    "  -o DIR            where the files go (created if missing;\n"
	    "                    files already there are kept: N continues)\n"
	    "  --max-sessions N  write at most N sessions (files; default\n"
	    "                    1000): frames of later ones are counted,\n"
	    "                    not written, and the exit status is 1\n"
	    "  -q, --quiet       no status line, no summary (errors only)\n"
	    "  -h, --help        this help\n"
	    "Statistics go to stderr on one status line: bytes, frames,\n"
	    "damaged frames (payload CRC wrong), sequence gaps (frames\n"
	    "missing), sessions, garbage bytes (outside intact frames). The\n"
	    "capture ends at end of stream or hang-up, or on Ctrl-C\n"
	    "(SIGINT), SIGTERM or SIGHUP; the files are closed, a frame cut\n"
	    "short at the end is counted as a truncated tail, and a summary\n"
	    "is printed.\n"
	    "exit status:\n"
	    "  0  captured; the stream was clean\n"
	    "  1  captured, but damage was seen (damaged frames, gaps,\n"
	    "     garbage, a truncated tail), no frame at all, or sessions\n"
	    "     past --max-sessions: the files hold every intact frame\n"
	    "     of the sessions written\n"
	    "  2  usage error\n"
	    "  3  the input could not be opened, set up or read (what was\n"
	    "     read before a read error is kept)\n"
	    "  4  DIR or a file in it could not be created or written (the\n"
	    "     capture stops there)\n");
}

/* A decimal count above 0. */
static bool
parse_count(const char *a, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(a, &end, 10);
	return a[0] >= '0' && a[0] <= '9' && *end == '\0' && errno == 0 &&
	    *out > 0;
}

static int64_t
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---- Opening the input. ---- */

static const struct {
	unsigned long rate;
	speed_t speed;
} bauds[] = {
	{ 50, B50 }, { 75, B75 }, { 110, B110 }, { 134, B134 },
	{ 150, B150 }, { 200, B200 }, { 300, B300 }, { 600, B600 },
	{ 1200, B1200 }, { 1800, B1800 }, { 2400, B2400 }, { 4800, B4800 },
	{ 9600, B9600 }, { 19200, B19200 }, { 38400, B38400 },
	{ 57600, B57600 }, { 115200, B115200 }, { 230400, B230400 },
#ifdef B460800
	{ 460800, B460800 },
#endif
#ifdef B500000
	{ 500000, B500000 }, { 576000, B576000 }, { 921600, B921600 },
	{ 1000000, B1000000 }, { 1152000, B1152000 },
	{ 1500000, B1500000 }, { 2000000, B2000000 },
	{ 2500000, B2500000 }, { 3000000, B3000000 },
	{ 3500000, B3500000 }, { 4000000, B4000000 },
#endif
};

/* Return: true with *@sp set when @s is a standard rate. */
static bool
baud_lookup(const char *s, speed_t *sp)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-')
		return false;
	for (size_t i = 0; i < sizeof(bauds) / sizeof(bauds[0]); i++) {
		if (bauds[i].rate == v) {
			*sp = bauds[i].speed;
			return true;
		}
	}
	return false;
}

/*
 * Open the serial device @dev and set it up: raw (cfmakeraw: no echo, no
 * line editing, no translation, 8 bits, no parity), @speed both ways,
 * CLOCAL (no modem control: do not wait for carrier, no hang-up on its
 * loss) and CREAD, no hardware (CRTSCTS) or software (IXON/IXOFF) flow
 * control, reads return as soon as a byte is there. The previous settings
 * go to *@saved. Return: the descriptor, or -1 (message printed).
 */
static int
open_serial(const char *dev, speed_t speed, struct termios *saved)
{
	struct termios t, chk;
	int fd, fl;

	/* O_NONBLOCK: do not wait for the carrier while opening. */
	fd = open(dev, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, PROG ": %s: cannot open: %s\n", dev,
		    strerror(errno));
		return -1;
	}
	if (tcgetattr(fd, &t) != 0) {
		fprintf(stderr, PROG ": %s: not a serial line (%s)\n", dev,
		    strerror(errno));
		close(fd);
		return -1;
	}
	*saved = t;
	cfmakeraw(&t);
	t.c_cflag |= CLOCAL | CREAD;
	t.c_cflag &= ~(tcflag_t)(CRTSCTS | CSTOPB);
	t.c_iflag &= ~(tcflag_t)(IXON | IXOFF | IXANY);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (cfsetispeed(&t, speed) != 0 || cfsetospeed(&t, speed) != 0 ||
	    tcsetattr(fd, TCSANOW, &t) != 0) {
		fprintf(stderr, PROG ": %s: cannot set the line up: %s\n", dev,
		    strerror(errno));
		close(fd);
		return -1;
	}
	/* tcsetattr() succeeds when any of the changes took: check. */
	if (tcgetattr(fd, &chk) == 0 && cfgetispeed(&chk) != speed)
		fprintf(stderr, PROG ": %s: warning: the driver did not take "
		    "the baud rate\n", dev);
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
		fprintf(stderr, PROG ": %s: fcntl: %s\n", dev,
		    strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Connect to HOST:PORT ([HOST]:PORT for IPv6). Return: fd or -1. */
static int
open_tcp(const char *arg)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
	    .ai_socktype = SOCK_STREAM }, *res, *ai;
	char host[256];
	const char *port, *h = arg;
	size_t hlen;
	int fd = -1, rc, err = 0;

	if (arg[0] == '[') {
		const char *e = strchr(arg, ']');

		if (e == NULL || e[1] != ':') {
			fprintf(stderr, PROG ": --tcp %s: want "
			    "[ADDRESS]:PORT\n", arg);
			return -1;
		}
		h = arg + 1;
		hlen = (size_t)(e - h);
		port = e + 2;
	} else {
		const char *c = strrchr(arg, ':');

		if (c == NULL) {
			fprintf(stderr, PROG ": --tcp %s: want HOST:PORT\n",
			    arg);
			return -1;
		}
		hlen = (size_t)(c - arg);
		port = c + 1;
	}
	if (hlen == 0 || hlen >= sizeof(host) || port[0] == '\0') {
		fprintf(stderr, PROG ": --tcp %s: want HOST:PORT\n", arg);
		return -1;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		fprintf(stderr, PROG ": --tcp %s: %s\n", arg, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
		    ai->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		err = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		fprintf(stderr, PROG ": --tcp %s: cannot connect: %s\n", arg,
		    strerror(err));
	return fd;
}

/* Connect to the Unix stream socket @path. Return: fd or -1. */
static int
open_unix(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		fprintf(stderr, PROG ": --unix %s: path too long\n", path);
		return -1;
	}
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		fprintf(stderr, PROG ": --unix %s: cannot connect: %s\n", path,
		    strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* ---- The output directory and files. ---- */

/* mkdir -p @dir. Return: 0, or -1 (message printed). */
static int
make_dir(const char *dir)
{
	char p[PATH_MAX];
	struct stat sb;
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof(p)) {
		fprintf(stderr, PROG ": -o: bad directory name\n");
		return -1;
	}
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0777) != 0 && errno != EEXIST) {
			fprintf(stderr, PROG ": %s: cannot create: %s\n", p,
			    strerror(errno));
			return -1;
		}
		p[i] = i == n ? '\0' : '/';
	}
	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		fprintf(stderr, PROG ": %s: not a directory\n", dir);
		return -1;
	}
	return 0;
}

/* The N after the highest capture-N-* already in @dir (1 when none). */
static unsigned
first_num(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned max = 0;

	if (d == NULL)
		return 1;
	while ((e = readdir(d)) != NULL) {
		unsigned n;
		char dash;

		if (sscanf(e->d_name, "capture-%u%c", &n, &dash) == 2 &&
		    dash == '-' && n > max && n < UINT_MAX - 1)
			max = n;
	}
	closedir(d);
	return max + 1;
}

static void
sess_path(const struct capture *c, const struct cap_sess *s, char *buf,
    size_t n)
{
	snprintf(buf, n, "%s/%s", c->dir, s->name);
}

/* Clear the status line before another message (terminal only). */
static void
status_clear(struct capture *c)
{
	if (c->status_shown)
		fputs("\r\033[K", stderr);
	c->status_shown = false;
}

static void
status_show(struct capture *c)
{
	char line[256];

	if (c->quiet)
		return;
	snprintf(line, sizeof(line), PROG ": %.1f kB, frames %" PRIu64
	    ", damaged %" PRIu64 ", gaps %" PRIu64 ", sessions %" PRIu64
	    ", garbage %" PRIu64, (double)c->bytes / 1e3, c->frames,
	    c->sc.bad_frames, c->gaps, c->nsess, c->garbage);
	if (c->status_tty) {
		fprintf(stderr, "\r%s\033[K", line);
		c->status_shown = true;
	} else if (c->bytes != c->logged_bytes) {
		fprintf(stderr, "%s\n", line);
	}
	c->logged_bytes = c->bytes;
	fflush(stderr);
}

/* Close the current file. Return: 0, or -1 (message printed). */
static int
out_close(struct capture *c)
{
	char path[PATH_MAX];
	int rc = 0;

	if (c->out_fd < 0)
		return 0;
	if (close(c->out_fd) != 0) {
		sess_path(c, c->cur, path, sizeof(path));
		status_clear(c);
		fprintf(stderr, PROG ": %s: close: %s\n", path,
		    strerror(errno));
		rc = -1;
	}
	c->out_fd = -1;
	return rc;
}

/*
 * A new session with the id of frame @f: its own file (a HEADER frame
 * starts a session; any other frame whose session is unknown starts one
 * whose HEADER was lost). Return: 0, or -1 (message printed).
 */
static int
sess_new(struct capture *c, const struct rtprof_frame *f)
{
	struct cap_sess *s;
	char path[PATH_MAX];
	bool header = f->hdr.kind == RTPROF_FRAME_HEADER;
	int fd = -1;

	if (out_close(c) != 0)
		return -1;
	s = &c->sess[c->nsess % CAP_KEEP];
	memset(s, 0, sizeof(*s));
	s->id = f->hdr.session;
	s->header = header;
	for (int tries = 0; fd < 0 && tries < 1000; tries++) {
		s->num = c->next_num++;
		snprintf(s->name, sizeof(s->name), "capture-%u-%08" PRIx32
		    "%s.rtprof", s->num, s->id, header ? "" : "-noheader");
		sess_path(c, s, path, sizeof(path));
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		status_clear(c);
		fprintf(stderr, PROG ": %s: cannot create: %s\n", path,
		    strerror(errno));
		return -1;
	}
	c->nsess++;
	c->cur = s;
	c->out_fd = fd;
	if (!c->quiet) {
		status_clear(c);
		fprintf(stderr, PROG ": session %08" PRIx32 "%s: %s\n", s->id,
		    header ? "" : " (its HEADER was lost)", path);
	}
	return 0;
}

/* Back to the earlier session @s (appending to its file). */
static int
sess_reopen(struct capture *c, struct cap_sess *s)
{
	char path[PATH_MAX];

	if (out_close(c) != 0)
		return -1;
	sess_path(c, s, path, sizeof(path));
	c->out_fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (c->out_fd < 0) {
		status_clear(c);
		fprintf(stderr, PROG ": %s: cannot reopen: %s\n", path,
		    strerror(errno));
		return -1;
	}
	c->cur = s;
	return 0;
}

/* A session among the remembered ones, other than the current one. */
static struct cap_sess *
sess_find(struct capture *c, uint32_t id)
{
	uint64_t n = c->nsess < CAP_KEEP ? c->nsess : CAP_KEEP;

	for (uint64_t k = 0; k < n; k++) {
		struct cap_sess *s = &c->sess[(c->nsess - 1 - k) % CAP_KEEP];

		if (s->id == id)
			return s;
	}
	return NULL;
}

static int
write_all(int fd, const unsigned char *p, size_t n)
{
	while (n != 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* A frame of a session past --max-sessions: counted, not written. */
static void
over_cap(struct capture *c, const struct rtprof_frame_hdr *h)
{
	bool same = c->over_sess != 0 && h->session == c->over_id;

	if (c->over_sess == 0 && !c->quiet) {
		status_clear(c);
		fprintf(stderr, PROG ": --max-sessions %" PRIu64 " reached: "
		    "later sessions are counted, not written\n", c->max_sess);
	}
	if (!same || h->kind == RTPROF_FRAME_HEADER)
		c->over_sess++;
	c->over_id = h->session;
	c->over_frames++;
}

/*
 * Make the file of frame @f's session current: a HEADER starts a new
 * session, a frame of an unknown session too (its HEADER was lost).
 * Return: 0, 1 (a session past --max-sessions: skip the frame) or -1.
 */
static int
route(struct capture *c, const struct rtprof_frame *f)
{
	const struct rtprof_frame_hdr *h = &f->hdr;
	struct cap_sess *s;

	if (h->kind != RTPROF_FRAME_HEADER && c->cur != NULL &&
	    c->cur->id == h->session)
		return 0;
	if (h->kind != RTPROF_FRAME_HEADER &&
	    (s = sess_find(c, h->session)) != NULL)
		/* Sessions do not interleave in one stream; but if one
		 * comes back, its frames still go to its own file. */
		return sess_reopen(c, s);
	if (c->nsess < c->max_sess)
		return sess_new(c, f);
	over_cap(c, h);
	return 1;
}

/* An intact frame: route it to its session's file. Return: 0 or -1. */
static int
on_frame(struct capture *c, const struct rtprof_frame *f)
{
	const struct rtprof_frame_hdr *h = &f->hdr;
	size_t size = RTPROF_FRAME_OVERHEAD + (size_t)h->len;
	struct cap_sess *s;
	char path[PATH_MAX];
	int rc;

	if (f->offset > c->expect_off)
		c->garbage += f->offset - c->expect_off;
	c->expect_off = f->offset + size;
	c->bad_at_frame = c->sc.bad_frames;

	rc = route(c, f);
	if (rc != 0)
		return rc > 0 ? 0 : -1;
	s = c->cur;
	if (h->seq > s->next_seq) {
		s->missing += h->seq - s->next_seq;
		c->gaps += h->seq - s->next_seq;
	} else if (h->seq < s->next_seq) {
		/* Kept as it came: the reader reports and skips it. */
		s->repeated++;
		c->repeated++;
	}
	if (h->seq >= s->next_seq)
		s->next_seq = (uint64_t)h->seq + 1;
	if (h->kind == RTPROF_FRAME_TRAILER)
		s->trailer = true;
	rc = write_all(c->out_fd, f->raw, size);
	if (rc != 0) {
		sess_path(c, s, path, sizeof(path));
		status_clear(c);
		fprintf(stderr, PROG ": %s: write failed: %s\n", path,
		    strerror(-rc));
		return -1;
	}
	s->frames++;
	c->frames++;
	return 0;
}

/* Take every whole frame the scanner holds. Return: 0 or -1. */
static int
drain(struct capture *c)
{
	struct rtprof_frame f;

	while (rtprof_scanner_next(&c->sc, &f) == 1)
		if (on_frame(c, &f) != 0)
			return -1;
	return 0;
}

/*
 * The stream ended (or the capture was stopped): frames held behind one
 * that can no longer complete are still taken; what is left after the
 * last intact frame is garbage when a damaged frame was found in it, else
 * a truncated tail (as the reader counts it). Return: 0 or -1.
 */
static int
finish(struct capture *c)
{
	struct rtprof_frame f;
	uint64_t rest;

	while (rtprof_scanner_next_eof(&c->sc, &f) == 1)
		if (on_frame(c, &f) != 0)
			return -1;
	rest = c->bytes - c->expect_off;
	if (rest == 0)
		return 0;
	if (c->sc.bad_frames > c->bad_at_frame)
		c->garbage += rest;
	else
		c->tail = rest;
	return 0;
}

static void
summary(struct capture *c, const char *why)
{
	uint64_t n = c->nsess < CAP_KEEP ? c->nsess : CAP_KEEP;
	char path[PATH_MAX];

	status_clear(c);
	if (c->quiet)
		return;
	fprintf(stderr, PROG ": stopped: %s\n", why);
	fprintf(stderr, PROG ": bytes %" PRIu64 ", frames %" PRIu64
	    ", damaged %" PRIu64 ", gaps %" PRIu64 ", repeated %" PRIu64
	    ", sessions %" PRIu64 ", garbage %" PRIu64 ", tail %" PRIu64 "\n",
	    c->bytes, c->frames, c->sc.bad_frames, c->gaps, c->repeated,
	    c->nsess, c->garbage, c->tail);
	if (c->over_sess != 0)
		fprintf(stderr, PROG ": %" PRIu64 " more session(s) past "
		    "--max-sessions %" PRIu64 ", not written (%" PRIu64
		    " frames)\n", c->over_sess, c->max_sess, c->over_frames);
	if (c->nsess > n)
		fprintf(stderr, PROG ": (%" PRIu64 " earlier sessions not "
		    "listed)\n", c->nsess - n);
	for (uint64_t k = n; k > 0; k--) {
		const struct cap_sess *s = &c->sess[(c->nsess - k) % CAP_KEEP];

		sess_path(c, s, path, sizeof(path));
		fprintf(stderr, PROG ": %s: %" PRIu64 " frames, %" PRIu64
		    " missing", path, s->frames, s->missing);
		if (s->repeated != 0)
			fprintf(stderr, ", %" PRIu64 " repeated", s->repeated);
		if (!s->header)
			fprintf(stderr, "; its HEADER was lost: msgpack2gecko "
			    "cannot convert it\n");
		else
			fprintf(stderr, "%s\n", s->trailer ? "" :
			    ", no trailer (cut short or still running)");
	}
	if (c->frames == 0)
		fprintf(stderr, PROG ": no frame found in %" PRIu64 " bytes "
		    "(not an rtprof stream, or a wrong baud rate?)\n",
		    c->bytes);
	else if (c->sc.bad_frames != 0 || c->gaps != 0 || c->garbage != 0 ||
	    c->tail != 0)
		fprintf(stderr, PROG ": damaged: frames whose payload CRC "
		    "failed; gaps: frames missing by sequence number; garbage: "
		    "bytes outside intact frames; tail: a frame cut short at "
		    "the end\n");
}

/*
 * cmd_capture - rtprof capture INPUT -o DIR [--quiet]
 * Context: main thread.
 * Return: exit status (see capture_usage()).
 */
int
cmd_capture(int argc, char **argv)
{
	struct capture c = { .in_fd = -1, .out_fd = -1,
		.max_sess = CAP_MAX_SESSIONS };
	enum cap_input in = IN_NONE;
	const char *src = NULL, *baud = NULL, *why = "end of stream";
	struct termios saved = { 0 };
	speed_t speed = B115200;
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	int status = CAP_OK, sig_fd = -1;
	bool scanner = false, in_err = false;
	int64_t next_status;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		enum cap_input k = IN_NONE;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			capture_usage(stdout);
			return CAP_OK;
		}
		if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
			c.quiet = true;
			continue;
		}
		if (strcmp(a, "--max-sessions") == 0) {
			if (i + 1 >= argc || !parse_count(argv[++i],
			    &c.max_sess)) {
				fprintf(stderr, PROG ": --max-sessions needs a "
				    "number above 0\n");
				return CAP_USAGE;
			}
			continue;
		}
		if (strcmp(a, "-") == 0) {
			k = IN_STDIN;
		} else if (strcmp(a, "--serial") == 0) {
			k = IN_SERIAL;
		} else if (strcmp(a, "--tcp") == 0) {
			k = IN_TCP;
		} else if (strcmp(a, "--unix") == 0) {
			k = IN_UNIX;
		} else if (strcmp(a, "--baud") != 0 && strcmp(a, "-o") != 0) {
			fprintf(stderr, PROG ": %s %s\n", a[0] == '-' ?
			    "unknown option" : "unexpected argument", a);
			capture_usage(stderr);
			return CAP_USAGE;
		}
		if (k != IN_STDIN && i + 1 >= argc) {
			fprintf(stderr, PROG ": %s needs an argument\n", a);
			return CAP_USAGE;
		}
		if (k == IN_NONE) {
			if (strcmp(a, "-o") == 0)
				c.dir = argv[++i];
			else
				baud = argv[++i];
			continue;
		}
		if (in != IN_NONE) {
			fprintf(stderr, PROG ": give one input (--serial, "
			    "--tcp, --unix or -)\n");
			return CAP_USAGE;
		}
		in = k;
		if (k != IN_STDIN)
			src = argv[++i];
	}
	if (in == IN_NONE || c.dir == NULL) {
		fprintf(stderr, PROG ": %s\n", in == IN_NONE ? "no input: "
		    "--serial DEVICE, --tcp HOST:PORT, --unix PATH or -" :
		    "no output directory (-o DIR)");
		capture_usage(stderr);
		return CAP_USAGE;
	}
	if (baud != NULL && in != IN_SERIAL) {
		fprintf(stderr, PROG ": --baud is for --serial\n");
		return CAP_USAGE;
	}
	if (baud != NULL && !baud_lookup(baud, &speed)) {
		fprintf(stderr, PROG ": --baud %s: not a standard rate (such "
		    "as 9600, 115200, 921600)\n", baud);
		return CAP_USAGE;
	}

	if (make_dir(c.dir) != 0)
		return CAP_OUTPUT;
	c.next_num = first_num(c.dir);
	switch (in) {
	case IN_SERIAL:
		c.in_fd = open_serial(src, speed, &saved);
		break;
	case IN_TCP:
		c.in_fd = open_tcp(src);
		break;
	case IN_UNIX:
		c.in_fd = open_unix(src);
		break;
	default:
		c.in_fd = STDIN_FILENO;
		src = "stdin";
		break;
	}
	if (c.in_fd < 0)
		return CAP_INPUT;

	/* Signals through a pipe: poll() sees them, nothing races. */
	if ((sig_fd = tool_sigpipe_open(sigs, 3)) < 0) {
		fprintf(stderr, PROG ": pipe: %s\n", strerror(errno));
		status = CAP_INPUT;
		goto done;
	}

	if (rtprof_scanner_init(&c.sc) != 0) {
		fprintf(stderr, PROG ": out of memory\n");
		status = CAP_INPUT;
		goto done;
	}
	scanner = true;
	c.status_tty = !c.quiet && isatty(STDERR_FILENO);
	if (!c.quiet) {
		if (in == IN_SERIAL)
			fprintf(stderr, PROG ": reading %s at %s baud into "
			    "%s/ (Ctrl-C stops)\n", src, baud ? baud : "115200",
			    c.dir);
		else
			fprintf(stderr, PROG ": reading %s into %s/ (Ctrl-C "
			    "stops)\n", src, c.dir);
	}
	next_status = now_ms() + (c.status_tty ? CAP_TTY_MS : CAP_LOG_MS);

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = c.in_fd, .events = POLLIN },
			{ .fd = sig_fd, .events = POLLIN },
		};
		int64_t now = now_ms();
		int timeout = c.quiet ? -1 : next_status <= now ? 0 :
		    (int)(next_status - now);
		unsigned char *p;
		size_t n = CAP_READ;
		ssize_t got;

		if (!c.quiet && now >= next_status) {
			status_show(&c);
			next_status = now + (c.status_tty ? CAP_TTY_MS :
			    CAP_LOG_MS);
			continue;
		}
		if (poll(pfd, 2, timeout) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, PROG ": poll: %s\n", strerror(errno));
			in_err = true;
			break;
		}
		if (pfd[1].revents != 0) {
			unsigned char sig = 0;

			if (read(sig_fd, &sig, 1) == 1) {
				why = sig == SIGINT ? "Ctrl-C (SIGINT)" :
				    sig == SIGTERM ? "SIGTERM" : "SIGHUP";
				break;
			}
		}
		if (pfd[0].revents == 0)
			continue;
		if (pfd[0].revents & POLLNVAL) {
			fprintf(stderr, PROG ": %s: not readable\n", src);
			in_err = true;
			break;
		}
		p = rtprof_scanner_space(&c.sc, &n);
		if (p == NULL) {
			fprintf(stderr, PROG ": out of memory\n");
			in_err = true;
			break;
		}
		got = read(c.in_fd, p, n < CAP_READ ? n : CAP_READ);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0 && errno == EIO && in == IN_SERIAL) {
			why = "the line hung up (EIO: device gone, or the "
			    "other end closed)";
			break;
		}
		if (got < 0) {
			status_clear(&c);
			fprintf(stderr, PROG ": %s: read failed: %s\n", src,
			    strerror(errno));
			in_err = true;
			why = "read error";
			break;
		}
		if (got == 0) {
			if (in == IN_SERIAL)
				why = "end of stream (the line hung up)";
			break;
		}
		rtprof_scanner_commit(&c.sc, (size_t)got);
		c.bytes += (uint64_t)got;
		if (drain(&c) != 0) {
			c.out_failed = true;
			break;
		}
	}
	if (!c.out_failed && finish(&c) != 0)
		c.out_failed = true;
	if (out_close(&c) != 0)
		c.out_failed = true;
	summary(&c, why);
	if (c.out_failed)
		status = CAP_OUTPUT;
	else if (in_err)
		status = CAP_INPUT;
	else if (c.frames == 0 || c.sc.bad_frames != 0 || c.gaps != 0 ||
	    c.garbage != 0 || c.tail != 0 || c.repeated != 0 ||
	    c.over_sess != 0)
		status = CAP_DAMAGED;
done:
	if (scanner)
		rtprof_scanner_free(&c.sc);
	if (in == IN_SERIAL && c.in_fd >= 0)
		tcsetattr(c.in_fd, TCSANOW, &saved);    /* as it was found */
	if (c.in_fd >= 0 && c.in_fd != STDIN_FILENO)
		close(c.in_fd);
	tool_sigpipe_close();
	return status;
}
