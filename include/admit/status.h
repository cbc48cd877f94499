/*
 * admit/status.h - status codes shared by every admit call.
 */
#ifndef ADMIT_STATUS_H
#define ADMIT_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The result of every fallible admit call.  ADMIT_OK is 0 so that
 * "if (st != ADMIT_OK)" and "if (st)" both read naturally.
 */
enum admit_status {
	ADMIT_OK = 0,	/* done */
	ADMIT_FULL,	/* no room: the structure was left unchanged */
	ADMIT_EXISTS,	/* insert_unique: the key is already there */
	ADMIT_NOTFOUND,	/* delete or lookup of a key that is not there */
	ADMIT_REJECTED,	/* admission policy kept the incumbent */
	ADMIT_NOMEM,	/* an allocation failed; nothing was changed */
	ADMIT_EINVAL,	/* a bad argument (NULL, zero or absurd size, wrong mode) */
	ADMIT_ECORRUPT,	/* a snapshot file is truncated, altered or foreign */
	ADMIT_EIO,	/* the operating system refused a read or write */
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

#ifdef __cplusplus
}
#endif

#endif /* ADMIT_STATUS_H */
