/*
 * walk.c - calls over the whole cache, one shard after another, each
 * shard's mutex held only for its own part: admit_lru_set_capacity,
 * admit_lru_foreach (and admit_lru_shard_index, which names its shards),
 * admit_lru_clear and admit_lru_stats_ex.  No call
 * holds two shard mutexes.
 *
 * The walk lists a shard's entries under its mutex, then visits them with
 * no lock held inside an RCU read-side section opened before the listing:
 * an entry removed after it was listed is retired after the section began,
 * so its memory outlives the section (reclaim.h).
 */
#include "config.h"

#include <string.h>

#include <admit/lru.h>

#include "alloc.h"
#include "cache/loader.h"
#include "cache/shard.h"
#include "rcu.h"

/* Shard i's share of total, as admit_lru_new splits it. */
static uint64_t
share(uint64_t total, unsigned n, unsigned i)
{
	return total / n + (i < total % n);
}

enum admit_status
admit_lru_set_capacity(struct admit_lru *c, uint64_t capacity,
                       uint64_t capacity_bytes)
{
	if (!c || (c->by_bytes ? !capacity_bytes : !capacity) ||
	    capacity > ADMIT_LRU_MAX_CAPACITY ||
	    capacity_bytes > ADMIT_LRU_MAX_BYTES ||
	    (capacity && capacity < c->nshards) ||
	    (capacity_bytes && capacity_bytes < c->nshards))
		return ADMIT_EINVAL;
	for (unsigned i = 0; i < c->nshards; i++) {
		struct shard *s = &c->shards[i];

		shard_lock(s);
		s->max_entries = share(capacity, c->nshards, i);
		s->max_bytes = share(capacity_bytes, c->nshards, i);
		/* relaxed: shard_max_charge() reads it as a bound only. */
		atomic_store_explicit(&s->max_charge, s->max_bytes,
		                      memory_order_relaxed);
		s->pol.max_weight = c->by_bytes ? s->max_bytes : s->max_entries;
		/* The segments' bounds follow the capacity; then the victims
		 * leave until the shard is within it. */
		admit_policy_configure(&s->pol, &s->pol.cfg);
		admit_policy_evict(&s->pol);
		shard_flush_locked(s);
		shard_unlock_deliver(s);
	}
	return ADMIT_OK;
}

/* Lists s's live entries into a new array (*n of them); NULL when out of
 * memory (or none: *n is 0). */
static struct entry **
list_locked(struct shard *s, size_t *n) ADMIT_REQUIRES(s->mu)
{
	struct entry **v;
	size_t k = 0;

	*n = 0;
	if (!s->entries)
		return NULL;
	v = admit_malloc(s->entries * sizeof(*v));
	if (!v)
		return NULL;
	for (int g = 0; g < ADMIT_SEG_COUNT; g++) {
		struct admit_policy_node *h = &s->pol.seg[g];

		for (struct admit_policy_node *p = h->next; p != h; p = p->next) {
			struct entry *e = admit_entry_of(p);

			if (k < s->entries && !admit_expiry_expired(&s->c->clock, e))
				v[k++] = e;
		}
	}
	*n = k;
	return v;
}

enum admit_status
admit_lru_foreach(struct admit_lru *c, admit_lru_visitor_t fn, void *arg)
{
	if (!c || !fn)
		return ADMIT_EINVAL;
	for (unsigned i = 0; i < c->nshards; i++) {
		struct shard *s = &c->shards[i];
		struct entry **v;
		size_t n;
		bool more = true, held;

		admit_rcu_read_lock();
		shard_lock(s);
		v = list_locked(s, &n);
		held = s->entries != 0;
		shard_unlock_deliver(s);
		if (!v && held) {
			admit_rcu_read_unlock();
			return ADMIT_NOMEM;
		}
		for (size_t k = 0; k < n && more; k++) {
			const struct entry *e = v[k];
			size_t klen = admit_entry_klen(e);

			more = fn(klen ? e->data : NULL, klen,
			          e->vlen ? admit_entry_value(e) : NULL, e->vlen,
			          admit_expiry_when(e), arg);
		}
		admit_rcu_read_unlock();
		admit_free(v);
		if (!more)
			break;
	}
	return ADMIT_OK;
}

unsigned
admit_lru_shard_index(const struct admit_lru *c, uint64_t h)
{
	return c ? (unsigned)(shard_of(c, h) - c->shards) : 0;
}

enum admit_status
admit_lru_clear(struct admit_lru *c)
{
	if (!c)
		return ADMIT_EINVAL;
	for (unsigned i = 0; i < c->nshards; i++) {
		struct shard *s = &c->shards[i];

		shard_lock(s);
		for (int g = 0; g < ADMIT_SEG_COUNT; g++) {
			struct admit_policy_node *h = &s->pol.seg[g], *p, *next;

			for (p = h->next; p != h; p = next) {
				next = p->next;
				shard_remove_locked(s, admit_entry_of(p),
				                    ADMIT_LRU_CLEARED);
			}
		}
		shard_flush_locked(s);
		shard_unlock_deliver(s);
	}
	return ADMIT_OK;
}

enum admit_status
admit_lru_stats_ex(struct admit_lru *c, struct admit_lru_stats_ex *out,
                   size_t size)
{
	struct admit_lru_stats_ex x = { 0 };
	enum admit_status st;

	if (!c || !out || size < sizeof(struct admit_lru_stats))
		return ADMIT_EINVAL;
	st = admit_lru_stats(c, &x.base);
	if (st != ADMIT_OK)
		return st;
	for (unsigned i = 0; i < c->nshards; i++) {
		struct shard *s = &c->shards[i];

		shard_lock(s);
		for (int k = 0; k < ADMIT_LRU_CAUSES; k++) {
			x.removed[k] += s->gone.count[k];
			x.removed_bytes[k] += s->gone.bytes[k];
		}
		shard_unlock_deliver(s);
	}
	admit_loads_stats(c->loads, &x.load_successes, &x.load_failures,
	                  &x.load_ns);
	if (size > sizeof(x)) {
		memset(out, 0, size);
		size = sizeof(x);
	}
	memcpy(out, &x, size);
	return ADMIT_OK;
}
