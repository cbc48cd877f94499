/*
 * cuckoo_broken.c - the stress suite's planted bug (stress/README.md):
 * lookups that believe a miss without validating it, with a yield between
 * the two bucket reads to widen the window in which a kick carries the
 * fingerprint from the second bucket to the first.  The history checker
 * (stress/stress_linear.c) must report it as not linearizable
 * (stress/broken-caught.sh).
 *
 * Only the build of stress_linear_broken compiles this file, with
 * ADMIT_BROKEN_SKIP_VALIDATION defined, which makes cuckoo_create() wrap the
 * layout's operations in these; libadmit never contains it.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>

#include "cuckoo_internal.h"
#include "cuckoo_ops.h"

/* One lookup, unvalidated: wrong on purpose. */
static bool
broken_lookup(const struct admit_cuckoo *f, const void *key, size_t len)
{
	struct cuckoo_pos p;
	uint64_t b1, b2;

	cuckoo_locate(f, key, len, &p);
	b1 = bucket_load(f, p.i1);
	sched_yield();
	b2 = bucket_load(f, p.i2);
	return (lanes_matching(f, b1, p.fp) | lanes_matching(f, b2, p.fp)) != 0;
}

static bool
broken_contains_key8(const struct admit_cuckoo *f, const void *key)
{
	return broken_lookup(f, key, 8);
}

static void
broken_contains_many(const struct admit_cuckoo *f, size_t n,
                     const void *const keys[], const size_t lens[],
                     bool out[])
{
	for (size_t i = 0; i < n; i++)
		out[i] = admit_key_ok(keys[i], lens[i]) &&
		         broken_lookup(f, keys[i], lens[i]);
}

static void
broken_contains_u64(const struct admit_cuckoo *f, size_t n,
                    const uint64_t keys[], bool out[])
{
	for (size_t i = 0; i < n; i++)
		out[i] = broken_lookup(f, &keys[i], 8);
}

/* Every layout's set the build has met, and its broken copy. */
#define MAX_LAYOUT_OPS 32
static const struct cuckoo_ops *bases[MAX_LAYOUT_OPS];
static struct cuckoo_ops broken[MAX_LAYOUT_OPS];
static unsigned nbroken;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

const struct cuckoo_ops *
cuckoo_broken_ops(const struct cuckoo_ops *base)
{
	const struct cuckoo_ops *o = base;
	unsigned i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nbroken && bases[i] != base; i++)
		;
	if (i == nbroken && nbroken < MAX_LAYOUT_OPS) {
		bases[i] = base;
		broken[i] = *base;
		broken[i].contains_key8 = broken_contains_key8;
		broken[i].contains = broken_lookup;
		broken[i].contains_many = broken_contains_many;
		broken[i].contains_many_u64 = broken_contains_u64;
		nbroken++;
	}
	if (i < nbroken)
		o = &broken[i];
	pthread_mutex_unlock(&lock);
	return o;
}
