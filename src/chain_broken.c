/*
 * chain_broken.c - the chain's planted defects, for stress_chain_broken
 * (stress/README.md): src/chain.c compiled once more, its calls into the
 * filters it chains redirected to wrappers that get them wrong on purpose
 * when the harness picks a defect (--defect):
 *
 *   lookup  a filter less than a quarter full answers "absent" to every
 *           lookup (the newest, just grown, most of the time): a key the
 *           chain holds goes missing;
 *   count   a filter counts one copy fewer than it holds;
 *   size    a filter reports one item fewer than it holds, so
 *           admit_chain_info() undercounts (and a filter holding one
 *           item looks empty to admit_chain_trim());
 *   unique  add_unique adds without asking the newest filter first, so
 *           threads racing on one key each add a copy.
 *
 * Only the build of stress_chain_broken compiles this file; it defines
 * every admit_chain_* function, so that build never takes src/chain.c's
 * object from libadmit_core, and libadmit never contains these.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <admit/chain.h>
#include <admit/cuckoo.h>

#include "alloc.h"
#include "cuckoo_internal.h"
#include "hash.h"
#include "snapfile.h"

/* 0: none; 1 lookup, 2 count, 3 size, 4 unique.  Set by the harness before it
 * starts its threads (seq_cst: a test switch, read once a call). */
_Atomic int chain_broken_defect;

static bool
broken_contains(const struct admit_cuckoo *f, const void *key, size_t len)
{
	if (atomic_load(&chain_broken_defect) == 1 &&
	    admit_cuckoo_size(f) < admit_cuckoo_slots(f) / 4)
		return false;
	return admit_cuckoo_contains(f, key, len);
}

static unsigned
broken_count(const struct admit_cuckoo *f, const void *key, size_t len)
{
	unsigned n = admit_cuckoo_count(f, key, len);

	return atomic_load(&chain_broken_defect) == 2 && n > 0 ? n - 1 : n;
}

static uint64_t
broken_size(const struct admit_cuckoo *f)
{
	uint64_t n = admit_cuckoo_size(f);

	return atomic_load(&chain_broken_defect) == 3 && n > 0 ? n - 1 : n;
}

static enum admit_status
broken_insert_unique(struct admit_cuckoo *f, const void *key, size_t len)
{
	if (atomic_load(&chain_broken_defect) == 4)
		return admit_cuckoo_insert(f, key, len);
	return admit_cuckoo_insert_unique(f, key, len);
}

#define admit_cuckoo_contains broken_contains
#define admit_cuckoo_insert_unique broken_insert_unique
#define admit_cuckoo_count broken_count
#define admit_cuckoo_size broken_size
#include "chain.c"
