/*
 * admit-dedup's seen-set: shards of chained cuckoo filters and the horizon
 * ring.  Single-threaded per shard: main.c gives each shard to one worker.
 */
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

/* The library sizes a table for 95 % load; asking for capacity c * 0.95 /
 * alpha items gives a table that is at load alpha with c items. */
#define LIB_LOAD 0.95

/* Probability that one lookup of an absent key matches in one filter:
 * 2 buckets x 4 slots, each holding a given non-zero fingerprint with
 * probability load / (2^f - 1); the union bound makes it an upper bound. */
static double
gen_fpr(const struct dd_seen *s, const struct dd_gen *g)
{
	if (!g->f || g->slots == 0)
		return 0;
	return 8.0 * ((double)g->live / (double)g->slots) /
	       (double)((1u << s->fp_bits) - 1);
}

static double
chain_fpr(const struct dd_seen *s, const struct dd_shard *d)
{
	double p = 0;

	for (unsigned g = 0; g < d->ngen; g++)
		p += gen_fpr(s, &d->gen[g]);
	return p;
}

static enum admit_status
gen_create(const struct dd_seen *s, unsigned shard, unsigned g, uint64_t cap,
           struct dd_gen *out)
{
	struct admit_cuckoo_config cfg = { 0 };
	double want = ceil((double)cap * LIB_LOAD / s->alpha);
	enum admit_status st;

	if (cap == 0 || want > (double)ADMIT_CUCKOO_MAX_CAPACITY)
		return ADMIT_ETOOBIG;
	cfg.capacity = (uint64_t)want;
	cfg.fingerprint_bits = s->fp_bits;
	/* One writer per shard at a time: one stripe is enough, and the
	 * default stripe array would cost more than a small shard's table. */
	cfg.stripes = 1;
	cfg.seed = admit_mix64(s->seed ^ admit_mix64((uint64_t)shard << 8 | g)) | 1;
	st = admit_cuckoo_new(&cfg, &out->f);
	if (st != ADMIT_OK)
		return st;
	out->cap = cap;
	out->live = 0;
	out->slots = admit_cuckoo_slots(out->f);
	return ADMIT_OK;
}

static enum admit_status
grow(struct dd_seen *s, unsigned shard)
{
	struct dd_shard *d = &s->shard[shard];
	enum admit_status st;

	if (!s->grow || d->ngen == DD_MAX_GENS)
		return ADMIT_FULL;
	st = gen_create(s, shard, d->ngen, 2 * d->gen[d->ngen - 1].cap,
	                &d->gen[d->ngen]);
	/* A successor no filter can hold: the chain is as full as it gets. */
	if (st == ADMIT_ETOOBIG)
		return ADMIT_FULL;
	if (st != ADMIT_OK)
		return st;
	d->ngen++;
	d->grown++;
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
	/* Per filter, fpr <= 8 * load / (2^f - 1): for each width, the highest
	 * load that meets the target, then the width costing fewer bits. */
	for (unsigned f = 8; f <= 16; f += 8) {
		double a = fmin(LIB_LOAD, p->fpr * (double)((1u << f) - 1) / 8);
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
		st = gen_create(s, i, 0, s->shard_cap, &s->shard[i].gen[0]);
		if (st != ADMIT_OK)
			goto out;
		s->shard[i].ngen = 1;
	}
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
		for (unsigned g = 0; g < s->shard[i].ngen; g++)
			admit_cuckoo_free(s->shard[i].gen[g].f);
	free(s->shard);
	free(s->ring_h);
	free(s->ring_g);
	free(s);
}

/* Make room in the newest filter for one more item. */
static enum admit_status
room(struct dd_seen *s, unsigned shard)
{
	struct dd_shard *d = &s->shard[shard];

	if (d->gen[d->ngen - 1].live < d->gen[d->ngen - 1].cap)
		return ADMIT_OK;
	return grow(s, shard);
}

enum admit_status
dd_seen_admit(struct dd_seen *s, unsigned shard, uint64_t h, uint8_t *gen)
{
	struct dd_shard *d = &s->shard[shard];
	unsigned char key[8];
	enum admit_status st;
	double p;

	snap_put64(key, h);
	/* Room first: a filter chained in here turns the newest into an older
	 * one, which the loop below must then check. */
	st = room(s, shard);
	if (st != ADMIT_OK)
		return st;
	for (unsigned g = 0; g + 1 < d->ngen; g++)
		if (d->gen[g].f && admit_cuckoo_contains(d->gen[g].f, key, 8))
			return ADMIT_EXISTS;
	p = chain_fpr(s, d);
	st = admit_cuckoo_insert_unique(d->gen[d->ngen - 1].f, key, 8);
	if (st == ADMIT_FULL) {
		/* Full before its nominal load (rare): chain a successor. */
		st = grow(s, shard);
		if (st != ADMIT_OK)
			return st;
		st = admit_cuckoo_insert_unique(d->gen[d->ngen - 1].f, key, 8);
	}
	if (st != ADMIT_OK)
		return st;
	d->gen[d->ngen - 1].live++;
	/* This key was admitted with probability 1 - p; a new key is dropped
	 * with probability p, so each admission stands for p / (1 - p)
	 * expected false drops. */
	d->est_false += p < 1 ? p / (1 - p) : 1;
	*gen = (uint8_t)(d->ngen - 1);
	return ADMIT_OK;
}

enum admit_status
dd_seen_insert(struct dd_seen *s, unsigned shard, uint64_t h, uint8_t *gen)
{
	struct dd_shard *d = &s->shard[shard];
	unsigned char key[8];
	enum admit_status st;

	snap_put64(key, h);
	st = room(s, shard);
	if (st != ADMIT_OK)
		return st;
	st = admit_cuckoo_insert(d->gen[d->ngen - 1].f, key, 8);
	if (st == ADMIT_FULL) {
		st = grow(s, shard);
		if (st != ADMIT_OK)
			return st;
		st = admit_cuckoo_insert(d->gen[d->ngen - 1].f, key, 8);
	}
	if (st != ADMIT_OK)
		return st;
	d->gen[d->ngen - 1].live++;
	*gen = (uint8_t)(d->ngen - 1);
	return ADMIT_OK;
}

enum admit_status
dd_seen_delete(struct dd_seen *s, unsigned shard, uint64_t h, uint8_t gen)
{
	struct dd_shard *d = &s->shard[shard];
	struct dd_gen *g;
	unsigned char key[8];
	enum admit_status st;

	if (gen >= d->ngen || !d->gen[gen].f)
		return ADMIT_NOTFOUND;
	g = &d->gen[gen];
	snap_put64(key, h);
	st = admit_cuckoo_delete(g->f, key, 8);
	if (st != ADMIT_OK)
		return st;
	/* An older filter the horizon has emptied is dead weight for every
	 * lookup: free it.  The newest stays to take inserts. */
	if (--g->live == 0 && gen + 1u < d->ngen) {
		admit_cuckoo_free(g->f);
		g->f = NULL;
	}
	return ADMIT_OK;
}

void
dd_seen_totals(const struct dd_seen *s, struct dd_totals *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < s->nshards; i++) {
		const struct dd_shard *d = &s->shard[i];
		unsigned chain = 0;
		double p = chain_fpr(s, d);

		for (unsigned g = 0; g < d->ngen; g++) {
			if (!d->gen[g].f)
				continue;
			chain++;
			t->items += d->gen[g].live;
			t->slots += d->gen[g].slots;
			t->memory += admit_cuckoo_memory(d->gen[g].f);
		}
		t->filters += chain;
		if (chain > t->max_chain)
			t->max_chain = chain;
		t->grown += d->grown;
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
 * Little-endian: "ADMITDD1", u32 version, nshards, fp_bits, flags (bit 0:
 * grow); u64 alpha (IEEE bits), seed, shard_cap, horizon, batch (of the
 * saving run, informational), admitted, ring_len; per shard u32 ngen, grown,
 * u64 est_false (bits), per filter u64 cap, live, snapshot length (0 = freed)
 * and an admit_cuckoo_save snapshot; the ring, oldest first, as u64 h and u8
 * filter; u64 XXH3 of everything before it.
 */
static const char MAGIC[8] = "ADMITDD1";
#define VERSION 1

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

static char *
temp_in(const char *dir)
{
	size_t n = strlen(dir) + sizeof("/.admit-dedup.XXXXXX");
	char *t = malloc(n);
	int fd;

	if (!t)
		return NULL;
	snprintf(t, n, "%s/.admit-dedup.XXXXXX", dir);
	fd = mkstemp(t);
	if (fd < 0) {
		free(t);
		return NULL;
	}
	close(fd);
	return t;
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

/* An admit_cuckoo snapshot as bytes, by way of a temporary file in dir:
 * the library's snapshot format stays the library's. */
static enum admit_status
put_filter(struct wbuf *w, const struct admit_cuckoo *f, const char *dir)
{
	char *tmp = temp_in(dir);
	unsigned char *data = NULL;
	size_t len = 0;
	enum admit_status st;

	if (!tmp)
		return ADMIT_EIO;
	st = admit_cuckoo_save(f, tmp);
	if (st == ADMIT_OK)
		st = read_file(tmp, &data, &len);
	unlink(tmp);
	free(tmp);
	if (st == ADMIT_OK) {
		put64(w, len);
		put(w, data, len);
	}
	free(data);
	return st;
}

enum admit_status
dd_seen_save(const struct dd_seen *s, const char *path)
{
	struct wbuf w = { 0 };
	enum admit_status st = ADMIT_OK;
	char *dir, *slash;

	if (!s || !path)
		return ADMIT_EINVAL;
	dir = strdup(path);
	if (!dir)
		return ADMIT_NOMEM;
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';

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
		const struct dd_shard *d = &s->shard[i];

		put32(&w, d->ngen);
		put32(&w, d->grown);
		put64(&w, dbits(d->est_false));
		for (unsigned g = 0; g < d->ngen && st == ADMIT_OK; g++) {
			put64(&w, d->gen[g].cap);
			put64(&w, d->gen[g].live);
			if (d->gen[g].f)
				st = put_filter(&w, d->gen[g].f, dir);
			else
				put64(&w, 0);
		}
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
	free(dir);
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

static enum admit_status
take_filter(struct rbuf *r, struct admit_cuckoo **f)
{
	uint64_t len = take64(r);
	const unsigned char *q;
	const char *dir = getenv("TMPDIR");
	char *tmp;
	FILE *fp;
	enum admit_status st;

	*f = NULL;
	if (len == 0)
		return ADMIT_OK;
	q = take(r, len);
	if (!q)
		return ADMIT_ECORRUPT;
	tmp = temp_in(dir && *dir ? dir : "/tmp");
	if (!tmp)
		return ADMIT_EIO;
	fp = fopen(tmp, "wb");
	st = fp && fwrite(q, 1, len, fp) == len ? ADMIT_OK : ADMIT_EIO;
	if (fp && fclose(fp) != 0)
		st = ADMIT_EIO;
	if (st == ADMIT_OK)
		st = admit_cuckoo_load(tmp, f);
	unlink(tmp);
	free(tmp);
	return st;
}

enum admit_status
dd_seen_load(const char *path, unsigned batch, struct dd_seen **out,
             const char **why)
{
	unsigned char *data = NULL;
	size_t len = 0;
	struct rbuf r;
	struct dd_seen *s = NULL;
	enum admit_status st = ADMIT_ECORRUPT;
	uint64_t n;

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
	s->grow = take32(&r) & 1;
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
	    s->horizon > ((uint64_t)1 << 40) || s->ring_len > s->horizon ||
	    s->ring_len > s->admitted)
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

		d->ngen = take32(&r);
		d->grown = take32(&r);
		d->est_false = bitsd(take64(&r));
		if (r.bad || d->ngen == 0 || d->ngen > DD_MAX_GENS)
			goto out;
		for (unsigned g = 0; g < d->ngen; g++) {
			struct dd_gen *e = &d->gen[g];

			e->cap = take64(&r);
			e->live = take64(&r);
			st = take_filter(&r, &e->f);
			if (st != ADMIT_OK) {
				*why = "bad filter snapshot";
				goto out;
			}
			st = ADMIT_ECORRUPT;
			if (r.bad || (!e->f && (e->live || g + 1 == d->ngen)) ||
			    (e->f && (admit_cuckoo_size(e->f) != e->live ||
			              e->live > e->cap)))
				goto out;
			e->slots = e->f ? admit_cuckoo_slots(e->f) : 0;
		}
	}
	*why = "bad horizon ring";
	n = 0;
	for (uint64_t k = 0; k < s->ring_len; k++) {
		uint64_t pos = (s->admitted - s->ring_len + k) % s->ring_size;
		const unsigned char *g;

		s->ring_h[pos] = take64(&r);
		g = take(&r, 1);
		if (!g || *g >= s->shard[dd_shard_of(s, s->ring_h[pos])].ngen ||
		    !s->shard[dd_shard_of(s, s->ring_h[pos])].gen[*g].f)
			goto out;
		s->ring_g[pos] = *g;
		n++;
	}
	if (r.off != r.len)
		goto out;
	if (s->horizon) {
		uint64_t items = 0;

		for (unsigned i = 0; i < s->nshards; i++)
			for (unsigned g = 0; g < s->shard[i].ngen; g++)
				items += s->shard[i].gen[g].live;
		if (items != n)
			goto out;
	}
	*out = s;
	s = NULL;
	st = ADMIT_OK;
	*why = NULL;
out:
	dd_seen_free(s);
	free(data);
	return st;
}
