/*
 * rtprof.c - the rtprof command: dispatch to its subcommands.
 *
 *   rtprof view [options] FILE...    dumps or a profile -> Firefox Profiler
 *                                          (tools/view.c)
 *   rtprof record [OPTIONS] -- CMD...       (tools/record.c)
 *   rtprof summarize [OPTIONS] FILE...     (tools/summarize.c)
 *   rtprof capture INPUT -o DIR           (tools/capture.c)
 *   rtprof help [COMMAND]
 *
 * Context: main thread.
 */
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "record.h"
#include "summarize.h"
#include "view.h"

#define PROG "rtprof"

enum { EXIT_OK = 0, EXIT_USAGE = 2 };

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: " PROG " COMMAND [options] [ARGS]\n"
	    "commands:\n"
	    "  view FILE...     show dumps or a converted profile in the\n"
	    "                   Firefox Profiler (served from this machine)\n"
	    "  record           run a program under rtprof and make its profile\n"
	    "  capture          capture a board's dump stream (serial line,\n"
	    "                   TCP, Unix socket, stdin) into files, one per\n"
	    "                   session, skipping damage\n"
	    "  summarize        blocked time, CPU per thread, top functions\n"
	    "                   of dumps or profiles (--folded: stacks)\n"
	    "  help [COMMAND]   this help, or a command's\n"
	    "'" PROG " COMMAND --help' also prints a command's help.\n");
}

/*
 * main - dispatch to the subcommand.
 * Context: main thread.
 * Return: the subcommand's exit status; 2 for a usage error.
 */
int
main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (cmd == NULL) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(cmd, "help") == 0) {
		if (argc > 2 && strcmp(argv[2], "view") == 0) {
			view_usage(stdout);
			return EXIT_OK;
		}
		if (argc > 2 && strcmp(argv[2], "record") == 0) {
			record_usage(stdout);
			return EXIT_OK;
		}
		if (argc > 2 && strcmp(argv[2], "summarize") == 0) {
			summarize_usage(stdout);
			return EXIT_OK;
		}
		if (argc > 2 && strcmp(argv[2], "capture") == 0) {
			capture_usage(stdout);
			return EXIT_OK;
		}
		if (argc > 2) {
			fprintf(stderr, PROG ": no command %s\n", argv[2]);
			usage(stderr);
			return EXIT_USAGE;
		}
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(cmd, "view") == 0)
		return cmd_view(argc - 1, argv + 1);
	if (strcmp(cmd, "record") == 0)
		return cmd_record(argc - 1, argv + 1);
	if (strcmp(cmd, "summarize") == 0)
		return cmd_summarize(argc - 1, argv + 1);
	if (strcmp(cmd, "capture") == 0)
		return cmd_capture(argc - 1, argv + 1);
	fprintf(stderr, PROG ": unknown command %s\n", cmd);
	usage(stderr);
	return EXIT_USAGE;
}
