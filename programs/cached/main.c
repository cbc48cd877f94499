/*
 * main.c - admit-cached's options and start-up: the listener, the store,
 * the workers, then wait for SIGINT or SIGTERM and stop them.
 */
#include "config.h"  /* first: it defines _GNU_SOURCE */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server.h"
#include "state.h"

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
"A memcached cache server (text and binary protocols, one port); storage is\n"
"admit_lru with adaptive W-TinyLFU admission.\n"
"  -p, --port PORT          TCP port (default 11311)\n"
"  -l, --listen ADDR        numeric address to listen on (default 127.0.0.1)\n"
"  -t, --threads N          worker threads, one epoll loop each (default 4)\n"
"  -m, --memory MB          cache capacity in MiB: what the items cost in memory\n"
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
"      --state-file PATH    load the items saved in PATH before listening;\n"
"                           save them there on SIGINT or SIGTERM\n"
"  -h, --help               this text\n"
"Commands: get gets gat gats set add replace append prepend cas delete incr\n"
"decr touch flush_all verbosity stats version quit, and the meta commands\n"
"mg ms md ma mn, each as in memcached 1.6's text protocol, and its binary\n"
"protocol (a connection whose first byte is 0x80); \"stats\" adds\n"
"admission_admitted, admission_rejected, admission_window,\n"
"admission_filter_load and hit_ratio (admit-cached(1) lists every\n"
"difference from memcached).\n"
"SIGINT or SIGTERM stops the server (after saving --state-file).\n");
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
	enum { OPT_MAX_LINE = 256, OPT_IDLE, OPT_NO_ADMISSION, OPT_CONN_MEMORY,
	       OPT_STATE_FILE };
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
		{ "state-file", required_argument, NULL, OPT_STATE_FILE },
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
		case OPT_STATE_FILE:
			if (!*optarg)
				goto bad;
			o->state_file = optarg;
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

/* Makes worker w ready to start: its epoll set watches the listener, the
 * stop eventfd and its own wake eventfd.  False on failure. */
static bool
worker_ready(struct server *srv, struct worker *w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	w->srv = srv;
	pthread_mutex_init(&w->inbox_mu, NULL);
	atomic_init(&w->nconns, 0);
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	w->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->epfd < 0 || w->wakefd < 0 ||
	    cached_scratch_init(&w->scratch, srv->store))
		return false;
	listen_interest(w, true);
	if (!w->listening)
		return false;
	ev.data.ptr = &srv->tag_stop;
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, srv->stopfd, &ev) < 0)
		return false;
	ev.data.ptr = &w->wakefd;
	return epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->wakefd, &ev) == 0;
}

/* Stops the started workers and frees what the ready ones hold. */
static void
workers_stop(struct server *srv, unsigned started, unsigned ready)
{
	uint64_t one = 1;

	/* An eventfd stays readable once written: it wakes every worker. */
	(void)!write(srv->stopfd, &one, sizeof(one));
	for (unsigned t = 0; t < started; t++)
		pthread_join(srv->workers[t].tid, NULL);
	for (unsigned t = 0; t < ready; t++) {
		struct worker *w = &srv->workers[t];

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
}

static void
server_init(struct server *srv)
{
	srv->lfd = srv->stopfd = -1;
	pthread_mutex_init(&srv->spare_mu, NULL);
	srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	srv->started = time(NULL);
	atomic_init(&srv->curr_conns, 0);
	atomic_init(&srv->rejected_conns, 0);
	atomic_init(&srv->verbosity, 0);
	pthread_mutex_init(&srv->reset_mu, NULL);
	atomic_init(&srv->pool_used, 0);
	srv->pool_max = (size_t)(srv->opt.conn_memory_mb << 20);
}

static void
server_free(struct server *srv)
{
	free(srv->workers);
	if (srv->stopfd >= 0)
		close(srv->stopfd);
	if (srv->lfd >= 0)
		close(srv->lfd);
	cached_store_free(srv->store);
	if (srv->spare_fd >= 0)
		close(srv->spare_fd);
	pthread_mutex_destroy(&srv->spare_mu);
}

static double
secs_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) +
	       (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Makes the store, with the items of --state-file when it has good ones
 * (a refused file is said on stderr and left in place: the server starts
 * empty).  False when the store cannot be made. */
static bool
store_start(struct server *srv)
{
	const struct options *o = &srv->opt;
	struct cached_state s = { 0 };
	struct cached_state_counts n;
	struct timespec t0;
	const char *why = NULL;
	bool have = false;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (o->state_file) {
		rc = cached_state_open(o->state_file, &s, &why);
		have = rc == 0;
		if (rc == ENOENT)
			fprintf(stderr, "admit-cached: no state file %s yet: "
			        "starting empty\n", o->state_file);
		else if (rc)
			fprintf(stderr, "admit-cached: state file %s refused: "
			        "%s; starting empty\n", o->state_file, why);
	}
	if (cached_store_new(o->memory_mb << 20, o->max_item, o->admission,
	                     have ? s.seed : 0, &srv->store)) {
		cached_state_close(&s);
		return false;
	}
	if (!have)
		return true;
	rc = cached_state_load(srv->store, &s, &n);
	cached_state_close(&s);
	if (rc) {
		fprintf(stderr, "admit-cached: state file %s: %s; starting "
		        "empty\n", o->state_file, strerror(rc));
		return true;
	}
	fprintf(stderr, "admit-cached: loaded %" PRIu64 " of %" PRIu64
	        " items from %s in %.3f s (%" PRIu64 " expired, %" PRIu64
	        " larger than --max-item, %" PRIu64 " coldest beyond --memory, %"
	        PRIu64 " not stored)%s\n", n.loaded, s.count, o->state_file,
	        secs_since(&t0), n.expired, n.too_large, n.cold, n.failed,
	        n.sketch == ADMIT_OK ? ", and the admission sketch" : "");
	if (s.sketch_len && n.sketch != ADMIT_OK)
		fprintf(stderr, "admit-cached: state file %s: admission sketch "
		        "skipped (%s: %s); the items are loaded\n",
		        o->state_file, admit_strerror(n.sketch),
		        n.sketch == ADMIT_EINVAL ? "saved with another --memory"
		        : n.sketch == ADMIT_NOTFOUND ? "--no-admission"
		        : "damaged");
	return true;
}

/* Saves the items to --state-file; false (said on stderr) if it failed,
 * the file then as it was. */
static bool
store_save(struct server *srv)
{
	struct timespec t0;
	uint64_t count;
	int rc;

	if (!srv->opt.state_file || !srv->store)
		return true;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = cached_state_save(srv->store, srv->opt.state_file, &count);
	if (rc) {
		fprintf(stderr, "admit-cached: cannot save the items to %s: %s; "
		        "the file is left as it was\n", srv->opt.state_file,
		        strerror(rc));
		return false;
	}
	fprintf(stderr, "admit-cached: saved %" PRIu64 " items to %s in "
	        "%.3f s\n", count, srv->opt.state_file, secs_since(&t0));
	return true;
}

int
main(int argc, char **argv)
{
	struct server srv = { 0 };
	sigset_t sigs;
	unsigned started = 0, ready = 0;
	int sig, status = 1;

	if (parse_options(argc, argv, &srv.opt) < 0)
		return 2;
	fit_nofile(&srv.opt);
	server_init(&srv);

	/* Workers inherit the mask: only main's sigwait sees the signals. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (!store_start(&srv))
		goto out;
	srv.lfd = listen_on(&srv.opt);
	srv.stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	srv.workers = calloc(srv.opt.threads, sizeof(*srv.workers));
	if (srv.lfd < 0 || srv.stopfd < 0 || !srv.workers)
		goto out;
	/* Every worker is ready before any starts: the first to accept may
	 * give a connection to any other. */
	for (; ready < srv.opt.threads; ready++)
		if (!worker_ready(&srv, &srv.workers[ready])) {
			ready++;
			goto stop;
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
	workers_stop(&srv, started, ready);
	if (status == 0 && !store_save(&srv))
		status = 1;
out:
	server_free(&srv);
	return status;
}
