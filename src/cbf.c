/*
 * cbf.c - the blocked counting Bloom filter (doc/design.md §5).
 *
 * Layout: `blocks` blocks of 64 bytes, each 8 words of 16 4-bit counters.  A
 * key's hash picks one block (fastrange on all 64 bits) and, from further
 * mixes of the hash, k counter positions in it, 7 bits each, independently
 * (two positions may coincide, as in the textbook analysis).
 *
 * Progress and ordering: every update is a CAS loop on one word, so it is
 * lock-free; a read is the block's 8 loads, so it is wait-free.  All accesses
 * are relaxed: the counters are statistics that publish no other memory, and
 * a reader needs no order between two counters.  An update touching several
 * words is therefore not atomic as a whole; each word's change is.
 */
#include "config.h"

#include <math.h>
#include <stdatomic.h>

#include "alloc.h"
#include "cbf_internal.h"
#include "debug.h"
#include "hash.h"

#define BLOCK_WORDS 8
#define BLOCK_COUNTERS (BLOCK_WORDS * 16)
#define POS_BITS 7 /* log2(BLOCK_COUNTERS) */

#define NIBBLE_LOW 0x7777777777777777ull /* a halved word's surviving bits */
#define NIBBLE_ONES 0x1111111111111111ull /* the low bit of every nibble */

struct admit_cbf {
	_Atomic uint64_t *words;
	uint64_t blocks;
	unsigned k;
	uint64_t seed;
	struct admit_allocator alloc;
	size_t footprint; /* bytes held from alloc, this struct included */
};

/* A key's counters: its block, and the hash its positions are drawn from
 * (positions()). */
struct cbf_key {
	_Atomic uint64_t *block;
	uint64_t h;
};

/* The stream of a key's counter positions in its block: nine per 64-bit
 * word of a counter-mode stream of mixes of the hash, fresh bits for every
 * word, none reused from the block index.  Drawn as used, so that a call
 * that stops at its first zero counter computes no more of them. */
struct cbf_positions {
	uint64_t h, bits;
	unsigned word, left;
};

static inline struct cbf_positions
positions(uint64_t h)
{
	return (struct cbf_positions){ .h = h };
}

#define POS_PER_WORD (64 / POS_BITS)

/* Word j (1, 2, ...) of h's stream: positions j * 9 - 9 onwards, 7 bits
 * each from the lowest. */
static inline uint64_t
position_word(uint64_t h, unsigned j)
{
	return admit_mix64(h + j * ADMIT_GOLDEN64);
}

static inline unsigned
next_position(struct cbf_positions *s)
{
	unsigned p;

	if (s->left == 0) {
		s->bits = position_word(s->h, ++s->word);
		s->left = POS_PER_WORD;
	}
	p = s->bits & (BLOCK_COUNTERS - 1);
	s->bits >>= POS_BITS;
	s->left--;
	return p;
}

/* The value of counter p of a block whose word p / 16 is w. */
static inline unsigned
counter_in(uint64_t w, unsigned p)
{
	return (unsigned)(w >> (p % 16 * 4)) & 15u;
}

/* Per word of the key's block, which of its nibbles are the key's (the low
 * bit of each): made only where a word must be recomputed, since most
 * calls read the counters and change nothing. */
static void
key_nibbles(const struct cbf_key *key, unsigned k, uint64_t nib[BLOCK_WORDS])
{
	struct cbf_positions s = positions(key->h);

	for (unsigned w = 0; w < BLOCK_WORDS; w++)
		nib[w] = 0;
	for (unsigned i = 0; i < k; i++) {
		unsigned p = next_position(&s);

		nib[p / 16] |= 1ull << (p % 16 * 4);
	}
}

static inline _Atomic uint64_t *
block_of(const struct admit_cbf *f, uint64_t h)
{
	return f->words +
	    (uint64_t)(((unsigned __int128)h * f->blocks) >> 64) * BLOCK_WORDS;
}

static inline void
locate(const struct admit_cbf *f, uint64_t h, struct cbf_key *key)
{
	key->block = block_of(f, h);
	key->h = h;
	if (ADMIT_DEBUG) {
		/* The block is inside the table, and each word's mask marks
		 * only nibbles' low bits, at most k of them in all. */
		uint64_t nib[BLOCK_WORDS];
		unsigned marked = 0;

		debug_check(key->block >= f->words &&
		            key->block + BLOCK_WORDS <= f->words + f->blocks * BLOCK_WORDS);
		key_nibbles(key, f->k, nib);
		for (unsigned w = 0; w < BLOCK_WORDS; w++) {
			debug_check((nib[w] & ~NIBBLE_ONES) == 0);
			marked += (unsigned)__builtin_popcountll(nib[w]);
		}
		debug_check(marked >= 1 && marked <= f->k);
	}
}

/* The key's minimum, each counter read from its own word (k loads of at
 * most 8 words of one line): for calls that only read, where loading the
 * whole block and extracting from copies would take more instructions.
 * With stop_at_zero, 0 as soon as a counter is 0. */
static inline unsigned
key_min(const struct cbf_key *key, unsigned k, bool stop_at_zero)
{
	_Atomic uint64_t *block = key->block; /* kept in a register */
	unsigned min = ADMIT_CBF_COUNTER_MAX;

	/* next_position()'s stream, a word at a time. */
	for (unsigned j = 1; k; j++) {
		uint64_t bits = position_word(key->h, j);
		unsigned n = k < POS_PER_WORD ? k : POS_PER_WORD;

		for (k -= n; n; n--, bits >>= POS_BITS) {
			unsigned p = (unsigned)bits & (BLOCK_COUNTERS - 1);
			/* relaxed: see the file comment. */
			unsigned c = counter_in(atomic_load_explicit(
			        &block[p / 16], memory_order_relaxed), p);

			if (stop_at_zero && c == 0)
				return 0;
			min = c < min ? c : min;
		}
	}
	return min;
}

/* The key's counters that equal v, as a nibble mask of one word. */
static inline uint64_t
nibbles_equal(uint64_t word, uint64_t nibbles, unsigned v)
{
	uint64_t m = 0;

	for (; nibbles; nibbles &= nibbles - 1) {
		unsigned shift = (unsigned)__builtin_ctzll(nibbles);

		if (((word >> shift) & 15u) == v)
			m |= 1ull << shift;
	}
	return m;
}

/* The whole block (one cache line) in 8 loads: the words an update will
 * compare-and-swap. */
static inline void
load_block(const struct cbf_key *key, uint64_t v[BLOCK_WORDS])
{
#pragma GCC unroll 8
	for (unsigned w = 0; w < BLOCK_WORDS; w++)
		/* relaxed: see the file comment. */
		v[w] = atomic_load_explicit(&key->block[w], memory_order_relaxed);
}

/* The key's minimum in the loaded block, without a data-dependent branch:
 * positions are random, so branches on them would mispredict more often
 * than not. */
static unsigned
read_min(const struct cbf_key *key, const uint64_t v[BLOCK_WORDS], unsigned k)
{
	struct cbf_positions s = positions(key->h);
	unsigned min = ADMIT_CBF_COUNTER_MAX;

	for (unsigned i = 0; i < k; i++) {
		unsigned p = next_position(&s), c = counter_in(v[p / 16], p);

		min = c < min ? c : min;
	}
	return min;
}

/* Conservative update: raise, by one, the key's counters that equal min in
 * the loaded block v; false if none does (nothing changed).  A counter
 * another thread raised meanwhile is left alone; a word whose CAS fails is
 * recomputed on its own, so no counter is ever raised twice by one add. */
static bool
raise_min(const struct cbf_key *key, unsigned k, uint64_t v[BLOCK_WORDS],
          unsigned min)
{
	struct cbf_positions s = positions(key->h);
	uint64_t inc[BLOCK_WORDS] = { 0 }, nib[BLOCK_WORDS], any = 0;
	bool have_nib = false;

	if (min == ADMIT_CBF_COUNTER_MAX)
		return false;
	for (unsigned i = 0; i < k; i++) {
		unsigned p = next_position(&s);
		uint64_t bit = (uint64_t)(counter_in(v[p / 16], p) == min) <<
		               (p % 16 * 4);

		/* OR, not add: a position drawn twice rises once. */
		inc[p / 16] |= bit;
		any |= bit;
	}
	if (!any)
		return false;
	/* Every raised counter is the key's and at min < 15, so the add below
	 * cannot carry into the next counter. */
	if (ADMIT_DEBUG) {
		key_nibbles(key, k, nib);
		have_nib = true;
		for (unsigned w = 0; w < BLOCK_WORDS; w++) {
			debug_check((inc[w] & ~nib[w]) == 0);
			debug_check(nibbles_equal(v[w], inc[w], min) == inc[w]);
		}
	}
	for (unsigned w = 0; w < BLOCK_WORDS; w++) {
		/* min < 15, so adding 1 to those nibbles never carries.
		 * relaxed: see the file comment (the CAS orders nothing either). */
		while (inc[w] && !atomic_compare_exchange_weak_explicit(
		           &key->block[w], &v[w], v[w] + inc[w],
		           memory_order_relaxed, memory_order_relaxed)) {
			if (!have_nib) {
				key_nibbles(key, k, nib);
				have_nib = true;
			}
			inc[w] = nibbles_equal(v[w], nib[w], min);
		}
	}
	return true;
}

enum admit_status
admit_cbf_new(uint64_t n, double fpr, uint64_t seed, struct admit_cbf **out)
{
	struct admit_cbf_config cfg = { .items = n, .fpr = fpr, .seed = seed };

	return admit_cbf_new_config(&cfg, out);
}

enum admit_status
admit_cbf_new_config(const struct admit_cbf_config *cfg, struct admit_cbf **out)
{
	struct admit_cbf *f;
	double m, k, fpr;
	uint64_t n;

	if (!cfg)
		return ADMIT_EINVAL;
	n = cfg->items;
	fpr = cfg->fpr;
	/* !(fpr >= MIN) also rejects NaN. */
	if (!out || n == 0 || n > ADMIT_CBF_MAX_ITEMS ||
	    !(fpr >= ADMIT_CBF_MIN_FPR) || !(fpr < 1.0))
		return ADMIT_EINVAL;
	m = ceil(-(double)n * log(fpr) / (M_LN2 * M_LN2));
	k = round(m / (double)n * M_LN2);
	f = admit_mem_zalloc(cfg->alloc, sizeof(*f), NULL);
	if (!f)
		return ADMIT_NOMEM;
	f->alloc = admit_mem_copy(cfg->alloc);
	f->footprint = sizeof(*f);
	f->blocks = (uint64_t)ceil(m / BLOCK_COUNTERS);
	f->k = k < 1 ? 1 : k > CBF_MAX_HASHES ? CBF_MAX_HASHES : (unsigned)k;
	debug_check(f->blocks >= 1 && f->k >= 1 && f->k <= CBF_MAX_HASHES);
	f->seed = cfg->seed ? cfg->seed : admit_random_seed();
	f->words = admit_mem_table(&f->alloc, admit_cbf_memory(f), &f->footprint);
	if (!f->words) {
		admit_mem_free(&f->alloc, f, sizeof(*f), NULL);
		return ADMIT_NOMEM;
	}
	*out = f;
	return ADMIT_OK;
}

void
admit_cbf_free(struct admit_cbf *f)
{
	struct admit_allocator a;

	if (!f)
		return;
	a = f->alloc;
	admit_mem_table_free(&a, f->words, admit_cbf_memory(f), NULL);
	admit_mem_free(&a, f, sizeof(*f), NULL);
}

size_t
admit_cbf_footprint(const struct admit_cbf *f)
{
	return f ? f->footprint : 0;
}

static void
add(const struct cbf_key *key, unsigned k)
{
	uint64_t v[BLOCK_WORDS];
	unsigned min;
	bool raised;

	load_block(key, v);
	min = read_min(key, v, k);
	raised = raise_min(key, k, v, min);
	/* Some counter of the key is at its minimum. */
	debug_check(raised || min == ADMIT_CBF_COUNTER_MAX);
}

void
cbf_add_hash(struct admit_cbf *f, uint64_t h)
{
	struct cbf_key key;

	locate(f, h, &key);
	add(&key, f->k);
}

void
cbf_prefetch_batch(const struct admit_cbf *f, const uint64_t *h, size_t n)
{
	/* The block locate() picks, and nothing else of the key. */
	for (size_t i = 0; i < n; i++)
		__builtin_prefetch(block_of(f, h[i]), 1);
}

/*
 * One pass over the key's counters, each read from its own word: most calls
 * find the key (no counter at 0) and only read.  A key with a counter at 0
 * has minimum 0, and conservative update raises exactly its counters at 0:
 * each is raised where it is read, by one CAS on its word, and re-read if
 * the CAS fails (another thread may have raised it meanwhile).  A position
 * drawn twice rises once: its second draw reads 1.
 */
bool
cbf_add_if_absent_hash(struct admit_cbf *f, uint64_t h)
{
	struct cbf_key key;
	bool absent = false;
	unsigned k = f->k; /* read once: the CAS below is a compiler barrier */

	locate(f, h, &key);
	/* next_position()'s stream, a word at a time. */
	for (unsigned j = 1; k; j++) {
		uint64_t bits = position_word(key.h, j);
		unsigned n = k < POS_PER_WORD ? k : POS_PER_WORD;

		for (k -= n; n; n--, bits >>= POS_BITS) {
			unsigned p = (unsigned)bits & (BLOCK_COUNTERS - 1);
			_Atomic uint64_t *w = &key.block[p / 16];
			/* relaxed: see the file comment. */
			uint64_t v = atomic_load_explicit(w, memory_order_relaxed);

			while (counter_in(v, p) == 0) {
				absent = true;
				/* relaxed: see the file comment.  The counter
				 * is 0: the add cannot carry. */
				if (atomic_compare_exchange_weak_explicit(
				        w, &v, v + (1ull << (p % 16 * 4)),
				        memory_order_relaxed,
				        memory_order_relaxed))
					break;
			}
		}
	}
	return absent;
}

unsigned
cbf_estimate_hash(const struct admit_cbf *f, uint64_t h)
{
	struct cbf_key key;

	locate(f, h, &key);
	return key_min(&key, f->k, false);
}

bool
cbf_contains_hash(const struct admit_cbf *f, uint64_t h)
{
	struct cbf_key key;

	locate(f, h, &key);
	return key_min(&key, f->k, true) > 0;
}

enum admit_status
admit_cbf_add(struct admit_cbf *f, const void *key, size_t len)
{
	if (!f || !admit_key_ok(key, len))
		return ADMIT_EINVAL;
	cbf_add_hash(f, admit_hash(key, len, f->seed));
	return ADMIT_OK;
}

enum admit_status
admit_cbf_remove(struct admit_cbf *f, const void *key, size_t len)
{
	struct cbf_key k;
	uint64_t nib[BLOCK_WORDS];

	if (!f || !admit_key_ok(key, len))
		return ADMIT_EINVAL;
	locate(f, admit_hash(key, len, f->seed), &k);
	if (key_min(&k, f->k, true) == 0)
		return ADMIT_NOTFOUND;
	key_nibbles(&k, f->k, nib);
	for (unsigned w = 0; w < BLOCK_WORDS; w++) {
		uint64_t v;

		if (!nib[w])
			continue;
		/* relaxed: see the file comment. */
		v = atomic_load_explicit(&k.block[w], memory_order_relaxed);
		for (;;) {
			/* Counters at 0 have nothing to give; at 15 they have lost
			 * their true value. */
			uint64_t dec = nib[w] & ~nibbles_equal(v, nib[w], 0) &
			               ~nibbles_equal(v, nib[w], 15);

			/* Only counters 1 to 14 go down: no borrow. */
			debug_check(nibbles_equal(v, dec, 0) == 0 &&
			            nibbles_equal(v, dec, 15) == 0);

			if (!dec || atomic_compare_exchange_weak_explicit(
			        &k.block[w], &v, v - dec,
			        memory_order_relaxed, memory_order_relaxed))
				break;
		}
	}
	return ADMIT_OK;
}

unsigned
admit_cbf_estimate(const struct admit_cbf *f, const void *key, size_t len)
{
	if (!f || !admit_key_ok(key, len))
		return 0;
	return cbf_estimate_hash(f, admit_hash(key, len, f->seed));
}

bool
admit_cbf_contains(const struct admit_cbf *f, const void *key, size_t len)
{
	if (!f || !admit_key_ok(key, len))
		return false;
	return cbf_contains_hash(f, admit_hash(key, len, f->seed));
}

enum admit_status
admit_cbf_halve(struct admit_cbf *f)
{
	if (!f)
		return ADMIT_EINVAL;
	for (uint64_t i = 0; i < f->blocks * BLOCK_WORDS; i++) {
		/* relaxed: see the file comment. */
		uint64_t v = atomic_load_explicit(&f->words[i], memory_order_relaxed);

		while (v && !atomic_compare_exchange_weak_explicit(&f->words[i], &v,
		                (v >> 1) & NIBBLE_LOW,
		                memory_order_relaxed, memory_order_relaxed))
			;
	}
	return ADMIT_OK;
}

enum admit_status
admit_cbf_clear(struct admit_cbf *f)
{
	_Atomic uint64_t *w;
	uint64_t n;

	if (!f)
		return ADMIT_EINVAL;
	/* Read once: the compiler reloads fields after each atomic store. */
	w = f->words;
	n = f->blocks * BLOCK_WORDS;
	for (uint64_t i = 0; i < n; i++)
		/* relaxed: see the file comment. */
		atomic_store_explicit(&w[i], 0, memory_order_relaxed);
	return ADMIT_OK;
}

void
cbf_counter_indexes(const struct admit_cbf *f, const void *key, size_t len,
                    uint64_t idx[])
{
	uint64_t h = admit_hash(key, len, f->seed);
	struct cbf_positions s = positions(h);
	uint64_t base = (uint64_t)(block_of(f, h) - f->words) / BLOCK_WORDS *
	                BLOCK_COUNTERS;

	for (unsigned i = 0; i < f->k; i++)
		idx[i] = base + next_position(&s);
}

unsigned
cbf_counter_get(const struct admit_cbf *f, uint64_t idx)
{
	/* relaxed: see the file comment. */
	uint64_t w = atomic_load_explicit(&f->words[idx / 16], memory_order_relaxed);

	return (unsigned)(w >> (idx % 16 * 4)) & 15u;
}

uint64_t
admit_cbf_counters(const struct admit_cbf *f)
{
	return f ? f->blocks * BLOCK_COUNTERS : 0;
}

unsigned
admit_cbf_hashes(const struct admit_cbf *f)
{
	return f ? f->k : 0;
}

size_t
admit_cbf_memory(const struct admit_cbf *f)
{
	return f ? (size_t)(f->blocks * BLOCK_COUNTERS / 2) : 0;
}
