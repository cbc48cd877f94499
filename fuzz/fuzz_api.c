/*
 * fuzz_api - libFuzzer target: random sequences of cuckoo filter calls,
 * checked against an exact model after every call.
 *
 * The first input byte picks the mode (8-bit, 16-bit, counting, or
 * 13-bit semi-sorted buckets) and the stripe count; each later pair of bytes is one call on one of 16 keys of
 * lengths 0 to 8.  The keys are chosen with pairwise distinct signatures
 * (stress_common.h), so the filter is exact on them and the model is one
 * number per key: copies (membership) or the counter (counting).  A call
 * answered ADMIT_FULL must change nothing, which later counts verify.
 * Any disagreement aborts, which libFuzzer reports with the input.
 */
#include "config.h"

#include <stdlib.h>

#include <admit/admit.h>

#include "stress_common.h"

#define NKEYS 16
#define MAX_COPIES 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct key {
	uint64_t bytes;
	size_t len;
};

static void
check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "model mismatch: %s\n", what);
		abort();
	}
}

/* Keys of lengths 0..8 with distinct signatures in f (one key of length 0
 * at most: there is only one). */
static void
pick_keys(const struct admit_cuckoo *f, struct key *keys)
{
	uint64_t sigs[NKEYS];
	unsigned n = 0;

	for (uint64_t id = 1; n < NKEYS; id++) {
		struct key k = { prng_mix(id), (size_t)(id % 9) };
		struct cuckoo_pos p;
		uint64_t sig;
		bool dup = false;

		if (k.len == 0 && id > 9)
			continue;
		cuckoo_locate(f, &k.bytes, k.len, &p);
		sig = (uint64_t)(p.i1 < p.i2 ? p.i1 : p.i2) << 32 | p.fp;
		for (unsigned i = 0; i < n; i++)
			dup |= sigs[i] == sig;
		if (dup)
			continue;
		sigs[n] = sig;
		keys[n++] = k;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned stripes[] = { 1, 2, 4, 64 };
	struct admit_cuckoo_config cfg = { .capacity = 24, .seed = 77 };
	struct admit_cuckoo *f;
	struct key keys[NKEYS];
	unsigned model[NKEYS] = { 0 };

	if (size < 1)
		return 0;
	cfg.fingerprint_bits = data[0] & 1 ? 8 : 16;
	cfg.counting = (data[0] & 6) == 6;
	if (cfg.counting)
		cfg.fingerprint_bits = 16;
	cfg.stripes = stripes[(data[0] >> 3) & 3];
	if (!cfg.counting && (data[0] & 0x20)) {
		cfg.semi_sorted = true;
		cfg.fingerprint_bits = 13;
	}
	if (admit_cuckoo_new(&cfg, &f) != ADMIT_OK)
		abort();
	pick_keys(f, keys);

	for (size_t i = 1; i + 1 < size; i += 2) {
		unsigned k = data[i + 1] % NKEYS, *c = &model[k];
		const void *kp = &keys[k].bytes;
		size_t kl = keys[k].len;
		enum admit_status st;
		uint64_t total = 0;

		switch (data[i] % 9) {
		case 0: /* insert: a copy, or an increment in counting mode */
			if (!cfg.counting && *c >= MAX_COPIES)
				break;
			if ((data[i] / 9) & 1) {
				/* the same insert through the batch call */
				enum admit_status one;

				st = admit_cuckoo_insert_many(f, 1, &kp, &kl, &one);
				check(st == one, "insert_many status");
			} else {
				st = admit_cuckoo_insert(f, kp, kl);
			}
			check(st == ADMIT_OK || (st == ADMIT_FULL && (!cfg.counting || !*c)),
			      "insert");
			if (st == ADMIT_OK)
				*c += !cfg.counting || *c < 15;
			break;
		case 1:
			st = admit_cuckoo_insert_unique(f, kp, kl);
			check(*c ? st == ADMIT_EXISTS : st == ADMIT_OK || st == ADMIT_FULL,
			      "insert_unique");
			if (st == ADMIT_OK)
				*c = 1;
			break;
		case 2:
			st = admit_cuckoo_delete(f, kp, kl);
			check(*c ? st == ADMIT_OK : st == ADMIT_NOTFOUND, "delete");
			if (st == ADMIT_OK)
				--*c;
			break;
		case 3:
			check(admit_cuckoo_contains(f, kp, kl) == (*c > 0), "contains");
			break;
		case 4:
			check(admit_cuckoo_count(f, kp, kl) == *c, "count");
			break;
		case 5:
			st = admit_cuckoo_increment(f, kp, kl);
			if (!cfg.counting) {
				check(st == ADMIT_EINVAL, "increment outside counting mode");
				break;
			}
			check(st == ADMIT_OK || (st == ADMIT_FULL && !*c), "increment");
			if (st == ADMIT_OK && *c < 15)
				++*c;
			break;
		case 6:
			st = admit_cuckoo_halve(f);
			check(st == (cfg.counting ? ADMIT_OK : ADMIT_EINVAL), "halve");
			if (cfg.counting)
				for (unsigned j = 0; j < NKEYS; j++)
					model[j] >>= 1;
			break;
		case 7: {
			const void *kv[NKEYS];
			size_t lv[NKEYS];
			bool out[NKEYS];

			for (unsigned j = 0; j < NKEYS; j++) {
				kv[j] = &keys[j].bytes;
				lv[j] = keys[j].len;
			}
			admit_cuckoo_contains_many(f, NKEYS, kv, lv, out);
			for (unsigned j = 0; j < NKEYS; j++)
				check(out[j] == (model[j] > 0), "contains_many");
			break;
		}
		default:
			for (unsigned j = 0; j < NKEYS; j++)
				total += cfg.counting ? model[j] > 0 : model[j];
			check(admit_cuckoo_size(f) == total, "size");
			check(cuckoo_debug_walk(f) == total, "table walk");
			break;
		}
	}
	admit_cuckoo_free(f);
	return 0;
}
