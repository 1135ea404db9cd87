/*
 * replay.c - run a fuzz target over every file given (or every file in the
 * directories given) without a fuzzing engine: the corpus and every crash
 * ever found stay regression tests under plain ctest.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	for (long cut = 1; cut < n && cut < 4096; cut += 7)
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
	printf("replayed %d inputs\n", files);
	return rc || files == 0;
}
