"""Issue 27 teaching gaps 13, 16-18: MISD in Flynn's taxonomy, SGD vs Adam, the software stack,
and CPU latency vs GPU throughput — the lessons' claims checked against parsim's own predictions,
the tables' arithmetic by hand, and the lessons opened in the app (AppTest)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parsim.app.learn import ORDER
from parsim.app.links import class_steps
from parsim.studies.scenarios import load_scenario, run_scenario
from parsim.studies.teaching_stack import (
    _union_length,
    latency_throughput_rows,
    optimizer_rows,
    stack_rows,
)
from tests.apptest import app

NEW = ["cpu_latency_vs_gpu_throughput", "mlp_sgd_vs_adam", "software_stack"]


@pytest.fixture(scope="module")
def runs():
    return {stem: run_scenario(load_scenario(stem)) for stem in NEW}


def test_union_of_overlapping_intervals_by_hand():
    # [0, 2] and [1, 3] cover 3; [5, 6] adds 1; [5.2, 5.8] lies inside it
    assert _union_length([(1, 3), (0, 2), (5, 6), (5.2, 5.8)]) == pytest.approx(4.0)
    assert _union_length([]) == 0.0


@given(st.lists(st.tuples(st.floats(0, 100), st.floats(0, 10)), max_size=30))
def test_union_is_between_the_longest_and_the_sum(spans):
    intervals = [(start, start + length) for start, length in spans]
    total = _union_length(intervals)
    assert total <= sum(length for _, length in spans) + 1e-9
    assert total >= max((length for _, length in spans), default=0.0) - 1e-9


def test_the_stack_layers_add_up_to_the_step(runs):
    for row in stack_rows(runs["software_stack"]):
        assert row["host_s"] + row["kernels_s"] + row["copies_s"] == pytest.approx(row["step_s"], rel=1e-6)


def test_framework_overhead_rules_batch_1_and_vanishes_at_256(runs):
    rows = {(r["case"], r["value"]): r for r in stack_rows(runs["software_stack"])}
    eager, graph = "ResNet-18, PyTorch eager", "ResNet-18, one CUDA graph"
    assert rows[eager, 1]["host_share"] > 0.5  # the GPU idles behind Python and the dispatcher
    assert rows[graph, 1]["host_share"] < 0.1  # one launch for the whole network
    assert rows[graph, 1]["step_s"] < rows[eager, 1]["step_s"] / 5
    assert rows[eager, 256]["host_share"] < 0.1  # the kernels dominate a big batch
    assert rows[eager, 256]["step_s"] == pytest.approx(rows[graph, 256]["step_s"], rel=0.05)


def test_the_library_algorithm_choice_is_faster_than_implicit_gemm_pinned(runs):
    rows = {(r["case"], r["value"]): r for r in stack_rows(runs["software_stack"])}
    auto, pinned = "conv 3x3 64ch 56x56, cuDNN's choice", "conv 3x3 64ch 56x56, implicit GEMM pinned"
    assert rows[auto, 256]["kernels_s"] < rows[pinned, 256]["kernels_s"]


def test_the_optimizer_share_is_found_and_adam_costs_more_when_memory_bound(runs):
    rows = {r["case"]: r for r in optimizer_rows(runs["mlp_sgd_vs_adam"])}
    assert [r["optimizer"] for r in rows.values()] == ["sgd", "adam", "sgd", "adam"]
    for row in rows.values():
        assert 0 < row["optimizer_s"] < row["step_s"]
    sgd, adam = rows["SGD, D = H = 8192"], rows["Adam, D = H = 8192"]
    assert adam["optimizer_s"] > sgd["optimizer_s"]  # two moments streamed besides weight and gradient
    assert adam["step_s"] > sgd["step_s"]
    sgd_memory = runs["mlp_sgd_vs_adam"].series("SGD, D = H = 8192")[0].prediction.memory.needs
    adam_memory = runs["mlp_sgd_vs_adam"].series("Adam, D = H = 8192")[0].prediction.memory.needs
    assert sgd_memory.optimizer_B == 0
    assert adam_memory.optimizer_B == pytest.approx(2 * adam_memory.weights_B)  # two moments
    small_sgd, small_adam = rows["SGD, D, H = 1000, 100"], rows["Adam, D, H = 1000, 100"]
    assert small_adam["optimizer_s"] < small_sgd["optimizer_s"]  # one fused launch, not two passes


def test_cpu_wins_one_task_gpu_wins_many(runs):
    result = runs["cpu_latency_vs_gpu_throughput"]
    cpu, gpu = latency_throughput_rows(result)
    assert cpu["case"].startswith("CPU") and gpu["case"].startswith("GPU")
    assert cpu["latency_s"] < gpu["latency_s"]
    assert gpu["best_items_per_s"] > 5 * cpu["best_items_per_s"]
    [(value, winner, _)] = result.crossovers()
    assert winner.startswith("GPU") and 1 < value < max(result.scenario.sweep.values)


def _run(stem):
    return {stem: run_scenario(load_scenario(stem))}


def claims_software_stack():
    """The claims of ``software_stack`` (listed in ``tests/test_scenarios.CLAIMS``)."""
    runs = _run("software_stack")
    test_framework_overhead_rules_batch_1_and_vanishes_at_256(runs)
    test_the_library_algorithm_choice_is_faster_than_implicit_gemm_pinned(runs)


def claims_mlp_sgd_vs_adam():
    test_the_optimizer_share_is_found_and_adam_costs_more_when_memory_bound(_run("mlp_sgd_vs_adam"))


def claims_cpu_latency_vs_gpu_throughput():
    test_cpu_wins_one_task_gpu_wins_many(_run("cpu_latency_vs_gpu_throughput"))


def test_course_order_puts_latency_vs_throughput_in_the_first_half():
    assert ORDER.index("cpu_latency_vs_gpu_throughput") == 1
    assert ORDER.index("mlp_training") < ORDER.index("mlp_sgd_vs_adam") < ORDER.index("software_stack")
    assert ORDER.index("matmul_roofline") < ORDER.index("systolic_vs_simt")
    steps = [dict(step.link.params).get("lesson") for step in class_steps()]
    assert steps.index("cpu_latency_vs_gpu_throughput") == 1 < len(steps) / 2


def test_misd_is_in_the_flynn_and_systolic_lessons():
    for stem in ("flynn_vector_add", "systolic_vs_simt"):
        text = load_scenario(stem).lesson
        assert "MISD" in text and "rare" in text


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stem", "heading", "column", "rows"),
    [
        ("cpu_latency_vs_gpu_throughput", "One task, or many?", "best throughput", 2),
        ("mlp_sgd_vs_adam", "The optimizer's share of the step", "optimizer's ops", 4),
        ("software_stack", "Where the step goes, layer by layer", "host (Python, framework", 15),
    ],
)
def test_each_new_lesson_opens_with_its_figure_and_table(stem, heading, column, rows):
    at = app("learn", query={"lesson": stem})
    assert not at.exception and not at.error
    assert any(heading in m.value for m in at.markdown)
    assert len(at.get("image")) >= 1
    tables = [d.value for d in at.dataframe if any(c.startswith(column) for c in d.value.columns)]
    assert len(tables) == 1 and len(tables[0]) == rows


def test_the_flynn_lesson_draws_the_four_boxes():
    at = app("learn", query={"lesson": "flynn_vector_add"})
    text = " ".join(m.value for m in at.markdown)
    assert "**MISD**" in text and "lesson=systolic_vs_simt" in text
    assert any("MISD is rare" in c.value for c in at.caption)
