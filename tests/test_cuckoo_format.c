/*
 * test_cuckoo_format.c - the filter's two hash versions (cuckoo_internal.h):
 * new filters hash 8-byte keys by admit_mul8() and save as snapshot format
 * 2; a format-1 filter (XXH3 for every key) keeps answering, saving and
 * loading as such, and both agree with every lookup path.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <admit/cuckoo.h>
#include <admit/cuckoo_inline.h>

#include "cuckoo_internal.h"
#include "snapfile.h"
#include "testutil.h"

#define SEED 0x5eed5eed12345678ull

/* The 128-bit product of admit_mul8(), by 32-bit halves: an independent
 * computation of the same function. */
static uint64_t
mul8_by_halves(uint64_t key, uint64_t k, uint64_t s)
{
	uint64_t a = key ^ s, b = (key << 32 | key >> 32) ^ k;
	uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
	uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
	uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
	uint64_t lo = (mid << 32) | (uint32_t)p00;
	uint64_t hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);

	return hi ^ lo;
}

START_TEST(test_mul8_value)
{
	struct admit_mul8 m = admit_mul8_prepare(SEED);
	uint64_t x = 0x0123456789abcdefull;

	for (int i = 0; i < 100000; i++) {
		unsigned char le[8];

		/* The key's bytes little-endian, whatever the host. */
		for (int b = 0; b < 8; b++)
			le[b] = (unsigned char)(x >> (8 * b));
		ck_assert_uint_eq(admit_mul8(le, m.k, m.s), mul8_by_halves(x, m.k, m.s));
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	}
}
END_TEST

static struct admit_cuckoo *
make(unsigned version, unsigned bits, bool counting, uint64_t capacity)
{
	struct admit_cuckoo *f = NULL;

	ck_assert_int_eq(cuckoo_create(capacity, cuckoo_buckets_for(capacity), bits,
	                               counting, 64, SEED, version, NULL, &f),
	                 ADMIT_OK);
	return f;
}

static const struct { unsigned bits; bool counting; } modes[] = {
	{ 8, false }, { 16, false }, { 16, true }
};

/* Each version: the positions are its hash's, every lookup path answers
 * alike, and a save and load keeps the version and every answer. */
START_TEST(test_versions)
{
	const uint64_t n = 20000;
	char path[] = "/tmp/admit_fmtXXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	for (unsigned v = CUCKOO_HASH_XXH3; v <= CUCKOO_HASH_MUL8; v++) {
		struct admit_cuckoo *f = make(v, modes[_i].bits, modes[_i].counting, n);
		struct admit_cuckoo *g = NULL;
		struct admit_cuckoo_view view = admit_cuckoo_view_of(f);
		struct tally t = TALLY_INIT;
		unsigned char hdr[12];
		FILE *fp;

		for (uint64_t i = 0; i < n * 9 / 10; i++)
			tally(&t, admit_cuckoo_insert(f, KEY(i)) == ADMIT_OK, i);
		for (uint64_t i = 0; i < 2 * n; i++) {
			uint64_t x = test_key(i);
			uint64_t h = v == CUCKOO_HASH_MUL8 ?
			             admit_mul8(&x, f->mul.k, f->mul.s) :
			             admit_hash(&x, 8, SEED);
			struct cuckoo_pos p, q;
			const void *key = &x;
			size_t len = 8;
			bool many, m64, lib = admit_cuckoo_contains(f, KEY(i));

			cuckoo_locate(f, KEY(i), &p);
			cuckoo_locate_hash(f, h, f->fp_bits, &q);
			tally(&t, p.i1 == q.i1 && p.i2 == q.i2 && p.fp == q.fp, i);
			tally(&t, i >= n * 9 / 10 || lib, i);
			admit_cuckoo_contains_many(f, 1, &key, &len, &many);
			tally(&t, many == lib, i);
			admit_cuckoo_contains_many_u64(f, 1, &x, &m64);
			tally(&t, m64 == lib, i);
			tally(&t, admit_cuckoo_view_contains(&view, f, KEY(i)) == lib, i);
		}
		ck_assert_tally(t, "lookup paths");
		/* The inline path hashes as version 1 only. */
		ck_assert_uint_eq(view.width,
		                  v == CUCKOO_HASH_XXH3 && !modes[_i].counting ?
		                  modes[_i].bits : 0);

		ck_assert_int_eq(admit_cuckoo_save(f, path), ADMIT_OK);
		fp = fopen(path, "rb");
		ck_assert_ptr_nonnull(fp);
		ck_assert_uint_eq(fread(hdr, 1, sizeof(hdr), fp), sizeof(hdr));
		fclose(fp);
		ck_assert_uint_eq(hdr[8] | hdr[9] << 8 | hdr[10] << 16 |
		                  (uint32_t)hdr[11] << 24, v);
		ck_assert_int_eq(admit_cuckoo_load(path, &g), ADMIT_OK);
		ck_assert_uint_eq(g->hash_version, v);
		for (uint64_t i = 0; i < 2 * n; i++)
			tally(&t, admit_cuckoo_contains(g, KEY(i)) ==
			          admit_cuckoo_contains(f, KEY(i)), i);
		ck_assert_tally(t, "loaded filter answers differently");
		admit_cuckoo_free(g);
		admit_cuckoo_free(f);
	}
	unlink(path);
}
END_TEST

/* Tables of a power-of-two bucket count look the alternate bucket up by a
 * mask: full tables (most keys in one of their two buckets, many in the
 * second) of 8 and 16 bits, the larger 16-bit one with its alt16 table,
 * must find every key by every path. */
START_TEST(test_pow2)
{
	static const struct { unsigned bits; uint64_t capacity; } c[] = {
		{ 8, 486 }, { 16, 486 }, { 8, 1992294 }, { 16, 1992294 }
	};
	struct admit_cuckoo *f = make(CUCKOO_HASH_MUL8, c[_i].bits, false,
	                              c[_i].capacity);
	uint64_t n = c[_i].capacity, in = 0;
	struct tally t = TALLY_INIT;

	ck_assert(f->pow2);
	ck_assert(c[_i].bits == 8 || (f->alt16 != NULL) == (f->m >= 1u << 19));
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

/* A version other than 1 and 2 is refused for a 16-bit table (3 is the
 * semi-sorted layout's: test_semisort_format). */
START_TEST(test_unknown_version)
{
	struct admit_cuckoo *f = make(CUCKOO_HASH_MUL8, 16, false, 1000);
	struct admit_cuckoo *g = NULL;
	unsigned char *buf = malloc(cuckoo_snapshot_len(f));

	ck_assert_ptr_nonnull(buf);
	cuckoo_snapshot_encode(f, buf);
	ck_assert_int_eq(cuckoo_snapshot_decode(buf, cuckoo_snapshot_len(f), NULL, &g),
	                 ADMIT_OK);
	admit_cuckoo_free(g);
	g = NULL;
	for (uint32_t v = 0; v < 5; v++) {
		if (v == CUCKOO_HASH_XXH3 || v == CUCKOO_HASH_MUL8)
			continue;
		/* With a checksum that holds: only the version is wrong. */
		buf[8] = (unsigned char)v;
		snap_put64(buf + cuckoo_snapshot_len(f) - 8,
		           XXH3_64bits(buf, cuckoo_snapshot_len(f) - 8));
		ck_assert_int_eq(cuckoo_snapshot_decode(buf, cuckoo_snapshot_len(f),
		                                        NULL, &g), ADMIT_ECORRUPT);
		ck_assert_ptr_null(g);
	}
	free(buf);
	admit_cuckoo_free(f);
}
END_TEST

/* The occupied slots of a packed bucket. */
static uint64_t
lanes_used(uint64_t v, const uint16_t *dec)
{
	uint64_t lanes = ss_unpack(v, dec), n = 0;

	for (int k = 0; k < 4; k++)
		n += ((lanes >> (16 * k)) & 0xffff) != 0;
	return n;
}

/* The semi-sorted layout saves as format 3 (13-bit fingerprints, 6 bytes
 * a bucket, hashing as version 2) and loads back answering alike; a
 * bucket whose rank is out of range, or whose fingerprints are out of
 * their sorted order, is refused even under a checksum that holds. */
START_TEST(test_semisort_format)
{
	const uint64_t n = 5000;
	struct admit_cuckoo *f = make(CUCKOO_HASH_MUL8, SS_FP_BITS, false, n);
	struct admit_cuckoo *g = NULL;
	size_t len = cuckoo_snapshot_len(f), at = 56;
	unsigned char *buf = malloc(len), *bad = malloc(len);
	struct tally t = TALLY_INIT;
	static uint16_t dec[SS_DECODE_ENTRIES];

	ss_build_decode(dec);
	ck_assert_ptr_nonnull(f->t16);
	ck_assert_uint_eq(len, 56 + (size_t)f->m * 6 + 8);
	for (uint64_t i = 0; i < n; i++)
		tally(&t, admit_cuckoo_insert(f, KEY(i)) == ADMIT_OK, i);
	ck_assert_tally(t, "insert");
	cuckoo_snapshot_encode(f, buf);
	ck_assert_uint_eq(snap_get32(buf + 8), 3);
	ck_assert_uint_eq(snap_get32(buf + 16), SS_FP_BITS);
	ck_assert_int_eq(cuckoo_snapshot_decode(buf, len, NULL, &g), ADMIT_OK);
	ck_assert_uint_eq(g->hash_version, CUCKOO_HASH_MUL8);
	for (uint64_t i = 0; i < 2 * n; i++)
		tally(&t, admit_cuckoo_contains(g, KEY(i)) ==
		          admit_cuckoo_contains(f, KEY(i)), i);
	ck_assert_tally(t, "decoded filter answers differently");
	admit_cuckoo_free(g);
	g = NULL;
	/* The first bucket, broken in three ways. */
	for (int k = 0; k < 3; k++) {
		uint64_t old = snap_get32(buf + at) | (uint64_t)buf[at + 4] << 32 |
		               (uint64_t)buf[at + 5] << 40, v = old;

		memcpy(bad, buf, len);
		if (k == 0)
			v = (v & ~0xfffull) | SS_CODES;      /* rank out of range */
		else if (k == 1)
			v = (v & ~0xfffull) | 0xfff;
		else /* every nibble 0, low parts 0x1ff, 1, 0, 0: unsorted */
			v = 0x1ffull << 12 | 1ull << 21;
		snap_put32(bad + at, (uint32_t)v);
		bad[at + 4] = (unsigned char)(v >> 32);
		bad[at + 5] = (unsigned char)(v >> 40);
		/* The item count made to agree: only the bucket is wrong. */
		snap_put64(bad + 48, snap_get64(buf + 48) - lanes_used(old, dec) +
		                     lanes_used(v, dec));
		snap_put64(bad + len - 8, XXH3_64bits(bad, len - 8));
		ck_assert_int_eq(cuckoo_snapshot_decode(bad, len, NULL, &g),
		                 ADMIT_ECORRUPT);
		ck_assert_ptr_null(g);
	}
	/* Format 2 with 13 bits, and format 3 with 16: refused. */
	memcpy(bad, buf, len);
	snap_put32(bad + 8, CUCKOO_HASH_MUL8);
	snap_put64(bad + len - 8, XXH3_64bits(bad, len - 8));
	ck_assert_int_eq(cuckoo_snapshot_decode(bad, len, NULL, &g), ADMIT_ECORRUPT);
	memcpy(bad, buf, len);
	snap_put32(bad + 16, 16);
	snap_put64(bad + len - 8, XXH3_64bits(bad, len - 8));
	ck_assert_int_eq(cuckoo_snapshot_decode(bad, len, NULL, &g), ADMIT_ECORRUPT);
	free(bad);
	free(buf);
	admit_cuckoo_free(f);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cuckoo_format");
	TCase *tc = tcase_create("basic");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_mul8_value);
	tcase_add_loop_test(tc, test_versions, 0, 3);
	tcase_add_loop_test(tc, test_pow2, 0, 4);
	tcase_add_test(tc, test_unknown_version);
	tcase_add_test(tc, test_semisort_format);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
