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

#include "alloc.h"
#include "policy.h"

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
	uint32_t vlen;                  /* <= ADMIT_LRU_MAX_VALUE_LEN */
	/* Set before the entry is published, never changed after: readers
	 * read these bits with no lock. */
	uint32_t klen : 22;             /* <= ADMIT_LRU_MAX_KEY_LEN */
	uint32_t timed : 1;             /* expires: a timer follows the data
	                                 * (expiry.h) */
	uint32_t caller_records : 1;    /* admit_adapt_caller_records() of
	                                 * hash */
	/* Unlinked; under the shard mutex.  A byte of its own, apart from
	 * the bits above, so that setting it writes nothing a reader reads. */
	bool dead;
	unsigned char data[];           /* key bytes, then value bytes */
};

/* The header is within what each entry is charged for its overhead: on a
 * 64-bit host three words of the node, the chain, the hash and a word of
 * lengths and flags. */
_Static_assert(sizeof(struct entry) <= ADMIT_LRU_ENTRY_OVERHEAD,
               "an entry's header fits ADMIT_LRU_ENTRY_OVERHEAD");
_Static_assert(sizeof(void *) != 8 || sizeof(struct entry) == 48,
               "an entry's header is 48 bytes on a 64-bit host");
_Static_assert(ADMIT_LRU_MAX_KEY_LEN == (1u << 22) - 1,
               "klen holds every key length the cache accepts");

/* Whether an entry of a klen-byte key and a vlen-byte value has lengths
 * the header holds (and sums that cannot wrap: both are far below
 * SIZE_MAX / 4 on a 64-bit host; on a 32-bit one that bound comes first). */
static inline bool
admit_entry_lengths_ok(size_t klen, size_t vlen)
{
	return klen <= ADMIT_LRU_MAX_KEY_LEN && klen <= SIZE_MAX / 4 &&
	       vlen <= ADMIT_LRU_MAX_VALUE_LEN && vlen <= SIZE_MAX / 4;
}

/* An entry's share of its shard's index: the bucket array holds at most
 * two words an entry, as it doubles when the entries exceed its buckets. */
#define ADMIT_ENTRY_INDEX_SHARE (2 * sizeof(uintptr_t))

/* An entry's share of the tables sized at creation for the entries the
 * cache will hold (admit_cache_entries: one per 4 x ADMIT_LRU_ENTRY_OVERHEAD
 * bytes of a byte capacity): the frequency sketch, a 64-bit word an entry
 * rounded up to a power of two (8 to 16 bytes: freqsketch.h; its 64 KiB
 * floor is a fixed table, as the shards are), and the
 * adaptive policy's ghost slots, 8 bytes each, one to two an entry (a
 * power of two per shard).  That is at most 32 bytes for every 256 of the
 * capacity, an eighth of it, whatever the entries' sizes; so each entry is
 * charged a seventh of its own cost more, and the entries' own cost stays
 * within seven eighths of the capacity, the tables within the rest. */
#define ADMIT_ENTRY_TABLES_SHARE(cost) ((cost) / 7)

/* What an entry of a klen-byte key and a vlen-byte value counts against a
 * byte capacity (admit_lru_entry_charge): the allocation that holds its
 * header, key and value, at its allocator's size class, its share of the
 * index, and a share of the tables in proportion.  A pure function of
 * (klen, vlen), so that an entry is charged at its removal what it was at
 * its insertion.  A timed entry's timer (expiry.h) is not charged.  The
 * caller checks the lengths (admit_entry_lengths_ok). */
static inline size_t
admit_entry_charge(size_t klen, size_t vlen)
{
	size_t cost = admit_alloc_footprint(sizeof(struct entry) + klen + vlen) +
	              ADMIT_ENTRY_INDEX_SHARE;

	return cost + ADMIT_ENTRY_TABLES_SHARE(cost);
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
