/*
 * workload.c - cache_sim's built-in workloads.
 */
#include "config.h"

#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"
#include "zipf.h"

static const struct {
	const char *name, *label;
	uint64_t sizes[3];
	int nsizes;
} workloads[] = {
	[WORKLOAD_ZIPF_SCANS] = { "zipf-scans", "builtin-zipf0.9+scans",
	                          { 1000, 10000, 100000 }, 3 },
	[WORKLOAD_ZIPF] = { "zipf", "builtin-zipf0.9", { 1000, 10000, 100000 }, 3 },
	[WORKLOAD_ZIGZAG] = { "zigzag", "builtin-zigzag", { 250, 500 }, 2 },
	[WORKLOAD_SCAN_REPEAT] = { "scan-repeat", "builtin-scan-repeat",
	                           { 250, 500 }, 2 },
	[WORKLOAD_SCAN_HOT] = { "scan-hot", "builtin-scan-hot",
	                        { 1000, 2500, 5000 }, 3 },
	[WORKLOAD_ZIGZAG_NEAR] = { "zigzag-near", "builtin-zigzag-near",
	                           { 800, 900, 950 }, 3 },
	[WORKLOAD_RECENCY] = { "recency", "builtin-recency",
	                       { 500, 2000, 8000 }, 3 },
	[WORKLOAD_SHORT_LARGE] = { "short-large", "builtin-short-large",
	                           { 50000, 131072 }, 2 },
	[WORKLOAD_WEB] = { "web", "builtin-web", { 1000, 10000, 50000 }, 3 },
};
#define NWORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

/* The keys of the scans are one-off: above every key drawn from a rank. */
#define SCAN_KEY_BASE (1ull << 62)
/* Passes of zigzag and scan-repeat over their keys. */
#define PASS_KEYS 1000u
#define PASSES 25u

enum workload
workload_parse(const char *name)
{
	for (size_t i = 0; name && i < NWORKLOADS; i++)
		if (!strcmp(name, workloads[i].name))
			return (enum workload)i;
	return WORKLOAD_UNKNOWN;
}

const char *
workload_label(enum workload w)
{
	return (size_t)w < NWORKLOADS ? workloads[w].label : "builtin-unknown";
}

int
workload_sizes(enum workload w, uint64_t *sizes, int max)
{
	int k = 0;

	for (; (size_t)w < NWORKLOADS && k < workloads[w].nsizes && k < max; k++)
		sizes[k] = workloads[w].sizes[k];
	return k;
}

static uint64_t
splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Rank or index r as a key: scattered over the key space, as real ids
 * are, and below SCAN_KEY_BASE. */
static uint64_t
scatter(uint64_t r)
{
	return splitmix64(&r) >> 2;
}

/* Zipf(0.9) over nkeys ranks; every scan_every requests (0: never), half
 * way through the period, a scan of scan_len one-off keys. */
static uint64_t *
zipf_scans(uint64_t seed, uint32_t nkeys, size_t requests, size_t scan_every,
           uint32_t scan_len, size_t *n)
{
	double *cdf = zipf_table(nkeys, 0.9);
	uint64_t *keys = malloc(requests * sizeof(*keys));
	uint64_t rng = seed, scan_key = SCAN_KEY_BASE;
	size_t i = 0;

	if (!cdf || !keys) {
		free(cdf);
		free(keys);
		return NULL;
	}
	while (i < requests) {
		if (scan_every && i % scan_every == scan_every / 2) {
			for (uint32_t k = 0; k < scan_len && i < requests; k++)
				keys[i++] = scan_key++;
			continue;
		}
		double u = (double)(splitmix64(&rng) >> 11) * 0x1p-53;

		keys[i++] = scatter(zipf_rank(cdf, nkeys, u));
	}
	free(cdf);
	*n = i;
	return keys;
}

/* PASSES passes over PASS_KEYS keys, every other one backwards if zigzag. */
static uint64_t *
passes(bool zigzag, size_t *n)
{
	uint64_t *keys = malloc((size_t)PASSES * PASS_KEYS * sizeof(*keys));
	size_t i = 0;

	if (!keys)
		return NULL;
	for (uint32_t p = 0; p < PASSES; p++)
		for (uint32_t k = 0; k < PASS_KEYS; k++)
			keys[i++] = scatter(zigzag && p % 2 ? PASS_KEYS - 1 - k : k);
	*n = i;
	return keys;
}

/* Uniform in [0, 1). */
static double
unit(uint64_t *rng)
{
	return (double)(splitmix64(rng) >> 11) * 0x1p-53;
}

/* NEAR_PASSES passes over NEAR_KEYS keys, forwards then backwards: a loop
 * 5 to 25 % larger than the cache at the workload's sizes.  Each pass
 * swaps every adjacent pair of its order with probability 1/8 (from the
 * seed), so no two passes, nor two seeds, are the same sequence. */
#define NEAR_KEYS 1000u
#define NEAR_PASSES 30u
static uint64_t *
zigzag_near(uint64_t seed, size_t *n)
{
	uint64_t *keys = malloc((size_t)NEAR_PASSES * NEAR_KEYS * sizeof(*keys));
	uint32_t order[NEAR_KEYS];
	uint64_t rng = seed;
	size_t i = 0;

	if (!keys)
		return NULL;
	for (uint32_t p = 0; p < NEAR_PASSES; p++) {
		for (uint32_t k = 0; k < NEAR_KEYS; k++)
			order[k] = p % 2 ? NEAR_KEYS - 1 - k : k;
		for (uint32_t k = 0; k + 1 < NEAR_KEYS; k++) {
			if (splitmix64(&rng) % 8 == 0) {
				uint32_t t = order[k];

				order[k] = order[k + 1];
				order[k + 1] = t;
				k++;
			}
		}
		for (uint32_t k = 0; k < NEAR_KEYS; k++)
			keys[i++] = scatter(order[k] + (seed << 32));
	}
	*n = i;
	return keys;
}

/* Near-pure recency: a new key every 1 / new_rate requests on average; a
 * request for an old key picks it by its age in keys, exponential with
 * mean mean_age: the recent keys are the hot ones, and a key's count says
 * only how long it has been around. */
static uint64_t *
recency(uint64_t seed, size_t requests, double new_rate, double mean_age,
        size_t *n)
{
	uint64_t *keys = malloc(requests * sizeof(*keys));
	uint64_t rng = seed, newest = 0;

	if (!keys)
		return NULL;
	for (size_t i = 0; i < requests; i++) {
		uint64_t age;

		if (unit(&rng) < new_rate || newest == 0) {
			keys[i] = scatter(++newest + (seed << 40));
			continue;
		}
		age = (uint64_t)(-mean_age * log1p(-unit(&rng)));
		keys[i] = scatter((age >= newest ? 1 : newest - age) +
		                  (seed << 40));
	}
	*n = requests;
	return keys;
}

/* A web-like mix: Zipf(alpha) over nkeys objects whose ranks are
 * reassigned every shift requests (today's popular pages are not
 * yesterday's), a share one_off of requests for objects seen once (the
 * one-hit wonders of web and CDN traces), and the rest Zipf. */
static uint64_t *
web(uint64_t seed, uint32_t nkeys, double alpha, size_t requests,
    size_t shift, double one_off, size_t *n)
{
	double *cdf = zipf_table(nkeys, alpha);
	uint64_t *keys = malloc(requests * sizeof(*keys));
	uint64_t rng = seed, scan_key = SCAN_KEY_BASE + (seed << 40), epoch = 0;

	if (!cdf || !keys) {
		free(cdf);
		free(keys);
		return NULL;
	}
	for (size_t i = 0; i < requests; i++) {
		uint64_t r;

		if (shift && i % shift == 0)
			epoch++;
		if (unit(&rng) < one_off) {
			keys[i] = scan_key++;
			continue;
		}
		r = zipf_rank(cdf, nkeys, unit(&rng));
		/* A new epoch moves the top tenth's ranks to fresh objects;
		 * the long tail stays. */
		if (r < nkeys / 10)
			r += (uint64_t)nkeys * epoch;
		keys[i] = scatter(r + (seed << 40));
	}
	free(cdf);
	*n = requests;
	return keys;
}

uint64_t *
workload_keys(enum workload w, uint64_t seed, size_t *n)
{
	switch (w) {
	case WORKLOAD_ZIPF_SCANS:
		return zipf_scans(seed, 1000000, 1000000, 100000, 20000, n);
	case WORKLOAD_ZIPF:
		return zipf_scans(seed, 1000000, 1000000, 0, 0, n);
	case WORKLOAD_ZIGZAG:
		return passes(true, n);
	case WORKLOAD_SCAN_REPEAT:
		return passes(false, n);
	case WORKLOAD_SCAN_HOT:
		return zipf_scans(seed, 10000, 500000, 25000, 5000, n);
	case WORKLOAD_ZIGZAG_NEAR:
		return zigzag_near(seed, n);
	case WORKLOAD_RECENCY:
		return recency(seed, 200000, 0.2, 2000, n);
	case WORKLOAD_SHORT_LARGE:
		return web(seed, 2000000, 0.8, 2000000, 500000, 0.05, n);
	case WORKLOAD_WEB:
		return web(seed, 500000, 0.9, 1000000, 250000, 0.3, n);
	default:
		return NULL;
	}
}
