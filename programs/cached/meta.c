/*
 * meta.c - meta command lines (mg, ms, md, ma), read as memcached 1.6.18
 * reads them: "<cmd> <key> [<datalen>] <flag>*", each flag one character
 * and, for some, a token glued to it ("T30", "Oabc").  The key is at most
 * 250 bytes as sent; with the b flag it is base64 and decoded.  Every
 * command reads the same flags (a command ignores those that mean nothing
 * to it), and errors carry memcached's words: mg and ms give each error
 * its own, md and ma say "invalid or duplicate flag" for every flag error.
 */
#include <string.h>

#include "meta.h"

static const char B64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t
cached_base64_encode(const unsigned char *p, size_t n, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		out[o++] = B64[v >> 18];
		out[o++] = B64[(v >> 12) & 63];
		out[o++] = i + 1 < n ? B64[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? B64[v & 63] : '=';
	}
	return o;
}

static int
b64_val(char c)
{
	const char *q = c ? strchr(B64, c) : NULL;

	return q ? (int)(q - B64) : -1;
}

/*
 * Decodes base64 p[0..n) into out as memcached decodes a b key: bytes
 * outside the alphabet are skipped; the others ('=' a zero digit) must
 * number a non-zero multiple of four; the first group of four holding a
 * '=' ends the key, one dropping its last byte, two its last two, more
 * refusing the key.  False when refused.
 */
static bool
base64_decode(const char *p, size_t n, char *out, size_t *olen)
{
	size_t digits = 0, o = 0;
	unsigned pad = 0;
	uint32_t v = 0;

	for (size_t i = 0; i < n; i++)
		digits += p[i] == '=' || b64_val(p[i]) >= 0;
	if (!digits || digits % 4)
		return false;
	digits = 0;
	for (size_t i = 0; i < n; i++) {
		int d = p[i] == '=' ? 0 : b64_val(p[i]);

		if (d < 0)
			continue;
		pad += p[i] == '=';
		v = v << 6 | (uint32_t)d;
		if (++digits % 4)
			continue;
		out[o++] = (char)(v >> 16);
		out[o++] = (char)(v >> 8);
		out[o++] = (char)v;
		v = 0;
		if (pad) {
			if (pad > 2)
				return false;
			o -= pad;
			break;
		}
	}
	*olen = o;
	return true;
}

bool
cached_meta_is(const char *line, size_t len)
{
	return len >= 2 && line[0] == 'm' && strchr("gsda", line[1]) &&
	       (len == 2 || line[2] == ' ');
}

static bool
tok_i32(const char *p, size_t n, int64_t *out)
{
	struct cached_tok t = { p, n };

	return cached_tok_i32(&t, out);
}

/* The flags memcached 1.6.18 reads on every meta command; a command
 * ignores those that mean nothing to it.  mg's h and l are left out
 * (admit-cached(1) says why). */
static bool
known_flag(char cmd, unsigned char f)
{
	return strchr("bNTRlOPLkstcfvhuqFCMJDI", f) && f &&
	       !(cmd == 'g' && (f == 'h' || f == 'l'));
}

#define META_TOKENS_MAX 20
_Static_assert(META_TOKENS_MAX - 3 <= CACHED_META_FLAGS,
               "order[] holds every flag a line within the limit has");

/* What a meta line's flags leave for the checks after them. */
struct flag_state {
	char seen[128];
	char mode;                   /* M's letter, 0 if none */
	bool long_opaque;
	const char *pending;         /* the error of a bad value */
};

/* Reads flag f with its value v[0..vn) into m; a bad value is remembered
 * in st->pending, the last one's words winning (F's has none). */
static void
read_flag(struct cached_meta *m, unsigned char f, const char *v, size_t vn,
          struct flag_state *st)
{
	const char *bad = NULL;
	uint64_t u;

	switch (f) {
	case 'b':
		m->b = true;
		if (!base64_decode(m->rkey, m->rklen, m->key, &m->klen))
			bad = "error decoding key";
		break;
	case 'q': m->q = true; break;
	case 'v': m->v = true; break;
	case 'I': m->I = true; break;
	case 't': m->t_at = m->nflags; break;
	case 'T':
		m->T_at = m->nflags;
		if (!(m->has_T = tok_i32(v, vn, &m->T)))
			bad = "bad token in command line format";
		break;
	case 'N':
		m->N_at = m->nflags;
		if (!(m->has_N = tok_i32(v, vn, &m->N)))
			bad = "bad token in command line format";
		break;
	case 'R':
		m->R_at = m->nflags;
		if (!(m->has_R = tok_i32(v, vn, &m->R)))
			bad = "bad token in command line format";
		break;
	case 'C':
		if (!(m->has_C = cached_strtoull(v, vn, &m->C)))
			bad = "bad token in command line format";
		break;
	case 'J':
		if (!cached_strtoull(v, vn, &m->J))
			bad = "invalid numeric initial value";
		break;
	case 'D':
		if (!cached_strtoull(v, vn, &m->D))
			bad = "invalid numeric delta value";
		break;
	case 'F':
		m->has_F = cached_strtoull(v, vn, &u) &&
		           ((int64_t)u >= 0 || !memchr(v, '-', vn));
		m->F = (uint32_t)u;
		if (!m->has_F && !st->pending)
			st->pending = "bad command line format";
		break;
	case 'O':
		m->O_at = m->nflags;
		if (vn > CACHED_OPAQUE_MAX)
			st->long_opaque = true;
		else
			memcpy(m->opaque, v, vn);
		m->olen = vn;
		m->has_O = true;
		break;
	case 'M':
		if (vn != 1)
			bad = "incorrect length for M token";
		else
			st->mode = v[0];
		break;
	default:
		break;
	}
	if (bad)
		st->pending = bad;
}

/*
 * The command, the key and (ms) the data block's length: what comes before
 * the flags; CACHED_PARSE_OK with *first the first flag's token.
 */
static enum cached_parse
meta_head(const struct cached_tok *t, size_t n, struct cached_meta *m,
          size_t *first, const char **error)
{
	if (n < 2)
		return CACHED_PARSE_ERROR;
	*first = m->cmd == 's' ? 3 : 2;
	if (m->cmd == 's' && n >= *first) {
		int64_t bytes;

		/* A data block follows a valid length whatever else is wrong
		 * with the line, a key too long included (it is skipped after
		 * an error: a value never runs as a command). */
		if (tok_i32(t[2].p, t[2].n, &bytes) && bytes >= 0 &&
		    bytes <= INT32_MAX - 2) {
			m->bytes = (uint64_t)bytes;
			m->has_data = true;
		}
	}
	*error = "bad command line format";
	if (t[1].n > CACHED_KEY_MAX)
		return CACHED_PARSE_CLIENT_ERROR;
	memcpy(m->rkey, t[1].p, t[1].n);
	m->rklen = t[1].n;
	if (n < *first)
		return CACHED_PARSE_CLIENT_ERROR;
	/* memcached's limit: META_TOKENS_MAX tokens, the line's end counted
	 * as one.  It also keeps order[] in bounds: at most
	 * META_TOKENS_MAX - 3 flags follow the command and the key. */
	if (n + 1 > META_TOKENS_MAX) {
		*error = m->cmd == 'g' ? "options flags are too long"
		                       : "options flags too long";
		return CACHED_PARSE_CLIENT_ERROR;
	}
	if (m->cmd == 's' && !m->has_data)
		return CACHED_PARSE_CLIENT_ERROR;
	return CACHED_PARSE_OK;
}

/* The checks memcached makes after the last flag: a bad value's error, the
 * mode letter, a long opaque. */
static enum cached_parse
meta_tail(struct cached_meta *m, const struct flag_state *st, bool mgms,
          const char **error)
{
	if (st->pending) {
		*error = mgms ? st->pending : "invalid or duplicate flag";
		return CACHED_PARSE_CLIENT_ERROR;
	}
	if (st->mode && (m->cmd == 's' || m->cmd == 'a')) {
		if (!strchr(m->cmd == 's' ? "SEAPR" : "I+D-", st->mode)) {
			*error = m->cmd == 's' ? "invalid mode for ms M token"
			                       : "invalid mode for ma M token";
			return CACHED_PARSE_CLIENT_ERROR;
		}
		m->mode = m->cmd == 's' ? st->mode
		          : (st->mode == 'I' || st->mode == '+') ? '+' : '-';
	}
	if (st->long_opaque && (m->cmd == 'g' || m->cmd == 'a')) {
		m->long_opaque = true;
		m->olen = 0;
	} else if (st->long_opaque) {
		*error = "opaque token too long";
		return CACHED_PARSE_CLIENT_ERROR;
	}
	if (!m->b) {
		memcpy(m->key, m->rkey, m->rklen);
		m->klen = m->rklen;
	}
	return CACHED_PARSE_OK;
}

enum cached_parse
cached_meta_parse(const char *line, size_t len, struct cached_meta *m,
                  const char **error)
{
	struct cached_tok t[CACHED_META_FLAGS + 3];
	size_t n = cached_tokenize(line, line + len, t, CACHED_META_FLAGS + 3), first;
	struct flag_state st = { .mode = 0 };
	enum cached_parse rc;
	bool mgms;

	memset(m, 0, sizeof(*m));
	m->cmd = line[1];
	mgms = m->cmd == 'g' || m->cmd == 's';
	m->mode = m->cmd == 's' ? 'S' : '+';
	m->D = 1;
	rc = meta_head(t, n, m, &first, error);
	if (rc != CACHED_PARSE_OK)
		return rc;
	m->t_at = m->T_at = m->N_at = m->O_at = m->R_at = CACHED_META_FLAGS;
	/*
	 * As memcached reads them: left to right, an unknown or repeated
	 * flag ends the line at once; a bad value is remembered, the last
	 * one's words winning (F's has none: "bad command line format"),
	 * and reported after the last flag; the mode letter is checked only
	 * then.  md and ma answer every one of these in the same words.
	 */
	for (size_t i = first; i < n; i++) {
		unsigned char f = (unsigned char)t[i].p[0];

		if (f >= 127 || st.seen[f]++) {
			*error = mgms ? "duplicate flag" : "invalid or duplicate flag";
			return CACHED_PARSE_CLIENT_ERROR;
		}
		if (!known_flag(m->cmd, f)) {
			*error = mgms ? "invalid flag" : "invalid or duplicate flag";
			return CACHED_PARSE_CLIENT_ERROR;
		}
		read_flag(m, f, t[i].p + 1, t[i].n - 1, &st);
		m->order[m->nflags++] = (char)f;
	}
	return meta_tail(m, &st, mgms, error);
}
