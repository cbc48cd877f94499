/*
 * lru_internal.h - what lru.c shares with its tests, never exported.
 */
#ifndef ADMIT_LRU_INTERNAL_H
#define ADMIT_LRU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

struct admit_lru;

/* Slots in each of a shard's rings of buffered get events (a power of
 * two): up to this many gets in a row by one thread take no lock. */
#define ADMIT_LRU_RING 128

/*
 * For tests (a name libadmit does not export): lock (hold = true) or unlock the mutex of the shard that key
 * belongs to, as a writer stalled inside it would hold it.  Unlock from the
 * thread that locked.
 */
void admit_test_lru_hold(struct admit_lru *c, const void *key, size_t klen,
                         bool hold);

#endif /* ADMIT_LRU_INTERNAL_H */
