#include "config.h"
#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#define HUGE_PAGE ((size_t)2 << 20)
#define CACHELINE ((size_t)64)

void *
admit_malloc(size_t size)
{
	return malloc(size ? size : 1);
}

void *
admit_calloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size ? size : 1);
}

void
admit_free(void *p)
{
	free(p);
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

	if (size == 0 || size > SIZE_MAX - align)
		return NULL;
#ifdef HAVE_JEMALLOC
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
#ifdef HAVE_JEMALLOC
	sdallocx(p, size, MALLOCX_ALIGN(size >= HUGE_PAGE ? HUGE_PAGE : CACHELINE));
#else
	(void)size;
	free(p);
#endif
}
