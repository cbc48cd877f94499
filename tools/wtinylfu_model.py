#!/usr/bin/env python3
"""Exact-count W-TinyLFU: a reference model for admit_lru's wtinylfu policy.

Same structure as the library (a 1 % window LRU in front of a segmented main
LRU, 80 % of main protected; a key leaving the window enters probation and
then competes with probation's LRU entry, strictly higher frequency wins),
but every frequency is an exact per-key count, capped at 15 and halved every
sample-factor x size records -- no sketch, no random admission, and no
doorkeeper unless --doorkeeper asks for one: then a key's first sighting in
a sample is a set membership, cleared (not halved) at aging, as the
library's doorkeeper is.  Where its hit ratios equal cache_sim's wtinylfu, a shortfall
comes from the policy, not from the frequency store's approximation
(doc/hit-ratio.md).

--random-admit adds the library's random admission (include/admit/tinylfu.h:
a candidate that ties or loses still wins with probability 1/128 when its
estimate is 6 or more), drawn from Python's generator seeded with --seed;
--seeds N then reports the median of N runs (seeds S, S+1, ...), as
cache_sim --seeds does.  Without --random-admit the model has no randomness.

    tools/wtinylfu_model.py [--sample-factor K] [--doorkeeper]
                            [--random-admit [--seed S] [--seeds N]] SIZES TRACE
    e.g. tools/wtinylfu_model.py 1250,1500 ../shared/traces/gli.trace.gz
    cache_sim --workload zigzag --write-trace z.lirs
    tools/wtinylfu_model.py --doorkeeper --random-admit --seeds 5 250,500 z.lirs

TRACE: ARC (.lis) or LIRS text, gzip or xz, as cache_sim reads them.
"""
import argparse
import gzip
import lzma
import random
from collections import OrderedDict


def load(path):
    opener = gzip.open if path.endswith('.gz') else \
        lzma.open if path.endswith('.xz') else open
    arc = '.lis' in path
    keys = []
    with opener(path, 'rt') as f:
        for line in f:
            p = line.split()
            if not p or p[0] == '*':
                continue
            if arc:
                start, count = int(p[0]), int(p[1])
                keys.extend(range(start, start + count))
            else:
                keys.append(int(p[0]))
    return keys


def hit_ratio(keys, size, sample_factor, doorkeeper, rng=None):
    # The library's integer split of size into window, probation, protected.
    window_max = size - (size // 100 * 99 + size % 100 * 99 // 100)
    main = size - window_max
    protected_max = main // 100 * 80 + main % 100 * 80 // 100
    window, probation, protected = OrderedDict(), OrderedDict(), OrderedDict()
    # A plain dict, not a Counter: a Counter's missing key costs a Python
    # call on every read.
    freq, door = {}, set()
    sample = sample_factor * size
    hits = 0
    for n, k in enumerate(keys, 1):
        if doorkeeper and k not in door:
            door.add(k)
        else:
            f = freq.get(k, 0)
            if f < 15:
                freq[k] = f + 1
        if n % sample == 0:
            freq = {x: c // 2 for x, c in freq.items() if c > 1}
            door.clear()
        if k in window:
            window.move_to_end(k)
        elif k in protected:
            protected.move_to_end(k)
        elif k in probation:
            del probation[k]
            protected[k] = None
            while len(protected) > protected_max:
                probation[protected.popitem(last=False)[0]] = None
        else:
            window[k] = None
            while len(window) > window_max:
                cand = window.popitem(last=False)[0]
                probation[cand] = None
                if len(window) + len(probation) + len(protected) <= size:
                    continue
                victim = next(iter(probation))
                ce = freq.get(cand, 0) + (cand in door)
                wins = ce > freq.get(victim, 0) + (victim in door) or \
                    (rng is not None and ce >= 6 and rng.getrandbits(7) == 0)
                loser = victim if victim != cand and wins else cand
                del probation[loser]
            continue
        hits += 1
    return 100.0 * hits / len(keys)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sample-factor', type=int, default=10)
    ap.add_argument('--doorkeeper', action='store_true')
    ap.add_argument('--random-admit', action='store_true')
    ap.add_argument('--seed', type=int, default=42)
    ap.add_argument('--seeds', type=int, default=1)
    ap.add_argument('sizes')
    ap.add_argument('trace')
    a = ap.parse_args()
    keys = load(a.trace)
    for size in map(int, a.sizes.split(',')):
        if not a.random_admit:
            r = hit_ratio(keys, size, a.sample_factor, a.doorkeeper)
        else:
            runs = sorted(hit_ratio(keys, size, a.sample_factor, a.doorkeeper,
                                    random.Random(a.seed + i))
                          for i in range(a.seeds))
            # cache_sim's median: the middle run, the upper one of two.
            r = runs[a.seeds // 2]
        print('%d %.2f' % (size, r))


if __name__ == '__main__':
    main()
