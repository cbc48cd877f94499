/*
 * redis_api.h - the part of the Redis module API that admit_redis.c uses,
 * declared here from the module API reference
 * (https://redis.io/docs/latest/develop/reference/modules/), because Debian
 * ships no redismodule.h.
 *
 * How the API reaches a module: Redis calls RedisModule_OnLoad(ctx, argv,
 * argc); the first word of the opaque context is a function
 * "GetApi(name, &pointer)" that fills one function pointer by its name
 * ("RedisModule_OpenKey", ...) and returns 0 on success.  rm_api_init()
 * below fetches every pointer this module uses that way, then registers the
 * module's name (SetModuleAttribs).  Every entry is in Redis 6.0's API, but
 * TryAlloc (7.0), which is optional: the module loads on Redis 6.0 and
 * later and on Valkey.
 *
 * Every struct is opaque except the type-methods table, whose layout is the
 * reference's: a version word, then the callbacks in a fixed order; version 1
 * stops after free.
 */
#ifndef ADMIT_REDIS_API_H
#define ADMIT_REDIS_API_H

#include <stddef.h>
#include <stdint.h>

#define RM_OK 0
#define RM_ERR 1
#define RM_APIVER_1 1
#define RM_TYPE_METHOD_VERSION 1

/* SetModuleOptions: the module's rdb_load checks RedisModule_IsIOError, so
 * a short read fails the load cleanly and a replica may load diskless; and
 * it keeps no state tied to the keyspace that a replica serving reads
 * while the new data loads aside (repl-diskless-load swapdb) would upset. */
#define RM_OPTIONS_HANDLE_IO_ERRORS (1 << 0)
#define RM_OPTIONS_HANDLE_REPL_ASYNC_LOAD (1 << 2)

/* OpenKey modes. */
#define RM_READ (1 << 0)
#define RM_WRITE (1 << 1)

/* KeyType answers used here. */
#define RM_KEYTYPE_EMPTY 0
#define RM_KEYTYPE_MODULE 6

#define RM_WRONGTYPE \
	"WRONGTYPE Operation against a key holding the wrong kind of value"

typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleKey RedisModuleKey;
typedef struct RedisModuleString RedisModuleString;
typedef struct RedisModuleIO RedisModuleIO;
typedef struct RedisModuleType RedisModuleType;
typedef struct RedisModuleDigest RedisModuleDigest;
typedef struct RedisModuleServerInfoData RedisModuleServerInfoData;
typedef uint64_t RedisModuleTimerID;

/* Server events (SubscribeToServerEvent): FLUSHDB, whose data is a
 * flush-info struct naming the database (-1: all). */
typedef struct RedisModuleEvent {
	uint64_t id;
	uint64_t dataver;
} RedisModuleEvent;
#define RM_EVENT_FLUSHDB 2
struct rm_flush_info {
	uint64_t version;
	int32_t sync;
	int32_t dbnum;
};
typedef void (*rm_event_fn)(RedisModuleCtx *ctx, RedisModuleEvent e,
                            uint64_t subevent, void *data);
typedef void (*rm_timer_fn)(RedisModuleCtx *ctx, void *data);

typedef int (*rm_cmd_fn)(RedisModuleCtx *ctx, RedisModuleString **argv,
                         int argc);

/* The type-methods table, version 1. */
struct rm_type_methods {
	uint64_t version;
	void *(*rdb_load)(RedisModuleIO *rdb, int encver);
	void (*rdb_save)(RedisModuleIO *rdb, void *value);
	void (*aof_rewrite)(RedisModuleIO *aof, RedisModuleString *key,
	                    void *value);
	size_t (*mem_usage)(const void *value);
	void (*digest)(RedisModuleDigest *md, void *value);
	void (*free)(void *value);
};

/* The entries used, filled by rm_api_init().  X(name, return, arguments):
 * one list gives both the pointer declarations and the fetch loop. */
#define RM_API_LIST(X) \
	X(SetModuleAttribs, void, (RedisModuleCtx *, const char *, int, int)) \
	X(IsModuleNameBusy, int, (const char *)) \
	X(SetModuleOptions, void, (RedisModuleCtx *, int)) \
	X(CreateCommand, int, (RedisModuleCtx *, const char *, rm_cmd_fn, \
	                       const char *, int, int, int)) \
	X(CreateDataType, RedisModuleType *, (RedisModuleCtx *, const char *, \
	                                      int, struct rm_type_methods *)) \
	X(OpenKey, RedisModuleKey *, (RedisModuleCtx *, RedisModuleString *, int)) \
	X(CloseKey, void, (RedisModuleKey *)) \
	X(KeyType, int, (RedisModuleKey *)) \
	X(ModuleTypeGetType, RedisModuleType *, (RedisModuleKey *)) \
	X(ModuleTypeGetValue, void *, (RedisModuleKey *)) \
	X(ModuleTypeSetValue, int, (RedisModuleKey *, RedisModuleType *, void *)) \
	X(GetSelectedDb, int, (RedisModuleCtx *)) \
	X(WrongArity, int, (RedisModuleCtx *)) \
	X(ReplyWithError, int, (RedisModuleCtx *, const char *)) \
	X(ReplyWithSimpleString, int, (RedisModuleCtx *, const char *)) \
	X(ReplyWithLongLong, int, (RedisModuleCtx *, long long)) \
	X(ReplyWithArray, int, (RedisModuleCtx *, long)) \
	X(ReplyWithStringBuffer, int, (RedisModuleCtx *, const char *, size_t)) \
	X(ReplyWithNull, int, (RedisModuleCtx *)) \
	X(StringPtrLen, const char *, (const RedisModuleString *, size_t *)) \
	X(StringToLongLong, int, (const RedisModuleString *, long long *)) \
	X(ReplicateVerbatim, int, (RedisModuleCtx *)) \
	X(Replicate, int, (RedisModuleCtx *, const char *, const char *, ...)) \
	X(SaveUnsigned, void, (RedisModuleIO *, uint64_t)) \
	X(LoadUnsigned, uint64_t, (RedisModuleIO *)) \
	X(SaveStringBuffer, void, (RedisModuleIO *, const char *, size_t)) \
	X(LoadStringBuffer, char *, (RedisModuleIO *, size_t *)) \
	X(IsIOError, int, (RedisModuleIO *)) \
	X(EmitAOF, void, (RedisModuleIO *, const char *, const char *, ...)) \
	X(DigestAddStringBuffer, void, (RedisModuleDigest *, const char *, size_t)) \
	X(DigestEndSequence, void, (RedisModuleDigest *)) \
	X(Alloc, void *, (size_t)) \
	X(Realloc, void *, (void *, size_t)) \
	X(Free, void, (void *)) \
	X(MallocSize, size_t, (void *)) \
	X(Milliseconds, long long, (void)) \
	X(CreateTimer, RedisModuleTimerID, (RedisModuleCtx *, long long, \
	                                    rm_timer_fn, void *)) \
	X(SubscribeToServerEvent, int, (RedisModuleCtx *, RedisModuleEvent, \
	                                rm_event_fn)) \
	X(GetServerInfo, RedisModuleServerInfoData *, (RedisModuleCtx *, \
	                                               const char *)) \
	X(ServerInfoGetFieldUnsigned, unsigned long long, \
	  (RedisModuleServerInfoData *, const char *, int *)) \
	X(FreeServerInfo, void, (RedisModuleCtx *, RedisModuleServerInfoData *)) \
	X(Log, void, (RedisModuleCtx *, const char *, const char *, ...)) \
	X(LogIOError, void, (RedisModuleIO *, const char *, const char *, ...))

/* Entries a server may lack (TryAlloc: Redis 7.0 and later); NULL then. */
#define RM_API_OPTIONAL(X) \
	X(TryAlloc, void *, (size_t))

#define RM_DECLARE(name, ret, args) extern ret(*RM_##name) args;
RM_API_LIST(RM_DECLARE)
RM_API_OPTIONAL(RM_DECLARE)
#undef RM_DECLARE

/*
 * rm_api_init - fetch every entry of RM_API_LIST from the context Redis
 * passed to RedisModule_OnLoad, and register the module as name.  Returns
 * RM_ERR if an entry is missing (a server too old) or the name is taken.
 */
int rm_api_init(RedisModuleCtx *ctx, const char *name, int version);

#endif /* ADMIT_REDIS_API_H */
