/*
 * adapt.c - the miniature simulation as a cache's adaptation (adapt.h).
 *
 * The simulation (minisim.c) and its two sketches sit behind a mutex that
 * callers only try: a sample missed under contention costs nothing but a
 * little evidence, and no request waits.  The configuration it chose is an
 * atomic index that shards read at their maintenance.
 *
 * The real sketch runs in one mode at a time (freqsketch.h): the
 * mini caches of the other mode contest on a sketch of the sampled
 * requests alone, in that mode ([0] aging, [1] steady).
 */
#include "config.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>

#include "alloc.h"
#include "cache/adapt.h"

struct sim {
	struct admit_adapt a;           /* first: the ops' pointer */
	struct admit_minisim *m;
	struct admit_freqsketch *sketch[2];
	pthread_mutex_t mu;
	alignas(ADMIT_CACHELINE) _Atomic unsigned config;
};

static struct sim *
sim_of(const struct admit_adapt *a)
{
	return (struct sim *)a;
}

/* A mini cache's contest: on the real sketch when it runs in the mini
 * cache's mode (the mini cache of the current configuration then sees the
 * very estimates the shards see), else on the simulation's own, which only
 * holders of the mutex touch (sample() holds it). */
static bool
sim_admit(void *ctx, bool steady, uint64_t cand, uint64_t victim)
{
	struct sim *s = ctx;
	/* relaxed: an index into a constant table; the mutex orders it with
	 * the store in sample() anyway. */
	unsigned k = atomic_load_explicit(&s->config, memory_order_relaxed);

	if (admit_minisim_configs[k].steady == steady)
		return admit_freqsketch_admit(s->a.sketch, cand, victim);
	return admit_freqsketch_admit(s->sketch[steady], cand, victim);
}

/* Feeds a request to the simulation, unless another thread is in it.  w is
 * the weight of a set, 0 for a get; recorded tells whether the real cache
 * counted this request in its sketch, so the simulation's sketches count
 * what the real one does; hit whether a get hit in the real cache (-1: not
 * known), for the check of a switch (minisim.h). */
static void
sample(struct sim *s, uint64_t h, uint64_t w, bool recorded, int hit)
{
	unsigned k;

	if (pthread_mutex_trylock(&s->mu) != 0)
		return;
	if (recorded) {
		admit_freqsketch_record(s->sketch[0], h);
		admit_freqsketch_record(s->sketch[1], h);
	}
	/* A set may end the start (minisim.h): stored before the shard's
	 * maintenance that follows on_set applies it, so a fill by sets runs
	 * what the simulation chose from its first set. */
	k = w ? admit_minisim_set(s->m, h, w)
	    : hit < 0 ? admit_minisim_get(s->m, h)
	    : admit_minisim_get_real(s->m, h, hit);
	/* Stored only when it changes: every shard's maintenance reads it,
	 * and a store each sample would bounce its line between the cores.
	 * relaxed: see sim_admit(). */
	if (k != atomic_load_explicit(&s->config, memory_order_relaxed)) {
		atomic_store_explicit(&s->config, k, memory_order_relaxed);
		admit_freqsketch_set_steady(s->a.sketch,
		                            admit_minisim_configs[k].steady);
	}
	pthread_mutex_unlock(&s->mu);
}

static void
on_get(struct admit_adapt *a, uint64_t h, bool hit, bool recorded)
{
	sample(sim_of(a), h, 0, recorded, hit);
	if (recorded)
		admit_freqsketch_record(a->sketch, h);
}

/* The record first, so the candidate's own request counts in the mini
 * caches' contests; a key a mini cache turned away at the get that missed
 * gets a second contest here, as the measured constants assume
 * (doc/hit-ratio.md). */
static void
on_set(struct admit_adapt *a, uint64_t h, uint64_t w)
{
	admit_freqsketch_record(a->sketch, h);
	sample(sim_of(a), h, w, true, -1);
}

static void
on_compute(struct admit_adapt *a, uint64_t h, bool recorded)
{
	sample(sim_of(a), h, 0, recorded, -1);
}

static unsigned
current(const struct admit_adapt *a)
{
	/* relaxed: see sim_admit(); a shard that reads an older index
	 * applies the newer at its next maintenance. */
	return atomic_load_explicit(&sim_of(a)->config, memory_order_relaxed);
}

static void
stats(struct admit_adapt *a, uint64_t *bytes, uint64_t *switches)
{
	struct sim *s = sim_of(a);

	pthread_mutex_lock(&s->mu);
	*bytes = admit_minisim_bytes(s->m) + admit_freqsketch_memory(s->sketch[0]) +
	         admit_freqsketch_memory(s->sketch[1]);
	*switches = admit_minisim_switches(s->m);
	pthread_mutex_unlock(&s->mu);
}

static void
sim_free(struct admit_adapt *a)
{
	struct sim *s = sim_of(a);

	admit_minisim_free(s->m);
	admit_freqsketch_free(s->sketch[0]);
	admit_freqsketch_free(s->sketch[1]);
	pthread_mutex_destroy(&s->mu);
	admit_table_free(s, sizeof(*s));
}

static const struct admit_adapt_ops minisim_ops = {
	.on_get = on_get, .on_set = on_set, .on_compute = on_compute,
	.current = current, .stats = stats, .free = sim_free,
};

/* Words a sketch of the simulation holds per mini cache entry: four times
 * the real cache's (cache.c).  Their mini caches' scores decide between
 * configurations on margins of a fraction of a point, which a sketch one
 * word an entry wide blurs by its collisions (on scan-hot, adaptive then
 * settles a point under the 1 % window it should match: doc/design.md,
 * "The cache's frequency sketch"); at most ADMIT_MINISIM_MAX_ENTRIES
 * entries, the width costs a few tens of KiB a cache. */
#define SIM_SKETCH_WIDTH 4u

/* The simulation's two sketches, for its mini caches' entries and its
 * share of the requests: the real sketch's settings scaled by the sample
 * rate (a sample of W records of every key is W x rate records of the
 * sampled ones).  False when out of memory. */
static bool
sketches(struct sim *s, const struct admit_adapt_params *p)
{
	struct admit_tinylfu_config tc = { 0 };
	uint64_t n = admit_minisim_entries(s->m);

	if (p->tinylfu)
		tc = *p->tinylfu;
	if (tc.sample_size) {
		tc.sample_size = (uint64_t)((double)tc.sample_size * (double)n /
		                            (double)p->entries + 0.5);
		if (tc.sample_size == 0)
			tc.sample_size = 1;
	}
	tc.cache_capacity = n;
	for (unsigned i = 0; i < 2; i++) {
		tc.seed = admit_mix64(p->seed + i + 1);
		if (admit_freqsketch_new(&tc, SIM_SKETCH_WIDTH, &s->sketch[i]) !=
		    ADMIT_OK)
			return false;
	}
	admit_freqsketch_set_steady(s->sketch[1], true);
	return true;
}

enum admit_status
admit_adapt_minisim_new(const struct admit_adapt_params *p,
                        struct admit_adapt **out)
{
	struct sim *s = admit_table_alloc(sizeof(*s));

	if (!s)
		return ADMIT_NOMEM;
	*s = (struct sim){ .a = { .ops = &minisim_ops, .sketch = p->sketch } };
	atomic_init(&s->config, ADMIT_MINISIM_START);
	/* The simulation is of the whole cache, unsharded: the configuration
	 * it picks is applied to every shard. */
	s->m = admit_minisim_new(p->max_weight, p->entries, sim_admit, s);
	if (!s->m)
		goto fail;
	/* relaxed: not yet shared. */
	atomic_store_explicit(&s->config, admit_minisim_current(s->m),
	                      memory_order_relaxed);
	s->a.watch = admit_minisim_threshold(s->m);
	if (!sketches(s, p) || pthread_mutex_init(&s->mu, NULL) != 0)
		goto fail;
	*out = &s->a;
	return ADMIT_OK;
fail:
	admit_minisim_free(s->m);
	admit_freqsketch_free(s->sketch[0]);
	admit_freqsketch_free(s->sketch[1]);
	admit_table_free(s, sizeof(*s));
	return ADMIT_NOMEM;
}
