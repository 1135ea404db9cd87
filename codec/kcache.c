/*
 * kcache.c - the kernel's text symbols of this boot, cached between runs
 * (codec/kcache.h).
 *
 * File: "RTPKSYM1", u64 nsym, u64 blen, nsym x struct rtprof_ksym, blen
 * bytes of names; host byte order (the file never leaves the machine).
 *
 * Context: any thread; no state.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kcache.h"

#define MAGIC "RTPKSYM1"
#define PREFIX "kallsyms-"
#define MAX_SYMS (1u << 24)
#define MAX_BLOB (1u << 28)

struct hdr {
	char magic[8];
	uint64_t nsym, blen;
};

static uint64_t
fnv(uint64_t h, const char *s)
{
	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

/* FNV-1a of /proc/modules' name, size and address columns (not the use
 * counts, which change): a module loaded again moves its symbols. */
static uint64_t
modules_hash(void)
{
	char line[512], name[256], addr[64];
	unsigned long size;
	uint64_t h = 1469598103934665603ull;
	FILE *f = fopen("/proc/modules", "re");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%255s %lu %*s %*s %*s %63s", name, &size,
		    addr) != 3)
			continue;
		h = fnv(h, name);
		h = fnv(h, addr);
		h ^= size;
		h *= 1099511628211ull;
	}
	if (f != NULL)
		fclose(f);
	return h;
}

/* The cache directory ($XDG_CACHE_HOME/rtprof or ~/.cache/rtprof) into
 * @buf, created. Return: 0, or -1. */
static int
cache_dir(char *buf, size_t n)
{
	const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	const char *off = getenv("RTPROF_KSYMS_CACHE");
	int k;

	if (off != NULL && strcmp(off, "0") == 0)
		return -1;
	if (x != NULL && x[0] == '/')
		k = snprintf(buf, n, "%s", x);
	else if (home != NULL && home[0] == '/')
		k = snprintf(buf, n, "%s/.cache", home);
	else
		return -1;
	if (k < 0 || (size_t)k >= n)
		return -1;
	if (mkdir(buf, 0700) != 0 && errno != EEXIST)
		return -1;
	if ((size_t)k + sizeof("/rtprof") > n)
		return -1;
	strcat(buf, "/rtprof");
	if (mkdir(buf, 0700) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

int
rtprof_kcache_path(const char *boot, char *buf, size_t n)
{
	char dir[4096];
	int k;

	if (boot == NULL || boot[0] == '\0' || strchr(boot, '/') != NULL ||
	    cache_dir(dir, sizeof(dir)) != 0)
		return -1;
	k = snprintf(buf, n, "%s/" PREFIX "%s-%016" PRIx64, dir, boot,
	    modules_hash());
	return k > 0 && (size_t)k < n ? 0 : -1;
}

/* Every name offset inside @blob, which ends with a NUL; addresses
 * ascending. */
static int
valid(const struct rtprof_ksym *sym, size_t nsym, const char *blob,
    size_t blen)
{
	if (blen == 0 || blob[blen - 1] != '\0')
		return 0;
	for (size_t i = 0; i < nsym; i++)
		if (sym[i].name >= blen || (i > 0 && sym[i].addr < sym[i - 1].addr))
			return 0;
	return 1;
}

static int
read_all(int fd, void *p, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t k = read(fd, (char *)p + got, n - got);

		if (k <= 0)
			return -1;
		got += (size_t)k;
	}
	return 0;
}

int
rtprof_kcache_read(const char *path, struct rtprof_ksym **sym, size_t *nsym,
    char **blob, size_t *blen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct rtprof_ksym *s = NULL;
	char *b = NULL;
	struct stat st;
	struct hdr h;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 022) != 0 ||
	    read_all(fd, &h, sizeof(h)) != 0 ||
	    memcmp(h.magic, MAGIC, 8) != 0 || h.nsym == 0 ||
	    h.nsym > MAX_SYMS || h.blen > MAX_BLOB ||
	    (uint64_t)st.st_size != sizeof(h) + h.nsym * sizeof(*s) + h.blen ||
	    (s = malloc(h.nsym * sizeof(*s))) == NULL ||
	    (b = malloc(h.blen)) == NULL ||
	    read_all(fd, s, h.nsym * sizeof(*s)) != 0 ||
	    read_all(fd, b, h.blen) != 0 || !valid(s, h.nsym, b, h.blen)) {
		close(fd);
		free(s);
		free(b);
		return -1;
	}
	close(fd);
	*sym = s;
	*nsym = h.nsym;
	*blob = b;
	*blen = h.blen;
	return 0;
}

/* Remove the tables beside @path but @path itself (older boots). */
static void
remove_others(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096], other[4096 + 256];
	struct dirent *e;
	DIR *d;

	if (slash == NULL || (size_t)(slash - path) >= sizeof(dir))
		return;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	if ((d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, PREFIX, sizeof(PREFIX) - 1) != 0 ||
		    strcmp(e->d_name, slash + 1) == 0)
			continue;
		snprintf(other, sizeof(other), "%s/%s", dir, e->d_name);
		unlink(other);
	}
	closedir(d);
}

void
rtprof_kcache_write(const char *path, const struct rtprof_ksym *sym,
    size_t nsym, const char *blob, size_t blen)
{
	struct hdr h = { .nsym = nsym, .blen = blen };
	char tmp[4096 + 16];
	FILE *f;
	int fd, ok;

	memcpy(h.magic, MAGIC, 8);
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp) ||
	    (fd = mkstemp(tmp)) < 0)
		return;
	if ((f = fdopen(fd, "wb")) == NULL) {
		close(fd);
		unlink(tmp);
		return;
	}
	ok = fwrite(&h, sizeof(h), 1, f) == 1 &&
	    fwrite(sym, sizeof(*sym), nsym, f) == nsym &&
	    fwrite(blob, 1, blen, f) == blen;
	if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
		unlink(tmp);
		return;
	}
	remove_others(path);
}
