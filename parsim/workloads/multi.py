"""Placing a workload: spread over several GPUs (``--gpus G``), or run on the CPU alone.

Where the work is made of independent items, G GPUs each take a 1/G share, driven by their
own host thread: an elementwise op or a reduction splits its elements, a matrix multiply its
rows, a convolution its images, ``copy`` and ``offload`` their elements (so the GPUs' copies
meet in the shared PCIe switch uplinks), ``serve`` its batch. Training a network on several
GPUs needs gradient synchronisation, which is what ``data_parallel`` models. Each workload's
definition says which applies (``WorkloadDef.split``).

On a CPU-only system the copies of a training or serving step only staged data between host
and device memory; ``on_cpu`` drops them and lets the CPU run every kernel, so the same
network can be compared on a CPU and a GPU.
"""

from __future__ import annotations

import math

import attrs

from parsim.base.errors import ParsimError
from parsim.workloads.base import AllReduce, Block, Kernel, Op, Transfer, Workload


def split_over_gpus(workload: Workload, gpus: int, how: str | None, instead: str = "") -> Workload:
    """The same work shared by ``gpus`` GPUs (device g runs share g on its own stream).

    Args:
        workload: the work for one GPU.
        gpus: how many share it.
        how: ``items`` (independent items), ``batch`` (needs at least one sample per GPU), or None
            when the workload cannot be split (``WorkloadDef.split``).
        instead: what to use instead, shown when it cannot be split.
    """
    if gpus == 1 or all(isinstance(op, AllReduce) for op in workload.ops):
        return attrs.evolve(workload, gpus=gpus)  # a collective already spans every GPU
    if how is None:
        raise ParsimError(f"'gpus' > 1 does not apply to {workload.name}{instead}: {gpus}")
    if how == "batch" and workload.param("batch") < gpus:
        raise ParsimError(f"{workload.name}: 'batch' {workload.param('batch')} is smaller than 'gpus' {gpus}")
    ops = tuple(_share(op, gpus, g) for g in range(gpus) for op in workload.ops)
    per = len(workload.ops)
    deps = tuple(tuple(d + g * per for d in op_deps) for g in range(gpus) for op_deps in workload.deps)
    memory = workload.memory.scaled(1 / gpus) if workload.memory is not None else None
    return attrs.evolve(
        workload, ops=ops, deps=deps, footprint_B=workload.footprint_B / gpus, memory=memory, gpus=gpus
    )


def _share(op: Op, gpus: int, device: int) -> Op:
    if isinstance(op, AllReduce):
        return op  # already spans every GPU
    if isinstance(op, Transfer):
        return attrs.evolve(op, nbytes=op.nbytes / gpus, device=device)
    if isinstance(op, Block):
        raise ParsimError(f"{op.name}: a pipeline stage's pass cannot be split further over GPUs")
    items = max(1, math.ceil(op.work.work_items / gpus))
    gemm_mn = (
        None
        if op.library.gemm_mn is None
        else (max(1, math.ceil(op.library.gemm_mn[0] / gpus)), op.library.gemm_mn[1])
    )
    conv = op.library.conv  # a convolution pass over 1/gpus of the images
    return op.but(
        flops=op.work.flops / gpus,
        bytes_read=op.work.bytes_read / gpus,
        bytes_written=op.work.bytes_written / gpus,
        cold_bytes=op.access.cold_bytes / gpus,
        work_items=items,
        special_ops=op.work.special_ops / gpus,
        int_ops=op.work.int_ops / gpus,
        gemm_mn=gemm_mn,
        conv=None if conv is None else conv._replace(batch=max(1, math.ceil(conv.batch / gpus))),
        nchw_B=op.library.nchw_B / gpus,
        device=device,
    )


def on_cpu(workload: Workload) -> Workload:
    """The workload without its staging copies, every kernel on the CPU (device 0)."""
    if not workload.staging:
        return workload
    keep = [i for i, op in enumerate(workload.ops) if isinstance(op, Kernel)]
    position = {old: new for new, old in enumerate(keep)}
    ops = tuple(attrs.evolve(workload.ops[i], device=0) for i in keep)
    deps = tuple(tuple(position[d] for d in workload.deps[i] if d in position) for i in keep)
    return attrs.evolve(workload, ops=ops, deps=deps)
