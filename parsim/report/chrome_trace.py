"""Timelines as Chrome Trace Event files: what Perfetto, ``chrome://tracing`` and PyTorch's profiler open.

The Trace Event format is a JSON object whose ``traceEvents`` list holds complete events (``"ph":
"X"``: a name, a start ``ts`` and a duration ``dur`` in microseconds, on a thread ``tid`` of a
process ``pid``), counters (``"ph": "C"``: values that hold until the next sample) and metadata
(``"ph": "M"``: process and thread names and their order). A prediction maps onto it directly:

- one **process** per device: the host CPU, each GPU, and the node's network (a cluster's NICs);
  a scenario's cases each get their own processes, named after the case;
- one **thread** per row of the built-in timeline (``plots.timeline``): a host thread (the issue
  queue), a processor's cores (the core range an op occupied is in its arguments), a memory
  level, a link direction, a GPU's collective ring, the network. A thread's slices must nest, so
  intervals of one row that overlap (two kernels streaming from one memory at once, a host wait
  beside an issue) go to extra threads of the same row, named ``(lane 2)``, ``(lane 3)``...;
- one **complete event** per busy interval of ``Prediction.trace``, named as the timeline labels
  it, its category the kind of work (``compute``, ``memory``, ``transfer``, ``overhead``,
  ``wait``), its arguments the op's figures: ``flops`` and ``bytes`` of the whole op (repeated on
  every row the op occupies: ``detail`` marks the supporting rows), its ``op`` type, ``phase``,
  ``part`` (its role in the layer: ``qkv``, ``attention core``), ``layer``, ``dtype``, ``stream``;
- one **counter** per memory level, link, ring and network row: the bandwidth in use, B/s (the
  op's bytes over its interval, summed over the intervals active at once; on ring and network
  rows nccl-tests' bus bandwidth, the share of a collective's buffer each GPU sends).

A served load (``llm_load``) has no op timeline; its built-in figure (``plots.serving.load_timeline``)
is three step functions, written as counters at the same sample times: requests waiting, running
and the KV cache's use.

Times are written to the nanosecond (Perfetto's resolution), so the file's events start and last
what the built-in timeline's do to within half a nanosecond. Perfetto turns a ``ts`` into
nanoseconds by multiplying by 1000 (older versions truncate, newer round), so each time is
written as the double nearest ``ns / 1000`` that both ways give back exactly ``ns``: a slice
that starts where another ends on the same thread then starts exactly there, and the lanes,
assigned on those integers, never overlap. No ``displayTimeUnit`` is written: Perfetto reads it
as the unit of ``ts`` itself, unlike the format's definition. Strings are written as UTF-8, not
``\\u`` escapes, which Perfetto's tokenizer refuses.

A trace holds an event per busy interval, so it is bounded: ``event_count`` counts the events
a file would hold before any is built, and ``check_budget`` refuses one above the entry point's
``trace_events`` (``base.budget``).
"""

from __future__ import annotations

import functools
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from parsim import __version__
from parsim.base import safefiles
from parsim.base.budget import Budget
from parsim.base.frozen import plain
from parsim.base.paths import output_path
from parsim.methods.serving.metrics import LoadTimeline
from parsim.model.collectives import bus_factor
from parsim.results.prediction import Prediction
from parsim.results.resources import NETWORK_ROW, Resource
from parsim.results.timeline import TraceEvent
from parsim.workloads.base import HOST, AllReduce, Block, Kernel, Transfer

SUFFIXES = (".json",)
BANDWIDTH_ROWS = frozenset({"memory", "link", "ring", NETWORK_ROW})
"""Rows whose counter is the bandwidth in use (cores and host threads move no bytes of their own)."""
_ROW_ORDER = {"thread": 0, "h2d": 1, "cores": 3, "memory": 5, "d2h": 6, "ring": 8, NETWORK_ROW: 9}
"""A device's rows in the order the built-in timeline draws them (work flowing in, computed, out);
a row of a kind it does not know goes last rather than failing."""


def nanoseconds(seconds: float) -> int:
    """``seconds`` to the nearest nanosecond."""
    return round(seconds * 1e9)


def microseconds(ns: int) -> float:
    """The double nearest ``ns / 1000`` that Perfetto reads back as exactly ``ns`` nanoseconds,
    whether it truncates ``ts * 1000`` or rounds it (see the module's docstring)."""
    value = ns / 1000
    while value * 1000.0 < ns:  # at most a step or two: the quotient is within an ulp
        value = math.nextafter(value, math.inf)
    return value


def event_count(predictions: Iterable[Prediction] = (), loads: Iterable[LoadTimeline] = ()) -> int:
    """The events a trace of ``predictions`` and ``loads`` holds at most, counted before building it:
    a complete event per busy interval, two counter samples per interval of a bandwidth row, three
    counters per sample of a load (metadata, a few per thread, is not counted)."""
    total = 0
    for prediction in predictions:
        bandwidth = sum(1 for e in prediction.trace if e.resource.kind in BANDWIDTH_ROWS)
        total += len(prediction.trace) + 2 * bandwidth
    return total + sum(3 * len(load.time_s) for load in loads)


def check_budget(budget: Budget | None, count: int) -> None:
    """Refuse a trace of ``count`` events above ``budget``'s ``trace_events`` (None: no bound)."""
    if budget is not None:
        budget.check(count, "trace_events", "the trace's event count")


@attrs.frozen
class PendingTrace:
    """A trace that passed its budget, built only when asked: the app checks each trace as its page
    is drawn (a refusal shows in place) and builds the file when the download button is pressed."""

    events: int
    """The events the file will hold at most (``event_count``)."""
    build: Callable[[], dict[str, Any]]
    """Builds the Trace Event document."""


def prediction_trace(prediction: Prediction, budget: Budget | None = None) -> dict[str, Any]:
    """The Trace Event document of one prediction's timeline."""
    return cases_trace([("", prediction)], budget=budget)


def cases_trace(
    cases: Sequence[tuple[str, Prediction]], title: str = "", budget: Budget | None = None
) -> dict[str, Any]:
    """The Trace Event document of several predictions (a scenario's cases), each ``(label,
    prediction)`` in its own processes named after its label, all from time zero as the built-in
    stacked timelines draw them.

    Raises:
        ParsimError: more events than ``budget`` allows (before any is built).
    """
    return pending_cases(cases, title, budget).build()


def pending_cases(
    cases: Sequence[tuple[str, Prediction]], title: str = "", budget: Budget | None = None
) -> PendingTrace:
    """``cases_trace`` checked against ``budget`` now, built later.

    Raises:
        ParsimError: more events than ``budget`` allows.
    """
    cases = tuple(cases)
    count = event_count(p for _, p in cases)
    check_budget(budget, count)
    return PendingTrace(count, functools.partial(_cases_document, cases, title))


def _cases_document(cases: Sequence[tuple[str, Prediction]], title: str) -> dict[str, Any]:
    events: list[dict[str, Any]] = []
    pids = _Pids()
    for label, prediction in cases:
        events.extend(_prediction_events(prediction, label, pids))
    return _document(
        events,
        {
            "title": title,
            "cases": [{"label": label, **_about(prediction)} for label, prediction in cases],
        },
    )


def load_trace(timeline: LoadTimeline, title: str = "", budget: Budget | None = None) -> dict[str, Any]:
    """The Trace Event document of a served load's timeline: requests waiting, requests running
    and the KV cache's use (percent of its blocks), as counters at the timeline's sample times.

    Raises:
        ParsimError: more events than ``budget`` allows (before any is built).
    """
    return pending_load(timeline, title, budget).build()


def pending_load(timeline: LoadTimeline, title: str = "", budget: Budget | None = None) -> PendingTrace:
    """``load_trace`` checked against ``budget`` now, built later.

    Raises:
        ParsimError: more events than ``budget`` allows.
    """
    count = event_count(loads=[timeline])
    check_budget(budget, count)
    return PendingTrace(count, functools.partial(_load_document, timeline, title))


def _load_document(timeline: LoadTimeline, title: str) -> dict[str, Any]:
    pid = 1
    events: list[dict[str, Any]] = [
        _meta("process_name", pid, None, {"name": "server (all replicas)"}),
        _meta("process_sort_index", pid, None, {"sort_index": pid}),
    ]
    last: dict[int, int] = {}  # several samples in one nanosecond: the last holds
    times = [nanoseconds(float(t)) for t in timeline.time_s]
    for index, ns in enumerate(times):
        last[ns] = index
    for ns, index in sorted(last.items()):
        ts = microseconds(ns)
        events.append(
            _counter(
                "requests",
                pid,
                ts,
                {"waiting": float(timeline.waiting[index]), "running": float(timeline.running[index])},
            )
        )
        events.append(_counter("KV cache used", pid, ts, {"%": 100.0 * float(timeline.kv_fraction[index])}))
    return _document(events, {"title": title, "samples": len(times)})


def write(path: str | Path, document: dict[str, Any], option: str = "--trace") -> Path:
    """Write ``document`` to ``path`` (a ``.json`` file; never through a link, atomically).

    Raises:
        ParsimError: a path that is not a writable ``.json`` file name, in one line naming ``option``.
    """
    target = output_path(path, SUFFIXES, option)
    return safefiles.write_text(target, dumps(document), option)


def dumps(document: dict[str, Any]) -> str:
    """Compact JSON text (UTF-8 strings, no NaN: a non-finite argument would break every reader)."""
    return json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


# --- building the events ---


class _Pids:
    """Process ids, handed out in order: cases one after another, each case's devices in order."""

    def __init__(self) -> None:
        self.next = 1

    def take(self) -> int:
        pid, self.next = self.next, self.next + 1
        return pid


def _process_of(resource: Resource) -> tuple[int, int]:
    """(order, device) of the process a row belongs to: the host, GPUs by index, the network last."""
    if resource.kind == NETWORK_ROW:
        return (2, 0)
    if resource.device == HOST:
        return (0, HOST)
    return (1, resource.device)


def _process_name(key: tuple[int, int], prediction: Prediction, label: str) -> str:
    kind, device = key
    if kind == 0:  # the host beside a GPU, or the CPU that runs everything
        name = (
            f"host ({prediction.host})"
            if prediction.host != prediction.device
            else f"CPU ({prediction.device})"
        )
    elif kind == 1:
        name = f"GPU{device} ({prediction.device})"
    else:
        name = "network (the node's NICs)" if prediction.nodes > 1 else "network"
    return f"{label}: {name}" if label else name


def _row_order(row: Resource) -> tuple[int, bool, int, str]:
    step = _ROW_ORDER.get(row.direction or row.kind, 99)
    return (step, row.unit != "PCIe", row.first if row.kind == "thread" else 0, row.label)


def _prediction_events(prediction: Prediction, label: str, pids: _Pids) -> list[dict[str, Any]]:
    """Metadata, complete events and counters of one prediction, its processes taken from ``pids``."""
    timed = sorted(
        (
            (nanoseconds(e.start_s), nanoseconds(e.start_s + max(e.duration_s, 0.0)), e)
            for e in prediction.trace
        ),
        key=lambda item: (item[0], item[1]),
    )
    rows = sorted({e.resource.group for _, _, e in timed}, key=lambda r: (_process_of(r), _row_order(r)))
    processes: dict[tuple[int, int], int] = {}
    for row in rows:
        key = _process_of(row)
        if key not in processes:
            processes[key] = pids.take()
    lanes: dict[Resource, list[int]] = defaultdict(list)  # each lane's last end, per row
    placed: list[tuple[int, int, TraceEvent, Resource, int]] = []
    for start, end, event in timed:
        row = event.resource.group
        ends = lanes[row]
        lane = next((i for i, last in enumerate(ends) if last <= start), len(ends))
        if lane == len(ends):
            ends.append(end)
        else:
            ends[lane] = end
        placed.append((start, end, event, row, lane))
    threads: dict[tuple[Resource, int], tuple[int, int]] = {}  # (row, lane) -> (pid, tid)
    out: list[dict[str, Any]] = []
    for key, pid in processes.items():
        out.append(_meta("process_name", pid, None, {"name": _process_name(key, prediction, label)}))
        out.append(_meta("process_sort_index", pid, None, {"sort_index": pid}))
    tid = 0
    for order, row in enumerate(rows):
        pid = processes[_process_of(row)]
        for lane in range(len(lanes[row])):
            tid += 1
            threads[(row, lane)] = (pid, tid)
            name = row.label if lane == 0 else f"{row.label} (lane {lane + 1})"
            out.append(_meta("thread_name", pid, tid, {"name": name}))
            out.append(_meta("thread_sort_index", pid, tid, {"sort_index": order * 1000 + lane}))
    changes: dict[Resource, list[tuple[int, float]]] = defaultdict(list)
    for start, end, event, row, lane in placed:
        pid, tid = threads[(row, lane)]
        out.append(
            {
                "name": event.label,
                "cat": event.kind,
                "ph": "X",
                "ts": microseconds(start),
                "dur": microseconds(end - start),
                "pid": pid,
                "tid": tid,
                "args": _args(event, prediction.gpus),
            }
        )
        if row.kind in BANDWIDTH_ROWS and end > start:
            rate = moved_B(event, prediction.gpus) / ((end - start) * 1e-9)
            if rate > 0:
                changes[row].append((start, rate))
                changes[row].append((end, -rate))
    for row, steps in changes.items():
        out.extend(_bandwidth(row, processes[_process_of(row)], steps))
    return out


def _bandwidth(row: Resource, pid: int, steps: list[tuple[int, float]]) -> list[dict[str, Any]]:
    """The row's bandwidth in use as counter samples: one per instant it changes (the sum of the
    active intervals' rates, exactly 0 when none is active, not a rounding residue)."""
    name = f"{row.label} bandwidth"
    steps.sort(key=lambda step: step[0])
    samples: list[dict[str, Any]] = []
    level, active, index = 0.0, 0, 0
    while index < len(steps):
        time = steps[index][0]
        while index < len(steps) and steps[index][0] == time:
            level += steps[index][1]
            active += 1 if steps[index][1] > 0 else -1
            index += 1
        if active == 0:
            level = 0.0
        samples.append(_counter(name, pid, microseconds(time), {"B/s": max(level, 0.0)}))
    return samples


def moved_B(event: TraceEvent, gpus: int) -> float:
    """Bytes the interval moves on its row: a kernel's (or a pass's) memory traffic on a memory row,
    a copy's bytes, and for a collective what each GPU of its group sends, nccl-tests' bus bytes
    (``model.collectives.bus_factor``: a ring all-reduce sends ``2(n-1)/n`` of its buffer)."""
    op = event.op
    if isinstance(op, Transfer):
        return op.nbytes
    if isinstance(op, AllReduce):
        return op.nbytes * bus_factor(op.kind, op.ranks or gpus)
    if isinstance(op, Block):
        if event.resource.kind == "memory":
            return op.bytes
        return sum(c.nbytes * bus_factor(c.kind, c.ranks or gpus) for c in op.collectives)
    if isinstance(op, Kernel) and event.resource.kind == "memory":
        return op.bytes
    return 0.0


def _args(event: TraceEvent, gpus: int) -> dict[str, Any]:
    """The interval's arguments: its kind, the op's figures and role (empty fields left out)."""
    args: dict[str, Any] = {"kind": event.kind}
    if event.detail:
        args["detail"] = True
    if event.layer:
        args["layer"] = event.layer
    row = event.resource
    if row.kind == "cores" and row.busy:
        args["cores"] = f"{row.first}-{row.first + row.busy - 1}"
        args["weight"] = event.weight
    op = event.op
    if isinstance(op, Kernel):
        args.update(
            op="kernel",
            flops=op.work.flops,
            bytes=op.bytes,
            dtype=op.work.dtype,
            matrix=op.work.matrix,
            stream=op.stream,
            phase=op.phase,
            part=op.part,
        )
    elif isinstance(op, Transfer):
        args.update(
            op="copy",
            bytes=op.nbytes,
            direction=op.direction,
            pinned=op.pinned,
            stream=op.stream,
            phase=op.phase,
        )
    elif isinstance(op, AllReduce):
        args.update(
            op="collective",
            collective=op.kind,
            bytes=op.nbytes,
            ranks=op.ranks or gpus,
            algorithm=op.algorithm,
            stream=op.stream,
        )
    elif isinstance(op, Block):
        args.update(
            op="pass",
            flops=op.flops,
            bytes=op.bytes,
            kernels=len(op.kernels),
            collectives=len(op.collectives),
            stream=op.stream,
        )
    moved = moved_B(event, gpus) if row.kind in BANDWIDTH_ROWS else 0.0
    if moved and moved != args.get("bytes"):
        args["moved_B"] = moved
    return {key: _finite(value) for key, value in args.items() if value != ""}


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _meta(name: str, pid: int, tid: int | None, args: dict[str, Any]) -> dict[str, Any]:
    event: dict[str, Any] = {"name": name, "ph": "M", "pid": pid, "args": args}
    if tid is not None:
        event["tid"] = tid
    return event


def _counter(name: str, pid: int, ts: float, values: dict[str, float]) -> dict[str, Any]:
    return {"name": name, "ph": "C", "ts": ts, "pid": pid, "args": values}


def _about(prediction: Prediction) -> dict[str, Any]:
    """The prediction's identity and headline figures, for the file's ``otherData``."""
    return {
        "workload": prediction.workload,
        "params": {key: str(value) for key, value in plain(dict(prediction.params)).items()},
        "device": prediction.device,
        "host": prediction.host,
        "link": prediction.link,
        "gpus": prediction.gpus,
        "nodes": prediction.nodes,
        "method": prediction.method,
        "latency_s": _finite(prediction.latency_s),
        "bottleneck": prediction.bottleneck,
    }


def _document(events: list[dict[str, Any]], about: dict[str, Any]) -> dict[str, Any]:
    return {
        "traceEvents": events,
        "otherData": {"generator": f"parsim {__version__}", **about},
    }
