"""Timelines: what each resource did when, and what that says about where the time went.

Both predictors (the SimPy engine and the analytic schedule) emit a trace: one
``TraceEvent(resource, label, kind, start_s, end_s)`` per busy interval. Everything a user
reads about *why* (the breakdown, the bottleneck, the utilisation) is derived from it here.

The breakdown walks the timeline once. At each instant the active device-side intervals
(compute, memory, transfer) share that instant equally; host overhead (dispatch, launch, idle waiting)
counts only when no device-side work is active, because a launch hidden behind a running kernel
costs nothing. The categories therefore add up to the latency exactly.
"""

from __future__ import annotations

from operator import itemgetter
from typing import NamedTuple

from parsim.model.outcome import CATEGORIES, WORK
from parsim.results.resources import Resource
from parsim.workloads.base import Op


class TraceEvent(NamedTuple):
    """One busy interval of one resource (a named tuple: a traced step makes tens of thousands).

    Attributes:
        resource: the busy resource (a host thread, cores, a memory level, a link direction).
        label: what ran (``"relu[2]"``).
        kind: ``compute``, ``memory``, ``transfer`` or ``overhead``.
        start_s: start time in seconds.
        end_s: end time in seconds.
        detail: a supporting row (the memory channel of a kernel) left out of the breakdown.
        layer: the network layer the work belongs to, or empty.
        weight: share of the processor's cores the interval keeps busy (core rows).
        op: the op whose work the interval is (a ``Kernel``, ``Transfer``, ``AllReduce`` or
            ``Block``), None for the host's issue and wait rows: a workload's figures find their
            intervals by the op's fields (``Kernel.phase``, its type), never by the label.
    """

    resource: Resource
    label: str
    kind: str
    start_s: float
    end_s: float
    detail: bool = False
    layer: str = ""
    weight: float = 1.0
    op: Op | None = None

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    def to_dict(self) -> dict[str, object]:
        """Plain data for JSON: the resource as its row label."""
        data = self._asdict()
        del data["op"]  # the op itself is not plain data; its label is
        return {**data, "resource": self.resource.label}


_time_of = itemgetter(0)
"""An edge's time (``breakdown`` sorts its edges by it alone, stably)."""

_WORK_INDEX = {kind: index for index, kind in enumerate(WORK)}
"""A device-side kind's place in ``WORK``: ``breakdown`` counts the active intervals of each in a list."""


def breakdown(trace: list[TraceEvent], latency_s: float) -> dict[str, float]:
    """Seconds per category; the values add up to ``latency_s``.

    A sweep over the interval ends keeps a count of active intervals per kind, so the cost
    is O(n log n) in the number of trace events. (A training step traces thousands of events:
    the fields are read by position and the spread is inlined, each kind's sum built by the same
    additions in the same order as ``_spread`` does them.)
    """
    kinds = _WORK_INDEX
    edges: list[tuple[float, int, int]] = []
    append = edges.append
    for event in trace:  # TraceEvent: (resource, label, kind, start_s, end_s, detail, ...)
        index = kinds.get(event[2])
        if index is not None and not event[5] and event[4] > event[3]:
            append((event[3], 1, index))
            append((event[4], -1, index))
    edges.sort(key=_time_of)
    active = [0] * len(WORK)
    sums = [0.0] * len(WORK)
    overhead = 0.0
    total = 0  # active intervals of every kind: the sum of ``active``, kept as it changes
    clock = 0.0
    for time_s, change, index in edges:
        if time_s > latency_s:  # ``min(time_s, latency_s)``
            time_s = latency_s
        if time_s > clock:
            seconds = time_s - clock
            if total:  # ``_spread``, inlined
                for kind, count in enumerate(active):
                    if count:
                        sums[kind] += seconds * count / total
            else:
                overhead += seconds
            clock = time_s
        active[index] += change
        total += change
    result = dict(zip(WORK, sums, strict=True))
    result["overhead"] = overhead
    if latency_s > clock:
        _spread(result, dict(zip(WORK, active, strict=True)), total, latency_s - clock)
    return {category: result[category] for category in CATEGORIES}


def _spread(result: dict[str, float], active: dict[str, int], total: int, seconds: float) -> None:
    """Share ``seconds`` among the kinds active through them, by their counts; overhead if none."""
    if total:
        for kind in WORK:
            count = active[kind]
            if count:
                result[kind] += seconds * count / total
    else:
        result["overhead"] += seconds


def utilization(trace: list[TraceEvent], latency_s: float) -> dict[Resource, float]:
    """Fraction of the latency each resource was busy; core groups count by the share of cores.

    Rows of one processor's cores are reported together (``Resource.group``). A processor runs one
    kernel at a time and a copy engine one copy, so the intervals of a resource never overlap and
    their weighted durations simply add up. Blocked host threads (``wait``) are idle, not busy.
    """
    # a row is one object for many events: its group's place is found by the row's identity (an
    # int's hash), not by hashing the row's fields per event; each group's sum takes the same
    # additions in the same order as a dictionary keyed by the group would
    slot_of: dict[int, int] = {}
    slots: dict[Resource, int] = {}
    sums: list[float] = []
    for event in trace:  # TraceEvent: (resource, label, kind, start_s, end_s, detail, layer, weight, op)
        if event[2] != "wait":
            slot = slot_of.get(id(event[0]))
            if slot is None:
                group = event[0].group
                slot = slots.get(group)
                if slot is None:
                    slot = slots[group] = len(sums)
                    sums.append(0.0)
                slot_of[id(event[0])] = slot
            sums[slot] += event[7] * (event[4] - event[3])
    busy = dict(zip(slots, sums, strict=True))
    return {
        resource: min(seconds / latency_s, 1.0) if latency_s > 0 else 0.0
        for resource, seconds in busy.items()
    }
