/*
 * peers_lirs.c - LIRS for cache_sim (peers.h), over the lists of
 * peers_list.h.
 */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>

#include "peers.h"
#include "peers_list.h"

/*
 * LIRS (Jiang & Zhang, SIGMETRICS 2002) with 1 % of the cache (at least one
 * entry) for resident HIR blocks, written after libCacheSim's LIRS, which
 * keeps the stack S, the list Q of resident HIR blocks and a list NH of
 * the non-resident HIR blocks of S as three LRU lists, and differs from
 * the paper in ways that move hit ratios:
 *   - a hit on a resident HIR block that is in Q but not in S demotes the
 *     bottom LIR block into Q first when the LIR set is full (the paper
 *     leaves the LIR set alone); with a Q of one entry that demotion evicts
 *     the very block that was hit, which stays in S as resident and
 *     uncounted until it becomes LIR or is pruned;
 *   - S is bounded: above 2 x the cache size in entries, the non-resident
 *     blocks that became non-resident first are dropped from it;
 *   - on a miss, the bottom LIR block is demoted when the LIR set is full
 *     and the block was a non-resident HIR block of S, else a resident
 *     HIR block is evicted when both sets are full.
 */
#define LIRS_IN_S 1u
#define LIRS_LIR 2u  /* S's copy: LIR */
#define LIRS_RES 4u  /* S's copy: resident */
#define LIRS_IN_Q 8u /* Q's copy, always a resident HIR block */
#define LIRS_IN_NH 16u

struct lirs {
	uint8_t *f;
	struct links ls, lq, lnh;
	struct list s, q, nh;
	uint64_t lir_limit, hir_limit, lir_count, hir_count, occupied, c;
};

static void
lirs_s_remove(struct lirs *L, uint32_t x)
{
	list_remove(&L->ls, &L->s, x);
	L->f[x] &= (uint8_t)~(LIRS_IN_S | LIRS_LIR | LIRS_RES);
}

static void
lirs_nh_remove(struct lirs *L, uint32_t x)
{
	if (L->f[x] & LIRS_IN_NH) {
		list_remove(&L->lnh, &L->nh, x);
		L->f[x] &= (uint8_t)~LIRS_IN_NH;
	}
}

/* Removes the HIR blocks from the bottom of S, so that it ends in an LIR
 * block (the head itself stays). */
static void
lirs_prune(struct lirs *L)
{
	uint32_t t = L->s.tail;

	while (t != NIL && t != L->s.head && !(L->f[t] & LIRS_LIR)) {
		if (!(L->f[t] & LIRS_RES))
			lirs_nh_remove(L, t);
		lirs_s_remove(L, t);
		t = L->s.tail;
	}
}

/* Evicts Q's LRU block; its copy in S, if any, becomes non-resident. */
static bool
lirs_evict_hir(struct lirs *L)
{
	uint32_t z = L->q.tail;

	if (z == NIL)
		return false;
	L->hir_count--;
	list_remove(&L->lq, &L->q, z);
	L->f[z] &= (uint8_t)~LIRS_IN_Q;
	if (L->f[z] & LIRS_IN_S) {
		L->f[z] &= (uint8_t)~LIRS_RES;
		if (L->f[z] & LIRS_IN_NH)
			list_to_head(&L->lnh, &L->nh, z);
		else
			list_push(&L->lnh, &L->nh, z);
		L->f[z] |= LIRS_IN_NH;
	}
	L->occupied--;
	return true;
}

/* Demotes the block at the bottom of S into Q, then prunes S. */
static bool
lirs_evict_lir(struct lirs *L)
{
	uint32_t y = L->s.tail;

	if (y == NIL)
		return false;
	L->lir_count--;
	lirs_s_remove(L, y);
	L->occupied--;
	while (L->hir_count + 1 > L->hir_limit && lirs_evict_hir(L))
		;
	if (L->f[y] & LIRS_IN_Q)
		list_to_head(&L->lq, &L->q, y);
	else
		list_push(&L->lq, &L->q, y);
	L->f[y] |= LIRS_IN_Q;
	L->hir_count++;
	L->occupied++;
	lirs_prune(L);
	return true;
}

static void
lirs_make_room_for_lir(struct lirs *L)
{
	while (L->lir_count + 1 > L->lir_limit && lirs_evict_lir(L))
		;
}

/* Returns true on a hit. */
static bool
lirs_access(struct lirs *L, uint32_t x)
{
	uint8_t *f = L->f;
	bool nonres_in_s;

	if (f[x] & LIRS_IN_S)
		list_to_head(&L->ls, &L->s, x);
	if (f[x] & LIRS_IN_Q)
		list_to_head(&L->lq, &L->q, x);
	if ((f[x] & LIRS_IN_S) && (f[x] & LIRS_LIR)) {
		lirs_prune(L);
		return true;
	}
	if ((f[x] & LIRS_IN_S) && (f[x] & LIRS_RES)) {
		/* A resident HIR block in S becomes LIR. */
		if (f[x] & LIRS_IN_Q) {
			L->hir_count--;
			list_remove(&L->lq, &L->q, x);
			f[x] &= (uint8_t)~LIRS_IN_Q;
			L->occupied--;
		}
		lirs_make_room_for_lir(L);
		f[x] |= LIRS_LIR;
		L->lir_count++;
		L->occupied++;
		return true;
	}
	if (!(f[x] & LIRS_IN_S) && (f[x] & LIRS_IN_Q)) {
		/* A resident HIR block not in S stays HIR, enters S. */
		lirs_make_room_for_lir(L);
		list_push(&L->ls, &L->s, x);
		f[x] |= LIRS_IN_S | LIRS_RES;
		return true;
	}

	/* A miss: a non-resident HIR block of S, or a block seen nowhere. */
	nonres_in_s = f[x] & LIRS_IN_S;
	if (nonres_in_s) {
		lirs_make_room_for_lir(L);
		lirs_nh_remove(L, x);
	} else {
		if (L->lir_limit < 1 || L->hir_limit < 1)
			return false;
		if (L->lir_count + 1 > L->lir_limit && L->hir_count + 1 > L->hir_limit)
			while (L->hir_count + 1 > L->hir_limit && lirs_evict_hir(L))
				;
	}
	while (L->occupied + 1 > L->c) {
		bool progress = false;

		if (nonres_in_s) {
			while (L->hir_count >= L->hir_limit && lirs_evict_hir(L))
				progress = true;
			progress |= lirs_evict_lir(L);
		} else if (L->lir_count + 1 > L->lir_limit &&
		           L->hir_count + 1 > L->hir_limit) {
			progress = lirs_evict_hir(L);
		}
		if (!progress)
			break; /* libCacheSim would loop here for ever */
	}
	if (nonres_in_s) {
		f[x] |= LIRS_LIR | LIRS_RES;
		L->lir_count++;
	} else if (L->lir_count + 1 <= L->lir_limit) {
		list_push(&L->ls, &L->s, x);
		f[x] |= LIRS_IN_S | LIRS_LIR | LIRS_RES;
		L->lir_count++;
	} else {
		list_push(&L->ls, &L->s, x);
		list_push(&L->lq, &L->q, x);
		f[x] |= LIRS_IN_S | LIRS_RES | LIRS_IN_Q;
		L->hir_count++;
	}
	L->occupied++;
	return false;
}

/* Keeps S within 2 x the cache size, dropping the oldest non-residents. */
static void
lirs_limit_stack(struct lirs *L)
{
	while (L->s.len > 2 * L->c && L->nh.tail != NIL) {
		uint32_t z = L->nh.tail;

		if (L->f[z] & LIRS_IN_S)
			lirs_s_remove(L, z);
		lirs_nh_remove(L, z);
	}
}

uint64_t
peer_run_lirs(const uint32_t *ids, size_t n, uint32_t distinct, uint64_t size)
{
	struct lirs L = { .s = LIST_EMPTY, .q = LIST_EMPTY, .nh = LIST_EMPTY,
	                  .c = size };
	uint64_t hits = 0;
	bool ok;

	/* As libCacheSim: the double product, truncated, at least 1. */
	L.hir_limit = (uint64_t)(0.01 * (double)size);
	if (L.hir_limit < 1)
		L.hir_limit = 1;
	L.lir_limit = size > L.hir_limit ? size - L.hir_limit : 0;
	L.f = calloc(distinct ? distinct : 1, 1);
	/* L's links start zeroed, so links_free() takes those never made. */
	ok = links_new(&L.ls, distinct) && links_new(&L.lq, distinct) &&
	     links_new(&L.lnh, distinct);
	if (ok && L.f) {
		for (size_t i = 0; i < n; i++) {
			hits += lirs_access(&L, ids[i]);
			lirs_limit_stack(&L);
		}
	} else {
		hits = UINT64_MAX;
	}
	links_free(&L.ls);
	links_free(&L.lq);
	links_free(&L.lnh);
	free(L.f);
	return hits;
}
