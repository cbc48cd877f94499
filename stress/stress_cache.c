/*
 * stress_cache - N threads get/set/delete/compute on one admit_lru over a Zipf key
 * space (one operation in twenty 8 gets in one admit_lru_get_many or
 * admit_lru_get_many_u64 call), checking as they go:
 *   - every value a get returns was written for that key and is intact (a
 *     value carries its key, its writer, a length-dependent filler and a
 *     checksum over all of it);
 *   - the byte capacity is never exceeded (a monitor thread samples the
 *     statistics while the workers run);
 *   - afterwards, the entries the statistics count are exactly the keys a
 *     get still finds.
 * Prints its seed and one summary line; exits non-zero on any failure.
 *
 *   stress_cache [--threads N] [--seconds S] [--keys K] [--bytes B]
 *                [--shards N] [--policy adaptive|wtinylfu|tinylfu|lru]
 *                [--seed N]
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <admit/admit.h>

#include "cache_value.h"
#include "prng.h"
#include "zipf.h"

#define MAX_THREADS 64
#define MAX_VALUE 512

struct config {
	unsigned threads, shards, seconds;
	uint64_t keys, bytes, seed;
	enum admit_lru_policy policy;
};

struct worker {
	struct admit_lru *cache;
	const struct config *cfg;
	const double *cdf;
	unsigned id;
	uint64_t gets, hits, sets, rejected, deletes, bad, errors;
};

/* Released by main once every thread is ready, so all start together;
 * cleared to stop them.  seq_cst: a few accesses per run. */
static atomic_int start_gate, running;

static size_t
make_value(unsigned char *v, uint64_t key, uint64_t writer, struct prng *rng)
{
	size_t len = CACHE_VALUE_MIN +
	             (size_t)(prng_next(rng) % (MAX_VALUE - CACHE_VALUE_MIN + 1));

	return cache_value_make(v, len, key, writer);
}

static bool
check_value(const unsigned char *v, size_t len, uint64_t key)
{
	return cache_value_check(v, len, key, MAX_VALUE);
}

static uint64_t
zipf_key(const double *cdf, uint64_t n, struct prng *rng)
{
	return zipf_rank(cdf, n, prng_unit(rng));
}

/* compute's updater: checks the value found (a hit, which compute applies
 * itself and whose TinyLFU record it queues in the get ring) and keeps it;
 * stores a fresh one when the key is absent. */
struct touch {
	struct worker *w;
	uint64_t key;
	struct prng *rng;
};

static enum admit_lru_verdict
touch(struct admit_lru_update *up, void *arg)
{
	struct touch *t = arg;
	unsigned char v[MAX_VALUE];
	size_t len;
	void *b;

	if (up->found) {
		t->w->hits++;
		t->w->bad += !check_value(up->old, up->old_len, t->key);
		return ADMIT_LRU_KEEP;
	}
	len = make_value(v, t->key, t->w->id, t->rng);
	b = admit_lru_update_alloc(up, len);
	if (!b)
		return ADMIT_LRU_KEEP;
	memcpy(b, v, len);
	return ADMIT_LRU_STORE;
}

static void *
work(void *arg)
{
	struct worker *w = arg;
	struct prng rng = { w->cfg->seed * 0x100000001b3ull + w->id };
	unsigned char buf[MAX_VALUE];

	atomic_fetch_add(&start_gate, -1);
	while (atomic_load(&start_gate) > 0)
		;
	while (atomic_load(&running)) {
		for (int batch = 0; batch < 256; batch++) {
			uint64_t key = zipf_key(w->cdf, w->cfg->keys, &rng);
			unsigned op = (unsigned)(prng_next(&rng) % 100);
			enum admit_status st;
			size_t len;

			if (op < 5) {
				/* A batch of 8 Zipf keys in one call, of
				 * either kind: each checked as a get's. */
				uint64_t keys[8];
				const void *kp[8];
				size_t kl[8], lens[8];
				unsigned char vals[8][MAX_VALUE];
				enum admit_status sts[8];

				keys[0] = key;
				for (int k = 1; k < 8; k++)
					keys[k] = zipf_key(w->cdf, w->cfg->keys, &rng);
				for (int k = 0; k < 8; k++) {
					kp[k] = &keys[k];
					kl[k] = sizeof(keys[k]);
				}
				st = op % 2 ? admit_lru_get_many(w->cache, 8, kp, kl, vals,
				                                 MAX_VALUE, lens, sts)
				            : admit_lru_get_many_u64(w->cache, 8, keys, vals,
				                                     MAX_VALUE, lens, sts);
				w->errors += st != ADMIT_OK;
				w->gets += 8;
				for (int k = 0; k < 8 && st == ADMIT_OK; k++) {
					if (sts[k] == ADMIT_OK) {
						w->hits++;
						w->bad += !check_value(vals[k], lens[k], keys[k]);
					} else if (sts[k] != ADMIT_NOTFOUND) {
						w->errors++;
					}
				}
			} else if (op < 70) {
				w->gets++;
				st = admit_lru_get(w->cache, &key, sizeof(key), buf,
				                   sizeof(buf), &len);
				if (st == ADMIT_OK) {
					w->hits++;
					w->bad += !check_value(buf, len, key);
				} else if (st != ADMIT_NOTFOUND) {
					w->errors++;
				}
			} else if (op < 72) {
				struct touch t = { w, key, &rng };

				w->gets++;
				st = admit_lru_compute(w->cache, &key, sizeof(key), touch, &t);
				w->rejected += st == ADMIT_REJECTED;
				w->errors += st != ADMIT_OK && st != ADMIT_REJECTED;
			} else if (op < 95) {
				len = make_value(buf, key, w->id, &rng);
				st = admit_lru_set(w->cache, &key, sizeof(key), buf, len);
				w->sets++;
				w->rejected += st == ADMIT_REJECTED;
				w->errors += st != ADMIT_OK && st != ADMIT_REJECTED;
			} else {
				st = admit_lru_delete(w->cache, &key, sizeof(key));
				w->deletes++;
				w->errors += st != ADMIT_OK && st != ADMIT_NOTFOUND;
			}
		}
	}
	return NULL;
}

struct monitor {
	struct admit_lru *cache;
	uint64_t limit, samples, over, max_seen;
};

static void *
watch(void *arg)
{
	struct monitor *m = arg;
	struct admit_lru_stats st;

	while (atomic_load(&running)) {
		admit_lru_stats(m->cache, &st);
		m->samples++;
		m->over += st.bytes > m->limit;
		if (st.bytes > m->max_seen)
			m->max_seen = st.bytes;
	}
	return NULL;
}

static int
parse(int argc, char **argv, struct config *c)
{
	*c = (struct config){ .threads = 4, .shards = 8, .seconds = 2,
	                      .keys = 20000, .bytes = 1 << 20,
	                      .seed = (uint64_t)time(NULL) };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[++i] : NULL;
		unsigned long long n = v ? strtoull(v, NULL, 10) : 0;

		if (!v)
			return -1;
		if (!strcmp(a, "--threads") && n >= 1 && n <= MAX_THREADS)
			c->threads = (unsigned)n;
		else if (!strcmp(a, "--seconds") && n >= 1)
			c->seconds = (unsigned)n;
		else if (!strcmp(a, "--keys") && n >= 1 && n <= 100000000)
			c->keys = n;
		else if (!strcmp(a, "--bytes") && n >= 4096)
			c->bytes = n;
		else if (!strcmp(a, "--shards") && n >= 1 && !(n & (n - 1)))
			c->shards = (unsigned)n;
		else if (!strcmp(a, "--seed") && n >= 1)
			c->seed = n;
		else if (!strcmp(a, "--policy") && !strcmp(v, "adaptive"))
			c->policy = ADMIT_LRU_ADAPTIVE;
		else if (!strcmp(a, "--policy") && !strcmp(v, "wtinylfu"))
			c->policy = ADMIT_LRU_WTINYLFU;
		else if (!strcmp(a, "--policy") && !strcmp(v, "tinylfu"))
			c->policy = ADMIT_LRU_TINYLFU;
		else if (!strcmp(a, "--policy") && !strcmp(v, "lru"))
			c->policy = ADMIT_LRU_PLAIN;
		else
			return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct config cfg;
	struct admit_lru_config lc;
	struct admit_lru *cache;
	struct admit_lru_stats st;
	struct worker w[MAX_THREADS];
	struct monitor mon;
	pthread_t tid[MAX_THREADS], mtid;
	struct worker sum = { 0 };
	uint64_t found = 0, bad_after = 0;
	double *cdf;
	enum admit_status s;
	bool ok;

	if (parse(argc, argv, &cfg) != 0) {
		fprintf(stderr, "usage: stress_cache [--threads N] [--seconds S] [--keys K]"
		        " [--bytes B] [--shards N] [--policy adaptive|wtinylfu|tinylfu|lru]"
		        " [--seed N]\n");
		return 2;
	}
	printf("stress_cache: seed %" PRIu64 ", %u threads, %u s, %" PRIu64
	       " keys, %" PRIu64 " bytes, %u shards\n", cfg.seed, cfg.threads,
	       cfg.seconds, cfg.keys, cfg.bytes, cfg.shards);
	cdf = zipf_table(cfg.keys, 0.99);
	if (!cdf)
		return 1;
	lc = (struct admit_lru_config){ .capacity_bytes = cfg.bytes,
	                                .policy = cfg.policy,
	                                .shards = cfg.shards, .seed = cfg.seed };
	s = admit_lru_new(&lc, &cache);
	if (s != ADMIT_OK) {
		fprintf(stderr, "stress_cache: admit_lru_new: %s\n", admit_strerror(s));
		free(cdf);
		return 1;
	}
	atomic_store(&start_gate, (int)cfg.threads);
	atomic_store(&running, 1);
	mon = (struct monitor){ .cache = cache, .limit = cfg.bytes };
	for (unsigned t = 0; t < cfg.threads; t++) {
		w[t] = (struct worker){ .cache = cache, .cfg = &cfg, .cdf = cdf, .id = t };
		if (pthread_create(&tid[t], NULL, work, &w[t]) != 0) {
			fprintf(stderr, "stress_cache: pthread_create failed\n");
			return 1;
		}
	}
	if (pthread_create(&mtid, NULL, watch, &mon) != 0)
		return 1;
	nanosleep(&(struct timespec){ .tv_sec = cfg.seconds }, NULL);
	atomic_store(&running, 0);
	for (unsigned t = 0; t < cfg.threads; t++) {
		pthread_join(tid[t], NULL);
		sum.gets += w[t].gets;
		sum.hits += w[t].hits;
		sum.sets += w[t].sets;
		sum.rejected += w[t].rejected;
		sum.deletes += w[t].deletes;
		sum.bad += w[t].bad;
		sum.errors += w[t].errors;
	}
	pthread_join(mtid, NULL);

	/* Quiescent: every key the statistics count must be found, intact. */
	for (uint64_t k = 0; k < cfg.keys; k++) {
		unsigned char buf[MAX_VALUE];
		size_t len;

		if (admit_lru_get(cache, &k, sizeof(k), buf, sizeof(buf), &len) == ADMIT_OK) {
			found++;
			bad_after += !check_value(buf, len, k);
		}
	}
	admit_lru_stats(cache, &st);
	ok = sum.bad == 0 && sum.errors == 0 && mon.over == 0 && bad_after == 0 &&
	     found == st.entries && st.bytes <= cfg.bytes && sum.hits > 0;
	printf("stress_cache: %s: %" PRIu64 " gets (%.1f %% hits), %" PRIu64
	       " sets (%" PRIu64 " rejected), %" PRIu64 " deletes; %" PRIu64
	       " bad values, %" PRIu64 " errors; bytes max %" PRIu64 " of %" PRIu64
	       " over %" PRIu64 " samples (%" PRIu64 " over); %" PRIu64
	       " entries, %" PRIu64 " found; %" PRIu64 " policy switches\n",
	       ok ? "PASS" : "FAIL", sum.gets,
	       sum.gets ? 100.0 * (double)sum.hits / (double)sum.gets : 0.0,
	       sum.sets, sum.rejected, sum.deletes, sum.bad + bad_after, sum.errors,
	       mon.max_seen, cfg.bytes, mon.samples, mon.over, st.entries, found,
	       st.sim_switches);
	admit_lru_free(cache);
	free(cdf);
	return ok ? 0 : 1;
}
