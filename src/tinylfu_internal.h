/*
 * tinylfu_internal.h - what tinylfu.c offers the rest of the library beyond
 * its public header, never exported: the switch admit_lru's adaptive policy
 * uses to run the real cache's sketch in either of the two modes its
 * miniature simulation compares, and the drain's batched records.
 */
#ifndef ADMIT_TINYLFU_INTERNAL_H
#define ADMIT_TINYLFU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <admit/tinylfu.h>

#include "cuckoo_internal.h"

/*
 * Steady mode: counts are never halved (the sample still counts records,
 * so the first aging after steady mode ends falls where it would have) and
 * no candidate is admitted by chance.  Frequencies then rank keys over the
 * whole run, which is what a loop larger than the cache needs: every key is
 * as frequent as every other, ties keep the victim, and the cache holds one
 * fixed part of the loop, as LIRS does, instead of churning.  Safe with
 * concurrent calls; records and contests see the change soon, not at once.
 */
void admit_tinylfu_set_steady(struct admit_tinylfu *t, bool steady);

/* admit_tinylfu_admit_hash(t, candidate, victim) for a caller that holds a
 * lock every user of t takes (the miniature simulation's own sketches,
 * behind its mutex): the estimates read the frequency store without
 * validating against writers, since none can run.  t not NULL. */
bool tinylfu_admit_hash_locked(struct admit_tinylfu *t, uint64_t candidate,
                               uint64_t victim);

/* The seed admit_tinylfu_hash() hashes keys with. */
uint64_t tinylfu_seed(const struct admit_tinylfu *t);

/* Where a hash's record lands in the frequency store, found once by
 * tinylfu_prefetch_batch() for tinylfu_record_batch(). */
struct tinylfu_where {
	struct cuckoo_pos p;
};

/* The same place in six bytes, for an owner that records one hash often
 * (admit_lru keeps it in each entry): the store's hash of the hash and the
 * place's derivation then happen once, at tinylfu_place_of().  Packed: it
 * fills the six bytes an entry's header leaves free. */
struct __attribute__((packed)) tinylfu_place {
	uint16_t fp;                    /* the store's fingerprint */
	uint32_t i1;                    /* its first bucket */
};

/* The place of hash h in t's frequency store; t not NULL. */
struct tinylfu_place tinylfu_place_of(const struct admit_tinylfu *t,
                                      uint64_t h);

/*
 * Starts loading, for writing, the lines the records of h[0..n) will touch
 * (each hash's doorkeeper block and frequency store buckets), so that a
 * caller about to record a batch overlaps their cache misses (admit_lru's
 * drain), and fills w[0..n) for tinylfu_record_batch().  pl[i] is
 * tinylfu_place_of(t, h[i]).  Changes nothing; t not NULL.
 */
void tinylfu_prefetch_batch(const struct admit_tinylfu *t, const uint64_t *h,
                            const struct tinylfu_place *pl, size_t n,
                            struct tinylfu_where *w);

/* admit_tinylfu_record_hash(t, h[i]) for i = 0 .. n-1 in order, with w
 * from tinylfu_prefetch_batch() (the store's buckets never move, so w stays
 * right); an aging falls between the same two records as it would there.
 * t not NULL. */
void tinylfu_record_batch(struct admit_tinylfu *t, const uint64_t *h,
                          const struct tinylfu_where *w, size_t n);

#endif /* ADMIT_TINYLFU_INTERNAL_H */
