/*
 * loader.h - admit_lru_get_or_load's table of the loads under way
 * (loader.c): one load per key at a time, its waiters sleeping on the
 * load's stripe.
 */
#ifndef ADMIT_CACHE_LOADER_H
#define ADMIT_CACHE_LOADER_H

#include <stdint.h>

#include <admit/status.h>

struct admit_loads;

/* A new empty table in *out; ADMIT_NOMEM. */
enum admit_status admit_loads_new(struct admit_loads **out);

/* With no load under way: frees t (NULL: nothing). */
void admit_loads_free(struct admit_loads *t);

/* The loads' counters: successes, failures, their total nanoseconds. */
void admit_loads_stats(struct admit_loads *t, uint64_t *ok, uint64_t *fail,
                       uint64_t *ns);

#endif /* ADMIT_CACHE_LOADER_H */
