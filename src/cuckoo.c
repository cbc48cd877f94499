/*
 * cuckoo.c - the concurrent cuckoo filter (doc/design.md §4).
 *
 * Progress and ordering, in brief:
 *  - Readers take no lock.  A lookup reads the stripe word of its second
 *    bucket, the first bucket, the second, and, if nothing matched, that
 *    stripe word again (stripe.h explains the acquire/release pairs).  A
 *    match is returned at once: the fingerprint was in the table at the
 *    instant it was read.  A miss is returned only if the stripe was even
 *    and did not move; otherwise it re-reads.  One stripe is enough: if no
 *    writer changed the second bucket between the two bucket reads, both
 *    lacked the fingerprint at the instant the first was read, and the miss
 *    is linearized there.  Whatever happened to the first bucket after its
 *    read (a fingerprint arriving, by a kick or an insert) happened after
 *    that instant.  A fingerprint in flight from the second bucket to the
 *    first is what this catches: the mover holds the second's stripe.
 *  - Writers hold the stripes of every bucket they change, taken in
 *    ascending stripe order, at most two at a time, so there is no deadlock.
 *  - A move writes the fingerprint to its new bucket before clearing the old
 *    slot, so an unvalidated reader can over-count, never miss.
 *  - Cuckoo paths are searched without locks and executed one hop at a time
 *    from the free end backwards; a hop whose source or target changed since
 *    the search aborts the path (the hops already made are harmless moves)
 *    and the search starts again.  Nothing is ever evicted: if no path
 *    exists the answer is ADMIT_FULL and no fingerprint has moved.
 */
#include "config.h"

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "alloc.h"
#include "cuckoo_internal.h"
#include "stripe.h"

/* x86-64: the hot lookups come twice, the second compiled for BMI2 and
 * chosen when a filter is made if the CPU has it and the environment
 * variable ADMIT_NO_BMI2 is not set (set_key8_calls(): the tests run both). */
#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_KEY8_BMI2 1
#define BMI2_TARGET __attribute__((target("bmi2")))
#endif

#ifndef ADMIT_DEBUG
#define ADMIT_DEBUG 0
#endif
/* Debug code is always compiled, so it cannot rot; the optimiser drops it. */
static const bool config_debug = ADMIT_DEBUG;

/* Breadth-first search bounds.  A path of 5 hops reaches 2 * 4^5 slots, far
 * more than enough for 95 % load; the queue caps the work per search. */
#define BFS_MAX_DEPTH 5
#define BFS_QUEUE 1024
/* Paths can go stale under contention; past this many in a row the filter
 * is effectively full for this caller. */
#define MAX_PATH_ATTEMPTS 64

/* ---- stripes and statistics --------------------------------------------- */

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

void
cuckoo_lock_two(struct admit_cuckoo *f, uint32_t a, uint32_t b)
{
	uint32_t sa = a & f->stripe_mask, sb = b & f->stripe_mask;

	/* Start both buckets' misses before the stripe CAS.  A locked
	 * instruction waits for every earlier load, so a bucket read under the
	 * stripes could not overlap the previous writer call's miss; a
	 * prefetch is not held back that way (bench/README.md: insert to 95 %
	 * went from 3.35 to 3.5-3.7 Mops/s on one thread). */
	__builtin_prefetch(cuckoo_bucket_addr(f, a), 1);
	__builtin_prefetch(cuckoo_bucket_addr(f, b), 1);
	if (sa > sb) {
		uint32_t t = sa;
		sa = sb;
		sb = t;
	}
	stripe_lock(&f->seq[sa]);
	if (sb != sa)
		stripe_lock(&f->seq[sb]);
}

void
cuckoo_unlock_two(struct admit_cuckoo *f, uint32_t a, uint32_t b)
{
	uint32_t sa = a & f->stripe_mask, sb = b & f->stripe_mask;

	if (config_debug) {
		/* relaxed: our own odd values; we must hold both. */
		assert(atomic_load_explicit(&f->seq[sa], memory_order_relaxed) & 1);
		assert(atomic_load_explicit(&f->seq[sb], memory_order_relaxed) & 1);
	}
	if (sb != sa)
		stripe_unlock(&f->seq[sb]);
	stripe_unlock(&f->seq[sa]);
}

/* admit/cuckoo_inline.h reads the view at the start of the filter. */
_Static_assert(offsetof(struct admit_cuckoo, view) == 0,
               "struct admit_cuckoo_view must come first");

/* ---- creation ----------------------------------------------------------- */

#define ALT16_BYTES (65536 * sizeof(uint32_t))

static void set_key8_calls(struct admit_cuckoo *f);

uint32_t
cuckoo_buckets_for(uint64_t capacity)
{
	uint64_t m;

	if (capacity == 0 || capacity > ADMIT_CUCKOO_MAX_CAPACITY)
		return 0;
	/* ceil(capacity / (4 * 0.95)) */
	m = (capacity * 5 + 18) / 19;
	return m < 2 ? 2 : (uint32_t)m;
}

static unsigned
default_stripes(uint32_t m)
{
	unsigned s = 1;

	while (s < CUCKOO_DEFAULT_STRIPES && s < m)
		s <<= 1;
	return s;
}

enum admit_status
cuckoo_create(uint64_t capacity, uint32_t m, unsigned fingerprint_bits,
              bool counting, unsigned stripes, uint64_t seed,
              unsigned hash_version, const struct admit_allocator *alloc,
              struct admit_cuckoo **out)
{
	struct admit_cuckoo *f;
	size_t table_bytes, own = 0;
	bool want_alt16;

	/* Aligned: the struct pads writer-hot fields to their own lines. */
	f = admit_mem_table(alloc, cuckoo_struct_bytes(stripes), &own);
	if (!f)
		return ADMIT_NOMEM;
	f->alloc = admit_mem_copy(alloc);
	f->footprint = own;
	f->m = m;
	f->pow2 = (m & (m - 1)) == 0;
	f->m_mask = m - 1;
	f->m_shift = 32 - (unsigned)__builtin_ctz(m);
	f->capacity = capacity;
	f->counting = counting;
	f->slot_bits = fingerprint_bits;
	f->lookup_width = counting ? 0 : fingerprint_bits;
	f->fp_bits = counting ? 16 - COUNTER_BITS : fingerprint_bits;
	f->fp_shift = counting ? COUNTER_BITS : 0;
	f->seed = seed;
	f->hash_version = hash_version;
	f->hash8 = admit_hash8_prepare(seed);
	f->mul = admit_mul8_prepare(seed);
	f->alt_seed = (uint32_t)(seed >> 32);
	for (unsigned fp = 0; fp < 256; fp++) {
		f->alt8[fp] = cuckoo_alt_of(fp ? fp : 1, f->alt_seed, m);
		f->fps8[fp] = (fp ? fp : 1) * 0x01010101u;
	}
	f->stripe_mask = stripes - 1;
	if (fingerprint_bits == 8) {
		f->ones = 0x01010101ull;
		f->high = 0x80808080ull;
		f->match_mask = 0xffffffffull;
	} else {
		f->ones = 0x0001000100010001ull;
		f->high = 0x8000800080008000ull;
		f->match_mask = counting ? 0xfff0fff0fff0fff0ull : ~0ull;
	}
	f->low = f->high - f->ones; /* 0x7f.. per lane */

	table_bytes = (size_t)m * cuckoo_bucket_bytes(f);
	f->stats = admit_mem_table(&f->alloc,
	                           (size_t)stripes * sizeof(*f->stats),
	                           &f->footprint);
	if (fingerprint_bits == 8)
		f->t32 = admit_mem_table(&f->alloc, table_bytes, &f->footprint);
	else
		f->t64 = admit_mem_table(&f->alloc, table_bytes, &f->footprint);
	want_alt16 = !counting && fingerprint_bits == 16 &&
	             m >= CUCKOO_ALT16_MIN_BUCKETS;
	if (want_alt16 && (f->alt16 = admit_mem_zalloc(&f->alloc, ALT16_BYTES,
	                                               &f->footprint)))
		for (unsigned fp = 0; fp < 65536; fp++)
			f->alt16[fp] = cuckoo_alt_of(fp, f->alt_seed, m);
	if (!f->stats || (!f->t32 && !f->t64) ||
	    (want_alt16 && !f->alt16)) {
		admit_cuckoo_free(f);
		return ADMIT_NOMEM;
	}
	set_key8_calls(f);
	f->view = (struct admit_cuckoo_view){
		.table = f->t32 ? (const void *)f->t32 : (const void *)f->t64,
		.seq = f->seq, .seed = f->seed, .m = f->m,
		.stripe_mask = f->stripe_mask, .alt_seed = f->alt_seed,
		/* The view's inline lookup hashes by XXH3 (version 1);
		 * for any other filter it calls the library. */
		.width = hash_version == CUCKOO_HASH_XXH3 ? f->lookup_width : 0,
		.alt8 = f->alt8,
	};
	*out = f;
	return ADMIT_OK;
}

enum admit_status
admit_cuckoo_new(const struct admit_cuckoo_config *cfg, struct admit_cuckoo **out)
{
	unsigned bits, stripes;
	uint32_t m;

	if (!cfg || !out)
		return ADMIT_EINVAL;
	m = cuckoo_buckets_for(cfg->capacity);
	if (m == 0)
		return ADMIT_EINVAL;
	bits = cfg->fingerprint_bits ? cfg->fingerprint_bits : 16;
	if (bits != 8 && bits != 16)
		return ADMIT_EINVAL;
	if (cfg->counting && bits != 16)
		return ADMIT_EINVAL;
	stripes = cfg->stripes ? cfg->stripes : default_stripes(m);
	if (stripes > ADMIT_CUCKOO_MAX_STRIPES || (stripes & (stripes - 1)))
		return ADMIT_EINVAL;
	return cuckoo_create(cfg->capacity, m, bits, cfg->counting, stripes,
	                     cfg->seed ? cfg->seed : admit_random_seed(),
	                     /* Counting filters (TinyLFU's frequencies,
	                      * whose keys are hashes already) keep XXH3:
	                      * their lookups are not the hot path, and every
	                      * hit ratio measured with them stays as it was. */
	                     cfg->counting ? CUCKOO_HASH_XXH3 : CUCKOO_HASH_MUL8,
	                     cfg->alloc, out);
}

void
admit_cuckoo_free(struct admit_cuckoo *f)
{
	struct admit_allocator a;

	if (!f)
		return;
	a = f->alloc;
	admit_mem_table_free(&a, f->t32 ? (void *)f->t32 : (void *)f->t64,
	                     (size_t)f->m * cuckoo_bucket_bytes(f), NULL);
	admit_mem_table_free(&a, f->stats,
	                     (size_t)(f->stripe_mask + 1) * sizeof(*f->stats),
	                     NULL);
	admit_mem_free(&a, f->alt16, ALT16_BYTES, NULL);
	admit_mem_table_free(&a, f, cuckoo_struct_bytes(f->stripe_mask + 1), NULL);
}

size_t
admit_cuckoo_footprint(const struct admit_cuckoo *f)
{
	return f ? f->footprint : 0;
}

/* ---- lookups ------------------------------------------------------------ */

/*
 * Every lookup is one stripe_read() (stripe.h) of the key's two buckets.
 * The common ones are specialised by lane width: with the width a constant
 * the SWAR masks are immediates, and every field of the filter a lookup
 * needs is read before the first acquire load (after which the compiler
 * must read them again).  Counting filters take the general path.
 */

/* One lookup's reads, handed to the stripe_read() callbacks. */
struct probe {
	const struct admit_cuckoo *f;
	const void *table;	/* f->t32 or f->t64 */
	struct cuckoo_pos p;
	uint64_t fps;		/* p.fp in every lane (membership widths) */
	uint64_t b1, b2;
};

/* Load both buckets; w (8 or 16) is a constant wherever this is inlined. */
static inline __attribute__((always_inline)) void
probe_load(struct probe *q, unsigned w)
{
	/* acquire: pairs with the release in bucket_store() (see stripe.h). */
	if (w == 8) {
		const _Atomic uint32_t *t = q->table;

		q->b1 = atomic_load_explicit(&t[q->p.i1], memory_order_acquire);
#ifdef ADMIT_BROKEN_SKIP_VALIDATION
		/* The stress suite's self-test only (stress/README.md): widen
		 * the window in which a kick can carry the fingerprint from the
		 * second bucket to the first. */
		sched_yield();
#endif
		q->b2 = atomic_load_explicit(&t[q->p.i2], memory_order_acquire);
	} else {
		const _Atomic uint64_t *t = q->table;

		q->b1 = atomic_load_explicit(&t[q->p.i1], memory_order_acquire);
#ifdef ADMIT_BROKEN_SKIP_VALIDATION
		sched_yield();
#endif
		q->b2 = atomic_load_explicit(&t[q->p.i2], memory_order_acquire);
	}
}

#ifndef __SSE2__
/* Non-zero if some lane of b holds fp (membership slots of width w): the
 * classic "has a zero lane" test on b ^ fp in every lane, exact as a yes/no
 * (which lane it flags may be wrong). */
static inline __attribute__((always_inline)) uint64_t
swar_has(uint64_t b, uint64_t fps, unsigned w)
{
	uint64_t ones = w == 8 ? 0x01010101ull : 0x0001000100010001ull;
	uint64_t x = b ^ fps;

	return (x - ones) & ~x & ones << (w - 1);
}
#endif

/* Whether bucket words b1 and b2 of an 8-bit filter hold fp (fps: fp in
 * every lane).  With SSE2, one byte compare of both words at once: fewer
 * instructions than two SWAR tests, and the words' upper 8 bytes of zeros
 * never equal fp, which is not 0. */
static inline __attribute__((always_inline)) bool
match8_pair(uint32_t b1, uint32_t b2, uint32_t fps)
{
#ifdef __SSE2__
	__m128i x = _mm_unpacklo_epi32(_mm_cvtsi32_si128((int)b1),
	                               _mm_cvtsi32_si128((int)b2));
	__m128i y = _mm_shuffle_epi32(_mm_cvtsi32_si128((int)fps), 0);

	return _mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) != 0;
#else
	return (swar_has(b1, fps, 8) | swar_has(b2, fps, 8)) != 0;
#endif
}

/* match8_pair() for 16-bit lanes: both words in one register, one compare. */
static inline __attribute__((always_inline)) bool
match16_pair(uint64_t b1, uint64_t b2, uint64_t fps)
{
#ifdef __SSE2__
	__m128i x = _mm_set_epi64x((long long)b2, (long long)b1);
	__m128i y = _mm_set1_epi64x((long long)fps);

	return _mm_movemask_epi8(_mm_cmpeq_epi16(x, y)) != 0;
#else
	return (swar_has(b1, fps, 16) | swar_has(b2, fps, 16)) != 0;
#endif
}

static inline __attribute__((always_inline)) bool
probe_match_w(struct probe *q, unsigned w)
{
	probe_load(q, w);
	if (w == 8)
		return match8_pair((uint32_t)q->b1, (uint32_t)q->b2,
		                   (uint32_t)q->fps);
	return match16_pair(q->b1, q->b2, q->fps);
}

/* stripe_read() callbacks: a match stands without validation (the
 * fingerprint was in the table when read); a miss must be validated. */
static bool
probe_match8(void *arg)
{
	return probe_match_w(arg, 8);
}

static bool
probe_match16(void *arg)
{
	return probe_match_w(arg, 16);
}

static bool
probe_match_any(void *arg)
{
	struct probe *q = arg;

	probe_load(q, q->f->slot_bits);
	return (lanes_matching(q->f, q->b1, q->p.fp) |
	        lanes_matching(q->f, q->b2, q->p.fp)) != 0;
}

/* For admit_cuckoo_count(): only the validated pair will do. */
static bool
probe_read_pair(void *arg)
{
	probe_load(arg, ((struct probe *)arg)->f->slot_bits);
	return false;
}

static inline __attribute__((always_inline)) void
probe_init(struct probe *q, const struct admit_cuckoo *f, unsigned w,
           struct stripe_reader *r)
{
	q->f = f;
	/* By f->ones, a value the compiler cannot see: one multiply, where
	 * for the constant it would spend six shifts and adds. */
	q->fps = (uint64_t)q->p.fp * f->ones;
	q->table = w == 8 ? (const void *)f->t32 :
	           w == 16 ? (const void *)f->t64 :
	           f->t32 ? (const void *)f->t32 : (const void *)f->t64;
	r->a = cuckoo_stripe(f, q->p.i1);
	r->b = cuckoo_stripe(f, q->p.i2);
}

/* cuckoo_locate_hash() for width w (8 or 16); tab: by f->alt16; pow2: m
 * is a power of two, so i1 is a shift and (t - i1) mod m a subtraction and
 * a mask.  Returns the hash's top w bits, the index of f->fps8 and
 * f->alt8 (both defined at 0). */
static inline __attribute__((always_inline)) uint32_t
locate_w(const struct admit_cuckoo *f, uint64_t h, unsigned w, bool tab,
         bool pow2, struct cuckoo_pos *p)
{
	uint32_t raw = (uint32_t)(h >> (64 - w)), t;

	if (w == 16 && !tab && !pow2) {
		cuckoo_locate_hash(f, h, w, p);
		return raw;
	}
	p->fp = raw + (raw < 1);
	p->i1 = pow2 ? (uint32_t)h >> f->m_shift
	             : admit_fastrange32((uint32_t)h, f->m);
	t = w == 8 ? f->alt8[raw] : tab ? f->alt16[p->fp] :
	    cuckoo_alt_of(p->fp, f->alt_seed, f->m);
	p->i2 = pow2 ? (t - p->i1) & f->m_mask : cuckoo_alt_t(f, p->i1, t);
	return raw;
}

/* The waiting loop, out of line: it may call sched_yield(), and the
 * registers that call needs saved would cost every lookup, not just the
 * rare one that meets a writer.  It takes the position by value so that
 * the inline try keeps its probe in registers. */
static __attribute__((noinline, cold)) bool
lookup_slow(const struct admit_cuckoo *f, struct cuckoo_pos p)
{
	struct probe q = { .p = p };
	struct stripe_reader r;
	unsigned w = f->lookup_width;

	if (w == 8) /* lookup_w()'s form of the fingerprint */
		q.p.fp &= 0xff;
	probe_init(&q, f, 0, &r);
	return stripe_read(&r, w == 8 ? probe_match8 :
	                       w == 16 ? probe_match16 : probe_match_any, &q,
	                   &stats_of(f, p.i1)->read_retries) == STRIPE_ANSWER;
}

/* The first try inline, with no call on its path: a lookup that takes few
 * instructions lets the CPU overlap the cache misses of consecutive calls.
 * w is 8 or 16 for a membership filter of that width, 0 for any filter.
 * Every field of *f it needs is read before the first acquire load.  Only
 * the second bucket's stripe is read (the file's head says why), with no
 * branch before both buckets' loads are issued. */
static inline __attribute__((always_inline)) bool
lookup_w(const struct admit_cuckoo *f, const struct cuckoo_pos *p, unsigned w)
{
	struct probe q = { .p = *p };
	struct stripe_reader r;
	uint32_t v;

	probe_init(&q, f, w, &r);
	if (w == 8)
		q.fps = p->fp;
#ifdef ADMIT_BROKEN_SKIP_VALIDATION
	/* ...and believe a miss without validating it: wrong. */
	if (w == 8)
		q.p.fp &= 0xff;
	return probe_match_any(&q);
#endif
	v = stripe_peek(r.b);
	if (w == 8 ? probe_match_w(&q, 8) : w == 16 ? probe_match_w(&q, 16)
	                                             : probe_match_any(&q))
		return true;
	if (stripe_unchanged(r.b, v))
		return false;
	stat_bump(&stats_of(f, p->i1)->read_retries);
	return lookup_slow(f, *p);
}

/* A single key's first try missed its chance (a writer held or took a
 * stripe): locate it again from its hash and wait the writer out.  Taking
 * the hash alone (not the position) leaves the inline try fewer values to
 * keep for this call, so it needs no callee-saved register. */
static __attribute__((noinline, cold)) bool
contains_slow(const struct admit_cuckoo *f, uint64_t h)
{
	struct cuckoo_pos p;

	cuckoo_locate_hash(f, h, f->fp_bits, &p);
	stat_bump(&stats_of(f, p.i1)->read_retries);
	return lookup_slow(f, p);
}

/* contains_slow() for an 8-byte key of hash version 2, from the key. */
static __attribute__((noinline, cold)) bool
contains_slow_key8(const struct admit_cuckoo *f, const void *key)
{
	return contains_slow(f, admit_mul8(key, f->mul.k, f->mul.s));
}

/*
 * One key's lookup by its hash, for a membership filter of width w (8 or
 * 16, a constant here): lookup_w()'s try, written out so that nothing but
 * f and h (or key8, when not NULL: an 8-byte key whose hash h is, which
 * is already in a register) outlives the bucket loads on the way to the
 * rare slow path.
 */
static inline __attribute__((always_inline)) bool
contains_hashed_wt(const struct admit_cuckoo *f, uint64_t h, unsigned w,
                   bool tab, bool pow2, const void *key8)
{
	struct probe q;
	struct stripe_reader r;
	uint32_t raw, v;

	raw = locate_w(f, h, w, tab, pow2, &q.p);
	probe_init(&q, f, w, &r);
	if (w == 8)
		q.fps = f->fps8[raw];
#ifdef ADMIT_BROKEN_SKIP_VALIDATION
	/* As in lookup_w(): believe a miss without validating it. */
	return probe_match_any(&q);
#endif
	v = stripe_peek(r.b);
	/* Laid out for the miss, whose validation follows: the hit's
	 * "return true" then costs the branch's target, not every miss a
	 * register move. */
	if (__builtin_expect(probe_match_w(&q, w), 0))
		return true;
	if (stripe_unchanged(r.b, v))
		return false;
	return key8 ? contains_slow_key8(f, key8) : contains_slow(f, h);
}

static inline __attribute__((always_inline)) bool
contains_hashed_w(const struct admit_cuckoo *f, uint64_t h, unsigned w)
{
	return contains_hashed_wt(f, h, w, false, false, NULL);
}

static inline __attribute__((always_inline)) bool
contains_hashed(const struct admit_cuckoo *f, uint64_t h, unsigned w)
{
	struct cuckoo_pos p;

	if (w)
		return contains_hashed_w(f, h, w);
	cuckoo_locate_hash(f, h, f->fp_bits, &p);
	return lookup_w(f, &p, 0);
}

/* Keys of any length, and counting filters: out of line, so that the
 * common call (an 8-byte key, a membership filter) makes no call but a
 * tail call, and needs no callee-saved register to be pushed. */
static __attribute__((noinline)) bool
contains_any8(const struct admit_cuckoo *f, const void *key, size_t len)
{
	return contains_hashed(f, cuckoo_hash(f, key, len), 8);
}

static __attribute__((noinline)) bool
contains_any16(const struct admit_cuckoo *f, const void *key, size_t len)
{
	return contains_hashed(f, cuckoo_hash(f, key, len), 16);
}

static __attribute__((noinline)) bool
contains_any(const struct admit_cuckoo *f, const void *key, size_t len)
{
	return contains_hashed(f, cuckoo_hash(f, key, len), 0);
}

static __attribute__((noinline)) bool
contains_other(const struct admit_cuckoo *f, const void *key, size_t len)
{
	if (!f || !admit_key_ok(key, len))
		return false;
	return f->lookup_width == 8 ? contains_any8(f, key, len) :
	       f->lookup_width == 16 ? contains_any16(f, key, len) :
	       contains_any(f, key, len);
}

/* Counting filters, and filters that hash 8-byte keys by XXH3. */
static bool
contains_key_any(const struct admit_cuckoo *f, const void *key)
{
	return contains_other(f, key, 8);
}

bool
admit_cuckoo_contains(const struct admit_cuckoo *f, const void *key, size_t len)
{
	/* The common call first, in three tests and one jump: an 8-byte key
	 * (so a non-NULL one is valid), by the filter's lookup. */
	if (__builtin_expect(len == 8, 1) && __builtin_expect(key != NULL, 1)) {
		if (__builtin_expect(f != NULL, 1))
			return f->contains_key(f, key);
		return false;
	}
	return contains_other(f, key, len);
}

unsigned
admit_cuckoo_count(const struct admit_cuckoo *f, const void *key, size_t len)
{
	struct probe q;
	struct stripe_reader r;
	uint64_t m1, m2;

	if (!f || !admit_key_ok(key, len))
		return 0;
	cuckoo_locate(f, key, len, &q.p);
	probe_init(&q, f, 0, &r);
	(void)stripe_read(&r, probe_read_pair, &q,
	                  &stats_of(f, q.p.i1)->read_retries);
	m1 = lanes_matching(f, q.b1, q.p.fp);
	m2 = q.p.i2 != q.p.i1 ? lanes_matching(f, q.b2, q.p.fp) : 0;
	if (f->counting) {
		/* One entry per key: increments go to the entry found first. */
		if (m1)
			return (unsigned)(slot_get(f, q.b1, first_lane(f, m1)) & COUNTER_MAX);
		if (m2)
			return (unsigned)(slot_get(f, q.b2, first_lane(f, m2)) & COUNTER_MAX);
		return 0;
	}
	return (unsigned)(__builtin_popcountll(m1) + __builtin_popcountll(m2));
}

/* cuckoo_bucket_addr() without its test of which table it is, where the
 * width w is a constant (0: not known). */
static inline __attribute__((always_inline)) const void *
bucket_addr_w(const struct admit_cuckoo *f, uint32_t i, unsigned w)
{
	return w == 8 ? (const void *)&f->t32[i] :
	       w == 16 ? (const void *)&f->t64[i] : cuckoo_bucket_addr(f, i);
}

/* Groups of this many keys are hashed and prefetched before being probed:
 * enough to cover a ~150 ns miss with the other keys' work. */
#define BATCH 16

/* Locates keys[0..k) into pos[] and prefetches their buckets; a key that
 * is not valid gets fp 0, which no key's fingerprint is. */
static inline __attribute__((always_inline)) void
locate_group_w(const struct admit_cuckoo *f, size_t k,
               const void *const keys[], const size_t lens[],
               struct cuckoo_pos pos[], unsigned w, bool tab, bool pow2)
{
	for (size_t j = 0; j < k; j++) {
		const void *key = keys[j];
		size_t len = lens[j];
		uint32_t raw;

		if (!admit_key_ok(key, len)) {
			pos[j].fp = 0;
			continue;
		}
		/* w != 0: the filter hashes by version 2 (the caller says),
		 * so an 8-byte key is admit_mul8's. */
		raw = locate_w(f, w && len == 8 ? admit_mul8(key, f->mul.k, f->mul.s)
		                                : cuckoo_hash(f, key, len),
		               w ? w : f->fp_bits, tab, pow2, &pos[j]);
		if (w == 8) /* lookup_w()'s form; not 0 either */
			pos[j].fp = f->fps8[raw];
		__builtin_prefetch(bucket_addr_w(f, pos[j].i1, w));
		__builtin_prefetch(bucket_addr_w(f, pos[j].i2, w));
	}
}

/* Two groups in flight: the next group is located and prefetched before
 * this one is probed, so that its misses overlap this group's probes
 * instead of starting after them.  A call of one group (n <= BATCH) is
 * located, then probed. */
static inline __attribute__((always_inline)) void
contains_many_w(const struct admit_cuckoo *f, size_t n,
                const void *const keys[], const size_t lens[], bool out[],
                unsigned w, bool tab, bool pow2)
{
	struct cuckoo_pos pos[2][BATCH];
	struct cuckoo_pos *p = pos[0], *q = pos[1], *t;
	size_t k = n < BATCH ? n : BATCH;

	locate_group_w(f, k, keys, lens, p, w, tab, pow2);
	for (size_t base = 0;; base += BATCH) {
		size_t next = base + BATCH, kn = 0;

		if (next < n) {
			kn = n - next < BATCH ? n - next : BATCH;
			locate_group_w(f, kn, keys + next, lens + next, q, w,
			               tab, pow2);
		}
		for (size_t j = 0; j < k; j++)
			out[base + j] = p[j].fp != 0 && lookup_w(f, &p[j], w);
		if (!kn)
			return;
		k = kn;
		t = p, p = q, q = t;
	}
}

/* admit_cuckoo_contains_many() past its argument checks, by the filter's
 * kind, each kind with its constants; compiled twice on x86-64, as the
 * single-key calls are. */
#define CONTAINS_MANY(name, attr)                                             \
	static attr void                                                      \
	name(const struct admit_cuckoo *f, size_t n,                          \
	     const void *const keys[], const size_t lens[], bool out[])       \
	{                                                                     \
		bool pow2 = f->pow2, tab = f->alt16 != NULL;                  \
                                                                              \
		switch (f->hash_version == CUCKOO_HASH_MUL8 ? f->lookup_width \
		                                            : 0) {            \
		case 8:                                                       \
			if (pow2)                                             \
				contains_many_w(f, n, keys, lens, out, 8,     \
				                false, true);                 \
			else                                                  \
				contains_many_w(f, n, keys, lens, out, 8,     \
				                false, false);                \
			break;                                                \
		case 16:                                                      \
			if (tab && pow2)                                      \
				contains_many_w(f, n, keys, lens, out, 16,    \
				                true, true);                  \
			else if (tab)                                         \
				contains_many_w(f, n, keys, lens, out, 16,    \
				                true, false);                 \
			else if (pow2)                                        \
				contains_many_w(f, n, keys, lens, out, 16,    \
				                false, true);                 \
			else                                                  \
				contains_many_w(f, n, keys, lens, out, 16,    \
				                false, false);                \
			break;                                                \
		default:                                                      \
			contains_many_w(f, n, keys, lens, out, 0, false,      \
			                false);                               \
		}                                                             \
	}
CONTAINS_MANY(contains_many_any, )
#ifdef HAVE_KEY8_BMI2
CONTAINS_MANY(contains_many_bmi2, BMI2_TARGET)
#endif
#undef CONTAINS_MANY

void
admit_cuckoo_contains_many(const struct admit_cuckoo *f, size_t n,
                           const void *const keys[], const size_t lens[],
                           bool out[])
{
	if (!f || !keys || !lens || !out)
		return;
#ifdef HAVE_KEY8_BMI2
	if (f->bmi2) {
		contains_many_bmi2(f, n, keys, lens, out);
		return;
	}
#endif
	contains_many_any(f, n, keys, lens, out);
}

/* ---- writers ------------------------------------------------------------ */

enum add_op {
	ADD_COPY,	/* membership insert: always a new fingerprint */
	ADD_UNIQUE,	/* only if no matching fingerprint */
	ADD_INCREMENT,	/* counting: bump the entry, or create it at 1 */
};

/*
 * One attempt with both stripes held.  Returns ADMIT_FULL only if both
 * buckets are full and the operation needs a new slot.
 */
static enum admit_status
add_locked(struct admit_cuckoo *f, const struct cuckoo_pos *p, enum add_op op)
{
	/* Under the stripes no other writer changes these words; the acquire
	 * of the stripe CAS already ordered the last writer's stores. */
	uint64_t b[2] = { bucket_load(f, p->i1), bucket_load(f, p->i2) };
	uint32_t idx[2] = { p->i1, p->i2 };
	uint64_t slot = (uint64_t)p->fp << f->fp_shift | (f->counting ? 1 : 0);

	if (op != ADD_COPY) {
		for (int k = 0; k < 2; k++) {
			uint64_t m = lanes_matching(f, b[k], p->fp);
			unsigned s;
			uint64_t v;

			if (!m)
				continue;
			if (op == ADD_UNIQUE)
				return ADMIT_EXISTS;
			s = first_lane(f, m);
			v = slot_get(f, b[k], s);
			if ((v & COUNTER_MAX) < COUNTER_MAX)
				bucket_store(f, idx[k], slot_set(f, b[k], s, v + 1));
			return ADMIT_OK;
		}
	}
	for (int k = 0; k < 2; k++) {
		uint64_t z = lanes_zero(f, b[k]);

		if (!z)
			continue;
		bucket_store(f, idx[k], slot_set(f, b[k], first_lane(f, z), slot));
		stat_add_locked(&stats_of(f, idx[k])->items, 1);
		return ADMIT_OK;
	}
	return ADMIT_FULL;
}

/* The width-w forms of bucket_load(), slot_get(), slot_fp(), cuckoo_alt()
 * and lanes_zero() for a membership filter (w 8 or 16, a constant), the
 * general ones for w = 0. */
static inline __attribute__((always_inline)) uint64_t
bucket_load_w(const struct admit_cuckoo *f, uint32_t i, unsigned w)
{
	/* acquire: as bucket_load(). */
	return w == 8 ? atomic_load_explicit(&f->t32[i], memory_order_acquire) :
	       w == 16 ? atomic_load_explicit(&f->t64[i], memory_order_acquire) :
	       bucket_load(f, i);
}

static inline __attribute__((always_inline)) uint32_t
slot_fp_w(const struct admit_cuckoo *f, uint64_t b, unsigned s, unsigned w)
{
	return w ? (uint32_t)(b >> (s * w)) & ((1u << w) - 1)
	         : slot_fp(f, slot_get(f, b, s));
}

static inline __attribute__((always_inline)) uint32_t
alt_w(const struct admit_cuckoo *f, uint32_t i, uint32_t fp, unsigned w)
{
	return w == 8 ? cuckoo_alt8(f, i, fp) :
	       w == 16 && f->alt16 ? cuckoo_alt_t(f, i, f->alt16[fp]) :
	       cuckoo_alt(f, i, fp);
}

static inline __attribute__((always_inline)) uint64_t
lanes_zero_w(const struct admit_cuckoo *f, uint64_t x, unsigned w)
{
	const uint64_t high = w == 8 ? 0x80808080ull : 0x8000800080008000ull;
	const uint64_t low = w == 8 ? 0x7f7f7f7full : 0x7fff7fff7fff7fffull;

	return w ? ~(((x & low) + low) | x) & high : lanes_zero(f, x);
}

/* Under bucket i's stripe: fp into its first free lane (width w, a
 * constant), counted in the stripe's items.  False if it has none. */
static inline __attribute__((always_inline)) bool
take_lane_w(struct admit_cuckoo *f, uint32_t i, uint32_t fp, unsigned w)
{
	/* Under the stripe no other writer changes this word. */
	uint64_t b = bucket_load_w(f, i, w), z = lanes_zero_w(f, b, w);

	if (!z)
		return false;
	b |= (uint64_t)fp << (__builtin_ctzll(z) / w * w);
	/* release: as bucket_store(). */
	if (w == 8)
		atomic_store_explicit(&f->t32[i], (uint32_t)b, memory_order_release);
	else
		atomic_store_explicit(&f->t64[i], b, memory_order_release);
	stat_add_locked(&stats_of(f, i)->items, 1);
	return true;
}

/*
 * add_locked() for ADD_COPY into a membership filter of width w (8 or 16,
 * a constant here): the same result, with the lane masks immediates, the
 * table's type known and the empty slot set by an or.
 */
static inline __attribute__((always_inline)) enum admit_status
copy_locked_w(struct admit_cuckoo *f, const struct cuckoo_pos *p, unsigned w)
{
	return take_lane_w(f, p->i1, p->fp, w) || take_lane_w(f, p->i2, p->fp, w)
	       ? ADMIT_OK : ADMIT_FULL;
}

/*
 * A membership copy with one stripe: the first of the key's buckets seen
 * with a free lane, locked alone, gets the fingerprint if the lane is
 * still free under its stripe.  One stripe is enough: a copy changes one
 * bucket, and holding that bucket's stripe is what every other writer and
 * every validating reader of it waits on (the file's head).  The same
 * lane as copy_locked_w() picks when nothing changes meanwhile.  ADMIT_FULL
 * if neither bucket had a free lane: add() then takes both stripes.
 */
static inline __attribute__((always_inline)) enum admit_status
copy_one_stripe_w(struct admit_cuckoo *f, const struct cuckoo_pos *p,
                  unsigned w)
{
	__builtin_prefetch(bucket_addr_w(f, p->i2, w), 1);
	for (int k = 0; k < 2; k++) {
		uint32_t i = k ? p->i2 : p->i1;
		_Atomic uint32_t *s = &f->seq[i & f->stripe_mask];
		/* relaxed: a hint; the lane is taken only after the stripe's
		 * acquire, from the word read again under it. */
		uint64_t b = w == 8 ?
		    atomic_load_explicit(&f->t32[i], memory_order_relaxed) :
		    atomic_load_explicit(&f->t64[i], memory_order_relaxed);
		bool taken;

		if (!lanes_zero_w(f, b, w))
			continue;
		stripe_lock(s);
		taken = take_lane_w(f, i, p->fp, w);
		stripe_unlock(s);
		if (taken)
			return ADMIT_OK;
	}
	return ADMIT_FULL;
}

static enum admit_status
copy_or_add_locked(struct admit_cuckoo *f, const struct cuckoo_pos *p,
                   enum add_op op)
{
	if (op != ADD_COPY || f->counting)
		return add_locked(f, p, op);
	return f->slot_bits == 8 ? copy_locked_w(f, p, 8) : copy_locked_w(f, p, 16);
}

struct bfs_node {
	uint32_t bucket;
	int16_t parent;   /* index in the queue, -1 for a root */
	uint8_t slot;     /* slot of the parent whose fingerprint leads here */
	uint8_t depth;
	uint32_t fp;      /* that fingerprint, to detect a stale hop */
};

/* A cuckoo path: hop[j] moves the fingerprint in slot[j] of bucket[j] to
 * bucket[j + 1]; bucket[len] has a free slot. */
struct cuckoo_path {
	int len;
	uint32_t bucket[BFS_MAX_DEPTH + 2];
	uint8_t slot[BFS_MAX_DEPTH + 1];
	uint32_t fp[BFS_MAX_DEPTH + 1];
};

/*
 * Breadth-first search, without locks, for the shortest chain of moves that
 * frees a slot in one of the key's buckets.  Reads may be stale; the
 * execution re-checks every hop under its stripes.  w as bucket_load_w().
 */
static inline __attribute__((always_inline)) bool
find_path_w(const struct admit_cuckoo *f, const struct cuckoo_pos *p,
            struct cuckoo_path *path, unsigned w)
{
	struct bfs_node q[BFS_QUEUE];
	int head = 0, tail = 0;

	q[tail++] = (struct bfs_node){ p->i1, -1, 0, 0, 0 };
	if (p->i2 != p->i1)
		q[tail++] = (struct bfs_node){ p->i2, -1, 0, 0, 0 };

	while (head < tail) {
		int cur = head++;
		uint64_t b = bucket_load_w(f, q[cur].bucket, w);
		uint32_t child[CUCKOO_SLOTS];

		/* Start the four children's misses together: the tests below
		 * branch on each one's data. */
		for (unsigned s = 0; s < CUCKOO_SLOTS; s++) {
			uint32_t fp = slot_fp_w(f, b, s, w);

			child[s] = fp ? alt_w(f, q[cur].bucket, fp, w)
			              : q[cur].bucket;
			__builtin_prefetch(bucket_addr_w(f, child[s], w));
		}
		for (unsigned s = 0; s < CUCKOO_SLOTS; s++) {
			uint32_t fp = slot_fp_w(f, b, s, w), next = child[s];
			int n;

			/* An empty slot (freed since: the caller's retry sees it)
			 * or a fingerprint whose two buckets coincide: no hop. */
			if (next == q[cur].bucket)
				continue;
			if (lanes_zero_w(f, bucket_load_w(f, next, w), w)) {
				/* Unwind: the hops from a root to cur, then cur -> next. */
				int depth = q[cur].depth;

				path->len = depth + 1;
				path->bucket[depth + 1] = next;
				path->bucket[depth] = q[cur].bucket;
				path->slot[depth] = (uint8_t)s;
				path->fp[depth] = fp;
				for (int j = cur; q[j].parent >= 0; j = q[j].parent) {
					int d = q[j].depth - 1;

					path->bucket[d] = q[q[j].parent].bucket;
					path->slot[d] = q[j].slot;
					path->fp[d] = q[j].fp;
				}
				return true;
			}
			if (q[cur].depth + 1 >= BFS_MAX_DEPTH || tail == BFS_QUEUE)
				continue;
			n = tail++;
			q[n] = (struct bfs_node){ next, (int16_t)cur, (uint8_t)s,
			                          (uint8_t)(q[cur].depth + 1), fp };
		}
	}
	return false;
}

static bool
find_path(const struct admit_cuckoo *f, const struct cuckoo_pos *p,
          struct cuckoo_path *path)
{
	if (f->counting)
		return find_path_w(f, p, path, 0);
	return f->slot_bits == 8 ? find_path_w(f, p, path, 8)
	                         : find_path_w(f, p, path, 16);
}

/* Make one hop under its two stripes.  False if the search's view of it is
 * stale: the source slot no longer holds that fingerprint, or the target has
 * no free slot. */
static bool
move_one(struct admit_cuckoo *f, uint32_t from, unsigned s, uint32_t fp,
         uint32_t to)
{
	uint64_t bf, bt, v, z;
	bool ok = false;

	cuckoo_lock_two(f, from, to);
	/* relaxed: a halve raises this before it takes its first stripe, and
	 * our stripe acquire pairs with its stripe release: if it has halved
	 * either bucket we see the raise.  If we see 0, it cannot reach them
	 * until we let go.  (An empty bucket it skipped without a lock may
	 * receive the entry: that entry misses this round, as any entry
	 * landing in a skipped bucket does.) */
	if (atomic_load_explicit(&f->halving, memory_order_relaxed)) {
		cuckoo_unlock_two(f, from, to);
		return false;
	}
	bf = bucket_load(f, from);
	bt = bucket_load(f, to);
	v = slot_get(f, bf, s);
	z = lanes_zero(f, bt);
	if (v != 0 && slot_fp(f, v) == fp && z) {
		/* New home first: a reader must find it in one of the two. */
		bucket_store(f, to, slot_set(f, bt, first_lane(f, z), v));
		bucket_store(f, from, slot_set(f, bf, s, 0));
		stat_add_locked(&stats_of(f, to)->items, 1);
		stat_add_locked(&stats_of(f, from)->items, -1);
		stat_add_locked(&stats_of(f, from)->kicks, 1);
		ok = true;
	}
	cuckoo_unlock_two(f, from, to);
	return ok;
}

static bool
run_path(struct admit_cuckoo *f, const struct cuckoo_path *path)
{
	for (int j = path->len - 1; j >= 0; j--)
		if (!move_one(f, path->bucket[j], path->slot[j], path->fp[j],
		              path->bucket[j + 1]))
			return false;
	return true;
}

/* Out of line: copy_w()'s callers keep its registers (and the path's
 * stack) off their common path. */
static __attribute__((noinline)) enum admit_status
add(struct admit_cuckoo *f, const struct cuckoo_pos *p, enum add_op op)
{
	for (unsigned attempt = 0; attempt < MAX_PATH_ATTEMPTS; attempt++) {
		struct cuckoo_path path;
		enum admit_status st;

		cuckoo_lock_two(f, p->i1, p->i2);
		st = copy_or_add_locked(f, p, op);
		cuckoo_unlock_two(f, p->i1, p->i2);
		if (st != ADMIT_FULL)
			return st;
		/* relaxed: only a wait hint; move_one() re-checks under its
		 * stripes.  Kicks wait out a halve (see struct admit_cuckoo). */
		for (unsigned spins = 0;
		     atomic_load_explicit(&f->halving, memory_order_relaxed); spins++)
			admit_backoff(spins);
		if (!find_path(f, p, &path))
			break;
		if (!run_path(f, &path))
			stat_bump(&stats_of(f, p->i1)->path_retries);
	}
	stat_bump(&stats_of(f, p->i1)->full);
	return ADMIT_FULL;
}

/* A membership copy: under one stripe when a bucket has a free lane,
 * else by add(). */
static inline __attribute__((always_inline)) enum admit_status
copy_w(struct admit_cuckoo *f, const struct cuckoo_pos *p, unsigned w)
{
	if (copy_one_stripe_w(f, p, w) == ADMIT_OK)
		return ADMIT_OK;
	return add(f, p, ADD_COPY);
}

/* add() for any operation, copies by copy_w(). */
static enum admit_status
add_any(struct admit_cuckoo *f, const struct cuckoo_pos *p, enum add_op op)
{
	if (op != ADD_COPY || f->counting)
		return add(f, p, op);
	return f->slot_bits == 8 ? copy_w(f, p, 8) : copy_w(f, p, 16);
}

static enum admit_status
add_key(struct admit_cuckoo *f, const void *key, size_t len, enum add_op op)
{
	struct cuckoo_pos p;

	if (!f || !admit_key_ok(key, len))
		return ADMIT_EINVAL;
	if (op == ADD_COPY && f->counting)
		op = ADD_INCREMENT;
	if (op == ADD_INCREMENT && !f->counting)
		return ADMIT_EINVAL;
	cuckoo_locate(f, key, len, &p);
	return add_any(f, &p, op);
}

/*
 * An 8-byte key of a membership filter of hash version 2: a lookup and an
 * insert for each width, with or without f->alt16, m a power of two or
 * not, each its own function so that each gets its own register
 * allocation and admit_cuckoo_contains() and admit_cuckoo_insert() reach
 * it in one jump.  On x86-64 each comes twice, the second compiled for
 * BMI2 (mulx, rorx, shrx: a lookup one or two instructions shorter), chosen
 * when the filter is made if the CPU has it.
 */
#define KEY8_CALLS(sfx, w, tab, pow2, attr)                                   \
	static __attribute__((noinline)) attr bool                            \
	contains_key##sfx(const struct admit_cuckoo *f, const void *key)      \
	{                                                                     \
		return contains_hashed_wt(f, admit_mul8(key, f->mul.k,        \
		                                        f->mul.s),            \
		                          w, tab, pow2, key);                 \
	}                                                                     \
	static __attribute__((noinline)) attr enum admit_status               \
	insert_key##sfx(struct admit_cuckoo *f, const void *key)              \
	{                                                                     \
		struct cuckoo_pos p;                                          \
                                                                              \
		locate_w(f, admit_mul8(key, f->mul.k, f->mul.s), w, tab,      \
		         pow2, &p);                                           \
		return copy_w(f, &p, w);                                      \
	}

struct key8_calls {
	bool (*contains)(const struct admit_cuckoo *f, const void *key);
	enum admit_status (*insert)(struct admit_cuckoo *f, const void *key);
};

/* key8_calls##sfx[] in key8_index()'s order. */
#define KEY8_FAMILY(sfx, attr)                                                \
	KEY8_CALLS(8##sfx, 8, false, false, attr)                             \
	KEY8_CALLS(8p##sfx, 8, false, true, attr)                             \
	KEY8_CALLS(16##sfx, 16, false, false, attr)                           \
	KEY8_CALLS(16p##sfx, 16, false, true, attr)                           \
	KEY8_CALLS(16t##sfx, 16, true, false, attr)                           \
	KEY8_CALLS(16tp##sfx, 16, true, true, attr)                           \
	static const struct key8_calls key8_calls##sfx[] = {                  \
		{ contains_key8##sfx, insert_key8##sfx },                     \
		{ contains_key8p##sfx, insert_key8p##sfx },                   \
		{ contains_key16##sfx, insert_key16##sfx },                   \
		{ contains_key16p##sfx, insert_key16p##sfx },                 \
		{ contains_key16t##sfx, insert_key16t##sfx },                 \
		{ contains_key16tp##sfx, insert_key16tp##sfx },               \
	};

KEY8_FAMILY(, )
#ifdef HAVE_KEY8_BMI2
KEY8_FAMILY(_bmi2, BMI2_TARGET)
#endif
#undef KEY8_FAMILY
#undef KEY8_CALLS

static size_t
key8_index(const struct admit_cuckoo *f)
{
	if (f->lookup_width == 8)
		return f->pow2 ? 1 : 0;
	return 2 + (f->alt16 ? 2 : 0) + (f->pow2 ? 1 : 0);
}

/* Counting filters, and filters that hash 8-byte keys by XXH3. */
static enum admit_status
insert_key_any(struct admit_cuckoo *f, const void *key)
{
	return add_key(f, key, 8, ADD_COPY);
}

static void
set_key8_calls(struct admit_cuckoo *f)
{
	const struct key8_calls *c;

#ifdef HAVE_KEY8_BMI2
	__builtin_cpu_init();
	f->bmi2 = __builtin_cpu_supports("bmi2") && !getenv("ADMIT_NO_BMI2");
#endif

	if (f->hash_version != CUCKOO_HASH_MUL8 ||
	    (f->lookup_width != 8 && f->lookup_width != 16)) {
		f->contains_key = contains_key_any;
		f->insert_key = insert_key_any;
		return;
	}
	c = &key8_calls[key8_index(f)];
#ifdef HAVE_KEY8_BMI2
	if (f->bmi2)
		c = &key8_calls_bmi2[key8_index(f)];
#endif
	f->contains_key = c->contains;
	f->insert_key = c->insert;
}

enum admit_status
admit_cuckoo_insert(struct admit_cuckoo *f, const void *key, size_t len)
{
	/* As admit_cuckoo_contains(): an 8-byte key by the filter's call. */
	if (__builtin_expect(len == 8, 1) && __builtin_expect(key != NULL, 1)) {
		if (__builtin_expect(f != NULL, 1))
			return f->insert_key(f, key);
		return ADMIT_EINVAL;
	}
	return add_key(f, key, len, ADD_COPY);
}

enum admit_status
admit_cuckoo_insert_many(struct admit_cuckoo *f, size_t n,
                         const void *const keys[], const size_t lens[],
                         enum admit_status out[])
{
	struct cuckoo_pos pos[BATCH];
	enum add_op op;
	enum admit_status st = ADMIT_OK;

	if (!f || !keys || !lens || !out)
		return ADMIT_EINVAL;
	/* All or nothing for bad input: no key goes in if one is invalid. */
	for (size_t i = 0; i < n; i++)
		if (!admit_key_ok(keys[i], lens[i]))
			return ADMIT_EINVAL;
	op = f->counting ? ADD_INCREMENT : ADD_COPY;
	for (size_t base = 0; base < n; base += BATCH) {
		size_t k = n - base < BATCH ? n - base : BATCH;

		for (size_t j = 0; j < k; j++) {
			cuckoo_locate(f, keys[base + j], lens[base + j], &pos[j]);
			__builtin_prefetch(cuckoo_bucket_addr(f, pos[j].i1), 1);
			__builtin_prefetch(cuckoo_bucket_addr(f, pos[j].i2), 1);
		}
		for (size_t j = 0; j < k; j++) {
			out[base + j] = add_any(f, &pos[j], op);
			if (out[base + j] != ADMIT_OK)
				st = out[base + j];
		}
	}
	return st;
}

enum admit_status
admit_cuckoo_insert_unique(struct admit_cuckoo *f, const void *key, size_t len)
{
	return add_key(f, key, len, ADD_UNIQUE);
}

enum admit_status
admit_cuckoo_increment(struct admit_cuckoo *f, const void *key, size_t len)
{
	return add_key(f, key, len, ADD_INCREMENT);
}

/* The counting slot with the lowest counter in the key's two buckets
 * (both full, both stripes held) gives way to the key at count 1. */
static void
replace_lowest_locked(struct admit_cuckoo *f, const struct cuckoo_pos *p)
{
	uint32_t best_i = p->i1;
	unsigned best_s = 0;
	uint64_t best = COUNTER_MAX + 1;

	for (int k = 0; k < 2; k++) {
		uint32_t i = k ? p->i2 : p->i1;
		uint64_t b = bucket_load(f, i);

		for (unsigned s = 0; s < CUCKOO_SLOTS; s++) {
			uint64_t c = slot_get(f, b, s) & COUNTER_MAX;

			if (c < best) {
				best = c;
				best_i = i;
				best_s = s;
			}
		}
	}
	bucket_store(f, best_i, slot_set(f, bucket_load(f, best_i), best_s,
	                                  (uint64_t)p->fp << f->fp_shift | 1));
}

enum admit_status
cuckoo_increment_replacing(struct admit_cuckoo *f, const void *key, size_t len,
                           bool kick, bool *replaced)
{
	struct cuckoo_pos p;

	*replaced = false;
	if (!f || !f->counting || !admit_key_ok(key, len))
		return ADMIT_EINVAL;
	cuckoo_locate(f, key, len, &p);
	cuckoo_increment_replacing_pos(f, &p, kick, replaced);
	return ADMIT_OK;
}

void
cuckoo_increment_replacing_pos(struct admit_cuckoo *f,
                               const struct cuckoo_pos *p, bool kick,
                               bool *replaced)
{
	struct cuckoo_counter c;

	*replaced = false;
	/* A saturated counter takes no stripe: its line stays unwritten. */
	if (cuckoo_counter_find(f, p, &c) &&
	    cuckoo_counter_value(&c) == COUNTER_MAX)
		return;
	if (kick && add(f, p, ADD_INCREMENT) != ADMIT_FULL)
		return;
	cuckoo_lock_two(f, p->i1, p->i2);
	/* Without a search, or since add() gave up: the key may be present or a
	 * slot free in its buckets. */
	if (add_locked(f, p, ADD_INCREMENT) == ADMIT_FULL) {
		replace_lowest_locked(f, p);
		*replaced = true;
	}
	cuckoo_unlock_two(f, p->i1, p->i2);
}

struct counter_read {
	const struct admit_cuckoo *f;
	struct cuckoo_pos p;
	struct cuckoo_counter c;
	bool found;
};

static bool
counter_read(void *arg)
{
	struct counter_read *q = arg;

	q->found = cuckoo_counter_find(q->f, &q->p, &q->c);
	return false;  /* both buckets as one pair: validate */
}

unsigned
cuckoo_counter_count(const struct admit_cuckoo *f, uint64_t h)
{
	struct counter_read q = { .f = f };
	struct stripe_reader r;

	cuckoo_locate(f, &h, sizeof(h), &q.p);
	r.a = cuckoo_stripe(f, q.p.i1);
	r.b = cuckoo_stripe(f, q.p.i2);
	(void)stripe_read(&r, counter_read, &q,
	                  &stats_of(f, q.p.i1)->read_retries);
	return q.found ? cuckoo_counter_value(&q.c) : 0;
}

unsigned
cuckoo_counter_count_locked(const struct admit_cuckoo *f, uint64_t h)
{
	struct cuckoo_pos p;
	struct cuckoo_counter c;

	cuckoo_locate(f, &h, sizeof(h), &p);
	return cuckoo_counter_find(f, &p, &c) ? cuckoo_counter_value(&c) : 0;
}

bool
cuckoo_counter_increment(struct admit_cuckoo *f, const struct cuckoo_counter *c)
{
	_Atomic uint32_t *s = &f->seq[c->bucket & f->stripe_mask];
	bool same;

	if (config_debug)
		assert(f->counting && cuckoo_counter_value(c) < COUNTER_MAX);
	/* One stripe: every writer of a bucket holds its stripe, and the
	 * change is within one word, so readers see it whole. */
	stripe_lock(s);
	same = bucket_load(f, c->bucket) == c->word;
	if (same)
		/* Below COUNTER_MAX: no carry into the fingerprint. */
		bucket_store(f, c->bucket, c->word + ((uint64_t)1 << c->shift));
	stripe_unlock(s);
	return same;
}

enum admit_status
admit_cuckoo_delete(struct admit_cuckoo *f, const void *key, size_t len)
{
	struct cuckoo_pos p;
	enum admit_status st = ADMIT_NOTFOUND;

	if (!f || !admit_key_ok(key, len))
		return ADMIT_EINVAL;
	cuckoo_locate(f, key, len, &p);
	cuckoo_lock_two(f, p.i1, p.i2);
	for (int k = 0; k < 2; k++) {
		uint32_t i = k ? p.i2 : p.i1;
		uint64_t b = bucket_load(f, i);
		uint64_t m = lanes_matching(f, b, p.fp);
		unsigned s;
		uint64_t v;

		if (!m)
			continue;
		s = first_lane(f, m);
		v = slot_get(f, b, s);
		v = f->counting && (v & COUNTER_MAX) > 1 ? v - 1 : 0;
		bucket_store(f, i, slot_set(f, b, s, v));
		if (v == 0)
			stat_add_locked(&stats_of(f, i)->items, -1);
		st = ADMIT_OK;
		break;
	}
	cuckoo_unlock_two(f, p.i1, p.i2);
	return st;
}

/* A counting bucket with every counter halved and the slots whose counter
 * falls to 0 emptied, the four lanes at once; *emptied: how many of its
 * slots that emptied. */
static uint64_t
halve_bucket(uint64_t b, unsigned *emptied)
{
	const uint64_t counters = CUCKOO_COUNTING_ONES * COUNTER_MAX;
	const uint64_t low = CUCKOO_COUNTING_HIGH - CUCKOO_COUNTING_ONES;
	uint64_t half = (b & counters) >> 1 & counters;
	/* One high bit per lane: the slot is used; its halved counter is 0. */
	uint64_t used = (((b & low) + low) | b) & CUCKOO_COUNTING_HIGH;
	uint64_t gone = ~(half + low) & CUCKOO_COUNTING_HIGH;

	/* The lanes' flags summed into the top lane by one multiply. */
	*emptied = (unsigned)(((used & gone) >> 15) * CUCKOO_COUNTING_ONES >> 48);
	return ((b & ~counters) | half) & ~((gone >> 15) * 0xffffu);
}

enum admit_status
admit_cuckoo_halve(struct admit_cuckoo *f)
{
	if (!f || !f->counting)
		return ADMIT_EINVAL;
	/* relaxed: published to kicks by the stripe releases below (see
	 * move_one()). */
	atomic_fetch_add_explicit(&f->halving, 1, memory_order_relaxed);
	for (uint32_t i = 0; i < f->m; i++) {
		_Atomic uint32_t *s = &f->seq[i & f->stripe_mask];
		unsigned emptied;
		uint64_t b;

		/* An empty bucket needs no lock; an entry that lands in it after
		 * this read simply misses this round of aging. */
		if (bucket_load(f, i) == 0)
			continue;
		stripe_lock(s);
		b = bucket_load(f, i);
		bucket_store(f, i, halve_bucket(b, &emptied));
		stat_add_locked(&stats_of(f, i)->items, -(int64_t)emptied);
		stripe_unlock(s);
	}
	/* relaxed: kicks synchronise with the halved buckets through their
	 * stripes, not through this count. */
	atomic_fetch_sub_explicit(&f->halving, 1, memory_order_relaxed);
	return ADMIT_OK;
}

/* ---- accounting --------------------------------------------------------- */

uint64_t
admit_cuckoo_size(const struct admit_cuckoo *f)
{
	uint64_t n = 0;

	if (!f)
		return 0;
	/* relaxed: a statistic; exact when no writer runs (then the stripe
	 * releases already ordered every change before this call). */
	for (uint32_t s = 0; s <= f->stripe_mask; s++)
		n += atomic_load_explicit(&f->stats[s].items, memory_order_relaxed);
	return n;
}

uint64_t
admit_cuckoo_slots(const struct admit_cuckoo *f)
{
	return f ? (uint64_t)f->m * CUCKOO_SLOTS : 0;
}

size_t
admit_cuckoo_memory(const struct admit_cuckoo *f)
{
	return f ? (size_t)f->m * cuckoo_bucket_bytes(f) : 0;
}

/* ---- debug walks (cuckoo_internal.h) ----------------------------------- */

uint64_t
cuckoo_debug_walk(const struct admit_cuckoo *f)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < f->m; i++) {
		uint64_t b = bucket_load(f, i);

		for (unsigned s = 0; s < CUCKOO_SLOTS; s++) {
			uint64_t v = slot_get(f, b, s);
			uint32_t a;

			if (v == 0)
				continue;
			if (slot_fp(f, v) == 0 || (f->counting && !(v & COUNTER_MAX)))
				return UINT64_MAX;
			a = cuckoo_alt(f, i, slot_fp(f, v));
			if (a >= f->m || cuckoo_alt(f, a, slot_fp(f, v)) != i)
				return UINT64_MAX;
			n++;
		}
	}
	return n;
}

unsigned
cuckoo_debug_copies(const struct admit_cuckoo *f, const void *key, size_t len,
                    unsigned *sum)
{
	struct cuckoo_pos p;
	unsigned n = 0;

	cuckoo_locate(f, key, len, &p);
	*sum = 0;
	for (int k = 0; k < 2; k++) {
		uint32_t i = k ? cuckoo_alt(f, p.i1, p.fp) : p.i1;
		uint64_t b = bucket_load(f, i);

		if (k && i == p.i1)
			break; /* one bucket for both: counted once */
		for (unsigned s = 0; s < CUCKOO_SLOTS; s++) {
			uint64_t v = slot_get(f, b, s);

			if (v == 0 || slot_fp(f, v) != p.fp)
				continue;
			n++;
			*sum += f->counting ? (unsigned)(v & COUNTER_MAX) : 1;
		}
	}
	return n;
}

enum admit_status
admit_cuckoo_stats(const struct admit_cuckoo *f, struct admit_cuckoo_stats *out)
{
	if (!f || !out)
		return ADMIT_EINVAL;
	memset(out, 0, sizeof(*out));
	/* relaxed: statistics, read one counter at a time. */
	for (uint32_t s = 0; s <= f->stripe_mask; s++) {
		const struct cuckoo_stripe_stats *st = &f->stats[s];

		out->items += atomic_load_explicit(&st->items, memory_order_relaxed);
		out->kicks += atomic_load_explicit(&st->kicks, memory_order_relaxed);
		out->path_retries += atomic_load_explicit(&st->path_retries,
		                                          memory_order_relaxed);
		out->read_retries += atomic_load_explicit(&st->read_retries,
		                                          memory_order_relaxed);
		out->full += atomic_load_explicit(&st->full, memory_order_relaxed);
	}
	return ADMIT_OK;
}
