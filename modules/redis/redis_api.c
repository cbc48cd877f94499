/*
 * redis_api.c - the module API's function pointers (redis_api.h), fetched
 * by name from the context Redis passes to RedisModule_OnLoad.
 */
#include <string.h>

#include "redis_api.h"

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
