"""CuPy as part of the machine: what one call costs the host, and how CuPy's own kernels load memory.

parsim's GPU path is CuPy, and a CuPy call is more than a CUDA launch. Before the kernel reaches
the GPU, Python and CuPy's Cython check the arguments, look the compiled kernel up in a cache, pick
the launch shape and hand it to the driver; a reduction first asks CUB for its workspace and then
launches two kernels; a matrix product sets up cuBLAS (handle, stream, compute type) and lets its
heuristics pick a kernel. That host time comes *before* the launch, so a timed call (CUDA events
around it, as ``cupyx.profiler.benchmark`` does) is that host time plus the GPU's: small calls cost
what CuPy costs, whatever the GPU. The cost is a number of host cycles per kind of call, so a
faster host issues faster (as a framework's ``op_cycles``), plus the device's own launch.

CuPy's elementwise kernels (``ElementwiseKernel``, the ufuncs) run a grid-stride loop with one
element per thread per iteration: each thread loads one value per input and waits for it before
the next, so Little's law caps their bandwidth (``model.memory.latency_bound_s``): ``inputs x
itemsize`` bytes in flight per thread. CUB's reductions and cuBLAS load whole tiles per thread and
are not capped.

Fitted once for CuPy (``benchmarks/h100_measured.py`` prints the table): CuPy 14.2 on an H100 SXM
host (16-vCPU Xeon VM, ``parsim/data/measured/h100-sxm-2026-11-25.json``), its calls under 100 us,
with the H100's 5 us launch and the default 2.6 GHz host. The elementwise figure agrees with the
7.3 us per launch that ``calibrate_gpu`` measured through CuPy on that machine.
"""

from __future__ import annotations

import attrs

from parsim.checks import text
from parsim.errors import ParsimError

CALLS = ("elementwise", "reduction", "gemm", "copy")
"""Kinds of CuPy call with their own host cost."""


def _call_table(instance: object, attribute: attrs.Attribute, value: tuple[tuple[str, float], ...]) -> None:
    kinds = [kind for kind, _ in value]
    if sorted(kinds) != sorted(CALLS):
        raise ParsimError(f"'{attribute.name}' must give host cycles for {', '.join(CALLS)}: {kinds}")
    for kind, cycles in value:
        if not 0 <= cycles <= 1e9:
            raise ParsimError(f"'{attribute.name}.{kind}' must be in [0, 1e+09] cycles: {cycles}")


@attrs.frozen(cache_hash=True)
class ArrayLibrarySpec:
    """How an array library (CuPy) issues its calls and writes its own kernels.

    Attributes:
        id: ``cupy``.
        name: what it stands for.
        call_cycles: ``(kind, host cycles)`` for each kind of call (``CALLS``): the host's work
            before the call's first launch, on top of the device's launch (``dispatch_s``).
        elements_per_thread: elements one thread of an elementwise kernel loads per loop
            iteration before it waits for them (1 in CuPy's grid-stride loop).
    """

    id: str = attrs.field(validator=text)
    name: str = attrs.field(validator=text)
    call_cycles: tuple[tuple[str, float], ...] = attrs.field(validator=_call_table)
    elements_per_thread: int = 1

    def call_s(self, kind: str, host_clock_Hz: float, launch_s: float) -> float:
        """Host seconds of one call of ``kind`` on a host clocked at ``host_clock_Hz``, a device
        launch of ``launch_s`` included."""
        return dict(self.call_cycles)[kind] / host_clock_Hz + launch_s

    def thread_loads_B(self, inputs: int, itemsize: int) -> float:
        """Bytes one thread of an elementwise kernel keeps in flight: one load per input per element."""
        return float(self.elements_per_thread * inputs * itemsize)


CUPY = ArrayLibrarySpec(
    id="cupy",
    name="CuPy (ufuncs and ElementwiseKernel, CUB reductions, cuBLAS products, ndarray.set/get copies)",
    # fitted once against the H100 grid's calls under 100 us (module docstring): with the default
    # 2.6 GHz host and the H100's 5 us launch, a call costs 9.3 us (elementwise), 19.6 us (a CUB
    # sum: workspace query, two launches), 18.9 us (a cuBLAS GEMM) and 7.5 us (a copy on a stream)
    call_cycles=(
        ("elementwise", 11_200.0),
        ("reduction", 38_000.0),
        ("gemm", 36_100.0),
        ("copy", 6_500.0),
    ),
)
