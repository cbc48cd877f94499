/*
 * stripe.h - seqlock stripes.
 *
 * A stripe is one 32-bit sequence word.  Even: free.  Odd: a writer holds it.
 * Writers serialise on it like a spinlock; readers never write it: they read
 * it before and after reading the data it guards and retry if it was odd or
 * moved.
 *
 * Ordering (Boehm, "Can seqlocks get along with programming language memory
 * models?", MSPC 2012), in a form ThreadSanitizer checks, since it does not
 * model stand-alone fences:
 *  - the writer's CAS to odd is acquire (pairs with the release in
 *    stripe_unlock() of the previous holder);
 *  - the writer stores the guarded words with release, so a reader whose
 *    acquire load sees a new word also sees the odd sequence before it;
 *  - the reader loads the guarded words with acquire, so its second load of
 *    the sequence cannot move above them;
 *  - stripe_unlock() publishes the even value with release.
 * On x86-64 all of these compile to plain moves, bar the CAS.
 */
#ifndef ADMIT_STRIPE_H
#define ADMIT_STRIPE_H

#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>

static inline void
admit_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Spin briefly, then give the CPU away: with more threads than cores the
 * holder we wait for may not be running at all. */
static inline void
admit_backoff(unsigned spins)
{
	if (spins < 32)
		admit_cpu_relax();
	else
		sched_yield();
}

static inline void
stripe_lock(_Atomic uint32_t *s)
{
	for (unsigned spins = 0;; spins++) {
		/* relaxed: only a hint; the CAS below is what orders. */
		uint32_t v = atomic_load_explicit(s, memory_order_relaxed);

		/* acquire: pairs with the release in stripe_unlock(). */
		if (!(v & 1) &&
		    atomic_compare_exchange_weak_explicit(s, &v, v + 1,
		        memory_order_acquire, memory_order_relaxed))
			return;
		admit_backoff(spins);
	}
}

static inline void
stripe_unlock(_Atomic uint32_t *s)
{
	/* relaxed: we hold the stripe, so this reads our own odd value. */
	uint32_t v = atomic_load_explicit(s, memory_order_relaxed);

	/* release: publishes the guarded stores to the next holder and to
	 * readers that validate against the new even value. */
	atomic_store_explicit(s, v + 1, memory_order_release);
}

/* A reader's snapshot of a stripe: waits out a writer that holds it. */
static inline uint32_t
stripe_read_begin(const _Atomic uint32_t *s)
{
	for (unsigned spins = 0;; spins++) {
		/* acquire: pairs with the release in stripe_unlock(). */
		uint32_t v = atomic_load_explicit(s, memory_order_acquire);

		if (!(v & 1))
			return v;
		admit_backoff(spins);
	}
}

/* True if no writer took the stripe since stripe_read_begin() returned v. */
static inline bool
stripe_read_valid(const _Atomic uint32_t *s, uint32_t v)
{
	/* acquire: keeps this load after the guarded acquire loads before it
	 * and pairs with the writer's release stores of guarded words. */
	return atomic_load_explicit(s, memory_order_acquire) == v;
}

#endif /* ADMIT_STRIPE_H */
