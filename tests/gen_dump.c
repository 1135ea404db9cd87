/*
 * gen_dump.c - a synthetic rtprof dump of a given size, for the converter
 * benchmarks (BENCHMARKS.md, "Converter throughput").
 *
 *   gen_dump --size BYTES [--threads N] [--stacks N] [--seed S]
 *            [--pid P] [--mono NS] [--wall NS] [-o FILE|-]
 *
 * BYTES takes a K, M or G suffix (powers of 1024). The dump is one session
 * with the content of a real recording: N worker threads (4) and the
 * sampler thread; every millisecond the sampler writes one SAMPLE per
 * running worker (a stack 10-50 frames deep drawn with a skewed
 * distribution from --stacks unique stacks (3000): native addresses inside
 * the fake executable declared in MODULES, a few label frames) or a SAME for
 * a worker that sleeps, one OVERHEAD record and the process-memory
 * counter. Worker 0 is a real-time thread: label-only samples. The workers
 * record begin/end pairs, intervals, instants, typed markers of two
 * schemas (all five field kinds), counters and sleep/wake around their
 * sleeping periods; VALUES frames every 100 ms, one PAUSE. Ticks are
 * nanoseconds. Generation stops after the first whole millisecond that
 * reaches BYTES, then the trailer is written.
 *
 * --pid, --mono and --wall set the process id and the clock pair of the
 * session's start (CLOCK_MONOTONIC and wall-clock ns; a board's monotonic
 * clock starts at its boot): dumps "from several boards" for the
 * converter's alignment (tests/test_gecko_boards.py).
 *
 * Deterministic for a given seed and arguments. Memory is constant (the
 * stack table and one 64 KiB DATA frame per thread): a dump of any size
 * streams to a pipe.
 *
 * Context: single-threaded program.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#include "dumpgen.h"

#define PROG "gen_dump"

#define TPS 1000000000ull            /* ticks are ns */
#define START_TICKS 5000000000000ull
#define MS 1000000ull

/* The fake executable and libc (MODULES), and where its "functions" are. */
#define EXE_START 0x555555554000ull
#define EXE_END (EXE_START + 0x800000ull)
#define LIBC_START 0x7ffff7c00000ull
#define LIBC_END (LIBC_START + 0x200000ull)
#define NFUNCS 4000
#define MIN_DEPTH 10
#define MAX_DEPTH 50

/* Static strings: addresses in the executable's data, as a real one. */
#define REF_BASE (EXE_START + 0x700000ull)

enum {
	SCHEMA_BLOCK = 1,
	SCHEMA_NET = 2,
	COUNTER_QUEUE = 1,
	COUNTER_BYTES = 2
};

static const char *const labels[] = {
	"audio callback", "mix bus", "decode frame", "render tile",
	"parse request", "compress", "gc", "io wait", "physics step",
	"ui layout",
};
#define NLABELS (sizeof(labels) / sizeof(labels[0]))

static const char *const names[] = {
	"process_block", "flush", "tick", "load_asset", "network poll",
	"frame", "commit", "xrun",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

static const char *const codecs[] = { "opus", "flac", "pcm", "vorbis" };
#define NCODECS (sizeof(codecs) / sizeof(codecs[0]))

/* Refs: labels, then names, then codec names, 32 bytes apart. */
#define REF_LABEL(i) (REF_BASE + 32 * (uint64_t)(i))
#define REF_NAME(i) (REF_BASE + 32 * (uint64_t)(NLABELS + (i)))
#define REF_CODEC(i) (REF_BASE + 32 * (uint64_t)(NLABELS + NNAMES + (i)))

struct stack {
	uint8_t n;
	uint64_t mask;                  /* bit i: frame i is a label */
	uint64_t *frames;
};

struct worker {
	int64_t tid;
	unsigned stack;                 /* current stack index */
	uint64_t sleep_until;           /* asleep before this tick */
	uint64_t cpu;                   /* CPU ns since the last sample */
	int sampled;                    /* has had a SAMPLE */
	int open_begin;                 /* a BEGIN waits for its END */
	int64_t queue;
};

struct gen {
	struct dg *g;
	uint64_t rng;
	struct stack *stacks;
	unsigned nstacks;
	uint64_t funcs[NFUNCS];
	struct worker *w;
	unsigned nworkers;
	int64_t sampler_tid;
	int64_t pid, mono_ns, wall_ns;  /* the header's */
};

/* xorshift64*: fast, deterministic. */
static uint64_t
rnd(struct gen *G)
{
	G->rng ^= G->rng >> 12;
	G->rng ^= G->rng << 25;
	G->rng ^= G->rng >> 27;
	return G->rng * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [0, n). */
static uint64_t
rndn(struct gen *G, uint64_t n)
{
#ifdef __SIZEOF_INT128__
	return (uint64_t)(((unsigned __int128)rnd(G) * n) >> 64);
#else
	/* 32-bit targets (armhf): the same high half, from 32-bit halves. */
	uint64_t a = rnd(G), al = (uint32_t)a, ah = a >> 32;
	uint64_t bl = (uint32_t)n, bh = n >> 32;
	uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
	uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;

	return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
#endif
}

/* Skewed in [0, n): a few hot values, a long tail (u^3). */
static unsigned
rnd_skew(struct gen *G, unsigned n)
{
	double u = (double)(rnd(G) >> 11) / 9007199254740992.0;

	return (unsigned)(u * u * u * n);
}

/*
 * Build @n stacks as a real program's: each one shares a prefix with an
 * earlier one (a call tree), grows to 10-50 frames of functions of the
 * executable (return addresses: function start + a call site offset),
 * with a libc leaf now and then and 0-3 label frames along the way.
 */
static int
build_stacks(struct gen *G, unsigned n)
{
	G->stacks = calloc(n, sizeof(*G->stacks));
	if (G->stacks == NULL)
		return -ENOMEM;
	G->nstacks = n;
	for (unsigned i = 0; i < NFUNCS; i++)
		G->funcs[i] = EXE_START + 0x1000 + (EXE_END - EXE_START - 0x200000) /
		    NFUNCS * i;
	for (unsigned i = 0; i < n; i++) {
		struct stack *s = &G->stacks[i];
		unsigned depth = MIN_DEPTH + (unsigned)rndn(G, MAX_DEPTH - MIN_DEPTH + 1);
		unsigned keep = 0;

		s->frames = malloc(MAX_DEPTH * sizeof(*s->frames));
		if (s->frames == NULL)
			return -ENOMEM;
		if (i > 0) {
			const struct stack *p = &G->stacks[rndn(G, i)];

			keep = (unsigned)rndn(G, p->n < depth ? p->n : depth);
			memcpy(s->frames, p->frames, keep * sizeof(*s->frames));
			s->mask = p->mask & ((keep == 64 ? 0 : 1ull << keep) - 1);
		}
		for (unsigned k = keep; k < depth; k++) {
			if (k == 0) {
				s->frames[k] = G->funcs[0] + 0x2a; /* main */
			} else if (k > 2 && rndn(G, 20) == 0 &&
			    __builtin_popcountll(s->mask) < 3) {
				s->frames[k] = REF_LABEL(rndn(G, NLABELS));
				s->mask |= 1ull << k;
			} else if (k == depth - 1 && rndn(G, 4) == 0) {
				s->frames[k] = LIBC_START + 0x28000 +
				    rndn(G, 0x100000);
			} else {
				s->frames[k] = G->funcs[rndn(G, NFUNCS)] + 5 +
				    rndn(G, 0x300);
			}
		}
		s->n = (uint8_t)depth;
	}
	return 0;
}

static int
declare(struct gen *G)
{
	static const unsigned char exe_id[20] = {
		0x5e, 0x1f, 0x0c, 0xa7, 0x42, 0x91, 0x33, 0x08, 0xbe, 0xef,
		0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0,
	};
	struct dg_module mods[] = {
		{ "/usr/bin/synthapp", EXE_START, EXE_END, 0, exe_id,
		    sizeof(exe_id) },
		{ "/usr/lib/x86_64-linux-gnu/libc.so.6", LIBC_START, LIBC_END,
		    0x28000, NULL, 0 },
	};
	static const struct dg_field block[] = {
		{ "frames", "Frames", "integer", 1 },
		{ "bytes", "Bytes", "bytes", 2 },
		{ "load", "Load", "percentage", 3 },
		{ "codec", "Codec", "string", 4 },
		{ "file", "File", "file-path", 5 },
	};
	static const struct dg_field net[] = {
		{ "status", "Status", "integer", 1 },
		{ "url", "URL", "url", 5 },
	};
	struct dg_header h = {
		.pid = G->pid,
		.ppid = 1,
		.process = "synthapp",
		.exe = "/usr/bin/synthapp",
		.ticks_per_second = (double)TPS,
		.start_ticks = START_TICKS,
		.start_mono_ns = G->mono_ns,
		.start_wall_ns = G->wall_ns,
		.sample_interval_us = 1000,
	};
	struct dg *g = G->g;
	char name[32];
	int rc;

	if ((rc = dg_header(g, &h)) != 0 || (rc = dg_modules(g, mods, 2)) != 0)
		return rc;
	for (unsigned i = 0; i < NLABELS; i++)
		if ((rc = dg_string(g, REF_LABEL(i), labels[i])) != 0)
			return rc;
	for (unsigned i = 0; i < NNAMES; i++)
		if ((rc = dg_string(g, REF_NAME(i), names[i])) != 0)
			return rc;
	for (unsigned i = 0; i < NCODECS; i++)
		if ((rc = dg_string(g, REF_CODEC(i), codecs[i])) != 0)
			return rc;
	if ((rc = dg_schema_ex(g, SCHEMA_BLOCK, "Block", 2, 0,
	    "{marker.data.frames} frames ({marker.data.codec})",
	    "{marker.data.file}", NULL, block, 5)) != 0 ||
	    (rc = dg_schema(g, SCHEMA_NET, "Request", 5, net, 2)) != 0 ||
	    (rc = dg_counter(g, COUNTER_QUEUE, "queue depth", "Other",
	    "items waiting")) != 0 ||
	    (rc = dg_counter(g, COUNTER_BYTES, "heap", "Memory",
	    "bytes allocated")) != 0)
		return rc;
	for (unsigned i = 0; i < G->nworkers; i++) {
		struct worker *w = &G->w[i];

		if (i < 2)
			snprintf(name, sizeof(name), "%s", i == 0 ? "audio" :
			    "main");
		else
			snprintf(name, sizeof(name), "worker %u", i);
		if ((rc = dg_thread(g, w->tid, name, i == 0 ? 1 : i == 1 ? 2 : 0,
		    START_TICKS + i, 0)) != 0)
			return rc;
	}
	return dg_thread(g, G->sampler_tid, "rtprof-sampler", 4,
	    START_TICKS, 0);
}

/* One millisecond of worker @w's own records, starting at @t. */
static int
worker_ms(struct gen *G, struct worker *w, unsigned idx, uint64_t t)
{
	struct dg *g = G->g;
	int64_t tid = w->tid;
	uint64_t r = rnd(G);
	int rc = 0;

	if (t < w->sleep_until) {
		if (t + MS >= w->sleep_until)
			rc = dg_rec_wake(g, tid, w->sleep_until);
		return rc;
	}
	/* A real-time thread: a block per ms, a marker with every field. */
	if (idx == 0) {
		static const unsigned kinds[] = { 1, 2, 3, 4, 5 };
		double load = (double)(r & 0xff) / 256; /* "percentage": 0..1 */
		uint64_t vals[5], lb;
		const char *strs[5] = { NULL, NULL, NULL, NULL,
		    "/srv/media/track-0042.opus" };

		memcpy(&lb, &load, 8);
		vals[0] = 256;
		vals[1] = 4096 + (r >> 8 & 0xfff);
		vals[2] = lb;
		vals[3] = REF_CODEC(r >> 20 & 3);
		vals[4] = 0;
		if ((rc = dg_rec_typed(g, tid, 1, t + 10000, t + 10000 + 200000 +
		    (r >> 24 & 0xffff), SCHEMA_BLOCK, kinds, vals, strs, 5)) != 0)
			return rc;
		if ((r >> 40 & 0x3ff) == 0)
			rc = dg_rec_instant(g, tid, t + 500000, REF_NAME(7), 2);
		return rc;
	}
	/* Others: begin/end pairs, intervals, instants, counters, requests. */
	if (w->open_begin) {
		if ((rc = dg_rec_end(g, tid, t + 1000, REF_NAME(0), 4)) != 0)
			return rc;
		w->open_begin = 0;
	}
	if ((r & 3) == 0) {
		if ((rc = dg_rec_begin(g, tid, t + 2000, REF_NAME(0), 4)) != 0)
			return rc;
		w->open_begin = 1;
	}
	if ((r >> 2 & 7) == 0 && (rc = dg_rec_interval(g, tid, t + 3000,
	    t + 3000 + (r >> 32 & 0x7ffff), REF_NAME(1 + (r >> 8 & 3)),
	    (unsigned)(r >> 12 & 7))) != 0)
		return rc;
	if ((r >> 5 & 15) == 0 && (rc = dg_rec_instant(g, tid, t + 4000,
	    REF_NAME(5 + (r >> 16 & 1)), 7)) != 0)
		return rc;
	if ((r >> 9 & 3) == 0) {
		w->queue += (int64_t)(r >> 44 & 7) - 3;
		if ((rc = dg_rec_counter(g, tid, t + 5000, COUNTER_QUEUE,
		    w->queue)) != 0)
			return rc;
	}
	if ((r >> 11 & 63) == 0) {
		static const unsigned kinds[] = { 1, 5 };
		uint64_t vals[2] = { (r >> 20 & 1) ? 200 : 404, 0 };
		const char *strs[2] = { NULL,
		    "https://example.com/api/v1/items?page=7" };

		if ((rc = dg_rec_typed(g, tid, 1, t + 6000, t + 6000 +
		    (r >> 24 & 0xfffff), SCHEMA_NET, kinds, vals, strs, 2)) != 0)
			return rc;
	}
	/* Now and then: sleep 5-50 ms (the sampler writes SAMEs). */
	if ((r >> 17 & 127) == 0) {
		if (w->open_begin) {
			if ((rc = dg_rec_end(g, tid, t + 7000, REF_NAME(0),
			    4)) != 0)
				return rc;
			w->open_begin = 0;
		}
		w->sleep_until = t + 5 * MS + rndn(G, 45 * MS) + 8000;
		rc = dg_rec_sleep(g, tid, t + 8000);
	}
	return rc;
}

/* The sampler's tick at @t: a SAMPLE or SAME per worker, OVERHEAD, RSS. */
static int
sampler_tick(struct gen *G, uint64_t t, uint64_t tick)
{
	struct dg *g = G->g;
	uint64_t t0 = t;
	int rc;

	for (unsigned i = 0; i < G->nworkers; i++) {
		struct worker *w = &G->w[i];
		int asleep = t < w->sleep_until;
		uint64_t cpu = asleep ? rndn(G, 2000) : 700000 + rndn(G, 300000);

		t += 3000 + rndn(G, 2000);
		if (asleep && w->sampled) {
			rc = dg_rec_same(g, G->sampler_tid, t, w->tid, cpu, 1);
		} else if (i == 0) {
			/* Real-time: label-only, never interrupted. */
			uint64_t f[3] = { REF_LABEL(0), REF_LABEL(1),
			    REF_LABEL(2 + rndn(G, 2)) };
			uint64_t m = 7;

			rc = dg_rec_sample(g, G->sampler_tid, t, w->tid, cpu,
			    2 | (asleep ? 1 : 0), f, &m, 1 + rndn(G, 3));
		} else {
			const struct stack *s;

			/* Threads stay in the same code for a while. */
			if (rndn(G, 4) == 0)
				w->stack = rnd_skew(G, G->nstacks);
			s = &G->stacks[w->stack];
			rc = dg_rec_sample(g, G->sampler_tid, t, w->tid, cpu,
			    asleep ? 1 : 0, s->frames, &s->mask, s->n);
		}
		if (rc != 0)
			return rc;
		w->sampled = 1;
	}
	if ((rc = dg_rec_overhead(g, G->sampler_tid, t0, t + 2000,
	    800 + rndn(G, 400), t - t0, 900 + rndn(G, 300), G->nworkers)) != 0)
		return rc;
	if ((rc = dg_rec_counter(g, G->sampler_tid, t + 2000, 0xfffe,
	    (int64_t)(48u << 20) + (int64_t)(tick % 4096) * 4096)) != 0)
		return rc;
	if (tick % 100 == 0)
		rc = dg_rec_counter(g, G->sampler_tid, t + 2100, 0xffff,
		    (int64_t)(8u << 20) + (int64_t)rndn(G, 1u << 20));
	return rc;
}

static int
generate(struct gen *G, uint64_t size)
{
	struct dg *g = G->g;
	uint64_t tick = 0, t = START_TICKS + 10 * MS;
	int64_t heap = 1 << 24;
	int rc;

	if ((rc = declare(G)) != 0)
		return rc;
	while (dg_bytes(g) < size) {
		for (unsigned i = 0; i < G->nworkers; i++)
			if ((rc = worker_ms(G, &G->w[i], i, t)) != 0)
				return rc;
		if ((rc = sampler_tick(G, t + MS - 50000, tick)) != 0)
			return rc;
		tick++;
		t += MS;
		if (tick % 100 == 0) {
			uint32_t ids[2] = { 0xffff, COUNTER_BYTES };
			int64_t vals[2] = { (int64_t)(8u << 20), heap };

			heap += (int64_t)rndn(G, 1 << 16) - (1 << 15);
			if ((rc = dg_values(g, t, ids, vals, 2)) != 0)
				return rc;
		}
		if (tick == 2000 && (rc = dg_pause(g, t - 300 * MS,
		    t - 250 * MS)) != 0)
			return rc;
	}
	for (unsigned i = 0; i < G->nworkers; i++)
		if (G->w[i].open_begin &&
		    (rc = dg_rec_end(g, G->w[i].tid, t, REF_NAME(0), 4)) != 0)
			return rc;
	/* Ticks are ns from START_TICKS, the session's start. */
	return dg_trailer(g, t + MS, G->mono_ns + (int64_t)(t + MS - START_TICKS));
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
	    "usage: " PROG " --size BYTES [--threads N] [--stacks N] "
	    "[--seed S] [-o FILE|-]\n"
	    "Write a synthetic rtprof dump of at least BYTES (K, M, G suffixes)\n"
	    "to FILE or stdout (-, the default). Deterministic for a seed.\n"
	    "  --threads N  worker threads besides the sampler (4; 1-64)\n"
	    "  --stacks N   unique sampled stacks (3000)\n"
	    "  --seed S     random seed (1)\n"
	    "  --pid P      the process id (31337)\n"
	    "  --mono NS    CLOCK_MONOTONIC at the start, ns (5000 s)\n"
	    "  --wall NS    the wall clock then, ns since 1970 (1.7e18)\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "stacks", required_argument, NULL, 'k' },
		{ "seed", required_argument, NULL, 'r' },
		{ "output", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, 'p' },
		{ "mono", required_argument, NULL, 'm' },
		{ "wall", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct gen G;
	uint64_t size = 0, threads = 4, nstacks = 3000, seed = 1;
	const char *out = "-";
	int fd = STDOUT_FILENO, c, rc;

	memset(&G, 0, sizeof(G));
	G.pid = 31337;
	G.mono_ns = (int64_t)START_TICKS;
	G.wall_ns = 1700000000000000000ll;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_size(optarg, &size) != 0)
				goto bad;
			break;
		case 't':
			if (parse_size(optarg, &threads) != 0 || threads < 1 ||
			    threads > 64)
				goto bad;
			break;
		case 'k':
			if (parse_size(optarg, &nstacks) != 0 || nstacks < 1 ||
			    nstacks > 1000000)
				goto bad;
			break;
		case 'r':
			if (parse_size(optarg, &seed) != 0)
				goto bad;
			break;
		case 'o':
			out = optarg;
			break;
		case 'p':
		case 'm':
		case 'w': {
			uint64_t v;

			if (parse_size(optarg, &v) != 0 || v > INT64_MAX)
				goto bad;
			if (c == 'p')
				G.pid = (int64_t)v;
			else if (c == 'm')
				G.mono_ns = (int64_t)v;
			else
				G.wall_ns = (int64_t)v;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind != argc || size == 0)
		goto bad;
	if (strcmp(out, "-") != 0) {
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			fprintf(stderr, PROG ": %s: %s\n", out, strerror(errno));
			return 2;
		}
	}
	G.rng = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
	if (G.rng == 0)
		G.rng = 1;
	G.nworkers = (unsigned)threads;
	G.w = calloc(G.nworkers, sizeof(*G.w));
	if (G.w == NULL || build_stacks(&G, (unsigned)nstacks) != 0) {
		fprintf(stderr, PROG ": out of memory\n");
		return 2;
	}
	for (unsigned i = 0; i < G.nworkers; i++)
		G.w[i].tid = 31337 + (int64_t)i;
	G.sampler_tid = 31337 + 100;
	G.g = dg_open(dg_write_fd, &fd, 0);
	if (G.g == NULL) {
		fprintf(stderr, PROG ": out of memory\n");
		return 2;
	}
	rc = generate(&G, size);
	if (rc == 0)
		rc = dg_close(G.g);
	else
		dg_close(G.g);
	if (rc == 0 && fd != STDOUT_FILENO && close(fd) != 0)
		rc = -errno;
	for (unsigned i = 0; i < G.nstacks; i++)
		free(G.stacks[i].frames);
	free(G.stacks);
	free(G.w);
	if (rc != 0) {
		fprintf(stderr, PROG ": %s: %s\n", out, strerror(-rc));
		return 2;
	}
	return 0;
bad:
	usage(stderr);
	return 2;
}
