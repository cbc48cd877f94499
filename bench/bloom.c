/*
 * bloom.c - a plain blocked Bloom filter (Putze, Sanders, Singler, "Cache-,
 * hash- and space-efficient Bloom filters", 2007): every key sets k bits in
 * one 64-byte block, so a lookup reads one cache line.  The classic choice
 * admit is measured against; it cannot delete.
 */
#include "config.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hash.h"
#include "sets.h"

#define BLOCK_WORDS 8 /* 8 x 64 bits = one cache line */

struct bench_bloom {
	_Atomic uint64_t *w;
	uint32_t blocks;
	unsigned k;
};

struct bench_bloom *
bench_bloom_new(size_t bytes, uint64_t items)
{
	struct bench_bloom *b = calloc(1, sizeof(*b));
	double bits_per_item;
	void *mem;

	if (!b)
		return NULL;
	b->blocks = (uint32_t)(bytes / (BLOCK_WORDS * 8));
	if (b->blocks == 0)
		b->blocks = 1;
	/* k = ln 2 * bits per item, the optimum of an unblocked filter. */
	bits_per_item = 8.0 * b->blocks * BLOCK_WORDS * 8 / (double)(items ? items : 1);
	b->k = (unsigned)lround(bits_per_item * 0.693);
	b->k = b->k < 1 ? 1 : b->k > 16 ? 16 : b->k;
	/* Same treatment as admit's table: 2 MiB aligned, huge pages. */
	bytes = (size_t)b->blocks * BLOCK_WORDS * 8;
	if (posix_memalign(&mem, 2 << 20, bytes) != 0) {
		free(b);
		return NULL;
	}
	(void)madvise(mem, bytes, MADV_HUGEPAGE);
	memset(mem, 0, bytes);
	b->w = mem;
	return b;
}

void
bench_bloom_free(struct bench_bloom *b)
{
	if (!b)
		return;
	free((void *)b->w);
	free(b);
}

/* The k bit positions (0..511) by double hashing of the hash's low half;
 * the block comes from the high half. */
#define FOR_EACH_BIT(b, h, i, pos)                                            \
	for (uint32_t g_ = (uint32_t)(h), d_ = admit_mix32(g_) | 1, i = 0,    \
	     pos = g_ >> 23; i < (b)->k; i++, g_ += d_, pos = g_ >> 23)

void
bench_bloom_add(struct bench_bloom *b, uint64_t h)
{
	_Atomic uint64_t *blk = b->w + (size_t)admit_fastrange32((uint32_t)(h >> 32),
	                                                         b->blocks) * BLOCK_WORDS;

	FOR_EACH_BIT(b, h, i, pos)
		/* relaxed: bits are only ever set; nothing is published. */
		atomic_fetch_or_explicit(&blk[pos >> 6], 1ull << (pos & 63),
		                         memory_order_relaxed);
}

bool
bench_bloom_contains(const struct bench_bloom *b, uint64_t h)
{
	const _Atomic uint64_t *blk = b->w +
		(size_t)admit_fastrange32((uint32_t)(h >> 32), b->blocks) * BLOCK_WORDS;

	FOR_EACH_BIT(b, h, i, pos)
		/* relaxed: a bit once set stays set. */
		if (!(atomic_load_explicit(&blk[pos >> 6], memory_order_relaxed) &
		      (1ull << (pos & 63))))
			return false;
	return true;
}

size_t
bench_bloom_memory(const struct bench_bloom *b)
{
	return (size_t)b->blocks * BLOCK_WORDS * 8;
}

unsigned
bench_bloom_k(const struct bench_bloom *b)
{
	return b->k;
}
