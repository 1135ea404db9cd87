/*
 * wire.h - constants of the rtprof dump format (docs/wire-format.md).
 *
 * Internal header. codec/ depends on nothing else in the tree: the values
 * that rt/rtprof.h also spells out (record kinds, phases, field kinds) are
 * checked equal by static assertions in core/ which sees both.
 */
#ifndef RTPROF_WIRE_H
#define RTPROF_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define RTPROF_WIRE_VERSION 1

/* Frame header: see docs/wire-format.md, "Frames". */
#define RTPROF_FRAME_SYNC0 0xD4
#define RTPROF_FRAME_SYNC1 0x52 /* 'R' */
#define RTPROF_FRAME_SYNC2 0x54 /* 'T' */
#define RTPROF_FRAME_SYNC3 0x50 /* 'P' */
#define RTPROF_FRAME_HEADER_SIZE 24
#define RTPROF_FRAME_TRAILER_SIZE 4
#define RTPROF_FRAME_OVERHEAD (RTPROF_FRAME_HEADER_SIZE + RTPROF_FRAME_TRAILER_SIZE)
#define RTPROF_FRAME_MAX_PAYLOAD (16u << 20)

enum rtprof_frame_kind {
	RTPROF_FRAME_HEADER = 1,      /* session header, always seq 0 */
	RTPROF_FRAME_MODULES = 2,     /* module map */
	RTPROF_FRAME_THREAD = 3,      /* thread descriptor (again on exit) */
	RTPROF_FRAME_SCHEMA = 4,      /* marker type */
	RTPROF_FRAME_COUNTER = 5,     /* counter descriptor */
	RTPROF_FRAME_STRING = 6,      /* static string: address -> text */
	RTPROF_FRAME_DATA = 7,        /* a chunk's records */
	RTPROF_FRAME_PAUSE = 8,       /* a paused range */
	RTPROF_FRAME_VALUES = 9,      /* counter values sampled by the profiler */
	RTPROF_FRAME_EVENT = 10,      /* a session event: error, limit reached */
	RTPROF_FRAME_TRAILER = 11,    /* end of session: totals */
	RTPROF_FRAME_MODULES_CHANGED = 12, /* modules loaded, unloaded since */
	RTPROF_FRAME_IMAGE = 13,      /* the ELF image of a module without a file */
	RTPROF_FRAME_CATEGORY = 14,   /* a category declared by the program */
	RTPROF_FRAME_KIND_MAX = 14
};

/* Record kinds inside DATA frames (first element of each record array). */
enum rtprof_rec_kind {
	RTPROF_REC_INSTANT = 1,   /* [1, t, name, cat] */
	RTPROF_REC_BEGIN = 2,     /* [2, t, name, cat] */
	RTPROF_REC_END = 3,       /* [3, t, name, cat] */
	RTPROF_REC_INTERVAL = 4,  /* [4, t0, t1, name, cat] */
	RTPROF_REC_TYPED = 5,     /* [5, phase, t0, t1, type, fields...] */
	RTPROF_REC_COUNTER = 6,   /* [6, t, counter, value] */
	RTPROF_REC_SLEEP = 7,     /* [7, t] */
	RTPROF_REC_WAKE = 8,      /* [8, t] */
	RTPROF_REC_SAMPLE = 9,    /* [9, t, tid, cpu_ns, flags, frame...] */
	RTPROF_REC_SAME = 10,     /* [10, t, tid, cpu_ns, flags] */
	RTPROF_REC_OVERHEAD = 11, /* [11, t0, t1, lock, threads, counters, n] */
	RTPROF_REC_BACKTRACE = 12, /* [12, t, flags, frame...]: the stack of
	                            * the marker just before it (t: its start) */
	RTPROF_REC_ZONE_BEGIN = 13, /* [13, t, name, cat] */
	RTPROF_REC_ZONE_END = 14,  /* [14, t, zone]: zone = its begin's t */
	RTPROF_REC_ZONE_ARG = 15,  /* [15, zone, what, value] */
	RTPROF_REC_TEXT = 16,     /* [16, t0, t1, name, cat, text]; t1 0: instant */
	RTPROF_REC_FLOW = 17,     /* [17, t, name, cat, flow, last] */
	RTPROF_REC_FRAME = 18,    /* [18, t, name, budget_ns] */
	RTPROF_REC_KSTACK = 19,   /* [19, t, tid, frame...]: the kernel stack
	                           * where tid went off CPU, for its SAMPLE
	                           * of time t just after it (sampler) */
	RTPROF_REC_KIND_MAX = 19
};

/* ZONE_ARG `what`: the value it attaches to its zone. */
#define RTPROF_ZONE_ARG_VALUE 1    /* int64 or float64 */
#define RTPROF_ZONE_ARG_TEXT 2     /* str8 */
#define RTPROF_ZONE_ARG_FLOW 3     /* uint64 flow id */
#define RTPROF_ZONE_ARG_FLOW_END 4 /* uint64 flow id, the flow's last step */
#define RTPROF_ZONE_ARG_COLOR 5    /* uint64 colour, 1..RTPROF_WIRE_COLORS */
#define RTPROF_ZONE_ARG_MAX 5
/* Zone colours, by ZONE_ARG_COLOR value - 1 (enum rtprof_color). */
#define RTPROF_WIRE_COLOR_NAMES "blue", "green", "grey", "ink", "magenta", \
	"orange", "purple", "red", "teal", "yellow"
#define RTPROF_WIRE_COLORS 10

/* Most categories (built-in and declared); ids are below it. */
#define RTPROF_WIRE_MAX_CATEGORIES 64

/* SAMPLE / SAME flags. */
#define RTPROF_SAMPLE_ASLEEP 0x01    /* the thread had said it sleeps */
#define RTPROF_SAMPLE_LABELS 0x02    /* label-only: not interrupted */
#define RTPROF_SAMPLE_TRUNCATED 0x04 /* deeper than the maximum depth */
#define RTPROF_SAMPLE_NO_NATIVE 0x08 /* unwinding failed, signal blocked or
					* not answered within 200 ms */
#define RTPROF_SAMPLE_SIG_BLOCKED 0x10 /* with NO_NATIVE: the thread blocked
					* the sampling signal */

/* BACKTRACE flags (the bit SAMPLE uses for the same thing). */
#define RTPROF_BACKTRACE_TRUNCATED 0x04 /* deeper: the root side is missing */

/* Most frames in one SAMPLE, BACKTRACE or KSTACK record. */
#define RTPROF_REC_MAX_FRAMES 128

/* msgpack ext type carrying a static string's address (fixext 8). */
#define RTPROF_EXT_STRREF 1

/* Id of the counter for the profiler's own memory (VALUES frames). */
#define RTPROF_COUNTER_SELF_MEMORY 0xFFFF
/* Id of the counter for the process's resident memory (sampler). */
#define RTPROF_COUNTER_PROCESS_MEMORY 0xFFFE

/* COUNTER frame "kind" (enum rtprof_counter_kind in rtprof.h). */
#define RTPROF_WIRE_COUNTER_UNSPECIFIED 0
#define RTPROF_WIRE_COUNTER_GAUGE 1
#define RTPROF_WIRE_COUNTER_COUNT 2
#define RTPROF_WIRE_COUNTER_BYTES 3

/* Category names and Gecko colours, by wire id (rtprof_category). */
#define RTPROF_WIRE_CATEGORIES                                                 \
	X(0, "Other", "grey")                                                  \
	X(1, "Idle", "transparent")                                            \
	X(2, "Audio", "orange")                                                \
	X(3, "IO", "lightblue")                                                \
	X(4, "Compute", "yellow")                                              \
	X(5, "Network", "lightblue")                                           \
	X(6, "Graphics", "green")                                              \
	X(7, "User", "blue")                                                   \
	X(8, "Profiler", "purple")
#define RTPROF_WIRE_NCATEGORIES 9
#define RTPROF_WIRE_CAT_USER 7  /* frame marks are shown in it */
/* Longest copied string in a record (str8). */
#define RTPROF_WIRE_MAX_STR 255

#endif /* RTPROF_WIRE_H */
