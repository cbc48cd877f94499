/*
 * chain.c - a growable filter: a chain of admit_cuckoo filters.
 *
 * Concurrency.  The filters live in a fixed array of 32 atomic pointers and
 * a count n; a filter is published by storing its pointer and then n (both
 * under the growth lock), and is freed only with the chain or by
 * admit_chain_trim(), which the caller runs alone.  A reader loads n with
 * acquire and sees every filter below it; each filter is itself safe for
 * concurrent use, so lookups, plain adds and deletes take no chain lock.
 * admit_chain_add_unique() must not let a filter appear between its check of
 * the old filters and its insert into the newest (two threads could then
 * both insert a key, one in each): it holds the growth rwlock shared, and
 * growth takes it exclusively.
 *
 * With max_load set, an add checks the newest filter's count against its
 * limit and then inserts: two adds doing that at once could both pass the
 * check and overfill the filter, breaking the stated bound.  So in that mode
 * every add holds add_lock (a mutex), growth happens only under it, and
 * add_unique needs no rwlock.
 *
 * Filter numbers.  trim removes the oldest filters; the chain counts them
 * (trimmed), and the filter at index i is the chain's filter number
 * trimmed + i: its capacity and seed are functions of that number, so a
 * trimmed chain makes and checks the same filters an untrimmed one would.
 *
 * Dump format, all integers little-endian:
 *
 *   0  magic "ADMITCHN"
 *   8  u32 format version: 1, or 2 when a version 1 reader would miss
 *      something (8-bit fingerprints, max_load, trimmed filters,
 *      single_writer)
 *  12  u32 filters (1 to max_filters)
 *  16  u32 expansion (1 to ADMIT_CHAIN_MAX_EXPANSION)
 *  20  u32 max_filters (1 to ADMIT_CHAIN_MAX_FILTERS)
 *  24  u32 stripes as configured (0 = each filter's default)
 *  28  u32 version 1: reserved, 0; version 2: fingerprint bits (8 or 16)
 *  32  u64 first capacity
 *  40  u64 seed
 *      version 2 only: 48 u64 max_load (IEEE-754 bits, 0 = unset),
 *      56 u64 trimmed, 64 u32 flags (bit 0: single_writer), 68 u32 0
 *  48 (v1) or 72 (v2): per filter: u64 length, then that many bytes of the
 *      cuckoo snapshot format (cuckoo_snapshot.c), whose capacity, width and
 *      seed must be the ones the chain gives filter number trimmed + i
 *  end u64 XXH3-64 of every byte before it
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <admit/chain.h>
#include <admit/cuckoo.h>

#include "alloc.h"
#include "cuckoo_internal.h"
#include "hash.h"
#include "snapfile.h"

#define CHAIN_MAGIC "ADMITCHN"
#define CHAIN_HEADER_V1 48
#define CHAIN_HEADER_V2 72
#define CHAIN_FLAG_SINGLE_WRITER 1u
#define NOINLINE __attribute__((noinline))
#define CHAIN_DEFAULT_EXPANSION 2u
/* admit_cuckoo_new sizes a table for its capacity at this load. */
#define CUCKOO_LOAD 0.95

struct admit_chain {
	_Atomic(struct admit_cuckoo *) f[ADMIT_CHAIN_MAX_FILTERS];
	/* Items filter i takes before the chain grows (max_load mode only);
	 * written before f[i] is published, like the filter itself. */
	uint64_t limit[ADMIT_CHAIN_MAX_FILTERS];
	_Atomic unsigned n;
	_Atomic unsigned max_filters; /* admit_chain_set_max_filters() */
	unsigned expansion, stripes, bits;
	bool single_writer; /* the caller serialises writers: no add lock */
	double max_load;   /* 0 = fill each filter until it refuses */
	uint64_t capacity; /* the first filter's */
	uint64_t nominal_max; /* largest capacity one filter is given */
	uint64_t seed;
	uint64_t trimmed;  /* filters removed by trim: index i is number
	                      trimmed + i */
	pthread_rwlock_t grow_lock;
	pthread_mutex_t add_lock; /* max_load mode: every add */
	/* max_load mode, under add_lock (or the single writer): room_items
	 * is at least room_f's item count (a recount, plus the adds since;
	 * deletes only lower the count), so room() sums the filter's
	 * per-stripe counters only when this bound reaches the limit.
	 * room_f is the newest filter or an older one still in the chain
	 * (trim resets it), never a freed one. */
	const struct admit_cuckoo *room_f;
	uint64_t room_items;
	struct admit_allocator alloc; /* the chain's and its filters' memory */
};

/* Filter number k's capacity: the first times expansion^k, held at the
 * largest a filter takes (a chain at that size grows by filters of that
 * size).  The loop ends: expansion >= 2 reaches the cap in 64 steps. */
static uint64_t
filter_capacity(const struct admit_chain *c, uint64_t k)
{
	uint64_t cap = c->capacity;

	if (c->expansion == 1)
		return cap;
	while (k-- > 0) {
		if (cap > c->nominal_max / c->expansion)
			return c->nominal_max;
		cap *= c->expansion;
	}
	return cap;
}

/* The capacity asked of admit_cuckoo_new for filter number k: with
 * max_load, a table large enough that its capacity is at most that load. */
static uint64_t
table_capacity(const struct admit_chain *c, uint64_t k)
{
	uint64_t cap = filter_capacity(c, k);
	double want;

	if (c->max_load == 0)
		return cap;
	want = ceil((double)cap * CUCKOO_LOAD / c->max_load);
	return want >= (double)ADMIT_CUCKOO_MAX_CAPACITY ?
	       ADMIT_CUCKOO_MAX_CAPACITY : (uint64_t)want;
}

/* Items filter number k, as built, takes in max_load mode: its capacity,
 * and never more than max_load of its slots, whatever rounding did. */
static uint64_t
filter_limit(const struct admit_chain *c, uint64_t k,
             const struct admit_cuckoo *f)
{
	uint64_t cap = filter_capacity(c, k);
	uint64_t at_load = (uint64_t)floor((double)admit_cuckoo_slots(f) *
	                                   c->max_load);

	return cap < at_load ? cap : at_load;
}

/* Filter number k's seed: distinct per filter (a key colliding in one
 * filter is independent in the next), never 0 (which admit_cuckoo_new reads
 * as "random"), and a function of the chain's seed only, so that a replica
 * fed the same commands builds the same chain.  k < 2^32 (grow() stops
 * there). */
static uint64_t
filter_seed(const struct admit_chain *c, uint64_t k)
{
	unsigned char b[4];
	uint64_t s;

	snap_put32(b, (uint32_t)k);
	s = XXH3_64bits_withSeed(b, sizeof(b), c->seed);
	return s ? s : 1;
}

/* Probability that filter i answers present for an absent key, at most.
 * Default: 8 / 2^f, as admit/cuckoo.h states.  max_load mode: a stored
 * fingerprint is one of 2^f - 1 non-zero values, 1 twice as likely as the
 * others (0 maps to it), so a slot matches with probability at most
 * (2^f + 2) / 4^f <= 1 / (2^f - 2); two buckets of 4 slots at load at most
 * limit / slots give the rest. */
static double
filter_bound(const struct admit_chain *c, unsigned i,
             const struct admit_cuckoo *f)
{
	double values = (double)(1u << c->bits);

	if (c->max_load == 0)
		return 8.0 / values;
	return 8.0 * ((double)c->limit[i] / (double)admit_cuckoo_slots(f)) /
	       (values - 2);
}

static enum admit_status
make_filter(const struct admit_chain *c, uint64_t k, struct admit_cuckoo **out)
{
	struct admit_cuckoo_config cfg = {
		.capacity = table_capacity(c, k),
		.fingerprint_bits = c->bits,
		.stripes = c->stripes,
		.seed = filter_seed(c, k),
		.alloc = &c->alloc,
	};

	return admit_cuckoo_new(&cfg, out);
}

/* acquire: pairs with the release in publish(), so every filter below the
 * count read is visible, fully built. */
static unsigned
chain_len(const struct admit_chain *c)
{
	return atomic_load_explicit(&c->n, memory_order_acquire);
}

static struct admit_cuckoo *
chain_at(const struct admit_chain *c, unsigned i)
{
	/* relaxed: i < n was read with acquire after this pointer was stored
	 * (publish() stores it before the release of n). */
	return atomic_load_explicit(&c->f[i], memory_order_relaxed);
}

/* Under the growth lock held exclusively, or before the chain is shared. */
static void
publish(struct admit_chain *c, struct admit_cuckoo *f)
{
	unsigned n = atomic_load_explicit(&c->n, memory_order_relaxed);

	c->limit[n] = c->max_load == 0 ? 0 : filter_limit(c, c->trimmed + n, f);
	atomic_store_explicit(&c->f[n], f, memory_order_relaxed);
	/* release: pairs with the acquire in chain_len(). */
	atomic_store_explicit(&c->n, n + 1, memory_order_release);
}

struct chain_params {
	uint64_t capacity, seed, trimmed;
	unsigned expansion, max_filters, stripes, bits;
	double max_load;
	bool single_writer;
	const struct admit_allocator *alloc;
};

/* Largest capacity one filter is given: with max_load, the most whose
 * table admit_cuckoo_new still takes.  0 if the first capacity is above it
 * (a bad configuration). */
static uint64_t
nominal_max(const struct chain_params *p)
{
	uint64_t m = ADMIT_CUCKOO_MAX_CAPACITY;

	if (p->max_load != 0)
		m = (uint64_t)floor((double)ADMIT_CUCKOO_MAX_CAPACITY *
		                    p->max_load / CUCKOO_LOAD);
	return p->capacity <= m ? m : 0;
}

static bool
max_load_ok(double l)
{
	/* Written so that NaN fails.  Below 1/1024 a table is more than 99.9 %
	 * empty: nobody wants that, and it keeps table sizes sane. */
	return l == 0 || (l >= 1.0 / 1024 && l <= CUCKOO_LOAD);
}

static struct admit_chain *
chain_alloc(const struct chain_params *p)
{
	struct admit_chain *c = admit_mem_zalloc(p->alloc, sizeof(*c), NULL);

	if (!c)
		return NULL;
	if (pthread_rwlock_init(&c->grow_lock, NULL) != 0) {
		admit_mem_free(p->alloc, c, sizeof(*c), NULL);
		return NULL;
	}
	if (pthread_mutex_init(&c->add_lock, NULL) != 0) {
		pthread_rwlock_destroy(&c->grow_lock);
		admit_mem_free(p->alloc, c, sizeof(*c), NULL);
		return NULL;
	}
	c->alloc = admit_mem_copy(p->alloc);
	atomic_init(&c->n, 0);
	for (unsigned i = 0; i < ADMIT_CHAIN_MAX_FILTERS; i++)
		atomic_init(&c->f[i], NULL);
	c->capacity = p->capacity;
	c->expansion = p->expansion;
	atomic_init(&c->max_filters, p->max_filters);
	c->stripes = p->stripes;
	c->bits = p->bits;
	c->max_load = p->max_load;
	c->single_writer = p->single_writer;
	c->nominal_max = nominal_max(p);
	c->seed = p->seed;
	c->trimmed = p->trimmed;
	return c;
}

static bool
stripes_ok(unsigned s)
{
	return s <= ADMIT_CUCKOO_MAX_STRIPES && (s & (s - 1)) == 0;
}

enum admit_status
admit_chain_new(const struct admit_chain_config *cfg, struct admit_chain **out)
{
	struct admit_cuckoo *f;
	struct admit_chain *c;
	enum admit_status st;
	struct chain_params p;

	if (!cfg || !out || cfg->capacity == 0 ||
	    cfg->capacity > ADMIT_CUCKOO_MAX_CAPACITY ||
	    cfg->expansion > ADMIT_CHAIN_MAX_EXPANSION ||
	    cfg->max_filters > ADMIT_CHAIN_MAX_FILTERS ||
	    !stripes_ok(cfg->stripes) ||
	    (cfg->fingerprint_bits != 0 && cfg->fingerprint_bits != 8 &&
	     cfg->fingerprint_bits != 16) || !max_load_ok(cfg->max_load))
		return ADMIT_EINVAL;
	p = (struct chain_params){
		.capacity = cfg->capacity,
		.expansion = cfg->expansion ? cfg->expansion :
		             CHAIN_DEFAULT_EXPANSION,
		.max_filters = cfg->max_filters ? cfg->max_filters :
		               ADMIT_CHAIN_MAX_FILTERS,
		.stripes = cfg->stripes,
		.bits = cfg->fingerprint_bits ? cfg->fingerprint_bits : 16,
		.max_load = cfg->max_load,
		.single_writer = cfg->single_writer,
		.seed = cfg->seed ? cfg->seed : admit_random_seed(),
		.alloc = cfg->alloc,
	};
	if (nominal_max(&p) == 0)
		return ADMIT_EINVAL;
	c = chain_alloc(&p);
	if (!c)
		return ADMIT_NOMEM;
	st = make_filter(c, 0, &f);
	if (st != ADMIT_OK) {
		admit_chain_free(c);
		return st;
	}
	publish(c, f);
	*out = c;
	return ADMIT_OK;
}

void
admit_chain_free(struct admit_chain *c)
{
	struct admit_allocator a;

	if (!c)
		return;
	for (unsigned i = 0; i < ADMIT_CHAIN_MAX_FILTERS; i++)
		admit_cuckoo_free(atomic_load_explicit(&c->f[i],
		                                       memory_order_relaxed));
	pthread_rwlock_destroy(&c->grow_lock);
	pthread_mutex_destroy(&c->add_lock);
	a = c->alloc;
	admit_mem_free(&a, c, sizeof(*c), NULL);
}

size_t
admit_chain_footprint(const struct admit_chain *c)
{
	size_t bytes;
	unsigned n;

	if (!c)
		return 0;
	bytes = sizeof(*c);
	n = chain_len(c);
	for (unsigned i = 0; i < n; i++)
		bytes += admit_cuckoo_footprint(chain_at(c, i));
	return bytes;
}

/* Add a filter if the chain still has the n filters the caller saw (another
 * thread may have grown it meanwhile: then there is nothing to do).  Caller
 * holds no growth lock (add_lock in max_load mode). */
static enum admit_status
grow(struct admit_chain *c, unsigned n)
{
	struct admit_cuckoo *f, *newest;
	enum admit_status st = ADMIT_OK;
	uint64_t earned;

	pthread_rwlock_wrlock(&c->grow_lock);
	if (atomic_load_explicit(&c->n, memory_order_relaxed) != n)
		goto out; /* relaxed: n only changes under this lock */
	/* A filter refuses a key with 8 copies in its two buckets at any load;
	 * growing then would let one key repeated allocate filter after
	 * filter.  A filter at least half full (or at its limit, if that is
	 * less) has earned its successor. */
	newest = chain_at(c, n - 1);
	earned = admit_cuckoo_slots(newest) / 2;
	if (c->max_load != 0 && c->limit[n - 1] < earned)
		earned = c->limit[n - 1];
	/* relaxed: max_filters is a bound read under the lock its setter
	 * takes. */
	if (n >= atomic_load_explicit(&c->max_filters, memory_order_relaxed) ||
	    c->trimmed + n >= UINT32_MAX ||
	    admit_cuckoo_size(newest) < earned) {
		st = ADMIT_FULL;
		goto out;
	}
	st = make_filter(c, c->trimmed + n, &f);
	if (st == ADMIT_OK)
		publish(c, f);
out:
	pthread_rwlock_unlock(&c->grow_lock);
	return st;
}

/* admit_cuckoo_size() without the call; O(stripes), so room() asks it
 * only when its bound reaches the limit. */
static inline uint64_t
filter_items(const struct admit_cuckoo *f)
{
	uint64_t n = 0;

	/* relaxed: as in admit_cuckoo_size(); under add_lock (or a single
	 * writer) no add can change the newest filter's count meanwhile, and
	 * a concurrent delete only lowers it. */
	for (uint32_t s = 0; s <= f->stripe_mask; s++)
		n += atomic_load_explicit(&f->stats[s].items,
		                          memory_order_relaxed);
	return n;
}

/* With add_lock held (or a single writer): make room in the newest filter
 * for one item, if max_load limits it.  On ADMIT_OK *n is the chain's
 * length. */
static enum admit_status
room(struct admit_chain *c, unsigned *n)
{
	for (;;) {
		const struct admit_cuckoo *f;
		enum admit_status st;

		*n = chain_len(c);
		if (c->max_load == 0)
			return ADMIT_OK;
		f = chain_at(c, *n - 1);
		if (c->room_f != f || c->room_items >= c->limit[*n - 1]) {
			c->room_f = f;
			c->room_items = filter_items(f);
		}
		if (c->room_items < c->limit[*n - 1])
			return ADMIT_OK;
		st = grow(c, *n);
		if (st != ADMIT_OK)
			return st;
	}
}

/* max_load mode: admit_chain_add_at and add_unique_at under add_lock (or
 * none, if the caller serialises writers).  No filter can appear but by
 * this thread, so add_unique needs no rwlock. */
static NOINLINE enum admit_status
add_limited(struct admit_chain *c, const void *key, size_t len, bool unique,
            unsigned *filter)
{
	enum admit_status st;
	unsigned n;

	if (!c->single_writer)
		pthread_mutex_lock(&c->add_lock);
	for (;;) {
		st = room(c, &n);
		if (st != ADMIT_OK) {
			/* No room, but a key already held is still answered
			 * present: add_unique's ADMIT_EXISTS comes before any
			 * ADMIT_FULL or ADMIT_NOMEM, as in the other modes. */
			if (unique && admit_chain_contains(c, key, len))
				st = ADMIT_EXISTS;
			break;
		}
		if (unique) {
			for (unsigned i = 0; i + 1 < n; i++)
				if (admit_cuckoo_contains(chain_at(c, i), key,
				                          len)) {
					st = ADMIT_EXISTS;
					goto out;
				}
			st = admit_cuckoo_insert_unique(chain_at(c, n - 1), key,
			                                len);
		} else {
			st = admit_cuckoo_insert(chain_at(c, n - 1), key, len);
		}
		if (st == ADMIT_OK) {
			c->room_items++; /* room_f is chain_at(c, n - 1) */
			if (filter)
				*filter = n - 1;
		}
		if (st != ADMIT_FULL)
			break;
		/* Refused below its limit (a key's 8 copies, or a rare early
		 * failure): grow if the filter has earned it, then retry. */
		st = grow(c, n);
		if (st != ADMIT_OK)
			break;
	}
out:
	if (!c->single_writer)
		pthread_mutex_unlock(&c->add_lock);
	return st;
}

enum admit_status
admit_chain_add_at(struct admit_chain *c, const void *key, size_t len,
                   unsigned *filter)
{
	if (!c || !admit_key_ok(key, len))
		return ADMIT_EINVAL;
	if (c->max_load != 0)
		return add_limited(c, key, len, false, filter);
	for (;;) {
		unsigned n = chain_len(c);
		enum admit_status st = admit_cuckoo_insert(chain_at(c, n - 1),
		                                           key, len);

		if (st == ADMIT_OK && filter)
			*filter = n - 1;
		if (st != ADMIT_FULL)
			return st;
		st = grow(c, n);
		if (st != ADMIT_OK)
			return st;
	}
}

enum admit_status
admit_chain_add(struct admit_chain *c, const void *key, size_t len)
{
	return admit_chain_add_at(c, key, len, NULL);
}

static NOINLINE enum admit_status
add_unique_shared(struct admit_chain *c, const void *key, size_t len,
                  unsigned *filter);

enum admit_status
admit_chain_add_unique_at(struct admit_chain *c, const void *key, size_t len,
                          unsigned *filter)
{
	if (!c || !admit_key_ok(key, len))
		return ADMIT_EINVAL;
	if (c->max_load != 0 || c->single_writer)
		return add_limited(c, key, len, true, filter);
	return add_unique_shared(c, key, len, filter);
}

/* admit_chain_add_unique_at without max_load or a single writer: under the
 * growth lock held shared.  Out of line, like add_limited, so the public
 * entry saves no registers before it knows which one it calls (admit-dedup
 * makes one call per line). */
static NOINLINE enum admit_status
add_unique_shared(struct admit_chain *c, const void *key, size_t len,
                  unsigned *filter)
{
	for (;;) {
		enum admit_status st = ADMIT_EXISTS;
		unsigned n;

		pthread_rwlock_rdlock(&c->grow_lock);
		n = chain_len(c);
		/* Old filters first: the newest is checked and written in one
		 * step by insert_unique, and no filter can appear meanwhile. */
		for (unsigned i = 0; i + 1 < n; i++)
			if (admit_cuckoo_contains(chain_at(c, i), key, len))
				goto out;
		st = admit_cuckoo_insert_unique(chain_at(c, n - 1), key, len);
		if (st == ADMIT_OK && filter)
			*filter = n - 1;
out:
		pthread_rwlock_unlock(&c->grow_lock);
		if (st != ADMIT_FULL)
			return st;
		st = grow(c, n);
		if (st != ADMIT_OK)
			return st;
	}
}

enum admit_status
admit_chain_add_unique(struct admit_chain *c, const void *key, size_t len)
{
	return admit_chain_add_unique_at(c, key, len, NULL);
}

bool
admit_chain_contains(const struct admit_chain *c, const void *key, size_t len)
{
	unsigned n;

	if (!c || !admit_key_ok(key, len))
		return false;
	/* Newest first: it is the largest, so holds most of the keys. */
	n = chain_len(c);
	while (n-- > 0)
		if (admit_cuckoo_contains(chain_at(c, n), key, len))
			return true;
	return false;
}

enum admit_status
admit_chain_delete(struct admit_chain *c, const void *key, size_t len)
{
	unsigned n;

	if (!c || !admit_key_ok(key, len))
		return ADMIT_EINVAL;
	n = chain_len(c);
	while (n-- > 0)
		if (admit_cuckoo_delete(chain_at(c, n), key, len) == ADMIT_OK)
			return ADMIT_OK;
	return ADMIT_NOTFOUND;
}

/* The filter a copy went into is the only one sure to hold it: a newer
 * filter may hold another key's matching fingerprint, and deleting that one
 * would lose the other key. */
enum admit_status
admit_chain_delete_at(struct admit_chain *c, unsigned filter, const void *key,
                      size_t len)
{
	if (!c || !admit_key_ok(key, len) || filter >= chain_len(c))
		return ADMIT_EINVAL;
	return admit_cuckoo_delete(chain_at(c, filter), key, len);
}

uint64_t
admit_chain_count(const struct admit_chain *c, const void *key, size_t len)
{
	uint64_t sum = 0;
	unsigned n;

	if (!c || !admit_key_ok(key, len))
		return 0;
	n = chain_len(c);
	for (unsigned i = 0; i < n; i++)
		sum += admit_cuckoo_count(chain_at(c, i), key, len);
	return sum;
}

enum admit_status
admit_chain_info(const struct admit_chain *c, struct admit_chain_info *out)
{
	unsigned n;

	if (!c || !out)
		return ADMIT_EINVAL;
	memset(out, 0, sizeof(*out));
	n = chain_len(c);
	out->filters = n;
	/* relaxed: a setting, exact when no setter runs. */
	out->max_filters = atomic_load_explicit(&c->max_filters,
	                                        memory_order_relaxed);
	out->expansion = c->expansion;
	out->first_capacity = c->capacity;
	for (unsigned i = 0; i < n; i++) {
		const struct admit_cuckoo *f = chain_at(c, i);

		out->capacity += filter_capacity(c, c->trimmed + i);
		out->items += admit_cuckoo_size(f);
		out->buckets += admit_cuckoo_slots(f) / 4;
		out->memory += admit_cuckoo_memory(f);
		out->fpr_bound += filter_bound(c, i, f);
	}
	out->fingerprint_bits = c->bits;
	out->max_load = c->max_load;
	out->trimmed = c->trimmed;
	return ADMIT_OK;
}

enum admit_status
admit_chain_filter_info(const struct admit_chain *c, unsigned filter,
                        struct admit_chain_filter_info *out)
{
	const struct admit_cuckoo *f;

	if (!c || !out || filter >= chain_len(c))
		return ADMIT_EINVAL;
	f = chain_at(c, filter);
	memset(out, 0, sizeof(*out));
	out->number = c->trimmed + filter;
	out->capacity = c->max_load == 0 ?
	                filter_capacity(c, c->trimmed + filter) :
	                c->limit[filter];
	out->items = admit_cuckoo_size(f);
	out->slots = admit_cuckoo_slots(f);
	out->fingerprint_bits = c->bits;
	out->memory = admit_cuckoo_memory(f);
	out->fpr_bound = filter_bound(c, filter, f);
	return ADMIT_OK;
}

enum admit_status
admit_chain_trim(struct admit_chain *c, unsigned *removed)
{
	unsigned n, k = 0;

	if (!c)
		return ADMIT_EINVAL;
	/* relaxed throughout: the caller runs this alone on the chain, and
	 * whatever it uses to make sure of that orders these stores before
	 * the next call. */
	n = atomic_load_explicit(&c->n, memory_order_relaxed);
	while (k + 1 < n && admit_cuckoo_size(chain_at(c, k)) == 0)
		k++;
	if (k > 0) {
		for (unsigned i = 0; i < k; i++)
			admit_cuckoo_free(chain_at(c, i));
		for (unsigned i = 0; i < ADMIT_CHAIN_MAX_FILTERS; i++) {
			atomic_store_explicit(&c->f[i], i + k < n ?
			                      chain_at(c, i + k) : NULL,
			                      memory_order_relaxed);
			c->limit[i] = i + k < n ? c->limit[i + k] : 0;
		}
		c->trimmed += k;
		c->room_f = NULL; /* it may be freed */
		atomic_store_explicit(&c->n, n - k, memory_order_relaxed);
	}
	if (removed)
		*removed = k;
	return ADMIT_OK;
}

enum admit_status
admit_chain_set_max_filters(struct admit_chain *c, unsigned max_filters)
{
	enum admit_status st = ADMIT_OK;

	if (!c || max_filters > ADMIT_CHAIN_MAX_FILTERS)
		return ADMIT_EINVAL;
	if (max_filters == 0)
		max_filters = ADMIT_CHAIN_MAX_FILTERS;
	pthread_rwlock_wrlock(&c->grow_lock);
	/* relaxed: n only changes under this lock (or in trim, alone). */
	if (max_filters < atomic_load_explicit(&c->n, memory_order_relaxed))
		st = ADMIT_EINVAL;
	else
		/* relaxed: grow() reads it under this lock. */
		atomic_store_explicit(&c->max_filters, max_filters,
		                      memory_order_relaxed);
	pthread_rwlock_unlock(&c->grow_lock);
	return st;
}

enum admit_status
admit_chain_dump(const struct admit_chain *c, void **buf, size_t *len)
{
	unsigned char *b, *p;
	/* Version 1 whenever it says everything: a default chain dumps the
	 * bytes it always did (Redis RDBs and SCANDUMP chunks included). */
	bool v1 = c && c->bits == 16 && c->max_load == 0 && c->trimmed == 0 &&
	          !c->single_writer;
	size_t header = v1 ? CHAIN_HEADER_V1 : CHAIN_HEADER_V2;
	size_t total = header + 8;
	uint64_t load_bits;
	unsigned n;

	if (!c || !buf || !len)
		return ADMIT_EINVAL;
	n = chain_len(c);
	for (unsigned i = 0; i < n; i++)
		total += 8 + cuckoo_snapshot_len(chain_at(c, i));
	/* malloc, not admit_malloc: the caller frees it with free(). */
	b = malloc(total);
	if (!b)
		return ADMIT_NOMEM;
	memcpy(b, CHAIN_MAGIC, 8);
	snap_put32(b + 8, v1 ? 1 : 2);
	snap_put32(b + 12, n);
	snap_put32(b + 16, c->expansion);
	/* relaxed: a setting; a dump racing its setter may hold either. */
	snap_put32(b + 20, atomic_load_explicit(&c->max_filters,
	                                        memory_order_relaxed));
	snap_put32(b + 24, c->stripes);
	snap_put32(b + 28, v1 ? 0 : c->bits);
	snap_put64(b + 32, c->capacity);
	snap_put64(b + 40, c->seed);
	if (!v1) {
		memcpy(&load_bits, &c->max_load, 8);
		snap_put64(b + 48, load_bits);
		snap_put64(b + 56, c->trimmed);
		snap_put32(b + 64, c->single_writer ? CHAIN_FLAG_SINGLE_WRITER :
		           0);
		snap_put32(b + 68, 0);
	}
	p = b + header;
	for (unsigned i = 0; i < n; i++) {
		const struct admit_cuckoo *f = chain_at(c, i);
		size_t fl = cuckoo_snapshot_len(f);

		snap_put64(p, fl);
		cuckoo_snapshot_encode(f, p + 8);
		p += 8 + fl;
	}
	snap_put64(p, XXH3_64bits(b, total - 8));
	*buf = b;
	*len = total;
	return ADMIT_OK;
}

enum admit_status
admit_chain_restore(const void *buf, size_t len, struct admit_chain **out)
{
	return admit_chain_restore_alloc(buf, len, NULL, out);
}

enum admit_status
admit_chain_restore_alloc(const void *buf, size_t len,
                          const struct admit_allocator *alloc,
                          struct admit_chain **out)
{
	const unsigned char *b = buf, *p, *end;
	struct admit_chain *c;
	enum admit_status st = ADMIT_ECORRUPT;
	struct chain_params cp = { .alloc = alloc };
	uint64_t load_bits;
	size_t header;
	unsigned n, version;

	if ((!buf && len) || !out)
		return ADMIT_EINVAL;
	if (len < CHAIN_HEADER_V1 + 8 || memcmp(b, CHAIN_MAGIC, 8) != 0)
		return ADMIT_ECORRUPT;
	version = snap_get32(b + 8);
	header = version == 1 ? CHAIN_HEADER_V1 : CHAIN_HEADER_V2;
	if ((version != 1 && version != 2) || len < header + 8)
		return ADMIT_ECORRUPT;
	/* The outer checksum first: an altered buffer allocates nothing. */
	if (snap_get64(b + len - 8) != XXH3_64bits(b, len - 8))
		return ADMIT_ECORRUPT;
	n = snap_get32(b + 12);
	cp.expansion = snap_get32(b + 16);
	cp.max_filters = snap_get32(b + 20);
	cp.stripes = snap_get32(b + 24);
	cp.bits = snap_get32(b + 28);
	cp.capacity = snap_get64(b + 32);
	cp.seed = snap_get64(b + 40);
	if (version == 1) {
		if (cp.bits != 0)
			return ADMIT_ECORRUPT; /* reserved */
		cp.bits = 16;
	} else {
		load_bits = snap_get64(b + 48);
		memcpy(&cp.max_load, &load_bits, 8);
		cp.trimmed = snap_get64(b + 56);
		if ((snap_get32(b + 64) & ~CHAIN_FLAG_SINGLE_WRITER) ||
		    snap_get32(b + 68) != 0)
			return ADMIT_ECORRUPT;
		cp.single_writer = snap_get32(b + 64) & CHAIN_FLAG_SINGLE_WRITER;
	}
	if (cp.max_filters == 0 || cp.max_filters > ADMIT_CHAIN_MAX_FILTERS ||
	    n == 0 || n > cp.max_filters || cp.expansion == 0 ||
	    cp.expansion > ADMIT_CHAIN_MAX_EXPANSION || !stripes_ok(cp.stripes) ||
	    (cp.bits != 8 && cp.bits != 16) || !max_load_ok(cp.max_load) ||
	    cp.trimmed >= UINT32_MAX - n || cp.capacity == 0 ||
	    cp.capacity > ADMIT_CUCKOO_MAX_CAPACITY || nominal_max(&cp) == 0 ||
	    cp.seed == 0)
		return ADMIT_ECORRUPT;
	c = chain_alloc(&cp);
	if (!c)
		return ADMIT_NOMEM;
	p = b + header;
	end = b + len - 8;
	for (unsigned i = 0; i < n; i++) {
		struct admit_cuckoo *f = NULL;
		uint64_t fl;

		if ((size_t)(end - p) < 8)
			goto fail;
		fl = snap_get64(p);
		p += 8;
		if (fl > (uint64_t)(end - p))
			goto fail;
		st = cuckoo_snapshot_decode(p, (size_t)fl, &c->alloc, &f);
		if (st != ADMIT_OK)
			goto fail;
		publish(c, f);
		st = ADMIT_ECORRUPT;
		/* The filter must be the one this chain would have made: a
		 * filter from elsewhere would break the stated bound's
		 * premises (width, load) or a replica's equality. */
		if (f->capacity != table_capacity(c, c->trimmed + i) ||
		    f->slot_bits != c->bits || f->counting ||
		    f->seed != filter_seed(c, c->trimmed + i) ||
		    (c->stripes && f->stripe_mask + 1 != c->stripes) ||
		    (c->max_load != 0 && admit_cuckoo_size(f) > c->limit[i]))
			goto fail;
		p += fl;
	}
	if (p != end)
		goto fail;
	*out = c;
	return ADMIT_OK;
fail:
	admit_chain_free(c);
	return st;
}

enum admit_status
admit_chain_save(const struct admit_chain *c, const char *path)
{
	enum admit_status st;
	void *buf = NULL;
	size_t len = 0;

	if (!c || !path)
		return ADMIT_EINVAL;
	st = admit_chain_dump(c, &buf, &len);
	if (st == ADMIT_OK)
		st = snapfile_write(path, &(struct snapfile_part){ buf, len }, 1);
	free(buf);
	return st;
}

enum admit_status
admit_chain_load(const char *path, struct admit_chain **out)
{
	enum admit_status st;
	unsigned char *buf = NULL;
	uint64_t size;
	size_t got = 0;
	int fd;

	if (!path || !out)
		return ADMIT_EINVAL;
	st = snapfile_open(path, &fd, &size);
	if (st != ADMIT_OK)
		return st;
	st = ADMIT_NOMEM;
	if (size > SIZE_MAX || !(buf = admit_malloc(size ? (size_t)size : 1)))
		goto out;
	st = ADMIT_EIO;
	while (got < size) {
		ssize_t r = read(fd, buf + got, (size_t)size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			goto out;
		got += (size_t)r;
	}
	st = admit_chain_restore(buf, got, out);
out:
	admit_free(buf);
	close(fd);
	return st;
}
