/*
 * store.c - memcached items over admit_lru.
 *
 * admit_lru has no "clear" and no way to read a value without counting a
 * request, so flush_all is lazy, as in memcached: every stored item gets a
 * fresh CAS unique from one counter, flush_all records the counter's value,
 * and an item whose unique is not above it is dead; a lookup that finds a
 * dead (flushed or expired) item deletes it.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "store.h"

#define NLOCKS 1024u             /* power of two */
#define REL_EXPTIME_MAX 2592000  /* 30 days: above, an exptime is a Unix time */

/* 16 bytes: each is charged against --memory for every item. */
struct hdr {
	uint64_t cas;
	uint32_t exptime;  /* Unix time; 0 = never */
	uint32_t flags;
};
#define HDR sizeof(struct hdr)

struct cached_store {
	struct admit_lru *lru;
	size_t max_item;
	uint64_t seed;
	atomic_uint_fast64_t cas_seq;    /* last unique handed out */
	atomic_uint_fast64_t flush_cas;  /* uniques <= this are flushed */
	atomic_int_fast64_t flush_at;    /* pending delayed flush; 0 = none */
	pthread_mutex_t locks[NLOCKS];
};

int
cached_store_new(uint64_t memory_bytes, size_t max_item, bool admission,
                 struct cached_store **out)
{
	struct admit_lru_config cfg = {
		.capacity_bytes = memory_bytes,
		.policy = admission ? ADMIT_LRU_ADAPTIVE : ADMIT_LRU_PLAIN,
	};
	struct cached_store *st;
	enum admit_status rc;
	unsigned shards = 16;

	/* Each shard must hold a few of the largest items. */
	while (shards > 1 && memory_bytes / shards < 4 * (max_item + HDR + 512))
		shards /= 2;
	cfg.shards = shards;
	st = calloc(1, sizeof(*st));
	if (!st)
		return ENOMEM;
	rc = admit_lru_new(&cfg, &st->lru);
	if (rc != ADMIT_OK) {
		fprintf(stderr, "admit-cached: admit_lru_new: %s\n",
		        admit_strerror(rc));
		free(st);
		return EINVAL;
	}
	if (getrandom(&st->seed, sizeof(st->seed), 0) != sizeof(st->seed))
		st->seed = (uint64_t)time(NULL);
	st->max_item = max_item;
	atomic_init(&st->cas_seq, 0);
	atomic_init(&st->flush_cas, 0);
	atomic_init(&st->flush_at, 0);
	for (unsigned i = 0; i < NLOCKS; i++)
		pthread_mutex_init(&st->locks[i], NULL);
	*out = st;
	return 0;
}

void
cached_store_free(struct cached_store *st)
{
	if (!st)
		return;
	for (unsigned i = 0; i < NLOCKS; i++)
		pthread_mutex_destroy(&st->locks[i]);
	admit_lru_free(st->lru);
	free(st);
}

int
cached_scratch_init(struct cached_scratch *s, const struct cached_store *st)
{
	s->cap = HDR + st->max_item;
	s->read = malloc(s->cap);
	s->write = malloc(s->cap);
	if (!s->read || !s->write) {
		cached_scratch_free(s);
		return ENOMEM;
	}
	return 0;
}

void
cached_scratch_free(struct cached_scratch *s)
{
	free(s->read);
	free(s->write);
	s->read = s->write = NULL;
}

static pthread_mutex_t *
lock_of(struct cached_store *st, const char *key, size_t klen)
{
	return &st->locks[XXH3_64bits_withSeed(key, klen, st->seed) & (NLOCKS - 1)];
}

static uint32_t
abs_exptime(int64_t e, int64_t now)
{
	if (e == 0)
		return 0;
	if (e < 0)
		return 1;  /* already past */
	if (e <= REL_EXPTIME_MAX)
		e += now;
	return e > UINT32_MAX ? UINT32_MAX : (uint32_t)e;
}

/* Applies a delayed flush_all whose time has come. */
static void
flush_due(struct cached_store *st, int64_t now)
{
	int_fast64_t at = atomic_load(&st->flush_at);

	if (at && now >= at &&
	    atomic_compare_exchange_strong(&st->flush_at, &at, 0))
		cached_store_flush(st, 0);
}

void
cached_store_flush(struct cached_store *st, int64_t delay)
{
	uint_fast64_t upto, cur;

	if (delay > 0) {
		atomic_store(&st->flush_at, abs_exptime(delay, time(NULL)));
		return;
	}
	upto = atomic_load(&st->cas_seq);
	cur = atomic_load(&st->flush_cas);
	/* Only ever raised, whatever order concurrent flushes land in. */
	while (cur < upto &&
	       !atomic_compare_exchange_weak(&st->flush_cas, &cur, upto))
		;
}

/* Reads key into s->read: its header and data. */
static enum cached_lookup
lookup(struct cached_store *st, struct cached_scratch *s, const char *key,
       size_t klen, struct hdr *h, size_t *len)
{
	int64_t now = time(NULL);
	size_t vlen;

	flush_due(st, now);
	if (admit_lru_get(st->lru, key, klen, s->read, s->cap, &vlen) != ADMIT_OK ||
	    vlen < HDR)
		return CACHED_MISS;
	memcpy(h, s->read, HDR);
	*len = vlen - HDR;
	if (h->cas <= atomic_load(&st->flush_cas))
		return CACHED_FLUSHED;
	if (h->exptime && h->exptime <= (uint64_t)now)
		return CACHED_EXPIRED;
	return CACHED_HIT;
}

/* Stores h + data under key (h->cas is assigned here). */
static enum cached_result
store(struct cached_store *st, struct cached_scratch *s, const char *key,
      size_t klen, struct hdr *h, const char *data, size_t len)
{
	if (len > st->max_item)
		return CACHED_TOO_LARGE;
	h->cas = atomic_fetch_add(&st->cas_seq, 1) + 1;
	memcpy(s->write, h, HDR);
	if (data != s->write + HDR)
		memcpy(s->write + HDR, data, len);
	switch (admit_lru_set(st->lru, key, klen, s->write, HDR + len)) {
	case ADMIT_OK:
	case ADMIT_REJECTED:  /* stored, then evicted at once by admission */
		return CACHED_STORED;
	case ADMIT_ETOOBIG:
		return CACHED_TOO_LARGE;
	default:
		return CACHED_NOMEM;
	}
}

enum cached_lookup
cached_store_get(struct cached_store *st, struct cached_scratch *s,
                 const char *key, size_t klen, struct cached_item *it)
{
	struct hdr h;
	size_t len;
	enum cached_lookup r = lookup(st, s, key, klen, &h, &len);
	pthread_mutex_t *mu;

	if (r == CACHED_HIT) {
		it->flags = h.flags;
		it->cas = h.cas;
		it->data = s->read + HDR;
		it->len = len;
	} else if (r != CACHED_MISS) {
		/* Delete it unless a writer replaced it meanwhile. */
		mu = lock_of(st, key, klen);
		pthread_mutex_lock(mu);
		if (lookup(st, s, key, klen, &h, &len) > CACHED_MISS)
			admit_lru_delete(st->lru, key, klen);
		pthread_mutex_unlock(mu);
	}
	return r;
}

enum cached_result
cached_store_update(struct cached_store *st, struct cached_scratch *s,
                    const struct cached_req *req, const char *data)
{
	pthread_mutex_t *mu = lock_of(st, req->key, req->klen);
	struct hdr h = { 0 }, old;
	enum cached_result r;
	enum cached_lookup found;
	size_t oldlen, n = req->bytes;

	if (n > st->max_item)
		return CACHED_TOO_LARGE;
	h.flags = req->flags;
	h.exptime = abs_exptime(req->exptime, time(NULL));
	pthread_mutex_lock(mu);
	found = req->cmd == CACHED_SET ? CACHED_MISS
	        : lookup(st, s, req->key, req->klen, &old, &oldlen);
	switch (req->cmd) {
	case CACHED_ADD:
		r = found == CACHED_HIT ? CACHED_NOT_STORED
		    : store(st, s, req->key, req->klen, &h, data, n);
		break;
	case CACHED_REPLACE:
		r = found != CACHED_HIT ? CACHED_NOT_STORED
		    : store(st, s, req->key, req->klen, &h, data, n);
		break;
	case CACHED_CAS:
		r = found != CACHED_HIT ? CACHED_NOT_FOUND
		    : old.cas != req->cas ? CACHED_EXISTS
		    : store(st, s, req->key, req->klen, &h, data, n);
		break;
	case CACHED_APPEND:
	case CACHED_PREPEND:
		if (found != CACHED_HIT) {
			r = CACHED_NOT_STORED;
			break;
		}
		if (oldlen + n > st->max_item) {
			r = CACHED_TOO_LARGE;
			break;
		}
		/* The item keeps its flags and expiry. */
		if (req->cmd == CACHED_APPEND) {
			memcpy(s->write + HDR, s->read + HDR, oldlen);
			memcpy(s->write + HDR + oldlen, data, n);
		} else {
			memcpy(s->write + HDR, data, n);
			memcpy(s->write + HDR + n, s->read + HDR, oldlen);
		}
		r = store(st, s, req->key, req->klen, &old, s->write + HDR,
		          oldlen + n);
		break;
	default:
		r = store(st, s, req->key, req->klen, &h, data, n);
		break;
	}
	pthread_mutex_unlock(mu);
	return r;
}

enum cached_result
cached_store_delete(struct cached_store *st, struct cached_scratch *s,
                    const char *key, size_t klen)
{
	pthread_mutex_t *mu = lock_of(st, key, klen);
	struct hdr h;
	size_t len;
	enum cached_lookup found;

	pthread_mutex_lock(mu);
	found = lookup(st, s, key, klen, &h, &len);
	if (found != CACHED_MISS)
		admit_lru_delete(st->lru, key, klen);
	pthread_mutex_unlock(mu);
	return found == CACHED_HIT ? CACHED_DELETED : CACHED_NOT_FOUND;
}

/* A decimal number, optionally followed by spaces (memcached pads). */
static bool
parse_number(const char *p, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
		unsigned d = (unsigned)(p[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (i == 0)
		return false;
	for (; i < n; i++)
		if (p[i] != ' ')
			return false;
	*out = v;
	return true;
}

enum cached_result
cached_store_arith(struct cached_store *st, struct cached_scratch *s,
                   const struct cached_req *req, uint64_t *value)
{
	pthread_mutex_t *mu = lock_of(st, req->key, req->klen);
	struct hdr h;
	size_t len;
	uint64_t v;
	enum cached_result r;
	char num[24];

	pthread_mutex_lock(mu);
	if (lookup(st, s, req->key, req->klen, &h, &len) != CACHED_HIT) {
		r = CACHED_NOT_FOUND;
	} else if (!parse_number(s->read + HDR, len, &v)) {
		r = CACHED_NON_NUMERIC;
	} else {
		if (req->cmd == CACHED_INCR)
			v += req->delta;  /* wraps at 2^64, as memcached does */
		else
			v = req->delta > v ? 0 : v - req->delta;
		len = (size_t)snprintf(num, sizeof(num), "%llu",
		                       (unsigned long long)v);
		r = store(st, s, req->key, req->klen, &h, num, len);
		if (r == CACHED_STORED) {
			*value = v;
			r = CACHED_NUMBER;
		}
	}
	pthread_mutex_unlock(mu);
	return r;
}

enum cached_result
cached_store_touch(struct cached_store *st, struct cached_scratch *s,
                   const struct cached_req *req)
{
	pthread_mutex_t *mu = lock_of(st, req->key, req->klen);
	struct hdr h;
	size_t len;
	enum cached_result r = CACHED_NOT_FOUND;

	pthread_mutex_lock(mu);
	if (lookup(st, s, req->key, req->klen, &h, &len) == CACHED_HIT) {
		h.exptime = abs_exptime(req->exptime, time(NULL));
		r = store(st, s, req->key, req->klen, &h, s->read + HDR, len);
		if (r == CACHED_STORED)
			r = CACHED_TOUCHED;
	}
	pthread_mutex_unlock(mu);
	return r;
}

void
cached_store_stats(struct cached_store *st, struct admit_lru_stats *out)
{
	if (admit_lru_stats(st->lru, out) != ADMIT_OK)
		memset(out, 0, sizeof(*out));
}
