/*
 * Unit tests for admit_chain: growth, the stated false-positive bound, the
 * multiset operations across filters, dump/restore against every truncation
 * and byte flip, and add_unique racing growth.
 */
#include <check.h>
#include <endian.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <admit/admit.h>

#include "testutil.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#define SEED 0x5eedc4a1ull
#define ABSENT (1ull << 40)

static struct admit_chain *
make(uint64_t capacity, unsigned expansion, unsigned max_filters)
{
	struct admit_chain_config cfg = {
		.capacity = capacity, .expansion = expansion,
		.max_filters = max_filters, .stripes = 4, .seed = SEED,
	};
	struct admit_chain *c = NULL;

	ck_assert_int_eq(admit_chain_new(&cfg, &c), ADMIT_OK);
	return c;
}

/* Keys 0..n-1 (all added) are all found; returns how many of `probes`
 * keys never added are found too. */
static uint64_t
false_positives(struct admit_chain *c, uint64_t n, uint64_t probes)
{
	struct tally t = TALLY_INIT;
	uint64_t fp = 0;

	for (uint64_t i = 0; i < n; i++)
		tally(&t, admit_chain_contains(c, KEY(i)), i);
	ck_assert_tally(t, "false negative");
	for (uint64_t i = 0; i < probes; i++)
		fp += admit_chain_contains(c, KEY(ABSENT + i));
	return fp;
}

START_TEST(test_bad_config)
{
	struct admit_chain *c = (struct admit_chain *)0x1;
	const struct admit_chain_config bad[] = {
		{ .capacity = 0 },
		{ .capacity = ADMIT_CUCKOO_MAX_CAPACITY + 1 },
		{ .capacity = UINT64_MAX },
		{ .capacity = 10, .expansion = ADMIT_CHAIN_MAX_EXPANSION + 1 },
		{ .capacity = 10, .max_filters = ADMIT_CHAIN_MAX_FILTERS + 1 },
		{ .capacity = 10, .stripes = 3 },
	};
	struct admit_chain_config ok = { .capacity = 10 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(admit_chain_new(&bad[i], &c), ADMIT_EINVAL);
		ck_assert_ptr_eq(c, (struct admit_chain *)0x1);
	}
	ck_assert_int_eq(admit_chain_new(NULL, &c), ADMIT_EINVAL);
	ck_assert_int_eq(admit_chain_new(&ok, NULL), ADMIT_EINVAL);
	ck_assert_int_eq(admit_chain_add(NULL, "a", 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_chain_add_unique(NULL, "a", 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_chain_delete(NULL, "a", 1), ADMIT_EINVAL);
	ck_assert(!admit_chain_contains(NULL, "a", 1));
	ck_assert_uint_eq(admit_chain_count(NULL, "a", 1), 0);
	ck_assert_int_eq(admit_chain_info(NULL, NULL), ADMIT_EINVAL);
	admit_chain_free(NULL);

	ck_assert_int_eq(admit_chain_new(&ok, &c), ADMIT_OK);
	ck_assert_int_eq(admit_chain_add(c, NULL, 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_chain_add(c, NULL, 0), ADMIT_OK);
	ck_assert(admit_chain_contains(c, NULL, 0));
	admit_chain_free(c);
}
END_TEST

/* The case: reserved for 1,000, grown to 20,000.  No key lost, the
 * chain grew, and the measured false-positive rate is below the stated
 * bound, which is below 1 %. */
START_TEST(test_growth_fpr)
{
	const unsigned exps[] = { 1, 2, 4 };

	for (size_t e = 0; e < 3; e++) {
		struct admit_chain *c = make(1000, exps[e], 0);
		struct admit_chain_info info;
		struct tally t = TALLY_INIT;
		uint64_t fp = 0, probes = 400000;

		for (uint64_t i = 0; i < 20000; i++)
			tally(&t, admit_chain_add(c, KEY(i)) == ADMIT_OK, i);
		ck_assert_tally(t, "add");
		fp = false_positives(c, 20000, probes);
		ck_assert_int_eq(admit_chain_info(c, &info), ADMIT_OK);
		ck_assert_uint_gt(info.filters, 1);
		ck_assert_uint_eq(info.items, 20000);
		ck_assert_uint_ge(info.capacity, 20000);
		ck_assert_double_eq_tol(info.fpr_bound,
		                        info.filters * 8.0 / 65536, 1e-12);
		ck_assert_double_lt(info.fpr_bound, 0.01);
		/* The bound is on the expected rate; a sample of 400,000
		 * probes may exceed it by noise: allow 4 standard deviations
		 * (a full filter sits right at its bound). */
		ck_assert_msg(fp < info.fpr_bound * probes +
		              4 * sqrt(info.fpr_bound * probes),
		              "expansion %u: fpr %g above bound %g", exps[e],
		              (double)fp / probes, info.fpr_bound);
		if (exps[e] == 1)
			ck_assert_uint_ge(info.filters, 20);
		admit_chain_free(c);
	}
}
END_TEST

/* The bound holds because growth stops at max_filters: the add that would
 * need one more filter answers ADMIT_FULL and changes nothing. */
START_TEST(test_full)
{
	struct admit_chain *c = make(100, 1, 3);
	struct admit_chain_info a, b;
	enum admit_status st = ADMIT_OK;
	uint64_t i;

	for (i = 0; i < 100000 && st == ADMIT_OK; i++)
		st = admit_chain_add(c, KEY(i));
	ck_assert_int_eq(st, ADMIT_FULL);
	ck_assert_int_eq(admit_chain_info(c, &a), ADMIT_OK);
	ck_assert_uint_eq(a.filters, 3);
	ck_assert_uint_eq(a.items, i - 1);
	ck_assert_int_eq(admit_chain_add(c, KEY(i - 1)), ADMIT_FULL);
	ck_assert_int_eq(admit_chain_add_unique(c, KEY(i - 1)), ADMIT_FULL);
	ck_assert_int_eq(admit_chain_info(c, &b), ADMIT_OK);
	ck_assert_uint_eq(b.items, a.items);
	for (uint64_t j = 0; j + 1 < i; j++)
		ck_assert(admit_chain_contains(c, KEY(j)));
	admit_chain_free(c);

	/* One key over and over: 8 copies fill its two buckets; the chain may
	 * grow while its newest filter is at least half full, then refuses. */
	c = make(1000, 2, 0);
	for (i = 0, st = ADMIT_OK; i < 10000 && st == ADMIT_OK; i++)
		st = admit_chain_add(c, "same", 4);
	ck_assert_int_eq(st, ADMIT_FULL);
	ck_assert_uint_eq(i - 1, 8);
	ck_assert_int_eq(admit_chain_info(c, &a), ADMIT_OK);
	ck_assert_uint_eq(a.filters, 1);
	ck_assert_int_eq(admit_chain_add(c, "other", 5), ADMIT_OK);
	admit_chain_free(c);
	c = make(4, 2, 0);
	for (i = 0, st = ADMIT_OK; i < 10000 && st == ADMIT_OK; i++)
		st = admit_chain_add(c, "same", 4);
	ck_assert_int_eq(st, ADMIT_FULL);
	ck_assert_int_eq(admit_chain_info(c, &a), ADMIT_OK);
	ck_assert_uint_le(a.filters, 3);
	ck_assert_uint_eq(a.items, i - 1);
	admit_chain_free(c);

	/* max_filters 1 never grows. */
	c = make(10, 0, 1);
	for (i = 0, st = ADMIT_OK; i < 1000 && st == ADMIT_OK; i++)
		st = admit_chain_add(c, KEY(i));
	ck_assert_int_eq(st, ADMIT_FULL);
	ck_assert_int_eq(admit_chain_info(c, &a), ADMIT_OK);
	ck_assert_uint_eq(a.filters, 1);
	admit_chain_free(c);
}
END_TEST

/* A chain that cannot grow still answers add_unique of a key it holds with
 * ADMIT_EXISTS, not ADMIT_FULL: with or without max_load (whose adds make
 * room before they insert) and single_writer. */
START_TEST(test_full_unique_present)
{
	struct admit_chain_config cfg = {
		.capacity = 64, .max_filters = 2, .stripes = 4, .seed = SEED,
		.max_load = _i & 1 ? 0.5 : 0, .single_writer = _i & 2,
	};
	struct admit_chain *c = NULL;
	struct admit_chain_info a, b;
	enum admit_status st = ADMIT_OK;
	uint64_t i;

	ck_assert_int_eq(admit_chain_new(&cfg, &c), ADMIT_OK);
	for (i = 0; i < 100000 && st == ADMIT_OK; i++)
		st = admit_chain_add(c, KEY(i));
	ck_assert_int_eq(st, ADMIT_FULL);
	ck_assert_int_eq(admit_chain_info(c, &a), ADMIT_OK);
	ck_assert_uint_eq(a.filters, 2);
	/* Key 0 is in the oldest filter, key i - 2 (the last added) in the
	 * newest. */
	ck_assert_int_eq(admit_chain_add_unique(c, KEY(0)), ADMIT_EXISTS);
	ck_assert_int_eq(admit_chain_add_unique(c, KEY(i - 2)), ADMIT_EXISTS);
	ck_assert_int_eq(admit_chain_info(c, &b), ADMIT_OK);
	ck_assert_uint_eq(b.items, a.items);
	admit_chain_free(c);
}
END_TEST

START_TEST(test_multiset)
{
	struct admit_chain *c = make(50, 2, 0);
	struct admit_chain_info info;

	/* A key three times, then enough others to grow the chain twice, then
	 * the key again: its copies sit in different filters. */
	for (int k = 0; k < 3; k++)
		ck_assert_int_eq(admit_chain_add(c, "dup", 3), ADMIT_OK);
	for (uint64_t i = 0; i < 400; i++)
		ck_assert_int_eq(admit_chain_add(c, KEY(i)), ADMIT_OK);
	ck_assert_int_eq(admit_chain_add(c, "dup", 3), ADMIT_OK);
	ck_assert_int_eq(admit_chain_info(c, &info), ADMIT_OK);
	ck_assert_uint_ge(info.filters, 3);
	ck_assert_uint_eq(admit_chain_count(c, "dup", 3), 4);
	/* add_unique sees the copy in an old filter. */
	ck_assert_int_eq(admit_chain_add_unique(c, KEY(0)), ADMIT_EXISTS);
	ck_assert_int_eq(admit_chain_add_unique(c, "new", 3), ADMIT_OK);
	ck_assert_int_eq(admit_chain_add_unique(c, "new", 3), ADMIT_EXISTS);
	for (int k = 4; k > 0; k--) {
		ck_assert(admit_chain_contains(c, "dup", 3));
		ck_assert_int_eq(admit_chain_delete(c, "dup", 3), ADMIT_OK);
		ck_assert_uint_eq(admit_chain_count(c, "dup", 3), (unsigned)k - 1);
	}
	ck_assert(!admit_chain_contains(c, "dup", 3));
	ck_assert_int_eq(admit_chain_delete(c, "dup", 3), ADMIT_NOTFOUND);
	/* Deleting every key leaves the chain empty, and no other key lost on
	 * the way. */
	for (uint64_t i = 0; i < 400; i++) {
		ck_assert(admit_chain_contains(c, KEY(i)));
		ck_assert_int_eq(admit_chain_delete(c, KEY(i)), ADMIT_OK);
	}
	ck_assert_int_eq(admit_chain_delete(c, "new", 3), ADMIT_OK);
	ck_assert_int_eq(admit_chain_info(c, &info), ADMIT_OK);
	ck_assert_uint_eq(info.items, 0);
	admit_chain_free(c);
}
END_TEST

/* Deleting with admit_chain_delete() can remove another key's matching
 * fingerprint from a newer filter and so lose that key; deleting each copy
 * from the filter admit_chain_add_at() reported never does.  Two identical
 * chains (one seed, one order) are fed the same keys; half are deleted from
 * each, one way in each. */
START_TEST(test_delete_at)
{
	enum { N = 500000 };
	struct admit_chain *a = make(1000, 2, 0), *b = make(1000, 2, 0);
	struct admit_chain_info info;
	unsigned *where = malloc(N * sizeof(*where));
	uint64_t lost_plain = 0, lost_at = 0;
	unsigned fa;

	ck_assert_ptr_nonnull(where);
	for (uint64_t i = 0; i < N; i++) {
		ck_assert_int_eq(admit_chain_add_at(a, KEY(i), &fa), ADMIT_OK);
		ck_assert_int_eq(admit_chain_add_at(b, KEY(i), &where[i]),
		                 ADMIT_OK);
		ck_assert_uint_eq(fa, where[i]);
		ck_assert_int_eq(admit_chain_info(b, &info), ADMIT_OK);
		ck_assert_uint_eq(where[i], info.filters - 1);
	}
	ck_assert_uint_ge(info.filters, 6);
	/* Bad indices and a filter without the key change nothing. */
	ck_assert_int_eq(admit_chain_delete_at(b, info.filters, KEY(0)),
	                 ADMIT_EINVAL);
	ck_assert_int_eq(admit_chain_delete_at(NULL, 0, KEY(0)), ADMIT_EINVAL);
	ck_assert_int_eq(admit_chain_delete_at(b, 0, KEY(ABSENT)),
	                 ADMIT_NOTFOUND);
	for (uint64_t i = 0; i < N; i += 2) {
		(void)admit_chain_delete(a, KEY(i)); /* may miss: its copy lost */
		ck_assert_int_eq(admit_chain_delete_at(b, where[i], KEY(i)),
		                 ADMIT_OK);
	}
	for (uint64_t i = 1; i < N; i += 2) {
		lost_plain += !admit_chain_contains(a, KEY(i));
		lost_at += !admit_chain_contains(b, KEY(i));
	}
	ck_assert_uint_eq(lost_at, 0);
	/* The scenario does reach the case delete_at exists for. */
	ck_assert_uint_gt(lost_plain, 0);
	/* add_unique_at reports the filter too, and only on ADMIT_OK. */
	fa = 99;
	ck_assert_int_eq(admit_chain_add_unique_at(b, KEY(1), &fa),
	                 ADMIT_EXISTS);
	ck_assert_uint_eq(fa, 99);
	ck_assert_int_eq(admit_chain_add_unique_at(b, KEY(ABSENT), &fa),
	                 ADMIT_OK);
	ck_assert_int_eq(admit_chain_delete_at(b, fa, KEY(ABSENT)), ADMIT_OK);
	free(where);
	admit_chain_free(a);
	admit_chain_free(b);
}
END_TEST

/* Byte flips of a dump (every byte of the first 200, then every step-th;
 * none in [skip_lo, skip_hi)) with the outer checksum fixed up, so that the
 * checks behind it are reached, are all refused, and nothing is written. */
static void
flips_refused(unsigned char *b, size_t len, size_t step, size_t skip_lo,
              size_t skip_hi)
{
	struct admit_chain *e = (struct admit_chain *)0x1;

	for (size_t i = 0; i + 8 < len; i += (i < 200 ? 1 : step)) {
		uint64_t sum;

		if (i >= skip_lo && i < skip_hi)
			continue;
		b[i] ^= 0x10;
		sum = htole64(XXH3_64bits(b, len - 8));
		memcpy(b + len - 8, &sum, 8);
		ck_assert_msg(admit_chain_restore(b, len, &e) == ADMIT_ECORRUPT,
		              "flip at %zu accepted", i);
		b[i] ^= 0x10;
	}
	ck_assert_ptr_eq(e, (struct admit_chain *)0x1);
}

/* d dumps the very bytes of c's dump, which is returned (free it). */
static void *
same_dump(const struct admit_chain *c, const struct admit_chain *d,
          size_t *len)
{
	void *buf = NULL, *buf2 = NULL;
	size_t len2 = 0;

	ck_assert_int_eq(admit_chain_dump(c, &buf, len), ADMIT_OK);
	ck_assert_int_eq(admit_chain_dump(d, &buf2, &len2), ADMIT_OK);
	ck_assert_uint_eq(*len, len2);
	ck_assert(memcmp(buf, buf2, len2) == 0);
	free(buf2);
	return buf;
}

static void
same_answers(struct admit_chain *a, struct admit_chain *b, uint64_t n)
{
	struct admit_chain_info ia, ib;

	for (uint64_t i = 0; i < n; i++) {
		ck_assert(admit_chain_contains(b, KEY(i)));
		ck_assert_int_eq(admit_chain_contains(a, KEY(ABSENT + i)),
		                 admit_chain_contains(b, KEY(ABSENT + i)));
	}
	ck_assert_int_eq(admit_chain_info(a, &ia), ADMIT_OK);
	ck_assert_int_eq(admit_chain_info(b, &ib), ADMIT_OK);
	ck_assert_uint_eq(ia.filters, ib.filters);
	ck_assert_uint_eq(ia.items, ib.items);
	ck_assert_uint_eq(ia.capacity, ib.capacity);
	ck_assert_uint_eq(ia.expansion, ib.expansion);
}

START_TEST(test_dump_restore)
{
	struct admit_chain *c = make(20, 2, 0), *d = NULL, *e;
	void *buf = NULL;
	unsigned char *b;
	size_t len = 0;

	for (uint64_t i = 0; i < 150; i++)
		ck_assert_int_eq(admit_chain_add(c, KEY(i)), ADMIT_OK);
	ck_assert_int_eq(admit_chain_dump(c, &buf, &len), ADMIT_OK);
	ck_assert_int_eq(admit_chain_restore(buf, len, &d), ADMIT_OK);
	same_answers(c, d, 150);
	/* Restored, it grows on as the original would: same seeds per filter. */
	ck_assert_int_eq(admit_chain_add(c, "x", 1), ADMIT_OK);
	ck_assert_int_eq(admit_chain_add(d, "x", 1), ADMIT_OK);
	free(buf);
	buf = same_dump(c, d, &len);
	admit_chain_free(d);

	/* Every truncation and every byte flip is refused. */
	b = buf;
	e = (struct admit_chain *)0x1;
	for (size_t n = 0; n < len; n++)
		ck_assert_int_eq(admit_chain_restore(b, n, &e), ADMIT_ECORRUPT);
	for (size_t i = 0; i < len; i++) {
		b[i] ^= 0x10;
		ck_assert_int_eq(admit_chain_restore(b, len, &e), ADMIT_ECORRUPT);
		b[i] ^= 0x10;
	}
	/* The same flips with the outer checksum fixed up, so the checks
	 * behind it are reached: each filter's own checksum, the header's
	 * ranges, each filter's capacity and seed against the chain's. */
	flips_refused(b, len, 1, 0, 0);
	ck_assert_int_eq(admit_chain_restore(NULL, 0, &e), ADMIT_ECORRUPT);
	ck_assert_int_eq(admit_chain_restore(NULL, 5, &e), ADMIT_EINVAL);
	ck_assert_int_eq(admit_chain_restore(b, len, NULL), ADMIT_EINVAL);
	free(buf);
	admit_chain_free(c);
}
END_TEST

/* A cuckoo filter's own snapshot file is not a chain. */
START_TEST(test_save_load)
{
	char dir[] = "/tmp/test_chain.XXXXXX", path[64], cpath[64];
	struct admit_chain *c = make(30, 3, 0), *d = NULL;
	struct admit_cuckoo_config cc = { .capacity = 100, .seed = 1 };
	struct admit_cuckoo *f = NULL;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/chain", dir);
	snprintf(cpath, sizeof(cpath), "%s/cuckoo", dir);
	for (uint64_t i = 0; i < 500; i++)
		ck_assert_int_eq(admit_chain_add(c, KEY(i)), ADMIT_OK);
	ck_assert_int_eq(admit_chain_save(c, path), ADMIT_OK);
	ck_assert_int_eq(admit_chain_load(path, &d), ADMIT_OK);
	same_answers(c, d, 500);
	admit_chain_free(d);
	ck_assert_int_eq(admit_cuckoo_new(&cc, &f), ADMIT_OK);
	ck_assert_int_eq(admit_cuckoo_save(f, cpath), ADMIT_OK);
	d = NULL;
	ck_assert_int_eq(admit_chain_load(cpath, &d), ADMIT_ECORRUPT);
	ck_assert_int_eq(admit_chain_load(dir, &d), ADMIT_ENOTREG);
	ck_assert_ptr_null(d);
	ck_assert_int_eq(admit_chain_save(c, "/nonexistent/dir/x"), ADMIT_EIO);
	ck_assert_int_eq(admit_chain_save(c, dir), ADMIT_ENOTREG);
	admit_cuckoo_free(f);
	unlink(path);
	unlink(cpath);
	rmdir(dir);
	admit_chain_free(c);
}
END_TEST

/* Threads add_unique the same keys while the chain grows: each key is
 * admitted exactly once. */
#define NT 4
#define NKEYS 20000
static struct admit_chain *race_chain;
static _Atomic unsigned race_ok[NKEYS];

static void *
racer(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < NKEYS; i++)
		if (admit_chain_add_unique(race_chain, KEY(i)) == ADMIT_OK)
			atomic_fetch_add(&race_ok[i], 1);
	return NULL;
}

START_TEST(test_unique_race)
{
	pthread_t t[NT];
	struct admit_chain_info info;
	uint64_t once = 0;

	race_chain = make(500, 2, 0);
	for (int i = 0; i < NT; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, racer, NULL), 0);
	for (int i = 0; i < NT; i++)
		pthread_join(t[i], NULL);
	ck_assert_int_eq(admit_chain_info(race_chain, &info), ADMIT_OK);
	ck_assert_uint_gt(info.filters, 1);
	for (uint64_t i = 0; i < NKEYS; i++)
		once += atomic_load(&race_ok[i]) == 1;
	/* A key may be refused as a false positive of an earlier one, never
	 * admitted twice. */
	for (uint64_t i = 0; i < NKEYS; i++)
		ck_assert_uint_le(atomic_load(&race_ok[i]), 1);
	ck_assert_uint_eq(info.items, once);
	ck_assert_uint_ge(once, NKEYS - 20);
	admit_chain_free(race_chain);
}
END_TEST

static struct admit_chain *
make_wl(uint64_t capacity, unsigned expansion, unsigned max_filters,
        unsigned bits, double max_load)
{
	struct admit_chain_config cfg = {
		.capacity = capacity, .expansion = expansion,
		.max_filters = max_filters, .stripes = 4, .seed = SEED,
		.fingerprint_bits = bits, .max_load = max_load,
	};
	struct admit_chain *c = NULL;

	ck_assert_int_eq(admit_chain_new(&cfg, &c), ADMIT_OK);
	return c;
}

/* Every filter within its limit and its load, and the chain's bound the
 * sum of the filters' shares, each at most 8 x L / (2^f - 2). */
static void
check_limits(const struct admit_chain *c, unsigned bits, double max_load)
{
	struct admit_chain_info info;
	double sum = 0;

	ck_assert_int_eq(admit_chain_info(c, &info), ADMIT_OK);
	ck_assert_uint_eq(info.fingerprint_bits, bits);
	for (unsigned i = 0; i < info.filters; i++) {
		struct admit_chain_filter_info fi;

		ck_assert_int_eq(admit_chain_filter_info(c, i, &fi), ADMIT_OK);
		ck_assert_uint_eq(fi.fingerprint_bits, bits);
		ck_assert_uint_eq(fi.number, info.trimmed + i);
		ck_assert_uint_le(fi.items, fi.capacity);
		ck_assert_double_le((double)fi.items, max_load * (double)fi.slots);
		ck_assert_double_le(fi.fpr_bound,
		                    8 * max_load / ((1u << bits) - 2.0) + 1e-15);
		sum += fi.fpr_bound;
	}
	ck_assert_double_eq_tol(info.fpr_bound, sum, 1e-15);
}

START_TEST(test_width_load_config)
{
	struct admit_chain *c = (struct admit_chain *)0x1;
	const struct admit_chain_config bad[] = {
		{ .capacity = 10, .fingerprint_bits = 12 },
		{ .capacity = 10, .fingerprint_bits = 32 },
		{ .capacity = 10, .max_load = -0.5 },
		{ .capacity = 10, .max_load = 0.96 },
		{ .capacity = 10, .max_load = 1e-4 },
		{ .capacity = 10, .max_load = NAN },
		{ .capacity = ADMIT_CUCKOO_MAX_CAPACITY, .max_load = 0.5 },
	};
	struct admit_chain_filter_info fi;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(admit_chain_new(&bad[i], &c), ADMIT_EINVAL);
		ck_assert_ptr_eq(c, (struct admit_chain *)0x1);
	}
	c = make_wl(100, 0, 0, 8, 0);
	ck_assert_int_eq(admit_chain_filter_info(c, 1, &fi), ADMIT_EINVAL);
	ck_assert_int_eq(admit_chain_filter_info(c, 0, NULL), ADMIT_EINVAL);
	ck_assert_int_eq(admit_chain_filter_info(NULL, 0, &fi), ADMIT_EINVAL);
	ck_assert_int_eq(admit_chain_filter_info(c, 0, &fi), ADMIT_OK);
	ck_assert_uint_eq(fi.fingerprint_bits, 8);
	ck_assert_uint_eq(fi.capacity, 100);
	ck_assert_double_eq(fi.fpr_bound, 8.0 / 256);
	ck_assert_uint_eq(fi.memory * 8, fi.slots * 8); /* a byte a slot */
	admit_chain_free(c);
}
END_TEST

/* max_load keeps every filter at most that full (the chain grows when the
 * newest holds its capacity, not when it refuses), so the stated bound,
 * which 8-bit fingerprints need to be loose, holds and is measured. */
START_TEST(test_width_load)
{
	const struct { unsigned bits; double load; } cases[] = {
		{ 16, 0.5 }, { 8, 0.1 }, { 8, 0.95 }, { 16, 0.02 },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		unsigned bits = cases[k].bits;
		double load = cases[k].load;
		struct admit_chain *c = make_wl(1000, 2, 0, bits, load);
		struct admit_chain_info info;
		struct admit_chain_filter_info fi;
		struct tally t = TALLY_INIT;
		uint64_t fp = 0, probes = 400000;

		for (uint64_t i = 0; i < 20000; i++) {
			tally(&t, admit_chain_add(c, KEY(i)) == ADMIT_OK, i);
			if (i % 997 == 0)
				check_limits(c, bits, load);
		}
		ck_assert_tally(t, "add");
		check_limits(c, bits, load);
		/* The first filter took exactly its capacity before the chain
		 * grew (1000 < 0.95 x its slots at any of these loads). */
		ck_assert_int_eq(admit_chain_filter_info(c, 0, &fi), ADMIT_OK);
		ck_assert_uint_eq(fi.items, 1000);
		ck_assert_uint_eq(fi.capacity, 1000);
		fp = false_positives(c, 20000, probes);
		ck_assert_int_eq(admit_chain_info(c, &info), ADMIT_OK);
		ck_assert_uint_eq(info.filters, 5); /* 1k+2k+4k+8k+16k */
		ck_assert_double_eq(info.max_load, load);
		ck_assert_double_le(info.fpr_bound,
		                    info.filters * 8 * load / ((1u << bits) - 2.0) +
		                    1e-15);
		ck_assert_msg(fp < info.fpr_bound * probes +
		              4 * sqrt(info.fpr_bound * probes) + 1,
		              "%u bits, load %g: fpr %g above bound %g", bits,
		              load, (double)fp / probes, info.fpr_bound);
		/* add_unique in this mode: a key present is refused. */
		ck_assert_int_eq(admit_chain_add_unique(c, KEY(3)), ADMIT_EXISTS);
		admit_chain_free(c);
	}
}
END_TEST

/* The horizon's pattern: keys leave oldest first; the emptied oldest
 * filters are freed, the rest keep their keys and numbers, the bound and
 * memory drop, and a dump of the trimmed chain restores to the same
 * chain, which grows on as the original does. */
START_TEST(test_trim)
{
	struct admit_chain *c = make_wl(100, 2, 0, 16, 0.5), *d = NULL;
	struct admit_chain_info a, b;
	struct admit_chain_filter_info fi;
	static unsigned where[3000];
	void *buf = NULL;
	size_t len = 0;
	unsigned removed = 99, gone = 0;

	ck_assert_int_eq(admit_chain_trim(NULL, &removed), ADMIT_EINVAL);
	ck_assert_int_eq(admit_chain_trim(c, &removed), ADMIT_OK);
	ck_assert_uint_eq(removed, 0);
	for (uint64_t i = 0; i < 3000; i++)
		ck_assert_int_eq(admit_chain_add_at(c, KEY(i), &where[i]),
		                 ADMIT_OK);
	ck_assert_int_eq(admit_chain_info(c, &a), ADMIT_OK);
	ck_assert_uint_eq(a.filters, 5); /* 100+200+400+800+1600 */
	/* Oldest 299 keys out: filter 0 is empty, filter 1 holds one. */
	for (uint64_t i = 0; i < 299; i++)
		ck_assert_int_eq(admit_chain_delete_at(c, where[i], KEY(i)),
		                 ADMIT_OK);
	ck_assert_int_eq(admit_chain_trim(c, &removed), ADMIT_OK);
	ck_assert_uint_eq(removed, 1);
	gone += removed;
	ck_assert_int_eq(admit_chain_trim(c, &removed), ADMIT_OK);
	ck_assert_uint_eq(removed, 0);
	ck_assert_int_eq(admit_chain_info(c, &b), ADMIT_OK);
	ck_assert_uint_eq(b.filters, 4);
	ck_assert_uint_eq(b.trimmed, 1);
	ck_assert_uint_lt(b.memory, a.memory);
	ck_assert_double_lt(b.fpr_bound, a.fpr_bound);
	ck_assert_int_eq(admit_chain_filter_info(c, 0, &fi), ADMIT_OK);
	ck_assert_uint_eq(fi.number, 1);
	ck_assert_uint_eq(fi.items, 1);
	ck_assert_uint_eq(fi.capacity, 200);
	check_limits(c, 16, 0.5);
	for (uint64_t i = 299; i < 3000; i++)
		ck_assert(admit_chain_contains(c, KEY(i)));
	/* The dump says trimmed: restored, same answers, same bytes, and
	 * both grow on alike. */
	ck_assert_int_eq(admit_chain_dump(c, &buf, &len), ADMIT_OK);
	ck_assert_uint_eq(((unsigned char *)buf)[8], 2);
	ck_assert_int_eq(admit_chain_restore(buf, len, &d), ADMIT_OK);
	ck_assert_int_eq(admit_chain_info(d, &a), ADMIT_OK);
	ck_assert_uint_eq(a.trimmed, 1);
	ck_assert_uint_eq(a.filters, 4);
	ck_assert_uint_eq(a.items, b.items);
	for (uint64_t i = 3000; i < 4000; i++) {
		ck_assert_int_eq(admit_chain_add(c, KEY(i)), ADMIT_OK);
		ck_assert_int_eq(admit_chain_add(d, KEY(i)), ADMIT_OK);
	}
	free(buf);
	buf = same_dump(c, d, &len);
	admit_chain_free(d);
	/* Version 2 checked as version 1 is: every flip behind a fixed-up
	 * checksum is refused (trimmed, width, load, each filter).  Except in
	 * the low six bytes of max_load (offsets 48 to 53): 0.5 plus 2^-40 is
	 * another valid load, whose tables and limits are the same. */
	flips_refused(buf, len, 97, 48, 54);
	free(buf);
	/* Everything out: all but the newest go, indices shift by what
	 * went (delete_at with the stored index minus the removed). */
	for (uint64_t i = 299; i < 3000; i++)
		ck_assert_int_eq(admit_chain_delete_at(c, where[i] - gone,
		                                       KEY(i)), ADMIT_OK);
	for (uint64_t i = 3000; i < 4000; i++)
		ck_assert_int_eq(admit_chain_delete(c, KEY(i)), ADMIT_OK);
	ck_assert_int_eq(admit_chain_trim(c, NULL), ADMIT_OK);
	ck_assert_int_eq(admit_chain_info(c, &a), ADMIT_OK);
	ck_assert_uint_eq(a.filters, 1);
	ck_assert_uint_eq(a.items, 0);
	ck_assert_uint_ge(a.trimmed, 4);
	ck_assert_int_eq(admit_chain_filter_info(c, 0, &fi), ADMIT_OK);
	ck_assert_uint_eq(fi.number, a.trimmed);
	ck_assert_int_eq(admit_chain_add(c, "z", 1), ADMIT_OK);
	admit_chain_free(c);
}
END_TEST

/* max_filters bounds the filters held, trimmed or not, and can be changed
 * within what the chain holds. */
START_TEST(test_max_filters)
{
	struct admit_chain *c = make(100, 1, 3);
	struct admit_chain_info a;
	enum admit_status st = ADMIT_OK;
	uint64_t i, n;

	for (i = 0; i < 100000 && st == ADMIT_OK; i++)
		st = admit_chain_add(c, KEY(i));
	ck_assert_int_eq(st, ADMIT_FULL);
	n = i - 1;
	ck_assert_int_eq(admit_chain_set_max_filters(NULL, 3), ADMIT_EINVAL);
	ck_assert_int_eq(admit_chain_set_max_filters(c, 2), ADMIT_EINVAL);
	ck_assert_int_eq(admit_chain_set_max_filters(c, 33), ADMIT_EINVAL);
	ck_assert_int_eq(admit_chain_set_max_filters(c, 4), ADMIT_OK);
	ck_assert_int_eq(admit_chain_add(c, KEY(n)), ADMIT_OK);
	ck_assert_int_eq(admit_chain_info(c, &a), ADMIT_OK);
	ck_assert_uint_eq(a.filters, 4);
	ck_assert_uint_eq(a.max_filters, 4);
	ck_assert_int_eq(admit_chain_set_max_filters(c, 0), ADMIT_OK);
	ck_assert_int_eq(admit_chain_info(c, &a), ADMIT_OK);
	ck_assert_uint_eq(a.max_filters, ADMIT_CHAIN_MAX_FILTERS);
	admit_chain_free(c);

	/* Trimmed, a full chain grows again, never beyond max_filters. */
	c = make_wl(100, 1, 3, 16, 0.9);
	for (i = 0, st = ADMIT_OK; i < 100000 && st == ADMIT_OK; i++)
		st = admit_chain_add(c, KEY(i));
	ck_assert_int_eq(st, ADMIT_FULL);
	for (uint64_t j = 0; j < 100; j++)
		ck_assert_int_eq(admit_chain_delete_at(c, 0, KEY(j)), ADMIT_OK);
	ck_assert_int_eq(admit_chain_trim(c, NULL), ADMIT_OK);
	for (uint64_t j = 100000; j < 100100; j++)
		ck_assert_int_eq(admit_chain_add(c, KEY(j)), ADMIT_OK);
	ck_assert_int_eq(admit_chain_add(c, "over", 4), ADMIT_FULL);
	ck_assert_int_eq(admit_chain_info(c, &a), ADMIT_OK);
	ck_assert_uint_eq(a.filters, 3);
	ck_assert_uint_eq(a.trimmed, 1);
	admit_chain_free(c);
}
END_TEST

/* A default chain dumps version 1, byte for byte what it always did (the
 * Redis module's RDBs and chunks); 8-bit fingerprints need version 2. */
START_TEST(test_dump_versions)
{
	struct admit_chain *c = make(100, 2, 0), *d = NULL;
	void *buf = NULL;
	size_t len = 0;
	struct admit_chain_info info;

	ck_assert_int_eq(admit_chain_dump(c, &buf, &len), ADMIT_OK);
	ck_assert_uint_eq(((unsigned char *)buf)[8], 1);
	free(buf);
	admit_chain_free(c);
	c = make_wl(100, 2, 0, 8, 0);
	for (uint64_t i = 0; i < 500; i++)
		ck_assert_int_eq(admit_chain_add(c, KEY(i)), ADMIT_OK);
	ck_assert_int_eq(admit_chain_dump(c, &buf, &len), ADMIT_OK);
	ck_assert_uint_eq(((unsigned char *)buf)[8], 2);
	ck_assert_int_eq(admit_chain_restore(buf, len, &d), ADMIT_OK);
	ck_assert_int_eq(admit_chain_info(d, &info), ADMIT_OK);
	ck_assert_uint_eq(info.fingerprint_bits, 8);
	same_answers(c, d, 500);
	free(buf);
	admit_chain_free(c);
	admit_chain_free(d);

	/* single_writer, default otherwise: version 2, and the promise
	 * travels with the dump (restored, it dumps the same bytes). */
	{
		struct admit_chain_config cfg = {
			.capacity = 100, .seed = SEED, .single_writer = true,
		};
		ck_assert_int_eq(admit_chain_new(&cfg, &c), ADMIT_OK);
		/* (A false positive may refuse a new key.) */
		for (uint64_t i = 0; i < 500; i++)
			ck_assert_int_ne(admit_chain_add_unique(c, KEY(i)),
			                 ADMIT_FULL);
		ck_assert_int_eq(admit_chain_add_unique(c, KEY(7)),
		                 ADMIT_EXISTS);
		ck_assert_int_eq(admit_chain_info(c, &info), ADMIT_OK);
		ck_assert_uint_gt(info.filters, 1);
		ck_assert_int_eq(admit_chain_dump(c, &buf, &len), ADMIT_OK);
		ck_assert_uint_eq(((unsigned char *)buf)[8], 2);
		ck_assert_uint_eq(((unsigned char *)buf)[64], 1);
		ck_assert_int_eq(admit_chain_restore(buf, len, &d), ADMIT_OK);
		free(buf);
		free(same_dump(c, d, &len));
		same_answers(c, d, 500);
		admit_chain_free(c);
		admit_chain_free(d);
	}
}
END_TEST

/* With max_load, concurrent adds must not overfill a filter: each check
 * of the newest's count and its insert are one step. */
static struct admit_chain *load_chain;

static void *
load_adder(void *arg)
{
	uint64_t base = (uint64_t)(uintptr_t)arg * 100000;

	for (uint64_t i = 0; i < 20000; i++)
		ck_assert_int_eq(admit_chain_add(load_chain, KEY(base + i)),
		                 ADMIT_OK);
	return NULL;
}

START_TEST(test_load_race)
{
	pthread_t th[4];

	load_chain = make_wl(50, 2, 0, 16, 0.3);
	for (uintptr_t t = 0; t < 4; t++)
		ck_assert_int_eq(pthread_create(&th[t], NULL, load_adder,
		                                (void *)t), 0);
	for (unsigned t = 0; t < 4; t++)
		pthread_join(th[t], NULL);
	check_limits(load_chain, 16, 0.3);
	for (uint64_t t = 0; t < 4; t++)
		for (uint64_t i = 0; i < 20000; i++)
			ck_assert(admit_chain_contains(load_chain,
			                               KEY(t * 100000 + i)));
	admit_chain_free(load_chain);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("chain");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_bad_config);
	tcase_add_test(tc, test_growth_fpr);
	tcase_add_test(tc, test_full);
	tcase_add_loop_test(tc, test_full_unique_present, 0, 4);
	tcase_add_test(tc, test_multiset);
	tcase_add_test(tc, test_delete_at);
	tcase_add_test(tc, test_dump_restore);
	tcase_add_test(tc, test_save_load);
	tcase_add_test(tc, test_unique_race);
	tcase_add_test(tc, test_width_load_config);
	tcase_add_test(tc, test_width_load);
	tcase_add_test(tc, test_trim);
	tcase_add_test(tc, test_max_filters);
	tcase_add_test(tc, test_dump_versions);
	tcase_add_test(tc, test_load_race);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
