/*
 * shard.c - one admit_lru shard: its maintenance, the drain's application
 * of buffered reads, the policy's hooks, and the locked changes the public
 * operations make (shard.h).
 *
 * Ordering.  Readers take no lock: they find entries through the index
 * under RCU and queue their accesses in the read buffer.  Everything else
 * here runs under the shard mutex, which orders it; what readers see is
 * published by the index (index.h), and an entry is freed only when no
 * reader or buffered event can name it (reclaim.h).
 *
 * No read's event is dropped (a full ring makes its read apply the event
 * itself, after a drain of its ring), and one thread's events are in one
 * ring, drained in order before any locked operation of that thread: a
 * writing call drains its caller's ring (shard_lock_mine), a call that
 * reports on every thread's reads (statistics, walks) every ring
 * (shard_lock), and each reader its own at every half ring.  A read
 * whose hit is quiet (policy.h) queues none: it is counted, not moved or
 * recorded, by the rule the policy core applies to every hit.  The drain
 * makes the hits' TinyLFU records (BP-Wrapper: one thread records a batch,
 * its sketch lines prefetched together, rather than every reader its own),
 * but for the keys the adaptation watches, whose records are their
 * callers' (adapt.h).  A shard's contests compare two of its keys, so they
 * follow every earlier hit of both by the contesting thread, and other
 * threads' hits but for the half ring each may hold (as Caffeine's read
 * buffers, drained when its maintenance gets to them).

 * Policy (Einziger, Eden, Friedman, Manes, "Adaptive Software Cache
 * Management", Middleware 2018; Caffeine's BoundedLocalCache): policy.c,
 * single-threaded, run here under the mutex.  New keys enter the window;
 * its overflow contests probation's LRU victim; a probation hit is
 * promoted to protected.  Plain LRU is a window of everything; LRU +
 * TinyLFU a window of 0 and no protected segment.
 */
#include "config.h"

#include <string.h>

#include "cache/shard.h"
#include "hash.h"
#include "minisim.h"

#define PROTECTED_PERCENT 80        /* protected share of main (Caffeine) */

/* A buffered event: a read's hit that was not quiet (the entry), or, the
 * entry's address | EV_RECORD, a hit a locked call applied itself whose
 * TinyLFU record waits its turn among the reads'; its arg is the key's
 * hash, as the request gave it.  A read's miss and its quiet hit are only
 * counted (shard_note_miss, shard_note_quiet). */
#define EV_RECORD ((uintptr_t)1)
_Static_assert(_Alignof(struct entry) > EV_RECORD, "EV_RECORD is a free bit");

static inline uint64_t
weight_of(const struct admit_lru *c, const struct entry *e)
{
	return c->by_bytes ? admit_entry_charge(admit_entry_klen(e), e->vlen) : 1;
}

static inline bool over_capacity(const struct shard *s) ADMIT_REQUIRES(s->mu);
static inline bool
over_capacity(const struct shard *s)
{
	return (s->max_entries && s->entries > s->max_entries) ||
	       (s->max_bytes && s->bytes > s->max_bytes);
}

/* ---- the drain ------------------------------------------------------------ */

/* Whether the drain makes the TinyLFU record of a hit on e.  A dead
 * entry is still readable: no slot names a freed entry. */
static inline bool
drain_records(const struct admit_lru *c, const struct entry *e)
{
	return e && c->sketch && !admit_entry_caller_records(e);
}

/* Applies n (at most ADMIT_READBUF_SLOTS) events in order: a first pass
 * starts the cache misses of the hits' list neighbours and gathers the
 * records (the hashes the events carry: the key is not hashed again),
 * whose sketch lines are then requested; a second pass applies the hits
 * and misses while those lines arrive; then the records are made, in the
 * events' order.  The two kinds commute: a hit's move reads no count, a
 * record no list. */
static void apply_events(void *ctx, const uintptr_t *ev, const uint64_t *arg,
                         size_t n) ADMIT_NO_TS;
static void
apply_events(void *ctx, const uintptr_t *ev, const uint64_t *arg, size_t n)
{
	struct shard *s = ctx;
	struct admit_lru *c = s->c;
	uint64_t h[ADMIT_READBUF_SLOTS];
	size_t nrec = 0;

	for (size_t i = 0; i < n; i++) {
		struct entry *e = (struct entry *)(ev[i] & ~EV_RECORD);

		if (e && !(ev[i] & EV_RECORD) && !e->dead &&
		    !admit_policy_quiet(&s->pol, &e->node)) {
			__builtin_prefetch(e->node.prev, 1);
			__builtin_prefetch(e->node.next, 1);
		}
		if (drain_records(c, e))
			h[nrec++] = arg[i];
	}
	if (nrec)
		admit_freqsketch_prepare(c->sketch, h, nrec);
	for (size_t i = 0; i < n; i++) {
		struct entry *e = (struct entry *)ev[i];

		if (ev[i] & EV_RECORD)
			continue;
		if (!e->dead)
			admit_policy_hit(&s->pol, &e->node);
		s->st.hits++;
	}
	if (nrec)
		admit_freqsketch_record_prepared(c->sketch, h, nrec);
}

_Static_assert(ADMIT_READBUF_SLOTS <= ADMIT_FREQSKETCH_BATCH,
               "a drained batch's records are one sketch batch");

static void drain_locked(struct shard *s) ADMIT_REQUIRES(s->mu);
static void
drain_locked(struct shard *s)
{
	admit_readbuf_drain(&s->rb, apply_events, s);
}

/* ---- maintenance ---------------------------------------------------------- */

static void expire_one(void *ctx, struct entry *e) ADMIT_NO_TS;
static void
expire_one(void *ctx, struct entry *e)
{
	struct shard *s = ctx;

	shard_remove_locked(s, e, ADMIT_LRU_EXPIRED);
	s->st.expired++;
}

/* Batches of dead entries that may wait on other threads' rings before a
 * drain of the caller's ring drains them all: what bounds the garbage an
 * idle reader's half-filled ring can hold back. */
#define WAITING_BATCHES 4

/* Configuration k of the adaptation as this cache runs it.  Where the
 * simulation samples the keys (above ADMIT_MINISIM_MAX_ENTRIES entries),
 * the exact shadows are run with quiet hits (policy.h): there the shadow
 * is an estimate from a sample already, and an exact real cache would
 * make every hit a drained event. */
static struct admit_policy_config
adaptive_config(const struct admit_lru *c, unsigned k)
{
	struct admit_policy_config pc = admit_minisim_configs[k];

	if (c->adapt && c->adapt->watch != UINT64_MAX)
		pc.exact = false;
	return pc;
}

/* The maintenance: the drain of every ring (of ring only, if not NULL, but
 * for WAITING_BATCHES batches held back by the others), then the rest. */
static void maintain_locked(struct shard *s, struct admit_readbuf_ring *ring)
	ADMIT_REQUIRES(s->mu);
static void
maintain_locked(struct shard *s, struct admit_readbuf_ring *ring)
{
	struct admit_lru *c = s->c;

	if (ring)
		admit_readbuf_drain_ring(ring, apply_events, s);
	else
		drain_locked(s);
	if (admit_reclaim_collect_locked(&s->rec) >= WAITING_BATCHES && ring) {
		drain_locked(s);
		admit_reclaim_collect_locked(&s->rec);
	}
	if (c->adapt) {
		unsigned k = c->adapt->ops->current(c->adapt);

		if (k != s->config) {
			struct admit_policy_config pc = adaptive_config(c, k);

			s->config = k;
			admit_policy_configure(&s->pol, &pc);
		}
	}
	if (admit_expiry_advance_locked(&s->exp, &c->clock, expire_one, s))
		admit_reclaim_flush_locked(&s->rec);
	if (over_capacity(s))
		admit_policy_evict(&s->pol);
}

void
shard_lock(struct shard *s)
{
	admit_mutex_lock(&s->mu);
	maintain_locked(s, NULL);
}

void
shard_lock_mine(struct shard *s, uint64_t h)
{
	admit_mutex_lock(&s->mu);
	admit_index_prefetch_locked(&s->ix, h);
	if (s->c->sketch)
		admit_freqsketch_prefetch(s->c->sketch, h);
	/* The other rings' slots are their owners' lines, which a drain here
	 * would pull to this core and its owner pull back at its next push;
	 * each owner drains its own at its half ring. */
	maintain_locked(s, admit_readbuf_mine(&s->rb));
}

void
shard_try_maintain(struct shard *s)
{
	if (!admit_mutex_trylock(&s->mu))
		return;  /* its holder's maintenance or unlock is under way */
	maintain_locked(s, admit_readbuf_mine(&s->rb));
	admit_mutex_unlock(&s->mu);
}

/* The ring was full: as if pushed and drained at once. */
void
shard_note_access_full(struct shard *s, struct entry *e, uint64_t h)
{
	uintptr_t ev = (uintptr_t)e;

	shard_lock_mine(s, h);
	apply_events(s, &ev, &h, 1);
	shard_unlock(s);
}

void
shard_record_locked(struct shard *s, uint64_t h, struct entry *e)
{
	struct admit_lru *c = s->c;
	uintptr_t ev = (uintptr_t)e | EV_RECORD;

	if (!c->sketch)
		return;
	if (!e || admit_adapt_caller_records(c->adapt, h)) {
		admit_freqsketch_record(c->sketch, h);
		return;
	}
	/* e is live: its batch cannot be freed before the head passes this
	 * slot, as for a read's push. */
	if (admit_readbuf_push_mine(&s->rb, ev, h))
		return;
	/* full: what a read would find drained */
	admit_readbuf_drain_ring(admit_readbuf_mine(&s->rb), apply_events, s);
	if (!admit_readbuf_push_mine(&s->rb, ev, h))
		admit_freqsketch_record(c->sketch, h);
}

/* ---- changes under the mutex ---------------------------------------------- */

/* Unlinks e (already out of the policy's lists) from the index; frees it
 * after a grace period. */
static void unindex_locked(struct shard *s, struct entry *e,
                           enum admit_lru_cause cause) ADMIT_REQUIRES(s->mu);
static void
unindex_locked(struct shard *s, struct entry *e, enum admit_lru_cause cause)
{
	admit_index_remove_locked(&s->ix, e);
	s->entries--;
	s->bytes -= admit_entry_charge(admit_entry_klen(e), e->vlen);
	admit_expiry_remove_locked(e);
	shard_gone_locked(s, e, cause);
}

void
shard_remove_locked(struct shard *s, struct entry *e, enum admit_lru_cause cause)
{
	admit_policy_remove(&s->pol, &e->node);
	unindex_locked(s, e, cause);
}

struct entry *
shard_find_live_locked(struct shard *s, uint64_t h, const void *key,
                       size_t klen, _Atomic uintptr_t **where)
{
	struct entry *e = admit_index_find_locked(&s->ix, h, key, klen, where);

	if (e && admit_expiry_expired(&s->c->clock, e)) {
		shard_remove_locked(s, e, ADMIT_LRU_EXPIRED);
		s->st.expired++;
		e = admit_index_find_locked(&s->ix, h, key, klen, where);
	}
	return e;
}

bool
shard_store_locked(struct shard *s, uint64_t h, struct entry *e,
                   struct entry *old, _Atomic uintptr_t *where, bool force)
{
	size_t charge = admit_entry_charge(admit_entry_klen(e), e->vlen);
	bool kept;

	s->fresh = e;
	s->forced = force;
	if (old) {
		admit_index_replace_locked(where, old, e);
		admit_policy_replace(&s->pol, &old->node, &e->node);
		s->bytes += charge;
		s->bytes -= admit_entry_charge(admit_entry_klen(old), old->vlen);
		admit_expiry_remove_locked(old);
		shard_gone_locked(s, old, ADMIT_LRU_REPLACED);
		admit_policy_hit(&s->pol, &e->node);
		/* A grown value may put the shard over capacity. */
		admit_policy_evict(&s->pol);
	} else {
		admit_index_insert_locked(&s->ix, where, e, h);
		s->entries++;
		s->bytes += charge;
		admit_policy_insert(&s->pol, &e->node);
	}
	kept = s->fresh != NULL;
	s->fresh = NULL;
	s->forced = false;
	admit_index_grow_locked(&s->ix, s->entries);
	admit_reclaim_flush_locked(&s->rec);
	return kept;
}

void
shard_stats_locked(struct shard *s, struct admit_lru_stats *sum)
{
	sum->hits += s->st.hits + admit_readbuf_counted(&s->rb, SHARD_QUIET_HITS);
	sum->misses += s->st.misses + admit_readbuf_counted(&s->rb, SHARD_MISSES);
	sum->admitted += s->pol.admitted;
	sum->rejected += s->pol.rejected;
	sum->evicted += s->pol.evicted;
	sum->expired += s->st.expired;
	sum->entries += s->entries;
	sum->bytes += s->bytes;
	sum->window += admit_policy_window(&s->pol);
}

struct entry *
shard_entry_new(const struct admit_lru *c, uint64_t h, const void *key,
                size_t klen, size_t vlen, bool timer)
{
	struct entry *e = admit_malloc(admit_expiry_entry_size(klen, vlen, timer));

	if (!e)
		return NULL;
	if (!admit_index_taggable(e)) {
		/* An address the index cannot tag (index.h): none on
		 * x86-64 or AArch64, whose user addresses stay below 2^48. */
		admit_free(e);
		return NULL;
	}
	admit_policy_node_init(&e->node);
	admit_entry_set_meta(e, (uint32_t)klen |
	                        (admit_adapt_caller_records(c->adapt, h)
	                         ? ADMIT_ENTRY_CALLER_RECORDS : 0));
	e->vlen = vlen;
	e->dead = false;
	if (klen)
		memcpy(e->data, key, klen);
	return e;
}

/* ---- the policy's hooks (policy.h), called under the mutex ---------------- */

static uint64_t
op_weight(void *ctx, const struct admit_policy_node *n)
{
	const struct shard *s = ctx;

	return weight_of(s->c, admit_entry_of(n));
}

static bool op_over(void *ctx) ADMIT_NO_TS;
static bool
op_over(void *ctx)
{
	return over_capacity(ctx);
}

/* TinyLFU's contest, on the two keys' hashes; a forced store's own entry
 * wins without one. */
static bool
op_admit(void *ctx, const struct admit_policy_node *cand,
         const struct admit_policy_node *victim)
{
	const struct shard *s = ctx;
	const struct admit_keyhash *kh = &s->c->kh;

	if (s->forced && admit_entry_of(cand) == s->fresh)
		return true;
	return admit_freqsketch_admit(s->c->sketch,
	                              admit_entry_hash(kh, admit_entry_of(cand)),
	                              admit_entry_hash(kh, admit_entry_of(victim)));
}

/* The key's TinyLFU estimate: which LIR blocks a move out of LIRS keeps
 * in protected (policy.c). */
static unsigned
op_count(void *ctx, const struct admit_policy_node *n)
{
	const struct shard *s = ctx;

	if (!s->c->sketch)
		return 0;
	return admit_freqsketch_estimate(s->c->sketch,
	                                 admit_entry_hash(&s->c->kh,
	                                                  admit_entry_of(n)));
}

/* The policy dropped n for room: out of the index, freed after a grace
 * period; a set learns that its own entry went. */
static void op_drop(void *ctx, struct admit_policy_node *n, bool rejected)
	ADMIT_NO_TS;
static void
op_drop(void *ctx, struct admit_policy_node *n, bool rejected)
{
	struct shard *s = ctx;
	struct entry *e = admit_entry_of(n);

	if (e == s->fresh)
		s->fresh = NULL;
	unindex_locked(s, e, rejected ? ADMIT_LRU_REJECTED : ADMIT_LRU_EVICTED);
}

/* The key hash, for LIRS's ghosts of evicted keys. */
static uint64_t
op_hash(void *ctx, const struct admit_policy_node *n)
{
	const struct shard *s = ctx;

	return admit_entry_hash(&s->c->kh, admit_entry_of(n));
}

/* The index's hash of an entry: its key's, as the cache hashes it. */
static uint64_t
index_hash(const void *ctx, const struct entry *e)
{
	const struct admit_lru *c = ctx;

	return admit_entry_hash(&c->kh, e);
}

static const struct admit_policy_ops shard_ops = {
	.weight = op_weight, .over = op_over, .admit = op_admit, .drop = op_drop,
	.hash = op_hash, .count = op_count,
};

/* ---- life ----------------------------------------------------------------- */

/* The policy configuration a shard starts with. */
static struct admit_policy_config
start_config(const struct admit_lru *c, unsigned window_percent)
{
	switch (c->policy) {
	case ADMIT_LRU_PLAIN:
		return (struct admit_policy_config){ 100, 0, false, false, 0, true };
	case ADMIT_LRU_TINYLFU:
		return (struct admit_policy_config){ 0, 0, true, false, 0, false };
	case ADMIT_LRU_ADAPTIVE:
		return adaptive_config(c, ADMIT_MINISIM_START);
	default:
		/* Exact (no quiet hits): the reference the adaptive
		 * policy is held to (doc/design.md, "Quiet hits"). */
		return (struct admit_policy_config){ window_percent,
		                                     PROTECTED_PERCENT, true, false,
		                                     ADMIT_POLICY_WTINYLFU, true };
	}
}

static uint64_t
part(uint64_t total, unsigned n, unsigned i)
{
	return total / n + (i < total % n);
}

enum admit_status
shard_init(struct admit_lru *c, struct shard *s, const struct admit_lru_config *cfg,
           unsigned i, unsigned window_percent)
{
	struct admit_policy_config pc = start_config(c, window_percent);

	s->c = c;
	s->max_entries = part(cfg->capacity, c->nshards, i);
	s->max_bytes = part(cfg->capacity_bytes, c->nshards, i);
	atomic_init(&s->max_charge, s->max_bytes);
	s->gone = (struct admit_gone){ 0 };
	s->config = ADMIT_MINISIM_START;
	admit_policy_init(&s->pol, &shard_ops, s,
	                  c->by_bytes ? s->max_bytes : s->max_entries,
	                  !c->by_bytes, &pc);
	admit_readbuf_init(&s->rb);
	admit_reclaim_init(&s->rec, &s->rb, &c->pending);
	if (admit_index_init(&s->ix, s->max_entries, &c->pending, index_hash,
	                     c) != ADMIT_OK)
		return ADMIT_NOMEM;
	if (!admit_mutex_init(&s->mu)) {
		admit_index_destroy(&s->ix);
		return ADMIT_NOMEM;
	}
	/* LIRS's non-resident HIR blocks, as the simulation's LIRS keeps
	 * them: one slot per entry (a byte capacity's entries guessed as
	 * the simulation's are). */
	if (c->policy == ADMIT_LRU_ADAPTIVE &&
	    !admit_policy_ghosts(&s->pol, part(admit_cache_entries(cfg),
	                                       c->nshards, i))) {
		admit_mutex_destroy(&s->mu);
		admit_index_destroy(&s->ix);
		return ADMIT_NOMEM;
	}
	return ADMIT_OK;
}

void
shard_destroy(struct shard *s)
{
	for (int k = 0; k < ADMIT_SEG_COUNT; k++) {
		struct admit_policy_node *n, *nn, *h = &s->pol.seg[k];

		for (n = h->next; n != h; n = nn) {
			nn = n->next;
			admit_free(admit_entry_of(n));
		}
	}
	shard_gone_destroy(s);
	admit_reclaim_destroy(&s->rec);
	admit_expiry_destroy(&s->exp);
	admit_index_destroy(&s->ix);
	admit_mutex_destroy(&s->mu);
	admit_policy_free(&s->pol);
}
