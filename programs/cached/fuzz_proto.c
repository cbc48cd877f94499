/*
 * fuzz_proto.c - libFuzzer target over admit-cached's request parser:
 * splits the input into lines as the server does (including data blocks
 * and their skipping), parses each line (a meta command's with the meta
 * parser) and checks what the parsers promise, among them that a space
 * before a line changes nothing (the tokenizer skips it, and it sends the
 * line past the parser's shortcut for the common get and set lines).
 * Build: make fuzz (needs clang); run: programs/cached/fuzz_proto.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "meta.h"
#include "proto.h"

#define MAX_LINE 2048

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Parses the line [p, p + len) again after a space: the same request. */
static void
check_spaced(const char *p, size_t len, enum cached_parse r,
             const struct cached_req *a)
{
	static char buf[MAX_LINE + 1];
	struct cached_req b;
	ptrdiff_t d = buf + 1 - p;

	buf[0] = ' ';
	memcpy(buf + 1, p, len);
	assert(cached_parse_line(buf, len + 1, &b) == r);
	if (r != CACHED_PARSE_OK && r != CACHED_PARSE_CLIENT_ERROR)
		return;
	assert(a->cmd == b.cmd && a->klen == b.klen && a->rest_len == b.rest_len &&
	       a->flags == b.flags && a->exptime == b.exptime &&
	       a->bytes == b.bytes && a->cas == b.cas && a->delta == b.delta &&
	       a->noreply == b.noreply && a->has_data == b.has_data &&
	       a->error == b.error);
	assert(!a->klen || a->key + d == b.key);
	assert(!a->rest_len || a->rest + d == b.rest);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;

	while (p < end) {
		struct cached_req req;
		size_t len, used, n = (size_t)(end - p);

		switch (cached_find_line(p, n, MAX_LINE, &len, &used)) {
		case CACHED_LINE_MORE:
		case CACHED_LINE_TOO_LONG:
			return 0;
		case CACHED_LINE_OK:
			break;
		}
		assert(len <= MAX_LINE && used <= n && len < used);
		if (cached_meta_is(p, len)) {
			struct cached_meta m;
			const char *error = NULL;

			switch (cached_meta_parse(p, len, &m, &error)) {
			case CACHED_PARSE_OK:
				assert(m.klen <= CACHED_KEY_MAX && m.rklen <= CACHED_KEY_MAX &&
				       m.olen <= CACHED_OPAQUE_MAX &&
				       m.nflags <= CACHED_META_FLAGS);
				assert(!m.b || m.klen <= m.rklen);
				break;
			case CACHED_PARSE_CLIENT_ERROR:
				assert(error && strlen(error) > 0);
				break;
			default:
				break;
			}
			p += used;
			if (m.has_data) {
				if (m.bytes + 2 > (uint64_t)(end - p))
					return 0;
				p += m.bytes + 2;
			}
			continue;
		}
		enum cached_parse r = cached_parse_line(p, len, &req);

		check_spaced(p, len, r, &req);
		switch (r) {
		case CACHED_PARSE_OK:
			assert(req.klen <= CACHED_KEY_MAX);
			if (req.klen)
				assert(req.key >= p && req.key + req.klen <= p + len);
			if (req.cmd == CACHED_GET || req.cmd == CACHED_GETS) {
				const char *q = req.rest, *k;
				size_t kl;

				assert(req.klen > 0);
				while (cached_next_key(&q, req.rest + req.rest_len, &k, &kl))
					assert(kl > 0 && k >= p && k + kl <= p + len &&
					       !memchr(k, ' ', kl));
			}
			break;
		case CACHED_PARSE_CLIENT_ERROR:
			assert(req.error && strlen(req.error) > 0);
			break;
		case CACHED_PARSE_ERROR:
		case CACHED_PARSE_CLOSE:
			break;
		}
		p += used;
		if (req.has_data) {
			if (req.bytes + 2 > (uint64_t)(end - p))
				return 0;
			p += req.bytes + 2;
		}
	}
	return 0;
}
