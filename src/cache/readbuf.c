/*
 * readbuf.c - a shard's read buffer (readbuf.h): ring choice, take, drain.
 *
 * Ordering: a push writes its event, then its slot's seq with release; the
 * consumer reads seq with acquire, then the event, then frees the slot with
 * a release store of seq that the next lap's push acquires.  An owned
 * ring's owners follow one another through owned_rings: the leaver's
 * release, the newcomer's acquire.
 */
#include "config.h"

#include <pthread.h>

#include "cache/readbuf.h"

void
admit_readbuf_init(struct admit_readbuf *b)
{
	for (unsigned r = 0; r < ADMIT_READBUF_RINGS; r++) {
		atomic_init(&b->ring[r].tail, 0);
		for (unsigned i = 0; i < ADMIT_READBUF_COUNTERS; i++)
			atomic_init(&b->ring[r].counted[i], 0);
		b->ring[r].head = 0;
		for (uint64_t k = 0; k < ADMIT_READBUF_SLOTS; k++) {
			atomic_init(&b->ring[r].slot[k].seq, k);
			atomic_init(&b->ring[r].slot[k].ev, 0);
			atomic_init(&b->ring[r].slot[k].arg, 0);
		}
	}
}

_Thread_local uint32_t admit_readbuf_thread_at
	__attribute__((tls_model("initial-exec")));

/* Bit k set: owned ring k has an owner.  Process-wide, as the ring index
 * is the same in every buffer. */
static _Atomic unsigned owned_rings;
_Static_assert(ADMIT_READBUF_OWNED < sizeof(unsigned) * 8,
               "owned_rings has a bit per owned ring");

/* Each owner's ring index + 1, so that its thread's exit gives it back. */
static pthread_key_t owner_key;
static pthread_once_t owner_once = PTHREAD_ONCE_INIT;
static bool owner_key_made;

/* At an owner's exit: later pushes of this thread (another destructor's)
 * go to the shared ring, and the ring is free for the next thread. */
static void
give_back(void *v)
{
	unsigned k = (unsigned)(uintptr_t)v - 1;

	admit_readbuf_thread_at = ADMIT_READBUF_AT(ADMIT_READBUF_RINGS - 1);
	/* release: pairs with the acquire in admit_readbuf_choose() of the
	 * next owner, which so sees this thread's last tail and slots. */
	atomic_fetch_and_explicit(&owned_rings, ~(1u << k), memory_order_release);
}

static void
make_owner_key(void)
{
	owner_key_made = pthread_key_create(&owner_key, give_back) == 0;
}

/* The key's destructor must not outlive the library's code (dlclose):
 * owners then keep their rings, which costs speed only. */
__attribute__((destructor)) static void
delete_owner_key(void)
{
	if (owner_key_made)
		pthread_key_delete(owner_key);
}

unsigned
admit_readbuf_choose(void)
{
	/* relaxed: the CAS below acquires. */
	unsigned set = atomic_load_explicit(&owned_rings, memory_order_relaxed);
	unsigned k = ADMIT_READBUF_RINGS - 1;  /* the shared ring */

	pthread_once(&owner_once, make_owner_key);
	while (owner_key_made) {
		unsigned free = ~set & ((1u << ADMIT_READBUF_OWNED) - 1);

		if (!free)
			break;
		/* acquire: pairs with the release in give_back() of the
		 * ring's last owner. */
		if (atomic_compare_exchange_weak_explicit(
		        &owned_rings, &set, set | (free & -free),
		        memory_order_acquire, memory_order_relaxed)) {
			k = (unsigned)__builtin_ctz(free);
			if (pthread_setspecific(owner_key,
			                        (void *)(uintptr_t)(k + 1)) != 0) {
				give_back((void *)(uintptr_t)(k + 1));
				k = ADMIT_READBUF_RINGS - 1;
			}
			break;
		}
	}
	admit_readbuf_thread_at = ADMIT_READBUF_AT(k);
	return k + 1;
}

size_t
admit_readbuf_take(struct admit_readbuf_ring *r, uintptr_t *ev, uint64_t *arg)
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
		/* relaxed, both: ordered by the acquire just above. */
		ev[n] = atomic_load_explicit(&sl->ev, memory_order_relaxed);
		arg[n] = atomic_load_explicit(&sl->arg, memory_order_relaxed);
		/* release: pairs with the acquire in admit_readbuf_push(). */
		atomic_store_explicit(&sl->seq, head + ADMIT_READBUF_SLOTS,
		                      memory_order_release);
	}
	r->head = head;
	return n;
}

void
admit_readbuf_drain_ring(struct admit_readbuf_ring *r,
                         admit_readbuf_apply_t apply, void *ctx)
{
	uintptr_t ev[ADMIT_READBUF_SLOTS];
	uint64_t arg[ADMIT_READBUF_SLOTS];
	size_t n;

	do {
		n = admit_readbuf_take(r, ev, arg);
		if (n)
			apply(ctx, ev, arg, n);
	} while (n == ADMIT_READBUF_SLOTS);
}

void
admit_readbuf_drain(struct admit_readbuf *b, admit_readbuf_apply_t apply,
                    void *ctx)
{
	for (unsigned k = 0; k < ADMIT_READBUF_RINGS; k++)
		admit_readbuf_drain_ring(&b->ring[k], apply, ctx);
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

uint64_t
admit_readbuf_counted(const struct admit_readbuf *b, unsigned i)
{
	uint64_t n = 0;

	/* relaxed: a sum of counters; the caller orders the counts it
	 * must see (a thread its own, a join another's). */
	for (unsigned k = 0; k < ADMIT_READBUF_RINGS; k++)
		n += atomic_load_explicit(&b->ring[k].counted[i],
		                          memory_order_relaxed);
	return n;
}
