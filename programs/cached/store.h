/*
 * store.h - admit-cached's items on top of admit_lru.
 *
 * An item is stored in admit_lru as one value: a header (the CAS unique,
 * then the flags unless they are 0: 8 or 12 bytes) followed by the data;
 * its expiry time is the entry's own (admit_lru_set_expiring), so an
 * expired item is invisible at once and its capacity is reclaimed by
 * admit_lru's timer wheels.  Each command hashes
 * its key once (admit_lru_hash) and makes one _hashed call: set and delete
 * directly, add, replace, append, prepend, cas, incr, decr and touch as one
 * admit_lru_compute, which reads, decides and writes under the key's shard
 * mutex, so each key's changes are atomic with no lock of ours.  A get
 * lends the item to the caller's reader inside admit_lru's read section
 * (admit_lru_get_with): the data is copied once, by the reader.
 *
 * flush_all empties the cache in place (admit_lru_clear: the capacity is
 * free at once); a maintenance thread carries out a due delayed flush_all
 * and removes expired items from every shard once a second
 * (admit_lru_expire).
 * Memory: --memory for the items as admit_lru charges them, plus 32 bytes
 * per item stored with an expiry time or by a read-modify-write command
 * (admit_lru does not charge them).  A set's header and data go to
 * admit_lru_set_parts, copied once, from the connection's buffer straight
 * into the entry.
 */
#ifndef CACHED_STORE_H
#define CACHED_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <admit/lru.h>

#include "meta.h"
#include "proto.h"

/* The CAS unique's three top bits: bits 63 and 62 are the meta commands'
 * state of an item, stale (invalidated by md I or ms I) and a win token
 * already handed out; bit 61 belongs to the item header alone (store_impl.h:
 * flags follow the unique), which hdr_get strips, so no caller sees it.
 * Uniques are counted from 1 and never reach 2^61: they take bits 0..60. */
#define CACHED_CAS_STALE (UINT64_C(1) << 63)
#define CACHED_CAS_WON (UINT64_C(1) << 62)
#define CACHED_CAS_HDR_FLAGS (UINT64_C(1) << 61)
#define CACHED_CAS_MASK (CACHED_CAS_HDR_FLAGS - 1)

struct cached_store;

/* What a command got; the server turns it into a reply line. */
enum cached_result {
	CACHED_STORED, CACHED_NOT_STORED, CACHED_EXISTS, CACHED_NOT_FOUND,
	CACHED_DELETED, CACHED_TOUCHED, CACHED_NUMBER, CACHED_NON_NUMERIC,
	CACHED_TOO_LARGE, CACHED_NOMEM,
};

/* An item lent to a reader: data points into the cache, valid only until
 * the reader returns. */
struct cached_item {
	uint32_t flags;
	uint64_t cas;
	const char *data;
	size_t len;
};

/* How a lookup went.  CACHED_EXPIRED and CACHED_FLUSHED are never
 * returned: an expired or flushed item is absent (a miss). */
enum cached_lookup { CACHED_HIT, CACHED_MISS, CACHED_EXPIRED, CACHED_FLUSHED };

/*
 * A reader of a hit (cached_store_get): called once, inside admit_lru's
 * read section.  It may copy the data out; it must not block, keep a
 * pointer into it, or call the store.
 */
typedef void (*cached_reader_t)(const struct cached_item *it, void *arg);

/* Per-thread state of the store's calls. */
struct cached_scratch {
	struct admit_lru *lru;   /* the cache the current command uses */
};

struct cached_store_stats {
	struct admit_lru_stats lru;   /* the cache's counters (a flush keeps
	                               * them) */
};

/* A store of memory_bytes for items of up to max_item bytes, with
 * admission or plain LRU; seed is the cache's hash seed (0 = random: a
 * state file gives the saved one back, so each key has its shard of
 * before).  Errors: ENOMEM, EINVAL (admit_lru_new refused it, said on
 * stderr). */
int cached_store_new(uint64_t memory_bytes, size_t max_item, bool admission,
                     uint64_t seed, struct cached_store **out);
void cached_store_free(struct cached_store *st);
/* One scratch per thread that calls the functions below.  Returns 0. */
int cached_scratch_init(struct cached_scratch *s, struct cached_store *st);
void cached_scratch_free(struct cached_scratch *s);

/* Looks key up; on CACHED_HIT, fn(item, arg) has been called once with
 * it (see cached_reader_t).  CACHED_MISS otherwise. */
enum cached_lookup cached_store_get(struct cached_store *st,
                                    struct cached_scratch *s, const char *key,
                                    size_t klen, cached_reader_t fn, void *arg);

/* set/add/replace/append/prepend/cas of data[0..req->bytes). */
enum cached_result cached_store_update(struct cached_store *st,
                                       struct cached_scratch *s,
                                       const struct cached_req *req,
                                       const char *data);
/* The same, giving the stored item's CAS unique in *cas (may be NULL); a
 * non-zero req->cas makes append and prepend compare it first (the binary
 * protocol's), CACHED_EXISTS when it differs. */
enum cached_result cached_store_update_cas(struct cached_store *st,
                                           struct cached_scratch *s,
                                           const struct cached_req *req,
                                           const char *data, uint64_t *cas);
enum cached_result cached_store_delete(struct cached_store *st,
                                       struct cached_scratch *s,
                                       const char *key, size_t klen);
/* incr/decr; CACHED_NUMBER sets *value. */
enum cached_result cached_store_arith(struct cached_store *st,
                                      struct cached_scratch *s,
                                      const struct cached_req *req,
                                      uint64_t *value);
/* incr/decr, giving the item's new CAS unique in *cas; a non-zero
 * req->cas must match the item's (CACHED_EXISTS otherwise). */
enum cached_result cached_store_arith_cas(struct cached_store *st,
                                          struct cached_scratch *s,
                                          const struct cached_req *req,
                                          uint64_t *value, uint64_t *cas);
/* delete; a non-zero cas must match the item's (CACHED_EXISTS otherwise). */
enum cached_result cached_store_delete_cas(struct cached_store *st,
                                           struct cached_scratch *s,
                                           const char *key, size_t klen,
                                           uint64_t cas);
/* gat/gats: as cached_store_get, and on CACHED_HIT the item's expiry is
 * now exptime's (its CAS unique unchanged; fn sees it before). */
enum cached_lookup cached_store_gat(struct cached_store *st,
                                    struct cached_scratch *s, const char *key,
                                    size_t klen, int64_t exptime,
                                    cached_reader_t fn, void *arg);
enum cached_result cached_store_touch(struct cached_store *st,
                                      struct cached_scratch *s,
                                      const struct cached_req *req);
/* flush_all: delay 0 (or negative) means now: every item goes and its
 * capacity is free when this returns.  A positive delay (seconds, or a Unix
 * time above 30 days) removes, when it comes, the items stored before it;
 * it replaces a pending one.  Must not be called by a thread inside another
 * store call.  Returns 0. */
int cached_store_flush(struct cached_store *st, int64_t delay);
void cached_store_stats(struct cached_store *st, struct cached_store_stats *out);

/* What a meta command found and did. */
enum cached_meta_status {
	CACHED_META_HIT,        /* mg/ma: the item (data, len) is given */
	CACHED_META_MISS,       /* mg: absent */
	CACHED_META_STORED,     /* ms */
	CACHED_META_NOT_STORED, /* ms: the mode's condition failed */
	CACHED_META_EXISTS,     /* ms/md/ma: C did not match */
	CACHED_META_NOT_FOUND,  /* ms with C, md, ma: absent */
	CACHED_META_DELETED,    /* md (or invalidated) */
	CACHED_META_NON_NUMERIC,/* ma */
	CACHED_META_TOO_LARGE,  /* ms */
	CACHED_META_NOMEM,
};

struct cached_meta_result {
	enum cached_meta_status status;
	bool found;                    /* the key was present */
	uint64_t cas;                  /* the item's (ms, ma: the new one) */
	uint32_t flags;
	const char *data;              /* HIT: valid inside the writer only */
	size_t len;
	int64_t ttl_t;                 /* seconds left where its t flag
	                                * stands (-1 = never): what t shows */
	bool won_before, stale, win;   /* mg: Z, X and W */
};

/* Called once, under the key's shard mutex, on a HIT (mg, ma): formats the
 * reply; the same rules as cached_reader_t. */
typedef void (*cached_meta_writer_t)(const struct cached_meta_result *r,
                                     void *arg);

/* mg, ms (data: its block of m->bytes), md or ma, as one admit_lru_compute;
 * *res says what happened (also returned). */
enum cached_meta_status cached_store_meta(struct cached_store *st,
                                          struct cached_scratch *s,
                                          const struct cached_meta *m,
                                          const char *data,
                                          struct cached_meta_result *res,
                                          cached_meta_writer_t fn, void *arg);

#endif /* CACHED_STORE_H */
