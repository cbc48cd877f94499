/*
 * workload.h - cache_sim's built-in workloads, replayed when no trace is
 * given: patterns any cache meets, each with cache sizes that show it.
 *
 * Private to programs/cache_sim: not part of libadmit.
 */
#ifndef ADMIT_CACHE_SIM_WORKLOAD_H
#define ADMIT_CACHE_SIM_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

/*
 *   ZIPF_SCANS   1 M requests, Zipf(0.9) over 1 M keys, interrupted every
 *                100,000 requests by a scan of 20,000 keys never seen again
 *                (the default); sizes 1,000, 10,000, 100,000.
 *   ZIPF         the same without the scans.
 *   ZIGZAG       1,000 keys forwards, then at once backwards, 25 passes
 *                (25,000 requests); sizes 250 and 500 (N/4, N/2), where
 *                LRU is optimal: 24 % and 48 %.
 *   SCAN_REPEAT  the same 1,000 keys forwards, 25 times: a loop, on which
 *                LRU scores 0; sizes 250 and 500.
 *   SCAN_HOT     500,000 requests, Zipf(0.9) over 10,000 hot keys,
 *                interrupted every 25,000 requests by a scan of 5,000 keys
 *                never seen again; sizes 1,000, 2,500, 5,000.
 *   ZIGZAG_NEAR  1,000 keys forwards, then backwards, 30 passes, each
 *                pass's order perturbed by the seed (adjacent swaps); sizes
 *                800, 900, 950: a loop a little larger than the cache, where
 *                LRU keeps the end of each pass for the next, W-TinyLFU
 *                almost nothing.
 *   RECENCY      200,000 requests: a new key one request in five, else a
 *                key of exponential age (mean 2,000 keys): near-pure
 *                recency; sizes 500, 2,000, 8,000.
 *   SHORT_LARGE  2 M requests, Zipf(0.8) over 2 M keys whose top tenth
 *                moves to new keys every 500,000 requests, 5 % one-off
 *                keys; sizes 50,000 and 131,072: a large cache on a trace
 *                of few periods of its sample.
 *   WEB          1 M requests, Zipf(0.9) over 500,000 keys, top tenth
 *                moving every 250,000 requests, 30 % one-off keys (one-hit
 *                wonders); sizes 1,000, 10,000, 50,000.
 * Every workload's requests are a function of the seed alone.
 */
enum workload { WORKLOAD_ZIPF_SCANS, WORKLOAD_ZIPF, WORKLOAD_ZIGZAG,
                WORKLOAD_SCAN_REPEAT, WORKLOAD_SCAN_HOT,
                WORKLOAD_ZIGZAG_NEAR, WORKLOAD_RECENCY,
                WORKLOAD_SHORT_LARGE, WORKLOAD_WEB,
                WORKLOAD_UNKNOWN = -1 /* workload_parse()'s "no such
                                         workload"; makes the enum signed */ };

/* "zipf-scans", "zipf", "zigzag", "scan-repeat", "scan-hot",
 * "zigzag-near", "recency", "short-large", "web";
 * WORKLOAD_UNKNOWN if unknown or NULL. */
enum workload workload_parse(const char *name);

/* The name printed for w's results, e.g. "builtin-zigzag". */
const char *workload_label(enum workload w);

/* Writes w's default cache sizes to sizes[0..max) and returns how many. */
int workload_sizes(enum workload w, uint64_t *sizes, int max);

/*
 * Generates w's requests (the Zipf draws from seed) into a malloc'd array
 * of keys, which the caller frees, and sets *n.  NULL if memory runs out
 * or w is unknown.
 */
uint64_t *workload_keys(enum workload w, uint64_t seed, size_t *n);

#endif /* ADMIT_CACHE_SIM_WORKLOAD_H */
