/*
 * test_expiry - expiry.c's heap: entries come out in expiry order, only
 * when due, with their key and CAS; the byte budget refuses and counts;
 * clear empties it; bad keys are refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expiry.h"

static int failures;

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: FAIL %s\n", __FILE__, __LINE__, #cond); \
		failures++; \
	} \
} while (0)

static void
test_order(void)
{
	struct cached_expiry *e;
	struct cached_expiry_entry out;
	enum { N = 5000 };
	uint32_t last = 0;
	size_t popped = 0;
	char key[32];

	CHECK(cached_expiry_new(1u << 24, &e) == 0);
	srand(16);
	for (int i = 0; i < N; i++) {
		/* Expiry times 1..1000 with many ties; the CAS encodes it. */
		uint32_t t = 1 + (uint32_t)(rand() % 1000);
		int n = snprintf(key, sizeof(key), "k%u-%d", t, i);

		CHECK(cached_expiry_add(e, t, (uint64_t)t << 32 | (uint64_t)i, key,
		                        (size_t)n));
	}
	CHECK(cached_expiry_count(e) == N);
	CHECK(!cached_expiry_pop(e, 0, &out));  /* none due at time 0 */
	/* Due in two steps: nothing past 'now' comes out. */
	while (cached_expiry_pop(e, 500, &out)) {
		CHECK(out.exptime <= 500 && out.exptime >= last);
		CHECK(out.cas >> 32 == out.exptime);
		snprintf(key, sizeof(key), "k%u-%u", out.exptime,
		         (unsigned)(out.cas & 0xffffffffu));
		CHECK(out.klen == strlen(key) && !memcmp(out.key, key, out.klen));
		last = out.exptime;
		popped++;
	}
	while (cached_expiry_pop(e, 1000, &out)) {
		CHECK(out.exptime > 500 && out.exptime >= last);
		last = out.exptime;
		popped++;
	}
	CHECK(popped == N);
	CHECK(cached_expiry_count(e) == 0 && cached_expiry_bytes(e) == 0);
	cached_expiry_free(e);
}

static void
test_budget(void)
{
	struct cached_expiry *e;
	struct cached_expiry_entry out;
	char big[CACHED_KEY_MAX + 1];
	size_t n = 0;

	CHECK(cached_expiry_new(4096, &e) == 0);
	while (cached_expiry_add(e, 10, 1, "key", 3))
		n++;
	CHECK(n > 10 && cached_expiry_bytes(e) <= 4096);
	CHECK(cached_expiry_refused(e) == 1);
	CHECK(!cached_expiry_add(e, 10, 1, "key", 3));
	CHECK(cached_expiry_refused(e) == 2);
	cached_expiry_clear(e);
	CHECK(cached_expiry_count(e) == 0 && cached_expiry_bytes(e) == 0);
	CHECK(!cached_expiry_pop(e, 100, &out));
	/* After a clear the whole budget is there again. */
	CHECK(cached_expiry_add(e, 10, 1, "key", 3));
	memset(big, 'b', sizeof(big));
	CHECK(!cached_expiry_add(e, 10, 1, big, sizeof(big)));
	CHECK(cached_expiry_add(e, 5, 2, big, CACHED_KEY_MAX));
	CHECK(cached_expiry_pop(e, 5, &out) && out.klen == CACHED_KEY_MAX &&
	      out.cas == 2);
	CHECK(cached_expiry_new(10, NULL) != 0);
	cached_expiry_free(e);
	cached_expiry_free(NULL);
}

int
main(void)
{
	test_order();
	test_budget();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test_expiry: all checks passed\n");
	return 0;
}
