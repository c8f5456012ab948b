"""A kernel's four records, by concern, and the one-expression checks that let a kernel share them.

``Work`` (what the roofline weighs), ``Access`` (how its bytes reach the cores), ``LibraryHints``
(what the kernel library chooses from) and ``Issue`` (what the host pays to issue it) are frozen
named tuples: every timing-cache lookup hashes and compares them, which a tuple does in C
(``kernel``'s docstring says why in full). Each kind has its field rules (``_RULES``, run one by one
only to name a refused field) and one expression that checks a whole record at once
(``_good_work`` ...); a record that passed is kept in a bounded table (``_shared``) so that equal
records built later are shared, not checked again. ``kernel.Kernel`` composes them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from parsim.base.checks import (
    boolean,
    is_integer,
    non_negative,
    non_negative_int,
    one_of,
    positive_int,
    text,
    within,
)
from parsim.base.dtypes import DTYPES, QUANTISED_FORMATS
from parsim.base.errors import field_error
from parsim.workloads.conv import ConvShape

_INF = float("inf")


class Work(NamedTuple):
    """What the roofline weighs.

    Attributes:
        flops: floating-point operations (an FMA counts two).
        bytes_read: bytes loaded from memory.
        bytes_written: bytes stored to memory.
        work_items: independent items (output elements) the work splits into.
        dtype: element type.
        matrix: a dense matrix product that tensor cores / AMX can run.
        special_ops: transcendental evaluations (``exp`` in a sigmoid).
        int_ops: 32-bit integer instructions the kernel issues besides its arithmetic (the index
            arithmetic of a layout transpose: a division and a remainder per dimension of each
            element's address), at the device's integer rate (``int_per_core_per_cycle``).
        op: the elementary operation (``add``, ``maximum``, ``exp``, ``sum``...) when the kernel
            is one NumPy-style pass; a processor with a measured rate for it uses that rate
            instead of its FLOP/s (see ``ProcessorSpec.op_rates_per_core``).
    """

    flops: float
    bytes_read: float
    bytes_written: float
    work_items: int
    dtype: str = "float32"
    matrix: bool = False
    special_ops: float = 0.0
    op: str = ""
    int_ops: float = 0.0


class Access(NamedTuple):
    """How the kernel's bytes reach the cores.

    Attributes:
        cold_bytes: part of the traffic that always comes from main memory whatever the
            caches hold (a network's weights, streamed once per step); the rest is warm data
            that a cache level serves when it fits.
        thread_loads_B: on a GPU, bytes one thread loads for one element and waits for before the
            next, for a kernel written one element per thread per loop iteration (CuPy's
            elementwise kernels: one load per input); Little's law then caps its bandwidth
            (``model.memory.latency_bound_s``). 0 for kernels that keep enough bytes in flight
            (cuBLAS, cuDNN, CUB reductions, PyTorch's vectorised loops).
        reuse_B: distinct bytes the program touches between two uses of this kernel's data (a
            loop's bytes per iteration, when the kernel runs in one), 0 when only its own count:
            a cache serves the kernel's data warm only if it holds these too (``working_set_B``).
        bandwidth_share: share of the memory level's bandwidth the kernel's own loads reach, 1 for
            a library's streaming kernels; less for a serving engine's decode kernels (its GEMVs, an
            indexed expert gather, a weight-only kernel dequantising as it loads: ``stack.engines``).
        core_in_flight_B: bytes of loads one core (a GPU's SM) keeps in flight, where the kernel's
            own code caps them (llama.cpp's GEMVs); Little's law then caps its bandwidth at
            cores x these bytes per memory latency (``model.memory.in_flight_bound_s``). 0: enough.
    """

    cold_bytes: float = 0.0
    thread_loads_B: float = 0.0
    reuse_B: float = 0.0
    bandwidth_share: float = 1.0
    core_in_flight_B: float = 0.0


class LibraryHints(NamedTuple):
    """What the kernel library chooses its algorithm, tiling and arithmetic from.

    Attributes:
        gemm_mn: for GEMM-shaped kernels, the output matrix shape (M, N) that tiles are cut from.
        conv: the convolution this kernel computes, when it is one: the kernel library chooses
            its algorithm (implicit GEMM, Winograd, FFT) for the shape and the device.
        math: ``tf32`` lets a float32 matrix product run on TF32 tensor cores (what frameworks
            do for convolutions on Ampere and later); ``int8``/``float8``: a quantised product
            (W8A8) at the matrix units' int8 or FP8 rate where the device has one, else at its
            dtype's; empty means the dtype's own arithmetic.
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
        sign_test: the op tests each element's sign (a ReLU forward, and its backward's mask): a
            library that runs it as a scalar loop branches on it
            (``LibrarySpec.serial_sign_test_cycles``); a vectorised one takes a max.
        frequency_domain: a convolution computed through FFTs (transforms, complex products per
            frequency, the inverse): its arithmetic runs at the library's ``fft_efficiency`` share of
            the vector rate, not at a GEMM's.
    """

    gemm_mn: tuple[int, int] | None = None
    conv: ConvShape | None = None
    math: str = ""
    foldable: bool = False
    reorder_B: float = 0.0
    cpu_library: str = ""
    nchw_B: float = 0.0
    fused_attention: str = ""
    sign_test: bool = False
    frequency_domain: bool = False


class Issue(NamedTuple):
    """What the host pays to issue the kernel.

    Attributes:
        python_ops_per_item: interpreted operations per item in a pure-Python loop (SISD demo).
        primitive: a primitive tensor op inside an operator's forward (``torch.mul`` in a Hugging
            Face RMSNorm): an eager framework issues it for ``FrameworkSpec.primitive_cycles``, not
            for a module call's ``op_cycles``.
        multi_tensor: one tensor's share of a multi-tensor launch (PyTorch's ``foreach`` optimizer,
            apex's fused Adam: one kernel walks a list of tensors), so it pays no launch floor
            (``FrameworkSpec.kernel_floor_s``) of its own.
        python_loop: the pure-Python loop body the SISD demo runs for it (``relu``, ``matmul``...),
            by which a calibrated CPU's ``interpreted_loop_scale`` prices that body; empty: none.
        in_library_call: a kernel the library launches inside another op's call (cuDNN's layout
            transposes around a convolution): on a GPU it pays its launch, not the framework's
            work per operator, which that call already paid.
        launches: kernels the library launches for it, back to back from one call (Transformer
            Engine's grouped GEMM: one cuBLAS GEMM per expert, four streams running them at once):
            inside a framework on a GPU it pays that many launches (a raw CuPy call pays its
            call's cost once); 0: its work is part of another kernel's launches
            (a gated MLP's gate half, which TE computes in one GEMM with the up half: fc1).
        host_waits: the host reads its result back and waits for it before it issues anything
            else (a synchronising device-to-host copy: ``tensor.cpu()``, ``Event.synchronize``),
            so its issue, its run and the copy's trip over the host link run in series: nothing
            of the host's is overlapped with it (``model.blocks``).
        graph_node: a node of a captured CUDA graph the host replays (``workloads.cuda_graphs``):
            no framework work of its own, only the driver's share of a launch; the graph's first
            kernel stands for the replay's call.
    """

    python_ops_per_item: float = 1.0
    primitive: bool = False
    multi_tensor: bool = False
    python_loop: str = ""
    in_library_call: bool = False
    launches: int = 1
    host_waits: bool = False
    graph_node: bool = False


_record = tuple.__new__  # ``_record(Work, values)``: a record from all its fields in order (``but``)
PLAIN_ACCESS = Access()
NO_LIBRARY_HINTS = LibraryHints()
PLAIN_ISSUE = Issue()
# the defaults are shared: most kernels have no hints, and immutable records are safe to share

PARTS: dict[str, type[Work] | type[Access] | type[LibraryHints] | type[Issue]] = {
    "work": Work,
    "access": Access,
    "library": LibraryHints,
    "issue": Issue,
}
"""The kernel's records by its attribute name."""
_PART_OF = {name: part for part, cls in PARTS.items() for name in cls._fields}
_POSITION = {name: cls._fields.index(name) for cls in PARTS.values() for name in cls._fields}
"""Each fact's place in its record."""


class _Field(NamedTuple):
    """What a field validator reads of an attrs attribute: its name (records are named tuples)."""

    name: str


def _gemm_shape(instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and not (
        isinstance(value, tuple) and len(value) == 2 and all(is_integer(v) and v >= 1 for v in value)
    ):
        raise field_error(attribute.name, "None or two integers >= 1", value)


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


_RULES: dict[type, dict[str, Any]] = {
    Work: {
        "flops": non_negative,
        "bytes_read": non_negative,
        "bytes_written": non_negative,
        "work_items": positive_int,
        "dtype": one_of(tuple(DTYPES)),
        "matrix": boolean,
        "special_ops": non_negative,
        "op": text,
        "int_ops": non_negative,
    },
    Access: {
        "cold_bytes": non_negative,
        "thread_loads_B": non_negative,
        "reuse_B": non_negative,
        "bandwidth_share": within(0.0, 1.0, low_open=True),
        "core_in_flight_B": non_negative,
    },
    LibraryHints: {
        "gemm_mn": _gemm_shape,
        "conv": _conv_shape,
        "math": one_of(("", "tf32", *QUANTISED_FORMATS)),
        "foldable": boolean,
        "reorder_B": non_negative,
        "cpu_library": text,
        "nchw_B": non_negative,
        "fused_attention": text,
        "sign_test": boolean,
        "frequency_domain": boolean,
    },
    Issue: {
        "python_ops_per_item": non_negative,
        "primitive": boolean,
        "multi_tensor": boolean,
        "python_loop": text,
        "in_library_call": boolean,
        "launches": non_negative_int,
        "host_waits": boolean,
        "graph_node": boolean,
    },
}


def _good_work(w: Work) -> bool:
    """Every field of a ``Work`` valid, in one expression (raises TypeError on a wrong type)."""
    return (
        type(w) is Work
        and 0 <= w.flops < _INF
        and 0 <= w.bytes_read < _INF
        and 0 <= w.bytes_written < _INF
        and type(w.work_items) is int
        and w.work_items >= 1
        and 0 <= w.special_ops < _INF
        and 0 <= w.int_ops < _INF
        and w.dtype in DTYPES
        and type(w.matrix) is bool
        and type(w.op) is str
    )


def _good_access(a: Access) -> bool:
    """Every field of an ``Access`` valid (its bound by the work: ``_good_place``)."""
    return (
        type(a) is Access
        and a.cold_bytes >= 0
        and 0 <= a.thread_loads_B < _INF
        and 0 <= a.reuse_B < _INF
        and 0 < a.bandwidth_share <= 1
        and 0 <= a.core_in_flight_B < _INF
    )


def _good_library(lib: LibraryHints) -> bool:
    """Every field of a ``LibraryHints`` valid."""
    return (
        type(lib) is LibraryHints
        and (lib.gemm_mn is None or _whole_pair(lib.gemm_mn))
        and (lib.math == "" or lib.math == "tf32" or lib.math in QUANTISED_FORMATS)
        and (lib.conv is None or type(lib.conv) is ConvShape)
        and type(lib.foldable) is bool
        and 0 <= lib.reorder_B < _INF
        and type(lib.cpu_library) is str
        and 0 <= lib.nchw_B < _INF
        and type(lib.fused_attention) is str
        and type(lib.sign_test) is bool
        and type(lib.frequency_domain) is bool
    )


def _good_issue(i: Issue) -> bool:
    """Every field of an ``Issue`` valid."""
    return (
        type(i) is Issue
        and 0 <= i.python_ops_per_item < _INF
        and type(i.primitive) is bool
        and type(i.multi_tensor) is bool
        and type(i.python_loop) is str
        and type(i.in_library_call) is bool
        and type(i.launches) is int
        and i.launches >= 0
        and type(i.host_waits) is bool
        and type(i.graph_node) is bool
    )


SHARED_MAX = 1 << 16
"""Checked records kept for sharing, per kind; the table starts again when it holds more."""
_SHARED: tuple[dict[Any, Any], ...] = ({}, {}, {}, {})
_SHARED_IDS: tuple[set[int], ...] = (set(), set(), set(), set())
"""The ids of the records each table holds (alive there, so an id names that record alone): a
kernel made of records already checked and shared (``Kernel.but`` of a place, ``anonymous``) has
only its place fields checked."""


def _shared(index: int, record: Any) -> Any:
    """The checked record equal to ``record`` (table number ``index``, ``_SHARED``'s order), or
    ``record`` itself kept as the checked one."""
    table = _SHARED[index]
    shared = table.get(record)
    if shared is None:
        if len(table) >= SHARED_MAX:
            table.clear()
            _SHARED_IDS[index].clear()
        table[record] = record
        _SHARED_IDS[index].add(id(record))
        return record
    return shared
