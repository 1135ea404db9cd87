/*
 * session.c - start, stop, pause, resume, dump, status.
 *
 * Each call takes the core mutex, changes the state word that every
 * recording call reads (release store; the recording side loads it with
 * acquire in rtprof__open()) and leaves the data work to the writer thread.
 * Generations: every start takes the next generation; chunks carry the state
 * word they were taken for, and the writer hands a chunk only to the session
 * of its generation while that session still accepts data. A record written
 * by a thread that was preempted across stop + start therefore lands in its
 * own session or is counted late, never in the next session.
 */
#include <errno.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "sampler_int.h"

static void
publish_state(uint64_t s)
{
	/* release: the session set up under the lock before the word; pairs
	 * with the acquire loads in rtprof__claim() / rtprof__reserve_slow(). */
	__atomic_store_n(&rtprof__state, s, __ATOMIC_RELEASE);
}

/*
 * A session's id: a random base drawn once per process (again in a fork
 * child), XOR its generation, so that no two sessions of a process share
 * one (a fresh random id per session collided: 16000 sessions in one dump
 * meet a repeated 32-bit id 3% of the time) and ids of different processes
 * and runs still differ. Context: a control thread, lock held.
 */
static uint32_t
random_id(uint32_t gen)
{
	static uint32_t base;
	static pid_t base_pid;
	pid_t pid = getpid();

	if (base_pid != pid) {
		if (getrandom(&base, sizeof(base), GRND_NONBLOCK) !=
		    sizeof(base))
			base = (uint32_t)pid * 2654435761u ^
			    (uint32_t)rtprof_now();
		base_pid = pid;
	}
	return base ^ gen;
}

/* Is a session stopped but not yet written out? Context: lock held. */
static int
sessions_unfinished(const struct rtprof__core *c)
{
	for (const struct rtprof__session *s = c->sessions; s != NULL;
	    s = s->next)
		if (s->phase != RTPROF__SESS_DONE)
			return 1;
	return 0;
}

/* The user counters' values at @s's start (writer.c sends them at its
 * start_ticks; none when out of memory). Context: the control thread
 * starting @s, lock held. */
static void
values_at_start(const struct rtprof__core *c, struct rtprof__session *s)
{
	if (c->ncounters == 0 ||
	    (s->values_start = malloc(c->ncounters * sizeof(int64_t))) == NULL)
		return;
	/* relaxed: a statistic, read as the writer reads it. */
	for (uint32_t i = 0; i < c->ncounters; i++)
		s->values_start[i] = __atomic_load_n(&c->counters[i]->pub.value,
		    __ATOMIC_RELAXED);
	s->values_start_n = c->ncounters;
}

/* Context: any non-RT thread; may block and allocate. */
RTPROF_API int
rtprof_session_start(const struct rtprof_settings *settings)
{
	struct rtprof_settings set;
	struct rtprof__session *s;
	const rtprof_lock *lk;
	struct rtprof__core *c;
	struct rtprof__thread *th;
	struct stat st;
	double rate;
	int rc;

	RTPROF_TRY(rtprof__settings_resolve(settings, &set));
	rate = rtprof__clock_rate(); /* may sleep once: outside the lock */
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->set = set;
	/* The sink's identity: the writer writes only while it holds. */
	if (fstat(set.fd, &st) != 0) {
		free(s);
		return -EINVAL;
	}
	s->sink_dev = st.st_dev;
	s->sink_ino = st.st_ino;
	lk = rtprof__lock();
	c = rtprof__core_get(lk);
	/* A stop on another thread may still be waiting for the writer to
	 * finish its session: wait for every earlier session to be written
	 * out first. Starting now would queue this session's frames before
	 * that session's last ones on a shared descriptor, and re-baseline
	 * the threads' drop counters (acct_gen) before the writer settled
	 * that session's drops. */
	while (c->running == NULL && sessions_unfinished(c))
		pthread_cond_wait(&c->done_cv, &c->mu);
	if (c->running != NULL) {
		rtprof__unlock(lk);
		free(s);
		return -EBUSY;
	}
	if (c->forked) {
		/* The pool and the threads' rings are the parent's copies. */
		rtprof__unlock(lk);
		free(s);
		return -EPERM;
	}
	rc = rtprof__writer_ensure(lk);
	if (rc == 0 && set.sample_interval_us != RTPROF_SAMPLING_OFF)
		rc = rtprof__sampler_ensure(lk);
	if (rc < 0) {
		rtprof__unlock(lk);
		free(s);
		return rc;
	}
	c->ticks_per_sec = rate;
	rc = rtprof__pool_setup(lk, &set);
	if (rc == 0 && set.dump_signal != 0)
		rc = rtprof__dump_signal_install(lk, set.dump_signal);
	if (rc < 0) {
		rtprof__unlock(lk);
		free(s);
		return rc;
	}
	s->gen = ++c->gen;
	s->id = random_id(s->gen);
	s->phase = RTPROF__SESS_RUNNING;
	rtprof__clock_pair(&s->start_ticks, &s->start_mono, &s->start_wall);
	s->samples_lost0 = rtprof__perf_lost(lk);
	values_at_start(c, s);
	s->next = c->sessions;
	c->sessions = s;
	c->running = s;
	for (th = c->threads; th != NULL; th = th->next) {
		/* Drops from here on are this session's (threads registered
		 * later start from 0). */
		th->acct_gen = s->gen;
		th->acct_drops_full = atomic_load_explicit(&th->dropped_full,
		    memory_order_relaxed);
		th->acct_drops_nested = atomic_load_explicit(
		    &th->dropped_nested, memory_order_relaxed);
		if (!th->exited)
			rtprof__refill(lk, th, set.prefill);
	}
	publish_state((uint64_t)s->gen << 2 | RTPROF__RUNNING);
	rtprof__writer_kick(lk);
	rtprof__sampler_kick(lk);
	rtprof__sampler_await(lk, s);
	rtprof__unlock(lk);
	return 0;
}

static void
pause_end(struct rtprof__session *s, uint64_t now)
{
	if (!s->paused)
		return;
	s->paused = 0;
	if (s->npauses == s->cap_pauses) {
		uint32_t ncap = s->cap_pauses ? s->cap_pauses * 2 : 8;
		struct rtprof__pause *n;

		if (ncap > 65536 ||
		    (n = realloc(s->pauses, ncap * sizeof(*n))) == NULL) {
			s->pauses_lost++;
			return;
		}
		s->pauses = n;
		s->cap_pauses = ncap;
	}
	s->pauses[s->npauses].start = s->pause_start;
	s->pauses[s->npauses].end = now;
	s->npauses++;
}

/* Context: lock held (@c came from rtprof__core_get()). */
static void
status_fill(const struct rtprof__core *c, const struct rtprof__session *s,
    struct rtprof_session_status *out)
{
	memset(out, 0, sizeof(*out));
	out->pool_chunks = c->nchunks;
	out->memory_bytes = c->memory;
	out->generation = s->gen;
	out->running = s->phase == RTPROF__SESS_RUNNING;
	out->paused = s->paused;
	/* Sink fields are written by the writer outside the lock; a status
	 * read is a statistic and may lag by one batch. */
	out->sink_error = __atomic_load_n(&s->sink_error, __ATOMIC_RELAXED);
	out->limit_reached = __atomic_load_n(&s->limit_reached, __ATOMIC_RELAXED);
	out->bytes_written = __atomic_load_n(&s->bytes, __ATOMIC_RELAXED);
	out->chunks_written = __atomic_load_n(&s->chunks_written, __ATOMIC_RELAXED);
	out->chunks_lost = __atomic_load_n(&s->chunks_lost, __ATOMIC_RELAXED);
}

/* Context: any non-RT thread; blocks until the dump is complete. */
RTPROF_API int
rtprof_session_stop(void)
{
	struct rtprof__session *s, **pp;
	const rtprof_lock *lk;
	struct rtprof__core *c;
	int rc;

	lk = rtprof__lock();
	c = rtprof__core_get(lk);
	s = c->running;
	if (s == NULL) {
		rtprof__unlock(lk);
		return -ENOENT;
	}
	rtprof__clock_pair(&s->stop_ticks, &s->stop_mono, &s->stop_wall);
	s->samples_lost = rtprof__perf_lost(lk) - s->samples_lost0;
	pause_end(s, s->stop_ticks);
	publish_state((uint64_t)s->gen << 2);
	rtprof__dump_signal_restore(lk);
	s->phase = RTPROF__SESS_STOPPING;
	/* release: the writer's final flush bounds its wait from here
	 * (writer.c, sink_timeout_ms()). */
	atomic_store_explicit(&s->stopping, 1, memory_order_release);
	c->running = NULL;
	rtprof__writer_kick(lk);
	rtprof__sampler_kick(lk);
	/* The lock is released while waiting: other threads may start the
	 * next session meanwhile. */
	while (s->phase != RTPROF__SESS_DONE)
		pthread_cond_wait(&c->done_cv, &c->mu);
	rc = s->sink_error;
	status_fill(c, s, &c->last);
	c->has_last = 1;
	for (pp = &c->sessions; *pp != NULL; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	rtprof__session_free(s);
	rtprof__unlock(lk);
	return rc;
}

/* Context: any non-RT thread; may block. */
RTPROF_API int
rtprof_session_pause(void)
{
	const rtprof_lock *lk = rtprof__lock();
	struct rtprof__core *c = rtprof__core_get(lk);
	struct rtprof__session *s = c->running;
	int rc = 0;

	if (s == NULL)
		rc = -ENOENT;
	else if (s->paused)
		rc = -EALREADY;
	else {
		s->paused = 1;
		s->pause_start = rtprof_now();
		publish_state((uint64_t)s->gen << 2 | RTPROF__RUNNING | RTPROF__PAUSED);
		rtprof__sampler_kick(lk);
	}
	rtprof__unlock(lk);
	return rc;
}

/* Context: any non-RT thread; may block. */
RTPROF_API int
rtprof_session_resume(void)
{
	const rtprof_lock *lk = rtprof__lock();
	struct rtprof__core *c = rtprof__core_get(lk);
	struct rtprof__session *s = c->running;
	int rc = 0;

	if (s == NULL)
		rc = -ENOENT;
	else if (!s->paused)
		rc = -EALREADY;
	else {
		pause_end(s, rtprof_now());
		publish_state((uint64_t)s->gen << 2 | RTPROF__RUNNING);
		rtprof__writer_kick(lk);
		rtprof__sampler_kick(lk);
	}
	rtprof__unlock(lk);
	return rc;
}

/* Context: any non-RT thread; blocks until written. */
RTPROF_API int
rtprof_session_dump(void)
{
	return rtprof__session_dump_within(-1);
}

/*
 * rtprof_session_dump(), waiting at most @ms (< 0: until written): the
 * autostart's header, which must not hold a program's start for the
 * sink's whole write timeout when nobody reads the dump.
 * Context: any non-RT thread. Return: as rtprof_session_dump(), or
 * -ETIMEDOUT (the dump is still written when the sink takes it).
 */
int
rtprof__session_dump_within(int ms)
{
	struct timespec dl;
	const rtprof_lock *lk = rtprof__lock();
	struct rtprof__core *c = rtprof__core_get(lk);
	struct rtprof__session *s = c->running;
	uint64_t want;
	uint32_t gen;
	int rc;

	if (s == NULL) {
		rtprof__unlock(lk);
		return -ENOENT;
	}
	want = ++s->dump_wanted;
	gen = s->gen;
	clock_gettime(CLOCK_REALTIME, &dl);     /* done_cv's clock */
	dl.tv_sec += ms / 1000 + (dl.tv_nsec + (long)(ms % 1000) * 1000000) /
	    1000000000;
	dl.tv_nsec = (dl.tv_nsec + (long)(ms % 1000) * 1000000) % 1000000000;
	s->dump_requested = 1;
	rtprof__writer_kick(lk);
	/* Wait until served, or until the session ended (then `s` may be
	 * freed: look it up again by generation every time). */
	for (;;) {
		for (s = c->sessions; s != NULL && s->gen != gen; s = s->next)
			;
		if (s == NULL) {
			rc = 0;
			break;
		}
		if (s->dump_done >= want || s->phase == RTPROF__SESS_DONE) {
			rc = s->sink_error;
			break;
		}
		if (ms < 0) {
			pthread_cond_wait(&c->done_cv, &c->mu);
		} else if (pthread_cond_timedwait(&c->done_cv, &c->mu, &dl) ==
		    ETIMEDOUT) {
			rc = -ETIMEDOUT;
			break;
		}
	}
	rtprof__unlock(lk);
	return rc;
}

/* Context: any non-RT thread; may block. */
RTPROF_API int
rtprof_session_status_get(struct rtprof_session_status *out)
{
	const rtprof_lock *lk = rtprof__lock();
	struct rtprof__core *c = rtprof__core_get(lk);
	struct rtprof__session *s = c->running ? c->running : c->sessions;
	int rc = 0;

	if (s != NULL) {
		status_fill(c, s, out);
	} else if (c->has_last) {
		*out = c->last;
		out->pool_chunks = c->nchunks;
		out->memory_bytes = c->memory;
	} else {
		memset(out, 0, sizeof(*out));
		out->memory_bytes = c->memory;
		rc = -ENOENT;
	}
	rtprof__unlock(lk);
	return rc;
}
