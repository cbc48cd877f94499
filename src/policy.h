/*
 * policy.h - the replacement policy of one admit_lru shard, single-threaded
 * and free of the shard's concurrency (index, ring of gets, reclamation):
 * a window LRU in front of a segmented main LRU (probation + protected),
 * the admission contest between the window's overflow and main's victim,
 * and the moving of the segments' bounds when the configuration changes
 * (Einziger, Eden, Friedman, Manes, "Adaptive Software Cache Management",
 * Middleware 2018; Caffeine's BoundedLocalCache); or, as a second family
 * over the same lists, LIRS (Jiang, Zhang, "LIRS: an efficient low
 * inter-reference recency set replacement policy", SIGMETRICS 2002), with
 * a table of ghosts (recently evicted keys) for its non-resident HIR
 * blocks.  A change of family keeps every entry (admit_policy_configure).
 *
 * The same code runs the real shards (src/cache/shard.c, under the shard mutex) and
 * the miniature caches that choose their configuration (src/minisim.c), so
 * what is simulated is what runs.  Internal: never installed, not exported.
 *
 * Entries embed a struct admit_policy_node.  The policy owns its lists and
 * weights; the owner supplies the hooks (struct admit_policy_ops): an
 * entry's weight, whether the owner is over capacity, the admission contest,
 * and what to do with an entry the policy dropped (already unlinked).
 * Thread-safety: none; the owner serialises every call on one policy.
 * With ADMIT_DEBUG, every call ends by checking the invariants
 * (admit_policy_check).
 */
#ifndef ADMIT_POLICY_H
#define ADMIT_POLICY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum admit_policy_seg {
	ADMIT_SEG_WINDOW,
	ADMIT_SEG_PROBATION,
	ADMIT_SEG_PROTECTED,
	ADMIT_SEG_COUNT
};

/* Links of a circular list through a sentinel; next goes towards MRU.
 * owner and stamp fill the word after seg: the node stays 24 bytes.  seg
 * and stamp are atomics because a reader that holds no lock tests them
 * (admit_policy_quiet); only the policy's owner writes them.  The policy
 * never reads or writes owner: the node's container keeps its own bytes
 * there (the cache's entry: its key's length, entry.h). */
struct admit_policy_node {
	struct admit_policy_node *prev, *next;
	_Atomic uint8_t seg;            /* enum admit_policy_seg */
	unsigned char owner[3];
	_Atomic uint32_t stamp;         /* the policy's clock at the last
	                                 * access that moved the node: its
	                                 * place in LIRS's stack S */
};

/* The node's segment and stamp.  relaxed: the owner's own accesses are
 * ordered by its lock; a reader's test needs no order (a stale value
 * makes one hit quiet or not, never an unsafe access). */
static inline unsigned
admit_policy_seg_of(const struct admit_policy_node *n)
{
	return atomic_load_explicit(&n->seg, memory_order_relaxed);
}

static inline uint32_t
admit_policy_stamp_of(const struct admit_policy_node *n)
{
	/* relaxed: as admit_policy_seg_of(). */
	return atomic_load_explicit(&n->stamp, memory_order_relaxed);
}

/* Sets a node that is not yet in a policy (nor visible to a reader's
 * test) to a segment and stamp no hit is quiet on. */
static inline void
admit_policy_node_init(struct admit_policy_node *n)
{
	atomic_init(&n->seg, ADMIT_SEG_PROBATION);
	atomic_init(&n->stamp, 0);
}

/* The families.  In LIRS, protected holds the LIR blocks in stack order
 * (LRU end: the bottom of S), probation is the queue Q of resident HIR
 * blocks (LRU end: the next victim), the window is empty.  In ARC
 * (Megiddo, Modha, "ARC: a self-tuning, low overhead replacement cache",
 * FAST 2003), the window is T1 (keys seen once since they came in),
 * protected is T2 (seen again), probation is empty; the window's bound
 * is ARC's target p for T1, moved by the ghosts' hits (B1: keys evicted
 * from T1, B2: from T2), and nothing is contested. */
enum admit_policy_family {
	ADMIT_POLICY_WTINYLFU,
	ADMIT_POLICY_LIRS,
	ADMIT_POLICY_ARC,
};

struct admit_policy_ops {
	/* The entry's weight (1 per entry, or its bytes); constant while the
	 * entry is in the policy. */
	uint64_t (*weight)(void *ctx, const struct admit_policy_node *n);
	/* True while the owner holds more than it may (its entry and byte
	 * limits). */
	bool (*over)(void *ctx);
	/* The contest: true when cand should take victim's place.  Called
	 * only with admission on. */
	bool (*admit)(void *ctx, const struct admit_policy_node *cand,
	              const struct admit_policy_node *victim);
	/* n has left the policy (unlinked, weight removed) to make room; the
	 * owner forgets it.  rejected: it lost a contest as the candidate. */
	void (*drop)(void *ctx, struct admit_policy_node *n, bool rejected);
	/* The entry's key hash, for the ghosts; may be NULL when the policy
	 * has no ghost table. */
	uint64_t (*hash)(void *ctx, const struct admit_policy_node *n);
	/* The entry's key's count in the contest's frequencies (TinyLFU's
	 * estimate), for a move out of LIRS (admit_policy_configure); may be
	 * NULL: every count is then 0. */
	unsigned (*count)(void *ctx, const struct admit_policy_node *n);
};

/* A configuration: the family (zero: W-TinyLFU); for W-TinyLFU the window's share of the capacity in percent (100 =
 * plain LRU: nothing ever leaves the window but by eviction), the
 * protected segment's share of main, and whether the window's overflow
 * must win the contest to enter main (false: it always enters, main's
 * victim leaves).  steady is the contest's, not the core's: its
 * frequencies never age and no candidate wins by chance
 * (freqsketch.h). */
struct admit_policy_config {
	unsigned window_percent;        /* 0..100 */
	unsigned protected_percent;     /* 0..100 */
	bool admission;
	bool steady;
	uint8_t family;                 /* enum admit_policy_family */
	bool exact;                     /* every hit moves its entry: no
	                                 * quiet hits (plain LRU's exact
	                                 * order) */
};

/* LIRS's share of the capacity for resident HIR blocks, in percent: the
 * paper's 1 % (its experiments; at least one entry). */
#define ADMIT_POLICY_LIRS_HIR_PERCENT 1u

struct admit_policy {
	struct admit_policy_node seg[ADMIT_SEG_COUNT];   /* sentinels */
	uint64_t weight[ADMIT_SEG_COUNT];
	uint64_t count[ADMIT_SEG_COUNT];                 /* entries per list */
	uint64_t max_weight;            /* capacity in weight units */
	uint64_t window_max;            /* UINT64_MAX: plain LRU */
	uint64_t protected_max;
	struct admit_policy_config cfg;
	const struct admit_policy_ops *ops;
	void *ctx;
	bool unit_weight;               /* every weight is 1: ops->weight
	                                 * is not called (the common case) */
	uint64_t admitted, rejected, evicted;
	_Atomic uint32_t clock;         /* accesses that moved a node, for
	                                 * the stamps */
	/* Per segment (the fourth: none), how recent a stamp makes a hit
	 * quiet (admit_policy_quiet): the segment's entries >>
	 * ADMIT_POLICY_QUIET_SHIFT (LIRS's LIR blocks: >>
	 * ADMIT_POLICY_LIRS_QUIET_SHIFT), or 0 where no hit is quiet.  Written by
	 * the owner when it changes, read by lock-free readers. */
	_Atomic uint32_t quiet[ADMIT_SEG_COUNT + 1];
	uint64_t *ghost;                /* (hash >> 32) << 32 | stamp, by
	                                 * hash, the stamp's two low bits
	                                 * telling, in ARC, the list it left
	                                 * (policy.c); NULL: no ghosts */
	uint64_t ghost_mask;
	/* In ARC, the ghosts in the table from T1 and from T2 (|B1|, |B2|),
	 * counted from the move into ARC: the step of p. */
	uint64_t ghost_t1, ghost_t2;
};

/* admit_policy_quiet masks a segment into quiet[] with ADMIT_SEG_COUNT. */
_Static_assert(ADMIT_SEG_COUNT == 3, "quiet[] has a slot per mask value");

/* Sets p up empty with capacity max_weight and configuration cfg.  With
 * unit_weight every entry weighs 1 and ops->weight may be NULL. */
void admit_policy_init(struct admit_policy *p, const struct admit_policy_ops *ops,
                       void *ctx, uint64_t max_weight, bool unit_weight,
                       const struct admit_policy_config *cfg);

/* Gives p a table of ghosts for evicted keys: the smallest power of two
 * of 8-byte slots at least entries (at least 16), direct-mapped by hash (a
 * newer ghost takes an older one's slot); ops->hash must be set.  False when out of memory (p then
 * runs without ghosts: LIRS forgets evicted keys at once). */
bool admit_policy_ghosts(struct admit_policy *p, uint64_t entries);

/* Frees the ghost table (the lists belong to the owner). */
void admit_policy_free(struct admit_policy *p);

/* Bytes of the ghost table. */
uint64_t admit_policy_ghost_bytes(const struct admit_policy *p);

/* Changes the configuration in place: the window shrinks by moving its LRU
 * surplus to probation, grows by taking main's coldest entries, protected's
 * surplus is demoted; nothing is evicted and the total weight is kept.
 * To LIRS: the window's entries join Q, protected's are the LIR blocks
 * (LIR grows as HIR blocks are reused within S); from LIRS: LIR's
 * surplus over protected's bound is demoted to probation.  To ARC:
 * probation's entries join the window (T1) under its own, protected is
 * T2, T1's target what T1 holds.  O(entries moved): at most the window's
 * and protected's bounds. */
void admit_policy_configure(struct admit_policy *p,
                            const struct admit_policy_config *cfg);

/* A new entry: at the window's MRU end, then the bounds restored (which
 * may drop n itself). */
void admit_policy_insert(struct admit_policy *p, struct admit_policy_node *n);

/* A quiet hit is one on an entry near its list's MRU end, where a hit
 * would only move it to that end: it changes nothing, so that the hits on
 * a hot entry cost no list writes (memcached's ITEM_UPDATE_INTERVAL and
 * CacheLib's lruRefreshTime, by position rather than time).  Near: fewer
 * than its list's entries >> ADMIT_POLICY_QUIET_SHIFT accesses stamped
 * since its own, which bounds how many entries went ahead of it.  The
 * lists where a hit only moves its entry: the window and protected in
 * W-TinyLFU, probation too when protected is empty (LRU + TinyLFU); a
 * probation hit is a promotion and never quiet.  In LIRS, the LIR blocks
 * (protected), within their count >> ADMIT_POLICY_LIRS_QUIET_SHIFT: such
 * a hit would move a block already near the top of S to its top, and the
 * bottom of S, which decides what is demoted and which HIR blocks are in
 * S, stays where it is; a HIR block's hit (probation, Q) may make it LIR
 * and is never quiet.  A sixteenth, not a quarter: a LIR block's stamp
 * is also its recency in S, and at a quarter the adaptive policy loses a
 * third of a point on P3, at an eighth 0.6 on multi3 at 250, where it runs
 * LIRS (doc/design.md, "Quiet hits", has the measurements). */
#define ADMIT_POLICY_QUIET_SHIFT 2
#define ADMIT_POLICY_LIRS_QUIET_SHIFT 4

/* Whether a hit on n would be quiet.  Safe without the owner's lock, on
 * a node in p or one that left it (the answer then is a guess). */
static inline bool
admit_policy_quiet(const struct admit_policy *p,
                   const struct admit_policy_node *n)
{
	/* relaxed: a guess is enough (admit_policy_seg_of); the owner's
	 * own calls are ordered by its lock. */
	uint32_t span = atomic_load_explicit(&p->quiet[admit_policy_seg_of(n) &
	                                               ADMIT_SEG_COUNT],
	                                     memory_order_relaxed);
	/* relaxed: as above. */
	uint32_t now = atomic_load_explicit(&p->clock, memory_order_relaxed);

	return (uint32_t)(now - admit_policy_stamp_of(n)) < span;
}

/* A hit on n: nothing if quiet (admit_policy_quiet); else to the MRU end
 * of its segment; from probation to protected (when protected has room
 * in its bounds), protected's surplus demoted. */
void admit_policy_hit(struct admit_policy *p, struct admit_policy_node *n);

/* n (not in the policy) takes old's place in old's list; old leaves the
 * policy without a drop.  n's weight may differ; call
 * admit_policy_evict afterwards to restore the bounds. */
void admit_policy_replace(struct admit_policy *p, struct admit_policy_node *old,
                          struct admit_policy_node *n);

/* Takes n out of the policy (a delete); no drop. */
void admit_policy_remove(struct admit_policy *p, struct admit_policy_node *n);

/* Restores the window's bound (each overflowing entry contests main's
 * victim) and then the owner's capacity (evicting main's victims). */
void admit_policy_evict(struct admit_policy *p);

/* The window's bound, as stats report it (max_weight for plain LRU). */
uint64_t admit_policy_window(const struct admit_policy *p);

/* Total weight held. */
static inline uint64_t
admit_policy_weight(const struct admit_policy *p)
{
	return p->weight[ADMIT_SEG_WINDOW] + p->weight[ADMIT_SEG_PROBATION] +
	       p->weight[ADMIT_SEG_PROTECTED];
}

/* Checks the invariants: each list well linked and holding count[] nodes
 * whose seg names it and whose weights sum to weight[]; protected within
 * its bound.  Returns false (and with ADMIT_DEBUG aborts) if one fails.
 * Walks every entry: O(n). */
bool admit_policy_check(const struct admit_policy *p);

#endif /* ADMIT_POLICY_H */
