"""The GPU-only parts of measuring: fused kernels, host buffers, copies, streams and memory (CuPy).

Kept small and separate: everything else runs the same code on NumPy and CuPy. Host buffers
are allocated explicitly — pinned with ``cupyx.empty_pinned`` (page-locked, so the DMA engine
reads them directly) or as a plain NumPy array (pageable, staged by the driver). Copies use
``ndarray.set`` / ``ndarray.get`` on an explicit stream; ``get`` blocks the host by default since
CuPy 13, so every copy back passes ``blocking=False`` and the host synchronises each stream once,
after it has issued all of them: that is what lets streams overlap. Each stage of an offload
(H2D, kernel, D2H) can be run on its own as well as end to end, so all four are timed.

``device_bytes`` and ``host_bytes`` count what these functions allocate, temporaries included,
so the memory check before a measurement refuses exactly what would not fit.

Matrix products in float32 run in the math mode the parameters ask for (``math_mode``): CuPy
keeps one cuBLAS compute type per dtype for the whole process and every product reads it when it
runs; the ``CUPY_TF32`` variable only seeds it the first time a float32 product runs, so it cannot
switch a measurement. ``math_mode`` sets it for the measurement, puts back what was there after, and
says what actually ran.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator

import numpy

from parsim.base.dtypes import itemsize
from parsim.measure import kernels
from parsim.workloads.ops import ELEMENTWISE
from parsim.workloads.transfers import chunk_sizes

FUSED = {
    # name: (input parameters, output, body) of a cupy.ElementwiseKernel; the arithmetic is done
    # in float so that float16 and bfloat16 compile too (double would run at 1/32-1/64 speed on
    # consumer GPUs and turn a memory-bound op compute-bound; these kernels exist to be timed)
    "saxpy": ("T x, T y", "T z", "z = (T)(2.0f * (float)x + (float)y)"),
    "sigmoid": ("T x", "T z", "z = (T)(1.0f / (1.0f + expf(-(float)x)))"),
    "relu": ("T x", "T z", "z = x > (T)0 ? x : (T)0"),
}

GENERATED_AS = 4
"""Bytes per item of the float32 values that random data of a half-precision type is drawn as
(then converted): the only temporary data generation makes (float64 data is drawn as float64)."""


def fused_operation(cupy, name: str, arrays: dict) -> kernels.Operation | None:
    """One-kernel form of ``name`` (None where the NumPy-style single pass already is one kernel)."""
    if name not in FUSED:
        return None
    inputs, output, body = FUSED[name]
    kernel = cupy.ElementwiseKernel(inputs, output, body, f"parsim_{name}")
    a, out = arrays["a"], arrays["out"]
    return (lambda: kernel(a, arrays["b"], out)) if name == "saxpy" else (lambda: kernel(a, out))


TF32_OFF = "NVIDIA_TF32_OVERRIDE"
"""Set to 0, this CUDA variable keeps every NVIDIA library from using TF32, whatever it is asked."""


@contextlib.contextmanager
def math_mode(cupy, dtype, math: str) -> Iterator[tuple[str, str]]:
    """Run the block's float32 matrix products on TF32 tensor cores (``math="tf32"``) or in IEEE
    float32 (anything else), through CuPy's per-dtype cuBLAS compute type.

    Yields:
        ``(ran, note)``: ``"tf32"`` or ``"ieee"``, what the products run in (``"ieee"`` for any
        dtype but float32, which TF32 does not apply to), and why it differs from what was asked
        (empty when it does not).
    """
    if numpy.dtype(dtype) != numpy.float32:
        yield "ieee", ("" if math != "tf32" else f"TF32 applies only to float32 products, not {dtype}")
        return
    core = cupy._core
    types = cupy._core._routines_linalg
    before = core.get_compute_type(numpy.float32)
    wanted = types.COMPUTE_TYPE_TF32 if math == "tf32" else types.COMPUTE_TYPE_FP32
    with warnings.catch_warnings(record=True) as refused:  # a GPU before Ampere has no TF32
        warnings.simplefilter("always")
        core.set_compute_type(numpy.float32, wanted)
    try:
        tf32 = core.get_compute_type(numpy.float32) == types.COMPUTE_TYPE_TF32
        note = ""
        if math == "tf32" and not tf32:
            note = str(refused[0].message) if refused else "CuPy did not take the TF32 compute type"
        elif tf32 and os.environ.get(TF32_OFF) == "0":
            tf32, note = False, f"{TF32_OFF}=0 keeps cuBLAS from using TF32"
        yield ("tf32" if tf32 else "ieee"), note
    finally:
        core.set_compute_type(numpy.float32, before)


def arrays_for(op: str, fused: bool) -> tuple[str, ...]:
    """The arrays an elementwise op needs: its inputs, the output, a temporary between passes."""
    spec = ELEMENTWISE[op]
    names = ("a", "b")[: spec.inputs] + ("out",)
    return names + (("tmp",) if not fused and len(spec.passes) > 1 else ())


def _generation_B(items: int, dtype: str) -> float:
    size = itemsize(dtype)
    return items * GENERATED_AS if size < GENERATED_AS else 0.0


def host_buffer(n: int, dtype, pinned: bool):
    """A host array of ``n`` items of realistic data: page-locked or ordinary (pageable)."""
    if pinned:
        import cupyx

        buffer = cupyx.empty_pinned((n,), dtype=dtype)
    else:
        buffer = numpy.empty((n,), dtype=dtype)
    # drawn as float32 (no float64 temporary), written into the buffer's own type
    buffer[...] = numpy.random.default_rng(3).standard_normal(n, dtype=numpy.float32)
    return buffer


class HostStaging:
    """The host side of a training step's copies: buffers made once (page-locked, or ordinary
    pageable memory that the driver stages), copied on the current stream in order with the step's
    kernels; copies back do not block the host until ``wait``."""

    numpy = numpy

    def __init__(self, backend, pinned: bool = True):
        self.backend = backend
        self.pinned = pinned

    def host_copy(self, device_array):
        """A host buffer holding ``device_array``'s values."""
        if self.pinned:
            import cupyx

            buffer = cupyx.empty_pinned(device_array.shape, dtype=device_array.dtype)
        else:
            buffer = numpy.empty(device_array.shape, dtype=device_array.dtype)
        device_array.get(out=buffer, blocking=True)
        return buffer

    def h2d(self, host, device_array) -> None:
        device_array.set(host)

    def d2h(self, device_array, host) -> None:
        device_array.get(out=host, blocking=False)

    def wait(self) -> None:
        self.backend.sync()


def copy_operation(backend, n: int, dtype, direction: str, pinned: bool) -> kernels.Operation:
    """One host<->device copy of ``n`` items on a dedicated stream, waited for once."""
    cupy = backend.xp
    host = host_buffer(n, dtype, pinned)
    device = cupy.empty((n,), dtype=dtype)
    stream = cupy.cuda.Stream(non_blocking=True)
    if direction == "h2d":
        return lambda: (device.set(host, stream=stream), stream.synchronize())
    return lambda: (device.get(stream=stream, out=host, blocking=False), stream.synchronize())


def offload_operations(
    backend, name: str, n: int, dtype, streams: int, pinned: bool, fused: bool
) -> dict[str, kernels.Operation]:
    """``end_to_end``, ``h2d``, ``kernel`` and ``d2h`` operations of a chunked, streamed offload.

    The chunks are cut as the model cuts them (``chunk_sizes``); every chunk's copies and kernels
    are issued before the host waits on any stream.
    """
    cupy = backend.xp
    needed = arrays_for(name, fused=fused and name in FUSED)
    chunks = []
    for size in chunk_sizes(n, streams):
        arrays = {key: cupy.empty(size, dtype=dtype) for key in needed}
        host = {"a": host_buffer(size, dtype, pinned), "out": host_buffer(size, dtype, pinned)}
        if "b" in arrays:
            host["b"] = host_buffer(size, dtype, pinned)
        fused_op = fused_operation(cupy, name, arrays) if fused else None
        passes = [fused_op] if fused_op else kernels.elementwise_passes(cupy, name, arrays)
        chunks.append((cupy.cuda.Stream(non_blocking=True), host, arrays, passes))

    def h2d(chunk):
        stream, host, arrays, _ = chunk
        for key in ("a", "b"):
            if key in arrays:
                arrays[key].set(host[key], stream=stream)

    def run_kernel(chunk):
        stream, _, _, passes = chunk
        with stream:
            for step in passes:
                step()

    def d2h(chunk):
        stream, host, arrays, _ = chunk
        arrays["out"].get(stream=stream, out=host["out"], blocking=False)

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


def device_bytes(workload: str, params: dict) -> float:
    """GPU memory the measurement of ``workload`` allocates at its peak, temporaries included."""
    dtype = params["dtype"]
    size = itemsize(dtype)
    if workload in ELEMENTWISE:
        n = int(params["n"])
        return len(arrays_for(workload, params.get("fused", True) and workload in FUSED)) * n * size + (
            _generation_B(n, dtype)
        )
    if workload == "reduce_sum":
        n = int(params["n"])
        return n * size + _generation_B(n, dtype)
    if workload == "matmul":
        m, n, k = params["m"], params["n"], params["k"]
        return (m * k + k * n + m * n) * size + _generation_B(max(m * k, k * n), dtype)
    if workload == "conv2d":
        b, c, h, w = params["batch"], params["channels"], params["height"], params["width"]
        f, r = params["filters"], params["kernel"]
        pad = r // 2
        images = b * c * (h + 2 * pad) * (w + 2 * pad)
        outputs = f * b * h * w  # the output, and tensordot's result before it is added in
        taps = f * c + b * c * h * w  # tensordot's contiguous copies of a tap's weights and window
        return (images + f * c * r * r + 2 * outputs + taps) * size + _generation_B(b * c * h * w, dtype)
    if workload == "copy":
        return int(params["n"]) * size
    if workload == "offload":
        needed = arrays_for(params["op"], fused=params["op"] in FUSED)
        return len(needed) * int(params["n"]) * size
    if workload == "mlp_train_step":
        n, d_in, hidden, d_out = params["batch"], params["d_in"], params["hidden"], params["d_out"]
        weights = d_in * hidden + hidden * d_out
        # data, weights (twice when copied in), activations, gradients and their temporaries
        activations = n * (d_in + d_out) + 4 * n * hidden + 4 * n * d_out
        return (3 * weights + activations) * size + _generation_B(max(n * d_in, weights), dtype)
    raise KeyError(workload)


def host_bytes(workload: str, params: dict) -> float:
    """Host memory the measurement allocates for copies (pinned or pageable buffers and the
    float32 values drawn to fill them); 0 for workloads that stay on the device."""
    if workload not in ("copy", "offload", "mlp_train_step"):
        return 0.0
    dtype = params["dtype"]
    size = itemsize(dtype)
    if workload == "copy":
        n = int(params["n"])
        return n * size + n * GENERATED_AS
    if workload == "offload":
        n = int(params["n"])
        buffers = ELEMENTWISE[params["op"]].inputs + 1
        largest = max(chunk_sizes(n, params["streams"]))
        return buffers * n * size + largest * GENERATED_AS
    n, d_in, hidden, d_out = params["batch"], params["d_in"], params["hidden"], params["d_out"]
    weights = d_in * hidden + hidden * d_out  # copied in, and the gradients copied back
    staged = (n * (d_in + d_out) + (2 * weights if params["weights"] == "copied" else 0)) * size
    return staged if params["pinned"] else 0.0  # pageable buffers are ordinary memory
