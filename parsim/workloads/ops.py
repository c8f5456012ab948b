"""The single-kernel workloads: elementwise ops, a reduction and matrix multiply (convolution: ``conv2d``).

Each builder takes validated parameters and returns a ``Workload`` of one ``Kernel``. The
numbers are the ones a roofline needs: FLOPs (an FMA counts two), bytes read and written once
each (the compulsory traffic), independent work items, and whether matrix units apply.

Elementwise ops are one fused kernel by default, as a CUDA programmer writes them. NumPy
instead evaluates an expression one operation at a time, each a full pass over memory with
its own call overhead: ``fused=false`` models exactly that (``saxpy`` = a multiply pass and an
add pass, ``sigmoid`` = four passes).
"""

from __future__ import annotations

import attrs

from parsim.base.dtypes import Number, itemsize
from parsim.stack.array_library import CUPY
from parsim.workloads.base import Kernel, Params, Vectorised, Workload


@attrs.frozen
class Elementwise:
    """Per-element cost of an elementwise op.

    Attributes:
        flops: arithmetic per element.
        inputs: arrays read per element.
        special: transcendental evaluations per element.
        python_ops: cost per element of the pure-Python loop, in units of one ``x + y`` of a
            list comprehension (the unit that calibration measures as ``interpreted_element_s``).
        formula: what it computes, for docs and the app.
        passes: the op evaluated one NumPy operation at a time: ``(name, flops, inputs,
            special)`` per pass over memory.
    """

    flops: float
    inputs: int
    special: float = 0.0
    python_ops: float = 1.0
    formula: str = ""
    passes: tuple[tuple[str, float, int, float], ...] = ()


# python_ops measured with CPython 3.11 on an AMD EPYC (Zen 4), relative to [x + y for ...]
# (42-53 ns per element there): 2.0 * x + y x1.25, x if x > 0.0 else 0.0 x0.47,
# 1.0 / (1.0 + exp(-x)) x2.05; a running sum in a for loop x0.5.
ELEMENTWISE: dict[str, Elementwise] = {
    "vector_add": Elementwise(
        flops=1, inputs=2, python_ops=1.0, formula="c = a + b", passes=(("add", 1, 2, 0),)
    ),
    "saxpy": Elementwise(
        flops=2,
        inputs=2,
        python_ops=1.25,
        formula="y = a * x + y",
        passes=(("multiply", 1, 1, 0), ("add", 1, 2, 0)),
    ),
    # np.maximum(x, 0): NumPy 2 has no SIMD loop for maximum against a scalar (~3x slower than
    # against an array of zeros); a calibrated machine's "maximum" rate is measured the same way
    "relu": Elementwise(
        flops=1, inputs=1, python_ops=0.47, formula="y = max(x, 0)", passes=(("maximum", 1, 1, 0),)
    ),
    # 1 / (1 + exp(-x)): negate, add, divide, plus one exp on the special-function unit.
    "sigmoid": Elementwise(
        flops=3,
        inputs=1,
        special=1,
        python_ops=2.05,
        formula="y = 1 / (1 + exp(-x))",
        passes=(("negative", 1, 1, 0), ("exp", 0, 1, 1), ("add", 1, 1, 0), ("reciprocal", 1, 1, 0)),
    ),
}
REDUCE_PYTHON_OPS = 0.5  # a running sum in a for loop: about half of the unit above
GEMM_PYTHON_OPS = 1.75  # one term of sum(x * y for x, y in zip(row, col)), per multiply-add
GEMM_PYTHON_SETUP = 22.0  # per output element: building the generator and calling sum()
# These counts are one interpreter on one core; a calibrated CPU measures each loop body itself
# (``ProcessorSpec.interpreted_loop_scale``): a branch on a random sign costs a mispredicted
# branch on one core and less on another, a generator's setup differs between builds.


def python_loop_ops(loop: str, params: Params) -> float:
    """Interpreted operations (in units of one ``x + y`` of a list comprehension) the model counts
    for the whole pure-Python ``loop`` over ``params``: ``n`` elements, or an ``m x k`` by
    ``k x n`` product."""
    if loop == "matmul":
        return float(params["m"] * params["n"] * (GEMM_PYTHON_OPS * params["k"] + GEMM_PYTHON_SETUP))
    per_item = REDUCE_PYTHON_OPS if loop == "reduce_sum" else ELEMENTWISE[loop].python_ops
    return float(per_item * params["n"])


def elementwise_parts(op: str, n: Number, dtype: str, fused: bool = True) -> list[Params]:
    """Keyword arguments of the op's kernels over ``n`` elements (a number, or an array of sizes).

    Fused: one kernel reading its inputs and writing one output. Unfused: one kernel per NumPy
    operation, each a full pass over memory, the interpreter cost shared among the passes.
    """
    spec = ELEMENTWISE[op]
    size = itemsize(dtype)
    # an op of one pass is the same kernel fused or not, and keeps its operation's measured rate
    merged = fused and len(spec.passes) > 1
    passes = ((op, spec.flops, spec.inputs, spec.special),) if merged else spec.passes
    return [
        {
            "name": op if fused else f"{op}: {name}",
            "flops": flops * n,
            "bytes_read": inputs * n * size,
            "bytes_written": n * size,
            "work_items": n,
            "special_ops": special * n,
            "python_ops_per_item": spec.python_ops / len(passes),
            "python_loop": op,
            "op": "" if merged else name,
            # on a GPU, CuPy's grid-stride loop: one element per thread, one load per input
            "thread_loads_B": CUPY.thread_loads_B(inputs, size),
        }
        for name, flops, inputs, special in passes
    ]


def elementwise_footprint_B(op: str, n: Number, dtype: str, fused: bool) -> Number:
    """Inputs and output, plus a temporary when NumPy runs several passes."""
    spec = ELEMENTWISE[op]
    return (spec.inputs + 1 + (0 if fused or len(spec.passes) == 1 else 1)) * n * itemsize(dtype)


def elementwise_kernel(op: str, n: int, dtype: str, stream: int = 0, label: str | None = None) -> Kernel:
    """One fused elementwise kernel over ``n`` elements, reading its inputs and writing one output."""
    part = elementwise_parts(op, n, dtype)[0]
    return Kernel.of(**{**part, "name": label or op}, dtype=dtype, stream=stream)


def elementwise(op: str, params: Params) -> Workload:
    """Workload of one elementwise op (``vector_add``, ``saxpy``, ``relu``, ``sigmoid``)."""
    n, dtype, fused = params["n"], params["dtype"], params["fused"]
    ops = tuple(Kernel.of(**part, dtype=dtype) for part in elementwise_parts(op, n, dtype, fused))
    return Workload(
        name=op, params=_items(params), ops=ops, footprint_B=elementwise_footprint_B(op, n, dtype, fused)
    )


def vectorised_elementwise(op: str, params: Params) -> Vectorised | None:
    """The op's one kernel over arrays of sizes; None when NumPy-style passes make several."""
    parts = elementwise_parts(op, params["n"], params["dtype"], params["fused"])
    if len(parts) != 1:
        return None
    footprint = elementwise_footprint_B(op, params["n"], params["dtype"], params["fused"])
    return Vectorised(footprint_B=footprint, kernel=parts[0])


def reduce_parts(n: Number, dtype: str) -> Params:
    """``sum(x)``: one add per element, every element read once, one value written."""
    size = itemsize(dtype)
    return {
        "name": "reduce_sum",
        "flops": n,
        "bytes_read": n * size,
        "bytes_written": size + 0 * n,
        "work_items": n,
        "python_ops_per_item": REDUCE_PYTHON_OPS,
        "python_loop": "reduce_sum",
        "op": "sum",
    }


def reduce_sum(params: Params) -> Workload:
    """Sum of ``n`` elements."""
    n, dtype = params["n"], params["dtype"]
    kernel = Kernel.of(**reduce_parts(n, dtype), dtype=dtype)
    return Workload(name="reduce_sum", params=_items(params), ops=(kernel,), footprint_B=n * itemsize(dtype))


def vectorised_reduce_sum(params: Params) -> Vectorised:
    n, dtype = params["n"], params["dtype"]
    return Vectorised(footprint_B=n * itemsize(dtype), kernel=reduce_parts(n, dtype))


def gemm_parts(m: Number, n: Number, k: Number, dtype: str) -> Params:
    """C[m,n] = A[m,k] @ B[k,n]: 2mnk FLOPs; A and B read once, C written once (compulsory)."""
    size = itemsize(dtype)
    return {
        "flops": 2.0 * m * n * k,
        "bytes_read": (m * k + k * n) * size,
        "bytes_written": m * n * size,
        "work_items": m * n,
        "python_ops_per_item": GEMM_PYTHON_OPS * k + GEMM_PYTHON_SETUP,  # k multiply-adds per output
        "python_loop": "matmul",
    }


def gemm_kernel(m: int, n: int, k: int, dtype: str, name: str, stream: int = 0, math: str = "") -> Kernel:
    """One GEMM kernel, tiled over its (m, n) output (``math="tf32"``: on TF32 tensor cores)."""
    return Kernel.of(
        name=name,
        **gemm_parts(m, n, k, dtype),
        dtype=dtype,
        matrix=True,
        gemm_mn=(m, n),
        stream=stream,
        math=math,
    )


def matmul(params: Params) -> Workload:
    """Dense matrix multiply ``m x k`` by ``k x n``."""
    m, n, k, dtype = params["m"], params["n"], params["k"], params["dtype"]
    kernel = gemm_kernel(m, n, k, dtype, name=f"matmul {m}x{n}x{k}", math=_math(params))
    return Workload(name="matmul", params=_items(params), ops=(kernel,), footprint_B=kernel.bytes)


def vectorised_matmul(params: Params) -> Vectorised:
    part = gemm_parts(params["m"], params["n"], params["k"], params["dtype"])
    return Vectorised(footprint_B=part["bytes_read"] + part["bytes_written"], kernel=part)


def _math(params: Params) -> str:
    """A kernel's ``math`` from a workload's ``math`` parameter (``tf32`` or IEEE)."""
    return "tf32" if params.get("math") == "tf32" else ""


def _items(params: Params) -> tuple[tuple[str, object], ...]:
    return tuple(sorted(params.items()))
