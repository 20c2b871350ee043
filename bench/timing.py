"""The benchmarks' one clock: the median wall time of repeated runs."""

import statistics
import time


def median_time(fn, repeat: int):
    """(median seconds of ``repeat`` calls of ``fn``, what the last call returned)."""
    samples, result = [], None
    for _ in range(repeat):
        began = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples), result
