/*
 * readbuf.h - a shard's read buffer: the events of reads that took no lock,
 * queued for the next holder of the shard's lock to apply (BP-Wrapper:
 * Ding, Jiang, Zhang, ICDE 2009; Caffeine's striped read buffers).
 *
 * ADMIT_READBUF_RINGS bounded rings (Vyukov's bounded queue: a sequence
 * number per slot).  A thread pushes to one ring, chosen once per thread
 * and the same in every buffer, so one thread's events are in one ring, in
 * order, and two threads' pushes to one shard do not write the same tail
 * and slot lines.  Each of the first ADMIT_READBUF_OWNED rings has one
 * owner thread at a time (claimed at its first push, given back when it
 * exits), whose push is single-producer: plain stores, no locked
 * instruction, which on x86 would also hold every later load of the
 * caller until the earlier ones are done.  The last ring is shared by the
 * threads that found none free; its pushes take their slot by CAS.  The
 * consumer (one at a time: the caller serialises drains) takes each
 * ring's events in order, up to the first slot still being written.
 *
 * An event is a uintptr_t the owner chooses and a 64-bit word carried
 * with it (admit_lru: the entry, and its key's hash, which the entry does
 * not store), never a slot's business.
 * Progress: a push is wait-free on an owned ring and lock-free on the
 * shared one (a failed CAS means another push took the slot), and fails,
 * rather than waits, when its ring is full.
 */
#ifndef ADMIT_CACHE_READBUF_H
#define ADMIT_CACHE_READBUF_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"

/* Slots per ring (a power of two): up to this many reads in a row by one
 * thread take no lock. */
#define ADMIT_READBUF_SLOTS 128
/* Rings per buffer: ADMIT_READBUF_OWNED owned ones, then the shared one. */
#define ADMIT_READBUF_OWNED 4
#define ADMIT_READBUF_RINGS (ADMIT_READBUF_OWNED + 1)

/* Counters of reads that queue no event, per ring: the owner's choice of
 * what each counts (admit_lru: quiet hits, misses). */
#define ADMIT_READBUF_COUNTERS 2

/* seq is the slot's turn: pos when free for the push at ring position pos,
 * pos + 1 once that push is written, pos + ADMIT_READBUF_SLOTS once
 * taken; ev and arg are the event. */
struct admit_readbuf_slot {
	_Atomic uint64_t seq;
	_Atomic uintptr_t ev;
	_Atomic uint64_t arg;
};

struct admit_readbuf_ring {
	alignas(ADMIT_CACHELINE) _Atomic uint64_t tail;  /* next position to push */
	_Atomic uint64_t counted[ADMIT_READBUF_COUNTERS];  /* reads
	                                 * counted, not queued: the pushers'
	                                 * (admit_readbuf_count) */
	alignas(ADMIT_CACHELINE) uint64_t head;          /* next to take; the
	                                                  * consumer's */
	alignas(ADMIT_CACHELINE) struct admit_readbuf_slot slot[ADMIT_READBUF_SLOTS];
};

struct admit_readbuf {
	struct admit_readbuf_ring ring[ADMIT_READBUF_RINGS];
};

/* A ring position for each ring: where its tail or head stood. */
struct admit_readbuf_mark {
	uint64_t pos[ADMIT_READBUF_RINGS];
};

/* Sets b up empty. */
void admit_readbuf_init(struct admit_readbuf *b);

/* This thread's ring, the same for every buffer: its byte offset in a
 * buffer's ring array, + 1 (0: not chosen yet).  An offset rather than an
 * index, so that a read finds its ring by one addition, not a multiply by
 * the ring's size.  initial-exec: read with one instruction, not a call to
 * __tls_get_addr per read (4 bytes of the static TLS surplus when the
 * library is dlopen'd). */
extern _Thread_local uint32_t admit_readbuf_thread_at
	__attribute__((tls_model("initial-exec")));

/* admit_readbuf_thread_at's value for ring k. */
#define ADMIT_READBUF_AT(k) \
	((uint32_t)((k) * sizeof(struct admit_readbuf_ring)) + 1)
_Static_assert(ADMIT_READBUF_RINGS * sizeof(struct admit_readbuf_ring) <
               UINT32_MAX, "a ring's offset fits admit_readbuf_thread_at");

/* Chooses this thread's ring: the first owned ring no live thread owns,
 * claimed until this thread exits, else the shared one.  Returns its index
 * + 1. */
unsigned admit_readbuf_choose(void);

/* This thread's ring as admit_readbuf_thread_at holds it, chosen if need
 * be. */
static inline uint32_t
admit_readbuf_my_at(void)
{
	uint32_t at = admit_readbuf_thread_at;

	if (__builtin_expect(at == 0, 0)) {
		admit_readbuf_choose();
		at = admit_readbuf_thread_at;
	}
	return at;
}

/* The ring of b at offset at (admit_readbuf_thread_at's form). */
static inline struct admit_readbuf_ring *
admit_readbuf_ring_at(struct admit_readbuf *b, uint32_t at)
{
	return (struct admit_readbuf_ring *)(void *)((char *)b->ring + (at - 1));
}

/* Whether the ring at offset at is an owned one (single producer). */
static inline bool
admit_readbuf_owned_at(uint32_t at)
{
	return at < ADMIT_READBUF_AT(ADMIT_READBUF_OWNED);
}

/* The ring index + 1 of offset at (admit_readbuf_thread_at's form; 0:
 * none chosen). */
static inline unsigned
admit_readbuf_index_of(uint32_t at)
{
	return at ? (unsigned)((at - 1) / sizeof(struct admit_readbuf_ring)) + 1
	          : 0;
}

/* This thread's ring index + 1. */
static inline unsigned
admit_readbuf_my_index(void)
{
	return admit_readbuf_index_of(admit_readbuf_my_at());
}

/* The ring this thread pushes to: one per thread, so that one thread's
 * events keep their order. */
static inline struct admit_readbuf_ring *
admit_readbuf_mine(struct admit_readbuf *b)
{
	return admit_readbuf_ring_at(b, admit_readbuf_my_at());
}

/* Queues the event (ev, arg) on r, which only the calling thread pushes to
 * (it owns r); returns the ring position after it (at least 1), or 0 when
 * the ring is full. */
static inline uint64_t
admit_readbuf_push_owner(struct admit_readbuf_ring *r, uintptr_t ev,
                         uint64_t arg)
{
	/* relaxed: only r's owner writes tail; a new owner's claim acquires
	 * the release of the last one's (readbuf.c). */
	uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
	struct admit_readbuf_slot *sl = &r->slot[pos & (ADMIT_READBUF_SLOTS - 1)];

	/* acquire: pairs with the release in admit_readbuf_take() that freed
	 * the slot, so its last reader is done with it. */
	if (atomic_load_explicit(&sl->seq, memory_order_acquire) != pos)
		return 0;  /* the slot still holds the event of a lap ago */
	/* relaxed: tail only picks the slot; the slot's seq hands the event
	 * over. */
	atomic_store_explicit(&r->tail, pos + 1, memory_order_relaxed);
	/* relaxed, both: published by the release below. */
	atomic_store_explicit(&sl->ev, ev, memory_order_relaxed);
	atomic_store_explicit(&sl->arg, arg, memory_order_relaxed);
	/* release: pairs with the acquire in admit_readbuf_take(). */
	atomic_store_explicit(&sl->seq, pos + 1, memory_order_release);
	return pos + 1;
}

/* Queues the event (ev, arg) on r, to which any thread may push; returns
 * as admit_readbuf_push_owner(). */
static inline uint64_t
admit_readbuf_push(struct admit_readbuf_ring *r, uintptr_t ev, uint64_t arg)
{
	/* relaxed: a slot's seq, not tail, hands the event over; tail only
	 * picks the slot. */
	uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);

	for (;;) {
		struct admit_readbuf_slot *sl = &r->slot[pos & (ADMIT_READBUF_SLOTS - 1)];
		/* acquire: pairs with the release in admit_readbuf_take() that
		 * freed the slot, so its last reader is done with it. */
		uint64_t seq = atomic_load_explicit(&sl->seq, memory_order_acquire);

		if (seq == pos) {
			/* relaxed: as the load of tail above. */
			if (atomic_compare_exchange_weak_explicit(&r->tail, &pos, pos + 1,
			                                          memory_order_relaxed,
			                                          memory_order_relaxed)) {
				/* relaxed, both: published by the
				 * release below. */
				atomic_store_explicit(&sl->ev, ev, memory_order_relaxed);
				atomic_store_explicit(&sl->arg, arg, memory_order_relaxed);
				/* release: pairs with the acquire in
				 * admit_readbuf_take(). */
				atomic_store_explicit(&sl->seq, pos + 1, memory_order_release);
				return pos + 1;
			}
		} else if ((int64_t)(seq - pos) < 0) {
			return 0;  /* the slot still holds the event of a lap ago */
		} else {
			/* relaxed: as above. */
			pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
		}
	}
}

/* Queues the event (ev, arg) on this thread's ring of b; returns as
 * admit_readbuf_push_owner(). */
static inline uint64_t
admit_readbuf_push_mine(struct admit_readbuf *b, uintptr_t ev, uint64_t arg)
{
	uint32_t at = admit_readbuf_my_at();

	if (__builtin_expect(admit_readbuf_owned_at(at), 1))
		return admit_readbuf_push_owner(admit_readbuf_ring_at(b, at), ev,
		                                arg);
	return admit_readbuf_push(admit_readbuf_ring_at(b, at), ev, arg);
}

/* Counts a read that queues no event in counter i of this thread's ring
 * of b, on the line its pushes write anyway. */
static inline void
admit_readbuf_count(struct admit_readbuf *b, unsigned i)
{
	uint32_t at = admit_readbuf_my_at();
	_Atomic uint64_t *n = &admit_readbuf_ring_at(b, at)->counted[i];

	if (__builtin_expect(admit_readbuf_owned_at(at), 1))
		/* relaxed, and no locked instruction: only the ring's owner
		 * writes it; its readers want a sum, not an order. */
		atomic_store_explicit(n, atomic_load_explicit(n, memory_order_relaxed) + 1,
		                      memory_order_relaxed);
	else
		/* relaxed: as above, on the ring every other thread counts on. */
		atomic_fetch_add_explicit(n, 1, memory_order_relaxed);
}

/* The sum of counter i over b's rings.  Any thread. */
uint64_t admit_readbuf_counted(const struct admit_readbuf *b, unsigned i);

/* Whether the push that ended at ring position end (its return) filled
 * another half ring: the cue for its pusher to try draining (by trylock),
 * so that a ring rarely fills and a read rarely waits for the lock.  Each
 * half ring cues exactly one push, whoever shares the ring. */
static inline bool
admit_readbuf_due(uint64_t end)
{
	return (end & (ADMIT_READBUF_SLOTS / 2 - 1)) == 0;
}

/* Takes up to ADMIT_READBUF_SLOTS of r's events, in order, into ev and
 * arg, up to the first slot still being written; returns how many.  The
 * consumer's. */
size_t admit_readbuf_take(struct admit_readbuf_ring *r, uintptr_t *ev,
                          uint64_t *arg);

/* What a drain hands a batch of n events to: their ev and arg in order. */
typedef void (*admit_readbuf_apply_t)(void *ctx, const uintptr_t *ev,
                                      const uint64_t *arg, size_t n);

/* Takes r's events in order, handing them to apply(ctx, ev, arg, n) a
 * batch of at most ADMIT_READBUF_SLOTS at a time.  The consumer's. */
void admit_readbuf_drain_ring(struct admit_readbuf_ring *r,
                              admit_readbuf_apply_t apply, void *ctx);

/* Takes every ring's events, each ring in order, handing them to
 * apply(ctx, ev, arg, n) a batch of at most ADMIT_READBUF_SLOTS at a time.
 * The consumer's. */
void admit_readbuf_drain(struct admit_readbuf *b, admit_readbuf_apply_t apply,
                         void *ctx);

/* The rings' tails now: every push that ended before this call lies below
 * them.  Any thread. */
void admit_readbuf_tails(struct admit_readbuf *b, struct admit_readbuf_mark *m);

/* Whether every ring's head has reached m: every event below m's tails is
 * taken.  The consumer's. */
bool admit_readbuf_passed(const struct admit_readbuf *b,
                          const struct admit_readbuf_mark *m);

#endif /* ADMIT_CACHE_READBUF_H */
