"""The laws a parallel-computing class draws on the board, as numbers the teaching visuals plot.

- the roofline: at arithmetic intensity I (FLOP/byte) a chip attains ``min(peak, I x bandwidth)``,
  with the peak and the bandwidth the chip's own (``ProcessorSpec``: the same figures parsim's
  roofline figure draws); the *ridge* ``peak / bandwidth`` separates memory- from compute-bound;
- Amdahl's law (strong scaling, fixed problem): ``1 / (s + (1 - s) / N)`` on N workers;
- Gustafson's law (weak scaling, the problem grows with N): ``s + (1 - s) N``;
- Flynn's taxonomy as a grid of cores x lanes: which lanes of which cores a prediction keeps busy
  at one instant, read from its timeline (the core-group rows say which cores, the mode how many
  lanes of each).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy

from parsim.base.errors import ParsimError
from parsim.hardware.specs import ProcessorSpec
from parsim.model.modes import lanes
from parsim.model.roofline import attainable_per_s
from parsim.results.prediction import Prediction


def roofline_peak(spec: ProcessorSpec, dtype: str = "float32", matrix: bool = True) -> float:
    """The compute ceiling: matrix units where allowed and rated for ``dtype``, else the vector lanes."""
    return spec.peak_flops_per_s(dtype, matrix=matrix)


def attainable_flops_per_s(
    spec: ProcessorSpec, intensity: float, dtype: str = "float32", matrix: bool = True
) -> float:
    """FLOP/s the roofline allows at ``intensity`` FLOP/byte: the lower of the peak and the
    bandwidth-fed rate (the model's roofline rule, ``model.roofline``, on the chip's own peak and
    memory bandwidth: the textbook figure, without a library's efficiency or smooth overlap)."""
    if not intensity > 0:
        raise ParsimError(f"arithmetic intensity must be positive: {intensity!r}")
    return attainable_per_s(roofline_peak(spec, dtype, matrix), spec.memory.bandwidth_Bps, intensity)


def ridge_intensity(spec: ProcessorSpec, dtype: str = "float32", matrix: bool = True) -> float:
    """The intensity (FLOP/byte) where the memory slope meets the compute ceiling."""
    return roofline_peak(spec, dtype, matrix) / spec.memory.bandwidth_Bps


def _check_fraction(serial: float) -> None:
    if not 0 <= serial <= 1:
        raise ParsimError(f"the serial fraction must lie between 0 and 1: {serial!r}")


def amdahl_speedup(serial: float, workers: float) -> float:
    """Strong scaling: the serial part ``serial`` runs alone, the rest splits over ``workers``."""
    _check_fraction(serial)
    return 1.0 / (serial + (1.0 - serial) / workers)


def gustafson_speedup(serial: float, workers: float) -> float:
    """Weak scaling: each worker keeps a full share of parallel work, so the speed-up is
    ``workers - serial x (workers - 1)``."""
    _check_fraction(serial)
    return workers - serial * (workers - 1)


class Grid(NamedTuple):
    """Which lanes of which cores work at one instant.

    Attributes:
        busy: a cores x lanes boolean array, true where a lane works.
        kind: what the busy lanes do (``compute`` or ``memory``: waiting on it), or None when idle.
        state: ``waiting`` (before the first kernel: the host is still issuing), ``working``,
            ``idle`` (between kernels) or ``done``.
    """

    busy: numpy.ndarray
    kind: str | None
    state: str


def core_events(prediction: Prediction, spec: ProcessorSpec) -> list:
    """The intervals of ``spec``'s core groups in the prediction's timeline (its cores, or SMs)."""
    unit = spec.core_unit
    return [e for e in prediction.trace if e.resource.kind == "cores" and e.resource.unit == unit]


def flynn_grid(prediction: Prediction, spec: ProcessorSpec, time_s: float) -> Grid:
    """The cores x lanes grid of ``spec`` at ``time_s`` in ``prediction``.

    A core-group interval names its cores (``first`` and ``busy``); the mode sets how many lanes of
    each work (one for SISD and MIMD, all for SIMD, MIMD+SIMD and SIMT). Intervals are half-open.
    """
    busy = numpy.zeros((spec.cores, spec.lanes_per_core), dtype=bool)
    width = lanes(spec, prediction.mode)
    events = core_events(prediction, spec)
    kinds = []
    for event in events:
        if event.start_s <= time_s < event.end_s:
            first = event.resource.first
            busy[first : first + max(event.resource.busy, 1), :width] = True
            kinds.append(event.kind)
    if kinds:
        # one kernel's lanes all compute or all wait on memory; of overlapping kernels the most common kind
        return Grid(busy, max(sorted(set(kinds)), key=kinds.count), "working")
    if not events or time_s >= max(e.end_s for e in events):
        return Grid(busy, None, "done")
    return Grid(busy, None, "waiting" if time_s < min(e.start_s for e in events) else "idle")


def time_steps(predictions: list[Prediction], count: int = 24) -> list[float]:
    """``count`` instants on a log scale: from before any core starts (the host still issuing) to
    after the slowest prediction ends, so a shared clock shows the fast modes finishing first."""
    starts = [e.start_s for p in predictions for e in p.trace if e.resource.kind == "cores" and e.start_s > 0]
    longest = max(p.latency_s for p in predictions)
    if longest <= 0:
        raise ParsimError("the predictions take no time: nothing to step through")
    low = min(starts, default=longest / 1000) / 2
    high = longest * 1.02
    return [low * (high / low) ** (i / (count - 1)) for i in range(count)]
