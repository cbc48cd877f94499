/*
 * listener.c - a shard's removed entries: counted by cause, retired, or
 * handed to the removal listener outside the shard mutex (listener.h).
 *
 * Ordering: the gone list and the counters are under the shard mutex.  A
 * delivering call detaches the list before it unlocks, so each entry is
 * told to one listener call only; the entries stay unreclaimed (not in the
 * limbo, so no callback can free them) until the same call retires them
 * under the mutex after the listener returned.
 */
#include "config.h"

#include "alloc.h"
#include "cache/shard.h"

void
shard_gone_locked(struct shard *s, struct entry *e, enum admit_lru_cause cause)
{
	struct admit_gone *g = &s->gone;

	g->count[cause]++;
	g->bytes[cause] += admit_entry_charge(admit_entry_klen(e), e->vlen);
	if (!s->c->listener) {
		admit_reclaim_retire_locked(&s->rec, e);
		return;
	}
	/* Dead now: a buffered read of e drained before it is retired must
	 * not move it (shard.c's apply_events). */
	e->dead = true;
	/* relaxed: read back by the thread that takes the list, after the
	 * mutex; a lock-free reader's quiet-hit test may read it too and
	 * takes any value as a guess (policy.h). */
	atomic_store_explicit(&e->node.seg, (uint8_t)cause,
	                      memory_order_relaxed);
	e->node.next = NULL;
	if (g->tail)
		g->tail->node.next = &e->node;
	else
		g->head = e;
	g->tail = e;
}

/* The entry after e on a gone list, or NULL. */
static struct entry *
next_gone(const struct entry *e)
{
	return e->node.next ? admit_entry_of(e->node.next) : NULL;
}

/* Tells the listener of each entry of the list at e. */
static void
tell(const struct admit_lru *c, struct entry *e)
{
	for (; e; e = next_gone(e)) {
		size_t klen = admit_entry_klen(e);

		c->listener(klen ? e->data : NULL, klen,
		            e->vlen ? admit_entry_value(e) : NULL, e->vlen,
		            (enum admit_lru_cause)admit_policy_seg_of(&e->node),
		            c->listener_arg);
	}
}

void
shard_unlock_deliver_slow(struct shard *s)
{
	struct entry *list = s->gone.head, *e, *next;

	s->gone.head = s->gone.tail = NULL;
	admit_mutex_unlock(&s->mu);
	if (!list)
		return;
	tell(s->c, list);
	admit_mutex_lock(&s->mu);
	for (e = list; e; e = next) {
		next = next_gone(e);
		admit_reclaim_retire_locked(&s->rec, e);
	}
	admit_reclaim_flush_locked(&s->rec);
	admit_mutex_unlock(&s->mu);
}

void
shard_gone_destroy(struct shard *s)
{
	struct entry *list = s->gone.head, *e, *next;

	s->gone.head = s->gone.tail = NULL;
	if (list)
		tell(s->c, list);
	for (e = list; e; e = next) {
		next = next_gone(e);
		admit_free(e);
	}
}
