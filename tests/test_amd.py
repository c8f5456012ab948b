"""AMD Instinct (issue 25, item 2): the MI250X and MI300X presets, their Infinity Fabric, the ROCm
libraries a device of that platform gets, the mi300x-node cluster, and the Measure path on ROCm
(the CuPy stand-in configured as CuPy built for HIP)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim.hardware import registry
from parsim.hardware.presets import LINKS, PROCESSORS
from parsim.hardware.presets_cluster import CLUSTER_PRESETS
from parsim.hardware.sources import SOURCES
from parsim.hardware.tomlio import dumps_hardware, loads_hardware
from parsim.methods.predict import predict
from parsim.model.collectives import collective
from parsim.stack import library_of
from parsim.stack.presets import CUDNN, ROCM
from tests import cupy_standin

AMD = ("mi250x", "mi250x-module", "mi300x")


@pytest.mark.parametrize("preset", AMD)
def test_instinct_presets_are_rocm_wavefront_64_and_cited(preset):
    spec = PROCESSORS[preset]
    assert spec.platform == "rocm" and spec.warp_size == 64 and spec.is_gpu
    assert "data sheet" in SOURCES[preset]
    assert library_of(spec) is ROCM  # MIOpen / rocBLAS chosen for it, cuDNN for an NVIDIA GPU
    assert library_of(PROCESSORS["h100-sxm"]) is CUDNN


def test_datasheet_peaks_come_out_of_the_lanes_and_clocks():
    # FP32 vector: CUs x lanes x 2 (FMA) x clock, as the data sheets quote them
    assert PROCESSORS["mi300x"].vector_flops_per_s("float32") == pytest.approx(163.4e12, rel=1e-3)
    assert PROCESSORS["mi300x"].vector_flops_per_s("float64") == pytest.approx(81.7e12, rel=1e-3)
    assert PROCESSORS["mi250x"].vector_flops_per_s("float32") == pytest.approx(47.9e12 / 2, rel=1e-3)
    module = PROCESSORS["mi250x-module"]
    assert module.peak_flops_per_s("float16", matrix=True) == pytest.approx(383e12, rel=1e-3)
    assert module.memory.peak_bandwidth_Bps == pytest.approx(3.2768e12)
    assert PROCESSORS["mi300x"].peak_flops_per_s("float8", matrix=True) == 2614.9e12


def test_infinity_fabric_links_are_gpu_to_gpu_and_named_so():
    fabric = LINKS["infinity-fabric-mi300x"]
    assert fabric.kind == "xgmi" and fabric.is_peer and fabric.family == "Infinity Fabric"
    assert fabric.peak_bandwidth_Bps == 7 * 64e9  # 7 links of 16 lanes x 32 Gb/s per direction
    assert LINKS["xgmi-mi250x"].peak_bandwidth_Bps == 4 * 50e9
    system = registry.system("mi300x", gpus=8)
    assert system.peer_link is fabric and system.host_link.id == "pcie5-x16"
    assert registry.system("mi250x", gpus=2).peer_link.id == "xgmi-mi250x"
    assert registry.system("mi300x").peer_link is None  # one GPU needs no fabric
    assert loads_hardware(dumps_hardware(fabric)) == fabric  # the new kind round-trips through TOML


def test_a_preset_round_trips_through_toml_with_its_platform():
    spec = PROCESSORS["mi300x"]
    assert loads_hardware(dumps_hardware(spec)) == spec


def test_mi300x_node_all_reduce_is_the_ring_over_the_fabric():
    assert CLUSTER_PRESETS["mi300x-node"].device == "mi300x" and "mi300x-node" in SOURCES
    system = registry.cluster_system("mi300x-node")
    nbytes = 8 * 2**30
    # hand-computed: RCCL's Ring/Simple base 17 us + 14 steps x 2.1 us (tuning_model_5), and
    # 2(G-1) = 14 chunks of nbytes / 8 each over the fabric
    expected = 17e-6 + 14 * (2.1e-6 + nbytes / 8 / 316e9)
    assert collective(system, "all_reduce", nbytes).seconds == pytest.approx(expected, rel=1e-12)


def test_mi300x_node_runs_a_data_parallel_step():
    p = predict("data_parallel", {"model": "resnet50", "batch": 256, "gpus": 8}, cluster="mi300x-node")
    assert p.latency_s > 0 and any(e.resource.unit == "Infinity Fabric" for e in p.trace)


@pytest.mark.parametrize("preset", ["mi300x", "mi250x"])
def test_matmul_is_never_faster_than_the_matrix_peak(preset):
    spec = PROCESSORS[preset]
    m = n = k = 8192
    p = predict("matmul", {"m": m, "n": n, "k": k, "dtype": "bfloat16"}, device=preset)
    assert p.latency_s >= 2.0 * m * n * k / spec.peak_flops_per_s("bfloat16", matrix=True)


@pytest.mark.parametrize("preset", ["mi300x", "mi250x"])
def test_gpt2_training_step_is_never_faster_than_the_peak(preset):
    spec = PROCESSORS[preset]
    p = predict("network", {"model": "gpt2", "batch": 8, "train": True}, device=preset)
    assert p.latency_s >= p.flops / spec.peak_flops_per_s("float32", matrix=True)


@pytest.mark.parametrize("preset", ["mi300x", "mi250x"])
def test_llm_decode_streams_every_weight_per_token(preset):
    spec = PROCESSORS[preset]
    p = predict("llm_serve", {"model": "llama-2-7b"}, device=preset)
    weights_B = 6.74e9 * 2  # Llama-2-7B's parameters in float16
    assert p.metrics["time_per_output_token_s"] >= weights_B / spec.memory.peak_bandwidth_Bps
    assert p.metrics["time_to_first_token_s"] > 0


def test_measure_path_detects_rocm_and_matches_the_mi300x(monkeypatch, tmp_path):
    from parsim.measure.present import identify, present_gpu

    cupy_standin.install(monkeypatch, device=cupy_standin.MI300X, hip=True)
    identity = identify()
    assert identity.platform == "rocm" and identity.describe() == "AMD Instinct MI300X, 304 CUs, 191.7 GiB"

    def refuse():
        raise AssertionError("a known GPU was calibrated")

    found = present_gpu(tmp_path, calibrate=refuse)
    assert found.how == "preset" and found.device is PROCESSORS["mi300x"]
    assert found.label == "predicted for mi300x (matched AMD Instinct MI300X)"


def test_an_nvidia_stand_in_is_not_taken_for_rocm(monkeypatch):
    from parsim.measure.present import identify

    cupy_standin.install(monkeypatch, device=cupy_standin.H100_SXM)
    assert identify().platform == "cuda"


def test_calibrating_a_rocm_gpu_gives_a_rocm_spec_with_wavefronts_of_64(monkeypatch):
    from parsim.measure import gpu_calibrate

    cupy_standin.install(monkeypatch, device=cupy_standin.MI300X, hip=True, free_bytes=64 * 2**30)
    properties = {**cupy_standin.MI300X, "platform": "rocm"}
    raw = {
        "launch_s": 20e-6,
        "device_bandwidth_Bps": 4.0e12,
        "gemm_float32_flops_per_s": 100e12,
        "gemm_float64_flops_per_s": 60e12,
        "gemm_float16_flops_per_s": 600e12,
    }
    spec = gpu_calibrate._gpu_spec(properties, raw)
    assert spec.platform == "rocm" and spec.warp_size == 64 and spec.cores == 304
    assert spec.int_per_core_per_cycle is None  # not modelled on AMD
    assert spec.lanes_per_core == 128  # gfx942, as the mi300x preset counts its packed FP32 lanes
    assert spec.vector_flops_per_s("float32") == pytest.approx(163.4e12, rel=1e-3)


def test_a_whole_calibration_on_rocm_records_the_platform(monkeypatch, tmp_path):
    """calibrate_gpu end to end on the stand-in built for ROCm (each operation timed once for real,
    NumPy standing in for the GPU), with copy times of a PCIe Gen5 link: 10 us + bytes / 50 GB/s."""
    import time

    from parsim.measure import backends, gpu_calibrate, lock
    from parsim.measure.timing import Timing

    monkeypatch.setattr(lock, "LOCK_PATH", tmp_path / "measure.lock")
    cupy_standin.install(monkeypatch, device=cupy_standin.MI300X, hip=True)

    def once(self, function, budget_s=0.2):
        start = time.perf_counter()
        function()
        seconds = time.perf_counter() - start
        return Timing(seconds, seconds, seconds, 1)

    monkeypatch.setattr(backends.CupyBackend, "time", once)
    monkeypatch.setattr(gpu_calibrate, "GEMM_EDGE", {True: 64, False: 64})
    monkeypatch.setattr(gpu_calibrate, "STREAM_ITEMS", {True: 2**20, False: 2**20})
    monkeypatch.setattr(gpu_calibrate, "measure_launch_s", lambda cupy, tiny, budget_s: 7e-6)
    sizes = tuple(2**k for k in range(10, 29, 2))

    def copy_s(direction, pinned, size):
        return 10e-6 + size / (50e9 if pinned else 10e9)

    device, link, _raw = gpu_calibrate.calibrate_gpu(quick=True, copy_sizes_B=sizes, copy_timer=copy_s)
    assert device.platform == "rocm" and device.warp_size == 64
    assert (device.cores, device.lanes_per_core) == (304, 128)
    assert device.name == "AMD Instinct MI300X (calibrated)"
    assert link.bandwidth_Bps == pytest.approx(50e9, rel=1e-6)


@settings(max_examples=25, deadline=None)
@given(
    preset=st.sampled_from(AMD),
    m=st.integers(1, 8192),
    n=st.integers(1, 8192),
    k=st.integers(1, 8192),
    dtype=st.sampled_from(["float16", "bfloat16", "float32", "float64"]),
)
def test_no_product_beats_the_instinct_roofline(preset, m, n, k, dtype):
    """Any product: at least its FLOPs at the matrix peak, and its operands at the peak bandwidth."""
    spec = PROCESSORS[preset]
    p = predict("matmul", {"m": m, "n": n, "k": k, "dtype": dtype}, device=preset, method="analytic")
    device_s = p.latency_s - p.breakdown["overhead"]
    size = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}[dtype]
    assert device_s >= 2.0 * m * n * k / spec.peak_flops_per_s(dtype, matrix=True) * (1 - 1e-9)
    assert device_s >= (m * k + k * n + m * n) * size / max(
        [spec.memory.peak_bandwidth_Bps] + [c.bandwidth_Bps for c in spec.memory.caches]
    ) * (1 - 1e-9)
