/*
 * proto.c - the memcached text protocol's request lines, read as memcached
 * 1.6 reads them: tokens are separated by spaces; a number is what C's
 * strtol/strtoull accept in the whole token (leading white space and a
 * sign included, overflow refused), then stored in memcached's width: an
 * exptime, delay or data length is truncated to 32 signed bits and flags
 * to 32 unsigned bits, as memcached's own assignments truncate them; each
 * command takes the token counts memcached takes, and a last token
 * "noreply" silences every reply of the command, its errors included.
 */
#include <string.h>

#include "proto.h"

#define MAX_TOKENS 24  /* memcached's: the last keeps the rest of the line */

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

/* The first space of [p, end), or end. */
static const char *
token_end(const char *p, const char *end)
{
	const char *sp = memchr(p, ' ', (size_t)(end - p));

	return sp ? sp : end;
}

size_t
cached_tokenize(const char *p, const char *end, struct cached_tok *t, size_t max)
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
		p = token_end(p, end);
		t[n].n = (size_t)(p - t[n].p);
		n++;
	}
	return n;
}

static bool
tok_is(const struct cached_tok *t, const char *s)
{
	size_t n = strlen(s);

	return t->n == n && memcmp(t->p, s, n) == 0;
}

static bool
is_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

bool
cached_strtoull(const char *p, size_t n, uint64_t *out)
{
	size_t i = 0, digits;
	bool neg = false;
	uint64_t v = 0;

	while (i < n && is_space(p[i]))
		i++;
	if (i < n && (p[i] == '+' || p[i] == '-'))
		neg = p[i++] == '-';
	for (digits = i; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
		unsigned d = (unsigned)(p[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (i == digits || (i < n && p[i] != '\0' && !is_space(p[i])))
		return false;
	if (neg)
		v = 0 - v;
	/* A negative number is refused, not wrapped (strtoull would). */
	if ((int64_t)v < 0 && memchr(p, '-', n))
		return false;
	*out = v;
	return true;
}

/* strtol over the whole token, as memcached's safe_strtol: a long. */
static bool
tok_i64(const struct cached_tok *t, int64_t *out)
{
	size_t i = 0, digits;
	bool neg = false;
	uint64_t v = 0, lim;

	while (i < t->n && is_space(t->p[i]))
		i++;
	if (i < t->n && (t->p[i] == '+' || t->p[i] == '-'))
		neg = t->p[i++] == '-';
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (digits = i; i < t->n && t->p[i] >= '0' && t->p[i] <= '9'; i++) {
		unsigned d = (unsigned)(t->p[i] - '0');

		if (v > (lim - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (i == digits || (i < t->n && t->p[i] != '\0' && !is_space(t->p[i])))
		return false;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

bool
cached_tok_i32(const struct cached_tok *t, int64_t *out)
{
	int64_t v;

	if (!tok_i64(t, &v))
		return false;
	*out = (int32_t)(uint32_t)(uint64_t)v;
	return true;
}

static bool
tok_u64(const struct cached_tok *t, uint64_t *out)
{
	return cached_strtoull(t->p, t->n, out);
}

static enum cached_parse
client_error(struct cached_req *req, const char *msg)
{
	req->error = msg;
	return CACHED_PARSE_CLIENT_ERROR;
}

/* memcached's set_noreply_maybe: the last token is "noreply". */
static void
noreply_maybe(struct cached_req *req, const struct cached_tok *t, size_t n)
{
	req->noreply = n > 1 && tok_is(&t[n - 1], "noreply");
}

static bool
take_key(struct cached_req *req, const struct cached_tok *t)
{
	req->key = t->p;
	req->klen = t->n;
	return t->n <= CACHED_KEY_MAX;
}

/*
 * set/add/replace/append/prepend take 5 tokens, cas 6, and one more that is
 * ignored unless it is "noreply".  Once the data length is known, the data
 * block is skipped after any error (has_data): a value is never read as a
 * command.
 */
static enum cached_parse
parse_storage(struct cached_req *req, struct cached_tok *t, size_t n)
{
	bool cas = req->cmd == CACHED_CAS;
	size_t want = cas ? 6 : 5;
	uint64_t flags;
	int64_t bytes;

	if (n != want && n != want + 1)
		return CACHED_PARSE_ERROR;
	noreply_maybe(req, t, n);
	if (cached_tok_i32(&t[4], &bytes) && bytes >= 0 && bytes <= INT32_MAX - 2) {
		req->bytes = (uint64_t)bytes;
		req->has_data = true;
	}
	if (!take_key(req, &t[1]) || !tok_u64(&t[2], &flags) ||
	    !cached_tok_i32(&t[3], &req->exptime) || !req->has_data ||
	    (cas && !tok_u64(&t[5], &req->cas)))
		return client_error(req, BAD_FORMAT);
	req->flags = (uint32_t)flags;
	return CACHED_PARSE_OK;
}

#define CMD(s, c) { s, sizeof(s) - 1, c }

/* By how often clients send them: the lookup stops at the first match. */
static const struct {
	const char *name;
	size_t len;
	enum cached_cmd cmd;
} commands[] = {
	CMD("get", CACHED_GET), CMD("set", CACHED_SET),
	CMD("gets", CACHED_GETS), CMD("delete", CACHED_DELETE),
	CMD("add", CACHED_ADD), CMD("replace", CACHED_REPLACE),
	CMD("append", CACHED_APPEND), CMD("prepend", CACHED_PREPEND),
	CMD("cas", CACHED_CAS), CMD("incr", CACHED_INCR),
	CMD("decr", CACHED_DECR), CMD("touch", CACHED_TOUCH),
	CMD("gat", CACHED_GAT), CMD("gats", CACHED_GATS),
	CMD("flush_all", CACHED_FLUSH_ALL), CMD("verbosity", CACHED_VERBOSITY),
	CMD("stats", CACHED_STATS), CMD("version", CACHED_VERSION),
	CMD("quit", CACHED_QUIT), CMD("mn", CACHED_MN),
	CMD("lru_crawler", CACHED_LRU_CRAWLER),
};

/* A retrieval's key list from *p: the first key (if any) and the rest. */
static enum cached_parse
take_keys(struct cached_req *req, const char *p, const char *end)
{
	req->key = p;
	req->klen = 0;
	cached_next_key(&p, end, &req->key, &req->klen);
	req->rest = p;
	req->rest_len = (size_t)(end - p);
	if (req->klen > CACHED_KEY_MAX)
		return client_error(req, BAD_FORMAT);
	return CACHED_PARSE_OK;
}

/* The commands whose every word is a token: t[0..n) is the line. */
static enum cached_parse
parse_tokens(struct cached_req *req, struct cached_tok *t, size_t n)
{
	switch (req->cmd) {
	case CACHED_SET:
	case CACHED_ADD:
	case CACHED_REPLACE:
	case CACHED_APPEND:
	case CACHED_PREPEND:
	case CACHED_CAS:
		return parse_storage(req, t, n);
	case CACHED_DELETE:
		if (n < 2 || n > 4)
			return CACHED_PARSE_ERROR;
		/* As memcached: a lone key is a key, "noreply" included. */
		if (n > 2)
			noreply_maybe(req, t, n);
		/* "delete <key> 0" is an old form memcached still accepts. */
		if (n > 2 && !((n == 3 && (tok_is(&t[2], "0") || req->noreply)) ||
		               (n == 4 && tok_is(&t[2], "0") && req->noreply)))
			return client_error(req, "bad command line format.  "
			                         "Usage: delete <key> [noreply]");
		return take_key(req, &t[1]) ? CACHED_PARSE_OK
		                            : client_error(req, BAD_FORMAT);
	case CACHED_INCR:
	case CACHED_DECR:
		if (n != 3 && n != 4)
			return CACHED_PARSE_ERROR;
		noreply_maybe(req, t, n);
		if (!take_key(req, &t[1]))
			return client_error(req, BAD_FORMAT);
		if (!tok_u64(&t[2], &req->delta))
			return client_error(req, "invalid numeric delta argument");
		return CACHED_PARSE_OK;
	case CACHED_TOUCH:
		if (n != 3 && n != 4)
			return CACHED_PARSE_ERROR;
		noreply_maybe(req, t, n);
		if (!take_key(req, &t[1]))
			return client_error(req, BAD_FORMAT);
		if (!cached_tok_i32(&t[2], &req->exptime))
			return client_error(req, "invalid exptime argument");
		return CACHED_PARSE_OK;
	case CACHED_FLUSH_ALL:
		if (n > 3)
			return CACHED_PARSE_ERROR;
		noreply_maybe(req, t, n);
		if (n != (req->noreply ? 2u : 1u) && !cached_tok_i32(&t[1], &req->exptime))
			return client_error(req, "invalid exptime argument");
		return CACHED_PARSE_OK;
	case CACHED_VERBOSITY:
		if (n != 2 && n != 3)
			return CACHED_PARSE_ERROR;
		noreply_maybe(req, t, n);
		if (!tok_u64(&t[1], &req->delta))
			return client_error(req, BAD_FORMAT);
		return CACHED_PARSE_OK;
	case CACHED_LRU_CRAWLER:
		/* metadump alone: the crawler's other commands are ERROR. */
		if (n != 3 || !tok_is(&t[1], "metadump"))
			return CACHED_PARSE_ERROR;
		req->rest = t[2].p;
		req->rest_len = t[2].n;
		return CACHED_PARSE_OK;
	default:
		return CACHED_PARSE_ERROR;
	}
}

/*
 * A number of 1 to 9 plain digits from *p up to a space (or end when
 * last): below 2^31, so every width memcached keeps it in holds it as the
 * general parser reads it.  Moves *p past it and its space.
 */
static bool
short_num(const char **p, const char *end, bool last, uint64_t *v)
{
	const char *s = *p, *lim = end - s > 9 ? s + 9 : end;

	*v = 0;
	while (s < lim && *s >= '0' && *s <= '9')
		*v = *v * 10 + (uint64_t)(*s++ - '0');
	if (s == *p || (last ? s != end : s == end || *s != ' '))
		return false;
	*p = s + !last;
	return true;
}

/*
 * The lines a read-through cache sends: "get <key>" and "set <key> <flags>
 * <exptime> <bytes>", one space between words and none after them, plain
 * numbers; *req as cached_parse_line gives it.  False for any other line
 * (req then undefined), which the general parser reads.
 */
static bool
parse_common(const char *line, size_t len, struct cached_req *req)
{
	const char *end = line + len, *p = line + 4, *sp;
	uint64_t flags, exptime;

	if (len < 5 || line[3] != ' ' || *p == ' ')
		return false;
	if (!memcmp(line, "get", 3)) {
		if (len - 4 > CACHED_KEY_MAX || memchr(p, ' ', len - 4))
			return false;
		memset(req, 0, sizeof(*req));
		req->cmd = CACHED_GET;
		req->key = p;
		req->klen = len - 4;
		req->rest = end;
		return true;
	}
	if (memcmp(line, "set", 3) ||
	    !(sp = memchr(p, ' ', (size_t)(end - p))) ||
	    (size_t)(sp - p) > CACHED_KEY_MAX)
		return false;
	memset(req, 0, sizeof(*req));
	req->key = p;
	req->klen = (size_t)(sp - p);
	p = sp + 1;
	if (!short_num(&p, end, false, &flags) ||
	    !short_num(&p, end, false, &exptime) ||
	    !short_num(&p, end, true, &req->bytes))
		return false;
	req->cmd = CACHED_SET;
	req->flags = (uint32_t)flags;
	req->exptime = (int64_t)exptime;
	req->has_data = true;
	return true;
}

enum cached_parse
cached_parse_line(const char *line, size_t len, struct cached_req *req)
{
	struct cached_tok t[MAX_TOKENS];
	const char *end = line + len;
	size_t n, i;

	if (parse_common(line, len, req))
		return CACHED_PARSE_OK;
	memset(req, 0, sizeof(*req));
	/* The command word, and the rest of the line as one token: a get's
	 * keys are read once, by take_keys. */
	n = cached_tokenize(line, end, t, 2);
	if (n == 0)
		return CACHED_PARSE_ERROR;
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (t[0].n == commands[i].len &&
		    memcmp(t[0].p, commands[i].name, commands[i].len) == 0)
			break;
	if (i == sizeof(commands) / sizeof(commands[0])) {
		/* memcached hangs up on an HTTP request line (a browser
		 * talking to the port): its last token starts "HTTP/". */
		n = cached_tokenize(line, end, t, MAX_TOKENS);
		if (t[n - 1].n >= 5 && !memcmp(t[n - 1].p, "HTTP/", 5))
			return CACHED_PARSE_CLOSE;
		return CACHED_PARSE_ERROR;
	}
	req->cmd = commands[i].cmd;

	switch (req->cmd) {
	case CACHED_GET:
	case CACHED_GETS:
		if (n < 2)
			return CACHED_PARSE_ERROR;
		return take_keys(req, t[1].p, end);
	case CACHED_GAT:
	case CACHED_GATS:
		if (n < 2)
			return CACHED_PARSE_ERROR;
		n = cached_tokenize(t[1].p, end, t + 1, 2) + 1;
		if (!cached_tok_i32(&t[1], &req->exptime))
			return client_error(req, "invalid exptime argument");
		return take_keys(req, n == 3 ? t[2].p : end, end);
	case CACHED_STATS:
		if (n >= 2) {
			req->rest = t[1].p;
			req->rest_len = (size_t)(end - t[1].p);
			while (req->rest_len && req->rest[req->rest_len - 1] == ' ')
				req->rest_len--;
		}
		return CACHED_PARSE_OK;
	case CACHED_VERSION:
	case CACHED_QUIT:
	case CACHED_MN:
		return CACHED_PARSE_OK;
	default:
		break;
	}

	n = cached_tokenize(line, end, t, MAX_TOKENS);
	return parse_tokens(req, t, n);
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
	s = token_end(s, end);
	*klen = (size_t)(s - *key);
	*p = s;
	return true;
}
