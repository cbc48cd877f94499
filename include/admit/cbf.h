/*
 * admit/cbf.h - a blocked counting Bloom filter.
 *
 * A counting Bloom filter keeps, per key, k small counters instead of k bits,
 * so it can remove keys, estimate how often a key was added (the minimum of
 * its counters, never below the truth unless keys were removed), and age by
 * halving.  This one stores 4-bit counters, 16 to a 64-bit word, and puts all
 * k counters of a key in one 64-byte block (Putze, Sanders, Singler, "Cache-,
 * hash- and space-efficient Bloom filters", JEA 2009), so every operation
 * costs one cache miss.  Counters saturate at 15 and never wrap.
 *
 * Updates are lock-free compare-and-swaps on the words of the key's block.
 * An update of one key is not one atomic step across several words: a
 * concurrent reader may see some of its counters raised and not yet others,
 * and two threads adding the SAME key at the same instant may count it once
 * (each sees the other's raise as "already above the minimum").  Adds of
 * different keys are never lost to each other.
 *
 * Keys are any bytes; len may be 0 (key may then be NULL).  Every call is
 * thread-safe unless it says otherwise.
 */
#ifndef ADMIT_CBF_H
#define ADMIT_CBF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <admit/allocator.h>
#include <admit/status.h>

#ifdef __cplusplus
extern "C" {
#endif

ADMIT_API_BEGIN

struct admit_cbf;

/* Largest counter value: counters saturate here. */
#define ADMIT_CBF_COUNTER_MAX 15u

/* Bounds on the parameters of admit_cbf_new(). */
#define ADMIT_CBF_MAX_ITEMS ((uint64_t)1 << 36)
#define ADMIT_CBF_MIN_FPR 1e-9

/*
 * admit_cbf_new - an empty filter for n keys at false-positive rate fpr.
 *
 * Sized by the usual formulas, m = -n ln(fpr) / (ln 2)^2 counters rounded up
 * to whole 128-counter blocks and k = round(m/n ln 2) counters per key
 * (admit_cbf_counters() and admit_cbf_hashes() report them).  Those formulas
 * are for an unblocked filter; blocking trades accuracy for the single cache
 * miss.  At n = 100,000 a target of 10 % gives 10.6 %, 1 % gives 1.69 % and
 * 0.1 % gives 0.42 % (measured, and as the exact formula for the blocked
 * layout predicts; tests/test_cbf.c checks both).  Ask for a third of the
 * rate you need below 1 %.  seed 0 means random (getrandom).
 *
 * Errors: ADMIT_EINVAL if out is NULL, n is 0 or above ADMIT_CBF_MAX_ITEMS,
 * or fpr is not in [ADMIT_CBF_MIN_FPR, 1) (NaN included); ADMIT_NOMEM.
 * On error *out is untouched.
 *
 * Thread-safety: safe (each call makes a new, independent filter).
 */
enum admit_status admit_cbf_new(uint64_t n, double fpr, uint64_t seed,
                                struct admit_cbf **out);

/* Creation parameters of admit_cbf_new_config(); zero fields are defaults
 * as in admit_cbf_new(). */
struct admit_cbf_config {
	uint64_t items;  /* n: required */
	double   fpr;    /* required */
	uint64_t seed;   /* 0 = random */
	const struct admit_allocator *alloc; /* where its memory comes from;
	                    NULL = the library's (admit/allocator.h) */
};

/*
 * admit_cbf_new_config - admit_cbf_new() with every parameter in a config,
 * the allocator included.
 *
 * Errors: ADMIT_EINVAL if cfg is NULL, else as admit_cbf_new().
 *
 * Thread-safety: safe (each call makes a new, independent filter).
 */
enum admit_status admit_cbf_new_config(const struct admit_cbf_config *cfg,
                                       struct admit_cbf **out);

/*
 * admit_cbf_free - release a filter.  NULL is a no-op.
 *
 * Thread-safety: NOT thread-safe with any other call on the same filter.
 */
void admit_cbf_free(struct admit_cbf *f);

/*
 * admit_cbf_add - count one more occurrence of key, by conservative update:
 * only the counters equal to the key's current minimum are raised, which
 * keeps estimates of other keys from growing needlessly.  A key whose
 * minimum is already 15 stays there.
 *
 * Errors: ADMIT_EINVAL if f is NULL or key is NULL with len > 0.
 *
 * Thread-safety: safe; lock-free.
 */
enum admit_status admit_cbf_add(struct admit_cbf *f, const void *key,
                                size_t len);

/*
 * admit_cbf_remove - take one occurrence of key away: every counter of the
 * key above 0 and below 15 is decremented (a saturated counter has lost its
 * true value and stays).
 *
 * Remove only keys you added.  Because add is conservative, a counter may be
 * shared with another key whose count it does not fully include; removing
 * can then make that key's estimate low, or 0.  Callers that need exact
 * deletion use a counting admit_cuckoo filter.
 *
 * Errors: ADMIT_NOTFOUND if the key's estimate is 0 (nothing changed);
 * ADMIT_EINVAL as for admit_cbf_add().
 *
 * Thread-safety: safe; lock-free.
 */
enum admit_status admit_cbf_remove(struct admit_cbf *f, const void *key,
                                   size_t len);

/*
 * admit_cbf_estimate - how often key was added (0 to 15): the minimum of its
 * counters.  Never below the truth for a key added and not removed (and not
 * aged), above it with the false-positive mechanism.  0 on bad input.
 *
 * Thread-safety: safe; wait-free.
 */
unsigned admit_cbf_estimate(const struct admit_cbf *f, const void *key,
                            size_t len);

/*
 * admit_cbf_contains - admit_cbf_estimate() > 0: no false negatives, false
 * positives at about the rate chosen at creation.  false on bad input.
 *
 * Thread-safety: safe; wait-free.
 */
bool admit_cbf_contains(const struct admit_cbf *f, const void *key, size_t len);

/*
 * admit_cbf_halve - age the filter: every counter is halved (rounded down).
 * Runs word by word while other threads keep adding; an add racing with it
 * may or may not be halved.
 *
 * Errors: ADMIT_EINVAL if f is NULL.
 *
 * Thread-safety: safe.
 */
enum admit_status admit_cbf_halve(struct admit_cbf *f);

/*
 * admit_cbf_clear - set every counter to 0, word by word (adds racing with it
 * may survive).
 *
 * Errors: ADMIT_EINVAL if f is NULL.
 *
 * Thread-safety: safe.
 */
enum admit_status admit_cbf_clear(struct admit_cbf *f);

/*
 * admit_cbf_counters - m, the number of 4-bit counters (a multiple of 128).
 * admit_cbf_hashes - k, the counters per key.
 * admit_cbf_memory - bytes of the counter table (m / 2).
 * All return 0 if f is NULL.
 *
 * Thread-safety: safe.
 */
uint64_t admit_cbf_counters(const struct admit_cbf *f);
unsigned admit_cbf_hashes(const struct admit_cbf *f);
size_t admit_cbf_memory(const struct admit_cbf *f);

/*
 * admit_cbf_footprint - every byte the filter holds from its allocator
 * (admit/allocator.h), its struct and alignment padding included.  0 for
 * NULL.
 *
 * Thread-safety: safe (fixed from creation to free).
 */
size_t admit_cbf_footprint(const struct admit_cbf *f);

ADMIT_API_END

#ifdef __cplusplus
}
#endif

#endif /* ADMIT_CBF_H */
