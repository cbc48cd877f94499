/*
 * batch_instructions - the 8-byte-key batches' instructions and simulated
 * misses per key, against the reference's single calls, for callgrind
 * (doc/filter-benchmarks.md gives the commands and the figures):
 *
 *   ./libtool --mode=execute valgrind --tool=callgrind --cache-sim=yes \
 *       --D1=49152,12,64 --LL=2097152,16,64 --callgrind-out-file=cg.out \
 *       bench/batch_instructions N BITS
 *   callgrind_annotate --inclusive=yes cg.out | grep 'loop_'   # / N
 *
 * loop_insert_u64 fills in three calls, fill_to_50 (to half the slots),
 * fill_to_90 and fill_to_95 (the rest): with --dump-before=fill_to_
 * --dump-after=fill_to_ each has a profile of its own, whose
 * cuckoo_add() (inclusive, and its calls) is the keys that found both
 * buckets full.
 *
 * N random 8-byte keys (bench_key()) in an array, as bench/user_filter.c
 * holds them.  loop_insert_u64 fills an admit filter made for N items by
 * admit_cuckoo_insert_many_u64() in calls of 1024 keys, loop_u64 and
 * loop_u64_absent look the N keys and N other ones up by
 * admit_cuckoo_contains_many_u64() in calls of 1024, loop_single the N keys
 * by admit_cuckoo_contains(); loop_ref_insert and loop_ref fill and look up
 * the reference (refcf_set.cc, a table for N items) when configure found
 * it.  Each loop's inclusive count divided by N is per key, the loop's own
 * work included.  BITS: 8 or 16.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include <admit/admit.h>

#include "benchutil.h"
#include "sets.h"

#define CHUNK 1024

static size_t
insert_range(struct admit_cuckoo *f, const uint64_t *k, size_t from,
             size_t to)
{
	static enum admit_status st[CHUNK];
	size_t ok = 0;

	for (size_t i = from; i < to; i += CHUNK) {
		size_t c = to - i < CHUNK ? to - i : CHUNK;

		(void)admit_cuckoo_insert_many_u64(f, c, k + i, st);
		for (size_t j = 0; j < c; j++)
			ok += st[j] == ADMIT_OK;
	}
	return ok;
}

/* The fill by load: to half the slots, to 90 %, and the rest (to 95 %). */
static __attribute__((noipa)) size_t
fill_to_50(struct admit_cuckoo *f, const uint64_t *k, size_t from, size_t to)
{
	return insert_range(f, k, from, to);
}

static __attribute__((noipa)) size_t
fill_to_90(struct admit_cuckoo *f, const uint64_t *k, size_t from, size_t to)
{
	return insert_range(f, k, from, to);
}

static __attribute__((noipa)) size_t
fill_to_95(struct admit_cuckoo *f, const uint64_t *k, size_t from, size_t to)
{
	return insert_range(f, k, from, to);
}

static __attribute__((noipa)) size_t
loop_insert_u64(struct admit_cuckoo *f, const uint64_t *k, size_t n)
{
	uint64_t slots = admit_cuckoo_slots(f);
	size_t a = (size_t)(slots / 2), b = (size_t)(slots * 9 / 10);

	a = a < n ? a : n;
	b = b < n ? b : n;
	return fill_to_50(f, k, 0, a) + fill_to_90(f, k, a, b) +
	       fill_to_95(f, k, b, n);
}

static size_t
batch_pass(const struct admit_cuckoo *f, const uint64_t *k, size_t n)
{
	static bool out[CHUNK];
	size_t hits = 0;

	for (size_t i = 0; i < n; i += CHUNK) {
		size_t c = n - i < CHUNK ? n - i : CHUNK;

		admit_cuckoo_contains_many_u64(f, c, k + i, out);
		for (size_t j = 0; j < c; j++)
			hits += out[j];
	}
	return hits;
}

static __attribute__((noipa)) size_t
loop_u64(const struct admit_cuckoo *f, const uint64_t *k, size_t n)
{
	return batch_pass(f, k, n);
}

static __attribute__((noipa)) size_t
loop_u64_absent(const struct admit_cuckoo *f, const uint64_t *k, size_t n)
{
	return batch_pass(f, k, n);
}

static __attribute__((noipa)) size_t
loop_single(const struct admit_cuckoo *f, const uint64_t *k, size_t n)
{
	size_t hits = 0;

	for (size_t i = 0; i < n; i++)
		hits += admit_cuckoo_contains(f, &k[i], 8);
	return hits;
}

#ifdef HAVE_REFCF
static __attribute__((noipa)) size_t
loop_ref_insert(struct bench_ref *r, const uint64_t *k, size_t n)
{
	size_t ok = 0;

	for (size_t i = 0; i < n; i++)
		ok += bench_ref_insert(r, k[i]);
	return ok;
}

static __attribute__((noipa)) size_t
loop_ref(const struct bench_ref *r, const uint64_t *k, size_t n)
{
	return (size_t)bench_ref_contains_pass(r, k, n);
}
#endif

int
main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 0;
	unsigned bits = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
	struct admit_cuckoo_config cfg = { .capacity = n,
	                                   .fingerprint_bits = bits };
	struct admit_cuckoo *f;
	uint64_t *keys, *absent;

	if (n == 0 || (bits != 8 && bits != 16) ||
	    admit_cuckoo_new(&cfg, &f) != ADMIT_OK) {
		fprintf(stderr, "usage: batch_instructions N 8|16\n");
		return 2;
	}
	keys = malloc(n * sizeof(*keys));
	absent = malloc(n * sizeof(*absent));
	if (!keys || !absent)
		return 2;
	for (size_t i = 0; i < n; i++) {
		keys[i] = bench_key(i);
		absent[i] = bench_key(i | 1ull << 63);
	}
	printf("admit: inserted %zu of %zu", loop_insert_u64(f, keys, n), n);
	printf(", found %zu, absent found %zu, single %zu\n",
	       loop_u64(f, keys, n), loop_u64_absent(f, absent, n),
	       loop_single(f, keys, n));
#ifdef HAVE_REFCF
	{
		struct bench_ref *r = bench_ref_new(n, bits);

		if (!r)
			return 2;
		printf("reference: inserted %zu", loop_ref_insert(r, keys, n));
		printf(", found %zu\n", loop_ref(r, keys, n));
		bench_ref_free(r);
	}
#endif
	admit_cuckoo_free(f);
	free(keys);
	free(absent);
	return 0;
}
