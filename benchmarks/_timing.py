"""Timing helpers shared by the benchmark scripts."""
from __future__ import annotations

import time


def best_time(fn, repeats: int) -> float:
    """Least CPU time of this process over `repeats` runs: per-core cost, robust to other jobs."""
    best = float("inf")
    for _ in range(repeats):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best
