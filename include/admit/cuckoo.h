/*
 * admit/cuckoo.h - a concurrent cuckoo filter.
 *
 * A cuckoo filter answers "have I seen this key?" in a few bits per key,
 * with a small, bounded false-positive rate and no false negatives, and,
 * unlike a Bloom filter, it can delete.  This one is built for many threads:
 * writers lock two of many small seqlock stripes at a time, and lookups are
 * optimistic: they take no lock, but wait while a writer holds one of their
 * key's two stripes and re-read if one took it meanwhile (doc/design.md §4).
 *
 * Keys are arbitrary byte strings; a key of length 0 is a valid key (and
 * "key" may then be NULL).  The filter stores only a fingerprint of each key,
 * so it never copies or keeps the caller's memory.
 *
 * Unless a function says otherwise it is thread-safe: any number of threads
 * may call any mix of insert, delete, lookup, increment, halve and save on one
 * filter at once.  admit_cuckoo_new(), admit_cuckoo_load() and
 * admit_cuckoo_free() are the exceptions: a filter must not be used while it
 * is being freed.
 */
#ifndef ADMIT_CUCKOO_H
#define ADMIT_CUCKOO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <admit/allocator.h>
#include <admit/status.h>

#ifdef __cplusplus
extern "C" {
#endif

ADMIT_API_BEGIN

struct admit_cuckoo;

/*
 * Creation parameters.  Zero a struct and set what you need: every zero field
 * means "default".
 */
struct admit_cuckoo_config {
	uint64_t capacity;         /* items it must hold; required, > 0 */
	unsigned fingerprint_bits; /* 8 or 16; 0 = 16.  Counting mode: 0 or 16 */
	bool     counting;         /* 12-bit fingerprint + 4-bit counter per slot */
	unsigned stripes;          /* lock stripes; 0 = default, else a power of
	                              two, at most ADMIT_CUCKOO_MAX_STRIPES */
	uint64_t seed;             /* hash seed; 0 = random (from getrandom) */
	const struct admit_allocator *alloc; /* where its memory comes from;
	                              NULL = the library's (admit/allocator.h) */
	bool     semi_sorted;      /* semi-sorted buckets: 13-bit fingerprints
	                              in 12 bits each (fingerprint_bits 0 or
	                              13; not with counting) */
};

/* Largest stripe count accepted in admit_cuckoo_config.stripes. */
#define ADMIT_CUCKOO_MAX_STRIPES (1u << 20)

/* Largest capacity accepted: bucket indexes must fit in 32 bits. */
#define ADMIT_CUCKOO_MAX_CAPACITY ((uint64_t)UINT32_MAX * 19 / 5)

/*
 * admit_cuckoo_new - create an empty filter.
 *
 * The table has the smallest bucket count (any integer >= 2, not only a power
 * of two) that holds cfg->capacity items at 95 % load.  With the default
 * 16-bit fingerprints that is about 16.8 bits per item and a false-positive
 * rate below 8 / 2^16 (0.012 %); 8-bit fingerprints give 8.4 bits per item and
 * at most 8 / 2^8 (3.1 %).  Counting mode keeps a 12-bit fingerprint and a
 * 4-bit saturating counter per slot (16.8 bits per item, at most 8 / 2^12).
 * With semi_sorted, a bucket keeps its four 13-bit fingerprints sorted and
 * encodes their four high nibbles together in 12 bits (the cuckoo filter
 * paper's semi-sorting, section 5.2): 48 bits a bucket, 12.6 bits per item
 * at 95 % load, a false-positive rate below 8 / 2^13 (0.098 %).  Every call
 * works on it as on the other layouts, with the same guarantees; its
 * lookups decode the buckets and validate both of the key's stripes, so
 * they cost more than the 8- and 16-bit layouts' (doc/filter-benchmarks.md).
 * On x86-64 CPUs with BMI2 the filter runs lookups and inserts compiled for
 * BMI2, unless the environment variable ADMIT_NO_BMI2 is set (read here,
 * once per filter; the results are the same either way).
 *
 * Errors: ADMIT_EINVAL if cfg or out is NULL, the capacity is 0 or above
 * ADMIT_CUCKOO_MAX_CAPACITY, the fingerprint width is not 8 or 16 (16 only
 * in counting mode; 13 only, and only, with semi_sorted), semi_sorted is
 * set with counting, or stripes is not a power of two up to
 * ADMIT_CUCKOO_MAX_STRIPES; ADMIT_NOMEM if the table cannot be allocated.
 * On error *out is left untouched.
 *
 * Thread-safety: safe (each call makes a new, independent filter).
 */
enum admit_status admit_cuckoo_new(const struct admit_cuckoo_config *cfg,
                                   struct admit_cuckoo **out);

/*
 * admit_cuckoo_free - release a filter and its table.  NULL is a no-op.
 *
 * Thread-safety: NOT thread-safe with any other call on the same filter.
 */
void admit_cuckoo_free(struct admit_cuckoo *f);

/*
 * admit_cuckoo_insert - add one copy of key.
 *
 * A membership filter is a multiset: inserting a key twice stores two
 * fingerprints, and one delete removes one of them.  A key can be stored at
 * most 8 times (two buckets of 4 slots).  In counting mode, insert is
 * admit_cuckoo_increment().
 *
 * When both of the key's buckets are full, other fingerprints are moved
 * ("kicked") along a cuckoo path to make room; readers keep finding every
 * moved fingerprint throughout.
 *
 * Errors: ADMIT_FULL if no cuckoo path frees a slot (the filter is then
 * exactly as it was); ADMIT_EINVAL if f is NULL or key is NULL with len > 0.
 *
 * Thread-safety: safe.
 */
enum admit_status admit_cuckoo_insert(struct admit_cuckoo *f, const void *key,
                                      size_t len);

/*
 * admit_cuckoo_insert_unique - add key unless it is already present.
 *
 * The presence check and the insertion are one atomic step: when many threads
 * add the same key at once, exactly one gets ADMIT_OK.  "Present" is as the
 * filter sees it: a key whose fingerprint collides with a stored one (the
 * false-positive case) also answers ADMIT_EXISTS.  In counting mode the new
 * entry starts with a count of 1.
 *
 * Errors: ADMIT_EXISTS if present (nothing changed); ADMIT_FULL; ADMIT_EINVAL
 * as for admit_cuckoo_insert().
 *
 * Thread-safety: safe.
 */
enum admit_status admit_cuckoo_insert_unique(struct admit_cuckoo *f,
                                             const void *key, size_t len);

/*
 * admit_cuckoo_contains - true if key may be present.
 *
 * Never a false negative for a key inserted (and not deleted) before the call
 * began; a false positive with probability at most 8 / 2^f.  Optimistic: it
 * takes no lock and writes nothing shared, waits while a writer holds one of
 * the key's two stripes, and re-reads when a writer took one while it was
 * reading.  Returns false if f is NULL or key is NULL with len > 0.
 *
 * Thread-safety: safe; optimistic: never waits for other readers, may wait
 * for writers of the key's two stripes.
 */
bool admit_cuckoo_contains(const struct admit_cuckoo *f, const void *key,
                           size_t len);

/*
 * admit_cuckoo_delete - remove one copy of key.
 *
 * In counting mode it subtracts one from the key's counter and frees the slot
 * when it reaches 0.
 *
 * Deleting a key that was never inserted is a caller error the filter cannot
 * detect: if it shares a fingerprint and a bucket with a stored key, that
 * key's fingerprint is removed instead, and the stored key may then be
 * reported absent.  Delete only keys you inserted.
 *
 * Errors: ADMIT_NOTFOUND if no matching fingerprint is stored (nothing
 * changed); ADMIT_EINVAL as for admit_cuckoo_insert().
 *
 * Thread-safety: safe.
 */
enum admit_status admit_cuckoo_delete(struct admit_cuckoo *f, const void *key,
                                      size_t len);

/*
 * admit_cuckoo_count - how often key is stored.
 *
 * A membership filter returns the number of matching fingerprints (0 to 8);
 * a counting filter returns the key's counter (0 to 15, saturating).  Both
 * may over-count by the false-positive mechanism.  Returns 0 on bad input.
 *
 * Thread-safety: safe; optimistic like admit_cuckoo_contains().
 */
unsigned admit_cuckoo_count(const struct admit_cuckoo *f, const void *key,
                            size_t len);

/*
 * admit_cuckoo_increment - counting mode: add 1 to key's counter, saturating
 * at 15; a key not yet present is inserted with a count of 1.
 *
 * Errors: ADMIT_EINVAL if the filter is not in counting mode or on bad
 * arguments; ADMIT_FULL if the key is absent and no slot can be freed.
 *
 * Thread-safety: safe; concurrent increments of one key are never lost
 * (below saturation).
 */
enum admit_status admit_cuckoo_increment(struct admit_cuckoo *f,
                                         const void *key, size_t len);

/*
 * admit_cuckoo_halve - counting mode: age every counter (halve it, rounding
 * down) and delete the entries that reach 0.
 *
 * The table is walked one bucket at a time, each bucket under its own stripe,
 * so other threads keep inserting and looking up while it runs; an update
 * made during the walk may or may not be halved.
 *
 * Errors: ADMIT_EINVAL if f is NULL or not in counting mode.
 *
 * Thread-safety: safe.
 */
enum admit_status admit_cuckoo_halve(struct admit_cuckoo *f);

/*
 * admit_cuckoo_insert_many - n inserts at once: out[i] =
 * admit_cuckoo_insert(f, keys[i], lens[i]), in order.
 *
 * All keys of a group are hashed and both of their buckets prefetched before
 * the first is inserted, so the cache misses of a group overlap; a loop of
 * single inserts cannot overlap them, because each takes its stripes with a
 * locked instruction that waits for every earlier load.
 *
 * Returns ADMIT_OK when every key went in, otherwise ADMIT_FULL (some key
 * found no slot, leaving the filter as it was for that key); out[] says
 * which.  In counting mode each insert is an increment, as for
 * admit_cuckoo_insert().
 *
 * Errors: ADMIT_EINVAL, with nothing inserted and out untouched, if f, keys,
 * lens or out is NULL or any keys[i] is NULL with lens[i] > 0.
 *
 * Thread-safety: safe; each key is one admit_cuckoo_insert().
 */
enum admit_status admit_cuckoo_insert_many(struct admit_cuckoo *f, size_t n,
                                           const void *const keys[],
                                           const size_t lens[],
                                           enum admit_status out[]);

/*
 * admit_cuckoo_contains_many - n lookups at once: out[i] =
 * admit_cuckoo_contains(f, keys[i], lens[i]).
 *
 * All keys of a group are hashed and their buckets prefetched before any is
 * probed, so the cache misses of a group overlap.  Use it whenever a caller
 * holds several keys at once: on a table larger than the CPU caches it is
 * several times faster than a loop of single lookups.
 *
 * Bad input: a NULL f, keys, lens or out makes it return without writing; a
 * NULL keys[i] with lens[i] > 0 gives out[i] = false.
 *
 * Thread-safety: safe; optimistic like admit_cuckoo_contains().
 */
void admit_cuckoo_contains_many(const struct admit_cuckoo *f, size_t n,
                                const void *const keys[], const size_t lens[],
                                bool out[]);

/*
 * admit_cuckoo_contains_many_u64 - n lookups of 8-byte keys held in an
 * array: out[i] = admit_cuckoo_contains(f, &keys[i], 8), the key being the
 * 8 bytes of keys[i] as they lie in memory (so the answers match the
 * single calls' on any machine that wrote the keys).
 *
 * Each key is hashed and its buckets prefetched 32 keys before it is
 * probed (on a table of a power-of-two bucket count, 16 keys a group
 * while the group before is probed), so the cache misses of many keys
 * overlap; each key is then
 * probed and validated as by admit_cuckoo_contains().  The fastest way to ask about many integer ids
 * or 64-bit hashes.
 *
 * Bad input: a NULL f, keys or out makes it return without writing.
 *
 * Thread-safety: safe; optimistic like admit_cuckoo_contains(): each
 * key's answer is that of a lookup made at some instant within the call.
 */
void admit_cuckoo_contains_many_u64(const struct admit_cuckoo *f, size_t n,
                                    const uint64_t keys[], bool out[]);

/*
 * admit_cuckoo_insert_many_u64 - n inserts of 8-byte keys held in an array:
 * out[i] = admit_cuckoo_insert(f, &keys[i], 8), with each group's buckets
 * hashed and prefetched before its first insert (as
 * admit_cuckoo_insert_many()).  In counting mode each is an increment, in
 * order.  A membership filter's key whose two buckets are both full is set
 * aside and placed, with up to 15 others, after the keys that follow it:
 * their cuckoo-path searches run together, so that their cache misses
 * overlap.  So the keys go in in an order of the call's choosing; every
 * one is in (out[i] ADMIT_OK) before the call returns, and when the filter
 * fills up during a call which keys get ADMIT_FULL depends on that order.
 * The set-aside keys' searches live on the call's stack: about 11 KB.
 *
 * Returns ADMIT_OK when every key went in, otherwise ADMIT_FULL; out[]
 * says which.
 *
 * Errors: ADMIT_EINVAL, with nothing inserted and out untouched, if f,
 * keys or out is NULL.
 *
 * Thread-safety: safe; each key is one admit_cuckoo_insert().
 */
enum admit_status admit_cuckoo_insert_many_u64(struct admit_cuckoo *f,
                                               size_t n,
                                               const uint64_t keys[],
                                               enum admit_status out[]);

/*
 * admit_cuckoo_delete_many_u64 - n deletes of 8-byte keys held in an array:
 * out[i] = admit_cuckoo_delete(f, &keys[i], 8), in order, each group's
 * buckets prefetched first.  The caveat of admit_cuckoo_delete() holds
 * for each key: delete only keys you inserted.
 *
 * Returns ADMIT_OK when every key was found, otherwise ADMIT_NOTFOUND;
 * out[] says which.
 *
 * Errors: ADMIT_EINVAL, with nothing deleted and out untouched, if f,
 * keys or out is NULL.
 *
 * Thread-safety: safe; each key is one admit_cuckoo_delete().
 */
enum admit_status admit_cuckoo_delete_many_u64(struct admit_cuckoo *f,
                                               size_t n,
                                               const uint64_t keys[],
                                               enum admit_status out[]);

/*
 * admit_cuckoo_size - items held: the number of occupied slots.  A counting
 * filter's entry counts once whatever its counter.  Exact when no writer is
 * running, a moment's value otherwise.  0 if f is NULL.
 *
 * Thread-safety: safe.
 */
uint64_t admit_cuckoo_size(const struct admit_cuckoo *f);

/*
 * admit_cuckoo_slots - 4 x the bucket count: the most items the table could
 * ever hold.  admit_cuckoo_size() / admit_cuckoo_slots() is the load factor.
 *
 * Thread-safety: safe.
 */
uint64_t admit_cuckoo_slots(const struct admit_cuckoo *f);

/*
 * admit_cuckoo_memory - bytes of the bucket table (the stripes are extra,
 * 68 bytes each: 272 KiB with the default 4096; so is, for a 16-bit
 * membership filter of 4 MiB or more, a 256 KiB table of its alternate
 * buckets' offsets, 32 KiB for a semi-sorted one of 2^19 buckets or more,
 * and a semi-sorted filter's 8 KiB decode table).  8 * memory / size is
 * bits per item: 6 bytes a bucket in the semi-sorted layout.
 *
 * Thread-safety: safe.
 */
size_t admit_cuckoo_memory(const struct admit_cuckoo *f);

/*
 * admit_cuckoo_footprint - every byte the filter holds from its allocator
 * (admit/allocator.h): the table, the stripes, the filter's own struct and
 * any alignment padding, as asked of the allocator.  0 for NULL.
 *
 * Thread-safety: safe (fixed from creation to free).
 */
size_t admit_cuckoo_footprint(const struct admit_cuckoo *f);

/* Event counters, summed over stripes; see admit_cuckoo_stats(). */
struct admit_cuckoo_stats {
	uint64_t items;        /* occupied slots, as admit_cuckoo_size() */
	uint64_t kicks;        /* fingerprints moved to make room */
	uint64_t path_retries; /* cuckoo paths found stale and searched again */
	uint64_t read_retries; /* lookups that re-read after a concurrent write */
	uint64_t full;         /* ADMIT_FULL answers */
};

/*
 * admit_cuckoo_stats - copy the filter's event counters into *out.
 *
 * Errors: ADMIT_EINVAL if f or out is NULL.
 *
 * Thread-safety: safe; each counter is read atomically, the set is not a
 * single snapshot while writers run.
 */
enum admit_status admit_cuckoo_stats(const struct admit_cuckoo *f,
                                     struct admit_cuckoo_stats *out);

/*
 * admit_cuckoo_save - write the filter to a file.
 *
 * The file holds a magic, format version, all parameters including the seed,
 * the table in little-endian order (portable between machines) and an XXH3
 * checksum.  A semi-sorted filter is saved as format version 3, which
 * earlier versions of the library refuse to load; other filters keep the
 * versions they had.  It is written to a temporary file (mode 0600) beside the file
 * path names and renamed into place, so a crash never leaves a half-written
 * snapshot under path.  Only a regular file is replaced: a symlink is
 * followed to the file it names, which is written (the link stays).
 *
 * Every stripe is held while the table is copied in memory (not during the
 * disk write): every writer and every lookup waits for that copy, a few
 * milliseconds per 10 M items.  The snapshot is exact at that instant.
 *
 * Errors: ADMIT_EINVAL if f or path is NULL; ADMIT_NOMEM if the copy cannot
 * be allocated; ADMIT_ENOTREG if path names a directory, FIFO, device or
 * socket (it is left alone); ADMIT_EIO if the file cannot be written (errno
 * says why).
 *
 * Thread-safety: safe.
 */
enum admit_status admit_cuckoo_save(const struct admit_cuckoo *f,
                                    const char *path);

/*
 * admit_cuckoo_load - create a filter from a file written by
 * admit_cuckoo_save().
 *
 * The file is fully validated (magic, version, parameters, size, checksum and
 * the contents of every slot) before a filter is returned.
 *
 * Errors: ADMIT_EINVAL if path or out is NULL; ADMIT_ENOTREG if path names
 * anything but a regular file (a FIFO is refused without waiting for a
 * writer); ADMIT_EIO if the file cannot be opened or read; ADMIT_ECORRUPT if
 * it is truncated, altered, or not an admit cuckoo snapshot; ADMIT_NOMEM.
 * On error *out is left untouched.
 *
 * Thread-safety: safe.
 */
enum admit_status admit_cuckoo_load(const char *path, struct admit_cuckoo **out);

ADMIT_API_END

#ifdef __cplusplus
}
#endif

#endif /* ADMIT_CUCKOO_H */
