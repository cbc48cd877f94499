/*
 * workers.c - the workers' loops and accepting: each worker runs its own
 * epoll set over the listener and the connections it owns; the one that
 * accepts a connection gives it to the worker with the fewest (server.h).
 */
#include "config.h"  /* first: it defines _GNU_SOURCE */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server.h"

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
void
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

void *
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
