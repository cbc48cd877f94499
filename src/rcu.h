/*
 * rcu.h - every use of liburcu in admit goes through this header
 * (doc/design.md §9.4, §9.5).
 *
 * Flavour: urcu-bp, which registers a thread on its first read-side lock,
 * because admit runs on threads it did not create.  Read-side sections may
 * nest and may block (admit_lru takes a shard mutex inside one); nothing may
 * wait for a grace period while holding a lock a reader can wait for, so
 * admit never calls synchronize_rcu: memory goes through admit_rcu_call.
 *
 * Pointers that readers follow are C11 atomics, published with release and
 * read with acquire, in every build: house style wants a C11 atomic for
 * every shared access, on x86-64 both are the plain moves that
 * rcu_assign_pointer and rcu_dereference compile to, and the cache index's resize check
 * needs acquire (consume would not order its re-check; gcc promotes consume
 * to acquire anyway).
 *
 * ThreadSanitizer: Debian's liburcu 0.13 is not instrumented and has no
 * annotations, so TSan sees neither that a grace period puts every
 * read-side section that was running before admit_rcu_call ahead of the
 * callback, nor that admit_rcu_call itself comes before its callback, nor
 * that every callback comes before rcu_barrier returns.  In the TSan build
 * (configure --enable-tsan defines ADMIT_TSAN) we tell it: each read-side
 * unlock, each admit_rcu_call and the end of each callback release a token;
 * the start of each callback and the return of admit_rcu_barrier acquire it.
 * The token is one for the library (defined in src/cache/reclaim.c): a
 * callback may free what another file's readers read.  What is left is inside liburcu-bp
 * (rcu_barrier's own bookkeeping): tests/tsan.supp names it.
 */
#ifndef ADMIT_RCU_H
#define ADMIT_RCU_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <urcu-bp.h>
#include <urcu/static/urcu-bp.h>

#if ADMIT_TSAN
#include <sanitizer/tsan_interface.h>

extern char admit_rcu_token;
#define ADMIT_RCU_TSAN_RELEASE() __tsan_release(&admit_rcu_token)
#define ADMIT_RCU_TSAN_ACQUIRE() __tsan_acquire(&admit_rcu_token)
#else
#define ADMIT_RCU_TSAN_RELEASE() ((void)0)
#define ADMIT_RCU_TSAN_ACQUIRE() ((void)0)
#endif

/* Publishes v in the reader-visible pointer *slot: whatever was written to
 * *v before is seen by a reader that loads v with admit_rcu_deref. */
#define admit_rcu_publish(slot, v) \
	atomic_store_explicit((slot), (v), memory_order_release)

/* Loads a pointer published with admit_rcu_publish; pairs with its release.
 * Call with admit_rcu_read_lock held, or with the writers' lock. */
#define admit_rcu_deref(slot) \
	atomic_load_explicit((slot), memory_order_acquire)

static inline void
admit_rcu_read_lock(void)
{
	urcu_bp_read_lock();
}

static inline void
admit_rcu_read_unlock(void)
{
	ADMIT_RCU_TSAN_RELEASE();
	urcu_bp_read_unlock();
}

/*
 * The same read-side section for a hot path, on a handle: this thread's
 * urcu-bp reader counter and liburcu's membarrier flag, looked up once by
 * admit_rcu_read_begin() and passed to admit_rcu_read_end(), where
 * urcu_bp_read_lock() and _unlock() look the reader up twice each (a call
 * to __tls_get_addr each: liburcu's thread-local is in another shared
 * object) and the flag once each.  The steps on the counter are
 * those of liburcu's inline read side (<urcu/static/urcu-bp.h>, the
 * _LGPL_SOURCE API, stable within its soname), on the handle: the same
 * counter, the same fence (urcu_bp_smp_mb_slave's), so sections of either
 * form nest in each other and grace periods see both.  Our accesses to the
 * counter and to the grace-period phase are C11 atomics, relaxed: each is
 * one aligned word that liburcu's writer side reads or writes whole, and
 * the fence, not the access, orders them with the section.  The handle's
 * counter is the counter itself, the reader's first member, not the reader:
 * liburcu's registry places readers 64 bytes apart where the header
 * declares them 128-aligned, so an access through struct urcu_bp_reader
 * would be misaligned for its type (UBSan says so).  Valid until its
 * thread exits; keep it no longer than the section.
 */
_Static_assert(offsetof(struct urcu_bp_reader, ctr) == 0,
               "a reader's counter is its first member");
_Static_assert(sizeof(_Atomic unsigned long) == sizeof(unsigned long) &&
               _Alignof(_Atomic unsigned long) == _Alignof(unsigned long) &&
               sizeof(_Atomic int) == sizeof(int) &&
               _Alignof(_Atomic int) == _Alignof(int),
               "liburcu's counters and flag can be accessed as C11 atomics");

struct admit_rcu_section {
	_Atomic unsigned long *ctr;     /* this thread's reader counter */
	bool membarrier;                /* urcu_bp_has_sys_membarrier, which
	                                 * liburcu sets once at its load */
};

/* urcu_bp_smp_mb_slave() on the flag the section read at its begin: a
 * compiler barrier where liburcu's writers use membarrier(), else a full
 * fence. */
static inline void
admit_rcu_mb_slave(bool membarrier)
{
	if (caa_likely(membarrier))
		cmm_barrier();
	else
		cmm_smp_mb();
}

static inline struct admit_rcu_section
admit_rcu_read_begin(void)
{
	struct urcu_bp_reader *r = URCU_TLS(urcu_bp_reader);
	struct admit_rcu_section sec;
	_Atomic unsigned long *phase;
	unsigned long tmp;

	if (__builtin_expect(!r, 0)) {
		urcu_bp_register();
		r = URCU_TLS(urcu_bp_reader);
	}
	sec.ctr = (_Atomic unsigned long *)(void *)r;
#ifdef CONFIG_RCU_FORCE_SYS_MEMBARRIER
	sec.membarrier = urcu_bp_has_sys_membarrier;   /* a constant then */
#else
	/* relaxed: liburcu's constructor writes the flag once, before any
	 * thread can begin a section. */
	sec.membarrier = atomic_load_explicit(
	    (_Atomic int *)(void *)&urcu_bp_has_sys_membarrier,
	    memory_order_relaxed);
#endif
	phase = (_Atomic unsigned long *)(void *)&urcu_bp_gp.ctr;
	/* Not reordered by the compiler with a mutex the caller takes. */
	atomic_signal_fence(memory_order_seq_cst);
	/* relaxed: only this thread writes its counter. */
	tmp = atomic_load_explicit(sec.ctr, memory_order_relaxed);
	if (__builtin_expect(!(tmp & URCU_BP_GP_CTR_NEST_MASK), 1)) {
		/* Outermost: take the grace period's phase (relaxed: the
		 * fence below orders the section after the store). */
		atomic_store_explicit(sec.ctr, atomic_load_explicit(phase,
		                      memory_order_relaxed), memory_order_relaxed);
		admit_rcu_mb_slave(sec.membarrier);
	} else {
		/* relaxed: a nested section changes no phase. */
		atomic_store_explicit(sec.ctr, tmp + URCU_BP_GP_COUNT,
		                      memory_order_relaxed);
	}
	return sec;
}

static inline void
admit_rcu_read_end(struct admit_rcu_section sec)
{
	/* relaxed: only this thread writes its counter. */
	unsigned long tmp = atomic_load_explicit(sec.ctr, memory_order_relaxed);

	ADMIT_RCU_TSAN_RELEASE();
	admit_rcu_mb_slave(sec.membarrier);  /* the section's loads before the store */
	/* relaxed: ordered by the fence above. */
	atomic_store_explicit(sec.ctr, tmp - URCU_BP_GP_COUNT, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}

/* Calls fn(head) on liburcu's call_rcu thread after a grace period: after
 * every read-side section running now has ended.  fn must begin with
 * admit_rcu_callback_begin() and end with admit_rcu_callback_end().  Never
 * waits; may be called with locks held and from a callback. */
static inline void
admit_rcu_call(struct rcu_head *head, void (*fn)(struct rcu_head *))
{
	ADMIT_RCU_TSAN_RELEASE();
	urcu_bp_call_rcu(head, fn);
}

static inline void
admit_rcu_callback_begin(void)
{
	ADMIT_RCU_TSAN_ACQUIRE();
}

static inline void
admit_rcu_callback_end(void)
{
	ADMIT_RCU_TSAN_RELEASE();
}

/* Waits until every callback queued before it has run.  Not from a
 * read-side section or a callback. */
static inline void
admit_rcu_barrier(void)
{
	urcu_bp_barrier();
	ADMIT_RCU_TSAN_ACQUIRE();
}

#endif /* ADMIT_RCU_H */
