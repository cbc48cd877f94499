/*
 * lru.c - admit_lru: a sharded LRU cache with (W-)TinyLFU admission.
 *
 * Concurrency: a key belongs to the shard picked by the high bits of its
 * hash.  Each shard is a pthread mutex over its own chained hash index, its
 * three intrusive lists (window, probation, protected) and its counters;
 * every access to them happens under that mutex, so the mutex's own
 * acquire/release ordering is all the synchronisation they need.  No
 * operation holds two shard mutexes, so there is no lock order to respect.
 * The TinyLFU sketch is shared by all shards and is lock-free on its own;
 * admit_tinylfu_admit is called with the shard mutex held so that the victim
 * it judges cannot move meanwhile.
 *
 * Policy (Einziger, Eden, Friedman, Manes, "Adaptive Software Cache
 * Management", Middleware 2018; Caffeine's BoundedLocalCache): new keys enter
 * the window at its MRU end.  Whatever overflows the window moves to the MRU
 * end of probation; while the shard is over capacity, that candidate is
 * judged against probation's LRU victim and the loser leaves.  A hit in
 * probation promotes to protected; protected's overflow is demoted back to
 * probation.  The window's share is adjusted by hill climbing on the hit
 * ratio of each sample.  Plain LRU is the same machinery with an unbounded
 * window; LRU + TinyLFU a window of 0 and no protected segment.
 */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>
#include <string.h>

#include <admit/lru.h>
#include <admit/tinylfu.h>

#include "alloc.h"
#include "hash.h"

#define CACHELINE 64

enum seg { SEG_WINDOW, SEG_PROBATION, SEG_PROTECTED, SEG_COUNT };

struct entry {
	struct entry *prev, *next;  /* list links; next goes towards MRU */
	struct entry *hnext;        /* hash chain */
	uint64_t hash;
	size_t klen, vlen;
	enum seg seg;
	unsigned char data[];       /* key bytes, then value bytes */
};

/* A circular list through a sentinel: head.next is the LRU end, head.prev
 * the MRU end. */
struct list {
	struct entry head;
};

/* Caffeine's hill-climber constants (BoundedLocalCache), not tuned here. */
#define CLIMB_STEP_FRACTION 0.0625  /* first step: 6.25 % of capacity */
#define CLIMB_DECAY 0.98            /* step shrinks by this per sample */
#define CLIMB_RESTART 0.05          /* a 5-point move restarts the step */
#define CLIMB_SAMPLE_FACTOR 10      /* sample = 10 x capacity requests */
#define PROTECTED_PERCENT 80        /* protected share of main */

struct shard {
	alignas(CACHELINE) pthread_mutex_t mu;
	struct entry **buckets;
	size_t nbuckets;                /* a power of two */
	struct list seg[SEG_COUNT];
	uint64_t weight[SEG_COUNT];     /* per segment, in weight units */
	uint64_t entries, bytes;
	uint64_t max_entries, max_bytes;/* 0 = no such limit */
	uint64_t max_weight;            /* capacity in weight units */
	uint64_t window_max, protected_max;
	/* hill climber */
	uint64_t sample_hits, sample_misses, sample_size;
	double prev_rate, step;
	struct admit_lru_stats st;      /* entries/bytes/window filled on read */
};

struct admit_lru {
	struct shard *shards;
	unsigned nshards, shard_shift;
	bool by_bytes;                  /* weight unit: bytes, not entries */
	enum admit_lru_policy policy;
	uint64_t seed;
	struct admit_tinylfu *tlfu;     /* NULL for ADMIT_LRU_PLAIN */
};

static inline size_t
charge_of(size_t klen, size_t vlen)
{
	return klen + vlen + ADMIT_LRU_ENTRY_OVERHEAD;
}

static inline uint64_t
weight_of(const struct admit_lru *c, const struct entry *e)
{
	return c->by_bytes ? charge_of(e->klen, e->vlen) : 1;
}

static void
list_init(struct list *l)
{
	l->head.next = l->head.prev = &l->head;
}

static inline struct entry *
list_lru(struct list *l)
{
	return l->head.next == &l->head ? NULL : l->head.next;
}

static inline void
list_unlink(struct entry *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
}

static inline void
list_push_mru(struct list *l, struct entry *e)
{
	e->next = &l->head;
	e->prev = l->head.prev;
	l->head.prev->next = e;
	l->head.prev = e;
}

/* Moves e (already in some segment) to the MRU end of segment to. */
static void
seg_move(const struct admit_lru *c, struct shard *s, struct entry *e, enum seg to)
{
	uint64_t w = weight_of(c, e);

	list_unlink(e);
	s->weight[e->seg] -= w;
	e->seg = to;
	s->weight[to] += w;
	list_push_mru(&s->seg[to], e);
}

static inline bool
over_capacity(const struct shard *s)
{
	return (s->max_entries && s->entries > s->max_entries) ||
	       (s->max_bytes && s->bytes > s->max_bytes);
}

static inline struct shard *
shard_of(const struct admit_lru *c, uint64_t h)
{
	/* High bits pick the shard, low bits the bucket: independent. */
	return &c->shards[c->nshards == 1 ? 0 : h >> c->shard_shift];
}

static struct entry **
find(struct shard *s, uint64_t h, const void *key, size_t klen)
{
	struct entry **p = &s->buckets[h & (s->nbuckets - 1)];

	for (; *p; p = &(*p)->hnext) {
		struct entry *e = *p;

		if (e->hash == h && e->klen == klen &&
		    (klen == 0 || memcmp(e->data, key, klen) == 0))
			return p;
	}
	return p;
}

/* Doubles the index when it holds more entries than buckets (only a cache
 * bounded by bytes alone can get there).  Out of memory it keeps the old
 * index: longer chains, still correct. */
static void
maybe_grow(struct shard *s)
{
	size_t n = s->nbuckets * 2;
	struct entry **b;

	if (s->entries <= s->nbuckets || n > SIZE_MAX / sizeof(*b))
		return;
	b = admit_calloc(n, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < s->nbuckets; i++) {
		struct entry *e = s->buckets[i], *next;

		for (; e; e = next) {
			next = e->hnext;
			e->hnext = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	admit_free(s->buckets);
	s->buckets = b;
	s->nbuckets = n;
}

/* Unlinks e from the index and its list and frees it. */
static void
remove_entry(const struct admit_lru *c, struct shard *s, struct entry *e)
{
	struct entry **p = find(s, e->hash, e->data, e->klen);

	*p = e->hnext;
	list_unlink(e);
	s->weight[e->seg] -= weight_of(c, e);
	s->entries--;
	s->bytes -= charge_of(e->klen, e->vlen);
	admit_free(e);
}

static void
demote_protected_overflow(const struct admit_lru *c, struct shard *s)
{
	while (s->weight[SEG_PROTECTED] > s->protected_max) {
		struct entry *e = list_lru(&s->seg[SEG_PROTECTED]);

		if (!e)
			break;
		seg_move(c, s, e, SEG_PROBATION);
	}
}

static void
on_hit(const struct admit_lru *c, struct shard *s, struct entry *e)
{
	if (e->seg == SEG_PROBATION && s->protected_max > 0) {
		seg_move(c, s, e, SEG_PROTECTED);
		demote_protected_overflow(c, s);
	} else {
		seg_move(c, s, e, e->seg);
	}
}

/* Main's victim: probation's LRU entry, else protected's, else the
 * window's. */
static struct entry *
victim_of(struct shard *s)
{
	struct entry *v = list_lru(&s->seg[SEG_PROBATION]);

	if (!v)
		v = list_lru(&s->seg[SEG_PROTECTED]);
	if (!v)
		v = list_lru(&s->seg[SEG_WINDOW]);
	return v;
}

static inline bool
admit(const struct admit_lru *c, const struct entry *cand, const struct entry *victim)
{
	return admit_tinylfu_admit_hash(c->tlfu, cand->hash, victim->hash);
}

/* One hash per request serves the index and the sketch alike. */
static inline uint64_t
hash_key(const struct admit_lru *c, const void *key, size_t klen)
{
	return c->tlfu ? admit_tinylfu_hash(c->tlfu, key, klen)
	               : admit_hash(key, klen, c->seed);
}

/* Removes e for room; forgets fresh when it is the one removed. */
static void
drop(const struct admit_lru *c, struct shard *s, struct entry *e,
     const struct entry **fresh)
{
	if (e == *fresh)
		*fresh = NULL;
	remove_entry(c, s, e);
}

/*
 * Restores the window's and the shard's bounds after an insertion or a
 * growth.  Returns false when fresh (the entry just stored) was removed.
 */
static bool
evict(const struct admit_lru *c, struct shard *s, const struct entry *fresh)
{
	while (s->weight[SEG_WINDOW] > s->window_max) {
		struct entry *cand = list_lru(&s->seg[SEG_WINDOW]);
		bool won = false;

		seg_move(c, s, cand, SEG_PROBATION);
		while (over_capacity(s)) {
			struct entry *victim = victim_of(s);

			if (victim == cand) {
				drop(c, s, cand, &fresh);
				s->st.evicted++;
				break;
			}
			if (!admit(c, cand, victim)) {
				drop(c, s, cand, &fresh);
				s->st.rejected++;
				break;
			}
			drop(c, s, victim, &fresh);
			s->st.evicted++;
			won = true;
		}
		s->st.admitted += won;
	}
	/* A grown value, or a window holding everything (plain LRU). */
	while (over_capacity(s)) {
		drop(c, s, victim_of(s), &fresh);
		s->st.evicted++;
	}
	return fresh != NULL;
}

/* Hill climbing on the window's share, once per sample of requests
 * (Caffeine's BoundedLocalCache.climb). */
static void
climb(const struct admit_lru *c, struct shard *s)
{
	uint64_t n = s->sample_hits + s->sample_misses;
	double rate, change, amount;
	int64_t adjust;

	if (n < s->sample_size)
		return;
	rate = (double)s->sample_hits / (double)n;
	change = rate - s->prev_rate;
	amount = change >= 0 ? s->step : -s->step;
	s->step = fabs(change) >= CLIMB_RESTART
	          ? CLIMB_STEP_FRACTION * (double)s->max_weight * (amount >= 0 ? 1 : -1)
	          : CLIMB_DECAY * amount;
	s->prev_rate = rate;
	s->sample_hits = s->sample_misses = 0;
	adjust = (int64_t)amount;
	if (adjust > 0) {
		uint64_t q = (uint64_t)adjust < s->protected_max
		             ? (uint64_t)adjust : s->protected_max;

		struct entry *e;

		s->protected_max -= q;
		s->window_max += q;
		demote_protected_overflow(c, s);
		/* Caffeine fills the grown window at once with main's coldest
		 * entries, so that new keys keep competing for their place. */
		while (s->weight[SEG_WINDOW] < s->window_max &&
		       ((e = list_lru(&s->seg[SEG_PROBATION])) ||
		        (e = list_lru(&s->seg[SEG_PROTECTED]))) &&
		       s->weight[SEG_WINDOW] + weight_of(c, e) <= s->window_max)
			seg_move(c, s, e, SEG_WINDOW);
	} else if (adjust < 0 && s->window_max > 1) {
		uint64_t q = (uint64_t)-adjust < s->window_max - 1
		             ? (uint64_t)-adjust : s->window_max - 1;
		struct entry *e;

		s->protected_max += q;
		s->window_max -= q;
		/* Caffeine moves the window's surplus to probation at once,
		 * without a contest: the shard's size does not change. */
		while (s->weight[SEG_WINDOW] > s->window_max &&
		       (e = list_lru(&s->seg[SEG_WINDOW])))
			seg_move(c, s, e, SEG_PROBATION);
	}
}

static void
count_request(const struct admit_lru *c, struct shard *s, bool hit)
{
	if (hit)
		s->st.hits++;
	else
		s->st.misses++;
	if (c->policy != ADMIT_LRU_ADAPTIVE)
		return;
	/* As Caffeine: no sample until the shard is half full, so warming up
	 * is not read as a workload that favours one direction. */
	if (s->weight[SEG_WINDOW] + s->weight[SEG_PROBATION] +
	    s->weight[SEG_PROTECTED] < s->max_weight / 2) {
		s->sample_hits = s->sample_misses = 0;
		s->prev_rate = 0;
		return;
	}
	if (hit)
		s->sample_hits++;
	else
		s->sample_misses++;
	climb(c, s);
}

/* The entries the cache will hold: its entry capacity, or for a byte
 * capacity alone a guess of entries of 4 x the per-entry overhead.  Sizes
 * the TinyLFU sketch, the climber's sample and the default shard count. */
static uint64_t
entries_of(const struct admit_lru_config *cfg)
{
	uint64_t guess = cfg->capacity_bytes / (4 * ADMIT_LRU_ENTRY_OVERHEAD) + 1;

	if (cfg->capacity)
		return cfg->capacity;
	return guess < ADMIT_LRU_MAX_CAPACITY ? guess : ADMIT_LRU_MAX_CAPACITY;
}

static uint64_t
part(uint64_t total, unsigned n, unsigned i)
{
	return total / n + (i < total % n);
}

static enum admit_status
shard_init(struct admit_lru *c, struct shard *s, const struct admit_lru_config *cfg,
           unsigned i, unsigned window_percent)
{
	uint64_t main;

	s->max_entries = part(cfg->capacity, c->nshards, i);
	s->max_bytes = part(cfg->capacity_bytes, c->nshards, i);
	s->max_weight = c->by_bytes ? s->max_bytes : s->max_entries;
	for (int k = 0; k < SEG_COUNT; k++)
		list_init(&s->seg[k]);
	switch (c->policy) {
	case ADMIT_LRU_PLAIN:
		s->window_max = UINT64_MAX;
		s->protected_max = 0;
		break;
	case ADMIT_LRU_TINYLFU:
		s->window_max = 0;
		s->protected_max = 0;
		break;
	default:
		/* Caffeine: window = max - floor(99 % of max); protected =
		 * floor(80 % of main). */
		s->window_max = s->max_weight -
		                s->max_weight / 100 * (100 - window_percent) -
		                s->max_weight % 100 * (100 - window_percent) / 100;
		main = s->max_weight - s->window_max;
		s->protected_max = main / 100 * PROTECTED_PERCENT +
		                   main % 100 * PROTECTED_PERCENT / 100;
		break;
	}
	s->sample_size = CLIMB_SAMPLE_FACTOR * part(entries_of(cfg), c->nshards, i);
	s->step = -CLIMB_STEP_FRACTION * (double)s->max_weight;
	s->nbuckets = 64;
	while (s->nbuckets < s->max_entries && s->nbuckets < ((size_t)1 << 30))
		s->nbuckets *= 2;
	s->buckets = admit_calloc(s->nbuckets, sizeof(*s->buckets));
	if (!s->buckets)
		return ADMIT_NOMEM;
	if (pthread_mutex_init(&s->mu, NULL) != 0) {
		admit_free(s->buckets);
		s->buckets = NULL;
		return ADMIT_NOMEM;
	}
	return ADMIT_OK;
}

static void
shard_destroy(struct shard *s)
{
	for (int k = 0; k < SEG_COUNT; k++) {
		struct entry *e = s->seg[k].head.next, *next;

		for (; e != &s->seg[k].head; e = next) {
			next = e->next;
			admit_free(e);
		}
	}
	admit_free(s->buckets);
	pthread_mutex_destroy(&s->mu);
}

enum admit_status
admit_lru_new(const struct admit_lru_config *cfg, struct admit_lru **out)
{
	struct admit_lru *c = NULL;
	enum admit_status st = ADMIT_NOMEM;
	unsigned nshards, window_percent, ready = 0;

	if (!cfg || !out || (cfg->capacity == 0 && cfg->capacity_bytes == 0) ||
	    cfg->capacity > ADMIT_LRU_MAX_CAPACITY ||
	    cfg->capacity_bytes > ADMIT_LRU_MAX_BYTES ||
	    (unsigned)cfg->policy > ADMIT_LRU_PLAIN || cfg->window_percent > 99 ||
	    cfg->shards > ADMIT_LRU_MAX_SHARDS ||
	    (cfg->shards & (cfg->shards - 1)) != 0 ||
	    (cfg->capacity && cfg->shards > cfg->capacity) ||
	    (cfg->capacity_bytes && cfg->shards > cfg->capacity_bytes))
		return ADMIT_EINVAL;
	nshards = cfg->shards;
	if (nshards == 0) {
		/* At least 64 entries a shard. */
		for (nshards = 16; nshards > 1 && entries_of(cfg) / nshards < 64;
		     nshards /= 2)
			;
	}
	window_percent = cfg->policy == ADMIT_LRU_WTINYLFU && cfg->window_percent
	                 ? cfg->window_percent : 1;

	c = admit_calloc(1, sizeof(*c));
	if (!c)
		goto out;
	c->nshards = nshards;
	for (c->shard_shift = 64; (1u << (64 - c->shard_shift)) < nshards; )
		c->shard_shift--;
	c->by_bytes = cfg->capacity == 0;
	c->policy = cfg->policy;
	c->seed = cfg->seed ? cfg->seed : admit_random_seed();
	if (c->policy != ADMIT_LRU_PLAIN) {
		st = admit_tinylfu_new(entries_of(cfg), c->seed ^ 0x9e3779b97f4a7c15ull,
		                       &c->tlfu);
		if (st != ADMIT_OK)
			goto out;
		st = ADMIT_NOMEM;
	}
	c->shards = admit_table_alloc(sizeof(*c->shards) * nshards);
	if (!c->shards)
		goto out;
	for (; ready < nshards; ready++) {
		st = shard_init(c, &c->shards[ready], cfg, ready, window_percent);
		if (st != ADMIT_OK)
			goto out;
	}
	*out = c;
	return ADMIT_OK;
out:
	if (c) {
		for (unsigned i = 0; i < ready; i++)
			shard_destroy(&c->shards[i]);
		if (c->shards)
			admit_table_free(c->shards, sizeof(*c->shards) * nshards);
		admit_tinylfu_free(c->tlfu);
		admit_free(c);
	}
	return st;
}

void
admit_lru_free(struct admit_lru *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < c->nshards; i++)
		shard_destroy(&c->shards[i]);
	admit_table_free(c->shards, sizeof(*c->shards) * c->nshards);
	admit_tinylfu_free(c->tlfu);
	admit_free(c);
}

enum admit_status
admit_lru_get(struct admit_lru *c, const void *key, size_t klen, void *buf,
              size_t bufsize, size_t *vlen)
{
	uint64_t h;
	struct shard *s;
	struct entry *e;

	if (!c || !vlen || (!key && klen) || (!buf && bufsize))
		return ADMIT_EINVAL;
	h = hash_key(c, key, klen);
	s = shard_of(c, h);
	pthread_mutex_lock(&s->mu);
	e = *find(s, h, key, klen);
	if (!e) {
		count_request(c, s, false);
		pthread_mutex_unlock(&s->mu);
		return ADMIT_NOTFOUND;
	}
	*vlen = e->vlen;
	if (e->vlen > bufsize) {
		pthread_mutex_unlock(&s->mu);
		return ADMIT_FULL;
	}
	if (e->vlen)
		memcpy(buf, e->data + e->klen, e->vlen);
	on_hit(c, s, e);
	count_request(c, s, true);
	pthread_mutex_unlock(&s->mu);
	if (c->tlfu)
		admit_tinylfu_record_hash(c->tlfu, h);
	return ADMIT_OK;
}

enum admit_status
admit_lru_set(struct admit_lru *c, const void *key, size_t klen,
              const void *value, size_t vlen)
{
	uint64_t h;
	struct shard *s;
	struct entry *e, **p, *old;
	bool kept;

	if (!c || (!key && klen) || (!value && vlen))
		return ADMIT_EINVAL;
	if (klen > SIZE_MAX / 4 || vlen > SIZE_MAX / 4)
		return ADMIT_FULL;
	h = hash_key(c, key, klen);
	s = shard_of(c, h);
	if (s->max_bytes && charge_of(klen, vlen) > s->max_bytes)
		return ADMIT_FULL;
	e = admit_malloc(sizeof(*e) + klen + vlen);
	if (!e)
		return ADMIT_NOMEM;
	e->hash = h;
	e->klen = klen;
	e->vlen = vlen;
	if (klen)
		memcpy(e->data, key, klen);
	if (vlen)
		memcpy(e->data + klen, value, vlen);
	/* Before the contest, so the candidate's own request counts. */
	if (c->tlfu)
		admit_tinylfu_record_hash(c->tlfu, h);

	pthread_mutex_lock(&s->mu);
	p = find(s, h, key, klen);
	old = *p;
	if (old) {
		/* Take old's place in the index and in its list. */
		e->hnext = old->hnext;
		*p = e;
		e->seg = old->seg;
		e->prev = old->prev;
		e->next = old->next;
		e->prev->next = e;
		e->next->prev = e;
		s->weight[e->seg] += weight_of(c, e);
		s->weight[e->seg] -= weight_of(c, old);
		s->bytes += charge_of(klen, vlen);
		s->bytes -= charge_of(old->klen, old->vlen);
		on_hit(c, s, e);
	} else {
		e->hnext = NULL;
		*p = e;
		e->seg = SEG_WINDOW;
		s->weight[SEG_WINDOW] += weight_of(c, e);
		list_push_mru(&s->seg[SEG_WINDOW], e);
		s->entries++;
		s->bytes += charge_of(klen, vlen);
	}
	kept = evict(c, s, e);
	maybe_grow(s);
	pthread_mutex_unlock(&s->mu);
	admit_free(old);
	return kept ? ADMIT_OK : ADMIT_REJECTED;
}

enum admit_status
admit_lru_delete(struct admit_lru *c, const void *key, size_t klen)
{
	uint64_t h;
	struct shard *s;
	struct entry *e;

	if (!c || (!key && klen))
		return ADMIT_EINVAL;
	h = hash_key(c, key, klen);
	s = shard_of(c, h);
	pthread_mutex_lock(&s->mu);
	e = *find(s, h, key, klen);
	if (e)
		remove_entry(c, s, e);
	pthread_mutex_unlock(&s->mu);
	return e ? ADMIT_OK : ADMIT_NOTFOUND;
}

enum admit_status
admit_lru_stats(struct admit_lru *c, struct admit_lru_stats *out)
{
	struct admit_lru_stats sum = { 0 };

	if (!c || !out)
		return ADMIT_EINVAL;
	for (unsigned i = 0; i < c->nshards; i++) {
		struct shard *s = &c->shards[i];

		pthread_mutex_lock(&s->mu);
		sum.hits += s->st.hits;
		sum.misses += s->st.misses;
		sum.admitted += s->st.admitted;
		sum.rejected += s->st.rejected;
		sum.evicted += s->st.evicted;
		sum.entries += s->entries;
		sum.bytes += s->bytes;
		sum.window += s->window_max == UINT64_MAX ? s->max_weight
		                                          : s->window_max;
		pthread_mutex_unlock(&s->mu);
	}
	if (c->tlfu) {
		struct admit_tinylfu_stats ts;

		admit_tinylfu_stats(c->tlfu, &ts);
		sum.filter_entries = ts.freq_entries;
		sum.filter_slots = ts.freq_slots;
	}
	*out = sum;
	return ADMIT_OK;
}
