/*
 * pprof_int.h - what pprof_read.c (dump -> sessions) hands to
 * pprof_write.c (sessions -> profile.proto); see pprof.h.
 *
 * Context: one converter, one thread at a time.
 */
#ifndef RTPROF_PPROF_INT_H
#define RTPROF_PPROF_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "gecko_maps.h"
#include "idmap.h"
#include "pprof.h"

/* A node of a session's stack tree: one frame below its prefix node. */
enum {
	PNODE_LABEL = 0,                /* value: STRREF of the label */
	PNODE_RET = 1,                  /* a return address */
	PNODE_PC = 2,                   /* the interrupted instruction */
	PNODE_TEXT = 3,                 /* value: PTEXT_* */
};

enum {
	PTEXT_UNKNOWN_STACK,            /* SAME without a previous SAMPLE */
	PTEXT_NO_LABEL,                 /* label-only sample without labels */
	PTEXT_NO_STACK,                 /* no frame at all */
	PTEXT_N
};

extern const char *const rtprof_pprof_texts[PTEXT_N];

struct pnode {
	uint64_t value;
	uint32_t prefix1;               /* prefix node + 1, 0: root */
	uint16_t epoch;                 /* native: module map changes before */
	uint8_t kind;                   /* PNODE_* */
};

#define PEPOCH_MAX UINT16_MAX

struct pmodule {
	char *path;
	uint64_t start, end, offset;
	unsigned char build_id[64];
	size_t build_id_len;
	uint64_t from, to;              /* mapped in [from, to) (ticks) */
};

struct pimage {
	uint64_t addr;
	unsigned char *bytes;
	size_t len;
};

struct pthread {
	int64_t tid;
	char *name;                     /* NULL: never described */
	bool main;                      /* the process's main thread */
	uint32_t last1;                 /* last SAMPLE's leaf + 1, 0: none */
};

/* Samples of one (thread, stack): one pprof Sample. */
struct pagg {
	uint32_t thread, node;
	uint64_t count, cpu_ns;
};

/* One sample with its time (kept when a time window may be asked). */
struct ptimed {
	uint64_t t, cpu_ns;
	uint32_t thread, node;
};

struct pstr {
	char *text;
	size_t len;
};

/* One session (one HEADER): one process of the profile. */
struct psess {
	uint64_t session_index;
	bool have_header;               /* else not written */
	int64_t pid;
	char *process;
	char *host;                     /* HEADER's hostname, "" unknown */
	double tps;                     /* plausible, else 1e9 */
	uint64_t start_ticks;
	int64_t start_mono_ns, start_wall_ns;
	uint64_t sample_interval_us;
	char *sampling;                 /* method: "perf", "signal", ... */
	bool have_trailer;
	uint64_t stop_ticks;
	int64_t stop_mono_ns;
	bool have_t;
	uint64_t last_t;
	bool have_modules;
	struct pmodule *mod;
	size_t nmod, modcap;
	uint64_t *chg;                  /* MODULES_CHANGED times */
	size_t nchg, chgcap;
	struct pimage *img;
	size_t nimg, imgcap;
	struct pstr *str;
	size_t nstr, strcap;
	struct rtprof_idmap str_idx;    /* STRREF -> str[] (the latest) */
	struct pthread *th;
	size_t nth, thcap;
	struct rtprof_idmap th_idx;     /* tid -> th[] */
	struct pnode *node;
	size_t nnode, nodecap;
	struct pmap node_idx; /* (value, prefix1, epoch, kind) */
	struct rtprof_idmap stack_idx;  /* hash of a whole stack -> leaf */
	struct pagg *agg;
	size_t nagg, aggcap;
	struct pmap agg_idx;  /* (thread, node) -> agg[] */
	struct ptimed *timed;           /* with keep_times instead of agg */
	size_t ntimed, timedcap;
	uint64_t nsamples;
};

struct rtprof_pprof_dump {
	int err;                        /* first error, latched */
	char *input;
	struct psess **sess;            /* sessions with a HEADER */
	size_t nsess, sesscap;
	struct psess *cur;              /* session of the frame being read */
	uint64_t ignored_frames;        /* frames of headerless sessions */
	uint64_t damage;
	uint64_t dmg_offset;
	const char *dmg_msg;            /* static; NULL: no damage */
	bool keep_times;
	rtprof_gecko_progress_cb progress;
	void *progress_ctx;
	struct rtprof_gecko_symbols symopt;     /* by reference */
};

/* Context: the converter's thread. Add a sample of @s (pprof_read.c). */
int rtprof_pprof_agg_add(struct psess *s, uint32_t thread, uint32_t node,
    uint64_t count, uint64_t cpu_ns);

/* The session's ms of tick @t (as the Gecko converter's). */
double rtprof_pprof_ms(const struct psess *s, uint64_t t);

/* The session's end (its trailer's stop, else its last record), ticks. */
uint64_t rtprof_pprof_end_ticks(const struct psess *s);

#endif /* RTPROF_PPROF_INT_H */
