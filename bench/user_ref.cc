// user_ref - the CoNEXT 2014 authors' cuckoo filter (efficient/cuckoofilter,
// header-only) as a user's program meets it: the same program as
// bench/user_filter.c, built by bench/bench_ref.sh with
// `c++ -O2 -march=native -I<its src>`.  Nothing of it is copied here: this
// file instantiates its CuckooFilter<uint64_t, 8 or 16> with its defaults,
// or for BITS 13 its semi-sorted CuckooFilter<uint64_t, 13, PackedTable>
// (its own benchmarks' SemiSort13), and calls Add and Contain on the same
// keys as user_filter.
//
//   user_ref N BITS
//
// Prints "op Mops/s" lines for insert, lookup+ and lookup-, then
// bits_per_item (its table's bytes x 8 / N) and fpr_percent (the absent
// keys found); exits 1 if a present key is not found.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "cuckoofilter.h"

namespace {
uint64_t
splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double
now()
{
	timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

std::vector<uint64_t>
keys_from(uint64_t seed, size_t n)
{
	std::vector<uint64_t> k(n);

	for (size_t i = 0; i < n; i++)
		k[i] = splitmix64(&seed);
	return k;
}

void
report(const char *op, size_t n, double t)
{
	std::printf("%s %.3f\n", op, n / t / 1e6);
}

template <size_t bits,
          template <size_t> class Table = cuckoofilter::SingleTable>
int
run(size_t n)
{
	std::vector<uint64_t> keys = keys_from(1, n);
	cuckoofilter::CuckooFilter<uint64_t, bits, Table> f(n);
	size_t hits = 0;
	double t0 = now();

	for (size_t i = 0; i < n; i++)
		hits += f.Add(keys[i]) == cuckoofilter::Ok;
	report("insert", n, now() - t0);
	if (hits != n)
		std::fprintf(stderr, "%zu inserts failed\n", n - hits);
	hits = 0;
	t0 = now();
	for (size_t i = 0; i < n; i++)
		hits += f.Contain(keys[i]) == cuckoofilter::Ok;
	report("lookup+", n, now() - t0);
	if (hits != n)
		return 1;
	std::vector<uint64_t> absent = keys_from(2, n);
	hits = 0;
	t0 = now();
	for (size_t i = 0; i < n; i++)
		hits += f.Contain(absent[i]) == cuckoofilter::Ok;
	report("lookup-", n, now() - t0);
	std::printf("bits_per_item %.3f\nfpr_percent %.4f\n",
	            8.0 * f.SizeInBytes() / n, 100.0 * hits / n);
	return 0;
}
} // namespace

int
main(int argc, char **argv)
{
	if (argc < 3) {
		std::fprintf(stderr, "usage: user_ref N BITS\n");
		return 2;
	}
	size_t n = std::strtoull(argv[1], nullptr, 0);
	unsigned bits = (unsigned)std::strtoul(argv[2], nullptr, 0);

	if (bits == 8)
		return run<8>(n);
	if (bits == 16)
		return run<16>(n);
	if (bits == 13)
		return run<13, cuckoofilter::PackedTable>(n);
	return 2;
}
