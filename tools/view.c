/*
 * view.c - `rtprof view [options] FILE...`: dumps or a profile -> the
 * Firefox Profiler. The command converts dumps (tools/convert.c, the code
 * msgpack2gecko uses) into a gzip-compressed profile in an unlinked
 * temporary file, or takes a profile that is already converted
 * (tools/view_prepare.c), serves it from 127.0.0.1 (tools/view_serve.c)
 * and prints, or opens, the Firefox Profiler's from-url address for it:
 * https://profiler.firefox.com/from-url/<local URL>/.
 *
 * Context: main thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sigpipe.h"
#include "view.h"
#include "view_int.h"

#define ORIGIN_MAX 200                  /* --allow-origin length */

extern char **environ;

void
view_usage(FILE *f)
{
	fprintf(f,
	    "usage: " VIEW " [options] FILE...\n"
	    "Show a recording in the Firefox Profiler (" PROFILER_ORIGIN ").\n"
	    "FILE is one or more rtprof dumps, converted into one profile as\n"
	    "msgpack2gecko does (- reads a dump from stdin), or one profile\n"
	    "already converted (JSON, or gzip-compressed JSON). A small HTTP\n"
	    "server bound to 127.0.0.1 serves it, gzip-compressed, under a\n"
	    "random path; the Firefox Profiler's from-url address for it is\n"
	    "printed, and opened with xdg-open when there is a display\n"
	    "(DISPLAY or WAYLAND_DISPLAY) through a page only you can read\n"
	    "(the address is never in a command line that other users see\n"
	    "in ps). Nothing else is served. The server\n"
	    "stops on Ctrl-C (or SIGTERM), or once the profile was fetched\n"
	    "and the grace period passed.\n"
	    "options:\n"
	    "  --port N          listen on port N (default: a free port)\n"
	    "  --no-open         do not open a browser\n"
	    "  --grace S         stop S seconds after the profile was last\n"
	    "                    fetched (default 10; 0: right away)\n"
	    "  --allow-origin O  also let web pages of origin O (such as\n"
	    "                    http://127.0.0.1:8000) fetch the profile;\n"
	    "                    repeatable (" PROFILER_ORIGIN " always can)\n"
	    "  -v, --verbose     log every request on stderr\n"
	    "  -q, --quiet       no progress bar, no message for damage\n"
	    "  -h, --help        this help\n"
	    "conversion options (dumps only):\n");
	fputs(tool_convert_help, f);
	fprintf(f,
	    "exit status:\n"
	    "  0  served; stopped after the grace period or by Ctrl-C/SIGTERM\n"
	    "  1  the same, but a dump was damaged (converted what was\n"
	    "     readable; listed on stderr and in profileGatheringLog)\n"
	    "  2  usage error; a FILE unreadable, neither a dump nor a\n"
	    "     whole profile (JSON cut short, or without meta.version\n"
	    "     and threads), of a newer dump format; a --thread NAME\n"
	    "     no thread has; conversion failed\n"
	    "  3  the server could not start (port in use, ...) or failed\n");
}
/* encodeURIComponent(@in) into @out (@n bytes, enough: 3 per byte + 1). */
static void
percent_encode(const char *in, char *out, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *in != '\0' && o + 4 <= n; in++) {
		unsigned char ch = (unsigned char)*in;

		if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || strchr("-_.!~*'()", ch)) {
			out[o++] = (char)ch;
		} else {
			out[o++] = '%';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		}
	}
	out[o] = '\0';
}

/*
 * The page the browser is opened with. The from-url address carries the
 * profile's secret path, and an argument is public: any local user reads
 * it in ps (xdg-open's, then the browser's). So the opener gets the path
 * of a page only this user can read (mode 0600 in a fresh 0700
 * directory, in $XDG_RUNTIME_DIR, else $TMPDIR, else /tmp), which sends
 * the browser on to the address; nothing in an argument or in the
 * environment fetches the profile. Removed when the server stops.
 */
struct open_page {
	char dir[PATH_MAX];
	char file[PATH_MAX + 16];
};

static const char *
page_base(void)
{
	static const char *const vars[] = { "XDG_RUNTIME_DIR", "TMPDIR" };

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *d = getenv(vars[i]);

		if (d != NULL && d[0] == '/')
			return d;
	}
	return "/tmp";
}

/* Write the redirecting page for @from_url to the open descriptor @fd. */
static int
page_write(int fd, const char *from_url)
{
	FILE *f = fdopen(fd, "w");
	int rc;

	if (f == NULL) {
		close(fd);
		return -1;
	}
	/* @from_url is percent-encoded: no quote, no '<' or '&' in it. */
	fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
	    "<meta name=\"referrer\" content=\"no-referrer\">\n"
	    "<meta http-equiv=\"refresh\" content=\"0; url=%s\">\n"
	    "<title>rtprof view</title></head>\n"
	    "<body><p>Opening <a href=\"%s\">the profile in the Firefox "
	    "Profiler</a>.</p>\n<script>location.replace(\"%s\");</script>"
	    "\n</body></html>\n", from_url, from_url, from_url);
	rc = ferror(f) ? -1 : 0;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

/* Make @pg for @from_url. Return: 0, or -1 (message printed). */
static int
page_create(struct open_page *pg, const char *from_url)
{
	int fd;

	pg->file[0] = '\0';
	if (snprintf(pg->dir, sizeof(pg->dir), "%s/rtprof-view-XXXXXX",
	    page_base()) >= (int)sizeof(pg->dir) || mkdtemp(pg->dir) == NULL) {
		fprintf(stderr, VIEW ": cannot make a private directory in "
		    "%s: %s\n", page_base(), strerror(errno));
		pg->dir[0] = '\0';
		return -1;
	}
	snprintf(pg->file, sizeof(pg->file), "%s/open.html", pg->dir);
	fd = open(pg->file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd < 0 || page_write(fd, from_url) != 0) {
		fprintf(stderr, VIEW ": cannot write %s: %s\n", pg->file,
		    strerror(errno));
		return -1;
	}
	return 0;
}

static void
page_remove(struct open_page *pg)
{
	if (pg->file[0] != '\0')
		unlink(pg->file);
	if (pg->dir[0] != '\0')
		rmdir(pg->dir);
	pg->file[0] = pg->dir[0] = '\0';
}

/*
 * Open @url with the desktop's opener (xdg-open), not waiting for it.
 * The opener may start the browser itself and wait for it (xdg-open
 * does on a desktop it does not know), so it runs in a session of its
 * own: the Ctrl-C that stops this server (sent to the terminal's
 * foreground process group) must not kill the browser just opened. It
 * gets the signal dispositions and mask of a normal start, not our
 * ignored SIGPIPE. Return: its pid, or -1 (message printed).
 */
static pid_t
open_browser(const char *url)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	char *argv[] = { "xdg-open", (char *)url, NULL };
	pid_t pid;
	int rc;

	posix_spawn_file_actions_init(&fa);
	/* Its chatter would mix with our messages; errors still show. */
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null",
	    O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null",
	    O_WRONLY, 0);
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGTERM);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID |
	    POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawnp(&pid, "xdg-open", &fa, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		fprintf(stderr, VIEW ": cannot run xdg-open (%s): open the "
		    "address above in a browser\n", strerror(rc));
		return -1;
	}
	return pid;
}

static bool
origin_ok(const char *o)
{
	size_t n = strlen(o);

	if (n > ORIGIN_MAX || n == 0 || o[n - 1] == '/')
		return false;
	if (strncmp(o, "http://", 7) != 0 && strncmp(o, "https://", 8) != 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)o[i] <= ' ' || o[i] == 0x7f)
			return false;
	return true;
}

static bool
parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	return errno == 0 && end != s && *end == '\0' && s[0] != '-' &&
	    *v <= max;
}

/* What the command line asks for. */
struct view_args {
	struct tool_convert_opts opts;
	const char **origins;           /* PROFILER_ORIGIN, then --allow-origin */
	size_t norigins;
	char **in;                      /* the FILEs */
	int nin;
	unsigned long port;
	double grace;                   /* s */
	bool no_open, quiet, verbose;
};

/* The value @v of option @a (--port, --grace or --allow-origin) into
 * @va. Return: 0, or EXIT_USAGE (message printed). */
static int
view_arg_value(struct view_args *va, const char *a, char *v)
{
	char *end;

	if (strcmp(a, "--port") == 0) {
		if (parse_uint(v, 65535, &va->port))
			return 0;
		fprintf(stderr, VIEW ": --port: not a port number: %s\n", v);
		return EXIT_USAGE;
	}
	if (strcmp(a, "--grace") == 0) {
		errno = 0;
		va->grace = strtod(v, &end);
		if (errno == 0 && end != v && *end == '\0' &&
		    va->grace >= 0 && va->grace <= 1e6)
			return 0;
		fprintf(stderr, VIEW ": --grace: not a number of seconds "
		    "(0 to 1e6): %s\n", v);
		return EXIT_USAGE;
	}
	if (!origin_ok(v)) {
		fprintf(stderr, VIEW ": --allow-origin: not an origin "
		    "(http[s]://host[:port], no path): %s\n", v);
		return EXIT_USAGE;
	}
	va->origins[va->norigins++] = v;
	return 0;
}

/* A flag @a before "--" into @va. Return: 1 taken, 0 not a flag of
 * view's, 2 -h or --help (the help printed). */
static int
view_arg_flag(struct view_args *va, const char *a)
{
	if (strcmp(a, "--no-open") == 0)
		va->no_open = true;
	else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0)
		va->verbose = true;
	else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0)
		va->quiet = true;
	else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
		view_usage(stdout);
		return 2;
	} else
		return 0;
	return 1;
}

/* The FILEs @va->in: at least one, stdin at most once.
 * Return: 0, or EXIT_USAGE (message printed). */
static int
view_args_files(const struct view_args *va)
{
	for (int i = 0, stdin_used = 0; i < va->nin; i++) {
		if (strcmp(va->in[i], "-") == 0 && stdin_used++) {
			fprintf(stderr, VIEW ": stdin (-) given twice\n");
			return EXIT_USAGE;
		}
	}
	if (va->nin == 0) {
		view_usage(stderr);
		return EXIT_USAGE;
	}
	return tool_convert_check(&va->opts, VIEW) != 0 ? EXIT_USAGE : 0;
}

/* Parse @argv into @va (set up by view_args_init()).
 * Return: -1 go on, or the exit status to return now. */
static int
view_args_parse(struct view_args *va, int argc, char **argv)
{
	bool opts_done = false;
	int r;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has_arg = !opts_done && (strcmp(a, "--port") == 0 ||
		    strcmp(a, "--grace") == 0 ||
		    strcmp(a, "--allow-origin") == 0);

		if (has_arg && i + 1 >= argc) {
			fprintf(stderr, VIEW ": %s needs an argument\n", a);
			return EXIT_USAGE;
		}
		if (has_arg) {
			if (view_arg_value(va, a, argv[++i]) != 0)
				return EXIT_USAGE;
		} else if (!opts_done && (r = tool_convert_option(&va->opts,
		    VIEW, argc, argv, &i)) != 0) {
			if (r < 0)
				return EXIT_USAGE;
		} else if (!opts_done && (r = view_arg_flag(va, a)) != 0) {
			if (r == 2)
				return EXIT_OK;
		} else if (!opts_done && strcmp(a, "--") == 0) {
			opts_done = true;
		} else if (!opts_done && a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, VIEW ": unknown option %s\n", a);
			view_usage(stderr);
			return EXIT_USAGE;
		} else {
			va->in[va->nin++] = argv[i];
		}
	}
	r = view_args_files(va);
	return r != 0 ? r : -1;
}

/* Return: 0, or EXIT_USAGE (message printed). */
static int
view_args_init(struct view_args *va, int argc)
{
	memset(va, 0, sizeof(*va));
	va->grace = 10.0;
	if (tool_convert_opts_init(&va->opts, VIEW, argc) != 0)
		return EXIT_USAGE;
	va->in = calloc((size_t)argc + 1, sizeof(*va->in));
	va->origins = calloc((size_t)argc + 2, sizeof(*va->origins));
	if (va->in == NULL || va->origins == NULL) {
		fprintf(stderr, VIEW ": out of memory\n");
		return EXIT_USAGE;
	}
	va->origins[va->norigins++] = PROFILER_ORIGIN;
	return 0;
}

static void
view_args_free(struct view_args *va)
{
	free(va->in);
	free(va->origins);
	tool_convert_opts_free(&va->opts);
}

static bool
has_display(void)
{
	const char *d = getenv("DISPLAY"), *w = getenv("WAYLAND_DISPLAY");

	return (d != NULL && d[0] != '\0') || (w != NULL && w[0] != '\0');
}

/*
 * Print where @s serves the profile and its from-url address, and open
 * that in a browser through @page when there is a display (and no
 * --no-open). Return: the opener's pid, or -1.
 */
static pid_t
view_announce(const struct server *s, const struct view_args *va,
    struct open_page *page)
{
	char url[128], enc[3 * sizeof(url) + 1];
	char from_url[sizeof(enc) + 64];
	pid_t opener = -1;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", s->port, s->path);
	percent_encode(url, enc, sizeof(enc));
	snprintf(from_url, sizeof(from_url), PROFILER_ORIGIN
	    "/from-url/%s/", enc);
	printf(VIEW ": serving the profile (%.1f kB gzip) at %s\n"
	    VIEW ": open it in the Firefox Profiler: %s\n",
	    (double)s->body_len / 1e3, url, from_url);
	if (!va->no_open && has_display()) {
		fflush(stdout);
		if (page_create(page, from_url) == 0) {
			printf(VIEW ": opening it with xdg-open, through %s (a "
			    "page only you can read)\n", page->file);
			fflush(stdout);
			opener = open_browser(page->file);
		}
	} else if (!va->no_open) {
		printf(VIEW ": no display: open the address above in a "
		    "browser\n");
	}
	printf(VIEW ": Ctrl-C stops; stops by itself %.3g s after the "
	    "profile was fetched\n", va->grace);
	fflush(stdout);
	return opener;
}

/*
 * Prepare the profile of @va's FILEs, then serve it until the grace
 * period after a fetch ends, or a signal. Return: the exit status.
 */
static int
view_serve(const struct view_args *va)
{
	struct server s = { .lfd = -1, .sig_fd = -1, .body_fd = -1 };
	struct open_page page = { .dir = "", .file = "" };
	static const int sigs[] = { SIGINT, SIGTERM };
	pid_t opener = -1;
	int status, prep;

	s.origins = va->origins;
	s.norigins = va->norigins;
	s.verbose = va->verbose;
	s.grace_ms = (int64_t)(va->grace * 1000.0 + 0.5);
	prep = view_prepare(va->in, va->nin, &va->opts, va->quiet,
	    &s.body_fd, &s.body_len);
	if (prep == EXIT_USAGE)
		return EXIT_USAGE;
	/* Signals before the socket: a Ctrl-C from now on is a clean stop. */
	if ((s.sig_fd = tool_sigpipe_open(sigs, 2)) < 0) {
		fprintf(stderr, VIEW ": pipe: %s\n", strerror(errno));
		status = EXIT_SERVER;
	} else if ((status = view_server_open(&s, (unsigned)va->port)) == 0) {
		opener = view_announce(&s, va, &page);
		status = view_server_run(&s);
		fflush(stdout);
		if (status == EXIT_OK)
			status = prep;
	}
	page_remove(&page);
	if (opener > 0)
		waitpid(opener, NULL, WNOHANG);
	view_server_close(&s);
	return status;
}

/*
 * cmd_view - rtprof view [options] FILE...
 * Context: main thread.
 * Return: exit status (see view_usage()).
 */
int
cmd_view(int argc, char **argv)
{
	struct view_args va;
	int status = view_args_init(&va, argc);

	if (status == 0 && (status = view_args_parse(&va, argc, argv)) < 0)
		status = view_serve(&va);
	view_args_free(&va);
	return status;
}
