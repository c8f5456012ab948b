"""Gradient synchronisation as PyTorch DDP and ZeRO perform it: buckets reduced during the backward pass.

DDP (Li et al., "PyTorch Distributed", VLDB 2020, section 3.2.3) groups the gradients into
buckets of ``bucket_cap_mb`` = 25 MB in reverse order of the parameters, the order the backward
pass produces them. As soon as a bucket's last gradient exists on a GPU, that GPU's part of the
bucket's all-reduce may start; NCCL runs the buckets one after another on its own stream while
the backward pass computes the gradients of the layers before. Only what is left when the
backward pass ends is exposed: with ``overlap=false`` every bucket waits for the end of the
backward pass (Horovod without tensor fusion overlap, or DDP under ``no_sync`` until the last step).

ZeRO (Rajbhandari et al., SC20) shards what each GPU keeps over the N data-parallel GPUs:
stage 1 Adam's moments, stage 2 also the gradients, stage 3 also the weights. The buckets are then
reduce-scattered (each GPU keeps the sum of its 1/N), each GPU updates its 1/N of the weights and
the updated weights are all-gathered; stage 3 also all-gathers each bucket's weights before its
layers run forward and again before backward. Stages 1 and 2 move what an all-reduce moves;
stage 3 half as much again.

Every GPU of the node is simulated (their copies share PCIe switches); the GPUs of other nodes
are symmetric, so the collectives span them through the fabric model (``model.collectives``).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from parsim.base.dtypes import itemsize
from parsim.workloads.base import AllReduce, Kernel, Op, Transfer
from parsim.workloads.optimizers import update_kernel

MB = 1024 * 1024  # DDP's bucket_cap_mb counts mebibytes


@attrs.frozen
class GpuStep:
    """One GPU's share of a step: its input copy, forward and backward kernels (placed on that GPU)."""

    input_B: float
    forward: list[Kernel]
    backward: list[Kernel]


@attrs.frozen
class Sync:
    """How gradients are synchronised: bucket size, overlap with the backward pass, ZeRO stage."""

    bucket_B: float
    overlap: bool
    zero: int
    optimizer: str
    master_dtype: str
    weight_dtype: str


def buckets(layer_params: Sequence[tuple[str, int]], bucket_params: float) -> list[list[tuple[str, int]]]:
    """Layers (in the order the backward pass reaches them) grouped into buckets of at least
    ``bucket_params`` parameters; the last may be smaller. Layers without parameters are left out."""
    groups: list[list[tuple[str, int]]] = [[]]
    filled = 0
    for name, params in layer_params:
        if params <= 0:
            continue
        if filled >= bucket_params:
            groups.append([])
            filled = 0
        groups[-1].append((name, params))
        filled += params
    return [group for group in groups if group]


def ring_step(
    steps: Sequence[GpuStep], layer_params: Sequence[tuple[str, int]], sync: Sync, ranks: int
) -> tuple[list[Op], list[tuple[int, ...]]]:
    """Ops and dependencies of a data-parallel step whose gradients sync over NCCL.

    Args:
        steps: each simulated GPU's share (the GPUs of one node).
        layer_params: ``(layer, parameters)`` in the order the backward pass reaches the layers.
        sync: buckets, overlap and ZeRO stage.
        ranks: data-parallel GPUs in all (every node's).
    """
    master = itemsize(sync.master_dtype)
    groups = buckets(layer_params, sync.bucket_B / master)
    bucket_of = {name: b for b, group in enumerate(groups) for name, _ in group}
    ops: list[Op] = []
    deps: list[tuple[int, ...]] = []

    def add(op: Op, after: tuple[int, ...] = ()) -> int:
        ops.append(op)
        deps.append(after)
        return len(ops) - 1

    weight_B = itemsize(sync.weight_dtype)
    gathers: dict[tuple[str, int], int] = {}
    if (
        sync.zero == 3
    ):  # weights are sharded: gather each bucket's before forward (in model order) and backward
        for when in ("forward", "backward"):
            order = reversed(range(len(groups))) if when == "forward" else range(len(groups))
            for b in order:
                size = sum(p for _, p in groups[b]) * weight_B
                gathers[when, b] = add(
                    AllReduce(f"all-gather weights {b} ({when})", size, kind="all_gather", layer="sync")
                )
    last_backward: list[dict[str, int]] = []
    end_of_backward: list[int] = []
    for g, step in enumerate(steps):
        add(Transfer("h2d input", step.input_B, "h2d", device=g, layer="data"))
        done: dict[str, int] = {}
        for when, kernels in (("forward", step.forward), ("backward", step.backward)):
            gathered: set[int] = set()
            for kernel in kernels:
                b = bucket_of.get(kernel.layer, -1)
                needs: tuple[int, ...] = ()
                if (when, b) in gathers and b not in gathered:
                    gathered.add(b)
                    needs = (gathers[when, b],)
                index = add(kernel, needs)  # built for GPU g (``GpuStep``)
                if when == "backward" and b >= 0:
                    done[kernel.layer] = index
        last_backward.append(done)
        end_of_backward.append(len(ops) - 1)
    kind = "all_reduce" if sync.zero == 0 else "reduce_scatter"
    reduced = []
    for b, group in enumerate(groups):
        size = sum(p for _, p in group) * master
        ready = tuple(end_of_backward)
        if sync.overlap:
            ready = tuple(
                d.get(group[-1][0], end) for d, end in zip(last_backward, end_of_backward, strict=True)
            )
        name = f"{kind.replace('_', '-')} bucket {b} ({size / MB:.0f} MB)"
        reduced.append(add(AllReduce(name, size, kind=kind, layer="sync"), ready))
    total = sum(p for _, p in layer_params)
    share = -(-total // ranks) if sync.zero else total
    updates = tuple(
        add(
            update_kernel(sync.optimizer, "w -= lr * g", share, sync.master_dtype, device=g, layer="sync"),
            tuple(reduced),
        )
        for g in range(len(steps))
    )
    if sync.zero in (1, 2):  # each GPU updated its 1/N: gather the new weights
        add(
            AllReduce("all-gather updated weights", total * weight_B, kind="all_gather", layer="sync"),
            updates,
        )
    return ops, deps
