/*
 * server.h - what the files serving admit-cached's connections share:
 * conn.c (the connection loop and its buffers), commands.c (the text
 * commands), stats.c ("stats"), meta_cmd.c (the meta commands), reply.c
 * (the VALUE and meta reply lines), binary.c (the binary protocol),
 * metadump.c (lru_crawler metadump), workers.c (the workers and accept)
 * and main.c (options and start-up; the state file is state.c's).
 *
 * admit-cached is a memcached cache server whose storage is admit_lru with
 * adaptive W-TinyLFU admission.
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
#ifndef CACHED_SERVER_H
#define CACHED_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

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
	const char *state_file;   /* --state-file; NULL = none */
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
	enum { PROTO_UNKNOWN, PROTO_TEXT, PROTO_BINARY } proto;
	                         /* chosen by the first byte received */
	size_t bin_wait;         /* binary: bytes the request at in_off needs
	                          * buffered to run; 0 = header not read */
	bool bin_nomem;          /* binary: its value could not be buffered:
	                          * refused, and skipped */
	bool want_in, want_out;  /* the epoll interest */
};

/* Relaxed: see struct counters. */
static inline void
add(atomic_uint_fast64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static inline size_t
allowance(const struct options *o)
{
	return ALLOWANCE_BASE + 2 * o->max_line;
}

static inline size_t
pending_out(const struct conn *c)
{
	return c->out_len - c->out_off;
}

/* conn.c: buffers, charged to the --conn-memory pool past the allowance. */
bool budget(struct conn *c, size_t in_cap, size_t out_cap, bool force);
bool out_reserve(struct conn *c, size_t n, bool force);
void out_bytes_grow(struct conn *c, const void *p, size_t n);

/* Appends n bytes to the output (forced: a reply must not fail; if the
 * buffer cannot grow, the connection closes).  Inline: most replies are a
 * few bytes into room already there, and a literal's strlen folds. */
static inline void
out_bytes(struct conn *c, const void *p, size_t n)
{
	if (c->out_cap - c->out_len < n) {
		out_bytes_grow(c, p, n);
		return;
	}
	memcpy(c->out + c->out_len, p, n);
	c->out_len += n;
}

static inline void
out_str(struct conn *c, const char *s)
{
	out_bytes(c, s, strlen(s));
}
void out_fmt(struct conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
bool in_reserve(struct conn *c, size_t need);
/* conn.c: the connection loop. */
void conn_free(struct conn *c);
void conn_close(struct conn *c);
bool conn_io(struct conn *c, uint32_t events);

/* commands.c: the text commands. */
void execute(struct conn *c, struct cached_req *req);
void get_keys(struct conn *c);
bool starts_get(const char *buf, size_t n, bool *gets);
void do_update(struct conn *c, const struct cached_req *req, const char *data);
/* Writes s unless noreply. */
void reply(struct conn *c, bool noreply, const char *s);

/* binary.c: the binary protocol.  bin_request runs the request at
 * in_off if it is whole (false when it needs more input or the connection
 * is to close); bin_runnable says whether it is. */
bool bin_request(struct conn *c);
bool bin_runnable(const struct conn *c);

/* stats.c */
void do_stats(struct conn *c, const struct cached_req *req);

/* metadump.c: lru_crawler metadump */
void do_metadump(struct conn *c, const struct cached_req *req);

/* meta_cmd.c */
void meta_line(struct conn *c, const char *line, size_t len);
void do_meta(struct conn *c, const struct cached_meta *m, const char *data);

/* reply.c: the VALUE and meta reply lines, written straight into the
 * output buffer. */
struct value_out {
	struct conn *c;
	const char *key;
	size_t klen;
	bool refused;
};
void write_value(const struct cached_item *it, void *arg);
/* Room for a meta reply's line: its code, every flag with its value. */
#define META_LINE (8 + CACHED_META_FLAGS * 24 + CACHED_KEY_MAX + CACHED_OPAQUE_MAX)
struct meta_out {
	struct conn *c;
	const struct cached_meta *m;
	bool refused;
};
char *meta_flags(char *p, const struct cached_meta *m,
                 const struct cached_meta_result *r, bool hit);
void meta_write_hit(const struct cached_meta_result *r, void *arg);

/* workers.c */
void *worker_main(void *arg);
void listen_interest(struct worker *w, bool on);

#endif /* CACHED_SERVER_H */
