"""The workloads as real code, written once against the array module ``xp`` (NumPy or CuPy).

Each builder allocates its (non-zero) inputs and output once and returns the operation to time,
so the timing sees the computation, not the allocation. Elementwise ops run in place through
``out=``. With ``fused=false`` an op runs as NumPy evaluates an expression: one pass over memory
per operation (``saxpy`` is a multiply pass and an add pass); the GPU backend can also run
the fused form as a single kernel (see ``gpu``).
"""

from __future__ import annotations

from collections.abc import Callable

from parsim.errors import ParsimError

Operation = Callable[[], object]


def elementwise_passes(xp, op: str, arrays: dict) -> list[Operation]:
    """The passes of an unfused elementwise op, each one ufunc call over whole arrays."""
    a, b, out, tmp = arrays["a"], arrays["b"], arrays["out"], arrays["tmp"]
    if op == "vector_add":
        return [lambda: xp.add(a, b, out=out)]
    if op == "relu":
        zeros = arrays["zeros"]
        return [lambda: xp.maximum(a, zeros, out=out)]
    if op == "saxpy":
        return [lambda: xp.multiply(a, 2.0, out=tmp), lambda: xp.add(tmp, b, out=out)]
    if op == "sigmoid":
        return [
            lambda: xp.negative(a, out=tmp),
            lambda: xp.exp(tmp, out=tmp),
            lambda: xp.add(tmp, 1.0, out=tmp),
            lambda: xp.reciprocal(tmp, out=out),
        ]
    raise ParsimError(f"no elementwise implementation for {op!r}")


def elementwise_arrays(backend, n: int, dtype: str) -> dict:
    xp = backend.xp
    return {
        "a": backend.random(n, dtype),
        "b": backend.random(n, dtype),
        "out": xp.empty(n, dtype=dtype),
        "tmp": xp.empty(n, dtype=dtype),
        "zeros": xp.zeros(n, dtype=dtype),
    }


def reduce_sum(backend, n: int, dtype: str) -> Operation:
    a = backend.random(n, dtype)
    return lambda: a.sum()


def matmul(backend, m: int, n: int, k: int, dtype: str) -> Operation:
    xp = backend.xp
    a, b, c = backend.random((m, k), dtype), backend.random((k, n), dtype), xp.empty((m, n), dtype=dtype)
    return lambda: xp.matmul(a, b, out=c)


def conv2d(
    backend, batch: int, channels: int, height: int, width: int, filters: int, kernel: int, dtype: str
) -> Operation:
    """Same-padded stride-1 convolution as ``kernel**2`` shifted GEMMs (one per filter tap)."""
    xp = backend.xp
    pad = kernel // 2
    images = xp.zeros((batch, channels, height + 2 * pad, width + 2 * pad), dtype=dtype)
    images[:, :, pad : pad + height, pad : pad + width] = backend.random(
        (batch, channels, height, width), dtype
    )
    weights = backend.random((filters, channels, kernel, kernel), dtype)
    out = xp.empty((filters, batch, height, width), dtype=dtype)

    def run():
        out.fill(0)
        for i in range(kernel):
            for j in range(kernel):
                window = images[:, :, i : i + height, j : j + width]
                xp.add(out, xp.tensordot(weights[:, :, i, j], window, axes=([1], [1])), out=out)
        return out

    return run
