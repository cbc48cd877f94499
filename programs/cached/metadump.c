/*
 * metadump.c - "lru_crawler metadump <classes|all|hash>": one line per
 * live item, as memcached 1.6 writes them ("key=<URI-encoded key>
 * exp=<-1 or Unix time> la=<Unix time> cas=<n> fetch=<yes|no> cls=<n>
 * size=<n>", each ending in a bare "\n"), then "END\r\n".
 *
 * admit-cached has one class, 1, for every item (admit_lru has no slab
 * classes), and keeps no last-access time nor fetched bit per item (the
 * recency is the order of admit_lru's lists, the frequency its sketch's):
 * la is the time of the dump and fetch is yes, so that no item looks idle
 * or never read to a tool that prunes by them.  size is what the item
 * costs in memory (admit_lru_entry_charge), as memcached's is its item's
 * total size.  The walk is admit_lru_foreach's: an item present for the
 * whole dump is listed once.  The dump is written whole into the
 * connection's output buffer, from the --conn-memory pool; when the pool
 * cannot hold it, the lines that fit are followed by "SERVER_ERROR out of
 * memory writing metadump".
 */
#include "config.h"  /* first: it defines _GNU_SOURCE */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server.h"
#include "store_impl.h"

#define CLASS_MAX 63   /* memcached's largest slab class id */

struct dump {
	struct conn *c;
	uint64_t now, now_wall;
	bool refused;
};

/* memcached's URI encoding: A-Z a-z 0-9 - . _ ~ as they are, every other
 * byte as %XX.  out needs 3 * n bytes. */
static size_t
uri_encode(char *out, const unsigned char *p, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char b = p[i];

		if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') ||
		    (b >= '0' && b <= '9') || b == '-' || b == '.' || b == '_' ||
		    b == '~') {
			out[k++] = (char)b;
		} else {
			out[k++] = '%';
			out[k++] = hex[b >> 4];
			out[k++] = hex[b & 15];
		}
	}
	return k;
}

static bool
dump_item(const void *key, size_t klen, const void *value, size_t vlen,
          uint64_t expires_at, void *arg)
{
	struct dump *d = arg;
	struct conn *c = d->c;
	int64_t exp = -1;
	uint64_t cas;
	uint32_t flags;
	size_t room = 4 + 3 * klen + 128;
	char *p;

	if (!hdr_get(value, vlen, &cas, &flags) || klen > CACHED_KEY_MAX)
		return true;  /* not an item of ours */
	if (expires_at) {
		if (expires_at <= d->now)
			return true;
		exp = (int64_t)(d->now_wall + (expires_at - d->now + NS_PER_S / 2) /
		                NS_PER_S);
	}
	if (!out_reserve(c, room, false)) {
		d->refused = true;
		return false;
	}
	p = c->out + c->out_len;
	memcpy(p, "key=", 4);
	p += 4 + uri_encode(p + 4, key, klen);
	p += snprintf(p, 128, " exp=%" PRId64 " la=%" PRIu64 " cas=%" PRIu64
	              " fetch=yes cls=1 size=%zu\n", exp, d->now_wall,
	              cas & CACHED_CAS_MASK, admit_lru_entry_charge(klen, vlen));
	c->out_len = (size_t)(p - c->out);
	return true;
}

/* Whether the class list names class 1 (every item's); *bad when a class
 * id is not one memcached has (1 .. 63), *none when it names none. */
static bool
classes_hold_items(const char *p, size_t n, bool *bad, bool *none)
{
	bool one = false;
	size_t i = 0;

	*bad = false;
	*none = true;
	while (i < n) {
		size_t j = i;
		uint64_t id;

		while (j < n && p[j] != ',')
			j++;
		if (j > i) {
			*none = false;
			if (!cached_strtoull(p + i, j - i, &id) || id < 1 ||
			    id > CLASS_MAX) {
				*bad = true;
				return false;
			}
			one |= id == 1;
		}
		i = j + 1;
	}
	return one;
}

void
do_metadump(struct conn *c, const struct cached_req *req)
{
	struct cached_store *st = c->w->srv->store;
	struct dump d = { .c = c, .now = admit_lru_now(st->lru),
	                  .now_wall = (uint64_t)time(NULL) };
	bool bad, none, all;

	all = (req->rest_len == 3 && !memcmp(req->rest, "all", 3)) ||
	      (req->rest_len == 4 && !memcmp(req->rest, "hash", 4));
	if (!all && !classes_hold_items(req->rest, req->rest_len, &bad, &none)) {
		out_str(c, bad ? "BADCLASS invalid class id\r\n"
		        : none ? "NOTSTARTED no items to crawl\r\n" : "END\r\n");
		return;
	}
	flush_due(st);
	if (admit_lru_foreach(st->lru, dump_item, &d) != ADMIT_OK)
		d.refused = true;
	out_reserve(c, 64, true);
	out_str(c, d.refused ? "SERVER_ERROR out of memory writing metadump\r\n"
	                     : "END\r\n");
}
