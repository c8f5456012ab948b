"""Closed forms: the roofline and latency + bytes/bandwidth, composed by a list schedule.

This is the engine's oracle. Each op gets one closed-form duration:

- kernel: ``max(flops / peak, latency + bytes / bandwidth)`` (roofline; ``serial`` adds the
  two) with the same rates the engine uses (``hardware.execution``), but no tiles, no waves
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

from parsim.hardware.execution import default_mode, execution
from parsim.hardware.specs import ProcessorSpec, SystemSpec
from parsim.timeline import TraceEvent
from parsim.workloads.base import HOST, AllReduce, Kernel, Transfer, Workload, stream_predecessors, thread_of


def kernel_time_s(
    kernel: Kernel, spec: ProcessorSpec, mode: str, overlap: str = "roofline"
) -> tuple[float, str]:
    """Roofline time of one kernel on ``spec``, and which leg (compute or memory) bounds it."""
    ex = execution(spec, mode, kernel)
    if ex.interpreted:
        compute = kernel.work_items * kernel.python_ops_per_item * ex.interpreted_element_s
    else:
        compute = kernel.flops / (ex.cores * ex.core_flops_per_s)
        compute += kernel.special_ops / (ex.cores * ex.core_special_per_s)
        if ex.core_op_rate:
            compute = kernel.work_items / (ex.cores * ex.core_op_rate)
    memory = 0.0
    if kernel.bytes > 0:
        memory = spec.memory.latency_s + ex.memory_s(kernel.bytes, kernel.cold_bytes / kernel.bytes, ex.cores)
    kind = "compute" if compute >= memory else "memory"
    total = compute + memory if overlap == "serial" else max(compute, memory)
    if not spec.is_gpu and kernel.gemm_mn is None and ex.cores > 1 and kernel.work_items > ex.tile_items:
        total += spec.parallel_dispatch_s  # fork/join of the cores the work is spread over
    return total, kind


def transfer_time_s(transfer: Transfer, system: SystemSpec) -> float:
    """Latency plus bytes over the pinned or pageable bandwidth of the link."""
    return system.link.transfer_s(transfer.nbytes, pinned=transfer.pinned)


def all_reduce_time_s(nbytes: float, system: SystemSpec) -> float:
    """Ring all-reduce: 2(G-1) steps of (latency + nbytes/G / bandwidth)."""
    gpus = system.gpus
    if gpus == 1:
        return 0.0
    link = system.ring_link
    return 2 * (gpus - 1) * (link.latency_s + nbytes / gpus / link.bandwidth_Bps)


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
        return all_reduce_time_s(op.nbytes, system), "transfer", f"GPU0 {ring} ring", "ring", 1.0
    shared = system.device.copy_engines < 2 or not system.link.duplex
    direction = "h2d" if shared else op.direction
    row = f"{prefix}{family} {op.direction}"
    return transfer_time_s(op, system), "transfer", row, f"{direction} {op.device}", 1.0


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
