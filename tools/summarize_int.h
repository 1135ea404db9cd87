/*
 * summarize_int.h - `rtprof summarize`'s shared state: dumps or profiles
 * read into tables for people (tools/summarize*.c; the command's API is
 * summarize.h).
 *
 * Every input, dump or profile, is read once (a dump twice: names and
 * module map first) and aggregated into one struct sum: name -> (count,
 * total, max) tables keyed by call, stack, thread or function, across
 * inputs; the report prints them at the end. Nothing is kept per sample.
 *
 * Pipeline, one file a stage (each says its place at its top):
 *   the command (summarize.c): options, then each FILE, dump or profile
 *   read -> aggregate, one input at a time:
 *     summarize_dump.c         a dump: the reader's descriptor callbacks
 *                              (threads, strings, modules), two passes
 *     summarize_dump_rec.c     a dump's records: Blocked markers and their
 *                              backtraces, samples, kernel stacks
 *     summarize_prof.c         a profile: the metas, then each thread
 *     summarize_json.c         the JSON under it (summarize_json.h)
 *     summarize_prof_thread.c  a profile's thread: markers and samples
 *   the tables they fill (summarize_agg.c; off CPU: summarize_block.c)
 *   report (summarize_report.c): the tables, or the folded stacks.
 *
 * Context: the tool's main thread.
 */
#ifndef RTPROF_TOOLS_SUMMARIZE_INT_H
#define RTPROF_TOOLS_SUMMARIZE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dump_reader.h"
#include "gecko_maps.h"
#include "idmap.h"
#include "summarize_block.h"
#include "summarize_json.h"
#include "symbolize.h"

#define PROG "rtprof summarize"

/* Separates the call and the frames of a by-stack key. */
#define KEY_SEP '\n'

/* A name -> (count, total, max) table: e[i] counts keys.s[i]. */
struct agg {
	struct strtab keys;
	struct agg_ent {
		const char *key;        /* keys.s[i], owned by keys */
		uint64_t n;
		double total, max;
	} *e;
	size_t n, cap;                  /* n == keys.n */
};

/* A growing string (keys and folded lines). */
struct sbuf {
	char *p;
	size_t n, cap;
};

/* A Blocked marker waiting for the record after it (its BACKTRACE). */
struct pend {
	bool on;
	uint64_t t0;
	double ms;
	char call[64];
};

/* What the readers fill, across inputs. */
struct sum {
	const char *sysroot;
	bool no_symbols;                /* native frames stay hex */
	bool folded;
	bool names_final;               /* second pass: names are known */
	int err;
	/* Per dump: */
	double tps;
	int64_t pid;
	char process[64];
	struct rtprof_symbolizer *sym;
	struct { uint64_t ref; char *text; } *str;
	size_t nstr, strcap;
	struct rtprof_idmap str_idx;    /* ref -> str[] (the first one) */
	int blocked_type;               /* SCHEMA id of "Blocked", -1 */
	char boot_id[64];               /* the dump's boot (KSTACK addresses) */
	double interval_ms;             /* one sample's time */
	struct {
		int64_t tid;
		char name[64];
		char *last;
		struct pend pend;
		/* A KSTACK for its SAMPLE at kst_t; the reason (reason id)
		 * and place of its current off-CPU spell (off: -1 none). */
		bool kst_on;
		uint64_t kst_t;
		int kst_id, off;
		char *where;    /* allocated at its first kernel stack only:
				 * 300,000 threads stay within 256 MiB */
	} *th;
	size_t nth, thcap;
	size_t th_last;                 /* sum_thread_of() cache */
	struct rtprof_idmap th_idx;     /* tid -> th[] */
	size_t npend;                   /* threads with a pending marker */
	/* Across inputs: */
	struct agg blocked, bstack, cpu, self, folded_stacks;
	struct agg sig_blocked;         /* SAMPLEs with the signal blocked */
	struct sblock *off;             /* off-CPU time by kernel reason */
	uint64_t nostack_n;             /* Blocked without a backtrace */
	double nostack_ms;
	uint64_t samples;
};

/* What a process's meta says (and the top level's for all). */
struct pmeta {
	double interval_ms;             /* 0: unknown */
};

struct pctx {
	struct pmeta top;
	struct pmeta *sub;              /* processes[i].meta */
	size_t nsub, subcap;
	double cpu_ns_per_unit;         /* threadCPUDelta unit; 0: unknown */
	int64_t idle_cat;               /* the "Idle" category, -1 */
	bool has_version, has_threads;  /* top-level meta.version, threads */
	struct jdom d, scratch;
};

/* summarize_agg.c: the tables. */
int agg_add(struct agg *a, const char *key, double v);
/* The entries sorted by total, biggest first (a new array), or NULL. */
struct agg_ent *agg_sorted(const struct agg *a);
void agg_free(struct agg *a);
int sb_add(struct sbuf *b, const char *s, size_t n);
/* A frame name in a folded line: ';' separates frames. */
int sb_add_frame(struct sbuf *b, const char *s);
/* The first error (@err, kept in s->err). Return: s->err. */
int sum_fail(struct sum *s, int err);
/* One Blocked call (by call), and by stack when @frames is not NULL:
 * the names innermost first, separated by KEY_SEP. */
int blocked_add(struct sum *s, const char *call, double ms,
    const char *frames);
/* Frees what every input filled (not the struct). */
void sum_free(struct sum *s);

/* summarize_dump.c. Return: 0, 1 (damage) or 2 (error printed). */
int sum_read_dump(struct sum *s, const char *path);
/* The text of string ref @ref, "?" unknown. */
const char *sum_str_of(const struct sum *s, uint64_t ref);
/* The thread entry of @tid (created; 0 and s->err set: no memory). */
size_t sum_thread_of(struct sum *s, int64_t tid);

/* summarize_dump_rec.c: a record of the dump's second pass. */
int sum_on_record(void *ctx, const struct rtprof_dump_data *d,
    const struct rtprof_rec_view *r);
/* The pending Blocked marker of stream @ti, with the stack of @bt (a
 * BACKTRACE record of the same start) or without one. */
int sum_pend_flush(struct sum *s, size_t ti, const struct rtprof_rec_view *bt);

/* summarize_prof.c. Return: 0, or 2 (error printed). */
int sum_read_profile(struct sum *s, const char *path);
/* A converted profile (JSON, maybe gzip), else a dump? Return: 0, -errno. */
int sum_is_profile(const char *path, bool *yes);

/* summarize_prof_thread.c: one thread object (its DOM in pc->d) of a
 * process whose meta is @pm. */
int sum_prof_thread(struct sum *s, struct pctx *pc, const struct pmeta *pm);

/* summarize_report.c: the tables (@top rows each), or the folded stacks. */
void sum_report(const struct sum *s, size_t top);

#endif /* RTPROF_TOOLS_SUMMARIZE_INT_H */
