/*
 * fuzz_state.c - libFuzzer target over admit-cached's state file loader
 * (state.c).  The input after its first byte is the file; when that byte
 * is odd its checksum is recomputed first, so the checks past the checksum
 * (record bounds, the count) and the loading itself are reached.  A file
 * the checks accept is loaded into a small store (8 KiB, items up to
 * 4 KiB, so that a few records overflow it and the trimming to fit is
 * reached too); every record must be accounted for once, and the store saved again must give a file the
 * checks accept with no more items than were loaded.  The store is made
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
#include "store.h"

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
	if (again.count != saved || saved > loaded)
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
	if ((data[0] & 1) && len >= STATE_HDR + STATE_TRAILER)
		fix_sum(file, len);
	if (cached_state_check(file, len, &s) == NULL) {
		if (cached_state_load(st, &s, &n) != 0)
			abort();
		if (n.loaded + n.expired + n.too_large + n.cold + n.failed !=
		    s.count)
			abort();
		save_and_check(n.loaded);
		cached_store_flush(st, 0);
	}
	free(file);
	return 0;
}
