/* tightlru.h: a mutex, an open-addressed map, an LRU list in one array. */
#include "tightlru.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX

struct node {
	uint64_t key;
	uint32_t prev, next;       /* LRU list by index, most recent at head */
	unsigned char val[32];
};

/* A slot holds its key, so that a probe reads the table's lines only. */
struct slot {
	uint64_t key;
	uint32_t node;             /* index + 1; 0: empty */
};

struct tightlru {
	pthread_mutex_t lock;
	struct slot *slots;
	size_t mask;               /* slots - 1, a power of two >= 2 x capacity */
	struct node *nodes;        /* capacity nodes, allocated once */
	uint32_t head, tail;       /* NIL when empty */
	size_t used, capacity;
	uint64_t evictions;
};

/* The home slot of key: a 64-bit finaliser, as keys may be sequential. */
static size_t
home(const struct tightlru *t, uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	key *= 0xc4ceb9fe1a85ec53ull;
	key ^= key >> 33;
	return (size_t)key & t->mask;
}

/* The slot holding key, or the empty slot that ends its probe. */
static size_t
find(const struct tightlru *t, uint64_t key)
{
	size_t i = home(t, key);

	while (t->slots[i].node && t->slots[i].key != key)
		i = (i + 1) & t->mask;
	return i;
}

/* Empties slot i and shifts back the entries of its probe run that would
 * otherwise not be found past the hole. */
static void
erase(struct tightlru *t, size_t i)
{
	size_t j = i;

	for (;;) {
		size_t k;

		j = (j + 1) & t->mask;
		if (!t->slots[j].node)
			break;
		k = home(t, t->slots[j].key);
		/* The entry at j stays when its home is cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		t->slots[i] = t->slots[j];
		i = j;
	}
	t->slots[i].node = 0;
}

static void
unlink_node(struct tightlru *t, uint32_t n)
{
	struct node *x = &t->nodes[n];

	if (x->prev != NIL)
		t->nodes[x->prev].next = x->next;
	else
		t->head = x->next;
	if (x->next != NIL)
		t->nodes[x->next].prev = x->prev;
	else
		t->tail = x->prev;
}

static void
push_front(struct tightlru *t, uint32_t n)
{
	struct node *x = &t->nodes[n];

	x->prev = NIL;
	x->next = t->head;
	if (t->head != NIL)
		t->nodes[t->head].prev = n;
	else
		t->tail = n;
	t->head = n;
}

struct tightlru *
tightlru_new(size_t capacity)
{
	struct tightlru *t;
	size_t ns = 2;

	if (capacity < 1 || capacity >= (size_t)1 << 31)
		return NULL;
	while (ns < 2 * capacity)  /* load factor at most 1/2 */
		ns <<= 1;
	if (!(t = calloc(1, sizeof(*t))))
		return NULL;
	t->slots = calloc(ns, sizeof(*t->slots));
	t->nodes = calloc(capacity, sizeof(*t->nodes));
	if (!t->slots || !t->nodes || pthread_mutex_init(&t->lock, NULL)) {
		free(t->slots);
		free(t->nodes);
		free(t);
		return NULL;
	}
	t->mask = ns - 1;
	t->capacity = capacity;
	t->head = t->tail = NIL;
	return t;
}

void
tightlru_free(struct tightlru *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t->slots);
	free(t->nodes);
	free(t);
}

int
tightlru_get(struct tightlru *t, uint64_t key, unsigned char val[32])
{
	size_t i;
	uint32_t n = 0;

	pthread_mutex_lock(&t->lock);
	i = find(t, key);
	if (t->slots[i].node) {
		n = t->slots[i].node - 1;
		memcpy(val, t->nodes[n].val, 32);
		if (t->head != n) {
			unlink_node(t, n);
			push_front(t, n);
		}
		n++;
	}
	pthread_mutex_unlock(&t->lock);
	return n != 0;
}

void
tightlru_set(struct tightlru *t, uint64_t key, const unsigned char val[32])
{
	size_t i;
	uint32_t n;

	pthread_mutex_lock(&t->lock);
	i = find(t, key);
	if (t->slots[i].node) {
		n = t->slots[i].node - 1;
		unlink_node(t, n);
	} else {
		if (t->used < t->capacity) {
			n = (uint32_t)t->used++;
		} else {
			n = t->tail;
			unlink_node(t, n);
			erase(t, find(t, t->nodes[n].key));
			t->evictions++;
			/* The erase may have shifted key's probe run. */
			i = find(t, key);
		}
		t->slots[i].key = key;
		t->slots[i].node = n + 1;
		t->nodes[n].key = key;
	}
	memcpy(t->nodes[n].val, val, 32);
	push_front(t, n);
	pthread_mutex_unlock(&t->lock);
}

size_t
tightlru_size(struct tightlru *t)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = t->used;
	pthread_mutex_unlock(&t->lock);
	return n;
}

uint64_t
tightlru_evictions(struct tightlru *t)
{
	uint64_t n;

	pthread_mutex_lock(&t->lock);
	n = t->evictions;
	pthread_mutex_unlock(&t->lock);
	return n;
}
