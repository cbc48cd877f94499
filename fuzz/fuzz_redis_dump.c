/*
 * fuzz_redis_dump - libFuzzer target for what the Redis module accepts as a
 * filter: a CF.LOADCHUNK sequence (cf_dump_check() on the bytes gathered
 * so far, then the restore the module makes) and an RDB value (the chain's
 * dump alone), without a server.
 *
 * Each input is a dump as CF.SCANDUMP cuts it: a chain's dump and,
 * optionally, the 24-byte trailer.  It is taken as it is and with every
 * checksum recomputed (each filter's, the chain's, the trailer's), then fed
 * in chunks of a size its first byte picks, the last one short, as the
 * module feeds LOADCHUNK's.  What must hold: a whole dump is the chain's
 * bytes with or without a whole trailer; one that restores dumps back to
 * the same chain bytes and keeps the trailer's count; a load stops at the
 * first chunk that cannot begin a dump.  With ADMIT_FUZZ_SEEDS=dir set, the
 * target first writes a few dumps there as a starting corpus.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <admit/admit.h>

#include "cf_dump.h"
#include "fixup.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
write_seeds(const char *dir)
{
	static const struct admit_chain_config cfgs[] = {
		{ .capacity = 10, .expansion = 2, .stripes = 1, .seed = 1 },
		{ .capacity = 8, .expansion = 1, .max_filters = 1, .stripes = 1,
		  .seed = 2 },
	};

	for (unsigned i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		struct admit_chain *c;
		unsigned char *buf;
		void *chain;
		size_t n;
		char p[4096];
		FILE *f;

		if (admit_chain_new(&cfgs[i], &c) != ADMIT_OK)
			abort();
		for (uint64_t k = 0; k < 25; k++)
			(void)admit_chain_add(c, &k, sizeof(k));
		if (admit_chain_dump(c, &chain, &n) != ADMIT_OK ||
		    !(buf = realloc(chain, n + CF_TRAILER_LEN)))
			abort();
		cf_trailer_put(buf + n, 3 + i);
		snprintf(p, sizeof(p), "%s/seed%u.cfdump", dir, i);
		/* The first byte picks the chunk size. */
		if (!(f = fopen(p, "wb")) || fputc(7, f) == EOF ||
		    fwrite(buf, 1, n + (i ? 0 : CF_TRAILER_LEN), f) == 0 ||
		    fclose(f) != 0)
			abort();
		free(buf);
		admit_chain_free(c);
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("ADMIT_FUZZ_SEEDS");

	(void)argc;
	(void)argv;
	if (seeds)
		write_seeds(seeds);
	return 0;
}

/* The module's restore of a whole dump: the chain must dump back to the
 * bytes it came from. */
static void
restore(const uint8_t *b, size_t chain_len)
{
	struct admit_chain *c = NULL;
	enum admit_status st = admit_chain_restore(b, chain_len, &c);
	void *again;
	size_t n;

	if (st != ADMIT_OK) {
		if ((st != ADMIT_ECORRUPT && st != ADMIT_NOMEM) || c)
			abort();
		return;
	}
	if (admit_chain_dump(c, &again, &n) != ADMIT_OK)
		abort();
	if (n != chain_len || memcmp(again, b, n) != 0)
		abort();
	free(again);
	admit_chain_free(c);
}

/* LOADCHUNK's loop over b in chunks of chunk bytes: as in the module, a
 * chunk shorter than the others is the last; when size is a multiple of
 * chunk the load may end waiting for more, as a client that stops does. */
static void
load_in_chunks(const uint8_t *b, size_t size, size_t chunk)
{
	size_t have = 0, chain_len = 0;
	uint64_t deleted = 0;

	while (have < size) {
		size_t len = size - have < chunk ? size - have : chunk;
		bool last = len < chunk;
		enum cf_dump_state d;

		have += len;
		d = cf_dump_check(b, have, last, &chain_len, &deleted);
		if (d == CF_DUMP_BAD)
			return;
		if (d == CF_DUMP_MORE) {
			if (last)
				abort(); /* nothing follows: must be decided */
			continue;
		}
		if (chain_len > have || (have != chain_len &&
		                         have != chain_len + CF_TRAILER_LEN))
			abort();
		if (have == chain_len && deleted != 0)
			abort();
		if (have > chain_len &&
		    deleted != snap_get64(b + chain_len + 8))
			abort();
		restore(b, chain_len);
		return;
	}
}

static void
try_dump(const uint8_t *b, size_t size, size_t chunk)
{
	load_in_chunks(b, size, chunk);
	restore(b, size); /* an RDB value: the chain's bytes alone */
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t chunk, chain_len;
	uint8_t *copy;

	if (size < 2)
		return 0;
	chunk = 1 + data[0] % 128 * 16;
	data++;
	size--;
	try_dump(data, size, chunk);
	if (!(copy = malloc(size)))
		return 0;
	memcpy(copy, data, size);
	chain_len = fuzz_fix_chain(copy, size);
	if (chain_len != 0 && size == chain_len + CF_TRAILER_LEN)
		snap_put64(copy + chain_len + 16,
		           admit_hash(copy + chain_len, 16, 0));
	try_dump(copy, size, chunk);
	free(copy);
	return 0;
}
