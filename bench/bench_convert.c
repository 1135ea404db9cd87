/*
 * bench_convert.c - converter throughput against the decoding floor, in one
 * run on one dump (BENCHMARKS.md, "Converter throughput").
 *
 *   bench_convert [--size BYTES] [--runs N] [--seed S] [--dump FILE]
 *                 [--keep] [--gen PATH] [--conv PATH]
 *
 * Unless --dump names an existing dump, gen_dump first writes one of
 * --size bytes (512M; K, M, G suffixes) into a temporary file in $TMPDIR
 * (/tmp), removed at the end unless --keep. Then, --runs times each (3),
 * with the file in the page cache (the generation or a first untimed
 * read put it there):
 *
 *   reader    rtprof_dump_read_fd() on the file with empty callbacks but
 *             on_record (counting): frame scanning, both CRCs, descriptor
 *             payloads and every record walked with the fixed-width
 *             walker; what any converter built on the codec's reader pays
 *             at least (a reference: it is 3x faster than msgpack-c).
 *   msgpack   THE FLOOR of the issue ("msgpack-c decoding the same dump
 *             and nothing else"): the same frames split by their length
 *             field (no CRC) and every payload unpacked with
 *             msgpack_unpack_next() object after object.
 *   convert   msgpack2gecko FILE -o /dev/null -q as a child; wall time
 *             around fork..wait4(), peak RSS from wait4()'s ru_maxrss.
 *   pprof     msgpack2gecko --format pprof FILE -o /dev/null -q (the
 *             pprof export, gzipped: its output is small, the samples
 *             of a stack and thread are one), timed alike.
 *
 * Reported: median (min, max) MB/s (MB = 10^6 bytes of dump), the ratios of
 * the conversion's median to the msgpack-c floor's (target >= 0.5) and to
 * the reader's, and the converter's peak RSS
 * (largest of the runs). Exit status 0, or 1 when a step failed (the
 * converter's own status 1, a damaged dump, counts as failed: the dump is
 * generated and must be clean).
 *
 * Context: single-threaded program.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

#include "dump_reader.h"
#include "frame.h"

#define PROG "bench_convert"
#define MAX_RUNS 50

#ifndef GEN_DUMP_PATH
#define GEN_DUMP_PATH "gen_dump"
#endif
#ifndef MSGPACK2GECKO_PATH
#define MSGPACK2GECKO_PATH "msgpack2gecko"
#endif

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * Run @argv as a child; *@secs: wall time, *@maxrss_kib: its peak RSS.
 * Return: its exit status, or -1 when it did not exit normally.
 */
static int
run_child(char *const argv[], double *secs, long *maxrss_kib)
{
	struct rusage ru;
	double t0 = now_s();
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		execv(argv[0], argv);
		fprintf(stderr, PROG ": %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (wait4(pid, &status, 0, &ru) < 0)
		if (errno != EINTR)
			return -1;
	*secs = now_s() - t0;
	*maxrss_kib = ru.ru_maxrss;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ------------------------------------------------------------------ */
/* The floor: the codec's reader, nothing done with what it decodes.    */

static int
count_record(void *ctx, const struct rtprof_dump_data *d,
    const struct rtprof_rec_view *r)
{
	(void)d;
	(void)r;
	++*(uint64_t *)ctx;
	return 0;
}

static int
floor_run(const char *path, double *secs, uint64_t *records,
    uint64_t *damage)
{
	uint64_t n = 0;
	struct rtprof_dump_cb cb = { .ctx = &n, .on_record = count_record };
	struct rtprof_dump_stats st;
	double t0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	t0 = now_s();
	rc = rtprof_dump_read_fd(fd, &cb, &st);
	*secs = now_s() - t0;
	close(fd);
	*records = n;
	*damage = st.damage;
	return rc;
}

/* ------------------------------------------------------------------ */
/* Plain msgpack-c: frames by their length, payload objects unpacked.    */

static int
msgpack_run(const char *path, double *secs, uint64_t *objects)
{
	const size_t cap = 2 * (RTPROF_FRAME_MAX_PAYLOAD + RTPROF_FRAME_OVERHEAD);
	char *buf = malloc(cap);
	msgpack_unpacked up;
	size_t fill = 0, pos = 0;
	uint64_t nobj = 0;
	double t0;
	int fd, rc = 0;

	if (buf == NULL)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	msgpack_unpacked_init(&up);
	t0 = now_s();
	for (;;) {
		ssize_t r;

		/* Every whole frame in the buffer. */
		while (fill - pos >= RTPROF_FRAME_HEADER_SIZE) {
			const unsigned char *h = (const unsigned char *)buf + pos;
			uint32_t len = rtprof_le32(h + 16);
			size_t off = 0;

			if (len > RTPROF_FRAME_MAX_PAYLOAD) {
				rc = -EBADMSG;
				goto out;
			}
			if (fill - pos < RTPROF_FRAME_OVERHEAD + (size_t)len)
				break;
			while (off < len) {
				if (msgpack_unpack_next(&up, buf + pos +
				    RTPROF_FRAME_HEADER_SIZE, len, &off) !=
				    MSGPACK_UNPACK_SUCCESS) {
					rc = -EBADMSG;
					goto out;
				}
				nobj++;
			}
			pos += RTPROF_FRAME_OVERHEAD + (size_t)len;
		}
		memmove(buf, buf + pos, fill - pos);
		fill -= pos;
		pos = 0;
		r = read(fd, buf + fill, cap - fill);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			break;
		}
		if (r == 0)
			break;
		fill += (size_t)r;
	}
	if (rc == 0 && fill != 0)
		rc = -EBADMSG;
out:
	*secs = now_s() - t0;
	msgpack_unpacked_destroy(&up);
	close(fd);
	free(buf);
	*objects = nobj;
	return rc;
}

/* ------------------------------------------------------------------ */

struct series {
	const char *name;
	double mbps[MAX_RUNS];
	int n;
};

static void
report(const struct series *s, double *med)
{
	double v[MAX_RUNS], lo = s->mbps[0], hi = s->mbps[0];

	for (int i = 0; i < s->n; i++) {
		v[i] = s->mbps[i];
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	*med = median(v, s->n);
	printf("  %-8s %8.1f MB/s median  (min %.1f, max %.1f, %d runs)\n",
	    s->name, *med, lo, hi, s->n);
}

static int
parse_size(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(s, &end, 0);
	if (errno != 0 || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': n <<= 10; end++; break;
	case 'm': case 'M': n <<= 20; end++; break;
	case 'g': case 'G': n <<= 30; end++; break;
	default: break;
	}
	if (*end != 0)
		return -1;
	*v = n;
	return 0;
}

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: " PROG " [--size BYTES] [--runs N] [--seed S] "
	    "[--dump FILE] [--keep]\n"
	    "                     [--gen PATH] [--conv PATH]\n"
	    "Time the codec's reader (the floor), plain msgpack-c and\n"
	    "msgpack2gecko on one dump (generated with gen_dump unless --dump).\n"
	    "  --size BYTES  dump to generate (512M)\n"
	    "  --runs N      timed runs of each step (3)\n"
	    "  --seed S      gen_dump's seed (1)\n"
	    "  --dump FILE   use this dump instead of generating one\n"
	    "  --keep        keep the generated dump (its path is printed)\n"
	    "  --gen PATH    gen_dump (%s)\n"
	    "  --conv PATH   msgpack2gecko (%s)\n",
	    GEN_DUMP_PATH, MSGPACK2GECKO_PATH);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "runs", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 'r' },
		{ "dump", required_argument, NULL, 'd' },
		{ "keep", no_argument, NULL, 'k' },
		{ "gen", required_argument, NULL, 'g' },
		{ "conv", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *gen = GEN_DUMP_PATH, *conv = MSGPACK2GECKO_PATH;
	const char *dump = NULL, *tmpdir = getenv("TMPDIR");
	char path[4096], sizebuf[32], seedbuf[32];
	uint64_t size = 512ull << 20, runs = 3, seed = 1, records = 0;
	uint64_t objects = 0, damage = 0;
	struct series fl = { "reader", { 0 }, 0 }, mp = { "msgpack", { 0 }, 0 };
	struct series cv = { "convert", { 0 }, 0 };
	struct series pp = { "pprof", { 0 }, 0 };
	long rss_max = 0, rss[MAX_RUNS], pp_rss_max = 0, pp_rss;
	double secs, mb, floor_med, mp_med, conv_med, pp_med;
	struct rusage self;
	struct stat sb;
	int keep = 0, c, failed = 0, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_size(optarg, &size) != 0 || size == 0)
				goto bad;
			break;
		case 'n':
			if (parse_size(optarg, &runs) != 0 || runs < 1 ||
			    runs > MAX_RUNS)
				goto bad;
			break;
		case 'r':
			if (parse_size(optarg, &seed) != 0)
				goto bad;
			break;
		case 'd':
			dump = optarg;
			break;
		case 'k':
			keep = 1;
			break;
		case 'g':
			gen = optarg;
			break;
		case 'c':
			conv = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind != argc)
		goto bad;

	if (dump == NULL) {
		char *gargv[] = { (char *)gen, "--size", sizebuf, "--seed",
		    seedbuf, "-o", path, NULL };
		long grss;
		int fd;

		snprintf(path, sizeof(path), "%s/rtprof-bench-XXXXXX.dump",
		    tmpdir && *tmpdir ? tmpdir : "/tmp");
		fd = mkstemps(path, 5);
		if (fd < 0) {
			fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
			return 1;
		}
		close(fd);
		snprintf(sizebuf, sizeof(sizebuf), "%" PRIu64, size);
		snprintf(seedbuf, sizeof(seedbuf), "%" PRIu64, seed);
		rc = run_child(gargv, &secs, &grss);
		if (rc != 0 || stat(path, &sb) != 0) {
			fprintf(stderr, PROG ": %s failed (%d)\n", gen, rc);
			unlink(path);
			return 1;
		}
		printf("generated %s: %.1f MB in %.2f s (%.0f MB/s), "
		    "gen_dump peak RSS %.1f MiB\n", path, (double)sb.st_size / 1e6,
		    secs, (double)sb.st_size / 1e6 / secs, (double)grss / 1024);
		dump = path;
	} else if (stat(dump, &sb) != 0) {
		fprintf(stderr, PROG ": %s: %s\n", dump, strerror(errno));
		return 1;
	} else {
		/* Into the page cache first, as a generated one is. */
		floor_run(dump, &secs, &records, &damage);
	}
	mb = (double)sb.st_size / 1e6;

	/* Interleaved, so that a noisy period hits every step alike. */
	for (uint64_t i = 0; i < runs; i++) {
		char *cargv[] = { (char *)conv, (char *)dump, "-o", "/dev/null",
		    "-q", NULL };
		char *pargv[] = { (char *)conv, "--format", "pprof",
		    (char *)dump, "-o", "/dev/null", "-q", NULL };

		rc = floor_run(dump, &secs, &records, &damage);
		if (rc != 0 || damage != 0) {
			fprintf(stderr, PROG ": floor: rc %d, %" PRIu64
			    " damage reports\n", rc, damage);
			failed = 1;
		}
		fl.mbps[fl.n++] = mb / secs;
		rc = msgpack_run(dump, &secs, &objects);
		if (rc != 0) {
			fprintf(stderr, PROG ": msgpack: %s\n", strerror(-rc));
			failed = 1;
		}
		mp.mbps[mp.n++] = mb / secs;
		rc = run_child(cargv, &secs, &rss[i]);
		if (rc != 0) {
			fprintf(stderr, PROG ": %s exited with %d\n", conv, rc);
			failed = 1;
		}
		cv.mbps[cv.n++] = mb / secs;
		if (rss[i] > rss_max)
			rss_max = rss[i];
		rc = run_child(pargv, &secs, &pp_rss);
		if (rc != 0) {
			fprintf(stderr, PROG ": %s --format pprof exited with "
			    "%d\n", conv, rc);
			failed = 1;
		}
		pp.mbps[pp.n++] = mb / secs;
		if (pp_rss > pp_rss_max)
			pp_rss_max = pp_rss;
	}
	printf("dump %s: %.1f MB, %" PRIu64 " records, %" PRIu64
	    " msgpack objects\n", dump, mb, records, objects);
	report(&fl, &floor_med);
	report(&mp, &mp_med);
	report(&cv, &conv_med);
	report(&pp, &pp_med);
	printf("  ratio    convert / msgpack-c floor = %.2f (target >= 0.5); "
	    "convert / reader = %.2f; reader / msgpack = %.2f\n",
	    conv_med / mp_med, conv_med / floor_med, floor_med / mp_med);
	printf("  ratio    pprof / convert = %.2f\n", pp_med / conv_med);
	printf("  peak RSS msgpack2gecko %.1f MiB (largest of %d runs; target "
	    "< 256 MiB for a 1 GiB dump), --format pprof %.1f MiB\n",
	    (double)rss_max / 1024, cv.n, (double)pp_rss_max / 1024);
	getrusage(RUSAGE_SELF, &self);
	printf("  peak RSS this process (floor + msgpack) %.1f MiB\n",
	    (double)self.ru_maxrss / 1024);
	if (dump == path) {
		if (keep)
			printf("kept %s\n", path);
		else
			unlink(path);
	}
	return failed;
bad:
	usage(stderr);
	return 2;
}
