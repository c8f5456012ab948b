"""Exact timelines of the SimPy engine on the tiny systems of conftest, worked out by hand."""

import attrs
import pytest

from parsim.hardware.specs import SystemSpec
from parsim.methods.engine import simulate
from parsim.stack.array_library import CUPY
from parsim.workloads import make_workload
from tests.systems import TINY_CPU, TINY_LINK, compute_bound_system, evolve_gpu


def rows(result, detail=False):
    return [
        (
            e.resource.label,
            e.label,
            e.kind,
            pytest.approx(e.start_s, abs=1e-15),
            pytest.approx(e.end_s, abs=1e-15),
        )
        for e in result.trace
        if e.detail == detail
    ]


# A CuPy call: CuPy's own host seconds (stack.array_library.CUPY) + the tiny GPU's 1 us launch.
COPY_CALL_S = 2.7e-6 + 1e-6  # 3.7 us
ELEMENTWISE_CALL_S = 4.3e-6 + 1e-6  # 5.3 us


def test_cupy_call_costs_are_the_ones_worked_out_here():
    assert CUPY.call_s("copy", 1e-6) == pytest.approx(COPY_CALL_S)
    assert CUPY.call_s("elementwise", 1e-6) == pytest.approx(ELEMENTWISE_CALL_S)


def test_offload_one_stream_timeline(gpu_system):
    # h2d: issued at 3.7 us (a CuPy copy call), 1 us latency + 4000 B / 1 GB/s -> 8.7 us.
    # relu: issued at 9 us (an elementwise call); 250 tiles in waves of 4: 62 full waves
    # (7936 B) take 1 us latency + 7.936 us, the 2-tile tail wave 64 B at 1 GB/s: 18 us.
    # d2h: issued at 12.7 us, starts when relu ends: 1 us + 4 us -> 23 us.
    result = simulate(make_workload("offload", {"op": "relu", "n": 1000}), gpu_system, "simt")
    assert rows(result) == [
        ("host", "issue h2d", "overhead", 0.0, 3.7e-6),
        ("PCIe h2d", "h2d", "transfer", 3.7e-6, 8.7e-6),
        ("host", "issue relu", "overhead", 3.7e-6, 9e-6),
        ("SM 0-1", "relu waves 1-62", "memory", 9e-6, 17.936e-6),
        ("SM 0-1", "relu tail wave", "memory", 17.936e-6, 18e-6),
        ("host", "issue d2h", "overhead", 9e-6, 12.7e-6),
        ("PCIe d2h", "d2h", "transfer", 18e-6, 23e-6),
    ]
    assert result.instance_ends_s == (pytest.approx(23e-6),)


def test_cpu_runs_synchronously(cpu_system):
    # dispatch 1 us, then 2 tiles on 2 cores in one wave: 1 us latency + 96 B at 1 GB/s.
    result = simulate(make_workload("vector_add", {"n": 8}), cpu_system, "mimd+simd")
    assert rows(result) == [
        ("host", "issue vector_add", "overhead", 0.0, 1e-6),
        ("core 0-1", "vector_add wave 1", "memory", 1e-6, 2.096e-6),
    ]


def test_cpu_sisd_pays_the_interpreter(cpu_system):
    # 100 elements x 1 Python op x 50 ns = 5 us, longer than 1 us + 1200 B / 1 GB/s.
    result = simulate(make_workload("vector_add", {"n": 100}), cpu_system, "sisd")
    assert result.instance_ends_s == (pytest.approx(6e-6),)
    assert {e.kind for e in result.trace if e.resource.label.startswith("core")} == {"compute"}


def test_serial_overlap_adds_compute_and_memory(cpu_system):
    roofline = simulate(make_workload("vector_add", {"n": 100}), cpu_system, "sisd", overlap="roofline")
    serial = simulate(make_workload("vector_add", {"n": 100}), cpu_system, "sisd", overlap="serial")
    assert serial.instance_ends_s[0] == pytest.approx(roofline.instance_ends_s[0] + 2.2e-6)


def test_streams_overlap_copies_with_kernels(gpu_system):
    # copies and kernels of 10-30 us per chunk, longer than the host's 3.7-5.3 us per call
    one = simulate(make_workload("offload", {"op": "relu", "n": 40000, "streams": 1}), gpu_system, "simt")
    four = simulate(make_workload("offload", {"op": "relu", "n": 40000, "streams": 4}), gpu_system, "simt")
    assert four.instance_ends_s[0] < 0.75 * one.instance_ends_s[0]
    h2d = [e for e in four.trace if e.resource.label == "PCIe h2d"]
    kernels = [e for e in four.trace if e.resource.label.startswith("SM")]
    # the second chunk crosses the link while the first chunk's kernel runs
    assert h2d[1].start_s < kernels[0].end_s and h2d[1].end_s > kernels[0].start_s


def test_pageable_copy_blocks_the_host(gpu_system):
    pinned = simulate(make_workload("copy", {"n": 1000}), gpu_system, "simt")
    pageable = simulate(make_workload("copy", {"n": 1000, "pinned": False}), gpu_system, "simt")
    # pinned: 3.7 us issue (a CuPy copy call) + 1 us latency + 4 us; pageable at 0.5 GB/s: 3.7 + 1 + 8 us
    assert pinned.instance_ends_s[0] == pytest.approx(8.7e-6)
    assert pageable.instance_ends_s[0] == pytest.approx(12.7e-6)
    assert any(e.label.startswith("wait") for e in pageable.trace)


def test_one_copy_engine_serialises_directions():
    gpu = evolve_gpu(copy_engines=1)
    system = SystemSpec(host=TINY_CPU, device=gpu, link=TINY_LINK)
    result = simulate(make_workload("offload", {"op": "relu", "n": 4000, "streams": 4}), system, "simt")
    copies = sorted((e.start_s, e.end_s) for e in result.trace if e.resource.label.startswith("PCIe"))
    for (_, end), (start, _) in zip(copies, copies[1:], strict=False):
        assert start >= end - 1e-15


def test_wave_quantisation_of_a_compute_bound_gemm():
    # 10x10 outputs in 2x2 tiles: 25 tiles on 2 SMs = 12.5 waves -> 13 tile times.
    # Each tile: 2 * 4 * k flops at 8 GFLOP/s = k ns; memory is made fast enough not to matter.
    system = compute_bound_system()
    k = 10**6
    result = simulate(make_workload("matmul", {"m": 10, "n": 10, "k": k}), system, "simt")
    kernel = [e for e in result.trace if e.resource.label.startswith("SM") and not e.detail]
    assert [e.label for e in kernel] == [f"matmul 10x10x{k} waves 1-12", f"matmul 10x10x{k} tail wave"]
    assert kernel[0].duration_s == pytest.approx(12 * k * 1e-9, rel=1e-6)
    assert kernel[1].duration_s == pytest.approx(k * 1e-9, rel=1e-6)
    assert kernel[1].resource.label == "SM 0"
    assert any("12.50 waves" in note for note in result.notes)


def test_back_to_back_instances_pipeline_on_a_gpu(gpu_system):
    # The host issues one kernel per 5.3 us (a CuPy elementwise call) while each takes longer
    # (2000 elements: 125 waves, 1 us latency + 24000 B at 1 GB/s = 25 us), so instances end one
    # kernel time apart, not one latency apart.
    result = simulate(make_workload("vector_add", {"n": 2000}), gpu_system, "simt", repeats=3)
    first, second, third = result.instance_ends_s
    assert first == pytest.approx(ELEMENTWISE_CALL_S + 25e-6)
    assert second - first == pytest.approx(25e-6)
    assert third - second == pytest.approx(25e-6)


def test_a_launch_bound_kernel_runs_one_issue_apart(gpu_system):
    # 8 elements take 1.096 us, less than the 5.3 us the host needs per call: the host sets the pace.
    result = simulate(make_workload("vector_add", {"n": 8}), gpu_system, "simt", repeats=3)
    first, second, third = result.instance_ends_s
    assert first == pytest.approx(ELEMENTWISE_CALL_S + 1.096e-6)
    assert second - first == pytest.approx(ELEMENTWISE_CALL_S)
    assert third - second == pytest.approx(ELEMENTWISE_CALL_S)


def test_events_do_not_grow_with_elements():
    gpu = evolve_gpu(memory=attrs.evolve(evolve_gpu().memory, capacity_B=1e15))
    system = SystemSpec(host=TINY_CPU, device=gpu, link=TINY_LINK)
    counts = [
        simulate(make_workload("vector_add", {"n": n}), system, "simt").events for n in (10**3, 10**6, 10**9)
    ]
    assert counts[2] <= 1.5 * counts[1]
    assert max(counts) < 40
