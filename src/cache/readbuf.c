/*
 * readbuf.c - a shard's read buffer (readbuf.h): ring choice, take, drain.
 *
 * Ordering: a push writes its event, then its slot's seq with release; the
 * consumer reads seq with acquire, then the event, then frees the slot with
 * a release store of seq that the next lap's push acquires.
 */
#include "config.h"

#include "cache/readbuf.h"

void
admit_readbuf_init(struct admit_readbuf *b)
{
	for (unsigned r = 0; r < ADMIT_READBUF_RINGS; r++) {
		atomic_init(&b->ring[r].tail, 0);
		b->ring[r].head = 0;
		for (uint64_t k = 0; k < ADMIT_READBUF_SLOTS; k++) {
			atomic_init(&b->ring[r].slot[k].seq, k);
			atomic_init(&b->ring[r].slot[k].ev, 0);
		}
	}
}

_Thread_local unsigned admit_readbuf_thread_ring
	__attribute__((tls_model("initial-exec")));

/* One process-wide counter serves every buffer: a distinct-enough number
 * per thread is all the choice needs. */
static _Atomic unsigned next_ring;

unsigned
admit_readbuf_choose(void)
{
	/* relaxed: see above. */
	admit_readbuf_thread_ring = atomic_fetch_add_explicit(&next_ring, 1,
	                                                      memory_order_relaxed) %
	                            ADMIT_READBUF_RINGS + 1;
	return admit_readbuf_thread_ring;
}

size_t
admit_readbuf_take(struct admit_readbuf_ring *r, uintptr_t *ev)
{
	uint64_t head = r->head; /* in a register across the atomics */
	size_t n;

	for (n = 0; n < ADMIT_READBUF_SLOTS; n++, head++) {
		struct admit_readbuf_slot *sl = &r->slot[head &
		                                         (ADMIT_READBUF_SLOTS - 1)];

		/* acquire: pairs with the release in admit_readbuf_push(). */
		if (atomic_load_explicit(&sl->seq, memory_order_acquire) !=
		    head + 1)
			break;
		/* relaxed: ordered by the acquire just above. */
		ev[n] = atomic_load_explicit(&sl->ev, memory_order_relaxed);
		/* release: pairs with the acquire in admit_readbuf_push(). */
		atomic_store_explicit(&sl->seq, head + ADMIT_READBUF_SLOTS,
		                      memory_order_release);
	}
	r->head = head;
	return n;
}

void
admit_readbuf_drain(struct admit_readbuf *b,
                    void (*apply)(void *ctx, const uintptr_t *ev, size_t n),
                    void *ctx)
{
	uintptr_t ev[ADMIT_READBUF_SLOTS];

	for (unsigned k = 0; k < ADMIT_READBUF_RINGS; k++) {
		size_t n;

		do {
			n = admit_readbuf_take(&b->ring[k], ev);
			if (n)
				apply(ctx, ev, n);
		} while (n == ADMIT_READBUF_SLOTS);
	}
}

void
admit_readbuf_tails(struct admit_readbuf *b, struct admit_readbuf_mark *m)
{
	/* relaxed: the caller orders the pushes it cares about before this
	 * call (reclaim.c: a grace period). */
	for (unsigned k = 0; k < ADMIT_READBUF_RINGS; k++)
		m->pos[k] = atomic_load_explicit(&b->ring[k].tail,
		                                 memory_order_relaxed);
}

bool
admit_readbuf_passed(const struct admit_readbuf *b,
                     const struct admit_readbuf_mark *m)
{
	for (unsigned k = 0; k < ADMIT_READBUF_RINGS; k++)
		if (b->ring[k].head < m->pos[k])
			return false;
	return true;
}
