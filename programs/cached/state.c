/*
 * state.c - admit-cached's state file (state.h gives the format).
 *
 * Saving walks the cache with admit_lru_foreach at shutdown, after the
 * workers have stopped (only the maintenance thread still runs: an item
 * expiring meanwhile is written or not, and dropped at load if its time
 * has come).  Records stream through a 1 MiB buffer into path.tmp and
 * through XXH3's streaming state, the admission sketch after them; the
 * header, known at the end, is written last at offset 0 and hashed last.
 * The sketch is copied while the maintenance thread may run: it records
 * nothing, so the copy is the sketch the workers left.
 *
 * Loading maps the file and checks all of it before storing anything, so
 * a refused file leaves the cache empty, never half loaded.  Bounds are
 * checked on every length before it is used, whatever the checksum says:
 * a file is input like any client's.
 */
#include "config.h"  /* first: it defines _GNU_SOURCE */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "snapfile.h"
#include "state.h"
#include "store_impl.h"

/* The checksum of a file of n bytes (n >= header + trailer). */
static uint64_t
file_sum(const unsigned char *p, size_t n)
{
	XXH3_state_t x;

	XXH3_64bits_reset(&x);
	XXH3_64bits_update(&x, p + STATE_HDR, n - STATE_HDR - STATE_TRAILER);
	XXH3_64bits_update(&x, p, STATE_HDR);
	return XXH3_64bits_digest(&x);
}

/* Where the records end: before the sketch section in version 2.  NULL
 * with *end and the sketch's place, or a reason. */
static const char *
records_end(const unsigned char *p, size_t n, uint32_t version, size_t *end,
            struct cached_state *out)
{
	uint64_t len;

	*end = n - STATE_TRAILER;
	if (version == STATE_VERSION_ITEMS)
		return NULL;
	if (*end - STATE_HDR < 8)
		return "truncated sketch section";
	*end -= 8;
	len = snap_get64(p + *end);
	if (len > *end - STATE_HDR)
		return "sketch section longer than the file";
	*end -= (size_t)len;
	out->sketch = len ? p + *end : NULL;
	out->sketch_len = (size_t)len;
	return NULL;
}

const char *
cached_state_check(const unsigned char *p, size_t n, struct cached_state *out)
{
	struct cached_state got = { 0 };
	size_t off = STATE_HDR, end;
	uint64_t count, i;
	uint32_t version;
	const char *why;

	if (n == 0)
		return "empty file";
	if (n < STATE_HDR + STATE_TRAILER || memcmp(p, STATE_MAGIC, 8) != 0)
		return n >= 8 && memcmp(p, STATE_MAGIC, 8) == 0
		       ? "truncated header" : "not an admit-cached state file";
	version = snap_get32(p + 8);
	if ((version != STATE_VERSION && version != STATE_VERSION_ITEMS) ||
	    snap_get32(p + 12) != 0)
		return "unknown format version";
	if (snap_get64(p + n - STATE_TRAILER) != file_sum(p, n))
		return "checksum mismatch (truncated or damaged)";
	if ((why = records_end(p, n, version, &end, &got)) != NULL)
		return why;
	count = snap_get64(p + 16);
	for (i = 0; i < count && off < end; i++) {
		uint32_t klen, vlen;

		if (end - off < STATE_REC)
			return "truncated record";
		klen = snap_get32(p + off);
		vlen = snap_get32(p + off + 4);
		if (klen == 0 || klen > CACHED_KEY_MAX)
			return "bad key length";
		if (snap_get32(p + off + 12) >= STATE_MAX_SHARDS)
			return "bad shard index";
		off += STATE_REC;
		if (end - off < (uint64_t)klen + vlen)
			return "record longer than the file";
		off += klen + (size_t)vlen;
	}
	if (i != count || off != end)
		return "item count does not match the records";
	got.p = p;
	got.n = n;
	got.count = count;
	got.seed = snap_get64(p + 24);
	got.saved_at = snap_get64(p + 32);
	*out = got;
	return NULL;
}

int
cached_state_open(const char *path, struct cached_state *out,
                  const char **why)
{
	uint64_t size;
	void *map = NULL;
	int fd, err = 0;

	*why = NULL;
	switch (snapfile_open(path, &fd, &size)) {
	case ADMIT_OK:
		break;
	case ADMIT_ENOTREG:
		*why = "not a regular file";
		return EINVAL;
	default:
		err = errno;
		*why = strerror(err);
		return err;
	}
	if (size > SIZE_MAX / 2) {
		close(fd);
		*why = "too large";
		return EFBIG;
	}
	if (size) {
		map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			err = errno;
			close(fd);
			*why = strerror(err);
			return err;
		}
		(void)madvise(map, (size_t)size, MADV_SEQUENTIAL);
	}
	close(fd);
	*why = cached_state_check(map ? map : "", (size_t)size, out);
	if (*why) {
		if (map)
			munmap(map, (size_t)size);
		return EINVAL;
	}
	out->map = map;
	out->map_len = (size_t)size;
	return 0;
}

void
cached_state_close(struct cached_state *s)
{
	if (s->map)
		munmap(s->map, s->map_len);
	s->map = NULL;
}

/* ---- load --------------------------------------------------------------- */

struct rec {
	const unsigned char *key, *data;
	uint32_t klen, vlen, flags, shard;
	uint64_t cas, expires;   /* expires on the cache's clock; 0 = never */
};

static enum admit_lru_verdict
load_updater(struct admit_lru_update *up, void *arg)
{
	const struct rec *r = arg;
	size_t h = hdr_len(r->flags);
	char *v = admit_lru_update_alloc(up, h + (size_t)r->vlen);

	if (!v)
		return ADMIT_LRU_KEEP;
	hdr_put(v, r->cas, r->flags);
	if (r->vlen)
		memcpy(v + h, r->data, r->vlen);
	up->expires = r->expires;
	return ADMIT_LRU_STORE_FORCE;
}

/* The record at p; *exp its expiry (Unix seconds, 0 = never). */
static const unsigned char *
rec_at(const unsigned char *p, struct rec *r, uint64_t *exp)
{
	*r = (struct rec){ .klen = snap_get32(p), .vlen = snap_get32(p + 4),
	                   .flags = snap_get32(p + 8), .shard = snap_get32(p + 12),
	                   .cas = snap_get64(p + 16) };
	*exp = snap_get64(p + 24);
	r->key = p + STATE_REC;
	r->data = r->key + r->klen;
	return r->data + r->vlen;
}

/* A record to load, and where it stands in its shard's recency order:
 * its rank over the shard's count, in 2^-32. */
struct slot {
	uint64_t heat;
	const unsigned char *p;
};

static int
by_heat(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	if (x->heat != y->heat)
		return x->heat < y->heat ? -1 : 1;
	return x->p < y->p ? -1 : x->p > y->p;
}

/*
 * The records to load, coldest first across shards (each shard's k-th of
 * n at k/n), in *n slots; *total their charge.  Counts the expired and
 * too large in out.  NULL when out of memory.
 */
static struct slot *
wanted(const struct cached_store *st, const struct cached_state *s,
       uint64_t now_wall, size_t *n, uint64_t *total,
       struct cached_state_counts *out)
{
	const unsigned char *p = s->p + STATE_HDR;
	struct slot *v = malloc((s->count ? s->count : 1) * sizeof(*v));
	uint64_t per[STATE_MAX_SHARDS] = { 0 }, rank[STATE_MAX_SHARDS] = { 0 };
	uint64_t exp;
	struct rec r;
	size_t k = 0;

	if (!v)
		return NULL;
	*total = 0;
	for (uint64_t i = 0; i < s->count; i++) {
		const unsigned char *at = p;

		p = rec_at(p, &r, &exp);
		if (exp && exp <= now_wall) {
			out->expired++;
		} else if (r.vlen > st->max_item) {
			out->too_large++;
		} else {
			v[k++] = (struct slot){ .heat = r.shard, .p = at };
			per[r.shard]++;
			*total += admit_lru_entry_charge(r.klen, hdr_len(r.flags) +
			                                 (size_t)r.vlen);
		}
	}
	for (size_t i = 0; i < k; i++) {
		uint64_t sh = v[i].heat;

		v[i].heat = (rank[sh]++ << 32) / per[sh];
	}
	qsort(v, k, sizeof(*v), by_heat);
	*n = k;
	return v;
}

/*
 * One loading thread: stores the records from[0 .. n) whose key's shard
 * index is part modulo parts, in their order.  The shards are split
 * between the threads, so each shard gets its records in order.
 */
struct part {
	struct cached_store *st;
	const struct slot *from;
	size_t n;
	unsigned part, parts;
	uint64_t now, now_wall;
	uint64_t max_cas, loaded, failed;   /* the part's results */
	pthread_t tid;
};

static void *
load_part(void *arg)
{
	struct part *pt = arg;
	struct admit_lru *lru = pt->st->lru;

	for (size_t i = 0; i < pt->n; i++) {
		struct rec r;
		uint64_t exp, h;

		if (!pt->from[i].p)
			continue;  /* left out by trim_to_fit */
		rec_at(pt->from[i].p, &r, &exp);
		h = admit_lru_hash(lru, r.key, r.klen);
		if (admit_lru_shard_index(lru, h) % pt->parts != pt->part)
			continue;
		r.expires = exp ? pt->now + (exp - pt->now_wall) * NS_PER_S : 0;
		if (admit_lru_compute_hashed(lru, h, r.key, r.klen, load_updater,
		                             &r) != ADMIT_OK) {
			pt->failed++;
			continue;
		}
		pt->loaded++;
		if ((r.cas & CACHED_CAS_MASK) > pt->max_cas)
			pt->max_cas = r.cas & CACHED_CAS_MASK;
	}
	return NULL;
}

/* Loads v[0 .. n) with a thread per online CPU (up to 8). */
static void
load_parts(struct cached_store *st, const struct slot *v, size_t n,
           struct cached_state_counts *out)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned parts = cpus < 1 ? 1 : cpus > 8 ? 8 : (unsigned)cpus;
	struct part pt[8];
	bool started[8] = { false };
	uint64_t max_cas = atomic_load(&st->cas_seq);

	for (unsigned t = 0; t < parts; t++) {
		pt[t] = (struct part){ .st = st, .from = v, .n = n, .part = t,
		                       .parts = parts,
		                       .now = admit_lru_now(st->lru),
		                       .now_wall = (uint64_t)time(NULL) };
		if (t > 0)
			started[t] = pthread_create(&pt[t].tid, NULL, load_part,
			                            &pt[t]) == 0;
	}
	for (unsigned t = 0; t < parts; t++)
		if (!started[t])
			load_part(&pt[t]);  /* the caller's part, or a failed start */
	for (unsigned t = 0; t < parts; t++) {
		if (started[t])
			pthread_join(pt[t].tid, NULL);
		out->loaded += pt[t].loaded;
		out->failed += pt[t].failed;
		if (pt[t].max_cas > max_cas)
			max_cas = pt[t].max_cas;
	}
	atomic_store(&st->cas_seq, max_cas);
}

/*
 * Leaves out (p = NULL) the coldest records of each of st's shards that
 * would not fit in its share of --memory: walking v hottest first, a
 * record is kept while its shard's share has room for it.  A shard that
 * overflowed while loading would evict what its policy picks (in LIRS,
 * the entries loaded last: the hottest), not the coldest.
 */
static void
trim_to_fit(struct cached_store *st, struct slot *v, size_t n,
            struct cached_state_counts *out)
{
	uint64_t used[STATE_MAX_SHARDS] = { 0 };
	uint64_t share = st->memory_bytes / st->shards;

	for (size_t i = n; i-- > 0;) {
		struct rec r;
		uint64_t exp, charge;
		unsigned sh;

		rec_at(v[i].p, &r, &exp);
		sh = admit_lru_shard_index(st->lru,
		                           admit_lru_hash(st->lru, r.key, r.klen));
		charge = admit_lru_entry_charge(r.klen, hdr_len(r.flags) +
		                                (size_t)r.vlen);
		if (sh < STATE_MAX_SHARDS && used[sh] + charge <= share) {
			used[sh] += charge;
		} else {
			v[i].p = NULL;
			out->cold++;
		}
	}
}

int
cached_state_load(struct cached_store *st, const struct cached_state *s,
                  struct cached_state_counts *out)
{
	uint64_t now_wall = (uint64_t)time(NULL), total;
	struct slot *v;
	size_t n;

	memset(out, 0, sizeof(*out));
	v = wanted(st, s, now_wall, &n, &total, out);
	if (!v)
		return ENOMEM;
	/* All fit when they fit in --memory: they fitted in the cache they
	 * came from, whose shards (the same seed and memory, the same shards)
	 * each held theirs. */
	if (total > st->memory_bytes)
		trim_to_fit(st, v, n, out);
	load_parts(st, v, n, out);
	free(v);
	/* After the items, whose sets were recorded: the import puts back
	 * the counts the save had. */
	out->sketch = s->sketch_len
	              ? admit_lru_sketch_import(st->lru, s->sketch, s->sketch_len)
	              : ADMIT_NOTFOUND;
	return 0;
}

/* ---- save --------------------------------------------------------------- */

#define WBUF (1u << 20)

struct writer {
	int fd, err;              /* err: the first error (errno) */
	unsigned char *buf;
	size_t used;
	XXH3_state_t x;
	struct admit_lru *lru;
	uint64_t count, now, now_wall;
};

static void
w_flush(struct writer *w)
{
	size_t done = 0;

	while (!w->err && done < w->used) {
		ssize_t k = write(w->fd, w->buf + done, w->used - done);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			w->err = k < 0 ? errno : EIO;
		else
			done += (size_t)k;
	}
	w->used = 0;
}

/* Appends n bytes to the file (and to the checksum). */
static void
w_put(struct writer *w, const void *data, size_t n)
{
	const unsigned char *d = data;

	XXH3_64bits_update(&w->x, d, n);
	while (n && !w->err) {
		size_t k = WBUF - w->used < n ? WBUF - w->used : n;

		memcpy(w->buf + w->used, d, k);
		w->used += k;
		d += k;
		n -= k;
		if (w->used == WBUF)
			w_flush(w);
	}
}

static bool
save_visitor(const void *key, size_t klen, const void *value, size_t vlen,
             uint64_t expires_at, void *arg)
{
	struct writer *w = arg;
	unsigned char rec[STATE_REC];
	uint64_t cas, exp = 0;
	uint32_t flags;
	size_t h = hdr_get(value, vlen, &cas, &flags);

	if (!h || klen == 0 || klen > CACHED_KEY_MAX || vlen - h > UINT32_MAX)
		return true;  /* not an item of ours */
	if (expires_at) {
		if (expires_at <= w->now)
			return true;
		exp = w->now_wall + (expires_at - w->now + NS_PER_S - 1) / NS_PER_S;
	}
	snap_put32(rec, (uint32_t)klen);
	snap_put32(rec + 4, (uint32_t)(vlen - h));
	snap_put32(rec + 8, flags);
	snap_put32(rec + 12, admit_lru_shard_index(w->lru,
	                                           admit_lru_hash(w->lru, key, klen)));
	snap_put64(rec + 16, cas);
	snap_put64(rec + 24, exp);
	w_put(w, rec, sizeof(rec));
	w_put(w, key, klen);
	w_put(w, (const char *)value + h, vlen - h);
	w->count++;
	return !w->err;
}

/* The header, written last at offset 0 and hashed last. */
static void
write_header(struct writer *w, struct cached_store *st)
{
	unsigned char h[STATE_HDR], sum[STATE_TRAILER];

	memcpy(h, STATE_MAGIC, 8);
	snap_put32(h + 8, STATE_VERSION);
	snap_put32(h + 12, 0);
	snap_put64(h + 16, w->count);
	snap_put64(h + 24, st->seed);
	snap_put64(h + 32, w->now_wall);
	XXH3_64bits_update(&w->x, h, sizeof(h));
	snap_put64(sum, XXH3_64bits_digest(&w->x));
	memcpy(w->buf + w->used, sum, sizeof(sum));
	w->used += sizeof(sum);
	w_flush(w);
	if (!w->err && pwrite(w->fd, h, sizeof(h), 0) != (ssize_t)sizeof(h))
		w->err = errno ? errno : EIO;
}

/* Fsyncs the directory holding path, so the rename is durable. */
static int
sync_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path))
	                  : strdup(".");
	int fd, err = 0;

	if (!dir)
		return ENOMEM;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return errno;
	if (fsync(fd) != 0)
		err = errno;
	close(fd);
	return err;
}

/* The admission sketch and its length (0 and no bytes without one). */
static void
write_sketch(struct writer *w, struct cached_store *st)
{
	unsigned char lenb[8];
	void *buf = NULL;
	size_t len = 0;

	if (admit_lru_sketch_size(st->lru, &len) == ADMIT_OK) {
		buf = malloc(len);
		if (!buf || admit_lru_sketch_export(st->lru, buf, len, &len) !=
		            ADMIT_OK) {
			w->err = ENOMEM;
			free(buf);
			return;
		}
		w_put(w, buf, len);
		free(buf);
	}
	snap_put64(lenb, len);
	w_put(w, lenb, sizeof(lenb));
}

/* Streams every item into the open temporary file w->fd. */
static void
write_items(struct writer *w, struct cached_store *st)
{
	static const unsigned char zero[STATE_HDR];

	/* The header's place, filled in by write_header. */
	memcpy(w->buf, zero, sizeof(zero));
	w->used = sizeof(zero);
	if (admit_lru_foreach(st->lru, save_visitor, w) != ADMIT_OK && !w->err)
		w->err = ENOMEM;
	if (!w->err)
		write_sketch(w, st);
	if (!w->err)
		write_header(w, st);
	if (!w->err && fsync(w->fd) != 0)
		w->err = errno;
}

int
cached_state_save(struct cached_store *st, const char *path, uint64_t *count)
{
	struct writer w = { .fd = -1 };
	struct stat sb;
	char *tmp = NULL;

	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
		return EINVAL;
	if (asprintf(&tmp, "%s.tmp", path) < 0)
		return ENOMEM;
	w.buf = malloc(WBUF + STATE_TRAILER);
	if (!w.buf) {
		w.err = ENOMEM;
		goto out;
	}
	XXH3_64bits_reset(&w.x);
	w.lru = st->lru;
	w.now = admit_lru_now(st->lru);
	w.now_wall = (uint64_t)time(NULL);
	w.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (w.fd < 0) {
		w.err = errno;
		goto out;
	}
	write_items(&w, st);
	if (close(w.fd) != 0 && !w.err)
		w.err = errno;
	w.fd = -1;
	if (!w.err && rename(tmp, path) != 0)
		w.err = errno;
	if (w.err)
		(void)unlink(tmp);
	else
		w.err = sync_dir(path);
out:
	if (w.fd >= 0)
		close(w.fd);
	free(w.buf);
	free(tmp);
	*count = w.count;
	return w.err;
}
