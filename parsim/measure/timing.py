"""Timing a callable honestly: warm up, repeat adaptively, report the median and the spread.

A single run tells little: the first call pays for page faults, caches and lazy
initialisation; later ones vary with whatever else the machine does. So the timer warms up,
then repeats until a time budget is spent (or a repeat count is reached) and reports the median
with the 25th and 75th percentiles. ``sync`` is called before each clock read: on a GPU it
waits for the device, so the clock never stops while a kernel is still running. Calls shorter
than ``MIN_SAMPLE_S`` are timed in batches (as ``timeit`` does), so the clock's own cost and
resolution do not leak into a microsecond-scale result.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import attrs

MIN_SAMPLE_S = 50e-6


@attrs.frozen
class Timing:
    """Summary of repeated timings of one operation.

    Attributes:
        median_s: median duration.
        p25_s: 25th percentile.
        p75_s: 75th percentile.
        repeats: timed samples (warm-up excluded).
        inner: calls per sample (short calls are timed in batches).
    """

    median_s: float
    p25_s: float
    p75_s: float
    repeats: int
    inner: int = 1

    @classmethod
    def from_samples(cls, samples: list[float], inner: int = 1) -> Timing:
        """Summarise per-call times (``samples`` are already divided by ``inner``)."""
        ordered = sorted(samples)
        if len(ordered) == 1:
            return cls(ordered[0], ordered[0], ordered[0], 1, inner)
        quartiles = statistics.quantiles(ordered, n=4, method="inclusive")
        return cls(statistics.median(ordered), quartiles[0], quartiles[2], len(ordered), inner)

    def to_dict(self) -> dict:
        return attrs.asdict(self)


def time_callable(
    function: Callable[[], object],
    sync: Callable[[], None] = lambda: None,
    budget_s: float = 0.2,
    min_repeats: int = 5,
    max_repeats: int = 1000,
    warmup: int = 2,
) -> Timing:
    """Time ``function`` adaptively.

    Args:
        function: the operation to time.
        sync: called before each clock read (device synchronisation).
        budget_s: stop repeating once this much time has been spent timing (after ``min_repeats``).
        min_repeats: repeat at least this often, whatever the budget.
        max_repeats: never repeat more often.
        warmup: untimed calls first.

    Returns:
        Median and quartiles over the timed repetitions.
    """
    for _ in range(warmup):
        function()
    sync()
    start = time.perf_counter()
    function()
    sync()
    first = time.perf_counter() - start
    inner = max(1, min(10_000, int(MIN_SAMPLE_S / max(first, 1e-9)) + 1)) if first < MIN_SAMPLE_S else 1
    samples: list[float] = []
    spent = 0.0
    while len(samples) < max_repeats and (len(samples) < min_repeats or spent < budget_s):
        sync()
        start = time.perf_counter()
        for _ in range(inner):
            function()
        sync()
        elapsed = time.perf_counter() - start
        samples.append(elapsed / inner)
        spent += elapsed
    return Timing.from_samples(samples, inner)
