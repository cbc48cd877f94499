/*
 * cuckoo_ops.h - the table of operations each table layout of the cuckoo
 * filter supplies, chosen once when a filter is created.
 *
 * cuckoo.c holds what every layout shares: creation, the public calls'
 * argument checks, the stripes, the cuckoo-path execution, delete, count
 * and accounting.  Each layout file holds the hot paths specialised for
 * its slots, and a pick function that returns its operations for a filter
 * (by hash version, bucket count and instruction set):
 *
 *   cuckoo_fp8.c       8-bit fingerprints, a bucket one uint32_t
 *   cuckoo_fp16.c      16-bit fingerprints, a bucket one uint64_t
 *   cuckoo_counting.c  12-bit fingerprints and 4-bit counters in 16-bit
 *                      slots, and the counting calls (increment, halve)
 *   cuckoo_semisort.c  13-bit fingerprints, a bucket 48 bits (three
 *                      uint16_t words) by semi-sorting (cuckoo_semisort.h)
 *
 * Every operation receives arguments already checked at the public
 * boundary; its contract is the public call's (include/admit/cuckoo.h).
 */
#ifndef ADMIT_CUCKOO_OPS_H
#define ADMIT_CUCKOO_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuckoo_internal.h"

/* x86-64: a layout's hot paths come twice, the second compiled for BMI2
 * and chosen when a filter is made if the CPU has it and the environment
 * variable ADMIT_NO_BMI2 is not set (the tests run both). */
#if defined(__x86_64__) && defined(__GNUC__)
#define CUCKOO_HAVE_BMI2 1
#define CUCKOO_BMI2_TARGET __attribute__((target("bmi2")))
#endif

/* Breadth-first search bounds.  A path of 5 hops reaches 2 * 4^5 slots, far
 * more than enough for 95 % load; the queue caps the work per search. */
#define BFS_MAX_DEPTH 5
#define BFS_QUEUE 1024

/* A cuckoo path: hop[j] moves the fingerprint in slot[j] of bucket[j] to
 * bucket[j + 1]; bucket[len] has a free slot. */
struct cuckoo_path {
	int len;
	uint32_t bucket[BFS_MAX_DEPTH + 2];
	uint8_t slot[BFS_MAX_DEPTH + 1];
	uint32_t fp[BFS_MAX_DEPTH + 1];
};

struct cuckoo_ops {
	/* admit_cuckoo_contains() and admit_cuckoo_insert() of an 8-byte
	 * key (not NULL): the common call, reached in one jump. */
	bool (*contains_key8)(const struct admit_cuckoo *f, const void *key);
	enum admit_status (*insert_key8)(struct admit_cuckoo *f,
	                                 const void *key);
	/* admit_cuckoo_contains() of a valid key of any length. */
	bool (*contains)(const struct admit_cuckoo *f, const void *key,
	                 size_t len);
	/* admit_cuckoo_insert() at a located position: a new copy of a
	 * membership filter's fingerprint, a counting filter's increment. */
	enum admit_status (*insert_at)(struct admit_cuckoo *f,
	                               const struct cuckoo_pos *p);
	/* A lock-free search for the shortest path that frees a slot in one
	 * of p's buckets; false if none within the bounds. */
	bool (*find_path)(const struct admit_cuckoo *f,
	                  const struct cuckoo_pos *p, struct cuckoo_path *path);
	/* The batches, past their argument checks. */
	void (*contains_many)(const struct admit_cuckoo *f, size_t n,
	                      const void *const keys[], const size_t lens[],
	                      bool out[]);
	void (*contains_many_u64)(const struct admit_cuckoo *f, size_t n,
	                          const uint64_t keys[], bool out[]);
	enum admit_status (*insert_many_u64)(struct admit_cuckoo *f, size_t n,
	                                     const uint64_t keys[],
	                                     enum admit_status out[]);
	/* With both of p's stripes held: a membership filter's new copy of
	 * p's fingerprint in the first free lane of its buckets, as
	 * cuckoo_add_locked(f, p, ADD_COPY) with the layout's constants;
	 * ADMIT_FULL if both are full.  NULL for the counting layout. */
	enum admit_status (*copy_locked)(struct admit_cuckoo *f,
	                                 const struct cuckoo_pos *p);
};

/* Each layout's operations for filter f (its fields set, its table
 * allocated); bmi2: run the copies compiled for BMI2. */
const struct cuckoo_ops *cuckoo_fp8_pick(const struct admit_cuckoo *f,
                                         bool bmi2);
const struct cuckoo_ops *cuckoo_fp16_pick(const struct admit_cuckoo *f,
                                          bool bmi2);
const struct cuckoo_ops *cuckoo_counting_pick(const struct admit_cuckoo *f);
const struct cuckoo_ops *cuckoo_semisort_pick(const struct admit_cuckoo *f,
                                              bool bmi2);

/* The stress suite's planted bug (stress/README.md): ops whose lookups
 * believe a miss without validating it, the writers those of base.  Only in
 * the build of the stress harness that must catch it (src/cuckoo_broken.c),
 * never in libadmit. */
const struct cuckoo_ops *cuckoo_broken_ops(const struct cuckoo_ops *base);

/*
 * The writers every layout shares (cuckoo.c).  cuckoo_add() inserts at p
 * with both stripes held, searching cuckoo paths (by f->ops->find_path) when
 * both buckets are full; out of line, so that a layout's one-stripe insert
 * keeps its registers off the common path.
 */
enum cuckoo_add_op {
	ADD_COPY,	/* membership insert: always a new fingerprint */
	ADD_UNIQUE,	/* only if no matching fingerprint */
	ADD_INCREMENT,	/* counting: bump the entry, or create it at 1 */
};
enum admit_status cuckoo_add(struct admit_cuckoo *f,
                             const struct cuckoo_pos *p, enum cuckoo_add_op op);
/* One attempt with both stripes held, no path search: ADMIT_FULL only if
 * both buckets are full and the operation needs a new slot. */
enum admit_status cuckoo_add_locked(struct admit_cuckoo *f,
                                    const struct cuckoo_pos *p,
                                    enum cuckoo_add_op op);

/* Groups of this many keys are hashed and prefetched before being probed:
 * enough to cover a ~150 ns miss with the other keys' work. */
#define CUCKOO_BATCH 16

#endif /* ADMIT_CUCKOO_OPS_H */
