"""Issue 23, items 3-4: every entry point counts what a request costs before working and refuses one
above its budget in one line (the app's smaller than the command line's; --no-limits lifts the
command line's)."""

from __future__ import annotations

import time

import attrs
import pytest

from parsim.base import budget
from parsim.base.budget import APP, CLI, Budget, check_params, stage_passes
from parsim.base.errors import ParsimError
from parsim.methods.predict import predict
from parsim.studies.splits import split_table

HUGE = {"model": "gpt3-1.3b", "pp": 8, "microbatches": 65536, "batch": 65536, "train": True, "gpus": 8}


def test_stage_passes_are_stages_times_microbatches():
    assert stage_passes({"pp": 8, "microbatches": 65536}) == 524_288
    assert stage_passes({"model": "resnet50"}) == 1 and stage_passes({"pp": 4}) == 4


def test_the_refusal_names_the_count_the_bound_and_the_way_out():
    with pytest.raises(ParsimError) as info:
        check_params(CLI, "network", {"pp": 8, "microbatches": 65536})
    assert str(info.value) == (
        "network: pp x microbatches = 8 x 65536 is 524,288, above the command line's budget of 65,536; "
        "add --no-limits if you mean it"
    )
    check_params(None, "network", {"pp": 8, "microbatches": 65536})  # None: no budget
    check_params(CLI, "network", {"pp": 64, "microbatches": 512})  # the largest published row passes


def test_a_huge_pipeline_is_refused_before_anything_is_built():
    started = time.monotonic()
    for kwargs in ({"device": "a100-80gb"}, {"cluster": "dgx-a100"}):
        with pytest.raises(ParsimError, match="above the command line's budget"):
            predict("network", dict(HUGE), **kwargs)
    assert time.monotonic() - started < 5  # building it took minutes and gigabytes


def test_the_app_budget_is_smaller_and_says_to_use_the_command_line():
    params = {**HUGE, "microbatches": 1024, "batch": 1024}  # 8,192 passes: fine on the command line
    assert APP.stage_passes < stage_passes(params) <= CLI.stage_passes
    with pytest.raises(ParsimError, match="above the app's budget of 4,096; run it from the command line"):
        predict("network", params, device="a100-80gb", budget=APP)


def test_the_command_line_refuses_in_one_line_and_no_limits_lifts_it(cli, monkeypatch):
    monkeypatch.setattr(budget, "CLI", attrs.evolve(CLI, stage_passes=16))
    args = ["predict", "network", "model=gpt2", "pp=4", "microbatches=8", "batch=8", "gpus=4", "train=true"]
    code, out, err = cli(*args, "--device", "a100-80gb")
    assert code == 2 and out == "" and err.strip().count("\n") == 0
    assert "pp x microbatches = 4 x 8 is 32, above the command line's budget of 16" in err
    code, out, _ = cli(*args, "--device", "a100-80gb", "--no-limits")
    assert code == 0 and "latency" in out


def test_a_split_search_counts_the_passes_of_every_fitting_split_first(monkeypatch):
    small = Budget("a test", 1, split_passes=10, kept_rows=1, workers=1, beyond="so")
    started = time.monotonic()
    with pytest.raises(ParsimError, match=r"splits: pp x microbatches summed over the \d+ fitting splits"):
        split_table({"model": "gpt3-175b", "batch": 1536, "nodes": 16}, "dgx-a100", budget=small)
    assert time.monotonic() - started < 5  # refused before a single split is predicted


@pytest.mark.slow
def test_one_app_url_cannot_take_the_server():
    """Regression: /explore?workload=network&pp=8&microbatches=65536&batch=65536 took 150 s and 5.7 GB."""
    from tests.apptest import app

    started = time.monotonic()
    at = app(
        "explore",
        query={
            "explore_device": "a100-80gb",
            "explore_workload": "network",
            "explore_network_model": "gpt3-1.3b",
            "explore_network_pp": "8",
            "explore_network_microbatches": "65536",
            "explore_network_batch": "65536",
        },
    )
    assert time.monotonic() - started < 60
    assert any("above the app's budget" in error.value for error in at.error), [e.value for e in at.error]


def test_a_sweep_refuses_absurd_workers_and_unbounded_memory_in_one_line(cli):
    base = ["sweep", "--set", "workload=relu", "--set", "device=t4"]
    code, _, err = cli(*base, "--grid", "workload.n=1e3,1e4", "--workers", "100000")
    assert code == 2 and "--workers is 100,000, above the command line's budget of 256" in err
    started = time.monotonic()
    code, _, err = cli(*base, "--grid", "workload.n=range:1:300000")  # rows kept in memory: no --out
    assert code == 2 and "is 299,999, above the command line's budget of 200,000" in err
    assert "--out writes them" in err and time.monotonic() - started < 5
