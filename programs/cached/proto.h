/*
 * proto.h - admit-cached's parser for the memcached text protocol.
 *
 * Pure functions over bytes: no sockets, no allocation, no global state, so
 * the libFuzzer target (fuzz_proto.c) drives exactly what the server runs.
 * Every pointer a parsed request holds points into the caller's line.
 */
#ifndef CACHED_PROTO_H
#define CACHED_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CACHED_KEY_MAX 250u

enum cached_cmd {
	CACHED_GET, CACHED_GETS, CACHED_SET, CACHED_ADD, CACHED_REPLACE,
	CACHED_APPEND, CACHED_PREPEND, CACHED_CAS, CACHED_DELETE, CACHED_INCR,
	CACHED_DECR, CACHED_TOUCH, CACHED_FLUSH_ALL, CACHED_VERBOSITY,
	CACHED_STATS, CACHED_VERSION, CACHED_QUIT, CACHED_GAT, CACHED_GATS,
	CACHED_MN, CACHED_LRU_CRAWLER,
};

enum cached_parse {
	CACHED_PARSE_OK,
	CACHED_PARSE_ERROR,        /* unknown command or wrong arity: "ERROR" */
	CACHED_PARSE_CLIENT_ERROR, /* "CLIENT_ERROR <req->error>", unless
	                            * req->noreply */
	CACHED_PARSE_CLOSE,        /* an HTTP request line: hang up */
};

struct cached_req {
	enum cached_cmd cmd;
	const char *key;       /* first key (every command that has one) */
	size_t klen;
	const char *rest;      /* get/gets/gat/gats: the keys after the
	                        * first; stats: its argument (may be empty);
	                        * lru_crawler metadump: its class list */
	size_t rest_len;
	uint32_t flags;
	int64_t exptime;       /* also touch's and gat's exptime and
	                        * flush_all's delay */
	uint64_t bytes;        /* storage commands: data block length */
	uint64_t cas;          /* cas: the unique to compare */
	uint64_t delta;        /* incr/decr */
	bool noreply;          /* the last token is "noreply": no reply at
	                        * all, errors included (as memcached) */
	bool has_data;         /* a data block of bytes + 2 follows the line,
	                        * also after a CLIENT_ERROR (swallow it) */
	const char *error;     /* CACHED_PARSE_CLIENT_ERROR's message */
};

/* Outcomes of cached_find_line. */
enum cached_line {
	CACHED_LINE_OK,        /* a line of *len bytes, *consumed with its
	                        * "\r\n" or "\n" */
	CACHED_LINE_MORE,      /* no end of line yet, and within max_line */
	CACHED_LINE_TOO_LONG,  /* no end of line within max_line bytes */
};

/* A token of a request line: [p, p + n). */
struct cached_tok {
	const char *p;
	size_t n;
};

/* Splits at most max space-separated tokens off [p, end) into t; the last
 * one keeps what is left of the line.  Returns the count. */
size_t cached_tokenize(const char *p, const char *end, struct cached_tok *t,
                       size_t max);

/* A number memcached keeps in an int32_t (exptime, delay, data length, a
 * meta TTL): C's strtol over the whole token (a long; overflow refused),
 * then truncated to 32 bits as memcached's assignment truncates it. */
bool cached_tok_i32(const struct cached_tok *t, int64_t *out);

/* Finds the first line of buf[0..n). */
enum cached_line cached_find_line(const char *buf, size_t n, size_t max_line,
                                  size_t *len, size_t *consumed);

/* Parses one request line (without its end of line) into *req. */
enum cached_parse cached_parse_line(const char *line, size_t len,
                                    struct cached_req *req);

/*
 * Takes the next key of a get's key list from *p (advancing it past the
 * key); false at the end of the list.  A key longer than CACHED_KEY_MAX is
 * returned as is: the caller rejects it.
 */
bool cached_next_key(const char **p, const char *end, const char **key,
                     size_t *klen);

/*
 * memcached's safe_strtoull over p[0..n): C's strtoull (leading white
 * space, a sign) of a number that ends at the end, a NUL or white space;
 * false on overflow, no digits, or a negative number.  Also reads an
 * item's data for incr/decr.
 */
bool cached_strtoull(const char *p, size_t n, uint64_t *out);

#endif /* CACHED_PROTO_H */
