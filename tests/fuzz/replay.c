/*
 * replay.c - run a fuzz target over every file given (or every file in the
 * directories given) without a fuzzing engine: the corpus and every crash
 * ever found stay regression tests under plain ctest. Each file is run
 * whole, then cut at every 7th length below 4096 bytes; the cuts are
 * skipped for a file whose first 4096 bytes (or all, when shorter) are
 * those of a file already run (the damaged seeds of the corpus differ from
 * sampler-one.rtprof only further on), as they would repeat its cuts.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CUT_SPAN 4096

static uint64_t seen[1024];
static size_t nseen, cuts_skipped;

/* Have the first min(@n, CUT_SPAN) bytes of @buf been cut before? */
static int
cuts_seen(const unsigned char *buf, long n)
{
	uint64_t h = 14695981039346656037ull;
	long span = n < CUT_SPAN ? n : CUT_SPAN;

	for (long i = 0; i < span; i++)
		h = (h ^ buf[i]) * 1099511628211ull;
	h = (h ^ (uint64_t)span) * 1099511628211ull;
	for (size_t i = 0; i < nseen; i++)
		if (seen[i] == h)
			return 1;
	if (nseen < sizeof(seen) / sizeof(seen[0]))
		seen[nseen++] = h;
	return 0;
}

static int
run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long n;

	if (f == NULL) {
		perror(path);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "%s: read failed\n", path);
		fclose(f);
		free(buf);
		return 1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	/* Every prefix too: truncation at each length is the common damage. */
	if (cuts_seen(buf, n))
		cuts_skipped++;
	else
		for (long cut = 1; cut < n && cut < CUT_SPAN; cut += 7)
			LLVMFuzzerTestOneInput(buf, (size_t)cut);
	free(buf);
	return 0;
}

int
main(int argc, char **argv)
{
	int files = 0, rc = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *e;

		if (stat(argv[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
			rc |= run_file(argv[i]);
			files++;
			continue;
		}
		d = opendir(argv[i]);
		while (d != NULL && (e = readdir(d)) != NULL) {
			char p[4096];

			if (e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
			rc |= run_file(p);
			files++;
		}
		if (d)
			closedir(d);
	}
	printf("replayed %d inputs (cuts of %zu skipped: the same first %d "
	    "bytes as another)\n", files, cuts_skipped, CUT_SPAN);
	return rc || files == 0;
}
