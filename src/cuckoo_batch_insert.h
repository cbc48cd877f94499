/*
 * cuckoo_batch_insert.h - the 8-byte-key batch insert
 * (admit_cuckoo_insert_many_u64()), written once for every membership
 * width w as cuckoo_kick.h is (8 or 16, a constant wherever it is inlined;
 * 0: any filter, each key by the layout's insert_at).
 *
 * A key with a free lane in one of its buckets goes in at once by the
 * one-stripe copy.  A key whose two buckets are both full is set aside, and
 * the set-aside keys' cuckoo paths are searched together, one level of
 * every search at a time: each level's buckets are prefetched for all the
 * keys before any key reads its own, so that the searches' misses overlap
 * where one search alone waits for each of its levels in turn.  The search
 * is breadth-first to two levels (the 8 buckets the four lanes of the two
 * roots move to, then their 32): a path of one or two hops, which finds
 * room for nearly every key up to 95 % load (doc/filter-benchmarks.md).
 * A key for which it finds none, or whose path went stale before it was
 * made, takes cuckoo_add(): the single insert's deeper search, retries and
 * ADMIT_FULL.
 *
 * Concurrency is the single insert's (cuckoo.c's head): the search reads
 * without locks, and each hop is made under the stripes of its two buckets
 * and re-checked there, the fingerprint written to its new bucket before
 * its old lane changes, so a reader that validates finds it in one of the
 * two.  The hop out of one of the key's own buckets writes the key's
 * fingerprint into the lane it frees, under the same two stripes.  Every
 * key is in the table before the call returns; a key set aside goes in
 * after keys that follow it in the array.
 */
#ifndef ADMIT_CUCKOO_BATCH_INSERT_H
#define ADMIT_CUCKOO_BATCH_INSERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuckoo_internal.h"
#include "cuckoo_kick.h"
#include "cuckoo_ops.h"
#include "cuckoo_probe.h"
#include "stripe.h"

/* Keys set aside before their paths are searched together: enough that
 * each round's prefetches are a few hundred instructions ahead of their
 * reads. */
#define DEFER_MAX 16
_Static_assert(DEFER_MAX <= 32, "place_deferred_w's pending mask holds them");
/* A search's queue: its two roots, then the children of queued bucket x
 * at 2 + 4x + lane, so that every path of two hops and the first 64 of
 * three fit; a round queues the children of two buckets. */
#define DEFER_QUEUE (2 + 8 + 32 + 64)
#define DEFER_ROUND 2
/* The buckets whose children fit in the queue: the only ones whose words
 * a search reads again (to expand them, and for a hop out of them). */
#define DEFER_PARENTS ((DEFER_QUEUE - 2) / 4)
_Static_assert(2 + 4 * DEFER_PARENTS == DEFER_QUEUE,
               "every queued bucket has its parent among DEFER_PARENTS");

/* A set-aside key and its breadth-first search: q[0, 2 + 4 head) queued,
 * the first `checked` of them read (the words of those below
 * DEFER_PARENTS in word[]: about 11 KB of stack for DEFER_MAX keys where
 * every word would take 21).  Queued
 * bucket x > 1 is where lane (x - 2) % 4 of bucket (x - 2) / 4 moves to.
 * A child that is its parent's own bucket (the fingerprint's two buckets
 * coincide, for about one bucket in m) needs no test here: its parent is
 * full, so it is read full, and a path through it (past a concurrent
 * delete) has a hop from a bucket to itself, which hop_w() refuses as
 * stale. */
struct defer_key {
	struct cuckoo_pos p;      /* fp as the lanes hold it */
	size_t at;                /* the key's index in the call */
	unsigned head, checked;
	uint32_t q[DEFER_QUEUE];
	uint64_t word[DEFER_PARENTS];
};

/* Bucket i's word := v, width w (a constant).  release: as bucket_store(). */
static inline __attribute__((always_inline)) void
bucket_store_w(struct admit_cuckoo *f, uint32_t i, uint64_t v, unsigned w)
{
	if (w == 8)
		atomic_store_explicit(&f->t32[i], (uint32_t)v, memory_order_release);
	else
		atomic_store_explicit(&f->t64[i], v, memory_order_release);
}

/*
 * One hop under the stripes of from and to (two buckets): fingerprint fp,
 * in lane s of from, to the first free lane of to (written first, as
 * move_one() does), then put (0: nothing) into lane s.  False, changing
 * nothing, if lane s does not hold fp or to has no free lane (the table
 * differs from what the search read), or if from == to (not a hop).  A
 * membership filter never halves (only a counting filter raises
 * f->halving), so move_one()'s check for a halve is not needed here.
 */
static inline __attribute__((always_inline)) bool
hop_w(struct admit_cuckoo *f, uint32_t from, unsigned s, uint32_t fp,
      uint32_t to, uint32_t put, unsigned w)
{
	uint64_t lane = ((1ull << w) - 1) << (s * w), bf, bt, z;
	bool ok;

	/* The search has just read both words: no prefetch first. */
	cuckoo_lock_stripes(f, from, to);
	/* Under both stripes no other writer changes these words. */
	bf = bucket_load_w(f, from, w);
	bt = bucket_load_w(f, to, w);
	z = lanes_zero_w(f, bt, w);
	ok = z && fp && from != to && slot_fp_w(f, bf, s, w) == fp;
	if (ok) {
		bucket_store_w(f, to, bt | (uint64_t)fp <<
		               (__builtin_ctzll(z) / w * w), w);
		bucket_store_w(f, from, (bf & ~lane) | (uint64_t)put << (s * w),
		               w);
		stat_add_locked(&stats_of(f, to)->items, 1);
		if (!put)
			stat_add_locked(&stats_of(f, from)->items, -1);
		stat_add_locked(&stats_of(f, from)->kicks, 1);
	}
	cuckoo_unlock_stripes(f, from, to);
	return ok;
}

/* A set-aside key that the two-level search cannot place: the single
 * insert's way, after a stale path counted as cuckoo_add() counts one. */
static inline __attribute__((always_inline)) enum admit_status
defer_fallback(struct admit_cuckoo *f, const struct defer_key *d, bool stale)
{
	if (stale)
		stat_bump(&stats_of(f, d->p.i1)->path_retries);
	return cuckoo_add(f, &d->p, ADD_COPY);
}

/* The roots read again: one that has a free lane now (a delete since the
 * key was set aside) takes the key by the single insert's copy.  True if
 * the key is done (out[d->at] set); otherwise the search is set up (both
 * roots p.i1 when i1 == i2: the second's children repeat the first's). */
static inline __attribute__((always_inline)) bool
defer_start_w(struct admit_cuckoo *f, struct defer_key *d,
              enum admit_status out[], unsigned w)
{
	for (unsigned r = 0; r < 2; r++) {
		d->q[r] = r ? d->p.i2 : d->p.i1;
		d->word[r] = bucket_load_w(f, d->q[r], w);
		if (lanes_zero_w(f, d->word[r], w)) {
			out[d->at] = copy_w(f, &d->p, w);
			return true;
		}
	}
	d->head = 0;
	d->checked = 2;
	return false;
}

/* Queue and prefetch the children of the next DEFER_ROUND read buckets.
 * False if there are none (the queue is full). */
static inline __attribute__((always_inline)) bool
defer_expand_w(const struct admit_cuckoo *f, struct defer_key *d, unsigned w)
{
	unsigned end = d->head + DEFER_ROUND;

	if (2 + 4 * end > DEFER_QUEUE)
		return false;
	for (unsigned x = d->head; x < end; x++) {
		uint32_t b = d->q[x];

		for (unsigned s = 0; s < CUCKOO_SLOTS; s++) {
			uint32_t c = alt_w(f, b, slot_fp_w(f, d->word[x], s, w), w);

			__builtin_prefetch(bucket_addr_w(f, c, w));
			d->q[2 + 4 * x + s] = c;
		}
	}
	d->head = end;
	return true;
}

/* Make the path that ends at queued bucket x (not a root), which had a
 * free lane: hops from that end back to a root, the last one putting the
 * key's fingerprint into the lane it frees.  False if a hop found the
 * search's view stale (the hops made are harmless moves). */
static inline __attribute__((always_inline)) bool
defer_run_w(struct admit_cuckoo *f, const struct defer_key *d, unsigned x,
            unsigned w)
{
	for (;;) {
		unsigned a = (x - 2) / 4, s = (x - 2) % 4;
		bool root = a < 2;

		if (!hop_w(f, d->q[a], s, slot_fp_w(f, d->word[a], s, w), d->q[x],
		           root ? d->p.fp : 0, w))
			return false;
		if (root)
			return true;
		x = a;
	}
}

/* Read this round's queued buckets: the first with a free lane ends a
 * path, made at once.  True if the key is done. */
static inline __attribute__((always_inline)) bool
defer_check_w(struct admit_cuckoo *f, struct defer_key *d,
              enum admit_status out[], unsigned w)
{
	unsigned end = 2 + 4 * d->head;

	for (unsigned x = d->checked; x < end; x++) {
		uint64_t b = bucket_load_w(f, d->q[x], w);

		if (x < DEFER_PARENTS)
			d->word[x] = b;
		if (!lanes_zero_w(f, b, w))
			continue;
		out[d->at] = defer_run_w(f, d, x, w) ? ADMIT_OK
		                                      : defer_fallback(f, d, true);
		return true;
	}
	d->checked = end;
	return false;
}

/* Places the nd (<= DEFER_MAX) set-aside keys, a round of every search at
 * a time: each pending key queues and prefetches a round of buckets, then
 * each reads its round.  A key whose search runs out of buckets to queue
 * takes cuckoo_add().  ADMIT_OK if all went in, else ADMIT_FULL. */
static inline __attribute__((always_inline)) enum admit_status
place_deferred_w(struct admit_cuckoo *f, struct defer_key d[], size_t nd,
                 enum admit_status out[], unsigned w)
{
	uint32_t pending = 0;
	enum admit_status st = ADMIT_OK;

	for (size_t i = 0; i < nd; i++)
		if (!defer_start_w(f, &d[i], out, w))
			pending |= 1u << i;
	while (pending) {
		for (size_t i = 0; i < nd; i++)
			if ((pending >> i & 1) && !defer_expand_w(f, &d[i], w)) {
				out[d[i].at] = defer_fallback(f, &d[i], false);
				pending &= ~(1u << i);
			}
		for (size_t i = 0; i < nd; i++)
			if ((pending >> i & 1) && defer_check_w(f, &d[i], out, w))
				pending &= ~(1u << i);
	}
	for (size_t i = 0; i < nd; i++)
		if (out[d[i].at] != ADMIT_OK)
			st = out[d[i].at];
	return st;
}

/* The flush, out of line: the batch's loop keeps its registers for the
 * keys that go in at once. */
static __attribute__((noinline, unused)) enum admit_status
place_deferred8(struct admit_cuckoo *f, struct defer_key d[], size_t nd,
                enum admit_status out[])
{
	return place_deferred_w(f, d, nd, out, 8);
}

static __attribute__((noinline, unused)) enum admit_status
place_deferred16(struct admit_cuckoo *f, struct defer_key d[], size_t nd,
                 enum admit_status out[])
{
	return place_deferred_w(f, d, nd, out, 16);
}

static inline __attribute__((always_inline)) enum admit_status
place_deferred(struct admit_cuckoo *f, struct defer_key d[], size_t nd,
               enum admit_status out[], unsigned w)
{
	return w == 8 ? place_deferred8(f, d, nd, out)
	              : place_deferred16(f, d, nd, out);
}

/* Inserts of an array of 8-byte keys (w as locate_u64_w()): each group's
 * buckets prefetched for writing before its first insert, the next group's
 * while this one's are made; with w 8 or 16, keys whose buckets are full
 * set aside and placed DEFER_MAX at a time (the file's head).  Each key is
 * one insert, as admit_cuckoo_insert() makes it. */
static inline __attribute__((always_inline)) enum admit_status
insert_u64_w(struct admit_cuckoo *f, size_t n, const uint64_t keys[],
             enum admit_status out[], unsigned w, bool tab, bool pow2)
{
	struct cuckoo_pos pos[2][CUCKOO_BATCH];
	struct cuckoo_pos *p = pos[0], *q = pos[1], *t;
	struct defer_key d[DEFER_MAX];
	size_t k = n < CUCKOO_BATCH ? n : CUCKOO_BATCH, nd = 0;
	enum admit_status st = ADMIT_OK, s;

	locate_u64_w(f, k, keys, p, w, tab, pow2, true);
	for (size_t base = 0;; base += CUCKOO_BATCH) {
		size_t next = base + CUCKOO_BATCH, kn = 0;

		if (next < n) {
			kn = n - next < CUCKOO_BATCH ? n - next : CUCKOO_BATCH;
			locate_u64_w(f, kn, keys + next, q, w, tab, pow2, true);
		}
		for (size_t j = 0; j < k; j++) {
			if (w == 8)
				p[j].fp &= 0xff;
			s = w ? copy_one_stripe_w(f, &p[j], w)
			      : f->ops->insert_at(f, &p[j]);
			out[base + j] = s;
			if (s == ADMIT_OK)
				continue;
			if (!w) {
				st = s;
				continue;
			}
			d[nd].p = p[j];
			d[nd].at = base + j;
			if (++nd == DEFER_MAX) {
				if (place_deferred(f, d, nd, out, w) != ADMIT_OK)
					st = ADMIT_FULL;
				nd = 0;
			}
		}
		if (!kn && nd && place_deferred(f, d, nd, out, w) != ADMIT_OK)
			st = ADMIT_FULL;
		if (!kn)
			return st;
		k = kn;
		t = p, p = q, q = t;
	}
}

#endif /* ADMIT_CUCKOO_BATCH_INSERT_H */
