/*
 * cuckoo.c - the concurrent cuckoo filter (doc/design.md §4): what every
 * table layout shares.  Creation (which picks the layout's operations,
 * cuckoo_ops.h), the public calls' argument checks, the stripes, the
 * writers' locked attempt, cuckoo-path execution, delete, count and
 * accounting.  The layouts' hot paths are in cuckoo_fp8.c, cuckoo_fp16.c
 * and cuckoo_counting.c.
 *
 * Progress and ordering, in brief:
 *  - Readers take no lock: optimistic, blocking on writers (cuckoo_probe.h
 *    says why one stripe validates a miss).
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

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cuckoo_internal.h"
#include "cuckoo_ops.h"
#include "cuckoo_probe.h"
#include "debug.h"
#include "stripe.h"

/* Paths can go stale under contention; past this many in a row the filter
 * is effectively full for this caller. */
#define MAX_PATH_ATTEMPTS 64

/* ---- stripes ------------------------------------------------------------ */

void
cuckoo_lock_two(struct admit_cuckoo *f, uint32_t a, uint32_t b)
{
	/* Start both buckets' misses before the stripe CAS: a locked
	 * instruction waits for every earlier load, a prefetch does not hold
	 * it back. */
	__builtin_prefetch(cuckoo_bucket_addr(f, a), 1);
	__builtin_prefetch(cuckoo_bucket_addr(f, b), 1);
	cuckoo_lock_stripes(f, a, b);
}

void
cuckoo_unlock_two(struct admit_cuckoo *f, uint32_t a, uint32_t b)
{
	cuckoo_unlock_stripes(f, a, b);
}

/* admit/cuckoo_inline.h reads the view at the start of the filter. */
_Static_assert(offsetof(struct admit_cuckoo, view) == 0,
               "struct admit_cuckoo_view must come first");

/* ---- creation ----------------------------------------------------------- */

/* The alt16 table's bytes: an entry per fingerprint of the width. */
static size_t
alt16_bytes(unsigned fp_bits)
{
	return ((size_t)1 << fp_bits) * sizeof(uint32_t);
}
#define SS_DECODE_BYTES (SS_DECODE_ENTRIES * sizeof(uint16_t))

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

/* The fields that describe the layout: its shape, its hashing, its lanes. */
static void
set_layout(struct admit_cuckoo *f, uint32_t m, unsigned fingerprint_bits,
           bool counting, uint64_t seed, unsigned hash_version)
{
	f->m = m;
	f->pow2 = (m & (m - 1)) == 0;
	f->m_mask = m - 1;
	f->m_shift = 32 - (unsigned)__builtin_ctz(m);
	f->counting = counting;
	f->slot_bits = fingerprint_bits;
	/* The semi-sorted layout unpacks to 16-bit lanes and has lookups
	 * of its own (lookup_width 0: no 8- or 16-bit specialisation). */
	if (fingerprint_bits == SS_FP_BITS)
		f->slot_bits = 16;
	f->lookup_width = counting || fingerprint_bits == SS_FP_BITS ? 0 :
	                  fingerprint_bits;
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
}

/* The layout's operations, by its kind and the CPU. */
static void
set_ops(struct admit_cuckoo *f)
{
	bool bmi2 = false;

#ifdef CUCKOO_HAVE_BMI2
	__builtin_cpu_init();
	bmi2 = __builtin_cpu_supports("bmi2") && !getenv("ADMIT_NO_BMI2");
#endif
	f->bmi2 = bmi2;
	f->ops = f->counting ? cuckoo_counting_pick(f) :
	         f->t16 ? cuckoo_semisort_pick(f, bmi2) :
	         f->slot_bits == 8 ? cuckoo_fp8_pick(f, bmi2) :
	         cuckoo_fp16_pick(f, bmi2);
#ifdef ADMIT_BROKEN_SKIP_VALIDATION
	f->ops = cuckoo_broken_ops(f->ops);
#endif
	f->contains_key8 = f->ops->contains_key8;
	f->insert_key8 = f->ops->insert_key8;
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
	f->capacity = capacity;
	f->stripe_mask = stripes - 1;
	set_layout(f, m, fingerprint_bits, counting, seed, hash_version);
	table_bytes = (size_t)m * cuckoo_bucket_bytes_of(fingerprint_bits);
	f->stats = admit_mem_table(&f->alloc,
	                           (size_t)stripes * sizeof(*f->stats),
	                           &f->footprint);
	if (fingerprint_bits == 8)
		f->t32 = admit_mem_table(&f->alloc, table_bytes, &f->footprint);
	else if (fingerprint_bits == SS_FP_BITS)
		f->t16 = admit_mem_table(&f->alloc, table_bytes, &f->footprint);
	else
		f->t64 = admit_mem_table(&f->alloc, table_bytes, &f->footprint);
	/* 16 bits: 256 KiB, 13 bits (semi-sorted): 32 KiB. */
	want_alt16 = !counting && fingerprint_bits != 8 &&
	             m >= CUCKOO_ALT16_MIN_BUCKETS;
	if (want_alt16 && (f->alt16 = admit_mem_zalloc(&f->alloc,
	                                               alt16_bytes(f->fp_bits),
	                                               &f->footprint)))
		for (unsigned fp = 0; fp < 1u << f->fp_bits; fp++)
			f->alt16[fp] = cuckoo_alt_of(fp, f->alt_seed, m);
	if (f->t16 && (f->ss_dec = admit_mem_zalloc(&f->alloc, SS_DECODE_BYTES,
	                                            &f->footprint)))
		ss_build_decode(f->ss_dec);
	if (!f->stats || (!f->t32 && !f->t64 && !f->t16) ||
	    (want_alt16 && !f->alt16) || (f->t16 && !f->ss_dec)) {
		admit_cuckoo_free(f);
		return ADMIT_NOMEM;
	}
	set_ops(f);
	f->view = (struct admit_cuckoo_view){
		.table = f->t32 ? (const void *)f->t32 :
		         f->t16 ? (const void *)f->t16 : (const void *)f->t64,
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
	bits = cfg->fingerprint_bits ? cfg->fingerprint_bits :
	       cfg->semi_sorted ? SS_FP_BITS : 16;
	if (cfg->semi_sorted ? bits != SS_FP_BITS || cfg->counting
	                     : bits != 8 && bits != 16)
		return ADMIT_EINVAL;
	if (cfg->counting && bits != 16)
		return ADMIT_EINVAL;
	stripes = cfg->stripes ? cfg->stripes : default_stripes(m);
	if (stripes > ADMIT_CUCKOO_MAX_STRIPES || (stripes & (stripes - 1)))
		return ADMIT_EINVAL;
	return cuckoo_create(cfg->capacity, m, bits, cfg->counting, stripes,
	                     cfg->seed ? cfg->seed : admit_random_seed(),
	                     /* Counting filters hash by XXH3: their keys
	                      * (TinyLFU's) are hashes already, and their
	                      * lookups are not the hot path. */
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
	admit_mem_table_free(&a, f->t32 ? (void *)f->t32 :
	                         f->t16 ? (void *)f->t16 : (void *)f->t64,
	                     (size_t)f->m * cuckoo_bucket_bytes(f), NULL);
	admit_mem_free(&a, f->ss_dec, SS_DECODE_BYTES, NULL);
	admit_mem_table_free(&a, f->stats,
	                     (size_t)(f->stripe_mask + 1) * sizeof(*f->stats),
	                     NULL);
	admit_mem_free(&a, f->alt16, alt16_bytes(f->fp_bits), NULL);
	admit_mem_table_free(&a, f, cuckoo_struct_bytes(f->stripe_mask + 1), NULL);
}

size_t
admit_cuckoo_footprint(const struct admit_cuckoo *f)
{
	return f ? f->footprint : 0;
}

/* ---- lookups ------------------------------------------------------------ */

/* Keys of other lengths, out of line, so that the common call below is
 * three tests and one jump. */
static __attribute__((noinline)) bool
contains_other(const struct admit_cuckoo *f, const void *key, size_t len)
{
	if (!f || !admit_key_ok(key, len))
		return false;
	return f->ops->contains(f, key, len);
}

bool
admit_cuckoo_contains(const struct admit_cuckoo *f, const void *key, size_t len)
{
	/* The common call first: an 8-byte key (so a non-NULL one is
	 * valid), by the layout's lookup. */
	if (__builtin_expect(len == 8, 1) && __builtin_expect(key != NULL, 1)) {
		if (__builtin_expect(f != NULL, 1))
			return f->contains_key8(f, key);
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

void
admit_cuckoo_contains_many(const struct admit_cuckoo *f, size_t n,
                           const void *const keys[], const size_t lens[],
                           bool out[])
{
	if (!f || !keys || !lens || !out)
		return;
	f->ops->contains_many(f, n, keys, lens, out);
}

void
admit_cuckoo_contains_many_u64(const struct admit_cuckoo *f, size_t n,
                               const uint64_t keys[], bool out[])
{
	if (!f || !keys || !out)
		return;
	f->ops->contains_many_u64(f, n, keys, out);
}

/* ---- writers ------------------------------------------------------------ */

enum admit_status
cuckoo_add_locked(struct admit_cuckoo *f, const struct cuckoo_pos *p,
                  enum cuckoo_add_op op)
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

enum admit_status
cuckoo_add(struct admit_cuckoo *f, const struct cuckoo_pos *p,
           enum cuckoo_add_op op)
{
	for (unsigned attempt = 0; attempt < MAX_PATH_ATTEMPTS; attempt++) {
		struct cuckoo_path path;
		enum admit_status st;

		cuckoo_lock_two(f, p->i1, p->i2);
		st = op == ADD_COPY && f->ops->copy_locked ?
		     f->ops->copy_locked(f, p) : cuckoo_add_locked(f, p, op);
		cuckoo_unlock_two(f, p->i1, p->i2);
		if (st != ADMIT_FULL)
			return st;
		/* relaxed: only a wait hint; move_one() re-checks under its
		 * stripes.  Kicks wait out a halve (see struct admit_cuckoo). */
		for (unsigned spins = 0;
		     atomic_load_explicit(&f->halving, memory_order_relaxed); spins++)
			admit_backoff(spins);
		if (!f->ops->find_path(f, p, &path))
			break;
		if (!run_path(f, &path))
			stat_bump(&stats_of(f, p->i1)->path_retries);
	}
	stat_bump(&stats_of(f, p->i1)->full);
	return ADMIT_FULL;
}

/* Keys of other lengths, out of line: the common call's frame then needs
 * no position on the stack, and reaches the layout by a jump. */
static __attribute__((noinline)) enum admit_status
insert_other(struct admit_cuckoo *f, const void *key, size_t len)
{
	struct cuckoo_pos p;

	if (!f || !admit_key_ok(key, len))
		return ADMIT_EINVAL;
	cuckoo_locate(f, key, len, &p);
	return f->ops->insert_at(f, &p);
}

enum admit_status
admit_cuckoo_insert(struct admit_cuckoo *f, const void *key, size_t len)
{
	/* As admit_cuckoo_contains(): an 8-byte key by the layout's call. */
	if (__builtin_expect(len == 8, 1) && __builtin_expect(key != NULL, 1)) {
		if (__builtin_expect(f != NULL, 1))
			return f->insert_key8(f, key);
		return ADMIT_EINVAL;
	}
	return insert_other(f, key, len);
}

enum admit_status
admit_cuckoo_insert_unique(struct admit_cuckoo *f, const void *key, size_t len)
{
	struct cuckoo_pos p;

	if (!f || !admit_key_ok(key, len))
		return ADMIT_EINVAL;
	cuckoo_locate(f, key, len, &p);
	return cuckoo_add(f, &p, ADD_UNIQUE);
}

enum admit_status
admit_cuckoo_insert_many(struct admit_cuckoo *f, size_t n,
                         const void *const keys[], const size_t lens[],
                         enum admit_status out[])
{
	struct cuckoo_pos pos[CUCKOO_BATCH];
	enum admit_status st = ADMIT_OK;

	if (!f || !keys || !lens || !out)
		return ADMIT_EINVAL;
	/* All or nothing for bad input: no key goes in if one is invalid. */
	for (size_t i = 0; i < n; i++)
		if (!admit_key_ok(keys[i], lens[i]))
			return ADMIT_EINVAL;
	for (size_t base = 0; base < n; base += CUCKOO_BATCH) {
		size_t k = n - base < CUCKOO_BATCH ? n - base : CUCKOO_BATCH;

		for (size_t j = 0; j < k; j++) {
			cuckoo_locate(f, keys[base + j], lens[base + j], &pos[j]);
			__builtin_prefetch(cuckoo_bucket_addr(f, pos[j].i1), 1);
			__builtin_prefetch(cuckoo_bucket_addr(f, pos[j].i2), 1);
		}
		for (size_t j = 0; j < k; j++) {
			out[base + j] = f->ops->insert_at(f, &pos[j]);
			if (out[base + j] != ADMIT_OK)
				st = out[base + j];
		}
	}
	return st;
}

enum admit_status
admit_cuckoo_insert_many_u64(struct admit_cuckoo *f, size_t n,
                             const uint64_t keys[], enum admit_status out[])
{
	if (!f || !keys || !out)
		return ADMIT_EINVAL;
	return f->ops->insert_many_u64(f, n, keys, out);
}

/* Under both of p's stripes: remove one matching entry (a counting one's
 * count by one).  ADMIT_NOTFOUND if there is none. */
static enum admit_status
delete_locked(struct admit_cuckoo *f, const struct cuckoo_pos *p)
{
	for (int k = 0; k < 2; k++) {
		uint32_t i = k ? p->i2 : p->i1;
		uint64_t b = bucket_load(f, i);
		uint64_t m = lanes_matching(f, b, p->fp);
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
		return ADMIT_OK;
	}
	return ADMIT_NOTFOUND;
}

static enum admit_status
delete_at(struct admit_cuckoo *f, const struct cuckoo_pos *p)
{
	enum admit_status st;

	cuckoo_lock_two(f, p->i1, p->i2);
	st = delete_locked(f, p);
	cuckoo_unlock_two(f, p->i1, p->i2);
	return st;
}

enum admit_status
admit_cuckoo_delete(struct admit_cuckoo *f, const void *key, size_t len)
{
	struct cuckoo_pos p;

	if (!f || !admit_key_ok(key, len))
		return ADMIT_EINVAL;
	cuckoo_locate(f, key, len, &p);
	return delete_at(f, &p);
}

enum admit_status
admit_cuckoo_delete_many_u64(struct admit_cuckoo *f, size_t n,
                             const uint64_t keys[], enum admit_status out[])
{
	struct cuckoo_pos pos[CUCKOO_BATCH];
	enum admit_status st = ADMIT_OK;

	if (!f || !keys || !out)
		return ADMIT_EINVAL;
	for (size_t base = 0; base < n; base += CUCKOO_BATCH) {
		size_t k = n - base < CUCKOO_BATCH ? n - base : CUCKOO_BATCH;

		for (size_t j = 0; j < k; j++) {
			cuckoo_locate(f, &keys[base + j], 8, &pos[j]);
			__builtin_prefetch(cuckoo_bucket_addr(f, pos[j].i1), 1);
			__builtin_prefetch(cuckoo_bucket_addr(f, pos[j].i2), 1);
		}
		for (size_t j = 0; j < k; j++) {
			out[base + j] = delete_at(f, &pos[j]);
			if (out[base + j] != ADMIT_OK)
				st = out[base + j];
		}
	}
	return st;
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
