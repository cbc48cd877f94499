/*
 * bench_insert - filling a filter to 95 % load one key at a time
 * (admit_cuckoo_insert) against 16 keys at a time
 * (admit_cuckoo_insert_many), on the same keys, with the time per insert in
 * each load band, so the cost of the cuckoo searches near full shows apart
 * from the cost of the misses.
 *
 * Single thread; CPU time of the thread; median of --reps fills, the two
 * ways alternating so a slow moment of a shared machine hits both alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <admit/admit.h>

#include "benchutil.h"

#define GROUP 16
#define MAX_REPS 25
#define NBANDS 4

static const unsigned band_end[NBANDS] = { 50, 75, 90, 95 };

/* Fills a fresh filter for n items; ns[b] = ns per insert in band b,
 * *mops = inserts per second to 95 %, in millions. */
static void
fill(uint64_t n, bool many, double ns[NBANDS], double *mops)
{
	struct admit_cuckoo *f;
	uint64_t keys[GROUP], i = 0, slots;
	const void *kp[GROUP];
	size_t lens[GROUP];
	enum admit_status out[GROUP];
	double t0, prev;

	if (admit_cuckoo_new(&(struct admit_cuckoo_config){ .capacity = n,
	                     .fingerprint_bits = 16, .seed = 42 }, &f) != ADMIT_OK) {
		fprintf(stderr, "bench_insert: cannot make a filter of %llu items\n",
		        (unsigned long long)n);
		exit(1);
	}
	slots = admit_cuckoo_slots(f);
	for (int j = 0; j < GROUP; j++) {
		kp[j] = &keys[j];
		lens[j] = sizeof(keys[j]);
	}
	t0 = prev = bench_clock(CLOCK_THREAD_CPUTIME_ID);
	for (int b = 0; b < NBANDS; b++) {
		uint64_t end = slots * band_end[b] / 100, start = i;
		double t;

		while (i < end) {
			size_t k = end - i < GROUP ? (size_t)(end - i) : GROUP;
			enum admit_status st = ADMIT_OK;

			if (many) {
				for (size_t j = 0; j < k; j++)
					keys[j] = bench_key(i + j);
				st = admit_cuckoo_insert_many(f, k, kp, lens, out);
			} else {
				for (size_t j = 0; j < k && st == ADMIT_OK; j++) {
					uint64_t key = bench_key(i + j);

					st = admit_cuckoo_insert(f, &key, sizeof(key));
				}
			}
			if (st != ADMIT_OK) {
				fprintf(stderr, "bench_insert: insert failed near %llu\n",
				        (unsigned long long)i);
				exit(1);
			}
			i += k;
		}
		t = bench_clock(CLOCK_THREAD_CPUTIME_ID);
		ns[b] = (t - prev) / (double)(i - start) * 1e9;
		prev = t;
	}
	*mops = (double)i / (prev - t0) / 1e6;
	admit_cuckoo_free(f);
}

int
main(int argc, char **argv)
{
	uint64_t n = 16u << 20;
	int reps = 5;
	double ns[2][NBANDS][MAX_REPS], mops[2][MAX_REPS];

	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && !strcmp(argv[i], "--n"))
			n = strtoull(argv[++i], NULL, 0);
		else if (i + 1 < argc && !strcmp(argv[i], "--reps"))
			reps = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: bench_insert [--n ITEMS] [--reps R]\n");
			return 2;
		}
	}
	if (n == 0 || reps < 1 || reps > MAX_REPS) {
		fprintf(stderr, "bench_insert: need --n > 0 and 1 <= --reps <= %d\n",
		        MAX_REPS);
		return 2;
	}
	for (int r = 0; r < reps; r++) {
		for (int m = 0; m < 2; m++) {
			double band[NBANDS];

			fill(n, m, band, &mops[m][r]);
			for (int b = 0; b < NBANDS; b++)
				ns[m][b][r] = band[b];
		}
	}
	printf("n = %llu items, 16-bit fingerprints, filled to 95 %% load, "
	       "1 thread, CPU time, median of %d\n\n",
	       (unsigned long long)n, reps);
	printf("%-12s %8s %8s %8s %8s %12s\n", "ns/insert", "0-50%", "50-75%",
	       "75-90%", "90-95%", "Mops to 95%");
	for (int m = 0; m < 2; m++) {
		printf("%-12s", m ? "insert_many" : "insert");
		for (int b = 0; b < NBANDS; b++)
			printf(" %8.0f", bench_median(ns[m][b], reps));
		printf(" %12.2f\n", bench_median(mops[m], reps));
	}
	printf("\ninsert_many / insert: %.2f\n",
	       bench_median(mops[1], reps) / bench_median(mops[0], reps));
	return 0;
}
