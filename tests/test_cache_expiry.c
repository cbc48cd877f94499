/*
 * Unit tests for the cache's expiry (src/cache/expiry.h): a timed entry's
 * timer lives after its data and keeps its time; an entry is expired from
 * its time on, on the cache's clock; an advance drops exactly the entries
 * due, each once, and never one whose timer was removed.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cache/expiry.h"
#include "testutil.h"

#define MS UINT64_C(1000000)

static uint64_t now_ns;

static uint64_t
fake_clock(void *arg)
{
	(void)arg;
	return now_ns;
}

static struct entry *
timed_entry(size_t klen, size_t vlen)
{
	struct entry *e = calloc(1, admit_expiry_entry_size(klen, vlen, true));

	ck_assert_ptr_nonnull(e);
	admit_entry_set_meta(e, (uint32_t)klen);
	e->vlen = vlen;
	return e;
}

static unsigned dropped[8];

static void
drop(void *ctx, struct entry *e)
{
	(void)ctx;
	dropped[e->data[0]]++;
}

START_TEST(test_layout_and_expired)
{
	struct admit_clock k = { fake_clock, NULL };
	struct admit_expiry x = { 0 };
	struct entry *e = timed_entry(3, 5);

	ck_assert_uint_ge(admit_expiry_entry_size(3, 5, true),
	                  ADMIT_ENTRY_HEADER + 8 + sizeof(struct admit_expiry_timer));
	ck_assert_uint_eq(admit_expiry_entry_size(3, 5, false), ADMIT_ENTRY_HEADER + 8);
	ck_assert((char *)admit_expiry_timer_of(e) >= (char *)e->data + 8);
	ck_assert_uint_eq(admit_expiry_when(e), 0);
	now_ns = 1000 * MS;
	ck_assert(admit_expiry_add_locked(&x, &k, e, 2000 * MS));
	ck_assert(admit_entry_timed(e));
	ck_assert_uint_eq(admit_entry_klen(e), 3);
	ck_assert_uint_eq(admit_expiry_when(e), 2000 * MS);
	now_ns = 2000 * MS - 1;
	ck_assert(!admit_expiry_expired(&k, e));
	now_ns = 2000 * MS;
	ck_assert(admit_expiry_expired(&k, e));
	admit_expiry_remove_locked(e);
	admit_expiry_destroy(&x);
	free(e);
}
END_TEST

START_TEST(test_advance_drops_due)
{
	struct admit_clock k = { fake_clock, NULL };
	struct admit_expiry x = { 0 };
	struct entry *e[8];

	memset(dropped, 0, sizeof(dropped));
	now_ns = 0;
	ck_assert_uint_eq(admit_expiry_advance_locked(&x, &k, drop, NULL), 0);
	for (unsigned i = 0; i < 8; i++) {
		e[i] = timed_entry(1, 0);
		e[i]->data[0] = (unsigned char)i;
		/* Entry i due at i seconds. */
		ck_assert(admit_expiry_add_locked(&x, &k, e[i], (i + 1) * 1000 * MS));
	}
	admit_expiry_remove_locked(e[2]);
	now_ns = 4500 * MS;  /* entries 0..3 due; 2 removed */
	ck_assert_uint_eq(admit_expiry_advance_locked(&x, &k, drop, NULL), 3);
	ck_assert_uint_eq(dropped[0] + dropped[1] + dropped[3], 3);
	ck_assert_uint_eq(dropped[2] + dropped[4] + dropped[5], 0);
	now_ns = 100000 * MS;
	ck_assert_uint_eq(admit_expiry_advance_locked(&x, &k, drop, NULL), 4);
	for (unsigned i = 0; i < 8; i++)
		ck_assert_uint_eq(dropped[i], i != 2);
	admit_expiry_destroy(&x);
	for (unsigned i = 0; i < 8; i++)
		free(e[i]);
}
END_TEST

START_TEST(test_coarse_clock_moves)
{
	struct admit_clock k = { NULL, NULL };
	uint64_t a = admit_clock_now(&k);

	ck_assert_uint_gt(a, 0);
	ck_assert_uint_ge(admit_clock_now(&k), a);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cache_expiry");
	TCase *tc = tcase_create("expiry");

	tcase_add_test(tc, test_layout_and_expired);
	tcase_add_test(tc, test_advance_drops_due);
	tcase_add_test(tc, test_coarse_clock_moves);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
