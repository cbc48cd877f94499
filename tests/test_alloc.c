/*
 * The allocator (alloc.h): the dense arena that holds cache entries, index
 * tables and the other small structures requests reach at random.  Its allocations are usable, zeroed when asked, counted by
 * fault injection and, with jemalloc, placed in memory advised into huge
 * pages, which a thread cache full of another arena's regions of the same
 * size must not change.
 */
#include "config.h"

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "testutil.h"

/* The library allocates with jemalloc (configure's HAVE_JEMALLOC; the
 * sanitizer builds do not). */
#if defined(HAVE_JEMALLOC) && !defined(ADMIT_NO_JEMALLOC)
#define ADMIT_TEST_JEMALLOC 1
#endif

#define N 40000         /* 4 MiB of 104-byte objects: two huge pages */
#define SIZE 104        /* an entry of an 8-byte key and a 32-byte value */

static void *obj[N];

START_TEST(dense_is_usable)
{
	unsigned char *z;

	for (unsigned i = 0; i < N; i++) {
		obj[i] = admit_dense_malloc(SIZE);
		ck_assert_ptr_nonnull(obj[i]);
		memset(obj[i], (int)i, SIZE);
	}
	for (unsigned i = 0; i < N; i++)
		ck_assert_uint_eq(((unsigned char *)obj[i])[SIZE - 1], i & 0xff);
	z = admit_dense_calloc(1000, 1);
	ck_assert_ptr_nonnull(z);
	for (unsigned i = 0; i < 1000; i++)
		ck_assert_uint_eq(z[i], 0);
	admit_dense_free(z);
	for (unsigned i = 0; i < N; i++)
		admit_dense_free(obj[i]);
	admit_dense_free(NULL);
}
END_TEST

START_TEST(dense_fails_when_told)
{
	admit_alloc_fail_nth(1);
	ck_assert_ptr_null(admit_dense_malloc(SIZE));
	admit_alloc_fail_nth(1);
	ck_assert_ptr_null(admit_dense_calloc(1, SIZE));
	admit_alloc_fail_nth(0);
	obj[0] = admit_dense_malloc(SIZE);
	ck_assert_ptr_nonnull(obj[0]);
	admit_dense_free(obj[0]);
}
END_TEST

/* Whether [p, p + 1) lies in a mapping advised huge: the "hg" of its
 * VmFlags in /proc/self/smaps.  -1 when smaps cannot say. */
static int
advised_huge(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false;
	int found = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') ==
		    line + strspn(line, "0123456789abcdef")) {
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			continue;
		}
		if (in && strncmp(line, "VmFlags:", 8) == 0) {
			found = strstr(line, " hg") != NULL;
			break;
		}
	}
	fclose(f);
	return found;
}

START_TEST(dense_is_advised_huge)
{
#ifdef ADMIT_TEST_JEMALLOC
	FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	void *other[64];
	unsigned huge = 0;

	if (!thp || advised_huge(&huge) < 0) {
		if (thp)
			fclose(thp);
		printf("dense_is_advised_huge: no THP or no smaps here; skipped\n");
		return;
	}
	fclose(thp);
	/* The thread cache now holds regions of this size from the default
	 * arena; the dense arena must not hand them out. */
	for (unsigned i = 0; i < 64; i++)
		other[i] = admit_malloc(SIZE);
	for (unsigned i = 0; i < 64; i++)
		admit_free(other[i]);
	for (unsigned i = 0; i < N; i++)
		ck_assert_ptr_nonnull(obj[i] = admit_dense_malloc(SIZE));
	for (unsigned i = 0; i < N; i += N / 64)
		huge += advised_huge(obj[i]) == 1;
	ck_assert_uint_eq(huge, (N + N / 64 - 1) / (N / 64));
	ck_assert_int_eq(advised_huge(&huge), 0);  /* the stack is not */
	for (unsigned i = 0; i < N; i++)
		admit_dense_free(obj[i]);
	/* A table under 2 MiB comes from the dense arena too. */
	obj[0] = admit_table_alloc(64 << 10);
	ck_assert_ptr_nonnull(obj[0]);
	ck_assert_int_eq(advised_huge(obj[0]), 1);
	admit_table_free(obj[0], 64 << 10);
#else
	printf("dense_is_advised_huge: built without jemalloc; skipped\n");
#endif
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("alloc");
	TCase *tc = tcase_create("dense");

	tcase_add_test(tc, dense_is_usable);
	tcase_add_test(tc, dense_fails_when_told);
	tcase_add_test(tc, dense_is_advised_huge);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
