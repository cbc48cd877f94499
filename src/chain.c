/*
 * chain.c - a growable filter: a chain of admit_cuckoo filters.
 *
 * Concurrency.  The filters live in a fixed array of 32 atomic pointers and
 * a count n; a filter is published by storing its pointer and then n (both
 * under the growth lock), and is freed only with the chain.  A reader loads n
 * with acquire and sees every filter below it; each filter is itself safe
 * for concurrent use, so lookups, plain adds and deletes take no chain lock.
 * admit_chain_add_unique() must not let a filter appear between its check of
 * the old filters and its insert into the newest (two threads could then
 * both insert a key, one in each): it holds the growth rwlock shared, and
 * growth takes it exclusively.
 *
 * Dump format, all integers little-endian:
 *
 *   0  magic "ADMITCHN"
 *   8  u32 format version (1)
 *  12  u32 filters (1 to max_filters)
 *  16  u32 expansion (1 to ADMIT_CHAIN_MAX_EXPANSION)
 *  20  u32 max_filters (1 to ADMIT_CHAIN_MAX_FILTERS)
 *  24  u32 stripes as configured (0 = each filter's default)
 *  28  u32 reserved, 0
 *  32  u64 first capacity
 *  40  u64 seed
 *  48  per filter: u64 length, then that many bytes of the cuckoo snapshot
 *      format (cuckoo_snapshot.c), whose capacity and seed must be the ones
 *      the chain gives filter i
 *  end u64 XXH3-64 of every byte before it
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
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
#define CHAIN_VERSION 1u
#define CHAIN_HEADER 48
#define CHAIN_DEFAULT_EXPANSION 2u

struct admit_chain {
	_Atomic(struct admit_cuckoo *) f[ADMIT_CHAIN_MAX_FILTERS];
	_Atomic unsigned n;
	unsigned expansion, max_filters, stripes;
	uint64_t capacity; /* the first filter's */
	uint64_t seed;
	pthread_rwlock_t grow_lock;
};

/* Filter i's capacity: the first times expansion^i, held at the largest a
 * filter takes (a chain at that size grows by filters of that size). */
static uint64_t
filter_capacity(const struct admit_chain *c, unsigned i)
{
	uint64_t cap = c->capacity;

	while (i-- > 0) {
		if (cap > ADMIT_CUCKOO_MAX_CAPACITY / c->expansion)
			return ADMIT_CUCKOO_MAX_CAPACITY;
		cap *= c->expansion;
	}
	return cap;
}

/* Filter i's seed: distinct per filter (a key colliding in one filter is
 * independent in the next), never 0 (which admit_cuckoo_new reads as
 * "random"), and a function of the chain's seed only, so that a replica fed
 * the same commands builds the same chain. */
static uint64_t
filter_seed(const struct admit_chain *c, unsigned i)
{
	unsigned char b[4];
	uint64_t s;

	snap_put32(b, i);
	s = XXH3_64bits_withSeed(b, sizeof(b), c->seed);
	return s ? s : 1;
}

static enum admit_status
make_filter(const struct admit_chain *c, unsigned i, struct admit_cuckoo **out)
{
	struct admit_cuckoo_config cfg = {
		.capacity = filter_capacity(c, i),
		.fingerprint_bits = 16,
		.stripes = c->stripes,
		.seed = filter_seed(c, i),
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

	atomic_store_explicit(&c->f[n], f, memory_order_relaxed);
	/* release: pairs with the acquire in chain_len(). */
	atomic_store_explicit(&c->n, n + 1, memory_order_release);
}

static struct admit_chain *
chain_alloc(uint64_t capacity, unsigned expansion, unsigned max_filters,
            unsigned stripes, uint64_t seed)
{
	struct admit_chain *c = admit_calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (pthread_rwlock_init(&c->grow_lock, NULL) != 0) {
		admit_free(c);
		return NULL;
	}
	atomic_init(&c->n, 0);
	for (unsigned i = 0; i < ADMIT_CHAIN_MAX_FILTERS; i++)
		atomic_init(&c->f[i], NULL);
	c->capacity = capacity;
	c->expansion = expansion;
	c->max_filters = max_filters;
	c->stripes = stripes;
	c->seed = seed;
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
	unsigned expansion, max_filters;

	if (!cfg || !out || cfg->capacity == 0 ||
	    cfg->capacity > ADMIT_CUCKOO_MAX_CAPACITY ||
	    cfg->expansion > ADMIT_CHAIN_MAX_EXPANSION ||
	    cfg->max_filters > ADMIT_CHAIN_MAX_FILTERS || !stripes_ok(cfg->stripes))
		return ADMIT_EINVAL;
	expansion = cfg->expansion ? cfg->expansion : CHAIN_DEFAULT_EXPANSION;
	max_filters = cfg->max_filters ? cfg->max_filters : ADMIT_CHAIN_MAX_FILTERS;
	c = chain_alloc(cfg->capacity, expansion, max_filters, cfg->stripes,
	                cfg->seed ? cfg->seed : admit_random_seed());
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
	if (!c)
		return;
	for (unsigned i = 0; i < ADMIT_CHAIN_MAX_FILTERS; i++)
		admit_cuckoo_free(atomic_load_explicit(&c->f[i],
		                                       memory_order_relaxed));
	pthread_rwlock_destroy(&c->grow_lock);
	admit_free(c);
}

/* Add a filter if the chain still has the n filters the caller saw (another
 * thread may have grown it meanwhile: then there is nothing to do).  Caller
 * holds no chain lock. */
static enum admit_status
grow(struct admit_chain *c, unsigned n)
{
	struct admit_cuckoo *f;
	enum admit_status st = ADMIT_OK;

	pthread_rwlock_wrlock(&c->grow_lock);
	if (atomic_load_explicit(&c->n, memory_order_relaxed) != n)
		goto out; /* relaxed: n only changes under this lock */
	/* A filter refuses a key with 8 copies in its two buckets at any load;
	 * growing then would let one key repeated allocate filter after
	 * filter.  A filter at least half full has earned its successor. */
	if (n >= c->max_filters || admit_cuckoo_size(chain_at(c, n - 1)) <
	    admit_cuckoo_slots(chain_at(c, n - 1)) / 2) {
		st = ADMIT_FULL;
		goto out;
	}
	st = make_filter(c, n, &f);
	if (st == ADMIT_OK)
		publish(c, f);
out:
	pthread_rwlock_unlock(&c->grow_lock);
	return st;
}

enum admit_status
admit_chain_add_at(struct admit_chain *c, const void *key, size_t len,
                   unsigned *filter)
{
	if (!c || !admit_key_ok(key, len))
		return ADMIT_EINVAL;
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

enum admit_status
admit_chain_add_unique_at(struct admit_chain *c, const void *key, size_t len,
                          unsigned *filter)
{
	if (!c || !admit_key_ok(key, len))
		return ADMIT_EINVAL;
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
	out->max_filters = c->max_filters;
	out->expansion = c->expansion;
	out->first_capacity = c->capacity;
	for (unsigned i = 0; i < n; i++) {
		const struct admit_cuckoo *f = chain_at(c, i);

		out->capacity += filter_capacity(c, i);
		out->items += admit_cuckoo_size(f);
		out->buckets += admit_cuckoo_slots(f) / 4;
		out->memory += admit_cuckoo_memory(f);
	}
	out->fpr_bound = n * 8.0 / 65536.0;
	return ADMIT_OK;
}

enum admit_status
admit_chain_dump(const struct admit_chain *c, void **buf, size_t *len)
{
	unsigned char *b, *p;
	size_t total = CHAIN_HEADER + 8;
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
	snap_put32(b + 8, CHAIN_VERSION);
	snap_put32(b + 12, n);
	snap_put32(b + 16, c->expansion);
	snap_put32(b + 20, c->max_filters);
	snap_put32(b + 24, c->stripes);
	snap_put32(b + 28, 0);
	snap_put64(b + 32, c->capacity);
	snap_put64(b + 40, c->seed);
	p = b + CHAIN_HEADER;
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
	const unsigned char *b = buf, *p, *end;
	struct admit_chain *c;
	enum admit_status st = ADMIT_ECORRUPT;
	unsigned n, expansion, max_filters, stripes;
	uint64_t capacity, seed;

	if ((!buf && len) || !out)
		return ADMIT_EINVAL;
	if (len < CHAIN_HEADER + 8 || memcmp(b, CHAIN_MAGIC, 8) != 0 ||
	    snap_get32(b + 8) != CHAIN_VERSION)
		return ADMIT_ECORRUPT;
	/* The outer checksum first: an altered buffer allocates nothing. */
	if (snap_get64(b + len - 8) != XXH3_64bits(b, len - 8))
		return ADMIT_ECORRUPT;
	n = snap_get32(b + 12);
	expansion = snap_get32(b + 16);
	max_filters = snap_get32(b + 20);
	stripes = snap_get32(b + 24);
	capacity = snap_get64(b + 32);
	seed = snap_get64(b + 40);
	if (max_filters == 0 || max_filters > ADMIT_CHAIN_MAX_FILTERS ||
	    n == 0 || n > max_filters || expansion == 0 ||
	    expansion > ADMIT_CHAIN_MAX_EXPANSION || !stripes_ok(stripes) ||
	    snap_get32(b + 28) != 0 || capacity == 0 ||
	    capacity > ADMIT_CUCKOO_MAX_CAPACITY || seed == 0)
		return ADMIT_ECORRUPT;
	c = chain_alloc(capacity, expansion, max_filters, stripes, seed);
	if (!c)
		return ADMIT_NOMEM;
	p = b + CHAIN_HEADER;
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
		st = cuckoo_snapshot_decode(p, (size_t)fl, &f);
		if (st != ADMIT_OK)
			goto fail;
		publish(c, f);
		st = ADMIT_ECORRUPT;
		/* The filter must be the one this chain would have made: a
		 * filter from elsewhere would break the stated bound's
		 * premises (16-bit fingerprints) or a replica's equality. */
		if (f->capacity != filter_capacity(c, i) || f->slot_bits != 16 ||
		    f->counting || f->seed != filter_seed(c, i) ||
		    (stripes && f->stripe_mask + 1 != stripes))
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
