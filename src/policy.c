/*
 * policy.c - the window / probation / protected policy of one shard (see
 * policy.h).  New keys enter the window at its MRU end.  Whatever
 * overflows the window moves to the MRU end of probation; while the owner
 * is over capacity, that candidate is judged against main's victim
 * (probation's LRU entry, else protected's) and the loser leaves.  A hit in
 * probation promotes to protected; protected's overflow is demoted back to
 * probation.  Plain LRU is a window of everything; LRU + TinyLFU a window
 * of 0 and no protected segment.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "alloc.h"
#include "policy.h"

static inline void
node_unlink(struct admit_policy_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
}

static inline void
push_mru(struct admit_policy_node *head, struct admit_policy_node *n)
{
	n->next = head;
	n->prev = head->prev;
	head->prev->next = n;
	head->prev = n;
}

static inline struct admit_policy_node *
lru_of(struct admit_policy *p, enum admit_policy_seg k)
{
	struct admit_policy_node *h = &p->seg[k];

	return h->next == h ? NULL : h->next;
}

static inline uint64_t
weight_of(struct admit_policy *p, const struct admit_policy_node *n)
{
	return p->unit_weight ? 1 : p->ops->weight(p->ctx, n);
}

static inline bool
is_lirs(const struct admit_policy *p)
{
	return p->cfg.family == ADMIT_POLICY_LIRS;
}

static inline bool
is_arc(const struct admit_policy *p)
{
	return p->cfg.family == ADMIT_POLICY_ARC;
}

/* The node's fields readers test (policy.h).  relaxed: the owner is the
 * only writer, ordered by its lock; readers need no order. */
static inline void
set_seg(struct admit_policy_node *n, enum admit_policy_seg k)
{
	atomic_store_explicit(&n->seg, (uint8_t)k, memory_order_relaxed);
}

static inline void
set_stamp(struct admit_policy_node *n, uint32_t st)
{
	/* relaxed: as set_seg(). */
	atomic_store_explicit(&n->stamp, st, memory_order_relaxed);
}

/* Whether a hit in segment k may be quiet (policy.h): in W-TinyLFU, where
 * a hit there only moves its entry to the MRU end; in LIRS, a LIR block's
 * (a move within the top of S), never a HIR block's (Q: a hit there may
 * make it LIR); in ARC, T2's, never T1's (a hit there moves it to T2). */
static inline bool
may_be_quiet(const struct admit_policy *p, unsigned k)
{
	if (p->cfg.exact)
		return false;
	if (is_arc(p))
		return k == ADMIT_SEG_PROTECTED;
	if (is_lirs(p))
		return k == ADMIT_SEG_PROTECTED;
	return k != ADMIT_SEG_PROBATION || p->protected_max == 0;
}

/* Keeps quiet[k] at what segment k's count and the configuration say,
 * stored only when it changes: readers' lines stay clean. */
static inline void
update_quiet(struct admit_policy *p, unsigned k)
{
	unsigned shift = is_lirs(p) ? ADMIT_POLICY_LIRS_QUIET_SHIFT :
	                 ADMIT_POLICY_QUIET_SHIFT;
	uint64_t span = may_be_quiet(p, k) ? p->count[k] >> shift : 0;

	if (span > UINT32_MAX)
		span = UINT32_MAX;
	/* relaxed: the owner is the only writer; readers need no order. */
	if (atomic_load_explicit(&p->quiet[k], memory_order_relaxed) != span)
		/* relaxed: as above. */
		atomic_store_explicit(&p->quiet[k], (uint32_t)span,
		                      memory_order_relaxed);
}

static void
update_quiet_all(struct admit_policy *p)
{
	for (unsigned k = 0; k < ADMIT_SEG_COUNT; k++)
		update_quiet(p, k);
}

/* Every access stamps the node, whatever the family, so that a switch to
 * LIRS finds S already ordered. */
static inline void
stamp(struct admit_policy *p, struct admit_policy_node *n)
{
	/* relaxed: the owner is the only writer (policy.h). */
	uint32_t now = atomic_load_explicit(&p->clock, memory_order_relaxed) + 1;

	/* relaxed: as above; readers' tests need no order. */
	atomic_store_explicit(&p->clock, now, memory_order_relaxed);
	set_stamp(n, now);
}

static inline void
add(struct admit_policy *p, struct admit_policy_node *n, enum admit_policy_seg k)
{
	set_seg(n, k);
	p->weight[k] += weight_of(p, n);
	p->count[k]++;
	update_quiet(p, k);
	push_mru(&p->seg[k], n);
}

static inline void
take(struct admit_policy *p, struct admit_policy_node *n)
{
	unsigned k = admit_policy_seg_of(n);

	node_unlink(n);
	p->weight[k] -= weight_of(p, n);
	p->count[k]--;
	update_quiet(p, k);
}

/* Moves n to the MRU end of its own segment: its weight and count stay
 * where they are (a hit's commonest change). */
static inline void
touch(struct admit_policy *p, struct admit_policy_node *n)
{
	node_unlink(n);
	push_mru(&p->seg[admit_policy_seg_of(n)], n);
}

/* Moves n to the MRU end of segment k. */
static inline void
move(struct admit_policy *p, struct admit_policy_node *n, enum admit_policy_seg k)
{
	take(p, n);
	add(p, n, k);
}

/* Debug builds check the invariants after every change: the walk of every
 * list while the policy is small (the unit tests) and every 4096th change
 * otherwise, so a debug cache_sim stays usable; the bounds every time. */
static void
debug_check(struct admit_policy *p)
{
#if ADMIT_DEBUG
	static _Thread_local unsigned calls;
	uint64_t n = p->count[0] + p->count[1] + p->count[2];

	if (n <= 64 || (++calls & 4095) == 0) {
		admit_policy_check(p);
	} else if (p->weight[ADMIT_SEG_PROTECTED] > p->protected_max) {
		fprintf(stderr, "admit_policy_check: protected over its bound\n");
		abort();
	}
#else
	(void)p;
#endif
}

static void
set_bounds(struct admit_policy *p)
{
	uint64_t max = p->max_weight, main;
	unsigned w = p->cfg.window_percent, q = p->cfg.protected_percent;

	if (is_arc(p)) {
		/* T1's target p is the window's bound, set by to_arc() and
		 * moved by ghost hits (arc_insert()); T2 may hold it all. */
		if (p->window_max > max)
			p->window_max = max;
		p->protected_max = max;
		return;
	}
	if (is_lirs(p)) {
		uint64_t hir = max / 100 * ADMIT_POLICY_LIRS_HIR_PERCENT +
		               max % 100 * ADMIT_POLICY_LIRS_HIR_PERCENT / 100;

		p->window_max = 0;
		p->protected_max = max - (hir ? hir : max > 1);
		return;
	}
	if (w >= 100) {
		p->window_max = UINT64_MAX;
		p->protected_max = 0;
		return;
	}
	/* Caffeine: window = max - floor((100 - w) % of max), so that 1 %
	 * of a small cache is still one entry; protected = floor(q % of
	 * main).  Split to avoid overflow for byte capacities. */
	p->window_max = max - (max / 100 * (100 - w) + max % 100 * (100 - w) / 100);
	main = max - p->window_max;
	p->protected_max = main / 100 * q + main % 100 * q / 100;
}

void
admit_policy_init(struct admit_policy *p, const struct admit_policy_ops *ops,
                  void *ctx, uint64_t max_weight, bool unit_weight,
                  const struct admit_policy_config *cfg)
{
	*p = (struct admit_policy){ .ops = ops, .ctx = ctx,
	                            .max_weight = max_weight, .cfg = *cfg,
	                            .unit_weight = unit_weight };
	for (int k = 0; k < ADMIT_SEG_COUNT; k++)
		p->seg[k].next = p->seg[k].prev = &p->seg[k];
	set_bounds(p);
	update_quiet_all(p);
}

bool
admit_policy_ghosts(struct admit_policy *p, uint64_t entries)
{
	uint64_t n = 16;

	while (n < entries && n < (UINT64_C(1) << 40))
		n *= 2;
	admit_free(p->ghost);
	p->ghost = admit_calloc(n, sizeof(*p->ghost));
	p->ghost_mask = p->ghost ? n - 1 : 0;
	return p->ghost != NULL;
}

void
admit_policy_free(struct admit_policy *p)
{
	admit_free(p->ghost);
	p->ghost = NULL;
	p->ghost_mask = 0;
}

uint64_t
admit_policy_ghost_bytes(const struct admit_policy *p)
{
	return p->ghost ? (p->ghost_mask + 1) * sizeof(*p->ghost) : 0;
}

/* A ghost's stamp's two low bits, in ARC: it was evicted in ARC, and
 * from T1 (B1) or from T2 (B2).  Another family's ghost says nothing of
 * ARC's lists.  LIRS's test of a stamp (in_stack()) is then off by three
 * accesses at most. */
#define GHOST_ARC 1u
#define GHOST_T2 2u
#define GHOST_BITS 3u

/* Remembers an evicted node's key and stamp.  In ARC, marks it with the
 * list it left and counts the ghosts by list (the one a newer ghost
 * overwrites forgotten). */
static inline void
ghost_put(struct admit_policy *p, const struct admit_policy_node *n)
{
	uint64_t h, *g;
	uint32_t st = admit_policy_stamp_of(n) & ~GHOST_BITS;

	if (!p->ghost)
		return;
	h = p->ops->hash(p->ctx, n);
	g = &p->ghost[h & p->ghost_mask];
	if (is_arc(p)) {
		if ((*g & GHOST_BITS) == (GHOST_ARC | GHOST_T2))
			p->ghost_t2 -= p->ghost_t2 > 0;
		else if ((*g & GHOST_BITS) == GHOST_ARC)
			p->ghost_t1 -= p->ghost_t1 > 0;
		st |= GHOST_ARC;
		if (admit_policy_seg_of(n) == ADMIT_SEG_PROTECTED) {
			st |= GHOST_T2;
			p->ghost_t2++;
		} else {
			p->ghost_t1++;
		}
	}
	*g = (h >> 32 << 32) | st;
}

/* The stamp an evicted key had, forgetting it; false if none is kept.
 * A slot is empty as 0: a ghost of hash < 2^32 with stamp 0 is lost. */
static bool
ghost_take(struct admit_policy *p, const struct admit_policy_node *n,
           uint32_t *st)
{
	uint64_t h, *g;

	if (!p->ghost)
		return false;
	h = p->ops->hash(p->ctx, n);
	g = &p->ghost[h & p->ghost_mask];
	if (*g == 0 || *g >> 32 != h >> 32)
		return false;
	*st = (uint32_t)*g;
	if (is_arc(p) && (*st & GHOST_BITS) == (GHOST_ARC | GHOST_T2))
		p->ghost_t2 -= p->ghost_t2 > 0;
	else if (is_arc(p) && (*st & GHOST_BITS) == GHOST_ARC)
		p->ghost_t1 -= p->ghost_t1 > 0;
	*g = 0;
	return true;
}

/* Whether an access stamped st is in LIRS's stack S: no older than the
 * bottom LIR block (S after pruning).  Distances in the 32-bit clock:
 * exact while S spans fewer than 2^32 accesses. */
static bool
in_stack(const struct admit_policy *p, uint32_t st)
{
	const struct admit_policy_node *h = &p->seg[ADMIT_SEG_PROTECTED];
	/* relaxed: the owner's own clock (policy.h). */
	uint32_t now = atomic_load_explicit(&p->clock, memory_order_relaxed);

	if (h->next == h)
		return true;
	return (uint32_t)(now - st) <=
	       (uint32_t)(now - admit_policy_stamp_of(h->next));
}

/* Inline: on a hit, protected is seldom over. */
static inline void
demote_protected_overflow(struct admit_policy *p)
{
	struct admit_policy_node *n;

	while (p->weight[ADMIT_SEG_PROTECTED] > p->protected_max &&
	       (n = lru_of(p, ADMIT_SEG_PROTECTED)))
		move(p, n, ADMIT_SEG_PROBATION);
}

/* Moves probation's entries, its coldest first, into segment k, each
 * placed just before k's LRU end: k's coldest until the next comes.
 * O(entries in probation). */
static void
probation_into(struct admit_policy *p, enum admit_policy_seg k)
{
	struct admit_policy_node *n, *h = &p->seg[k];

	while ((n = p->seg[ADMIT_SEG_PROBATION].prev) !=
	       &p->seg[ADMIT_SEG_PROBATION]) {
		take(p, n);
		set_seg(n, k);
		p->weight[k] += weight_of(p, n);
		p->count[k]++;
		push_mru(h->next, n);
	}
	update_quiet(p, k);
}

/*
 * Into LIRS, every entry becomes LIR, coldest at the bottom of S:
 * probation's entries under protected's, the window's on top; then LIR's
 * surplus (probation's coldest) goes to Q as LIRS's bounds say.  Leaving
 * probation and the window in Q instead would make Q, evicted first in
 * first out, hold most of the cache, and LIR grow only by Q's hits: on
 * mixed loops, a pass of FIFO (doc/hit-ratio.md).  O(entries in probation
 * and the window).
 */
static void
to_lirs(struct admit_policy *p)
{
	struct admit_policy_node *n;

	probation_into(p, ADMIT_SEG_PROTECTED);   /* below S's bottom */
	while ((n = lru_of(p, ADMIT_SEG_WINDOW)))
		move(p, n, ADMIT_SEG_PROTECTED);
	demote_protected_overflow(p);
}

/*
 * Out of LIRS, protected keeps the LIR blocks within its bound from S's
 * top whose keys the contest's frequencies count at least twice, in S's
 * order; every other block goes to probation, above Q's blocks, in S's
 * order (the bottom of S lowest).  W-TinyLFU's protected segment holds
 * keys hit while in probation (a second access), which it never
 * contests; every block that found LIR room in the cold start, or that
 * was resident when LIRS began, is LIR whether it came back or not.
 * Left in protected, such a block would stay uncontested until
 * promotions pushed it out, with probation, where the contests are held,
 * squeezed to what protected leaves: on zipf-scans at 10,000 entries the
 * cache then trails the same configuration run from the start for half
 * the trace.  The count keeps a loop's fixed part, every block of which
 * comes back; the bound from S's top leaves stale blocks counted twice to
 * the contests (doc/hit-ratio.md).  O(LIR blocks).
 */
static void
from_lirs(struct admit_policy *p)
{
	struct admit_policy_node *n, *prev, *h = &p->seg[ADMIT_SEG_PROTECTED],
	                         *at = &p->seg[ADMIT_SEG_PROBATION];
	uint64_t above = 0;             /* the weight from S's top to n's */

	/* From the top of S down: each block demoted goes just under the
	 * one demoted before it, so probation holds them in S's order, all
	 * above Q's blocks. */
	for (n = h->prev; n != h; n = prev) {
		uint64_t w = weight_of(p, n);

		prev = n->prev;
		above += w;
		if (above <= p->protected_max && p->ops->count &&
		    p->ops->count(p->ctx, n) >= 2)
			continue;
		take(p, n);
		set_seg(n, ADMIT_SEG_PROBATION);
		p->weight[ADMIT_SEG_PROBATION] += w;
		p->count[ADMIT_SEG_PROBATION]++;
		update_quiet(p, ADMIT_SEG_PROBATION);
		push_mru(at, n);
		at = n;
	}
}

/*
 * Into ARC: T1 (the window) takes probation's entries under the window's
 * (W-TinyLFU's probation holds main's entries not hit since they came in;
 * LIRS's Q its HIR blocks), T2 keeps protected's (W-TinyLFU's entries hit
 * again, LIRS's LIR blocks); T1's target p starts at what T1 holds, and
 * the ghosts' counts at zero.  O(entries in probation).
 */
static void
to_arc(struct admit_policy *p)
{
	probation_into(p, ADMIT_SEG_WINDOW);     /* T1's coldest */
	update_quiet_all(p);
	p->window_max = p->weight[ADMIT_SEG_WINDOW];
	p->ghost_t1 = p->ghost_t2 = 0;
}

void
admit_policy_configure(struct admit_policy *p, const struct admit_policy_config *cfg)
{
	struct admit_policy_node *n;
	bool was_lirs = is_lirs(p), was_arc = is_arc(p);

	p->cfg = *cfg;
	if (is_arc(p)) {
		if (!was_arc)
			to_arc(p);
		set_bounds(p);
		update_quiet_all(p);
		debug_check(p);
		return;
	}
	set_bounds(p);
	update_quiet_all(p);
	if (was_lirs && !is_lirs(p))
		from_lirs(p);
	demote_protected_overflow(p);
	if (is_lirs(p)) {
		to_lirs(p);
		debug_check(p);
		return;
	}
	/* A shrunk window hands its surplus to probation without a contest:
	 * the owner's size does not change (Caffeine does the same). */
	while (p->weight[ADMIT_SEG_WINDOW] > p->window_max &&
	       (n = lru_of(p, ADMIT_SEG_WINDOW)))
		move(p, n, ADMIT_SEG_PROBATION);
	/* A grown window is filled at once with main's coldest entries, so
	 * that new keys keep competing for their place (Caffeine). */
	while (p->weight[ADMIT_SEG_WINDOW] < p->window_max &&
	       ((n = lru_of(p, ADMIT_SEG_PROBATION)) ||
	        (n = lru_of(p, ADMIT_SEG_PROTECTED))) &&
	       p->weight[ADMIT_SEG_WINDOW] + weight_of(p, n) <= p->window_max)
		move(p, n, ADMIT_SEG_WINDOW);
	debug_check(p);
}

/* LIRS: a block enters LIR while LIR has room in a cache not yet full
 * (the cold start), or when its ghost is still in S (a non-resident HIR
 * block reused within the LIR blocks' recency); else it is a resident HIR
 * block at Q's tail. */
static void
lirs_insert(struct admit_policy *p, struct admit_policy_node *n)
{
	uint32_t old;
	bool in_s = ghost_take(p, n, &old) && in_stack(p, old);

	stamp(p, n);
	if (in_s || (admit_policy_weight(p) + weight_of(p, n) <= p->max_weight &&
	             p->weight[ADMIT_SEG_PROTECTED] + weight_of(p, n) <=
	             p->protected_max)) {
		add(p, n, ADMIT_SEG_PROTECTED);
		demote_protected_overflow(p);
	} else {
		add(p, n, ADMIT_SEG_PROBATION);
	}
}

/* ARC: a key whose ghost is in the table enters T2 and, when ARC evicted
 * it, moves T1's target p, towards T1 from B1 and away from it from B2,
 * by the key's weight times the ratio of the other list's ghosts to its
 * own (at least 1), as ARC's adaptation; any other key enters T1.  The
 * ghosts are a direct-mapped table of about the capacity's keys
 * (admit_policy_ghosts), as ARC's B1 and B2 together hold at most the
 * capacity's. */
static void
arc_insert(struct admit_policy *p, struct admit_policy_node *n)
{
	uint32_t st;

	if (ghost_take(p, n, &st)) {
		uint64_t w = weight_of(p, n), b1 = p->ghost_t1 ? p->ghost_t1 : 1,
		         b2 = p->ghost_t2 ? p->ghost_t2 : 1;

		if (!(st & GHOST_ARC)) {
			;               /* another family's: no evidence */
		} else if (!(st & GHOST_T2)) {
			w *= b2 > b1 ? b2 / b1 : 1;
			p->window_max = w > p->max_weight - p->window_max
			                ? p->max_weight : p->window_max + w;
		} else {
			w *= b1 > b2 ? b1 / b2 : 1;
			p->window_max = p->window_max > w ? p->window_max - w : 0;
		}
		stamp(p, n);
		add(p, n, ADMIT_SEG_PROTECTED);
	} else {
		stamp(p, n);
		add(p, n, ADMIT_SEG_WINDOW);
	}
}

void
admit_policy_insert(struct admit_policy *p, struct admit_policy_node *n)
{
	if (is_arc(p)) {
		arc_insert(p, n);
	} else if (is_lirs(p)) {
		lirs_insert(p, n);
	} else {
		stamp(p, n);
		add(p, n, ADMIT_SEG_WINDOW);
	}
	admit_policy_evict(p);
}

/* LIRS: a LIR block goes to the top of S (pruning is implicit: the bottom
 * is protected's LRU end); a resident HIR block reused within S becomes
 * LIR and the bottom LIR block moves to Q's tail; else it stays HIR, at
 * Q's tail.  While LIR has room (a delete made some), any reused block
 * becomes LIR. */
static void
lirs_hit(struct admit_policy *p, struct admit_policy_node *n)
{
	unsigned seg = admit_policy_seg_of(n);
	bool in_s = seg == ADMIT_SEG_PROTECTED ||
	            in_stack(p, admit_policy_stamp_of(n)) ||
	            p->weight[ADMIT_SEG_PROTECTED] + weight_of(p, n) <=
	            p->protected_max;
	enum admit_policy_seg k = in_s ? ADMIT_SEG_PROTECTED : ADMIT_SEG_PROBATION;

	stamp(p, n);
	if (seg == k)
		touch(p, n);
	else
		move(p, n, k);
	demote_protected_overflow(p);
}

void
admit_policy_hit(struct admit_policy *p, struct admit_policy_node *n)
{
	if (admit_policy_quiet(p, n))
		return;
	if (is_arc(p)) {
		/* T1 or T2: to T2's MRU end. */
		stamp(p, n);
		if (admit_policy_seg_of(n) == ADMIT_SEG_PROTECTED)
			touch(p, n);
		else
			move(p, n, ADMIT_SEG_PROTECTED);
		debug_check(p);
		return;
	}
	if (is_lirs(p)) {
		lirs_hit(p, n);
		debug_check(p);
		return;
	}
	stamp(p, n);
	if (admit_policy_seg_of(n) == ADMIT_SEG_PROBATION && p->protected_max > 0) {
		move(p, n, ADMIT_SEG_PROTECTED);
		demote_protected_overflow(p);
	} else {
		touch(p, n);
		/* A replaced entry may have grown in protected. */
		demote_protected_overflow(p);
	}
	debug_check(p);
}

void
admit_policy_replace(struct admit_policy *p, struct admit_policy_node *old,
                     struct admit_policy_node *n)
{
	enum admit_policy_seg k = (enum admit_policy_seg)admit_policy_seg_of(old);

	p->weight[k] -= weight_of(p, old);
	p->weight[k] += weight_of(p, n);
	set_seg(n, k);
	set_stamp(n, admit_policy_stamp_of(old));
	n->prev = old->prev;
	n->next = old->next;
	n->prev->next = n;
	n->next->prev = n;
}

void
admit_policy_remove(struct admit_policy *p, struct admit_policy_node *n)
{
	take(p, n);
	debug_check(p);
}

/* Main's victim: probation's LRU entry, else protected's, else the
 * window's. */
static inline struct admit_policy_node *
victim_of(struct admit_policy *p)
{
	struct admit_policy_node *v = lru_of(p, ADMIT_SEG_PROBATION);

	if (!v)
		v = lru_of(p, ADMIT_SEG_PROTECTED);
	if (!v)
		v = lru_of(p, ADMIT_SEG_WINDOW);
	return v;
}

static inline void
drop(struct admit_policy *p, struct admit_policy_node *n, bool rejected)
{
	take(p, n);
	ghost_put(p, n);
	p->ops->drop(p->ctx, n, rejected);
}

/* ARC's replacement: T1's LRU entry while T1 is over its target p (or T2
 * is empty), else T2's. */
static void
arc_evict(struct admit_policy *p)
{
	struct admit_policy_node *victim;

	while (p->ops->over(p->ctx)) {
		victim = NULL;
		if (p->weight[ADMIT_SEG_WINDOW] > p->window_max ||
		    !p->count[ADMIT_SEG_PROTECTED])
			victim = lru_of(p, ADMIT_SEG_WINDOW);
		if (!victim)
			victim = victim_of(p);
		if (!victim)
			break;
		drop(p, victim, false);
		p->evicted++;
	}
	debug_check(p);
}

void
admit_policy_evict(struct admit_policy *p)
{
	struct admit_policy_node *cand, *victim;

	if (is_arc(p)) {
		arc_evict(p);
		return;
	}
	while (p->weight[ADMIT_SEG_WINDOW] > p->window_max &&
	       (cand = lru_of(p, ADMIT_SEG_WINDOW))) {
		bool won = false;

		move(p, cand, ADMIT_SEG_PROBATION);
		while (p->ops->over(p->ctx)) {
			victim = victim_of(p);
			if (victim == cand) {
				drop(p, cand, false);
				p->evicted++;
				break;
			}
			if (p->cfg.admission && !p->ops->admit(p->ctx, cand, victim)) {
				drop(p, cand, true);
				p->rejected++;
				break;
			}
			drop(p, victim, false);
			p->evicted++;
			won = true;
		}
		p->admitted += won;
	}
	/* A grown value, or a window holding everything (plain LRU). */
	while (p->ops->over(p->ctx) && (victim = victim_of(p))) {
		drop(p, victim, false);
		p->evicted++;
	}
	debug_check(p);
}

uint64_t
admit_policy_window(const struct admit_policy *p)
{
	return p->window_max == UINT64_MAX ? p->max_weight : p->window_max;
}

bool
admit_policy_check(const struct admit_policy *p)
{
	const char *why = NULL;

	for (int k = 0; k < ADMIT_SEG_COUNT && !why; k++) {
		const struct admit_policy_node *h = &p->seg[k], *n;
		uint64_t w = 0, c = 0;

		for (n = h->next; n != h; n = n->next) {
			if (n->next->prev != n || n->prev->next != n) {
				why = "broken links";
				break;
			}
			if (admit_policy_seg_of(n) != (unsigned)k) {
				why = "entry on another segment's list";
				break;
			}
			w += weight_of((struct admit_policy *)p, n);
			if (++c > p->count[k]) {
				why = "more entries than counted";
				break;
			}
		}
		if (!why && (c != p->count[k] || w != p->weight[k]))
			why = "segment count or weight does not add up";
	}
	if (!why && p->weight[ADMIT_SEG_PROTECTED] > p->protected_max)
		why = "protected over its bound";
	if (!why && p->window_max != UINT64_MAX &&
	    p->window_max > p->max_weight)
		why = "window bound over capacity";
	if (!why)
		return true;
#if ADMIT_DEBUG
	fprintf(stderr, "admit_policy_check: %s\n", why);
	abort();
#endif
	return false;
}
