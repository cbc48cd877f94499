/*
 * freqsketch.h - admit_lru's frequency sketch: a count-min sketch of 4-bit
 * counters in which the four counters of a key lie in one 64-byte block
 * (the block design of Caffeine's FrequencySketch, after Einziger,
 * Friedman, Manes, "TinyLFU: A Highly Efficient Cache Admission Policy",
 * ACM ToS 2017, and Cormode, Muthukrishnan's count-min sketch), raised by
 * conservative update, aged by halving every counter once per sample of
 * records, with TinyLFU's contest (warm threshold, random chance, steady
 * mode) over its estimates.
 *
 * Why not admit_tinylfu (the public frequency store, a counting cuckoo
 * filter behind a counting Bloom doorkeeper): a record there reads a
 * doorkeeper block and two cuckoo buckets, three lines, and writes up to
 * two; here it reads one line and writes at most four words of it.  The
 * cache's holds one 64-bit word (16 counters) per entry, rounded up to a
 * power of two, and at least 64 KiB (cache.c): 8 to 16 bytes an entry
 * against the filter's 34.5.
 * doc/design.md ("The frequency sketch") has the argument and the hit
 * ratios.  Internal: never installed, not exported.
 *
 * A key is its 64-bit hash (the cache's key hash); the sketch mixes it
 * with its own seed, so that the block is independent of the bits the
 * cache's shards and index use.
 *
 * Thread-safety: every call but new and free may run in any thread at
 * once, lock-free.  Counters are raised by compare-and-swap on their
 * word, so concurrent records are all counted (up to the counter's
 * maximum); an aging halves each word with compare-and-swap too, while
 * records carry on: a record that lands during it counts in the half it
 * lands in.  Estimates are relaxed reads, each counter on its own.
 */
#ifndef ADMIT_FREQSKETCH_H
#define ADMIT_FREQSKETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <admit/status.h>
#include <admit/tinylfu.h>

struct admit_freqsketch;

/* The largest count an estimate returns. */
#define ADMIT_FREQSKETCH_MAX 15u

/*
 * A sketch for a cache of cfg->cache_capacity entries, with admit_tinylfu's
 * settings (admit/tinylfu.h): sample_size (records between agings, 0 = 10 x
 * the capacity), seed (0 = random), warm, chance_shift and alloc, with the
 * same defaults and bounds.  Its table holds width words (1 .. 64) per
 * entry, or per a tenth of the sample if that is fewer (a short sample
 * sees fewer keys), rounded up to a power of two, at least one block.
 * ADMIT_EINVAL for what admit_tinylfu_new_config rejects and for a width
 * out of range; ADMIT_NOMEM.
 */
enum admit_status admit_freqsketch_new(const struct admit_tinylfu_config *cfg,
                                       unsigned width,
                                       struct admit_freqsketch **out);

/* NULL is a no-op.  No other call on s may run. */
void admit_freqsketch_free(struct admit_freqsketch *s);

/* One access to the key of hash h: its least counters raised (unless at
 * the maximum), and every sample_size-th record ages the table, the
 * recording thread doing it unless an aging is running already. */
void admit_freqsketch_record(struct admit_freqsketch *s, uint64_t h);

/* Requests the line of h's counters, which a record or an estimate of h
 * reads, so that its cache miss overlaps the caller's other work.  No
 * effect on the counts; thread-safe. */
void admit_freqsketch_prefetch(const struct admit_freqsketch *s, uint64_t h);

/* The most records one batch takes. */
#define ADMIT_FREQSKETCH_BATCH 128u

/* admit_freqsketch_record of h[0..n) in order (n at most
 * ADMIT_FREQSKETCH_BATCH), the lines of all of them requested first so
 * that their cache misses overlap. */
void admit_freqsketch_record_batch(struct admit_freqsketch *s,
                                   const uint64_t *h, size_t n);

/* The batch in two steps, so that the caller's own work overlaps the
 * lines' misses (admit_lru's drain): admit_freqsketch_prepare replaces
 * each of h[0..n) by its key's place in s and requests its line;
 * admit_freqsketch_record_prepared then records those places in order, as
 * admit_freqsketch_record_batch records the hashes.  Thread-safe. */
void admit_freqsketch_prepare(const struct admit_freqsketch *s, uint64_t *h,
                              size_t n);
void admit_freqsketch_record_prepared(struct admit_freqsketch *s,
                                      const uint64_t *x, size_t n);

/* The key's estimated count in this sample: the least of its counters,
 * 0 ..  ADMIT_FREQSKETCH_MAX. */
unsigned admit_freqsketch_estimate(const struct admit_freqsketch *s,
                                   uint64_t h);

/* TinyLFU's contest: true when candidate should replace victim (its
 * estimate above the victim's, or, from the warm threshold on and unless
 * steady, by a chance of 1 / 2^chance_shift). */
bool admit_freqsketch_admit(struct admit_freqsketch *s, uint64_t candidate,
                            uint64_t victim);

/* Steady mode: counts are never halved (records are still counted, so
 * the first aging after steady mode ends falls where it would have) and no
 * candidate is admitted by chance.  Frequencies then rank keys over the
 * whole run, which is what a loop larger than the cache needs: every key
 * is as frequent as every other, ties keep the victim, and the cache holds
 * one fixed part of the loop, as LIRS does, instead of churning.  Records
 * and contests see the change soon, not at once. */
void admit_freqsketch_set_steady(struct admit_freqsketch *s, bool steady);

/* Bytes of the table, and all the sketch took from its allocator. */
size_t admit_freqsketch_memory(const struct admit_freqsketch *s);
size_t admit_freqsketch_footprint(const struct admit_freqsketch *s);

/* For statistics (admit_lru_stats' filter_entries / filter_slots): the
 * non-zero counters / 4, about the keys counted now, and the counters /
 * 4, the keys the table is sized for.  Walks the table: O(size). */
void admit_freqsketch_load(const struct admit_freqsketch *s, uint64_t *keys,
                           uint64_t *slots);

/* Agings so far, and candidates admitted by chance. */
void admit_freqsketch_stats(const struct admit_freqsketch *s, uint64_t *agings,
                            uint64_t *random_admits);

/*
 * The sketch as bytes, to be read back into a sketch of the same geometry
 * (admit_lru_sketch_export and _import, include/admit/lru.h), all integers
 * little-endian:
 *   header, 56 bytes: magic "ADMITFSK", format version (u32, 1), 0 (u32),
 *     the table's words (u64), the sample W (u64), a fingerprint of the
 *     seed (u64), the records since the last aging, 0 .. W - 1 (u64), and
 *     a checksum (u64): XXH3-64 of the table's bytes seeded with XXH3-64
 *     (seed 0) of the header's first 48 bytes;
 *   the table: each word (u64), 16 counters of 4 bits.
 * The agings and random admissions counted and the steady mode are not
 * part of it.
 */
#define ADMIT_FREQSKETCH_IO_HDR 56u

/* The bytes admit_freqsketch_export writes. */
size_t admit_freqsketch_export_size(const struct admit_freqsketch *s);

/* Writes the sketch into buf (admit_freqsketch_export_size bytes): each
 * word and the count read with relaxed loads while records may run, so a
 * record landing during the copy is in it or not. */
void admit_freqsketch_export(const struct admit_freqsketch *s,
                             unsigned char *buf);

/*
 * Replaces s's counters and its records since the last aging with those of
 * the len bytes at buf, after checking all of them: ADMIT_ECORRUPT for
 * bytes that are not an export of this format (short, long, a wrong magic,
 * version or checksum, a count not below W); ADMIT_EINVAL for an export of
 * a sketch of another geometry (words, sample) or seed.  On an error s is
 * unchanged.  May run while other threads record: each word is one
 * relaxed store, so a concurrent record or aging may be overwritten.
 */
enum admit_status admit_freqsketch_import(struct admit_freqsketch *s,
                                          const unsigned char *buf,
                                          size_t len);

#endif /* ADMIT_FREQSKETCH_H */
