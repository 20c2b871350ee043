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


def paired_samples(fns, repeat: int) -> list[list[float]]:
    """The seconds of ``repeat`` calls of each of ``fns``, their calls interleaved (a, b, a,
    b, ...) so that a shared host's load, changing while they run, weighs on all alike."""
    samples = [[] for _ in fns]
    for _ in range(repeat):
        for fn, times in zip(fns, samples):
            began = time.perf_counter()
            fn()
            times.append(time.perf_counter() - began)
    return samples


def paired_medians(fns, repeat: int) -> list:
    """The median seconds of each of ``fns`` (see ``paired_samples``)."""
    return [statistics.median(times) for times in paired_samples(fns, repeat)]
