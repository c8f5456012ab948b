"""The roofline, once: how a kernel's compute leg and memory leg make its time.

Every method composes this one rule: the closed form (``model.kernel``, whole kernel), the engine
(``methods.engine.processor``, each phase of waves), the vectorised sweep (through the closed form)
and the lessons' textbook roofline (``studies.teaching``, as a rate).

- ``roofline`` overlap: compute and memory proceed together and the kernel ends when both are
  done, the max of the two legs;
- a GEMM library overlaps them imperfectly: its measured smooth roofline of norm ``p``
  (``LibrarySpec.gemm_overlap_norm``), ``(arithmetic^p + memory^p)^(1/p)``, joins the product's own
  multiply-adds and its memory traffic, up to sqrt(2) x the max near the ridge for ``p = 2``;
- the cores' *hard* busy time stays a floor under it: a tile cannot end before its padded
  multiply-adds or its operands from the shared cache (``busy_s`` >= ``arithmetic_s``: the engine
  knows the tiles; the closed form has none, so the two are equal there);
- ``serial``: one leg after the other, the cores' busy time plus the memory time.

As a rate (the teaching figure) the same max of per-FLOP times gives ``min(peak, I x bandwidth)``.
Inputs may be numbers or NumPy arrays (a vectorised sweep).
"""

from __future__ import annotations

import math

from parsim.model.numeric import Number, maximum, where

OVERLAPS = ("roofline", "serial")


def combine(
    busy_s: Number,
    memory_s: Number,
    overlap: str,
    norm: float = math.inf,
    arithmetic_s: Number | None = None,
) -> Number:
    """Seconds of a kernel (or one phase of it) from its legs.

    Args:
        busy_s: the cores' hard compute time (a GEMM tile's padded multiply-adds, or its wait on
            operands from the shared cache).
        memory_s: the memory leg (latency and bytes at what the busy cores draw).
        overlap: ``roofline`` (the legs overlap) or ``serial`` (their sum).
        norm: the library's smooth-roofline norm; ``inf``: the plain max.
        arithmetic_s: the work's own multiply-adds, without padding, that the smooth roofline
            weighs (default ``busy_s``).
    """
    if overlap == "serial":
        return busy_s + memory_s
    if norm == math.inf:
        return maximum(busy_s, memory_s)
    arithmetic = busy_s if arithmetic_s is None else arithmetic_s
    return maximum(busy_s, (arithmetic**norm + memory_s**norm) ** (1.0 / norm))


def leg(compute_s: Number, memory_s: Number) -> Number:
    """Which leg bounds the time: ``"compute"`` (ties included) or ``"memory"``."""
    return where(compute_s >= memory_s, "compute", "memory")


def attainable_per_s(peak_per_s: float, bandwidth_Bps: float, intensity: float) -> float:
    """The rate (FLOP/s) the roofline allows at ``intensity`` FLOP/byte: one FLOP's compute time and
    its ``1/intensity`` bytes' memory time, overlapped (``combine``), inverted."""
    return float(1.0 / combine(1.0 / peak_per_s, 1.0 / (intensity * bandwidth_Bps), "roofline"))
