/*
 * admit/chain.h - a growable membership filter: a chain of cuckoo filters.
 *
 * A cuckoo filter has a fixed table: when it is full, an insert fails.  A
 * chain starts with one admit_cuckoo filter and, when the newest one is full,
 * adds another, each new one holding `expansion` times as many items as the
 * one before (as scalable Bloom filters do).  A lookup asks every filter, so
 * the chain's false-positive rate is at most the sum of its filters' rates.
 *
 * The bound.  By default every filter of a chain stores 16-bit
 * fingerprints, so each answers "present" for an absent key with
 * probability at most 8 / 2^16 (0.0122 %, admit/cuckoo.h), and a chain has
 * at most ADMIT_CHAIN_MAX_FILTERS (32) filters: the whole chain's rate is at
 * most filters x 8 / 2^16, below 0.39 % at any growth.  With
 * fingerprint_bits = 8 and no max_load, each filter's share is 8 / 2^8
 * (3.1 %).  With max_load L set, no filter ever holds more than L of its
 * slots, and each filter's share is at most 8 x L / (2^f - 2) for f-bit
 * fingerprints (a stored fingerprint is one of 2^f - 1 non-zero values, one
 * of them twice as likely; see src/chain.c): 16 bits at L = 0.5 give
 * 6.1e-5 per filter, 8 bits at L = 0.1 give 3.2e-3.  Growth is geometric
 * (expansion >= 2) unless asked otherwise, so 32 filters reach the largest
 * capacity a cuckoo filter takes long before the bound is reached;
 * admit_chain_info() reports the bound for the chain as it stands (the sum
 * of admit_chain_filter_info()'s per-filter bounds).
 *
 * A key inserted twice is stored twice (a multiset, as admit_cuckoo), and a
 * delete removes one copy, from the newest filter that holds one.  A filter
 * holds at most 8 copies of a key (its two buckets), and the chain grows only
 * when its newest filter is at least half full: adding one key over and over
 * ends in ADMIT_FULL, not in a chain of ever larger filters, so memory stays
 * proportional to the items held.
 *
 * Unless a function says otherwise it is thread-safe: any number of threads
 * may insert, delete and look up at once, and growth happens under their
 * feet (lookups take no lock; a filter is freed only with the chain or by
 * admit_chain_trim(), which must run alone).  admit_chain_free() and
 * admit_chain_trim() are the exceptions.  With max_load set, adds to one
 * chain take turns on a mutex (lookups and deletes still take no lock),
 * unless the chain was made with single_writer, which asks the caller to
 * keep writers from running at once instead.
 */
#ifndef ADMIT_CHAIN_H
#define ADMIT_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <admit/allocator.h>
#include <admit/status.h>

#ifdef __cplusplus
extern "C" {
#endif

ADMIT_API_BEGIN

struct admit_chain;

/* Most filters in one chain: this is what bounds the false-positive rate. */
#define ADMIT_CHAIN_MAX_FILTERS 32u

/* Largest expansion accepted (RedisBloom's documented range ends there). */
#define ADMIT_CHAIN_MAX_EXPANSION 32768u

/*
 * Creation parameters.  Zero a struct and set what you need: every zero field
 * means "default".
 */
struct admit_chain_config {
	uint64_t capacity;    /* items the first filter holds; required, > 0
	                         and at most ADMIT_CUCKOO_MAX_CAPACITY */
	unsigned expansion;   /* each new filter holds expansion x the one
	                         before; 0 = 2.  1 keeps every filter the size
	                         of the first (then at most 32 x capacity) */
	unsigned max_filters; /* 1 (never grow) to ADMIT_CHAIN_MAX_FILTERS;
	                         0 = ADMIT_CHAIN_MAX_FILTERS */
	unsigned stripes;     /* lock stripes per filter, as in
	                         admit_cuckoo_config; 0 = the filter's default */
	uint64_t seed;        /* hash seed of the chain; 0 = random.  Filter i
	                         hashes with a seed derived from it and i, so
	                         two chains with one seed fed the same keys in
	                         the same order are identical */
	unsigned fingerprint_bits; /* 8 or 16; 0 = 16.  8 halves the memory
	                         and multiplies the bound by 256 */
	double   max_load;    /* 0 = each filter is sized for its capacity at
	                         95 % load and takes items until it refuses
	                         one.  Otherwise 1/1024 to 0.95: each filter's
	                         table is sized so that its capacity is this
	                         load, and the chain grows when the newest
	                         holds its capacity (or max_load of its slots,
	                         if rounding made that less), so the bound
	                         above holds at any moment.  The capacity must
	                         then fit one filter at that load: at most
	                         ADMIT_CUCKOO_MAX_CAPACITY x max_load / 0.95 */
	bool     single_writer; /* true: the caller promises that adds,
	                         deletes, trims and set_max_filters on this
	                         chain never run at once (one thread, or
	                         threads taking turns under the caller's own
	                         lock or barrier); lookups, count, info and
	                         dump may still run from any thread at any
	                         time.  Adds then take no chain lock (about
	                         5 % of admit-dedup's time per key).  false =
	                         every call thread-safe as documented */
	const struct admit_allocator *alloc; /* where the chain and its
	                         filters take their memory, growth included;
	                         NULL = the library's (admit/allocator.h) */
};

/* What a chain is made of, as admit_chain_info() reports it. */
struct admit_chain_info {
	unsigned filters;     /* filters in the chain, >= 1 */
	unsigned max_filters; /* as configured */
	unsigned expansion;   /* as configured (0 resolved to 2) */
	uint64_t capacity;    /* items the filters hold together */
	uint64_t first_capacity; /* the first filter's capacity */
	uint64_t items;       /* occupied slots over all filters */
	uint64_t buckets;     /* buckets over all filters (4 slots each) */
	size_t   memory;      /* bytes of the bucket tables */
	double   fpr_bound;   /* the chain's false-positive rate is at most
	                         this (a fraction, not %): the sum of each
	                         filter's bound, filters x 8 / 2^16 by default */
	unsigned fingerprint_bits; /* as configured (0 resolved to 16) */
	double   max_load;    /* as configured (0 = unset) */
	uint64_t trimmed;     /* filters admit_chain_trim() removed so far */
};

/* One filter of a chain, as admit_chain_filter_info() reports it. */
struct admit_chain_filter_info {
	uint64_t number;      /* trimmed + index: the filter's place in the
	                         chain's history, which fixes its capacity and
	                         seed; unchanged by trims, unlike the index */
	uint64_t capacity;    /* items it takes before the chain grows (with
	                         max_load: its limit, at most max_load x
	                         slots) */
	uint64_t items;       /* occupied slots */
	uint64_t slots;       /* 4 per bucket */
	unsigned fingerprint_bits;
	size_t   memory;      /* bytes of its bucket table */
	double   fpr_bound;   /* its share of the chain's bound */
};

/*
 * admit_chain_new - create a chain of one empty filter.
 *
 * Errors: ADMIT_EINVAL if cfg or out is NULL, the capacity is 0 or above
 * ADMIT_CUCKOO_MAX_CAPACITY (with max_load: above the most one filter holds
 * at that load), expansion is above ADMIT_CHAIN_MAX_EXPANSION, max_filters
 * is above ADMIT_CHAIN_MAX_FILTERS, stripes is not a power of two up to
 * ADMIT_CUCKOO_MAX_STRIPES, fingerprint_bits is not 0, 8 or 16, or max_load
 * is not 0 or within [1/1024, 0.95]; ADMIT_NOMEM.  On error *out is left
 * untouched.
 *
 * Thread-safety: safe (each call makes a new, independent chain).
 */
enum admit_status admit_chain_new(const struct admit_chain_config *cfg,
                                  struct admit_chain **out);

/*
 * admit_chain_free - release a chain and all its filters.  NULL is a no-op.
 *
 * Thread-safety: NOT thread-safe with any other call on the same chain.
 */
void admit_chain_free(struct admit_chain *c);

/*
 * admit_chain_add - add one copy of key to the newest filter, growing the
 * chain by one filter when the newest is full (with max_load: holds its
 * capacity).
 *
 * Errors: ADMIT_FULL if the newest filter has no room for key and the chain
 * has max_filters filters already or the newest is less than half full (or,
 * with max_load, below its capacity, if that is less) (nothing changed);
 * ADMIT_NOMEM if a new filter
 * cannot be allocated (nothing changed); ADMIT_EINVAL if c is NULL or key is
 * NULL with len > 0.
 *
 * Thread-safety: safe.
 */
enum admit_status admit_chain_add(struct admit_chain *c, const void *key,
                                  size_t len);

/*
 * admit_chain_add_unique - add key unless some filter of the chain already
 * answers present for it (the false-positive case included).  The check and
 * the insertion are one atomic step against other add_unique calls: when
 * many threads add one key at once, exactly one gets ADMIT_OK.
 *
 * Errors: ADMIT_EXISTS if present (nothing changed); otherwise as
 * admit_chain_add().
 *
 * Thread-safety: safe; it excludes growth while it runs (a shared lock that
 * only growth takes exclusively; with max_load, the add mutex instead; with
 * single_writer, the caller's own turn-taking).
 */
enum admit_status admit_chain_add_unique(struct admit_chain *c,
                                         const void *key, size_t len);

/*
 * admit_chain_add_at - admit_chain_add(), and on ADMIT_OK store in *filter
 * (unless filter is NULL) the index of the filter that took the copy: 0 is
 * the oldest, info.filters - 1 the newest.  Keep it to delete that copy with
 * admit_chain_delete_at().
 *
 * Errors: as admit_chain_add(); *filter is written only on ADMIT_OK.
 *
 * Thread-safety: safe.
 */
enum admit_status admit_chain_add_at(struct admit_chain *c, const void *key,
                                     size_t len, unsigned *filter);

/*
 * admit_chain_add_unique_at - admit_chain_add_unique(), and on ADMIT_OK
 * store in *filter (unless filter is NULL) the index of the filter that took
 * the key, as admit_chain_add_at() does.
 *
 * Errors: as admit_chain_add_unique(); *filter is written only on ADMIT_OK.
 *
 * Thread-safety: as admit_chain_add_unique().
 */
enum admit_status admit_chain_add_unique_at(struct admit_chain *c,
                                            const void *key, size_t len,
                                            unsigned *filter);

/*
 * admit_chain_contains - true if key may be present in some filter.  No
 * false negative for a key added and not deleted before the call began; a
 * false positive with probability at most info.fpr_bound.  False if c is
 * NULL or key is NULL with len > 0.
 *
 * Thread-safety: safe; optimistic like admit_cuckoo_contains(), no lock.
 */
bool admit_chain_contains(const struct admit_chain *c, const void *key,
                          size_t len);

/*
 * admit_chain_delete - remove one copy of key, from the newest filter that
 * holds a matching fingerprint.  As with admit_cuckoo_delete(), deleting a
 * key never added may remove another key's copy: delete only what you added.
 * Across filters even that is not enough: a newer filter than the one that
 * holds key's copy may hold another key whose fingerprint matches key's
 * there (probability at most 8 / 2^16 per newer filter), and this removes
 * that copy instead, so the other key is then reported absent.  A caller
 * that must never lose a key keeps the index admit_chain_add_at() gives and
 * deletes with admit_chain_delete_at().
 *
 * Errors: ADMIT_NOTFOUND if no filter holds it (nothing changed);
 * ADMIT_EINVAL as for admit_chain_add().
 *
 * Thread-safety: safe.
 */
enum admit_status admit_chain_delete(struct admit_chain *c, const void *key,
                                     size_t len);

/*
 * admit_chain_delete_at - remove one copy of key from filter number filter
 * (as admit_chain_add_at() reported it) and from no other.  Deleting only
 * copies added, each from the filter that took it, never makes another key
 * absent: within one filter a matching fingerprint in key's buckets is as
 * good as key's own.
 *
 * Errors: ADMIT_NOTFOUND if that filter holds no copy (nothing changed);
 * ADMIT_EINVAL if c is NULL, key is NULL with len > 0, or filter is not
 * below the chain's filter count.
 *
 * Thread-safety: safe.
 */
enum admit_status admit_chain_delete_at(struct admit_chain *c, unsigned filter,
                                        const void *key, size_t len);

/*
 * admit_chain_count - copies of key stored over all filters (each filter
 * counts up to 8; false positives may add to it).  0 on bad input.
 *
 * Thread-safety: safe; no lock.
 */
uint64_t admit_chain_count(const struct admit_chain *c, const void *key,
                           size_t len);

/*
 * admit_chain_info - describe the chain in *out.
 *
 * Errors: ADMIT_EINVAL if c or out is NULL.
 *
 * Thread-safety: safe; exact when no writer runs, a moment's values
 * otherwise.
 */
enum admit_status admit_chain_info(const struct admit_chain *c,
                                   struct admit_chain_info *out);

/*
 * admit_chain_footprint - every byte the chain holds from its allocator
 * (admit/allocator.h): the chain's struct and each filter's
 * admit_cuckoo_footprint().  0 for NULL.
 *
 * Thread-safety: safe; exact when no growth or trim runs.
 */
size_t admit_chain_footprint(const struct admit_chain *c);

/*
 * admit_chain_filter_info - describe filter number filter (0 the oldest,
 * info.filters - 1 the newest) in *out.
 *
 * Errors: ADMIT_EINVAL if c or out is NULL or filter is not below the
 * chain's filter count.
 *
 * Thread-safety: safe; exact when no writer runs, a moment's values
 * otherwise.
 */
enum admit_status admit_chain_filter_info(const struct admit_chain *c,
                                          unsigned filter,
                                          struct admit_chain_filter_info *out);

/*
 * admit_chain_trim - free the oldest filters that hold no item, keeping at
 * least the newest: memory returns, lookups probe fewer filters, and the
 * bound (admit_chain_info) drops by the removed filters' shares.  The
 * filters left keep their order and their numbers; their indices drop by
 * the count removed (stored in *removed unless it is NULL), so a caller
 * that keeps indices from admit_chain_add_at() subtracts it (or keeps
 * admit_chain_filter_info()'s numbers, which trims do not change).  The
 * chain may then grow again up to max_filters filters; new filters continue
 * the sequence (capacity and seed as if nothing had been trimmed).  A dump
 * of a trimmed chain restores to the same trimmed chain.  An older filter
 * emptied while a newer one is not is kept: only a prefix is removed.
 *
 * Errors: ADMIT_EINVAL if c is NULL.
 *
 * Thread-safety: NOT thread-safe with any other call on the same chain
 * (lookups take no lock and could read a freed filter): run it when no
 * other thread uses the chain, for instance between the phases of a
 * program that hands the chain from thread to thread with a barrier or a
 * mutex.
 */
enum admit_status admit_chain_trim(struct admit_chain *c, unsigned *removed);

/*
 * admit_chain_set_max_filters - change how many filters the chain may
 * have: max_filters as in admit_chain_config (0 = ADMIT_CHAIN_MAX_FILTERS;
 * the chain's filter count = grow no more).  Dumps record the new value.
 *
 * Errors: ADMIT_EINVAL if c is NULL, max_filters is above
 * ADMIT_CHAIN_MAX_FILTERS, or below the filters the chain has (nothing
 * changed).
 *
 * Thread-safety: safe (it takes the growth lock).
 */
enum admit_status admit_chain_set_max_filters(struct admit_chain *c,
                                              unsigned max_filters);

/*
 * admit_chain_dump - encode the whole chain into a new buffer.
 *
 * The buffer holds a magic, a format version (1 for a chain of default
 * width, load and writers never trimmed, the bytes 0.2.0's first chains
 * wrote; 2 otherwise), the chain's parameters (single_writer included),
 * each
 * filter in admit_cuckoo_save()'s snapshot format (each with its own XXH3
 * checksum), and an XXH3 checksum of everything before it; integers are
 * little-endian.  *buf is allocated with malloc(): release it with free().
 * Each filter is copied at one instant (its stripes held); filters added to
 * or grown during the dump may be a moment apart.
 *
 * Errors: ADMIT_EINVAL if c, buf or len is NULL; ADMIT_NOMEM.  On error *buf
 * and *len are left untouched.
 *
 * Thread-safety: safe.
 */
enum admit_status admit_chain_dump(const struct admit_chain *c, void **buf,
                                   size_t *len);

/*
 * admit_chain_restore - create a chain from len bytes written by
 * admit_chain_dump() (either format version).  Everything is validated (magic, version, parameters,
 * every filter's snapshot and checksum, the outer checksum, the exact
 * length) before a chain is returned.
 *
 * Errors: ADMIT_EINVAL if buf is NULL with len > 0 or out is NULL;
 * ADMIT_ECORRUPT if the bytes are truncated, altered or not a chain;
 * ADMIT_NOMEM.  On error *out is left untouched.
 *
 * Thread-safety: safe.
 */
enum admit_status admit_chain_restore(const void *buf, size_t len,
                                      struct admit_chain **out);

/*
 * admit_chain_restore_alloc - admit_chain_restore(), the chain and its
 * filters (those it grows later included) taking their memory from alloc
 * (admit/allocator.h; NULL = the library's).
 *
 * Errors and thread-safety: as admit_chain_restore().
 */
enum admit_status admit_chain_restore_alloc(const void *buf, size_t len,
                                            const struct admit_allocator *alloc,
                                            struct admit_chain **out);

/*
 * admit_chain_save - admit_chain_dump() into a file, written beside path and
 * renamed into place (a crash never leaves a torn file under path).
 *
 * A symlink is followed to the file it names.
 *
 * Errors: ADMIT_EINVAL if c or path is NULL; ADMIT_ENOTREG if path names a
 * directory, FIFO, device or socket (nothing is written); ADMIT_NOMEM;
 * ADMIT_EIO.
 *
 * Thread-safety: safe.
 */
enum admit_status admit_chain_save(const struct admit_chain *c,
                                   const char *path);

/*
 * admit_chain_load - admit_chain_restore() from a file written by
 * admit_chain_save().
 *
 * Errors: ADMIT_EINVAL if path or out is NULL; ADMIT_ENOTREG if path is not
 * a regular file (a FIFO is refused at once, not waited on); ADMIT_EIO if it
 * cannot be read; ADMIT_ECORRUPT; ADMIT_NOMEM.  On error *out is left untouched.
 *
 * Thread-safety: safe.
 */
enum admit_status admit_chain_load(const char *path, struct admit_chain **out);

ADMIT_API_END

#ifdef __cplusplus
}
#endif

#endif /* ADMIT_CHAIN_H */
