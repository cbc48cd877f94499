/*
 * minisim.c - miniature simulation (see minisim.h).
 *
 * Each mini cache is the policy core over nodes from a fixed pool, found by
 * hash through a chained table of 32-bit indices.  Sampling is spatial, by
 * key hash (SHARDS): a key is in or out for good, so a mini cache sees
 * every request of its keys and its hit ratio estimates the full cache's
 * at the same configuration, scaled (capacity x rate).  The hash is
 * remixed before sampling so that the bits that pick shards and buckets do
 * not pick the sample too.
 *
 * Scores are hits per get, decayed by ADMIT_MINISIM_DECAY each period so
 * the choice follows a changing workload; the real cache moves only when
 * the best mini cache beats the current configuration's by
 * ADMIT_MINISIM_HYSTERESIS, so near-ties do not make it flap (each move
 * costs the real cache some of its order).
 */
#include "config.h"

#include <math.h>
#include <string.h>
#ifndef ADMIT_MINISIM_TRACE
#define ADMIT_MINISIM_TRACE 0
#endif
#if ADMIT_MINISIM_TRACE
#include <stdio.h>
#endif

#include "alloc.h"
#include "minisim.h"

/*
 * The configurations: window share 0, 1, 5, 20, 50, 80 % with admission
 * (segmented LRU with TinyLFU up to mostly recency), plain LRU, 20 %
 * without admission (segmented LRU), and W-TinyLFU's 1 % window with
 * steady frequencies (no aging, no chance admission: what a loop larger
 * than the cache needs, freqsketch.h), LIRS, and ARC (policy.h: a recency
 * and a frequency list whose split the ghosts' hits move, nothing
 * contested: what a moving hot set with one-hit wonders needs).
 * Protected is 80 % of main throughout (Caffeine's).  The 1 % window and
 * plain LRU are exact (every hit moves its entry: no quiet hits), as
 * ADMIT_LRU_WTINYLFU and plain LRU are: they are the shadows the guard
 * holds the real cache to, and the real cache runs them exactly as
 * simulated.  Of two that score alike a shadow wins, else the earlier
 * (decide(), tie_order): plain LRU before the segmented LRU, which ties
 * with it where only recency pays (a zigzag) and then holds the keys hit
 * once more in its protected segment, not the most recent.
 */
const struct admit_policy_config admit_minisim_configs[ADMIT_MINISIM_N] = {
	{ 0, 80, true, false, 0, false }, { 1, 80, true, false, 0, true },
	{ 5, 80, true, false, 0, false }, { 20, 80, true, false, 0, false },
	{ 50, 80, true, false, 0, false }, { 80, 80, true, false, 0, false },
	{ 100, 0, false, false, 0, true }, { 20, 80, false, false, 0, false },
	{ 1, 80, true, true, 0, false },
	{ 0, 0, false, false, ADMIT_POLICY_LIRS, false },
	{ 0, 0, false, false, ADMIT_POLICY_ARC, false },
};

/* The order in which decide() breaks ties: the shadows (the 1 % window,
 * then LRU) first, then the list's.  A shadow the real cache runs is the
 * very cache its promise names (guard()), and a configuration that only
 * ties it offers no measured gain for the promise it puts at risk: on a
 * zigzag at 500 the 50 % window ties LRU through the pass after the
 * turn, where both hit the keys just read, and misses the next one. */
static const unsigned tie_order[ADMIT_MINISIM_N] = {
	ADMIT_MINISIM_WTINYLFU, ADMIT_MINISIM_LRU, 0, 2, 3, 4, 5, 7, 8, 9, 10,
};
_Static_assert(ADMIT_MINISIM_WTINYLFU == 1 && ADMIT_MINISIM_LRU == 6 &&
               ADMIT_MINISIM_N == 11, "tie_order lists every configuration once");

#define NIL UINT32_MAX

/* Whether a move between configurations i and k changes family in the
 * sense of its cost: into or out of LIRS, whose state (which blocks are
 * LIR) takes a pass of the workload to build.  W-TinyLFU and ARC keep
 * every entry on the same lists and build no such state: ARC's T1 and
 * T2 are W-TinyLFU's window and probation, and protected, and its only
 * state, T1's target, follows the ghosts' hits within a fraction of a
 * cache's worth of misses. */
static inline bool
across(unsigned i, unsigned k)
{
	return (admit_minisim_configs[i].family == ADMIT_POLICY_LIRS) !=
	       (admit_minisim_configs[k].family == ADMIT_POLICY_LIRS);
}

struct mnode {
	struct admit_policy_node node;
	uint64_t hash;
	uint32_t weight;                /* saturated at UINT32_MAX */
	uint32_t hnext;                 /* chain, or the free list */
};

struct mini {
	struct admit_policy pol;
	struct admit_minisim *m;
	uint64_t used;                  /* nodes in the policy */
	uint64_t hits;                  /* this period */
	double score;                   /* decayed hits */
	/* Decayed, since the last switch: gets this one hit and the current
	 * configuration's missed, and the reverse (McNemar's discordant
	 * pairs). */
	double win, loss;
	uint64_t banned_until;          /* a period; see end_check() */
};

/* The real cache's own hits against a mini cache's on the same sampled
 * gets: the sum of (real hit - mini hit) and the count of gets where they
 * differ. */
struct paired {
	double diff, disc, n;
};

struct admit_minisim {
	struct mini mini[ADMIT_MINISIM_N];
	struct mnode *pool[ADMIT_MINISIM_N];
	uint32_t *bucket[ADMIT_MINISIM_N];
	uint32_t free_head[ADMIT_MINISIM_N];
	uint32_t nodes;                 /* pool size per mini cache */
	uint32_t nbuckets;              /* a power of two */
	uint64_t threshold;             /* sampled: remix(h) < threshold */
	uint32_t fill_weight;           /* a filled miss's weight */
	uint64_t gets, period;          /* this period's gets, its length */
	double reqs;                    /* decayed gets */
	unsigned current;
	bool reused;                    /* the start has ended (start_ends()) */
	uint64_t switches, undone;
	uint64_t periods;
	/* The real cache against the current configuration's mini cache,
	 * decayed, since the last switch: what it had. */
	struct paired had;
	/* After a switch from prev: the real cache against prev's mini
	 * cache, from skip gets after the switch, for one period. */
	bool checking;
	unsigned prev;
	uint64_t skip;
	double d0, v0;                  /* had's mean difference, its variance */
	struct paired after, after_cur; /* against prev's, current's mini */
	/* The guard (guard()): every shadow's hits minus the real cache's,
	 * and the gets where they differ, over every sampled get whose real
	 * outcome is known, never decayed. */
	struct { double diff, disc; } guard[2];
	double guard_n;
	/* On a sampled cache, each shadow's mini cache's lead over the
	 * current configuration's since the last switch or the last get they
	 * were level (a CUSUM), and the gets where they differed meanwhile:
	 * what a move to the shadow would cost (guard()). */
	struct { double lead, disc; } owed[2];
	/* On a sampled cache, the real cache against each shadow's mini
	 * cache since the last switch (trails_shadow()). */
	struct paired since[2];
	/* The same per group of sampled keys (a sampled cache only: the
	 * random groups guard_se() estimates the sampling error from). */
	struct { double diff[2], n; } group[ADMIT_MINISIM_GROUPS];
	uint64_t guarded;
#if ADMIT_MINISIM_TRACE
	double real_hits, shadow_hits[2];
#endif
	admit_minisim_admit_fn admit;
	void *admit_ctx;
	size_t bytes;
};


static inline struct mnode *
mnode_of(const struct admit_policy_node *n)
{
	return (struct mnode *)((char *)n - offsetof(struct mnode, node));
}

static uint64_t
op_weight(void *ctx, const struct admit_policy_node *n)
{
	(void)ctx;
	return mnode_of(n)->weight;
}

static bool
op_over(void *ctx)
{
	struct mini *mc = ctx;

	/* The pool bounds the entries whatever their weights. */
	return admit_policy_weight(&mc->pol) > mc->pol.max_weight ||
	       mc->used > mc->m->nodes;
}

static bool
op_admit(void *ctx, const struct admit_policy_node *cand,
         const struct admit_policy_node *victim)
{
	struct mini *mc = ctx;

	return mc->m->admit(mc->m->admit_ctx, mc->pol.cfg.steady,
	                    mnode_of(cand)->hash, mnode_of(victim)->hash);
}

static void
op_drop(void *ctx, struct admit_policy_node *n, bool rejected)
{
	struct mini *mc = ctx;
	struct admit_minisim *m = mc->m;
	unsigned i = (unsigned)(mc - m->mini);
	struct mnode *x = mnode_of(n), *pool = m->pool[i];
	uint32_t idx = (uint32_t)(x - pool);
	uint32_t *p = &m->bucket[i][x->hash & (m->nbuckets - 1)];

	(void)rejected;
	while (*p != idx)
		p = &pool[*p].hnext;
	*p = x->hnext;
	x->hnext = m->free_head[i];
	m->free_head[i] = idx;
	mc->used--;
}

static uint64_t
op_hash(void *ctx, const struct admit_policy_node *n)
{
	(void)ctx;
	return mnode_of(n)->hash;
}

static const struct admit_policy_ops mini_ops = {
	.weight = op_weight, .over = op_over, .admit = op_admit, .drop = op_drop,
	.hash = op_hash,
};

struct admit_minisim *
admit_minisim_new(uint64_t max_weight, uint64_t entries,
                  admit_minisim_admit_fn admit, void *admit_ctx)
{
	struct admit_minisim *m;
	uint64_t nodes, mini_weight;
	double rate;

	if (max_weight == 0 || entries == 0 || !admit)
		return NULL;
	m = admit_calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (entries <= ADMIT_MINISIM_MAX_ENTRIES) {
		rate = 1.0;
		nodes = entries;
		mini_weight = max_weight;
		m->threshold = UINT64_MAX;
	} else {
		rate = (double)ADMIT_MINISIM_MAX_ENTRIES / (double)entries;
		nodes = ADMIT_MINISIM_MAX_ENTRIES;
		mini_weight = (uint64_t)((double)max_weight * rate + 0.5);
		if (mini_weight == 0)
			mini_weight = 1;
		m->threshold = (uint64_t)(rate * 18446744073709551616.0);
	}
	/* A spare node: an insert is in the pool before it is evicted. */
	m->nodes = (uint32_t)nodes;
	for (m->nbuckets = 16; m->nbuckets < nodes; m->nbuckets *= 2)
		;
	m->fill_weight = mini_weight / nodes > UINT32_MAX ? UINT32_MAX
	                 : mini_weight / nodes ? (uint32_t)(mini_weight / nodes) : 1;
	m->period = ADMIT_MINISIM_PERIOD * nodes;
	if (m->period < 1000)
		m->period = 1000;
	m->current = ADMIT_MINISIM_START;
	m->admit = admit;
	m->admit_ctx = admit_ctx;
	m->bytes = sizeof(*m);
	for (unsigned i = 0; i < ADMIT_MINISIM_N; i++) {
		m->pool[i] = admit_malloc((nodes + 1) * sizeof(struct mnode));
		m->bucket[i] = admit_malloc(m->nbuckets * sizeof(uint32_t));
		if (!m->pool[i] || !m->bucket[i]) {
			admit_minisim_free(m);
			return NULL;
		}
		m->bytes += (nodes + 1) * sizeof(struct mnode) +
		            m->nbuckets * sizeof(uint32_t);
		memset(m->bucket[i], 0xff, m->nbuckets * sizeof(uint32_t));
		for (uint32_t k = 0; k <= nodes; k++)
			m->pool[i][k].hnext = k < nodes ? k + 1 : NIL;
		m->free_head[i] = 0;
		m->mini[i].m = m;
		admit_policy_init(&m->mini[i].pol, &mini_ops, &m->mini[i],
		                  mini_weight, max_weight == entries,
		                  &admit_minisim_configs[i]);
		/* LIRS's non-resident HIR blocks: at most about as many as
		 * it holds (S bounded at twice the cache, as libCacheSim);
		 * ARC's B1 and B2, as many as it holds. */
		if (admit_minisim_configs[i].family != ADMIT_POLICY_WTINYLFU) {
			if (!admit_policy_ghosts(&m->mini[i].pol, nodes)) {
				admit_minisim_free(m);
				return NULL;
			}
			m->bytes += admit_policy_ghost_bytes(&m->mini[i].pol);
		}
	}
	return m;
}

void
admit_minisim_free(struct admit_minisim *m)
{
	if (!m)
		return;
	for (unsigned i = 0; i < ADMIT_MINISIM_N; i++) {
		admit_free(m->pool[i]);
		admit_free(m->bucket[i]);
		admit_policy_free(&m->mini[i].pol);
	}
	admit_free(m);
}

bool
admit_minisim_sampled(const struct admit_minisim *m, uint64_t h)
{
	return admit_minisim_sample(h, m->threshold);
}

uint64_t
admit_minisim_threshold(const struct admit_minisim *m)
{
	return m->threshold;
}

static struct mnode *
lookup(struct admit_minisim *m, unsigned i, uint64_t h)
{
	struct mnode *pool = m->pool[i];

	for (uint32_t k = m->bucket[i][h & (m->nbuckets - 1)]; k != NIL;
	     k = pool[k].hnext)
		if (pool[k].hash == h)
			return &pool[k];
	return NULL;
}

static void
paired_add(struct paired *p, bool real_hit, bool mini_hit)
{
	p->diff += (double)real_hit - (double)mini_hit;
	p->disc += real_hit != mini_hit;
	p->n += 1;
}

/* A build with ADMIT_MINISIM_TRACE set (make cache-sim-variant
 * VARIANT_CPPFLAGS=-DADMIT_MINISIM_TRACE=1 VARIANT_OUT=FILE) prints to
 * stderr, at every period's end and every move, the sampled gets whose
 * real outcome is known so far, the configuration and the one moved to,
 * and the real cache's and the two shadows' hits on those gets: where a
 * shortfall to a shadow is made, and by which move. */
#if ADMIT_MINISIM_TRACE
static void
trace(const struct admit_minisim *m, const char *what, unsigned to)
{
	fprintf(stderr, "minisim %s n=%.0f cur=%u to=%u real=%.0f lru=%.0f "
	        "wtinylfu=%.0f\n", what, m->guard_n, m->current, to,
	        m->real_hits, m->shadow_hits[1], m->shadow_hits[0]);
}
#else
#define trace(m, what, to) ((void)0)
#endif

/* Moves to configuration k: the evidence relative to the old one starts
 * over. */
static void
switch_to(struct admit_minisim *m, unsigned k)
{
	m->current = k;
	m->switches++;
	for (unsigned i = 0; i < ADMIT_MINISIM_N; i++)
		m->mini[i].win = m->mini[i].loss = 0;
	m->had = (struct paired){ 0 };
	m->owed[0].lead = m->owed[0].disc = 0;
	m->owed[1].lead = m->owed[1].disc = 0;
	m->since[0] = m->since[1] = (struct paired){ 0 };
}

/*
 * Whether the best mini cache beats the current configuration's by more
 * than the margin and by more than its sampling error.  Both ran on the
 * same gets, so their difference is a paired one: win - loss over the
 * discordant gets, whose standard error under "no difference" is
 * sqrt(win + loss) (McNemar's test); the switch needs win - loss >
 * ADMIT_MINISIM_Z x that.  Of configurations that tie, the first in
 * tie_order is the best.
 */
static void
decide(struct admit_minisim *m)
{
	unsigned best = m->current;
	double reqs = m->reqs + (double)m->gets;
	struct mini *b;

	if (m->checking)
		return;
	for (unsigned o = 0; o < ADMIT_MINISIM_N; o++) {
		unsigned i = tie_order[o];
		struct mini *mc = &m->mini[i];

		if (mc->banned_until > m->periods)
			continue;
		if (mc->score + (double)mc->hits >
		    m->mini[best].score + (double)m->mini[best].hits)
			best = i;
	}
	b = &m->mini[best];
	if (best == m->current ||
	    b->score + (double)b->hits <=
	    m->mini[m->current].score + (double)m->mini[m->current].hits +
	    (!across(best, m->current)
	     ? ADMIT_MINISIM_HYSTERESIS : ADMIT_MINISIM_FAMILY_HYSTERESIS) * reqs ||
	    b->win - b->loss <= ADMIT_MINISIM_Z * sqrt(b->win + b->loss))
		return;
	if (m->had.n > 0) {
		/* What the real cache had against the configuration it
		 * leaves: the check compares the same difference after. */
		m->checking = true;
		m->prev = m->current;
		m->skip = m->period / 4;
		m->d0 = m->had.diff / m->had.n;
		m->v0 = m->had.disc / (m->had.n * m->had.n);
		m->after = m->after_cur = (struct paired){ 0 };
	}
	trace(m, "decide", best);
	switch_to(m, best);
}

/*
 * The check of a switch from prev, after the switch had time to take hold
 * (a quarter period) and over one period: the real cache's hits minus
 * prev's mini cache's, per get (d1), against the same difference before
 * the switch (d0, then against the mini cache it ran).  Both caches saw
 * the same gets, so the difference of differences cancels what the
 * workload did meanwhile.  A switch is undone when it made the real cache
 * worse than what it had by more than ADMIT_MINISIM_Z standard errors of
 * d0 - d1 (sqrt(v0 + v1), each a discordant count over n squared), and
 * the real cache also fell short of its new configuration's mini cache by
 * as much (the simulation's gain did not carry over to the real cache;
 * a gain the workload took from both is no reason to undo).  A lead the
 * real cache had over its old mini cache (d0 > 0: contents it brought
 * from the configuration before, which the mini cache did not have) is
 * not expected to last: against the new mini cache it is held to no
 * lead, a shortfall (d0 < 0) to no worse.  The undone configuration is
 * not chosen again for ADMIT_MINISIM_BAN periods.
 */
static void
end_check(struct admit_minisim *m)
{
	double d1 = m->after.diff / m->after.n;
	double v1 = m->after.disc / (m->after.n * m->after.n);
	double c1 = m->after_cur.diff / m->after_cur.n;
	double w1 = m->after_cur.disc / (m->after_cur.n * m->after_cur.n);
	unsigned bad = m->current;

	m->checking = false;
	if (m->d0 - d1 > ADMIT_MINISIM_Z * sqrt(m->v0 + v1) &&
	    fmin(m->d0, 0) - c1 > ADMIT_MINISIM_Z * sqrt(m->v0 + w1)) {
		m->mini[bad].banned_until = m->periods + ADMIT_MINISIM_BAN;
		trace(m, "undo", m->prev);
		switch_to(m, m->prev);
		m->undone++;
	}
}

/* Mini cache i's decayed hits, this period's included. */
static double
score_now(const struct admit_minisim *m, unsigned i)
{
	return m->mini[i].score + (double)m->mini[i].hits;
}

/* The configurations the guard holds the real cache to: the default
 * fixed configuration (W-TinyLFU, 1 % window) and LRU. */
static const unsigned shadows[2] = { ADMIT_MINISIM_WTINYLFU, ADMIT_MINISIM_LRU };

/*
 * The standard error of shadow j's lead D over the real cache, as an
 * estimate of its lead on every key.  Every key sampled: McNemar's,
 * sqrt(V), the gets' own noise.  A sampled cache: its keys are a random
 * sample of all keys, and a key's gets are not independent (a hot key
 * hits or misses in runs), so the error is that of a ratio over a sample
 * of clusters, estimated by random groups: the sampled keys fall by hash
 * into G groups, each a random sample of its own, and with delta = D / n
 * the variance of D is about G / (G - 1) x sum over groups of (D_g -
 * delta n_g)^2 (Wolter, "Introduction to Variance Estimation", ch. 2).
 * The larger of the two is taken: with G = 32 the groups' estimate has
 * 31 degrees of freedom and can come out below the gets' own noise.
 */
static double
guard_se(const struct admit_minisim *m, unsigned j)
{
	double v = m->guard[j].disc, delta, s = 0;

	if (m->threshold == UINT64_MAX)
		return sqrt(v);
	delta = m->guard[j].diff / m->guard_n;
	for (unsigned g = 0; g < ADMIT_MINISIM_GROUPS; g++) {
		double e = m->group[g].diff[j] - delta * m->group[g].n;

		s += e * e;
	}
	s *= (double)ADMIT_MINISIM_GROUPS / (ADMIT_MINISIM_GROUPS - 1);
	return sqrt(fmax(v, s));
}

/*
 * Whether shadow j's mini cache leads the current configuration's on the
 * stretch that ends at this get, beyond chance: its owed count (their
 * difference since they were last level, a CUSUM, kept on a sampled
 * cache only) exceeds ADMIT_MINISIM_Z x its McNemar error.  The decayed
 * scores the guard's veto compares remember about ten periods, most of
 * a large cache's trace: after the workload shifts they still hold the
 * stretch before it, and a configuration that led there (LIRS, whose
 * LIR blocks hold that stretch's hot set) vetoes the move until its lead
 * decays, while the owed count, and the move's cost, grow.
 * Held to moves out of LIRS (ADMIT_MINISIM_GUARD_OWED_LEADS): within a
 * family decide() moves on the same gets at the same margin as the
 * veto, and a second chooser with a shorter memory makes the two undo
 * each other's moves (doc/hit-ratio.md, "The move's cost").
 */
static bool
owed_leads(const struct admit_minisim *m, unsigned j)
{
	if (ADMIT_MINISIM_GUARD_OWED_LEADS == 0 ||
	    (ADMIT_MINISIM_GUARD_OWED_LEADS == 2 &&
	     !across(m->current, shadows[j])))
		return false;
	return m->owed[j].lead > ADMIT_MINISIM_Z * sqrt(m->owed[j].disc);
}

/*
 * Whether, on a sampled cache, the real cache has trailed shadow j's mini
 * cache since the last switch (a quarter period at least, as the check
 * waits) beyond ADMIT_MINISIM_Z x their McNemar error, while j's mini
 * cache scores at least as well as the current configuration's, within a
 * family (ADMIT_MINISIM_GUARD_TRAILS).  The veto's margin is there for a
 * real cache still paying a move's cost that a move to the shadow would
 * pay again, and for a lead of a past stretch; neither is a reason to
 * stay where the simulation rates the shadow as high and the real cache
 * has been losing to it since it came: a W-TinyLFU configuration with
 * admission that a shift finds running holds what admission let in,
 * behind LRU's mini cache and its own, for periods (doc/hit-ratio.md,
 * "Trailing since the switch").  Across families a move into LIRS or
 * out of it costs a pass; there owed_leads() decides.
 */
static bool
trails_shadow(const struct admit_minisim *m, unsigned j)
{
	const struct paired *s = &m->since[j];

	if (ADMIT_MINISIM_GUARD_TRAILS == 0 || m->threshold == UINT64_MAX ||
	    across(m->current, shadows[j]) || s->n < (double)(m->period / 4))
		return false;
	return -s->diff > ADMIT_MINISIM_Z * sqrt(s->disc) &&
	       score_now(m, shadows[j]) >= score_now(m, m->current);
}

/*
 * The guard, at every sampled get whose real outcome is known, from the
 * first quarter period on.  A shadow's lead over the real cache since
 * the start, D = (its hits - the real cache's hits): when D >
 * margin x n + ADMIT_MINISIM_Z x se (n the gets so far, se guard_se()'s,
 * the margin ADMIT_MINISIM_GUARD_MARGIN where every key is sampled,
 * ADMIT_MINISIM_GUARD_SAMPLED_MARGIN where not) for a shadow (the one
 * over its bound by most), the cache moves to that shadow's
 * configuration at this get, unless the configuration it runs scores
 * within the margin below (the configuration it leaves sits out
 * ADMIT_MINISIM_BAN periods).  So D outgrows its bound only while the
 * cache runs the shadow's configuration, or one whose mini cache scores
 * within that margin of the shadow's or above, or the other shadow, over
 * its bound by more: while the real cache trails the mini caches (a
 * move's cost), or the shadow's lead is of a past stretch the
 * configuration it runs now does as well on.  Where keys are sampled, a
 * mini cache's estimate of its configuration also errs by its scaling
 * (a 2,048-entry cache standing for a larger one), which the sampled
 * margin allows for (doc/hit-ratio.md, "The guard").  There the guard
 * also counts what a move will cost: the shadow's mini cache's lead over
 * the current configuration's since they were last level (owed), beyond
 * ADMIT_MINISIM_Z x its own error, is hits on keys the shadow holds and
 * the real cache, run as the current configuration, lacks; after a move
 * each is a miss the shadow does not take.  The guard acts on D + owed,
 * so it moves before the lead it bounds grows by the move's cost
 * (doc/hit-ratio.md, "The move's cost").
 */
static void
guard(struct admit_minisim *m, uint64_t h, const bool *hit, bool real)
{
	bool sampled = m->threshold != UINT64_MAX;
	double most = 0, margin = sampled ? ADMIT_MINISIM_GUARD_SAMPLED_MARGIN
	                                  : ADMIT_MINISIM_GUARD_MARGIN;
	unsigned g = (unsigned)(admit_mix64(h ^ 0x9e3779b97f4a7c15u) %
	                        ADMIT_MINISIM_GROUPS);
	int to = -1;

	m->guard_n += 1;
	m->group[g].n += 1;
#if ADMIT_MINISIM_TRACE
	m->real_hits += real;
	m->shadow_hits[0] += hit[shadows[0]];
	m->shadow_hits[1] += hit[shadows[1]];
#endif
	for (unsigned j = 0; j < 2; j++) {
		double d = (double)hit[shadows[j]] - (double)real;

		m->guard[j].diff += d;
		m->guard[j].disc += hit[shadows[j]] != real;
		m->group[g].diff[j] += d;
		if (sampled)
			paired_add(&m->since[j], real, hit[shadows[j]]);
		if (sampled && hit[shadows[j]] != hit[m->current]) {
			m->owed[j].lead += (double)hit[shadows[j]] -
			                   (double)hit[m->current];
			m->owed[j].disc += 1;
			if (m->owed[j].lead <= 0)
				m->owed[j].lead = m->owed[j].disc = 0;
		}
	}
	if (m->guard_n < (double)(m->period / 4))
		return;
	for (unsigned j = 0; j < 2; j++) {
		double owed = m->owed[j].lead -
		              ADMIT_MINISIM_Z * sqrt(m->owed[j].disc);
		double over = m->guard[j].diff + fmax(owed, 0) -
		              margin * m->guard_n;

		if (over <= 0)
			continue;
		over -= ADMIT_MINISIM_Z * guard_se(m, j);
		if (over > most) {
			most = over;
			to = (int)j;
		}
	}
	if (to < 0)
		return;
	/* A move does not pay the lead back unless the shadow's mini cache
	 * scores above the current configuration's of late by decide()'s
	 * margins (out of LIRS, whose state a move back costs a pass of the
	 * workload, the wider; on a sampled cache, whose few periods hold
	 * the fill's ties, ADMIT_MINISIM_GUARD_SAMPLED_LEAD): else the real
	 * cache trails its own mini cache (a move's cost still being paid),
	 * or the lead is of a past stretch, and a move would only add a
	 * cost.  Or, on a sampled cache, unless the shadow's mini cache
	 * leads the current configuration's on the stretch that ends now
	 * (owed_leads()): the decayed scores then still hold a past
	 * stretch the current configuration led.  Or, within a family,
	 * unless the real cache has trailed the shadow since the switch and
	 * the shadow's mini cache scores as well (trails_shadow()). */
	if (m->current == shadows[to] ||
	    (!owed_leads(m, (unsigned)to) && !trails_shadow(m, (unsigned)to) &&
	     score_now(m, shadows[to]) <= score_now(m, m->current) +
	     (!across(m->current, shadows[to]) ?
	      ADMIT_MINISIM_HYSTERESIS : sampled ?
	      ADMIT_MINISIM_GUARD_SAMPLED_LEAD :
	      ADMIT_MINISIM_GUARD_LEAD) * (m->reqs + (double)m->gets)))
		return;
	m->mini[m->current].banned_until = m->periods + ADMIT_MINISIM_BAN;
	m->checking = false;
	m->guarded++;
	trace(m, "guard", shadows[to]);
	switch_to(m, shadows[to]);
}

/* Ends a period: decays the scores and the evidence. */
static void
end_period(struct admit_minisim *m)
{
	m->reqs = m->reqs * ADMIT_MINISIM_DECAY + (double)m->gets;
	for (unsigned i = 0; i < ADMIT_MINISIM_N; i++) {
		struct mini *mc = &m->mini[i];

		mc->score = mc->score * ADMIT_MINISIM_DECAY + (double)mc->hits;
		mc->hits = 0;
		mc->win *= ADMIT_MINISIM_DECAY;
		mc->loss *= ADMIT_MINISIM_DECAY;
	}
	m->had.diff *= ADMIT_MINISIM_DECAY;
	m->had.disc *= ADMIT_MINISIM_DECAY;
	m->had.n *= ADMIT_MINISIM_DECAY;
	m->gets = 0;
	m->periods++;
	trace(m, "period", m->current);
}

/* Stores h, absent from mini cache i, through its policy. */
static void
insert(struct admit_minisim *m, unsigned i, uint64_t h, uint32_t w)
{
	struct mini *mc = &m->mini[i];
	uint32_t k = m->free_head[i];
	struct mnode *x;

	if (k == NIL)
		return;  /* cannot happen: the policy keeps a node spare */
	x = &m->pool[i][k];
	m->free_head[i] = x->hnext;
	x->hash = h;
	x->weight = w;
	x->hnext = m->bucket[i][h & (m->nbuckets - 1)];
	m->bucket[i][h & (m->nbuckets - 1)] = k;
	mc->used++;
	admit_policy_insert(&mc->pol, &x->node);
}

/* The start ends (minisim.h, ADMIT_MINISIM_START): at the first reuse
 * of a sampled key, or at the first set of one no get asked for. */
static void
start_ends(struct admit_minisim *m, const char *why)
{
	(void)why;  /* for the trace only */
	m->reused = true;
	if (m->current == ADMIT_MINISIM_START &&
	    ADMIT_MINISIM_REUSED != ADMIT_MINISIM_START) {
		trace(m, why, ADMIT_MINISIM_REUSED);
		switch_to(m, ADMIT_MINISIM_REUSED);
	}
}

/* A mini cache fills its own misses, as the real cache's caller does
 * after a miss: the real cache's set follows only its own misses, and a
 * key the real cache holds may be missing here.  The weight is a guess
 * (the mean an entry may have) that a set corrects.  real: the real
 * cache's outcome (1 hit, 0 miss), or -1 if not known (no check). */
static unsigned
get(struct admit_minisim *m, uint64_t h, int real)
{
	bool hit[ADMIT_MINISIM_N], cur;
	uint64_t quarter = m->period / 4;

	for (unsigned i = 0; i < ADMIT_MINISIM_N; i++) {
		struct mnode *x = lookup(m, i, h);

		hit[i] = x != NULL;
		if (x) {
			m->mini[i].hits++;
			admit_policy_hit(&m->mini[i].pol, &x->node);
		} else {
			insert(m, i, h, m->fill_weight);
		}
	}
	/* The first reuse (minisim.h, ADMIT_MINISIM_START). */
	if (!m->reused) {
		bool any = false;

		for (unsigned i = 0; i < ADMIT_MINISIM_N; i++)
			any |= hit[i];
		if (any)
			start_ends(m, "reused");
	}
	cur = hit[m->current];
	/* Only a mini cache that disagrees with the current one counts (a
	 * count plus 0 is the same count). */
	for (unsigned i = 0; i < ADMIT_MINISIM_N; i++) {
		if (hit[i] == cur)
			continue;
		if (cur)
			m->mini[i].loss += 1;
		else
			m->mini[i].win += 1;
	}
	if (real >= 0) {
		guard(m, h, hit, real);
		paired_add(&m->had, real, cur);
		if (m->checking && m->skip) {
			m->skip--;
		} else if (m->checking) {
			paired_add(&m->after, real, hit[m->prev]);
			paired_add(&m->after_cur, real, cur);
			if (m->after.n >= (double)m->period)
				end_check(m);
		}
	}
	if (++m->gets >= m->period)
		end_period(m);
	if (m->gets % quarter == 0)
		decide(m);
	return m->current;
}

unsigned
admit_minisim_get(struct admit_minisim *m, uint64_t h)
{
	return get(m, h, -1);
}

unsigned
admit_minisim_get_real(struct admit_minisim *m, uint64_t h, bool real_hit)
{
	return get(m, h, real_hit);
}

unsigned
admit_minisim_set(struct admit_minisim *m, uint64_t h, uint64_t w)
{
	uint32_t w32 = w > UINT32_MAX ? UINT32_MAX : (uint32_t)w;

	/* A set of a key LRU's mini cache does not hold: no get missed it
	 * just before (a miss is filled there at once), so it is a write no
	 * read asked for, a load (minisim.h, ADMIT_MINISIM_START). */
	if (!m->reused && !lookup(m, ADMIT_MINISIM_LRU, h))
		start_ends(m, "unasked");
	for (unsigned i = 0; i < ADMIT_MINISIM_N; i++) {
		struct mini *mc = &m->mini[i];
		struct mnode *x = lookup(m, i, h);

		if (!x) {
			insert(m, i, h, w32);
		} else if (x->weight != w32) {
			/* The get that missed guessed the weight (byte
			 * capacities): store it again with the real one. */
			admit_policy_remove(&mc->pol, &x->node);
			x->weight = w32;
			admit_policy_insert(&mc->pol, &x->node);
		}
	}
	return m->current;
}

unsigned
admit_minisim_current(const struct admit_minisim *m)
{
	return m->current;
}

uint64_t
admit_minisim_switches(const struct admit_minisim *m)
{
	return m->switches;
}

uint64_t
admit_minisim_undone(const struct admit_minisim *m)
{
	return m->undone;
}

uint64_t
admit_minisim_guarded(const struct admit_minisim *m)
{
	return m->guarded;
}

uint64_t
admit_minisim_entries(const struct admit_minisim *m)
{
	return m->nodes;
}

size_t
admit_minisim_bytes(const struct admit_minisim *m)
{
	return m->bytes;
}

double
admit_minisim_score(const struct admit_minisim *m, unsigned i)
{
	return m->reqs > 0 && i < ADMIT_MINISIM_N ? m->mini[i].score / m->reqs : 0;
}
