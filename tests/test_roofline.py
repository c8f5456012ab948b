"""One roofline rule (``model.roofline``) composed by the engine, the analytic method, the sweep's
fast path and the lessons' textbook figure: each is checked against the rule itself."""

from __future__ import annotations

import pandas
import pytest

from parsim.hardware.registry import processor
from parsim.methods.engine.processor import phase_times, plan
from parsim.model.kernel import choose, compute_s, fork_join_s, kernel_time_s, memory_s, overlap_norm
from parsim.model.rates import execution
from parsim.model.roofline import attainable_per_s, combine, leg
from parsim.studies.sweeps.fast import fast_rows
from parsim.studies.teaching import attainable_flops_per_s
from parsim.workloads.ops import gemm_kernel

A100 = processor("a100-80gb")


def test_the_rule_known_answers():
    # the smooth roofline of norm 2 is the length of (arithmetic, memory): 3 and 4 give 5
    assert combine(3.0, 4.0, "roofline", 2.0) == pytest.approx(5.0)
    # padded tiles (busy 6 s) stay a floor under the smooth roofline of the work's own 3 s
    assert combine(6.0, 4.0, "roofline", 2.0, arithmetic_s=3.0) == 6.0
    assert combine(4.5, 4.0, "roofline", 2.0, arithmetic_s=3.0) == pytest.approx(5.0)
    assert combine(6.0, 4.0, "roofline", arithmetic_s=3.0) == 6.0  # the plain max of the hard legs
    assert combine(6.0, 4.0, "serial", 2.0, arithmetic_s=3.0) == 10.0  # busy, then memory
    assert leg(4.0, 4.0) == "compute" and leg(3.0, 4.0) == "memory"


def test_textbook_roofline_is_the_same_rule_as_a_rate():
    # 10 FLOP/s peak, 2 B/s: 1 FLOP/byte is memory-bound at 2 FLOP/s; 100 FLOP/byte reaches the peak
    assert attainable_per_s(10.0, 2.0, 1.0) == pytest.approx(2.0, rel=1e-15)
    assert attainable_per_s(10.0, 2.0, 100.0) == pytest.approx(10.0, rel=1e-15)
    peak = A100.peak_flops_per_s("float16", matrix=True)
    for intensity in (0.5, 11.0, 178.0, 1024.0):
        seconds = combine(1.0 / peak, 1.0 / (intensity * A100.memory.bandwidth_Bps), "roofline")
        assert attainable_flops_per_s(A100, intensity, "float16") == pytest.approx(1.0 / seconds, rel=1e-15)


def _legs(kernel):
    ex = execution(A100, "simt", kernel)
    compute = compute_s(
        ex,
        kernel.work.flops,
        kernel.work.special_ops,
        kernel.work.work_items,
        kernel.issue.python_ops_per_item,
        ex.cores,
    )
    memory = memory_s(A100, ex, kernel.bytes, kernel.access.cold_bytes, ex.cores, kernel.work.work_items)
    return ex, compute, memory


@pytest.mark.parametrize("mnk", [(128, 11008, 4096), (8192, 8192, 8192), (1000, 1000, 1000), (1, 4096, 4096)])
def test_analytic_kernel_time_is_the_rule(mnk):
    kernel = choose(A100, "simt", "roofline", gemm_kernel(*mnk, "float16", "g"))[1]
    ex, compute, memory = _legs(kernel)
    norm = overlap_norm(A100, kernel)
    assert norm == 2.0  # cuBLAS's smooth roofline
    expected = combine(compute, memory, "roofline", norm) + fork_join_s(A100, ex, kernel.work.work_items)
    assert kernel_time_s(kernel, A100, "simt")[0] == expected


@pytest.mark.parametrize("overlap", ["roofline", "serial"])
@pytest.mark.parametrize("mnk", [(128, 11008, 4096), (1000, 1000, 1000), (5000, 300, 64)])
def test_engine_phases_are_the_rule_per_wave(mnk, overlap):
    """Each phase's duration is the one rule on its busy time (padded tiles), its own multiply-adds
    and its memory leg; without padding (a single kernel-wide phase) it is the closed form's."""
    kernel = gemm_kernel(*mnk, "float16", "g")
    how = plan(A100, "simt", overlap, kernel)
    norm = overlap_norm(A100, how.kernel)
    phases = how.decomposition.phases
    for phase, (busy, memory, duration) in zip(
        phases, phase_times(A100, "simt", overlap, kernel), strict=True
    ):
        assert busy == phase.compute_s
        assert phase.arithmetic_s <= phase.compute_s  # padding only adds
        assert duration == combine(phase.compute_s, memory, overlap, norm, phase.arithmetic_s)


def test_fast_path_is_the_rule():
    sizes = [(128, 11008, 4096), (1000, 1000, 1000), (64, 64, 64)]
    points = [{"workload.m": m, "workload.n": n, "workload.k": k} for m, n, k in sizes]
    base = {"workload": "matmul", "params": {"dtype": "float16"}, "device": "a100-80gb", "method": "analytic"}
    frames = fast_rows("", base, points)
    assert frames is not None
    frame = pandas.concat(frames)
    for (m, n, k), (_, row) in zip(sizes, frame.iterrows(), strict=True):
        kernel = gemm_kernel(m, n, k, "float16", "g")
        _, compute, memory = _legs(kernel)
        expected = combine(compute, memory, "roofline", 2.0)
        assert row["latency_s"] - row["overhead_s"] == pytest.approx(expected, rel=1e-12)
        assert row["compute_s"] + row["memory_s"] == pytest.approx(expected, rel=1e-12)
    assert frame["latency_s"].notna().all()
