"""Issue 23's "done when": random input at every entry point — the CLI's commands with random
parameters and options, every app page with random URL parameters — never takes more than a
bounded time, never prints a traceback, says what is wrong in at most one ``error:`` line with exit
code 0 or 2, and touches no file but the one it was told to write.

hypothesis is derandomised by the project profile, so a run is repeatable; the commands that
measure or calibrate this machine are left out (they take seconds by design and are bounded by
their own budget options, tested in ``test_measure_hardening.py``).
"""

from __future__ import annotations

import contextlib
import io
import os
import resource
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsim.workloads.registry import WORKLOADS

pytestmark = pytest.mark.slow

SECONDS_PER_CALL = 60.0  # the slowest legitimate call of these (a 64-GPU 3D step) takes ~10 s here
MEMORY_CEILING_B = 6 * 2**30  # the whole test process, after every example

FIELDS = sorted({field for definition in WORKLOADS.values() for field in definition.params.model_fields})
WORDS = [
    "h100-sxm",
    "t4",
    "dgx-a100",
    "a100-80gb",
    "nvlink4",
    "ib-hdr",
    "gpt3-1.3b",
    "llama-2-7b",
    "resnet50",
]
values = st.one_of(
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["0", "1", "-1", "1e3", "1e9", "65536", "true", "false", "nan", "inf", "", "١٠٠٠"]),
    st.sampled_from(WORDS),
    st.text(min_size=0, max_size=12),
    st.sampled_from(["range:1:1e9", "linspace:1:inf:3", "logspace:0:1e300:5", "a,b,c", "x" * 300]),
)
assignments = st.lists(
    st.tuples(st.sampled_from(FIELDS), values).map(lambda kv: f"{kv[0]}={kv[1]}"), max_size=5
)
OPTIONS = {
    "predict": ["--device", "--cluster", "--host", "--link", "--mode", "--method", "--gpus", "--plot"],
    "sweep": ["--grid", "--set", "--method", "--workers", "--out", "--plot", "--x", "--y"],
    "splits": ["--cluster", "--micro-batch", "--method"],
    "hardware show": [],
    "run": ["--plot"],
    "validate": ["--load"],
}


@st.composite
def commands(draw) -> list[str]:
    command = draw(st.sampled_from(sorted(OPTIONS)))
    args = command.split()
    if command == "predict":
        args.append(draw(st.sampled_from([*WORKLOADS, "nonsense"])))
    elif command == "hardware show":
        args.append(draw(st.sampled_from([*WORDS, "x.toml", "../x.toml"])))
    elif command == "run":
        args.append(draw(st.sampled_from(["flynn_vector_add", "flyn_vector_add", "no-such.toml", "x" * 300])))
    if command in ("predict", "splits"):
        args += draw(assignments)
    for option in draw(st.lists(st.sampled_from(OPTIONS[command] or ["--json"]), max_size=3, unique=True)):
        if option in ("--out", "--plot", "--load"):
            suffix = {"--out": ".csv", "--plot": ".png", "--load": ".json"}[option]
            args += [option, draw(st.sampled_from([f"named{suffix}", f"missing/named{suffix}", "x" * 300]))]
        elif option in ("--grid", "--set"):
            args += [
                option,
                f"{draw(st.sampled_from(['workload', 'device', 'workload.n', 'mode']))}={draw(values)}",
            ]
        elif option == "--json":
            args.append(option)
        else:
            args += [option, draw(values)]
    return args


def run_cli(args: list[str]) -> tuple[int, str, str]:
    from parsim.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["parsim", *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        sys.argv = argv
    return code, out.getvalue(), err.getvalue()


def files_under(folder: Path) -> set[str]:
    return {str(path.relative_to(folder)) for path in folder.rglob("*")}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=commands())
def test_random_commands_answer_in_one_line_in_bounded_time(args, workspace, monkeypatch):
    monkeypatch.chdir(workspace)
    before = files_under(workspace)
    started = time.monotonic()
    code, _, err = run_cli(args)
    elapsed = time.monotonic() - started
    assert code in (0, 2), (args, code, err)
    assert "Traceback" not in err, (args, err)
    assert len([line for line in err.splitlines() if line.startswith("error:")]) <= 1, (args, err)
    assert elapsed < SECONDS_PER_CALL, (args, elapsed)
    named = {value for value in args if value.endswith((".csv", ".png"))}
    made = files_under(workspace) - before
    assert {path for path in made if path not in named and not path.startswith(tuple(named))} == set(), args
    for path in made:  # what it was told to write: gone again, so the next example starts the same
        target = workspace / path
        if target.is_file():
            target.unlink()
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 < MEMORY_CEILING_B


def page_keys() -> dict[str, list[str]]:
    """URL parameters of each page: its widgets' keys, and every workload field's on Explore."""
    explore = ["explore_device", "explore_workload", "explore_link", "explore_host", "explore_mode"]
    explore += [f"explore_{name}_{field}" for name, d in WORKLOADS.items() for field in d.params.model_fields]
    return {
        "home": ["present"],
        "explore": explore,
        "compare": [
            "compare_cpu",
            "compare_gpu",
            "compare_kind",
            "compare_n",
            "compare_op",
            "compare_llm_model",
        ],
        "scale": [
            "scale_batch",
            "scale_gpu",
            "scale_gpus",
            "scale_host",
            "scale_model",
            "scale_scaling",
            "scale_tab",
        ],
        "measure": ["measure_backend", "measure_mode", "measure_size", "measure_workload", "shipped_name"],
        "learn": ["learn_lesson", "teach_flynn_n", "teach_flynn_step"],
    }


@st.composite
def pages(draw) -> tuple[str, dict[str, str]]:
    keys = page_keys()
    page = draw(st.sampled_from(sorted(keys)))
    chosen = draw(st.lists(st.sampled_from(keys[page]), max_size=4, unique=True))
    return page, {key: draw(values) for key in chosen}


@settings(max_examples=40, deadline=None)
@given(request=pages())
def test_random_url_parameters_never_break_a_page(request):
    from streamlit.testing.v1 import AppTest

    from tests.apptest import ROOT, VIEWS

    page, query = request
    started = time.monotonic()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=SECONDS_PER_CALL)
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    if page != "home":
        at.switch_page(str(VIEWS / f"{page}.py")).run()
    assert not at.exception, (page, query, at.exception[0].value)
    assert time.monotonic() - started < SECONDS_PER_CALL, (page, query)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 < MEMORY_CEILING_B
    assert os.getcwd()  # the page did not change the server's working folder away
