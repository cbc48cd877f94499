/*
 * Unit tests for what embedders reach for beyond reads and writes
 * (include/admit/lru.h): the removal listener and its causes,
 * get_or_load's one load per key, run-time capacity, the walk, clear and
 * the extended statistics.  Linked against libadmit.la, so each test also
 * shows the name is exported.  Seeds are fixed.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <admit/admit.h>

#include "testutil.h"

#define SEED 0x5eed1e55ull
#define MAXLOG 4096

/* ---- a recording listener -------------------------------------------- */

struct told {
	uint64_t key;                   /* 8-byte keys only */
	char value[16];
	size_t vlen;
	enum admit_lru_cause cause;
	enum admit_status peek;         /* a peek of the key from inside */
};

struct log {
	struct admit_lru *c;            /* set after admit_lru_new */
	pthread_mutex_t mu;
	struct told t[MAXLOG];
	size_t n;
	_Atomic uint64_t count[ADMIT_LRU_CAUSES];
	bool keep;                      /* record each call in t */
	bool reenter;                   /* peek and stats from inside */
	bool side;                      /* set and delete another key too */
};

static void
listen(const void *key, size_t klen, const void *value, size_t vlen,
       enum admit_lru_cause cause, void *arg)
{
	struct log *g = arg;
	struct told t = { .vlen = vlen, .cause = cause };
	char buf[16];
	size_t n;

	ck_assert_uint_lt(cause, ADMIT_LRU_CAUSES);
	atomic_fetch_add(&g->count[cause], 1);
	if (klen == sizeof(uint64_t))
		memcpy(&t.key, key, sizeof(t.key));
	if (vlen && vlen <= sizeof(t.value))
		memcpy(t.value, value, vlen);
	if (g->reenter && g->c && klen == sizeof(uint64_t)) {
		/* No lock of the cache is held here: each of these would
		 * wait for itself otherwise. */
		struct admit_lru_stats st;

		t.peek = admit_lru_peek(g->c, key, klen, buf, sizeof(buf), &n);
		ck_assert_int_eq(admit_lru_stats(g->c, &st), ADMIT_OK);
	}
	if (g->side && g->c && klen == sizeof(uint64_t)) {
		/* Writes of the same shard, each told in turn. */
		ck_assert_int_eq(admit_lru_set(g->c, "side", 4, "x", 1), ADMIT_OK);
		ck_assert_int_eq(admit_lru_delete(g->c, "side", 4), ADMIT_OK);
	}
	if (g->keep && klen == sizeof(uint64_t)) {  /* not "side" */
		pthread_mutex_lock(&g->mu);
		if (g->n < MAXLOG)
			g->t[g->n++] = t;
		pthread_mutex_unlock(&g->mu);
	}
}

static _Atomic uint64_t fake_now;

static uint64_t
fake_clock(void *arg)
{
	(void)arg;
	return atomic_load(&fake_now);
}

static struct admit_lru *
make_l(uint64_t cap, enum admit_lru_policy pol, unsigned shards, struct log *g)
{
	struct admit_lru_config cfg = {
		.capacity = cap, .policy = pol, .shards = shards, .seed = SEED,
		.clock = fake_clock, .listener = listen, .listener_arg = g,
	};
	struct admit_lru *c = NULL;

	memset(g, 0, sizeof(*g));
	pthread_mutex_init(&g->mu, NULL);
	g->keep = true;
	atomic_store(&fake_now, 1000000000ull);
	ck_assert_int_eq(admit_lru_new(&cfg, &c), ADMIT_OK);
	g->c = c;
	return c;
}

static void
set_i(struct admit_lru *c, uint64_t i, const char *v)
{
	enum admit_status st = admit_lru_set(c, KEY(i), v, strlen(v));

	ck_assert(st == ADMIT_OK || st == ADMIT_REJECTED);
}

static struct admit_lru_stats_ex
stats_ex(struct admit_lru *c)
{
	struct admit_lru_stats_ex x;

	ck_assert_int_eq(admit_lru_stats_ex(c, &x, sizeof(x)), ADMIT_OK);
	return x;
}

START_TEST(test_listener_explicit_replaced)
{
	struct log *g = malloc(sizeof(*g));
	struct admit_lru *c = make_l(100, ADMIT_LRU_PLAIN, 1, g);
	struct admit_lru_stats_ex x;

	g->reenter = true;
	g->side = true;
	set_i(c, 1, "old");
	ck_assert_uint_eq(g->n, 0);
	set_i(c, 1, "new");
	ck_assert_uint_eq(g->n, 1);
	ck_assert_int_eq(g->t[0].cause, ADMIT_LRU_REPLACED);
	ck_assert_uint_eq(g->t[0].key, test_key(1));
	ck_assert_uint_eq(g->t[0].vlen, 3);
	ck_assert_mem_eq(g->t[0].value, "old", 3);
	/* The listener's peek found the new value, never the old. */
	ck_assert_int_eq(g->t[0].peek, ADMIT_OK);
	ck_assert_int_eq(admit_lru_delete(c, KEY(1)), ADMIT_OK);
	ck_assert_uint_eq(g->n, 2);
	ck_assert_int_eq(g->t[1].cause, ADMIT_LRU_EXPLICIT);
	ck_assert_mem_eq(g->t[1].value, "new", 3);
	/* Gone from the index before the listener ran. */
	ck_assert_int_eq(g->t[1].peek, ADMIT_NOTFOUND);
	x = stats_ex(c);
	ck_assert_uint_eq(x.removed[ADMIT_LRU_REPLACED], 1);
	/* The delete, and the side key's deletes from the two calls. */
	ck_assert_uint_eq(x.removed[ADMIT_LRU_EXPLICIT], 3);
	ck_assert_uint_eq(x.removed_bytes[ADMIT_LRU_REPLACED],
	                  admit_lru_entry_charge(8, 3));
	admit_lru_free(c);
	free(g);
}
END_TEST

START_TEST(test_listener_evicted_cleared)
{
	struct log *g = malloc(sizeof(*g));
	struct admit_lru *c = make_l(4, ADMIT_LRU_PLAIN, 1, g);
	struct admit_lru_stats_ex x;

	g->reenter = true;
	for (uint64_t i = 0; i < 5; i++)
		set_i(c, i, "v");
	ck_assert_uint_eq(g->n, 1);
	ck_assert_int_eq(g->t[0].cause, ADMIT_LRU_EVICTED);
	ck_assert_uint_eq(g->t[0].key, test_key(0));  /* the LRU */
	ck_assert_int_eq(g->t[0].peek, ADMIT_NOTFOUND);
	ck_assert_int_eq(admit_lru_clear(c), ADMIT_OK);
	ck_assert_uint_eq(g->n, 5);
	for (size_t k = 1; k < 5; k++) {
		ck_assert_int_eq(g->t[k].cause, ADMIT_LRU_CLEARED);
		ck_assert_int_eq(g->t[k].peek, ADMIT_NOTFOUND);
	}
	x = stats_ex(c);
	ck_assert_uint_eq(x.base.entries, 0);
	ck_assert_uint_eq(x.base.evicted, 1);
	ck_assert_uint_eq(x.removed[ADMIT_LRU_EVICTED], 1);
	ck_assert_uint_eq(x.removed[ADMIT_LRU_CLEARED], 4);
	ck_assert_int_eq(admit_lru_clear(NULL), ADMIT_EINVAL);
	admit_lru_free(c);
	free(g);
}
END_TEST

START_TEST(test_listener_expired)
{
	struct log *g = malloc(sizeof(*g));
	struct admit_lru *c = make_l(100, ADMIT_LRU_PLAIN, 1, g);

	ck_assert_int_eq(admit_lru_set_expiring(c, KEY(7), "t", 1,
	                                        admit_lru_now(c) + 1000000000ull),
	                 ADMIT_OK);
	atomic_fetch_add(&fake_now, 5000000000ull);
	ck_assert_int_eq(admit_lru_expire(c), ADMIT_OK);
	ck_assert_uint_eq(g->n, 1);
	ck_assert_int_eq(g->t[0].cause, ADMIT_LRU_EXPIRED);
	ck_assert_uint_eq(g->t[0].key, test_key(7));
	ck_assert_uint_eq(stats_ex(c).removed[ADMIT_LRU_EXPIRED], 1);
	admit_lru_free(c);
	free(g);
}
END_TEST

/* TinyLFU turns a new key away when the cache is full of hotter keys:
 * the set returns ADMIT_REJECTED and the listener sees the new value. */
START_TEST(test_listener_rejected)
{
	struct log *g = malloc(sizeof(*g));
	struct admit_lru *c = make_l(8, ADMIT_LRU_TINYLFU, 1, g);
	enum admit_status st = ADMIT_OK;
	size_t before;

	for (int r = 0; r < 20; r++)
		for (uint64_t i = 0; i < 8; i++)
			set_i(c, i, "hot");
	before = g->n;
	for (uint64_t i = 100; i < 200 && st != ADMIT_REJECTED; i++)
		st = admit_lru_set(c, KEY(i), "cold", 4);
	ck_assert_int_eq(st, ADMIT_REJECTED);
	ck_assert_uint_gt(g->n, before);
	ck_assert_int_eq(g->t[g->n - 1].cause, ADMIT_LRU_REJECTED);
	ck_assert_mem_eq(g->t[g->n - 1].value, "cold", 4);
	ck_assert_uint_ge(stats_ex(c).removed[ADMIT_LRU_REJECTED], 1);
	admit_lru_free(c);
	free(g);
}
END_TEST

/* Entries removed and still waiting for the listener at admit_lru_free
 * are told there; a cache without a listener counts removals too. */
START_TEST(test_listener_at_free)
{
	struct admit_lru_config cfg = { .capacity = 10, .shards = 1,
	                                .policy = ADMIT_LRU_PLAIN, .seed = SEED };
	struct admit_lru *c = NULL;
	struct admit_lru_stats_ex x;

	ck_assert_int_eq(admit_lru_new(&cfg, &c), ADMIT_OK);
	for (uint64_t i = 0; i < 30; i++)
		set_i(c, i, "v");
	x = stats_ex(c);
	ck_assert_uint_eq(x.removed[ADMIT_LRU_EVICTED], 20);
	ck_assert_uint_eq(x.removed_bytes[ADMIT_LRU_EVICTED],
	                  20 * admit_lru_entry_charge(8, 1));
	ck_assert_int_eq(admit_lru_stats_ex(c, &x, 8), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_stats_ex(NULL, &x, sizeof(x)), ADMIT_EINVAL);
	/* A caller knowing the first struct only gets just that. */
	{
		struct admit_lru_stats_ex y;

		memset(&y, 0xab, sizeof(y));
		ck_assert_int_eq(admit_lru_stats_ex(c, &y,
		                                    sizeof(struct admit_lru_stats)),
		                 ADMIT_OK);
		ck_assert_uint_eq(y.base.entries, 10);
		ck_assert_uint_eq(y.load_successes, 0xababababababababull);
	}
	admit_lru_free(c);
}
END_TEST

/* Concurrent writers: every entry a set made either is still there or
 * was told, once: told = stored - left. */
#define W_THREADS 4
#define W_SETS 20000

struct wr {
	struct admit_lru *c;
	unsigned id;
	uint64_t stored;
};

static void *
writer(void *arg)
{
	struct wr *w = arg;
	struct prng r;

	r.s = SEED * (w->id + 1);
	for (int i = 0; i < W_SETS; i++) {
		uint64_t k = prng_next(&r) % 2000;
		enum admit_status st;

		if (prng_next(&r) % 8 == 0) {
			(void)admit_lru_delete(w->c, KEY(k));
			continue;
		}
		st = admit_lru_set(w->c, KEY(k), "value", 5);
		w->stored += st == ADMIT_OK || st == ADMIT_REJECTED;
		if (prng_next(&r) % 4 == 0) {
			char b[8];
			size_t n;

			(void)admit_lru_get(w->c, KEY(k), b, sizeof(b), &n);
		}
	}
	return NULL;
}

START_TEST(test_listener_threads)
{
	struct log *g = malloc(sizeof(*g));
	struct admit_lru *c = make_l(256, (enum admit_lru_policy)_i, 4, g);
	pthread_t t[W_THREADS];
	struct wr w[W_THREADS];
	uint64_t stored = 0, told = 0;

	g->keep = false;
	for (unsigned i = 0; i < W_THREADS; i++) {
		w[i] = (struct wr){ .c = c, .id = i };
		pthread_create(&t[i], NULL, writer, &w[i]);
	}
	for (unsigned i = 0; i < W_THREADS; i++) {
		pthread_join(t[i], NULL);
		stored += w[i].stored;
	}
	/* A get's maintenance may have removed entries the listener has yet
	 * to see: any writing call on their shard tells it. */
	ck_assert_int_eq(admit_lru_expire(c), ADMIT_OK);
	for (int k = 0; k < ADMIT_LRU_CAUSES; k++)
		told += atomic_load(&g->count[k]);
	ck_assert_uint_eq(told, stored - stats_ex(c).base.entries);
	ck_assert_uint_eq(told, stored - stats_ex(c).base.entries);
	ck_assert_uint_gt(atomic_load(&g->count[ADMIT_LRU_EVICTED]) +
	                  atomic_load(&g->count[ADMIT_LRU_REJECTED]), 0);
	admit_lru_free(c);
	free(g);
}
END_TEST

/* ---- get_or_load ---------------------------------------------------- */

struct loadctx {
	_Atomic int calls;
	int delay_ms;
	enum admit_status result;
	_Atomic int gate;               /* the loader waits while 0, if used */
	_Atomic bool gated;
};

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static enum admit_status
loader(const void *key, size_t klen, struct admit_lru_load *ld, void *arg)
{
	struct loadctx *x = arg;
	char v[32];
	uint64_t k;

	ck_assert_uint_eq(klen, sizeof(k));
	memcpy(&k, key, sizeof(k));
	atomic_fetch_add(&x->calls, 1);
	if (x->delay_ms)
		sleep_ms(x->delay_ms);
	while (atomic_load(&x->gated) && !atomic_load(&x->gate))
		sleep_ms(1);
	if (x->result != ADMIT_OK)
		return x->result;
	snprintf(v, sizeof(v), "v%llu", (unsigned long long)k);
	return admit_lru_load_value(ld, v, strlen(v), 0);
}

struct got {
	char v[32];
	size_t n;
	int calls;
};

static void
reader(const void *value, size_t vlen, void *arg)
{
	struct got *g = arg;

	ck_assert_uint_lt(vlen, sizeof(g->v));
	memcpy(g->v, value, vlen);
	g->n = vlen;
	g->calls++;
}

#define HERD 16

struct herd {
	struct admit_lru *c;
	struct loadctx *x;
	pthread_barrier_t *b;
	enum admit_status st;
	struct got got;
};

static void *
herd_one(void *arg)
{
	struct herd *h = arg;

	pthread_barrier_wait(h->b);
	h->st = admit_lru_get_or_load(h->c, KEY(42), loader, h->x, reader,
	                              &h->got, 0);
	return NULL;
}

/* 16 threads missing one key: one loader call; every thread gets its
 * value, or every thread its failure; the next call after a failure
 * loads again. */
START_TEST(test_load_herd)
{
	bool fail = _i;
	struct admit_lru_config cfg = { .capacity = 1000, .seed = SEED };
	struct admit_lru *c = NULL;
	struct loadctx x = { .delay_ms = 100,
	                     .result = fail ? ADMIT_EIO : ADMIT_OK };
	pthread_barrier_t b;
	pthread_t t[HERD];
	struct herd h[HERD];
	struct admit_lru_stats_ex s;
	struct got again = { .n = 0 };
	char want[32];

	snprintf(want, sizeof(want), "v%llu", (unsigned long long)test_key(42));
	ck_assert_int_eq(admit_lru_new(&cfg, &c), ADMIT_OK);
	pthread_barrier_init(&b, NULL, HERD);
	for (int i = 0; i < HERD; i++) {
		h[i] = (struct herd){ .c = c, .x = &x, .b = &b };
		pthread_create(&t[i], NULL, herd_one, &h[i]);
	}
	for (int i = 0; i < HERD; i++)
		pthread_join(t[i], NULL);
	ck_assert_int_eq(atomic_load(&x.calls), 1);
	for (int i = 0; i < HERD; i++) {
		ck_assert_int_eq(h[i].st, fail ? ADMIT_EIO : ADMIT_OK);
		ck_assert_int_eq(h[i].got.calls, fail ? 0 : 1);
		if (!fail) {
			ck_assert_uint_eq(h[i].got.n, strlen(want));
			ck_assert_mem_eq(h[i].got.v, want, strlen(want));
		}
	}
	s = stats_ex(c);
	ck_assert_uint_eq(s.load_successes, fail ? 0 : 1);
	ck_assert_uint_eq(s.load_failures, fail ? 1 : 0);
	ck_assert_uint_ge(s.load_ns, 100000000ull);
	/* The next call: a hit after a success, a new load after a failure. */
	x.delay_ms = 0;
	x.result = ADMIT_OK;
	ck_assert_int_eq(admit_lru_get_or_load(c, KEY(42), loader, &x, reader,
	                                       &again, 0), ADMIT_OK);
	ck_assert_int_eq(atomic_load(&x.calls), fail ? 2 : 1);
	ck_assert_mem_eq(again.v, want, strlen(want));
	pthread_barrier_destroy(&b);
	admit_lru_free(c);
}
END_TEST

struct bg {
	struct admit_lru *c;
	struct loadctx *x;
	enum admit_status st;
	struct got got;
};

static void *
bg_load(void *arg)
{
	struct bg *b = arg;

	b->st = admit_lru_get_or_load(b->c, KEY(5), loader, b->x, reader,
	                              &b->got, 0);
	return NULL;
}

/* Recursion into get_or_load of the key being loaded. */
static enum admit_status
self_loader(const void *key, size_t klen, struct admit_lru_load *ld, void *arg)
{
	struct admit_lru *c = arg;
	struct got g = { .n = 0 };

	ck_assert_int_eq(admit_lru_get_or_load(c, key, klen, self_loader, c,
	                                       reader, &g, 0), ADMIT_LOADING);
	return admit_lru_load_value(ld, "s", 1, 0);
}

START_TEST(test_load_nowait_and_args)
{
	struct admit_lru_config cfg = { .capacity = 1000, .seed = SEED };
	struct admit_lru *c = NULL;
	struct loadctx x = { .gated = true };
	struct bg b;
	pthread_t t;
	struct got g = { .n = 0 };

	ck_assert_int_eq(admit_lru_new(&cfg, &c), ADMIT_OK);
	b = (struct bg){ .c = c, .x = &x };
	pthread_create(&t, NULL, bg_load, &b);
	while (atomic_load(&x.calls) == 0)
		sleep_ms(1);
	ck_assert_int_eq(admit_lru_get_or_load(c, KEY(5), loader, &x, reader, &g,
	                                       ADMIT_LRU_NOWAIT), ADMIT_LOADING);
	ck_assert_int_eq(g.calls, 0);
	/* Another key loads meanwhile. */
	atomic_store(&x.gated, false);
	ck_assert_int_eq(admit_lru_get_or_load(c, KEY(6), loader, &x, reader, &g,
	                                       ADMIT_LRU_NOWAIT), ADMIT_OK);
	ck_assert_int_eq(g.calls, 1);
	atomic_store(&x.gate, 1);
	pthread_join(t, NULL);
	ck_assert_int_eq(b.st, ADMIT_OK);
	ck_assert_int_eq(atomic_load(&x.calls), 2);
	ck_assert_int_eq(admit_lru_get_or_load(c, "self", 4, self_loader, c,
	                                       reader, &g, 0), ADMIT_OK);
	ck_assert_mem_eq(g.v, "s", 1);
	ck_assert_int_eq(admit_lru_get_or_load(NULL, "k", 1, loader, &x, reader,
	                                       &g, 0), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_or_load(c, "k", 1, NULL, &x, reader, &g, 0),
	                 ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_or_load(c, "k", 1, loader, &x, NULL, &g, 0),
	                 ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_or_load(c, NULL, 1, loader, &x, reader,
	                                       &g, 0), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_get_or_load(c, "k", 1, loader, &x, reader, &g,
	                                       8), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_load_value(NULL, "a", 1, 0), ADMIT_EINVAL);
	admit_lru_free(c);
}
END_TEST

/* A value admission turns away still reaches the caller. */
static enum admit_status
no_value_loader(const void *key, size_t klen, struct admit_lru_load *ld,
                void *arg)
{
	(void)key; (void)klen; (void)ld; (void)arg;
	return ADMIT_OK;  /* forgot admit_lru_load_value */
}

START_TEST(test_load_rejected_and_bad_loader)
{
	struct admit_lru_config cfg = { .capacity = 8, .shards = 1,
	                                .policy = ADMIT_LRU_TINYLFU, .seed = SEED };
	struct admit_lru *c = NULL;
	struct loadctx x = { .result = ADMIT_OK };
	struct got g = { .n = 0 };
	int delivered = 0;

	ck_assert_int_eq(admit_lru_new(&cfg, &c), ADMIT_OK);
	for (int r = 0; r < 20; r++)
		for (uint64_t i = 0; i < 8; i++)
			set_i(c, i, "hot");
	for (uint64_t i = 100; i < 140; i++) {
		ck_assert_int_eq(admit_lru_get_or_load(c, KEY(i), loader, &x,
		                                       reader, &g, 0), ADMIT_OK);
		delivered++;
	}
	ck_assert_int_eq(g.calls, delivered);
	ck_assert_uint_gt(stats_ex(c).base.rejected, 0);
	ck_assert_int_eq(admit_lru_get_or_load(c, "z", 1, no_value_loader, NULL,
	                                       reader, &g, 0), ADMIT_EINVAL);
	ck_assert_uint_eq(stats_ex(c).load_failures, 1);
	admit_lru_free(c);
}
END_TEST

/* ---- capacity, walk ------------------------------------------------- */

START_TEST(test_set_capacity)
{
	struct log *g = malloc(sizeof(*g));
	struct admit_lru *c = make_l(1000, (enum admit_lru_policy)_i, 4, g);
	struct admit_lru_stats_ex x;

	for (uint64_t i = 0; i < 1000; i++)
		set_i(c, i, "v");
	ck_assert_int_eq(admit_lru_set_capacity(c, 0, 0), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_capacity(c, 3, 0), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_capacity(NULL, 10, 0), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_capacity(c, ADMIT_LRU_MAX_CAPACITY + 1, 0),
	                 ADMIT_EINVAL);
	g->n = 0;
	ck_assert_int_eq(admit_lru_set_capacity(c, 100, 0), ADMIT_OK);
	x = stats_ex(c);
	ck_assert_uint_le(x.base.entries, 100);
	ck_assert_uint_ge(x.base.entries, 90);
	ck_assert_uint_eq(atomic_load(&g->count[ADMIT_LRU_EVICTED]) +
	                  atomic_load(&g->count[ADMIT_LRU_REJECTED]),
	                  stats_ex(c).removed[ADMIT_LRU_EVICTED] +
	                  stats_ex(c).removed[ADMIT_LRU_REJECTED]);
	/* Victims are evicted; window entries losing their contest on the
	 * way out are rejected. */
	ck_assert_uint_ge(atomic_load(&g->count[ADMIT_LRU_EVICTED]) +
	                  atomic_load(&g->count[ADMIT_LRU_REJECTED]),
	                  1000 - 100);
	ck_assert_uint_ge(atomic_load(&g->count[ADMIT_LRU_EVICTED]), 800);
	for (uint64_t i = 1000; i < 3000; i++)
		set_i(c, i, "v");
	ck_assert_uint_le(stats_ex(c).base.entries, 100);
	/* Grown, it fills again; a byte bound added on top holds too. */
	ck_assert_int_eq(admit_lru_set_capacity(c, 2000, 0), ADMIT_OK);
	for (int r = 0; r < 3; r++)
		for (uint64_t i = 5000; i < 7000; i++)
			set_i(c, i, "v");
	ck_assert_uint_gt(stats_ex(c).base.entries, 1500);
	ck_assert_int_eq(admit_lru_set_capacity(c, 2000, 50 * 73), ADMIT_OK);
	ck_assert_uint_le(stats_ex(c).base.bytes, 50 * 73);
	admit_lru_free(c);
	free(g);
}
END_TEST

START_TEST(test_set_capacity_bytes_only)
{
	struct admit_lru_config cfg = { .capacity_bytes = 100000, .seed = SEED,
	                                .shards = 2 };
	struct admit_lru *c = NULL;

	ck_assert_int_eq(admit_lru_new(&cfg, &c), ADMIT_OK);
	for (uint64_t i = 0; i < 2000; i++)
		set_i(c, i, "0123456789");
	ck_assert_int_eq(admit_lru_set_capacity(c, 10, 0), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_set_capacity(c, 0, 8300), ADMIT_OK);
	ck_assert_uint_le(stats_ex(c).base.bytes, 8300);
	ck_assert_uint_gt(stats_ex(c).base.entries, 0);
	/* An entry over the new shard bound is too big now. */
	{
		static char big[6000];

		ck_assert_int_eq(admit_lru_set(c, "b", 1, big, sizeof(big)),
		                 ADMIT_ETOOBIG);
	}
	admit_lru_free(c);
}
END_TEST

struct seen {
	uint64_t n;
	unsigned char *hits;            /* per stable key */
	uint64_t nstable;
	uint64_t stop_after;
	struct admit_lru *c;
};

static bool
visit(const void *key, size_t klen, const void *value, size_t vlen,
      uint64_t expires_at, void *arg)
{
	struct seen *s = arg;
	uint64_t k;

	(void)value; (void)vlen; (void)expires_at;
	s->n++;
	if (klen == sizeof(k)) {
		memcpy(&k, key, sizeof(k));
		for (uint64_t i = 0; i < s->nstable; i++)
			if (test_key(i) == k)
				s->hits[i]++;
	}
	if (s->c)  /* a call back into the cache from the visitor */
		(void)admit_lru_set(s->c, "walker", 6, "w", 1);
	return s->n != s->stop_after;
}

START_TEST(test_foreach)
{
	struct admit_lru_config cfg = { .capacity = 1000, .seed = SEED,
	                                .policy = ADMIT_LRU_PLAIN,
	                                .clock = fake_clock };
	struct admit_lru *c = NULL;
	unsigned char hits[200] = { 0 };
	struct seen s = { .hits = hits, .nstable = 200, .stop_after = 0 };

	atomic_store(&fake_now, 1000000000ull);
	ck_assert_int_eq(admit_lru_new(&cfg, &c), ADMIT_OK);
	for (uint64_t i = 0; i < 200; i++)
		set_i(c, i, "v");
	ck_assert_int_eq(admit_lru_set_expiring(c, KEY(500), "e", 1,
	                                        admit_lru_now(c) + 10), ADMIT_OK);
	atomic_fetch_add(&fake_now, 1000);
	ck_assert_int_eq(admit_lru_foreach(c, visit, &s), ADMIT_OK);
	ck_assert_uint_eq(s.n, 200);  /* not the expired one */
	for (int i = 0; i < 200; i++)
		ck_assert_int_eq(hits[i], 1);
	s = (struct seen){ .hits = hits, .nstable = 0, .stop_after = 7, .c = c };
	ck_assert_int_eq(admit_lru_foreach(c, visit, &s), ADMIT_OK);
	ck_assert_uint_eq(s.n, 7);
	ck_assert_int_eq(admit_lru_foreach(NULL, visit, &s), ADMIT_EINVAL);
	ck_assert_int_eq(admit_lru_foreach(c, NULL, &s), ADMIT_EINVAL);
	admit_lru_free(c);
}
END_TEST

/* The walk's order: shard after shard in index order, and within one
 * list (a plain LRU), least recently used first. */
struct order {
	struct admit_lru *c;
	unsigned last_shard, nshards_seen;
	uint64_t n, last_rank[64];      /* per shard: the last key's rank */
	bool ordered;
};

static bool
visit_order(const void *key, size_t klen, const void *value, size_t vlen,
            uint64_t expires_at, void *arg)
{
	struct order *o = arg;
	unsigned sh = admit_lru_shard_index(o->c, admit_lru_hash(o->c, key, klen));
	uint64_t rank;

	(void)expires_at;
	ck_assert_uint_eq(vlen, sizeof(rank));
	memcpy(&rank, value, sizeof(rank));
	ck_assert_uint_lt(sh, 64);
	if (o->n++ && sh != o->last_shard) {
		if (sh < o->last_shard)
			o->ordered = false;
		o->nshards_seen++;
	}
	if (o->last_rank[sh] > rank)
		o->ordered = false;
	o->last_rank[sh] = rank;
	o->last_shard = sh;
	return true;
}

START_TEST(test_foreach_order)
{
	struct admit_lru_config cfg = { .capacity = 4096, .seed = SEED,
	                                .policy = ADMIT_LRU_PLAIN, .shards = 8 };
	struct admit_lru *c = NULL;
	struct order o = { .ordered = true };
	uint64_t v;

	ck_assert_int_eq(admit_lru_new(&cfg, &c), ADMIT_OK);
	/* Set 0..999, then get the even ones: the recency order is the odd
	 * ones, then the even ones; ranks say it. */
	for (uint64_t i = 0; i < 1000; i++) {
		v = i % 2 ? i : 1000 + i;
		ck_assert_int_eq(admit_lru_set(c, KEY(i), &v, sizeof(v)), ADMIT_OK);
	}
	for (uint64_t i = 0; i < 1000; i += 2) {
		size_t len = sizeof(v);

		ck_assert_int_eq(admit_lru_get(c, KEY(i), &v, sizeof(v), &len),
		                 ADMIT_OK);
	}
	o.c = c;
	ck_assert_int_eq(admit_lru_foreach(c, visit_order, &o), ADMIT_OK);
	ck_assert_uint_eq(o.n, 1000);
	ck_assert(o.ordered);
	ck_assert_uint_eq(o.nshards_seen + 1, 8);
	ck_assert_uint_eq(admit_lru_shard_index(NULL, 1), 0);
	admit_lru_free(c);
}
END_TEST

/* Writers churning other keys during walks: every stable key is visited
 * exactly once by each walk. */
struct churn {
	struct admit_lru *c;
	_Atomic int stop;
};

static void *
churner(void *arg)
{
	struct churn *ch = arg;
	uint64_t i = 0;

	while (!atomic_load(&ch->stop)) {
		uint64_t k = 100000 + i++ % 3000;

		if (i % 3)
			(void)admit_lru_set(ch->c, KEY(k), "c", 1);
		else
			(void)admit_lru_delete(ch->c, KEY(k));
	}
	return NULL;
}

START_TEST(test_foreach_concurrent)
{
	struct admit_lru_config cfg = { .capacity = 100000, .seed = SEED,
	                                .policy = ADMIT_LRU_PLAIN };
	struct admit_lru *c = NULL;
	static unsigned char hits[500];
	struct churn ch;
	pthread_t t[2];

	ck_assert_int_eq(admit_lru_new(&cfg, &c), ADMIT_OK);
	for (uint64_t i = 0; i < 500; i++)
		set_i(c, i, "stable");
	ch = (struct churn){ .c = c };
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, churner, &ch);
	for (int w = 0; w < 20; w++) {
		struct seen s = { .hits = hits, .nstable = 500 };

		memset(hits, 0, sizeof(hits));
		ck_assert_int_eq(admit_lru_foreach(c, visit, &s), ADMIT_OK);
		for (int i = 0; i < 500; i++)
			ck_assert_int_eq(hits[i], 1);
	}
	atomic_store(&ch.stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	admit_lru_free(c);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("lru_embed");
	TCase *tc = tcase_create("lru_embed");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_listener_explicit_replaced);
	tcase_add_test(tc, test_listener_evicted_cleared);
	tcase_add_test(tc, test_listener_expired);
	tcase_add_test(tc, test_listener_rejected);
	tcase_add_test(tc, test_listener_at_free);
	tcase_add_loop_test(tc, test_listener_threads, 0, 4);
	tcase_add_loop_test(tc, test_load_herd, 0, 2);
	tcase_add_test(tc, test_load_nowait_and_args);
	tcase_add_test(tc, test_load_rejected_and_bad_loader);
	tcase_add_loop_test(tc, test_set_capacity, 0, 4);
	tcase_add_test(tc, test_set_capacity_bytes_only);
	tcase_add_test(tc, test_foreach);
	tcase_add_test(tc, test_foreach_order);
	tcase_add_test(tc, test_foreach_concurrent);
	suite_add_tcase(s, tc);
	return test_run(srunner_create(s));
}
