/*
 * A first concurrent test (the stress harnesses go much further): writers
 * insert disjoint keys (every other block of 48 by one 8-byte-key batch
 * call) into a filter sized to end near 95 % load, so cuckoo
 * paths run constantly, while readers check that every key a writer has
 * published is found, and writers delete a third of their own keys.
 * Afterwards every surviving key is present and the size adds up.  Run it
 * under ThreadSanitizer (./configure --enable-tsan) for zero reports.
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <admit/admit.h>
#include <admit/cuckoo_inline.h>

#include "testutil.h"

#define MAX_WRITERS 4
#define PER_WRITER 60000
#define UNIQUE_KEYS 2000

struct shared {
	struct admit_cuckoo *f;
	int writers;
	_Atomic uint64_t published[MAX_WRITERS]; /* keys [0, n) inserted */
	_Atomic int writers_done;
	_Atomic uint64_t misses;                 /* false negatives seen */
	_Atomic unsigned unique_ok[UNIQUE_KEYS]; /* ADMIT_OK answers per key */
	_Atomic uint64_t errors;                 /* failed inserts/deletes */
};

struct worker {
	struct shared *sh;
	int id;
};

static uint64_t
key_id(int writer, uint64_t j)
{
	return (uint64_t)writer * PER_WRITER + j;
}

/* Keys j % 3 == 0 are deleted by their writer later: readers skip them. */
static bool
permanent(uint64_t j)
{
	return j % 3 != 0;
}

/* Every other block of a writer's keys goes in by one batch call (keys
 * whose buckets are full are set aside and placed together there). */
#define BLOCK 48

static void
insert_block(struct shared *sh, int id, uint64_t j0)
{
	uint64_t ids[BLOCK];
	enum admit_status st[BLOCK];

	if ((j0 / BLOCK) & 1) {
		for (uint64_t i = 0; i < BLOCK; i++)
			ids[i] = test_key(key_id(id, j0 + i));
		if (admit_cuckoo_insert_many_u64(sh->f, BLOCK, ids, st) != ADMIT_OK)
			atomic_fetch_add(&sh->errors, 1);
		return;
	}
	for (uint64_t i = 0; i < BLOCK; i++)
		if (admit_cuckoo_insert(sh->f, KEY(key_id(id, j0 + i))) != ADMIT_OK)
			atomic_fetch_add(&sh->errors, 1);
}

static void *
writer(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;

	for (uint64_t j0 = 0; j0 < PER_WRITER; j0 += BLOCK) {
		insert_block(sh, w->id, j0);
		/* release: a reader that sees j0 + BLOCK sees the inserts
		 * above. */
		atomic_store_explicit(&sh->published[w->id], j0 + BLOCK,
		                      memory_order_release);
		for (uint64_t j = j0; j < j0 + BLOCK; j++)
			if (j >= 300 && !permanent(j - 300) &&
			    admit_cuckoo_delete(sh->f, KEY(key_id(w->id, j - 300))) !=
			    ADMIT_OK)
				atomic_fetch_add(&sh->errors, 1);
	}
	for (uint64_t j = PER_WRITER - 300; j < PER_WRITER; j++)
		if (!permanent(j) &&
		    admit_cuckoo_delete(sh->f, KEY(key_id(w->id, j))) != ADMIT_OK)
			atomic_fetch_add(&sh->errors, 1);
	atomic_fetch_add(&sh->writers_done, 1);
	return NULL;
}

_Static_assert(PER_WRITER % BLOCK == 0, "whole blocks");

static void *
reader(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	uint64_t x = test_key((uint64_t)w->id + 77);
	size_t lens[16];
	const void *keys[16];
	uint64_t ids[16];
	bool out[16];

	while (atomic_load(&sh->writers_done) < sh->writers) {
		for (int b = 0; b < 16; b++) {
			int wr;
			uint64_t n, j;

			x = test_key(x);
			wr = (int)(x % (uint64_t)sh->writers);
			/* acquire: pairs with the writer's release of published. */
			n = atomic_load_explicit(&sh->published[wr], memory_order_acquire);
			if (n < 2) {
				ids[b] = UINT64_MAX; /* nothing to check yet */
				continue;
			}
			j = (x >> 20) % n;
			ids[b] = test_key(key_id(wr, permanent(j) ? j : 1));
		}
		/* Half the rounds single lookups (through the library or
		 * the inline fast path of admit/cuckoo_inline.h), half a
		 * batch. */
		if (x & 1) {
			for (int b = 0; b < 16; b++)
				if (ids[b] != UINT64_MAX &&
				    !((x & 2) ? admit_cuckoo_contains_inline(sh->f, &ids[b], 8)
				              : admit_cuckoo_contains(sh->f, &ids[b], 8)))
					atomic_fetch_add(&sh->misses, 1);
		} else {
			for (int b = 0; b < 16; b++) {
				keys[b] = &ids[b];
				lens[b] = 8;
			}
			admit_cuckoo_contains_many(sh->f, 16, keys, lens, out);
			for (int b = 0; b < 16; b++)
				if (ids[b] != UINT64_MAX && !out[b])
					atomic_fetch_add(&sh->misses, 1);
		}
	}
	return NULL;
}

/* All threads race to add the same keys once each. */
static void *
uniquer(void *arg)
{
	struct worker *w = arg;

	for (uint64_t k = 0; k < UNIQUE_KEYS; k++)
		if (admit_cuckoo_insert_unique(w->sh->f, KEY(k + (1ull << 41))) ==
		    ADMIT_OK)
			atomic_fetch_add(&w->sh->unique_ok[k], 1);
	return NULL;
}

static const int writer_counts[] = { 1, 2, 4 };
#define N_WRITER_COUNTS (int)(sizeof(writer_counts) / sizeof(writer_counts[0]))

/* Loop _i: writer_counts[_i % 3] writers, 16-bit fingerprints for the
 * first three, 8-bit for the next, 13-bit semi-sorted buckets for the last
 * (each layout has its own lookups). */
START_TEST(test_concurrent_insert_lookup_delete)
{
	struct shared sh = { .writers = writer_counts[_i % N_WRITER_COUNTS] };
	unsigned bits = _i < N_WRITER_COUNTS ? 16 : _i < 2 * N_WRITER_COUNTS ? 8 : 13;
	struct admit_cuckoo_config cfg = {
		/* Sized for the permanent keys plus the unique ones, so the live
		 * set peaks near 95 % and kicks run under the readers. */
		.capacity = (uint64_t)sh.writers * PER_WRITER * 2 / 3 + 300 * 4 + 2000,
		.fingerprint_bits = bits, .seed = 42, .stripes = 256,
		.semi_sorted = bits == 13,
	};
	int readers = 8 - sh.writers > 4 ? 4 : 8 - sh.writers;
	pthread_t th[16];
	struct worker w[16];
	struct admit_cuckoo_stats st;
	struct tally lost = TALLY_INIT;
	uint64_t expect = 0, added = 0;
	int t = 0;

	ck_assert_int_eq(admit_cuckoo_new(&cfg, &sh.f), ADMIT_OK);
	for (int i = 0; i < sh.writers; i++, t++) {
		w[t] = (struct worker){ &sh, i };
		ck_assert_int_eq(pthread_create(&th[t], NULL, writer, &w[t]), 0);
	}
	for (int i = 0; i < readers; i++, t++) {
		w[t] = (struct worker){ &sh, i };
		ck_assert_int_eq(pthread_create(&th[t], NULL, reader, &w[t]), 0);
	}
	for (int i = 0; i < sh.writers; i++, t++) {
		w[t] = (struct worker){ &sh, i };
		ck_assert_int_eq(pthread_create(&th[t], NULL, uniquer, &w[t]), 0);
	}
	for (int i = 0; i < t; i++)
		pthread_join(th[i], NULL);

	ck_assert_uint_eq(atomic_load(&sh.misses), 0);
	ck_assert_uint_eq(atomic_load(&sh.errors), 0);
	/* No key is added twice.  A key nobody added met a false positive
	 * (ADMIT_EXISTS, as the header allows): a matching fingerprint of
	 * another key in its buckets, about 8 x 2^-16 a key at this load, so
	 * 0.25 of the 2,000 on average, more than 5 with probability 2e-7;
	 * with 8 bits about 8 x 2^-8, 62 on average (standard deviation 8),
	 * more than 150 with negligible probability; with 13 bits about
	 * 8 x 2^-13, 2 on average, more than 20 with negligible probability.
	 * Whether one occurs
	 * depends on which writer keys are in at the time (that key may be
	 * deleted since: only added keys must be found). */
	for (int k = 0; k < UNIQUE_KEYS; k++) {
		unsigned ok = atomic_load(&sh.unique_ok[k]);

		ck_assert_uint_le(ok, 1);
		added += ok;
		ck_assert(!ok || admit_cuckoo_contains(sh.f, KEY(k + (1ull << 41))));
	}
	ck_assert_uint_ge(added, UNIQUE_KEYS - (bits == 16 ? 5 : bits == 13 ? 20 : 150));
	for (int i = 0; i < sh.writers; i++)
		for (uint64_t j = 0; j < PER_WRITER; j++)
			if (permanent(j)) {
				tally(&lost, admit_cuckoo_contains(sh.f, KEY(key_id(i, j))),
				      key_id(i, j));
				expect++;
			}
	ck_assert_tally(lost, "keys lost");
	ck_assert_uint_eq(admit_cuckoo_size(sh.f), expect + added);
	ck_assert_int_eq(admit_cuckoo_stats(sh.f, &st), ADMIT_OK);
	fprintf(stderr, "%u bits, %d writers, %d readers: %llu items, %llu kicks, "
	        "%llu read retries, %llu path retries\n", bits, sh.writers, readers,
	        (unsigned long long)st.items, (unsigned long long)st.kicks,
	        (unsigned long long)st.read_retries,
	        (unsigned long long)st.path_retries);
	admit_cuckoo_free(sh.f);
}
END_TEST

struct counter_arg {
	struct admit_cuckoo *f;
	_Atomic uint64_t errors;
};

static void *
incrementer(void *arg)
{
	struct counter_arg *c = arg;

	for (uint64_t k = 0; k < 5000; k++)
		if (admit_cuckoo_increment(c->f, KEY(k)) != ADMIT_OK)
			atomic_fetch_add(&c->errors, 1);
	return NULL;
}

/* Concurrent increments of the same keys are never lost (below 15). */
START_TEST(test_concurrent_increments)
{
	struct admit_cuckoo_config cfg = { .capacity = 5000, .counting = true,
	                                   .seed = 3 };
	struct counter_arg c = { 0 };
	struct tally t = TALLY_INIT;
	pthread_t th[6];
	unsigned low = 0;

	ck_assert_int_eq(admit_cuckoo_new(&cfg, &c.f), ADMIT_OK);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, incrementer, &c), 0);
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	ck_assert_uint_eq(atomic_load(&c.errors), 0);
	for (uint64_t k = 0; k < 5000; k++) {
		unsigned n = admit_cuckoo_count(c.f, KEY(k));

		tally(&t, n >= 6, k);
		low += n == 6;
	}
	ck_assert_tally(t, "increments lost");
	/* Above 6 only by a fingerprint collision, a fraction of a percent. */
	ck_assert_uint_ge(low, 4950);
	admit_cuckoo_free(c.f);
}
END_TEST

struct halve_arg {
	struct admit_cuckoo *f;
	_Atomic int phase; /* 1: kicking has begun, 2: the halve is done */
};

/* Inserts new keys into a nearly full table, so most need cuckoo paths,
 * until the halve running beside it is over. */
static void *
kicker(void *arg)
{
	struct halve_arg *h = arg;

	for (uint64_t k = 0;; k++) {
		enum admit_status st = admit_cuckoo_increment(h->f, KEY(k + (1ull << 42)));

		if (k == 0)
			atomic_store(&h->phase, 1);
		if (st != ADMIT_OK || atomic_load(&h->phase) == 2)
			return NULL;
	}
}

/*
 * One halve halves every counter at most once, even while kicks move
 * entries.  The bug this guards against: the halve walks the buckets in
 * order, so an entry kicked from a bucket it had done to one it had not yet
 * reached was halved twice, 2 -> 1 -> 0, and deleted.
 */
START_TEST(test_halve_during_kicks)
{
	struct admit_cuckoo_config cfg = { .capacity = 100000, .counting = true,
	                                   .seed = 11 + (uint64_t)_i };
	struct halve_arg h = { 0 };
	struct tally t = TALLY_INIT;
	pthread_t th;

	ck_assert_int_eq(admit_cuckoo_new(&cfg, &h.f), ADMIT_OK);
	for (uint64_t k = 0; k < 90000; k++) {
		ck_assert_int_eq(admit_cuckoo_increment(h.f, KEY(k)), ADMIT_OK);
		ck_assert_int_eq(admit_cuckoo_increment(h.f, KEY(k)), ADMIT_OK);
	}
	ck_assert_int_eq(pthread_create(&th, NULL, kicker, &h), 0);
	while (atomic_load(&h.phase) == 0)
		sched_yield();
	ck_assert_int_eq(admit_cuckoo_halve(h.f), ADMIT_OK);
	atomic_store(&h.phase, 2);
	pthread_join(th, NULL);
	for (uint64_t k = 0; k < 90000; k++)
		tally(&t, admit_cuckoo_count(h.f, KEY(k)) >= 1, k);
	ck_assert_tally(t, "counters of 2 halved to 0 by one halve");
	admit_cuckoo_free(h.f);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cuckoo-threads");
	TCase *tc = tcase_create("threads");

	tcase_add_loop_test(tc, test_concurrent_insert_lookup_delete, 0,
	                    3 * N_WRITER_COUNTS);
	tcase_add_test(tc, test_concurrent_increments);
	tcase_add_loop_test(tc, test_halve_during_kicks, 0, 8);
	tcase_set_timeout(tc, 600);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
