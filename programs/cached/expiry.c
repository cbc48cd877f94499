/*
 * expiry.c - a binary min-heap of expiring items, ordered by expiry time.
 * add and pop are O(log n) under one mutex; only sets with an expiry time
 * and the reaper touch it, never a get.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "expiry.h"

struct node {
	uint32_t exptime;
	uint8_t klen;
	uint64_t cas;
	char key[];
};

struct cached_expiry {
	pthread_mutex_t mu;
	struct node **heap;
	size_t n, cap, bytes, max_bytes;
	uint64_t refused;
};

/* What one entry is charged: its node and its slot in the heap array. */
static size_t
charge(size_t klen)
{
	return sizeof(struct node) + klen + sizeof(struct node *);
}

int
cached_expiry_new(size_t max_bytes, struct cached_expiry **out)
{
	struct cached_expiry *e;

	if (!out)
		return EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return ENOMEM;
	pthread_mutex_init(&e->mu, NULL);
	e->max_bytes = max_bytes;
	*out = e;
	return 0;
}

static void
clear_locked(struct cached_expiry *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->heap[i]);
	free(e->heap);
	e->heap = NULL;
	e->n = e->cap = e->bytes = 0;
}

void
cached_expiry_free(struct cached_expiry *e)
{
	if (!e)
		return;
	clear_locked(e);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

static bool
before(const struct node *a, const struct node *b)
{
	return a->exptime < b->exptime;
}

bool
cached_expiry_add(struct cached_expiry *e, uint32_t exptime, uint64_t cas,
                  const char *key, size_t klen)
{
	struct node *nd;
	size_t i;
	bool ok = false;

	if (klen > CACHED_KEY_MAX || (klen && !key))
		return false;
	pthread_mutex_lock(&e->mu);
	if (e->bytes + charge(klen) > e->max_bytes) {
		e->refused++;
		goto out;
	}
	if (e->n == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 64;
		struct node **h = realloc(e->heap, cap * sizeof(*h));

		if (!h)
			goto out;
		e->heap = h;
		e->cap = cap;
	}
	nd = malloc(sizeof(*nd) + klen);
	if (!nd)
		goto out;
	nd->exptime = exptime;
	nd->cas = cas;
	nd->klen = (uint8_t)klen;
	memcpy(nd->key, key, klen);
	/* Sift up. */
	for (i = e->n++; i > 0 && before(nd, e->heap[(i - 1) / 2]); i = (i - 1) / 2)
		e->heap[i] = e->heap[(i - 1) / 2];
	e->heap[i] = nd;
	e->bytes += charge(klen);
	ok = true;
out:
	pthread_mutex_unlock(&e->mu);
	return ok;
}

bool
cached_expiry_pop(struct cached_expiry *e, uint32_t now,
                  struct cached_expiry_entry *out)
{
	struct node *top, *last;
	size_t i = 0;

	pthread_mutex_lock(&e->mu);
	if (!e->n || e->heap[0]->exptime > now) {
		pthread_mutex_unlock(&e->mu);
		return false;
	}
	top = e->heap[0];
	last = e->heap[--e->n];
	/* Sift the last node down from the root. */
	for (;;) {
		size_t l = 2 * i + 1, m;

		if (l >= e->n)
			break;
		m = l + 1 < e->n && before(e->heap[l + 1], e->heap[l]) ? l + 1 : l;
		if (!before(e->heap[m], last))
			break;
		e->heap[i] = e->heap[m];
		i = m;
	}
	if (e->n)
		e->heap[i] = last;
	e->bytes -= charge(top->klen);
	pthread_mutex_unlock(&e->mu);
	out->exptime = top->exptime;
	out->cas = top->cas;
	out->klen = top->klen;
	memcpy(out->key, top->key, top->klen);
	free(top);
	return true;
}

void
cached_expiry_clear(struct cached_expiry *e)
{
	pthread_mutex_lock(&e->mu);
	clear_locked(e);
	pthread_mutex_unlock(&e->mu);
}

size_t
cached_expiry_count(struct cached_expiry *e)
{
	size_t n;

	pthread_mutex_lock(&e->mu);
	n = e->n;
	pthread_mutex_unlock(&e->mu);
	return n;
}

size_t
cached_expiry_bytes(struct cached_expiry *e)
{
	size_t n;

	pthread_mutex_lock(&e->mu);
	n = e->bytes;
	pthread_mutex_unlock(&e->mu);
	return n;
}

uint64_t
cached_expiry_refused(struct cached_expiry *e)
{
	uint64_t n;

	pthread_mutex_lock(&e->mu);
	n = e->refused;
	pthread_mutex_unlock(&e->mu);
	return n;
}
