/*
 * minisim.h - choosing a policy configuration by miniature simulation
 * (Waldspurger, Saemundsson, Ahmad, Park, "Cache Modeling and Optimization
 * using Miniature Simulations", USENIX ATC 2017), with SHARDS' spatial
 * sampling (Waldspurger et al., FAST 2015): a few small caches, each
 * running the policy core (policy.h) with another configuration on the
 * requests whose key hash falls in a fixed sample, score their hits; the
 * real cache takes the configuration of the one that hit most, when it
 * beats the current one by a margin and by its sampling error, and gives
 * it back when its own hits say the move made them worse.  A guard holds
 * the real cache's hits since the start to those of two exact shadows,
 * the default fixed configuration and LRU (minisim.c, guard()).
 * Internal: never installed, not exported.
 *
 * Thread-safety: none; the owner serialises calls (admit_lru: a mutex of
 * its own, taken with trylock so a get never waits for it).
 */
#ifndef ADMIT_MINISIM_H
#define ADMIT_MINISIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hash.h"
#include "policy.h"

/* Mini caches, one per configuration of admit_minisim_configs. */
#define ADMIT_MINISIM_N 11
/* Index of plain LRU among them. */
#define ADMIT_MINISIM_LRU 6
/* Index of W-TinyLFU with a 1 % window among them: the default fixed
 * configuration, which the guard holds the real cache to (with LRU). */
#define ADMIT_MINISIM_WTINYLFU 1
/* Index of LIRS among them. */
#define ADMIT_MINISIM_LIRS 9
/* Index of the configuration a cache starts with: plain LRU, until a mini
 * cache first hits (the first reuse of a sampled key) or a sampled key is
 * set that no get asked for (LRU's mini cache does not hold it: a miss
 * is filled there at once).  Until the first reuse every get is a first
 * access, every configuration misses alike and nothing tells them apart,
 * yet what the cache holds then decides its hits there: LRU holds the
 * most recent keys (a zigzag's turn reads them first), LIRS and W-TinyLFU
 * the first ones, kept against newcomers.  When the keys came by the
 * gets' misses, their order is the reads' own, and running LRU holds the
 * real cache to its LRU shadow up to the first reuse; on a loop LIRS then
 * takes LRU's keys as its LIR blocks, and any fixed set of keys hits as
 * well as another.  A write no read asked for (a load, a restart from a
 * file) says nothing of the reads to come, and plain LRU would let the
 * writer's order decide what a shard keeps when it overflows (on a fill
 * of the hottest keys first, LRU evicts them); so the cache leaves LRU at
 * once, as it does at the first reuse, and keeps the first keys written
 * against newcomers, as its W-TinyLFU shadow does (doc/hit-ratio.md,
 * "Where it starts"). */
#ifndef ADMIT_MINISIM_START
#define ADMIT_MINISIM_START ADMIT_MINISIM_LRU
#endif
/* Index of the configuration taken when the start ends: LIRS, whose state
 * (which keys are LIR) takes a pass of the workload to build, where
 * W-TinyLFU's (the sketch's counts) is kept whatever the policy runs, so
 * a move to W-TinyLFU costs little and one to LIRS a lot
 * (doc/hit-ratio.md). */
#ifndef ADMIT_MINISIM_REUSED
#define ADMIT_MINISIM_REUSED ADMIT_MINISIM_LIRS
#endif

extern const struct admit_policy_config admit_minisim_configs[ADMIT_MINISIM_N];

/* The contest the mini caches run: TinyLFU's, on a sketch of the sampled
 * requests in the configuration's mode (steady or aging). */
typedef bool (*admit_minisim_admit_fn)(void *ctx, bool steady,
                                       uint64_t cand_hash,
                                       uint64_t victim_hash);

struct admit_minisim;

/*
 * A simulator for a cache of capacity max_weight weight units holding
 * about entries entries (equal unless weights are bytes).  Sample rate 1
 * up to ADMIT_MINISIM_MAX_ENTRIES entries; above, each mini cache holds
 * about that many (bounded memory: admit_minisim_bytes).  NULL when out of
 * memory or max_weight or entries is 0.
 */
struct admit_minisim *admit_minisim_new(uint64_t max_weight, uint64_t entries,
                                        admit_minisim_admit_fn admit,
                                        void *admit_ctx);
void admit_minisim_free(struct admit_minisim *m);

/* Whether requests for hash h are simulated (no state touched: callers
 * test it before taking the simulator's lock). */
bool admit_minisim_sampled(const struct admit_minisim *m, uint64_t h);

/* The same test inline, for a caller that keeps the threshold. */
uint64_t admit_minisim_threshold(const struct admit_minisim *m);

static inline bool
admit_minisim_sample(uint64_t h, uint64_t threshold)
{
	if (threshold == UINT64_MAX)
		return true;
	/* Mixed again: the bits that pick shards and buckets do not pick the
	 * sample too. */
	h = admit_mix64(h);
	return h < threshold;
}

/* A get of a sampled key: each mini cache counts a hit or a miss.  Every
 * quarter period, moves to the best configuration if the evidence says so
 * (minisim.c, decide()); returns the configuration index to use now. */
unsigned admit_minisim_get(struct admit_minisim *m, uint64_t h);

/* The same, told whether the real cache hit: after a switch, the real
 * cache's own hits are compared with what it had, and a switch that made
 * them worse is undone (minisim.c, end_check()). */
unsigned admit_minisim_get_real(struct admit_minisim *m, uint64_t h,
                                bool real_hit);

/* A set of a sampled key of weight w: stored in each mini cache (a new key
 * through its policy's admission; a present one stored again only if its
 * weight changed).  Ends the start when no get asked for the key
 * (ADMIT_MINISIM_START); returns the configuration index to use now. */
unsigned admit_minisim_set(struct admit_minisim *m, uint64_t h, uint64_t w);

/* The chosen configuration's index. */
unsigned admit_minisim_current(const struct admit_minisim *m);

/* How many times the chosen configuration changed (undoing included). */
uint64_t admit_minisim_switches(const struct admit_minisim *m);

/* How many switches the real cache's hits undid. */
uint64_t admit_minisim_undone(const struct admit_minisim *m);

/* How many times the guard moved the real cache to a shadow (minisim.c,
 * guard()). */
uint64_t admit_minisim_guarded(const struct admit_minisim *m);

/* Entries each mini cache holds (the cache's own up to
 * ADMIT_MINISIM_MAX_ENTRIES): what its contest's sketch is sized for. */
uint64_t admit_minisim_entries(const struct admit_minisim *m);

/* Bytes the simulator allocated. */
size_t admit_minisim_bytes(const struct admit_minisim *m);

/* Entries each mini cache may hold, at most. */
#define ADMIT_MINISIM_MAX_ENTRIES 2048u

/* Tuning, exposed for the tests: decay of the scores per period, the
 * margin in hit ratio the best must beat the current by (within a family,
 * and across families, where the move costs the real cache more), the
 * period in sampled gets per entry of a mini cache (at least 1000 gets).
 * Decay, margin and period were swept (period 1, 3, 10; decay 0.8, 0.9;
 * margin 0.25, 0.5, 1 point) on half of the shared traces (gli, loop,
 * multi1-3, sprite, 2_pools, scan), checked on the other half (OLTP, P3,
 * gcc, swim, orm-night, web12, scarab-recs); the family margin and the
 * start (1, 2 points; W-TinyLFU or LIRS) likewise: doc/hit-ratio.md. */
#define ADMIT_MINISIM_DECAY 0.9
#define ADMIT_MINISIM_HYSTERESIS 0.005
#define ADMIT_MINISIM_FAMILY_HYSTERESIS 0.02
#define ADMIT_MINISIM_PERIOD 1u
/* Standard errors a difference must exceed to be acted on (a switch, an
 * undo), and how many periods an undone configuration sits out (z 1.5
 * and 3, bans of 4 and 16 periods swept on the training half:
 * doc/hit-ratio.md). */
#define ADMIT_MINISIM_Z 2.0
#define ADMIT_MINISIM_BAN 8u
/* The guard's allowance: the hit ratio (per sampled get) by which the
 * real cache may trail a shadow (W-TinyLFU 1 %, LRU) beyond twice the
 * sampling error before the guard moves it (minisim.c, guard()).  Chosen
 * among 0.1, 0.25 and 0.5 point by leaving one trace out, which picks 0.1
 * for 108 of the 110 points (doc/hit-ratio.md, "The table"); a build may
 * set it (programs/cache_sim/hitratio_table.sh --loo). */
#ifndef ADMIT_MINISIM_GUARD_MARGIN
#define ADMIT_MINISIM_GUARD_MARGIN 0.001
#endif

/* The guard's allowance where keys are sampled (above
 * ADMIT_MINISIM_MAX_ENTRIES entries), where a shadow's mini cache also
 * errs by its scaling (minisim.c, guard()); and the random groups of
 * sampled keys its sampling error is estimated from (guard_se()).
 * Chosen among 0.1, 0.25 and 0.5 point by leaving one trace out, which
 * picks 0.1 for every trace (doc/hit-ratio.md, "The table"); a build may
 * set it (programs/cache_sim/hitratio_table.sh --loo). */
#ifndef ADMIT_MINISIM_GUARD_SAMPLED_MARGIN
#define ADMIT_MINISIM_GUARD_SAMPLED_MARGIN 0.001
#endif
#define ADMIT_MINISIM_GROUPS 32u
/* The lead a shadow's mini cache must have over the current
 * configuration's of another family (out of LIRS) for the guard to move
 * a sampled cache; where every key is sampled it is decide()'s margin
 * across families.  A large cache's trace is few periods long and its
 * decayed scores hold the fill, where every configuration hits alike,
 * so 2 points of them come late.  Chosen among 0.5, 1 and 2 points by
 * leaving one trace out (doc/hit-ratio.md, "The table"); a build may
 * set it. */
#ifndef ADMIT_MINISIM_GUARD_SAMPLED_LEAD
#define ADMIT_MINISIM_GUARD_SAMPLED_LEAD 0.005
#endif
/* The same lead where every key is sampled (at most
 * ADMIT_MINISIM_MAX_ENTRIES entries): decide()'s margin across families
 * (0.5 point and none cost gli at 750 about 2 points: doc/tried.md).  A
 * build may set it. */
#ifndef ADMIT_MINISIM_GUARD_LEAD
#define ADMIT_MINISIM_GUARD_LEAD ADMIT_MINISIM_FAMILY_HYSTERESIS
#endif
/* Which of the guard's moves on a sampled cache a shadow's lead on the
 * stretch that ends now (its owed count beyond its error) lets past the
 * lead asked above (minisim.c, owed_leads()): 0 none, 1 every move, 2
 * moves out of LIRS.  Left one trace out, the other traces choose 1 for
 * every trace but short-large (2); 1 costs short-large-s2 at 50,000
 * 0.53, more than a change may cost a point, and 2 costs no point more
 * than 0.2 (doc/hit-ratio.md, "The move's cost").
 * A build may set it. */
#ifndef ADMIT_MINISIM_GUARD_OWED_LEADS
#define ADMIT_MINISIM_GUARD_OWED_LEADS 2
#endif
/* Whether the guard's move within a family on a sampled cache is let
 * past the veto's margin (decide()'s within a family,
 * ADMIT_MINISIM_HYSTERESIS) when the real cache has trailed the shadow
 * since the last switch beyond chance and the shadow's mini cache scores
 * at least as well as the current configuration's (minisim.c,
 * trails_shadow()): 1 yes, 0 no.  Left one trace out, the other traces
 * choose 1 for every trace (doc/hit-ratio.md, "Trailing since the
 * switch").  A build may set it. */
#ifndef ADMIT_MINISIM_GUARD_TRAILS
#define ADMIT_MINISIM_GUARD_TRAILS 1
#endif

/* For tests: the decayed hit ratio of mini cache i. */
double admit_minisim_score(const struct admit_minisim *m, unsigned i);

#endif /* ADMIT_MINISIM_H */
