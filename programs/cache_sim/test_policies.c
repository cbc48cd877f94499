/*
 * Unit tests for programs/cache_sim/peers.c and workload.c: the policies
 * against hand-worked traces and against what follows from their papers
 * (no more hits than OPT, only cold misses when everything fits, FIFO-like
 * policies score 0 on a loop, LIRS nearly OPT there), and the shape of the
 * built-in workloads.  test_peers.sh checks the figures against libCacheSim
 * on the shared traces; this runs everywhere, sanitizer builds included.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "peers.h"
#include "testutil.h"
#include "trace.h"
#include "workload.h"

static const enum peer_policy all[] = { PEER_ARC, PEER_LIRS, PEER_S3FIFO,
                                        PEER_SIEVE, PEER_2Q, PEER_CLOCK };
#define NALL (sizeof(all) / sizeof(all[0]))

/* Hits of policy p on keys[0..n) at size. */
static uint64_t
hits_of(enum peer_policy p, const uint64_t *keys, size_t n, uint64_t size)
{
	uint32_t *ids, distinct;
	uint64_t h;

	ck_assert_int_eq(peer_dense_ids(keys, n, &ids, &distinct), 0);
	h = peer_hits(p, ids, n, distinct, size);
	free(ids);
	ck_assert_uint_ne(h, UINT64_MAX);
	return h;
}

/* Letters as keys: "ABCA" -> 'A', 'B', 'C', 'A'. */
static uint64_t
hits_of_str(enum peer_policy p, const char *s, uint64_t size)
{
	uint64_t keys[64];
	size_t n = strlen(s);

	ck_assert_uint_le(n, 64);
	for (size_t i = 0; i < n; i++)
		keys[i] = (uint64_t)s[i];
	return hits_of(p, keys, n, size);
}

START_TEST(test_dense_ids)
{
	const uint64_t keys[] = { 50, 7, 50, 1u << 31, 7, UINT64_MAX, 0 };
	const uint32_t want[] = { 2, 1, 2, 3, 1, 4, 0 };
	uint32_t *ids, distinct;

	ck_assert_int_eq(peer_dense_ids(keys, 7, &ids, &distinct), 0);
	ck_assert_uint_eq(distinct, 5);
	for (size_t i = 0; i < 7; i++)
		ck_assert_uint_eq(ids[i], want[i]);
	free(ids);
	ck_assert_int_eq(peer_dense_ids(keys, 0, &ids, &distinct), 0);
	ck_assert_uint_eq(distinct, 0);
	ck_assert_uint_eq(peer_hits(PEER_ARC, ids, 0, 0, 10), 0);
	free(ids);
	/* An empty trace reaches here with no key array at all. */
	ck_assert_int_eq(peer_dense_ids(NULL, 0, &ids, &distinct), 0);
	ck_assert_uint_eq(distinct, 0);
	for (size_t i = 0; i < NALL; i++)
		ck_assert_uint_eq(peer_hits(all[i], ids, 0, 0, 10), 0);
	free(ids);
}
END_TEST

/* CLOCK moves a second-chance entry to the head; SIEVE leaves it where it
 * is and keeps its hand there, so A survives D, E and F in SIEVE only. */
START_TEST(test_sieve_and_clock_by_hand)
{
	ck_assert_uint_eq(hits_of_str(PEER_SIEVE, "ABCADEFA", 3), 2);
	ck_assert_uint_eq(hits_of_str(PEER_CLOCK, "ABCADEFA", 3), 1);
}
END_TEST

/* A and B, seen twice, outlive a scan of six new keys in a cache of four
 * under ARC (they are in T2 and p stays 0) and LIRS (they are LIR); 2Q
 * ignores a second hit while a key is still in A1in, so the scan pushes
 * them through A1out and out. */
START_TEST(test_scan_resistance_by_hand)
{
	const char *s = "ABABCDEFGHAB";

	ck_assert_uint_eq(hits_of_str(PEER_ARC, s, 4), 4);
	ck_assert_uint_eq(hits_of_str(PEER_LIRS, s, 4), 4);
	ck_assert_uint_eq(hits_of_str(PEER_2Q, s, 4), 2);
}
END_TEST

/* A random trace of 20,000 requests over 200 keys: with room for every
 * key, only the first request of each misses; with less room, no policy
 * beats Belady's OPT. */
START_TEST(test_bounds)
{
	enum peer_policy p = all[_i];
	size_t n = 20000;
	uint64_t *keys = malloc(n * sizeof(*keys)), rng = 7;
	static const uint64_t sizes[] = { 1, 2, 10, 20, 50, 100, 199 };

	ck_assert_ptr_nonnull(keys);
	for (size_t i = 0; i < n; i++) {
		/* Skewed: the low keys come up more often. */
		uint64_t r = test_key(rng++);

		keys[i] = (r % 200) * (r >> 63) + (r % 20) * !(r >> 63);
	}
	{
		uint32_t *ids, distinct;

		ck_assert_int_eq(peer_dense_ids(keys, n, &ids, &distinct), 0);
		free(ids);
		ck_assert_uint_le(distinct, 200);
		ck_assert_uint_eq(hits_of(p, keys, n, 256), n - distinct);
	}
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		ck_assert_uint_le(hits_of(p, keys, n, sizes[k]),
		                  trace_opt_hits(keys, n, sizes[k]));
	free(keys);
}
END_TEST

/* scan-repeat: 25 passes over the same 1,000 keys.  CLOCK and SIEVE never
 * see a hit before the key is gone (FIFO on a loop), so they score 0; LIRS
 * keeps a fixed LIR set, nearly OPT. */
START_TEST(test_loop)
{
	size_t n;
	uint64_t *keys = workload_keys(WORKLOAD_SCAN_REPEAT, 1, &n);
	static const uint64_t sizes[] = { 250, 500 };

	ck_assert_ptr_nonnull(keys);
	for (size_t k = 0; k < 2; k++) {
		uint64_t opt = trace_opt_hits(keys, n, sizes[k]);

		ck_assert_uint_eq(hits_of(PEER_CLOCK, keys, n, sizes[k]), 0);
		ck_assert_uint_eq(hits_of(PEER_SIEVE, keys, n, sizes[k]), 0);
		ck_assert_uint_ge(hits_of(PEER_LIRS, keys, n, sizes[k]) * 100, opt * 95);
	}
	free(keys);
}
END_TEST

/* zigzag: each pass after the first starts with the last C keys of the pass
 * before, so the cache that keeps the C most recent keys (LRU, and CLOCK and
 * SIEVE, which degenerate to FIFO here) hits 24 x C, the optimum. */
START_TEST(test_zigzag)
{
	size_t n;
	uint64_t *keys = workload_keys(WORKLOAD_ZIGZAG, 1, &n), sizes[4];

	ck_assert_ptr_nonnull(keys);
	ck_assert_int_eq(workload_sizes(WORKLOAD_ZIGZAG, sizes, 4), 2);
	ck_assert_uint_eq(sizes[0], 250);
	ck_assert_uint_eq(sizes[1], 500);
	for (size_t k = 0; k < 2; k++) {
		ck_assert_uint_eq(trace_opt_hits(keys, n, sizes[k]), 24 * sizes[k]);
		ck_assert_uint_eq(hits_of(PEER_CLOCK, keys, n, sizes[k]), 24 * sizes[k]);
		ck_assert_uint_eq(hits_of(PEER_SIEVE, keys, n, sizes[k]), 24 * sizes[k]);
	}
	free(keys);
}
END_TEST

START_TEST(test_workload_shapes)
{
	size_t n;
	uint64_t *keys = workload_keys(WORKLOAD_ZIGZAG, 1, &n);

	ck_assert_ptr_nonnull(keys);
	ck_assert_uint_eq(n, 25000);
	/* Pass 1 is pass 0 backwards, pass 2 is pass 0 again. */
	for (size_t k = 0; k < 1000; k++) {
		ck_assert_uint_eq(keys[1000 + k], keys[999 - k]);
		ck_assert_uint_eq(keys[2000 + k], keys[k]);
	}
	free(keys);
	keys = workload_keys(WORKLOAD_SCAN_HOT, 1, &n);
	ck_assert_ptr_nonnull(keys);
	ck_assert_uint_eq(n, 500000);
	/* A scan of 5,000 one-off keys half way through each 25,000. */
	for (size_t k = 1; k < 5000; k++)
		ck_assert_uint_eq(keys[12500 + k], keys[12500] + k);
	free(keys);
	ck_assert_int_eq(workload_parse("zigzag"), WORKLOAD_ZIGZAG);
	ck_assert_int_eq(workload_parse("web"), WORKLOAD_WEB);
	ck_assert_int_eq(workload_parse("zipf-scans"), WORKLOAD_ZIPF_SCANS);
	ck_assert_int_eq(workload_parse("zig"), WORKLOAD_UNKNOWN);
	ck_assert_int_eq(workload_parse(NULL), WORKLOAD_UNKNOWN);
	ck_assert_str_eq(workload_label(WORKLOAD_ZIPF_SCANS), "builtin-zipf0.9+scans");
	ck_assert_ptr_null(workload_keys(WORKLOAD_UNKNOWN, 1, &n));
}
END_TEST

/* The generated shapes: a function of the seed alone, another seed
 * another sequence; zigzag-near's passes are each a permutation of the
 * same 1,000 keys; recency's and web's sizes as said. */
static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static uint64_t
distinct(const uint64_t *keys, size_t n)
{
	uint64_t *c = malloc(n * sizeof(*c)), d = 0;

	ck_assert_ptr_nonnull(c);
	memcpy(c, keys, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_u64);
	for (size_t i = 0; i < n; i++)
		d += i == 0 || c[i] != c[i - 1];
	free(c);
	return d;
}

START_TEST(test_generated_shapes)
{
	static const enum workload ws[] = { WORKLOAD_ZIGZAG_NEAR, WORKLOAD_RECENCY,
	                                    WORKLOAD_WEB };
	static const size_t len[] = { 30000, 200000, 1000000 };

	for (size_t w = 0; w < 3; w++) {
		size_t n1, n2, n3, same = 0;
		uint64_t *a = workload_keys(ws[w], 1, &n1);
		uint64_t *b = workload_keys(ws[w], 1, &n2);
		uint64_t *c = workload_keys(ws[w], 2, &n3);

		ck_assert(a && b && c);
		ck_assert_uint_eq(n1, len[w]);
		ck_assert_uint_eq(n2, n1);
		ck_assert_uint_eq(n3, n1);
		ck_assert_mem_eq(a, b, n1 * sizeof(*a));
		for (size_t i = 0; i < n1; i++)
			same += a[i] == c[i];
		ck_assert_uint_lt(same, n1 / 100);
		if (ws[w] == WORKLOAD_ZIGZAG_NEAR) {
			ck_assert_uint_eq(distinct(a, n1), 1000);
			ck_assert_uint_eq(distinct(a, 1000), 1000);
			ck_assert_uint_eq(distinct(a + 1000, 1000), 1000);
			/* Forwards, then backwards: pass 1 starts near pass
			 * 0's end. */
			ck_assert(a[1000] == a[999] || a[1000] == a[998] ||
			          a[1001] == a[999]);
		} else if (ws[w] == WORKLOAD_RECENCY) {
			/* A new key about one request in five. */
			ck_assert_uint_gt(distinct(a, n1), n1 / 6);
			ck_assert_uint_lt(distinct(a, n1), n1 / 4);
		} else {
			/* 30 % one-off keys and a Zipf tail. */
			ck_assert_uint_gt(distinct(a, n1), n1 * 3 / 10);
		}
		free(a);
		free(b);
		free(c);
	}
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("policies");
	TCase *tc = tcase_create("peers");

	tcase_add_test(tc, test_dense_ids);
	tcase_add_test(tc, test_sieve_and_clock_by_hand);
	tcase_add_test(tc, test_scan_resistance_by_hand);
	tcase_add_loop_test(tc, test_bounds, 0, NALL);
	tcase_add_test(tc, test_loop);
	tcase_add_test(tc, test_zigzag);
	tcase_add_test(tc, test_workload_shapes);
	tcase_add_test(tc, test_generated_shapes);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
