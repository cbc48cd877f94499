/*
 * zipf.h - Zipf-distributed ranks for the workload generators: cache_sim's
 * built-in workload, stress/stress_cache and bench/cached_load.  A table of
 * cumulative weights is built once; each draw is a binary search in it.
 */
#ifndef ADMIT_ZIPF_H
#define ADMIT_ZIPF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* cdf[r] = the sum of (i + 1)^-s for i <= r, so rank 0 is the most popular.
 * malloc'd; NULL if n is 0 or memory is short. */
static inline double *
zipf_table(uint64_t n, double s)
{
	double *cdf = n ? malloc(n * sizeof(*cdf)) : NULL;
	double sum = 0;

	if (!cdf)
		return NULL;
	for (uint64_t r = 0; r < n; r++)
		cdf[r] = sum += pow((double)r + 1, -s);
	return cdf;
}

/* The rank drawn by a uniform u in [0, 1): the first r whose cumulative
 * weight reaches u times the total. */
static inline uint64_t
zipf_rank(const double *cdf, uint64_t n, double u)
{
	double x = u * cdf[n - 1];
	uint64_t lo = 0, hi = n - 1;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (cdf[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif /* ADMIT_ZIPF_H */
