/*
 * admit/tinylfu.h - TinyLFU cache admission.
 *
 * TinyLFU (Einziger, Friedman, Manes, ACM ToS 2017) keeps an approximate,
 * aging access frequency for every key a cache sees, resident or not, and
 * answers one question when the cache must evict: does the newcomer deserve
 * the victim's place?  A key's first sighting in the current sample goes into
 * a doorkeeper (an admit_cbf); later sightings count in a counting
 * admit_cuckoo filter (4-bit counters).  Every W recorded accesses (the
 * sample size, 10 x the cache capacity by default) the counters are halved,
 * entries that reach 0 are deleted and the doorkeeper is cleared, so the
 * frequencies follow a changing workload.
 *
 * Memory is sized from the cache, not from the sample: the doorkeeper and the
 * frequency store are made for W/2 keys but never more than 5 per cache
 * entry (W/2 at the default W), at most 36 bytes per entry in all, plus up
 * to 264 KiB of lock stripes and the instance, whatever sample_size says.  A
 * longer sample does not grow them: once the store is full, a new key
 * replaces the lowest count of its two buckets (admit_tinylfu_record()).
 *
 * For callers that already hash their keys (an LRU that looks a key up, then
 * records it, then asks admit() about it): admit_tinylfu_hash() computes the
 * instance's 64-bit hash once, and the *_hash variants take it instead of the
 * key bytes.  admit_tinylfu_record(t, k, n) is exactly
 * admit_tinylfu_record_hash(t, admit_tinylfu_hash(t, k, n)), and likewise for
 * estimate and admit.
 *
 * Every call is thread-safe unless it says otherwise, and none takes a global
 * lock: the doorkeeper is lock-free, the frequency store is lock-striped with
 * optimistic reads, the record counter is striped per thread
 * (doc/design.md §6).
 */
#ifndef ADMIT_TINYLFU_H
#define ADMIT_TINYLFU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <admit/allocator.h>
#include <admit/status.h>

#ifdef __cplusplus
extern "C" {
#endif

ADMIT_API_BEGIN

struct admit_tinylfu;

/*
 * Creation parameters for admit_tinylfu_new_config().  Zero a struct and set
 * what you need: every zero field means "default".
 */
struct admit_tinylfu_config {
	uint64_t cache_capacity; /* entries of the cache it serves; required */
	uint64_t sample_size;    /* W: records between agings; 0 = 10 x capacity.
	                            Does not size the tables (see above). */
	uint64_t seed;           /* hash and random seed; 0 = random */
	unsigned warm;           /* estimate from which a losing or tying
	                            candidate may still win by chance; 0 = 6 */
	unsigned chance_shift;   /* that chance is 1 / 2^chance_shift; 0 = 7
	                            (1/128); 64 or more disables it */
	const struct admit_allocator *alloc; /* where the instance, its
	                            doorkeeper and its store take their memory;
	                            NULL = the library's (admit/allocator.h) */
};

/* Largest cache_capacity accepted: the tables must stay addressable. */
#define ADMIT_TINYLFU_MAX_CAPACITY ((uint64_t)1 << 32)

/*
 * admit_tinylfu_new - a TinyLFU for a cache of cache_capacity entries, with
 * all other parameters at their defaults.  seed 0 means random (getrandom);
 * fix it only for reproducible tests: a known seed lets an attacker craft
 * colliding keys.
 *
 * Errors: ADMIT_EINVAL if out is NULL or cache_capacity is 0 or above
 * ADMIT_TINYLFU_MAX_CAPACITY; ADMIT_NOMEM.  On error *out is untouched.
 *
 * Thread-safety: safe (each call makes a new, independent instance).
 */
enum admit_status admit_tinylfu_new(uint64_t cache_capacity, uint64_t seed,
                                    struct admit_tinylfu **out);

/*
 * admit_tinylfu_new_config - as admit_tinylfu_new() with every parameter.
 *
 * Errors: ADMIT_EINVAL if cfg or out is NULL, the capacity is 0 or above
 * ADMIT_TINYLFU_MAX_CAPACITY, or sample_size is above 2^40; ADMIT_NOMEM.
 *
 * Thread-safety: safe.
 */
enum admit_status admit_tinylfu_new_config(const struct admit_tinylfu_config *cfg,
                                           struct admit_tinylfu **out);

/*
 * admit_tinylfu_free - release an instance.  NULL is a no-op.
 *
 * Thread-safety: NOT thread-safe with any other call on the same instance.
 */
void admit_tinylfu_free(struct admit_tinylfu *t);

/*
 * admit_tinylfu_record - count one access to key (call it on every access,
 * hit or miss).  Every sample_size-th record across all threads ages the
 * counters; the thread whose record crosses the boundary does the aging
 * (a walk of the frequency table) while the others carry on.
 *
 * When the frequency store has no free slot for a new key, the entry with
 * the lowest count in the key's two buckets is replaced: recording never
 * fails for lack of room.
 *
 * Errors: ADMIT_EINVAL if t is NULL or key is NULL with len > 0.
 *
 * Thread-safety: safe; blocking: a second sighting takes two of the
 * frequency store's stripes, and one that must move entries to make room
 * waits for an aging in progress to end.
 */
enum admit_status admit_tinylfu_record(struct admit_tinylfu *t, const void *key,
                                       size_t len);

/*
 * admit_tinylfu_estimate - the key's frequency in the current sample: 1 if
 * the doorkeeper holds it, plus its 4-bit counter, so 0 to 16.  May
 * over-estimate (hash collisions), never under-estimates a key recorded in
 * the current sample below saturation, except that a record racing an aging
 * may or may not have been halved.  Returns 0 on bad input.
 *
 * Thread-safety: safe; optimistic: waits only while a writer holds one of
 * the key's stripes in the frequency store.
 */
unsigned admit_tinylfu_estimate(const struct admit_tinylfu *t, const void *key,
                                size_t len);

/*
 * admit_tinylfu_admit - should candidate replace victim in the cache?
 *
 * True when the candidate's estimate is higher than the victim's.  When it
 * ties or loses, a warm candidate (estimate >= cfg.warm) still wins with a
 * small probability (1 / 2^chance_shift) drawn from the instance's own random
 * state.  That defends against an attacker who keeps a victim's frequency
 * pinned high (or floods collisions on a guessed hash) to lock every newcomer
 * out: real popular newcomers still get in, one-hit wonders do not.  Neither
 * key is recorded.  Returns false on bad input.
 *
 * Thread-safety: safe; optimistic like admit_tinylfu_estimate().
 */
bool admit_tinylfu_admit(struct admit_tinylfu *t, const void *candidate,
                         size_t clen, const void *victim, size_t vlen);

/*
 * admit_tinylfu_hash - the instance's seeded 64-bit hash of key, for the
 * *_hash variants below.  0 if t is NULL or key is NULL with len > 0.
 *
 * Thread-safety: safe.
 */
uint64_t admit_tinylfu_hash(const struct admit_tinylfu *t, const void *key,
                            size_t len);

/* The three calls above with a hash from admit_tinylfu_hash() of the SAME
 * instance in place of the key.  Errors and thread-safety as above. */
enum admit_status admit_tinylfu_record_hash(struct admit_tinylfu *t,
                                            uint64_t hash);
unsigned admit_tinylfu_estimate_hash(const struct admit_tinylfu *t,
                                     uint64_t hash);
bool admit_tinylfu_admit_hash(struct admit_tinylfu *t, uint64_t candidate,
                              uint64_t victim);

/*
 * admit_tinylfu_memory - bytes of the doorkeeper and frequency tables (the
 * instance itself adds about 1.5 KiB, the store's lock stripes up to
 * 264 KiB); at most 36 x cache_capacity, whatever the sample size.  0 if t
 * is NULL.
 *
 * Thread-safety: safe.
 */
size_t admit_tinylfu_memory(const struct admit_tinylfu *t);

/*
 * admit_tinylfu_footprint - every byte the instance holds from its
 * allocator (admit/allocator.h): its own struct, the doorkeeper's and the
 * store's admit_cbf_footprint() and admit_cuckoo_footprint().  0 for NULL.
 *
 * Thread-safety: safe (fixed from creation to free).
 */
size_t admit_tinylfu_footprint(const struct admit_tinylfu *t);

/* What an instance has done, for tests and tuning. */
struct admit_tinylfu_stats {
	uint64_t sample_size;  /* W */
	uint64_t records;      /* accesses recorded */
	uint64_t agings;       /* times the counters were halved */
	uint64_t replaced;     /* frequency entries replaced when full */
	uint64_t random_admits; /* admit() wins by the random chance */
	uint64_t freq_entries; /* keys in the frequency store now */
	uint64_t freq_slots;   /* its capacity: entries / slots is its load */
};

/*
 * admit_tinylfu_stats - copy the instance's counters into *out.
 *
 * Errors: ADMIT_EINVAL if t or out is NULL.
 *
 * Thread-safety: safe; each counter is read atomically.
 */
enum admit_status admit_tinylfu_stats(const struct admit_tinylfu *t,
                                      struct admit_tinylfu_stats *out);

ADMIT_API_END

#ifdef __cplusplus
}
#endif

#endif /* ADMIT_TINYLFU_H */
