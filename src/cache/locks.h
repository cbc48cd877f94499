/*
 * locks.h - the shard mutex as a capability that clang's -Wthread-safety
 * checks (make check-locks builds src/cache with it).  Under gcc the
 * annotations expand to nothing.
 *
 * The rule: a function declared ADMIT_REQUIRES(s->mu) is called with that
 * mutex held; ADMIT_ACQUIRE / ADMIT_RELEASE say it takes or drops it.  A
 * field the mutex guards is marked ADMIT_GUARDED_BY(mu).
 */
#ifndef ADMIT_CACHE_LOCKS_H
#define ADMIT_CACHE_LOCKS_H

#include <pthread.h>
#include <stdbool.h>

#if defined(__clang__)
#define ADMIT_TS(x) __attribute__((x))
#else
#define ADMIT_TS(x)
#endif

#define ADMIT_CAPABILITY(name) ADMIT_TS(capability(name))
#define ADMIT_REQUIRES(m) ADMIT_TS(requires_capability(m))
#define ADMIT_ACQUIRE(m) ADMIT_TS(acquire_capability(m))
#define ADMIT_RELEASE(m) ADMIT_TS(release_capability(m))
#define ADMIT_TRY_ACQUIRE(r, m) ADMIT_TS(try_acquire_capability(r, m))
#define ADMIT_EXCLUDES(m) ADMIT_TS(locks_excluded(m))
#define ADMIT_NO_TS ADMIT_TS(no_thread_safety_analysis)

/* A pthread mutex the analysis can name. */
struct ADMIT_CAPABILITY("mutex") admit_mutex {
	pthread_mutex_t m;
};

/* glibc's adaptive mutex where there is one: a shard's mutex is held for a
 * few hundred nanoseconds, far less than a futex sleep and wake-up, so a
 * thread that finds it taken spins a little before it sleeps. */
static inline bool
admit_mutex_init(struct admit_mutex *mu)
{
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
	pthread_mutexattr_t a;
	bool ok;

	if (pthread_mutexattr_init(&a) != 0)
		return false;
	ok = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP) == 0 &&
	     pthread_mutex_init(&mu->m, &a) == 0;
	pthread_mutexattr_destroy(&a);
	return ok;
#else
	return pthread_mutex_init(&mu->m, NULL) == 0;
#endif
}

static inline void
admit_mutex_destroy(struct admit_mutex *mu)
{
	pthread_mutex_destroy(&mu->m);
}

static inline void admit_mutex_lock(struct admit_mutex *mu) ADMIT_ACQUIRE(*mu)
	ADMIT_NO_TS;
static inline void
admit_mutex_lock(struct admit_mutex *mu)
{
	pthread_mutex_lock(&mu->m);
}

static inline bool admit_mutex_trylock(struct admit_mutex *mu)
	ADMIT_TRY_ACQUIRE(true, *mu) ADMIT_NO_TS;
static inline bool
admit_mutex_trylock(struct admit_mutex *mu)
{
	return pthread_mutex_trylock(&mu->m) == 0;
}

static inline void admit_mutex_unlock(struct admit_mutex *mu) ADMIT_RELEASE(*mu)
	ADMIT_NO_TS;
static inline void
admit_mutex_unlock(struct admit_mutex *mu)
{
	pthread_mutex_unlock(&mu->m);
}

#endif /* ADMIT_CACHE_LOCKS_H */
