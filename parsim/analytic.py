"""Closed forms: the roofline and latency + bytes/bandwidth, composed by a list schedule.

This is the engine's oracle. Each op gets one closed-form duration:

- kernel: ``max(flops / peak, latency + bytes / bandwidth)`` (roofline; ``serial`` adds the
  two) with the same rates the engine uses (``hardware.execution``), but no tiles, no waves
  and no bandwidth sharing;
- transfer: ``link latency + bytes / bandwidth`` (pinned or pageable);

and ops are placed on a timeline by the rules the engine follows (host dispatch in program
order, asynchronous launches, stream order, one kernel at a time, copy engines per
direction). Wherever no contention, quantisation or overlap of copies applies, engine and
analytic agree to within 1 %; the tests explain every other difference.
"""

from __future__ import annotations

import attrs

from parsim.hardware.execution import execution
from parsim.hardware.specs import SystemSpec
from parsim.timeline import TraceEvent
from parsim.workloads.base import Kernel, Transfer, Workload


def kernel_time_s(
    kernel: Kernel, system: SystemSpec, mode: str, overlap: str = "roofline"
) -> tuple[float, str]:
    """Roofline time of one kernel on the executing processor, and which leg bounds it."""
    spec = system.compute
    ex = execution(spec, mode, kernel)
    if ex.interpreted:
        compute = kernel.work_items * kernel.python_ops_per_item * ex.interpreted_element_s
    else:
        compute = kernel.flops / (ex.cores * ex.core_flops_per_s)
        compute += kernel.special_ops / (ex.cores * ex.core_special_per_s)
    memory = 0.0
    if kernel.bytes > 0:
        memory = spec.memory.latency_s + kernel.bytes / ex.bandwidth_Bps(ex.cores)
    kind = "compute" if compute >= memory else "memory"
    total = compute + memory if overlap == "serial" else max(compute, memory)
    return total, kind


def transfer_time_s(transfer: Transfer, system: SystemSpec) -> float:
    """Latency plus bytes over the pinned or pageable bandwidth of the link."""
    return system.link.transfer_s(transfer.nbytes, pinned=transfer.pinned)


@attrs.frozen
class Schedule:
    """Outcome of the analytic list schedule (the analytic counterpart of ``SimResult``)."""

    instance_ends_s: tuple[float, ...]
    trace: tuple[TraceEvent, ...]


def schedule(
    workload: Workload, system: SystemSpec, mode: str, overlap: str = "roofline", repeats: int = 1
) -> Schedule:
    """Place every op of ``repeats`` back-to-back instances on a timeline."""
    asynchronous = system.device is not None
    spec = system.compute
    durations = []
    for op in workload.ops:
        if isinstance(op, Kernel):
            seconds, kind = kernel_time_s(op, system, mode, overlap)
            durations.append((seconds, kind, "SM 0-" if spec.is_gpu else "core 0-"))
        else:
            family = "NVLink" if system.link.id.startswith("nvlink") else "PCIe"
            durations.append((transfer_time_s(op, system), "transfer", f"{family} {op.direction}"))
    shared_copy_engine = spec.copy_engines < 2 or (system.link is not None and not system.link.duplex)
    free = {"kernel": 0.0, "h2d": 0.0, "d2h": 0.0}
    stream_end: dict[int, float] = {}
    host = 0.0
    trace: list[TraceEvent] = []
    ends = []
    for _ in range(repeats):
        done: list[float] = []
        for op, deps, (seconds, kind, row) in zip(workload.ops, workload.deps, durations, strict=True):
            trace.append(TraceEvent("host", f"issue {op.name}", "overhead", host, host + spec.dispatch_s))
            host += spec.dispatch_s
            unit = "kernel" if isinstance(op, Kernel) else op.direction
            if shared_copy_engine and unit != "kernel":
                unit = "h2d"
            start = max(host, stream_end.get(op.stream, 0.0), free[unit], *(done[d] for d in deps))
            end = start + seconds
            free[unit] = end
            stream_end[op.stream] = end
            done.append(end)
            if row.endswith("-"):
                row = f"{row}{spec.cores - 1}" if mode not in ("sisd", "simd") else row[:-3]
            trace.append(TraceEvent(row, op.name, kind, start, end))
            if not asynchronous or (isinstance(op, Transfer) and not op.pinned):
                host = end
        ends.append(max(done))
    return Schedule(tuple(ends), tuple(trace))
