/*
 * fuzz_chain - libFuzzer target for admit_chain_restore().
 *
 * Each input is restored three times: as it is; with each filter's
 * checksum and then the outer checksum recomputed (walking the layout as
 * far as the lengths allow), so that mutations reach the checks behind the
 * checksums (the header's ranges, each filter's parameters against the
 * chain's, the limits of a max_load chain); and with only the outer one
 * recomputed.  A chain that restores must be sound: its info agrees with
 * its filters, every filter keeps its limit, it dumps to bytes that restore
 * to a chain dumping the same bytes, and it still takes an add, a delete
 * and a trim.  With ADMIT_FUZZ_SEEDS=dir set, the target first writes a few
 * valid dumps (both format versions) there as a starting corpus.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <admit/admit.h>

#include "hash.h" /* XXH3, inlined as the library does */
#include "snapfile.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
write_seeds(const char *dir)
{
	static const struct admit_chain_config cfgs[] = {
		{ .capacity = 10, .expansion = 2, .stripes = 1, .seed = 1 },
		{ .capacity = 8, .expansion = 3, .max_filters = 4, .seed = 2,
		  .fingerprint_bits = 8 },
		{ .capacity = 6, .expansion = 2, .stripes = 2, .seed = 3,
		  .max_load = 0.5, .single_writer = true },
	};

	for (unsigned i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		struct admit_chain *c;
		char p[4096];

		if (admit_chain_new(&cfgs[i], &c) != ADMIT_OK)
			abort();
		for (uint64_t k = 0; k < 30; k++)
			(void)admit_chain_add(c, &k, sizeof(k));
		if (i == 2) {
			/* A trimmed chain: the first filter emptied. */
			for (uint64_t k = 0; k < 6; k++)
				(void)admit_chain_delete_at(c, 0, &k, sizeof(k));
			(void)admit_chain_trim(c, NULL);
		}
		snprintf(p, sizeof(p), "%s/seed%u.chain", dir, i);
		if (admit_chain_save(c, p) != ADMIT_OK)
			abort();
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

static void
check_chain(struct admit_chain *c)
{
	struct admit_chain_info info;
	struct admit_chain_filter_info fi;
	struct admit_chain *d = NULL;
	uint64_t items = 0, key = 42;
	void *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	unsigned where;
	enum admit_status st;

	if (admit_chain_info(c, &info) != ADMIT_OK || info.filters == 0)
		abort();
	for (unsigned i = 0; i < info.filters; i++) {
		if (admit_chain_filter_info(c, i, &fi) != ADMIT_OK ||
		    fi.number != info.trimmed + i ||
		    (info.max_load != 0 && fi.items > fi.capacity))
			abort();
		items += fi.items;
	}
	if (items != info.items ||
	    admit_chain_filter_info(c, info.filters, &fi) != ADMIT_EINVAL)
		abort();
	if (admit_chain_dump(c, &a, &alen) != ADMIT_OK)
		abort();
	st = admit_chain_restore(a, alen, &d);
	if (st == ADMIT_NOMEM) {
		free(a);
		return;
	}
	if (st != ADMIT_OK || admit_chain_dump(d, &b, &blen) != ADMIT_OK ||
	    alen != blen || memcmp(a, b, alen) != 0)
		abort();
	free(a);
	free(b);
	admit_chain_free(d);
	st = admit_chain_add_at(c, &key, sizeof(key), &where);
	if (st == ADMIT_OK) {
		if (!admit_chain_contains(c, &key, sizeof(key)) ||
		    admit_chain_delete_at(c, where, &key, sizeof(key)) != ADMIT_OK)
			abort();
	} else if (st != ADMIT_FULL && st != ADMIT_NOMEM) {
		abort();
	}
	if (admit_chain_trim(c, NULL) != ADMIT_OK ||
	    admit_chain_info(c, &info) != ADMIT_OK || info.filters == 0)
		abort();
}

static void
try_restore(const uint8_t *data, size_t size)
{
	struct admit_chain *c = NULL;
	enum admit_status st = admit_chain_restore(data, size, &c);

	if (st != ADMIT_OK) {
		if ((st != ADMIT_ECORRUPT && st != ADMIT_NOMEM) || c)
			abort();
		return;
	}
	check_chain(c);
	admit_chain_free(c);
}

/* Recompute each filter's checksum as far as the layout goes. */
static void
fix_filters(uint8_t *b, size_t size)
{
	size_t off, end = size - 8;

	if (size < 48 + 8)
		return;
	off = snap_get32(b + 8) == 1 ? 48 : 72;
	while (off + 8 <= end) {
		uint64_t len = snap_get64(b + off);

		off += 8;
		if (len < 8 || len > end - off)
			return;
		snap_put64(b + off + len - 8, XXH3_64bits(b + off, len - 8));
		off += len;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;

	try_restore(data, size);
	if (size <= 8)
		return 0;
	copy = malloc(size);
	if (!copy)
		return 0;
	for (int pass = 0; pass < 2; pass++) {
		memcpy(copy, data, size);
		if (pass == 0)
			fix_filters(copy, size);
		snap_put64(copy + size - 8, XXH3_64bits(copy, size - 8));
		try_restore(copy, size);
	}
	free(copy);
	return 0;
}
