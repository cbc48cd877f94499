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
#include "hash.h"
#include "policy.h"

struct entry {
	/* The policy's list links and segment, under the shard mutex.  A
	 * dead entry is chained into its shard's limbo through limbo
	 * (reclaim.h); before that, one the listener has still to see is
	 * chained through node.next and keeps its cause in node.seg
	 * (listener.h).  node.owner holds the key's length and two flags
	 * (admit_entry_klen): set before the entry is published, never
	 * changed after, so readers read them with no lock. */
	union {
		struct admit_policy_node node;
		struct entry *limbo;
	};
	_Atomic uintptr_t hnext;        /* hash chain: the next entry's
	                                 * address (index.h); readers
	                                 * follow it */
	uint32_t vlen;                  /* <= ADMIT_LRU_MAX_VALUE_LEN */
	/* Unlinked; under the shard mutex.  A byte of its own, apart from
	 * the bytes above, so that setting it writes nothing a reader reads. */
	bool dead;
	/* Key bytes, then value bytes, right after the header's last byte:
	 * the key's hash is not stored (admit_entry_hash computes it again
	 * where it is needed and the caller's is not at hand), so the header
	 * is 37 bytes on a 64-bit host. */
	unsigned char data[];
};

/* The bytes an entry's header takes before its data. */
#define ADMIT_ENTRY_HEADER offsetof(struct entry, data)

/* The header is within what each entry is charged for its overhead. */
_Static_assert(ADMIT_ENTRY_HEADER <= ADMIT_LRU_ENTRY_OVERHEAD,
               "an entry's header fits ADMIT_LRU_ENTRY_OVERHEAD");
_Static_assert(sizeof(void *) != 8 || ADMIT_ENTRY_HEADER == 37,
               "an entry's header is 37 bytes on a 64-bit host");
_Static_assert(ADMIT_LRU_MAX_KEY_LEN == (1u << 22) - 1,
               "klen holds every key length the cache accepts");

/* node.owner's 24 bits: the key's length (22 bits), then two flags:
 * TIMED, the entry expires (a timer follows the data: expiry.h), and
 * CALLER_RECORDS, admit_adapt_caller_records() of the key's hash. */
#define ADMIT_ENTRY_TIMED (UINT32_C(1) << 22)
#define ADMIT_ENTRY_CALLER_RECORDS (UINT32_C(1) << 23)

static inline uint32_t
admit_entry_meta(const struct entry *e)
{
	const unsigned char *o = e->node.owner;

	return (uint32_t)o[0] | (uint32_t)o[1] << 8 | (uint32_t)o[2] << 16;
}

/* Sets the key's length and flags: before the entry is published. */
static inline void
admit_entry_set_meta(struct entry *e, uint32_t meta)
{
	e->node.owner[0] = (unsigned char)meta;
	e->node.owner[1] = (unsigned char)(meta >> 8);
	e->node.owner[2] = (unsigned char)(meta >> 16);
}

static inline size_t
admit_entry_klen(const struct entry *e)
{
	return admit_entry_meta(e) & ADMIT_LRU_MAX_KEY_LEN;
}

/* Whether e's key is klen bytes long: admit_entry_klen(e) == klen, byte by
 * byte, without assembling the 24-bit field (a lookup's test of every
 * entry in its chain). */
static inline bool
admit_entry_klen_is(const struct entry *e, size_t klen)
{
	const unsigned char *o = e->node.owner;

	return o[0] == (unsigned char)klen &&
	       o[1] == (unsigned char)(klen >> 8) &&
	       (o[2] & (ADMIT_LRU_MAX_KEY_LEN >> 16)) == klen >> 16;
}

/* The flags are bits of the third byte: each read with that byte alone. */
_Static_assert(ADMIT_ENTRY_TIMED >> 16 < 256 &&
               ADMIT_ENTRY_CALLER_RECORDS >> 16 < 256 &&
               (ADMIT_ENTRY_TIMED & 0xffff) == 0 &&
               (ADMIT_ENTRY_CALLER_RECORDS & 0xffff) == 0,
               "the flags are in node.owner[2]");

static inline bool
admit_entry_timed(const struct entry *e)
{
	return e->node.owner[2] & (ADMIT_ENTRY_TIMED >> 16);
}

static inline bool
admit_entry_caller_records(const struct entry *e)
{
	return e->node.owner[2] & (ADMIT_ENTRY_CALLER_RECORDS >> 16);
}

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
	size_t cost = admit_alloc_footprint(ADMIT_ENTRY_HEADER + klen + vlen) +
	              ADMIT_ENTRY_INDEX_SHARE;

	return cost + ADMIT_ENTRY_TABLES_SHARE(cost);
}

/* How a cache hashes its keys: one seed, and admit_hash8_prepare's of it
 * for 8-byte keys (the commonest: integer ids and 64-bit hashes). */
struct admit_keyhash {
	uint64_t seed;
	uint64_t prepared;
};

static inline uint64_t
admit_keyhash(const struct admit_keyhash *k, const void *key, size_t klen)
{
	if (klen == sizeof(uint64_t))
		return admit_hash8(key, k->prepared, k->seed);
	return admit_hash(key, klen, k->seed);
}

/* The hash of e's key, which the entry does not store. */
static inline uint64_t
admit_entry_hash(const struct admit_keyhash *k, const struct entry *e)
{
	return admit_keyhash(k, e->data, admit_entry_klen(e));
}

static inline struct entry *
admit_entry_of(const struct admit_policy_node *n)
{
	return (struct entry *)((char *)n - offsetof(struct entry, node));
}

static inline const unsigned char *
admit_entry_value(const struct entry *e)
{
	return e->data + admit_entry_klen(e);
}

#endif /* ADMIT_CACHE_ENTRY_H */
