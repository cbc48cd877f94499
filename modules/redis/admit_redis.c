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
 * This file holds the command handlers and the module's loading; SCANDUMP
 * and LOADCHUNK are cf_chunks.c, the data type, its memory and its RDB /
 * AOF methods cf_type.c, the dump's format cf_dump.c, the unfinished
 * LOADCHUNK loads pending.c.
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

#include "cf_cmd.h"
#include "cf_type.h"
#include "hash.h"
#include "pending.h"
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

static uint64_t module_seed = 0x61646d69745f6366ull; /* "admit_cf" */

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

bool
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
	st = cf_create(key_seed(argv[1]), capacity, expansion, &cf);
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
		st = cf_create(key_seed(argv[1]), CF_DEFAULT_CAPACITY, CF_DEFAULT_EXPANSION,
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
		st = cf_create(key_seed(argv[1]), capacity, CF_DEFAULT_EXPANSION, &cf);
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

/* ---- loading ----------------------------------------------------------- */

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

int
RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
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
	/* Values hold no keyspace state, and a read-only replica's table of
	 * pending loads stays empty (chunks before the last are not
	 * replicated): loading aside while the old data serves reads needs
	 * nothing of the module. */
	RM_SetModuleOptions(ctx, RM_OPTIONS_HANDLE_IO_ERRORS |
	                    RM_OPTIONS_HANDLE_REPL_ASYNC_LOAD);
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
	                              pending_on_flush) != RM_OK ||
	    cf_type_create(ctx) != RM_OK)
		return RM_ERR;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (RM_CreateCommand(ctx, cmds[i].name, cmds[i].fn, cmds[i].flags,
		                     1, 1, 1) != RM_OK)
			return RM_ERR;
	return RM_OK;
}
