"""Issue 27's classroom defects in AppTest: every workload's defaults predict on every page that
offers it (defect 2), Compare's LLM tables lead with a request's figures (defect 3), and "Measure
it here" is offered only where it runs (defect 6)."""

import pytest

import parsim
from parsim.app.compare_llm import bottleneck_words, row_figures
from tests.apptest import app

# ---- defect 3: an LLM request's headline and bottleneck on Compare ---------------------------


def test_a_request_row_leads_with_end_to_end_first_token_per_token_and_tokens_per_s():
    p = parsim.predict("llm_serve", {"model": "llama-2-7b", "prompt": 512, "output": 128}, device="a100-80gb")
    row = row_figures(p)
    assert list(row) == ["end_to_end_ms", "first_token_ms", "per_token_ms", "tokens_per_s", "bottleneck"]
    # e2e = TTFT + (output - 1) x TPOT, and 128 tokens over the request's time
    assert row["end_to_end_ms"] == pytest.approx(row["first_token_ms"] + 127 * row["per_token_ms"])
    assert row["tokens_per_s"] == pytest.approx(128 / (row["end_to_end_ms"] / 1e3), rel=1e-6)
    assert row["end_to_end_ms"] > 10 * p.latency_s * 1e3  # not the simulated prefill + one step
    # each phase judged on its own: the summed breakdown says "compute" for a memory-bound decode
    assert (
        row["bottleneck"].startswith("prefill compute-bound (")
        and ", decode memory-bound (" in row["bottleneck"]
    )


def test_a_kernel_row_says_its_bound_and_share():
    p = parsim.predict("vector_add", {"n": 10**8}, device="a100-80gb")
    share = p.breakdown["memory"] / p.latency_s
    assert bottleneck_words(p) == f"memory-bound ({share:.0%})"


@pytest.mark.slow
def test_compare_llm_batching_leads_with_the_request_and_turns_compute_bound_at_a_large_batch():
    at = app("compare", {"compare_kind": "LLM batching decode"})
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert list(table.columns[:4]) == ["configuration", "batch", "end_to_end_ms", "first_token_ms"]
    assert "per_token_ms" not in table.columns  # one-token requests (was 0 ms)
    assert (table["end_to_end_ms"] > 0).all() and not table.isna().any().any()
    a100 = table[table["configuration"] == "A100 80 GB"].set_index("batch")
    assert a100.loc[1, "bottleneck"].startswith("memory-bound")
    assert a100.loc[512, "bottleneck"].startswith("compute-bound")  # the lesson's knee, past the ridge


# ---- defect 2: every workload's defaults predict on every page that offers it ------------------

DEVICES = ("h100-sxm", "laptop-4c-avx2", "tpu-v5e")  # a GPU, a CPU, a TPU: each offers its own list


def offered_on_explore(device: str) -> list[str]:
    """The workloads Explore's picker offers with ``device`` (what the page itself lists)."""
    at = app("explore", {"explore_device": device})
    return [label.split(" — ")[0] for label in at.selectbox(key="explore_workload").options]


def explore_cases() -> list[tuple[str, str]]:
    from parsim.app.widgets import runs_on_cpu
    from parsim.hardware import registry
    from parsim.workloads.registry import WORKLOADS

    cases = []
    for device in DEVICES:
        accelerator = registry.processor(device).is_accelerator
        for name in WORKLOADS:
            if WORKLOADS[name].requests is None and (accelerator or runs_on_cpu(name)):
                cases.append((device, name))
    return cases


def test_a_batch_starts_at_the_largest_halving_that_fits():
    from parsim.app.widgets import batch_that_fits
    from parsim.workloads.registry import WORKLOADS

    fields = dict(WORKLOADS["data_parallel"].params.model_fields)
    asked = []

    def fits(name, params):
        asked.append(params["batch"])
        return params["batch"] <= 100

    assert batch_that_fits("data_parallel", fields, {"batch": 256}, fits)["batch"] == 64
    assert asked == [256, 128, 64]
    assert batch_that_fits("data_parallel", fields, {"batch": 256}, lambda n, p: False)["batch"] == 1


def test_explore_judges_fit_with_the_models_footprint_rule():
    from parsim.app.explore import fits_on

    # ResNet-50 data-parallel at 256 images: ~23 GiB, more than a 16 GB TPU v5e or T4, less than 80 GB
    params = {"model": "resnet50", "batch": 256}
    assert not fits_on("tpu-v5e", None, None)("data_parallel", params)
    assert not fits_on("t4", "xeon-e5-2630v3", None)("data_parallel", params)
    assert fits_on("h100-sxm", "xeon-e5-2630v3", None)("data_parallel", params)
    assert fits_on("t4", "xeon-e5-2630v3", None)("data_parallel", {**params, "batch": 64})


@pytest.mark.slow
@pytest.mark.parametrize("device", DEVICES)
def test_the_cases_below_are_what_explore_offers(device):
    assert offered_on_explore(device) == [name for d, name in explore_cases() if d == device]


@pytest.mark.slow
@pytest.mark.parametrize(("device", "workload"), explore_cases())
def test_explore_opened_on_any_workload_predicts_its_defaults(device, workload):
    # a bookmark, first thing in a session: data_parallel opened on an error (zero=0 offered as 1)
    at = app("explore", {"explore_device": device, "explore_workload": workload})
    assert at.selectbox(key="explore_workload").value == workload
    assert not at.exception, at.exception[0].value if at.exception else ""
    assert not at.error, at.error[0].value
    assert at.metric and at.info  # the figures and the bottleneck sentence


@pytest.mark.slow
def test_compare_predicts_every_operation_it_offers():
    at = app("compare")
    for op in at.selectbox(key="compare_op").options:
        at.selectbox(key="compare_op").set_value(op).run()
        assert not at.exception and not at.error, op
        assert at.dataframe, op


# ---- defect 6: "Measure it here" only where it runs --------------------------------------------


def lesson_plans():
    from parsim.app import measure_here
    from parsim.app.cache import scenario_folder
    from parsim.studies.scenarios import load_scenario, scenario_paths

    for path in scenario_paths(scenario_folder()):
        yield path.stem, measure_here.plan(load_scenario(path), None, False)


def test_what_a_lesson_offers_to_measure_is_what_measure_accepts():
    from parsim.measure.run import check_measurable

    offered = set()
    for stem, (planned, skipped) in lesson_plans():
        for item in planned:
            check_measurable(item.workload, item.params, item.backend, item.mode)  # raises if refused
            offered.add(stem)
        assert planned or skipped, stem
    # cluster, LLM and 70B lessons have nothing this machine can run; the kernels' lessons do
    for stem in ("cluster_ring_vs_tree", "llm_batching_decode", "llm_70b_gpus", "llm_load_queueing_knee"):
        assert stem not in offered
    assert {"flynn_vector_add", "gpu_offload_crossover", "matmul_roofline", "mlp_training"} <= offered


def test_a_tpu_case_is_not_measured_as_if_it_were_this_cpu():
    plans = dict(lesson_plans())
    planned, skipped = plans["systolic_vs_simt"]
    assert not [item for item in planned if "TPU" in item.label]
    assert any("TPU" in line and "cannot measure" in line for line in skipped)


@pytest.mark.slow
@pytest.mark.parametrize("stem", ["cluster_ring_vs_tree", "llm_70b_gpus", "llm_batching_decode"])
def test_learn_offers_no_measurement_where_nothing_runs_and_says_why(stem):
    at = app("learn", {"lesson": stem})
    assert not at.exception
    labels = [b.label for b in at.button]
    assert not any(label.startswith("Measure it here") for label in labels), labels
    assert "Calibrate this machine" not in labels  # nothing to calibrate for
    (why,) = [i.value for i in at.info if "Nothing in this lesson can be measured" in i.value]
    assert ("cluster" in why) if stem.startswith("cluster") else ("no program" in why)


@pytest.mark.slow
def test_learn_offers_a_measurement_where_it_runs():
    at = app("learn", {"lesson": "mlp_training"})
    assert any(b.label.startswith("Measure it here (2 runs)") for b in at.button)


def test_a_field_of_literal_choices_or_a_union_of_them_is_a_choice_box():
    # mlp_train_step's framework is FrameworkName | Literal["none"]: a union of literals was taken
    # for a number and the Explore page sent framework=1
    import typing

    from parsim.app.widgets import literal_options
    from parsim.workloads.standard import FrameworkName, MlpTrainParams

    framework = MlpTrainParams.model_fields["framework"].annotation
    assert literal_options(framework) == (*typing.get_args(FrameworkName), "none")
    assert literal_options(typing.Literal["a", "b"]) == ("a", "b")
    assert literal_options(int) is None and literal_options(int | None) is None
