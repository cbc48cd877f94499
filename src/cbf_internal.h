/*
 * cbf_internal.h - the counting Bloom filter's operations on a key's hash,
 * for callers inside the library that hash a key once and use the hash in
 * several structures (tinylfu.c).
 */
#ifndef ADMIT_CBF_INTERNAL_H
#define ADMIT_CBF_INTERNAL_H

#include <stdint.h>

#include <admit/cbf.h>

/* h is any well-mixed 64-bit hash of the key (admit_hash() with some seed);
 * the filter's own seed is not applied again. */
void cbf_add_hash(struct admit_cbf *f, uint64_t h);
unsigned cbf_estimate_hash(const struct admit_cbf *f, uint64_t h);

#endif /* ADMIT_CBF_INTERNAL_H */
