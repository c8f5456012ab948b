"""CuPy as part of the machine: what one call costs the host, and how CuPy's own kernels load memory.

parsim's GPU path is CuPy, and a CuPy call is more than a CUDA launch. Before the kernel reaches
the GPU, Python and CuPy's Cython check the arguments, look the compiled kernel up in a cache, pick
the launch shape and hand it to the driver; a reduction first asks CUB for its workspace and then
launches two kernels; a matrix product sets up cuBLAS (handle, stream, compute type) and lets its
heuristics pick a kernel; ``cupy.tensordot`` is a Python routine that first moves the summed axes
to the front, reshapes both operands (copying a strided one), allocates the product and only then
calls cuBLAS: more host work than a ``matmul``. That host time comes *before* the launch, so a
timed call (CUDA events around it, as ``cupyx.profiler.benchmark`` does) is that host time plus the
GPU's: small calls cost what CuPy costs, whatever the GPU. The model charges CuPy's own host
seconds per kind of call on top of the device's launch (``dispatch_s``). They are seconds of the
host they were measured on, not cycles: a GPU calibration times whole CuPy calls on its own host,
and subtracts exactly these seconds to keep the device's bare launch and the link's own latency.

CuPy's elementwise kernels (``ElementwiseKernel``, the ufuncs) run a grid-stride loop with one
element per thread per iteration: each thread loads one value per input and waits for it before
the next, so Little's law caps their bandwidth (``model.memory.latency_bound_s``): ``inputs x
itemsize`` bytes in flight per thread. CUB's reductions and cuBLAS load whole tiles per thread and
are not capped.

Fitted once for CuPy (``benchmarks/h100_measured.py`` prints the table): CuPy 14.2 on an H100 SXM
whose host is a 16-vCPU Xeon VM (``parsim/data/measured/h100-sxm-2026-11-25.json``), on the calls
whose kernel the model puts under 1 us (elementwise ops and sums of 1e4 elements, products of
256^3, copies of 4 KB), less the H100's 5 us launch; ``tensordot`` on the one convolution row whose
GPU work is a small share of its calls (its figure there; the host sets that row's pace, as the
32x64x56x56 row, four times the data, takes about as long per tap: 93 against 86 us). The
elementwise call, 9.3 us in all, agrees with the 7.3 us per ``cupy.add`` that ``calibrate_gpu``
measured on that machine's host side alone.
"""

from __future__ import annotations

import attrs

from parsim.base.checks import text
from parsim.base.errors import ParsimError

CALLS = ("elementwise", "reduction", "gemm", "tensordot", "copy")
"""Kinds of CuPy call with their own host cost."""


def _call_table(
    instance: object,
    attribute: attrs.Attribute[tuple[tuple[str, float], ...]],
    value: tuple[tuple[str, float], ...],
) -> None:
    kinds = [kind for kind, _ in value]
    if sorted(kinds) != sorted(CALLS):
        raise ParsimError(f"'{attribute.name}' must give host seconds for {', '.join(CALLS)}: {kinds}")
    for kind, seconds in value:
        if not 0 <= seconds <= 1.0:
            raise ParsimError(f"'{attribute.name}.{kind}' must be in [0, 1] s: {seconds}")


@attrs.frozen(cache_hash=True)
class ArrayLibrarySpec:
    """How an array library (CuPy) issues its calls and writes its own kernels.

    Attributes:
        id: ``cupy``.
        name: what it stands for.
        host_s: ``(kind, seconds)`` for each kind of call (``CALLS``): the library's own host work
            before the call's first launch, on top of the device's launch (``dispatch_s``).
        elements_per_thread: elements one thread of an elementwise kernel loads per loop
            iteration before it waits for them (1 in CuPy's grid-stride loop).
    """

    id: str = attrs.field(validator=text)
    name: str = attrs.field(validator=text)
    host_s: tuple[tuple[str, float], ...] = attrs.field(validator=_call_table)
    elements_per_thread: int = 1

    def call_s(self, kind: str, launch_s: float) -> float:
        """Host seconds of one call of ``kind``, the device's launch of ``launch_s`` included."""
        return dict(self.host_s)[kind] + launch_s

    def thread_loads_B(self, inputs: int, itemsize: int) -> float:
        """Bytes one thread of an elementwise kernel keeps in flight: one load per input per element."""
        return float(self.elements_per_thread * inputs * itemsize)


CUPY = ArrayLibrarySpec(
    id="cupy",
    name="CuPy (ufuncs and ElementwiseKernel, CUB reductions, cuBLAS products, ndarray.set/get copies)",
    # fitted once on the H100 grid's calls with negligible kernels (module docstring): measured less
    # the 5 us launch and the model's sub-microsecond kernel, as the mean over those calls
    host_s=(
        ("elementwise", 4.3e-6),  # vector_add, saxpy, relu, sigmoid of 1e4: 3.4-5.4 us
        ("reduction", 15.2e-6),  # sum of 1e4 and 1e5 (CUB: a workspace query, two launches): 14.2-16.3 us
        ("gemm", 18.7e-6),  # matmul 256^3 in float32, float16, bfloat16: 14.9-21.1 us
        # the conv2d tap-gemm row whose kernels are a small share of its calls (32x256x14x14 -> 256,
        # 3x3, float16: ~5 us of GPU work per tap): (787.3 us - the memset's call 9.3 - the last
        # add 1.4) / 9 taps = 86.3 us per tap, less the three elementwise calls (2 copies, the add:
        # 27.9) and the launch (5): tensordot's routine, its cuBLAS call and the tap's two views
        ("tensordot", 53.4e-6),
        ("copy", 2.7e-6),  # 1e3 float32 pinned, both ways: 2.6-2.7 us
    ),
)
