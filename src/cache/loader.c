/*
 * loader.c - admit_lru_get_or_load: one loader per key at a time, its
 * other callers waiting for its result.
 *
 * The loads under way are listed in stripes picked by the key's hash, each
 * a mutex, a condition variable and a list.  A caller that misses the
 * cache takes the key's stripe: if a load of the key is listed it waits
 * (holding a reference to it) until the load is done; if not, it lists its
 * own, releases the stripe, runs the loader with no lock held, stores the
 * value through admit_lru_set_expiring_hashed, and then, under the stripe
 * again, takes the load off the list, marks it done and wakes the
 * stripe's waiters.  The result (status, value) is written before done is
 * set under the mutex and never changed after, so waiters read it with no
 * lock; the last reference frees it.
 *
 * A miss can race a load that ends between the caller's get and its look
 * at the stripe: the value is then in the cache but no load is listed.
 * Each stripe counts the loads it ended; a caller that finds the count
 * moved since before its get looks the cache up again rather than load.
 *
 * Waiting: a waiter sleeps until its load ends (blocking, not lock-free);
 * the loader itself runs with no lock of the cache held.
 */
#include "config.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include <admit/lru.h>

#include "alloc.h"
#include "cache/loader.h"
#include "cache/locks.h"
#include "cache/shard.h"
#include "hash.h"

#define LOAD_STRIPES 64u
/* Looks again at most this many times when loads keep ending in between;
 * then loads (a second load of a key is allowed, just not at once). */
#define LOAD_RETRIES 4

/* What the loader hands its value to. */
struct admit_lru_load {
	unsigned char *value;           /* admit_malloc'd; NULL when vlen 0 */
	size_t vlen;
	uint64_t expires;
	bool given;                     /* admit_lru_load_value succeeded */
};

struct load {
	struct admit_lru_load ld;       /* the loader's thread until done */
	struct load *next;              /* in its stripe's list, until done */
	uint64_t h;
	const void *key;                /* the loading caller's, until done */
	size_t klen;
	pthread_t owner;                /* the thread running the loader */
	unsigned refs;                  /* under the stripe mutex */
	bool done;                      /* under the stripe mutex */
	enum admit_status st;           /* the result, written before done */
};

struct stripe {
	alignas(ADMIT_CACHELINE) struct admit_mutex mu;
	pthread_cond_t cv;              /* a load of the stripe ended */
	struct load *head;              /* loads under way, under mu */
	uint64_t ended;                 /* loads ended, under mu */
};

struct admit_loads {
	struct stripe s[LOAD_STRIPES];
	_Atomic uint64_t ok, fail, ns;
};

enum admit_status
admit_loads_new(struct admit_loads **out)
{
	struct admit_loads *t = admit_calloc(1, sizeof(*t));
	unsigned i;

	if (!t)
		return ADMIT_NOMEM;
	for (i = 0; i < LOAD_STRIPES; i++) {
		if (!admit_mutex_init(&t->s[i].mu))
			break;
		if (pthread_cond_init(&t->s[i].cv, NULL) != 0) {
			admit_mutex_destroy(&t->s[i].mu);
			break;
		}
	}
	if (i < LOAD_STRIPES) {
		while (i--) {
			pthread_cond_destroy(&t->s[i].cv);
			admit_mutex_destroy(&t->s[i].mu);
		}
		admit_free(t);
		return ADMIT_NOMEM;
	}
	atomic_init(&t->ok, 0);
	atomic_init(&t->fail, 0);
	atomic_init(&t->ns, 0);
	*out = t;
	return ADMIT_OK;
}

void
admit_loads_free(struct admit_loads *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < LOAD_STRIPES; i++) {
		pthread_cond_destroy(&t->s[i].cv);
		admit_mutex_destroy(&t->s[i].mu);
	}
	admit_free(t);
}

void
admit_loads_stats(struct admit_loads *t, uint64_t *ok, uint64_t *fail,
                  uint64_t *ns)
{
	*ok = atomic_load(&t->ok);
	*fail = atomic_load(&t->fail);
	*ns = atomic_load(&t->ns);
}

enum admit_status
admit_lru_load_value(struct admit_lru_load *ld, const void *value, size_t vlen,
                     uint64_t expires_at)
{
	unsigned char *v = NULL;

	if (!ld || (!value && vlen))
		return ADMIT_EINVAL;
	if (!admit_entry_lengths_ok(0, vlen))
		return ADMIT_ETOOBIG;
	if (vlen) {
		v = admit_malloc(vlen);
		if (!v)
			return ADMIT_NOMEM;
		memcpy(v, value, vlen);
	}
	admit_free(ld->value);
	ld->value = v;
	ld->vlen = vlen;
	ld->expires = expires_at;
	ld->given = true;
	return ADMIT_OK;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct stripe *
stripe_of(struct admit_loads *t, uint64_t h)
{
	/* Middle bits: the high ones pick the shard, the low the bucket. */
	return &t->s[(h >> 24) % LOAD_STRIPES];
}

static struct load *
find(struct stripe *s, uint64_t h, const void *key, size_t klen)
	ADMIT_REQUIRES(s->mu);
static struct load *
find(struct stripe *s, uint64_t h, const void *key, size_t klen)
{
	for (struct load *l = s->head; l; l = l->next)
		if (l->h == h && l->klen == klen &&
		    (!klen || memcmp(l->key, key, klen) == 0))
			return l;
	return NULL;
}

/* Drops a reference to l, freeing it with the last. */
static void
unref(struct stripe *s, struct load *l) ADMIT_EXCLUDES(s->mu)
{
	bool last;

	admit_mutex_lock(&s->mu);
	last = --l->refs == 0;
	admit_mutex_unlock(&s->mu);
	if (last) {
		admit_free(l->ld.value);
		admit_free(l);
	}
}

/* Waits for the load l (referenced) to end; its result. */
static enum admit_status
wait_for(struct stripe *s, struct load *l) ADMIT_REQUIRES(s->mu)
{
	while (!l->done)
		pthread_cond_wait(&s->cv, &s->mu.m);
	return l->st;
}

/* Lends the value of the ended load l, if it succeeded, to fn. */
static enum admit_status
lend(struct stripe *s, struct load *l, enum admit_status st,
     admit_lru_reader_t fn, void *fn_arg)
{
	if (st == ADMIT_OK)
		fn(l->ld.vlen ? l->ld.value : NULL, l->ld.vlen, fn_arg);
	unref(s, l);
	return st;
}

/* Runs the listed load l (this thread's) and ends it. */
static enum admit_status
run(struct admit_lru *c, struct stripe *s, struct load *l,
    admit_lru_loader_t loader, void *loader_arg) ADMIT_EXCLUDES(s->mu)
{
	struct admit_loads *t = c->loads;
	uint64_t t0 = now_ns();
	enum admit_status st = loader(l->key, l->klen, &l->ld, loader_arg);

	if (st == ADMIT_OK && !l->ld.given)
		st = ADMIT_EINVAL;
	atomic_fetch_add(&t->ns, now_ns() - t0);
	atomic_fetch_add(st == ADMIT_OK ? &t->ok : &t->fail, 1);
	if (st == ADMIT_OK)
		(void)admit_lru_set_expiring_hashed(c, l->h, l->key, l->klen,
		                                    l->ld.value, l->ld.vlen,
		                                    l->ld.expires);
	admit_mutex_lock(&s->mu);
	for (struct load **p = &s->head; *p; p = &(*p)->next) {
		if (*p == l) {
			*p = l->next;
			break;
		}
	}
	l->st = st;
	l->done = true;
	s->ended++;
	pthread_cond_broadcast(&s->cv);
	admit_mutex_unlock(&s->mu);
	return st;
}

enum admit_status
admit_lru_get_or_load_hashed(struct admit_lru *c, uint64_t h, const void *key,
                             size_t klen, admit_lru_loader_t loader,
                             void *loader_arg, admit_lru_reader_t fn,
                             void *fn_arg, unsigned flags)
{
	struct stripe *s;
	struct load *l;
	enum admit_status st;
	uint64_t ended;

	if (!c || !loader || !fn || !admit_key_ok(key, klen) ||
	    (flags & ~ADMIT_LRU_NOWAIT))
		return ADMIT_EINVAL;
	s = stripe_of(c->loads, h);
	for (int tries = 0;; tries++) {
		admit_mutex_lock(&s->mu);
		ended = s->ended;
		admit_mutex_unlock(&s->mu);
		st = admit_lru_get_with_hashed(c, h, key, klen, fn, fn_arg);
		if (st != ADMIT_NOTFOUND)
			return st;
		admit_mutex_lock(&s->mu);
		l = find(s, h, key, klen);
		if (l) {
			if ((flags & ADMIT_LRU_NOWAIT) ||
			    pthread_equal(l->owner, pthread_self())) {
				admit_mutex_unlock(&s->mu);
				return ADMIT_LOADING;
			}
			l->refs++;
			st = wait_for(s, l);
			admit_mutex_unlock(&s->mu);
			return lend(s, l, st, fn, fn_arg);
		}
		if (s->ended == ended || tries == LOAD_RETRIES)
			break;
		/* A load of the stripe ended since the get: perhaps this
		 * key's, whose value the cache now holds. */
		admit_mutex_unlock(&s->mu);
	}
	l = admit_calloc(1, sizeof(*l));
	if (!l) {
		admit_mutex_unlock(&s->mu);
		return ADMIT_NOMEM;
	}
	l->h = h;
	l->key = key;
	l->klen = klen;
	l->owner = pthread_self();
	l->refs = 1;
	l->next = s->head;
	s->head = l;
	admit_mutex_unlock(&s->mu);
	st = run(c, s, l, loader, loader_arg);
	return lend(s, l, st, fn, fn_arg);
}

enum admit_status
admit_lru_get_or_load(struct admit_lru *c, const void *key, size_t klen,
                      admit_lru_loader_t loader, void *loader_arg,
                      admit_lru_reader_t fn, void *fn_arg, unsigned flags)
{
	if (!c || !admit_key_ok(key, klen))
		return ADMIT_EINVAL;
	return admit_lru_get_or_load_hashed(c, shard_hash(c, key, klen), key,
	                                    klen, loader, loader_arg, fn, fn_arg,
	                                    flags);
}
