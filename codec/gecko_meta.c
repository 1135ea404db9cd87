/*
 * gecko_meta.c - writing: a process's meta object and libs.
 *
 * Pipeline (gecko_int.h): gecko_process.c writes, for each session, meta
 * (version, interval, start time, platform, categories, marker schemas:
 * the dump's, rtprof's own and the counters' graphs) and libs (the module
 * map, with Breakpad ids); the helpers here also tell the writer the
 * session's range and whether it was sampled or symbolized.
 *
 * Context: any thread; no shared state (gecko.h per function).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gecko_int.h"

/*
 * gecko_sampling_obj - how the stacks were taken, as a JSON object:
 * method, why, and whether the kernel's stacks were taken (kernelStacks:
 * the reasons for blocking; absent for older dumps). For the meta and
 * the gathering log.
 */
void
gecko_sampling_obj(const struct gsess *g, struct json *j)
{
	json_obj(j);
	json_key(j, "method");
	json_str(j, g->sampling_method);
	json_key(j, "why");
	json_str(j, g->sampling_why != NULL ? g->sampling_why : "");
	if (g->kernel_stacks >= 0) {
		json_key(j, "kernelStacks");
		json_bool(j, g->kernel_stacks != 0);
	}
	json_obj_end(j);
}

static const char *
display_name(unsigned bit)
{
	static const char *const names[] = {
		"marker-chart", "marker-table", "timeline-overview",
		"timeline-memory", "timeline-ipc", "timeline-fileio",
		"stack-chart",
	};

	return bit < sizeof(names) / sizeof(*names) ? names[bit] : NULL;
}

static bool
format_known(const char *f)
{
	static const char *const formats[] = {
		"url", "file-path", "sanitized-string", "string",
		"unique-string", "flow-id", "terminating-flow-id", "duration",
		"time", "seconds", "milliseconds", "microseconds",
		"nanoseconds", "bytes", "percentage", "integer", "decimal",
		"hexadecimal", "pid", "tid", "list",
	};

	for (size_t i = 0; i < sizeof(formats) / sizeof(*formats); i++)
		if (strcmp(f, formats[i]) == 0)
			return true;
	return false;
}

/* Formats whose values are stringTable indexes. */
bool
format_is_index(const char *f)
{
	return strcmp(f, "unique-string") == 0 || strcmp(f, "flow-id") == 0 ||
	    strcmp(f, "terminating-flow-id") == 0;
}

/* The format written for a field: as declared when valid, else by kind. */
const char *
field_format(const char *declared, uint32_t kind)
{
	if (declared != NULL && format_known(declared))
		return declared;
	switch (kind) {
	case 1:
	case 2:
		return "integer";
	case 3:
		return "decimal";
	default:
		return "string";
	}
}


static void
write_schema(struct json *j, const struct gschema *sc)
{

	json_obj(j);
	json_key(j, "name");
	json_str(j, sc->name);
	json_key(j, "display");
	json_arr(j);
	if ((sc->display & 0x7f) == 0) {
		json_str(j, "marker-chart");
		json_str(j, "marker-table");
	}
	for (unsigned b = 0; b < 7; b++)
		if (sc->display & (1u << b))
			json_str(j, display_name(b));
	json_arr_end(j);
	if (sc->tooltip != NULL) {
		json_key(j, "tooltipLabel");
		json_str(j, sc->tooltip);
	}
	if (sc->table != NULL) {
		json_key(j, "tableLabel");
		json_str(j, sc->table);
	}
	if (sc->chart != NULL) {
		json_key(j, "chartLabel");
		json_str(j, sc->chart);
	}
	json_key(j, "data");
	json_arr(j);
	for (uint32_t i = 0; i < sc->nfields; i++) {
		const char *fmt = field_format(sc->f[i].format, sc->f[i].kind);

		/* "type" is the payload's schema selector: never a field. */
		if (strcmp(sc->f[i].key, "type") == 0)
			continue;
		json_obj(j);
		json_key(j, "key");
		json_str(j, sc->f[i].key);
		json_key(j, "label");
		json_str(j, sc->f[i].label[0] != '\0' ? sc->f[i].label :
		    sc->f[i].key);
		json_key(j, "format");
		json_str(j, fmt);
		if (sc->f[i].kind >= 4 && !format_is_index(fmt)) {
			json_key(j, "searchable");
			json_bool(j, true);
		}
		json_obj_end(j);
	}
	json_arr_end(j);
	json_obj_end(j);
}

static double
sess_interval(const struct gsess *g)
{
	double interval = (double)g->sample_interval_us / 1000.0;

	/* 0xFFFFFFFF: recorded without the sampler (RTPROF_SAMPLING_OFF). */
	if (g->sample_interval_us >= 0xFFFFFFFFu)
		return 1.0;
	return interval > 0.0 ? interval : 1.0;
}

/*
 * The session's range in its own ms: from its start to the stop pair,
 * widened to every event (the last VALUES frame may be stamped after the
 * stop pair was read), plus one interval.
 */
void
sess_range(const struct gsess *g, double *start, double *end)
{
	double e = 0.0;

	if (g->have_trailer)
		e = gecko_ms(g, g->stop_ticks);
	if (g->have_t && gecko_ms(g, g->last_t) > e)
		e = gecko_ms(g, g->last_t);
	*start = 0.0;
	*end = e + sess_interval(g);
}

/*
 * Are the session's frame locations final? Not when native frames were
 * recorded and symbolication is off: the front-end may then symbolicate
 * the hex addresses through libs.
 */
bool
sess_presymbolicated(const struct gsess *g)
{
	return !(g->has_native && g->file->symopt.disabled);
}

/* Does the session hold sampler samples (threadCPUDelta columns)? */
bool
sess_sampled(const struct gsess *g)
{
	return g->nsamples + g->nsame != 0;
}

/* The sample units of threadCPUDelta (cpu_ns of SAMPLE/SAME records). */
void
write_sample_units(struct json *j)
{
	json_key(j, "sampleUnits");
	json_obj(j);
	json_key(j, "time");
	json_str(j, "ms");
	json_key(j, "eventDelay");
	json_str(j, "ms");
	json_key(j, "threadCPUDelta");
	json_str(j, "ns");
	json_obj_end(j);
}

/* Events a thread dropped at the source (DATA frame drop counts). */
static void
write_dropped_schema(struct json *j)
{
	json_obj(j);
	json_key(j, "name");
	json_str(j, GECKO_DROPPED_SCHEMA);
	json_key(j, "display");
	json_arr(j);
	json_str(j, "marker-chart");
	json_str(j, "marker-table");
	json_str(j, "timeline-overview");
	json_arr_end(j);
	json_key(j, "tooltipLabel");
	json_str(j, "{marker.data.full} events dropped (no free chunk), "
	    "{marker.data.nested} re-entrant");
	json_key(j, "tableLabel");
	json_str(j, "dropped: {marker.data.full} no free chunk, "
	    "{marker.data.nested} re-entrant");
	json_key(j, "chartLabel");
	json_str(j, "dropped {marker.data.full}");
	json_key(j, "data");
	json_arr(j);
	json_obj(j);
	json_key(j, "key");
	json_str(j, "full");
	json_key(j, "label");
	json_str(j, "No free chunk");
	json_key(j, "format");
	json_str(j, "integer");
	json_obj_end(j);
	json_obj(j);
	json_key(j, "key");
	json_str(j, "nested");
	json_key(j, "label");
	json_str(j, "Re-entrant (signal handler)");
	json_key(j, "format");
	json_str(j, "integer");
	json_obj_end(j);
	json_obj(j);
	json_key(j, "label");
	json_str(j, "Description");
	json_key(j, "value");
	json_str(j, "the thread recorded these events while rtprof had no "
	    "free chunk for it (memory limit, writer behind) or while it was "
	    "already recording (a signal handler): they are not in the "
	    "profile");
	json_obj_end(j);
	json_arr_end(j);
	json_obj_end(j);
}

/* The schema of the sampler's OVERHEAD markers (one per tick). */
static void
write_overhead_schema(struct json *j)
{
	static const char *const f[][3] = {
		{ "total", "Total", "nanoseconds" },
		{ "ticks", "Sampler ticks", "integer" },
		{ "max", "Longest tick", "nanoseconds" },
		{ "lock", "Lock", "nanoseconds" },
		{ "threads", "Sampling threads", "nanoseconds" },
		{ "counters", "Sampling counters", "nanoseconds" },
		{ "nthreads", "Threads sampled (most in a tick)", "integer" },
	};

	json_obj(j);
	json_key(j, "name");
	json_str(j, GECKO_OVERHEAD_SCHEMA);
	json_key(j, "display");
	json_arr(j);
	json_str(j, "marker-chart");
	json_str(j, "marker-table");
	json_arr_end(j);
	json_key(j, "tooltipLabel");
	json_str(j, "Sampler: {marker.data.total} in {marker.data.ticks} "
	    "ticks (longest {marker.data.max})");
	json_key(j, "tableLabel");
	json_str(j, "{marker.data.total} in {marker.data.ticks} ticks: lock "
	    "{marker.data.lock}, threads {marker.data.threads}, counters "
	    "{marker.data.counters}");
	json_key(j, "chartLabel");
	json_str(j, "{marker.data.total}");
	json_key(j, "data");
	json_arr(j);
	for (size_t i = 0; i < sizeof(f) / sizeof(*f); i++) {
		json_obj(j);
		json_key(j, "key");
		json_str(j, f[i][0]);
		json_key(j, "label");
		json_str(j, f[i][1]);
		json_key(j, "format");
		json_str(j, f[i][2]);
		json_obj_end(j);
	}
	json_obj(j);
	json_key(j, "label");
	json_str(j, "Description");
	json_key(j, "value");
	json_str(j, "Time the rtprof sampler spent in its ticks of this "
	    "window (at most " GECKO_OVERHEAD_WINDOW_TEXT "; its own "
	    "thread's CPU, not the sampled threads')");
	json_obj_end(j);
	json_arr_end(j);
	/* No graph: a marker track is shown whatever its thread, and the
	 * sampler thread is hidden on load. */
	json_obj_end(j);
}

static int
schema_cmp(const void *a, const void *b)
{
	const struct gschema *x = *(const struct gschema *const *)a;
	const struct gschema *y = *(const struct gschema *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* @g's schemas in id order (malloc'ed), NULL when none or on ENOMEM. */
static const struct gschema **
schema_order(struct gsess *g)
{
	const struct gschema **o;

	if (g->nschema == 0)
		return NULL;
	o = malloc(g->nschema * sizeof(*o));
	if (o == NULL) {
		gecko_fail(g, -ENOMEM);
		return NULL;
	}
	for (size_t i = 0; i < g->nschema; i++)
		o[i] = &g->schema[i];
	qsort(o, g->nschema, sizeof(*o), schema_cmp);
	return o;
}

/* The session's version, clock, platform and how it was sampled. */
static void
meta_system(struct gsess *g, struct json *j, bool top)
{
	double interval = sess_interval(g);
	char oscpu[256];

	json_key(j, "version");
	json_u64(j, GECKO_VERSION);
	json_key(j, "interval");
	json_f64(j, interval);
	json_key(j, "startTime");
	json_f64(j, (double)g->start_wall_ns / 1e6);
	json_key(j, "shutdownTime");
	json_null(j);
	json_key(j, "processType");
	json_u64(j, 0);
	json_key(j, "product");
	json_str(j, "rtprof");
	json_key(j, "platform");
	json_str(j, g->sysname != NULL ? g->sysname : "");
	snprintf(oscpu, sizeof(oscpu), "%s %s %s",
	    g->sysname != NULL ? g->sysname : "",
	    g->release != NULL ? g->release : "",
	    g->machine != NULL ? g->machine : "");
	json_key(j, "oscpu");
	json_str(j, oscpu);
	json_key(j, "abi");
	json_str(j, g->machine != NULL ? g->machine : "");
	if (g->cpus > 0) {
		json_key(j, "logicalCPUs");
		json_i64(j, g->cpus);
	}
	if (g->sampling_method != NULL && g->sampling_method[0] != '\0') {
		/* Not read by the front-end; for people and tools (the
		 * gathering log says the same per process). */
		json_key(j, "rtprofSampling");
		gecko_sampling_obj(g, j);
	}
	json_key(j, "stackwalk");
	json_u64(j, 0);
	json_key(j, "debug");
	json_u64(j, 0);
	if (!top) {
		json_key(j, "presymbolicated");
		json_bool(j, sess_presymbolicated(g));
	}
}

/* The categories, each with the one subcategory "Other". */
static void
meta_categories(const struct gsess *g, struct json *j)
{
	json_key(j, "categories");
	json_arr(j);
	for (uint32_t i = 0; i < g->ncat; i++) {
		json_obj(j);
		json_key(j, "name");
		json_str(j, g->cat[i].name != NULL ? g->cat[i].name : "");
		json_key(j, "color");
		json_str(j, g->cat[i].color);
		json_key(j, "subcategories");
		json_arr(j);
		json_str(j, "Other");
		json_arr_end(j);
		json_obj_end(j);
	}
	json_arr_end(j);
}

/* The declared marker types, the first of each name. */
static void
meta_declared_schemas(struct gsess *g, struct json *j)
{
	const struct gschema **order;
	struct strtab seen;

	/* Schema names must be unique: the first type of a name wins (its
	 * markers and those of later types with the same name share it). */
	memset(&seen, 0, sizeof(seen));
	order = schema_order(g);
	for (size_t i = 0; order != NULL && i < g->nschema; i++) {
		const struct gschema *sc = order[i];
		size_t before = seen.n;

		if (strtab_intern(&seen, sc->name, strlen(sc->name)) < 0) {
			gecko_fail(g, -ENOMEM);
			break;
		}
		if (seen.n != before)
			write_schema(j, sc);
	}
	free(order);
	strtab_free(&seen);
}

/* rtprof's own marker type for a paused recording. */
static void
write_pause_schema(struct json *j)
{
	json_obj(j);
	json_key(j, "name");
	json_str(j, RTPROF_PAUSE_SCHEMA);
	json_key(j, "display");
	json_arr(j);
	json_str(j, "marker-chart");
	json_str(j, "marker-table");
	json_str(j, "timeline-overview");
	json_arr_end(j);
	json_key(j, "tooltipLabel");
	json_str(j, "Recording paused");
	json_key(j, "tableLabel");
	json_str(j, "Recording paused");
	json_key(j, "chartLabel");
	json_str(j, "paused");
	json_key(j, "data");
	json_arr(j);
	json_obj(j);
	json_key(j, "label");
	json_str(j, "Description");
	json_key(j, "value");
	json_str(j, "rtprof recorded nothing in this range "
	    "(rtprof_session_pause)");
	json_obj_end(j);
	json_arr_end(j);
	json_obj_end(j);
}

/*
 * The meta object, without the profiling range (see the writer). @top:
 * presymbolicated and sampleUnits depend on every process of the profile
 * and are written by rtprof_gecko_writer_finish(); the front-end reads
 * them from the top-level meta only.
 */
void
write_meta(struct gsess *g, struct json *j, bool top)
{
	json_obj(j);
	meta_system(g, j, top);
	meta_categories(g, j);
	json_key(j, "markerSchema");
	json_arr(j);
	meta_declared_schemas(g, j);
	/* rtprof's own marker types. */
	write_pause_schema(j);
	write_overhead_schema(j);
	write_dropped_schema(j);
	write_user_schemas(j);
	write_counter_schemas(g, j);
	json_arr_end(j);
	json_obj_end(j);
}

const char *
gecko_basename(const char *p)
{
	const char *s = strrchr(p, '/');

	return s != NULL ? s + 1 : p;
}

static int
mod_cmp(const void *a, const void *b)
{
	const struct gmodule *x = *(const struct gmodule *const *)a;
	const struct gmodule *y = *(const struct gmodule *const *)b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Breakpad id of an ELF build id: its first 16 bytes read as a GUID (the
 * first three fields byte-swapped, as Breakpad's dump_syms does), upper
 * hex, then the age "0". Empty build id: "".
 */
static void
breakpad_id(const struct gmodule *m, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	static const int order[16] = { 3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11,
	    12, 13, 14, 15 };
	unsigned char id[16] = { 0 };
	size_t n = m->build_id_len < 16 ? m->build_id_len : 16;

	if (m->build_id_len == 0) {
		out[0] = '\0';
		return;
	}
	memcpy(id, m->build_id, n);
	for (int i = 0; i < 16; i++) {
		out[2 * i] = hex[id[order[i]] >> 4];
		out[2 * i + 1] = hex[id[order[i]] & 15];
	}
	out[32] = '0';
	out[33] = '\0';
}

void
write_libs(struct gsess *g, struct json *j)
{
	const struct gmodule **v = NULL;
	uint64_t last_end = 0;

	json_key(j, "libs");
	json_arr(j);
	if (g->nmod != 0) {
		v = malloc(g->nmod * sizeof(*v));
		if (v == NULL) {
			gecko_fail(g, -ENOMEM);
			json_arr_end(j);
			return;
		}
	}
	for (size_t i = 0; i < g->nmod; i++)
		v[i] = &g->mod[i];
	if (g->nmod > 1)
		qsort(v, g->nmod, sizeof(*v), mod_cmp);
	for (size_t i = 0; i < g->nmod; i++) {
		const struct gmodule *m = v[i];
		char bp[34];

		/* The front-end needs sorted, non-overlapping ranges. */
		if (m->end <= m->start || (i != 0 && m->start < last_end))
			continue;
		last_end = m->end;
		breakpad_id(m, bp);
		json_obj(j);
		json_key(j, "start");
		json_u64(j, m->start);
		json_key(j, "end");
		json_u64(j, m->end);
		json_key(j, "offset");
		json_u64(j, m->offset);
		json_key(j, "name");
		json_str(j, gecko_basename(m->path));
		json_key(j, "path");
		json_str(j, m->path);
		json_key(j, "debugName");
		json_str(j, gecko_basename(m->path));
		json_key(j, "debugPath");
		json_str(j, m->path);
		json_key(j, "breakpadId");
		json_str(j, bp);
		json_key(j, "arch");
		json_str(j, g->machine != NULL ? g->machine : "");
		json_obj_end(j);
	}
	free(v);
	json_arr_end(j);
}
