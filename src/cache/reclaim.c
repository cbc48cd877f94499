/*
 * reclaim.c - freeing a shard's dead entries (reclaim.h).
 *
 * Ordering: the callback reads the rings' tails after a grace period that
 * follows every read-side section that could push a batch's entries, then
 * pushes the batch on `ready` with a release CAS; the mutex holder takes
 * the stack with an acquire exchange.  The callback never waits.
 */
#include "config.h"

#include <string.h>

#include "alloc.h"
#include "cache/reclaim.h"
#include "rcu.h"

#if ADMIT_TSAN
/* rcu.h's token, one for the library: the callbacks here free what
 * readers in other files read. */
char admit_rcu_token;
#endif

struct admit_reclaim_batch {
	struct rcu_head rcu;
	struct admit_reclaim *r;
	struct admit_reclaim_batch *next;     /* in one of r's lists */
	struct admit_readbuf_mark tail;       /* the tails after the grace
	                                       * period */
	size_t count;                         /* entries in e */
	struct entry *e[];
};

void
admit_reclaim_init(struct admit_reclaim *r, struct admit_readbuf *rb,
                   _Atomic uint64_t *pending)
{
	*r = (struct admit_reclaim){ .rb = rb, .pending = pending };
	atomic_init(&r->ready, NULL);
}

void
admit_reclaim_retire_locked(struct admit_reclaim *r, struct entry *e)
{
	e->dead = true;
	if (r->nlimbo == ADMIT_RECLAIM_BATCH)
		admit_reclaim_flush_locked(r);
	if (r->nlimbo < ADMIT_RECLAIM_BATCH) {
		r->limbo[r->nlimbo++] = e;
	} else {
		e->limbo = r->more;
		r->more = e;
		r->nmore++;
	}
	r->held++;
	r->limbo_bytes += admit_entry_charge(admit_entry_klen(e), e->vlen);
}

/* The grace period has passed: no reader holds the batch's entries or is
 * still pushing them, so every slot naming them lies below the tails read
 * here. */
static void
batch_ready(struct rcu_head *head)
{
	struct admit_reclaim_batch *b = caa_container_of(head,
	                                                 struct admit_reclaim_batch,
	                                                 rcu);
	struct admit_reclaim *r;
	_Atomic uint64_t *pending;

	admit_rcu_callback_begin();  /* before the first read of *b */
	r = b->r;
	pending = r->pending;
	admit_readbuf_tails(r->rb, &b->tail);
	/* relaxed: the CAS below publishes b. */
	b->next = atomic_load_explicit(&r->ready, memory_order_relaxed);
	/* release: pairs with the acquire exchange in
	 * admit_reclaim_collect_locked(). */
	while (!atomic_compare_exchange_weak_explicit(&r->ready, &b->next, b,
	                                              memory_order_release,
	                                              memory_order_relaxed))
		;
	atomic_fetch_sub(pending, 1);
	admit_rcu_callback_end();
}

void
admit_reclaim_flush_locked(struct admit_reclaim *r)
{
	struct admit_reclaim_batch *b;

	if (r->nlimbo < ADMIT_RECLAIM_BATCH && r->limbo_bytes < ADMIT_RECLAIM_BYTES)
		return;
	b = admit_malloc(sizeof(*b) +
	                 ((size_t)r->nlimbo + r->nmore) * sizeof(b->e[0]));
	if (!b)
		return;
	*b = (struct admit_reclaim_batch){ .r = r, .count = r->nlimbo };
	memcpy(b->e, r->limbo, r->nlimbo * sizeof(b->e[0]));
	for (struct entry *e = r->more; e; e = e->limbo)
		b->e[b->count++] = e;
	r->more = NULL;
	r->nlimbo = r->nmore = 0;
	r->limbo_bytes = 0;
	atomic_fetch_add(r->pending, 1);
	admit_rcu_call(&b->rcu, batch_ready);
}

static void
free_batch(struct admit_reclaim *r, struct admit_reclaim_batch *b)
{
	r->held -= b->count;
	/* A dead entry's line is long cold: start every miss at once. */
	for (size_t i = 0; i < b->count; i++)
		__builtin_prefetch(b->e[i]);
	for (size_t i = 0; i < b->count; i++)
		admit_free(b->e[i]);
	admit_free(b);
}

static size_t
collect(struct admit_reclaim *r, bool all)
{
	struct admit_reclaim_batch *b, *next, *keep = NULL;
	size_t kept = 0;

	/* relaxed: a hint; the exchange below is what reads the batches. */
	if (!atomic_load_explicit(&r->ready, memory_order_relaxed) && !r->waiting)
		return 0;
	/* acquire: pairs with the release in batch_ready(). */
	b = atomic_exchange_explicit(&r->ready, NULL, memory_order_acquire);
	for (; b || r->waiting; b = next) {
		if (!b) {
			b = r->waiting;
			r->waiting = NULL;
		}
		next = b->next;
		if (all || admit_readbuf_passed(r->rb, &b->tail)) {
			free_batch(r, b);
		} else {
			b->next = keep;
			keep = b;
			kept++;
		}
	}
	r->waiting = keep;
	return kept;
}

size_t
admit_reclaim_collect_locked(struct admit_reclaim *r)
{
	return collect(r, false);
}

void
admit_reclaim_destroy(struct admit_reclaim *r)
{
	struct entry *e, *next;

	for (unsigned i = 0; i < r->nlimbo; i++)
		admit_free(r->limbo[i]);
	for (e = r->more; e; e = next) {
		next = e->limbo;
		admit_free(e);
	}
	r->more = NULL;
	r->nlimbo = r->nmore = 0;
	collect(r, true);
}
