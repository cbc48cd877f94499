/*
 * admit-dedup's state file: the seen-set saved by --save and read back by
 * --load, every field checked against the rest of the file before use.
 *
 * Little-endian: "ADMITDD1", u32 version (2), nshards, fp_bits, flags (bit
 * 0: grow); u64 alpha (IEEE bits), seed, shard_cap, horizon, batch (of the
 * saving run, informational), admitted, ring_len; per shard u64 est_false
 * (bits), u64 length and that many bytes of admit_chain_dump(); the ring,
 * oldest first, as u64 h and u8 filter number (mod 256); u64 XXH3 of
 * everything before it.  Version 1 (before admit-dedup used admit_chain)
 * held its own filter lists: refused with a message saying so.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "dedup.h"
#include "snapfile.h"

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

/* Shard i's chain: the chain the saving run made for it, so of this
 * file's width, load and first capacity, and seeded from this file's seed
 * (the dump's u64 at 40, src/chain.c): chains of another run hold keys
 * hashed with another seed. */
static enum admit_status
take_chain(struct rbuf *r, const struct dd_seen *s, unsigned i,
           struct dump *where)
{
	struct dd_shard *d = &s->shard[i];
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
	    info.first_capacity != s->shard_cap || info.expansion != 2 ||
	    snap_get64(q + 40) != dd_shard_seed(s, i))
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
			dd_key_of_hash(key, h);
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

/* The header's fields, each in range and agreeing with the others. */
static enum admit_status
take_header(struct rbuf *r, struct dd_seen *s, unsigned batch)
{
	uint32_t flags;

	if (take32(r) != VERSION)
		return ADMIT_ECORRUPT;
	s->nshards = take32(r);
	s->fp_bits = take32(r);
	flags = take32(r);
	s->grow = flags & 1;
	s->alpha = bitsd(take64(r));
	s->seed = take64(r);
	s->shard_cap = take64(r);
	s->horizon = take64(r);
	(void)take64(r); /* the saving run's batch */
	s->admitted = take64(r);
	s->ring_len = take64(r);
	if (r->bad || s->nshards == 0 || s->nshards > DD_MAX_SHARDS ||
	    (s->nshards & (s->nshards - 1)) ||
	    (s->fp_bits != 8 && s->fp_bits != 16) ||
	    !(s->alpha > 0 && s->alpha <= DD_LIB_LOAD) || s->shard_cap == 0 ||
	    s->horizon > ((uint64_t)1 << 40) || (flags & ~1u) || s->seed == 0 ||
	    s->admitted > MAX_ADMITTED)
		return ADMIT_ECORRUPT;
	/* The ring holds the last min(admitted, horizon) admissions. */
	if (s->ring_len != (s->admitted < s->horizon ? s->admitted : s->horizon))
		return ADMIT_ECORRUPT;
	s->shard_shift = 64;
	for (unsigned k = s->nshards; k > 1; k /= 2)
		s->shard_shift--;
	s->batch = s->horizon && batch > s->horizon ? (unsigned)s->horizon : batch;
	return ADMIT_OK;
}

/* Each shard's estimate and chain (dumps[i]: where its bytes are); the
 * estimates and the filters' items against the admitted count. */
static enum admit_status
take_shards(struct rbuf *r, struct dd_seen *s, struct dump *dumps,
            const char **why)
{
	uint64_t items = 0;
	double est = 0;

	s->shard = calloc(s->nshards, sizeof(*s->shard));
	if (!s->shard)
		return ADMIT_NOMEM;
	for (unsigned i = 0; i < s->nshards; i++) {
		struct dd_shard *d = &s->shard[i];
		struct admit_chain_info info;
		enum admit_status st;

		d->est_false = bitsd(take64(r));
		st = take_chain(r, s, i, &dumps[i]);
		if (st != ADMIT_OK) {
			*why = "bad filter chain";
			return st;
		}
		dd_shard_refresh(d);
		admit_chain_info(d->chain, &info);
		items += info.items;
		*why = "bad false-drop estimate";
		if (!(d->est_false >= 0 && d->est_false <= MAX_EST_PER_KEY *
		      (double)s->admitted)) /* NaN fails too */
			return ADMIT_ECORRUPT;
		est += d->est_false;
	}
	*why = "admitted count disagrees with the filters";
	if (est > MAX_EST_PER_KEY * (double)s->admitted)
		return ADMIT_ECORRUPT;
	/* Without a horizon nothing is deleted: one item per admission; with
	 * one, the filters hold the ring's keys. */
	if (items != (s->horizon ? s->ring_len : s->admitted))
		return ADMIT_ECORRUPT;
	return ADMIT_OK;
}

/* The ring, oldest first: exactly what is left of the file, each entry
 * naming a filter its shard has, each key deleting from that filter. */
static enum admit_status
take_ring(struct rbuf *r, struct dd_seen *s, const struct dump *dumps)
{
	enum admit_status st;

	/* Its size from the file's bytes before any allocation for it. */
	if (r->len - r->off != s->ring_len * 9)
		return ADMIT_ECORRUPT;
	st = dd_seen_ring_alloc(s);
	if (st != ADMIT_OK)
		return st;
	for (uint64_t k = 0; k < s->ring_len; k++) {
		uint64_t pos = (s->admitted - s->ring_len + k) % s->ring_size;
		const struct dd_shard *d;
		const unsigned char *g;

		s->ring_h[pos] = take64(r);
		g = take(r, 1);
		if (!g)
			return ADMIT_ECORRUPT;
		d = &s->shard[dd_shard_of(s, s->ring_h[pos])];
		if ((uint8_t)(*g - (uint8_t)d->trimmed) >=
		    dd_chain_filters(d->chain))
			return ADMIT_ECORRUPT;
		s->ring_g[pos] = *g;
	}
	return ring_agrees(s, dumps);
}

enum admit_status
dd_seen_load(const char *path, unsigned batch, struct dd_seen **out,
             const char **why)
{
	unsigned char *data = NULL;
	size_t len = 0;
	struct rbuf r;
	struct dd_seen *s = NULL;
	struct dump dumps[DD_MAX_SHARDS];
	enum admit_status st;

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
	st = s ? take_header(&r, s, batch) : ADMIT_NOMEM;
	if (st == ADMIT_OK)
		st = take_shards(&r, s, dumps, why);
	if (st == ADMIT_OK) {
		*why = "bad horizon ring";
		st = take_ring(&r, s, dumps);
	}
	/* As saved; main.c sets it for this run. */
	if (st == ADMIT_OK)
		st = dd_seen_set_grow(s, s->grow);
	if (st == ADMIT_OK) {
		*out = s;
		s = NULL;
		*why = NULL;
	} else if (st == ADMIT_NOMEM) {
		*why = admit_strerror(st);
	}
out:
	dd_seen_free(s);
	free(data);
	return st;
}
