"""GPU calibration (CuPy): launch overhead, device bandwidth, GEMM rates and the PCIe link.

The device properties (``cupy.cuda.runtime.getDeviceProperties``) give SM count, clock, memory
and L2 size; microbenchmarks give what the model needs beyond them: the host-side cost of one
launch, the bandwidth of a streaming kernel, GEMM FLOP/s per dtype (the float16 rate becomes
the tensor-core figure), and for pinned and pageable host memory, in both directions, a fit of
``T = latency + bytes / bandwidth`` over copies of 1 KiB to 256 MiB.

The fit weighs each copy by 1/T (least squares on relative errors): timing noise is proportional
to the time, and an unweighted fit would let the 256 MiB copies' noise decide the microseconds of
the intercept. Who owns the fixed cost: a measured copy is wall-clock time, so its intercept holds
the host's call (about one kernel launch, which the model charges as the GPU's ``dispatch_s`` before
every transfer) and the link's own latency; the link keeps only ``intercept - dispatch_s``, so a
prediction of the same copy (dispatch + latency + bytes / bandwidth) returns the measured time.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy

from parsim.hardware.specs import CacheLevel, LinkSpec, MemorySpec, ProcessorSpec
from parsim.measure import gpu, kernels
from parsim.measure.backends import CupyBackend, gpu_errors
from parsim.measure.lock import measurement_lock
from parsim.measure.timing import time_callable

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


def fit_latency_bandwidth(sizes_B: list[float], seconds: list[float]) -> tuple[float, float]:
    """``T = latency + bytes / bandwidth`` by least squares on relative errors (weights 1/T);
    returns (latency_s, bandwidth_Bps)."""
    times = numpy.asarray(seconds, float)
    slope, intercept = numpy.polyfit(numpy.asarray(sizes_B, float), times, 1, w=1.0 / times)
    return max(float(intercept), 0.0), 1.0 / max(float(slope), 1e-15)


def calibrate_gpu(
    quick: bool = True, progress: Callable[[int, int, str], None] | None = None
) -> tuple[ProcessorSpec, LinkSpec, dict]:
    """Measure the current CUDA device and its host link (holding the machine's measurement lock)."""
    with measurement_lock(), gpu_errors("calibrating the GPU"):
        return _calibrate_gpu(quick, progress)


def _calibrate_gpu(
    quick: bool = True, progress: Callable[[int, int, str], None] | None = None
) -> tuple[ProcessorSpec, LinkSpec, dict]:
    backend = CupyBackend()
    cupy = backend.xp
    properties = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    raw: dict = {}
    budget = 0.2 if quick else 0.6
    steps = ["launch overhead", "device bandwidth", "GEMM FLOP/s", "PCIe copies"]

    def report(index):
        if progress is not None:
            progress(index, len(steps), steps[index] if index < len(steps) else "done")

    report(0)
    tiny = kernels.elementwise_arrays(backend, 1, "float32")
    from cupyx.profiler import benchmark

    result = benchmark(
        lambda: cupy.add(tiny["a"], tiny["b"], out=tiny["out"]),
        n_repeat=2000,
        n_warmup=20,
        max_duration=budget,
    )
    raw["launch_s"] = float(numpy.median(result.cpu_times))

    report(1)
    n = (16 if quick else 64) * 2**20
    arrays = kernels.elementwise_arrays(backend, n, "float32")
    seconds = backend.time(lambda: cupy.add(arrays["a"], arrays["b"], out=arrays["out"]), budget).median_s
    raw["device_bandwidth_Bps"] = 12.0 * n / seconds

    report(2)
    edge = 2048 if quick else 4096
    for dtype in ("float32", "float16", "float64"):
        operation = kernels.matmul(backend, edge, edge, edge, dtype)
        raw[f"gemm_{dtype}_flops_per_s"] = 2.0 * edge**3 / backend.time(operation, budget).median_s

    report(3)
    sizes = [2**k for k in range(10, 27 if quick else 29, 2)]
    for direction in ("h2d", "d2h"):
        for pinned in (True, False):
            times = []
            for size in sizes:
                operation = gpu.copy_operation(backend, size // 4, "float32", direction, pinned)
                times.append(time_callable(operation, sync=backend.sync, budget_s=budget / 4).median_s)
            latency, bandwidth = fit_latency_bandwidth(sizes, times)
            key = f"{direction}_{'pinned' if pinned else 'pageable'}"
            raw[f"{key}_latency_s"], raw[f"{key}_bandwidth_Bps"] = latency, bandwidth
    report(len(steps))
    return _gpu_spec(properties, raw), _link_spec(raw), raw


def _gpu_spec(properties: dict, raw: dict) -> ProcessorSpec:
    name = properties["name"].decode() if isinstance(properties["name"], bytes) else str(properties["name"])
    capability = (int(properties["major"]), int(properties["minor"]))
    sms, clock = int(properties["multiProcessorCount"]), float(properties["clockRate"]) * 1e3
    lanes = LANES_BY_CC.get(capability, 128)
    vector_peak = sms * lanes * 2.0 * clock
    fp32 = raw["gemm_float32_flops_per_s"]
    efficiency = min(0.95, fp32 / vector_peak)
    bandwidth = raw["device_bandwidth_Bps"]
    memory = MemorySpec(
        bandwidth_Bps=bandwidth,
        peak_bandwidth_Bps=bandwidth,
        latency_s=500e-9,
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
        dispatch_s=raw["launch_s"],
        warp_size=32,
        tile_items=256,
        tiles_per_core=max(1, int(properties["maxThreadsPerMultiProcessor"]) // 256),
        copy_engines=max(1, int(properties["asyncEngineCount"])),
        default_link=None,
    )


def _link_spec(raw: dict) -> LinkSpec:
    pinned = (raw["h2d_pinned_bandwidth_Bps"] + raw["d2h_pinned_bandwidth_Bps"]) / 2
    pageable = min(pinned, (raw["h2d_pageable_bandwidth_Bps"] + raw["d2h_pageable_bandwidth_Bps"]) / 2)
    intercept = (raw["h2d_pinned_latency_s"] + raw["d2h_pinned_latency_s"]) / 2
    # the host's call is the GPU's dispatch_s, charged by the model before every transfer (docstring)
    latency = max(intercept - raw["launch_s"], 1e-9)
    return LinkSpec(
        id="this-machine-link",
        name="host link (calibrated)",
        bandwidth_Bps=pinned,
        peak_bandwidth_Bps=pinned,
        pageable_bandwidth_Bps=pageable,
        latency_s=latency,
    )
