/* Which key deserves a cache slot?  admit_tinylfu decides; admit_cbf counts. */
#include <stdio.h>
#include <string.h>

#include <admit/admit.h>

int
main(void)
{
	const char *requests[] = { "home", "cart", "home", "faq", "cart", "home" };
	struct admit_tinylfu *lfu = NULL;
	struct admit_cbf *seen = NULL;
	enum admit_status s;

	/* Frequencies for a cache of 1000 entries; seed 0 = random, so nobody
	 * can aim colliding keys at it. */
	s = admit_tinylfu_new(1000, 0, &lfu);
	if (s == ADMIT_OK) /* 10,000 keys at about 1 % false positives */
		s = admit_cbf_new(10000, 0.01, 0, &seen);
	if (s != ADMIT_OK) {
		fprintf(stderr, "admit: %s\n", admit_strerror(s));
		admit_tinylfu_free(lfu);
		return 1;
	}
	for (size_t i = 0; i < sizeof(requests) / sizeof(requests[0]); i++) {
		admit_tinylfu_record(lfu, requests[i], strlen(requests[i]));
		admit_cbf_add(seen, requests[i], strlen(requests[i]));
	}
	printf("seen: home %u, cart %u, faq %u, login %u\n",
	       admit_cbf_estimate(seen, "home", 4), admit_cbf_estimate(seen, "cart", 4),
	       admit_cbf_estimate(seen, "faq", 3), admit_cbf_estimate(seen, "login", 5));
	/* The cache is full and its victim is "faq": may "cart" take its place? */
	printf("cart evicts faq: %s\n",
	       admit_tinylfu_admit(lfu, "cart", 4, "faq", 3) ? "yes" : "no");
	printf("faq evicts home: %s\n",
	       admit_tinylfu_admit(lfu, "faq", 3, "home", 4) ? "yes" : "no");
	admit_cbf_free(seen);
	admit_tinylfu_free(lfu);
	return 0;
}
