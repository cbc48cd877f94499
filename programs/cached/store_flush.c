/*
 * store_flush.c - flush_all and the store's maintenance thread.  A flush
 * empties the live cache with admit_lru_clear, shard after shard, while
 * the other threads' commands go on; an immediate one before its reply, a
 * delayed one in the first command (or the maintenance thread's tick) at
 * or past its time (store.c says why that gives memcached's semantics).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "store_impl.h"

/* Empties the cache; the caller holds flush_mu. */
static int
flush_now(struct cached_store *st)
{
	return admit_lru_clear(st->lru) == ADMIT_OK ? 0 : EINVAL;
}

/*
 * Carries out a delayed flush_all whose time has come.  Called before the
 * caller's command touches the cache; a caller that sees the flush due
 * waits on flush_mu until it is done, so nothing it stores is cleared by
 * it.  flush_at is cleared only after the clear, so whoever reads it as 0
 * stores after every shard was emptied.  The wall clock is read only when a flush is
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
	if (admit_lru_stats(st->lru, ls) != ADMIT_OK)
		memset(ls, 0, sizeof(*ls));
}

/* Once a second: a due delayed flush, then the expired items of every
 * shard (sets reclaim them too, but only on the shards they touch). */
void *
maint_main(void *arg)
{
	struct cached_store *st = arg;
	for (;;) {
		struct timespec until;

		flush_due(st);
		admit_lru_expire(st->lru);
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
