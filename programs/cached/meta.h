/*
 * meta.h - the meta commands of memcached 1.6's text protocol (mg, ms, md,
 * ma; mn is answered by the server alone): their request lines, parsed
 * as memcached 1.6.18 parses them, into a request that keeps copies of
 * everything it needs (the connection's buffer may move while an ms waits
 * for its data block).  Pure functions, like proto.h.
 */
#ifndef CACHED_META_H
#define CACHED_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define CACHED_META_FLAGS 24   /* most flags a request may carry */
#define CACHED_OPAQUE_MAX 31u  /* longest opaque: memcached takes an O
                                * token of 32 bytes, the O included */

struct cached_meta {
	char cmd;                 /* 'g', 's', 'd' or 'a' */
	char key[CACHED_KEY_MAX]; /* the key (decoded when base64) */
	size_t klen;
	char rkey[CACHED_KEY_MAX];/* the key as sent, for the k flag */
	size_t rklen;
	char order[CACHED_META_FLAGS]; /* the flags, in the order sent */
	unsigned nflags;
	unsigned t_at, T_at, N_at, O_at, R_at; /* positions of t, T, N, O
	                          * and R in order[] (CACHED_META_FLAGS if
	                          * absent) */
	bool b, q, v, I;          /* base64 key, quiet, value, invalidate */
	bool has_C, has_T, has_N, has_R, has_F, has_O;
	uint64_t C, J, D;         /* compare CAS; ma's initial value, delta */
	int64_t T, N, R;          /* new TTL, vivify TTL, recache below TTL */
	uint32_t F;               /* ms: client flags */
	char mode;                /* ms: S E A P R; ma: + or - */
	char opaque[CACHED_OPAQUE_MAX];
	size_t olen;
	bool long_opaque;         /* mg, ma: an O token over the limit,
	                           * refused after the command has run
	                           * (memcached checks it as it writes the
	                           * reply: the flags after the O take no
	                           * effect, and an mg hands out no win
	                           * token) */
	uint64_t bytes;           /* ms: the data block's length */
	bool has_data;            /* ms: a data block follows (skip it after
	                           * an error too) */
};

/*
 * Parses a meta request line (without its end of line) whose first token
 * is mg, ms, md or ma.  CACHED_PARSE_OK, CACHED_PARSE_ERROR (no key), or
 * CACHED_PARSE_CLIENT_ERROR with *error set to memcached's message.
 */
enum cached_parse cached_meta_parse(const char *line, size_t len,
                                    struct cached_meta *m, const char **error);

/* Whether the line's first token is a meta command this parser takes. */
bool cached_meta_is(const char *line, size_t len);

/* Base64 (RFC 4648, padded) of p[0..n) into out (4 * ((n + 2) / 3)
 * bytes); returns its length. */
size_t cached_base64_encode(const unsigned char *p, size_t n, char *out);

#endif /* CACHED_META_H */
