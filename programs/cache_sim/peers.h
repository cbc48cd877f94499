/*
 * peers.h - the replacement policies users compare admit with, for
 * programs/cache_sim/cache_sim: ARC, LIRS, S3-FIFO, SIEVE, 2Q and CLOCK.
 *
 * Each is a small single-threaded simulation written from its paper, with
 * the choices of libCacheSim (Yang et al., the simulator behind
 * ../shared/peers.csv) where they differ from the paper and change hit
 * ratios; peers.c says which at each policy.  Private to cache_sim and its
 * tests: not part of libadmit.
 */
#ifndef ADMIT_CACHE_SIM_PEERS_H
#define ADMIT_CACHE_SIM_PEERS_H

#include <stddef.h>
#include <stdint.h>

enum peer_policy { PEER_ARC, PEER_LIRS, PEER_S3FIFO, PEER_SIEVE, PEER_2Q,
                   PEER_CLOCK };

/*
 * Numbers the distinct keys of keys[0..n) 0, 1, ... (in key order) and
 * writes each request's number to a malloc'd *ids, which the caller frees;
 * *distinct gets the count.  The policies index their per-key state by
 * these numbers instead of hashing.  Returns 0, or -1 when memory runs out
 * or n is 2^32 or more (nothing written then).
 */
int peer_dense_ids(const uint64_t *keys, size_t n, uint32_t **ids,
                   uint32_t *distinct);

/*
 * Replays ids[0..n) (numbers below `distinct`, from peer_dense_ids)
 * through policy p with a cache of `size` entries, each request a get
 * followed on a miss by an insert, and returns the number of hits.
 * Returns 0 if n or size is 0, UINT64_MAX if memory runs out.
 */
uint64_t peer_hits(enum peer_policy p, const uint32_t *ids, size_t n,
                   uint32_t distinct, uint64_t size);

#endif /* ADMIT_CACHE_SIM_PEERS_H */
