"""Scenario files: each shipped lesson loads, runs and plots; bad files get one clear line."""

from pathlib import Path

import pandas
import pytest

import parsim
from parsim import plots
from parsim.errors import ParsimError
from parsim.scenarios import (
    case_labels,
    load_scenario,
    loads_scenario,
    parse_values,
    resolve,
    retarget,
    run_scenario,
    scenario_paths,
)

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"
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


def test_crossovers_name_overtaking_and_falling_behind():
    # Before: plots had a second crossovers() that dropped "falls behind"; there is one now.
    from parsim.scenarios import crossovers

    series = {"cpu": ([1, 2, 3, 4], [5, 5, 5, 5]), "gpu": ([1, 2, 3, 4], [9, 4, 4, 6])}
    assert crossovers(series) == [(2, "gpu", "cpu"), (4, "cpu", "gpu")]
    assert crossovers({"only": ([1], [1])}) == []
    frame = pandas.DataFrame(
        {"case": ["cpu"] * 4 + ["gpu"] * 4, "x": [1, 2, 3, 4] * 2, "latency_s": [5] * 4 + [9, 4, 4, 6]}
    )
    frame.attrs["grid"] = ["x"]
    marked = [t.get_text() for t in parsim.plots.sweep(frame, x="x").axes[0].texts]
    assert marked == ["gpu wins from 2", "cpu wins from 4"]


def test_labels_name_their_cases_fields():
    text = """
title = "t"
lesson = "l"
[defaults]
workload = "data_parallel"
params = { model = "mlp", batch = 64, gpus = 2 }
device = "a100-80gb"
[[cases]]
label = "host over {link}, {model} x{gpus} on {device} with {host}"
[[cases]]
label = "ring over {link} {unknown} {"
params = { sync = "ring" }
link = "nvlink3"
"""
    scenario = loads_scenario(text)
    assert case_labels(scenario) == [
        "host over PCIe 4.0 x16, mlp x2 on A100 SXM4 80 GB with Xeon E5-2630 v3",
        "ring over NVLink 3 {unknown} {",  # unknown names and stray braces stay as written
    ]


def test_retarget_moves_a_lesson_to_other_hardware_sizes_and_ops():
    lesson = load_scenario(SCENARIOS / "gpu_offload_crossover.toml")
    moved = retarget(
        lesson,
        cpu="xeon-8480",
        gpu="h100-pcie",
        host="epyc-9654",
        params={"op": "sigmoid", "streams": 2},
        workloads={"relu": "sigmoid"},
        values=[10, 20],
    )
    cases = [resolve(moved, case) for case in moved.cases]
    assert [(c.workload, c.device, c.host) for c in cases] == [
        ("sigmoid", "xeon-8480", None),
        ("offload", "h100-pcie", "epyc-9654"),
        ("sigmoid", "h100-pcie", "epyc-9654"),
    ]
    assert cases[1].params == {"op": "sigmoid", "streams": 2}  # only the offload takes op and streams
    assert cases[0].params == {} and moved.sweep.values == [10, 20]
    assert case_labels(moved)[1] == "GPU: H2D + sigmoid + D2H (H100 PCIe 80 GB)"
    # the NVLink of a ring case follows the GPU; cases that became identical are kept once
    scaling = load_scenario(SCENARIOS / "data_parallel_scaling.toml")
    assert [resolve(s, c).link for s in [retarget(scaling, gpu="h100-sxm")] for c in s.cases] == [
        None,
        "nvlink4",
    ]
    assert [resolve(s, c).link for s in [retarget(scaling, gpu="t4")] for c in s.cases] == [None, None]
    serving = retarget(load_scenario(SCENARIOS / "batching_latency_vs_throughput.toml"), gpu="t4")
    assert case_labels(serving) == ["Tesla T4, float32", "Tesla T4, float16 tensor cores"]
