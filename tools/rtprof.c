/*
 * rtprof.c - the rtprof command.
 *
 *   rtprof view [options] FILE...    dumps or a profile -> Firefox Profiler
 *   rtprof record [OPTIONS] -- CMD...       (tools/record.c)
 *   rtprof summarize [OPTIONS] FILE...     (tools/summarize.c)
 *   rtprof capture INPUT -o DIR           (tools/capture.c)
 *   rtprof help [COMMAND]
 *
 * rtprof view converts dumps (tools/convert.c, the code msgpack2gecko
 * uses) into a gzip-compressed profile in an unlinked temporary file, or
 * takes a profile that is already converted, and serves it to the hosted
 * Firefox Profiler: https://profiler.firefox.com/from-url/<local URL>/
 * makes the front-end (a page of another origin) fetch() the local URL,
 * so the server must answer with CORS headers for that origin.
 *
 * The server is small on purpose: one thread, poll() over non-blocking
 * sockets, a fixed table of connections, each a little state machine
 * (read the request, send the response, linger), one response per
 * connection ("Connection: close"). What keeps it safe with bad clients:
 * - It binds 127.0.0.1 only, and serves one resource, the profile, under
 *   a random 128-bit path component (/<32 hex>/profile.json): another
 *   local user (or a web page doing DNS rebinding) cannot guess it.
 *   Request targets are compared as strings, never mapped to files, so
 *   there is no directory listing and no path traversal ("/../", "%2e%2e"
 *   are simply other strings: 404). Host must name this server (421).
 * - A request head is at most REQ_MAX bytes (431 beyond); methods other
 *   than GET, HEAD, OPTIONS get 405; malformed requests 400.
 * - Every connection has a deadline: the whole request head within
 *   REQ_TIMEOUT_MS of the accept (trickling bytes does not extend it),
 *   then progress at least every SEND_IDLE_MS while the response is sent.
 *   A slow or silent client only holds its own slot; when the table is
 *   full, new connections wait in the listen backlog until one frees.
 * - After a response, the write side is shut down and what the client
 *   still sends is read and dropped for a while (LINGER_MS) before the
 *   close: closing with unread input would reset the connection and could
 *   destroy the response before the client reads it (a 431 after a huge
 *   header, a 405 after a POST body).
 * - SIGPIPE is ignored; SIGINT/SIGTERM reach the loop through a pipe
 *   (the self-pipe trick), so a signal never races with poll().
 *
 * Context: the program has one thread, the main thread; every function
 * below runs on it (the signal handler excepted, which only writes to the
 * pipe).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "capture.h"
#include "convert.h"
#include "record.h"
#include "sigpipe.h"
#include "summarize.h"
#include "gecko.h"

#define PROG "rtprof"
#define VIEW "rtprof view"

/* The hosted Firefox Profiler: always allowed to fetch the profile. */
#define PROFILER_ORIGIN "https://profiler.firefox.com"

#define MAX_CONNS 64                    /* simultaneous connections */
#define REQ_MAX 16384                   /* request line + headers */
#define REQ_TIMEOUT_MS 10000            /* whole request head */
#define SEND_IDLE_MS 30000              /* no byte sent for this long */
#define LINGER_MS 2000                  /* drain after the response */
#define LINGER_MAX (256 * 1024)         /* bytes drained at most */
#define ORIGIN_MAX 200                  /* --allow-origin length */
#define ALLOW_HEADERS_MAX 256           /* reflected preflight headers */

extern char **environ;

/* Exit statuses of rtprof view (also in view_usage()). */
enum {
	EXIT_OK = 0,
	EXIT_DAMAGED = 1,
	EXIT_USAGE = 2,
	EXIT_SERVER = 3,
};

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: " PROG " COMMAND [options] [ARGS]\n"
	    "commands:\n"
	    "  view FILE...     show dumps or a converted profile in the\n"
	    "                   Firefox Profiler (served from this machine)\n"
	    "  record           run a program under rtprof and make its profile\n"
	    "  capture          capture a board's dump stream (serial line,\n"
	    "                   TCP, Unix socket, stdin) into files, one per\n"
	    "                   session, skipping damage\n"
	    "  summarize        blocked time, CPU per thread, top functions\n"
	    "                   of dumps or profiles (--folded: stacks)\n"
	    "  help [COMMAND]   this help, or a command's\n"
	    "'" PROG " COMMAND --help' also prints a command's help.\n");
}

static void
view_usage(FILE *f)
{
	fprintf(f,
	    "usage: " VIEW " [options] FILE...\n"
	    "Show a recording in the Firefox Profiler (" PROFILER_ORIGIN ").\n"
	    "FILE is one or more rtprof dumps, converted into one profile as\n"
	    "msgpack2gecko does (- reads a dump from stdin), or one profile\n"
	    "already converted (JSON, or gzip-compressed JSON). A small HTTP\n"
	    "server bound to 127.0.0.1 serves it, gzip-compressed, under a\n"
	    "random path; the Firefox Profiler's from-url address for it is\n"
	    "printed, and opened with xdg-open when there is a display\n"
	    "(DISPLAY or WAYLAND_DISPLAY) through a page only you can read\n"
	    "(the address is never in a command line that other users see\n"
	    "in ps). Nothing else is served. The server\n"
	    "stops on Ctrl-C (or SIGTERM), or once the profile was fetched\n"
	    "and the grace period passed.\n"
	    "options:\n"
	    "  --port N          listen on port N (default: a free port)\n"
	    "  --no-open         do not open a browser\n"
	    "  --grace S         stop S seconds after the profile was last\n"
	    "                    fetched (default 10; 0: right away)\n"
	    "  --allow-origin O  also let web pages of origin O (such as\n"
	    "                    http://127.0.0.1:8000) fetch the profile;\n"
	    "                    repeatable (" PROFILER_ORIGIN " always can)\n"
	    "  -v, --verbose     log every request on stderr\n"
	    "  -q, --quiet       no progress bar, no message for damage\n"
	    "  -h, --help        this help\n"
	    "conversion options (dumps only):\n");
	fputs(tool_convert_help, f);
	fprintf(f,
	    "exit status:\n"
	    "  0  served; stopped after the grace period or by Ctrl-C/SIGTERM\n"
	    "  1  the same, but a dump was damaged (converted what was\n"
	    "     readable; listed on stderr and in profileGatheringLog)\n"
	    "  2  usage error; a FILE unreadable, neither a dump nor a\n"
	    "     whole profile (JSON cut short, or without meta.version\n"
	    "     and threads), of a newer dump format; a --thread NAME\n"
	    "     no thread has; conversion failed\n"
	    "  3  the server could not start (port in use, ...) or failed\n");
}

static int64_t
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---- The profile: sniffing the input, preparing the gzip body. ---- */

enum input_kind {
	INPUT_DUMP,
	INPUT_JSON,             /* a converted profile, plain */
	INPUT_GZIP_JSON,        /* a converted profile, gzip-compressed */
};

/* True when @p (@n bytes) starts, after white space or a BOM, with '{'. */
static bool
looks_like_json(const unsigned char *p, size_t n)
{
	size_t i = 0;

	if (n >= 3 && p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)
		i = 3;
	while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' ||
	    p[i] == '\n'))
		i++;
	return i < n && p[i] == '{';
}

/*
 * Tell a dump from a converted profile. A dump starts with the frame sync
 * bytes "\xD4RTP" (docs/wire-format.md), a profile with '{' (JSON) or the
 * gzip magic 1f 8b followed by compressed JSON. Anything else is handed to
 * the dump reader, which finds frames after leading garbage or says that
 * the file is not a dump. Return: 0 with *@kind set, or EXIT_USAGE
 * (message printed).
 */
static int
sniff(const char *path, enum input_kind *kind)
{
	unsigned char head[512];
	ssize_t n;
	int fd;

	*kind = INPUT_DUMP;
	if (strcmp(path, "-") == 0)
		return 0;       /* stdin cannot be peeked at: a dump */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, VIEW ": %s: cannot open: %s\n", path,
		    strerror(errno));
		return EXIT_USAGE;
	}
	do
		n = read(fd, head, sizeof(head));
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		fprintf(stderr, VIEW ": %s: cannot read: %s\n", path,
		    strerror(errno));
		close(fd);
		return EXIT_USAGE;
	}
	if (n >= 4 && memcmp(head, "\xd4RTP", 4) == 0) {
		*kind = INPUT_DUMP;
	} else if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) {
		gzFile gz;
		int d = dup(fd);
		int z = -1;

		if (d >= 0 && lseek(d, 0, SEEK_SET) == 0 &&
		    (gz = gzdopen(d, "rb")) != NULL) {
			d = -1;         /* gzclose() closes it */
			z = gzread(gz, head, sizeof(head));
			gzclose(gz);
		}
		if (d >= 0)
			close(d);
		if (z > 0 && looks_like_json(head, (size_t)z))
			*kind = INPUT_GZIP_JSON;
	} else if (looks_like_json(head, (size_t)n)) {
		*kind = INPUT_JSON;
	}
	close(fd);
	return 0;
}

/* An unlinked read-write file in $TMPDIR (else /tmp). Return: fd or -1. */
static int
tmpfile_open(void)
{
	const char *dir = getenv("TMPDIR");
	char path[PATH_MAX];
	int fd;

	if (dir == NULL || dir[0] == '\0')
		dir = "/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	/* A file system without O_TMPFILE: create, then unlink at once. */
	if (snprintf(path, sizeof(path), "%s/rtprof-view-XXXXXX", dir) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		unlink(path);
	return fd;
}

/* Open @tmp for gzip writing; @tmp itself stays open. NULL on failure. */
static gzFile
gz_on(int tmp)
{
	int d = dup(tmp);
	gzFile gz;

	if (d < 0)
		return NULL;
	gz = gzdopen(d, "wb6");
	if (gz == NULL)
		close(d);
	return gz;
}

/* gzip the plain JSON profile @path into @tmp. Return: 0 or EXIT_USAGE. */
static int
gzip_file(const char *path, int tmp)
{
	char buf[65536];
	struct tool_out o = { .fd = -1 };
	ssize_t n;
	int fd, rc = 0, zr;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, VIEW ": %s: cannot open: %s\n", path,
		    strerror(errno));
		return EXIT_USAGE;
	}
	o.gz = gz_on(tmp);
	if (o.gz == NULL) {
		fprintf(stderr, VIEW ": cannot start gzip\n");
		close(fd);
		return EXIT_USAGE;
	}
	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, VIEW ": %s: cannot read: %s\n", path,
			    strerror(errno));
			rc = EXIT_USAGE;
			break;
		}
		if (n == 0)
			break;
		if (tool_out_write(&o, buf, (size_t)n) != 0) {
			rc = -1;
			break;
		}
	}
	close(fd);
	zr = gzclose(o.gz);
	if (rc == -1 || (rc == 0 && zr != Z_OK)) {
		fprintf(stderr, VIEW ": writing the temporary file failed\n");
		rc = EXIT_USAGE;
	}
	return rc;
}

/*
 * prepare - make the gzip body to serve from the FILEs @in[0..@nin).
 * Return: EXIT_OK or EXIT_DAMAGED with *@fd (open, read from offset 0 on)
 * and *@len set; EXIT_USAGE (message printed).
 */
static int
prepare(char **in, int nin, const struct tool_convert_opts *opts,
    bool quiet, int *fd, off_t *len)
{
	enum input_kind kind = INPUT_DUMP;
	struct stat sb;
	int status = EXIT_OK, tmp, ndumps = 0, nprof = 0;

	for (int i = 0; i < nin; i++) {
		enum input_kind k;

		if (sniff(in[i], &k) != 0)
			return EXIT_USAGE;
		if (k == INPUT_DUMP)
			ndumps++;
		else
			nprof++;
		if (i == 0 || k != INPUT_DUMP)
			kind = k;
	}
	/* One URL shows one profile, and profiles cannot be merged. */
	if (nprof > 1 || (nprof == 1 && ndumps != 0)) {
		fprintf(stderr, VIEW ": give one converted profile, or "
		    "dumps only (they become one profile)\n");
		return EXIT_USAGE;
	}
	/* Never serve what the Firefox Profiler cannot load: checked whole. */
	if (nprof == 1 && summarize_check_profile(VIEW, in[0]) != 0)
		return EXIT_USAGE;
	if (kind == INPUT_GZIP_JSON) {
		/* Served as it is: the bytes are already what we send. */
		*fd = open(in[0], O_RDONLY | O_CLOEXEC);
		if (*fd < 0 || fstat(*fd, &sb) != 0) {
			fprintf(stderr, VIEW ": %s: cannot open: %s\n", in[0],
			    strerror(errno));
			if (*fd >= 0)
				close(*fd);
			return EXIT_USAGE;
		}
		*len = sb.st_size;
		return EXIT_OK;
	}
	tmp = tmpfile_open();
	if (tmp < 0) {
		fprintf(stderr, VIEW ": cannot create a temporary file: %s\n",
		    strerror(errno));
		return EXIT_USAGE;
	}
	if (kind == INPUT_JSON) {
		status = gzip_file(in[0], tmp);
	} else {
		struct tool_out o = { .fd = -1, .gz = gz_on(tmp) };
		const struct tool_convert_sink sink = {
			.write = tool_out_write, .ctx = &o,
		};
		bool opened;
		int werr, zr;

		if (o.gz == NULL) {
			fprintf(stderr, VIEW ": cannot start gzip\n");
			close(tmp);
			return EXIT_USAGE;
		}
		status = tool_convert(VIEW, in, nin, opts, quiet,
		    !quiet && isatty(STDERR_FILENO), &sink, &opened, &werr);
		zr = gzclose(o.gz);
		if (status != EXIT_USAGE && zr != Z_OK)
			werr = -EIO;
		if (werr != 0) {
			fprintf(stderr, VIEW ": writing the temporary file: "
			    "%s\n", strerror(-werr));
			status = EXIT_USAGE;
		}
	}
	if (status == EXIT_USAGE || fstat(tmp, &sb) != 0) {
		close(tmp);
		return EXIT_USAGE;
	}
	*fd = tmp;
	*len = sb.st_size;
	return status;
}

/* ---- The server. ---- */

enum conn_state {
	CONN_FREE,
	CONN_READ,      /* reading the request head */
	CONN_SEND,      /* sending the response head, then the body */
	CONN_LINGER,    /* write side shut down, dropping input until EOF */
};

struct conn {
	enum conn_state state;
	int fd;
	int64_t deadline;               /* ms, now_ms() clock */
	size_t req_len;
	char req[REQ_MAX + 1];          /* + a NUL for the parser */
	char head[2048];                /* the response head */
	size_t head_len, head_off;
	off_t body_off, body_end;       /* profile bytes still to send */
	bool profile;                   /* a GET of the profile */
	size_t drained;
};

struct server {
	int lfd;                        /* listening socket */
	int sig_fd;                     /* read end of the signal pipe */
	uint16_t port;
	char path[64];                  /* "/<32 hex>/profile.json" */
	char host_ip[32], host_name[32];/* accepted Host values */
	int body_fd;
	off_t body_len;
	const char *const *origins;     /* allowed Origin values */
	size_t norigins;
	bool verbose;
	struct conn *conns;             /* MAX_CONNS */
	unsigned fetched;               /* complete GETs of the profile */
	int64_t grace_ms;
	int64_t stop_at;                /* 0: not fetched yet */
};

static void
conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->state = CONN_FREE;
}

/* Case-insensitive compare of the header name [@p, @p + @n) with @name. */
static bool
name_is(const char *p, size_t n, const char *name)
{
	return strlen(name) == n && strncasecmp(p, name, n) == 0;
}

/* The preflight's Access-Control-Request-Headers, reflected when sane. */
static bool
header_list_ok(const char *v)
{
	size_t n = strlen(v);

	if (n == 0 || n > ALLOW_HEADERS_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)v[i];

		if (!(ch == '-' || ch == '_' || ch == ',' || ch == ' ' ||
		    (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= 'A' && ch <= 'Z')))
			return false;
	}
	return true;
}

/* What the parser took from the request head. */
struct request {
	const char *method;
	const char *target;
	const char *origin;             /* NULL when absent */
	const char *host;
	const char *acr_headers;        /* Access-Control-Request-Headers */
	bool acr_pna;                   /* ...-Request-Private-Network: true */
};

/*
 * Queue the response head on @c: status @code, the common headers, then
 * @extra (whole header lines); @r is NULL when the request was unreadable.
 */
static void
respond(struct server *s, struct conn *c, const struct request *r, int code,
    const char *reason, const char *extra)
{
	const char *origin = PROFILER_ORIGIN;
	int n;

	/*
	 * CORS: a web page may read the response only when this header
	 * names its origin. The Firefox Profiler's origin by default; the
	 * request's Origin only when it is one of the allowed ones (exact
	 * match), so no other page can read the profile. "Vary: Origin"
	 * because the answer depends on it.
	 */
	if (r != NULL && r->origin != NULL) {
		for (size_t i = 0; i < s->norigins; i++) {
			if (strcmp(r->origin, s->origins[i]) == 0) {
				origin = s->origins[i];
				break;
			}
		}
	}
	n = snprintf(c->head, sizeof(c->head),
	    "HTTP/1.1 %d %s\r\n"
	    "Access-Control-Allow-Origin: %s\r\n"
	    "Vary: Origin\r\n"
	    "Cache-Control: no-store\r\n"
	    "X-Content-Type-Options: nosniff\r\n"
	    "Connection: close\r\n"
	    "%s"
	    "\r\n",
	    code, reason, origin, extra);
	/* Bounded: origins and reflected headers are length-checked. */
	if (n < 0 || (size_t)n >= sizeof(c->head))
		n = snprintf(c->head, sizeof(c->head), "HTTP/1.1 500 Internal "
		    "Server Error\r\nConnection: close\r\nContent-Length: 0"
		    "\r\n\r\n");
	c->head_len = (size_t)n;
	c->head_off = 0;
	c->body_off = c->body_end = 0;
	c->profile = false;
	c->state = CONN_SEND;
	c->deadline = now_ms() + SEND_IDLE_MS;
	if (s->verbose)
		fprintf(stderr, VIEW ": %s %.80s -> %d\n",
		    r != NULL ? r->method : "-", r != NULL ? r->target : "-",
		    code);
}

/* An error response with a short text body. */
static void
respond_error(struct server *s, struct conn *c, const struct request *r,
    int code, const char *reason, const char *extra)
{
	char hdr[160], body[96];

	snprintf(body, sizeof(body), "%d %s\n", code, reason);
	snprintf(hdr, sizeof(hdr), "%sContent-Type: text/plain; "
	    "charset=utf-8\r\nContent-Length: %zu\r\n", extra, strlen(body));
	respond(s, c, r, code, reason, hdr);
	/* The body fits: the head buffer is much larger than both. */
	if (c->head_len + strlen(body) < sizeof(c->head)) {
		memcpy(c->head + c->head_len, body, strlen(body));
		c->head_len += strlen(body);
	}
}

/* Is @host (a Host header value) this server? */
static bool
host_ok(const struct server *s, const char *host)
{
	return strcasecmp(host, s->host_ip) == 0 ||
	    strcasecmp(host, s->host_name) == 0;
}

/*
 * Parse the complete request head in @c->req (NUL-terminated, ends with
 * an empty line) and queue the response.
 */
static void
handle_request(struct server *s, struct conn *c)
{
	struct request r = { .method = "-", .target = "-" };
	char *p = c->req, *eol, *sp1, *sp2, *q;
	char extra[512];
	size_t tlen;

	/* Request line: METHOD SP TARGET SP HTTP/1.x */
	eol = strchr(p, '\n');
	if (eol == NULL || memchr(c->req, '\0', c->req_len) != NULL)
		goto bad;
	if (eol > p && eol[-1] == '\r')
		eol[-1] = '\0';
	*eol = '\0';
	sp1 = strchr(p, ' ');
	if (sp1 == NULL)
		goto bad;
	*sp1 = '\0';
	sp2 = strchr(sp1 + 1, ' ');
	if (sp2 == NULL)
		goto bad;
	*sp2 = '\0';
	r.method = p;
	r.target = sp1 + 1;
	if (r.method[0] == '\0' || r.target[0] == '\0' ||
	    (strcmp(sp2 + 1, "HTTP/1.1") != 0 &&
	    strcmp(sp2 + 1, "HTTP/1.0") != 0))
		goto bad;
	for (q = p; *q != '\0'; q++)
		if (!(*q >= 'A' && *q <= 'Z') && *q != '-' && *q != '_')
			goto bad;
	/* Printable ASCII only (RFC 3986: the rest is percent-encoded). */
	for (q = sp1 + 1; *q != '\0'; q++)
		if ((unsigned char)*q <= ' ' || (unsigned char)*q >= 0x7f)
			goto bad;

	/* Header fields: NAME ":" OWS VALUE OWS. */
	p = eol + 1;
	for (;;) {
		char *colon, *v, *end;

		eol = strchr(p, '\n');
		if (eol == NULL)
			goto bad;
		end = eol;
		if (end > p && end[-1] == '\r')
			end--;
		if (end == p)
			break;          /* the empty line */
		*end = '\0';
		if (*p == ' ' || *p == '\t')
			goto bad;       /* obsolete line folding */
		colon = strchr(p, ':');
		if (colon == NULL || colon == p)
			goto bad;
		for (q = p; q < colon; q++)
			if ((unsigned char)*q <= ' ' || *q == 0x7f)
				goto bad;
		v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		for (q = v + strlen(v); q > v && (q[-1] == ' ' ||
		    q[-1] == '\t'); q--)
			q[-1] = '\0';
		if (name_is(p, (size_t)(colon - p), "Origin"))
			r.origin = v;
		else if (name_is(p, (size_t)(colon - p), "Host"))
			r.host = v;
		else if (name_is(p, (size_t)(colon - p),
		    "Access-Control-Request-Headers"))
			r.acr_headers = v;
		else if (name_is(p, (size_t)(colon - p),
		    "Access-Control-Request-Private-Network"))
			r.acr_pna = strcasecmp(v, "true") == 0;
		p = eol + 1;
	}

	if (strcmp(r.method, "GET") != 0 && strcmp(r.method, "HEAD") != 0 &&
	    strcmp(r.method, "OPTIONS") != 0) {
		respond_error(s, c, &r, 405, "Method Not Allowed",
		    "Allow: GET, HEAD, OPTIONS\r\n");
		return;
	}
	/* A Host naming another server: DNS rebinding, or a mistake. */
	if (r.host != NULL && !host_ok(s, r.host)) {
		respond_error(s, c, &r, 421, "Misdirected Request", "");
		return;
	}
	/* The one resource; a query string is ignored, nothing decoded. */
	tlen = strcspn(r.target, "?");
	if (tlen != strlen(s->path) || memcmp(r.target, s->path, tlen) != 0) {
		respond_error(s, c, &r, 404, "Not Found", "");
		return;
	}

	if (strcmp(r.method, "OPTIONS") == 0) {
		/*
		 * The CORS preflight. The profiler's plain fetch() needs
		 * none, but Chrome's Private Network Access sends one before
		 * a public page (https://profiler.firefox.com) may reach a
		 * loopback address, and wants the PNA answer.
		 */
		snprintf(extra, sizeof(extra),
		    "Allow: GET, HEAD, OPTIONS\r\n"
		    "Access-Control-Allow-Methods: GET, HEAD, OPTIONS\r\n"
		    "%s%s%s"
		    "%s"
		    "Access-Control-Max-Age: 600\r\n"
		    "Content-Length: 0\r\n",
		    r.acr_headers != NULL && header_list_ok(r.acr_headers) ?
		    "Access-Control-Allow-Headers: " : "",
		    r.acr_headers != NULL && header_list_ok(r.acr_headers) ?
		    r.acr_headers : "",
		    r.acr_headers != NULL && header_list_ok(r.acr_headers) ?
		    "\r\n" : "",
		    r.acr_pna ? "Access-Control-Allow-Private-Network: true\r\n" :
		    "");
		respond(s, c, &r, 204, "No Content", extra);
		return;
	}
	/*
	 * The profile, always gzip-compressed: every browser accepts
	 * Content-Encoding gzip (the Firefox Profiler's fetch() gets the
	 * JSON transparently), and a client that did not ask for it can
	 * still gunzip the body, so the bytes need no second form.
	 */
	snprintf(extra, sizeof(extra),
	    "Content-Type: application/json\r\n"
	    "Content-Encoding: gzip\r\n"
	    "Content-Length: %jd\r\n", (intmax_t)s->body_len);
	respond(s, c, &r, 200, "OK", extra);
	if (strcmp(r.method, "GET") == 0) {
		c->body_off = 0;
		c->body_end = s->body_len;
		c->profile = true;
	}
	return;
bad:
	respond_error(s, c, NULL, 400, "Bad Request", "");
}

/* Find the end of the request head in @c->req; the new bytes start at @from. */
static bool
head_complete(const struct conn *c, size_t from)
{
	size_t i = from >= 3 ? from - 3 : 0;

	for (; i < c->req_len; i++) {
		if (c->req[i] != '\n')
			continue;
		if (i + 1 < c->req_len && c->req[i + 1] == '\n')
			return true;
		if (i + 2 < c->req_len && c->req[i + 1] == '\r' &&
		    c->req[i + 2] == '\n')
			return true;
	}
	return false;
}

/* Shut the write side and drop what the client still sends, for a while. */
static void
conn_linger(struct conn *c)
{
	shutdown(c->fd, SHUT_WR);
	c->state = CONN_LINGER;
	c->drained = 0;
	c->deadline = now_ms() + LINGER_MS;
}

static void
on_readable(struct server *s, struct conn *c)
{
	char drop[4096];
	ssize_t n;

	if (c->state == CONN_LINGER) {
		for (;;) {
			n = recv(c->fd, drop, sizeof(drop), 0);
			if (n > 0) {
				c->drained += (size_t)n;
				if (c->drained > LINGER_MAX)
					break;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return;
			break;          /* EOF or error */
		}
		conn_close(c);
		return;
	}
	for (;;) {
		size_t before = c->req_len;

		if (c->req_len == REQ_MAX) {
			/* Full and not complete: too large a head. */
			c->req[c->req_len] = '\0';
			respond_error(s, c, NULL, 431, "Request Header Fields "
			    "Too Large", "");
			return;
		}
		n = recv(c->fd, c->req + c->req_len, REQ_MAX - c->req_len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			conn_close(c);  /* gone before a complete request */
			return;
		}
		c->req_len += (size_t)n;
		if (head_complete(c, before)) {
			c->req[c->req_len] = '\0';
			handle_request(s, c);
			return;
		}
	}
}

static void
on_writable(struct server *s, struct conn *c)
{
	ssize_t n;

	while (c->head_off < c->head_len) {
		n = send(c->fd, c->head + c->head_off, c->head_len -
		    c->head_off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			conn_close(c);
			return;
		}
		c->head_off += (size_t)n;
		c->deadline = now_ms() + SEND_IDLE_MS;
	}
	/* The body straight from the file (sendfile: no copy, no buffer). */
	while (c->body_off < c->body_end) {
		off_t left = c->body_end - c->body_off;

		n = sendfile(c->fd, s->body_fd, &c->body_off,
		    left > (1 << 20) ? (size_t)(1 << 20) : (size_t)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			/* n == 0: the file shrank under us; give up. */
			conn_close(c);
			return;
		}
		c->deadline = now_ms() + SEND_IDLE_MS;
	}
	if (c->profile) {
		c->profile = false;
		s->fetched++;
		s->stop_at = now_ms() + s->grace_ms;
		printf(VIEW ": the profile was fetched (%jd bytes); stopping "
		    "in %.3g s (Ctrl-C stops now)\n", (intmax_t)s->body_len,
		    (double)s->grace_ms / 1000.0);
		fflush(stdout);
	}
	conn_linger(c);
}

static void
on_accept(struct server *s)
{
	for (;;) {
		struct conn *c = NULL;
		int fd;

		for (int i = 0; i < MAX_CONNS; i++) {
			if (s->conns[i].state == CONN_FREE) {
				c = &s->conns[i];
				break;
			}
		}
		if (c == NULL)
			return;         /* the rest wait in the backlog */
		fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;         /* EAGAIN, or a client already gone */
		c->fd = fd;
		c->state = CONN_READ;
		c->req_len = 0;
		c->deadline = now_ms() + REQ_TIMEOUT_MS;
	}
}

/* Deal with connections whose deadline passed. */
static void
on_deadlines(struct server *s, int64_t now)
{
	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &s->conns[i];

		if (c->state == CONN_FREE || now < c->deadline)
			continue;
		if (c->state == CONN_READ && c->req_len != 0) {
			/* Tell a client that sent part of a request. */
			c->req[c->req_len] = '\0';
			respond_error(s, c, NULL, 408, "Request Timeout", "");
			c->deadline = now + LINGER_MS;
		} else {
			conn_close(c);  /* silent, stalled, or done lingering */
		}
	}
}

/* True while a profile body is being sent (do not stop under it). */
static bool
sending_profile(const struct server *s)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (s->conns[i].state == CONN_SEND && s->conns[i].profile)
			return true;
	return false;
}

/*
 * server_run - serve until a signal, or the grace period after a fetch.
 * Return: EXIT_OK, or EXIT_SERVER (message printed).
 */
static int
server_run(struct server *s)
{
	struct pollfd pfd[MAX_CONNS + 2];
	int who[MAX_CONNS + 2];

	for (;;) {
		int64_t now = now_ms(), next = -1;
		int n = 0, timeout, r;
		bool free_slot = false;

		on_deadlines(s, now);
		if (s->stop_at != 0 && now >= s->stop_at &&
		    !sending_profile(s)) {
			printf(VIEW ": stopped: the profile was fetched "
			    "(%u time%s) and the grace period passed\n",
			    s->fetched, s->fetched == 1 ? "" : "s");
			return EXIT_OK;
		}
		if (s->stop_at != 0)
			next = s->stop_at;
		pfd[n] = (struct pollfd){ .fd = s->sig_fd, .events = POLLIN };
		who[n++] = -1;
		for (int i = 0; i < MAX_CONNS; i++) {
			struct conn *c = &s->conns[i];

			if (c->state == CONN_FREE) {
				free_slot = true;
				continue;
			}
			pfd[n] = (struct pollfd){ .fd = c->fd,
			    .events = c->state == CONN_SEND ? POLLOUT : POLLIN };
			who[n++] = i;
			if (next < 0 || c->deadline < next)
				next = c->deadline;
		}
		/*
		 * The listener only while a slot is free: polling it when
		 * the table is full would return at once, again and again
		 * (a busy loop); the connections wait in the backlog.
		 */
		if (free_slot) {
			pfd[n] = (struct pollfd){ .fd = s->lfd,
			    .events = POLLIN };
			who[n++] = -2;
		}
		timeout = next < 0 ? -1 : next <= now ? 0 :
		    next - now > INT_MAX ? INT_MAX : (int)(next - now);
		r = poll(pfd, (nfds_t)n, timeout);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, VIEW ": poll: %s\n", strerror(errno));
			return EXIT_SERVER;
		}
		for (int k = 0; k < n && r > 0; k++) {
			struct conn *c;

			if (pfd[k].revents == 0)
				continue;
			if (who[k] == -1) {
				unsigned char sig = 0;

				if (read(s->sig_fd, &sig, 1) == 1) {
					printf(VIEW ": stopped by %s; the "
					    "profile was fetched %u time%s\n",
					    sig == SIGINT ? "Ctrl-C (SIGINT)" :
					    "SIGTERM", s->fetched,
					    s->fetched == 1 ? "" : "s");
					return EXIT_OK;
				}
				continue;
			}
			if (who[k] == -2) {
				on_accept(s);
				continue;
			}
			c = &s->conns[who[k]];
			if (c->state == CONN_SEND &&
			    (pfd[k].revents & (POLLOUT | POLLERR | POLLHUP)))
				on_writable(s, c);
			else if (c->state != CONN_SEND && (pfd[k].revents &
			    (POLLIN | POLLERR | POLLHUP)))
				on_readable(s, c);
			else if (pfd[k].revents & POLLNVAL)
				conn_close(c);
		}
	}
}

/* Bind 127.0.0.1:@port (0: any free port). Return: 0, or EXIT_SERVER. */
static int
server_listen(struct server *s, unsigned port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (s->lfd < 0) {
		fprintf(stderr, VIEW ": socket: %s\n", strerror(errno));
		return EXIT_SERVER;
	}
	/* Restarting on the same --port right after a run (TIME_WAIT). */
	setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(s->lfd, 64) != 0 ||
	    getsockname(s->lfd, (struct sockaddr *)&a, &alen) != 0) {
		fprintf(stderr, VIEW ": cannot listen on 127.0.0.1:%u: %s\n",
		    port, strerror(errno));
		return EXIT_SERVER;
	}
	s->port = ntohs(a.sin_port);
	snprintf(s->host_ip, sizeof(s->host_ip), "127.0.0.1:%u", s->port);
	snprintf(s->host_name, sizeof(s->host_name), "localhost:%u", s->port);
	return 0;
}

/* 16 random bytes as 32 hex digits in @out[33]. Return: 0 or -1. */
static int
random_hex(char out[33])
{
	unsigned char b[16];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return 0;
}

/* encodeURIComponent(@in) into @out (@n bytes, enough: 3 per byte + 1). */
static void
percent_encode(const char *in, char *out, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *in != '\0' && o + 4 <= n; in++) {
		unsigned char ch = (unsigned char)*in;

		if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || strchr("-_.!~*'()", ch)) {
			out[o++] = (char)ch;
		} else {
			out[o++] = '%';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		}
	}
	out[o] = '\0';
}

/*
 * The page the browser is opened with. The from-url address carries the
 * profile's secret path, and an argument is public: any local user reads
 * it in ps (xdg-open's, then the browser's). So the opener gets the path
 * of a page only this user can read (mode 0600 in a fresh 0700
 * directory, in $XDG_RUNTIME_DIR, else $TMPDIR, else /tmp), which sends
 * the browser on to the address; nothing in an argument or in the
 * environment fetches the profile. Removed when the server stops.
 */
struct open_page {
	char dir[PATH_MAX];
	char file[PATH_MAX + 16];
};

static const char *
page_base(void)
{
	static const char *const vars[] = { "XDG_RUNTIME_DIR", "TMPDIR" };

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *d = getenv(vars[i]);

		if (d != NULL && d[0] == '/')
			return d;
	}
	return "/tmp";
}

/* Write the redirecting page for @from_url to the open descriptor @fd. */
static int
page_write(int fd, const char *from_url)
{
	FILE *f = fdopen(fd, "w");
	int rc;

	if (f == NULL) {
		close(fd);
		return -1;
	}
	/* @from_url is percent-encoded: no quote, no '<' or '&' in it. */
	fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
	    "<meta name=\"referrer\" content=\"no-referrer\">\n"
	    "<meta http-equiv=\"refresh\" content=\"0; url=%s\">\n"
	    "<title>rtprof view</title></head>\n"
	    "<body><p>Opening <a href=\"%s\">the profile in the Firefox "
	    "Profiler</a>.</p>\n<script>location.replace(\"%s\");</script>"
	    "\n</body></html>\n", from_url, from_url, from_url);
	rc = ferror(f) ? -1 : 0;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

/* Make @pg for @from_url. Return: 0, or -1 (message printed). */
static int
page_create(struct open_page *pg, const char *from_url)
{
	int fd;

	pg->file[0] = '\0';
	if (snprintf(pg->dir, sizeof(pg->dir), "%s/rtprof-view-XXXXXX",
	    page_base()) >= (int)sizeof(pg->dir) || mkdtemp(pg->dir) == NULL) {
		fprintf(stderr, VIEW ": cannot make a private directory in "
		    "%s: %s\n", page_base(), strerror(errno));
		pg->dir[0] = '\0';
		return -1;
	}
	snprintf(pg->file, sizeof(pg->file), "%s/open.html", pg->dir);
	fd = open(pg->file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd < 0 || page_write(fd, from_url) != 0) {
		fprintf(stderr, VIEW ": cannot write %s: %s\n", pg->file,
		    strerror(errno));
		return -1;
	}
	return 0;
}

static void
page_remove(struct open_page *pg)
{
	if (pg->file[0] != '\0')
		unlink(pg->file);
	if (pg->dir[0] != '\0')
		rmdir(pg->dir);
	pg->file[0] = pg->dir[0] = '\0';
}

/*
 * Open @url with the desktop's opener (xdg-open), not waiting for it.
 * The opener may start the browser itself and wait for it (xdg-open
 * does on a desktop it does not know), so it runs in a session of its
 * own: the Ctrl-C that stops this server (sent to the terminal's
 * foreground process group) must not kill the browser just opened. It
 * gets the signal dispositions and mask of a normal start, not our
 * ignored SIGPIPE. Return: its pid, or -1 (message printed).
 */
static pid_t
open_browser(const char *url)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	char *argv[] = { "xdg-open", (char *)url, NULL };
	pid_t pid;
	int rc;

	posix_spawn_file_actions_init(&fa);
	/* Its chatter would mix with our messages; errors still show. */
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null",
	    O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null",
	    O_WRONLY, 0);
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGTERM);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID |
	    POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawnp(&pid, "xdg-open", &fa, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		fprintf(stderr, VIEW ": cannot run xdg-open (%s): open the "
		    "address above in a browser\n", strerror(rc));
		return -1;
	}
	return pid;
}

static bool
origin_ok(const char *o)
{
	size_t n = strlen(o);

	if (n > ORIGIN_MAX || n == 0 || o[n - 1] == '/')
		return false;
	if (strncmp(o, "http://", 7) != 0 && strncmp(o, "https://", 8) != 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)o[i] <= ' ' || o[i] == 0x7f)
			return false;
	return true;
}

static bool
parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	return errno == 0 && end != s && *end == '\0' && s[0] != '-' &&
	    *v <= max;
}

/*
 * cmd_view - rtprof view [options] FILE...
 * Context: main thread.
 * Return: exit status (see view_usage()).
 */
static int
cmd_view(int argc, char **argv)
{
	struct tool_convert_opts opts;
	struct server s = { .lfd = -1, .sig_fd = -1, .body_fd = -1 };
	const char **origins = NULL;
	char **in = NULL;
	char hex[33], url[128], enc[3 * sizeof(url) + 1];
	char from_url[sizeof(enc) + 64];
	struct open_page page = { .dir = "", .file = "" };
	unsigned long port = 0;
	double grace = 10.0;
	bool no_open = false, quiet = false, opts_done = false;
	static const int sigs[] = { SIGINT, SIGTERM };
	int nin = 0, status, prep, r;
	pid_t opener = -1;

	if (tool_convert_opts_init(&opts, VIEW, argc) != 0)
		return EXIT_USAGE;
	in = calloc((size_t)argc + 1, sizeof(*in));
	origins = calloc((size_t)argc + 2, sizeof(*origins));
	if (in == NULL || origins == NULL) {
		fprintf(stderr, VIEW ": out of memory\n");
		status = EXIT_USAGE;
		goto done;
	}
	origins[s.norigins++] = PROFILER_ORIGIN;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has_arg = !opts_done && (strcmp(a, "--port") == 0 ||
		    strcmp(a, "--grace") == 0 ||
		    strcmp(a, "--allow-origin") == 0);

		if (has_arg && i + 1 >= argc) {
			fprintf(stderr, VIEW ": %s needs an argument\n", a);
			status = EXIT_USAGE;
			goto done;
		}
		if (has_arg && strcmp(a, "--port") == 0) {
			if (!parse_uint(argv[++i], 65535, &port)) {
				fprintf(stderr, VIEW ": --port: not a port "
				    "number: %s\n", argv[i]);
				status = EXIT_USAGE;
				goto done;
			}
		} else if (has_arg && strcmp(a, "--grace") == 0) {
			char *end;

			errno = 0;
			grace = strtod(argv[++i], &end);
			if (errno != 0 || end == argv[i] || *end != '\0' ||
			    !(grace >= 0 && grace <= 1e6)) {
				fprintf(stderr, VIEW ": --grace: not a number "
				    "of seconds (0 to 1e6): %s\n", argv[i]);
				status = EXIT_USAGE;
				goto done;
			}
		} else if (has_arg) {
			if (!origin_ok(argv[++i])) {
				fprintf(stderr, VIEW ": --allow-origin: not an "
				    "origin (http[s]://host[:port], no path): "
				    "%s\n", argv[i]);
				status = EXIT_USAGE;
				goto done;
			}
			origins[s.norigins++] = argv[i];
		} else if (!opts_done && (r = tool_convert_option(&opts, VIEW,
		    argc, argv, &i)) != 0) {
			if (r < 0) {
				status = EXIT_USAGE;
				goto done;
			}
		} else if (!opts_done && strcmp(a, "--no-open") == 0) {
			no_open = true;
		} else if (!opts_done && (strcmp(a, "-v") == 0 ||
		    strcmp(a, "--verbose") == 0)) {
			s.verbose = true;
		} else if (!opts_done && (strcmp(a, "-q") == 0 ||
		    strcmp(a, "--quiet") == 0)) {
			quiet = true;
		} else if (!opts_done && (strcmp(a, "-h") == 0 ||
		    strcmp(a, "--help") == 0)) {
			view_usage(stdout);
			status = EXIT_OK;
			goto done;
		} else if (!opts_done && strcmp(a, "--") == 0) {
			opts_done = true;
		} else if (!opts_done && a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, VIEW ": unknown option %s\n", a);
			view_usage(stderr);
			status = EXIT_USAGE;
			goto done;
		} else {
			in[nin++] = argv[i];
		}
	}
	for (int i = 0, stdin_used = 0; i < nin; i++) {
		if (strcmp(in[i], "-") == 0 && stdin_used++) {
			fprintf(stderr, VIEW ": stdin (-) given twice\n");
			status = EXIT_USAGE;
			goto done;
		}
	}
	if (nin == 0) {
		view_usage(stderr);
		status = EXIT_USAGE;
		goto done;
	}
	if (tool_convert_check(&opts, VIEW) != 0) {
		status = EXIT_USAGE;
		goto done;
	}
	s.origins = origins;
	s.grace_ms = (int64_t)(grace * 1000.0 + 0.5);

	prep = prepare(in, nin, &opts, quiet, &s.body_fd, &s.body_len);
	if (prep == EXIT_USAGE) {
		status = EXIT_USAGE;
		goto done;
	}

	/* Signals before the socket: a Ctrl-C from now on is a clean stop. */
	if ((s.sig_fd = tool_sigpipe_open(sigs, 2)) < 0) {
		fprintf(stderr, VIEW ": pipe: %s\n", strerror(errno));
		status = EXIT_SERVER;
		goto done;
	}

	s.conns = calloc(MAX_CONNS, sizeof(*s.conns));
	if (s.conns == NULL) {
		fprintf(stderr, VIEW ": out of memory\n");
		status = EXIT_SERVER;
		goto done;
	}
	for (int i = 0; i < MAX_CONNS; i++)
		s.conns[i].fd = -1;
	if (random_hex(hex) != 0) {
		fprintf(stderr, VIEW ": getrandom: %s\n", strerror(errno));
		status = EXIT_SERVER;
		goto done;
	}
	snprintf(s.path, sizeof(s.path), "/%s/profile.json", hex);
	status = server_listen(&s, (unsigned)port);
	if (status != 0)
		goto done;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", s.port, s.path);
	percent_encode(url, enc, sizeof(enc));
	snprintf(from_url, sizeof(from_url), PROFILER_ORIGIN
	    "/from-url/%s/", enc);
	printf(VIEW ": serving the profile (%.1f kB gzip) at %s\n"
	    VIEW ": open it in the Firefox Profiler: %s\n",
	    (double)s.body_len / 1e3, url, from_url);
	if (!no_open && ((getenv("DISPLAY") != NULL &&
	    getenv("DISPLAY")[0] != '\0') ||
	    (getenv("WAYLAND_DISPLAY") != NULL &&
	    getenv("WAYLAND_DISPLAY")[0] != '\0'))) {
		fflush(stdout);
		if (page_create(&page, from_url) == 0) {
			printf(VIEW ": opening it with xdg-open, through %s (a "
			    "page only you can read)\n", page.file);
			fflush(stdout);
			opener = open_browser(page.file);
		}
	} else if (!no_open) {
		printf(VIEW ": no display: open the address above in a "
		    "browser\n");
	}
	printf(VIEW ": Ctrl-C stops; stops by itself %.3g s after the "
	    "profile was fetched\n", grace);
	fflush(stdout);

	status = server_run(&s);
	fflush(stdout);
	if (status == EXIT_OK)
		status = prep;
done:
	page_remove(&page);
	if (opener > 0)
		waitpid(opener, NULL, WNOHANG);
	if (s.conns != NULL)
		for (int i = 0; i < MAX_CONNS; i++)
			if (s.conns[i].state != CONN_FREE)
				conn_close(&s.conns[i]);
	free(s.conns);
	if (s.lfd >= 0)
		close(s.lfd);
	if (s.body_fd >= 0)
		close(s.body_fd);
	free(in);
	free(origins);
	tool_convert_opts_free(&opts);
	return status;
}

/*
 * main - dispatch to the subcommand.
 * Context: main thread.
 * Return: the subcommand's exit status; 2 for a usage error.
 */
int
main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (cmd == NULL) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(cmd, "help") == 0) {
		if (argc > 2 && strcmp(argv[2], "view") == 0) {
			view_usage(stdout);
			return EXIT_OK;
		}
		if (argc > 2 && strcmp(argv[2], "record") == 0) {
			record_usage(stdout);
			return EXIT_OK;
		}
		if (argc > 2 && strcmp(argv[2], "summarize") == 0) {
			summarize_usage(stdout);
			return EXIT_OK;
		}
		if (argc > 2 && strcmp(argv[2], "capture") == 0) {
			capture_usage(stdout);
			return EXIT_OK;
		}
		if (argc > 2) {
			fprintf(stderr, PROG ": no command %s\n", argv[2]);
			usage(stderr);
			return EXIT_USAGE;
		}
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(cmd, "view") == 0)
		return cmd_view(argc - 1, argv + 1);
	if (strcmp(cmd, "record") == 0)
		return cmd_record(argc - 1, argv + 1);
	if (strcmp(cmd, "summarize") == 0)
		return cmd_summarize(argc - 1, argv + 1);
	if (strcmp(cmd, "capture") == 0)
		return cmd_capture(argc - 1, argv + 1);
	fprintf(stderr, PROG ": unknown command %s\n", cmd);
	usage(stderr);
	return EXIT_USAGE;
}
