/*
 * proto.c - the memcached text protocol's request lines, parsed strictly:
 * numbers are plain decimal without sign (exptime and delays may be
 * negative), overflow is an error, tokens are separated by spaces, and a
 * trailing token is accepted only when it is "noreply".
 */
#include <string.h>

#include "proto.h"

#define MAX_TOKENS 8

struct tok {
	const char *p;
	size_t n;
};

static const char BAD_FORMAT[] = "bad command line format";

enum cached_line
cached_find_line(const char *buf, size_t n, size_t max_line, size_t *len,
                 size_t *consumed)
{
	size_t look = n < max_line + 2 ? n : max_line + 2;
	const char *nl = memchr(buf, '\n', look);
	size_t l;

	if (!nl)
		return n > max_line ? CACHED_LINE_TOO_LONG : CACHED_LINE_MORE;
	l = (size_t)(nl - buf);
	*consumed = l + 1;
	if (l && buf[l - 1] == '\r')
		l--;
	if (l > max_line)
		return CACHED_LINE_TOO_LONG;
	*len = l;
	return CACHED_LINE_OK;
}

/* Splits at most max tokens off line; the last one keeps what is left.
 * Returns the count. */
static size_t
tokenize(const char *p, const char *end, struct tok *t, size_t max)
{
	size_t n = 0;

	while (n < max) {
		while (p < end && *p == ' ')
			p++;
		if (p == end)
			break;
		t[n].p = p;
		if (n + 1 == max) {
			while (end > p && end[-1] == ' ')
				end--;
			t[n++].n = (size_t)(end - p);
			break;
		}
		while (p < end && *p != ' ')
			p++;
		t[n].n = (size_t)(p - t[n].p);
		n++;
	}
	return n;
}

static bool
tok_is(const struct tok *t, const char *s)
{
	size_t n = strlen(s);

	return t->n == n && memcmp(t->p, s, n) == 0;
}

static bool
parse_u64(const struct tok *t, uint64_t *out)
{
	uint64_t v = 0;

	if (t->n == 0 || t->n > 20)
		return false;
	for (size_t i = 0; i < t->n; i++) {
		unsigned d = (unsigned char)t->p[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static bool
parse_i64(const struct tok *t, int64_t *out)
{
	struct tok digits = *t;
	bool neg = t->n && t->p[0] == '-';
	uint64_t v;

	if (neg) {
		digits.p++;
		digits.n--;
	}
	if (!parse_u64(&digits, &v) || v > (uint64_t)INT64_MAX)
		return false;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return true;
}

static enum cached_parse
client_error(struct cached_req *req, const char *msg)
{
	req->error = msg;
	return CACHED_PARSE_CLIENT_ERROR;
}

/* Consumes a final "noreply" among the n tokens, if present, and checks the
 * remaining count is within [min, max]. */
static bool
arity(struct cached_req *req, const struct tok *t, size_t *n, size_t min,
      size_t max)
{
	if (*n > min && tok_is(&t[*n - 1], "noreply")) {
		req->noreply = true;
		(*n)--;
	}
	return *n >= min && *n <= max;
}

static bool
take_key(struct cached_req *req, const struct tok *t)
{
	req->key = t->p;
	req->klen = t->n;
	return t->n <= CACHED_KEY_MAX;
}

static enum cached_parse
parse_storage(struct cached_req *req, struct tok *t, size_t n)
{
	bool cas = req->cmd == CACHED_CAS;
	size_t want = cas ? 6 : 5;
	uint64_t flags;

	if (!arity(req, t, &n, want, want))
		return CACHED_PARSE_ERROR;
	/* memcached's data length is a non-negative int; past that nothing
	 * sensible can be swallowed. */
	if (!parse_u64(&t[4], &req->bytes) || req->bytes > INT32_MAX - 2)
		return client_error(req, BAD_FORMAT);
	req->has_data = true;
	if (!take_key(req, &t[1]) || !parse_u64(&t[2], &flags) ||
	    flags > UINT32_MAX || !parse_i64(&t[3], &req->exptime) ||
	    (cas && !parse_u64(&t[5], &req->cas)))
		return client_error(req, BAD_FORMAT);
	req->flags = (uint32_t)flags;
	return CACHED_PARSE_OK;
}

static const struct {
	const char *name;
	enum cached_cmd cmd;
} commands[] = {
	{ "get", CACHED_GET }, { "gets", CACHED_GETS }, { "set", CACHED_SET },
	{ "add", CACHED_ADD }, { "replace", CACHED_REPLACE },
	{ "append", CACHED_APPEND }, { "prepend", CACHED_PREPEND },
	{ "cas", CACHED_CAS }, { "delete", CACHED_DELETE },
	{ "incr", CACHED_INCR }, { "decr", CACHED_DECR },
	{ "touch", CACHED_TOUCH }, { "flush_all", CACHED_FLUSH_ALL },
	{ "verbosity", CACHED_VERBOSITY }, { "stats", CACHED_STATS },
	{ "version", CACHED_VERSION }, { "quit", CACHED_QUIT },
};

enum cached_parse
cached_parse_line(const char *line, size_t len, struct cached_req *req)
{
	struct tok t[MAX_TOKENS];
	size_t n, i;

	memset(req, 0, sizeof(*req));
	n = tokenize(line, line + len, t, 2);
	if (n == 0)
		return CACHED_PARSE_ERROR;
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (tok_is(&t[0], commands[i].name))
			break;
	if (i == sizeof(commands) / sizeof(commands[0]))
		return CACHED_PARSE_ERROR;
	req->cmd = commands[i].cmd;

	switch (req->cmd) {
	case CACHED_GET:
	case CACHED_GETS: {
		const char *p, *end = line + len;

		if (n < 2)
			return CACHED_PARSE_ERROR;
		p = t[1].p;
		cached_next_key(&p, end, &req->key, &req->klen);
		req->rest = p;
		req->rest_len = (size_t)(end - p);
		if (req->klen > CACHED_KEY_MAX)
			return client_error(req, BAD_FORMAT);
		return CACHED_PARSE_OK;
	}
	case CACHED_STATS:
		if (n == 2) {
			req->rest = t[1].p;
			req->rest_len = t[1].n;
		}
		return CACHED_PARSE_OK;
	default:
		break;
	}

	n = tokenize(line, line + len, t, MAX_TOKENS);
	if (n == MAX_TOKENS)
		return CACHED_PARSE_ERROR;
	switch (req->cmd) {
	case CACHED_SET:
	case CACHED_ADD:
	case CACHED_REPLACE:
	case CACHED_APPEND:
	case CACHED_PREPEND:
	case CACHED_CAS:
		return parse_storage(req, t, n);
	case CACHED_DELETE:
		if (!arity(req, t, &n, 2, 3))
			return CACHED_PARSE_ERROR;
		/* "delete <key> 0" is an old form memcached still accepts. */
		if (n == 3 && !tok_is(&t[2], "0"))
			return client_error(req, "bad command line format.  "
			                         "Usage: delete <key> [noreply]");
		return take_key(req, &t[1]) ? CACHED_PARSE_OK
		                            : client_error(req, BAD_FORMAT);
	case CACHED_INCR:
	case CACHED_DECR:
		if (!arity(req, t, &n, 3, 3))
			return CACHED_PARSE_ERROR;
		if (!take_key(req, &t[1]))
			return client_error(req, BAD_FORMAT);
		if (!parse_u64(&t[2], &req->delta))
			return client_error(req, "invalid numeric delta argument");
		return CACHED_PARSE_OK;
	case CACHED_TOUCH:
		if (!arity(req, t, &n, 3, 3))
			return CACHED_PARSE_ERROR;
		if (!take_key(req, &t[1]))
			return client_error(req, BAD_FORMAT);
		if (!parse_i64(&t[2], &req->exptime))
			return client_error(req, "invalid exptime argument");
		return CACHED_PARSE_OK;
	case CACHED_FLUSH_ALL:
		if (!arity(req, t, &n, 1, 2))
			return CACHED_PARSE_ERROR;
		if (n == 2 && !parse_i64(&t[1], &req->exptime))
			return client_error(req, BAD_FORMAT);
		return CACHED_PARSE_OK;
	case CACHED_VERBOSITY:
		/* memcached takes "verbosity noreply" as level 0, quietly. */
		if (n == 2 && tok_is(&t[1], "noreply")) {
			req->noreply = true;
			return CACHED_PARSE_OK;
		}
		if (!arity(req, t, &n, 2, 2))
			return CACHED_PARSE_ERROR;
		if (!parse_u64(&t[1], &req->delta))
			return client_error(req, BAD_FORMAT);
		return CACHED_PARSE_OK;
	case CACHED_VERSION:
	case CACHED_QUIT:
		return n == 1 ? CACHED_PARSE_OK : CACHED_PARSE_ERROR;
	default:
		return CACHED_PARSE_ERROR;
	}
}

bool
cached_next_key(const char **p, const char *end, const char **key,
                size_t *klen)
{
	const char *s = *p;

	while (s < end && *s == ' ')
		s++;
	if (s == end)
		return false;
	*key = s;
	while (s < end && *s != ' ')
		s++;
	*klen = (size_t)(s - *key);
	*p = s;
	return true;
}
