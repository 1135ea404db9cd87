/*
 * record_int.h - `rtprof record` inside: the launcher's account of every
 * process it records (record.c: pipes copied into dump files, caps,
 * gathering) and the command around it (record_cmd.c: options, the
 * preload library, starting CMD, conversion). Context: the tool's main
 * thread only.
 */
#ifndef RTPROF_RECORD_INT_H
#define RTPROF_RECORD_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "convert.h"
#include "wire.h"

#define PROG "rtprof record"

#define RECORD_MAX_PROCS 64
#define ROUND_MS 500
#define QUIET_ROUNDS 2
#define PUMP_MS 50
#define PIPE_BYTES (1 << 20)
#define PUMP_CHUNK 65536
#define PUMP_MAX_PER_CALL (1u << 20)    /* then the other pipes */
#define MAX_NOTES 256
#define MAX_PENDING 16          /* clients connected, request not read */
#define PENDING_MS 1000         /* then such a client is dropped */

/* One recorded process image: its pipe and its dump file. */
struct proc {
	char *path;             /* the dump file */
	int in;                 /* read end of its pipe; -1 once closed */
	int out;                /* the dump file; -1 once closed */
	pid_t pid;
	char comm[64];          /* its name (argv, shortened) when it asked */
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
	int cmd_status;           /* CMD's wait status, once known */
	bool cmd_done;
	const char *dir;        /* the run's dumps: OUT.rtprof.d */
	const char *dump;       /* CMD's dump: OUT.rtprof.d/main.rtprof */
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
	/* Clients of the socket whose request has not come yet: never
	 * waited for, polled with the pipes' round. */
	struct { int fd; pid_t pid; int64_t since_ns; } pend[MAX_PENDING];
	int npend;
	int refused_uid;        /* clients of another user, refused */
	int cmd_pidfd;          /* readable when CMD exits; -1 none */
	struct rtprof_gecko_note notes[MAX_NOTES];      /* strings owned */
	size_t nnotes;
};


void rec_note(struct rec *r, const char *what, const struct proc *p,
    pid_t pid, const char *program, const char *reason, int64_t bytes);
struct proc *rec_proc_add(struct rec *r, const char *path, int in, int out,
    pid_t pid);
void rec_run_once(int lfd, struct rec *r, int ms);
int rec_open_pipes(const struct rec *r);
void rec_give_up(struct rec *r);
void rec_free(struct rec *r);
/* "exited with status 3", "killed by SIGKILL (signal 9)": @status from
 * waitpid into @buf. */
void rec_status_text(int status, char *buf, size_t n);
/* /proc/PID/cmdline, shortened, into @buf (at most @n - 1 bytes). */
void rec_proc_name(pid_t pid, char *buf, size_t n);

#endif
