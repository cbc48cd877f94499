/*
 * cuckoo_semisort.h - the semi-sorted bucket encoding (Fan, Andersen,
 * Kaminsky, Mitzenmacher, "Cuckoo Filter: Practically Better Than Bloom",
 * CoNEXT 2014, section 5.2): a bucket of four 13-bit fingerprints in 48
 * bits instead of 52.
 *
 * The order of a bucket's fingerprints carries no information, so they are
 * kept sorted, and the four high nibbles of a sorted bucket form a sorted
 * quadruple: one of C(19, 4) = 3876 multisets of four values in 0..15,
 * which its rank numbers in 12 bits instead of 16.  The packed value:
 *
 *   bits  0..11  rank of the nibbles (a <= b <= c <= d): the combinatorial
 *                number of the strictly increasing a, b+1, c+2, d+3,
 *                C(a,1) + C(b+1,2) + C(c+2,3) + C(d+3,4)
 *   bits 12..47  the four low 9-bit parts, lane k's at 12 + 9k
 *
 * with the fingerprints sorted by their whole value (so by nibble, then by
 * low part): one packed value per multiset, the canonical form the snapshot
 * loader checks.  An empty slot is fingerprint 0 and sorts first; an empty
 * bucket packs to 0.
 *
 * Unpacked, a bucket is the 16-bit lane word of a 16-bit filter (lane k at
 * bits 16k), so the filter's SWAR helpers (cuckoo_internal.h) work on it
 * unchanged.  Nothing here touches shared memory: these are pure functions,
 * tested on their own (tests/test_cuckoo_semisort.c).
 */
#ifndef ADMIT_CUCKOO_SEMISORT_H
#define ADMIT_CUCKOO_SEMISORT_H

#include <stdbool.h>
#include <stdint.h>

#define SS_FP_BITS 13
#define SS_LOW_BITS 9                     /* a fingerprint's bits below its nibble */
#define SS_CODES 3876u                    /* sorted nibble quadruples */
#define SS_DECODE_ENTRIES 4096u           /* every 12-bit value, 3876 and up unused */
#define SS_BUCKET_BYTES 6

/* The rank of the sorted nibbles a <= b <= c <= d (each < 16). */
static inline uint32_t
ss_rank(uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	return a + (b + 1) * b / 2 + (c + 2) * (c + 1) * c / 6 +
	       (d + 3) * (d + 2) * (d + 1) * d / 24;
}

/* dec[rank] = a | b << 4 | c << 8 | d << 12 for every sorted quadruple;
 * the unused entries 0 (a torn read may index them; its answer is then
 * thrown away by the stripe validation). */
static inline void
ss_build_decode(uint16_t dec[SS_DECODE_ENTRIES])
{
	for (uint32_t i = 0; i < SS_DECODE_ENTRIES; i++)
		dec[i] = 0;
	for (uint32_t d = 0; d < 16; d++)
		for (uint32_t c = 0; c <= d; c++)
			for (uint32_t b = 0; b <= c; b++)
				for (uint32_t a = 0; a <= b; a++)
					dec[ss_rank(a, b, c, d)] = (uint16_t)
					    (a | b << 4 | c << 8 | d << 12);
}

/* A packed bucket (48 bits) as four 16-bit lanes, by the decode table. */
static inline __attribute__((always_inline)) uint64_t
ss_unpack(uint64_t v, const uint16_t *dec)
{
	uint64_t lo = v >> 12, n = dec[v & 0xfff];
	uint64_t lanes = (lo & 0x1ff) | (lo & (0x1ffull << 9)) << 7 |
	                 (lo & (0x1ffull << 18)) << 14 |
	                 (lo & (0x1ffull << 27)) << 21;
	uint64_t nib = (n & 0xf) | (n & 0xf0) << 12 | (n & 0xf00) << 24 |
	               (n & 0xf000) << 36;

	return lanes | nib << SS_LOW_BITS;
}

/* Whether a packed bucket has an empty slot, without unpacking it: the
 * smallest fingerprint sorts first, and 0 is the smallest, so there is
 * one if and only if lane 0 (its nibble and its low part) is 0. */
static inline bool
ss_has_empty(uint64_t v, const uint16_t *dec)
{
	return ((v >> 12) & 0x1ff) == 0 && (dec[v & 0xfff] & 0xf) == 0;
}

#define SS_SWAP(x, y)                                                         \
	do {                                                                  \
		if ((x) > (y)) {                                              \
			uint32_t t_ = (x);                                    \
			(x) = (y);                                            \
			(y) = t_;                                             \
		}                                                             \
	} while (0)

/* Four 16-bit lanes (each value below 2^13) as a packed bucket: sorted by
 * a five-comparator network, then ranked. */
static inline uint64_t
ss_pack(uint64_t lanes)
{
	uint32_t f0 = (uint32_t)lanes & 0xffff, f1 = (uint32_t)(lanes >> 16) & 0xffff;
	uint32_t f2 = (uint32_t)(lanes >> 32) & 0xffff, f3 = (uint32_t)(lanes >> 48);

	SS_SWAP(f0, f1);
	SS_SWAP(f2, f3);
	SS_SWAP(f0, f2);
	SS_SWAP(f1, f3);
	SS_SWAP(f1, f2);
	return ss_rank(f0 >> SS_LOW_BITS, f1 >> SS_LOW_BITS, f2 >> SS_LOW_BITS,
	               f3 >> SS_LOW_BITS) |
	       (uint64_t)(f0 & 0x1ff) << 12 | (uint64_t)(f1 & 0x1ff) << 21 |
	       (uint64_t)(f2 & 0x1ff) << 30 | (uint64_t)(f3 & 0x1ff) << 39;
}
#undef SS_SWAP

#endif /* ADMIT_CUCKOO_SEMISORT_H */
