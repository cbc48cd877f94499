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
 * flush_all empties the live cache with admit_lru_clear before it
 * replies, so its capacity is free at once: every item stored before it
 * is gone, and whatever its client stores after the reply lands in a
 * shard already cleared and stays (a command of another client running
 * meanwhile may land before or after, as in memcached).  A delayed
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
#include <sys/random.h>
#include <time.h>

#include "store_impl.h"


int
cached_store_new(uint64_t memory_bytes, size_t max_item, bool admission,
                 uint64_t seed, struct cached_store **out)
{
	struct admit_lru_config cfg = {
		.capacity_bytes = memory_bytes,
		.seed = seed,
		.policy = admission ? ADMIT_LRU_ADAPTIVE : ADMIT_LRU_PLAIN,
	};
	struct cached_store *st;
	struct admit_lru *lru;
	enum admit_status rc;
	unsigned shards = 16;

	/* Each shard must hold a few of the largest items. */
	while (shards > 1 &&
	       memory_bytes / shards < 4 * (max_item + HDR_MAX + 512))
		shards /= 2;
	cfg.shards = shards;
	if (!cfg.seed &&
	    (getrandom(&cfg.seed, sizeof(cfg.seed), 0) != sizeof(cfg.seed) ||
	     !cfg.seed))
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
	st->lru = lru;
	st->seed = cfg.seed;
	st->memory_bytes = memory_bytes;
	st->shards = shards;
	st->max_item = max_item;
	atomic_init(&st->cas_seq, 0);
	atomic_init(&st->flush_at, 0);
	pthread_mutex_init(&st->flush_mu, NULL);
	pthread_mutex_init(&st->maint_mu, NULL);
	pthread_cond_init(&st->maint_cv, NULL);
	if (pthread_create(&st->maint, NULL, maint_main, st)) {
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
	pthread_mutex_destroy(&st->flush_mu);
	pthread_mutex_destroy(&st->maint_mu);
	pthread_cond_destroy(&st->maint_cv);
	admit_lru_free(st->lru);
	free(st);
}

int
cached_scratch_init(struct cached_scratch *s, struct cached_store *st)
{
	(void)st;
	s->lru = NULL;
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
uint64_t
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

void
end_cmd(struct cached_store *st, struct cached_scratch *s)
{
	(void)st;
	s->lru = NULL;
}

/* Every command: a due delayed flush first, then the key's one hash. */
uint64_t
begin(struct cached_store *st, struct cached_scratch *s, const char *key,
      size_t klen)
{
	flush_due(st);
	s->lru = st->lru;
	return admit_lru_hash(s->lru, key, klen);
}

uint64_t
next_cas(struct cached_store *st)
{
	uint64_t n;

	/* Uniques stay in CACHED_CAS_MASK's bits: the count wraps there,
	 * past 0 (a state file can have left it at the top). */
	do
		n = (atomic_fetch_add(&st->cas_seq, 1) + 1) & CACHED_CAS_MASK;
	while (!n);
	return n;
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
	size_t n = hdr_get(value, vlen, &it.cas, &it.flags);

	if (!n)  /* not one of ours: cannot happen */
		return;
	it.cas &= CACHED_CAS_MASK;
	it.data = (const char *)value + n;
	it.len = vlen - n;
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
	end_cmd(st, s);
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
	uint64_t cas;             /* the stored item's CAS unique */
	cached_reader_t fn;       /* gat: the reader of the item */
	void *arg;
};

/* Whether up holds one of our items; *cas, *flags, *data, *len its parts. */
bool
old_item(const struct admit_lru_update *up, uint64_t *cas, uint32_t *flags,
         const char **data, size_t *len)
{
	size_t n;

	if (!up->found || !(n = hdr_get(up->old, up->old_len, cas, flags)))
		return false;
	*data = (const char *)up->old + n;
	*len = up->old_len - n;
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
	size_t h = hdr_len(flags);
	char *p;

	if (alen > u->st->max_item || blen > u->st->max_item - alen) {
		u->r = CACHED_TOO_LARGE;
		return ADMIT_LRU_KEEP;
	}
	p = admit_lru_update_alloc(up, h + alen + blen);
	if (!p)
		return ADMIT_LRU_STORE_FORCE;
	u->cas = cas ? *cas & CACHED_CAS_MASK : next_cas(u->st);
	hdr_put(p, cas ? *cas : u->cas, flags);
	if (alen)
		memcpy(p + h, a, alen);
	if (blen)
		memcpy(p + h + alen, b, blen);
	return ADMIT_LRU_STORE_FORCE;
}

/* incr and decr of the item found (cas, flags, old, oldlen). */
static enum admit_lru_verdict
arith(struct upd *u, struct admit_lru_update *up, uint64_t cas, uint32_t flags,
      const char *old, size_t oldlen)
{
	const struct cached_req *req = u->req;
	char num[24];
	uint64_t v;
	int len;

	/* memcached's order: an empty value, a non-zero CAS unique that
	 * differs (the binary protocol's), then a value that is no number. */
	if (!oldlen) {
		u->r = CACHED_NON_NUMERIC;
		return ADMIT_LRU_KEEP;
	}
	if (req->cas && (cas & CACHED_CAS_MASK) != req->cas) {
		u->r = CACHED_EXISTS;
		return ADMIT_LRU_KEEP;
	}
	if (!cached_strtoull(old, oldlen, &v)) {
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
	/* A number no longer than the old value is padded with spaces to its
	 * length, as memcached rewrites it in place; the item stays stale or
	 * won, as memcached's does. */
	if ((size_t)len <= oldlen) {
		size_t h = hdr_len(flags);
		char *p = admit_lru_update_alloc(up, h + oldlen);

		if (p) {
			u->cas = next_cas(u->st);
			hdr_put(p, u->cas | (cas & ~CACHED_CAS_MASK), flags);
			memcpy(p + h, num, (size_t)len);
			memset(p + h + len, ' ', oldlen - (size_t)len);
		}
		return ADMIT_LRU_STORE_FORCE;
	}
	return put(u, up, flags, NULL, num, (size_t)len, NULL, 0);
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
	uint64_t cas;
	uint32_t flags;
	bool found = old_item(up, &cas, &flags, &old, &oldlen);

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
		/* A non-zero CAS unique (the binary protocol's) must match,
		 * as in memcached. */
		if (req->cas && (cas & CACHED_CAS_MASK) != req->cas) {
			u->r = CACHED_EXISTS;
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
		return arith(u, up, cas, flags, old, oldlen);
	case CACHED_DELETE:  /* the binary protocol's, with a CAS unique */
		if (!found || (cas & CACHED_CAS_MASK) != req->cas) {
			u->r = found ? CACHED_EXISTS : CACHED_NOT_FOUND;
			return ADMIT_LRU_KEEP;
		}
		u->r = CACHED_DELETED;
		return ADMIT_LRU_REMOVE;
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
        const struct cached_req *req, const char *data, uint64_t *value,
        uint64_t *cas)
{
	struct upd u = { .st = st, .req = req, .data = data, .r = CACHED_NOMEM };
	uint64_t h = begin(st, s, req->key, req->klen);
	enum admit_status rc;

	u.expires = expires_at(s->lru, req->exptime);
	rc = admit_lru_compute_hashed(s->lru, h, req->key, req->klen, updater, &u);
	end_cmd(st, s);
	switch (rc) {
	case ADMIT_OK:
		if (u.r == CACHED_NUMBER && value)
			*value = u.value;
		if (cas)
			*cas = u.cas;
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
	return cached_store_update_cas(st, s, req, data, NULL);
}

enum cached_result
cached_store_update_cas(struct cached_store *st, struct cached_scratch *s,
                        const struct cached_req *req, const char *data,
                        uint64_t *cas)
{
	uint64_t unique;
	size_t n = (size_t)req->bytes;
	char hdr[HDR_MAX];
	struct admit_lru_part parts[2] = { { hdr, 0 }, { data, 0 } };
	uint64_t h;
	enum admit_status rc;

	if (req->bytes > st->max_item)
		return CACHED_TOO_LARGE;
	if (req->cmd != CACHED_SET)
		return compute(st, s, req, data, NULL, cas);
	/* A set reads nothing: one admit_lru_set_parts of the header and
	 * the data, each copied once, straight into the entry. */
	unique = next_cas(st);
	if (cas)
		*cas = unique;
	parts[0].len = hdr_put(hdr, unique, req->flags);
	parts[1].len = n;
	h = begin(st, s, req->key, req->klen);
	rc = admit_lru_set_parts_hashed(s->lru, h, req->key, req->klen, parts, 2,
	                                expires_at(s->lru, req->exptime));
	end_cmd(st, s);
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

	end_cmd(st, s);
	return rc == ADMIT_OK ? CACHED_DELETED : CACHED_NOT_FOUND;
}

enum cached_result
cached_store_arith(struct cached_store *st, struct cached_scratch *s,
                   const struct cached_req *req, uint64_t *value)
{
	return compute(st, s, req, NULL, value, NULL);
}

enum cached_result
cached_store_arith_cas(struct cached_store *st, struct cached_scratch *s,
                       const struct cached_req *req, uint64_t *value,
                       uint64_t *cas)
{
	return compute(st, s, req, NULL, value, cas);
}

enum cached_result
cached_store_delete_cas(struct cached_store *st, struct cached_scratch *s,
                        const char *key, size_t klen, uint64_t cas)
{
	struct cached_req req = { .cmd = CACHED_DELETE, .key = key,
	                          .klen = klen, .cas = cas };

	if (!cas)
		return cached_store_delete(st, s, key, klen);
	return compute(st, s, &req, NULL, NULL, NULL);
}

enum cached_result
cached_store_touch(struct cached_store *st, struct cached_scratch *s,
                   const struct cached_req *req)
{
	return compute(st, s, req, NULL, NULL, NULL);
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
	end_cmd(st, s);
	return u.r == CACHED_NOT_FOUND ? CACHED_MISS : CACHED_HIT;
}
