/*
 * admit-dedup's seen-set: shards of chained cuckoo filters and the horizon
 * ring.  Single-threaded per shard: main.c gives each shard to one worker.
 */
#include <endian.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "dedup.h"
#include "hash.h" /* admit_mix64, the library's mixer */
#include "snapfile.h"

/* The library sizes a table for 95 % load: the most load a filter runs at. */
#define LIB_LOAD 0.95

/* Probability that one lookup of an absent key matches in one filter at
 * its load now: 2 buckets x 4 slots, each matching a random non-zero
 * fingerprint with probability at most 1 / (2^f - 2) (src/chain.c says
 * why); the union bound makes it an upper bound. */
static double
filter_fpr(const struct admit_chain_filter_info *fi)
{
	if (fi->slots == 0)
		return 0;
	return 8.0 * ((double)fi->items / (double)fi->slots) /
	       (double)((1u << fi->fingerprint_bits) - 2);
}

/* The filters' key: h as 8 little-endian bytes (what the state file has
 * always held).  Not snap_put64: its byte loop was a tenth of the
 * instructions admit-dedup spends per line. */
static inline void
key_of_hash(unsigned char key[8], uint64_t h)
{
	uint64_t le = htole64(h);

	memcpy(key, &le, 8);
}

/* d->p and d->w from the chain as it stands (after growth or a trim). */
static void
refresh_fpr(struct dd_shard *d)
{
	struct admit_chain_filter_info fi;

	d->p = 0;
	for (d->nw = 0; d->nw < ADMIT_CHAIN_MAX_FILTERS &&
	     admit_chain_filter_info(d->chain, d->nw, &fi) == ADMIT_OK; d->nw++) {
		d->p += filter_fpr(&fi);
		d->w[d->nw] = fi.slots ? 8.0 / (double)fi.slots /
		              (double)((1u << fi.fingerprint_bits) - 2) : 0;
	}
}

/* One item more in filter idx (or, if it is new, a refresh). */
static void
note_add(struct dd_shard *d, unsigned idx)
{
	if (idx < d->nw)
		d->p += d->w[idx];
	else
		refresh_fpr(d);
}

/* Shard i's chain: the first filter holds shard_cap keys at load alpha,
 * each successor twice as many; one lock stripe (one writer per shard at a
 * time, and the default stripe array would cost more than a small shard's
 * table). */
static enum admit_status
shard_chain(const struct dd_seen *s, unsigned shard, struct admit_chain **out)
{
	struct admit_chain_config cfg = {
		.capacity = s->shard_cap,
		.expansion = 2,
		.stripes = 1,
		.fingerprint_bits = s->fp_bits,
		.max_load = s->alpha,
		/* One worker per shard at a time, handed over at barriers. */
		.single_writer = true,
		.seed = admit_mix64(s->seed ^ admit_mix64((uint64_t)shard << 8)) | 1,
	};

	if (ceil((double)s->shard_cap * LIB_LOAD / s->alpha) >
	    (double)ADMIT_CUCKOO_MAX_CAPACITY)
		return ADMIT_ETOOBIG;
	return admit_chain_new(&cfg, out);
}

static unsigned
chain_filters(const struct admit_chain *c)
{
	struct admit_chain_info info;

	admit_chain_info(c, &info);
	return info.filters;
}

enum admit_status
dd_seen_set_grow(struct dd_seen *s, bool grow)
{
	s->grow = grow;
	for (unsigned i = 0; i < s->nshards; i++) {
		struct admit_chain *c = s->shard[i].chain;
		enum admit_status st;

		st = admit_chain_set_max_filters(c, grow ? 0 : chain_filters(c));
		if (st != ADMIT_OK)
			return st;
	}
	return ADMIT_OK;
}

static enum admit_status
choose_sizing(const struct dd_params *p, struct dd_seen *s)
{
	double best = 0;

	if (p->fpr == 0) {
		s->fp_bits = 16;
		s->alpha = LIB_LOAD;
		return ADMIT_OK;
	}
	if (!(p->fpr > 0 && p->fpr < 1))
		return ADMIT_EINVAL;
	/* Per filter, fpr <= 8 * load / (2^f - 2) (admit/chain.h): for each
	 * width, the highest load that meets the target, then the width
	 * costing fewer bits. */
	for (unsigned f = 8; f <= 16; f += 8) {
		double a = fmin(LIB_LOAD, p->fpr * (double)((1u << f) - 2) / 8);
		double bits = f / a;

		if (best == 0 || bits < best) {
			best = bits;
			s->fp_bits = f;
			s->alpha = a;
		}
	}
	/* Below ~1e-6 a table would be mostly empty: refuse. */
	return best <= 1024 ? ADMIT_OK : ADMIT_EINVAL;
}

enum admit_status
dd_seen_ring_reserve(struct dd_seen *s, uint64_t n)
{
	uint64_t want = s->ring_len + n, max = s->horizon + s->batch, size;
	uint64_t *h;
	uint8_t *g;

	if (!s->horizon || want <= s->ring_size)
		return ADMIT_OK;
	/* Doubling, up to the most the horizon can ever need: memory follows
	 * the keys actually remembered, so a horizon of 2^40 costs nothing
	 * until that many keys arrive. */
	size = s->ring_size ? s->ring_size : 4096;
	while (size < want)
		size *= 2;
	if (size > max)
		size = max;
	if (size > SIZE_MAX / sizeof(*h))
		return ADMIT_NOMEM;
	h = malloc((size_t)size * sizeof(*h));
	g = malloc((size_t)size);
	if (!h || !g) {
		free(h);
		free(g);
		return ADMIT_NOMEM;
	}
	/* Entries live at (admission index) mod size: move each one (none
	 * before the first allocation, whatever ring_len a load set). */
	for (uint64_t t = s->admitted - s->ring_len;
	     s->ring_size && t < s->admitted; t++) {
		h[t % size] = s->ring_h[t % s->ring_size];
		g[t % size] = s->ring_g[t % s->ring_size];
	}
	free(s->ring_h);
	free(s->ring_g);
	s->ring_h = h;
	s->ring_g = g;
	s->ring_size = size;
	return ADMIT_OK;
}

static enum admit_status
ring_alloc(struct dd_seen *s)
{
	s->ring_size = 0;
	return dd_seen_ring_reserve(s, s->batch);
}

enum admit_status
dd_seen_new(const struct dd_params *p, struct dd_seen **out)
{
	struct dd_seen *s;
	enum admit_status st;
	uint64_t per;

	if (!p || !out || p->capacity == 0 || p->batch == 0 ||
	    p->horizon > ((uint64_t)1 << 40))
		return ADMIT_EINVAL;
	if (p->capacity > ADMIT_CUCKOO_MAX_CAPACITY)
		return ADMIT_ETOOBIG;
	s = calloc(1, sizeof(*s));
	if (!s)
		return ADMIT_NOMEM;
	st = choose_sizing(p, s);
	if (st != ADMIT_OK)
		goto out;
	/* Shards: a fixed function of the capacity, never of -j, so the output
	 * does not depend on the thread count.  At least ~4096 keys a shard. */
	s->nshards = 1;
	while (s->nshards < DD_MAX_SHARDS &&
	       p->capacity / (2 * s->nshards) >= 4096)
		s->nshards *= 2;
	s->shard_shift = 64;
	for (unsigned n = s->nshards; n > 1; n /= 2)
		s->shard_shift--;
	per = (p->capacity + s->nshards - 1) / s->nshards;
	/* Keys spread over shards binomially: leave 4 standard deviations. */
	s->shard_cap = s->nshards == 1 ? per :
	               per + (uint64_t)(4 * sqrt((double)per)) + 16;
	s->seed = p->seed;
	while (s->seed == 0)
		if (getrandom(&s->seed, sizeof(s->seed), 0) != sizeof(s->seed)) {
			st = ADMIT_EIO;
			goto out;
		}
	s->grow = p->grow;
	s->horizon = p->horizon;
	s->batch = p->batch;
	st = ring_alloc(s);
	if (st != ADMIT_OK)
		goto out;
	s->shard = calloc(s->nshards, sizeof(*s->shard));
	if (!s->shard) {
		st = ADMIT_NOMEM;
		goto out;
	}
	for (unsigned i = 0; i < s->nshards; i++) {
		st = shard_chain(s, i, &s->shard[i].chain);
		if (st != ADMIT_OK)
			goto out;
		refresh_fpr(&s->shard[i]);
	}
	st = dd_seen_set_grow(s, p->grow);
	if (st != ADMIT_OK)
		goto out;
	*out = s;
	return ADMIT_OK;
out:
	dd_seen_free(s);
	return st;
}

void
dd_seen_free(struct dd_seen *s)
{
	if (!s)
		return;
	for (unsigned i = 0; s->shard && i < s->nshards; i++)
		admit_chain_free(s->shard[i].chain);
	free(s->shard);
	free(s->ring_h);
	free(s->ring_g);
	free(s);
}

enum admit_status
dd_seen_admit(struct dd_seen *s, unsigned shard, uint64_t h, uint8_t *gen)
{
	struct dd_shard *d = &s->shard[shard];
	unsigned char key[8];
	enum admit_status st;
	unsigned idx;
	double p;

	key_of_hash(key, h);
	/* Before the insert, with the loads this key met (a filter chained
	 * in by this very insert is empty and adds nothing). */
	p = d->p;
	st = admit_chain_add_unique_at(d->chain, key, 8, &idx);
	if (st != ADMIT_OK)
		return st;
	note_add(d, idx);
	/* This key was admitted with probability 1 - p; a new key is dropped
	 * with probability p, so each admission stands for p / (1 - p)
	 * expected false drops. */
	d->est_false += p < 1 ? p / (1 - p) : 1;
	*gen = (uint8_t)(d->trimmed + idx);
	return ADMIT_OK;
}

enum admit_status
dd_seen_insert(struct dd_seen *s, unsigned shard, uint64_t h, uint8_t *gen)
{
	struct dd_shard *d = &s->shard[shard];
	unsigned char key[8];
	enum admit_status st;
	unsigned idx;

	key_of_hash(key, h);
	st = admit_chain_add_at(d->chain, key, 8, &idx);
	if (st != ADMIT_OK)
		return st;
	note_add(d, idx);
	*gen = (uint8_t)(d->trimmed + idx);
	return ADMIT_OK;
}

enum admit_status
dd_seen_delete(struct dd_seen *s, unsigned shard, uint64_t h, uint8_t gen)
{
	struct dd_shard *d = &s->shard[shard];
	unsigned idx = (uint8_t)(gen - (uint8_t)d->trimmed), removed;
	unsigned char key[8];
	enum admit_status st;

	key_of_hash(key, h);
	st = admit_chain_delete_at(d->chain, idx, key, 8);
	if (st == ADMIT_EINVAL)
		return ADMIT_NOTFOUND; /* no such filter (any more) */
	if (st != ADMIT_OK)
		return st;
	d->p -= d->w[idx];
	if (idx != 0 || d->nw < 2)
		return ADMIT_OK; /* not the oldest, or the newest too */
	/* An older filter the horizon has emptied is dead weight for every
	 * lookup: free it (the chain keeps the newest to take inserts).  Keys
	 * leave in admission order, so the oldest filter empties first.  This
	 * worker alone uses the shard's chain during EXPIRE, as trim needs. */
	st = admit_chain_trim(d->chain, &removed);
	if (st != ADMIT_OK || removed == 0)
		return st;
	d->trimmed += removed;
	refresh_fpr(d);
	/* Without growth the chain must not grow back into the room. */
	return s->grow ? ADMIT_OK :
	       admit_chain_set_max_filters(d->chain, chain_filters(d->chain));
}

void
dd_seen_totals(const struct dd_seen *s, struct dd_totals *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < s->nshards; i++) {
		const struct dd_shard *d = &s->shard[i];
		struct admit_chain_filter_info fi;
		unsigned chain = 0;
		double p = 0;

		for (; admit_chain_filter_info(d->chain, chain, &fi) ==
		       ADMIT_OK; chain++) {
			t->items += fi.items;
			t->slots += fi.slots;
			t->memory += fi.memory;
			p += filter_fpr(&fi);
		}
		t->filters += chain;
		if (chain > t->max_chain)
			t->max_chain = chain;
		t->grown += (unsigned)(d->trimmed + chain - 1);
		t->est_false += d->est_false;
		if (p > t->fpr_bound)
			t->fpr_bound = p;
	}
	if (s->horizon)
		t->memory += s->ring_size * (sizeof(*s->ring_h) + 1);
}

double
dd_seen_bits_per_item(const struct dd_seen *s)
{
	return s->fp_bits / s->alpha;
}

/* ---- state files -----------------------------------------------------------
 * Little-endian: "ADMITDD1", u32 version (2), nshards, fp_bits, flags (bit
 * 0: grow); u64 alpha (IEEE bits), seed, shard_cap, horizon, batch (of the
 * saving run, informational), admitted, ring_len; per shard u64 est_false
 * (bits), u64 length and that many bytes of admit_chain_dump(); the ring,
 * oldest first, as u64 h and u8 filter number (mod 256); u64 XXH3 of
 * everything before it.  Version 1 (before admit-dedup used admit_chain)
 * held its own filter lists: refused with a message saying so.
 */
static const char MAGIC[8] = "ADMITDD1";
#define VERSION 2

struct wbuf {
	unsigned char *p;
	size_t len, cap;
	bool nomem;
};

static void
put(struct wbuf *w, const void *src, size_t n)
{
	if (w->nomem)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		unsigned char *np;

		while (cap < w->len + n)
			cap *= 2;
		np = realloc(w->p, cap);
		if (!np) {
			w->nomem = true;
			return;
		}
		w->p = np;
		w->cap = cap;
	}
	memcpy(w->p + w->len, src, n);
	w->len += n;
}

static void
put64(struct wbuf *w, uint64_t v)
{
	unsigned char b[8];

	snap_put64(b, v);
	put(w, b, 8);
}

static void
put32(struct wbuf *w, uint32_t v)
{
	unsigned char b[4];

	snap_put32(b, v);
	put(w, b, 4);
}

static uint64_t
dbits(double d)
{
	uint64_t v;

	memcpy(&v, &d, 8);
	return v;
}

static double
bitsd(uint64_t v)
{
	double d;

	memcpy(&d, &v, 8);
	return d;
}

/* The whole of a regular file (snapfile_open refuses a FIFO or a device
 * without blocking on it).  ADMIT_EIO leaves errno set. */
static enum admit_status
read_file(const char *path, unsigned char **data, size_t *len)
{
	struct wbuf w = { 0 };
	unsigned char chunk[65536];
	enum admit_status st;
	uint64_t size;
	ssize_t n;
	int fd, err;

	st = snapfile_open(path, &fd, &size);
	if (st != ADMIT_OK)
		return st;
	while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		put(&w, chunk, (size_t)n);
	}
	err = errno;
	close(fd);
	if (n < 0 || w.nomem) {
		free(w.p);
		errno = err;
		return w.nomem ? ADMIT_NOMEM : ADMIT_EIO;
	}
	*data = w.p;
	*len = w.len;
	return ADMIT_OK;
}

static enum admit_status
put_chain(struct wbuf *w, const struct admit_chain *c)
{
	void *buf = NULL;
	size_t len = 0;
	enum admit_status st = admit_chain_dump(c, &buf, &len);

	if (st != ADMIT_OK)
		return st;
	put64(w, len);
	put(w, buf, len);
	free(buf);
	return ADMIT_OK;
}

enum admit_status
dd_seen_save(const struct dd_seen *s, const char *path)
{
	struct wbuf w = { 0 };
	enum admit_status st = ADMIT_OK;

	if (!s || !path)
		return ADMIT_EINVAL;

	put(&w, MAGIC, 8);
	put32(&w, VERSION);
	put32(&w, s->nshards);
	put32(&w, s->fp_bits);
	put32(&w, s->grow ? 1 : 0);
	put64(&w, dbits(s->alpha));
	put64(&w, s->seed);
	put64(&w, s->shard_cap);
	put64(&w, s->horizon);
	put64(&w, s->batch);
	put64(&w, s->admitted);
	put64(&w, s->ring_len);
	for (unsigned i = 0; i < s->nshards && st == ADMIT_OK; i++) {
		put64(&w, dbits(s->shard[i].est_false));
		st = put_chain(&w, s->shard[i].chain);
	}
	for (uint64_t k = 0; k < s->ring_len; k++) {
		uint64_t pos = (s->admitted - s->ring_len + k) % s->ring_size;

		put64(&w, s->ring_h[pos]);
		put(&w, &s->ring_g[pos], 1);
	}
	if (st == ADMIT_OK && w.nomem)
		st = ADMIT_NOMEM;
	if (st != ADMIT_OK)
		goto out;
	put64(&w, XXH3_64bits(w.p, w.len));
	if (w.nomem) {
		st = ADMIT_NOMEM;
		goto out;
	}
	/* The library's writer: a temporary file renamed over the regular
	 * file path names (following a symlink, refusing a device). */
	st = snapfile_write(path, &(struct snapfile_part){ w.p, w.len }, 1);
out:
	free(w.p);
	return st;
}

struct rbuf {
	const unsigned char *p;
	size_t len, off;
	bool bad;
};

static const unsigned char *
take(struct rbuf *r, size_t n)
{
	const unsigned char *q;

	if (r->bad || n > r->len - r->off) {
		r->bad = true;
		return NULL;
	}
	q = r->p + r->off;
	r->off += n;
	return q;
}

static uint64_t
take64(struct rbuf *r)
{
	const unsigned char *q = take(r, 8);

	return q ? snap_get64(q) : 0;
}

static uint32_t
take32(struct rbuf *r)
{
	const unsigned char *q = take(r, 4);

	return q ? snap_get32(q) : 0;
}

/* Where a shard's chain dump lies in the file's bytes. */
struct dump {
	const unsigned char *p;
	uint64_t len;
};

/* A shard's chain: the chain the saving run made for it, so of this
 * file's width, load and first capacity. */
static enum admit_status
take_chain(struct rbuf *r, const struct dd_seen *s, struct dd_shard *d,
           struct dump *where)
{
	uint64_t len = take64(r);
	const unsigned char *q = take(r, len);
	struct admit_chain_info info;
	enum admit_status st;

	if (!q)
		return ADMIT_ECORRUPT;
	*where = (struct dump){ q, len };
	st = admit_chain_restore(q, len, &d->chain);
	if (st != ADMIT_OK)
		return st;
	admit_chain_info(d->chain, &info);
	if (info.fingerprint_bits != s->fp_bits || info.max_load != s->alpha ||
	    info.first_capacity != s->shard_cap || info.expansion != 2)
		return ADMIT_ECORRUPT;
	d->trimmed = info.trimmed;
	return ADMIT_OK;
}

/*
 * Whether every key of the ring deletes from the filter it names, as the
 * horizon will delete it, tried on a second copy of each shard's chain
 * (restored from the same bytes, one shard at a time): a ring that
 * disagrees with the filters would otherwise fail in the middle of a run,
 * after lines were written.  ADMIT_ECORRUPT if one does not.
 */
static enum admit_status
ring_agrees(const struct dd_seen *s, const struct dump *dumps)
{
	for (unsigned i = 0; i < s->nshards; i++) {
		struct admit_chain *c;
		enum admit_status st = admit_chain_restore(dumps[i].p,
		                                           dumps[i].len, &c);

		if (st != ADMIT_OK)
			return st;
		for (uint64_t k = 0; k < s->ring_len && st == ADMIT_OK; k++) {
			uint64_t pos = (s->admitted - s->ring_len + k) % s->ring_size;
			uint64_t h = s->ring_h[pos];
			unsigned char key[8];

			if (dd_shard_of(s, h) != i)
				continue;
			key_of_hash(key, h);
			st = admit_chain_delete_at(c, (uint8_t)(s->ring_g[pos] -
			                           (uint8_t)s->shard[i].trimmed),
			                           key, 8);
			if (st != ADMIT_OK && st != ADMIT_NOMEM)
				st = ADMIT_ECORRUPT;
		}
		admit_chain_free(c);
		if (st != ADMIT_OK)
			return st;
	}
	return ADMIT_OK;
}

/* Admissions a file may count: far beyond any run (2^62 at 10^9 a second
 * is a century), and far enough below 2^64 that the count never wraps. */
#define MAX_ADMITTED ((uint64_t)1 << 62)

/* Each admission adds p / (1 - p) to its shard's estimate, p the chain's
 * false-positive bound at the time: at most 32 filters x 8 x 0.95 / 254
 * = 0.96 (8-bit fingerprints), so at most 23 per admission. */
#define MAX_EST_PER_KEY 23.0

enum admit_status
dd_seen_load(const char *path, unsigned batch, struct dd_seen **out,
             const char **why)
{
	unsigned char *data = NULL;
	size_t len = 0;
	struct rbuf r;
	struct dd_seen *s = NULL;
	enum admit_status st = ADMIT_ECORRUPT;
	struct dump dumps[DD_MAX_SHARDS];
	uint32_t flags;
	double est = 0;
	uint64_t n, items = 0;

	*why = "not an admit-dedup state file";
	st = read_file(path, &data, &len);
	if (st != ADMIT_OK) {
		*why = st == ADMIT_EIO ? strerror(errno ? errno : EIO) :
		       admit_strerror(st);
		return st;
	}
	st = ADMIT_ECORRUPT;
	if (len < 16 || memcmp(data, MAGIC, 8) != 0)
		goto out;
	/* Before the checksum: an old file is old, whatever else is wrong. */
	*why = "saved by an admit-dedup before 0.2.0 (state format 1); "
	       "this one reads format 2 only: rebuild the state with --save";
	if (snap_get32(data + 8) == 1)
		goto out;
	*why = "checksum mismatch (truncated or altered)";
	if (snap_get64(data + len - 8) != XXH3_64bits(data, len - 8))
		goto out;
	r = (struct rbuf){ data, len - 8, 8, false };
	*why = "unsupported version or bad parameters";
	s = calloc(1, sizeof(*s));
	if (!s) {
		st = ADMIT_NOMEM;
		goto out;
	}
	if (take32(&r) != VERSION)
		goto out;
	s->nshards = take32(&r);
	s->fp_bits = take32(&r);
	flags = take32(&r);
	s->grow = flags & 1;
	s->alpha = bitsd(take64(&r));
	s->seed = take64(&r);
	s->shard_cap = take64(&r);
	s->horizon = take64(&r);
	(void)take64(&r); /* the saving run's batch */
	s->admitted = take64(&r);
	s->ring_len = take64(&r);
	if (r.bad || s->nshards == 0 || s->nshards > DD_MAX_SHARDS ||
	    (s->nshards & (s->nshards - 1)) || (s->fp_bits != 8 && s->fp_bits != 16) ||
	    !(s->alpha > 0 && s->alpha <= LIB_LOAD) || s->shard_cap == 0 ||
	    s->horizon > ((uint64_t)1 << 40) || (flags & ~1u) || s->seed == 0 ||
	    s->admitted > MAX_ADMITTED)
		goto out;
	/* The ring holds the last min(admitted, horizon) admissions. */
	if (s->ring_len != (s->admitted < s->horizon ? s->admitted : s->horizon))
		goto out;
	s->shard_shift = 64;
	for (unsigned k = s->nshards; k > 1; k /= 2)
		s->shard_shift--;
	s->batch = s->horizon && batch > s->horizon ? (unsigned)s->horizon : batch;
	st = ring_alloc(s);
	if (st != ADMIT_OK)
		goto out;
	st = ADMIT_NOMEM;
	s->shard = calloc(s->nshards, sizeof(*s->shard));
	if (!s->shard)
		goto out;
	st = ADMIT_ECORRUPT;
	*why = "bad filter chain";
	for (unsigned i = 0; i < s->nshards; i++) {
		struct dd_shard *d = &s->shard[i];

		struct admit_chain_info info;

		d->est_false = bitsd(take64(&r));
		st = take_chain(&r, s, d, &dumps[i]);
		if (st != ADMIT_OK) {
			*why = st == ADMIT_NOMEM ? admit_strerror(st) :
			       "bad filter chain";
			goto out;
		}
		st = ADMIT_ECORRUPT;
		refresh_fpr(d);
		admit_chain_info(d->chain, &info);
		items += info.items;
		if (!(d->est_false >= 0 && d->est_false <= MAX_EST_PER_KEY *
		      (double)s->admitted)) { /* NaN fails too */
			*why = "bad false-drop estimate";
			goto out;
		}
		est += d->est_false;
	}
	/* Without a horizon nothing is deleted: one item per admission. */
	*why = "admitted count disagrees with the filters";
	if (est > MAX_EST_PER_KEY * (double)s->admitted ||
	    (!s->horizon && items != s->admitted))
		goto out;
	st = ADMIT_ECORRUPT;
	*why = "bad horizon ring";
	n = 0;
	for (uint64_t k = 0; k < s->ring_len; k++) {
		uint64_t pos = (s->admitted - s->ring_len + k) % s->ring_size;
		const struct dd_shard *d;
		const unsigned char *g;

		s->ring_h[pos] = take64(&r);
		g = take(&r, 1);
		if (!g)
			goto out;
		d = &s->shard[dd_shard_of(s, s->ring_h[pos])];
		if ((uint8_t)(*g - (uint8_t)d->trimmed) >= chain_filters(d->chain))
			goto out;
		s->ring_g[pos] = *g;
		n++;
	}
	if (r.off != r.len || (s->horizon && items != n))
		goto out;
	st = ring_agrees(s, dumps);
	if (st != ADMIT_OK) {
		*why = st == ADMIT_NOMEM ? admit_strerror(st) : "bad horizon ring";
		goto out;
	}
	/* As saved; main.c sets it for this run. */
	st = dd_seen_set_grow(s, s->grow);
	if (st != ADMIT_OK)
		goto out;
	*out = s;
	s = NULL;
	st = ADMIT_OK;
	*why = NULL;
out:
	dd_seen_free(s);
	free(data);
	return st;
}
