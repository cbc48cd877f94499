/* maplru.h: a mutex, a chained hash map, an LRU list (the baseline). */
#include "maplru.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

struct node {
	struct node *next_in_bucket;
	struct node *prev, *next;          /* LRU list, most recent at head */
	uint64_t key;
	unsigned char val[32];
};

struct maplru {
	pthread_mutex_t lock;
	struct node **buckets;
	size_t mask;                       /* buckets - 1, a power of two */
	struct node head;                  /* sentinel of the LRU list */
	struct node *nodes;                /* capacity nodes, allocated once */
	size_t used, capacity;
};

static struct node **
slot(struct maplru *m, uint64_t key)
{
	return &m->buckets[XXH3_64bits(&key, sizeof(key)) & m->mask];
}

static void
unlink_lru(struct node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
}

static void
push_front(struct maplru *m, struct node *n)
{
	n->next = m->head.next;
	n->prev = &m->head;
	m->head.next->prev = n;
	m->head.next = n;
}

struct maplru *
maplru_new(size_t capacity)
{
	struct maplru *m = calloc(1, sizeof(*m));
	size_t nb = 1;

	while (nb < capacity)      /* load factor at most 1, as users size them */
		nb <<= 1;
	if (!m || !capacity)
		goto fail;
	m->buckets = calloc(nb, sizeof(*m->buckets));
	m->nodes = calloc(capacity, sizeof(*m->nodes));
	if (!m->buckets || !m->nodes)
		goto fail;
	m->mask = nb - 1;
	m->capacity = capacity;
	m->head.next = m->head.prev = &m->head;
	pthread_mutex_init(&m->lock, NULL);
	return m;
fail:
	if (m) {
		free(m->buckets);
		free(m->nodes);
	}
	free(m);
	return NULL;
}

void
maplru_free(struct maplru *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	free(m->buckets);
	free(m->nodes);
	free(m);
}

int
maplru_get(struct maplru *m, uint64_t key, unsigned char val[32])
{
	struct node *n;

	pthread_mutex_lock(&m->lock);
	for (n = *slot(m, key); n && n->key != key; n = n->next_in_bucket)
		;
	if (n) {
		memcpy(val, n->val, sizeof(n->val));
		unlink_lru(n);
		push_front(m, n);
	}
	pthread_mutex_unlock(&m->lock);
	return n != NULL;
}

void
maplru_set(struct maplru *m, uint64_t key, const unsigned char val[32])
{
	struct node *n, **pp;

	pthread_mutex_lock(&m->lock);
	for (n = *slot(m, key); n && n->key != key; n = n->next_in_bucket)
		;
	if (n) {
		unlink_lru(n);
	} else {
		if (m->used < m->capacity) {
			n = &m->nodes[m->used++];
		} else {
			n = m->head.prev;  /* evict the least recently used */
			unlink_lru(n);
			for (pp = slot(m, n->key); *pp != n; pp = &(*pp)->next_in_bucket)
				;
			*pp = n->next_in_bucket;
		}
		n->key = key;
		pp = slot(m, key);
		n->next_in_bucket = *pp;
		*pp = n;
	}
	memcpy(n->val, val, sizeof(n->val));
	push_front(m, n);
	pthread_mutex_unlock(&m->lock);
}
