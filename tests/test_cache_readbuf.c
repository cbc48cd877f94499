/*
 * Unit tests for the cache's read buffer (src/cache/readbuf.h): a ring
 * holds ADMIT_READBUF_SLOTS events and refuses the next, cues a drain each
 * half ring, gives them back in order, marks and heads agree, and
 * concurrent producers lose no event and keep each one's order.
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "cache/readbuf.h"
#include "testutil.h"

START_TEST(test_full_and_order)
{
	struct admit_readbuf *b = admit_table_alloc(sizeof(*b));
	struct admit_readbuf_ring *r;
	struct admit_readbuf_mark m;
	uintptr_t ev[ADMIT_READBUF_SLOTS];

	admit_readbuf_init(b);
	r = admit_readbuf_mine(b);
	ck_assert_ptr_eq(admit_readbuf_mine(b), r);  /* one ring a thread */
	for (uintptr_t i = 0; i < ADMIT_READBUF_SLOTS; i++) {
		uint64_t end = admit_readbuf_push(r, i * 8);

		ck_assert_uint_eq(end, i + 1);
		/* The drain's cue after each half ring's last push. */
		ck_assert(admit_readbuf_due(end) ==
		          ((i + 1) % (ADMIT_READBUF_SLOTS / 2) == 0));
	}
	ck_assert(!admit_readbuf_push(r, 1));
	admit_readbuf_tails(b, &m);
	ck_assert(!admit_readbuf_passed(b, &m));
	ck_assert_uint_eq(admit_readbuf_take(r, ev), ADMIT_READBUF_SLOTS);
	for (uintptr_t i = 0; i < ADMIT_READBUF_SLOTS; i++)
		ck_assert_uint_eq(ev[i], i * 8);
	ck_assert(admit_readbuf_passed(b, &m));
	ck_assert_uint_eq(admit_readbuf_take(r, ev), 0);
	/* A second lap reuses the slots. */
	ck_assert(admit_readbuf_push(r, 5));
	ck_assert(admit_readbuf_push(r, 6));
	ck_assert_uint_eq(admit_readbuf_take(r, ev), 2);
	ck_assert_uint_eq(ev[0], 5);
	ck_assert_uint_eq(ev[1], 6);
	admit_table_free(b, sizeof(*b));
}
END_TEST

/* Producers push (thread << 32 | n) for n = 1, 2, ...; the consumer drains
 * until all are in and checks each thread's numbers arrive 1, 2, ... */
enum { PRODUCERS = 3, EACH = 200000 };
static struct admit_readbuf *shared;
static uint64_t next_seen[PRODUCERS];
static uint64_t out_of_order, taken;

static void *
producer(void *arg)
{
	uintptr_t t = (uintptr_t)arg;
	struct admit_readbuf_ring *r = admit_readbuf_mine(shared);

	/* A full ring waits for the consumer: give it the CPU, which on a
	 * loaded machine it may not have. */
	for (uintptr_t n = 1; n <= EACH; n++)
		while (!admit_readbuf_push(r, t << 32 | n))
			sched_yield();
	return NULL;
}

static void
check_batch(void *ctx, const uintptr_t *ev, size_t n)
{
	(void)ctx;
	for (size_t i = 0; i < n; i++) {
		uint64_t t = ev[i] >> 32, k = ev[i] & 0xffffffffu;

		if (t >= PRODUCERS || k != next_seen[t] + 1)
			out_of_order++;
		else
			next_seen[t] = k;
		taken++;
	}
}

START_TEST(test_producers)
{
	pthread_t t[PRODUCERS];

	shared = admit_table_alloc(sizeof(*shared));
	admit_readbuf_init(shared);
	for (uintptr_t i = 0; i < PRODUCERS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, producer, (void *)i), 0);
	while (taken < (uint64_t)PRODUCERS * EACH) {
		uint64_t before = taken;

		admit_readbuf_drain(shared, check_batch, NULL);
		if (taken == before)
			sched_yield();
	}
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(t[i], NULL);
	ck_assert_uint_eq(out_of_order, 0);
	ck_assert_uint_eq(taken, (uint64_t)PRODUCERS * EACH);
	admit_table_free(shared, sizeof(*shared));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cache_readbuf");
	TCase *tc = tcase_create("readbuf");

	tcase_add_test(tc, test_full_and_order);
	tcase_add_test(tc, test_producers);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
