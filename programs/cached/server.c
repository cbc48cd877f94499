/*
 * admit-cached - a memcached text-protocol cache server whose storage is
 * admit_lru with adaptive W-TinyLFU admission.
 *
 * Threads: the main thread sets up, then waits for SIGINT/SIGTERM; each of
 * --threads workers runs its own epoll loop over the one listening socket
 * (EPOLLEXCLUSIVE, so a new connection wakes one worker) and over the
 * connections it owns, which it alone touches.  The worker that accepts a
 * connection gives it to the worker with the fewest (round-robin among
 * equals), through that worker's inbox and eventfd, as memcached's
 * dispatcher does: accepting where woken would let one worker take a burst
 * of connections, serving them all on one core while the others idle.
 * Shutdown: main writes an eventfd every worker watches; each closes its
 * connections and returns.
 *
 * Limits, so one client cannot harm the others: a request line longer than
 * --max-line closes the connection after an error, except a get's, whose
 * keys are read and answered one by one as they arrive (memcached reads a
 * get line of any length); a data block longer than --max-item is answered
 * and skipped without being buffered; no new request is read while a
 * connection's unsent output is above OUT_HIGH (the client must read its
 * replies), and a get goes on to its next key only below it; a connection
 * that completes no request and takes no output for --idle-timeout seconds
 * is closed; beyond --max-conns, a new connection is told so and closed.
 *
 * Memory of the connections: each may hold ALLOWANCE_BASE + 2 x --max-line
 * bytes of buffers (112 KiB by default) of its own; buffers past that (a
 * large value being received, or sent) come from one pool of
 * --conn-memory MiB shared by all connections.  A data block the pool cannot
 * hold is refused ("SERVER_ERROR out of memory storing object") and skipped
 * unbuffered; a value it cannot hold ends its get with "SERVER_ERROR out of
 * memory writing get response" after the whole values before it.  So the
 * process stays within --memory (items, as admit_lru charges them) + 32
 * bytes per item stored with an expiry time or by a read-modify-write
 * command (store.h) + --conn-memory + --max-conns x (allowance + about
 * 1 KiB).
 */
#include "config.h"  /* first: it defines _GNU_SOURCE */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "meta.h"
#include "proto.h"
#include "store.h"

#define OUT_HIGH (32u << 10)       /* unsent output that stops reading */
#define IN_MIN 4096u
#define GET_IN_MAX (32u << 10)     /* input a get may buffer while blocked */
#define ALLOWANCE_BASE (96u << 10) /* see above: OUT_HIGH's buffer, rounded
                                    * up to a power of two, and GET_IN_MAX */
#define DRAIN_SECONDS 2
/* The memcached release whose protocol admit-cached speaks, given as its
 * version: clients choose features (meta commands, gat) and conformance
 * tests their expectations by it.  admit's own is "stats"' admit_version. */
#define PROTOCOL_VERSION "1.6.18"

struct options {
	const char *listen, *port;
	unsigned threads, max_conns, idle_timeout;
	uint64_t memory_mb, conn_memory_mb;
	size_t max_item, max_line;
	bool admission;
};

/* Per-worker statistics: written by the worker alone, read by any worker
 * answering "stats".  Relaxed throughout: they order nothing and are only
 * ever summed for display. */
struct counters {
	atomic_uint_fast64_t cmd_get, cmd_set, cmd_touch, cmd_flush;
	atomic_uint_fast64_t get_hits, get_misses, get_expired, get_flushed;
	atomic_uint_fast64_t delete_hits, delete_misses;
	atomic_uint_fast64_t incr_hits, incr_misses, decr_hits, decr_misses;
	atomic_uint_fast64_t cas_hits, cas_misses, cas_badval;
	atomic_uint_fast64_t touch_hits, touch_misses;
	atomic_uint_fast64_t total_conns, closed_limits, total_items;
};
#define NCOUNTERS (sizeof(struct counters) / sizeof(atomic_uint_fast64_t))

struct server;

struct worker {
	struct server *srv;
	pthread_t tid;
	int epfd;
	struct conn *conns;
	/* Connections given to this worker by the one that accepted them:
	 * pushed under inbox_mu, then wakefd (an eventfd this worker watches;
	 * its address is the epoll cookie) is written. */
	int wakefd;
	pthread_mutex_t inbox_mu;
	struct conn *inbox;
	atomic_uint nconns;      /* owned or in the inbox; see pick_worker */
	bool listening;          /* the listener is in epfd */
	struct cached_scratch scratch;
	struct counters ctr;
};

struct server {
	struct options opt;
	struct cached_store *store;
	int lfd, stopfd;
	struct worker *workers;
	atomic_uint curr_conns;
	atomic_uint_fast64_t rejected_conns;
	atomic_uint verbosity;
	/* The store's counters at the last "stats reset", under reset_mu. */
	pthread_mutex_t reset_mu;
	struct admit_lru_stats reset_base;
	atomic_size_t pool_used;   /* bytes of --conn-memory charged */
	size_t pool_max;
	time_t started;
	atomic_uint next_worker;   /* where pick_worker starts looking */
	/* A descriptor held in reserve: at the descriptor limit, an accept
	 * closes it to take the connection, tell it so and close it, so the
	 * listener does not stay readable with nobody able to take it. */
	pthread_mutex_t spare_mu;
	int spare_fd;
	int tag_listen, tag_stop;  /* epoll cookies; their addresses matter */
};

enum conn_state {
	READ_LINE,
	READ_DATA,
	SWALLOW,    /* skipping a refused data block */
	GET_KEYS,   /* answering a get's keys, one by one, up to its end */
	SKIP_LINE,  /* skipping the rest of a refused get line */
};

struct conn {
	int fd;
	struct worker *w;
	struct conn *prev, *next;
	enum conn_state state;
	char *in, *out;
	size_t in_off, in_len, in_cap;
	size_t out_off, out_len, out_cap;
	uint64_t skip;           /* SWALLOW: bytes still to skip */
	size_t charged;          /* bytes of buffers charged to the pool */
	bool gets;               /* GET_KEYS: the command is gets or gats */
	bool gat;                /* GET_KEYS: gat or gats, to gat_exptime */
	int64_t gat_exptime;
	struct cached_req req;   /* READ_DATA: its key is in key[] */
	bool meta_data;          /* READ_DATA: the block is meta's (an ms) */
	struct cached_meta meta; /* READ_DATA of an ms: its request */
	char key[CACHED_KEY_MAX];
	time_t last_progress;
	bool closing;            /* no more requests: answer, then close */
	bool eof;                /* the client half-closed: answer every whole
	                          * request buffered, then close */
	bool draining;           /* closing, answered: discard input */
	bool want_in, want_out;  /* the epoll interest */
};

static void
add(atomic_uint_fast64_t *c, uint64_t n)
{
	/* See struct counters. */
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static size_t
allowance(const struct options *o)
{
	return ALLOWANCE_BASE + 2 * o->max_line;
}

/*
 * Charges the connection's buffers, were they in_cap and out_cap bytes, to
 * the shared pool (what passes its allowance); false, with nothing
 * changed, when the pool cannot cover them, unless force (a reply line of a
 * few bytes, which must not fail).  Relaxed: pool_used orders no other
 * memory, it is only a running total bounded by a compare-and-swap.
 */
static bool
budget(struct conn *c, size_t in_cap, size_t out_cap, bool force)
{
	struct server *srv = c->w->srv;
	size_t allow = allowance(&srv->opt), total = in_cap + out_cap;
	size_t want = total > allow ? total - allow : 0, used, d;

	if (want > c->charged) {
		d = want - c->charged;
		used = atomic_load_explicit(&srv->pool_used, memory_order_relaxed);
		do {
			if (!force && used + d > srv->pool_max)
				return false;
		} while (!atomic_compare_exchange_weak_explicit(&srv->pool_used,
		         &used, used + d, memory_order_relaxed,
		         memory_order_relaxed));
	} else if (want < c->charged) {
		atomic_fetch_sub_explicit(&srv->pool_used, c->charged - want,
		                          memory_order_relaxed);
	}
	c->charged = want;
	return true;
}

/* Room for n more output bytes; see budget() for force. */
static bool
out_reserve(struct conn *c, size_t n, bool force)
{
	size_t cap = c->out_cap ? c->out_cap : IN_MIN;
	char *p;

	if (c->out_len + n <= c->out_cap)
		return true;
	if (c->out_off) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
		if (c->out_len + n <= c->out_cap)
			return true;
	}
	while (cap < c->out_len + n)
		cap *= 2;
	if (!budget(c, c->in_cap, cap, force))
		return false;
	p = realloc(c->out, cap);
	if (!p) {
		budget(c, c->in_cap, c->out_cap, true);
		return false;
	}
	c->out = p;
	c->out_cap = cap;
	return true;
}

static void
out_bytes(struct conn *c, const void *p, size_t n)
{
	if (!out_reserve(c, n, true)) {
		c->closing = true;  /* cannot answer: drop the client */
		return;
	}
	memcpy(c->out + c->out_len, p, n);
	c->out_len += n;
}

static void
out_str(struct conn *c, const char *s)
{
	out_bytes(c, s, strlen(s));
}

static void __attribute__((format(printf, 2, 3)))
out_fmt(struct conn *c, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		out_bytes(c, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static size_t
pending_out(const struct conn *c)
{
	return c->out_len - c->out_off;
}

/* ---- commands -------------------------------------------------------------- */

static void
reply(struct conn *c, bool noreply, const char *s)
{
	if (!noreply)
		out_str(c, s);
}

/* What get_key's reader is given. */
struct value_out {
	struct conn *c;
	const char *key;
	size_t klen;
	bool refused;
};

/* Writes " " and v in decimal at p; returns the end.  (vsnprintf cost more
 * than the rest of a hit's user time.) */
static char *
put_num(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	*p++ = ' ';
	while (n)
		*p++ = tmp[--n];
	return p;
}

/*
 * Writes one hit's VALUE block into the connection's output buffer: the
 * item's data is copied once, straight from the cache (it runs inside
 * admit_lru's read section, so it must not block: out_reserve allocates
 * but never waits).  The whole block is reserved before any of it is
 * written, so a refusal never leaves part of one in the stream.
 */
static void
write_value(const struct cached_item *it, void *arg)
{
	struct value_out *v = arg;
	struct conn *c = v->c;

	char *p;

	/* "VALUE " key " flags bytes cas\r\n" data "\r\n": the numbers
	 * take at most 3 x 21 bytes. */
	if (!out_reserve(c, 6 + v->klen + 3 * 21 + 2 + it->len + 2, false)) {
		v->refused = true;
		return;
	}
	p = c->out + c->out_len;
	memcpy(p, "VALUE ", 6);
	memcpy(p + 6, v->key, v->klen);
	p = put_num(p + 6 + v->klen, it->flags);
	p = put_num(p, it->len);
	if (c->gets)
		p = put_num(p, it->cas);
	memcpy(p, "\r\n", 2);
	memcpy(p + 2, it->data, it->len);
	memcpy(p + 2 + it->len, "\r\n", 2);
	c->out_len = (size_t)(p + 4 + it->len - c->out);
}

/*
 * Answers one key of a get.  False when refused (the caller skips the
 * rest of the line).
 */
static bool
get_key(struct conn *c, const char *key, size_t klen)
{
	struct worker *w = c->w;
	struct value_out v = { c, key, klen, false };

	enum cached_lookup r;

	add(&w->ctr.cmd_get, 1);
	if (c->gat) {
		add(&w->ctr.cmd_touch, 1);
		r = cached_store_gat(w->srv->store, &w->scratch, key, klen,
		                     c->gat_exptime, write_value, &v);
		add(r == CACHED_HIT ? &w->ctr.touch_hits : &w->ctr.touch_misses, 1);
	} else {
		r = cached_store_get(w->srv->store, &w->scratch, key, klen,
		                     write_value, &v);
	}
	if (r != CACHED_HIT) {
		add(&w->ctr.get_misses, 1);
		return true;
	}
	add(&w->ctr.get_hits, 1);
	if (v.refused) {
		out_str(c, "SERVER_ERROR out of memory writing get response\r\n");
		return false;
	}
	return true;
}

/*
 * GET_KEYS: answers the keys buffered, one by one, until the line's end
 * ("END"), a key too long (an error, then SKIP_LINE), more input needed,
 * or output above OUT_HIGH.  A key is a run of bytes up to a space or the
 * end of line (a "\r" before the "\n" is not part of it); a NUL ends the
 * line, as it ends memcached's (the rest is skipped).
 */
static void
get_keys(struct conn *c)
{
	while (!c->closing && pending_out(c) < OUT_HIGH) {
		const char *buf = c->in + c->in_off;
		size_t avail = c->in_len - c->in_off, lim, i, klen;

		while (avail && *buf == ' ') {
			buf++;
			avail--;
			c->in_off++;
		}
		if (!avail)
			return;
		if (*buf == '\n' || *buf == '\0') {
			c->in_off++;
			out_str(c, "END\r\n");
			c->state = *buf ? READ_LINE : SKIP_LINE;
			return;
		}
		lim = avail < CACHED_KEY_MAX + 2 ? avail : CACHED_KEY_MAX + 2;
		for (i = 0; i < lim && buf[i] != ' ' && buf[i] != '\n' &&
		            buf[i] != '\0'; i++)
			;
		if (i == lim && avail < CACHED_KEY_MAX + 2)
			return;  /* the key may go on */
		klen = i;
		if (i < lim && buf[i] == '\n' && klen && buf[klen - 1] == '\r')
			klen--;
		if (klen > CACHED_KEY_MAX) {
			out_str(c, "CLIENT_ERROR bad command line format\r\n");
			c->state = SKIP_LINE;
			return;
		}
		c->last_progress = time(NULL);
		if (klen && !get_key(c, buf, klen)) {
			c->state = SKIP_LINE;
			return;
		}
		c->in_off += i;
	}
}

/* Whether a line too long to be buffered whole is a get, answered key by
 * key. */
static bool
starts_get(const char *buf, size_t n, bool *gets)
{
	*gets = n >= 5 && !memcmp(buf, "gets ", 5);
	return *gets || (n >= 4 && !memcmp(buf, "get ", 4));
}

/* A get line buffered whole: refused as a whole if a key is too long (as
 * memcached does), else answered: a single key at once, several by
 * get_keys from the first. */
static void
start_get(struct conn *c, const struct cached_req *req)
{
	const char *p = req->rest, *end = req->rest + req->rest_len, *key;
	size_t klen;
	bool more = false;

	while (cached_next_key(&p, end, &key, &klen)) {
		if (klen > CACHED_KEY_MAX) {
			out_str(c, "CLIENT_ERROR bad command line format\r\n");
			return;
		}
		more = true;
	}
	c->gets = req->cmd == CACHED_GETS || req->cmd == CACHED_GATS;
	c->gat = req->cmd == CACHED_GAT || req->cmd == CACHED_GATS;
	c->gat_exptime = req->exptime;
	if (!more && req->klen) {
		/* One key: answered from the parsed line, as get_keys would
		 * (its reply, or its refusal without END). */
		if (get_key(c, req->key, req->klen))
			out_str(c, "END\r\n");
		return;
	}
	/* Back to the first key: the line is still in the buffer. */
	c->in_off = (size_t)(req->key - c->in);
	c->state = GET_KEYS;
}

/*
 * A storage command refused for its size or for memory: as in memcached, a
 * set removes the key's old value (a client that failed to write must not
 * read what it meant to replace).
 */
static void
refuse_update(struct conn *c, const struct cached_req *req, const char *msg)
{
	struct worker *w = c->w;

	if (req->cmd == CACHED_SET)
		cached_store_delete(w->srv->store, &w->scratch, req->key, req->klen);
	reply(c, req->noreply, msg);
}

static void
do_update(struct conn *c, const struct cached_req *req, const char *data)
{
	struct worker *w = c->w;
	enum cached_result r;

	add(&w->ctr.cmd_set, 1);
	r = cached_store_update(w->srv->store, &w->scratch, req, data);
	if (req->cmd == CACHED_CAS)
		add(r == CACHED_STORED ? &w->ctr.cas_hits
		    : r == CACHED_EXISTS ? &w->ctr.cas_badval : &w->ctr.cas_misses, 1);
	if (r == CACHED_STORED)
		add(&w->ctr.total_items, 1);
	switch (r) {
	case CACHED_STORED: reply(c, req->noreply, "STORED\r\n"); break;
	case CACHED_NOT_STORED: reply(c, req->noreply, "NOT_STORED\r\n"); break;
	case CACHED_EXISTS: reply(c, req->noreply, "EXISTS\r\n"); break;
	case CACHED_NOT_FOUND: reply(c, req->noreply, "NOT_FOUND\r\n"); break;
	case CACHED_TOO_LARGE:
		refuse_update(c, req, "SERVER_ERROR object too large for cache\r\n");
		break;
	default:
		refuse_update(c, req, "SERVER_ERROR out of memory storing object\r\n");
		break;
	}
}

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
		out_fmt(c, "STAT verbosity %u\r\n", atomic_load(&srv->verbosity));
		out_str(c, "STAT evictions on\r\n");
		out_fmt(c, "STAT num_threads %u\r\n", o->threads);
		out_str(c, "STAT cas_enabled yes\r\n");
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

static void
do_stats(struct conn *c, const struct cached_req *req)
{
	struct server *srv = c->w->srv;
	uint64_t sum[NCOUNTERS] = { 0 };
	struct cached_store_stats cs;
	struct admit_lru_stats ls;
	time_t now = time(NULL);
	double gets;

	if (req->rest_len) {
		/* Its first word: memcached ignores what follows. */
		const char *sp = memchr(req->rest, ' ', req->rest_len);

		stats_arg(c, req->rest, sp ? (size_t)(sp - req->rest) : req->rest_len);
		return;
	}
	for (unsigned t = 0; t < srv->opt.threads; t++) {
		atomic_uint_fast64_t *a = (atomic_uint_fast64_t *)&srv->workers[t].ctr;

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

/* Moves the unread input to the buffer's start. */
static void
in_compact(struct conn *c)
{
	if (c->in_off) {
		memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
		c->in_len -= c->in_off;
		c->in_off = 0;
	}
}

/* Makes room for need bytes from in_off (compacting first), charging the
 * growth to the pool; false, nothing lost, when it cannot. */
static bool
in_reserve(struct conn *c, size_t need)
{
	size_t cap = c->in_cap;
	char *p;

	in_compact(c);
	if (need <= c->in_cap)
		return true;
	while (cap < need)
		cap *= 2;
	if (!budget(c, cap, c->out_cap, false))
		return false;
	p = realloc(c->in, cap);
	if (!p) {
		budget(c, c->in_cap, c->out_cap, true);
		return false;
	}
	c->in = p;
	c->in_cap = cap;
	return true;
}

/* ---- meta commands ------------------------------------------------------- */

/* Writes " " f and v in decimal at p; returns the end. */
static char *
flag_num(char *p, char f, uint64_t v)
{
	char *end = put_num(p + 1, v);

	p[0] = ' ';
	p[1] = f;
	return end;
}

/* The return flags of a meta reply, in the order they were asked for;
 * hit: the item's own (else only k and O, as memcached gives them). */
static char *
meta_flags(char *p, const struct cached_meta *m,
           const struct cached_meta_result *r, bool hit)
{
	for (unsigned i = 0; i < m->nflags; i++) {
		char f = m->order[i];

		/* ms answers c on every outcome (0 when nothing was
		 * stored), as memcached does. */
		if (!hit && f != 'k' && f != 'O' && !(f == 'c' && m->cmd == 's'))
			continue;
		switch (f) {
		case 'c':
			if (m->cmd != 'd') {
				p = flag_num(p, 'c', r->cas);
			}
			break;
		case 'f':
			if (m->cmd == 'g') {
				p = flag_num(p, 'f', r->flags);
			}
			break;
		case 's':
			if (m->cmd == 'g') {
				p = flag_num(p, 's', r->len);
			}
			break;
		case 't':
			if (m->cmd == 'g' || m->cmd == 'a') {
				int64_t t = r->ttl_t;

				if (t < 0) {
					memcpy(p, " t-1", 4);
					p += 4;
				} else {
					p = flag_num(p, 't', (uint64_t)t);
				}
			}
			break;
		case 'k':
			/* A base64 key is given back as memcached gives it:
			 * the decoded key encoded again (what the decoder
			 * skipped is gone). */
			memcpy(p, " k", 2);
			p += 2;
			if (m->b) {
				p += cached_base64_encode((const unsigned char *)m->key,
				                          m->klen, p);
				memcpy(p, " b", 2);
				p += 2;
			} else {
				memcpy(p, m->rkey, m->rklen);
				p += m->rklen;
			}
			break;
		case 'O':
			memcpy(p, " O", 2);
			memcpy(p + 2, m->opaque, m->olen);
			p += 2 + m->olen;
			break;
		default:
			break;
		}
	}
	return p;
}

/* Room for a meta reply's line: its code, every flag with its value. */
#define META_LINE (8 + CACHED_META_FLAGS * 24 + CACHED_KEY_MAX + CACHED_OPAQUE_MAX)

struct meta_out {
	struct conn *c;
	const struct cached_meta *m;
	bool refused;
};

/* Writes a HIT's reply (mg, ma): VA with the value, or HD. */
static void
meta_write_hit(const struct cached_meta_result *r, void *arg)
{
	struct meta_out *o = arg;
	struct conn *c = o->c;
	const struct cached_meta *m = o->m;
	char *p;

	/* q hides an ma's HD when it changed an item, not when it created
	 * one (memcached's rule); a long opaque replaces the reply. */
	if ((m->q && m->cmd == 'a' && r->found) || m->long_opaque)
		return;
	if (!out_reserve(c, META_LINE + (m->v ? r->len + 2 : 0), false)) {
		o->refused = true;
		return;
	}
	p = c->out + c->out_len;
	if (m->v) {
		memcpy(p, "VA", 2);
		p = put_num(p + 2, r->len);
	} else {
		memcpy(p, "HD", 2);
		p += 2;
	}
	p = meta_flags(p, m, r, true);
	if (r->won_before) {
		memcpy(p, " Z", 2);
		p += 2;
	}
	if (r->stale) {
		memcpy(p, " X", 2);
		p += 2;
	}
	if (r->win) {
		memcpy(p, " W", 2);
		p += 2;
	}
	memcpy(p, "\r\n", 2);
	p += 2;
	if (m->v) {
		memcpy(p, r->data, r->len);
		memcpy(p + r->len, "\r\n", 2);
		p += r->len + 2;
	}
	c->out_len = (size_t)(p - c->out);
}

/* Runs a parsed meta command (an ms with its data block). */
static void
do_meta(struct conn *c, const struct cached_meta *m, const char *data)
{
	struct worker *w = c->w;
	struct meta_out o = { c, m, false };
	struct cached_meta_result r;
	const char *code = NULL;
	char line[META_LINE], *p;
	bool quiet = false;

	switch (m->cmd) {
	case 'g': add(&w->ctr.cmd_get, 1); break;
	case 's': add(&w->ctr.cmd_set, 1); break;
	default: break;
	}
	switch (cached_store_meta(w->srv->store, &w->scratch, m, data, &r,
	                          meta_write_hit, &o)) {
	case CACHED_META_HIT:
		if (m->cmd == 'g')
			add(&w->ctr.get_hits, 1);
		if (o.refused)
			out_str(c, "SERVER_ERROR out of memory writing get response\r\n");
		else if (m->long_opaque)
			out_str(c, "CLIENT_ERROR opaque token too long\r\n");
		return;
	case CACHED_META_MISS:
		add(&w->ctr.get_misses, 1);
		code = "EN";
		quiet = m->q;
		break;
	case CACHED_META_STORED:
		add(&w->ctr.total_items, 1);
		code = "HD";
		quiet = m->q;
		break;
	case CACHED_META_DELETED:
		code = "HD";
		quiet = m->q;
		break;
	case CACHED_META_NOT_STORED: code = "NS"; break;
	case CACHED_META_EXISTS: code = "EX"; break;
	case CACHED_META_NOT_FOUND: code = "NF"; break;
	case CACHED_META_NON_NUMERIC:
		out_str(c, "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
		return;
	case CACHED_META_TOO_LARGE:
		out_str(c, "SERVER_ERROR object too large for cache\r\n");
		return;
	default:
		out_str(c, m->cmd == 's' ? "SERVER_ERROR out of memory storing object\r\n"
		                         : "SERVER_ERROR out of memory\r\n");
		return;
	}
	if (m->long_opaque) {
		out_str(c, "CLIENT_ERROR opaque token too long\r\n");
		return;
	}
	if (quiet)
		return;
	memcpy(line, code, 2);
	p = meta_flags(line + 2, m, &r, r.status == CACHED_META_STORED);
	memcpy(p, "\r\n", 2);
	out_bytes(c, line, (size_t)(p + 2 - line));
}

/* A meta request line: run it, or wait for an ms's data block. */
static void
meta_line(struct conn *c, const char *line, size_t len)
{
	const char *error = NULL;

	switch (cached_meta_parse(line, len, &c->meta, &error)) {
	case CACHED_PARSE_OK:
		break;
	case CACHED_PARSE_CLIENT_ERROR:
		out_fmt(c, "CLIENT_ERROR %s\r\n", error);
		if (c->meta.has_data) {
			c->skip = c->meta.bytes + 2;
			c->state = SWALLOW;
		}
		return;
	default:
		out_str(c, "ERROR\r\n");
		return;
	}
	if (c->meta.cmd != 's') {
		do_meta(c, &c->meta, NULL);
		return;
	}
	if (c->meta.bytes > c->w->srv->opt.max_item ||
	    !in_reserve(c, (size_t)c->meta.bytes + 2)) {
		out_str(c, c->meta.bytes > c->w->srv->opt.max_item
		           ? "SERVER_ERROR object too large for cache\r\n"
		           : "SERVER_ERROR out of memory storing object\r\n");
		c->skip = c->meta.bytes + 2;
		c->state = SWALLOW;
		return;
	}
	c->req.bytes = c->meta.bytes;
	c->meta_data = true;
	c->state = READ_DATA;
}

/* Runs one parsed request line; a storage command goes on to READ_DATA. */
static void
execute(struct conn *c, struct cached_req *req)
{
	struct worker *w = c->w;
	struct cached_store *st = w->srv->store;
	enum cached_result r;
	uint64_t v;

	switch (req->cmd) {
	case CACHED_GET:
	case CACHED_GETS:
	case CACHED_GAT:
	case CACHED_GATS:
		start_get(c, req);
		return;
	case CACHED_SET: case CACHED_ADD: case CACHED_REPLACE:
	case CACHED_APPEND: case CACHED_PREPEND: case CACHED_CAS:
		if (req->bytes > w->srv->opt.max_item) {
			refuse_update(c, req, "SERVER_ERROR object too large for cache\r\n");
			c->skip = req->bytes + 2;
			c->state = SWALLOW;
			return;
		}
		memcpy(c->key, req->key, req->klen);
		c->req = *req;
		c->req.key = c->key;
		c->meta_data = false;
		/* The whole block is buffered: room for it now, or a refusal
		 * before any of it is read. */
		if (!in_reserve(c, (size_t)req->bytes + 2)) {
			refuse_update(c, req, "SERVER_ERROR out of memory storing object\r\n");
			c->skip = req->bytes + 2;
			c->state = SWALLOW;
			return;
		}
		c->state = READ_DATA;
		return;
	case CACHED_DELETE:
		r = cached_store_delete(st, &w->scratch, req->key, req->klen);
		add(r == CACHED_DELETED ? &w->ctr.delete_hits : &w->ctr.delete_misses, 1);
		reply(c, req->noreply, r == CACHED_DELETED ? "DELETED\r\n" : "NOT_FOUND\r\n");
		return;
	case CACHED_INCR:
	case CACHED_DECR:
		r = cached_store_arith(st, &w->scratch, req, &v);
		if (r == CACHED_NUMBER) {
			add(req->cmd == CACHED_INCR ? &w->ctr.incr_hits : &w->ctr.decr_hits, 1);
			add(&w->ctr.total_items, 1);
		}
		else if (r == CACHED_NOT_FOUND)
			add(req->cmd == CACHED_INCR ? &w->ctr.incr_misses : &w->ctr.decr_misses, 1);
		if (req->noreply)
			return;
		if (r == CACHED_NUMBER)
			out_fmt(c, "%" PRIu64 "\r\n", v);
		else if (r == CACHED_NOT_FOUND)
			out_str(c, "NOT_FOUND\r\n");
		else if (r == CACHED_NON_NUMERIC)
			out_str(c, "CLIENT_ERROR cannot increment or decrement "
			           "non-numeric value\r\n");
		else
			out_str(c, "SERVER_ERROR out of memory\r\n");
		return;
	case CACHED_TOUCH:
		add(&w->ctr.cmd_touch, 1);
		r = cached_store_touch(st, &w->scratch, req);
		add(r == CACHED_TOUCHED ? &w->ctr.touch_hits : &w->ctr.touch_misses, 1);
		reply(c, req->noreply, r == CACHED_TOUCHED ? "TOUCHED\r\n" : "NOT_FOUND\r\n");
		return;
	case CACHED_FLUSH_ALL:
		add(&w->ctr.cmd_flush, 1);
		reply(c, req->noreply, cached_store_flush(st, req->exptime)
		                       ? "SERVER_ERROR out of memory\r\n" : "OK\r\n");
		return;
	case CACHED_VERBOSITY:
		atomic_store(&w->srv->verbosity, (unsigned)req->delta);
		reply(c, req->noreply, "OK\r\n");
		return;
	case CACHED_STATS:
		do_stats(c, req);
		return;
	case CACHED_VERSION:
		out_str(c, "VERSION " PROTOCOL_VERSION "\r\n");
		return;
	case CACHED_QUIT:
		c->closing = true;
		return;
	case CACHED_MN:
		out_str(c, "MN\r\n");
		return;
	}
}

/* Runs every complete request buffered, until output backs up. */
static void
process(struct conn *c)
{
	const struct options *o = &c->w->srv->opt;

	while (!c->closing && pending_out(c) < OUT_HIGH) {
		char *buf = c->in + c->in_off;
		size_t avail = c->in_len - c->in_off, len, used;
		struct cached_req req;
		const char *nul;
		size_t lead;

		if (!avail)
			return;  /* every state waits for input (runnable()) */
		if (c->state == GET_KEYS) {
			get_keys(c);
			if (c->state == GET_KEYS)
				return;  /* more input, or output drained first */
			continue;
		}
		if (c->state == SKIP_LINE) {
			const char *nl = memchr(buf, '\n', avail);

			c->in_off += nl ? (size_t)(nl - buf) + 1 : avail;
			if (!nl)
				break;
			c->state = READ_LINE;
			continue;
		}
		if (c->state == SWALLOW) {
			used = avail < c->skip ? avail : (size_t)c->skip;
			c->in_off += used;
			c->skip -= used;
			if (c->skip)
				break;
			c->state = READ_LINE;
			continue;
		}
		if (c->state == READ_DATA) {
			size_t need = (size_t)c->req.bytes + 2;

			if (avail < need)
				break;  /* execute() made room for it */
			if (buf[need - 2] != '\r' || buf[need - 1] != '\n')
				reply(c, c->req.noreply && !c->meta_data,
				      "CLIENT_ERROR bad data chunk\r\n");
			else if (c->meta_data)
				do_meta(c, &c->meta, buf);
			else
				do_update(c, &c->req, buf);
			c->in_off += need;
			c->state = READ_LINE;
			c->last_progress = time(NULL);
			continue;
		}
		switch (cached_find_line(buf, avail, o->max_line, &len, &used)) {
		case CACHED_LINE_MORE:
			return;
		case CACHED_LINE_TOO_LONG:
			if (starts_get(buf, avail, &c->gets)) {
				c->in_off += c->gets ? 5 : 4;
				c->gat = false;
				c->state = GET_KEYS;
				continue;
			}
			out_str(c, "CLIENT_ERROR line too long\r\n");
			add(&c->w->ctr.closed_limits, 1);
			c->closing = true;
			return;
		case CACHED_LINE_OK:
			break;
		}
		c->in_off += used;
		c->last_progress = time(NULL);
		/* memcached reads a request line as a C string: it ends at
		 * its first NUL. */
		nul = memchr(buf, '\0', len);
		if (nul)
			len = (size_t)(nul - buf);
		/* Its tokenizer skips the spaces before the command. */
		for (lead = 0; lead < len && buf[lead] == ' '; lead++)
			;
		if (cached_meta_is(buf + lead, len - lead)) {
			meta_line(c, buf + lead, len - lead);
			continue;
		}
		switch (cached_parse_line(buf, len, &req)) {
		case CACHED_PARSE_OK:
			execute(c, &req);
			break;
		case CACHED_PARSE_ERROR:
			out_str(c, "ERROR\r\n");
			break;
		case CACHED_PARSE_CLOSE:
			c->closing = true;
			return;
		case CACHED_PARSE_CLIENT_ERROR:
			if (!req.noreply)
				out_fmt(c, "CLIENT_ERROR %s\r\n", req.error);
			if (req.has_data) {
				c->skip = req.bytes + 2;
				c->state = SWALLOW;
			}
			break;
		}
	}
}

/* ---- connections and the event loop ------------------------------------- */

/* Closes and frees a connection that is in no epoll set and no list. */
static void
conn_free(struct conn *c)
{
	struct worker *w = c->w;

	close(c->fd);
	atomic_fetch_sub(&w->srv->curr_conns, 1);
	/* relaxed: see pick_worker */
	atomic_fetch_sub_explicit(&w->nconns, 1, memory_order_relaxed);
	budget(c, 0, 0, true);
	free(c->in);
	free(c->out);
	free(c);
}

static void
conn_close(struct conn *c)
{
	struct worker *w = c->w;

	epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	conn_free(c);
}

static void
set_interest(struct conn *c, bool want_in, bool want_out)
{
	struct epoll_event ev = { .data.ptr = c };

	if (want_in == c->want_in && want_out == c->want_out)
		return;
	ev.events = (want_in ? EPOLLIN : 0) | (want_out ? EPOLLOUT : 0);
	epoll_ctl(c->w->epfd, EPOLL_CTL_MOD, c->fd, &ev);
	c->want_in = want_in;
	c->want_out = want_out;
}

/* Whether process() has a whole request (or bytes to skip) to work on. */
static bool
runnable(const struct conn *c)
{
	size_t avail = c->in_len - c->in_off;

	const char *buf = c->in + c->in_off;

	if (!avail)
		return false;  /* every state needs a byte (the common case) */
	switch (c->state) {
	case SWALLOW:
	case SKIP_LINE:
		return avail > 0;
	case GET_KEYS:
		/* A whole key (or the end of line, or one too long) is there. */
		if (avail > CACHED_KEY_MAX + 1)
			return true;
		for (size_t i = 0; i < avail; i++)
			if (buf[i] == ' ' || buf[i] == '\n')
				return true;
		return false;
	case READ_DATA:
		return avail >= c->req.bytes + 2;
	default:
		return memchr(buf, '\n', avail) != NULL ||
		       avail > c->w->srv->opt.max_line + 1;
	}
}

/* Writes what it can; false when the connection is to be closed. */
static bool
flush_out(struct conn *c)
{
	while (pending_out(c)) {
		ssize_t n = send(c->fd, c->out + c->out_off, pending_out(c),
		                 MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return false;
		}
		c->out_off += (size_t)n;
		c->last_progress = time(NULL);
	}
	if (!pending_out(c)) {
		c->out_off = c->out_len = 0;
		if (c->out_cap > OUT_HIGH) {  /* give back a big reply's buffer */
			free(c->out);
			c->out = NULL;
			c->out_cap = 0;
			budget(c, c->in_cap, 0, true);
		}
		/* Half-close, then read until the client closes: closing
		 * with unread input would reset the connection and could
		 * destroy the reply before the client reads it. */
		if (c->closing && !c->draining) {
			shutdown(c->fd, SHUT_WR);
			c->draining = true;
		}
	}
	return true;
}

/*
 * Whether there is room to read into, compacting, or growing the buffer
 * where its state may: a line up to --max-line, a get's keys up to
 * GET_IN_MAX.  A data block's room was made when its line was read.
 */
static bool
in_room(struct conn *c)
{
	size_t limit;

	if (c->in_len < c->in_cap)
		return true;
	in_compact(c);
	if (c->in_len < c->in_cap)
		return true;
	limit = c->state == READ_LINE ? c->w->srv->opt.max_line + 2
	        : c->state == GET_KEYS ? GET_IN_MAX : 0;
	return c->in_cap < limit && in_reserve(c, 2 * c->in_cap);
}

/* Reads, runs and answers; false when the connection is to be closed. */
static bool
conn_io(struct conn *c, uint32_t events)
{
	bool want_in;

	if (events & EPOLLERR)
		return false;
	if (c->draining) {
		char sink[4096];
		ssize_t n = recv(c->fd, sink, sizeof(sink), 0);

		return n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR));
	}
	if ((events & (EPOLLIN | EPOLLHUP)) && c->want_in && in_room(c)) {
		ssize_t n;

		n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
		if (n == 0)
			c->eof = true;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return false;
		if (n > 0)
			c->in_len += (size_t)n;
	}
	/* process() stops at OUT_HIGH; go on while sending drains it. */
	do {
		process(c);
		if (!flush_out(c))
			return false;
	} while (!c->closing && pending_out(c) < OUT_HIGH && runnable(c));
	if (c->in_off == c->in_len) {
		c->in_off = c->in_len = 0;
		if (c->in_cap > IN_MIN && c->state != READ_DATA) {
			char *p = realloc(c->in, IN_MIN);

			if (p) {
				c->in = p;
				c->in_cap = IN_MIN;
				budget(c, IN_MIN, c->out_cap, true);
			}
		}
	}
	/* Half-closed: done once every whole request is answered and sent
	 * (what is left is an unfinished one). */
	if (c->eof && !c->draining && !pending_out(c) &&
	    (c->closing || !runnable(c)))
		return false;
	/* No new request is read while the client does not read its replies;
	 * a get's keys are, up to GET_IN_MAX, as a client may write a long
	 * get line whole before it reads. */
	want_in = c->draining ||
	          (!c->closing && !c->eof && (pending_out(c) < OUT_HIGH ||
	                           c->state == GET_KEYS || c->state == SKIP_LINE) &&
	           in_room(c));
	set_interest(c, want_in, pending_out(c) != 0);
	return true;
}

/*
 * The worker a new connection goes to: the one with the fewest, looking
 * from a rotating start so that equals take turns.  Relaxed loads and
 * updates of nconns: it is a hint for balance, ordering nothing; a stale
 * count only places one connection less well.
 */
static struct worker *
pick_worker(struct server *srv)
{
	unsigned n = srv->opt.threads;
	unsigned start = atomic_fetch_add_explicit(&srv->next_worker, 1,
	                                           memory_order_relaxed) % n;
	unsigned best = start, least = UINT_MAX;

	for (unsigned i = 0; i < n; i++) {
		unsigned j = (start + i) % n;
		unsigned k = atomic_load_explicit(&srv->workers[j].nconns,
		                                  memory_order_relaxed);

		if (k < least) {
			least = k;
			best = j;
		}
	}
	return &srv->workers[best];
}

/* Puts a connection given to its worker into its epoll set and list; run
 * by that worker. */
static void
conn_attach(struct conn *c)
{
	struct worker *w = c->w;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };

	c->want_in = true;
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
		conn_free(c);
		return;
	}
	c->prev = NULL;
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	add(&w->ctr.total_conns, 1);
}

/* Takes the connections other workers gave this one. */
static void
take_inbox(struct worker *w)
{
	struct conn *c, *next;
	uint64_t n;

	(void)!read(w->wakefd, &n, sizeof(n));  /* reset the eventfd */
	pthread_mutex_lock(&w->inbox_mu);
	c = w->inbox;
	w->inbox = NULL;
	pthread_mutex_unlock(&w->inbox_mu);
	for (; c; c = next) {
		next = c->next;
		conn_attach(c);
	}
}

/* Gives c to its worker t, which is not the caller. */
static void
hand_over(struct worker *t, struct conn *c)
{
	uint64_t one = 1;

	pthread_mutex_lock(&t->inbox_mu);
	c->next = t->inbox;
	t->inbox = c;
	pthread_mutex_unlock(&t->inbox_mu);
	(void)!write(t->wakefd, &one, sizeof(one));
}

static const char TOO_MANY[] = "ERROR Too many open connections\r\n";

/* Tells a connection that cannot be served so, and closes it. */
static void
turn_away(struct server *srv, int fd)
{
	atomic_fetch_add(&srv->rejected_conns, 1);
	(void)!send(fd, TOO_MANY, sizeof(TOO_MANY) - 1, MSG_NOSIGNAL);
	close(fd);
}

/*
 * accept failed for want of a descriptor: takes the connection with the
 * spare one and turns it away.  False when that failed too (the spare is
 * in use by another worker, or the system is out of descriptors): the
 * caller then stops listening for a moment rather than spin.
 */
static bool
accept_spare(struct server *srv)
{
	bool done = false;
	int fd;

	pthread_mutex_lock(&srv->spare_mu);
	if (srv->spare_fd >= 0) {
		close(srv->spare_fd);
		fd = accept4(srv->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0) {
			turn_away(srv, fd);
			done = true;
		} else {
			done = errno == EAGAIN || errno == EWOULDBLOCK;
		}
		srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	pthread_mutex_unlock(&srv->spare_mu);
	return done;
}

/* Stops (false) or resumes (true) this worker's accepting. */
static void
listen_interest(struct worker *w, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE,
	                          .data.ptr = &w->srv->tag_listen };

	if (on == w->listening)
		return;
	if (on) {
		if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->srv->lfd, &ev) < 0)
			return;
	} else
		epoll_ctl(w->epfd, EPOLL_CTL_DEL, w->srv->lfd, NULL);
	w->listening = on;
}

static void
accept_all(struct worker *w)
{
	struct server *srv = w->srv;

	for (;;) {
		int fd = accept4(srv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct worker *t;
		struct conn *c;
		int one = 1;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if ((errno == EMFILE || errno == ENFILE) && accept_spare(srv))
				continue;
			/* EAGAIN: another worker took it, or none left;
			 * else out of descriptors or memory: the listener
			 * stays readable, so this worker stops taking
			 * connections until its next sweep (a second). */
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				listen_interest(w, false);
			return;
		}
		if (atomic_fetch_add(&srv->curr_conns, 1) >= srv->opt.max_conns) {
			atomic_fetch_sub(&srv->curr_conns, 1);
			turn_away(srv, fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (c)
			c->in = malloc(IN_MIN);
		if (!c || !c->in) {
			if (c)
				free(c);
			atomic_fetch_sub(&srv->curr_conns, 1);
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->fd = fd;
		c->in_cap = IN_MIN;
		c->last_progress = time(NULL);
		t = pick_worker(srv);
		c->w = t;
		atomic_fetch_add_explicit(&t->nconns, 1, memory_order_relaxed);
		if (t == w)
			conn_attach(c);
		else
			hand_over(t, c);
	}
}

/* Closes connections idle past --idle-timeout, and answered ones whose
 * client has not closed within DRAIN_SECONDS. */
static void
close_idle(struct worker *w, time_t now)
{
	time_t limit = (time_t)w->srv->opt.idle_timeout;

	for (struct conn *c = w->conns, *next; c; c = next) {
		time_t idle = now - c->last_progress;

		next = c->next;
		if (c->draining ? idle >= DRAIN_SECONDS : limit && idle >= limit) {
			add(&w->ctr.closed_limits, !c->draining);
			conn_close(c);
		}
	}
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct server *srv = w->srv;
	struct epoll_event evs[64];
	time_t last_sweep = time(NULL);

	for (;;) {
		int n = epoll_wait(w->epfd, evs, 64, 1000);
		time_t now;

		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;

			if (p == &srv->tag_stop)
				goto out;
			if (p == &srv->tag_listen) {
				accept_all(w);
				continue;
			}
			if (p == &w->wakefd) {
				take_inbox(w);
				continue;
			}
			if (!conn_io(p, evs[i].events))
				conn_close(p);
		}
		now = time(NULL);
		if (now != last_sweep) {
			close_idle(w, now);
			listen_interest(w, true);
			last_sweep = now;
		}
	}
out:
	while (w->conns)
		conn_close(w->conns);
	return NULL;
}

/* ---- setup ------------------------------------------------------------------ */

static int
listen_on(const struct options *o)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
	                          .ai_flags = AI_PASSIVE | AI_NUMERICHOST |
	                                      AI_NUMERICSERV };
	struct addrinfo *res;
	int fd = -1, one = 1, rc;

	rc = getaddrinfo(o->listen, o->port, &hints, &res);
	if (rc) {
		fprintf(stderr, "admit-cached: --listen %s --port %s: %s\n",
		        o->listen, o->port, gai_strerror(rc));
		return -1;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 1024) < 0) {
		fprintf(stderr, "admit-cached: listen on %s port %s: %s\n",
		        o->listen, o->port, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/*
 * Descriptors besides the connections: stdio, the listener, the stop
 * eventfd, the spare, the store's, and per worker an epoll set and an
 * eventfd; with room to spare.
 */
static unsigned
fds_reserved(const struct options *o)
{
	return 16 + 2 * o->threads;
}

/*
 * Raises the soft limit on open files to what --max-conns needs, as
 * memcached does; where the hard limit is lower, --max-conns is lowered to
 * fit (with a warning), so a connection past it is turned away with an
 * answer instead of failing for want of a descriptor.
 */
static void
fit_nofile(struct options *o)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)o->max_conns + fds_reserved(o);

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
		return;
	rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need
	              ? rl.rlim_max : need;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0 && getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur >= need)
		return;
	o->max_conns = rl.rlim_cur > fds_reserved(o) + 1
	               ? (unsigned)(rl.rlim_cur - fds_reserved(o)) : 1;
	fprintf(stderr, "admit-cached: open files limited to %llu: --max-conns "
	        "lowered to %u\n", (unsigned long long)rl.rlim_cur, o->max_conns);
}

static void
usage(FILE *f)
{
	fprintf(f,
"usage: admit-cached [options]\n"
"A memcached text-protocol cache server; storage is admit_lru with adaptive\n"
"W-TinyLFU admission.\n"
"  -p, --port PORT          TCP port (default 11311)\n"
"  -l, --listen ADDR        numeric address to listen on (default 127.0.0.1)\n"
"  -t, --threads N          worker threads, one epoll loop each (default 4)\n"
"  -m, --memory MB          cache capacity in MiB: keys + values + 76 bytes\n"
"                           per item (default 64)\n"
"  -c, --max-conns N        simultaneous connections (default 1024)\n"
"  -I, --max-item BYTES     largest value (default 1048576)\n"
"      --max-line BYTES     longest request line (default 8192)\n"
"      --idle-timeout SEC   close a connection that completes no request and\n"
"                           takes no output for SEC seconds; 0 = never\n"
"                           (default 300)\n"
"      --conn-memory MB     buffers shared by the connections past each one's\n"
"                           own 96 KiB + 2 x --max-line (default 64); a value\n"
"                           that finds it full is refused\n"
"      --no-admission       plain LRU, no TinyLFU admission (for comparison)\n"
"  -h, --help               this text\n"
"Commands: get gets gat gats set add replace append prepend cas delete incr\n"
"decr touch flush_all verbosity stats version quit, and the meta commands\n"
"mg ms md ma mn, each as in memcached 1.6's text protocol; \"stats\" adds\n"
"admission_admitted, admission_rejected, admission_window,\n"
"admission_filter_load and hit_ratio (admit-cached(1) lists every\n"
"difference from memcached).\n"
"SIGINT or SIGTERM stops the server.\n");
}

static bool
parse_num(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static int
parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_MAX_LINE = 256, OPT_IDLE, OPT_NO_ADMISSION, OPT_CONN_MEMORY };
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "listen", required_argument, NULL, 'l' },
		{ "threads", required_argument, NULL, 't' },
		{ "memory", required_argument, NULL, 'm' },
		{ "max-conns", required_argument, NULL, 'c' },
		{ "max-item", required_argument, NULL, 'I' },
		{ "max-line", required_argument, NULL, OPT_MAX_LINE },
		{ "idle-timeout", required_argument, NULL, OPT_IDLE },
		{ "no-admission", no_argument, NULL, OPT_NO_ADMISSION },
		{ "conn-memory", required_argument, NULL, OPT_CONN_MEMORY },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int ch;

	*o = (struct options){ .listen = "127.0.0.1", .port = "11311",
	                       .threads = 4, .max_conns = 1024,
	                       .idle_timeout = 300, .memory_mb = 64,
	                       .conn_memory_mb = 64,
	                       .max_item = 1u << 20, .max_line = 8192,
	                       .admission = true };
	while ((ch = getopt_long(argc, argv, "p:l:t:m:c:I:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			if (!parse_num(optarg, 0, 65535, &v))
				goto bad;
			o->port = optarg;
			break;
		case 'l': o->listen = optarg; break;
		case 't':
			if (!parse_num(optarg, 1, 256, &v))
				goto bad;
			o->threads = (unsigned)v;
			break;
		case 'm':
			if (!parse_num(optarg, 1, 1u << 20, &v))
				goto bad;
			o->memory_mb = v;
			break;
		case 'c':
			if (!parse_num(optarg, 1, 1u << 20, &v))
				goto bad;
			o->max_conns = (unsigned)v;
			break;
		case 'I':
			if (!parse_num(optarg, 1, 256u << 20, &v))
				goto bad;
			o->max_item = (size_t)v;
			break;
		case OPT_MAX_LINE:
			if (!parse_num(optarg, 512, 1u << 20, &v))
				goto bad;
			o->max_line = (size_t)v;
			break;
		case OPT_IDLE:
			if (!parse_num(optarg, 0, 1u << 30, &v))
				goto bad;
			o->idle_timeout = (unsigned)v;
			break;
		case OPT_NO_ADMISSION: o->admission = false; break;
		case OPT_CONN_MEMORY:
			if (!parse_num(optarg, 0, 1u << 20, &v))
				goto bad;
			o->conn_memory_mb = v;
			break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return -1;
	}
	return 0;
bad:
	for (const struct option *lo = longopts; lo->name; lo++)
		if (lo->val == ch)
			fprintf(stderr, "admit-cached: bad value '%s' for --%s\n",
			        optarg, lo->name);
	return -1;
}

int
main(int argc, char **argv)
{
	struct server srv = { 0 };
	struct epoll_event ev;
	sigset_t sigs;
	unsigned started = 0, ready = 0;
	int sig, status = 1;
	uint64_t one = 1;

	if (parse_options(argc, argv, &srv.opt) < 0)
		return 2;
	srv.lfd = srv.stopfd = -1;
	fit_nofile(&srv.opt);
	pthread_mutex_init(&srv.spare_mu, NULL);
	srv.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	srv.started = time(NULL);
	atomic_init(&srv.curr_conns, 0);
	atomic_init(&srv.rejected_conns, 0);
	atomic_init(&srv.verbosity, 0);
	pthread_mutex_init(&srv.reset_mu, NULL);
	atomic_init(&srv.pool_used, 0);
	srv.pool_max = (size_t)(srv.opt.conn_memory_mb << 20);

	/* Workers inherit the mask: only main's sigwait sees the signals. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (cached_store_new(srv.opt.memory_mb << 20, srv.opt.max_item,
	                     srv.opt.admission, &srv.store))
		goto out;
	srv.lfd = listen_on(&srv.opt);
	srv.stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	srv.workers = calloc(srv.opt.threads, sizeof(*srv.workers));
	if (srv.lfd < 0 || srv.stopfd < 0 || !srv.workers)
		goto out;
	/* Every worker is ready before any starts: the first to accept may
	 * give a connection to any other. */
	for (; ready < srv.opt.threads; ready++) {
		struct worker *w = &srv.workers[ready];

		w->srv = &srv;
		pthread_mutex_init(&w->inbox_mu, NULL);
		atomic_init(&w->nconns, 0);
		w->epfd = epoll_create1(EPOLL_CLOEXEC);
		w->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (w->epfd < 0 || w->wakefd < 0 ||
		    cached_scratch_init(&w->scratch, srv.store)) {
			ready++;
			goto stop;
		}
		listen_interest(w, true);
		if (!w->listening) {
			ready++;
			goto stop;
		}
		ev.events = EPOLLIN;
		ev.data.ptr = &srv.tag_stop;
		if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, srv.stopfd, &ev) < 0) {
			ready++;
			goto stop;
		}
		ev.data.ptr = &w->wakefd;
		if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->wakefd, &ev) < 0) {
			ready++;
			goto stop;
		}
	}
	for (; started < srv.opt.threads; started++)
		if (pthread_create(&srv.workers[started].tid, NULL, worker_main,
		                   &srv.workers[started]))
			goto stop;
	fprintf(stderr, "admit-cached: listening on %s port %s, %u threads, "
	        "%" PRIu64 " MiB, admission %s\n", srv.opt.listen, srv.opt.port,
	        srv.opt.threads, srv.opt.memory_mb,
	        srv.opt.admission ? "adaptive W-TinyLFU" : "off (plain LRU)");
	while (sigwait(&sigs, &sig) != 0)
		;
	fprintf(stderr, "admit-cached: signal %d, shutting down\n", sig);
	status = 0;
stop:
	if (status)
		fprintf(stderr, "admit-cached: cannot start worker %u: %s\n",
		        started, strerror(errno));
	/* An eventfd stays readable once written: it wakes every worker. */
	(void)!write(srv.stopfd, &one, sizeof(one));
	for (unsigned t = 0; t < started; t++)
		pthread_join(srv.workers[t].tid, NULL);
	for (unsigned t = 0; t < ready; t++) {
		struct worker *w = &srv.workers[t];

		/* Connections given to a worker that had already stopped. */
		while (w->inbox) {
			struct conn *c = w->inbox;

			w->inbox = c->next;
			conn_free(c);
		}
		if (w->epfd >= 0)
			close(w->epfd);
		if (w->wakefd >= 0)
			close(w->wakefd);
		pthread_mutex_destroy(&w->inbox_mu);
		cached_scratch_free(&w->scratch);
	}
out:
	free(srv.workers);
	if (srv.stopfd >= 0)
		close(srv.stopfd);
	if (srv.lfd >= 0)
		close(srv.lfd);
	cached_store_free(srv.store);
	if (srv.spare_fd >= 0)
		close(srv.spare_fd);
	pthread_mutex_destroy(&srv.spare_mu);
	return status;
}
