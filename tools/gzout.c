/*
 * gzout.c - gzip compression on a second thread (gzout.h).
 *
 * The producer fills a block; a full block goes to the compressing thread
 * through a ring of GZOUT_NBUF blocks (fill index, take index, counts
 * under one mutex); the compressor takes blocks in order, deflates them
 * as one continuing stream and writes what comes out. Each block's state
 * moves FREE -> (producer fills) -> FULL -> (compressor done) -> FREE.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef RTPROF_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#else
#include <zlib.h>
#endif

#include "gzout.h"

#define OUT_BUF (256u << 10)

#ifdef RTPROF_HAVE_ISAL
const char gzout_compressor[] = "isa-l level 1";
#else
const char gzout_compressor[] = "zlib level 6";
#endif

struct gzblock {
	unsigned char *p;
	size_t n;
	bool last;                      /* the end of the stream */
};

struct gzout {
	int fd;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* Under mu: */
	struct gzblock blk[GZOUT_NBUF];
	unsigned nfull;                 /* blocks handed over, not done */
	int err;                        /* first error, latched */
	/* Producer's only: */
	unsigned fill;                  /* the block being filled */
	/* Compressor's only: */
	unsigned take;                  /* the next block to compress */
	unsigned char *out;
#ifdef RTPROF_HAVE_ISAL
	struct isal_zstream s;
	unsigned char *level_buf;
#else
	z_stream s;
#endif
};

/* Context: compressing thread. Write @n bytes of z->out to z->fd. */
static int
out_write(struct gzout *z, size_t n)
{
	const unsigned char *p = z->out;

	while (n != 0) {
		ssize_t w = write(z->fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

#ifdef RTPROF_HAVE_ISAL
/* Context: producer thread, before the compressing thread starts. */
static int
codec_init(struct gzout *z)
{
	isal_deflate_init(&z->s);
	z->level_buf = malloc(ISAL_DEF_LVL1_DEFAULT);
	if (z->level_buf == NULL)
		return -ENOMEM;
	z->s.level = 1;
	z->s.level_buf = z->level_buf;
	z->s.level_buf_size = ISAL_DEF_LVL1_DEFAULT;
	z->s.gzip_flag = IGZIP_GZIP;
	return 0;
}

/* Context: compressing thread. Deflate one block, write the output. */
static int
codec_block(struct gzout *z, const struct gzblock *b)
{
	z->s.next_in = b->p;
	z->s.avail_in = (uint32_t)b->n;
	z->s.end_of_stream = b->last;
	z->s.flush = NO_FLUSH;
	do {
		int rc;

		z->s.next_out = z->out;
		z->s.avail_out = OUT_BUF;
		if (isal_deflate(&z->s) != COMP_OK)
			return -EIO;
		rc = out_write(z, OUT_BUF - z->s.avail_out);
		if (rc != 0)
			return rc;
	} while (z->s.avail_in != 0 ||
	    (b->last && z->s.internal_state.state != ZSTATE_END));
	return 0;
}

static void
codec_end(struct gzout *z)
{
	free(z->level_buf);
}
#else
static int
codec_init(struct gzout *z)
{
	/* 31: a gzip header and trailer. */
	return deflateInit2(&z->s, 6, Z_DEFLATED, 31, 8,
	    Z_DEFAULT_STRATEGY) == Z_OK ? 0 : -ENOMEM;
}

static int
codec_block(struct gzout *z, const struct gzblock *b)
{
	int zr;

	z->s.next_in = b->p;
	z->s.avail_in = (uInt)b->n;
	do {
		int rc;

		z->s.next_out = z->out;
		z->s.avail_out = OUT_BUF;
		zr = deflate(&z->s, b->last ? Z_FINISH : Z_NO_FLUSH);
		if (zr == Z_STREAM_ERROR)
			return -EIO;
		rc = out_write(z, OUT_BUF - z->s.avail_out);
		if (rc != 0)
			return rc;
	} while (z->s.avail_in != 0 || (b->last && zr != Z_STREAM_END));
	return 0;
}

static void
codec_end(struct gzout *z)
{
	deflateEnd(&z->s);
}
#endif

/* Context: compressing thread. Compress blocks until the last one. */
static void *
compress_main(void *arg)
{
	struct gzout *z = arg;
	bool last = false;

	while (!last) {
		struct gzblock *b = &z->blk[z->take];
		int rc = 0;

		pthread_mutex_lock(&z->mu);
		while (z->nfull == 0)
			pthread_cond_wait(&z->cv, &z->mu);
		rc = z->err;
		pthread_mutex_unlock(&z->mu);
		last = b->last;
		/* After an error blocks are only handed back. */
		if (rc == 0)
			rc = codec_block(z, b);
		pthread_mutex_lock(&z->mu);
		if (rc != 0 && z->err == 0)
			z->err = rc;
		b->n = 0;
		z->nfull--;
		pthread_cond_broadcast(&z->cv);
		pthread_mutex_unlock(&z->mu);
		z->take = (z->take + 1) % GZOUT_NBUF;
	}
	return NULL;
}

static void
free_all(struct gzout *z)
{
	for (unsigned i = 0; i < GZOUT_NBUF; i++)
		free(z->blk[i].p);
	free(z->out);
	codec_end(z);
	free(z);
}

int
gzout_open(struct gzout **out, int fd)
{
	struct gzout *z = calloc(1, sizeof(*z));
	int rc;

	if (z == NULL)
		return -ENOMEM;
	z->fd = fd;
	z->out = malloc(OUT_BUF);
	rc = z->out != NULL ? codec_init(z) : -ENOMEM;
	for (unsigned i = 0; rc == 0 && i < GZOUT_NBUF; i++)
		if ((z->blk[i].p = malloc(GZOUT_BLOCK)) == NULL)
			rc = -ENOMEM;
	if (rc != 0) {
		free_all(z);
		return rc;
	}
	pthread_mutex_init(&z->mu, NULL);
	pthread_cond_init(&z->cv, NULL);
	rc = pthread_create(&z->thread, NULL, compress_main, z);
	if (rc != 0) {
		pthread_cond_destroy(&z->cv);
		pthread_mutex_destroy(&z->mu);
		free_all(z);
		return -rc;
	}
	*out = z;
	return 0;
}

/*
 * Context: producer thread. Hand the block being filled over (@last: as
 * the end of the stream) and wait for a free one.
 * Return: 0 or the latched error.
 */
static int
hand_over(struct gzout *z, bool last)
{
	int rc;

	pthread_mutex_lock(&z->mu);
	z->blk[z->fill].last = last;
	z->nfull++;
	pthread_cond_broadcast(&z->cv);
	z->fill = (z->fill + 1) % GZOUT_NBUF;
	while (!last && z->nfull == GZOUT_NBUF)
		pthread_cond_wait(&z->cv, &z->mu);
	rc = z->err;
	pthread_mutex_unlock(&z->mu);
	return rc;
}

/* Context: producer thread. The compressor's first error, or 0. */
static int
gzout_error(struct gzout *z)
{
	int rc;

	pthread_mutex_lock(&z->mu);
	rc = z->err;
	pthread_mutex_unlock(&z->mu);
	return rc;
}

int
gzout_write(struct gzout *z, const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n != 0) {
		struct gzblock *b = &z->blk[z->fill];
		size_t room = GZOUT_BLOCK - b->n;
		int rc;

		if (room > n)
			room = n;
		memcpy(b->p + b->n, c, room);
		b->n += room;
		c += room;
		n -= room;
		if (b->n == GZOUT_BLOCK && (rc = hand_over(z, false)) != 0)
			return rc;
	}
	return gzout_error(z);
}

int
gzout_close(struct gzout *z)
{
	int rc;

	if (z == NULL)
		return 0;
	hand_over(z, true);
	pthread_join(z->thread, NULL);
	rc = z->err;
	pthread_cond_destroy(&z->cv);
	pthread_mutex_destroy(&z->mu);
	free_all(z);
	return rc;
}
