/*
 * trace.h - reading cache traces, and Belady's OPT, for programs/cache_sim/cache_sim.
 *
 * Private to the examples and their tests: not part of libadmit.
 */
#ifndef ADMIT_EXAMPLES_TRACE_H
#define ADMIT_EXAMPLES_TRACE_H

#include <stddef.h>
#include <stdint.h>

enum trace_format { TRACE_AUTO, TRACE_TEXT, TRACE_ARC, TRACE_LIRS, TRACE_I32BE,
                    TRACE_I64BE,
                    TRACE_UNKNOWN = -1 /* trace_format_parse()'s "no such
                                          format"; makes the enum signed */ };

/*
 * Reads the whole trace at path into a malloc'd array of 64-bit keys, one per
 * request; the caller frees *keys.  gzip and xz files are decompressed
 * directly (zlib, liblzma), anything else is read as is.
 *   TEXT   one key per line, hashed with XXH3 of the line's bytes (without
 *          the line end; empty lines skipped);
 *   ARC    "start_block block_count ignored request_no": block_count requests
 *          for keys start_block .. start_block + block_count - 1;
 *   LIRS   one integer per line; "*" and empty lines skipped;
 *   I32BE, I64BE  big-endian binary integers.
 * TRACE_AUTO looks at the content (binary or text; on text, how many integer
 * fields the first line has; on binary whose length fits both widths, which
 * width repeats keys as a trace does) and the name (".lis" is ARC, "i32"
 * binary is 32-bit).  Returns 0, or -1 with a message in errbuf (a missing or corrupt
 * file, a malformed line, a size not a multiple of the record, no memory);
 * *keys and *n are set only on success.
 */
int trace_load(const char *path, enum trace_format fmt, uint64_t **keys,
               size_t *n, char *errbuf, size_t errlen);

/* "auto", "text", "arc", "lirs", "i32be", "i64be"; TRACE_UNKNOWN (-1) if
 * unknown or NULL. */
enum trace_format trace_format_parse(const char *name);

/* The name trace_format_parse() accepts for fmt. */
const char *trace_format_name(enum trace_format fmt);

/*
 * Belady's OPT hit count for a cache of `size` entries: on a miss, of the
 * resident keys and the requested one, the key next used farthest in the
 * future is left out, so a key that is never used again is not cached at
 * all (bypass).  O(n log n) time; at most about 72 bytes per request of
 * memory at the peak.
 * Returns UINT64_MAX if memory runs out; 0 if n or size is 0.
 */
uint64_t trace_opt_hits(const uint64_t *keys, size_t n, size_t size);

/* qsort()'s comparison of two uint64_t, ascending. */
int trace_cmp_u64(const void *a, const void *b);

#endif /* ADMIT_EXAMPLES_TRACE_H */
