"""GPU calibration (CuPy): launch overhead, device bandwidth, GEMM rates and the PCIe link.

The device properties (``cupy.cuda.runtime.getDeviceProperties``) give SM count, clock, memory
and L2 size; microbenchmarks give what the model needs beyond them: the host-side cost of one
launch, the bandwidth of a streaming kernel, GEMM FLOP/s per dtype (the float16 rate becomes
the tensor-core figure), and for pinned and pageable host memory, in both directions, copies of
1 KiB to 256 MiB fitted by ``linkfit`` (a line for pinned memory; for pageable memory, which the
host's memcpy stages, a line with a knee where the buffer stops fitting in the host's caches).

Who owns the fixed cost: a measured copy is wall-clock time, so its intercept holds the host's
call (about one kernel launch, which the model charges as the GPU's ``dispatch_s`` before every
transfer) and the link's own latency; the link keeps only ``intercept - dispatch_s``, so a
prediction of the same copy (dispatch + latency + bytes / bandwidth) returns the measured time.

No figure is kept that the device could not produce (``plausible``): a streaming bandwidth above
the memory's peak (memory clock x bus width), a GEMM above the SMs' peak, a link latency below a
PCIe round trip once the launch is taken out. Such a step is measured again, then calibration
stops with one line saying what could not be measured.
"""

from __future__ import annotations

from collections.abc import Callable

from parsim.hardware.specs import CacheLevel, LinkSpec, MemorySpec, PageableCopy, ProcessorSpec
from parsim.measure import gpu, kernels, plausible
from parsim.measure.backends import CupyBackend, gpu_errors, host_free_memory_B, platform_of
from parsim.measure.linkfit import fit_latency_bandwidth, fit_pageable
from parsim.measure.lock import measurement_lock
from parsim.measure.timing import time_callable
from parsim.stack.array_library import CUPY

__all__ = ["calibrate_gpu", "fit_latency_bandwidth"]

CopyTimer = Callable[[str, bool, int], float]
"""``timer(direction, pinned, nbytes)``: the median seconds of one such copy."""

COPY_SIZES_B = tuple(2**k for k in range(10, 29, 2))  # 1 KiB .. 256 MiB: the knee and DRAM both show
# quick and thorough alike: a 2048^3 product is too short to reach Hopper's tensor rate (measured on
# an H200, 2026-11-28: float16 312 TFLOP/s at 2048^3, 683 at 4096^3, 654 at 8192^3), and the quick
# calibration's rate then priced every large product twice as long as it ran
GEMM_EDGE = {True: 4096, False: 4096}
STREAM_ITEMS = {True: 16 * 2**20, False: 64 * 2**20}
# a reduction keeps enough loads in flight to stream at the memory's bandwidth; its fixed cost (an
# H200's cupy.sum: 110 us for 400 MB, 370 us for 1.6 GB: ~23 us) is taken out by timing two sizes
READ_ITEMS = {True: 64 * 2**20, False: 256 * 2**20}
DIRECTIONS = ("h2d", "d2h")

# FP32 lanes per SM by compute capability (CUDA C Programming Guide, arithmetic instruction throughput)
LANES_BY_CC = {
    (3, 7): 192,
    (5, 2): 128,
    (6, 0): 64,
    (6, 1): 128,
    (7, 0): 64,
    (7, 5): 64,
    (8, 0): 64,
    (8, 6): 128,
    (8, 9): 128,
    (9, 0): 128,
}

# FP32 lanes per CU on ROCm by architecture (gcnArchName), as the AMD Instinct presets count them
# (parsim/hardware/presets_amd.py): CDNA 1-2 64; CDNA 3 issues packed FP32, counted as 128
LANES_BY_GFX = {"gfx908": 64, "gfx90a": 64, "gfx940": 128, "gfx941": 128, "gfx942": 128}


def calibrate_gpu(
    quick: bool = True,
    progress: Callable[[int, int, str], None] | None = None,
    copy_sizes_B: tuple[int, ...] | None = None,
    copy_timer: CopyTimer | None = None,
) -> tuple[ProcessorSpec, LinkSpec, dict]:
    """Measure the current CUDA device and its host link (holding the machine's measurement lock).

    ``copy_sizes_B`` and ``copy_timer`` replace the copies' sizes and their timing (tests feed
    recorded times).
    """
    with measurement_lock(), gpu_errors("calibrating the GPU"):
        return _calibrate_gpu(quick, progress, copy_sizes_B, copy_timer)


def _calibrate_gpu(quick, progress, copy_sizes_B, copy_timer) -> tuple[ProcessorSpec, LinkSpec, dict]:
    backend = CupyBackend()
    cupy = backend.xp
    properties = {
        **cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id),
        "platform": platform_of(cupy),  # CUDA's properties do not say; HIP's runtime does
    }
    raw: dict = {}
    budget = 0.2 if quick else 0.6
    steps = ["launch overhead", "device bandwidth", "GEMM FLOP/s", "PCIe copies"]

    def report(index):
        if progress is not None:
            progress(index, len(steps), steps[index] if index < len(steps) else "done")

    def require(key: str, outcome: float | str, what: str) -> None:
        if isinstance(outcome, str):
            raise plausible.unmeasurable(what, outcome)
        raw[key] = outcome

    report(0)
    tiny = kernels.elementwise_arrays(backend, 1, "float32")
    launch = lambda: measure_launch_s(cupy, tiny, budget)  # noqa: E731 - measured again on a retry
    require("launch_s", plausible.measured(launch), "the launch overhead")

    report(1)
    # The memory's bandwidth from a read-only reduction, which keeps enough loads in flight; its
    # latency under load from CuPy's one-element-per-thread add, which does not: each thread issues
    # its loads and waits, so with every SM full of threads the add takes n x latency / threads
    # (Little's law, model.memory.latency_bound_s). Taking the add's rate as the bandwidth (as
    # before) priced reductions 1.9x too long and one-load kernels 23 % too short on an H200.
    peak = plausible.gpu_memory_peak_Bps(properties) or plausible.GPU_MEMORY_CEILING_BPS
    reads = max(4, min(READ_ITEMS[quick], int(backend.free_memory_B() // 16)))
    column = cupy.ones(reads, dtype="float32")
    part = column[: reads // 4]

    def streamed() -> float | str:  # the bytes a quarter of the column adds, over the time it adds
        whole = backend.time(lambda: cupy.sum(column), budget).median_s
        quarter = backend.time(lambda: cupy.sum(part), budget).median_s
        return plausible.rate(4.0 * (reads - reads // 4), whole - quarter, peak, "B/s")

    require("device_bandwidth_Bps", plausible.measured(streamed), "the device memory bandwidth")
    n = STREAM_ITEMS[quick]
    arrays = kernels.elementwise_arrays(backend, n, "float32")
    add = lambda: cupy.add(arrays["a"], arrays["b"], out=arrays["out"])  # noqa: E731
    threads = int(properties["multiProcessorCount"]) * int(properties["maxThreadsPerMultiProcessor"])
    # less the call's fixed cost (the tiny add timed first): at 16 M elements it is an eighth of the
    # time on an H200, and the model charges it apart
    outcome = plausible.measured(
        lambda: _positive((backend.time(add, budget).median_s - raw["launch_s"]) * threads / n)
    )
    require("loaded_latency_s", outcome, "the memory's latency under load")

    report(2)
    edge = GEMM_EDGE[quick]
    vector_peak = _vector_peak(properties)
    tensor_peak = plausible.TENSOR_OVER_VECTOR * vector_peak
    # float32 may run as TF32 on the tensor cores (CUPY_TF32=1); float64 never outruns the FP32 lanes
    ceilings = {"float32": tensor_peak, "float64": vector_peak, "float16": tensor_peak}
    for dtype, ceiling in ceilings.items():
        operation = kernels.matmul(backend, edge, edge, edge, dtype)
        outcome = plausible.measured(
            lambda operation=operation, ceiling=ceiling: plausible.rate(
                2.0 * edge**3, backend.time(operation, budget).median_s, ceiling, "FLOP/s"
            )
        )
        require(f"gemm_{dtype}_flops_per_s", outcome, f"the {dtype} GEMM rate")

    report(3)
    largest = min(backend.free_memory_B(), host_free_memory_B()) / 4
    sizes = copy_sizes_B or tuple(size for size in COPY_SIZES_B if size <= largest)
    timer = copy_timer or _copy_timer(backend, budget / 4)
    tries = []

    def copies() -> dict | str:
        if tries:  # a retry measures the launch again too: the latency is the difference of both
            require("launch_s", plausible.measured(launch), "the launch overhead")
        tries.append(None)
        return fit_copies(sizes, timer, raw["launch_s"])

    link_raw = plausible.measured(copies)
    if isinstance(link_raw, str):
        raise plausible.unmeasurable("the host link", link_raw)
    raw.update(link_raw)
    report(len(steps))
    return _gpu_spec(properties, raw), link_spec(raw), raw


def measure_launch_s(cupy, tiny: dict, budget_s: float) -> float | str:
    """The host's cost of one CuPy elementwise call on one element (median of CPU times)."""
    from cupyx.profiler import benchmark

    result = benchmark(
        lambda: cupy.add(tiny["a"], tiny["b"], out=tiny["out"]),
        n_repeat=2000,
        n_warmup=20,
        max_duration=budget_s,
    )
    seconds = float(sorted(result.cpu_times)[len(result.cpu_times) // 2])
    return seconds if seconds > 0 else f"a launch of {seconds:g} s"


def _copy_timer(backend, budget_s: float) -> CopyTimer:
    def timer(direction: str, pinned: bool, nbytes: int) -> float:
        operation = gpu.copy_operation(backend, nbytes // 4, "float32", direction, pinned)
        return time_callable(operation, sync=backend.sync, budget_s=budget_s).median_s

    return timer


def fit_copies(sizes: tuple[int, ...], timer: CopyTimer, launch_s: float) -> dict | str:
    """Pinned and pageable copies both ways, fitted; or why the fit is not what a link can do."""
    times = {
        (d, pinned): [timer(d, pinned, size) for size in sizes]
        for d in DIRECTIONS
        for pinned in (True, False)
    }
    raw: dict = {}
    for d in DIRECTIONS:
        intercept, bandwidth = fit_latency_bandwidth(list(sizes), times[d, True])
        if not 0 < bandwidth <= plausible.LINK_CEILING_BPS:
            return f"pinned {d} copies fit {bandwidth:.3g} B/s (above {plausible.LINK_CEILING_BPS:.3g})"
        raw[f"{d}_pinned_latency_s"], raw[f"{d}_pinned_bandwidth_Bps"] = intercept, bandwidth
    pinned_Bps = (raw["h2d_pinned_bandwidth_Bps"] + raw["d2h_pinned_bandwidth_Bps"]) / 2
    for d in DIRECTIONS:
        fit = fit_pageable(list(sizes), times[d, False], pinned_Bps)
        raw[f"{d}_pageable_latency_s"], raw[f"{d}_pageable_bandwidth_Bps"] = fit.intercept_s, fit.Bps
        raw[f"{d}_pageable_cached_bandwidth_Bps"], raw[f"{d}_pageable_cached_B"] = (
            fit.cached_Bps,
            fit.cached_B,
        )
    intercepts = {
        "pinned copies": (raw["h2d_pinned_latency_s"] + raw["d2h_pinned_latency_s"]) / 2,
        **{f"pageable {d} copies": raw[f"{d}_pageable_latency_s"] for d in DIRECTIONS},
    }
    call = CUPY.call_s("copy", launch_s - CUPY.call_s("elementwise", 0.0))  # what the model charges
    for what, intercept in intercepts.items():
        if intercept - call < plausible.GPU_LINK_LATENCY_FLOOR_S:
            return (
                f"the fixed cost of {what} ({intercept * 1e6:.3g} us) is not one CuPy copy call "
                f"({call * 1e6:.3g} us) plus a PCIe round trip "
                f"({plausible.GPU_LINK_LATENCY_FLOOR_S * 1e6:.2g} us)"
            )
    return raw


def dispatch_s(raw: dict) -> float:
    """The device's launch, as the model charges it: the measured CuPy elementwise call less CuPy's
    own host work for such a call (``stack.array_library.CUPY``), which the model adds back to every
    raw call, so a calibrated prediction of a tiny ``cupy.add`` returns the measured call."""
    launch = raw["launch_s"] - CUPY.call_s("elementwise", 0.0)
    if launch < plausible.GPU_LAUNCH_FLOOR_S:
        raise plausible.unmeasurable(
            "the launch overhead",
            f"a CuPy call of {raw['launch_s'] * 1e6:.3g} us leaves {launch * 1e6:.3g} us for the launch "
            f"after CuPy's own {CUPY.call_s('elementwise', 0.0) * 1e6:.2g} us (at least "
            f"{plausible.GPU_LAUNCH_FLOOR_S * 1e6:.2g} us)",
        )
    return launch


def _positive(seconds: float | str) -> float | str:
    if isinstance(seconds, str) or seconds > 0:
        return seconds
    return f"a time of {seconds:.3g} s"


def _vector_peak(properties: dict) -> float:
    """FP32 FLOP/s of the CUDA cores at the maximum SM clock: SMs x lanes x 2 (FMA) x clock."""
    return (
        int(properties["multiProcessorCount"])
        * _lanes(properties)
        * 2.0
        * float(properties["clockRate"])
        * 1e3
    )


def _lanes(properties: dict) -> int:
    if properties.get("platform") == "rocm":
        arch = properties.get("gcnArchName", b"")
        arch = arch.decode() if isinstance(arch, bytes) else str(arch)
        return LANES_BY_GFX.get(arch.split(":")[0], 64)
    return LANES_BY_CC.get((int(properties["major"]), int(properties["minor"])), 128)


def _gpu_spec(properties: dict, raw: dict) -> ProcessorSpec:
    name = properties["name"].decode() if isinstance(properties["name"], bytes) else str(properties["name"])
    sms, clock = int(properties["multiProcessorCount"]), float(properties["clockRate"]) * 1e3
    lanes = _lanes(properties)
    rocm = properties.get("platform") == "rocm"
    vector_peak = _vector_peak(properties)
    fp32 = raw["gemm_float32_flops_per_s"]
    efficiency = min(0.95, fp32 / vector_peak)
    bandwidth = raw["device_bandwidth_Bps"]
    memory = MemorySpec(
        bandwidth_Bps=bandwidth,
        peak_bandwidth_Bps=bandwidth,
        latency_s=500e-9,
        loaded_latency_s=raw.get("loaded_latency_s"),
        capacity_B=float(properties["totalGlobalMem"]),
        per_core_bandwidth_Bps=3 * bandwidth / sms,
        caches=(CacheLevel("L2", float(properties["l2CacheSize"]) or 4 * 2**20, 3 * bandwidth),),
    )
    return ProcessorSpec(
        id="this-machine-gpu",
        name=f"{name} (calibrated)",
        kind="gpu",
        cores=sms,
        lanes_per_core=lanes,
        clock_Hz=clock,
        memory=memory,
        fp64_ratio=min(1.0, raw["gemm_float64_flops_per_s"] / fp32),
        matrix_flops_per_s={"float16": raw["gemm_float16_flops_per_s"] / efficiency},
        matmul_efficiency=efficiency,
        special_per_core_per_cycle=16,
        # [PG]: 64 integer results per SM per clock from compute capability 7.0 (the presets' rule);
        # older NVIDIA chips and AMD's are not modelled (None: their integer work is not priced)
        int_per_core_per_cycle=64 if not rocm and int(properties.get("major", 0)) >= 7 else None,
        dispatch_s=dispatch_s(raw),
        # 32 on NVIDIA; a wavefront of 64 on AMD Instinct (HIP reports it as warpSize)
        warp_size=int(properties.get("warpSize", 64 if rocm else 32)),
        tile_items=256,
        tiles_per_core=max(1, int(properties["maxThreadsPerMultiProcessor"]) // 256),
        copy_engines=max(1, int(properties.get("asyncEngineCount", 2))),
        default_link=None,
        platform="rocm" if rocm else "cuda",
    )


def link_spec(raw: dict) -> LinkSpec:
    pinned = (raw["h2d_pinned_bandwidth_Bps"] + raw["d2h_pinned_bandwidth_Bps"]) / 2
    pageable = min(pinned, (raw["h2d_pageable_bandwidth_Bps"] + raw["d2h_pageable_bandwidth_Bps"]) / 2)
    intercept = (raw["h2d_pinned_latency_s"] + raw["d2h_pinned_latency_s"]) / 2
    # the host's CuPy copy call (its own work and the launch) is charged by the model before every
    # transfer (module docstring): the link keeps the rest
    call = CUPY.call_s("copy", dispatch_s(raw))
    latency = intercept - call
    if latency < 0:  # calibrate_gpu refuses this before; a hand-made table may not
        raise plausible.unmeasurable(
            "the host link's latency",
            f"the copies' fixed cost ({intercept * 1e6:.3g} us) is below one CuPy copy call "
            f"({call * 1e6:.3g} us)",
        )
    tables = {
        f"pageable_{d}": PageableCopy(
            latency_s=raw[f"{d}_pageable_latency_s"] - call,
            bandwidth_Bps=raw[f"{d}_pageable_bandwidth_Bps"],
            cached_bandwidth_Bps=raw[f"{d}_pageable_cached_bandwidth_Bps"],
            cached_B=raw[f"{d}_pageable_cached_B"],
        )
        for d in DIRECTIONS
        if f"{d}_pageable_cached_B" in raw  # measured per direction (older tables have one figure)
    }
    return LinkSpec(
        id="this-machine-link",
        name="host link (calibrated)",
        bandwidth_Bps=pinned,
        peak_bandwidth_Bps=pinned,
        pageable_bandwidth_Bps=pageable,
        latency_s=latency,
        **tables,
    )
