/*
 * admit-dedup internals: the "seen" set the program keeps.
 *
 * Keys are reduced to a 64-bit hash h (XXH3 with the run's seed); h, as 8
 * little-endian bytes, is the key given to the filters, and the top bits of
 * h pick one of nshards independent shards.  Each shard is the library's
 * admit_chain (<admit/chain.h>): lookups check every filter of the chain,
 * inserts go to the newest, and a newest filter at its load limit gets a
 * successor twice as large.
 *
 * With a horizon, a ring remembers (h, filter number) of the last `horizon`
 * admitted keys, so a key leaving the horizon is deleted from exactly the
 * filter that holds it, and an emptied oldest filter is trimmed (freed).  The
 * ring keeps the filter's number in the chain's history (trimmed + index),
 * mod 256: trims do not change it, and a chain holds at most 32 filters, so
 * the low byte tells them apart.
 *
 * A shard is used by one thread at a time (see main.c for why); a dd_seen
 * as a whole is not thread-safe.
 */
#ifndef ADMIT_DEDUP_H
#define ADMIT_DEDUP_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <admit/admit.h>

#define DD_MAX_SHARDS 64u
/* The library sizes a table for 95 % load: the most load a filter runs at. */
#define DD_LIB_LOAD 0.95

struct dd_shard {
	struct admit_chain *chain;
	uint64_t trimmed; /* the chain's info.trimmed, kept here for the ring */
	double est_false; /* expected false drops so far (see dd_seen_admit) */
	/* The chain's false-positive probability at its loads now, kept up
	 * to date per add and delete instead of asking every filter for every
	 * key: p is the sum over filters of w[i] x items, w[i] the weight of
	 * one item in filter i (w has nw entries; refreshed on growth and
	 * trim). */
	double p, w[ADMIT_CHAIN_MAX_FILTERS];
	unsigned nw;
};

struct dd_params {
	uint64_t capacity; /* distinct keys the first filters must hold */
	double fpr;        /* 0 = default: 16-bit fingerprints at 95 % load */
	uint64_t horizon;  /* 0 = remember everything */
	uint64_t seed;     /* 0 = random */
	bool grow;         /* false: ADMIT_FULL instead of chaining a filter */
	unsigned batch;    /* lines per batch: the ring's slack beyond horizon */
};

struct dd_seen {
	unsigned nshards, shard_shift;
	unsigned fp_bits;
	double alpha;       /* load at which a filter counts as full */
	uint64_t seed;
	uint64_t shard_cap; /* capacity of each shard's first filter */
	bool grow;
	struct dd_shard *shard;

	uint64_t horizon;   /* 0 = no horizon, no ring */
	unsigned batch;
	uint64_t ring_size; /* grows up to horizon + batch */
	uint64_t *ring_h;
	uint8_t *ring_g;
	uint64_t admitted;  /* keys admitted so far = next ring index */
	uint64_t ring_len;  /* ring holds indices [admitted - ring_len, admitted) */
};

struct dd_totals {
	unsigned filters, max_chain, grown;
	uint64_t items, slots;
	size_t memory;      /* filter tables plus the ring */
	double est_false;
	double fpr_bound;   /* per lookup now: sum over the longest chain */
};

enum admit_status dd_seen_new(const struct dd_params *p, struct dd_seen **out);
void dd_seen_free(struct dd_seen *s);

static inline unsigned
dd_shard_of(const struct dd_seen *s, uint64_t h)
{
	return s->shard_shift >= 64 ? 0 : (unsigned)(h >> s->shard_shift);
}

/* Makes room in the ring for n more admissions (one batch) besides the
 * ring_len keys it holds: ADMIT_OK or ADMIT_NOMEM. */
enum admit_status dd_seen_ring_reserve(struct dd_seen *s, uint64_t n);
/* First sighting test: ADMIT_OK (now inserted into gen *gen), ADMIT_EXISTS,
 * ADMIT_FULL (growth off or impossible), ADMIT_NOMEM. */
enum admit_status dd_seen_admit(struct dd_seen *s, unsigned shard, uint64_t h,
                                uint8_t *gen);
/* Growth on (--on-full=grow) or off (fail): ADMIT_OK or ADMIT_NOMEM. */
enum admit_status dd_seen_set_grow(struct dd_seen *s, bool grow);
/* Unconditional insert (a key re-entering the horizon). */
enum admit_status dd_seen_insert(struct dd_seen *s, unsigned shard, uint64_t h,
                                 uint8_t *gen);
/* Delete a key dd_seen_admit/insert put into gen, and free the oldest filters
 * once they hold no key (admit_chain_trim). */
enum admit_status dd_seen_delete(struct dd_seen *s, unsigned shard, uint64_t h,
                                 uint8_t gen);
void dd_seen_totals(const struct dd_seen *s, struct dd_totals *t);

/* Bits of table per item the chosen sizing costs. */
double dd_seen_bits_per_item(const struct dd_seen *s);

/* The filters' key: h as 8 little-endian bytes (what the state file has
 * always held).  Not snap_put64: its byte loop was a tenth of the
 * instructions admit-dedup spends per line. */
static inline void
dd_key_of_hash(unsigned char key[8], uint64_t h)
{
	uint64_t le = htole64(h);

	memcpy(key, &le, 8);
}

/* The seed of shard's chain: a function of the run's seed. */
uint64_t dd_shard_seed(const struct dd_seen *s, unsigned shard);
/* d->p and d->w from the chain as it stands (after growth or a trim). */
void dd_shard_refresh(struct dd_shard *d);
/* Filters in chain c now. */
unsigned dd_chain_filters(const struct admit_chain *c);
/* A ring for s->batch admissions, none allocated before. */
enum admit_status dd_seen_ring_alloc(struct dd_seen *s);

/* state.c: the --save / --load file. */
enum admit_status dd_seen_save(const struct dd_seen *s, const char *path);
/* On error, *why says what was wrong with the file. */
enum admit_status dd_seen_load(const char *path, unsigned batch,
                               struct dd_seen **out, const char **why);

#endif
