/*
 * store.h - admit-cached's items on top of admit_lru.
 *
 * An item is stored in admit_lru as one value: a small header (flags,
 * expiry, CAS unique) followed by the data.  Commands that read, decide and
 * write (add, replace, append, prepend, cas, incr, decr, touch) hold one of
 * a striped array of mutexes chosen by the key's hash for the whole
 * sequence; every write, plain set and delete included, takes that mutex,
 * so each key's changes are atomic.  Reads take no mutex of ours: one
 * admit_lru_get is atomic by itself.
 *
 * flush_all swaps in an empty admit_lru (the capacity is free at once); a
 * reaper thread deletes expired items by expiry time (expiry.h).  Memory:
 * --memory for the items, up to --memory / 32 (at least 64 KiB) for the
 * expiry index, two item-sized buffers per thread (struct cached_scratch).
 */
#ifndef CACHED_STORE_H
#define CACHED_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <admit/lru.h>

#include "proto.h"

struct cached_store;

/* What a command got; the server turns it into a reply line. */
enum cached_result {
	CACHED_STORED, CACHED_NOT_STORED, CACHED_EXISTS, CACHED_NOT_FOUND,
	CACHED_DELETED, CACHED_TOUCHED, CACHED_NUMBER, CACHED_NON_NUMERIC,
	CACHED_TOO_LARGE, CACHED_NOMEM,
};

struct cached_item {
	uint32_t flags;
	uint64_t cas;
	const char *data;   /* into the caller's buffer */
	size_t len;
};

/* How a lookup went.  (CACHED_FLUSHED is no longer returned: flush_all
 * empties the cache at once.) */
enum cached_lookup { CACHED_HIT, CACHED_MISS, CACHED_EXPIRED, CACHED_FLUSHED };

/*
 * Per-thread scratch space: one item's header plus max_item bytes, twice
 * (what is read, and what is built to be written).
 */
struct cached_scratch {
	char *read, *write;
	size_t cap;
	unsigned slot;           /* its hazard slot in the store */
	struct admit_lru *lru;   /* the cache the current command uses */
};

struct cached_store_stats {
	struct admit_lru_stats lru;   /* hits .. evicted summed over flushes */
	uint64_t expiry_indexed;      /* entries in the expiry index */
	uint64_t expiry_index_bytes;
	uint64_t expiry_unindexed;    /* items left to lazy expiry: index full */
	uint64_t reclaimed;           /* expired items the reaper deleted */
};

int cached_store_new(uint64_t memory_bytes, size_t max_item, bool admission,
                     struct cached_store **out);
void cached_store_free(struct cached_store *st);
/* One scratch per thread that calls the functions below; each takes a
 * hazard slot of the store (at most 1023 threads).  Errors: ENOMEM,
 * EMFILE (no slot left). */
int cached_scratch_init(struct cached_scratch *s, struct cached_store *st);
void cached_scratch_free(struct cached_scratch *s);

/* Looks key up; *it is valid on CACHED_HIT only.  An expired or flushed
 * item found is deleted. */
enum cached_lookup cached_store_get(struct cached_store *st,
                                    struct cached_scratch *s, const char *key,
                                    size_t klen, struct cached_item *it);

/* set/add/replace/append/prepend/cas of data[0..req->bytes). */
enum cached_result cached_store_update(struct cached_store *st,
                                       struct cached_scratch *s,
                                       const struct cached_req *req,
                                       const char *data);
enum cached_result cached_store_delete(struct cached_store *st,
                                       struct cached_scratch *s,
                                       const char *key, size_t klen);
/* incr/decr; CACHED_NUMBER sets *value. */
enum cached_result cached_store_arith(struct cached_store *st,
                                      struct cached_scratch *s,
                                      const struct cached_req *req,
                                      uint64_t *value);
enum cached_result cached_store_touch(struct cached_store *st,
                                      struct cached_scratch *s,
                                      const struct cached_req *req);
/* flush_all: delay 0 (or negative) means now: every item goes and its
 * capacity is free when this returns.  A positive delay (seconds, or a Unix
 * time above 30 days) removes, when it comes, the items stored before it;
 * it replaces a pending one.  Must not be called by a thread inside another
 * store call.  Errors: ENOMEM (a new cache could not be made; nothing
 * changed). */
int cached_store_flush(struct cached_store *st, int64_t delay);
void cached_store_stats(struct cached_store *st, struct cached_store_stats *out);

#endif /* CACHED_STORE_H */
