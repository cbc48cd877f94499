#include "config.h"
#include "alloc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>

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
 * Small allocations go to jemalloc by name: linking it into libadmit does
 * not make it the process's malloc, since the executable's own libc comes
 * first in symbol lookup.  The cache frees its entries (dense arena, below)
 * in batches after an RCU grace period rather than as they are replaced,
 * which glibc's per-thread cache handled badly (bench/README.md: a cache_sim
 * replay took 1.62 s of CPU on glibc, 1.27 s on jemalloc).
 */
#ifdef USE_JEMALLOC
static int dense(int flags);
#endif

/* n * size bytes, zeroed if zero, from the dense arena if in_dense. */
static void *
alloc_n(size_t n, size_t size, bool zero, bool in_dense)
{
	if (injected_failure())
		return NULL;
	n = n ? n : 1;
	size = size ? size : 1;
	if (size > SIZE_MAX / n)
		return NULL;
#ifdef USE_JEMALLOC
	return mallocx(n * size, (zero ? MALLOCX_ZERO : 0) |
	                         (in_dense ? dense(0) : 0));
#else
	(void)in_dense;
	return zero ? calloc(n, size) : malloc(n * size);
#endif
}

static void
free_from(void *p, bool in_dense)
{
#ifdef USE_JEMALLOC
	if (p)
		dallocx(p, in_dense ? dense(0) : 0);
#else
	(void)in_dense;
	free(p);
#endif
}

void *
admit_malloc(size_t size)
{
	return alloc_n(1, size, false, false);
}

void *
admit_calloc(size_t n, size_t size)
{
	return alloc_n(n, size, true, false);
}

void
admit_free(void *p)
{
	free_from(p, false);
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

/* ---- the dense arena ----------------------------------------------------- */

#ifdef USE_JEMALLOC
/*
 * The arena's extent hooks.  An extent is anonymous memory mapped 2 MiB
 * aligned when it is 2 MiB or more (jemalloc grows an arena by extents of
 * 2 MiB and up) and advised huge.  It is never given back (dalloc refuses,
 * so jemalloc retains it; no purge, commit or decommit hook, so its pages
 * stay as they are); split and merge only change jemalloc's bookkeeping of
 * memory that stays mapped.
 */
static void *
dense_extent_alloc(extent_hooks_t *hooks, void *new_addr, size_t size,
                   size_t alignment, bool *zero, bool *commit, unsigned arena)
{
	size_t align = alignment, span;
	uintptr_t raw, p;

	(void)hooks;
	(void)arena;
	if (new_addr)
		return NULL;  /* only where the kernel puts it */
	if (size >= HUGE_PAGE && align < HUGE_PAGE)
		align = HUGE_PAGE;
	if (align < 4096)
		align = 4096;
	if (size > SIZE_MAX - align)
		return NULL;
	span = size + align;
	raw = (uintptr_t)mmap(NULL, span, PROT_READ | PROT_WRITE,
	                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if ((void *)raw == MAP_FAILED)
		return NULL;
	p = (raw + align - 1) & ~(uintptr_t)(align - 1);
	if (p > raw)
		munmap((void *)raw, p - raw);
	if (raw + span > p + size)
		munmap((void *)(p + size), raw + span - (p + size));
#ifdef MADV_HUGEPAGE
	/* The whole extent, its tail past the last 2 MiB boundary too: the
	 * kernel merges it with the next extent's mapping when they meet. */
	(void)madvise((void *)p, size, MADV_HUGEPAGE);
#endif
	*zero = true;
	*commit = true;
	return (void *)p;
}

static bool
dense_extent_dalloc(extent_hooks_t *hooks, void *addr, size_t size,
                    bool committed, unsigned arena)
{
	(void)hooks, (void)addr, (void)size, (void)committed, (void)arena;
	return true;  /* kept: jemalloc retains it for reuse */
}

static void
dense_extent_destroy(extent_hooks_t *hooks, void *addr, size_t size,
                     bool committed, unsigned arena)
{
	(void)hooks, (void)committed, (void)arena;
	munmap(addr, size);
}

static bool
dense_extent_split(extent_hooks_t *hooks, void *addr, size_t size,
                   size_t size_a, size_t size_b, bool committed, unsigned arena)
{
	(void)hooks, (void)addr, (void)size, (void)size_a, (void)size_b;
	(void)committed, (void)arena;
	return false;  /* done: both parts stay mapped */
}

static bool
dense_extent_merge(extent_hooks_t *hooks, void *addr_a, size_t size_a,
                   void *addr_b, size_t size_b, bool committed, unsigned arena)
{
	(void)hooks, (void)addr_a, (void)size_a, (void)addr_b, (void)size_b;
	(void)committed, (void)arena;
	return false;  /* done: jemalloc merges only adjacent extents */
}

static extent_hooks_t dense_hooks = {
	.alloc = dense_extent_alloc,
	.dalloc = dense_extent_dalloc,
	.destroy = dense_extent_destroy,
	.split = dense_extent_split,
	.merge = dense_extent_merge,
};

/* MALLOCX_ARENA of the dense arena, set once by dense_init (0, jemalloc's
 * default arena and thread cache, if it could not be made). */
static _Atomic int dense_arena;
static pthread_once_t dense_once = PTHREAD_ONCE_INIT;
/* Each thread's own cache of the dense arena's regions: the index jemalloc
 * gave it + 1 (0: none yet), destroyed, its regions given back, when the
 * thread exits.  A thread cache of its own, used with no other arena, holds
 * this arena's memory only; the thread's automatic cache would mix in the
 * default arena's regions of the same size classes.  initial-exec: one
 * instruction, not a call to __tls_get_addr. */
static _Thread_local unsigned dense_tcache
	__attribute__((tls_model("initial-exec")));
static pthread_key_t dense_exit;

static void
dense_tcache_destroy(void *v)
{
	unsigned ind = (unsigned)(uintptr_t)v - 1;

	(void)mallctl("tcache.destroy", NULL, NULL, &ind, sizeof(ind));
}

static void
dense_init(void)
{
	extent_hooks_t *h = &dense_hooks;
	unsigned ind;
	size_t sz = sizeof(ind);
	char name[64];
	ssize_t never = -1;

	if (mallctl("arenas.create", &ind, &sz, &h, sizeof(h)) != 0)
		return;
	if (pthread_key_create(&dense_exit, dense_tcache_destroy) != 0)
		return;
	/* No decay: nothing to purge with (see the hooks). */
	snprintf(name, sizeof(name), "arena.%u.dirty_decay_ms", ind);
	(void)mallctl(name, NULL, NULL, &never, sizeof(never));
	snprintf(name, sizeof(name), "arena.%u.muzzy_decay_ms", ind);
	(void)mallctl(name, NULL, NULL, &never, sizeof(never));
	/* relaxed: pthread_once orders it before every load. */
	atomic_store_explicit(&dense_arena, MALLOCX_ARENA(ind),
	                      memory_order_relaxed);
}

/* mallocx and dallocx flags for the dense arena's memory: its arena and
 * this thread's cache of it (none if jemalloc could not make one). */
static int
dense(int flags)
{
	int arena;
	unsigned ind;
	size_t sz = sizeof(ind);

	(void)pthread_once(&dense_once, dense_init);
	/* relaxed: as in dense_init. */
	arena = atomic_load_explicit(&dense_arena, memory_order_relaxed);
	if (!arena)
		return flags;
	if (__builtin_expect(dense_tcache == 0, 0)) {
		if (mallctl("tcache.create", &ind, &sz, NULL, 0) != 0)
			return arena | MALLOCX_TCACHE_NONE | flags;
		if (pthread_setspecific(dense_exit,
		                        (void *)(uintptr_t)(ind + 1)) != 0) {
			dense_tcache_destroy((void *)(uintptr_t)(ind + 1));
			return arena | MALLOCX_TCACHE_NONE | flags;
		}
		dense_tcache = ind + 1;
	}
	return arena | MALLOCX_TCACHE(dense_tcache - 1) | flags;
}
#endif

void *
admit_dense_malloc(size_t size)
{
	return alloc_n(1, size, false, true);
}

void *
admit_dense_calloc(size_t n, size_t size)
{
	return alloc_n(n, size, true, true);
}

void
admit_dense_free(void *p)
{
	free_from(p, true);
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
	p = mallocx(size, MALLOCX_ALIGN(align) | MALLOCX_ZERO |
	               (size < HUGE_PAGE ? dense(0) : 0));
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
	if (size >= HUGE_PAGE)
		sdallocx(p, size, MALLOCX_ALIGN(HUGE_PAGE));
	else
		sdallocx(p, size, MALLOCX_ALIGN(CACHELINE) | dense(0));
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
