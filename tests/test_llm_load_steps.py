"""Pricing serving steps from the latency run alone (issue 24's speed): the same figures as
``llm_serve``'s full prediction, bit for bit, without its throughput run."""

from __future__ import annotations

import attrs
import pytest

from parsim.hardware import registry
from parsim.methods import program
from parsim.methods.predict import clear_caches, predict
from parsim.methods.serving.steps import ModelSteps, _between
from parsim.workloads.registry import make_workload

LLAMA = {"model": "llama-2-7b"}


@pytest.mark.parametrize(("batch", "prompt"), [(1, 512), (8, 1024)])
def test_a_priced_step_is_llm_serves_ttft_and_tpot_exactly(batch, prompt):
    # output=2: the prefill is the time to the first token, the one decode step the time per token
    reference = predict(
        "llm_serve", {**LLAMA, "batch": batch, "prompt": prompt, "output": 2}, device="a100-80gb"
    ).metrics
    steps = ModelSteps(LLAMA, "a100-80gb", max_batch=64)
    assert steps.phases(batch, prompt) == (
        reference["time_to_first_token_s"],
        reference["time_per_output_token_s"],
    )


@pytest.mark.parametrize("method", ["engine", "analytic"])
def test_trace_lowered_is_the_full_predictions_trace(method):
    served = make_workload("llm_serve", {**LLAMA, "batch": 4, "prompt": 64, "output": 2})
    workload = attrs.evolve(served, memory=None, footprint_B=0.0)
    system = registry.system("a100-80gb", None, None, 1)
    assert (
        program.trace_lowered(workload, system, method)
        == program.predict_lowered(workload, system, method).trace
    )


def test_pricing_a_step_runs_no_throughput_simulation(monkeypatch):
    clear_caches()  # no prediction cached from another test answers for the run

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a step's price needs no throughput run")

    monkeypatch.setattr(program, "timing", refuse)
    monkeypatch.setattr(program, "predict_program", refuse)
    prefill_s, decode_s = ModelSteps(LLAMA, "a100-80gb", max_batch=8).phases(2, 48)
    assert 0 < decode_s < prefill_s


def test_a_size_on_the_grid_costs_its_own_predictions_only():
    steps = ModelSteps(LLAMA, "a100-80gb", max_batch=64)
    steps.prefill_s(512)  # a grid prompt: llm_serve at (1, 512), not its neighbour 384 too
    assert steps.predictions == 1 and set(steps._phases) == {(1, 512)}
    steps.decode_line(4)  # a grid batch: contexts 16 and 1024 at batch 4, not batch 3's
    assert steps.predictions == 3 and set(steps._phases) == {(1, 512), (4, 16), (4, 1024)}
    steps.decode_line(5)  # between grid batches 4 and 6: batch 6's two more
    assert steps.predictions == 5


def test_between_grid_points_weighs_the_neighbours():
    points = [1, 2, 3, 4, 6, 8]
    assert _between(points, 4) == (4, 4, 0.0)
    assert _between(points, 5) == (4, 6, 0.5)
    assert _between(points, 1) == (1, 2, 0.0)
    assert _between(points, 10) == (6, 8, 2.0)  # past the end: extrapolated from the last two
