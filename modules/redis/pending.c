/*
 * pending.c - the table of unfinished CF.LOADCHUNK loads (pending.h).
 */
#include <string.h>

#include "cf_type.h"
#include "pending.h"

long long pending_timeout_ms = CF_PENDING_TIMEOUT_S * 1000LL;

static struct pending pend[CF_MAX_PENDING];
static uint64_t pend_clock;
static bool pend_timer;

void
pending_drop(struct pending *p)
{
	RM_Free(p->name);
	RM_Free(p->buf);
	memset(p, 0, sizeof(*p));
}

long long
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

void
pending_on_flush(RedisModuleCtx *ctx, RedisModuleEvent e, uint64_t subevent,
                 void *data)
{
	const struct rm_flush_info *fi = data;

	(void)ctx;
	(void)e;
	(void)subevent;
	pending_expire(fi ? fi->dbnum : -1, 0);
}

struct pending *
pending_find(int db, const char *name, size_t len)
{
	for (int i = 0; i < CF_MAX_PENDING; i++)
		if (pend[i].name && pend[i].db == db && pend[i].name_len == len &&
		    memcmp(pend[i].name, name, len) == 0)
			return &pend[i];
	return NULL;
}

struct pending *
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

void
pending_restart(struct pending *p)
{
	RM_Free(p->buf);
	p->buf = NULL;
	p->have = 0;
}

/* The buffer grows by whole chunks: a load of n bytes copies them
 * O(n^2 / 16 MiB) times; a dump is rarely more than a few chunks. */
bool
pending_append(struct pending *p, const char *data, size_t len)
{
	unsigned char *grown = cf_try_alloc(p->have + len);

	if (!grown) {
		pending_drop(p);
		return false;
	}
	if (p->have)
		memcpy(grown, p->buf, p->have);
	memcpy(grown + p->have, data, len);
	RM_Free(p->buf);
	p->buf = grown;
	p->have += len;
	p->last_ms = RM_Milliseconds();
	p->stamp = ++pend_clock;
	return true;
}
