"""Measuring for real: the timer, every NumPy path, safety checks, files, and the CuPy path up to
the point where a GPU is needed."""

import json
import sys
import time
import types

import numpy
import pytest

from parsim.base.errors import ParsimError
from parsim.measure import Measurement, cpu, measure
from parsim.measure import backends as backends_module
from parsim.measure.gpu_calibrate import _gpu_spec, fit_latency_bandwidth, link_spec
from parsim.measure.lock import measurement_lock
from parsim.measure.timing import Timing, time_callable
from parsim.workloads import make_workload
from tests.systems import GPU_RAW


def test_timing_quartiles():
    timing = Timing.from_samples([4.0, 1.0, 3.0, 2.0, 5.0])
    assert (timing.median_s, timing.p25_s, timing.p75_s, timing.repeats) == (3.0, 2.0, 4.0, 5)


def test_timer_repeats_syncs_and_batches_fast_calls():
    calls, syncs = [], []
    timing = time_callable(
        lambda: calls.append(1), sync=lambda: syncs.append(1), budget_s=0.01, min_repeats=5
    )
    assert timing.repeats >= 5 and timing.inner > 1  # a no-op is far shorter than a clock sample
    assert len(calls) >= 2 + 1 + timing.repeats * timing.inner
    assert len(syncs) >= 2 * timing.repeats
    assert 0 < timing.median_s < 1e-2  # seconds, not milliseconds (a no-op; no speed is asserted)


def test_timer_measures_a_known_sleep():
    timing = time_callable(lambda: time.sleep(0.002), budget_s=0.02, min_repeats=3, warmup=1)
    # never shorter than the sleep; the upper bound only catches a unit slip (a loaded machine may
    # oversleep: speed is asserted in benchmarks, not here)
    assert 0.0019 < timing.median_s < 2.0 and timing.inner == 1


def test_random_data_is_signed_normal_and_never_zero():
    data = backends_module.NumpyBackend().random(100_000, "float32")
    assert data.dtype == numpy.float32 and numpy.count_nonzero(data) == data.size
    assert 0.48 < (data > 0).mean() < 0.52  # ReLU sees both signs, as on real activations
    assert abs(data.mean()) < 0.02 and 0.98 < data.std() < 1.02


BIG = cpu.CHUNK_ITEMS * 2 + 1  # enough items to be split over every core


def plausible(result, flops: float = 0.0, nbytes: float = 0.0) -> float:
    """The median, once it is a real timing: ordered quartiles, enough repeats, and rates that no CPU
    exceeds (100 TFLOP/s, 2 TB/s): a measurement that timed nothing would break these."""
    assert result.p25_s <= result.median_s <= result.p75_s and result.repeats >= 5
    assert flops / result.median_s < 1e14 and nbytes / result.median_s < 2e12
    return result.median_s


@pytest.mark.parametrize("mode", ["simd", "mimd", "mimd+simd"])
@pytest.mark.parametrize("op", ["vector_add", "saxpy", "relu", "sigmoid", "reduce_sum"])
def test_numpy_vector_paths(op, mode):
    times = {}
    for n in (1000, BIG):
        result = measure(op, {"n": n}, mode=mode, budget_s=0.005)
        work = make_workload(op, result.params)
        times[n] = plausible(result, work.flops, work.bytes)
        assert result.backend == "numpy" and result.mode == mode
    assert times[BIG] > 10 * times[1000]  # 524 times the elements: the work really scales
    if op in ("saxpy", "sigmoid"):
        assert result.params["fused"] is False  # NumPy runs one pass per operation


@pytest.mark.parametrize("op", ["vector_add", "saxpy", "relu", "sigmoid", "reduce_sum"])
def test_numpy_sisd_loops(op):
    result = measure(op, {"n": 2000}, mode="sisd", budget_s=0.005)
    assert 2000 * 5e-9 < result.median_s < 2000 * 5e-6  # tens of ns per element, not less


@pytest.mark.parametrize("mode", ["sisd", "simd", "mimd", "mimd+simd"])
def test_numpy_matmul(mode):
    edge = 12 if mode == "sisd" else 96
    result = measure("matmul", {"m": edge, "n": edge, "k": edge}, mode=mode, budget_s=0.005)
    seconds = plausible(result, 2.0 * edge**3)
    if mode == "sisd":  # the interpreter: tens of ns to microseconds per multiply-add
        assert edge**3 * 10e-9 < seconds < edge**3 * 10e-6
    else:  # BLAS: faster per multiply-add than the interpreter measured beside it (both under the
        # same load, so no wall-clock bound is needed)
        loop = measure("matmul", {"m": 12, "n": 12, "k": 12}, mode="sisd", budget_s=0.005)
        assert seconds / edge**3 < plausible(loop, 2.0 * 12**3) / 12**3


def test_numpy_conv2d_and_dtypes():
    params = {"channels": 4, "height": 16, "width": 16, "filters": 8, "algorithm": "tap-gemm"}
    plausible(measure("conv2d", params, mode="simd", budget_s=0.005), make_workload("conv2d", params).flops)
    wide = measure("vector_add", {"n": BIG, "dtype": "float64"}, mode="simd", budget_s=0.005)
    narrow = measure("vector_add", {"n": BIG, "dtype": "float32"}, mode="simd", budget_s=0.005)
    assert wide.params["dtype"] == "float64" and plausible(wide, nbytes=3 * 8 * BIG) > plausible(narrow) / 2


@pytest.mark.parametrize("mode", ["simd", "mimd+simd"])
def test_numpy_mlp_train_step(mode):
    params = {"batch": 16, "d_in": 64, "hidden": 32, "d_out": 64}
    result = measure("mlp_train_step", params, mode=mode, budget_s=0.005)
    plausible(result, make_workload("mlp_train_step", params).flops)
    assert "backward" in result.implementation


def test_mlp_train_step_learns():
    from parsim.measure import kernels

    step = kernels.mlp_train_step(
        backends_module.NumpyBackend(),
        {"batch": 8, "d_in": 16, "hidden": 8, "d_out": 4, "dtype": "float64", "weights": "resident"},
    )
    losses = [step() for _ in range(50)]
    assert losses[-1] < losses[0]  # the SGD update really updates the weights


def test_the_implementations_compute_the_right_thing():
    from parsim.measure import kernels

    backend = backends_module.NumpyBackend()
    arrays = kernels.elementwise_arrays(backend, 1000, "float64")
    for step in kernels.elementwise_passes(numpy, "sigmoid", arrays):
        step()
    assert numpy.allclose(arrays["out"], 1 / (1 + numpy.exp(-arrays["a"])))
    parts = cpu.sisd_operation("saxpy", {"n": 10})()
    assert len(parts) == 10


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (("copy", {"n": 10}), "needs the cupy backend"),
        (("offload", {"n": 10}), "needs the cupy backend"),
        (("network", {"model": "resnet18"}), "predicted but not measured"),
        (("mlp_train_step", {}, "numpy", "sisd"), "simd or mimd+simd"),
        (("vector_add", {"n": 1e7}, "numpy", "sisd"), "Python loop"),
        (("vector_add", {"n": 10}, "numpy", "simt"), "'mode' on the numpy backend"),
        (("vector_add", {"n": 10}, "tpu"), "'backend' must be numpy or cupy"),
        (("vector_add", {"n": 10, "dtype": "bfloat16"}), "NumPy has no bfloat16"),
        (("vector_add", {"n": -1}), "'n'"),
        (("conv2d", {}, "numpy", "sisd"), "sisd (a Python loop) is implemented for"),
    ],
)
def test_bad_measurements(call, expected):
    with pytest.raises(ParsimError, match=None) as info:
        measure(*call, budget_s=0.005)
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_refuses_more_than_half_of_free_memory(monkeypatch):
    monkeypatch.setattr(backends_module, "host_free_memory_B", lambda: 1e6)
    with pytest.raises(ParsimError, match=r"needs .* GiB, more than half of the .* free"):
        measure("vector_add", {"n": 1e6}, mode="simd")


def test_lock_serialises_measurements(tmp_path):
    path = tmp_path / "lock"
    with (
        measurement_lock(path=path),
        pytest.raises(ParsimError, match="another measurement"),
        measurement_lock(timeout_s=0.1, path=path),
    ):
        pass
    with measurement_lock(timeout_s=0.1, path=path):  # free again
        pass


def test_measurement_file_round_trip(tmp_path):
    result = measure("vector_add", {"n": 1000}, mode="simd", budget_s=0.005)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(result.to_dict()))
    assert Measurement.from_dict(json.loads(path.read_text())) == result
    with pytest.raises(ParsimError, match="not a parsim measurement"):
        Measurement.from_dict({"schema": "other"})


# --- the CuPy path, as far as it goes without a GPU -------------------------------------------


def test_missing_cupy_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy -> ImportError
    with pytest.raises(
        ParsimError, match=r"CuPy is not installed; install CuPy .*pip install 'parsim\[gpu\]'"
    ):
        backends_module.backend("cupy")
    available, why = backends_module.gpu_available()
    assert not available and "pip install" in why
    assert backends_module.available_backends() == ["numpy"]


def test_cupy_without_a_device(monkeypatch):
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: False))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    with pytest.raises(ParsimError, match="finds no CUDA GPU"):
        backends_module.CupyBackend()
    with pytest.raises(ParsimError, match="no CUDA GPU"):
        measure("vector_add", {"n": 10}, backend="cupy")


@pytest.mark.slow
def test_cupy_is_imported_lazily():
    import subprocess

    code = (
        "import parsim, parsim.measure, parsim.studies.validate, parsim.cli.main, sys; "
        "print('cupy' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False"


def test_link_fit_recovers_latency_and_bandwidth():
    sizes = [2**k for k in range(10, 28, 2)]
    latency, bandwidth = fit_latency_bandwidth(sizes, [8e-6 + s / 12e9 for s in sizes])
    assert latency == pytest.approx(8e-6, rel=1e-6) and bandwidth == pytest.approx(12e9, rel=1e-6)


def test_gpu_spec_from_device_properties_and_timings():
    properties = {
        "name": b"Tesla V100-PCIE-16GB",
        "major": 7,
        "minor": 0,
        "multiProcessorCount": 80,
        "clockRate": 1380000,
        "totalGlobalMem": 16 * 2**30,
        "l2CacheSize": 6 * 2**20,
        "maxThreadsPerMultiProcessor": 2048,
        "asyncEngineCount": 2,
    }
    spec = _gpu_spec(properties, GPU_RAW)
    assert (spec.cores, spec.lanes_per_core, spec.tiles_per_core, spec.copy_engines) == (80, 64, 8, 2)
    assert spec.int_per_core_per_cycle == 64  # cc 7.0: the presets' integer rate, so transposes are priced
    assert _gpu_spec({**properties, "major": 6}, GPU_RAW).int_per_core_per_cycle is None
    assert spec.peak_flops_per_s("float32") * spec.matmul_efficiency == pytest.approx(12e12)
    assert spec.peak_flops_per_s("float16", matrix=True) * spec.matmul_efficiency == pytest.approx(90e12)
    link = link_spec(
        {
            "h2d_pinned_bandwidth_Bps": 12e9,
            "d2h_pinned_bandwidth_Bps": 13e9,
            "h2d_pageable_bandwidth_Bps": 6e9,
            "d2h_pageable_bandwidth_Bps": 7e9,
            "h2d_pinned_latency_s": 8e-6,
            "d2h_pinned_latency_s": 10e-6,
            "launch_s": 6e-6,
        }
    )
    # the fitted intercept (9 us) less the host's CuPy copy call the model charges before a copy: the
    # launch (the 6 us elementwise call less CuPy's 4.3 us of its own) and CuPy's 2.7 us for a copy
    assert (link.bandwidth_Bps, link.pageable_bandwidth_Bps) == (12.5e9, 6.5e9)
    assert link.latency_s == pytest.approx(9e-6 - (6e-6 - 4.3e-6 + 2.7e-6))


# --- on a machine with an NVIDIA GPU ----------------------------------------------------------


@pytest.mark.gpu
def test_gpu_kernels_copies_and_offload():
    assert measure("vector_add", {"n": 1e6}, backend="cupy", budget_s=0.05).median_s > 0
    assert measure("sigmoid", {"n": 1e6, "fused": True}, backend="cupy", budget_s=0.05).median_s > 0
    assert (
        measure(
            "matmul", {"m": 512, "n": 512, "k": 512, "dtype": "float16"}, backend="cupy", budget_s=0.05
        ).median_s
        > 0
    )
    pinned = measure("copy", {"n": 1e7, "pinned": True}, backend="cupy", budget_s=0.05)
    pageable = measure("copy", {"n": 1e7, "pinned": False, "direction": "d2h"}, backend="cupy", budget_s=0.05)
    assert pinned.median_s > 0 and pageable.median_s > 0
    offload = measure("offload", {"op": "relu", "n": 1e7, "streams": 4}, backend="cupy", budget_s=0.1)
    assert set(offload.stages) == {"h2d", "kernel", "d2h"}
    resident = measure("mlp_train_step", {"weights": "resident"}, backend="cupy", budget_s=0.1)
    copied = measure("mlp_train_step", {"weights": "copied"}, backend="cupy", budget_s=0.1)
    assert copied.median_s > resident.median_s


@pytest.mark.gpu
def test_gpu_calibration_is_plausible():
    from parsim.measure.gpu_calibrate import calibrate_gpu

    device, link, _ = calibrate_gpu(quick=True)
    assert 50e9 < device.memory.bandwidth_Bps < 10e12
    assert 1e9 < link.bandwidth_Bps < 200e9 and 0 <= link.latency_s < 1e-3


@pytest.mark.gpu
def test_gpu_streams_overlap():
    # 4 pinned streams hide copies behind kernels: at least 10 % faster than one stream
    one = measure("offload", {"op": "relu", "n": 1e7, "streams": 1}, backend="cupy", budget_s=0.3)
    four = measure("offload", {"op": "relu", "n": 1e7, "streams": 4}, backend="cupy", budget_s=0.3)
    assert four.median_s < 0.9 * one.median_s


@pytest.mark.gpu
def test_gpu_calibration_latency_and_validation():
    from parsim.measure.calibrate import calibrate
    from parsim.measure.gpu_calibrate import calibrate_gpu
    from parsim.studies.validate import validate

    device, link, raw = calibrate_gpu(quick=True)
    assert 2e-6 <= raw["h2d_pinned_latency_s"] <= 50e-6  # a copy's fixed cost, host call included
    assert 0 < link.latency_s <= 50e-6  # what remains once the device's dispatch takes the call
    cpu_spec, _ = calibrate(quick=True)
    report = validate(cpu_spec, {"device": device, "host": cpu_spec, "link": link}, backends=["cupy"])
    assert report["overall"]["mape_large"] <= 0.15
