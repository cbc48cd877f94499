/*
 * cf_type.h - the module's data type: a key's value (an admit_chain and
 * the items-deleted count) whose every byte comes from Redis's allocator,
 * and the type's methods (RDB, AOF rewrite, MEMORY USAGE, DEBUG DIGEST).
 *
 * Redis runs every command and every type method on its main thread: no
 * locking here.
 */
#ifndef ADMIT_REDIS_CF_TYPE_H
#define ADMIT_REDIS_CF_TYPE_H

#include <stddef.h>
#include <stdint.h>

#include <admit/chain.h>

#include "redis_api.h"

/* SCANDUMP chunk size: far below Redis's 512 MB bulk limit. */
#define CF_CHUNK ((size_t)16 << 20)

/* A key's value.  bytes: the usable size of every allocation its chain
 * holds (RedisModule_MallocSize), so MEMORY USAGE matches used_memory. */
struct cf {
	struct admit_chain *chain;
	uint64_t deleted;
	size_t bytes;
};

/* The type, once cf_type_create() registered it. */
extern RedisModuleType *cf_type;

/* Registers the type "admit-ckf" with its methods: RM_OK or RM_ERR. */
int cf_type_create(RedisModuleCtx *ctx);

/* RedisModule_TryAlloc where the server has it (NULL when out of memory),
 * RedisModule_Alloc elsewhere (which stops the server then). */
void *cf_try_alloc(size_t size);

/* A new value of capacity with expansion (0: RedisBloom's "never grow",
 * one filter) seeded from seed: ADMIT_OK, ADMIT_NOMEM or the chain's
 * refusal. */
enum admit_status cf_create(uint64_t seed, long long capacity,
                            long long expansion, struct cf **out);

/* A value from a chain's dump of chain_len bytes at buf (checked whole by
 * admit_chain_restore) and the deleted count it goes with. */
enum admit_status cf_restore(const void *buf, size_t chain_len,
                             uint64_t deleted, struct cf **out);

/* The value's dump and trailer (cf_dump.h) in *buf (free() it). */
enum admit_status cf_dump(const struct cf *cf, unsigned char **buf,
                          size_t *len);

/* Frees a value (NULL: nothing). */
void cf_free(void *value);

/* MEMORY USAGE: what the chain holds and the value's own struct. */
size_t cf_mem_usage(const void *value);

#endif
