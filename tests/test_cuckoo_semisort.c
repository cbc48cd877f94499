/*
 * test_cuckoo_semisort.c - the semi-sorted layout: its bucket encoding
 * (src/cuckoo_semisort.h) on every sorted nibble quadruple, and the
 * filter's space, load and answers in that layout.  The calls every layout
 * shares run on it in test_cuckoo.c's mode sweep and test_snapshot.c.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include <admit/cuckoo.h>

#include "cuckoo_internal.h"
#include "cuckoo_semisort.h"
#include "testutil.h"

#define SEED 0x5e5e5e5e12345ull

static struct admit_cuckoo *
make(uint64_t capacity)
{
	struct admit_cuckoo_config cfg = { .capacity = capacity, .seed = SEED,
	                                   .semi_sorted = true };
	struct admit_cuckoo *f = NULL;

	ck_assert_int_eq(admit_cuckoo_new(&cfg, &f), ADMIT_OK);
	return f;
}

/* Every sorted quadruple of nibbles has its own rank below 3876, the
 * decode table gives it back, and pack(unpack()) keeps every bucket of
 * every rank (with low parts chosen to be sorted within equal nibbles). */
START_TEST(test_codes)
{
	static uint16_t dec[SS_DECODE_ENTRIES];
	static unsigned char seen[SS_CODES];
	unsigned n = 0;

	ss_build_decode(dec);
	for (uint32_t d = 0; d < 16; d++)
		for (uint32_t c = 0; c <= d; c++)
			for (uint32_t b = 0; b <= c; b++)
				for (uint32_t a = 0; a <= b; a++) {
					uint32_t r = ss_rank(a, b, c, d);

					ck_assert_uint_lt(r, SS_CODES);
					ck_assert_uint_eq(seen[r], 0);
					seen[r] = 1;
					ck_assert_uint_eq(dec[r], a | b << 4 | c << 8 | d << 12);
					n++;
				}
	ck_assert_uint_eq(n, SS_CODES);
	for (uint64_t r = 0; r < SS_CODES; r++) {
		/* Low parts 5, 6, 7, 8: sorted, so the bucket is canonical
		 * whatever its nibbles. */
		uint64_t v = r | 5ull << 12 | 6ull << 21 | 7ull << 30 | 8ull << 39;
		uint64_t lanes = ss_unpack(v, dec);

		for (int k = 0; k < 4; k++)
			ck_assert_uint_eq((lanes >> (16 * k)) & 0x1ff, 5u + (unsigned)k);
		ck_assert_uint_eq(ss_pack(lanes), v);
	}
}
END_TEST

/* Any four fingerprints pack into 48 bits and unpack as the same
 * multiset, sorted; an empty bucket packs to 0; ss_has_empty() tells a
 * bucket with an empty slot. */
START_TEST(test_pack_multiset)
{
	static uint16_t dec[SS_DECODE_ENTRIES];

	ss_build_decode(dec);
	ck_assert_uint_eq(ss_pack(0), 0);
	for (uint64_t i = 0; i < 200000; i++) {
		uint64_t x = prng_mix(i), lanes = 0, back;
		uint32_t in[4], out[4];

		for (int k = 0; k < 4; k++) {
			/* Many zeros and repeated nibbles among the values. */
			in[k] = (uint32_t)(x >> (16 * k)) & 0x1fff;
			if ((x >> (60 - k)) & 1)
				in[k] = 0;
			lanes |= (uint64_t)in[k] << (16 * k);
		}
		ck_assert_uint_lt(ss_pack(lanes), 1ull << 48);
		back = ss_unpack(ss_pack(lanes), dec);
		ck_assert_int_eq(ss_has_empty(ss_pack(lanes), dec),
		                 !in[0] || !in[1] || !in[2] || !in[3]);
		for (int k = 0; k < 4; k++)
			out[k] = (uint32_t)(back >> (16 * k)) & 0xffff;
		for (int k = 1; k < 4; k++)
			ck_assert_uint_le(out[k - 1], out[k]);
		for (int k = 0; k < 4; k++) {
			int want = 0, got = 0;

			for (int j = 0; j < 4; j++) {
				want += in[j] == in[k];
				got += out[j] == in[k];
			}
			ck_assert_int_eq(got, want);
		}
	}
}
END_TEST

/* 48 bits a bucket: at most 13.0 bits per item at 95 % load, and the
 * filter takes its capacity (95 % of its slots) before its first
 * ADMIT_FULL. */
START_TEST(test_space_and_load)
{
	const uint64_t n = 1000000;
	struct admit_cuckoo *f = make(n);
	uint64_t slots = admit_cuckoo_slots(f), i;
	double bits = 8.0 * (double)admit_cuckoo_memory(f) / (0.95 * (double)slots);
	struct tally look = TALLY_INIT;

	ck_assert_uint_eq(admit_cuckoo_memory(f), slots / 4 * 6);
	for (i = 0; admit_cuckoo_insert(f, KEY(i)) == ADMIT_OK; i++)
		;
	fprintf(stderr, "semi-sorted, capacity %llu: %.3f bits per item at 95 %% "
	        "load, first ADMIT_FULL after %llu items, load %.4f\n",
	        (unsigned long long)n, bits, (unsigned long long)i,
	        (double)i / (double)slots);
	ck_assert_double_le(bits, 13.0);
	ck_assert_uint_ge(i, n);
	ck_assert_double_ge((double)i / (double)slots, 0.95);
	ck_assert_uint_eq(admit_cuckoo_size(f), i);
	ck_assert_uint_eq(cuckoo_debug_walk(f), i);
	for (uint64_t j = 0; j < i; j++)
		tally(&look, admit_cuckoo_contains(f, KEY(j)), j);
	ck_assert_tally(look, "false negatives");
	admit_cuckoo_free(f);
}
END_TEST

/* A key's eight copies: the sort moves them within their buckets, count
 * and delete find every one. */
START_TEST(test_duplicates)
{
	for (uint64_t k = 0; k < 20; k++) {
		struct admit_cuckoo *f = make(1000);
		int copies = 0;

		ck_assert_int_eq(admit_cuckoo_insert(f, KEY(k + 100)), ADMIT_OK);
		while (admit_cuckoo_insert(f, KEY(k)) == ADMIT_OK)
			copies++;
		/* Room for all 8: a neighbour in one of the buckets is
		 * kicked to its other one. */
		ck_assert_int_eq(copies, 8);
		ck_assert_uint_eq(admit_cuckoo_count(f, KEY(k)), (unsigned)copies);
		for (int c = copies - 1; c >= 0; c--) {
			ck_assert_int_eq(admit_cuckoo_delete(f, KEY(k)), ADMIT_OK);
			ck_assert_uint_eq(admit_cuckoo_count(f, KEY(k)), (unsigned)c);
		}
		ck_assert_int_eq(admit_cuckoo_delete(f, KEY(k)), ADMIT_NOTFOUND);
		ck_assert(admit_cuckoo_contains(f, KEY(k + 100)));
		ck_assert_uint_eq(admit_cuckoo_size(f), 1);
		admit_cuckoo_free(f);
	}
}
END_TEST

/* A power-of-two bucket count (128 and 2^19 buckets) takes the masked
 * lookups: a full table finds every stored key by every path. */
START_TEST(test_pow2)
{
	static const uint64_t caps[] = { 486, 1992294 };
	uint64_t n = caps[_i], in = 0;
	struct admit_cuckoo *f = make(n);
	struct tally t = TALLY_INIT;

	ck_assert(f->pow2);
	for (uint64_t i = 0; i < n; i++)
		in += admit_cuckoo_insert(f, KEY(i)) == ADMIT_OK;
	ck_assert_uint_ge(in, n * 99 / 100);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t x = test_key(i);
		const void *key = &x;
		size_t len = 8;
		bool many, m64;

		if (!admit_cuckoo_count(f, KEY(i)))
			continue; /* refused as FULL */
		tally(&t, admit_cuckoo_contains(f, KEY(i)), i);
		admit_cuckoo_contains_many(f, 1, &key, &len, &many);
		tally(&t, many, i);
		admit_cuckoo_contains_many_u64(f, 1, &x, &m64);
		tally(&t, m64, i);
	}
	ck_assert_tally(t, "a stored key not found");
	admit_cuckoo_free(f);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cuckoo_semisort");
	TCase *tc = tcase_create("basic");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_codes);
	tcase_add_test(tc, test_pack_multiset);
	tcase_add_test(tc, test_space_and_load);
	tcase_add_test(tc, test_duplicates);
	tcase_add_loop_test(tc, test_pow2, 0, 2);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	failed = test_run(sr);
	/* Again on the copies compiled without BMI2 (cuckoo_ops.h). */
	setenv("ADMIT_NO_BMI2", "1", 1);
	sr = srunner_create(s = suite_create("cuckoo_semisort_nobmi2"));
	tc = tcase_create("basic");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_duplicates);
	tcase_add_loop_test(tc, test_pow2, 0, 2);
	suite_add_tcase(s, tc);
	failed |= test_run(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
