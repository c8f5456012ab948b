"""What the kernel library chose, in words: each convolution's algorithm and each GEMM's tiling.

A prediction is only trusted when it says *how* the work ran. cuDNN picks an algorithm per
convolution (``cudnnFind``) and cuBLAS a tile and a split of the reduction per GEMM; the model
makes the same choices (``parsim.model.library``). This module asks the model for them, once per
kernel shape, and phrases them for ``--json`` (per layer) and the notes. It decides nothing itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from parsim.base.caching import cached
from parsim.base.units import si
from parsim.hardware.specs import SystemSpec
from parsim.model import systolic
from parsim.model.kernel import choose, shape
from parsim.model.library import gemm_tiling, stream_k
from parsim.model.placement import kernel_processor
from parsim.model.rates import execution
from parsim.workloads.base import HOST, Kernel, Workload
from parsim.workloads.conv import DIRECT_LOOP

LISTED = 3


@cached(maxsize=256)
def _convolutions(
    workload: Workload, system: SystemSpec, mode: str, overlap: str
) -> tuple[tuple[Kernel, str, float], ...]:
    """Each convolution kernel of ``workload`` in order, its library's algorithm and the FLOPs that
    algorithm saves against the direct count; every GPU of a step repeats the same few shapes, so
    each shape is asked once (and the three readers below share one pass)."""
    per_shape: dict[tuple[object, ...], tuple[str, float]] = {}
    convolutions = []
    for kernel in workload.kernels:
        if kernel.library.conv is not None:
            spec, kernel_mode = kernel_processor(system, kernel, mode)
            # the kernel's records by identity (the workload holds them: the ids name them) stand
            # for its shape, which a step of thousands of GPUs would otherwise hash per kernel
            records = (id(kernel.work), id(kernel.access), id(kernel.library), id(kernel.issue))
            key = (spec, kernel_mode, records)
            known = per_shape.get(key)
            if known is None:
                # the engine's own (cached) choice
                chosen, runs = choose(spec, kernel_mode, overlap, shape(kernel))
                known = per_shape[key] = (chosen, kernel.work.flops - runs.work.flops)
            convolutions.append((kernel, *known))
    return tuple(convolutions)


def executed_flops(workload: Workload, system: SystemSpec, mode: str, overlap: str) -> float | None:
    """The FLOPs the library's chosen algorithms execute, when fewer than the workload's count:
    Winograd (and FFT) do fewer multiplications than the direct convolution every framework
    counts. None when nothing is saved (the effective and the executed FLOPs agree)."""
    saved = 0.0
    for _, _, fewer in _convolutions(workload, system, mode, overlap):
        saved += fewer
    return workload.flops - saved if saved > 1e-9 * workload.flops else None


def effective_note(flops: float, executed: float | None, latency_s: float, peak_flops_per_s: float) -> str:
    """One sentence on effective against executed FLOPs, when an algorithm saved multiplications."""
    if executed is None or latency_s <= 0:
        return ""
    ratio = flops / executed
    above = flops / latency_s > peak_flops_per_s
    above_text = " (above the peak: an effective count, not work done)" if above else ""
    return (
        f"effective vs executed FLOPs: 'achieved' counts every convolution as the direct one, "
        f"{si(flops, 'FLOP')}: {si(flops / latency_s, 'FLOP/s')}{above_text}; the chosen algorithms "
        f"(Winograd, FFT) execute {ratio:.2f}x fewer "
        f"multiplications, {si(executed, 'FLOP')}: {si(executed / latency_s, 'FLOP/s')} executed, "
        f"against a peak of {si(peak_flops_per_s, 'FLOP/s')}"
    )


def layer_algorithms(
    workload: Workload, system: SystemSpec, mode: str, overlap: str
) -> dict[str, dict[str, str]]:
    """``{layer: {pass: algorithm}}`` for the convolutions of GPU 0 (or the host)."""
    chosen: dict[str, dict[str, str]] = {}
    for op, name, _ in _convolutions(workload, system, mode, overlap):
        if op.device in (0, HOST):
            assert op.library.conv is not None  # a convolution
            chosen.setdefault(op.layer, {})[op.library.conv.pass_] = name
    return chosen


def notes(workload: Workload, system: SystemSpec, mode: str, overlap: str) -> tuple[str, ...]:
    """One line on the convolution algorithms, and one per GEMM tiling of a small program."""
    kernels = [k for k in workload.kernels if k.device in (0, HOST)]
    ours = [
        (k, name) for k, name, _ in _convolutions(workload, system, mode, overlap) if k.device in (0, HOST)
    ]
    convs = [k for k, _ in ours]
    lines = []
    chosen = [name for _, name in ours]
    if convs and set(chosen) == {DIRECT_LOOP}:  # SISD: no library chose anything
        first = convs[0].library.conv
        taps = first.gemm_dims()[2] if len(convs) == 1 and first is not None else None
        what = f"{convs[0].name}: " if taps else f"{len(convs)} convolutions, each "
        each = f", {taps} multiply-adds per output" if taps else ""
        lines.append(
            f"{what}the direct convolution as one scalar loop{each}, one at a time "
            "(SISD: no library runs it, so there is no GEMM, Winograd or FFT)"
        )
    elif len(convs) == 1:
        lines.append(f"{convs[0].name}: {chosen[0]} (the library's fastest)")
    elif convs:
        counts = Counter(chosen)
        parts = ", ".join(f"{name} for {count}" for name, count in counts.most_common())
        lines.append(
            f"convolution algorithms (fastest per shape, as cudnnFind): {parts} of {len(convs)} kernels"
        )
    asked = dict(workload.params).get("math") == "tf32"  # not PyTorch's default, which is silent on Volta
    tf32 = [k for k in kernels if k.library.math == "tf32" and k.work.dtype == "float32" and k.device != HOST]
    if asked and tf32 and system.compute.is_gpu and "tf32" not in dict(system.compute.matrix_flops_per_s):
        lines.append(
            f"{system.compute.id} has no TF32 tensor cores (before Ampere): its float32 products run "
            "in IEEE float32 on the CUDA cores"
        )
    gemms = [k for k in kernels if k.library.gemm_mn is not None and k.library.conv is None]
    if 0 < len(gemms) <= LISTED and system.compute.is_accelerator and gemms[0].device != HOST:
        for kernel in gemms:
            spec, kernel_mode = kernel_processor(system, kernel, mode)
            pad = systolic.padding(spec, kernel)
            if pad is not None:  # a systolic array: the padding is what matters, not a tile choice
                lines.append(f"{kernel.name}: {pad.sentence()}")
                continue
            anonymous = shape(kernel)  # the engine's tiling of this shape, already cached
            ex = execution(spec, kernel_mode, anonymous)
            tiling = gemm_tiling(spec, ex, anonymous)
            split = f", reduction split {tiling.split} ways (split-K)" if tiling.split > 1 else ""
            shared = ""
            if stream_k(spec, ex, anonymous) and tiling.tiles % spec.cores:
                shared = f"; {tiling.tiles / spec.cores:.2f} waves, the last shared among the SMs (stream-K)"
            lines.append(
                f"{kernel.name}: {tiling.outputs} output tiles of {tiling.rows}x{tiling.columns}{split} "
                f"(the library's tile choice){shared}"
            )
    return tuple(lines)


def describe(chosen: Mapping[str, str]) -> str:
    """A layer's algorithms in a few words: ``"winograd"`` when every pass agrees, else
    ``"fwd implicit-gemm, wgrad winograd"``."""
    names = set(chosen.values())
    if len(names) == 1:
        return names.pop()
    return ", ".join(f"{step} {name}" for step, name in chosen.items())
