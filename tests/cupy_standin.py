"""A recording, NumPy-backed stand-in for ``cupy`` and ``cupyx``, for tests on machines without a GPU.

It follows CuPy's documented defaults where parsim relies on them: ``ndarray.get`` blocks the host
unless ``blocking=False`` (CuPy >= 13), ``cupyx.profiler.benchmark`` reports ``gpu_times`` in
seconds, an unknown dtype raises ``TypeError`` (bfloat16 works only through ml_dtypes, as in CuPy
14). Device arrays are a ``numpy.ndarray`` subclass, so every NumPy operation works on them; the
stand-in records, per stream, the copies and kernels issued and every point where the host waits,
and counts live and peak bytes of device arrays and pinned host buffers. ``fail(where, exc)``
makes the next call at ``where`` raise ``exc`` (a missing library, a CUDA error, out of memory).
"""

from __future__ import annotations

import types
import weakref

import numpy


class CUDARuntimeError(RuntimeError):
    __module__ = "cupy_backends.cuda.api.runtime"


class OutOfMemoryError(MemoryError):
    __module__ = "cupy.cuda.memory"


class CompileException(Exception):
    __module__ = "cupy.cuda.compiler"


class Recorder:
    """What the code under test did: events, allocations, faults to inject."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        self.device_live = self.device_peak = 0
        self.pinned_live = self.pinned_peak = 0
        self.faults: dict[str, BaseException] = {}
        self.current_stream = 0
        self.compute_types: dict[str, int] = {}  # cuBLAS compute type per dtype (CuPy's _core)
        self.products: list[tuple[str, int]] = []  # (dtype, compute type) of every matrix product

    def check(self, where: str) -> None:
        if where in self.faults:
            raise self.faults.pop(where)

    def allocated(self, nbytes: int, pinned: bool = False) -> None:
        if pinned:
            self.pinned_live += nbytes
            self.pinned_peak = max(self.pinned_peak, self.pinned_live)
        else:
            self.device_live += nbytes
            self.device_peak = max(self.device_peak, self.device_live)

    def freed(self, nbytes: int, pinned: bool = False) -> None:
        if pinned:
            self.pinned_live -= nbytes
        else:
            self.device_live -= nbytes


def _dtype(dtype):
    if dtype is None:
        return numpy.float64
    try:
        return numpy.dtype(dtype)
    except TypeError:
        raise TypeError(f"data type {dtype!r} not understood") from None


H100_SXM = {
    # what getDeviceProperties reports on the H100 that parsim measured (shared/measured/h100-sxm-2026-11-25)
    "name": b"NVIDIA H100 80GB HBM3",
    "major": 9,
    "minor": 0,
    "multiProcessorCount": 132,
    "clockRate": 1980000,
    "totalGlobalMem": 85_031_714_816,  # 79.2 GiB: 80 GiB less the driver's share
    "l2CacheSize": 50 * 2**20,
    "maxThreadsPerMultiProcessor": 2048,
    "asyncEngineCount": 3,
}
"""An H100 SXM's device properties, for ``make(device=H100_SXM)``."""

MI300X = {
    # what hipGetDeviceProperties reports on an MI300X (ROCm 6): CuPy on ROCm keeps CUDA's key names;
    # 304 CUs, 2100 MHz, 191.98 GiB (rocminfo: 196288 MiB on Azure's VF), 4 MB L2 of one XCD
    "name": b"AMD Instinct MI300X",
    "gcnArchName": b"gfx942:sramecc+:xnack-",
    "major": 9,
    "minor": 4,
    "multiProcessorCount": 304,
    "clockRate": 2100000,
    "totalGlobalMem": 196288 * 2**20,
    "l2CacheSize": 4 * 2**20,
    "maxThreadsPerMultiProcessor": 2048,
    "warpSize": 64,
    "asyncEngineCount": 2,
}
"""An MI300X's device properties, for ``make(device=MI300X, hip=True)`` (CuPy built for ROCm)."""


def make(
    recorder: Recorder | None = None,
    free_bytes: int = 16 * 2**30,
    device: dict | None = None,
    hip: bool = False,
) -> tuple[types.ModuleType, types.ModuleType]:
    """A fresh ``(cupy, cupyx)`` pair sharing one ``Recorder`` (at ``cupy.recorder``); ``device``
    overrides the device properties it reports (default: an A100-like "Stand-in GPU"); ``hip`` makes
    it CuPy built for ROCm (``cupy.cuda.runtime.is_hip``)."""
    rec = recorder or Recorder()

    class ndarray(numpy.ndarray):  # noqa: N801 - CuPy's name
        def __array_finalize__(self, obj):
            if self.base is None and self.nbytes:  # owns its memory: a new device allocation
                rec.allocated(self.nbytes)
                weakref.finalize(self, rec.freed, self.nbytes)

        def set(self, arr, stream=None):
            rec.check("set")
            rec.events.append(("h2d", _stream_id(stream)))
            numpy.copyto(self.view(numpy.ndarray), arr)

        def __float__(self):  # CuPy copies a 0-d array back and waits for it
            rec.events.append(("d2h", rec.current_stream))
            rec.events.append(("block", rec.current_stream))
            return float(self.view(numpy.ndarray))

        def get(self, stream=None, order="C", out=None, blocking=True):
            rec.check("get")
            rec.events.append(("d2h", _stream_id(stream)))
            if blocking:
                rec.events.append(("block", _stream_id(stream)))
            if out is None:
                return numpy.array(self.view(numpy.ndarray), order=order)
            numpy.copyto(out, self.view(numpy.ndarray))
            return out

    def _stream_id(stream) -> int:
        return stream.id if stream is not None else rec.current_stream

    def _new(shape, dtype, fill=None):
        rec.check("alloc")
        array = ndarray.__new__(ndarray, shape, _dtype(dtype))  # owns its memory: counted
        if fill is not None:
            array.fill(fill)
        return array

    def asarray(a, dtype=None):
        values = numpy.asarray(a, dtype=dtype)
        array = _new(values.shape, values.dtype)
        array.view(numpy.ndarray)[...] = values
        return array

    def _kernel(function):
        def run(*args, **kwargs):
            rec.check("kernel")
            rec.events.append(("kernel", rec.current_stream))
            return function(*args, **kwargs)

        return run

    class Stream:
        count = 0

        def __init__(self, null=False, non_blocking=False, ptds=False):
            Stream.count += 1
            self.id = Stream.count
            self.non_blocking = non_blocking
            self._previous = 0

        def __enter__(self):
            self._previous, rec.current_stream = rec.current_stream, self.id
            return self

        def __exit__(self, *exc):
            rec.current_stream = self._previous

        def synchronize(self):
            rec.events.append(("sync", self.id))

    class Device:
        def __init__(self, device=None):
            self.id = 0

        def synchronize(self):
            rec.events.append(("sync", 0))

    def elementwise_kernel(in_params, out_params, operation, name="kernel", **_kwargs):
        rec.check("compile")
        inputs = [p.split()[-1] for p in in_params.split(",")]

        def body(*arrays):
            values = dict(zip(inputs, (a.view(numpy.ndarray) for a in arrays), strict=False))
            out = arrays[len(inputs)] if len(arrays) > len(inputs) else _new(arrays[0].shape, arrays[0].dtype)
            if name.endswith("relu"):
                numpy.maximum(values["x"], 0, out=out.view(numpy.ndarray))
            elif name.endswith("saxpy"):
                numpy.add(2 * values["x"], values["y"], out=out.view(numpy.ndarray))
            elif name.endswith("sigmoid"):
                out.view(numpy.ndarray)[...] = 1 / (1 + numpy.exp(-values["x"].astype(numpy.float32)))
            else:
                out.view(numpy.ndarray)[...] = values[inputs[0]]
            return out

        return _kernel(body)

    def standard_normal(size=None, dtype=float):
        rec.check("random")
        if _dtype(dtype) not in (numpy.float32, numpy.float64):
            raise TypeError(f"cupy.random.standard_normal: dtype must be float32 or float64: {dtype!r}")
        values = _new(size, dtype)
        values.view(numpy.ndarray)[...] = numpy.random.default_rng(0).standard_normal(
            size, dtype=_dtype(dtype)
        )
        return values

    def matmul(a, b, out=None):
        rec.check("matmul")
        rec.products.append((str(a.dtype), get_compute_type(a.dtype)))
        return numpy.matmul(a, b, out=out)

    def tensordot(a, b, axes=2):
        rec.products.append((str(a.dtype), get_compute_type(a.dtype)))
        return numpy.tensordot(a, b, axes)

    # CuPy keeps one cuBLAS compute type per dtype, seeded from CUPY_TF32 on first use; a GPU before
    # compute capability 8.0 is refused TF32 with a warning (cupy/_core/_routines_linalg.pyx)
    compute = types.SimpleNamespace(
        COMPUTE_TYPE_TBD=0, COMPUTE_TYPE_DEFAULT=1, COMPUTE_TYPE_FP32=4, COMPUTE_TYPE_TF32=7
    )

    def get_compute_type(dtype):
        name = numpy.dtype(dtype).name
        if name not in rec.compute_types:
            tf32 = name == "float32" and int(__import__("os").environ.get("CUPY_TF32", "0")) > 0
            rec.compute_types[name] = compute.COMPUTE_TYPE_TF32 if tf32 else compute.COMPUTE_TYPE_DEFAULT
        return rec.compute_types[name]

    def set_compute_type(dtype, compute_type):
        rec.events.append(("compute_type", compute_type))
        rec.compute_types[numpy.dtype(dtype).name] = compute_type

    class MemoryPool:
        def free_bytes(self):
            return 0

    properties = {
        "name": b"Stand-in GPU",
        "major": 8,
        "minor": 0,
        "multiProcessorCount": 108,
        "clockRate": 1410000,
        "totalGlobalMem": free_bytes,
        "l2CacheSize": 40 * 2**20,
        "maxThreadsPerMultiProcessor": 2048,
        "asyncEngineCount": 3,
        **(device or {}),
    }
    runtime = types.SimpleNamespace(
        getDeviceProperties=lambda device: dict(properties),
        runtimeGetVersion=lambda: 13000,
        driverGetVersion=lambda: 13000,
        memGetInfo=lambda: (free_bytes - rec.device_live, free_bytes),
        CUDARuntimeError=CUDARuntimeError,
        is_hip=hip,
    )
    cuda = types.SimpleNamespace(
        is_available=lambda: True,
        Stream=Stream,
        Device=Device,
        runtime=runtime,
        memory=types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError),
        compiler=types.SimpleNamespace(CompileException=CompileException),
    )
    cupy = types.ModuleType("cupy")
    cupy.__version__ = "14.2.0"
    cupy.recorder = rec
    cupy.ndarray = ndarray
    cupy.cuda = cuda
    cupy.empty = lambda shape, dtype=float: _new(shape, dtype)
    cupy.zeros = lambda shape, dtype=float: _new(shape, dtype, 0)
    cupy.ones = lambda shape, dtype=float: _new(shape, dtype, 1)
    cupy.full = lambda shape, fill_value, dtype=None: _new(shape, dtype, fill_value)
    cupy.asarray = asarray
    cupy.random = types.SimpleNamespace(standard_normal=standard_normal)
    cupy.ElementwiseKernel = elementwise_kernel
    cupy.get_default_memory_pool = MemoryPool
    cupy.matmul = _kernel(matmul)
    cupy.tensordot = _kernel(tensordot)
    cupy._core = types.SimpleNamespace(
        get_compute_type=get_compute_type, set_compute_type=set_compute_type, _routines_linalg=compute
    )
    for name in ("add", "subtract", "multiply", "maximum", "greater", "sum", "negative", "exp", "reciprocal"):
        setattr(cupy, name, _kernel(getattr(numpy, name)))

    class Pinned(numpy.ndarray):
        """A page-locked host buffer (counted apart from device memory)."""

    def empty_pinned(shape, dtype=float):
        rec.check("pinned")
        buffer = Pinned.__new__(Pinned, shape, _dtype(dtype))
        rec.allocated(buffer.nbytes, pinned=True)
        weakref.finalize(buffer, rec.freed, buffer.nbytes, True)
        return buffer

    def benchmark(function, args=(), n_repeat=10000, n_warmup=10, max_duration=float("inf"), **_kwargs):
        for _ in range(max(1, min(n_warmup, 2))):
            function(*args)
        times = []
        for _ in range(min(n_repeat, 5)):
            function(*args)
            times.append(1e-5)  # seconds, as CuPy's gpu_times are
        return types.SimpleNamespace(gpu_times=numpy.array([times]), cpu_times=numpy.array(times))

    cupyx = types.ModuleType("cupyx")
    cupyx.empty_pinned = empty_pinned
    cupyx.profiler = types.ModuleType("cupyx.profiler")
    cupyx.profiler.benchmark = benchmark
    return cupy, cupyx


def install(monkeypatch, **options):
    """Put a fresh stand-in in ``sys.modules`` as ``cupy``/``cupyx``; returns its ``Recorder``."""
    cupy, cupyx = make(**options)
    monkeypatch.setitem(__import__("sys").modules, "cupy", cupy)
    monkeypatch.setitem(__import__("sys").modules, "cupyx", cupyx)
    monkeypatch.setitem(__import__("sys").modules, "cupyx.profiler", cupyx.profiler)
    return cupy.recorder
