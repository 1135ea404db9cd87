/*
 * view_prepare.c - the profile `rtprof view` serves: dumps converted as
 * msgpack2gecko converts them (tools/convert.c), or a converted profile
 * (checked whole first: never serve what the Firefox Profiler cannot
 * load), gzip-compressed into an unlinked temporary file, or served as it
 * is when it is gzip-compressed already.
 *
 * Pipeline: tools/view.c (options) -> here (the body) -> tools/view_serve.c
 * (the server sends the body's bytes).
 *
 * Context: main thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "summarize.h"
#include "view_int.h"

enum input_kind {
	INPUT_DUMP,
	INPUT_JSON,             /* a converted profile, plain */
	INPUT_GZIP_JSON,        /* a converted profile, gzip-compressed */
};

/* True when @p (@n bytes) starts, after white space or a BOM, with '{'. */
static bool
looks_like_json(const unsigned char *p, size_t n)
{
	size_t i = 0;

	if (n >= 3 && p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)
		i = 3;
	while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' ||
	    p[i] == '\n'))
		i++;
	return i < n && p[i] == '{';
}

/*
 * Tell a dump from a converted profile. A dump starts with the frame sync
 * bytes "\xD4RTP" (docs/wire-format.md), a profile with '{' (JSON) or the
 * gzip magic 1f 8b followed by compressed JSON. Anything else is handed to
 * the dump reader, which finds frames after leading garbage or says that
 * the file is not a dump. Return: 0 with *@kind set, or EXIT_USAGE
 * (message printed).
 */
static int
sniff(const char *path, enum input_kind *kind)
{
	unsigned char head[512];
	ssize_t n;
	int fd;

	*kind = INPUT_DUMP;
	if (strcmp(path, "-") == 0)
		return 0;       /* stdin cannot be peeked at: a dump */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, VIEW ": %s: cannot open: %s\n", path,
		    strerror(errno));
		return EXIT_USAGE;
	}
	do
		n = read(fd, head, sizeof(head));
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		fprintf(stderr, VIEW ": %s: cannot read: %s\n", path,
		    strerror(errno));
		close(fd);
		return EXIT_USAGE;
	}
	if (n >= 4 && memcmp(head, "\xd4RTP", 4) == 0) {
		*kind = INPUT_DUMP;
	} else if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) {
		gzFile gz;
		int d = dup(fd);
		int z = -1;

		if (d >= 0 && lseek(d, 0, SEEK_SET) == 0 &&
		    (gz = gzdopen(d, "rb")) != NULL) {
			d = -1;         /* gzclose() closes it */
			z = gzread(gz, head, sizeof(head));
			gzclose(gz);
		}
		if (d >= 0)
			close(d);
		if (z > 0 && looks_like_json(head, (size_t)z))
			*kind = INPUT_GZIP_JSON;
	} else if (looks_like_json(head, (size_t)n)) {
		*kind = INPUT_JSON;
	}
	close(fd);
	return 0;
}

/* An unlinked read-write file in $TMPDIR (else /tmp). Return: fd or -1. */
static int
tmpfile_open(void)
{
	const char *dir = getenv("TMPDIR");
	char path[PATH_MAX];
	int fd;

	if (dir == NULL || dir[0] == '\0')
		dir = "/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	/* A file system without O_TMPFILE: create, then unlink at once. */
	if (snprintf(path, sizeof(path), "%s/rtprof-view-XXXXXX", dir) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		unlink(path);
	return fd;
}

/* Open @tmp for gzip writing; @tmp itself stays open. NULL on failure. */
static gzFile
gz_on(int tmp)
{
	int d = dup(tmp);
	gzFile gz;

	if (d < 0)
		return NULL;
	gz = gzdopen(d, "wb6");
	if (gz == NULL)
		close(d);
	return gz;
}

/* gzip the plain JSON profile @path into @tmp. Return: 0 or EXIT_USAGE. */
static int
gzip_file(const char *path, int tmp)
{
	char buf[65536];
	struct tool_out o = { .fd = -1 };
	ssize_t n;
	int fd, rc = 0, zr;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, VIEW ": %s: cannot open: %s\n", path,
		    strerror(errno));
		return EXIT_USAGE;
	}
	o.gz = gz_on(tmp);
	if (o.gz == NULL) {
		fprintf(stderr, VIEW ": cannot start gzip\n");
		close(fd);
		return EXIT_USAGE;
	}
	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, VIEW ": %s: cannot read: %s\n", path,
			    strerror(errno));
			rc = EXIT_USAGE;
			break;
		}
		if (n == 0)
			break;
		if (tool_out_write(&o, buf, (size_t)n) != 0) {
			rc = -1;
			break;
		}
	}
	close(fd);
	zr = gzclose(o.gz);
	if (rc == -1 || (rc == 0 && zr != Z_OK)) {
		fprintf(stderr, VIEW ": writing the temporary file failed\n");
		rc = EXIT_USAGE;
	}
	return rc;
}

/* view_prepare - see view_int.h. */
int
view_prepare(char **in, int nin, const struct tool_convert_opts *opts,
    bool quiet, int *fd, off_t *len)
{
	enum input_kind kind = INPUT_DUMP;
	struct stat sb;
	int status = EXIT_OK, tmp, ndumps = 0, nprof = 0;

	for (int i = 0; i < nin; i++) {
		enum input_kind k;

		if (sniff(in[i], &k) != 0)
			return EXIT_USAGE;
		if (k == INPUT_DUMP)
			ndumps++;
		else
			nprof++;
		if (i == 0 || k != INPUT_DUMP)
			kind = k;
	}
	/* One URL shows one profile, and profiles cannot be merged. */
	if (nprof > 1 || (nprof == 1 && ndumps != 0)) {
		fprintf(stderr, VIEW ": give one converted profile, or "
		    "dumps only (they become one profile)\n");
		return EXIT_USAGE;
	}
	/* Never serve what the Firefox Profiler cannot load: checked whole. */
	if (nprof == 1 && summarize_check_profile(VIEW, in[0]) != 0)
		return EXIT_USAGE;
	if (kind == INPUT_GZIP_JSON) {
		/* Served as it is: the bytes are already what we send. */
		*fd = open(in[0], O_RDONLY | O_CLOEXEC);
		if (*fd < 0 || fstat(*fd, &sb) != 0) {
			fprintf(stderr, VIEW ": %s: cannot open: %s\n", in[0],
			    strerror(errno));
			if (*fd >= 0)
				close(*fd);
			return EXIT_USAGE;
		}
		*len = sb.st_size;
		return EXIT_OK;
	}
	tmp = tmpfile_open();
	if (tmp < 0) {
		fprintf(stderr, VIEW ": cannot create a temporary file: %s\n",
		    strerror(errno));
		return EXIT_USAGE;
	}
	if (kind == INPUT_JSON) {
		status = gzip_file(in[0], tmp);
	} else {
		struct tool_out o = { .fd = -1, .gz = gz_on(tmp) };
		const struct tool_convert_sink sink = {
			.write = tool_out_write, .ctx = &o,
		};
		bool opened;
		int werr, zr;

		if (o.gz == NULL) {
			fprintf(stderr, VIEW ": cannot start gzip\n");
			close(tmp);
			return EXIT_USAGE;
		}
		status = tool_convert(VIEW, in, nin, opts, quiet,
		    !quiet && isatty(STDERR_FILENO), &sink, &opened, &werr);
		zr = gzclose(o.gz);
		if (status != EXIT_USAGE && zr != Z_OK)
			werr = -EIO;
		if (werr != 0) {
			fprintf(stderr, VIEW ": writing the temporary file: "
			    "%s\n", strerror(-werr));
			status = EXIT_USAGE;
		}
	}
	if (status == EXIT_USAGE || fstat(tmp, &sb) != 0) {
		close(tmp);
		return EXIT_USAGE;
	}
	*fd = tmp;
	*len = sb.st_size;
	return status;
}
