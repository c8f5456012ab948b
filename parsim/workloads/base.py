"""The vocabulary of work: kernels, transfers and the small programs made of them.

A workload is what a programmer writes, reduced to what hardware feels. A ``Kernel`` is one
launch of parallel work (an elementwise op, a GEMM): how many FLOPs, how many bytes it reads
and writes, how many independent work items it offers, and whether matrix units can do it
(``workloads.kernel``: its facts in four records by concern). A
``Transfer`` is one copy across a link. A ``Workload`` is the host program: its ops in the order
the host issues them, each on a stream; ops on one stream run in order, ops on different
streams may overlap (the CUDA stream semantics), and ``deps`` adds cross-stream edges.

All of them are validated values: sizes are finite and non-negative, a kernel has at least one
work item, and a workload's dependencies point only to earlier ops (so no program can deadlock).
A mistake is refused in one line naming the op and the field, as hardware specs are.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

import attrs

from parsim.base.checks import (
    boolean,
    explain,
    non_negative,
    non_negative_int,
    one_of,
    positive_int,
    text,
)
from parsim.base.errors import ParsimError
from parsim.workloads.kernel import HOST as HOST
from parsim.workloads.kernel import Kernel as Kernel
from parsim.workloads.kernel import device_index
from parsim.workloads.needs import MemoryNeeds

Params = dict[str, Any]
"""A workload's validated parameters, as its builder receives them."""
SYNC_STREAM = 3
"""The stream of a step's data-parallel collectives (``megatron.optimizer_sync``): in order, after
the passes or beside them (``dp_overlap``)."""
COLLECTIVE_LIBRARIES = ("nccl", "kernels")
"""What runs a collective (``AllReduce.library``): NCCL, or kernels that write the peers' buffers
themselves (DeepEP's and HybridEP's dispatch and combine), which skip NCCL's all-to-all start."""
_INF = float("inf")


@attrs.frozen(cache_hash=True)
class Transfer:
    """One copy between host and device memory.

    Attributes:
        name: label shown in the timeline.
        nbytes: bytes copied.
        direction: ``"h2d"`` (host to device) or ``"d2h"``.
        pinned: page-locked host buffer (DMA straight from it); pageable memory is staged
            through a driver bounce buffer, is slower and blocks the host thread.
        stream: stream the host enqueues it on.
        device: GPU index at the other end of the copy.
        layer: network layer it belongs to, or empty.
        phase: the part of its workload's instance it belongs to (``Kernel.phase``), or empty.
        waits: the host thread waits for the copy's end before it issues anything else: a
            synchronous fetch of a step's result into host memory (TensorFlow's ``Session.run`` and
            PyTorch's ``.cpu()`` return host arrays), so the next step's host work cannot overlap
            this step's GPU work.
    """

    name: str = attrs.field(validator=text)
    nbytes: float = attrs.field(validator=non_negative)
    direction: Literal["h2d", "d2h"] = attrs.field(validator=one_of(("h2d", "d2h")))
    pinned: bool = attrs.field(default=True, validator=boolean)
    stream: int = attrs.field(default=0, validator=non_negative_int)
    device: int = attrs.field(default=0, validator=non_negative_int)
    layer: str = attrs.field(default="", validator=text)
    phase: str = attrs.field(default="", validator=text)
    waits: bool = attrs.field(default=False, validator=boolean)


@attrs.frozen(cache_hash=True)
class AllReduce:
    """A collective over a group of GPUs, an all-reduce unless ``kind`` says otherwise (NCCL-style).

    For a ring all-reduce the buffer is cut into G chunks; in 2(G-1) steps every GPU sends one
    chunk to its ring neighbour (G-1 reduce-scatter steps, then G-1 all-gather steps), so each GPU
    sends 2(G-1)/G x ``nbytes`` in all. ``model.collectives`` times every kind and algorithm and
    says the bytes each moves (``traffic``: an all-gather or a reduce-scatter sends half as much).

    Attributes:
        kind: ``all_reduce``, ``reduce_scatter``, ``all_gather`` or ``all_to_all``.
        ranks: GPUs in the group; 0 means every GPU of the system (all nodes).
        per_node: of them in one node; 0 means all of a node's GPUs (or ``ranks`` if fewer).
        algorithm: ``auto`` (NCCL's choice), ``ring``, ``tree`` or ``nvls``.
        protocol: NCCL's protocol, ``auto`` (its tuner's choice), ``ll``, ``ll128`` or ``simple``.
        transport: ``p2p`` (GPUs reach each other directly) or ``host`` (peer access off: staged
            through host memory).
        library: ``nccl``, or ``kernels`` writing the peers' buffers themselves (DeepEP's and
            HybridEP's exchanges), which skip NCCL's all-to-all start (``model.collectives``).
        beside: inside a ``Block``, the positions of the block's kernels this collective runs
            beside on a stream of its own (expert parallelism's all-to-alls under Megatron-Core's
            combined 1F1B schedule, ``workloads.expert_parallel``): the block pays only the time by
            which it outlasts them (``model.blocks``); empty: it stops the pass.
    """

    name: str = attrs.field(validator=text)
    nbytes: float = attrs.field(validator=non_negative)
    stream: int = attrs.field(default=0, validator=non_negative_int)
    device: int = attrs.field(default=-1, validator=device_index)
    layer: str = attrs.field(default="", validator=text)
    kind: str = attrs.field(default="all_reduce", validator=text)
    ranks: int = attrs.field(default=0, validator=non_negative_int)
    per_node: int = attrs.field(default=0, validator=non_negative_int)
    algorithm: str = attrs.field(default="auto", validator=text)
    protocol: str = attrs.field(default="auto", validator=text)
    transport: str = attrs.field(default="p2p", validator=text)
    beside: tuple[int, ...] = ()
    library: str = attrs.field(default="nccl", validator=attrs.validators.in_(COLLECTIVE_LIBRARIES))


@attrs.frozen(eq=False)
class Vectorised:
    """A single-op workload's quantities over arrays of sizes, for the vectorised analytic sweep.

    Attributes:
        footprint_B: memory the data occupies, per point.
        kernel: the kernel's size-dependent facts as ``Kernel.of`` takes them (``flops``,
            ``bytes_read``, ``bytes_written``, ``work_items``, ``special_ops``,
            ``python_ops_per_item``), for a kernel.
        transfer_B: bytes copied per point, for a copy.
    """

    footprint_B: Any
    kernel: Params | None = None
    transfer_B: Any = None


@attrs.frozen(cache_hash=True)
class Block:
    """Kernels one GPU runs back to back, with its own group's collectives between them, placed as
    one interval: a pipeline stage's forward or backward pass over one micro-batch.

    A 3D-parallel step has thousands of such passes of a handful of shapes; the engine and the
    analytic schedule time each shape once (``model.blocks``) instead of its hundreds of kernels
    every time, which keeps a step of a thousand GPUs as cheap as a step of one node.

    Attributes:
        name: label shown in the timeline (``"F3"``: forward of micro-batch 3).
        kernels: the kernels, in issue order.
        collectives: the tensor-parallel collectives between them (on the critical path).
        device: the GPU (a pipeline stage's representative).
        stream: the stream it runs on.
        layer: the per-layer row it belongs to.
    """

    name: str = attrs.field(validator=text)
    kernels: tuple[Kernel, ...]
    collectives: tuple[AllReduce, ...] = ()
    device: int = attrs.field(default=0, validator=device_index)
    stream: int = attrs.field(default=0, validator=non_negative_int)
    layer: str = attrs.field(default="", validator=text)

    @property
    def flops(self) -> float:
        return sum(k.work.flops for k in self.kernels)

    @property
    def bytes(self) -> float:
        return sum(k.bytes for k in self.kernels)


Op = Kernel | Transfer | AllReduce | Block


_WORKLOAD_RULES = {
    "name": text,
    "footprint_B": non_negative,
    "gpus": positive_int,
    "staging": boolean,
    "framework": text,
}


@attrs.frozen(cache_hash=True)
class Workload:
    """A host program: ops in issue order, with stream order and extra dependencies.

    Attributes:
        name: workload id (``"offload"``).
        params: the validated parameters, as sorted ``(key, value)`` pairs.
        ops: kernels and transfers in the order the host issues them.
        deps: for each op, indices of earlier ops it waits for besides its stream predecessor.
        footprint_B: memory the data occupies on each executing processor.
        gpus: devices the work is spread over.
        layers: ``(name, kind)`` of each network layer, in model order (layered workloads).
        staging: its copies only stage data between host and device memory, so on a CPU
            (where they are the same memory) they vanish rather than being refused.
        framework: id of the framework the program runs in (``eager``, ``graph``,
            ``cuda-graph``): every op then pays its host cost; empty for raw library calls.
        devices: GPUs the ops are placed on when more than ``gpus`` (a pipeline's stages, one
            representative GPU each); 0 means ``gpus``.
        memory: its footprint part by part (weights, gradients, optimizer state, activations, KV
            cache, workspace) when the workload declares them; ``footprint_B`` is then their sum.
    """

    name: str
    params: tuple[tuple[str, object], ...]
    ops: tuple[Op, ...]
    deps: tuple[tuple[int, ...], ...] = ()
    footprint_B: float = 0.0
    gpus: int = 1
    layers: tuple[tuple[str, str], ...] = ()
    staging: bool = False
    framework: str = ""
    devices: int = 0
    memory: MemoryNeeds | None = None

    def __attrs_post_init__(self) -> None:
        if self.memory is not None:  # the parts are the footprint: one figure, never two
            object.__setattr__(self, "footprint_B", float(self.memory.total_B))
        # Sequences given as lists become tuples (the workload is hashed as a cache key).
        if type(self.params) is not tuple:
            object.__setattr__(self, "params", tuple(self.params))
        if type(self.ops) is not tuple:
            object.__setattr__(self, "ops", tuple(self.ops))
        if type(self.layers) is not tuple:
            object.__setattr__(self, "layers", tuple(self.layers))
        if not self.deps:
            object.__setattr__(self, "deps", ((),) * len(self.ops))
        elif type(self.deps) is not tuple:
            object.__setattr__(self, "deps", tuple(self.deps))
        try:  # one cheap test; only a failure runs the rules one by one to name the field
            good = (
                type(self.name) is str
                and 0 <= self.footprint_B < _INF
                and type(self.gpus) is int
                and self.gpus >= 1
                and type(self.staging) is bool
                and type(self.framework) is str
            )
        except TypeError:
            good = False
        if not good:
            explain(self, _WORKLOAD_RULES, f"workload {self.name!r}")
        self._check_order()

    @property
    def needs(self) -> MemoryNeeds:
        """What one executing processor holds: the declared parts, or the footprint undivided."""
        return self.memory if self.memory is not None else MemoryNeeds(data_B=self.footprint_B)

    def _check_order(self) -> None:
        """Every op is an op on an existing GPU, and waits only for earlier ops."""
        where = f"workload {self.name!r}"
        if len(self.deps) != len(self.ops):
            raise ParsimError(f"{where}: 'deps' has {len(self.deps)} entries for {len(self.ops)} ops")
        gpus, kinds = max(self.gpus, self.devices), (Kernel, Transfer, AllReduce, Block)
        for index, (op, waits) in enumerate(zip(self.ops, self.deps, strict=True)):
            if not isinstance(op, kinds):
                raise ParsimError(
                    f"{where}: op {index} must be a Kernel, Transfer, AllReduce or Block: {op!r}"
                )
            if op.device >= gpus:
                raise ParsimError(
                    f"{where}: op {index} ({op.name!r}) runs on GPU {op.device}, but 'gpus' is {self.gpus}"
                )
            for wait in waits:
                if type(wait) is not int or not 0 <= wait < index:
                    earlier = f"ops 0..{index - 1}" if index else "nothing (it is the first op)"
                    raise ParsimError(
                        f"{where}: op {index} ({op.name!r}) may wait only for {earlier}: {wait!r}"
                    )

    @property
    def kernels(self) -> list[Kernel]:
        return list(self._kernels)

    # A workload never changes: what walks all its ops (a training step's thousand) is counted once,
    # on first use, not at every reading (a prediction reads the FLOPs and kernels several times)
    @functools.cached_property
    def _kernels(self) -> tuple[Kernel, ...]:
        return tuple(op for op in self.ops if isinstance(op, Kernel))

    @property
    def transfers(self) -> list[Transfer]:
        return [op for op in self.ops if isinstance(op, Transfer)]

    @property
    def needs_device(self) -> bool:
        """A workload with copies only makes sense with a device and a link."""
        return any(not isinstance(op, Kernel) for op in self.ops) or any(
            k.device == HOST for k in self.kernels
        )

    @functools.cached_property
    def flops(self) -> float:
        return sum(k.work.flops for k in self._kernels) + self._blocks("flops")

    @functools.cached_property
    def bytes(self) -> float:
        return sum(k.bytes for k in self._kernels) + self._blocks("bytes")

    def _blocks(self, quantity: str) -> float:
        """``quantity`` summed over the blocks, each shape of kernels summed once (a step's
        thousands of passes share a few)."""
        per_shape: dict[int, float] = {}
        total = 0.0
        for op in self.ops:
            if isinstance(op, Block):
                key = id(op.kernels)
                if key not in per_shape:
                    per_shape[key] = getattr(op, quantity)
                total += per_shape[key]
        return total

    @property
    def host_buffer_B(self) -> float:
        """Host memory the program's copies need: one buffer per copy to or from a GPU."""
        return sum(t.nbytes for t in self.transfers)

    def param(self, key: str, default: Any = None) -> Any:
        return dict(self.params).get(key, default)


def thread_of(op: Op) -> int:
    """The host thread that issues ``op``: its GPU's thread, thread 0 for host work."""
    return max(op.device, 0)


def stream_predecessors(ops: list[Op]) -> list[int | None]:
    """For each op, the index of the previous op on the same (device, stream), or None."""
    last: dict[tuple[int, int], int] = {}
    previous = []
    for index, op in enumerate(ops):
        key = (op.device, op.stream)
        previous.append(last.get(key))
        last[key] = index
    return previous


def _workload_hash(self: Workload) -> int:
    """A workload's hash: everything but its ops, which count by their number and by the first and
    last one (kept, as attrs keeps a cached hash, until the instance is copied or unpickled).

    Equal workloads hash equal (the fields hashed are compared by ``__eq__``), and workloads that
    differ only inside their ops still compare unequal: they share a bucket, not a cache entry. What
    it saves is the ops' own hashes: a freshly built training step is a cache key of the prediction
    (``methods.program``), and hashing each of its ~500 kernels' records took a fiftieth of a cold
    ResNet-50 prediction; two builds of the same name and parameters are the same program.
    """
    cached: int | None = self._attrs_cached_hash  # type: ignore[attr-defined]  # attrs' slot, set below
    if cached is None:
        ops = self.ops
        cached = hash(
            (
                self.name,
                self.params,
                len(ops),
                ops[:1],
                ops[-1:],
                self.deps,
                self.footprint_B,
                self.gpus,
                self.layers,
                self.staging,
                self.framework,
                self.devices,
                self.memory,
            )
        )
        object.__setattr__(self, "_attrs_cached_hash", cached)
    return cached


Workload.__hash__ = _workload_hash  # type: ignore[method-assign, assignment]
