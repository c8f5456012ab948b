"""Where measurements run: NumPy on the CPU (always) and CuPy on an NVIDIA GPU (when present).

Both backends offer the same small interface, so every workload is written once against the
array module ``xp`` (NumPy or CuPy) and timed the same way. CuPy is imported lazily, only
when a GPU measurement is asked for, so parsim installs and runs on machines without CUDA; a
missing CuPy or GPU is reported in one sentence that says what to install.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable

from parsim.errors import ParsimError
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

    def random(self, shape, dtype: str):
        """Data as real inputs have it (``REALISTIC``): standard normal, both signs, never zero."""
        rng = self.xp.random.default_rng(12345)
        return rng.standard_normal(shape, dtype="float64").astype(dtype)


class CupyBackend:
    """An NVIDIA GPU through CuPy; constructing it checks that both are there."""

    name = "cupy"

    def __init__(self):
        self.xp = import_cupy()
        if not self.xp.cuda.is_available():
            raise ParsimError(f"CuPy is installed but no CUDA GPU is available; {CUPY_HINT}")

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
        free, _total = self.xp.cuda.runtime.memGetInfo()
        return float(free)

    def random(self, shape, dtype: str):
        """Data as real inputs have it (``REALISTIC``): standard normal, both signs, never zero."""
        return self.xp.random.standard_normal(shape, dtype="float64").astype(dtype)


def import_cupy():
    """Import CuPy, or raise a ParsimError that says what to install."""
    try:
        import cupy
    except ImportError:
        raise ParsimError(f"CuPy is not installed; {CUPY_HINT}") from None
    return cupy


def gpu_available() -> tuple[bool, str]:
    """Whether the CuPy backend can run here, and a sentence saying why not."""
    try:
        CupyBackend()
    except ParsimError as exc:
        return False, str(exc)
    except Exception as exc:  # a broken CUDA install raises many kinds of errors
        return False, f"CuPy could not reach a GPU ({type(exc).__name__}: {exc}); {CUPY_HINT}"
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
