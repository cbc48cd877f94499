/*
 * cuckoo_counting.c - the counting layout: 16-bit slots, each a 12-bit
 * fingerprint above a 4-bit saturating counter (cuckoo_internal.h), one
 * entry per key; and the calls only a counting filter has: increment,
 * halve, and the TinyLFU frequency store's replacing increment and
 * counter reads.
 *
 * Lookups are the shared optimistic read (cuckoo_probe.h) on its general
 * path; increments take both of the key's stripes (cuckoo_add()), a
 * counter raise of a known entry one.  A halve walks the buckets one
 * stripe at a time while other threads keep working; kicks wait it out
 * (struct admit_cuckoo's halving).
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>

#include "cuckoo_internal.h"
#include "cuckoo_batch_insert.h"
#include "cuckoo_kick.h"
#include "cuckoo_ops.h"
#include "cuckoo_probe.h"
#include "debug.h"
#include "stripe.h"

static bool
contains_c(const struct admit_cuckoo *f, const void *key, size_t len)
{
	return contains_hashed(f, cuckoo_hash(f, key, len), 0);
}

static bool
contains_key8_c(const struct admit_cuckoo *f, const void *key)
{
	return contains_c(f, key, 8);
}

static enum admit_status
insert_at_c(struct admit_cuckoo *f, const struct cuckoo_pos *p)
{
	return cuckoo_add(f, p, ADD_INCREMENT);
}

static enum admit_status
insert_key8_c(struct admit_cuckoo *f, const void *key)
{
	struct cuckoo_pos p;

	cuckoo_locate(f, key, 8, &p);
	return insert_at_c(f, &p);
}

static bool
find_path_c(const struct admit_cuckoo *f, const struct cuckoo_pos *p,
            struct cuckoo_path *path)
{
	return find_path_w(f, p, path, 0);
}

static void
contains_many_c(const struct admit_cuckoo *f, size_t n,
                const void *const keys[], const size_t lens[], bool out[])
{
	contains_many_w(f, n, keys, lens, out, 0, false, false);
}

static void
contains_u64_c(const struct admit_cuckoo *f, size_t n, const uint64_t keys[],
               bool out[])
{
	contains_u64_w(f, n, keys, out, 0, false, false);
}

static enum admit_status
insert_u64_c(struct admit_cuckoo *f, size_t n, const uint64_t keys[],
             enum admit_status out[])
{
	return insert_u64_w(f, n, keys, out, 0, false, false);
}

static const struct cuckoo_ops ops_counting = {
	contains_key8_c, insert_key8_c, contains_c, insert_at_c, find_path_c,
	contains_many_c, contains_u64_c, insert_u64_c, NULL,
};

const struct cuckoo_ops *
cuckoo_counting_pick(const struct admit_cuckoo *f)
{
	(void)f;
	return &ops_counting;
}

enum admit_status
admit_cuckoo_increment(struct admit_cuckoo *f, const void *key, size_t len)
{
	struct cuckoo_pos p;

	if (!f || !f->counting || !admit_key_ok(key, len))
		return ADMIT_EINVAL;
	cuckoo_locate(f, key, len, &p);
	return cuckoo_add(f, &p, ADD_INCREMENT);
}

/* The counting slot with the lowest counter in the key's two buckets
 * (both full, both stripes held) gives way to the key at count 1. */
static void
replace_lowest_locked(struct admit_cuckoo *f, const struct cuckoo_pos *p)
{
	uint32_t best_i = p->i1;
	unsigned best_s = 0;
	uint64_t best = COUNTER_MAX + 1;

	for (int k = 0; k < 2; k++) {
		uint32_t i = k ? p->i2 : p->i1;
		uint64_t b = bucket_load(f, i);

		for (unsigned s = 0; s < CUCKOO_SLOTS; s++) {
			uint64_t c = slot_get(f, b, s) & COUNTER_MAX;

			if (c < best) {
				best = c;
				best_i = i;
				best_s = s;
			}
		}
	}
	bucket_store(f, best_i, slot_set(f, bucket_load(f, best_i), best_s,
	                                  (uint64_t)p->fp << f->fp_shift | 1));
}

enum admit_status
cuckoo_increment_replacing(struct admit_cuckoo *f, const void *key, size_t len,
                           bool kick, bool *replaced)
{
	struct cuckoo_pos p;

	*replaced = false;
	if (!f || !f->counting || !admit_key_ok(key, len))
		return ADMIT_EINVAL;
	cuckoo_locate(f, key, len, &p);
	cuckoo_increment_replacing_pos(f, &p, kick, replaced);
	return ADMIT_OK;
}

void
cuckoo_increment_replacing_pos(struct admit_cuckoo *f,
                               const struct cuckoo_pos *p, bool kick,
                               bool *replaced)
{
	struct cuckoo_counter c;

	*replaced = false;
	/* A saturated counter takes no stripe: its line stays unwritten. */
	if (cuckoo_counter_find(f, p, &c) &&
	    cuckoo_counter_value(&c) == COUNTER_MAX)
		return;
	if (kick && cuckoo_add(f, p, ADD_INCREMENT) != ADMIT_FULL)
		return;
	cuckoo_lock_two(f, p->i1, p->i2);
	/* Without a search, or since cuckoo_add() gave up: the key may be present or a
	 * slot free in its buckets. */
	if (cuckoo_add_locked(f, p, ADD_INCREMENT) == ADMIT_FULL) {
		replace_lowest_locked(f, p);
		*replaced = true;
	}
	cuckoo_unlock_two(f, p->i1, p->i2);
}

struct counter_read {
	const struct admit_cuckoo *f;
	struct cuckoo_pos p;
	struct cuckoo_counter c;
	bool found;
};

static bool
counter_read(void *arg)
{
	struct counter_read *q = arg;

	q->found = cuckoo_counter_find(q->f, &q->p, &q->c);
	return false;  /* both buckets as one pair: validate */
}

unsigned
cuckoo_counter_count(const struct admit_cuckoo *f, uint64_t h)
{
	struct counter_read q = { .f = f };
	struct stripe_reader r;

	cuckoo_locate(f, &h, sizeof(h), &q.p);
	r.a = cuckoo_stripe(f, q.p.i1);
	r.b = cuckoo_stripe(f, q.p.i2);
	(void)stripe_read(&r, counter_read, &q,
	                  &stats_of(f, q.p.i1)->read_retries);
	return q.found ? cuckoo_counter_value(&q.c) : 0;
}

unsigned
cuckoo_counter_count_locked(const struct admit_cuckoo *f, uint64_t h)
{
	struct cuckoo_pos p;
	struct cuckoo_counter c;

	cuckoo_locate(f, &h, sizeof(h), &p);
	return cuckoo_counter_find(f, &p, &c) ? cuckoo_counter_value(&c) : 0;
}

bool
cuckoo_counter_increment(struct admit_cuckoo *f, const struct cuckoo_counter *c)
{
	_Atomic uint32_t *s = &f->seq[c->bucket & f->stripe_mask];
	bool same;

	debug_check(f->counting && cuckoo_counter_value(c) < COUNTER_MAX);
	/* One stripe: every writer of a bucket holds its stripe, and the
	 * change is within one word, so readers see it whole. */
	stripe_lock(s);
	same = bucket_load(f, c->bucket) == c->word;
	if (same)
		/* Below COUNTER_MAX: no carry into the fingerprint. */
		bucket_store(f, c->bucket, c->word + ((uint64_t)1 << c->shift));
	stripe_unlock(s);
	return same;
}

/* A counting bucket with every counter halved and the slots whose counter
 * falls to 0 emptied, the four lanes at once; *emptied: how many of its
 * slots that emptied. */
static uint64_t
halve_bucket(uint64_t b, unsigned *emptied)
{
	const uint64_t counters = CUCKOO_COUNTING_ONES * COUNTER_MAX;
	const uint64_t low = CUCKOO_COUNTING_HIGH - CUCKOO_COUNTING_ONES;
	uint64_t half = (b & counters) >> 1 & counters;
	/* One high bit per lane: the slot is used; its halved counter is 0. */
	uint64_t used = (((b & low) + low) | b) & CUCKOO_COUNTING_HIGH;
	uint64_t gone = ~(half + low) & CUCKOO_COUNTING_HIGH;

	/* The lanes' flags summed into the top lane by one multiply. */
	*emptied = (unsigned)(((used & gone) >> 15) * CUCKOO_COUNTING_ONES >> 48);
	return ((b & ~counters) | half) & ~((gone >> 15) * 0xffffu);
}

enum admit_status
admit_cuckoo_halve(struct admit_cuckoo *f)
{
	if (!f || !f->counting)
		return ADMIT_EINVAL;
	/* relaxed: published to kicks by the stripe releases below (see
	 * move_one()). */
	atomic_fetch_add_explicit(&f->halving, 1, memory_order_relaxed);
	for (uint32_t i = 0; i < f->m; i++) {
		_Atomic uint32_t *s = &f->seq[i & f->stripe_mask];
		unsigned emptied;
		uint64_t b;

		/* An empty bucket needs no lock; an entry that lands in it after
		 * this read simply misses this round of aging. */
		if (bucket_load(f, i) == 0)
			continue;
		stripe_lock(s);
		b = bucket_load(f, i);
		bucket_store(f, i, halve_bucket(b, &emptied));
		stat_add_locked(&stats_of(f, i)->items, -(int64_t)emptied);
		stripe_unlock(s);
	}
	/* relaxed: kicks synchronise with the halved buckets through their
	 * stripes, not through this count. */
	atomic_fetch_sub_explicit(&f->halving, 1, memory_order_relaxed);
	return ADMIT_OK;
}
