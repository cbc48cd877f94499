/*
 * cf_dump.h - the bytes a filter travels as in SCANDUMP chunks, AOF
 * rewrites and LOADCHUNK: the chain's dump (admit_chain_dump), then a
 * 24-byte trailer: "ADMITDEL", the items-deleted count, which the chain
 * does not keep, and admit_hash() of those 16 bytes (u64s, little-endian).
 * A dump without the trailer (older modules) loads with 0 deleted.  The
 * RDB saves the count apart and the chain's dump alone.
 *
 * No Redis call here: what a load accepts is decided by these functions
 * alone, so fuzz/fuzz_redis_dump.c tests them without a server.
 */
#ifndef ADMIT_REDIS_CF_DUMP_H
#define ADMIT_REDIS_CF_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CF_TRAILER_LEN 24

/* Writes the trailer for deleted at t. */
void cf_trailer_put(unsigned char t[CF_TRAILER_LEN], uint64_t deleted);

/* What the first have bytes of a load are. */
enum cf_dump_state {
	CF_DUMP_MORE,  /* a dump's beginning: more is to come */
	CF_DUMP_WHOLE, /* a whole dump: *chain_len, *deleted say what is in it */
	CF_DUMP_BAD,   /* cannot be (the beginning of) a dump */
};

/*
 * cf_dump_check - classify the have bytes at b (have >= 1) gathered so
 * far; last: nothing follows them (the latest chunk was short).  A whole
 * dump is the chain's bytes (their length from its header and each
 * filter's length word) with or without a trailer, whose magic and hash
 * must then match; *chain_len is the chain's part, *deleted the count (0
 * without a trailer).  The chain's own checks (checksums, parameters,
 * every slot) are admit_chain_restore()'s.
 */
enum cf_dump_state cf_dump_check(const unsigned char *b, size_t have,
                                 bool last, size_t *chain_len,
                                 uint64_t *deleted);

#endif
