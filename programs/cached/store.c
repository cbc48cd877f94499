/*
 * store.c - memcached items over admit_lru.
 *
 * flush_all releases the capacity at once: it swaps in a new, empty
 * admit_lru and frees the old one when no thread is still using it.  Each
 * thread publishes the admit_lru it works on in a hazard slot of its own
 * for the length of one command; the flusher, after the swap, waits until
 * no slot holds the old pointer (a command takes microseconds).  A delayed
 * flush_all is carried out by the first command (or the reaper's tick) at
 * or past its time, before that command touches the cache, so it removes
 * exactly the items stored before its time, as memcached's does.
 *
 * Expired items are invisible at once and reclaimed by the reaper thread,
 * which pops them from an index ordered by expiry time (expiry.c) and
 * deletes each one still stored with the CAS unique it was indexed with.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/random.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "expiry.h"
#include "store.h"

#define NLOCKS 1024u             /* power of two */
#define REL_EXPTIME_MAX 2592000  /* 30 days: above, an exptime is a Unix time */
#define MAX_SLOTS 1024u          /* hazard slots: workers + reaper */
#define REAP_BATCH 10000u        /* expired items the reaper takes per pass */

/* 16 bytes: each is charged against --memory for every item. */
struct hdr {
	uint64_t cas;
	uint32_t exptime;  /* Unix time; 0 = never */
	uint32_t flags;
};
#define HDR sizeof(struct hdr)

struct cached_store {
	_Atomic(struct admit_lru *) lru;
	struct admit_lru_config cfg;     /* to make the next one on a flush */
	size_t max_item;
	uint64_t seed;
	atomic_uint_fast64_t cas_seq;    /* last unique handed out */
	atomic_int_fast64_t flush_at;    /* pending delayed flush; 0 = none */
	pthread_mutex_t flush_mu;        /* one flush at a time; base */
	struct admit_lru_stats base;     /* counters of flushed admit_lrus */
	struct cached_expiry *exp;
	atomic_uint_fast64_t reclaimed;  /* expired items the reaper deleted */
	atomic_uint nslots;
	_Atomic(struct admit_lru *) hazard[MAX_SLOTS];
	/* The reaper thread. */
	pthread_t reaper;
	bool reaper_started, stopping;   /* under reap_mu */
	pthread_mutex_t reap_mu;
	pthread_cond_t reap_cv;
	struct cached_scratch reap_scratch;
	pthread_mutex_t locks[NLOCKS];
};

static void *reaper_main(void *arg);

int
cached_store_new(uint64_t memory_bytes, size_t max_item, bool admission,
                 struct cached_store **out)
{
	struct admit_lru_config cfg = {
		.capacity_bytes = memory_bytes,
		.policy = admission ? ADMIT_LRU_ADAPTIVE : ADMIT_LRU_PLAIN,
	};
	struct cached_store *st;
	struct admit_lru *lru;
	enum admit_status rc;
	unsigned shards = 16;
	size_t exp_bytes = memory_bytes / 32 > (64u << 10) ? memory_bytes / 32
	                                                   : (64u << 10);

	/* Each shard must hold a few of the largest items. */
	while (shards > 1 && memory_bytes / shards < 4 * (max_item + HDR + 512))
		shards /= 2;
	cfg.shards = shards;
	st = calloc(1, sizeof(*st));
	if (!st)
		return ENOMEM;
	rc = admit_lru_new(&cfg, &lru);
	if (rc != ADMIT_OK) {
		fprintf(stderr, "admit-cached: admit_lru_new: %s\n",
		        admit_strerror(rc));
		free(st);
		return EINVAL;
	}
	if (cached_expiry_new(exp_bytes, &st->exp)) {
		admit_lru_free(lru);
		free(st);
		return ENOMEM;
	}
	atomic_init(&st->lru, lru);
	st->cfg = cfg;
	if (getrandom(&st->seed, sizeof(st->seed), 0) != sizeof(st->seed))
		st->seed = (uint64_t)time(NULL);
	st->max_item = max_item;
	atomic_init(&st->cas_seq, 0);
	atomic_init(&st->flush_at, 0);
	atomic_init(&st->nslots, 0);
	atomic_init(&st->reclaimed, 0);
	for (unsigned i = 0; i < MAX_SLOTS; i++)
		atomic_init(&st->hazard[i], NULL);
	pthread_mutex_init(&st->flush_mu, NULL);
	pthread_mutex_init(&st->reap_mu, NULL);
	pthread_cond_init(&st->reap_cv, NULL);
	for (unsigned i = 0; i < NLOCKS; i++)
		pthread_mutex_init(&st->locks[i], NULL);
	if (cached_scratch_init(&st->reap_scratch, st) ||
	    pthread_create(&st->reaper, NULL, reaper_main, st)) {
		cached_store_free(st);
		return ENOMEM;
	}
	st->reaper_started = true;
	*out = st;
	return 0;
}

void
cached_store_free(struct cached_store *st)
{
	if (!st)
		return;
	if (st->reaper_started) {
		pthread_mutex_lock(&st->reap_mu);
		st->stopping = true;
		pthread_cond_signal(&st->reap_cv);
		pthread_mutex_unlock(&st->reap_mu);
		pthread_join(st->reaper, NULL);
	}
	cached_scratch_free(&st->reap_scratch);
	for (unsigned i = 0; i < NLOCKS; i++)
		pthread_mutex_destroy(&st->locks[i]);
	pthread_mutex_destroy(&st->flush_mu);
	pthread_mutex_destroy(&st->reap_mu);
	pthread_cond_destroy(&st->reap_cv);
	admit_lru_free(atomic_load(&st->lru));
	cached_expiry_free(st->exp);
	free(st);
}

int
cached_scratch_init(struct cached_scratch *s, struct cached_store *st)
{
	s->slot = atomic_fetch_add(&st->nslots, 1);
	if (s->slot >= MAX_SLOTS)
		return EMFILE;
	s->lru = NULL;
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

/*
 * Publishes the admit_lru this thread is about to use in its hazard slot.
 * seq_cst store then load: the slot's store must be ordered before the
 * re-read of st->lru, or a flusher could swap and scan the slots between
 * them and free what this thread then uses.
 */
static void
hz_acquire(struct cached_store *st, struct cached_scratch *s)
{
	struct admit_lru *p;

	for (;;) {
		p = atomic_load(&st->lru);
		atomic_store(&st->hazard[s->slot], p);
		if (atomic_load(&st->lru) == p)
			break;
	}
	s->lru = p;
}

static void
hz_release(struct cached_store *st, struct cached_scratch *s)
{
	/* release: every use of s->lru happens before a flusher that reads
	 * the cleared slot (acquire) frees it. */
	atomic_store_explicit(&st->hazard[s->slot], NULL, memory_order_release);
	s->lru = NULL;
}

static void
add_stats(struct admit_lru_stats *to, const struct admit_lru_stats *from)
{
	to->hits += from->hits;
	to->misses += from->misses;
	to->admitted += from->admitted;
	to->rejected += from->rejected;
	to->evicted += from->evicted;
}

/* Swaps in an empty admit_lru; the caller holds flush_mu and no hazard. */
static int
flush_now(struct cached_store *st)
{
	struct admit_lru *fresh, *old;
	struct admit_lru_stats ls;
	unsigned n = atomic_load(&st->nslots);

	if (admit_lru_new(&st->cfg, &fresh) != ADMIT_OK)
		return ENOMEM;
	/* Cleared first: entries for the old cache's items that land after
	 * this are stale (harmless), while none for the new one's is lost. */
	cached_expiry_clear(st->exp);
	old = atomic_exchange(&st->lru, fresh);
	for (unsigned i = 0; i < n && i < MAX_SLOTS; i++)
		/* acquire: pairs with hz_release, so the slot's owner is
		 * done with old before it is freed. */
		while (atomic_load_explicit(&st->hazard[i], memory_order_acquire) == old)
			sched_yield();
	if (admit_lru_stats(old, &ls) == ADMIT_OK)
		add_stats(&st->base, &ls);
	admit_lru_free(old);
	return 0;
}

/*
 * Carries out a delayed flush_all whose time has come.  Called before the
 * caller takes its hazard; a caller that sees the flush due waits on
 * flush_mu until it is done, so nothing it stores lands in the old cache.
 * flush_at is cleared only after the swap, so whoever reads it as 0 also
 * sees the new cache.
 */
static void
flush_due(struct cached_store *st, int64_t now)
{
	int_fast64_t at = atomic_load(&st->flush_at);

	if (!at || now < at)
		return;
	pthread_mutex_lock(&st->flush_mu);
	at = atomic_load(&st->flush_at);
	if (at && now >= at && flush_now(st) == 0)
		atomic_store(&st->flush_at, 0);
	pthread_mutex_unlock(&st->flush_mu);
}

int
cached_store_flush(struct cached_store *st, int64_t delay)
{
	int rc = 0;

	pthread_mutex_lock(&st->flush_mu);
	if (delay > 0) {
		/* A later flush_all replaces a pending one, as in memcached. */
		atomic_store(&st->flush_at, abs_exptime(delay, time(NULL)));
	} else {
		rc = flush_now(st);
		if (rc == 0)
			atomic_store(&st->flush_at, 0);
	}
	pthread_mutex_unlock(&st->flush_mu);
	return rc;
}

/* Reads key into s->read: its header and data.  The caller holds a hazard. */
static enum cached_lookup
lookup(struct cached_store *st, struct cached_scratch *s, const char *key,
       size_t klen, struct hdr *h, size_t *len)
{
	int64_t now = time(NULL);
	size_t vlen;

	(void)st;
	if (admit_lru_get(s->lru, key, klen, s->read, s->cap, &vlen) != ADMIT_OK ||
	    vlen < HDR)
		return CACHED_MISS;
	memcpy(h, s->read, HDR);
	*len = vlen - HDR;
	if (h->exptime && h->exptime <= (uint64_t)now)
		return CACHED_EXPIRED;
	return CACHED_HIT;
}

/* Stores h + data under key; h->cas is assigned a fresh unique unless
 * keep_cas (touch).  An item with an expiry time goes into the index the
 * reaper reads.  The caller holds the key's mutex and a hazard. */
static enum cached_result
store(struct cached_store *st, struct cached_scratch *s, const char *key,
      size_t klen, struct hdr *h, const char *data, size_t len, bool keep_cas)
{
	if (len > st->max_item)
		return CACHED_TOO_LARGE;
	if (!keep_cas)
		h->cas = atomic_fetch_add(&st->cas_seq, 1) + 1;
	memcpy(s->write, h, HDR);
	if (data != s->write + HDR)
		memcpy(s->write + HDR, data, len);
	switch (admit_lru_set(s->lru, key, klen, s->write, HDR + len)) {
	case ADMIT_OK:
		if (h->exptime)
			cached_expiry_add(st->exp, h->exptime, h->cas, key, klen);
		return CACHED_STORED;
	case ADMIT_REJECTED:  /* stored, then evicted at once by admission */
		return CACHED_STORED;
	case ADMIT_ETOOBIG:
		return CACHED_TOO_LARGE;
	default:
		return CACHED_NOMEM;
	}
}

/* Every command: a due delayed flush first, then the hazard. */
static void
begin(struct cached_store *st, struct cached_scratch *s)
{
	flush_due(st, time(NULL));
	hz_acquire(st, s);
}

enum cached_lookup
cached_store_get(struct cached_store *st, struct cached_scratch *s,
                 const char *key, size_t klen, struct cached_item *it)
{
	struct hdr h;
	size_t len;
	enum cached_lookup r;
	pthread_mutex_t *mu;

	begin(st, s);
	r = lookup(st, s, key, klen, &h, &len);
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
			admit_lru_delete(s->lru, key, klen);
		pthread_mutex_unlock(mu);
	}
	hz_release(st, s);
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
	begin(st, s);
	pthread_mutex_lock(mu);
	found = req->cmd == CACHED_SET ? CACHED_MISS
	        : lookup(st, s, req->key, req->klen, &old, &oldlen);
	switch (req->cmd) {
	case CACHED_ADD:
		r = found == CACHED_HIT ? CACHED_NOT_STORED
		    : store(st, s, req->key, req->klen, &h, data, n, false);
		break;
	case CACHED_REPLACE:
		r = found != CACHED_HIT ? CACHED_NOT_STORED
		    : store(st, s, req->key, req->klen, &h, data, n, false);
		break;
	case CACHED_CAS:
		r = found != CACHED_HIT ? CACHED_NOT_FOUND
		    : old.cas != req->cas ? CACHED_EXISTS
		    : store(st, s, req->key, req->klen, &h, data, n, false);
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
		          oldlen + n, false);
		break;
	default:
		r = store(st, s, req->key, req->klen, &h, data, n, false);
		break;
	}
	pthread_mutex_unlock(mu);
	hz_release(st, s);
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

	begin(st, s);
	pthread_mutex_lock(mu);
	found = lookup(st, s, key, klen, &h, &len);
	if (found != CACHED_MISS)
		admit_lru_delete(s->lru, key, klen);
	pthread_mutex_unlock(mu);
	hz_release(st, s);
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

	begin(st, s);
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
		r = store(st, s, req->key, req->klen, &h, num, len, false);
		if (r == CACHED_STORED) {
			*value = v;
			r = CACHED_NUMBER;
		}
	}
	pthread_mutex_unlock(mu);
	hz_release(st, s);
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

	begin(st, s);
	pthread_mutex_lock(mu);
	if (lookup(st, s, req->key, req->klen, &h, &len) == CACHED_HIT) {
		/* memcached's touch keeps the CAS unique: a gets before it
		 * still guards a cas after it. */
		h.exptime = abs_exptime(req->exptime, time(NULL));
		r = store(st, s, req->key, req->klen, &h, s->read + HDR, len, true);
		if (r == CACHED_STORED)
			r = CACHED_TOUCHED;
	}
	pthread_mutex_unlock(mu);
	hz_release(st, s);
	return r;
}

void
cached_store_stats(struct cached_store *st, struct cached_store_stats *out)
{
	struct admit_lru_stats *ls = &out->lru;

	/* Under flush_mu no swap can free the admit_lru read here. */
	pthread_mutex_lock(&st->flush_mu);
	if (admit_lru_stats(atomic_load(&st->lru), ls) != ADMIT_OK)
		memset(ls, 0, sizeof(*ls));
	add_stats(ls, &st->base);
	pthread_mutex_unlock(&st->flush_mu);
	out->expiry_indexed = cached_expiry_count(st->exp);
	out->expiry_index_bytes = cached_expiry_bytes(st->exp);
	out->expiry_unindexed = cached_expiry_refused(st->exp);
	/* relaxed: a statistic, ordering nothing */
	out->reclaimed = atomic_load_explicit(&st->reclaimed, memory_order_relaxed);
}

/* Deletes the item e names if it is still the one indexed and has
 * expired; an item replaced (a new CAS) or touched (a later expiry time)
 * stays. */
static void
reap_one(struct cached_store *st, struct cached_scratch *s,
         const struct cached_expiry_entry *e)
{
	pthread_mutex_t *mu = lock_of(st, e->key, e->klen);
	struct hdr h;
	size_t len;

	begin(st, s);
	pthread_mutex_lock(mu);
	if (lookup(st, s, e->key, e->klen, &h, &len) == CACHED_EXPIRED &&
	    h.cas == e->cas && admit_lru_delete(s->lru, e->key, e->klen) == ADMIT_OK)
		/* relaxed: a statistic, ordering nothing */
		atomic_fetch_add_explicit(&st->reclaimed, 1, memory_order_relaxed);
	pthread_mutex_unlock(mu);
	hz_release(st, s);
}

/* Once a second (at once while a backlog lasts): a due delayed flush,
 * then every expired item indexed. */
static void *
reaper_main(void *arg)
{
	struct cached_store *st = arg;
	struct cached_expiry_entry e;

	for (;;) {
		uint32_t now = (uint32_t)time(NULL);
		unsigned n = 0;
		struct timespec until;

		flush_due(st, now);
		while (n < REAP_BATCH && cached_expiry_pop(st->exp, now, &e)) {
			reap_one(st, &st->reap_scratch, &e);
			n++;
		}
		pthread_mutex_lock(&st->reap_mu);
		if (n < REAP_BATCH && !st->stopping) {
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 1;
			until.tv_nsec = 0;
			pthread_cond_timedwait(&st->reap_cv, &st->reap_mu, &until);
		}
		if (st->stopping) {
			pthread_mutex_unlock(&st->reap_mu);
			return NULL;
		}
		pthread_mutex_unlock(&st->reap_mu);
	}
}
