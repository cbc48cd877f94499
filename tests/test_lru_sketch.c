/*
 * Unit tests for admit_lru's admission state as bytes (include/admit/lru.h,
 * admit_lru_sketch_size, _export, _import): a round trip gives the same
 * admission decisions, and bytes of another geometry or seed, truncated
 * or altered are refused with the cache unchanged.  Linked against
 * libadmit.la, so each test also shows the names are exported.  Seeds are
 * fixed.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <admit/admit.h>

#include "testutil.h"

#define SEED 0x5eed5ca1ull
#define CAP 100u
#define HOT 1000u        /* set 10 times before the export */
#define WARMISH 2000u    /* set twice: below the entries' counts */

static struct admit_lru *
make(uint64_t cap, enum admit_lru_policy pol, uint64_t seed)
{
	struct admit_lru_config cfg = {
		.capacity = cap, .policy = pol, .shards = 1, .seed = seed,
	};
	struct admit_lru *c;

	ck_assert_int_eq(admit_lru_new(&cfg, &c), ADMIT_OK);
	return c;
}

static void
fill_once(struct admit_lru *c)
{
	for (uint64_t i = 0; i < CAP; i++)
		ck_assert_int_eq(admit_lru_set(c, KEY(i), "", 0), ADMIT_OK);
}

/* times sets of key k (a set is what records a key the cache does not
 * hold: a miss is only counted), whether stored or not. */
static void
record(struct admit_lru *c, uint64_t k, int times)
{
	for (int t = 0; t < times; t++) {
		enum admit_status st = admit_lru_set(c, KEY(k), "", 0);

		ck_assert(st == ADMIT_OK || st == ADMIT_REJECTED);
	}
}

/* A cache full of keys each accessed 5 times, HOT set 10 times and
 * WARMISH twice, exported: *len bytes, malloc'd. */
static unsigned char *
trained(enum admit_lru_policy pol, struct admit_lru **out, size_t *len)
{
	struct admit_lru *c = make(CAP, pol, SEED);
	unsigned char *buf;
	size_t vlen, size;

	for (int round = 0; round < 5; round++)
		for (uint64_t i = 0; i < CAP; i++)
			if (admit_lru_get(c, KEY(i), NULL, 0, &vlen) == ADMIT_NOTFOUND)
				ck_assert_int_eq(admit_lru_set(c, KEY(i), "", 0),
				                 ADMIT_OK);
	record(c, WARMISH, 2);
	record(c, HOT, 10);
	admit_lru_delete(c, KEY(HOT));
	ck_assert_int_eq(admit_lru_sketch_size(c, &size), ADMIT_OK);
	buf = malloc(size);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(admit_lru_sketch_export(c, buf, size, len), ADMIT_OK);
	ck_assert_uint_eq(*len, size);
	*out = c;
	return buf;
}

/* The cache's export, to compare before and after a refused import. */
static unsigned char *
snapshot(struct admit_lru *c, size_t *len)
{
	size_t size;
	unsigned char *buf;

	ck_assert_int_eq(admit_lru_sketch_size(c, &size), ADMIT_OK);
	buf = malloc(size);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(admit_lru_sketch_export(c, buf, size, len), ADMIT_OK);
	return buf;
}

static void
assert_unchanged(struct admit_lru *c, const unsigned char *before,
                 size_t len)
{
	size_t n;
	unsigned char *now = snapshot(c, &n);

	ck_assert_uint_eq(n, len);
	ck_assert_msg(memcmp(now, before, len) == 0, "the sketch changed");
	free(now);
}

/* HOT, set 10 times before the export, beats a victim accessed 5 times in
 * the cache the export is imported into, as in the cache it came from; in
 * a fresh cache holding the same keys (each accessed once) it is rejected.
 * WARMISH, set twice before, loses in the trained and the imported
 * cache. */
START_TEST(test_round_trip_admits)
{
	static const enum admit_lru_policy pols[] = {
		ADMIT_LRU_TINYLFU, ADMIT_LRU_WTINYLFU,
	};
	enum admit_lru_policy pol = pols[_i];
	struct admit_lru *a, *b = make(CAP, pol, SEED), *fresh = make(CAP, pol, SEED);
	size_t len;
	unsigned char *buf = trained(pol, &a, &len);
	struct admit_lru_stats sa, sb, sf;

	fill_once(b);
	fill_once(fresh);
	ck_assert_int_eq(admit_lru_sketch_import(b, buf, len), ADMIT_OK);
	assert_unchanged(b, buf, len);   /* the import put back every byte */
	for (int k = 0; k < 2; k++) {
		uint64_t key = k ? WARMISH : HOT;

		record(a, key, 1);
		record(b, key, 1);
		record(fresh, key, 1);
		if (pol == ADMIT_LRU_WTINYLFU)   /* out of the window */
			for (uint64_t i = 0; i < 4 * CAP; i++) {
				admit_lru_set(a, KEY(5000 + i), "", 0);
				admit_lru_set(b, KEY(5000 + i), "", 0);
				admit_lru_set(fresh, KEY(5000 + i), "", 0);
			}
	}
	admit_lru_stats(a, &sa);
	admit_lru_stats(b, &sb);
	admit_lru_stats(fresh, &sf);
	ck_assert_msg(admit_lru_peek(a, KEY(HOT), NULL, 0, &len) == ADMIT_OK,
	              "the trained cache admits HOT");
	ck_assert_msg(admit_lru_peek(b, KEY(HOT), NULL, 0, &len) == ADMIT_OK,
	              "the imported cache admits HOT");
	ck_assert_msg(admit_lru_peek(fresh, KEY(HOT), NULL, 0, &len) ==
	              ADMIT_NOTFOUND, "a fresh cache rejects HOT");
	ck_assert_int_eq(admit_lru_peek(a, KEY(WARMISH), NULL, 0, &len),
	                 ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_peek(b, KEY(WARMISH), NULL, 0, &len),
	                 ADMIT_NOTFOUND);
	ck_assert_uint_eq(sa.admitted, sb.admitted);
	if (pol == ADMIT_LRU_TINYLFU)   /* HOT, the one contest won */
		ck_assert_uint_eq(sb.admitted, sf.admitted + 1);
	free(buf);
	admit_lru_free(a);
	admit_lru_free(b);
	admit_lru_free(fresh);
}
END_TEST

/* Another capacity or seed: ADMIT_EINVAL; truncated, extended or any
 * header or table byte flipped: refused; the cache unchanged each time. */
START_TEST(test_refusals)
{
	struct admit_lru *a, *other_cap = make(10 * CAP, ADMIT_LRU_TINYLFU, SEED);
	struct admit_lru *other_seed = make(CAP, ADMIT_LRU_TINYLFU, SEED + 1);
	struct admit_lru *b = make(CAP, ADMIT_LRU_TINYLFU, SEED);
	size_t len, blen, n;
	unsigned char *buf = trained(ADMIT_LRU_TINYLFU, &a, &len), *before, *bad;

	fill_once(b);
	record(b, 7777, 4);
	before = snapshot(b, &blen);
	ck_assert_uint_eq(blen, len);

	n = 0;
	unsigned char *oc = snapshot(other_cap, &n);
	ck_assert_uint_ne(n, len);
	ck_assert_int_eq(admit_lru_sketch_import(other_cap, buf, len), ADMIT_EINVAL);
	assert_unchanged(other_cap, oc, n);
	free(oc);
	unsigned char *os = snapshot(other_seed, &n);
	ck_assert_int_eq(admit_lru_sketch_import(other_seed, buf, len), ADMIT_EINVAL);
	assert_unchanged(other_seed, os, n);
	free(os);

	for (size_t cut = 0; cut < len; cut += (cut < 64 ? 1 : len / 7)) {
		enum admit_status st = admit_lru_sketch_import(b, buf, cut);

		ck_assert_int_eq(st, cut ? ADMIT_ECORRUPT : ADMIT_EINVAL);
	}
	bad = malloc(len + 8);
	ck_assert_ptr_nonnull(bad);
	memcpy(bad, buf, len);
	memset(bad + len, 0, 8);
	ck_assert_int_eq(admit_lru_sketch_import(b, bad, len + 8), ADMIT_ECORRUPT);
	for (size_t i = 0; i < len; i += (i < 64 ? 1 : 61)) {
		enum admit_status st;

		bad[i] ^= 0x10;
		st = admit_lru_sketch_import(b, bad, len);
		ck_assert_msg(st == ADMIT_ECORRUPT || st == ADMIT_EINVAL,
		              "byte %zu flipped: %d", i, (int)st);
		bad[i] ^= 0x10;
	}
	assert_unchanged(b, before, blen);
	/* The same bytes unaltered are taken. */
	ck_assert_int_eq(admit_lru_sketch_import(b, bad, len), ADMIT_OK);
	free(bad);
	free(before);
	free(buf);
	admit_lru_free(a);
	admit_lru_free(b);
	admit_lru_free(other_cap);
	admit_lru_free(other_seed);
}
END_TEST

START_TEST(test_bad_arguments)
{
	struct admit_lru *c = make(CAP, ADMIT_LRU_TINYLFU, SEED);
	struct admit_lru *plain = make(CAP, ADMIT_LRU_PLAIN, SEED);
	size_t size = 1, len = 1;
	unsigned char *buf;

	ck_assert_int_eq(admit_lru_sketch_size(NULL, &size), ADMIT_EINVAL);
	ck_assert_uint_eq(size, 0);
	ck_assert_int_eq(admit_lru_sketch_size(c, NULL), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_sketch_size(c, &size), ADMIT_OK);
	ck_assert_uint_gt(size, 56);
	buf = calloc(1, size);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(admit_lru_sketch_export(NULL, buf, size, &len),
	                 ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_sketch_export(c, buf, size, NULL),
	                 ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_sketch_export(c, NULL, 0, &len), ADMIT_EBUFFER);
	ck_assert_uint_eq(len, size);
	len = 0;
	ck_assert_int_eq(admit_lru_sketch_export(c, buf, size - 1, &len),
	                 ADMIT_EBUFFER);
	ck_assert_uint_eq(len, size);
	for (size_t i = 0; i < size; i++)
		ck_assert_uint_eq(buf[i], 0);   /* nothing written */
	ck_assert_int_eq(admit_lru_sketch_import(NULL, buf, size), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_sketch_import(c, NULL, size), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_sketch_import(c, buf, 0), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_sketch_import(c, buf, size), ADMIT_ECORRUPT);

	ck_assert_int_eq(admit_lru_sketch_size(plain, &size), ADMIT_NOTFOUND);
	ck_assert_uint_eq(size, 0);
	ck_assert_int_eq(admit_lru_sketch_export(plain, buf, 1, &len),
	                 ADMIT_NOTFOUND);
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(admit_lru_sketch_import(plain, buf, 1), ADMIT_NOTFOUND);
	free(buf);
	admit_lru_free(c);
	admit_lru_free(plain);
}
END_TEST

/* Exports while two threads use the cache, each imported into a cache of
 * the same geometry and seed (TSan: no race). */
struct user {
	struct admit_lru *c;
	unsigned id;
	_Atomic bool *stop;
};

static void *
use(void *arg)
{
	struct user *u = arg;
	size_t vlen;

	for (uint64_t i = 0; !atomic_load(u->stop); i++) {
		uint64_t k = test_key(i * 2 + u->id) % (4 * CAP);

		if (admit_lru_get(u->c, KEY(k), NULL, 0, &vlen) == ADMIT_NOTFOUND)
			admit_lru_set(u->c, KEY(k), "", 0);
	}
	return NULL;
}

START_TEST(test_export_concurrent)
{
	struct admit_lru *c = make(CAP, ADMIT_LRU_ADAPTIVE, SEED);
	struct admit_lru *d = make(CAP, ADMIT_LRU_ADAPTIVE, SEED);
	_Atomic bool stop = false;
	struct user u[2] = { { c, 0, &stop }, { c, 1, &stop } };
	pthread_t t[2];
	size_t size, len;
	unsigned char *buf;

	ck_assert_int_eq(admit_lru_sketch_size(c, &size), ADMIT_OK);
	buf = malloc(size);
	ck_assert_ptr_nonnull(buf);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, use, &u[i]), 0);
	for (int i = 0; i < 50; i++) {
		ck_assert_int_eq(admit_lru_sketch_export(c, buf, size, &len),
		                 ADMIT_OK);
		ck_assert_int_eq(admit_lru_sketch_import(d, buf, len), ADMIT_OK);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	free(buf);
	admit_lru_free(c);
	admit_lru_free(d);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("lru_sketch");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_round_trip_admits, 0, 2);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_bad_arguments);
	tcase_add_test(tc, test_export_concurrent);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return test_run(srunner_create(suite()));
}
