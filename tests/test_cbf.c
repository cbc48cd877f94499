/*
 * Unit tests for admit_cbf: sizing, the false-positive rate against the
 * formula for the blocked layout, exact agreement with a plain model of the
 * counters (conservative update, remove, halve, clear, saturation), a
 * concurrency smoke test, and bad input.  Seeds are fixed.
 *
 * Links libadmit_core for cbf_internal.h: the model needs to know which
 * counters a key owns, and the calls on a key's hash (TinyLFU's) are held
 * to the same model.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <admit/cbf.h>

#include "cbf_internal.h"
#include "hash.h"
#include "testutil.h"

#define SEED 0xcbf5eedull
#define BLOCK 128 /* counters per 64-byte block */

static struct admit_cbf *
make(uint64_t n, double fpr)
{
	struct admit_cbf *f = NULL;

	ck_assert_int_eq(admit_cbf_new(n, fpr, SEED, &f), ADMIT_OK);
	ck_assert_ptr_nonnull(f);
	return f;
}

START_TEST(test_bad_input)
{
	struct admit_cbf *f = (struct admit_cbf *)0x1;
	const double bad_fpr[] = { 0.0, -0.1, 1.0, 2.0, 1e-12, NAN, INFINITY };

	for (size_t i = 0; i < sizeof(bad_fpr) / sizeof(bad_fpr[0]); i++)
		ck_assert_int_eq(admit_cbf_new(100, bad_fpr[i], SEED, &f), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cbf_new(0, 0.01, SEED, &f), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cbf_new(ADMIT_CBF_MAX_ITEMS + 1, 0.01, SEED, &f),
	                 ADMIT_EINVAL);
	ck_assert_int_eq(admit_cbf_new(UINT64_MAX, 0.01, SEED, &f), ADMIT_EINVAL);
	ck_assert_ptr_eq(f, (struct admit_cbf *)0x1);
	ck_assert_int_eq(admit_cbf_new(100, 0.01, SEED, NULL), ADMIT_EINVAL);

	ck_assert_int_eq(admit_cbf_add(NULL, "k", 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cbf_remove(NULL, "k", 1), ADMIT_EINVAL);
	ck_assert_uint_eq(admit_cbf_estimate(NULL, "k", 1), 0);
	ck_assert(!admit_cbf_contains(NULL, "k", 1));
	ck_assert_int_eq(admit_cbf_halve(NULL), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cbf_clear(NULL), ADMIT_EINVAL);
	ck_assert_uint_eq(admit_cbf_counters(NULL), 0);
	ck_assert_uint_eq(admit_cbf_hashes(NULL), 0);
	ck_assert_uint_eq(admit_cbf_memory(NULL), 0);
	admit_cbf_free(NULL);

	f = make(1000, 0.01);
	ck_assert_int_eq(admit_cbf_add(f, NULL, 3), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cbf_remove(f, NULL, 3), ADMIT_EINVAL);
	ck_assert_uint_eq(admit_cbf_estimate(f, NULL, 3), 0);
	/* Nothing was counted by the refused calls. */
	ck_assert_uint_eq(admit_cbf_estimate(f, NULL, 0), 0);
	/* The empty key is a key like any other. */
	ck_assert_int_eq(admit_cbf_remove(f, NULL, 0), ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_cbf_add(f, NULL, 0), ADMIT_OK);
	ck_assert_int_eq(admit_cbf_add(f, "", 0), ADMIT_OK);
	ck_assert_uint_eq(admit_cbf_estimate(f, NULL, 0), 2);
	ck_assert_int_eq(admit_cbf_remove(f, NULL, 0), ADMIT_OK);
	ck_assert_uint_eq(admit_cbf_estimate(f, "", 0), 1);
	admit_cbf_free(f);
}
END_TEST

/* m and k from the usual formulas, m rounded up to whole blocks. */
START_TEST(test_sizing)
{
	const struct { uint64_t n; double fpr; } cases[] = {
		{ 1, 0.5 }, { 1000, 0.01 }, { 100000, 0.001 }, { 12345, 0.2 },
		{ 10, 1e-9 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct admit_cbf *f = make(cases[i].n, cases[i].fpr);
		double m = -(double)cases[i].n * log(cases[i].fpr) / (M_LN2 * M_LN2);
		double k = m / (double)cases[i].n * M_LN2;
		uint64_t got = admit_cbf_counters(f);

		ck_assert_uint_eq(got % BLOCK, 0);
		ck_assert_msg((double)got >= m && (double)got < m + BLOCK + 1,
		              "n %llu fpr %g: m %llu, formula %.1f",
		              (unsigned long long)cases[i].n, cases[i].fpr,
		              (unsigned long long)got, m);
		ck_assert_msg(fabs(admit_cbf_hashes(f) - k) <= 0.5 + 1e-9 ||
		              (k < 1 && admit_cbf_hashes(f) == 1),
		              "k %u, formula %.2f", admit_cbf_hashes(f), k);
		ck_assert_uint_eq(admit_cbf_memory(f), got / 2);
		admit_cbf_free(f);
	}
	/* 1000 keys at 1 %: 9585.1 counters -> 75 blocks, k = 7. */
	{
		struct admit_cbf *f = make(1000, 0.01);

		ck_assert_uint_eq(admit_cbf_counters(f), 9600);
		ck_assert_uint_eq(admit_cbf_hashes(f), 7);
		admit_cbf_free(f);
	}
}
END_TEST

/*
 * The false-positive rate of a blocked filter.  The keys in a block are
 * Poisson with mean lambda = n / blocks.  Given j keys in a block of B
 * counters, their k j positions are uniform throws, and a foreign key is a
 * false positive when all of its own k positions were hit.  The textbook
 * product (1 - (1 - 1/B)^(k j))^k (Putze, Sanders, Singler, eq. 3) treats
 * those k events as independent, which for B = 128 understates the rate by
 * 4-8 %; the exact figure conditions on the d distinct positions of the
 * query and counts by inclusion-exclusion:
 *   P(d distinct) = B (B-1) ... (B-d+1) S(k, d) / B^k    (S: Stirling, 2nd kind)
 *   P(d given cells all hit by N throws) = sum_i (-1)^i C(d, i) (1 - i/B)^N
 */
static double
block_fp_exact(unsigned k, unsigned j)
{
	double stirling[33][33] = { { 1 } }, sum = 0;

	for (unsigned a = 1; a <= k; a++)
		for (unsigned d = 1; d <= a; d++)
			stirling[a][d] = d * stirling[a - 1][d] + stirling[a - 1][d - 1];
	for (unsigned d = 1; d <= k; d++) {
		double pd = stirling[k][d] / pow(BLOCK, k), hit = 0, binom = 1;

		for (unsigned i = 0; i < d; i++)
			pd *= BLOCK - i;
		for (unsigned i = 0; i <= d; i++) {
			hit += (i % 2 ? -1 : 1) * binom *
			       pow(1 - (double)i / BLOCK, (double)k * j);
			binom = binom * (d - i) / (i + 1);
		}
		sum += pd * hit;
	}
	return sum;
}

static double
blocked_fpr(double n, double blocks, unsigned k, bool exact)
{
	double lambda = n / blocks, p = exp(-lambda), sum = 0;

	for (unsigned j = 0; j < 20 * lambda + 100; j++) {
		sum += p * (exact ? block_fp_exact(k, j)
		                  : pow(1 - pow(1 - 1.0 / BLOCK, (double)k * j), k));
		p *= lambda / (j + 1);
	}
	return sum;
}

static const double fprs[] = { 0.1, 0.01, 0.001 };

START_TEST(test_false_positive_rate)
{
	const uint64_t n = 100000, queries = 1000000;
	struct admit_cbf *f = make(n, fprs[_i]);
	struct tally missing = TALLY_INIT;
	uint64_t positives = 0;
	double want, sigma, measured, blocks;

	for (uint64_t i = 0; i < n; i++)
		admit_cbf_add(f, KEY(i));
	for (uint64_t i = 0; i < n; i++)
		tally(&missing, admit_cbf_contains(f, KEY(i)), i);
	ck_assert_tally(missing, "false negatives");
	for (uint64_t i = 0; i < queries; i++)
		positives += admit_cbf_contains(f, KEY(i + (1ull << 40)));

	measured = (double)positives / (double)queries;
	blocks = (double)admit_cbf_counters(f) / BLOCK;
	want = blocked_fpr((double)n, blocks, admit_cbf_hashes(f), true);
	sigma = sqrt(want * (1 - want) / (double)queries);
	printf("cbf fpr: n %llu, target %g: m %llu, k %u; blocked formula %.5f "
	       "(textbook product %.5f), measured %.5f\n",
	       (unsigned long long)n, fprs[_i],
	       (unsigned long long)admit_cbf_counters(f), admit_cbf_hashes(f),
	       want, blocked_fpr((double)n, blocks, admit_cbf_hashes(f), false),
	       measured);
	/* Margin: 5 binomial standard deviations of the 10^6 queries, plus 2 %
	 * of the formula for the Poisson approximation of the block loads.  The
	 * blocked formula, not the target, is what this layout promises: the
	 * usual sizing formulas are for an unblocked filter. */
	ck_assert_msg(fabs(measured - want) <= 5 * sigma + 0.02 * want,
	              "measured %.5f, blocked formula %.5f", measured, want);
	admit_cbf_free(f);
}
END_TEST

/* ---- exact agreement with a model of the counters ----------------------- */

struct model {
	unsigned char *c;
	uint64_t m;
};

static unsigned
model_min(const struct model *md, const uint64_t *idx, unsigned k)
{
	unsigned min = 15;

	for (unsigned i = 0; i < k; i++)
		if (md->c[idx[i]] < min)
			min = md->c[idx[i]];
	return min;
}

/* Distinct indexes of a key, so that a repeated one changes once. */
static unsigned
distinct(const uint64_t *idx, unsigned k, uint64_t *out)
{
	unsigned d = 0;

	for (unsigned i = 0; i < k; i++) {
		bool seen = false;

		for (unsigned j = 0; j < d; j++)
			seen |= out[j] == idx[i];
		if (!seen)
			out[d++] = idx[i];
	}
	return d;
}

START_TEST(test_matches_model)
{
	/* Small filters (one block, k = 4; three blocks, k = 10, whose
	 * positions take two words of the stream) with 60 keys: counters are
	 * shared a lot. */
	struct admit_cbf *f = make(20, _i ? 0.001 : 0.05);
	struct model md = { calloc(admit_cbf_counters(f), 1), admit_cbf_counters(f) };
	unsigned k = admit_cbf_hashes(f);
	uint64_t x = 42, ops = 0;
	struct tally bad = TALLY_INIT;

	for (unsigned step = 0; step < 200000; step++) {
		uint64_t idx[CBF_MAX_HASHES], d[CBF_MAX_HASHES], key;
		unsigned op, nd, min;

		x = test_key(x);
		key = x % 60;
		op = (unsigned)(x >> 40) % 1000;
		cbf_counter_indexes(f, KEY(key), idx);
		nd = distinct(idx, k, d);
		min = model_min(&md, idx, k);
		if (op < 400) {
			ck_assert_int_eq(admit_cbf_add(f, KEY(key)), ADMIT_OK);
			for (unsigned i = 0; i < nd && min < 15; i++)
				if (md.c[d[i]] == min)
					md.c[d[i]]++;
		} else if (op < 600) {
			/* Added (its zero counters raised) only if absent. */
			tally(&bad, cbf_add_if_absent_hash(f, admit_hash(KEY(key),
			                                                 SEED)) ==
			            (min == 0), step);
			for (unsigned i = 0; i < nd && min == 0; i++)
				if (md.c[d[i]] == 0)
					md.c[d[i]] = 1;
		} else if (op < 995) {
			enum admit_status st = admit_cbf_remove(f, KEY(key));

			tally(&bad, st == (min ? ADMIT_OK : ADMIT_NOTFOUND), step);
			for (unsigned i = 0; i < nd && min; i++)
				if (md.c[d[i]] > 0 && md.c[d[i]] < 15)
					md.c[d[i]]--;
		} else if (op < 999) {
			admit_cbf_halve(f);
			for (uint64_t i = 0; i < md.m; i++)
				md.c[i] >>= 1;
		} else {
			admit_cbf_clear(f);
			memset(md.c, 0, md.m);
		}
		ops++;
		min = model_min(&md, idx, k);
		tally(&bad, admit_cbf_estimate(f, KEY(key)) == min, step);
		tally(&bad, cbf_estimate_hash(f, admit_hash(KEY(key), SEED)) == min,
		      step);
		tally(&bad, cbf_contains_hash(f, admit_hash(KEY(key), SEED)) ==
		            (min > 0), step);
		tally(&bad, admit_cbf_contains(f, KEY(key)) == (min > 0), step);
		if (step % 1000 == 0)
			for (uint64_t i = 0; i < md.m; i++)
				tally(&bad, cbf_counter_get(f, i) == md.c[i], step);
	}
	for (uint64_t i = 0; i < md.m; i++)
		tally(&bad, cbf_counter_get(f, i) == md.c[i], ops);
	ck_assert_tally(bad, "disagreements with the model");
	free(md.c);
	admit_cbf_free(f);
}
END_TEST

/* Two keys sharing a counter: the second key's adds leave the shared
 * counter alone while its own counters are below it. */
START_TEST(test_conservative_update)
{
	struct admit_cbf *f = make(10, 0.1); /* one block */
	uint64_t a[CBF_MAX_HASHES], b[CBF_MAX_HASHES];
	unsigned k = admit_cbf_hashes(f);
	uint64_t bkey = 1, shared = UINT64_MAX;

	ck_assert_uint_eq(admit_cbf_counters(f), BLOCK);
	cbf_counter_indexes(f, KEY(0), a);
	for (; shared == UINT64_MAX; bkey++) {
		cbf_counter_indexes(f, KEY(bkey), b);
		for (unsigned i = 0; i < k; i++)
			for (unsigned j = 0; j < k; j++)
				if (a[i] == b[j] && shared == UINT64_MAX)
					shared = a[i];
		/* b must also own a counter a does not. */
		for (unsigned j = 0; j < k && shared != UINT64_MAX; j++) {
			bool in_a = false;

			for (unsigned i = 0; i < k; i++)
				in_a |= a[i] == b[j];
			if (!in_a)
				goto found;
		}
		shared = UINT64_MAX;
	}
	ck_abort_msg("no key shares a counter with key 0");
found:
	for (int i = 0; i < 4; i++)
		admit_cbf_add(f, KEY(0));
	for (unsigned i = 1; i <= 4; i++) {
		admit_cbf_add(f, KEY(bkey));
		ck_assert_uint_eq(admit_cbf_estimate(f, KEY(bkey)), i);
		/* A plain counting Bloom filter would have it at 4 + i. */
		ck_assert_uint_eq(cbf_counter_get(f, shared), 4);
	}
	admit_cbf_add(f, KEY(bkey));
	ck_assert_uint_eq(cbf_counter_get(f, shared), 5);
	ck_assert_uint_eq(admit_cbf_estimate(f, KEY(0)), 4);
	admit_cbf_free(f);
}
END_TEST

START_TEST(test_saturation_and_aging)
{
	struct admit_cbf *f = make(1000, 0.01);

	for (unsigned i = 1; i <= 40; i++) {
		admit_cbf_add(f, "hot", 3);
		ck_assert_uint_eq(admit_cbf_estimate(f, "hot", 3), i < 15 ? i : 15);
	}
	/* Saturated counters have lost their true value: remove leaves them. */
	ck_assert_int_eq(admit_cbf_remove(f, "hot", 3), ADMIT_OK);
	ck_assert_uint_eq(admit_cbf_estimate(f, "hot", 3), 15);
	ck_assert_int_eq(admit_cbf_halve(f), ADMIT_OK);
	ck_assert_uint_eq(admit_cbf_estimate(f, "hot", 3), 7);
	ck_assert_int_eq(admit_cbf_remove(f, "hot", 3), ADMIT_OK);
	ck_assert_uint_eq(admit_cbf_estimate(f, "hot", 3), 6);
	admit_cbf_halve(f);
	admit_cbf_halve(f);
	ck_assert_uint_eq(admit_cbf_estimate(f, "hot", 3), 1);
	ck_assert(admit_cbf_contains(f, "hot", 3));
	admit_cbf_halve(f);
	ck_assert(!admit_cbf_contains(f, "hot", 3));
	ck_assert_int_eq(admit_cbf_remove(f, "hot", 3), ADMIT_NOTFOUND);

	for (int i = 0; i < 3; i++)
		admit_cbf_add(f, "warm", 4);
	ck_assert_int_eq(admit_cbf_clear(f), ADMIT_OK);
	ck_assert_uint_eq(admit_cbf_estimate(f, "warm", 4), 0);
	for (uint64_t i = 0; i < admit_cbf_counters(f); i++)
		ck_assert_uint_eq(cbf_counter_get(f, i), 0);
	admit_cbf_free(f);
}
END_TEST

/* ---- threads ------------------------------------------------------------ */

#define THREADS 4
#define PER_THREAD 20000
#define ADDS 3

struct worker {
	struct admit_cbf *f;
	int id;
	uint64_t reads;
};

/* Disjoint keys per thread, each added ADDS times, with every thread's adds
 * interleaved with reads of the others' keys.  Keys of different threads
 * share counters constantly; no add may be lost. */
static void *
adder(void *arg)
{
	struct worker *w = arg;

	for (int round = 0; round < ADDS; round++)
		for (uint64_t i = 0; i < PER_THREAD; i++) {
			admit_cbf_add(w->f, KEY(w->id * PER_THREAD + i));
			w->reads += admit_cbf_estimate(w->f, KEY(((uint64_t)w->id + 1) %
			                               THREADS * PER_THREAD + i));
		}
	return NULL;
}

START_TEST(test_threads)
{
	/* Sized for a quarter of the keys: crowded blocks, many shared words. */
	struct admit_cbf *f = make(THREADS * PER_THREAD / 4, 0.01);
	struct worker w[THREADS];
	pthread_t th[THREADS];
	struct tally low = TALLY_INIT;

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ f, i, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, adder, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (uint64_t i = 0; i < THREADS * PER_THREAD; i++)
		tally(&low, admit_cbf_estimate(f, KEY(i)) >= ADDS, i);
	ck_assert_tally(low, "keys counted fewer than their adds");
	admit_cbf_free(f);
}
END_TEST

static void *
ager(void *arg)
{
	struct admit_cbf *f = arg;

	for (int i = 0; i < 200; i++) {
		admit_cbf_halve(f);
		if (i % 50 == 49)
			admit_cbf_clear(f);
	}
	return NULL;
}

static void *
churner(void *arg)
{
	struct worker *w = arg;

	for (uint64_t i = 0; i < 50000; i++) {
		uint64_t key = (i * 7 + (uint64_t)w->id) % 3000;

		if (i % 3 == 2)
			admit_cbf_remove(w->f, KEY(key));
		else
			admit_cbf_add(w->f, KEY(key));
		w->reads += admit_cbf_contains(w->f, KEY(key));
	}
	return NULL;
}

/* Everything at once: a smoke test for ThreadSanitizer.  Afterwards the
 * filter must still behave: one more halve leaves no counter above 7, and
 * clear leaves every counter at 0. */
START_TEST(test_threads_mixed)
{
	struct admit_cbf *f = make(1000, 0.01);
	struct worker w[THREADS];
	pthread_t th[THREADS], age;
	struct tally bad = TALLY_INIT;

	ck_assert_int_eq(pthread_create(&age, NULL, ager, f), 0);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ f, i, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, churner, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_join(age, NULL);
	admit_cbf_halve(f);
	for (uint64_t i = 0; i < admit_cbf_counters(f); i++)
		tally(&bad, cbf_counter_get(f, i) <= 7, i);
	admit_cbf_clear(f);
	for (uint64_t i = 0; i < admit_cbf_counters(f); i++)
		tally(&bad, cbf_counter_get(f, i) == 0, i);
	ck_assert_tally(bad, "counters after the run");
	admit_cbf_free(f);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cbf");
	TCase *tc = tcase_create("basic");
	TCase *big = tcase_create("statistics");
	TCase *thr = tcase_create("threads");

	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_sizing);
	tcase_add_loop_test(tc, test_matches_model, 0, 2);
	tcase_add_test(tc, test_conservative_update);
	tcase_add_test(tc, test_saturation_and_aging);
	suite_add_tcase(s, tc);
	tcase_add_loop_test(big, test_false_positive_rate, 0,
	                    sizeof(fprs) / sizeof(fprs[0]));
	tcase_set_timeout(big, 600);
	suite_add_tcase(s, big);
	tcase_add_test(thr, test_threads);
	tcase_add_test(thr, test_threads_mixed);
	tcase_set_timeout(thr, 600);
	suite_add_tcase(s, thr);

	return test_run(srunner_create(s));
}
