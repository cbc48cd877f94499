/*
 * Fault injection: for every k, failing the k-th allocation of creating,
 * loading or saving a filter gives ADMIT_NOMEM, leaves *out untouched, and
 * leaks nothing (the ASan build's LeakSanitizer checks that at exit, which
 * is why this suite runs without forking).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <admit/admit.h>

#include "alloc.h"
#include "testutil.h"

static char dir[] = "/tmp/admit-allocXXXXXX";
static char path[sizeof(dir) + 32];

static void
setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(strcpy(dir, "/tmp/admit-allocXXXXXX")));
	snprintf(path, sizeof(path), "%s/f.snap", dir);
}

static void
teardown(void)
{
	admit_alloc_fail_nth(0);
	unlink(path);
	rmdir(dir);
}

/* Creation and loading must fail cleanly for every injected k up to the
 * allocations a successful call makes, and succeed once k is past them. */
static const struct admit_cuckoo_config configs[] = {
	{ .capacity = 1000, .fingerprint_bits = 8, .seed = 1 },
	{ .capacity = 1000, .fingerprint_bits = 16, .seed = 2 },
	{ .capacity = 1000, .counting = true, .seed = 3 },
	/* a table of 2 MiB or more takes the huge-page path */
	{ .capacity = 1u << 20, .fingerprint_bits = 16, .stripes = 64, .seed = 4 },
};

START_TEST(new_fails_cleanly)
{
	const struct admit_cuckoo_config *cfg = &configs[_i];
	struct admit_cuckoo *f = NULL, *sentinel = (struct admit_cuckoo *)&f;
	unsigned long n;

	admit_alloc_fail_nth(0);
	ck_assert_int_eq(admit_cuckoo_new(cfg, &f), ADMIT_OK);
	n = admit_alloc_fail_nth(0);
	admit_cuckoo_free(f);
	ck_assert_uint_ge(n, 2); /* the struct and its table at least */
	for (unsigned long k = 1; k <= n; k++) {
		f = sentinel;
		admit_alloc_fail_nth(k);
		ck_assert_int_eq(admit_cuckoo_new(cfg, &f), ADMIT_NOMEM);
		ck_assert_ptr_eq(f, sentinel);
	}
	admit_alloc_fail_nth(n + 1);
	ck_assert_int_eq(admit_cuckoo_new(cfg, &f), ADMIT_OK);
	admit_alloc_fail_nth(0);
	admit_cuckoo_free(f);
}
END_TEST

START_TEST(load_and_save_fail_cleanly)
{
	const struct admit_cuckoo_config *cfg = &configs[_i];
	struct admit_cuckoo *f, *g = NULL, *sentinel = (struct admit_cuckoo *)&g;
	unsigned long n;

	ck_assert_int_eq(admit_cuckoo_new(cfg, &f), ADMIT_OK);
	for (uint64_t i = 0; i < 500; i++)
		ck_assert_int_eq(admit_cuckoo_insert(f, KEY(i)), ADMIT_OK);

	admit_alloc_fail_nth(0);
	ck_assert_int_eq(admit_cuckoo_save(f, path), ADMIT_OK);
	n = admit_alloc_fail_nth(0);
	ck_assert_uint_ge(n, 1);
	for (unsigned long k = 1; k <= n; k++) {
		admit_alloc_fail_nth(k);
		ck_assert_int_eq(admit_cuckoo_save(f, path), ADMIT_NOMEM);
	}
	admit_alloc_fail_nth(0);

	ck_assert_int_eq(admit_cuckoo_load(path, &g), ADMIT_OK);
	n = admit_alloc_fail_nth(0);
	admit_cuckoo_free(g);
	ck_assert_uint_ge(n, 2);
	for (unsigned long k = 1; k <= n; k++) {
		g = sentinel;
		admit_alloc_fail_nth(k);
		ck_assert_int_eq(admit_cuckoo_load(path, &g), ADMIT_NOMEM);
		ck_assert_ptr_eq(g, sentinel);
	}
	admit_alloc_fail_nth(n + 1);
	ck_assert_int_eq(admit_cuckoo_load(path, &g), ADMIT_OK);
	admit_alloc_fail_nth(0);
	for (uint64_t i = 0; i < 500; i++)
		ck_assert(admit_cuckoo_contains(g, KEY(i)));
	admit_cuckoo_free(g);
	admit_cuckoo_free(f);
}
END_TEST

/* admit_lru's embedders' calls that allocate (set_expiring: the entry and
 * the shard's first wheel; compute: the new entry and the wheel) give
 * ADMIT_NOMEM with the key unchanged, or succeed, for every k. */
static enum admit_lru_verdict
store_new(struct admit_lru_update *up, void *arg)
{
	void *b = admit_lru_update_alloc(up, 3);

	if (!b)
		return ADMIT_LRU_STORE;  /* compute reports the failure */
	memcpy(b, "new", 3);
	up->expires = *(const uint64_t *)arg;
	return ADMIT_LRU_STORE;
}

START_TEST(lru_updates_fail_cleanly)
{
	struct admit_lru_config cfg = { .capacity = 100, .shards = 1, .seed = 5 };
	unsigned long nomem = 0;

	for (unsigned long k = 1; k <= 8; k++) {
		struct admit_lru *c;
		uint64_t when;
		enum admit_status st;
		char buf[8];
		size_t vlen;

		admit_alloc_fail_nth(0);
		ck_assert_int_eq(admit_lru_new(&cfg, &c), ADMIT_OK);
		ck_assert_int_eq(admit_lru_set(c, "a", 1, "old", 3), ADMIT_OK);
		when = _i == 2 ? 0 : admit_lru_now(c) + 3600000000000ull;
		admit_alloc_fail_nth(k);
		if (_i == 0)
			st = admit_lru_set_expiring(c, "a", 1, "new", 3, when);
		else
			st = admit_lru_compute(c, "a", 1, store_new, &when);
		admit_alloc_fail_nth(0);
		ck_assert_int_eq(admit_lru_get(c, "a", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
		if (st == ADMIT_NOMEM) {
			nomem++;
			ck_assert(vlen == 3 && memcmp(buf, "old", 3) == 0);
		} else {
			ck_assert_int_eq(st, ADMIT_OK);
			ck_assert(vlen == 3 && memcmp(buf, "new", 3) == 0);
		}
		admit_lru_free(c);
	}
	/* The entry, and the wheel where there is an expiry. */
	ck_assert_uint_eq(nomem, _i == 2 ? 1 : 2);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("alloc_fail");
	TCase *tc = tcase_create("every k");
	SRunner *sr;
	int n = (int)(sizeof(configs) / sizeof(configs[0]));

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, new_fails_cleanly, 0, n);
	tcase_add_loop_test(tc, load_and_save_fail_cleanly, 0, n);
	tcase_add_loop_test(tc, lru_updates_fail_cleanly, 0, 3);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	/* No fork: LeakSanitizer reports at the exit of this one process. */
	srunner_set_fork_status(sr, CK_NOFORK);
	return test_run(sr);
}
