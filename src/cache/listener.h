/*
 * listener.h - where a shard's removed entries go: counted by cause, and,
 * when the cache has a removal listener, held back from reclamation until
 * the listener has seen them, outside the shard mutex.
 *
 * An entry removed under the mutex (evicted, rejected, expired, replaced,
 * deleted, cleared) has already left the index, so no new reader can find
 * it.  Without a listener it is retired at once (reclaim.h).  With one it
 * is marked dead (a buffered read of it then moves nothing) and queued on
 * the shard's `gone` list; the call that holds the mutex takes the list as
 * it unlocks (shard_unlock_deliver), calls the listener on each entry with
 * no lock held, then retires them under the mutex again.  Until retired an
 * entry is not freed, so its bytes stay valid while the listener reads
 * them.  Removals made by a get's maintenance (which never calls the
 * listener) wait on the list for the shard's next writing call.
 */
#ifndef ADMIT_CACHE_LISTENER_H
#define ADMIT_CACHE_LISTENER_H

#include <stdint.h>

#include <admit/lru.h>

struct entry;

/* A shard's removals: counters by cause, and the entries the listener
 * has still to see (under the shard mutex). */
struct admit_gone {
	struct entry *head, *tail;      /* chained through node.next */
	uint64_t count[ADMIT_LRU_CAUSES];
	uint64_t bytes[ADMIT_LRU_CAUSES];
};

#endif /* ADMIT_CACHE_LISTENER_H */
