"""The GPU-only parts of measuring: fused kernels, host buffers, copies and streams (CuPy).

Kept small and separate: everything else runs the same code on NumPy and CuPy. Host buffers
are allocated explicitly — pinned with ``cupyx.empty_pinned`` (page-locked, so the DMA engine
reads them directly) or as a plain NumPy array (pageable, staged by the driver). Copies use
``ndarray.set`` / ``ndarray.get`` on an explicit stream. Each stage of an offload (H2D, kernel,
D2H) can be run on its own as well as end to end, so all four are timed.
"""

from __future__ import annotations

import numpy

from parsim.measure import kernels

FUSED = {
    # name: (input parameters, output, body) of a cupy.ElementwiseKernel; the arithmetic is done
    # in float so that float16 and bfloat16 compile too (double would run at 1/32-1/64 speed on
    # consumer GPUs and turn a memory-bound op compute-bound; these kernels exist to be timed)
    "saxpy": ("T x, T y", "T z", "z = (T)(2.0f * (float)x + (float)y)"),
    "sigmoid": ("T x", "T z", "z = (T)(1.0f / (1.0f + expf(-(float)x)))"),
    "relu": ("T x", "T z", "z = x > (T)0 ? x : (T)0"),
}


def fused_operation(cupy, name: str, arrays: dict) -> kernels.Operation | None:
    """One-kernel form of ``name`` (None where the NumPy-style single pass already is one kernel)."""
    if name not in FUSED:
        return None
    inputs, output, body = FUSED[name]
    kernel = cupy.ElementwiseKernel(inputs, output, body, f"parsim_{name}")
    a, b, out = arrays["a"], arrays["b"], arrays["out"]
    return (lambda: kernel(a, b, out)) if name == "saxpy" else (lambda: kernel(a, out))


def host_buffer(n: int, dtype: str, pinned: bool):
    """A host array of ``n`` items of realistic data: page-locked or ordinary (pageable)."""
    if pinned:
        import cupyx

        buffer = cupyx.empty_pinned((n,), dtype=dtype)
    else:
        buffer = numpy.empty((n,), dtype=dtype)
    buffer[...] = numpy.random.default_rng(3).standard_normal(n)
    return buffer


def copy_operation(backend, n: int, dtype: str, direction: str, pinned: bool) -> kernels.Operation:
    """One host<->device copy of ``n`` items on a dedicated stream."""
    cupy = backend.xp
    host = host_buffer(n, dtype, pinned)
    device = cupy.empty((n,), dtype=dtype)
    stream = cupy.cuda.Stream(non_blocking=True)
    if direction == "h2d":
        return lambda: (device.set(host, stream=stream), stream.synchronize())
    return lambda: (device.get(stream=stream, out=host), stream.synchronize())


def offload_operations(
    backend, name: str, n: int, dtype: str, streams: int, pinned: bool, fused: bool
) -> dict[str, kernels.Operation]:
    """``end_to_end``, ``h2d``, ``kernel`` and ``d2h`` operations of a chunked, streamed offload."""
    cupy = backend.xp
    edges = [round(i * n / streams) for i in range(streams + 1)]
    chunks = []
    for s in range(streams):
        size = edges[s + 1] - edges[s]
        host_in, host_b = host_buffer(size, dtype, pinned), host_buffer(size, dtype, pinned)
        host_out = host_buffer(size, dtype, pinned)
        arrays = {
            "a": cupy.empty(size, dtype=dtype),
            "b": cupy.empty(size, dtype=dtype),
            "out": cupy.empty(size, dtype=dtype),
            "tmp": cupy.empty(size, dtype=dtype),
        }
        passes = kernels.elementwise_passes(cupy, name, arrays)
        fused_op = fused_operation(cupy, name, arrays) if fused else None
        chunks.append(
            (
                cupy.cuda.Stream(non_blocking=True),
                host_in,
                host_b,
                host_out,
                arrays,
                [fused_op] if fused_op else passes,
            )
        )
    two_inputs = name in ("vector_add", "saxpy")

    def h2d(chunk):
        stream, host_in, host_b, _, arrays, _ = chunk
        arrays["a"].set(host_in, stream=stream)
        if two_inputs:
            arrays["b"].set(host_b, stream=stream)

    def run_kernel(chunk):
        stream, *_, passes = chunk
        with stream:
            for step in passes:
                step()

    def d2h(chunk):
        stream, _, _, host_out, arrays, _ = chunk
        arrays["out"].get(stream=stream, out=host_out)

    def everything():
        for chunk in chunks:  # depth-first issue, as the model's offload workload does
            h2d(chunk)
            run_kernel(chunk)
            d2h(chunk)
        for chunk in chunks:
            chunk[0].synchronize()

    def stage(function):
        def run():
            for chunk in chunks:
                function(chunk)
            for chunk in chunks:
                chunk[0].synchronize()

        return run

    return {"end_to_end": everything, "h2d": stage(h2d), "kernel": stage(run_kernel), "d2h": stage(d2h)}
