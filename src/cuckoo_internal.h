/*
 * cuckoo_internal.h - the cuckoo filter's fields and slot arithmetic,
 * shared by cuckoo.c and the layout files (the concurrent operations,
 * cuckoo_ops.h) and cuckoo_snapshot.c (save and load).
 *
 * A bucket is one atomic word of 4 slots: uint32_t for 8-bit fingerprints,
 * uint64_t for 16-bit ones.  Every slot access is a whole-word atomic load or
 * store, and searching a bucket is SWAR arithmetic on that word.  The
 * semi-sorted layout (cuckoo_semisort.h) packs a bucket of 13-bit
 * fingerprints in three atomic uint16_t words of its own; bucket_load()
 * unpacks it into the 16-bit lane word and bucket_store() packs it back, so
 * the shared writers see a 16-bit filter.  A slot
 * value of 0 is an empty slot; fingerprints are never 0.  In counting mode a
 * 16-bit slot is (fingerprint << 4) | counter, with counter >= 1.
 */
#ifndef ADMIT_CUCKOO_INTERNAL_H
#define ADMIT_CUCKOO_INTERNAL_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <admit/cuckoo.h>
#include <admit/cuckoo_inline.h>

#include "cuckoo_semisort.h"
#include "debug.h"
#include "hash.h"
#include "stripe.h"

#include "alloc.h" /* ADMIT_CACHELINE */
#define CUCKOO_SLOTS 4
#define CUCKOO_DEFAULT_STRIPES 4096u
#define COUNTER_BITS 4
#define COUNTER_MAX 15u
/* hash_version: what new filters use, and the one before. */
#define CUCKOO_HASH_XXH3 1u
#define CUCKOO_HASH_MUL8 2u
#define CUCKOO_ALT16_MIN_BUCKETS (1u << 19) /* a 4 MiB table */

/* Counters a writer updates under its stripe (items, kicks) or with a
 * relaxed fetch_add (the rest).  Padded so that two stripes' writers do not
 * share a line. */
struct cuckoo_stripe_stats {
	alignas(ADMIT_CACHELINE) _Atomic uint64_t items;
	_Atomic uint64_t kicks;
	_Atomic uint64_t path_retries;
	_Atomic uint64_t read_retries;
	_Atomic uint64_t full;
};

struct cuckoo_ops;

struct admit_cuckoo {
	/* What admit_cuckoo_contains_inline() reads (admit/cuckoo_inline.h):
	 * copies of fields below, set once by cuckoo_create().  First, by
	 * that header's contract. */
	struct admit_cuckoo_view view;

	/* Exactly one of t32 / t64 / t16 is the table: t32 for 8-bit slots,
	 * t64 for 16-bit ones, t16 (3 words a bucket) for the semi-sorted
	 * layout. */
	_Atomic uint32_t *t32;
	_Atomic uint64_t *t64;
	_Atomic uint16_t *t16;
	/* Semi-sorted layout: its nibble decode table (SS_DECODE_ENTRIES). */
	uint16_t *ss_dec;
	uint32_t m;               /* buckets, >= 2 */
	bool pow2;                /* m is a power of two */
	uint32_t m_mask;          /* m - 1: (x mod m) = (x & m_mask) if pow2 */
	unsigned m_shift;         /* if pow2, 32 - log2(m): fastrange32(x, m)
	                           * is x >> m_shift */
	uint32_t stripe_mask;     /* stripes - 1 */
	unsigned slot_bits;       /* 8 or 16 (16: the semi-sorted layout's
	                           * unpacked lanes) */
	unsigned fp_bits;         /* 8, 16, 12 in counting mode, 13
	                           * semi-sorted */
	unsigned fp_shift;        /* 4 in counting mode (counter below), else 0 */
	unsigned lookup_width;    /* slot_bits, 0 in counting mode: which
	                           * specialised lookup the layout runs */
	bool counting;
	/* The layout's operations (cuckoo_ops.h), chosen by cuckoo_create(),
	 * and copies of the two an 8-byte key's contains and insert call, so
	 * that those reach them by one load of f and one jump. */
	const struct cuckoo_ops *ops;
	bool (*contains_key8)(const struct admit_cuckoo *f, const void *key);
	enum admit_status (*insert_key8)(struct admit_cuckoo *f,
	                                 const void *key);
	/* The layout runs the copies of its hot paths compiled for BMI2
	 * (x86-64 CPUs that have it, unless ADMIT_NO_BMI2 is set). */
	bool bmi2;
	uint64_t capacity;
	uint64_t seed;
	/* How an 8-byte key is hashed, fixed by the snapshot format's
	 * version: 1, XXH3 like every other key (by hash8); 2, admit_mul8()
	 * by mul.  Keys of other lengths: XXH3 in both. */
	unsigned hash_version;
	uint64_t hash8;           /* admit_hash8_prepare(seed) */
	struct admit_mul8 mul;    /* admit_mul8_prepare(seed) */
	uint32_t alt_seed;        /* mixed into the alternate-bucket hash */
	/* 8-bit filters: for each fingerprint, the t of cuckoo_alt() (its
	 * mix, ranged to m), so a lookup's alternate bucket costs one load
	 * of a 1 KiB table that stays in L1 instead of two multiplies and
	 * three shifts on its critical path.  The same values as cuckoo_alt()
	 * computes (the snapshot format fixes them). */
	uint32_t alt8[256];
	/* 8-bit filters: the fingerprint of each top byte of a hash (0 made
	 * 1) in every lane, so a lookup takes its fingerprint, alternate and
	 * lane pattern from the raw byte in two loads; alt8[0] is alt8[1]
	 * for the same reason (no fingerprint is 0, so nothing else reads
	 * it). */
	uint32_t fps8[256];
	/* The same for the 65536 fingerprints of a 16-bit membership filter
	 * of CUCKOO_ALT16_MIN_BUCKETS or more (256 KiB, at most 1/16 of its
	 * table; NULL otherwise): one load, mostly from L2, in place of
	 * about a dozen instructions on a lookup's critical path.  A
	 * semi-sorted filter of that size has one for its 8192 (32 KiB). */
	uint32_t *alt16;

	/* SWAR constants for slot_bits: lane ones, lane high bits, the lanes'
	 * low bits, and the mask of the bits that identify a key. */
	uint64_t ones, high, low, match_mask;

	struct cuckoo_stripe_stats *stats;

	/* Where its memory comes from, and how many bytes it holds from there
	 * (this struct included): admit_cuckoo_footprint(). */
	struct admit_allocator alloc;
	size_t footprint;

	/* Halves in progress.  No kick runs while it is non-zero: a halve
	 * walks the buckets in order, and an entry kicked from a bucket it has
	 * done to one it has not would be halved twice (or, the other way,
	 * not at all). */
	alignas(ADMIT_CACHELINE) _Atomic unsigned halving;

	/* The stripes (stripe_mask + 1 of them; cuckoo_struct_bytes()).  In
	 * the struct's own allocation, so a lookup finds its stripe at a
	 * fixed offset from f rather than through a pointer it must load.
	 * Dense, so the stripe words a reader checks stay in L1/L2; writers
	 * of neighbouring stripes sharing a line is the lesser cost. */
	alignas(ADMIT_CACHELINE) _Atomic uint32_t seq[];
};

/* The bytes of a struct admit_cuckoo with this many stripes. */
static inline size_t
cuckoo_struct_bytes(uint32_t stripes)
{
	return sizeof(struct admit_cuckoo) + (size_t)stripes * sizeof(uint32_t);
}

/* Where a key lives: its two buckets and its fingerprint. */
struct cuckoo_pos {
	uint32_t i1, i2;
	uint32_t fp;
};

/* Allocate a filter of m buckets with the given parameters (already
 * validated) from alloc (NULL: the library's).  Used by admit_cuckoo_new()
 * and the snapshot loaders. */
enum admit_status cuckoo_create(uint64_t capacity, uint32_t m,
                                unsigned fingerprint_bits, bool counting,
                                unsigned stripes, uint64_t seed,
                                unsigned hash_version,
                                const struct admit_allocator *alloc,
                                struct admit_cuckoo **out);

/* The bucket count for a capacity at 95 % load; 0 if it does not fit. */
uint32_t cuckoo_buckets_for(uint64_t capacity);

/* A bucket's bytes for a fingerprint width (13: semi-sorted). */
static inline size_t
cuckoo_bucket_bytes_of(unsigned fp_width)
{
	return fp_width == SS_FP_BITS ? SS_BUCKET_BYTES : fp_width / 2;
}

static inline size_t
cuckoo_bucket_bytes(const struct admit_cuckoo *f)
{
	return f->t16 ? SS_BUCKET_BYTES : f->slot_bits / 2;
}

/* Where bucket i lives: for prefetching it (a semi-sorted bucket may end on
 * the next line: ss_prefetch() takes both). */
static inline const void *
cuckoo_bucket_addr(const struct admit_cuckoo *f, uint32_t i)
{
	return f->t32 ? (const void *)&f->t32[i] :
	       f->t16 ? (const void *)&f->t16[(size_t)i * 3] :
	       (const void *)&f->t64[i];
}

/* A semi-sorted bucket's packed 48 bits, by three loads.  acquire: as
 * bucket_load().  Not one instant: a writer may store between the loads,
 * so only a read validated by the bucket's stripe (stripe.h) stands. */
static inline __attribute__((always_inline)) uint64_t
ss_load_raw(const _Atomic uint16_t *t16, uint32_t i)
{
	const _Atomic uint16_t *w = &t16[(size_t)i * 3];

	return (uint64_t)atomic_load_explicit(&w[0], memory_order_acquire) |
	       (uint64_t)atomic_load_explicit(&w[1], memory_order_acquire) << 16 |
	       (uint64_t)atomic_load_explicit(&w[2], memory_order_acquire) << 32;
}

/* release: as bucket_store(), each word.  Only under the bucket's stripe:
 * the three words are this bucket's alone, so no other bucket's writer
 * (under another stripe) ever stores to them. */
static inline void
ss_store_raw(_Atomic uint16_t *t16, uint32_t i, uint64_t v)
{
	_Atomic uint16_t *w = &t16[(size_t)i * 3];

	atomic_store_explicit(&w[0], (uint16_t)v, memory_order_release);
	atomic_store_explicit(&w[1], (uint16_t)(v >> 16), memory_order_release);
	atomic_store_explicit(&w[2], (uint16_t)(v >> 32), memory_order_release);
}

/* acquire: pairs with the release in bucket_store(), so a reader that sees
 * a word sees the odd stripe before it (see stripe.h).  A semi-sorted
 * bucket comes unpacked into 16-bit lanes. */
static inline uint64_t
bucket_load(const struct admit_cuckoo *f, uint32_t i)
{
	if (f->t32)
		return atomic_load_explicit(&f->t32[i], memory_order_acquire);
	if (f->t16)
		return ss_unpack(ss_load_raw(f->t16, i), f->ss_dec);
	return atomic_load_explicit(&f->t64[i], memory_order_acquire);
}

/* release: orders the writer's odd stripe before the new word.  A
 * semi-sorted bucket is packed (sorted) first: its lanes may come back in
 * another order, the same multiset. */
static inline void
bucket_store(struct admit_cuckoo *f, uint32_t i, uint64_t v)
{
	if (f->t32)
		atomic_store_explicit(&f->t32[i], (uint32_t)v, memory_order_release);
	else if (f->t16)
		ss_store_raw(f->t16, i, ss_pack(v));
	else
		atomic_store_explicit(&f->t64[i], v, memory_order_release);
}

static inline struct cuckoo_stripe_stats *
stats_of(const struct admit_cuckoo *f, uint32_t bucket)
{
	return &f->stats[bucket & f->stripe_mask];
}

/* relaxed: event counters order nothing. */
static inline void
stat_bump(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* For counters a writer changes while it holds the bucket's stripe (or
 * before the filter is shared): no other writer can race, so a relaxed load
 * and store avoid a locked add; readers only sum them as statistics. */
static inline void
stat_add_locked(_Atomic uint64_t *c, int64_t d)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) +
	                      (uint64_t)d, memory_order_relaxed);
}

static inline uint64_t
slot_get(const struct admit_cuckoo *f, uint64_t bucket, unsigned s)
{
	unsigned w = f->slot_bits;

	return (bucket >> (s * w)) & ((1ull << w) - 1);
}

static inline uint64_t
slot_set(const struct admit_cuckoo *f, uint64_t bucket, unsigned s, uint64_t v)
{
	unsigned w = f->slot_bits;
	uint64_t mask = ((1ull << w) - 1) << (s * w);

	return (bucket & ~mask) | (v << (s * w));
}

/* One bit (the lane's high bit) per slot equal to 0: exact, no borrow can
 * cross lanes because each lane's add stays below its high bit. */
static inline uint64_t
lanes_zero(const struct admit_cuckoo *f, uint64_t x)
{
	uint64_t t = ((x & f->low) + f->low) | x;

	return ~t & f->high;
}

static inline uint64_t
lanes_matching(const struct admit_cuckoo *f, uint64_t bucket, uint32_t fp)
{
	return lanes_zero(f, (bucket & f->match_mask) ^
	                     ((uint64_t)fp << f->fp_shift) * f->ones);
}

static inline unsigned
first_lane(const struct admit_cuckoo *f, uint64_t lanes)
{
	/* A shift, not a division by a variable: tens of cycles on the
	 * insert's path. */
	return (unsigned)__builtin_ctzll(lanes) >> (f->slot_bits == 8 ? 3 : 4);
}

static inline uint32_t
slot_fp(const struct admit_cuckoo *f, uint64_t slot)
{
	return (uint32_t)(slot >> f->fp_shift);
}

/* alt(i) = (t - i) mod m with t from the fingerprint alone: an involution for
 * any m, so the bucket count need not be a power of two. */
static inline uint32_t
cuckoo_alt_t(const struct admit_cuckoo *f, uint32_t i, uint32_t t)
{
	return t >= i ? t - i : t + (f->m - i);
}

/* The t of a fingerprint (the snapshot format fixes it). */
static inline uint32_t
cuckoo_alt_of(uint32_t fp, uint32_t alt_seed, uint32_t m)
{
	return admit_fastrange32(admit_mix32(fp ^ alt_seed), m);
}

static inline uint32_t
cuckoo_alt(const struct admit_cuckoo *f, uint32_t i, uint32_t fp)
{
	return cuckoo_alt_t(f, i, cuckoo_alt_of(fp, f->alt_seed, f->m));
}

/* cuckoo_alt() for an 8-bit filter's fingerprint, by its table. */
static inline uint32_t
cuckoo_alt8(const struct admit_cuckoo *f, uint32_t i, uint32_t fp)
{
	return cuckoo_alt_t(f, i, f->alt8[fp & 0xff]);
}

/* The position of fingerprint fp (not 0) whose first bucket is i1: what
 * cuckoo_locate_hash() derives from both.  fp_bits as there. */
static inline __attribute__((always_inline)) void
cuckoo_pos_at(const struct admit_cuckoo *f, uint32_t i1, uint32_t fp,
              unsigned fp_bits, struct cuckoo_pos *p)
{
	p->fp = fp;
	p->i1 = i1;
	p->i2 = fp_bits == 8 ? cuckoo_alt8(f, i1, fp) :
	        f->alt16 ? cuckoo_alt_t(f, i1, f->alt16[fp]) :
	        cuckoo_alt(f, i1, fp);
}

/* Where the key with hash h lives.  fp_bits is f->fp_bits, passed so that a
 * caller specialised for a width can make it a constant. */
static inline __attribute__((always_inline)) void
cuckoo_locate_hash(const struct admit_cuckoo *f, uint64_t h, unsigned fp_bits,
                   struct cuckoo_pos *p)
{
	uint32_t fp = (uint32_t)(h >> (64 - fp_bits));

	cuckoo_pos_at(f, admit_fastrange32((uint32_t)h, f->m), fp ? fp : 1,
	              fp_bits, p);
}


/* The hash of a key of this filter (hash_version says how). */
static inline __attribute__((always_inline)) uint64_t
cuckoo_hash(const struct admit_cuckoo *f, const void *key, size_t len)
{
	if (len != 8)
		return admit_hash(key, len, f->seed);
	return f->hash_version == CUCKOO_HASH_MUL8 ?
	       admit_mul8(key, f->mul.k, f->mul.s) :
	       admit_hash8(key, f->hash8, f->seed);
}

static inline __attribute__((always_inline)) void
cuckoo_locate_bits(const struct admit_cuckoo *f, const void *key, size_t len,
                   unsigned fp_bits, struct cuckoo_pos *p)
{
	cuckoo_locate_hash(f, cuckoo_hash(f, key, len), fp_bits, p);
}

static inline __attribute__((always_inline)) void
cuckoo_locate(const struct admit_cuckoo *f, const void *key, size_t len,
              struct cuckoo_pos *p)
{
	cuckoo_locate_bits(f, key, len, f->fp_bits, p);
}

static inline const _Atomic uint32_t *
cuckoo_stripe(const struct admit_cuckoo *f, uint32_t bucket)
{
	return &f->seq[bucket & f->stripe_mask];
}

/*
 * The snapshot format (cuckoo_snapshot.c) in memory, for containers that
 * keep filters in their own files (the chain, the Redis module).
 * cuckoo_snapshot_len() is the encoded length; cuckoo_snapshot_encode()
 * writes exactly that many bytes, checksum included, holding every stripe
 * while it copies the table.  cuckoo_snapshot_decode() validates a buffer as
 * admit_cuckoo_load() validates a file (ADMIT_ECORRUPT, ADMIT_NOMEM), and
 * takes the filter from alloc (NULL: the library's allocator).
 */
size_t cuckoo_snapshot_len(const struct admit_cuckoo *f);
void cuckoo_snapshot_encode(const struct admit_cuckoo *f, unsigned char *buf);
enum admit_status cuckoo_snapshot_decode(const unsigned char *buf, size_t len,
                                         const struct admit_allocator *alloc,
                                         struct admit_cuckoo **out);

/* Take the stripes of two buckets: always the lower index first (the global
 * lock order), and a shared stripe only once.  cuckoo_lock_two() also
 * starts both buckets' misses first; cuckoo_lock_stripes() is the locking
 * alone, inline, for a caller that has just read both buckets. */
void cuckoo_lock_two(struct admit_cuckoo *f, uint32_t a, uint32_t b);
void cuckoo_unlock_two(struct admit_cuckoo *f, uint32_t a, uint32_t b);

static inline __attribute__((always_inline)) void
cuckoo_lock_stripes(struct admit_cuckoo *f, uint32_t a, uint32_t b)
{
	uint32_t sa = a & f->stripe_mask, sb = b & f->stripe_mask;

	if (sa > sb) {
		uint32_t t = sa;

		sa = sb;
		sb = t;
	}
	stripe_lock(&f->seq[sa]);
	if (sb != sa)
		stripe_lock(&f->seq[sb]);
}

static inline __attribute__((always_inline)) void
cuckoo_unlock_stripes(struct admit_cuckoo *f, uint32_t a, uint32_t b)
{
	uint32_t sa = a & f->stripe_mask, sb = b & f->stripe_mask;

	/* relaxed: our own odd values; we must hold both. */
	debug_check(atomic_load_explicit(&f->seq[sa],
	                                 memory_order_relaxed) & 1);
	debug_check(atomic_load_explicit(&f->seq[sb],
	                                 memory_order_relaxed) & 1);
	if (sb != sa)
		stripe_unlock(&f->seq[sb]);
	stripe_unlock(&f->seq[sa]);
}

/*
 * Debug walks for tests and stress harnesses (never exported: they live in
 * libadmit_core.la only).  Call them on a quiescent filter: they read the
 * table without validating against writers.
 *
 * cuckoo_debug_walk() checks every occupied slot (a counting entry has a
 * non-zero fingerprint and counter; the alternate bucket of every stored
 * fingerprint is in range and maps back, alt(alt(i)) == i) and returns the
 * number of occupied slots, or UINT64_MAX at the first bad slot.
 *
 * cuckoo_debug_copies() returns how many entries matching the key's
 * fingerprint sit in its two candidate buckets, recomputing the alternate
 * bucket from the primary one; *sum gets the counters' total in counting
 * mode (the number of entries otherwise).
 */
uint64_t cuckoo_debug_walk(const struct admit_cuckoo *f);
unsigned cuckoo_debug_copies(const struct admit_cuckoo *f, const void *key,
                             size_t len, unsigned *sum);

/* Counting mode: admit_cuckoo_increment(), except that when the key is
 * absent and no slot can be freed, the entry with the lowest counter in the
 * key's two buckets is overwritten by the key at count 1 (*replaced is then
 * true) instead of answering ADMIT_FULL.  The TinyLFU frequency store needs
 * it: there a full table must forget its coldest key, not refuse a new one.
 * With kick false no cuckoo path is searched: a key whose two buckets are
 * full replaces at once (for a caller that already knows the table is full,
 * where each failed search reads up to a thousand buckets).
 * Errors: ADMIT_EINVAL as for admit_cuckoo_increment(). */
enum admit_status cuckoo_increment_replacing(struct admit_cuckoo *f,
                                             const void *key, size_t len,
                                             bool kick, bool *replaced);
/* The same on a position cuckoo_locate() gave (f counting, p its own). */
void cuckoo_increment_replacing_pos(struct admit_cuckoo *f,
                                    const struct cuckoo_pos *p, bool kick,
                                    bool *replaced);

/*
 * A counting filter's entry for a key: the slot add_locked() would raise
 * (the first match in i1, else in i2), found by cuckoo_counter_find()
 * without the stripes.  Unvalidated, so a concurrent kick or halve may show
 * a stale word: cuckoo_counter_increment() changes nothing unless the word
 * is still there, and a caller that only reads the value (TinyLFU's "is
 * this key's count at its maximum, so that its record changes nothing")
 * may skip or make one increment as it would have been a moment earlier,
 * as concurrent records already may; alone, the answer is exact.
 */
struct cuckoo_counter {
	uint32_t bucket;
	unsigned shift;           /* the slot's lowest bit in the word */
	uint64_t word;            /* the bucket as read */
};

/* A counting filter's slots: 16 bits, the fingerprint above a 4-bit
 * counter (f->ones, f->high, f->low, f->match_mask as constants). */
#define CUCKOO_COUNTING_ONES 0x0001000100010001ull
#define CUCKOO_COUNTING_HIGH 0x8000800080008000ull
#define CUCKOO_COUNTING_MATCH 0xfff0fff0fff0fff0ull

/* Whether the key of p (a counting filter's position) has an entry; if so
 * *c says where.  Reads without the stripes (see struct cuckoo_counter). */
static inline bool
cuckoo_counter_find(const struct admit_cuckoo *f, const struct cuckoo_pos *p,
                    struct cuckoo_counter *c)
{
	const uint64_t low = CUCKOO_COUNTING_HIGH - CUCKOO_COUNTING_ONES;
	uint64_t fps = ((uint64_t)p->fp << COUNTER_BITS) * CUCKOO_COUNTING_ONES;

	for (int k = 0; k < 2; k++) {
		uint32_t i = k ? p->i2 : p->i1;
		/* acquire: as bucket_load(). */
		uint64_t b = atomic_load_explicit(&f->t64[i], memory_order_acquire);
		uint64_t x = (b & CUCKOO_COUNTING_MATCH) ^ fps;
		/* lanes_zero(): one high bit per slot whose fingerprint matches. */
		uint64_t m = ~(((x & low) + low) | x) & CUCKOO_COUNTING_HIGH;

		if (m) {
			c->bucket = i;
			c->shift = (unsigned)__builtin_ctzll(m) & ~15u;
			c->word = b;
			return true;
		}
	}
	return false;
}

static inline unsigned
cuckoo_counter_value(const struct cuckoo_counter *c)
{
	return (unsigned)(c->word >> c->shift) & COUNTER_MAX;
}

/* Raises c's counter (below COUNTER_MAX) by one, as an increment of its key
 * would, under its bucket's stripe alone, if the bucket still holds
 * c->word; false, changing nothing, if it does not. */
bool cuckoo_counter_increment(struct admit_cuckoo *f,
                              const struct cuckoo_counter *c);

/* admit_cuckoo_count(f, &h, sizeof(h)) of a counting filter f, by
 * cuckoo_counter_find() validated against both stripes (TinyLFU's
 * estimates). */
unsigned cuckoo_counter_count(const struct admit_cuckoo *f, uint64_t h);
/* The same unvalidated, for a caller that holds a lock every user of f
 * takes: no writer can run meanwhile, so the word read is the word. */
unsigned cuckoo_counter_count_locked(const struct admit_cuckoo *f, uint64_t h);

#endif /* ADMIT_CUCKOO_INTERNAL_H */
