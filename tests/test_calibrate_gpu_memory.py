"""GPU calibration's memory rule against the H200 that parsim measured (2026-11-28).

The bandwidth comes from a read-only reduction timed at two sizes (it keeps enough loads in flight;
the difference takes out its fixed cost); the latency under load from CuPy's one-element-per-thread
add less its call (each thread waits on its loads: n x latency / threads, ``latency_bound_s``). Fed
the recorded reductions of 1e8 and 4e8 floats and the add of 1e8, the calibrated spec must predict
the other recorded streams (one-load kernels, the 4e8 runs) and the reductions' fixed cost.
Before, the add's own rate was taken as the bandwidth: reductions 1.9x too long,
one-load kernels 23 % too short (the H200's quick calibrated validation: 27 % MAPE).
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

import parsim
from parsim.measure import gpu_calibrate

# nvidia-smi and CUDA's device properties of the measured H200 (benchmarks/gpu_session.sh's gpu.txt)
H200_PROPERTIES = {
    "name": "NVIDIA H200",
    "multiProcessorCount": 132,
    "clockRate": 1980000,
    "maxThreadsPerMultiProcessor": 2048,
    "totalGlobalMem": 143771 * 2**20,
    "l2CacheSize": 50 * 2**20,
    "major": 9,
    "minor": 0,
    "warpSize": 32,
    "asyncEngineCount": 3,
}
# what calibrate_gpu(quick=True) measured on it besides the memory (benchmarks/gpu_calibrated.py)
RAW = {
    "launch_s": 11.39e-6,
    "gemm_float32_flops_per_s": 47.6e12,
    "gemm_float64_flops_per_s": 51.5e12,
    "gemm_float16_flops_per_s": 683e12,
}


def recorded() -> dict[tuple[str, float], float]:
    text = (resources.files("parsim") / "data" / "measured" / "h200-2026-11-28.json").read_text()
    return {
        (r["workload"], float(r["params"]["n"])): r["measured_s"]
        for r in json.loads(text)["rows"]
        if "n" in r["params"]
    }


def spec_from(times: dict[tuple[str, float], float]):
    n = 1e8
    threads = 132 * 2048
    raw = {
        **RAW,
        "device_bandwidth_Bps": 4 * (4 * n - n) / (times["reduce_sum", 4 * n] - times["reduce_sum", n]),
        "loaded_latency_s": (times["vector_add", n] - RAW["launch_s"]) * threads / n,
    }
    return gpu_calibrate._gpu_spec(H200_PROPERTIES, raw), raw


def test_the_add_gives_the_latency_and_the_reduction_the_bandwidth():
    times = recorded()
    spec, raw = spec_from(times)
    # (490 - 11.4 us) x 270,336 threads / 1e8: GH100's 1.3 us under load (the presets' figure)
    assert raw["loaded_latency_s"] == pytest.approx(1.295e-6, rel=0.02)
    # 1.2 GB more read in 260 us more: 4.6 TB/s of the H200's 4.8 (its fixed ~23 us taken out)
    assert raw["device_bandwidth_Bps"] == pytest.approx(4.62e12, rel=0.02)
    assert spec.memory.loaded_latency_s == raw["loaded_latency_s"]


@pytest.mark.parametrize(
    ("workload", "n"),
    [
        ("relu", 1e8),
        ("sigmoid", 1e8),
        ("saxpy", 1e8),
        ("relu", 4e8),
        ("vector_add", 4e8),
        ("reduce_sum", 4e8),
    ],
)
def test_the_calibrated_spec_predicts_the_other_recorded_streams(workload, n):
    times = recorded()
    spec, _ = spec_from(times)
    predicted = parsim.predict(workload, {"n": int(n)}, device=spec, link="pcie5-x16").latency_s
    assert predicted == pytest.approx(times[workload, n], rel=0.10)


def test_the_old_rule_misses_them():
    """The add's rate as the bandwidth, no latency: the relu 23 % short, the reduction 50 % long."""
    times = recorded()
    n = 1e8
    raw = {**RAW, "device_bandwidth_Bps": 12 * n / times["vector_add", n]}
    spec = gpu_calibrate._gpu_spec(H200_PROPERTIES, raw)
    relu = parsim.predict("relu", {"n": int(n)}, device=spec, link="pcie5-x16").latency_s
    total = parsim.predict("reduce_sum", {"n": int(4e8)}, device=spec, link="pcie5-x16").latency_s
    assert relu < 0.8 * times["relu", n]
    assert total > 1.4 * times["reduce_sum", 4e8]
