/*
 * blocked_schema.h - the "Blocked" marker type that core/preload.c records
 * for every timed blocking call (internal: also used by tests that record
 * the same markers without the preload library).
 */
#ifndef RTPROF_CORE_BLOCKED_SCHEMA_H
#define RTPROF_CORE_BLOCKED_SCHEMA_H

#include "../rt/rtprof.h"

/*
 * What core/preload.c records: {call, fd, bytes, path}. path: what the
 * descriptor names (readlink of /proc/self/fd/N: a file, a FIFO,
 * "pipe:[ino]", "socket:[ino]"), looked up only for a call that blocked
 * at least the backtrace threshold; "" otherwise.
 */
static const struct rtprof_marker_schema rtprof__blocked_path_schema = {
	.name = "Blocked",
	.category = RTPROF_CAT_IO,
	.display = RTPROF_DISPLAY_MARKER_CHART | RTPROF_DISPLAY_MARKER_TABLE |
	    RTPROF_DISPLAY_TIMELINE_FILEIO,
	.tooltip_label = "{marker.data.call} blocked {marker.duration}",
	.table_label = "{marker.data.call}(fd {marker.data.fd}): "
	    "{marker.data.bytes} bytes",
	.chart_label = "{marker.data.call}",
	.nfields = 4,
	.fields = {
		{ "call", "Call", "string", RTPROF_FIELD_STATIC_STR },
		{ "fd", "Descriptor", "integer", RTPROF_FIELD_I64 },
		{ "bytes", "Bytes", "bytes", RTPROF_FIELD_I64 },
		{ "path", "Path", "file-path", RTPROF_FIELD_STR },
	},
};

#endif /* RTPROF_CORE_BLOCKED_SCHEMA_H */
