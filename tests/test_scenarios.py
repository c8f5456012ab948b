"""Scenario files: each shipped lesson loads, runs and plots; bad files get one clear line."""

from pathlib import Path

import pytest

from parsim import plots
from parsim.errors import ParsimError
from parsim.scenarios import load_scenario, loads_scenario, parse_values, run_scenario, scenario_paths

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = {
    "flynn_vector_add",
    "gpu_offload_crossover",
    "pcie_pinned_vs_pageable",
    "streams_overlap",
    "matmul_roofline",
    "conv3x3",
}


def test_required_scenarios_exist():
    assert {p.stem for p in scenario_paths(ROOT / "scenarios")} >= REQUIRED


@pytest.mark.parametrize("path", scenario_paths(ROOT / "scenarios"), ids=lambda p: p.stem)
def test_scenario_runs_and_plots(path):
    scenario = load_scenario(path)
    assert scenario.title and len(scenario.lesson) > 200
    result = run_scenario(scenario)
    assert len(result.labels) == len(scenario.cases) >= 2
    assert all(r.prediction.latency_s > 0 for r in result.results)
    figure = plots.scenario(result)
    assert figure.axes


def test_flynn_ordering():
    result = run_scenario(load_scenario(ROOT / "scenarios/flynn_vector_add.toml"))
    latency = {r.label.split(":")[0]: r.prediction.latency_s for r in result.results}
    assert latency["SISD"] > latency["SIMD"] >= latency["MIMD+SIMD"] > latency["SIMT"]


def test_offload_crossover_is_found():
    result = run_scenario(load_scenario(ROOT / "scenarios/gpu_offload_crossover.toml"))
    # small vectors: the CPU wins; the resident GPU eventually wins; the crossover is reported
    first_value = result.results[0].value
    at_small = [r for r in result.results if r.value == first_value]
    assert min(at_small, key=lambda r: r.prediction.latency_s).label.startswith("CPU")
    assert result.crossovers()


def test_streams_shorten_the_offload():
    result = run_scenario(load_scenario(ROOT / "scenarios/streams_overlap.toml"))
    latencies = [r.prediction.latency_s for r in result.results]
    assert latencies[1] < latencies[0] and latencies[2] < latencies[1]


def test_parse_values():
    assert parse_values("linspace:1:3:3") == [1, 2, 3]
    assert parse_values("linspace:0.5:1.5:3") == [0.5, 1.0, 1.5]
    assert parse_values("logspace:1e3:1e5:3") == [1000, 10000, 100000]
    assert parse_values("logspace:1e3:1e4:3")[1] == 3162
    assert parse_values("range:1:4") == [1, 2, 3]
    assert parse_values("a,b") == ["a", "b"]
    assert parse_values([1, 2]) == [1, 2]
    for bad in ("logspace:1e9:1e3:x", "linspace:1:2", "range:1", "logspace:0:10:3"):
        with pytest.raises(ParsimError, match="malformed values"):
            parse_values(bad)


GOOD = """
title = "t"
lesson = "l"
[defaults]
workload = "vector_add"
device = "laptop-4c-avx2"
[[cases]]
mode = "sisd"
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD + "colour = 3\n", "'cases.0.colour' extra inputs are not permitted: 3"),
        ("colour = 3\n" + GOOD, "'colour' extra inputs are not permitted"),
        (GOOD.replace('mode = "sisd"', 'mode = "sisd"\ndevise = "x"'), "'cases.0.devise'"),
        (GOOD.replace('title = "t"', "title = = 3"), "malformed TOML"),
        (GOOD.replace('workload = "vector_add"', ""), "'cases.0.workload' is not set"),
        ('title = "t"\nlesson = "l"\ncases = []\n', "'cases'"),
    ],
)
def test_bad_scenarios(text, expected):
    with pytest.raises(ParsimError) as info:
        loads_scenario(text, source="s.toml")
    assert expected in str(info.value) and str(info.value).startswith("s.toml: ")
