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

/* How a lookup went. */
enum cached_lookup { CACHED_HIT, CACHED_MISS, CACHED_EXPIRED, CACHED_FLUSHED };

/*
 * Per-thread scratch space: one item's header plus max_item bytes, twice
 * (what is read, and what is built to be written).
 */
struct cached_scratch {
	char *read, *write;
	size_t cap;
};

int cached_store_new(uint64_t memory_bytes, size_t max_item, bool admission,
                     struct cached_store **out);
void cached_store_free(struct cached_store *st);
int cached_scratch_init(struct cached_scratch *s, const struct cached_store *st);
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
/* flush_all: delay 0 (or negative) means now. */
void cached_store_flush(struct cached_store *st, int64_t delay);
void cached_store_stats(struct cached_store *st, struct admit_lru_stats *out);

#endif /* CACHED_STORE_H */
