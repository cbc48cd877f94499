/*
 * store_impl.h - what store.c (the text commands' items) and store_meta.c
 * (the meta commands') share: the store itself, the item header, and the
 * steps every command takes (begin, then end_cmd when done).
 */
#ifndef CACHED_STORE_IMPL_H
#define CACHED_STORE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "store.h"

#define REL_EXPTIME_MAX 2592000  /* 30 days: above, an exptime is a Unix time */
#define NS_PER_S UINT64_C(1000000000)

/*
 * The item header in front of the data, charged against --memory with it:
 * the 8-byte CAS unique, then the 4-byte flags only when they are not 0
 * (memcached does not store zero flags either).  Bit 61 of the stored
 * unique (CACHED_CAS_HDR_FLAGS) says whether the flags follow; hdr_put
 * sets it and hdr_get strips it, so a caller gives and gets the unique
 * with the meta commands' bits only, and the state file never sees it.
 * Read and written with memcpy (the cache keeps values unaligned).
 */
#define HDR_MAX 12u   /* the longest header: unique and flags */

/* The header's length for these flags: 8, or 12 when they are not 0. */
static inline size_t
hdr_len(uint32_t flags)
{
	return flags ? HDR_MAX : 8u;
}

/* Writes the header of (cas, flags) at p (hdr_len(flags) bytes, which it
 * returns); cas's bit 61 is the header's own, whatever the caller's. */
static inline size_t
hdr_put(char *p, uint64_t cas, uint32_t flags)
{
	cas &= ~CACHED_CAS_HDR_FLAGS;
	if (flags)
		cas |= CACHED_CAS_HDR_FLAGS;
	memcpy(p, &cas, sizeof(cas));
	if (flags)
		memcpy(p + 8, &flags, sizeof(flags));
	return hdr_len(flags);
}

/* Reads the header of the vlen-byte value at p: *cas (bit 61 stripped)
 * and *flags, and returns the header's length, where the data starts; 0
 * when the value is shorter than its header (not one of ours). */
static inline size_t
hdr_get(const void *p, size_t vlen, uint64_t *cas, uint32_t *flags)
{
	uint64_t c;
	size_t n;

	if (vlen < 8)
		return 0;
	memcpy(&c, p, sizeof(c));
	n = c & CACHED_CAS_HDR_FLAGS ? HDR_MAX : 8u;
	if (vlen < n)
		return 0;
	*flags = 0;
	if (n == HDR_MAX)
		memcpy(flags, (const char *)p + 8, sizeof(*flags));
	*cas = c & ~CACHED_CAS_HDR_FLAGS;
	return n;
}

struct cached_store {
	struct admit_lru *lru;           /* for the store's life: written
	                                  * before any thread that reads it
	                                  * is created */
	uint64_t seed;                   /* the cache's hash seed */
	uint64_t memory_bytes;           /* its byte capacity */
	unsigned shards;                 /* its shards, each given an equal
	                                  * share of memory_bytes */
	size_t max_item;
	atomic_uint_fast64_t cas_seq;    /* last unique handed out */
	atomic_int_fast64_t flush_at;    /* pending delayed flush; 0 = none */
	pthread_mutex_t flush_mu;        /* one flush at a time */
	/* The maintenance thread. */
	pthread_t maint;
	bool maint_started, stopping;    /* under maint_mu */
	pthread_mutex_t maint_mu;
	pthread_cond_t maint_cv;
};

/* memcached's exptime e as an expiry time on lru's clock (store.c). */
uint64_t expires_at(struct admit_lru *lru, int64_t e);
/* Every command: a due delayed flush first, then the key's one hash;
 * end_cmd when the command is done with s->lru. */
uint64_t begin(struct cached_store *st, struct cached_scratch *s,
               const char *key, size_t klen);
void end_cmd(struct cached_store *st, struct cached_scratch *s);
/* Whether up holds one of our items; *cas, *flags, *data, *len its parts. */
bool old_item(const struct admit_lru_update *up, uint64_t *cas,
              uint32_t *flags, const char **data, size_t *len);
/* Carries out a delayed flush_all whose time has come (store_flush.c). */
void flush_due(struct cached_store *st);
/* The maintenance thread: a due flush, then expiry, once a second. */
void *maint_main(void *arg);
/* A fresh CAS unique. */
uint64_t next_cas(struct cached_store *st);

#endif /* CACHED_STORE_IMPL_H */
