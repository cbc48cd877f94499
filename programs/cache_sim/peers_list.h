/*
 * peers_list.h - the doubly linked lists the policies of peers.c keep,
 * threaded through arrays indexed by key number (peer_dense_ids), so a
 * replay allocates a few bytes per distinct key and never hashes.  A
 * list's head is its newest entry, its tail the oldest.  Inline: they are
 * the replays' inner loops.  Private to cache_sim.
 */
#ifndef ADMIT_CACHE_SIM_PEERS_LIST_H
#define ADMIT_CACHE_SIM_PEERS_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define NIL UINT32_MAX

/* One set of links: a key is on at most one list of the set at a time. */
struct links {
	uint32_t *newer, *older;
};

struct list {
	uint32_t head, tail; /* newest, oldest; NIL when empty */
	uint64_t len;
};

#define LIST_EMPTY ((struct list){ NIL, NIL, 0 })

static inline bool
links_new(struct links *l, uint32_t distinct)
{
	size_t m = distinct ? distinct : 1;

	l->newer = malloc(m * sizeof(*l->newer));
	l->older = malloc(m * sizeof(*l->older));
	return l->newer && l->older;
}

static inline void
links_free(struct links *l)
{
	free(l->newer);
	free(l->older);
}

static inline void
list_push(struct links *l, struct list *q, uint32_t x)
{
	l->newer[x] = NIL;
	l->older[x] = q->head;
	if (q->head != NIL)
		l->newer[q->head] = x;
	else
		q->tail = x;
	q->head = x;
	q->len++;
}

static inline void
list_remove(struct links *l, struct list *q, uint32_t x)
{
	uint32_t nw = l->newer[x], od = l->older[x];

	if (nw != NIL)
		l->older[nw] = od;
	else
		q->head = od;
	if (od != NIL)
		l->newer[od] = nw;
	else
		q->tail = nw;
	q->len--;
}

static inline void
list_to_head(struct links *l, struct list *q, uint32_t x)
{
	if (q->head != x) {
		list_remove(l, q, x);
		list_push(l, q, x);
	}
}

/* The per-key state of a replay: links and two bytes per key. */
struct state {
	struct links l;
	uint8_t *where, *bits;
};

static inline bool
state_new(struct state *s, uint32_t distinct)
{
	size_t m = distinct ? distinct : 1;

	s->where = calloc(m, 1);
	s->bits = calloc(m, 1);
	return links_new(&s->l, distinct) && s->where && s->bits;
}

static inline void
state_free(struct state *s)
{
	links_free(&s->l);
	free(s->where);
	free(s->bits);
}

/* LIRS (peers_lirs.c): peer_hits(PEER_LIRS, ...) for n > 0, size > 0. */
uint64_t peer_run_lirs(const uint32_t *ids, size_t n, uint32_t distinct,
                       uint64_t size);

#endif /* ADMIT_CACHE_SIM_PEERS_LIST_H */
