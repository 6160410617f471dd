"""Calls timed in turn, the order shuffled each round, for the call-overhead benchmarks.

Shuffled, not fixed or rotated: a fixed or rotated order keeps each call behind the same one,
and what a call leaves behind (caches, a team of threads still polling) then lands on its
successor every time (the block study's auto column once measured the way that always ran before
it; docs/decisions/0003-block-copier-probe-and-ways.md).
"""

import random
import time


def interleaved_times(fns, reps, warm=5, seed=37):
    """{name: [seconds, ...]} of `reps` calls of each of `fns` ({name: callable}), after `warm`
    untimed rounds."""
    names = list(fns)
    order = random.Random(seed)
    times = {name: [] for name in names}
    for r in range(reps + warm):
        order.shuffle(names)
        for name in names:
            t0 = time.perf_counter()
            fns[name]()
            t = time.perf_counter() - t0
            if r >= warm:
                times[name].append(t)
    return times
