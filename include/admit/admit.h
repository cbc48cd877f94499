/*
 * admit/admit.h - the whole public API of admit in one include.
 */
#ifndef ADMIT_ADMIT_H
#define ADMIT_ADMIT_H

#include <admit/status.h>
#include <admit/allocator.h>
#include <admit/cuckoo.h>
#include <admit/chain.h>
#include <admit/cbf.h>
#include <admit/tinylfu.h>
#include <admit/lru.h>

#endif /* ADMIT_ADMIT_H */
