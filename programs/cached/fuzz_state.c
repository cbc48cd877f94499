/*
 * fuzz_state.c - libFuzzer target over admit-cached's state file loader
 * (state.c).  The input after its first byte is the file; when that byte
 * is odd its checksum is recomputed first, so the checks past the checksum
 * (record bounds, the count) and the loading itself are reached; when
 * its second bit is set the admission sketch's own checksum is recomputed
 * too (before the file's), so its import's geometry checks are reached.
 * A file the checks accept is loaded into a small store (8 KiB, items up
 * to 4 KiB, so that a few records overflow it and the trimming to fit is
 * reached too); every record must be accounted for once, and the store
 * saved again must give a file the checks accept with no more items than
 * were loaded, whose sketch the store imports back.  The store is made
 * once and emptied (flush_all) after each input.
 * Build: make fuzz (needs clang); run: programs/cached/fuzz_state
 * [corpus] (a file saved by admit-cached --state-file, with a byte 0x01
 * in front, is a good seed).
 */
#include "config.h"  /* first: it defines _GNU_SOURCE */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "snapfile.h"
#include "state.h"
#include "store_impl.h"   /* st->lru, for the sketch's import */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct cached_store *st;
static char path[64];

static void
setup(void)
{
	if (cached_store_new(8u << 10, 4096, true, 0x5eed, &st))
		abort();
	snprintf(path, sizeof(path), "%s/fuzz_state.%ld",
	         access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
	         (long)getpid());
}

/* state.h's checksum of the n-byte file at p, into its trailer. */
static void
fix_sum(unsigned char *p, size_t n)
{
	XXH3_state_t x;

	XXH3_64bits_reset(&x);
	XXH3_64bits_update(&x, p + STATE_HDR, n - STATE_HDR - STATE_TRAILER);
	XXH3_64bits_update(&x, p, STATE_HDR);
	snap_put64(p + n - STATE_TRAILER, XXH3_64bits_digest(&x));
}

/* The admission sketch's checksum (freqsketch.h's format) of a version 2
 * file of n bytes at p, recomputed when its section is there whole. */
static void
fix_sketch_sum(unsigned char *p, size_t n)
{
	uint64_t len, words;
	unsigned char *sk;

	if (n < STATE_HDR + 16 || snap_get32(p + 8) != STATE_VERSION)
		return;
	len = snap_get64(p + n - 16);
	if (len < 56 || len > n - 16 - STATE_HDR)
		return;
	sk = p + n - 16 - len;
	words = snap_get64(sk + 16);
	if (words > (len - 56) / 8 || len != 56 + words * 8)
		return;
	snap_put64(sk + 48, XXH3_64bits_withSeed(sk + 56, words * 8,
	                                         XXH3_64bits_withSeed(sk, 48, 0)));
}

/* Saves the store and checks the file it gives. */
static void
save_and_check(uint64_t loaded)
{
	struct cached_state again;
	const char *why;
	uint64_t saved;

	if (cached_state_save(st, path, &saved) != 0)
		abort();
	if (cached_state_open(path, &again, &why) != 0) {
		fprintf(stderr, "saved file refused: %s\n", why);
		abort();
	}
	if (again.count != saved || saved > loaded || !again.sketch_len ||
	    admit_lru_sketch_import(st->lru, again.sketch, again.sketch_len) !=
	    ADMIT_OK)
		abort();
	cached_state_close(&again);
	unlink(path);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cached_state s;
	struct cached_state_counts n;
	unsigned char *file;
	size_t len;

	if (!st)
		setup();
	if (size == 0)
		return 0;
	len = size - 1;
	file = malloc(len ? len : 1);
	if (!file)
		return 0;
	memcpy(file, data + 1, len);
	if (data[0] & 2)
		fix_sketch_sum(file, len);
	if ((data[0] & 1) && len >= STATE_HDR + STATE_TRAILER)
		fix_sum(file, len);
	if (cached_state_check(file, len, &s) == NULL) {
		if (cached_state_load(st, &s, &n) != 0)
			abort();
		if (n.loaded + n.expired + n.too_large + n.cold + n.failed !=
		    s.count || (!s.sketch_len && n.sketch != ADMIT_NOTFOUND))
			abort();
		save_and_check(n.loaded);
		cached_store_flush(st, 0);
	}
	free(file);
	return 0;
}
