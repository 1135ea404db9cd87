/*
 * view_int.h - the parts of `rtprof view`: tools/view.c (the command:
 * options, the address, the browser), tools/view_prepare.c (the profile
 * to serve, gzip-compressed in a temporary file) and tools/view_serve.c
 * (the HTTP server that hands it to the Firefox Profiler).
 *
 * Context: the program has one thread, the main thread; every function
 * of these files runs on it (the signal handler excepted, which only
 * writes to the pipe: tools/sigpipe.c).
 */
#ifndef RTPROF_TOOLS_VIEW_INT_H
#define RTPROF_TOOLS_VIEW_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "convert.h"

#define VIEW "rtprof view"

/* The hosted Firefox Profiler: always allowed to fetch the profile. */
#define PROFILER_ORIGIN "https://profiler.firefox.com"

#define MAX_CONNS 64                    /* simultaneous connections */
#define REQ_MAX 16384                   /* request line + headers */

/* Exit statuses of rtprof view (also in view_usage()). */
enum {
	EXIT_OK = 0,
	EXIT_DAMAGED = 1,
	EXIT_USAGE = 2,
	EXIT_SERVER = 3,
};

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

/*
 * view_prepare - make the gzip body to serve from the FILEs @in[0..@nin)
 * (tools/view_prepare.c).
 * Return: EXIT_OK or EXIT_DAMAGED with *@fd (open, read from offset 0 on)
 * and *@len set; EXIT_USAGE (message printed).
 */
int view_prepare(char **in, int nin, const struct tool_convert_opts *opts,
    bool quiet, int *fd, off_t *len);

/*
 * view_server_open - @s's connection table, its secret path and its
 * socket bound to 127.0.0.1:@port (0: any free port); @s's other fields
 * are the caller's (tools/view_serve.c).
 * Return: 0, or EXIT_SERVER (message printed).
 */
int view_server_open(struct server *s, unsigned port);

/* Serve until the grace period after a fetch ends, or a signal on
 * s->sig_fd. Return: EXIT_OK, or EXIT_SERVER (message printed). */
int view_server_run(struct server *s);

/* Close @s's connections, socket and body; free its table. */
void view_server_close(struct server *s);

#endif /* RTPROF_TOOLS_VIEW_INT_H */
