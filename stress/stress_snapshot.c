/*
 * stress_snapshot - save and load a filter while other threads write to it.
 *
 * Writer threads insert and delete their own keys (kicks included: the
 * table runs near 90 % full) and publish each key's state in a word, as in
 * stress_cuckoo: a generation, a busy bit, a copy count.  The main thread
 * reads every word, saves, reads every word again, and loads the file into
 * a second filter.  A key whose word did not change across the save was
 * neither inserted nor deleted while it ran, so the loaded filter must hold
 * it exactly as often as the word says (all keys have distinct signatures,
 * so a count is exact): present before the save began and not deleted until
 * it ended means present in the snapshot, and a key absent throughout must
 * not come back.  The loaded filter must also pass the table walk with its
 * size equal to its occupied slots.  Meanwhile a reader thread loads the
 * same path over and over: the save's write-and-rename must never let it
 * see a torn file.
 */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>

#include <admit/admit.h>

#include "stress_common.h"

#define ST_BUSY 16u
#define ST_COUNT 15u
#define MAX_COPIES 2u

struct run {
	struct admit_cuckoo *f;
	uint64_t *keys;
	_Atomic uint32_t *state;
	uint64_t keys_per_thread;
	bool counting;
	const char *path;
	_Atomic bool stop, saved_once;
	_Atomic uint64_t loads;
};

struct thr {
	pthread_t tid;
	struct run *r;
	unsigned id;
	struct prng rng;
	uint64_t ops;
};

static void *
writer(void *arg)
{
	struct thr *t = arg;
	struct run *r = t->r;

	while (!atomic_load(&r->stop)) {
		uint64_t k = t->id * r->keys_per_thread +
		             prng_below(&t->rng, r->keys_per_thread);
		uint32_t s = atomic_load(&r->state[k]);
		unsigned c = s & ST_COUNT;
		bool add = c == 0 || (c < MAX_COPIES && prng_next(&t->rng) & 1);
		enum admit_status st;

		atomic_store(&r->state[k], s | ST_BUSY);
		if (add)
			st = r->counting ? admit_cuckoo_increment(r->f, &r->keys[k], 8) :
			                   admit_cuckoo_insert(r->f, &r->keys[k], 8);
		else
			st = admit_cuckoo_delete(r->f, &r->keys[k], 8);
		if (st == ADMIT_OK)
			c = add ? c + 1 : c - 1;
		else if (!(add && st == ADMIT_FULL))
			stress_fail("writer: %s", admit_strerror(st));
		atomic_store(&r->state[k], ((s >> 5) + 1) << 5 | c);
		t->ops++;
	}
	return NULL;
}

/* Loads the snapshot path again and again while it is being replaced. */
static void *
reloader(void *arg)
{
	struct run *r = arg;

	while (!atomic_load(&r->stop)) {
		/* Read first: a file saved once must load from then on. */
		bool saved = atomic_load(&r->saved_once);
		struct admit_cuckoo *g;
		enum admit_status st = admit_cuckoo_load(r->path, &g);

		if (st == ADMIT_OK) {
			if (cuckoo_debug_walk(g) != admit_cuckoo_size(g))
				stress_fail("reloaded snapshot: walk and size disagree");
			admit_cuckoo_free(g);
			atomic_fetch_add(&r->loads, 1);
		} else if (saved) {
			stress_fail("reloading a snapshot being replaced: %s", admit_strerror(st));
		}
	}
	return NULL;
}

static void
usage(FILE *out)
{
	fprintf(out,
	"usage: stress_snapshot [options]\n"
	"  -t, --threads N    writer threads (default 2 x cores)\n"
	"  -d, --seconds S    duration (default 10)\n"
	"  -k, --keys N       keys per writer (default 4096)\n"
	"  -m, --mode M       8, 16, 13 (semi-sorted buckets) or counting\n"
	"                     (default 16)\n"
	"  -s, --seed S       seed (default: from the clock)\n"
	"  -D, --dir DIR      where to write snapshots (default /tmp)\n"
	"  -h, --help\n");
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "threads", 1, NULL, 't' }, { "seconds", 1, NULL, 'd' },
		{ "keys", 1, NULL, 'k' }, { "mode", 1, NULL, 'm' },
		{ "seed", 1, NULL, 's' }, { "dir", 1, NULL, 'D' },
		{ "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	unsigned threads = stress_default_threads(), bits = 16;
	double seconds = 10, t0;
	uint64_t seed = 0, nkeys, saves = 0, checked = 0, ops = 0;
	const char *dir = "/tmp";
	char tmpl[4096], path[4200];
	struct run r = { .keys_per_thread = 4096 };
	struct thr *th;
	pthread_t rl;
	uint32_t *before, *after;
	int c;

	while ((c = getopt_long(argc, argv, "t:d:k:m:s:D:h", longopts, NULL)) != -1) {
		switch (c) {
		case 't': threads = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'd': seconds = strtod(optarg, NULL); break;
		case 'k': r.keys_per_thread = strtoull(optarg, NULL, 0); break;
		case 'm':
			r.counting = !strcmp(optarg, "counting");
			bits = r.counting ? 16 : (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'D': dir = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (threads < 1 || r.keys_per_thread < 1 || (bits != 8 && bits != 16 && bits != 13) ||
	    optind != argc) {
		usage(stderr);
		return 2;
	}
	if (!seed)
		seed = stress_seed_from_clock();
	nkeys = r.keys_per_thread * threads;
	snprintf(tmpl, sizeof(tmpl), "%s/admit-stress-XXXXXX", dir);
	if (!mkdtemp(tmpl)) {
		perror(tmpl);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/f.snap", tmpl);
	r.path = path;
	printf("stress_snapshot: seed %" PRIu64 ", %u writers, mode %s, %" PRIu64
	       " keys/writer, %.1f s, %s\n", seed, threads,
	       r.counting ? "counting" : bits == 8 ? "8" :
	       bits == 13 ? "13 (semi-sorted)" : "16", r.keys_per_thread,
	       seconds, path);
	fflush(stdout);
	if (admit_cuckoo_new(&(struct admit_cuckoo_config){
	        .capacity = nkeys * 5 / 4 + 64, .fingerprint_bits = bits,
	        .counting = r.counting, .seed = seed,
	        .semi_sorted = bits == 13 }, &r.f) != ADMIT_OK)
		return 2;
	r.keys = stress_distinct_keys(r.f, nkeys, seed);
	r.state = calloc(nkeys, sizeof(*r.state));
	before = malloc(nkeys * sizeof(*before));
	after = malloc(nkeys * sizeof(*after));
	th = calloc(threads, sizeof(*th));
	if (!r.state || !before || !after || !th)
		return 2;
	for (unsigned i = 0; i < threads; i++) {
		th[i] = (struct thr){ .r = &r, .id = i, .rng = { prng_mix(seed + i) } };
		if (pthread_create(&th[i].tid, NULL, writer, &th[i]))
			return 2;
	}
	if (pthread_create(&rl, NULL, reloader, &r))
		return 2;

	t0 = stress_now();
	while (stress_now() - t0 < seconds) {
		struct admit_cuckoo *g;
		enum admit_status st;

		for (uint64_t k = 0; k < nkeys; k++)
			before[k] = atomic_load(&r.state[k]);
		st = admit_cuckoo_save(r.f, path);
		for (uint64_t k = 0; k < nkeys; k++)
			after[k] = atomic_load(&r.state[k]);
		if (st != ADMIT_OK) {
			stress_fail("save: %s", admit_strerror(st));
			break;
		}
		atomic_store(&r.saved_once, true);
		saves++;
		/* The reloader may replace nothing: only this thread saves. */
		st = admit_cuckoo_load(path, &g);
		if (st != ADMIT_OK) {
			stress_fail("load: %s", admit_strerror(st));
			break;
		}
		if (cuckoo_debug_walk(g) != admit_cuckoo_size(g))
			stress_fail("loaded snapshot: walk and size disagree");
		for (uint64_t k = 0; k < nkeys; k++) {
			unsigned sum, n, want = before[k] & ST_COUNT;

			if (before[k] != after[k] || (before[k] & ST_BUSY))
				continue; /* written while the save ran */
			checked++;
			n = cuckoo_debug_copies(g, &r.keys[k], 8, &sum);
			if (r.counting ? sum != want : n != want)
				stress_fail("snapshot %" PRIu64 ": key %" PRIu64 " held %u times, "
				            "%u before and after the save", saves, k,
				            r.counting ? sum : n, want);
			if ((want > 0) != admit_cuckoo_contains(g, &r.keys[k], 8))
				stress_fail("snapshot %" PRIu64 ": contains(key %" PRIu64 ") wrong",
				            saves, k);
		}
		admit_cuckoo_free(g);
	}
	atomic_store(&r.stop, true);
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(th[i].tid, NULL);
		ops += th[i].ops;
	}
	pthread_join(rl, NULL);
	printf("  %" PRIu64 " saves, each loaded and checked: %" PRIu64 " key checks; "
	       "%" PRIu64 " concurrent reloads; %" PRIu64 " writer ops\n",
	       saves, checked, atomic_load(&r.loads), ops);
	c = atomic_load(&stress_failures) || saves == 0 ? 1 : 0;
	printf("stress_snapshot: %s (%" PRIu64 " failures, seed %" PRIu64 ")\n",
	       c ? "FAIL" : "PASS", atomic_load(&stress_failures), seed);
	unlink(path);
	rmdir(tmpl);
	admit_cuckoo_free(r.f);
	free(r.keys);
	free((void *)r.state);
	free(before);
	free(after);
	free(th);
	return c;
}
