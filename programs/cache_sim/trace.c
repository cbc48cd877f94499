/*
 * trace.c - trace files in, keys out; and Belady's OPT over the keys.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <lzma.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hash.h"
#include "trace.h"

#define CHUNK (1u << 16)

struct buf {
	unsigned char *p;
	size_t len, cap;
};

static int
fail(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errbuf && errlen) {
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Room for at least `more` bytes past len. */
static bool
buf_reserve(struct buf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : CHUNK;
	unsigned char *p;

	if (b->len + more < b->len)
		return false;
	while (cap < b->len + more) {
		if (cap > SIZE_MAX / 2)
			return false;
		cap *= 2;
	}
	if (cap == b->cap)
		return true;
	p = realloc(b->p, cap);
	if (!p)
		return false;
	b->p = p;
	b->cap = cap;
	return true;
}

static int
read_plain(FILE *fp, const char *path, struct buf *b, char *e, size_t el)
{
	size_t got;

	do {
		if (!buf_reserve(b, CHUNK))
			return fail(e, el, "%s: out of memory", path);
		got = fread(b->p + b->len, 1, CHUNK, fp);
		b->len += got;
	} while (got == CHUNK);
	if (ferror(fp))
		return fail(e, el, "%s: %s", path, strerror(errno));
	return 0;
}

static int
read_gzip(const char *path, struct buf *b, char *e, size_t el)
{
	gzFile gz = gzopen(path, "rb");
	int got, err;

	if (!gz)
		return fail(e, el, "%s: %s", path, strerror(errno));
	do {
		if (!buf_reserve(b, CHUNK)) {
			gzclose(gz);
			return fail(e, el, "%s: out of memory", path);
		}
		got = gzread(gz, b->p + b->len, CHUNK);
		if (got > 0)
			b->len += (size_t)got;
	} while (got > 0);
	/* A stream cut short is not a read error to gzread(): it ends the data
	 * and leaves Z_BUF_ERROR behind. */
	gzerror(gz, &err);
	if (got < 0 || err != Z_OK) {
		int rc = fail(e, el, "%s: corrupt gzip data (%s)", path,
		              gzerror(gz, &err));

		gzclose(gz);
		return rc;
	}
	gzclose(gz);
	return 0;
}

static int
read_xz(FILE *fp, const char *path, struct buf *b, char *e, size_t el)
{
	lzma_stream s = LZMA_STREAM_INIT;
	unsigned char in[CHUNK];
	lzma_ret ret;
	int rc = 0;

	if (lzma_stream_decoder(&s, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK)
		return fail(e, el, "%s: cannot start the xz decoder", path);
	do {
		lzma_action act = LZMA_RUN;

		if (s.avail_in == 0) {
			s.next_in = in;
			s.avail_in = fread(in, 1, sizeof(in), fp);
			if (ferror(fp)) {
				rc = fail(e, el, "%s: %s", path, strerror(errno));
				break;
			}
		}
		if (feof(fp))
			act = LZMA_FINISH;
		if (!buf_reserve(b, CHUNK)) {
			rc = fail(e, el, "%s: out of memory", path);
			break;
		}
		s.next_out = b->p + b->len;
		s.avail_out = CHUNK;
		ret = lzma_code(&s, act);
		b->len += CHUNK - s.avail_out;
		if (ret != LZMA_OK && ret != LZMA_STREAM_END)
			rc = fail(e, el, "%s: corrupt xz data (liblzma error %d)",
			          path, (int)ret);
	} while (rc == 0 && ret != LZMA_STREAM_END);
	lzma_end(&s);
	return rc;
}

/* The whole file, decompressed by its magic number. */
static int
slurp(const char *path, struct buf *b, char *e, size_t el)
{
	static const unsigned char xz_magic[6] = { 0xfd, '7', 'z', 'X', 'Z', 0 };
	unsigned char magic[6];
	size_t got;
	FILE *fp = fopen(path, "rb");
	int rc;

	if (!fp)
		return fail(e, el, "%s: %s", path, strerror(errno));
	got = fread(magic, 1, sizeof(magic), fp);
	if (got >= 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
		fclose(fp);
		return read_gzip(path, b, e, el);
	}
	rewind(fp);
	if (got == sizeof(magic) && memcmp(magic, xz_magic, sizeof(magic)) == 0)
		rc = read_xz(fp, path, b, e, el);
	else
		rc = read_plain(fp, path, b, e, el);
	fclose(fp);
	return rc;
}

/* ---- parsing ------------------------------------------------------------ */

struct keys {
	uint64_t *k;
	size_t n, cap;
};

static bool
push(struct keys *ks, uint64_t key)
{
	if (ks->n == ks->cap) {
		size_t cap = ks->cap ? ks->cap * 2 : 4096;
		uint64_t *k;

		if (cap > SIZE_MAX / sizeof(*k))
			return false;
		k = realloc(ks->k, cap * sizeof(*k));
		if (!k)
			return false;
		ks->k = k;
		ks->cap = cap;
	}
	ks->k[ks->n++] = key;
	return true;
}

/* The next line of [*p, end), without its "\n" or "\r\n". */
static bool
next_line(const char **p, const char *end, const char **line, size_t *len)
{
	const char *nl;

	if (*p >= end)
		return false;
	nl = memchr(*p, '\n', (size_t)(end - *p));
	*line = *p;
	*len = (size_t)((nl ? nl : end) - *p);
	*p = nl ? nl + 1 : end;
	if (*len && (*line)[*len - 1] == '\r')
		--*len;
	return true;
}

/* A decimal integer, optionally signed, at *s; false if there is none or it
 * overflows. */
static bool
parse_int(const char **s, const char *end, int64_t *out)
{
	const char *q = *s;
	bool neg = false;
	uint64_t v = 0;

	if (q < end && (*q == '-' || *q == '+'))
		neg = *q++ == '-';
	if (q == end || !isdigit((unsigned char)*q))
		return false;
	for (; q < end && isdigit((unsigned char)*q); q++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*q - '0');
	}
	if (v > (uint64_t)INT64_MAX + neg)
		return false;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	*s = q;
	return true;
}

static void
skip_space(const char **s, const char *end)
{
	while (*s < end && (**s == ' ' || **s == '\t'))
		++*s;
}

/* Integer fields of a line, up to max; -1 if anything else is on it. */
static int
int_fields(const char *line, size_t len, int64_t *v, int max)
{
	const char *s = line, *end = line + len;
	int n = 0;

	for (;;) {
		skip_space(&s, end);
		if (s == end)
			return n;
		if (n == max || !parse_int(&s, end, &v[n]))
			return -1;
		n++;
		if (s < end && *s != ' ' && *s != '\t')
			return -1;
	}
}

/* An ARC line stands for at most this many requests: a larger count is a
 * corrupt line, not a trace anyone could replay. */
#define ARC_MAX_BLOCKS ((int64_t)1 << 24)

static int
parse_text(const struct buf *b, enum trace_format fmt, struct keys *ks,
           const char *path, char *e, size_t el)
{
	const char *p = (const char *)b->p, *end = p + b->len, *line;
	size_t len, lineno = 0;

	while (next_line(&p, end, &line, &len)) {
		int64_t v[4];
		int nf;

		lineno++;
		if (fmt == TRACE_TEXT) {
			if (len && !push(ks, XXH3_64bits(line, len)))
				goto nomem;
			continue;
		}
		nf = int_fields(line, len, v, 4);
		if (fmt == TRACE_LIRS) {
			if (nf == 0 || (len == 1 && line[0] == '*'))
				continue;
			if (nf != 1)
				return fail(e, el, "%s:%zu: not one integer (LIRS format)",
				            path, lineno);
			if (!push(ks, (uint64_t)v[0]))
				goto nomem;
			continue;
		}
		if (nf == 0)
			continue;
		if (nf < 2 || v[1] < 0 || v[1] > ARC_MAX_BLOCKS)
			return fail(e, el, "%s:%zu: not \"start_block block_count ...\" "
			            "(ARC format)", path, lineno);
		for (int64_t i = 0; i < v[1]; i++)
			if (!push(ks, (uint64_t)v[0] + (uint64_t)i))
				goto nomem;
	}
	return 0;
nomem:
	return fail(e, el, "%s: out of memory", path);
}

static int
parse_binary(const struct buf *b, unsigned width, struct keys *ks,
             const char *path, char *e, size_t el)
{
	if (b->len % width)
		return fail(e, el, "%s: %zu bytes, not a whole number of %u-byte "
		            "keys", path, b->len, width);
	for (size_t i = 0; i < b->len; i += width) {
		uint64_t v = 0;

		for (unsigned j = 0; j < width; j++)
			v = v << 8 | b->p[i + j];
		if (width == 4)
			v = (uint64_t)(int64_t)(int32_t)(uint32_t)v;
		if (!push(ks, v))
			return fail(e, el, "%s: out of memory", path);
	}
	return 0;
}

static bool
ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

int
trace_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* How many distinct values the big-endian integers of `width` bytes at
 * p[first * width], p[(first + step) * width], ... below p[len] take;
 * SIZE_MAX if memory runs out. */
static size_t
distinct_values(const unsigned char *p, size_t len, size_t width,
                size_t first, size_t step)
{
	size_t n = 0, d = 0;
	uint64_t *v = malloc((len / width + 1) * sizeof(*v));

	if (!v)
		return SIZE_MAX;
	for (size_t i = first; (i + 1) * width <= len; i += step) {
		v[n] = 0;
		for (size_t k = 0; k < width; k++)
			v[n] = v[n] << 8 | p[i * width + k];
		n++;
	}
	qsort(v, n, sizeof(*v), trace_cmp_u64);
	for (size_t i = 0; i < n; i++)
		d += i == 0 || v[i] != v[i - 1];
	free(v);
	return d;
}

/*
 * A binary trace whose length fits both widths.  Real traces repeat keys,
 * and 32-bit keys read as 64-bit ones pair up neighbours, which repeats
 * less: so 32-bit when the first 64 KB read that way have clearly fewer
 * distinct values per key (under 4/5 of the 64-bit share: 0.26 against
 * 0.70 on ../shared's orm-night).  But 64-bit keys below 2^32 read as
 * 32-bit ones look the same (their high halves are all 0), so 32-bit only
 * if the even words are about as varied as the odd ones.  Keys that are
 * uniform 64-bit hashes (scarab-recs) tie, and stay 64-bit.
 */
static enum trace_format
guess_width(const struct buf *b)
{
	size_t len = (b->len < 65536 ? b->len : 65536) / 8 * 8;
	size_t d32 = distinct_values(b->p, len, 4, 0, 1);
	size_t d64 = distinct_values(b->p, len, 8, 0, 1);
	size_t even = distinct_values(b->p, len, 4, 0, 2);
	size_t odd = distinct_values(b->p, len, 4, 1, 2);

	if (d32 == SIZE_MAX || d64 == SIZE_MAX || even == SIZE_MAX || odd == SIZE_MAX)
		return TRACE_I64BE;
	/* d32 / (len / 4) < 0.8 * d64 / (len / 8), in integers. */
	return 5 * d32 < 8 * d64 && 2 * even >= odd ? TRACE_I32BE : TRACE_I64BE;
}

static enum trace_format
guess(const char *path, const struct buf *b)
{
	const char *p = (const char *)b->p, *end = p + b->len, *line;
	size_t len, probe = b->len < 4096 ? b->len : 4096;
	char base[4096];

	for (size_t i = 0; i < probe; i++) {
		unsigned char c = b->p[i];

		if (c == 0 || c >= 0x80 || (c < 0x20 && !isspace(c))) {
			if (strstr(path, "i32") || strstr(path, "int32") ||
			    b->len % 8)
				return TRACE_I32BE;
			return guess_width(b);
		}
	}
	snprintf(base, sizeof(base), "%s", path);
	if (ends_with(base, ".gz") || ends_with(base, ".xz"))
		base[strlen(base) - 3] = '\0';
	if (ends_with(base, ".lis"))
		return TRACE_ARC;
	while (next_line(&p, end, &line, &len)) {
		int64_t v[4];
		int nf = int_fields(line, len, v, 4);

		if (nf == 0 || (len == 1 && line[0] == '*'))
			continue;
		return nf == 1 ? TRACE_LIRS : nf >= 3 ? TRACE_ARC : TRACE_TEXT;
	}
	return TRACE_TEXT;
}

int
trace_load(const char *path, enum trace_format fmt, uint64_t **keys, size_t *n,
           char *errbuf, size_t errlen)
{
	struct buf b = { 0 };
	struct keys ks = { 0 };
	int rc;

	if (!path || !keys || !n || fmt < TRACE_AUTO || fmt > TRACE_I64BE)
		return fail(errbuf, errlen, "trace_load: bad arguments");
	rc = slurp(path, &b, errbuf, errlen);
	if (rc == 0 && fmt == TRACE_AUTO)
		fmt = guess(path, &b);
	if (rc == 0) {
		if (fmt == TRACE_I32BE || fmt == TRACE_I64BE)
			rc = parse_binary(&b, fmt == TRACE_I32BE ? 4 : 8, &ks, path,
			                  errbuf, errlen);
		else
			rc = parse_text(&b, fmt, &ks, path, errbuf, errlen);
	}
	free(b.p);
	if (rc) {
		free(ks.k);
		return rc;
	}
	*keys = ks.k;
	*n = ks.n;
	return 0;
}

static const char *const format_names[] = {
	[TRACE_AUTO] = "auto", [TRACE_TEXT] = "text", [TRACE_ARC] = "arc",
	[TRACE_LIRS] = "lirs", [TRACE_I32BE] = "i32be", [TRACE_I64BE] = "i64be",
};

enum trace_format
trace_format_parse(const char *name)
{
	for (unsigned i = 0; name && i <= TRACE_I64BE; i++)
		if (strcmp(name, format_names[i]) == 0)
			return (enum trace_format)i;
	return TRACE_UNKNOWN;
}

const char *
trace_format_name(enum trace_format fmt)
{
	return fmt >= TRACE_AUTO && fmt <= TRACE_I64BE ? format_names[fmt] : "?";
}

/* ---- Belady's OPT ------------------------------------------------------- */

#define NEVER SIZE_MAX

static inline uint64_t
mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* next[i]: the position of the next request for keys[i], or NEVER. */
static size_t *
next_uses(const uint64_t *keys, size_t n)
{
	struct slot { uint64_t key; size_t pos1; } *tab; /* pos1 0: empty */
	size_t cap = 16, *next;

	while (cap < 2 * n)
		cap *= 2;
	next = malloc(n * sizeof(*next));
	tab = calloc(cap, sizeof(*tab));
	if (!next || !tab) {
		free(next);
		free(tab);
		return NULL;
	}
	for (size_t i = n; i-- > 0;) {
		size_t h = (size_t)mix64(keys[i]) & (cap - 1);

		while (tab[h].pos1 && tab[h].key != keys[i])
			h = (h + 1) & (cap - 1);
		next[i] = tab[h].pos1 ? tab[h].pos1 - 1 : NEVER;
		tab[h].key = keys[i];
		tab[h].pos1 = i + 1;
	}
	free(tab);
	return next;
}

static void
heap_push(size_t *h, size_t *len, size_t v)
{
	size_t i = (*len)++;

	for (; i > 0 && h[(i - 1) / 2] < v; i = (i - 1) / 2)
		h[i] = h[(i - 1) / 2];
	h[i] = v;
}

static void
heap_pop(size_t *h, size_t *len)
{
	size_t v = h[--*len], i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *len)
			break;
		if (c + 1 < *len && h[c + 1] > h[c])
			c++;
		if (h[c] <= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*len)
		h[i] = v;
}

/*
 * A resident key is represented by the position of its next request, so the
 * request at time i hits exactly when position i is resident.  The victim is
 * the largest resident position: a max-heap with lazy deletion (a position
 * that was hit stays in the heap until it surfaces and is found no longer
 * resident).  Each position is pushed at most once, so the heap holds at
 * most n entries.
 */
uint64_t
trace_opt_hits(const uint64_t *keys, size_t n, size_t size)
{
	size_t *next, *heap, hlen = 0, resident = 0;
	unsigned char *in;
	uint64_t hits = 0;

	if (n == 0 || size == 0 || !keys)
		return 0;
	next = next_uses(keys, n);
	heap = malloc(n * sizeof(*heap));
	in = calloc(n, 1);
	if (!next || !heap || !in) {
		hits = UINT64_MAX;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		size_t nx = next[i];

		if (in[i]) {
			hits++;
			in[i] = 0;
			resident--;
		} else if (nx == NEVER) {
			continue;
		} else if (resident == size) {
			while (!in[heap[0]])
				heap_pop(heap, &hlen);
			if (heap[0] < nx)
				continue; /* the requested key is the farthest: bypass */
			in[heap[0]] = 0;
			heap_pop(heap, &hlen);
			resident--;
		}
		/* On a hit the key is kept only if it is used again. */
		if (nx != NEVER) {
			in[nx] = 1;
			resident++;
			heap_push(heap, &hlen, nx);
		}
	}
out:
	free(next);
	free(heap);
	free(in);
	return hits;
}
