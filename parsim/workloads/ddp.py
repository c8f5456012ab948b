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

ZeRO-3 is issued as PyTorch FSDP's hooks issue it (Zhao et al., "PyTorch FSDP", VLDB 2023,
section 3.3-3.4): a bucket is a unit; its gather may run only ``prefetch`` units ahead (the rate
limiter frees a unit's gathered weights when it ends), in the backward pass ahead of the previous
unit's reduce-scatter; every collective waits its turn on the group's one NCCL stream. With
``microbatches`` > 1 (gradient accumulation) each GPU runs that many passes before the update;
replicated gradients are reduced once, sharded ones (ZeRO-2, FSDP) after every pass.

Every GPU of the node is simulated (their copies share PCIe switches); the GPUs of other nodes
are symmetric, so the collectives span them through the fabric model (``model.collectives``).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from parsim.base.dtypes import itemsize
from parsim.workloads import fsdp_tp
from parsim.workloads.base import AllReduce, Block, Kernel, Op, Transfer
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
    """How gradients are synchronised: bucket size, overlap with the backward pass, ZeRO stage,
    micro-batches per step (gradient accumulation) and, for ZeRO-3, how many units' weights may
    be gathered at once (``prefetch``: FSDP's ``limit_all_gathers`` keeps 2).

    Under 2D parallelism (``fsdp_tp``) the data-parallel group is ``ranks`` GPUs, ``per_node`` of
    them in a node (0: every GPU of the system, all of a node's), and each unit's kernels carry
    their ``tp`` group's exchanges of ``tp_B`` bytes (``tp_replay``: full recomputation replays them)."""

    bucket_B: float
    overlap: bool
    zero: int
    optimizer: str
    master_dtype: str
    weight_dtype: str
    microbatches: int = 1
    prefetch: int = 2
    ranks: int = 0
    per_node: int = 0
    tp: int = 1
    tp_B: float = 0.0
    tp_replay: bool = False
    layers: int = 0

    def collective(self, name: str, size_B: float, kind: str) -> AllReduce:
        """A collective of the data-parallel group on the NCCL stream."""
        return AllReduce(name, size_B, kind=kind, layer="sync", ranks=self.ranks, per_node=self.per_node)


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


@attrs.frozen
class Unit:
    """The kernels of one bucket's layers in one pass over one micro-batch, on every simulated GPU.

    Attributes:
        phase: ``forward`` or ``backward``.
        micro: which micro-batch.
        bucket: the bucket whose weights the kernels use (-1: none, such as the loss).
        kernels: per GPU, the unit's kernels in issue order.
        completes: ``(bucket, position)``: the kernel at that position of the unit writes the last
            gradient of the bucket (its reduction may start when it ends).
        starts_micro: the first unit of a micro-batch (its input is copied in before it).
        ends_micro: the last unit of a micro-batch's backward pass.
    """

    phase: str
    micro: int
    bucket: int
    kernels: tuple[tuple[Kernel, ...], ...]
    completes: tuple[tuple[int, int], ...]
    starts_micro: bool
    ends_micro: bool


def spans(bucket_of_kernel: Sequence[int]) -> list[tuple[int, int, int]]:
    """``(bucket, first, end)`` runs of kernels that use one bucket's weights; a kernel without
    weights (-1) joins the run it is in."""
    runs: list[tuple[int, int, int]] = []
    bucket, first = -1, 0
    for i, b in enumerate(bucket_of_kernel):
        if b < 0 or b == bucket:
            continue
        if bucket >= 0:
            runs.append((bucket, first, i))
            first = i
        bucket = b
    if bucket_of_kernel:
        runs.append((bucket, first, len(bucket_of_kernel)))
    return runs


def units(
    steps: Sequence[GpuStep], bucket_of: dict[str, int], closers: Sequence[str], microbatches: int
) -> list[Unit]:
    """The step as units, in the order one GPU runs them: each micro-batch's forward, then its
    backward. ``closers[b]`` is the layer whose backward writes bucket ``b``'s last gradient."""
    sequence = []
    for micro in range(microbatches):
        for phase in ("forward", "backward"):
            lists = [step.forward if phase == "forward" else step.backward for step in steps]
            position: dict[str, int] = {}
            for i, kernel in enumerate(lists[0]):
                position[kernel.layer] = i
            closing = {}
            if phase == "backward":
                closing = {b: position.get(layer, len(lists[0]) - 1) for b, layer in enumerate(closers)}
            runs = spans([bucket_of.get(kernel.layer, -1) for kernel in lists[0]])
            for n, (bucket, first, end) in enumerate(runs):
                sequence.append(
                    Unit(
                        phase,
                        micro,
                        bucket,
                        tuple(tuple(kernels[first:end]) for kernels in lists),
                        tuple((b, i - first) for b, i in closing.items() if first <= i < end),
                        phase == "forward" and n == 0,
                        phase == "backward" and n == len(runs) - 1,
                    )
                )
    return sequence


class _Program:
    """The ops of a step and what each waits for, appended in issue order."""

    def __init__(self, sync: Sync, sizes: list[int]):
        self.sync, self.sizes = sync, sizes
        self.ops: list[Op] = []
        self.deps: list[tuple[int, ...]] = []
        self.reduced: list[int] = []

    def add(self, op: Op, after: tuple[int, ...] = ()) -> int:
        self.ops.append(op)
        self.deps.append(after)
        return len(self.ops) - 1

    def reduces(self, micro: int) -> bool:
        """Whether micro-batch ``micro``'s gradients are reduced now: the last one's always;
        every one's when the gradients are sharded (ZeRO-2, FSDP keep only 1/N of them)."""
        return micro == self.sync.microbatches - 1 or self.sync.zero >= 2

    def reduce(self, bucket: int, ready: tuple[int, ...]) -> None:
        kind = "all_reduce" if self.sync.zero == 0 else "reduce_scatter"
        size = self.sizes[bucket] * itemsize(self.sync.master_dtype)
        name = f"{kind.replace('_', '-')} bucket {bucket} ({size / MB:.0f} MB)"
        self.reduced.append(self.add(self.sync.collective(name, size, kind), ready))

    def inputs(self, steps: Sequence[GpuStep]) -> None:
        for g, step in enumerate(steps):
            self.add(Transfer("h2d input", step.input_B, "h2d", device=g, layer="data"))

    def replicated(self, steps: Sequence[GpuStep], sequence: list[Unit]) -> None:
        """Weights on every GPU (DDP, ZeRO-1/2): each GPU's passes, then each bucket's reduction,
        which waits for the kernel writing its last gradient (``overlap``) or the whole pass."""
        for micro in range(self.sync.microbatches):
            mine = [unit for unit in sequence if unit.micro == micro]
            closing: dict[int, list[int]] = {}
            ends = []
            for g, step in enumerate(steps):
                self.add(Transfer("h2d input", step.input_B, "h2d", device=g, layer="data"))
                for unit in mine:
                    base = len(self.ops)
                    for kernel in unit.kernels[g]:
                        self.add(kernel)
                    for b, at in unit.completes:
                        closing.setdefault(b, []).append(base + at)
                ends.append(len(self.ops) - 1)
            if self.reduces(micro):
                for b in range(len(self.sizes)):
                    self.reduce(b, tuple(closing[b]) if self.sync.overlap else tuple(ends))

    def _casts(self, bucket: int, steps: Sequence[GpuStep]) -> list[Kernel]:
        """FSDP's mixed precision computes with gathered weights in ``weight_dtype``, so their
        gradients come out in it and are cast to the reduce dtype (the master's) before the
        reduce-scatter (``FlatParamHandle``: ``unsharded_grad.to(reduce_dtype)``): one pass over
        the unit's gradients per micro-batch, reading the narrow copy and writing the wide one."""
        narrow, wide = itemsize(self.sync.weight_dtype), itemsize(self.sync.master_dtype)
        if narrow >= wide:
            return []
        params = self.sizes[bucket]
        return [
            Kernel.of(
                f"cast gradients {bucket} to {self.sync.master_dtype}",
                0.0,
                params * narrow,
                params * wide,
                params,
                device=g,
                layer="sync",
                dtype=self.sync.master_dtype,
            )
            for g in range(len(steps))
        ]

    def sharded(self, steps: Sequence[GpuStep], sequence: list[Unit]) -> None:
        """ZeRO-3 / FSDP: a unit's weights are gathered before its forward and again before its
        backward. Unit ``j``'s gather may start once unit ``j - prefetch`` has ended and freed its
        gathered weights, and is issued ``prefetch - 1`` units ahead (FSDP's forward and
        ``BACKWARD_PRE`` prefetch), so in the backward pass it precedes the previous unit's
        reduce-scatter on the NCCL stream; what the prefetch cannot hide is exposed."""
        depth = self.sync.prefetch
        weight_B = itemsize(self.sync.weight_dtype)
        ends: list[tuple[int, ...]] = []
        gather_of: dict[int, int] = {}
        pending: list[tuple[int, tuple[int, ...]]] = []
        issued = 0
        for j, unit in enumerate(sequence):
            if unit.starts_micro:
                self.inputs(steps)
            while issued < min(len(sequence), j + depth):
                ahead = sequence[issued]
                if ahead.bucket >= 0:
                    name = f"all-gather weights {ahead.bucket} ({ahead.phase} {ahead.micro})"
                    gather = self.sync.collective(name, self.sizes[ahead.bucket] * weight_B, "all_gather")
                    gather_of[issued] = self.add(gather, ends[issued - depth] if issued >= depth else ())
                issued += 1
            needs = (gather_of[j],) if j in gather_of else ()
            # a unit's kernels run back to back on each GPU: one block, timed once per shape
            # (a step of 21 micro-batches of a 48-layer model is then ~10^4 blocks, not 10^6 kernels)
            layer = unit.kernels[0][0].layer
            name = f"{'F' if unit.phase == 'forward' else 'B'}{unit.micro} {layer}"
            sync = self.sync
            tp = fsdp_tp.exchanges(unit.kernels[0], sync.tp, sync.tp_B, sync.tp_replay, sync.layers)
            last = [
                self.add(Block(name, kernels, tp, device=g, layer=layer), needs)
                for g, kernels in enumerate(unit.kernels)
            ]
            for b, _ in unit.completes:  # FSDP casts the bucket's gradients to the reduce dtype
                casts = self._casts(b, steps)
                if casts:
                    last = [self.add(cast, (block,)) for cast, block in zip(casts, last, strict=True)]
            ends.append(tuple(last))
            # the bucket's reduce-scatter waits for the unit that writes its last gradient
            pending += [(b, tuple(last)) for b, _ in unit.completes]
            if self.sync.overlap or unit.ends_micro:
                for b, ready in sorted(pending):
                    self.reduce(b, ready if self.sync.overlap else ends[-1])
                pending = []


def ring_step(
    steps: Sequence[GpuStep], layer_params: Sequence[tuple[str, int]], sync: Sync, ranks: int
) -> tuple[list[Op], list[tuple[int, ...]]]:
    """Ops and dependencies of a data-parallel step whose gradients sync over NCCL.

    Every collective goes on the one NCCL stream of the process group, in the order the hooks
    issue them (``ProcessGroupNCCL`` runs a group's collectives one after another). With
    ``microbatches`` > 1 each GPU runs that many forward and backward passes before the update;
    the gradients of every pass but the last stay on the GPU (DDP's ``no_sync``, ZeRO-1) unless
    they are sharded (ZeRO-2, FSDP), which reduce-scatters them after every pass.

    Args:
        steps: each simulated GPU's share of one micro-batch (the GPUs of one node).
        layer_params: ``(layer, parameters)`` in the order the backward pass reaches the layers.
        sync: buckets, overlap, ZeRO stage, micro-batches and prefetch depth.
        ranks: data-parallel GPUs in all (every node's).
    """
    master = itemsize(sync.master_dtype)
    groups = buckets(layer_params, sync.bucket_B / master)
    bucket_of = {name: b for b, group in enumerate(groups) for name, _ in group}
    program = _Program(sync, [sum(p for _, p in group) for group in groups])
    sequence = units(steps, bucket_of, [group[-1][0] for group in groups], sync.microbatches)
    if sync.zero == 3:
        program.sharded(steps, sequence)
    else:
        program.replicated(steps, sequence)
    total = sum(p for _, p in layer_params)
    share = -(-total // ranks) if sync.zero else total
    last = tuple(program.reduced[-len(groups) :])
    updates = tuple(
        program.add(
            update_kernel(sync.optimizer, "w -= lr * g", share, sync.master_dtype, device=g, layer="sync"),
            last,
        )
        for g in range(len(steps))
    )
    if sync.zero in (1, 2):  # each GPU updated its 1/N: gather the new weights
        weights_B = total * itemsize(sync.weight_dtype)
        program.add(sync.collective("all-gather updated weights", weights_B, "all_gather"), updates)
    return program.ops, program.deps
