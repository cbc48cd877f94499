/*
 * stress_common.h - what the stress harnesses share: the tests' PRNG, keys
 * whose filter signatures are all distinct, a clock, and failure reporting.
 *
 * Harness state shared between threads uses seq_cst atomics throughout:
 * these programs check the library's ordering, so their own must be the
 * simplest to reason about, and their speed matters little.
 */
#ifndef ADMIT_STRESS_COMMON_H
#define ADMIT_STRESS_COMMON_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuckoo_internal.h"
#include "prng.h"

/* The generator (struct prng, prng_next, prng_below) and the key mixer
 * (prng_mix, a bijection, so distinct ids give distinct keys) are the
 * tests' own: tests/util/prng.h. */

static inline double
stress_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline uint64_t
stress_seed_from_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return prng_mix((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
	                  (uint64_t)getpid()) | 1;
}

/* Failures are counted and the first few printed; a run fails if any. */
static _Atomic uint64_t stress_failures;

static inline void
stress_fail(const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&stress_failures, 1) >= 20)
		return;
	va_start(ap, fmt);
	fputs("FAIL: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/*
 * n keys (8 bytes each) whose signatures in f, (lower bucket, fingerprint),
 * are pairwise distinct.  Two keys with one signature are indistinguishable
 * to the filter; excluding them makes the harnesses' models exact: a key's
 * entries in its buckets are its own, and contains() of an absent key is
 * false.  Ids are drawn from a seeded stream so a seed replays the keys.
 */
static inline uint64_t *
stress_distinct_keys(const struct admit_cuckoo *f, size_t n, uint64_t seed)
{
	size_t cap = 16;
	uint64_t *set, *keys = malloc(n * sizeof(*keys));
	uint64_t id = seed * 0x100000000ull;

	while (cap < 2 * n)
		cap <<= 1;
	set = calloc(cap, sizeof(*set));
	if (!keys || !set) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	for (size_t got = 0; got < n; id++) {
		uint64_t key = prng_mix(id), sig;
		struct cuckoo_pos p;
		size_t h;

		cuckoo_locate(f, &key, sizeof(key), &p);
		sig = ((uint64_t)(p.i1 < p.i2 ? p.i1 : p.i2) << 32 | p.fp) + 1;
		for (h = prng_mix(sig) & (cap - 1); set[h] && set[h] != sig;
		     h = (h + 1) & (cap - 1))
			;
		if (set[h])
			continue;
		set[h] = sig;
		keys[got++] = key;
	}
	free(set);
	return keys;
}

static inline unsigned
stress_default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? 2 * (unsigned)n : 4;
}

#endif /* ADMIT_STRESS_COMMON_H */
