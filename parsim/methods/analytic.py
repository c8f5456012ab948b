"""Closed forms: the roofline and latency + bytes/bandwidth, composed by a list schedule.

This is the engine's oracle. Each op gets one closed-form duration:

- kernel: ``max(flops / peak, latency + bytes / bandwidth)`` (roofline; ``serial`` adds the
  two) with the closed forms of the model core (``parsim.model``), but no tiles, no waves
  and no bandwidth sharing;
- transfer: ``link latency + bytes / bandwidth`` (pinned or pageable), with no sharing of
  a switch uplink between GPUs;
- ring all-reduce: ``2(G-1) x (latency + bytes/G / bandwidth)``;

and ops are placed on a timeline by the rules the engine follows (host dispatch in program
order per host thread, asynchronous launches, stream order, one kernel at a time per
processor, copy engines per direction, the host waiting for inputs of its own work).
Wherever no contention, quantisation or overlap of copies applies, engine and analytic agree
to within 1 %; the tests explain every other difference.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from parsim import stack
from parsim.base.caching import cached
from parsim.hardware.specs import SystemSpec
from parsim.model import collectives, placement, transfer
from parsim.model.blocks import block_parts
from parsim.model.issue import issue_s, step_issue_s
from parsim.model.kernel import kernel_time_s
from parsim.model.modes import busy_cores, default_mode
from parsim.results import resources
from parsim.results.resources import Resource
from parsim.results.timeline import TraceEvent
from parsim.stack import FrameworkSpec
from parsim.workloads.base import (
    HOST,
    AllReduce,
    Block,
    Kernel,
    Op,
    Workload,
    stream_predecessors,
    thread_of,
)


@attrs.frozen
class Schedule:
    """Outcome of the analytic list schedule (the analytic counterpart of ``SimResult``)."""

    instance_ends_s: tuple[float, ...]
    trace: tuple[TraceEvent, ...]


@cached(maxsize=65536)  # the latency and the throughput schedules time the same ops
def _timed(
    op: Op, system: SystemSpec, mode: str, overlap: str, framework: FrameworkSpec | None = None
) -> tuple[float, str, Resource, tuple[object, ...], float]:
    """(seconds, kind, timeline row, exclusive resource, share of cores busy) of one op."""
    if isinstance(op, Block):
        spec = system.gpu
        compute, communication = block_parts(
            system, framework, op.kernels, op.collectives, lambda k: kernel_time_s(k, spec, mode, overlap)[0]
        )
        row = resources.cores(system, op.device, spec.cores)
        return compute + communication, "compute", row, ("kernel", op.device), 1.0
    if isinstance(op, Kernel):
        host = placement.on_host(system, op)
        spec, kernel_mode = placement.kernel_processor(system, op, mode)
        seconds, kind = kernel_time_s(op, spec, kernel_mode, overlap)
        if framework is not None and not host:
            seconds = framework.floor(seconds, op.issue.multi_tensor)
        cores = busy_cores(spec, kernel_mode)
        row = resources.cores(system, HOST if host else op.device, cores)
        return seconds, kind, row, ("kernel", row.device), cores / spec.cores
    if isinstance(op, AllReduce):
        seconds = collectives.op_timing(system, op).seconds
        # one communicator per GPU's collective stream (the single one of a data-parallel step)
        return (
            seconds,
            "transfer",
            resources.ring(system, max(op.device, 0)),
            ("ring", op.device, op.stream),
            1.0,
        )
    # nothing is shared between GPUs here: a copy queues behind its GPU's copies in its lane
    engine = ("copy", placement.copy_lane(system, op.direction), op.device)
    seconds = transfer.transfer_s(system.host_link, op.nbytes, op.pinned, op.direction)
    return seconds, "transfer", resources.link(system, op.device, op.direction), engine, 1.0


def schedule(
    workload: Workload, system: SystemSpec, mode: str, overlap: str = "roofline", repeats: int = 1
) -> Schedule:
    """Place every op of ``repeats`` back-to-back instances on a timeline.

    Each resource (a GPU's kernel slot, a copy direction, the host CPU, the ring) runs its
    ops in issue order; host threads pay dispatch costs as in the engine.
    """
    cpu_only = system.device is None
    framework = stack.framework(workload.framework) if workload.framework else None
    timed = [_timed(op, system, mode, overlap, framework) for op in workload.ops]
    ops = list(workload.ops) * repeats
    per_instance = len(workload.ops)
    previous = stream_predecessors(ops)
    free: dict[tuple[object, ...], float] = {}
    host_clock: dict[int, float] = {}
    ends_at: list[float] = []
    trace: list[TraceEvent] = []
    thread_rows: dict[int, Resource] = {}
    for index, op in enumerate(ops):
        seconds, kind, row, resource, weight = timed[index % per_instance]
        deps = [d + index // per_instance * per_instance for d in workload.deps[index % per_instance]]
        thread = thread_of(op)
        thread_row = thread_rows.get(thread) or thread_rows.setdefault(thread, resources.thread(thread))
        on_host = placement.on_host(system, op)
        before = previous[index]
        ready = max(
            [ends_at[d] for d in deps] + ([ends_at[before]] if before is not None else []), default=0.0
        )
        clock = host_clock.get(thread, 0.0)
        if on_host and not cpu_only:
            clock = max(clock, ready)
        step_s = step_issue_s(system, framework, index, per_instance)
        if step_s:  # a compiled step is dispatched once, before its first op
            trace.append(
                TraceEvent(thread_row, "dispatch the compiled step", "overhead", clock, clock + step_s)
            )
            clock += step_s
        dispatch_s = 0.0 if isinstance(op, Block) else issue_s(system, framework, on_host, op)
        trace.append(TraceEvent(thread_row, f"issue {op.name}", "overhead", clock, clock + dispatch_s))
        clock += dispatch_s
        start = max(clock, ready, free.get(resource, 0.0))
        end = start + seconds
        free[resource] = end
        ends_at.append(end)
        trace.append(TraceEvent(row, op.name, kind, start, end, layer=op.layer, weight=weight, op=op))
        if placement.blocks_host(system, op):
            clock = end
        host_clock[thread] = clock
    ends = tuple(max(ends_at[r * per_instance : (r + 1) * per_instance]) for r in range(repeats))
    return Schedule(ends, tuple(trace))


def gpu_kernel_s(
    kernels: Iterable[Kernel], system: SystemSpec, framework: FrameworkSpec | None, overlap: str = "roofline"
) -> float:
    """The GPU time of ``kernels`` as a profiler sums it: each kernel's closed form, at least the
    framework's floor (``FrameworkSpec.floor``), host issue left out."""
    spec, mode = system.gpu, default_mode(system.gpu)
    total = 0.0
    for kernel in kernels:
        seconds = kernel_time_s(kernel, spec, mode, overlap)[0]
        total += framework.floor(seconds, kernel.issue.multi_tensor) if framework else seconds
    return float(total)
