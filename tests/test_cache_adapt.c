/*
 * Unit tests for the cache's adaptation (src/cache/adapt.h), through its
 * table of functions: it watches the keys minisim samples (all of them for
 * a small cache, a fraction for a big one); a watched set and a watched hit
 * are recorded in the cache's sketch, a miss is not; it starts at the
 * default configuration and leaves it on a pattern where recency is all (a
 * zigzag, where admission turns away the keys about to be read again);
 * stats report its memory and its switches.
 */
#include <check.h>

#include "cache/adapt.h"
#include "testutil.h"

static struct admit_adapt *
adapt_new(uint64_t capacity, struct admit_freqsketch **sk)
{
	struct admit_tinylfu_config tc = { .cache_capacity = capacity, .seed = 7 };
	struct admit_adapt_params p = { capacity, capacity, NULL, NULL, 42 };
	struct admit_adapt *a;

	ck_assert_int_eq(admit_freqsketch_new(&tc, 1, sk), ADMIT_OK);
	p.sketch = *sk;
	ck_assert_int_eq(admit_adapt_minisim_new(&p, &a), ADMIT_OK);
	return a;
}

/* A key's hash, as the cache's would be: any well-mixed 64 bits. */
static uint64_t
hash_of(uint64_t k)
{
	return test_key(k);
}

START_TEST(test_watch_and_record)
{
	struct admit_freqsketch *t;
	struct admit_adapt *a = adapt_new(1000, &t);
	uint64_t h = hash_of(1);
	uint64_t bytes, switches;

	ck_assert(admit_adapt_watches(a, h));  /* small: every key */
	ck_assert(admit_adapt_caller_records(a, h));
	ck_assert(!admit_adapt_watches(NULL, h));
	ck_assert_uint_eq(a->ops->current(a), ADMIT_MINISIM_START);
	a->ops->on_get(a, h, false, false);
	ck_assert_uint_eq(admit_freqsketch_estimate(t, h), 0);
	a->ops->on_set(a, h, 1);
	ck_assert_uint_eq(admit_freqsketch_estimate(t, h), 1);
	a->ops->on_get(a, h, true, true);
	ck_assert_uint_eq(admit_freqsketch_estimate(t, h), 2);
	a->ops->on_get(a, h, true, false);  /* a quiet hit: no record */
	ck_assert_uint_eq(admit_freqsketch_estimate(t, h), 2);
	a->ops->on_compute(a, h, true);  /* the sample only */
	ck_assert_uint_eq(admit_freqsketch_estimate(t, h), 2);
	admit_adapt_record_now(a, h);
	ck_assert_uint_eq(admit_freqsketch_estimate(t, h), 3);
	a->ops->stats(a, &bytes, &switches);
	ck_assert_uint_gt(bytes, 0);
	/* The second get was the first reuse (minisim.h). */
	ck_assert_uint_eq(switches, 1);
	ck_assert_uint_eq(a->ops->current(a), ADMIT_MINISIM_REUSED);
	admit_adapt_free(a);
	admit_freqsketch_free(t);
}
END_TEST

/* A fill by sets (no get before them) leaves the start at its first set,
 * and the shards read the new configuration before that set's contest. */
START_TEST(test_load_leaves_start)
{
	struct admit_freqsketch *t;
	struct admit_adapt *a = adapt_new(1000, &t);

	ck_assert_uint_eq(a->ops->current(a), ADMIT_MINISIM_START);
	a->ops->on_set(a, hash_of(1), 1);
	ck_assert_uint_eq(a->ops->current(a), ADMIT_MINISIM_REUSED);
	admit_adapt_free(a);
	admit_freqsketch_free(t);
}
END_TEST

START_TEST(test_sample_of_big_cache)
{
	struct admit_freqsketch *t;
	struct admit_adapt *a = adapt_new(1000000, &t);
	unsigned watched = 0;

	for (uint64_t i = 0; i < 100000; i++)
		watched += admit_adapt_watches(a, hash_of(i));
	/* About ADMIT_MINISIM_MAX_ENTRIES / 1 M of the keys. */
	ck_assert_uint_gt(watched, 50);
	ck_assert_uint_lt(watched, 2000);
	admit_adapt_free(a);
	admit_freqsketch_free(t);
}
END_TEST

/* A get-then-set-on-miss driver, as a cache would call the hooks. */
static void
request(struct admit_adapt *a, uint64_t k, bool *in)
{
	uint64_t h = hash_of(k);

	a->ops->on_get(a, h, in[k], in[k]);
	if (!in[k]) {
		a->ops->on_set(a, h, 1);
		in[k] = true;
	}
}

START_TEST(test_zigzag_moves_to_lru)
{
	enum { CAP = 500, KEYS = 1000 };
	struct admit_freqsketch *t;
	struct admit_adapt *a = adapt_new(CAP, &t);
	static bool in[KEYS];
	uint64_t bytes, switches;

	/* Forwards then backwards: each turn re-reads the most recent keys,
	 * which plain LRU keeps and admission turns away. */
	for (int pass = 0; pass < 40; pass++)
		for (uint64_t i = 0; i < KEYS; i++)
			request(a, pass % 2 ? KEYS - 1 - i : i, in);
	ck_assert_uint_eq(a->ops->current(a), ADMIT_MINISIM_LRU);
	a->ops->stats(a, &bytes, &switches);
	ck_assert_uint_gt(switches, 0);
	admit_adapt_free(a);
	admit_freqsketch_free(t);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cache_adapt");
	TCase *tc = tcase_create("adapt");

	tcase_add_test(tc, test_watch_and_record);
	tcase_add_test(tc, test_load_leaves_start);
	tcase_add_test(tc, test_sample_of_big_cache);
	tcase_add_test(tc, test_zigzag_moves_to_lru);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
