"""Flynn modes on the CPU, for real: an interpreter loop, one core, and all cores.

- ``sisd``: a pure-Python loop over Python floats, one element at a time (guarded to small
  sizes: it runs at tens of nanoseconds per element);
- ``simd``: NumPy on one thread (its BLAS limited to one thread with threadpoolctl);
- ``mimd``: one thread per core, each running NumPy on its own contiguous chunk, BLAS limited to
  one thread per call (NumPy releases the GIL inside ufuncs and BLAS, so the threads overlap);
- ``mimd+simd``: all cores: chunked threads for elementwise ops (NumPy's ufuncs are
  single-threaded), a single multithreaded BLAS call for matrix products.

Chunks are never smaller than ``CHUNK_ITEMS`` items, the same grain as the CPU tiles of the model
(calibration writes it as ``tile_items``), so both decide alike how many cores small work uses.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

from parsim.base.errors import ParsimError
from parsim.measure import kernels

CHUNK_ITEMS = 262144  # 1 MiB of float32: below this, handing work to threads costs more than it saves
SISD_MAX_STEPS = 3_000_000  # Python-level steps; ~0.2 s at 50 ns each


def cores() -> int:
    """The CPUs this process may run on (its affinity: ``taskset``, a container's cpuset), not the
    machine's count: a process pinned to 4 of 16 cores forks and joins 4 threads, not 16."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no affinity call on this platform
        count = getattr(os, "process_cpu_count", os.cpu_count)
        return count() or 1


def chunks(n: int) -> list[slice]:
    """Contiguous chunks of ``n`` items, one per core, none smaller than CHUNK_ITEMS."""
    count = max(1, min(cores(), math.ceil(n / CHUNK_ITEMS)))
    edges = [round(i * n / count) for i in range(count + 1)]
    return [slice(edges[i], edges[i + 1]) for i in range(count)]


class Parallel:
    """A pool of one thread per core, reused across calls; limits BLAS to one thread per call."""

    def __init__(self):
        from threadpoolctl import threadpool_limits

        self._limit = threadpool_limits(limits=1)
        self.pool = ThreadPoolExecutor(max_workers=cores())

    def run(self, tasks: list) -> None:
        if len(tasks) == 1:
            tasks[0]()
            return
        for future in [self.pool.submit(task) for task in tasks]:
            future.result()

    def close(self) -> None:
        self.pool.shutdown()
        self._limit.restore_original_limits()


def sisd_operation(name: str, params: dict) -> kernels.Operation:
    """The pure-Python loop for ``name`` (refused above SISD_MAX_STEPS steps)."""
    import math as m
    import random

    supported = ("vector_add", "saxpy", "relu", "sigmoid", "reduce_sum", "matmul")
    if name not in supported:
        raise ParsimError(f"sisd (a Python loop) is implemented for {', '.join(supported)}: not {name}")
    steps = params["m"] * params["n"] * params["k"] if name == "matmul" else params["n"]
    if steps > SISD_MAX_STEPS:
        raise ParsimError(
            f"sisd runs a Python loop: {name} with {steps:.3g} steps takes too long to repeat; "
            f"use at most {SISD_MAX_STEPS:.0e} (e.g. n=1e5)"
        )
    rng = random.Random(7)
    if name == "matmul":
        a = [[rng.gauss(0.0, 1.0) for _ in range(params["k"])] for _ in range(params["m"])]
        bt = [[rng.gauss(0.0, 1.0) for _ in range(params["k"])] for _ in range(params["n"])]
        return lambda: [[sum(x * y for x, y in zip(row, col, strict=True)) for col in bt] for row in a]
    n = params["n"]
    a = [rng.gauss(0.0, 1.0) for _ in range(n)]
    b = [rng.gauss(0.0, 1.0) for _ in range(n)]
    exp = m.exp
    loops = {
        "vector_add": lambda: [x + y for x, y in zip(a, b, strict=True)],
        "saxpy": lambda: [2.0 * x + y for x, y in zip(a, b, strict=True)],
        "relu": lambda: [x if x > 0.0 else 0.0 for x in a],
        "sigmoid": lambda: [1.0 / (1.0 + exp(-x)) for x in a],
        "reduce_sum": lambda: _loop_sum(a),
    }
    return loops[name]


def _loop_sum(values: list[float]) -> float:
    total = 0.0
    for value in values:
        total += value
    return total


def cpu_operation(backend, name: str, params: dict, mode: str) -> tuple[kernels.Operation, object]:
    """The operation to time for ``name`` in ``mode``, and a resource to close afterwards."""
    if mode == "sisd":
        return sisd_operation(name, params), None
    dtype = params["dtype"]
    parallel = mode in ("mimd", "mimd+simd")
    if name in ("vector_add", "saxpy", "relu", "sigmoid"):
        n = params["n"]
        arrays = kernels.elementwise_arrays(backend, n, dtype)
        if not parallel:
            return _single_thread(kernels.elementwise_passes(backend.xp, name, arrays)), _blas_one_thread()
        pool = Parallel()
        parts = [
            kernels.elementwise_passes(backend.xp, name, {k: v[s] for k, v in arrays.items()})
            for s in chunks(n)
        ]
        passes = list(zip(*parts, strict=True))  # pass p of every chunk runs together
        return lambda: [pool.run(list(tasks)) for tasks in passes], pool
    if name == "reduce_sum":
        n = params["n"]
        a = backend.random(n, dtype)
        if not parallel:
            return (lambda: a.sum()), _blas_one_thread()
        pool = Parallel()
        pieces = [a[s] for s in chunks(n)]
        return (lambda: pool.run([piece.sum for piece in pieces])), pool
    if name == "matmul":
        m, n, k = params["m"], params["n"], params["k"]
        if mode == "mimd":
            pool = Parallel()
            xp = backend.xp
            a, b, c = (
                backend.random((m, k), dtype),
                backend.random((k, n), dtype),
                xp.empty((m, n), dtype=dtype),
            )
            bands = _row_bands(m)
            return (
                lambda: pool.run([lambda band=band: xp.matmul(a[band], b, out=c[band]) for band in bands])
            ), pool
        limit = _blas_one_thread() if mode == "simd" else None
        return kernels.matmul(backend, m, n, k, dtype), limit
    if name == "conv2d":
        limit = _blas_one_thread() if mode == "simd" else None
        keys = ("batch", "channels", "height", "width", "filters", "kernel", "dtype")
        return kernels.conv2d(backend, *(params[key] for key in keys)), limit
    raise ParsimError(f"{name} is not measured on the CPU (copy and offload need the cupy backend)")


def _row_bands(m: int) -> list[slice]:
    count = max(1, min(cores(), m))
    edges = [round(i * m / count) for i in range(count + 1)]
    return [slice(edges[i], edges[i + 1]) for i in range(count)]


def _single_thread(passes: list) -> kernels.Operation:
    if len(passes) == 1:
        return passes[0]
    return lambda: [step() for step in passes]


class _Limit:
    def __init__(self, limits):
        self._limits = limits

    def close(self) -> None:
        self._limits.restore_original_limits()


def _blas_one_thread() -> _Limit:
    from threadpoolctl import threadpool_limits

    return _Limit(threadpool_limits(limits=1))
