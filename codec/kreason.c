/*
 * kreason.c - the reason a thread went off CPU, from the kernel's stack
 * there (codec/kreason.h).
 *
 * /proc/kallsyms (text symbols, sorted) names each address; the stack's
 * best-known function (highest priority in known[], the innermost among
 * equals) gives the reason, latencytap style; a stack with none of them
 * is named after its innermost function outside the scheduler.
 *
 * Context: any thread: one mutex around the process-wide table.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kcache.h"
#include "kreason.h"

/* Well-known kernel functions and the reason they wait for. */
static const struct known {
	const char *fn;
	const char *why;
	int prio;
} known[] = {
	{ "exc_page_fault", "page fault", 9 },
	{ "do_user_addr_fault", "page fault", 9 },
	{ "handle_mm_fault", "page fault", 8 },
	{ "jbd2_log_wait_commit", "journal commit (fsync)", 9 },
	{ "jbd2_complete_transaction", "journal commit (fsync)", 9 },
	{ "do_fsync", "fsync", 8 },
	{ "vfs_fsync_range", "fsync", 8 },
	{ "pipe_write", "pipe full", 7 },
	{ "pipe_read", "pipe empty", 7 },
	{ "anon_pipe_write", "pipe full", 7 },  /* Linux 6.16 on */
	{ "anon_pipe_read", "pipe empty", 7 },
	{ "fifo_pipe_write", "pipe full", 7 },
	{ "fifo_pipe_read", "pipe empty", 7 },
	{ "futex_wait_queue", "futex", 7 },
	{ "futex_wait_queue_me", "futex", 7 },
	{ "futex_wait", "futex", 7 },
	{ "__futex_wait", "futex", 7 },
	{ "do_nanosleep", "sleep", 7 },
	{ "hrtimer_nanosleep", "sleep", 7 },
	{ "do_wait", "wait for a child", 7 },
	{ "kernel_wait4", "wait for a child", 7 },
	{ "do_sys_poll", "poll", 7 },
	{ "do_select", "select", 7 },
	{ "core_sys_select", "select", 7 },
	{ "ep_poll", "epoll", 7 },
	{ "do_epoll_wait", "epoll", 7 },
	{ "unix_stream_read_generic", "socket empty", 6 },
	{ "unix_dgram_recvmsg", "socket empty", 6 },
	{ "sk_wait_data", "socket empty", 6 },
	{ "sock_alloc_send_pskb", "socket full", 6 },
	{ "sk_stream_wait_memory", "socket full", 6 },
	{ "unix_wait_for_peer", "socket full", 6 },
	{ "inet_csk_accept", "accept", 6 },
	{ "n_tty_read", "terminal input", 6 },
	{ "do_sigtimedwait", "signal wait", 6 },
	{ "sigsuspend", "signal wait", 6 },
	{ "do_exit", "exit", 5 },
	{ "rwsem_down_read_slowpath", "kernel rw semaphore", 4 },
	{ "rwsem_down_write_slowpath", "kernel rw semaphore", 4 },
	{ "folio_wait_bit_common", "page I/O", 4 },
	{ "folio_wait_writeback", "writeback", 4 },
	{ "__mutex_lock", "kernel mutex", 3 },
	{ "io_schedule", "disk I/O", 3 },
	{ "io_schedule_timeout", "disk I/O", 3 },
	{ "wait_for_completion", "completion", 2 },
	{ "schedule_hrtimeout_range", "timed wait", 1 },
	{ "schedule_timeout", "timed wait", 1 },
};

/* The scheduler's and perf's own frames: never a stack's name. */
static const char *const sched_prefix[] = {
	"__schedule", "schedule", "preempt_schedule", "io_schedule",
	"__cond_resched", "context_switch", "__switch_to", "finish_task",
	"perf_", "__perf", "_raw_spin", "do_syscall_64", "entry_SYSCALL",
	"syscall_exit", "__traceiter", "prepare_task_switch",
};

#define ksym rtprof_ksym

struct reason {
	char *text;             /* "kernel: pipe_write (pipe full)" */
	char *brief;            /* "pipe full" */
};

static struct {
	pthread_mutex_t mu;
	int tried;
	const char *why;        /* no names: why; NULL: loaded */
	char boot[64];
	struct ksym *sym;
	size_t nsym, symcap;
	char *blob;
	size_t blen, bcap;
	struct reason *r;
	size_t nr, rcap;
} K = { .mu = PTHREAD_MUTEX_INITIALIZER };

static int
by_addr(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Keep text symbol @name at @addr. Return: 0, or -1 (out of memory). */
static int
sym_add(uint64_t addr, const char *name)
{
	size_t len = strlen(name) + 1;

	if (K.nsym == K.symcap) {
		size_t nc = K.symcap ? K.symcap * 2 : 65536;
		struct ksym *n = realloc(K.sym, nc * sizeof(*n));

		if (n == NULL)
			return -1;
		K.sym = n;
		K.symcap = nc;
	}
	if (K.blen + len > K.bcap) {
		size_t nc = K.bcap ? K.bcap * 2 : 1 << 21;
		char *n = realloc(K.blob, nc);

		if (n == NULL)
			return -1;
		K.blob = n;
		K.bcap = nc;
	}
	memcpy(K.blob + K.blen, name, len);
	K.sym[K.nsym].addr = addr;
	K.sym[K.nsym].pad = 0;
	K.sym[K.nsym++].name = (uint32_t)K.blen;
	K.blen += len;
	return 0;
}

/* One line of /proc/kallsyms, "ADDR T name[\t[module]]", at @p (@e its
 * end): a text symbol kept. Return: the next line. */
static const char *
parse_line(const char *p, const char *e, uint64_t *nonzero)
{
	uint64_t addr = 0;
	const char *nl = memchr(p, '\n', (size_t)(e - p)), *n;
	char name[256];
	size_t len;

	if (nl == NULL)
		nl = e;
	for (; p < nl && *p != ' '; p++) {
		int c = *p, v = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;

		addr = addr << 4 | (uint64_t)(v & 15);
	}
	if (nl - p < 4 || !strchr("tTwW", p[1]) || p[2] != ' ')
		return nl + 1;
	n = p + 3;
	for (len = 0; n + len < nl && n[len] != '\t' && n[len] != ' ' &&
	    len < sizeof(name) - 1; len++)
		name[len] = n[len];
	name[len] = 0;
	*nonzero |= addr;
	sym_add(addr, name);
	return nl + 1;
}

/* @path read whole into a new buffer (*@n bytes), or NULL. */
static char *
slurp(const char *path, size_t *n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 1 << 22, len = 0;
	char *b = fd >= 0 ? malloc(cap) : NULL;
	ssize_t k;

	while (b != NULL && (k = read(fd, b + len, cap - len)) > 0) {
		len += (size_t)k;
		if (len == cap) {
			char *nb = realloc(b, cap *= 2);

			if (nb == NULL) {
				free(b);
				b = NULL;
			}
			b = nb;
		}
	}
	if (fd >= 0)
		close(fd);
	*n = len;
	return b;
}

/* This boot's id and its kernel's text symbols, once: from the cache of
 * this boot (codec/kcache.h), else one read of the whole file, parsed by
 * hand (sscanf took most of the time), then cached. */
static void
load(void)
{
	uint64_t nonzero = 0;
	char path[4200] = "";
	size_t n;
	char *buf;
	FILE *f;

	K.tried = 1;
	f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (f == NULL || fgets(K.boot, sizeof(K.boot), f) == NULL)
		K.boot[0] = 0;
	if (f != NULL)
		fclose(f);
	K.boot[strcspn(K.boot, "\n")] = 0;
	if (rtprof_kcache_path(K.boot, path, sizeof(path)) != 0)
		path[0] = 0;
	else if (rtprof_kcache_read(path, &K.sym, &K.nsym, &K.blob,
	    &K.blen) == 0) {
		K.symcap = K.nsym;
		K.bcap = K.blen;
		K.why = NULL;
		return;
	}
	buf = slurp("/proc/kallsyms", &n);
	if (buf == NULL) {
		K.why = "no /proc/kallsyms here";
		return;
	}
	for (const char *p = buf, *e = buf + n; p < e;)
		p = parse_line(p, e, &nonzero);
	free(buf);
	if (nonzero == 0) {
		K.why = "kernel addresses hidden here (kptr_restrict)";
		K.nsym = 0;
		return;
	}
	qsort(K.sym, K.nsym, sizeof(*K.sym), by_addr);
	K.why = NULL;
	if (path[0] != 0)
		rtprof_kcache_write(path, K.sym, K.nsym, K.blob, K.blen);
}

/* The name of the function at @addr, or NULL. */
static const char *
name_at(uint64_t addr)
{
	size_t lo = 0, hi = K.nsym;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (K.sym[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? NULL : K.blob + K.sym[lo - 1].name;
}

/* @sym is @fn, a compiler suffix (".constprop.0", ".isra.0") aside. */
static int
same_fn(const char *sym, const char *fn)
{
	size_t n = strlen(fn);

	return strncmp(sym, fn, n) == 0 && (sym[n] == 0 || sym[n] == '.');
}

static int
is_sched(const char *sym)
{
	for (size_t i = 0; i < sizeof(sched_prefix) / sizeof(*sched_prefix);
	    i++)
		if (strncmp(sym, sched_prefix[i], strlen(sched_prefix[i])) == 0)
			return 1;
	return 0;
}

/* The id of the reason with this text and brief, added if new. */
static int
intern(const char *text, const char *brief)
{
	struct reason *n;

	for (size_t i = 0; i < K.nr; i++)
		if (strcmp(K.r[i].text, text) == 0)
			return (int)i;
	if (K.nr == K.rcap) {
		size_t nc = K.rcap ? K.rcap * 2 : 32;

		n = realloc(K.r, nc * sizeof(*n));
		if (n == NULL)
			return -1;
		K.r = n;
		K.rcap = nc;
	}
	n = &K.r[K.nr];
	n->text = strdup(text);
	n->brief = strdup(brief);
	if (n->text == NULL || n->brief == NULL) {
		free(n->text);
		free(n->brief);
		return -1;
	}
	return (int)K.nr++;
}

/* The reason of a resolved stack (@ips outermost first). */
static int
classify(const uint64_t *ips, unsigned n)
{
	const struct known *best = NULL;
	const char *inner = NULL;
	char text[320], brief[300];

	/* Innermost first: among equal priorities the innermost wins. */
	for (unsigned i = n; i-- > 0;) {
		/* Return addresses but the innermost: looked up at - 1. */
		const char *s = name_at(i + 1 == n ? ips[i] : ips[i] - 1);

		if (s == NULL)
			continue;
		if (inner == NULL && !is_sched(s))
			inner = s;
		for (size_t k = 0; k < sizeof(known) / sizeof(*known); k++)
			if ((best == NULL || known[k].prio > best->prio) &&
			    same_fn(s, known[k].fn))
				best = &known[k];
	}
	if (best != NULL) {
		snprintf(text, sizeof(text), "kernel: %s (%s)", best->fn,
		    best->why);
		return intern(text, best->why);
	}
	if (inner == NULL)
		inner = n != 0 ? "scheduler" : "no stack";
	snprintf(text, sizeof(text), "kernel: %s", inner);
	snprintf(brief, sizeof(brief), "other: %s", inner);
	return intern(text, brief);
}

/* Context: any thread. */
void
rtprof_kreason_warm(void)
{
	pthread_mutex_lock(&K.mu);
	if (!K.tried)
		load();
	pthread_mutex_unlock(&K.mu);
}

/* Context: any thread. */
int
rtprof_kreason_of(const char *boot_id, const uint64_t *ips, unsigned n)
{
	char text[160];
	int id;

	pthread_mutex_lock(&K.mu);
	if (!K.tried)
		load();
	if (K.why != NULL || boot_id == NULL || boot_id[0] == 0 ||
	    strcmp(boot_id, K.boot) != 0) {
		const char *why = K.why != NULL ? K.why : boot_id == NULL ||
		    boot_id[0] == 0 ? "recorded without its boot id" :
		    "recorded in another boot";

		snprintf(text, sizeof(text), "kernel: (not named: %s)", why);
		id = intern(text, "(not named)");
	} else {
		id = classify(ips, n);
	}
	pthread_mutex_unlock(&K.mu);
	return id;
}

/* Context: any thread (an id once returned never changes). */
const char *
rtprof_kreason_text(int id)
{
	const char *t = "kernel: ?";

	pthread_mutex_lock(&K.mu);
	if (id >= 0 && (size_t)id < K.nr)
		t = K.r[id].text;
	pthread_mutex_unlock(&K.mu);
	return t;
}

/* Context: any thread. */
const char *
rtprof_kreason_short(int id)
{
	const char *t = "?";

	pthread_mutex_lock(&K.mu);
	if (id >= 0 && (size_t)id < K.nr)
		t = K.r[id].brief;
	pthread_mutex_unlock(&K.mu);
	return t;
}
