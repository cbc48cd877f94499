/*
 * tinylfu_internal.h - what tinylfu.c offers the rest of the library beyond
 * its public header, never exported.
 */
#ifndef ADMIT_TINYLFU_INTERNAL_H
#define ADMIT_TINYLFU_INTERNAL_H

#include <stdint.h>

#include <admit/tinylfu.h>

/*
 * Starts loading, for writing, the lines admit_tinylfu_record_hash(t, h)
 * will touch (the doorkeeper's block and the frequency store's two
 * buckets), so that a caller about to record a batch of hashes overlaps
 * their cache misses (lru.c's drain).  Changes nothing; t not NULL.
 */
void tinylfu_prefetch_hash(const struct admit_tinylfu *t, uint64_t h);

#endif /* ADMIT_TINYLFU_INTERNAL_H */
