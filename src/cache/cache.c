/*
 * cache.c - admit_lru's public operations over its shards (shard.h): a
 * sharded LRU cache with (W-)TinyLFU admission.
 *
 * A key belongs to the shard picked by the high bits of its hash.  Reads
 * (get, get_with, peek: read_path()) take no lock in the common case: they
 * look the key up under RCU, copy or hand out the value of an entry that
 * never changes, and queue their access for the shard's next maintenance.
 * Writes (set, delete, compute, stats, expire) take the shard's mutex,
 * whose maintenance first applies the queued reads.  The adaptation
 * (adapt.h) is told of the requests for the keys it watches, outside any
 * shard mutex.
 */
#include "config.h"

#include <string.h>

#include <admit/lru.h>
#include <admit/tinylfu.h>

#include "alloc.h"
#include "cache/cache.h"
#include "cache/loader.h"
#include "cache/shard.h"
#include "hash.h"
#include "rcu.h"
#include "freqsketch.h"

/* The entries the cache will hold: its entry capacity, or for a byte
 * capacity alone a guess of entries of 4 x the per-entry overhead (at
 * least one).  Sizes the TinyLFU sketch, the default shard count and the
 * shards' ghosts, each rounded up to a power of two: a power-of-two
 * capacity guesses a power of two, so that neither table doubles for one
 * entry more. */
uint64_t
admit_cache_entries(const struct admit_lru_config *cfg)
{
	uint64_t guess = cfg->capacity_bytes / (4 * ADMIT_LRU_ENTRY_OVERHEAD);

	if (cfg->capacity)
		return cfg->capacity;
	if (guess == 0)
		return 1;
	return guess < ADMIT_LRU_MAX_CAPACITY ? guess : ADMIT_LRU_MAX_CAPACITY;
}

/* The frequency sketch's words per entry (freqsketch.h): one, but at
 * least SKETCH_FLOOR_WORDS in all (64 KiB, a fixed table, up to 64 words
 * an entry).  A small cache's keys share few counters, and where every
 * key is as frequent as every other (a loop, a zigzag) the collisions,
 * not the counts, would then decide its contests' ties: with the floor the
 * fixed 1 % window agrees with exact counts there (test_hitratio.sh's
 * rules against tools/wtinylfu_model.py).  From 8192 entries on it is a
 * word an entry. */
#define SKETCH_FLOOR_WORDS 8192u

static unsigned
sketch_width(uint64_t entries)
{
	uint64_t w = (SKETCH_FLOOR_WORDS + entries - 1) / entries;

	return w > 64 ? 64 : w < 1 ? 1 : (unsigned)w;
}

static bool
config_ok(const struct admit_lru_config *cfg)
{
	return (cfg->capacity || cfg->capacity_bytes) &&
	       cfg->capacity <= ADMIT_LRU_MAX_CAPACITY &&
	       cfg->capacity_bytes <= ADMIT_LRU_MAX_BYTES &&
	       (unsigned)cfg->policy <= ADMIT_LRU_PLAIN &&
	       cfg->window_percent <= 99 &&
	       cfg->shards <= ADMIT_LRU_MAX_SHARDS &&
	       (cfg->shards & (cfg->shards - 1)) == 0 &&
	       !(cfg->capacity && cfg->shards > cfg->capacity) &&
	       !(cfg->capacity_bytes && cfg->shards > cfg->capacity_bytes);
}

enum admit_status
admit_lru_new(const struct admit_lru_config *cfg, struct admit_lru **out)
{
	struct admit_lru *c = NULL;
	enum admit_status st = ADMIT_NOMEM;
	unsigned nshards, window_percent, ready = 0;

	if (!cfg || !out || !config_ok(cfg))
		return ADMIT_EINVAL;
	nshards = cfg->shards;
	if (nshards == 0) {
		/* At least 64 entries a shard. */
		for (nshards = 16;
		     nshards > 1 && admit_cache_entries(cfg) / nshards < 64;
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
	c->clock = (struct admit_clock){ cfg->clock, cfg->clock_arg };
	c->listener = cfg->listener;
	c->listener_arg = cfg->listener_arg;
	atomic_init(&c->pending, 0);
	if (c->policy != ADMIT_LRU_PLAIN) {
		struct admit_tinylfu_config tc = { 0 };

		if (cfg->tinylfu)
			tc = *cfg->tinylfu;
		tc.cache_capacity = admit_cache_entries(cfg);
		tc.seed = c->seed ^ ADMIT_GOLDEN64;
		st = admit_freqsketch_new(&tc, sketch_width(tc.cache_capacity), &c->sketch);
		if (st != ADMIT_OK)
			goto out;
		st = ADMIT_NOMEM;
	}
	c->kh.seed = c->sketch ? c->seed ^ ADMIT_GOLDEN64 : c->seed;
	c->kh.prepared = admit_hash8_prepare(c->kh.seed);
	if (c->policy == ADMIT_LRU_ADAPTIVE) {
		struct admit_adapt_params p = {
			.max_weight = c->by_bytes ? cfg->capacity_bytes
			                          : cfg->capacity,
			.entries = admit_cache_entries(cfg), .sketch = c->sketch,
			.tinylfu = cfg->tinylfu, .seed = c->seed,
		};

		if (admit_adapt_minisim_new(&p, &c->adapt) != ADMIT_OK)
			goto out;
	}
	if (admit_loads_new(&c->loads) != ADMIT_OK)
		goto out;
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
		admit_loads_free(c->loads);
		admit_adapt_free(c->adapt);
		admit_freqsketch_free(c->sketch);
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
	admit_loads_free(c->loads);
	admit_adapt_free(c->adapt);
	admit_freqsketch_free(c->sketch);
	admit_free(c);
}

/* ---- reads ---------------------------------------------------------------- */

/* What a read does with the live entry it found and its value, in the
 * read-side section: ADMIT_OK, or ADMIT_EBUFFER to end the read without a
 * trace. */
typedef enum admit_status (*use_fn)(const struct entry *e,
                                    const unsigned char *value, void *arg);

/*
 * The one read path behind get, get_with and peek: the lookup, an expired
 * entry taken as a miss at once (the wheel removes it later), use() on a
 * hit and, when traced, the access queued for the shard (its move, its
 * count, its TinyLFU record) and reported to the adaptation.  Inline, so
 * each caller's use() is a direct call.
 */
static inline __attribute__((always_inline)) enum admit_status
read_path(struct admit_lru *c, uint64_t h, const void *key, size_t klen,
          bool traced, use_fn use, void *arg)
{
	struct shard *s = shard_of(c, h);
	enum admit_status st = ADMIT_NOTFOUND;
	struct admit_rcu_section r = admit_rcu_read_begin();
	struct entry *e = shard_lookup(s, h, key, klen);
	bool watched, quiet;

	if (e && admit_expiry_expired(&c->clock, e))
		e = NULL;
	if (e)
		st = use(e, e->data + klen, arg);  /* the key matched: klen is its */
	if (st == ADMIT_EBUFFER || !traced) {
		admit_rcu_read_end(r);
		return st;
	}
	/* Whether the adaptation watches h: a hit's entry holds the answer
	 * (caller_records: the watched keys are those whose records are
	 * the caller's, adapt.h), read before the section ends; a miss
	 * asks.  A quiet hit (policy.h) queues nothing: the entry stays
	 * where it is and the hit is neither moved nor recorded, only
	 * counted; a miss is only counted too (its TinyLFU record is the
	 * set's that follows it). */
	watched = e && admit_entry_caller_records(e);
	quiet = e && admit_policy_quiet(&s->pol, &e->node);
	if (!e)
		shard_note_miss(s);
	else if (quiet)
		shard_note_quiet(s);
	else
		shard_note_access(s, e, h);
	admit_rcu_read_end(r);
	if (e ? watched : admit_adapt_watches(c->adapt, h))
		c->adapt->ops->on_get(c->adapt, h, e != NULL, e && !quiet);
	return st;
}

struct copy {
	void *buf;
	size_t bufsize, *vlen;
};

/* memcpy(dst, src, n), inline up to 32 bytes (a value of a few words is
 * the commonest): two overlapping moves of the widest size that fits,
 * where a call to memcpy would also make the read path keep its values in
 * callee-saved registers across the call. */
static inline __attribute__((always_inline)) void
copy_bytes(unsigned char *dst, const unsigned char *src, size_t n)
{
	struct w16 { unsigned char b[16]; } a16, b16;
	uint64_t a8, b8;
	uint32_t a4, b4;

	if (n > 32) {
		memcpy(dst, src, n);
	} else if (n >= 16) {
		memcpy(&a16, src, 16);
		memcpy(&b16, src + n - 16, 16);
		memcpy(dst, &a16, 16);
		memcpy(dst + n - 16, &b16, 16);
	} else if (n >= 8) {
		memcpy(&a8, src, 8);
		memcpy(&b8, src + n - 8, 8);
		memcpy(dst, &a8, 8);
		memcpy(dst + n - 8, &b8, 8);
	} else if (n >= 4) {
		memcpy(&a4, src, 4);
		memcpy(&b4, src + n - 4, 4);
		memcpy(dst, &a4, 4);
		memcpy(dst + n - 4, &b4, 4);
	} else {
		for (size_t i = 0; i < n; i++)
			dst[i] = src[i];
	}
}

static inline __attribute__((always_inline)) enum admit_status
copy_value(const struct entry *e, const unsigned char *value, void *arg)
{
	struct copy *x = arg;

	*x->vlen = e->vlen;
	if (e->vlen > x->bufsize)
		return ADMIT_EBUFFER;
	copy_bytes(x->buf, value, e->vlen);
	return ADMIT_OK;
}

/* get and peek: the arguments checked, then the read path; h computed
 * here unless hashed. */
static inline __attribute__((always_inline)) enum admit_status
copy_read(struct admit_lru *c, bool hashed, uint64_t h, const void *key,
          size_t klen, void *buf, size_t bufsize, size_t *vlen, bool traced)
{
	struct copy x = { buf, bufsize, vlen };

	if (__builtin_expect(!c || !vlen || !admit_key_ok(key, klen) ||
	                     (!buf && bufsize), 0))
		return ADMIT_EINVAL;
	/* An 8-byte key (an integer id, the commonest) on a path of its own,
	 * where its hash and compare are those of a constant length. */
	if (klen == sizeof(uint64_t))
		return read_path(c, hashed ? h : shard_hash(c, key, sizeof(uint64_t)),
		                 key, sizeof(uint64_t), traced, copy_value, &x);
	return read_path(c, hashed ? h : shard_hash(c, key, klen), key, klen,
	                 traced, copy_value, &x);
}

enum admit_status
admit_lru_get_hashed(struct admit_lru *c, uint64_t h, const void *key,
                     size_t klen, void *buf, size_t bufsize, size_t *vlen)
{
	return copy_read(c, true, h, key, klen, buf, bufsize, vlen, true);
}

enum admit_status
admit_lru_get(struct admit_lru *c, const void *key, size_t klen, void *buf,
              size_t bufsize, size_t *vlen)
{
	return copy_read(c, false, 0, key, klen, buf, bufsize, vlen, true);
}

/* Untraced: the read leaves no trace. */
enum admit_status
admit_lru_peek(struct admit_lru *c, const void *key, size_t klen, void *buf,
               size_t bufsize, size_t *vlen)
{
	return copy_read(c, false, 0, key, klen, buf, bufsize, vlen, false);
}

/* Keys a batch requests ahead of reading: enough requests in flight to
 * cover a miss's latency, few enough that the first key's lines are still
 * in L1 when its lookup reads them; 16 runs faster than 8 and than 32
 * (bench/bench_cache_ab.sh with AB_CACHE=admit-batch). */
#define GET_MANY_AHEAD 16

/*
 * get_many and get_many_u64, the caller having checked the arguments:
 * key k is ids[k] (8 bytes, u64) or keys[k] of klens[k] bytes.  Inline,
 * so u64's key length is a constant in its read path, as a single get's
 * is.
 */
static inline __attribute__((always_inline)) enum admit_status
get_many(struct admit_lru *c, size_t n, bool u64, const uint64_t *ids,
         const void *const *keys, const size_t *klens, void *values,
         size_t vsize, size_t *vlens, enum admit_status *out)
{
	uint64_t h[GET_MANY_AHEAD];

	for (size_t i = 0; i < n; i += GET_MANY_AHEAD) {
		size_t m = n - i < GET_MANY_AHEAD ? n - i : GET_MANY_AHEAD;
		struct admit_rcu_section r = admit_rcu_read_begin();

		/* Every bucket of the batch requested, then every first
		 * entry: by the second pass most bucket lines have
		 * arrived. */
		for (size_t j = 0; j < m; j++) {
			size_t k = i + j;

			h[j] = u64 ? shard_hash(c, &ids[k], sizeof(uint64_t))
			           : shard_hash(c, keys[k], klens[k]);
			admit_index_prefetch_bucket(&shard_of(c, h[j])->ix, h[j]);
		}
		for (size_t j = 0; j < m; j++)
			admit_index_prefetch_chain(&shard_of(c, h[j])->ix, h[j]);
		admit_rcu_read_end(r);
		for (size_t j = 0; j < m; j++) {
			size_t k = i + j;
			struct copy x = {
				vsize ? (unsigned char *)values + k * vsize : NULL,
				vsize, &vlens[k]
			};

			vlens[k] = 0;
			out[k] = u64 ? read_path(c, h[j], &ids[k], sizeof(uint64_t),
			                         true, copy_value, &x)
			             : read_path(c, h[j], keys[k], klens[k], true,
			                         copy_value, &x);
		}
	}
	return ADMIT_OK;
}

/* The arguments every batched get shares, checked. */
static bool
get_many_args_ok(const struct admit_lru *c, size_t n, const void *values,
                 size_t vsize, const size_t *vlens,
                 const enum admit_status *out)
{
	return c && vlens && out &&
	       !(n && vsize && (!values || n > SIZE_MAX / vsize));
}

enum admit_status
admit_lru_get_many_u64(struct admit_lru *c, size_t n, const uint64_t *keys,
                       void *values, size_t vsize, size_t *vlens,
                       enum admit_status *out)
{
	if (!get_many_args_ok(c, n, values, vsize, vlens, out) || (n && !keys))
		return ADMIT_EINVAL;
	return get_many(c, n, true, keys, NULL, NULL, values, vsize, vlens, out);
}

enum admit_status
admit_lru_get_many(struct admit_lru *c, size_t n, const void *const *keys,
                   const size_t *klens, void *values, size_t vsize,
                   size_t *vlens, enum admit_status *out)
{
	if (!get_many_args_ok(c, n, values, vsize, vlens, out) ||
	    (n && (!keys || !klens)))
		return ADMIT_EINVAL;
	/* Every key checked before any is read: a bad one changes nothing. */
	for (size_t k = 0; k < n; k++)
		if (!admit_key_ok(keys[k], klens[k]))
			return ADMIT_EINVAL;
	return get_many(c, n, false, NULL, keys, klens, values, vsize, vlens,
	                out);
}

struct reader {
	admit_lru_reader_t fn;
	void *arg;
};

static enum admit_status
hand_value(const struct entry *e, const unsigned char *value, void *arg)
{
	struct reader *r = arg;

	r->fn(e->vlen ? value : NULL, e->vlen, r->arg);
	return ADMIT_OK;
}

enum admit_status
admit_lru_get_with_hashed(struct admit_lru *c, uint64_t h, const void *key,
                          size_t klen, admit_lru_reader_t fn, void *arg)
{
	struct reader r = { fn, arg };

	if (!c || !fn || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	if (klen == sizeof(uint64_t))  /* as in copy_read() */
		return read_path(c, h, key, sizeof(uint64_t), true, hand_value,
		                 &r);
	return read_path(c, h, key, klen, true, hand_value, &r);
}

/* ---- writes --------------------------------------------------------------- */

/* Copies a value given in parts, one after another, to dst. */
static void
copy_parts(unsigned char *dst, const struct admit_lru_part *parts, size_t nparts)
{
	for (size_t i = 0; i < nparts; i++) {
		if (parts[i].len)
			memcpy(dst, parts[i].data, parts[i].len);
		dst += parts[i].len;
	}
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
	_Atomic uintptr_t *p;
	size_t charge;
	bool kept;

	if (!admit_entry_lengths_ok(klen, vlen))
		return ADMIT_ETOOBIG;
	s = shard_of(c, h);
	charge = admit_entry_charge(klen, vlen);
	if (shard_max_charge(s) && charge > shard_max_charge(s))
		return ADMIT_ETOOBIG;
	if (expires_at && expires_at <= admit_clock_now(&c->clock)) {
		/* Stored and expired at once: the key is gone. */
		admit_lru_delete_hashed(c, h, key, klen);
		return ADMIT_OK;
	}
	e = shard_entry_new(c, h, key, klen, vlen, expires_at != 0);
	if (!e)
		return ADMIT_NOMEM;
	copy_parts(e->data + klen, parts, nparts);
	if (admit_adapt_watches(c->adapt, h))
		c->adapt->ops->on_set(c->adapt, h, c->by_bytes ? charge : 1);

	/* The maintenance advances the wheel before e joins it: advancing
	 * may remove what is due, and e, not yet in the index or a list,
	 * must not be (its time can pass while this call runs). */
	shard_lock_mine(s, h);
	if (expires_at && !shard_time_locked(s, e, expires_at)) {
		shard_unlock_deliver(s);
		admit_free(e);
		return ADMIT_NOMEM;
	}
	/* After the drain, as compute records it, so that a read then a
	 * write and compute keep one order of records. */
	if (!admit_adapt_caller_records(c->adapt, h))
		shard_record_locked(s, h, NULL);
	old = shard_find_live_locked(s, h, key, klen, &p);
	kept = shard_store_locked(s, h, e, old, p, false);
	shard_unlock_deliver(s);
	return kept ? ADMIT_OK : ADMIT_REJECTED;
}

enum admit_status
admit_lru_set_hashed(struct admit_lru *c, uint64_t h, const void *key,
                     size_t klen, const void *value, size_t vlen)
{
	return admit_lru_set_expiring_hashed(c, h, key, klen, value, vlen, 0);
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
admit_lru_delete_hashed(struct admit_lru *c, uint64_t h, const void *key,
                        size_t klen)
{
	struct shard *s;
	struct entry *e;

	if (!c || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	s = shard_of(c, h);
	shard_lock_mine(s, h);
	e = shard_find_live_locked(s, h, key, klen, NULL);
	if (e) {
		shard_remove_locked(s, e, ADMIT_LRU_EXPLICIT);
		shard_flush_locked(s);
	}
	shard_unlock_deliver(s);
	return e ? ADMIT_OK : ADMIT_NOTFOUND;
}

enum admit_status
admit_lru_expire(struct admit_lru *c)
{
	if (!c)
		return ADMIT_EINVAL;
	for (unsigned i = 0; i < c->nshards; i++) {
		/* The maintenance removes what is due. */
		shard_lock(&c->shards[i]);
		shard_unlock_deliver(&c->shards[i]);
	}
	return ADMIT_OK;
}

enum admit_status
admit_lru_stats(struct admit_lru *c, struct admit_lru_stats *out)
{
	struct admit_lru_stats sum = { 0 };

	if (!c || !out)
		return ADMIT_EINVAL;
	for (unsigned i = 0; i < c->nshards; i++) {
		struct shard *s = &c->shards[i];

		shard_lock(s);
		shard_stats_locked(s, &sum);
		shard_unlock_deliver(s);
	}
	if (c->sketch)
		admit_freqsketch_load(c->sketch, &sum.filter_entries,
		                      &sum.filter_slots);
	if (c->adapt)
		c->adapt->ops->stats(c->adapt, &sum.sim_bytes, &sum.sim_switches);
	*out = sum;
	return ADMIT_OK;
}

uint64_t
admit_lru_now(const struct admit_lru *c)
{
	return c ? admit_clock_now(&c->clock) : 0;
}

size_t
admit_lru_entry_charge(size_t klen, size_t vlen)
{
	if (!admit_entry_lengths_ok(klen, vlen))
		return SIZE_MAX;
	return admit_entry_charge(klen, vlen);
}

void admit_test_lru_hold(struct admit_lru *c, const void *key, size_t klen,
                         bool hold) ADMIT_NO_TS;
void
admit_test_lru_hold(struct admit_lru *c, const void *key, size_t klen, bool hold)
{
	struct shard *s = shard_of(c, shard_hash(c, key, klen));

	if (hold)
		admit_mutex_lock(&s->mu);
	else
		admit_mutex_unlock(&s->mu);
}

/* ---- compute -------------------------------------------------------------- */

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
	u = (struct update *)((char *)up - offsetof(struct update, up));
	admit_free(u->e);
	u->e = NULL;
	u->st = ADMIT_ETOOBIG;
	if (!admit_entry_lengths_ok(u->klen, vlen) ||
	    (shard_max_charge(u->s) &&
	     admit_entry_charge(u->klen, vlen) > shard_max_charge(u->s)))
		return NULL;
	u->st = ADMIT_NOMEM;
	/* With room for a timer: the updater may set an expiry after. */
	e = shard_entry_new(u->s->c, u->h, u->key, u->klen, vlen, true);
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
	_Atomic uintptr_t *p;
	struct entry *old;
	enum admit_lru_verdict v;
	enum admit_status st = ADMIT_OK;
	bool stored, recorded, force, quiet;

	if (!c || !fn || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	s = shard_of(c, h);
	u = (struct update){
		.s = s, .h = h, .key = key, .klen = klen, .st = ADMIT_EINVAL,
	};

	shard_lock_mine(s, h);
	old = shard_find_live_locked(s, h, key, klen, &p);
	quiet = old && admit_policy_quiet(&s->pol, &old->node);
	u.up.found = old != NULL;
	u.up.old = old && old->vlen ? admit_entry_value(old) : NULL;
	u.up.old_len = old ? old->vlen : 0;
	u.up.old_expires = old ? admit_expiry_when(old) : 0;
	u.up.expires = u.up.old_expires;
	v = fn(&u.up, arg);
	force = v == ADMIT_LRU_STORE_FORCE;
	if (force)
		v = ADMIT_LRU_STORE;
	if (v == ADMIT_LRU_STORE && u.st == ADMIT_OK && u.up.expires) {
		if (u.up.expires <= admit_clock_now(&c->clock))
			v = ADMIT_LRU_REMOVE;  /* stored and expired at once */
		else if (!shard_time_locked(s, u.e, u.up.expires))
			u.st = ADMIT_NOMEM;
	}
	stored = v == ADMIT_LRU_STORE && u.st == ADMIT_OK;
	/* One access, whatever the verdict: one count, one record, in the
	 * order of a get then a set (a miss is counted before the insertion,
	 * a hit after its move); a quiet hit, as a get's, is not recorded. */
	if (!old)
		s->st.misses++;
	recorded = old ? !quiet : stored;
	if (recorded)
		shard_record_locked(s, h, old);
	if (stored) {
		/* Replacing old also moves it, as a hit does. */
		st = shard_store_locked(s, h, u.e, old, p, force) ? ADMIT_OK
		                                                  : ADMIT_REJECTED;
		u.e = NULL;
	} else if (v == ADMIT_LRU_REMOVE) {
		if (old) {
			shard_remove_locked(s, old, ADMIT_LRU_EXPLICIT);
			shard_flush_locked(s);
		}
	} else {
		if (v != ADMIT_LRU_KEEP)
			st = v == ADMIT_LRU_STORE ? u.st : ADMIT_EINVAL;
		if (old)
			shard_hit_locked(s, old);
	}
	if (old)
		s->st.hits++;
	shard_unlock_deliver(s);
	admit_free(u.e);
	/* One access: the adaptation sees a get. */
	if (admit_adapt_watches(c->adapt, h))
		c->adapt->ops->on_compute(c->adapt, h, recorded);
	return st;
}

/* ---- the unhashed calls: the library's hash, then the hashed call ---- */

uint64_t
admit_lru_hash(const struct admit_lru *c, const void *key, size_t klen)
{
	if (!c || !admit_key_ok(key, klen))
		return 0;
	return shard_hash(c, key, klen);
}

enum admit_status
admit_lru_get_with(struct admit_lru *c, const void *key, size_t klen,
                   admit_lru_reader_t fn, void *arg)
{
	if (!c || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	return admit_lru_get_with_hashed(c, shard_hash(c, key, klen), key, klen,
	                                 fn, arg);
}

enum admit_status
admit_lru_set(struct admit_lru *c, const void *key, size_t klen,
              const void *value, size_t vlen)
{
	if (!c || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	return admit_lru_set_hashed(c, shard_hash(c, key, klen), key, klen, value,
	                            vlen);
}

enum admit_status
admit_lru_set_expiring(struct admit_lru *c, const void *key, size_t klen,
                       const void *value, size_t vlen, uint64_t expires_at)
{
	if (!c || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	return admit_lru_set_expiring_hashed(c, shard_hash(c, key, klen), key,
	                                     klen, value, vlen, expires_at);
}

enum admit_status
admit_lru_set_parts(struct admit_lru *c, const void *key, size_t klen,
                    const struct admit_lru_part *parts, size_t nparts,
                    uint64_t expires_at)
{
	if (!c || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	return admit_lru_set_parts_hashed(c, shard_hash(c, key, klen), key, klen,
	                                  parts, nparts, expires_at);
}

enum admit_status
admit_lru_delete(struct admit_lru *c, const void *key, size_t klen)
{
	if (!c || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	return admit_lru_delete_hashed(c, shard_hash(c, key, klen), key, klen);
}

enum admit_status
admit_lru_compute(struct admit_lru *c, const void *key, size_t klen,
                  admit_lru_updater_t fn, void *arg)
{
	if (!c || !fn || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	return admit_lru_compute_hashed(c, shard_hash(c, key, klen), key, klen,
	                                fn, arg);
}
