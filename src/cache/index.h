/*
 * index.h - a shard's index: a chained hash whose chain pointers are C11
 * atomics, read under RCU (rcu.h) while one writer at a time changes it.
 *
 * Readers (admit_index_read, in a read-side section) walk the chains with
 * acquire loads; writers (the *_locked calls, serialised by the caller:
 * admit_lru's shard mutex) publish with release.  An entry is linked whole
 * and never changed while linked (entry.h), so a reader that finds a key
 * finds a whole entry.
 *
 * Growing relinks entries into a table twice the size; meanwhile the
 * index's `resizing` count is odd, and a reader that missed while it was
 * odd or moved must look again (seqlock-style: Boehm, MSPC 2012); a hit
 * needs no check, the key compared equal.  The old table is freed after a
 * grace period; `pending` counts such frees not yet done, so that the
 * owner knows whether it must wait for callbacks before freeing itself.
 *
 * Hash tags (64-bit hosts).  A bucket's word holds, above the address of
 * its chain's first entry, the chain's summary: bit admit_index_tag(h) of
 * bits 48-55 set for the hash h of each entry in the chain.  A reader
 * whose key's bit is clear stops there: a miss in a bucket that holds no
 * hash with its tag reads no entry (with one entry a bucket, seven misses
 * in eight).  A summary holds the bit of every entry linked in its chain,
 * at every moment (an insert sets it before it links the entry, a remove
 * clears it after the unlink), and no other bit once a writer's call
 * returns (admit_index_check_locked), h being the hash of the entry's key
 * (the index's hash function) for every entry filed under it.  Chain words below a bucket (the
 * entries' hnext) carry no summary.  Entry addresses must leave bits 48-55
 * clear (admit_index_taggable(): user addresses on x86-64 and AArch64 are
 * below 2^48; AArch64's tag byte, bits 56-63, is kept).
 */
#ifndef ADMIT_CACHE_INDEX_H
#define ADMIT_CACHE_INDEX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <admit/status.h>

#include "cache/entry.h"
#include "rcu.h"
#include "stripe.h"

#if UINTPTR_MAX > 0xffffffffu
#define ADMIT_INDEX_TAGS 1
/* The summary's bits in a bucket's word. */
#define ADMIT_INDEX_SUMMARY ((uintptr_t)0xff << 48)
#else
#define ADMIT_INDEX_TAGS 0
#define ADMIT_INDEX_SUMMARY ((uintptr_t)0)
#endif

/* A bucket array; replaced whole when the index grows.  A bucket is a
 * chain word: an entry's address, with the summary above it. */
struct admit_index_table {
	struct rcu_head rcu;
	_Atomic uint64_t *pending;      /* dropped when the table is freed */
	size_t nbuckets;                /* a power of two */
	_Atomic uintptr_t bucket[];
};

/* The hash of an entry's key, which the entry does not store: what its
 * remove, a grow and a summary's upkeep file it under. */
typedef uint64_t (*admit_index_hash_t)(const void *ctx, const struct entry *e);

struct admit_index {
	_Atomic(struct admit_index_table *) table;
	_Atomic uint32_t resizing;      /* a stripe (stripe.h): odd while a
	                                 * grow relinks chains */
	_Atomic uint64_t *pending;      /* the owner's count of callbacks */
	admit_index_hash_t hash;        /* constant */
	const void *hash_ctx;
};

/* Sets ix up empty with room for about `entries` entries before chains
 * grow long (at least 64 buckets), its entries' keys hashed by hash(ctx,
 * e).  ADMIT_NOMEM when out of memory. */
enum admit_status admit_index_init(struct admit_index *ix, uint64_t entries,
                                   _Atomic uint64_t *pending,
                                   admit_index_hash_t hash, const void *ctx);

/* Frees the table (not the entries; no reader may still be in it). */
void admit_index_destroy(struct admit_index *ix);

/* Whether two keys of klen bytes are equal; an 8-byte key (an integer id,
 * the commonest) in one compare instead of a call to memcmp. */
static inline bool
admit_index_same_key(const unsigned char *a, const void *b, size_t klen)
{
	if (klen == sizeof(uint64_t)) {
		uint64_t x, y;

		memcpy(&x, a, sizeof(x));
		memcpy(&y, b, sizeof(y));
		return x == y;
	}
	return klen == 0 || memcmp(a, b, klen) == 0;
}

/* The summary bit of hash h: from bits 40-42, above the bucket bits of any
 * table and below the shard bits of any admit_lru. */
static inline uintptr_t
admit_index_tag(uint64_t h)
{
#if ADMIT_INDEX_TAGS
	return (uintptr_t)1 << 48 << (h >> 40 & 7);
#else
	(void)h;
	return 0;
#endif
}

/* Whether e's address leaves the summary's bits clear, as an entry's must. */
static inline bool
admit_index_taggable(const struct entry *e)
{
	return ((uintptr_t)e & ADMIT_INDEX_SUMMARY) == 0;
}

/* The entry a chain word names. */
static inline struct entry *
admit_index_entry(uintptr_t w)
{
	return (struct entry *)(w & ~ADMIT_INDEX_SUMMARY);
}

/* h's bucket in t: the chain word a lookup of h reads first. */
static inline _Atomic uintptr_t *
admit_index_bucket(struct admit_index_table *t, uint64_t h)
{
	return &t->bucket[h & (t->nbuckets - 1)];
}

/*
 * The entry of key in t, or NULL.  With where, *where is set to the chain
 * word that holds it, or to the chain's final 0, and the whole chain is
 * walked; without, a bucket whose summary lacks h's tag ends the lookup at
 * once.  Safe in a read-side section and for the writer alike.
 */
static inline struct entry *
admit_index_find(struct admit_index_table *t, uint64_t h, const void *key,
                 size_t klen, _Atomic uintptr_t **where)
{
	_Atomic uintptr_t *p = admit_index_bucket(t, h);
	uintptr_t w = admit_rcu_deref(p);
	struct entry *e;

	if (ADMIT_INDEX_TAGS && !where && !(w & admit_index_tag(h)))
		return NULL;
	/* An hnext word is an address alone. */
	for (e = admit_index_entry(w); e;
	     e = (struct entry *)admit_rcu_deref(p)) {
		if (admit_entry_klen_is(e, klen) &&
		    admit_index_same_key(e->data, key, klen))
			break;
		p = &e->hnext;
	}
	if (where)
		*where = p;
	return e;
}

/*
 * A reader's lookup, in a read-side section: true with *out the entry or
 * NULL for a miss that stands; false when a grow moved chains around the
 * miss, which the caller retries once the grow is over (it runs under the
 * writers' lock).  The chain loads are acquire, so the second load of
 * `resizing` cannot move before them, and one that read a relinked pointer
 * also sees the odd count stored before it (Boehm, "Can seqlocks get along
 * with programming language memory models?").
 */
static inline bool
admit_index_read(struct admit_index *ix, uint64_t h, const void *key,
                 size_t klen, struct entry **out)
{
	/* stripe.h's one-stripe reader: the stripe's value, even (no grow
	 * under way) before the chains are read, unchanged after a miss. */
	uint32_t v = stripe_peek(&ix->resizing);

	if (v & 1)
		return false;
	*out = admit_index_find(admit_rcu_deref(&ix->table), h, key, klen, NULL);
	return *out || stripe_unchanged(&ix->resizing, v);
}

/*
 * A reader's requests, in a read-side section, for the lines a lookup of h
 * reads, so that a batch of lookups waits for its misses together: first
 * h's bucket; later, once that line has come, the first entry of its chain
 * (both of its lines: an entry of a short key and value spans two at
 * most), unless the bucket's summary says the key is not there.  Each only
 * loads and prefetches: a stale or wrong guess costs a wasted request,
 * never a wrong result.
 */
static inline void
admit_index_prefetch_bucket(struct admit_index *ix, uint64_t h)
{
	__builtin_prefetch(admit_index_bucket(admit_rcu_deref(&ix->table), h));
}

static inline void
admit_index_prefetch_chain(struct admit_index *ix, uint64_t h)
{
	struct admit_index_table *t = admit_rcu_deref(&ix->table);
	uintptr_t w = admit_rcu_deref(admit_index_bucket(t, h));
	const char *e = (const char *)admit_index_entry(w);

	if (e && (!ADMIT_INDEX_TAGS || (w & admit_index_tag(h)))) {
		__builtin_prefetch(e);
		__builtin_prefetch(e + 64);
	}
}

/* The writer's view of the table. */
static inline struct admit_index_table *
admit_index_table_locked(struct admit_index *ix)
{
	/* relaxed: only the writer stores it. */
	return atomic_load_explicit(&ix->table, memory_order_relaxed);
}

/* Requests the line of h's bucket in the current table, which the
 * writer's lookup of h reads first. */
static inline void
admit_index_prefetch_locked(struct admit_index *ix, uint64_t h)
{
	__builtin_prefetch(admit_index_bucket(admit_index_table_locked(ix), h));
}

/* The writer's lookup: admit_index_find on the current table. */
static inline struct entry *
admit_index_find_locked(struct admit_index *ix, uint64_t h, const void *key,
                        size_t klen, _Atomic uintptr_t **where)
{
	return admit_index_find(admit_index_table_locked(ix), h, key, klen,
	                        where);
}

/* Links e (filled, unpublished, admit_index_taggable) at where, a chain's
 * final 0 found by admit_index_find_locked(ix, h, ...), and adds h's tag
 * to the chain's summary. */
void admit_index_insert_locked(struct admit_index *ix, _Atomic uintptr_t *where,
                               struct entry *e, uint64_t h);

/* Puts e (filled, unpublished, admit_index_taggable, old's key) in old's
 * place, where holding old: readers that hold old still read old, whole. */
void admit_index_replace_locked(_Atomic uintptr_t *where, struct entry *old,
                                struct entry *e);

/* Unlinks e; readers in a section may still hold it.  An entry filed
 * under a hash other than its key's (a caller's wrong one) is looked for
 * in every bucket. */
void admit_index_remove_locked(struct admit_index *ix, struct entry *e);

/* Doubles the table when it holds more than `entries` > buckets (only a
 * cache bounded by bytes alone gets there).  Out of memory it keeps the old
 * table: longer chains, still correct.  An entry whose key's hash does not
 * name the bucket it is in (filed under a wrong hash) stays in the bucket
 * of the same number, where a lookup with the wrong hash may still find
 * it. */
void admit_index_grow_locked(struct admit_index *ix, uint64_t entries);

/* Buckets in the current table (for tests). */
size_t admit_index_buckets(struct admit_index *ix);

/* Whether every bucket's summary is exactly its chain's tags (for tests;
 * the writer's side). */
bool admit_index_check_locked(struct admit_index *ix);

#endif /* ADMIT_CACHE_INDEX_H */
