/* A read-through cache in front of a slow lookup, with admit_lru. */
#include <stdio.h>
#include <string.h>

#include <admit/admit.h>

/* Stands in for a database or a remote call. */
static size_t
fetch_profile(const char *user, char *out, size_t size)
{
	return (size_t)snprintf(out, size, "profile of %s", user);
}

int
main(void)
{
	struct admit_lru_config cfg = { .capacity = 10000, .capacity_bytes = 1 << 20 };
	const char *users[] = { "alice", "bob", "alice", "alice", "carol", "bob" };
	struct admit_lru_stats st;
	struct admit_lru *cache;
	enum admit_status s;

	s = admit_lru_new(&cfg, &cache); /* adaptive W-TinyLFU by default */
	if (s != ADMIT_OK) {
		fprintf(stderr, "admit_lru_new: %s\n", admit_strerror(s));
		return 1;
	}
	for (size_t i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
		char value[64];
		size_t len;

		s = admit_lru_get(cache, users[i], strlen(users[i]), value,
		                  sizeof(value), &len);
		if (s == ADMIT_NOTFOUND) {
			len = fetch_profile(users[i], value, sizeof(value));
			/* The cache may turn a cold key away (ADMIT_REJECTED). */
			admit_lru_set(cache, users[i], strlen(users[i]), value, len);
		}
		printf("%-6s %-5s %.*s\n", users[i], s == ADMIT_OK ? "hit" : "miss",
		       (int)len, value);
	}
	admit_lru_stats(cache, &st);
	printf("%llu hits, %llu misses, %llu entries\n", (unsigned long long)st.hits,
	       (unsigned long long)st.misses, (unsigned long long)st.entries);
	admit_lru_free(cache);
	return 0;
}
