/*
 * io.c - admit-dedup's reader, which cuts the input files, in order, into
 * batches of whole lines, and its buffered writer (cli.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void
grow_buf(struct reader *rd)
{
	char *nb = NULL;

	if (rd->cap <= SIZE_MAX / 2)
		nb = realloc(rd->buf, rd->cap * 2);
	if (!nb) {
		fprintf(stderr, PROG ": out of memory for a line of %zu bytes\n",
		        rd->used);
		exit(EXIT_FULL);
	}
	rd->buf = nb;
	rd->cap *= 2;
}

/* End of one input: a last line without '\n' is still a line. */
static void
end_input(struct reader *rd)
{
	if (rd->used > 0 && rd->buf[rd->used - 1] != '\n') {
		if (rd->used == rd->cap)
			grow_buf(rd);
		rd->buf[rd->used++] = '\n';
	}
	if (rd->fd != STDIN_FILENO)
		close(rd->fd);
	rd->fd = -1;
}

static void
read_more(struct reader *rd)
{
	ssize_t r;

	while (rd->fd < 0) {
		const char *name;

		if (rd->next >= rd->nfiles) {
			rd->done = true;
			return;
		}
		name = rd->files[rd->next++];
		if (strcmp(name, "-") == 0) {
			rd->fd = STDIN_FILENO;
			rd->name = "standard input";
		} else {
			rd->fd = open(name, O_RDONLY);
			rd->name = name;
			if (rd->fd < 0) {
				fprintf(stderr, PROG ": cannot open '%s': %s\n", name,
				        strerror(errno));
				rd->status = EXIT_INPUT;
			}
		}
	}
	do
		r = read(rd->fd, rd->buf + rd->used, rd->cap - rd->used);
	while (r < 0 && errno == EINTR);
	if (r > 0) {
		rd->used += (size_t)r;
		return;
	}
	if (r < 0) {
		fprintf(stderr, PROG ": cannot read '%s': %s\n", rd->name,
		        strerror(errno));
		rd->status = EXIT_INPUT;
	}
	end_input(rd);
}

size_t
next_batch(struct reader *rd, struct line *lines, size_t max, size_t *cut)
{
	size_t n = 0, start = rd->head;

	for (;;) {
		while (n < max && rd->scan < rd->used) {
			char *nl = memchr(rd->buf + rd->scan, '\n',
			                  rd->used - rd->scan);
			size_t e;

			if (!nl) {
				rd->scan = rd->used;
				break;
			}
			e = (size_t)(nl - rd->buf);
			lines[n].off = start - rd->head;
			lines[n].len = e - start;
			n++;
			start = rd->scan = e + 1;
		}
		if (n == max || rd->done)
			break;
		if (rd->used == rd->cap && rd->head > 0) {
			/* Drop the finished batches' bytes once per buffer-full,
			 * not after every batch: with a small --horizon a batch
			 * is a line, and moving the rest of a 4 MB buffer per
			 * line made such runs 200 times slower. */
			memmove(rd->buf, rd->buf + rd->head, rd->used - rd->head);
			rd->used -= rd->head;
			rd->scan -= rd->head;
			start -= rd->head;
			rd->head = 0;
		}
		if (n > 0 && rd->used == rd->cap)
			break;
		if (rd->used == rd->cap)
			grow_buf(rd); /* one line longer than the buffer */
		read_more(rd);
	}
	*cut = start - rd->head;
	return n;
}

void
consume(struct reader *rd, size_t cut)
{
	rd->head += cut;
}

#define OUT_CAP ((size_t)1 << 20)

/* ---- output ---------------------------------------------------------------- */

static char out_buf[OUT_CAP];
static size_t out_len;

static void
write_all(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t r = write(STDOUT_FILENO, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, PROG ": write error on standard output: %s\n",
			        strerror(errno));
			exit(EXIT_OUTPUT);
		}
		p += r;
		n -= (size_t)r;
	}
}

void
out_flush(void)
{
	write_all(out_buf, out_len);
	out_len = 0;
}

void
out_put(const char *p, size_t n)
{
	if (out_len + n > OUT_CAP)
		out_flush();
	if (n > OUT_CAP)
		write_all(p, n);
	else {
		memcpy(out_buf + out_len, p, n);
		out_len += n;
	}
}
