/*
 * audio.c - set-up of audio callback sites (rtprof_audio_init). The
 * per-callback work is inline in rtprof.h (rtprof_audio_begin/end): a
 * typed interval marker, an overrun marker when over budget, and the load
 * and jitter counters, all wait-free on the audio thread.
 *
 * Context: any non-RT thread (declares types and counters: allocates).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core.h"

static const struct rtprof_marker_schema callback_schema = {
	.name = "Audio callback",
	.category = RTPROF_CAT_AUDIO,
	.display = RTPROF_DISPLAY_MARKER_CHART | RTPROF_DISPLAY_MARKER_TABLE |
	    RTPROF_DISPLAY_TIMELINE_OVERVIEW,
	.tooltip_label = "{marker.data.frames} frames: {marker.data.used} of "
	    "{marker.data.budget} ({marker.data.load})",
	.table_label = "{marker.data.frames} frames, {marker.data.used} of "
	    "{marker.data.budget}",
	.chart_label = "{marker.data.load}",
	.nfields = 4,
	.fields = {
		{ "frames", "Frames", "integer", RTPROF_FIELD_U64 },
		{ "budget", "Budget", "milliseconds", RTPROF_FIELD_F64 },
		{ "used", "Time used", "milliseconds", RTPROF_FIELD_F64 },
		{ "load", "DSP load", "percentage", RTPROF_FIELD_F64 },
	},
};

static const struct rtprof_marker_schema overrun_schema = {
	.name = "Audio overrun",
	.category = RTPROF_CAT_AUDIO,
	.display = RTPROF_DISPLAY_MARKER_CHART | RTPROF_DISPLAY_MARKER_TABLE |
	    RTPROF_DISPLAY_TIMELINE_OVERVIEW,
	.tooltip_label = "Overrun #{marker.data.count}: {marker.data.used} "
	    "for a {marker.data.budget} budget",
	.table_label = "overrun #{marker.data.count}: {marker.data.over} late",
	.chart_label = "overrun {marker.data.over}",
	.nfields = 4,
	.fields = {
		{ "count", "Overrun number", "integer", RTPROF_FIELD_U64 },
		{ "budget", "Budget", "milliseconds", RTPROF_FIELD_F64 },
		{ "used", "Time used", "milliseconds", RTPROF_FIELD_F64 },
		{ "over", "Over budget by", "milliseconds", RTPROF_FIELD_F64 },
	},
};

/* Declared once per process; every site shares them. Under the lock. */
static const rtprof_marker_type *callback_type, *overrun_type;

static rtprof_counter *
counter(const char *name, const char *what, const char *description,
    int kind, const char *unit)
{
	char buf[96];

	snprintf(buf, sizeof(buf), "%s %s", name, what);
	return rtprof_counter_declare_kind(buf, "Audio", description, kind,
	    unit);
}

/* Context: any non-RT thread; may block and allocate. */
RTPROF_API int
rtprof_audio_init(rtprof_audio *a, const char *name)
{
	const rtprof_marker_type *cb, *ov;
	const rtprof_lock *lk;
	double rate;

	if (a == NULL)
		return -EINVAL;
	if (name == NULL || name[0] == '\0')
		name = "audio";
	rate = rtprof__clock_rate();    /* may sleep once: outside the lock */
	lk = rtprof__lock();
	cb = callback_type;
	ov = overrun_type;
	rtprof__unlock(lk);
	/* Declaring takes the lock itself; a race declares a type twice,
	 * which the converter merges by name. */
	if (cb == NULL)
		cb = rtprof_marker_type_declare(&callback_schema);
	if (ov == NULL)
		ov = rtprof_marker_type_declare(&overrun_schema);
	if (cb == NULL || ov == NULL)
		return -(errno != 0 ? errno : ENOMEM);
	lk = rtprof__lock();
	callback_type = cb;
	overrun_type = ov;
	rtprof__unlock(lk);
	memset(a, 0, sizeof(*a));
	a->struct_size = sizeof(*a);
	a->cb_type = cb;
	a->overrun_type = ov;
	a->ticks_per_us = rate / 1e6;
	a->load = counter(name, "load", "DSP load of each callback, per mille "
	    "of its budget (frames / sample rate)", RTPROF_COUNTER_GAUGE,
	    "permille");
	a->jitter = counter(name, "jitter", "start of a callback minus the "
	    "start of the previous one minus its period, in microseconds",
	    RTPROF_COUNTER_GAUGE, "us");
	a->overruns = counter(name, "overruns", "callbacks that used more "
	    "than their budget, running total", RTPROF_COUNTER_COUNT, "");
	if (a->load == NULL || a->jitter == NULL || a->overruns == NULL)
		return -(errno != 0 ? errno : ENOMEM);
	return 0;
}
