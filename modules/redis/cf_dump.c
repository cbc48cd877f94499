/*
 * cf_dump.c - telling a whole filter dump from part of one (cf_dump.h).
 */
#include <string.h>

#include <admit/chain.h>

#include "cf_dump.h"
#include "hash.h"
#include "snapfile.h"

#define TRAILER_MAGIC "ADMITDEL"

void
cf_trailer_put(unsigned char t[CF_TRAILER_LEN], uint64_t deleted)
{
	memcpy(t, TRAILER_MAGIC, 8);
	snap_put64(t + 8, deleted);
	snap_put64(t + 16, admit_hash(t, 16, 0));
}

/* The chain dump's whole length, once enough of it is here to tell (the
 * header and every filter's length word); 0 before that, UINT64_MAX if it
 * cannot be a dump.  The layout is the one src/chain.c documents: a
 * version 1 header is 48 bytes, a version 2 one 72, each holding the
 * filter count at 12; each filter is a u64 length and that many bytes;
 * a u64 checksum ends the dump. */
static uint64_t
dump_total(const unsigned char *b, size_t have)
{
	uint64_t off, n;

	if (memcmp(b, "ADMITCHN", have < 8 ? have : 8) != 0)
		return UINT64_MAX;
	if (have < 12)
		return 0;
	switch (snap_get32(b + 8)) {
	case 1:
		off = 48;
		break;
	case 2:
		off = 72;
		break;
	default:
		return UINT64_MAX;
	}
	if (have < off)
		return 0;
	n = snap_get32(b + 12);
	if (n == 0 || n > ADMIT_CHAIN_MAX_FILTERS)
		return UINT64_MAX;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t fl;

		if (off + 8 > have)
			return 0;
		fl = snap_get64(b + off);
		if (fl > UINT64_MAX / 2 - off)
			return UINT64_MAX;
		off += 8 + fl;
	}
	return off + 8;
}

enum cf_dump_state
cf_dump_check(const unsigned char *b, size_t have, bool last,
              size_t *chain_len, uint64_t *deleted)
{
	uint64_t total = dump_total(b, have);
	const unsigned char *t;

	if (total == UINT64_MAX || (total != 0 && have > total + CF_TRAILER_LEN))
		return CF_DUMP_BAD;
	if (total == 0 || (have < total + CF_TRAILER_LEN &&
	                   !(have == total && last)))
		return last ? CF_DUMP_BAD : CF_DUMP_MORE;
	*chain_len = (size_t)total;
	*deleted = 0;
	if (have == total)
		return CF_DUMP_WHOLE;
	t = b + total;
	if (memcmp(t, TRAILER_MAGIC, 8) != 0 ||
	    snap_get64(t + 16) != admit_hash(t, 16, 0))
		return CF_DUMP_BAD;
	*deleted = snap_get64(t + 8);
	return CF_DUMP_WHOLE;
}
