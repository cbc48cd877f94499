/*
 * cache_instructions - the loops whose instructions per admit_lru operation
 * bench/README.md quotes, to be run under callgrind:
 *
 *   ./libtool --mode=execute valgrind --tool=callgrind --callgrind-out-file=cg.out \
 *       bench/cache_instructions
 *   callgrind_annotate --inclusive=yes cg.out | grep 'loop_'   # / 200000
 *
 * bench_cache's workload on one thread: Zipf 0.99 over 1,048,576 8-byte
 * keys, a cache of 100,000 entries with its defaults but seed 1 (so that
 * every run makes the same choices), 32-byte values.  A
 * filling pass of 1 M operations (a miss followed by a set), then
 * loop_get100 makes 200,000 gets and loop_mix95 200,000 operations of which
 * one in 20 is a set (a miss not followed by a set).  Each loop's inclusive
 * count divided by 200,000 is instructions per operation, the loop's own
 * included.  loop_peek makes the gets of loop_get100 with admit_lru_peek(),
 * which leaves no trace: the read path without the buffered event and the
 * adaptation's sample.  loop_miss then makes 200,000 gets of keys
 * never set (a miss not followed by a set): the read path that finds
 * nothing, its event and its sample.  loop_get_many last makes the gets
 * of loop_get100 again, 16 keys a call of admit_lru_get_many_u64 (the same
 * read path a key, its requests made ahead).  It prints the hit ratios, which a
 * change to the cost of an operation must leave as they are.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <admit/admit.h>

#include "benchutil.h"
#include "zipf.h"

#define KEYS (1u << 20)
#define WARM 1000000u
#define OPS 200000u
#define SET_EVERY 20

static uint64_t warm[WARM], ops[3][OPS];

/* Gets of every key of k, through admit_lru_peek() if peek; inlined in
 * each loop with peek a constant. */
static inline __attribute__((always_inline)) unsigned
read_all(struct admit_lru *c, const uint64_t *k, bool peek)
{
	unsigned char buf[64];
	unsigned hits = 0;
	size_t len;

	for (unsigned i = 0; i < OPS; i++)
		hits += (peek ? admit_lru_peek(c, &k[i], 8, buf, sizeof(buf), &len)
		              : admit_lru_get(c, &k[i], 8, buf, sizeof(buf), &len)) ==
		        ADMIT_OK;
	return hits;
}

/* noipa: loop_get100 and loop_miss are the same code, which the compiler
 * would otherwise fold into one function that callgrind cannot tell
 * apart. */
static __attribute__((noipa)) unsigned
loop_get100(struct admit_lru *c, const uint64_t *k)
{
	return read_all(c, k, false);
}

/* The read path without its trace (no event, no sample): the hash, the
 * read-side section and the index. */
static __attribute__((noinline)) unsigned
loop_peek(struct admit_lru *c, const uint64_t *k)
{
	return read_all(c, k, true);
}

static __attribute__((noinline)) unsigned
loop_mix95(struct admit_lru *c, const uint64_t *k)
{
	unsigned char buf[64], val[32] = { 0 };
	unsigned hits = 0;
	size_t len;

	for (unsigned i = 0; i < OPS; i++) {
		if (i % SET_EVERY == 0)
			admit_lru_set(c, &k[i], 8, val, sizeof(val));
		else
			hits += admit_lru_get(c, &k[i], 8, buf, sizeof(buf),
			                      &len) == ADMIT_OK;
	}
	return hits;
}

/* Gets of keys the cache never held. */
static __attribute__((noipa)) unsigned
loop_miss(struct admit_lru *c, const uint64_t *k)
{
	return read_all(c, k, false);
}

_Static_assert(OPS % 16 == 0, "loop_get_many's batches cover the loop");

static __attribute__((noinline)) unsigned
loop_get_many(struct admit_lru *c, const uint64_t *k)
{
	unsigned char vals[16][32];
	size_t lens[16];
	enum admit_status st[16];
	unsigned hits = 0;

	for (unsigned i = 0; i < OPS; i += 16) {
		admit_lru_get_many_u64(c, 16, &k[i], vals, sizeof(vals[0]), lens, st);
		for (unsigned j = 0; j < 16; j++)
			hits += st[j] == ADMIT_OK;
	}
	return hits;
}

static void
draw(const double *cdf, uint64_t *k, unsigned n, uint64_t seed)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t r = bench_key(seed << 40 ^ i);

		k[i] = bench_key(zipf_rank(cdf, KEYS, (double)(r >> 11) * 0x1p-53));
	}
}

int
main(void)
{
	struct admit_lru_config cfg = { .capacity = 100000, .seed = 1 };
	double *cdf = zipf_table(KEYS, 0.99);
	unsigned char buf[64], val[32] = { 0 };
	struct admit_lru *c;
	unsigned hits[5];
	size_t len;

	if (!cdf || admit_lru_new(&cfg, &c) != ADMIT_OK) {
		fprintf(stderr, "cache_instructions: out of memory\n");
		return 1;
	}
	draw(cdf, warm, WARM, 1);
	draw(cdf, ops[0], OPS, 2);
	draw(cdf, ops[1], OPS, 3);
	free(cdf);
	/* Keys outside the Zipf draw's ranks: bench_key is a bijection. */
	for (unsigned i = 0; i < OPS; i++)
		ops[2][i] = bench_key(KEYS + i);
	for (unsigned i = 0; i < WARM; i++)
		if (admit_lru_get(c, &warm[i], 8, buf, sizeof(buf), &len) != ADMIT_OK)
			admit_lru_set(c, &warm[i], 8, val, sizeof(val));
	hits[2] = loop_peek(c, ops[0]);
	hits[0] = loop_get100(c, ops[0]);
	hits[1] = loop_mix95(c, ops[1]);
	hits[3] = loop_miss(c, ops[2]);
	hits[4] = loop_get_many(c, ops[0]);
	printf("hit ratio: peek %.4f, 100 %% gets %.4f, 95 %% gets %.4f, "
	       "batched gets %.4f\n",
	       (double)hits[2] / OPS, (double)hits[0] / OPS,
	       (double)hits[1] / (OPS - OPS / SET_EVERY), (double)hits[4] / OPS);
	printf("hit ratio of keys never set: %.4f\n", (double)hits[3] / OPS);
	admit_lru_free(c);
	return 0;
}
