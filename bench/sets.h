/*
 * sets.h - the baselines bench_cuckoo compares admit with, behind one small
 * interface: a blocked Bloom filter (bloom.c), liburcu's cds_lfht
 * (lfht_set.c), libcuckoo's cuckoohash_map (libcuckoo_set.cc) and the
 * CoNEXT 2014 authors' cuckoo filter (refcf_set.cc).
 *
 * The first three are given the 64-bit XXH3 hash of the key (the hash admit
 * computes inside) and keep what they need of it: the Bloom filter bits,
 * the exact sets the whole hash; their calls are thread-safe.
 */
#ifndef ADMIT_BENCH_SETS_H
#define ADMIT_BENCH_SETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A blocked Bloom filter of `bytes` bytes (64-byte blocks, k bits per key
 * in one block), tuned for `items` keys. */
struct bench_bloom;
struct bench_bloom *bench_bloom_new(size_t bytes, uint64_t items);
void bench_bloom_free(struct bench_bloom *b);
void bench_bloom_add(struct bench_bloom *b, uint64_t h);
bool bench_bloom_contains(const struct bench_bloom *b, uint64_t h);
size_t bench_bloom_memory(const struct bench_bloom *b);
unsigned bench_bloom_k(const struct bench_bloom *b);

/* cds_lfht (urcu-bp flavour) of 64-bit hashes, presized for `items`. */
struct bench_lfht;
struct bench_lfht *bench_lfht_new(uint64_t items);
void bench_lfht_free(struct bench_lfht *s);
bool bench_lfht_insert(struct bench_lfht *s, uint64_t h);
bool bench_lfht_contains(struct bench_lfht *s, uint64_t h);
bool bench_lfht_delete(struct bench_lfht *s, uint64_t h);

/* libcuckoo::cuckoohash_map of 64-bit hashes, presized for `items`.
 * Only when configure found libcuckoo (HAVE_LIBCUCKOO). */
struct bench_lcuckoo;
struct bench_lcuckoo *bench_lcuckoo_new(uint64_t items);
void bench_lcuckoo_free(struct bench_lcuckoo *s);
bool bench_lcuckoo_insert(struct bench_lcuckoo *s, uint64_t h);
bool bench_lcuckoo_contains(struct bench_lcuckoo *s, uint64_t h);
bool bench_lcuckoo_delete(struct bench_lcuckoo *s, uint64_t h);

/* The CoNEXT 2014 authors' cuckoo filter (refcf_set.cc), 8- or 16-bit
 * tags, sized by its own constructor for `items`; given the 8-byte key
 * itself, which it hashes with its own hash.  Single-threaded: concurrent
 * lookups only.  Only when configure found ../shared/ref/cuckoofilter
 * (HAVE_REFCF).  bench_ref_contains_pass() looks up keys[0..n) in a loop
 * with the lookup inlined, as a user's loop would, and returns the hits. */
struct bench_ref;
struct bench_ref *bench_ref_new(uint64_t items, unsigned bits);
void bench_ref_free(struct bench_ref *r);
bool bench_ref_insert(struct bench_ref *r, uint64_t key);
bool bench_ref_contains(const struct bench_ref *r, uint64_t key);
uint64_t bench_ref_contains_pass(const struct bench_ref *r,
                                 const uint64_t *keys, size_t n);
bool bench_ref_delete(struct bench_ref *r, uint64_t key);
size_t bench_ref_memory(const struct bench_ref *r);

#ifdef __cplusplus
}
#endif

#endif /* ADMIT_BENCH_SETS_H */
