/*
 * admit/lru.h - a sharded LRU cache of byte strings whose admission is
 * decided by TinyLFU (W-TinyLFU, Einziger, Eden, Friedman, Manes).
 *
 * Keys and values are any bytes, any length including 0; the cache keeps its
 * own copies.  Capacity is a number of entries, a number of bytes, or both.
 *
 * Policies (struct admit_lru_config.policy):
 *   ADMIT_LRU_ADAPTIVE  (default) a window LRU in front of a segmented main
 *                       LRU (probation + protected, protected 80 % of main);
 *                       a key leaving the window enters main only if TinyLFU
 *                       rates it above main's victim.  It starts with a 1 %
 *                       window and picks its configuration by miniature
 *                       simulation (Waldspurger et al., USENIX ATC 2017):
 *                       8 small caches run the same policy on a hash-sampled
 *                       subset of the keys (all keys up to 2048 entries;
 *                       above, about 2048 entries each), with windows of 0,
 *                       1, 5, 20, 50, 80 % with admission, 20 % without, and
 *                       plain LRU; every period (one mini cache's capacity
 *                       in sampled gets, at least 1000) their hit counts,
 *                       decayed by 0.9, are compared, and the cache moves to
 *                       the best when it beats the current one by 0.5 point.
 *                       Memory: about 5.5 bytes per entry at 131072 entries,
 *                       a constant 0.7 MB above (stats: sim_bytes).
 *   ADMIT_LRU_WTINYLFU  the same with a fixed window (window_percent).
 *   ADMIT_LRU_TINYLFU   one LRU list; a new key is admitted only if TinyLFU
 *                       rates it above the LRU victim.
 *   ADMIT_LRU_PLAIN     exact LRU, no admission.
 *
 * Concurrency: the cache is split into shards by key hash; each shard has a
 * mutex over its lists and counters.  set, delete and stats take the key's
 * shard mutex (stats visits the shards one after another); no call takes a
 * lock shared by all shards.  A get takes no shard mutex in the common case:
 * it finds the key through an RCU-protected index (liburcu, urcu-bp flavour),
 * copies the value out, and queues the access in a small per-shard buffer
 * that the next caller holding the shard mutex applies, in order, to the
 * LRU order and the counters.  A get takes the
 * mutex only when that buffer is full (to empty it) or when it meets a grow
 * of the shard's index (caches bounded by bytes alone); otherwise it never
 * waits for a set of the same shard.  One thread alone sees exactly the
 * results of a fully locked cache.  ADMIT_LRU_ADAPTIVE's simulation is
 * shared by all shards behind a mutex of its own that a get or set only
 * tries (a sampled request that finds it busy is not simulated), and the
 * configuration it picks is applied by each shard under its own mutex.
 * The TinyLFU frequency sketch is shared:
 * its doorkeeper is lock-free, its frequency store lock-striped, so a hit's
 * record may wait briefly on another thread's in the same stripes
 * (doc/design.md §7).
 *
 * Memory: a replaced, deleted or evicted entry is freed only after an RCU
 * grace period (no get can still be reading it), in batches, by a later call
 * on its shard; until then it is not counted in entries or bytes.  Threads
 * need no registration: urcu-bp registers each on its first get.
 * admit_lru_free waits for every pending reclamation (rcu_barrier).
 */
#ifndef ADMIT_LRU_H
#define ADMIT_LRU_H

#include <stddef.h>
#include <stdint.h>

#include <admit/status.h>
#include <admit/tinylfu.h>

#ifdef __cplusplus
extern "C" {
#endif

struct admit_lru;

enum admit_lru_policy {
	ADMIT_LRU_ADAPTIVE = 0,
	ADMIT_LRU_WTINYLFU,
	ADMIT_LRU_TINYLFU,
	ADMIT_LRU_PLAIN,
};

/* Bytes charged per entry on top of its key and value, so that a byte
 * capacity also bounds the memory of many tiny entries. */
#define ADMIT_LRU_ENTRY_OVERHEAD 64u

/* Upper bounds admit_lru_new accepts. */
#define ADMIT_LRU_MAX_SHARDS 4096u
#define ADMIT_LRU_MAX_CAPACITY (UINT64_C(1) << 32)  /* entries */
#define ADMIT_LRU_MAX_BYTES (UINT64_C(1) << 48)

struct admit_lru_config {
	uint64_t capacity;        /* max entries; 0 = no entry limit */
	uint64_t capacity_bytes;  /* max bytes (key + value + overhead per
	                           * entry); 0 = no byte limit.  At least one of
	                           * the two limits is required. */
	enum admit_lru_policy policy;
	unsigned window_percent;  /* ADMIT_LRU_WTINYLFU's window, 1..99;
	                           * 0 = 1 %.  Ignored by other policies. */
	unsigned shards;          /* power of two <= ADMIT_LRU_MAX_SHARDS;
	                           * 0 = default (16, fewer for a tiny
	                           * capacity).  1 gives exact global order. */
	uint64_t seed;            /* hash and admission seed; 0 = random */
	const struct admit_tinylfu_config *tinylfu;
	                          /* the admission's sample size (its aging
	                           * period), warm threshold
	                           * and random chance; NULL = their defaults.
	                           * Its cache_capacity and seed are ignored
	                           * (this config's are used); read only during
	                           * admit_lru_new.  Ignored by ADMIT_LRU_PLAIN. */
};

struct admit_lru_stats {
	uint64_t hits;      /* gets that found their key */
	uint64_t misses;    /* gets that did not */
	uint64_t admitted;  /* candidates TinyLFU let in over a victim */
	uint64_t rejected;  /* candidates TinyLFU turned away */
	uint64_t evicted;   /* resident entries removed to make room */
	uint64_t entries;   /* entries held now */
	uint64_t bytes;     /* bytes charged now (key + value + overhead) */
	uint64_t window;    /* current window capacity, summed over shards, in
	                     * entries (in bytes when only capacity_bytes is
	                     * set) */
	uint64_t filter_entries; /* keys TinyLFU counts now (0 for PLAIN) */
	uint64_t filter_slots;   /* its frequency store's slots: entries /
	                          * slots is the filter load */
	uint64_t sim_bytes;      /* ADAPTIVE: bytes of its miniature
	                          * simulation (0 for other policies) */
	uint64_t sim_switches;   /* ADAPTIVE: times the simulation moved the
	                          * cache to another configuration */
};

/*
 * Creates a cache.  The capacity is split evenly over the shards.
 * Errors: ADMIT_EINVAL for a NULL argument, no capacity, a capacity above
 * ADMIT_LRU_MAX_CAPACITY or ADMIT_LRU_MAX_BYTES, an unknown policy,
 * window_percent > 99, shards not a power of two or above
 * ADMIT_LRU_MAX_SHARDS or above the entry capacity, a tinylfu config that
 * admit_tinylfu_new_config rejects; ADMIT_NOMEM.  *out is written only on
 * success.
 * Thread-safety: any thread.
 */
enum admit_status admit_lru_new(const struct admit_lru_config *cfg,
                                struct admit_lru **out);

/*
 * Frees the cache and every entry, after waiting for the reclamation still
 * pending (rcu_barrier).  NULL is a no-op.
 * Thread-safety: no other call on this cache may be running or follow; not
 * from an RCU read-side section or call_rcu callback.
 */
void admit_lru_free(struct admit_lru *c);

/*
 * Looks key up.  When found, its value is copied into buf and *vlen is set to
 * its length; the hit is counted, the key is marked recently used and its
 * frequency recorded.  When the value is longer than bufsize, nothing is
 * copied, nothing is counted or moved, *vlen is set to the length needed and
 * ADMIT_FULL is returned: call again with a big enough buffer.  buf may be
 * NULL when bufsize is 0 (a way to ask for the length).
 * The value copied is the one a set stored, whole, even while another
 * thread replaces or deletes the key.  The hit or miss is counted, and the
 * entry moved, when the shard's buffer of accesses is next applied, before
 * any later set, delete or stats sees the shard.
 * Errors: ADMIT_NOTFOUND (a miss, counted; record the key's frequency by
 * calling admit_lru_set when you fetch it), ADMIT_FULL (buffer too small),
 * ADMIT_EINVAL (c or vlen NULL, key NULL with klen > 0, buf NULL with
 * bufsize > 0).
 * Thread-safety: any thread; takes the key's shard mutex only when the
 * shard's buffer of accesses is full or its index is growing; a hit's
 * TinyLFU record may take two frequency-store stripes and wait out an
 * aging (admit_tinylfu_record()); ADMIT_LRU_ADAPTIVE tries (never waits
 * for) its simulation's mutex for a sampled key.
 */
enum admit_status admit_lru_get(struct admit_lru *c, const void *key,
                                size_t klen, void *buf, size_t bufsize,
                                size_t *vlen);

/*
 * Stores a copy of key -> value, replacing the key's value if present, and
 * records the key's frequency.  Storing may evict: the entry leaving the
 * window (or, without a window, the new entry) competes with main's LRU
 * victim, and the one TinyLFU rates lower leaves.
 * Returns ADMIT_OK when the new value is in the cache; ADMIT_REJECTED when
 * admission turned the new entry itself away (any old value of the key is
 * gone too); ADMIT_FULL when the entry alone is larger than a shard's byte
 * capacity (the cache is unchanged); ADMIT_NOMEM (the cache is unchanged);
 * ADMIT_EINVAL (c NULL, key or value NULL with a length > 0).
 * Thread-safety: any thread; takes the key's shard mutex only (and tries
 * the simulation's, as admit_lru_get).
 */
enum admit_status admit_lru_set(struct admit_lru *c, const void *key,
                                size_t klen, const void *value, size_t vlen);

/*
 * Removes key.  Errors: ADMIT_NOTFOUND, ADMIT_EINVAL (c NULL, key NULL with
 * klen > 0).
 * Thread-safety: any thread; takes the key's shard mutex only.
 */
enum admit_status admit_lru_delete(struct admit_lru *c, const void *key,
                                   size_t klen);

/*
 * Fills *out with the counters summed over all shards.  Each shard is read
 * under its own mutex, so under concurrent use the sum mixes moments.
 * Errors: ADMIT_EINVAL (a NULL argument).
 * Thread-safety: any thread.
 */
enum admit_status admit_lru_stats(struct admit_lru *c,
                                  struct admit_lru_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* ADMIT_LRU_H */
