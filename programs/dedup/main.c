/*
 * admit-dedup - write each line whose key was not seen before, in input
 * order, in bounded memory and on several threads.  See admit-dedup(1);
 * the options are opts.c, the reader io.c, the seen-set seen.c and its
 * file state.c.
 *
 * How -j N keeps "the first occurrence wins, in input order"
 * -----------------------------------------------------------
 * Input is cut into batches of whole lines (at most `batch` lines, or one
 * buffer; the cut depends only on the bytes read, never on timing).  Each
 * batch goes through phases separated by barriers:
 *
 *  1. HASH, split by line ranges: every worker extracts the keys of its
 *     lines and hashes them (the costly part for long lines).
 *  2. FILTER, split by shard: the top bits of a key's hash choose one of up
 *     to 64 shards, each its own chain of cuckoo filters (admit_chain), and
 *     shard s belongs to worker s mod N.  A worker walks the whole batch in
 *     input order and calls admit_chain_add_unique_at() for the lines of its
 *     shards only.
 *     Every occurrence of a key has the same hash, hence the same shard and
 *     the same worker, which sees them in input order: the first occurrence
 *     is the one that inserts, the later ones find it.  Workers run in
 *     parallel, but no two ever touch one filter.
 *
 *     Why shards and not one shared filter: with a shared filter, two
 *     *different* keys whose fingerprints collide race, and which one is
 *     (falsely) dropped would depend on thread timing, so -j 1 and -j 8
 *     would differ.  With shards, every filter sees exactly the operations
 *     a single thread would make, in the same order, and the shard count is
 *     a function of --capacity, not of -j: the output is identical for any
 *     -j, byte for byte.
 *  3. EMIT, on the main thread: walk the batch in order, write the admitted
 *     lines, and settle the horizon (below).
 *  4. EXPIRE (only with --horizon), split by shard: delete the keys that left
 *     the horizon from the filter holding them, re-insert keys that came back.
 *
 * The horizon: a key admitted as the r-th distinct key stays remembered while
 * fewer than `horizon` keys were admitted after it.  Deletions are applied at
 * the end of a batch, so during FILTER a filter may still hold keys that
 * expire part-way through the batch.  Those can only be the oldest `batch`
 * keys of the ring (a batch admits at most `batch` keys, and batch <= horizon
 * so a key admitted in this batch cannot also expire in it).  Before FILTER
 * they are put in a small exact map ("zone"); a line that FILTER found
 * present and whose hash is in the zone is settled in EMIT, which knows the
 * exact admission count at that line: still in the horizon -> dropped;
 * expired -> written, admitted again, and re-inserted in EXPIRE (after the
 * old copy is deleted).  This matches an exact sliding-window dedup, up to
 * false positives.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cli.h"
#include "dedup.h"

#define BATCH_LINES 65536u
#define BUF_INIT ((size_t)4 << 20)
#define HORIZON_CAPACITY ((uint64_t)1 << 24) /* most default capacity */
#define SERIAL_LINES 1024u /* a batch this small runs on one thread */

enum res { RES_NEW, RES_SEEN, RES_ZONE, RES_ERR };

struct zone {
	uint64_t *key;      /* open addressing on h */
	uint32_t *slot;     /* slot + 1; 0 = empty */
	uint64_t *readmit;  /* per slot: index of re-admission, or UINT64_MAX */
	uint64_t mask, n, base;
};

enum phase { PH_HASH, PH_FILTER, PH_EXPIRE, PH_EXIT };

struct ctx {
	struct opts o;
	struct dd_seen *seen;
	unsigned workers;
	pthread_barrier_t go, done;
	enum phase phase;
	enum admit_status err[MAX_JOBS];

	/* the batch */
	char *buf;
	struct line *lines;
	size_t nlines;
	struct zone zone;
	uint64_t pop_from, pop_to;  /* ring indices leaving the horizon */
	uint64_t *readmit;          /* ring indices of keys admitted again */
	size_t nreadmit;
};

/* ---- keys ------------------------------------------------------------------ */

static void
key_of(const struct opts *o, const char *p, size_t len, const char **k,
       size_t *klen)
{
	const char *end;
	unsigned long f;

	if (o->strip_cr && len && p[len - 1] == '\r')
		len--;
	if (o->field == 0) {
		*k = p;
		*klen = len;
		return;
	}
	end = p + len;
	if (o->delim >= 0) {
		/* cut(1): exactly one delimiter between fields */
		const char *d;

		for (f = 1; f < o->field; f++) {
			d = memchr(p, o->delim, (size_t)(end - p));
			if (!d) {
				*k = end;
				*klen = 0;
				return;
			}
			p = d + 1;
		}
		d = memchr(p, o->delim, (size_t)(end - p));
		*k = p;
		*klen = (size_t)((d ? d : end) - p);
		return;
	}
	/* awk: fields are runs of non-blanks */
	for (f = 1;; f++) {
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p == end) {
			*k = end;
			*klen = 0;
			return;
		}
		*k = p;
		while (p < end && *p != ' ' && *p != '\t')
			p++;
		if (f == o->field) {
			*klen = (size_t)(p - *k);
			return;
		}
	}
}

/* ---- the phases ------------------------------------------------------------
 * Shared batch fields are written by the main thread before the "go" barrier
 * and read by workers after it; workers write disjoint lines / shards /
 * err[] slots that the main thread reads after the "done" barrier.  The
 * barriers order all of it (POSIX: pthread_barrier_wait synchronizes
 * memory), so no field needs to be atomic. */

static struct ctx C;

static bool
zone_find(const struct zone *z, uint64_t h, uint32_t *slot)
{
	for (uint64_t i = h & z->mask;; i = (i + 1) & z->mask) {
		if (z->slot[i] == 0)
			return false;
		if (z->key[i] == h) {
			*slot = z->slot[i] - 1;
			return true;
		}
	}
}

static void
phase_hash(unsigned w)
{
	size_t lo = C.nlines * w / C.workers, hi = C.nlines * (w + 1) / C.workers;

	for (size_t i = lo; i < hi; i++) {
		struct line *l = &C.lines[i];
		const char *k;
		size_t klen;

		key_of(&C.o, C.buf + l->off, l->len, &k, &klen);
		l->h = XXH3_64bits_withSeed(k, klen, C.seen->seed);
		l->shard = (uint8_t)dd_shard_of(C.seen, l->h);
	}
}

static void
phase_filter(unsigned w)
{
	uint64_t failed = 0; /* bit per shard */

	for (size_t i = 0; i < C.nlines; i++) {
		struct line *l = &C.lines[i];
		enum admit_status st;

		if (l->shard % C.workers != w)
			continue;
		if (failed >> l->shard & 1) {
			l->res = RES_ERR;
			continue;
		}
		st = dd_seen_admit(C.seen, l->shard, l->h, &l->gen);
		if (st == ADMIT_OK) {
			l->res = RES_NEW;
		} else if (st == ADMIT_EXISTS) {
			l->res = C.zone.n && zone_find(&C.zone, l->h, &l->zone) ?
			         RES_ZONE : RES_SEEN;
		} else {
			l->res = RES_ERR;
			failed |= (uint64_t)1 << l->shard;
			C.err[w] = st;
		}
	}
}

static void
phase_expire(unsigned w)
{
	struct dd_seen *s = C.seen;
	enum admit_status st;

	for (uint64_t idx = C.pop_from; idx < C.pop_to; idx++) {
		uint64_t pos = idx % s->ring_size;
		unsigned sh = dd_shard_of(s, s->ring_h[pos]);

		if (sh % C.workers != w)
			continue;
		st = dd_seen_delete(s, sh, s->ring_h[pos], s->ring_g[pos]);
		if (st != ADMIT_OK)
			C.err[w] = st;
	}
	for (size_t i = 0; i < C.nreadmit; i++) {
		uint64_t pos = C.readmit[i] % s->ring_size;
		unsigned sh = dd_shard_of(s, s->ring_h[pos]);

		if (sh % C.workers != w)
			continue;
		st = dd_seen_insert(s, sh, s->ring_h[pos], &s->ring_g[pos]);
		if (st != ADMIT_OK)
			C.err[w] = st;
	}
}

static void
run_phase(unsigned w)
{
	switch (C.phase) {
	case PH_HASH: phase_hash(w); break;
	case PH_FILTER: phase_filter(w); break;
	case PH_EXPIRE: phase_expire(w); break;
	case PH_EXIT: break;
	}
}

static void *
worker_main(void *arg)
{
	unsigned w = (unsigned)(uintptr_t)arg;

	for (;;) {
		pthread_barrier_wait(&C.go);
		if (C.phase == PH_EXIT)
			return NULL;
		run_phase(w);
		pthread_barrier_wait(&C.done);
	}
}

/* Run one phase on all workers, the main thread being worker 0.  Returns the
 * first error a worker met. */
static enum admit_status
run(enum phase ph)
{
	unsigned workers = C.workers;

	C.phase = ph;
	/* A small batch (a small --horizon makes every batch small) costs less
	 * on this thread than two barrier crossings (-j 2, --horizon 1: 5.5 s
	 * for 300,000 lines, against 0.3 s at -j 1).  The output does not
	 * change: the phases give every filter the same operations in the same
	 * order for any number of workers. */
	if (C.nlines < SERIAL_LINES)
		C.workers = 1;
	if (C.workers > 1)
		pthread_barrier_wait(&C.go);
	run_phase(0);
	if (C.workers > 1)
		pthread_barrier_wait(&C.done);
	C.workers = workers;
	for (unsigned w = 0; w < C.workers; w++)
		if (C.err[w] != ADMIT_OK)
			return C.err[w];
	return ADMIT_OK;
}

/* The ring entries that may leave the horizon during this batch. */
static void
zone_build(size_t nlines)
{
	struct dd_seen *s = C.seen;
	struct zone *z = &C.zone;
	uint64_t n = 0;

	if (z->n)
		memset(z->slot, 0, (z->mask + 1) * sizeof(*z->slot));
	if (s->ring_len + nlines > s->horizon)
		n = s->ring_len + nlines - s->horizon;
	if (n > s->ring_len)
		n = s->ring_len;
	z->n = n;
	z->base = s->admitted - s->ring_len;
	for (uint64_t k = 0; k < n; k++) {
		uint64_t h = s->ring_h[(z->base + k) % s->ring_size], i;

		for (i = h & z->mask; z->slot[i]; i = (i + 1) & z->mask)
			;
		z->key[i] = h;
		z->slot[i] = (uint32_t)k + 1;
		z->readmit[k] = UINT64_MAX;
	}
}

/* ---- EMIT: decisions in input order ---------------------------------------- */

struct counts {
	uint64_t in, out, bytes;
};

static enum admit_status
emit(struct counts *cnt)
{
	struct dd_seen *s = C.seen;
	uint64_t t = s->admitted, t0 = t;
	enum admit_status st = ADMIT_OK;

	C.nreadmit = 0;
	for (size_t i = 0; i < C.nlines; i++) {
		struct line *l = &C.lines[i];

		if (l->res == RES_ERR) {
			st = ADMIT_FULL;
			for (unsigned w = 0; w < C.workers; w++)
				if (C.err[w] != ADMIT_OK)
					st = C.err[w];
			break;
		}
		cnt->in++;
		if (l->res == RES_SEEN)
			continue;
		if (l->res == RES_ZONE) {
			uint64_t *re = &C.zone.readmit[l->zone];
			uint64_t last = *re != UINT64_MAX ? *re : C.zone.base + l->zone;

			if (last + s->horizon >= t)
				continue; /* still in the horizon */
			*re = t;
			C.readmit[C.nreadmit++] = t;
		}
		if (s->horizon) {
			s->ring_h[t % s->ring_size] = l->h;
			s->ring_g[t % s->ring_size] = l->gen;
		}
		t++;
		cnt->out++;
		out_put(C.buf + l->off, l->len + 1);
	}
	s->admitted = t;
	C.pop_from = C.pop_to = 0;
	if (s->horizon) {
		s->ring_len += t - t0;
		if (s->ring_len > s->horizon) {
			C.pop_to = t - s->horizon;
			C.pop_from = t - s->ring_len;
			s->ring_len = s->horizon;
		}
	}
	return st;
}

/* ---- main ------------------------------------------------------------------ */

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
print_stats(const struct counts *cnt, double secs)
{
	struct dd_seen *s = C.seen;
	struct dd_totals t;
	struct rusage ru;
	double mib = 1024.0 * 1024.0;

	dd_seen_totals(s, &t);
	getrusage(RUSAGE_SELF, &ru);
	if (secs <= 0)
		secs = 1e-9;
	fprintf(stderr,
	        PROG ": lines in        %" PRIu64 "\n"
	        PROG ": unique out      %" PRIu64 " (%" PRIu64 " dropped)\n"
	        PROG ": filters         %u shards, %u filters, longest chain %u, "
	        "%u grown; %u-bit fingerprints, full at load %.3f (%.1f bits per item)\n"
	        PROG ": filter load     %" PRIu64 " items in %" PRIu64 " slots (%.1f %%)\n"
	        PROG ": memory          %.2f MiB filters%s (%.1f bits per item held), "
	        "peak RSS %.1f MiB\n"
	        PROG ": false drops     %.2f expected so far; a new key now is "
	        "dropped with p <= %.2e\n"
	        PROG ": throughput      %.0f lines/s, %.1f MB/s (%.3f s, -j %u)\n",
	        cnt->in, cnt->out, cnt->in - cnt->out,
	        s->nshards, t.filters, t.max_chain, t.grown, s->fp_bits, s->alpha,
	        dd_seen_bits_per_item(s),
	        t.items, t.slots, t.slots ? 100.0 * (double)t.items / (double)t.slots : 0.0,
	        (double)t.memory / mib, s->horizon ? " and horizon ring" : "",
	        t.items ? 8.0 * (double)t.memory / (double)t.items : 0.0,
	        (double)ru.ru_maxrss / 1024.0,
	        t.est_false, t.fpr_bound,
	        (double)cnt->in / secs, (double)cnt->bytes / secs / 1e6, secs,
	        C.workers);
}

/* The seen-set: loaded from --load (checked against the options), or new
 * from the options.  *batch: the lines a batch takes.  Returns 0, or the
 * exit status having said why. */
static int
open_seen(unsigned *batch)
{
	struct dd_params p = { 0 };
	enum admit_status st;
	const char *why;

	*batch = BATCH_LINES;
	if (C.o.load) {
		st = dd_seen_load(C.o.load, *batch, &C.seen, &why);
		if (st != ADMIT_OK) {
			fprintf(stderr, PROG ": cannot load '%s': %s\n", C.o.load, why);
			return st == ADMIT_NOMEM ? EXIT_FULL : EXIT_USAGE;
		}
		if (C.o.horizon && C.o.horizon != C.seen->horizon) {
			fprintf(stderr, PROG ": '%s' was saved with --horizon %" PRIu64
			        ", not %" PRIu64 "\n", C.o.load, C.seen->horizon,
			        C.o.horizon);
			return EXIT_USAGE;
		}
		if (dd_seen_set_grow(C.seen, !C.o.fail_full) != ADMIT_OK) {
			fprintf(stderr, PROG ": cannot load '%s': %s\n", C.o.load,
			        admit_strerror(ADMIT_NOMEM));
			return EXIT_FULL;
		}
		*batch = C.seen->batch;
		return 0;
	}
	if (C.o.horizon && C.o.horizon < *batch)
		*batch = (unsigned)C.o.horizon;
	p.capacity = C.o.capacity;
	/* The horizon bounds the keys held at once; past 16M the filter
	 * starts smaller and grows as keys arrive, so a huge horizon does not
	 * allocate for keys that may never come. */
	if (C.o.horizon && !C.o.capacity_set)
		p.capacity = C.o.horizon + *batch < HORIZON_CAPACITY ?
		             C.o.horizon + *batch : HORIZON_CAPACITY;
	p.fpr = C.o.fpr;
	p.horizon = C.o.horizon;
	p.seed = C.o.seed;
	p.grow = !C.o.fail_full;
	p.batch = *batch;
	st = dd_seen_new(&p, &C.seen);
	if (st == ADMIT_ETOOBIG) {
		fprintf(stderr, PROG ": cannot create the filter: a capacity of %"
		        PRIu64 " keys%s is more than one filter can hold\n",
		        p.capacity, C.o.fpr ? " at this --fpr" : "");
		return EXIT_USAGE;
	} else if (st != ADMIT_OK) {
		/* choose_sizing() refuses only a target so small that a table
		 * would be mostly empty. */
		fprintf(stderr, PROG ": cannot create the filter: %s%s\n",
		        admit_strerror(st), st == ADMIT_EINVAL && C.o.fpr ?
		        " (--fpr too small)" : "");
		return st == ADMIT_EINVAL ? EXIT_USAGE : EXIT_FULL;
	}
	return 0;
}

/* The batch's arrays, the zone's with a horizon, the reader's buffer, and
 * the workers past the first (this thread).  Returns 0, or the exit
 * status having said why. */
static int
start(unsigned batch, struct reader *rd, pthread_t *th)
{
	bool nomem;

	C.workers = C.o.jobs;
	C.lines = calloc(batch, sizeof(*C.lines));
	C.readmit = calloc(batch, sizeof(*C.readmit));
	rd->cap = BUF_INIT;
	rd->buf = malloc(rd->cap);
	nomem = !C.lines || !C.readmit || !rd->buf;
	if (C.seen->horizon) {
		uint64_t zs = 2;

		while (zs < 2 * (uint64_t)batch)
			zs *= 2;
		C.zone.mask = zs - 1;
		C.zone.key = malloc(zs * sizeof(*C.zone.key));
		C.zone.slot = calloc(zs, sizeof(*C.zone.slot));
		C.zone.readmit = malloc(batch * sizeof(*C.zone.readmit));
		nomem |= !C.zone.key || !C.zone.slot || !C.zone.readmit;
	}
	if (nomem) {
		fprintf(stderr, PROG ": out of memory\n");
		return EXIT_FULL;
	}
	if (C.workers <= 1)
		return 0;
	if (pthread_barrier_init(&C.go, NULL, C.workers) ||
	    pthread_barrier_init(&C.done, NULL, C.workers)) {
		fprintf(stderr, PROG ": cannot create barriers\n");
		return EXIT_FULL;
	}
	for (unsigned w = 1; w < C.workers; w++)
		if (pthread_create(&th[w], NULL, worker_main,
		                   (void *)(uintptr_t)w) != 0) {
			fprintf(stderr, PROG ": cannot start %u threads; "
			        "try a smaller -j\n", C.workers);
			return EXIT_FULL;
		}
	return 0;
}

/* Every batch through the phases, in input order, until the input ends
 * or a filter refuses a key. */
static enum admit_status
run_batches(struct reader *rd, struct counts *cnt, unsigned batch)
{
	enum admit_status st = ADMIT_OK;

	for (;;) {
		size_t cut, n = next_batch(rd, C.lines, batch, &cut);

		if (n == 0)
			break;
		C.buf = rd->buf + rd->head;
		C.nlines = n;
		cnt->bytes += cut;
		st = dd_seen_ring_reserve(C.seen, n);
		if (st != ADMIT_OK)
			break;
		run(PH_HASH);
		if (C.seen->horizon)
			zone_build(n);
		run(PH_FILTER);
		st = emit(cnt);
		if (st == ADMIT_OK && C.pop_to + C.nreadmit > C.pop_from)
			st = run(PH_EXPIRE);
		if (st != ADMIT_OK)
			break;
		consume(rd, cut);
	}
	out_flush();
	return st;
}

/* --save, with the stopping signals held until the file is renamed over
 * FILE (or removed), so that none leaves a temporary file behind; they
 * take effect right after.  Returns 0 or EXIT_OUTPUT. */
static int
save(void)
{
	sigset_t stop, old;
	enum admit_status st;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGQUIT);
	sigprocmask(SIG_BLOCK, &stop, &old);
	st = dd_seen_save(C.seen, C.o.save);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (st == ADMIT_OK)
		return 0;
	fprintf(stderr, PROG ": cannot save '%s': %s\n", C.o.save,
	        st == ADMIT_EIO ? strerror(errno ? errno : EIO) :
	        admit_strerror(st));
	return EXIT_OUTPUT;
}

int
main(int argc, char **argv)
{
	static char *stdin_only[] = { "-" };
	struct reader rd = { 0 };
	struct counts cnt = { 0 };
	pthread_t th[MAX_JOBS];
	enum admit_status st;
	unsigned batch;
	double t0 = now();
	int status;

	parse_opts(argc, argv, &C.o);
	if (fcntl(STDOUT_FILENO, F_GETFD) < 0) {
		fprintf(stderr, PROG ": standard output is closed\n");
		return EXIT_OUTPUT;
	}
	if ((status = open_seen(&batch)) != 0 ||
	    (status = start(batch, &rd, th)) != 0)
		return status;
	rd.files = optind < argc ? argv + optind : stdin_only;
	rd.nfiles = optind < argc ? argc - optind : 1;
	rd.fd = -1;
	st = run_batches(&rd, &cnt, batch);
	if (C.workers > 1) {
		C.phase = PH_EXIT;
		pthread_barrier_wait(&C.go);
		for (unsigned w = 1; w < C.workers; w++)
			pthread_join(th[w], NULL);
	}
	if (C.o.stats)
		print_stats(&cnt, now() - t0);
	status = rd.status;
	if (st == ADMIT_FULL) {
		fprintf(stderr, PROG ": the filter is full after %" PRIu64
		        " distinct keys (--on-full=fail); give a larger --capacity "
		        "or let it grow\n", C.seen->admitted);
		status = EXIT_FULL;
	} else if (st == ADMIT_NOMEM) {
		fprintf(stderr, PROG ": out of memory after %" PRIu64
		        " distinct keys\n", C.seen->admitted);
		status = EXIT_FULL;
	} else if (st != ADMIT_OK) {
		fprintf(stderr, PROG ": internal error: %s\n", admit_strerror(st));
		status = EXIT_FULL;
	} else if (C.o.save && save() != 0) {
		status = EXIT_OUTPUT;
	}
	dd_seen_free(C.seen);
	free(C.lines);
	free(C.readmit);
	free(C.zone.key);
	free(C.zone.slot);
	free(C.zone.readmit);
	free(rd.buf);
	return status;
}
