/*
 * spill.c - record streams in one temporary file (spill.h).
 *
 * Context: one thread per spill; no shared state.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spill.h"

#define BUF_MIN 256
#define BUF_MAX (128u << 10)    /* > the largest record + its prefix */
#define RUN_READ (64u << 10)    /* read buffer per run while merging */
#define MIN_BUDGET (1u << 20)
/* Buffer sizes are BUF_MIN << k, k < NCLASS (BUF_MAX at the most). */
#define NCLASS 10

struct blk {
	uint64_t off, len;
};

struct rtprof_spill_stream {
	struct rtprof_spill *sp;
	size_t recsize;                 /* 0: variable, u16 length prefix */
	uint64_t count;
	unsigned char *buf;             /* write buffer */
	size_t n, cap;
	struct blk *blk;                /* flushed blocks, in order */
	size_t nblk, blkcap;
	bool sorted;                    /* keys appended in order so far */
	uint64_t last_key;
	/* Its place in the list of buffers of its size (cap > 0 only). */
	struct rtprof_spill_stream *cls_prev, *cls_next;
};

struct rtprof_spill {
	int err;
	int fd;                         /* -1 until the first flush */
	char *dir;
	size_t budget;
	size_t buffered;                /* bytes of all write buffers */
	uint64_t file_end;
	struct rtprof_spill_stream **st;
	size_t nst, stcap;
	/* The streams with a buffer, by its size: evict() takes the
	 * biggest in O(1) (a scan of every stream per eviction was
	 * quadratic in the threads of a dump). */
	struct rtprof_spill_stream *cls[NCLASS];
};

static int
fail(struct rtprof_spill *sp, int err)
{
	if (sp->err == 0)
		sp->err = err;
	return sp->err;
}

int
rtprof_spill_new(struct rtprof_spill **out, const char *dir, size_t budget)
{
	struct rtprof_spill *sp = calloc(1, sizeof(*sp));
	const char *d = dir != NULL ? dir : getenv("TMPDIR");

	if (sp == NULL)
		return -ENOMEM;
	if (d == NULL || d[0] == '\0')
		d = "/tmp";
	sp->dir = strdup(d);
	if (sp->dir == NULL) {
		free(sp);
		return -ENOMEM;
	}
	sp->fd = -1;
	sp->budget = budget < MIN_BUDGET ? MIN_BUDGET : budget;
	*out = sp;
	return 0;
}

void
rtprof_spill_free(struct rtprof_spill *sp)
{
	if (sp == NULL)
		return;
	for (size_t i = 0; i < sp->nst; i++) {
		free(sp->st[i]->buf);
		free(sp->st[i]->blk);
		free(sp->st[i]);
	}
	free(sp->st);
	if (sp->fd >= 0)
		close(sp->fd);
	free(sp->dir);
	free(sp);
}

int
rtprof_spill_error(const struct rtprof_spill *sp)
{
	return sp->err;
}

uint64_t
rtprof_spill_file_bytes(const struct rtprof_spill *sp)
{
	return sp->file_end;
}

struct rtprof_spill_stream *
rtprof_spill_stream_new(struct rtprof_spill *sp, size_t recsize)
{
	struct rtprof_spill_stream *st;

	if (sp->err != 0)
		return NULL;
	if (recsize > RTPROF_SPILL_MAX_REC || (recsize != 0 && recsize < 8)) {
		fail(sp, -EINVAL);
		return NULL;
	}
	if (sp->nst == sp->stcap) {
		size_t nc = sp->stcap ? sp->stcap * 2 : 64;
		void *n = realloc(sp->st, nc * sizeof(*sp->st));

		if (n == NULL) {
			fail(sp, -ENOMEM);
			return NULL;
		}
		sp->st = n;
		sp->stcap = nc;
	}
	st = calloc(1, sizeof(*st));
	if (st == NULL) {
		fail(sp, -ENOMEM);
		return NULL;
	}
	st->sp = sp;
	st->recsize = recsize;
	st->sorted = true;
	sp->st[sp->nst++] = st;
	return st;
}

/* ------------------------------------------------------------------ */
/* Buffers by size                                                      */

/* The class of a buffer of @cap bytes (BUF_MIN << class). */
static unsigned
class_of(size_t cap)
{
	unsigned c = 0;

	while (c + 1 < NCLASS && (size_t)BUF_MIN << c < cap)
		c++;
	return c;
}

/* Take @st (cap > 0) out of its class's list. */
static void
class_unlink(struct rtprof_spill_stream *st)
{
	struct rtprof_spill *sp = st->sp;

	if (st->cls_prev != NULL)
		st->cls_prev->cls_next = st->cls_next;
	else
		sp->cls[class_of(st->cap)] = st->cls_next;
	if (st->cls_next != NULL)
		st->cls_next->cls_prev = st->cls_prev;
	st->cls_prev = st->cls_next = NULL;
}

/* Put @st (cap > 0) at the head of its class's list. */
static void
class_link(struct rtprof_spill_stream *st)
{
	struct rtprof_spill_stream **head = &st->sp->cls[class_of(st->cap)];

	st->cls_prev = NULL;
	st->cls_next = *head;
	if (*head != NULL)
		(*head)->cls_prev = st;
	*head = st;
}

/* @st's buffer is now @buf of @cap bytes (NULL, 0: none). */
static void
set_buffer(struct rtprof_spill_stream *st, unsigned char *buf, size_t cap)
{
	if (st->cap != 0)
		class_unlink(st);
	st->sp->buffered -= st->cap;
	st->sp->buffered += cap;
	st->buf = buf;
	st->cap = cap;
	if (cap != 0)
		class_link(st);
}

void
rtprof_spill_stream_clear(struct rtprof_spill_stream *st)
{
	free(st->buf);
	set_buffer(st, NULL, 0);
	st->n = 0;
	st->nblk = 0;
	st->count = 0;
	st->sorted = true;
}

uint64_t
rtprof_spill_count(const struct rtprof_spill_stream *st)
{
	return st->count;
}

/* ------------------------------------------------------------------ */
/* The file                                                             */

static int
file_open(struct rtprof_spill *sp)
{
	size_t n = strlen(sp->dir) + 32;
	char *path = malloc(n);

	if (path == NULL)
		return fail(sp, -ENOMEM);
	snprintf(path, n, "%s/rtprof-spill-XXXXXX", sp->dir);
	sp->fd = mkostemp(path, O_CLOEXEC);
	if (sp->fd < 0) {
		int e = errno;

		free(path);
		return fail(sp, -e);
	}
	unlink(path);
	free(path);
	return 0;
}

/* Append @n bytes at the end of the file; *@off gets where. */
static int
file_append(struct rtprof_spill *sp, const void *p, size_t n, uint64_t *off)
{
	const unsigned char *b = p;
	uint64_t at = sp->file_end;

	if (sp->fd < 0 && file_open(sp) != 0)
		return sp->err;
	*off = at;
	while (n > 0) {
		ssize_t w = pwrite(sp->fd, b, n, (off_t)at);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return fail(sp, -errno);
		if (w == 0)
			return fail(sp, -ENOSPC);
		b += w;
		n -= (size_t)w;
		at += (uint64_t)w;
	}
	sp->file_end = at;
	return 0;
}

static int
file_read(struct rtprof_spill *sp, void *p, size_t n, uint64_t off)
{
	unsigned char *b = p;

	while (n > 0) {
		ssize_t r = pread(sp->fd, b, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return fail(sp, -errno);
		if (r == 0)
			return fail(sp, -EIO);  /* the file shrank: not ours */
		b += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static int
add_block(struct rtprof_spill_stream *st, uint64_t off, uint64_t len)
{
	if (st->nblk == st->blkcap) {
		size_t nc = st->blkcap ? st->blkcap * 2 : 8;
		void *n = realloc(st->blk, nc * sizeof(*st->blk));

		if (n == NULL)
			return fail(st->sp, -ENOMEM);
		st->blk = n;
		st->blkcap = nc;
	}
	st->blk[st->nblk].off = off;
	st->blk[st->nblk].len = len;
	st->nblk++;
	return 0;
}

/* Write @st's buffer as a block; @release: free the buffer too. */
static int
flush(struct rtprof_spill_stream *st, bool release)
{
	struct rtprof_spill *sp = st->sp;
	uint64_t off;

	if (st->n > 0) {
		if (file_append(sp, st->buf, st->n, &off) != 0 ||
		    add_block(st, off, st->n) != 0)
			return sp->err;
		st->n = 0;
	}
	if (release) {
		free(st->buf);
		set_buffer(st, NULL, 0);
	}
	return 0;
}

/* Over budget: write out the biggest buffers until half of it is left. */
static int
evict(struct rtprof_spill *sp)
{
	unsigned c = NCLASS;

	while (sp->buffered > sp->budget / 2) {
		while (c > 0 && sp->cls[c - 1] == NULL)
			c--;
		if (c == 0)
			break;
		if (flush(sp->cls[c - 1], true) != 0)
			return sp->err;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Appending                                                            */

int
rtprof_spill_append(struct rtprof_spill_stream *st, const void *rec, size_t n)
{
	struct rtprof_spill *sp = st->sp;
	size_t need = st->recsize ? n : n + 2;

	if (sp->err != 0)
		return sp->err;
	if (n > RTPROF_SPILL_MAX_REC || (st->recsize && n != st->recsize))
		return fail(sp, -EINVAL);
	if (st->cap - st->n < need) {
		if (st->cap == BUF_MAX) {
			if (flush(st, false) != 0)
				return sp->err;
		} else {
			size_t nc = st->cap ? st->cap : BUF_MIN;
			unsigned char *b;

			while (nc - st->n < need)
				nc *= 2;
			if (nc > BUF_MAX)
				nc = BUF_MAX;
			if (nc - st->n < need) {        /* full at the maximum */
				if (flush(st, false) != 0)
					return sp->err;
			}
			b = realloc(st->buf, nc);
			if (b == NULL)
				return fail(sp, -ENOMEM);
			set_buffer(st, b, nc);
		}
	}
	if (st->recsize == 0) {
		uint16_t len = (uint16_t)n;

		memcpy(st->buf + st->n, &len, 2);
		st->n += 2;
	} else {
		uint64_t key;

		memcpy(&key, rec, 8);
		if (st->count != 0 && key < st->last_key)
			st->sorted = false;
		st->last_key = key;
	}
	memcpy(st->buf + st->n, rec, n);
	st->n += n;
	st->count++;
	if (sp->buffered > sp->budget)
		return evict(sp);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Reading in append order                                              */

/* Deliver the records of @p[0..@n) (whole records). */
static int
deliver(const struct rtprof_spill_stream *st, const unsigned char *p,
    size_t n, rtprof_spill_cb cb, void *ctx)
{
	size_t i = 0;
	int rc;

	while (i < n) {
		size_t len = st->recsize;

		if (len == 0) {
			uint16_t l;

			memcpy(&l, p + i, 2);
			len = l;
			i += 2;
		}
		if ((rc = cb(ctx, p + i, len)) != 0)
			return rc;
		i += len;
	}
	return 0;
}

static int
read_in_order(struct rtprof_spill_stream *st, rtprof_spill_cb cb, void *ctx)
{
	struct rtprof_spill *sp = st->sp;
	unsigned char *b = NULL;
	int rc = 0;

	if (st->nblk > 0 && (b = malloc(BUF_MAX)) == NULL)
		return fail(sp, -ENOMEM);
	for (size_t i = 0; i < st->nblk && rc == 0; i++) {
		if (file_read(sp, b, (size_t)st->blk[i].len, st->blk[i].off))
			rc = sp->err;
		else
			rc = deliver(st, b, (size_t)st->blk[i].len, cb, ctx);
	}
	free(b);
	if (rc == 0 && st->n > 0)
		rc = deliver(st, st->buf, st->n, cb, ctx);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Reading in key order                                                 */

static uint64_t
key_of(const unsigned char *r)
{
	uint64_t k;

	memcpy(&k, r, 8);
	return k;
}

/* Stable merge sort of @n records of @rs bytes in @a, using @tmp. */
static void
sort_records(unsigned char *a, unsigned char *tmp, size_t n, size_t rs)
{
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n;
			size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, k = lo;

			while (i < mid && j < hi) {
				if (key_of(a + j * rs) < key_of(a + i * rs))
					memcpy(tmp + k++ * rs, a + j++ * rs, rs);
				else
					memcpy(tmp + k++ * rs, a + i++ * rs, rs);
			}
			if (i < mid)
				memcpy(tmp + k * rs, a + i * rs, (mid - i) * rs);
			if (j < hi)
				memcpy(tmp + (k + mid - i) * rs, a + j * rs,
				    (hi - j) * rs);
		}
		memcpy(a, tmp, n * rs);
	}
}

/* Reads the stream's records, in append order, a window at a time. */
struct window {
	struct rtprof_spill_stream *st;
	size_t blk;                     /* next block; nblk: the buffer */
	uint64_t pos;                   /* bytes of that block consumed */
};

/* Copy up to @max bytes (whole records) into @out. Return: bytes. */
static size_t
window_fill(struct window *w, unsigned char *out, size_t max)
{
	struct rtprof_spill_stream *st = w->st;
	size_t got = 0;

	max -= max % st->recsize;
	while (got < max) {
		uint64_t len, off;
		size_t take;

		if (w->blk < st->nblk) {
			len = st->blk[w->blk].len;
			off = st->blk[w->blk].off;
		} else if (w->blk == st->nblk) {
			len = st->n;
			off = 0;
		} else {
			break;
		}
		if (w->pos == len) {
			w->blk++;
			w->pos = 0;
			continue;
		}
		take = (size_t)(len - w->pos < max - got ? len - w->pos :
		    max - got);
		if (w->blk < st->nblk) {
			if (file_read(st->sp, out + got, take, off + w->pos))
				return 0;
		} else {
			memcpy(out + got, st->buf + w->pos, take);
		}
		got += take;
		w->pos += take;
	}
	return got;
}

struct run {
	uint64_t off, len;              /* in the file */
	uint64_t pos;                   /* consumed */
	unsigned char *buf;
	size_t n, i;                    /* bytes in buf, read position */
};

static int
run_next(struct rtprof_spill *sp, struct run *r, size_t rs)
{
	size_t take;

	r->i += rs;
	if (r->i < r->n)
		return 1;
	if (r->pos == r->len)
		return 0;
	take = r->len - r->pos < RUN_READ ? (size_t)(r->len - r->pos) :
	    RUN_READ - RUN_READ % rs;
	if (file_read(sp, r->buf, take, r->off + r->pos) != 0)
		return -1;
	r->pos += take;
	r->n = take;
	r->i = 0;
	return 1;
}

static bool
run_less(const struct run *runs, size_t a, size_t b)
{
	uint64_t ka = key_of(runs[a].buf + runs[a].i);
	uint64_t kb = key_of(runs[b].buf + runs[b].i);

	return ka < kb || (ka == kb && a < b);  /* stable: earlier run first */
}

static void
heap_down(const struct run *runs, size_t *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < n && run_less(runs, h[l], h[m]))
			m = l;
		if (l + 1 < n && run_less(runs, h[l + 1], h[m]))
			m = l + 1;
		if (m == i)
			return;
		size_t t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* All of @st's @n bytes fit in memory: read, sort and deliver them. */
static int
sort_in_memory(struct rtprof_spill_stream *st, struct window *w, size_t n,
    rtprof_spill_cb cb, void *ctx)
{
	struct rtprof_spill *sp = st->sp;
	unsigned char *a = malloc(n ? n : 1), *tmp = malloc(n ? n : 1);
	int rc;

	if (a == NULL || tmp == NULL) {
		rc = fail(sp, -ENOMEM);
	} else if (window_fill(w, a, n) != n) {
		rc = sp->err ? sp->err : fail(sp, -EIO);
	} else {
		sort_records(a, tmp, n / st->recsize, st->recsize);
		rc = deliver(st, a, n, cb, ctx);
	}
	free(a);
	free(tmp);
	return rc;
}

/*
 * Cut @st into sorted runs of @chunk bytes written back to the file;
 * *@runs (*@nruns of them) says where each is. Return: 0 or the error.
 */
static int
write_runs(struct rtprof_spill_stream *st, struct window *w, size_t chunk,
    struct run **runs, size_t *nruns)
{
	struct rtprof_spill *sp = st->sp;
	size_t rs = st->recsize;
	unsigned char *a = malloc(chunk), *tmp = malloc(chunk);
	int rc = 0;

	if (a == NULL || tmp == NULL)
		rc = fail(sp, -ENOMEM);
	while (rc == 0) {
		size_t n = window_fill(w, a, chunk);
		struct run *nr;
		uint64_t off;

		if (sp->err != 0 || n == 0) {
			rc = sp->err;
			break;
		}
		sort_records(a, tmp, n / rs, rs);
		if (file_append(sp, a, n, &off) != 0) {
			rc = sp->err;
			break;
		}
		nr = realloc(*runs, (*nruns + 1) * sizeof(**runs));
		if (nr == NULL) {
			rc = fail(sp, -ENOMEM);
			break;
		}
		*runs = nr;
		memset(&nr[*nruns], 0, sizeof(nr[*nruns]));
		nr[*nruns].off = off;
		nr[*nruns].len = n;
		(*nruns)++;
	}
	free(a);
	free(tmp);
	return rc;
}

/*
 * Give the records of the @nruns sorted @runs to @cb in order: a heap of
 * the runs by their next record, each run read RUN_READ bytes at a time.
 * Return: 0, the callback's non-zero return, or the error.
 */
static int
merge_runs(struct rtprof_spill *sp, struct run *runs, size_t nruns,
    size_t rs, rtprof_spill_cb cb, void *ctx)
{
	size_t nh = 0, *heap = malloc((nruns ? nruns : 1) * sizeof(*heap));
	int rc = 0;

	if (heap == NULL)
		return fail(sp, -ENOMEM);
	for (size_t i = 0; i < nruns && rc == 0; i++) {
		if ((runs[i].buf = malloc(RUN_READ)) == NULL) {
			rc = fail(sp, -ENOMEM);
			break;
		}
		/* Empty buffer: the first run_next() reads. */
		runs[i].i = 0;
		runs[i].n = 0;
		switch (run_next(sp, &runs[i], rs)) {
		case 1:
			heap[nh++] = i;
			break;
		case 0:
			break;
		default:
			rc = sp->err;
			break;
		}
	}
	for (size_t i = nh / 2; rc == 0 && i-- > 0;)
		heap_down(runs, heap, nh, i);
	while (rc == 0 && nh > 0) {
		struct run *r = &runs[heap[0]];
		int more;

		if ((rc = cb(ctx, r->buf + r->i, rs)) != 0)
			break;
		more = run_next(sp, r, rs);
		if (more < 0) {
			rc = sp->err;
			break;
		}
		if (more == 0)
			heap[0] = heap[--nh];
		heap_down(runs, heap, nh, 0);
	}
	free(heap);
	return rc;
}

static int
read_sorted(struct rtprof_spill_stream *st, rtprof_spill_cb cb, void *ctx)
{
	size_t rs = st->recsize, chunk = st->sp->budget / 4, nruns = 0;
	uint64_t total = st->count * rs;
	struct window w = { .st = st };
	struct run *runs = NULL;
	int rc;

	if (chunk < rs)
		chunk = rs;
	if (total <= chunk)             /* fits: sort in memory */
		return sort_in_memory(st, &w, (size_t)total, cb, ctx);
	rc = write_runs(st, &w, chunk, &runs, &nruns);
	if (rc == 0)
		rc = merge_runs(st->sp, runs, nruns, rs, cb, ctx);
	for (size_t i = 0; i < nruns; i++)
		free(runs[i].buf);
	free(runs);
	return rc;
}

int
rtprof_spill_read(struct rtprof_spill_stream *st, rtprof_spill_cb cb,
    void *ctx)
{
	if (st->sp->err != 0)
		return st->sp->err;
	if (st->recsize == 0 || st->sorted)
		return read_in_order(st, cb, ctx);
	return read_sorted(st, cb, ctx);
}
