/*
 * admit/status.h - status codes shared by every admit call.
 */
#ifndef ADMIT_STATUS_H
#define ADMIT_STATUS_H

/*
 * libadmit is compiled with -fvisibility=hidden: only what a public header
 * declares between ADMIT_API_BEGIN and ADMIT_API_END is exported, so an
 * internal function is hidden where it is defined, whatever its name.
 * (For a user of the headers these change nothing.)
 */
#if defined(__GNUC__) || defined(__clang__)
#define ADMIT_API_BEGIN _Pragma("GCC visibility push(default)")
#define ADMIT_API_END _Pragma("GCC visibility pop")
#else
#define ADMIT_API_BEGIN
#define ADMIT_API_END
#endif

#ifdef __cplusplus
extern "C" {
#endif

ADMIT_API_BEGIN

/*
 * The result of every fallible admit call.  ADMIT_OK is 0 so that
 * "if (st != ADMIT_OK)" and "if (st)" both read naturally.  Values are
 * stable: new codes are appended, never renumbered.
 */
enum admit_status {
	ADMIT_OK = 0,	/* done */
	ADMIT_FULL,	/* the filter is full: it was left unchanged */
	ADMIT_EXISTS,	/* insert_unique: the key is already there */
	ADMIT_NOTFOUND,	/* delete or lookup of a key that is not there */
	ADMIT_REJECTED,	/* admission policy kept the incumbent */
	ADMIT_NOMEM,	/* an allocation failed; nothing was changed */
	ADMIT_EINVAL,	/* a bad argument (NULL, zero or absurd size, wrong mode) */
	ADMIT_ECORRUPT,	/* a snapshot file is truncated, altered or foreign */
	ADMIT_EIO,	/* the operating system refused a read or write */
	/* 0.2.0: ADMIT_FULL no longer stands for the next two. */
	ADMIT_EBUFFER,	/* the caller's buffer is too small; nothing changed */
	ADMIT_ETOOBIG,	/* an entry, key or value larger than the structure
			   can ever hold; nothing changed */
	ADMIT_ENOTREG,	/* a path names something other than a regular file
			   (a directory, FIFO, device or socket) */
	ADMIT_LOADING,	/* get_or_load with ADMIT_LRU_NOWAIT: another caller
			   is loading the key */
};

/*
 * admit_strerror - a short English message for a status.
 *
 * Unknown values (for example a cast from a bad integer) give
 * "unknown admit status" rather than NULL, so the result can always be
 * printed.
 *
 * Thread-safety: safe; returns a pointer to static storage.
 */
const char *admit_strerror(enum admit_status s);

ADMIT_API_END

#ifdef __cplusplus
}
#endif

#endif /* ADMIT_STATUS_H */
