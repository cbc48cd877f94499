/*
 * store_flush.c - flush_all and the store's maintenance thread.  An
 * immediate flush swaps in an empty admit_lru and frees the old one once
 * no thread's hazard slot holds it; a delayed one is carried out by the
 * first command, or the maintenance thread's tick, at or past its time
 * (store.c says why).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "store_impl.h"

static void
add_stats(struct admit_lru_stats *to, const struct admit_lru_stats *from)
{
	to->hits += from->hits;
	to->misses += from->misses;
	to->admitted += from->admitted;
	to->rejected += from->rejected;
	to->evicted += from->evicted;
	to->expired += from->expired;
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
 * sees the new cache.  The wall clock is read only when a flush is
 * pending.
 */
void
flush_due(struct cached_store *st)
{
	int_fast64_t at = atomic_load(&st->flush_at);
	int64_t now;

	if (!at)
		return;
	now = time(NULL);
	if (now < at)
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
	int64_t at;

	pthread_mutex_lock(&st->flush_mu);
	if (delay > 0) {
		at = delay <= REL_EXPTIME_MAX ? time(NULL) + delay
		     : delay > (int64_t)UINT32_MAX ? (int64_t)UINT32_MAX : delay;
		/* A later flush_all replaces a pending one, as in memcached. */
		atomic_store(&st->flush_at, at);
	} else {
		rc = flush_now(st);
		if (rc == 0)
			atomic_store(&st->flush_at, 0);
		/* memcached takes a CAS unique to mark where an immediate
		 * flush stands; taking one too keeps the uniques of both
		 * servers alike for alike commands. */
		atomic_fetch_add(&st->cas_seq, 1);
	}
	pthread_mutex_unlock(&st->flush_mu);
	return rc;
}

void
cached_store_stats(struct cached_store *st, struct cached_store_stats *out)
{
	struct admit_lru_stats *ls = &out->lru;

	flush_due(st);
	/* Under flush_mu no swap can free the admit_lru read here. */
	pthread_mutex_lock(&st->flush_mu);
	if (admit_lru_stats(atomic_load(&st->lru), ls) != ADMIT_OK)
		memset(ls, 0, sizeof(*ls));
	add_stats(ls, &st->base);
	pthread_mutex_unlock(&st->flush_mu);
}

/* Once a second: a due delayed flush, then the expired items of every
 * shard (sets reclaim them too, but only on the shards they touch). */
void *
maint_main(void *arg)
{
	struct cached_store *st = arg;
	struct cached_scratch *s = &st->maint_scratch;

	for (;;) {
		struct timespec until;

		flush_due(st);
		hz_acquire(st, s);
		admit_lru_expire(s->lru);
		hz_release(st, s);
		pthread_mutex_lock(&st->maint_mu);
		if (!st->stopping) {
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 1;
			pthread_cond_timedwait(&st->maint_cv, &st->maint_mu, &until);
		}
		if (st->stopping) {
			pthread_mutex_unlock(&st->maint_mu);
			return NULL;
		}
		pthread_mutex_unlock(&st->maint_mu);
	}
}
