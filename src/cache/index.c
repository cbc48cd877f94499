/*
 * index.c - a shard's index (index.h): the writer's side and the grow.
 *
 * Ordering: every store a reader may follow is a release (admit_rcu_publish)
 * and every reader's load an acquire (admit_rcu_deref), so a reader that
 * reaches an entry sees it whole.  A grow makes `resizing` odd before its
 * first relink and even after its last (stripe_lock / stripe_unlock), and
 * publishes the new table before making it even again.  The old table is
 * freed by a callback after a grace period: no reader is still in it.
 * Progress: readers never wait but for a grow, through the caller.
 */
#include "config.h"

#include "alloc.h"
#include "cache/index.h"

static struct admit_index_table *
table_new(size_t nbuckets, _Atomic uint64_t *pending)
{
	struct admit_index_table *t;

	if (nbuckets > (SIZE_MAX - sizeof(*t)) / sizeof(t->bucket[0]))
		return NULL;
	t = admit_calloc(1, sizeof(*t) + nbuckets * sizeof(t->bucket[0]));
	if (t) {
		t->pending = pending;
		t->nbuckets = nbuckets;
	}
	return t;
}

enum admit_status
admit_index_init(struct admit_index *ix, uint64_t entries,
                 _Atomic uint64_t *pending)
{
	struct admit_index_table *t;
	size_t nbuckets;

	for (nbuckets = 64; nbuckets < entries && nbuckets < ((size_t)1 << 30); )
		nbuckets *= 2;
	t = table_new(nbuckets, pending);
	if (!t)
		return ADMIT_NOMEM;
	atomic_init(&ix->table, t);
	atomic_init(&ix->resizing, 0);
	ix->pending = pending;
	return ADMIT_OK;
}

void
admit_index_destroy(struct admit_index *ix)
{
	admit_free(admit_index_table_locked(ix));
}

void
admit_index_insert_locked(_Atomic(struct entry *) *where, struct entry *e)
{
	atomic_init(&e->hnext, NULL);
	admit_rcu_publish(where, e);
}

void
admit_index_replace_locked(_Atomic(struct entry *) *where, struct entry *old,
                           struct entry *e)
{
	/* relaxed: the writer's own store. */
	atomic_init(&e->hnext, atomic_load_explicit(&old->hnext,
	                                            memory_order_relaxed));
	admit_rcu_publish(where, e);
}

void
admit_index_remove_locked(struct admit_index *ix, struct entry *e)
{
	_Atomic(struct entry *) *p;

	admit_index_find_locked(ix, e->hash, e->data, e->klen, &p);
	/* relaxed load: the writer's own store. */
	admit_rcu_publish(p, atomic_load_explicit(&e->hnext, memory_order_relaxed));
}

static void
free_table(struct rcu_head *head)
{
	struct admit_index_table *t = caa_container_of(head,
	                                               struct admit_index_table,
	                                               rcu);
	_Atomic uint64_t *pending;

	admit_rcu_callback_begin();  /* before the first read of *t */
	pending = t->pending;
	admit_free(t);
	atomic_fetch_sub(pending, 1);
	admit_rcu_callback_end();
}

void
admit_index_grow_locked(struct admit_index *ix, uint64_t entries)
{
	struct admit_index_table *old = admit_index_table_locked(ix), *t;
	size_t n = old->nbuckets * 2;

	if (entries <= old->nbuckets || !(t = table_new(n, ix->pending)))
		return;
	/* Uncontended (writers are serialised); the relinks below are
	 * release stores, so a reader that sees one also sees the odd
	 * stripe. */
	stripe_lock(&ix->resizing);
	for (size_t i = 0; i < old->nbuckets; i++) {
		/* relaxed loads: the writer's own stores. */
		struct entry *e = atomic_load_explicit(&old->bucket[i],
		                                       memory_order_relaxed), *next;

		for (; e; e = next) {
			_Atomic(struct entry *) *b = &t->bucket[e->hash & (n - 1)];

			next = atomic_load_explicit(&e->hnext, memory_order_relaxed);
			admit_rcu_publish(&e->hnext,
			                  atomic_load_explicit(b, memory_order_relaxed));
			/* relaxed: t is published below, with release. */
			atomic_store_explicit(b, e, memory_order_relaxed);
		}
	}
	admit_rcu_publish(&ix->table, t);
	stripe_unlock(&ix->resizing);
	atomic_fetch_add(ix->pending, 1);
	admit_rcu_call(&old->rcu, free_table);
}

size_t
admit_index_buckets(struct admit_index *ix)
{
	return admit_index_table_locked(ix)->nbuckets;
}
