"""Timing of a repeated call, shared by the benchmarks."""

import statistics
import time


def timed(fn, runs, warmup=3):
    """Calls `fn` `warmup` times, then `runs` times; returns mean, p50 and p95 in ms."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return {
        "mean": statistics.fmean(samples),
        "p50": samples[len(samples) // 2],
        "p95": samples[int(len(samples) * 0.95) - 1],
    }
