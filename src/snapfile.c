/*
 * snapfile.c - opening and atomically replacing state files (snapfile.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapfile.h"

enum admit_status
snapfile_open(const char *path, int *fd, uint64_t *size)
{
	struct stat sb;
	int d, fl;

	/* O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer,
	 * before fstat could tell us it is not a file. */
	d = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (d < 0)
		return ADMIT_EIO;
	if (fstat(d, &sb) != 0) {
		close(d);
		return ADMIT_EIO;
	}
	if (!S_ISREG(sb.st_mode)) {
		close(d);
		errno = EINVAL;
		return ADMIT_ENOTREG;
	}
	/* Back to blocking reads (they never block on a regular file, but a
	 * caller's fdopen should see an ordinary descriptor). */
	fl = fcntl(d, F_GETFL);
	if (fl < 0 || fcntl(d, F_SETFL, fl & ~O_NONBLOCK) != 0) {
		close(d);
		return ADMIT_EIO;
	}
	*fd = d;
	*size = (uint64_t)sb.st_size;
	return ADMIT_OK;
}

static int
write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The file path names: path itself, or what a chain of symlinks leads to,
 * existing or not yet (a rename over the link would replace the link with a
 * file).  NULL with errno set: ENOMEM, ELOOP, or readlink's error. */
static char *
target_of(const char *path)
{
	char *cur = strdup(path);

	for (int hops = 0; cur; hops++) {
		struct stat sb;
		char *link, *next, *slash;
		size_t len;
		ssize_t n;

		if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode))
			return cur;
		if (hops == 40) {	/* the kernel's own limit */
			errno = ELOOP;
			break;
		}
		/* st_size is the link's length (0 for some /proc links). */
		len = sb.st_size > 0 ? (size_t)sb.st_size : 4095;
		link = malloc(len + 1);
		if (!link)
			break;
		n = readlink(cur, link, len + 1);
		if (n < 0 || (size_t)n > len) {
			if (n >= 0)
				errno = ENAMETOOLONG;	/* grew under us */
			free(link);
			break;
		}
		link[n] = '\0';
		/* A relative link is relative to the link's directory. */
		slash = strrchr(cur, '/');
		if (link[0] == '/' || !slash) {
			next = link;
		} else {
			size_t d = (size_t)(slash - cur) + 1;

			next = malloc(d + (size_t)n + 1);
			if (next) {
				memcpy(next, cur, d);
				memcpy(next + d, link, (size_t)n + 1);
			}
			free(link);
			if (!next)
				break;
		}
		free(cur);
		cur = next;
	}
	free(cur);
	return NULL;
}

enum admit_status
snapfile_write(const char *path, const struct snapfile_part *parts, size_t n)
{
	enum admit_status st = ADMIT_EIO;
	char *target, *tmp = NULL;
	struct stat sb;
	bool created = false;
	int fd = -1, err;

	target = target_of(path);
	if (!target)
		return errno == ENOMEM ? ADMIT_NOMEM : ADMIT_EIO;
	/* Only a regular file (or nothing yet) may be replaced: a rename over
	 * a device node as root would swap it for a file. */
	if (stat(target, &sb) == 0) {
		if (!S_ISREG(sb.st_mode)) {
			st = ADMIT_ENOTREG;
			errno = EINVAL;
			goto out;
		}
	} else if (errno != ENOENT) {
		goto out;
	}
	tmp = malloc(strlen(target) + sizeof(".tmp.XXXXXX"));
	if (!tmp) {
		st = ADMIT_NOMEM;
		goto out;
	}
	strcpy(tmp, target);
	strcat(tmp, ".tmp.XXXXXX");
	fd = mkstemp(tmp);
	if (fd < 0)
		goto out;
	created = true;
	for (size_t i = 0; i < n; i++)
		if (write_all(fd, parts[i].data, parts[i].len) != 0)
			goto out;
	if (fsync(fd) != 0)
		goto out;
	err = close(fd);
	fd = -1;
	if (err != 0 || rename(tmp, target) != 0)
		goto out;
	st = ADMIT_OK;
out:
	err = errno;
	if (fd >= 0)
		close(fd);
	if (st != ADMIT_OK && created)
		(void)unlink(tmp);
	free(tmp);
	free(target);
	errno = err;
	return st;
}
