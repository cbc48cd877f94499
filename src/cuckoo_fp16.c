/*
 * cuckoo_fp16.c - the 16-bit table layout: a bucket is one atomic uint64_t
 * of four 16-bit fingerprints (cuckoo_internal.h).  A table of 4 MiB or
 * more has an alt16 table of every fingerprint's alternate-bucket offset
 * (256 KiB, mostly in L2), in place of about a dozen instructions on a
 * lookup's critical path.
 *
 * Ordering and progress are the shared lookup's (cuckoo_probe.h) and
 * writers' (cuckoo_kick.h, cuckoo.c): lookups are optimistic, blocking on
 * writers; writers lock at most two stripes in ascending order.
 *
 * A filter that hashes 8-byte keys by admit_mul8() (hash version 2) gets
 * one set of operations per (alt16 table or not, bucket count a power of
 * two or not), each compiled twice on x86-64 (the second for BMI2: mulx,
 * rorx and shrx make a lookup one or two instructions shorter).  A filter
 * of hash version 1 hashes every key by XXH3 and takes the general set.
 */
#include "config.h"

#include "cuckoo_internal.h"
#include "cuckoo_batch_insert.h"
#include "cuckoo_kick.h"
#include "cuckoo_ops.h"
#include "cuckoo_probe.h"

#define W 16

static __attribute__((noinline)) bool
find_path16(const struct admit_cuckoo *f, const struct cuckoo_pos *p,
           struct cuckoo_path *path)
{
	return find_path_w(f, p, path, W);
}

static enum admit_status
insert_at16(struct admit_cuckoo *f, const struct cuckoo_pos *p)
{
	return copy_w(f, p, W);
}

static enum admit_status
copy_locked16(struct admit_cuckoo *f, const struct cuckoo_pos *p)
{
	return copy_locked_w(f, p, W);
}

/* Hash version 1: every key by XXH3, the batches by the general path. */
static __attribute__((noinline)) bool
contains16_v1(const struct admit_cuckoo *f, const void *key, size_t len)
{
	return contains_hashed(f, cuckoo_hash(f, key, len), W);
}

static bool
contains_key16_v1(const struct admit_cuckoo *f, const void *key)
{
	return contains16_v1(f, key, 8);
}

static enum admit_status
insert_key16_v1(struct admit_cuckoo *f, const void *key)
{
	struct cuckoo_pos p;

	cuckoo_locate(f, key, 8, &p);
	return copy_w(f, &p, W);
}

static void
contains_many16_v1(const struct admit_cuckoo *f, size_t n,
                  const void *const keys[], const size_t lens[], bool out[])
{
	contains_many_w(f, n, keys, lens, out, 0, false, false);
}

static void
contains_u64_16_v1(const struct admit_cuckoo *f, size_t n,
                  const uint64_t keys[], bool out[])
{
	contains_u64_w(f, n, keys, out, 0, false, false);
}

static enum admit_status
insert_u64_16_v1(struct admit_cuckoo *f, size_t n, const uint64_t keys[],
                enum admit_status out[])
{
	return insert_u64_w(f, n, keys, out, 0, false, false);
}

static const struct cuckoo_ops ops16_v1 = {
	contains_key16_v1, insert_key16_v1, contains16_v1, insert_at16, find_path16,
	contains_many16_v1, contains_u64_16_v1, insert_u64_16_v1,
	copy_locked16,
};

/*
 * Hash version 2, one set per (pow2, instruction set): each function its
 * own, so that each gets its own register allocation and the public calls
 * reach it in one jump.  A key of another length than 8 is hashed by XXH3.
 */
#define OPS16(sfx, tab, pow2, attr)                                           \
	static __attribute__((noinline)) attr bool                            \
	contains_key16##sfx(const struct admit_cuckoo *f, const void *key)    \
	{                                                                     \
		return contains_hashed_wt(f, admit_mul8(key, f->mul.k,        \
		                                        f->mul.s),            \
		                          W, tab, pow2, key);                 \
	}                                                                     \
	static __attribute__((noinline)) attr enum admit_status               \
	insert_key16##sfx(struct admit_cuckoo *f, const void *key)            \
	{                                                                     \
		struct cuckoo_pos p;                                          \
                                                                              \
		locate_w(f, admit_mul8(key, f->mul.k, f->mul.s), W, tab,      \
		         pow2, &p);                                           \
		return copy_w(f, &p, W);                                      \
	}                                                                     \
	static attr bool                                                      \
	contains16##sfx(const struct admit_cuckoo *f, const void *key,        \
	               size_t len)                                            \
	{                                                                     \
		if (len == 8)                                                 \
			return contains_key16##sfx(f, key);                   \
		return contains_hashed_wt(f, cuckoo_hash(f, key, len), W,     \
		                          false, pow2, NULL);                 \
	}                                                                     \
	static attr void                                                      \
	contains_many16##sfx(const struct admit_cuckoo *f, size_t n,          \
	                    const void *const keys[], const size_t lens[],    \
	                    bool out[])                                       \
	{                                                                     \
		contains_many_w(f, n, keys, lens, out, W, tab, pow2);         \
	}                                                                     \
	static attr void                                                      \
	contains_u64_16##sfx(const struct admit_cuckoo *f, size_t n,          \
	                    const uint64_t keys[], bool out[])                \
	{                                                                     \
		contains_u64_w(f, n, keys, out, W, tab, pow2);                \
	}                                                                     \
	static attr enum admit_status                                         \
	insert_u64_16##sfx(struct admit_cuckoo *f, size_t n,                  \
	                  const uint64_t keys[], enum admit_status out[])     \
	{                                                                     \
		return insert_u64_w(f, n, keys, out, W, tab, pow2);           \
	}                                                                     \
	static const struct cuckoo_ops ops16##sfx = {                         \
		contains_key16##sfx, insert_key16##sfx, contains16##sfx,      \
		insert_at16, find_path16, contains_many16##sfx,               \
		contains_u64_16##sfx, insert_u64_16##sfx, copy_locked16,      \
	};

OPS16(, false, false, )
OPS16(_p, false, true, )
OPS16(_t, true, false, )
OPS16(_tp, true, true, )
#ifdef CUCKOO_HAVE_BMI2
OPS16(_bmi2, false, false, CUCKOO_BMI2_TARGET)
OPS16(_p_bmi2, false, true, CUCKOO_BMI2_TARGET)
OPS16(_t_bmi2, true, false, CUCKOO_BMI2_TARGET)
OPS16(_tp_bmi2, true, true, CUCKOO_BMI2_TARGET)
#endif
#undef OPS16

const struct cuckoo_ops *
cuckoo_fp16_pick(const struct admit_cuckoo *f, bool bmi2)
{
	if (f->hash_version != CUCKOO_HASH_MUL8)
		return &ops16_v1;
#ifdef CUCKOO_HAVE_BMI2
	if (bmi2)
		return f->alt16 ? (f->pow2 ? &ops16_tp_bmi2 : &ops16_t_bmi2)
		                : (f->pow2 ? &ops16_p_bmi2 : &ops16_bmi2);
#else
	(void)bmi2;
#endif
	return f->alt16 ? (f->pow2 ? &ops16_tp : &ops16_t)
	                : (f->pow2 ? &ops16_p : &ops16);
}
