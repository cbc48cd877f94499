/*
 * timer_wheel.c - the hierarchical timer wheel of timer_wheel.h.
 *
 * A timer is filed at the lowest level whose 64 buckets reach its time from
 * the wheel's: level L holds the timers whose time, in level-L ticks, is 0
 * to 63 ticks ahead (1 to 63 for L > 0: a timer 0 ticks ahead at level L is
 * at most 63 ticks ahead at level L - 1).  An advance visits, level by
 * level, the buckets of every tick from the old time's to the new time's
 * (all 64 when that is a lap or more) and stops at the first level whose
 * tick did not change.  Each visited bucket is detached first; its due
 * timers fire and the others are filed again from the new time, which
 * moves them down (a timer's level never rises), so every timer is visited
 * at most once per level on its way down, plus once per 2.3 years at the
 * top.  Single-threaded: see the header.
 */
#include "config.h"

#include <stdlib.h>

#include "alloc.h"
#include "timer_wheel.h"

#define LEVELS 5
#define BUCKET_BITS 6
#define BUCKETS (1u << BUCKET_BITS)

struct admit_wheel {
	uint64_t now;
	struct admit_timer bucket[LEVELS][BUCKETS];  /* list sentinels */
};

static inline unsigned
shift_of(unsigned level)
{
	return ADMIT_WHEEL_TICK_SHIFT + BUCKET_BITS * level;
}

static void
list_empty(struct admit_timer *head)
{
	head->prev = head->next = head;
}

static void
file(struct admit_wheel *w, struct admit_timer *t)
{
	/* A time already past is filed in the current tick. */
	uint64_t when = t->when > w->now ? t->when : w->now;
	unsigned level = 0;
	uint64_t tick = when >> shift_of(0);
	struct admit_timer *head;

	while ((when >> shift_of(level)) - (w->now >> shift_of(level)) >= BUCKETS) {
		if (level == LEVELS - 1) {
			/* Beyond the top: the farthest bucket, filed again when
			 * it comes round. */
			tick = (w->now >> shift_of(level)) + BUCKETS - 1;
			break;
		}
		level++;
		tick = when >> shift_of(level);
	}
	head = &w->bucket[level][tick & (BUCKETS - 1)];
	t->next = head;
	t->prev = head->prev;
	head->prev->next = t;
	head->prev = t;
}

struct admit_wheel *
admit_wheel_new(uint64_t now)
{
	struct admit_wheel *w = admit_malloc(sizeof(*w));

	if (!w)
		return NULL;
	w->now = now;
	for (unsigned l = 0; l < LEVELS; l++)
		for (unsigned b = 0; b < BUCKETS; b++)
			list_empty(&w->bucket[l][b]);
	return w;
}

void
admit_wheel_free(struct admit_wheel *w)
{
	admit_free(w);
}

void
admit_wheel_add(struct admit_wheel *w, struct admit_timer *t)
{
	file(w, t);
}

void
admit_wheel_remove(struct admit_timer *t)
{
	if (!t->next)
		return;
	t->prev->next = t->next;
	t->next->prev = t->prev;
	t->prev = t->next = NULL;
}

uint64_t
admit_wheel_now(const struct admit_wheel *w)
{
	return w->now;
}

size_t
admit_wheel_advance(struct admit_wheel *w, uint64_t now,
                    void (*fire)(struct admit_timer *t, void *arg), void *arg)
{
	uint64_t prev = w->now;
	size_t fired = 0;

	if (now <= prev)
		return 0;
	w->now = now;
	for (unsigned level = 0; level < LEVELS; level++) {
		uint64_t pt = prev >> shift_of(level), ct = now >> shift_of(level);
		uint64_t n = ct - pt >= BUCKETS - 1 ? BUCKETS : ct - pt + 1;

		if (pt == ct)
			break;
		for (uint64_t i = 0; i < n; i++) {
			struct admit_timer *head = &w->bucket[level][(pt + i) & (BUCKETS - 1)];
			struct admit_timer todo;

			if (head->next == head)
				continue;
			/* Detach the bucket: timers filed again during the walk
			 * go to the live lists, never back into todo. */
			todo.next = head->next;
			todo.prev = head->prev;
			todo.next->prev = todo.prev->next = &todo;
			list_empty(head);
			while (todo.next != &todo) {
				struct admit_timer *t = todo.next;

				admit_wheel_remove(t);
				if (t->when <= now) {
					fired++;
					fire(t, arg);
				} else {
					file(w, t);
				}
			}
		}
	}
	return fired;
}
