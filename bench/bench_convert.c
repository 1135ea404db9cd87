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
 * interleaved, with the file in the page cache (the generation or a first
 * untimed read put it there):
 *
 *   reader    rtprof_dump_read_fd() on the file with empty callbacks but
 *             on_record (counting): frame scanning, both CRCs, descriptor
 *             payloads and every record walked with the fixed-width
 *             walker; what any converter built on the codec's reader pays
 *             at least.
 *   msgpack   msgpack-c decoding the same dump and nothing else: the same
 *             frames split by their length field (no CRC) and every
 *             payload unpacked with msgpack_unpack_next() object after
 *             object (a fresh zone per object).
 *   mp-zone   THE FAIR FLOOR (issue 17): the same, unpacked with
 *             msgpack_unpack() into one zone per frame, cleared after it.
 *   json      the converter's JSON writer alone (codec/gecko_json.h):
 *             rows shaped like a profile's (sample rows formatted by
 *             hand as the converter does, marker rows through the
 *             writer's calls, strings) into a sink that drops them;
 *             MB/s of JSON written.
 *   convert   msgpack2gecko FILE -o /dev/null -q as a child.
 *   conv-gz   msgpack2gecko FILE -o TMP.json.gz -q as a child: the form
 *             users open, compressed on a second thread (tools/gzout.h).
 *   pprof     msgpack2gecko --format pprof FILE -o /dev/null -q (the
 *             pprof export, gzipped: its output is small, the samples
 *             of a stack and thread are one), timed alike.
 *
 * Every step is timed in CPU time (getrusage: user + system, of this
 * process for in-process steps, of the child from wait4() for the
 * converter, all its threads), the measure that holds on a machine
 * shared with other work, and in wall time. Reported: median (min, max)
 * MB/s of CPU time (MB = 10^6 bytes of dump; of JSON for json), the
 * medians' ratios of convert and conv-gz to the fair floor (target >= 0.8
 * for conv-gz), conv-gz's wall time, the converters' peak RSS (largest
 * of the runs) and the load average before and after. Exit status 0, or
 * 1 when a step failed (the converter's own status 1, a damaged dump,
 * counts as failed: the dump is generated and must be clean).
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

#include "clock.h"
#include "dump_reader.h"
#include "frame.h"
#include "gecko_json.h"

#define PROG "bench_convert"
#define MAX_RUNS 50
/* mp-zone's zone: one chunk holds a frame's objects (a frame's payload
 * is at most RTPROF_FRAME_MAX_PAYLOAD; its objects take about as much),
 * so that clearing it per frame leaves nothing to allocate. */
#define ZONE_CHUNK (4u << 20)

#ifndef GEN_DUMP_PATH
#define GEN_DUMP_PATH "gen_dump"
#endif
#ifndef MSGPACK2GECKO_PATH
#define MSGPACK2GECKO_PATH "msgpack2gecko"
#endif

static double
now_s(void)
{
	return bench_clock_s(CLOCK_MONOTONIC);
}

/* CPU time of this process (all its threads), user + system, s. */
static double
cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	    ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6;
}

/* A step's times: wall and CPU, s. */
struct times {
	double wall, cpu;
};

static void
times_start(struct times *t)
{
	t->wall = now_s();
	t->cpu = cpu_s();
}

static void
times_stop(struct times *t)
{
	t->wall = now_s() - t->wall;
	t->cpu = cpu_s() - t->cpu;
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
 * Run @argv as a child; *@t: its wall and CPU time (user + system, every
 * thread), *@maxrss_kib: its peak RSS.
 * Return: its exit status, or -1 when it did not exit normally.
 */
static int
run_child(char *const argv[], struct times *t, long *maxrss_kib)
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
	t->wall = now_s() - t0;
	t->cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	    ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6;
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
floor_run(const char *path, struct times *t, uint64_t *records,
    uint64_t *damage)
{
	uint64_t n = 0;
	struct rtprof_dump_cb cb = { .ctx = &n, .on_record = count_record };
	struct rtprof_dump_stats st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	times_start(t);
	rc = rtprof_dump_read_fd(fd, &cb, &st);
	times_stop(t);
	close(fd);
	*records = n;
	*damage = st.damage;
	return rc;
}

/* ------------------------------------------------------------------ */
/* Plain msgpack-c: frames by their length, payload objects unpacked.    */

/*
 * Unpack the @len bytes of payload @p object by object: with
 * msgpack_unpack_next() (a fresh zone per object), or, with @zone, with
 * msgpack_unpack() into @zone, cleared after the frame.
 * Return: objects, or -1 on a decoding error.
 */
static int64_t
unpack_payload(msgpack_unpacked *up, msgpack_zone *zone, const char *p,
    size_t len)
{
	size_t off = 0;
	int64_t n = 0;

	while (off < len) {
		msgpack_object obj;
		msgpack_unpack_return r;

		/* msgpack_unpack(): EXTRA_BYTES when more objects follow. */
		if (zone == NULL)
			r = msgpack_unpack_next(up, p, len, &off);
		else if ((r = msgpack_unpack(p, len, &off, zone, &obj)) ==
		    MSGPACK_UNPACK_EXTRA_BYTES)
			r = MSGPACK_UNPACK_SUCCESS;
		if (r != MSGPACK_UNPACK_SUCCESS)
			return -1;
		n++;
	}
	if (zone != NULL)
		msgpack_zone_clear(zone);
	return n;
}

static int
msgpack_run(const char *path, bool one_zone, struct times *t,
    uint64_t *objects)
{
	const size_t cap = 2 * (RTPROF_FRAME_MAX_PAYLOAD + RTPROF_FRAME_OVERHEAD);
	char *buf = malloc(cap);
	msgpack_unpacked up;
	msgpack_zone zone;
	size_t fill = 0, pos = 0;
	uint64_t nobj = 0;
	int fd, rc = 0;

	if (buf == NULL)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	msgpack_unpacked_init(&up);
	msgpack_zone_init(&zone, ZONE_CHUNK);
	times_start(t);
	for (;;) {
		ssize_t r;

		/* Every whole frame in the buffer. */
		while (fill - pos >= RTPROF_FRAME_HEADER_SIZE) {
			const unsigned char *h = (const unsigned char *)buf + pos;
			uint32_t len = rtprof_le32(h + 16);
			int64_t k;

			if (len > RTPROF_FRAME_MAX_PAYLOAD) {
				rc = -EBADMSG;
				goto out;
			}
			if (fill - pos < RTPROF_FRAME_OVERHEAD + (size_t)len)
				break;
			k = unpack_payload(&up, one_zone ? &zone : NULL,
			    buf + pos + RTPROF_FRAME_HEADER_SIZE, len);
			if (k < 0) {
				rc = -EBADMSG;
				goto out;
			}
			nobj += (uint64_t)k;
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
	times_stop(t);
	msgpack_unpacked_destroy(&up);
	msgpack_zone_destroy(&zone);
	close(fd);
	free(buf);
	*objects = nobj;
	return rc;
}

/* ------------------------------------------------------------------ */
/* The JSON writer alone.                                               */

#define JSON_ROWS 4000000

static int
json_sink(void *ctx, const void *p, size_t n)
{
	(void)p;
	*(uint64_t *)ctx += n;
	return 0;
}

/* One samples row [stack, time, eventDelay, threadCPUDelta], formatted
 * by hand into one element as gecko_samples.c writes it. */
static void
json_sample_row(struct json *j, uint64_t stack, double ms, uint64_t cpu_ns)
{
	char b[96];
	size_t n = 0;

	b[n++] = '[';
	n += json_fmt_u64(b + n, stack);
	b[n++] = ',';
	n += json_fmt_ms(b + n, ms);
	memcpy(b + n, ",0,", 3);
	n += 3;
	n += json_fmt_u64(b + n, cpu_ns);
	b[n++] = ']';
	json_elem(j, b, n);
}

/* One markers row [name, start, end, phase, category, data] through
 * the writer's calls, as gecko_thread.c writes a typed marker. */
static void
json_marker_row(struct json *j, uint64_t name, double ms)
{
	json_arr(j);
	json_u64(j, name);
	json_f64(j, ms);
	json_f64(j, ms + 0.253417);
	json_u64(j, 1);
	json_u64(j, 3);
	json_obj(j);
	json_key(j, "type");
	json_str(j, "Audio callback");
	json_key(j, "load");
	json_f64(j, 0.4211);
	json_obj_end(j);
	json_arr_end(j);
}

/*
 * Rows shaped like a profile's: JSON_ROWS sample rows (times in ms with
 * ns decimals), a marker row every 8, a string (a symbolized frame)
 * every 64; *@bytes: the JSON written.
 */
static int
json_run(struct times *t, uint64_t *bytes)
{
	static const char frame[] = "std::vector<int>::push_back(int const&) "
	    "(in libaudio.so.1)";
	struct json *j = calloc(1, sizeof(*j));
	uint64_t out = 0;

	if (j == NULL)
		return -ENOMEM;
	j->write = json_sink;
	j->ctx = &out;
	times_start(t);
	json_arr(j);
	for (uint64_t i = 0; i < JSON_ROWS; i++) {
		double ms = 1234.5 + (double)i * 0.999983;

		json_sample_row(j, i * 2654435761u % 50000, ms,
		    900000 + i % 200000);
		if (i % 8 == 0)
			json_marker_row(j, i % 300, ms);
		if (i % 64 == 0)
			json_strn(j, frame, sizeof(frame) - 1);
	}
	json_arr_end(j);
	json_flush(j);
	times_stop(t);
	*bytes = out;
	free(j);
	return 0;
}

/* ------------------------------------------------------------------ */

struct series {
	const char *name;
	double cpu[MAX_RUNS], wall[MAX_RUNS];   /* MB/s */
	double wall_s[MAX_RUNS];                /* s */
	int n;
};

static void
series_add(struct series *s, double mb, const struct times *t)
{
	s->cpu[s->n] = mb / t->cpu;
	s->wall[s->n] = mb / t->wall;
	s->wall_s[s->n] = t->wall;
	s->n++;
}

/* Median (min, max) of @x[0..@n); the median is returned. */
static double
stats(const double *x, int n, double *lo, double *hi)
{
	double v[MAX_RUNS];

	*lo = *hi = x[0];
	for (int i = 0; i < n; i++) {
		v[i] = x[i];
		*lo = v[i] < *lo ? v[i] : *lo;
		*hi = v[i] > *hi ? v[i] : *hi;
	}
	return median(v, n);
}

/* *@cpu_med: the median of the CPU-time MB/s. */
static void
report(const struct series *s, double *cpu_med)
{
	double lo, hi, wlo, whi, w;

	*cpu_med = stats(s->cpu, s->n, &lo, &hi);
	w = stats(s->wall, s->n, &wlo, &whi);
	printf("  %-8s CPU %8.1f MB/s (%.1f-%.1f)   wall %8.1f MB/s "
	    "(%.1f-%.1f)\n", s->name, *cpu_med, lo, hi, w, wlo, whi);
}

static void
print_load(const char *when)
{
	double l[3];

	if (getloadavg(l, 3) == 3)
		printf("load average %s: %.2f %.2f %.2f (%ld CPUs)\n", when,
		    l[0], l[1], l[2], sysconf(_SC_NPROCESSORS_ONLN));
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
	char path[4096], gzpath[4096], sizebuf[32], seedbuf[32];
	uint64_t size = 512ull << 20, runs = 3, seed = 1, records = 0;
	uint64_t objects = 0, zobjects = 0, damage = 0, jbytes = 0;
	struct series fl = { .name = "reader" }, mp = { .name = "msgpack" };
	struct series mz = { .name = "mp-zone" }, js = { .name = "json" };
	struct series cv = { .name = "convert" }, gz = { .name = "conv-gz" };
	struct series pp = { .name = "pprof" };
	long rss_max = 0, rss, pp_rss_max = 0;
	double mb, floor_med, mp_med, mz_med, js_med, conv_med, gz_med, pp_med;
	double lo, hi, gz_wall;
	struct times t;
	struct stat sb;
	int keep = 0, c, failed = 0, rc, fd;

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
		rc = run_child(gargv, &t, &grss);
		if (rc != 0 || stat(path, &sb) != 0) {
			fprintf(stderr, PROG ": %s failed (%d)\n", gen, rc);
			unlink(path);
			return 1;
		}
		printf("generated %s: %.1f MB in %.2f s (%.0f MB/s), "
		    "gen_dump peak RSS %.1f MiB\n", path, (double)sb.st_size / 1e6,
		    t.wall, (double)sb.st_size / 1e6 / t.wall,
		    (double)grss / 1024);
		dump = path;
	} else if (stat(dump, &sb) != 0) {
		fprintf(stderr, PROG ": %s: %s\n", dump, strerror(errno));
		return 1;
	} else {
		/* Into the page cache first, as a generated one is. */
		floor_run(dump, &t, &records, &damage);
	}
	mb = (double)sb.st_size / 1e6;
	snprintf(gzpath, sizeof(gzpath), "%s/rtprof-bench-XXXXXX.json.gz",
	    tmpdir && *tmpdir ? tmpdir : "/tmp");
	fd = mkstemps(gzpath, 8);
	if (fd < 0) {
		fprintf(stderr, PROG ": %s: %s\n", gzpath, strerror(errno));
		return 1;
	}
	close(fd);
	print_load("before");

	/* Interleaved, so that a noisy period hits every step alike. */
	for (uint64_t i = 0; i < runs; i++) {
		char *cargv[] = { (char *)conv, (char *)dump, "-o", "/dev/null",
		    "-q", NULL };
		char *gargv[] = { (char *)conv, (char *)dump, "-o", gzpath,
		    "-q", NULL };
		char *pargv[] = { (char *)conv, "--format", "pprof",
		    (char *)dump, "-o", "/dev/null", "-q", NULL };

		rc = floor_run(dump, &t, &records, &damage);
		if (rc != 0 || damage != 0) {
			fprintf(stderr, PROG ": floor: rc %d, %" PRIu64
			    " damage reports\n", rc, damage);
			failed = 1;
		}
		series_add(&fl, mb, &t);
		if ((rc = msgpack_run(dump, false, &t, &objects)) != 0) {
			fprintf(stderr, PROG ": msgpack: %s\n", strerror(-rc));
			failed = 1;
		}
		series_add(&mp, mb, &t);
		if ((rc = msgpack_run(dump, true, &t, &zobjects)) != 0 ||
		    zobjects != objects) {
			fprintf(stderr, PROG ": msgpack, one zone per frame: "
			    "%s\n", strerror(-rc));
			failed = 1;
		}
		series_add(&mz, mb, &t);
		if (json_run(&t, &jbytes) != 0)
			failed = 1;
		series_add(&js, (double)jbytes / 1e6, &t);
		if ((rc = run_child(cargv, &t, &rss)) != 0) {
			fprintf(stderr, PROG ": %s exited with %d\n", conv, rc);
			failed = 1;
		}
		series_add(&cv, mb, &t);
		rss_max = rss > rss_max ? rss : rss_max;
		if ((rc = run_child(gargv, &t, &rss)) != 0) {
			fprintf(stderr, PROG ": %s (.json.gz) exited with %d\n",
			    conv, rc);
			failed = 1;
		}
		series_add(&gz, mb, &t);
		rss_max = rss > rss_max ? rss : rss_max;
		if ((rc = run_child(pargv, &t, &rss)) != 0) {
			fprintf(stderr, PROG ": %s --format pprof exited with "
			    "%d\n", conv, rc);
			failed = 1;
		}
		series_add(&pp, mb, &t);
		pp_rss_max = rss > pp_rss_max ? rss : pp_rss_max;
	}
	if (stat(gzpath, &sb) != 0)
		sb.st_size = 0;
	unlink(gzpath);
	printf("dump %s: %.1f MB, %" PRIu64 " records, %" PRIu64
	    " msgpack objects\n", dump, mb, records, objects);
	report(&fl, &floor_med);
	report(&mp, &mp_med);
	report(&mz, &mz_med);
	report(&js, &js_med);
	report(&cv, &conv_med);
	report(&gz, &gz_med);
	report(&pp, &pp_med);
	gz_wall = stats(gz.wall_s, gz.n, &lo, &hi);
	printf("  (json: MB/s of the JSON writer's own synthetic rows, %.1f MB "
	    "a run, not the profile's JSON; conv-gz: the profile is %.1f MB of "
	    ".json.gz)\n", (double)jbytes / 1e6,
	    (double)sb.st_size / 1e6);
	printf("  ratio    conv-gz / fair floor (mp-zone) = %.2f (target >= "
	    "0.8); convert / fair floor = %.2f\n", gz_med / mz_med,
	    conv_med / mz_med);
	printf("           convert / reader = %.2f; reader / mp-zone = %.2f; "
	    "mp-zone / msgpack = %.2f (CPU time)\n", conv_med / floor_med,
	    floor_med / mz_med, mz_med / mp_med);
	printf("  conv-gz  wall %.2f s median (%.2f-%.2f) for %.1f MB\n",
	    gz_wall, lo, hi, mb);
	printf("  ratio    pprof / convert = %.2f\n", pp_med / conv_med);
	printf("  peak RSS msgpack2gecko %.1f MiB (largest of %d runs; target "
	    "<= 256 MiB for a 1 GiB dump), --format pprof %.1f MiB\n",
	    (double)rss_max / 1024, 2 * cv.n, (double)pp_rss_max / 1024);
	print_load("after");
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
