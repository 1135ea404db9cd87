/*
 * sample_rec.c - the sampler's records, written into its own SPSC chunk
 * buffer with the rt/ fast path (the sampler is a registered thread,
 * RTPROF_THREAD_SAMPLER, whose records name the thread they describe:
 * docs/wire-format.md, "Samples").
 *
 * Context: the sampler thread only.
 */
#include "sampler_int.h"
#include "../codec/wire.h"


/* Context: sampler thread. */
void
rtprof__rec_counter(uint64_t t, uint16_t id, int64_t v)
{
	unsigned char *p = rtprof__open(23);

	if (p == NULL)
		return;
	p[0] = 0x94;
	p[1] = RTPROF__REC_COUNTER;
	p = rtprof__put_u64(p + 2, 0xcf, t);
	p = rtprof__put_u16(p, id);
	p = rtprof__put_u64(p, 0xd3, (uint64_t)v);
	rtprof__close(p);
}

/* Context: sampler thread. */
void
rtprof__rec_same(uint64_t t, pid_t tid, uint64_t cpu, unsigned flags)
{
	unsigned char *p = rtprof__open(30);

	if (p == NULL)
		return;
	p[0] = 0x95;
	p[1] = RTPROF_REC_SAME;
	p = rtprof__put_u64(p + 2, 0xcf, t);
	p = rtprof__put_u64(p, 0xd3, (uint64_t)(int64_t)tid);
	p = rtprof__put_u64(p, 0xcf, cpu);
	p[0] = (unsigned char)flags;
	rtprof__close(p + 1);
}

/* A record's array16 header (0xdc, @arr elements) and its @kind. */
static unsigned char *
arr16(unsigned char *p, unsigned arr, unsigned kind)
{
	p[0] = 0xdc;
	p[1] = (unsigned char)(arr >> 8);
	p[2] = (unsigned char)arr;
	p[3] = (unsigned char)kind;
	return p + 4;
}

/*
 * One SAMPLE: @frames outermost first, @is_label[i] set for labels.
 * Context: sampler thread.
 */
void
rtprof__rec_sample(uint64_t t, pid_t tid, uint64_t cpu, unsigned flags,
    const uint64_t *frames, const unsigned char *is_label, unsigned n)
{
	unsigned char *p = rtprof__open(32 + (size_t)n * 10);
	unsigned arr = 5 + n;

	if (p == NULL)
		return;
	p = rtprof__put_u64(arr16(p, arr, RTPROF_REC_SAMPLE), 0xcf, t);
	p = rtprof__put_u64(p, 0xd3, (uint64_t)(int64_t)tid);
	p = rtprof__put_u64(p, 0xcf, cpu);
	*p++ = (unsigned char)flags;
	for (unsigned i = 0; i < n; i++)
		p = is_label[i] ? rtprof__put_ptr(p,
		    (const void *)(uintptr_t)frames[i]) :
		    rtprof__put_u64(p, 0xcf, frames[i]);
	rtprof__close(p);
}

/*
 * One KSTACK: @n kernel addresses @ips, innermost first, written
 * outermost first. Context: sampler thread.
 */
void
rtprof__rec_kstack(uint64_t t, pid_t tid, const uint64_t *ips, unsigned n)
{
	unsigned char *p = rtprof__open(22 + (size_t)n * 9);
	unsigned arr = 3 + n;

	if (p == NULL)
		return;
	p = rtprof__put_u64(arr16(p, arr, RTPROF_REC_KSTACK), 0xcf, t);
	p = rtprof__put_u64(p, 0xd3, (uint64_t)(int64_t)tid);
	for (unsigned i = n; i-- > 0;)
		p = rtprof__put_u64(p, 0xcf, ips[i]);
	rtprof__close(p);
}

/* Context: sampler thread. */
void
rtprof__rec_overhead(uint64_t t0, uint64_t t1, const uint64_t v[4])
{
	unsigned char *p = rtprof__open(2 + 6 * 9);

	if (p == NULL)
		return;
	p[0] = 0x97;
	p[1] = RTPROF_REC_OVERHEAD;
	p = rtprof__put_u64(p + 2, 0xcf, t0);
	p = rtprof__put_u64(p, 0xcf, t1);
	for (int i = 0; i < 4; i++)
		p = rtprof__put_u64(p, 0xcf, v[i]);
	rtprof__close(p);
}

/*
 * @th's SAMPLE at @t with its labels only, read under its ck_sequence
 * (@flags says why: LABELS or NO_NATIVE), then @leaf (a static string: the
 * wrapped call it waits in) unless NULL. Context: sampler thread, lock.
 */
void
rtprof__sample_labels(const rtprof_lock *lk, struct rtprof__thread *th, uint64_t t,
    uint64_t d, unsigned flags, unsigned bare_flags, const char *leaf)
{
	uint64_t frames[RTPROF_MAX_LABELS + 1];
	unsigned char is_label[RTPROF_MAX_LABELS + 1];
	const char *labels[RTPROF_MAX_LABELS];
	int nl = rtprof__labels_read(lk, th, labels, RTPROF_MAX_LABELS);
	unsigned n = nl > 0 ? (unsigned)nl : 0;

	for (unsigned i = 0; i < n; i++) {
		frames[i] = (uint64_t)(uintptr_t)labels[i];
		is_label[i] = 1;
	}
	if (nl <= 0)
		flags |= bare_flags;
	if (leaf != NULL) {
		frames[n] = (uint64_t)(uintptr_t)leaf;
		is_label[n++] = 1;
	}
	rtprof__rec_sample(t, th->tid, d, flags, frames, is_label, n);
	th->s_has_stack = 1;
}
