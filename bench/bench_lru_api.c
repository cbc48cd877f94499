/*
 * bench_lru_api: what the embedders' admit_lru calls save a cache server,
 * each row against the way it is done without them, on the same Zipf 0.99
 * stream, run alternately REPS times; medians of CPU ns per request.
 *
 *   hit, copied twice   get into a buffer, then copied to the "socket"
 *   vs get_with         the value lent and copied once to the "socket"
 *   get+set on a miss   two hashes per miss
 *   vs hashed calls     admit_lru_hash once, get_hashed, set_hashed
 *   incr with a lock    a caller's array of 1024 mutexes around get + set
 *                       (what a server without compute must do)
 *   vs compute          one admit_lru_compute
 *   get, timed entries  every entry stored with set_expiring (a clock read
 *                       per hit) against the same cache with untimed ones
 *
 * Single-threaded: it measures the work per request, not scaling.
 * Usage: bench_lru_api [KEYS [REPS [VALUE_BYTES]]]   (200000, 5, 100)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <admit/admit.h>

#include "benchutil.h"
#include "zipf.h"

#define LOCKS 1024
#define MAXV 65536

static uint64_t *stream;
static size_t nreq;
static size_t vbytes = 100;
static unsigned char sock[MAXV];
static volatile uint64_t sink;
static pthread_mutex_t locks[LOCKS];

static struct admit_lru *
fresh(uint64_t keys, bool timed)
{
	struct admit_lru_config cfg = { .capacity = keys / 2, .seed = 7 };
	struct admit_lru *c;
	static unsigned char v[MAXV] = { 1 };
	uint64_t far;

	if (admit_lru_new(&cfg, &c) != ADMIT_OK)
		exit(1);
	far = admit_lru_now(c) + UINT64_C(3600000000000);
	for (size_t i = 0; i < nreq / 4; i++) {
		uint64_t k = stream[i];

		if (timed)
			admit_lru_set_expiring(c, &k, sizeof(k), v, vbytes, far);
		else
			admit_lru_set(c, &k, sizeof(k), v, vbytes);
	}
	return c;
}

static void
lend(const void *value, size_t vlen, void *arg)
{
	memcpy(arg, value, vlen);
}

static enum admit_lru_verdict
incr(struct admit_lru_update *up, void *arg)
{
	uint64_t n = 0;
	unsigned char *b;

	(void)arg;
	if (up->found && up->old_len >= sizeof(n))
		memcpy(&n, up->old, sizeof(n));
	n++;
	b = admit_lru_update_alloc(up, vbytes);
	if (!b)
		return ADMIT_LRU_KEEP;
	memcpy(b, &n, sizeof(n));
	memset(b + sizeof(n), 0, vbytes - sizeof(n));
	return ADMIT_LRU_STORE;
}

enum row { COPY2, LENT, TWOHASH, ONEHASH, LOCKED, COMPUTE, UNTIMED, TIMED, NROWS };

static const char *const name[NROWS] = {
	"hit, copied twice", "get_with, copied once",
	"get+set, hashed twice", "hash once, _hashed",
	"incr: mutex + get + set", "incr: compute",
	"get, untimed entries", "get, timed entries",
};

static double
run(enum row r, struct admit_lru *c)
{
	static unsigned char buf[MAXV], v[MAXV] = { 2 };
	double t0 = bench_clock(CLOCK_PROCESS_CPUTIME_ID);
	size_t vlen;

	for (size_t i = 0; i < nreq; i++) {
		uint64_t k = stream[i], h, n;

		switch (r) {
		case COPY2:
		case UNTIMED:
		case TIMED:
			if (admit_lru_get(c, &k, sizeof(k), buf, sizeof(buf), &vlen) == ADMIT_OK)
				memcpy(sock, buf, vlen);
			break;
		case LENT:
			admit_lru_get_with(c, &k, sizeof(k), lend, sock);
			break;
		case TWOHASH:
			if (admit_lru_get(c, &k, sizeof(k), buf, sizeof(buf), &vlen) != ADMIT_OK)
				admit_lru_set(c, &k, sizeof(k), v, vbytes);
			break;
		case ONEHASH:
			h = admit_lru_hash(c, &k, sizeof(k));
			if (admit_lru_get_hashed(c, h, &k, sizeof(k), buf, sizeof(buf), &vlen) != ADMIT_OK)
				admit_lru_set_hashed(c, h, &k, sizeof(k), v, vbytes);
			break;
		case LOCKED:
			h = bench_key(k);
			pthread_mutex_lock(&locks[h % LOCKS]);
			n = 0;
			if (admit_lru_get(c, &k, sizeof(k), buf, sizeof(buf), &vlen) == ADMIT_OK)
				memcpy(&n, buf, sizeof(n));
			n++;
			memcpy(buf, &n, sizeof(n));
			memset(buf + sizeof(n), 0, vbytes - sizeof(n));
			admit_lru_set(c, &k, sizeof(k), buf, vbytes);
			pthread_mutex_unlock(&locks[h % LOCKS]);
			break;
		case COMPUTE:
			admit_lru_compute(c, &k, sizeof(k), incr, NULL);
			break;
		default:
			break;
		}
	}
	sink += sock[0];
	return (bench_clock(CLOCK_PROCESS_CPUTIME_ID) - t0) * 1e9 / (double)nreq;
}

int
main(int argc, char **argv)
{
	uint64_t keys = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;
	int reps = argc > 2 ? atoi(argv[2]) : 5;
	double ns[NROWS][64];
	double *cdf;
	uint64_t x = 0x853c49e6748fea9bull;

	vbytes = argc > 3 ? strtoull(argv[3], NULL, 10) : 100;
	if (keys < 100 || keys > (1u << 24) || reps < 1 || reps > 64 ||
	    vbytes < 8 || vbytes > MAXV) {
		fprintf(stderr, "usage: bench_lru_api [KEYS (100..16M) [REPS (1..64) "
		        "[VALUE_BYTES (8..65536)]]]\n");
		return 2;
	}
	nreq = (size_t)keys * 10;
	stream = malloc(nreq * sizeof(*stream));
	cdf = zipf_table(keys, 0.99);
	if (!stream || !cdf)
		return 1;
	for (size_t i = 0; i < nreq; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		stream[i] = bench_key(zipf_rank(cdf, keys, (double)(x >> 11) * 0x1p-53));
	}
	for (int i = 0; i < LOCKS; i++)
		pthread_mutex_init(&locks[i], NULL);
	printf("bench_lru_api: %llu keys, Zipf 0.99, %zu requests a run, %d runs, "
	       "values of %d bytes, capacity keys/2, CPU ns per request (median)\n",
	       (unsigned long long)keys, nreq, reps, (int)vbytes);
	for (int rep = 0; rep < reps; rep++) {
		for (int r = 0; r < NROWS; r++) {
			struct admit_lru *c = fresh(keys, r == TIMED);

			ns[r][rep] = run((enum row)r, c);
			admit_lru_free(c);
		}
	}
	for (int r = 0; r < NROWS; r += 2) {
		double base = bench_median(ns[r], reps), with = bench_median(ns[r + 1], reps);

		printf("  %-24s %7.1f ns   %-24s %7.1f ns   ratio %.3f\n", name[r], base,
		       name[r + 1], with, with / base);
	}
	free(stream);
	free(cdf);
	return 0;
}
