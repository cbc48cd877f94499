/*
 * cuckoo_snapshot.c - save a filter to a file and load it back.
 *
 * Format, all integers little-endian:
 *
 *   0  magic "ADMITCKF"
 *   8  u32 format version: 2, or 1 for a filter that hashes 8-byte keys
 *      by XXH3 as it does every other key (cuckoo_internal.h's
 *      hash_version; a version-1 file loads as such and saves as such),
 *      or 3 for the semi-sorted layout (hashing as version 2)
 *  12  u32 flags (bit 0: counting mode; other bits must be 0)
 *  16  u32 fingerprint (slot) bits, 8 or 16 (versions 1 and 2), 13
 *      (version 3)
 *  20  u32 stripes
 *  24  u64 capacity
 *  32  u64 buckets (must equal what the capacity gives)
 *  40  u64 seed
 *  48  u64 items
 *  56  the table: buckets x (slot bits / 2) bytes, each bucket a u32 or
 *      u64; in version 3, buckets x 6 bytes, each bucket its packed 48
 *      bits (cuckoo_semisort.h), which must be a valid rank and in the
 *      canonical (sorted) order
 *  end u64 XXH3-64 of every byte before it
 *
 * Loading trusts nothing: only a regular file is opened (snapfile_open), the
 * parameters are checked as admit_cuckoo_new would check them and the size
 * against them before anything is allocated, and every slot is checked
 * against the mode.  Saving goes through snapfile_write: a temporary file
 * renamed over the regular file path names.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "cuckoo_internal.h"
#include "snapfile.h"
#include "stripe.h"

#define SNAP_MAGIC "ADMITCKF"
#define SNAP_HEADER 56
#define SNAP_FLAG_COUNTING 1u
#define SNAP_VERSION_SEMISORT 3u

/* A bucket as the file holds it: bb bytes, little-endian. */
static uint64_t
snap_get_bucket(const unsigned char *p, size_t bb)
{
	return bb == 4 ? snap_get32(p) :
	       bb == SS_BUCKET_BYTES ? snap_get32(p) | (uint64_t)p[4] << 32 |
	                               (uint64_t)p[5] << 40 :
	       snap_get64(p);
}

static void
lock_all(struct admit_cuckoo *f)
{
	/* Ascending order, like every other writer. */
	for (uint32_t s = 0; s <= f->stripe_mask; s++)
		stripe_lock(&f->seq[s]);
}

static void
unlock_all(struct admit_cuckoo *f)
{
	for (uint32_t s = f->stripe_mask + 1; s-- > 0;)
		stripe_unlock(&f->seq[s]);
}

size_t
cuckoo_snapshot_len(const struct admit_cuckoo *f)
{
	return SNAP_HEADER + (size_t)f->m * cuckoo_bucket_bytes(f) + 8;
}

void
cuckoo_snapshot_encode(const struct admit_cuckoo *cf, unsigned char *buf)
{
	/* Encoding changes no slot, but it holds the stripes like a writer. */
	struct admit_cuckoo *f = (struct admit_cuckoo *)cf;
	size_t bb = cuckoo_bucket_bytes(f);
	size_t len = SNAP_HEADER + (size_t)f->m * bb;
	unsigned char *t;
	uint64_t items = 0;

	/* Every stripe held: no fingerprint is in flight between buckets, so
	 * the copy is one instant of the table. */
	lock_all(f);
	t = buf + SNAP_HEADER;
	for (uint32_t i = 0; i < f->m; i++) {
		if (bb == 4) {
			snap_put32(t + (size_t)i * 4, (uint32_t)bucket_load(f, i));
		} else if (f->t16) {
			uint64_t v = ss_load_raw(f->t16, i);

			snap_put32(t + (size_t)i * 6, (uint32_t)v);
			t[(size_t)i * 6 + 4] = (unsigned char)(v >> 32);
			t[(size_t)i * 6 + 5] = (unsigned char)(v >> 40);
		} else {
			snap_put64(t + (size_t)i * 8, bucket_load(f, i));
		}
	}
	/* relaxed: every stripe is held, so no writer is changing these. */
	for (uint32_t s = 0; s <= f->stripe_mask; s++)
		items += atomic_load_explicit(&f->stats[s].items,
		                              memory_order_relaxed);
	unlock_all(f);

	memcpy(buf, SNAP_MAGIC, 8);
	snap_put32(buf + 8, f->t16 ? SNAP_VERSION_SEMISORT : f->hash_version);
	snap_put32(buf + 12, f->counting ? SNAP_FLAG_COUNTING : 0);
	snap_put32(buf + 16, f->fp_bits == SS_FP_BITS ? SS_FP_BITS : f->slot_bits);
	snap_put32(buf + 20, f->stripe_mask + 1);
	snap_put64(buf + 24, f->capacity);
	snap_put64(buf + 32, f->m);
	snap_put64(buf + 40, f->seed);
	snap_put64(buf + 48, items);
	snap_put64(buf + len, XXH3_64bits(buf, len));
}

enum admit_status
admit_cuckoo_save(const struct admit_cuckoo *f, const char *path)
{
	unsigned char *buf;
	size_t len;
	enum admit_status st;

	if (!f || !path)
		return ADMIT_EINVAL;
	len = cuckoo_snapshot_len(f);
	buf = admit_malloc(len);
	if (!buf)
		return ADMIT_NOMEM;
	cuckoo_snapshot_encode(f, buf);
	st = snapfile_write(path, &(struct snapfile_part){ buf, len }, 1);
	admit_free(buf);
	return st;
}

static bool
read_all(FILE *fp, void *buf, size_t n)
{
	return fread(buf, 1, n, fp) == n;
}

/* Every slot must be empty or a valid entry for the mode (a semi-sorted
 * bucket, as the file holds it packed: a rank below SS_CODES, in the one
 * sorted order), then goes into bucket i.  Also rebuilds the per-stripe
 * item counts.  The filter is not yet shared: the stores' release is
 * stronger than needed, and free. */
static bool
check_bucket(struct admit_cuckoo *f, uint32_t i, uint64_t b)
{
	unsigned n = 0;
	uint64_t raw = b;

	if (f->t16) {
		if ((raw & 0xfff) >= SS_CODES)
			return false;
		b = ss_unpack(raw, f->ss_dec);
		if (ss_pack(b) != raw)
			return false;
	}

	for (unsigned s = 0; s < CUCKOO_SLOTS; s++) {
		uint64_t v = slot_get(f, b, s);

		if (v == 0)
			continue;
		if (f->counting && ((v & COUNTER_MAX) == 0 || slot_fp(f, v) == 0))
			return false;
		n++;
	}
	stat_add_locked(&f->stats[i & f->stripe_mask].items, n);
	if (f->t16)
		ss_store_raw(f->t16, i, raw);
	else
		bucket_store(f, i, b);
	return true;
}

/* The hash version a snapshot's format version gives its filter. */
static unsigned
snap_hash_version(uint32_t version)
{
	return version == SNAP_VERSION_SEMISORT ? CUCKOO_HASH_MUL8 : version;
}

/* The header's parameters, checked as admit_cuckoo_new would check them;
 * the same checks for a file and for memory.  *total gets the snapshot's
 * length in bytes. */
static bool
parse_header(const unsigned char *hdr, uint64_t *total)
{
	uint32_t version, flags, bits, stripes;
	uint64_t capacity, m;

	version = snap_get32(hdr + 8);
	if (memcmp(hdr, SNAP_MAGIC, 8) != 0 ||
	    (version != CUCKOO_HASH_XXH3 && version != CUCKOO_HASH_MUL8 &&
	     version != SNAP_VERSION_SEMISORT))
		return false;
	flags = snap_get32(hdr + 12);
	bits = snap_get32(hdr + 16);
	stripes = snap_get32(hdr + 20);
	capacity = snap_get64(hdr + 24);
	m = snap_get64(hdr + 32);
	if ((flags & ~SNAP_FLAG_COUNTING) ||
	    (version == SNAP_VERSION_SEMISORT ? bits != SS_FP_BITS || flags
	                                      : bits != 8 && bits != 16) ||
	    ((flags & SNAP_FLAG_COUNTING) && bits != 16) ||
	    stripes == 0 || stripes > ADMIT_CUCKOO_MAX_STRIPES ||
	    (stripes & (stripes - 1)) || capacity == 0 ||
	    capacity > ADMIT_CUCKOO_MAX_CAPACITY ||
	    m != cuckoo_buckets_for(capacity))
		return false;
	*total = SNAP_HEADER + m * cuckoo_bucket_bytes_of(bits) + 8;
	return true;
}

enum admit_status
admit_cuckoo_load(const char *path, struct admit_cuckoo **out)
{
	unsigned char hdr[SNAP_HEADER], chunk[8192], sum[8];
	struct admit_cuckoo *f = NULL;
	XXH3_state_t xs;
	enum admit_status st;
	uint32_t flags, bits, stripes;
	uint64_t capacity, m, items, total;
	size_t bb;
	uint64_t size;
	FILE *fp;
	int fd;

	if (!path || !out)
		return ADMIT_EINVAL;
	st = snapfile_open(path, &fd, &size);
	if (st != ADMIT_OK)
		return st;
	fp = fdopen(fd, "rb");
	if (!fp) {
		close(fd);
		return ADMIT_EIO;
	}
	st = ADMIT_ECORRUPT;
	if (!read_all(fp, hdr, sizeof(hdr)) || !parse_header(hdr, &total) ||
	    size != total)
		goto out;
	flags = snap_get32(hdr + 12);
	bits = snap_get32(hdr + 16);
	stripes = snap_get32(hdr + 20);
	capacity = snap_get64(hdr + 24);
	m = snap_get64(hdr + 32);
	items = snap_get64(hdr + 48);
	bb = cuckoo_bucket_bytes_of(bits);

	st = cuckoo_create(capacity, (uint32_t)m, bits,
	                   flags & SNAP_FLAG_COUNTING, stripes, snap_get64(hdr + 40),
	                   snap_hash_version(snap_get32(hdr + 8)), NULL, &f);
	if (st != ADMIT_OK)
		goto out;
	st = ADMIT_ECORRUPT;

	XXH3_64bits_reset(&xs);
	XXH3_64bits_update(&xs, hdr, sizeof(hdr));
	for (uint64_t i = 0; i < m;) {
		size_t n = sizeof(chunk) / bb;

		if (n > m - i)
			n = (size_t)(m - i);
		if (!read_all(fp, chunk, n * bb))
			goto out;
		XXH3_64bits_update(&xs, chunk, n * bb);
		for (size_t j = 0; j < n; j++, i++) {
			if (!check_bucket(f, (uint32_t)i,
			                  snap_get_bucket(chunk + j * bb, bb)))
				goto out;
		}
	}
	if (!read_all(fp, sum, 8) || snap_get64(sum) != XXH3_64bits_digest(&xs) ||
	    admit_cuckoo_size(f) != items)
		goto out;
	*out = f;
	f = NULL;
	st = ADMIT_OK;
out:
	admit_cuckoo_free(f);
	fclose(fp);
	return st;
}

enum admit_status
cuckoo_snapshot_decode(const unsigned char *buf, size_t len,
                       const struct admit_allocator *alloc,
                       struct admit_cuckoo **out)
{
	struct admit_cuckoo *f = NULL;
	enum admit_status st;
	uint64_t total, m;
	size_t bb;

	if (len < SNAP_HEADER + 8 || !parse_header(buf, &total) || total != len)
		return ADMIT_ECORRUPT;
	/* The checksum first: nothing is allocated for an altered buffer. */
	if (snap_get64(buf + len - 8) != XXH3_64bits(buf, len - 8))
		return ADMIT_ECORRUPT;
	m = snap_get64(buf + 32);
	bb = cuckoo_bucket_bytes_of(snap_get32(buf + 16));
	st = cuckoo_create(snap_get64(buf + 24), (uint32_t)m, snap_get32(buf + 16),
	                   snap_get32(buf + 12) & SNAP_FLAG_COUNTING, snap_get32(buf + 20),
	                   snap_get64(buf + 40), snap_hash_version(snap_get32(buf + 8)),
	                   alloc, &f);
	if (st != ADMIT_OK)
		return st;
	for (uint64_t i = 0; i < m; i++) {
		if (!check_bucket(f, (uint32_t)i,
		                  snap_get_bucket(buf + SNAP_HEADER + i * bb, bb))) {
			admit_cuckoo_free(f);
			return ADMIT_ECORRUPT;
		}
	}
	if (admit_cuckoo_size(f) != snap_get64(buf + 48)) {
		admit_cuckoo_free(f);
		return ADMIT_ECORRUPT;
	}
	*out = f;
	return ADMIT_OK;
}
