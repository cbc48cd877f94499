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

/* The item header, 12 bytes in front of the data, each charged against
 * --memory for every item; read and written with memcpy (the cache keeps
 * values unaligned). */
#define HDR 12u

static inline void
hdr_put(char *p, uint64_t cas, uint32_t flags)
{
	memcpy(p, &cas, sizeof(cas));
	memcpy(p + 8, &flags, sizeof(flags));
}

static inline void
hdr_get(const char *p, uint64_t *cas, uint32_t *flags)
{
	memcpy(cas, p, sizeof(*cas));
	memcpy(flags, p + 8, sizeof(*flags));
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
