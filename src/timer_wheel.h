/*
 * timer_wheel.h - a hierarchical timer wheel (Varghese and Lauck, "Hashed
 * and Hierarchical Timing Wheels", SOSP 1987): O(1) add and remove, and an
 * advance whose cost is bounded by the buckets it passes (at most 64 per
 * level) plus the timers it fires or moves down a level.  admit_lru keeps
 * one per shard for its expiring entries.
 *
 * Time is a uint64_t count of nanoseconds from any origin.  Level L's
 * buckets are 2^(26 + 6 L) ns wide (about 67 ms, 4.3 s, 4.6 min, 4.9 h,
 * 13 days), 64 per level; a timer beyond the top level's 2.3 years waits in
 * its farthest bucket and is placed again when that bucket comes round.
 * A timer fires at the first advance that leaves the 67 ms tick its time
 * falls in (never before its time); fire sooner by checking the time where
 * it matters, as admit_lru's get does.
 *
 * Intrusive and single-threaded: the timer lives in the caller's object;
 * the caller serialises every call on a wheel and its timers (admit_lru:
 * the shard mutex).  Nothing here allocates but admit_wheel_new.
 */
#ifndef ADMIT_TIMER_WHEEL_H
#define ADMIT_TIMER_WHEEL_H

#include <stddef.h>
#include <stdint.h>

struct admit_timer {
	struct admit_timer *prev, *next;  /* NULL when in no wheel */
	uint64_t when;                    /* set before admit_wheel_add; the
	                                   * wheel never writes it */
};

struct admit_wheel;

#define ADMIT_WHEEL_TICK_SHIFT 26         /* level 0's bucket: 2^26 ns */

/* A wheel whose time is now; NULL when memory runs out. */
struct admit_wheel *admit_wheel_new(uint64_t now);

/* Frees the wheel; its timers are left as they are (their objects are the
 * caller's to free). */
void admit_wheel_free(struct admit_wheel *w);

/* Adds t (t->when set; not in a wheel).  A time already past fires at the
 * next advance that leaves the current tick. */
void admit_wheel_add(struct admit_wheel *w, struct admit_timer *t);

/* Removes t from its wheel; a no-op when it is in none (fired, removed,
 * never added, or zeroed). */
void admit_wheel_remove(struct admit_timer *t);

/*
 * Moves the wheel's time to now (a time before the wheel's does nothing)
 * and calls fire(t, arg) for each timer due, after taking it out of the
 * wheel.  fire may remove other timers and add new ones (a new one due
 * already fires at a later advance).  Returns the number fired.
 */
size_t admit_wheel_advance(struct admit_wheel *w, uint64_t now,
                           void (*fire)(struct admit_timer *t, void *arg),
                           void *arg);

/* The wheel's time: the latest now an advance was given. */
uint64_t admit_wheel_now(const struct admit_wheel *w);

#endif /* ADMIT_TIMER_WHEEL_H */
