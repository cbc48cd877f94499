/*
 * entry.h - a cached entry as every part of the cache sees it: one
 * allocation holding the header, the key bytes, the value bytes and, for
 * an expiring entry, its timer (expiry.h).  An entry is never changed once
 * published in the index: a set publishes a new entry in the old one's
 * place, so a reader copies a whole value, never a torn one.
 */
#ifndef ADMIT_CACHE_ENTRY_H
#define ADMIT_CACHE_ENTRY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <admit/lru.h>

#include "policy.h"
#include "tinylfu_internal.h"

struct entry {
	/* The policy's list links and segment, under the shard mutex.  A
	 * dead entry is chained into its shard's limbo through limbo
	 * (reclaim.h); before that, one the listener has still to see is
	 * chained through node.next and keeps its cause in node.seg
	 * (listener.h). */
	union {
		struct admit_policy_node node;
		struct entry *limbo;
	};
	_Atomic uintptr_t hnext;        /* hash chain: the next entry's
	                                 * address (index.h); readers
	                                 * follow it */
	uint64_t hash;
	size_t klen, vlen;
	bool dead;                      /* unlinked; under the shard mutex */
	/* Set before the entry is published, never changed after. */
	bool timed : 1;                 /* expires: a timer follows the data
	                                 * (expiry.h) */
	bool caller_records : 1;        /* admit_adapt_caller_records() of
	                                 * hash */
	struct tinylfu_place place;     /* hash's place in the cache's
	                                 * sketch, if it has one */
	unsigned char data[];           /* key bytes, then value bytes */
};

/* The header is within what each entry is charged for its overhead. */
_Static_assert(sizeof(struct entry) <= ADMIT_LRU_ENTRY_OVERHEAD,
               "an entry's header fits ADMIT_LRU_ENTRY_OVERHEAD");

/* What an entry of a klen-byte key and a vlen-byte value counts against a
 * byte capacity. */
static inline size_t
admit_entry_charge(size_t klen, size_t vlen)
{
	return klen + vlen + ADMIT_LRU_ENTRY_OVERHEAD;
}

static inline struct entry *
admit_entry_of(const struct admit_policy_node *n)
{
	return (struct entry *)((char *)n - offsetof(struct entry, node));
}

static inline const unsigned char *
admit_entry_value(const struct entry *e)
{
	return e->data + e->klen;
}

#endif /* ADMIT_CACHE_ENTRY_H */
