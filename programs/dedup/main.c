/*
 * admit-dedup - write each line whose key was not seen before, in input
 * order, in bounded memory and on several threads.  See admit-dedup(1).
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

#include "dedup.h"

#define PROG "admit-dedup"
#define EXIT_INPUT 1  /* an input could not be read; the rest was done */
#define EXIT_USAGE 2  /* bad option or unusable --load file */
#define EXIT_FULL 3   /* filter full with --on-full=fail, or out of memory */
#define EXIT_OUTPUT 4 /* stdout or --save could not be written */

#define BATCH_LINES 65536u
#define BUF_INIT ((size_t)4 << 20)
#define OUT_CAP ((size_t)1 << 20)
#define MAX_JOBS 64u
#define HORIZON_CAPACITY ((uint64_t)1 << 24) /* most default capacity */
#define SERIAL_LINES 1024u /* a batch this small runs on one thread */

struct opts {
	unsigned jobs;
	unsigned long field; /* 0 = whole line */
	int delim;           /* -1 = runs of blanks, as awk */
	bool strip_cr, stats, fail_full;
	uint64_t capacity, horizon, seed;
	bool capacity_set;
	double fpr;
	const char *save, *load;
};

enum res { RES_NEW, RES_SEEN, RES_ZONE, RES_ERR };

struct line {
	size_t off, len;
	uint64_t h;
	uint32_t zone;  /* RES_ZONE: slot in the zone */
	uint8_t shard;
	uint8_t res;
	uint8_t gen;
};

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

static void
die_usage(const char *msg)
{
	fprintf(stderr, PROG ": %s\nTry '" PROG " --help'.\n", msg);
	exit(EXIT_USAGE);
}

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

/* ---- output ---------------------------------------------------------------- */

static char out_buf[OUT_CAP];
static size_t out_len;

static void
write_all(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t r = write(STDOUT_FILENO, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, PROG ": write error on standard output: %s\n",
			        strerror(errno));
			exit(EXIT_OUTPUT);
		}
		p += r;
		n -= (size_t)r;
	}
}

static void
out_flush(void)
{
	write_all(out_buf, out_len);
	out_len = 0;
}

static void
out_put(const char *p, size_t n)
{
	if (out_len + n > OUT_CAP)
		out_flush();
	if (n > OUT_CAP)
		write_all(p, n);
	else {
		memcpy(out_buf + out_len, p, n);
		out_len += n;
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

/* ---- input ----------------------------------------------------------------- */

struct reader {
	char **files;
	int nfiles, next;
	int fd;
	const char *name;
	bool done;
	char *buf;
	size_t cap, used, scan;
	size_t head;  /* bytes before it belong to batches already done */
	int status;
};

static void
grow_buf(struct reader *rd)
{
	char *nb = NULL;

	if (rd->cap <= SIZE_MAX / 2)
		nb = realloc(rd->buf, rd->cap * 2);
	if (!nb) {
		fprintf(stderr, PROG ": out of memory for a line of %zu bytes\n",
		        rd->used);
		exit(EXIT_FULL);
	}
	rd->buf = nb;
	rd->cap *= 2;
}

/* End of one input: a last line without '\n' is still a line. */
static void
end_input(struct reader *rd)
{
	if (rd->used > 0 && rd->buf[rd->used - 1] != '\n') {
		if (rd->used == rd->cap)
			grow_buf(rd);
		rd->buf[rd->used++] = '\n';
	}
	if (rd->fd != STDIN_FILENO)
		close(rd->fd);
	rd->fd = -1;
}

static void
read_more(struct reader *rd)
{
	ssize_t r;

	while (rd->fd < 0) {
		const char *name;

		if (rd->next >= rd->nfiles) {
			rd->done = true;
			return;
		}
		name = rd->files[rd->next++];
		if (strcmp(name, "-") == 0) {
			rd->fd = STDIN_FILENO;
			rd->name = "standard input";
		} else {
			rd->fd = open(name, O_RDONLY);
			rd->name = name;
			if (rd->fd < 0) {
				fprintf(stderr, PROG ": cannot open '%s': %s\n", name,
				        strerror(errno));
				rd->status = EXIT_INPUT;
			}
		}
	}
	do
		r = read(rd->fd, rd->buf + rd->used, rd->cap - rd->used);
	while (r < 0 && errno == EINTR);
	if (r > 0) {
		rd->used += (size_t)r;
		return;
	}
	if (r < 0) {
		fprintf(stderr, PROG ": cannot read '%s': %s\n", rd->name,
		        strerror(errno));
		rd->status = EXIT_INPUT;
	}
	end_input(rd);
}

/* The next batch: up to max whole lines, fewer only when the buffer is full
 * or the input ends.  The cut depends on the bytes alone, not on how read()
 * happened to split them.  *cut is where the batch's last line ends. */
static size_t
next_batch(struct reader *rd, struct line *lines, size_t max, size_t *cut)
{
	size_t n = 0, start = rd->head;

	for (;;) {
		while (n < max && rd->scan < rd->used) {
			char *nl = memchr(rd->buf + rd->scan, '\n',
			                  rd->used - rd->scan);
			size_t e;

			if (!nl) {
				rd->scan = rd->used;
				break;
			}
			e = (size_t)(nl - rd->buf);
			lines[n].off = start - rd->head;
			lines[n].len = e - start;
			n++;
			start = rd->scan = e + 1;
		}
		if (n == max || rd->done)
			break;
		if (rd->used == rd->cap && rd->head > 0) {
			/* Drop the finished batches' bytes once per buffer-full,
			 * not after every batch: with a small --horizon a batch
			 * is a line, and moving the rest of a 4 MB buffer per
			 * line made such runs 200 times slower. */
			memmove(rd->buf, rd->buf + rd->head, rd->used - rd->head);
			rd->used -= rd->head;
			rd->scan -= rd->head;
			start -= rd->head;
			rd->head = 0;
		}
		if (n > 0 && rd->used == rd->cap)
			break;
		if (rd->used == rd->cap)
			grow_buf(rd); /* one line longer than the buffer */
		read_more(rd);
	}
	*cut = start - rd->head;
	return n;
}

/* The batch's lines (offsets from rd->buf + rd->head) are done. */
static void
consume(struct reader *rd, size_t cut)
{
	rd->head += cut;
}

/* ---- options --------------------------------------------------------------- */

static void
usage(void)
{
	printf(
"Usage: " PROG " [OPTION]... [FILE]...\n"
"Write each line of the FILEs (standard input if none, or '-') whose key was\n"
"not seen before, in input order.  The key is the line's exact bytes without\n"
"its '\\n' (or one field of it); memory stays bounded by a cuckoo filter, so a\n"
"key is wrongly taken for a duplicate with a small, stated probability.\n"
"\n"
"  -f, --field N        key is field N (1-based) instead of the whole line\n"
"  -d, --delimiter C    fields are separated by the single byte C (also \\t, \\0);\n"
"                       default: runs of blanks, as awk\n"
"      --strip-cr       a '\\r' before the '\\n' is not part of the key\n"
"  -j, --jobs N         worker threads (default: online CPUs); the output does\n"
"                       not depend on N\n"
"      --capacity N     distinct keys expected (default 1000000, or the horizon)\n"
"      --fpr E          false-drop probability per new key for each filter\n"
"                       (default: 16-bit fingerprints, about 1.2e-4)\n"
"      --horizon N      forget a key once N other distinct keys were written\n"
"                       after it (--window N is the same)\n"
"      --on-full=MODE   grow (default): chain a filter twice as large when full;\n"
"                       fail: stop with exit status 3\n"
"      --save FILE      save the seen-set to FILE at the end\n"
"      --load FILE      start from a seen-set saved with --save\n"
"      --seed N         hash seed (default random); equal seeds give equal output\n"
"      --stats          print counts, load, memory and throughput to stderr\n"
"  -h, --help           this help\n"
"\n"
"N accepts a k, M or G suffix (10^3, 10^6, 10^9).  Exit status: 0 ok, 1 an\n"
"input could not be read, 2 usage or --load error, 3 filter full or out of\n"
"memory, 4 output or --save error.  See admit-dedup(1).\n");
}

static uint64_t
parse_num(const char *s, const char *what)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	errno = 0;
	if (*s == '-' || *s == '\0')
		goto bad;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		goto bad;
	if (*end == 'k' || *end == 'K')
		mul = 1000, end++;
	else if (*end == 'M')
		mul = 1000000, end++;
	else if (*end == 'G')
		mul = 1000000000, end++;
	if (*end != '\0' || v > UINT64_MAX / mul)
		goto bad;
	return v * mul;
bad:
	fprintf(stderr, PROG ": invalid %s: '%s'\n", what, s);
	exit(EXIT_USAGE);
}

static int
parse_delim(const char *s)
{
	if (s[0] != '\0' && s[1] == '\0')
		return (unsigned char)s[0];
	if (strcmp(s, "\\t") == 0)
		return '\t';
	if (strcmp(s, "\\0") == 0)
		return '\0';
	if (strcmp(s, "\\\\") == 0)
		return '\\';
	die_usage("the delimiter must be one byte (or \\t, \\0, \\\\)");
	return -1;
}

static void
parse_opts(int argc, char **argv, struct opts *o)
{
	enum { O_STRIP = 256, O_CAP, O_FPR, O_HORIZON, O_STATS, O_FULL, O_SAVE,
	       O_LOAD, O_SEED };
	static const struct option lo[] = {
		{ "field", required_argument, NULL, 'f' },
		{ "delimiter", required_argument, NULL, 'd' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "strip-cr", no_argument, NULL, O_STRIP },
		{ "capacity", required_argument, NULL, O_CAP },
		{ "fpr", required_argument, NULL, O_FPR },
		{ "horizon", required_argument, NULL, O_HORIZON },
		/* Its 0.1 name, kept: "window" also names TinyLFU's sample
		 * and the cache's first segment. */
		{ "window", required_argument, NULL, O_HORIZON },
		{ "stats", no_argument, NULL, O_STATS },
		{ "on-full", required_argument, NULL, O_FULL },
		{ "save", required_argument, NULL, O_SAVE },
		{ "load", required_argument, NULL, O_LOAD },
		{ "seed", required_argument, NULL, O_SEED },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	bool fpr_set = false, seed_set = false;
	uint64_t v;
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->jobs = ncpu < 1 ? 1 : ncpu > (long)MAX_JOBS ? MAX_JOBS : (unsigned)ncpu;
	o->delim = -1;
	o->capacity = 1000000;
	while ((c = getopt_long(argc, argv, "f:d:j:h", lo, NULL)) != -1) {
		switch (c) {
		case 'f':
			v = parse_num(optarg, "field number");
			if (v == 0 || v > ULONG_MAX)
				die_usage("fields are numbered from 1");
			o->field = (unsigned long)v;
			break;
		case 'd': o->delim = parse_delim(optarg); break;
		case 'j':
			v = parse_num(optarg, "job count");
			if (v == 0 || v > MAX_JOBS)
				die_usage("-j takes 1 to 64");
			o->jobs = (unsigned)v;
			break;
		case O_STRIP: o->strip_cr = true; break;
		case O_CAP:
			o->capacity = parse_num(optarg, "capacity");
			if (o->capacity == 0 ||
			    o->capacity > ADMIT_CUCKOO_MAX_CAPACITY / 2)
				die_usage("--capacity takes 1 to about 8G");
			o->capacity_set = true;
			break;
		case O_FPR:
			errno = 0;
			o->fpr = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->fpr > 0 && o->fpr < 1))
				die_usage("--fpr takes a probability between 0 and 1, e.g. 1e-4");
			fpr_set = true;
			break;
		case O_HORIZON:
			o->horizon = parse_num(optarg, "horizon");
			if (o->horizon == 0 || o->horizon > ((uint64_t)1 << 40))
				die_usage("--horizon takes 1 to 2^40");
			break;
		case O_STATS: o->stats = true; break;
		case O_FULL:
			if (strcmp(optarg, "fail") == 0)
				o->fail_full = true;
			else if (strcmp(optarg, "grow") == 0)
				o->fail_full = false;
			else
				die_usage("--on-full takes 'grow' or 'fail'");
			break;
		case O_SAVE: o->save = optarg; break;
		case O_LOAD: o->load = optarg; break;
		case O_SEED:
			o->seed = parse_num(optarg, "seed");
			seed_set = true;
			break;
		case 'h': usage(); exit(0);
		default:
			fprintf(stderr, "Try '" PROG " --help'.\n");
			exit(EXIT_USAGE);
		}
	}
	if (o->load && (o->capacity_set || fpr_set || seed_set))
		die_usage("--capacity, --fpr and --seed come from the --load file");
	if (seed_set && o->seed == 0)
		die_usage("--seed must not be 0");
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

int
main(int argc, char **argv)
{
	static char *stdin_only[] = { "-" };
	struct reader rd = { 0 };
	struct counts cnt = { 0 };
	struct dd_params p = { 0 };
	pthread_t th[MAX_JOBS];
	enum admit_status st = ADMIT_OK;
	unsigned batch;
	double t0 = now();
	bool nomem;
	int status;

	parse_opts(argc, argv, &C.o);
	if (fcntl(STDOUT_FILENO, F_GETFD) < 0) {
		fprintf(stderr, PROG ": standard output is closed\n");
		return EXIT_OUTPUT;
	}
	batch = BATCH_LINES;
	if (C.o.load) {
		const char *why;

		st = dd_seen_load(C.o.load, batch, &C.seen, &why);
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
		batch = C.seen->batch;
	} else {
		if (C.o.horizon && C.o.horizon < batch)
			batch = (unsigned)C.o.horizon;
		p.capacity = C.o.capacity;
		/* The horizon bounds the keys held at once; past 16M the
		 * filter starts smaller and grows as keys arrive, so a huge
		 * horizon does not allocate for keys that may never come. */
		if (C.o.horizon && !C.o.capacity_set)
			p.capacity = C.o.horizon + batch < HORIZON_CAPACITY ?
			             C.o.horizon + batch : HORIZON_CAPACITY;
		p.fpr = C.o.fpr;
		p.horizon = C.o.horizon;
		p.seed = C.o.seed;
		p.grow = !C.o.fail_full;
		p.batch = batch;
		st = dd_seen_new(&p, &C.seen);
		if (st == ADMIT_ETOOBIG) {
			fprintf(stderr, PROG ": cannot create the filter: a "
			        "capacity of %" PRIu64 " keys%s is more than one "
			        "filter can hold\n", p.capacity,
			        C.o.fpr ? " at this --fpr" : "");
			return EXIT_USAGE;
		} else if (st != ADMIT_OK) {
			/* choose_sizing() refuses only a target so small that a
			 * table would be mostly empty. */
			fprintf(stderr, PROG ": cannot create the filter: %s%s\n",
			        admit_strerror(st), st == ADMIT_EINVAL && C.o.fpr ?
			        " (--fpr too small)" : "");
			return st == ADMIT_EINVAL ? EXIT_USAGE : EXIT_FULL;
		}
	}

	C.workers = C.o.jobs;
	C.lines = calloc(batch, sizeof(*C.lines));
	C.readmit = calloc(batch, sizeof(*C.readmit));
	rd.cap = BUF_INIT;
	rd.buf = malloc(rd.cap);
	nomem = !C.lines || !C.readmit || !rd.buf;
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
	if (C.workers > 1) {
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
	}

	rd.files = optind < argc ? argv + optind : stdin_only;
	rd.nfiles = optind < argc ? argc - optind : 1;
	rd.fd = -1;
	for (;;) {
		size_t cut, n = next_batch(&rd, C.lines, batch, &cut);

		if (n == 0)
			break;
		C.buf = rd.buf + rd.head;
		C.nlines = n;
		cnt.bytes += cut;
		st = dd_seen_ring_reserve(C.seen, n);
		if (st != ADMIT_OK)
			break;
		run(PH_HASH);
		if (C.seen->horizon)
			zone_build(n);
		run(PH_FILTER);
		st = emit(&cnt);
		if (st == ADMIT_OK && C.pop_to + C.nreadmit > C.pop_from)
			st = run(PH_EXPIRE);
		if (st != ADMIT_OK)
			break;
		consume(&rd, cut);
	}
	out_flush();

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
	} else if (C.o.save) {
		sigset_t stop, old;

		/* A signal that stops the program waits until the save has
		 * renamed its temporary file over FILE (or removed it), so it
		 * never leaves one behind; it takes effect right after. */
		sigemptyset(&stop);
		sigaddset(&stop, SIGINT);
		sigaddset(&stop, SIGTERM);
		sigaddset(&stop, SIGHUP);
		sigaddset(&stop, SIGQUIT);
		sigprocmask(SIG_BLOCK, &stop, &old);
		st = dd_seen_save(C.seen, C.o.save);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (st != ADMIT_OK) {
			fprintf(stderr, PROG ": cannot save '%s': %s\n", C.o.save,
			        st == ADMIT_EIO ? strerror(errno ? errno : EIO) :
			        admit_strerror(st));
			status = EXIT_OUTPUT;
		}
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
