/*
 * Unit tests for the embedders' admit_lru calls (include/admit/lru.h, the
 * block after admit_lru_stats): peek, get_with, compute, the hashed calls,
 * per-entry expiry and set_parts.  Linked against libadmit.la, so each test also shows
 * the name is exported.  Seeds are fixed.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <admit/admit.h>

#include "testutil.h"

#define SEED 0x5eed1e55ull

static struct admit_lru *
make(uint64_t cap, uint64_t bytes, enum admit_lru_policy pol, unsigned shards)
{
	struct admit_lru_config cfg = {
		.capacity = cap, .capacity_bytes = bytes, .policy = pol,
		.shards = shards, .seed = SEED,
	};
	struct admit_lru *c = NULL;

	ck_assert_int_eq(admit_lru_new(&cfg, &c), ADMIT_OK);
	return c;
}

static struct admit_lru_stats
stats(struct admit_lru *c)
{
	struct admit_lru_stats st;

	ck_assert_int_eq(admit_lru_stats(c, &st), ADMIT_OK);
	return st;
}

/* ---- peek ----------------------------------------------------------------- */

START_TEST(test_peek_bad_args)
{
	struct admit_lru *c = make(10, 0, ADMIT_LRU_ADAPTIVE, 1);
	char buf[4];
	size_t vlen = 77;

	ck_assert_int_eq(admit_lru_peek(NULL, "k", 1, buf, 4, &vlen), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_peek(c, NULL, 1, buf, 4, &vlen), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_peek(c, "k", 1, NULL, 4, &vlen), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_peek(c, "k", 1, buf, 4, NULL), ADMIT_EINVAL);
	ck_assert_uint_eq(vlen, 77);
	ck_assert_int_eq(admit_lru_peek(c, "k", 1, buf, 4, &vlen), ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_peek(c, NULL, 0, NULL, 0, &vlen), ADMIT_NOTFOUND);
	admit_lru_free(c);
}
END_TEST

START_TEST(test_peek_reads)
{
	struct admit_lru *c = make(10, 0, ADMIT_LRU_ADAPTIVE, 1);
	char buf[8];
	size_t vlen = 0;

	ck_assert_int_eq(admit_lru_set(c, "k", 1, "value", 5), ADMIT_OK);
	ck_assert_int_eq(admit_lru_peek(c, "k", 1, buf, 4, &vlen), ADMIT_EBUFFER);
	ck_assert_uint_eq(vlen, 5);
	ck_assert_int_eq(admit_lru_peek(c, "k", 1, NULL, 0, &vlen), ADMIT_EBUFFER);
	ck_assert_int_eq(admit_lru_peek(c, "k", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
	ck_assert(vlen == 5 && memcmp(buf, "value", 5) == 0);
	ck_assert_int_eq(admit_lru_set(c, "", 0, "", 0), ADMIT_OK);
	ck_assert_int_eq(admit_lru_peek(c, "", 0, NULL, 0, &vlen), ADMIT_OK);
	ck_assert_uint_eq(vlen, 0);
	admit_lru_free(c);
}
END_TEST

/* A TinyLFU cache of ten entries holding ten keys, each recorded once by
 * its set, then read twenty times each (get, or peek); then a new key set
 * until it is admitted over the least recently used: how many sets that
 * took (6: not in 5).  The candidate's estimate is its sets so far. */
static unsigned
sets_to_admit(bool get)
{
	struct admit_lru *c = make(10, 0, ADMIT_LRU_TINYLFU, 1);
	char buf[8];
	size_t vlen;
	unsigned n;

	for (uint64_t i = 0; i < 10; i++)
		ck_assert_int_eq(admit_lru_set(c, KEY(i), "v", 1), ADMIT_OK);
	for (int round = 0; round < 20; round++)
		for (uint64_t i = 0; i < 10; i++)
			ck_assert_int_eq(get ? admit_lru_get(c, KEY(i), buf, sizeof(buf), &vlen)
			                     : admit_lru_peek(c, KEY(i), buf, sizeof(buf), &vlen),
			                 ADMIT_OK);
	for (n = 1; n <= 5; n++)
		if (admit_lru_set(c, KEY(100), "v", 1) == ADMIT_OK)
			break;
	admit_lru_free(c);
	return n;
}

/* A peek is no access: exact LRU order, the hit and miss counts and the
 * frequency sketch are as if it never happened; a get in its place changes
 * all three. */
START_TEST(test_peek_leaves_no_trace)
{
	struct admit_lru *c = make(3, 0, ADMIT_LRU_PLAIN, 1);
	struct admit_lru_stats st;
	char buf[8];
	size_t vlen;

	ck_assert_int_eq(admit_lru_set(c, "a", 1, "1", 1), ADMIT_OK);
	ck_assert_int_eq(admit_lru_set(c, "b", 1, "2", 1), ADMIT_OK);
	ck_assert_int_eq(admit_lru_set(c, "c", 1, "3", 1), ADMIT_OK);
	ck_assert_int_eq(admit_lru_peek(c, "a", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
	ck_assert_int_eq(admit_lru_peek(c, "z", 1, buf, sizeof(buf), &vlen), ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_set(c, "d", 1, "4", 1), ADMIT_OK); /* a goes */
	ck_assert_int_eq(admit_lru_peek(c, "a", 1, buf, sizeof(buf), &vlen), ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_peek(c, "b", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
	st = stats(c);
	ck_assert_uint_eq(st.hits + st.misses, 0);
	/* With a get, b would stay and c go. */
	ck_assert_int_eq(admit_lru_get(c, "b", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
	ck_assert_int_eq(admit_lru_set(c, "e", 1, "5", 1), ADMIT_OK); /* c goes */
	ck_assert_int_eq(admit_lru_peek(c, "b", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
	ck_assert_int_eq(admit_lru_peek(c, "c", 1, buf, sizeof(buf), &vlen), ADMIT_NOTFOUND);
	st = stats(c);
	ck_assert_uint_eq(st.hits, 1);
	admit_lru_free(c);

	/* The frequencies: after peeks, a new key set twice beats a victim
	 * its set recorded once; after gets it cannot in five sets. */
	ck_assert_uint_eq(sets_to_admit(false), 2);
	ck_assert_uint_gt(sets_to_admit(true), 5);
}
END_TEST

/* ---- get_many_u64 ------------------------------------------------------- */

START_TEST(test_get_many_bad_args)
{
	struct admit_lru *c = make(10, 0, ADMIT_LRU_ADAPTIVE, 1);
	uint64_t keys[2] = { 1, 2 };
	char vals[2][8];
	size_t vlens[2] = { 77, 77 };
	enum admit_status out[2] = { ADMIT_FULL, ADMIT_FULL };

	ck_assert_int_eq(admit_lru_get_many_u64(NULL, 2, keys, vals, 8, vlens, out), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_many_u64(c, 2, NULL, vals, 8, vlens, out), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_many_u64(c, 2, keys, NULL, 8, vlens, out), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_many_u64(c, 2, keys, vals, 8, NULL, out), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_many_u64(c, 2, keys, vals, 8, vlens, NULL), ADMIT_EINVAL);
	/* n * vsize past SIZE_MAX: no slot address could hold it. */
	ck_assert_int_eq(admit_lru_get_many_u64(c, 2, keys, vals, SIZE_MAX / 2 + 1, vlens, out),
	                 ADMIT_EINVAL);
	ck_assert(vlens[0] == 77 && vlens[1] == 77);
	ck_assert(out[0] == ADMIT_FULL && out[1] == ADMIT_FULL);
	ck_assert_uint_eq(stats(c).misses, 0);
	/* Nothing to do: n = 0 with NULL arrays, and no value space. */
	ck_assert_int_eq(admit_lru_get_many_u64(c, 0, NULL, NULL, 8, vlens, out), ADMIT_OK);
	ck_assert_int_eq(admit_lru_get_many_u64(c, 2, keys, NULL, 0, vlens, out), ADMIT_OK);
	ck_assert(out[0] == ADMIT_NOTFOUND && out[1] == ADMIT_NOTFOUND);
	ck_assert_uint_eq(stats(c).misses, 2);
	admit_lru_free(c);
}
END_TEST

/* 70 keys, past several batches of the call's: every third absent, the
 * others with values of 0 to 12 bytes in 8-byte slots.  Each result is
 * the one get gives, and the counts are those of 70 gets. */
START_TEST(test_get_many_reads)
{
	enum { N = 70, SLOT = 8 };
	struct admit_lru *c = make(1000, 0, ADMIT_LRU_ADAPTIVE, 4);
	uint64_t keys[N];
	unsigned char vals[N][SLOT], want[16], buf[16];
	size_t vlens[N], len;
	enum admit_status out[N];
	unsigned hits = 0, misses = 0;
	struct admit_lru_stats st;

	for (unsigned i = 0; i < N; i++) {
		keys[i] = test_key(i);
		memset(want, 'a' + i % 26, sizeof(want));
		if (i % 3)
			ck_assert_int_eq(admit_lru_set(c, &keys[i], 8, want, i % 13), ADMIT_OK);
	}
	memset(vals, 0, sizeof(vals));
	ck_assert_int_eq(admit_lru_get_many_u64(c, N, keys, vals, SLOT, vlens, out), ADMIT_OK);
	for (unsigned i = 0; i < N; i++) {
		enum admit_status one = admit_lru_peek(c, &keys[i], 8, buf, SLOT, &len);

		ck_assert_int_eq(out[i], one);
		if (i % 3 == 0) {
			ck_assert_int_eq(out[i], ADMIT_NOTFOUND);
			ck_assert_uint_eq(vlens[i], 0);
			misses++;
		} else if (i % 13 > SLOT) {
			ck_assert_int_eq(out[i], ADMIT_EBUFFER);
			ck_assert_uint_eq(vlens[i], i % 13);
		} else {
			ck_assert_int_eq(out[i], ADMIT_OK);
			ck_assert_uint_eq(vlens[i], i % 13);
			memset(want, 'a' + i % 26, sizeof(want));
			ck_assert(memcmp(vals[i], want, vlens[i]) == 0);
			hits++;
		}
	}
	st = stats(c);
	ck_assert_uint_eq(st.hits, hits);
	ck_assert_uint_eq(st.misses, misses);
	admit_lru_free(c);
}
END_TEST

/* A key of the batch is an access, as a get's: under exact LRU it is kept
 * where a key the batch did not name goes first. */
START_TEST(test_get_many_is_access)
{
	struct admit_lru *c = make(3, 0, ADMIT_LRU_PLAIN, 1);
	uint64_t k[4] = { test_key(1), test_key(2), test_key(3), test_key(4) };
	char vals[2][4], buf[4];
	size_t vlens[2], len;
	enum admit_status out[2];

	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(admit_lru_set(c, &k[i], 8, "v", 1), ADMIT_OK);
	/* k[0] and k[1] read: k[2] is now the least recently used. */
	ck_assert_int_eq(admit_lru_get_many_u64(c, 2, k, vals, 4, vlens, out), ADMIT_OK);
	ck_assert(out[0] == ADMIT_OK && out[1] == ADMIT_OK);
	ck_assert_int_eq(admit_lru_set(c, &k[3], 8, "v", 1), ADMIT_OK);
	ck_assert_int_eq(admit_lru_peek(c, &k[2], 8, buf, 4, &len), ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_peek(c, &k[0], 8, buf, 4, &len), ADMIT_OK);
	ck_assert_int_eq(admit_lru_peek(c, &k[1], 8, buf, 4, &len), ADMIT_OK);
	admit_lru_free(c);
}
END_TEST

/* Keys of any length: the empty key, short and long ones (a 300-byte key
 * spans several lines), present and absent, through the groups of the call;
 * each result is a peek's, the counts those of the gets.  A NULL key of
 * nonzero length anywhere refuses the whole call before any is read. */
START_TEST(test_get_many_any_keys)
{
	enum { N = 40, SLOT = 16 };
	struct admit_lru *c = make(1000, 0, ADMIT_LRU_ADAPTIVE, 4);
	static char store[N][300];
	const void *keys[N];
	size_t klens[N], vlens[N], len;
	unsigned char vals[N][SLOT], buf[SLOT];
	enum admit_status out[N];
	unsigned hits = 0, misses = 0;
	struct admit_lru_stats st;

	for (unsigned i = 0; i < N; i++) {
		klens[i] = (size_t[]){ 0, 1, 8, 24, 300 }[i % 5];
		memset(store[i], 'k', sizeof(store[i]));
		snprintf(store[i], sizeof(store[i]), "%u", i);
		if (klens[i] && klens[i] < 3)
			klens[i] = strlen(store[i]);  /* the short keys differ */
		keys[i] = store[i];
		if (i % 4 != 3)  /* every fourth absent */
			ck_assert_int_eq(admit_lru_set(c, keys[i], klens[i], store[i], i % SLOT),
			                 ADMIT_OK);
	}
	ck_assert_int_eq(admit_lru_get_many(c, N, keys, klens, vals, SLOT, vlens, out), ADMIT_OK);
	for (unsigned i = 0; i < N; i++) {
		ck_assert_int_eq(out[i], admit_lru_peek(c, keys[i], klens[i], buf, SLOT, &len));
		if (out[i] == ADMIT_OK) {
			ck_assert_uint_eq(vlens[i], len);
			ck_assert(memcmp(vals[i], buf, len) == 0);
			hits++;
		} else {
			ck_assert_int_eq(out[i], ADMIT_NOTFOUND);
			misses++;
		}
	}
	/* The empty key (every fifth) is one key: each of its reads finds
	 * the value stored last, whatever its own i. */
	ck_assert_uint_eq(hits + misses, N);
	ck_assert_uint_gt(hits, N / 2);
	st = stats(c);
	ck_assert_uint_eq(st.hits, hits);
	ck_assert_uint_eq(st.misses, misses);

	ck_assert_int_eq(admit_lru_get_many(c, N, NULL, klens, vals, SLOT, vlens, out), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_many(c, N, keys, NULL, vals, SLOT, vlens, out), ADMIT_EINVAL);
	keys[N - 1] = NULL;
	out[0] = ADMIT_FULL;
	ck_assert_int_eq(admit_lru_get_many(c, N, keys, klens, vals, SLOT, vlens, out), ADMIT_EINVAL);
	ck_assert_int_eq(out[0], ADMIT_FULL);
	ck_assert_uint_eq(stats(c).hits, hits);
	ck_assert_uint_eq(stats(c).misses, misses);
	klens[N - 1] = 0;  /* NULL with length 0 is the empty key */
	ck_assert_int_eq(admit_lru_get_many(c, N, keys, klens, vals, SLOT, vlens, out), ADMIT_OK);
	ck_assert_int_eq(out[N - 1], admit_lru_peek(c, "", 0, buf, SLOT, &len));
	ck_assert_int_eq(admit_lru_get_many(c, 0, NULL, NULL, NULL, SLOT, vlens, out), ADMIT_OK);
	admit_lru_free(c);
}
END_TEST

/* ---- get_with -------------------------------------------------------------- */

struct seen {
	int calls;
	size_t vlen;
	char buf[64];
};

static void
see(const void *value, size_t vlen, void *arg)
{
	struct seen *sn = arg;

	sn->calls++;
	sn->vlen = vlen;
	if (vlen && vlen <= sizeof(sn->buf))
		memcpy(sn->buf, value, vlen);
}

START_TEST(test_get_with)
{
	struct admit_lru *c = make(3, 0, ADMIT_LRU_PLAIN, 1);
	struct seen sn = { 0 };
	struct admit_lru_stats st;
	char buf[8];
	size_t vlen;

	ck_assert_int_eq(admit_lru_get_with(NULL, "a", 1, see, &sn), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_with(c, NULL, 1, see, &sn), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_with(c, "a", 1, NULL, &sn), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_with(c, "a", 1, see, &sn), ADMIT_NOTFOUND);
	ck_assert_int_eq(sn.calls, 0);
	ck_assert_int_eq(admit_lru_set(c, "a", 1, "one", 3), ADMIT_OK);
	ck_assert_int_eq(admit_lru_set(c, "b", 1, "", 0), ADMIT_OK);
	ck_assert_int_eq(admit_lru_set(c, "c", 1, "three", 5), ADMIT_OK);
	ck_assert_int_eq(admit_lru_get_with(c, "a", 1, see, &sn), ADMIT_OK);
	ck_assert(sn.calls == 1 && sn.vlen == 3 && memcmp(sn.buf, "one", 3) == 0);
	ck_assert_int_eq(admit_lru_get_with(c, "b", 1, see, &sn), ADMIT_OK);
	ck_assert(sn.calls == 2 && sn.vlen == 0);
	/* Counted as gets: a and b were used, so c is the LRU victim. */
	ck_assert_int_eq(admit_lru_set(c, "d", 1, "4", 1), ADMIT_OK);
	ck_assert_int_eq(admit_lru_peek(c, "c", 1, buf, sizeof(buf), &vlen), ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_peek(c, "a", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
	st = stats(c);
	ck_assert_uint_eq(st.hits, 2);
	ck_assert_uint_eq(st.misses, 1);
	admit_lru_free(c);
}
END_TEST

/* A lent value is whole while a writer replaces it: every value is
 * len(i) bytes of the byte i, and the reader checks both. */
enum { LEND_ROUNDS = 20000 };

static size_t
lend_len(unsigned char b)
{
	return 16 + (size_t)b * 7;
}

struct lend {
	struct admit_lru *c;
	atomic_bool stop;
	atomic_ulong bad, hits;
};

static void
check_lent(const void *value, size_t vlen, void *arg)
{
	struct lend *l = arg;
	const unsigned char *v = value;
	bool ok = vlen == lend_len(v[0]);

	for (size_t i = 1; ok && i < vlen; i++)
		ok = v[i] == v[0];
	if (!ok)
		atomic_fetch_add(&l->bad, 1);
	atomic_fetch_add_explicit(&l->hits, 1, memory_order_relaxed);
}

static void *
lend_reader(void *arg)
{
	struct lend *l = arg;

	while (!atomic_load(&l->stop))
		admit_lru_get_with(l->c, "k", 1, check_lent, l);
	return NULL;
}

START_TEST(test_get_with_whole)
{
	static unsigned char v[16 + 255 * 7];
	struct lend l = { .c = make(64, 0, ADMIT_LRU_ADAPTIVE, 1) };
	pthread_t t;

	ck_assert_int_eq(admit_lru_set(l.c, "k", 1, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16),
	                 ADMIT_OK);
	ck_assert_int_eq(pthread_create(&t, NULL, lend_reader, &l), 0);
	for (unsigned i = 0; i < LEND_ROUNDS; i++) {
		unsigned char b = (unsigned char)i;

		memset(v, b, lend_len(b));
		ck_assert_int_eq(admit_lru_set(l.c, "k", 1, v, lend_len(b)), ADMIT_OK);
		if (i % 8 == 0)
			admit_lru_delete(l.c, "k", 1);
	}
	atomic_store(&l.stop, true);
	pthread_join(t, NULL);
	ck_assert_uint_eq(atomic_load(&l.bad), 0);
	ck_assert_uint_gt(atomic_load(&l.hits), 0);
	admit_lru_free(l.c);
}
END_TEST

/* ---- compute -------------------------------------------------------------- */

/* An updater driven by a script: what it saw, what it answers. */
struct script {
	enum admit_lru_verdict verdict;
	const char *value;      /* stored by STORE (NULL: no alloc) */
	size_t alloc_len;       /* used when value is NULL and alloc is set */
	bool alloc;
	int calls;
	bool found;
	char old[32];
	size_t old_len;
};

static enum admit_lru_verdict
scripted(struct admit_lru_update *up, void *arg)
{
	struct script *sc = arg;

	sc->calls++;
	sc->found = up->found;
	sc->old_len = up->old_len;
	if (up->old_len && up->old_len <= sizeof(sc->old))
		memcpy(sc->old, up->old, up->old_len);
	if (sc->value) {
		char *b = admit_lru_update_alloc(up, strlen(sc->value));

		if (b)
			memcpy(b, sc->value, strlen(sc->value));
	} else if (sc->alloc) {
		admit_lru_update_alloc(up, sc->alloc_len);
	}
	return sc->verdict;
}

static enum admit_status
run(struct admit_lru *c, const char *key, struct script *sc)
{
	return admit_lru_compute(c, key, strlen(key), scripted, sc);
}

static bool
value_is(struct admit_lru *c, const char *key, const char *want)
{
	char buf[64];
	size_t vlen;

	if (admit_lru_peek(c, key, strlen(key), buf, sizeof(buf), &vlen) != ADMIT_OK)
		return want == NULL;
	return want && vlen == strlen(want) && memcmp(buf, want, vlen) == 0;
}

START_TEST(test_compute_bad_args)
{
	struct admit_lru *c = make(10, 0, ADMIT_LRU_ADAPTIVE, 1);
	struct script sc = { .verdict = ADMIT_LRU_STORE, .value = "v" };

	ck_assert_int_eq(admit_lru_compute(NULL, "k", 1, scripted, &sc), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_compute(c, NULL, 1, scripted, &sc), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_compute(c, "k", 1, NULL, &sc), ADMIT_EINVAL);
	ck_assert_int_eq(sc.calls, 0);
	ck_assert_ptr_null(admit_lru_update_alloc(NULL, 1));
	ck_assert(value_is(c, "k", NULL));
	/* STORE without a buffer, an unknown verdict: nothing changes. */
	ck_assert_int_eq(run(c, "k", &(struct script){ .verdict = ADMIT_LRU_STORE }),
	                 ADMIT_EINVAL);
	ck_assert(value_is(c, "k", NULL));
	ck_assert_int_eq(admit_lru_set(c, "k", 1, "old", 3), ADMIT_OK);
	ck_assert_int_eq(run(c, "k", &(struct script){ .verdict = ADMIT_LRU_STORE }),
	                 ADMIT_EINVAL);
	ck_assert_int_eq(run(c, "k", &(struct script){
		.verdict = (enum admit_lru_verdict)7, .value = "new" }), ADMIT_EINVAL);
	ck_assert(value_is(c, "k", "old"));
	/* A value that cannot fit any shard. */
	ck_assert_int_eq(run(c, "k", &(struct script){ .verdict = ADMIT_LRU_STORE,
		.alloc = true, .alloc_len = SIZE_MAX / 2 }), ADMIT_ETOOBIG);
	ck_assert(value_is(c, "k", "old"));
	admit_lru_free(c);

	c = make(0, 4096, ADMIT_LRU_ADAPTIVE, 1);
	ck_assert_int_eq(admit_lru_set(c, "k", 1, "old", 3), ADMIT_OK);
	ck_assert_int_eq(run(c, "k", &(struct script){ .verdict = ADMIT_LRU_STORE,
		.alloc = true, .alloc_len = 4096 }), ADMIT_ETOOBIG);
	ck_assert(value_is(c, "k", "old"));
	admit_lru_free(c);
}
END_TEST

START_TEST(test_compute_verdicts)
{
	struct admit_lru *c = make(10, 0, ADMIT_LRU_ADAPTIVE, 1);
	struct admit_lru_stats st;
	struct script sc;

	sc = (struct script){ .verdict = ADMIT_LRU_KEEP, .value = "x" };
	ck_assert_int_eq(run(c, "k", &sc), ADMIT_OK);  /* absent, refused */
	ck_assert(sc.calls == 1 && !sc.found && sc.old_len == 0);
	ck_assert(value_is(c, "k", NULL));
	sc = (struct script){ .verdict = ADMIT_LRU_REMOVE };
	ck_assert_int_eq(run(c, "k", &sc), ADMIT_OK);
	ck_assert(value_is(c, "k", NULL));
	sc = (struct script){ .verdict = ADMIT_LRU_STORE, .value = "first" };
	ck_assert_int_eq(run(c, "k", &sc), ADMIT_OK);  /* add if absent */
	ck_assert(value_is(c, "k", "first"));
	sc = (struct script){ .verdict = ADMIT_LRU_KEEP, .value = "ignored" };
	ck_assert_int_eq(run(c, "k", &sc), ADMIT_OK);
	ck_assert(sc.found && sc.old_len == 5 && memcmp(sc.old, "first", 5) == 0);
	ck_assert(value_is(c, "k", "first"));
	sc = (struct script){ .verdict = ADMIT_LRU_STORE, .value = "second" };
	ck_assert_int_eq(run(c, "k", &sc), ADMIT_OK);
	ck_assert(value_is(c, "k", "second"));
	sc = (struct script){ .verdict = ADMIT_LRU_STORE, .value = "" };
	ck_assert_int_eq(run(c, "k", &sc), ADMIT_OK);
	ck_assert(value_is(c, "k", ""));
	sc = (struct script){ .verdict = ADMIT_LRU_REMOVE };
	ck_assert_int_eq(run(c, "k", &sc), ADMIT_OK);
	ck_assert(sc.found && sc.old_len == 0);
	ck_assert(value_is(c, "k", NULL));
	st = stats(c);
	/* Seven computes: three on an absent key, four on a present one. */
	ck_assert_uint_eq(st.misses, 3);
	ck_assert_uint_eq(st.hits, 4);
	ck_assert_uint_eq(st.entries, 0);
	admit_lru_free(c);
}
END_TEST

/* Append: the updater reads old and writes old + suffix into the new
 * entry, in place. */
static enum admit_lru_verdict
append(struct admit_lru_update *up, void *arg)
{
	const char *suffix = arg;
	size_t n = strlen(suffix);
	char *b;

	if (!up->found)
		return ADMIT_LRU_KEEP;
	b = admit_lru_update_alloc(up, up->old_len + n);
	if (!b)
		return ADMIT_LRU_KEEP;
	memcpy(b, up->old, up->old_len);
	memcpy(b + up->old_len, suffix, n);
	/* A second buffer replaces the first. */
	b = admit_lru_update_alloc(up, up->old_len + n);
	if (!b)
		return ADMIT_LRU_KEEP;
	memcpy(b, up->old, up->old_len);
	memcpy(b + up->old_len, suffix, n);
	return ADMIT_LRU_STORE;
}

START_TEST(test_compute_append)
{
	struct admit_lru *c = make(10, 0, ADMIT_LRU_PLAIN, 1);

	ck_assert_int_eq(admit_lru_compute(c, "k", 1, append, "x"), ADMIT_OK);
	ck_assert(value_is(c, "k", NULL));
	ck_assert_int_eq(admit_lru_set(c, "k", 1, "ab", 2), ADMIT_OK);
	ck_assert_int_eq(admit_lru_compute(c, "k", 1, append, "cd"), ADMIT_OK);
	ck_assert_int_eq(admit_lru_compute(c, "k", 1, append, "e"), ADMIT_OK);
	ck_assert(value_is(c, "k", "abcde"));
	admit_lru_free(c);
}
END_TEST

/* One access: a trace run with get-then-set-on-miss and the same trace run
 * with one compute per request (STORE when absent, KEEP or STORE of the same
 * value when present) leave the same counters and the same keys.  A second
 * frequency record or a second count per compute would change them.  The
 * admission policies run at a capacity whose lists are too short for quiet
 * hits (policy.h): whether a get's hit is quiet depends on how many reads
 * its ring still holds, which a compute, draining first, never sees. */
static enum admit_lru_verdict
fill_or_touch(struct admit_lru_update *up, void *arg)
{
	bool rewrite = *(bool *)arg;
	void *b;

	if (up->found && !rewrite)
		return ADMIT_LRU_KEEP;
	b = admit_lru_update_alloc(up, 1);
	if (!b)
		return ADMIT_LRU_KEEP;
	memcpy(b, "v", 1);
	return ADMIT_LRU_STORE;
}

START_TEST(test_compute_is_one_access)
{
	static const enum admit_lru_policy pol[] = {
		ADMIT_LRU_PLAIN, ADMIT_LRU_TINYLFU, ADMIT_LRU_WTINYLFU,
	};
	enum { N = 60000 };
	bool plain = pol[_i / 2] == ADMIT_LRU_PLAIN;
	unsigned cap = plain ? 200 : 3, span = plain ? 2000 : 10;
	struct admit_lru *a = make(cap, 0, pol[_i / 2], 1);
	struct admit_lru *b = make(cap, 0, pol[_i / 2], 1);
	bool rewrite = _i % 2;
	struct admit_lru_stats sa, sb;
	struct prng rng = { 88172645463325252ull };
	size_t vlen, same = 0;
	char buf[4];

	for (int i = 0; i < N; i++) {
		uint64_t x = prng_next(&rng);
		uint64_t k = (x >> 8) % (1 + (x >> 40) % span);  /* skewed */
		if (admit_lru_get(a, KEY(k), buf, sizeof(buf), &vlen) == ADMIT_NOTFOUND)
			admit_lru_set(a, KEY(k), "v", 1);
		admit_lru_compute(b, KEY(k), fill_or_touch, &rewrite);
	}
	sa = stats(a);
	sb = stats(b);
	ck_assert_uint_eq(sa.hits, sb.hits);
	ck_assert_uint_eq(sa.misses, sb.misses);
	ck_assert_uint_eq(sa.admitted, sb.admitted);
	ck_assert_uint_eq(sa.rejected, sb.rejected);
	ck_assert_uint_eq(sa.evicted, sb.evicted);
	ck_assert_uint_eq(sa.entries, sb.entries);
	ck_assert_uint_eq(sa.filter_entries, sb.filter_entries);
	for (uint64_t k = 0; k < 2000; k++)
		same += (admit_lru_peek(a, KEY(k), NULL, 0, &vlen) == ADMIT_NOTFOUND) ==
		        (admit_lru_peek(b, KEY(k), NULL, 0, &vlen) == ADMIT_NOTFOUND);
	ck_assert_uint_eq(same, 2000);
	ck_assert_uint_gt(sa.hits, N / 8);
	admit_lru_free(a);
	admit_lru_free(b);
}
END_TEST

/* A forced store is kept where admission turns a plain one away: a new
 * key, seen once, meets main's victims (TinyLFU: no window; W-TinyLFU: a
 * window smaller than the entry), which are warm.  STORE loses the
 * contest; STORE_FORCE wins it and a victim leaves instead. */
struct forced {
	enum admit_lru_verdict verdict;
	const char *value;
	size_t len;
};

static enum admit_lru_verdict
store_forced(struct admit_lru_update *up, void *arg)
{
	const struct forced *f = arg;
	void *b = admit_lru_update_alloc(up, f->len);

	if (b)
		memcpy(b, f->value, f->len);
	return f->verdict;
}

START_TEST(test_compute_store_force)
{
	enum { N = 50, VLEN = 200 };
	static char val[VLEN];
	bool by_bytes = _i;
	struct admit_lru *c = by_bytes
		? make(0, N * admit_lru_entry_charge(8, VLEN), ADMIT_LRU_WTINYLFU, 1)
		: make(N, 0, ADMIT_LRU_TINYLFU, 1);
	struct forced plain = { ADMIT_LRU_STORE, val, VLEN };
	struct forced force = { ADMIT_LRU_STORE_FORCE, val, VLEN };
	struct admit_lru_stats st;
	size_t vlen, present = 0;

	memset(val, 'v', sizeof(val));
	for (int round = 0; round < 5; round++)
		for (uint64_t i = 0; i < N; i++)
			if (admit_lru_peek(c, KEY(i), NULL, 0, &vlen) == ADMIT_NOTFOUND)
				ck_assert_int_eq(admit_lru_compute(c, KEY(i), store_forced,
				                                   &plain), ADMIT_OK);
			else
				admit_lru_get(c, KEY(i), NULL, 0, &vlen);
	st = stats(c);
	ck_assert_uint_eq(st.entries, N);
	ck_assert_uint_eq(st.rejected + st.admitted + st.evicted, 0);

	ck_assert_int_eq(admit_lru_compute(c, KEY(1000), store_forced, &plain),
	                 ADMIT_REJECTED);
	ck_assert_int_eq(admit_lru_peek(c, KEY(1000), NULL, 0, &vlen),
	                 ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_compute(c, KEY(1001), store_forced, &force),
	                 ADMIT_OK);
	ck_assert_int_eq(admit_lru_peek(c, KEY(1001), NULL, 0, &vlen), ADMIT_EBUFFER);
	ck_assert_uint_eq(vlen, VLEN);
	/* Present now: a forced store replaces it, as STORE does. */
	ck_assert_int_eq(admit_lru_compute(c, KEY(1001), store_forced, &force),
	                 ADMIT_OK);
	st = stats(c);
	ck_assert_uint_eq(st.entries, N);
	ck_assert_uint_eq(st.rejected, 1);
	ck_assert_uint_eq(st.admitted, 1);
	ck_assert_uint_eq(st.evicted, 1);
	for (uint64_t i = 0; i < N; i++)
		present += admit_lru_peek(c, KEY(i), NULL, 0, &vlen) != ADMIT_NOTFOUND;
	ck_assert_uint_eq(present, N - 1);
	admit_lru_free(c);
}
END_TEST

/* No lost update: threads increment counters with compute while readers
 * check, with get and get_with, that each counter only grows.  Without the
 * shard mutex around read, decide and store, increments are lost. */
enum { INC_THREADS = 4, INC_KEYS = 4, INC_EACH = 20000 };

struct incr {
	struct admit_lru *c;
	atomic_int done;
	atomic_ulong bad;
};

static enum admit_lru_verdict
increment(struct admit_lru_update *up, void *arg)
{
	uint64_t v = 0;
	void *b;

	(void)arg;
	if (up->found && up->old_len == sizeof(v))
		memcpy(&v, up->old, sizeof(v));
	v++;
	b = admit_lru_update_alloc(up, sizeof(v));
	if (!b)
		return ADMIT_LRU_KEEP;
	memcpy(b, &v, sizeof(v));
	return ADMIT_LRU_STORE;
}

static void *
incrementer(void *arg)
{
	struct incr *in = arg;

	for (int i = 0; i < INC_EACH; i++)
		for (uint64_t k = 0; k < INC_KEYS; k++)
			if (admit_lru_compute(in->c, KEY(k), increment, NULL) != ADMIT_OK)
				atomic_fetch_add(&in->bad, 1);
	atomic_fetch_add(&in->done, 1);
	return NULL;
}

static void
read_counter(const void *value, size_t vlen, void *arg)
{
	if (vlen == sizeof(uint64_t))
		memcpy(arg, value, vlen);
}

static void *
monotonic_reader(void *arg)
{
	struct incr *in = arg;
	uint64_t last[INC_KEYS] = { 0 };

	while (atomic_load(&in->done) < INC_THREADS) {
		for (uint64_t k = 0; k < INC_KEYS; k++) {
			uint64_t v = 0;
			size_t vlen;

			if (k % 2)
				admit_lru_get_with(in->c, KEY(k), read_counter, &v);
			else
				admit_lru_get(in->c, KEY(k), &v, sizeof(v), &vlen);
			if (v < last[k])
				atomic_fetch_add(&in->bad, 1);
			last[k] = v > last[k] ? v : last[k];
		}
	}
	return NULL;
}

START_TEST(test_compute_no_lost_update)
{
	struct incr in = { .c = make(1000, 0, ADMIT_LRU_ADAPTIVE, 2) };
	pthread_t t[INC_THREADS + 1];
	unsigned long bad;

	for (int i = 0; i < INC_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, incrementer, &in), 0);
	ck_assert_int_eq(pthread_create(&t[INC_THREADS], NULL, monotonic_reader, &in), 0);
	for (int i = 0; i <= INC_THREADS; i++)
		pthread_join(t[i], NULL);
	for (uint64_t k = 0; k < INC_KEYS; k++) {
		uint64_t v = 0;
		size_t vlen;

		ck_assert_int_eq(admit_lru_peek(in.c, KEY(k), &v, sizeof(v), &vlen), ADMIT_OK);
		ck_assert_msg(v == (uint64_t)INC_THREADS * INC_EACH,
		              "key %llu: %llu increments lost", (unsigned long long)k,
		              (unsigned long long)(INC_THREADS * INC_EACH - v));
	}
	bad = atomic_load(&in.bad);
	ck_assert_msg(bad == 0, "%lu failed computes or counters seen to shrink", bad);
	admit_lru_free(in.c);
}
END_TEST

/* ---- hashed calls ----------------------------------------------------------- */

START_TEST(test_hashed_bad_args)
{
	struct admit_lru *c = make(10, 0, ADMIT_LRU_ADAPTIVE, 2);
	uint64_t h = admit_lru_hash(c, "k", 1);
	char buf[4];
	size_t vlen;
	struct seen sn = { 0 };

	ck_assert_uint_eq(admit_lru_hash(NULL, "k", 1), 0);
	ck_assert_uint_eq(admit_lru_hash(c, NULL, 1), 0);
	ck_assert_int_eq(admit_lru_get_hashed(NULL, h, "k", 1, buf, 4, &vlen), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_hashed(c, h, NULL, 1, buf, 4, &vlen), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_hashed(c, h, "k", 1, NULL, 4, &vlen), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_hashed(c, h, "k", 1, buf, 4, NULL), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_with_hashed(NULL, h, "k", 1, see, &sn), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_with_hashed(c, h, NULL, 1, see, &sn), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_with_hashed(c, h, "k", 1, NULL, &sn), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_hashed(NULL, h, "k", 1, "v", 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_hashed(c, h, NULL, 1, "v", 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_hashed(c, h, "k", 1, NULL, 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_delete_hashed(NULL, h, "k", 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_delete_hashed(c, h, NULL, 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_compute_hashed(NULL, h, "k", 1, increment, NULL), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_compute_hashed(c, h, NULL, 1, increment, NULL), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_compute_hashed(c, h, "k", 1, NULL, NULL), ADMIT_EINVAL);
	ck_assert_uint_eq(stats(c).entries, 0);
	admit_lru_free(c);
}
END_TEST

/* The hashed calls and the plain ones see the same keys, in every shard. */
START_TEST(test_hashed_same_keys)
{
	struct admit_lru *c = make(4096, 0, ADMIT_LRU_ADAPTIVE, 8);
	struct admit_lru_config other = { .capacity = 10, .seed = SEED + 1 };
	struct admit_lru *d;
	uint64_t v, differ = 0;
	size_t vlen;

	ck_assert_int_eq(admit_lru_new(&other, &d), ADMIT_OK);
	for (uint64_t i = 0; i < 1000; i++) {
		uint64_t h = admit_lru_hash(c, KEY(i));

		ck_assert_uint_eq(h, admit_lru_hash(c, KEY(i)));
		differ += h != admit_lru_hash(d, KEY(i));
		if (i % 2)
			ck_assert_int_eq(admit_lru_set_hashed(c, h, KEY(i), &i, sizeof(i)), ADMIT_OK);
		else
			ck_assert_int_eq(admit_lru_set(c, KEY(i), &i, sizeof(i)), ADMIT_OK);
	}
	ck_assert_uint_gt(differ, 990);
	for (uint64_t i = 0; i < 1000; i++) {
		uint64_t h = admit_lru_hash(c, KEY(i));
		struct seen sn = { 0 };

		ck_assert_int_eq(admit_lru_get(c, KEY(i), &v, sizeof(v), &vlen), ADMIT_OK);
		ck_assert_uint_eq(v, i);
		ck_assert_int_eq(admit_lru_get_hashed(c, h, KEY(i), &v, sizeof(v), &vlen), ADMIT_OK);
		ck_assert_uint_eq(v, i);
		ck_assert_int_eq(admit_lru_get_with_hashed(c, h, KEY(i), see, &sn), ADMIT_OK);
		ck_assert(sn.calls == 1 && memcmp(sn.buf, &i, sizeof(i)) == 0);
		ck_assert_int_eq(admit_lru_compute_hashed(c, h, KEY(i), increment, NULL), ADMIT_OK);
		ck_assert_int_eq(admit_lru_peek(c, KEY(i), &v, sizeof(v), &vlen), ADMIT_OK);
		ck_assert_uint_eq(v, i + 1);
		if (i % 3 == 0) {
			ck_assert_int_eq(admit_lru_delete_hashed(c, h, KEY(i)), ADMIT_OK);
			ck_assert_int_eq(admit_lru_get(c, KEY(i), &v, sizeof(v), &vlen),
			                 ADMIT_NOTFOUND);
		}
	}
	ck_assert_uint_eq(stats(c).entries, 1000 - 334);
	admit_lru_free(c);
	admit_lru_free(d);
}
END_TEST

/* A wrong hash misfiles the key but leaves the cache consistent. */
START_TEST(test_hashed_wrong_hash)
{
	struct admit_lru *c = make(100, 0, ADMIT_LRU_ADAPTIVE, 4);
	uint64_t h = admit_lru_hash(c, "k", 1), bad = ~h;
	char buf[4];
	size_t vlen;

	ck_assert_int_eq(admit_lru_set_hashed(c, bad, "k", 1, "w", 1), ADMIT_OK);
	ck_assert_int_eq(admit_lru_get(c, "k", 1, buf, sizeof(buf), &vlen), ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_set(c, "k", 1, "r", 1), ADMIT_OK);
	ck_assert_uint_eq(stats(c).entries, 2);
	ck_assert_int_eq(admit_lru_get_hashed(c, bad, "k", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
	ck_assert(vlen == 1 && buf[0] == 'w');
	ck_assert_int_eq(admit_lru_get(c, "k", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
	ck_assert(vlen == 1 && buf[0] == 'r');
	ck_assert_int_eq(admit_lru_delete_hashed(c, bad, "k", 1), ADMIT_OK);
	ck_assert_int_eq(admit_lru_delete_hashed(c, bad, "k", 1), ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_delete(c, "k", 1), ADMIT_OK);
	ck_assert_uint_eq(stats(c).entries, 0);
	for (uint64_t i = 0; i < 1000; i++)  /* misfiled keys evict normally */
		admit_lru_set_hashed(c, i * 0x9e3779b97f4a7c15ull, KEY(i), "v", 1);
	ck_assert_uint_le(stats(c).entries, 100);
	admit_lru_free(c);
}
END_TEST

/* ---- expiry ----------------------------------------------------------------- */

#define SEC UINT64_C(1000000000)
#define T0 (UINT64_C(1000) * SEC)

static _Atomic uint64_t fake_now;

static uint64_t
fake_clock(void *arg)
{
	(void)arg;
	return atomic_load(&fake_now);
}

static struct admit_lru *
make_timed(uint64_t cap, uint64_t bytes, enum admit_lru_policy pol, unsigned shards)
{
	struct admit_lru_config cfg = {
		.capacity = cap, .capacity_bytes = bytes, .policy = pol,
		.shards = shards, .seed = SEED, .clock = fake_clock,
	};
	struct admit_lru *c = NULL;

	atomic_store(&fake_now, T0);
	ck_assert_int_eq(admit_lru_new(&cfg, &c), ADMIT_OK);
	return c;
}

/* A clock that moves on by a second at every read: time passes between
 * any two steps of a call. */
static uint64_t
ticking_clock(void *arg)
{
	(void)arg;
	return atomic_fetch_add(&fake_now, SEC);
}

/* An entry whose time comes while its own set is under way (the clock
 * passes it between the call's checks) is removed before it was ever
 * published: the cache must stay whole and the key absent. */
START_TEST(test_expiry_due_during_set)
{
	struct admit_lru_config cfg = {
		.capacity = 10, .shards = 1, .seed = SEED, .clock = ticking_clock,
	};
	struct admit_lru_stats st;
	struct admit_lru *c = NULL;
	char buf[8];
	size_t vlen;

	atomic_store(&fake_now, T0);
	ck_assert_int_eq(admit_lru_new(&cfg, &c), ADMIT_OK);
	for (int i = 0; i < 50; i++) {
		uint64_t at = admit_lru_now(c) + 2 * SEC + 1;

		ck_assert_int_eq(admit_lru_set_expiring(c, "k", 1, "v", 1, at), ADMIT_OK);
		ck_assert_int_eq(admit_lru_set(c, "x", 1, "w", 1), ADMIT_OK);
	}
	ck_assert_int_eq(admit_lru_expire(c), ADMIT_OK);
	ck_assert_int_eq(admit_lru_get(c, "k", 1, buf, sizeof(buf), &vlen), ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_get(c, "x", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
	ck_assert_int_eq(admit_lru_stats(c, &st), ADMIT_OK);
	ck_assert_uint_eq(st.entries, 1);
	admit_lru_free(c);
}
END_TEST

START_TEST(test_expiry_bad_args)
{
	struct admit_lru *c = make_timed(10, 0, ADMIT_LRU_ADAPTIVE, 1);
	uint64_t h = admit_lru_hash(c, "k", 1);

	ck_assert_int_eq(admit_lru_set_expiring(NULL, "k", 1, "v", 1, T0 + 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_expiring(c, NULL, 1, "v", 1, T0 + 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_expiring(c, "k", 1, NULL, 1, T0 + 1), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_expiring_hashed(NULL, h, "k", 1, "v", 1, T0 + 1),
	                 ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_expiring_hashed(c, h, NULL, 1, "v", 1, T0 + 1),
	                 ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_expiring(c, "k", 1, "v", SIZE_MAX / 2, T0 + 1),
	                 ADMIT_ETOOBIG);
	ck_assert_int_eq(admit_lru_expire(NULL), ADMIT_EINVAL);
	ck_assert_uint_eq(admit_lru_now(NULL), 0);
	ck_assert_uint_eq(admit_lru_now(c), T0);
	ck_assert_uint_eq(stats(c).entries, 0);
	admit_lru_free(c);

	/* The default clock is CLOCK_MONOTONIC's nanoseconds: it moves. */
	c = make(10, 0, ADMIT_LRU_ADAPTIVE, 1);
	h = admit_lru_now(c);
	ck_assert_uint_gt(h, 0);
	ck_assert_int_eq(admit_lru_set_expiring(c, "k", 1, "v", 1, h + 3600 * SEC), ADMIT_OK);
	ck_assert(value_is(c, "k", "v"));
	ck_assert_uint_ge(admit_lru_now(c), h);
	admit_lru_free(c);
}
END_TEST

/* ---- a value in parts --------------------------------------------------------- */

START_TEST(test_set_parts_bad_args)
{
	struct admit_lru *c = make_timed(10, 1000, ADMIT_LRU_ADAPTIVE, 1);
	uint64_t h = admit_lru_hash(c, "k", 1);
	struct admit_lru_part ok[1] = { { "v", 1 } };
	struct admit_lru_part null_data[2] = { { "v", 1 }, { NULL, 1 } };
	struct admit_lru_part huge[2] = { { "v", SIZE_MAX / 4 }, { "w", 1 } };
	struct admit_lru_part wrap[3] = { { "a", SIZE_MAX / 2 }, { "b", SIZE_MAX / 2 },
	                                  { "c", 4 } };
	static const unsigned char v600[600], w600[600];
	struct admit_lru_part big[2] = { { v600, 600 }, { w600, 600 } };

	ck_assert_int_eq(admit_lru_set_parts(NULL, "k", 1, ok, 1, 0), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_parts(c, NULL, 1, ok, 1, 0), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_parts(c, "k", 1, NULL, 1, 0), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_parts(c, "k", 1, null_data, 2, 0), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_parts(c, "k", 1, null_data, 2, T0 + SEC),
	                 ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_parts_hashed(NULL, h, "k", 1, ok, 1, 0), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_parts_hashed(c, h, NULL, 1, ok, 1, 0), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_parts_hashed(c, h, "k", 1, NULL, 2, 0), ADMIT_EINVAL);
	/* Lengths past SIZE_MAX / 4 in sum, or wrapping: never read. */
	ck_assert_int_eq(admit_lru_set_parts(c, "k", 1, huge, 2, 0), ADMIT_ETOOBIG);
	ck_assert_int_eq(admit_lru_set_parts(c, "k", 1, wrap, 3, 0), ADMIT_ETOOBIG);
	ck_assert_int_eq(admit_lru_set_parts_hashed(c, h, "k", 1, wrap, 3, T0 + SEC),
	                 ADMIT_ETOOBIG);
	/* Each part fits the 1000-byte shard, not their sum. */
	ck_assert_int_eq(admit_lru_set_parts(c, "k", 1, big, 1, 0), ADMIT_OK);
	ck_assert_int_eq(admit_lru_set_parts(c, "k", 1, big, 2, 0), ADMIT_ETOOBIG);
	ck_assert_int_eq(admit_lru_set_parts(c, "k", 1, big, 2, T0 + SEC), ADMIT_ETOOBIG);
	ck_assert_uint_eq(stats(c).entries, 1);
	ck_assert_uint_eq(stats(c).bytes, admit_lru_entry_charge(1, 600));
	admit_lru_free(c);
}
END_TEST

/* The parts, one after another, are the value; with or without expiry, as
 * admit_lru_set_expiring. */
START_TEST(test_set_parts)
{
	struct admit_lru *c = make_timed(100, 0, ADMIT_LRU_ADAPTIVE, 2);
	struct admit_lru_part hdr[4] = { { "hea", 3 }, { NULL, 0 }, { "der", 3 },
	                                 { "-data", 5 } };
	struct admit_lru_part other[2] = { { "x", 1 }, { "yz", 2 } };
	struct admit_lru_stats st;

	ck_assert_int_eq(admit_lru_set_parts(c, "k", 1, hdr, 4, 0), ADMIT_OK);
	ck_assert(value_is(c, "k", "header-data"));
	ck_assert_int_eq(admit_lru_set_parts(c, "e", 1, NULL, 0, 0), ADMIT_OK);
	ck_assert(value_is(c, "e", ""));
	/* Hashed, over an existing key; read back by the plain calls. */
	ck_assert_int_eq(admit_lru_set_parts_hashed(c, admit_lru_hash(c, "k", 1), "k", 1,
	                                            other, 2, 0), ADMIT_OK);
	ck_assert(value_is(c, "k", "xyz"));
	ck_assert_uint_eq(stats(c).bytes, admit_lru_entry_charge(1, 3) +
	                                  admit_lru_entry_charge(1, 0));

	/* Expiring: visible until its time, then absent and reclaimed. */
	ck_assert_int_eq(admit_lru_set_parts(c, "t", 1, hdr, 4, T0 + 10 * SEC), ADMIT_OK);
	atomic_store(&fake_now, T0 + 10 * SEC - 1);
	ck_assert(value_is(c, "t", "header-data"));
	atomic_store(&fake_now, T0 + 10 * SEC);
	ck_assert(value_is(c, "t", NULL));
	ck_assert_int_eq(admit_lru_expire(c), ADMIT_OK);
	st = stats(c);
	ck_assert_uint_eq(st.entries, 2);
	ck_assert_uint_eq(st.expired, 1);
	/* A time already past removes the key; 0 over a timed entry drops
	 * its time. */
	ck_assert_int_eq(admit_lru_set_parts(c, "k", 1, hdr, 4, T0), ADMIT_OK);
	ck_assert(value_is(c, "k", NULL));
	ck_assert_int_eq(admit_lru_set_parts(c, "t", 1, other, 2, T0 + 11 * SEC), ADMIT_OK);
	ck_assert_int_eq(admit_lru_set_parts(c, "t", 1, hdr, 4, 0), ADMIT_OK);
	atomic_store(&fake_now, T0 + 1000 * SEC);
	ck_assert_int_eq(admit_lru_expire(c), ADMIT_OK);
	ck_assert(value_is(c, "t", "header-data"));
	ck_assert_uint_eq(stats(c).entries, 2);
	admit_lru_free(c);
}
END_TEST

static enum admit_lru_verdict
note_found(struct admit_lru_update *up, void *arg)
{
	*(bool *)arg = up->found;
	return ADMIT_LRU_KEEP;
}

/* Expired is absent for every call at once, before any reclaim. */
START_TEST(test_expiry_invisible_at_once)
{
	struct admit_lru *c = make_timed(100, 0, ADMIT_LRU_ADAPTIVE, 1);
	struct seen sn = { 0 };
	struct admit_lru_stats st;
	char buf[8];
	size_t vlen;
	bool found = true;

	ck_assert_int_eq(admit_lru_set_expiring(c, "k", 1, "v", 1, T0 + 1000), ADMIT_OK);
	ck_assert_int_eq(admit_lru_set_expiring(c, "n", 1, "never", 5, 0), ADMIT_OK);
	atomic_store(&fake_now, T0 + 999);
	ck_assert_int_eq(admit_lru_get(c, "k", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
	atomic_store(&fake_now, T0 + 1000);
	ck_assert_int_eq(admit_lru_get(c, "k", 1, buf, sizeof(buf), &vlen), ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_peek(c, "k", 1, buf, sizeof(buf), &vlen), ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_get_with(c, "k", 1, see, &sn), ADMIT_NOTFOUND);
	ck_assert_int_eq(sn.calls, 0);
	ck_assert_int_eq(admit_lru_compute(c, "k", 1, note_found, &found), ADMIT_OK);
	ck_assert(!found);
	st = stats(c);
	ck_assert_uint_eq(st.hits, 1);
	ck_assert_uint_eq(st.misses, 3);  /* get, get_with, compute */
	ck_assert_uint_eq(st.expired, 1);  /* compute met it */
	ck_assert_uint_eq(st.entries, 1);
	ck_assert_int_eq(admit_lru_delete(c, "k", 1), ADMIT_NOTFOUND);
	atomic_store(&fake_now, T0 + 1000 * SEC);
	ck_assert(value_is(c, "n", "never"));

	/* A set over an expired key; a time already past removes the key. */
	ck_assert_int_eq(admit_lru_set_expiring(c, "k", 1, "v1", 2, T0 + 1001 * SEC), ADMIT_OK);
	atomic_store(&fake_now, T0 + 1002 * SEC);
	ck_assert(value_is(c, "k", NULL));
	ck_assert_int_eq(admit_lru_set(c, "k", 1, "v2", 2), ADMIT_OK);
	ck_assert(value_is(c, "k", "v2"));
	ck_assert_int_eq(admit_lru_set_expiring(c, "k", 1, "v3", 2, T0), ADMIT_OK);
	ck_assert(value_is(c, "k", NULL));
	st = stats(c);
	ck_assert_uint_eq(st.entries, 1);
	ck_assert_uint_eq(st.expired, 2);
	admit_lru_free(c);
}
END_TEST

/*
 * The point of the wheel: a shard full of expired, frequently used entries
 * takes CAP new cold keys without a get and without evicting or rejecting
 * one, because each set first reclaims what has expired.  Without that,
 * TinyLFU would turn the cold keys away in favour of the expired hot ones.
 */
START_TEST(test_expiry_reclaims_without_get)
{
	static const enum admit_lru_policy pol[] = {
		ADMIT_LRU_ADAPTIVE, ADMIT_LRU_WTINYLFU, ADMIT_LRU_TINYLFU, ADMIT_LRU_PLAIN,
	};
	enum { CAP = 64 };
	bool by_bytes = _i % 2;
	struct admit_lru *c = make_timed(by_bytes ? 0 : CAP,
	                                 by_bytes ? CAP * admit_lru_entry_charge(8, 1) : 0,
	                                 pol[_i / 2], 1);
	struct admit_lru_stats st;
	size_t vlen, present = 0;
	char buf[4];

	for (uint64_t i = 0; i < CAP; i++)
		ck_assert_int_eq(admit_lru_set_expiring(c, KEY(i), "v", 1, T0 + 10 * SEC),
		                 ADMIT_OK);
	for (int round = 0; round < 4; round++)
		for (uint64_t i = 0; i < CAP; i++)
			ck_assert_int_eq(admit_lru_get(c, KEY(i), buf, sizeof(buf), &vlen), ADMIT_OK);
	st = stats(c);
	ck_assert_uint_eq(st.entries, CAP);
	atomic_store(&fake_now, T0 + 11 * SEC);
	for (uint64_t i = 1000; i < 1000 + CAP; i++)
		ck_assert_int_eq(admit_lru_set(c, KEY(i), "w", 1), ADMIT_OK);
	st = stats(c);
	ck_assert_uint_eq(st.expired, CAP);
	ck_assert_uint_eq(st.evicted, 0);
	ck_assert_uint_eq(st.rejected, 0);
	ck_assert_uint_eq(st.entries, CAP);
	for (uint64_t i = 1000; i < 1000 + CAP; i++)
		present += admit_lru_peek(c, KEY(i), buf, sizeof(buf), &vlen) == ADMIT_OK;
	ck_assert_uint_eq(present, CAP);
	admit_lru_free(c);
}
END_TEST

/* admit_lru_expire (and stats) empty every shard of what has expired. */
START_TEST(test_expiry_maintenance)
{
	enum { N = 2000 };
	struct admit_lru *c = make_timed(4 * N, 0, ADMIT_LRU_ADAPTIVE, 8);
	struct admit_lru_stats st;

	for (uint64_t i = 0; i < N; i++)
		ck_assert_int_eq(admit_lru_set_expiring(c, KEY(i), "v", 1,
		                                        T0 + (1 + i % 5) * 60 * SEC),
		                 ADMIT_OK);
	ck_assert_int_eq(admit_lru_set(c, "forever", 7, "v", 1), ADMIT_OK);
	atomic_store(&fake_now, T0 + 3 * 60 * SEC + SEC);
	ck_assert_int_eq(admit_lru_expire(c), ADMIT_OK);
	st = stats(c);
	ck_assert_uint_eq(st.expired, 3 * N / 5);
	ck_assert_uint_eq(st.entries, N - 3 * N / 5 + 1);
	atomic_store(&fake_now, T0 + 24 * 3600 * SEC);
	ck_assert_int_eq(admit_lru_expire(c), ADMIT_OK);
	st = stats(c);
	ck_assert_uint_eq(st.expired, N);
	ck_assert_uint_eq(st.entries, 1);
	ck_assert(value_is(c, "forever", "v"));
	admit_lru_free(c);
}
END_TEST

/* compute sees an entry's expiry, keeps it by default, may change it. */
static enum admit_lru_verdict
set_expiry(struct admit_lru_update *up, void *arg)
{
	const uint64_t *when = arg;
	void *b;

	*(uint64_t *)(when + 1) = up->old_expires;
	if (*when != UINT64_MAX)
		up->expires = *when;
	b = admit_lru_update_alloc(up, 1);
	if (!b)
		return ADMIT_LRU_KEEP;
	memcpy(b, "c", 1);
	return ADMIT_LRU_STORE;
}

START_TEST(test_expiry_compute)
{
	struct admit_lru *c = make_timed(100, 0, ADMIT_LRU_ADAPTIVE, 1);
	uint64_t arg[2];

	ck_assert_int_eq(admit_lru_set_expiring(c, "k", 1, "v", 1, T0 + 10 * SEC), ADMIT_OK);
	arg[0] = UINT64_MAX;  /* keep the expiry */
	ck_assert_int_eq(admit_lru_compute(c, "k", 1, set_expiry, arg), ADMIT_OK);
	ck_assert_uint_eq(arg[1], T0 + 10 * SEC);
	ck_assert(value_is(c, "k", "c"));
	atomic_store(&fake_now, T0 + 10 * SEC);
	ck_assert(value_is(c, "k", NULL));
	arg[0] = T0 + 20 * SEC;  /* absent: a new key with an expiry */
	ck_assert_int_eq(admit_lru_compute(c, "k", 1, set_expiry, arg), ADMIT_OK);
	ck_assert_uint_eq(arg[1], 0);
	arg[0] = 0;              /* never */
	ck_assert_int_eq(admit_lru_compute(c, "k", 1, set_expiry, arg), ADMIT_OK);
	ck_assert_uint_eq(arg[1], T0 + 20 * SEC);
	atomic_store(&fake_now, T0 + 1000 * SEC);
	ck_assert(value_is(c, "k", "c"));
	arg[0] = T0;             /* already past: removed */
	ck_assert_int_eq(admit_lru_compute(c, "k", 1, set_expiry, arg), ADMIT_OK);
	ck_assert(value_is(c, "k", NULL));
	ck_assert_uint_eq(stats(c).entries, 0);
	admit_lru_free(c);
}
END_TEST

/* Under threads: a reader never sees a value past its time (each value is
 * its own expiry time), while writers store with short lives, the clock
 * runs and a maintenance thread expires. */
enum { EXP_KEYS = 64, EXP_OPS = 30000 };

struct exp_run {
	struct admit_lru *c;
	atomic_int done;
	atomic_ulong stale, hits;
};

static void *
exp_writer(void *arg)
{
	struct exp_run *r = arg;
	struct prng rng = { (uint64_t)(uintptr_t)r };

	for (int i = 0; i < EXP_OPS; i++) {
		uint64_t when = atomic_load(&fake_now) + 1 + prng_next(&rng) % (SEC / 4);

		admit_lru_set_expiring(r->c, KEY(prng_next(&rng) % EXP_KEYS), &when,
		                       sizeof(when), when);
		if (i % 64 == 0)
			atomic_fetch_add(&fake_now, SEC / 50);
	}
	atomic_fetch_add(&r->done, 1);
	return NULL;
}

static void *
exp_reader(void *arg)
{
	struct exp_run *r = arg;
	uint64_t k = 0;

	while (atomic_load(&r->done) < 2) {
		uint64_t before = atomic_load(&fake_now), when;
		size_t vlen;

		if (admit_lru_get(r->c, KEY(k % EXP_KEYS), &when, sizeof(when), &vlen) ==
		    ADMIT_OK) {
			atomic_fetch_add_explicit(&r->hits, 1, memory_order_relaxed);
			if (when <= before)
				atomic_fetch_add(&r->stale, 1);
		}
		if (++k % 1024 == 0)
			admit_lru_expire(r->c);
	}
	return NULL;
}

START_TEST(test_expiry_threads)
{
	struct exp_run r = { .c = make_timed(EXP_KEYS / 2, 0, ADMIT_LRU_ADAPTIVE, 2) };
	pthread_t t[3];
	struct admit_lru_stats st;

	ck_assert_int_eq(pthread_create(&t[0], NULL, exp_writer, &r), 0);
	ck_assert_int_eq(pthread_create(&t[1], NULL, exp_writer, &r), 0);
	ck_assert_int_eq(pthread_create(&t[2], NULL, exp_reader, &r), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	ck_assert_uint_eq(atomic_load(&r.stale), 0);
	atomic_fetch_add(&fake_now, 3600 * SEC);
	st = stats(r.c);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_gt(st.expired, 0);
	admit_lru_free(r.c);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("lru_api");
	TCase *tc = tcase_create("lru_api");

	tcase_add_test(tc, test_peek_bad_args);
	tcase_add_test(tc, test_peek_reads);
	tcase_add_test(tc, test_peek_leaves_no_trace);
	tcase_add_test(tc, test_get_many_bad_args);
	tcase_add_test(tc, test_get_many_reads);
	tcase_add_test(tc, test_get_many_is_access);
	tcase_add_test(tc, test_get_many_any_keys);
	tcase_add_test(tc, test_get_with);
	tcase_add_test(tc, test_get_with_whole);
	tcase_add_test(tc, test_compute_bad_args);
	tcase_add_test(tc, test_compute_verdicts);
	tcase_add_test(tc, test_compute_append);
	tcase_add_loop_test(tc, test_compute_store_force, 0, 2);
	tcase_add_loop_test(tc, test_compute_is_one_access, 0, 6);
	tcase_add_test(tc, test_compute_no_lost_update);
	tcase_add_test(tc, test_hashed_bad_args);
	tcase_add_test(tc, test_hashed_same_keys);
	tcase_add_test(tc, test_hashed_wrong_hash);
	tcase_add_test(tc, test_expiry_bad_args);
	tcase_add_test(tc, test_expiry_due_during_set);
	tcase_add_test(tc, test_expiry_invisible_at_once);
	tcase_add_loop_test(tc, test_expiry_reclaims_without_get, 0, 8);
	tcase_add_test(tc, test_expiry_maintenance);
	tcase_add_test(tc, test_expiry_compute);
	tcase_add_test(tc, test_expiry_threads);
	tcase_add_test(tc, test_set_parts_bad_args);
	tcase_add_test(tc, test_set_parts);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
