/*
 * test_policy.c - the single-threaded policy core (src/policy.c): LRU
 * order, the segments and their bounds, the admission contest, moving the
 * bounds, and the invariant check, against hand-worked cases and a long
 * random run checked after every call.
 */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "testutil.h"

#define MAXN 4096

/* An owner: nodes numbered by their index, weights given per node, a
 * capacity in weight, and a scripted contest. */
struct owner {
	struct admit_policy p;
	struct node {
		struct admit_policy_node n;
		uint64_t w;
		bool in;
	} node[MAXN];
	uint64_t max;
	int verdict;                    /* 1 admit, 0 reject, -1 random */
	uint64_t rng;
	unsigned dropped[MAXN], ndropped, nrejected, contests;
	unsigned count[MAXN];           /* each key's frequency (o_count) */
};

static inline struct node *
node_of(const struct admit_policy_node *n)
{
	return (struct node *)((char *)n - offsetof(struct node, n));
}

static uint64_t
o_weight(void *ctx, const struct admit_policy_node *n)
{
	(void)ctx;
	return node_of(n)->w;
}

static bool
o_over(void *ctx)
{
	struct owner *o = ctx;

	return admit_policy_weight(&o->p) > o->max;
}

static bool
o_admit(void *ctx, const struct admit_policy_node *cand,
        const struct admit_policy_node *victim)
{
	struct owner *o = ctx;

	(void)cand;
	(void)victim;
	o->contests++;
	if (o->verdict >= 0)
		return o->verdict;
	o->rng = test_key(o->rng);
	return o->rng & 1;
}

static void
o_drop(void *ctx, struct admit_policy_node *n, bool rejected)
{
	struct owner *o = ctx;
	struct node *x = node_of(n);

	ck_assert(x->in);
	x->in = false;
	o->dropped[o->ndropped++ % MAXN] = (unsigned)(x - o->node);
	o->nrejected += rejected;
}

static uint64_t
o_hash(void *ctx, const struct admit_policy_node *n)
{
	struct owner *o = ctx;

	return test_key((uint64_t)(node_of(n) - o->node));
}

static unsigned
o_count(void *ctx, const struct admit_policy_node *n)
{
	struct owner *o = ctx;

	return o->count[node_of(n) - o->node];
}

static const struct admit_policy_ops ops = {
	.weight = o_weight, .over = o_over, .admit = o_admit, .drop = o_drop,
	.hash = o_hash, .count = o_count,
};

static struct owner *
owner_new(uint64_t max, unsigned window, unsigned prot, bool admission)
{
	struct owner *o = calloc(1, sizeof(*o));
	struct admit_policy_config cfg = { window, prot, admission, false, 0,
	                                   true };

	ck_assert_ptr_nonnull(o);
	o->max = max;
	o->verdict = 1;
	for (unsigned i = 0; i < MAXN; i++)
		o->node[i].w = 1;
	admit_policy_init(&o->p, &ops, o, max, false, &cfg);
	ck_assert(admit_policy_ghosts(&o->p, max));
	return o;
}

static void
owner_free(struct owner *o)
{
	admit_policy_free(&o->p);
	free(o);
}

static void
put(struct owner *o, unsigned i)
{
	ck_assert(!o->node[i].in);
	o->node[i].in = true;
	admit_policy_insert(&o->p, &o->node[i].n);
}

/* The node indices of segment k, LRU first. */
static unsigned
seg_list(struct owner *o, enum admit_policy_seg k, unsigned *out)
{
	unsigned n = 0;

	for (struct admit_policy_node *x = o->p.seg[k].next; x != &o->p.seg[k];
	     x = x->next)
		out[n++] = (unsigned)(node_of(x) - o->node);
	return n;
}

/* Plain LRU (window 100 %): the least recently used leaves, a hit
 * refreshes, no contest is ever held. */
START_TEST(test_plain_lru)
{
	struct owner *o = owner_new(3, 100, 0, false);
	unsigned l[8];

	put(o, 0);
	put(o, 1);
	put(o, 2);
	admit_policy_hit(&o->p, &o->node[0].n);  /* order 1 2 0 */
	put(o, 3);                                /* 1 leaves */
	ck_assert_uint_eq(o->ndropped, 1);
	ck_assert_uint_eq(o->dropped[0], 1);
	ck_assert_uint_eq(seg_list(o, ADMIT_SEG_WINDOW, l), 3);
	ck_assert_uint_eq(l[0], 2);
	ck_assert_uint_eq(l[1], 0);
	ck_assert_uint_eq(l[2], 3);
	ck_assert_uint_eq(o->contests, 0);
	ck_assert_uint_eq(admit_policy_window(&o->p), 3);
	ck_assert(admit_policy_check(&o->p));
	owner_free(o);
}
END_TEST

/* Caffeine's bounds: 1 % of 100 is a window of 1, protected 80 % of the
 * 99 left; a probation hit promotes, protected's surplus is demoted. */
START_TEST(test_segments)
{
	struct owner *o = owner_new(100, 1, 80, true);
	unsigned l[128];

	ck_assert_uint_eq(o->p.window_max, 1);
	ck_assert_uint_eq(o->p.protected_max, 79);
	for (unsigned i = 0; i < 100; i++)
		put(o, i);
	ck_assert_uint_eq(o->ndropped, 0);
	ck_assert_uint_eq(o->p.count[ADMIT_SEG_WINDOW], 1);
	ck_assert_uint_eq(o->p.count[ADMIT_SEG_PROBATION], 99);
	for (unsigned i = 0; i < 90; i++)
		admit_policy_hit(&o->p, &o->node[i].n);
	ck_assert_uint_eq(o->p.count[ADMIT_SEG_PROTECTED], 79);
	ck_assert_uint_eq(seg_list(o, ADMIT_SEG_PROTECTED, l), 79);
	ck_assert_uint_eq(l[0], 11);            /* 0..10 demoted */
	ck_assert_uint_eq(seg_list(o, ADMIT_SEG_PROBATION, l), 20);
	/* Demoted ones enter probation at its MRU end, after 90..98. */
	ck_assert_uint_eq(l[0], 90);
	ck_assert_uint_eq(l[19], 10);
	ck_assert(admit_policy_check(&o->p));
	owner_free(o);
}
END_TEST

/* The window's overflow contests probation's LRU entry: rejected, it
 * leaves itself; admitted, the victim leaves; without admission no
 * contest is held and the victim always leaves. */
START_TEST(test_contest)
{
	struct owner *o = owner_new(10, 10, 80, true);  /* window 1 */

	for (unsigned i = 0; i < 10; i++)
		put(o, i);
	o->verdict = 0;
	put(o, 10);                     /* 9 leaves the window, rejected */
	ck_assert_uint_eq(o->ndropped, 1);
	ck_assert_uint_eq(o->dropped[0], 9);
	ck_assert_uint_eq(o->nrejected, 1);
	ck_assert_uint_eq(o->p.rejected, 1);
	o->verdict = 1;
	put(o, 11);                     /* 10 wins over 0 */
	ck_assert_uint_eq(o->dropped[1], 0);
	ck_assert_uint_eq(o->p.admitted, 1);
	ck_assert_uint_eq(o->p.evicted, 1);
	ck_assert_uint_eq(o->contests, 2);
	owner_free(o);

	o = owner_new(10, 10, 80, false);
	o->verdict = 0;                 /* never asked */
	for (unsigned i = 0; i < 12; i++)
		put(o, i);
	ck_assert_uint_eq(o->contests, 0);
	ck_assert_uint_eq(o->ndropped, 2);
	ck_assert_uint_eq(o->dropped[0], 0);
	ck_assert_uint_eq(o->dropped[1], 1);
	owner_free(o);
}
END_TEST

/* Moving the bounds keeps every entry and the total weight; a grown window
 * is filled from main's coldest, a shrunk one hands its LRU end to
 * probation. */
START_TEST(test_configure)
{
	struct owner *o = owner_new(100, 1, 80, true);
	struct admit_policy_config wide = { 50, 80, true, false, 0, true },
	                           narrow = { 0, 80, true, false, 0, true };

	for (unsigned i = 0; i < 100; i++)
		put(o, i);
	for (unsigned i = 0; i < 50; i++)
		admit_policy_hit(&o->p, &o->node[i].n);
	admit_policy_configure(&o->p, &wide);
	ck_assert_uint_eq(o->ndropped, 0);
	ck_assert_uint_eq(o->p.window_max, 50);
	ck_assert_uint_eq(o->p.protected_max, 40);
	ck_assert_uint_eq(o->p.weight[ADMIT_SEG_WINDOW], 50);
	ck_assert_uint_eq(admit_policy_weight(&o->p), 100);
	ck_assert(admit_policy_check(&o->p));
	admit_policy_configure(&o->p, &narrow);
	ck_assert_uint_eq(o->p.weight[ADMIT_SEG_WINDOW], 0);
	ck_assert_uint_eq(admit_policy_weight(&o->p), 100);
	ck_assert_uint_eq(o->ndropped, 0);
	ck_assert(admit_policy_check(&o->p));
	owner_free(o);
}
END_TEST

/* Replace and remove keep the weights; a heavier replacement over the
 * capacity is evicted back under it. */
START_TEST(test_replace_remove)
{
	struct owner *o = owner_new(10, 20, 80, true);

	for (unsigned i = 0; i < 10; i++)
		put(o, i);
	o->node[100].w = 3;
	o->node[100].in = true;
	o->node[5].in = false;
	admit_policy_replace(&o->p, &o->node[5].n, &o->node[100].n);
	ck_assert_uint_eq(admit_policy_weight(&o->p), 12);
	admit_policy_evict(&o->p);
	ck_assert_uint_le(admit_policy_weight(&o->p), 10);
	ck_assert(admit_policy_check(&o->p));
	for (unsigned i = 0; i < MAXN; i++) {
		if (o->node[i].in) {
			admit_policy_remove(&o->p, &o->node[i].n);
			o->node[i].in = false;
		}
	}
	ck_assert_uint_eq(admit_policy_weight(&o->p), 0);
	ck_assert(admit_policy_check(&o->p));
	owner_free(o);
}
END_TEST

/* A long random run: mixed weights, every configuration change, random
 * verdicts; after each call the invariants hold and the owner is within
 * its capacity. */
START_TEST(test_random)
{
	static const unsigned windows[] = { 0, 1, 5, 20, 50, 80, 100 };
	struct owner *o = owner_new(200, 1, 80, true);
	struct tally t = TALLY_INIT;

	o->verdict = -1;
	o->rng = 7;
	for (unsigned i = 0; i < MAXN; i++)
		o->node[i].w = 1 + test_key(i) % 5;
	for (uint64_t i = 0; i < 200000; i++) {
		uint64_t r = test_key(i + 1000);
		unsigned k = (unsigned)(r % 1000);

		if (r % 997 == 0) {
			struct admit_policy_config cfg = {
				windows[(r >> 20) % 7], (unsigned)((r >> 30) % 101),
				(r >> 40) & 1, false,
				(r >> 41) % 3 == 0 ? ADMIT_POLICY_LIRS
				: (r >> 41) % 3 == 1 ? ADMIT_POLICY_ARC
				: ADMIT_POLICY_WTINYLFU,
				(r >> 44) & 1,
			};

			admit_policy_configure(&o->p, &cfg);
		} else if (o->node[k].in && (r >> 50) % 50 == 0) {
			admit_policy_remove(&o->p, &o->node[k].n);
			o->node[k].in = false;
		} else if (o->node[k].in) {
			admit_policy_hit(&o->p, &o->node[k].n);
		} else {
			put(o, k);
		}
		if (i % 64 == 0)
			tally(&t, admit_policy_check(&o->p), i);
		tally(&t, admit_policy_weight(&o->p) <= o->max, i);
	}
	ck_assert_tally(t, "invariants");
	owner_free(o);
}
END_TEST

/* LIRS on a loop one key longer than the cache: LRU would never hit; LIRS
 * keeps its LIR blocks and cycles the rest through Q's single entry, so
 * every pass after the first hits on all but two keys. */
START_TEST(test_lirs_loop)
{
	struct owner *o = owner_new(100, 0, 0, false);
	struct admit_policy_config lirs = { 0, 0, false, false,
	                                    ADMIT_POLICY_LIRS, true };
	unsigned hits = 0;

	admit_policy_configure(&o->p, &lirs);
	ck_assert_uint_eq(o->p.protected_max, 99);
	for (unsigned pass = 0; pass < 20; pass++)
		for (unsigned k = 0; k < 101; k++) {
			if (o->node[k].in) {
				hits += pass == 19;
				admit_policy_hit(&o->p, &o->node[k].n);
			} else {
				put(o, k);
			}
		}
	ck_assert_uint_ge(hits, 98);
	ck_assert(admit_policy_check(&o->p));
	owner_free(o);
}
END_TEST

/* ARC: a new key enters T1 (the window), a hit moves it to T2
 * (protected); T1 over its target p gives up its LRU entry, so a scan of
 * new keys passes through T1 and leaves T2 alone; a key evicted from T1
 * that comes back (B1) enters T2 and moves p towards T1 by one (B2 holds
 * no ghost: the step is 1). */
START_TEST(test_arc)
{
	struct owner *o = owner_new(100, 0, 0, false);
	struct admit_policy_config arc = { 0, 0, false, false,
	                                   ADMIT_POLICY_ARC, true };
	unsigned back = 0;

	/* Ghosts for a few times the keys: few collide. */
	ck_assert(admit_policy_ghosts(&o->p, MAXN));
	admit_policy_configure(&o->p, &arc);
	ck_assert_uint_eq(o->p.window_max, 0);
	for (unsigned k = 0; k < 100; k++)
		put(o, k);
	ck_assert_uint_eq(o->p.weight[ADMIT_SEG_WINDOW], 100);
	for (unsigned k = 0; k < 50; k++)
		admit_policy_hit(&o->p, &o->node[k].n);
	ck_assert_uint_eq(o->p.weight[ADMIT_SEG_PROTECTED], 50);
	for (unsigned k = 100; k < 150; k++)
		put(o, k);
	ck_assert_uint_eq(o->ndropped, 50);
	for (unsigned k = 0; k < 100; k++)
		ck_assert_msg(o->node[k].in == (k < 50), "key %u", k);
	/* The ghosts are a direct-mapped table: a key may have lost its
	 * ghost to another's. */
	for (unsigned k = 50; k < 60; k++) {
		put(o, k);
		back += admit_policy_seg_of(&o->node[k].n) ==
		        ADMIT_SEG_PROTECTED;
	}
	ck_assert_uint_ge(back, 8);
	ck_assert_uint_eq(o->p.window_max, back);
	ck_assert_uint_eq(o->p.weight[ADMIT_SEG_PROTECTED], 50 + back);
	ck_assert_uint_eq(admit_policy_weight(&o->p), 100);
	ck_assert(admit_policy_check(&o->p));
	owner_free(o);
}
END_TEST

/* A change of family keeps every entry, both ways, and the bounds of the
 * new family hold at once. */
START_TEST(test_family_switch_keeps)
{
	struct owner *o = owner_new(100, 20, 80, true);
	struct admit_policy_config lirs = { 0, 0, false, false,
	                                    ADMIT_POLICY_LIRS, true },
	                           wt = { 1, 80, true, false, 0, true },
	                           arc = { 0, 0, false, false,
	                                   ADMIT_POLICY_ARC, true };

	for (unsigned k = 0; k < 100; k++)
		put(o, k);
	for (unsigned k = 0; k < 100; k += 3)
		admit_policy_hit(&o->p, &o->node[k].n);
	ck_assert_uint_eq(admit_policy_weight(&o->p), 100);
	admit_policy_configure(&o->p, &lirs);
	ck_assert_uint_eq(o->ndropped, 0);
	ck_assert_uint_eq(admit_policy_weight(&o->p), 100);
	ck_assert_uint_eq(o->p.weight[ADMIT_SEG_PROTECTED], 99);
	ck_assert_uint_eq(o->p.weight[ADMIT_SEG_WINDOW], 0);
	ck_assert(admit_policy_check(&o->p));
	admit_policy_configure(&o->p, &wt);
	ck_assert_uint_eq(o->ndropped, 0);
	ck_assert_uint_eq(admit_policy_weight(&o->p), 100);
	ck_assert_uint_eq(o->p.weight[ADMIT_SEG_WINDOW], 1);
	ck_assert(admit_policy_check(&o->p));
	/* Into ARC: T1 is the window and probation, T2 protected, T1's
	 * target what it holds; and out again. */
	admit_policy_configure(&o->p, &arc);
	ck_assert_uint_eq(o->ndropped, 0);
	ck_assert_uint_eq(admit_policy_weight(&o->p), 100);
	ck_assert_uint_eq(o->p.weight[ADMIT_SEG_PROBATION], 0);
	ck_assert_uint_eq(o->p.window_max, o->p.weight[ADMIT_SEG_WINDOW]);
	ck_assert(admit_policy_check(&o->p));
	admit_policy_configure(&o->p, &lirs);
	ck_assert_uint_eq(o->ndropped, 0);
	ck_assert_uint_eq(admit_policy_weight(&o->p), 100);
	ck_assert(admit_policy_check(&o->p));
	owner_free(o);
}
END_TEST

/* Out of LIRS, the LIR blocks counted once or never go to probation in
 * S's order, above Q's blocks, and protected starts empty: W-TinyLFU
 * contests every entry it would not have seen hit in probation. */
START_TEST(test_from_lirs)
{
	struct owner *o = owner_new(100, 0, 0, false);
	struct admit_policy_config lirs = { 0, 0, false, false,
	                                    ADMIT_POLICY_LIRS, true },
	                           wt = { 1, 80, true, false, 0, true };
	unsigned list[100], n;

	admit_policy_configure(&o->p, &lirs);
	for (unsigned k = 0; k < 100; k++)
		put(o, k);
	/* 0 .. 98 LIR (room in the cold start), 99 in Q; 5 to S's top. */
	admit_policy_hit(&o->p, &o->node[5].n);
	ck_assert_uint_eq(o->p.count[ADMIT_SEG_PROTECTED], 99);
	admit_policy_configure(&o->p, &wt);
	ck_assert_uint_eq(o->ndropped, 0);
	ck_assert_uint_eq(o->p.count[ADMIT_SEG_PROTECTED], 0);
	/* The window is filled from probation's coldest: Q's block. */
	n = seg_list(o, ADMIT_SEG_WINDOW, list);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(list[0], 99);
	n = seg_list(o, ADMIT_SEG_PROBATION, list);
	ck_assert_uint_eq(n, 99);
	for (unsigned i = 0; i < 98; i++)
		ck_assert_uint_eq(list[i], i < 5 ? i : i + 1);
	ck_assert_uint_eq(list[98], 5);
	ck_assert(admit_policy_check(&o->p));
	owner_free(o);
}
END_TEST

/* Out of LIRS, protected keeps the LIR blocks counted more than once
 * within protected's bound from S's top (S's order kept); every other
 * block goes to probation in S's order, above Q's. */
START_TEST(test_from_lirs_counted)
{
	struct owner *o = owner_new(100, 0, 0, false);
	struct admit_policy_config lirs = { 0, 0, false, false,
	                                    ADMIT_POLICY_LIRS, true },
	                           wt = { 1, 80, true, false, 0, true };
	unsigned list[100], n, want = 0;

	admit_policy_configure(&o->p, &lirs);
	for (unsigned k = 0; k < 100; k++) {
		put(o, k);
		o->count[k] = k % 2 ? 2 : 1;
	}
	/* LIR 0 .. 98, S's top 98; protected's bound 79 (99 of main). */
	admit_policy_configure(&o->p, &wt);
	ck_assert_uint_eq(o->ndropped, 0);
	n = seg_list(o, ADMIT_SEG_PROTECTED, list);
	/* The odd keys among S's top 79: 21 .. 97. */
	ck_assert_uint_eq(n, 39);
	for (unsigned i = 0; i < n; i++)
		ck_assert_uint_eq(list[i], 21 + 2 * i);
	/* Probation: the even keys of the top 79 and all of 0 .. 19 and 20,
	 * in S's order, under them nothing but Q's 99, now the window's. */
	n = seg_list(o, ADMIT_SEG_PROBATION, list);
	ck_assert_uint_eq(n, 60);
	for (unsigned k = 0; k < 99; k++)
		if (k < 20 || k % 2 == 0) {
			ck_assert_uint_eq(list[want], k);
			want++;
		}
	ck_assert_uint_eq(want, 60);
	n = seg_list(o, ADMIT_SEG_WINDOW, list);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(list[0], 99);
	ck_assert(admit_policy_check(&o->p));
	owner_free(o);
}
END_TEST

/* Quiet hits (policy.h): a hit on one of the entries stamped within the
 * last count >> ADMIT_POLICY_QUIET_SHIFT accesses of a list where a hit
 * only moves changes nothing; an older one moves; a probation hit that
 * promotes is never quiet, nor one in LIRS's Q; an exact configuration
 * has none. */
START_TEST(test_quiet_hits)
{
	struct owner *o = owner_new(16, 100, 0, false);
	struct admit_policy_config loose = { 100, 0, false, false, 0, false },
	                           wt = { 20, 80, true, false, 0, false },
	                           lirs = { 0, 0, false, false, ADMIT_POLICY_LIRS,
	                                    false };
	unsigned order[16], before[16], n, span = 16 >> ADMIT_POLICY_QUIET_SHIFT;

	for (unsigned i = 0; i < 16; i++)
		put(o, i);
	/* Exact (owner_new's): the newest entry's hit moves nothing visible
	 * but is not quiet. */
	ck_assert(!admit_policy_quiet(&o->p, &o->node[15].n));
	admit_policy_configure(&o->p, &loose);
	ck_assert_uint_ge(span, 1);
	ck_assert_uint_lt(span, 16);
	ck_assert(admit_policy_quiet(&o->p, &o->node[15].n));
	ck_assert(admit_policy_quiet(&o->p, &o->node[16 - span].n));
	ck_assert(!admit_policy_quiet(&o->p, &o->node[15 - span].n));
	seg_list(o, ADMIT_SEG_WINDOW, before);
	admit_policy_hit(&o->p, &o->node[16 - span].n);  /* quiet: no move */
	n = seg_list(o, ADMIT_SEG_WINDOW, order);
	ck_assert_uint_eq(n, 16);
	ck_assert_mem_eq(order, before, sizeof(order));
	admit_policy_hit(&o->p, &o->node[0].n);      /* old: to the MRU end */
	seg_list(o, ADMIT_SEG_WINDOW, order);
	ck_assert_uint_eq(order[15], 0);
	ck_assert_uint_eq(order[14], 15);
	ck_assert(admit_policy_quiet(&o->p, &o->node[0].n));
	ck_assert(!admit_policy_quiet(&o->p, &o->node[16 - span].n));  /* one more */
	/* W-TinyLFU: probation's entries promote on a hit, never quiet;
	 * protected's newest are. */
	admit_policy_configure(&o->p, &wt);
	ck_assert_uint_gt(o->p.count[ADMIT_SEG_PROBATION], 0);
	for (unsigned i = 0; i < 16; i++)
		if (admit_policy_seg_of(&o->node[i].n) == ADMIT_SEG_PROBATION)
			ck_assert(!admit_policy_quiet(&o->p, &o->node[i].n));
	for (unsigned i = 0; i < 16; i++)
		if (admit_policy_seg_of(&o->node[i].n) == ADMIT_SEG_PROBATION)
			admit_policy_hit(&o->p, &o->node[i].n);
	ck_assert_uint_gt(o->p.count[ADMIT_SEG_PROTECTED] >>
	                  ADMIT_POLICY_QUIET_SHIFT, 0);
	n = seg_list(o, ADMIT_SEG_PROTECTED, order);
	ck_assert(admit_policy_quiet(&o->p, &o->node[order[n - 1]].n));
	ck_assert(!admit_policy_quiet(&o->p, &o->node[order[0]].n));
	/* LIRS: Q's blocks are never quiet; exact LIRS has no quiet hit,
	 * not even the newest LIR block's. */
	admit_policy_configure(&o->p, &lirs);
	ck_assert_uint_gt(o->p.count[ADMIT_SEG_PROBATION], 0);
	for (unsigned i = 0; i < 16; i++)
		if (admit_policy_seg_of(&o->node[i].n) == ADMIT_SEG_PROBATION)
			ck_assert(!admit_policy_quiet(&o->p, &o->node[i].n));
	lirs.exact = true;
	admit_policy_configure(&o->p, &lirs);
	for (unsigned i = 0; i < 16; i++)
		ck_assert(!admit_policy_quiet(&o->p, &o->node[i].n));
	ck_assert(admit_policy_check(&o->p));
	owner_free(o);
}
END_TEST

/* LIRS's quiet hits: a LIR block stamped within the last count >>
 * ADMIT_POLICY_LIRS_QUIET_SHIFT accesses stays where it is; an older one goes
 * to the top of S; a HIR block's hit (Q) is never quiet. */
#define LQ_N 64u
START_TEST(test_lirs_quiet_hits)
{
	struct owner *o = owner_new(LQ_N, 0, 0, false);
	struct admit_policy_config lirs = { 0, 0, false, false,
	                                    ADMIT_POLICY_LIRS, false };
	unsigned order[LQ_N], before[LQ_N], n, span;

	admit_policy_configure(&o->p, &lirs);
	/* The cold start: the first LQ_N - 1 keys LIR, in stamp order; the
	 * last in Q. */
	for (unsigned i = 0; i < LQ_N; i++)
		put(o, i);
	ck_assert_uint_eq(o->p.count[ADMIT_SEG_PROTECTED], LQ_N - 1);
	ck_assert_uint_eq(admit_policy_seg_of(&o->node[LQ_N - 1].n),
	                  ADMIT_SEG_PROBATION);
	span = (LQ_N - 1) >> ADMIT_POLICY_LIRS_QUIET_SHIFT;
	ck_assert_uint_ge(span, 2);
	ck_assert(!admit_policy_quiet(&o->p, &o->node[LQ_N - 1].n));
	/* Node i is LQ_N - 1 - i accesses old: the last insert came last. */
	ck_assert(admit_policy_quiet(&o->p, &o->node[LQ_N - 2].n));
	ck_assert(admit_policy_quiet(&o->p, &o->node[LQ_N - span].n));
	ck_assert(!admit_policy_quiet(&o->p, &o->node[LQ_N - 1 - span].n));
	seg_list(o, ADMIT_SEG_PROTECTED, before);
	admit_policy_hit(&o->p, &o->node[LQ_N - span].n);  /* quiet: no move */
	n = seg_list(o, ADMIT_SEG_PROTECTED, order);
	ck_assert_uint_eq(n, LQ_N - 1);
	ck_assert_mem_eq(order, before, n * sizeof(*order));
	admit_policy_hit(&o->p, &o->node[0].n);  /* the bottom: to the top */
	n = seg_list(o, ADMIT_SEG_PROTECTED, order);
	ck_assert_uint_eq(n, LQ_N - 1);
	ck_assert_uint_eq(order[LQ_N - 2], 0);
	ck_assert_uint_eq(order[0], 1);
	ck_assert(admit_policy_quiet(&o->p, &o->node[0].n));
	/* Q's block, reused within S, becomes LIR: not quiet, and it moves. */
	admit_policy_hit(&o->p, &o->node[LQ_N - 1].n);
	ck_assert_uint_eq(admit_policy_seg_of(&o->node[LQ_N - 1].n),
	                  ADMIT_SEG_PROTECTED);
	ck_assert_uint_eq(admit_policy_seg_of(&o->node[1].n), ADMIT_SEG_PROBATION);
	ck_assert(admit_policy_check(&o->p));
	owner_free(o);
}
END_TEST

/* The check finds an entry on another segment's list (a debug build
 * aborts there: that is its job). */
START_TEST(test_check_catches)
{
	struct owner *o = owner_new(10, 20, 80, true);

	for (unsigned i = 0; i < 10; i++)
		put(o, i);
	o->node[9].n.seg = ADMIT_SEG_PROTECTED;
	ck_assert(!admit_policy_check(&o->p));
	owner_free(o);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_plain_lru);
	tcase_add_test(tc, test_segments);
	tcase_add_test(tc, test_contest);
	tcase_add_test(tc, test_configure);
	tcase_add_test(tc, test_replace_remove);
	tcase_add_test(tc, test_random);
	tcase_add_test(tc, test_lirs_loop);
	tcase_add_test(tc, test_from_lirs);
	tcase_add_test(tc, test_from_lirs_counted);
	tcase_add_test(tc, test_family_switch_keeps);
	tcase_add_test(tc, test_arc);
	tcase_add_test(tc, test_quiet_hits);
	tcase_add_test(tc, test_lirs_quiet_hits);
#if ADMIT_DEBUG
	tcase_add_test_raise_signal(tc, test_check_catches, SIGABRT);
#else
	tcase_add_test(tc, test_check_catches);
#endif
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
