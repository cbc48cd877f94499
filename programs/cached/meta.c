/*
 * meta.c - meta command lines (mg, ms, md, ma), read as memcached 1.6.18
 * reads them: "<cmd> <key> [<datalen>] <flag>*", each flag one character
 * and, for some, a token glued to it ("T30", "Oabc").  The key is at most
 * 250 bytes as sent; with the b flag it is base64 and decoded.  Errors
 * carry memcached's words: mg and ms say "invalid flag", "duplicate flag"
 * or "bad token in command line format"; md and ma say "invalid or
 * duplicate flag" for all three.
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

/* Decodes padded base64 p[0..n) into out; false when it is not. */
static bool
base64_decode(const char *p, size_t n, char *out, size_t *olen)
{
	size_t o = 0;

	if (n == 0 || n % 4)
		return false;
	for (size_t i = 0; i < n; i += 4) {
		int a = b64_val(p[i]), b = b64_val(p[i + 1]);
		int c = p[i + 2] == '=' ? -2 : b64_val(p[i + 2]);
		int d = p[i + 3] == '=' ? -2 : b64_val(p[i + 3]);
		uint32_t v;

		if (a < 0 || b < 0 || c == -1 || d == -1 ||
		    ((c == -2 || d == -2) && i + 4 != n) || (c == -2 && d != -2))
			return false;
		v = (uint32_t)a << 18 | (uint32_t)b << 12 |
		    (uint32_t)(c < 0 ? 0 : c) << 6 | (uint32_t)(d < 0 ? 0 : d);
		out[o++] = (char)(v >> 16);
		if (c >= 0)
			out[o++] = (char)(v >> 8);
		if (d >= 0)
			out[o++] = (char)v;
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

/* Which flags each command takes; the rest are invalid. */
static const char *
valid_flags(char cmd)
{
	switch (cmd) {
	case 'g': return "bcfkOqstuvNRT";
	case 's': return "bcCFIkOqsTMN";
	case 'd': return "bCIkOqTct";
	default:  return "bCNJDTMOqtcvk";
	}
}

enum cached_parse
cached_meta_parse(const char *line, size_t len, struct cached_meta *m,
                  const char **error)
{
	struct cached_tok t[CACHED_META_FLAGS + 3];
	size_t n = cached_tokenize(line, line + len, t, CACHED_META_FLAGS + 3), first;
	bool mgms;
	char seen[128] = { 0 };

	memset(m, 0, sizeof(*m));
	m->cmd = line[1];
	mgms = m->cmd == 'g' || m->cmd == 's';
	m->mode = m->cmd == 's' ? 'S' : '+';
	m->D = 1;
	if (n < 2)
		return CACHED_PARSE_ERROR;
	if (t[1].n > CACHED_KEY_MAX) {
		*error = "bad command line format";
		return CACHED_PARSE_CLIENT_ERROR;
	}
	memcpy(m->rkey, t[1].p, t[1].n);
	m->rklen = t[1].n;
	first = 2;
	if (m->cmd == 's') {
		int64_t bytes;

		if (n < 3 || !tok_i32(t[2].p, t[2].n, &bytes) || bytes < 0 ||
		    bytes > INT32_MAX - 2) {
			*error = "bad command line format";
			return CACHED_PARSE_CLIENT_ERROR;
		}
		m->bytes = (uint64_t)bytes;
		m->has_data = true;
		first = 3;
	}
	m->t_at = m->T_at = CACHED_META_FLAGS;
	for (size_t i = first; i < n; i++) {
		unsigned char f = (unsigned char)t[i].p[0];
		const char *v = t[i].p + 1;
		size_t vn = t[i].n - 1;
		bool ok = true;
		uint64_t u;

		if (f >= 128 || !strchr(valid_flags(m->cmd), f)) {
			*error = mgms ? "invalid flag" : "invalid or duplicate flag";
			return CACHED_PARSE_CLIENT_ERROR;
		}
		if (seen[f]++) {
			*error = mgms ? "duplicate flag" : "invalid or duplicate flag";
			return CACHED_PARSE_CLIENT_ERROR;
		}
		if (m->nflags == CACHED_META_FLAGS) {
			*error = "bad command line format";
			return CACHED_PARSE_CLIENT_ERROR;
		}
		switch (f) {
		case 'b': m->b = true; break;
		case 'q': m->q = true; break;
		case 'v': m->v = true; break;
		case 'I': m->I = true; break;
		case 't': m->t_at = m->nflags; break;
		case 'T': m->has_T = ok = tok_i32(v, vn, &m->T); m->T_at = m->nflags; break;
		case 'N': m->has_N = ok = tok_i32(v, vn, &m->N); break;
		case 'R': m->has_R = ok = tok_i32(v, vn, &m->R); break;
		case 'C': m->has_C = ok = cached_strtoull(v, vn, &m->C); break;
		case 'J': ok = cached_strtoull(v, vn, &m->J); break;
		case 'D': ok = cached_strtoull(v, vn, &m->D); break;
		case 'F':
			m->has_F = ok = cached_strtoull(v, vn, &u) &&
			                ((int64_t)u >= 0 || !memchr(v, '-', vn));
			m->F = (uint32_t)u;
			break;
		case 'O':
			if (vn > CACHED_OPAQUE_MAX) {
				*error = "opaque token too long";
				return CACHED_PARSE_CLIENT_ERROR;
			}
			memcpy(m->opaque, v, vn);
			m->olen = vn;
			m->has_O = true;
			break;
		case 'M':
			if (vn != 1 || !strchr(m->cmd == 's' ? "SEAPR" : "I+D-", v[0])) {
				*error = m->cmd == 's' ? "invalid mode for ms M token"
				                       : "invalid mode for ma M token";
				return CACHED_PARSE_CLIENT_ERROR;
			}
			m->mode = m->cmd == 's' ? v[0]
			          : (v[0] == 'I' || v[0] == '+') ? '+' : '-';
			break;
		default:
			break;
		}
		if (!ok) {
			*error = mgms ? "bad token in command line format"
			              : "invalid or duplicate flag";
			return CACHED_PARSE_CLIENT_ERROR;
		}
		m->order[m->nflags++] = (char)f;
	}
	if (m->b) {
		if (!base64_decode(m->rkey, m->rklen, m->key, &m->klen)) {
			*error = "error decoding key";
			return CACHED_PARSE_CLIENT_ERROR;
		}
	} else {
		memcpy(m->key, m->rkey, m->rklen);
		m->klen = m->rklen;
	}
	return CACHED_PARSE_OK;
}
