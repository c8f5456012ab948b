"""The analytic model as the engine's oracle: equal where nothing interferes, and every
difference explained by the effect that causes it."""

import math

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim.hardware.specs import SystemSpec
from parsim.methods import analytic
from parsim.methods.engine import simulate
from parsim.stack.array_library import CUPY
from parsim.workloads import make_workload
from tests.systems import TINY_CPU, TINY_GPU, TINY_LINK, compute_bound_system, evolve_gpu


def both(workload, system, mode, overlap="roofline"):
    engine = simulate(workload, system, mode, overlap).instance_ends_s[0]
    closed = analytic.schedule(workload, system, mode, overlap).instance_ends_s[0]
    return engine, closed


# Sizes that fill whole waves: 2 SMs x 2 tiles x 4 items = 16 items per wave on the tiny GPU,
# 2 cores x 4 items = 8 per wave on the tiny CPU.
@pytest.mark.parametrize("op", ["vector_add", "saxpy", "relu", "sigmoid", "reduce_sum"])
@pytest.mark.parametrize("n", [16, 16 * 1000, 16 * 10**6])
@pytest.mark.parametrize("overlap", ["roofline", "serial"])
def test_elementwise_agrees_on_full_waves(gpu_system, cpu_system, op, n, overlap):
    for system, mode in (
        (gpu_system, "simt"),
        (cpu_system, "mimd+simd"),
        (cpu_system, "simd"),
        (cpu_system, "sisd"),
        (gpu_system, "mimd"),
    ):
        engine, closed = both(make_workload(op, {"n": n}), system, mode, overlap)
        assert engine == pytest.approx(closed, rel=0.01), (system.compute.id, mode)


@pytest.mark.parametrize("streams", [1, 4])
def test_offload_and_copies_agree_with_two_copy_engines(gpu_system, streams):
    for workload in (
        make_workload("offload", {"op": "relu", "n": 16000, "streams": streams}),
        make_workload("copy", {"n": 10**6, "direction": "d2h"}),
        make_workload("copy", {"n": 10**6, "pinned": False}),
    ):
        engine, closed = both(workload, gpu_system, "simt")
        assert engine == pytest.approx(closed, rel=0.01)


def test_matmul_on_whole_tiles_and_waves_agrees(gpu_system):
    # 4x4 outputs in 2x2 tiles: 4 tiles on 2 SMs = 2 full waves.
    engine, closed = both(make_workload("matmul", {"m": 4, "n": 4, "k": 10**6}), gpu_system, "simt")
    assert engine == pytest.approx(closed, rel=0.01)


def test_wave_quantisation_explains_the_gemm_gap():
    system = compute_bound_system(dispatch_s=0.0)
    # 25 tiles on 2 SMs: 12.5 waves run as 13.
    engine, closed = both(make_workload("matmul", {"m": 10, "n": 10, "k": 10**6}), system, "simt")
    assert engine / closed == pytest.approx(13 / 12.5, rel=1e-3)


def test_tile_padding_explains_the_gemm_gap():
    system = compute_bound_system(dispatch_s=0.0)
    # 3x4 outputs in 2x2 tiles: 2x2 = 4 tiles (2 full waves) but a third of the first row of tiles is padding.
    engine, closed = both(make_workload("matmul", {"m": 3, "n": 4, "k": 10**6}), system, "simt")
    issue = CUPY.call_s("gemm", 0.0)  # CuPy's host part of the call (the launch is 0 here)
    assert (engine - issue) / (closed - issue) == pytest.approx((4 * 4) / (3 * 4), rel=1e-3)


def test_tail_wave_with_a_per_core_ceiling_explains_the_memory_gap():
    # One SM alone can pull only a quarter of the bandwidth: the 1-tile tail wave is slower.
    memory = attrs.evolve(TINY_GPU.memory, per_core_bandwidth_Bps=0.25e9)
    system = SystemSpec(host=TINY_CPU, device=evolve_gpu(memory=memory, dispatch_s=0.0), link=TINY_LINK)
    workload = make_workload("relu", {"n": 16 * 100 + 4})  # 100 full waves + one 4-item tile
    engine, closed = both(workload, system, "simt")
    tail_bytes = 4 * 8
    # the tail moves at 0.25 GB/s instead of the 0.5 GB/s two SMs reach
    assert engine - closed == pytest.approx(tail_bytes / 0.25e9 - tail_bytes / 0.5e9, rel=1e-6)


def test_one_copy_engine_backfills_in_the_engine_only():
    # The analytic schedule keeps each resource in issue order; the engine lets a ready copy
    # use an idle engine first (Hyper-Q), so it can only be faster.
    system = SystemSpec(host=TINY_CPU, device=evolve_gpu(copy_engines=1), link=TINY_LINK)
    engine, closed = both(make_workload("offload", {"op": "relu", "n": 4000, "streams": 2}), system, "simt")
    assert engine < closed


@settings(max_examples=80, deadline=None)
@given(
    op=st.sampled_from(["vector_add", "saxpy", "relu", "sigmoid", "reduce_sum"]),
    n=st.integers(1, 10**9),
    mode=st.sampled_from(["sisd", "simd", "mimd", "mimd+simd"]),
    dtype=st.sampled_from(["float16", "float32", "float64"]),
    gpu=st.booleans(),
)
def test_engine_never_beats_the_analytic_roofline(op, n, mode, dtype, gpu):
    system = SystemSpec(host=TINY_CPU, device=TINY_GPU if gpu else None, link=TINY_LINK if gpu else None)
    workload = make_workload(op, {"n": n, "dtype": dtype})
    engine, closed = both(workload, system, "simt" if gpu and mode == "mimd+simd" else mode)
    assert engine >= closed * (1 - 1e-9)
    # and the analytic time itself is never below the plain roofline bound
    spec = system.compute
    kernel = workload.ops[0]
    bound = spec.dispatch_s + max(
        kernel.work.flops / spec.peak_flops_per_s(dtype), kernel.bytes / spec.memory.bandwidth_Bps
    )
    assert closed >= bound * (1 - 1e-9)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 300), n=st.integers(1, 300), k=st.integers(1, 300))
def test_gemm_engine_within_quantisation_of_analytic(m, n, k):
    system = SystemSpec(host=TINY_CPU, device=TINY_GPU, link=TINY_LINK)
    engine, closed = both(make_workload("matmul", {"m": m, "n": n, "k": k}), system, "simt")
    tiles = math.ceil(m / 2) * math.ceil(n / 2)
    padding = tiles * 4 / (m * n)
    waves = math.ceil(tiles / 2) / (tiles / 2)
    assert closed * (1 - 1e-9) <= engine <= closed * padding * waves * (1 + 1e-9) + 2e-6
