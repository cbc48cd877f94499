/*
 * expiry.h - expiring entries: their timers, a shard's timer wheel
 * (timer_wheel.h), and the cache's clock.
 *
 * A timed entry carries a struct admit_expiry_timer after its data, in the
 * same allocation (untimed entries pay nothing); its time never changes
 * once the entry is published, so a reader checks it like the value: an
 * expired entry is a miss at once (admit_expiry_expired).  Each shard's
 * wheel holds its timed entries' timers; the shard's maintenance advances
 * it to the clock and removes what is due, so an expired entry's capacity
 * goes back without a reader asking.
 *
 * The *_locked calls are the shard's (its mutex held).
 */
#ifndef ADMIT_CACHE_EXPIRY_H
#define ADMIT_CACHE_EXPIRY_H

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/entry.h"
#include "timer_wheel.h"

/* The time source of a cache: fn(arg) in nanoseconds, or the coarse
 * monotonic clock when fn is NULL. */
struct admit_clock {
	uint64_t (*fn)(void *arg);
	void *arg;
};

uint64_t admit_clock_now(const struct admit_clock *k);

struct admit_expiry_timer {
	struct admit_timer t;
	struct entry *e;                /* whose timer */
};

struct admit_expiry {
	struct admit_wheel *wheel;      /* NULL until the first timed entry */
};

static inline size_t
admit_expiry_timer_offset(size_t klen, size_t vlen)
{
	size_t a = alignof(struct admit_expiry_timer);

	return (offsetof(struct entry, data) + klen + vlen + a - 1) & ~(a - 1);
}

/* Bytes to allocate for an entry of klen + vlen bytes, with room for a
 * timer if timer. */
static inline size_t
admit_expiry_entry_size(size_t klen, size_t vlen, bool timer)
{
	return timer ? admit_expiry_timer_offset(klen, vlen) +
	               sizeof(struct admit_expiry_timer)
	             : ADMIT_ENTRY_HEADER + klen + vlen;
}

static inline struct admit_expiry_timer *
admit_expiry_timer_of(const struct entry *e)
{
	return (struct admit_expiry_timer *)((char *)e +
	                                     admit_expiry_timer_offset(admit_entry_klen(e),
	                                                               e->vlen));
}

/* When e expires; 0: never. */
static inline uint64_t
admit_expiry_when(const struct entry *e)
{
	return admit_entry_timed(e) ? admit_expiry_timer_of(e)->t.when : 0;
}

/* Whether e's time has come.  Safe in a read-side section: timed and the
 * time never change. */
static inline bool
admit_expiry_expired(const struct admit_clock *k, const struct entry *e)
{
	return admit_entry_timed(e) && admit_expiry_timer_of(e)->t.when <= admit_clock_now(k);
}

/* Makes the unpublished e (allocated with room for a timer) expire at when
 * (not 0) in x's wheel, made on first use; false when out of memory. */
bool admit_expiry_add_locked(struct admit_expiry *x, const struct admit_clock *k,
                             struct entry *e, uint64_t when);

/* e leaves the cache: its timer, if any, leaves the wheel. */
static inline void
admit_expiry_remove_locked(struct entry *e)
{
	if (admit_entry_timed(e))
		admit_wheel_remove(&admit_expiry_timer_of(e)->t);
}

/* Advances x's wheel to the clock (to within the wheel's 67 ms tick) and
 * calls drop(ctx, e) for each entry due, its timer already out of the
 * wheel; returns how many. */
size_t admit_expiry_advance_locked(struct admit_expiry *x,
                                   const struct admit_clock *k,
                                   void (*drop)(void *ctx, struct entry *e),
                                   void *ctx);

void admit_expiry_destroy(struct admit_expiry *x);

#endif /* ADMIT_CACHE_EXPIRY_H */
