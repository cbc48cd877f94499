/*
 * test_minisim.c - the miniature simulation (src/minisim.c): it moves to
 * the configuration whose mini cache hits most, stays put on a tie
 * (hysteresis), samples the expected share of keys for a large cache, and
 * keeps its memory bounded whatever the capacity.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "minisim.h"
#include "testutil.h"

static bool
never(void *ctx, bool steady, uint64_t cand, uint64_t victim)
{
	(void)ctx;
	(void)steady;
	(void)cand;
	(void)victim;
	return false;
}

static bool
always(void *ctx, bool steady, uint64_t cand, uint64_t victim)
{
	(void)ctx;
	(void)steady;
	(void)cand;
	(void)victim;
	return true;
}

static void
request(struct admit_minisim *m, uint64_t key)
{
	uint64_t h = test_key(key);

	if (admit_minisim_sampled(m, h))
		admit_minisim_get(m, h);
}

static void
request_real(struct admit_minisim *m, uint64_t key, bool real)
{
	uint64_t h = test_key(key);

	if (admit_minisim_sampled(m, h))
		admit_minisim_get_real(m, h, real);
}

START_TEST(test_bad_args)
{
	ck_assert_ptr_null(admit_minisim_new(0, 10, always, NULL));
	ck_assert_ptr_null(admit_minisim_new(10, 0, always, NULL));
	ck_assert_ptr_null(admit_minisim_new(10, 10, NULL, NULL));
	admit_minisim_free(NULL);
}
END_TEST

/* A sliding working set with a contest that never admits: every
 * configuration with admission keeps its first keys forever and stops
 * hitting; the cache must move to one without, or with a window that
 * holds the working set (200 keys). */
START_TEST(test_moves_to_best)
{
	struct admit_minisim *m = admit_minisim_new(500, 500, never, NULL);
	unsigned cur;

	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(admit_minisim_current(m), ADMIT_MINISIM_START);
	for (uint64_t i = 0; i < 200000; i++)
		request(m, i / 8 + test_key(i) % 200);
	cur = admit_minisim_current(m);
	ck_assert_msg(!admit_minisim_configs[cur].admission ||
	              admit_minisim_configs[cur].window_percent >= 50,
	              "stayed on configuration %u", cur);
	ck_assert_uint_ge(admit_minisim_switches(m), 1);
	/* The chosen one scores best, or within the hysteresis of it. */
	for (unsigned i = 0; i < ADMIT_MINISIM_N; i++)
		ck_assert_double_le(admit_minisim_score(m, i),
		                    admit_minisim_score(m, cur) +
		                    ADMIT_MINISIM_HYSTERESIS);
	admit_minisim_free(m);
}
END_TEST

/* Everything fits: every mini cache hits alike, and a tie never moves
 * the cache from the configuration the first reuse gave it. */
START_TEST(test_tie_stays)
{
	struct admit_minisim *m = admit_minisim_new(1000, 1000, always, NULL);

	ck_assert_ptr_nonnull(m);
	for (uint64_t i = 0; i < 100000; i++)
		request(m, i % 300);
	ck_assert_uint_eq(admit_minisim_current(m), ADMIT_MINISIM_REUSED);
	ck_assert_uint_eq(admit_minisim_switches(m), 1);
	ck_assert_double_gt(admit_minisim_score(m, 0), 0.9);
	admit_minisim_free(m);
}
END_TEST

/* The start: while no key is read twice (every get a first access), the
 * cache runs ADMIT_MINISIM_START whatever the gets; the first get that
 * hits in a mini cache moves it to ADMIT_MINISIM_REUSED. */
START_TEST(test_first_reuse)
{
	struct admit_minisim *m = admit_minisim_new(100, 100, always, NULL);

	ck_assert_ptr_nonnull(m);
	ck_assert_uint_ne(ADMIT_MINISIM_START, ADMIT_MINISIM_REUSED);
	for (uint64_t i = 0; i < 5000; i++)
		request(m, i);
	ck_assert_uint_eq(admit_minisim_current(m), ADMIT_MINISIM_START);
	ck_assert_uint_eq(admit_minisim_switches(m), 0);
	request(m, 4999);
	ck_assert_uint_eq(admit_minisim_current(m), ADMIT_MINISIM_REUSED);
	ck_assert_uint_eq(admit_minisim_switches(m), 1);
	admit_minisim_free(m);
}
END_TEST

/* A set of a key no get asked for (a load) ends the start at once; a set
 * that fills a get's miss does not, nor does a set of a key set before. */
START_TEST(test_unasked_set)
{
	struct admit_minisim *m = admit_minisim_new(100, 100, always, NULL);

	ck_assert_ptr_nonnull(m);
	for (uint64_t i = 0; i < 500; i++) {
		admit_minisim_get(m, test_key(i));
		ck_assert_uint_eq(admit_minisim_set(m, test_key(i), 1),
		                  ADMIT_MINISIM_START);
	}
	ck_assert_uint_eq(admit_minisim_switches(m), 0);
	ck_assert_uint_eq(admit_minisim_set(m, test_key(1000), 1),
	                  ADMIT_MINISIM_REUSED);
	ck_assert_uint_eq(admit_minisim_current(m), ADMIT_MINISIM_REUSED);
	ck_assert_uint_eq(admit_minisim_switches(m), 1);
	admit_minisim_free(m);
}
END_TEST

/* Ties go to a shadow: on a zigzag over 1,000 keys at 500 entries with a
 * contest that never admits, the pass after the first turn hits on the
 * keys just read in LRU, in the segmented LRU without admission and in
 * the configurations whose window holds them (50 %, 80 %), alike, and
 * far more than in LIRS; the first decision (1,250 gets in) takes LRU,
 * the shadow among them, which the next pass needs (the 50 % window,
 * first in the list, misses it). */
START_TEST(test_tie_takes_shadow)
{
	struct admit_minisim *m = admit_minisim_new(500, 500, never, NULL);

	ck_assert_ptr_nonnull(m);
	for (uint64_t i = 0; i < 1300; i++)
		request(m, i < 1000 ? i : 1999 - i);
	ck_assert_uint_eq(admit_minisim_current(m), ADMIT_MINISIM_LRU);
	admit_minisim_free(m);
}
END_TEST

/* A loop one key longer than the cache: LRU never hits, LIRS and the
 * configurations with admission that keep their residents do; the cache
 * stays off LRU. */
START_TEST(test_loop_avoids_lru)
{
	struct admit_minisim *m = admit_minisim_new(200, 200, never, NULL);

	ck_assert_ptr_nonnull(m);
	for (uint64_t i = 0; i < 100000; i++)
		request(m, i % 201);
	ck_assert_double_eq_tol(admit_minisim_score(m, ADMIT_MINISIM_LRU), 0,
	                        1e-9);
	ck_assert_uint_ne(admit_minisim_current(m), ADMIT_MINISIM_LRU);
	ck_assert_double_gt(admit_minisim_score(m, admit_minisim_current(m)), 0.9);
	admit_minisim_free(m);
}
END_TEST

/* Large caches are sampled so that each mini cache holds at most
 * ADMIT_MINISIM_MAX_ENTRIES: the share of keys sampled is that over the
 * capacity, and the memory stays the same whatever the capacity. */
START_TEST(test_sampling_and_memory)
{
	uint64_t cap = 131072, in = 0, n = 1000000;
	struct admit_minisim *m = admit_minisim_new(cap, cap, always, NULL);
	struct admit_minisim *big = admit_minisim_new(cap << 8, cap << 8,
	                                              always, NULL);
	struct admit_minisim *small = admit_minisim_new(100, 100, always, NULL);
	double rate = (double)ADMIT_MINISIM_MAX_ENTRIES / (double)cap;

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(big);
	ck_assert_ptr_nonnull(small);
	for (uint64_t i = 0; i < n; i++)
		in += admit_minisim_sampled(m, test_key(i));
	ck_assert_double_eq_tol((double)in / (double)n, rate, rate * 0.05);
	for (uint64_t i = 0; i < 1000; i++)
		ck_assert(admit_minisim_sampled(small, test_key(i)));
	/* About 7.85 bytes per entry of the cache at 131072 entries (eleven
	 * mini caches, two of them with ghosts): with the two sketches of
	 * the sampled requests, 9.0, under a tenth of an entry's metadata
	 * (64 bytes of entry, about 35 of TinyLFU). */
	ck_assert_double_le((double)admit_minisim_bytes(m) / (double)cap, 7.9);
	ck_assert_uint_eq(admit_minisim_bytes(m), admit_minisim_bytes(big));
	admit_minisim_free(m);
	admit_minisim_free(big);
	admit_minisim_free(small);
}
END_TEST

/* Byte weights: a set corrects the guessed weight of a filled miss, and
 * a key heavier than a mini cache is dropped at once, never held. */
START_TEST(test_weights)
{
	struct admit_minisim *m = admit_minisim_new(1000, 10, always, NULL);

	ck_assert_ptr_nonnull(m);
	for (uint64_t i = 0; i < 20000; i++) {
		uint64_t h = test_key(i % 50);

		if (admit_minisim_get(m, h) >= ADMIT_MINISIM_N)
			ck_abort_msg("bad configuration index");
		admit_minisim_set(m, h, i % 7 == 0 ? 5000 : 1 + i % 300);
	}
	for (unsigned i = 0; i < ADMIT_MINISIM_N; i++)
		ck_assert_double_le(admit_minisim_score(m, i), 1.0);
	admit_minisim_free(m);
}
END_TEST

/* The check of a switch: a real cache whose hits fall to nothing once it
 * leaves its start gets the start back; one that does as well as before
 * keeps the move. */
static unsigned
run_real(bool worse)
{
	struct admit_minisim *m = admit_minisim_new(500, 500, never, NULL);
	unsigned undone;

	ck_assert_ptr_nonnull(m);
	for (uint64_t i = 0; i < 100000; i++) {
		uint64_t h = test_key(i / 8 + test_key(i) % 200);
		bool real = !worse || admit_minisim_current(m) == ADMIT_MINISIM_START;

		admit_minisim_get_real(m, h, real);
	}
	ck_assert_uint_ge(admit_minisim_switches(m), 1);
	/* Undone by the check, or by the guard, which moves the real cache
	 * to a shadow's configuration when it trails the shadow. */
	undone = (unsigned)(admit_minisim_undone(m) + admit_minisim_guarded(m));
	admit_minisim_free(m);
	return undone;
}

START_TEST(test_undo)
{
	ck_assert_uint_ge(run_real(true), 1);
	ck_assert_uint_eq(run_real(false), 0);
}
END_TEST

/* The guard: on a zigzag over 1,000 keys at 900 entries, where LRU's
 * mini cache scores well above LIRS's (the configuration of the first
 * reuse) from the first turn on, a real cache that hits only as LRU does
 * (a key read within the last 900 gets) and only while it runs a
 * shadow's configuration (W-TinyLFU 1 %, LRU) trails LRU's shadow from
 * the turn and is moved to one before the first decision could (1,250
 * gets in), and stays; one that hits on every get is never moved by the
 * guard. */
static struct admit_minisim *
run_guarded(bool only_shadows)
{
	struct admit_minisim *m = admit_minisim_new(900, 900, always, NULL);
	static uint64_t last[1000];

	ck_assert_ptr_nonnull(m);
	for (uint64_t i = 0; i < 30000; i++) {
		unsigned cur = admit_minisim_current(m);
		uint64_t k = i % 2000 < 1000 ? i % 2000 : 1999 - i % 2000;
		bool lru_hit = i >= 1000 && i - last[k] <= 900;
		bool real = !only_shadows || (lru_hit &&
		            (cur == ADMIT_MINISIM_LRU ||
		             cur == ADMIT_MINISIM_WTINYLFU));

		last[k] = i;
		admit_minisim_get_real(m, test_key(k), real);
		if (only_shadows && i == 1249)
			ck_assert_uint_ge(admit_minisim_guarded(m), 1);
	}
	return m;
}

START_TEST(test_guard)
{
	struct admit_minisim *m = run_guarded(true);
	unsigned cur = admit_minisim_current(m);

	ck_assert(cur == ADMIT_MINISIM_LRU || cur == ADMIT_MINISIM_WTINYLFU);
	admit_minisim_free(m);
	m = run_guarded(false);
	ck_assert_uint_eq(admit_minisim_guarded(m), 0);
	admit_minisim_free(m);
}
END_TEST

/* The guard on a sampled cache (3,600 entries: about 57 % of the keys
 * sampled): the same zigzag, over 4,000 keys.  A real cache that hits
 * only while it runs a shadow's configuration is moved to one; one that
 * hits on every sampled get is never moved. */
static struct admit_minisim *
run_guarded_sampled(bool only_shadows)
{
	struct admit_minisim *m = admit_minisim_new(3600, 3600, always, NULL);
	static uint64_t last[4000];

	ck_assert_ptr_nonnull(m);
	ck_assert_uint_ne(admit_minisim_threshold(m), UINT64_MAX);
	for (uint64_t i = 0; i < 120000; i++) {
		unsigned cur = admit_minisim_current(m);
		uint64_t k = i % 8000 < 4000 ? i % 8000 : 7999 - i % 8000;
		bool lru_hit = i >= 4000 && i - last[k] <= 3600;
		bool real = !only_shadows || (lru_hit &&
		            (cur == ADMIT_MINISIM_LRU ||
		             cur == ADMIT_MINISIM_WTINYLFU));
		uint64_t h = test_key(k);

		last[k] = i;
		if (admit_minisim_sampled(m, h))
			admit_minisim_get_real(m, h, real);
	}
	return m;
}

START_TEST(test_guard_sampled)
{
	struct admit_minisim *m = run_guarded_sampled(true);
	unsigned cur = admit_minisim_current(m);

	ck_assert_uint_ge(admit_minisim_guarded(m), 1);
	ck_assert(cur == ADMIT_MINISIM_LRU || cur == ADMIT_MINISIM_WTINYLFU);
	admit_minisim_free(m);
	m = run_guarded_sampled(false);
	ck_assert_uint_eq(admit_minisim_guarded(m), 0);
	admit_minisim_free(m);
}
END_TEST

/* gets requests of a zigzag over keys 0..3,999 (forwards, then
 * backwards) on m, a sampled cache of 3,600 entries, where the real
 * cache hits only as LRU does and only while it runs a shadow's
 * configuration; then checks the guard has moved it to a shadow. */
static void
zigzag_to_shadow(struct admit_minisim *m, uint64_t gets)
{
	static uint64_t last[4000];

	memset(last, 0, sizeof(last));
	for (uint64_t i = 0; i < gets; i++) {
		unsigned cur = admit_minisim_current(m);
		uint64_t k = i % 8000 < 4000 ? i % 8000 : 7999 - i % 8000;
		bool lru_hit = i >= 4000 && i - last[k] <= 3600;

		last[k] = i;
		request_real(m, k, lru_hit && (cur == ADMIT_MINISIM_LRU ||
		                               cur == ADMIT_MINISIM_WTINYLFU));
	}
	ck_assert_uint_ge(admit_minisim_guarded(m), 1);
	ck_assert(admit_minisim_current(m) == ADMIT_MINISIM_LRU ||
	          admit_minisim_current(m) == ADMIT_MINISIM_WTINYLFU);
}

/* The move's cost in the guard (a sampled cache, 3,600 entries): a real
 * cache that hit every get on a hot set of 1,500 keys runs well ahead of
 * both shadows; then a zigzag over 4,000 other keys, where the real
 * cache hits only as LRU does and only while it runs a shadow's
 * configuration.  The shadows' mini caches gain on the configuration the
 * cache runs (LIRS, from the first reuse) from the zigzag's first turn,
 * and each of those hits is a key the real cache will lack after a move
 * to a shadow: counted as owed, they have the guard move the cache to a
 * shadow by the 5,200th get of the zigzag (at the 4,868th); on the lead
 * over the shadows alone it waits for the lead the hot set gave the real
 * cache to run out, and decide() moves first (at the 5,465th). */
START_TEST(test_guard_owed)
{
	struct admit_minisim *m = admit_minisim_new(3600, 3600, always, NULL);
	struct prng r = { 1 };
	uint64_t i;

	ck_assert_ptr_nonnull(m);
	for (i = 0; i < 40000; i++)
		request_real(m, 100000 + prng_below(&r, 1500), true);
	ck_assert_uint_eq(admit_minisim_guarded(m), 0);
	zigzag_to_shadow(m, 5200);
	admit_minisim_free(m);
}
END_TEST

/* A lead on the stretch that ends now lets the guard's move out of LIRS
 * past the decayed scores (a sampled cache, 3,600 entries): ten passes
 * of a loop over 4,000 keys, where LIRS hits 85 % and both shadows and
 * the real cache miss every get, then a zigzag over 4,000 other keys,
 * where the real cache hits only as LRU does and only while it runs a
 * shadow's configuration.  The decayed scores still hold the loop, and
 * LIRS's lead there holds the move off past the zigzag's fifth pass;
 * the shadows' mini caches lead LIRS's from the zigzag's first turn,
 * beyond chance, and the guard moves the cache to a shadow within the
 * second pass's first 100 gets (at the 53rd). */
START_TEST(test_guard_owed_leads)
{
	struct admit_minisim *m = admit_minisim_new(3600, 3600, always, NULL);
	uint64_t i;

	ck_assert_ptr_nonnull(m);
	ck_assert_uint_ne(admit_minisim_threshold(m), UINT64_MAX);
	for (i = 0; i < 40000; i++)
		request_real(m, 100000 + i % 4000, false);
	ck_assert_uint_eq(admit_minisim_current(m), ADMIT_MINISIM_LIRS);
	ck_assert_double_gt(admit_minisim_score(m, ADMIT_MINISIM_LIRS), 0.8);
	ck_assert_uint_eq(admit_minisim_guarded(m), 0);
	zigzag_to_shadow(m, 4100);
	admit_minisim_free(m);
}
END_TEST

/* An exact count of the sampled requests for the contest, by hash (a
 * test's stand-in for TinyLFU's sketch): a candidate is admitted when
 * read more often than the victim. */
#define COUNTS (1u << 20)
static uint64_t count_key[COUNTS];
static uint32_t count_of[COUNTS];

static uint32_t *
count_slot(uint64_t h)
{
	uint32_t i = (uint32_t)(h >> 40) & (COUNTS - 1);

	while (count_key[i] && count_key[i] != h)
		i = (i + 1) & (COUNTS - 1);
	count_key[i] = h;
	return &count_of[i];
}

static bool
counting(void *ctx, bool steady, uint64_t cand, uint64_t victim)
{
	(void)ctx;
	(void)steady;
	return *count_slot(cand) > *count_slot(victim);
}

static void
request_counted(struct admit_minisim *m, uint64_t key, bool real)
{
	uint64_t h = test_key(key);

	if (admit_minisim_sampled(m, h)) {
		(*count_slot(h))++;
		admit_minisim_get_real(m, h, real);
	}
}

/* The guard's move within a family when the real cache trails a shadow
 * since the last switch (a sampled cache, 3,600 entries, a contest by
 * exact counts).  First, a hot set of 1,200 keys read every tenth get
 * and pairs of reads of new keys 1,500 gets apart: the 50 % window holds
 * both and leads, and the cache moves there (the real cache hits as it
 * does).  Then a loop over 1,500 keys that every configuration holds,
 * and, every 125th get, a key read again 500 new keys after it first was,
 * which LRU holds and the 50 % window does not: LRU's mini cache leads
 * by 0.4 point, under decide()'s margin, and the cache stays.  Then the
 * real cache misses every get of a loop every mini cache hits: it trails
 * LRU since it came to the 50 % window, LRU scores as well, and the
 * guard moves it to LRU within 2,000 gets; with the veto's lead asked
 * (ADMIT_MINISIM_GUARD_TRAILS 0) it stays. */
START_TEST(test_guard_trails)
{
	struct admit_minisim *m = admit_minisim_new(3600, 3600, counting, NULL);
	uint64_t i, pairs = 0, guarded;
	unsigned cur;

	ck_assert_ptr_nonnull(m);
	ck_assert_uint_ne(admit_minisim_threshold(m), UINT64_MAX);
	for (i = 0; i < 30000; i++) {
		if (i % 10 == 0)
			request_counted(m, i / 10 % 1200, i >= 12000);
		else if (pairs++ % 2 == 0 || pairs / 2 < 675)
			request_counted(m, 1000000 + pairs / 2, false);
		else
			request_counted(m, 1000000 + pairs / 2 - 675, true);
	}
	cur = admit_minisim_current(m);
	ck_assert_uint_eq(admit_minisim_configs[cur].window_percent, 50);
	for (i = 0; i < 150000; i++) {
		uint64_t e = i / 125;

		if (i % 125 != 0)
			request_counted(m, 2000000 + i % 1500, i >= 1500);
		else if (e % 2 == 0 || e / 2 < 500)
			request_counted(m, 3000000 + e / 2, false);
		else
			request_counted(m, 3000000 + e / 2 - 500, false);
	}
	ck_assert_uint_eq(admit_minisim_current(m), cur);
	ck_assert_double_ge(admit_minisim_score(m, ADMIT_MINISIM_LRU),
	                    admit_minisim_score(m, cur));
	guarded = admit_minisim_guarded(m);
	for (i = 0; i < 2000; i++)
		request_counted(m, 4000000 + i % 300, false);
	ck_assert_uint_eq(admit_minisim_current(m), ADMIT_MINISIM_LRU);
	ck_assert_uint_eq(admit_minisim_guarded(m), guarded + 1);
	admit_minisim_free(m);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("minisim");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_bad_args);
	tcase_add_test(tc, test_moves_to_best);
	tcase_add_test(tc, test_tie_stays);
	tcase_add_test(tc, test_first_reuse);
	tcase_add_test(tc, test_unasked_set);
	tcase_add_test(tc, test_tie_takes_shadow);
	tcase_add_test(tc, test_loop_avoids_lru);
	tcase_add_test(tc, test_sampling_and_memory);
	tcase_add_test(tc, test_weights);
	tcase_add_test(tc, test_undo);
	tcase_add_test(tc, test_guard);
	tcase_add_test(tc, test_guard_sampled);
	tcase_add_test(tc, test_guard_owed);
	tcase_add_test(tc, test_guard_owed_leads);
	tcase_add_test(tc, test_guard_trails);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
