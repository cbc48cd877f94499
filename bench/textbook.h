/*
 * textbook.h - the cuckoo filter a user would write from the paper: Fan,
 * Andersen, Kaminsky, Mitzenmacher, "Cuckoo Filter: Practically Better Than
 * Bloom", CoNEXT 2014, §3: a power-of-two table of buckets of 4 slots of f
 * bits (8 or 16), partial-key cuckoo hashing (the alternate bucket is
 * i xor hash(fingerprint)), insertion by a random walk of evictions bounded
 * by a kick limit (500), one stashed victim when the walk gives up.
 *
 * Single-threaded, no locks, no atomics: the baseline bench_cuckoo divides
 * admit by.  Its lookup is static inline, as the paper authors' header-only
 * C++ library is in a user's program; insert and delete are in textbook.c.
 * Written for this benchmark from the paper's description; it is given the
 * same 64-bit hash as admit (XXH3 of the key, inlined).
 */
#ifndef ADMIT_BENCH_TEXTBOOK_H
#define ADMIT_BENCH_TEXTBOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hash.h"

#define TEXTBOOK_SLOTS 4
#define TEXTBOOK_MAX_KICKS 500

struct bench_textbook {
	unsigned char *table;   /* buckets of 4 * bits / 8 bytes */
	uint64_t mask;          /* buckets - 1 */
	uint64_t seed;
	unsigned bits;          /* 8 or 16 */
	uint64_t rng;           /* the random walk's choices */
	bool has_victim;        /* the walk gave up: the filter is full */
	uint64_t victim_bucket;
	uint32_t victim_fp;
	uint64_t items;
};

/* A filter of the smallest power of two of buckets that holds `items` at
 * no more than 96 % load. NULL if out of memory or bits is not 8 or 16. */
struct bench_textbook *bench_textbook_new(uint64_t items, unsigned bits,
                                          uint64_t seed);
void bench_textbook_free(struct bench_textbook *t);
/* False when the filter is full (a victim is stashed and it takes no more). */
bool bench_textbook_insert(struct bench_textbook *t, uint64_t key);
bool bench_textbook_delete(struct bench_textbook *t, uint64_t key);
size_t bench_textbook_memory(const struct bench_textbook *t);

/* The paper's hash of the fingerprint for the alternate bucket: any mixer
 * will do; one multiply by an odd constant is the cheap one. */
static inline uint64_t
textbook_alt(const struct bench_textbook *t, uint64_t i, uint32_t fp)
{
	return (i ^ ((uint64_t)fp * 0x9e3779b1u)) & t->mask;
}

static inline void
textbook_locate(const struct bench_textbook *t, uint64_t key, uint64_t *i,
                uint32_t *fp)
{
	uint64_t h = admit_hash(&key, sizeof(key), t->seed);
	uint32_t f = (uint32_t)h & ((1u << t->bits) - 1);

	*fp = f + (f == 0); /* 0 marks an empty slot */
	*i = (h >> 32) & t->mask;
}

/* A bucket as one word: 4 x 8 bits in 32, or 4 x 16 in 64. */
static inline uint64_t
textbook_bucket(const struct bench_textbook *t, uint64_t i)
{
	if (t->bits == 8) {
		uint32_t w;

		memcpy(&w, t->table + i * 4, 4);
		return w;
	} else {
		uint64_t w;

		memcpy(&w, t->table + i * 8, 8);
		return w;
	}
}

/* Does the word hold fp in one of its lanes? (x ^ fp in every lane, then
 * the classic "has a zero byte/half-word" test.) */
static inline bool
textbook_has(const struct bench_textbook *t, uint64_t w, uint32_t fp)
{
	if (t->bits == 8) {
		uint32_t x = (uint32_t)w ^ (fp * 0x01010101u);

		return ((x - 0x01010101u) & ~x & 0x80808080u) != 0;
	} else {
		uint64_t x = w ^ (fp * 0x0001000100010001ull);

		return ((x - 0x0001000100010001ull) & ~x & 0x8000800080008000ull) != 0;
	}
}

static inline bool
bench_textbook_contains(const struct bench_textbook *t, uint64_t key)
{
	uint64_t i1, i2;
	uint32_t fp;

	textbook_locate(t, key, &i1, &fp);
	i2 = textbook_alt(t, i1, fp);
	if (textbook_has(t, textbook_bucket(t, i1), fp) ||
	    textbook_has(t, textbook_bucket(t, i2), fp))
		return true;
	return t->has_victim && t->victim_fp == fp &&
	       (t->victim_bucket == i1 || t->victim_bucket == i2);
}

#endif /* ADMIT_BENCH_TEXTBOOK_H */
