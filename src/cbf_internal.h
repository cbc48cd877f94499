/*
 * cbf_internal.h - the counting Bloom filter's operations on a key's hash,
 * for callers inside the library that hash a key once and use the hash in
 * several structures (tinylfu.c).
 */
#ifndef ADMIT_CBF_INTERNAL_H
#define ADMIT_CBF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <admit/cbf.h>

/* k never exceeds this (fpr >= ADMIT_CBF_MIN_FPR gives k <= 30). */
#define CBF_MAX_HASHES 32u

/* h is any well-mixed 64-bit hash of the key (admit_hash() with some seed);
 * the filter's own seed is not applied again. */
void cbf_add_hash(struct admit_cbf *f, uint64_t h);
/* Add h only if its estimate is 0, in one pass over its block; true if it
 * was added.  (Two threads may both add a key absent to both.) */
bool cbf_add_if_absent_hash(struct admit_cbf *f, uint64_t h);
unsigned cbf_estimate_hash(const struct admit_cbf *f, uint64_t h);
/* Whether h's estimate is above 0: its counters read until the first at
 * 0. */
bool cbf_contains_hash(const struct admit_cbf *f, uint64_t h);
/* Starts loading, for writing, the blocks adds of h[0..n) will change. */
void cbf_prefetch_batch(const struct admit_cbf *f, const uint64_t *h, size_t n);

/* For tests: the indexes (0 .. m-1) of key's k counters, in hash order and
 * with any repeats, and the value of one counter. */
void cbf_counter_indexes(const struct admit_cbf *f, const void *key, size_t len,
                         uint64_t idx[]);
unsigned cbf_counter_get(const struct admit_cbf *f, uint64_t idx);

#endif /* ADMIT_CBF_INTERNAL_H */
