/*
 * stress_chain - many threads add, delete and look up on one admit_chain
 * that starts small, so it grows filter after filter under their feet, and
 * check while they run and after they join that nothing is lost.
 *
 * Keys are partitioned: each thread owns a range and is its only writer
 * (with --single-writer, one thread writes every owned key and the others
 * only read).  The owner publishes each key's state in a word (a
 * generation, a busy bit while an operation is in flight, and the number of
 * copies, up to three: the chain is a multiset), and any thread checks a
 * key as stress_cuckoo does: read the word, call contains() and count(),
 * read the word again; if the word did not change, a key with copies must
 * be found and counted at least that often.  A key without copies may be a
 * false positive: those are checked against the chain's stated bound on
 * fresh probes after each epoch, not per key.
 *
 * Copies go in with admit_chain_add_at() or admit_chain_add_unique_at(),
 * and each is deleted with admit_chain_delete_at() from the filter that
 * took it (the owner keeps the index).  Plain admit_chain_delete() is not
 * used: it may remove another key's matching fingerprint from a newer
 * filter (admit/chain.h), a documented loss that an exact check cannot
 * tell from a bug.
 *
 * The run is a sequence of epochs.  In each, the threads start together
 * behind a barrier, run the mix, then race admit_chain_add_unique_at() on
 * one fresh key at a time (exactly one may succeed, or none if every thread
 * saw a false positive), while the main thread dumps the chain and restores
 * the dump, over and over: a key whose word held still across a dump must
 * be in the restored chain; now and then it caps the chain at the filters it
 * has, and the chain must not grow past the cap.  After the join the main thread, alone, checks
 * admit_chain_info() against the threads' counts (items = adds - deletes)
 * and every filter's info against the copies known to live in it, the
 * reported bound against the sum of the filters' bounds and against the
 * false positives of fresh keys, saves and loads the chain through a file,
 * deletes every copy in the older half of the filters and trims them
 * (admit_chain_trim() must free exactly the empty prefix and keep every
 * present key present), and either continues with the trimmed chain or
 * starts a fresh small one (every other epoch), so growth never stops.
 */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>

#include <admit/admit.h>

#include "stress_common.h"

#ifdef STRESS_CHAIN_BROKEN
/* The planted defects of stress_chain_broken (src/chain_broken.c). */
extern _Atomic int chain_broken_defect;
#endif

enum op { OP_ADD, OP_UNIQUE, OP_DELETE, OP_CONTAINS, OP_COUNT, OP_OTHER, OP_N };
static const char *const op_names[OP_N] = {
	"add", "unique", "delete", "contains", "count", "other",
};

struct opts {
	unsigned threads;
	double seconds;
	uint64_t ops;          /* per thread over the run; 0 = until the time is up */
	uint64_t epoch_ops;    /* per thread per epoch */
	uint64_t seed;
	uint64_t keys;         /* per writer */
	uint64_t capacity;     /* the first filter's; 0 = derived */
	unsigned expansion;
	unsigned bits;
	double max_load;
	bool single_writer;
	unsigned rounds;       /* add_unique rounds per epoch */
	unsigned mix[OP_N];
};

/* Owned-key state word: generation << 5 | busy << 4 | copies. */
#define ST_BUSY 16u
#define ST_COUNT 15u
#define MAX_COPIES 3u
#define PROBES 4096u     /* fresh keys probed for false positives per epoch */
#define DUMP_SAMPLE 64u  /* keys checked in each concurrent dump */

struct run {
	const struct opts *o;
	struct admit_chain *c;
	unsigned writers;            /* threads that own keys */
	uint64_t owned;              /* keys * writers */
	uint64_t *keys;              /* owned, then unique-round, then probes */
	_Atomic uint32_t *state;     /* per owned key */
	uint8_t (*loc)[MAX_COPIES];  /* per owned key: filter of each copy */
	_Atomic bool stop;           /* the time is up: end the epoch */
	_Atomic bool quit;           /* no more epochs */
	_Atomic unsigned done;       /* threads past this epoch's mix */
	_Atomic unsigned unique_ok, unique_exists;
	_Atomic unsigned unique_at;  /* filter index of the round's success */
	pthread_barrier_t gate;      /* all threads and the main thread */
	pthread_barrier_t rounds_gate; /* the threads */
	unsigned mix_total;
};

struct thr {
	pthread_t tid;
	struct run *r;
	unsigned id;
	struct prng rng;
	uint64_t ops[OP_N], total;
	uint64_t inserted, deleted;  /* copies, this chain's lifetime */
	uint64_t full, skipped, fp_unique, fp_seen, rounds, rounds_none;
};

static inline const uint64_t *
key_of(const struct run *r, uint64_t k)
{
	return &r->keys[k];
}
#define K(r, k) key_of((r), (k)), sizeof(uint64_t)

/* ---- owned keys ---------------------------------------------------------- */

static uint32_t
own_begin(struct run *r, uint64_t k)
{
	uint32_t s = atomic_load(&r->state[k]);

	atomic_store(&r->state[k], s | ST_BUSY);
	return s;
}

static void
own_end(struct run *r, uint64_t k, uint32_t s, unsigned copies)
{
	atomic_store(&r->state[k], ((s >> 5) + 1) << 5 | copies);
}

/* Add a copy of key k through add_at or add_unique_at (k has *c copies). */
static void
own_add(struct thr *t, uint64_t k, unsigned *c, bool unique)
{
	struct run *r = t->r;
	enum admit_status st;
	unsigned at = ~0u;

	st = unique ? admit_chain_add_unique_at(r->c, K(r, k), &at) :
	              admit_chain_add_at(r->c, K(r, k), &at);
	if (st == ADMIT_OK) {
		if (at >= ADMIT_CHAIN_MAX_FILTERS) {
			stress_fail("add%s(key %" PRIu64 "): filter index %u",
			            unique ? "_unique" : "", k, at);
			return;
		}
		r->loc[k][*c] = (uint8_t)at;
		(*c)++;
		t->inserted++;
	} else if (st == ADMIT_FULL) {
		t->full++;
	} else if (unique && st == ADMIT_EXISTS && *c == 0) {
		t->fp_unique++; /* a false positive: bounded after the epoch */
	} else {
		stress_fail("thread %u: add%s(own key %" PRIu64 ", %u copies): %s",
		            t->id, unique ? "_unique" : "", k, *c, admit_strerror(st));
	}
}

static void
own_check(struct thr *t, uint64_t k, unsigned c, bool count)
{
	struct run *r = t->r;

	if (count) {
		uint64_t n = admit_chain_count(r->c, K(r, k));

		if (n < c)
			stress_fail("thread %u: count(own key %" PRIu64 ") = %" PRIu64
			            " with %u copies", t->id, k, n, c);
	} else if (admit_chain_contains(r->c, K(r, k)) != (c > 0)) {
		if (c > 0)
			stress_fail("thread %u: contains(own key %" PRIu64 ") = 0 with %u copies",
			            t->id, k, c);
		else
			t->fp_seen++;
	}
}

static void
own_op(struct thr *t, enum op op, uint64_t k)
{
	struct run *r = t->r;
	uint32_t s = atomic_load(&r->state[k]);
	unsigned c = s & ST_COUNT;

	if ((op == OP_ADD || op == OP_UNIQUE) && c >= MAX_COPIES)
		op = OP_CONTAINS;
	if (op == OP_DELETE && c == 0)
		op = OP_CONTAINS;
	if (op == OP_CONTAINS || op == OP_COUNT) {
		own_check(t, k, c, op == OP_COUNT);
		t->ops[op]++;
		return;
	}
	s = own_begin(r, k);
	if (op == OP_ADD || op == OP_UNIQUE) {
		if (op == OP_UNIQUE && c > 0) {
			enum admit_status st = admit_chain_add_unique_at(r->c, K(r, k), NULL);

			if (st != ADMIT_EXISTS)
				stress_fail("thread %u: add_unique(own key %" PRIu64 ", %u copies): %s",
				            t->id, k, c, admit_strerror(st));
		} else {
			own_add(t, k, &c, op == OP_UNIQUE);
		}
	} else {
		/* A random copy, from the filter that took it. */
		unsigned j = (unsigned)prng_below(&t->rng, c);
		enum admit_status st = admit_chain_delete_at(r->c, r->loc[k][j], K(r, k));

		if (st == ADMIT_OK) {
			r->loc[k][j] = r->loc[k][c - 1];
			c--;
			t->deleted++;
		} else {
			stress_fail("thread %u: delete_at(%u, own key %" PRIu64 ", %u copies): %s",
			            t->id, r->loc[k][j], k, c, admit_strerror(st));
		}
	}
	own_end(r, k, s, c);
	t->ops[op]++;
}

/* Check any owned key, if its state held still across the calls. */
static void
check_other(struct thr *t, uint64_t k)
{
	struct run *r = t->r;
	uint32_t s1 = atomic_load(&r->state[k]), s2;
	uint64_t n;
	bool found;

	if (s1 & ST_BUSY) {
		t->skipped++;
		return;
	}
	found = admit_chain_contains(r->c, K(r, k));
	n = admit_chain_count(r->c, K(r, k));
	s2 = atomic_load(&r->state[k]);
	if (s1 != s2) {
		t->skipped++;
		return;
	}
	if ((s1 & ST_COUNT) > 0 && (!found || n < (s1 & ST_COUNT)))
		stress_fail("thread %u: key %" PRIu64 " of another thread: contains %d, count %"
		            PRIu64 " with %u copies", t->id, k, found, n, s1 & ST_COUNT);
	t->ops[OP_OTHER]++;
}

/* ---- the threads -------------------------------------------------------- */

static enum op
pick(struct thr *t)
{
	uint64_t x = prng_below(&t->rng, t->r->mix_total);

	for (int op = 0; op < OP_N; op++) {
		if (x < t->r->o->mix[op])
			return (enum op)op;
		x -= t->r->o->mix[op];
	}
	return OP_CONTAINS;
}

/* All threads add one fresh key at once: at most one may succeed, and none
 * only if every one saw a false positive (or the chain was full). */
static void
unique_rounds(struct thr *t)
{
	struct run *r = t->r;
	const struct opts *o = r->o;

	for (unsigned i = 0; i < o->rounds; i++) {
		uint64_t k = r->owned + i;
		enum admit_status st;
		unsigned at = ~0u;

		pthread_barrier_wait(&r->rounds_gate);
		st = admit_chain_add_unique_at(r->c, K(r, k), &at);
		if (st == ADMIT_OK) {
			atomic_fetch_add(&r->unique_ok, 1);
			atomic_store(&r->unique_at, at);
		} else if (st == ADMIT_EXISTS) {
			atomic_fetch_add(&r->unique_exists, 1);
		} else if (st != ADMIT_FULL) {
			stress_fail("unique round %u: %s", i, admit_strerror(st));
		}
		pthread_barrier_wait(&r->rounds_gate);
		if (t->id == 0) {
			unsigned ok = atomic_exchange(&r->unique_ok, 0);
			unsigned ex = atomic_exchange(&r->unique_exists, 0);

			t->rounds++;
			if (ok > 1)
				stress_fail("unique round %u: add_unique of one key by %u threads "
				            "succeeded %u times", i, o->threads, ok);
			if (ok == 0) {
				t->rounds_none++;
				if (ex == o->threads)
					t->fp_unique++;
			}
			if (ok == 1) {
				t->inserted++;
				if (admit_chain_delete_at(r->c, atomic_load(&r->unique_at),
				                          K(r, k)) != ADMIT_OK)
					stress_fail("unique round %u: delete_at(%u) of the key added failed",
					            i, atomic_load(&r->unique_at));
				else
					t->deleted++;
			}
		}
		pthread_barrier_wait(&r->rounds_gate);
	}
}

static void *
worker(void *arg)
{
	struct thr *t = arg;
	struct run *r = t->r;
	const struct opts *o = r->o;
	bool writer = t->id < r->writers;
	uint64_t own0 = (uint64_t)t->id * o->keys;

	for (;;) {
		pthread_barrier_wait(&r->gate);
		if (atomic_load(&r->quit))
			break;
		for (uint64_t n = 0; !atomic_load(&r->stop) && n < o->epoch_ops &&
		     (!o->ops || t->total < o->ops); n++, t->total++) {
			enum op op = writer ? pick(t) : OP_OTHER;

			if (op == OP_OTHER)
				check_other(t, prng_below(&t->rng, r->owned));
			else
				own_op(t, op, own0 + prng_below(&t->rng, o->keys));
		}
		atomic_fetch_add(&r->done, 1);
		if (!o->single_writer)
			unique_rounds(t);
		pthread_barrier_wait(&r->gate);
	}
	return NULL;
}

/* ---- the main thread: dumps while the threads run ------------------------ */

static void
dump_check(struct run *r, struct prng *rng, uint64_t *dumps)
{
	uint64_t k[DUMP_SAMPLE];
	uint32_t s1[DUMP_SAMPLE];
	struct admit_chain *copy = NULL;
	enum admit_status st;
	void *buf = NULL;
	size_t len = 0;

	for (unsigned j = 0; j < DUMP_SAMPLE; j++) {
		k[j] = prng_below(rng, r->owned);
		s1[j] = atomic_load(&r->state[k[j]]);
	}
	st = admit_chain_dump(r->c, &buf, &len);
	if (st != ADMIT_OK) {
		stress_fail("dump while the threads run: %s", admit_strerror(st));
		return;
	}
	for (unsigned j = 0; j < DUMP_SAMPLE; j++)
		if (atomic_load(&r->state[k[j]]) != s1[j])
			s1[j] = ST_BUSY; /* changed during the dump: unknown */
	st = admit_chain_restore(buf, len, &copy);
	free(buf);
	if (st != ADMIT_OK) {
		stress_fail("restore of a dump taken while the threads run: %s",
		            admit_strerror(st));
		return;
	}
	for (unsigned j = 0; j < DUMP_SAMPLE; j++) {
		unsigned c = s1[j] & ST_COUNT;

		if (s1[j] & ST_BUSY || c == 0)
			continue;
		if (!admit_chain_contains(copy, K(r, k[j])) ||
		    admit_chain_count(copy, K(r, k[j])) < c)
			stress_fail("key %" PRIu64 " with %u copies through a whole dump: "
			            "missing from the restored chain", k[j], c);
	}
	admit_chain_free(copy);
	(*dumps)++;
}

/* Cap the chain at the filters it has, for a moment, while the threads add:
 * it must not grow past the cap, and a cap below its filters is refused.
 * (Not with --single-writer: set_max_filters is then the writer's.) */
static void
cap_check(struct run *r, uint64_t *caps)
{
	struct admit_chain_info a, b;
	enum admit_status st;

	admit_chain_info(r->c, &a);
	/* The chain only grows while the threads run. */
	if (a.filters > 1 && admit_chain_set_max_filters(r->c, a.filters - 1) != ADMIT_EINVAL)
		stress_fail("set_max_filters(%u) accepted on a chain of %u filters",
		            a.filters - 1, a.filters);
	st = admit_chain_set_max_filters(r->c, a.filters);
	if (st == ADMIT_EINVAL)
		return; /* it grew meanwhile */
	if (st != ADMIT_OK) {
		stress_fail("set_max_filters(%u): %s", a.filters, admit_strerror(st));
		return;
	}
	usleep(1000);
	admit_chain_info(r->c, &b);
	if (b.filters > a.filters || b.max_filters != a.filters)
		stress_fail("capped at %u filters, the chain has %u (max_filters %u)",
		            a.filters, b.filters, b.max_filters);
	if (admit_chain_set_max_filters(r->c, 0) != ADMIT_OK)
		stress_fail("set_max_filters(0) refused");
	(*caps)++;
}

/* ---- after the join: the main thread alone ------------------------------- */

struct totals {
	uint64_t epochs, chains, grown, trimmed, dumps, caps, saves, probes, probe_fp;
	uint64_t main_deleted;       /* copies the main thread deleted (trims) */
	uint64_t start_filters;      /* trimmed + filters when the epoch began */
	double max_bound;
};

static bool
near(double a, double b)
{
	return fabs(a - b) <= 1e-12 + 1e-9 * fabs(b);
}

/* admit_chain_info() against every filter's info and the known copies. */
static void
info_checks(struct run *r, uint64_t expect_items, struct admit_chain_info *ci)
{
	const struct opts *o = r->o;
	uint64_t per[ADMIT_CHAIN_MAX_FILTERS] = { 0 }, items = 0, slots = 0;
	size_t memory = 0;
	double bound = 0, want;

	if (admit_chain_info(r->c, ci) != ADMIT_OK) {
		stress_fail("admit_chain_info failed");
		return;
	}
	if (ci->filters < 1 || ci->filters > ADMIT_CHAIN_MAX_FILTERS ||
	    ci->filters > ci->max_filters || ci->max_filters > ADMIT_CHAIN_MAX_FILTERS)
		stress_fail("info: %u filters, max %u", ci->filters, ci->max_filters);
	if (ci->items != expect_items)
		stress_fail("info: %" PRIu64 " items but adds - deletes = %" PRIu64,
		            ci->items, expect_items);
	for (uint64_t k = 0; k < r->owned; k++) {
		unsigned c = atomic_load(&r->state[k]) & ST_COUNT;

		for (unsigned j = 0; j < c; j++) {
			if (r->loc[k][j] >= ci->filters)
				stress_fail("key %" PRIu64 ": a copy in filter %u of %u",
				            k, r->loc[k][j], ci->filters);
			else
				per[r->loc[k][j]]++;
		}
	}
	for (unsigned i = 0; i < ci->filters && i < ADMIT_CHAIN_MAX_FILTERS; i++) {
		struct admit_chain_filter_info fi;

		if (admit_chain_filter_info(r->c, i, &fi) != ADMIT_OK) {
			stress_fail("filter_info(%u) failed", i);
			continue;
		}
		if (fi.number != ci->trimmed + i || fi.fingerprint_bits != o->bits ||
		    fi.items > fi.slots || fi.capacity == 0)
			stress_fail("filter %u: number %" PRIu64 ", %u bits, %" PRIu64 " items of %"
			            PRIu64 " slots, capacity %" PRIu64, i, fi.number,
			            fi.fingerprint_bits, fi.items, fi.slots, fi.capacity);
		/* Every item of the filter is a copy some owner put there. */
		if (fi.items != per[i])
			stress_fail("filter %u holds %" PRIu64 " items, the owners %" PRIu64 " copies",
			            i, fi.items, per[i]);
		if (o->max_load != 0) {
			/* The mutex path's promise: never above the limit. */
			if (fi.items > fi.capacity ||
			    (double)fi.capacity > o->max_load * (double)fi.slots)
				stress_fail("filter %u: %" PRIu64 " items, limit %" PRIu64 ", %" PRIu64
				            " slots at max_load %g", i, fi.items, fi.capacity,
				            fi.slots, o->max_load);
			want = 8.0 * ((double)fi.capacity / (double)fi.slots) /
			       (ldexp(1, (int)o->bits) - 2);
		} else {
			/* The first capacity times expansion^number. */
			uint64_t cap = o->capacity;

			for (uint64_t j = 0; j < fi.number && cap < ADMIT_CUCKOO_MAX_CAPACITY; j++)
				cap = cap > ADMIT_CUCKOO_MAX_CAPACITY / o->expansion ?
				      ADMIT_CUCKOO_MAX_CAPACITY : cap * o->expansion;
			if (fi.capacity != cap)
				stress_fail("filter %u (number %" PRIu64 "): capacity %" PRIu64
				            ", expected %" PRIu64, i, fi.number, fi.capacity, cap);
			want = 8.0 / ldexp(1, (int)o->bits);
		}
		if (!near(fi.fpr_bound, want))
			stress_fail("filter %u: bound %g, expected %g", i, fi.fpr_bound, want);
		items += fi.items;
		slots += fi.slots;
		memory += fi.memory;
		bound += fi.fpr_bound;
	}
	if (items != ci->items || slots != ci->buckets * 4 || memory != ci->memory)
		stress_fail("info: items %" PRIu64 ", buckets %" PRIu64 ", memory %zu; the "
		            "filters: %" PRIu64 ", %" PRIu64 " slots, %zu", ci->items,
		            ci->buckets, ci->memory, items, slots, memory);
	if (admit_chain_footprint(r->c) < ci->memory)
		stress_fail("footprint %zu below the tables' %zu bytes",
		            admit_chain_footprint(r->c), ci->memory);
	if (!near(ci->fpr_bound, bound))
		stress_fail("info: bound %g, the filters' bounds sum to %g", ci->fpr_bound, bound);
	if (ci->fingerprint_bits != o->bits || ci->expansion != o->expansion)
		stress_fail("info: %u bits, expansion %u", ci->fingerprint_bits, ci->expansion);
}

/* Every owned key with copies is found, and counted at least that often,
 * in chain c; returns the absent keys found (false positives). */
static uint64_t
presence_checks(struct run *r, const struct admit_chain *c, const char *when,
                uint64_t *absent)
{
	uint64_t fp = 0;

	for (uint64_t k = 0; k < r->owned; k++) {
		unsigned want = atomic_load(&r->state[k]) & ST_COUNT;
		bool found = admit_chain_contains(c, K(r, k));
		uint64_t n = admit_chain_count(c, K(r, k));

		if (want && (!found || n < want))
			stress_fail("%s: key %" PRIu64 " with %u copies: contains %d, count %" PRIu64,
			            when, k, want, found, n);
		if (!want) {
			(*absent)++;
			fp += found;
		}
	}
	return fp;
}

/* False positives of absent keys, against the chain's reported bound: the
 * count of n trials at rate p stays below n p + 6 sqrt(n p) + 3. */
static void
bound_check(struct run *r, double bound, struct totals *tot)
{
	uint64_t absent = 0, fp = presence_checks(r, r->c, "after the join", &absent);
	uint64_t probe0 = r->owned + r->o->rounds;
	double mean, limit;

	for (uint64_t i = 0; i < PROBES; i++)
		fp += admit_chain_contains(r->c, K(r, probe0 + i));
	absent += PROBES;
	mean = (double)absent * bound;
	limit = mean + 6 * sqrt(mean) + 3;
	if ((double)fp > limit)
		stress_fail("%" PRIu64 " false positives in %" PRIu64 " absent keys, above %.1f "
		            "(bound %g)", fp, absent, limit, bound);
	tot->probes += absent;
	tot->probe_fp += fp;
}

/* Save and load through a file: the copy answers as the original does. */
static void
save_check(struct run *r, const char *path, struct totals *tot)
{
	struct admit_chain *copy = NULL;
	struct admit_chain_info a, b;
	enum admit_status st = admit_chain_save(r->c, path);

	if (st == ADMIT_OK)
		st = admit_chain_load(path, &copy);
	if (st != ADMIT_OK) {
		stress_fail("save and load: %s", admit_strerror(st));
		return;
	}
	admit_chain_info(r->c, &a);
	admit_chain_info(copy, &b);
	if (a.filters != b.filters || a.items != b.items || a.trimmed != b.trimmed ||
	    a.memory != b.memory || a.fpr_bound != b.fpr_bound)
		stress_fail("loaded chain: %u filters, %" PRIu64 " items, %" PRIu64
		            " trimmed; saved %u, %" PRIu64 ", %" PRIu64, b.filters, b.items,
		            b.trimmed, a.filters, a.items, a.trimmed);
	for (uint64_t k = 0; k < r->owned; k++)
		if (admit_chain_count(copy, K(r, k)) != admit_chain_count(r->c, K(r, k)))
			stress_fail("loaded chain counts key %" PRIu64 " %" PRIu64 " times, "
			            "the saved one %" PRIu64, k, admit_chain_count(copy, K(r, k)),
			            admit_chain_count(r->c, K(r, k)));
	admit_chain_free(copy);
	unlink(path);
	tot->saves++;
}

/* Delete every copy in the older half of the filters, then trim: exactly
 * the empty prefix goes, and every key with copies stays. */
static void
trim_check(struct run *r, struct totals *tot)
{
	struct admit_chain_info before, after;
	unsigned half, empty = 0, removed = ~0u;
	uint64_t deleted = 0;
	double dropped = 0;

	admit_chain_info(r->c, &before);
	half = before.filters / 2;
	for (uint64_t k = 0; k < r->owned; k++) {
		uint32_t s = atomic_load(&r->state[k]);
		unsigned c = s & ST_COUNT;

		for (unsigned j = 0; j < c;) {
			if (r->loc[k][j] >= half) {
				j++;
				continue;
			}
			if (admit_chain_delete_at(r->c, r->loc[k][j], K(r, k)) != ADMIT_OK)
				stress_fail("before trim: delete_at(%u, key %" PRIu64 ") failed",
				            r->loc[k][j], k);
			r->loc[k][j] = r->loc[k][--c];
			deleted++;
		}
		atomic_store(&r->state[k], ((s >> 5) + 1) << 5 | c);
	}
	for (unsigned i = 0; i + 1 < before.filters; i++) {
		struct admit_chain_filter_info fi;

		admit_chain_filter_info(r->c, i, &fi);
		if (fi.items != 0)
			break;
		empty++;
		dropped += fi.fpr_bound;
	}
	if (empty < half)
		stress_fail("before trim: %u of the %u oldest filters empty", empty, half);
	if (admit_chain_trim(r->c, &removed) != ADMIT_OK || removed != empty)
		stress_fail("trim removed %u filters, %u were an empty prefix", removed, empty);
	admit_chain_info(r->c, &after);
	if (after.filters != before.filters - removed ||
	    after.trimmed != before.trimmed + removed ||
	    after.items != before.items - deleted ||
	    !near(after.fpr_bound, before.fpr_bound - dropped))
		stress_fail("after trim: %u filters, %" PRIu64 " trimmed, bound %g; before %u, %"
		            PRIu64 ", %g less %g", after.filters, after.trimmed, after.fpr_bound,
		            before.filters, before.trimmed, before.fpr_bound, dropped);
	for (uint64_t k = 0; k < r->owned; k++) {
		unsigned c = atomic_load(&r->state[k]) & ST_COUNT;

		for (unsigned j = 0; j < c; j++)
			r->loc[k][j] = (uint8_t)(r->loc[k][j] - removed);
	}
	{
		uint64_t absent = 0;

		(void)presence_checks(r, r->c, "after trim", &absent);
	}
	tot->trimmed += removed;
	tot->main_deleted += deleted;
}

static struct admit_chain *
new_chain(const struct opts *o, uint64_t n)
{
	struct admit_chain *c = NULL;
	struct admit_chain_config cfg = {
		.capacity = o->capacity, .expansion = o->expansion,
		.fingerprint_bits = o->bits, .max_load = o->max_load,
		.single_writer = o->single_writer, .seed = prng_mix(o->seed + n) | 1,
	};
	enum admit_status st = admit_chain_new(&cfg, &c);

	if (st != ADMIT_OK) {
		fprintf(stderr, "cannot create the chain: %s\n", admit_strerror(st));
		exit(2);
	}
	return c;
}

/* One epoch's checks, after the join; the threads wait at the gate. */
static void
after_epoch(struct run *r, struct thr *th, const char *path, struct totals *tot)
{
	struct admit_chain_info ci;
	uint64_t ins = 0, del = 0;

	for (unsigned i = 0; i < r->o->threads; i++) {
		ins += th[i].inserted;
		del += th[i].deleted;
	}
	info_checks(r, ins - del - tot->main_deleted, &ci);
	tot->grown += ci.trimmed + ci.filters - tot->start_filters;
	if (ci.fpr_bound > tot->max_bound)
		tot->max_bound = ci.fpr_bound;
	bound_check(r, ci.fpr_bound, tot);
	save_check(r, path, tot);
	trim_check(r, tot);
	info_checks(r, ins - del - tot->main_deleted, &ci);
	tot->epochs++;
	if (tot->epochs % 2 == 0) {
		/* A fresh small chain: growth starts over. */
		admit_chain_free(r->c);
		r->c = new_chain(r->o, tot->epochs);
		tot->chains++;
		for (uint64_t k = 0; k < r->owned; k++)
			atomic_store(&r->state[k], 0);
		for (unsigned i = 0; i < r->o->threads; i++)
			th[i].inserted = th[i].deleted = 0;
		tot->main_deleted = 0;
		admit_chain_info(r->c, &ci);
	}
	tot->start_filters = ci.trimmed + ci.filters;
}

/* ---- options ------------------------------------------------------------ */

static void
usage(FILE *out)
{
	fprintf(out,
	"usage: stress_chain [options]\n"
	"  -t, --threads N      threads (default 2 x cores)\n"
	"  -d, --seconds S      duration (default 10)\n"
	"  -n, --ops N          stop each thread after N operations (default: no limit)\n"
	"  -e, --epoch-ops N    operations per thread per epoch (default 8 x keys)\n"
	"  -s, --seed S         seed (default: from the clock; printed to replay a run)\n"
	"  -k, --keys N         keys owned by each writer (default 4096)\n"
	"  -c, --capacity N     the first filter's capacity (default 64; with\n"
	"                       --expansion 1, what holds the keys in ~15 filters)\n"
	"  -E, --expansion N    each filter holds N x the one before (default 2)\n"
	"  -b, --bits B         fingerprint bits, 8 or 16 (default 16)\n"
	"  -L, --max-load L     each filter's load limit (the chain's add mutex)\n"
	"  -1, --single-writer  one writer thread, the others only read\n"
	"  -r, --rounds N       add_unique rounds per epoch (default 16)\n"
	"  -x, --mix SPEC       weights, default add=20,unique=10,delete=28,\n"
	"                       contains=15,count=7,other=20\n"
#ifdef STRESS_CHAIN_BROKEN
	"  -D, --defect NAME    the planted defect: lookup, count, size or unique\n"
#endif
	"  -h, --help\n");
}

static bool
parse_mix(struct opts *o, char *spec)
{
	memset(o->mix, 0, sizeof(o->mix));
	for (char *tok = strtok(spec, ","); tok; tok = strtok(NULL, ",")) {
		char *eq = strchr(tok, '=');
		int op;

		if (!eq)
			return false;
		*eq = '\0';
		for (op = 0; op < OP_N && strcmp(op_names[op], tok); op++)
			;
		if (op == OP_N)
			return false;
		o->mix[op] = (unsigned)strtoul(eq + 1, NULL, 10);
	}
	return true;
}

static int
parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "threads", 1, NULL, 't' }, { "seconds", 1, NULL, 'd' },
		{ "ops", 1, NULL, 'n' }, { "epoch-ops", 1, NULL, 'e' },
		{ "seed", 1, NULL, 's' }, { "keys", 1, NULL, 'k' },
		{ "capacity", 1, NULL, 'c' }, { "expansion", 1, NULL, 'E' },
		{ "bits", 1, NULL, 'b' }, { "max-load", 1, NULL, 'L' },
		{ "single-writer", 0, NULL, '1' }, { "rounds", 1, NULL, 'r' },
		{ "mix", 1, NULL, 'x' }, { "defect", 1, NULL, 'D' },
		{ "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	static const unsigned mix[OP_N] = { 20, 10, 28, 15, 7, 20 };
	char *spec = NULL;
	int c;

	memcpy(o->mix, mix, sizeof(mix));
	while ((c = getopt_long(argc, argv, "t:d:n:e:s:k:c:E:b:L:1r:x:D:h", longopts,
	                        NULL)) != -1) {
		switch (c) {
		case 't': o->threads = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'd': o->seconds = strtod(optarg, NULL); break;
		case 'n': o->ops = strtoull(optarg, NULL, 0); break;
		case 'e': o->epoch_ops = strtoull(optarg, NULL, 0); break;
		case 's': o->seed = strtoull(optarg, NULL, 0); break;
		case 'k': o->keys = strtoull(optarg, NULL, 0); break;
		case 'c': o->capacity = strtoull(optarg, NULL, 0); break;
		case 'E': o->expansion = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'b': o->bits = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'L': o->max_load = strtod(optarg, NULL); break;
		case '1': o->single_writer = true; break;
		case 'r': o->rounds = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'x': spec = optarg; break;
#ifdef STRESS_CHAIN_BROKEN
		case 'D':
			atomic_store(&chain_broken_defect,
			             !strcmp(optarg, "lookup") ? 1 :
			             !strcmp(optarg, "count") ? 2 :
			             !strcmp(optarg, "size") ? 3 :
			             !strcmp(optarg, "unique") ? 4 : -1);
			if (atomic_load(&chain_broken_defect) < 0)
				return 2;
			break;
#endif
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return 2;
		}
	}
	if (spec && !parse_mix(o, spec)) {
		fprintf(stderr, "bad --mix\n");
		return 2;
	}
	if (o->expansion == 0)
		o->expansion = 2; /* as admit_chain_config reads it */
	if (o->bits == 13) {
		fprintf(stderr, "stress_chain: a chain's filters cannot use semi-sorted "
		        "buckets (admit_chain_config takes 8 or 16 fingerprint bits): "
		        "use --bits 8 or 16\n");
		return 2;
	}
	if (o->threads < 1 || o->keys < 1 || (o->bits != 8 && o->bits != 16) ||
	    (o->single_writer && o->threads < 2) || optind != argc) {
		usage(stderr);
		return 2;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct opts o = { .threads = stress_default_threads(), .seconds = 10,
	                  .keys = 4096, .expansion = 2, .bits = 16, .rounds = 16 };
	struct run r = { .o = &o };
	struct totals tot = { .chains = 1, .start_filters = 1 };
	uint64_t ops[OP_N] = { 0 }, all = 0, full = 0, skipped = 0, fpu = 0, fps = 0;
	uint64_t rounds = 0, rounds_none = 0;
	struct prng rng;
	char path[4096];
	struct thr *th;
	double t0, t1, last;
	int c, fd;

	c = parse(argc, argv, &o);
	if (c)
		return c == 1 ? 0 : c;
	for (int op = 0; op < OP_N; op++)
		r.mix_total += o.mix[op];
	if (r.mix_total == 0) {
		usage(stderr);
		return 2;
	}
	if (!o.seed)
		o.seed = stress_seed_from_clock();
	r.writers = o.single_writer ? 1 : o.threads;
	r.owned = o.keys * r.writers;
	if (!o.epoch_ops)
		o.epoch_ops = 8 * o.keys;
	if (!o.capacity)
		o.capacity = o.expansion == 1 ? r.owned / 12 + 64 : 64;
	printf("stress_chain: seed %" PRIu64 ", %u threads%s, %u bits, expansion %u, "
	       "first capacity %" PRIu64 ", max_load %g, %" PRIu64 " keys/writer, "
	       "%" PRIu64 " ops/thread/epoch, %.1f s\n", o.seed, o.threads,
	       o.single_writer ? " (one writer)" : "", o.bits, o.expansion, o.capacity,
	       o.max_load, o.keys, o.epoch_ops, o.seconds);
	fflush(stdout);

	r.c = new_chain(&o, 0);
	r.keys = malloc((r.owned + o.rounds + PROBES) * sizeof(*r.keys));
	r.state = calloc(r.owned, sizeof(*r.state));
	r.loc = calloc(r.owned, sizeof(*r.loc));
	th = calloc(o.threads, sizeof(*th));
	if (!r.keys || !r.state || !r.loc || !th)
		return 2;
	/* Distinct keys: prng_mix is a bijection. */
	for (uint64_t k = 0; k < r.owned + o.rounds + PROBES; k++)
		r.keys[k] = prng_mix((o.seed << 24) + k);
	snprintf(path, sizeof(path), "%s/stress_chain.XXXXXX",
	         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		return 2;
	}
	close(fd);
	rng.s = prng_mix(o.seed ^ 0xd1e5);
	pthread_barrier_init(&r.gate, NULL, o.threads + 1);
	pthread_barrier_init(&r.rounds_gate, NULL, o.threads);
	for (unsigned i = 0; i < o.threads; i++) {
		th[i].r = &r;
		th[i].id = i;
		th[i].rng.s = prng_mix(o.seed + i);
		if (pthread_create(&th[i].tid, NULL, worker, &th[i]) != 0) {
			fprintf(stderr, "cannot start thread %u\n", i);
			return 2;
		}
	}
	t0 = stress_now();
	for (;;) {
		/* The start gate: every thread begins the epoch at once. */
		pthread_barrier_wait(&r.gate);
		/* A dump every 10 ms at most, the first as the epoch begins. */
		last = 0;
		while (atomic_load(&r.done) < o.threads) {
			double now = stress_now();

			if (now - t0 >= o.seconds)
				atomic_store(&r.stop, true);
			if (now - last >= 0.01) {
				dump_check(&r, &rng, &tot.dumps);
				if (!o.single_writer && tot.dumps % 4 == 1)
					cap_check(&r, &tot.caps);
				last = now;
			} else {
				usleep(500);
			}
		}
		pthread_barrier_wait(&r.gate);
		atomic_store(&r.done, 0);
		after_epoch(&r, th, path, &tot);
		all = 0;
		for (unsigned i = 0; i < o.threads; i++)
			all += th[i].total;
		if (atomic_load(&r.stop) || stress_now() - t0 >= o.seconds ||
		    (o.ops && all >= o.ops * o.threads) || atomic_load(&stress_failures))
			break;
	}
	atomic_store(&r.quit, true);
	pthread_barrier_wait(&r.gate);
	t1 = stress_now();
	for (unsigned i = 0; i < o.threads; i++)
		pthread_join(th[i].tid, NULL);
	all = 0;
	for (unsigned i = 0; i < o.threads; i++) {
		for (int op = 0; op < OP_N; op++) {
			ops[op] += th[i].ops[op];
			all += th[i].ops[op];
		}
		full += th[i].full;
		skipped += th[i].skipped;
		fpu += th[i].fp_unique;
		fps += th[i].fp_seen;
		rounds += th[i].rounds;
		rounds_none += th[i].rounds_none;
	}
	printf("  ops: %" PRIu64 " in %.2f s (%.2f Mops/s):", all, t1 - t0,
	       (double)all / (t1 - t0) / 1e6);
	for (int op = 0; op < OP_N; op++)
		if (ops[op])
			printf(" %s %" PRIu64, op_names[op], ops[op]);
	printf("\n  chain: filters grown %" PRIu64 " over %" PRIu64 " epochs (%" PRIu64
	       " chains), trims removed %" PRIu64 ", concurrent dumps %" PRIu64
	       ", caps %" PRIu64 ", saves %" PRIu64 ", adds refused full %" PRIu64 "\n",
	       tot.grown, tot.epochs, tot.chains, tot.trimmed, tot.dumps, tot.caps,
	       tot.saves, full);
	printf("  false positives: %" PRIu64 " of %" PRIu64 " absent probes (largest bound %g);"
	       " add_unique %" PRIu64 ", contains %" PRIu64 "; unique rounds %" PRIu64
	       " (%" PRIu64 " none added); checks skipped (key in flux) %" PRIu64 "\n",
	       tot.probe_fp, tot.probes, tot.max_bound, fpu, fps, rounds, rounds_none,
	       skipped);
	c = atomic_load(&stress_failures) ? 1 : 0;
	printf("stress_chain: %s (%" PRIu64 " failures, seed %" PRIu64 ")\n",
	       c ? "FAIL" : "PASS", atomic_load(&stress_failures), o.seed);
	unlink(path);
	free(th);
	free(r.keys);
	free((void *)r.state);
	free(r.loc);
	pthread_barrier_destroy(&r.gate);
	pthread_barrier_destroy(&r.rounds_gate);
	admit_chain_free(r.c);
	return c;
}
