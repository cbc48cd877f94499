/*
 * Unit tests for the seqlock stripes of src/stripe.h: the writer's
 * lock/unlock, and the reader (begin/end, one try, the read loop) against
 * writers simulated in between its steps, one thread, deterministic.
 */
#include <check.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "stripe.h"
#include "testutil.h"

START_TEST(test_lock_unlock)
{
	_Atomic uint32_t s = 0;

	stripe_lock(&s);
	ck_assert_uint_eq(atomic_load(&s), 1);
	stripe_unlock(&s);
	ck_assert_uint_eq(atomic_load(&s), 2);
}
END_TEST

START_TEST(test_begin_end)
{
	_Atomic uint32_t a = 4, b = 6;
	struct stripe_reader r = { &a, &b, 0 };

	ck_assert(stripe_read_begin(&r));
	ck_assert(stripe_read_end(&r));
	/* A writer that took and released b during the read. */
	ck_assert(stripe_read_begin(&r));
	stripe_lock(&b);
	stripe_unlock(&b);
	ck_assert(!stripe_read_end(&r));
	/* A writer that holds a: nothing may be read. */
	stripe_lock(&a);
	ck_assert(!stripe_read_begin(&r));
	stripe_unlock(&a);
	/* ...or b (the high half of the reader's pair of values). */
	stripe_lock(&b);
	ck_assert(!stripe_read_begin(&r));
	stripe_unlock(&b);
	/* A writer that took and released a during the read. */
	ck_assert(stripe_read_begin(&r));
	stripe_lock(&a);
	stripe_unlock(&a);
	ck_assert(!stripe_read_end(&r));
	/* The same stripe twice. */
	r.b = &a;
	ck_assert(stripe_read_begin(&r));
	stripe_lock(&a);
	ck_assert(!stripe_read_end(&r));
	stripe_unlock(&a);
}
END_TEST

/* A read callback that plays a writer on its first `spoil` calls. */
struct fake {
	_Atomic uint32_t *stripe;
	int calls, spoil;
	bool answer;
};

static bool
fake_read(void *arg)
{
	struct fake *x = arg;

	if (x->calls++ < x->spoil) {
		stripe_lock(x->stripe);
		stripe_unlock(x->stripe);
	}
	return x->answer;
}

START_TEST(test_try)
{
	_Atomic uint32_t a = 0, b = 0;
	struct stripe_reader r = { &a, &b, 0 };
	struct fake x = { &b, 0, 1, false };

	ck_assert_int_eq(stripe_read_try(&r, fake_read, &x), STRIPE_CHANGED);
	ck_assert_int_eq(stripe_read_try(&r, fake_read, &x), STRIPE_VALID);
	/* An answer that needs no validation stands even if spoilt. */
	x = (struct fake){ &a, 0, 1, true };
	ck_assert_int_eq(stripe_read_try(&r, fake_read, &x), STRIPE_ANSWER);
	stripe_lock(&a);
	x.calls = 0;
	ck_assert_int_eq(stripe_read_try(&r, fake_read, &x), STRIPE_BUSY);
	ck_assert_int_eq(x.calls, 0);
	stripe_unlock(&a);
}
END_TEST

START_TEST(test_loop_retries)
{
	_Atomic uint32_t a = 0, b = 0;
	_Atomic uint64_t changed = 0;
	struct stripe_reader r = { &a, &b, 0 };
	struct fake x = { &a, 0, 3, false };

	ck_assert_int_eq(stripe_read(&r, fake_read, &x, &changed), STRIPE_VALID);
	ck_assert_int_eq(x.calls, 4);
	ck_assert_uint_eq(atomic_load(&changed), 3);
	x = (struct fake){ &b, 0, 2, true };
	ck_assert_int_eq(stripe_read(&r, fake_read, &x, NULL), STRIPE_ANSWER);
	ck_assert_int_eq(x.calls, 1);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("stripe");
	TCase *tc = tcase_create("basic");

	tcase_add_test(tc, test_lock_unlock);
	tcase_add_test(tc, test_begin_end);
	tcase_add_test(tc, test_try);
	tcase_add_test(tc, test_loop_retries);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
