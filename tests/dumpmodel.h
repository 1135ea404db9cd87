/*
 * dumpmodel.h - load a whole dump into memory for tests to assert on.
 * Test support only: built on codec/dump_reader.h, never on rt/ or core/.
 */
#ifndef RTPROF_DUMPMODEL_H
#define RTPROF_DUMPMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "dump_reader.h"

/* A decoded record with its strings resolved. */
struct dm_rec {
	struct rtprof_rec_view v;  /* vals[].v.str.p points into `strs` */
	const char *name;          /* resolved marker name, or NULL */
	uint64_t chunk_seq;
	uint64_t generation;
	char *strs;                /* copied strings of this record */
};

struct dm_thread {
	int64_t tid;
	char name[64];
	uint64_t flags;
	uint64_t register_ticks;
	int has_unregister;
	uint64_t unregister_ticks;
	struct dm_rec *recs;
	size_t nrecs, cap;
	uint64_t drops_full, drops_nested; /* summed from DATA headers */
	uint64_t data_frames;
	/* DATA frames that begin a chunk (byte offset 0): a chunk flushed in
	 * parts (the writer's partials) has one, then its continuations. */
	uint64_t chunk_starts;
	/* THREAD frames with totals (final counts of an exited thread), and
	 * their sum. */
	size_t nsettled;
	struct rtprof_dump_trailer_thread settled;
};

struct dm_session {
	uint32_t id;
	uint64_t generation;
	int64_t pid;
	char process[64];
	char clock_source[16];
	double ticks_per_second;
	uint64_t start_ticks;
	char mode[16];
	struct dm_thread *threads;
	size_t nthreads;
	struct { uint64_t ref; char *text; } *strings;
	size_t nstrings;
	struct { uint32_t id; char name[64]; uint32_t nfields; } schemas[64];
	size_t nschemas;
	struct { uint32_t id; char name[64]; } counters[64];
	size_t ncounters;
	struct { uint64_t start, end; } pauses[256];
	size_t npauses;
	size_t nvalues;            /* VALUES frames */
	struct { uint32_t id; int64_t v; } value_last[64]; /* per counter id */
	size_t nvalue_last;
	size_t nmodules;
	struct { char path[256]; uint64_t start, end; size_t build_id_len; } modules[32];
	char events[8][32];
	size_t nevents;
	int has_trailer;
	/* The trailer; its threads: every tid's counts, the trailer's
	 * entries and the THREAD frames' totals added up (trailer_entries:
	 * how many entries the TRAILER frame itself had). */
	struct rtprof_dump_trailer trailer;
	struct rtprof_dump_trailer_thread *tthreads;
	size_t trailer_entries;
	uint64_t frames;
};

struct dm {
	struct dm_session *sessions;
	size_t nsessions;
	struct rtprof_dump_stats stats;
	int rc;                    /* rtprof_dump_read_* return value */
	uint64_t damage_by_kind[8];
};

/* Load from an fd (read from its current offset) / a file. 0 or -errno. */
int dm_load_fd(struct dm *m, int fd);
int dm_load_path(struct dm *m, const char *path);
void dm_free(struct dm *m);

/* The thread @tid of session @s, created empty if the dump has none. */
struct dm_thread *dm_thread(struct dm_session *s, int64_t tid);
/* The same without creating: NULL if the dump has no such thread. */
const struct dm_thread *dm_find_thread(const struct dm_session *s, int64_t tid);
/* @tid's entry in the session's trailer, or NULL. */
const struct rtprof_dump_trailer_thread *dm_trailer_thread(
    const struct dm_session *s, int64_t tid);
const char *dm_string(const struct dm_session *s, uint64_t ref);
/* The last value a VALUES frame gave counter @id; 0 and *found = 0 if none. */
int64_t dm_value(const struct dm_session *s, uint32_t id, int *found);
/* Records of a thread, all sessions, with kind @kind (0: any). */
size_t dm_count(const struct dm *m, int64_t tid, int kind);

#endif /* RTPROF_DUMPMODEL_H */
