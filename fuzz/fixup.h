/*
 * fixup.h - checksums recomputed after a mutation, so that a fuzz target's
 * input reaches the checks behind them (the fuzz targets' own helper).
 */
#ifndef ADMIT_FUZZ_FIXUP_H
#define ADMIT_FUZZ_FIXUP_H

#include <stddef.h>
#include <stdint.h>

#include "hash.h" /* XXH3, inlined as the library does */
#include "snapfile.h"

/*
 * Recomputes every checksum of the chain dump (src/chain.c's layout) that
 * starts at b and may run to b + len: each filter's, then the dump's own.
 * Returns the dump's length as its header and length words give it, or 0
 * when they do not fit in len (then the filters that fit are fixed).
 */
static inline size_t
fuzz_fix_chain(uint8_t *b, size_t len)
{
	size_t off;
	uint32_t n;

	if (len < 16)
		return 0;
	off = snap_get32(b + 8) == 1 ? 48 : 72;
	n = snap_get32(b + 12);
	for (uint32_t i = 0; i < n && i < 64; i++) {
		uint64_t fl;

		if (off + 8 > len)
			return 0;
		fl = snap_get64(b + off);
		off += 8;
		if (fl < 8 || fl > len - off)
			return 0;
		snap_put64(b + off + fl - 8, XXH3_64bits(b + off, fl - 8));
		off += fl;
	}
	if (off + 8 > len)
		return 0;
	snap_put64(b + off, XXH3_64bits(b, off));
	return off + 8;
}

#endif
