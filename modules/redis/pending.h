/*
 * pending.h - unfinished CF.LOADCHUNK loads, gathered aside per database
 * and key until their dump is whole.
 *
 * At most CF_MAX_PENDING at once (a new one drops the one whose latest
 * chunk is oldest), each held in Redis's memory and dropped after
 * pending_timeout_ms without a chunk (a timer runs while any waits) and on
 * FLUSHALL / FLUSHDB of its database.  Redis's main thread alone calls
 * these: no locking.
 */
#ifndef ADMIT_REDIS_PENDING_H
#define ADMIT_REDIS_PENDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redis_api.h"

#define CF_MAX_PENDING 16
#define CF_PENDING_TIMEOUT_S 60

struct pending {
	int db;
	char *name;
	size_t name_len;
	unsigned char *buf;
	size_t have;
	long long last_ms; /* when its latest chunk came */
	uint64_t stamp;    /* order of the latest chunks, for eviction */
};

/* How long a load waits for its next chunk (the module's PENDING_TIMEOUT
 * argument, in milliseconds). */
extern long long pending_timeout_ms;

/* Drops the loads of database db (-1: of all) that have waited timeout_ms
 * or more for their next chunk (0: every one); returns in how many
 * milliseconds the first of those left will have waited
 * pending_timeout_ms, -1 if none is left. */
long long pending_expire(int db, long long timeout_ms);

/* The FLUSHDB server event's handler: drops the flushed database's loads. */
void pending_on_flush(RedisModuleCtx *ctx, RedisModuleEvent e,
                      uint64_t subevent, void *data);

/* The load of key name in db, NULL if none. */
struct pending *pending_find(int db, const char *name, size_t len);

/* A new, empty load of key name in db, in a free place or the stalest
 * load's. */
struct pending *pending_new(RedisModuleCtx *ctx, int db, const char *name,
                            size_t len);

/* Empties p's buffer for a load that starts again. */
void pending_restart(struct pending *p);

/* Appends len bytes to p (stamping it as the latest): false, having
 * dropped p, when memory is short. */
bool pending_append(struct pending *p, const char *data, size_t len);

/* Frees p's name and bytes: its place is free again. */
void pending_drop(struct pending *p);

#endif
