/*
 * Unit tests for admit_lru's frequency sketch (src/freqsketch.h): bad
 * configurations, record and estimate (saturating at the maximum), the
 * batch equal to single records, aging by halving every W records, steady
 * mode, the contest, the table's size, and records from threads all
 * counted.  Seeds are fixed.
 *
 * Links libadmit_core for the internal header.
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>

#include <admit/tinylfu.h>

#include "freqsketch.h"
#include "testutil.h"

#define SEED 0x5ce7c4ull

static struct admit_freqsketch *
make(uint64_t capacity, uint64_t sample, unsigned chance_shift)
{
	struct admit_tinylfu_config cfg = {
		.cache_capacity = capacity, .sample_size = sample, .seed = SEED,
		.chance_shift = chance_shift,
	};
	struct admit_freqsketch *s = NULL;

	ck_assert_int_eq(admit_freqsketch_new(&cfg, 1, &s), ADMIT_OK);
	ck_assert_ptr_nonnull(s);
	return s;
}

static void
record_n(struct admit_freqsketch *s, uint64_t h, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		admit_freqsketch_record(s, h);
}

START_TEST(test_bad_config)
{
	struct admit_freqsketch *s = (struct admit_freqsketch *)0x1;
	struct admit_tinylfu_config cfg = { .cache_capacity = 0 };

	ck_assert_int_eq(admit_freqsketch_new(&cfg, 1, &s), ADMIT_EINVAL);
	cfg.cache_capacity = ADMIT_TINYLFU_MAX_CAPACITY + 1;
	ck_assert_int_eq(admit_freqsketch_new(&cfg, 1, &s), ADMIT_EINVAL);
	cfg.cache_capacity = 10;
	cfg.sample_size = ((uint64_t)1 << 40) + 1;
	ck_assert_int_eq(admit_freqsketch_new(&cfg, 1, &s), ADMIT_EINVAL);
	ck_assert_int_eq(admit_freqsketch_new(NULL, 1, &s), ADMIT_EINVAL);
	cfg.sample_size = 0;
	ck_assert_int_eq(admit_freqsketch_new(&cfg, 1, NULL), ADMIT_EINVAL);
	ck_assert_int_eq(admit_freqsketch_new(&cfg, 0, &s), ADMIT_EINVAL);
	ck_assert_int_eq(admit_freqsketch_new(&cfg, 65, &s), ADMIT_EINVAL);
	ck_assert_ptr_eq(s, (struct admit_freqsketch *)0x1);
	admit_freqsketch_free(NULL);
}
END_TEST

/* A key's estimate follows its records up to the maximum and stays
 * there; keys never recorded estimate 0 in a table far from full. */
START_TEST(test_record_estimate)
{
	struct admit_freqsketch *s = make(10000, 1u << 30, 0);
	unsigned zero = 0;

	for (unsigned n = 1; n <= 20; n++) {
		admit_freqsketch_record(s, test_key(1));
		ck_assert_uint_eq(admit_freqsketch_estimate(s, test_key(1)),
		                  n < ADMIT_FREQSKETCH_MAX ? n
		                                           : ADMIT_FREQSKETCH_MAX);
	}
	for (uint64_t k = 2; k < 1002; k++) {
		record_n(s, test_key(k), 3);
		ck_assert_uint_ge(admit_freqsketch_estimate(s, test_key(k)), 3);
	}
	for (uint64_t k = 5000; k < 6000; k++)
		zero += admit_freqsketch_estimate(s, test_key(k)) == 0;
	/* 1,001 keys' 4 counters among 16,384: a count-min error is rare. */
	ck_assert_uint_ge(zero, 990);
	admit_freqsketch_free(s);
}
END_TEST

/* A batch leaves the table a sequence of single records leaves. */
START_TEST(test_record_batch)
{
	struct admit_freqsketch *a = make(1000, 1u << 30, 0);
	struct admit_freqsketch *b = make(1000, 1u << 30, 0);
	uint64_t h[64];

	for (int round = 0; round < 10; round++) {
		for (unsigned i = 0; i < 64; i++) {
			h[i] = test_key((i * 7 + (unsigned)round) % 40);
			admit_freqsketch_record(a, h[i]);
		}
		admit_freqsketch_record_batch(b, h, 64);
	}
	admit_freqsketch_record_batch(b, h, 0);
	for (uint64_t k = 0; k < 50; k++)
		ck_assert_uint_eq(admit_freqsketch_estimate(a, test_key(k)),
		                  admit_freqsketch_estimate(b, test_key(k)));
	admit_freqsketch_free(a);
	admit_freqsketch_free(b);
}
END_TEST

/* Every W-th record halves every counter, rounding down. */
START_TEST(test_aging)
{
	struct admit_freqsketch *s = make(1000, 100, 0);
	uint64_t agings, chance;

	record_n(s, test_key(1), 13);
	record_n(s, test_key(2), 86);
	ck_assert_uint_eq(admit_freqsketch_estimate(s, test_key(1)), 13);
	admit_freqsketch_record(s, test_key(3));        /* the 100th */
	admit_freqsketch_stats(s, &agings, &chance);
	ck_assert_uint_eq(agings, 1);
	ck_assert_uint_eq(admit_freqsketch_estimate(s, test_key(1)), 6);
	ck_assert_uint_eq(admit_freqsketch_estimate(s, test_key(2)), 7);
	ck_assert_uint_eq(admit_freqsketch_estimate(s, test_key(3)), 0);
	admit_freqsketch_free(s);
}
END_TEST

/* Steady: no aging (the records still counted), no chance admission. */
START_TEST(test_steady)
{
	struct admit_freqsketch *s = make(1000, 100, 1);
	uint64_t agings, chance;

	admit_freqsketch_set_steady(s, true);
	record_n(s, test_key(1), 250);
	admit_freqsketch_stats(s, &agings, &chance);
	ck_assert_uint_eq(agings, 0);
	ck_assert_uint_eq(admit_freqsketch_estimate(s, test_key(1)),
	                  ADMIT_FREQSKETCH_MAX);
	record_n(s, test_key(2), 15);
	for (int i = 0; i < 200; i++)
		ck_assert(!admit_freqsketch_admit(s, test_key(2), test_key(1)));
	admit_freqsketch_set_steady(s, false);
	record_n(s, test_key(1), 35);                   /* to 300 */
	admit_freqsketch_stats(s, &agings, &chance);
	ck_assert_uint_eq(agings, 1);
	ck_assert_uint_eq(admit_freqsketch_estimate(s, test_key(1)), 7);
	admit_freqsketch_free(s);
}
END_TEST

/* The contest: a higher estimate wins, a lower loses, an unseen candidate
 * always loses; a warm tie wins by chance about 1 / 2^chance_shift. */
START_TEST(test_admit)
{
	struct admit_freqsketch *s = make(1000, 1u << 30, 2);
	unsigned won = 0;
	uint64_t agings, chance;

	record_n(s, test_key(1), 5);
	record_n(s, test_key(2), 2);
	ck_assert(admit_freqsketch_admit(s, test_key(1), test_key(2)));
	ck_assert(!admit_freqsketch_admit(s, test_key(2), test_key(1)));
	ck_assert(!admit_freqsketch_admit(s, test_key(9), test_key(8)));
	record_n(s, test_key(3), 10);
	record_n(s, test_key(4), 10);
	for (int i = 0; i < 4000; i++)
		won += admit_freqsketch_admit(s, test_key(3), test_key(4));
	ck_assert_uint_gt(won, 800);
	ck_assert_uint_lt(won, 1200);
	admit_freqsketch_stats(s, &agings, &chance);
	ck_assert_uint_eq(chance, won);
	/* Below warm (6), a tie never wins. */
	for (int i = 0; i < 100; i++)
		ck_assert(!admit_freqsketch_admit(s, test_key(2), test_key(2)));
	admit_freqsketch_free(s);
}
END_TEST

/* width words per entry (a power of two, at least a block), fewer for a
 * short sample; the statistics' load counts the keys recorded. */
START_TEST(test_size)
{
	struct admit_tinylfu_config cfg = { .cache_capacity = 1000, .seed = 1 };
	struct admit_freqsketch *s = make(100000, 0, 0), *wide;
	struct admit_freqsketch *small = make(100000, 1000, 0);
	struct admit_freqsketch *tiny = make(1, 0, 0);
	uint64_t keys, slots;

	ck_assert_uint_eq(admit_freqsketch_memory(s), 131072 * 8);
	ck_assert_uint_ge(admit_freqsketch_footprint(s),
	                  admit_freqsketch_memory(s));
	ck_assert_uint_eq(admit_freqsketch_memory(small), 128 * 8);
	ck_assert_uint_eq(admit_freqsketch_memory(tiny), 64);
	admit_freqsketch_load(s, &keys, &slots);
	ck_assert_uint_eq(keys, 0);
	ck_assert_uint_eq(slots, 131072 * 4);
	for (uint64_t k = 0; k < 1000; k++)
		admit_freqsketch_record(s, test_key(k));
	admit_freqsketch_load(s, &keys, &slots);
	ck_assert_uint_le(keys, 1000);
	ck_assert_uint_ge(keys, 990);
	admit_freqsketch_free(s);
	admit_freqsketch_free(small);
	admit_freqsketch_free(tiny);
	ck_assert_int_eq(admit_freqsketch_new(&cfg, 4, &wide), ADMIT_OK);
	ck_assert_uint_eq(admit_freqsketch_memory(wide), 4096 * 8);
	admit_freqsketch_free(wide);
}
END_TEST

#define THREADS 4
#define RECORDS 200000

struct worker {
	struct admit_freqsketch *s;
	unsigned id;
};

/* Distinct keys per thread, each recorded 10 times, with the sample long
 * enough that nothing ages: every raise must land. */
static void *
worker(void *arg)
{
	struct worker *w = arg;

	for (unsigned i = 0; i < RECORDS; i++)
		admit_freqsketch_record(w->s,
		                        test_key(w->id * 1000000u + i / 10));
	return NULL;
}

START_TEST(test_threads)
{
	struct admit_freqsketch *s = make(1u << 20, (uint64_t)1 << 30, 0);
	struct worker w[THREADS];
	pthread_t th[THREADS];
	unsigned low = 0;

	for (unsigned i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ s, i };
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker, &w[i]), 0);
	}
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (unsigned i = 0; i < THREADS; i++)
		for (unsigned k = 0; k < RECORDS / 10; k++)
			low += admit_freqsketch_estimate(
			               s, test_key(i * 1000000u + k)) < 10;
	ck_assert_uint_eq(low, 0);
	admit_freqsketch_free(s);
}
END_TEST

int
main(void)
{
	Suite *su = suite_create("freqsketch");
	TCase *tc = tcase_create("basic");
	TCase *thr = tcase_create("threads");

	tcase_add_test(tc, test_bad_config);
	tcase_add_test(tc, test_record_estimate);
	tcase_add_test(tc, test_record_batch);
	tcase_add_test(tc, test_aging);
	tcase_add_test(tc, test_steady);
	tcase_add_test(tc, test_admit);
	tcase_add_test(tc, test_size);
	suite_add_tcase(su, tc);
	tcase_add_test(thr, test_threads);
	tcase_set_timeout(thr, 600);
	suite_add_tcase(su, thr);
	return test_run(srunner_create(su));
}
