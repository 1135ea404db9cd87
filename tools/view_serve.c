/*
 * view_serve.c - the HTTP server of `rtprof view`: it serves one resource,
 * the profile tools/view_prepare.c made, to the hosted Firefox Profiler.
 * https://profiler.firefox.com/from-url/<local URL>/ makes the front-end
 * (a page of another origin) fetch() the local URL, so the server must
 * answer with CORS headers for that origin.
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
 * Context: main thread (the signal handler, tools/sigpipe.c, only writes
 * to the pipe).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
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
#include <time.h>
#include <unistd.h>

#include "monotonic.h"
#include "view_int.h"

#define REQ_TIMEOUT_MS 10000            /* whole request head */
#define SEND_IDLE_MS 30000              /* no byte sent for this long */
#define LINGER_MS 2000                  /* drain after the response */
#define LINGER_MAX (256 * 1024)         /* bytes drained at most */
#define ALLOW_HEADERS_MAX 256           /* reflected preflight headers */


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
	c->deadline = tool_now_ms() + SEND_IDLE_MS;
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
 * The request line of the head @req (@len bytes, NUL-terminated): METHOD
 * SP TARGET SP HTTP/1.x, cut in place into @r. Return: the first header
 * line, or NULL when the line is malformed.
 */
static char *
parse_request_line(char *req, size_t len, struct request *r)
{
	char *p = req, *eol = strchr(p, '\n'), *sp1, *sp2, *q;

	if (eol == NULL || memchr(req, '\0', len) != NULL)
		return NULL;
	if (eol > p && eol[-1] == '\r')
		eol[-1] = '\0';
	*eol = '\0';
	if ((sp1 = strchr(p, ' ')) == NULL)
		return NULL;
	*sp1 = '\0';
	if ((sp2 = strchr(sp1 + 1, ' ')) == NULL)
		return NULL;
	*sp2 = '\0';
	r->method = p;
	r->target = sp1 + 1;
	if (r->method[0] == '\0' || r->target[0] == '\0' ||
	    (strcmp(sp2 + 1, "HTTP/1.1") != 0 &&
	    strcmp(sp2 + 1, "HTTP/1.0") != 0))
		return NULL;
	for (q = p; *q != '\0'; q++)
		if (!(*q >= 'A' && *q <= 'Z') && *q != '-' && *q != '_')
			return NULL;
	/* Printable ASCII only (RFC 3986: the rest is percent-encoded). */
	for (q = sp1 + 1; *q != '\0'; q++)
		if ((unsigned char)*q <= ' ' || (unsigned char)*q >= 0x7f)
			return NULL;
	return eol + 1;
}

/* Note in @r the header field @name (@n bytes) = @v, when one we read. */
static void
header_field(struct request *r, const char *name, size_t n, char *v)
{
	if (name_is(name, n, "Origin"))
		r->origin = v;
	else if (name_is(name, n, "Host"))
		r->host = v;
	else if (name_is(name, n, "Access-Control-Request-Headers"))
		r->acr_headers = v;
	else if (name_is(name, n, "Access-Control-Request-Private-Network"))
		r->acr_pna = strcasecmp(v, "true") == 0;
}

/*
 * The header fields from @p to the empty line, NAME ":" OWS VALUE OWS,
 * cut in place into @r. Return: 0, or -1 when one is malformed.
 */
static int
parse_headers(char *p, struct request *r)
{
	for (;;) {
		char *colon, *v, *end, *q, *eol = strchr(p, '\n');

		if (eol == NULL)
			return -1;
		end = eol;
		if (end > p && end[-1] == '\r')
			end--;
		if (end == p)
			return 0;       /* the empty line */
		*end = '\0';
		if (*p == ' ' || *p == '\t')
			return -1;      /* obsolete line folding */
		colon = strchr(p, ':');
		if (colon == NULL || colon == p)
			return -1;
		for (q = p; q < colon; q++)
			if ((unsigned char)*q <= ' ' || *q == 0x7f)
				return -1;
		v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		for (q = v + strlen(v); q > v && (q[-1] == ' ' ||
		    q[-1] == '\t'); q--)
			q[-1] = '\0';
		header_field(r, p, (size_t)(colon - p), v);
		p = eol + 1;
	}
}

/*
 * The CORS preflight. The profiler's plain fetch() needs none, but
 * Chrome's Private Network Access sends one before a public page
 * (https://profiler.firefox.com) may reach a loopback address, and wants
 * the PNA answer.
 */
static void
respond_preflight(struct server *s, struct conn *c, const struct request *r)
{
	bool hdrs = r->acr_headers != NULL && header_list_ok(r->acr_headers);
	char extra[512];

	snprintf(extra, sizeof(extra),
	    "Allow: GET, HEAD, OPTIONS\r\n"
	    "Access-Control-Allow-Methods: GET, HEAD, OPTIONS\r\n"
	    "%s%s%s"
	    "%s"
	    "Access-Control-Max-Age: 600\r\n"
	    "Content-Length: 0\r\n",
	    hdrs ? "Access-Control-Allow-Headers: " : "",
	    hdrs ? r->acr_headers : "", hdrs ? "\r\n" : "",
	    r->acr_pna ? "Access-Control-Allow-Private-Network: true\r\n" :
	    "");
	respond(s, c, r, 204, "No Content", extra);
}

/*
 * The profile, always gzip-compressed: every browser accepts
 * Content-Encoding gzip (the Firefox Profiler's fetch() gets the JSON
 * transparently), and a client that did not ask for it can still gunzip
 * the body, so the bytes need no second form.
 */
static void
respond_profile(struct server *s, struct conn *c, const struct request *r)
{
	char extra[512];

	snprintf(extra, sizeof(extra),
	    "Content-Type: application/json\r\n"
	    "Content-Encoding: gzip\r\n"
	    "Content-Length: %jd\r\n", (intmax_t)s->body_len);
	respond(s, c, r, 200, "OK", extra);
	if (strcmp(r->method, "GET") == 0) {
		c->body_off = 0;
		c->body_end = s->body_len;
		c->profile = true;
	}
}

/*
 * Parse the complete request head in @c->req (NUL-terminated, ends with
 * an empty line) and queue the response.
 */
static void
handle_request(struct server *s, struct conn *c)
{
	struct request r = { .method = "-", .target = "-" };
	char *fields = parse_request_line(c->req, c->req_len, &r);
	size_t tlen;

	if (fields == NULL || parse_headers(fields, &r) != 0) {
		respond_error(s, c, NULL, 400, "Bad Request", "");
		return;
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
	if (tlen != strlen(s->path) || memcmp(r.target, s->path, tlen) != 0)
		respond_error(s, c, &r, 404, "Not Found", "");
	else if (strcmp(r.method, "OPTIONS") == 0)
		respond_preflight(s, c, &r);
	else
		respond_profile(s, c, &r);
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
	c->deadline = tool_now_ms() + LINGER_MS;
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
		c->deadline = tool_now_ms() + SEND_IDLE_MS;
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
		c->deadline = tool_now_ms() + SEND_IDLE_MS;
	}
	if (c->profile) {
		c->profile = false;
		s->fetched++;
		s->stop_at = tool_now_ms() + s->grace_ms;
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
		c->deadline = tool_now_ms() + REQ_TIMEOUT_MS;
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
int
view_server_run(struct server *s)
{
	struct pollfd pfd[MAX_CONNS + 2];
	int who[MAX_CONNS + 2];

	for (;;) {
		int64_t now = tool_now_ms(), next = -1;
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
/* view_server_open - see view_int.h. */
int
view_server_open(struct server *s, unsigned port)
{
	char hex[33];

	s->conns = calloc(MAX_CONNS, sizeof(*s->conns));
	if (s->conns == NULL) {
		fprintf(stderr, VIEW ": out of memory\n");
		return EXIT_SERVER;
	}
	for (int i = 0; i < MAX_CONNS; i++)
		s->conns[i].fd = -1;
	if (random_hex(hex) != 0) {
		fprintf(stderr, VIEW ": getrandom: %s\n", strerror(errno));
		return EXIT_SERVER;
	}
	snprintf(s->path, sizeof(s->path), "/%s/profile.json", hex);
	return server_listen(s, port);
}

/* view_server_close - see view_int.h. */
void
view_server_close(struct server *s)
{
	if (s->conns != NULL)
		for (int i = 0; i < MAX_CONNS; i++)
			if (s->conns[i].state != CONN_FREE)
				conn_close(&s->conns[i]);
	free(s->conns);
	s->conns = NULL;
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->body_fd >= 0)
		close(s->body_fd);
	s->lfd = s->body_fd = -1;
}
