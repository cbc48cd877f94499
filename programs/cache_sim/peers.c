/*
 * peers.c - ARC, LIRS, S3-FIFO, SIEVE, 2Q and CLOCK over dense key numbers.
 *
 * Every policy keeps its queues as doubly linked lists threaded through
 * arrays indexed by key number (struct links), so a replay allocates a few
 * bytes per distinct key and never hashes.  A list's head is its newest
 * entry, its tail the oldest.  Sizes count entries; every request is one
 * entry (object sizes are ignored, as in ../shared/peers.csv).
 *
 * The figures to reproduce are libCacheSim's, so where its implementation
 * departs from the paper in a way that moves hit ratios, the code below
 * follows libCacheSim and says so.  The lists are peers_list.h; LIRS, the
 * largest, is peers_lirs.c.
 */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "peers.h"
#include "peers_list.h"
#include "trace.h"

/* ---- dense key numbers ----------------------------------------------------- */

int
peer_dense_ids(const uint64_t *keys, size_t n, uint32_t **ids,
               uint32_t *distinct)
{
	uint64_t *sorted;
	uint32_t *out;
	size_t d = 0;

	if ((uint64_t)n >= NIL)
		return -1;
	sorted = malloc((n ? n : 1) * sizeof(*sorted));
	out = malloc((n ? n : 1) * sizeof(*out));
	if (!sorted || !out) {
		free(sorted);
		free(out);
		return -1;
	}
	if (n > 0) { /* an empty trace may come with keys NULL */
		memcpy(sorted, keys, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), trace_cmp_u64);
	}
	for (size_t i = 0; i < n; i++)
		if (d == 0 || sorted[i] != sorted[d - 1])
			sorted[d++] = sorted[i];
	for (size_t i = 0; i < n; i++) {
		size_t lo = 0, hi = d;

		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;

			if (sorted[mid] <= keys[i])
				lo = mid;
			else
				hi = mid;
		}
		out[i] = (uint32_t)lo;
	}
	free(sorted);
	*ids = out;
	*distinct = (uint32_t)d;
	return 0;
}

/* ---- CLOCK ------------------------------------------------------------------ */

/*
 * CLOCK with one reference bit, as FIFO with reinsertion (libCacheSim's
 * Clock, n-bit-counter=1): a hit sets the bit; the hand at the tail gives
 * a set bit a second chance by clearing it and moving the entry to the
 * head, and evicts the first entry with a clear bit.
 */
static uint64_t
run_clock(struct state *s, const uint32_t *ids, size_t n, uint64_t size)
{
	struct list q = LIST_EMPTY;
	uint64_t hits = 0;

	for (size_t i = 0; i < n; i++) {
		uint32_t x = ids[i];

		if (s->where[x]) {
			s->bits[x] = 1;
			hits++;
			continue;
		}
		if (q.len == size) {
			uint32_t t = q.tail;

			while (s->bits[t]) {
				s->bits[t] = 0;
				list_to_head(&s->l, &q, t);
				t = q.tail;
			}
			list_remove(&s->l, &q, t);
			s->where[t] = 0;
		}
		list_push(&s->l, &q, x);
		s->where[x] = 1;
		s->bits[x] = 0;
	}
	return hits;
}

/* ---- SIEVE ------------------------------------------------------------------ */

/*
 * SIEVE (Zhang et al., NSDI 2024): new entries at the head, a hit sets the
 * visited bit, nothing moves.  The hand walks from the tail towards the
 * head, clearing visited bits, evicts the first unvisited entry and stays
 * where it stopped; past the head it wraps to the tail.
 */
static uint64_t
run_sieve(struct state *s, const uint32_t *ids, size_t n, uint64_t size)
{
	struct list q = LIST_EMPTY;
	uint32_t hand = NIL;
	uint64_t hits = 0;

	for (size_t i = 0; i < n; i++) {
		uint32_t x = ids[i];

		if (s->where[x]) {
			s->bits[x] = 1;
			hits++;
			continue;
		}
		if (q.len == size) {
			uint32_t o = hand != NIL ? hand : q.tail;

			while (s->bits[o]) {
				s->bits[o] = 0;
				o = s->l.newer[o] != NIL ? s->l.newer[o] : q.tail;
			}
			hand = s->l.newer[o];
			list_remove(&s->l, &q, o);
			s->where[o] = 0;
		}
		list_push(&s->l, &q, x);
		s->where[x] = 1;
		s->bits[x] = 0;
	}
	return hits;
}

/* ---- ARC -------------------------------------------------------------------- */

enum { ARC_T1 = 1, ARC_B1, ARC_T2, ARC_B2 };

struct arc {
	struct state *s;
	struct list t1, b1, t2, b2;
	double p;
	uint64_t c;
};

static void
arc_move(struct arc *a, struct list *from, struct list *to, uint32_t x,
         uint8_t where)
{
	list_remove(&a->s->l, from, x);
	list_push(&a->s->l, to, x);
	a->s->where[x] = where;
}

static void
arc_drop(struct arc *a, struct list *from)
{
	uint32_t x = from->tail;

	list_remove(&a->s->l, from, x);
	a->s->where[x] = 0;
}

/* REPLACE of the paper: T1's or T2's LRU entry becomes a ghost.  As
 * libCacheSim, T1 gives up its entry also when T2 is empty. */
static void
arc_replace(struct arc *a, bool in_b2)
{
	double t1 = (double)a->t1.len;

	if ((a->t1.len > 0 && (t1 > a->p || (t1 == a->p && in_b2))) ||
	    a->t2.len == 0)
		arc_move(a, &a->t1, &a->b1, a->t1.tail, ARC_B1);
	else
		arc_move(a, &a->t2, &a->b2, a->t2.tail, ARC_B2);
}

/*
 * ARC (Megiddo & Modha, FAST 2003).  p and the step by which a ghost hit
 * moves it (|other ghost| / |this ghost|, at least 1) are real numbers, as
 * in the paper and in libCacheSim's ARC; as there, a ghost hit runs
 * REPLACE only when the cache is full (it always is once ghosts exist).
 */
static uint64_t
run_arc(struct state *s, const uint32_t *ids, size_t n, uint64_t size)
{
	struct arc a = { .s = s, .t1 = LIST_EMPTY, .b1 = LIST_EMPTY,
	                 .t2 = LIST_EMPTY, .b2 = LIST_EMPTY, .c = size };
	uint64_t hits = 0;

	for (size_t i = 0; i < n; i++) {
		uint32_t x = ids[i];
		uint8_t ghost = s->where[x];
		double d;

		switch (ghost) {
		case ARC_T1:
			arc_move(&a, &a.t1, &a.t2, x, ARC_T2);
			hits++;
			continue;
		case ARC_T2:
			list_to_head(&s->l, &a.t2, x);
			hits++;
			continue;
		case ARC_B1:
			d = (double)a.b2.len / (double)a.b1.len;
			a.p += d > 1 ? d : 1;
			if (a.p > (double)a.c)
				a.p = (double)a.c;
			list_remove(&s->l, &a.b1, x);
			break;
		case ARC_B2:
			d = (double)a.b1.len / (double)a.b2.len;
			a.p -= d > 1 ? d : 1;
			if (a.p < 0)
				a.p = 0;
			list_remove(&s->l, &a.b2, x);
			break;
		default:
			break;
		}
		while (a.t1.len + a.t2.len + 1 > a.c) {
			if (ghost) {
				arc_replace(&a, ghost == ARC_B2);
			} else if (a.t1.len + a.b1.len + 1 > a.c) {
				/* L1 = T1 + B1 holds c pages. */
				if (a.b1.len > 0) {
					arc_drop(&a, &a.b1);
					arc_replace(&a, false);
				} else {
					arc_drop(&a, &a.t1);
				}
			} else {
				if (a.t1.len + a.b1.len + a.t2.len + a.b2.len >= 2 * a.c &&
				    a.b2.len > 0)
					arc_drop(&a, &a.b2);
				arc_replace(&a, false);
			}
		}
		if (ghost) {
			list_push(&s->l, &a.t2, x);
			s->where[x] = ARC_T2;
		} else {
			list_push(&s->l, &a.t1, x);
			s->where[x] = ARC_T1;
		}
	}
	return hits;
}

/* ---- 2Q --------------------------------------------------------------------- */

enum { TQ_AIN = 1, TQ_AOUT, TQ_AM };

/*
 * 2Q, the full version (Johnson & Shasha, VLDB 1994): new keys enter the
 * FIFO A1in (Kin = 25 % of the cache); evicted from it they are remembered
 * in the ghost FIFO A1out (Kout = 50 % of the cache, in keys); a request
 * for a key in A1out brings it into the LRU Am.  A hit in A1in changes
 * nothing.  As libCacheSim's TwoQ: A1in may grow past Kin while Am has
 * room, the cache evicts from A1in only while A1in is over Kin, and Am is
 * an LRU of its own of c - Kin entries, so a key promoted from A1out evicts
 * Am's LRU entry when Am is full, even if the cache has just made room in
 * A1in (the cache then holds one entry fewer until the next miss).
 */
static uint64_t
run_2q(struct state *s, const uint32_t *ids, size_t n, uint64_t size)
{
	struct list ain = LIST_EMPTY, aout = LIST_EMPTY, am = LIST_EMPTY;
	/* The fractions as libCacheSim computes them: doubles, truncated. */
	uint64_t kin = (uint64_t)((double)size * 0.25);
	uint64_t kout = (uint64_t)((double)size * 0.5);
	uint64_t am_size = size - kin, hits = 0;

	for (size_t i = 0; i < n; i++) {
		uint32_t x = ids[i];
		bool ghost = false;

		switch (s->where[x]) {
		case TQ_AIN:
			hits++;
			continue;
		case TQ_AM:
			list_to_head(&s->l, &am, x);
			hits++;
			continue;
		case TQ_AOUT:
			list_remove(&s->l, &aout, x);
			s->where[x] = 0;
			ghost = true;
			break;
		default:
			break;
		}
		if (kin < 1)
			continue; /* libCacheSim admits nothing larger than A1in */
		while (ain.len + am.len + 1 > size) {
			if (ain.len > kin) {
				uint32_t y = ain.tail;

				list_remove(&s->l, &ain, y);
				s->where[y] = 0;
				if (kout > 0) {
					if (aout.len == kout) {
						s->where[aout.tail] = 0;
						list_remove(&s->l, &aout, aout.tail);
					}
					list_push(&s->l, &aout, y);
					s->where[y] = TQ_AOUT;
				}
			} else {
				s->where[am.tail] = 0;
				list_remove(&s->l, &am, am.tail);
			}
		}
		if (ghost) {
			if (am.len == am_size) {
				s->where[am.tail] = 0;
				list_remove(&s->l, &am, am.tail);
			}
			list_push(&s->l, &am, x);
			s->where[x] = TQ_AM;
		} else {
			list_push(&s->l, &ain, x);
			s->where[x] = TQ_AIN;
		}
	}
	return hits;
}

/* ---- S3-FIFO ---------------------------------------------------------------- */

enum { S3_SMALL = 1, S3_MAIN, S3_GHOST };

struct s3fifo {
	struct state *s;
	struct list small, main, ghost;
	uint64_t small_size, main_size, ghost_size;
};

static void
s3_put(struct s3fifo *f, struct list *q, uint32_t x, uint8_t where)
{
	list_push(&f->s->l, q, x);
	f->s->where[x] = where;
	f->s->bits[x] = 0;
}

/* Evicts one entry from the main FIFO, reinserting the accessed ones. */
static void
s3_evict_main(struct s3fifo *f)
{
	uint8_t *freq = f->s->bits;

	while (f->main.len > 0) {
		uint32_t t = f->main.tail;

		list_remove(&f->s->l, &f->main, t);
		if (freq[t] >= 1) {
			/* libCacheSim: the counter is capped at 3 here, not on
			 * the hit, and loses one per trip round the queue. */
			uint8_t left = (uint8_t)((freq[t] < 3 ? freq[t] : 3) - 1);

			list_push(&f->s->l, &f->main, t);
			freq[t] = left;
		} else {
			f->s->where[t] = 0;
			return;
		}
	}
}

/* Evicts one entry from the small FIFO into the ghost, moving the entries
 * seen twice to main; may empty the small FIFO without evicting. */
static void
s3_evict_small(struct s3fifo *f)
{
	while (f->small.len > 0) {
		uint32_t t = f->small.tail;

		list_remove(&f->s->l, &f->small, t);
		if (f->s->bits[t] >= 2) {
			s3_put(f, &f->main, t, S3_MAIN);
			continue;
		}
		f->s->where[t] = 0;
		if (f->ghost_size > 0) {
			if (f->ghost.len == f->ghost_size) {
				f->s->where[f->ghost.tail] = 0;
				list_remove(&f->s->l, &f->ghost, f->ghost.tail);
			}
			s3_put(f, &f->ghost, t, S3_GHOST);
		}
		return;
	}
}

/*
 * S3-FIFO (Yang et al., SOSP 2023): a small FIFO of 10 % of the cache, a
 * main FIFO of the rest with CLOCK-like reinsertion, and a ghost FIFO of
 * 90 % of the cache in keys (as large as main).  A key leaves the small
 * FIFO for main when it was hit at least twice there, else for the ghost;
 * a key found in the ghost is inserted into main.  As libCacheSim's
 * S3FIFOv0 (the version of the paper's experiments): the hit counter
 * counts without bound and is capped at 3 when main reinserts it, a key
 * moved to main starts again from 0, and the cache evicts from main when
 * main is over its share or the small FIFO is empty.  (libCacheSim's later
 * S3FIFO also sends new keys to main while the small FIFO is full before
 * the first eviction; peers.csv has the figures of the paper's version.)
 */
static uint64_t
run_s3fifo(struct state *s, const uint32_t *ids, size_t n, uint64_t size)
{
	struct s3fifo f = { .s = s, .small = LIST_EMPTY, .main = LIST_EMPTY,
	                    .ghost = LIST_EMPTY };
	uint64_t hits = 0;

	f.small_size = (uint64_t)((double)size * 0.10);
	f.main_size = size - f.small_size;
	f.ghost_size = (uint64_t)((double)size * 0.90);
	for (size_t i = 0; i < n; i++) {
		uint32_t x = ids[i];
		bool ghost = false;

		switch (s->where[x]) {
		case S3_SMALL:
		case S3_MAIN:
			if (s->bits[x] < UINT8_MAX)
				s->bits[x]++;
			hits++;
			continue;
		case S3_GHOST:
			list_remove(&s->l, &f.ghost, x);
			s->where[x] = 0;
			ghost = true;
			break;
		default:
			break;
		}
		/* libCacheSim admits nothing larger than the small FIFO, and
		 * puts nothing as large as it there. */
		if (f.small_size < 1)
			continue;
		while (f.small.len + f.main.len + 1 > size) {
			if (f.main.len > f.main_size || f.small.len == 0)
				s3_evict_main(&f);
			else
				s3_evict_small(&f);
		}
		if (ghost)
			s3_put(&f, &f.main, x, S3_MAIN);
		else if (f.small_size > 1)
			s3_put(&f, &f.small, x, S3_SMALL);
	}
	return hits;
}

/* ---- dispatch --------------------------------------------------------------- */

uint64_t
peer_hits(enum peer_policy p, const uint32_t *ids, size_t n,
          uint32_t distinct, uint64_t size)
{
	struct state s;
	uint64_t hits;

	if (n == 0 || size == 0 || !ids)
		return 0;
	if (p == PEER_LIRS)
		return peer_run_lirs(ids, n, distinct, size);
	if (!state_new(&s, distinct)) {
		state_free(&s);
		return UINT64_MAX;
	}
	switch (p) {
	case PEER_ARC:
		hits = run_arc(&s, ids, n, size);
		break;
	case PEER_S3FIFO:
		hits = run_s3fifo(&s, ids, n, size);
		break;
	case PEER_SIEVE:
		hits = run_sieve(&s, ids, n, size);
		break;
	case PEER_2Q:
		hits = run_2q(&s, ids, n, size);
		break;
	case PEER_CLOCK:
	default:
		hits = run_clock(&s, ids, n, size);
		break;
	}
	state_free(&s);
	return hits;
}
