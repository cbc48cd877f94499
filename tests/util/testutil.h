/* Helpers shared by the unit tests. */
#ifndef ADMIT_TESTUTIL_H
#define ADMIT_TESTUTIL_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "prng.h"

/* A bijection (prng.h), so distinct i give distinct keys; keys i and
 * i + 2^40 are the "present" and "absent" families of a test. */
static inline uint64_t
test_key(uint64_t i)
{
	return prng_mix(i);
}

/* The two (key, len) arguments for key number i, an 8-byte key. */
#define KEY(i) (&(uint64_t){ test_key(i) }), sizeof(uint64_t)

/* Check records every ck_assert (a write to its result pipe): far too slow
 * for a million keys.  Hot loops tally their failures and assert once. */
struct tally {
	uint64_t bad, first;
};
#define TALLY_INIT { 0, UINT64_MAX }

static inline void
tally(struct tally *t, bool ok, uint64_t i)
{
	if (!ok && t->bad++ == 0)
		t->first = i;
}

#define ck_assert_tally(t, what) \
	ck_assert_msg((t).bad == 0, "%s: %llu failures, the first at %llu", \
	              (what), (unsigned long long)(t).bad, \
	              (unsigned long long)(t).first)

/* Runs every suite of sr, frees it, and gives main's exit status. */
static inline int
test_run(SRunner *sr)
{
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

Suite *snapshot_suite(void);

#endif
