/*
 * workload.c - cache_sim's built-in workloads.
 */
#include "config.h"

#include <stdbool.h>
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
	default:
		return NULL;
	}
}
