/*
 * gecko_counters.h - how a recorded counter is shown in the Firefox
 * Profiler (codec/gecko_counters.c writes it).
 *
 * The front-end draws a Gecko counter's `count` as a delta: it zeroes the
 * first one, draws a "Memory" counter as the running sum and any other
 * one as count per millisecond. Only memory fits that; a gauge (a level
 * the program set) and a count (a running count of events) are written
 * as markers of a schema with `graphs`, which the front-end draws as a
 * track of the values themselves, with the schema's format as the unit.
 * Context: any thread; pure functions, no state.
 */
#ifndef RTPROF_GECKO_COUNTERS_H
#define RTPROF_GECKO_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gecko_counter_show {
	GECKO_SHOW_MEMORY,      /* a Gecko "Memory" counter, bytes */
	GECKO_SHOW_GAUGE,       /* a marker graph: the value set */
	GECKO_SHOW_COUNT,       /* a marker graph: the running count */
};

struct gecko_counter_view {
	enum gecko_counter_show show;
	const char *format;     /* Gecko marker field format of the value */
	double scale;           /* shown value = recorded value * scale */
	const char *graph;      /* Gecko graph type: "line", "line-filled" */
};

/*
 * gecko_counter_view - how to show a counter of @kind (enum
 * rtprof_counter_kind, 0 in older dumps), @category and @unit ("" or
 * NULL: a plain number). @builtin_memory: one of rtprof's own memory
 * counters (always bytes).
 */
void gecko_counter_view(uint32_t kind, const char *category,
    const char *unit, bool builtin_memory, struct gecko_counter_view *out);

/* The marker schema name of a counter's graph ("rtprof.counter.NAME"),
 * into @buf of @n bytes (cut when longer). */
void gecko_counter_schema_name(const char *name, char *buf, size_t n);

#endif
