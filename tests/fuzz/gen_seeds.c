/*
 * gen_seeds.c - write the small seed dumps with sampler records of the
 * converter's fuzz corpus (tests/fuzz/corpus/sampler-*.rtprof).
 *
 *   fuzz_gen_seeds DIR
 *
 * The recorder's own dumps (all-kinds, demo-stream) have no SAMPLE, SAME
 * or OVERHEAD records; these do, in a few KB each, with small DATA frames
 * (256 bytes of records) so that a dump has many frames to mutate:
 *   sampler-one.rtprof   one session: MODULES (an executable with a build
 *                        id), an RT thread (label-only samples), a main
 *                        thread, a worker that sleeps (asleep samples,
 *                        SAME), the sampler thread (SAMPLE, SAME, a SAME
 *                        with no previous SAMPLE, truncated and no-native
 *                        samples, OVERHEAD, counters 65534/65535), markers
 *                        of every kind, a schema with every field kind,
 *                        counters, VALUES, a PAUSE, drops, the trailer.
 *   sampler-two.rtprof   two sessions of the same pid (the second a
 *                        flight recorder with an EVENT and a thread that
 *                        unregistered), both sampled.
 * Deterministic (no clock, no randomness): regenerating gives the same
 * bytes. Context: single-threaded program.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpgen.h"

#define TPS 1000000000ull
#define T0 7000000000000ull
#define US 1000ull
#define MS 1000000ull

#define EXE 0x555555554000ull
#define LIBC 0x7ffff7c00000ull
#define REF 0x555555a00000ull

enum { T_AUDIO = 4001, T_MAIN = 4000, T_WORK = 4002, T_SAMPLER = 4003 };

static const unsigned char build_id[20] = {
	0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
	15, 16,
};

static const char *const strs[] = {
	"audio callback", "mix", "decode", "xrun", "flush", "request",
	"opus",
};
#define NSTRS (sizeof(strs) / sizeof(strs[0]))
#define SREF(i) (REF + 32 * (uint64_t)(i))

#define CHECK(x) do { if ((rc = (x)) != 0) return rc; } while (0)

static int
preamble(struct dg *g, uint32_t session, uint64_t gen, uint64_t t0,
    const char *mode)
{
	static const struct dg_field block[] = {
		{ "frames", "Frames", "integer", 1 },
		{ "size", "Size", "bytes", 2 },
		{ "load", "Load", "percentage", 3 },
		{ "codec", "Codec", "string", 4 },
		{ "file", "File", "file-path", 5 },
	};
	struct dg_module mods[] = {
		{ "/usr/bin/seedapp", EXE, EXE + 0x100000, 0, build_id,
		    sizeof(build_id) },
		{ "/lib/x86_64-linux-gnu/libc.so.6", LIBC, LIBC + 0x200000,
		    0x1000, NULL, 0 },
	};
	struct dg_header h = {
		.pid = 4000,
		.ppid = 1,
		.process = "seedapp",
		.exe = "/usr/bin/seedapp",
		.ticks_per_second = (double)TPS,
		.start_ticks = t0,
		.start_mono_ns = (int64_t)t0,
		.start_wall_ns = 1700000000000000000ll + (int64_t)(t0 - T0),
		.mode = mode,
		.sample_interval_us = 100,
		.generation = gen,
		.session = session,
	};
	int rc;

	CHECK(dg_header(g, &h));
	CHECK(dg_modules(g, mods, 2));
	for (unsigned i = 0; i < NSTRS; i++)
		CHECK(dg_string(g, SREF(i), strs[i]));
	CHECK(dg_schema_ex(g, 1, "Block", 2, 0,
	    "{marker.data.frames} ({marker.data.codec})", "{marker.data.file}",
	    NULL, block, 5));
	CHECK(dg_counter(g, 1, "queue", "Other", "items waiting"));
	CHECK(dg_thread(g, T_MAIN, "main", 2, t0, 0));
	CHECK(dg_thread(g, T_AUDIO, "audio", 1, t0 + 10 * US, 0));
	CHECK(dg_thread(g, T_WORK, "worker", 0, t0 + 20 * US,
	    gen == 2 ? t0 + 3 * MS : 0));
	return dg_thread(g, T_SAMPLER, "rtprof-sampler", 4, t0, 0);
}

/* @ticks sampler ticks of 100 us from @t0, with the workers' own records. */
static int
body(struct dg *g, uint64_t t0, unsigned ticks, int same_first)
{
	static const unsigned kinds[] = { 1, 2, 3, 4, 5 };
	uint64_t stack[6], mask;
	int rc;

	if (same_first) /* a SAME whose SAMPLE the reader never saw */
		CHECK(dg_rec_same(g, T_SAMPLER, t0 + 5 * US, T_MAIN, 1000, 0));
	for (unsigned k = 0; k < ticks; k++) {
		uint64_t t = t0 + 100 * US * k, load;
		double ld = (double)(k % 10) / 10;
		uint64_t vals[5];
		const char *sv[5] = { NULL, NULL, NULL, NULL, "/srv/a.opus" };

		/* main: a stack of native frames and a label */
		stack[0] = EXE + 0x1000 + 16 * (k % 3);
		stack[1] = SREF(1);
		stack[2] = LIBC + 0x2345;
		stack[3] = EXE + 0x2000 + 8 * (k % 2);
		mask = 1u << 1;
		CHECK(dg_rec_sample(g, T_SAMPLER, t + 10 * US, T_MAIN,
		    k ? 90 * US : 0, k == 3 ? 4 : 0, stack, &mask, 4));
		/* audio: label-only */
		stack[0] = SREF(0);
		stack[1] = SREF(k % 2 ? 1 : 2);
		mask = 3;
		CHECK(dg_rec_sample(g, T_SAMPLER, t + 11 * US, T_AUDIO,
		    k ? 50 * US : 0, 2, stack, &mask, 2));
		/* worker: asleep every other tick (SAME), no native frames
		 * once */
		if (k % 2 == 1) {
			CHECK(dg_rec_same(g, T_SAMPLER, t + 12 * US, T_WORK, 0,
			    1));
		} else {
			stack[0] = EXE + 0x3000;
			stack[1] = LIBC + 0x100;
			mask = 0;
			CHECK(dg_rec_sample(g, T_SAMPLER, t + 12 * US, T_WORK,
			    20 * US, k == 4 ? 8 : 0, stack, &mask,
			    k == 4 ? 0 : 2));
		}
		CHECK(dg_rec_counter(g, T_SAMPLER, t + 13 * US, 65534,
		    (int64_t)(4096 * (100 + k))));
		CHECK(dg_rec_counter(g, T_SAMPLER, t + 13 * US, 65535,
		    (int64_t)(65536 + k)));
		CHECK(dg_rec_overhead(g, T_SAMPLER, t, t + 15 * US, 1000,
		    12000, 2000, 3));

		/* the workers' own records */
		memcpy(&load, &ld, 8);
		vals[0] = 128;
		vals[1] = 4096 + k;
		vals[2] = load;
		vals[3] = SREF(6);
		vals[4] = 0;
		CHECK(dg_rec_typed(g, T_AUDIO, 1, t + 20 * US, t + 60 * US, 1,
		    kinds, vals, sv, 5));
		if (k == 5)
			CHECK(dg_rec_instant(g, T_AUDIO, t + 61 * US, SREF(3),
			    2));
		CHECK(dg_rec_begin(g, T_MAIN, t + 20 * US, SREF(4), 1));
		CHECK(dg_rec_counter(g, T_MAIN, t + 30 * US, 1, (int64_t)k));
		CHECK(dg_rec_end(g, T_MAIN, t + 40 * US, SREF(4), 1));
		if (k == 2)
			CHECK(dg_rec_begin(g, T_MAIN, t + 50 * US, SREF(5), 1));
		if (k % 2 == 0) {
			CHECK(dg_rec_interval(g, T_WORK, t + 21 * US,
			    t + 31 * US, SREF(5), 5));
			CHECK(dg_rec_sleep(g, T_WORK, t + 40 * US));
		} else {
			CHECK(dg_rec_wake(g, T_WORK, t + 90 * US));
		}
		if (k == 6)
			CHECK(dg_drops(g, T_MAIN, 3, 1));
	}
	return 0;
}

static int
write_one(struct dg *g)
{
	uint32_t ids[1] = { 1 };
	int64_t v[1] = { 7 };
	int rc;

	CHECK(preamble(g, 0x5eed0001u, 1, T0, "stream"));
	CHECK(body(g, T0 + 100 * US, 6, 1));
	CHECK(dg_flush(g));
	CHECK(dg_values(g, T0 + 800 * US, ids, v, 1));
	CHECK(dg_pause(g, T0 + 900 * US, T0 + 1000 * US));
	CHECK(body(g, T0 + 1100 * US, 6, 0));
	CHECK(dg_values(g, T0 + 2 * MS, ids, v, 1));
	return dg_trailer(g, T0 + 2 * MS, (int64_t)(T0 + 2 * MS));
}

static int
write_two(struct dg *g)
{
	uint64_t t1 = T0 + 10 * MS;
	uint32_t ids[1] = { 1 };
	int64_t v[1] = { 3 };
	int rc;

	CHECK(preamble(g, 0x5eed0002u, 1, T0, "stream"));
	CHECK(body(g, T0 + 100 * US, 5, 0));
	CHECK(dg_values(g, T0 + MS, ids, v, 1));
	CHECK(dg_trailer(g, T0 + MS, (int64_t)(T0 + MS)));
	CHECK(preamble(g, 0x5eed0003u, 2, t1, "flight"));
	CHECK(dg_event(g, t1 + 50 * US, "sink_error", -32, "Broken pipe", 0));
	CHECK(body(g, t1 + 100 * US, 5, 1));
	CHECK(dg_values(g, t1 + MS, ids, v, 1));
	return dg_trailer(g, t1 + MS, (int64_t)(t1 + MS));
}

static int
save(const char *dir, const char *name, int (*fn)(struct dg *))
{
	struct dg_mem mem;
	struct dg *g;
	char path[4096];
	FILE *f;
	int rc;

	memset(&mem, 0, sizeof(mem));
	g = dg_open(dg_write_mem, &mem, 256);
	if (g == NULL)
		return -1;
	rc = fn(g);
	if (dg_close(g) != 0 || rc != 0) {
		fprintf(stderr, "fuzz_gen_seeds: %s: generation failed (%d)\n",
		    name, rc);
		free(mem.p);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(mem.p, 1, mem.n, f) != mem.n || fclose(f) != 0) {
		perror(path);
		free(mem.p);
		return -1;
	}
	printf("%s: %zu bytes\n", path, mem.n);
	free(mem.p);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_gen_seeds DIR\n");
		return 2;
	}
	if (save(argv[1], "sampler-one.rtprof", write_one) != 0 ||
	    save(argv[1], "sampler-two.rtprof", write_two) != 0)
		return 1;
	return 0;
}
