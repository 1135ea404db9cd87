/*
 * preload.c - librtprof-preload.so: profile an unmodified program.
 *
 * `rtprof record` runs the program with this library in LD_PRELOAD and an
 * open dump descriptor in RTPROF_FD. Loading it loads librtprof, whose
 * constructor registers the main thread and starts the session on that
 * descriptor (core/state.c, autostart; the session ends at exit). This
 * library adds what an unmodified program does not do itself: every thread
 * created with pthread_create is registered before its start routine runs
 * (and unregisters when it exits, through the registry's thread-exit
 * destructor), named after its comm (refreshed at exit, so a name the
 * program set with pthread_setname_np shows).
 *
 * Context: the program's threads: pthread_create on the creating thread,
 * start() on the new thread before the program's start routine. Both may
 * allocate: neither runs on a real-time path of the program.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *,
    void *(*)(void *), void *);

struct start {
	void *(*fn)(void *);
	void *arg;
};

static void *
start(void *p)
{
	struct start s = *(struct start *)p;

	free(p);
	/* NULL: named after the thread's comm, refreshed at exit. */
	rtprof_thread_register(NULL, 0);
	return s.fn(s.arg);
}

/* rtprof's own threads (writer, sampler) are not the program's. */
static int
is_ours(void *(*fn)(void *))
{
	static Dl_info self;
	static int have_self;
	Dl_info i;

	if (!have_self) {
		if (dladdr((void *)rtprof_session_start, &self) == 0)
			return 0;
		have_self = 1;
	}
	return dladdr((void *)fn, &i) != 0 && i.dli_fbase == self.dli_fbase;
}

/* Context: the creating thread; may allocate. */
RTPROF_API int
pthread_create(pthread_t *t, const pthread_attr_t *attr,
    void *(*fn)(void *), void *arg)
{
	static create_fn real;
	struct start *s;
	int rc;

	if (real == NULL) {
		real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
		if (real == NULL)
			return EAGAIN;
	}
	if (is_ours(fn) || (s = malloc(sizeof(*s))) == NULL)
		return real(t, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	rc = real(t, attr, start, s);
	if (rc != 0)
		free(s);
	return rc;
}
