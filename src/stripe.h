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

/* One try to take the stripe: true if taken. */
static inline bool
stripe_try_lock(_Atomic uint32_t *s)
{
	/* relaxed: only a hint; the CAS below is what orders. */
	uint32_t v = atomic_load_explicit(s, memory_order_relaxed);

	/* acquire: pairs with the release in stripe_unlock(). */
	return !(v & 1) &&
	       atomic_compare_exchange_weak_explicit(s, &v, v + 1,
	           memory_order_acquire, memory_order_relaxed);
}

/* The wait, out of line: it may call sched_yield(), and the registers that
 * call needs saved would cost every lock, not just the contended one. */
static __attribute__((noinline, cold, unused)) void
stripe_lock_wait(_Atomic uint32_t *s)
{
	for (unsigned spins = 0; !stripe_try_lock(s); spins++)
		admit_backoff(spins);
}

static inline void
stripe_lock(_Atomic uint32_t *s)
{
	if (__builtin_expect(!stripe_try_lock(s), 0))
		stripe_lock_wait(s);
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

/*
 * The reader: the one seqlock read loop, for every reader of data guarded by
 * two stripes (the same stripe twice is fine).
 *
 * read(arg) loads the guarded words with acquire and answers whether what
 * it found stands without validation: a fingerprint that was in the table
 * at the instant it was read, say.  Otherwise the try stands only if neither
 * stripe was odd before the reads nor moved after them.
 *
 * Cost, one thread, no writer: two loads of stripe words before the data
 * (a 16 KiB array of them that stays in L1/L2) and, for an answer that
 * needs it, two after, with a compare and a branch each, and no store, no
 * locked instruction, no fence (acquire loads are plain moves on x86-64).
 * A cuckoo lookup's first try uses the one-stripe form below (half the
 * loads, no branch before the data); its retries, and readers that need
 * two words as one consistent pair, use this loop.
 */
struct stripe_reader {
	const _Atomic uint32_t *a, *b;
	/* The two values read at the begin, a's in the low half: one
	 * register to keep across the reads instead of two, which spares an
	 * inlined lookup a callee-saved register (a push and a pop). */
	uint64_t v;
};

/* Both stripes' values, a's in the low half. */
static inline __attribute__((always_inline)) uint64_t
stripe_pair_load(const struct stripe_reader *r)
{
	/* acquire: see stripe_read_begin() and stripe_read_end(). */
	uint64_t va = atomic_load_explicit(r->a, memory_order_acquire);
	uint64_t vb = atomic_load_explicit(r->b, memory_order_acquire);

	return va | vb << 32;
}

enum stripe_outcome {
	STRIPE_ANSWER,	/* read() said its answer needs no validation */
	STRIPE_VALID,	/* no writer took either stripe during the reads */
	STRIPE_BUSY,	/* a writer held a stripe: nothing was read */
	STRIPE_CHANGED,	/* a writer took a stripe meanwhile: read again */
};

/* Start a read: false if a writer holds either stripe (read nothing).
 * Always inlined, as is the end: they are a few loads, cheaper than the
 * call they would otherwise be. */
static inline __attribute__((always_inline)) bool
stripe_read_begin(struct stripe_reader *r)
{
	/* acquire: pairs with the release in stripe_unlock(), so the reads
	 * that follow see every store of the writer that made these values. */
	uint32_t va = atomic_load_explicit(r->a, memory_order_acquire);
	uint32_t vb = atomic_load_explicit(r->b, memory_order_acquire);

	r->v = va | (uint64_t)vb << 32;
	return !((va | vb) & 1);
}

/* After the reads: true if no writer took either stripe since the begin. */
static inline __attribute__((always_inline)) bool
stripe_read_end(const struct stripe_reader *r)
{
	/* acquire: keeps these loads after the reader's acquire loads of the
	 * guarded words, and pairs with the writer's release stores of them
	 * (a word that is new implies the odd value before it). */
	return stripe_pair_load(r) == r->v;
}

/*
 * The one-stripe form, for a reader that reads several words in order and
 * whose answer needs only the last one to have stayed put meanwhile (a
 * cuckoo miss: cuckoo_probe.h says why).  stripe_peek() before the first read,
 * stripe_unchanged() after the last: true if the stripe was even at the
 * peek and has not moved since, so no writer changed the words it guards
 * between the two.  One load each and no branch at the peek.
 */
static inline __attribute__((always_inline)) uint32_t
stripe_peek(const _Atomic uint32_t *s)
{
	/* acquire: pairs with the release in stripe_unlock(), and keeps the
	 * guarded reads after it. */
	return atomic_load_explicit(s, memory_order_acquire);
}

static inline __attribute__((always_inline)) bool
stripe_unchanged(const _Atomic uint32_t *s, uint32_t v)
{
	/* acquire: as in stripe_read_end().  One compare says both "even at
	 * the peek" and "unchanged": an odd v's stripe could equal v & ~1
	 * again only by wrapping, the reuse every seqlock already assumes
	 * does not happen within one read. */
	return atomic_load_explicit(s, memory_order_acquire) == (v & ~1u);
}

/* One try, no waiting.  A hot caller writes this try inline from the two
 * calls above (a callback through a pointer is not inlined by the
 * compiler) and leaves the loop below out of line. */
static inline enum stripe_outcome
stripe_read_try(struct stripe_reader *r, bool (*read)(void *arg), void *arg)
{
	if (!stripe_read_begin(r))
		return STRIPE_BUSY;
	if (read(arg))
		return STRIPE_ANSWER;
	return stripe_read_end(r) ? STRIPE_VALID : STRIPE_CHANGED;
}

/* Try until the outcome stands, waiting out writers; *changed counts the
 * tries a writer spoiled (may be NULL).  Returns STRIPE_ANSWER or
 * STRIPE_VALID.  Optimistic, blocking on writers: a reader never writes
 * shared memory but waits while a writer holds a stripe. */
static inline enum stripe_outcome
stripe_read(struct stripe_reader *r, bool (*read)(void *arg), void *arg,
            _Atomic uint64_t *changed)
{
	for (unsigned tries = 0;; tries++) {
		enum stripe_outcome o = stripe_read_try(r, read, arg);

		if (o == STRIPE_ANSWER || o == STRIPE_VALID)
			return o;
		/* relaxed: an event counter; it orders nothing. */
		if (o == STRIPE_CHANGED && changed)
			atomic_fetch_add_explicit(changed, 1, memory_order_relaxed);
		admit_backoff(tries);
	}
}

#endif /* ADMIT_STRIPE_H */
