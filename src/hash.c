#include "hash.h"

#include <sys/random.h>
#include <time.h>

uint64_t
admit_random_seed(void)
{
	uint64_t s = 0;

	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
		    (uint64_t)(uintptr_t)&s;
		s = XXH3_64bits(&s, sizeof(s));
	}
	return s ? s : ADMIT_GOLDEN64;
}
