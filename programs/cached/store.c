/*
 * store.c - memcached items over admit_lru.
 *
 * Each command hashes its key once and makes one admit_lru call: a get
 * lends the item to the server's reader (admit_lru_get_with_hashed), set
 * and delete go straight in, and every command that reads, decides and
 * writes is one admit_lru_compute_hashed, whose updater runs under the
 * key's shard mutex (so cas, incr and append need no lock of ours, and
 * each counts as one access).
 *
 * Admission: a set (and an ms in set mode) is a plain store, which
 * TinyLFU may turn away at once; it still answers STORED, as memcached's
 * set of an item evicted at once does.  Every other store (add, replace,
 * cas, append, prepend, incr, decr, touch, gat, the other ms modes, ma,
 * mg's vivify) is forced past admission (ADMIT_LRU_STORE_FORCE): its reply
 * promises the item is there, and an add used as a lock must hold.
 *
 * Expiry is the cache's: memcached's exptime (seconds from now up to 30
 * days, a Unix time above, negative = already expired) becomes an absolute
 * time on admit_lru_now's clock when the command runs.  An absolute Unix
 * time is turned into "that many seconds from now" with the wall clock at
 * that moment, so a later step of the wall clock does not move it (as in
 * memcached, whose clock is also monotonic once started).
 *
 * flush_all releases the capacity at once: it swaps in a new, empty
 * admit_lru and frees the old one when no thread is still using it.  Each
 * thread publishes the admit_lru it works on in a hazard slot of its own
 * for the length of one command; the flusher, after the swap, waits until
 * no slot holds the old pointer (a command takes microseconds).  A delayed
 * flush_all is carried out by the first command (or the maintenance
 * thread's tick) at or past its time, before that command touches the
 * cache, so it removes exactly the items stored before its time, as
 * memcached's does.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/random.h>
#include <time.h>

#include "store.h"

#define REL_EXPTIME_MAX 2592000  /* 30 days: above, an exptime is a Unix time */
#define MAX_SLOTS 1024u          /* hazard slots: workers + maintenance */
#define NS_PER_S UINT64_C(1000000000)

/* The item header, 12 bytes in front of the data, each charged against
 * --memory for every item; read and written with memcpy (the cache keeps
 * values unaligned). */
#define HDR 12u

static void
hdr_put(char *p, uint64_t cas, uint32_t flags)
{
	memcpy(p, &cas, sizeof(cas));
	memcpy(p + 8, &flags, sizeof(flags));
}

static void
hdr_get(const char *p, uint64_t *cas, uint32_t *flags)
{
	memcpy(cas, p, sizeof(*cas));
	memcpy(flags, p + 8, sizeof(*flags));
}

struct cached_store {
	_Atomic(struct admit_lru *) lru;
	struct admit_lru_config cfg;     /* to make the next one on a flush */
	size_t max_item;
	atomic_uint_fast64_t cas_seq;    /* last unique handed out */
	atomic_int_fast64_t flush_at;    /* pending delayed flush; 0 = none */
	pthread_mutex_t flush_mu;        /* one flush at a time; base */
	struct admit_lru_stats base;     /* counters of flushed admit_lrus */
	atomic_uint nslots;
	_Atomic(struct admit_lru *) hazard[MAX_SLOTS];
	/* The maintenance thread. */
	pthread_t maint;
	bool maint_started, stopping;    /* under maint_mu */
	pthread_mutex_t maint_mu;
	pthread_cond_t maint_cv;
	struct cached_scratch maint_scratch;
};

static void *maint_main(void *arg);

int
cached_store_new(uint64_t memory_bytes, size_t max_item, bool admission,
                 struct cached_store **out)
{
	struct admit_lru_config cfg = {
		.capacity_bytes = memory_bytes,
		.policy = admission ? ADMIT_LRU_ADAPTIVE : ADMIT_LRU_PLAIN,
	};
	struct cached_store *st;
	struct admit_lru *lru;
	enum admit_status rc;
	unsigned shards = 16;

	/* Each shard must hold a few of the largest items. */
	while (shards > 1 && memory_bytes / shards < 4 * (max_item + HDR + 512))
		shards /= 2;
	cfg.shards = shards;
	/* One seed for every cache a flush makes. */
	if (getrandom(&cfg.seed, sizeof(cfg.seed), 0) != sizeof(cfg.seed) ||
	    !cfg.seed)
		cfg.seed = (uint64_t)time(NULL) | 1;
	st = calloc(1, sizeof(*st));
	if (!st)
		return ENOMEM;
	rc = admit_lru_new(&cfg, &lru);
	if (rc != ADMIT_OK) {
		fprintf(stderr, "admit-cached: admit_lru_new: %s\n",
		        admit_strerror(rc));
		free(st);
		return EINVAL;
	}
	atomic_init(&st->lru, lru);
	st->cfg = cfg;
	st->max_item = max_item;
	atomic_init(&st->cas_seq, 0);
	atomic_init(&st->flush_at, 0);
	atomic_init(&st->nslots, 0);
	for (unsigned i = 0; i < MAX_SLOTS; i++)
		atomic_init(&st->hazard[i], NULL);
	pthread_mutex_init(&st->flush_mu, NULL);
	pthread_mutex_init(&st->maint_mu, NULL);
	pthread_cond_init(&st->maint_cv, NULL);
	if (cached_scratch_init(&st->maint_scratch, st) ||
	    pthread_create(&st->maint, NULL, maint_main, st)) {
		cached_store_free(st);
		return ENOMEM;
	}
	st->maint_started = true;
	*out = st;
	return 0;
}

void
cached_store_free(struct cached_store *st)
{
	if (!st)
		return;
	if (st->maint_started) {
		pthread_mutex_lock(&st->maint_mu);
		st->stopping = true;
		pthread_cond_signal(&st->maint_cv);
		pthread_mutex_unlock(&st->maint_mu);
		pthread_join(st->maint, NULL);
	}
	cached_scratch_free(&st->maint_scratch);
	pthread_mutex_destroy(&st->flush_mu);
	pthread_mutex_destroy(&st->maint_mu);
	pthread_cond_destroy(&st->maint_cv);
	admit_lru_free(atomic_load(&st->lru));
	free(st);
}

int
cached_scratch_init(struct cached_scratch *s, struct cached_store *st)
{
	s->slot = atomic_fetch_add(&st->nslots, 1);
	s->lru = NULL;
	if (s->slot >= MAX_SLOTS)
		return EMFILE;
	return 0;
}

void
cached_scratch_free(struct cached_scratch *s)
{
	s->lru = NULL;  /* it owns no memory */
}

/*
 * memcached's exptime e as an expiry time on lru's clock: 0 = never, 1 =
 * already past (admit_lru then removes the key at once; its clock is far
 * beyond 1 ns by the time anything runs).
 */
static uint64_t
expires_at(struct admit_lru *lru, int64_t e)
{
	int64_t secs;

	if (e == 0)
		return 0;
	if (e < 0)
		return 1;
	if (e <= REL_EXPTIME_MAX) {
		secs = e;
	} else {
		if (e > (int64_t)UINT32_MAX)
			e = UINT32_MAX;  /* memcached's exptime is 32 bits */
		secs = e - (int64_t)time(NULL);
		if (secs <= 0)
			return 1;
	}
	return admit_lru_now(lru) + (uint64_t)secs * NS_PER_S;
}

/*
 * Publishes the admit_lru this thread is about to use in its hazard slot.
 * seq_cst store then load: the slot's store must be ordered before the
 * re-read of st->lru, or a flusher could swap and scan the slots between
 * them and free what this thread then uses.
 */
static void
hz_acquire(struct cached_store *st, struct cached_scratch *s)
{
	struct admit_lru *p;

	for (;;) {
		p = atomic_load(&st->lru);
		atomic_store(&st->hazard[s->slot], p);
		if (atomic_load(&st->lru) == p)
			break;
	}
	s->lru = p;
}

static void
hz_release(struct cached_store *st, struct cached_scratch *s)
{
	/* release: every use of s->lru happens before a flusher that reads
	 * the cleared slot (acquire) frees it. */
	atomic_store_explicit(&st->hazard[s->slot], NULL, memory_order_release);
	s->lru = NULL;
}

static void
add_stats(struct admit_lru_stats *to, const struct admit_lru_stats *from)
{
	to->hits += from->hits;
	to->misses += from->misses;
	to->admitted += from->admitted;
	to->rejected += from->rejected;
	to->evicted += from->evicted;
	to->expired += from->expired;
}

/* Swaps in an empty admit_lru; the caller holds flush_mu and no hazard. */
static int
flush_now(struct cached_store *st)
{
	struct admit_lru *fresh, *old;
	struct admit_lru_stats ls;
	unsigned n = atomic_load(&st->nslots);

	if (admit_lru_new(&st->cfg, &fresh) != ADMIT_OK)
		return ENOMEM;
	old = atomic_exchange(&st->lru, fresh);
	for (unsigned i = 0; i < n && i < MAX_SLOTS; i++)
		/* acquire: pairs with hz_release, so the slot's owner is
		 * done with old before it is freed. */
		while (atomic_load_explicit(&st->hazard[i], memory_order_acquire) == old)
			sched_yield();
	if (admit_lru_stats(old, &ls) == ADMIT_OK)
		add_stats(&st->base, &ls);
	admit_lru_free(old);
	return 0;
}

/*
 * Carries out a delayed flush_all whose time has come.  Called before the
 * caller takes its hazard; a caller that sees the flush due waits on
 * flush_mu until it is done, so nothing it stores lands in the old cache.
 * flush_at is cleared only after the swap, so whoever reads it as 0 also
 * sees the new cache.  The wall clock is read only when a flush is
 * pending.
 */
static void
flush_due(struct cached_store *st)
{
	int_fast64_t at = atomic_load(&st->flush_at);
	int64_t now;

	if (!at)
		return;
	now = time(NULL);
	if (now < at)
		return;
	pthread_mutex_lock(&st->flush_mu);
	at = atomic_load(&st->flush_at);
	if (at && now >= at && flush_now(st) == 0)
		atomic_store(&st->flush_at, 0);
	pthread_mutex_unlock(&st->flush_mu);
}

int
cached_store_flush(struct cached_store *st, int64_t delay)
{
	int rc = 0;
	int64_t at;

	pthread_mutex_lock(&st->flush_mu);
	if (delay > 0) {
		at = delay <= REL_EXPTIME_MAX ? time(NULL) + delay
		     : delay > (int64_t)UINT32_MAX ? (int64_t)UINT32_MAX : delay;
		/* A later flush_all replaces a pending one, as in memcached. */
		atomic_store(&st->flush_at, at);
	} else {
		rc = flush_now(st);
		if (rc == 0)
			atomic_store(&st->flush_at, 0);
		/* memcached takes a CAS unique to mark where an immediate
		 * flush stands; taking one too keeps the uniques of both
		 * servers alike for alike commands. */
		atomic_fetch_add(&st->cas_seq, 1);
	}
	pthread_mutex_unlock(&st->flush_mu);
	return rc;
}

/* Every command: a due delayed flush first, then the hazard, then the
 * key's one hash. */
static uint64_t
begin(struct cached_store *st, struct cached_scratch *s, const char *key,
      size_t klen)
{
	flush_due(st);
	hz_acquire(st, s);
	return admit_lru_hash(s->lru, key, klen);
}

/* ---- get ------------------------------------------------------------- */

struct lend {
	cached_reader_t fn;
	void *arg;
	bool hit;
};

static void
lend_item(const void *value, size_t vlen, void *arg)
{
	struct lend *l = arg;
	struct cached_item it;

	if (vlen < HDR)  /* not one of ours: cannot happen */
		return;
	hdr_get(value, &it.cas, &it.flags);
	it.cas &= CACHED_CAS_MASK;
	it.data = (const char *)value + HDR;
	it.len = vlen - HDR;
	l->hit = true;
	l->fn(&it, l->arg);
}

enum cached_lookup
cached_store_get(struct cached_store *st, struct cached_scratch *s,
                 const char *key, size_t klen, cached_reader_t fn, void *arg)
{
	struct lend l = { fn, arg, false };
	uint64_t h = begin(st, s, key, klen);

	admit_lru_get_with_hashed(s->lru, h, key, klen, lend_item, &l);
	hz_release(st, s);
	return l.hit ? CACHED_HIT : CACHED_MISS;
}

/* ---- read-modify-write: one admit_lru_compute ------------------------- */

struct upd {
	struct cached_store *st;
	const struct cached_req *req;
	const char *data;         /* the request's data block */
	uint64_t expires;         /* the request's exptime on lru's clock */
	enum cached_result r;     /* the reply, unless the store fails */
	uint64_t value;           /* incr/decr: the new number */
	cached_reader_t fn;       /* gat: the reader of the item */
	void *arg;
};

/* Whether up holds one of our items; *cas, *flags, *data, *len its parts. */
static bool
old_item(const struct admit_lru_update *up, uint64_t *cas, uint32_t *flags,
         const char **data, size_t *len)
{
	if (!up->found || up->old_len < HDR)
		return false;
	hdr_get(up->old, cas, flags);
	*data = (const char *)up->old + HDR;
	*len = up->old_len - HDR;
	return true;
}

/*
 * Writes the item header + a + b as up's new value, with a fresh CAS
 * unique unless cas is given (touch).  Returns the verdict:
 * ADMIT_LRU_STORE_FORCE (if the buffer could not be had, admit_lru_compute
 * reports why), or ADMIT_LRU_KEEP with u->r = CACHED_TOO_LARGE past
 * --max-item.  Every store of these commands is forced past admission:
 * their replies promise the item is there (an add used as a lock).
 */
static enum admit_lru_verdict
put(struct upd *u, struct admit_lru_update *up, uint32_t flags,
    const uint64_t *cas, const char *a, size_t alen, const char *b,
    size_t blen)
{
	char *p;

	if (alen > u->st->max_item || blen > u->st->max_item - alen) {
		u->r = CACHED_TOO_LARGE;
		return ADMIT_LRU_KEEP;
	}
	p = admit_lru_update_alloc(up, HDR + alen + blen);
	if (!p)
		return ADMIT_LRU_STORE_FORCE;
	hdr_put(p, cas ? *cas : atomic_fetch_add(&u->st->cas_seq, 1) + 1, flags);
	if (alen)
		memcpy(p + HDR, a, alen);
	if (blen)
		memcpy(p + HDR + alen, b, blen);
	return ADMIT_LRU_STORE_FORCE;
}

/* The updater of every read-modify-write command; runs under the key's
 * shard mutex. */
static enum admit_lru_verdict
updater(struct admit_lru_update *up, void *arg)
{
	struct upd *u = arg;
	const struct cached_req *req = u->req;
	const char *old;
	size_t oldlen, n = (size_t)req->bytes;
	uint64_t cas, v;
	uint32_t flags;
	bool found = old_item(up, &cas, &flags, &old, &oldlen);
	char num[24];
	int len;

	switch (req->cmd) {
	case CACHED_ADD:
	case CACHED_REPLACE:
		if (found != (req->cmd == CACHED_REPLACE)) {
			u->r = CACHED_NOT_STORED;
			return ADMIT_LRU_KEEP;
		}
		u->r = CACHED_STORED;
		up->expires = u->expires;
		return put(u, up, req->flags, NULL, u->data, n, NULL, 0);
	case CACHED_CAS:
		if (!found || (cas & CACHED_CAS_MASK) != req->cas) {
			u->r = found ? CACHED_EXISTS : CACHED_NOT_FOUND;
			return ADMIT_LRU_KEEP;
		}
		u->r = CACHED_STORED;
		up->expires = u->expires;
		return put(u, up, req->flags, NULL, u->data, n, NULL, 0);
	case CACHED_APPEND:
	case CACHED_PREPEND:
		if (!found) {
			u->r = CACHED_NOT_STORED;
			return ADMIT_LRU_KEEP;
		}
		/* The item keeps its flags and expiry (up->expires is
		 * old_expires already). */
		u->r = CACHED_STORED;
		if (req->cmd == CACHED_APPEND)
			return put(u, up, flags, NULL, old, oldlen, u->data, n);
		return put(u, up, flags, NULL, u->data, n, old, oldlen);
	case CACHED_INCR:
	case CACHED_DECR:
		if (!found) {
			u->r = CACHED_NOT_FOUND;
			return ADMIT_LRU_KEEP;
		}
		if (!oldlen || !cached_strtoull(old, oldlen, &v)) {
			u->r = CACHED_NON_NUMERIC;
			return ADMIT_LRU_KEEP;
		}
		if (req->cmd == CACHED_INCR)
			v += req->delta;  /* wraps at 2^64, as memcached does */
		else
			v = req->delta > v ? 0 : v - req->delta;
		len = snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
		u->r = CACHED_NUMBER;
		u->value = v;
		/* A number no longer than the old value is padded with
		 * spaces to its length, as memcached rewrites it in place;
		 * the item stays stale or won, as memcached's does. */
		if ((size_t)len <= oldlen) {
			char *p = admit_lru_update_alloc(up, HDR + oldlen);

			if (p) {
				hdr_put(p, (atomic_fetch_add(&u->st->cas_seq, 1) + 1) |
				           (cas & ~CACHED_CAS_MASK), flags);
				memcpy(p + HDR, num, (size_t)len);
				memset(p + HDR + len, ' ', oldlen - (size_t)len);
			}
			return ADMIT_LRU_STORE_FORCE;
		}
		return put(u, up, flags, NULL, num, (size_t)len, NULL, 0);
	case CACHED_TOUCH:
		if (!found) {
			u->r = CACHED_NOT_FOUND;
			return ADMIT_LRU_KEEP;
		}
		/* memcached's touch keeps the CAS unique: a gets before it
		 * still guards a cas after it. */
		u->r = CACHED_TOUCHED;
		up->expires = u->expires;
		return put(u, up, flags, &cas, old, oldlen, NULL, 0);
	case CACHED_GAT:
	case CACHED_GATS:
		if (!found) {
			u->r = CACHED_NOT_FOUND;
			return ADMIT_LRU_KEEP;
		}
		/* A touch that lends the item to the reader as well. */
		u->r = CACHED_TOUCHED;
		up->expires = u->expires;
		{
			struct cached_item it = { flags, cas & CACHED_CAS_MASK,
			                          old, oldlen };

			u->fn(&it, u->arg);
		}
		return put(u, up, flags, &cas, old, oldlen, NULL, 0);
	default:
		u->r = CACHED_NOMEM;  /* not a read-modify-write: cannot happen */
		return ADMIT_LRU_KEEP;
	}
}

/* Runs req as one admit_lru_compute. */
static enum cached_result
compute(struct cached_store *st, struct cached_scratch *s,
        const struct cached_req *req, const char *data, uint64_t *value)
{
	struct upd u = { .st = st, .req = req, .data = data, .r = CACHED_NOMEM };
	uint64_t h = begin(st, s, req->key, req->klen);
	enum admit_status rc;

	u.expires = expires_at(s->lru, req->exptime);
	rc = admit_lru_compute_hashed(s->lru, h, req->key, req->klen, updater, &u);
	hz_release(st, s);
	switch (rc) {
	case ADMIT_OK:
		if (u.r == CACHED_NUMBER && value)
			*value = u.value;
		return u.r;
	case ADMIT_REJECTED:  /* forced, yet dropped at once: no room */
		return CACHED_NOMEM;
	case ADMIT_ETOOBIG:
		return CACHED_TOO_LARGE;
	default:
		return CACHED_NOMEM;
	}
}

enum cached_result
cached_store_update(struct cached_store *st, struct cached_scratch *s,
                    const struct cached_req *req, const char *data)
{
	size_t n = (size_t)req->bytes;
	char hdr[HDR];
	struct admit_lru_part parts[2] = { { hdr, HDR }, { data, 0 } };
	uint64_t h;
	enum admit_status rc;

	if (req->bytes > st->max_item)
		return CACHED_TOO_LARGE;
	if (req->cmd != CACHED_SET)
		return compute(st, s, req, data, NULL);
	/* A set reads nothing: one admit_lru_set_parts of the header and
	 * the data, each copied once, straight into the entry. */
	hdr_put(hdr, atomic_fetch_add(&st->cas_seq, 1) + 1, req->flags);
	parts[1].len = n;
	h = begin(st, s, req->key, req->klen);
	rc = admit_lru_set_parts_hashed(s->lru, h, req->key, req->klen, parts, 2,
	                                expires_at(s->lru, req->exptime));
	hz_release(st, s);
	switch (rc) {
	case ADMIT_OK:
	case ADMIT_REJECTED:  /* stored, then turned away by admission */
		return CACHED_STORED;
	case ADMIT_ETOOBIG:
		return CACHED_TOO_LARGE;
	default:
		return CACHED_NOMEM;
	}
}

enum cached_result
cached_store_delete(struct cached_store *st, struct cached_scratch *s,
                    const char *key, size_t klen)
{
	uint64_t h = begin(st, s, key, klen);
	enum admit_status rc = admit_lru_delete_hashed(s->lru, h, key, klen);

	hz_release(st, s);
	return rc == ADMIT_OK ? CACHED_DELETED : CACHED_NOT_FOUND;
}

enum cached_result
cached_store_arith(struct cached_store *st, struct cached_scratch *s,
                   const struct cached_req *req, uint64_t *value)
{
	return compute(st, s, req, NULL, value);
}

enum cached_result
cached_store_touch(struct cached_store *st, struct cached_scratch *s,
                   const struct cached_req *req)
{
	return compute(st, s, req, NULL, NULL);
}

enum cached_lookup
cached_store_gat(struct cached_store *st, struct cached_scratch *s,
                 const char *key, size_t klen, int64_t exptime,
                 cached_reader_t fn, void *arg)
{
	struct cached_req req = { .cmd = CACHED_GAT,
	                          .key = key, .klen = klen, .exptime = exptime };
	struct upd u = { .st = st, .req = &req, .r = CACHED_NOMEM, .fn = fn,
	                 .arg = arg };
	uint64_t h = begin(st, s, key, klen);

	u.expires = expires_at(s->lru, exptime);
	admit_lru_compute_hashed(s->lru, h, key, klen, updater, &u);
	hz_release(st, s);
	return u.r == CACHED_NOT_FOUND ? CACHED_MISS : CACHED_HIT;
}

/* ---- meta commands: one admit_lru_compute each ------------------------- */

struct mupd {
	struct cached_store *st;
	const struct cached_meta *m;
	const char *data;            /* ms: the data block */
	struct admit_lru *lru;
	struct cached_meta_result *res;
	cached_meta_writer_t fn;
	void *arg;
};

/* Seconds left before exp on lru's clock, rounded up; -1 for never. */
static int64_t
ttl_left(struct admit_lru *lru, uint64_t exp)
{
	uint64_t now = admit_lru_now(lru);

	if (!exp)
		return -1;
	return exp <= now ? 0 : (int64_t)((exp - now + NS_PER_S - 1) / NS_PER_S);
}

/* The new value: the header, a, then b (or, b NULL, blen spaces); false
 * when no buffer (admit_lru_compute then reports why). */
static bool
meta_put(struct mupd *u, struct admit_lru_update *up, uint64_t cas,
         uint32_t flags, const char *a, size_t alen, const char *b, size_t blen)
{
	char *p = admit_lru_update_alloc(up, HDR + alen + blen);

	(void)u;
	if (!p)
		return false;
	hdr_put(p, cas, flags);
	if (alen)
		memcpy(p + HDR, a, alen);
	if (blen && b)
		memcpy(p + HDR + alen, b, blen);
	else if (blen)
		memset(p + HDR + alen, ' ', blen);
	return true;
}

static uint64_t
next_cas(struct cached_store *st)
{
	return atomic_fetch_add(&st->cas_seq, 1) + 1;
}

/*
 * An item's expiry as memcached's walk over a meta command's flags leaves
 * it just before flag position `at` (CACHED_META_FLAGS: after them all):
 * from `start`, T and, on an item the command created, N each set it
 * where they stand.
 */
static uint64_t
meta_expiry(const struct cached_meta *m, struct admit_lru *lru, uint64_t start,
            bool created, unsigned at)
{
	bool n = created && m->has_N && m->N_at < at;
	bool t = m->has_T && m->T_at < at;

	if (n && (!t || m->N_at > m->T_at))
		return expires_at(lru, m->N);
	return t ? expires_at(lru, m->T) : start;
}

static enum admit_lru_verdict
meta_decide(struct admit_lru_update *up, void *arg)
{
	struct mupd *u = arg;
	const struct cached_meta *m = u->m;
	struct cached_meta_result *r = u->res;
	const char *old = NULL;
	size_t oldlen = 0;
	uint64_t rawcas = 0, cas = 0, v;
	uint32_t flags = 0;
	bool found = old_item(up, &rawcas, &flags, &old, &oldlen);
	enum admit_lru_verdict verdict = ADMIT_LRU_KEEP;
	char num[24];
	int len;

	cas = rawcas & CACHED_CAS_MASK;
	r->found = found;
	switch (m->cmd) {
	case 'g': {
		/* memcached's walk over the flags stops at a long O. */
		unsigned end = m->long_opaque ? m->O_at : CACHED_META_FLAGS;
		uint64_t exp_R;
		bool created = false;

		if (!found) {
			if (!m->has_N) {
				r->status = CACHED_META_MISS;
				return ADMIT_LRU_KEEP;
			}
			/* Vivify: an empty item whose first reader wins. */
			rawcas = next_cas(u->st);
			cas = rawcas;
			flags = 0;
			old = "";
			oldlen = 0;
			up->expires = 0;
			created = true;
			verdict = ADMIT_LRU_STORE;
		}
		r->ttl_t = ttl_left(u->lru, meta_expiry(m, u->lru, up->expires,
		                                        created, m->t_at));
		/* R compares the TTL as the flags before it left it. */
		exp_R = meta_expiry(m, u->lru, up->expires, created, m->R_at);
		if ((m->has_T && m->T_at < end) || created) {
			up->expires = meta_expiry(m, u->lru, up->expires, created,
			                          end);
			verdict = ADMIT_LRU_STORE;
		}
		r->won_before = !created && (rawcas & CACHED_CAS_WON);
		r->stale = rawcas & CACHED_CAS_STALE;
		if (created) {
			r->win = true;
		} else if (!(rawcas & CACHED_CAS_WON) &&
		           (r->stale || (m->has_R && m->R_at < end && exp_R &&
		                         ttl_left(u->lru, exp_R) < m->R))) {
			r->win = true;
			verdict = ADMIT_LRU_STORE;
		}
		if (r->win && !m->long_opaque)
			rawcas |= CACHED_CAS_WON;
		r->status = CACHED_META_HIT;
		r->cas = cas;
		r->flags = flags;
		r->data = old;
		r->len = oldlen;
		u->fn(r, u->arg);
		if (verdict == ADMIT_LRU_STORE &&
		    !meta_put(u, up, rawcas, flags, old, oldlen, "", 0))
			r->status = CACHED_META_NOMEM;
		return verdict;
	}
	case 's': {
		uint64_t newcas = 0, bits = 0;
		size_t n = (size_t)m->bytes;

		bool cas_mode = m->has_C && (m->mode == 'S' || m->mode == 'R');
		bool appends = m->mode == 'A' || m->mode == 'P';

		/* As memcached: C makes set and replace a cas; add ignores
		 * it; append and prepend check a non-zero one. */
		if (cas_mode && !found) {
			r->status = CACHED_META_NOT_FOUND;
			return ADMIT_LRU_KEEP;
		}
		if (cas_mode && m->C != cas) {
			/* An invalidation by an older writer: stored, stale
			 * (not for C0, which memcached never takes as older). */
			if (!(m->I && m->C && m->C < cas)) {
				r->status = CACHED_META_EXISTS;
				return ADMIT_LRU_KEEP;
			}
			bits = CACHED_CAS_STALE;
		}
		if ((m->mode == 'E' && found) ||
		    ((appends || m->mode == 'R') && !found)) {
			r->status = CACHED_META_NOT_STORED;
			return ADMIT_LRU_KEEP;
		}
		if (appends && m->has_C && m->C && m->C != cas) {
			r->status = CACHED_META_EXISTS;
			return ADMIT_LRU_KEEP;
		}
		if (n > u->st->max_item || (appends &&
		                            oldlen > u->st->max_item - n)) {
			r->status = CACHED_META_TOO_LARGE;
			return ADMIT_LRU_KEEP;
		}
		newcas = next_cas(u->st);
		r->cas = newcas;
		r->status = CACHED_META_STORED;
		if (appends) {
			if (!(m->mode == 'A'
			      ? meta_put(u, up, newcas | bits, flags, old, oldlen, u->data, n)
			      : meta_put(u, up, newcas | bits, flags, u->data, n, old, oldlen)))
				r->status = CACHED_META_NOMEM;
			return ADMIT_LRU_STORE;
		}
		up->expires = expires_at(u->lru, m->has_T ? m->T : 0);
		if (!meta_put(u, up, newcas | bits, m->has_F ? m->F : 0, u->data, n,
		              "", 0))
			r->status = CACHED_META_NOMEM;
		return ADMIT_LRU_STORE;
	}
	case 'd':
		if (!found) {
			r->status = CACHED_META_NOT_FOUND;
			return ADMIT_LRU_KEEP;
		}
		if (m->has_C && m->C != cas) {
			r->status = CACHED_META_EXISTS;
			return ADMIT_LRU_KEEP;
		}
		r->status = CACHED_META_DELETED;
		if (!m->I)
			return ADMIT_LRU_REMOVE;
		/* Invalidate: the item stays, stale, for one reader to win. */
		if (m->has_T)
			up->expires = expires_at(u->lru, m->T);
		if (!meta_put(u, up, next_cas(u->st) | CACHED_CAS_STALE, flags,
		              old, oldlen, "", 0))
			r->status = CACHED_META_NOMEM;
		return ADMIT_LRU_STORE;
	default: /* 'a' */
		if (!found) {
			if (!m->has_N) {
				r->status = CACHED_META_NOT_FOUND;
				return ADMIT_LRU_KEEP;
			}
			v = m->J;
			up->expires = 0;
			oldlen = 0;
		} else {
			/* memcached's order: an empty value, a non-zero C
			 * that differs, then a value that is no number. */
			if (!oldlen) {
				r->status = CACHED_META_NON_NUMERIC;
				return ADMIT_LRU_KEEP;
			}
			if (m->has_C && m->C && m->C != cas) {
				r->status = CACHED_META_EXISTS;
				return ADMIT_LRU_KEEP;
			}
			if (!cached_strtoull(old, oldlen, &v)) {
				r->status = CACHED_META_NON_NUMERIC;
				return ADMIT_LRU_KEEP;
			}
			if (m->mode == '+')
				v += m->D;
			else
				v = m->D > v ? 0 : v - m->D;
		}
		len = snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
		r->status = CACHED_META_HIT;
		r->cas = next_cas(u->st);
		r->flags = flags;
		r->data = num;
		r->len = (size_t)len;
		r->ttl_t = ttl_left(u->lru, meta_expiry(m, u->lru, up->expires,
		                                        !found, m->t_at));
		/* memcached's walk over the flags stops at a long O. */
		up->expires = meta_expiry(m, u->lru, up->expires, !found,
		                          m->long_opaque ? m->O_at
		                                         : CACHED_META_FLAGS);
		u->fn(r, u->arg);
		/* A number that fits the old value's length is written in
		 * place, as memcached does: padded with spaces to that length,
		 * the item keeping its stale and won marks; a longer one is a
		 * new item without them. */
		if (!meta_put(u, up, r->cas | ((size_t)len <= oldlen ?
		                               rawcas & ~CACHED_CAS_MASK : 0),
		              flags, num, (size_t)len, NULL,
		              (size_t)len < oldlen ? oldlen - (size_t)len : 0))
			r->status = CACHED_META_NOMEM;
		return ADMIT_LRU_STORE;
	}
}

/* meta_decide's verdict, with every store forced past admission but an
 * ms in set mode's: the others' replies promise the item is there (an ms
 * in add mode used as a lock, mg's win token on a vivified item). */
static enum admit_lru_verdict
meta_updater(struct admit_lru_update *up, void *arg)
{
	struct mupd *u = arg;
	const struct cached_meta *m = u->m;
	enum admit_lru_verdict v = meta_decide(up, arg);

	if (v == ADMIT_LRU_STORE && !(m->cmd == 's' && m->mode == 'S' && !m->has_C))
		v = ADMIT_LRU_STORE_FORCE;
	return v;
}

enum cached_meta_status
cached_store_meta(struct cached_store *st, struct cached_scratch *s,
                  const struct cached_meta *m, const char *data,
                  struct cached_meta_result *res, cached_meta_writer_t fn,
                  void *arg)
{
	struct mupd u = { .st = st, .m = m, .data = data, .res = res, .fn = fn,
	                  .arg = arg };
	uint64_t h = begin(st, s, m->key, m->klen);
	enum admit_status rc;

	memset(res, 0, sizeof(*res));
	u.lru = s->lru;
	rc = admit_lru_compute_hashed(s->lru, h, m->key, m->klen, meta_updater, &u);
	hz_release(st, s);
	if (rc == ADMIT_ETOOBIG)
		res->status = CACHED_META_TOO_LARGE;
	else if (rc == ADMIT_REJECTED && res->status == CACHED_META_STORED &&
	         (m->mode != 'S' || m->has_C))
		res->status = CACHED_META_NOMEM;  /* forced, yet dropped at once */
	else if (rc != ADMIT_OK && rc != ADMIT_REJECTED)
		res->status = CACHED_META_NOMEM;
	return res->status;
}

void
cached_store_stats(struct cached_store *st, struct cached_store_stats *out)
{
	struct admit_lru_stats *ls = &out->lru;

	flush_due(st);
	/* Under flush_mu no swap can free the admit_lru read here. */
	pthread_mutex_lock(&st->flush_mu);
	if (admit_lru_stats(atomic_load(&st->lru), ls) != ADMIT_OK)
		memset(ls, 0, sizeof(*ls));
	add_stats(ls, &st->base);
	pthread_mutex_unlock(&st->flush_mu);
}

/* Once a second: a due delayed flush, then the expired items of every
 * shard (sets reclaim them too, but only on the shards they touch). */
static void *
maint_main(void *arg)
{
	struct cached_store *st = arg;
	struct cached_scratch *s = &st->maint_scratch;

	for (;;) {
		struct timespec until;

		flush_due(st);
		hz_acquire(st, s);
		admit_lru_expire(s->lru);
		hz_release(st, s);
		pthread_mutex_lock(&st->maint_mu);
		if (!st->stopping) {
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 1;
			pthread_cond_timedwait(&st->maint_cv, &st->maint_mu, &until);
		}
		if (st->stopping) {
			pthread_mutex_unlock(&st->maint_mu);
			return NULL;
		}
		pthread_mutex_unlock(&st->maint_mu);
	}
}
