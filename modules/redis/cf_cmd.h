/*
 * cf_cmd.h - what the command handlers share: RedisBloom's error replies,
 * key access, and the handlers that live outside admit_redis.c.
 */
#ifndef ADMIT_REDIS_CF_CMD_H
#define ADMIT_REDIS_CF_CMD_H

#include <stdbool.h>

#include "cf_type.h"
#include "redis_api.h"

/* RedisBloom's error replies, to the letter (some without an error code):
 * clients may compare them. */
#define ERR_FULL "Filter is full"
#define ERR_NOTFOUND "ERR not found"
#define ERR_DEL_NOTFOUND "Not found"
#define ERR_EXISTS "ERR item exists"
#define ERR_CAPACITY "Bad capacity"
#define ERR_MIN_CAPACITY "Capacity must be at least (BucketSize * 2)"
#define ERR_POSITION "Invalid position"
#define ERR_NOMEM "Memory allocation failure"
#define ERR_CHUNK "Couldn't load chunk!"
/* admit's own: a capacity whose tables the server cannot hold. */
#define ERR_TOO_BIG_MAXMEMORY "OOM the filter's tables would take used " \
	"memory past 'maxmemory'"
#define ERR_TOO_BIG_MACHINE "ERR capacity too large: the filter's tables " \
	"would take more than this machine's memory"

/*
 * open_cf - open key name for a command: *key gets it (NULL for a missing
 * key opened for reading: RedisModule_CloseKey takes NULL), *cf its filter
 * or NULL when the key is empty.  Returns false, having replied WRONGTYPE,
 * for a key of another type.
 */
bool open_cf(RedisModuleCtx *ctx, RedisModuleString *name, int mode,
             RedisModuleKey **key, struct cf **cf);

/* CF.SCANDUMP key iterator, CF.LOADCHUNK key iterator data (cf_chunks.c). */
int cmd_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int cmd_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

#endif
