/*
 * bench_cache - the cache workload a user holds admit_lru against Caffeine
 * with: Zipf(0.99) keys over KEYS distinct 8-byte keys, a cache of CAPACITY
 * entries, 32-byte values, on 1 or 2 threads, each thread replaying its own
 * stream of OPS operations.  bench/bench_caffeine.sh runs this program and
 * bench/CaffeineBench.java alternately on the same stream file and prints
 * the ratios; this file is the C half.
 *
 *   bench_cache --write FILE [--threads 2] [--ops N] [--keys N] [--seed S]
 *       writes the streams: a header (magic "ADMITOPS", threads, ops per
 *       thread as little-endian uint64) and then each thread's operations,
 *       one little-endian uint64 each: the key, with bit 63 set for a set
 *       (one in 20).  Keys are splitmix64 of a Zipf rank, so hot keys are
 *       spread over the key space as real ids are.
 *   bench_cache --stream FILE --cache admit|admit-batch|admit-peek|tight|maplru
 *       [--threads N]
 *       [--mix 95|100] [--capacity N] [--passes P]
 *       fills the cache (one pass over each thread's stream in which every
 *       miss is followed by a set), runs one untimed pass of the mix, then P
 *       timed passes, and prints
 *           RESULT cache=admit mix=95 threads=1 mops=4.170 hit=0.7712 cpu_ns=231.5
 *       with the median pass's operations per second (wall clock, from the
 *       first thread's start to the last thread's end), its hit ratio, and
 *       the median pass's CPU time per operation (the process's, every
 *       thread of it: the library's helper threads included).
 *
 * The mix: with 95, an operation flagged as a set is a set and every other
 * a get (a miss is not followed by a set); with 100, every operation is a
 * get.  Keys are held in an array and passed one call each, as a server
 * that has parsed a request holds them; admit-batch is admit_lru given each
 * run of up to 16 gets between two sets in one admit_lru_get_many_u64
 * call, as a server holds a multi-key request; admit-peek is admit_lru
 * filled as admit is, then timed through admit_lru_peek (the same lookup
 * and copy, without the access's record and the adaptation's sample: what
 * a get costs beyond its lookup).  admit_lru runs with its defaults
 * (capacity only), through the public API; tight is the locked LRU cache a
 * careful user writes for these sizes (bench/tightlru.c: an open-addressed
 * map and an LRU list in one array, no allocation per entry); maplru is a
 * mutex around a chained hash map with an LRU list (bench/maplru.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <admit/admit.h>

#include "benchutil.h"
#include "maplru.h"
#include "tightlru.h"
#include "zipf.h"

#define SET_FLAG (1ull << 63)
#define MAX_THREADS 2
#define MAX_PASSES 64

static const char magic[8] = "ADMITOPS";

struct job {
	alignas(64) struct admit_lru *c;
	struct maplru *m;
	struct tightlru *t;
	const uint64_t *ops;
	uint64_t n;
	bool batch;             /* admit-batch: runs of gets in one call */
	bool peek;              /* admit-peek: the timed passes' gets peek */
	int mix;                /* 95 or 100; 0 for the filling pass */
	pthread_barrier_t *start;
	uint64_t hits, gets;
	double t0, t1;          /* the thread's first and last instants */
};

static void
die(const char *what)
{
	fprintf(stderr, "bench_cache: %s\n", what);
	exit(2);
}

static int
cache_get(struct job *j, uint64_t k, unsigned char *buf)
{
	size_t len;

	if (j->t)
		return tightlru_get(j->t, k, buf);
	if (j->m)
		return maplru_get(j->m, k, buf);
	if (j->peek && j->mix)  /* the filling pass reads as admit's does */
		return admit_lru_peek(j->c, &k, sizeof(k), buf, 64, &len) == ADMIT_OK;
	return admit_lru_get(j->c, &k, sizeof(k), buf, 64, &len) == ADMIT_OK;
}

static void
cache_set(struct job *j, uint64_t k, const unsigned char *val)
{
	if (j->t)
		tightlru_set(j->t, k, val);
	else if (j->m)
		maplru_set(j->m, k, val);
	else
		admit_lru_set(j->c, &k, sizeof(k), val, 32);
}

/* run()'s timed passes for admit-batch: each run of up to BATCH gets
 * between two sets in one admit_lru_get_many_u64 call, the keys taken
 * from the stream into an array as a server that parsed a multi-key
 * request holds them. */
#define BATCH 16

static void *
run_batched(struct job *j, const unsigned char *val)
{
	uint64_t keys[BATCH];
	unsigned char vals[BATCH][32];
	size_t vlens[BATCH];
	enum admit_status st[BATCH];

	for (uint64_t i = 0; i < j->n;) {
		unsigned m = 0;

		while (m < BATCH && i < j->n) {
			uint64_t op = j->ops[i];

			if (j->mix == 95 && (op & SET_FLAG))
				break;
			keys[m++] = op & ~SET_FLAG;
			i++;
		}
		if (m) {
			admit_lru_get_many_u64(j->c, m, keys, vals, sizeof(vals[0]),
			                       vlens, st);
			j->gets += m;
			for (unsigned k = 0; k < m; k++)
				j->hits += st[k] == ADMIT_OK;
		} else {
			cache_set(j, j->ops[i] & ~SET_FLAG, val);
			i++;
		}
	}
	j->t1 = bench_clock(CLOCK_MONOTONIC);
	return NULL;
}

static void *
run(void *arg)
{
	struct job *j = arg;
	unsigned char buf[64] = { 0 }, val[32] = { 0 };

	if (j->start)
		pthread_barrier_wait(j->start);
	j->t0 = bench_clock(CLOCK_MONOTONIC);
	j->hits = j->gets = 0;
	if (j->batch && j->mix)
		return run_batched(j, val);
	for (uint64_t i = 0; i < j->n; i++) {
		uint64_t op = j->ops[i], k = op & ~SET_FLAG;

		if (j->mix == 95 && (op & SET_FLAG)) {
			cache_set(j, k, val);
			continue;
		}
		j->gets++;
		if (cache_get(j, k, buf))
			j->hits++;
		else if (j->mix == 0)
			cache_set(j, k, val);
	}
	j->t1 = bench_clock(CLOCK_MONOTONIC);
	return NULL;
}

/* One pass of every thread's stream at once; operations per second of wall
 * time, the hit ratio into *hit and the process's CPU nanoseconds per
 * operation into *cpu_ns.  The wall time runs from the first thread's start
 * to the last one's end, as each thread reads the clock: the main thread
 * may run after its workers have started (2 cores, 3 threads). */
static double
pass(struct job *jobs, unsigned nt, int mix, double *hit, double *cpu_ns)
{
	pthread_barrier_t start;
	pthread_t th[MAX_THREADS];
	uint64_t ops = 0, hits = 0, gets = 0;
	double t0, t1, c0;

	if (pthread_barrier_init(&start, NULL, nt + 1))
		die("pthread_barrier_init failed");
	for (unsigned i = 0; i < nt; i++) {
		jobs[i].mix = mix;
		jobs[i].start = &start;
		if (pthread_create(&th[i], NULL, run, &jobs[i]))
			die("pthread_create failed");
	}
	/* The workers wait at the barrier, spending no CPU time, until the
	 * main thread reaches it. */
	c0 = bench_clock(CLOCK_PROCESS_CPUTIME_ID);
	pthread_barrier_wait(&start);
	for (unsigned i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		ops += jobs[i].n;
		hits += jobs[i].hits;
		gets += jobs[i].gets;
	}
	c0 = bench_clock(CLOCK_PROCESS_CPUTIME_ID) - c0;
	t0 = jobs[0].t0;
	t1 = jobs[0].t1;
	for (unsigned i = 1; i < nt; i++) {
		t0 = jobs[i].t0 < t0 ? jobs[i].t0 : t0;
		t1 = jobs[i].t1 > t1 ? jobs[i].t1 : t1;
	}
	pthread_barrier_destroy(&start);
	*hit = gets ? (double)hits / (double)gets : 0;
	*cpu_ns = c0 * 1e9 / (double)ops;
	return (double)ops / (t1 - t0);
}

static uint64_t
get_le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void
put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (unsigned char)v;
}

static int
write_streams(const char *path, unsigned nt, uint64_t ops, uint64_t keys,
              uint64_t seed)
{
	double *cdf = zipf_table(keys, 0.99);
	unsigned char hdr[24], rec[8];
	FILE *f = fopen(path, "wb");

	if (!cdf || !f)
		die(!cdf ? "out of memory" : strerror(errno));
	memcpy(hdr, magic, 8);
	put_le64(hdr + 8, nt);
	put_le64(hdr + 16, ops);
	fwrite(hdr, 1, sizeof(hdr), f);
	for (unsigned t = 0; t < nt; t++)
		for (uint64_t i = 0; i < ops; i++) {
			uint64_t r = bench_key(seed << 40 ^ (uint64_t)t << 32 ^ i);
			uint64_t rank = zipf_rank(cdf, keys, (double)(r >> 11) * 0x1p-53);

			put_le64(rec, (bench_key(rank) & ~SET_FLAG) |
			                  (r % 20 == 0 ? SET_FLAG : 0));
			fwrite(rec, 1, sizeof(rec), f);
		}
	free(cdf);
	if (fclose(f))
		die(strerror(errno));
	return 0;
}

/* Thread t's stream from the file, malloc'd; *n its length. */
static uint64_t *
read_stream(const char *path, unsigned t, uint64_t *n)
{
	unsigned char hdr[24];
	FILE *f = fopen(path, "rb");
	uint64_t nt, ops, *v;

	if (!f)
		die(strerror(errno));
	if (fread(hdr, 1, sizeof(hdr), f) != sizeof(hdr) || memcmp(hdr, magic, 8))
		die("not a stream file (write one with --write)");
	nt = get_le64(hdr + 8);
	ops = get_le64(hdr + 16);
	if (t >= nt || ops == 0 || ops > (1ull << 32))
		die("the stream file has fewer threads than asked for");
	if (!(v = malloc(ops * sizeof(*v))) ||
	    fseek(f, (long)(sizeof(hdr) + t * ops * 8), SEEK_SET) ||
	    fread(v, 8, ops, f) != ops)
		die("cannot read the stream file");
	for (uint64_t i = 0; i < ops; i++)      /* the file is little-endian */
		v[i] = get_le64((const unsigned char *)&v[i]);
	fclose(f);
	*n = ops;
	return v;
}

int
main(int argc, char **argv)
{
	const char *wpath = NULL, *spath = NULL, *cache = "admit";
	unsigned long long threads = 1, ops = 4ull << 20, keys = 1ull << 20;
	unsigned long long seed = 1, cap = 100000, passes = 3, mix = 95;
	struct job jobs[MAX_THREADS];
	double rate[MAX_PASSES], hit[MAX_PASSES], cpu[MAX_PASSES], r, h, x;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		unsigned long long *num = NULL;

		if (!v)
			die("every option takes a value");
		if (!strcmp(a, "--write"))
			wpath = v;
		else if (!strcmp(a, "--stream"))
			spath = v;
		else if (!strcmp(a, "--cache"))
			cache = v;
		else if (!strcmp(a, "--threads"))
			num = &threads;
		else if (!strcmp(a, "--ops"))
			num = &ops;
		else if (!strcmp(a, "--keys"))
			num = &keys;
		else if (!strcmp(a, "--seed"))
			num = &seed;
		else if (!strcmp(a, "--capacity"))
			num = &cap;
		else if (!strcmp(a, "--passes"))
			num = &passes;
		else if (!strcmp(a, "--mix"))
			num = &mix;
		else
			die("unknown option (see the comment at the top of bench/bench_cache.c)");
		if (num) {
			char *end;

			errno = 0;
			*num = strtoull(v, &end, 10);
			if (errno || *end || *v == '-')
				die("a number option got something else");
		}
		i++;
	}
	if (threads < 1 || threads > MAX_THREADS || passes < 1 ||
	    passes > MAX_PASSES || (mix != 95 && mix != 100) || keys < 1 ||
	    ops < 1 || ops > (1ull << 32) || cap < 1)
		die("an option is out of range");
	if (wpath)
		return write_streams(wpath, (unsigned)threads, ops, keys, seed);
	if (!spath)
		die("give --write FILE or --stream FILE");

	memset(jobs, 0, sizeof(jobs));
	if (!strcmp(cache, "maplru")) {
		struct maplru *m = maplru_new(cap);

		if (!m)
			die("out of memory");
		for (unsigned i = 0; i < threads; i++)
			jobs[i].m = m;
	} else if (!strcmp(cache, "tight")) {
		struct tightlru *t = tightlru_new(cap);

		if (!t)
			die("out of memory or capacity too large");
		for (unsigned i = 0; i < threads; i++)
			jobs[i].t = t;
	} else if (!strcmp(cache, "admit") || !strcmp(cache, "admit-batch") ||
	           !strcmp(cache, "admit-peek")) {
		struct admit_lru_config cfg = { .capacity = cap };
		struct admit_lru *c;
		enum admit_status st = admit_lru_new(&cfg, &c);

		if (st != ADMIT_OK)
			die(admit_strerror(st));
		for (unsigned i = 0; i < threads; i++) {
			jobs[i].c = c;
			jobs[i].batch = !strcmp(cache, "admit-batch");
			jobs[i].peek = !strcmp(cache, "admit-peek");
		}
	} else
		die("--cache is admit, admit-batch, admit-peek, tight or maplru");
	for (unsigned i = 0; i < threads; i++)
		jobs[i].ops = read_stream(spath, i, &jobs[i].n);

	pass(jobs, (unsigned)threads, 0, &h, &x);          /* fill */
	pass(jobs, (unsigned)threads, (int)mix, &h, &x);   /* warm */
	for (unsigned p = 0; p < passes; p++)
		rate[p] = pass(jobs, (unsigned)threads, (int)mix, &hit[p], &cpu[p]);
	r = bench_median(rate, (int)passes);
	h = bench_median(hit, (int)passes);
	x = bench_median(cpu, (int)passes);
	printf("RESULT cache=%s mix=%llu threads=%llu mops=%.3f hit=%.4f cpu_ns=%.1f\n",
	       cache, mix, threads, r / 1e6, h, x);
	admit_lru_free(jobs[0].c);
	maplru_free(jobs[0].m);
	tightlru_free(jobs[0].t);
	for (unsigned i = 0; i < threads; i++)
		free((void *)jobs[i].ops);
	return 0;
}
