/*
 * snapfile.h - the one way admit reads and writes a state file: the
 * little-endian integer plumbing, an open that refuses anything but a regular
 * file without blocking, and a writer that replaces the file atomically.
 *
 * Shared by the library (cuckoo_snapshot.c) and admit-dedup, which compiles
 * snapfile.c in; the names have no admit_ prefix, so libadmit never exports
 * them (doc/design.md §8).
 */
#ifndef ADMIT_SNAPFILE_H
#define ADMIT_SNAPFILE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <admit/status.h>

/* Byte by byte, so the format is the same on every host and no alignment is
 * assumed; compilers turn each into one load or store on little-endian. */
static inline void
snap_put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void
snap_put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t
snap_get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t
snap_get64(const unsigned char *p)
{
	return (uint64_t)snap_get32(p) | (uint64_t)snap_get32(p + 4) << 32;
}

/*
 * Opens path for reading.  The file is opened non-blocking and its kind
 * checked before anything is read, so a FIFO without a writer (whose
 * blocking open would wait forever) is refused like a directory or a device.
 * Returns ADMIT_OK with *fd (blocking again) and *size; ADMIT_ENOTREG for
 * anything but a regular file (after following symlinks); ADMIT_EIO with
 * errno set if it cannot be opened.
 */
enum admit_status snapfile_open(const char *path, int *fd, uint64_t *size);

/* One piece of a file to write. */
struct snapfile_part {
	const void *data;
	size_t len;
};

/*
 * Writes the n parts, in order, as the new contents of path: into a
 * temporary file (mode 0600) beside the file path names, fsynced, closed
 * and renamed over it, so a crash leaves the old contents or the new ones,
 * never a torn file.  A symlink is followed to the file it names (the link
 * stays); a path naming an existing non-regular file (a directory, FIFO,
 * device or socket) is refused before anything is written.
 * Returns ADMIT_OK; ADMIT_ENOTREG; ADMIT_NOMEM; ADMIT_EIO with errno set
 * (no temporary file is left behind).  Not atomic against another process
 * replacing path between the check and the rename.
 */
enum admit_status snapfile_write(const char *path,
                                 const struct snapfile_part *parts, size_t n);

#endif /* ADMIT_SNAPFILE_H */
