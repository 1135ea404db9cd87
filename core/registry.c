/*
 * registry.c - thread registration, marker types and counters.
 *
 * Registered threads stay in the registry after they exit until the writer
 * has written (or recycled) every chunk of theirs and announced their exit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"

static pthread_key_t exit_key;

static void thread_exit_cb(void *arg);

/* Context: library constructor. */
void
rtprof__registry_init(void)
{
	pthread_key_create(&exit_key, thread_exit_cb);
}

/* Context: owner thread; may block and allocate. */

/*
 * rtprof__thread_bind - fill in what @th's kernel thread is: its id, its
 * CPU-time clock, whether it is the process's main thread. At
 * registration, and in a fork child for the thread that forked (it is
 * another kernel thread there, the child's main one).
 * Context: the thread @th records.
 */
void
rtprof__thread_bind(struct rtprof__thread *th)
{
	th->tid = (pid_t)syscall(SYS_gettid);
	if (th->tid == getpid())
		th->flags |= RTPROF_THREAD_MAIN;
	if (pthread_getcpuclockid(pthread_self(), &th->cpu_clock) != 0)
		th->cpu_clock = CLOCK_THREAD_CPUTIME_ID; /* unreachable: own id */
}

/* glibc's stack pointer at the process's start: main's frames are all
 * below it. Weak: absent from other C libraries. */
extern void *__libc_stack_end __attribute__((weak));

/*
 * The main thread's stack without pthread_getattr_np(), which reads and
 * parses /proc/self/maps for it (a fifth of a recorded /bin/true's
 * instructions): from the start's stack pointer, page-rounded, down by
 * RLIMIT_STACK. The copy and the unwinder need no more: the frames are
 * below that top, and nothing above it is copied. Return: 0, or -1.
 */
static int
main_stack_bounds(struct rtprof__thread *th)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), hi;
	struct rlimit rl;

	if (th->tid != getpid() || &__libc_stack_end == NULL ||
	    __libc_stack_end == NULL || getrlimit(RLIMIT_STACK, &rl) != 0 ||
	    rl.rlim_cur == RLIM_INFINITY)
		return -1;
	hi = ((uintptr_t)__libc_stack_end + pg - 1) & ~(pg - 1);
	if (rl.rlim_cur >= hi)
		return -1;
	th->stack_hi = hi;
	th->stack_lo = hi - (uintptr_t)rl.rlim_cur;
	return 0;
}

/*
 * The calling thread's stack, for the sampler's stack copy (a copy never
 * reads past its top). Context: owner thread, registering; may allocate.
 */
static void
stack_bounds(struct rtprof__thread *th)
{
	pthread_attr_t a;
	void *lo = NULL;
	size_t size = 0;

	if (main_stack_bounds(th) == 0 ||
	    pthread_getattr_np(pthread_self(), &a) != 0)
		return;
	if (pthread_attr_getstack(&a, &lo, &size) == 0 && lo != NULL) {
		th->stack_lo = (uintptr_t)lo;
		th->stack_hi = (uintptr_t)lo + size;
	}
	pthread_attr_destroy(&a);
}

RTPROF_API int
rtprof_thread_register(const char *name, unsigned flags)
{
	struct rtprof__tls *t = &rtprof__tls;
	struct rtprof__thread *th;
	const rtprof_lock *lk;
	struct rtprof__core *c;
	uint64_t wall, mono;

	if (t->thread != NULL)
		return -EEXIST;
	th = aligned_alloc(RTPROF__CACHELINE,
	    (sizeof(*th) + RTPROF__CACHELINE - 1) & ~(size_t)(RTPROF__CACHELINE - 1));
	if (th == NULL)
		return -ENOMEM;
	memset(th, 0, sizeof(*th));
	ck_ring_init(&th->empty, RTPROF__EMPTY_RING);
	ck_ring_init(&th->full, RTPROF__FULL_RING);
	ck_sequence_init(&th->label_seq);
	th->flags = flags;
	rtprof__thread_bind(th);
	if (name == NULL) {
		/* The thread's comm; refreshed when it unregisters. */
		char comm[17] = "";

		prctl(PR_GET_NAME, comm, 0, 0, 0);
		strncpy(th->name, comm[0] != '\0' ? comm : "thread",
		    sizeof(th->name) - 1);
		th->name_from_comm = 1;
	} else {
		strncpy(th->name, name, sizeof(th->name) - 1);
	}
	rtprof__clock_pair(&th->register_ticks, &mono, &wall);
	stack_bounds(th);

	lk = rtprof__lock();
	c = rtprof__core_get(lk);
	th->next = c->threads;
	c->threads = th;
	c->nthreads++;
	c->memory += sizeof(*th);
	if (c->running != NULL)
		rtprof__refill(lk, th, c->running->set.prefill);
	rtprof__sampler_join(lk, th);
	rtprof__writer_kick(lk);
	rtprof__unlock(lk);

	t->fast_clock = rtprof__clock_is_tsc();
	t->expect = 0;
	t->thread = th;
	pthread_setspecific(exit_key, th);
	return 0;
}

/* Context: owner thread (or its TLS destructor); may block. */
static void
unregister(struct rtprof__thread *th)
{
	struct rtprof__tls *t = &rtprof__tls;
	const rtprof_lock *lk;
	uint64_t ticks, mono, wall;
	char comm[17] = "";

	/* Claimed like a record (rtprof__open()): a signal handler that
	 * records meanwhile drops its event (counted) instead of handing the
	 * chunk back a second time (it would be queued on `full` twice and
	 * freed while still queued). */
	t->expect = RTPROF__BUSY;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	rtprof__retire(t, th);
	t->thread = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->expect = 0;
	if (th->name_from_comm)
		prctl(PR_GET_NAME, comm, 0, 0, 0);
	lk = rtprof__lock();
	/* A name set with pthread_setname_np after registration: the THREAD
	 * frame written at exit carries it (it replaces the first one). */
	if (th->name_from_comm && comm[0] != '\0')
		strncpy(th->name, comm, sizeof(th->name) - 1);
	/* Its perf events stop counting as its own first (what the kernel
	 * took later is its exit path, dropped), then the exit time: under
	 * the lock, after any sample the sampler took of this thread (it
	 * samples under the lock), so no sample is later than the exit. */
	rtprof__perf_detach(lk, th);
	rtprof__clock_pair(&ticks, &mono, &wall);
	th->unregister_ticks = ticks;
	/* From here the collector owns both rings (the mutex orders the
	 * owner's last ring operations before the collector's). */
	th->exited = 1;
	rtprof__sampler_forget(lk, th);
	rtprof__writer_kick(lk);
	rtprof__unlock(lk);
}

/* Context: owner thread; may block. */
RTPROF_API int
rtprof_thread_unregister(void)
{
	struct rtprof__thread *th = rtprof__tls.thread;

	if (th == NULL)
		return -ENOENT;
	pthread_setspecific(exit_key, NULL);
	unregister(th);
	return 0;
}

/* Context: the exiting thread, from the pthread key destructor. */
static void
thread_exit_cb(void *arg)
{
	if (arg != NULL && rtprof__tls.thread == arg)
		unregister(arg);
}

/*
 * rtprof__thread_free - unlink and free an exited thread whose chunks are
 * all back. Context: collector, lock held.
 */
void
rtprof__thread_free(const rtprof_lock *lk, struct rtprof__thread *th)
{
	struct rtprof__core *c = rtprof__core_get(lk);
	struct rtprof__thread **pp;
	struct rtprof__chunk *k;

	while (ck_ring_dequeue_spsc(&th->empty, th->empty_buf, &k)) {
		RTPROF__HANDOVER_ACQUIRE(k);
		rtprof__pool_put(lk, k);
	}
	for (pp = &c->threads; *pp != NULL; pp = &(*pp)->next)
		if (*pp == th) {
			*pp = th->next;
			break;
		}
	c->nthreads--;
	c->memory -= sizeof(*th);
	free(th);
}

static size_t
field_size(enum rtprof_field_kind k)
{
	switch (k) {
	case RTPROF_FIELD_I64:
	case RTPROF_FIELD_U64:
	case RTPROF_FIELD_F64:
		return 9;
	case RTPROF_FIELD_STATIC_STR:
		return 10;
	case RTPROF_FIELD_STR:
		return 2 + RTPROF_MAX_STRING;
	}
	return 0;
}

/* Copies @src into the arena at *@p; NULL stays NULL. */
static const char *
arena_dup(char **p, const char *src)
{
	char *d = *p;
	size_t n;

	if (src == NULL)
		return NULL;
	n = strlen(src) + 1;
	memcpy(d, src, n);
	*p += n;
	return d;
}

/* Context: any thread; may block and allocate. */
RTPROF_API const rtprof_marker_type *
rtprof_marker_type_declare(const struct rtprof_marker_schema *schema)
{
	struct rtprof__schema_desc *d;
	const rtprof_lock *lk;
	struct rtprof__core *c;
	size_t strsz = 0, max = 24;
	char *arena;

	if (schema == NULL || schema->name == NULL || schema->nfields > RTPROF_MAX_FIELDS ||
	    (unsigned)schema->category >= RTPROF_MAX_CATEGORIES) {
		errno = EINVAL;
		return NULL;
	}
#define STRSZ(s) ((s) ? strlen(s) + 1 : 0)
	strsz += STRSZ(schema->name) + STRSZ(schema->tooltip_label) +
	    STRSZ(schema->table_label) + STRSZ(schema->chart_label);
	for (unsigned i = 0; i < schema->nfields; i++) {
		const struct rtprof_field *f = &schema->fields[i];

		if (f->key == NULL || field_size(f->kind) == 0) {
			errno = EINVAL;
			return NULL;
		}
		strsz += STRSZ(f->key) + STRSZ(f->label) + STRSZ(f->format);
		max += field_size(f->kind);
	}
#undef STRSZ
	d = calloc(1, sizeof(*d));
	arena = malloc(strsz ? strsz : 1);
	if (d == NULL || arena == NULL) {
		free(d);
		free(arena);
		errno = ENOMEM;
		return NULL;
	}
	d->strings = arena;
	d->s = *schema;
	d->s.name = arena_dup(&arena, schema->name);
	d->s.tooltip_label = arena_dup(&arena, schema->tooltip_label);
	d->s.table_label = arena_dup(&arena, schema->table_label);
	d->s.chart_label = arena_dup(&arena, schema->chart_label);
	for (unsigned i = 0; i < schema->nfields; i++) {
		d->s.fields[i].key = arena_dup(&arena, schema->fields[i].key);
		d->s.fields[i].label = arena_dup(&arena, schema->fields[i].label);
		d->s.fields[i].format = arena_dup(&arena, schema->fields[i].format);
	}
	d->pub.struct_size = sizeof(d->pub);
	d->pub.nfields = (uint8_t)schema->nfields;
	d->pub.max_record = (uint32_t)max;

	lk = rtprof__lock();
	c = rtprof__core_get(lk);
	if (c->ntypes == RTPROF__MAX_TYPES) {
		rtprof__unlock(lk);
		free(d->strings);
		free(d);
		errno = ENOSPC;
		return NULL;
	}
	d->pub.id = (uint16_t)c->ntypes;
	c->types[c->ntypes++] = d;
	c->memory += sizeof(*d) + strsz;
	rtprof__writer_kick(lk);
	rtprof__unlock(lk);
	return &d->pub;
}

static void
counter_desc_free(struct rtprof__counter_desc *d)
{
	free(d->name);
	free(d->category);
	free(d->description);
	free(d->unit);
	free(d);
}

/* Context: any thread; may block and allocate. */
RTPROF_API rtprof_counter *
rtprof_counter_declare_kind(const char *name, const char *category,
    const char *description, int kind, const char *unit)
{
	struct rtprof__counter_desc *d;
	const rtprof_lock *lk;
	struct rtprof__core *c;

	if (name == NULL || kind < RTPROF_COUNTER_UNSPECIFIED ||
	    kind > RTPROF_COUNTER_BYTES) {
		errno = EINVAL;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return NULL;
	d->kind = kind;
	d->name = strdup(name);
	d->category = strdup(category ? category : "Other");
	d->description = strdup(description ? description : "");
	d->unit = strdup(unit ? unit : "");
	if (d->name == NULL || d->category == NULL || d->description == NULL ||
	    d->unit == NULL) {
		counter_desc_free(d);
		errno = ENOMEM;
		return NULL;
	}
	d->pub.struct_size = sizeof(d->pub);
	lk = rtprof__lock();
	c = rtprof__core_get(lk);
	if (c->ncounters == RTPROF__MAX_COUNTERS) {
		rtprof__unlock(lk);
		counter_desc_free(d);
		errno = ENOSPC;
		return NULL;
	}
	d->pub.id = (uint16_t)c->ncounters;
	/* The counter record's bytes 11-14 (rtprof__counter_rec()). */
	d->pub.rec_tag[0] = 0xcd;
	d->pub.rec_tag[1] = (unsigned char)(d->pub.id >> 8);
	d->pub.rec_tag[2] = (unsigned char)d->pub.id;
	d->pub.rec_tag[3] = 0xd3;
	c->counters[c->ncounters++] = d;
	c->memory += sizeof(*d);
	rtprof__writer_kick(lk);
	rtprof__unlock(lk);
	return &d->pub;
}

/* Context: any thread; may block and allocate. */
RTPROF_API rtprof_counter *
rtprof_counter_declare(const char *name, const char *category,
    const char *description)
{
	return rtprof_counter_declare_kind(name, category, description,
	    RTPROF_COUNTER_UNSPECIFIED, NULL);
}
