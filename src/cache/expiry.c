/*
 * expiry.c - a shard's expiring entries (expiry.h).  Single-threaded: the
 * shard mutex serialises every call but admit_clock_now.
 */
#include "config.h"

#include <time.h>

#include "cache/expiry.h"

uint64_t
admit_clock_now(const struct admit_clock *k)
{
	struct timespec ts;

	if (k->fn)
		return k->fn(k->arg);
	/* Read on every hit of a timed entry: the coarse clock (a few ms
	 * resolution) costs a few ns where the precise one can cost a system
	 * call (bench/bench_lru_api: timed get). */
#ifdef CLOCK_MONOTONIC_COARSE
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
	clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool
admit_expiry_add_locked(struct admit_expiry *x, const struct admit_clock *k,
                        struct entry *e, uint64_t when)
{
	struct admit_expiry_timer *lt = admit_expiry_timer_of(e);

	if (!x->wheel && !(x->wheel = admit_wheel_new(admit_clock_now(k))))
		return false;
	admit_entry_set_meta(e, admit_entry_meta(e) | ADMIT_ENTRY_TIMED);
	lt->e = e;
	lt->t.prev = lt->t.next = NULL;
	lt->t.when = when;
	admit_wheel_add(x->wheel, &lt->t);
	return true;
}

struct fire {
	void (*drop)(void *ctx, struct entry *e);
	void *ctx;
};

static void
fire_one(struct admit_timer *t, void *arg)
{
	struct fire *f = arg;

	struct admit_expiry_timer *lt = (struct admit_expiry_timer *)
		((char *)t - offsetof(struct admit_expiry_timer, t));

	f->drop(f->ctx, lt->e);
}

size_t
admit_expiry_advance_locked(struct admit_expiry *x, const struct admit_clock *k,
                            void (*drop)(void *ctx, struct entry *e), void *ctx)
{
	struct fire f = { drop, ctx };

	if (!x->wheel)
		return 0;
	return admit_wheel_advance(x->wheel, admit_clock_now(k), fire_one, &f);
}

void
admit_expiry_destroy(struct admit_expiry *x)
{
	admit_wheel_free(x->wheel);
	x->wheel = NULL;
}
