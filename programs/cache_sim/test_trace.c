/*
 * Unit tests for programs/cache_sim/trace.c: every trace format, plain and compressed,
 * bad files, and Belady's OPT against hand-worked traces, a brute-force
 * reference, and the published figures of ../shared/README.md (skipped, with
 * a message, when ../shared is absent, as in a user's clone).
 */
#include <check.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "testutil.h"
#include "trace.h"

static char dir[64];

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "%s", "/tmp/admit-trace-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void
teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

enum packing { PLAIN, GZIP, XZ };

/* Writes data to dir/name, packed as asked; returns the path (static). */
static const char *
put(const char *name, const void *data, size_t len, enum packing how)
{
	static char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (how == GZIP) {
		gzFile gz = gzopen(path, "wb");

		ck_assert_ptr_nonnull(gz);
		ck_assert_int_eq(gzwrite(gz, data, (unsigned)len), (int)len);
		ck_assert_int_eq(gzclose(gz), Z_OK);
		return path;
	}
	fp = fopen(path, "wb");
	ck_assert_ptr_nonnull(fp);
	if (how == XZ) {
		size_t cap = len + 1024, out_len = 0;
		unsigned char *out = malloc(cap);

		ck_assert_int_eq(lzma_easy_buffer_encode(1, LZMA_CHECK_CRC64, NULL,
		                 data, len, out, &out_len, cap), LZMA_OK);
		ck_assert_uint_eq(fwrite(out, 1, out_len, fp), out_len);
		free(out);
	} else {
		ck_assert_uint_eq(fwrite(data, 1, len, fp), len);
	}
	ck_assert_int_eq(fclose(fp), 0);
	return path;
}

static void
expect(const char *path, enum trace_format fmt, const uint64_t *want, size_t n)
{
	uint64_t *keys = NULL;
	size_t got = 0;
	char err[256] = "";

	ck_assert_msg(trace_load(path, fmt, &keys, &got, err, sizeof(err)) == 0,
	              "%s as %s: %s", path, trace_format_name(fmt), err);
	ck_assert_uint_eq(got, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(keys[i] == want[i], "%s key %zu", path, i);
	free(keys);
}

static const char *const packs[] = { "plain", "gz", "xz" };

START_TEST(test_text)
{
	static const char data[] = "alpha\nbeta\r\n\ngamma";
	const uint64_t want[] = { XXH3_64bits("alpha", 5), XXH3_64bits("beta", 4),
	                          XXH3_64bits("gamma", 5) };
	char name[32];

	snprintf(name, sizeof(name), "keys.txt.%s", packs[_i]);
	expect(put(name, data, strlen(data), (enum packing)_i), TRACE_TEXT, want, 3);
	expect(put(name, data, strlen(data), (enum packing)_i), TRACE_AUTO, want, 3);
}
END_TEST

START_TEST(test_lirs)
{
	static const char data[] = "1\n*\n\n 2\n-3\r\n*\n18446744073709551\n";
	const uint64_t want[] = { 1, 2, (uint64_t)-3, 18446744073709551ull };
	char name[32];

	snprintf(name, sizeof(name), "x.trace.%s", packs[_i]);
	expect(put(name, data, strlen(data), (enum packing)_i), TRACE_LIRS, want, 4);
	expect(put(name, data, strlen(data), (enum packing)_i), TRACE_AUTO, want, 4);
}
END_TEST

START_TEST(test_arc)
{
	static const char data[] = "10 3 0 1\n\n5 1 0 2\n7 0 0 3\n";
	const uint64_t want[] = { 10, 11, 12, 5 };
	char name[32];

	snprintf(name, sizeof(name), "x.lis.%s", packs[_i]);
	expect(put(name, data, strlen(data), (enum packing)_i), TRACE_ARC, want, 4);
	expect(put(name, data, strlen(data), (enum packing)_i), TRACE_AUTO, want, 4);
	/* The content alone says ARC too. */
	expect(put("arc.txt", data, strlen(data), PLAIN), TRACE_AUTO, want, 4);
}
END_TEST

START_TEST(test_binary)
{
	static const unsigned char b32[] = { 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe,
	                                     0x12, 0x34, 0x56, 0x78 };
	static const unsigned char b64[] = { 0, 0, 0, 0, 0, 0, 0, 1,
	                                     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
	                                     0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef };
	const uint64_t w32[] = { 1, (uint64_t)-2, 0x12345678 };
	const uint64_t w64[] = { 1, (uint64_t)-2, 0x0123456789abcdefull };
	char name[32];

	snprintf(name, sizeof(name), "k.i32.%s", packs[_i]);
	expect(put(name, b32, sizeof(b32), (enum packing)_i), TRACE_I32BE, w32, 3);
	expect(put(name, b32, sizeof(b32), (enum packing)_i), TRACE_AUTO, w32, 3);
	snprintf(name, sizeof(name), "k.bin.%s", packs[_i]);
	expect(put(name, b64, sizeof(b64), (enum packing)_i), TRACE_I64BE, w64, 3);
	expect(put(name, b64, sizeof(b64), (enum packing)_i), TRACE_AUTO, w64, 3);
}
END_TEST

/* A binary trace of a length both widths fit, named neither: 32-bit keys
 * that repeat are read as 32-bit, 64-bit keys below 2^32 that repeat as
 * 64-bit (trace.c, guess_width()). */
START_TEST(test_binary_width)
{
	unsigned char b32[64 * 4], b64[32 * 8];
	uint64_t w32[64], w64[32];
	char name[32];

	for (unsigned i = 0; i < 64; i++) {
		w32[i] = 1000 + i % 7;
		for (unsigned k = 0; k < 4; k++)
			b32[4 * i + k] = (unsigned char)(w32[i] >> (24 - 8 * k));
	}
	for (unsigned i = 0; i < 32; i++) {
		w64[i] = 1000 + i % 7;
		for (unsigned k = 0; k < 8; k++)
			b64[8 * i + k] = (unsigned char)(w64[i] >> (56 - 8 * k));
	}
	snprintf(name, sizeof(name), "w32.bin.%s", packs[_i]);
	expect(put(name, b32, sizeof(b32), (enum packing)_i), TRACE_AUTO, w32, 64);
	snprintf(name, sizeof(name), "w64.bin.%s", packs[_i]);
	expect(put(name, b64, sizeof(b64), (enum packing)_i), TRACE_AUTO, w64, 32);
}
END_TEST

START_TEST(test_empty)
{
	uint64_t *keys = NULL;
	size_t n = 99;
	char err[256];

	ck_assert_int_eq(trace_load(put("empty", "", 0, PLAIN), TRACE_AUTO, &keys,
	                            &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 0);
	free(keys);
}
END_TEST

static void
refuse(const char *path, enum trace_format fmt, const char *what)
{
	uint64_t *keys = (uint64_t *)0x1;
	size_t n = 99;
	char err[256] = "";

	ck_assert_msg(trace_load(path, fmt, &keys, &n, err, sizeof(err)) == -1,
	              "%s accepted", what);
	ck_assert_msg(err[0] != '\0', "%s: no message", what);
	ck_assert_ptr_eq(keys, (uint64_t *)0x1);
	ck_assert_uint_eq(n, 99);
}

START_TEST(test_bad_files)
{
	static const char lirs[] = "1\n2\nthree\n";
	static const char arc[] = "1 99999999999 0 1\n";
	static const char arc1[] = "12\n";
	unsigned char buf[4096];
	uint64_t *keys;
	size_t n, len;
	char err[256];
	FILE *fp;

	refuse("/nonexistent/admit/trace", TRACE_AUTO, "a missing file");
	refuse(dir, TRACE_AUTO, "a directory");
	refuse(put("bad.trace", lirs, strlen(lirs), PLAIN), TRACE_LIRS, "a word in LIRS");
	refuse(put("bad.lis", arc, strlen(arc), PLAIN), TRACE_ARC, "an absurd ARC count");
	refuse(put("bad2.lis", arc1, strlen(arc1), PLAIN), TRACE_ARC, "one ARC field");
	refuse(put("bad.i64", "1234567", 7, PLAIN), TRACE_I64BE, "7 bytes as i64be");
	refuse(put("bad.i32", "123456", 6, PLAIN), TRACE_I32BE, "6 bytes as i32be");

	/* Compressed files cut short, and with their data altered. */
	memset(buf, 'x', sizeof(buf));
	for (size_t i = 0; i < sizeof(buf); i += 7)
		buf[i] = '\n';
	for (int how = GZIP; how <= XZ; how++) {
		const char *p = put(how == GZIP ? "cut.gz" : "cut.xz", buf,
		                    sizeof(buf), (enum packing)how);
		unsigned char whole[8192];

		fp = fopen(p, "rb");
		len = fread(whole, 1, sizeof(whole), fp);
		fclose(fp);
		ck_assert_uint_gt(len, 40);
		put(how == GZIP ? "cut.gz" : "cut.xz", whole, len / 2, PLAIN);
		refuse(p, TRACE_TEXT, "a truncated compressed file");
		whole[len / 2] ^= 0x55;
		whole[len / 2 + 1] ^= 0x55;
		put(how == GZIP ? "cut.gz" : "cut.xz", whole, len, PLAIN);
		refuse(p, TRACE_TEXT, "an altered compressed file");
	}

	ck_assert_int_eq(trace_load(NULL, TRACE_AUTO, &keys, &n, err, sizeof(err)), -1);
	ck_assert_int_eq(trace_load(dir, TRACE_AUTO, NULL, &n, err, sizeof(err)), -1);
	ck_assert_int_eq(trace_load(dir, TRACE_AUTO, &keys, NULL, NULL, 0), -1);
	ck_assert_int_eq(trace_load(dir, (enum trace_format)42, &keys, &n, err,
	                            sizeof(err)), -1);
}
END_TEST

START_TEST(test_format_names)
{
	for (int f = TRACE_AUTO; f <= TRACE_I64BE; f++)
		ck_assert_int_eq(trace_format_parse(trace_format_name((enum trace_format)f)), f);
	ck_assert_int_eq(trace_format_parse("lirs"), TRACE_LIRS);
	ck_assert_int_eq(trace_format_parse("LIRS"), -1);
	ck_assert_int_eq(trace_format_parse(""), -1);
	ck_assert_int_eq(trace_format_parse(NULL), -1);
}
END_TEST

/* ---- OPT ---------------------------------------------------------------- */

#define OPT(size, ...) \
	trace_opt_hits((const uint64_t[]){ __VA_ARGS__ }, \
	               sizeof((const uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t), \
	               (size))

START_TEST(test_opt_by_hand)
{
	/* Worked by hand, with the bypass rule. */
	ck_assert_uint_eq(OPT(1, 7, 7, 7, 7), 3);
	/* 1 is cached; 2 (next at 3) is farther than 1 (next at 2): bypassed. */
	ck_assert_uint_eq(OPT(1, 1, 2, 1, 2), 1);
	/* 3 is next used after both residents: bypassed; 1 and 2 hit. */
	ck_assert_uint_eq(OPT(2, 1, 2, 3, 1, 2, 3), 2);
	/* Enough room: every repeat hits. */
	ck_assert_uint_eq(OPT(3, 1, 2, 3, 1, 2, 3), 3);
	/* A key never used again is not cached, so it evicts nothing. */
	ck_assert_uint_eq(OPT(1, 1, 2, 3, 4, 1), 1);
	/* LRU's worst case, a loop one larger than the cache (LRU: 0 hits).
	 * OPT keeps 1 and 2 and bypasses 3 each round: 2 hits in each of the
	 * last two rounds. */
	ck_assert_uint_eq(OPT(2, 1, 2, 3, 1, 2, 3, 1, 2, 3), 4);
	ck_assert_uint_eq(OPT(0, 1, 1), 0);
	ck_assert_uint_eq(trace_opt_hits(NULL, 0, 10), 0);
}
END_TEST

/* Belady by brute force: on a miss with a full cache, scan the residents'
 * next uses, and leave out the farthest of them and the requested key. */
static uint64_t
opt_reference(const uint64_t *k, size_t n, size_t size)
{
	uint64_t cache[16], hits = 0;
	size_t used = 0;

	for (size_t i = 0; i < n; i++) {
		size_t far = 0, far_at = 0, nx;
		bool hit = false;

		for (size_t c = 0; c < used; c++)
			hit |= cache[c] == k[i];
		if (hit) {
			hits++;
			continue;
		}
		if (used < size) {
			cache[used++] = k[i];
			continue;
		}
		for (nx = i + 1; nx < n && k[nx] != k[i]; nx++)
			;
		far = nx;
		far_at = size; /* "the requested key" */
		for (size_t c = 0; c < used; c++) {
			size_t j;

			for (j = i + 1; j < n && k[j] != cache[c]; j++)
				;
			if (j > far) {
				far = j;
				far_at = c;
			}
		}
		if (far_at < size)
			cache[far_at] = k[i];
	}
	return hits;
}

START_TEST(test_opt_reference)
{
	uint64_t k[400], x = 0x1234567;
	unsigned checked = 0;

	for (unsigned round = 0; round < 300; round++) {
		size_t n = 1 + round % 400, alphabet = 2 + round % 23;

		for (size_t i = 0; i < n; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			/* Squaring skews the draw towards small keys. */
			k[i] = ((x >> 33) % alphabet) * ((x >> 13) % alphabet) % alphabet;
		}
		for (size_t size = 1; size <= 12; size++) {
			uint64_t want = opt_reference(k, n, size), got = trace_opt_hits(k, n, size);

			if (got != want)
				ck_abort_msg("round %u n %zu size %zu: %llu hits, want %llu",
				             round, n, size, (unsigned long long)got,
				             (unsigned long long)want);
			checked++;
		}
	}
	ck_assert_uint_eq(checked, 300 * 12);
}
END_TEST

/* ---- the shared traces -------------------------------------------------- */

static const char *
shared_traces(void)
{
	static char path[4096];
	const char *top = getenv("top_srcdir");

	snprintf(path, sizeof(path), "%s/../shared/traces", top ? top : ".");
	if (access(path, R_OK) != 0) {
		printf("test_trace: %s is absent: shared-trace checks skipped\n", path);
		return NULL;
	}
	return path;
}

/* Published OPT hit ratios (percent), ../shared/README.md; sizes whose
 * figure is only approximate there ("~58") are left out. */
static const struct {
	const char *file;
	size_t requests;
	size_t sizes[8];
	double opt[8];
} published[] = {
	{ "gli.trace.gz", 6015, { 250, 500, 750, 1000, 1250 },
	  { 17.71, 34.33, 46.13, 53.15, 57.31 } },
	{ "loop.trace.gz", 505500, { 250, 500, 750, 1000 },
	  { 24.68, 49.36, 74.04, 98.71 } },
	{ "OLTP.lis.gz", 914145, { 250, 500, 750, 1000, 1250, 1500, 1750, 2000 },
	  { 38.47, 46.43, 50.67, 53.62, 55.84, 57.62, 59.13, 60.40 } },
	{ "scarab-recs.trace.xz", 1245184, { 100000 }, { 79.25 } },
	{ "P3.lis.gz", 3912296, { 0 }, { 0 } },
	{ "multi1.trace.gz", 15858, { 0 }, { 0 } },
	{ "multi2.trace.gz", 26311, { 0 }, { 0 } },
	{ "multi3.trace.gz", 30241, { 0 }, { 0 } },
	{ "sprite.trace.gz", 133996, { 0 }, { 0 } },
	{ "2_pools.trace.gz", 100000, { 0 }, { 0 } },
};

START_TEST(test_shared_traces)
{
	const char *traces = shared_traces();
	char path[4200], err[512];
	uint64_t *keys;
	size_t n;

	if (!traces)
		return;
	snprintf(path, sizeof(path), "%s/%s", traces, published[_i].file);
	ck_assert_msg(trace_load(path, TRACE_AUTO, &keys, &n, err, sizeof(err)) == 0,
	              "%s", err);
	ck_assert_uint_eq(n, published[_i].requests);
	for (int j = 0; j < 8 && published[_i].sizes[j]; j++) {
		double pct = 100.0 * (double)trace_opt_hits(keys, n,
		                                   published[_i].sizes[j]) / (double)n;

		/* To the hundredth: the published figure is rounded. */
		ck_assert_msg(pct >= published[_i].opt[j] - 0.005 &&
		              pct < published[_i].opt[j] + 0.005,
		              "%s OPT at %zu: %.4f %%, published %.2f",
		              published[_i].file, published[_i].sizes[j], pct,
		              published[_i].opt[j]);
	}
	free(keys);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("trace");
	TCase *fmt = tcase_create("formats");
	TCase *opt = tcase_create("opt");
	TCase *shared = tcase_create("shared traces");

	tcase_add_checked_fixture(fmt, setup, teardown);
	tcase_add_loop_test(fmt, test_text, PLAIN, XZ + 1);
	tcase_add_loop_test(fmt, test_lirs, PLAIN, XZ + 1);
	tcase_add_loop_test(fmt, test_arc, PLAIN, XZ + 1);
	tcase_add_loop_test(fmt, test_binary, PLAIN, XZ + 1);
	tcase_add_loop_test(fmt, test_binary_width, PLAIN, XZ + 1);
	tcase_add_test(fmt, test_empty);
	tcase_add_test(fmt, test_bad_files);
	tcase_add_test(fmt, test_format_names);
	suite_add_tcase(s, fmt);
	tcase_add_test(opt, test_opt_by_hand);
	tcase_add_test(opt, test_opt_reference);
	suite_add_tcase(s, opt);
	tcase_add_loop_test(shared, test_shared_traces, 0,
	                    sizeof(published) / sizeof(published[0]));
	tcase_set_timeout(shared, 600);
	suite_add_tcase(s, shared);

	return test_run(srunner_create(s));
}
