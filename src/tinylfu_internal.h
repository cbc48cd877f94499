/*
 * tinylfu_internal.h - TinyLFU's switches for admit_lru's adaptive policy
 * (src/lru.c), which may run the real cache's sketch in either of the two
 * modes its miniature simulation compares.
 */
#ifndef ADMIT_TINYLFU_INTERNAL_H
#define ADMIT_TINYLFU_INTERNAL_H

#include <stdbool.h>

#include <admit/tinylfu.h>

/*
 * Steady mode: counts are never halved (the sample still counts records,
 * so the first aging after steady mode ends falls where it would have) and
 * no candidate is admitted by chance.  Frequencies then rank keys over the
 * whole run, which is what a loop larger than the cache needs: every key is
 * as frequent as every other, ties keep the victim, and the cache holds one
 * fixed part of the loop, as LIRS does, instead of churning.  Safe with
 * concurrent calls; records and contests see the change soon, not at once.
 */
void admit_tinylfu_set_steady(struct admit_tinylfu *t, bool steady);

#endif /* ADMIT_TINYLFU_INTERNAL_H */
