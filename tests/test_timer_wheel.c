/*
 * Unit tests for the timer wheel (src/timer_wheel.h): against a model on
 * random timers and random steps of every scale, each timer fires exactly
 * once, never before its time and no later than the advance that leaves its
 * tick; removed timers never fire.  Seeds are fixed.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "testutil.h"
#include "timer_wheel.h"

#define TICK (UINT64_C(1) << ADMIT_WHEEL_TICK_SHIFT)

struct probe {
	struct admit_timer t;   /* first: the fire callback's cast */
	uint64_t fired_at;      /* 0: not fired */
	uint64_t due;           /* its time, or when it was added if later */
	int fires;
	bool removed;
};

static uint64_t now_for_fire;

static void
on_fire(struct admit_timer *t, void *arg)
{
	struct probe *p = (struct probe *)t;

	(void)arg;
	p->fires++;
	p->fired_at = now_for_fire;
}

START_TEST(test_wheel_model)
{
	enum { N = 5000 };
	/* Steps and delays at each level's scale, and beyond the top. */
	static const uint64_t scale[] = {
		1, TICK / 3, TICK, TICK * 50, TICK << 6, TICK << 12, TICK << 18,
		TICK << 24, TICK << 31,
	};
	const size_t ns = sizeof(scale) / sizeof(scale[0]);
	struct probe *p = calloc(N, sizeof(*p));
	struct prng rng = { 0x2545f4914f6cdd1dull + (uint64_t)_i };
	uint64_t now = UINT64_C(1) << 40;
	struct admit_wheel *w = admit_wheel_new(now);
	struct tally early = TALLY_INIT, late = TALLY_INIT, twice = TALLY_INIT;
	size_t added = 0, fired = 0, removed = 0;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(w);
	while (added < N || fired + removed < N) {
		uint64_t r = prng_next(&rng);

		if (added < N && r % 3 != 0) {
			struct probe *q = &p[added++];
			uint64_t d = prng_next(&rng) % (scale[prng_next(&rng) % ns] + 1);

			/* Some already past. */
			q->t.when = r % 17 == 0 && now > d ? now - d : now + d;
			q->due = q->t.when > now ? q->t.when : now;
			admit_wheel_add(w, &q->t);
		} else if (added && r % 5 == 0) {
			struct probe *q = &p[prng_next(&rng) % added];

			if (!q->fires && !q->removed) {
				admit_wheel_remove(&q->t);
				q->removed = true;
				removed++;
			}
			admit_wheel_remove(&q->t);  /* twice: a no-op */
		} else {
			/* Steps up to the top level's scale: 2^61 ns in all. */
			now += prng_next(&rng) % (scale[prng_next(&rng) % (ns - 1)] + 1);
			now_for_fire = now;
			fired += admit_wheel_advance(w, now, on_fire, NULL);
			ck_assert_uint_eq(admit_wheel_now(w), now);
			for (size_t i = 0; i < added; i++) {
				bool gone = p[i].fires || p[i].removed;

				/* Its tick is over: it must be gone.  (One added
				 * past its time: the tick it was added in.) */
				tally(&late, gone || (p[i].due >> ADMIT_WHEEL_TICK_SHIFT) >=
				                     (now >> ADMIT_WHEEL_TICK_SHIFT), i);
			}
		}
	}
	for (size_t i = 0; i < N; i++) {
		tally(&twice, p[i].fires + p[i].removed == 1, i);
		tally(&early, !p[i].fires || p[i].fired_at >= p[i].t.when, i);
	}
	ck_assert_tally(late, "timers not fired after their tick");
	ck_assert_tally(early, "timers fired early");
	ck_assert_tally(twice, "timers fired or removed other than once");
	ck_assert_uint_eq(fired + removed, N);
	/* An advance back in time does nothing. */
	ck_assert_uint_eq(admit_wheel_advance(w, now - 1, on_fire, NULL), 0);
	ck_assert_uint_eq(admit_wheel_now(w), now);
	admit_wheel_free(w);
	free(p);
}
END_TEST

/* A timer removed by the fire callback of another, and a timer added from a
 * callback, as admit_lru's expiry does. */
static struct probe pair[3];

static void
fire_removes(struct admit_timer *t, void *arg)
{
	struct admit_wheel *w = arg;

	on_fire(t, NULL);
	if (t == &pair[0].t) {
		admit_wheel_remove(&pair[1].t);
		pair[2].t.when = admit_wheel_now(w) + 3 * TICK;
		admit_wheel_add(w, &pair[2].t);
	}
}

START_TEST(test_wheel_fire_changes_wheel)
{
	struct admit_wheel *w = admit_wheel_new(0);

	pair[0].t.when = TICK / 2;
	pair[1].t.when = TICK / 2 + 1;
	admit_wheel_add(w, &pair[0].t);
	admit_wheel_add(w, &pair[1].t);
	now_for_fire = 2 * TICK;
	ck_assert_uint_eq(admit_wheel_advance(w, 2 * TICK, fire_removes, w), 1);
	ck_assert_int_eq(pair[1].fires, 0);
	ck_assert_uint_eq(admit_wheel_advance(w, 4 * TICK, fire_removes, w), 0);
	ck_assert_uint_eq(admit_wheel_advance(w, 6 * TICK, fire_removes, w), 1);
	ck_assert_int_eq(pair[2].fires, 1);
	admit_wheel_free(w);
}
END_TEST

/* At the edge: a timer 1 ns after an advance's time stays, at that time
 * fires at the next tick change. */
START_TEST(test_wheel_edge)
{
	struct admit_wheel *w = admit_wheel_new(0);
	struct probe a = { .t.when = 5 * TICK - 1 }, b = { .t.when = 5 * TICK - 2 };

	admit_wheel_add(w, &a.t);
	admit_wheel_add(w, &b.t);
	now_for_fire = 5 * TICK - 2;
	ck_assert_uint_eq(admit_wheel_advance(w, 5 * TICK - 2, on_fire, NULL), 1);
	ck_assert(b.fires == 1 && a.fires == 0);
	now_for_fire = 5 * TICK;
	ck_assert_uint_eq(admit_wheel_advance(w, 5 * TICK, on_fire, NULL), 1);
	ck_assert_int_eq(a.fires, 1);
	admit_wheel_free(w);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("timer_wheel");
	TCase *tc = tcase_create("timer_wheel");

	tcase_add_loop_test(tc, test_wheel_model, 0, 4);
	tcase_add_test(tc, test_wheel_fire_changes_wheel);
	tcase_add_test(tc, test_wheel_edge);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
