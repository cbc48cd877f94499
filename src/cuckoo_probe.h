/*
 * cuckoo_probe.h - the optimistic lookup, written once for every table
 * layout (doc/design.md §4).
 *
 * A lookup reads the stripe word of its second bucket, the first bucket,
 * the second, and, if nothing matched, that stripe word again (stripe.h
 * gives the acquire/release pairs).  A match is returned at once: the
 * fingerprint was in the table at the instant it was read.  A miss stands
 * only if the stripe was even and did not move; otherwise the lookup reads
 * again.  One stripe is enough: if no writer changed the second bucket
 * between the two bucket reads, both lacked the fingerprint at the instant
 * the first was read, and the miss is linearized there.  Whatever happened
 * to the first bucket after its read happened after that instant.  A
 * fingerprint in flight from the second bucket to the first is what the
 * validation catches: the mover holds the second's stripe.
 *
 * Everything here is static inline and parameterised by the lane width w
 * (8 or 16 for a membership filter, 0 for any filter, the general path a
 * counting filter takes): each layout file instantiates it with its width
 * a constant, so that the SWAR masks are immediates and every field of the
 * filter a lookup needs is read before the first acquire load.
 */
#ifndef ADMIT_CUCKOO_PROBE_H
#define ADMIT_CUCKOO_PROBE_H

#include <stdbool.h>
#include <stdint.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "cuckoo_internal.h"
#include "cuckoo_ops.h"
#include "stripe.h"

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
		q->b2 = atomic_load_explicit(&t[q->p.i2], memory_order_acquire);
	} else {
		const _Atomic uint64_t *t = q->table;

		q->b1 = atomic_load_explicit(&t[q->p.i1], memory_order_acquire);
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
static inline bool
probe_match8(void *arg)
{
	return probe_match_w(arg, 8);
}

static inline bool
probe_match16(void *arg)
{
	return probe_match_w(arg, 16);
}

static inline bool
probe_match_any(void *arg)
{
	struct probe *q = arg;

	probe_load(q, q->f->slot_bits);
	return (lanes_matching(q->f, q->b1, q->p.fp) |
	        lanes_matching(q->f, q->b2, q->p.fp)) != 0;
}

/* For admit_cuckoo_count(): only the validated pair will do.  By
 * bucket_load(), which knows every layout's table (a semi-sorted one
 * unpacked). */
static inline bool
probe_read_pair(void *arg)
{
	struct probe *q = arg;

	q->b1 = bucket_load(q->f, q->p.i1);
	q->b2 = bucket_load(q->f, q->p.i2);
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

/* The waiting loop, out of line and cold: only a lookup that met a writer
 * runs it, and the inline try keeps nothing live across it. */
static __attribute__((noinline, cold, unused)) bool
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
 * stripe): locate it again from its hash alone and wait the writer out. */
static __attribute__((noinline, cold, unused)) bool
contains_slow(const struct admit_cuckoo *f, uint64_t h)
{
	struct cuckoo_pos p;

	cuckoo_locate_hash(f, h, f->fp_bits, &p);
	stat_bump(&stats_of(f, p.i1)->read_retries);
	return lookup_slow(f, p);
}

/* contains_slow() for an 8-byte key of hash version 2, from the key. */
static __attribute__((noinline, cold, unused)) bool
contains_slow_key8(const struct admit_cuckoo *f, const void *key)
{
	return contains_slow(f, admit_mul8(key, f->mul.k, f->mul.s));
}

/*
 * One key's lookup by its hash, for a membership filter of width w (8 or
 * 16, a constant here): lookup_w()'s try, with only f and h (or key8, when
 * not NULL: the 8-byte key whose hash h is) passed on to the slow path.
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
	v = stripe_peek(r.b);
	/* Laid out for the miss, whose validation follows. */
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

/* cuckoo_bucket_addr() without its test of which table it is, where the
 * width w is a constant (0: not known). */
static inline __attribute__((always_inline)) const void *
bucket_addr_w(const struct admit_cuckoo *f, uint32_t i, unsigned w)
{
	return w == 8 ? (const void *)&f->t32[i] :
	       w == 16 ? (const void *)&f->t64[i] : cuckoo_bucket_addr(f, i);
}

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
			pos[j] = (struct cuckoo_pos){ 0, 0, 0 };
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
 * instead of starting after them.  Each key's probe is lookup_w(), its
 * miss validated on its own: a group-wide check (every stripe word read
 * before the group's buckets and again after them, one branch) costs more
 * (doc/tried.md).  A call of one group (n <= CUCKOO_BATCH) is
 * located, then probed. */
static inline __attribute__((always_inline)) void
contains_many_w(const struct admit_cuckoo *f, size_t n,
                const void *const keys[], const size_t lens[], bool out[],
                unsigned w, bool tab, bool pow2)
{
	struct cuckoo_pos pos[2][CUCKOO_BATCH];
	struct cuckoo_pos *p = pos[0], *q = pos[1], *t;
	size_t k = n < CUCKOO_BATCH ? n : CUCKOO_BATCH;

	locate_group_w(f, k, keys, lens, p, w, tab, pow2);
	for (size_t base = 0;; base += CUCKOO_BATCH) {
		size_t next = base + CUCKOO_BATCH, kn = 0;

		if (next < n) {
			kn = n - next < CUCKOO_BATCH ? n - next : CUCKOO_BATCH;
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

/*
 * Batches of 8-byte keys held in an array of uint64_t.  w: the layout's
 * width when the filter hashes 8-byte keys by admit_mul8() (hash version
 * 2), 0 for any other filter (general path, keys hashed by cuckoo_hash()).
 */
static inline __attribute__((always_inline)) void
locate_u64_w(const struct admit_cuckoo *f, size_t k, const uint64_t keys[],
             struct cuckoo_pos pos[], unsigned w, bool tab, bool pow2,
             bool rw)
{
	for (size_t j = 0; j < k; j++) {
		uint64_t h = w ? admit_mul8(&keys[j], f->mul.k, f->mul.s)
		               : cuckoo_hash(f, &keys[j], 8);
		uint32_t raw = locate_w(f, h, w ? w : f->fp_bits, tab, pow2,
		                        &pos[j]);

		if (w == 8) /* lookup_w()'s form */
			pos[j].fp = f->fps8[raw];
		/* rw a literal in each call: clang requires one. */
		if (rw) {
			__builtin_prefetch(bucket_addr_w(f, pos[j].i1, w), 1);
			__builtin_prefetch(bucket_addr_w(f, pos[j].i2, w), 1);
		} else {
			__builtin_prefetch(bucket_addr_w(f, pos[j].i1, w), 0);
			__builtin_prefetch(bucket_addr_w(f, pos[j].i2, w), 0);
		}
	}
}

/*
 * contains_many_w() for an array of 8-byte keys, a group at a time: the
 * next group of CUCKOO_BATCH located and prefetched while this one is
 * probed, each key by lookup_w().
 */
static inline __attribute__((always_inline)) void
contains_u64_groups_w(const struct admit_cuckoo *f, size_t n,
                      const uint64_t keys[], bool out[], unsigned w, bool tab,
                      bool pow2)
{
	struct cuckoo_pos pos[2][CUCKOO_BATCH];
	struct cuckoo_pos *p = pos[0], *q = pos[1], *t;
	size_t k = n < CUCKOO_BATCH ? n : CUCKOO_BATCH;

	locate_u64_w(f, k, keys, p, w, tab, pow2, false);
	for (size_t base = 0;; base += CUCKOO_BATCH) {
		size_t next = base + CUCKOO_BATCH, kn = 0;

		if (next < n) {
			kn = n - next < CUCKOO_BATCH ? n - next : CUCKOO_BATCH;
			locate_u64_w(f, kn, keys + next, q, w, tab, pow2, false);
		}
		for (size_t j = 0; j < k; j++)
			out[base + j] = lookup_w(f, &p[j], w);
		if (!kn)
			return;
		k = kn;
		t = p, p = q, q = t;
	}
}

/*
 * The same in one pass: as each key is probed, the key CUCKOO_U64_AHEAD
 * places on is located and its buckets prefetched, so that the prefetches
 * stay that far ahead evenly instead of coming a group at a time, and each
 * probe's instructions run while the misses of the 32 keys after it are in
 * flight.  Positions live in three groups of CUCKOO_BATCH, used in turn.
 */
#define CUCKOO_U64_AHEAD (2 * CUCKOO_BATCH)

static inline __attribute__((always_inline)) void
contains_u64_ahead_w(const struct admit_cuckoo *f, size_t n,
                     const uint64_t keys[], bool out[], unsigned w, bool tab,
                     bool pow2)
{
	struct cuckoo_pos pos[3][CUCKOO_BATCH];
	size_t a = n < CUCKOO_U64_AHEAD ? n : CUCKOO_U64_AHEAD;

	locate_u64_w(f, a < CUCKOO_BATCH ? a : CUCKOO_BATCH, keys, pos[0], w,
	             tab, pow2, false);
	if (a > CUCKOO_BATCH)
		locate_u64_w(f, a - CUCKOO_BATCH, keys + CUCKOO_BATCH, pos[1], w,
		             tab, pow2, false);
	for (size_t base = 0, g = 0; base < n; base += CUCKOO_BATCH) {
		size_t k = n - base < CUCKOO_BATCH ? n - base : CUCKOO_BATCH;
		size_t next = base + CUCKOO_U64_AHEAD, j = 0, kn = 0;
		/* Group g is probed while group g + 2 (mod 3) is located. */
		struct cuckoo_pos *p = pos[g], *q = pos[g ? g - 1 : 2];

		if (next < n) /* then k is CUCKOO_BATCH, and kn <= k */
			kn = n - next < CUCKOO_BATCH ? n - next : CUCKOO_BATCH;
		for (; j < kn; j++) {
			locate_u64_w(f, 1, keys + next + j, &q[j], w, tab, pow2,
			             false);
			out[base + j] = lookup_w(f, &p[j], w);
		}
		for (; j < k; j++)
			out[base + j] = lookup_w(f, &p[j], w);
		g = g == 2 ? 0 : g + 1;
	}
}

/*
 * contains_many_w() for an array of 8-byte keys.  A table of a
 * power-of-two bucket count locates a key with a mask, and there the group
 * form runs fastest (the one-pass form read 0.86 of it at 8 bits and 0.94
 * at 16 on a 2^22-bucket table); a general bucket range locates a key
 * with a multiply and a compare, and there the one-pass form keeps its
 * prefetches evenly ahead (1.10 of the group form at 16 M keys and 16
 * bits, 0.93 of the machine's two-line limit at 256 M where groups read
 * 0.88: doc/filter-benchmarks.md).
 */
static inline __attribute__((always_inline)) void
contains_u64_w(const struct admit_cuckoo *f, size_t n, const uint64_t keys[],
               bool out[], unsigned w, bool tab, bool pow2)
{
	if (pow2)
		contains_u64_groups_w(f, n, keys, out, w, tab, pow2);
	else
		contains_u64_ahead_w(f, n, keys, out, w, tab, pow2);
}

#endif /* ADMIT_CUCKOO_PROBE_H */
