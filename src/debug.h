/*
 * debug.h - internal consistency checks, on with ./configure --enable-debug.
 *
 * A check is always compiled, so it cannot rot, and the optimiser drops it
 * when ADMIT_DEBUG is 0.  It does not go through assert(): NDEBUG in a
 * user's CFLAGS must not turn a debug build's checks off.
 */
#ifndef ADMIT_DEBUG_H
#define ADMIT_DEBUG_H

#include <stdio.h>
#include <stdlib.h>

#ifndef ADMIT_DEBUG
#define ADMIT_DEBUG 0
#endif

#define debug_check(cond)                                                 \
	do {                                                              \
		if (ADMIT_DEBUG && !(cond)) {                             \
			fprintf(stderr, "admit: %s:%d: invariant '%s' broken\n", \
			        __FILE__, __LINE__, #cond);               \
			abort();                                          \
		}                                                         \
	} while (0)

#endif /* ADMIT_DEBUG_H */
