/*
 * Unit tests for the cache's reclamation (src/cache/reclaim.h): the limbo
 * is handed to call_rcu only once it holds a batch's worth; a batch past
 * its grace period is freed only when the read buffer's heads have passed
 * every event pushed before the grace period ended; destroy frees what is
 * left.  Run under ASan, a premature or double free is caught.
 */
#include "config.h"

#include <check.h>
#include <stdatomic.h>
#include <string.h>

#include "alloc.h"
#include "cache/reclaim.h"
#include "rcu.h"
#include "testutil.h"

static _Atomic uint64_t pending;

static struct entry *
entry(void)
{
	struct entry *e = admit_malloc(sizeof(*e) + 8);

	ck_assert_ptr_nonnull(e);
	memset(e, 0, sizeof(*e));
	admit_entry_set_meta(e, 8);
	return e;
}

START_TEST(test_batch_waits_for_heads)
{
	struct admit_readbuf *rb = admit_table_alloc(sizeof(*rb));
	struct admit_reclaim r;
	struct entry *first = entry();
	uintptr_t ev[ADMIT_READBUF_SLOTS];
	uint64_t arg[ADMIT_READBUF_SLOTS];

	admit_readbuf_init(rb);
	admit_reclaim_init(&r, rb, &pending);
	/* A reader found `first` and pushed its event before it was retired. */
	ck_assert(admit_readbuf_push(admit_readbuf_mine(rb), (uintptr_t)first, 0));
	admit_reclaim_retire_locked(&r, first);
	ck_assert(first->dead);
	for (int i = 1; i < ADMIT_RECLAIM_BATCH - 1; i++)
		admit_reclaim_retire_locked(&r, entry());
	admit_reclaim_flush_locked(&r);
	ck_assert_uint_eq(r.nlimbo, ADMIT_RECLAIM_BATCH - 1);  /* too few */
	ck_assert_uint_eq(atomic_load(&pending), 0);
	admit_reclaim_retire_locked(&r, entry());
	admit_reclaim_flush_locked(&r);
	ck_assert_uint_eq(r.nlimbo, 0);
	ck_assert_ptr_null(r.more);
	admit_rcu_barrier();
	ck_assert_uint_eq(atomic_load(&pending), 0);
	ck_assert_ptr_nonnull(atomic_load(&r.ready));
	/* The event naming `first` is still in the ring: kept. */
	admit_reclaim_collect_locked(&r);
	ck_assert_ptr_null(atomic_load(&r.ready));
	ck_assert_ptr_nonnull(r.waiting);
	/* The drain takes it (first is still readable), then it goes. */
	ck_assert_uint_eq(admit_readbuf_take(admit_readbuf_mine(rb), ev, arg), 1);
	ck_assert(((struct entry *)ev[0])->dead);
	admit_reclaim_collect_locked(&r);
	ck_assert_ptr_null(r.waiting);
	admit_reclaim_destroy(&r);
	admit_table_free(rb, sizeof(*rb));
}
END_TEST

START_TEST(test_bytes_and_destroy)
{
	struct admit_readbuf *rb = admit_table_alloc(sizeof(*rb));
	struct admit_reclaim r;
	struct entry *big = admit_malloc(sizeof(*big) + ADMIT_RECLAIM_BYTES);

	admit_readbuf_init(rb);
	admit_reclaim_init(&r, rb, &pending);
	admit_reclaim_retire_locked(&r, entry());
	admit_reclaim_flush_locked(&r);
	ck_assert_uint_eq(r.nlimbo, 1);
	/* One entry of a batch's bytes is flushed alone. */
	ck_assert_ptr_nonnull(big);
	memset(big, 0, sizeof(*big));
	big->vlen = ADMIT_RECLAIM_BYTES;
	admit_reclaim_retire_locked(&r, big);
	admit_reclaim_flush_locked(&r);
	ck_assert_uint_eq(r.nlimbo, 0);
	admit_reclaim_retire_locked(&r, entry());
	admit_rcu_barrier();
	/* Nothing pushed: the batch is freed at once; the limbo at destroy. */
	admit_reclaim_collect_locked(&r);
	ck_assert_ptr_null(r.waiting);
	ck_assert_uint_eq(r.nlimbo, 1);
	admit_reclaim_destroy(&r);
	ck_assert_uint_eq(r.nlimbo, 0);
	admit_table_free(rb, sizeof(*rb));
}
END_TEST

/* A full limbo whose batch cannot be allocated keeps every entry: those
 * retired after it wait in the overflow chain, and the next batch takes
 * them all, each once (ASan: none leaked, none freed twice). */
START_TEST(test_full_limbo_out_of_memory)
{
	struct admit_readbuf *rb = admit_table_alloc(sizeof(*rb));
	struct admit_reclaim r;
	struct entry *e[ADMIT_RECLAIM_BATCH + 3];
	size_t n = sizeof(e) / sizeof(e[0]);

	admit_readbuf_init(rb);
	admit_reclaim_init(&r, rb, &pending);
	for (size_t i = 0; i < n; i++)
		e[i] = entry();
	for (size_t i = 0; i < ADMIT_RECLAIM_BATCH; i++)
		admit_reclaim_retire_locked(&r, e[i]);
	ck_assert_uint_eq(r.nlimbo, ADMIT_RECLAIM_BATCH);
	/* The retire that finds the limbo full flushes it: that allocation
	 * fails, so the entry goes to the overflow, as does the next. */
	admit_alloc_fail_nth(1);
	admit_reclaim_retire_locked(&r, e[ADMIT_RECLAIM_BATCH]);
	admit_alloc_fail_nth(0);
	ck_assert_uint_eq(r.nlimbo, ADMIT_RECLAIM_BATCH);
	ck_assert_uint_eq(r.nmore, 1);
	ck_assert_ptr_eq(r.more, e[ADMIT_RECLAIM_BATCH]);
	admit_alloc_fail_nth(1);
	admit_reclaim_retire_locked(&r, e[ADMIT_RECLAIM_BATCH + 1]);
	admit_alloc_fail_nth(1);
	admit_reclaim_flush_locked(&r);  /* fails too: nothing moves */
	admit_alloc_fail_nth(0);
	ck_assert_uint_eq(r.nmore, 2);
	ck_assert_uint_eq(atomic_load(&pending), 0);
	/* The next retire's flush gets its batch: all of them go, and the
	 * entry retired then starts the next limbo. */
	admit_reclaim_retire_locked(&r, e[ADMIT_RECLAIM_BATCH + 2]);
	ck_assert_uint_eq(r.nlimbo, 1);
	ck_assert_ptr_eq(r.limbo[0], e[ADMIT_RECLAIM_BATCH + 2]);
	ck_assert_uint_eq(r.nmore, 0);
	ck_assert_ptr_null(r.more);
	ck_assert_uint_eq(r.held, n);
	admit_rcu_barrier();
	/* Nothing pushed: the batch of n - 1 is freed at once. */
	admit_reclaim_collect_locked(&r);
	ck_assert_ptr_null(r.waiting);
	ck_assert_uint_eq(r.held, 1);
	admit_reclaim_destroy(&r);
	admit_table_free(rb, sizeof(*rb));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cache_reclaim");
	TCase *tc = tcase_create("reclaim");

	tcase_add_test(tc, test_batch_waits_for_heads);
	tcase_add_test(tc, test_bytes_and_destroy);
	tcase_add_test(tc, test_full_limbo_out_of_memory);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
