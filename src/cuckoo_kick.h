/*
 * cuckoo_kick.h - a layout's insert paths, written once for every
 * membership width w (8 or 16, a constant wherever these are inlined; 0:
 * any filter, by its fields).
 *
 * An insert first tries the one-stripe copy (copy_one_stripe_w()); when
 * both of the key's buckets are full it goes to cuckoo_add() (cuckoo.c),
 * which searches a cuckoo path by the layout's find_path, the breadth-first
 * search below, without locks, and executes it hop by hop under the
 * stripes.  The 8-byte-key batch searches its keys' paths together first
 * (cuckoo_batch_insert.h).
 */
#ifndef ADMIT_CUCKOO_KICK_H
#define ADMIT_CUCKOO_KICK_H

#include <stdbool.h>
#include <stdint.h>

#include "cuckoo_internal.h"
#include "cuckoo_ops.h"
#include "cuckoo_probe.h"
#include "stripe.h"

/* The width-w forms of bucket_load(), slot_get(), slot_fp(), cuckoo_alt()
 * and lanes_zero() for a membership filter (w 8 or 16, a constant), the
 * general ones for w = 0. */
static inline __attribute__((always_inline)) uint64_t
bucket_load_w(const struct admit_cuckoo *f, uint32_t i, unsigned w)
{
	/* acquire: as bucket_load(). */
	return w == 8 ? atomic_load_explicit(&f->t32[i], memory_order_acquire) :
	       w == 16 ? atomic_load_explicit(&f->t64[i], memory_order_acquire) :
	       bucket_load(f, i);
}

static inline __attribute__((always_inline)) uint32_t
slot_fp_w(const struct admit_cuckoo *f, uint64_t b, unsigned s, unsigned w)
{
	return w ? (uint32_t)(b >> (s * w)) & ((1u << w) - 1)
	         : slot_fp(f, slot_get(f, b, s));
}

static inline __attribute__((always_inline)) uint32_t
alt_w(const struct admit_cuckoo *f, uint32_t i, uint32_t fp, unsigned w)
{
	/* w 0: a semi-sorted filter may have the table (a counting one
	 * never has). */
	return w == 8 ? cuckoo_alt8(f, i, fp) :
	       w != 8 && f->alt16 ? cuckoo_alt_t(f, i, f->alt16[fp]) :
	       cuckoo_alt(f, i, fp);
}

static inline __attribute__((always_inline)) uint64_t
lanes_zero_w(const struct admit_cuckoo *f, uint64_t x, unsigned w)
{
	const uint64_t high = w == 8 ? 0x80808080ull : 0x8000800080008000ull;
	const uint64_t low = w == 8 ? 0x7f7f7f7full : 0x7fff7fff7fff7fffull;

	return w ? ~(((x & low) + low) | x) & high : lanes_zero(f, x);
}

/* Under bucket i's stripe: fp into its first free lane (width w, a
 * constant), counted in the stripe's items.  False if it has none. */
static inline __attribute__((always_inline)) bool
take_lane_w(struct admit_cuckoo *f, uint32_t i, uint32_t fp, unsigned w)
{
	/* Under the stripe no other writer changes this word. */
	uint64_t b = bucket_load_w(f, i, w), z = lanes_zero_w(f, b, w);

	if (!z)
		return false;
	b |= (uint64_t)fp << (__builtin_ctzll(z) / w * w);
	/* release: as bucket_store(). */
	if (w == 8)
		atomic_store_explicit(&f->t32[i], (uint32_t)b, memory_order_release);
	else
		atomic_store_explicit(&f->t64[i], b, memory_order_release);
	stat_add_locked(&stats_of(f, i)->items, 1);
	return true;
}

/* cuckoo_add_locked() for ADD_COPY into a membership filter of width w (8
 * or 16, a constant here): the same lane, with the lane masks immediates,
 * the table's type known and the empty slot set by an or. */
static inline __attribute__((always_inline)) enum admit_status
copy_locked_w(struct admit_cuckoo *f, const struct cuckoo_pos *p, unsigned w)
{
	return take_lane_w(f, p->i1, p->fp, w) || take_lane_w(f, p->i2, p->fp, w)
	       ? ADMIT_OK : ADMIT_FULL;
}

/*
 * A membership copy with one stripe: the first of the key's buckets seen
 * with a free lane, locked alone, gets the fingerprint if the lane is
 * still free under its stripe.  One stripe is enough: a copy changes one
 * bucket, and holding that bucket's stripe is what every other writer and
 * every validating reader of it waits on (the file's head).  The same
 * lane as cuckoo_add_locked() picks when nothing changes meanwhile.
 * ADMIT_FULL if neither bucket had a free lane: cuckoo_add() then takes
 * both stripes.
 */
static inline __attribute__((always_inline)) enum admit_status
copy_one_stripe_w(struct admit_cuckoo *f, const struct cuckoo_pos *p,
                  unsigned w)
{
	__builtin_prefetch(bucket_addr_w(f, p->i2, w), 1);
	for (int k = 0; k < 2; k++) {
		uint32_t i = k ? p->i2 : p->i1;
		_Atomic uint32_t *s = &f->seq[i & f->stripe_mask];
		/* relaxed: a hint; the lane is taken only after the stripe's
		 * acquire, from the word read again under it. */
		uint64_t b = w == 8 ?
		    atomic_load_explicit(&f->t32[i], memory_order_relaxed) :
		    atomic_load_explicit(&f->t64[i], memory_order_relaxed);
		bool taken;

		if (!lanes_zero_w(f, b, w))
			continue;
		stripe_lock(s);
		taken = take_lane_w(f, i, p->fp, w);
		stripe_unlock(s);
		if (taken)
			return ADMIT_OK;
	}
	return ADMIT_FULL;
}

struct bfs_node {
	uint32_t bucket;
	int16_t parent;   /* index in the queue, -1 for a root */
	uint8_t slot;     /* slot of the parent whose fingerprint leads here */
	uint8_t depth;
	uint32_t fp;      /* that fingerprint, to detect a stale hop */
};

/*
 * Breadth-first search, without locks, for the shortest chain of moves that
 * frees a slot in one of the key's buckets.  Reads may be stale; the
 * execution re-checks every hop under its stripes.  w as bucket_load_w().
 */
static inline __attribute__((always_inline)) bool
find_path_w(const struct admit_cuckoo *f, const struct cuckoo_pos *p,
            struct cuckoo_path *path, unsigned w)
{
	struct bfs_node q[BFS_QUEUE];
	int head = 0, tail = 0;

	q[tail++] = (struct bfs_node){ p->i1, -1, 0, 0, 0 };
	if (p->i2 != p->i1)
		q[tail++] = (struct bfs_node){ p->i2, -1, 0, 0, 0 };

	while (head < tail) {
		int cur = head++;
		uint64_t b = bucket_load_w(f, q[cur].bucket, w);
		uint32_t child[CUCKOO_SLOTS];

		/* Start the four children's misses together: the tests below
		 * branch on each one's data. */
		for (unsigned s = 0; s < CUCKOO_SLOTS; s++) {
			uint32_t fp = slot_fp_w(f, b, s, w);

			child[s] = fp ? alt_w(f, q[cur].bucket, fp, w)
			              : q[cur].bucket;
			__builtin_prefetch(bucket_addr_w(f, child[s], w));
		}
		for (unsigned s = 0; s < CUCKOO_SLOTS; s++) {
			uint32_t fp = slot_fp_w(f, b, s, w), next = child[s];
			int n;

			/* An empty slot (freed since: the caller's retry sees it)
			 * or a fingerprint whose two buckets coincide: no hop. */
			if (next == q[cur].bucket)
				continue;
			if (lanes_zero_w(f, bucket_load_w(f, next, w), w)) {
				/* Unwind: the hops from a root to cur, then cur -> next. */
				int depth = q[cur].depth;

				path->len = depth + 1;
				path->bucket[depth + 1] = next;
				path->bucket[depth] = q[cur].bucket;
				path->slot[depth] = (uint8_t)s;
				path->fp[depth] = fp;
				for (int j = cur; q[j].parent >= 0; j = q[j].parent) {
					int d = q[j].depth - 1;

					path->bucket[d] = q[q[j].parent].bucket;
					path->slot[d] = q[j].slot;
					path->fp[d] = q[j].fp;
				}
				return true;
			}
			if (q[cur].depth + 1 >= BFS_MAX_DEPTH || tail == BFS_QUEUE)
				continue;
			n = tail++;
			q[n] = (struct bfs_node){ next, (int16_t)cur, (uint8_t)s,
			                          (uint8_t)(q[cur].depth + 1), fp };
		}
	}
	return false;
}

/* A membership copy: under one stripe when a bucket has a free lane,
 * else by cuckoo_add(). */
static inline __attribute__((always_inline)) enum admit_status
copy_w(struct admit_cuckoo *f, const struct cuckoo_pos *p, unsigned w)
{
	if (copy_one_stripe_w(f, p, w) == ADMIT_OK)
		return ADMIT_OK;
	return cuckoo_add(f, p, ADD_COPY);
}

#endif /* ADMIT_CUCKOO_KICK_H */
