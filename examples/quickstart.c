/*
 * quickstart - a cuckoo filter shared by several threads.
 *
 * Each thread fills its share of a filter with distinct keys, then all
 * threads look up keys that are present and keys that are not.  It prints
 * the load reached, the false-positive rate measured against its bound, the
 * memory per item, and the throughput of each phase.
 *
 *   quickstart [ITEMS [THREADS]]      defaults: 4000000 items, 2 threads
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <admit/admit.h>

enum phase { INSERT, POSITIVE, NEGATIVE, BATCH };

struct job {
	struct admit_cuckoo *f;
	enum phase phase;
	uint64_t lo, hi;     /* key numbers of this thread */
	uint64_t hits;
	enum admit_status err;
};

/* A bijective mix, so key numbers map to distinct, random-looking keys. */
static uint64_t
key_of(uint64_t i)
{
	uint64_t z = i + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void *
run(void *arg)
{
	struct job *j = arg;

	for (uint64_t i = j->lo; i < j->hi;) {
		uint64_t k[16];
		const void *p[16];
		size_t len[16];
		bool out[16];
		size_t n = 0;

		for (; n < 16 && i < j->hi; n++, i++) {
			k[n] = key_of(j->phase == NEGATIVE || j->phase == BATCH ?
			              i + (1ull << 40) : i);
			p[n] = &k[n];
			len[n] = sizeof(k[n]);
		}
		if (j->phase == BATCH) {
			admit_cuckoo_contains_many(j->f, n, p, len, out);
			for (size_t m = 0; m < n; m++)
				j->hits += out[m];
			continue;
		}
		for (size_t m = 0; m < n; m++) {
			if (j->phase == INSERT) {
				enum admit_status st = admit_cuckoo_insert(j->f, p[m], len[m]);

				if (st != ADMIT_OK && j->err == ADMIT_OK)
					j->err = st;
			} else {
				j->hits += admit_cuckoo_contains(j->f, p[m], len[m]);
			}
		}
	}
	return NULL;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Runs one phase on all threads; returns seconds, sums hits into *hits. */
static double
phase(struct admit_cuckoo *f, enum phase ph, uint64_t n, int threads,
      uint64_t *hits, enum admit_status *err)
{
	pthread_t th[64];
	struct job jobs[64];
	double t0 = now();

	for (int t = 0; t < threads; t++) {
		jobs[t] = (struct job){ f, ph, n * t / threads, n * (t + 1) / threads,
		                        0, ADMIT_OK };
		pthread_create(&th[t], NULL, run, &jobs[t]);
	}
	*hits = 0;
	for (int t = 0; t < threads; t++) {
		pthread_join(th[t], NULL);
		*hits += jobs[t].hits;
		if (jobs[t].err != ADMIT_OK)
			*err = jobs[t].err;
	}
	return now() - t0;
}

int
main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 4000000;
	int threads = argc > 2 ? atoi(argv[2]) : 2;
	struct admit_cuckoo_config cfg = { .capacity = n };
	struct admit_cuckoo *f;
	enum admit_status st = ADMIT_OK;
	uint64_t hits;
	double s;

	if (n == 0 || threads < 1 || threads > 64) {
		fprintf(stderr, "usage: quickstart [ITEMS [THREADS (1-64)]]\n");
		return 2;
	}
	st = admit_cuckoo_new(&cfg, &f);
	if (st != ADMIT_OK) {
		fprintf(stderr, "admit_cuckoo_new: %s\n", admit_strerror(st));
		return 1;
	}
	printf("admit quickstart: %llu keys, %d threads, 16-bit fingerprints\n\n",
	       (unsigned long long)n, threads);
	printf("%-26s %10s %12s\n", "phase", "Mops/s", "result");

	s = phase(f, INSERT, n, threads, &hits, &st);
	if (st != ADMIT_OK) {
		fprintf(stderr, "insert: %s\n", admit_strerror(st));
		return 1;
	}
	printf("%-26s %10.1f %11.2f%% load\n", "insert", n / s / 1e6,
	       100.0 * admit_cuckoo_size(f) / admit_cuckoo_slots(f));

	s = phase(f, POSITIVE, n, threads, &hits, &st);
	printf("%-26s %10.1f %8llu found (all %s)\n", "lookup, present keys",
	       n / s / 1e6, (unsigned long long)hits, hits == n ? "ok" : "NOT OK");
	if (hits != n)
		return 1;

	s = phase(f, NEGATIVE, n, threads, &hits, &st);
	printf("%-26s %10.1f %11.4f%% false positives (bound %.4f%%)\n",
	       "lookup, absent keys", n / s / 1e6, 100.0 * hits / n,
	       100.0 * 8 / 65536);

	s = phase(f, BATCH, n, threads, &hits, &st);
	printf("%-26s %10.1f\n", "contains_many, absent keys", n / s / 1e6);

	printf("\nmemory: %.1f MiB, %.2f bits per item\n",
	       admit_cuckoo_memory(f) / 1048576.0,
	       8.0 * admit_cuckoo_memory(f) / admit_cuckoo_size(f));
	admit_cuckoo_free(f);
	return 0;
}
