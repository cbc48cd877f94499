/*
 * expiry.h - admit-cached's index of items by expiry time: a binary
 * min-heap of (exptime, CAS unique, key), so the reaper thread can delete
 * expired items that no one reads, freeing their capacity.
 *
 * An entry is a hint, not the truth: the item may since have been replaced,
 * deleted or evicted.  The reaper checks the stored item's CAS unique before
 * deleting, so a stale entry costs one lookup when it comes due.  The index
 * holds at most max_bytes (entries and their slot in the heap); past that,
 * new entries are refused and those items expire lazily (invisible to
 * reads at once, reclaimed when read or evicted).
 *
 * Thread-safety: every function may be called from any thread; one mutex
 * inside serialises them.
 */
#ifndef CACHED_EXPIRY_H
#define CACHED_EXPIRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct cached_expiry;

/* What cached_expiry_pop hands back. */
struct cached_expiry_entry {
	uint32_t exptime;
	uint64_t cas;
	size_t klen;
	char key[CACHED_KEY_MAX];
};

/* Creates an empty index of at most max_bytes.  Errors: EINVAL for a NULL
 * out, ENOMEM. */
int cached_expiry_new(size_t max_bytes, struct cached_expiry **out);

/* Frees the index and its entries; NULL is ignored. */
void cached_expiry_free(struct cached_expiry *e);

/* Records that key, stored with CAS unique cas, expires at exptime (Unix
 * seconds, not 0).  False, with nothing recorded, when the key is longer
 * than CACHED_KEY_MAX, the index is at max_bytes, or memory runs out. */
bool cached_expiry_add(struct cached_expiry *e, uint32_t exptime, uint64_t cas,
                       const char *key, size_t klen);

/* Removes the entry that expires first into *out if it expires at or
 * before now; false (and *out untouched) when none is due. */
bool cached_expiry_pop(struct cached_expiry *e, uint32_t now,
                       struct cached_expiry_entry *out);

/* Drops every entry (after flush_all). */
void cached_expiry_clear(struct cached_expiry *e);

/* Entries held, and the bytes they are charged. */
size_t cached_expiry_count(struct cached_expiry *e);
size_t cached_expiry_bytes(struct cached_expiry *e);

/* Entries refused since creation because the index was full. */
uint64_t cached_expiry_refused(struct cached_expiry *e);

#endif /* CACHED_EXPIRY_H */
