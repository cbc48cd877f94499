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

#include <string.h>

#include "alloc.h"
#include "minisim.h"

/*
 * The configurations: window share 0, 1, 5, 20, 50, 80 % with admission
 * (segmented LRU with TinyLFU up to mostly recency), 20 % without admission
 * (segmented LRU), plain LRU, and W-TinyLFU's 1 % window with steady
 * frequencies (no aging, no chance admission: what a loop larger than the
 * cache needs, tinylfu_internal.h).  Protected is 80 % of main throughout
 * (Caffeine's).
 */
const struct admit_policy_config admit_minisim_configs[ADMIT_MINISIM_N] = {
	{ 0, 80, true, false }, { 1, 80, true, false }, { 5, 80, true, false },
	{ 20, 80, true, false }, { 50, 80, true, false }, { 80, 80, true, false },
	{ 20, 80, false, false }, { 100, 0, false, false },
	{ 1, 80, true, true },
};

#define NIL UINT32_MAX

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
	uint64_t switches;
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

static const struct admit_policy_ops mini_ops = {
	.weight = op_weight, .over = op_over, .admit = op_admit, .drop = op_drop,
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

/* Ends a period: decays the scores and moves to the best configuration
 * if it beats the current one by the hysteresis. */
static void
end_period(struct admit_minisim *m)
{
	unsigned best = m->current;

	m->reqs = m->reqs * ADMIT_MINISIM_DECAY + (double)m->gets;
	for (unsigned i = 0; i < ADMIT_MINISIM_N; i++) {
		struct mini *mc = &m->mini[i];

		mc->score = mc->score * ADMIT_MINISIM_DECAY + (double)mc->hits;
		mc->hits = 0;
		if (mc->score > m->mini[best].score)
			best = i;
	}
	m->gets = 0;
	if (m->mini[best].score >
	    m->mini[m->current].score + ADMIT_MINISIM_HYSTERESIS * m->reqs) {
		m->current = best;
		m->switches++;
	}
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

/* A mini cache fills its own misses, as the real cache's caller does
 * after a miss: the real cache's set follows only its own misses, and a
 * key the real cache holds may be missing here.  The weight is a guess
 * (the mean an entry may have) that a set corrects. */
unsigned
admit_minisim_get(struct admit_minisim *m, uint64_t h)
{
	for (unsigned i = 0; i < ADMIT_MINISIM_N; i++) {
		struct mnode *x = lookup(m, i, h);

		if (x) {
			m->mini[i].hits++;
			admit_policy_hit(&m->mini[i].pol, &x->node);
		} else {
			insert(m, i, h, m->fill_weight);
		}
	}
	if (++m->gets >= m->period)
		end_period(m);
	return m->current;
}

void
admit_minisim_set(struct admit_minisim *m, uint64_t h, uint64_t w)
{
	uint32_t w32 = w > UINT32_MAX ? UINT32_MAX : (uint32_t)w;

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
