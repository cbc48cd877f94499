/*
 * Unit tests for admit_cuckoo: single-threaded behaviour, bounds and bad
 * input.  Seeds are fixed, so every run sees the same tables.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <admit/admit.h>
#include <admit/cuckoo_inline.h>

#include "hash.h"
#include "prng.h"
#include "testutil.h"

#define SEED 0x5eed5eed1234ull

/* Fingerprint widths swept by the loop tests: 8, 16, counting mode, and
 * 13 bits in semi-sorted buckets (make() sets semi_sorted for 13). */
static const struct {
	unsigned bits;
	bool counting;
} modes[] = { { 8, false }, { 16, false }, { 16, true }, { 13, false } };

static struct admit_cuckoo *
make(uint64_t capacity, unsigned bits, bool counting)
{
	struct admit_cuckoo_config cfg = {
		.capacity = capacity, .fingerprint_bits = bits,
		.counting = counting, .seed = SEED, .semi_sorted = bits == 13,
	};
	struct admit_cuckoo *f = NULL;

	ck_assert_int_eq(admit_cuckoo_new(&cfg, &f), ADMIT_OK);
	ck_assert_ptr_nonnull(f);
	return f;
}

/* Each code has its own message, saying what happened (ADMIT_FULL once
 * stood for a small buffer and an oversized item too). */
START_TEST(test_strerror)
{
	static const struct {
		enum admit_status s;
		const char *m;
	} want[] = {
		{ ADMIT_OK, "success" },
		{ ADMIT_FULL, "filter is full" },
		{ ADMIT_EXISTS, "key already present" },
		{ ADMIT_NOTFOUND, "key not found" },
		{ ADMIT_REJECTED, "candidate rejected by admission policy" },
		{ ADMIT_NOMEM, "out of memory" },
		{ ADMIT_EINVAL, "invalid argument" },
		{ ADMIT_ECORRUPT, "snapshot is corrupt, truncated or not an admit snapshot" },
		{ ADMIT_EIO, "input/output error" },
		{ ADMIT_EBUFFER, "buffer too small" },
		{ ADMIT_ETOOBIG, "item larger than the structure can hold" },
		{ ADMIT_ENOTREG, "not a regular file" },
		{ ADMIT_LOADING, "the key is being loaded by another caller" },
	};

	/* Values are a promise: appended, never renumbered. */
	ck_assert_int_eq(ADMIT_EIO, 8);
	ck_assert_int_eq(ADMIT_EBUFFER, 9);
	ck_assert_int_eq(ADMIT_ETOOBIG, 10);
	ck_assert_int_eq(ADMIT_ENOTREG, 11);
	ck_assert_int_eq(ADMIT_LOADING, 12);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_str_eq(admit_strerror(want[i].s), want[i].m);
	for (int s = ADMIT_OK; s <= ADMIT_LOADING; s++) {
		const char *m = admit_strerror((enum admit_status)s);

		ck_assert_ptr_nonnull(m);
		ck_assert_str_ne(m, "unknown admit status");
		for (int t = ADMIT_OK; t < s; t++)
			ck_assert_str_ne(m, admit_strerror((enum admit_status)t));
	}
	ck_assert_str_eq(admit_strerror((enum admit_status)1234),
	                 "unknown admit status");
}
END_TEST

START_TEST(test_bad_config)
{
	struct admit_cuckoo *f = (struct admit_cuckoo *)0x1;
	struct admit_cuckoo_config cfg = { .capacity = 100 };
	const struct admit_cuckoo_config bad[] = {
		{ .capacity = 0 },
		{ .capacity = ADMIT_CUCKOO_MAX_CAPACITY + 1 },
		{ .capacity = UINT64_MAX },
		{ .capacity = 100, .fingerprint_bits = 7 },
		{ .capacity = 100, .fingerprint_bits = 12 },
		{ .capacity = 100, .fingerprint_bits = 32 },
		{ .capacity = 100, .fingerprint_bits = 8, .counting = true },
		{ .capacity = 100, .fingerprint_bits = 13 },
		{ .capacity = 100, .fingerprint_bits = 8, .semi_sorted = true },
		{ .capacity = 100, .fingerprint_bits = 16, .semi_sorted = true },
		{ .capacity = 100, .counting = true, .semi_sorted = true },
		{ .capacity = 100, .stripes = 3 },
		{ .capacity = 100, .stripes = 4097 },
		{ .capacity = 100, .stripes = ADMIT_CUCKOO_MAX_STRIPES * 2 },
	};

	ck_assert_int_eq(admit_cuckoo_new(NULL, &f), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_new(&cfg, NULL), ADMIT_EINVAL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(admit_cuckoo_new(&bad[i], &f), ADMIT_EINVAL);
		ck_assert_ptr_eq(f, (struct admit_cuckoo *)0x1); /* untouched */
	}
	cfg.stripes = 1;
	ck_assert_int_eq(admit_cuckoo_new(&cfg, &f), ADMIT_OK);
	admit_cuckoo_free(f);
	cfg.stripes = ADMIT_CUCKOO_MAX_STRIPES;
	ck_assert_int_eq(admit_cuckoo_new(&cfg, &f), ADMIT_OK);
	admit_cuckoo_free(f);
}
END_TEST

START_TEST(test_bad_arguments)
{
	struct admit_cuckoo *f = make(100, 16, false);
	struct admit_cuckoo_stats st;
	const void *keys[2] = { "a", NULL };
	size_t lens[2] = { 1, 5 };
	bool out[2] = { true, true };

	ck_assert_int_eq(admit_cuckoo_insert(NULL, "a", 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_insert(f, NULL, 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_insert_unique(NULL, "a", 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_insert_unique(f, NULL, 3), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_delete(NULL, "a", 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_delete(f, NULL, 2), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_increment(NULL, "a", 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_increment(f, "a", 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_halve(NULL), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_halve(f), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_stats(NULL, &st), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_stats(f, NULL), ADMIT_EINVAL);
	ck_assert(!admit_cuckoo_contains(NULL, "a", 1));
	ck_assert(!admit_cuckoo_contains(f, NULL, 1));
	ck_assert_uint_eq(admit_cuckoo_count(NULL, "a", 1), 0);
	ck_assert_uint_eq(admit_cuckoo_count(f, NULL, 1), 0);
	ck_assert_uint_eq(admit_cuckoo_size(NULL), 0);
	ck_assert_uint_eq(admit_cuckoo_slots(NULL), 0);
	ck_assert_uint_eq(admit_cuckoo_memory(NULL), 0);
	admit_cuckoo_contains_many(NULL, 2, keys, lens, out);
	admit_cuckoo_contains_many(f, 2, NULL, lens, out);
	admit_cuckoo_contains_many(f, 2, keys, NULL, out);
	admit_cuckoo_contains_many(f, 2, keys, lens, NULL);
	ck_assert(out[0] && out[1]); /* nothing written */

	ck_assert_int_eq(admit_cuckoo_insert(f, "a", 1), ADMIT_OK);
	admit_cuckoo_contains_many(f, 2, keys, lens, out);
	ck_assert(out[0]);
	ck_assert(!out[1]); /* NULL key of length 5 */
	ck_assert_uint_eq(admit_cuckoo_size(f), 1);
	admit_cuckoo_free(f);
	admit_cuckoo_free(NULL);
}
END_TEST

START_TEST(test_round_trip)
{
	struct admit_cuckoo *f = make(1000, modes[_i].bits, modes[_i].counting);
	const char *k = "hello, admit";

	ck_assert(!admit_cuckoo_contains(f, k, strlen(k)));
	ck_assert_int_eq(admit_cuckoo_delete(f, k, strlen(k)), ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_cuckoo_insert(f, k, strlen(k)), ADMIT_OK);
	ck_assert(admit_cuckoo_contains(f, k, strlen(k)));
	ck_assert_uint_eq(admit_cuckoo_count(f, k, strlen(k)), 1);
	ck_assert_uint_eq(admit_cuckoo_size(f), 1);
	ck_assert_int_eq(admit_cuckoo_delete(f, k, strlen(k)), ADMIT_OK);
	ck_assert(!admit_cuckoo_contains(f, k, strlen(k)));
	ck_assert_uint_eq(admit_cuckoo_size(f), 0);
	ck_assert_int_eq(admit_cuckoo_delete(f, k, strlen(k)), ADMIT_NOTFOUND);
	admit_cuckoo_free(f);
}
END_TEST

START_TEST(test_zero_length_key)
{
	struct admit_cuckoo *f = make(10, modes[_i].bits, modes[_i].counting);

	ck_assert(!admit_cuckoo_contains(f, NULL, 0));
	ck_assert_int_eq(admit_cuckoo_insert_unique(f, "", 0), ADMIT_OK);
	ck_assert(admit_cuckoo_contains(f, NULL, 0));
	ck_assert(admit_cuckoo_contains(f, "x", 0));
	ck_assert_int_eq(admit_cuckoo_insert_unique(f, NULL, 0), ADMIT_EXISTS);
	ck_assert_int_eq(admit_cuckoo_delete(f, NULL, 0), ADMIT_OK);
	ck_assert(!admit_cuckoo_contains(f, "", 0));
	admit_cuckoo_free(f);
}
END_TEST

/* Capacities that are not powers of two, tiny and prime among them: the
 * filter takes exactly as many buckets as 95 % load needs, and holds them. */
static const uint64_t capacities[] = { 1, 2, 3, 7, 100, 1000003 };

START_TEST(test_capacities)
{
	uint64_t n = capacities[_i];
	struct admit_cuckoo *f = make(n, 16, false);
	uint64_t slots = admit_cuckoo_slots(f);
	struct tally ins = TALLY_INIT, look = TALLY_INIT;

	ck_assert_uint_ge(slots, n);
	/* Not rounded up to a power of two: at most one bucket over 95 %. */
	ck_assert_uint_le(slots, n < 8 ? 8 : (uint64_t)ceil(n / 0.95) + 4);
	ck_assert_uint_eq(admit_cuckoo_memory(f), slots * 2);
	for (uint64_t i = 0; i < n; i++)
		tally(&ins, admit_cuckoo_insert(f, KEY(i)) == ADMIT_OK, i);
	for (uint64_t i = 0; i < n; i++)
		tally(&look, admit_cuckoo_contains(f, KEY(i)), i);
	ck_assert_tally(ins, "insert");
	ck_assert_tally(look, "lookup");
	ck_assert_uint_eq(admit_cuckoo_size(f), n);
	admit_cuckoo_free(f);
}
END_TEST

/* Fill to the configured capacity; every key stays findable. */
START_TEST(test_no_false_negatives)
{
	const uint64_t n = 1000000;
	struct admit_cuckoo *f = make(n, modes[_i].bits, modes[_i].counting);
	struct tally ins = TALLY_INIT, look = TALLY_INIT;

	for (uint64_t i = 0; i < n; i++)
		tally(&ins, admit_cuckoo_insert(f, KEY(i)) == ADMIT_OK, i);
	for (uint64_t i = 0; i < n; i++)
		tally(&look, admit_cuckoo_contains(f, KEY(i)), i);
	ck_assert_tally(ins, "insert");
	ck_assert_tally(look, "false negatives");
	/* Counting mode merges colliding keys into one entry. */
	if (modes[_i].counting)
		ck_assert_uint_ge(admit_cuckoo_size(f), n - n / 1000);
	else
		ck_assert_uint_eq(admit_cuckoo_size(f), n);
	admit_cuckoo_free(f);
}
END_TEST

/*
 * A 16-bit filter of 2^19 buckets or more looks alternate buckets up in a
 * table made at creation (cuckoo_internal.h) while inserts compute them:
 * at 95 % load most keys have been kicked at least once, so a wrong table
 * would show as false negatives here.  Capacity 2 M makes 526,316 buckets.
 */
START_TEST(test_alt_table)
{
	const uint64_t n = 2000000;
	struct admit_cuckoo *f = make(n, 16, false);
	struct admit_cuckoo_stats st;
	struct tally ins = TALLY_INIT, look = TALLY_INIT, many = TALLY_INIT;
	uint64_t fp = 0;

	for (uint64_t i = 0; i < n; i++)
		tally(&ins, admit_cuckoo_insert(f, KEY(i)) == ADMIT_OK, i);
	for (uint64_t i = 0; i < n; i++)
		tally(&look, admit_cuckoo_contains(f, KEY(i)), i);
	for (uint64_t i = n; i < 2 * n; i++)
		fp += admit_cuckoo_contains(f, KEY(i));
	/* contains_many reads the same table. */
	for (uint64_t i = 0; i < n; i += 16) {
		uint64_t k[16];
		const void *kp[16];
		size_t lens[16];
		bool out[16];

		for (int j = 0; j < 16; j++) {
			k[j] = test_key(i + (uint64_t)j);
			kp[j] = &k[j];
			lens[j] = sizeof(k[j]);
		}
		admit_cuckoo_contains_many(f, 16, kp, lens, out);
		for (int j = 0; j < 16; j++)
			tally(&many, out[j], i + (uint64_t)j);
	}
	ck_assert_tally(ins, "insert");
	ck_assert_tally(look, "false negatives");
	ck_assert_tally(many, "false negatives of contains_many");
	ck_assert_int_eq(admit_cuckoo_stats(f, &st), ADMIT_OK);
	ck_assert_uint_gt(st.kicks, n / 10);
	/* 8 / 2^16 per absent key, with room for chance. */
	ck_assert_uint_le(fp, 2 * n * 8 / 65536);
	admit_cuckoo_free(f);
}
END_TEST

/*
 * A filter made for n items takes all n and reaches 95 % occupancy before
 * its first ADMIT_FULL; the failed insert leaves it exactly as it was.
 */
START_TEST(test_load_factor)
{
	static const uint64_t sizes[] = { 1000, 100000, 1000000 };
	const uint64_t n = sizes[_i];
	struct admit_cuckoo *f = make(n, 16, false);
	struct admit_cuckoo_stats st;
	struct tally look = TALLY_INIT;
	uint64_t i, size;
	double load;

	for (i = 0; admit_cuckoo_insert(f, KEY(i)) == ADMIT_OK; i++)
		;
	load = (double)i / (double)admit_cuckoo_slots(f);
	fprintf(stderr, "capacity %llu: first ADMIT_FULL after %llu items, "
	        "load %.4f\n", (unsigned long long)n, (unsigned long long)i, load);
	ck_assert_uint_ge(i, n);
	ck_assert_double_ge(load, 0.95);

	size = admit_cuckoo_size(f);
	ck_assert_uint_eq(size, i);
	/* A failed insert changes nothing, so it fails again, every time. */
	for (int r = 0; r < 100; r++)
		ck_assert_int_eq(admit_cuckoo_insert(f, KEY(i)), ADMIT_FULL);
	ck_assert_uint_eq(admit_cuckoo_size(f), size);
	for (uint64_t j = 0; j < i; j++)
		tally(&look, admit_cuckoo_contains(f, KEY(j)), j);
	ck_assert_tally(look, "false negatives");
	ck_assert_int_eq(admit_cuckoo_stats(f, &st), ADMIT_OK);
	ck_assert_uint_eq(st.items, size);
	ck_assert_uint_gt(st.kicks, 0);
	ck_assert_uint_ge(st.full, 101);
	admit_cuckoo_free(f);
}
END_TEST

/* A key can be stored 2 x 4 times; the ninth copy finds no room. */
START_TEST(test_duplicates)
{
	for (uint64_t k = 0; k < 20; k++) {
		struct admit_cuckoo *f = make(1000, modes[_i].bits, false);
		int copies = 0;

		while (admit_cuckoo_insert(f, KEY(k)) == ADMIT_OK)
			copies++;
		ck_assert_int_eq(copies, 8);
		ck_assert_uint_eq(admit_cuckoo_count(f, KEY(k)), 8);
		ck_assert_uint_eq(admit_cuckoo_size(f), 8);
		for (int c = 7; c >= 0; c--) {
			ck_assert_int_eq(admit_cuckoo_delete(f, KEY(k)), ADMIT_OK);
			ck_assert_uint_eq(admit_cuckoo_count(f, KEY(k)), (unsigned)c);
		}
		ck_assert_int_eq(admit_cuckoo_delete(f, KEY(k)), ADMIT_NOTFOUND);
		ck_assert(!admit_cuckoo_contains(f, KEY(k)));
		admit_cuckoo_free(f);
	}
}
END_TEST

START_TEST(test_insert_unique)
{
	const uint64_t n = 5000;
	const unsigned f_bits = modes[_i].counting ? 12 : modes[_i].bits;
	struct admit_cuckoo *f = make(2 * n, modes[_i].bits, modes[_i].counting);
	uint64_t added = 0;
	struct tally t = TALLY_INIT;

	/* A distinct key whose fingerprint collides with a stored one answers
	 * EXISTS: at most 8 / 2^f of them, at this load far fewer. */
	for (uint64_t i = 0; i < n; i++) {
		enum admit_status st = admit_cuckoo_insert_unique(f, KEY(i));

		tally(&t, st == ADMIT_OK || st == ADMIT_EXISTS, i);
		added += st == ADMIT_OK;
	}
	ck_assert_uint_ge(added, n - n * 8 / (1u << f_bits));
	for (uint64_t i = 0; i < n; i++) {
		tally(&t, admit_cuckoo_insert_unique(f, KEY(i)) == ADMIT_EXISTS, i);
		tally(&t, admit_cuckoo_count(f, KEY(i)) >= 1, i);
	}
	ck_assert_tally(t, "insert_unique");
	ck_assert_uint_eq(admit_cuckoo_size(f), added);
	ck_assert_int_eq(admit_cuckoo_insert_unique(f, "fresh", 5), ADMIT_OK);
	ck_assert_int_eq(admit_cuckoo_delete(f, "fresh", 5), ADMIT_OK);
	ck_assert_int_eq(admit_cuckoo_insert_unique(f, "fresh", 5), ADMIT_OK);
	ck_assert_uint_eq(admit_cuckoo_size(f), added + 1);
	admit_cuckoo_free(f);
}
END_TEST

START_TEST(test_counting_saturation)
{
	struct admit_cuckoo *f = make(1000, 16, true);

	for (unsigned i = 1; i <= 40; i++) {
		ck_assert_int_eq(admit_cuckoo_increment(f, "k", 1), ADMIT_OK);
		ck_assert_uint_eq(admit_cuckoo_count(f, "k", 1), i < 15 ? i : 15);
	}
	ck_assert_uint_eq(admit_cuckoo_size(f), 1); /* one entry, not 40 */
	/* insert is increment in counting mode; delete subtracts one. */
	ck_assert_int_eq(admit_cuckoo_insert(f, "k", 1), ADMIT_OK);
	ck_assert_uint_eq(admit_cuckoo_count(f, "k", 1), 15);
	ck_assert_int_eq(admit_cuckoo_delete(f, "k", 1), ADMIT_OK);
	ck_assert_uint_eq(admit_cuckoo_count(f, "k", 1), 14);
	ck_assert_int_eq(admit_cuckoo_insert_unique(f, "k", 1), ADMIT_EXISTS);

	static const unsigned after[] = { 7, 3, 1, 0 };
	for (int h = 0; h < 4; h++) {
		ck_assert_int_eq(admit_cuckoo_halve(f), ADMIT_OK);
		ck_assert_uint_eq(admit_cuckoo_count(f, "k", 1), after[h]);
	}
	ck_assert(!admit_cuckoo_contains(f, "k", 1));
	ck_assert_uint_eq(admit_cuckoo_size(f), 0);
	admit_cuckoo_free(f);
}
END_TEST

/* Many keys with known counts: never under-counted, halving is exact for
 * (nearly) all of them, and entries that reach 0 are gone. */
START_TEST(test_counting_halve)
{
	const uint64_t n = 50000;
	struct admit_cuckoo *f = make(n, 16, true);
	uint64_t exact = 0, zeroed = 0;

	struct tally t = TALLY_INIT;

	for (uint64_t i = 0; i < n; i++)
		for (uint64_t c = 0; c < i % 16 + 1; c++)
			tally(&t, admit_cuckoo_increment(f, KEY(i)) == ADMIT_OK, i);
	ck_assert_tally(t, "increment");
	ck_assert_int_eq(admit_cuckoo_halve(f), ADMIT_OK);
	for (uint64_t i = 0; i < n; i++) {
		unsigned want = (unsigned)((i % 16 + 1 < 15 ? i % 16 + 1 : 15) / 2);
		unsigned got = admit_cuckoo_count(f, KEY(i));

		tally(&t, got >= want, i);
		exact += got == want;
		zeroed += want == 0;
	}
	/* 12-bit fingerprints: colliding pairs are a fraction of a percent. */
	ck_assert_tally(t, "under-counted after halving");
	ck_assert_uint_ge(exact, n - n / 100);
	ck_assert_uint_le(admit_cuckoo_size(f), n - zeroed + n / 100);
	ck_assert_uint_ge(admit_cuckoo_size(f), n - zeroed - n / 100);
	admit_cuckoo_free(f);
}
END_TEST

/*
 * False-positive rate on 2,000,000 absent keys, filter at 95 % load.  The
 * bound is 8 / 2^f (two buckets of four slots); the test allows 4 standard
 * deviations of a binomial count at that rate, so a correct filter fails it
 * with probability below 1e-4, while a fingerprint one bit short (double the
 * rate) fails it for certain.  It also asserts the rate is not absurdly low,
 * which would mean the probe keys did not really probe.
 */
START_TEST(test_false_positive_rate)
{
	const uint64_t n = 1000000, probes = 2000000;
	const unsigned f_bits = modes[_i].counting ? 12 : modes[_i].bits;
	struct admit_cuckoo *f = make(n, modes[_i].bits, modes[_i].counting);
	double bound = 8.0 / (double)(1u << f_bits);
	double limit = probes * bound + 4 * sqrt(probes * bound);
	struct tally ins = TALLY_INIT;
	uint64_t fp = 0;

	for (uint64_t i = 0; i < n; i++)
		tally(&ins, admit_cuckoo_insert(f, KEY(i)) == ADMIT_OK, i);
	ck_assert_tally(ins, "insert");
	for (uint64_t i = 0; i < probes; i++)
		fp += admit_cuckoo_contains(f, KEY(i + (1ull << 40)));
	fprintf(stderr, "f=%u%s: %llu false positives in %llu probes = %.6f%% "
	        "(bound %.6f%%)\n", f_bits, modes[_i].counting ? " counting" : "",
	        (unsigned long long)fp, (unsigned long long)probes,
	        100.0 * fp / probes, 100.0 * bound);
	ck_assert_double_le((double)fp, limit);
	ck_assert_double_ge((double)fp, probes * bound / 4);
	admit_cuckoo_free(f);
}
END_TEST

/* admit_cuckoo_contains_inline() answers as the library call does, for
 * every mode (counting filters and other key lengths through the library),
 * on present keys, absent ones (false positives included) and bad input. */
START_TEST(test_contains_inline)
{
	struct admit_cuckoo *f = make(20000, modes[_i].bits, modes[_i].counting);
	struct admit_cuckoo_view v = admit_cuckoo_view_of(f);
	unsigned agree = 0, fp = 0;

	for (uint64_t k = 0; k < 19000; k++)
		ck_assert_int_eq(admit_cuckoo_insert(f, &k, sizeof(k)), ADMIT_OK);
	for (uint64_t k = 0; k < 200000; k++) {
		bool lib = admit_cuckoo_contains(f, &k, sizeof(k));

		ck_assert_int_eq(admit_cuckoo_contains_inline(f, &k, sizeof(k)), lib);
		ck_assert_int_eq(admit_cuckoo_view_contains(&v, f, &k, sizeof(k)), lib);
		ck_assert(k >= 19000 || lib);
		fp += k >= 19000 && lib;
		/* A 4-byte key: the library's path. */
		ck_assert_int_eq(admit_cuckoo_contains_inline(f, &k, 4),
		                 admit_cuckoo_contains(f, &k, 4));
		agree++;
	}
	/* The absent keys must have met some false positives at these
	 * widths, or the comparison above did not test the match. */
	ck_assert_uint_gt(fp, 0);
	ck_assert(!admit_cuckoo_contains_inline(NULL, &agree, 8));
	ck_assert(!admit_cuckoo_contains_inline(f, NULL, 8));
	ck_assert(!admit_cuckoo_view_contains(&v, f, NULL, 8));
	admit_cuckoo_free(f);
}
END_TEST

/* admit_hash8(), the lookups' 8-byte hash with the seed prepared once,
 * is XXH3_64bits_withSeed() exactly: any other value would make a filter
 * disagree with its own snapshots and with the inline header. */
START_TEST(test_hash8)
{
	uint64_t seeds[] = { 0, 1, SEED, 0xffffffffull, 0xffffffff00000000ull,
	                     ~0ull, 0x8000000000000000ull };

	for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
		uint64_t prep = admit_hash8_prepare(seeds[s]);

		for (uint64_t i = 0; i < 100000; i++) {
			/* Keys at every alignment, from random and small values. */
			unsigned char buf[16];
			uint64_t k = i < 50000 ? prng_mix(i ^ seeds[s]) : i;

			memcpy(buf + i % 8, &k, 8);
			ck_assert_uint_eq(admit_hash8(buf + i % 8, prep, seeds[s]),
			                  XXH3_64bits_withSeed(buf + i % 8, 8, seeds[s]));
		}
	}
}
END_TEST

/* contains_many answers as single lookups do, for every count around the
 * call's groups of 16 (a partial last group, two groups in flight), at both
 * fingerprint widths, with invalid keys among valid ones. */
START_TEST(test_contains_many)
{
	const size_t n = 1000;
	static const size_t counts[] = { 1, 15, 16, 17, 31, 32, 33, 48, 1997 };
	static uint64_t ids[2 * 1000];
	static const void *keys[2 * 1000];
	static size_t lens[2 * 1000];
	static bool out[2 * 1000];

	for (unsigned bits = 8; bits <= 16; bits += 8) {
		struct admit_cuckoo *f = make(n, bits, false);

		for (size_t i = 0; i < 2 * n; i++) {
			ids[i] = test_key(i);
			keys[i] = &ids[i];
			lens[i] = sizeof(ids[i]);
			if (i % 2 == 0)
				ck_assert_int_eq(admit_cuckoo_insert(f, keys[i], lens[i]),
				                 ADMIT_OK);
		}
		for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
			size_t k = counts[c];

			memset(out, 1, sizeof(out));
			admit_cuckoo_contains_many(f, k, keys, lens, out);
			for (size_t i = 0; i < k; i++)
				ck_assert_int_eq(out[i], admit_cuckoo_contains(f, keys[i], lens[i]));
			for (size_t i = 0; i < k; i += 2)
				ck_assert(out[i]);
			ck_assert(out[k] == true); /* nothing past the k answers */
		}
		/* Invalid keys (NULL of length 8) in the first and second
		 * group, and a NULL key of length 0, which is valid. */
		keys[3] = keys[20] = keys[21] = NULL;
		lens[21] = 0;
		admit_cuckoo_contains_many(f, 40, keys, lens, out);
		ck_assert(!out[3] && !out[20]);
		for (size_t i = 0; i < 40; i++)
			if (i != 3 && i != 20)
				ck_assert_int_eq(out[i], admit_cuckoo_contains(f, keys[i], lens[i]));
		admit_cuckoo_contains_many(f, 0, keys, lens, out);
		admit_cuckoo_free(f);
	}
}
END_TEST

/* insert_many must leave the filter as the same single inserts would (same
 * seed, so the same table), report FULL per key, and refuse bad input
 * without inserting anything. */
START_TEST(test_insert_many)
{
	const size_t n = 1000;
	unsigned bits = modes[_i].bits;
	bool counting = modes[_i].counting;
	struct admit_cuckoo *f = make(n, bits, counting);
	struct admit_cuckoo *g = make(n, bits, counting);
	struct admit_cuckoo *small = make(100, bits, counting);
	static uint64_t ids[1000];
	static const void *keys[1000];
	static size_t lens[1000];
	static enum admit_status out[1000];
	size_t ok = 0;
	double items = 0;

	for (size_t i = 0; i < n; i++) {
		ids[i] = test_key(i % 700);
		keys[i] = &ids[i];
		/* Prefixes of 1 to 8 bytes; keys 3 and 703 are both the empty
		 * key, and i, i + 700 share a key when their lengths agree. */
		lens[i] = i % 700 == 3 ? 0 : 1 + i % 8;
		out[i] = ADMIT_EINVAL;
	}
	/* Odd n exercises a partial batch. */
	ck_assert_int_eq(admit_cuckoo_insert_many(f, n - 3, keys, lens, out), ADMIT_OK);
	for (size_t i = 0; i < n - 3; i++) {
		ck_assert_int_eq(out[i], ADMIT_OK);
		ck_assert_int_eq(admit_cuckoo_insert(g, keys[i], lens[i]), ADMIT_OK);
	}
	ck_assert_uint_eq(admit_cuckoo_size(f), admit_cuckoo_size(g));
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(admit_cuckoo_count(f, keys[i], lens[i]),
		                  admit_cuckoo_count(g, keys[i], lens[i]));
	ck_assert_int_eq(admit_cuckoo_insert_many(f, 0, keys, lens, out), ADMIT_OK);

	/* A filter for 100 keys cannot take 1000 distinct ones. */
	for (size_t i = 0; i < n; i++) {
		ids[i] = test_key(1000000 + i);
		lens[i] = sizeof(ids[i]);
	}
	ck_assert_int_eq(admit_cuckoo_insert_many(small, n, keys, lens, out), ADMIT_FULL);
	for (size_t i = 0; i < n; i++) {
		ck_assert(out[i] == ADMIT_OK || out[i] == ADMIT_FULL);
		ok += out[i] == ADMIT_OK;
		if (out[i] == ADMIT_OK) {
			ck_assert(admit_cuckoo_contains(small, keys[i], lens[i]));
			items += 1.0 / admit_cuckoo_count(small, keys[i], lens[i]);
		}
	}
	/* One slot per key that went in, except in counting mode, where c
	 * keys that share a fingerprint and a bucket share one slot counted
	 * c times (each adds 1/c to items). */
	ck_assert_double_eq_tol(admit_cuckoo_size(small), counting ? items : ok,
	                        1e-9);
	ck_assert_uint_ge(ok, 100);

	/* Bad input: nothing goes in, out is untouched. */
	for (size_t i = 0; i < 4; i++)
		out[i] = ADMIT_NOMEM;
	keys[2] = NULL;
	ok = admit_cuckoo_size(g);
	ck_assert_int_eq(admit_cuckoo_insert_many(g, 4, keys, lens, out), ADMIT_EINVAL);
	ck_assert_uint_eq(admit_cuckoo_size(g), ok);
	for (size_t i = 0; i < 4; i++)
		ck_assert_int_eq(out[i], ADMIT_NOMEM);
	keys[2] = &ids[2];
	ck_assert_int_eq(admit_cuckoo_insert_many(NULL, 4, keys, lens, out), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_insert_many(g, 4, NULL, lens, out), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_insert_many(g, 4, keys, NULL, out), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_insert_many(g, 4, keys, lens, NULL), ADMIT_EINVAL);
	ck_assert_uint_eq(admit_cuckoo_size(g), ok);
	admit_cuckoo_free(f);
	admit_cuckoo_free(g);
	admit_cuckoo_free(small);
}
END_TEST

/* The 8-byte-key batches answer and change the filter as the same single
 * calls do: for every count around the groups of 16 and the 32 keys a
 * lookup locates ahead (a partial last group, one to three groups in
 * flight), present and absent keys, every mode; and refuse bad input
 * without touching anything. */
START_TEST(test_u64_batches)
{
	static const size_t counts[] = { 0, 1, 15, 16, 17, 31, 32, 33, 47, 48, 49,
	                                  64, 65, 1000 };
	const size_t n = 1000;
	unsigned bits = modes[_i / 2].bits;
	bool counting = modes[_i / 2].counting;
	/* Both bucket counts the batches locate keys in: 527 buckets (a
	 * general range), and 512 (a power of two, masked), where the lookup
	 * batch runs a form of its own. */
	uint64_t cap = _i % 2 ? 1945 : 2 * n;
	struct admit_cuckoo *f = make(cap, bits, counting);
	struct admit_cuckoo *g = make(cap, bits, counting);
	static uint64_t ids[2 * 1000 + 1];
	static bool out[2 * 1000 + 1];
	static enum admit_status st[2 * 1000 + 1];
	struct tally t = TALLY_INIT;

	for (size_t i = 0; i < 2 * n; i++)
		ids[i] = test_key(i % 1500); /* keys 0..1499, then 0..499 */
	/* Inserts: f by batch, g by single calls, same seed: same tables. */
	size_t done = 0;

	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]) &&
	     done + counts[c] <= n; done += counts[c], c++) {
		size_t k = counts[c];

		st[k] = ADMIT_NOMEM;
		ck_assert_int_eq(admit_cuckoo_insert_many_u64(f, k, ids + done,
		                                              st), ADMIT_OK);
		ck_assert_int_eq(st[k], ADMIT_NOMEM); /* nothing past k */
		for (size_t i = 0; i < k; i++) {
			tally(&t, st[i] == ADMIT_OK, done + i);
			tally(&t, admit_cuckoo_insert(g, &ids[done + i], 8) ==
			          ADMIT_OK, done + i);
		}
	}
	{
		size_t k = n - done; /* the rest, in one call */

		ck_assert_int_eq(admit_cuckoo_insert_many_u64(f, k, ids + done,
		                                              st), ADMIT_OK);
		for (size_t i = 0; i < k; i++)
			tally(&t, admit_cuckoo_insert(g, &ids[done + i], 8) ==
			          ADMIT_OK && st[i] == ADMIT_OK, done + i);
	}
	ck_assert_tally(t, "a batch insert differs");
	ck_assert(counting || admit_cuckoo_size(f) == n);
	ck_assert_uint_eq(admit_cuckoo_size(f), admit_cuckoo_size(g));
	for (size_t i = 0; i < 2 * n; i++)
		tally(&t, admit_cuckoo_count(f, &ids[i], 8) ==
		          admit_cuckoo_count(g, &ids[i], 8), i);
	ck_assert_tally(t, "counts differ after batch inserts");

	/* Lookups: half present, half absent, every count. */
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		for (size_t off = 0; off <= n; off += n) {
			size_t k = counts[c];

			out[off + k] = true;
			memset(out + off, 0, k);
			admit_cuckoo_contains_many_u64(f, k, ids + off, out + off);
			ck_assert(out[off + k]); /* nothing past k */
			for (size_t i = 0; i < k; i++)
				tally(&t, out[off + i] ==
				          admit_cuckoo_contains(f, &ids[off + i], 8),
				      off + i);
			for (size_t i = 0; i < k && off == 0; i++)
				tally(&t, out[i], i);
		}
	}
	ck_assert_tally(t, "a batch lookup differs");

	/* Deletes: f by batch, g by single calls; the second half is absent
	 * (keys 1000..1499, then 0..499 again, deleted by then). */
	ck_assert_int_eq(admit_cuckoo_delete_many_u64(f, 2 * n, ids, st),
	                 ADMIT_NOTFOUND);
	for (size_t i = 0; i < 2 * n; i++)
		tally(&t, st[i] == admit_cuckoo_delete(g, &ids[i], 8), i);
	ck_assert_tally(t, "a batch delete differs");
	ck_assert_uint_eq(admit_cuckoo_size(f), admit_cuckoo_size(g));
	ck_assert_int_eq(admit_cuckoo_delete_many_u64(f, 0, ids, st), ADMIT_OK);

	/* Bad input. */
	st[0] = ADMIT_NOMEM;
	out[0] = true;
	ck_assert_int_eq(admit_cuckoo_insert_many_u64(NULL, 1, ids, st), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_insert_many_u64(f, 1, NULL, st), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_insert_many_u64(f, 1, ids, NULL), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_delete_many_u64(NULL, 1, ids, st), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_delete_many_u64(f, 1, NULL, st), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_delete_many_u64(f, 1, ids, NULL), ADMIT_EINVAL);
	admit_cuckoo_contains_many_u64(NULL, 1, ids, out);
	admit_cuckoo_contains_many_u64(f, 1, NULL, out);
	admit_cuckoo_contains_many_u64(f, 1, ids, NULL);
	ck_assert_int_eq(st[0], ADMIT_NOMEM);
	ck_assert(out[0]);
	ck_assert_uint_eq(admit_cuckoo_size(f), admit_cuckoo_size(g));

	/* A full filter: FULL per key, the rest in. */
	{
		struct admit_cuckoo *small = make(100, bits, counting);
		size_t ok = 0;

		for (size_t i = 0; i < n; i++)
			ids[i] = test_key(1000000 + i);
		ck_assert_int_eq(admit_cuckoo_insert_many_u64(small, n, ids, st),
		                 ADMIT_FULL);
		for (size_t i = 0; i < n; i++) {
			ck_assert(st[i] == ADMIT_OK || st[i] == ADMIT_FULL);
			ok += st[i] == ADMIT_OK;
			if (st[i] == ADMIT_OK)
				ck_assert(admit_cuckoo_contains(small, &ids[i], 8));
		}
		ck_assert_uint_ge(ok, 100);
		admit_cuckoo_free(small);
	}
	admit_cuckoo_free(f);
	admit_cuckoo_free(g);
}
END_TEST

/* The 8-byte-key batch filling a filter past its capacity, in calls of
 * several sizes: keys whose buckets are full are set aside and their
 * paths searched together.  Every key up to the capacity goes in (as
 * single inserts get them in, test_load_factor), the rest go in or get
 * ADMIT_FULL, every key that went in is found, and the size counts
 * exactly the keys that went in. */
START_TEST(test_u64_batch_fill)
{
	static const size_t calls[] = { 1, 7, 16, 33, 1024, 4096 };
	const uint64_t cap = 100000;
	unsigned bits = modes[_i].bits;
	bool counting = modes[_i].counting;
	struct admit_cuckoo *f = make(cap, bits, counting);
	size_t n = (size_t)(admit_cuckoo_slots(f) * 21 / 20), ok = 0;
	uint64_t *ids = malloc(n * sizeof(*ids));
	enum admit_status *st = malloc(n * sizeof(*st));
	struct admit_cuckoo_stats stats;
	struct tally t = TALLY_INIT;

	ck_assert(ids && st);
	for (size_t i = 0; i < n; i++)
		ids[i] = test_key(i + (1ull << 40));
	for (size_t i = 0, c = 0; i < n; c++) {
		size_t k = calls[c % 6] < n - i ? calls[c % 6] : n - i;

		(void)admit_cuckoo_insert_many_u64(f, k, ids + i, st + i);
		i += k;
	}
	for (size_t i = 0; i < n; i++) {
		tally(&t, st[i] == ADMIT_OK || st[i] == ADMIT_FULL, i);
		tally(&t, st[i] == ADMIT_OK || i >= cap, i);
		tally(&t, st[i] != ADMIT_OK || admit_cuckoo_contains(f, &ids[i], 8),
		      i);
		ok += st[i] == ADMIT_OK;
	}
	ck_assert_tally(t, "a batch-filled key");
	ck_assert_uint_lt(ok, n);
	ck_assert_int_eq(admit_cuckoo_stats(f, &stats), ADMIT_OK);
	ck_assert_uint_gt(stats.kicks, 0);
	ck_assert_uint_eq(stats.items, admit_cuckoo_size(f));
	/* A counting filter's increment of a key whose fingerprint is there
	 * already adds no entry. */
	if (!counting) {
		ck_assert_uint_eq(admit_cuckoo_size(f), ok);
		ck_assert_uint_ge(ok, admit_cuckoo_slots(f) * 95 / 100);
	}
	free(ids);
	free(st);
	admit_cuckoo_free(f);
}
END_TEST

static Suite *
cuckoo_suite(void)
{
	Suite *s = suite_create("cuckoo");
	TCase *tc = tcase_create("basic");
	TCase *big = tcase_create("large");
	int nmodes = (int)(sizeof(modes) / sizeof(modes[0]));

	tcase_add_test(tc, test_strerror);
	tcase_add_test(tc, test_bad_config);
	tcase_add_test(tc, test_bad_arguments);
	tcase_add_loop_test(tc, test_round_trip, 0, nmodes);
	tcase_add_loop_test(tc, test_zero_length_key, 0, nmodes);
	tcase_add_loop_test(tc, test_capacities, 0,
	                    (int)(sizeof(capacities) / sizeof(capacities[0])));
	tcase_add_loop_test(tc, test_duplicates, 0, 2);
	tcase_add_loop_test(tc, test_insert_unique, 0, nmodes);
	tcase_add_test(tc, test_counting_saturation);
	tcase_add_test(tc, test_counting_halve);
	tcase_add_test(tc, test_hash8);
	tcase_add_test(tc, test_contains_many);
	tcase_add_loop_test(tc, test_contains_inline, 0, nmodes);
	tcase_add_loop_test(tc, test_insert_many, 0, nmodes);
	tcase_add_loop_test(tc, test_u64_batches, 0, 2 * nmodes);
	tcase_add_loop_test(tc, test_u64_batch_fill, 0, nmodes);
	suite_add_tcase(s, tc);

	tcase_add_loop_test(big, test_no_false_negatives, 0, nmodes);
	tcase_add_test(big, test_alt_table);
	tcase_add_loop_test(big, test_load_factor, 0, 3);
	tcase_add_loop_test(big, test_false_positive_rate, 0, nmodes);
	tcase_set_timeout(big, 600);
	suite_add_tcase(s, big);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(cuckoo_suite());
	int failed;

	srunner_add_suite(sr, snapshot_suite());
	failed = test_run(sr);
	/* The basic cases again on the lookups compiled without BMI2
	 * (cuckoo_ops.h): on x86-64 CPUs that have it, the first run took the
	 * BMI2 copies. */
	setenv("ADMIT_NO_BMI2", "1", 1);
	sr = srunner_create(cuckoo_suite());
	srunner_run(sr, NULL, "basic", CK_NORMAL);
	failed |= srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
