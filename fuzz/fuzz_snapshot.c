/*
 * fuzz_snapshot - libFuzzer target for admit_cuckoo_load().
 *
 * Each input is loaded twice: as it is, and with its trailing checksum
 * recomputed, so that mutations reach the checks behind the checksum (the
 * parameters, every slot, the item count).  A file that loads must be a
 * sound filter: its table walk passes and agrees with its size, and it saves
 * and loads back to the same size.  With ADMIT_FUZZ_SEEDS=dir set, the
 * target first writes a few valid snapshots there as a starting corpus.
 */
#include "config.h"

#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <admit/admit.h>

#include "cuckoo_internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64], path2[64];

static void
write_seeds(const char *dir)
{
	static const struct admit_cuckoo_config cfgs[] = {
		{ .capacity = 40, .fingerprint_bits = 8, .stripes = 4, .seed = 1 },
		{ .capacity = 40, .fingerprint_bits = 16, .stripes = 8, .seed = 2 },
		{ .capacity = 40, .counting = true, .stripes = 1, .seed = 3 },
		{ .capacity = 40, .semi_sorted = true, .stripes = 2, .seed = 4 },
	};

	for (unsigned i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		struct admit_cuckoo *f;
		char p[4096];

		if (admit_cuckoo_new(&cfgs[i], &f) != ADMIT_OK)
			abort();
		for (uint64_t k = 0; k < 10 * i + 5; k++)
			(void)admit_cuckoo_insert(f, &k, sizeof(k));
		snprintf(p, sizeof(p), "%s/seed%u.snap", dir, i);
		if (admit_cuckoo_save(f, p) != ADMIT_OK)
			abort();
		admit_cuckoo_free(f);
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("ADMIT_FUZZ_SEEDS");
	/* In memory where there is a tmpfs: a save syncs its file. */
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	(void)argc;
	(void)argv;
	snprintf(path, sizeof(path), "%s/admit-fuzz-%ld.snap", dir,
	         (long)getpid());
	snprintf(path2, sizeof(path2), "%s/admit-fuzz-%ld.re.snap", dir,
	         (long)getpid());
	if (seeds)
		write_seeds(seeds);
	return 0;
}

static void
try_load(const uint8_t *data, size_t size)
{
	struct admit_cuckoo *f = NULL, *g = NULL;
	FILE *fp = fopen(path, "wb");
	enum admit_status st;

	if (!fp || fwrite(data, 1, size, fp) != size || fclose(fp) != 0)
		abort();
	st = admit_cuckoo_load(path, &f);
	if (st != ADMIT_OK) {
		if (st != ADMIT_ECORRUPT && st != ADMIT_NOMEM)
			abort(); /* a regular, readable file: corrupt or too big */
		return;
	}
	if (cuckoo_debug_walk(f) != admit_cuckoo_size(f))
		abort();
	if (admit_cuckoo_save(f, path2) != ADMIT_OK ||
	    admit_cuckoo_load(path2, &g) != ADMIT_OK ||
	    admit_cuckoo_size(g) != admit_cuckoo_size(f))
		abort();
	(void)admit_cuckoo_contains(f, data, size > 16 ? 16 : size);
	admit_cuckoo_free(g);
	admit_cuckoo_free(f);
	unlink(path2);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	try_load(data, size);
	if (size > 8) {
		uint8_t *copy = malloc(size);
		uint64_t sum;

		if (!copy)
			return 0;
		memcpy(copy, data, size);
		sum = htole64(XXH3_64bits(copy, size - 8));
		memcpy(copy + size - 8, &sum, 8);
		try_load(copy, size);
		free(copy);
	}
	unlink(path);
	return 0;
}
