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

/* ---- get_with -------------------------------------------------------------- */

struct seen {
	int calls;
	size_t vlen;
	char buf[64];
};

static void
see(const void *value, size_t vlen, void *arg)
{
	struct seen *sn = arg;

	sn->calls++;
	sn->vlen = vlen;
	if (vlen && vlen <= sizeof(sn->buf))
		memcpy(sn->buf, value, vlen);
}

START_TEST(test_get_with)
{
	struct admit_lru *c = make(3, 0, ADMIT_LRU_PLAIN, 1);
	struct seen sn = { 0 };
	struct admit_lru_stats st;
	char buf[8];
	size_t vlen;

	ck_assert_int_eq(admit_lru_get_with(NULL, "a", 1, see, &sn), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_with(c, NULL, 1, see, &sn), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_with(c, "a", 1, NULL, &sn), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_with(c, "a", 1, see, &sn), ADMIT_NOTFOUND);
	ck_assert_int_eq(sn.calls, 0);
	ck_assert_int_eq(admit_lru_set(c, "a", 1, "one", 3), ADMIT_OK);
	ck_assert_int_eq(admit_lru_set(c, "b", 1, "", 0), ADMIT_OK);
	ck_assert_int_eq(admit_lru_set(c, "c", 1, "three", 5), ADMIT_OK);
	ck_assert_int_eq(admit_lru_get_with(c, "a", 1, see, &sn), ADMIT_OK);
	ck_assert(sn.calls == 1 && sn.vlen == 3 && memcmp(sn.buf, "one", 3) == 0);
	ck_assert_int_eq(admit_lru_get_with(c, "b", 1, see, &sn), ADMIT_OK);
	ck_assert(sn.calls == 2 && sn.vlen == 0);
	/* Counted as gets: a and b were used, so c is the LRU victim. */
	ck_assert_int_eq(admit_lru_set(c, "d", 1, "4", 1), ADMIT_OK);
	ck_assert_int_eq(admit_lru_peek(c, "c", 1, buf, sizeof(buf), &vlen), ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_peek(c, "a", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
	st = stats(c);
	ck_assert_uint_eq(st.hits, 2);
	ck_assert_uint_eq(st.misses, 1);
	admit_lru_free(c);
}
END_TEST

/* A lent value is whole while a writer replaces it: every value is
 * len(i) bytes of the byte i, and the reader checks both. */
enum { LEND_ROUNDS = 20000 };

static size_t
lend_len(unsigned char b)
{
	return 16 + (size_t)b * 7;
}

struct lend {
	struct admit_lru *c;
	atomic_bool stop;
	atomic_ulong bad, hits;
};

static void
check_lent(const void *value, size_t vlen, void *arg)
{
	struct lend *l = arg;
	const unsigned char *v = value;
	bool ok = vlen == lend_len(v[0]);

	for (size_t i = 1; ok && i < vlen; i++)
		ok = v[i] == v[0];
	if (!ok)
		atomic_fetch_add(&l->bad, 1);
	atomic_fetch_add_explicit(&l->hits, 1, memory_order_relaxed);
}

static void *
lend_reader(void *arg)
{
	struct lend *l = arg;

	while (!atomic_load(&l->stop))
		admit_lru_get_with(l->c, "k", 1, check_lent, l);
	return NULL;
}

START_TEST(test_get_with_whole)
{
	static unsigned char v[16 + 255 * 7];
	struct lend l = { .c = make(64, 0, ADMIT_LRU_ADAPTIVE, 1) };
	pthread_t t;

	ck_assert_int_eq(admit_lru_set(l.c, "k", 1, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16),
	                 ADMIT_OK);
	ck_assert_int_eq(pthread_create(&t, NULL, lend_reader, &l), 0);
	for (unsigned i = 0; i < LEND_ROUNDS; i++) {
		unsigned char b = (unsigned char)i;

		memset(v, b, lend_len(b));
		ck_assert_int_eq(admit_lru_set(l.c, "k", 1, v, lend_len(b)), ADMIT_OK);
		if (i % 8 == 0)
			admit_lru_delete(l.c, "k", 1);
	}
	atomic_store(&l.stop, true);
	pthread_join(t, NULL);
	ck_assert_uint_eq(atomic_load(&l.bad), 0);
	ck_assert_uint_gt(atomic_load(&l.hits), 0);
	admit_lru_free(l.c);
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
	tcase_add_test(tc, test_get_with);
	tcase_add_test(tc, test_get_with_whole);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
