/*
 * cache_value.h - self-checking values for the concurrent admit_lru checks
 * (stress/stress_cache, tests/test_lru): a torn copy, or another key's
 * value, fails cache_value_check.
 *
 * Layout: key (8) | writer (8) | filler (len - 24) | checksum (8), the
 * checksum FNV-1a over all before it.
 */
#ifndef ADMIT_CACHE_VALUE_H
#define ADMIT_CACHE_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CACHE_VALUE_MIN 24

static inline uint64_t
cache_value_sum(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* Writes a value of len bytes (CACHE_VALUE_MIN or more) into v. */
static inline size_t
cache_value_make(unsigned char *v, size_t len, uint64_t key, uint64_t writer)
{
	uint64_t sum;

	memcpy(v, &key, 8);
	memcpy(v + 8, &writer, 8);
	for (size_t i = 16; i < len - 8; i++)
		v[i] = (unsigned char)(key * 31 + writer + i);
	sum = cache_value_sum(v, len - 8);
	memcpy(v + len - 8, &sum, 8);
	return len;
}

/* Whether v[0..len) is a whole value of key, at most max bytes long. */
static inline bool
cache_value_check(const unsigned char *v, size_t len, uint64_t key, size_t max)
{
	uint64_t k, sum;

	if (len < CACHE_VALUE_MIN || len > max)
		return false;
	memcpy(&k, v, 8);
	memcpy(&sum, v + len - 8, 8);
	return k == key && sum == cache_value_sum(v, len - 8);
}

#endif /* ADMIT_CACHE_VALUE_H */
