/*
 * maplru - the cache a user writes when they do not use a library: one
 * mutex around a chained hash map whose entries are also on a doubly linked
 * LRU list.  Fixed-size keys and values (8 and 32 bytes), a get copies the
 * value out and moves the entry to the front, a set inserts at the front and
 * evicts from the back.  bench_admission runs it beside admit_lru on the same
 * stream as the baseline for admit_lru's rows.
 */
#ifndef ADMIT_BENCH_MAPLRU_H
#define ADMIT_BENCH_MAPLRU_H

#include <stddef.h>
#include <stdint.h>

struct maplru;

/* A cache of at most capacity entries; NULL when out of memory. */
struct maplru *maplru_new(size_t capacity);
void maplru_free(struct maplru *m);

/* 1 and the value copied to val[0..32) when key is cached, else 0. */
int maplru_get(struct maplru *m, uint64_t key, unsigned char val[32]);

/* Stores key -> val[0..32), evicting the least recently used entry when full. */
void maplru_set(struct maplru *m, uint64_t key, const unsigned char val[32]);

#endif
