/*
 * store_meta.c - the meta commands' items: mg, ms, md and ma, each one
 * admit_lru_compute whose updater (one function per command) reads,
 * decides and writes under the key's shard mutex.  The CAS unique's top
 * bits carry an item's stale and won marks (store.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "store_impl.h"

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
	size_t h = hdr_len(flags);
	char *p = admit_lru_update_alloc(up, h + alen + blen);

	(void)u;
	if (!p)
		return false;
	hdr_put(p, cas, flags);
	if (alen)
		memcpy(p + h, a, alen);
	if (blen && b)
		memcpy(p + h + alen, b, blen);
	else if (blen)
		memset(p + h + alen, ' ', blen);
	return true;
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

/* The item a meta command finds: its parts, as old_item gives them. */
struct mold {
	bool found;
	uint64_t rawcas, cas;        /* with and without the state bits */
	uint32_t flags;
	const char *data;
	size_t len;
};

/* mg: the item (vivified by N when absent), its TTL and win state. */
static enum admit_lru_verdict
decide_get(struct mupd *u, struct admit_lru_update *up, struct mold *o)
{
	const struct cached_meta *m = u->m;
	struct cached_meta_result *r = u->res;
	/* memcached's walk over the flags stops at a long O. */
	unsigned end = m->long_opaque ? m->O_at : CACHED_META_FLAGS;
	enum admit_lru_verdict verdict = ADMIT_LRU_KEEP;
	uint64_t exp_R;
	bool created = false;

	if (!o->found) {
		if (!m->has_N) {
			r->status = CACHED_META_MISS;
			return ADMIT_LRU_KEEP;
		}
		/* Vivify: an empty item whose first reader wins. */
		o->rawcas = next_cas(u->st);
		o->cas = o->rawcas;
		o->flags = 0;
		o->data = "";
		o->len = 0;
		up->expires = 0;
		created = true;
		verdict = ADMIT_LRU_STORE;
	}
	r->ttl_t = ttl_left(u->lru, meta_expiry(m, u->lru, up->expires,
	                                        created, m->t_at));
	/* R compares the TTL as the flags before it left it. */
	exp_R = meta_expiry(m, u->lru, up->expires, created, m->R_at);
	if ((m->has_T && m->T_at < end) || created) {
		up->expires = meta_expiry(m, u->lru, up->expires, created, end);
		verdict = ADMIT_LRU_STORE;
	}
	r->won_before = !created && (o->rawcas & CACHED_CAS_WON);
	r->stale = o->rawcas & CACHED_CAS_STALE;
	if (created) {
		r->win = true;
	} else if (!(o->rawcas & CACHED_CAS_WON) &&
	           (r->stale || (m->has_R && m->R_at < end && exp_R &&
	                         ttl_left(u->lru, exp_R) < m->R))) {
		r->win = true;
		verdict = ADMIT_LRU_STORE;
	}
	if (r->win && !m->long_opaque)
		o->rawcas |= CACHED_CAS_WON;
	r->status = CACHED_META_HIT;
	r->cas = o->cas;
	r->flags = o->flags;
	r->data = o->data;
	r->len = o->len;
	u->fn(r, u->arg);
	if (verdict == ADMIT_LRU_STORE &&
	    !meta_put(u, up, o->rawcas, o->flags, o->data, o->len, "", 0))
		r->status = CACHED_META_NOMEM;
	return verdict;
}

/* ms: whether its mode and C let it store; the status when not. */
static bool
set_allowed(struct mupd *u, const struct mold *o, uint64_t *bits)
{
	const struct cached_meta *m = u->m;
	struct cached_meta_result *r = u->res;
	size_t n = (size_t)m->bytes;
	bool cas_mode = m->has_C && (m->mode == 'S' || m->mode == 'R');
	bool appends = m->mode == 'A' || m->mode == 'P';

	/* As memcached: C makes set and replace a cas; add ignores it;
	 * append and prepend check a non-zero one. */
	if (cas_mode && !o->found) {
		r->status = CACHED_META_NOT_FOUND;
		return false;
	}
	if (cas_mode && m->C != o->cas) {
		/* An invalidation by an older writer: stored, stale (not for
		 * C0, which memcached never takes as older). */
		if (!(m->I && m->C && m->C < o->cas)) {
			r->status = CACHED_META_EXISTS;
			return false;
		}
		*bits = CACHED_CAS_STALE;
	}
	if ((m->mode == 'E' && o->found) ||
	    ((appends || m->mode == 'R') && !o->found)) {
		r->status = CACHED_META_NOT_STORED;
		return false;
	}
	if (appends && m->has_C && m->C && m->C != o->cas) {
		r->status = CACHED_META_EXISTS;
		return false;
	}
	if (n > u->st->max_item || (appends && o->len > u->st->max_item - n)) {
		r->status = CACHED_META_TOO_LARGE;
		return false;
	}
	return true;
}

/* ms in each of its modes (set, add, replace, append, prepend). */
static enum admit_lru_verdict
decide_set(struct mupd *u, struct admit_lru_update *up, struct mold *o)
{
	const struct cached_meta *m = u->m;
	struct cached_meta_result *r = u->res;
	size_t n = (size_t)m->bytes;
	uint64_t newcas, bits = 0;

	if (!set_allowed(u, o, &bits))
		return ADMIT_LRU_KEEP;
	newcas = next_cas(u->st);
	r->cas = newcas;
	r->status = CACHED_META_STORED;
	if (m->mode == 'A' || m->mode == 'P') {
		if (!(m->mode == 'A'
		      ? meta_put(u, up, newcas | bits, o->flags, o->data, o->len,
		                 u->data, n)
		      : meta_put(u, up, newcas | bits, o->flags, u->data, n,
		                 o->data, o->len)))
			r->status = CACHED_META_NOMEM;
		return ADMIT_LRU_STORE;
	}
	up->expires = expires_at(u->lru, m->has_T ? m->T : 0);
	if (!meta_put(u, up, newcas | bits, m->has_F ? m->F : 0, u->data, n,
	              "", 0))
		r->status = CACHED_META_NOMEM;
	return ADMIT_LRU_STORE;
}

/* md: removes the item, or with I marks it stale. */
static enum admit_lru_verdict
decide_delete(struct mupd *u, struct admit_lru_update *up, struct mold *o)
{
	const struct cached_meta *m = u->m;
	struct cached_meta_result *r = u->res;

	if (!o->found) {
		r->status = CACHED_META_NOT_FOUND;
		return ADMIT_LRU_KEEP;
	}
	if (m->has_C && m->C != o->cas) {
		r->status = CACHED_META_EXISTS;
		return ADMIT_LRU_KEEP;
	}
	r->status = CACHED_META_DELETED;
	if (!m->I)
		return ADMIT_LRU_REMOVE;
	/* Invalidate: the item stays, stale, for one reader to win. */
	if (m->has_T)
		up->expires = expires_at(u->lru, m->T);
	if (!meta_put(u, up, next_cas(u->st) | CACHED_CAS_STALE, o->flags,
	              o->data, o->len, "", 0))
		r->status = CACHED_META_NOMEM;
	return ADMIT_LRU_STORE;
}

/* ma: the new number in *v, or false with the status set. */
static bool
arith_value(struct mupd *u, struct admit_lru_update *up, struct mold *o,
            uint64_t *v)
{
	const struct cached_meta *m = u->m;
	struct cached_meta_result *r = u->res;

	if (!o->found) {
		if (!m->has_N) {
			r->status = CACHED_META_NOT_FOUND;
			return false;
		}
		*v = m->J;
		up->expires = 0;
		o->len = 0;
		return true;
	}
	/* memcached's order: an empty value, a non-zero C that differs,
	 * then a value that is no number. */
	if (!o->len) {
		r->status = CACHED_META_NON_NUMERIC;
		return false;
	}
	if (m->has_C && m->C && m->C != o->cas) {
		r->status = CACHED_META_EXISTS;
		return false;
	}
	if (!cached_strtoull(o->data, o->len, v)) {
		r->status = CACHED_META_NON_NUMERIC;
		return false;
	}
	if (m->mode == '+')
		*v += m->D;
	else
		*v = m->D > *v ? 0 : *v - m->D;
	return true;
}

/* ma: increments or decrements (creates with N), and lends the number. */
static enum admit_lru_verdict
decide_arith(struct mupd *u, struct admit_lru_update *up, struct mold *o)
{
	const struct cached_meta *m = u->m;
	struct cached_meta_result *r = u->res;
	char num[24];
	uint64_t v;
	size_t len;

	if (!arith_value(u, up, o, &v))
		return ADMIT_LRU_KEEP;
	len = (size_t)snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
	r->status = CACHED_META_HIT;
	r->cas = next_cas(u->st);
	r->flags = o->flags;
	r->data = num;
	r->len = len;
	r->ttl_t = ttl_left(u->lru, meta_expiry(m, u->lru, up->expires,
	                                        !o->found, m->t_at));
	/* memcached's walk over the flags stops at a long O. */
	up->expires = meta_expiry(m, u->lru, up->expires, !o->found,
	                          m->long_opaque ? m->O_at : CACHED_META_FLAGS);
	u->fn(r, u->arg);
	/* A number that fits the old value's length is written in place, as
	 * memcached does: padded with spaces to that length, the item keeping
	 * its stale and won marks; a longer one is a new item without them. */
	if (!meta_put(u, up, r->cas | (len <= o->len ?
	                               o->rawcas & ~CACHED_CAS_MASK : 0),
	              o->flags, num, len, NULL, len < o->len ? o->len - len : 0))
		r->status = CACHED_META_NOMEM;
	return ADMIT_LRU_STORE;
}

static enum admit_lru_verdict
meta_decide(struct admit_lru_update *up, void *arg)
{
	struct mupd *u = arg;
	struct mold o = { 0 };

	o.found = old_item(up, &o.rawcas, &o.flags, &o.data, &o.len);
	o.cas = o.rawcas & CACHED_CAS_MASK;
	u->res->found = o.found;
	switch (u->m->cmd) {
	case 'g': return decide_get(u, up, &o);
	case 's': return decide_set(u, up, &o);
	case 'd': return decide_delete(u, up, &o);
	default: return decide_arith(u, up, &o);  /* 'a' */
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
	end_cmd(st, s);
	if (rc == ADMIT_ETOOBIG)
		res->status = CACHED_META_TOO_LARGE;
	else if (rc == ADMIT_REJECTED && res->status == CACHED_META_STORED &&
	         (m->mode != 'S' || m->has_C))
		res->status = CACHED_META_NOMEM;  /* forced, yet dropped at once */
	else if (rc != ADMIT_OK && rc != ADMIT_REJECTED)
		res->status = CACHED_META_NOMEM;
	return res->status;
}

