/*
 * hash.h - the one place admit hashes keys, mixes words and checks a key
 * argument.
 *
 * XXH3 is inlined: through libxxhash.so an 8-byte key costs about 6 ns, as
 * much as a quarter of a lookup; inlined it costs about 1.9 ns.
 */
#ifndef ADMIT_HASH_H
#define ADMIT_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static inline uint64_t
admit_hash(const void *key, size_t len, uint64_t seed)
{
	/* XXH3 never reads a 0-length input, but a NULL argument is UB to form
	 * arithmetic on; give it a real address. */
	static const char empty[1];

	/* 8-byte keys (integers, pointers, other hashes) are the common case;
	 * with the length a constant the compiler reduces XXH3 to its 4-to-8
	 * byte path, inline (same value: it is the same function). */
	if (len == 8)
		return XXH3_64bits_withSeed(key, 8, seed);
	return XXH3_64bits_withSeed(len ? key : empty, len, seed);
}

/*
 * admit_hash(key, 8, seed), cheaper for a caller that hashes many keys with
 * one seed: admit_hash8_prepare(seed) once, then admit_hash8(key, prepared,
 * seed) per key.  XXH3's 4-to-8-byte path (the XXH3 specification,
 * doc/xxhash_spec.md of the xxHash project) keys the input with the
 * default secret's bytes 8..23 minus a mix of the seed; that difference is
 * what admit_hash8_prepare() computes, so a lookup pays neither the seed's
 * mix (a byte swap, two shifts, an xor and a subtraction) nor the second
 * 4-byte load of the key.  On a big-endian host the call is XXH3's own.
 * test_cuckoo's test_hash8 compares it with XXH3_64bits_withSeed().
 */
#define ADMIT_XXH3_SECRET_8_24 0xc73ab174c5ecd5a2ull

static inline uint64_t
admit_rotl64(uint64_t x, unsigned r)
{
	return x << r | x >> (64 - r);
}

static inline uint64_t
admit_hash8_prepare(uint64_t seed)
{
	uint64_t s = seed ^ (uint64_t)__builtin_bswap32((uint32_t)seed) << 32;

	return ADMIT_XXH3_SECRET_8_24 - s;
}

static inline uint64_t
admit_hash8(const void *key, uint64_t prepared, uint64_t seed)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t m = 0x9fb21c651e98df25ull;
	uint64_t x;

	(void)seed;
	memcpy(&x, key, 8);
	/* The spec's input64: the last 4 bytes, plus the first 4 above them
	 * (a rotation of the little-endian word). */
	x = admit_rotl64(x, 32) ^ prepared;
	x ^= admit_rotl64(x, 49) ^ admit_rotl64(x, 24);
	x *= m;
	x ^= (x >> 35) + 8;
	x *= m;
	return x ^ x >> 28;
#else
	(void)prepared;
	return XXH3_64bits_withSeed(key, 8, seed);
#endif
}

/* 2^64 divided by the golden ratio, rounded to odd: a Weyl-sequence step
 * that visits every 64-bit value, and a constant that hides no structure. */
#define ADMIT_GOLDEN64 0x9e3779b97f4a7c15ull

/* splitmix64's finaliser (Steele, Lea and Flood, OOPSLA 2014): a cheap
 * bijection on 64 bits in which every output bit depends on every input
 * bit, for deriving independent words from one hash or a counter.  The one
 * 64-bit mixer in src/. */
static inline uint64_t
admit_mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * The cuckoo filter's hash of an 8-byte key (snapshot format 2): with x
 * the key read little-endian, the 128-bit product (x ^ s) * (rotl(x, 32) ^
 * k), its two halves xored, k and s two words drawn from the seed by
 * admit_mul8_prepare().  A product of two functions of the key, not the
 * key times a constant: a linear hash puts consecutive integers on a
 * lattice of (bucket, fingerprint) pairs, and cuckoo paths between them
 * run out long before the table is full.  The high half carries what the
 * low half's low bits lack.  Four instructions on x86-64, where XXH3's
 * 8-byte path takes about twenty: on a table larger than the caches, the
 * instructions between a lookup's misses decide how many lookups the core
 * overlaps.
 */
struct admit_mul8 {
	uint64_t k, s;
};

static inline struct admit_mul8
admit_mul8_prepare(uint64_t seed)
{
	return (struct admit_mul8){ admit_mix64(seed),
	                            admit_mix64(seed + ADMIT_GOLDEN64) };
}

static inline uint64_t
admit_mul8(const void *key, uint64_t k, uint64_t s)
{
	unsigned __int128 p;
	uint64_t x;

	memcpy(&x, key, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	x = __builtin_bswap64(x);
#endif
	p = (unsigned __int128)(x ^ s) * (admit_rotl64(x, 32) ^ k);
	return (uint64_t)(p >> 64) ^ (uint64_t)p;
}

/* A key argument is valid when it points somewhere or is empty: the one
 * check every call that takes (key, len) makes before anything else. */
static inline bool
admit_key_ok(const void *key, size_t len)
{
	return key || len == 0;
}

/* Lemire's multiply-shift: maps x uniformly onto [0, m) without a division,
 * so m need not be a power of two. */
static inline uint32_t
admit_fastrange32(uint32_t x, uint32_t m)
{
	return (uint32_t)(((uint64_t)x * m) >> 32);
}

/* murmur3's finaliser: a cheap bijection that spreads a small integer (a
 * fingerprint) over all 32 bits before it is ranged. */
static inline uint32_t
admit_mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x85ebca6bu;
	x ^= x >> 13;
	x *= 0xc2b2ae35u;
	x ^= x >> 16;
	return x;
}

/* A seed nobody outside the process can predict (getrandom), falling back to
 * the clock and an address if the kernel refuses.  Never 0. */
uint64_t admit_random_seed(void);

#endif /* ADMIT_HASH_H */
