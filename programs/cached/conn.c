/*
 * conn.c - a connection's loop: reading, running every whole request
 * buffered (process), sending, and its buffers, whose growth past the
 * connection's allowance is charged to the --conn-memory pool (server.h
 * gives the limits).  Each connection is touched by its worker alone.
 */
#include "config.h"  /* first: it defines _GNU_SOURCE */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server.h"

/*
 * Charges the connection's buffers, were they in_cap and out_cap bytes, to
 * the shared pool (what passes its allowance); false, with nothing
 * changed, when the pool cannot cover them, unless force (a reply line of a
 * few bytes, which must not fail).  Relaxed: pool_used orders no other
 * memory, it is only a running total bounded by a compare-and-swap.
 */
bool
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
bool
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

void
out_bytes_grow(struct conn *c, const void *p, size_t n)
{
	if (!out_reserve(c, n, true)) {
		c->closing = true;  /* cannot answer: drop the client */
		return;
	}
	memcpy(c->out + c->out_len, p, n);
	c->out_len += n;
}

void
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
bool
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

/*
 * Works on the input of a connection that is not reading a request line
 * (the state says what it is doing); false when it needs more input.
 */
static bool
process_state(struct conn *c, char *buf, size_t avail)
{
	size_t used;

	switch (c->state) {
	case GET_KEYS:
		get_keys(c);
		return c->state != GET_KEYS;  /* else more input, or output
		                               * drained first */
	case SKIP_LINE: {
		const char *nl = memchr(buf, '\n', avail);

		c->in_off += nl ? (size_t)(nl - buf) + 1 : avail;
		if (!nl)
			return false;
		c->state = READ_LINE;
		return true;
	}
	case SWALLOW:
		used = avail < c->skip ? avail : (size_t)c->skip;
		c->in_off += used;
		c->skip -= used;
		if (c->skip)
			return false;
		c->state = READ_LINE;
		return true;
	case READ_DATA: {
		size_t need = (size_t)c->req.bytes + 2;

		if (avail < need)
			return false;  /* execute() made room for it */
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
		return true;
	}
	default:
		return true;
	}
}

/*
 * READ_LINE: runs the request line at buf, if it is whole; false when it
 * needs more input or the connection is to close.
 */
static bool
process_line(struct conn *c, char *buf, size_t avail)
{
	struct cached_req req;
	const char *nul;
	size_t len, used, lead;

	switch (cached_find_line(buf, avail, c->w->srv->opt.max_line, &len, &used)) {
	case CACHED_LINE_MORE:
		return false;
	case CACHED_LINE_TOO_LONG:
		if (starts_get(buf, avail, &c->gets)) {
			c->in_off += c->gets ? 5 : 4;
			c->gat = false;
			c->state = GET_KEYS;
			return true;
		}
		out_str(c, "CLIENT_ERROR line too long\r\n");
		add(&c->w->ctr.closed_limits, 1);
		c->closing = true;
		return false;
	case CACHED_LINE_OK:
		break;
	}
	c->in_off += used;
	c->last_progress = time(NULL);
	/* memcached reads a request line as a C string: it ends at its first
	 * NUL. */
	nul = memchr(buf, '\0', len);
	if (nul)
		len = (size_t)(nul - buf);
	/* Its tokenizer skips the spaces before the command. */
	for (lead = 0; lead < len && buf[lead] == ' '; lead++)
		;
	if (cached_meta_is(buf + lead, len - lead)) {
		meta_line(c, buf + lead, len - lead);
		return true;
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
		return false;
	case CACHED_PARSE_CLIENT_ERROR:
		if (!req.noreply)
			out_fmt(c, "CLIENT_ERROR %s\r\n", req.error);
		if (req.has_data) {
			c->skip = req.bytes + 2;
			c->state = SWALLOW;
		}
		break;
	}
	return true;
}

/* Runs every complete request buffered, until output backs up. */
static void
process(struct conn *c)
{
	while (!c->closing && pending_out(c) < OUT_HIGH) {
		char *buf = c->in + c->in_off;
		size_t avail = c->in_len - c->in_off;
		bool more;

		if (!avail)
			return;  /* every state waits for input (runnable()) */
		/* The first byte chooses the protocol, as in memcached. */
		if (c->proto == PROTO_UNKNOWN)
			c->proto = (unsigned char)buf[0] == 0x80 ? PROTO_BINARY
			                                         : PROTO_TEXT;
		if (c->state != READ_LINE)
			more = process_state(c, buf, avail);
		else if (c->proto == PROTO_BINARY)
			more = bin_request(c);
		else
			more = process_line(c, buf, avail);
		if (!more)
			return;
	}
}

/* ---- connections and the event loop ------------------------------------- */

/* Closes and frees a connection that is in no epoll set and no list. */
void
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

void
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
		if (c->proto == PROTO_BINARY)
			return bin_runnable(c);
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
bool
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
