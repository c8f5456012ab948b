"""The GPU measurement path without a GPU: a recording stand-in for CuPy (``tests/cupy_standin.py``)
checks stream overlap, allocations against the memory check, dtypes, fault handling, the link fit
and the calibrate -> predict round trip."""

from __future__ import annotations

import sys

import numpy
import pytest

import parsim
from parsim.base.dtypes import DTYPES
from parsim.base.errors import ParsimError
from parsim.measure import backends, gpu, lock
from parsim.measure.gpu_calibrate import _gpu_spec, fit_latency_bandwidth, link_spec
from parsim.measure.run import measure
from parsim.stack.array_library import CUPY
from parsim.workloads.registry import make_workload, validate_params
from parsim.workloads.transfers import chunk_sizes
from tests import cupy_standin
from tests.systems import GPU_RAW


@pytest.fixture
def standin(monkeypatch, tmp_path):
    # a lock of its own: a real measurement in another test worker must not add its "waiting" note
    monkeypatch.setattr(lock, "LOCK_PATH", tmp_path / "measure.lock")
    return cupy_standin.install(monkeypatch)


def offload(standin, n=1000, streams=4, op="relu"):
    return gpu.offload_operations(backends.CupyBackend(), op, n, "float32", streams, True, fused=True)


# --- streams -----------------------------------------------------------------------------------


def test_offload_issues_every_chunk_before_the_host_waits(standin):
    parts = offload(standin)
    standin.events.clear()
    parts["end_to_end"]()
    issued = [i for i, (kind, _) in enumerate(standin.events) if kind in ("h2d", "kernel", "d2h")]
    waits = [i for i, (kind, _) in enumerate(standin.events) if kind in ("sync", "block")]
    assert not any(kind == "block" for kind, _ in standin.events)  # get(blocking=False) throughout
    assert max(issued) < min(waits)  # all four chunks in flight before the first wait
    assert {stream for kind, stream in standin.events if kind == "kernel"} == {
        stream for kind, stream in standin.events if kind == "h2d"
    }  # each chunk's kernel runs on its copies' stream
    assert len({stream for kind, stream in standin.events if kind == "sync"}) == 4


def test_single_copies_do_not_block_before_their_sync(standin):
    operation = gpu.copy_operation(backends.CupyBackend(), 100, "float32", "d2h", pinned=True)
    standin.events.clear()
    operation()
    assert [kind for kind, _ in standin.events] == ["d2h", "sync"]


@pytest.mark.parametrize(("n", "streams"), [(3, 4), (10, 4), (1000, 3), (7, 1)])
def test_offload_chunks_as_the_model_does(standin, n, streams):
    parts = offload(standin, n=n, streams=streams)
    standin.events.clear()
    parts["h2d"]()
    copies = [stream for kind, stream in standin.events if kind == "h2d"]
    model = make_workload("offload", validate_params("offload", {"n": n, "streams": streams}))
    assert len(copies) == len(chunk_sizes(n, streams)) == len(model.kernels) == min(n, streams)
    assert [k.work.work_items for k in model.kernels] == chunk_sizes(n, streams)


# --- memory ------------------------------------------------------------------------------------

CASES = [
    ("vector_add", {"n": 10_000}),
    ("saxpy", {"n": 10_000, "fused": False}),
    ("sigmoid", {"n": 10_000, "fused": True}),
    ("relu", {"n": 10_000}),
    ("reduce_sum", {"n": 10_000}),
    ("matmul", {"m": 64, "n": 32, "k": 48}),
    ("conv2d", {"batch": 2, "channels": 3, "height": 16, "width": 16, "filters": 4, "algorithm": "tap-gemm"}),
    ("copy", {"n": 10_000, "pinned": True}),
    ("offload", {"op": "saxpy", "n": 10_000, "streams": 3}),
    ("mlp_train_step", {"batch": 8, "d_in": 32, "hidden": 16, "d_out": 8, "weights": "copied"}),
]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize(("workload", "params"), CASES, ids=[c[0] for c in CASES])
def test_peak_allocation_stays_within_the_memory_check(standin, workload, params, dtype):
    checked = validate_params(workload, {**params, "dtype": dtype})
    measure(workload, {**params, "dtype": dtype}, backend="cupy", budget_s=0.001)
    assert 0 < standin.device_peak <= gpu.device_bytes(workload, checked)
    assert standin.pinned_peak <= gpu.host_bytes(workload, checked)


def test_the_memory_check_counts_the_pool_and_the_host(monkeypatch):
    recorder = cupy_standin.install(monkeypatch, free_bytes=2**20)  # a 1 MiB GPU
    with pytest.raises(
        ParsimError, match=r"vector_add needs .* more than half of the .* free on Stand-in GPU"
    ):
        measure("vector_add", {"n": 200_000}, backend="cupy")
    assert recorder.device_peak == 0  # refused before allocating anything
    monkeypatch.setattr("parsim.measure.run.host_free_memory_B", lambda: 1e6)
    with pytest.raises(ParsimError, match="free on the host"):
        measure("copy", {"n": 100_000, "pinned": True}, backend="cupy")


# --- dtypes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_every_dtype_measures_on_the_gpu(standin, dtype):
    result = measure("vector_add", {"n": 1000, "dtype": dtype}, backend="cupy", budget_s=0.001)
    assert result.median_s > 0 and result.params["dtype"] == dtype


def test_bfloat16_without_ml_dtypes_is_one_line(standin, monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)
    with pytest.raises(
        ParsimError, match=r"^bfloat16 needs the ml_dtypes package: pip install 'parsim\[gpu\]'$"
    ):
        measure("vector_add", {"n": 1000, "dtype": "bfloat16"}, backend="cupy")


def test_bfloat16_on_an_old_cupy_is_one_line(standin, monkeypatch):
    monkeypatch.setattr(sys.modules["cupy"], "__version__", "13.6.0")
    with pytest.raises(ParsimError, match=r"bfloat16 on the GPU needs CuPy >= 14 \(this is 13.6.0\)"):
        measure("matmul", {"m": 8, "n": 8, "k": 8, "dtype": "bfloat16"}, backend="cupy")


# --- faults ------------------------------------------------------------------------------------

FAULTS = {
    "missing cuRAND": ("random", ImportError("libcurand.so.10: cannot open shared object file")),
    "CUDA error": (
        "kernel",
        cupy_standin.CUDARuntimeError("cudaErrorIllegalAddress: an illegal memory access"),
    ),
    "out of memory": ("alloc", cupy_standin.OutOfMemoryError("Out of memory allocating 4,000,000 bytes")),
    "compile error": ("compile", cupy_standin.CompileException('error: identifier "expf" is undefined')),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_fault_is_one_cli_line(standin, cli, fault):
    where, exc = FAULTS[fault]
    standin.faults[where] = exc
    workload = ["sigmoid", "n=1000", "fused=true"] if where == "compile" else ["vector_add", "n=1000"]
    code, out, err = cli("measure", *workload, "--backend", "cupy", "--budget", "0.01")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err
    assert type(exc).__name__ in lines[0]


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_fault_is_a_noted_row_in_a_measured_sweep(standin, fault, monkeypatch):
    monkeypatch.setattr("parsim.measure.backends.available_backends", lambda: ["numpy", "cupy"])
    where, exc = FAULTS[fault]
    standin.faults[where] = exc  # the first point meets the fault; the sweep goes on
    frame = parsim.sweep(
        {"workload": "sigmoid", "device": "a100-80gb", "workload.fused": True},
        grid={"workload.n": [1000, 2000]},
        measure=True,
    )
    notes = frame["measure_note"].fillna("") if "measure_note" in frame else frame["error"].fillna("")
    assert (notes != "").sum() == 1  # the faulty point, and only it, in one line
    assert "\n" not in notes.str.cat() and type(exc).__name__ in notes.str.cat()
    assert frame["measured_s"].notna().sum() == 1


def test_a_driver_only_machine_says_which_library_is_missing(standin):
    standin.faults["random"] = ImportError("libcurand.so.10: cannot open shared object file")
    available, why = backends.gpu_available()
    assert not available
    assert "random numbers (cuRAND)" in why and "cupy-cuda12x[ctk]" in why and "\n" not in why


def test_no_gpu_message_does_not_ask_to_install_cupy(monkeypatch):
    cupy, _ = cupy_standin.make()
    cupy.cuda.is_available = lambda: False
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    with pytest.raises(ParsimError) as caught:
        backends.CupyBackend()
    assert "finds no CUDA GPU" in str(caught.value) and "install CuPy" not in str(caught.value)


def test_gpu_validation_without_a_gpu_says_so(cli, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    files = []
    for name, source in (("cpu", "laptop-4c-avx2"), ("gpu", "t4"), ("link", "pcie3-x16")):
        code, text, _ = cli("hardware", "show", source, "--toml")
        (tmp_path / f"{name}.toml").write_text(text)
        files.append(str(tmp_path / f"{name}.toml"))
    code, _, err = cli("validate", "--device", files[0], "--gpu-device", files[1], "--gpu-link", files[2])
    assert code == 2 and "validating the GPU needs one here" in err


# --- the link fit and who owns the copy's fixed cost -------------------------------------------


def test_link_fit_recovers_the_latency_from_noisy_copies():
    # 1 KiB .. 256 MiB as the thorough calibration copies, 1 % multiplicative noise, 10 us latency:
    # the 1/T weights keep the intercept near 10 us where an unweighted fit wanders (0-21 us)
    sizes = [2.0**k for k in range(10, 29, 2)]
    latencies = []
    for seed in range(200):
        rng = numpy.random.default_rng(seed)
        times = [(10e-6 + size / 12e9) * (1 + 0.01 * rng.standard_normal()) for size in sizes]
        latency, bandwidth = fit_latency_bandwidth(sizes, times)
        latencies.append(latency)
        assert bandwidth == pytest.approx(12e9, rel=0.03)
    assert all(8e-6 < value < 12e-6 for value in latencies)
    unweighted = [
        numpy.polyfit(
            sizes, [(10e-6 + s / 12e9) * (1 + 0.01 * r) for s, r in zip(sizes, rng_values, strict=True)], 1
        )[1]
        for rng_values in (numpy.random.default_rng(seed).standard_normal(len(sizes)) for seed in range(200))
    ]
    assert max(abs(value - 10e-6) for value in unweighted) > 5e-6  # why the weights matter


def test_calibrated_copy_predicts_its_own_measurement_exactly():
    # synthetic calibration: a launch of 6 us, copies T = 18 us + bytes / 12 GB/s both ways
    raw = {
        **GPU_RAW,
        "h2d_pinned_latency_s": 18e-6,
        "d2h_pinned_latency_s": 18e-6,
        "h2d_pinned_bandwidth_Bps": 12e9,
        "d2h_pinned_bandwidth_Bps": 12e9,
        "h2d_pageable_bandwidth_Bps": 6e9,
        "d2h_pageable_bandwidth_Bps": 6e9,
    }
    properties = cupy_standin.make()[0].cuda.runtime.getDeviceProperties(0)
    device, link = _gpu_spec(properties, raw), link_spec(raw)
    # the host's CuPy copy call (the 6 us elementwise call less CuPy's elementwise work, plus its
    # copy work) is charged before the copy: the link keeps the rest of the 18 us
    call = CUPY.call_s("copy", 6e-6 - CUPY.call_s("elementwise", 0.0))
    assert device.dispatch_s == pytest.approx(6e-6 - CUPY.call_s("elementwise", 0.0))
    assert link.latency_s == pytest.approx(18e-6 - call)
    for n in (256, 2**20, 2**26):
        p = parsim.predict("copy", {"n": n, "direction": "h2d"}, device=device, link=link, host="xeon-8480")
        assert p.latency_s == pytest.approx(18e-6 + 4 * n / 12e9, rel=1e-9)
