/*
 * bench_lookup - where the time of one admit_cuckoo_contains() call goes.
 *
 * An absent-key lookup in a filter larger than the caches reads two random
 * lines, so its speed is set by how many lookups' misses the CPU keeps in
 * flight at once, and that by how many instructions each lookup puts in the
 * reorder window.  Each variant below makes the same lookups of absent keys
 * in the same filter, doing a little more of the real work than the one
 * before (bench/README.md, "One lookup taken apart"):
 *
 *   lines     the two bucket loads alone, indices from the key bits (no hash)
 *   hash      + XXH3 and the real bucket indices, inline in the loop
 *   call      the same in a function the loop calls
 *   contains  admit_cuckoo_contains(): + the fingerprint test, the seqlock
 *             validation and the argument checks
 *   mutex     admit_cuckoo_contains() under an uncontended pthread mutex
 *
 * Single thread; Mops/s over the thread's CPU time, median of --reps runs.
 * It links the internal library, so it sees struct admit_cuckoo.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <admit/admit.h>

#include "benchutil.h"
#include "cuckoo_internal.h"

enum variant { V_LINES, V_HASH, V_CALL, V_CONTAINS, V_MUTEX, NVARIANTS };
static const char *variant_name[NVARIANTS] = { "lines", "hash", "call",
                                               "contains", "mutex" };

#define MAX_REPS 25

static inline uint64_t
rng_next(uint64_t *s)
{
	/* xorshift64*, as in bench_cuckoo */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* Unvalidated: this benchmark runs no writers.  16-bit layout only.
 * relaxed: nothing is written while it runs. */
static inline uint64_t
read_pair(const struct admit_cuckoo *f, const void *key, size_t len)
{
	struct cuckoo_pos p;

	cuckoo_locate(f, key, len, &p);
	return atomic_load_explicit(&f->t64[p.i1], memory_order_relaxed) ^
	       atomic_load_explicit(&f->t64[p.i2], memory_order_relaxed);
}

static __attribute__((noinline)) uint64_t
read_pair_call(const struct admit_cuckoo *f, const void *key, size_t len)
{
	return read_pair(f, key, len);
}

static double
run(const struct admit_cuckoo *f, pthread_mutex_t *mu, enum variant v,
    uint64_t ops, uint64_t seed, uint64_t *sink)
{
	uint64_t rng = seed | 1, acc = 0;
	double t0 = bench_clock(CLOCK_THREAD_CPUTIME_ID);

	for (uint64_t i = 0; i < ops; i++) {
		/* Absent keys: bench_cuckoo's NEG_KEY (bit 63 set). */
		uint64_t key = bench_key(rng_next(&rng) | 1ull << 63);

		switch (v) {
		case V_LINES:
			/* relaxed: as in read_pair(). */
			acc += atomic_load_explicit(
			           &f->t64[admit_fastrange32((uint32_t)key, f->m)],
			           memory_order_relaxed) ^
			       atomic_load_explicit(
			           &f->t64[admit_fastrange32((uint32_t)(key >> 32), f->m)],
			           memory_order_relaxed);
			break;
		case V_HASH:
			acc += read_pair(f, &key, sizeof(key));
			break;
		case V_CALL:
			acc += read_pair_call(f, &key, sizeof(key));
			break;
		case V_CONTAINS:
			acc += admit_cuckoo_contains(f, &key, sizeof(key));
			break;
		case V_MUTEX:
			pthread_mutex_lock(mu);
			acc += admit_cuckoo_contains(f, &key, sizeof(key));
			pthread_mutex_unlock(mu);
			break;
		default:
			abort();
		}
	}
	*sink += acc;
	return ops / (bench_clock(CLOCK_THREAD_CPUTIME_ID) - t0) / 1e6;
}

static void
usage(void)
{
	fprintf(stderr, "usage: bench_lookup [--n ITEMS] [--ops N] [--reps R]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	uint64_t n = 16u << 20, ops = 10000000, sink = 0;
	int reps = 5;
	struct admit_cuckoo *f;
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	double res[NVARIANTS][MAX_REPS];

	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && !strcmp(argv[i], "--n"))
			n = strtoull(argv[++i], NULL, 0);
		else if (i + 1 < argc && !strcmp(argv[i], "--ops"))
			ops = strtoull(argv[++i], NULL, 0);
		else if (i + 1 < argc && !strcmp(argv[i], "--reps"))
			reps = atoi(argv[++i]);
		else
			usage();
	}
	if (n == 0 || ops == 0 || reps < 1 || reps > MAX_REPS)
		usage();
	if (admit_cuckoo_new(&(struct admit_cuckoo_config){ .capacity = n,
	                     .fingerprint_bits = 16, .seed = 42 }, &f) != ADMIT_OK) {
		fprintf(stderr, "bench_lookup: cannot make a filter of %llu items\n",
		        (unsigned long long)n);
		return 1;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t key = bench_key(i);

		if (admit_cuckoo_insert(f, &key, sizeof(key)) != ADMIT_OK) {
			fprintf(stderr, "bench_lookup: insert failed at %llu\n",
			        (unsigned long long)i);
			return 1;
		}
	}
	/* Interleaved, so a slow moment of a shared machine hits every
	 * variant alike. */
	for (int r = 0; r < reps; r++)
		for (int v = 0; v < NVARIANTS; v++)
			res[v][r] = run(f, &mu, (enum variant)v, ops,
			                (uint64_t)r << 32 | (uint64_t)v, &sink);
	printf("n = %llu items at 95 %% load, 16-bit fingerprints, absent keys, "
	       "1 thread, CPU time, median of %d x %llu lookups\n\n",
	       (unsigned long long)n, reps, (unsigned long long)ops);
	printf("%-10s %8s %10s\n", "variant", "Mops/s", "/contains");
	for (int v = 0; v < NVARIANTS; v++)
		printf("%-10s %8.2f %10.2f\n", variant_name[v],
		       bench_median(res[v], reps),
		       bench_median(res[v], reps) / bench_median(res[V_CONTAINS], reps));
	if (sink == 42)
		putchar(' '); /* keep the loads */
	admit_cuckoo_free(f);
	return 0;
}
