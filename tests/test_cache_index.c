/*
 * Unit tests for the cache's index (src/cache/index.h): inserted keys are
 * found and absent ones are not, a replaced entry gives way whole, a removed
 * one is gone, a grow keeps every key, every bucket's summary of hash tags
 * is its chain's after each change, and readers running while a writer
 * grows and inserts find every key present before they started.
 */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cache/index.h"
#include "rcu.h"
#include "testutil.h"

static _Atomic uint64_t pending;

/* The bits of a test key's hash: few of the buckets', and the tag's. */
#define HASH_BITS 0x00000700ff0000ffull

/* Few hash bits, so chains hold several keys, and the tag's. */
static uint64_t
key_hash(uint64_t k)
{
	return prng_mix(k) & HASH_BITS;
}

/* The index's hash of an entry: its key's. */
static uint64_t
index_hash(const void *ctx, const struct entry *e)
{
	uint64_t k;

	(void)ctx;
	memcpy(&k, e->data, sizeof(k));
	return key_hash(k);
}

static struct entry *
entry(uint64_t i)
{
	uint64_t k = test_key(i);
	struct entry *e = calloc(1, ADMIT_ENTRY_HEADER + sizeof(k));

	ck_assert_ptr_nonnull(e);
	admit_entry_set_meta(e, sizeof(k));
	memcpy(e->data, &k, sizeof(k));
	return e;
}

/* Files e under hash h (its key's, or a wrong one). */
static void
insert_as(struct admit_index *ix, struct entry *e, uint64_t h)
{
	_Atomic uintptr_t *p;

	ck_assert_ptr_null(admit_index_find_locked(ix, h, e->data,
	                                           admit_entry_klen(e), &p));
	admit_index_insert_locked(ix, p, e, h);
}

static void
insert(struct admit_index *ix, struct entry *e)
{
	insert_as(ix, e, index_hash(NULL, e));
}

/* A reader's lookup of key i under hash h. */
static struct entry *
read_as(struct admit_index *ix, uint64_t i, uint64_t h)
{
	uint64_t k = test_key(i);
	struct entry *e;

	admit_rcu_read_lock();
	while (!admit_index_read(ix, h, &k, sizeof(k), &e))
		;
	admit_rcu_read_unlock();
	return e;
}

static struct entry *
read_key(struct admit_index *ix, uint64_t i)
{
	return read_as(ix, i, key_hash(test_key(i)));
}

static void
init(struct admit_index *ix, uint64_t entries)
{
	ck_assert_int_eq(admit_index_init(ix, entries, &pending, index_hash,
	                                  NULL), ADMIT_OK);
}

START_TEST(test_find_replace_remove)
{
	enum { N = 1000 };
	struct admit_index ix;
	struct entry *e[N], *r;
	_Atomic uintptr_t *p;

	init(&ix, N);
	for (uint64_t i = 0; i < N; i++)
		insert(&ix, e[i] = entry(i));
	ck_assert(admit_index_check_locked(&ix));
	for (uint64_t i = 0; i < N; i++)
		ck_assert_ptr_eq(read_key(&ix, i), e[i]);
	for (uint64_t i = N; i < 2 * N; i++)
		ck_assert_ptr_null(read_key(&ix, i));
	/* Replace key 7, remove key 8. */
	r = entry(7);
	ck_assert_ptr_eq(admit_index_find_locked(&ix, index_hash(NULL, r),
	                                         r->data, 8, &p), e[7]);
	admit_index_replace_locked(p, e[7], r);
	ck_assert_ptr_eq(read_key(&ix, 7), r);
	admit_index_remove_locked(&ix, e[8]);
	ck_assert_ptr_null(read_key(&ix, 8));
	ck_assert(admit_index_check_locked(&ix));
	for (uint64_t i = 0; i < N; i++)
		if (i != 7 && i != 8)
			ck_assert_ptr_eq(read_key(&ix, i), e[i]);
	/* Remove every other key (chain heads, middles and ends): each
	 * summary drops the tags its chain no longer holds. */
	for (uint64_t i = 0; i < N; i += 2)
		if (i != 8)
			admit_index_remove_locked(&ix, e[i]);
	ck_assert(admit_index_check_locked(&ix));
	for (uint64_t i = 1; i < N; i += 2)
		ck_assert_ptr_eq(read_key(&ix, i),
		                 i == 7 ? r : e[i]);
	for (uint64_t i = 0; i < N; i += 2)
		ck_assert_ptr_null(read_key(&ix, i));
	admit_index_destroy(&ix);
	for (uint64_t i = 0; i < N; i++)
		free(e[i]);
	free(r);
}
END_TEST

/* A key's length is compared in all its 22 bits, its flags aside: an
 * entry whose key starts with an 8-byte key's bytes but is 8 + 256 or
 * 8 + 65536 bytes long (the same low byte) is not that key. */
START_TEST(test_key_length)
{
	static const size_t len[] = {
		0, 1, 8, 255, 256, 264, 65535, 65536, 65544,
		ADMIT_LRU_MAX_KEY_LEN,
	};
	enum { N = sizeof(len) / sizeof(len[0]) };
	struct admit_index ix;
	struct entry *e[3], *m = calloc(1, sizeof(struct entry));
	_Atomic uintptr_t *p;
	uint64_t k = test_key(5);

	ck_assert_ptr_nonnull(m);
	for (size_t i = 0; i < N; i++) {
		admit_entry_set_meta(m, (uint32_t)len[i] | ADMIT_ENTRY_TIMED |
		                        ADMIT_ENTRY_CALLER_RECORDS);
		for (size_t j = 0; j < N; j++)
			ck_assert(admit_entry_klen_is(m, len[j]) == (i == j));
		ck_assert(!admit_entry_klen_is(m, len[i] + (1u << 22)));
		ck_assert(!admit_entry_klen_is(m, len[i] + ((size_t)1 << 30)));
	}
	free(m);
	init(&ix, 64);
	for (int i = 0; i < 3; i++) {
		size_t klen = i == 0 ? 8 + 256 : i == 1 ? 8 + 65536 : 8;

		e[i] = calloc(1, ADMIT_ENTRY_HEADER + klen);
		ck_assert_ptr_nonnull(e[i]);
		admit_entry_set_meta(e[i], (uint32_t)klen);
		memcpy(e[i]->data, &k, sizeof(k));
		ck_assert_ptr_null(admit_index_find_locked(&ix, key_hash(k),
		                                           e[i]->data, klen, &p));
		admit_index_insert_locked(&ix, p, e[i], key_hash(k));
		/* The 8-byte key finds its own entry only, the last. */
		ck_assert_ptr_eq(read_key(&ix, 5), i == 2 ? e[2] : NULL);
	}
	admit_index_destroy(&ix);
	for (int i = 0; i < 3; i++)
		free(e[i]);
}
END_TEST

START_TEST(test_grow)
{
	enum { N = 5000 };
	struct admit_index ix;
	struct entry **e = calloc(N, sizeof(*e));
	struct tally lost = TALLY_INIT;

	init(&ix, 0);
	ck_assert_uint_eq(admit_index_buckets(&ix), 64);
	for (uint64_t i = 0; i < N; i++) {
		insert(&ix, e[i] = entry(i));
		admit_index_grow_locked(&ix, i + 1);
	}
	ck_assert_uint_ge(admit_index_buckets(&ix), N);
	ck_assert_uint_lt(admit_index_buckets(&ix), 2 * N);
	ck_assert(admit_index_check_locked(&ix));
	for (uint64_t i = 0; i < N; i++)
		tally(&lost, read_key(&ix, i) == e[i], i);
	ck_assert_tally(lost, "keys lost by a grow");
	admit_rcu_barrier();
	ck_assert_uint_eq(atomic_load(&pending), 0);
	admit_index_destroy(&ix);
	for (uint64_t i = 0; i < N; i++)
		free(e[i]);
	free(e);
}
END_TEST

/* Readers look up the first half's keys while the writer inserts the
 * second half, growing as it goes: a reader that missed while a grow moved
 * chains must be told to retry, never answer a false miss. */
enum { HALF = 20000, READERS = 2 };
static struct admit_index shared;
static struct entry *shared_e[2 * HALF];
static _Atomic bool writing;

static void *
reader(void *arg)
{
	struct tally *lost = arg;
	uint64_t i = 0;

	while (atomic_load(&writing)) {
		uint64_t k = i % HALF;

		tally(lost, read_key(&shared, k) == shared_e[k], k);
		i++;
	}
	return NULL;
}

START_TEST(test_readers_during_grow)
{
	pthread_t t[READERS];
	struct tally lost[READERS];

	init(&shared, 0);
	for (uint64_t i = 0; i < 2 * HALF; i++)
		shared_e[i] = entry(i);
	for (uint64_t i = 0; i < HALF; i++) {
		insert(&shared, shared_e[i]);
		admit_index_grow_locked(&shared, i + 1);
	}
	atomic_store(&writing, true);
	for (int r = 0; r < READERS; r++) {
		lost[r] = (struct tally)TALLY_INIT;
		ck_assert_int_eq(pthread_create(&t[r], NULL, reader, &lost[r]), 0);
	}
	for (uint64_t i = HALF; i < 2 * HALF; i++) {
		insert(&shared, shared_e[i]);
		admit_index_grow_locked(&shared, i + 1);
	}
	atomic_store(&writing, false);
	for (int r = 0; r < READERS; r++) {
		pthread_join(t[r], NULL);
		ck_assert_tally(lost[r], "false misses during a grow");
	}
	admit_rcu_barrier();
	admit_index_destroy(&shared);
	for (uint64_t i = 0; i < 2 * HALF; i++)
		free(shared_e[i]);
}
END_TEST

/* Entries filed under a wrong hash (a caller's error the cache survives):
 * a grow keeps them all in the index, a remove finds each, and the others
 * stay found, the summaries exact once they are gone. */
START_TEST(test_misfiled)
{
	enum { N = 3000, WRONG = 300 };
	struct admit_index ix;
	struct entry **e = calloc(N, sizeof(*e));
	struct tally lost = TALLY_INIT;

	init(&ix, 0);
	for (uint64_t i = 0; i < N; i++) {
		e[i] = entry(i);
		if (i % (N / WRONG))
			insert(&ix, e[i]);
		else  /* another bucket, in every table */
			insert_as(&ix, e[i], index_hash(NULL, e[i]) ^ 1);
		admit_index_grow_locked(&ix, i + 1);
	}
	ck_assert_uint_ge(admit_index_buckets(&ix), N);
	for (uint64_t i = 0; i < N; i++)
		tally(&lost, i % (N / WRONG) == 0 || read_key(&ix, i) == e[i], i);
	ck_assert_tally(lost, "keys lost beside misfiled ones");
	for (uint64_t i = 0; i < N; i += N / WRONG) {
		ck_assert_ptr_null(read_key(&ix, i));
		admit_index_remove_locked(&ix, e[i]);
		ck_assert_ptr_null(read_as(&ix, i, index_hash(NULL, e[i]) ^ 1));
	}
	for (uint64_t i = 0; i < N; i++)
		tally(&lost, i % (N / WRONG) == 0 || read_key(&ix, i) == e[i], i);
	ck_assert_tally(lost, "keys lost by removing misfiled ones");
	ck_assert(admit_index_check_locked(&ix));
	admit_rcu_barrier();
	admit_index_destroy(&ix);
	for (uint64_t i = 0; i < N; i++)
		free(e[i]);
	free(e);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cache_index");
	TCase *tc = tcase_create("index");

	tcase_add_test(tc, test_find_replace_remove);
	tcase_add_test(tc, test_key_length);
	tcase_add_test(tc, test_grow);
	tcase_add_test(tc, test_readers_during_grow);
	tcase_add_test(tc, test_misfiled);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
