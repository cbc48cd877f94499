/*
 * lookup_instructions - the loops whose instructions per lookup
 * bench/README.md quotes, to be run under callgrind (the virtual machines
 * this was measured on expose no hardware counters):
 *
 *   ./libtool --mode=execute valgrind --tool=callgrind --callgrind-out-file=cg.out \
 *       bench/lookup_instructions 16 absent
 *   callgrind_annotate --inclusive=yes cg.out | grep 'loop_'
 *
 * Each loop_* function makes 2^18 lookups, of present keys or of absent
 * ones (the second argument), in a filter of 1,992,294 items at 95 % load
 * (both filters have 2^19 buckets; with a third argument "odd", admit's
 * has 526,316, a count that is not a power of two): its inclusive count
 * divided by 262144 is instructions per lookup, the loop's own included.  loop_admit calls admit_cuckoo_contains(), loop_inline
 * admit_cuckoo_view_contains(), loop_many admit_cuckoo_contains_many() (16
 * keys a call, the loop's work per key included), loop_u64
 * admit_cuckoo_contains_many_u64() (1024 keys a call, likewise), loop_ref the CoNEXT
 * 2014 authors' filter (refcf_set.cc, when configure found it).  The first
 * argument is the fingerprint width, 8 or 16.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <admit/admit.h>
#include <admit/cuckoo_inline.h>

#include "benchutil.h"
#include "sets.h"

/* 95 % of 2^19 buckets of 4 slots (2^19 or more: a 16-bit filter of that
 * size looks its alternate buckets up in a table); ODD_CAPACITY gives
 * admit 526,316. */
#define ITEMS 1992294u
#define ODD_CAPACITY 2000000u
#define LOOKUPS (1u << 18)

static uint64_t present[LOOKUPS], absent[LOOKUPS];

static __attribute__((noinline)) unsigned
loop_admit(const struct admit_cuckoo *f, const uint64_t *k)
{
	unsigned hits = 0;

	for (unsigned i = 0; i < LOOKUPS; i++)
		hits += admit_cuckoo_contains(f, &k[i], 8);
	return hits;
}

static __attribute__((noinline)) unsigned
loop_inline(const struct admit_cuckoo *f, const uint64_t *k)
{
	struct admit_cuckoo_view v = admit_cuckoo_view_of(f);
	unsigned hits = 0;

	for (unsigned i = 0; i < LOOKUPS; i++)
		hits += admit_cuckoo_view_contains(&v, f, &k[i], 8);
	return hits;
}

/* admit_cuckoo_contains_many(), 16 keys a call as bench_cuckoo's
 * contains_many row: its count / 524288 is instructions per key. */
static __attribute__((noinline)) unsigned
loop_many(const struct admit_cuckoo *f, const uint64_t *k)
{
	const void *keys[16];
	size_t lens[16];
	bool out[16];
	unsigned hits = 0;

	for (unsigned i = 0; i < LOOKUPS; i += 16) {
		for (unsigned j = 0; j < 16; j++) {
			keys[j] = &k[i + j];
			lens[j] = 8;
		}
		admit_cuckoo_contains_many(f, 16, keys, lens, out);
		for (unsigned j = 0; j < 16; j++)
			hits += out[j];
	}
	return hits;
}

/* admit_cuckoo_contains_many_u64(), 1024 keys a call: the keys' array as
 * the caller holds it. */
static __attribute__((noinline)) unsigned
loop_u64(const struct admit_cuckoo *f, const uint64_t *k)
{
	static bool out[1024];
	unsigned hits = 0;

	for (unsigned i = 0; i < LOOKUPS; i += 1024) {
		admit_cuckoo_contains_many_u64(f, 1024, k + i, out);
		for (unsigned j = 0; j < 1024; j++)
			hits += out[j];
	}
	return hits;
}

#ifdef HAVE_REFCF
static __attribute__((noinline)) unsigned
loop_ref(const struct bench_ref *r, const uint64_t *k)
{
	return (unsigned)bench_ref_contains_pass(r, k, LOOKUPS);
}
#endif

int
main(int argc, char **argv)
{
	unsigned bits = argc > 1 ? (unsigned)atoi(argv[1]) : 16;
	bool absent_keys = argc > 2 && !strcmp(argv[2], "absent");
	bool odd = argc > 3 && !strcmp(argv[3], "odd");
	const uint64_t *k;
	struct admit_cuckoo_config cfg = { .capacity = odd ? ODD_CAPACITY : ITEMS,
	                                   .fingerprint_bits = bits, .seed = 7 };
	struct admit_cuckoo *f;

#ifdef HAVE_REFCF
	struct bench_ref *r = bench_ref_new(ITEMS, bits);
#endif

	if ((bits != 8 && bits != 16) || admit_cuckoo_new(&cfg, &f) != ADMIT_OK ||
	    (argc > 2 && strcmp(argv[2], "absent") && strcmp(argv[2], "present")) ||
	    (argc > 3 && !odd)) {
		fprintf(stderr, "usage: lookup_instructions 8|16 [present|absent [odd]]\n");
		return 2;
	}
	for (uint64_t i = 0; i < ITEMS; i++) {
		uint64_t key = bench_key(i);

		(void)admit_cuckoo_insert(f, &key, 8);
#ifdef HAVE_REFCF
		(void)bench_ref_insert(r, key);
#endif
	}
	for (uint64_t i = 0; i < LOOKUPS; i++) {
		present[i] = bench_key(i * 3);
		absent[i] = bench_key(i | 1ull << 63);
	}
	k = absent_keys ? absent : present;
	printf("%s keys, hits: admit %u, inline %u, many %u, u64 %u",
	       absent_keys ? "absent" : "present", loop_admit(f, k),
	       loop_inline(f, k), loop_many(f, k), loop_u64(f, k));
#ifdef HAVE_REFCF
	printf(", reference %u", loop_ref(r, k));
	bench_ref_free(r);
#else
	printf(" (built without the reference filter)");
#endif
	putchar('\n');
	admit_cuckoo_free(f);
	return 0;
}
