/*
 * user_filter - the cuckoo filter as a user's program meets it: built with
 * `cc -O2 -march=native user_filter.c $(pkg-config --cflags --libs admit)`
 * against the installed shared library (bench/bench_ref.sh builds and runs
 * it, alternated with bench/user_ref.cc, the same program on the CoNEXT
 * 2014 authors' filter).
 *
 *   user_filter N BITS [--batch-only] [--limit]
 *
 * BITS 8 or 16, or 13: the semi-sorted layout (semi_sorted = true).
 * N random 8-byte keys in an array (splitmix64 from a fixed seed, the same
 * keys as user_ref), a filter made for N items, every key inserted by one
 * call, then every key looked up once by one call (lookup+), N other keys
 * likewise (lookup-), every present key by admit_cuckoo_contains_many_u64()
 * in calls of 1024 (contains_u64), and a second filter filled by
 * admit_cuckoo_insert_many_u64() (insert_u64).  --batch-only: only the
 * batches (the second filter, then its lookups).  --limit: also the
 * machine's limit for the batch, two random 64-byte lines read per key
 * from a table of the filter's size, 16 keys prefetched ahead (limit),
 * and the same with one line a key (limit1).
 * Prints "op Mops/s" lines, and after lookup- bits_per_item (the table's
 * bytes x 8 / N) and fpr_percent (the absent keys found); exits 1 if a
 * present key is not found.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <admit/cuckoo.h>

#define CHUNK 1024
#define AHEAD 16

static uint64_t
splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t *
keys_from(uint64_t seed, size_t n)
{
	uint64_t *k = malloc(n * sizeof(*k));

	if (!k) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	for (size_t i = 0; i < n; i++)
		k[i] = splitmix64(&seed);
	return k;
}

static struct admit_cuckoo *
filter_for(size_t n, unsigned bits)
{
	struct admit_cuckoo_config cfg = { .capacity = n,
	                                   .fingerprint_bits = bits,
	                                   .semi_sorted = bits == 13 };
	struct admit_cuckoo *f;

	if (admit_cuckoo_new(&cfg, &f) != ADMIT_OK) {
		fprintf(stderr, "admit_cuckoo_new failed\n");
		exit(2);
	}
	return f;
}

static void
report(const char *op, size_t n, double t)
{
	printf("%s %.3f\n", op, n / t / 1e6);
}

/* A line of lines from 32 random bits, by a multiply (as the filter
 * ranges its bucket index), not a division. */
static inline size_t
line_of(uint64_t h, size_t lines)
{
	return (size_t)(((uint64_t)(uint32_t)h * lines) >> 32);
}

/* Random 64-byte lines a key (two, or one if !two) from t, a table of
 * lines lines, AHEAD keys prefetched ahead. */
static void
limit_pass(const uint64_t *keys, size_t n, const unsigned char *t,
           size_t lines, bool two)
{
	uint64_t sum = 0;
	double t0 = now();

	for (size_t i = 0; i < n; i++) {
		if (i + AHEAD < n) {
			uint64_t h = keys[i + AHEAD] * 0x9e3779b97f4a7c15ull;

			__builtin_prefetch(t + line_of(h >> 32, lines) * 64);
			if (two)
				__builtin_prefetch(t + line_of(h, lines) * 64);
		}
		uint64_t h = keys[i] * 0x9e3779b97f4a7c15ull;

		sum += t[line_of(h >> 32, lines) * 64];
		if (two)
			sum += t[line_of(h, lines) * 64];
	}
	report(two ? "limit" : "limit1", n, now() - t0);
	if (sum == 0)
		puts("");
}

/* The batch lookup's limits from a table of bytes bytes: two random lines
 * a key (limit), what a lookup that reads both buckets cannot beat, and
 * one (limit1). */
static void
limit(const uint64_t *keys, size_t n, size_t bytes)
{
	size_t lines = bytes / 64 + 1, len = lines * 64;
	unsigned char *t = mmap(NULL, len, PROT_READ | PROT_WRITE,
	                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (t == MAP_FAILED)
		exit(2);
	madvise(t, len, MADV_HUGEPAGE);
	memset(t, 1, len);
	limit_pass(keys, n, t, lines, true);
	limit_pass(keys, n, t, lines, false);
	munmap(t, len);
}

int
main(int argc, char **argv)
{
	size_t n, hits = 0;
	unsigned bits;
	bool batch_only = false, want_limit = false;
	uint64_t *keys, *absent;
	enum admit_status *st;
	bool *out;
	struct admit_cuckoo *f, *g;
	double t0;

	if (argc < 3) {
		fprintf(stderr, "usage: user_filter N BITS [--batch-only] [--limit]\n");
		return 2;
	}
	n = strtoull(argv[1], NULL, 0);
	bits = (unsigned)strtoul(argv[2], NULL, 0);
	for (int a = 3; a < argc; a++) {
		batch_only |= strcmp(argv[a], "--batch-only") == 0;
		want_limit |= strcmp(argv[a], "--limit") == 0;
	}
	keys = keys_from(1, n);
	st = malloc(CHUNK * sizeof(*st));
	out = malloc(CHUNK * sizeof(*out));
	if (!st || !out)
		return 2;

	if (!batch_only) {
		f = filter_for(n, bits);
		t0 = now();
		for (size_t i = 0; i < n; i++)
			hits += admit_cuckoo_insert(f, &keys[i], 8) == ADMIT_OK;
		report("insert", n, now() - t0);
		if (hits != n)
			fprintf(stderr, "%zu inserts failed\n", n - hits);
		hits = 0;
		t0 = now();
		for (size_t i = 0; i < n; i++)
			hits += admit_cuckoo_contains(f, &keys[i], 8);
		report("lookup+", n, now() - t0);
		if (hits != n)
			return 1;
		absent = keys_from(2, n);
		hits = 0;
		t0 = now();
		for (size_t i = 0; i < n; i++)
			hits += admit_cuckoo_contains(f, &absent[i], 8);
		report("lookup-", n, now() - t0);
		printf("bits_per_item %.3f\nfpr_percent %.4f\n",
		       8.0 * (double)admit_cuckoo_memory(f) / (double)n,
		       100.0 * (double)hits / (double)n);
		free(absent);
		admit_cuckoo_free(f);
	}

	g = filter_for(n, bits);
	t0 = now();
	for (size_t i = 0; i < n; i += CHUNK)
		(void)admit_cuckoo_insert_many_u64(g, n - i < CHUNK ? n - i : CHUNK,
		                                   keys + i, st);
	report("insert_u64", n, now() - t0);
	hits = 0;
	t0 = now();
	for (size_t i = 0; i < n; i += CHUNK) {
		size_t k = n - i < CHUNK ? n - i : CHUNK;

		admit_cuckoo_contains_many_u64(g, k, keys + i, out);
		for (size_t j = 0; j < k; j++)
			hits += out[j];
	}
	report("contains_u64", n, now() - t0);
	if (hits != n)
		return 1;
	if (want_limit)
		limit(keys, n, admit_cuckoo_memory(g));
	admit_cuckoo_free(g);
	free(keys);
	return 0;
}
