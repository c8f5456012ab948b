"""Speed mechanisms of issue 28 checked against the slow, exact path they replace.

A long pipeline's figures from three short steps must equal the full event simulation's (the
oracle) to 1e-9 relative; the prediction cache must return the prediction it stored, keyed on the
request; the simulation must leave the cyclic garbage collector as it found it.
"""

from __future__ import annotations

import gc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsim.base import collector
from parsim.methods.engine import simulate
from parsim.methods.predict import clear_caches, predict, request_key
from parsim.studies import pipeline_extrapolation as px
from parsim.workloads.registry import make_workload

BASE = {"model": "gpt3-125m", "train": True, "dtype": "float16", "optimizer": "adam", "seq": 256, "gpus": 8}
RTOL = 1e-9


def _full(params: dict) -> dict[str, float]:
    return px._figures(px._additive(params, "dgx-a100", "engine"))


def _agree(fast: dict[str, float], full: dict[str, float]) -> None:
    for name in px.FIGURES:
        assert fast[name] == pytest.approx(full[name], rel=RTOL, abs=1e-12), name


@pytest.mark.parametrize(
    "split",
    [
        {"tp": 1, "pp": 4, "nodes": 1, "microbatches": 16, "recompute": "full"},  # 1F1B in a node
        {"tp": 2, "pp": 4, "nodes": 2, "microbatches": 13},  # stages across nodes (NIC sends)
        {"tp": 1, "pp": 2, "nodes": 1, "microbatches": 10, "virtual_stages": 2},  # interleaved
        {"tp": 2, "pp": 2, "nodes": 2, "microbatches": 9, "cp": 2, "sequence_parallel": True},
        {"tp": 4, "pp": 3, "nodes": 3, "microbatches": 11, "recompute": "selective"},
    ],
)
def test_three_short_steps_give_the_long_steps_figures(split: dict) -> None:
    params = {**BASE, **split}
    dp = 8 * params["nodes"] // (split["tp"] * split["pp"] * split.get("cp", 1))
    params["batch"] = dp * split["microbatches"]
    fast = px.extrapolated(params, "dgx-a100")
    assert fast is not None  # the short steps settled into one period: the fast form ran
    _agree(fast, _full(params))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pp=st.sampled_from([2, 4]),
    tp=st.sampled_from([1, 2]),
    nodes=st.sampled_from([1, 2]),
    extra=st.integers(3, 6),
    virtual=st.sampled_from([1, 2]),
)
def test_extrapolation_matches_the_event_simulation(
    pp: int, tp: int, nodes: int, extra: int, virtual: int
) -> None:
    """Over pipelines, micro-batches and virtual stages: the fast form, where it applies, is the
    simulation's answer; where it does not, ``step_figures`` is the simulation itself."""
    m = pp * extra if virtual > 1 else pp + extra
    params = {**BASE, "tp": tp, "pp": pp, "nodes": nodes, "microbatches": m, "virtual_stages": virtual}
    params["batch"] = 8 * nodes // (tp * pp) * m
    counts = px.short_counts(params)
    assert counts is None or counts[-1] < m
    full = _full(params)
    _agree(px.step_figures(params, "dgx-a100"), full)
    fast = px.extrapolated(params, "dgx-a100")
    if fast is not None:
        _agree(fast, full)


def test_short_counts_leave_out_short_pipelines() -> None:
    assert px.short_counts({"pp": 1, "microbatches": 100}) is None  # no pipeline
    assert px.short_counts({"pp": 4, "microbatches": 7}) is None  # 4, 5, 6: no cheaper than 7
    assert px.short_counts({"pp": 4, "microbatches": 8}) == (4, 5, 6)
    assert px.short_counts({"pp": 4, "microbatches": 16, "virtual_stages": 2}) is None  # 4, 8, 12
    assert px.short_counts({"pp": 4, "microbatches": 20, "virtual_stages": 2}) == (4, 8, 12)
    assert px.simulated_passes({"pp": 4, "microbatches": 100}) == 4 * (4 + 5 + 6)  # what a search costs
    assert px.simulated_passes({"pp": 4, "microbatches": 7}) == 4 * 7


def test_a_cache_hit_is_the_stored_prediction_and_clearing_forgets_it() -> None:
    clear_caches()
    args = ("matmul", {"m": 256, "n": 256, "k": 256})
    first = predict(*args, device="h100-sxm")
    assert predict(*args, device="h100-sxm") is first
    assert predict("matmul", {"k": 256, "n": 256, "m": 256}, device="h100-sxm") is first  # order-free
    assert predict(*args, device="a100-80gb") is not first
    clear_caches()
    assert predict(*args, device="h100-sxm") is not first


def test_requests_that_cannot_be_keyed_are_not_cached() -> None:
    assert request_key("matmul", {"m": [1, 2]}, "h100-sxm") is None  # a value that does not hash
    assert request_key("matmul", {"m": 8}, "my-gpu.toml") is None  # a file that may change
    assert request_key(make_workload("matmul", {"m": 8, "n": 8, "k": 8}), None, "h100-sxm") is None
    assert request_key("matmul", {"n": 8, "m": 8}, "h100-sxm") == request_key(
        "matmul", {"m": 8, "n": 8}, "h100-sxm"
    )


@pytest.mark.parametrize("enabled", [True, False])
def test_simulation_leaves_the_collector_as_it_found_it(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        from parsim.hardware import registry

        workload = make_workload("matmul", {"m": 64, "n": 64, "k": 64})
        simulate(workload, registry.system("h100-sxm"), "simt")
        assert gc.isenabled() is enabled
        with pytest.raises(ZeroDivisionError), collector.paused():
            assert not gc.isenabled()
            _ = 1 / 0
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


@pytest.mark.parametrize("row_id", ["sc21-t1-39b", "nemo2407-llama2-13b-16"])
def test_published_long_pipelines_read_the_simulations_figure(row_id: str, monkeypatch) -> None:
    """A published 3D-parallel row (TFLOP/s per GPU, tokens/s per GPU) through the three short
    steps is the row through the full simulation, to 1e-9."""
    from parsim.studies import published

    row = next(row for row in published.load_rows() if row.id == row_id)
    assert published._long_pipeline(row)
    fast = published.predicted(row)
    clear_caches()
    monkeypatch.setattr(px, "short_counts", lambda params: None)
    assert not published._long_pipeline(row)
    assert fast == pytest.approx(published.predicted(row), rel=RTOL)
