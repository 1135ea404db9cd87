/*
 * unwind.c - native stacks from a copy, on the sampler thread.
 *
 * The sampled thread's signal handler copied its registers and the used
 * part of its stack (rt/rt_signal.c). Here libunwind unwinds that copy
 * through its remote interface, like perf and samply unwind the stacks the
 * kernel copied for them: reads inside the copied range come from the copy,
 * reads of code and unwind tables come from this process's memory (only
 * inside loaded modules), reads elsewhere in the thread's stack fail. The
 * unwind tables are each module's .eh_frame_hdr binary-search table, found
 * with dl_iterate_phdr and handed to libunwind's own table search. On
 * 32-bit ARM, where GCC writes no .eh_frame, it is the ARM exception index
 * (.ARM.exidx, PT_ARM_EXIDX: C code needs -funwind-tables for one, which
 * CMakeLists.txt adds there) and libunwind's EHABI search instead.
 *
 * Why not unwind in the handler: unw_backtrace takes the dynamic loader's
 * lock on a cache miss (dl_iterate_phdr) and libunwind's own locks, so a
 * thread interrupted inside dlopen or C++ exception unwinding would
 * deadlock in its own handler; unw_step in the handler also made two
 * rt_sigprocmask calls per frame (libunwind 1.6). The copy costs the
 * thread a bounded memcpy; everything that may lock runs here.
 *
 * Limits: a module unloaded (dlclose) between the module scan and an
 * unwind could be read after unmapping; the scan is redone when glibc's
 * load/unload counters change, at most once per tick, so the window is
 * one tick and needs a dlclose during it.
 *
 * Context: the sampler thread only (one struct rtprof__unwinder, no shared
 * state besides the process's memory).
 */
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include <libunwind.h>

#include "calls.h"
#include "unwind.h"

/* libunwind's table search, declared in no public header (perf does the
 * same): looks @ip up in a REMOTE_TABLE di. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as,
    unw_word_t ip, unw_dyn_info_t *di, unw_proc_info_t *pi,
    int need_unwind_info, void *arg);
#if defined(__arm__)
/* The same for an ARM_EXIDX di (libunwind's tdep_search_unwind_table,
 * exported as _Uarm_search_unwind_table). */
extern int UNW_OBJ(search_unwind_table)(unw_addr_space_t as, unw_word_t ip,
    unw_dyn_info_t *di, unw_proc_info_t *pi, int need_unwind_info,
    void *arg);
#endif

#define UMOD_SEGS 8

struct umod {
	uintptr_t lo, hi;        /* executable PT_LOAD range */
	int own;                 /* librtprof or librtprof-preload */
	/* Each read-only PT_LOAD segment. Not the span from the first to
	 * the last: the gaps between segments may be mapped PROT_NONE. */
	uintptr_t seg_lo[UMOD_SEGS], seg_hi[UMOD_SEGS];
	unsigned nseg;
	uintptr_t hdr;           /* .eh_frame_hdr address, 0: none */
	uintptr_t table;         /* its search table */
	uint64_t nfde;
#if defined(__arm__)
	uintptr_t exidx;         /* .ARM.exidx address, 0: none */
	size_t exidx_len;        /* its bytes (8 per entry) */
#endif
};

struct rtprof__unwinder {
	unw_addr_space_t as;
	struct umod *mod;
	size_t nmod, cap;
	unsigned long long adds, subs; /* glibc's counters at the last scan */
	int scanned_this_tick;
	/* The current sample. */
	const struct rtprof__ucopy *rq;
	int ran_out;             /* a read above the copy, in the stack */
	uintptr_t stack_lo, stack_hi;
};

/* DW_EH_PE encodings the search table may use. */
#define PE_OMIT 0xff
#define PE_UDATA4 0x03
#define PE_SDATA4 0x0b
#define PE_PCREL 0x10
#define PE_DATAREL 0x30

/* Read an encoded value at *@p (only the 4-byte forms GNU ld writes). */
static int
read_enc(const unsigned char **p, unsigned char enc, uintptr_t hdr,
    uintptr_t *out)
{
	int32_t v;

	if ((enc & 0x0f) != PE_UDATA4 && (enc & 0x0f) != PE_SDATA4)
		return -1;
	memcpy(&v, *p, 4);
	*out = (enc & 0x0f) == PE_UDATA4 ? (uintptr_t)(uint32_t)v :
	    (uintptr_t)(intptr_t)v;
	if ((enc & 0x70) == PE_PCREL)
		*out += (uintptr_t)*p;
	else if ((enc & 0x70) == PE_DATAREL)
		*out += hdr;
	else if ((enc & 0x70) != 0)
		return -1;
	*p += 4;
	return 0;
}

/* The binary-search table of @m's .eh_frame_hdr. Return: 0, or -1 when
 * it has none in the form GNU ld writes. */
static int
eh_hdr_table(struct umod *m)
{
	const unsigned char *p = (const unsigned char *)m->hdr;
	uintptr_t ehf, n;
	unsigned char e1, e2;

	/* version 1, eh_frame_ptr_enc, fde_count_enc, table_enc */
	if (p[0] != 1 || p[3] != (PE_DATAREL | PE_SDATA4))
		return -1;
	e1 = p[1];
	e2 = p[2];
	p += 4;
	if (read_enc(&p, e1, m->hdr, &ehf) != 0 || e2 == PE_OMIT ||
	    read_enc(&p, e2, m->hdr, &n) != 0)
		return -1;
	m->table = (uintptr_t)p;
	m->nfde = n;
	return 0;
}

/* Is @path one of rtprof's own libraries? Their frames are left out of
 * the stacks: the program did not call them (a wrapper of
 * librtprof-preload, the recorder's own code), its caller did. */
static int
own_module(const char *path)
{
	const char *b = path != NULL ? strrchr(path, '/') : NULL;

	b = b != NULL ? b + 1 : path;
	return b != NULL && strncmp(b, "librtprof", 9) == 0 &&
	    (b[9] == '.' || strncmp(b + 9, "-preload.", 9) == 0);
}

static int
scan_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct rtprof__unwinder *u = ctx;
	struct umod m = { .lo = UINTPTR_MAX };

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD) {
			/* Read-only segments only: the unwind tables and
			 * the code live there. A writable one holds the
			 * program's data, which its threads change while
			 * the sampler reads (a bogus frame address can
			 * point at a global: TSan saw the race). */
			if (m.nseg < UMOD_SEGS && (ph->p_flags & PF_R) &&
			    !(ph->p_flags & PF_W)) {
				m.seg_lo[m.nseg] = a;
				m.seg_hi[m.nseg] = a + ph->p_memsz;
				m.nseg++;
			}
			if (ph->p_flags & PF_X) {
				if (a < m.lo)
					m.lo = a;
				if (a + ph->p_memsz > m.hi)
					m.hi = a + ph->p_memsz;
			}
		} else if (ph->p_type == PT_GNU_EH_FRAME) {
			m.hdr = a;
#if defined(__arm__)
		} else if (ph->p_type == PT_ARM_EXIDX && ph->p_memsz >= 8) {
			m.exidx = a;
			m.exidx_len = ph->p_memsz;
#endif
		}
	}
	if (m.lo >= m.hi)
		return 0;       /* no code */
	m.own = own_module(info->dlpi_name);
	if (m.hdr != 0 && eh_hdr_table(&m) != 0)
		m.hdr = 0;      /* a search table in a form not read here */
#if defined(__arm__)
	if (m.hdr == 0 && m.exidx == 0)
		return 0;
#else
	if (m.hdr == 0)
		return 0;       /* no unwind table (the vDSO has one) */
#endif
	if (u->nmod == u->cap) {
		size_t nc = u->cap ? u->cap * 2 : 32;
		struct umod *nm = realloc(u->mod, nc * sizeof(*nm));

		if (nm == NULL)
			return 1;
		u->mod = nm;
		u->cap = nc;
	}
	u->mod[u->nmod++] = m;
	return 0;
}

static int
mod_cmp(const void *a, const void *b)
{
	const struct umod *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int
count_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	unsigned long long *c = ctx;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		c[0] = info->dlpi_adds;
		c[1] = info->dlpi_subs;
	}
	return 1;       /* the first object is enough: the counters are global */
}

/* Rescan the loaded modules if something was loaded or unloaded. */
static void
scan(struct rtprof__unwinder *u, int force)
{
	unsigned long long c[2] = { 0, 0 };

	dl_iterate_phdr(count_cb, c);
	if (!force && c[0] == u->adds && c[1] == u->subs && u->nmod != 0)
		return;
	u->adds = c[0];
	u->subs = c[1];
	u->nmod = 0;
	dl_iterate_phdr(scan_cb, u);
	qsort(u->mod, u->nmod, sizeof(*u->mod), mod_cmp);
	unw_flush_cache(u->as, 0, 0);
}

static const struct umod *
mod_find(const struct rtprof__unwinder *u, uintptr_t ip)
{
	size_t lo = 0, hi = u->nmod;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ip < u->mod[mid].lo)
			hi = mid;
		else if (ip >= u->mod[mid].hi)
			lo = mid + 1;
		else
			return &u->mod[mid];
	}
	return NULL;
}

static int
readable(const struct rtprof__unwinder *u, uintptr_t a)
{
	for (size_t i = 0; i < u->nmod; i++)
		for (unsigned k = 0; k < u->mod[i].nseg; k++)
			if (a >= u->mod[i].seg_lo[k] &&
			    a < u->mod[i].seg_hi[k] &&
			    u->mod[i].seg_hi[k] - a >= 8)
				return 1;
	return 0;
}

#if defined(__arm__)
/* The address a prel31 word (.ARM.exidx) at @at points to: a 31-bit signed
 * offset from @at. */
static uintptr_t
prel31(uintptr_t at)
{
	uint32_t v;

	memcpy(&v, (const void *)at, 4);
	v = (v & 0x7fffffffu) | ((v & 0x40000000u) << 1);
	return at + (uintptr_t)v;
}
#endif

/* libunwind accessors. Context: sampler thread. */

static int
find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
    int need, void *arg)
{
	struct rtprof__unwinder *u = arg;
	const struct umod *m = mod_find(u, ip);
	unw_dyn_info_t di;

	if (m == NULL && !u->scanned_this_tick) {
		u->scanned_this_tick = 1;
		scan(u, 0);
		m = mod_find(u, ip);
	}
	if (m == NULL)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
#if defined(__arm__)
	if (m->hdr == 0) {
		/* .ARM.exidx: (function start, unwind data) pairs sorted by
		 * start. An ip before the first function has no entry. */
		if (ip < prel31(m->exidx))
			return -UNW_ENOINFO;
		di.format = UNW_INFO_FORMAT_ARM_EXIDX;
		di.start_ip = m->lo;
		di.end_ip = m->hi;
		di.u.rti.table_data = m->exidx;
		di.u.rti.table_len = m->exidx_len;
		return UNW_OBJ(search_unwind_table)(as, ip, &di, pi, need, arg);
	}
#endif
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = m->lo;
	di.end_ip = m->hi;
	di.u.rti.segbase = m->hdr;
	di.u.rti.table_data = m->table;
	di.u.rti.table_len = m->nfde * 8 / sizeof(unw_word_t);
	return UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi, need, arg);
}

static void
put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as;
	(void)pi;
	(void)arg;      /* libunwind frees table-format info itself */
}

static int
get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg)
{
	(void)as;
	(void)dilap;
	(void)arg;
	return -UNW_ENOINFO;
}

static int
access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write,
    void *arg)
{
	struct rtprof__unwinder *u = arg;
	const struct rtprof__ucopy *rq = u->rq;

	(void)as;
	if (write)
		return -UNW_EINVAL;
	if (addr >= rq->sp && rq->stack_len >= sizeof(*valp) &&
	    addr - rq->sp <= rq->stack_len - sizeof(*valp)) {
		memcpy(valp, rq->stack + (addr - rq->sp), sizeof(*valp));
		return 0;
	}
	if (addr >= u->stack_lo && addr < u->stack_hi) {
		/* Live stack outside the copy; above it: the copy ended
		 * before the root (the stack is deeper than it). */
		if (addr >= rq->sp + rq->stack_len)
			u->ran_out = 1;
		return -UNW_EINVAL;
	}
	if (!readable(u, addr))
		return -UNW_EINVAL;
	memcpy(valp, (const void *)(uintptr_t)addr, sizeof(*valp));
	return 0;
}

static int
access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *valp, int write,
    void *arg)
{
	struct rtprof__unwinder *u = arg;

	(void)as;
	if (write || reg < 0 || reg >= RTPROF__NREGS)
		return -UNW_EBADREG;
	*valp = u->rq->regs[reg];
	return 0;
}

static int
access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val,
    int write, void *arg)
{
	(void)as;
	(void)reg;
	(void)val;
	(void)write;
	(void)arg;
	return -UNW_EBADREG;
}

static int
resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void)as;
	(void)c;
	(void)arg;
	return -UNW_EINVAL;
}

static int
get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
    unw_word_t *off, void *arg)
{
	(void)as;
	(void)addr;
	(void)buf;
	(void)len;
	(void)off;
	(void)arg;
	return -UNW_ENOINFO;    /* symbols are resolved offline */
}

static unw_accessors_t accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};

/*
 * libunwind's cache of register states per address, without its lock.
 * UNW_CACHE_GLOBAL guards it with a mutex and blocks every signal around
 * it: two rt_sigprocmask system calls per unwind step (about 30 per
 * sample at depth 10). UNW_CACHE_PER_THREAD skips both, but Debian's
 * libunwind (1.6, built without per-thread caches) turns it into
 * UNW_CACHE_GLOBAL in unw_set_caching_policy(), while its step still
 * honours it (the address space's own cache, unlocked). This address space
 * is the sampler thread's alone, so the lock guards nothing: the policy
 * field is found by toggling the policy (the one int that reads 0, 1, 0, 1
 * with it) and set to UNW_CACHE_PER_THREAD. Nothing found for sure: the
 * locked global cache stays. Return: 1 when the lock is off.
 */
static int
cache_unlocked(unw_addr_space_t as)
{
	enum { SCAN = 64 };     /* ints: the policy is near the start */
	int seen[4][SCAN], at = -1;

	for (int k = 0; k < 4; k++) {
		unw_set_caching_policy(as, k % 2 ? UNW_CACHE_GLOBAL :
		    UNW_CACHE_NONE);
		memcpy(seen[k], (const void *)as, sizeof(seen[k]));
	}
	for (int i = 0; i < SCAN; i++)
		if (seen[0][i] == UNW_CACHE_NONE &&
		    seen[1][i] == UNW_CACHE_GLOBAL &&
		    seen[2][i] == UNW_CACHE_NONE &&
		    seen[3][i] == UNW_CACHE_GLOBAL) {
			if (at >= 0)
				return 0;       /* two candidates: unsure */
			at = i;
		}
	if (at < 0)
		return 0;
	((int *)(void *)as)[at] = UNW_CACHE_PER_THREAD;
	return 1;
}

/* Context: sampler thread; allocates. */
int
rtprof__unwinder_new(struct rtprof__unwinder **out)
{
	struct rtprof__unwinder *u = calloc(1, sizeof(*u));

	if (u == NULL)
		return -ENOMEM;
	u->as = unw_create_addr_space(&accessors, 0);
	if (u->as == NULL) {
		free(u);
		return -ENOMEM;
	}
	if (!cache_unlocked(u->as))
		unw_set_caching_policy(u->as, UNW_CACHE_GLOBAL);
	scan(u, 1);
	*out = u;
	return 0;
}

/* Context: sampler thread. */
void
rtprof__unwinder_free(struct rtprof__unwinder *u)
{
	if (u == NULL)
		return;
	unw_destroy_addr_space(u->as);
	free(u->mod);
	free(u);
}

/* Context: sampler thread, once per tick. */
void
rtprof__unwinder_tick(struct rtprof__unwinder *u)
{
	u->scanned_this_tick = 0;
}

/* Is @ip (the interrupted instruction when @leaf, else a return address)
 * in rtprof's own code? */
static int
is_own(const struct rtprof__unwinder *u, uintptr_t ip, int leaf)
{
	const struct umod *m = mod_find(u, leaf ? ip : ip - 1);

	return m != NULL && m->own;
}

/* Context: sampler thread. */
int
rtprof__unwind(struct rtprof__unwinder *u, const struct rtprof__ucopy *rq,
    uintptr_t stack_lo, uintptr_t stack_hi, uint64_t *ips, uint64_t *sps,
    int max, int *truncated, const struct rtprof__call **call)
{
	unw_cursor_t cur;
	int n = 0, seen = 0, prev_own = 0, own;
	const struct rtprof__call *wrap = NULL;

	*truncated = 0;
	*call = NULL;
	if (!rq->have_regs)
		return 0;
	u->rq = rq;
	u->stack_lo = stack_lo;
	u->stack_hi = stack_hi;
	u->ran_out = 0;
	if (unw_init_remote(&cur, u->as, u) != 0)
		return 0;
	for (;;) {
		unw_word_t ip, sp;

		if (unw_get_reg(&cur, UNW_REG_IP, &ip) != 0 || ip == 0)
			break;
		if (unw_get_reg(&cur, UNW_REG_SP, &sp) != 0)
			break;
		if (n == max) {
			*truncated = 1;
			break;
		}
		/* rtprof's frames are left out; under two of them in a row
		 * (a wrapper calling the recorder's helpers) everything inner
		 * is the recorder's own work, not the program's: dropped too.
		 * Under one (a wrapper calling the real function), the real
		 * function stays: it names the call. */
		own = is_own(u, ip, seen++ == 0);
		if (own && prev_own)
			n = 0;
		/* The run's outermost own frame so far: a wrapper? */
		if (own)
			wrap = rtprof__call_at(seen == 1 ? ip : ip - 1);
		/* The program called a wrapper: the call, and nothing inside
		 * it, is the leaf (the innermost such call only). rtprof's
		 * code at the leaf that no wrapper leads to: its own work. */
		if (!own && prev_own && *call == NULL && (wrap != NULL ||
		    n == 0)) {
			n = 0;
			*call = wrap != NULL ? wrap : &rtprof__call_self;
		}
		if (!own) {
			ips[n] = ip;
			sps[n] = sp;
			n++;
		}
		prev_own = own;
		if (unw_step(&cur) <= 0)
			break;
	}
	if (u->ran_out)
		*truncated = 1;
	u->rq = NULL;
	return n;
}
