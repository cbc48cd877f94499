/*
 * alloc.h - every allocation admit makes goes through here, so that the
 * allocator (jemalloc or libc) is chosen in one place.
 */
#ifndef ADMIT_ALLOC_H
#define ADMIT_ALLOC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <admit/allocator.h>

/* The cache-line size every padded structure and aligned table assumes (x86
 * and most arm64; Apple's M-series lines are 128, where padding to 64 only
 * costs some false sharing, never correctness).  The one definition. */
#define ADMIT_CACHELINE 64

void *admit_malloc(size_t size);
void *admit_calloc(size_t n, size_t size);
void  admit_free(void *p);

/* The bytes an admit_malloc(size) takes from its allocator: size rounded up
 * to the allocator's size class (jemalloc's nallocx; libc's chunk, taken to
 * be glibc's: size plus an 8-byte header, in 16-byte steps, at least 32).
 * A pure function of size for the life of the process; size itself for a
 * size no allocator can serve. */
size_t admit_alloc_footprint_slow(size_t size);

/* The classes admit_alloc_footprint_slow() has found of the sizes up to
 * 4 KiB, by 8-byte step ((size + 7) / 8); 0: not found yet.  Inline, as a
 * set asks for several (its entry's charge, its victim's) and a call to
 * the slow path costs more than the lookup. */
#define ADMIT_FOOTPRINT_STEPS (4096u / 8 + 1)
extern _Atomic uint32_t admit_footprint_steps[ADMIT_FOOTPRINT_STEPS];

static inline size_t
admit_alloc_footprint(size_t size)
{
	size_t i = (size + 7) / 8;

	if (i < ADMIT_FOOTPRINT_STEPS) {
		/* relaxed: a pure function's cached value (alloc.c). */
		uint32_t c = atomic_load_explicit(&admit_footprint_steps[i],
		                                  memory_order_relaxed);

		if (c)
			return c;
	}
	return admit_alloc_footprint_slow(size);
}

/*
 * A zeroed, cache-line aligned table.  Tables of 2 MiB or more are aligned to
 * 2 MiB and advised into transparent huge pages: a lookup in a big table is
 * two random cache misses, and a TLB miss on top of each costs as much again.
 */
void *admit_table_alloc(size_t size);
void  admit_table_free(void *p, size_t size);

/*
 * An instance's allocator (admit/allocator.h): a NULL a, or one whose alloc
 * is NULL, is the library's own (the functions above).  Each counts the
 * bytes it obtained into *footprint (when footprint is not NULL) and takes
 * them off on free, so an instance knows what it holds.  The zeroed, cache-
 * line aligned tables are admit_table_alloc's with the library's allocator
 * and over-allocated by ADMIT_CACHELINE and aligned inside with another.
 * Fault injection (below) counts these as well.
 */
void *admit_mem_zalloc(const struct admit_allocator *a, size_t size,
                       size_t *footprint);
void  admit_mem_free(const struct admit_allocator *a, void *p, size_t size,
                     size_t *footprint);
void *admit_mem_table(const struct admit_allocator *a, size_t size,
                      size_t *footprint);
void  admit_mem_table_free(const struct admit_allocator *a, void *p,
                           size_t size, size_t *footprint);

/* An allocator to copy into an instance: *a, or all zero for NULL. */
struct admit_allocator admit_mem_copy(const struct admit_allocator *a);

/*
 * Fault injection for tests (internal, never exported): make the k-th
 * allocation from now on (k >= 1, counting admit_malloc, admit_calloc and
 * admit_table_alloc) fail, and every one after it succeed again; k = 0
 * disarms.  Returns how many allocations were counted since the last call.
 */
unsigned long admit_alloc_fail_nth(unsigned long k);

/*
 * For tests (internal): bytes admit_table_alloc was asked for since the
 * previous call (from start-up for the first; injected failures excluded).
 * Every table whose size follows a parameter (filters, sketches, shards)
 * is allocated there, so a test can bound what a configuration costs.
 */
unsigned long long admit_alloc_table_bytes(void);

#endif /* ADMIT_ALLOC_H */
