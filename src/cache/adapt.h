/*
 * adapt.h - the adaptation of a cache's policy configuration, behind a
 * small table of functions (as memcached's slab_automove and Caffeine's
 * climber are): the cache reports requests, the adaptation says which
 * configuration every shard should run.  One implementation: a miniature
 * simulation (minisim.h) of admit_minisim_configs on a sample of the keys.
 *
 * Which requests it sees.  An adaptation watches a fixed set of keys
 * (admit_adapt_watches: a hash test, inline, so an unwatched request costs
 * no call) and is told of every get, set and compute of them.
 *
 * Who records a watched key's TinyLFU record.  The caller, at its request,
 * through these hooks: the adaptation's contests run outside any shard and
 * must see every earlier request of the keys they compare, which a record
 * deferred to a shard's drain would not be.  Every other key's hits are
 * recorded by the drain of the key's shard, whose own contests follow that
 * drain.  admit_adapt_caller_records() is the rule, for the shard's side.
 *
 * Thread-safety: the hooks may be called from any thread, outside the
 * shard mutexes, and never wait (a busy simulation drops the sample: it
 * costs a little evidence, nothing else); current() is one relaxed load.
 */
#ifndef ADMIT_CACHE_ADAPT_H
#define ADMIT_CACHE_ADAPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <admit/status.h>
#include <admit/tinylfu.h>

#include "freqsketch.h"
#include "minisim.h"
#include "policy.h"

struct admit_adapt;

struct admit_adapt_ops {
	/* A get of watched key h: counted in the simulation, then, if
	 * recorded (a hit that was not quiet: policy.h), recorded in the
	 * cache's sketch, and the simulation's sketches likewise. */
	void (*on_get)(struct admit_adapt *a, uint64_t h, bool hit,
	               bool recorded);
	/* A set of watched key h of weight w, before the shard's contest:
	 * recorded in the cache's sketch, then counted in the simulation. */
	void (*on_set)(struct admit_adapt *a, uint64_t h, uint64_t w);
	/* A compute of watched key h, after the shard's part, which made
	 * its record (admit_adapt_record_now) if recorded: counted in the
	 * simulation as a get. */
	void (*on_compute)(struct admit_adapt *a, uint64_t h, bool recorded);
	/* The configuration to run now, an index into
	 * admit_minisim_configs. */
	unsigned (*current)(const struct admit_adapt *a);
	/* What it allocated, and how often its choice changed. */
	void (*stats)(struct admit_adapt *a, uint64_t *bytes, uint64_t *switches);
	void (*free)(struct admit_adapt *a);
};

struct admit_adapt {
	const struct admit_adapt_ops *ops;
	struct admit_freqsketch *sketch;/* the cache's sketch (not owned) */
	uint64_t watch;                 /* admit_minisim_sample's threshold */
};

/* What a miniature simulation needs to know of its cache. */
struct admit_adapt_params {
	uint64_t max_weight;            /* capacity in weight units */
	uint64_t entries;               /* entries it will hold */
	struct admit_freqsketch *sketch;/* its sketch */
	const struct admit_tinylfu_config *tinylfu;  /* the user's, or NULL */
	uint64_t seed;
};

/* The miniature simulation.  ADMIT_NOMEM when out of memory. */
enum admit_status admit_adapt_minisim_new(const struct admit_adapt_params *p,
                                          struct admit_adapt **out);

/* Whether a (NULL: no adaptation) watches key hash h. */
static inline bool
admit_adapt_watches(const struct admit_adapt *a, uint64_t h)
{
	return a && admit_minisim_sample(h, a->watch);
}

/* Whether h's TinyLFU records are the caller's (through the hooks or
 * admit_adapt_record_now), not the shard's drain. */
static inline bool
admit_adapt_caller_records(const struct admit_adapt *a, uint64_t h)
{
	return admit_adapt_watches(a, h);
}

/* A watched key's record made by the caller at a point of its choosing
 * (compute: under the shard mutex, before the contest). */
static inline void
admit_adapt_record_now(struct admit_adapt *a, uint64_t h)
{
	admit_freqsketch_record(a->sketch, h);
}

static inline void
admit_adapt_free(struct admit_adapt *a)
{
	if (a)
		a->ops->free(a);
}

#endif /* ADMIT_CACHE_ADAPT_H */
