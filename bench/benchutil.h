/* Helpers shared by the benchmarks in bench/; keys and random numbers come
 * from the tests' generator (tests/util/prng.h). */
#ifndef ADMIT_BENCHUTIL_H
#define ADMIT_BENCHUTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prng.h"

/* A bijection (tests/util/prng.h's splitmix64), so distinct i give
 * distinct, random-looking 8-byte keys. */
static inline uint64_t
bench_key(uint64_t i)
{
	return prng_mix(i);
}

/* Seconds on clock id: CLOCK_MONOTONIC for wall time, a CPU-time clock
 * where other work on a shared machine must not count against a figure. */
static inline double
bench_clock(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int
bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of v[0..n), n <= 256; v is left as it was. */
static inline double
bench_median(const double *v, int n)
{
	double w[256];

	if (n <= 0 || n > 256)
		return 0;
	memcpy(w, v, sizeof(*v) * (size_t)n);
	qsort(w, (size_t)n, sizeof(*w), bench_cmp_double);
	return n % 2 ? w[n / 2] : (w[n / 2 - 1] + w[n / 2]) / 2;
}

#endif
