/*
 * admit/lru.h - a sharded LRU cache of byte strings whose admission is
 * decided by TinyLFU (W-TinyLFU, Einziger, Eden, Friedman, Manes).
 *
 * Keys and values are any bytes, any length including 0; the cache keeps its
 * own copies.  Capacity is a number of entries, a number of bytes, or both.
 *
 * Policies (struct admit_lru_config.policy):
 *   ADMIT_LRU_ADAPTIVE  (default) one of three families over the same
 *                       lists, chosen by miniature simulation (Waldspurger
 *                       et al., USENIX ATC 2017): W-TinyLFU (a window LRU
 *                       in front of a segmented main LRU, protected 80 %
 *                       of main; a key leaving the window enters main only
 *                       if TinyLFU rates it above main's victim), LIRS
 *                       (Jiang & Zhang, SIGMETRICS 2002; 1 % of the cache
 *                       for resident HIR blocks, ghosts of evicted keys)
 *                       or ARC (Megiddo & Modha, FAST 2003; a list of keys
 *                       seen once and one of keys seen again, whose split
 *                       the ghosts' hits move).
 *                       11 small caches run the same policy on a
 *                       hash-sampled subset of the keys (all keys up to
 *                       2048 entries; above, about 2048 entries each):
 *                       windows of 0, 1, 5, 20, 50, 80 % with admission,
 *                       20 % without, plain LRU, 1 % with TinyLFU steady
 *                       (no aging, no admission by chance), LIRS and
 *                       ARC.  It
 *                       runs plain LRU until a key comes back or a key
 *                       is set that no get missed (a load), then LIRS,
 *                       and moves to the best (a tie to W-TinyLFU 1 % or
 *                       LRU, the guard's two) when it beats
 *                       the current one by 0.5 point (2 into or out of
 *                       LIRS)
 *                       and by twice its sampling error, and undoes a move
 *                       after which its own hits fell.  A guard
 *                       compares its own hits since the start with those
 *                       of W-TinyLFU 1 % and LRU (simulated exactly; above
 *                       2048 entries on the sampled keys) and moves it to
 *                       the one it trails by over a tenth of a point
 *                       beyond the sampling error (above 2048 entries,
 *                       that of a sample of keys), unless the simulation
 *                       rates its current configuration as well
 *                       (doc/hit-ratio.md, "The guard": what that bounds,
 *                       at what confidence, and its limits).  A move
 *                       keeps every entry.  Memory: about 8.9 bytes per entry at 131072
 *                       entries, a constant 1.16 MB above (stats:
 *                       sim_bytes), plus 8 to 16 bytes per entry of ghosts.
 *   ADMIT_LRU_WTINYLFU  the same with a fixed window (window_percent).
 *   ADMIT_LRU_TINYLFU   one LRU list; a new key is admitted only if TinyLFU
 *                       rates it above the LRU victim.
 *   ADMIT_LRU_PLAIN     exact LRU, no admission.
 *
 * Concurrency: the cache is split into shards by key hash; each shard has a
 * mutex over its lists and counters.  set, delete and stats take the key's
 * shard mutex (stats visits the shards one after another); no call takes a
 * lock shared by all shards.  A get takes no shard mutex in the common case:
 * it finds the key through an RCU-protected index (liburcu, urcu-bp
 * flavour), copies the value out, and, unless the hit is quiet (below),
 * queues the access in a small per-shard buffer of the calling thread's,
 * applied in order to the LRU order and the counters by the same thread's
 * next set, delete or compute of the shard, by its own read that fills
 * half the buffer, or by any stats call or walk (which apply every
 * thread's).  A
 * quiet hit is one on an entry already near the most recently used end of
 * its list (among the quarter of its segment's entries moved last, in a
 * segment where a hit only moves its entry to that end; in LIRS, among the
 * sixteenth of the LIR blocks moved last): it writes nothing the other
 * threads read, moves nothing and records no frequency, and is
 * only counted, in a counter of the calling thread's (as memcached moves an
 * item at most once a minute and CacheLib once per lruRefreshTime; here the
 * interval is a position, not a time).  A miss is only counted too.
 * ADMIT_LRU_PLAIN and ADMIT_LRU_WTINYLFU have no quiet hits (they keep exact
 * order), nor has ADMIT_LRU_ADAPTIVE of up to 2,048 entries while it runs
 * plain LRU or W-TinyLFU's 1 % window (the configurations its guard names:
 * above); a larger adaptive cache, whose simulation samples its keys, runs
 * every configuration with quiet hits.  A get takes the
 * mutex only when that buffer is full (to empty it) or when it meets a grow
 * of the shard's index (caches bounded by bytes alone); otherwise it never
 * waits for a set of the same shard.  One thread alone sees the same results
 * in every run (whether a hit is quiet depends on the order the shard has
 * applied, which may lag the thread's own reads by up to a buffer; without
 * quiet hits, exactly the results of a fully locked cache).
 * ADMIT_LRU_ADAPTIVE's simulation is shared by all shards behind a mutex of
 * its own that a get or set only tries (a sampled request that finds it busy
 * is not simulated), and the configuration it picks is applied by each shard
 * under its own mutex.  The TinyLFU frequency sketch is shared and
 * lock-free (a count-min sketch whose four counters for a key lie in one
 * cache line, raised by compare-and-swap).  A hit that is
 * not quiet is recorded in it by whichever thread next drains the shard's
 * buffer of accesses, under the shard mutex (BP-Wrapper), not by the get;
 * only such a hit of a key ADMIT_LRU_ADAPTIVE's simulation samples (every
 * key below 2048 entries, about 2048 keys' worth above) is recorded by the
 * get itself (doc/design.md §7).
 *
 * Memory: a replaced, deleted or evicted entry is freed only after an RCU
 * grace period (no get can still be reading it), in batches, by a later call
 * on its shard; until then it is not counted in entries or bytes.  Threads
 * need no registration: urcu-bp registers each on its first get.
 * admit_lru_free waits for every pending reclamation (rcu_barrier).
 */
#ifndef ADMIT_LRU_H
#define ADMIT_LRU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <admit/status.h>
#include <admit/tinylfu.h>

#ifdef __cplusplus
extern "C" {
#endif

ADMIT_API_BEGIN

struct admit_lru;

enum admit_lru_policy {
	ADMIT_LRU_ADAPTIVE = 0,
	ADMIT_LRU_WTINYLFU,
	ADMIT_LRU_TINYLFU,
	ADMIT_LRU_PLAIN,
};

/* The bytes an entry's header takes at most, besides its key and value.
 * What an entry counts against a byte capacity is more:
 * admit_lru_entry_charge. */
#define ADMIT_LRU_ENTRY_OVERHEAD 64u

/* The longest key and value an entry holds (4 MiB - 1 and 4 GiB - 1
 * bytes; on a 32-bit host also at most SIZE_MAX / 4): a set, compute or
 * load of a longer one fails with ADMIT_ETOOBIG, and the cache is
 * unchanged.  A lookup or delete of a longer key is a miss. */
#define ADMIT_LRU_MAX_KEY_LEN ((1u << 22) - 1)
#define ADMIT_LRU_MAX_VALUE_LEN UINT32_MAX

/* Upper bounds admit_lru_new accepts. */
#define ADMIT_LRU_MAX_SHARDS 4096u
#define ADMIT_LRU_MAX_CAPACITY (UINT64_C(1) << 32)  /* entries */
#define ADMIT_LRU_MAX_BYTES (UINT64_C(1) << 48)

/* Why an entry left the cache, as a removal listener is told. */
enum admit_lru_cause {
	ADMIT_LRU_EXPLICIT = 0, /* admit_lru_delete, admit_lru_compute's
	                         * ADMIT_LRU_REMOVE, or a set or compute whose
	                         * expiry time had already passed */
	ADMIT_LRU_REPLACED,     /* a set or compute stored a new value for its
	                         * key: the listener sees the old value */
	ADMIT_LRU_EXPIRED,      /* its expiry time came */
	ADMIT_LRU_EVICTED,      /* removed to make room, as the policy's
	                         * victim (admit_lru_set_capacity too) */
	ADMIT_LRU_REJECTED,     /* lost an admission contest as the candidate:
	                         * a new entry turned away (its set returned
	                         * ADMIT_REJECTED) or one leaving the window */
	ADMIT_LRU_CLEARED,      /* admit_lru_clear */
};
#define ADMIT_LRU_CAUSES 6      /* the number of causes above */

/*
 * A removal listener (admit_lru_config.listener): told of each entry that
 * leaves the cache, once, with its key, its value and why.  key and value
 * point into the removed entry (either may be NULL when its length is 0)
 * and stay valid until the listener returns; keep no pointer into them.
 * See admit_lru_config.listener for when it runs and what it may call.
 */
typedef void (*admit_lru_listener_t)(const void *key, size_t klen,
                                     const void *value, size_t vlen,
                                     enum admit_lru_cause cause, void *arg);

struct admit_lru_config {
	uint64_t capacity;        /* max entries; 0 = no entry limit */
	uint64_t capacity_bytes;  /* max bytes, the sum of the entries'
	                           * admit_lru_entry_charge (what each costs in
	                           * memory); 0 = no byte limit.  At least one
	                           * of the two limits is required. */
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
	uint64_t (*clock)(void *arg);
	                          /* the clock of entries' expiry times, in
	                           * nanoseconds, never going back; NULL =
	                           * CLOCK_MONOTONIC_COARSE (a few ms steps;
	                           * CLOCK_MONOTONIC where the system has no
	                           * coarse clock).  Called from any thread
	                           * that uses the cache, with or without a
	                           * shard mutex held (tests give a fake one). */
	void *clock_arg;          /* clock's argument */
	admit_lru_listener_t listener;
	                          /* NULL = none.  Called for every entry
	                           * that leaves the cache, after it has left
	                           * the index (no get can find it any more),
	                           * with no lock of the cache held, in the
	                           * thread of the writing call (set, set_*,
	                           * delete, compute, get_or_load, expire,
	                           * stats, clear, set_capacity, foreach) on
	                           * the entry's shard that removed it, or
	                           * that next takes that shard's mutex when a
	                           * get's maintenance removed it; the entries
	                           * still pending at admit_lru_free are told
	                           * there.  Entries resident at admit_lru_free
	                           * are not (admit_lru_clear first if every
	                           * value needs it).  It runs in many threads
	                           * at once.  It may call any admit_lru
	                           * function on this cache but admit_lru_free
	                           * (a set from it may remove more entries,
	                           * told before that set returns); it should
	                           * be short: until it returns its entries'
	                           * memory is not freed. */
	void *listener_arg;       /* listener's argument */
};

struct admit_lru_stats {
	uint64_t hits;      /* gets that found their key */
	uint64_t misses;    /* gets that did not */
	uint64_t admitted;  /* candidates TinyLFU let in over a victim */
	uint64_t rejected;  /* candidates TinyLFU turned away */
	uint64_t evicted;   /* resident entries removed to make room */
	uint64_t entries;   /* entries held now */
	uint64_t bytes;     /* bytes charged now (admit_lru_entry_charge of
	                     * each entry) */
	uint64_t window;    /* current window capacity, summed over shards, in
	                     * entries (in bytes when only capacity_bytes is
	                     * set) */
	uint64_t filter_entries; /* about the keys the frequency sketch
	                          * counts now: its non-zero counters / 4
	                          * (0 for PLAIN); a walk of the sketch */
	uint64_t filter_slots;   /* its counters / 4, the keys it is sized
	                          * for: entries / slots is its load */
	uint64_t expired;   /* entries removed because their time had come */
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
 * What an entry of a klen-byte key and a vlen-byte value counts against
 * capacity_bytes: what it costs in memory, so that capacity_bytes bounds
 * the memory the entries take.  That is the allocation holding its header
 * (at most ADMIT_LRU_ENTRY_OVERHEAD bytes), key and value, rounded up to
 * the allocator's size class (jemalloc's, or libc's chunk), plus the
 * entry's share of its shard's index (16 bytes on a 64-bit host), and a
 * seventh of these two for its share of the tables sized at creation from
 * the capacity (the frequency sketch and the adaptive policy's ghosts, up
 * to an eighth of capacity_bytes).  The same
 * for the same lengths for the life of the process; it depends on the
 * allocator the library was built with, so compare stats' bytes with sums
 * of this, not with key + value + a constant.  A cache's fixed tables
 * (its shards and its simulation's, about 1 MiB) are not charged.
 * Returns SIZE_MAX for a key longer than ADMIT_LRU_MAX_KEY_LEN or a value
 * longer than ADMIT_LRU_MAX_VALUE_LEN (such an entry is refused with
 * ADMIT_ETOOBIG).
 * Thread-safety: any thread.
 */
size_t admit_lru_entry_charge(size_t klen, size_t vlen);

/*
 * Looks key up.  When found, its value is copied into buf and *vlen is set to
 * its length; the hit is counted and, unless it is quiet (above), the key is
 * marked recently used and its frequency recorded.  When the value is longer
 * than bufsize, nothing is copied, nothing is counted or moved, *vlen is set
 * to the length needed and
 * ADMIT_EBUFFER is returned: call again with a big enough buffer.  buf may
 * be NULL when bufsize is 0 (a way to ask for the length).
 * The value copied is the one a set stored, whole, even while another
 * thread replaces or deletes the key.  The hit or miss is counted at once or
 * when the shard's buffer of accesses is next applied, and the entry
 * moved then, before any later set, delete or stats sees the shard.
 * Errors: ADMIT_NOTFOUND (a miss, counted; record the key's frequency by
 * calling admit_lru_set when you fetch it), ADMIT_EBUFFER (buffer too
 * small), ADMIT_EINVAL (c or vlen NULL, key NULL with klen > 0, buf NULL with
 * bufsize > 0).
 * Thread-safety: any thread; takes the key's shard mutex only when the
 * shard's buffer of accesses is full or its index is growing, and then
 * applies and records the buffered accesses; the TinyLFU record of a hit of
 * a key ADMIT_LRU_ADAPTIVE samples is made in the get and may take two
 * frequency-store stripes and wait out an aging (admit_tinylfu_record());
 * ADMIT_LRU_ADAPTIVE tries (never waits for) its simulation's mutex for a
 * sampled key.
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
 * gone too); ADMIT_ETOOBIG when the entry alone is larger than a shard's byte
 * capacity, or the key or value is longer than ADMIT_LRU_MAX_KEY_LEN or
 * ADMIT_LRU_MAX_VALUE_LEN (the cache is unchanged); ADMIT_NOMEM (the cache is unchanged);
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

/*
 * n gets of 8-byte keys held in an array (an integer id, or any 8 bytes),
 * with the memory reads of a batch overlapped: the index buckets and
 * entries of up to 16 keys are requested before the first is read, so a
 * batch waits for its cache misses together rather than one after another.
 * keys[i] is looked up and counted exactly as admit_lru_get(c, &keys[i], 8,
 * ...) would be, in the order of the array: out[i] = ADMIT_OK with the
 * value copied to (unsigned char *)values + i * vsize and vlens[i] set to
 * its length; ADMIT_NOTFOUND (a miss, counted) with vlens[i] = 0; or
 * ADMIT_EBUFFER when the value is longer than vsize, with vlens[i] the
 * length needed, nothing copied and nothing counted.
 * Returns ADMIT_OK when the n gets were made (n = 0: nothing to do), or
 * ADMIT_EINVAL with nothing done: c, vlens or out NULL, keys NULL with n >
 * 0, values NULL with n > 0 and vsize > 0, or n * vsize beyond SIZE_MAX.
 * Thread-safety: any thread, as admit_lru_get; the gets are n gets, not one
 * atomic snapshot: a write by another thread may land between two of them.
 */
enum admit_status admit_lru_get_many_u64(struct admit_lru *c, size_t n,
                                         const uint64_t *keys, void *values,
                                         size_t vsize, size_t *vlens,
                                         enum admit_status *out);

/*
 * admit_lru_get_many_u64 for keys of any length: keys[i] of klens[i]
 * bytes is looked up and counted as admit_lru_get(c, keys[i], klens[i],
 * ...) would be; the results, the batches and the thread-safety are
 * admit_lru_get_many_u64's.  Only the first two lines of each key's entry
 * are requested ahead: a long key's other lines are read as a get reads
 * them.
 * Returns ADMIT_OK, or ADMIT_EINVAL with nothing done: as
 * admit_lru_get_many_u64, or klens NULL with n > 0, or a keys[i] NULL
 * with klens[i] > 0 (every key is checked before the first is read).
 */
enum admit_status admit_lru_get_many(struct admit_lru *c, size_t n,
                                     const void *const *keys,
                                     const size_t *klens, void *values,
                                     size_t vsize, size_t *vlens,
                                     enum admit_status *out);

/* ---- for embedders: peeks, zero-copy reads, atomic updates ------------- */

/*
 * Looks key up like admit_lru_get, copying its value into buf, but the read
 * is not an access: no hit or miss is counted, the entry does not move and
 * TinyLFU records nothing (a monitoring or debugging read that leaves the
 * policy as it was).  Sizes and errors as admit_lru_get: ADMIT_NOTFOUND,
 * ADMIT_EBUFFER (*vlen set to the length needed, nothing copied), ADMIT_EINVAL
 * (c or vlen NULL, key NULL with klen > 0, buf NULL with bufsize > 0).
 * Thread-safety: any thread; takes no lock (it waits only when it meets a
 * grow of the shard's index, as admit_lru_get).
 */
enum admit_status admit_lru_peek(struct admit_lru *c, const void *key,
                                 size_t klen, void *buf, size_t bufsize,
                                 size_t *vlen);

/*
 * A reader of a value lent by admit_lru_get_with: value points to vlen bytes
 * inside the cache (value may be NULL when vlen is 0).
 */
typedef void (*admit_lru_reader_t)(const void *value, size_t vlen, void *arg);

/*
 * Looks key up like admit_lru_get, but instead of copying the value, lends
 * it: fn(value, vlen, arg) is called once, inside the RCU read-side section
 * that found the entry, so the bytes stay valid and whole (even while
 * another thread replaces, deletes or evicts the key) until fn returns.
 * The access is counted exactly as a get's: a hit, a move and a TinyLFU
 * record, or a miss (fn not called).
 * fn may read the bytes and copy any of them (into a socket buffer, say);
 * it must keep no pointer into them after it returns, must not block (it
 * holds up every reclamation of every admit_lru in the process, as a long
 * read-side section does), and must not call any admit_lru function on this
 * cache.
 * Errors: ADMIT_NOTFOUND (a miss), ADMIT_EINVAL (c or fn NULL, key NULL with
 * klen > 0).
 * Thread-safety: any thread, as admit_lru_get; fn runs in the calling
 * thread, holding no lock of the cache.
 */
enum admit_status admit_lru_get_with(struct admit_lru *c, const void *key,
                                     size_t klen, admit_lru_reader_t fn,
                                     void *arg);

/* What an updater (admit_lru_compute) decides. */
enum admit_lru_verdict {
	ADMIT_LRU_KEEP = 0,  /* refuse: the key stays as it was (present or
	                      * absent) */
	ADMIT_LRU_STORE,     /* store the value written into the buffer of the
	                      * last admit_lru_update_alloc call */
	ADMIT_LRU_REMOVE,    /* delete the key (nothing to do if absent) */
	ADMIT_LRU_STORE_FORCE, /* as STORE, but the new entry is admitted
	                      * without TinyLFU's contest: it takes the
	                      * place of the victims it meets, however
	                      * rarely the key was seen (for a write whose
	                      * reply promises the value is there: an
	                      * add-if-absent used as a lock, a
	                      * compare-and-set) */
};

/*
 * What an updater sees of the key.  Only the library creates one: an
 * updater gets a pointer to it, valid until the updater returns.
 */
struct admit_lru_update {
	const void *old;     /* the current value, valid until the updater
	                      * returns; NULL when absent or empty */
	size_t old_len;      /* its length; 0 when absent */
	bool found;          /* whether the key is present (an expired entry
	                      * is absent) */
	uint64_t old_expires;/* its expiry time (admit_lru_now's clock); 0 =
	                      * never, or absent */
	uint64_t expires;    /* the stored value's expiry time: set to
	                      * old_expires before the updater runs, which
	                      * may change it (0 = never; a time already
	                      * past makes ADMIT_LRU_STORE a removal) */
};

/* An updater: reads up, decides, and for ADMIT_LRU_STORE writes the new
 * value into a buffer from admit_lru_update_alloc(up, ...). */
typedef enum admit_lru_verdict (*admit_lru_updater_t)(
	struct admit_lru_update *up, void *arg);

/*
 * Within an updater only: returns a buffer of vlen bytes for the new value
 * (vlen may be 0), inside the entry that ADMIT_LRU_STORE will publish, so
 * the value is written once, in place (old and the buffer may be read and
 * written together: an append copies old, then its suffix).  A later call
 * replaces the buffer of an earlier one.  Returns NULL when up is NULL, the
 * entry would be larger than a shard's byte capacity or vlen longer than
 * ADMIT_LRU_MAX_VALUE_LEN (admit_lru_compute then returns ADMIT_ETOOBIG on ADMIT_LRU_STORE), or memory
 * runs out (ADMIT_NOMEM).
 * Thread-safety: only from the updater that up was given to.
 */
void *admit_lru_update_alloc(struct admit_lru_update *up, size_t vlen);

/*
 * Atomically reads, modifies and writes the entry of key: with the key's
 * shard mutex held, fn(up, arg) sees the current value (or its absence) and
 * returns a verdict, which is applied before the mutex is released.  No
 * set, delete or other compute of the key can come between the value fn saw
 * and what it decided; a get sees either the whole old value or the whole
 * new one (as for admit_lru_set).  Increment, compare-and-set, append and
 * add-if-absent are each one call.
 * It is one access: a hit when the key was present (counted and, unless
 * quiet as a get's hit may be, the entry made most recently used and its
 * frequency recorded once, whatever the verdict), a miss when it was absent
 * (counted; a stored new key is then recorded once and enters as
 * admit_lru_set's would, which admission may turn away, unless the verdict
 * is ADMIT_LRU_STORE_FORCE: then the entry wins every admission contest, and
 * older entries are evicted to make
 * room for it).
 * fn runs once, in the calling thread, holding the shard mutex: it must be
 * short, must not block, and must not call any admit_lru function on this
 * cache (it would wait for itself).  It keeps no pointer to up->old or to
 * the buffer after it returns.
 * Returns ADMIT_OK when the verdict was applied (KEEP, REMOVE, or STORE or
 * STORE_FORCE with the new value in the cache); ADMIT_REJECTED when the
 * stored entry was dropped at once (the key's old value is gone too, as
 * for admit_lru_set): for STORE when admission turned it away, for
 * STORE_FORCE only when the entry was itself the policy's next victim
 * (the probation segment, or in LIRS the queue of resident HIR blocks,
 * held no other entry: rare, after deletes or for an entry nearly as
 * large as the shard); ADMIT_ETOOBIG or ADMIT_NOMEM
 * when fn chose STORE or STORE_FORCE but its last
 * admit_lru_update_alloc failed (the key is unchanged); ADMIT_EINVAL for c
 * or fn NULL, key NULL with klen > 0, or an unknown verdict or a STORE
 * without a buffer (the key is unchanged; the access is still counted).
 * Thread-safety: any thread; takes the key's shard mutex only.
 */
enum admit_status admit_lru_compute(struct admit_lru *c, const void *key,
                                    size_t klen, admit_lru_updater_t fn,
                                    void *arg);

/* ---- hash once: for callers that already hashed the key --------------- */

/*
 * The hash this cache uses for key: seeded per cache (by its config's seed),
 * so it differs between caches and between runs with seed 0.  Pass it to
 * the _hashed calls below to hash each key once, and use it for your own
 * routing if you like.  Returns 0 for c NULL or key NULL with klen > 0.
 * Thread-safety: any thread; reads only what admit_lru_new wrote.
 */
uint64_t admit_lru_hash(const struct admit_lru *c, const void *key,
                        size_t klen);

/*
 * admit_lru_get, admit_lru_get_with, admit_lru_set, admit_lru_delete and
 * admit_lru_compute for a key whose hash h the caller computed with
 * admit_lru_hash(c, key, klen): the same contract, errors and
 * thread-safety, one hash fewer.  h must be that hash.  Any other value
 * does not harm the cache (its state stays consistent) but files or looks
 * the key up under the wrong hash: a get may miss a key that is there, and
 * a set may store a second copy, which calls with the same wrong h find,
 * and calls with the right one too where both hashes name one bucket (it
 * still counts against the capacity until evicted; its eviction walks its
 * shard's whole index).
 */
enum admit_status admit_lru_get_hashed(struct admit_lru *c, uint64_t h,
                                       const void *key, size_t klen,
                                       void *buf, size_t bufsize,
                                       size_t *vlen);
enum admit_status admit_lru_get_with_hashed(struct admit_lru *c, uint64_t h,
                                            const void *key, size_t klen,
                                            admit_lru_reader_t fn,
                                            void *arg);
enum admit_status admit_lru_set_hashed(struct admit_lru *c, uint64_t h,
                                       const void *key, size_t klen,
                                       const void *value, size_t vlen);
enum admit_status admit_lru_delete_hashed(struct admit_lru *c, uint64_t h,
                                          const void *key, size_t klen);
enum admit_status admit_lru_compute_hashed(struct admit_lru *c, uint64_t h,
                                           const void *key, size_t klen,
                                           admit_lru_updater_t fn,
                                           void *arg);

/* ---- expiry ----------------------------------------------------------- */

/*
 * Entries stored with an expiry time (admit_lru_set_expiring, or
 * admit_lru_compute's up->expires) expire when the cache's clock
 * (admit_lru_config.clock, CLOCK_MONOTONIC_COARSE by default, in
 * nanoseconds: read on each hit of a timed entry, so it must be cheap)
 * reaches it.  From that moment every call sees the key absent: get,
 * get_with and peek miss (a get's miss is counted), compute sees
 * found == false, delete returns ADMIT_NOTFOUND.  The entry's capacity is
 * reclaimed without anyone asking for the key: each shard keeps its timed
 * entries in a hierarchical timer wheel, and every set, compute and stats
 * of a shard first removes its entries whose time has come, to within
 * about 67 ms (the wheel's tick); admit_lru_expire does it for every shard,
 * for an embedder's maintenance thread.  Removed entries are counted in
 * stats' expired, not evicted.  Entries stored without a time never expire
 * (admit_lru_set over a timed entry drops its time, as memcached's set
 * does) and cost nothing extra; a timed entry, and any entry stored by
 * admit_lru_compute, carries a 32-byte timer beyond what
 * admit_lru_entry_charge counts (not charged to the capacity).
 */

/*
 * The cache's clock now, in nanoseconds: add a time-to-live to it to get an
 * expiry time.  0 for c NULL.
 * Thread-safety: any thread.
 */
uint64_t admit_lru_now(const struct admit_lru *c);

/*
 * admit_lru_set, with the entry expiring at expires_at (admit_lru_now's
 * clock; 0 = never, exactly admit_lru_set).  A time already past removes
 * the key and returns ADMIT_OK (stored and expired at once, as memcached
 * treats a negative expiry).  Returns and errors as admit_lru_set;
 * ADMIT_NOMEM also when the shard's timer wheel (5 KiB, made at its first
 * timed entry) cannot be allocated.
 * Thread-safety: any thread; takes the key's shard mutex only.
 */
enum admit_status admit_lru_set_expiring(struct admit_lru *c, const void *key,
                                         size_t klen, const void *value,
                                         size_t vlen, uint64_t expires_at);

/* admit_lru_set_expiring for a key hashed with admit_lru_hash (see the
 * _hashed calls above for what h must be). */
enum admit_status admit_lru_set_expiring_hashed(struct admit_lru *c,
                                                uint64_t h, const void *key,
                                                size_t klen,
                                                const void *value,
                                                size_t vlen,
                                                uint64_t expires_at);

/* ---- a value in parts: copied once ------------------------------------ */

/* One piece of a value given in parts: len bytes at data (data may be
 * NULL when len is 0). */
struct admit_lru_part {
	const void *data;
	size_t len;
};

/*
 * admit_lru_set_expiring (expires_at 0 = never, exactly admit_lru_set) of
 * the value made of the nparts pieces parts[0], parts[1], ... one after
 * another: each is copied once, straight into the new entry, so a caller
 * that puts a header of its own in front of a payload (a server's flags
 * and CAS unique before the data it received) needs no staging buffer.
 * The cache keeps no pointer to parts or their bytes.  Returns and errors
 * as admit_lru_set_expiring, and ADMIT_EINVAL also for parts NULL with
 * nparts > 0 or a part whose data is NULL with len > 0; ADMIT_ETOOBIG also
 * when the lengths add up past ADMIT_LRU_MAX_VALUE_LEN.  nparts may be 0 (an empty
 * value).
 * Thread-safety: any thread; takes the key's shard mutex only.
 */
enum admit_status admit_lru_set_parts(struct admit_lru *c, const void *key,
                                      size_t klen,
                                      const struct admit_lru_part *parts,
                                      size_t nparts, uint64_t expires_at);

/* admit_lru_set_parts for a key hashed with admit_lru_hash (see the _hashed
 * calls above for what h must be). */
enum admit_status admit_lru_set_parts_hashed(struct admit_lru *c, uint64_t h,
                                             const void *key, size_t klen,
                                             const struct admit_lru_part *parts,
                                             size_t nparts,
                                             uint64_t expires_at);

/*
 * Removes now, from every shard, the entries whose time has come (to
 * within the wheel's tick); their capacity is free at once, their memory
 * after a grace period.  Not needed for correctness: sets do it on their
 * shard as they go.  Errors: ADMIT_EINVAL (c NULL).
 * Thread-safety: any thread; takes each shard mutex in turn, one at a
 * time.
 */
enum admit_status admit_lru_expire(struct admit_lru *c);

/* ---- loads that run once per key ---------------------------------------- */

/* The load a loader (admit_lru_get_or_load) is given, to hand its value
 * to. */
struct admit_lru_load;

/*
 * A loader: fetches the value of key from where it lives (a database, a
 * file, a computation) and hands it over with admit_lru_load_value(ld,
 * ...); returns ADMIT_OK when it did, any other status for a failure
 * (which every caller waiting for this load gets back as it is; a loader
 * returning ADMIT_OK without a value fails as ADMIT_EINVAL).
 */
typedef enum admit_status (*admit_lru_loader_t)(const void *key, size_t klen,
                                                struct admit_lru_load *ld,
                                                void *arg);

/*
 * Within a loader only: copies the vlen bytes at value (NULL when vlen is
 * 0) as the loaded value, to expire at expires_at (admit_lru_now's clock;
 * 0 = never).  A later call replaces an earlier one's value.
 * Errors: ADMIT_EINVAL (ld NULL, value NULL with vlen > 0), ADMIT_ETOOBIG
 * (vlen > ADMIT_LRU_MAX_VALUE_LEN), ADMIT_NOMEM; on an error the earlier
 * value (if any) stays.
 * Thread-safety: only from the loader that ld was given to.
 */
enum admit_status admit_lru_load_value(struct admit_lru_load *ld,
                                       const void *value, size_t vlen,
                                       uint64_t expires_at);

/* admit_lru_get_or_load's flags. */
#define ADMIT_LRU_NOWAIT 1u  /* if another caller is loading the key, return
                              * ADMIT_LOADING rather than wait for it */

/*
 * Looks key up as admit_lru_get_with does (a hit lends the value to
 * fn(value, vlen, fn_arg), counted as a get's hit); on a miss loads it:
 * loader(key, klen, ld, loader_arg) runs in the calling thread, with no
 * lock of the cache held, and its value is stored as admit_lru_set_expiring
 * stores one (through admission, which may turn it away: this caller and
 * its waiters get the value anyway), then lent to fn.  At most one loader
 * per key runs at a time: a caller that misses while another loads the
 * key waits for that load and gets its result (its value lent to fn, or
 * its failure), without running the loader; with ADMIT_LRU_NOWAIT it
 * returns ADMIT_LOADING at once instead.  A failed load stores nothing;
 * the next call after it loads again.  fn runs once on success, in the
 * calling thread, with no lock of the cache held; the bytes are valid
 * until it returns.  fn may call any admit_lru function on this cache
 * but admit_lru_free; the loader may too (a get_or_load of the key it is
 * loading, from its own thread, returns ADMIT_LOADING rather than wait for
 * itself).  Loads are counted in admit_lru_stats_ex (successes,
 * failures, total time).
 * Returns ADMIT_OK (fn called), ADMIT_LOADING (NOWAIT and a load of the
 * key under way), the loader's failure status (for the loading caller and
 * every waiter), ADMIT_NOMEM (the load could not be set up, or the
 * loader's value not copied: nothing stored), ADMIT_EINVAL (c, loader or
 * fn NULL, key NULL with klen > 0, unknown flags).  A value the cache
 * cannot hold (ADMIT_ETOOBIG from the set) is still lent to fn; the
 * statuses of the store are not reported: get it again to see it stayed.
 * Thread-safety: any thread; a miss takes one of the cache's load stripes
 * (a mutex) briefly and waits on its condition variable while another
 * thread loads the key; the store takes the key's shard mutex.
 */
enum admit_status admit_lru_get_or_load(struct admit_lru *c, const void *key,
                                        size_t klen, admit_lru_loader_t loader,
                                        void *loader_arg, admit_lru_reader_t fn,
                                        void *fn_arg, unsigned flags);

/* admit_lru_get_or_load for a key hashed with admit_lru_hash (see the
 * _hashed calls above for what h must be). */
enum admit_status admit_lru_get_or_load_hashed(struct admit_lru *c, uint64_t h,
                                               const void *key, size_t klen,
                                               admit_lru_loader_t loader,
                                               void *loader_arg,
                                               admit_lru_reader_t fn,
                                               void *fn_arg, unsigned flags);

/* ---- the whole cache: capacity, walk, clear, statistics --------------- */

/*
 * Sets the cache's entry and byte capacity while it runs, split over the
 * shards as admit_lru_new splits them; 0 = no such limit, as in the
 * config.  Shrinking evicts each shard down to its new bound through the
 * policy, as sets do: its victims leave (the listener told
 * ADMIT_LRU_EVICTED, counted in evicted), and window entries that lose
 * their admission contest on the way out are told ADMIT_LRU_REJECTED
 * (counted in rejected); growing lets later sets fill it.  The unit the cache
 * weighs entries in stays that of its creation: a cache created with an
 * entry capacity needs one (capacity > 0), a cache created with a byte
 * capacity alone needs capacity_bytes > 0.  The TinyLFU sketch and
 * ADMIT_LRU_ADAPTIVE's simulation keep the size they were made for.
 * Errors: ADMIT_EINVAL (c NULL, the needed limit 0, a limit above
 * ADMIT_LRU_MAX_CAPACITY or ADMIT_LRU_MAX_BYTES, or below the number of
 * shards, where a shard would get none); the cache is then unchanged.
 * Thread-safety: any thread; takes each shard mutex in turn, one at a
 * time, for as long as its evictions take; a shard that has not yet been
 * visited keeps its old bound meanwhile.
 */
enum admit_status admit_lru_set_capacity(struct admit_lru *c, uint64_t capacity,
                                         uint64_t capacity_bytes);

/* A visitor of admit_lru_foreach: key and value point into the entry (NULL
 * when their length is 0), valid until it returns.  Returns true to go on,
 * false to stop the walk. */
typedef bool (*admit_lru_visitor_t)(const void *key, size_t klen,
                                    const void *value, size_t vlen,
                                    uint64_t expires_at, void *arg);

/*
 * Walks the entries shard by shard, in the order of their index
 * (admit_lru_shard_index), and within a shard each of its lists (the
 * window, then probation, then protected, for the policies that have
 * them) from its least to its most recently used entry: takes a shard's
 * mutex only to list its live (unexpired) entries, then calls fn(key,
 * klen, value, vlen, expires_at, arg) on each with no lock held
 * (expires_at as admit_lru_compute's old_expires: 0 = never).  What it guarantees: every
 * entry present for the whole walk is visited exactly once; an entry added,
 * replaced, removed or expired during the walk may be visited or not (a
 * replaced key possibly with its old value, never twice within a shard);
 * the walk is not an access (nothing counted, moved or recorded).  Writers
 * of a shard wait only while it is listed (a pass over its lists); fn may
 * call any admit_lru function on this cache but admit_lru_free.  While fn
 * runs, the cache's memory reclamation waits (an RCU read-side section is
 * open): keep fn short.
 * Errors: ADMIT_EINVAL (c or fn NULL), ADMIT_NOMEM (a shard's list could
 * not be allocated: the walk stops there; the entries visited so far were
 * visited).
 * Thread-safety: any thread; takes each shard mutex in turn, one at a
 * time.
 */
enum admit_status admit_lru_foreach(struct admit_lru *c, admit_lru_visitor_t fn,
                                    void *arg);

/*
 * The index, 0 .. shards - 1, of the shard that holds the keys whose hash
 * (admit_lru_hash) is h: what an embedder that saves the entries with
 * admit_lru_foreach needs to tell one shard's run from the next (the
 * order of a shard's lists says nothing about another shard's).  The same
 * for the same h for the life of the cache.  0 for c NULL.
 * Thread-safety: any thread; takes no lock.
 */
unsigned admit_lru_shard_index(const struct admit_lru *c, uint64_t h);

/*
 * Removes every entry, shard by shard, each told to the listener as
 * ADMIT_LRU_CLEARED (counted in admit_lru_stats_ex's removed, not in
 * evicted).  An entry set in a shard already cleared stays.  The counters
 * and TinyLFU's frequencies stay.
 * Errors: ADMIT_EINVAL (c NULL).
 * Thread-safety: any thread; takes each shard mutex in turn, one at a
 * time.
 */
enum admit_status admit_lru_clear(struct admit_lru *c);

/* Statistics beyond struct admit_lru_stats (which keeps its size: callers
 * allocate it), as Caffeine's CacheStats gives them. */
struct admit_lru_stats_ex {
	struct admit_lru_stats base;   /* what admit_lru_stats fills */
	uint64_t load_successes;       /* get_or_load loads that gave a value */
	uint64_t load_failures;        /* and that failed */
	uint64_t load_ns;              /* their total time, in nanoseconds
	                                * (CLOCK_MONOTONIC) */
	uint64_t removed[ADMIT_LRU_CAUSES];
	                               /* entries that left, by cause
	                                * (enum admit_lru_cause) */
	uint64_t removed_bytes[ADMIT_LRU_CAUSES];
	                               /* their bytes, as a byte capacity
	                                * charges them
	                                * (admit_lru_entry_charge) */
};

/*
 * Fills *out, whose size the caller gives (sizeof(struct
 * admit_lru_stats_ex)): base as admit_lru_stats fills it, then the rest.
 * A caller built against a shorter version of the struct gets its fields
 * only; fields this version does not know are zeroed.
 * Errors: ADMIT_EINVAL (c or out NULL, size below sizeof(struct
 * admit_lru_stats)).
 * Thread-safety: any thread; as admit_lru_stats.
 */
enum admit_status admit_lru_stats_ex(struct admit_lru *c,
                                     struct admit_lru_stats_ex *out,
                                     size_t size);


/* ---- the admission state as bytes ------------------------------------- */

/*
 * An embedder that keeps the entries across a restart (admit_lru_foreach,
 * then sets at the next start) keeps what the admission knows about keys
 * with these: the frequency sketch's counters and its place between two
 * agings, as bytes that carry their own header (format version, the
 * sketch's geometry, a fingerprint of the cache's seed, a checksum).  The
 * bytes are of use only to a cache made with the same capacity (or byte
 * capacity and entry estimate), tinylfu settings and seed: the keys' hashes
 * and the sketch's size depend on them.  Policies other than
 * ADMIT_LRU_PLAIN have a sketch; the adaptive policy's choice, the agings
 * and random admissions counted are not part of the bytes.  The bytes say
 * as much about the keys' hashes as the cache's memory does: keep them
 * where the entries are kept.
 */

/*
 * Sets *bytes to the size of the cache's admission state as
 * admit_lru_sketch_export writes it; fixed for the life of the cache.
 * Errors: ADMIT_EINVAL (c or bytes NULL), ADMIT_NOTFOUND (a cache without
 * a sketch: ADMIT_LRU_PLAIN); *bytes is then 0.
 * Thread-safety: any thread; takes no lock.
 */
enum admit_status admit_lru_sketch_size(const struct admit_lru *c,
                                        size_t *bytes);

/*
 * Writes the cache's admission state into buf (cap bytes) and its size
 * into *len.  Errors: ADMIT_EINVAL (c or len NULL), ADMIT_NOTFOUND (no
 * sketch: ADMIT_LRU_PLAIN; *len = 0), ADMIT_EBUFFER (buf NULL or cap below
 * the size, which *len then gives; nothing written).
 * Thread-safety: any thread, while others use the cache; takes no lock.
 * The counters are read one 64-bit word at a time with relaxed loads, so
 * an access counted during the copy is in it or not and the copy is not
 * one instant's: the counters are statistics, and a copy of them a few
 * accesses apart admits as the cache would.
 */
enum admit_status admit_lru_sketch_export(const struct admit_lru *c,
                                          void *buf, size_t cap, size_t *len);

/*
 * Replaces the cache's admission state with the len bytes at buf, an
 * export of a cache of the same geometry and seed, after checking all of
 * them; the entries are not touched.  Import after loading the entries:
 * their sets are counted in the sketch, and the import then puts back the
 * counts the export had.
 * Errors, all leaving the cache unchanged: ADMIT_EINVAL (c or buf NULL,
 * len 0, or an export of a cache of another geometry or seed),
 * ADMIT_NOTFOUND (no sketch: ADMIT_LRU_PLAIN), ADMIT_ECORRUPT (bytes that
 * are not such an export: truncated, altered, another format version).
 * Thread-safety: meant for a cache no other thread uses yet.  If others
 * do, nothing breaks (each word is one relaxed atomic store), but an
 * access counted during the import may be lost in it.
 */
enum admit_status admit_lru_sketch_import(struct admit_lru *c,
                                          const void *buf, size_t len);

ADMIT_API_END

#ifdef __cplusplus
}
#endif

#endif /* ADMIT_LRU_H */
