/*
 * freqsketch.c - the block count-min sketch of admit_lru (freqsketch.h).
 *
 * Layout.  A table of 2^k 64-bit words, 8 to a 64-byte block, each word 16
 * counters of 4 bits.  A key's mixed hash x picks its block with its low
 * bits; each of its four counters i (0..3) takes 5 bits of x's high half:
 * one choosing word 2i or 2i + 1 of the block, four the counter in it.  So
 * a record or an estimate touches one line, and the four counters of a key
 * sit in four different words, which two keys share only by chance.
 *
 * Progress and ordering: lock-free.  Counters change only by a
 * compare-and-swap of their word (a record's raise, an aging's halving);
 * every atomic in this file is relaxed except the aging flag: a count, a
 * mode, and a table whose values are estimates order nothing else.
 */
#include "config.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <string.h>

#include "alloc.h"
#include "debug.h"
#include "freqsketch.h"
#include "hash.h"
#include "snapfile.h"

#define WORDS_PER_BLOCK 8u
#define DEFAULT_WARM 6u          /* as admit_tinylfu's (tinylfu.c) */
#define DEFAULT_CHANCE_SHIFT 7u
#define MAX_SAMPLE ((uint64_t)1 << 40)
#define LOW_BITS 0x7777777777777777ull   /* each nibble's low three bits */

struct admit_freqsketch {
	_Atomic uint64_t *table;
	uint64_t block_mask;            /* blocks - 1 */
	uint64_t seed;
	uint64_t sample;                /* W: records between agings */
	unsigned warm, chance_shift;
	struct admit_allocator alloc;
	size_t table_bytes, footprint;
	_Atomic bool steady;
	/* Written by every record batch: a line of its own. */
	alignas(ADMIT_CACHELINE) _Atomic uint64_t total;
	atomic_flag aging;
	_Atomic uint64_t agings, random_admits;
	_Atomic uint64_t rng;           /* a Weyl sequence; mixed on use */
};

enum admit_status
admit_freqsketch_new(const struct admit_tinylfu_config *cfg, unsigned width,
                     struct admit_freqsketch **out)
{
	struct admit_freqsketch *s;
	uint64_t w, keys, words = WORDS_PER_BLOCK;
	size_t own = 0;

	if (!cfg || !out || width == 0 || width > 64 ||
	    cfg->cache_capacity == 0 ||
	    cfg->cache_capacity > ADMIT_TINYLFU_MAX_CAPACITY ||
	    cfg->sample_size > MAX_SAMPLE)
		return ADMIT_EINVAL;
	w = cfg->sample_size ? cfg->sample_size : 10 * cfg->cache_capacity;
	/* A sample of W records holds at most W / 10 keys a cache of W / 10
	 * entries competes for at the default W; more words for a longer
	 * sample would buy memory without bound (admit_tinylfu sizes its
	 * store the same way). */
	keys = w / 10 < cfg->cache_capacity ? w / 10 : cfg->cache_capacity;
	while (words < keys * width)
		words <<= 1;
	s = admit_mem_zalloc(cfg->alloc, sizeof(*s), &own);
	if (!s)
		return ADMIT_NOMEM;
	s->alloc = admit_mem_copy(cfg->alloc);
	s->footprint = own;
	s->table_bytes = words * sizeof(uint64_t);
	s->table = admit_mem_table(&s->alloc, s->table_bytes, &s->footprint);
	if (!s->table) {
		admit_mem_free(&s->alloc, s, sizeof(*s), NULL);
		return ADMIT_NOMEM;
	}
	s->block_mask = words / WORDS_PER_BLOCK - 1;
	s->seed = admit_mix64(cfg->seed ? cfg->seed : admit_random_seed());
	s->sample = w;
	s->warm = cfg->warm ? cfg->warm : DEFAULT_WARM;
	s->chance_shift = cfg->chance_shift ? cfg->chance_shift
	                                    : DEFAULT_CHANCE_SHIFT;
	atomic_init(&s->steady, false);
	atomic_init(&s->total, 0);
	atomic_flag_clear(&s->aging);
	atomic_init(&s->agings, 0);
	atomic_init(&s->random_admits, 0);
	atomic_init(&s->rng, s->seed);
	*out = s;
	return ADMIT_OK;
}

void
admit_freqsketch_free(struct admit_freqsketch *s)
{
	struct admit_allocator a;

	if (!s)
		return;
	a = s->alloc;
	admit_mem_table_free(&a, s->table, s->table_bytes, NULL);
	admit_mem_free(&a, s, sizeof(*s), NULL);
}

/* The key's place: its block's first word, and x, whose high half
 * names its four counters. */
static inline __attribute__((always_inline)) _Atomic uint64_t *
block_of(const struct admit_freqsketch *s, uint64_t h, uint64_t *x)
{
	*x = admit_mix64(h ^ s->seed);
	return s->table + (*x & s->block_mask) * WORDS_PER_BLOCK;
}

/* Counter i of x: byte i of x's high half; its low bit picks word 2i
 * or 2i + 1 of the block, the next four the counter in that word. */
static inline __attribute__((always_inline)) unsigned
word_of(uint64_t x, unsigned i)
{
	return 2 * i + (unsigned)(x >> (32 + 8 * i) & 1);
}

static inline __attribute__((always_inline)) unsigned
shift_of(uint64_t x, unsigned i)
{
	return (unsigned)(x >> (32 + 8 * i) & 0x1e) << 1;
}

/* Halves every counter.  A word's halving is one compare-and-swap, so a
 * concurrent raise is either halved or kept whole, never lost. */
static void
age(struct admit_freqsketch *s)
{
	uint64_t words = (s->block_mask + 1) * WORDS_PER_BLOCK;

	/* acquire: pairs with the release below in the previous aging (a
	 * try-lock: one aging at a time, a concurrent one skipped). */
	if (atomic_flag_test_and_set_explicit(&s->aging, memory_order_acquire))
		return;
	for (uint64_t i = 0; i < words; i++) {
		/* relaxed: the table orders nothing (see the top). */
		uint64_t v = atomic_load_explicit(&s->table[i], memory_order_relaxed);

		while (v && !atomic_compare_exchange_weak_explicit(
		                    &s->table[i], &v, (v >> 1) & LOW_BITS,
		                    memory_order_relaxed, memory_order_relaxed))
			;
	}
	/* relaxed: a statistic. */
	atomic_fetch_add_explicit(&s->agings, 1, memory_order_relaxed);
	atomic_flag_clear_explicit(&s->aging, memory_order_release);
}

/* Counter i of x's value in the block b. */
static inline __attribute__((always_inline)) unsigned
counter_of(_Atomic uint64_t *b, uint64_t x, unsigned i)
{
	/* relaxed: as in age(). */
	return (unsigned)(atomic_load_explicit(&b[word_of(x, i)],
	                                       memory_order_relaxed) >>
	                  shift_of(x, i) & 15);
}

/* Raises counter i of x in the block b by one, unless at the maximum. */
static inline __attribute__((always_inline)) void
raise_one(_Atomic uint64_t *b, uint64_t x, unsigned i)
{
	_Atomic uint64_t *w = &b[word_of(x, i)];
	unsigned sh = shift_of(x, i);
	/* relaxed: as in age(). */
	uint64_t v = atomic_load_explicit(w, memory_order_relaxed);

	while ((v >> sh & 15) != 15 &&
	       !atomic_compare_exchange_weak_explicit(w, &v,
	                                              v + ((uint64_t)1 << sh),
	                                              memory_order_relaxed,
	                                              memory_order_relaxed))
		;
}

/* Raises the key's least counters, those equal to its estimate, unless
 * at the maximum (a conservative update: Estan, Varghese, SIGCOMM 2002).
 * A counter above the least already counts other keys' records as well
 * as this key's; raising only the least keeps a light key's estimate near
 * its own count where a plain count-min lets collisions lift it.  x is the
 * key's mixed hash (block_of).  A raised counter's word is read again
 * (it is in the line just read): a concurrent change between the two
 * reads makes this raise one of a counter a little higher than the least,
 * and the estimate stays an upper bound all the same. */
static inline __attribute__((always_inline)) void
raise_counters(struct admit_freqsketch *s, uint64_t x)
{
	_Atomic uint64_t *b = s->table + (x & s->block_mask) * WORDS_PER_BLOCK;
	unsigned c0 = counter_of(b, x, 0), c1 = counter_of(b, x, 1);
	unsigned c2 = counter_of(b, x, 2), c3 = counter_of(b, x, 3);
	unsigned least = c0 < c1 ? c0 : c1;

	least = c2 < least ? c2 : least;
	least = c3 < least ? c3 : least;
	/* Saturated (under skew, the hot keys': most records): read, not
	 * written. */
	if (least == ADMIT_FREQSKETCH_MAX)
		return;
	if (c0 == least)
		raise_one(b, x, 0);
	if (c1 == least)
		raise_one(b, x, 1);
	if (c2 == least)
		raise_one(b, x, 2);
	if (c3 == least)
		raise_one(b, x, 3);
}

/* Counts n records; returns how many of them come before the next
 * multiple of W is reached, inclusive (1 .. W): the record that reaches it
 * ages the table. */
static inline uint64_t
tally(struct admit_freqsketch *s, uint64_t n)
{
	/* relaxed: a count; the aging it triggers orders itself. */
	uint64_t old = atomic_fetch_add_explicit(&s->total, n,
	                                         memory_order_relaxed);

	return s->sample - old % s->sample;
}

/* The aging due after a record that reached a multiple of W. */
static inline void
age_due(struct admit_freqsketch *s)
{
	/* relaxed: a mode switch may take effect one sample late. */
	if (!atomic_load_explicit(&s->steady, memory_order_relaxed))
		age(s);
}

void
admit_freqsketch_record(struct admit_freqsketch *s, uint64_t h)
{
	uint64_t x;

	block_of(s, h, &x);
	raise_counters(s, x);
	if (tally(s, 1) == 1)
		age_due(s);
}

void
admit_freqsketch_prepare(const struct admit_freqsketch *s, uint64_t *h,
                         size_t n)
{
	for (size_t i = 0; i < n; i++)
		__builtin_prefetch(block_of(s, h[i], &h[i]), 1);
}

void
admit_freqsketch_record_prepared(struct admit_freqsketch *s,
                                 const uint64_t *x, size_t n)
{
	uint64_t left;

	debug_check(n <= ADMIT_FREQSKETCH_BATCH);
	if (n == 0)
		return;
	/* The batch's records take their places in the count at once; an
	 * aging then falls between the same two of them as it would between
	 * single records. */
	left = tally(s, n);
	for (size_t i = 0; i < n; i++) {
		raise_counters(s, x[i]);
		if (--left == 0) {
			age_due(s);
			left = s->sample;
		}
	}
}

void
admit_freqsketch_record_batch(struct admit_freqsketch *s, const uint64_t *h,
                              size_t n)
{
	uint64_t x[ADMIT_FREQSKETCH_BATCH];

	debug_check(n <= ADMIT_FREQSKETCH_BATCH);
	memcpy(x, h, n * sizeof(x[0]));
	admit_freqsketch_prepare(s, x, n);
	admit_freqsketch_record_prepared(s, x, n);
}

void
admit_freqsketch_prefetch(const struct admit_freqsketch *s, uint64_t h)
{
	uint64_t x;

	__builtin_prefetch(block_of(s, h, &x), 1);
}

unsigned
admit_freqsketch_estimate(const struct admit_freqsketch *s, uint64_t h)
{
	uint64_t x;
	_Atomic uint64_t *b = block_of(s, h, &x);
	unsigned est = ADMIT_FREQSKETCH_MAX;

#pragma GCC unroll 4
	for (unsigned i = 0; i < 4; i++) {
		/* relaxed: as in age(). */
		uint64_t v = atomic_load_explicit(&b[word_of(x, i)],
		                                  memory_order_relaxed);
		unsigned c = (unsigned)(v >> shift_of(x, i) & 15);

		est = c < est ? c : est;
	}
	return est;
}

bool
admit_freqsketch_admit(struct admit_freqsketch *s, uint64_t candidate,
                       uint64_t victim)
{
	unsigned ce = admit_freqsketch_estimate(s, candidate), ve;
	uint64_t r;

	/* An estimate of 0 neither beats the victim's nor reaches warm
	 * (at least 1). */
	if (ce == 0)
		return false;
	ve = admit_freqsketch_estimate(s, victim);
	if (ce > ve)
		return true;
	/* relaxed: a mode, read as a hint. */
	if (ce < s->warm || s->chance_shift >= 64 ||
	    atomic_load_explicit(&s->steady, memory_order_relaxed))
		return false;
	/* relaxed: each caller only needs a distinct point of the sequence. */
	r = admit_mix64(atomic_fetch_add_explicit(&s->rng, ADMIT_GOLDEN64,
	                                          memory_order_relaxed) +
	                ADMIT_GOLDEN64);
	if (r >> (64 - s->chance_shift))
		return false;
	/* relaxed: a statistic. */
	atomic_fetch_add_explicit(&s->random_admits, 1, memory_order_relaxed);
	return true;
}

void
admit_freqsketch_set_steady(struct admit_freqsketch *s, bool steady)
{
	/* relaxed: a mode, read as a hint by records and contests. */
	atomic_store_explicit(&s->steady, steady, memory_order_relaxed);
}

size_t
admit_freqsketch_memory(const struct admit_freqsketch *s)
{
	return s ? s->table_bytes : 0;
}

size_t
admit_freqsketch_footprint(const struct admit_freqsketch *s)
{
	return s ? s->footprint : 0;
}

void
admit_freqsketch_load(const struct admit_freqsketch *s, uint64_t *keys,
                      uint64_t *slots)
{
	uint64_t words = (s->block_mask + 1) * WORDS_PER_BLOCK, nonzero = 0;

	for (uint64_t i = 0; i < words; i++) {
		/* relaxed: a statistic. */
		uint64_t v = atomic_load_explicit(&s->table[i],
		                                  memory_order_relaxed);

		/* A nibble is non-zero when any of its bits is. */
		v = (v | v >> 1 | v >> 2 | v >> 3) & 0x1111111111111111ull;
		nonzero += (uint64_t)__builtin_popcountll(v);
	}
	*keys = nonzero / 4;
	*slots = words * 16 / 4;
}

void
admit_freqsketch_stats(const struct admit_freqsketch *s, uint64_t *agings,
                       uint64_t *random_admits)
{
	/* relaxed, both: statistics. */
	*agings = atomic_load_explicit(&s->agings, memory_order_relaxed);
	*random_admits = atomic_load_explicit(&s->random_admits,
	                                      memory_order_relaxed);
}

/* ---- the sketch as bytes (freqsketch.h gives the format) ----------------- */

#define IO_MAGIC "ADMITFSK"
#define IO_VERSION 1u
#define IO_SUMMED 48u             /* the header's bytes before the checksum */
#define IO_SEED_TAG 0x736b657463686670ull

static uint64_t
io_words(const struct admit_freqsketch *s)
{
	return (s->block_mask + 1) * WORDS_PER_BLOCK;
}

/* A fingerprint of the seed: equal seeds match, and the bytes need not
 * carry the seed itself. */
static uint64_t
io_seed_print(const struct admit_freqsketch *s)
{
	unsigned char b[8];

	snap_put64(b, s->seed);
	return admit_hash(b, sizeof(b), IO_SEED_TAG);
}

static uint64_t
io_sum(const unsigned char *buf, uint64_t words)
{
	return admit_hash(buf + ADMIT_FREQSKETCH_IO_HDR, words * 8,
	                  admit_hash(buf, IO_SUMMED, 0));
}

size_t
admit_freqsketch_export_size(const struct admit_freqsketch *s)
{
	return ADMIT_FREQSKETCH_IO_HDR + (size_t)io_words(s) * 8;
}

void
admit_freqsketch_export(const struct admit_freqsketch *s, unsigned char *buf)
{
	uint64_t words = io_words(s);
	unsigned char *t = buf + ADMIT_FREQSKETCH_IO_HDR;

	memcpy(buf, IO_MAGIC, 8);
	snap_put32(buf + 8, IO_VERSION);
	snap_put32(buf + 12, 0);
	snap_put64(buf + 16, words);
	snap_put64(buf + 24, s->sample);
	snap_put64(buf + 32, io_seed_print(s));
	/* relaxed: a count, copied as a statistic. */
	snap_put64(buf + 40, atomic_load_explicit(&s->total,
	                                          memory_order_relaxed) %
	                     s->sample);
	for (uint64_t i = 0; i < words; i++)
		/* relaxed: the table orders nothing (see the top). */
		snap_put64(t + 8 * i, atomic_load_explicit(&s->table[i],
		                                           memory_order_relaxed));
	snap_put64(buf + IO_SUMMED, io_sum(buf, words));
}

enum admit_status
admit_freqsketch_import(struct admit_freqsketch *s, const unsigned char *buf,
                        size_t len)
{
	uint64_t words;
	const unsigned char *t = buf + ADMIT_FREQSKETCH_IO_HDR;

	if (len < ADMIT_FREQSKETCH_IO_HDR || memcmp(buf, IO_MAGIC, 8) != 0 ||
	    snap_get32(buf + 8) != IO_VERSION || snap_get32(buf + 12) != 0)
		return ADMIT_ECORRUPT;
	words = snap_get64(buf + 16);
	if (words > (len - ADMIT_FREQSKETCH_IO_HDR) / 8 ||
	    len - ADMIT_FREQSKETCH_IO_HDR != words * 8 ||
	    snap_get64(buf + IO_SUMMED) != io_sum(buf, words) ||
	    snap_get64(buf + 24) == 0 ||
	    snap_get64(buf + 40) >= snap_get64(buf + 24))
		return ADMIT_ECORRUPT;
	if (words != io_words(s) || snap_get64(buf + 24) != s->sample ||
	    snap_get64(buf + 32) != io_seed_print(s))
		return ADMIT_EINVAL;
	for (uint64_t i = 0; i < words; i++)
		/* relaxed: as in age(). */
		atomic_store_explicit(&s->table[i], snap_get64(t + 8 * i),
		                      memory_order_relaxed);
	/* relaxed: a count; the next aging falls W records after the one the
	 * export had seen. */
	atomic_store_explicit(&s->total, snap_get64(buf + 40),
	                      memory_order_relaxed);
	return ADMIT_OK;
}
