/*
 * index.c - a shard's index (index.h): the writer's side and the grow.
 *
 * Ordering: every store a reader may follow is a release (admit_rcu_publish)
 * and every reader's load an acquire (admit_rcu_deref), so a reader that
 * reaches an entry sees it whole.  A grow makes `resizing` odd before its
 * first relink and even after its last (stripe_lock / stripe_unlock), and
 * publishes the new table before making it even again.  The old table is
 * freed by a callback after a grace period: no reader is still in it.
 * A bucket's summary gains an entry's tag before the entry is linked and
 * loses it only after the unlink, so it never lacks the tag of an entry a
 * reader could reach through it; a grow builds the new table's summaries
 * before publishing it.
 * Progress: readers never wait but for a grow, through the caller.
 */
#include "config.h"

#include "alloc.h"
#include "cache/index.h"
#include "debug.h"

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
                 _Atomic uint64_t *pending, admit_index_hash_t hash,
                 const void *ctx)
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
	ix->hash = hash;
	ix->hash_ctx = ctx;
	return ADMIT_OK;
}

void
admit_index_destroy(struct admit_index *ix)
{
	admit_free(admit_index_table_locked(ix));
}

static _Atomic uintptr_t *
bucket_locked(struct admit_index *ix, uint64_t h)
{
	return admit_index_bucket(admit_index_table_locked(ix), h);
}

/* relaxed, the chain words' loads below: the writer's own stores. */
static uintptr_t
word_locked(_Atomic uintptr_t *p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

static uint64_t
hash_of(const struct admit_index *ix, const struct entry *e)
{
	return ix->hash(ix->hash_ctx, e);
}

void
admit_index_insert_locked(struct admit_index *ix, _Atomic uintptr_t *where,
                          struct entry *e, uint64_t h)
{
	_Atomic uintptr_t *b = bucket_locked(ix, h);
	uintptr_t tag = admit_index_tag(h);

	debug_check(admit_index_taggable(e));
	atomic_init(&e->hnext, 0);
	if (where == b) {
		admit_rcu_publish(b, (uintptr_t)e | tag |
		                     (word_locked(b) & ADMIT_INDEX_SUMMARY));
		return;
	}
	/* The tag first: a reader never finds a summary without the tag of an
	 * entry it could reach. */
	if (ADMIT_INDEX_TAGS && !(word_locked(b) & tag))
		admit_rcu_publish(b, word_locked(b) | tag);
	admit_rcu_publish(where, (uintptr_t)e);
}

void
admit_index_replace_locked(_Atomic uintptr_t *where, struct entry *old,
                           struct entry *e)
{
	atomic_init(&e->hnext, word_locked(&old->hnext));
	/* The same key, so the same tag: a bucket's summary stands. */
	admit_rcu_publish(where, (uintptr_t)e |
	                         (word_locked(where) & ADMIT_INDEX_SUMMARY));
}

/* The tags of the chain from entry e on. */
static uintptr_t
chain_tags(const struct admit_index *ix, struct entry *e)
{
	uintptr_t sum = 0;

	for (; e; e = admit_index_entry(word_locked(&e->hnext)))
		sum |= admit_index_tag(hash_of(ix, e));
	return sum;
}

/* The chain word of bucket b's chain that holds e, or NULL. */
static _Atomic uintptr_t *
link_to(_Atomic uintptr_t *b, const struct entry *e)
{
	_Atomic uintptr_t *p = b;
	struct entry *x;

	while ((x = admit_index_entry(word_locked(p))) != e) {
		if (!x)
			return NULL;
		p = &x->hnext;
	}
	return p;
}

void
admit_index_remove_locked(struct admit_index *ix, struct entry *e)
{
	struct admit_index_table *t = admit_index_table_locked(ix);
	_Atomic uintptr_t *b = bucket_locked(ix, hash_of(ix, e)), *p;
	uintptr_t w, sum;

	/* Filed under a wrong hash: in some other bucket. */
	for (size_t i = 0; !(p = link_to(b, e)) && i < t->nbuckets; i++)
		b = &t->bucket[i];
	debug_check(p != NULL);
	admit_rcu_publish(p, word_locked(&e->hnext) |
	                     (word_locked(p) & ADMIT_INDEX_SUMMARY));
	/* Then the summary without e's tag, unless another entry has it. */
	w = word_locked(b);
	sum = chain_tags(ix, admit_index_entry(w));
	if ((w & ADMIT_INDEX_SUMMARY) != sum)
		admit_rcu_publish(b, (uintptr_t)admit_index_entry(w) | sum);
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
		struct entry *e = admit_index_entry(word_locked(&old->bucket[i])),
		             *next;

		for (; e; e = next) {
			uint64_t h = hash_of(ix, e);
			/* A misfiled entry keeps its bucket's number. */
			size_t nb = (h & (old->nbuckets - 1)) == i ? h & (n - 1) : i;
			_Atomic uintptr_t *b = &t->bucket[nb];
			uintptr_t w = word_locked(b);

			next = admit_index_entry(word_locked(&e->hnext));
			admit_rcu_publish(&e->hnext, (uintptr_t)admit_index_entry(w));
			/* relaxed: t is published below, with release. */
			atomic_store_explicit(b, (uintptr_t)e |
			                         (w & ADMIT_INDEX_SUMMARY) |
			                         admit_index_tag(h),
			                      memory_order_relaxed);
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

bool
admit_index_check_locked(struct admit_index *ix)
{
	struct admit_index_table *t = admit_index_table_locked(ix);

	for (size_t i = 0; i < t->nbuckets; i++) {
		uintptr_t w = word_locked(&t->bucket[i]);

		if ((w & ADMIT_INDEX_SUMMARY) != chain_tags(ix, admit_index_entry(w)))
			return false;
	}
	return true;
}
