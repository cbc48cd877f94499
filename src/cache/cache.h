/*
 * cache.h - what admit_lru (src/cache/) shares with its tests, never
 * exported.
 */
#ifndef ADMIT_CACHE_CACHE_H
#define ADMIT_CACHE_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "cache/readbuf.h"

struct admit_lru;

/*
 * For tests (a name libadmit does not export): lock (hold = true) or
 * unlock the mutex of the shard that key belongs to, as a writer stalled
 * inside it would hold it; no maintenance runs.  Unlock from the thread
 * that locked.
 */
void admit_test_lru_hold(struct admit_lru *c, const void *key, size_t klen,
                         bool hold);

#endif /* ADMIT_CACHE_CACHE_H */
