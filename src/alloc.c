#include "config.h"
#include "alloc.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The fuzz targets define ADMIT_NO_JEMALLOC: AddressSanitizer must see
 * every allocation. */
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
 * executable's own libc comes first in symbol lookup.  lru.c frees entries
 * in batches after an RCU grace period rather than as they are replaced,
 * which glibc's per-thread cache handled badly (bench/README.md: a cache_sim
 * replay took 1.62 s of CPU on glibc, 1.27 s on jemalloc).
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
