/*
 * meta_cmd.c - runs the meta commands (mg ms md ma; mn is a text command):
 * a parsed request goes to the store as one call, whose outcome becomes
 * the reply's code and flags (reply.c writes a hit's).
 */
#include "config.h"  /* first: it defines _GNU_SOURCE */

#include <string.h>

#include "server.h"

/* Runs a parsed meta command (an ms with its data block). */
void
do_meta(struct conn *c, const struct cached_meta *m, const char *data)
{
	struct worker *w = c->w;
	struct meta_out o = { c, m, false };
	struct cached_meta_result r;
	const char *code = NULL;
	char line[META_LINE], *p;
	bool quiet = false;

	switch (m->cmd) {
	case 'g': add(&w->ctr.cmd_get, 1); break;
	case 's': add(&w->ctr.cmd_set, 1); break;
	default: break;
	}
	switch (cached_store_meta(w->srv->store, &w->scratch, m, data, &r,
	                          meta_write_hit, &o)) {
	case CACHED_META_HIT:
		if (m->cmd == 'g')
			add(&w->ctr.get_hits, 1);
		if (o.refused)
			out_str(c, "SERVER_ERROR out of memory writing get response\r\n");
		else if (m->long_opaque)
			out_str(c, "CLIENT_ERROR opaque token too long\r\n");
		return;
	case CACHED_META_MISS:
		add(&w->ctr.get_misses, 1);
		code = "EN";
		quiet = m->q;
		break;
	case CACHED_META_STORED:
		add(&w->ctr.total_items, 1);
		code = "HD";
		quiet = m->q;
		break;
	case CACHED_META_DELETED:
		code = "HD";
		quiet = m->q;
		break;
	case CACHED_META_NOT_STORED: code = "NS"; break;
	case CACHED_META_EXISTS: code = "EX"; break;
	case CACHED_META_NOT_FOUND: code = "NF"; break;
	case CACHED_META_NON_NUMERIC:
		out_str(c, "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
		return;
	case CACHED_META_TOO_LARGE:
		out_str(c, "SERVER_ERROR object too large for cache\r\n");
		return;
	default:
		out_str(c, m->cmd == 's' ? "SERVER_ERROR out of memory storing object\r\n"
		                         : "SERVER_ERROR out of memory\r\n");
		return;
	}
	if (m->long_opaque) {
		out_str(c, "CLIENT_ERROR opaque token too long\r\n");
		return;
	}
	if (quiet)
		return;
	memcpy(line, code, 2);
	p = meta_flags(line + 2, m, &r, r.status == CACHED_META_STORED);
	memcpy(p, "\r\n", 2);
	out_bytes(c, line, (size_t)(p + 2 - line));
}

/* A meta request line: run it, or wait for an ms's data block. */
void
meta_line(struct conn *c, const char *line, size_t len)
{
	const char *error = NULL;

	switch (cached_meta_parse(line, len, &c->meta, &error)) {
	case CACHED_PARSE_OK:
		break;
	case CACHED_PARSE_CLIENT_ERROR:
		out_fmt(c, "CLIENT_ERROR %s\r\n", error);
		if (c->meta.has_data) {
			c->skip = c->meta.bytes + 2;
			c->state = SWALLOW;
		}
		return;
	default:
		out_str(c, "ERROR\r\n");
		return;
	}
	if (c->meta.cmd != 's') {
		do_meta(c, &c->meta, NULL);
		return;
	}
	if (c->meta.bytes > c->w->srv->opt.max_item ||
	    !in_reserve(c, (size_t)c->meta.bytes + 2)) {
		out_str(c, c->meta.bytes > c->w->srv->opt.max_item
		           ? "SERVER_ERROR object too large for cache\r\n"
		           : "SERVER_ERROR out of memory storing object\r\n");
		c->skip = c->meta.bytes + 2;
		c->state = SWALLOW;
		return;
	}
	c->req.bytes = c->meta.bytes;
	c->meta_data = true;
	c->state = READ_DATA;
}
