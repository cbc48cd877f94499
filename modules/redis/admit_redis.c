/*
 * admit_redis.c - a Redis / Valkey module with RedisBloom-compatible cuckoo
 * filter commands (CF.*), each filter an admit_chain.
 *
 * Load: redis-server --loadmodule /usr/lib/.../admit/admit_redis.so [SEED n]
 *       [PENDING_TIMEOUT seconds]
 *
 * Where it differs from RedisBloom (README "admit in Redis"):
 * - buckets always hold 4 fingerprints of 16 bits; BUCKETSIZE and
 *   MAXITERATIONS are accepted in RedisBloom's ranges and CF.INFO reports the
 *   real values (4; admit's cuckoo path search is breadth-first, at most
 *   CF_REAL_MAX_PATH kicks);
 * - a chain has at most 32 filters, so its false-positive rate stays below
 *   32 x 8 / 2^16 = 0.39 % (CF.INFO "Error rate bound"); a chain also grows
 *   only when its newest filter is at least half full, so adding one item
 *   over and over answers "Filter is full" instead of growing forever;
 * - without EXPANSION a new filter's expansion is 2 (RedisBloom's is 1,
 *   which with the 32 filters both allow stops at 32 x capacity);
 * - SCANDUMP chunks carry admit's chain format (checksummed); LOADCHUNK
 *   gathers them aside and makes the key only when the last one arrived
 *   and the whole dump is verified.
 *
 * Memory: every byte of a filter comes from RedisModule_TryAlloc (Alloc on
 * a server without it) through the chain's allocator, and each filter
 * counts the usable size of what it holds, so MEMORY USAGE is what INFO's
 * used_memory grew by, maxmemory sees filters as it sees strings, and a
 * failed allocation answers an error with nothing changed.  Unfinished
 * LOADCHUNK loads are held in Redis's memory too, at most CF_MAX_PENDING
 * of them, each dropped after PENDING_TIMEOUT seconds without a chunk and
 * on FLUSHALL / FLUSHDB.
 *
 * Redis runs every command on its main thread, so no locking is needed
 * here; the chain's own thread-safety is not relied on.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <admit/chain.h>
#include <admit/cuckoo.h>

#include "hash.h"
#include "snapfile.h"
#include "redis_api.h"

/* RedisBloom's documented defaults and ranges. */
#define CF_DEFAULT_CAPACITY 1024
#define CF_DEFAULT_BUCKETSIZE 2
#define CF_DEFAULT_MAXITER 20
#define CF_MAX_BUCKETSIZE 255
#define CF_MAX_MAXITER 65535
/* admit's own defaults. */
#define CF_DEFAULT_EXPANSION 2
#define CF_REAL_BUCKETSIZE 4
#define CF_REAL_MAX_PATH 5
/* SCANDUMP chunk size: far below Redis's 512 MB bulk limit. */
#define CF_CHUNK ((size_t)16 << 20)
/* Unfinished LOADCHUNK sequences kept at once (the oldest is dropped),
 * and how long one waits for its next chunk by default. */
#define CF_MAX_PENDING 16
#define CF_PENDING_TIMEOUT_S 60

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

#define RM_DEFINE(name, ret, args) ret(*RM_##name) args;
RM_API_LIST(RM_DEFINE)
RM_API_OPTIONAL(RM_DEFINE)
#undef RM_DEFINE

int
rm_api_init(RedisModuleCtx *ctx, const char *name, int version)
{
	int (*get_api)(const char *, void *);

	/* The first word of the context is GetApi (the API reference's
	 * "RedisModule_Init" does the same). */
	memcpy(&get_api, (void *)ctx, sizeof(get_api));
#define RM_FETCH(n, ret, args) \
	if (get_api("RedisModule_" #n, (void *)&RM_##n) != RM_OK) \
		return RM_ERR;
	RM_API_LIST(RM_FETCH)
#undef RM_FETCH
#define RM_FETCH_OPTIONAL(n, ret, args) \
	if (get_api("RedisModule_" #n, (void *)&RM_##n) != RM_OK) \
		RM_##n = NULL;
	RM_API_OPTIONAL(RM_FETCH_OPTIONAL)
#undef RM_FETCH_OPTIONAL
	if (RM_IsModuleNameBusy(name))
		return RM_ERR;
	RM_SetModuleAttribs(ctx, name, version, RM_APIVER_1);
	return RM_OK;
}

static RedisModuleType *cf_type;
static uint64_t module_seed = 0x61646d69745f6366ull; /* "admit_cf" */
static long long pending_timeout_ms = CF_PENDING_TIMEOUT_S * 1000LL;

/* A key's value.  bytes: the usable size of every allocation its chain
 * holds (RedisModule_MallocSize), so MEMORY USAGE matches used_memory. */
struct cf {
	struct admit_chain *chain;
	uint64_t deleted;
	size_t bytes;
};

/* ---- the chain's allocator: Redis's, counted per filter --------------- */

/* NULL when out of memory, where the server has TryAlloc; where it has
 * not, Alloc, which stops the server when out of memory. */
static void *
try_alloc(size_t size)
{
	return RM_TryAlloc ? RM_TryAlloc(size) : RM_Alloc(size);
}

static void *
cf_mem_alloc(void *ctx, size_t size)
{
	struct cf *cf = ctx;
	void *p = try_alloc(size);

	if (p)
		cf->bytes += RM_MallocSize(p);
	return p;
}

static void
cf_mem_free(void *ctx, void *p, size_t size)
{
	struct cf *cf = ctx;

	(void)size;
	cf->bytes -= RM_MallocSize(p);
	RM_Free(p);
}

/* A value with no chain yet, whose chain is to take its memory from
 * *alloc; NULL when even that cannot be allocated. */
static struct cf *
cf_alloc(struct admit_allocator *alloc)
{
	struct cf *cf = try_alloc(sizeof(*cf));

	if (!cf)
		return NULL;
	memset(cf, 0, sizeof(*cf));
	*alloc = (struct admit_allocator){
		.alloc = cf_mem_alloc, .free = cf_mem_free, .ctx = cf,
	};
	return cf;
}

/* ---- helpers ---------------------------------------------------------- */

/* A chain's seed: a function of the key name and the module's seed, so that
 * a replica (or an AOF replay) fed the same commands builds the same chain
 * byte for byte (DEBUG DIGEST agrees). */
static uint64_t
key_seed(RedisModuleString *key)
{
	size_t len;
	const unsigned char *p = (const unsigned char *)RM_StringPtrLen(key, &len);
	uint64_t h = admit_hash(p, len, module_seed);

	return h ? h : 1;
}

static void
cf_free(void *value)
{
	struct cf *cf = value;

	if (!cf)
		return;
	admit_chain_free(cf->chain);
	RM_Free(cf);
}

/* expansion 0 is RedisBloom's "never grow": one filter. */
static enum admit_status
cf_create(RedisModuleString *key, long long capacity, long long expansion,
          struct cf **out)
{
	struct admit_allocator alloc;
	struct admit_chain_config cfg = {
		.capacity = (uint64_t)capacity,
		.expansion = expansion ? (unsigned)expansion : 1,
		.max_filters = expansion ? 0 : 1,
		.stripes = 1, /* one thread: the smallest stripe array */
		.seed = key_seed(key),
		.alloc = &alloc,
	};
	struct cf *cf = cf_alloc(&alloc);
	enum admit_status st;

	if (!cf)
		return ADMIT_NOMEM;
	st = admit_chain_new(&cfg, &cf->chain);
	if (st != ADMIT_OK) {
		RM_Free(cf);
		return st;
	}
	*out = cf;
	return ADMIT_OK;
}

/*
 * A value's dump, as SCANDUMP, AOF rewrites and LOADCHUNK carry it: the
 * chain's dump (admit_chain_dump), then a 24-byte trailer: "ADMITDEL", the
 * items-deleted count, which the chain does not keep, and admit_hash() of
 * those 16 bytes (u64s, little-endian).  A dump without the trailer (older
 * modules) loads with 0 deleted.  The RDB saves the count apart and the
 * chain's dump alone.
 */
#define TRAILER_MAGIC "ADMITDEL"
#define TRAILER_LEN 24

static enum admit_status
cf_dump(const struct cf *cf, unsigned char **buf, size_t *len)
{
	void *chain_buf;
	unsigned char *b;
	size_t n;

	if (admit_chain_dump(cf->chain, &chain_buf, &n) != ADMIT_OK)
		return ADMIT_NOMEM;
	b = realloc(chain_buf, n + TRAILER_LEN);
	if (!b) {
		free(chain_buf);
		return ADMIT_NOMEM;
	}
	memcpy(b + n, TRAILER_MAGIC, 8);
	snap_put64(b + n + 8, cf->deleted);
	snap_put64(b + n + 16, admit_hash(b + n, 16, 0));
	*buf = b;
	*len = n + TRAILER_LEN;
	return ADMIT_OK;
}

/* A value from a chain's dump of chain_len bytes at buf, and the deleted
 * count it goes with. */
static enum admit_status
cf_restore(const void *buf, size_t chain_len, uint64_t deleted,
           struct cf **out)
{
	struct admit_allocator alloc;
	struct cf *cf = cf_alloc(&alloc);
	enum admit_status st;

	if (!cf)
		return ADMIT_NOMEM;
	st = admit_chain_restore_alloc(buf, chain_len, &alloc, &cf->chain);
	if (st != ADMIT_OK) {
		RM_Free(cf);
		return st;
	}
	cf->deleted = deleted;
	*out = cf;
	return ADMIT_OK;
}

/*
 * Whether the server can hold a filter of this capacity, and the error to
 * answer if not.  The rule: its first table (about 2.1 bytes per item,
 * admit/cuckoo.h) must fit in the machine's physical memory, and, when
 * maxmemory is set, in what maxmemory leaves above used_memory.
 */
static const char *
capacity_refused(RedisModuleCtx *ctx, long long capacity)
{
	double bytes = (double)capacity / (4 * 0.95) * 8;
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	RedisModuleServerInfoData *info;
	unsigned long long used, max;

	if (pages > 0 && page > 0 && bytes > (double)pages * (double)page)
		return ERR_TOO_BIG_MACHINE;
	info = RM_GetServerInfo(ctx, "memory");
	if (!info)
		return NULL;
	used = RM_ServerInfoGetFieldUnsigned(info, "used_memory", NULL);
	max = RM_ServerInfoGetFieldUnsigned(info, "maxmemory", NULL);
	RM_FreeServerInfo(ctx, info);
	if (max != 0 && (used >= max || bytes > (double)(max - used)))
		return ERR_TOO_BIG_MAXMEMORY;
	return NULL;
}

static bool
arg_is(RedisModuleString *s, const char *word)
{
	size_t len;
	const char *p = RM_StringPtrLen(s, &len);

	return len == strlen(word) && strncasecmp(p, word, len) == 0;
}

/* Open key for the command: *key gets it (NULL for a missing key opened for
 * reading: RedisModule_CloseKey takes NULL), *cf its filter or NULL when the
 * key is empty.  Returns false, having replied WRONGTYPE, for a key of
 * another type. */
static bool
open_cf(RedisModuleCtx *ctx, RedisModuleString *name, int mode,
        RedisModuleKey **key, struct cf **cf)
{
	int t;

	*key = RM_OpenKey(ctx, name, mode);
	t = RM_KeyType(*key);
	*cf = NULL;
	if (t == RM_KEYTYPE_EMPTY)
		return true;
	if (t != RM_KEYTYPE_MODULE || RM_ModuleTypeGetType(*key) != cf_type) {
		RM_CloseKey(*key);
		RM_ReplyWithError(ctx, RM_WRONGTYPE);
		return false;
	}
	*cf = RM_ModuleTypeGetValue(*key);
	return true;
}

/* Capacity: parsed, at least 2 x the bucket size asked for (RedisBloom's
 * rule), at most what a cuckoo filter takes.  Replies and returns false
 * when it is not. */
static bool
parse_capacity(RedisModuleCtx *ctx, RedisModuleString *s, long long bucket,
               long long *out)
{
	if (RM_StringToLongLong(s, out) != RM_OK ||
	    (*out > 0 && (uint64_t)*out > ADMIT_CUCKOO_MAX_CAPACITY)) {
		RM_ReplyWithError(ctx, ERR_CAPACITY);
		return false;
	}
	if (*out < bucket * 2) {
		RM_ReplyWithError(ctx, ERR_MIN_CAPACITY);
		return false;
	}
	return true;
}

static int
reply_status(RedisModuleCtx *ctx, enum admit_status st)
{
	switch (st) {
	case ADMIT_FULL:
		return RM_ReplyWithError(ctx, ERR_FULL);
	case ADMIT_NOMEM:
		return RM_ReplyWithError(ctx, ERR_NOMEM);
	default:
		return RM_ReplyWithError(ctx, "ERR internal error");
	}
}

/* ---- CF.RESERVE key capacity [BUCKETSIZE n] [MAXITERATIONS n]
 *      [EXPANSION n] ------------------------------------------------------ */

/* Its options in RedisBloom's ranges, with RedisBloom's replies; one given
 * twice is refused (RedisBloom takes the first). */
static const struct reserve_opt {
	const char *name;
	long long min, max;
	const char *parse_err, *range_err, *twice_err;
} reserve_opts[3] = {
	{ "BUCKETSIZE", 1, CF_MAX_BUCKETSIZE, "Couldn't parse BUCKETSIZE",
	  "BUCKETSIZE: value must be an integer between 1 and 255, inclusive.",
	  "ERR BUCKETSIZE given more than once" },
	{ "MAXITERATIONS", 1, CF_MAX_MAXITER, "Couldn't parse MAXITERATIONS",
	  "MAXITERATIONS: value must be an integer between 1 and 65535, "
	  "inclusive.", "ERR MAXITERATIONS given more than once" },
	{ "EXPANSION", 0, ADMIT_CHAIN_MAX_EXPANSION, "Couldn't parse EXPANSION",
	  "EXPANSION: value must be an integer between 0 and 32768, inclusive.",
	  "ERR EXPANSION given more than once" },
};

static int
cmd_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	unsigned seen = 0;
	long long capacity, bucket = CF_DEFAULT_BUCKETSIZE;
	long long maxiter = CF_DEFAULT_MAXITER, expansion = CF_DEFAULT_EXPANSION;
	RedisModuleKey *key;
	struct cf *cf;
	enum admit_status st;
	const char *refused;

	if (argc < 3 || argc % 2 == 0)
		return RM_WrongArity(ctx);
	for (int i = 3; i < argc; i += 2) {
		const struct reserve_opt *o = reserve_opts;
		long long *v;

		while (o < reserve_opts + 3 && !arg_is(argv[i], o->name))
			o++;
		if (o == reserve_opts + 3)
			return RM_ReplyWithError(ctx, "ERR syntax error");
		v = o == reserve_opts ? &bucket : o == reserve_opts + 1 ? &maxiter
		                                                       : &expansion;
		if (seen & (1u << (o - reserve_opts)))
			return RM_ReplyWithError(ctx, o->twice_err);
		seen |= 1u << (o - reserve_opts);
		if (RM_StringToLongLong(argv[i + 1], v) != RM_OK)
			return RM_ReplyWithError(ctx, o->parse_err);
		if (*v < o->min || *v > o->max)
			return RM_ReplyWithError(ctx, o->range_err);
	}
	(void)maxiter; /* accepted for compatibility: see the file comment */
	if (!parse_capacity(ctx, argv[2], bucket, &capacity))
		return RM_OK;
	if (!open_cf(ctx, argv[1], RM_READ | RM_WRITE, &key, &cf))
		return RM_OK;
	if (RM_KeyType(key) != RM_KEYTYPE_EMPTY) {
		RM_CloseKey(key);
		return RM_ReplyWithError(ctx, ERR_EXISTS);
	}
	if ((refused = capacity_refused(ctx, capacity))) {
		RM_CloseKey(key);
		return RM_ReplyWithError(ctx, refused);
	}
	st = cf_create(argv[1], capacity, expansion, &cf);
	if (st != ADMIT_OK) {
		RM_CloseKey(key);
		return reply_status(ctx, st);
	}
	RM_ModuleTypeSetValue(key, cf_type, cf);
	RM_CloseKey(key);
	RM_ReplicateVerbatim(ctx);
	return RM_ReplyWithSimpleString(ctx, "OK");
}

/* ---- CF.ADD / CF.ADDNX key item --------------------------------------- */

static int
add_common(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bool nx)
{
	RedisModuleKey *key;
	struct cf *cf;
	enum admit_status st;
	const char *item;
	bool created = false;
	size_t len;

	if (argc != 3)
		return RM_WrongArity(ctx);
	if (!open_cf(ctx, argv[1], RM_READ | RM_WRITE, &key, &cf))
		return RM_OK;
	if (!cf) {
		created = true;
		st = cf_create(argv[1], CF_DEFAULT_CAPACITY, CF_DEFAULT_EXPANSION,
		               &cf);
		if (st != ADMIT_OK) {
			RM_CloseKey(key);
			return reply_status(ctx, st);
		}
		RM_ModuleTypeSetValue(key, cf_type, cf);
	}
	item = RM_StringPtrLen(argv[2], &len);
	st = nx ? admit_chain_add_unique(cf->chain, item, len)
	        : admit_chain_add(cf->chain, item, len);
	RM_CloseKey(key);
	/* A created key must reach replicas even when the add was refused. */
	if (created || st == ADMIT_OK)
		RM_ReplicateVerbatim(ctx);
	if (st == ADMIT_OK)
		return RM_ReplyWithLongLong(ctx, 1);
	if (st == ADMIT_EXISTS)
		return RM_ReplyWithLongLong(ctx, 0);
	return reply_status(ctx, st);
}

static int
cmd_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	return add_common(ctx, argv, argc, false);
}

static int
cmd_addnx(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	return add_common(ctx, argv, argc, true);
}

/* ---- CF.INSERT / CF.INSERTNX key [CAPACITY n] [NOCREATE] ITEMS item... -- */

static int
insert_common(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bool nx)
{
	long long capacity = CF_DEFAULT_CAPACITY;
	bool nocreate = false;
	RedisModuleKey *key;
	struct cf *cf;
	enum admit_status st;
	const char *refused;
	int i;

	if (argc < 4)
		return RM_WrongArity(ctx);
	for (i = 2; i < argc; i++) {
		if (arg_is(argv[i], "CAPACITY")) {
			if (++i >= argc)
				return RM_WrongArity(ctx);
			if (!parse_capacity(ctx, argv[i], CF_DEFAULT_BUCKETSIZE,
			                    &capacity))
				return RM_OK;
		} else if (arg_is(argv[i], "NOCREATE")) {
			nocreate = true;
		} else if (arg_is(argv[i], "ITEMS")) {
			break;
		} else {
			return RM_ReplyWithError(ctx, "Unknown argument received");
		}
	}
	if (++i >= argc)
		return RM_WrongArity(ctx);
	if (!open_cf(ctx, argv[1], RM_READ | RM_WRITE, &key, &cf))
		return RM_OK;
	if (!cf) {
		if (nocreate) {
			RM_CloseKey(key);
			return RM_ReplyWithError(ctx, ERR_NOTFOUND);
		}
		if ((refused = capacity_refused(ctx, capacity))) {
			RM_CloseKey(key);
			return RM_ReplyWithError(ctx, refused);
		}
		st = cf_create(argv[1], capacity, CF_DEFAULT_EXPANSION, &cf);
		if (st != ADMIT_OK) {
			RM_CloseKey(key);
			return reply_status(ctx, st);
		}
		RM_ModuleTypeSetValue(key, cf_type, cf);
	}
	RM_ReplyWithArray(ctx, argc - i);
	for (; i < argc; i++) {
		size_t len;
		const char *item = RM_StringPtrLen(argv[i], &len);

		st = nx ? admit_chain_add_unique(cf->chain, item, len)
		        : admit_chain_add(cf->chain, item, len);
		/* RedisBloom's per-item answers: 1 added, 0 present (NX), -1
		 * not added (full, or out of memory). */
		RM_ReplyWithLongLong(ctx, st == ADMIT_OK ? 1 :
		                     st == ADMIT_EXISTS ? 0 : -1);
	}
	RM_CloseKey(key);
	RM_ReplicateVerbatim(ctx);
	return RM_OK;
}

static int
cmd_insert(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	return insert_common(ctx, argv, argc, false);
}

static int
cmd_insertnx(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	return insert_common(ctx, argv, argc, true);
}

/* ---- CF.EXISTS, CF.MEXISTS, CF.COUNT, CF.DEL --------------------------- */

static int
cmd_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	RedisModuleKey *key;
	struct cf *cf;
	size_t len;
	const char *item;
	bool in;

	if (argc != 3)
		return RM_WrongArity(ctx);
	if (!open_cf(ctx, argv[1], RM_READ, &key, &cf))
		return RM_OK;
	item = RM_StringPtrLen(argv[2], &len);
	in = cf && admit_chain_contains(cf->chain, item, len);
	RM_CloseKey(key);
	return RM_ReplyWithLongLong(ctx, in);
}

static int
cmd_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	RedisModuleKey *key;
	struct cf *cf;

	if (argc < 3)
		return RM_WrongArity(ctx);
	if (!open_cf(ctx, argv[1], RM_READ, &key, &cf))
		return RM_OK;
	RM_ReplyWithArray(ctx, argc - 2);
	for (int i = 2; i < argc; i++) {
		size_t len;
		const char *item = RM_StringPtrLen(argv[i], &len);

		RM_ReplyWithLongLong(ctx,
		                     cf && admit_chain_contains(cf->chain, item, len));
	}
	RM_CloseKey(key);
	return RM_OK;
}

static int
cmd_count(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	RedisModuleKey *key;
	struct cf *cf;
	size_t len;
	const char *item;
	uint64_t n = 0;

	if (argc != 3)
		return RM_WrongArity(ctx);
	if (!open_cf(ctx, argv[1], RM_READ, &key, &cf))
		return RM_OK;
	item = RM_StringPtrLen(argv[2], &len);
	if (cf)
		n = admit_chain_count(cf->chain, item, len);
	RM_CloseKey(key);
	return RM_ReplyWithLongLong(ctx, (long long)n);
}

static int
cmd_del(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	RedisModuleKey *key;
	struct cf *cf;
	size_t len;
	const char *item;
	enum admit_status st;

	if (argc != 3)
		return RM_WrongArity(ctx);
	if (!open_cf(ctx, argv[1], RM_READ | RM_WRITE, &key, &cf))
		return RM_OK;
	if (!cf) {
		RM_CloseKey(key);
		return RM_ReplyWithError(ctx, ERR_DEL_NOTFOUND);
	}
	item = RM_StringPtrLen(argv[2], &len);
	st = admit_chain_delete(cf->chain, item, len);
	if (st == ADMIT_OK)
		cf->deleted++;
	RM_CloseKey(key);
	if (st == ADMIT_OK)
		RM_ReplicateVerbatim(ctx);
	return RM_ReplyWithLongLong(ctx, st == ADMIT_OK);
}

static size_t cf_mem_usage(const void *value);

/* ---- CF.INFO ----------------------------------------------------------- */

static int
cmd_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	struct admit_chain_info info;
	RedisModuleKey *key;
	struct cf *cf;
	char bound[32];

	if (argc != 2)
		return RM_WrongArity(ctx);
	if (!open_cf(ctx, argv[1], RM_READ, &key, &cf))
		return RM_OK;
	if (!cf) {
		RM_CloseKey(key);
		return RM_ReplyWithError(ctx, ERR_NOTFOUND);
	}
	admit_chain_info(cf->chain, &info);
	/* RedisBloom's fields first, in its order, then admit's. */
	RM_ReplyWithArray(ctx, 22);
	RM_ReplyWithSimpleString(ctx, "Size");
	RM_ReplyWithLongLong(ctx, (long long)cf_mem_usage(cf));
	RM_ReplyWithSimpleString(ctx, "Number of buckets");
	RM_ReplyWithLongLong(ctx, (long long)info.buckets);
	RM_ReplyWithSimpleString(ctx, "Number of filters");
	RM_ReplyWithLongLong(ctx, info.filters);
	RM_ReplyWithSimpleString(ctx, "Number of items inserted");
	RM_ReplyWithLongLong(ctx, (long long)info.items);
	RM_ReplyWithSimpleString(ctx, "Number of items deleted");
	RM_ReplyWithLongLong(ctx, (long long)cf->deleted);
	RM_ReplyWithSimpleString(ctx, "Bucket size");
	RM_ReplyWithLongLong(ctx, CF_REAL_BUCKETSIZE);
	RM_ReplyWithSimpleString(ctx, "Expansion rate");
	RM_ReplyWithLongLong(ctx, info.max_filters == 1 ? 0 : info.expansion);
	RM_ReplyWithSimpleString(ctx, "Max iterations");
	RM_ReplyWithLongLong(ctx, CF_REAL_MAX_PATH);
	RM_ReplyWithSimpleString(ctx, "Capacity");
	RM_ReplyWithLongLong(ctx, (long long)info.capacity);
	RM_ReplyWithSimpleString(ctx, "Max filters");
	RM_ReplyWithLongLong(ctx, info.max_filters);
	RM_ReplyWithSimpleString(ctx, "Error rate bound");
	snprintf(bound, sizeof(bound), "%.6g", info.fpr_bound);
	RM_ReplyWithStringBuffer(ctx, bound, strlen(bound));
	RM_CloseKey(key);
	return RM_OK;
}

/* ---- CF.SCANDUMP / CF.LOADCHUNK ---------------------------------------
 *
 * The dump is cf_dump()'s bytes, cut into chunks of CF_CHUNK.  The
 * iterator a chunk comes with is the offset just past it (so never 0), and
 * SCANDUMP key it returns the chunk that starts at it; [0, nil] at the end
 * and for a filter that holds no item (as RedisBloom answers).  LOADCHUNK
 * key it data therefore knows where data starts (it - len): a chunk of
 * offset 0 begins a load, the others must continue one.  Chunks are
 * gathered aside, per database and key, in Redis's memory, and the key is
 * made only when the dump is complete and admit_chain_restore() accepts
 * all of it; a key that holds a filter is never replaced.
 */

struct pending {
	int db;
	char *name;
	size_t name_len;
	unsigned char *buf;
	size_t have;
	long long last_ms; /* when its latest chunk came */
	uint64_t stamp;    /* order of the latest chunks, for eviction */
};

static struct pending pend[CF_MAX_PENDING];
static uint64_t pend_clock;
static bool pend_timer;

static void
pending_drop(struct pending *p)
{
	RM_Free(p->name);
	RM_Free(p->buf);
	memset(p, 0, sizeof(*p));
}

/* Drops the loads of database db (-1: of all) that have waited
 * timeout_ms or more for their next chunk (0: every one); returns in how
 * many milliseconds the first of those left will have waited
 * pending_timeout_ms, -1 if none is left. */
static long long
pending_expire(int db, long long timeout_ms)
{
	long long now = RM_Milliseconds(), next = -1;

	for (int i = 0; i < CF_MAX_PENDING; i++) {
		long long due;

		if (!pend[i].name)
			continue;
		if ((db == -1 || pend[i].db == db) &&
		    now - pend[i].last_ms >= timeout_ms) {
			pending_drop(&pend[i]);
			continue;
		}
		due = pend[i].last_ms + pending_timeout_ms - now;
		if (next == -1 || due < next)
			next = due;
	}
	return next;
}

/* Armed while a load waits, for when the first one is due. */
static void
pending_timer(RedisModuleCtx *ctx, void *data)
{
	long long next = pending_expire(-1, pending_timeout_ms);

	(void)data;
	pend_timer = next >= 0;
	if (pend_timer)
		RM_CreateTimer(ctx, next > 0 ? next : 1, pending_timer, NULL);
}

static void
on_flush(RedisModuleCtx *ctx, RedisModuleEvent e, uint64_t subevent,
         void *data)
{
	const struct rm_flush_info *fi = data;

	(void)ctx;
	(void)e;
	(void)subevent;
	pending_expire(fi ? fi->dbnum : -1, 0);
}

static struct pending *
pending_find(int db, const char *name, size_t len)
{
	for (int i = 0; i < CF_MAX_PENDING; i++)
		if (pend[i].name && pend[i].db == db && pend[i].name_len == len &&
		    memcmp(pend[i].name, name, len) == 0)
			return &pend[i];
	return NULL;
}

static struct pending *
pending_new(RedisModuleCtx *ctx, int db, const char *name, size_t len)
{
	struct pending *p = &pend[0];

	for (int i = 0; i < CF_MAX_PENDING; i++) {
		if (!pend[i].name) {
			p = &pend[i];
			break;
		}
		if (pend[i].stamp < p->stamp)
			p = &pend[i];
	}
	pending_drop(p);
	p->name = RM_Alloc(len ? len : 1);
	memcpy(p->name, name, len);
	p->name_len = len;
	p->db = db;
	if (!pend_timer) {
		RM_CreateTimer(ctx, pending_timeout_ms, pending_timer, NULL);
		pend_timer = true;
	}
	return p;
}

/* The chain dump's whole length, once enough of it is here to tell (the
 * header and every filter's length word); 0 before that, UINT64_MAX if it
 * cannot be a dump.  The layout is the one src/chain.c documents. */
static uint64_t
dump_total(const unsigned char *b, size_t have)
{
	uint64_t off, n;

	if (memcmp(b, "ADMITCHN", have < 8 ? have : 8) != 0)
		return UINT64_MAX;
	if (have < 12)
		return 0;
	switch (b[8] | b[9] << 8 | b[10] << 16 | (uint64_t)b[11] << 24) {
	case 1:
		off = 48;
		break;
	case 2:
		off = 72;
		break;
	default:
		return UINT64_MAX;
	}
	if (have < off)
		return 0;
	n = (uint64_t)b[12] | (uint64_t)b[13] << 8 | (uint64_t)b[14] << 16 |
	    (uint64_t)b[15] << 24;
	if (n == 0 || n > ADMIT_CHAIN_MAX_FILTERS)
		return UINT64_MAX;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t fl;

		if (off + 8 > have)
			return 0;
		fl = snap_get64(b + off);
		if (fl > UINT64_MAX / 2 - off)
			return UINT64_MAX;
		off += 8 + fl;
	}
	return off + 8;
}

static int
cmd_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	struct admit_chain_info info;
	RedisModuleKey *key;
	struct cf *cf;
	long long it;
	unsigned char *buf = NULL;
	size_t len = 0, n;

	if (argc != 3)
		return RM_WrongArity(ctx);
	if (RM_StringToLongLong(argv[2], &it) != RM_OK || it < 0)
		return RM_ReplyWithError(ctx, ERR_POSITION);
	if (!open_cf(ctx, argv[1], RM_READ, &key, &cf))
		return RM_OK;
	if (!cf) {
		RM_CloseKey(key);
		return RM_ReplyWithError(ctx, ERR_NOTFOUND);
	}
	admit_chain_info(cf->chain, &info);
	if (info.items > 0 && cf_dump(cf, &buf, &len) != ADMIT_OK) {
		RM_CloseKey(key);
		return RM_ReplyWithError(ctx, ERR_NOMEM);
	}
	RM_CloseKey(key);
	RM_ReplyWithArray(ctx, 2);
	if ((unsigned long long)it >= len) {
		RM_ReplyWithLongLong(ctx, 0);
		RM_ReplyWithNull(ctx);
	} else {
		n = len - (size_t)it < CF_CHUNK ? len - (size_t)it : CF_CHUNK;
		RM_ReplyWithLongLong(ctx, it + (long long)n);
		RM_ReplyWithStringBuffer(ctx, (const char *)buf + it, n);
	}
	free(buf);
	return RM_OK;
}

/* Whether p holds a whole dump (*chain_len: the chain's part of it), more
 * is to come (false, *bad false), or it cannot be a dump (*bad true).
 * last: the latest chunk was shorter than CF_CHUNK, so nothing follows. */
static bool
pending_complete(const struct pending *p, bool last, size_t *chain_len,
                 bool *bad)
{
	uint64_t total = dump_total(p->buf, p->have);

	*bad = true;
	if (total == UINT64_MAX || (total != 0 && p->have > total + TRAILER_LEN))
		return false;
	*chain_len = (size_t)total;
	if (total != 0 && (p->have == total + TRAILER_LEN ||
	                   (p->have == total && last))) {
		*bad = false;
		return true;
	}
	*bad = last;
	return false;
}

static int
cmd_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	RedisModuleKey *key;
	struct pending *p;
	struct cf *cf, *old;
	const char *name, *data;
	unsigned char *grown;
	size_t name_len, len, chain_len;
	uint64_t deleted = 0;
	long long it;
	bool bad;
	int db;
	enum admit_status st;

	if (argc != 4)
		return RM_WrongArity(ctx);
	if (RM_StringToLongLong(argv[2], &it) != RM_OK || it <= 0)
		return RM_ReplyWithError(ctx, ERR_POSITION);
	data = RM_StringPtrLen(argv[3], &len);
	if (len == 0 || len > CF_CHUNK || (unsigned long long)it < len)
		return RM_ReplyWithError(ctx, ERR_CHUNK);
	if (!open_cf(ctx, argv[1], RM_READ, &key, &cf))
		return RM_OK;
	RM_CloseKey(key);

	db = RM_GetSelectedDb(ctx);
	name = RM_StringPtrLen(argv[1], &name_len);
	pending_expire(-1, pending_timeout_ms);
	p = pending_find(db, name, name_len);
	if ((size_t)it == len) {
		/* The first chunk: a new load, replacing any unfinished one,
		 * into a key that holds no filter. */
		if (cf) {
			if (p)
				pending_drop(p);
			return RM_ReplyWithError(ctx, ERR_EXISTS);
		}
		if (!p)
			p = pending_new(ctx, db, name, name_len);
		RM_Free(p->buf);
		p->buf = NULL;
		p->have = 0;
	} else if (!p || p->have != (size_t)it - len) {
		if (p)
			pending_drop(p);
		return RM_ReplyWithError(ctx, !p && !cf ? ERR_NOTFOUND : ERR_CHUNK);
	}
	/* Every chunk but the last is exactly CF_CHUNK long, so a cut one is
	 * known at once.  The buffer grows by whole chunks: a load of n bytes
	 * copies them O(n^2 / 16 MiB) times; a dump is rarely more than a
	 * few chunks. */
	if (p->have % CF_CHUNK != 0) {
		pending_drop(p);
		return RM_ReplyWithError(ctx, ERR_CHUNK);
	}
	if (!(grown = try_alloc(p->have + len))) {
		pending_drop(p);
		return RM_ReplyWithError(ctx, ERR_NOMEM);
	}
	if (p->have)
		memcpy(grown, p->buf, p->have);
	memcpy(grown + p->have, data, len);
	RM_Free(p->buf);
	p->buf = grown;
	p->have += len;
	p->last_ms = RM_Milliseconds();
	p->stamp = ++pend_clock;
	if (!pending_complete(p, len < CF_CHUNK, &chain_len, &bad)) {
		if (bad) {
			pending_drop(p);
			return RM_ReplyWithError(ctx, ERR_CHUNK);
		}
		/* Chunks before the last are not replicated (nor written to
		 * the AOF): a replica that connects in the middle of a load
		 * would miss the first ones.  The last one propagates them
		 * all, in one MULTI. */
		return RM_ReplyWithSimpleString(ctx, "OK");
	}
	if (p->have > chain_len) {
		const unsigned char *t = p->buf + chain_len;

		if (memcmp(t, TRAILER_MAGIC, 8) != 0 ||
		    snap_get64(t + 16) != admit_hash(t, 16, 0)) {
			pending_drop(p);
			return RM_ReplyWithError(ctx, ERR_CHUNK);
		}
		deleted = snap_get64(t + 8);
	}
	st = cf_restore(p->buf, chain_len, deleted, &cf);
	if (st != ADMIT_OK) {
		pending_drop(p);
		return RM_ReplyWithError(ctx, st == ADMIT_NOMEM ? ERR_NOMEM
		                                                : ERR_CHUNK);
	}
	if (!open_cf(ctx, argv[1], RM_READ | RM_WRITE, &key, &old)) {
		pending_drop(p);
		cf_free(cf);
		return RM_OK;
	}
	if (old || RM_KeyType(key) != RM_KEYTYPE_EMPTY) {
		/* Made while the chunks came: never replaced. */
		RM_CloseKey(key);
		pending_drop(p);
		cf_free(cf);
		return RM_ReplyWithError(ctx, ERR_EXISTS);
	}
	RM_ModuleTypeSetValue(key, cf_type, cf);
	RM_CloseKey(key);
	for (size_t off = 0; off < p->have; off += CF_CHUNK) {
		size_t n = p->have - off < CF_CHUNK ? p->have - off : CF_CHUNK;

		RM_Replicate(ctx, "CF.LOADCHUNK", "slb", argv[1],
		             (long long)(off + n), (const char *)p->buf + off, n);
	}
	pending_drop(p);
	return RM_ReplyWithSimpleString(ctx, "OK");
}

/* ---- the module type --------------------------------------------------- */

#define CF_ENCVER 0

static void
cf_rdb_save(RedisModuleIO *io, void *value)
{
	struct cf *cf = value;
	void *buf = NULL;
	size_t len = 0;

	if (admit_chain_dump(cf->chain, &buf, &len) != ADMIT_OK) {
		/* An empty buffer fails the load loudly rather than a save
		 * that cannot say it failed writing half a filter. */
		RM_LogIOError(io, "warning", "admit: out of memory dumping a filter");
		len = 0;
	}
	RM_SaveUnsigned(io, cf->deleted);
	RM_SaveStringBuffer(io, buf ? buf : "", len);
	free(buf);
}

static void *
cf_rdb_load(RedisModuleIO *io, int encver)
{
	struct cf *cf;
	uint64_t deleted;
	char *buf;
	size_t len = 0;
	enum admit_status st;

	if (encver != CF_ENCVER) {
		RM_LogIOError(io, "warning", "admit: unknown encoding version %d",
		              encver);
		return NULL;
	}
	/* With RM_OPTIONS_HANDLE_IO_ERRORS a short read sets the I/O error
	 * and returns 0 or NULL: nothing is built before both are read. */
	deleted = RM_LoadUnsigned(io);
	if (RM_IsIOError(io))
		return NULL;
	buf = RM_LoadStringBuffer(io, &len);
	if (RM_IsIOError(io) || !buf) {
		if (buf)
			RM_Free(buf);
		return NULL;
	}
	st = cf_restore(buf, len, deleted, &cf);
	RM_Free(buf);
	if (st != ADMIT_OK) {
		RM_LogIOError(io, "warning", "admit: a filter in the RDB is %s",
		              admit_strerror(st));
		return NULL;
	}
	return cf;
}

static void
cf_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, void *value)
{
	struct cf *cf = value;
	unsigned char *buf;
	size_t len;

	if (cf_dump(cf, &buf, &len) != ADMIT_OK) {
		RM_LogIOError(aof, "warning", "admit: out of memory in AOF rewrite");
		return;
	}
	for (size_t off = 0; off < len; off += CF_CHUNK) {
		size_t n = len - off < CF_CHUNK ? len - off : CF_CHUNK;

		RM_EmitAOF(aof, "CF.LOADCHUNK", "slb", key, (long long)(off + n),
		           (const char *)buf + off, n);
	}
	free(buf);
}

static size_t
cf_mem_usage(const void *value)
{
	const struct cf *cf = value;

	/* What the chain holds and the value's own struct, as used_memory
	 * counts them (usable sizes). */
	return cf->bytes + RM_MallocSize((void *)cf);
}

static void
cf_digest(RedisModuleDigest *md, void *value)
{
	struct cf *cf = value;
	void *buf;
	size_t len;

	if (admit_chain_dump(cf->chain, &buf, &len) != ADMIT_OK)
		return;
	RM_DigestAddStringBuffer(md, buf, len);
	RM_DigestEndSequence(md);
	free(buf);
}

/* ---- loading ----------------------------------------------------------- */

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

int
RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	static struct rm_type_methods tm = {
		.version = RM_TYPE_METHOD_VERSION,
		.rdb_load = cf_rdb_load,
		.rdb_save = cf_rdb_save,
		.aof_rewrite = cf_aof_rewrite,
		.mem_usage = cf_mem_usage,
		.digest = cf_digest,
		.free = cf_free,
	};
	static const struct {
		const char *name;
		rm_cmd_fn fn;
		const char *flags;
	} cmds[] = {
		{ "cf.reserve", cmd_reserve, "write deny-oom" },
		{ "cf.add", cmd_add, "write deny-oom" },
		{ "cf.addnx", cmd_addnx, "write deny-oom" },
		{ "cf.insert", cmd_insert, "write deny-oom" },
		{ "cf.insertnx", cmd_insertnx, "write deny-oom" },
		{ "cf.exists", cmd_exists, "readonly fast" },
		{ "cf.mexists", cmd_mexists, "readonly fast" },
		{ "cf.count", cmd_count, "readonly fast" },
		{ "cf.del", cmd_del, "write fast" },
		{ "cf.info", cmd_info, "readonly fast" },
		{ "cf.scandump", cmd_scandump, "readonly" },
		{ "cf.loadchunk", cmd_loadchunk, "write deny-oom" },
	};

	if (rm_api_init(ctx, "admit", 1) != RM_OK)
		return RM_ERR;
	RM_SetModuleOptions(ctx, RM_OPTIONS_HANDLE_IO_ERRORS);
	for (int i = 0; i < argc; i += 2) {
		long long v;

		bool num = i + 1 < argc &&
		           RM_StringToLongLong(argv[i + 1], &v) == RM_OK;

		if (num && arg_is(argv[i], "SEED")) {
			module_seed = (uint64_t)v;
			continue;
		}
		if (num && arg_is(argv[i], "PENDING_TIMEOUT") && v > 0 &&
		    v <= 86400) {
			pending_timeout_ms = v * 1000;
			continue;
		}
		RM_Log(ctx, "warning", "admit: module arguments are SEED n and "
		       "PENDING_TIMEOUT seconds (1 to 86400)");
		return RM_ERR;
	}
	if (RM_SubscribeToServerEvent(ctx, (RedisModuleEvent){ RM_EVENT_FLUSHDB, 1 },
	                              on_flush) != RM_OK)
		return RM_ERR;
	cf_type = RM_CreateDataType(ctx, "admit-ckf", CF_ENCVER, &tm);
	if (!cf_type)
		return RM_ERR;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (RM_CreateCommand(ctx, cmds[i].name, cmds[i].fn, cmds[i].flags,
		                     1, 1, 1) != RM_OK)
			return RM_ERR;
	return RM_OK;
}
