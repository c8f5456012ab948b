"""The single-kernel workloads: elementwise ops, a reduction, matrix multiply and 3x3 convolution.

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

from parsim.workloads.base import Kernel, Workload, itemsize


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
    # NumPy's maximum against a scalar misses its SIMD loop; against a zero array it takes it
    "relu": Elementwise(
        flops=1, inputs=1, python_ops=0.47, formula="y = max(x, 0)", passes=(("maximum", 1, 2, 0),)
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


def elementwise_kernel(op: str, n: int, dtype: str, stream: int = 0, label: str | None = None) -> Kernel:
    """One elementwise kernel over ``n`` elements, reading its inputs and writing one output."""
    spec = ELEMENTWISE[op]
    size = itemsize(dtype)
    return Kernel(
        name=label or op,
        flops=spec.flops * n,
        bytes_read=spec.inputs * n * size,
        bytes_written=n * size,
        work_items=n,
        dtype=dtype,
        special_ops=spec.special * n,
        python_ops_per_item=spec.python_ops,
        stream=stream,
    )


def unfused_kernels(op: str, n: int, dtype: str) -> list[Kernel]:
    """The op as NumPy runs it: one kernel per operation, each a full pass over memory."""
    spec = ELEMENTWISE[op]
    size = itemsize(dtype)
    share = spec.python_ops / len(spec.passes)
    return [
        Kernel(
            name=f"{op}: {name}",
            flops=flops * n,
            bytes_read=inputs * n * size,
            bytes_written=n * size,
            work_items=n,
            dtype=dtype,
            special_ops=special * n,
            python_ops_per_item=share,
            op=name,
        )
        for name, flops, inputs, special in spec.passes
    ]


def elementwise(op: str, params: dict) -> Workload:
    """Workload of one elementwise op (``vector_add``, ``saxpy``, ``relu``, ``sigmoid``)."""
    n, dtype = params["n"], params["dtype"]
    ops = (elementwise_kernel(op, n, dtype),) if params["fused"] else tuple(unfused_kernels(op, n, dtype))
    spec = ELEMENTWISE[op]
    footprint = (
        (spec.inputs + 1 + (0 if params["fused"] or len(spec.passes) == 1 else 1)) * n * itemsize(dtype)
    )
    return Workload(name=op, params=_items(params), ops=ops, footprint_B=footprint)


def reduce_sum(params: dict) -> Workload:
    """Sum of ``n`` elements: one add per element, every element read once, one value written."""
    n, dtype = params["n"], params["dtype"]
    size = itemsize(dtype)
    kernel = Kernel(
        name="reduce_sum",
        flops=n,
        bytes_read=n * size,
        bytes_written=size,
        work_items=n,
        dtype=dtype,
        python_ops_per_item=REDUCE_PYTHON_OPS,
        op="sum",
    )
    return Workload(name="reduce_sum", params=_items(params), ops=(kernel,), footprint_B=n * size)


def gemm_kernel(m: int, n: int, k: int, dtype: str, name: str, stream: int = 0) -> Kernel:
    """C[m,n] = A[m,k] @ B[k,n]: 2mnk FLOPs; A and B read once, C written once (compulsory)."""
    size = itemsize(dtype)
    return Kernel(
        name=name,
        flops=2.0 * m * n * k,
        bytes_read=(m * k + k * n) * size,
        bytes_written=m * n * size,
        work_items=m * n,
        dtype=dtype,
        matrix=True,
        python_ops_per_item=GEMM_PYTHON_OPS * k + GEMM_PYTHON_SETUP,  # k multiply-adds per output
        gemm_mn=(m, n),
        stream=stream,
    )


def matmul(params: dict) -> Workload:
    """Dense matrix multiply ``m x k`` by ``k x n``."""
    m, n, k, dtype = params["m"], params["n"], params["k"], params["dtype"]
    kernel = gemm_kernel(m, n, k, dtype, name=f"matmul {m}x{n}x{k}")
    return Workload(name="matmul", params=_items(params), ops=(kernel,), footprint_B=kernel.bytes)


def conv2d(params: dict) -> Workload:
    """Same-padded stride-1 convolution, computed as an implicit GEMM.

    Every output pixel of every filter is independent ("embarrassingly parallel"): M = batch x
    height x width output pixels, N = filters, K = channels x kernel x kernel.
    """
    b, c, h, w = params["batch"], params["channels"], params["height"], params["width"]
    f, r, dtype = params["filters"], params["kernel"], params["dtype"]
    size = itemsize(dtype)
    m, n, k = b * h * w, f, c * r * r
    kernel = Kernel(
        name=f"conv{r}x{r} {c}->{f} {h}x{w}",
        flops=2.0 * m * n * k,
        bytes_read=(b * c * h * w + f * c * r * r) * size,
        bytes_written=b * f * h * w * size,
        work_items=m * n,
        dtype=dtype,
        matrix=True,
        python_ops_per_item=k,
        gemm_mn=(m, n),
    )
    return Workload(name="conv2d", params=_items(params), ops=(kernel,), footprint_B=kernel.bytes)


def _items(params: dict) -> tuple[tuple[str, object], ...]:
    return tuple(sorted(params.items()))
