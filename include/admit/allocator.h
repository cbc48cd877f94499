/*
 * admit/allocator.h - an allocator an instance takes its memory from.
 *
 * Every structure's config (admit_cuckoo_config, admit_chain_config,
 * admit_cbf_config, admit_tinylfu_config) has an `alloc` field: NULL means
 * the library's own allocator (jemalloc when built with it, else libc, with
 * big tables cache-line or 2 MiB aligned and advised into huge pages);
 * otherwise every byte the instance holds, from creation to free, comes
 * from these functions.  A server that accounts for memory (Redis and
 * Valkey modules: RedisModule_Alloc / RedisModule_Free) passes its own.
 *
 * The instance copies the struct when it is made, so it may live on the
 * caller's stack; ctx and the functions must stay valid until the instance
 * is freed.  A filter's growth (admit_chain) and frees may call them from
 * any thread that uses the instance: make them thread-safe if instances
 * sharing them are used from several threads.
 *
 * What the library asks of them:
 * - alloc(ctx, size) returns at least size bytes aligned for any type
 *   (like malloc), or NULL; size is never 0.
 * - zalloc(ctx, size) does the same with the bytes zeroed; may be NULL,
 *   and alloc then memset is used.  Pass one that knows fresh pages are
 *   zero (calloc) to keep a big table from being touched at creation.
 * - free(ctx, p, size) releases what alloc or zalloc returned for that
 *   size; p is never NULL.
 * Tables the library wants cache-line aligned are over-allocated by 64
 * bytes and aligned inside: each instance's *_footprint() call reports the
 * bytes it asked for, padding included.  The whole 2 MiB pages inside a
 * table are advised into transparent huge pages (madvise) before they are
 * first touched, as the library's own big tables are.  A call whose
 * allocation fails returns ADMIT_NOMEM and changes nothing.
 */
#ifndef ADMIT_ALLOCATOR_H
#define ADMIT_ALLOCATOR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct admit_allocator {
	void *(*alloc)(void *ctx, size_t size);
	void *(*zalloc)(void *ctx, size_t size); /* NULL: alloc, then zero */
	void (*free)(void *ctx, void *p, size_t size);
	void *ctx;
};

#ifdef __cplusplus
}
#endif

#endif /* ADMIT_ALLOCATOR_H */
