/*
 * fuzz_dedup_state - libFuzzer target for admit-dedup's --load
 * (dd_seen_load, programs/dedup/state.c).
 *
 * Each input is loaded twice: as it is, and with every checksum
 * recomputed (each shard's chain dump and its filters, then the file's),
 * so that mutations reach the checks behind them: the header's fields
 * against each other, the estimates, the counts against the filters, the
 * horizon ring against the filter each key names.  A file that loads must
 * run as admit-dedup runs it: saved, it loads again and saves to the same
 * bytes; every key of its ring then leaves the horizon (is deleted from
 * its filter) without an error; new keys are admitted or refused with a
 * status.  With ADMIT_FUZZ_SEEDS=dir set, the target first writes a few
 * state files there (with and without a horizon) as a starting corpus.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dedup.h"
#include "fixup.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BATCH 64

static char path[64], path2[64];

/* One key admitted as admit-dedup's EMIT and EXPIRE phases admit it: into
 * the ring, whose oldest key leaves once the ring is longer than the
 * horizon. */
static void
admit_one(struct dd_seen *s, uint64_t h)
{
	uint8_t gen;
	uint64_t pos;

	if (dd_seen_ring_reserve(s, 1) != ADMIT_OK)
		abort();
	if (dd_seen_admit(s, dd_shard_of(s, h), h, &gen) != ADMIT_OK)
		return;
	if (s->horizon) {
		s->ring_h[s->admitted % s->ring_size] = h;
		s->ring_g[s->admitted % s->ring_size] = gen;
		s->ring_len++;
	}
	s->admitted++;
	if (s->horizon && s->ring_len > s->horizon) {
		pos = (s->admitted - s->ring_len) % s->ring_size;
		if (dd_seen_delete(s, dd_shard_of(s, s->ring_h[pos]),
		                   s->ring_h[pos], s->ring_g[pos]) != ADMIT_OK)
			abort();
		s->ring_len--;
	}
}

static void
write_seeds(const char *dir)
{
	static const struct dd_params ps[] = {
		{ .capacity = 100, .seed = 1, .grow = true, .batch = BATCH },
		{ .capacity = 20, .horizon = 30, .seed = 2, .grow = true,
		  .batch = BATCH },
		{ .capacity = 50, .fpr = 0.01, .horizon = 10, .seed = 3,
		  .batch = BATCH },
	};

	for (unsigned i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		struct dd_seen *s;
		char p[4096];

		if (dd_seen_new(&ps[i], &s) != ADMIT_OK)
			abort();
		for (uint64_t k = 0; k < 40; k++)
			admit_one(s, admit_mix64(k + 1));
		snprintf(p, sizeof(p), "%s/seed%u.state", dir, i);
		if (dd_seen_save(s, p) != ADMIT_OK)
			abort();
		dd_seen_free(s);
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("ADMIT_FUZZ_SEEDS");
	/* In memory where there is a tmpfs: a save syncs its file. */
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	snprintf(path, sizeof(path), "%s/admit-fuzz-%ld.state", dir,
	         (long)getpid());
	snprintf(path2, sizeof(path2), "%s/admit-fuzz-%ld.re.state", dir,
	         (long)getpid());
	(void)argc;
	(void)argv;
	if (seeds)
		write_seeds(seeds);
	return 0;
}

static void
write_file(const char *p, const uint8_t *data, size_t size)
{
	FILE *f = fopen(p, "wb");

	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
}

/* Saved and loaded again, the state saves to the same bytes. */
static void
check_resave(const struct dd_seen *s)
{
	struct dd_seen *t;
	const char *why;
	FILE *f;
	uint8_t *a, *b;
	long n, m;

	if (dd_seen_save(s, path2) != ADMIT_OK ||
	    dd_seen_load(path2, BATCH, &t, &why) != ADMIT_OK)
		abort();
	if (!(f = fopen(path2, "rb")) || fseek(f, 0, SEEK_END) != 0 ||
	    (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) != 0 ||
	    !(a = malloc((size_t)n)) || fread(a, 1, (size_t)n, f) != (size_t)n)
		abort();
	fclose(f);
	if (dd_seen_save(t, path2) != ADMIT_OK || !(f = fopen(path2, "rb")) ||
	    fseek(f, 0, SEEK_END) != 0 || (m = ftell(f)) != n ||
	    fseek(f, 0, SEEK_SET) != 0 || !(b = malloc((size_t)m)) ||
	    fread(b, 1, (size_t)m, f) != (size_t)m || memcmp(a, b, (size_t)n) != 0)
		abort();
	fclose(f);
	free(a);
	free(b);
	dd_seen_free(t);
	unlink(path2);
}

static void
try_load(const uint8_t *data, size_t size)
{
	struct dd_seen *s = NULL;
	const char *why = NULL;
	enum admit_status st;

	write_file(path, data, size);
	st = dd_seen_load(path, BATCH, &s, &why);
	if (st != ADMIT_OK) {
		if ((st != ADMIT_ECORRUPT && st != ADMIT_NOMEM && st != ADMIT_EIO) ||
		    !why)
			abort();
		return;
	}
	check_resave(s);
	/* Every key of the ring leaves the horizon, oldest first. */
	for (uint64_t k = 0; k < s->ring_len; k++) {
		uint64_t pos = (s->admitted - s->ring_len + k) % s->ring_size;

		if (dd_seen_delete(s, dd_shard_of(s, s->ring_h[pos]),
		                   s->ring_h[pos], s->ring_g[pos]) != ADMIT_OK)
			abort();
	}
	for (uint64_t k = 0; k < 8; k++) {
		uint64_t h = admit_mix64(k ^ (uint64_t)size);
		uint8_t gen;

		st = dd_seen_admit(s, dd_shard_of(s, h), h, &gen);
		if (st != ADMIT_OK && st != ADMIT_EXISTS && st != ADMIT_FULL &&
		    st != ADMIT_NOMEM)
			abort();
	}
	dd_seen_free(s);
}

/* Every checksum as the layout (state.c) goes: each shard's chain, then
 * the file's. */
static void
fix_sums(uint8_t *b, size_t size)
{
	size_t off = 80, end = size - 8;
	uint32_t nshards = snap_get32(b + 12);

	for (uint32_t i = 0; i < nshards && i < DD_MAX_SHARDS; i++) {
		uint64_t len;

		if (off + 16 > end)
			break;
		len = snap_get64(b + off + 8);
		off += 16;
		if (len > end - off)
			break;
		(void)fuzz_fix_chain(b + off, (size_t)len);
		off += (size_t)len;
	}
	snap_put64(b + end, XXH3_64bits(b, end));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;

	try_load(data, size);
	if (size >= 88 && (copy = malloc(size))) {
		memcpy(copy, data, size);
		fix_sums(copy, size);
		try_load(copy, size);
		free(copy);
	}
	unlink(path);
	return 0;
}
