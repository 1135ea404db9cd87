/*
 * test_kcache.c - the kernel's symbols are read once per boot and then
 * come from the user's cache (codec/kcache.h), which is trusted only when
 * it is the user's own regular file, private, and well formed.
 *
 * Each step runs in a child (the table is loaded once per process) and
 * names a stack of one frame inside do_nanosleep:
 *   1. no cache: "sleep"; a cache file appears, mode 0600, the only one;
 *   2. that file with do_nanosleep's name changed in place: the child
 *      names the changed function, so it read the cache, not kallsyms;
 *   3. the changed file made writable by others, or replaced by a symlink
 *      to it, or cut short: ignored, "sleep" again, and the cache is
 *      written anew.
 * Skipped (exit 0, said) where kernel addresses are hidden.
 */

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "kreason.h"

static char boot[64], dir[256], cache[1024];
static uint64_t addr;

/* do_nanosleep's address from /proc/kallsyms (0: hidden). */
static uint64_t
kallsyms_addr(const char *fn)
{
	char line[512], name[256], type;
	unsigned long long a;
	FILE *f = fopen("/proc/kallsyms", "re");
	uint64_t r = 0;

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 &&
		    strcmp(name, fn) == 0 && (type == 't' || type == 'T')) {
			r = a;
			break;
		}
	if (f != NULL)
		fclose(f);
	return r;
}

/* The reason a fresh process gives the stack, into @out. */
static void
reason_in_child(char *out, size_t n)
{
	int p[2], st;
	pid_t pid;
	ssize_t k;

	RTPROF_CHECK_EQ(pipe(p), 0);
	pid = fork();
	RTPROF_CHECK(pid >= 0);
	if (pid == 0) {
		uint64_t ips[1] = { addr + 4 };
		const char *t = rtprof_kreason_text(rtprof_kreason_of(boot,
		    ips, 1));

		close(p[0]);
		if (write(p[1], t, strlen(t)) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	k = read(p[0], out, n - 1);
	out[k > 0 ? k : 0] = 0;
	close(p[0]);
	RTPROF_CHECK_EQ(waitpid(pid, &st, 0), pid);
	RTPROF_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The one cache file in dir/rtprof, into cache[]; its count. */
static int
find_cache(void)
{
	char d[300];
	struct dirent *e;
	int n = 0;
	DIR *dd;

	snprintf(d, sizeof(d), "%s/rtprof", dir);
	dd = opendir(d);
	RTPROF_CHECK(dd != NULL);
	while ((e = readdir(dd)) != NULL)
		if (strncmp(e->d_name, "kallsyms-", 9) == 0) {
			snprintf(cache, sizeof(cache), "%s/%s", d, e->d_name);
			n++;
		}
	closedir(dd);
	return n;
}

static char *
slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *b;

	RTPROF_CHECK(f != NULL);
	fseek(f, 0, SEEK_END);
	*n = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc(*n);
	RTPROF_CHECK(b != NULL && fread(b, 1, *n, f) == *n);
	fclose(f);
	return b;
}

static void
put(const char *path, const char *b, size_t n, mode_t mode)
{
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	RTPROF_CHECK(fd >= 0);
	RTPROF_CHECK_EQ(write(fd, b, n), (ssize_t)n);
	RTPROF_CHECK_EQ(fchmod(fd, mode), 0);
	close(fd);
}

/* @b (the cache) with "do_nanosleep" renamed "do_nanoslepX". */
static void
tamper(char *b, size_t n)
{
	char *p = memmem(b, n, "\0do_nanosleep\0", 14);

	RTPROF_CHECK(p != NULL);
	memcpy(p + 1, "do_nanoslepX", 12);
}

int
main(void)
{
	char r[256], alt[600], tmpl[] = "/tmp/rtprof-kcache-XXXXXX";
	struct stat st;
	size_t n, n2;
	char *b, *b2;
	FILE *f;

	f = fopen("/proc/sys/kernel/random/boot_id", "re");
	RTPROF_CHECK(f != NULL && fgets(boot, sizeof(boot), f) != NULL);
	fclose(f);
	boot[strcspn(boot, "\n")] = 0;
	if ((addr = kallsyms_addr("do_nanosleep")) == 0) {
		printf("test_kcache: kernel addresses hidden here: skipped\n");
		return 0;
	}
	RTPROF_CHECK(mkdtemp(tmpl) != NULL);
	snprintf(dir, sizeof(dir), "%s", tmpl);
	setenv("XDG_CACHE_HOME", dir, 1);
	unsetenv("RTPROF_KSYMS_CACHE");

	/* 1. From kallsyms; the cache is written. */
	reason_in_child(r, sizeof(r));
	RTPROF_CHECK_STREQ(r, "kernel: do_nanosleep (sleep)");
	RTPROF_CHECK_EQ(find_cache(), 1);
	RTPROF_CHECK_EQ(lstat(cache, &st), 0);
	RTPROF_CHECK(S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600);
	b = slurp(cache, &n);

	/* 2. From the cache. */
	tamper(b, n);
	put(cache, b, n, 0600);
	reason_in_child(r, sizeof(r));
	RTPROF_CHECK_STREQ(r, "kernel: do_nanoslepX");

	/* 3. Not trusted: writable by others, a symlink, cut short. */
	put(cache, b, n, 0666);
	chmod(cache, 0666);     /* past the umask */
	reason_in_child(r, sizeof(r));
	RTPROF_CHECK_STREQ(r, "kernel: do_nanosleep (sleep)");
	RTPROF_CHECK_EQ(find_cache(), 1);
	b2 = slurp(cache, &n2);
	RTPROF_CHECK(n2 == n && memmem(b2, n2, "do_nanoslepX", 12) == NULL);
	free(b2);

	snprintf(alt, sizeof(alt), "%s/elsewhere", dir);
	put(alt, b, n, 0600);
	unlink(cache);
	RTPROF_CHECK_EQ(symlink(alt, cache), 0);
	reason_in_child(r, sizeof(r));
	RTPROF_CHECK_STREQ(r, "kernel: do_nanosleep (sleep)");

	put(cache, b, n / 2, 0600);
	reason_in_child(r, sizeof(r));
	RTPROF_CHECK_STREQ(r, "kernel: do_nanosleep (sleep)");
	b2 = slurp(cache, &n2);
	RTPROF_CHECK_EQ(n2, n);
	free(b2);
	free(b);
	printf("test_kcache: ok (%zu bytes of symbols cached)\n", n);
	return 0;
}
