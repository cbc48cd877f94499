/*
 * cf_chunks.c - CF.SCANDUMP and CF.LOADCHUNK: a filter copied out and in
 * by chunks.
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
#include <stdlib.h>

#include "cf_cmd.h"
#include "cf_dump.h"
#include "cf_type.h"
#include "pending.h"

int
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

/* The load a chunk of len bytes ending at offset it begins or continues,
 * NULL having replied when it fits none.  has_cf: the key holds a filter. */
static struct pending *
chunk_load(RedisModuleCtx *ctx, RedisModuleString *key, long long it,
           size_t len, bool has_cf)
{
	size_t name_len;
	const char *name = RM_StringPtrLen(key, &name_len);
	int db = RM_GetSelectedDb(ctx);
	struct pending *p;

	pending_expire(-1, pending_timeout_ms);
	p = pending_find(db, name, name_len);
	if ((size_t)it == len) {
		/* The first chunk: a new load, replacing any unfinished one,
		 * into a key that holds no filter. */
		if (has_cf) {
			if (p)
				pending_drop(p);
			RM_ReplyWithError(ctx, ERR_EXISTS);
			return NULL;
		}
		if (!p)
			p = pending_new(ctx, db, name, name_len);
		pending_restart(p);
		return p;
	}
	/* Every chunk but the last is exactly CF_CHUNK long, so a cut one is
	 * known at once. */
	if (p && p->have == (size_t)it - len && p->have % CF_CHUNK == 0)
		return p;
	if (p)
		pending_drop(p);
	RM_ReplyWithError(ctx, !p && !has_cf ? ERR_NOTFOUND : ERR_CHUNK);
	return NULL;
}

/* Makes key from p's whole dump (chain_len bytes of chain, deleted), unless
 * a filter was made there while the chunks came; replies, and propagates
 * the load.  p is dropped either way. */
static int
chunk_finish(RedisModuleCtx *ctx, RedisModuleString *name, struct pending *p,
             size_t chain_len, uint64_t deleted)
{
	RedisModuleKey *key;
	struct cf *cf, *old;
	enum admit_status st = cf_restore(p->buf, chain_len, deleted, &cf);

	if (st != ADMIT_OK) {
		pending_drop(p);
		return RM_ReplyWithError(ctx, st == ADMIT_NOMEM ? ERR_NOMEM
		                                                : ERR_CHUNK);
	}
	if (!open_cf(ctx, name, RM_READ | RM_WRITE, &key, &old)) {
		pending_drop(p);
		cf_free(cf);
		return RM_OK;
	}
	if (old || RM_KeyType(key) != RM_KEYTYPE_EMPTY) {
		RM_CloseKey(key);
		pending_drop(p);
		cf_free(cf);
		return RM_ReplyWithError(ctx, ERR_EXISTS);
	}
	RM_ModuleTypeSetValue(key, cf_type, cf);
	RM_CloseKey(key);
	/* Chunks before the last are not replicated (nor written to the
	 * AOF): a replica that connects in the middle of a load would miss
	 * the first ones.  The last one propagates them all, in one MULTI. */
	for (size_t off = 0; off < p->have; off += CF_CHUNK) {
		size_t n = p->have - off < CF_CHUNK ? p->have - off : CF_CHUNK;

		RM_Replicate(ctx, "CF.LOADCHUNK", "slb", name,
		             (long long)(off + n), (const char *)p->buf + off, n);
	}
	pending_drop(p);
	return RM_ReplyWithSimpleString(ctx, "OK");
}

int
cmd_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
	RedisModuleKey *key;
	struct pending *p;
	struct cf *cf;
	const char *data;
	size_t len, chain_len = 0;
	uint64_t deleted = 0;
	long long it;

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
	if (!(p = chunk_load(ctx, argv[1], it, len, cf != NULL)))
		return RM_OK;
	if (!pending_append(p, data, len))
		return RM_ReplyWithError(ctx, ERR_NOMEM);
	switch (cf_dump_check(p->buf, p->have, len < CF_CHUNK, &chain_len,
	                      &deleted)) {
	case CF_DUMP_MORE:
		return RM_ReplyWithSimpleString(ctx, "OK");
	case CF_DUMP_BAD:
		pending_drop(p);
		return RM_ReplyWithError(ctx, ERR_CHUNK);
	case CF_DUMP_WHOLE:
	default:
		return chunk_finish(ctx, argv[1], p, chain_len, deleted);
	}
}
