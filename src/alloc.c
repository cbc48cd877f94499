#include "config.h"
#include "alloc.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The fuzz targets define ADMIT_NO_JEMALLOC, as AddressSanitizer must see
 * every allocation, and so does the Redis module's core: a server that
 * links its own jemalloc statically cannot load a second one. */
#if defined(HAVE_JEMALLOC) && !defined(ADMIT_NO_JEMALLOC)
#define USE_JEMALLOC 1
#include <jemalloc/jemalloc.h>
#endif

#define HUGE_PAGE ((size_t)2 << 20)
#define CACHELINE ((size_t)ADMIT_CACHELINE)

/* Fault injection: allocations left before the one that fails (0: off),
 * and allocations seen since the hook was last set. */
static _Atomic unsigned long fail_countdown;
static _Atomic unsigned long alloc_seen;
/* Bytes asked of admit_table_alloc since admit_alloc_table_bytes() last
 * read them: the tables are what grows with a configuration. */
static _Atomic unsigned long long table_bytes;

unsigned long long
admit_alloc_table_bytes(void)
{
	return atomic_exchange(&table_bytes, 0);
}

unsigned long
admit_alloc_fail_nth(unsigned long k)
{
	atomic_store(&fail_countdown, k);
	return atomic_exchange(&alloc_seen, 0);
}

static bool
injected_failure(void)
{
	/* relaxed: the common disarmed path; the hook is set before the
	 * allocations it targets, by the same thread in every test. */
	unsigned long c = atomic_load_explicit(&fail_countdown, memory_order_relaxed);

	/* relaxed: a statistic for the test, ordering nothing. */
	atomic_fetch_add_explicit(&alloc_seen, 1, memory_order_relaxed);
	while (c != 0) {
		/* relaxed: the countdown is its own only datum. */
		if (atomic_compare_exchange_weak_explicit(&fail_countdown, &c,
		        c - 1, memory_order_relaxed, memory_order_relaxed))
			return c == 1;
	}
	return false;
}

/*
 * Small allocations (cache entries, index arrays) go to jemalloc by name:
 * linking it into libadmit does not make it the process's malloc, since the
 * executable's own libc comes first in symbol lookup.  The cache frees
 * entries in batches after an RCU grace period rather than one by one as
 * they are replaced, a pattern glibc's per-thread cache serves poorly and
 * jemalloc's arenas well.
 */
void *
admit_malloc(size_t size)
{
	if (injected_failure())
		return NULL;
#ifdef USE_JEMALLOC
	return mallocx(size ? size : 1, 0);
#else
	return malloc(size ? size : 1);
#endif
}

void *
admit_calloc(size_t n, size_t size)
{
	if (injected_failure())
		return NULL;
	n = n ? n : 1;
	size = size ? size : 1;
#ifdef USE_JEMALLOC
	if (size > SIZE_MAX / n)
		return NULL;
	return mallocx(n * size, MALLOCX_ZERO);
#else
	return calloc(n, size);
#endif
}

_Atomic uint32_t admit_footprint_steps[ADMIT_FOOTPRINT_STEPS];

#ifdef USE_JEMALLOC
/* jemalloc's size class of size (at most 4 KiB), kept in its step of
 * admit_footprint_steps when the step's two ends share it: every class is
 * a multiple of 8, so they do unless the allocator was built otherwise
 * (then nothing is kept and nallocx is asked each time: about 90
 * instructions). */
static size_t
footprint_of_step(size_t size)
{
	size_t i = (size + 7) / 8, lo = i * 8 - 7, hi = i * 8, chunk;

	chunk = nallocx(hi, 0);
	if (chunk && chunk == nallocx(lo, 0) && chunk <= UINT32_MAX)
		/* relaxed: a pure function's cached value; whoever reads 0
		 * asks jemalloc and stores the same value. */
		atomic_store_explicit(&admit_footprint_steps[i], (uint32_t)chunk,
		                      memory_order_relaxed);
	else
		chunk = nallocx(size, 0);
	return chunk ? chunk : size;
}
#endif

size_t
admit_alloc_footprint_slow(size_t size)
{
	size_t chunk;

	if (size == 0)
		size = 1;
	if (size > SIZE_MAX / 2)
		return size;
#ifdef USE_JEMALLOC
	if ((size + 7) / 8 < ADMIT_FOOTPRINT_STEPS)
		return footprint_of_step(size);
	chunk = nallocx(size, 0);
	return chunk ? chunk : size;   /* 0: beyond jemalloc's largest class */
#else
	chunk = (size + 8 + 15) & ~(size_t)15;
	return chunk < 32 ? 32 : chunk;
#endif
}

void
admit_free(void *p)
{
#ifdef USE_JEMALLOC
	if (p)
		dallocx(p, 0);
#else
	free(p);
#endif
}

/* Advice only: a kernel without THP says no and we run on 4 KiB pages. */
static void
advise_huge(void *p, size_t size)
{
#ifdef MADV_HUGEPAGE
	if (size >= HUGE_PAGE)
		(void)madvise(p, size & ~(HUGE_PAGE - 1), MADV_HUGEPAGE);
#else
	(void)p;
	(void)size;
#endif
}

void *
admit_table_alloc(size_t size)
{
	size_t align = size >= HUGE_PAGE ? HUGE_PAGE : CACHELINE;
	void *p;

	if (size == 0 || size > SIZE_MAX - align || injected_failure())
		return NULL;
	/* relaxed: a statistic for the tests; tables are made rarely. */
	atomic_fetch_add_explicit(&table_bytes, size, memory_order_relaxed);
#ifdef USE_JEMALLOC
	/* jemalloc knows fresh extents are zero and does not touch them, so
	 * the advice below still comes before the first fault. */
	p = mallocx(size, MALLOCX_ALIGN(align) | MALLOCX_ZERO);
	if (p)
		advise_huge(p, size);
#else
	if (posix_memalign(&p, align, size) != 0)
		return NULL;
	advise_huge(p, size);
	memset(p, 0, size);
#endif
	return p;
}

void
admit_table_free(void *p, size_t size)
{
	if (!p)
		return;
#ifdef USE_JEMALLOC
	sdallocx(p, size, MALLOCX_ALIGN(size >= HUGE_PAGE ? HUGE_PAGE : CACHELINE));
#else
	(void)size;
	free(p);
#endif
}

/* ---- an instance's allocator --------------------------------------------- */

struct admit_allocator
admit_mem_copy(const struct admit_allocator *a)
{
	return a && a->alloc && a->free ? *a : (struct admit_allocator){ 0 };
}

static bool
custom(const struct admit_allocator *a)
{
	return a && a->alloc;
}

static void
count(size_t *footprint, size_t add, size_t sub)
{
	if (footprint)
		*footprint = *footprint + add - sub;
}

void *
admit_mem_zalloc(const struct admit_allocator *a, size_t size,
                 size_t *footprint)
{
	void *p;

	size = size ? size : 1;
	if (!custom(a))
		p = admit_calloc(1, size);
	else if (injected_failure())
		p = NULL;
	else if (a->zalloc)
		p = a->zalloc(a->ctx, size);
	else if ((p = a->alloc(a->ctx, size)))
		memset(p, 0, size);
	if (p)
		count(footprint, size, 0);
	return p;
}

/* advise_huge() for the whole huge pages inside [p, p + size): memory from
 * an embedder's allocator is not 2 MiB aligned. */
static void
advise_huge_inside(unsigned char *p, size_t size)
{
	uintptr_t start = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
	uintptr_t end = ((uintptr_t)p + size) & ~(uintptr_t)(HUGE_PAGE - 1);

	if (end > start)
		advise_huge((void *)start, end - start);
}

void
admit_mem_free(const struct admit_allocator *a, void *p, size_t size,
               size_t *footprint)
{
	if (!p)
		return;
	size = size ? size : 1;
	count(footprint, 0, size);
	if (custom(a))
		a->free(a->ctx, p, size);
	else
		admit_free(p);
}

/* With a custom allocator a table is the allocation's first cache line
 * boundary past its start, so that the pointer to the allocation fits in
 * the gap just below it (malloc's 16-byte alignment leaves at least 16). */
void *
admit_mem_table(const struct admit_allocator *a, size_t size,
                size_t *footprint)
{
	unsigned char *raw, *t;

	if (size == 0)
		return NULL;
	if (!custom(a)) {
		t = admit_table_alloc(size);
		if (t)
			count(footprint, size, 0);
		return t;
	}
	if (size > SIZE_MAX - CACHELINE || injected_failure())
		return NULL;
	/* Advised before the first touch (our zeroing, or the first write
	 * into a zalloc that knew fresh pages are zero), so that the kernel
	 * faults in huge pages where it has them. */
	raw = (a->zalloc ? a->zalloc : a->alloc)(a->ctx, size + CACHELINE);
	if (!raw)
		return NULL;
	advise_huge_inside(raw, size + CACHELINE);
	if (!a->zalloc)
		memset(raw, 0, size + CACHELINE);
	count(footprint, size + CACHELINE, 0);
	t = raw + CACHELINE - ((uintptr_t)raw & (CACHELINE - 1));
	memcpy(t - sizeof(raw), &raw, sizeof(raw));
	return t;
}

void
admit_mem_table_free(const struct admit_allocator *a, void *p, size_t size,
                     size_t *footprint)
{
	void *raw;

	if (!p)
		return;
	if (!custom(a)) {
		count(footprint, 0, size);
		admit_table_free(p, size);
		return;
	}
	memcpy(&raw, (unsigned char *)p - sizeof(raw), sizeof(raw));
	admit_mem_free(a, raw, size + CACHELINE, footprint);
}
