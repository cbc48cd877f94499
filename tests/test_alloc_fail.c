/*
 * Fault injection: for every k, failing the k-th allocation of creating,
 * loading or saving a filter gives ADMIT_NOMEM, leaves *out untouched, and
 * leaks nothing (the ASan build's LeakSanitizer checks that at exit, which
 * is why this suite runs without forking).  The same with an instance's
 * own allocator (admit/allocator.h), which also counts every byte: what an
 * instance holds is its footprint, and all of it comes back at free.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <admit/admit.h>

#include "alloc.h"
#include "testutil.h"

static char dir[] = "/tmp/admit-allocXXXXXX";
static char path[sizeof(dir) + 32];

static void
setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(strcpy(dir, "/tmp/admit-allocXXXXXX")));
	snprintf(path, sizeof(path), "%s/f.snap", dir);
}

static void
teardown(void)
{
	admit_alloc_fail_nth(0);
	unlink(path);
	rmdir(dir);
}

/* Creation and loading must fail cleanly for every injected k up to the
 * allocations a successful call makes, and succeed once k is past them. */
static const struct admit_cuckoo_config configs[] = {
	{ .capacity = 1000, .fingerprint_bits = 8, .seed = 1 },
	{ .capacity = 1000, .fingerprint_bits = 16, .seed = 2 },
	{ .capacity = 1000, .counting = true, .seed = 3 },
	/* a table of 2 MiB or more takes the huge-page path */
	{ .capacity = 1u << 20, .fingerprint_bits = 16, .stripes = 64, .seed = 4 },
};

START_TEST(new_fails_cleanly)
{
	const struct admit_cuckoo_config *cfg = &configs[_i];
	struct admit_cuckoo *f = NULL, *sentinel = (struct admit_cuckoo *)&f;
	unsigned long n;

	admit_alloc_fail_nth(0);
	ck_assert_int_eq(admit_cuckoo_new(cfg, &f), ADMIT_OK);
	n = admit_alloc_fail_nth(0);
	admit_cuckoo_free(f);
	ck_assert_uint_ge(n, 2); /* the struct and its table at least */
	for (unsigned long k = 1; k <= n; k++) {
		f = sentinel;
		admit_alloc_fail_nth(k);
		ck_assert_int_eq(admit_cuckoo_new(cfg, &f), ADMIT_NOMEM);
		ck_assert_ptr_eq(f, sentinel);
	}
	admit_alloc_fail_nth(n + 1);
	ck_assert_int_eq(admit_cuckoo_new(cfg, &f), ADMIT_OK);
	admit_alloc_fail_nth(0);
	admit_cuckoo_free(f);
}
END_TEST

START_TEST(load_and_save_fail_cleanly)
{
	const struct admit_cuckoo_config *cfg = &configs[_i];
	struct admit_cuckoo *f, *g = NULL, *sentinel = (struct admit_cuckoo *)&g;
	unsigned long n;

	ck_assert_int_eq(admit_cuckoo_new(cfg, &f), ADMIT_OK);
	for (uint64_t i = 0; i < 500; i++)
		ck_assert_int_eq(admit_cuckoo_insert(f, KEY(i)), ADMIT_OK);

	admit_alloc_fail_nth(0);
	ck_assert_int_eq(admit_cuckoo_save(f, path), ADMIT_OK);
	n = admit_alloc_fail_nth(0);
	ck_assert_uint_ge(n, 1);
	for (unsigned long k = 1; k <= n; k++) {
		admit_alloc_fail_nth(k);
		ck_assert_int_eq(admit_cuckoo_save(f, path), ADMIT_NOMEM);
	}
	admit_alloc_fail_nth(0);

	ck_assert_int_eq(admit_cuckoo_load(path, &g), ADMIT_OK);
	n = admit_alloc_fail_nth(0);
	admit_cuckoo_free(g);
	ck_assert_uint_ge(n, 2);
	for (unsigned long k = 1; k <= n; k++) {
		g = sentinel;
		admit_alloc_fail_nth(k);
		ck_assert_int_eq(admit_cuckoo_load(path, &g), ADMIT_NOMEM);
		ck_assert_ptr_eq(g, sentinel);
	}
	admit_alloc_fail_nth(n + 1);
	ck_assert_int_eq(admit_cuckoo_load(path, &g), ADMIT_OK);
	admit_alloc_fail_nth(0);
	for (uint64_t i = 0; i < 500; i++)
		ck_assert(admit_cuckoo_contains(g, KEY(i)));
	admit_cuckoo_free(g);
	admit_cuckoo_free(f);
}
END_TEST

/* admit_lru's embedders' calls that allocate (set_expiring: the entry and
 * the shard's first wheel; compute: the new entry and the wheel) give
 * ADMIT_NOMEM with the key unchanged, or succeed, for every k. */
static enum admit_lru_verdict
store_new(struct admit_lru_update *up, void *arg)
{
	void *b = admit_lru_update_alloc(up, 3);

	if (!b)
		return ADMIT_LRU_STORE;  /* compute reports the failure */
	memcpy(b, "new", 3);
	up->expires = *(const uint64_t *)arg;
	return ADMIT_LRU_STORE;
}

START_TEST(lru_updates_fail_cleanly)
{
	struct admit_lru_config cfg = { .capacity = 100, .shards = 1, .seed = 5 };
	unsigned long nomem = 0;

	for (unsigned long k = 1; k <= 8; k++) {
		struct admit_lru *c;
		uint64_t when;
		enum admit_status st;
		char buf[8];
		size_t vlen;

		admit_alloc_fail_nth(0);
		ck_assert_int_eq(admit_lru_new(&cfg, &c), ADMIT_OK);
		ck_assert_int_eq(admit_lru_set(c, "a", 1, "old", 3), ADMIT_OK);
		when = _i == 2 ? 0 : admit_lru_now(c) + 3600000000000ull;
		admit_alloc_fail_nth(k);
		if (_i == 0)
			st = admit_lru_set_expiring(c, "a", 1, "new", 3, when);
		else
			st = admit_lru_compute(c, "a", 1, store_new, &when);
		admit_alloc_fail_nth(0);
		ck_assert_int_eq(admit_lru_get(c, "a", 1, buf, sizeof(buf), &vlen), ADMIT_OK);
		if (st == ADMIT_NOMEM) {
			nomem++;
			ck_assert(vlen == 3 && memcmp(buf, "old", 3) == 0);
		} else {
			ck_assert_int_eq(st, ADMIT_OK);
			ck_assert(vlen == 3 && memcmp(buf, "new", 3) == 0);
		}
		admit_lru_free(c);
	}
	/* The entry, and the wheel where there is an expiry. */
	ck_assert_uint_eq(nomem, _i == 2 ? 1 : 2);
}
END_TEST

/* An allocator that counts the bytes it has out and fails its fail_at-th
 * call.  Each block records its size, so a free of the wrong size fails
 * the test.  zero: whether it offers zalloc (else the library zeroes). */
struct counting {
	size_t live;
	unsigned long calls, fail_at;
};

static void *
counting_alloc(void *ctx, size_t size)
{
	struct counting *c = ctx;
	size_t *b;

	ck_assert_uint_gt(size, 0);
	if (++c->calls == c->fail_at)
		return NULL;
	b = malloc(sizeof(size_t) * 2 + size);
	ck_assert_ptr_nonnull(b);
	memset(b + 2, 0xa5, size); /* garbage: the library must zero */
	b[0] = size;
	c->live += size;
	return b + 2;
}

static void *
counting_zalloc(void *ctx, size_t size)
{
	void *p = counting_alloc(ctx, size);

	if (p)
		memset(p, 0, size);
	return p;
}

static void
counting_free(void *ctx, void *p, size_t size)
{
	struct counting *c = ctx;
	size_t *b = (size_t *)p - 2;

	ck_assert_uint_eq(b[0], size);
	ck_assert_uint_ge(c->live, size);
	c->live -= size;
	free(b);
}

static struct admit_allocator
counting_allocator(struct counting *c, bool zero)
{
	*c = (struct counting){ 0 };
	return (struct admit_allocator){
		.alloc = counting_alloc,
		.zalloc = zero ? counting_zalloc : NULL,
		.free = counting_free,
		.ctx = c,
	};
}

/* One structure's constructor, footprint and destructor, behind one shape
 * for fails_at_every_call(). */
struct maker {
	enum admit_status (*make)(const void *cfg, void **out);
	size_t (*footprint)(const void *obj);
	void (*destroy)(void *obj);
};

/* make(cfg) takes what it holds from the counting allocator in cfg: the
 * bytes out are its footprint and all come back at free; failing each of
 * its allocations in turn gives ADMIT_NOMEM, *out untouched, nothing out.
 * Returns how many allocations a successful make takes. */
static unsigned long
fails_at_every_call(const struct maker *m, const void *cfg,
                    struct counting *cnt)
{
	void *obj = NULL, *sentinel = &obj;
	unsigned long n;

	*cnt = (struct counting){ 0 };
	ck_assert_int_eq(m->make(cfg, &obj), ADMIT_OK);
	ck_assert_uint_eq(cnt->live, m->footprint(obj));
	n = cnt->calls;
	m->destroy(obj);
	ck_assert_uint_eq(cnt->live, 0);
	for (unsigned long k = 1; k <= n; k++) {
		*cnt = (struct counting){ .fail_at = k };
		obj = sentinel;
		ck_assert_int_eq(m->make(cfg, &obj), ADMIT_NOMEM);
		ck_assert_ptr_eq(obj, sentinel);
		ck_assert_uint_eq(cnt->live, 0);
	}
	return n;
}

static enum admit_status
make_cuckoo(const void *cfg, void **out)
{
	return admit_cuckoo_new(cfg, (struct admit_cuckoo **)out);
}
static size_t
cuckoo_footprint(const void *f)
{
	return admit_cuckoo_footprint(f);
}
static void
cuckoo_free(void *f)
{
	admit_cuckoo_free(f);
}

static enum admit_status
make_chain(const void *cfg, void **out)
{
	return admit_chain_new(cfg, (struct admit_chain **)out);
}
static size_t
chain_footprint(const void *c)
{
	return admit_chain_footprint(c);
}
static void
chain_free(void *c)
{
	admit_chain_free(c);
}

static enum admit_status
make_cbf(const void *cfg, void **out)
{
	return admit_cbf_new_config(cfg, (struct admit_cbf **)out);
}
static size_t
cbf_footprint(const void *f)
{
	return admit_cbf_footprint(f);
}
static void
cbf_free(void *f)
{
	admit_cbf_free(f);
}

static enum admit_status
make_tinylfu(const void *cfg, void **out)
{
	return admit_tinylfu_new_config(cfg, (struct admit_tinylfu **)out);
}
static size_t
tinylfu_footprint(const void *t)
{
	return admit_tinylfu_footprint(t);
}
static void
tinylfu_free(void *t)
{
	admit_tinylfu_free(t);
}

START_TEST(cuckoo_own_allocator)
{
	struct admit_cuckoo_config cfg = configs[_i / 2];
	struct counting cnt;
	struct admit_allocator a = counting_allocator(&cnt, _i % 2);
	struct maker m = { make_cuckoo, cuckoo_footprint, cuckoo_free };
	struct admit_cuckoo *f = NULL;

	cfg.alloc = &a;
	/* struct (its stripes inside), the stripes' stats, table */
	ck_assert_uint_ge(fails_at_every_call(&m, &cfg, &cnt), 3);
	cnt = (struct counting){ 0 };
	ck_assert_int_eq(admit_cuckoo_new(&cfg, &f), ADMIT_OK);
	ck_assert_uint_eq(cnt.live, admit_cuckoo_footprint(f));
	ck_assert_uint_gt(cnt.live, admit_cuckoo_memory(f));
	for (uint64_t i = 0; i < 500; i++)
		ck_assert_int_eq(admit_cuckoo_insert(f, KEY(i)), ADMIT_OK);
	for (uint64_t i = 0; i < 500; i++)
		ck_assert(admit_cuckoo_contains(f, KEY(i)));
	ck_assert(!admit_cuckoo_contains(f, KEY(1000000)));
	ck_assert_uint_eq(cnt.live, admit_cuckoo_footprint(f));
	admit_cuckoo_free(f);
	ck_assert_uint_eq(cnt.live, 0);
}
END_TEST

/* The doorkeeper and TinyLFU (whose store and doorkeeper take theirs from
 * the instance's allocator). */
START_TEST(cbf_tinylfu_own_allocator)
{
	struct counting cnt;
	struct admit_allocator a = counting_allocator(&cnt, _i);
	struct maker cbf = { make_cbf, cbf_footprint, cbf_free };
	struct maker tlfu = { make_tinylfu, tinylfu_footprint, tinylfu_free };
	struct admit_cbf_config cc = {
		.items = 10000, .fpr = 0.01, .seed = 3, .alloc = &a,
	};
	struct admit_tinylfu_config tc = {
		.cache_capacity = 1000, .seed = 4, .alloc = &a,
	};
	struct admit_tinylfu *t;

	ck_assert_uint_eq(fails_at_every_call(&cbf, &cc, &cnt), 2);
	ck_assert_uint_ge(fails_at_every_call(&tlfu, &tc, &cnt), 6);
	cnt = (struct counting){ 0 };
	ck_assert_int_eq(admit_tinylfu_new_config(&tc, &t), ADMIT_OK);
	for (uint64_t i = 0; i < 5000; i++)
		ck_assert_int_eq(admit_tinylfu_record(t, KEY(i % 50)), ADMIT_OK);
	ck_assert_uint_ge(admit_tinylfu_estimate(t, KEY(7)), 2);
	ck_assert_uint_eq(cnt.live, admit_tinylfu_footprint(t));
	admit_tinylfu_free(t);
	ck_assert_uint_eq(cnt.live, 0);
}
END_TEST

/* A chain: made, restored and grown from its own allocator, failing at
 * every allocation of each (growth: nothing changed, and the chain takes
 * the same add once memory is back). */
START_TEST(chain_own_allocator)
{
	struct counting cnt;
	struct admit_allocator a = counting_allocator(&cnt, _i);
	struct admit_chain_config cfg = {
		.capacity = 200, .seed = 9, .single_writer = true, .alloc = &a,
	};
	struct maker m = { make_chain, chain_footprint, chain_free };
	struct admit_chain *c = NULL, *sentinel = (struct admit_chain *)&c;
	struct admit_chain_info before, after;
	unsigned long n;
	void *buf;
	size_t len, fp;
	uint64_t i, grow_at;

	ck_assert_uint_ge(fails_at_every_call(&m, &cfg, &cnt), 4);

	/* The add that grows the chain, found once. */
	cnt = (struct counting){ 0 };
	ck_assert_int_eq(admit_chain_new(&cfg, &c), ADMIT_OK);
	for (i = 0;; i++) {
		ck_assert_int_eq(admit_chain_info(c, &before), ADMIT_OK);
		ck_assert_int_eq(admit_chain_add(c, KEY(i)), ADMIT_OK);
		ck_assert_int_eq(admit_chain_info(c, &after), ADMIT_OK);
		if (after.filters > before.filters)
			break;
	}
	grow_at = i;
	ck_assert_uint_eq(cnt.live, admit_chain_footprint(c));
	ck_assert_int_eq(admit_chain_dump(c, &buf, &len), ADMIT_OK);
	admit_chain_free(c);
	ck_assert_uint_eq(cnt.live, 0);

	for (unsigned long k = 1;; k++) {
		cnt = (struct counting){ 0 };
		ck_assert_int_eq(admit_chain_new(&cfg, &c), ADMIT_OK);
		for (i = 0; i < grow_at; i++)
			ck_assert_int_eq(admit_chain_add(c, KEY(i)), ADMIT_OK);
		ck_assert_int_eq(admit_chain_info(c, &before), ADMIT_OK);
		fp = admit_chain_footprint(c);
		cnt.fail_at = cnt.calls + k;
		if (admit_chain_add(c, KEY(grow_at)) == ADMIT_OK) {
			/* k is past the growth's allocations */
			ck_assert_uint_ge(k, 4);
			admit_chain_free(c);
			break;
		}
		ck_assert_int_eq(admit_chain_info(c, &after), ADMIT_OK);
		ck_assert_int_eq(memcmp(&before, &after, sizeof(before)), 0);
		ck_assert_uint_eq(admit_chain_footprint(c), fp);
		ck_assert_uint_eq(cnt.live, fp);
		for (i = 0; i < grow_at; i++)
			ck_assert(admit_chain_contains(c, KEY(i)));
		cnt.fail_at = 0;
		ck_assert_int_eq(admit_chain_add(c, KEY(grow_at)), ADMIT_OK);
		ck_assert_uint_eq(cnt.live, admit_chain_footprint(c));
		admit_chain_free(c);
		ck_assert_uint_eq(cnt.live, 0);
	}

	/* Restored from a dump: everything from alloc, at every k. */
	cnt = (struct counting){ 0 };
	ck_assert_int_eq(admit_chain_restore_alloc(buf, len, &a, &c), ADMIT_OK);
	ck_assert_uint_eq(cnt.live, admit_chain_footprint(c));
	for (i = 0; i <= grow_at; i++)
		ck_assert(admit_chain_contains(c, KEY(i)));
	n = cnt.calls;
	admit_chain_free(c);
	ck_assert_uint_eq(cnt.live, 0);
	for (unsigned long k = 1; k <= n; k++) {
		cnt = (struct counting){ .fail_at = k };
		c = sentinel;
		ck_assert_int_eq(admit_chain_restore_alloc(buf, len, &a, &c),
		                 ADMIT_NOMEM);
		ck_assert_ptr_eq(c, sentinel);
		ck_assert_uint_eq(cnt.live, 0);
	}
	free(buf);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("alloc_fail");
	TCase *tc = tcase_create("every k");
	SRunner *sr;
	int n = (int)(sizeof(configs) / sizeof(configs[0]));

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, new_fails_cleanly, 0, n);
	tcase_add_loop_test(tc, load_and_save_fail_cleanly, 0, n);
	tcase_add_loop_test(tc, lru_updates_fail_cleanly, 0, 3);
	tcase_add_loop_test(tc, cuckoo_own_allocator, 0, 2 * n);
	tcase_add_loop_test(tc, chain_own_allocator, 0, 2);
	tcase_add_loop_test(tc, cbf_tinylfu_own_allocator, 0, 2);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	/* No fork: LeakSanitizer reports at the exit of this one process. */
	srunner_set_fork_status(sr, CK_NOFORK);
	return test_run(sr);
}
