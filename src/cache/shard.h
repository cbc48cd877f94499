/*
 * shard.h - admit_lru's state and one shard's mechanisms put together:
 * its mutex, policy (policy.h), index (index.h), read buffer (readbuf.h),
 * reclamation (reclaim.h) and expiry (expiry.h), and the cache-wide
 * TinyLFU sketch and adaptation (adapt.h).  cache.c builds the public
 * operations on the calls here.
 *
 * Locks.  Each shard has one mutex, struct shard's `mu`.  A function
 * declared ADMIT_REQUIRES(s->mu) needs it held (clang's -Wthread-safety
 * checks this: make check-locks); shard_lock() takes it and runs the
 * shard's maintenance.  No thread holds two shard mutexes.  The TinyLFU
 * sketch is lock-free on its own; its contests run under the mutex of the
 * shard whose victim they judge, so that the victim cannot move.
 *
 * Maintenance (shard_lock, every locked path, as Caffeine's maintenance()):
 *   drain    the read buffer's events applied in order: a hit's move and
 *            count and the hits' TinyLFU records (a read's miss and quiet
 *            hit are counted by the read: shard_note_miss/quiet);
 *   reclaim  the dead entries no reader or slot can name any more freed;
 *   adapt    the adaptation's current configuration applied if it changed;
 *   expire   the entries whose time has come removed;
 *   evict    the bounds restored if anything left the shard over them.
 */
#ifndef ADMIT_CACHE_SHARD_H
#define ADMIT_CACHE_SHARD_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <admit/lru.h>

#include "alloc.h"
#include "cache/adapt.h"
#include "cache/entry.h"
#include "cache/expiry.h"
#include "cache/index.h"
#include "cache/listener.h"
#include "cache/locks.h"
#include "cache/readbuf.h"
#include "cache/reclaim.h"
#include "freqsketch.h"
#include "hash.h"
#include "policy.h"

/* Every field is under mu but c (constant), max_charge (atomic), and ix
 * and rb, whose readers' sides are lock-free (their headers). */
struct shard {
	alignas(ADMIT_CACHELINE) struct admit_mutex mu;
	struct admit_lru *c;
	struct admit_policy pol;        /* the lists, segments and contest */
	const struct entry *fresh;      /* the entry a set stores, until the
	                                 * policy drops it */
	bool forced;                    /* fresh wins every contest */
	unsigned config;                /* the adaptation's index applied */
	uint64_t entries, bytes;
	uint64_t max_entries, max_bytes;/* 0 = no such limit */
	_Atomic uint64_t max_charge;    /* max_bytes, for the checks made
	                                 * before the mutex is taken */
	struct admit_lru_stats st;      /* hits, misses, expired; the rest
	                                 * filled on read */
	struct admit_expiry exp;
	struct admit_gone gone;         /* removals: counts, and the entries
	                                 * the listener has still to see */
	/* What a get reads, apart from the lines writers dirty. */
	alignas(ADMIT_CACHELINE) struct admit_index ix;
	struct admit_readbuf rb;        /* a thread pushes to one ring */
	/* The writers' again, last: its limbo (half a KiB) in front of ix
	 * would move ix and rb, and with them the lines a get reads, to
	 * places where one thread's gets run a few per cent slower
	 * (bench_cache --stream). */
	struct admit_reclaim rec;
};

struct admit_loads;

struct admit_lru {
	struct shard *shards;
	unsigned nshards, shard_shift;
	bool by_bytes;                  /* weight unit: bytes, not entries */
	enum admit_lru_policy policy;
	uint64_t seed;
	struct admit_keyhash kh;        /* how the keys are hashed */
	struct admit_freqsketch *sketch;/* NULL for ADMIT_LRU_PLAIN */
	struct admit_adapt *adapt;      /* ADMIT_LRU_ADAPTIVE's, else NULL */
	struct admit_clock clock;
	_Atomic uint64_t pending;       /* callbacks queued, not yet done */
	admit_lru_listener_t listener;  /* constant; NULL: none */
	void *listener_arg;
	struct admit_loads *loads;      /* get_or_load's loads under way */
};

static inline struct shard *
shard_of(const struct admit_lru *c, uint64_t h)
{
	/* High bits pick the shard, low bits the bucket: independent. */
	return &c->shards[c->nshards == 1 ? 0 : h >> c->shard_shift];
}

/* One hash per request serves the index and the sketch alike: the
 * sketch's own (admit_tinylfu_hash), inline. */
static inline uint64_t
shard_hash(const struct admit_lru *c, const void *key, size_t klen)
{
	return admit_keyhash(&c->kh, key, klen);
}

/* The entries cfg's cache will hold: its capacity, or for a byte capacity
 * a guess (cache.c). */
uint64_t admit_cache_entries(const struct admit_lru_config *cfg);

/* Sets s up as shard i of n for cfg; ADMIT_NOMEM when out of memory. */
enum admit_status shard_init(struct admit_lru *c, struct shard *s,
                             const struct admit_lru_config *cfg, unsigned i,
                             unsigned window_percent) ADMIT_NO_TS;

/* With every callback done: frees what s holds. */
void shard_destroy(struct shard *s) ADMIT_NO_TS;

/* Takes s's mutex and runs its maintenance, which drains every ring: for
 * the calls that read what every thread's reads did (statistics, walks,
 * expiry). */
void shard_lock(struct shard *s) ADMIT_ACQUIRE(s->mu);

/* Takes s's mutex and runs its maintenance, which drains the caller's own
 * ring (and the others only when they hold dead entries back): for the
 * writing calls, which need their own thread's reads applied first.  The
 * lines of key hash h's index bucket and sketch counters, which the
 * writing call reads next, are requested before the maintenance, so that
 * their cache misses overlap it. */
void shard_lock_mine(struct shard *s, uint64_t h) ADMIT_ACQUIRE(s->mu);

static inline void shard_unlock(struct shard *s) ADMIT_RELEASE(s->mu);
static inline void
shard_unlock(struct shard *s)
{
	admit_mutex_unlock(&s->mu);
}

/* A writing call's unlock: releases s's mutex, then tells the listener of
 * the entries removed since the last delivery and retires them
 * (listener.h).  With none queued (always, without a listener),
 * shard_unlock. */
void shard_unlock_deliver_slow(struct shard *s) ADMIT_RELEASE(s->mu);
static inline void shard_unlock_deliver(struct shard *s) ADMIT_RELEASE(s->mu);
static inline void
shard_unlock_deliver(struct shard *s)
{
	if (__builtin_expect(s->gone.head != NULL, 0))
		shard_unlock_deliver_slow(s);
	else
		admit_mutex_unlock(&s->mu);
}

/* e (out of the policy and the index) has left for cause: counted, then
 * retired, or queued for the listener. */
void shard_gone_locked(struct shard *s, struct entry *e,
                       enum admit_lru_cause cause) ADMIT_REQUIRES(s->mu);

/* With no other call running: tells the listener of the entries still
 * queued and frees them. */
void shard_gone_destroy(struct shard *s) ADMIT_NO_TS;

/* A reader's lookup, in a read-side section: the entry of key or NULL.
 * Waits only for a grow of the index that raced a miss. */
static inline struct entry *
shard_lookup(struct shard *s, uint64_t h, const void *key, size_t klen)
	ADMIT_EXCLUDES(s->mu);
static inline __attribute__((always_inline)) struct entry *
shard_lookup(struct shard *s, uint64_t h, const void *key, size_t klen)
{
	struct entry *e;

	while (!admit_index_read(&s->ix, h, key, klen, &e)) {
		/* Rare: wait for the grow to end behind the mutex it holds. */
		admit_mutex_lock(&s->mu);
		admit_mutex_unlock(&s->mu);
	}
	return e;
}

/* The read buffer's counters (readbuf.h): reads that queue nothing. */
enum { SHARD_QUIET_HITS, SHARD_MISSES };
_Static_assert(SHARD_MISSES < ADMIT_READBUF_COUNTERS, "a counter each");

/* A read's quiet hit (policy.h): counted, on this thread's ring line. */
static inline void
shard_note_quiet(struct shard *s)
{
	admit_readbuf_count(&s->rb, SHARD_QUIET_HITS);
}

/* A read's miss: counted, as a quiet hit. */
static inline void
shard_note_miss(struct shard *s)
{
	admit_readbuf_count(&s->rb, SHARD_MISSES);
}

/* A read's hit on e (not quiet), of key hash h, queued for the drain with
 * h (so that the drain's TinyLFU record does not hash the key again), or,
 * when its ring is full, applied at once under the mutex: no access is
 * ever dropped.  Every half ring its reader runs the maintenance over its own
 * ring if the mutex is free (the holder drains otherwise), so the rings
 * seldom fill and a read seldom waits.  In the read-side section that
 * found e: reclaim.h relies on every push of an entry ending before the
 * grace period does. */
void shard_note_access_full(struct shard *s, struct entry *e, uint64_t h)
	ADMIT_EXCLUDES(s->mu);
void shard_try_maintain(struct shard *s) ADMIT_EXCLUDES(s->mu);
static inline void shard_note_access(struct shard *s, struct entry *e,
                                     uint64_t h) ADMIT_EXCLUDES(s->mu);
static inline __attribute__((always_inline)) void
shard_note_access(struct shard *s, struct entry *e, uint64_t h)
{
	uint64_t end = admit_readbuf_push_mine(&s->rb, (uintptr_t)e, h);

	if (!end)
		shard_note_access_full(s, e, h);
	else if (__builtin_expect(admit_readbuf_due(end), 0))
		shard_try_maintain(s);
}

/* The entry of key, with an expired one removed on the way and reported
 * absent; *where as admit_index_find's. */
struct entry *shard_find_live_locked(struct shard *s, uint64_t h,
                                     const void *key, size_t klen,
                                     _Atomic uintptr_t **where)
	ADMIT_REQUIRES(s->mu);

/* e (new, filled, unpublished) takes the place of old (found through
 * where by a lookup of h), or is inserted at where when old is NULL; then
 * the bounds are restored.  With force, e wins every admission contest it
 * meets there (ADMIT_LRU_STORE_FORCE).  False when e itself was dropped. */
bool shard_store_locked(struct shard *s, uint64_t h, struct entry *e,
                        struct entry *old, _Atomic uintptr_t *where,
                        bool force)
	ADMIT_REQUIRES(s->mu);

/* Takes e out of the policy and the index, for cause; freed after a grace
 * period (and after the listener saw it). */
void shard_remove_locked(struct shard *s, struct entry *e,
                         enum admit_lru_cause cause) ADMIT_REQUIRES(s->mu);

/* Hands the shard's dead entries towards freeing, if there are enough. */
static inline void shard_flush_locked(struct shard *s) ADMIT_REQUIRES(s->mu);
static inline void
shard_flush_locked(struct shard *s)
{
	admit_reclaim_flush_locked(&s->rec);
}

/* A hit's move to its list's MRU end, as a read's drained event makes. */
static inline void shard_hit_locked(struct shard *s, struct entry *e)
	ADMIT_REQUIRES(s->mu);
static inline void
shard_hit_locked(struct shard *s, struct entry *e)
{
	admit_policy_hit(&s->pol, &e->node);
}

/* The TinyLFU record of a request for hash h made under the mutex; e: the
 * live entry it hit, or NULL.  A hit's record is queued behind the reads
 * already buffered (so that a locked hit and a read then a write leave one
 * sketch), unless the adaptation's caller makes it; any other is made now. */
void shard_record_locked(struct shard *s, uint64_t h, struct entry *e)
	ADMIT_REQUIRES(s->mu);

/* Makes the unpublished e expire at when; false when out of memory. */
static inline bool shard_time_locked(struct shard *s, struct entry *e,
                                     uint64_t when) ADMIT_REQUIRES(s->mu);
static inline bool
shard_time_locked(struct shard *s, struct entry *e, uint64_t when)
{
	return admit_expiry_add_locked(&s->exp, &s->c->clock, e, when);
}

/* Adds s's counters to *sum. */
void shard_stats_locked(struct shard *s, struct admit_lru_stats *sum)
	ADMIT_REQUIRES(s->mu);

/* A new unpublished entry of c for key with room for a vlen-byte value
 * and, if timer, a timer; NULL when out of memory (or given an address
 * the index cannot tag).  The caller checked the sizes. */
struct entry *shard_entry_new(const struct admit_lru *c, uint64_t h,
                              const void *key, size_t klen, size_t vlen,
                              bool timer);

/* The largest charge one entry of s may have (0: no byte limit). */
static inline uint64_t
shard_max_charge(struct shard *s)
{
	/* relaxed: a bound only; admit_lru_set_capacity may change it, and a
	 * check against either the old or the new one is right (an entry
	 * over the bound then in force is evicted). */
	return atomic_load_explicit(&s->max_charge, memory_order_relaxed);
}

#endif /* ADMIT_CACHE_SHARD_H */
