// refcf_set.cc - the CoNEXT 2014 authors' cuckoo filter (efficient/cuckoofilter,
// header-only C++), compiled from ../shared/ref/cuckoofilter when configure
// found it, behind the C interface of sets.h.  Nothing of it is copied here:
// this file only instantiates its CuckooFilter<uint64_t, 8 or 16> with its
// defaults (SingleTable, TwoIndependentMultiplyShift) and calls Add, Contain
// and Delete as a user's program would.  The key given is the 8-byte key
// itself: the reference hashes it with its own hash, as admit does with its.
//
// The lookup loops are here, beside the header, so that Contain is inlined
// into them as it is in a user's loop over an array of keys.
#include <new>

#include "cuckoofilter.h"

#include "sets.h"

namespace {
template <size_t bits>
using ref_filter = cuckoofilter::CuckooFilter<uint64_t, bits>;

template <size_t bits>
uint64_t
pass(const void *f, const uint64_t *keys, size_t n)
{
	const ref_filter<bits> *r = static_cast<const ref_filter<bits> *>(f);
	uint64_t hits = 0;

	for (size_t i = 0; i < n; i++)
		hits += r->Contain(keys[i]) == cuckoofilter::Ok;
	return hits;
}
} // namespace

struct bench_ref {
	unsigned bits;
	void *f; // ref_filter<bits>
};

extern "C" struct bench_ref *
bench_ref_new(uint64_t items, unsigned bits)
{
	if (bits != 8 && bits != 16)
		return nullptr;
	try {
		bench_ref *r = new bench_ref;

		r->bits = bits;
		if (bits == 8)
			r->f = new ref_filter<8>(items);
		else
			r->f = new ref_filter<16>(items);
		return r;
	} catch (...) {
		return nullptr;
	}
}

extern "C" void
bench_ref_free(struct bench_ref *r)
{
	if (!r)
		return;
	if (r->bits == 8)
		delete static_cast<ref_filter<8> *>(r->f);
	else
		delete static_cast<ref_filter<16> *>(r->f);
	delete r;
}

extern "C" bool
bench_ref_insert(struct bench_ref *r, uint64_t key)
{
	if (r->bits == 8)
		return static_cast<ref_filter<8> *>(r->f)->Add(key) == cuckoofilter::Ok;
	return static_cast<ref_filter<16> *>(r->f)->Add(key) == cuckoofilter::Ok;
}

extern "C" bool
bench_ref_contains(const struct bench_ref *r, uint64_t key)
{
	return r->bits == 8 ? pass<8>(r->f, &key, 1) : pass<16>(r->f, &key, 1);
}

extern "C" uint64_t
bench_ref_contains_pass(const struct bench_ref *r, const uint64_t *keys,
                        size_t n)
{
	return r->bits == 8 ? pass<8>(r->f, keys, n) : pass<16>(r->f, keys, n);
}

extern "C" bool
bench_ref_delete(struct bench_ref *r, uint64_t key)
{
	if (r->bits == 8)
		return static_cast<ref_filter<8> *>(r->f)->Delete(key) == cuckoofilter::Ok;
	return static_cast<ref_filter<16> *>(r->f)->Delete(key) == cuckoofilter::Ok;
}

extern "C" size_t
bench_ref_memory(const struct bench_ref *r)
{
	if (r->bits == 8)
		return static_cast<ref_filter<8> *>(r->f)->SizeInBytes();
	return static_cast<ref_filter<16> *>(r->f)->SizeInBytes();
}
