/*
 * sketchio.c - admit_lru's admission state as bytes: its frequency
 * sketch exported and imported (freqsketch.h gives the format), so that
 * an embedder that saves the entries across a restart can save what the
 * admission knows about the keys too.
 *
 * Both calls take no lock: the sketch is lock-free on its own, and
 * neither call touches a shard.
 */
#include "config.h"

#include <admit/lru.h>

#include "cache/shard.h"
#include "freqsketch.h"

enum admit_status
admit_lru_sketch_size(const struct admit_lru *c, size_t *bytes)
{
	if (bytes)
		*bytes = 0;
	if (!c || !bytes)
		return ADMIT_EINVAL;
	if (!c->sketch)
		return ADMIT_NOTFOUND;
	*bytes = admit_freqsketch_export_size(c->sketch);
	return ADMIT_OK;
}

enum admit_status
admit_lru_sketch_export(const struct admit_lru *c, void *buf, size_t cap,
                        size_t *len)
{
	size_t need;
	enum admit_status st = admit_lru_sketch_size(c, &need);

	if (len)
		*len = need;
	if (st != ADMIT_OK)
		return st;
	if (!len)
		return ADMIT_EINVAL;
	if (!buf || cap < need)
		return ADMIT_EBUFFER;
	admit_freqsketch_export(c->sketch, buf);
	return ADMIT_OK;
}

enum admit_status
admit_lru_sketch_import(struct admit_lru *c, const void *buf, size_t len)
{
	if (!c || !buf || len == 0)
		return ADMIT_EINVAL;
	if (!c->sketch)
		return ADMIT_NOTFOUND;
	return admit_freqsketch_import(c->sketch, buf, len);
}
