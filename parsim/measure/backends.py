"""Where measurements run: NumPy on the CPU (always) and CuPy on an NVIDIA GPU (when present).

Both backends offer the same small interface, so every workload is written once against the
array module ``xp`` (NumPy or CuPy) and timed the same way. CuPy is imported lazily, only
when a GPU measurement is asked for, so parsim installs and runs on machines without CUDA; a
missing CuPy or GPU is reported in one sentence that says what to install.
"""

from __future__ import annotations

import contextlib
import os
import platform
from collections.abc import Callable, Iterator

from parsim.base.errors import ParsimError
from parsim.measure.timing import Timing, time_callable

CUPY_HINT = (
    "install CuPy for your CUDA version (pip install 'parsim[gpu]', i.e. cupy-cuda12x) "
    "on a machine with an NVIDIA GPU"
)


REALISTIC = "standard normal"
"""The values every measurement and calibration times: standard normal, as activations, weights and
gradients roughly are. Both signs matter: ReLU's ``maximum`` and any branchy loop see a sign change
half the time (all-positive data would let a branch predictor flatter them), and zeros would let
some hardware skip work. A float32 standard normal is never exactly zero nor subnormal in practice.
"""


class NumpyBackend:
    """The CPU through NumPy (and its BLAS)."""

    name = "numpy"

    def __init__(self):
        import numpy

        self.xp = numpy

    @property
    def device_name(self) -> str:
        return f"{cpu_model()} ({os.cpu_count()} logical CPUs)"

    def sync(self) -> None:
        """Nothing to wait for: NumPy returns when the work is done."""

    def time(self, function: Callable[[], object], budget_s: float = 0.2) -> Timing:
        return time_callable(function, budget_s=budget_s)

    def free_memory_B(self) -> float:
        return host_free_memory_B()

    def random(self, shape, dtype):
        """Data as real inputs have it (``REALISTIC``): standard normal, both signs, never zero;
        drawn as float32 unless the array is float64 (no float64 temporary)."""
        rng = self.xp.random.default_rng(12345)
        drawn = "float64" if str(dtype) == "float64" else "float32"
        values = rng.standard_normal(shape, dtype=drawn)
        return values if str(dtype) == drawn else values.astype(dtype)


class CupyBackend:
    """An NVIDIA GPU through CuPy; constructing it checks that both are there."""

    name = "cupy"

    def __init__(self):
        self.xp = import_cupy()
        if not self.xp.cuda.is_available():
            raise ParsimError(
                "CuPy is installed but finds no CUDA GPU (nor, built for ROCm, an AMD one: no driver or no "
                "device visible to this process): GPU measurements need a machine with one"
            )

    @property
    def device_name(self) -> str:
        properties = self.xp.cuda.runtime.getDeviceProperties(self.xp.cuda.Device().id)
        name = properties["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def sync(self) -> None:
        self.xp.cuda.Device().synchronize()

    def time(self, function: Callable[[], object], budget_s: float = 0.2) -> Timing:
        """GPU time of ``function`` from CUDA events, via ``cupyx.profiler.benchmark``."""
        from cupyx.profiler import benchmark

        result = benchmark(function, n_repeat=10_000, n_warmup=3, max_duration=budget_s)
        return Timing.from_samples([float(t) for t in result.gpu_times[0]])

    def free_memory_B(self) -> float:
        """Free device memory, counting what CuPy's memory pool holds cached but unused."""
        free, _total = self.xp.cuda.runtime.memGetInfo()
        return float(free) + float(self.xp.get_default_memory_pool().free_bytes())

    def random(self, shape, dtype):
        """Data as real inputs have it (``REALISTIC``): standard normal, both signs, never zero;
        drawn as float32 unless the array is float64 (no float64 temporary)."""
        drawn = "float64" if str(dtype) == "float64" else "float32"
        values = self.xp.random.standard_normal(shape, dtype=drawn)
        return values if str(dtype) == drawn else values.astype(dtype)

    def dtype(self, name: str):
        """The element type ``name`` as CuPy takes it (bfloat16 comes from ml_dtypes)."""
        return array_dtype(self.xp, name)


def platform_of(cupy) -> str:
    """``rocm`` where CuPy runs on AMD's HIP (``cupy.cuda.runtime.is_hip``), else ``cuda``: CuPy on ROCm
    keeps the ``cupy.cuda`` names, so everything else measures the same way on both."""
    return "rocm" if getattr(cupy.cuda.runtime, "is_hip", False) else "cuda"


def import_cupy():
    """Import CuPy, or raise a ParsimError that says what to install."""
    try:
        import cupy
    except ImportError:
        raise ParsimError(f"CuPy is not installed; {CUPY_HINT}") from None
    return cupy


CTK_HINT = (
    "install the CUDA libraries CuPy loads: pip install 'parsim[gpu]' (cupy-cuda12x[ctk]) or a CUDA toolkit"
)


def array_dtype(xp, name: str):
    """The element type ``name`` as the array module ``xp`` takes it: bfloat16 needs ml_dtypes and,
    on the GPU, CuPy >= 14; other names pass through.

    Raises:
        ParsimError: bfloat16 where it cannot work, in one line.
    """
    if name != "bfloat16":
        return name
    try:
        import ml_dtypes
    except ImportError:
        raise ParsimError("bfloat16 needs the ml_dtypes package: pip install 'parsim[gpu]'") from None
    version = str(getattr(xp, "__version__", "0"))
    if xp.__name__ == "cupy" and int(version.split(".")[0]) < 14:
        raise ParsimError(
            f"bfloat16 on the GPU needs CuPy >= 14 (this is {version}): pip install 'parsim[gpu]'"
        )
    return ml_dtypes.bfloat16


def smoke_test(backend: CupyBackend) -> None:
    """Run what measurements need once: random numbers (cuRAND), an elementwise kernel (NVRTC) and
    a matrix product (cuBLAS); a missing library is named in one line.

    Raises:
        ParsimError: a step failed; the message says which library to install.
    """
    xp = backend.xp
    steps = (
        ("random numbers (cuRAND)", lambda: backend.random(16, "float32")),
        (
            "an elementwise kernel (NVRTC)",
            lambda: xp.ElementwiseKernel("T x", "T z", "z = x", "parsim_smoke")(xp.zeros(4, dtype="float32")),
        ),
        (
            "a matrix product (cuBLAS)",
            lambda: xp.ones((8, 8), dtype="float32") @ xp.ones((8, 8), dtype="float32"),
        ),
    )
    for what, step in steps:
        try:
            step()
            backend.sync()
        except ParsimError:
            raise
        except Exception as exc:  # a missing shared library surfaces as ImportError, OSError or a CUDA error
            raise ParsimError(
                f"CuPy finds the GPU but cannot run {what}: {one_line(exc)}; {CTK_HINT}"
            ) from None


def one_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _gpu_error(exc: BaseException) -> bool:
    """Errors the GPU path raises that a user should read as one line (not a bug in parsim)."""
    module = type(exc).__module__ or ""
    return isinstance(exc, (ImportError, OSError, MemoryError)) or module.startswith(
        ("cupy", "cupyx", "cupy_backends", "cuda")
    )


@contextlib.contextmanager
def gpu_errors(what: str) -> Iterator[None]:
    """Turn CUDA runtime and driver errors, out-of-memory, kernel compile errors and missing libraries
    raised inside the block into one-line ``ParsimError`` s naming ``what`` was being done."""
    try:
        yield
    except ParsimError:
        raise
    except Exception as exc:
        if not _gpu_error(exc):
            raise
        if "OutOfMemory" in type(exc).__name__ or isinstance(exc, MemoryError):
            raise ParsimError(
                f"{what}: out of memory on the GPU ({one_line(exc)}); choose a smaller size"
            ) from None
        hint = f"; {CTK_HINT}" if isinstance(exc, (ImportError, OSError)) else ""
        raise ParsimError(f"{what} failed on the GPU: {one_line(exc)}{hint}") from None


def gpu_available() -> tuple[bool, str]:
    """Whether the CuPy backend can run here (its libraries included), and a sentence saying why not."""
    try:
        smoke_test(CupyBackend())
    except ParsimError as exc:
        return False, str(exc)
    except Exception as exc:  # a broken CUDA install raises many kinds of errors
        return False, f"CuPy could not reach a GPU ({one_line(exc)}); {CUPY_HINT}"
    return True, "CuPy and a CUDA GPU are available"


def backend(name: str):
    """The backend called ``name`` (``numpy`` or ``cupy``)."""
    if name == "numpy":
        return NumpyBackend()
    if name == "cupy":
        return CupyBackend()
    raise ParsimError(f"'backend' must be numpy or cupy: {name!r}")


def available_backends() -> list[str]:
    """Backends that can run on this machine."""
    return ["numpy", "cupy"] if gpu_available()[0] else ["numpy"]


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_free_memory_B() -> float:
    """Memory available to new allocations on the host (without swapping)."""
    import psutil

    return float(psutil.virtual_memory().available)
