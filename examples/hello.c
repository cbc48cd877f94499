/* Seen-before check for a stream of event ids: the smallest admit program. */
#include <stdio.h>
#include <string.h>

#include <admit/admit.h>

int
main(void)
{
	struct admit_cuckoo_config cfg = { .capacity = 1000000 };
	const char *events[] = { "login:alice", "login:bob", "login:alice" };
	struct admit_cuckoo *seen;
	enum admit_status st;

	st = admit_cuckoo_new(&cfg, &seen);
	if (st != ADMIT_OK) {
		fprintf(stderr, "admit_cuckoo_new: %s\n", admit_strerror(st));
		return 1;
	}
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		/* Atomic test-and-add: safe to call from many threads at once. */
		st = admit_cuckoo_insert_unique(seen, events[i], strlen(events[i]));
		printf("%-12s %s\n", events[i], st == ADMIT_EXISTS ? "duplicate" : "new");
	}
	printf("%llu items in %zu bytes\n",
	       (unsigned long long)admit_cuckoo_size(seen), admit_cuckoo_memory(seen));
	admit_cuckoo_free(seen);
	return 0;
}
