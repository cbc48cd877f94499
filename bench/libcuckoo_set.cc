// libcuckoo_set.cc - libcuckoo's concurrent cuckoohash_map (header-only C++,
// Debian libcuckoo-dev) as a set of 64-bit hashes, behind the C interface of
// sets.h.  Readers and writers both take the two buckets' spinlocks.
#include <new>

#include <libcuckoo/cuckoohash_map.hh>

#include "sets.h"

namespace {
// The keys already are XXH3 hashes: hash them again and the comparison
// with admit (which hashes once) would be unfair.
struct identity {
	size_t operator()(uint64_t h) const { return h; }
};
using set_map = libcuckoo::cuckoohash_map<uint64_t, uint8_t, identity>;
} // namespace

struct bench_lcuckoo {
	set_map map;
	explicit bench_lcuckoo(uint64_t n) : map(n) {}
};

extern "C" struct bench_lcuckoo *
bench_lcuckoo_new(uint64_t items)
{
	try {
		return new bench_lcuckoo(items);
	} catch (...) {
		return nullptr;
	}
}

extern "C" void
bench_lcuckoo_free(struct bench_lcuckoo *s)
{
	delete s;
}

extern "C" bool
bench_lcuckoo_insert(struct bench_lcuckoo *s, uint64_t h)
{
	try {
		return s->map.insert(h, 0);
	} catch (...) {
		return false;
	}
}

extern "C" bool
bench_lcuckoo_contains(struct bench_lcuckoo *s, uint64_t h)
{
	return s->map.contains(h);
}

extern "C" bool
bench_lcuckoo_delete(struct bench_lcuckoo *s, uint64_t h)
{
	return s->map.erase(h);
}
