/*
 * tinylfu.c - TinyLFU admission (doc/design.md §6).
 *
 * A key is hashed once with the instance's seed; the 64-bit hash then
 * addresses the doorkeeper directly (cbf_*_hash) and is the 8-byte key of the
 * counting cuckoo filter, so a long key is read once whatever the structure.
 *
 * Progress and ordering: the doorkeeper is lock-free, the frequency store is
 * lock-striped (cuckoo.c), and every atomic in this file is a relaxed
 * counter or hint except the aging flag.  Records are counted per stripe (a thread
 * keeps to one stripe) and folded into the shared total one batch at a time,
 * so the shared word is touched once per batch, not once per record.  The
 * thread whose batch carries the total across a multiple of W ages the
 * structures; if an aging is still running, the next one is skipped rather
 * than queued, since a late halving is worth less than no stall.
 */
#include "config.h"

#include <stdalign.h>
#include <stdatomic.h>

#include <admit/tinylfu.h>

#include "alloc.h"
#include "cbf_internal.h"
#include "cuckoo_internal.h"
#include "debug.h"
#include "hash.h"

#define STRIPES 16u           /* power of two */
#define MAX_BATCH 64u
#define DEFAULT_WARM 6u       /* Caffeine's: a candidate above 5 may win by luck */
#define DEFAULT_CHANCE_SHIFT 7u /* 1 / 128, also Caffeine's */
#define DOOR_FPR 0.01
#define MAX_SAMPLE ((uint64_t)1 << 40)
/* Keys the frequency store and the doorkeeper are sized for, per cache
 * entry: W/2 at the default W of 10 x capacity (include/admit/tinylfu.h). */
#define FREQ_PER_ENTRY 5u

struct tlfu_stripe {
	alignas(ADMIT_CACHELINE) _Atomic uint64_t records;
	_Atomic uint64_t rng; /* a Weyl sequence; mixed on use */
};

struct admit_tinylfu {
	struct admit_cbf *door;
	struct admit_cuckoo *freq;
	struct admit_allocator alloc; /* the instance's, door's and freq's */
	size_t own_bytes;             /* this struct's, as taken from alloc */
	uint64_t seed;
	uint64_t sample;  /* W: records between agings */
	uint64_t batch;   /* records a stripe folds into total at once: a power
	                   * of two that divides W */
	unsigned warm, chance_shift;

	/* The frequency store was found full in this sample (set by the first
	 * failed cuckoo-path search, cleared by aging).  Read on most records,
	 * written about twice per sample. */
	_Atomic bool crowded;

	alignas(ADMIT_CACHELINE) _Atomic uint64_t total;
	atomic_flag aging;
	_Atomic uint64_t agings, replaced, random_admits;

	struct tlfu_stripe stripe[STRIPES];
};

/* Which stripe this thread counts in: handed out round-robin on a thread's
 * first record.  It is only a placement hint, so one process-wide counter
 * for all instances is harmless. */
static _Atomic unsigned next_stripe;
/* initial-exec: read with one instruction, not a call to __tls_get_addr
 * per record (4 bytes of the static TLS surplus when the library is
 * dlopen'd). */
static _Thread_local unsigned my_stripe /* index + 1; 0 = not yet chosen */
	__attribute__((tls_model("initial-exec")));

static inline struct tlfu_stripe *
stripe_of_thread(struct admit_tinylfu *t)
{
	if (!my_stripe)
		/* relaxed: a distinct-enough number is all that is needed. */
		my_stripe = atomic_fetch_add_explicit(&next_stripe, 1,
		                                      memory_order_relaxed) % STRIPES + 1;
	return &t->stripe[my_stripe - 1];
}

static inline void
bump(_Atomic uint64_t *c)
{
	/* relaxed: a statistic, orders nothing. */
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

enum admit_status
admit_tinylfu_new_config(const struct admit_tinylfu_config *cfg,
                         struct admit_tinylfu **out)
{
	struct admit_cuckoo_config cc = { 0 };
	struct admit_tinylfu *t;
	enum admit_status st;
	uint64_t w, half;
	size_t own = 0;

	if (!cfg || !out || cfg->cache_capacity == 0 ||
	    cfg->cache_capacity > ADMIT_TINYLFU_MAX_CAPACITY ||
	    cfg->sample_size > MAX_SAMPLE)
		return ADMIT_EINVAL;
	w = cfg->sample_size ? cfg->sample_size : 10 * cfg->cache_capacity;
	t = admit_mem_table(cfg->alloc, sizeof(*t), &own);
	if (!t)
		return ADMIT_NOMEM;
	t->alloc = admit_mem_copy(cfg->alloc);
	t->own_bytes = own;
	t->seed = cfg->seed ? cfg->seed : admit_random_seed();
	t->sample = w;
	for (t->batch = MAX_BATCH; w % t->batch; t->batch >>= 1)
		;
	/* Agings fall on multiples of W only if a batch divides W. */
	debug_check(t->batch >= 1 && w % t->batch == 0 &&
	            (t->batch & (t->batch - 1)) == 0);
	t->warm = cfg->warm ? cfg->warm : DEFAULT_WARM;
	t->chance_shift = cfg->chance_shift ? cfg->chance_shift
	                                    : DEFAULT_CHANCE_SHIFT;
	atomic_flag_clear(&t->aging);
	for (unsigned i = 0; i < STRIPES; i++)
		atomic_init(&t->stripe[i].rng,
		            admit_mix64(t->seed + ADMIT_GOLDEN64 * (i + 1)));

	/* At most W/2 keys are seen twice in a sample, and only those reach the
	 * frequency store; every distinct key of a sample passes the doorkeeper,
	 * but a sample of W records rarely holds more than W/2 distinct keys of
	 * a cache-worthy workload, and a fuller doorkeeper only lets more
	 * one-hit wonders through to the store.  Both are sized for at most
	 * FREQ_PER_ENTRY keys per cache entry, whatever W (W/2 at the default
	 * W): a longer sample would otherwise buy memory without bound (a
	 * sample of 100,000 x a cache of 131,072 entries asked for 11 GB).
	 * Past that, a full store replaces the lowest count of a key's two
	 * buckets (count()), so the keys it keeps are the frequent ones, which
	 * are those a cache of that capacity competes for; Caffeine likewise
	 * sizes its sketch from the cache's maximum size alone. */
	half = w / 2 < FREQ_PER_ENTRY * cfg->cache_capacity
	       ? w / 2 : FREQ_PER_ENTRY * cfg->cache_capacity;
	half = half < 64 ? 64 : half;
	cc.capacity = half < ADMIT_CUCKOO_MAX_CAPACITY ? half
	                                               : ADMIT_CUCKOO_MAX_CAPACITY;
	cc.counting = true;
	cc.seed = admit_mix64(t->seed) | 1;
	cc.alloc = &t->alloc;
	st = admit_cuckoo_new(&cc, &t->freq);
	if (st == ADMIT_OK)
		st = admit_cbf_new_config(&(struct admit_cbf_config){
			.items = half < ADMIT_CBF_MAX_ITEMS ? half
			                                    : ADMIT_CBF_MAX_ITEMS,
			.fpr = DOOR_FPR, .seed = t->seed, .alloc = &t->alloc,
		}, &t->door);
	if (st != ADMIT_OK) {
		admit_tinylfu_free(t);
		return st;
	}
	*out = t;
	return ADMIT_OK;
}

enum admit_status
admit_tinylfu_new(uint64_t cache_capacity, uint64_t seed,
                  struct admit_tinylfu **out)
{
	struct admit_tinylfu_config cfg = { .cache_capacity = cache_capacity,
	                                    .seed = seed };

	return admit_tinylfu_new_config(&cfg, out);
}

void
admit_tinylfu_free(struct admit_tinylfu *t)
{
	struct admit_allocator a;

	if (!t)
		return;
	a = t->alloc;
	admit_cbf_free(t->door);
	admit_cuckoo_free(t->freq);
	admit_mem_table_free(&a, t, sizeof(*t), NULL);
}

static void
age(struct admit_tinylfu *t)
{
	/* acquire/release: the flag is a try-lock; its release in the previous
	 * aging pairs with this acquire (the structures order themselves). */
	if (atomic_flag_test_and_set_explicit(&t->aging, memory_order_acquire))
		return;
	admit_cuckoo_halve(t->freq);
	admit_cbf_clear(t->door);
	/* relaxed: a hint (see count()). */
	atomic_store_explicit(&t->crowded, false, memory_order_relaxed);
	bump(&t->agings);
	atomic_flag_clear_explicit(&t->aging, memory_order_release);
}

uint64_t
admit_tinylfu_hash(const struct admit_tinylfu *t, const void *key, size_t len)
{
	if (!t || !admit_key_ok(key, len))
		return 0;
	return admit_hash(key, len, t->seed);
}

/* A second or later sighting in this sample: count it in the frequency
 * store.  Once the store has been found full, new keys replace the lowest
 * count of their own two buckets without searching the table for a cuckoo
 * path that does not exist; aging frees slots and clears the flag. */
static void
count(struct admit_tinylfu *t, const struct cuckoo_pos *p)
{
	/* relaxed: a hint; a stale value costs one search or one replacement
	 * that a search might have avoided. */
	bool crowded = atomic_load_explicit(&t->crowded, memory_order_relaxed);
	bool replaced;

	cuckoo_increment_replacing_pos(t->freq, p, !crowded, &replaced);
	if (!replaced)
		return;
	bump(&t->replaced);
	if (!crowded)
		/* relaxed: as above. */
		atomic_store_explicit(&t->crowded, true, memory_order_relaxed);
}

/* The store's and the doorkeeper's part of the record of h, whose place in
 * the frequency store is p. */
static inline __attribute__((always_inline)) void
count_at(struct admit_tinylfu *t, uint64_t h, const struct cuckoo_pos *p)
{
	struct cuckoo_counter c;
	bool found = cuckoo_counter_find(t->freq, p, &c);

	/* A key whose count is at its maximum (under skew, most records: the
	 * hot keys) changes nothing, and is in the doorkeeper since it was
	 * last cleared (aging halves every count below the maximum): its
	 * record reads the store and writes nothing.  A key the store holds
	 * has its counter raised where it was found, unless its bucket
	 * changed meanwhile; count() makes the rest. */
	if ((!found || cuckoo_counter_value(&c) < COUNTER_MAX) &&
	    !cbf_add_if_absent_hash(t->door, h) &&
	    !(found && cuckoo_counter_increment(t->freq, &c)))
		count(t, p);
}

/* After the record that brought a stripe's count to n: the batch folded
 * into the total when n completes one, and the structures aged when the
 * total crosses a multiple of W. */
static inline __attribute__((always_inline)) void
tally(struct admit_tinylfu *t, uint64_t n)
{
	/* A mask, not a division: tens of cycles on every record. */
	if ((n & (t->batch - 1)) == 0) {
		/* relaxed: a count; the aging it triggers synchronises by
		 * itself. */
		uint64_t old = atomic_fetch_add_explicit(&t->total, t->batch,
		                                         memory_order_relaxed);

		/* The total moves in whole batches, so it crosses each
		 * multiple of W exactly once. */
		debug_check(old % t->batch == 0);
		if ((old + t->batch) / t->sample != old / t->sample)
			age(t);
	}
}

static inline __attribute__((always_inline)) void
record_at(struct admit_tinylfu *t, uint64_t h, const struct cuckoo_pos *p)
{
	count_at(t, h, p);
	/* relaxed: as in tally(). */
	tally(t, atomic_fetch_add_explicit(&stripe_of_thread(t)->records, 1,
	                                   memory_order_relaxed) + 1);
}

enum admit_status
admit_tinylfu_record_hash(struct admit_tinylfu *t, uint64_t h)
{
	struct cuckoo_pos p;

	if (!t)
		return ADMIT_EINVAL;
	cuckoo_locate(t->freq, &h, sizeof(h), &p);
	record_at(t, h, &p);
	return ADMIT_OK;
}

enum admit_status
admit_tinylfu_record(struct admit_tinylfu *t, const void *key, size_t len)
{
	if (!t || !admit_key_ok(key, len))
		return ADMIT_EINVAL;
	return admit_tinylfu_record_hash(t, admit_hash(key, len, t->seed));
}

/* A key's estimate. */
static inline __attribute__((always_inline)) unsigned
estimate(const struct admit_tinylfu *t, uint64_t h)
{
	unsigned freq = cuckoo_counter_count(t->freq, h);

	debug_check(freq <= COUNTER_MAX);
	return cbf_contains_hash(t->door, h) + freq;
}

unsigned
admit_tinylfu_estimate_hash(const struct admit_tinylfu *t, uint64_t h)
{
	return t ? estimate(t, h) : 0;
}

unsigned
admit_tinylfu_estimate(const struct admit_tinylfu *t, const void *key,
                       size_t len)
{
	if (!t || !admit_key_ok(key, len))
		return 0;
	return admit_tinylfu_estimate_hash(t, admit_hash(key, len, t->seed));
}

/* admit_tinylfu_admit_hash() on t not NULL. */
static inline __attribute__((always_inline)) bool
contest(struct admit_tinylfu *t, uint64_t candidate, uint64_t victim)
{
	unsigned ce, ve;
	uint64_t r;

	ce = estimate(t, candidate);
	/* An estimate of 0 cannot beat the victim's and is below warm (at
	 * least 1): the candidate loses, the victim's estimate unneeded. */
	if (ce == 0)
		return false;
	ve = estimate(t, victim);
	if (ce > ve)
		return true;
	if (ce < t->warm || t->chance_shift >= 64)
		return false;
	/* relaxed: each caller only needs a distinct point of the sequence. */
	r = admit_mix64(atomic_fetch_add_explicit(&stripe_of_thread(t)->rng,
	                                          ADMIT_GOLDEN64,
	                                          memory_order_relaxed) +
	                ADMIT_GOLDEN64);
	if (r >> (64 - t->chance_shift))
		return false;
	bump(&t->random_admits);
	return true;
}

bool
admit_tinylfu_admit_hash(struct admit_tinylfu *t, uint64_t candidate,
                         uint64_t victim)
{
	return t && contest(t, candidate, victim);
}

bool
admit_tinylfu_admit(struct admit_tinylfu *t, const void *candidate, size_t clen,
                    const void *victim, size_t vlen)
{
	if (!t || (!candidate && clen) || (!victim && vlen))
		return false;
	return admit_tinylfu_admit_hash(t, admit_hash(candidate, clen, t->seed),
	                                admit_hash(victim, vlen, t->seed));
}

size_t
admit_tinylfu_memory(const struct admit_tinylfu *t)
{
	return t ? admit_cbf_memory(t->door) + admit_cuckoo_memory(t->freq) : 0;
}

size_t
admit_tinylfu_footprint(const struct admit_tinylfu *t)
{
	return t ? t->own_bytes + admit_cbf_footprint(t->door) +
	           admit_cuckoo_footprint(t->freq) : 0;
}

enum admit_status
admit_tinylfu_stats(const struct admit_tinylfu *t,
                    struct admit_tinylfu_stats *out)
{
	uint64_t records = 0;

	if (!t || !out)
		return ADMIT_EINVAL;
	/* relaxed, all: statistics. */
	for (unsigned i = 0; i < STRIPES; i++)
		records += atomic_load_explicit(&t->stripe[i].records,
		                                memory_order_relaxed);
	out->sample_size = t->sample;
	out->records = records;
	out->agings = atomic_load_explicit(&t->agings, memory_order_relaxed);
	out->replaced = atomic_load_explicit(&t->replaced, memory_order_relaxed);
	out->random_admits = atomic_load_explicit(&t->random_admits,
	                                          memory_order_relaxed);
	out->freq_entries = admit_cuckoo_size(t->freq);
	out->freq_slots = admit_cuckoo_slots(t->freq);
	debug_check(out->freq_entries <= out->freq_slots);
	return ADMIT_OK;
}
