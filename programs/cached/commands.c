/*
 * commands.c - the text protocol's commands: execute() runs a parsed
 * request line (storage commands go on to the connection's READ_DATA), and
 * a get's keys are answered one by one (get_keys) as they arrive.
 */
#include "config.h"  /* first: it defines _GNU_SOURCE */

#include <inttypes.h>
#include <string.h>

#include "server.h"

void
reply(struct conn *c, bool noreply, const char *s)
{
	if (!noreply)
		out_str(c, s);
}

/*
 * Answers one key of a get.  False when refused (the caller skips the
 * rest of the line).
 */
static bool
get_key(struct conn *c, const char *key, size_t klen)
{
	struct worker *w = c->w;
	struct value_out v = { c, key, klen, false };

	enum cached_lookup r;

	add(&w->ctr.cmd_get, 1);
	if (c->gat) {
		add(&w->ctr.cmd_touch, 1);
		r = cached_store_gat(w->srv->store, &w->scratch, key, klen,
		                     c->gat_exptime, write_value, &v);
		add(r == CACHED_HIT ? &w->ctr.touch_hits : &w->ctr.touch_misses, 1);
	} else {
		r = cached_store_get(w->srv->store, &w->scratch, key, klen,
		                     write_value, &v);
	}
	if (r != CACHED_HIT) {
		add(&w->ctr.get_misses, 1);
		return true;
	}
	add(&w->ctr.get_hits, 1);
	if (v.refused) {
		out_str(c, "SERVER_ERROR out of memory writing get response\r\n");
		return false;
	}
	return true;
}

/*
 * GET_KEYS: answers the keys buffered, one by one, until the line's end
 * ("END"), a key too long (an error, then SKIP_LINE), more input needed,
 * or output above OUT_HIGH.  A key is a run of bytes up to a space or the
 * end of line (a "\r" before the "\n" is not part of it); a NUL ends the
 * line, as it ends memcached's (the rest is skipped).
 */
void
get_keys(struct conn *c)
{
	while (!c->closing && pending_out(c) < OUT_HIGH) {
		const char *buf = c->in + c->in_off;
		size_t avail = c->in_len - c->in_off, lim, i, klen;

		while (avail && *buf == ' ') {
			buf++;
			avail--;
			c->in_off++;
		}
		if (!avail)
			return;
		if (*buf == '\n' || *buf == '\0') {
			c->in_off++;
			out_str(c, "END\r\n");
			c->state = *buf ? READ_LINE : SKIP_LINE;
			return;
		}
		lim = avail < CACHED_KEY_MAX + 2 ? avail : CACHED_KEY_MAX + 2;
		for (i = 0; i < lim && buf[i] != ' ' && buf[i] != '\n' &&
		            buf[i] != '\0'; i++)
			;
		if (i == lim && avail < CACHED_KEY_MAX + 2)
			return;  /* the key may go on */
		klen = i;
		if (i < lim && buf[i] == '\n' && klen && buf[klen - 1] == '\r')
			klen--;
		if (klen > CACHED_KEY_MAX) {
			out_str(c, "CLIENT_ERROR bad command line format\r\n");
			c->state = SKIP_LINE;
			return;
		}
		c->last_progress = time(NULL);
		if (klen && !get_key(c, buf, klen)) {
			c->state = SKIP_LINE;
			return;
		}
		c->in_off += i;
	}
}

/* Whether a line too long to be buffered whole is a get, answered key by
 * key. */
bool
starts_get(const char *buf, size_t n, bool *gets)
{
	*gets = n >= 5 && !memcmp(buf, "gets ", 5);
	return *gets || (n >= 4 && !memcmp(buf, "get ", 4));
}

/* A get line buffered whole: refused as a whole if a key is too long (as
 * memcached does), else answered: a single key at once, several by
 * get_keys from the first. */
static void
start_get(struct conn *c, const struct cached_req *req)
{
	const char *p = req->rest, *end = req->rest + req->rest_len, *key;
	size_t klen;
	bool more = false;

	while (cached_next_key(&p, end, &key, &klen)) {
		if (klen > CACHED_KEY_MAX) {
			out_str(c, "CLIENT_ERROR bad command line format\r\n");
			return;
		}
		more = true;
	}
	c->gets = req->cmd == CACHED_GETS || req->cmd == CACHED_GATS;
	c->gat = req->cmd == CACHED_GAT || req->cmd == CACHED_GATS;
	c->gat_exptime = req->exptime;
	if (!more && req->klen) {
		/* One key: answered from the parsed line, as get_keys would
		 * (its reply, or its refusal without END). */
		if (get_key(c, req->key, req->klen))
			out_str(c, "END\r\n");
		return;
	}
	/* Back to the first key: the line is still in the buffer. */
	c->in_off = (size_t)(req->key - c->in);
	c->state = GET_KEYS;
}

/*
 * A storage command refused for its size or for memory: as in memcached, a
 * set removes the key's old value (a client that failed to write must not
 * read what it meant to replace).
 */
static void
refuse_update(struct conn *c, const struct cached_req *req, const char *msg)
{
	struct worker *w = c->w;

	if (req->cmd == CACHED_SET)
		cached_store_delete(w->srv->store, &w->scratch, req->key, req->klen);
	reply(c, req->noreply, msg);
}

void
do_update(struct conn *c, const struct cached_req *req, const char *data)
{
	struct worker *w = c->w;
	enum cached_result r;

	add(&w->ctr.cmd_set, 1);
	r = cached_store_update(w->srv->store, &w->scratch, req, data);
	if (req->cmd == CACHED_CAS)
		add(r == CACHED_STORED ? &w->ctr.cas_hits
		    : r == CACHED_EXISTS ? &w->ctr.cas_badval : &w->ctr.cas_misses, 1);
	if (r == CACHED_STORED)
		add(&w->ctr.total_items, 1);
	switch (r) {
	case CACHED_STORED: reply(c, req->noreply, "STORED\r\n"); break;
	case CACHED_NOT_STORED: reply(c, req->noreply, "NOT_STORED\r\n"); break;
	case CACHED_EXISTS: reply(c, req->noreply, "EXISTS\r\n"); break;
	case CACHED_NOT_FOUND: reply(c, req->noreply, "NOT_FOUND\r\n"); break;
	case CACHED_TOO_LARGE:
		refuse_update(c, req, "SERVER_ERROR object too large for cache\r\n");
		break;
	default:
		refuse_update(c, req, "SERVER_ERROR out of memory storing object\r\n");
		break;
	}
}

/* Runs one parsed request line; a storage command goes on to READ_DATA. */
void
execute(struct conn *c, struct cached_req *req)
{
	struct worker *w = c->w;
	struct cached_store *st = w->srv->store;
	enum cached_result r;
	uint64_t v;

	switch (req->cmd) {
	case CACHED_GET:
	case CACHED_GETS:
	case CACHED_GAT:
	case CACHED_GATS:
		start_get(c, req);
		return;
	case CACHED_SET: case CACHED_ADD: case CACHED_REPLACE:
	case CACHED_APPEND: case CACHED_PREPEND: case CACHED_CAS:
		if (req->bytes > w->srv->opt.max_item) {
			refuse_update(c, req, "SERVER_ERROR object too large for cache\r\n");
			c->skip = req->bytes + 2;
			c->state = SWALLOW;
			return;
		}
		memcpy(c->key, req->key, req->klen);
		c->req = *req;
		c->req.key = c->key;
		c->meta_data = false;
		/* The whole block is buffered: room for it now, or a refusal
		 * before any of it is read. */
		if (!in_reserve(c, (size_t)req->bytes + 2)) {
			refuse_update(c, req, "SERVER_ERROR out of memory storing object\r\n");
			c->skip = req->bytes + 2;
			c->state = SWALLOW;
			return;
		}
		c->state = READ_DATA;
		return;
	case CACHED_DELETE:
		r = cached_store_delete(st, &w->scratch, req->key, req->klen);
		add(r == CACHED_DELETED ? &w->ctr.delete_hits : &w->ctr.delete_misses, 1);
		reply(c, req->noreply, r == CACHED_DELETED ? "DELETED\r\n" : "NOT_FOUND\r\n");
		return;
	case CACHED_INCR:
	case CACHED_DECR:
		r = cached_store_arith(st, &w->scratch, req, &v);
		if (r == CACHED_NUMBER) {
			add(req->cmd == CACHED_INCR ? &w->ctr.incr_hits : &w->ctr.decr_hits, 1);
			add(&w->ctr.total_items, 1);
		}
		else if (r == CACHED_NOT_FOUND)
			add(req->cmd == CACHED_INCR ? &w->ctr.incr_misses : &w->ctr.decr_misses, 1);
		if (req->noreply)
			return;
		if (r == CACHED_NUMBER)
			out_fmt(c, "%" PRIu64 "\r\n", v);
		else if (r == CACHED_NOT_FOUND)
			out_str(c, "NOT_FOUND\r\n");
		else if (r == CACHED_NON_NUMERIC)
			out_str(c, "CLIENT_ERROR cannot increment or decrement "
			           "non-numeric value\r\n");
		else
			out_str(c, "SERVER_ERROR out of memory\r\n");
		return;
	case CACHED_TOUCH:
		add(&w->ctr.cmd_touch, 1);
		r = cached_store_touch(st, &w->scratch, req);
		add(r == CACHED_TOUCHED ? &w->ctr.touch_hits : &w->ctr.touch_misses, 1);
		reply(c, req->noreply, r == CACHED_TOUCHED ? "TOUCHED\r\n" : "NOT_FOUND\r\n");
		return;
	case CACHED_FLUSH_ALL:
		add(&w->ctr.cmd_flush, 1);
		reply(c, req->noreply, cached_store_flush(st, req->exptime)
		                       ? "SERVER_ERROR out of memory\r\n" : "OK\r\n");
		return;
	case CACHED_VERBOSITY:
		atomic_store(&w->srv->verbosity, (unsigned)req->delta);
		reply(c, req->noreply, "OK\r\n");
		return;
	case CACHED_STATS:
		do_stats(c, req);
		return;
	case CACHED_VERSION:
		out_str(c, "VERSION " PROTOCOL_VERSION "\r\n");
		return;
	case CACHED_QUIT:
		c->closing = true;
		return;
	case CACHED_MN:
		out_str(c, "MN\r\n");
		return;
	case CACHED_LRU_CRAWLER:
		do_metadump(c, req);
		return;
	}
}
