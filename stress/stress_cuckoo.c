/*
 * stress_cuckoo - many threads run a mix of every cuckoo filter operation
 * and check, while they run and after they join, that nothing is lost.
 *
 * Keys are partitioned: each thread owns a range and is its only writer, so
 * it knows each of its keys' exact state.  It publishes that state in a
 * per-key word (a generation, a busy bit while an operation is in flight,
 * and the number of copies), which lets every other thread check the key at
 * any moment: read the word, call contains(), read the word again; if the
 * word did not change, the key's state held for the whole call, and the
 * answer must match it.  A shared region of keys is written by all threads
 * at once; there a thread checks a copy only while it holds it "borrowed"
 * (taken from a count of confirmed copies with a CAS), so nobody can delete
 * it meanwhile.  All keys have distinct filter signatures (stress_common.h),
 * so every answer is exact: no false positive can mask a lost key.
 *
 * Then all threads call insert_unique() on one fresh key at once, round
 * after round; exactly one must succeed.  After the join: the table walk
 * checks every slot (cuckoo_debug_walk), every key's entries are counted in
 * its two buckets, and admit_cuckoo_size() must equal both the inserts minus
 * the deletes and the occupied slots.
 *
 * Counting mode: each owner keeps, per key, bounds [lo, hi] on its counter.
 * hi follows increments and deletes (a halve only lowers a counter); lo is
 * also halved for every halve that may have overlapped (the main thread halves,
 * bumping a generation word to odd before and to even after).  A counter
 * above hi exceeds the increments made; a zero counter while lo >= 1 was
 * dropped without a halve.  Both fail the run.
 */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>

#include <admit/admit.h>

#include "stress_common.h"

enum op {
	OP_INSERT, OP_UNIQUE, OP_DELETE, OP_CONTAINS, OP_OTHER, OP_MANY,
	OP_SHARED, OP_INCREMENT, OP_COUNT, OP_HALVE, OP_N
};
static const char *const op_names[OP_N] = {
	"insert", "unique", "delete", "contains", "other", "many",
	"shared", "increment", "count", "halve",
};

struct opts {
	unsigned threads;
	double seconds;
	uint64_t ops;          /* per thread; 0 = until the time is up */
	uint64_t seed;
	uint64_t keys;         /* per thread */
	uint64_t shared;
	uint64_t capacity;     /* 0 = derived from the keys */
	unsigned rounds;       /* insert_unique rounds */
	unsigned bits;         /* 8, 16, or 13 (semi-sorted buckets) */
	bool counting;
	unsigned mix[OP_N];
};

/* Owned-key state word: generation << 5 | busy << 4 | copies (or 0/1). */
#define ST_BUSY 16u
#define ST_COUNT 15u
#define MAX_COPIES 2u   /* membership: copies of one key a thread keeps */
#define SHARED_MAX 3    /* confirmed copies of a shared key */
#define MANY 16

struct run {
	const struct opts *o;
	struct admit_cuckoo *f;
	uint64_t *keys;              /* owned, then shared, then unique-round */
	_Atomic uint32_t *state;     /* per owned key */
	_Atomic int32_t *conf;       /* per shared key: borrowable copies */
	_Atomic uint64_t *incs;      /* per key (counting): increments begun */
	_Atomic uint64_t halve_gen;  /* odd while a halve runs */
	_Atomic bool stop;
	_Atomic unsigned done;       /* threads past their mixed phase */
	uint64_t halves;             /* by the main thread */
	pthread_barrier_t rounds_gate;
	_Atomic unsigned unique_ok, unique_full;
	pthread_barrier_t gate;
	unsigned mix_total;
};

struct thr {
	pthread_t tid;
	struct run *r;
	unsigned id;
	struct prng rng;
	uint64_t ops[OP_N];
	uint64_t inserted, deleted; /* entries created and removed (membership) */
	uint64_t full, skipped, unique_rounds, unique_full_rounds;
	uint8_t *lo, *hi;           /* counting bounds, per owned key */
	uint64_t *lastg;            /* halve_gen the bounds account for */
};

static inline const uint64_t *
key_of(const struct run *r, uint64_t k)
{
	return &r->keys[k];
}
#define K(r, k) key_of((r), (k)), sizeof(uint64_t)

/* Halves that may have touched a key between generation `last' (when its
 * bounds were last exact) and `now': every halve not finished by `last'
 * and started by `now'. */
static inline unsigned
halves_since(uint64_t last, uint64_t now)
{
	uint64_t d = (now + 1) / 2 - last / 2;

	return d > 8 ? 8 : (unsigned)d;
}

/* ---- membership mode: owned keys ---------------------------------------- */

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

static void
own_op(struct thr *t, enum op op, uint64_t k)
{
	struct run *r = t->r;
	uint32_t s = atomic_load(&r->state[k]);
	unsigned c = s & ST_COUNT;
	enum admit_status st;

	if (op == OP_INSERT && c >= MAX_COPIES)
		op = OP_CONTAINS;
	if (op == OP_DELETE && c == 0)
		op = OP_CONTAINS;
	if (op == OP_CONTAINS) {
		if (admit_cuckoo_contains(r->f, K(r, k)) != (c > 0))
			stress_fail("thread %u: contains(own key %" PRIu64 ") = %d with %u copies",
			            t->id, k, c == 0, c);
		t->ops[op]++;
		return;
	}
	s = own_begin(r, k);
	if (op == OP_INSERT) {
		/* Every other insert and delete through the 8-byte-key batch,
		 * of one key, or, for a key without copies, of two copies of
		 * it (a batch sets aside its keys whose buckets are full and
		 * places them together). */
		if ((k & 3) == 3 && c == 0) {
			uint64_t two[2] = { *key_of(r, k), *key_of(r, k) };
			enum admit_status st2[2];

			(void)admit_cuckoo_insert_many_u64(r->f, 2, two, st2);
			if (st2[1] == ADMIT_OK) {
				c++;
				t->inserted++;
			} else if (st2[1] == ADMIT_FULL) {
				t->full++;
			} else {
				stress_fail("insert: %s", admit_strerror(st2[1]));
			}
			st = st2[0];
		} else if (k & 1) {
			(void)admit_cuckoo_insert_many_u64(r->f, 1, key_of(r, k), &st);
		} else {
			st = admit_cuckoo_insert(r->f, K(r, k));
		}
		if (st == ADMIT_OK) {
			c++;
			t->inserted++;
		} else if (st == ADMIT_FULL) {
			t->full++;
		} else {
			stress_fail("insert: %s", admit_strerror(st));
		}
	} else if (op == OP_UNIQUE) {
		st = admit_cuckoo_insert_unique(r->f, K(r, k));
		if (st == ADMIT_OK && c == 0) {
			c++;
			t->inserted++;
		} else if (st == ADMIT_FULL && c == 0) {
			t->full++;
		} else if (!(st == ADMIT_EXISTS && c > 0)) {
			stress_fail("insert_unique(own key %" PRIu64 ", %u copies): %s",
			            k, c, admit_strerror(st));
		}
	} else {
		if (k & 1)
			(void)admit_cuckoo_delete_many_u64(r->f, 1, key_of(r, k), &st);
		else
			st = admit_cuckoo_delete(r->f, K(r, k));
		if (st == ADMIT_OK) {
			c--;
			t->deleted++;
		} else {
			stress_fail("delete(own key %" PRIu64 ", %u copies): %s",
			            k, c, admit_strerror(st));
		}
	}
	own_end(r, k, s, c);
	t->ops[op]++;
}

/* Check another thread's key, if its state held still across the call. */
static void
check_other(struct thr *t, uint64_t k)
{
	struct run *r = t->r;
	uint32_t s1 = atomic_load(&r->state[k]), s2;
	bool found;

	if (s1 & ST_BUSY) {
		t->skipped++;
		return;
	}
	found = admit_cuckoo_contains(r->f, K(r, k));
	s2 = atomic_load(&r->state[k]);
	if (s1 != s2) {
		t->skipped++;
		return;
	}
	if (found != ((s1 & ST_COUNT) > 0))
		stress_fail("thread %u: contains(key %" PRIu64 " of another thread) = %d with %u copies",
		            t->id, k, found, s1 & ST_COUNT);
	t->ops[OP_OTHER]++;
}

static void
check_many(struct thr *t)
{
	struct run *r = t->r;
	uint64_t owned = r->o->keys * r->o->threads, k[MANY], ids[MANY];
	uint32_t s1[MANY];
	const void *keys[MANY];
	size_t lens[MANY];
	bool out[MANY];

	for (int j = 0; j < MANY; j++) {
		k[j] = prng_below(&t->rng, owned);
		keys[j] = key_of(r, k[j]);
		ids[j] = *key_of(r, k[j]);
		lens[j] = sizeof(uint64_t);
		s1[j] = atomic_load(&r->state[k[j]]);
	}
	/* Half by pointers and lengths, half as an array of 8-byte keys. */
	if (k[0] & 1)
		admit_cuckoo_contains_many_u64(r->f, MANY, ids, out);
	else
		admit_cuckoo_contains_many(r->f, MANY, keys, lens, out);
	for (int j = 0; j < MANY; j++) {
		if ((s1[j] & ST_BUSY) || atomic_load(&r->state[k[j]]) != s1[j])
			continue;
		if (out[j] != ((s1[j] & ST_COUNT) > 0))
			stress_fail("thread %u: contains_many[%d](key %" PRIu64 ") = %d with %u copies",
			            t->id, j, k[j], out[j], s1[j] & ST_COUNT);
	}
	t->ops[OP_MANY]++;
}

/* ---- membership mode: the shared region --------------------------------- */

static bool
borrow(struct run *r, uint64_t i)
{
	int32_t c = atomic_load(&r->conf[i]);

	while (c > 0)
		if (atomic_compare_exchange_weak(&r->conf[i], &c, c - 1))
			return true;
	return false;
}

static void
shared_op(struct thr *t, uint64_t i)
{
	struct run *r = t->r;
	uint64_t k = r->o->keys * r->o->threads + i;
	enum admit_status st;

	switch (prng_below(&t->rng, 4)) {
	case 0: /* insert a copy, then confirm it */
		if (atomic_load(&r->conf[i]) >= SHARED_MAX)
			break;
		st = admit_cuckoo_insert(r->f, K(r, k));
		if (st == ADMIT_OK) {
			t->inserted++;
			atomic_fetch_add(&r->conf[i], 1);
		} else if (st == ADMIT_FULL) {
			t->full++;
		} else {
			stress_fail("shared insert: %s", admit_strerror(st));
		}
		break;
	case 1: /* add if absent: others race on the very same key */
		st = admit_cuckoo_insert_unique(r->f, K(r, k));
		if (st == ADMIT_OK) {
			t->inserted++;
			atomic_fetch_add(&r->conf[i], 1);
		} else if (st == ADMIT_FULL) {
			t->full++;
		} else if (st != ADMIT_EXISTS) {
			stress_fail("shared insert_unique: %s", admit_strerror(st));
		}
		break;
	case 2: /* delete a copy we hold: it must be there */
		if (!borrow(r, i))
			break;
		st = admit_cuckoo_delete(r->f, K(r, k));
		if (st == ADMIT_OK)
			t->deleted++;
		else
			stress_fail("thread %u: delete of a confirmed copy of shared key %" PRIu64 ": %s",
			            t->id, i, admit_strerror(st));
		break;
	default: /* look up a copy we hold, so nobody deletes it meanwhile */
		if (!borrow(r, i)) {
			(void)admit_cuckoo_contains(r->f, K(r, k));
			break;
		}
		if (!admit_cuckoo_contains(r->f, K(r, k)))
			stress_fail("thread %u: shared key %" PRIu64 " missing while a copy was held",
			            t->id, i);
		atomic_fetch_add(&r->conf[i], 1);
		break;
	}
	t->ops[OP_SHARED]++;
}

/* ---- counting mode ------------------------------------------------------ */

static void
counting_check(struct thr *t, uint64_t k, unsigned c, uint64_t g1, uint64_t g2,
               const char *what)
{
	struct run *r = t->r;
	uint64_t j = k - (uint64_t)t->id * r->o->keys;
	unsigned lo = t->lo[j] >> halves_since(t->lastg[j], g2);

	if (c > t->hi[j] || c > atomic_load(&r->incs[k]))
		stress_fail("thread %u: %s: counter of key %" PRIu64 " is %u, above its bound %u "
		            "(%" PRIu64 " increments)", t->id, what, k, c, t->hi[j],
		            atomic_load(&r->incs[k]));
	if (c < lo)
		stress_fail("thread %u: %s: counter of key %" PRIu64 " is %u, below %u%s",
		            t->id, what, k, c, lo, c ? "" : ": dropped to 0 without a halve");
	if (halves_since(g1, g2) == 0) {
		/* No halve overlapped the read: the counter is known exactly. */
		t->lo[j] = t->hi[j] = (uint8_t)c;
	} else {
		t->lo[j] = (uint8_t)lo;
	}
	t->lastg[j] = g2;
}

static void
counting_op(struct thr *t, enum op op, uint64_t k)
{
	struct run *r = t->r;
	uint64_t j = k - (uint64_t)t->id * r->o->keys, g1, g2;
	enum admit_status st;
	unsigned d, lo;

	g1 = atomic_load(&r->halve_gen);
	switch (op) {
	case OP_INCREMENT:
		atomic_fetch_add(&r->incs[k], 1);
		st = admit_cuckoo_increment(r->f, K(r, k));
		g2 = atomic_load(&r->halve_gen);
		d = halves_since(t->lastg[j], g2);
		if (st == ADMIT_OK) {
			lo = t->lo[j] + 1u > 15 ? 15 : t->lo[j] + 1u;
			t->lo[j] = (uint8_t)(lo >> d);
			if (t->hi[j] < 15)
				t->hi[j]++;
		} else if (st == ADMIT_FULL) {
			if (t->lo[j] >> d)
				stress_fail("increment of present key %" PRIu64 ": full", k);
			t->lo[j] = (uint8_t)(t->lo[j] >> d);
			t->full++;
		} else {
			stress_fail("increment: %s", admit_strerror(st));
		}
		t->lastg[j] = g2;
		break;
	case OP_DELETE:
		st = admit_cuckoo_delete(r->f, K(r, k));
		g2 = atomic_load(&r->halve_gen);
		lo = t->lo[j] >> halves_since(t->lastg[j], g2);
		if (st == ADMIT_OK) {
			if (t->hi[j] == 0)
				stress_fail("delete found key %" PRIu64 " whose counter must be 0", k);
			else
				t->hi[j]--;
			t->lo[j] = (uint8_t)(lo ? lo - 1 : 0);
		} else if (st == ADMIT_NOTFOUND) {
			if (lo)
				stress_fail("thread %u: key %" PRIu64 " not found, counter >= %u: "
				            "dropped to 0 without a halve", t->id, k, lo);
			t->lo[j] = t->hi[j] = 0;
		} else {
			stress_fail("delete: %s", admit_strerror(st));
		}
		t->lastg[j] = g2;
		break;
	case OP_CONTAINS: {
		bool found = admit_cuckoo_contains(r->f, K(r, k));

		g2 = atomic_load(&r->halve_gen);
		lo = t->lo[j] >> halves_since(t->lastg[j], g2);
		if (lo && !found)
			stress_fail("thread %u: key %" PRIu64 " missing, counter >= %u: "
			            "dropped to 0 without a halve", t->id, k, lo);
		if (found && t->hi[j] == 0)
			stress_fail("thread %u: key %" PRIu64 " found, counter must be 0",
			            t->id, k);
		t->lo[j] = (uint8_t)lo;
		if (!found && halves_since(g1, g2) == 0)
			t->hi[j] = 0;
		t->lastg[j] = g2;
		break;
	}
	default: { /* OP_COUNT; g2 must be read after the count returns */
		unsigned c = admit_cuckoo_count(r->f, K(r, k));

		counting_check(t, k, c, g1, atomic_load(&r->halve_gen), "count");
		break;
	}
	}
	t->ops[op]++;
}

/* Another thread's key, or a shared one: never above the increments made. */
static void
counting_other(struct thr *t, uint64_t k, bool bump)
{
	struct run *r = t->r;
	unsigned c;

	if (bump) {
		atomic_fetch_add(&r->incs[k], 1);
		if (admit_cuckoo_increment(r->f, K(r, k)) == ADMIT_FULL)
			t->full++;
	}
	c = admit_cuckoo_count(r->f, K(r, k));
	if (c > atomic_load(&r->incs[k]))
		stress_fail("thread %u: counter of key %" PRIu64 " is %u after %" PRIu64 " increments",
		            t->id, k, c, atomic_load(&r->incs[k]));
	t->ops[bump ? OP_SHARED : OP_OTHER]++;
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

static void
unique_rounds(struct thr *t)
{
	struct run *r = t->r;
	const struct opts *o = r->o;
	uint64_t base = o->keys * o->threads + o->shared;

	for (unsigned i = 0; i < o->rounds; i++) {
		uint64_t k = base + i;
		enum admit_status st;

		pthread_barrier_wait(&r->rounds_gate);
		st = admit_cuckoo_insert_unique(r->f, K(r, k));
		if (st == ADMIT_OK)
			atomic_fetch_add(&r->unique_ok, 1);
		else if (st == ADMIT_FULL)
			atomic_fetch_add(&r->unique_full, 1);
		else if (st != ADMIT_EXISTS)
			stress_fail("unique round %u: %s", i, admit_strerror(st));
		pthread_barrier_wait(&r->rounds_gate);
		if (t->id == 0) {
			unsigned ok = atomic_exchange(&r->unique_ok, 0);
			unsigned full = atomic_exchange(&r->unique_full, 0);

			t->unique_rounds++;
			if (ok == 0 && full > 0) {
				t->unique_full_rounds++; /* no room: nobody added it */
			} else if (ok != 1) {
				stress_fail("unique round %u: insert_unique of one key by %u threads "
				            "succeeded %u times", i, o->threads, ok);
			}
			if (admit_cuckoo_count(r->f, K(r, k)) != (ok ? 1u : 0u))
				stress_fail("unique round %u: %u entries after %u successes", i,
				            admit_cuckoo_count(r->f, K(r, k)), ok);
			for (unsigned n = 0; n < ok; n++)
				if (admit_cuckoo_delete(r->f, K(r, k)) != ADMIT_OK)
					stress_fail("unique round %u: delete failed", i);
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
	uint64_t own0 = (uint64_t)t->id * o->keys;
	uint64_t owned = o->keys * o->threads;

	pthread_barrier_wait(&r->gate);
	for (uint64_t n = 0; !atomic_load(&r->stop) && (!o->ops || n < o->ops); n++) {
		enum op op = pick(t);
		uint64_t k = own0 + prng_below(&t->rng, o->keys);

		if (!o->counting) {
			if (op == OP_OTHER)
				check_other(t, prng_below(&t->rng, owned));
			else if (op == OP_MANY)
				check_many(t);
			else if (op == OP_SHARED && o->shared)
				shared_op(t, prng_below(&t->rng, o->shared));
			else if (op <= OP_CONTAINS)
				own_op(t, op, k);
		} else {
			if (op == OP_OTHER)
				counting_other(t, prng_below(&t->rng, owned), false);
			else if (op == OP_SHARED && o->shared)
				counting_other(t, owned + prng_below(&t->rng, o->shared), true);
			else if (op == OP_INCREMENT || op == OP_DELETE ||
			         op == OP_CONTAINS || op == OP_COUNT)
				counting_op(t, op, k);
		}
	}
	atomic_fetch_add(&r->done, 1);
	/* Everyone has stopped the mix before the rounds begin. */
	pthread_barrier_wait(&r->gate);
	unique_rounds(t);
	return NULL;
}

/* ---- after the join ----------------------------------------------------- */

static void
final_checks(struct run *r, struct thr *th, uint64_t *inserted, uint64_t *deleted)
{
	const struct opts *o = r->o;
	uint64_t owned = o->keys * o->threads, total = owned + o->shared + o->rounds;
	uint64_t walk = cuckoo_debug_walk(r->f), entries = 0, size;
	uint64_t g = atomic_load(&r->halve_gen);

	if (walk == UINT64_MAX) {
		stress_fail("table walk: a slot is invalid or its alternate bucket does not map back");
		return;
	}
	*inserted = *deleted = 0;
	for (unsigned i = 0; i < o->threads; i++) {
		*inserted += th[i].inserted;
		*deleted += th[i].deleted;
	}
	for (uint64_t k = 0; k < total; k++) {
		unsigned sum, n = cuckoo_debug_copies(r->f, K(r, k), &sum);

		entries += n;
		if (k < owned && !o->counting) {
			unsigned want = atomic_load(&r->state[k]) & ST_COUNT;

			if (n != want)
				stress_fail("key %" PRIu64 ": %u copies in its buckets, %u expected",
				            k, n, want);
		} else if (k < owned) {
			const struct thr *t = &th[k / o->keys];
			uint64_t j = k % o->keys;
			unsigned lo = t->lo[j] >> halves_since(t->lastg[j], g);

			if (n > 1 || sum < lo || sum > t->hi[j])
				stress_fail("key %" PRIu64 ": %u entries, counter %u, bounds [%u, %u]",
				            k, n, sum, lo, t->hi[j]);
		} else if (k < owned + o->shared && !o->counting) {
			int32_t want = atomic_load(&r->conf[k - owned]);

			if ((int32_t)n != want)
				stress_fail("shared key %" PRIu64 ": %u copies, %d confirmed",
				            k - owned, n, want);
		} else if (k < owned + o->shared) {
			if (n > 1 || sum > atomic_load(&r->incs[k]))
				stress_fail("shared key %" PRIu64 ": %u entries, counter %u, %" PRIu64
				            " increments", k - owned, n, sum, atomic_load(&r->incs[k]));
		} else if (n != 0) {
			stress_fail("unique-round key %" PRIu64 " still present", k);
		}
	}
	size = admit_cuckoo_size(r->f);
	if (size != walk)
		stress_fail("size %" PRIu64 " but the walk counts %" PRIu64 " occupied slots",
		            size, walk);
	/* Every entry belongs to a known key: nothing leaked, nothing lost. */
	if (entries != walk)
		stress_fail("the known keys account for %" PRIu64 " of %" PRIu64 " entries",
		            entries, walk);
	if (!o->counting && size != *inserted - *deleted)
		stress_fail("size %" PRIu64 " but %" PRIu64 " inserts - %" PRIu64 " deletes",
		            size, *inserted, *deleted);
}

/* ---- options ------------------------------------------------------------ */

static void
usage(FILE *out)
{
	fprintf(out,
	"usage: stress_cuckoo [options]\n"
	"  -t, --threads N    threads (default 2 x cores)\n"
	"  -d, --seconds S    duration of the mixed phase (default 10)\n"
	"  -n, --ops N        stop each thread after N operations (default: no limit)\n"
	"  -s, --seed S       seed (default: from the clock; printed to replay a run)\n"
	"  -k, --keys N       keys owned by each thread (default 4096)\n"
	"  -S, --shared N     keys all threads race on (default 64)\n"
	"  -c, --capacity N   filter capacity (default: what keeps the table ~90%% full)\n"
	"  -r, --rounds N     insert_unique rounds, all threads on one key (default 300)\n"
	"  -m, --mode M       8, 16, 13 (semi-sorted buckets) or counting\n"
	"                     (default 16)\n"
	"  -x, --mix SPEC     weights, default insert=25,unique=10,delete=25,contains=15,\n"
	"                     other=10,many=5,shared=10; counting mode: increment=35,\n"
	"                     delete=15,contains=10,count=20,other=10,shared=10\n"
	"                     (the main thread halves the table every 50 ms)\n"
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
		if (op >= OP_HALVE) /* unknown; halves are the main thread's */
			return false;
		o->mix[op] = (unsigned)strtoul(eq + 1, NULL, 10);
	}
	return true;
}

static void
default_mix(struct opts *o)
{
	static const unsigned member[OP_N] = { 25, 10, 25, 15, 10, 5, 10, 0, 0, 0 };
	static const unsigned counting[OP_N] = { 0, 0, 15, 10, 10, 0, 10, 35, 20, 0 };

	memcpy(o->mix, o->counting ? counting : member, sizeof(o->mix));
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "threads", 1, NULL, 't' }, { "seconds", 1, NULL, 'd' },
		{ "ops", 1, NULL, 'n' }, { "seed", 1, NULL, 's' },
		{ "keys", 1, NULL, 'k' }, { "shared", 1, NULL, 'S' },
		{ "capacity", 1, NULL, 'c' }, { "rounds", 1, NULL, 'r' },
		{ "mode", 1, NULL, 'm' }, { "mix", 1, NULL, 'x' },
		{ "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	struct opts o = { .threads = stress_default_threads(), .seconds = 10,
	                  .keys = 4096, .shared = 64, .rounds = 300, .bits = 16 };
	char *mix = NULL;
	struct run r = { .o = &o };
	struct thr *th;
	struct admit_cuckoo_stats cs;
	uint64_t owned, total, ops[OP_N] = { 0 }, all = 0, ins = 0, del = 0;
	uint64_t full = 0, skipped = 0, rounds = 0, full_rounds = 0;
	double t0, t1;
	int c;

	while ((c = getopt_long(argc, argv, "t:d:n:s:k:S:c:r:m:x:h", longopts, NULL)) != -1) {
		switch (c) {
		case 't': o.threads = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'd': o.seconds = strtod(optarg, NULL); break;
		case 'n': o.ops = strtoull(optarg, NULL, 0); break;
		case 's': o.seed = strtoull(optarg, NULL, 0); break;
		case 'k': o.keys = strtoull(optarg, NULL, 0); break;
		case 'S': o.shared = strtoull(optarg, NULL, 0); break;
		case 'c': o.capacity = strtoull(optarg, NULL, 0); break;
		case 'r': o.rounds = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'm':
			o.counting = !strcmp(optarg, "counting");
			o.bits = o.counting ? 16 : (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'x': mix = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	default_mix(&o);
	if (mix && !parse_mix(&o, mix)) {
		fprintf(stderr, "bad --mix\n");
		return 2;
	}
	for (int op = 0; op < OP_N; op++)
		r.mix_total += o.mix[op];
	if (o.threads < 1 || o.keys < 1 || (o.bits != 8 && o.bits != 16 && o.bits != 13) ||
	    r.mix_total == 0 || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (!o.seed)
		o.seed = stress_seed_from_clock();
	owned = o.keys * o.threads;
	total = owned + o.shared + o.rounds;
	/* Owned keys settle at about 1.2 copies on average: the table runs
	 * near 90 % full, where most inserts need cuckoo paths and a few find
	 * none. */
	if (!o.capacity)
		o.capacity = owned * 5 / 4 + o.shared * SHARED_MAX + 64;
	printf("stress_cuckoo: seed %" PRIu64 ", %u threads, mode %s, %" PRIu64
	       " keys/thread, %" PRIu64 " shared, capacity %" PRIu64 ", %.1f s, %u unique rounds\n",
	       o.seed, o.threads, o.counting ? "counting" : o.bits == 8 ? "8" :
	       o.bits == 13 ? "13 (semi-sorted)" : "16",
	       o.keys, o.shared, o.capacity, o.seconds, o.rounds);
	fflush(stdout);

	if (admit_cuckoo_new(&(struct admit_cuckoo_config){
	        .capacity = o.capacity, .fingerprint_bits = o.bits,
	        .counting = o.counting, .seed = o.seed,
	        .semi_sorted = o.bits == 13 }, &r.f) != ADMIT_OK) {
		fprintf(stderr, "cannot create the filter\n");
		return 2;
	}
	r.keys = stress_distinct_keys(r.f, total, o.seed);
	r.state = calloc(owned, sizeof(*r.state));
	r.conf = calloc(o.shared + 1, sizeof(*r.conf));
	r.incs = calloc(total, sizeof(*r.incs));
	th = calloc(o.threads, sizeof(*th));
	if (!r.state || !r.conf || !r.incs || !th)
		return 2;
	pthread_barrier_init(&r.gate, NULL, o.threads + 1);
	pthread_barrier_init(&r.rounds_gate, NULL, o.threads);
	for (unsigned i = 0; i < o.threads; i++) {
		th[i].r = &r;
		th[i].id = i;
		th[i].rng.s = prng_mix(o.seed + i);
		th[i].lo = calloc(o.keys, 1);
		th[i].hi = calloc(o.keys, 1);
		th[i].lastg = calloc(o.keys, sizeof(uint64_t));
		if (!th[i].lo || !th[i].hi || !th[i].lastg ||
		    pthread_create(&th[i].tid, NULL, worker, &th[i]) != 0) {
			fprintf(stderr, "cannot start thread %u\n", i);
			return 2;
		}
	}
	/* The start gate: every thread is created before any begins. */
	pthread_barrier_wait(&r.gate);
	t0 = stress_now();
	/* The main thread is the one halver in counting mode: a halve every
	 * 50 ms ages the table while the owners track their bounds. */
	while (stress_now() - t0 < o.seconds && atomic_load(&r.done) < o.threads) {
		usleep(50000);
		if (o.counting) {
			atomic_fetch_add(&r.halve_gen, 1);
			if (admit_cuckoo_halve(r.f) != ADMIT_OK)
				stress_fail("halve failed");
			atomic_fetch_add(&r.halve_gen, 1);
			ops[OP_HALVE]++;
		}
	}
	atomic_store(&r.stop, true);
	pthread_barrier_wait(&r.gate);
	t1 = stress_now();
	for (unsigned i = 0; i < o.threads; i++)
		pthread_join(th[i].tid, NULL);

	for (unsigned i = 0; i < o.threads; i++) {
		for (int op = 0; op < OP_N; op++) {
			ops[op] += th[i].ops[op];
			all += th[i].ops[op];
		}
		full += th[i].full;
		skipped += th[i].skipped;
		rounds += th[i].unique_rounds;
		full_rounds += th[i].unique_full_rounds;
	}
	final_checks(&r, th, &ins, &del);
	admit_cuckoo_stats(r.f, &cs);

	printf("  ops: %" PRIu64 " in %.2f s (%.2f Mops/s):", all, t1 - t0,
	       (double)all / (t1 - t0) / 1e6);
	for (int op = 0; op < OP_N; op++)
		if (ops[op])
			printf(" %s %" PRIu64, op_names[op], ops[op]);
	printf("\n  unique rounds: %" PRIu64 " (%" PRIu64 " found the table full)\n",
	       rounds, full_rounds);
	if (!o.counting)
		printf("  entries created %" PRIu64 ", removed %" PRIu64 ";", ins, del);
	printf("  size %" PRIu64 " of %" PRIu64 " slots; inserts refused full %" PRIu64
	       "; other-thread checks skipped (key in flux) %" PRIu64 "\n",
	       admit_cuckoo_size(r.f), admit_cuckoo_slots(r.f), full, skipped);
	printf("  filter stats: kicks %" PRIu64 ", path retries %" PRIu64
	       ", read retries %" PRIu64 ", full %" PRIu64 "\n",
	       cs.kicks, cs.path_retries, cs.read_retries, cs.full);
	c = atomic_load(&stress_failures) ? 1 : 0;
	printf("stress_cuckoo: %s (%" PRIu64 " failures, seed %" PRIu64 ")\n",
	       c ? "FAIL" : "PASS", atomic_load(&stress_failures), o.seed);

	for (unsigned i = 0; i < o.threads; i++) {
		free(th[i].lo);
		free(th[i].hi);
		free(th[i].lastg);
	}
	free(th);
	free(r.keys);
	free((void *)r.state);
	free((void *)r.conf);
	free((void *)r.incs);
	pthread_barrier_destroy(&r.gate);
	pthread_barrier_destroy(&r.rounds_gate);
	admit_cuckoo_free(r.f);
	return c;
}
