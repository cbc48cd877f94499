/*
 * stats.c - "stats" and its arguments: the workers' counters summed, the
 * store's since the last "stats reset", and the settings.
 */
#include "config.h"  /* first: it defines _GNU_SOURCE */

#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "server.h"

/* The store's counters since the last "stats reset". */
static void
store_stats(struct server *srv, struct cached_store_stats *cs)
{
	struct admit_lru_stats *l = &cs->lru, *b = &srv->reset_base;

	cached_store_stats(srv->store, cs);
	pthread_mutex_lock(&srv->reset_mu);
	l->hits -= b->hits;
	l->misses -= b->misses;
	l->admitted -= b->admitted;
	l->rejected -= b->rejected;
	l->evicted -= b->evicted;
	l->expired -= b->expired;
	pthread_mutex_unlock(&srv->reset_mu);
}

/* "stats reset": every counter starts again from 0 (the gauges, such as
 * curr_items, stay). */
static void
stats_reset(struct server *srv)
{
	struct cached_store_stats cs;

	for (unsigned t = 0; t < srv->opt.threads; t++) {
		atomic_uint_fast64_t *a = (atomic_uint_fast64_t *)&srv->workers[t].ctr;

		/* relaxed: see struct counters */
		for (size_t i = 0; i < NCOUNTERS; i++)
			atomic_store_explicit(&a[i], 0, memory_order_relaxed);
	}
	atomic_store(&srv->rejected_conns, 0);
	cached_store_stats(srv->store, &cs);
	pthread_mutex_lock(&srv->reset_mu);
	srv->reset_base = cs.lru;
	pthread_mutex_unlock(&srv->reset_mu);
}

/*
 * "stats detail on|off|dump", answered as memcached answers them.
 * admit-cached keeps no statistics by key prefix, so on and off change
 * nothing and a dump lists no prefix.  words: what follows "detail".
 */
static void
stats_detail(struct conn *c, const char *words, size_t n)
{
	size_t len;

	while (n && *words == ' ') {
		words++;
		n--;
	}
	for (len = 0; len < n && words[len] != ' '; len++)
		;
	if ((len == 2 && !memcmp(words, "on", 2)) ||
	    (len == 3 && !memcmp(words, "off", 3)))
		out_str(c, "OK\r\n");
	else if (len == 4 && !memcmp(words, "dump", 4))
		out_str(c, "END\r\n");
	else
		out_str(c, "CLIENT_ERROR usage: stats detail on|off|dump\r\n");
}

/* "stats <arg>": what of memcached's applies to admit-cached. */
static void
stats_arg(struct conn *c, const char *arg, size_t n)
{
	struct server *srv = c->w->srv;
	const struct options *o = &srv->opt;
	struct cached_store_stats cs;

#define IS(s) (n == sizeof(s) - 1 && !memcmp(arg, s, n))
	if (IS("reset")) {
		stats_reset(srv);
		out_str(c, "RESET\r\n");
	} else if (IS("settings")) {
		out_fmt(c, "STAT maxbytes %" PRIu64 "\r\n", o->memory_mb << 20);
		out_fmt(c, "STAT maxconns %u\r\n", o->max_conns);
		out_fmt(c, "STAT tcpport %s\r\n", o->port);
		out_str(c, "STAT udpport 0\r\n");
		out_fmt(c, "STAT inter %s\r\n", o->listen);
		out_str(c, "STAT domain_socket NULL\r\n");
		out_fmt(c, "STAT verbosity %u\r\n", atomic_load(&srv->verbosity));
		out_str(c, "STAT evictions on\r\n");
		out_fmt(c, "STAT num_threads %u\r\n", o->threads);
		out_str(c, "STAT cas_enabled yes\r\n");
		out_str(c, "STAT flush_enabled yes\r\n");
		out_fmt(c, "STAT item_size_max %zu\r\n", o->max_item);
		out_fmt(c, "STAT idle_timeout %u\r\n", o->idle_timeout);
		out_fmt(c, "STAT max_line %zu\r\n", o->max_line);
		out_fmt(c, "STAT conn_memory_limit %zu\r\n", srv->pool_max);
		out_fmt(c, "STAT admission %s\r\n", o->admission ? "adaptive" : "off");
		out_str(c, "END\r\n");
	} else if (IS("items")) {
		/* One class: admit_lru does not sort items by size. */
		store_stats(srv, &cs);
		if (cs.lru.entries) {
			out_fmt(c, "STAT items:1:number %" PRIu64 "\r\n", cs.lru.entries);
			out_fmt(c, "STAT items:1:evicted %" PRIu64 "\r\n", cs.lru.evicted);
			out_fmt(c, "STAT items:1:reclaimed %" PRIu64 "\r\n", cs.lru.expired);
		}
		out_str(c, "END\r\n");
	} else if (IS("slabs")) {
		store_stats(srv, &cs);
		out_fmt(c, "STAT active_slabs %d\r\n", cs.lru.entries ? 1 : 0);
		out_fmt(c, "STAT total_malloced %" PRIu64 "\r\n", cs.lru.bytes);
		out_str(c, "END\r\n");
	} else if (IS("sizes")) {
		out_str(c, "STAT sizes_status disabled\r\nEND\r\n");
	} else {
		out_str(c, "ERROR\r\n");
	}
#undef IS
}

void
do_stats(struct conn *c, const struct cached_req *req)
{
	struct server *srv = c->w->srv;
	uint64_t sum[NCOUNTERS] = { 0 };
	struct cached_store_stats cs;
	struct admit_lru_stats ls;
	time_t now = time(NULL);
	double gets;

	if (req->rest_len) {
		/* Its first word: memcached ignores what follows, but for
		 * detail's own word. */
		const char *sp = memchr(req->rest, ' ', req->rest_len);
		size_t n = sp ? (size_t)(sp - req->rest) : req->rest_len;

		if (n == 6 && !memcmp(req->rest, "detail", 6))
			stats_detail(c, req->rest + n, req->rest_len - n);
		else
			stats_arg(c, req->rest, n);
		return;
	}
	for (unsigned t = 0; t < srv->opt.threads; t++) {
		atomic_uint_fast64_t *a = (atomic_uint_fast64_t *)&srv->workers[t].ctr;

		/* relaxed: struct counters says why. */
		for (size_t i = 0; i < NCOUNTERS; i++)
			sum[i] += atomic_load_explicit(&a[i], memory_order_relaxed);
	}
#define S(field) sum[offsetof(struct counters, field) / sizeof(atomic_uint_fast64_t)]
	store_stats(srv, &cs);
	ls = cs.lru;
	gets = (double)(S(get_hits) + S(get_misses));
	out_fmt(c, "STAT pid %ld\r\n", (long)getpid());
	out_fmt(c, "STAT uptime %ld\r\n", (long)(now - srv->started));
	out_fmt(c, "STAT time %ld\r\n", (long)now);
	out_fmt(c, "STAT version %s\r\n", PROTOCOL_VERSION);
	out_fmt(c, "STAT admit_version %s\r\n", PACKAGE_VERSION);
	out_fmt(c, "STAT pointer_size %zu\r\n", 8 * sizeof(void *));
	out_fmt(c, "STAT curr_connections %u\r\n", atomic_load(&srv->curr_conns));
	out_fmt(c, "STAT total_connections %" PRIu64 "\r\n", S(total_conns));
	out_fmt(c, "STAT rejected_connections %" PRIu64 "\r\n",
	        (uint64_t)atomic_load(&srv->rejected_conns));
	out_fmt(c, "STAT connections_closed_by_limits %" PRIu64 "\r\n", S(closed_limits));
	out_fmt(c, "STAT threads %u\r\n", srv->opt.threads);
#define C(name) out_fmt(c, "STAT " #name " %" PRIu64 "\r\n", S(name))
	C(cmd_get); C(cmd_set); C(cmd_flush); C(cmd_touch);
	C(get_hits); C(get_misses); C(get_expired); C(get_flushed);
	C(delete_misses); C(delete_hits); C(incr_misses); C(incr_hits);
	C(decr_misses); C(decr_hits); C(cas_misses); C(cas_hits); C(cas_badval);
	C(touch_hits); C(touch_misses);
#undef C
	out_fmt(c, "STAT limit_maxbytes %" PRIu64 "\r\n", srv->opt.memory_mb << 20);
	out_fmt(c, "STAT item_size_max %zu\r\n", srv->opt.max_item);
	out_fmt(c, "STAT curr_items %" PRIu64 "\r\n", ls.entries);
	out_fmt(c, "STAT total_items %" PRIu64 "\r\n", S(total_items));
	out_fmt(c, "STAT bytes %" PRIu64 "\r\n", ls.bytes);
	out_fmt(c, "STAT evictions %" PRIu64 "\r\n", ls.evicted);
	out_fmt(c, "STAT reclaimed %" PRIu64 "\r\n", ls.expired);
	/* relaxed: see budget() */
	out_fmt(c, "STAT conn_memory_used %zu\r\n",
	        atomic_load_explicit(&srv->pool_used, memory_order_relaxed));
	out_fmt(c, "STAT conn_memory_limit %zu\r\n", srv->pool_max);
	out_fmt(c, "STAT admission %s\r\n", srv->opt.admission ? "adaptive" : "off");
	out_fmt(c, "STAT admission_admitted %" PRIu64 "\r\n", ls.admitted);
	out_fmt(c, "STAT admission_rejected %" PRIu64 "\r\n", ls.rejected);
	out_fmt(c, "STAT admission_window %" PRIu64 "\r\n", ls.window);
	out_fmt(c, "STAT admission_filter_load %.4f\r\n", ls.filter_slots ?
	        (double)ls.filter_entries / (double)ls.filter_slots : 0.0);
	out_fmt(c, "STAT hit_ratio %.4f\r\n", gets > 0 ? (double)S(get_hits) / gets : 0.0);
	out_str(c, "END\r\n");
#undef S
}
