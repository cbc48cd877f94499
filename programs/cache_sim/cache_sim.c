/*
 * cache_sim - replay a cache trace through several admission policies side
 * by side and print one table: policy x cache size -> hit ratio (percent).
 *
 *   cache_sim [--policies lru,tinylfu,wtinylfu,adaptive,opt,arc,lirs,...]
 *             [--sizes N,N,...] [--format auto|text|arc|lirs|i32be|i64be]
 *             [--csv] [--plot FILE.png] [--threads N] [--shards N]
 *             [--window PERCENT] [--seed N] [--seeds N] [--sample-factor K]
 *             [--no-random-admit] [--write-trace FILE]
 *             [--workload NAME | TRACE]
 *
 * lru, tinylfu, wtinylfu and adaptive are real admit_lru caches (one shard
 * by default, so lru is exact global LRU); a request is a get, and a miss
 * is followed by a set of the key, as a read-through cache does.  opt is
 * Belady's optimum.  arc, lirs, s3fifo, sieve, 2q and clock are the
 * policies users compare with, simulated in peers.c as libCacheSim does.
 * With no TRACE, a built-in workload runs (workload.h): by default 1 M
 * requests, Zipf(0.9) over 1 M keys, interrupted every 100,000 requests by
 * a scan of 20,000 keys that are never seen again; --workload picks
 * another pattern (zigzag, scan-repeat, scan-hot, zipf).
 *
 * The admission policies draw on their seed (hashing, the random admission
 * of a warm candidate), and adaptive's choice of configuration can turn
 * small differences into another path: --seeds N replays each with N seeds
 * and reports the median.  --sample-factor changes TinyLFU's aging period
 * and --no-random-admit turns TinyLFU's random admission off, to show what
 * each costs.  --write-trace writes the requests (of the TRACE or the
 * workload) to FILE as a LIRS trace and replays nothing, so another
 * simulator (tools/wtinylfu_model.py) can read the very same keys.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <admit/admit.h>

#include "peers.h"
#include "trace.h"
#include "workload.h"

#define MAX_SIZES 64

/* Where a policy's figures come from. */
enum kind { KIND_ADMIT, KIND_OPT, KIND_PEER };

static const struct {
	const char *name;
	enum kind kind;
	enum admit_lru_policy policy; /* KIND_ADMIT */
	enum peer_policy peer;        /* KIND_PEER */
} policy_names[] = {
	{ "lru", KIND_ADMIT, ADMIT_LRU_PLAIN, 0 },
	{ "tinylfu", KIND_ADMIT, ADMIT_LRU_TINYLFU, 0 },
	{ "wtinylfu", KIND_ADMIT, ADMIT_LRU_WTINYLFU, 0 },
	{ "adaptive", KIND_ADMIT, ADMIT_LRU_ADAPTIVE, 0 },
	{ "opt", KIND_OPT, 0, 0 },
	{ "arc", KIND_PEER, 0, PEER_ARC },
	{ "lirs", KIND_PEER, 0, PEER_LIRS },
	{ "s3fifo", KIND_PEER, 0, PEER_S3FIFO },
	{ "sieve", KIND_PEER, 0, PEER_SIEVE },
	{ "2q", KIND_PEER, 0, PEER_2Q },
	{ "clock", KIND_PEER, 0, PEER_CLOCK },
};
#define NPOLICIES (sizeof(policy_names) / sizeof(policy_names[0]))

struct options {
	bool use[NPOLICIES];
	int order[NPOLICIES], npol;
	uint64_t sizes[MAX_SIZES];
	int nsizes;
	enum trace_format format;
	bool csv;
	const char *plot, *trace, *write_trace;
	enum workload workload;
	bool workload_set;
	unsigned threads, shards, window, seeds;
	uint64_t seed, sample_factor;
	bool no_random;
};

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: cache_sim [--policies lru,tinylfu,wtinylfu,adaptive,opt,arc,lirs,s3fifo,\n"
	        "                             sieve,2q,clock] [--sizes N,N,...]\n"
	        "                 [--format auto|text|arc|lirs|i32be|i64be] [--csv] [--plot FILE.png]\n"
	        "                 [--threads N] [--shards N] [--window PERCENT] [--seed N]\n"
	        "                 [--seeds N] [--sample-factor K] [--no-random-admit]\n"
	        "                 [--write-trace FILE] [--workload NAME | TRACE]\n"
	        "Replays TRACE (gzip and xz read directly) through each policy at each cache\n"
	        "size and prints the hit ratios (default policies: lru,tinylfu,wtinylfu,\n"
	        "adaptive,opt).  arc, lirs, s3fifo, sieve, 2q and clock are simulated as\n"
	        "libCacheSim does, to compare with.\n"
	        "With no TRACE, --workload NAME replays a built-in pattern:\n"
	        "  zipf-scans   (default) 1 M requests, Zipf 0.9 over 1 M keys, a one-off\n"
	        "               scan of 20,000 keys every 100,000 requests\n"
	        "  zipf         the same without the scans\n"
	        "  zigzag       1,000 keys forwards then backwards, 25 passes; sizes\n"
	        "               250,500, where LRU is optimal (24 %%, 48 %%)\n"
	        "  scan-repeat  the same 1,000 keys forwards, 25 times (a loop)\n"
	        "  scan-hot     500,000 requests, Zipf 0.9 over 10,000 hot keys, a one-off\n"
	        "               scan of 5,000 keys every 25,000 requests\n"
	        "  zigzag-near  1,000 keys forwards then backwards, 30 passes, perturbed by\n"
	        "               the seed; sizes 800,900,950 (a loop a little larger)\n"
	        "  recency      200,000 requests, a new key one in five, else one of\n"
	        "               exponential age (mean 2,000 keys)\n"
	        "  short-large  2 M requests, Zipf 0.8 over 2 M keys, moving hot set, 5 %%\n"
	        "               one-off; sizes 50000,131072\n"
	        "  web          1 M requests, Zipf 0.9 over 500,000 keys, moving hot set,\n"
	        "               30 %% one-off\n"
	        "--seed also draws the workload's requests.\n"
	        "--window sets wtinylfu's fixed window (default 1 %%); --shards and --threads\n"
	        "show what sharding and concurrency cost in hit ratio.  --seeds N reports the\n"
	        "median of N replays, with seeds S, S+1, ... (S = --seed, default 42).\n"
	        "--sample-factor K ages TinyLFU every K x size\n"
	        "records (default 10); --no-random-admit turns off TinyLFU's random\n"
	        "admission of warm candidates.\n"
	        "--write-trace FILE writes the requests, one signed decimal key a line (LIRS\n"
	        "format, as cache_sim reads it back), to FILE and replays nothing.\n");
}

static bool
parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static bool
parse_policies(char *list, struct options *o)
{
	o->npol = 0;
	memset(o->use, 0, sizeof(o->use));
	for (char *save, *tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < NPOLICIES && strcmp(tok, policy_names[i].name); i++)
			;
		if (i == NPOLICIES) {
			fprintf(stderr, "cache_sim: unknown policy '%s'\n", tok);
			return false;
		}
		if (!o->use[i])
			o->order[o->npol++] = (int)i;
		o->use[i] = true;
	}
	return o->npol > 0;
}

static bool
parse_sizes(char *list, struct options *o)
{
	o->nsizes = 0;
	for (char *save, *tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (!parse_u64(tok, &v) || v == 0 || v > ADMIT_LRU_MAX_CAPACITY ||
		    o->nsizes == MAX_SIZES) {
			fprintf(stderr, "cache_sim: bad size '%s'\n", tok);
			return false;
		}
		o->sizes[o->nsizes++] = v;
	}
	return o->nsizes > 0;
}

/* Returns 0 to run, 1 on --help, 2 on a usage error. */
static int
parse_args(int argc, char **argv, struct options *o)
{
	char policies[] = "lru,tinylfu,wtinylfu,adaptive,opt";

	*o = (struct options){ .format = TRACE_AUTO, .threads = 1, .shards = 1,
	                       .seed = 42, .seeds = 1 };
	parse_policies(policies, o);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		char *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t n;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 1;
		} else if (!strcmp(a, "--csv")) {
			o->csv = true;
			continue;
		} else if (!strcmp(a, "--no-random-admit")) {
			o->no_random = true;
			continue;
		} else if (a[0] != '-' || !a[1]) {
			if (o->trace) {
				usage(stderr);
				return 2;
			}
			o->trace = a;
			continue;
		}
		if (!v) {
			fprintf(stderr, "cache_sim: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--policies")) {
			if (!parse_policies(v, o))
				return 2;
		} else if (!strcmp(a, "--sizes")) {
			if (!parse_sizes(v, o))
				return 2;
		} else if (!strcmp(a, "--format")) {
			o->format = trace_format_parse(v);
			if ((int)o->format < 0) {
				fprintf(stderr, "cache_sim: unknown format '%s'\n", v);
				return 2;
			}
		} else if (!strcmp(a, "--plot")) {
			o->plot = v;
		} else if (!strcmp(a, "--write-trace")) {
			o->write_trace = v;
		} else if (!strcmp(a, "--workload")) {
			o->workload = workload_parse(v);
			o->workload_set = true;
			if ((int)o->workload < 0) {
				fprintf(stderr, "cache_sim: unknown workload '%s'\n", v);
				return 2;
			}
		} else if (!strcmp(a, "--threads") && parse_u64(v, &n) && n >= 1 && n <= 256) {
			o->threads = (unsigned)n;
		} else if (!strcmp(a, "--shards") && parse_u64(v, &n) && n >= 1 &&
		           n <= ADMIT_LRU_MAX_SHARDS && (n & (n - 1)) == 0) {
			o->shards = (unsigned)n;
		} else if (!strcmp(a, "--window") && parse_u64(v, &n) && n >= 1 && n <= 99) {
			o->window = (unsigned)n;
		} else if (!strcmp(a, "--seed") && parse_u64(v, &n) && n > 0) {
			o->seed = n;
		} else if (!strcmp(a, "--seeds") && parse_u64(v, &n) && n >= 1 && n <= 99) {
			o->seeds = (unsigned)n;
		} else if (!strcmp(a, "--sample-factor") && parse_u64(v, &n) && n >= 1 &&
		           n <= 1000000) {
			o->sample_factor = n;
		} else {
			fprintf(stderr, "cache_sim: bad option or value: %s %s\n", a, v);
			usage(stderr);
			return 2;
		}
	}
	if (o->trace && o->workload_set) {
		fprintf(stderr, "cache_sim: --workload and a TRACE exclude each other\n");
		return 2;
	}
	return 0;
}

/* ---- replay -------------------------------------------------------------- */

struct replay {
	struct admit_lru *cache;
	const uint64_t *keys;
	size_t n, first, stride;
	uint64_t hits;
	int err;
	bool progress;
	const char *label;
};

static void *
replay_thread(void *arg)
{
	struct replay *r = arg;
	uint64_t hits = 0;
	size_t vlen;

	for (size_t i = r->first; i < r->n; i += r->stride) {
		enum admit_status st = admit_lru_get(r->cache, &r->keys[i],
		                                     sizeof(r->keys[i]), NULL, 0, &vlen);

		if (st == ADMIT_OK) {
			hits++;
		} else if (st == ADMIT_NOTFOUND) {
			st = admit_lru_set(r->cache, &r->keys[i], sizeof(r->keys[i]),
			                   NULL, 0);
			if (st != ADMIT_OK && st != ADMIT_REJECTED) {
				r->err = st;
				break;
			}
		} else {
			r->err = st;
			break;
		}
		if (r->progress && (i & ((1u << 20) - 1)) == 0)
			fprintf(stderr, "\r%s: %3.0f%%", r->label, 100.0 * (double)i / (double)r->n);
	}
	r->hits = hits;
	return NULL;
}

static int
replay(const struct options *o, enum admit_lru_policy policy, uint64_t size,
       uint64_t seed, const uint64_t *keys, size_t n, bool progress,
       const char *label, uint64_t *hits)
{
	struct admit_tinylfu_config tc = {
		.sample_size = o->sample_factor * size,
		.chance_shift = o->no_random ? 64 : 0,
	};
	struct admit_lru_config cfg = {
		.capacity = size, .policy = policy, .shards = o->shards,
		.window_percent = o->window, .seed = seed, .tinylfu = &tc,
	};
	struct replay r[256];
	pthread_t tid[256];
	struct admit_lru *cache;
	enum admit_status st;
	int err = 0;

	if (cfg.shards > size)
		cfg.shards = 1;
	st = admit_lru_new(&cfg, &cache);
	if (st != ADMIT_OK) {
		fprintf(stderr, "cache_sim: admit_lru_new(%" PRIu64 "): %s\n", size,
		        admit_strerror(st));
		return 1;
	}
	for (unsigned t = 0; t < o->threads; t++) {
		r[t] = (struct replay){ .cache = cache, .keys = keys, .n = n,
		                        .first = t, .stride = o->threads,
		                        .progress = progress && t == 0, .label = label };
		if (o->threads > 1 && pthread_create(&tid[t], NULL, replay_thread, &r[t])) {
			fprintf(stderr, "cache_sim: cannot start a thread\n");
			for (unsigned u = 0; u < t; u++)
				pthread_join(tid[u], NULL);
			admit_lru_free(cache);
			return 1;
		}
	}
	if (o->threads == 1)
		replay_thread(&r[0]);
	*hits = 0;
	for (unsigned t = 0; t < o->threads; t++) {
		if (o->threads > 1)
			pthread_join(tid[t], NULL);
		*hits += r[t].hits;
		if (r[t].err)
			err = r[t].err;
	}
	admit_lru_free(cache);
	if (err) {
		fprintf(stderr, "cache_sim: replay: %s\n", admit_strerror(err));
		return 1;
	}
	return 0;
}

/* The median of o->seeds replays (the upper one of the two middle for an
 * even count). */
static int
replay_seeds(const struct options *o, enum admit_lru_policy policy,
             uint64_t size, const uint64_t *keys, size_t n, bool progress,
             const char *label, uint64_t *hits)
{
	uint64_t h[99];

	for (unsigned k = 0; k < o->seeds; k++)
		if (replay(o, policy, size, o->seed + k, keys, n, progress, label,
		           &h[k]))
			return 1;
	qsort(h, o->seeds, sizeof(h[0]), trace_cmp_u64);
	*hits = h[o->seeds / 2];
	return 0;
}

/* ---- output --------------------------------------------------------------- */

static double
ratio(uint64_t hits, size_t n)
{
	return n ? 100.0 * (double)hits / (double)n : 0.0;
}

/* A gnuplot single-quoted string: a quote inside is doubled. */
static void
put_quoted(FILE *g, const char *s)
{
	fputc('\'', g);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', g);
		fputc(*s, g);
	}
	fputc('\'', g);
}

static int
plot(const struct options *o, const char *name, size_t n,
     uint64_t hits[NPOLICIES][MAX_SIZES])
{
	FILE *g = popen("gnuplot", "w");
	int rc;

	if (!g) {
		fprintf(stderr, "cache_sim: --plot needs gnuplot: %s\n", strerror(errno));
		return 1;
	}
	fprintf(g, "set terminal pngcairo size 900,540\nset output ");
	put_quoted(g, o->plot);
	fprintf(g, "\nset title ");
	put_quoted(g, name);
	fprintf(g, " noenhanced\nset xlabel 'cache size (entries)'\n"
	        "set ylabel 'hit ratio (%%)'\nset key left top\nset grid\n%splot ",
	        o->nsizes > 2 && o->sizes[o->nsizes - 1] >= 10 * o->sizes[0]
	        ? "set logscale x\n" : "");
	for (int p = 0; p < o->npol; p++)
		fprintf(g, "%s'-' with linespoints title '%s'", p ? ", " : "",
		        policy_names[o->order[p]].name);
	fprintf(g, "\n");
	for (int p = 0; p < o->npol; p++) {
		for (int s = 0; s < o->nsizes; s++)
			fprintf(g, "%" PRIu64 " %.4f\n", o->sizes[s],
			        ratio(hits[o->order[p]][s], n));
		fprintf(g, "e\n");
	}
	rc = pclose(g);
	if (rc != 0) {
		fprintf(stderr, "cache_sim: gnuplot failed (status %d); is it installed?\n", rc);
		return 1;
	}
	fprintf(stderr, "cache_sim: wrote %s\n", o->plot);
	return 0;
}

/* The keys as signed decimals: the LIRS reader takes 64-bit signed
 * integers, so every key, a text trace's hash included, reads back as
 * itself. */
static int
write_trace(const char *path, const uint64_t *keys, size_t n)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "cache_sim: %s: %s\n", path, strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%" PRId64 "\n", (int64_t)keys[i]);
	if (ferror(f) | fclose(f)) {
		fprintf(stderr, "cache_sim: %s: write failed\n", path);
		return 1;
	}
	return 0;
}

/* Sizes when none were given: a workload's own, or 0.5 % to 20 % of a
 * trace's distinct keys. */
static void
default_sizes(struct options *o, uint32_t distinct)
{
	static const unsigned per_mille[] = { 5, 10, 20, 50, 100, 200 };

	if (!o->trace) {
		o->nsizes = workload_sizes(o->workload, o->sizes, MAX_SIZES);
		return;
	}
	for (size_t i = 0; i < sizeof(per_mille) / sizeof(per_mille[0]); i++) {
		uint64_t s = (uint64_t)distinct * per_mille[i] / 1000;

		if (s > 0 && (o->nsizes == 0 || s > o->sizes[o->nsizes - 1]))
			o->sizes[o->nsizes++] = s;
	}
	if (o->nsizes == 0)
		o->sizes[o->nsizes++] = 1;
}

/* Every policy at every size: hits[policy][size].  Returns 0, or 1 having
 * said why. */
static int
replay_all(const struct options *o, const uint64_t *keys, size_t n,
           const uint32_t *ids, uint32_t distinct,
           uint64_t hits[NPOLICIES][MAX_SIZES])
{
	bool progress = isatty(2) && (double)n * o->npol * o->nsizes > 2e7;
	int rc = 0;

	for (int s = 0; s < o->nsizes && rc == 0; s++) {
		for (int p = 0; p < o->npol && rc == 0; p++) {
			int pi = o->order[p];
			char label[96];

			snprintf(label, sizeof(label), "%s size %" PRIu64,
			         policy_names[pi].name, o->sizes[s]);
			if (progress)
				fprintf(stderr, "\r%s:    ", label);
			if (policy_names[pi].kind == KIND_ADMIT) {
				rc = replay_seeds(o, policy_names[pi].policy,
				                  o->sizes[s], keys, n, progress, label,
				                  &hits[pi][s]);
				continue;
			}
			if (policy_names[pi].kind == KIND_OPT)
				hits[pi][s] = trace_opt_hits(keys, n, o->sizes[s]);
			else
				hits[pi][s] = peer_hits(policy_names[pi].peer, ids, n,
				                        distinct, o->sizes[s]);
			if (hits[pi][s] == UINT64_MAX) {
				fprintf(stderr, "cache_sim: %s: out of memory\n",
				        policy_names[pi].name);
				rc = 1;
			}
		}
	}
	if (progress)
		fprintf(stderr, "\r%60s\r", "");
	return rc;
}

/* The hit ratios as CSV or as a table. */
static void
print_results(const struct options *o, const char *name, size_t n,
              uint32_t distinct, uint64_t hits[NPOLICIES][MAX_SIZES])
{
	if (o->csv) {
		printf("trace,policy,size,requests,hits,hit_ratio\n");
		for (int p = 0; p < o->npol; p++)
			for (int s = 0; s < o->nsizes; s++)
				printf("%s,%s,%" PRIu64 ",%zu,%" PRIu64 ",%.2f\n", name,
				       policy_names[o->order[p]].name, o->sizes[s], n,
				       hits[o->order[p]][s],
				       ratio(hits[o->order[p]][s], n));
		return;
	}
	printf("%s: %zu requests, %" PRIu32 " distinct keys; hit ratio %%"
	       " (threads %u, shards %u", name, n, distinct, o->threads,
	       o->shards);
	if (o->seeds > 1)
		printf(", median of %u seeds", o->seeds);
	printf(")\n");
	printf("%-10s", "size");
	for (int s = 0; s < o->nsizes; s++)
		printf(" %9" PRIu64, o->sizes[s]);
	printf("\n");
	for (int p = 0; p < o->npol; p++) {
		printf("%-10s", policy_names[o->order[p]].name);
		for (int s = 0; s < o->nsizes; s++)
			printf(" %9.2f", ratio(hits[o->order[p]][s], n));
		printf("\n");
	}
}

int
main(int argc, char **argv)
{
	static uint64_t hits[NPOLICIES][MAX_SIZES];
	struct options o;
	uint64_t *keys;
	uint32_t *ids = NULL, distinct = 0;
	size_t n = 0;
	const char *name;
	char err[256];
	bool need_ids;
	int rc = parse_args(argc, argv, &o);

	if (rc)
		return rc == 1 ? 0 : 2;
	if (o.trace) {
		if (trace_load(o.trace, o.format, &keys, &n, err, sizeof(err)) != 0) {
			fprintf(stderr, "cache_sim: %s: %s\n", o.trace, err);
			return 1;
		}
		name = strrchr(o.trace, '/') ? strrchr(o.trace, '/') + 1 : o.trace;
	} else {
		keys = workload_keys(o.workload, o.seed, &n);
		if (!keys) {
			fprintf(stderr, "cache_sim: out of memory\n");
			return 1;
		}
		name = workload_label(o.workload);
	}
	if (o.write_trace) {
		rc = write_trace(o.write_trace, keys, n);
		free(keys);
		return rc;
	}
	/* The peers index their state by these numbers; the default sizes
	 * and the table's heading need the count of distinct keys.  A CSV
	 * of admit_lru caches and opt at given sizes needs neither, and
	 * skips the sort. */
	need_ids = !o.csv || (o.nsizes == 0 && o.trace);
	for (int p = 0; p < o.npol; p++)
		need_ids |= policy_names[o.order[p]].kind == KIND_PEER;
	if (need_ids && peer_dense_ids(keys, n, &ids, &distinct) != 0) {
		fprintf(stderr, "cache_sim: out of memory (or 2^32 requests or more)\n");
		free(keys);
		return 1;
	}
	if (o.nsizes == 0)
		default_sizes(&o, distinct);
	rc = replay_all(&o, keys, n, ids, distinct, hits);
	if (rc == 0) {
		print_results(&o, name, n, distinct, hits);
		if (o.plot)
			rc = plot(&o, name, n, hits);
	}
	free(ids);
	free(keys);
	return rc;
}
