/*
 * Unit tests for the cache's read buffer (src/cache/readbuf.h): a ring
 * holds ADMIT_READBUF_SLOTS events and refuses the next, cues a drain each
 * half ring, gives them back in order, each with the word pushed with it
 * (a ring's drain only its own), marks
 * and heads agree, concurrent producers (owners and sharers of rings) lose
 * no event and keep each one's order, each owned ring has one owner at a
 * time, and the counters of reads that queue nothing lose no count.
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "cache/readbuf.h"
#include "testutil.h"

START_TEST(test_full_and_order)
{
	struct admit_readbuf *b = admit_table_alloc(sizeof(*b));
	struct admit_readbuf_ring *r;
	struct admit_readbuf_mark m;
	uintptr_t ev[ADMIT_READBUF_SLOTS];
	uint64_t arg[ADMIT_READBUF_SLOTS];

	admit_readbuf_init(b);
	r = admit_readbuf_mine(b);
	ck_assert_ptr_eq(admit_readbuf_mine(b), r);  /* one ring a thread */
	for (uintptr_t i = 0; i < ADMIT_READBUF_SLOTS; i++) {
		uint64_t end = admit_readbuf_push(r, i * 8, ~(uint64_t)i);

		ck_assert_uint_eq(end, i + 1);
		/* The drain's cue after each half ring's last push. */
		ck_assert(admit_readbuf_due(end) ==
		          ((i + 1) % (ADMIT_READBUF_SLOTS / 2) == 0));
	}
	ck_assert(!admit_readbuf_push(r, 1, 1));
	admit_readbuf_tails(b, &m);
	ck_assert(!admit_readbuf_passed(b, &m));
	ck_assert_uint_eq(admit_readbuf_take(r, ev, arg), ADMIT_READBUF_SLOTS);
	for (uintptr_t i = 0; i < ADMIT_READBUF_SLOTS; i++) {
		ck_assert_uint_eq(ev[i], i * 8);
		ck_assert_uint_eq(arg[i], ~(uint64_t)i);
	}
	ck_assert(admit_readbuf_passed(b, &m));
	ck_assert_uint_eq(admit_readbuf_take(r, ev, arg), 0);
	/* A second lap reuses the slots. */
	ck_assert(admit_readbuf_push(r, 5, 50));
	ck_assert(admit_readbuf_push(r, 6, 60));
	ck_assert_uint_eq(admit_readbuf_take(r, ev, arg), 2);
	ck_assert_uint_eq(ev[0], 5);
	ck_assert_uint_eq(ev[1], 6);
	ck_assert_uint_eq(arg[0], 50);
	ck_assert_uint_eq(arg[1], 60);
	admit_table_free(b, sizeof(*b));
}
END_TEST

static uintptr_t drained[2 * ADMIT_READBUF_SLOTS];
static uint64_t drained_arg[2 * ADMIT_READBUF_SLOTS];
static size_t ndrained;

static void
collect(void *ctx, const uintptr_t *ev, const uint64_t *arg, size_t n)
{
	(void)ctx;
	for (size_t i = 0; i < n; i++) {
		drained_arg[ndrained] = arg[i];
		drained[ndrained++] = ev[i];
	}
}

/* A ring's drain takes that ring's events only, in order; the buffer's
 * takes every ring's. */
START_TEST(test_drain_ring)
{
	struct admit_readbuf *b = admit_table_alloc(sizeof(*b));

	admit_readbuf_init(b);
	for (uintptr_t i = 1; i <= 3; i++) {
		ck_assert(admit_readbuf_push(&b->ring[0], i * 16, i));
		ck_assert(admit_readbuf_push(&b->ring[1], i * 16 + 8, i + 100));
	}
	ndrained = 0;
	admit_readbuf_drain_ring(&b->ring[1], collect, NULL);
	ck_assert_uint_eq(ndrained, 3);
	for (size_t i = 0; i < 3; i++) {
		ck_assert_uint_eq(drained[i], (i + 1) * 16 + 8);
		ck_assert_uint_eq(drained_arg[i], i + 101);
	}
	ndrained = 0;
	admit_readbuf_drain(b, collect, NULL);
	ck_assert_uint_eq(ndrained, 3);
	for (size_t i = 0; i < 3; i++) {
		ck_assert_uint_eq(drained[i], (i + 1) * 16);
		ck_assert_uint_eq(drained_arg[i], i + 1);
	}
	admit_table_free(b, sizeof(*b));
}
END_TEST

/* Producers push (thread << 32 | n) for n = 1, 2, ...; the consumer drains
 * until all are in and checks each thread's numbers arrive 1, 2, ... */
enum { PRODUCERS = ADMIT_READBUF_OWNED + 2, EACH = 100000 };
static struct admit_readbuf *shared;
static uint64_t next_seen[PRODUCERS];
static uint64_t out_of_order, taken;

static void *
producer(void *arg)
{
	uintptr_t t = (uintptr_t)arg;

	/* A full ring waits for the consumer: give it the CPU, which on a
	 * loaded machine it may not have.  More producers than owned rings:
	 * the last ring's share it. */
	for (uintptr_t n = 1; n <= EACH; n++)
		while (!admit_readbuf_push_mine(shared, t << 32 | n,
		                                ~(uint64_t)(t << 32 | n)))
			sched_yield();
	return NULL;
}

static void
check_batch(void *ctx, const uintptr_t *ev, const uint64_t *arg, size_t n)
{
	(void)ctx;
	for (size_t i = 0; i < n; i++) {
		uint64_t t = ev[i] >> 32, k = ev[i] & 0xffffffffu;

		if (t >= PRODUCERS || k != next_seen[t] + 1 ||
		    arg[i] != ~(uint64_t)ev[i])
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

/* Threads that hold their rings at once: each owned ring has one owner,
 * the rest share the last ring; an owner's exit frees its ring. */
static pthread_barrier_t held;
static unsigned chosen[ADMIT_READBUF_RINGS + 2];

static void *
chooser(void *arg)
{
	chosen[(uintptr_t)arg] = admit_readbuf_my_index();
	pthread_barrier_wait(&held);  /* all have chosen */
	pthread_barrier_wait(&held);  /* the main thread has looked */
	return NULL;
}

static unsigned
choose_in_new_thread(void)
{
	pthread_t t;

	pthread_barrier_init(&held, NULL, 2);
	ck_assert_int_eq(pthread_create(&t, NULL, chooser, (void *)0), 0);
	pthread_barrier_wait(&held);
	pthread_barrier_wait(&held);
	pthread_join(t, NULL);
	pthread_barrier_destroy(&held);
	return chosen[0];
}

START_TEST(test_owners)
{
	enum { N = ADMIT_READBUF_RINGS + 2 };
	pthread_t t[N];
	unsigned owners[ADMIT_READBUF_RINGS] = { 0 };
	/* This thread's ring, if an earlier test chose one (CK_FORK=no). */
	unsigned mine = admit_readbuf_index_of(admit_readbuf_thread_at);
	bool own = mine >= 1 && mine <= ADMIT_READBUF_OWNED;
	unsigned first = choose_in_new_thread();

	/* A new thread owns a ring, and gives it back when it exits. */
	ck_assert_uint_le(first, ADMIT_READBUF_OWNED);
	ck_assert_uint_eq(choose_in_new_thread(), first);
	pthread_barrier_init(&held, NULL, N + 1);
	for (uintptr_t i = 0; i < N; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, chooser, (void *)i), 0);
	pthread_barrier_wait(&held);
	for (int i = 0; i < N; i++) {
		ck_assert_uint_ge(chosen[i], 1);
		ck_assert_uint_le(chosen[i], ADMIT_READBUF_RINGS);
		owners[chosen[i] - 1]++;
	}
	for (unsigned k = 0; k < ADMIT_READBUF_OWNED; k++)
		ck_assert_uint_eq(owners[k], k + 1 == mine ? 0 : 1);
	ck_assert_uint_eq(owners[ADMIT_READBUF_RINGS - 1],
	                  N - ADMIT_READBUF_OWNED + own);
	pthread_barrier_wait(&held);
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&held);
	/* Every owner has exited: their rings are free again. */
	ck_assert_uint_eq(choose_in_new_thread(), first);
}
END_TEST

/* Reads counted instead of queued: each counter sums every thread's
 * counts, owners' (plain stores) and sharers' (atomic adds) alike, with
 * more threads than owned rings. */
enum { COUNTERS = ADMIT_READBUF_OWNED + 3, COUNTS = 20000 };

static void *
counter(void *arg)
{
	for (int i = 0; i < COUNTS; i++) {
		admit_readbuf_count(arg, 0);
		admit_readbuf_count(arg, 1);
		admit_readbuf_count(arg, 1);
	}
	return NULL;
}

START_TEST(test_counted)
{
	struct admit_readbuf *b = admit_table_alloc(sizeof(*b));
	pthread_t t[COUNTERS];

	admit_readbuf_init(b);
	ck_assert_uint_eq(admit_readbuf_counted(b, 0), 0);
	for (int i = 0; i < COUNTERS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, counter, b), 0);
	for (int i = 0; i < COUNTERS; i++)
		pthread_join(t[i], NULL);
	ck_assert_uint_eq(admit_readbuf_counted(b, 0), (uint64_t)COUNTERS * COUNTS);
	ck_assert_uint_eq(admit_readbuf_counted(b, 1),
	                  (uint64_t)COUNTERS * COUNTS * 2);
	admit_table_free(b, sizeof(*b));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cache_readbuf");
	TCase *tc = tcase_create("readbuf");

	tcase_add_test(tc, test_full_and_order);
	tcase_add_test(tc, test_drain_ring);
	tcase_add_test(tc, test_producers);
	tcase_add_test(tc, test_owners);
	tcase_add_test(tc, test_counted);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
