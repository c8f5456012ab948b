"""The single-kernel workloads: elementwise ops, a reduction, matrix multiply and 3x3 convolution.

Each builder takes validated parameters and returns a ``Workload`` of one ``Kernel``. The
numbers are the ones a roofline needs: FLOPs (an FMA counts two), bytes read and written once
each (the compulsory traffic), independent work items, and whether matrix units apply.
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
        python_ops: interpreted operations per element in a pure-Python loop.
        formula: what it computes, for docs and the app.
    """

    flops: float
    inputs: int
    special: float = 0.0
    python_ops: float = 1.0
    formula: str = ""


ELEMENTWISE: dict[str, Elementwise] = {
    "vector_add": Elementwise(flops=1, inputs=2, python_ops=1, formula="c = a + b"),
    "saxpy": Elementwise(flops=2, inputs=2, python_ops=2, formula="y = a * x + y"),
    "relu": Elementwise(flops=1, inputs=1, python_ops=1, formula="y = max(x, 0)"),
    # 1 / (1 + exp(-x)): negate, add, divide, plus one exp on the special-function unit.
    "sigmoid": Elementwise(flops=3, inputs=1, special=1, python_ops=4, formula="y = 1 / (1 + exp(-x))"),
}


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


def elementwise(op: str, params: dict) -> Workload:
    """Workload of one elementwise op (``vector_add``, ``saxpy``, ``relu``, ``sigmoid``)."""
    n, dtype = params["n"], params["dtype"]
    kernel = elementwise_kernel(op, n, dtype)
    return Workload(name=op, params=_items(params), ops=(kernel,), footprint_B=kernel.bytes)


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
        python_ops_per_item=1,
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
        python_ops_per_item=k,  # the inner loop runs k multiply-adds per output element
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
