/*
 * stress_linear - record every operation on a small key space and check that
 * the history is linearizable against a sequential multiset model.
 *
 * A few threads (default 4) run insert / insert_unique / delete / contains
 * on 64 tracked keys, each call stamped with an invocation and a response
 * time from one shared atomic counter: if a's response stamp is below b's
 * invocation stamp, a returned before b began (both stamps are seq_cst
 * read-modify-writes of one word).  Meanwhile each thread churns its own
 * filler keys through a table kept at the edge of full, so cuckoo paths
 * constantly move the tracked keys' fingerprints between their buckets.
 *
 * All keys have distinct filter signatures (stress_common.h), so the filter
 * is exact on them and the history decomposes per key: the model of a key
 * is its number of copies.  After each round the threads stop, and for each
 * key a depth-first search looks for an order of its operations that
 * respects real time (an operation may go next only if it began before
 * every remaining operation ended) and the model; states (how far each
 * thread's operations are placed, and the count) are memoised, so the
 * search is linear in practice (Wing & Gong, with Lowe's memoisation).  At
 * the next round's start each key's count is re-read from the quiescent
 * table.  A key with no valid order is printed and fails the run.
 *
 * The same source compiled with -DADMIT_BROKEN_SKIP_VALIDATION, the
 * library's sources and src/cuckoo_broken.c is stress_linear_broken: its
 * lookups believe a miss without validating it, and the checker must catch
 * that (stress/broken-caught.sh).
 */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>

#include <admit/admit.h>

#include "stress_common.h"

#define MAX_THREADS 4
#define MAX_KEYS 256
#define POS_BITS 14                    /* ops of one thread on one key */
#define MAX_PER_KEY ((1u << POS_BITS) - 1)

enum lop { L_INSERT, L_UNIQUE, L_DELETE, L_CONTAINS };
static const char *const lop_names[] = { "insert", "insert_unique", "delete", "contains" };

struct event {
	uint64_t inv, res;
	uint8_t op, key;
	uint8_t result;   /* enum admit_status, or the bool of contains */
};

struct opts {
	unsigned threads, keys, fillers;
	double seconds;
	uint64_t ops;     /* per thread and round */
	uint64_t seed;
	uint64_t capacity;
	unsigned bits;    /* fingerprint bits, 8 or 16; 13: semi-sorted buckets */
	bool until_fail;
	unsigned mix[4];  /* weights of insert, insert_unique, delete, contains */
};

struct run {
	const struct opts *o;
	struct admit_cuckoo *f;
	uint64_t *keys;   /* tracked, then each thread's fillers */
	_Atomic uint64_t clock;
	pthread_barrier_t gate;
	_Atomic bool stop;
	unsigned mix_total;
};

struct thr {
	pthread_t tid;
	struct run *r;
	unsigned id;
	struct prng rng;
	struct event *ev;
	uint64_t nev;
	uint64_t head, tail;  /* the filler FIFO */
	uint64_t filler_ops;
};

static void
filler_step(struct thr *t)
{
	struct run *r = t->r;
	uint64_t n = r->o->fillers;
	const uint64_t *base = r->keys + r->o->keys + (uint64_t)t->id * n;

	if (t->tail - t->head == n &&
	    admit_cuckoo_delete(r->f, &base[t->head++ % n], 8) != ADMIT_OK)
		stress_fail("filler delete failed");
	if (admit_cuckoo_insert(r->f, &base[t->tail % n], 8) == ADMIT_OK)
		t->tail++;
	else if (t->tail > t->head &&
	         admit_cuckoo_delete(r->f, &base[t->head++ % n], 8) != ADMIT_OK)
		stress_fail("filler delete failed");
	t->filler_ops++;
}

static void
tracked_op(struct thr *t)
{
	struct run *r = t->r;
	struct event *e = &t->ev[t->nev++];
	uint64_t x = prng_next(&t->rng);
	unsigned k = (unsigned)((x >> 8) % r->o->keys);
	const uint64_t *key = &r->keys[k];
	enum admit_status st = ADMIT_OK;
	unsigned w = (unsigned)(x % r->mix_total);

	for (e->op = L_INSERT; w >= r->o->mix[e->op]; e->op++)
		w -= r->o->mix[e->op];
	e->key = (uint8_t)k;
	e->inv = atomic_fetch_add(&r->clock, 1);
	switch (e->op) {
	case L_INSERT:
		/* A quarter through the 8-byte-key batch (of one key: the
		 * other keys' histories must hold only their own calls). */
		if ((x >> 50) % 4 == 0)
			(void)admit_cuckoo_insert_many_u64(r->f, 1, key, &st);
		else
			st = admit_cuckoo_insert(r->f, key, 8);
		e->result = (uint8_t)st;
		break;
	case L_UNIQUE:
		e->result = (uint8_t)admit_cuckoo_insert_unique(r->f, key, 8);
		break;
	case L_DELETE:
		if ((x >> 50) % 4 == 0)
			(void)admit_cuckoo_delete_many_u64(r->f, 1, key, &st);
		else
			st = admit_cuckoo_delete(r->f, key, 8);
		e->result = (uint8_t)st;
		break;
	default:
		if (x >> 63) {
			e->result = admit_cuckoo_contains(r->f, key, 8);
		} else {
			/* A batch of 1 to 4 tracked keys, this one at a
			 * random place: each key's lookup falls within the
			 * call, so it is checked with the call's interval.
			 * Half by pointers and lengths, half as an array of
			 * 8-byte keys. */
			const void *keys[4];
			size_t lens[4] = { 8, 8, 8, 8 };
			uint64_t ids[4];
			bool out[4];
			unsigned n = 1 + (unsigned)(x >> 40) % 4;
			unsigned at = (unsigned)(x >> 44) % n;

			for (unsigned i = 0; i < n; i++) {
				keys[i] = &r->keys[(k + 1 + i) % r->o->keys];
				ids[i] = r->keys[(k + 1 + i) % r->o->keys];
			}
			keys[at] = key;
			ids[at] = *key;
			if ((x >> 50) % 2)
				admit_cuckoo_contains_many_u64(r->f, n, ids, out);
			else
				admit_cuckoo_contains_many(r->f, n, keys, lens, out);
			e->result = out[at];
		}
		break;
	}
	e->res = atomic_fetch_add(&r->clock, 1);
}

static void *
worker(void *arg)
{
	struct thr *t = arg;
	struct run *r = t->r;

	for (;;) {
		pthread_barrier_wait(&r->gate);     /* round start */
		if (atomic_load(&r->stop))
			return NULL;
		for (uint64_t i = 0; i < r->o->ops; i++) {
			filler_step(t);
			tracked_op(t);
		}
		pthread_barrier_wait(&r->gate);     /* round end */
	}
}

/* ---- the checker -------------------------------------------------------- */

/* One key's history: its events per thread, in each thread's order. */
struct keyhist {
	unsigned n[MAX_THREADS];
	const struct event *e[MAX_THREADS][MAX_PER_KEY];
};

struct memo {
	uint64_t *slot;
	size_t cap, used;
};

static bool
memo_add(struct memo *m, uint64_t state)
{
	size_t h;

	if (2 * (m->used + 1) > m->cap) {
		struct memo big = { calloc(m->cap * 2, sizeof(uint64_t)), m->cap * 2, 0 };

		if (!big.slot) {
			fprintf(stderr, "out of memory\n");
			exit(2);
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->slot[i])
				memo_add(&big, m->slot[i] - 1);
		free(m->slot);
		*m = big;
	}
	state++; /* 0 marks an empty slot */
	for (h = prng_mix(state) & (m->cap - 1); m->slot[h];
	     h = (h + 1) & (m->cap - 1))
		if (m->slot[h] == state)
			return false;
	m->slot[h] = state;
	m->used++;
	return true;
}

/* Apply one operation to a count of copies; false if its result is
 * impossible from that count. */
static bool
model_step(const struct event *e, unsigned *c)
{
	switch (e->op) {
	case L_INSERT:
		if (e->result == ADMIT_OK)
			return ++*c, true;
		return e->result == ADMIT_FULL;
	case L_UNIQUE:
		if (e->result == ADMIT_OK && *c == 0)
			return *c = 1, true;
		return (e->result == ADMIT_EXISTS && *c > 0) ||
		       (e->result == ADMIT_FULL && *c == 0);
	case L_DELETE:
		if (e->result == ADMIT_OK && *c > 0)
			return --*c, true;
		return e->result == ADMIT_NOTFOUND && *c == 0;
	default:
		return e->result == (*c > 0);
	}
}

struct search {
	const struct keyhist *h;
	unsigned threads;
	struct memo memo;
	uint64_t states;
};

static uint64_t
encode(const unsigned *p, unsigned threads, unsigned c)
{
	uint64_t s = c;

	for (unsigned t = 0; t < threads; t++)
		s = s << POS_BITS | p[t];
	return s;
}

static bool
linearize(struct search *s, unsigned *p, unsigned c)
{
	uint64_t minres = UINT64_MAX;
	bool done = true;

	for (unsigned t = 0; t < s->threads; t++)
		if (p[t] < s->h->n[t]) {
			done = false;
			if (s->h->e[t][p[t]]->res < minres)
				minres = s->h->e[t][p[t]]->res;
		}
	if (done)
		return true;
	for (unsigned t = 0; t < s->threads; t++) {
		const struct event *e;
		unsigned c2 = c;

		if (p[t] == s->h->n[t])
			continue;
		e = s->h->e[t][p[t]];
		/* It may go first only if it began before every remaining
		 * operation ended (its own end included). */
		if (e->inv > minres || !model_step(e, &c2) || c2 > 255)
			continue;
		p[t]++;
		s->states++;
		if (memo_add(&s->memo, encode(p, s->threads, c2)) && linearize(s, p, c2))
			return true;
		p[t]--;
	}
	return false;
}

static void
print_history(const struct keyhist *h, unsigned threads, unsigned k, unsigned c0)
{
	fprintf(stderr, "NOT LINEARIZABLE: key %u, %u copies at the round's start; "
	        "its operations (thread: [invoked, returned] op -> result):\n", k, c0);
	for (unsigned t = 0; t < threads; t++)
		for (unsigned i = 0; i < h->n[t]; i++) {
			const struct event *e = h->e[t][i];

			fprintf(stderr, "  t%u: [%" PRIu64 ", %" PRIu64 "] %s -> %s\n",
			        t, e->inv, e->res, lop_names[e->op],
			        e->op == L_CONTAINS ? (e->result ? "true" : "false") :
			        admit_strerror((enum admit_status)e->result));
		}
}

/* Check every key's history of the round; false if one is not linearizable. */
static bool
check_round(struct run *r, struct thr *th, const unsigned *start, struct keyhist *h,
            uint64_t *states)
{
	const struct opts *o = r->o;
	bool ok = true;

	for (unsigned k = 0; k < o->keys && ok; k++) {
		struct search s = { h, o->threads, { calloc(1024, 8), 1024, 0 }, 0 };
		unsigned p[MAX_THREADS] = { 0 };

		for (unsigned t = 0; t < o->threads; t++) {
			h->n[t] = 0;
			for (uint64_t i = 0; i < th[t].nev; i++)
				if (th[t].ev[i].key == k) {
					if (h->n[t] == MAX_PER_KEY) {
						fprintf(stderr, "too many operations per key: lower --ops\n");
						exit(2);
					}
					h->e[t][h->n[t]++] = &th[t].ev[i];
				}
		}
		if (!s.memo.slot)
			exit(2);
		if (!linearize(&s, p, start[k])) {
			print_history(h, o->threads, k, start[k]);
			stress_fail("round history of key %u is not linearizable", k);
			ok = false;
		}
		*states += s.states;
		free(s.memo.slot);
	}
	return ok;
}

static void
usage(FILE *out)
{
	fprintf(out,
	"usage: stress_linear [options]\n"
	"  -t, --threads N    threads, 1 to 4 (default 4)\n"
	"  -d, --seconds S    run rounds for S seconds (default 10)\n"
	"  -n, --ops N        tracked operations per thread and round (default 2000)\n"
	"  -k, --keys N       tracked keys, at most 256 (default 64)\n"
	"  -F, --fillers N    filler keys per thread (default 110: about 93 %% full)\n"
	"  -c, --capacity N   filter capacity (default 512)\n"
	"  -b, --bits 8|16|13 fingerprint bits (default 16; 13: semi-sorted\n"
	"                     buckets; each layout has its own lookup code)\n"
	"  -s, --seed S       seed (default: from the clock)\n"
	"  -u, --until-fail   stop at the first non-linearizable history\n"
	"  -x, --mix I,U,D,C  weights of insert, insert_unique, delete, contains\n"
	"                     (default 1,1,2,4: contains-heavy, since a lost key\n"
	"                     shows up as a wrong miss)\n"
	"  -h, --help\n");
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "threads", 1, NULL, 't' }, { "seconds", 1, NULL, 'd' },
		{ "ops", 1, NULL, 'n' }, { "keys", 1, NULL, 'k' },
		{ "fillers", 1, NULL, 'F' }, { "capacity", 1, NULL, 'c' },
		{ "seed", 1, NULL, 's' }, { "until-fail", 0, NULL, 'u' },
		{ "mix", 1, NULL, 'x' }, { "bits", 1, NULL, 'b' },
		{ "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	struct opts o = { .threads = 4, .keys = 64, .fillers = 110, .seconds = 10,
	                  .ops = 2000, .capacity = 512, .bits = 16,
	                  .mix = { 1, 1, 2, 4 } };
	struct run r = { .o = &o };
	struct thr th[MAX_THREADS] = { { 0 } };
	unsigned start[MAX_KEYS];
	struct keyhist *h = malloc(sizeof(*h));
	struct admit_cuckoo_stats cs;
	uint64_t rounds = 0, tracked = 0, fill = 0, states = 0;
	double t0;
	int c;

	while ((c = getopt_long(argc, argv, "t:d:n:k:F:c:b:s:ux:h", longopts, NULL)) != -1) {
		switch (c) {
		case 't': o.threads = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'd': o.seconds = strtod(optarg, NULL); break;
		case 'n': o.ops = strtoull(optarg, NULL, 0); break;
		case 'k': o.keys = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'F': o.fillers = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'c': o.capacity = strtoull(optarg, NULL, 0); break;
		case 'b': o.bits = (unsigned)strtoul(optarg, NULL, 0); break;
		case 's': o.seed = strtoull(optarg, NULL, 0); break;
		case 'u': o.until_fail = true; break;
		case 'x':
			if (sscanf(optarg, "%u,%u,%u,%u", &o.mix[0], &o.mix[1],
			           &o.mix[2], &o.mix[3]) != 4) {
				usage(stderr);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (o.threads < 1 || o.threads > MAX_THREADS || o.keys < 1 ||
	    o.keys > MAX_KEYS || o.fillers < 1 || o.ops < 1 || !h || optind != argc ||
	    (o.bits != 8 && o.bits != 16 && o.bits != 13)) {
		usage(stderr);
		return 2;
	}
	r.mix_total = o.mix[0] + o.mix[1] + o.mix[2] + o.mix[3];
	if (!r.mix_total) {
		usage(stderr);
		return 2;
	}
	if (!o.seed)
		o.seed = stress_seed_from_clock();
	printf("stress_linear%s: seed %" PRIu64 ", %u threads, %u keys, %u fillers/thread, "
	       "capacity %" PRIu64 ", %u-bit, %" PRIu64 " ops/thread/round, %.1f s\n",
#ifdef ADMIT_BROKEN_SKIP_VALIDATION
	       " (BROKEN BUILD: lookups skip miss validation)",
#else
	       "",
#endif
	       o.seed, o.threads, o.keys, o.fillers, o.capacity, o.bits, o.ops, o.seconds);
	fflush(stdout);
	if (admit_cuckoo_new(&(struct admit_cuckoo_config){ .capacity = o.capacity,
	        .fingerprint_bits = o.bits, .seed = o.seed,
	        .semi_sorted = o.bits == 13 }, &r.f) != ADMIT_OK)
		return 2;
	r.keys = stress_distinct_keys(r.f, o.keys + (uint64_t)o.fillers * o.threads, o.seed);
	pthread_barrier_init(&r.gate, NULL, o.threads + 1);
	for (unsigned t = 0; t < o.threads; t++) {
		th[t] = (struct thr){ .r = &r, .id = t, .rng = { prng_mix(o.seed + t) } };
		th[t].ev = malloc(o.ops * sizeof(struct event));
		if (!th[t].ev || pthread_create(&th[t].tid, NULL, worker, &th[t]))
			return 2;
	}
	t0 = stress_now();
	while (stress_now() - t0 < o.seconds) {
		for (unsigned k = 0; k < o.keys; k++) {
			unsigned sum;

			start[k] = cuckoo_debug_copies(r.f, &r.keys[k], 8, &sum);
		}
		for (unsigned t = 0; t < o.threads; t++)
			th[t].nev = 0;
		pthread_barrier_wait(&r.gate);
		pthread_barrier_wait(&r.gate);
		rounds++;
		for (unsigned t = 0; t < o.threads; t++)
			tracked += th[t].nev;
		if (!check_round(&r, th, start, h, &states) && o.until_fail)
			break;
	}
	atomic_store(&r.stop, true);
	pthread_barrier_wait(&r.gate);
	for (unsigned t = 0; t < o.threads; t++) {
		pthread_join(th[t].tid, NULL);
		fill += th[t].filler_ops;
		free(th[t].ev);
	}
	admit_cuckoo_stats(r.f, &cs);
	printf("  %" PRIu64 " rounds in %.2f s: %" PRIu64 " tracked ops checked (%" PRIu64
	       " search states), %" PRIu64 " filler ops\n", rounds, stress_now() - t0,
	       tracked, states, fill);
	printf("  filter stats: kicks %" PRIu64 ", path retries %" PRIu64
	       ", read retries %" PRIu64 ", full %" PRIu64 "\n",
	       cs.kicks, cs.path_retries, cs.read_retries, cs.full);
	c = atomic_load(&stress_failures) ? 1 : 0;
	printf("stress_linear: %s (%" PRIu64 " failures, seed %" PRIu64 ")\n",
	       c ? "FAIL" : "PASS", atomic_load(&stress_failures), o.seed);
	pthread_barrier_destroy(&r.gate);
	admit_cuckoo_free(r.f);
	free(r.keys);
	free(h);
	return c;
}
