"""A calibrated CPU's loop bodies and BLAS threads (issue 26 item 8, this machine's own figures).

Two figures calibration measures for itself rather than taking from reference counts:

- ``interpreted_loop_scale``: each pure-Python loop body (relu's branch on a random sign, a
  generator per matmul output) against what its counted operations predict at the add loop's
  cost; the SISD prediction of that loop scales with it, and only of that loop;
- ``blas_thread_efficiency``: a product one BLAS call spreads over several cores keeps that share
  of each core's rate, and its threads are woken and joined (``parallel_dispatch_s``) like
  NumPy's chunked passes; a product of one tile runs on one core and pays neither.

Answers are hand-computed on tiny made-up machines; the calibration steps run on a fake machine
whose timer charges known costs.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim.base.errors import ParsimError
from parsim.hardware.registry import processor as get_processor
from parsim.hardware.tomlio import dumps_hardware, loads_hardware
from parsim.measure import calibrate as calibration
from parsim.measure.timing import Timing
from parsim.methods.predict import predict
from parsim.model.kernel import compute_s
from parsim.model.rates import execution
from parsim.workloads.base import Kernel
from parsim.workloads.ops import elementwise_kernel, gemm_kernel, python_loop_ops, reduce_parts
from tests.systems import TINY_CPU
from tests.test_calibrate_plausible import (  # noqa: F401
    CALL_S,
    GEMM_FLOPS,
    ITEM_S,
    TASK_S,
    fake_machine,
    own_lock,
    restrict_cpus,
)

LOOPS = ("vector_add", "saxpy", "relu", "sigmoid", "reduce_sum", "matmul")


def loop_kernel(loop: str) -> Kernel:
    if loop == "matmul":
        return gemm_kernel(8, 8, 8, "float32", "matmul")
    if loop == "reduce_sum":
        return Kernel.of(**reduce_parts(1000, "float32"), dtype="float32")
    return elementwise_kernel(loop, 1000, "float32")


def test_only_the_measured_loop_body_changes_its_price():
    spec = attrs.evolve(TINY_CPU, interpreted_element_s=20e-9, interpreted_loop_scale={"relu": 1.5})
    assert execution(spec, "sisd", loop_kernel("relu")).interpreted_element_s == pytest.approx(30e-9)
    assert execution(spec, "sisd", loop_kernel("vector_add")).interpreted_element_s == 20e-9
    assert execution(spec, "simd", loop_kernel("relu")).interpreted_element_s == 0.0  # compiled


def test_a_scaled_relu_loop_costs_its_share_more_by_hand():
    # 10,000 elements x 0.47 counted operations x 20 ns, once more x 0.5: 47 us more
    base = attrs.evolve(TINY_CPU, interpreted_element_s=20e-9)
    scaled = attrs.evolve(base, interpreted_loop_scale={"relu": 1.5})
    params = {"n": 10000, "fused": False}
    before = predict("relu", params, device=base, mode="sisd").latency_s
    after = predict("relu", params, device=scaled, mode="sisd").latency_s
    assert after - before == pytest.approx(10000 * 0.47 * 20e-9 * 0.5, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(loop=st.sampled_from(LOOPS), scale=st.floats(0.2, 5.0))
def test_a_loops_interpreted_time_is_linear_in_its_scale(loop, scale):
    kernel = loop_kernel(loop)
    spec = attrs.evolve(TINY_CPU, interpreted_loop_scale={loop: scale})

    def seconds(on):
        ex = execution(on, "sisd", kernel)
        work = kernel.work
        return compute_s(
            ex, work.flops, work.special_ops, work.work_items, kernel.issue.python_ops_per_item, 1
        )

    assert seconds(spec) == pytest.approx(scale * seconds(TINY_CPU), rel=1e-12)


def test_the_counted_operations_of_each_loop_by_hand():
    assert python_loop_ops("vector_add", {"n": 100}) == 100.0
    assert python_loop_ops("relu", {"n": 100}) == pytest.approx(47.0)
    assert python_loop_ops("reduce_sum", {"n": 100}) == 50.0
    # 2 x 3 outputs, each 4 terms of 1.75 and 22 of set-up
    assert python_loop_ops("matmul", {"m": 2, "n": 3, "k": 4}) == pytest.approx(6 * (4 * 1.75 + 22))


def _gemm_s(spec, edge: int) -> float:
    params = {"m": edge, "n": edge, "k": edge, "dtype": "float32"}
    return predict("matmul", params, device=spec, mode="mimd+simd").latency_s


@pytest.mark.parametrize("edge", [512, 1024])
def test_a_product_over_two_cores_keeps_the_blas_share_and_pays_the_join(edge):
    # compute-bound on two cores: the work at 1/0.8 of the rate, plus 50 us to wake and join
    cpu = get_processor("xeon-e5-2630v3")
    two = attrs.evolve(cpu, cores=2)
    threaded = attrs.evolve(two, blas_thread_efficiency=0.8, parallel_dispatch_s=50e-6)
    plain = predict("matmul", {"m": edge, "n": edge, "k": edge}, device=two, mode="mimd+simd")
    assert plain.bottleneck == "compute"
    compute = plain.latency_s - two.dispatch_s
    assert _gemm_s(threaded, edge) == pytest.approx(two.dispatch_s + compute / 0.8 + 50e-6, rel=1e-6)


def test_a_product_of_one_tile_runs_on_one_core_as_before():
    cpu = attrs.evolve(get_processor("xeon-e5-2630v3"), cores=2)
    threaded = attrs.evolve(cpu, blas_thread_efficiency=0.5, parallel_dispatch_s=50e-6)
    edge = cpu.matmul_tile  # one output tile
    assert _gemm_s(threaded, edge) == _gemm_s(cpu, edge)


def test_presets_keep_perfect_threading():
    for name in ("xeon-8480", "dual-xeon-e5-2630v3", "epyc-9654"):
        spec = get_processor(name)
        assert spec.blas_thread_efficiency == 1.0 and spec.interpreted_loop_scale == ()


def test_the_new_figures_round_trip_through_toml():
    spec = attrs.evolve(
        TINY_CPU, interpreted_loop_scale={"relu": 1.4, "matmul": 0.8}, blas_thread_efficiency=0.82
    )
    back = loads_hardware(dumps_hardware(spec))
    assert back == spec and dict(back.interpreted_loop_scale) == {"matmul": 0.8, "relu": 1.4}


def _edited(old: str, new: str) -> str:
    text = dumps_hardware(TINY_CPU)
    assert old in text
    return text.replace(old, new, 1)


LOOP_TABLE = "[processor.interpreted_loop_scale]\n"


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        (
            "blas_thread_efficiency = 1.0",
            "blas_thread_efficiency = 1.5",
            "'blas_thread_efficiency' must be in (0, 1]: 1.5",
        ),
        (
            LOOP_TABLE,
            LOOP_TABLE + "relu = 500.0\n",
            "'interpreted_loop_scale.relu' must be in [0.01, 100]: 500",
        ),
        (LOOP_TABLE, "", "'processor.interpreted_loop_scale' must be a table"),
    ],
)
def test_a_bad_figure_in_a_hardware_file_is_refused_in_one_line(old, new, named):
    text = _edited(old, new)
    if not new:  # the table as a plain number
        text = text.replace("[processor]\n", "[processor]\ninterpreted_loop_scale = 3\n", 1)
    with pytest.raises(ParsimError) as info:
        loads_hardware(text, source="bad.toml")
    assert named in str(info.value) and "\n" not in str(info.value)


FACTORS = {"vector_add": 1.0, "saxpy": 1.1, "relu": 1.4, "sigmoid": 0.9, "reduce_sum": 1.2, "matmul": 0.8}
ELEMENT_S = 30e-9


def test_calibration_measures_each_loop_and_the_blas_threads(monkeypatch, fake_machine):  # noqa: F811
    # each loop body takes FACTORS x its counted operations x 30 ns; the fake machine's GEMM does
    # not speed up on two threads, so each of 2 cores keeps T1 / (2 (T1 - join)) of one core's rate
    def sisd(name, params):
        def run():
            return None

        run.cost_s = python_loop_ops(name, params) * ELEMENT_S * FACTORS[name]
        return run

    def timer(operation, budget_s=0.0, **_):
        if hasattr(operation, "cost_s"):
            return Timing(operation.cost_s, operation.cost_s, operation.cost_s, 1)
        return fake_machine(operation, budget_s)

    restrict_cpus(monkeypatch, 2)
    monkeypatch.setattr(calibration.cpu, "sisd_operation", sisd)
    spec, raw = calibration.calibrate(quick=True, rounds=1, timer=timer)
    assert spec.interpreted_element_s == pytest.approx(ELEMENT_S)
    assert dict(spec.interpreted_loop_scale) == pytest.approx(
        {k: v for k, v in FACTORS.items() if k != "vector_add"}
    )
    join = 2 * (TASK_S + CALL_S + ITEM_S) - (CALL_S + ITEM_S)
    one = CALL_S + 2 * 384**3 / GEMM_FLOPS
    assert spec.parallel_dispatch_s == pytest.approx(join)
    assert spec.blas_thread_efficiency == pytest.approx(one / (2 * (one - join)), rel=1e-6)
    assert "notes" not in raw


def test_a_loop_timing_far_from_any_interpreter_is_dropped_with_a_note(monkeypatch, fake_machine):  # noqa: F811
    def sisd(name, params):
        def run():
            return None

        run.cost_s = python_loop_ops(name, params) * ELEMENT_S * (50.0 if name == "relu" else 1.0)
        return run

    def timer(operation, budget_s=0.0, **_):
        if hasattr(operation, "cost_s"):
            return Timing(operation.cost_s, operation.cost_s, operation.cost_s, 1)
        return fake_machine(operation, budget_s)

    restrict_cpus(monkeypatch, 2)
    monkeypatch.setattr(calibration.cpu, "sisd_operation", sisd)
    spec, raw = calibration.calibrate(quick=True, rounds=1, timer=timer)
    assert "relu" not in dict(spec.interpreted_loop_scale)
    assert any(note.startswith("the relu loop's cost: dropped, 50 x") for note in raw["notes"])
