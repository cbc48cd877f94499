/*
 * Unit tests for bench/tightlru.c, the locked LRU cache bench_cache holds
 * admit_lru against: on random streams its every get (hit or miss, and the
 * value returned), its size and its evictions must equal those of a
 * reference LRU (an array in recency order, searched linearly), so that its
 * benchmark figures are those of a real LRU cache.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "prng.h"
#include "testutil.h"
#include "tightlru.h"

/* The reference: keys and value stamps, most recently used first. */
struct ref {
	uint64_t *key, *stamp;
	size_t n, cap;
	uint64_t evictions;
};

/* Moves entry i to the front, shifting the more recent ones back. */
static void
ref_front(struct ref *r, size_t i)
{
	uint64_t k = r->key[i], s = r->stamp[i];

	memmove(r->key + 1, r->key, i * sizeof(*r->key));
	memmove(r->stamp + 1, r->stamp, i * sizeof(*r->stamp));
	r->key[0] = k;
	r->stamp[0] = s;
}

static size_t
ref_find(const struct ref *r, uint64_t k)
{
	size_t i = 0;

	while (i < r->n && r->key[i] != k)
		i++;
	return i;
}

static int
ref_get(struct ref *r, uint64_t k, uint64_t *stamp)
{
	size_t i = ref_find(r, k);

	if (i == r->n)
		return 0;
	*stamp = r->stamp[i];
	ref_front(r, i);
	return 1;
}

static void
ref_set(struct ref *r, uint64_t k, uint64_t stamp)
{
	size_t i = ref_find(r, k);

	if (i == r->n) {
		if (r->n == r->cap) {
			r->evictions++;
			i = r->n - 1;   /* the least recent slot is reused */
		} else {
			i = r->n++;
		}
		r->key[i] = k;
	}
	r->stamp[i] = stamp;
	ref_front(r, i);
}

static void
value_of(unsigned char v[32], uint64_t key, uint64_t stamp)
{
	memset(v, 0, 32);
	memcpy(v, &key, 8);
	memcpy(v + 24, &stamp, 8);
}

/* Capacities and key-space sizes: a one-entry cache, tables small enough
 * for probe runs to wrap around, and key spaces from twice the capacity
 * (few evictions) to far larger (almost every set evicts). */
static const struct { size_t cap, keys; } cases[] = {
	{ 1, 4 }, { 2, 3 }, { 3, 50 }, { 7, 16 }, { 16, 1000 },
	{ 64, 128 }, { 100, 5000 }, { 300, 900 }, { 257, 100000 },
};

START_TEST(test_against_reference)
{
	size_t cap = cases[_i].cap, nkeys = cases[_i].keys;
	struct tightlru *t = tightlru_new(cap);
	struct ref r = { calloc(cap, 8), calloc(cap, 8), 0, cap, 0 };
	uint64_t *pool = calloc(nkeys, sizeof(*pool));
	struct prng rng = { 1000 + (uint64_t)_i };
	uint64_t hits = 0;

	ck_assert_ptr_nonnull(t);
	ck_assert(r.key && r.stamp && pool);
	/* Random 64-bit keys, with the extremes among them. */
	for (size_t i = 0; i < nkeys; i++)
		pool[i] = prng_next(&rng);
	pool[0] = 0;
	if (nkeys > 1)
		pool[1] = UINT64_MAX;
	for (uint64_t op = 1; op <= 200000; op++) {
		uint64_t k = pool[prng_below(&rng, nkeys)], stamp;
		unsigned char v[32], want[32];

		if (prng_below(&rng, 4) == 0) {      /* a set */
			value_of(v, k, op);
			tightlru_set(t, k, v);
			ref_set(&r, k, op);
			continue;
		}
		memset(v, 0xa5, sizeof(v));
		if (ref_get(&r, k, &stamp)) {
			ck_assert_msg(tightlru_get(t, k, v), "op %llu: a hit missed",
			              (unsigned long long)op);
			value_of(want, k, stamp);
			ck_assert_mem_eq(v, want, 32);
			hits++;
		} else {
			ck_assert_msg(!tightlru_get(t, k, v), "op %llu: a miss hit",
			              (unsigned long long)op);
			value_of(v, k, op);          /* read through */
			tightlru_set(t, k, v);
			ref_set(&r, k, op);
		}
		ck_assert_uint_eq(tightlru_size(t), r.n);
	}
	ck_assert_uint_eq(tightlru_evictions(t), r.evictions);
	/* The stream exercised both outcomes and, beyond the capacity, eviction. */
	ck_assert_uint_gt(hits, 0);
	if (nkeys > cap)
		ck_assert_uint_gt(r.evictions, 0);
	tightlru_free(t);
	free(r.key);
	free(r.stamp);
	free(pool);
}
END_TEST

START_TEST(test_bad_capacity)
{
	ck_assert_ptr_null(tightlru_new(0));
	ck_assert_ptr_null(tightlru_new((size_t)1 << 31));
	tightlru_free(NULL);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("tightlru");
	TCase *tc = tcase_create("reference");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_against_reference, 0,
	                    (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, test_bad_capacity);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
