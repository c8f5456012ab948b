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

import attrs

from parsim.hardware.specs import SystemSpec
from parsim.model import transfer
from parsim.model.kernel import kernel_time_s
from parsim.model.modes import default_mode
from parsim.timeline import TraceEvent
from parsim.workloads.base import HOST, AllReduce, Kernel, Transfer, Workload, stream_predecessors, thread_of


@attrs.frozen
class Schedule:
    """Outcome of the analytic list schedule (the analytic counterpart of ``SimResult``)."""

    instance_ends_s: tuple[float, ...]
    trace: tuple[TraceEvent, ...]


def _timed(op, system: SystemSpec, mode: str, overlap: str) -> tuple[float, str, str, str, float]:
    """(seconds, kind, timeline row, exclusive resource, share of cores busy) of one op."""
    gpus = system.gpus
    prefix = f"GPU{max(op.device, 0)} " if gpus > 1 else ""
    family = "NVLink" if system.link is not None and system.link.id.startswith("nvlink") else "PCIe"
    if isinstance(op, Kernel):
        on_host = system.device is None or op.device == HOST
        spec = system.host if on_host else system.device
        kernel_mode = mode if system.device is None or not on_host else default_mode(system.host)
        seconds, kind = kernel_time_s(op, spec, kernel_mode, overlap)
        unit = "SM" if spec.is_gpu else "core"
        cores = 1 if kernel_mode in ("sisd", "simd") else spec.cores
        row = f"{unit} 0" if cores == 1 else f"{unit} 0-{cores - 1}"
        weight = cores / spec.cores
        if on_host:
            return seconds, kind, ("host " if system.device is not None else "") + row, "host", weight
        return seconds, kind, prefix + row, f"kernel {op.device}", weight
    if isinstance(op, AllReduce):
        ring = "NVLink" if system.ring_link.id.startswith("nvlink") else "PCIe"
        return (
            transfer.ring_all_reduce_s(system.ring_link, op.nbytes, system.gpus),
            "transfer",
            f"GPU0 {ring} ring",
            "ring",
            1.0,
        )
    shared = system.device.copy_engines < 2 or not system.link.duplex
    direction = "h2d" if shared else op.direction
    row = f"{prefix}{family} {op.direction}"
    return (
        transfer.transfer_s(system.link, op.nbytes, op.pinned),
        "transfer",
        row,
        f"{direction} {op.device}",
        1.0,
    )


def schedule(
    workload: Workload, system: SystemSpec, mode: str, overlap: str = "roofline", repeats: int = 1
) -> Schedule:
    """Place every op of ``repeats`` back-to-back instances on a timeline.

    Each resource (a GPU's kernel slot, a copy direction, the host CPU, the ring) runs its
    ops in issue order; host threads pay dispatch costs as in the engine.
    """
    cpu_only = system.device is None
    timed = [_timed(op, system, mode, overlap) for op in workload.ops]
    ops = list(workload.ops) * repeats
    per_instance = len(workload.ops)
    previous = stream_predecessors(ops)
    free: dict[str, float] = {}
    host_clock: dict[int, float] = {}
    ends_at: list[float] = []
    trace: list[TraceEvent] = []
    for index, op in enumerate(ops):
        seconds, kind, row, resource, weight = timed[index % per_instance]
        deps = [d + index // per_instance * per_instance for d in workload.deps[index % per_instance]]
        thread = thread_of(op)
        thread_row = "host" if thread == 0 else f"host #{thread}"
        on_host = cpu_only or (isinstance(op, Kernel) and op.device == HOST)
        ready = max(
            [ends_at[d] for d in deps] + ([ends_at[previous[index]]] if previous[index] is not None else []),
            default=0.0,
        )
        clock = host_clock.get(thread, 0.0)
        if on_host and not cpu_only:
            clock = max(clock, ready)
        dispatch_s = system.host.dispatch_s if on_host else system.device.dispatch_s
        trace.append(TraceEvent(thread_row, f"issue {op.name}", "overhead", clock, clock + dispatch_s))
        clock += dispatch_s
        start = max(clock, ready, free.get(resource, 0.0))
        end = start + seconds
        free[resource] = end
        ends_at.append(end)
        trace.append(TraceEvent(row, op.name, kind, start, end, layer=op.layer, weight=weight))
        if on_host or (isinstance(op, Transfer) and not op.pinned):
            clock = end
        host_clock[thread] = clock
    ends = tuple(max(ends_at[r * per_instance : (r + 1) * per_instance]) for r in range(repeats))
    return Schedule(ends, tuple(trace))
