/*
 * admit-dedup's seen-set: shards of chained cuckoo filters and the horizon
 * ring.  Single-threaded per shard: main.c gives each shard to one worker.
 */
#include <endian.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "dedup.h"
#include "hash.h" /* admit_mix64, the library's mixer */
#include "snapfile.h"

/* Probability that one lookup of an absent key matches in one filter at
 * its load now: 2 buckets x 4 slots, each matching a random non-zero
 * fingerprint with probability at most 1 / (2^f - 2) (src/chain.c says
 * why); the union bound makes it an upper bound. */
static double
filter_fpr(const struct admit_chain_filter_info *fi)
{
	if (fi->slots == 0)
		return 0;
	return 8.0 * ((double)fi->items / (double)fi->slots) /
	       (double)((1u << fi->fingerprint_bits) - 2);
}

void
dd_shard_refresh(struct dd_shard *d)
{
	struct admit_chain_filter_info fi;

	d->p = 0;
	for (d->nw = 0; d->nw < ADMIT_CHAIN_MAX_FILTERS &&
	     admit_chain_filter_info(d->chain, d->nw, &fi) == ADMIT_OK; d->nw++) {
		d->p += filter_fpr(&fi);
		d->w[d->nw] = fi.slots ? 8.0 / (double)fi.slots /
		              (double)((1u << fi.fingerprint_bits) - 2) : 0;
	}
}

/* One item more in filter idx (or, if it is new, a refresh). */
static void
note_add(struct dd_shard *d, unsigned idx)
{
	if (idx < d->nw)
		d->p += d->w[idx];
	else
		dd_shard_refresh(d);
}

uint64_t
dd_shard_seed(const struct dd_seen *s, unsigned shard)
{
	return admit_mix64(s->seed ^ admit_mix64((uint64_t)shard << 8)) | 1;
}

/* Shard i's chain: the first filter holds shard_cap keys at load alpha,
 * each successor twice as many; one lock stripe (one writer per shard at a
 * time, and the default stripe array would cost more than a small shard's
 * table). */
static enum admit_status
shard_chain(const struct dd_seen *s, unsigned shard, struct admit_chain **out)
{
	struct admit_chain_config cfg = {
		.capacity = s->shard_cap,
		.expansion = 2,
		.stripes = 1,
		.fingerprint_bits = s->fp_bits,
		.max_load = s->alpha,
		/* One worker per shard at a time, handed over at barriers. */
		.single_writer = true,
		.seed = dd_shard_seed(s, shard),
	};

	if (ceil((double)s->shard_cap * DD_LIB_LOAD / s->alpha) >
	    (double)ADMIT_CUCKOO_MAX_CAPACITY)
		return ADMIT_ETOOBIG;
	return admit_chain_new(&cfg, out);
}

unsigned
dd_chain_filters(const struct admit_chain *c)
{
	struct admit_chain_info info;

	admit_chain_info(c, &info);
	return info.filters;
}

enum admit_status
dd_seen_set_grow(struct dd_seen *s, bool grow)
{
	s->grow = grow;
	for (unsigned i = 0; i < s->nshards; i++) {
		struct admit_chain *c = s->shard[i].chain;
		enum admit_status st;

		st = admit_chain_set_max_filters(c, grow ? 0 : dd_chain_filters(c));
		if (st != ADMIT_OK)
			return st;
	}
	return ADMIT_OK;
}

static enum admit_status
choose_sizing(const struct dd_params *p, struct dd_seen *s)
{
	double best = 0;

	if (p->fpr == 0) {
		s->fp_bits = 16;
		s->alpha = DD_LIB_LOAD;
		return ADMIT_OK;
	}
	if (!(p->fpr > 0 && p->fpr < 1))
		return ADMIT_EINVAL;
	/* Per filter, fpr <= 8 * load / (2^f - 2) (admit/chain.h): for each
	 * width, the highest load that meets the target, then the width
	 * costing fewer bits. */
	for (unsigned f = 8; f <= 16; f += 8) {
		double a = fmin(DD_LIB_LOAD, p->fpr * (double)((1u << f) - 2) / 8);
		double bits = f / a;

		if (best == 0 || bits < best) {
			best = bits;
			s->fp_bits = f;
			s->alpha = a;
		}
	}
	/* Below ~1e-6 a table would be mostly empty: refuse. */
	return best <= 1024 ? ADMIT_OK : ADMIT_EINVAL;
}

enum admit_status
dd_seen_ring_reserve(struct dd_seen *s, uint64_t n)
{
	uint64_t want = s->ring_len + n, max = s->horizon + s->batch, size;
	uint64_t *h;
	uint8_t *g;

	if (!s->horizon || want <= s->ring_size)
		return ADMIT_OK;
	/* Doubling, up to the most the horizon can ever need: memory follows
	 * the keys actually remembered, so a horizon of 2^40 costs nothing
	 * until that many keys arrive. */
	size = s->ring_size ? s->ring_size : 4096;
	while (size < want)
		size *= 2;
	if (size > max)
		size = max;
	if (size > SIZE_MAX / sizeof(*h))
		return ADMIT_NOMEM;
	h = malloc((size_t)size * sizeof(*h));
	g = malloc((size_t)size);
	if (!h || !g) {
		free(h);
		free(g);
		return ADMIT_NOMEM;
	}
	/* Entries live at (admission index) mod size: move each one (none
	 * before the first allocation, whatever ring_len a load set). */
	for (uint64_t t = s->admitted - s->ring_len;
	     s->ring_size && t < s->admitted; t++) {
		h[t % size] = s->ring_h[t % s->ring_size];
		g[t % size] = s->ring_g[t % s->ring_size];
	}
	free(s->ring_h);
	free(s->ring_g);
	s->ring_h = h;
	s->ring_g = g;
	s->ring_size = size;
	return ADMIT_OK;
}

enum admit_status
dd_seen_ring_alloc(struct dd_seen *s)
{
	s->ring_size = 0;
	return dd_seen_ring_reserve(s, s->batch);
}

enum admit_status
dd_seen_new(const struct dd_params *p, struct dd_seen **out)
{
	struct dd_seen *s;
	enum admit_status st;
	uint64_t per;

	if (!p || !out || p->capacity == 0 || p->batch == 0 ||
	    p->horizon > ((uint64_t)1 << 40))
		return ADMIT_EINVAL;
	if (p->capacity > ADMIT_CUCKOO_MAX_CAPACITY)
		return ADMIT_ETOOBIG;
	s = calloc(1, sizeof(*s));
	if (!s)
		return ADMIT_NOMEM;
	st = choose_sizing(p, s);
	if (st != ADMIT_OK)
		goto out;
	/* Shards: a fixed function of the capacity, never of -j, so the output
	 * does not depend on the thread count.  At least ~4096 keys a shard. */
	s->nshards = 1;
	while (s->nshards < DD_MAX_SHARDS &&
	       p->capacity / (2 * s->nshards) >= 4096)
		s->nshards *= 2;
	s->shard_shift = 64;
	for (unsigned n = s->nshards; n > 1; n /= 2)
		s->shard_shift--;
	per = (p->capacity + s->nshards - 1) / s->nshards;
	/* Keys spread over shards binomially: leave 4 standard deviations. */
	s->shard_cap = s->nshards == 1 ? per :
	               per + (uint64_t)(4 * sqrt((double)per)) + 16;
	s->seed = p->seed;
	while (s->seed == 0)
		if (getrandom(&s->seed, sizeof(s->seed), 0) != sizeof(s->seed)) {
			st = ADMIT_EIO;
			goto out;
		}
	s->grow = p->grow;
	s->horizon = p->horizon;
	s->batch = p->batch;
	st = dd_seen_ring_alloc(s);
	if (st != ADMIT_OK)
		goto out;
	s->shard = calloc(s->nshards, sizeof(*s->shard));
	if (!s->shard) {
		st = ADMIT_NOMEM;
		goto out;
	}
	for (unsigned i = 0; i < s->nshards; i++) {
		st = shard_chain(s, i, &s->shard[i].chain);
		if (st != ADMIT_OK)
			goto out;
		dd_shard_refresh(&s->shard[i]);
	}
	st = dd_seen_set_grow(s, p->grow);
	if (st != ADMIT_OK)
		goto out;
	*out = s;
	return ADMIT_OK;
out:
	dd_seen_free(s);
	return st;
}

void
dd_seen_free(struct dd_seen *s)
{
	if (!s)
		return;
	for (unsigned i = 0; s->shard && i < s->nshards; i++)
		admit_chain_free(s->shard[i].chain);
	free(s->shard);
	free(s->ring_h);
	free(s->ring_g);
	free(s);
}

enum admit_status
dd_seen_admit(struct dd_seen *s, unsigned shard, uint64_t h, uint8_t *gen)
{
	struct dd_shard *d = &s->shard[shard];
	unsigned char key[8];
	enum admit_status st;
	unsigned idx;
	double p;

	dd_key_of_hash(key, h);
	/* Before the insert, with the loads this key met (a filter chained
	 * in by this very insert is empty and adds nothing). */
	p = d->p;
	st = admit_chain_add_unique_at(d->chain, key, 8, &idx);
	if (st != ADMIT_OK)
		return st;
	note_add(d, idx);
	/* This key was admitted with probability 1 - p; a new key is dropped
	 * with probability p, so each admission stands for p / (1 - p)
	 * expected false drops. */
	d->est_false += p < 1 ? p / (1 - p) : 1;
	*gen = (uint8_t)(d->trimmed + idx);
	return ADMIT_OK;
}

enum admit_status
dd_seen_insert(struct dd_seen *s, unsigned shard, uint64_t h, uint8_t *gen)
{
	struct dd_shard *d = &s->shard[shard];
	unsigned char key[8];
	enum admit_status st;
	unsigned idx;

	dd_key_of_hash(key, h);
	st = admit_chain_add_at(d->chain, key, 8, &idx);
	if (st != ADMIT_OK)
		return st;
	note_add(d, idx);
	*gen = (uint8_t)(d->trimmed + idx);
	return ADMIT_OK;
}

enum admit_status
dd_seen_delete(struct dd_seen *s, unsigned shard, uint64_t h, uint8_t gen)
{
	struct dd_shard *d = &s->shard[shard];
	unsigned idx = (uint8_t)(gen - (uint8_t)d->trimmed), removed;
	unsigned char key[8];
	enum admit_status st;

	dd_key_of_hash(key, h);
	st = admit_chain_delete_at(d->chain, idx, key, 8);
	if (st == ADMIT_EINVAL)
		return ADMIT_NOTFOUND; /* no such filter (any more) */
	if (st != ADMIT_OK)
		return st;
	d->p -= d->w[idx];
	if (idx != 0 || d->nw < 2)
		return ADMIT_OK; /* not the oldest, or the newest too */
	/* An older filter the horizon has emptied is dead weight for every
	 * lookup: free it (the chain keeps the newest to take inserts).  Keys
	 * leave in admission order, so the oldest filter empties first.  This
	 * worker alone uses the shard's chain during EXPIRE, as trim needs. */
	st = admit_chain_trim(d->chain, &removed);
	if (st != ADMIT_OK || removed == 0)
		return st;
	d->trimmed += removed;
	dd_shard_refresh(d);
	/* Without growth the chain must not grow back into the room. */
	return s->grow ? ADMIT_OK :
	       admit_chain_set_max_filters(d->chain, dd_chain_filters(d->chain));
}

void
dd_seen_totals(const struct dd_seen *s, struct dd_totals *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < s->nshards; i++) {
		const struct dd_shard *d = &s->shard[i];
		struct admit_chain_filter_info fi;
		unsigned chain = 0;
		double p = 0;

		for (; admit_chain_filter_info(d->chain, chain, &fi) ==
		       ADMIT_OK; chain++) {
			t->items += fi.items;
			t->slots += fi.slots;
			t->memory += fi.memory;
			p += filter_fpr(&fi);
		}
		t->filters += chain;
		if (chain > t->max_chain)
			t->max_chain = chain;
		t->grown += (unsigned)(d->trimmed + chain - 1);
		t->est_false += d->est_false;
		if (p > t->fpr_bound)
			t->fpr_bound = p;
	}
	if (s->horizon)
		t->memory += s->ring_size * (sizeof(*s->ring_h) + 1);
}

double
dd_seen_bits_per_item(const struct dd_seen *s)
{
	return s->fp_bits / s->alpha;
}
