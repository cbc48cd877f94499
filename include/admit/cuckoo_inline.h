/*
 * admit/cuckoo_inline.h - an opt-in inline fast path for
 * admit_cuckoo_contains(), in the spirit of liburcu's _LGPL_SOURCE.
 *
 * Including this header is the opt-in: admit_cuckoo_contains_inline() (and
 * admit_cuckoo_view_contains(), for a loop) is then compiled into the caller, so a loop of lookups pays no call, no
 * argument shuffle and no per-call set-up of the hash seed (the compiler
 * hoists what depends only on the filter out of the loop).  The library call
 * stays the default; the contract is identical: same answers, same
 * thread-safety, same linearizability.  Whatever the fast path does not
 * handle (a key that is not 8 bytes, a counting filter, a NULL argument, a
 * stripe a writer holds or took meanwhile) it hands to
 * admit_cuckoo_contains().  It handles filters that hash 8-byte keys by
 * XXH3: those loaded from snapshot format 1.  Membership filters made by
 * admit_cuckoo_new() hash them by a seeded multiply the header does not
 * know, and their view's width is 0, so every call goes to the library,
 * whose lookup of such a filter takes fewer instructions than this header's
 * of the other kind.
 *
 * The price: a program built with this header depends on the first bytes of
 * struct admit_cuckoo (struct admit_cuckoo_view below) and on the filter's
 * hashing (XXH3 of the key, the bucket and alternate-bucket arithmetic),
 * which the snapshot format (admit_cuckoo_save) already fixes.  If either
 * ever changes, ADMIT_CUCKOO_VIEW_VERSION changes with the library's
 * soname, and such programs must be rebuilt.
 *
 * C11 only (it reads the filter's atomics with <stdatomic.h>); in C++ this
 * header declares nothing beyond <admit/cuckoo.h>.  It includes <xxhash.h>
 * with XXH_INLINE_ALL (the xxhash development headers must be installed).
 */
#ifndef ADMIT_CUCKOO_INLINE_H
#define ADMIT_CUCKOO_INLINE_H

#include <admit/cuckoo.h>

#ifndef __cplusplus

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

#define ADMIT_CUCKOO_VIEW_VERSION 1

/*
 * The first member of every struct admit_cuckoo: what a lookup reads, set
 * when the filter is made and never changed after.  Not for writing.
 */
struct admit_cuckoo_view {
	const void *table;               /* m words: uint32_t (8-bit), uint64_t (16-bit) */
	const _Atomic uint32_t *seq;     /* the seqlock stripes, stripe_mask + 1 */
	uint64_t seed;                   /* XXH3 seed of the keys */
	uint32_t m;                      /* buckets */
	uint32_t stripe_mask;            /* bucket i is guarded by seq[i & stripe_mask] */
	uint32_t alt_seed;               /* mixed into the alternate bucket */
	uint32_t width;                  /* 8 or 16; 0: take the library call */
	const uint32_t *alt8;            /* 8-bit: the alternate-bucket t of each fingerprint */
};

/* Non-zero if one of a bucket's 4 lanes of `width` bits holds fp. */
static inline uint64_t
admit_cuckoo_inline_has_(uint64_t b, uint32_t fp, unsigned width)
{
	uint64_t ones = width == 8 ? 0x01010101ull : 0x0001000100010001ull;
	uint64_t x = b ^ (uint64_t)fp * ones;

	return (x - ones) & ~x & ones << (width - 1);
}

/*
 * admit_cuckoo_view_of - a copy of the filter's view, for
 * admit_cuckoo_view_contains().
 *
 * The view never changes while the filter lives, so a copy taken once (say
 * before a loop of lookups) stays valid until admit_cuckoo_free().  A copy
 * in a local variable lets the compiler keep its fields in registers across
 * calls: it must re-read fields through the filter's pointer after every
 * lookup's acquire loads.  f must not be NULL.
 * Thread-safety: safe.
 */
static inline struct admit_cuckoo_view
admit_cuckoo_view_of(const struct admit_cuckoo *f)
{
	return *(const struct admit_cuckoo_view *)f;
}

/*
 * admit_cuckoo_view_contains - admit_cuckoo_contains(f, key, len), inline,
 * through v, a copy of f's view (admit_cuckoo_view_of(f)).
 *
 * True if the key may be in the filter (false positives at the filter's
 * rate), false if it is certainly not.  No errors: a NULL key with a
 * non-zero length answers false, as the library call does.
 * Thread-safety: safe, as admit_cuckoo_contains(): optimistic, it takes no
 * lock and writes nothing; a miss is validated against both buckets' stripes
 * (a kick in flight is caught) and, if a writer held or took one, the call
 * is made again by the library, which waits the writer out.
 */
static inline bool
admit_cuckoo_view_contains(const struct admit_cuckoo_view *v,
                           const struct admit_cuckoo *f, const void *key,
                           size_t len)
{
	unsigned w = v->width;
	uint64_t h, b1, b2;
	uint32_t fp, i1, i2, t, va, vb;
	const _Atomic uint32_t *sa, *sb;

	if (!key || len != 8 || w == 0)
		return admit_cuckoo_contains(f, key, len);
	h = XXH3_64bits_withSeed(key, 8, v->seed);
	fp = (uint32_t)(h >> (64 - w));
	fp += fp == 0;
	i1 = (uint32_t)(((uint64_t)(uint32_t)h * v->m) >> 32);
	/* The alternate bucket: (t - i1) mod m, t a mix of the fingerprint;
	 * at 8 bits the library keeps every fingerprint's t in a table. */
	if (w == 8) {
		t = v->alt8[fp];
	} else {
		t = fp ^ v->alt_seed;
		t ^= t >> 16;
		t *= 0x85ebca6bu;
		t ^= t >> 13;
		t *= 0xc2b2ae35u;
		t ^= t >> 16;
		t = (uint32_t)(((uint64_t)t * v->m) >> 32);
	}
	i2 = t >= i1 ? t - i1 : t + (v->m - i1);
	sa = &v->seq[i1 & v->stripe_mask];
	sb = &v->seq[i2 & v->stripe_mask];
	/* acquire: pairs with the release that ends a writer's hold of the
	 * stripe (the library's stripe_unlock()). */
	va = atomic_load_explicit(sa, memory_order_acquire);
	vb = atomic_load_explicit(sb, memory_order_acquire);
	if ((va | vb) & 1)
		return admit_cuckoo_contains(f, key, len);
	/* acquire: pairs with the writer's release stores of the buckets. */
	if (w == 8) {
		const _Atomic uint32_t *tb = (const _Atomic uint32_t *)v->table;

		b1 = atomic_load_explicit(&tb[i1], memory_order_acquire);
		b2 = atomic_load_explicit(&tb[i2], memory_order_acquire);
	} else {
		const _Atomic uint64_t *tb = (const _Atomic uint64_t *)v->table;

		b1 = atomic_load_explicit(&tb[i1], memory_order_acquire);
		b2 = atomic_load_explicit(&tb[i2], memory_order_acquire);
	}
	if (admit_cuckoo_inline_has_(b1, fp, w) | admit_cuckoo_inline_has_(b2, fp, w))
		return true;
	/* acquire: keeps these loads after the bucket loads. */
	if (atomic_load_explicit(sa, memory_order_acquire) == va &&
	    atomic_load_explicit(sb, memory_order_acquire) == vb)
		return false;
	return admit_cuckoo_contains(f, key, len);
}

/*
 * admit_cuckoo_contains_inline - admit_cuckoo_contains(), inline: the same
 * answers, errors (none: a NULL filter answers false) and guarantees.
 * Thread-safety: safe, as admit_cuckoo_view_contains().
 */
static inline bool
admit_cuckoo_contains_inline(const struct admit_cuckoo *f, const void *key,
                             size_t len)
{
	struct admit_cuckoo_view v;

	if (!f)
		return false;
	v = admit_cuckoo_view_of(f);
	return admit_cuckoo_view_contains(&v, f, key, len);
}

#endif /* !__cplusplus */

#endif /* ADMIT_CUCKOO_INLINE_H */
