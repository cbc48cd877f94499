/*
 * Snapshot tests: round trips, and every way a file can be damaged.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL /* no link dependency on libxxhash */
#include <xxhash.h>

#include <admit/admit.h>

#include "testutil.h"

static char dir[] = "/tmp/admit-snapXXXXXX";
static char path[sizeof(dir) + 32];

static void
setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(strcpy(dir, "/tmp/admit-snapXXXXXX")));
	snprintf(path, sizeof(path), "%s/f.snap", dir);
}

static void
teardown(void)
{
	unlink(path);
	rmdir(dir);
}

static unsigned char *
slurp(size_t *len)
{
	FILE *fp = fopen(path, "rb");
	unsigned char *buf;
	long n;

	ck_assert_ptr_nonnull(fp);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	buf = malloc((size_t)n);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return buf;
}

static void
spill(const unsigned char *buf, size_t len)
{
	FILE *fp = fopen(path, "wb");

	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(buf, 1, len, fp), len);
	fclose(fp);
}

static struct admit_cuckoo *
make(uint64_t capacity, unsigned bits, bool counting, uint64_t seed)
{
	struct admit_cuckoo_config cfg = {
		.capacity = capacity, .fingerprint_bits = bits,
		.counting = counting, .seed = seed, .stripes = 64,
		.semi_sorted = bits == 13,
	};
	struct admit_cuckoo *f = NULL;

	ck_assert_int_eq(admit_cuckoo_new(&cfg, &f), ADMIT_OK);
	return f;
}

START_TEST(test_save_load)
{
	static const struct { unsigned bits; bool counting; } m[] = {
		{ 8, false }, { 16, false }, { 16, true }, { 13, false }
	};
	const uint64_t n = 100000;
	struct admit_cuckoo *f = make(n, m[_i].bits, m[_i].counting, 0);
	struct admit_cuckoo *g = NULL;
	struct tally t = TALLY_INIT;

	for (uint64_t i = 0; i < n; i++)
		for (uint64_t c = 0; c <= (m[_i].counting ? i % 3 : 0); c++)
			tally(&t, admit_cuckoo_insert(f, KEY(i)) == ADMIT_OK, i);
	ck_assert_tally(t, "insert");
	ck_assert_int_eq(admit_cuckoo_save(f, path), ADMIT_OK);
	ck_assert_int_eq(admit_cuckoo_load(path, &g), ADMIT_OK);
	ck_assert_uint_eq(admit_cuckoo_size(g), admit_cuckoo_size(f));
	ck_assert_uint_eq(admit_cuckoo_slots(g), admit_cuckoo_slots(f));
	ck_assert_uint_eq(admit_cuckoo_memory(g), admit_cuckoo_memory(f));
	/* Same seed, same table: every answer, true or false, is the same. */
	for (uint64_t i = 0; i < 2 * n; i++) {
		tally(&t, admit_cuckoo_count(g, KEY(i)) == admit_cuckoo_count(f, KEY(i)), i);
		tally(&t, admit_cuckoo_contains(g, KEY(i + (1ull << 40))) ==
		          admit_cuckoo_contains(f, KEY(i + (1ull << 40))), i);
	}
	ck_assert_tally(t, "loaded filter answers differently");
	/* And it keeps working as a filter. */
	ck_assert_int_eq(admit_cuckoo_delete(g, KEY(1)), ADMIT_OK);
	ck_assert_int_eq(admit_cuckoo_insert(g, KEY(n + 5)), ADMIT_OK);
	ck_assert(admit_cuckoo_contains(g, KEY(n + 5)));
	admit_cuckoo_free(g);
	admit_cuckoo_free(f);
}
END_TEST

START_TEST(test_load_errors)
{
	struct admit_cuckoo *g = (struct admit_cuckoo *)0x1;
	struct admit_cuckoo *f = make(10, 16, false, 7);
	char bad[sizeof(dir) + 40];

	ck_assert_int_eq(admit_cuckoo_load(NULL, &g), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_load(path, NULL), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_load(path, &g), ADMIT_EIO); /* missing */
	ck_assert_int_eq(admit_cuckoo_load(dir, &g), ADMIT_ENOTREG); /* a directory */
	spill((const unsigned char *)"", 0);
	ck_assert_int_eq(admit_cuckoo_load(path, &g), ADMIT_ECORRUPT);
	spill((const unsigned char *)"hello world, this is not a filter at all, "
	      "but it is long enough to hold a header, really\n", 90);
	ck_assert_int_eq(admit_cuckoo_load(path, &g), ADMIT_ECORRUPT);
	ck_assert_ptr_eq(g, (struct admit_cuckoo *)0x1);

	ck_assert_int_eq(admit_cuckoo_save(NULL, path), ADMIT_EINVAL);
	ck_assert_int_eq(admit_cuckoo_save(f, NULL), ADMIT_EINVAL);
	snprintf(bad, sizeof(bad), "%s/no/such/dir/f", dir);
	ck_assert_int_eq(admit_cuckoo_save(f, bad), ADMIT_EIO);
	admit_cuckoo_free(f);
}
END_TEST

/*
 * Cut a small filter's snapshot at every length, and flip every byte of it
 * (in two ways): each damaged file is refused as corrupt, never loaded,
 * never a crash, and leaks nothing (run under ASan).
 */
START_TEST(test_damaged_files)
{
	static const struct { unsigned bits; bool counting; } m[] = {
		{ 8, false }, { 16, false }, { 16, true }, { 13, false }
	};
	struct admit_cuckoo *f = make(20, m[_i].bits, m[_i].counting, 99);
	struct admit_cuckoo *g = NULL;
	unsigned char *orig, *buf;
	size_t len;

	for (uint64_t i = 0; i < 15; i++)
		ck_assert_int_eq(admit_cuckoo_insert(f, KEY(i)), ADMIT_OK);
	ck_assert_int_eq(admit_cuckoo_save(f, path), ADMIT_OK);
	orig = slurp(&len);
	buf = malloc(len + 1);

	for (size_t cut = 0; cut < len; cut++) {
		spill(orig, cut);
		ck_assert_msg(admit_cuckoo_load(path, &g) == ADMIT_ECORRUPT,
		              "truncated at %zu of %zu", cut, len);
	}
	memcpy(buf, orig, len);
	buf[len] = 0;
	spill(buf, len + 1); /* one byte too many */
	ck_assert_int_eq(admit_cuckoo_load(path, &g), ADMIT_ECORRUPT);

	for (size_t at = 0; at < len; at++) {
		static const unsigned char flips[] = { 0xff, 0x01 };

		for (size_t k = 0; k < sizeof(flips); k++) {
			memcpy(buf, orig, len);
			buf[at] ^= flips[k];
			spill(buf, len);
			ck_assert_msg(admit_cuckoo_load(path, &g) == ADMIT_ECORRUPT,
			              "byte %zu ^ 0x%02x of %zu loaded", at, flips[k], len);
		}
	}
	spill(orig, len);
	ck_assert_int_eq(admit_cuckoo_load(path, &g), ADMIT_OK);
	ck_assert_uint_eq(admit_cuckoo_size(g), 15);
	admit_cuckoo_free(g);
	free(buf);
	free(orig);
	admit_cuckoo_free(f);
}
END_TEST

/*
 * A FIFO with no writer: opening it for reading blocks, so load must look at
 * the kind of file without waiting for a writer, and refuse it.  (Check's
 * per-test timeout fails this test if load blocks.)
 */
START_TEST(test_load_fifo)
{
	struct admit_cuckoo *g = (struct admit_cuckoo *)0x1;

	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(admit_cuckoo_load(path, &g), ADMIT_ENOTREG);
	ck_assert_ptr_eq(g, (struct admit_cuckoo *)0x1);
}
END_TEST

/*
 * Save replaces only a regular file: through a symlink it writes the file
 * the link names (the link stays a link); a directory, a FIFO or a device
 * is refused and left as it was.
 */
START_TEST(test_save_targets)
{
	struct admit_cuckoo *f = make(20, 16, false, 3);
	struct admit_cuckoo *g = NULL;
	char link[sizeof(dir) + 16], sub[sizeof(dir) + 16];
	struct stat sb;

	ck_assert_int_eq(admit_cuckoo_insert(f, KEY(1)), ADMIT_OK);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	ck_assert_int_eq(symlink("f.snap", link), 0);
	ck_assert_int_eq(admit_cuckoo_save(f, link), ADMIT_OK);
	ck_assert_int_eq(lstat(link, &sb), 0);
	ck_assert(S_ISLNK(sb.st_mode));
	ck_assert_int_eq(lstat(path, &sb), 0);
	ck_assert(S_ISREG(sb.st_mode));
	ck_assert_int_eq(admit_cuckoo_load(path, &g), ADMIT_OK);
	ck_assert(admit_cuckoo_contains(g, KEY(1)));
	admit_cuckoo_free(g);
	/* Again, now that the link's target exists. */
	ck_assert_int_eq(admit_cuckoo_save(f, link), ADMIT_OK);
	ck_assert_int_eq(lstat(link, &sb), 0);
	ck_assert(S_ISLNK(sb.st_mode));
	ck_assert_int_eq(unlink(link), 0);

	ck_assert_int_eq(mkdir(sub, 0700), 0);
	ck_assert_int_eq(admit_cuckoo_save(f, sub), ADMIT_ENOTREG);
	ck_assert_int_eq(lstat(sub, &sb), 0);
	ck_assert(S_ISDIR(sb.st_mode));
	ck_assert_int_eq(rmdir(sub), 0);
	ck_assert_int_eq(admit_cuckoo_save(f, "/dev/null"), ADMIT_ENOTREG);
	ck_assert_int_eq(lstat("/dev/null", &sb), 0);
	ck_assert(S_ISCHR(sb.st_mode));
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(admit_cuckoo_save(f, path), ADMIT_ENOTREG);
	ck_assert_int_eq(lstat(path, &sb), 0);
	ck_assert(S_ISFIFO(sb.st_mode));
	admit_cuckoo_free(f);
}
END_TEST

/*
 * A header with capacity 0 and 0 buckets, the size and checksum right for
 * it: a damaged file (ADMIT_ECORRUPT), not a failed allocation.
 */
START_TEST(test_load_capacity_zero)
{
	struct admit_cuckoo *f = make(20, 16, false, 5);
	struct admit_cuckoo *g = (struct admit_cuckoo *)0x1;
	unsigned char *orig, buf[64];
	uint64_t sum;
	size_t len;

	ck_assert_int_eq(admit_cuckoo_save(f, path), ADMIT_OK);
	orig = slurp(&len);
	ck_assert_uint_ge(len, 56);
	memcpy(buf, orig, 56);
	memset(buf + 24, 0, 16);	/* capacity and buckets */
	memset(buf + 48, 0, 8);		/* items */
	sum = XXH3_64bits(buf, 56);
	for (int i = 0; i < 8; i++)
		buf[56 + i] = (unsigned char)(sum >> (8 * i));
	spill(buf, 64);
	ck_assert_int_eq(admit_cuckoo_load(path, &g), ADMIT_ECORRUPT);
	ck_assert_ptr_eq(g, (struct admit_cuckoo *)0x1);
	free(orig);
	admit_cuckoo_free(f);
}
END_TEST

Suite *
snapshot_suite(void)
{
	Suite *s = suite_create("snapshot");
	TCase *tc = tcase_create("files");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_save_load, 0, 4);
	tcase_add_test(tc, test_load_errors);
	tcase_add_loop_test(tc, test_damaged_files, 0, 4);
	tcase_add_test(tc, test_load_fifo);
	tcase_add_test(tc, test_save_targets);
	tcase_add_test(tc, test_load_capacity_zero);
	suite_add_tcase(s, tc);
	return s;
}
