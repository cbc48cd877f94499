/*
 * reply.c - the reply lines that carry an item: a get's VALUE block and a
 * meta command's, each written straight into the connection's output
 * buffer, reserved whole first so that a refusal never leaves part of one
 * in the stream.
 */
#include "config.h"  /* first: it defines _GNU_SOURCE */

#include <string.h>

#include "server.h"

/* Writes " " and v in decimal at p; returns the end.  (vsnprintf cost more
 * than the rest of a hit's user time.) */
static char *
put_num(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	*p++ = ' ';
	while (n)
		*p++ = tmp[--n];
	return p;
}

/*
 * Writes one hit's VALUE block into the connection's output buffer: the
 * item's data is copied once, straight from the cache (it runs inside
 * admit_lru's read section, so it must not block: out_reserve allocates
 * but never waits).  The whole block is reserved before any of it is
 * written, so a refusal never leaves part of one in the stream.
 */
void
write_value(const struct cached_item *it, void *arg)
{
	struct value_out *v = arg;
	struct conn *c = v->c;

	char *p;

	/* "VALUE " key " flags bytes cas\r\n" data "\r\n": the numbers
	 * take at most 3 x 21 bytes. */
	if (!out_reserve(c, 6 + v->klen + 3 * 21 + 2 + it->len + 2, false)) {
		v->refused = true;
		return;
	}
	p = c->out + c->out_len;
	memcpy(p, "VALUE ", 6);
	memcpy(p + 6, v->key, v->klen);
	p = put_num(p + 6 + v->klen, it->flags);
	p = put_num(p, it->len);
	if (c->gets)
		p = put_num(p, it->cas);
	memcpy(p, "\r\n", 2);
	memcpy(p + 2, it->data, it->len);
	memcpy(p + 2 + it->len, "\r\n", 2);
	c->out_len = (size_t)(p + 4 + it->len - c->out);
}

/* Writes " " f and v in decimal at p; returns the end. */
static char *
flag_num(char *p, char f, uint64_t v)
{
	char *end = put_num(p + 1, v);

	p[0] = ' ';
	p[1] = f;
	return end;
}

/* The return flags of a meta reply, in the order they were asked for;
 * hit: the item's own (else only k and O, as memcached gives them). */
char *
meta_flags(char *p, const struct cached_meta *m,
           const struct cached_meta_result *r, bool hit)
{
	for (unsigned i = 0; i < m->nflags; i++) {
		char f = m->order[i];

		/* ms answers c on every outcome (0 when nothing was
		 * stored), as memcached does. */
		if (!hit && f != 'k' && f != 'O' && !(f == 'c' && m->cmd == 's'))
			continue;
		switch (f) {
		case 'c':
			if (m->cmd != 'd') {
				p = flag_num(p, 'c', r->cas);
			}
			break;
		case 'f':
			if (m->cmd == 'g') {
				p = flag_num(p, 'f', r->flags);
			}
			break;
		case 's':
			if (m->cmd == 'g') {
				p = flag_num(p, 's', r->len);
			}
			break;
		case 't':
			if (m->cmd == 'g' || m->cmd == 'a') {
				int64_t t = r->ttl_t;

				if (t < 0) {
					memcpy(p, " t-1", 4);
					p += 4;
				} else {
					p = flag_num(p, 't', (uint64_t)t);
				}
			}
			break;
		case 'k':
			/* A base64 key is given back as memcached gives it:
			 * the decoded key encoded again (what the decoder
			 * skipped is gone). */
			memcpy(p, " k", 2);
			p += 2;
			if (m->b) {
				p += cached_base64_encode((const unsigned char *)m->key,
				                          m->klen, p);
				memcpy(p, " b", 2);
				p += 2;
			} else {
				memcpy(p, m->rkey, m->rklen);
				p += m->rklen;
			}
			break;
		case 'O':
			memcpy(p, " O", 2);
			memcpy(p + 2, m->opaque, m->olen);
			p += 2 + m->olen;
			break;
		default:
			break;
		}
	}
	return p;
}

/* Writes a HIT's reply (mg, ma): VA with the value, or HD. */
void
meta_write_hit(const struct cached_meta_result *r, void *arg)
{
	struct meta_out *o = arg;
	struct conn *c = o->c;
	const struct cached_meta *m = o->m;
	char *p;

	/* q hides an ma's HD when it changed an item, not when it created
	 * one (memcached's rule); a long opaque replaces the reply. */
	if ((m->q && m->cmd == 'a' && r->found) || m->long_opaque)
		return;
	if (!out_reserve(c, META_LINE + (m->v ? r->len + 2 : 0), false)) {
		o->refused = true;
		return;
	}
	p = c->out + c->out_len;
	if (m->v) {
		memcpy(p, "VA", 2);
		p = put_num(p + 2, r->len);
	} else {
		memcpy(p, "HD", 2);
		p += 2;
	}
	p = meta_flags(p, m, r, true);
	if (r->won_before) {
		memcpy(p, " Z", 2);
		p += 2;
	}
	if (r->stale) {
		memcpy(p, " X", 2);
		p += 2;
	}
	if (r->win) {
		memcpy(p, " W", 2);
		p += 2;
	}
	memcpy(p, "\r\n", 2);
	p += 2;
	if (m->v) {
		memcpy(p, r->data, r->len);
		memcpy(p + r->len, "\r\n", 2);
		p += r->len + 2;
	}
	c->out_len = (size_t)(p - c->out);
}
