/*
 * gecko_counters.c - how a recorded counter is shown in the Firefox
 * Profiler (see gecko_counters.h).
 * Context: any thread; pure functions, no state.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "gecko_counters.h"
#include "wire.h"

/* A unit -> the Gecko format showing it, and the scale to apply. */
static void
unit_format(const char *unit, struct gecko_counter_view *v)
{
	static const struct {
		const char *unit, *format;
		double scale;
	} map[] = {
		{ "permille", "percentage", 1e-3 },
		{ "percent", "percentage", 1e-2 },
		{ "ns", "nanoseconds", 1.0 },
		{ "us", "microseconds", 1.0 },
		{ "ms", "milliseconds", 1.0 },
		{ "bytes", "bytes", 1.0 },
	};

	v->format = "integer";
	v->scale = 1.0;
	for (size_t i = 0; unit != NULL && i < sizeof(map) / sizeof(*map);
	    i++) {
		if (strcmp(unit, map[i].unit) == 0) {
			v->format = map[i].format;
			v->scale = map[i].scale;
			return;
		}
	}
}

void
gecko_counter_view(uint32_t kind, const char *category, const char *unit,
    bool builtin_memory, struct gecko_counter_view *out)
{
	bool memory_cat = category != NULL && strcmp(category, "Memory") == 0;

	memset(out, 0, sizeof(*out));
	if (builtin_memory || kind == RTPROF_WIRE_COUNTER_BYTES ||
	    (kind == RTPROF_WIRE_COUNTER_UNSPECIFIED && memory_cat)) {
		out->show = GECKO_SHOW_MEMORY;
		out->format = "bytes";
		out->scale = 1.0;
		out->graph = "line-filled";
		return;
	}
	unit_format(unit, out);
	out->show = kind == RTPROF_WIRE_COUNTER_COUNT ? GECKO_SHOW_COUNT :
	    GECKO_SHOW_GAUGE;
	out->graph = out->show == GECKO_SHOW_COUNT ? "line-filled" : "line";
}

void
gecko_counter_schema_name(const char *name, char *buf, size_t n)
{
	snprintf(buf, n, "rtprof.counter.%s", name != NULL ? name : "");
}
