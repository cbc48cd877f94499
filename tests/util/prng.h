/*
 * prng.h - the one pseudo-random generator of the tests and stress
 * harnesses: splitmix64 over a counter.  Seedable, one state word per
 * thread, and a bijection of the counter, so distinct counters give
 * distinct values (keys never collide by accident).  The mixer is the
 * library's own (src/hash.h), not another copy.
 */
#ifndef ADMIT_PRNG_H
#define ADMIT_PRNG_H

#include <stdint.h>

#include "hash.h"

/* The value for counter i: splitmix64's output at state i + golden. */
static inline uint64_t
prng_mix(uint64_t i)
{
	return admit_mix64(i + ADMIT_GOLDEN64);
}

struct prng {
	uint64_t s;	/* the counter: any seed will do */
};

static inline uint64_t
prng_next(struct prng *r)
{
	return prng_mix(r->s++);
}

/* Uniform in [0, n), n > 0 (Lemire's multiply-shift, no division). */
static inline uint64_t
prng_below(struct prng *r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)prng_next(r) * n) >> 64);
}

/* Uniform in [0, 1), 53 random bits. */
static inline double
prng_unit(struct prng *r)
{
	return (double)(prng_next(r) >> 11) * 0x1p-53;
}

#endif /* ADMIT_PRNG_H */
