/*
 * reclaim.h - when a shard's dead entries may be freed.
 *
 * An entry leaves the index and the policy's lists under the shard mutex,
 * is marked dead and put in the shard's limbo (admit_reclaim_retire_locked);
 * the limbo goes, a batch at a time, to call_rcu.  After the grace period no
 * reader can still hold those entries nor still be pushing them to the read
 * buffer, so every event naming them lies below the rings' tails as the
 * callback reads them; the callback notes the tails and hands the batch
 * back (a lock-free stack), and the next mutex holder frees it once its
 * drain has moved every ring's head past the noted tails
 * (admit_reclaim_collect_locked).  A slot below a tail that a reader has
 * reserved but not yet filled stops a drain; the batch then waits for a
 * later one.  The invariant:
 *     an entry is freed only when it is dead, no read-side section that may
 *     have seen it is running, and no read-buffer slot names it.
 * Frees happen in the threads that use the cache, under the mutex; the
 * callback takes no lock.  Garbage per shard: the limbo (at most
 * ADMIT_RECLAIM_BATCH entries and about ADMIT_RECLAIM_BYTES bytes, more
 * only while a batch cannot be allocated) plus the batches handed out
 * since the shard's last locked call past their grace period, plus the
 * few a writer's maintenance lets wait on other threads' rings before it
 * drains them all (shard.c: WAITING_BATCHES); none of it counts in the
 * capacity.
 *
 * The *_locked calls are the shard's (its mutex held).
 */
#ifndef ADMIT_CACHE_RECLAIM_H
#define ADMIT_CACHE_RECLAIM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/entry.h"
#include "cache/readbuf.h"

/* Dead entries a shard collects before handing them to call_rcu at once. */
#define ADMIT_RECLAIM_BATCH 64
#define ADMIT_RECLAIM_BYTES (64 * 1024)

struct admit_reclaim_batch;

struct admit_reclaim {
	/* Dead, waiting for a batch: limbo[0..nlimbo), then, when a batch
	 * could not be had, the rest chained through their limbo field from
	 * more (so a flush never walks the entries, whose lines are cold). */
	struct entry *limbo[ADMIT_RECLAIM_BATCH];
	struct entry *more;
	unsigned nlimbo, nmore;
	size_t limbo_bytes;
	size_t held;                    /* retired, not yet freed */
	struct admit_reclaim_batch *waiting;  /* past their grace period, not
	                                       * yet past the rings' heads */
	_Atomic(struct admit_reclaim_batch *) ready;  /* past their grace
	                                               * period: pushed by
	                                               * callbacks */
	struct admit_readbuf *rb;       /* whose slots may name the entries */
	_Atomic uint64_t *pending;      /* the owner's count of callbacks */
};

/* Sets r up empty for entries that rb's events may name. */
void admit_reclaim_init(struct admit_reclaim *r, struct admit_readbuf *rb,
                        _Atomic uint64_t *pending);

/* e has left the index and the lists (no new reader can find it): marks it
 * dead and puts it in the limbo, flushing a full limbo first. */
void admit_reclaim_retire_locked(struct admit_reclaim *r, struct entry *e);

/* Hands the limbo to call_rcu once it is big enough.  Out of memory the
 * limbo stays, to be tried again. */
void admit_reclaim_flush_locked(struct admit_reclaim *r);

/* Frees the batches whose events the rings' heads have passed; keeps the
 * others for a later call and returns how many it kept.  After a drain. */
size_t admit_reclaim_collect_locked(struct admit_reclaim *r);

/* With every callback done and no reader left: frees the limbo and every
 * batch. */
void admit_reclaim_destroy(struct admit_reclaim *r);

#endif /* ADMIT_CACHE_RECLAIM_H */
