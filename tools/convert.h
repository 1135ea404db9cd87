/*
 * convert.h - the dump-to-profile conversion shared by the tools.
 *
 * msgpack2gecko writes the profile to a file or stdout; `rtprof view`
 * writes it gzip-compressed into a temporary file that it then serves.
 * Both read their dumps one at a time with the same progress bar, the same
 * messages and the same exit statuses (0 clean, 1 converted with damage,
 * 2 failure), through the calls below. Messages start with the program's
 * name (@prog), e.g. "msgpack2gecko: x.rtprof: offset 12: damaged: ...".
 *
 * Everything here runs on the program's main thread; the only other
 * thread of the tools is gzout's (gzout.h), which compresses what
 * tool_out_write() hands it and touches nothing else.
 */
#ifndef RTPROF_TOOLS_CONVERT_H
#define RTPROF_TOOLS_CONVERT_H

#include <stdbool.h>
#include <stddef.h>
#include <zlib.h>

#include "gecko.h"
#include "gzout.h"
#include "pprof.h"

/* What tool_convert() writes. */
enum tool_format {
	TOOL_FORMAT_GECKO = 0,          /* Firefox Profiler JSON (gecko.h) */
	TOOL_FORMAT_PPROF,              /* pprof profile.proto (pprof.h) */
};

/*
 * The conversion options both programs accept (--from, --to, --thread,
 * --sysroot, --debug-dir, --no-symbols): filled by tool_convert_option().
 * The string arrays point into argv.
 */
struct tool_convert_opts {
	struct rtprof_gecko_filter filter;
	struct rtprof_gecko_symbols sym;
	const char **threads;           /* filter.threads, argc entries */
	const char **debug_dirs;        /* sym.debug_dirs, argc entries */
	/* Gathering notes for the profile (rtprof_gecko_writer_note);
	 * the caller's, NULL: none. */
	const struct rtprof_gecko_note *notes;
	size_t nnotes;
	enum tool_format format;        /* TOOL_FORMAT_GECKO unless set */
};

/*
 * A sink that writes to a descriptor, through gzip when @zo (gzout.h:
 * compressed on a second thread) or @gz (gzdopen) is set;
 * tool_out_write() is its rtprof_gecko_write_cb.
 */
struct tool_out {
	int fd;
	gzFile gz;
	struct gzout *zo;
};

/* Context: main thread. Return: 0 or a negative errno. */
int tool_out_write(void *ctx, const void *p, size_t n);

/*
 * tool_convert_opts_init - empty options for a command line of @argc words.
 * Context: main thread; allocates.
 * Return: 0, or -ENOMEM (message printed).
 */
int tool_convert_opts_init(struct tool_convert_opts *o, const char *prog,
    int argc);

/* Context: main thread. Frees what tool_convert_opts_init() allocated. */
void tool_convert_opts_free(struct tool_convert_opts *o);

/*
 * tool_convert_option - take argv[*i] (and its argument) when it is one
 * of the conversion options; *@i is left on the last word used.
 * Context: main thread.
 * Return: 1 taken; 0 not a conversion option; -1 bad value (message
 * printed: a usage error).
 */
int tool_convert_option(struct tool_convert_opts *o, const char *prog,
    int argc, char **argv, int *i);

/*
 * tool_convert_check - the checks made once every option is read
 * (--to before --from).
 * Context: main thread.
 * Return: 0, or -1 (message printed: a usage error).
 */
int tool_convert_check(const struct tool_convert_opts *o, const char *prog);

/* The help text of the conversion options, for usage() screens. */
extern const char tool_convert_help[];

/*
 * tool_read_dump - read the dump @path ("-": stdin) into a new converter,
 * with a progress bar on stderr when @progress.
 * @sym: symbol options (NULL: defaults), kept by reference.
 *
 * Context: main thread; blocks in read(2).
 * Return: 0 with *@gp set, or 2 (error printed).
 */
int tool_read_dump(const char *prog, const char *path, bool progress,
    const struct rtprof_gecko_symbols *sym, struct rtprof_gecko **gp);

/*
 * How tool_convert() gets its output. @open is called once, after the
 * first dump was read and before anything is written (so a dump that
 * cannot be read leaves no output behind); it prints its own error and
 * returns nonzero on failure. @write then gets the profile's bytes.
 */
struct tool_convert_sink {
	int (*open)(void *ctx);
	rtprof_gecko_write_cb write;
	void *ctx;
};

/*
 * tool_convert - convert the dumps @in[0..@nin) into one profile written
 * through @sink, in @o->format (pprof: the protobuf bytes, which the sink
 * compresses; gathering notes are not written); damage is reported on
 * stderr unless @quiet.
 * @opened: set when @sink->open was called (and succeeded): the caller
 * then has an output to finish or remove.
 * @werr: on return 2 with *@werr != 0, the profile could not be written
 * (the sink's or the writer's negative errno), and nothing was printed:
 * the caller names its output; otherwise the message was printed.
 *
 * Context: main thread; blocks in read(2) and in the sink.
 * Return: exit status 0 (clean), 1 (converted, a dump was damaged), 2.
 */
int tool_convert(const char *prog, char **in, int nin,
    const struct tool_convert_opts *o, bool quiet, bool progress,
    const struct tool_convert_sink *sink, bool *opened, int *werr);

#endif /* RTPROF_TOOLS_CONVERT_H */
