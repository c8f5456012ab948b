"""The workloads as real code, written once against the array module ``xp`` (NumPy or CuPy).

Each builder allocates its (non-zero) inputs and output once and returns the operation to time,
so the timing sees the computation, not the allocation. Elementwise ops run in place through
``out=``. With ``fused=false`` an op runs as NumPy evaluates an expression: one pass over memory
per operation (``saxpy`` is a multiply pass and an add pass); the GPU backend can also run
the fused form as a single kernel (see ``gpu``).
"""

from __future__ import annotations

from collections.abc import Callable

from parsim.base.errors import ParsimError

Operation = Callable[[], object]


def elementwise_passes(xp, op: str, arrays: dict) -> list[Operation]:
    """The passes of an unfused elementwise op, each one ufunc call over whole arrays."""
    a, b, out, tmp = (arrays.get(name) for name in ("a", "b", "out", "tmp"))
    if op == "vector_add":
        return [lambda: xp.add(a, b, out=out)]
    if op == "relu":
        # as users write it: a scalar threshold. NumPy 2 has no SIMD loop for maximum against a
        # scalar and runs it ~3x slower than against an array of zeros; calibration times the same
        return [lambda: xp.maximum(a, 0.0, out=out)]
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


def elementwise_arrays(backend, n: int, dtype, names: tuple[str, ...] = ("a", "b", "out", "tmp")) -> dict:
    """The arrays ``names`` of an elementwise op: inputs ``a``/``b`` with data, ``out``/``tmp`` empty."""
    xp = backend.xp
    return {
        name: backend.random(n, dtype) if name in ("a", "b") else xp.empty(n, dtype=dtype) for name in names
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
    """Same-padded stride-1 convolution as ``kernel**2`` shifted GEMMs (one per filter tap): the
    program ``conv2d algorithm=tap-gemm`` models kernel by kernel (``workloads.tap_gemm``)."""
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


def mlp_train_step(backend, params: dict, staging=None) -> Operation:
    """One SGD step of the 2-layer MLP of the articles, written once for NumPy and CuPy.

    It is the program ``workloads.mlp.mlp_train_step`` models, call for call: two products
    forward, ``(diff * diff).sum()`` as the loss (a square and a reduction), three products back,
    the ReLU's gradient as a mask (``grad_h *= h > 0``: a comparison and a multiply, never the
    boolean-indexed assignment, which on CuPy scans the mask and waits for the GPU), and
    ``w -= lr * g`` as two in-place passes. Nothing is allocated on the host during a step.

    ``staging`` (GPU only, ``gpu.HostStaging``): the host side of the copies. ``weights=resident``:
    x and y are copied in every step, everything else stays on the device. ``weights=copied``: the
    weights are copied in too and the gradients copied back for the update on the host, as with
    ``tf.placeholder`` + ``feed_dict``. Every copy is from or into a host buffer made once, page-locked
    or pageable as ``pinned`` says, so a step times the copies the model describes.
    """
    xp = backend.xp
    n, d_in, hidden, d_out = params["batch"], params["d_in"], params["hidden"], params["d_out"]
    dtype, rate = params["dtype"], 1e-6
    x, y = backend.random((n, d_in), dtype), backend.random((n, d_out), dtype)
    w1, w2 = backend.random((d_in, hidden), dtype), backend.random((hidden, d_out), dtype)
    xp.multiply(w1, 0.01, out=w1)
    xp.multiply(w2, 0.01, out=w2)
    copied = params["weights"] == "copied" and staging is not None
    fed = {"x": x, "y": y, **({"w1": w1, "w2": w2} if copied else {})}
    host = {name: staging.host_copy(array) for name, array in fed.items()} if staging else {}
    if copied:
        host["grad_w1"], host["grad_w2"] = staging.host_copy(w1), staging.host_copy(w2)

    def update(weights, gradient, numerics=xp) -> None:
        numerics.multiply(gradient, rate, out=gradient)
        numerics.subtract(weights, gradient, out=weights)

    def step():
        for name, array in fed.items():
            if staging:
                staging.h2d(host[name], array)
        h = xp.matmul(x, w1)
        h_relu = xp.maximum(h, 0)
        diff = xp.subtract(xp.matmul(h_relu, w2), y)
        loss = xp.sum(xp.multiply(diff, diff))
        grad_y = xp.multiply(diff, 2.0)
        grad_w2 = xp.matmul(h_relu.T, grad_y)
        grad_h = xp.matmul(grad_y, w2.T)
        xp.multiply(grad_h, xp.greater(h, 0), out=grad_h)
        grad_w1 = xp.matmul(x.T, grad_h)
        if copied:
            staging.d2h(grad_w1, host["grad_w1"])
            staging.d2h(grad_w2, host["grad_w2"])
            seconds = float(loss)  # the loss comes back and the host waits for the copies
            staging.wait()
            update(host["w1"], host["grad_w1"], numerics=staging.numpy)
            update(host["w2"], host["grad_w2"], numerics=staging.numpy)
            return seconds
        update(w1, grad_w1)
        update(w2, grad_w2)
        return float(loss)

    return step
