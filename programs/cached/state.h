/*
 * state.h - admit-cached's state file (--state-file): every live item
 * written at shutdown, read back at the next start before the server
 * listens.
 *
 * Format, all integers little-endian:
 *   header, 40 bytes: magic "ADMITCSF", format version (u32, 1 or 2), 0
 *     (u32), item count (u64), the cache's hash seed (u64), wall-clock time
 *     of the save (u64, Unix seconds);
 *   count records, each 32 bytes then the key and the data: key length
 *     (u32, 1 .. CACHED_KEY_MAX), data length (u32), flags (u32), the
 *     shard that held it (u32, below ADMIT_LRU_MAX_SHARDS), CAS unique
 *     (u64, with the meta commands' stale and won bits 63 and 62; bit 61,
 *     the item header's own, is never written and ignored when read),
 *     expiry (u64, Unix seconds; 0 = never);
 *   version 2 only: the admission sketch, L bytes as
 *     admit_lru_sketch_export writes them (none for --no-admission), then
 *     L (u64);
 *   trailer, 8 bytes: XXH3-64 (seed 0) of the records (and the sketch)
 *     followed by the header, i.e. of bytes [40, size - 8) then [0, 40)
 *     (the header is written last, when the count is known, so it is
 *     hashed last).
 * Version 2 is written; version 1, the same without the sketch, is read.
 * Records come in admit_lru_foreach's order: shard by shard, each shard's
 * lists from their least to their most recently used entry.  They are
 * loaded coldest first across shards (a shard's k-th record of n at k/n),
 * so a cache made with the saved seed (the same shards for the same keys)
 * gets every shard's order back, and one with fewer or more shards an
 * order as close as the shards' own allow.
 */
#ifndef CACHED_STATE_H
#define CACHED_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define STATE_MAGIC "ADMITCSF"
#define STATE_VERSION 2u            /* written */
#define STATE_VERSION_ITEMS 1u      /* read too: no sketch */
#define STATE_HDR 40u
#define STATE_REC 32u
#define STATE_MAX_SHARDS ADMIT_LRU_MAX_SHARDS
#define STATE_TRAILER 8u

/* A state file read and checked, not yet loaded. */
struct cached_state {
	const unsigned char *p;   /* the whole file */
	size_t n;
	uint64_t count, seed, saved_at;
	const unsigned char *sketch;  /* the admission sketch (version 2) */
	size_t sketch_len;        /* 0: none */
	void *map;                /* what to unmap (NULL: p is the caller's) */
	size_t map_len;
};

/*
 * Checks the n bytes at p as a state file: header, checksum, every record
 * within bounds, exactly count of them ending at the trailer.  Fills
 * *out (pointing into p) and returns NULL when good, or a short reason
 * for refusing it.  Records whose data is larger than max_item are good
 * (they are skipped by cached_state_load).
 */
const char *cached_state_check(const unsigned char *p, size_t n,
                               struct cached_state *out);

/*
 * Opens, maps and checks path.  Returns 0 with *out; ENOENT when there is
 * no file; any other errno-like value for one that cannot be read or is
 * refused, with *why set to the reason (static text or strerror's).
 */
int cached_state_open(const char *path, struct cached_state *out,
                      const char **why);
void cached_state_close(struct cached_state *s);

/* What loading did. */
struct cached_state_counts {
	uint64_t loaded, expired, too_large, failed;
	uint64_t cold;            /* the coldest, left out to fit --memory */
	enum admit_status sketch; /* its import: ADMIT_OK, ADMIT_NOTFOUND (the
	                           * file has none, or the cache no sketch),
	                           * or why it was skipped (ADMIT_EINVAL:
	                           * another --memory) */
};

/*
 * Stores every unexpired record of a checked file into st, coldest first,
 * past admission (ADMIT_LRU_STORE_FORCE), with its flags, CAS unique and
 * expiry; when they would not all fit in --memory, each of st's shards
 * gets the hottest of its records that fit in its share.  Then the
 * admission sketch, if the file has one, replaces the store's, unless it
 * is of another geometry (out->sketch says).  The store's
 * CAS counter then starts above the largest unique loaded.  Loads with a
 * thread per online CPU (up to 8), each over its own shards.  Call before
 * any other thread uses st.  Returns 0, or ENOMEM (nothing loaded).
 */
int cached_state_load(struct cached_store *st, const struct cached_state *s,
                       struct cached_state_counts *out);

/*
 * Writes every live item of st, then its admission sketch, to path
 * atomically: path.tmp is written,
 * fsync'd and renamed over path, then path's directory is fsync'd.  On
 * any error the temporary file is removed and path left as it was.
 * Returns 0 with *count; an errno value otherwise.
 */
int cached_state_save(struct cached_store *st, const char *path,
                      uint64_t *count);

#endif /* CACHED_STATE_H */
