/*
 * frame.c - frame encoding, CRC-32C and the resynchronising scanner.
 *
 * Context: any thread; no shared state (each scanner belongs to its caller).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

/* Slicing-by-8 CRC-32C tables, built once (idempotent, race-benign: every
 * thread would write the same values; guarded by a once flag anyway). */
static uint32_t crc_table[8][256];
static int crc_ready;

static void
crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
			    crc_table[0][crc_table[t - 1][i] & 0xff];
}

#if defined(__x86_64__) && !defined(RTPROF_HAVE_ISAL)
#include <cpuid.h>

/*
 * The SSE4.2 crc32 instruction computes CRC-32C, 8 bytes per instruction;
 * each depends on the previous one (3 cycles), so a long buffer goes as
 * three streams of CRC3_BLOCK bytes at once (one instruction a cycle), and
 * the three CRCs are joined by shifting: for raw CRC registers (no
 * inversions) crc(c, A B) = shift_|B|(crc(c, A)) ^ crc(0, B), and
 * shift_n is linear, so one table per byte of the register does it.
 * Chosen at run time.
 */
#define CRC3_BLOCK 2048

/* shift over CRC3_BLOCK zero bytes, by register byte; built once. */
static uint32_t crc3_shift[4][256];
static int crc3_ready;

__attribute__((target("sse4.2"))) static uint32_t
crc3_zeros(uint32_t c)
{
	uint64_t r = c;

	for (int i = 0; i < CRC3_BLOCK / 8; i++)
		r = __builtin_ia32_crc32di(r, 0);
	return (uint32_t)r;
}

__attribute__((target("sse4.2"))) static void
crc3_init(void)
{
	uint32_t bit[32];

	for (int b = 0; b < 32; b++)
		bit[b] = crc3_zeros(1u << b);
	for (int k = 0; k < 4; k++)
		for (uint32_t v = 0; v < 256; v++) {
			uint32_t x = 0;

			for (int b = 0; b < 8; b++)
				if (v & (1u << b))
					x ^= bit[8 * k + b];
			crc3_shift[k][v] = x;
		}
}

static uint32_t
crc3_shift_block(uint32_t c)
{
	return crc3_shift[0][c & 0xff] ^ crc3_shift[1][(c >> 8) & 0xff] ^
	    crc3_shift[2][(c >> 16) & 0xff] ^ crc3_shift[3][c >> 24];
}

/* Three blocks of CRC3_BLOCK bytes at @p, from raw register @c. */
__attribute__((target("sse4.2"))) static uint64_t
crc3_blocks(uint64_t c, const unsigned char *p)
{
	uint64_t c1 = 0, c2 = 0;

	for (int i = 0; i < CRC3_BLOCK; i += 8) {
		uint64_t a, b, d;

		/* Each stream's line 512 bytes ahead: on data another CPU
		 * wrote (the writer's chunks) the three streams otherwise
		 * wait for their lines in turn (0.079 -> 0.065 ms/MB on a
		 * 512 MiB ring: bench/bench_crc, BENCHMARKS.md). */
		if ((i & 63) == 0) {
			__builtin_prefetch(p + i + 512, 0, 0);
			__builtin_prefetch(p + CRC3_BLOCK + i + 512, 0, 0);
			__builtin_prefetch(p + 2 * CRC3_BLOCK + i + 512, 0, 0);
		}

		memcpy(&a, p + i, 8);
		memcpy(&b, p + CRC3_BLOCK + i, 8);
		memcpy(&d, p + 2 * CRC3_BLOCK + i, 8);
		c = __builtin_ia32_crc32di(c, a);
		c1 = __builtin_ia32_crc32di(c1, b);
		c2 = __builtin_ia32_crc32di(c2, d);
	}
	return crc3_shift_block(crc3_shift_block((uint32_t)c) ^ (uint32_t)c1) ^
	    (uint32_t)c2;
}

__attribute__((target("sse4.2"))) static uint32_t
crc32c_sse42(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c = ~crc;

	if (len >= 3 * CRC3_BLOCK) {
		/* acquire/release: the table is complete before the flag. */
		if (!__atomic_load_n(&crc3_ready, __ATOMIC_ACQUIRE)) {
			crc3_init();
			__atomic_store_n(&crc3_ready, 1, __ATOMIC_RELEASE);
		}
		for (; len >= 3 * CRC3_BLOCK; p += 3 * CRC3_BLOCK,
		    len -= 3 * CRC3_BLOCK)
			c = crc3_blocks(c, p);
	}
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}
#endif


#if defined(RTPROF_HAVE_ISAL)
#include <isa-l/crc.h>

/*
 * ISA-L's CRC-32C (iSCSI polynomial): folding with carry-less multiplies
 * where the CPU has them, its own crc32 instruction streams or tables
 * otherwise, chosen by ISA-L at its first call. On data another CPU wrote
 * (the writer's chunks) it runs at the speed of reading the lines (2x the
 * three crc32 streams below: bench/bench_crc, BENCHMARKS.md). It takes an int
 * length, so a longer buffer goes in pieces.
 */
uint32_t
rtprof_crc32c(uint32_t crc, const void *buf, size_t len)
{
	unsigned char *p = (unsigned char *)buf;

	crc = ~crc;
	while (len > 0) {
		int n = len > (1u << 30) ? 1 << 30 : (int)len;

		crc = crc32_iscsi(p, n, crc);
		p += n;
		len -= (size_t)n;
	}
	return ~crc;
}
#else
uint32_t
rtprof_crc32c(uint32_t crc, const void *buf, size_t len)
{
	/* 0 unknown, 1 tables, 2 sse4.2; set once (race-benign: every thread
	 * computes the same value). */
	static int impl;
	int i = __atomic_load_n(&impl, __ATOMIC_RELAXED);

	if (i == 0) {
		i = 1;
#if defined(__x86_64__)
		/* One cpuid, here: __builtin_cpu_supports would link libgcc's
		 * CPU model with its load-time constructor (a dozen cpuid, each
		 * a trap to the hypervisor in a VM) into every process that
		 * loads librtprof. */
		unsigned a, b, c, d;

		if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2))
			i = 2;
#endif
		__atomic_store_n(&impl, i, __ATOMIC_RELAXED);
	}
#if defined(__x86_64__)
	if (i == 2)
		return crc32c_sse42(crc, buf, len);
#endif
	return rtprof_crc32c_portable(crc, buf, len);
}
#endif

uint32_t
rtprof_crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	/* acquire/release: the tables are complete before the flag reads 1. */
	if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE)) {
		crc_init();
		__atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
	}
	crc = ~crc;
	while (len >= 8) {
		uint32_t lo = crc ^ rtprof_le32(p);
		uint32_t hi = rtprof_le32(p + 4);
		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		    crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		    crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		    crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

/* a * b modulo the CRC-32C polynomial, bit-reflected (bit 31 is x^0). */
static uint32_t
gf2_mul(uint32_t a, uint32_t b)
{
	uint32_t p = 0;

	for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
		if (a & m)
			p ^= b;
		b = b & 1 ? (b >> 1) ^ 0x82F63B78u : b >> 1;
	}
	return p;
}

/* @crc carried over @n more bytes of zeros, without the bytes: times
 * x^(8n), by squaring. */
static uint32_t
crc_shift(uint32_t crc, uint64_t n)
{
	uint32_t sq = 1u << 23; /* x^8 */

	for (; n != 0; n >>= 1) {
		if (n & 1)
			crc = gf2_mul(sq, crc);
		sq = gf2_mul(sq, sq);
	}
	return crc;
}

uint32_t
rtprof_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
	return crc_shift(crc_a, len_b) ^ crc_b;
}

void
rtprof_frame_hdr_encode(unsigned char out[RTPROF_FRAME_HEADER_SIZE],
    const struct rtprof_frame_hdr *h)
{
	out[0] = RTPROF_FRAME_SYNC0;
	out[1] = RTPROF_FRAME_SYNC1;
	out[2] = RTPROF_FRAME_SYNC2;
	out[3] = RTPROF_FRAME_SYNC3;
	out[4] = h->kind;
	out[5] = h->version;
	out[6] = 0;
	out[7] = 0;
	rtprof_put_le32(out + 8, h->session);
	rtprof_put_le32(out + 12, h->seq);
	rtprof_put_le32(out + 16, h->len);
	rtprof_put_le32(out + 20, rtprof_crc32c(0, out, 20));
}

int
rtprof_frame_hdr_decode(const unsigned char in[RTPROF_FRAME_HEADER_SIZE],
    struct rtprof_frame_hdr *h)
{
	if (in[0] != RTPROF_FRAME_SYNC0 || in[1] != RTPROF_FRAME_SYNC1 ||
	    in[2] != RTPROF_FRAME_SYNC2 || in[3] != RTPROF_FRAME_SYNC3)
		return -EBADMSG;
	if (rtprof_crc32c(0, in, 20) != rtprof_le32(in + 20))
		return -EBADMSG;
	h->kind = in[4];
	h->version = in[5];
	h->session = rtprof_le32(in + 8);
	h->seq = rtprof_le32(in + 12);
	h->len = rtprof_le32(in + 16);
	if (h->len > RTPROF_FRAME_MAX_PAYLOAD)
		return -EBADMSG;
	return 0;
}

#define SCAN_MIN_SPACE (64u << 10)
#define SCAN_READS_KEPT 8u /* the buffer holds this many reads */
#define CK_STEP 256u /* bytes between two prefix CRCs of a hunt */

/*
 * A hunt's prefix CRCs: crc(x) is the CRC-32C of the stream from @base to
 * offset x. ck[i] = crc(base + (first + i) * CK_STEP), for the checkpoints
 * from the scanner's position on; @front is how far they reach. The CRC of
 * any payload [a, b) in the buffer is then crc(b) ^ shift(crc(a), b - a),
 * each crc(x) from the checkpoint below x (or the scanner's position) plus
 * fewer than CK_STEP bytes. Every byte is fed to the CRC once per hunt.
 */
struct rtprof_crcidx {
	uint64_t base;
	uint64_t front;         /* crc() known up to here: front_crc */
	uint32_t front_crc;
	uint32_t start_crc;     /* crc(s->offset) */
	uint64_t first;         /* checkpoint number of ck[0] */
	size_t n, cap;
	uint32_t *ck;
	int broken;             /* out of memory: CRCs computed directly */
};

int
rtprof_scanner_init(struct rtprof_scanner *s)
{
	memset(s, 0, sizeof(*s));
	s->cap = 256u << 10;
	s->buf = malloc(s->cap);
	return s->buf ? 0 : -ENOMEM;
}

void
rtprof_scanner_free(struct rtprof_scanner *s)
{
	if (s->idx != NULL)
		free(s->idx->ck);
	free(s->idx);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

unsigned char *
rtprof_scanner_space(struct rtprof_scanner *s, size_t *n)
{
	size_t want = *n ? *n : SCAN_MIN_SPACE;

	/* What is left of a frame moves to the front only when the room
	 * behind it is short: with reads of a frame's size, moving at every
	 * read copied half the input again (a 1 MiB read ends in the middle
	 * of a 1 MiB frame); with room for SCAN_READS_KEPT reads, what moves
	 * is at most one frame every few reads. */
	if (s->start > 0 && s->cap - s->fill < want) {
		memmove(s->buf, s->buf + s->start, s->fill - s->start);
		s->fill -= s->start;
		s->start = 0;
	}
	if (s->cap - s->fill < want) {
		/* Bounded: the scanner never keeps more than one maximal
		 * frame plus the requested read, see rtprof_scanner_next(),
		 * in a buffer of at most twice that or SCAN_READS_KEPT
		 * reads. */
		size_t ncap = s->fill + want;
		unsigned char *nb;

		if (ncap < s->cap * 2)
			ncap = s->cap * 2;
		if (ncap < SCAN_READS_KEPT * want)
			ncap = SCAN_READS_KEPT * want;
		nb = realloc(s->buf, ncap);
		if (nb == NULL) {
			errno = ENOMEM;
			return NULL;
		}
		s->buf = nb;
		s->cap = ncap;
	}
	*n = s->cap - s->fill;
	return s->buf + s->fill;
}

void
rtprof_scanner_commit(struct rtprof_scanner *s, size_t n)
{
	s->fill += n;
}

size_t
rtprof_scanner_pending(const struct rtprof_scanner *s)
{
	return s->fill - s->start;
}

static void idx_start(struct rtprof_scanner *s);

void
rtprof_scanner_drop(struct rtprof_scanner *s)
{
	if (s->start == s->fill)
		return;
	s->start++;
	s->offset++;
	/* The prefix CRCs start again here (they begin at the position). */
	if (s->hunting)
		idx_start(s);
}

/* The buffered byte at stream offset @off (>= s->offset). */
static const unsigned char *
at(const struct rtprof_scanner *s, uint64_t off)
{
	return s->buf + s->start + (size_t)(off - s->offset);
}

/* Start the prefix CRCs of a hunt at the scanner's position. */
static void
idx_start(struct rtprof_scanner *s)
{
	struct rtprof_crcidx *x = s->idx;

	if (x == NULL && (x = s->idx = calloc(1, sizeof(*x))) == NULL)
		return;
	x->base = x->front = s->offset;
	x->front_crc = x->start_crc = 0;
	x->first = 1; /* checkpoint 0 is crc(base) = 0, not stored */
	x->n = 0;
	x->broken = 0;
}

/* Append the checkpoint @crc, first dropping those behind the scanner. */
static void
idx_push(struct rtprof_scanner *s, struct rtprof_crcidx *x, uint32_t crc)
{
	uint64_t keep = (s->offset - x->base) / CK_STEP;

	if (x->n == x->cap && keep > x->first) {
		size_t drop = (size_t)(keep - x->first);

		if (drop > x->n)
			drop = x->n;
		memmove(x->ck, x->ck + drop, (x->n - drop) * sizeof(*x->ck));
		x->n -= drop;
		x->first += drop;
	}
	if (x->n == x->cap) {
		size_t ncap = x->cap ? 2 * x->cap : 1024;
		uint32_t *nck = realloc(x->ck, ncap * sizeof(*nck));

		if (nck == NULL) {
			x->broken = 1;
			return;
		}
		x->ck = nck;
		x->cap = ncap;
	}
	x->ck[x->n++] = crc;
}

/* Feed the bytes up to offset @to (buffered) to the prefix CRC. */
static void
idx_extend(struct rtprof_scanner *s, struct rtprof_crcidx *x, uint64_t to)
{
	while (x->front < to && !x->broken) {
		uint64_t next = x->base + ((x->front - x->base) / CK_STEP + 1) *
		    CK_STEP;
		uint64_t end = next < to ? next : to;

		x->front_crc = rtprof_crc32c(x->front_crc, at(s, x->front),
		    (size_t)(end - x->front));
		x->front = end;
		if (end == next)
			idx_push(s, x, x->front_crc);
	}
}

/* crc(@off), for s->offset <= @off <= x->front. */
static uint32_t
idx_crc(const struct rtprof_scanner *s, const struct rtprof_crcidx *x,
    uint64_t off)
{
	uint64_t k = (off - x->base) / CK_STEP, from = x->base + k * CK_STEP;
	uint32_t crc;

	if (from >= s->offset && k == 0) {
		crc = 0;
	} else if (from >= s->offset && k >= x->first) {
		crc = x->ck[k - x->first];
	} else {
		from = s->offset;
		crc = x->start_crc;
	}
	return rtprof_crc32c(crc, at(s, from), (size_t)(off - from));
}

/* The payload CRC of the frame at the scanner's position is right. */
static int
payload_ok(struct rtprof_scanner *s, const struct rtprof_frame_hdr *h)
{
	const unsigned char *p = s->buf + s->start;
	uint32_t want = rtprof_le32(p + RTPROF_FRAME_HEADER_SIZE + h->len);
	struct rtprof_crcidx *x = s->idx;
	uint64_t a = s->offset + RTPROF_FRAME_HEADER_SIZE, b = a + h->len;

	if (s->hunting && x != NULL)
		idx_extend(s, x, b);
	if (!s->hunting || x == NULL || x->broken)
		return rtprof_crc32c(0, p + RTPROF_FRAME_HEADER_SIZE, h->len) ==
		    want;
	return (idx_crc(s, x, b) ^ crc_shift(idx_crc(s, x, a), h->len)) ==
	    want;
}

/* Skip one byte of garbage and look for the next sync. */
static void
scan_skip(struct rtprof_scanner *s)
{
	const unsigned char *p, *e = s->buf + s->fill;
	size_t skip;

	if (!s->hunting) {
		s->hunting = 1;
		s->resyncs++;
		idx_start(s);
	}
	p = memchr(s->buf + s->start + 1, RTPROF_FRAME_SYNC0,
	    (size_t)(e - (s->buf + s->start + 1)));
	if (p == NULL)
		p = e;
	skip = (size_t)(p - (s->buf + s->start));
	if (s->idx != NULL && !s->idx->broken) {
		/* Keep crc() at the new position while its bytes are here. */
		idx_extend(s, s->idx, s->offset + skip);
		if (!s->idx->broken)
			s->idx->start_crc = idx_crc(s, s->idx, s->offset + skip);
	}
	s->skipped_bytes += skip;
	s->start += skip;
	s->offset += skip;
}

int
rtprof_scanner_next(struct rtprof_scanner *s, struct rtprof_frame *f)
{
	for (;;) {
		size_t avail = s->fill - s->start;
		const unsigned char *p = s->buf + s->start;
		struct rtprof_frame_hdr h;
		size_t total;

		if (avail < RTPROF_FRAME_HEADER_SIZE)
			return 0;
		if (rtprof_frame_hdr_decode(p, &h) != 0) {
			scan_skip(s);
			continue;
		}
		total = RTPROF_FRAME_OVERHEAD + (size_t)h.len;
		if (avail < total)
			return 0;
		if (!payload_ok(s, &h)) {
			/* The header was intact, the payload was not. Do not
			 * trust the length (bytes may have been lost inside):
			 * hunt from the next byte, which finds any intact frame
			 * that starts within this one's claimed extent. */
			s->bad_frames++;
			scan_skip(s);
			continue;
		}
		s->hunting = 0;
		f->hdr = h;
		f->payload = p + RTPROF_FRAME_HEADER_SIZE;
		f->offset = s->offset;
		f->raw = p;
		s->start += total;
		s->offset += total;
		s->frames++;
		return 1;
	}
}

int
rtprof_scanner_next_eof(struct rtprof_scanner *s, struct rtprof_frame *f)
{
	for (;;) {
		if (rtprof_scanner_next(s, f) == 1)
			return 1;
		if (s->fill == s->start)
			return 0;
		/* Fewer bytes than a header, or a frame that cannot complete:
		 * give up on the byte at the front and hunt on. */
		scan_skip(s);
	}
}
