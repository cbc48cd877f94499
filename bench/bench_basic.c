/*
 * bench_basic - single-thread insert, positive and negative lookup, and
 * contains_many on a filter of N items (default 16 M), for 8- and 16-bit
 * fingerprints; the median of R repetitions (default 5).
 *
 * Baseline, in the same run: a plain loop reading two random cache lines of
 * a table of the same size (the memory cost of any lookup that touches two
 * buckets); "ratio" is admit's throughput divided by it.
 *
 *   bench_basic [N [R]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <admit/admit.h>

static uint64_t
key_of(uint64_t i)
{
	uint64_t z = i + 0x9e3779b97f4a7c15ull;

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

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Two dependent-free random line reads per operation, like a lookup. */
static double
two_lines(const uint64_t *t, size_t words, uint64_t n)
{
	uint64_t sum = 0;
	double t0 = now();

	for (uint64_t i = 0; i < n; i++) {
		uint64_t h = key_of(i);

		sum += t[(h & 0xffffffff) % words] + t[(h >> 32) % words];
	}
	t0 = now() - t0;
	if (sum == 42)
		puts("");
	return n / t0 / 1e6;
}

enum { INS, POS, NEG, MANY, RAW, NOPS };
static const char *names[] = { "insert", "lookup+", "lookup-", "contains_many-",
                               "two-line reads" };

int
main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 16u << 20;
	int reps = argc > 2 ? atoi(argv[2]) : 5;
	static const unsigned widths[] = { 8, 16 };

	if (n == 0 || reps < 1 || reps > 100) {
		fprintf(stderr, "usage: bench_basic [N [REPS]]\n");
		return 2;
	}
	printf("n = %llu, median of %d runs, 1 thread\n",
	       (unsigned long long)n, reps);
	printf("%-5s %-16s %9s %9s   %s\n", "bits", "op", "Mops/s", "ratio",
	       "(ratio: / two random line reads of an equal table)");
	for (size_t w = 0; w < 2; w++) {
		double r[NOPS][100], fpr = 0, bpi = 0, med[NOPS];

		for (int rep = 0; rep < reps; rep++) {
			struct admit_cuckoo_config cfg = {
				.capacity = n, .fingerprint_bits = widths[w],
				.seed = 1234 + (uint64_t)rep,
			};
			struct admit_cuckoo *f;
			uint64_t hits = 0, k[16];
			const void *kp[16];
			size_t lens[16];
			bool out[16];
			size_t words;
			uint64_t *raw;
			double t0;

			if (admit_cuckoo_new(&cfg, &f) != ADMIT_OK)
				return 1;
			t0 = now();
			for (uint64_t i = 0; i < n; i++) {
				uint64_t key = key_of(i);

				if (admit_cuckoo_insert(f, &key, 8) != ADMIT_OK) {
					fprintf(stderr, "insert failed at %llu\n",
					        (unsigned long long)i);
					return 1;
				}
			}
			r[INS][rep] = n / (now() - t0) / 1e6;
			t0 = now();
			for (uint64_t i = 0; i < n; i++) {
				uint64_t key = key_of(i);
				hits += admit_cuckoo_contains(f, &key, 8);
			}
			r[POS][rep] = n / (now() - t0) / 1e6;
			if (hits != n) {
				fprintf(stderr, "false negatives!\n");
				return 1;
			}
			hits = 0;
			t0 = now();
			for (uint64_t i = 0; i < n; i++) {
				uint64_t key = key_of(i + (1ull << 40));
				hits += admit_cuckoo_contains(f, &key, 8);
			}
			r[NEG][rep] = n / (now() - t0) / 1e6;
			fpr = (double)hits / n;
			t0 = now();
			for (uint64_t i = 0; i < n; i += 16) {
				for (int j = 0; j < 16; j++) {
					k[j] = key_of(i + (uint64_t)j + (1ull << 40));
					kp[j] = &k[j];
					lens[j] = 8;
				}
				admit_cuckoo_contains_many(f, 16, kp, lens, out);
			}
			r[MANY][rep] = n / (now() - t0) / 1e6;
			bpi = 8.0 * admit_cuckoo_memory(f) / n;

			words = admit_cuckoo_memory(f) / 8;
			raw = aligned_alloc(2 << 20, (words * 8 + (2 << 20) - 1) & ~(size_t)((2 << 20) - 1));
			madvise(raw, words * 8, MADV_HUGEPAGE);
			memset(raw, 1, words * 8);
			r[RAW][rep] = two_lines(raw, words, n);
			free(raw);
			admit_cuckoo_free(f);
		}
		for (int op = 0; op < NOPS; op++)
			med[op] = median(r[op], reps);
		for (int op = 0; op < NOPS; op++)
			printf("%-5u %-16s %9.2f %9.2f\n", widths[w], names[op],
			       med[op], med[op] / med[RAW]);
		printf("%-5u bits/item %.2f at load %.1f%%, false-positive rate %.5f%% "
		       "(bound %.5f%%)\n\n", widths[w], bpi,
		       100.0 * widths[w] / bpi,
		       100 * fpr, 100.0 * 8 / (1 << widths[w]));
	}
	return 0;
}
