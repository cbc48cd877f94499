/*
 * tightlru - the locked LRU cache a careful user writes in an afternoon for
 * 8-byte keys and 32-byte values: one pthread mutex around an open-addressed
 * hash map (linear probing, backward-shift deletion, each slot holding the
 * key and its node's index) and a doubly linked LRU list of fixed-size nodes
 * in one array allocated at creation, linked by index.  No allocation per
 * entry.  bench_cache runs it beside admit_lru as the cache users would
 * otherwise write; tests/test_tightlru.c checks it against a reference LRU.
 */
#ifndef ADMIT_BENCH_TIGHTLRU_H
#define ADMIT_BENCH_TIGHTLRU_H

#include <stddef.h>
#include <stdint.h>

struct tightlru;

/* A cache of at most capacity entries, 1 <= capacity < 2^31; NULL when out
 * of memory or capacity is out of range. */
struct tightlru *tightlru_new(size_t capacity);
void tightlru_free(struct tightlru *t);

/* 1 and the value copied to val[0..32) when key is cached (it becomes the
 * most recently used), else 0. */
int tightlru_get(struct tightlru *t, uint64_t key, unsigned char val[32]);

/* Stores key -> val[0..32) as the most recently used entry, evicting the
 * least recently used one when the cache is full and key is new. */
void tightlru_set(struct tightlru *t, uint64_t key, const unsigned char val[32]);

/* Entries held, and entries evicted since creation. */
size_t tightlru_size(struct tightlru *t);
uint64_t tightlru_evictions(struct tightlru *t);

#endif
