/*
 * cuckoo_semisort.c - the semi-sorted table layout: four 13-bit
 * fingerprints a bucket, packed in 48 bits (cuckoo_semisort.h), 12 bits a
 * slot.
 *
 * Where the words are.  A packed bucket is three atomic uint16_t words of
 * its own (bucket i is t16[3i .. 3i+2]), not a 48-bit field of shared
 * 64-bit words: no word ever holds bits of two buckets, so a writer, which
 * holds its bucket's stripe, is the only writer of every word it stores,
 * and two writers under different stripes never store to one word.  The
 * stripes keep the mapping of every layout (bucket i, stripe i & mask) and
 * the writers plain stores; no compare-and-swap loop.  The price is three
 * 16-bit loads a bucket where a shared-word layout would take one or two
 * 64-bit ones, a few instructions a lookup, and the same memory.
 *
 * Ordering and progress.  Writers are every layout's (cuckoo.c,
 * cuckoo_kick.h): they hold the stripe of every bucket they change, at
 * most two, taken in ascending order; bucket_store() packs and stores the
 * three words with release.  A bucket read is three loads, not one instant,
 * so a reader cannot trust a single unvalidated read as the 8- and 16-bit
 * lookups do (cuckoo_probe.h): a torn read may show a fingerprint that was
 * never there, or miss one that was.  Every lookup therefore reads both of
 * its key's stripes before the buckets and again after them
 * (stripe_read_begin() / stripe_read_end()), and its answer, hit or miss,
 * stands only if neither moved; otherwise it waits the writer out
 * (optimistic, blocking on writers, as every lookup of the filter).
 */
#include "config.h"

#include "cuckoo_internal.h"
#include "cuckoo_kick.h"
#include "cuckoo_ops.h"
#include "cuckoo_probe.h"
#include "stripe.h"

#ifdef CUCKOO_HAVE_BMI2
#include <immintrin.h>

/* ss_unpack() by two bit deposits.  Not always_inline: the copies
 * compiled without BMI2 keep a call to it that their constant bmi2 (false)
 * makes dead; the BMI2 copies inline it. */
static inline CUCKOO_BMI2_TARGET uint64_t
ss_unpack_bmi2(uint64_t v, const uint16_t *dec)
{
	return _pdep_u64(v >> 12, 0x01ff01ff01ff01ffull) |
	       _pdep_u64(dec[v & 0xfff], 0x1e001e001e001e00ull);
}
#define SS_UNPACK(v, dec, bmi2) \
	((bmi2) ? ss_unpack_bmi2((v), (dec)) : ss_unpack((v), (dec)))
#else
#define SS_UNPACK(v, dec, bmi2) ss_unpack((v), (dec))
#endif

/* Whether p's buckets in table t (dec its decode table) hold p's
 * fingerprint, as read (unvalidated).  The filter's fields come in as
 * arguments, read before the stripes' acquire loads: after one, the
 * compiler would read them again. */
static inline __attribute__((always_inline)) bool
ss_match(const _Atomic uint16_t *t, const uint16_t *dec, uint64_t ones,
         const struct cuckoo_pos *p, bool bmi2)
{
	uint64_t r1 = ss_load_raw(t, p->i1), r2 = ss_load_raw(t, p->i2);

	return match16_pair(SS_UNPACK(r1, dec, bmi2), SS_UNPACK(r2, dec, bmi2),
	                    (uint64_t)p->fp * ones);
}

struct ss_probe {
	const struct admit_cuckoo *f;
	struct cuckoo_pos p;
	bool hit;
};

/* stripe_read() callback: no answer stands unvalidated here. */
static bool
ss_read(void *arg)
{
	struct ss_probe *q = arg;

	q->hit = ss_match(q->f->t16, q->f->ss_dec, q->f->ones, &q->p, false);
	return false;
}

/* A lookup that met a writer: read until both stripes held still. */
static __attribute__((noinline, cold)) bool
ss_lookup_slow(const struct admit_cuckoo *f, struct cuckoo_pos p)
{
	struct ss_probe q = { f, p, false };
	struct stripe_reader r = { cuckoo_stripe(f, p.i1), cuckoo_stripe(f, p.i2),
	                           0 };

	stat_bump(&stats_of(f, p.i1)->read_retries);
	(void)stripe_read(&r, ss_read, &q, &stats_of(f, p.i1)->read_retries);
	return q.hit;
}

/* One key's lookup: both stripes, both buckets, both stripes again. */
static inline __attribute__((always_inline)) bool
ss_lookup(const struct admit_cuckoo *f, const struct cuckoo_pos *p, bool bmi2)
{
	struct stripe_reader r = { cuckoo_stripe(f, p->i1),
	                           cuckoo_stripe(f, p->i2), 0 };
	const _Atomic uint16_t *t = f->t16;
	const uint16_t *dec = f->ss_dec;
	/* By f->ones, a value the compiler cannot see: one multiply in
	 * place of its shifts and adds (as probe_init()). */
	uint64_t ones = f->ones;
	bool hit;

	if (__builtin_expect(stripe_read_begin(&r), 1)) {
		hit = ss_match(t, dec, ones, p, bmi2);
		if (__builtin_expect(stripe_read_end(&r), 1))
			return hit;
	}
	return ss_lookup_slow(f, *p);
}

/* The hash of a key: admit_mul8() for an 8-byte key (a semi-sorted filter
 * hashes by version 2), XXH3 for any other. */
static inline __attribute__((always_inline)) uint64_t
ss_hash(const struct admit_cuckoo *f, const void *key, size_t len)
{
	return len == 8 ? admit_mul8(key, f->mul.k, f->mul.s)
	                : cuckoo_hash(f, key, len);
}

/* Both lines a bucket may lie on (6 bytes from an even offset: one in 16
 * buckets ends on the next line). */
static inline __attribute__((always_inline)) void
ss_prefetch(const struct admit_cuckoo *f, uint32_t i)
{
	const char *a = (const char *)&f->t16[(size_t)i * 3];

	__builtin_prefetch(a);
	__builtin_prefetch(a + SS_BUCKET_BYTES - 1);
}

/* Locates a key of hash h into p and prefetches its buckets.  tab: by
 * f->alt16; pow2 as locate_w(). */
static inline __attribute__((always_inline)) void
ss_locate(const struct admit_cuckoo *f, uint64_t h, struct cuckoo_pos *p,
          bool tab, bool pow2)
{
	locate_w(f, h, SS_FP_BITS, tab, pow2, p);
	ss_prefetch(f, p->i1);
	ss_prefetch(f, p->i2);
}

/* Locates a group of at most CUCKOO_BATCH keys into pos; a key that is
 * not valid gets fp 0, which no key's fingerprint is. */
static inline __attribute__((always_inline)) void
ss_locate_group(const struct admit_cuckoo *f, size_t k,
                const void *const keys[], const size_t lens[],
                struct cuckoo_pos pos[], bool tab, bool pow2)
{
	for (size_t j = 0; j < k; j++) {
		if (admit_key_ok(keys[j], lens[j]))
			ss_locate(f, ss_hash(f, keys[j], lens[j]), &pos[j], tab,
			          pow2);
		else
			pos[j] = (struct cuckoo_pos){ 0, 0, 0 };
	}
}

/* The same for a group of 8-byte keys. */
static inline __attribute__((always_inline)) void
ss_locate_group8(const struct admit_cuckoo *f, size_t k,
                 const uint64_t keys[], struct cuckoo_pos pos[], bool tab,
                 bool pow2)
{
	for (size_t j = 0; j < k; j++)
		ss_locate(f, admit_mul8(&keys[j], f->mul.k, f->mul.s), &pos[j],
		          tab, pow2);
}

/* The batches: each group located and prefetched, then probed. */
static inline __attribute__((always_inline)) void
ss_contains_many(const struct admit_cuckoo *f, size_t n,
                 const void *const keys[], const size_t lens[], bool out[],
                 bool tab, bool pow2, bool bmi2)
{
	struct cuckoo_pos pos[CUCKOO_BATCH];

	for (size_t base = 0; base < n; base += CUCKOO_BATCH) {
		size_t k = n - base < CUCKOO_BATCH ? n - base : CUCKOO_BATCH;

		ss_locate_group(f, k, keys + base, lens + base, pos, tab, pow2);
		for (size_t j = 0; j < k; j++)
			out[base + j] = pos[j].fp != 0 && ss_lookup(f, &pos[j], bmi2);
	}
}

static inline __attribute__((always_inline)) void
ss_contains_u64(const struct admit_cuckoo *f, size_t n, const uint64_t keys[],
                bool out[], bool tab, bool pow2, bool bmi2)
{
	struct cuckoo_pos pos[CUCKOO_BATCH];

	for (size_t base = 0; base < n; base += CUCKOO_BATCH) {
		size_t k = n - base < CUCKOO_BATCH ? n - base : CUCKOO_BATCH;

		ss_locate_group8(f, k, keys + base, pos, tab, pow2);
		for (size_t j = 0; j < k; j++)
			out[base + j] = ss_lookup(f, &pos[j], bmi2);
	}
}

/*
 * A membership copy: under one stripe when a bucket is seen with a free
 * lane (the reason one stripe is enough is cuckoo_kick.h's, and the lane
 * is taken from the bucket read again under the stripe), else by
 * cuckoo_add() with both stripes and cuckoo paths.
 */
static enum admit_status
ss_insert_at(struct admit_cuckoo *f, const struct cuckoo_pos *p)
{
	for (int k = 0; k < 2; k++) {
		uint32_t i = k ? p->i2 : p->i1;
		_Atomic uint32_t *s = &f->seq[i & f->stripe_mask];
		uint64_t b, z;

		/* Unlocked, possibly torn: only a hint. */
		if (!ss_has_empty(ss_load_raw(f->t16, i), f->ss_dec))
			continue;
		stripe_lock(s);
		b = bucket_load(f, i);
		z = lanes_zero(f, b);
		if (z) {
			bucket_store(f, i, slot_set(f, b, first_lane(f, z), p->fp));
			stat_add_locked(&stats_of(f, i)->items, 1);
		}
		stripe_unlock(s);
		if (z)
			return ADMIT_OK;
	}
	return cuckoo_add(f, p, ADD_COPY);
}

static __attribute__((noinline)) bool
ss_find_path(const struct admit_cuckoo *f, const struct cuckoo_pos *p,
             struct cuckoo_path *path)
{
	return find_path_w(f, p, path, 0);
}

/* Inserts of an array of 8-byte keys, a group's buckets prefetched for
 * writing before its first insert. */
static inline __attribute__((always_inline)) enum admit_status
ss_insert_many(struct admit_cuckoo *f, size_t n, const uint64_t keys[],
               enum admit_status out[], bool tab, bool pow2)
{
	struct cuckoo_pos pos[CUCKOO_BATCH];
	enum admit_status st = ADMIT_OK;

	for (size_t base = 0; base < n; base += CUCKOO_BATCH) {
		size_t k = n - base < CUCKOO_BATCH ? n - base : CUCKOO_BATCH;

		ss_locate_group8(f, k, keys + base, pos, tab, pow2);
		for (size_t j = 0; j < k; j++) {
			out[base + j] = ss_insert_at(f, &pos[j]);
			if (out[base + j] != ADMIT_OK)
				st = out[base + j];
		}
	}
	return st;
}

/*
 * One set of operations per (bucket count a power of two or not,
 * instruction set), as the other layouts have.
 */
#define OPS_SS(sfx, tab, pow2, bmi2, attr)                                         \
	static __attribute__((noinline)) attr bool                            \
	ss_contains_key8##sfx(const struct admit_cuckoo *f, const void *key)  \
	{                                                                     \
		struct cuckoo_pos p;                                          \
                                                                              \
		locate_w(f, admit_mul8(key, f->mul.k, f->mul.s), SS_FP_BITS,  \
		         tab, pow2, &p);                                      \
		return ss_lookup(f, &p, bmi2);                                \
	}                                                                     \
	static __attribute__((noinline)) attr enum admit_status               \
	ss_insert_key8##sfx(struct admit_cuckoo *f, const void *key)          \
	{                                                                     \
		struct cuckoo_pos p;                                          \
                                                                              \
		locate_w(f, admit_mul8(key, f->mul.k, f->mul.s), SS_FP_BITS,  \
		         tab, pow2, &p);                                      \
		return ss_insert_at(f, &p);                                   \
	}                                                                     \
	static attr bool                                                      \
	ss_contains##sfx(const struct admit_cuckoo *f, const void *key,       \
	                 size_t len)                                          \
	{                                                                     \
		struct cuckoo_pos p;                                          \
                                                                              \
		locate_w(f, ss_hash(f, key, len), SS_FP_BITS, tab, pow2,      \
		         &p);                                                 \
		return ss_lookup(f, &p, bmi2);                                \
	}                                                                     \
	static attr void                                                      \
	ss_many##sfx(const struct admit_cuckoo *f, size_t n,                  \
	             const void *const keys[], const size_t lens[],           \
	             bool out[])                                              \
	{                                                                     \
		ss_contains_many(f, n, keys, lens, out, tab, pow2, bmi2);     \
	}                                                                     \
	static attr void                                                      \
	ss_many_u64##sfx(const struct admit_cuckoo *f, size_t n,              \
	                 const uint64_t keys[], bool out[])                   \
	{                                                                     \
		ss_contains_u64(f, n, keys, out, tab, pow2, bmi2);            \
	}                                                                     \
	static attr enum admit_status                                         \
	ss_insert_u64##sfx(struct admit_cuckoo *f, size_t n,                  \
	                   const uint64_t keys[], enum admit_status out[])    \
	{                                                                     \
		return ss_insert_many(f, n, keys, out, tab, pow2);            \
	}                                                                     \
	static const struct cuckoo_ops ops_ss##sfx = {                        \
		ss_contains_key8##sfx, ss_insert_key8##sfx, ss_contains##sfx, \
		ss_insert_at, ss_find_path, ss_many##sfx, ss_many_u64##sfx,   \
		ss_insert_u64##sfx, NULL,                                     \
	};

OPS_SS(, false, false, false, )
OPS_SS(_p, false, true, false, )
OPS_SS(_t, true, false, false, )
OPS_SS(_tp, true, true, false, )
#ifdef CUCKOO_HAVE_BMI2
OPS_SS(_bmi2, false, false, true, CUCKOO_BMI2_TARGET)
OPS_SS(_p_bmi2, false, true, true, CUCKOO_BMI2_TARGET)
OPS_SS(_t_bmi2, true, false, true, CUCKOO_BMI2_TARGET)
OPS_SS(_tp_bmi2, true, true, true, CUCKOO_BMI2_TARGET)
#endif
#undef OPS_SS

const struct cuckoo_ops *
cuckoo_semisort_pick(const struct admit_cuckoo *f, bool bmi2)
{
#ifdef CUCKOO_HAVE_BMI2
	if (bmi2)
		return f->alt16 ? (f->pow2 ? &ops_ss_tp_bmi2 : &ops_ss_t_bmi2)
		                : (f->pow2 ? &ops_ss_p_bmi2 : &ops_ss_bmi2);
#else
	(void)bmi2;
#endif
	return f->alt16 ? (f->pow2 ? &ops_ss_tp : &ops_ss_t)
	                : (f->pow2 ? &ops_ss_p : &ops_ss);
}
