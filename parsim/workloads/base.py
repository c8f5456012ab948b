"""The vocabulary of work: kernels, transfers and the small programs made of them.

A workload is what a programmer writes, reduced to what hardware feels. A ``Kernel`` is one
launch of parallel work (an elementwise op, a GEMM): how many FLOPs, how many bytes it reads
and writes, how many independent work items it offers, and whether matrix units can do it. A
``Transfer`` is one copy across a link. A ``Workload`` is the host program: its ops in the order
the host issues them, each on a stream; ops on one stream run in order, ops on different
streams may overlap (the CUDA stream semantics), and ``deps`` adds cross-stream edges.

All of them are validated values: sizes are finite and non-negative, a kernel has at least one
work item, and a workload's dependencies point only to earlier ops (so no program can deadlock).
A mistake is refused in one line naming the op and the field, as hardware specs are.
"""

from __future__ import annotations

import operator
from typing import Any, Literal

import attrs

from parsim.base.checks import (
    boolean,
    explain,
    is_integer,
    non_negative,
    non_negative_int,
    one_of,
    positive_int,
    text,
)
from parsim.base.dtypes import DTYPES, QUANTISED_FORMATS
from parsim.base.errors import ParsimError, field_error
from parsim.workloads.conv import ConvShape
from parsim.workloads.needs import MemoryNeeds

HOST = -1
"""``device`` of an op the host CPU runs itself."""
Params = dict[str, Any]
"""A workload's validated parameters, as its builder receives them."""
_INF = float("inf")


def _gemm_shape(instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and not (
        isinstance(value, tuple) and len(value) == 2 and all(is_integer(v) and v >= 1 for v in value)
    ):
        raise field_error(attribute.name, "None or two integers >= 1", value)


def _device(instance: Any, attribute: Any, value: Any) -> None:
    non_negative_int(instance, attribute, value + 1 if isinstance(value, int) else value)


def _cold_bytes(instance: Any, attribute: Any, value: Any) -> None:
    non_negative(instance, attribute, value)
    if value > instance.bytes_read + instance.bytes_written:
        raise field_error(attribute.name, "<= bytes_read + bytes_written", value)


def _conv_shape(instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and not isinstance(value, ConvShape):
        raise field_error(attribute.name, "None or a ConvShape", value)


def _whole_pair(value: Any) -> bool:
    return (
        type(value) is tuple
        and len(value) == 2
        and type(value[0]) is int
        and type(value[1]) is int
        and value[0] >= 1
        and value[1] >= 1
    )


_KERNEL_RULES = {
    "name": text,
    "flops": non_negative,
    "bytes_read": non_negative,
    "bytes_written": non_negative,
    "work_items": positive_int,
    "dtype": one_of(tuple(DTYPES)),
    "matrix": boolean,
    "special_ops": non_negative,
    "python_ops_per_item": non_negative,
    "gemm_mn": _gemm_shape,
    "stream": non_negative_int,
    "device": _device,
    "layer": text,
    "cold_bytes": _cold_bytes,
    "op": text,
    "math": one_of(("", "tf32", *QUANTISED_FORMATS)),
    "conv": _conv_shape,
    "foldable": boolean,
    "reorder_B": non_negative,
    "cpu_library": text,
    "nchw_B": non_negative,
    "fused_attention": text,
    "thread_loads_B": non_negative,
    "primitive": boolean,
    "multi_tensor": boolean,
    "reuse_B": non_negative,
}


@attrs.frozen(cache_hash=True)
class Kernel:
    """One launch of data-parallel work.

    Attributes:
        name: label shown in the timeline (``"relu"``, ``"matmul 4096x4096x4096"``).
        flops: floating-point operations (an FMA counts two).
        bytes_read: bytes loaded from memory.
        bytes_written: bytes stored to memory.
        work_items: independent items (output elements) the work splits into.
        dtype: element type.
        matrix: a dense matrix product that tensor cores / AMX can run.
        special_ops: transcendental evaluations (``exp`` in a sigmoid).
        python_ops_per_item: interpreted operations per item in a pure-Python loop (SISD demo).
        gemm_mn: for GEMM-shaped kernels, the output matrix shape (M, N) that tiles are cut from.
        stream: stream the host enqueues it on.
        device: GPU index that runs it, or ``HOST`` (-1) for work the host CPU does itself.
        layer: network layer it belongs to (for per-layer breakdowns), or empty.
        op: the elementary operation (``add``, ``maximum``, ``exp``, ``sum``...) when the kernel
            is one NumPy-style pass; a processor with a measured rate for it uses that rate
            instead of its FLOP/s (see ``ProcessorSpec.op_rates_per_core``).
        cold_bytes: part of the traffic that always comes from main memory whatever the
            caches hold (a network's weights, streamed once per step); the rest is warm data
            that a cache level serves when it fits.
        math: ``tf32`` lets a float32 matrix product run on TF32 tensor cores (what frameworks
            do for convolutions on Ampere and later); ``int8``/``float8``: a quantised product
            (W8A8) at the matrix units' int8 or FP8 rate where the device has one, else at its
            dtype's; empty means the dtype's own arithmetic.
        conv: the convolution this kernel computes, when it is one: the kernel library chooses
            its algorithm (implicit GEMM, Winograd, FFT) for the shape and the device.
        foldable: an inference op a compiled graph may fold into the op before it (a batch norm
            into the convolution's weights, a ReLU as its post-op); a library that folds drops it.
        reorder_B: weight bytes an eager call hands over in the framework's plain layout; a
            library that computes in a blocked layout (oneDNN) re-lays them out on every call.
        cpu_library: the kernel library the framework uses on a CPU (``onednn``, ``thnn``);
            empty: the CPU's usual one. GPUs use cuDNN/cuBLAS whatever the framework.
        nchw_B: activation bytes (input and output) of a convolution pass whose tensors are in
            the NCHW layout; tensor-core kernels compute in NHWC, so the library transposes them
            (read and written once more) when it runs the pass on tensor cores.
        fused_attention: the kind of a fused attention kernel (``flash``, ``flash-v1``), empty for any
            other kernel: its products run at the kernel library's ``attention_efficiency`` share of
            the GEMM rate for that kind, not at cuBLAS's own.
        thread_loads_B: on a GPU, bytes one thread loads for one element and waits for before the
            next, for a kernel written one element per thread per loop iteration (CuPy's
            elementwise kernels: one load per input); Little's law then caps its bandwidth
            (``model.memory.latency_bound_s``). 0 for kernels that keep enough bytes in flight
            (cuBLAS, cuDNN, CUB reductions, PyTorch's vectorised loops).
        primitive: a primitive tensor op inside an operator's forward (``torch.mul`` in a Hugging
            Face RMSNorm): an eager framework issues it for ``FrameworkSpec.primitive_cycles``, not
            for a module call's ``op_cycles``.
        multi_tensor: one tensor's share of a multi-tensor launch (PyTorch's ``foreach`` optimizer,
            apex's fused Adam: one kernel walks a list of tensors), so it pays no launch floor
            (``FrameworkSpec.kernel_floor_s``) of its own.
        reuse_B: distinct bytes the program touches between two uses of this kernel's data (a
            loop's bytes per iteration, when the kernel runs in one), 0 when only its own count:
            a cache serves the kernel's data warm only if it holds these too (``working_set_B``).
    """

    name: str
    flops: float
    bytes_read: float
    bytes_written: float
    work_items: int
    dtype: str = "float32"
    matrix: bool = False
    special_ops: float = 0.0
    python_ops_per_item: float = 1.0
    gemm_mn: tuple[int, int] | None = None
    stream: int = 0
    device: int = 0
    layer: str = ""
    cold_bytes: float = 0.0
    op: str = ""
    math: str = ""
    conv: ConvShape | None = None
    foldable: bool = False
    reorder_B: float = 0.0
    cpu_library: str = ""
    nchw_B: float = 0.0
    fused_attention: str = ""
    thread_loads_B: float = 0.0
    primitive: bool = False
    multi_tensor: bool = False
    reuse_B: float = 0.0

    def __attrs_post_init__(self) -> None:
        # A training step builds thousands of kernels: one cheap test passes the good ones; only a
        # failure runs the rules one by one to name the field.
        try:
            good = (
                0 <= self.flops < _INF
                and 0 <= self.bytes_read < _INF
                and 0 <= self.bytes_written < _INF
                and type(self.work_items) is int
                and self.work_items >= 1
                and 0 <= self.special_ops < _INF
                and 0 <= self.python_ops_per_item < _INF
                and 0 <= self.cold_bytes <= self.bytes_read + self.bytes_written
                and self.dtype in DTYPES
                and type(self.stream) is int
                and self.stream >= 0
                and type(self.device) is int
                and self.device >= HOST
                and (self.gemm_mn is None or _whole_pair(self.gemm_mn))
                and type(self.matrix) is bool
                and type(self.name) is str
                and type(self.layer) is str
                and type(self.op) is str
                and (self.math == "" or self.math == "tf32" or self.math in QUANTISED_FORMATS)
                and (self.conv is None or type(self.conv) is ConvShape)
                and type(self.foldable) is bool
                and 0 <= self.reorder_B < _INF
                and type(self.cpu_library) is str
                and 0 <= self.nchw_B < _INF
                and type(self.fused_attention) is str
                and 0 <= self.thread_loads_B < _INF
                and type(self.primitive) is bool
                and type(self.multi_tensor) is bool
                and 0 <= self.reuse_B < _INF
            )
        except TypeError:
            good = False
        if not good:
            explain(self, _KERNEL_RULES, f"kernel {self.name!r}")

    def cost_key(self) -> tuple[Any, ...]:
        """Every field but the name, stream, device and layer: all that the kernel's timing depends on.

        Fields are taken by name from the class (one added later is included, never dropped).
        """
        return tuple(_cost_fields_of(self))

    @staticmethod
    def anonymous(cost_key: tuple[Any, ...]) -> Kernel:
        """A kernel with these costs and no name, stream, device or layer (a timing cache key)."""
        return Kernel(name="", **dict(zip(_COST_FIELDS, cost_key, strict=True)))

    @property
    def bytes(self) -> float:
        """Bytes moved to and from memory."""
        return self.bytes_read + self.bytes_written

    @property
    def working_set_B(self) -> float:
        """Bytes a cache must hold to serve the kernel warm: its own warm bytes, or more where the
        program touches more between two uses of them (``reuse_B``: a least-recently-used cache
        keeps data only while what is touched after it fits). Decides which level serves them."""
        return max(self.bytes_read + self.bytes_written - self.cold_bytes, self.reuse_B)

    @property
    def intensity(self) -> float:
        """Arithmetic intensity in FLOP per byte (the roofline's x axis)."""
        return self.flops / self.bytes if self.bytes else float("inf")


_COST_FIELDS = tuple(
    f.name for f in attrs.fields(Kernel) if f.name not in ("name", "stream", "device", "layer")
)
_cost_fields_of = operator.attrgetter(*_COST_FIELDS)


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
    """

    name: str = attrs.field(validator=text)
    nbytes: float = attrs.field(validator=non_negative)
    direction: Literal["h2d", "d2h"] = attrs.field(validator=one_of(("h2d", "d2h")))
    pinned: bool = attrs.field(default=True, validator=boolean)
    stream: int = attrs.field(default=0, validator=non_negative_int)
    device: int = attrs.field(default=0, validator=non_negative_int)
    layer: str = attrs.field(default="", validator=text)


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
        algorithm: ``auto`` (NCCL's choice), ``ring`` or ``tree``.
    """

    name: str = attrs.field(validator=text)
    nbytes: float = attrs.field(validator=non_negative)
    stream: int = attrs.field(default=0, validator=non_negative_int)
    device: int = attrs.field(default=-1, validator=_device)
    layer: str = attrs.field(default="", validator=text)
    kind: str = attrs.field(default="all_reduce", validator=text)
    ranks: int = attrs.field(default=0, validator=non_negative_int)
    per_node: int = attrs.field(default=0, validator=non_negative_int)
    algorithm: str = attrs.field(default="auto", validator=text)


@attrs.frozen(eq=False)
class Vectorised:
    """A single-op workload's quantities over arrays of sizes, for the vectorised analytic sweep.

    Attributes:
        footprint_B: memory the data occupies, per point.
        kernel: the kernel's size-dependent ``Kernel`` fields (``flops``, ``bytes_read``,
            ``bytes_written``, ``work_items``, ``special_ops``, ``python_ops_per_item``), for a kernel.
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
    device: int = attrs.field(default=0, validator=_device)
    stream: int = attrs.field(default=0, validator=non_negative_int)
    layer: str = attrs.field(default="", validator=text)

    @property
    def flops(self) -> float:
        return sum(k.flops for k in self.kernels)

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
        return [op for op in self.ops if isinstance(op, Kernel)]

    @property
    def transfers(self) -> list[Transfer]:
        return [op for op in self.ops if isinstance(op, Transfer)]

    @property
    def needs_device(self) -> bool:
        """A workload with copies only makes sense with a device and a link."""
        return any(not isinstance(op, Kernel) for op in self.ops) or any(
            k.device == HOST for k in self.kernels
        )

    @property
    def flops(self) -> float:
        return sum(k.flops for k in self.kernels) + self._blocks("flops")

    @property
    def bytes(self) -> float:
        return sum(k.bytes for k in self.kernels) + self._blocks("bytes")

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
