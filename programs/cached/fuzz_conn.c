/*
 * fuzz_conn.c - libFuzzer target over a whole admit-cached connection:
 * the input is written to one end of a socket pair, half-closed, and the
 * server's connection loop (conn_io) runs on the other end until it closes,
 * so the text protocol, the meta commands and the binary protocol (an
 * input whose first byte is 0x80) are read, run and answered as a client's
 * bytes are.  A reply stream that begins with 0x81 must be whole binary
 * packets.  The store is made once and shared by the inputs.
 * Build: make fuzz (needs clang); run: programs/cached/fuzz_conn.
 */
#include "config.h"  /* first: it defines _GNU_SOURCE */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct server srv;
static struct worker *w;

static void
setup(void)
{
	srv.opt = (struct options){ .listen = "127.0.0.1", .port = "0",
	                            .threads = 1, .max_conns = 16,
	                            .idle_timeout = 0, .memory_mb = 8,
	                            .conn_memory_mb = 4, .max_item = 64 << 10,
	                            .max_line = 1024, .admission = true };
	srv.pool_max = (size_t)srv.opt.conn_memory_mb << 20;
	srv.started = time(NULL);
	srv.lfd = srv.stopfd = srv.spare_fd = -1;
	pthread_mutex_init(&srv.reset_mu, NULL);
	pthread_mutex_init(&srv.spare_mu, NULL);
	if (cached_store_new((uint64_t)srv.opt.memory_mb << 20, srv.opt.max_item,
	                     true, 0, &srv.store))
		abort();
	w = calloc(1, sizeof(*w));
	srv.workers = w;
	w->srv = &srv;
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	w->wakefd = -1;
	pthread_mutex_init(&w->inbox_mu, NULL);
	if (!w || w->epfd < 0 || cached_scratch_init(&w->scratch, srv.store))
		abort();
}

/* Reads what the server sent; appended to *out (at most cap bytes kept). */
static void
drain(int fd, unsigned char *out, size_t cap, size_t *len)
{
	unsigned char buf[4096];
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		size_t k = (size_t)n < cap - *len ? (size_t)n : cap - *len;

		memcpy(out + *len, buf, k);
		*len += k;
	}
}

/* A binary reply stream: whole packets, each with magic 0x81. */
static void
check_binary(const unsigned char *p, size_t n, size_t cap)
{
	size_t i = 0;

	while (i + 24 <= n) {
		uint32_t body = (uint32_t)p[i + 8] << 24 | (uint32_t)p[i + 9] << 16 |
		                (uint32_t)p[i + 10] << 8 | p[i + 11];
		uint16_t key = (uint16_t)(p[i + 2] << 8 | p[i + 3]);

		assert(p[i] == 0x81);
		assert((uint32_t)key + p[i + 4] <= body);
		i += 24 + (size_t)body;
	}
	assert(i == n || n == cap);  /* no torn packet (unless cut here) */
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned char out[1 << 20];
	size_t olen = 0, sent = 0;
	int sv[2];
	struct conn *c;
	bool open = true;

	if (!srv.store)
		setup();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv))
		abort();
	c = calloc(1, sizeof(*c));
	c->in = malloc(IN_MIN);
	if (!c || !c->in)
		abort();
	c->fd = sv[0];
	c->w = w;
	c->in_cap = IN_MIN;
	c->last_progress = time(NULL);
	c->want_in = true;
	atomic_fetch_add(&srv.curr_conns, 1);
	atomic_fetch_add(&w->nconns, 1);
	/* Bounded: each round either moves input or output, or ends. */
	for (int round = 0; open && round < 100000; round++) {
		if (sent < size) {
			ssize_t n = send(sv[1], data + sent, size - sent, MSG_DONTWAIT);

			if (n > 0)
				sent += (size_t)n;
			if (sent == size)
				shutdown(sv[1], SHUT_WR);
		} else if (size == 0 && round == 0) {
			shutdown(sv[1], SHUT_WR);
		}
		open = conn_io(c, EPOLLIN | EPOLLOUT);
		drain(sv[1], out, sizeof(out), &olen);
	}
	if (open)
		abort();  /* the connection never finished */
	conn_free(c);
	drain(sv[1], out, sizeof(out), &olen);
	close(sv[1]);
	if (size && data[0] == 0x80)
		check_binary(out, olen, sizeof(out));
	return 0;
}
