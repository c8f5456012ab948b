"""Timelines: what each resource did when, and what that says about where the time went.

Both predictors (the SimPy engine and the analytic schedule) emit a trace: one
``TraceEvent(resource, label, kind, start_s, end_s)`` per busy interval. Everything a user
reads about *why* (the breakdown, the bottleneck, the utilisation) is derived from it here.

The breakdown walks the timeline once. At each instant the active device-side work (compute,
memory, transfer) shares that instant equally; host overhead (dispatch, launch, idle waiting)
counts only when no device-side work is active, because a launch hidden behind a running kernel
costs nothing. The categories therefore add up to the latency exactly.
"""

from __future__ import annotations

from collections import defaultdict

import attrs

CATEGORIES = ("compute", "memory", "transfer", "overhead")


@attrs.frozen
class TraceEvent:
    """One busy interval of one resource.

    Attributes:
        resource: timeline row (``"host"``, ``"SM 0-131"``, ``"memory"``, ``"PCIe h2d"``).
        label: what ran (``"relu[2]"``).
        kind: ``compute``, ``memory``, ``transfer`` or ``overhead``.
        start_s: start time in seconds.
        end_s: end time in seconds.
        detail: a supporting row (the memory channel of a kernel) left out of the breakdown.
        layer: the network layer the work belongs to, or empty.
    """

    resource: str
    label: str
    kind: str
    start_s: float
    end_s: float
    detail: bool = False
    layer: str = ""

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


def breakdown(trace: list[TraceEvent], latency_s: float) -> dict[str, float]:
    """Seconds per category; the values add up to ``latency_s``."""
    result = dict.fromkeys(CATEGORIES, 0.0)
    work = [e for e in trace if not e.detail and e.kind != "overhead" and e.end_s > e.start_s]
    points = sorted({0.0, latency_s, *(e.start_s for e in work), *(e.end_s for e in work)})
    for lo, hi in zip(points, points[1:], strict=False):
        if hi <= lo or lo >= latency_s:
            continue
        hi = min(hi, latency_s)
        active = [e.kind for e in work if e.start_s <= lo and e.end_s >= hi]
        if not active:
            result["overhead"] += hi - lo
            continue
        for kind in active:
            result[kind] += (hi - lo) / len(active)
    return result


def bottleneck(parts: dict[str, float]) -> str:
    """The category holding the most time."""
    return max(CATEGORIES, key=lambda kind: parts[kind])


def utilization(trace: list[TraceEvent], latency_s: float) -> dict[str, float]:
    """Fraction of the latency each timeline row was busy (overlapping intervals merged)."""
    rows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for event in trace:
        rows[event.resource].append((event.start_s, event.end_s))
    result = {}
    for resource, intervals in rows.items():
        busy, reach = 0.0, float("-inf")
        for start, end in sorted(intervals):
            start = max(start, reach)
            if end > start:
                busy += end - start
            reach = max(reach, end)
        result[resource] = min(busy / latency_s, 1.0) if latency_s > 0 else 0.0
    return result
