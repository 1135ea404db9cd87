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
#include "capture_input.h"
#include "monotonic.h"
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

/* What the command line asks for, beyond struct capture's fields. */
struct cap_args {
	enum cap_input in;
	const char *src;                /* device, HOST:PORT, path; "stdin" */
	const char *baud;               /* --baud, or NULL */
	speed_t speed;
};

/* The option @a of the input (-, --serial, --tcp, --unix), else IN_NONE. */
static enum cap_input
input_kind(const char *a)
{
	if (strcmp(a, "-") == 0)
		return IN_STDIN;
	if (strcmp(a, "--serial") == 0)
		return IN_SERIAL;
	if (strcmp(a, "--tcp") == 0)
		return IN_TCP;
	return strcmp(a, "--unix") == 0 ? IN_UNIX : IN_NONE;
}

/* The options once read: one input, a directory, --baud for a serial
 * line at a standard rate. Return: 0, or CAP_USAGE (message printed). */
static int
args_check(const struct capture *c, struct cap_args *a)
{
	if (a->in == IN_NONE || c->dir == NULL) {
		fprintf(stderr, PROG ": %s\n", a->in == IN_NONE ? "no input: "
		    "--serial DEVICE, --tcp HOST:PORT, --unix PATH or -" :
		    "no output directory (-o DIR)");
		capture_usage(stderr);
		return CAP_USAGE;
	}
	if (a->baud != NULL && a->in != IN_SERIAL) {
		fprintf(stderr, PROG ": --baud is for --serial\n");
		return CAP_USAGE;
	}
	if (a->baud != NULL && !cap_baud_lookup(a->baud, &a->speed)) {
		fprintf(stderr, PROG ": --baud %s: not a standard rate (such "
		    "as 9600, 115200, 921600)\n", a->baud);
		return CAP_USAGE;
	}
	return 0;
}

/* Parse @argv into @c and @a. Return: -1 go on, or the exit status to
 * return now (CAP_OK after --help). */
static int
args_parse(struct capture *c, struct cap_args *a, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		enum cap_input k = input_kind(o);

		if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) {
			capture_usage(stdout);
			return CAP_OK;
		}
		if (strcmp(o, "-q") == 0 || strcmp(o, "--quiet") == 0) {
			c->quiet = true;
			continue;
		}
		if (strcmp(o, "--max-sessions") == 0) {
			if (i + 1 < argc && parse_count(argv[++i],
			    &c->max_sess))
				continue;
			fprintf(stderr, PROG ": --max-sessions needs a "
			    "number above 0\n");
			return CAP_USAGE;
		}
		if (k == IN_NONE && strcmp(o, "--baud") != 0 &&
		    strcmp(o, "-o") != 0) {
			fprintf(stderr, PROG ": %s %s\n", o[0] == '-' ?
			    "unknown option" : "unexpected argument", o);
			capture_usage(stderr);
			return CAP_USAGE;
		}
		if (k != IN_STDIN && i + 1 >= argc) {
			fprintf(stderr, PROG ": %s needs an argument\n", o);
			return CAP_USAGE;
		}
		if (k == IN_NONE) {
			if (strcmp(o, "-o") == 0)
				c->dir = argv[++i];
			else
				a->baud = argv[++i];
			continue;
		}
		if (a->in != IN_NONE) {
			fprintf(stderr, PROG ": give one input (--serial, "
			    "--tcp, --unix or -)\n");
			return CAP_USAGE;
		}
		a->in = k;
		if (k != IN_STDIN)
			a->src = argv[++i];
	}
	return args_check(c, a) != 0 ? CAP_USAGE : -1;
}

/* Open @a's input into c->in_fd (a serial line's settings before in
 * *@saved). Return: 0, or CAP_INPUT (message printed). */
static int
input_open(struct capture *c, struct cap_args *a, struct termios *saved)
{
	switch (a->in) {
	case IN_SERIAL:
		c->in_fd = cap_open_serial(a->src, a->speed, saved);
		break;
	case IN_TCP:
		c->in_fd = cap_open_tcp(a->src);
		break;
	case IN_UNIX:
		c->in_fd = cap_open_unix(a->src);
		break;
	default:
		c->in_fd = STDIN_FILENO;
		a->src = "stdin";
		break;
	}
	return c->in_fd < 0 ? CAP_INPUT : 0;
}

/* What one capture run ended with. */
struct cap_end {
	const char *why;                /* for the summary */
	bool in_err;                    /* the input failed */
	bool stop;                      /* the loop ends */
};

/*
 * One read from the input into the scanner, and the intact frames it
 * completed written. Sets @e->stop (with why) at the end of the stream,
 * on an error, or when the output failed.
 */
static void
read_once(struct capture *c, const struct cap_args *a, struct cap_end *e)
{
	size_t n = CAP_READ;
	unsigned char *p = rtprof_scanner_space(&c->sc, &n);
	ssize_t got;

	e->stop = true;
	if (p == NULL) {
		fprintf(stderr, PROG ": out of memory\n");
		e->in_err = true;
		return;
	}
	got = read(c->in_fd, p, n < CAP_READ ? n : CAP_READ);
	if (got < 0 && (errno == EINTR || errno == EAGAIN)) {
		e->stop = false;
	} else if (got < 0 && errno == EIO && a->in == IN_SERIAL) {
		e->why = "the line hung up (EIO: device gone, or the other "
		    "end closed)";
	} else if (got < 0) {
		status_clear(c);
		fprintf(stderr, PROG ": %s: read failed: %s\n", a->src,
		    strerror(errno));
		e->in_err = true;
		e->why = "read error";
	} else if (got == 0) {
		if (a->in == IN_SERIAL)
			e->why = "end of stream (the line hung up)";
	} else {
		rtprof_scanner_commit(&c->sc, (size_t)got);
		c->bytes += (uint64_t)got;
		if (drain(c) != 0)
			c->out_failed = true;
		else
			e->stop = false;
	}
}

/* The name of the stopping signal @sig from the pipe. */
static const char *
stop_signal(unsigned char sig)
{
	return sig == SIGINT ? "Ctrl-C (SIGINT)" :
	    sig == SIGTERM ? "SIGTERM" : "SIGHUP";
}

/*
 * Read the input until it ends, fails, the output fails or a signal on
 * @sig_fd; the status line kept up meanwhile. Return: how it ended.
 */
static struct cap_end
capture_loop(struct capture *c, const struct cap_args *a, int sig_fd)
{
	struct cap_end e = { "end of stream", false, false };
	int64_t period = c->status_tty ? CAP_TTY_MS : CAP_LOG_MS;
	int64_t next_status = tool_now_ms() + period;

	while (!e.stop) {
		struct pollfd pfd[2] = {
			{ .fd = c->in_fd, .events = POLLIN },
			{ .fd = sig_fd, .events = POLLIN },
		};
		int64_t now = tool_now_ms();
		unsigned char sig = 0;

		if (!c->quiet && now >= next_status) {
			status_show(c);
			next_status = now + period;
			continue;
		}
		if (poll(pfd, 2, c->quiet ? -1 : (int)(next_status - now)) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, PROG ": poll: %s\n", strerror(errno));
			e.in_err = true;
			break;
		}
		if (pfd[1].revents != 0 && read(sig_fd, &sig, 1) == 1) {
			e.why = stop_signal(sig);
			break;
		}
		if (pfd[0].revents & POLLNVAL) {
			fprintf(stderr, PROG ": %s: not readable\n", a->src);
			e.in_err = true;
			break;
		}
		if (pfd[0].revents != 0)
			read_once(c, a, &e);
	}
	return e;
}

/* The exit status of a capture that ended as @e says (see
 * capture_usage()). */
static int
exit_status(const struct capture *c, const struct cap_end *e)
{
	if (c->out_failed)
		return CAP_OUTPUT;
	if (e->in_err)
		return CAP_INPUT;
	if (c->frames == 0 || c->sc.bad_frames != 0 || c->gaps != 0 ||
	    c->garbage != 0 || c->tail != 0 || c->repeated != 0 ||
	    c->over_sess != 0)
		return CAP_DAMAGED;
	return CAP_OK;
}

/* Capture from the open input into c->dir until it ends (the scanner
 * set up here). Return: the exit status. */
static int
capture_run(struct capture *c, const struct cap_args *a)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct cap_end e;
	int sig_fd, status;

	/* Signals through a pipe: poll() sees them, nothing races. */
	if ((sig_fd = tool_sigpipe_open(sigs, 3)) < 0) {
		fprintf(stderr, PROG ": pipe: %s\n", strerror(errno));
		return CAP_INPUT;
	}
	if (rtprof_scanner_init(&c->sc) != 0) {
		fprintf(stderr, PROG ": out of memory\n");
		return CAP_INPUT;
	}
	c->status_tty = !c->quiet && isatty(STDERR_FILENO);
	if (!c->quiet && a->in == IN_SERIAL)
		fprintf(stderr, PROG ": reading %s at %s baud into %s/ "
		    "(Ctrl-C stops)\n", a->src, a->baud ? a->baud : "115200",
		    c->dir);
	else if (!c->quiet)
		fprintf(stderr, PROG ": reading %s into %s/ (Ctrl-C stops)\n",
		    a->src, c->dir);
	e = capture_loop(c, a, sig_fd);
	if (!c->out_failed && finish(c) != 0)
		c->out_failed = true;
	if (out_close(c) != 0)
		c->out_failed = true;
	summary(c, e.why);
	status = exit_status(c, &e);    /* before the scanner's counts go */
	rtprof_scanner_free(&c->sc);
	return status;
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
	struct cap_args a = { .in = IN_NONE, .speed = B115200 };
	struct termios saved = { 0 };
	int status = args_parse(&c, &a, argc, argv);

	if (status >= 0)
		return status;
	if (make_dir(c.dir) != 0)
		return CAP_OUTPUT;
	c.next_num = first_num(c.dir);
	if (input_open(&c, &a, &saved) != 0)
		return CAP_INPUT;
	status = capture_run(&c, &a);
	if (a.in == IN_SERIAL)
		tcsetattr(c.in_fd, TCSANOW, &saved);    /* as it was found */
	if (c.in_fd != STDIN_FILENO)
		close(c.in_fd);
	tool_sigpipe_close();
	return status;
}
