/*
 * dedup_gen - deterministic test streams for admit-dedup.
 *
 *   dedup_gen text   LINES SEED SPAN   event lines; half are new keys, half
 *                                      repeat one of the last SPAN distinct
 *                                      keys; some empty lines, some '\r'
 *   dedup_gen fields LINES SEED SPAN   "<random>\t<key>\t<random>": the key
 *                                      is field 2, the line itself is unique
 *   dedup_gen binary LINES SEED        random bytes (NUL included) from a
 *                                      universe of 1000 strings, no '\n'
 *
 *   dedup_gen resum  FILE              recompute the XXH3 that ends FILE
 *                                      (a state file, edited), in place
 *
 * The same arguments always give the same bytes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h" /* XXH3, as the state file's checksum uses it */
#include "prng.h" /* the tests' generator (tests/util) */

static struct prng rng;

static uint64_t
next(void)
{
	return prng_next(&rng);
}

/* Distinct key ids map to distinct lines of varied length. */
static void
key_text(uint64_t id, FILE *out)
{
	if (id % 97 == 5) {
		if (id % 2)
			fputs("\r", out); /* a key that is just "\r" ... once */
		return;               /* ... or the empty line */
	}
	fprintf(out, "event-%" PRIx64 "-%.*s", (uint64_t)(id * ADMIT_GOLDEN64),
	        (int)(id % 13), "abcdefghijklm");
	if (id % 11 == 3)
		fputc('\r', out);
}

static uint64_t
pick(uint64_t *fresh, uint64_t span)
{
	if (*fresh == 0 || next() % 2 == 0)
		return (*fresh)++;
	return *fresh - 1 - next() % (span < *fresh ? span : *fresh);
}

/* The checksum an edited state file needs to get past it, so that a test
 * reaches the checks behind it. */
static int
resum(const char *path)
{
	static unsigned char b[1 << 26];
	FILE *f = fopen(path, "r+b");
	size_t n = f ? fread(b, 1, sizeof(b), f) : 0;
	uint64_t sum;

	if (!f || n < 8 || n == sizeof(b)) {
		if (f)
			fclose(f);
		fprintf(stderr, "dedup_gen: cannot resum '%s'\n", path);
		return 2;
	}
	sum = XXH3_64bits(b, n - 8);
	for (int i = 0; i < 8; i++)
		b[n - 8 + i] = (unsigned char)(sum >> (8 * i));
	if (fseek(f, (long)(n - 8), SEEK_SET) != 0 ||
	    fwrite(b + n - 8, 1, 8, f) != 8 || fclose(f) != 0)
		return 1;
	return 0;
}

int
main(int argc, char **argv)
{
	uint64_t lines, fresh = 0, span;
	static char out_buf[1 << 16];

	if (argc == 3 && strcmp(argv[1], "resum") == 0)
		return resum(argv[2]);
	if (argc < 4) {
		fprintf(stderr, "usage: dedup_gen text|fields|binary LINES SEED [SPAN]\n"
		        "       dedup_gen resum FILE\n");
		return 2;
	}
	setvbuf(stdout, out_buf, _IOFBF, sizeof(out_buf));
	lines = strtoull(argv[2], NULL, 10);
	rng.s = strtoull(argv[3], NULL, 10);
	span = argc > 4 ? strtoull(argv[4], NULL, 10) : UINT64_MAX;
	if (span == 0)
		span = 1;
	if (strcmp(argv[1], "text") == 0) {
		for (uint64_t i = 0; i < lines; i++) {
			key_text(pick(&fresh, span), stdout);
			putchar('\n');
		}
	} else if (strcmp(argv[1], "fields") == 0) {
		for (uint64_t i = 0; i < lines; i++) {
			printf("%" PRIu64 "\tk%" PRIx64 "\t%" PRIu64 "\n", next() % 1000000,
			       (uint64_t)(pick(&fresh, span) * ADMIT_GOLDEN64), next() % 1000);
		}
	} else if (strcmp(argv[1], "binary") == 0) {
		unsigned char u[1000][64];
		unsigned len[1000];

		for (int k = 0; k < 1000; k++) {
			len[k] = (unsigned)(next() % 65);
			for (unsigned j = 0; j < len[k]; j++) {
				u[k][j] = (unsigned char)next();
				if (u[k][j] == '\n')
					u[k][j] = 0;
			}
		}
		for (uint64_t i = 0; i < lines; i++) {
			int k = (int)(next() % 1000);

			fwrite(u[k], 1, len[k], stdout);
			if (i + 1 < lines)
				putchar('\n'); /* the last line has none */
		}
	} else {
		fprintf(stderr, "dedup_gen: unknown mode '%s'\n", argv[1]);
		return 2;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
