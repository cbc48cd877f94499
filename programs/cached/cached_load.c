/*
 * cached_load - a read-through load for memcached-protocol servers: each
 * client thread draws keys from a Zipf distribution, sends "get", and on a
 * miss "set"s the key, as an application cache in front of a database does.
 * Prints one line: ops/s (gets + sets), hit ratio, counts, then all_requests
 * (gets and sets, warm-up included) and load_cpu_s (this process's user +
 * system CPU over the whole run), from which bench_cached.sh derives CPU
 * per request.
 *
 *   cached_load [--host 127.0.0.1] [--port N] [--threads N] [--keys N]
 *               [--requests N] [--warmup N] [--zipf S] [--value-size N]
 *               [--max-seconds N] [--seed N] [--ttl-fraction F --ttl S]
 *
 * --requests and --warmup are gets per thread; warm-up gets are neither
 * counted nor timed; ops/s sums each thread's own rate.  --max-seconds bounds the whole run.  Only loopback hosts are
 * accepted.
 *
 * --ttl-fraction F with --ttl S gives that fraction of the keys an exptime
 * of S seconds on every set (the rest 0, never expiring).  Which keys is
 * decided by a hash of the key, not by the random stream, so every run and
 * every server sees the same keys expire: a key drawn again after its TTL
 * misses and is set again, as a read-through cache of short-lived data does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "zipf.h"

struct options {
	const char *host;
	unsigned port, threads, value_size, max_seconds;
	uint64_t keys, requests, warmup, seed;
	double zipf;
	double ttl_fraction;  /* of keys whose sets carry exptime ttl */
	unsigned ttl;         /* seconds */
};

struct client {
	const struct options *o;
	const double *cdf;
	unsigned id;
	uint64_t rng;
	int fd;
	char *buf;
	size_t cap, have, off;
	uint64_t gets, hits, sets, ttl_sets;
	uint64_t all;    /* gets and sets sent, warm-up included */
	double seconds;  /* of the counted requests */
	bool failed;
};

static double deadline;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t
splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * Exptime for key: ttl for a fixed ttl_fraction of the keys, chosen by a
 * hash so it does not depend on the seed or the order of requests.
 */
static unsigned
key_exptime(const struct options *o, uint64_t key)
{
	uint64_t h = key;

	if (o->ttl_fraction <= 0 || !o->ttl)
		return 0;
	return (double)(splitmix(&h) >> 11) * 0x1p-53 < o->ttl_fraction ?
	       o->ttl : 0;
}

/* Rank r (0 = most popular) drawn by inverting the CDF. */
static uint64_t
draw_rank(struct client *c)
{
	return zipf_rank(c->cdf, c->o->keys,
	                 (double)(splitmix(&c->rng) >> 11) * 0x1p-53);
}

static bool
send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* Makes sure n bytes are buffered from off; false on EOF or error. */
static bool
fill(struct client *c, size_t n)
{
	if (c->off && c->have - c->off < n) {
		memmove(c->buf, c->buf + c->off, c->have - c->off);
		c->have -= c->off;
		c->off = 0;
	}
	while (c->have - c->off < n) {
		ssize_t r = recv(c->fd, c->buf + c->have, c->cap - c->have, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		c->have += (size_t)r;
	}
	return true;
}

/* Reads one "\r\n"-terminated line; returns its length or -1. */
static long
read_line(struct client *c, const char **line)
{
	for (size_t scanned = 0;;) {
		char *nl = memchr(c->buf + c->off + scanned, '\n',
		                  c->have - c->off - scanned);

		if (nl) {
			*line = c->buf + c->off;
			return nl - (c->buf + c->off) + 1;
		}
		scanned = c->have - c->off;
		if (!fill(c, scanned + 1))
			return -1;
	}
}

/* One get; on a miss a set.  Returns false on a protocol or I/O error. */
static bool
request(struct client *c, bool count)
{
	char cmd[128], *value = c->buf + c->cap;  /* value area after buf */
	uint64_t rank = draw_rank(c);
	/* An odd multiplier is a bijection: distinct ranks, distinct keys. */
	uint64_t key = rank * 0x9e3779b97f4a7c15ull;
	unsigned exptime;
	const char *line;
	long n;
	int klen;
	bool hit;

	klen = snprintf(cmd, sizeof(cmd), "get key:%" PRIu64 "\r\n", key);
	if (!send_all(c->fd, cmd, (size_t)klen))
		return false;
	c->all++;
	n = read_line(c, &line);
	if (n < 0)
		return false;
	if (n >= 5 && !memcmp(line, "VALUE", 5)) {
		unsigned long long len = 0;

		if (sscanf(line, "VALUE %*s %*u %llu", &len) != 1 ||
		    len > c->o->value_size)
			return false;
		c->off += (size_t)n;
		if (!fill(c, (size_t)len + 2 + 5))
			return false;
		if (memcmp(c->buf + c->off + len + 2, "END\r\n", 5))
			return false;
		c->off += (size_t)len + 2 + 5;
		hit = true;
	} else if (n == 5 && !memcmp(line, "END\r\n", 5)) {
		c->off += 5;
		hit = false;
	} else {
		return false;
	}
	if (count) {
		c->gets++;
		c->hits += hit;
	}
	if (hit)
		return true;
	exptime = key_exptime(c->o, key);
	klen = snprintf(cmd, sizeof(cmd), "set key:%" PRIu64 " 0 %u %u\r\n", key,
	                exptime, c->o->value_size);
	memcpy(value, cmd, (size_t)klen);
	memset(value + klen, 'v', c->o->value_size);
	memcpy(value + klen + c->o->value_size, "\r\n", 2);
	if (!send_all(c->fd, value, (size_t)klen + c->o->value_size + 2))
		return false;
	c->all++;
	n = read_line(c, &line);
	if (n < 0)
		return false;
	/* STORED, or a server's refusal: both count as a set sent. */
	c->off += (size_t)n;
	if (count) {
		c->sets++;
		c->ttl_sets += exptime != 0;
	}
	return true;
}

static void *
client_main(void *arg)
{
	struct client *c = arg;
	const struct options *o = c->o;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int one = 1;

	sa.sin_port = htons((uint16_t)o->port);
	inet_pton(AF_INET, o->host, &sa.sin_addr);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("cached_load: connect");
		c->failed = true;
		return NULL;
	}
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	double start = now_s();

	for (uint64_t i = 0; i < o->warmup + o->requests; i++) {
		if (i == o->warmup)
			start = now_s();
		if ((i & 1023) == 0 && now_s() > deadline)
			break;
		if (!request(c, i >= o->warmup)) {
			fprintf(stderr, "cached_load: client %u: bad reply or I/O "
			        "error after %" PRIu64 " requests\n", c->id, i);
			c->failed = true;
			break;
		}
	}
	c->seconds = now_s() - start;
	close(c->fd);
	return NULL;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: cached_load [--host 127.0.0.1|::1] [--port N] [--threads N] "
	        "[--keys N]\n  [--requests N] [--warmup N] [--zipf S] "
	        "[--value-size N] [--max-seconds N] [--seed N]\n"
	        "  [--ttl-fraction F --ttl SECONDS]\n");
}

/* Reads the options into *o; 0, or the exit status (usage given). */
static int
parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "host", required_argument, NULL, 'H' },
		{ "port", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 't' },
		{ "keys", required_argument, NULL, 'k' },
		{ "requests", required_argument, NULL, 'r' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "zipf", required_argument, NULL, 'z' },
		{ "value-size", required_argument, NULL, 'v' },
		{ "max-seconds", required_argument, NULL, 'T' },
		{ "seed", required_argument, NULL, 's' },
		{ "ttl-fraction", required_argument, NULL, 'F' },
		{ "ttl", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'H': o->host = optarg; break;
		case 'p': o->port = (unsigned)strtoul(optarg, NULL, 10); break;
		case 't': o->threads = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'k': o->keys = strtoull(optarg, NULL, 10); break;
		case 'r': o->requests = strtoull(optarg, NULL, 10); break;
		case 'w': o->warmup = strtoull(optarg, NULL, 10); break;
		case 'z': o->zipf = strtod(optarg, NULL); break;
		case 'v': o->value_size = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'T': o->max_seconds = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': o->seed = strtoull(optarg, NULL, 10); break;
		case 'F': o->ttl_fraction = strtod(optarg, NULL); break;
		case 'L': o->ttl = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return 2;
		}
	}
	/* The network rule: loopback only (IPv4 here). */
	if (strcmp(o->host, "127.0.0.1") != 0 || !o->port || o->port > 65535 ||
	    !o->threads || o->threads > 64 || o->keys < 2 || o->keys > 100000000 ||
	    !o->value_size || o->value_size > (1u << 20) || o->zipf <= 0 ||
	    !o->max_seconds || o->max_seconds > 3600 ||
	    !(o->ttl_fraction >= 0 && o->ttl_fraction <= 1) ||
	    o->ttl > 30 * 24 * 3600 || (o->ttl_fraction > 0 && !o->ttl)) {
		usage(stderr);
		fprintf(stderr, "cached_load: bad option (host must be 127.0.0.1)\n");
		return 2;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct options o = { .host = "127.0.0.1", .port = 11311, .threads = 4,
	                     .keys = 1000000, .requests = 200000,
	                     .warmup = 100000, .zipf = 0.99, .value_size = 100,
	                     .max_seconds = 120, .seed = 1 };
	struct client *cl;
	double *cdf, t0, el, ops = 0;
	uint64_t gets = 0, hits = 0, sets = 0, ttl_sets = 0, all = 0;
	struct rusage ru;
	int rc = 0;

	if ((rc = parse_args(argc, argv, &o)) != 0)
		return rc;
	cdf = zipf_table(o.keys, o.zipf);
	cl = calloc(o.threads, sizeof(*cl));
	if (!cdf || !cl)
		return 1;
	t0 = now_s();
	deadline = t0 + o.max_seconds;
	for (unsigned i = 0; i < o.threads; i++) {
		cl[i].o = &o;
		cl[i].cdf = cdf;
		cl[i].id = i;
		cl[i].rng = o.seed * 1000003 + i;
		cl[i].cap = 2 * o.value_size + 4096;
		/* Receive buffer, then room for a set request after it. */
		cl[i].buf = malloc(cl[i].cap + o.value_size + 128);
		if (!cl[i].buf)
			return 1;
	}
	{
		pthread_t tid[64];

		for (unsigned i = 0; i < o.threads; i++)
			pthread_create(&tid[i], NULL, client_main, &cl[i]);
		for (unsigned i = 0; i < o.threads; i++)
			pthread_join(tid[i], NULL);
	}
	el = now_s() - t0;
	for (unsigned i = 0; i < o.threads; i++) {
		gets += cl[i].gets;
		hits += cl[i].hits;
		sets += cl[i].sets;
		ttl_sets += cl[i].ttl_sets;
		all += cl[i].all;
		rc |= cl[i].failed;
		if (cl[i].seconds > 0)
			ops += (double)(cl[i].gets + cl[i].sets) / cl[i].seconds;
		free(cl[i].buf);
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("ops/s %.0f hit_ratio %.4f gets %" PRIu64 " hits %" PRIu64
	       " sets %" PRIu64 " ttl_sets %" PRIu64 " seconds %.2f"
	       " all_requests %" PRIu64 " load_cpu_s %.3f%s\n",
	       ops, gets ? (double)hits / (double)gets : 0.0,
	       gets, hits, sets, ttl_sets, el, all,
	       (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6,
	       now_s() > deadline ? " (time limit hit)" : "");
	free(cdf);
	free(cl);
	return rc;
}
