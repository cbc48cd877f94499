/*
 * bench_admission - admit_cbf and admit_tinylfu throughput, single thread and
 * two threads; the median of R repetitions (default 5).
 *
 * Single-thread rates are per second of CPU time.  Baselines, in the same run: a loop reading one random cache line per
 * operation (cbf: a key's one block), or three (tinylfu: the doorkeeper's
 * block and the frequency store's two buckets), from a table as large as the
 * structure's.  "ratio" is admit's throughput divided by its baseline's.
 *
 * Streams of 4 M keys: "skewed" (10 x capacity keys, a few hot: key =
 * a * b / K for a, b uniform in [0, K)), and "shifting", a new working set
 * every sample of W records with each key seen 3 times in it, which keeps
 * the frequency store full (every new key replaces a low count).
 *
 * "lru 95/5": an admit_lru of CAPACITY entries (adaptive, 16 shards, 32-byte
 * values, filled with the hottest keys first) under 95 % admit_lru_get and 5 % admit_lru_set of
 * Zipf(0.99) keys over 10 x CAPACITY, on 1 and 2 threads (2 M operations
 * each, the stream drawn before timing).  Wall: operations over the span
 * from start to the last thread's end.  CPU: over the threads' CPU time,
 * scaled to min(threads, CPUs) -- what an idle machine would give, for a
 * machine shared with other work; a thread asleep on a mutex uses no CPU,
 * so under contention the CPU figure flatters a locked cache.  It uses only
 * the public API, so the same file builds against an older libadmit for a
 * before/after comparison (bench/README.md).  Its baseline, run alternately
 * on the same streams: bench/maplru.c, one mutex around a hash map with an
 * LRU list, the cache a user writes by hand ("map+LRU"); each admit_lru row
 * prints its ratio to the baseline's row and the nanoseconds per operation.
 *
 *   bench_admission [CAPACITY [REPS]]   (CAPACITY: of the cache; default 100000)
 */
#include <pthread.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <admit/admit.h>

#include "benchutil.h"
#include "maplru.h"
#include "zipf.h"

#define OPS (4u << 20)
#define MAX_REPS 100

/* Single-thread figures use the process's CPU time, so that other programs
 * on a busy machine do not count against either side of a ratio; the
 * two-thread figure needs the wall clock. */
static double
now(void)
{
	return bench_clock(CLOCK_PROCESS_CPUTIME_ID);
}

static double
wall(void)
{
	return bench_clock(CLOCK_MONOTONIC);
}

/* Mops/s of `lines` independent random 64-byte reads per operation. */
static double
line_reads(size_t bytes, unsigned lines)
{
	size_t nlines = bytes / 64 ? bytes / 64 : 1;
	uint64_t *t = calloc(nlines, 64), sum = 0;
	double t0;

	if (!t)
		exit(1);
	for (size_t i = 0; i < nlines * 8; i++)
		t[i] = i;
	t0 = now();
	for (uint64_t i = 0; i < OPS; i++) {
		uint64_t h = bench_key(i);

		for (unsigned l = 0; l < lines; l++)
			sum += t[(size_t)((h >> (l * 20)) % nlines) * 8];
	}
	t0 = now() - t0;
	free(t);
	if (sum == 42)
		puts("");
	return OPS / t0 / 1e6;
}

enum { CBF_ADD, CBF_EST, CBF_BASE, REC_SKEW, REC_SHIFT, EST, ADMIT, TL_BASE,
       REC_1T, REC_2T, LRU_1T, LRU_2T, LRU_1T_CPU, LRU_2T_CPU,
       MAP_1T, MAP_2T, MAP_1T_CPU, MAP_2T_CPU, NOPS };
static const char *names[NOPS] = {
	"cbf add", "cbf estimate", "  baseline: 1 line read",
	"tinylfu record, skewed", "tinylfu record, shifting", "tinylfu estimate",
	"tinylfu admit", "  baseline: 3 line reads",
	"record skewed, 1 thread, wall", "record skewed, 2 threads, wall",
	"lru 95/5, 1 thread, wall", "lru 95/5, 2 threads, wall",
	"lru 95/5, 1 thread, cpu", "lru 95/5, 2 threads, cpu",
	"  baseline: map+LRU, 1 thread, wall", "  baseline: map+LRU, 2 threads, wall",
	"  baseline: map+LRU, 1 thread, cpu", "  baseline: map+LRU, 2 threads, cpu",
};

struct job {
	struct admit_tinylfu *t;
	const uint64_t *keys;
	size_t n;
};

static void *
record_all(void *arg)
{
	struct job *j = arg;

	for (size_t i = 0; i < j->n; i++)
		admit_tinylfu_record(j->t, &j->keys[i], 8);
	return NULL;
}

/* ---- lru 95/5 ---------------------------------------------------------------- */

#define LRU_OPS (2u << 20)          /* per thread */
#define LRU_SET_FLAG (1ull << 63)   /* in a stream: this one is a set */

/* One thread's; a line of its own, or the two threads' hit counts share
 * one and every operation moves it between the cores. */
struct lru_job {
	alignas(64) struct admit_lru *c;
	struct maplru *m;                   /* the baseline, when c is NULL */
	const uint64_t *ops;
	double cpu;
	size_t hits;
};

static void *
lru_run(void *arg)
{
	struct lru_job *j = arg;
	unsigned char buf[64] = { 0 };
	double t0 = bench_clock(CLOCK_THREAD_CPUTIME_ID);
	size_t len;

	for (size_t i = 0; i < LRU_OPS; i++) {
		uint64_t k = j->ops[i] & ~LRU_SET_FLAG;

		if (!j->c) {
			if (j->ops[i] & LRU_SET_FLAG)
				maplru_set(j->m, k, buf);
			else
				j->hits += maplru_get(j->m, k, buf);
		} else if (j->ops[i] & LRU_SET_FLAG)
			admit_lru_set(j->c, &k, sizeof(k), buf, 32);
		else
			j->hits += admit_lru_get(j->c, &k, sizeof(k), buf, sizeof(buf),
			                         &len) == ADMIT_OK;
	}
	j->cpu = bench_clock(CLOCK_THREAD_CPUTIME_ID) - t0;
	return NULL;
}

/* Mops/s of nt threads on a fresh, filled cache (admit_lru, or the
 * baseline when baseline is set): wall into *wall_rate, CPU time into
 * *cpu_rate. */
static void
lru_bench(uint64_t cap, uint64_t *const streams[2], unsigned nt, uint64_t seed,
          int baseline, double *wall_rate, double *cpu_rate)
{
	struct admit_lru_config cfg = { .capacity = cap, .seed = seed };
	struct admit_lru *c = NULL;
	struct maplru *m = NULL;
	unsigned char val[32] = { 0 };
	struct lru_job jobs[2];
	pthread_t th[2];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	double t0, cpu = 0;

	if (baseline ? !(m = maplru_new(cap)) : admit_lru_new(&cfg, &c) != ADMIT_OK)
		exit(1);
	for (uint64_t k = 0; k < cap; k++) {  /* the hottest keys */
		if (m)
			maplru_set(m, k, val);
		else
			admit_lru_set(c, &k, sizeof(k), "", 0);
	}
	t0 = wall();
	for (unsigned i = 0; i < nt; i++) {
		jobs[i] = (struct lru_job){ .c = c, .m = m, .ops = streams[i] };
		pthread_create(&th[i], NULL, lru_run, &jobs[i]);
	}
	for (unsigned i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		cpu += jobs[i].cpu;
	}
	*wall_rate = (double)LRU_OPS * nt / (wall() - t0) / 1e6;
	*cpu_rate = (double)LRU_OPS * nt * (nt < ncpu ? nt : (double)ncpu) / cpu / 1e6;
	admit_lru_free(c);
	maplru_free(m);
}

/* Zipf(0.99) keys over 10 x cap, one in 20 flagged as a set. */
static uint64_t *
lru_stream(uint64_t cap, uint64_t salt)
{
	uint64_t n = 10 * cap, *ops = malloc(LRU_OPS * sizeof(*ops));
	double *cdf = zipf_table(n, 0.99);

	if (!ops || !cdf)
		exit(1);
	for (uint64_t i = 0; i < LRU_OPS; i++) {
		uint64_t r = bench_key(salt << 32 | i);

		ops[i] = zipf_rank(cdf, n, (double)(r >> 11) * 0x1p-53) |
		         (r % 20 == 0 ? LRU_SET_FLAG : 0);
	}
	free(cdf);
	return ops;
}

/* ", N.NN x map+LRU" for an admit_lru row, "" for the baseline's. */
static const char *
lru_vs_map(const double *med, int op)
{
	static char s[32];

	if (op >= MAP_1T)
		return "";
	snprintf(s, sizeof(s), ", %.2fx map+LRU", med[op] / med[op + MAP_1T - LRU_1T]);
	return s;
}

int
main(int argc, char **argv)
{
	uint64_t cap = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
	int reps = argc > 2 ? atoi(argv[2]) : 5;
	uint64_t *skew = malloc(OPS * sizeof(*skew));
	uint64_t *shift = malloc(OPS * sizeof(*shift));
	double r[NOPS][MAX_REPS], med[NOPS];
	uint64_t w = 10 * cap, k = 10 * cap, replaced = 0, *streams[2];
	size_t cbf_bytes = 0, tl_bytes = 0;

	if (cap < 10 || cap > (1u << 24) || reps < 1 || reps > MAX_REPS ||
	    !skew || !shift) {
		fprintf(stderr, "usage: bench_admission [CAPACITY (10..16M) [REPS]]\n");
		return 2;
	}
	for (uint64_t i = 0; i < OPS; i++) {
		uint64_t h = bench_key(i);

		skew[i] = (h % k) * ((h >> 32) % k) / k;
		shift[i] = (i / w) << 40 | (i % w) % (w / 3);
	}
	printf("cache capacity %llu (W = %llu), %u ops, median of %d runs\n",
	       (unsigned long long)cap, (unsigned long long)w, OPS, reps);
	streams[0] = lru_stream(cap, 1);
	streams[1] = lru_stream(cap, 2);

	for (int rep = 0; rep < reps; rep++) {
		struct admit_cbf *f;
		struct admit_tinylfu *t;
		struct admit_tinylfu_stats st;
		pthread_t th[2];
		struct job jobs[2];
		unsigned sum = 0;
		double t0;

		if (admit_cbf_new(w / 2, 0.01, 99 + (uint64_t)rep, &f) != ADMIT_OK)
			return 1;
		cbf_bytes = admit_cbf_memory(f);
		t0 = now();
		for (uint64_t i = 0; i < OPS; i++)
			admit_cbf_add(f, &skew[i], 8);
		r[CBF_ADD][rep] = OPS / (now() - t0) / 1e6;
		t0 = now();
		for (uint64_t i = 0; i < OPS; i++)
			sum += admit_cbf_estimate(f, &shift[i], 8);
		r[CBF_EST][rep] = OPS / (now() - t0) / 1e6;
		admit_cbf_free(f);
		r[CBF_BASE][rep] = line_reads(cbf_bytes, 1);

		if (admit_tinylfu_new(cap, 99 + (uint64_t)rep, &t) != ADMIT_OK)
			return 1;
		tl_bytes = admit_tinylfu_memory(t);
		t0 = now();
		for (uint64_t i = 0; i < OPS; i++)
			admit_tinylfu_record(t, &skew[i], 8);
		r[REC_SKEW][rep] = OPS / (now() - t0) / 1e6;
		t0 = now();
		for (uint64_t i = 0; i < OPS; i++)
			sum += admit_tinylfu_estimate(t, &shift[i], 8);
		r[EST][rep] = OPS / (now() - t0) / 1e6;
		t0 = now();
		for (uint64_t i = 0; i + 1 < OPS; i += 2)
			sum += admit_tinylfu_admit(t, &skew[i], 8, &skew[i + 1], 8);
		r[ADMIT][rep] = OPS / 2 / (now() - t0) / 1e6;
		admit_tinylfu_free(t);

		if (admit_tinylfu_new(cap, 99 + (uint64_t)rep, &t) != ADMIT_OK)
			return 1;
		t0 = now();
		for (uint64_t i = 0; i < OPS; i++)
			admit_tinylfu_record(t, &shift[i], 8);
		r[REC_SHIFT][rep] = OPS / (now() - t0) / 1e6;
		admit_tinylfu_stats(t, &st);
		replaced = st.replaced;
		admit_tinylfu_free(t);
		r[TL_BASE][rep] = line_reads(tl_bytes, 3);

		if (admit_tinylfu_new(cap, 99 + (uint64_t)rep, &t) != ADMIT_OK)
			return 1;
		t0 = wall();
		record_all(&(struct job){ t, skew, OPS / 2 });
		r[REC_1T][rep] = OPS / 2 / (wall() - t0) / 1e6;
		admit_tinylfu_free(t);

		if (admit_tinylfu_new(cap, 99 + (uint64_t)rep, &t) != ADMIT_OK)
			return 1;
		t0 = wall();
		for (int i = 0; i < 2; i++) {
			jobs[i] = (struct job){ t, skew + i * (OPS / 2), OPS / 2 };
			pthread_create(&th[i], NULL, record_all, &jobs[i]);
		}
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		r[REC_2T][rep] = OPS / (wall() - t0) / 1e6;
		admit_tinylfu_free(t);

		/* Alternated with admit_lru in every repetition, so both meet
		 * the same machine. */
		for (unsigned nt = 1; nt <= 2; nt++) {
			unsigned o = nt - 1;

			lru_bench(cap, streams, nt, 99 + (uint64_t)rep, 0,
			          &r[LRU_1T + o][rep], &r[LRU_1T_CPU + o][rep]);
			lru_bench(cap, streams, nt, 99 + (uint64_t)rep, 1,
			          &r[MAP_1T + o][rep], &r[MAP_1T_CPU + o][rep]);
		}
		if (sum == 42)
			puts("");
	}
	for (int op = 0; op < NOPS; op++)
		med[op] = bench_median(r[op], reps);
	printf("%-36s %9s %9s\n", "op", "Mops/s", "ratio");
	for (int op = 0; op < NOPS; op++) {
		double base = op <= CBF_BASE ? med[CBF_BASE] : med[TL_BASE];

		if (op == REC_1T)
			printf("%-36s %9.2f\n", names[op], med[op]);
		else if (op == REC_2T)
			printf("%-36s %9.2f %8.2fx  (vs 1 thread)\n", names[op], med[op],
			       med[op] / med[op - 1]);
		else if (op >= LRU_1T)  /* rows in pairs: 1 thread, 2 threads */
			printf("%-36s %9.2f %6.0f ns/op %6.2fx 1 thread%s\n",
			       names[op], med[op], 1e3 / med[op],
			       med[op] / med[op - op % 2], lru_vs_map(med, op));
		else
			printf("%-36s %9.2f %8.2f\n", names[op], med[op], med[op] / base);
	}
	printf("cbf table %.1f MiB; tinylfu tables %.1f MiB; shifting stream: "
	       "%llu frequency entries replaced\n", cbf_bytes / 1048576.0,
	       tl_bytes / 1048576.0, (unsigned long long)replaced);
	free(skew);
	free(shift);
	free(streams[0]);
	free(streams[1]);
	return 0;
}
