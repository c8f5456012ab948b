"""One built program on one resolved system -> ``Prediction``: the method's run, nothing around it.

``predict`` resolves names, validates, splits over GPUs, lowers, checks modes and memory, and adds
what a workload's hooks report; what it then asks for — the engine's or the analytic schedule of
the program, its latency, its sustained period and its per-layer rows — lives here, so that
what prices pieces of a larger simulation (``serving.steps``: one serving iteration) can ask for
a program's prediction without importing ``predict``, which dispatches request-level workloads to
that simulation (no import circle).
"""

from __future__ import annotations

import math

from parsim import stack
from parsim.base.caching import cached
from parsim.base.frozen import FrozenMap, freeze
from parsim.hardware.specs import SystemSpec
from parsim.methods import analytic, recurrence
from parsim.model import outcome, traffic, transfer
from parsim.model.library import lower
from parsim.model.modes import check_mode
from parsim.results import algorithms, timeline
from parsim.results.prediction import Prediction
from parsim.results.resources import NETWORK_ROW
from parsim.results.timeline import TraceEvent
from parsim.workloads.base import HOST, Block, Kernel, Workload
from parsim.workloads.records import Throughput
from parsim.workloads.registry import capabilities

THROUGHPUT_REPEATS = 3
LONG_PROGRAM_OPS = 500  # a program this long reaches its steady state within one instance


def throughput_repeats(workload: Workload) -> int:
    """Back-to-back instances simulated for the period: 3, or 2 for long programs (training steps).

    The period is the mean gap between consecutive instance ends. With a few ops the second gap
    can differ from the first while the pipeline fills; a program of hundreds of kernels is in
    its steady state after one instance, and a third would only double the cost.
    """
    return 2 if len(workload.ops) >= LONG_PROGRAM_OPS else THROUGHPUT_REPEATS


@cached(maxsize=1024)
def timing(
    workload: Workload, system: SystemSpec, mode: str, method: str, overlap: str
) -> tuple[float, float]:
    """End of the first of several back-to-back instances, and the mean period between them."""
    if method == "engine":
        from parsim.methods.engine import lone, simulate  # the engine is the only place SimPy is loaded

        repeats = throughput_repeats(workload)
        # one GPU kernel: the engine's rules in closed form, the same ends to the bit (``lone``)
        ends = lone.instance_ends(workload, system, mode, overlap, repeats)
        if ends is None:
            ends = simulate(workload, system, mode, overlap, repeats=repeats, record=False).instance_ends_s
    else:
        ends = analytic.schedule(
            workload, system, mode, overlap, repeats=throughput_repeats(workload)
        ).instance_ends_s
    return ends[0], (ends[-1] - ends[0]) / (len(ends) - 1)


def samples_per_step(workload: Workload) -> int | None:
    """Samples one instance processes, as its definition counts them (None where there are none)."""
    definition = capabilities(workload)
    if definition is None or definition.samples is None:
        return None
    return definition.samples(dict(workload.params))


def latency_run(
    workload: Workload, system: SystemSpec, mode: str, method: str, overlap: str
) -> tuple[tuple[float, ...], tuple[TraceEvent, ...], int, tuple[str, ...]]:
    """The traced run of one instance: its end times, trace, event count and the method's notes."""
    if method == "engine" and by_recurrence(workload, system):
        run = recurrence_run(workload, system, mode, overlap)
        return (run.end_s,), run.trace, run.steps, ()
    if method == "engine":
        from parsim.methods.engine import lone, simulate

        lone_run = lone.latency_run(workload, system, mode, overlap)  # one GPU kernel: no events to step
        if lone_run is not None:
            return lone_run
        simulated = simulate(workload, system, mode, overlap)
        return (
            tuple(simulated.instance_ends_s),
            tuple(simulated.trace),
            simulated.events,
            tuple(simulated.notes),
        )
    scheduled = analytic.schedule(workload, system, mode, overlap)
    return tuple(scheduled.instance_ends_s), tuple(scheduled.trace), 0, ()


def by_recurrence(workload: Workload, system: SystemSpec) -> bool:
    """A pipelined step the engine's rules time exactly without events (``recurrence``), unless its
    parameters ask for the events themselves (``pipeline_events=true``)."""
    return (
        bool(workload.devices)
        and not workload.param("pipeline_events", False)
        and recurrence.covers(workload, system)
    )


def recurrence_run(
    workload: Workload, system: SystemSpec, mode: str, overlap: str, record: bool = True
) -> recurrence.Run:
    """The recurrence's run of ``workload`` with the engine's block times (``recurrence.evaluate``)."""
    from parsim.methods.engine.machine import engine_block_parts

    framework = stack.framework(workload.framework) if workload.framework else None

    def parts(block: Block) -> tuple[float, float]:
        return engine_block_parts(system, mode, overlap, framework, block.kernels, block.collectives)

    return recurrence.evaluate(workload, system, parts, record)


def predict_program(
    workload: Workload, system: SystemSpec, mode: str, method: str, overlap: str, detail: bool = True
) -> Prediction:
    """The prediction of a lowered program; without ``detail``, the figures alone: no per-layer
    rows, utilisation, notes or executed FLOPs (what a sweep's row never reads, a tenth of a
    training step's prediction), every figure the same.

    Only detailed predictions are kept here: the caller of a figures-only one (``predict``, for a
    sweep's rows) keeps it without its trace, and a trace kept here for each point of a sweep
    would be tens of thousands of records the garbage collector walks again and again."""
    if detail:
        return _detailed(workload, system, mode, method, overlap)
    return _program_prediction(workload, system, mode, method, overlap, False)


@cached(maxsize=256)  # predictions keep their traces: a bounded cache bounds the memory
def _detailed(workload: Workload, system: SystemSpec, mode: str, method: str, overlap: str) -> Prediction:
    return _program_prediction(workload, system, mode, method, overlap, True)


def _program_prediction(
    workload: Workload, system: SystemSpec, mode: str, method: str, overlap: str, detail: bool
) -> Prediction:
    ends, trace, events, notes = latency_run(workload, system, mode, method, overlap)
    latency = ends[0]
    # a pipelined step ends with every stage's optimizer step, and the next step's first forward
    # pass waits for stage 0's, the last to finish: back-to-back steps are one latency apart
    period = latency if workload.devices else timing(workload, system, mode, method, overlap)[1]
    throughput = 1.0 / period if period > 0 else math.inf
    parts = timeline.breakdown(list(trace), latency)
    samples = samples_per_step(workload)
    records = (Throughput(samples * throughput),) if samples is not None else ()
    if detail:
        executed = algorithms.executed_flops(workload, system, mode, overlap)
        dtype = str(dict(workload.params).get("dtype", "float32"))
        effective = algorithms.effective_note(
            workload.flops, executed, latency, system.compute.peak_flops_per_s(dtype, matrix=True)
        )
        notes = (
            tuple(notes)
            + algorithms.notes(workload, system, mode, overlap)
            + ((effective,) if effective else ())
            + transfer.pageable_notes(workload, system.link)
            + traffic.traffic_notes(workload, system)
        )
        busy = timeline.utilization(list(trace), latency)
        layers = layer_rows(workload, trace, algorithms.layer_algorithms(workload, system, mode, overlap))
    else:
        executed, notes, busy, layers = None, (), {}, ()
    return Prediction(
        workload=workload.name,
        params=dict(workload.params),
        device=system.compute.id,
        host=system.host.id,
        link=system.link.id if system.link is not None else None,
        mode=mode,
        method=method,
        latency_s=latency,
        throughput_per_s=throughput,
        flops=workload.flops,
        bytes=workload.bytes,
        transfer_bytes=traffic.link_bytes(workload, system),
        bottleneck=outcome.bottleneck(parts),
        breakdown=parts,
        busy=busy,
        trace=trace,
        events=events,
        notes=notes,
        layers=layers,
        gpus=system.total_gpus,
        nodes=system.nodes,
        peer_link=system.peer_link.id if system.peer_link is not None else None,
        records=records,
        executed_flops=executed,
    )


def layer_rows(
    workload: Workload, trace: tuple[TraceEvent, ...], chosen: dict[str, dict[str, str]]
) -> tuple[FrozenMap, ...]:
    """Per-layer time (busy time of its ops on GPU 0 or the host; a pipeline's rows on every
    stage's GPU), FLOPs, bytes and, for convolutions, the library's algorithm per pass
    (``{"fwd": "winograd", ...}``)."""
    if not workload.layers:
        return ()
    every = workload.devices > 0  # a pipeline: each stage's row is its own GPU's

    def counted(device: int) -> bool:
        return every or device in (0, HOST)

    seconds = dict.fromkeys((name for name, _ in workload.layers), 0.0)
    rows: dict[int, bool] = {}  # whether a row counts, by the row's identity: asked once per row
    for event in trace:  # TraceEvent: (resource, label, kind, start_s, end_s, detail, layer, ...)
        if event[6] in seconds and not event[5]:
            counts = rows.get(id(event[0]))
            if counts is None:
                row = event[0]
                # ``counted``; a network row carries the same collective as GPU0's ring row
                counts = rows[id(row)] = (every or row.device in (0, HOST)) and row.kind != NETWORK_ROW
            if counts:
                seconds[event[6]] += event[4] - event[3]
    flops = dict.fromkeys(seconds, 0.0)
    moved = dict.fromkeys(seconds, 0.0)
    per_shape: dict[int, tuple[float, float]] = {}  # a pipeline's passes share a few kernel tuples
    for op in workload.ops:
        if isinstance(op, Kernel) and op.layer in flops and counted(op.device):
            flops[op.layer] += op.work.flops
            moved[op.layer] += op.bytes
        elif isinstance(op, Block) and op.layer in flops:
            if id(op.kernels) not in per_shape:
                per_shape[id(op.kernels)] = (op.flops, op.bytes)
            shape = per_shape[id(op.kernels)]
            flops[op.layer] += shape[0]
            moved[op.layer] += shape[1]
    # frozen here, as ``Prediction`` would freeze them (a ResNet-50 step's 176 rows: a quarter of a
    # millisecond there, converting each row's dict again)
    return tuple(
        FrozenMap(
            {
                "name": name,
                "kind": kind,
                "latency_s": seconds[name],
                "flops": flops[name],
                "bytes": moved[name],
                **({"algorithms": freeze(chosen[name])} if name in chosen else {}),
            }
        )
        for name, kind in workload.layers
    )


def predict_lowered(workload: Workload, system: SystemSpec, method: str = "engine") -> Prediction:
    """A built program on ``system`` in the device's own mode, compute and memory overlapping:
    lowered to its library's kernels and run by ``method`` (what ``predict`` does for a program
    that needs no splitting, hooks or memory check)."""
    return predict_program(
        lower(workload, system), system, check_mode(system.compute, None), method, "roofline"
    )


def trace_lowered(workload: Workload, system: SystemSpec, method: str = "engine") -> tuple[TraceEvent, ...]:
    """The trace of ``predict_lowered(workload, system, method)`` alone: its one traced run, without
    the throughput run (three more instances back to back), the breakdown, notes or layer rows.
    What prices a serving step needs, which reads only when each phase ends (``serving.steps``)."""
    lowered = lower(workload, system)
    return latency_run(lowered, system, check_mode(system.compute, None), method, "roofline")[1]
