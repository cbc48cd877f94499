/*
 * lru.c - admit_lru: a sharded LRU cache with (W-)TinyLFU admission.
 *
 * Concurrency.  A key belongs to the shard picked by the high bits of its
 * hash.  Each shard has a pthread mutex over its lists, counters and the
 * writers' side of its index; set, delete, stats and the freeing of entries
 * take it.  No operation holds two shard mutexes.  The TinyLFU sketch is
 * shared by all shards and lock-free on its own; admit_tinylfu_admit is
 * called with the shard mutex held so that the victim it judges cannot move.
 *
 * A get takes no lock in the common case:
 *   - Index: a chained hash per shard whose chain pointers are C11 atomics.
 *     Writers (under the mutex) publish with release (rcu.h); a get walks the
 *     chains with acquire loads inside an RCU read-side section (urcu-bp).
 *     An entry is never changed once published: set publishes a new entry
 *     in the old one's place, so a get copies a whole value, never a torn
 *     one.  Growing the index (byte-bounded caches only) relinks entries;
 *     meanwhile the shard's `resizing` count is odd, and a get that misses
 *     while it was odd or moved looks again (seqlock-style: Boehm, MSPC
 *     2012).  A hit needs no check: the key compared equal.  The old bucket
 *     array is freed after a grace period.
 *   - Recency: a get cannot move its entry in the lists, so it records the
 *     access -- the entry for a hit, NULL for a miss -- in a bounded MPSC
 *     ring of the shard (Vyukov's bounded queue: a sequence number per
 *     slot); a shard has RINGS of them, and a thread pushes to one, so one
 *     thread's accesses are in one ring.  Whoever next holds the mutex
 *     drains the rings, each IN ORDER, before its own work, and
 *     applies each event as the old locked get did: the move and the
 *     counters.  A get that finds the ring full takes the mutex,
 *     drains, and applies its own event: no event is ever dropped, so one
 *     thread sees exactly the state changes, in exactly the order, of the
 *     fully locked cache.  The drain also makes the hits' TinyLFU records
 *     (BP-Wrapper, Ding, Jiang, Zhang, ICDE 2009, as Caffeine does): one
 *     thread records a batch, its sketch lines prefetched together, instead
 *     of every get its own.  A shard's contests follow its drain, and
 *     compare two of its keys, so they see every earlier hit of both; the
 *     hits of keys the miniature simulation samples are still recorded in
 *     get, because its contests run outside the shards (recorded_in_get()).
 *     On one thread the sketch gets the same records in the same order as
 *     if each were made at its drain, and compute queues its hit's record
 *     in the ring (EV_RECORD) so that it and get-then-set stay one access.
 *
 * Entry lifetime.  An entry leaves the index and its list under the mutex,
 * is marked dead and put in the shard's limbo; the limbo goes, a batch at a
 * time, to call_rcu.  After the grace period no reader can still hold those
 * entries nor still be pushing them, so every event naming them lies below
 * its ring's tail as the callback reads the tails; the callback notes them
 * and hands the batch back to the shard (a lock-free stack), and the next
 * mutex holder frees it once its drain has moved every ring's head past its
 * noted tail.
 * (A slot below the tail that a get has reserved but not yet filled stops a
 * drain; the batch then waits for a later one.)  The drain skips dead
 * entries' moves but still counts the hit.  The invariant:
 *     an entry is freed only when it is dead, no read-side section that may
 *     have seen it is running, and no ring slot names it.
 * Frees happen in the threads that use the cache, under the mutex, and the
 * callback takes no lock.  Garbage per shard: the limbo (under LIMBO_BATCH
 * entries and LIMBO_BYTES bytes) plus the batches handed out since the
 * shard's last locked call past their grace period; none of it counts in
 * the capacity.  admit_lru_free waits for every callback.
 *
 * Policy (Einziger, Eden, Friedman, Manes, "Adaptive Software Cache
 * Management", Middleware 2018; Caffeine's BoundedLocalCache): new keys enter
 * the window at its MRU end.  Whatever overflows the window moves to the MRU
 * end of probation; while the shard is over capacity, that candidate is
 * judged against probation's LRU victim and the loser leaves.  A hit in
 * probation promotes to protected; protected's overflow is demoted back to
 * probation.  That policy is src/policy.c, single-threaded, run here under
 * the shard mutex; ADMIT_LRU_ADAPTIVE's configuration is chosen by the
 * miniature simulation of src/minisim.c, which runs the same policy.  Plain
 * LRU is a window of everything; LRU + TinyLFU a window of 0 and no
 * protected segment.
 */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include <admit/lru.h>
#include <admit/tinylfu.h>

#include "alloc.h"
#include "hash.h"
#include "lru_internal.h"
#include "minisim.h"
#include "policy.h"
#include "rcu.h"
#include "stripe.h"
#include "tinylfu_internal.h"
#include "timer_wheel.h"

#define CACHELINE ADMIT_CACHELINE

struct entry {
	/* The policy's list links and segment, under the mutex.  A dead
	 * entry is chained into the limbo through limbo. */
	union {
		struct admit_policy_node node;
		struct entry *limbo;
	};
	_Atomic(struct entry *) hnext;  /* hash chain: readers follow it */
	uint64_t hash;
	size_t klen, vlen;
	bool dead;                      /* unlinked; under the mutex */
	bool timed;                     /* expires: a struct lru_timer follows
	                                 * the data; never changes */
	unsigned char data[];           /* key bytes, then value bytes */
};

/* A bucket array; replaced whole when the index grows. */
struct index {
	struct rcu_head rcu;
	struct admit_lru *c;            /* whose pending count free_index drops */
	size_t nbuckets;                /* a power of two */
	_Atomic(struct entry *) bucket[];
};

/* One access: a get's hit (the entry), a get's miss (0), or, the entry's
 * address | EV_RECORD, a hit that compute has applied under the mutex and
 * whose TinyLFU record waits its turn as a get's would.  seq is the slot's
 * turn: pos when free for the push at ring position pos, pos + 1 once that
 * push is written, pos + ADMIT_LRU_RING once drained. */
struct slot {
	_Atomic uint64_t seq;
	_Atomic uintptr_t ev;
};

#define EV_RECORD ((uintptr_t)1)
_Static_assert(alignof(struct entry) > EV_RECORD, "EV_RECORD is a free bit");

struct ring {
	alignas(CACHELINE) _Atomic uint64_t tail;  /* next position to push */
	alignas(CACHELINE) uint64_t head;          /* next to drain; under the
	                                            * mutex */
	alignas(CACHELINE) struct slot slot[ADMIT_LRU_RING];
};

/* Rings per shard (a power of two).  Each thread pushes to one of them,
 * picked once per thread, so that two threads' gets on one shard do not
 * write the same tail and slot lines (BP-Wrapper's and Caffeine's striped
 * read buffers; bench/README.md: on two threads the shared tail cost a
 * get 27 ns).  A drain empties them all, each in order: one thread's
 * accesses keep their order, all being in one ring. */
#define RINGS 4

#define PROTECTED_PERCENT 80        /* protected share of main (Caffeine) */

/* Dead entries a shard collects before handing them to call_rcu at once. */
#define LIMBO_BATCH 64
#define LIMBO_BYTES (64 * 1024)

struct shard {
	alignas(CACHELINE) pthread_mutex_t mu;
	struct admit_policy pol;        /* the lists, segments and contest */
	struct admit_lru *c;
	const struct entry *fresh;      /* the entry a set stores, until the
	                                 * policy drops it */
	unsigned config;                /* ADAPTIVE: the index in
	                                 * admit_minisim_configs applied */
	uint64_t entries, bytes;
	uint64_t max_entries, max_bytes;/* 0 = no such limit */
	uint64_t max_weight;            /* capacity in weight units */
	struct admit_lru_stats st;      /* hits and misses; the rest filled
	                                 * on read */
	struct admit_wheel *wheel;      /* its timed entries; NULL until the
	                                 * first */
	struct entry *limbo;            /* dead, waiting for a batch */
	unsigned nlimbo;
	size_t limbo_bytes;
	struct batch *waiting;          /* past their grace period, not yet
	                                 * past the ring's head */
	_Atomic(struct batch *) ready;  /* past their grace period: pushed by
	                                 * callbacks, taken by reclaim() */
	/* What a get reads, apart from the lines writers dirty. */
	alignas(CACHELINE) _Atomic(struct index *) index;
	_Atomic uint32_t resizing;      /* a stripe (stripe.h): odd while grow
	                                 * relinks chains */
	struct ring ring[RINGS];        /* a thread pushes to one (my_ring()) */
};

struct admit_lru {
	struct shard *shards;
	unsigned nshards, shard_shift;
	bool by_bytes;                  /* weight unit: bytes, not entries */
	enum admit_lru_policy policy;
	uint64_t seed;
	struct admit_tinylfu *tlfu;     /* NULL for ADMIT_LRU_PLAIN */
	_Atomic uint64_t pending;       /* callbacks queued, not yet done */
	uint64_t (*clock)(void *);      /* NULL: the coarse one (now_of) */
	void *clock_arg;
	/* ADAPTIVE: the miniature simulation that picks the configuration,
	 * behind a mutex of its own that callers only try (a sample missed
	 * under contention costs nothing but a little evidence), and the
	 * index of the configuration it chose, which each shard applies
	 * under its own mutex. */
	struct admit_minisim *sim;
	uint64_t sim_threshold;         /* admit_minisim_threshold(sim) */
	/* The real sketch runs in one mode at a time (tinylfu_internal.h):
	 * the mini caches of the other mode contest on a sketch of the
	 * sampled requests alone, in that mode ([0] aging, [1] steady). */
	struct admit_tinylfu *sim_tlfu[2];
	pthread_mutex_t sim_mu;
	alignas(CACHELINE) _Atomic unsigned config;
};

/* Dead entries of one shard on their way to being freed. */
struct batch {
	struct rcu_head rcu;
	struct admit_lru *c;
	struct shard *s;
	struct batch *next;             /* in a list of the shard's */
	uint64_t tail[RINGS];           /* the rings' tails after the grace period */
	size_t count;                   /* entries in e */
	struct entry *e[];
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

/* ---- the index ----------------------------------------------------------- */

static struct index *
index_new(struct admit_lru *c, size_t nbuckets)
{
	struct index *ix;

	if (nbuckets > (SIZE_MAX - sizeof(*ix)) / sizeof(ix->bucket[0]))
		return NULL;
	ix = admit_calloc(1, sizeof(*ix) + nbuckets * sizeof(ix->bucket[0]));
	if (ix) {
		ix->c = c;
		ix->nbuckets = nbuckets;
	}
	return ix;
}

/* Whether two keys of klen bytes are equal; an 8-byte key (an integer id,
 * the commonest) in one compare instead of a call to memcmp. */
static inline bool
same_key(const unsigned char *a, const void *b, size_t klen)
{
	if (klen == sizeof(uint64_t)) {
		uint64_t x, y;

		memcpy(&x, a, sizeof(x));
		memcpy(&y, b, sizeof(y));
		return x == y;
	}
	return klen == 0 || memcmp(a, b, klen) == 0;
}

/*
 * The entry of key in ix, or NULL; *where (if where) is set to the chain
 * pointer that holds it, or to the chain's final NULL.  Safe in a read-side
 * section and under the mutex alike.
 */
static struct entry *
find(struct index *ix, uint64_t h, const void *key, size_t klen,
     _Atomic(struct entry *) **where)
{
	_Atomic(struct entry *) *p = &ix->bucket[h & (ix->nbuckets - 1)];
	struct entry *e;

	for (; (e = admit_rcu_deref(p)); p = &e->hnext)
		if (e->hash == h && e->klen == klen && same_key(e->data, key, klen))
			break;
	if (where)
		*where = p;
	return e;
}

/* The writers' view (the mutex held): the index is theirs to change. */
static inline struct index *
index_of(struct shard *s)
{
	/* relaxed: only the mutex holder stores it. */
	return atomic_load_explicit(&s->index, memory_order_relaxed);
}

/*
 * A get's lookup, in a read-side section.  A miss while a grow was relinking
 * the chains may be false (the key's entry was moved behind the reader); the
 * grow makes `resizing` odd before its first relink and even after its
 * last, so a miss counts only if `resizing` was even and unchanged around
 * it.  The chain loads are acquire, so the second load of `resizing` cannot
 * move before them, and one that read a relinked pointer also sees the odd
 * count stored before it (Boehm, "Can seqlocks get along with programming
 * language memory models?").
 */
static struct entry *
lookup(struct shard *s, uint64_t h, const void *key, size_t klen)
{
	/* stripe.h's reader, on one stripe: a hit stands as found, a miss
	 * only if no grow began or ended around it. */
	struct stripe_reader r = { .a = &s->resizing, .b = &s->resizing };

	for (;;) {
		if (stripe_read_begin(&r)) {
			struct entry *e = find(admit_rcu_deref(&s->index), h, key,
			                       klen, NULL);

			if (e || stripe_read_end(&r))
				return e;
		}
		/* Rare: wait for the grow to end behind the mutex it holds. */
		pthread_mutex_lock(&s->mu);
		pthread_mutex_unlock(&s->mu);
	}
}

static void free_index(struct rcu_head *head);
static bool expired(const struct admit_lru *c, const struct entry *e);
static void expire_due(struct admit_lru *c, struct shard *s);
static struct entry *find_live(struct admit_lru *c, struct shard *s, uint64_t h,
                               const void *key, size_t klen,
                               _Atomic(struct entry *) **where);

/* Doubles the index when it holds more entries than buckets (only a cache
 * bounded by bytes alone can get there).  Out of memory it keeps the old
 * index: longer chains, still correct. */
static void
maybe_grow(struct admit_lru *c, struct shard *s)
{
	struct index *old = index_of(s), *ix;
	size_t n = old->nbuckets * 2;

	if (s->entries <= old->nbuckets || !(ix = index_new(c, n)))
		return;
	/* Uncontended (the mutex is held); the relinks below are release
	 * stores, so a reader that sees one also sees the odd stripe. */
	stripe_lock(&s->resizing);
	for (size_t i = 0; i < old->nbuckets; i++) {
		/* relaxed loads: the mutex holder's own stores. */
		struct entry *e = atomic_load_explicit(&old->bucket[i],
		                                       memory_order_relaxed), *next;

		for (; e; e = next) {
			_Atomic(struct entry *) *b = &ix->bucket[e->hash & (n - 1)];

			next = atomic_load_explicit(&e->hnext, memory_order_relaxed);
			admit_rcu_publish(&e->hnext,
			                  atomic_load_explicit(b, memory_order_relaxed));
			/* relaxed: ix is published below, with release. */
			atomic_store_explicit(b, e, memory_order_relaxed);
		}
	}
	admit_rcu_publish(&s->index, ix);
	stripe_unlock(&s->resizing);
	atomic_fetch_add(&c->pending, 1);
	admit_rcu_call(&old->rcu, free_index);
}

/* ---- freeing after a grace period ------------------------------------------- */

static void
free_index(struct rcu_head *head)
{
	struct index *ix = caa_container_of(head, struct index, rcu);
	struct admit_lru *c;

	admit_rcu_callback_begin();  /* before the first read of *ix */
	c = ix->c;
	admit_free(ix);
	atomic_fetch_sub(&c->pending, 1);
	admit_rcu_callback_end();
}

/* The grace period has passed: no reader holds the batch's entries or is
 * still pushing them, so every slot naming them lies below the tail read
 * here.  The next mutex holder frees the batch once the ring's head has
 * passed that tail (reclaim()): the callback takes no lock, and the entries
 * go back to the allocator in the threads that use the cache. */
static void
batch_ready(struct rcu_head *head)
{
	struct batch *b = caa_container_of(head, struct batch, rcu);
	struct admit_lru *c;
	struct shard *s;

	admit_rcu_callback_begin();  /* before the first read of *b */
	c = b->c;
	s = b->s;
	/* relaxed: every push naming these entries was made in a read-side
	 * section that the grace period put before us. */
	for (unsigned k = 0; k < RINGS; k++)
		b->tail[k] = atomic_load_explicit(&s->ring[k].tail,
		                                  memory_order_relaxed);
	/* relaxed: the CAS below publishes b. */
	b->next = atomic_load_explicit(&s->ready, memory_order_relaxed);
	/* release: pairs with the acquire exchange in reclaim(). */
	while (!atomic_compare_exchange_weak_explicit(&s->ready, &b->next, b,
	                                              memory_order_release,
	                                              memory_order_relaxed))
		;
	atomic_fetch_sub(&c->pending, 1);
	admit_rcu_callback_end();
}

static void
free_batch(struct batch *b)
{
	/* A dead entry's line is long cold: start every miss at once. */
	for (size_t i = 0; i < b->count; i++)
		__builtin_prefetch(b->e[i]);
	for (size_t i = 0; i < b->count; i++)
		admit_free(b->e[i]);
	admit_free(b);
}

/* Whether every ring's head has passed the tail it had when b's grace
 * period ended: no slot names b's entries any more. */
static bool
passed(const struct shard *s, const struct batch *b)
{
	for (unsigned k = 0; k < RINGS; k++)
		if (s->ring[k].head < b->tail[k])
			return false;
	return true;
}

/* Frees the ready batches whose events the rings' heads have passed (all of
 * them if all: the cache is being freed); keeps the others (a get reserved
 * a slot below their tail and has not filled it yet) for a later drain.
 * With the mutex held, after a drain. */
static void
reclaim(struct shard *s, bool all)
{
	struct batch *b, *next, *keep = NULL;

	/* relaxed: a hint; the exchange below is what reads the batches. */
	if (!atomic_load_explicit(&s->ready, memory_order_relaxed) && !s->waiting)
		return;
	/* acquire: pairs with the release in batch_ready(). */
	b = atomic_exchange_explicit(&s->ready, NULL, memory_order_acquire);
	for (; b || s->waiting; b = next) {
		if (!b) {
			b = s->waiting;
			s->waiting = NULL;
		}
		next = b->next;
		if (all || passed(s, b)) {
			free_batch(b);
		} else {
			b->next = keep;
			keep = b;
		}
	}
	s->waiting = keep;
}

static void untime(struct entry *e);

/* e has left the index and its list: no new reader can find it. */
static void
retire(struct shard *s, struct entry *e)
{
	untime(e);
	e->dead = true;
	e->limbo = s->limbo;
	s->limbo = e;
	s->nlimbo++;
	s->limbo_bytes += charge_of(e->klen, e->vlen);
}

/* Hands the shard's limbo to call_rcu once it is big enough.  Out of memory
 * the limbo stays, to be tried again. */
static void
flush_limbo(struct admit_lru *c, struct shard *s)
{
	struct batch *b;

	if (s->nlimbo < LIMBO_BATCH && s->limbo_bytes < LIMBO_BYTES)
		return;
	b = admit_malloc(sizeof(*b) + s->nlimbo * sizeof(b->e[0]));
	if (!b)
		return;
	*b = (struct batch){ .c = c, .s = s };
	for (struct entry *e = s->limbo; e; e = e->limbo)
		b->e[b->count++] = e;
	s->limbo = NULL;
	s->nlimbo = 0;
	s->limbo_bytes = 0;
	atomic_fetch_add(&c->pending, 1);
	admit_rcu_call(&b->rcu, batch_ready);
}

/* Unlinks e (already out of the policy's lists) from the index; frees it
 * after a grace period. */
static void
unindex_entry(struct shard *s, struct entry *e)
{
	_Atomic(struct entry *) *p;

	find(index_of(s), e->hash, e->data, e->klen, &p);
	/* relaxed load: the mutex holder's own store. */
	admit_rcu_publish(p, atomic_load_explicit(&e->hnext, memory_order_relaxed));
	s->entries--;
	s->bytes -= charge_of(e->klen, e->vlen);
	retire(s, e);
}

/* Takes e out of the policy's lists and the index (delete, expiry). */
static void
remove_entry(struct shard *s, struct entry *e)
{
	admit_policy_remove(&s->pol, &e->node);
	unindex_entry(s, e);
}

static inline struct entry *
entry_of(const struct admit_policy_node *n)
{
	return (struct entry *)((char *)n - offsetof(struct entry, node));
}

/* ---- the policy's hooks (policy.h), with the shard's mutex held ---------- */

static uint64_t
op_weight(void *ctx, const struct admit_policy_node *n)
{
	const struct shard *s = ctx;

	return weight_of(s->c, entry_of(n));
}

static bool
op_over(void *ctx)
{
	return over_capacity(ctx);
}

/* TinyLFU's contest, on the hashes the index already holds. */
static bool
contest(void *ctx, const struct admit_policy_node *cand,
        const struct admit_policy_node *victim)
{
	const struct shard *s = ctx;

	return admit_tinylfu_admit_hash(s->c->tlfu, entry_of(cand)->hash,
	                                entry_of(victim)->hash);
}

/* The policy dropped n for room: out of the index, freed after a grace
 * period; a set learns that its own entry went. */
static void
op_drop(void *ctx, struct admit_policy_node *n, bool rejected)
{
	struct shard *s = ctx;
	struct entry *e = entry_of(n);

	(void)rejected;
	if (e == s->fresh)
		s->fresh = NULL;
	unindex_entry(s, e);
}

static const struct admit_policy_ops shard_ops = {
	.weight = op_weight, .over = op_over, .admit = contest, .drop = op_drop,
};

/* The policy configuration a shard starts with. */
static struct admit_policy_config
start_config(enum admit_lru_policy policy, unsigned window_percent)
{
	switch (policy) {
	case ADMIT_LRU_PLAIN:
		return (struct admit_policy_config){ 100, 0, false, false };
	case ADMIT_LRU_TINYLFU:
		return (struct admit_policy_config){ 0, 0, true, false };
	case ADMIT_LRU_ADAPTIVE:
		return admit_minisim_configs[ADMIT_MINISIM_START];
	default:
		return (struct admit_policy_config){ window_percent,
		                                     PROTECTED_PERCENT, true, false };
	}
}

/* ADAPTIVE: applies the configuration the simulation chose last, if the
 * shard does not run it yet.  With the mutex held. */
static void
follow_config(const struct admit_lru *c, struct shard *s)
{
	unsigned k;

	if (!c->sim)
		return;
	/* relaxed: an index into a constant table; a shard that reads an
	 * older one applies the newer at its next locked call. */
	k = atomic_load_explicit(&c->config, memory_order_relaxed);
	if (k != s->config) {
		s->config = k;
		admit_policy_configure(&s->pol, &admit_minisim_configs[k]);
	}
}

/* A mini cache's contest: on the real sketch when it runs in the mini
 * cache's mode (the mini cache of the current configuration then sees the
 * very estimates the shards see), else on the simulation's own. */
static bool
sim_admit(void *ctx, bool steady, uint64_t cand, uint64_t victim)
{
	const struct admit_lru *c = ctx;
	/* relaxed: see follow_config(); the simulation's mutex orders it
	 * with simulate()'s store anyway. */
	unsigned k = atomic_load_explicit(&c->config, memory_order_relaxed);
	struct admit_tinylfu *t = admit_minisim_configs[k].steady == steady
	                          ? c->tlfu : c->sim_tlfu[steady];

	return admit_tinylfu_admit_hash(t, cand, victim);
}

/* Feeds a sampled request to the simulation, unless another thread is in
 * it: then the sample is lost, which only thins the evidence.  w is the
 * weight of a set, 0 for a get; recorded tells whether the real cache
 * counted this request in its sketch (a hit or a set), so the simulation's
 * sketches count what the real one does.  Not under a shard mutex. */
static void
simulate_sampled(struct admit_lru *c, uint64_t h, uint64_t w, bool recorded)
{
	if (pthread_mutex_trylock(&c->sim_mu) != 0)
		return;
	if (recorded) {
		admit_tinylfu_record_hash(c->sim_tlfu[0], h);
		admit_tinylfu_record_hash(c->sim_tlfu[1], h);
	}
	if (w) {
		admit_minisim_set(c->sim, h, w);
	} else {
		unsigned k = admit_minisim_get(c->sim, h);

		/* Stored only when it changes: every shard's locked calls read
		 * it, and a store each sample would bounce its line between
		 * the cores.  relaxed: see follow_config(). */
		if (k != atomic_load_explicit(&c->config, memory_order_relaxed)) {
			atomic_store_explicit(&c->config, k, memory_order_relaxed);
			admit_tinylfu_set_steady(c->tlfu,
			                         admit_minisim_configs[k].steady);
		}
	}
	pthread_mutex_unlock(&c->sim_mu);
}

/* The sample test inline: most requests are not sampled (above
 * ADMIT_MINISIM_MAX_ENTRIES entries) and must cost no call. */
static inline void
simulate(struct admit_lru *c, uint64_t h, uint64_t w, bool recorded)
{
	if (c->sim && admit_minisim_sample(h, c->sim_threshold))
		simulate_sampled(c, h, w, recorded);
}

/* The simulation's two sketches, for its mini caches' entries and its
 * share of the requests: the real sketch's settings scaled by the sample
 * rate (a sample of W records of every key is W x rate records of the
 * sampled ones).  False when out of memory. */
static bool
sim_sketches(struct admit_lru *c, const struct admit_tinylfu_config *user,
             uint64_t entries)
{
	struct admit_tinylfu_config tc = { 0 };
	uint64_t n = admit_minisim_entries(c->sim);

	if (user)
		tc = *user;
	if (tc.sample_size) {
		tc.sample_size = (uint64_t)((double)tc.sample_size * (double)n /
		                            (double)entries + 0.5);
		if (tc.sample_size == 0)
			tc.sample_size = 1;
	}
	tc.cache_capacity = n;
	for (unsigned i = 0; i < 2; i++) {
		tc.seed = admit_mix64(c->seed + i + 1);
		if (admit_tinylfu_new_config(&tc, &c->sim_tlfu[i]) != ADMIT_OK)
			return false;
	}
	admit_tinylfu_set_steady(c->sim_tlfu[1], true);
	return true;
}

/* One hash per request serves the index and the sketch alike. */
static inline uint64_t
hash_key(const struct admit_lru *c, const void *key, size_t klen)
{
	return c->tlfu ? admit_tinylfu_hash(c->tlfu, key, klen)
	               : admit_hash(key, klen, c->seed);
}

/* ---- the ring of buffered gets ------------------------------------------ */

/* Which of a shard's rings this thread pushes to: handed out round-robin
 * on a thread's first push.  A placement hint only (any ring is correct),
 * so one process-wide counter serves every cache. */
static _Atomic unsigned next_ring;
static _Thread_local unsigned thread_ring;  /* index + 1; 0 = not chosen */

static inline struct ring *
my_ring(struct shard *s)
{
	if (!thread_ring)
		/* relaxed: a distinct-enough number is all that is needed. */
		thread_ring = atomic_fetch_add_explicit(&next_ring, 1,
		                                        memory_order_relaxed) %
		              RINGS + 1;
	return &s->ring[thread_ring - 1];
}

/* Queues an event (struct slot); false when the ring is full.  Lock-free:
 * a failed CAS means another get took the slot. */
static bool
ring_push(struct ring *r, uintptr_t ev)
{
	/* relaxed: a slot's seq, not tail, hands the event over; tail only
	 * picks the slot. */
	uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);

	for (;;) {
		struct slot *sl = &r->slot[pos & (ADMIT_LRU_RING - 1)];
		/* acquire: pairs with the release in drain() that freed the
		 * slot, so its last reader is done with it. */
		uint64_t seq = atomic_load_explicit(&sl->seq, memory_order_acquire);

		if (seq == pos) {
			/* relaxed: as the load of tail above. */
			if (atomic_compare_exchange_weak_explicit(&r->tail, &pos, pos + 1,
			                                          memory_order_relaxed,
			                                          memory_order_relaxed)) {
				/* relaxed: published by the release below. */
				atomic_store_explicit(&sl->ev, ev, memory_order_relaxed);
				/* release: pairs with the acquire in drain(). */
				atomic_store_explicit(&sl->seq, pos + 1, memory_order_release);
				return true;
			}
		} else if ((int64_t)(seq - pos) < 0) {
			return false;  /* the slot still holds the event of a lap ago */
		} else {
			/* relaxed: as above. */
			pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
		}
	}
}

/*
 * Whether a hit on a key of hash h is recorded in TinyLFU by the get itself
 * rather than by the drain that applies its event: only for a key the
 * miniature simulation samples.  The mini caches' contests compare sampled
 * keys only, and they run in simulate(), outside any shard: recorded in
 * get, those keys' hits are all counted when the contests read them, as
 * before, so the simulation's evidence is what it was (below a capacity of
 * ADMIT_MINISIM_MAX_ENTRIES every key is sampled).  Deferring them too cost
 * loop at 750 entries 0.26 point in cache_sim; deferring a set's record
 * past the simulation's contest as well cost it 7.6 (doc/design.md §7).
 * The shards' own contests need no such care: both keys of one belong to
 * the shard, whose drain comes first.
 */
static inline bool
recorded_in_get(const struct admit_lru *c, uint64_t h)
{
	return c->sim && admit_minisim_sample(h, c->sim_threshold);
}

/* What the old locked get did after finding (or not finding) its key. */
static void
apply(struct shard *s, struct entry *e)
{
	if (e && !e->dead)
		admit_policy_hit(&s->pol, &e->node);
	if (e)
		s->st.hits++;
	else
		s->st.misses++;
}

/* A hit's TinyLFU record, unless its get made it.  A dead entry's hash is
 * still readable: no slot names a freed entry (reclaim()). */
static inline bool
record_due(const struct admit_lru *c, const struct entry *e)
{
	return e && c->tlfu && !recorded_in_get(c, e->hash);
}

/*
 * Applies the buffered gets in order, up to the first slot still being
 * written, and makes their hits' TinyLFU records (BP-Wrapper: Ding, Jiang,
 * Zhang, ICDE 2009): one thread, holding the mutex, records a ring's worth
 * of hits where every get used to record its own, so the sketch's lines
 * stay with the draining thread instead of bouncing between the getters.
 * In two passes over up to a ring's worth of events: the first takes them
 * out of the ring and starts the cache misses of all of them at once (the
 * entries' list neighbours, the sketch's lines), the second applies them
 * in order.  With the mutex held.
 */
static void
drain_ring(struct shard *s, struct ring *r)
{
	struct admit_lru *c = s->c;
	uintptr_t ev[ADMIT_LRU_RING];
	size_t n;

	do {
		for (n = 0; n < ADMIT_LRU_RING; n++) {
			struct slot *sl = &r->slot[r->head & (ADMIT_LRU_RING - 1)];
			struct entry *e;
			uintptr_t x;

			/* acquire: pairs with the release in ring_push(). */
			if (atomic_load_explicit(&sl->seq, memory_order_acquire) !=
			    r->head + 1)
				break;
			/* relaxed: ordered by the acquire just above. */
			x = atomic_load_explicit(&sl->ev, memory_order_relaxed);
			/* release: pairs with the acquire in ring_push().  The
			 * entry stays allocated while the batch holding it
			 * waits for the head (reclaim() runs after us). */
			atomic_store_explicit(&sl->seq, r->head + ADMIT_LRU_RING,
			                      memory_order_release);
			r->head++;
			ev[n] = x;
			e = (struct entry *)(x & ~EV_RECORD);
			if (e && !(x & EV_RECORD) && !e->dead) {
				__builtin_prefetch(e->node.prev, 1);
				__builtin_prefetch(e->node.next, 1);
			}
			if (record_due(c, e))
				tinylfu_prefetch_hash(c->tlfu, e->hash);
		}
		for (size_t i = 0; i < n; i++) {
			struct entry *e = (struct entry *)(ev[i] & ~EV_RECORD);

			if (!(ev[i] & EV_RECORD))
				apply(s, e);
			if (record_due(c, e))
				admit_tinylfu_record_hash(c->tlfu, e->hash);
		}
	} while (n == ADMIT_LRU_RING);
}

/* Drains every ring of the shard.  With the mutex held. */
static void
drain(struct shard *s)
{
	for (unsigned k = 0; k < RINGS; k++)
		drain_ring(s, &s->ring[k]);
}

/* Takes the shard's mutex and brings it up to date: the buffered gets
 * applied, the freeable entries freed. */
static void
shard_lock(const struct admit_lru *c, struct shard *s)
{
	pthread_mutex_lock(&s->mu);
	drain(s);
	reclaim(s, false);
	follow_config(c, s);
}

/* The entries the cache will hold: its entry capacity, or for a byte
 * capacity alone a guess of entries of 4 x the per-entry overhead.  Sizes
 * the TinyLFU sketch and the default shard count. */
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
	struct admit_policy_config pc = start_config(c->policy, window_percent);
	size_t nbuckets;
	struct index *ix;

	s->c = c;
	s->max_entries = part(cfg->capacity, c->nshards, i);
	s->max_bytes = part(cfg->capacity_bytes, c->nshards, i);
	s->max_weight = c->by_bytes ? s->max_bytes : s->max_entries;
	s->config = ADMIT_MINISIM_START;
	admit_policy_init(&s->pol, &shard_ops, s, s->max_weight, !c->by_bytes,
	                  &pc);
	for (unsigned r = 0; r < RINGS; r++)
		for (uint64_t k = 0; k < ADMIT_LRU_RING; k++)
			atomic_init(&s->ring[r].slot[k].seq, k);
	for (nbuckets = 64; nbuckets < s->max_entries && nbuckets < ((size_t)1 << 30); )
		nbuckets *= 2;
	ix = index_new(c, nbuckets);
	if (!ix)
		return ADMIT_NOMEM;
	atomic_init(&s->index, ix);
	if (pthread_mutex_init(&s->mu, NULL) != 0) {
		admit_free(ix);
		return ADMIT_NOMEM;
	}
	return ADMIT_OK;
}

/* With every callback done: nothing else refers to the shard. */
static void
shard_destroy(struct shard *s)
{
	struct entry *e, *next;

	for (int k = 0; k < ADMIT_SEG_COUNT; k++) {
		struct admit_policy_node *n, *nn, *h = &s->pol.seg[k];

		for (n = h->next; n != h; n = nn) {
			nn = n->next;
			admit_free(entry_of(n));
		}
	}
	for (e = s->limbo; e; e = next) {
		next = e->limbo;
		admit_free(e);
	}
	reclaim(s, true);
	admit_wheel_free(s->wheel);
	admit_free(index_of(s));
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
	c->clock = cfg->clock;
	c->clock_arg = cfg->clock_arg;
	if (c->policy != ADMIT_LRU_PLAIN) {
		struct admit_tinylfu_config tc = { 0 };

		if (cfg->tinylfu)
			tc = *cfg->tinylfu;
		tc.cache_capacity = entries_of(cfg);
		tc.seed = c->seed ^ ADMIT_GOLDEN64;
		st = admit_tinylfu_new_config(&tc, &c->tlfu);
		if (st != ADMIT_OK)
			goto out;
		st = ADMIT_NOMEM;
	}
	atomic_init(&c->config, ADMIT_MINISIM_START);
	if (c->policy == ADMIT_LRU_ADAPTIVE) {
		/* The simulation is of the whole cache, unsharded: the
		 * configuration it picks is applied to every shard. */
		c->sim = admit_minisim_new(c->by_bytes ? cfg->capacity_bytes
		                                       : cfg->capacity,
		                           entries_of(cfg), sim_admit, c);
		if (!c->sim)
			goto out;
		c->sim_threshold = admit_minisim_threshold(c->sim);
		if (!sim_sketches(c, cfg->tinylfu, entries_of(cfg)) ||
		    pthread_mutex_init(&c->sim_mu, NULL) != 0) {
			admit_minisim_free(c->sim);
			c->sim = NULL;
			goto out;
		}
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
		admit_tinylfu_free(c->sim_tlfu[0]);
		admit_tinylfu_free(c->sim_tlfu[1]);
		if (c->sim) {
			admit_minisim_free(c->sim);
			pthread_mutex_destroy(&c->sim_mu);
		}
		admit_free(c);
	}
	return st;
}

void
admit_lru_free(struct admit_lru *c)
{
	if (!c)
		return;
	/* No callback queued, no barrier: a grace period saved. */
	if (atomic_load(&c->pending))
		admit_rcu_barrier();
	for (unsigned i = 0; i < c->nshards; i++)
		shard_destroy(&c->shards[i]);
	admit_table_free(c->shards, sizeof(*c->shards) * c->nshards);
	admit_tinylfu_free(c->tlfu);
	if (c->sim) {
		admit_minisim_free(c->sim);
		pthread_mutex_destroy(&c->sim_mu);
	}
	admit_tinylfu_free(c->sim_tlfu[0]);
	admit_tinylfu_free(c->sim_tlfu[1]);
	admit_free(c);
}

/* The get's bookkeeping once its lookup is done (e, or NULL for a miss):
 * queue the access, and when the ring is full apply it at once.  In the
 * read-side section: batch_ready() relies on every push
 * of an entry ending before the grace period does. */
static void
note_access(struct admit_lru *c, struct shard *s, struct entry *e)
{
	if (!ring_push(my_ring(s), (uintptr_t)e)) {
		/* As if pushed and drained at once. */
		shard_lock(c, s);
		apply(s, e);
		if (record_due(c, e))
			admit_tinylfu_record_hash(c->tlfu, e->hash);
		pthread_mutex_unlock(&s->mu);
	}
}

/* After the read-side section: the simulation's sample and, for a hit of
 * a sampled key, its TinyLFU record, after the sample as it always was
 * (recorded_in_get(); the other hits are recorded by apply()). */
static enum admit_status
get_done(struct admit_lru *c, uint64_t h, bool hit)
{
	simulate(c, h, 0, hit);
	if (!hit)
		return ADMIT_NOTFOUND;
	if (c->tlfu && recorded_in_get(c, h))
		admit_tinylfu_record_hash(c->tlfu, h);
	return ADMIT_OK;
}

enum admit_status
admit_lru_get_hashed(struct admit_lru *c, uint64_t h, const void *key,
                     size_t klen, void *buf, size_t bufsize, size_t *vlen)
{
	struct shard *s;
	struct entry *e;

	if (!c || !vlen || !admit_key_ok(key, klen) || (!buf && bufsize))
		return ADMIT_EINVAL;
	s = shard_of(c, h);
	admit_rcu_read_lock();
	e = lookup(s, h, key, klen);
	if (e && expired(c, e))
		e = NULL;  /* a miss at once; the wheel reclaims it */
	if (e) {
		*vlen = e->vlen;
		if (e->vlen > bufsize) {
			admit_rcu_read_unlock();
			return ADMIT_EBUFFER;
		}
		if (e->vlen)
			memcpy(buf, e->data + e->klen, e->vlen);
	}
	note_access(c, s, e);
	admit_rcu_read_unlock();
	return get_done(c, h, e != NULL);
}

static struct entry *entry_new(uint64_t h, const void *key, size_t klen,
                               size_t vlen, bool timer);
static bool set_locked(struct admit_lru *c, struct shard *s, struct entry *e,
                       struct entry *old, _Atomic(struct entry *) *p);

/* Copies a value given in parts (admit_lru_set_parts), one after another,
 * to dst. */
static void
copy_parts(unsigned char *dst, const struct admit_lru_part *parts, size_t nparts)
{
	for (size_t i = 0; i < nparts; i++) {
		if (parts[i].len)
			memcpy(dst, parts[i].data, parts[i].len);
		dst += parts[i].len;
	}
}

static enum admit_status set_entry(struct admit_lru *c, uint64_t h,
                                   const void *key, size_t klen,
                                   const struct admit_lru_part *parts,
                                   size_t nparts, size_t vlen,
                                   uint64_t expires_at);

enum admit_status
admit_lru_set_hashed(struct admit_lru *c, uint64_t h, const void *key,
                     size_t klen, const void *value, size_t vlen)
{
	struct admit_lru_part one = { value, vlen };

	if (!c || !admit_key_ok(key, klen) || (!value && vlen))
		return ADMIT_EINVAL;
	return set_entry(c, h, key, klen, &one, 1, vlen, 0);
}

/*
 * Set's work under the mutex: e (new, filled, unpublished) takes the place
 * of old (found through p), or is inserted at p when old is NULL; then the
 * bounds are restored.  Returns false when e itself was turned away.
 */
static bool
set_locked(struct admit_lru *c, struct shard *s, struct entry *e,
           struct entry *old, _Atomic(struct entry *) *p)
{
	size_t klen = e->klen, vlen = e->vlen;
	bool kept;

	if (old) {
		/* Take old's place in the index and in its list; readers that
		 * hold old still read old's value, whole. */
		/* relaxed: the mutex holder's own store. */
		atomic_init(&e->hnext, atomic_load_explicit(&old->hnext,
		                                            memory_order_relaxed));
		admit_rcu_publish(p, e);
		admit_policy_replace(&s->pol, &old->node, &e->node);
		s->bytes += charge_of(klen, vlen);
		s->bytes -= charge_of(old->klen, old->vlen);
		retire(s, old);
		s->fresh = e;
		admit_policy_hit(&s->pol, &e->node);
		/* A grown value may put the shard over capacity. */
		admit_policy_evict(&s->pol);
	} else {
		atomic_init(&e->hnext, NULL);
		admit_rcu_publish(p, e);
		s->entries++;
		s->bytes += charge_of(klen, vlen);
		s->fresh = e;
		admit_policy_insert(&s->pol, &e->node);
	}
	kept = s->fresh != NULL;
	s->fresh = NULL;
	maybe_grow(c, s);
	flush_limbo(c, s);
	return kept;
}

enum admit_status
admit_lru_delete_hashed(struct admit_lru *c, uint64_t h, const void *key,
                        size_t klen)
{
	struct shard *s;
	struct entry *e;

	if (!c || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	s = shard_of(c, h);
	shard_lock(c, s);
	e = find_live(c, s, h, key, klen, NULL);
	if (e) {
		remove_entry(s, e);
		flush_limbo(c, s);
	}
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

		shard_lock(c, s);
		expire_due(c, s);
		sum.hits += s->st.hits;
		sum.misses += s->st.misses;
		sum.admitted += s->pol.admitted;
		sum.rejected += s->pol.rejected;
		sum.evicted += s->pol.evicted;
		sum.expired += s->st.expired;
		sum.entries += s->entries;
		sum.bytes += s->bytes;
		sum.window += admit_policy_window(&s->pol);
		pthread_mutex_unlock(&s->mu);
	}
	if (c->tlfu) {
		struct admit_tinylfu_stats ts;

		admit_tinylfu_stats(c->tlfu, &ts);
		sum.filter_entries = ts.freq_entries;
		sum.filter_slots = ts.freq_slots;
	}
	if (c->sim) {
		pthread_mutex_lock(&c->sim_mu);
		sum.sim_bytes = admit_minisim_bytes(c->sim) +
		                admit_tinylfu_memory(c->sim_tlfu[0]) +
		                admit_tinylfu_memory(c->sim_tlfu[1]);
		sum.sim_switches = admit_minisim_switches(c->sim);
		pthread_mutex_unlock(&c->sim_mu);
	}
	*out = sum;
	return ADMIT_OK;
}

void
admit_test_lru_hold(struct admit_lru *c, const void *key, size_t klen, bool hold)
{
	struct shard *s = shard_of(c, hash_key(c, key, klen));

	if (hold)
		pthread_mutex_lock(&s->mu);
	else
		pthread_mutex_unlock(&s->mu);
}

/* ==== For embedders (issue 16): peek, get_with, expiry, compute, hashed ====
 *
 * Built on the internals above (lookup, find, the ring, set_locked,
 * remove_entry, simulate) and touching none of the policy core: an access
 * does to the lists and counters what apply() and set_locked() do, as for
 * get and set.  The edits above are the hooks: an expiry check in get,
 * find_live() and expire_due() in set and delete, untime() in retire().
 */

enum admit_status
admit_lru_peek(struct admit_lru *c, const void *key, size_t klen, void *buf,
               size_t bufsize, size_t *vlen)
{
	enum admit_status st = ADMIT_NOTFOUND;
	uint64_t h;
	struct entry *e;

	if (!c || !vlen || !admit_key_ok(key, klen) || (!buf && bufsize))
		return ADMIT_EINVAL;
	h = hash_key(c, key, klen);
	admit_rcu_read_lock();
	e = lookup(shard_of(c, h), h, key, klen);
	if (e && expired(c, e))
		e = NULL;
	if (e) {
		*vlen = e->vlen;
		st = e->vlen > bufsize ? ADMIT_EBUFFER : ADMIT_OK;
		if (st == ADMIT_OK && e->vlen)
			memcpy(buf, e->data + e->klen, e->vlen);
	}
	/* No ring push, no record: the read leaves no trace. */
	admit_rcu_read_unlock();
	return st;
}

enum admit_status
admit_lru_get_with_hashed(struct admit_lru *c, uint64_t h, const void *key,
                          size_t klen, admit_lru_reader_t fn, void *arg)
{
	struct shard *s;
	struct entry *e;

	if (!c || !fn || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	s = shard_of(c, h);
	admit_rcu_read_lock();
	e = lookup(s, h, key, klen);
	if (e && expired(c, e))
		e = NULL;
	if (e)
		fn(e->vlen ? e->data + e->klen : NULL, e->vlen, arg);
	note_access(c, s, e);
	admit_rcu_read_unlock();
	return get_done(c, h, e != NULL);
}

/* ---- expiry ----------------------------------------------------------------
 *
 * A timed entry carries a struct lru_timer after its data, in the same
 * allocation (untimed entries pay nothing); its time never changes once
 * the entry is published, so a get reads it like the value.  Each shard's
 * wheel holds its timed entries' timers, under the mutex; every set,
 * compute and stats of the shard first advances it to the clock and
 * removes what is due (admit_lru_expire does so for every shard), so an
 * expired entry's capacity goes back without a reader asking.  Reads check
 * the time themselves: an expired entry is a miss at once.
 */
struct lru_timer {
	struct admit_timer t;
	struct entry *e;                /* whose timer */
};

static inline size_t
timer_offset(size_t klen, size_t vlen)
{
	size_t a = alignof(struct lru_timer);

	return (offsetof(struct entry, data) + klen + vlen + a - 1) & ~(a - 1);
}

static inline struct lru_timer *
timer_of(const struct entry *e)
{
	return (struct lru_timer *)((char *)e + timer_offset(e->klen, e->vlen));
}

static uint64_t
now_of(const struct admit_lru *c)
{
	struct timespec ts;

	if (c->clock)
		return c->clock(c->clock_arg);
	/* Read on every hit of a timed entry: the coarse clock (a few ms
	 * resolution) costs a few ns where the precise one can cost a system
	 * call (bench/bench_lru_api: timed get). */
#ifdef CLOCK_MONOTONIC_COARSE
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
	clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Safe in a read-side section: timed and the time never change. */
static bool
expired(const struct admit_lru *c, const struct entry *e)
{
	return e->timed && timer_of(e)->t.when <= now_of(c);
}

/* From retire(): a timed entry leaving the cache leaves its wheel. */
static void
untime(struct entry *e)
{
	if (e->timed)
		admit_wheel_remove(&timer_of(e)->t);
}

struct expiry {
	struct admit_lru *c;
	struct shard *s;
};

static void
expire_one(struct admit_timer *t, void *arg)
{
	struct expiry *x = arg;

	remove_entry(x->s, caa_container_of(t, struct lru_timer, t)->e);
	x->s->st.expired++;
}

/* With the mutex held: removes the shard's entries whose time has come (to
 * within the wheel's 67 ms tick). */
static void
expire_due(struct admit_lru *c, struct shard *s)
{
	struct expiry x = { c, s };

	if (s->wheel && admit_wheel_advance(s->wheel, now_of(c), expire_one, &x))
		flush_limbo(c, s);
}

/* find() for writers, but an expired entry is removed on the way and the
 * key reported absent (*where then the end of its chain). */
static struct entry *
find_live(struct admit_lru *c, struct shard *s, uint64_t h, const void *key,
          size_t klen, _Atomic(struct entry *) **where)
{
	struct entry *e = find(index_of(s), h, key, klen, where);

	if (e && expired(c, e)) {
		remove_entry(s, e);
		s->st.expired++;
		e = find(index_of(s), h, key, klen, where);
	}
	return e;
}

/* Makes the unpublished e expire at when (not 0), in the shard's wheel
 * (made on first use); false when out of memory. */
static bool
time_entry(struct admit_lru *c, struct shard *s, struct entry *e, uint64_t when)
{
	struct lru_timer *lt = timer_of(e);

	if (!s->wheel && !(s->wheel = admit_wheel_new(now_of(c))))
		return false;
	e->timed = true;
	lt->e = e;
	lt->t.prev = lt->t.next = NULL;
	lt->t.when = when;
	admit_wheel_add(s->wheel, &lt->t);
	return true;
}

/* A new unpublished entry for key with room for a vlen-byte value and, if
 * timer, a timer; NULL when out of memory.  The caller has checked the
 * sizes. */
static struct entry *
entry_new(uint64_t h, const void *key, size_t klen, size_t vlen, bool timer)
{
	struct entry *e = admit_malloc(timer ? timer_offset(klen, vlen) +
	                                       sizeof(struct lru_timer)
	                                     : sizeof(*e) + klen + vlen);

	if (!e)
		return NULL;
	e->hash = h;
	e->klen = klen;
	e->vlen = vlen;
	e->dead = false;
	e->timed = false;
	if (klen)
		memcpy(e->data, key, klen);
	return e;
}

uint64_t
admit_lru_now(const struct admit_lru *c)
{
	return c ? now_of(c) : 0;
}

/* Every set: the vlen bytes of parts, expiring at expires_at (0: never);
 * the caller checked the arguments. */
static enum admit_status
set_entry(struct admit_lru *c, uint64_t h, const void *key, size_t klen,
          const struct admit_lru_part *parts, size_t nparts, size_t vlen,
          uint64_t expires_at)
{
	struct shard *s;
	struct entry *e, *old;
	_Atomic(struct entry *) *p;
	bool kept;

	if (klen > SIZE_MAX / 4 || vlen > SIZE_MAX / 4)
		return ADMIT_ETOOBIG;
	s = shard_of(c, h);
	if (s->max_bytes && charge_of(klen, vlen) > s->max_bytes)
		return ADMIT_ETOOBIG;
	if (expires_at && expires_at <= now_of(c)) {
		/* Stored and expired at once: the key is gone. */
		admit_lru_delete_hashed(c, h, key, klen);
		return ADMIT_OK;
	}
	e = entry_new(h, key, klen, vlen, expires_at != 0);
	if (!e)
		return ADMIT_NOMEM;
	copy_parts(e->data + klen, parts, nparts);
	/* Before the contest, so the candidate's own request counts: a key
	 * the simulation samples before its contests there, as before every
	 * contest; any other after the drain, as compute records it, so that
	 * get-then-set and compute keep one order of records (the drained
	 * hits first). */
	if (c->tlfu && recorded_in_get(c, h))
		admit_tinylfu_record_hash(c->tlfu, h);
	/* The weight, for byte capacities; and a key a mini cache turned
	 * away at the get that missed gets a second contest there, as the
	 * measured constants assume (doc/hit-ratio.md). */
	simulate(c, h, c->by_bytes ? charge_of(klen, vlen) : 1, true);

	shard_lock(c, s);
	/* The wheel is advanced before e joins it: advancing may remove what
	 * is due, and e, not yet in the index or a list, must not be (its
	 * time can pass while this call runs). */
	expire_due(c, s);
	if (expires_at && !time_entry(c, s, e, expires_at)) {
		pthread_mutex_unlock(&s->mu);
		admit_free(e);
		return ADMIT_NOMEM;
	}
	if (c->tlfu && !recorded_in_get(c, h))
		admit_tinylfu_record_hash(c->tlfu, h);
	old = find_live(c, s, h, key, klen, &p);
	kept = set_locked(c, s, e, old, p);
	pthread_mutex_unlock(&s->mu);
	return kept ? ADMIT_OK : ADMIT_REJECTED;
}

enum admit_status
admit_lru_set_expiring_hashed(struct admit_lru *c, uint64_t h, const void *key,
                              size_t klen, const void *value, size_t vlen,
                              uint64_t expires_at)
{
	struct admit_lru_part one = { value, vlen };

	if (!c || !admit_key_ok(key, klen) || (!value && vlen))
		return ADMIT_EINVAL;
	return set_entry(c, h, key, klen, &one, 1, vlen, expires_at);
}

enum admit_status
admit_lru_set_parts_hashed(struct admit_lru *c, uint64_t h, const void *key,
                           size_t klen, const struct admit_lru_part *parts,
                           size_t nparts, uint64_t expires_at)
{
	size_t vlen = 0;

	if (!c || !admit_key_ok(key, klen) || (!parts && nparts))
		return ADMIT_EINVAL;
	for (size_t i = 0; i < nparts; i++)
		if (!parts[i].data && parts[i].len)
			return ADMIT_EINVAL;
	/* The sum, without wrapping: past SIZE_MAX / 4 is too big anyway. */
	for (size_t i = 0; i < nparts; i++) {
		if (parts[i].len > SIZE_MAX / 4 - vlen)
			return ADMIT_ETOOBIG;
		vlen += parts[i].len;
	}
	return set_entry(c, h, key, klen, parts, nparts, vlen, expires_at);
}

enum admit_status
admit_lru_set_parts(struct admit_lru *c, const void *key, size_t klen,
                    const struct admit_lru_part *parts, size_t nparts,
                    uint64_t expires_at)
{
	if (!c || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	return admit_lru_set_parts_hashed(c, hash_key(c, key, klen), key, klen,
	                                  parts, nparts, expires_at);
}

enum admit_status
admit_lru_set_expiring(struct admit_lru *c, const void *key, size_t klen,
                       const void *value, size_t vlen, uint64_t expires_at)
{
	if (!c || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	return admit_lru_set_expiring_hashed(c, hash_key(c, key, klen), key, klen,
	                                     value, vlen, expires_at);
}

enum admit_status
admit_lru_expire(struct admit_lru *c)
{
	if (!c)
		return ADMIT_EINVAL;
	for (unsigned i = 0; i < c->nshards; i++) {
		struct shard *s = &c->shards[i];

		shard_lock(c, s);
		expire_due(c, s);
		pthread_mutex_unlock(&s->mu);
	}
	return ADMIT_OK;
}

/* ---- compute ------------------------------------------------------------- */

/* The TinyLFU record of compute's hit on e, which compute applies itself
 * under the mutex: queued behind the gets already in the ring, to be made
 * by the drain that would make a get's (so that compute and get-then-set
 * leave one sketch).  Mutex held, e live; its batch cannot be freed before
 * the head passes this slot, as for a get's push. */
static void
defer_record(struct admit_lru *c, struct shard *s, struct entry *e)
{
	if (ring_push(my_ring(s), (uintptr_t)e | EV_RECORD))
		return;
	drain(s);  /* full: what a get would find drained */
	if (!ring_push(my_ring(s), (uintptr_t)e | EV_RECORD))
		admit_tinylfu_record_hash(c->tlfu, e->hash);
}

/* admit_lru_compute's state: the public part first, so that
 * admit_lru_update_alloc finds the rest from the pointer fn was given. */
struct update {
	struct admit_lru_update up;
	struct shard *s;
	uint64_t h;
	const void *key;
	size_t klen;
	struct entry *e;                /* the new entry, never published */
	enum admit_status st;           /* of the last alloc; EINVAL: none */
};

void *
admit_lru_update_alloc(struct admit_lru_update *up, size_t vlen)
{
	struct update *u;
	struct entry *e;

	if (!up)
		return NULL;
	u = caa_container_of(up, struct update, up);
	admit_free(u->e);
	u->e = NULL;
	u->st = ADMIT_ETOOBIG;
	if (u->klen > SIZE_MAX / 4 || vlen > SIZE_MAX / 4 ||
	    (u->s->max_bytes && charge_of(u->klen, vlen) > u->s->max_bytes))
		return NULL;
	u->st = ADMIT_NOMEM;
	/* With room for a timer: the updater may set an expiry after. */
	e = entry_new(u->h, u->key, u->klen, vlen, true);
	if (!e)
		return NULL;
	u->e = e;
	u->st = ADMIT_OK;
	return e->data + u->klen;
}

enum admit_status
admit_lru_compute_hashed(struct admit_lru *c, uint64_t h, const void *key,
                         size_t klen, admit_lru_updater_t fn, void *arg)
{
	struct update u;
	struct shard *s;
	_Atomic(struct entry *) *p;
	struct entry *old;
	enum admit_lru_verdict v;
	enum admit_status st = ADMIT_OK;
	bool recorded;

	if (!c || !fn || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	u = (struct update){
		.s = shard_of(c, h), .h = h, .key = key, .klen = klen,
		.st = ADMIT_EINVAL,
	};
	s = u.s;

	shard_lock(c, s);
	expire_due(c, s);
	old = find_live(c, s, h, key, klen, &p);
	u.up.found = old != NULL;
	u.up.old = old && old->vlen ? old->data + old->klen : NULL;
	u.up.old_len = old ? old->vlen : 0;
	u.up.old_expires = old && old->timed ? timer_of(old)->t.when : 0;
	u.up.expires = u.up.old_expires;
	v = fn(&u.up, arg);
	if (v == ADMIT_LRU_STORE && u.st == ADMIT_OK && u.up.expires) {
		if (u.up.expires <= now_of(c))
			v = ADMIT_LRU_REMOVE;  /* stored and expired at once */
		else if (!time_entry(c, s, u.e, u.up.expires))
			u.st = ADMIT_NOMEM;
	}
	/* One access, whatever the verdict: one count, one record, in the
	 * order of a get then a set (a miss is counted before the insertion,
	 * a hit after its move). */
	if (!old)
		s->st.misses++;
	recorded = old || (v == ADMIT_LRU_STORE && u.st == ADMIT_OK);
	if (c->tlfu && old && !recorded_in_get(c, h))
		defer_record(c, s, old);
	else if (c->tlfu && recorded)
		admit_tinylfu_record_hash(c->tlfu, h);
	if (v == ADMIT_LRU_STORE && u.st == ADMIT_OK) {
		/* Replacing old also moves it, as a hit does. */
		st = set_locked(c, s, u.e, old, p) ? ADMIT_OK : ADMIT_REJECTED;
		u.e = NULL;
	} else if (v == ADMIT_LRU_REMOVE) {
		if (old) {
			remove_entry(s, old);
			flush_limbo(c, s);
		}
	} else {
		if (v != ADMIT_LRU_KEEP)
			st = v == ADMIT_LRU_STORE ? u.st : ADMIT_EINVAL;
		if (old)
			admit_policy_hit(&s->pol, &old->node);
	}
	if (old)
		s->st.hits++;
	pthread_mutex_unlock(&s->mu);
	admit_free(u.e);
	simulate(c, h, 0, recorded);  /* one access: the mini caches see a get */
	return st;
}

enum admit_status
admit_lru_compute(struct admit_lru *c, const void *key, size_t klen,
                  admit_lru_updater_t fn, void *arg)
{
	if (!c || !fn || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	return admit_lru_compute_hashed(c, hash_key(c, key, klen), key, klen, fn,
	                                arg);
}

/* ---- the unhashed calls: the library's hash, then the hashed call ---- */

uint64_t
admit_lru_hash(const struct admit_lru *c, const void *key, size_t klen)
{
	if (!c || !admit_key_ok(key, klen))
		return 0;
	return hash_key(c, key, klen);
}

enum admit_status
admit_lru_get(struct admit_lru *c, const void *key, size_t klen, void *buf,
              size_t bufsize, size_t *vlen)
{
	if (!c || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	return admit_lru_get_hashed(c, hash_key(c, key, klen), key, klen, buf,
	                            bufsize, vlen);
}

enum admit_status
admit_lru_get_with(struct admit_lru *c, const void *key, size_t klen,
                   admit_lru_reader_t fn, void *arg)
{
	if (!c || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	return admit_lru_get_with_hashed(c, hash_key(c, key, klen), key, klen,
	                                 fn, arg);
}

enum admit_status
admit_lru_set(struct admit_lru *c, const void *key, size_t klen,
              const void *value, size_t vlen)
{
	if (!c || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	return admit_lru_set_hashed(c, hash_key(c, key, klen), key, klen, value,
	                            vlen);
}

enum admit_status
admit_lru_delete(struct admit_lru *c, const void *key, size_t klen)
{
	if (!c || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	return admit_lru_delete_hashed(c, hash_key(c, key, klen), key, klen);
}
