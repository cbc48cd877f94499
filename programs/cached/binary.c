/*
 * binary.c - memcached's binary protocol, on the same port as the text
 * protocol: a connection whose first byte is 0x80 speaks it to the end.
 *
 * A request is a 24-byte header (magic 0x80, opcode, key length, extras
 * length, data type, vbucket, total body length, opaque, CAS unique, all
 * big-endian), then the extras, the key and the value.  A reply has the
 * same header with magic 0x81 and a status where the vbucket was; the
 * opaque is given back as received.  The quiet opcodes (getq, setq, ...)
 * answer errors only, and getq/getkq a hit.
 *
 * Bad input is answered as memcached 1.6 answers it: a header whose key
 * and extras do not fit its body gets "Unknown command" and the
 * connection is closed, as is one whose key is over 250 bytes or whose
 * lengths do not suit its opcode ("Invalid arguments"); an unknown opcode
 * gets "Unknown command" and as many bytes as its body length are skipped
 * after its key; a byte other than 0x80 where a header starts closes the
 * connection without a reply.  A value is buffered whole before it is
 * stored (charged to --conn-memory like a text data block); one over
 * --max-item is refused ("Too large.") and skipped unbuffered.
 */
#include "config.h"  /* first: it defines _GNU_SOURCE */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

#define BIN_HDR 24u
#define BIN_REQ 0x80
#define BIN_RES 0x81

/* The opcodes served; any other is an unknown command. */
enum bin_op {
	OP_GET = 0x00, OP_SET = 0x01, OP_ADD = 0x02, OP_REPLACE = 0x03,
	OP_DELETE = 0x04, OP_INCR = 0x05, OP_DECR = 0x06, OP_QUIT = 0x07,
	OP_FLUSH = 0x08, OP_GETQ = 0x09, OP_NOOP = 0x0a, OP_VERSION = 0x0b,
	OP_GETK = 0x0c, OP_GETKQ = 0x0d, OP_APPEND = 0x0e, OP_PREPEND = 0x0f,
	OP_STAT = 0x10, OP_SETQ = 0x11, OP_ADDQ = 0x12, OP_REPLACEQ = 0x13,
	OP_DELETEQ = 0x14, OP_INCRQ = 0x15, OP_DECRQ = 0x16, OP_QUITQ = 0x17,
	OP_FLUSHQ = 0x18, OP_APPENDQ = 0x19, OP_PREPENDQ = 0x1a,
	OP_TOUCH = 0x1c, OP_GAT = 0x1d, OP_GATQ = 0x1e, OP_SASL_LIST = 0x20,
	OP_SASL_AUTH = 0x21, OP_SASL_STEP = 0x22, OP_GATK = 0x23,
	OP_GATKQ = 0x24,
};

/* Reply statuses, with the words memcached gives each. */
enum bin_status {
	ST_OK = 0x00, ST_NOT_FOUND = 0x01, ST_EXISTS = 0x02, ST_TOO_BIG = 0x03,
	ST_EINVAL = 0x04, ST_NOT_STORED = 0x05, ST_BADVAL = 0x06,
	ST_UNKNOWN = 0x81, ST_NOMEM = 0x82,
};

/* A request's header, in host order (the opaque as received). */
struct bin_req {
	uint8_t op;       /* the quiet ones mapped to their loud twins */
	uint8_t raw_op;   /* as received: what the reply carries */
	uint8_t extlen;
	uint16_t keylen;
	uint32_t bodylen;
	unsigned char opaque[4];
	uint64_t cas;
	bool quiet;
	const unsigned char *ext;
	const char *key;
};

static uint16_t
be16(const unsigned char *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint64_t
be64(const unsigned char *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static void
put_be(unsigned char *p, uint64_t v, unsigned n)
{
	while (n--) {
		p[n] = (unsigned char)v;
		v >>= 8;
	}
}

/* The loud twin of a quiet opcode, or op itself. */
static uint8_t
loud(uint8_t op, bool *quiet)
{
	static const uint8_t pairs[][2] = {
		{ OP_GETQ, OP_GET }, { OP_GETKQ, OP_GETK }, { OP_SETQ, OP_SET },
		{ OP_ADDQ, OP_ADD }, { OP_REPLACEQ, OP_REPLACE },
		{ OP_DELETEQ, OP_DELETE }, { OP_INCRQ, OP_INCR },
		{ OP_DECRQ, OP_DECR }, { OP_QUITQ, OP_QUIT },
		{ OP_FLUSHQ, OP_FLUSH }, { OP_APPENDQ, OP_APPEND },
		{ OP_PREPENDQ, OP_PREPEND }, { OP_GATQ, OP_GAT },
		{ OP_GATKQ, OP_GATK },
	};

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if (pairs[i][0] == op) {
			*quiet = true;
			return pairs[i][1];
		}
	*quiet = false;
	return op;
}

/* Whether the opcode carries a value to store after its key. */
static bool
has_value(uint8_t op)
{
	return op == OP_SET || op == OP_ADD || op == OP_REPLACE ||
	       op == OP_APPEND || op == OP_PREPEND;
}

/* Whether a storage command's lengths suit it (else "Invalid arguments"). */
static bool
value_lengths_ok(uint8_t op, uint8_t extlen, uint16_t keylen, uint32_t body)
{
	if (op == OP_APPEND || op == OP_PREPEND)
		return keylen > 0 && extlen == 0;
	return extlen == 8 && keylen != 0 && body >= (uint32_t)keylen + 8;
}

/* Writes a reply header at p. */
static void
header(unsigned char *p, const struct bin_req *r, uint16_t status,
       uint8_t extlen, uint16_t keylen, uint32_t bodylen, uint64_t cas)
{
	p[0] = BIN_RES;
	p[1] = r->raw_op;
	put_be(p + 2, keylen, 2);
	p[4] = extlen;
	p[5] = 0;
	put_be(p + 6, status, 2);
	put_be(p + 8, bodylen, 4);
	memcpy(p + 12, r->opaque, 4);
	put_be(p + 16, cas, 8);
}

/* A whole reply: header, extras, key, value; false (nothing written) when
 * the output buffer cannot take it and !force. */
static bool
reply_parts(struct conn *c, const struct bin_req *r, uint16_t status,
            const void *ext, uint8_t extlen, const void *key, uint16_t keylen,
            const void *val, size_t vlen, uint64_t cas, bool force)
{
	size_t body = (size_t)extlen + keylen + vlen;
	unsigned char *p;

	if (!out_reserve(c, BIN_HDR + body, force)) {
		if (force)
			c->closing = true;  /* cannot answer: drop the client */
		return false;
	}
	p = (unsigned char *)c->out + c->out_len;
	header(p, r, status, extlen, keylen, (uint32_t)body, cas);
	p += BIN_HDR;
	if (extlen)
		memcpy(p, ext, extlen);
	if (keylen)
		memcpy(p + extlen, key, keylen);
	if (vlen)
		memcpy(p + extlen + keylen, val, vlen);
	c->out_len += BIN_HDR + body;
	return true;
}

/* An error reply, sent for quiet commands too: the status's words. */
static void
reply_error(struct conn *c, const struct bin_req *r, enum bin_status st)
{
	const char *msg;

	switch (st) {
	case ST_NOT_FOUND: msg = "Not found"; break;
	case ST_EXISTS: msg = "Data exists for key."; break;
	case ST_TOO_BIG: msg = "Too large."; break;
	case ST_EINVAL: msg = "Invalid arguments"; break;
	case ST_NOT_STORED: msg = "Not stored."; break;
	case ST_BADVAL: msg = "Non-numeric server-side value for incr or decr"; break;
	case ST_UNKNOWN: msg = "Unknown command"; break;
	default: msg = "Out of memory"; break;
	}
	reply_parts(c, r, (uint16_t)st, NULL, 0, NULL, 0, msg, strlen(msg), 0, true);
}

/* A success without a body other than val: not sent for a quiet command. */
static void
reply_ok(struct conn *c, const struct bin_req *r, const void *val, size_t vlen,
         uint64_t cas)
{
	if (!r->quiet)
		reply_parts(c, r, ST_OK, NULL, 0, NULL, 0, val, vlen, cas, true);
}

/* What a get's or gat's reader is given. */
struct bin_value {
	struct conn *c;
	const struct bin_req *r;
	bool with_key, with_value;
	bool refused;
};

/* Writes a hit: flags, the key (getk, gatk), the value (not touch's). */
static void
write_hit(const struct cached_item *it, void *arg)
{
	struct bin_value *v = arg;
	unsigned char flags[4];

	put_be(flags, it->flags, 4);
	if (!reply_parts(v->c, v->r, ST_OK, flags, 4, v->r->key,
	                 v->with_key ? v->r->keylen : 0, it->data,
	                 v->with_value ? it->len : 0, it->cas, false))
		v->refused = true;
}

/* get, getk, touch, gat, gatk and their quiet forms. */
static void
get_or_touch(struct conn *c, const struct bin_req *r)
{
	struct worker *w = c->w;
	bool touch = r->op == OP_TOUCH || r->op == OP_GAT || r->op == OP_GATK;
	struct bin_value v = { c, r, r->op == OP_GETK || r->op == OP_GATK,
	                       r->op != OP_TOUCH, false };
	enum cached_lookup hit;

	if (touch) {
		add(&w->ctr.cmd_touch, 1);
		hit = cached_store_gat(w->srv->store, &w->scratch, r->key, r->keylen,
		                       (int64_t)be32(r->ext), write_hit, &v);
		add(hit == CACHED_HIT ? &w->ctr.touch_hits : &w->ctr.touch_misses, 1);
	} else {
		add(&w->ctr.cmd_get, 1);
		hit = cached_store_get(w->srv->store, &w->scratch, r->key, r->keylen,
		                       write_hit, &v);
		add(hit == CACHED_HIT ? &w->ctr.get_hits : &w->ctr.get_misses, 1);
	}
	if (hit == CACHED_HIT) {
		if (v.refused)
			reply_error(c, r, ST_NOMEM);
		return;
	}
	if (r->quiet)
		return;
	if (v.with_key)  /* the key in place of the words */
		reply_parts(c, r, ST_NOT_FOUND, NULL, 0, r->key, r->keylen,
		            NULL, 0, 0, true);
	else
		reply_error(c, r, ST_NOT_FOUND);
}

/* A storage command whose value was refused before it was read: as
 * memcached, a set removes the key's old value. */
static void
refuse_value(struct conn *c, const struct bin_req *r, uint32_t vlen,
             enum bin_status st)
{
	struct worker *w = c->w;

	if (r->op == OP_SET)
		cached_store_delete(w->srv->store, &w->scratch, r->key, r->keylen);
	reply_error(c, r, st);
	c->skip = vlen;
	c->state = vlen ? SWALLOW : READ_LINE;
}

/* set, add, replace, append, prepend and their quiet forms, the value
 * buffered at data.  A non-zero CAS unique makes set, add and replace a
 * cas, as in memcached. */
static void
update(struct conn *c, const struct bin_req *r, const char *data, uint32_t vlen)
{
	struct worker *w = c->w;
	struct cached_req req = { .key = r->key, .klen = r->keylen,
	                          .bytes = vlen, .cas = r->cas };
	enum cached_result res;
	uint64_t cas = 0;

	switch (r->op) {
	case OP_SET: req.cmd = CACHED_SET; break;
	case OP_ADD: req.cmd = CACHED_ADD; break;
	case OP_REPLACE: req.cmd = CACHED_REPLACE; break;
	case OP_APPEND: req.cmd = CACHED_APPEND; break;
	default: req.cmd = CACHED_PREPEND; break;
	}
	if (r->extlen == 8) {
		req.flags = be32(r->ext);
		req.exptime = be32(r->ext + 4);
		if (r->cas)
			req.cmd = CACHED_CAS;
	}
	add(&w->ctr.cmd_set, 1);
	res = cached_store_update_cas(w->srv->store, &w->scratch, &req, data, &cas);
	if (req.cmd == CACHED_CAS)
		add(res == CACHED_STORED ? &w->ctr.cas_hits
		    : res == CACHED_EXISTS ? &w->ctr.cas_badval : &w->ctr.cas_misses, 1);
	switch (res) {
	case CACHED_STORED:
		add(&w->ctr.total_items, 1);
		reply_ok(c, r, NULL, 0, cas);
		return;
	case CACHED_EXISTS: reply_error(c, r, ST_EXISTS); return;
	case CACHED_NOT_FOUND: reply_error(c, r, ST_NOT_FOUND); return;
	case CACHED_TOO_LARGE:
	case CACHED_NOMEM:
		/* A set the cache cannot hold: as a text set, the old value
		 * goes (a client that failed to write must not read what it
		 * meant to replace). */
		if (r->op == OP_SET) {
			cached_store_delete(w->srv->store, &w->scratch, r->key,
			                    r->keylen);
			reply_error(c, r, res == CACHED_TOO_LARGE ? ST_TOO_BIG
			                                          : ST_NOMEM);
			return;
		}
		/* fall through - memcached's replies by command */
	default:
		reply_error(c, r, req.cmd == CACHED_ADD ? ST_EXISTS
		                  : req.cmd == CACHED_REPLACE ? ST_NOT_FOUND
		                  : ST_NOT_STORED);
		return;
	}
}

/* incr/decr: absent, the key is created with the initial value unless the
 * expiry is 0xffffffff. */
static void
arith(struct conn *c, const struct bin_req *r)
{
	struct worker *w = c->w;
	struct cached_req req = { .cmd = r->op == OP_INCR ? CACHED_INCR : CACHED_DECR,
	                          .key = r->key, .klen = r->keylen,
	                          .delta = be64(r->ext), .cas = r->cas };
	uint64_t initial = be64(r->ext + 8), v = 0, cas = 0;
	uint32_t exptime = be32(r->ext + 16);
	unsigned char num[8];
	char text[24];
	enum cached_result res;

	res = cached_store_arith_cas(w->srv->store, &w->scratch, &req, &v, &cas);
	if (res == CACHED_NOT_FOUND) {
		add(req.cmd == CACHED_INCR ? &w->ctr.incr_misses : &w->ctr.decr_misses, 1);
		if (exptime == 0xffffffffu) {
			reply_error(c, r, ST_NOT_FOUND);
			return;
		}
		req = (struct cached_req){ .cmd = CACHED_ADD, .key = r->key,
		                           .klen = r->keylen, .exptime = exptime };
		req.bytes = (uint64_t)snprintf(text, sizeof(text), "%llu",
		                               (unsigned long long)initial);
		res = cached_store_update_cas(w->srv->store, &w->scratch, &req,
		                              text, &cas);
		if (res != CACHED_STORED) {
			reply_error(c, r, ST_NOT_STORED);
			return;
		}
		res = CACHED_NUMBER;
		v = initial;
	} else if (res == CACHED_NUMBER) {
		add(req.cmd == CACHED_INCR ? &w->ctr.incr_hits : &w->ctr.decr_hits, 1);
	}
	switch (res) {
	case CACHED_NUMBER:
		add(&w->ctr.total_items, 1);
		put_be(num, v, 8);
		reply_ok(c, r, num, 8, cas);
		return;
	case CACHED_NON_NUMERIC: reply_error(c, r, ST_BADVAL); return;
	case CACHED_EXISTS: reply_error(c, r, ST_EXISTS); return;
	default: reply_error(c, r, ST_NOMEM); return;
	}
}

static void
bin_delete(struct conn *c, const struct bin_req *r)
{
	struct worker *w = c->w;
	enum cached_result res;

	res = cached_store_delete_cas(w->srv->store, &w->scratch, r->key,
	                              r->keylen, r->cas);
	add(res == CACHED_DELETED ? &w->ctr.delete_hits : &w->ctr.delete_misses, 1);
	if (res == CACHED_DELETED)
		reply_ok(c, r, NULL, 0, 0);
	else
		reply_error(c, r, res == CACHED_EXISTS ? ST_EXISTS : ST_NOT_FOUND);
}

/*
 * stat [group]: each statistic a reply (key its name, value its value),
 * then one empty reply.  The text protocol's lines are written first, then
 * turned into replies, so the two protocols give the same statistics.
 */
static void
bin_stat(struct conn *c, const struct bin_req *r)
{
	struct cached_req req = { .cmd = CACHED_STATS, .rest = r->key,
	                          .rest_len = r->keylen };
	size_t mark = c->out_len, n;
	char *text, *p, *end;

	do_stats(c, &req);
	if (c->closing || c->out_len < mark)
		return;
	n = c->out_len - mark;
	text = malloc(n ? n : 1);
	if (!text) {
		c->out_len = mark;
		reply_error(c, r, ST_NOMEM);
		return;
	}
	memcpy(text, c->out + mark, n);
	c->out_len = mark;
	for (p = text, end = text + n; p < end; ) {
		char *eol = memchr(p, '\r', (size_t)(end - p)), *name, *sp;

		if (!eol)
			break;
		if (eol - p > 5 && !memcmp(p, "STAT ", 5)) {
			name = p + 5;
			sp = memchr(name, ' ', (size_t)(eol - name));
			if (sp)
				reply_parts(c, r, ST_OK, NULL, 0, name,
				            (uint16_t)(sp - name), sp + 1,
				            (size_t)(eol - sp - 1), 0, true);
		} else if ((eol - p == 5 && !memcmp(p, "ERROR", 5)) ||
		           (eol - p > 12 && !memcmp(p, "CLIENT_ERROR", 12))) {
			reply_error(c, r, ST_NOT_FOUND);
			break;
		} else if (eol - p == 3 && !memcmp(p, "END", 3) && r->keylen >= 6 &&
		           !memcmp(r->key, "detail", 6)) {
			/* detail dump: the text dump as one reply, as memcached */
			reply_parts(c, r, ST_OK, NULL, 0, "detailed", 8, p,
			            (size_t)(eol + 2 - p), 0, true);
			reply_parts(c, r, ST_OK, NULL, 0, NULL, 0, NULL, 0, 0, true);
			break;
		} else {  /* END, RESET, or detail's OK */
			reply_parts(c, r, ST_OK, NULL, 0, NULL, 0, NULL, 0, 0, true);
			break;
		}
		p = eol + 2;
	}
	free(text);
}

/* Whether the lengths suit the opcode, as memcached checks them. */
static bool
lengths_ok(const struct bin_req *r)
{
	uint32_t k = r->keylen, e = r->extlen, b = r->bodylen;

	switch (r->op) {
	case OP_VERSION: case OP_NOOP: case OP_QUIT:
		return !e && !k && !b;
	case OP_FLUSH:
		return !k && b == e && (e == 0 || e == 4);
	case OP_SET: case OP_ADD: case OP_REPLACE:
	case OP_APPEND: case OP_PREPEND:
		return value_lengths_ok(r->op, r->extlen, r->keylen, b);
	case OP_GET: case OP_GETK:
		return !e && b == k && k > 0;
	case OP_DELETE:
		return k > 0 && !e && b == k;
	case OP_INCR: case OP_DECR:
		return k > 0 && e == 20 && b == k + e;
	case OP_STAT:
		return !e;
	case OP_TOUCH: case OP_GAT: case OP_GATK:
		return e == 4 && k != 0;
	case OP_SASL_LIST:
		return !e && !k && !b;
	case OP_SASL_AUTH: case OP_SASL_STEP:
		return !e && k != 0;
	default:
		return true;
	}
}

/* Runs a request whose header, extras and key are buffered (and value,
 * data non-NULL, when it has one). */
static void
dispatch(struct conn *c, const struct bin_req *r, const char *data,
         uint32_t vlen)
{
	struct worker *w = c->w;
	static const char version[] = PROTOCOL_VERSION;

	if (!lengths_ok(r)) {
		reply_error(c, r, ST_EINVAL);
		c->closing = true;
		return;
	}
	switch (r->op) {
	case OP_GET: case OP_GETK: case OP_TOUCH: case OP_GAT: case OP_GATK:
		get_or_touch(c, r);
		return;
	case OP_SET: case OP_ADD: case OP_REPLACE: case OP_APPEND: case OP_PREPEND:
		if (vlen > w->srv->opt.max_item)
			refuse_value(c, r, vlen, ST_TOO_BIG);
		else if (!data)
			refuse_value(c, r, vlen, ST_NOMEM);
		else
			update(c, r, data, vlen);
		return;
	case OP_DELETE: bin_delete(c, r); return;
	case OP_INCR: case OP_DECR: arith(c, r); return;
	case OP_FLUSH:
		add(&w->ctr.cmd_flush, 1);
		if (cached_store_flush(w->srv->store, r->extlen ? be32(r->ext) : 0))
			reply_error(c, r, ST_NOMEM);
		else
			reply_ok(c, r, NULL, 0, 0);
		return;
	case OP_NOOP: reply_ok(c, r, NULL, 0, 0); return;
	case OP_VERSION: reply_ok(c, r, version, sizeof(version) - 1, 0); return;
	case OP_STAT: bin_stat(c, r); return;
	case OP_QUIT:
		reply_ok(c, r, NULL, 0, 0);
		c->closing = true;
		return;
	case OP_SASL_LIST: case OP_SASL_AUTH: case OP_SASL_STEP:
		/* Without authentication, as memcached without -S: the
		 * value after the key is skipped. */
		reply_error(c, r, ST_UNKNOWN);
		c->skip = r->bodylen - r->keylen;
		c->state = c->skip ? SWALLOW : READ_LINE;
		return;
	default:
		/* memcached skips the body length after the key, whatever
		 * of it the extras and key took. */
		reply_error(c, r, ST_UNKNOWN);
		c->skip = r->bodylen;
		c->state = c->skip ? SWALLOW : READ_LINE;
		return;
	}
}

/* Reads the header at p into r (the extras and key not yet). */
static void
read_header(struct bin_req *r, const unsigned char *p)
{
	r->raw_op = p[1];
	r->op = loud(p[1], &r->quiet);
	r->keylen = be16(p + 2);
	r->extlen = p[4];
	r->bodylen = be32(p + 8);
	memcpy(r->opaque, p + 12, 4);
	r->cas = be64(p + 16);
}

/*
 * Bytes the request (its header read into r) needs buffered to run: up to
 * its key, as memcached reads it, and past its value when that is to be
 * buffered (not one too large, or refused for memory).
 */
static size_t
need_of(const struct conn *c, const struct bin_req *r)
{
	size_t need = BIN_HDR + r->extlen + r->keylen;
	uint32_t vlen;

	if ((uint32_t)r->keylen + r->extlen > r->bodylen ||
	    r->keylen > CACHED_KEY_MAX || !has_value(r->op) || c->bin_nomem ||
	    !value_lengths_ok(r->op, r->extlen, r->keylen, r->bodylen))
		return need;
	vlen = r->bodylen - r->extlen - r->keylen;
	return vlen > c->w->srv->opt.max_item ? need : need + vlen;
}

bool
bin_runnable(const struct conn *c)
{
	return c->in_len - c->in_off >= (c->bin_wait ? c->bin_wait : BIN_HDR);
}

/* A header's first sight: what its request waits for.  False when the
 * connection is to close (no magic, or no room for the key). */
static bool
first_sight(struct conn *c)
{
	const unsigned char *p = (const unsigned char *)c->in + c->in_off;
	struct bin_req r;
	size_t need;

	if (p[0] != BIN_REQ) {
		c->closing = true;
		return false;
	}
	read_header(&r, p);
	need = need_of(c, &r);
	/* The whole value is buffered: room for it now, or a refusal once
	 * the key is in (the value is then skipped, never buffered). */
	if (need > c->in_cap && !in_reserve(c, need)) {
		c->bin_nomem = true;
		need = need_of(c, &r);
		if (need > c->in_cap && !in_reserve(c, need)) {
			c->closing = true;
			return false;
		}
	}
	c->bin_wait = need;
	return true;
}

/* A request whose key and extras are in: the checks memcached makes before
 * it looks at the opcode.  False when refused (the connection closes). */
static bool
head_ok(struct conn *c, const struct bin_req *r)
{
	if (r->keylen > r->bodylen || (uint32_t)r->keylen + r->extlen > r->bodylen) {
		reply_error(c, r, ST_UNKNOWN);
		c->closing = true;
		return false;
	}
	if (r->keylen > CACHED_KEY_MAX) {
		reply_error(c, r, ST_EINVAL);
		c->closing = true;
		return false;
	}
	return true;
}

bool
bin_request(struct conn *c)
{
	struct bin_req r;
	const unsigned char *p;
	uint32_t vlen = 0;
	const char *data = NULL;

	if (c->in_len - c->in_off < BIN_HDR)
		return false;
	if (!c->bin_wait && !first_sight(c))
		return false;
	if (c->in_len - c->in_off < c->bin_wait)
		return false;
	p = (const unsigned char *)c->in + c->in_off;
	read_header(&r, p);
	r.ext = p + BIN_HDR;
	r.key = (const char *)p + BIN_HDR + r.extlen;
	c->in_off += c->bin_wait;
	c->bin_wait = 0;
	c->last_progress = time(NULL);
	if (head_ok(c, &r)) {
		if (has_value(r.op) &&
		    value_lengths_ok(r.op, r.extlen, r.keylen, r.bodylen)) {
			vlen = r.bodylen - r.extlen - r.keylen;
			if (!c->bin_nomem && vlen <= c->w->srv->opt.max_item)
				data = (const char *)r.key + r.keylen;
		}
		dispatch(c, &r, data, vlen);
	}
	c->bin_nomem = false;
	return !c->closing;
}
