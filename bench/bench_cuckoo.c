/*
 * bench_cuckoo - admit's cuckoo filter against what a user would pick
 * instead, in one run, on the same keys and the same hash (bench/README.md).
 *
 * For a filter sized for n items (95 % load = n items) and each thread count
 * and load point: insert (from empty up to the load), positive and negative
 * lookups, mixed 90/5/5 (lookups/inserts/deletes), delete, and
 * contains_many, and the 8-byte-key batches (contains_u64 of positive
 * keys, insert_u64), in Mops/s, the median of --reps repetitions.  The keys of
 * every timed phase are drawn into arrays before the clock starts, as a user
 * holds the keys they look up.  Baselines:
 *   reference    the CoNEXT 2014 authors' cuckoo filter (refcf_set.cc, from
 *                ../shared when configure found it), 1 thread only; its
 *                contains_many row is single lookups of the same keys;
 *   admit-inline the same filter, lookups by admit_cuckoo_contains_inline()
 *                (admit/cuckoo_inline.h), the rest by the library;
 *   admit-mutex  the same filter behind one global pthread_mutex;
 *   bloom        a blocked Bloom filter of the same memory (bloom.c);
 *   lfht         liburcu's cds_lfht holding 64-bit key hashes (lfht_set.c);
 *   libcuckoo    libcuckoo's cuckoohash_map of the same (libcuckoo_set.cc).
 * Also measured in the run: the physical limit, two random 64-byte line
 * reads per operation from a huge-page table of the filter's size, as a
 * plain loop and with 16 operations prefetched ahead.
 *
 * Every row prints admit / baseline; --csv prints machine-readable rows
 * instead (the ratio rows name the structure "admit/<baseline>").
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <admit/admit.h>
#include <admit/cuckoo_inline.h>

#include "benchutil.h"

#include "hash.h"
#include "sets.h"

/* ---- what is measured --------------------------------------------------- */

enum kind { S_ADMIT, S_REF, S_INLINE, S_MUTEX, S_BLOOM, S_LFHT, S_LCUCKOO,
            NKIND };
static const char *kind_name[NKIND] = { "admit", "reference", "admit-inline",
                                        "admit-mutex", "bloom", "lfht",
                                        "libcuckoo" };

/* The single-threaded filter: measured on 1 thread only. */
static bool
single_threaded(enum kind k)
{
	return k == S_REF;
}

enum op { OP_INSERT, OP_POS, OP_NEG, OP_MIXED, OP_DELETE, OP_MANY,
          OP_INSERT_MANY, OP_MANY64, OP_INSERT64, NOPS };
static const char *op_name[NOPS] = { "insert", "lookup+", "lookup-",
                                     "mixed", "delete", "contains_many",
                                     "insert_many", "contains_u64",
                                     "insert_u64" };
/* Keys per call of the 8-byte-key batches (contains_u64, insert_u64): an
 * array a caller holds, passed in calls of this many. */
#define MANY64 256

#define MAX_LIST 8
#define MAX_REPS 25
#define MAX_THREADS 256
#define MANY 16 /* keys per insert_many call, contains_many's default */
#define MAX_MANY 256 /* largest --many; a power of two divides RING */

static struct {
	uint64_t n;
	unsigned bits;
	double seconds;
	uint64_t seed;
	int reps;
	bool csv;
	bool cpu_clock;
	bool progress;
	int nthreads, nloads;
	unsigned threads[MAX_LIST];
	unsigned loads[MAX_LIST];
	bool keep;
	bool no_u64;         /* leave out the 8-byte-key batch rows */
	unsigned many;       /* keys per contains_many call */
	bool want[NKIND];
} opt = {
	.n = 16u << 20, .bits = 16, .many = MANY, .seconds = 0.2, .seed = 42, .reps = 5,
	.nthreads = 4, .threads = { 1, 2, 8, 16 },
	.nloads = 4, .loads = { 50, 75, 90, 95 },
	.want = { true, true, true, true, true, true, true },
};

/* results[kind][thread index][load index][op][rep]; NAN = not measured. */
static double (*results)[MAX_LIST][MAX_LIST][NOPS][MAX_REPS];
static double fpr_sum[NKIND][MAX_LIST][MAX_LIST];
static double bytes_at[NKIND][MAX_LIST]; /* memory at each load */
static uint64_t insert_failures[NKIND];
static uint64_t mixed_failures[NKIND]; /* a full filter, or a bug */
static double max_load = NAN;
static int reps_done; /* medians are over the repetitions done so far */

/* ---- keys and time ------------------------------------------------------ */

static uint64_t items_at(int li);

/* present[i] = bench_key(i): the keys inserted, drawn once before any
 * timing; each load point holds present[0 .. items_at(load)). */
static uint64_t *present;
static uint64_t npresent;

/* Keys each thread of a timed phase cycles through, drawn before its
 * clock starts (a multiple of MANY). */
#define RING (1u << 20)

/* Key i of the run is bench_key(i).  Present keys are i < 2^40, negative
 * ones have bit 63 set, the mixed phase's fresh keys bit 56. */
#define NEG_KEY(r) bench_key((r) | 1ull << 63)
#define FRESH_KEY(load, tid, j) \
	bench_key(1ull << 56 | (uint64_t)(load) << 48 | (uint64_t)(tid) << 40 | (j))

static inline uint64_t
rng_next(uint64_t *s)
{
	/* xorshift64*: cheap enough not to matter next to a cache miss */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static inline uint64_t
below(uint64_t r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)r * n) >> 64);
}

static double
now(void)
{
	return bench_clock(CLOCK_MONOTONIC);
}

static double
cpu_now(void)
{
	return bench_clock(CLOCK_THREAD_CPUTIME_ID);
}

static long ncpu = 1;

/*
 * Mops/s of a phase.  Wall clock: ops over the span from the first thread's
 * start to the last one's end.  CPU clock (--clock cpu), for a machine shared
 * with other work: ops over the CPU time the threads got, as if they had had
 * min(threads, CPUs) CPUs to themselves; spinning on a lock whose holder is
 * descheduled still counts.
 */
static double
rate(uint64_t ops, double wall, double cpu, unsigned nt)
{
	if (opt.cpu_clock)
		return ops * (double)(nt < ncpu ? nt : ncpu) / cpu / 1e6;
	return ops / wall / 1e6;
}

static void
sleep_for(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void
die(const char *what)
{
	fprintf(stderr, "bench_cuckoo: %s\n", what);
	exit(1);
}

/* ---- the structures behind one interface -------------------------------- */

struct subject {
	enum kind kind;
	struct admit_cuckoo *f;
	pthread_mutex_t mu;
	struct bench_bloom *bloom;
	struct bench_lfht *lfht;
	struct bench_lcuckoo *lc;
	struct bench_ref *ref;
	uint64_t seed;
};

static inline uint64_t
hash_of(const struct subject *s, uint64_t key)
{
	return admit_hash(&key, sizeof(key), s->seed);
}

static void
subject_new(struct subject *s, enum kind kind, uint64_t seed)
{
	struct admit_cuckoo_config cfg = { .capacity = opt.n,
	                                   .fingerprint_bits = opt.bits,
	                                   .seed = seed };
	struct admit_cuckoo *probe;

	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->seed = seed;
	switch (kind) {
	case S_ADMIT:
	case S_INLINE:
	case S_MUTEX:
		if (admit_cuckoo_new(&cfg, &s->f) != ADMIT_OK)
			die("admit_cuckoo_new failed");
		pthread_mutex_init(&s->mu, NULL);
		break;
	case S_BLOOM:
		/* Same bytes as the filter, tuned for the filter's 95 % load. */
		if (admit_cuckoo_new(&cfg, &probe) != ADMIT_OK)
			die("admit_cuckoo_new failed");
		s->bloom = bench_bloom_new(admit_cuckoo_memory(probe),
		                           admit_cuckoo_slots(probe) * 95 / 100);
		admit_cuckoo_free(probe);
		if (!s->bloom)
			die("bloom: out of memory");
		break;
	case S_REF:
#ifdef HAVE_REFCF
		/* Sized by its own constructor for the most items any load
		 * point puts in: 2^k buckets, doubled past 96 % load. */
		if (!(s->ref = bench_ref_new(items_at(opt.nloads - 1), opt.bits)))
			die("reference: out of memory");
#endif
		break;
	case S_LFHT:
		if (!(s->lfht = bench_lfht_new(opt.n)))
			die("lfht: out of memory");
		break;
	case S_LCUCKOO:
#ifdef HAVE_LIBCUCKOO
		if (!(s->lc = bench_lcuckoo_new(opt.n)))
			die("libcuckoo: out of memory");
#endif
		break;
	default:
		abort();
	}
}

static void
subject_free(struct subject *s)
{
	admit_cuckoo_free(s->f);
	bench_bloom_free(s->bloom);
	bench_lfht_free(s->lfht);
#ifdef HAVE_REFCF
	bench_ref_free(s->ref);
#endif
#ifdef HAVE_LIBCUCKOO
	bench_lcuckoo_free(s->lc);
#endif
	if (s->kind == S_ADMIT || s->kind == S_INLINE || s->kind == S_MUTEX)
		pthread_mutex_destroy(&s->mu);
}

static bool
supports(enum kind k, enum op o)
{
	if (k == S_INLINE)
		return o == OP_POS || o == OP_NEG;
	if (o == OP_MANY)
		return k == S_ADMIT || k == S_MUTEX || single_threaded(k);
	if ((o == OP_MANY64 || o == OP_INSERT64) && opt.no_u64)
		return false;
	if (o == OP_INSERT_MANY || o == OP_MANY64 || o == OP_INSERT64)
		return k == S_ADMIT || single_threaded(k);
	if (o == OP_DELETE || o == OP_MIXED)
		return k != S_BLOOM;
	return true;
}

static inline bool
s_insert(struct subject *s, uint64_t key)
{
	bool ok = false;

	switch (s->kind) {
	case S_ADMIT:
	case S_INLINE:
		return admit_cuckoo_insert(s->f, &key, sizeof(key)) == ADMIT_OK;
	case S_MUTEX:
		pthread_mutex_lock(&s->mu);
		ok = admit_cuckoo_insert(s->f, &key, sizeof(key)) == ADMIT_OK;
		pthread_mutex_unlock(&s->mu);
		return ok;
	case S_REF:
#ifdef HAVE_REFCF
		return bench_ref_insert(s->ref, key);
#endif
	case S_BLOOM:
		bench_bloom_add(s->bloom, hash_of(s, key));
		return true;
	case S_LFHT:
		return bench_lfht_insert(s->lfht, hash_of(s, key));
	case S_LCUCKOO:
#ifdef HAVE_LIBCUCKOO
		return bench_lcuckoo_insert(s->lc, hash_of(s, key));
#endif
	default:
		return false;
	}
}

static inline bool
s_contains(struct subject *s, uint64_t key)
{
	bool ok = false;

	switch (s->kind) {
	case S_ADMIT:
		return admit_cuckoo_contains(s->f, &key, sizeof(key));
	case S_INLINE:
		return admit_cuckoo_contains_inline(s->f, &key, sizeof(key));
	case S_MUTEX:
		pthread_mutex_lock(&s->mu);
		ok = admit_cuckoo_contains(s->f, &key, sizeof(key));
		pthread_mutex_unlock(&s->mu);
		return ok;
	case S_REF:
#ifdef HAVE_REFCF
		return bench_ref_contains(s->ref, key);
#endif
	case S_BLOOM:
		return bench_bloom_contains(s->bloom, hash_of(s, key));
	case S_LFHT:
		return bench_lfht_contains(s->lfht, hash_of(s, key));
	case S_LCUCKOO:
#ifdef HAVE_LIBCUCKOO
		return bench_lcuckoo_contains(s->lc, hash_of(s, key));
#endif
	default:
		return false;
	}
}

static inline bool
s_delete(struct subject *s, uint64_t key)
{
	bool ok = false;

	switch (s->kind) {
	case S_ADMIT:
	case S_INLINE:
		return admit_cuckoo_delete(s->f, &key, sizeof(key)) == ADMIT_OK;
	case S_MUTEX:
		pthread_mutex_lock(&s->mu);
		ok = admit_cuckoo_delete(s->f, &key, sizeof(key)) == ADMIT_OK;
		pthread_mutex_unlock(&s->mu);
		return ok;
	case S_REF:
#ifdef HAVE_REFCF
		return bench_ref_delete(s->ref, key);
#endif
	case S_LFHT:
		return bench_lfht_delete(s->lfht, hash_of(s, key));
	case S_LCUCKOO:
#ifdef HAVE_LIBCUCKOO
		return bench_lcuckoo_delete(s->lc, hash_of(s, key));
#endif
	default:
		return false;
	}
}

/* Every key's length in a contains_many call: 8 (set by main()). */
static size_t many_lens[MAX_MANY];

/* opt.many lookups of the keys kp[0..opt.many) (pointers to 8-byte keys,
 * which lie in one array); returns the hits.  The reference has no batch
 * call: opt.many single lookups. */
static inline unsigned
s_many(struct subject *s, const void *const *kp)
{
	bool out[MAX_MANY];
	unsigned hits = 0;
#ifdef HAVE_REFCF
	if (s->kind == S_REF)
		return (unsigned)bench_ref_contains_pass(s->ref, kp[0], opt.many);
#endif
	if (s->kind == S_MUTEX)
		pthread_mutex_lock(&s->mu);
	admit_cuckoo_contains_many(s->f, opt.many, kp, many_lens, out);
	if (s->kind == S_MUTEX)
		pthread_mutex_unlock(&s->mu);
	for (unsigned j = 0; j < opt.many; j++)
		hits += out[j];
	return hits;
}

/* MANY64 lookups of keys[0..MANY64) by admit_cuckoo_contains_many_u64();
 * the reference has no batch call: single lookups.  Returns the hits. */
static inline uint64_t
s_many64(struct subject *s, const uint64_t *keys)
{
	bool out[MANY64];
	uint64_t hits = 0;
#ifdef HAVE_REFCF
	if (s->kind == S_REF)
		return bench_ref_contains_pass(s->ref, keys, MANY64);
#endif
	admit_cuckoo_contains_many_u64(s->f, MANY64, keys, out);
	for (unsigned j = 0; j < MANY64; j++)
		hits += out[j];
	return hits;
}

/* ---- worker threads ----------------------------------------------------- */

struct job {
	pthread_t tid_handle;
	struct subject *s;
	enum op op;
	unsigned tid, load_idx;
	uint64_t lo, hi;     /* key range for insert / delete */
	uint64_t items;      /* present keys 0 .. items-1 */
	uint64_t *keys;      /* RING keys for the timed phases */
	const void **kp;     /* pointers to them, for contains_many */
	uint8_t *mix;        /* the mixed phase's operation for each */
	uint64_t rng;
	uint64_t ops, hits, fails;
	double t_start, t_end, cpu;
};

static pthread_barrier_t gate;
static atomic_bool stop;

enum { MIX_POS, MIX_NEG, MIX_INSERT, MIX_DELETE };

/* Draw the thread's keys (and for the mixed phase its operations) before
 * the clock starts. */
static void
prepare(struct job *j)
{
	j->keys = malloc(RING * sizeof(*j->keys));
	j->kp = malloc(RING * sizeof(*j->kp));
	j->mix = malloc(RING);
	if (!j->keys || !j->kp || !j->mix)
		die("out of memory for the keys");
	for (size_t x = 0; x < RING; x++) {
		uint64_t r = rng_next(&j->rng);
		unsigned c = (unsigned)below(r, 100);
		bool pos = j->op == OP_POS || j->op == OP_MANY64 ||
		           (j->op == OP_MIXED && c < 45);

		j->keys[x] = pos ? present[below(r, j->items)] : NEG_KEY(r);
		j->kp[x] = &j->keys[x];
		j->mix[x] = pos ? MIX_POS : c < 90 ? MIX_NEG : c < 95 ? MIX_INSERT
		                                          : MIX_DELETE;
	}
}

/* Lookups of keys[0..n): one tight loop per structure, as a user's loop
 * over an array of keys would be, with no dispatch between the calls.  The
 * admit rows call the shared library; admit-inline looks up through a copy
 * of the view in a local (cuckoo_inline.h); the reference's loop is in
 * refcf_set.cc, beside its header, so that its lookup is inlined. */
static uint64_t
lookup_pass(struct subject *s, const uint64_t *keys, size_t n)
{
	const struct admit_cuckoo *f = s->f;
	uint64_t hits = 0;

	switch (s->kind) {
	case S_ADMIT:
		for (size_t i = 0; i < n; i++)
			hits += admit_cuckoo_contains(f, &keys[i], 8);
		return hits;
	case S_INLINE: {
		struct admit_cuckoo_view view = admit_cuckoo_view_of(f);

		for (size_t i = 0; i < n; i++)
			hits += admit_cuckoo_view_contains(&view, f, &keys[i], 8);
		return hits;
	}
#ifdef HAVE_REFCF
	case S_REF:
		return bench_ref_contains_pass(s->ref, keys, n);
#endif
	default:
		for (size_t i = 0; i < n; i++)
			hits += s_contains(s, keys[i]);
		return hits;
	}
}

static void
run_timed(struct job *j)
{
	struct subject *s = j->s;
	const uint64_t *keys = j->keys;
	uint64_t ins = 0, del = 0;
	size_t x = 0;

	/* relaxed: a flag polled every 256 operations; it orders nothing. */
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (j->op == OP_POS || j->op == OP_NEG) {
			/* RING is a multiple of 256. */
			j->hits += lookup_pass(s, keys + x, 256);
			x = (x + 256) % RING;
			j->ops += 256;
			continue;
		}
		if (j->op == OP_MANY64) {
			/* RING is a multiple of MANY64. */
			j->hits += s_many64(s, keys + x);
			x = (x + MANY64) % RING;
			j->ops += MANY64;
			continue;
		}
		for (int b = 0; b < 256; b++) {
			switch (j->op) {
			case OP_MANY:
				j->hits += s_many(s, j->kp + x);
				j->ops += opt.many - 1;
				x += opt.many - 1;
				break;
			case OP_MIXED:
				/* The inserts' fresh keys (1 op in 20) are made
				 * here: they must not repeat when the ring does. */
				switch (j->mix[x]) {
				case MIX_POS:
					j->fails += !s_contains(s, keys[x]);
					break;
				case MIX_NEG:
					j->hits += s_contains(s, keys[x]);
					break;
				case MIX_INSERT:
					j->fails += !s_insert(s, FRESH_KEY(j->load_idx, j->tid, ins++));
					break;
				default:
					if (del < ins)
						j->fails += !s_delete(s, FRESH_KEY(j->load_idx, j->tid, del++));
					else
						j->hits += s_contains(s, keys[x]);
				}
				break;
			default:
				abort();
			}
			if (++x >= RING)
				x = 0;
		}
		j->ops += 256;
	}
	/* Put the table back as it was (untimed). */
	j->t_end = now();
	j->cpu = cpu_now() - j->cpu;
	while (del < ins)
		j->fails += !s_delete(s, FRESH_KEY(j->load_idx, j->tid, del++));
}

static void *
worker(void *arg)
{
	struct job *j = arg;

	if (j->op != OP_INSERT && j->op != OP_DELETE && j->op != OP_INSERT_MANY &&
	    j->op != OP_INSERT64)
		prepare(j);
	pthread_barrier_wait(&gate);
	j->t_start = now();
	j->cpu = cpu_now();
	switch (j->op) {
	case OP_INSERT:
		for (uint64_t i = j->lo; i < j->hi; i++)
			j->fails += !s_insert(j->s, present[i]);
		j->ops = j->hi - j->lo;
		break;
	case OP_INSERT_MANY:
		/* admit only: the keys' addresses gathered 16 at a time, as a
		 * caller holding an array of keys would. */
		for (uint64_t i = j->lo; i < j->hi; i += MANY) {
			static const size_t lens[MANY] = { 8, 8, 8, 8, 8, 8, 8, 8,
			                                   8, 8, 8, 8, 8, 8, 8, 8 };
			const void *kp[MANY];
			enum admit_status st[MANY];
			size_t k = j->hi - i < MANY ? j->hi - i : MANY;

			for (size_t x = 0; x < k; x++)
				kp[x] = &present[i + x];
			if (admit_cuckoo_insert_many(j->s->f, k, kp, lens, st) != ADMIT_OK)
				for (size_t x = 0; x < k; x++)
					j->fails += st[x] != ADMIT_OK;
		}
		j->ops = j->hi - j->lo;
		break;
	case OP_INSERT64:
		/* admit only: the keys' array in calls of MANY64. */
		for (uint64_t i = j->lo; i < j->hi; i += MANY64) {
			enum admit_status st[MANY64];
			size_t k = j->hi - i < MANY64 ? j->hi - i : MANY64;

			if (admit_cuckoo_insert_many_u64(j->s->f, k, &present[i],
			                                 st) != ADMIT_OK)
				for (size_t x = 0; x < k; x++)
					j->fails += st[x] != ADMIT_OK;
		}
		j->ops = j->hi - j->lo;
		break;
	case OP_DELETE:
		for (uint64_t i = j->lo; i < j->hi; i++)
			j->fails += !s_delete(j->s, present[i]);
		j->ops = j->hi - j->lo;
		break;
	default:
		run_timed(j);
	}
	if (j->op == OP_INSERT || j->op == OP_DELETE || j->op == OP_INSERT_MANY ||
	    j->op == OP_INSERT64) {
		j->t_end = now();
		j->cpu = cpu_now() - j->cpu;
	}
	return NULL;
}

/* Run op on nt threads; key range [lo, hi) split between them for insert
 * and delete, otherwise for opt.seconds.  Returns Mops/s. */
static double
run(struct subject *s, enum op op, unsigned nt, uint64_t lo, uint64_t hi,
    uint64_t items, unsigned load_idx, uint64_t *hits, uint64_t *fails,
    uint64_t *opsp)
{
	static struct job jobs[MAX_THREADS];
	uint64_t ops = 0;
	double t0, t1, cpu = 0;

	atomic_store(&stop, false);
	pthread_barrier_init(&gate, NULL, nt + 1);
	for (unsigned t = 0; t < nt; t++) {
		jobs[t] = (struct job){
			.s = s, .op = op, .tid = t, .load_idx = load_idx,
			.lo = lo + (hi - lo) * t / nt,
			.hi = lo + (hi - lo) * (t + 1) / nt,
			.items = items,
			.rng = bench_key(opt.seed ^ ((uint64_t)t << 32) ^ (uint64_t)op << 24 ^
			              (uint64_t)(now() * 1e9)) | 1,
		};
		if (pthread_create(&jobs[t].tid_handle, NULL, worker, &jobs[t]))
			die("pthread_create failed");
	}
	/* The span from the first thread's start to the last one's end: with
	 * more threads than cores, some run before this thread wakes up. */
	pthread_barrier_wait(&gate);
	if (op != OP_INSERT && op != OP_DELETE && op != OP_INSERT_MANY &&
	    op != OP_INSERT64) {
		sleep_for(opt.seconds);
		atomic_store(&stop, true);
	}
	for (unsigned t = 0; t < nt; t++)
		pthread_join(jobs[t].tid_handle, NULL);
	pthread_barrier_destroy(&gate);
	*hits = *fails = 0;
	t0 = jobs[0].t_start;
	t1 = jobs[0].t_end;
	for (unsigned t = 0; t < nt; t++) {
		ops += jobs[t].ops;
		*hits += jobs[t].hits;
		*fails += jobs[t].fails;
		t0 = jobs[t].t_start < t0 ? jobs[t].t_start : t0;
		t1 = jobs[t].t_end > t1 ? jobs[t].t_end : t1;
		cpu += jobs[t].cpu;
		free(jobs[t].keys);
		free(jobs[t].kp);
		free(jobs[t].mix);
	}
	if (opsp)
		*opsp = ops;
	return rate(ops, t1 - t0, cpu, nt);
}

/* ---- the measurement ---------------------------------------------------- */

static uint64_t slots; /* the filter's slots: load L holds L % of them */

static uint64_t
items_at(int li)
{
	return slots * opt.loads[li] / 100;
}

/* A fresh filter filled by the batch insert op, timed per load point. */
static void
fill_by(enum kind k, int ti, int rep, enum op op)
{
	unsigned nt = opt.threads[ti];
	struct subject b;
	uint64_t prev = 0, hits, fails;
	double ins_time = 0;

	subject_new(&b, k, opt.seed + (uint64_t)rep);
	for (int li = 0; li < opt.nloads; li++) {
		uint64_t items = items_at(li);

		if (items > prev) {
			ins_time += (items - prev) /
			            run(&b, op, nt, prev, items, 0, li, &hits,
			                &fails, NULL);
			insert_failures[k] += fails;
			prev = items;
		}
		results[k][ti][li][op][rep] = items / ins_time;
	}
	subject_free(&b);
}

static void
measure(enum kind k, int ti, int rep)
{
	unsigned nt = opt.threads[ti];
	struct subject s;
	uint64_t prev = 0, hits, fails, ops;
	double ins_time = 0;

	/* --keep: each structure is built and filled once, by its first
	 * measurement, and later ones only look up (one load point); the
	 * delete and mixed rows, which write, are left out. */
	static struct subject kept[NKIND];
	static bool have_kept[NKIND];
	bool reuse = opt.keep && have_kept[k];

	if (reuse)
		s = kept[k];
	else
		subject_new(&s, k, opt.seed + (uint64_t)rep);
	for (int li = 0; li < opt.nloads; li++) {
		uint64_t items = items_at(li), d;
		double (*r)[MAX_REPS] = results[k][ti][li];

		if (!reuse && items > prev) {
			double mops = run(&s, OP_INSERT, nt, prev, items, 0, li,
			                  &hits, &fails, NULL);

			ins_time += (items - prev) / mops;
			insert_failures[k] += fails;
			prev = items;
		}
		r[OP_INSERT][rep] = k == S_INLINE || reuse ? NAN : items / ins_time;
		for (enum op o = OP_POS; o < NOPS; o++) {
			if (!supports(k, o) || o == OP_INSERT_MANY ||
			    o == OP_INSERT64)
				continue;
			if (opt.keep && (o == OP_DELETE || o == OP_MIXED)) {
				r[o][rep] = NAN;
				continue;
			}
			if (o == OP_DELETE) {
				/* Delete the last sixteenth, then put it back. */
				d = items - items / 16;
				r[o][rep] = run(&s, OP_DELETE, nt, d, items, 0, li,
				                &hits, &fails, NULL);
				if (fails && !insert_failures[k])
					die("delete missed a key that was inserted");
				(void)run(&s, OP_INSERT, nt, d, items, 0, li, &hits,
				          &fails, NULL);
				continue;
			}
			r[o][rep] = run(&s, o, nt, 0, 0, items, li, &hits, &fails, &ops);
			if ((o == OP_POS || o == OP_MANY64) && hits != ops &&
			    !insert_failures[k])
				die("false negative in positive lookups");
			if (o == OP_MIXED)
				mixed_failures[k] += fails;
			if (o == OP_NEG)
				fpr_sum[k][ti][li] += (double)hits / ops;
		}
		if (k == S_ADMIT || k == S_MUTEX || k == S_BLOOM)
			bytes_at[k][li] = k == S_BLOOM ? bench_bloom_memory(s.bloom)
			                               : admit_cuckoo_memory(s.f);
#ifdef HAVE_REFCF
		if (k == S_REF)
			bytes_at[k][li] = bench_ref_memory(s.ref);
#endif
	}
	if (single_threaded(k))
		/* It has no batch insert: its one-at-a-time fill is what
		 * insert_many is compared with. */
		for (int li = 0; li < opt.nloads; li++)
			results[k][ti][li][OP_INSERT_MANY][rep] =
			results[k][ti][li][OP_INSERT64][rep] =
				results[k][ti][li][OP_INSERT][rep];
	if (k == S_ADMIT && ti == 0 && rep == 0 && !opt.keep) {
		/* Keep inserting until the filter says full. */
		uint64_t i = prev;

		while (admit_cuckoo_insert(s.f, &(uint64_t){ bench_key(i) }, 8) == ADMIT_OK)
			i++;
		max_load = (double)admit_cuckoo_size(s.f) / admit_cuckoo_slots(s.f);
	}
	if (opt.keep) {
		kept[k] = s;
		have_kept[k] = true;
	} else {
		subject_free(&s);
	}
	for (int li = 0; reuse && li < opt.nloads; li++)
		results[k][ti][li][OP_INSERT_MANY][rep] =
		results[k][ti][li][OP_INSERT64][rep] = NAN;
	if (k == S_ADMIT && !reuse) {
		/* Two more filters, filled by admit_cuckoo_insert_many() and
		 * by admit_cuckoo_insert_many_u64(). */
		fill_by(k, ti, rep, OP_INSERT_MANY);
		if (supports(k, OP_INSERT64))
			fill_by(k, ti, rep, OP_INSERT64);
	}
}

/* Resident bytes of this process. */
static double
rss(void)
{
	long pages = 0, res = 0;
	FILE *fp = fopen("/proc/self/statm", "r");

	if (!fp)
		return NAN;
	if (fscanf(fp, "%ld %ld", &pages, &res) != 2)
		res = 0;
	fclose(fp);
	return (double)res * sysconf(_SC_PAGESIZE);
}

/*
 * The exact sets allocate node by node: their memory is measured as the
 * growth of the resident set of a fresh child process that fills one, before
 * the parent has allocated and freed anything big that could be reused.
 */
static void
measure_memory(enum kind k)
{
	int fd[2];
	pid_t pid;

	if (pipe(fd) != 0 || (pid = fork()) < 0)
		die("fork failed");
	if (pid == 0) {
		struct subject s;
		double base = rss(), out[MAX_LIST];
		uint64_t prev = 0;

		close(fd[0]);
		subject_new(&s, k, opt.seed);
		for (int li = 0; li < opt.nloads; li++) {
			for (; prev < items_at(li); prev++)
				s_insert(&s, bench_key(prev));
			out[li] = rss() - base;
		}
		if (write(fd[1], out, sizeof(out)) != (ssize_t)sizeof(out))
			_exit(1);
		_exit(0);
	}
	close(fd[1]);
	if (read(fd[0], bytes_at[k], sizeof(bytes_at[k])) != (ssize_t)sizeof(bytes_at[k]))
		die("memory measurement failed");
	close(fd[0]);
	waitpid(pid, NULL, 0);
}

/* ---- the physical limit ------------------------------------------------- */

struct limit_job {
	pthread_t handle;
	const uint64_t *t;
	uint32_t lines;
	bool prefetch;
	uint64_t start, ops, sum;
	double cpu;
};

static void *
limit_worker(void *arg)
{
	struct limit_job *j = arg;
	const uint64_t *t = j->t;
	uint64_t i = j->start, sum = 0;

	pthread_barrier_wait(&gate);
	j->cpu = cpu_now();
	/* relaxed: see run_timed(). */
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int b = 0; b < 256; b++, i++) {
			uint64_t h = bench_key(i);

			if (j->prefetch) {
				uint64_t a = bench_key(i + 16);

				__builtin_prefetch(t + (size_t)admit_fastrange32((uint32_t)a, j->lines) * 8);
				__builtin_prefetch(t + (size_t)admit_fastrange32((uint32_t)(a >> 32), j->lines) * 8);
			}
			sum += t[(size_t)admit_fastrange32((uint32_t)h, j->lines) * 8] +
			       t[(size_t)admit_fastrange32((uint32_t)(h >> 32), j->lines) * 8];
		}
		j->ops += 256;
	}
	j->sum = sum;
	j->cpu = cpu_now() - j->cpu;
	return NULL;
}

static double limit_res[2][2][MAX_REPS]; /* [prefetch][threads - 1][rep] */

static void
measure_limit(int rep)
{
	struct admit_cuckoo_config cfg = { .capacity = opt.n,
	                                   .fingerprint_bits = opt.bits, .seed = 1 };
	struct admit_cuckoo *f;
	size_t bytes;
	uint64_t *t;

	if (admit_cuckoo_new(&cfg, &f) != ADMIT_OK)
		die("admit_cuckoo_new failed");
	bytes = (admit_cuckoo_memory(f) + 63) & ~(size_t)63;
	admit_cuckoo_free(f);
	if (posix_memalign((void **)&t, 2 << 20, bytes) != 0)
		die("limit: out of memory");
	(void)madvise(t, bytes, MADV_HUGEPAGE);
	memset(t, 1, bytes);
	for (int p = 0; p < 2; p++) {
		for (unsigned nt = 1; nt <= 2; nt++) {
			struct limit_job jobs[2];
			uint64_t ops = 0;
			double t0, cpu = 0;

			atomic_store(&stop, false);
			pthread_barrier_init(&gate, NULL, nt + 1);
			for (unsigned k = 0; k < nt; k++) {
				jobs[k] = (struct limit_job){ .t = t,
					.lines = (uint32_t)(bytes / 64), .prefetch = p,
					.start = (uint64_t)rep << 40 | (uint64_t)k << 36 };
				pthread_create(&jobs[k].handle, NULL, limit_worker, &jobs[k]);
			}
			pthread_barrier_wait(&gate);
			t0 = now();
			sleep_for(opt.seconds);
			atomic_store(&stop, true);
			t0 = now() - t0;
			for (unsigned k = 0; k < nt; k++) {
				pthread_join(jobs[k].handle, NULL);
				ops += jobs[k].ops;
				cpu += jobs[k].cpu;
				if (jobs[k].sum == 42)
					fputc(' ', stderr); /* keep the reads */
			}
			pthread_barrier_destroy(&gate);
			limit_res[p][nt - 1][rep] = rate(ops, t0, cpu, nt);
		}
	}
	free(t);
}

/* ---- output ------------------------------------------------------------- */

static double
med(enum kind k, int ti, int li, enum op o)
{
	if (!opt.want[k] || !supports(k, o) ||
	    (single_threaded(k) && opt.threads[ti] != 1))
		return NAN;
	/* Over the repetitions that measured it (--keep fills once). */
	double v[MAX_REPS];
	int n = 0;

	for (int rep = 0; rep < reps_done; rep++)
		if (!isnan(results[k][ti][li][o][rep]))
			v[n++] = results[k][ti][li][o][rep];
	return n ? bench_median(v, n) : NAN;
}

static double
bits_per_item(enum kind k, int li)
{
	return 8 * bytes_at[k][li] / (double)items_at(li);
}

static double
fpr_of(enum kind k, int ti, int li)
{
	return (k == S_ADMIT || k == S_MUTEX || k == S_BLOOM) && opt.want[k]
	       ? fpr_sum[k][ti][li] / reps_done : NAN;
}

static void
csv_row(const char *name, unsigned nt, const char *load, const char *op,
        double mops, double bits, double fpr)
{
	printf("%s,%u,%llu,%s,%s,", name, nt, (unsigned long long)opt.n, load, op);
	printf(isnan(mops) ? "," : "%.4g,", mops);
	printf(isnan(bits) ? "," : "%.3f,", bits);
	printf(isnan(fpr) ? "\n" : "%.3g\n", fpr);
}

static void
print_csv(const double lim[2][2])
{
	char name[64], load[16];

	puts("structure,threads,n,load,op,mops,bits_per_item,fpr");
	for (int ti = 0; ti < opt.nthreads; ti++)
		for (int li = 0; li < opt.nloads; li++)
			for (enum op o = 0; o < NOPS; o++) {
				double a = med(S_ADMIT, ti, li, o);

				snprintf(load, sizeof(load), "%u", opt.loads[li]);
				for (enum kind k = 0; k < NKIND; k++) {
					double m = med(k, ti, li, o);

					if (isnan(m))
						continue;
					csv_row(kind_name[k], opt.threads[ti], load,
					        op_name[o], m, bits_per_item(k, li),
					        o == OP_NEG ? fpr_of(k, ti, li) : NAN);
					if (k == S_ADMIT || isnan(a))
						continue;
					/* ratio row: speed ratio, and baseline bits /
					 * admit bits (how many times smaller) */
					snprintf(name, sizeof(name), "admit/%s", kind_name[k]);
					csv_row(name, opt.threads[ti], load, op_name[o],
					        a / m, bits_per_item(k, li) /
					        bits_per_item(S_ADMIT, li), NAN);
				}
			}
	for (int p = 0; p < 2; p++)
		for (unsigned nt = 1; nt <= 2; nt++)
			csv_row(p ? "limit-prefetch16" : "limit-plain", nt, "", "two-line-read",
			        lim[p][nt - 1], NAN, NAN);
	if (!isnan(max_load)) {
		snprintf(load, sizeof(load), "%.2f", 100 * max_load);
		csv_row("admit", 1, load, "max_load", NAN, NAN, NAN);
	}
}

/* A number, or "-" where nothing was measured. */
static void
cell(int width, double v)
{
	if (isnan(v))
		printf(" %*s", width, "-");
	else
		printf(" %*.2f", width, v);
}

static void
print_table(const double lim[2][2])
{
	static const enum kind base[] = { S_REF, S_MUTEX, S_BLOOM, S_LFHT,
	                                  S_LCUCKOO };
	static const char *const short_name[NKIND] = {
		[S_REF] = "ref", [S_MUTEX] = "mutex",
		[S_BLOOM] = "bloom", [S_LFHT] = "lfht", [S_LCUCKOO] = "lcuckoo" };
	enum kind inl = S_INLINE;
	enum { NBASE = sizeof(base) / sizeof(base[0]) };

	printf("n = %llu items at 95 %% load (%llu slots), %u-bit fingerprints, "
	       "median of %d, %.2f s per timed op, seed %llu, %s clock, %ld CPUs\n",
	       (unsigned long long)opt.n, (unsigned long long)slots, opt.bits,
	       reps_done, opt.seconds, (unsigned long long)opt.seed,
	       opt.cpu_clock ? "cpu" : "wall", ncpu);
	printf("(ref = the CoNEXT 2014 authors' filter: 1 thread only; its "
	       "contains_many and contains_u64 are single lookups, its "
	       "insert_many and insert_u64 its inserts)\n"
	       "contains_many: %u keys a call; contains_u64 (positive keys), "
	       "insert_u64: %u\n", opt.many, MANY64);
	printf("\n%-3s %-4s %-13s %8s", "thr", "load", "op", "admit");
	for (int b = 0; b < NBASE; b++)
		printf(" %8s", short_name[base[b]]);
	printf(" %8s  | admit /", "inline");
	for (int b = 0; b < NBASE; b++)
		printf(" %7s", short_name[base[b]]);
	printf(" | inline/ref\n");
	for (int ti = 0; ti < opt.nthreads; ti++) {
		for (int li = 0; li < opt.nloads; li++) {
			for (enum op o = 0; o < NOPS; o++) {
				double a = med(S_ADMIT, ti, li, o);

				printf("%-3u %3u%% %-13s", opt.threads[ti],
				       opt.loads[li], op_name[o]);
				cell(8, a);
				for (int b = 0; b < NBASE; b++)
					cell(8, med(base[b], ti, li, o));
				cell(8, med(inl, ti, li, o));
				printf("  |");
				for (int b = 0; b < NBASE; b++)
					cell(7, a / med(base[b], ti, li, o));
				printf(" |");
				cell(7, med(inl, ti, li, o) / med(S_REF, ti, li, o));
				putchar('\n');
			}
		}
		putchar('\n');
	}
	printf("memory, bits per item (admit / exact set = how many times smaller):\n");
	printf("%-4s %8s %8s %8s %8s %8s   %s\n", "load", "admit", "ref",
	       "bloom", "lfht", "lcuckoo", "lfht/admit lcuckoo/admit");
	for (int li = 0; li < opt.nloads; li++) {
		printf("%3u%% ", opt.loads[li]);
		for (enum kind k = 0; k < NKIND; k++)
			if (k != S_MUTEX && k != S_INLINE)
				cell(8, opt.want[k] ? bits_per_item(k, li) : NAN);
		for (enum kind k = S_LFHT; k <= S_LCUCKOO; k++)
			cell(10, opt.want[k] && opt.want[S_ADMIT]
			         ? bits_per_item(k, li) / bits_per_item(S_ADMIT, li) : NAN);
		putchar('\n');
	}
	if (opt.want[S_ADMIT] && opt.want[S_BLOOM])
		printf("false-positive rate at %u %%, 1st thread count: admit %.5f %%, "
		       "bloom %.5f %% (admit bound %.5f %%)\n",
		       opt.loads[opt.nloads - 1],
		       100 * fpr_of(S_ADMIT, 0, opt.nloads - 1),
		       100 * fpr_of(S_BLOOM, 0, opt.nloads - 1),
		       100.0 * 8 / (1u << opt.bits));
	if (!isnan(max_load))
		printf("admit: max load reached (1 thread, insert until full): %.2f %%\n",
		       100 * max_load);
	for (enum kind k = 0; k < NKIND; k++)
		if (insert_failures[k] || mixed_failures[k])
			printf("%s: %llu inserts failed (full), %llu failed operations "
			       "in the mixed phase\n", kind_name[k],
			       (unsigned long long)insert_failures[k],
			       (unsigned long long)mixed_failures[k]);
	printf("\nphysical limit, two random 64-byte line reads per op, huge pages:\n"
	       "  plain loop:      1 thread %6.2f  2 threads %6.2f Mops/s\n"
	       "  16-ahead prefetch: 1 thread %6.2f  2 threads %6.2f Mops/s\n",
	       lim[0][0], lim[0][1], lim[1][0], lim[1][1]);
	if (!opt.want[S_ADMIT])
		return;
	printf("admit as a fraction of the limit at %u %% load "
	       "(lookups / plain, batches / prefetched):\n",
	       opt.loads[opt.nloads - 1]);
	for (int ti = 0; ti < opt.nthreads; ti++) {
		unsigned nt = opt.threads[ti];
		int li = opt.nloads - 1, l = nt >= 2;

		printf("  %2u thread%s: lookup+ %.2f  lookup- %.2f  contains_many %.2f"
		       "  contains_u64 %.2f  (contains_many / lookup- %.2f)\n",
		       nt, nt > 1 ? "s" : " ",
		       med(S_ADMIT, ti, li, OP_POS) / lim[0][l],
		       med(S_ADMIT, ti, li, OP_NEG) / lim[0][l],
		       med(S_ADMIT, ti, li, OP_MANY) / lim[1][l],
		       med(S_ADMIT, ti, li, OP_MANY64) / lim[1][l],
		       med(S_ADMIT, ti, li, OP_MANY) / med(S_ADMIT, ti, li, OP_NEG));
	}
	for (int ti = 1; ti < opt.nthreads; ti++)
		printf("  scaling %2u threads / 1 thread: lookup+ %.2f  lookup- %.2f"
		       "  insert %.2f\n", opt.threads[ti],
		       med(S_ADMIT, ti, opt.nloads - 1, OP_POS) /
		       med(S_ADMIT, 0, opt.nloads - 1, OP_POS),
		       med(S_ADMIT, ti, opt.nloads - 1, OP_NEG) /
		       med(S_ADMIT, 0, opt.nloads - 1, OP_NEG),
		       med(S_ADMIT, ti, opt.nloads - 1, OP_INSERT) /
		       med(S_ADMIT, 0, opt.nloads - 1, OP_INSERT));
}

/* ---- command line ------------------------------------------------------- */

static int
parse_list(const char *s, unsigned *out, unsigned lo, unsigned hi)
{
	int n = 0;

	while (*s && n < MAX_LIST) {
		char *end;
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v < lo || v > hi)
			return -1;
		out[n++] = (unsigned)v;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return *s ? -1 : n;
}

static bool
parse_structures(const char *s)
{
	memset(opt.want, 0, sizeof(opt.want));
	while (*s) {
		size_t len = strcspn(s, ",");
		bool found = false;

		for (enum kind k = 0; k < NKIND; k++)
			if (strlen(kind_name[k]) == len && !strncmp(s, kind_name[k], len))
				opt.want[k] = found = true;
		if (!found)
			return false;
		s += len + (s[len] == ',');
	}
	return true;
}

static void
usage(void)
{
	fprintf(stderr,
	        "usage: bench_cuckoo [--n N] [--threads 1,2,8,16] [--bits 8|16]\n"
	        "         [--loads 50,75,90,95] [--seconds S] [--reps R] [--seed S]\n"
	        "         [--clock wall|cpu] [--progress (a table after every rep)]\n"
	        "         [--keep (fill each structure once, then only lookups;\n"
	        "          one load point)] [--many K (keys per contains_many\n"
	        "          call, a power of two up to 256; 16)]\n"
	        "         [--structures admit,reference,admit-inline,\n"
	        "                       admit-mutex,bloom,lfht,libcuckoo] [--csv]\n"
	        "         [--no-u64 (skip the 8-byte-key batch rows: for a library\n"
	        "          without them, bench/bench_ab.sh)]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	double lim[2][2];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--csv") || !strcmp(a, "--progress") ||
		    !strcmp(a, "--keep") || !strcmp(a, "--no-u64")) {
			opt.csv |= !strcmp(a, "--csv");
			opt.progress |= !strcmp(a, "--progress");
			opt.keep |= !strcmp(a, "--keep");
			opt.no_u64 |= !strcmp(a, "--no-u64");
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--n"))
			opt.n = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--bits"))
			opt.bits = (unsigned)atoi(v);
		else if (!strcmp(a, "--seconds"))
			opt.seconds = atof(v);
		else if (!strcmp(a, "--reps"))
			opt.reps = atoi(v);
		else if (!strcmp(a, "--clock") && (!strcmp(v, "cpu") || !strcmp(v, "wall")))
			opt.cpu_clock = !strcmp(v, "cpu");
		else if (!strcmp(a, "--many"))
			opt.many = (unsigned)atoi(v);
		else if (!strcmp(a, "--seed"))
			opt.seed = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--threads"))
			opt.nthreads = parse_list(v, opt.threads, 1, MAX_THREADS);
		else if (!strcmp(a, "--loads"))
			opt.nloads = parse_list(v, opt.loads, 1, 100);
		else if (!strcmp(a, "--structures")) {
			if (!parse_structures(v))
				usage();
		} else
			usage();
	}
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 1)
		ncpu = 1;
	if (opt.n < 1024 || opt.n > ADMIT_CUCKOO_MAX_CAPACITY ||
	    (opt.bits != 8 && opt.bits != 16) || !(opt.seconds > 0) ||
	    opt.reps < 1 || opt.reps > MAX_REPS || opt.nthreads < 1 || opt.nloads < 1 ||
	    (opt.keep && opt.nloads != 1) || opt.many < 1 || opt.many > MAX_MANY ||
	    (opt.many & (opt.many - 1)))
		usage();
	for (int j = 0; j < MAX_MANY; j++)
		many_lens[j] = 8;
	for (int li = 1; li < opt.nloads; li++)
		if (opt.loads[li] <= opt.loads[li - 1])
			usage();
#ifndef HAVE_REFCF
	if (opt.want[S_REF])
		fprintf(stderr, "bench_cuckoo: built without the reference filter "
		        "(configure looks for ../shared/ref/cuckoofilter beside the "
		        "source tree, and OpenSSL's headers): that baseline is "
		        "skipped\n");
	opt.want[S_REF] = false;
#endif
#ifndef HAVE_LIBCUCKOO
	if (opt.want[S_LCUCKOO])
		fprintf(stderr, "bench_cuckoo: built without libcuckoo "
		        "(apt-get install libcuckoo-dev, re-run configure): "
		        "that baseline is skipped\n");
	opt.want[S_LCUCKOO] = false;
#endif
	{
		struct admit_cuckoo_config cfg = { .capacity = opt.n,
		                                   .fingerprint_bits = opt.bits, .seed = 1 };
		struct admit_cuckoo *f;

		if (admit_cuckoo_new(&cfg, &f) != ADMIT_OK)
			die("admit_cuckoo_new failed");
		slots = admit_cuckoo_slots(f);
		admit_cuckoo_free(f);
	}
	results = calloc(NKIND, sizeof(*results));
	npresent = items_at(opt.nloads - 1);
	present = malloc(npresent * sizeof(*present));
	if (!results || !present)
		die("out of memory");
	for (uint64_t i = 0; i < npresent; i++)
		present[i] = bench_key(i);
	for (enum kind k = S_LFHT; k < NKIND; k++)
		if (opt.want[k]) {
			fprintf(stderr, "memory of %s ...\n", kind_name[k]);
			measure_memory(k);
		}
	for (int rep = 0; rep < opt.reps; rep++) {
		fprintf(stderr, "rep %d/%d: limit", rep + 1, opt.reps);
		measure_limit(rep);
		for (int ti = 0; ti < opt.nthreads; ti++)
			for (enum kind k = 0; k < NKIND; k++) {
				if (!opt.want[k] ||
				    (single_threaded(k) && opt.threads[ti] != 1))
					continue;
				fprintf(stderr, ", %s/%u", kind_name[k], opt.threads[ti]);
				measure(k, ti, rep);
			}
		fputc('\n', stderr);
		/* A table after every repetition: a long run that has to be
		 * stopped still leaves its medians so far. */
		reps_done = rep + 1;
		for (int p = 0; p < 2; p++)
			for (int t = 0; t < 2; t++)
				lim[p][t] = bench_median(limit_res[p][t], reps_done);
		if (reps_done < opt.reps && !opt.progress)
			continue;
		if (reps_done < opt.reps)
			printf("\n==== after %d of %d repetitions ====\n", reps_done, opt.reps);
		if (opt.csv)
			print_csv(lim);
		else
			print_table(lim);
		fflush(stdout);
	}
	return 0;
}
