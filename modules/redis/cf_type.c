/*
 * cf_type.c - the module's data type (cf_type.h): values whose chains take
 * their memory from Redis, their dumps, and the type's methods.
 *
 * Memory: every byte of a filter comes from RedisModule_TryAlloc (Alloc on
 * a server without it) through the chain's allocator, and each value
 * counts the usable size of what its chain holds, so MEMORY USAGE is what
 * INFO's used_memory grew by, maxmemory sees filters as it sees strings,
 * and a failed allocation answers an error with nothing changed.
 */
#include <stdlib.h>
#include <string.h>

#include "cf_dump.h"
#include "cf_type.h"

RedisModuleType *cf_type;

#define CF_ENCVER 0

void *
cf_try_alloc(size_t size)
{
	return RM_TryAlloc ? RM_TryAlloc(size) : RM_Alloc(size);
}

/* ---- the chain's allocator: Redis's, counted per value ----------------- */

static void *
cf_mem_alloc(void *ctx, size_t size)
{
	struct cf *cf = ctx;
	void *p = cf_try_alloc(size);

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
	struct cf *cf = cf_try_alloc(sizeof(*cf));

	if (!cf)
		return NULL;
	memset(cf, 0, sizeof(*cf));
	*alloc = (struct admit_allocator){
		.alloc = cf_mem_alloc, .free = cf_mem_free, .ctx = cf,
	};
	return cf;
}

void
cf_free(void *value)
{
	struct cf *cf = value;

	if (!cf)
		return;
	admit_chain_free(cf->chain);
	RM_Free(cf);
}

enum admit_status
cf_create(uint64_t seed, long long capacity, long long expansion,
          struct cf **out)
{
	struct admit_allocator alloc;
	struct admit_chain_config cfg = {
		.capacity = (uint64_t)capacity,
		.expansion = expansion ? (unsigned)expansion : 1,
		.max_filters = expansion ? 0 : 1,
		.stripes = 1, /* one thread: the smallest stripe array */
		.seed = seed,
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

enum admit_status
cf_dump(const struct cf *cf, unsigned char **buf, size_t *len)
{
	void *chain_buf;
	unsigned char *b;
	size_t n;

	if (admit_chain_dump(cf->chain, &chain_buf, &n) != ADMIT_OK)
		return ADMIT_NOMEM;
	b = realloc(chain_buf, n + CF_TRAILER_LEN);
	if (!b) {
		free(chain_buf);
		return ADMIT_NOMEM;
	}
	cf_trailer_put(b + n, cf->deleted);
	*buf = b;
	*len = n + CF_TRAILER_LEN;
	return ADMIT_OK;
}

enum admit_status
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

size_t
cf_mem_usage(const void *value)
{
	const struct cf *cf = value;

	/* Usable sizes, as used_memory counts them. */
	return cf->bytes + RM_MallocSize((void *)cf);
}

/* ---- the type's methods ------------------------------------------------ */

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

int
cf_type_create(RedisModuleCtx *ctx)
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

	cf_type = RM_CreateDataType(ctx, "admit-ckf", CF_ENCVER, &tm);
	return cf_type ? RM_OK : RM_ERR;
}
