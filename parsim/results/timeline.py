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

from collections import defaultdict
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


def breakdown(trace: list[TraceEvent], latency_s: float) -> dict[str, float]:
    """Seconds per category; the values add up to ``latency_s``.

    A sweep over the interval ends keeps a count of active intervals per kind, so the cost
    is O(n log n) in the number of trace events.
    """
    result = dict.fromkeys(CATEGORIES, 0.0)
    edges: list[tuple[float, int, str]] = []
    append = edges.append
    for event in trace:
        if not event.detail and event.kind in WORK and event.end_s > event.start_s:
            append((event.start_s, 1, event.kind))
            append((event.end_s, -1, event.kind))
    edges.sort(key=_time_of)
    active = dict.fromkeys(WORK, 0)
    total = 0  # active intervals of every kind: the sum of ``active``, kept as it changes
    clock = 0.0
    for time_s, change, kind in edges:
        if time_s > latency_s:  # ``min(time_s, latency_s)``
            time_s = latency_s
        if time_s > clock:
            _spread(result, active, total, time_s - clock)
            clock = time_s
        active[kind] += change
        total += change
    if latency_s > clock:
        _spread(result, active, total, latency_s - clock)
    return result


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
    busy: dict[Resource, float] = defaultdict(float)
    groups: dict[Resource, Resource] = {}  # a row's processor, looked up once per row
    last_row: Resource | None = None  # a run of events on one row (one object) looks it up once
    group: Resource  # set at the first event: no row is None
    for event in trace:
        if event.kind != "wait":
            row = event.resource
            if row is not last_row:
                known = groups.get(row)
                group = known if known is not None else groups.setdefault(row, row.group)
                last_row = row
            busy[group] += event.weight * (event.end_s - event.start_s)
    return {
        resource: min(seconds / latency_s, 1.0) if latency_s > 0 else 0.0
        for resource, seconds in busy.items()
    }
