/*
 * textbook.c - the paper's insert (random-walk eviction) and delete for the
 * textbook cuckoo filter of textbook.h.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "textbook.h"

struct bench_textbook *
bench_textbook_new(uint64_t items, unsigned bits, uint64_t seed)
{
	struct bench_textbook *t;
	uint64_t buckets = 1;
	size_t bytes;
	void *mem;

	if (bits != 8 && bits != 16)
		return NULL;
	/* As the paper's code sizes its table: a power of two of buckets,
	 * doubled if the items would fill it past 96 %. */
	while (buckets * TEXTBOOK_SLOTS < items)
		buckets <<= 1;
	if ((double)items / (double)(buckets * TEXTBOOK_SLOTS) > 0.96)
		buckets <<= 1;
	if (buckets < 2)
		buckets = 2;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	bytes = (size_t)buckets * TEXTBOOK_SLOTS * bits / 8;
	/* Huge pages, as admit's table gets (alloc.c), so that neither
	 * pays more TLB misses than the other. */
	if (posix_memalign(&mem, 2u << 20, bytes) != 0) {
		free(t);
		return NULL;
	}
	madvise(mem, bytes, MADV_HUGEPAGE);
	memset(mem, 0, bytes);
	t->table = mem;
	t->mask = buckets - 1;
	t->bits = bits;
	t->seed = seed;
	t->rng = seed | 1;
	return t;
}

void
bench_textbook_free(struct bench_textbook *t)
{
	if (!t)
		return;
	free(t->table);
	free(t);
}

size_t
bench_textbook_memory(const struct bench_textbook *t)
{
	return (size_t)(t->mask + 1) * TEXTBOOK_SLOTS * t->bits / 8;
}

static uint32_t
slot_get(const struct bench_textbook *t, uint64_t i, unsigned s)
{
	if (t->bits == 8)
		return t->table[i * 4 + s];
	uint16_t v;

	memcpy(&v, t->table + i * 8 + s * 2, 2);
	return v;
}

static void
slot_put(struct bench_textbook *t, uint64_t i, unsigned s, uint32_t fp)
{
	if (t->bits == 8) {
		t->table[i * 4 + s] = (unsigned char)fp;
	} else {
		uint16_t v = (uint16_t)fp;

		memcpy(t->table + i * 8 + s * 2, &v, 2);
	}
}

/* Put fp in a free slot of bucket i, if it has one. */
static bool
put_free(struct bench_textbook *t, uint64_t i, uint32_t fp)
{
	for (unsigned s = 0; s < TEXTBOOK_SLOTS; s++)
		if (slot_get(t, i, s) == 0) {
			slot_put(t, i, s, fp);
			return true;
		}
	return false;
}

static uint64_t
next_rand(struct bench_textbook *t)
{
	/* xorshift64 */
	t->rng ^= t->rng << 13;
	t->rng ^= t->rng >> 7;
	t->rng ^= t->rng << 17;
	return t->rng;
}

bool
bench_textbook_insert(struct bench_textbook *t, uint64_t key)
{
	uint64_t i, r;
	uint32_t fp;

	if (t->has_victim)
		return false;
	textbook_locate(t, key, &i, &fp);
	if (put_free(t, i, fp) || put_free(t, textbook_alt(t, i, fp), fp)) {
		t->items++;
		return true;
	}
	/* Random walk: evict a random entry of a random one of the two
	 * buckets, move it to its other bucket, repeat. */
	r = next_rand(t);
	if (r & 1)
		i = textbook_alt(t, i, fp);
	for (unsigned kick = 0; kick < TEXTBOOK_MAX_KICKS; kick++) {
		unsigned s = (unsigned)(next_rand(t) >> 62);
		uint32_t old = slot_get(t, i, s);

		slot_put(t, i, s, fp);
		fp = old;
		i = textbook_alt(t, i, fp);
		if (put_free(t, i, fp)) {
			t->items++;
			return true;
		}
	}
	/* The last evicted fingerprint has no slot: keep it aside, so no key
	 * is lost, and refuse every later insert. */
	t->has_victim = true;
	t->victim_bucket = i;
	t->victim_fp = fp;
	t->items++;
	return true;
}

bool
bench_textbook_delete(struct bench_textbook *t, uint64_t key)
{
	uint64_t i1, i2;
	uint32_t fp;

	textbook_locate(t, key, &i1, &fp);
	i2 = textbook_alt(t, i1, fp);
	for (int k = 0; k < 2; k++) {
		uint64_t i = k ? i2 : i1;

		for (unsigned s = 0; s < TEXTBOOK_SLOTS; s++)
			if (slot_get(t, i, s) == fp) {
				slot_put(t, i, s, 0);
				t->items--;
				/* Room again, perhaps for the victim. */
				if (t->has_victim &&
				    (put_free(t, t->victim_bucket, t->victim_fp) ||
				     put_free(t, textbook_alt(t, t->victim_bucket,
				                              t->victim_fp),
				              t->victim_fp)))
					t->has_victim = false;
				return true;
			}
	}
	if (t->has_victim && t->victim_fp == fp &&
	    (t->victim_bucket == i1 || t->victim_bucket == i2)) {
		t->has_victim = false;
		t->items--;
		return true;
	}
	return false;
}
