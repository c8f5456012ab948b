"""Fitting host<->GPU copy timings: a line for pinned memory, a line with a knee for pageable.

A pinned copy is a DMA from page-locked memory: ``T = latency + bytes / bandwidth``. A pageable
copy is staged by the driver through a pinned buffer with a CPU memcpy, so it streams at the
host's memcpy speed, and that depends on where the host finds the buffer: copied again and again
(as a calibration or a training loop does), the part that stays in the host's caches is read (or
written) faster than the rest, which comes from DRAM. On the H100 host of issue 30 a host-to-device
copy of 4 MB ran at 10 GB/s, of 400 MB at 6.9 GB/s; device-to-host stayed near 9.8 GB/s at every
size. So the pageable fit has a knee at ``cached_B``:

    T = latency + min(bytes, cached_B) / cached_Bps + max(0, bytes - cached_B) / Bps

with ``Bps <= cached_Bps <= pinned`` (the staged copy cannot outrun the DMA it feeds, and cached
bytes are not slower); where the knee does not pay for itself the fit is the plain line.

Both fits weigh each copy by 1/T (least squares on relative errors): timing noise is
proportional to the time, and an unweighted fit would let the largest copies' noise decide the
microseconds of the intercept.
"""

from __future__ import annotations

import itertools
import math

import attrs
import numpy

KNEE_MIN_B = 1 * 2**20  # a host keeps at least an L2's worth of a buffer in its caches
KNEE_STEPS_PER_OCTAVE = 4
KNEE_GAIN = 0.9  # the knee must lower the squared relative residual of the plain line by 10 %
KNEE_STEP = 0.02  # and the two rates differ by more than 2 %


@attrs.frozen
class PageableFit:
    """One direction's pageable copies: ``intercept_s`` (host call included), DRAM-side ``Bps``,
    ``cached_Bps`` for the first ``cached_B`` bytes (0: no knee)."""

    intercept_s: float
    Bps: float
    cached_Bps: float
    cached_B: float

    def seconds(self, nbytes: float) -> float:
        cached = min(nbytes, self.cached_B)
        return self.intercept_s + cached / self.cached_Bps + (nbytes - cached) / self.Bps


def fit_latency_bandwidth(sizes_B: list[float], seconds: list[float]) -> tuple[float, float]:
    """``T = latency + bytes / bandwidth`` by least squares on relative errors (weights 1/T);
    returns (latency_s, bandwidth_Bps) as fitted: a negative latency or an infinite bandwidth
    (a slope <= 0) is for the caller to refuse, not to clamp."""
    times = numpy.asarray(seconds, float)
    slope, intercept = numpy.polyfit(numpy.asarray(sizes_B, float), times, 1, w=1.0 / times)
    return float(intercept), (1.0 / float(slope) if slope > 0 else math.inf)


def fit_pageable(sizes_B: list[float], seconds: list[float], pinned_Bps: float) -> PageableFit:
    """The pageable model above, fitted to copies of ``sizes_B`` that took ``seconds``.

    For each candidate knee (a geometric grid from ``KNEE_MIN_B`` to the largest size) the model
    is linear in (intercept, 1/cached_Bps - 1/pinned, 1/Bps - 1/cached_Bps), all >= 0: a
    non-negative least squares, solved exactly over the subsets of free parameters.
    """
    sizes = numpy.asarray(sizes_B, float)
    times = numpy.asarray(seconds, float)
    weights = 1.0 / times
    target = (times - sizes / pinned_Bps) * weights

    def solve(knee: float) -> tuple[float, numpy.ndarray]:
        beyond = numpy.maximum(0.0, sizes - knee)
        columns = numpy.stack([numpy.ones_like(sizes), sizes, beyond], axis=1) * weights[:, None]
        return _nonnegative_least_squares(columns if knee < sizes.max() else columns[:, :2], target)

    line_residual, line = solve(math.inf)
    best = (line_residual, math.inf, numpy.append(line, 0.0))
    largest = float(sizes.max())
    steps = int(max(0.0, math.log2(largest / KNEE_MIN_B)) * KNEE_STEPS_PER_OCTAVE)
    for step in range(steps):
        knee = KNEE_MIN_B * 2.0 ** (step / KNEE_STEPS_PER_OCTAVE)
        residual, solution = solve(knee)
        if residual < best[0]:
            best = (residual, knee, solution)
    residual, knee, (intercept, cached_extra, dram_extra) = best
    cached_s_per_B = 1.0 / pinned_Bps + cached_extra
    if residual > KNEE_GAIN * line_residual or dram_extra <= KNEE_STEP * cached_s_per_B:  # not worth it
        intercept, cached_extra, dram_extra, knee = line[0], line[1], 0.0, math.inf
    cached_Bps = 1.0 / (1.0 / pinned_Bps + cached_extra)
    Bps = 1.0 / (1.0 / cached_Bps + dram_extra)
    if math.isinf(knee):
        return PageableFit(float(intercept), float(cached_Bps), float(cached_Bps), 0.0)
    return PageableFit(float(intercept), float(Bps), float(cached_Bps), float(knee))


def _nonnegative_least_squares(columns: numpy.ndarray, target: numpy.ndarray) -> tuple[float, numpy.ndarray]:
    """min |columns x - target|^2 with x >= 0, by trying every subset of free parameters (3 at
    most here: 8 small solves); returns (squared residual, x)."""
    count = columns.shape[1]
    best: tuple[float, numpy.ndarray] = (float(target @ target), numpy.zeros(count))
    for size in range(1, count + 1):
        for free in itertools.combinations(range(count), size):
            solution, *_ = numpy.linalg.lstsq(columns[:, free], target, rcond=None)
            if (solution < 0).any():
                continue
            x = numpy.zeros(count)
            x[list(free)] = solution
            residual = float(numpy.sum((columns @ x - target) ** 2))
            if residual < best[0]:
                best = (residual, x)
    return best
