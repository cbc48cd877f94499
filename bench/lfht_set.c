/*
 * lfht_set.c - liburcu's lock-free resizable hash table (cds_lfht, urcu-bp
 * flavour, so threads need no registration) used as a set of 64-bit hashes:
 * what a deduplicator that wants exact answers reaches for.
 */
#include "config.h"

#include <stdlib.h>

#include <urcu-bp.h>
#include <urcu/rculfhash.h>

#include "sets.h"

struct bench_lfht {
	struct cds_lfht *ht;
};

struct lfht_node {
	uint64_t h;
	struct cds_lfht_node node;
	struct rcu_head rcu;
};

static int
match(struct cds_lfht_node *node, const void *key)
{
	return caa_container_of(node, struct lfht_node, node)->h ==
	       *(const uint64_t *)key;
}

static void
free_node(struct rcu_head *head)
{
	free(caa_container_of(head, struct lfht_node, rcu));
}

struct bench_lfht *
bench_lfht_new(uint64_t items)
{
	struct bench_lfht *s = calloc(1, sizeof(*s));
	unsigned long size = 1;

	if (!s)
		return NULL;
	while (size < items)
		size <<= 1;
	/* Presized as a user who knows n would; it may still grow. */
	s->ht = cds_lfht_new(size, 1, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
	                     NULL);
	if (!s->ht) {
		free(s);
		return NULL;
	}
	return s;
}

void
bench_lfht_free(struct bench_lfht *s)
{
	struct cds_lfht_iter it;
	struct lfht_node *n;

	if (!s)
		return;
	/* Nobody else uses the table any more: unlink every node, and let the
	 * call_rcu thread free them; rcu_barrier() waits until it has. */
	rcu_read_lock();
	cds_lfht_for_each_entry(s->ht, &it, n, node) {
		if (cds_lfht_del(s->ht, &n->node) == 0)
			call_rcu(&n->rcu, free_node);
	}
	rcu_read_unlock();
	rcu_barrier();
	(void)cds_lfht_destroy(s->ht, NULL);
	free(s);
}

bool
bench_lfht_insert(struct bench_lfht *s, uint64_t h)
{
	struct lfht_node *n = malloc(sizeof(*n));
	struct cds_lfht_node *got;

	if (!n)
		return false;
	n->h = h;
	cds_lfht_node_init(&n->node);
	rcu_read_lock();
	got = cds_lfht_add_unique(s->ht, h, match, &h, &n->node);
	rcu_read_unlock();
	if (got != &n->node) {
		free(n);
		return false;
	}
	return true;
}

bool
bench_lfht_contains(struct bench_lfht *s, uint64_t h)
{
	struct cds_lfht_iter it;
	bool found;

	rcu_read_lock();
	cds_lfht_lookup(s->ht, h, match, &h, &it);
	found = cds_lfht_iter_get_node(&it) != NULL;
	rcu_read_unlock();
	return found;
}

bool
bench_lfht_delete(struct bench_lfht *s, uint64_t h)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;
	bool ok = false;

	rcu_read_lock();
	cds_lfht_lookup(s->ht, h, match, &h, &it);
	node = cds_lfht_iter_get_node(&it);
	if (node && cds_lfht_del(s->ht, node) == 0) {
		call_rcu(&caa_container_of(node, struct lfht_node, node)->rcu,
		         free_node);
		ok = true;
	}
	rcu_read_unlock();
	return ok;
}
