"""Sweeps under misuse and at scale (issue 12): every mistake refused before the work, in one line.

Measuring a device given as a file; outputs of another sweep or of a sweep still running;
values that would make every row an error; grids too large to hold, streamed and journaled
chunk by chunk; workers that die with their sweep; a resumed sweep that says so.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas
import psutil
import pytest

from parsim.base.errors import ParsimError
from parsim.base.units import parse_value
from parsim.studies.scenarios import parse_values
from parsim.studies.sweeps import grid as grid_module
from parsim.studies.sweeps.api import sweep
from parsim.studies.sweeps.grid import MAX_POINTS, make_grid, point_id
from parsim.studies.sweeps.store import Store
from parsim.studies.sweeps.tables import write_chunks
from tests.processes import outliving

ROOT = Path(__file__).resolve().parents[1]
RELU = ["--set", "workload=relu", "--set", "device=t4"]


def _one_line_error(code: int, err: str, expected: str) -> None:
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1 and expected in err, err
    assert "Traceback" not in err


# A. measuring a device given as a hardware file; a sweep whose measurements all failed


def _device_file(cli, tmp_path: Path) -> Path:
    code, text, _ = cli("hardware", "show", "laptop-4c-avx2", "--toml")
    assert code == 0
    path = tmp_path / "this-machine.toml"
    path.write_text(text.replace('id = "laptop-4c-avx2"', 'id = "this-machine"'))
    assert 'id = "this-machine"' in path.read_text()
    return path


def test_measuring_a_device_given_as_a_file(cli, tmp_path):
    device, out = _device_file(cli, tmp_path), tmp_path / "m.csv"
    code, _, err = cli(
        "sweep",
        "--set",
        "workload=vector_add",
        "--set",
        f"device={device}",
        "--grid",
        "workload.n=1e4",
        "--measure",
        "--out",
        str(out),
    )
    assert code == 0, err
    row = pandas.read_csv(out).iloc[0]
    assert row["device"] == "this-machine" and row["measured_s"] > 0
    assert pandas.isna(row.get("measure_note")) or "unknown processor" not in str(row["measure_note"])
    # as a grid value too: the file's CPU is measured with the CPU backend
    frame = sweep({"workload": "vector_add"}, {"workload.n": [1e4], "device": [str(device)]}, measure=True)
    assert frame["measured_s"].iloc[0] > 0


def test_a_sweep_whose_every_measurement_failed_exits_2(cli, tmp_path, monkeypatch):
    import parsim.measure

    def broken(*args, **kwargs):
        raise ParsimError("no timer on this machine")

    monkeypatch.setattr(parsim.measure, "measure", broken)
    out = tmp_path / "m.csv"
    code, stdout, err = cli(
        "sweep",
        "--set",
        "workload=vector_add",
        "--set",
        "device=laptop-4c-avx2",
        "--grid",
        "workload.n=1e3,1e4",
        "--measure",
        "--out",
        str(out),
    )
    _one_line_error(code, err, "none of the 2 points could be measured: no timer on this machine")
    assert "2 points (0 with errors)" in stdout and len(pandas.read_csv(out)) == 2  # the rows are kept


# B. an output that belongs to another sweep


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_an_output_of_another_workload_is_refused(cli, tmp_path, suffix):
    out = tmp_path / f"s{suffix}"
    code, _, err = cli(
        "sweep",
        *RELU[:1],
        "workload=vector_add",
        *RELU[2:],
        "--grid",
        "workload.n=1e3,1e4",
        "--out",
        str(out),
    )
    assert code == 0, err
    before = out.read_bytes()
    code, _, err = cli(
        "sweep",
        "--set",
        "workload=matmul",
        "--set",
        "device=t4",
        "--grid",
        "workload.m=64,128",
        "--grid",
        "workload.n=64",
        "--grid",
        "workload.k=64",
        "--out",
        str(out),
    )
    _one_line_error(code, err, f"{out} holds a sweep of vector_add, this one is of matmul")
    assert out.read_bytes() == before and not Path(f"{out}.journal.jsonl").exists()


def test_an_output_over_other_fields_or_not_a_sweep_is_refused(cli, tmp_path):
    out = tmp_path / "s.csv"
    out.write_text("a,b\n")
    code, _, err = cli("sweep", *RELU, "--grid", "workload.n=1e3", "--out", str(out))
    _one_line_error(code, err, "is not a parsim sweep output (no 'point_id' column; columns: a, b)")
    assert out.read_text() == "a,b\n"
    out.unlink()
    assert cli("sweep", *RELU, "--grid", "workload.n=1e3", "--out", str(out))[0] == 0
    code, _, err = cli(
        "sweep", *RELU, "--grid", "workload.n=1e3", "--grid", "device.clock_Hz=1e9", "--out", str(out)
    )
    _one_line_error(code, err, "this one varies device.clock_Hz, which its columns lack")
    wide = tmp_path / "w.csv"
    args = [*RELU, "--grid", "workload.n=1e3"]
    assert cli("sweep", *args, "--grid", "device.clock_Hz=1e9", "--out", str(wide))[0] == 0
    code, _, err = cli("sweep", *args, "--out", str(wide))
    _one_line_error(code, err, "its columns device.clock_Hz are not among this one's")


# C. scenario sweep values that are empty


@pytest.mark.parametrize("values", ["[]", '""'])
def test_a_scenario_with_empty_sweep_values_is_one_line(cli, tmp_path, values):
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        f'title = "t"\nlesson = "l"\n[defaults]\nworkload = "relu"\ndevice = "t4"\n[[cases]]\n'
        f'[sweep]\nparam = "n"\nvalues = {values}\n'
    )
    code, out, err = cli("sweep", str(scenario), "--grid", "workload.n=1e3")
    _one_line_error(code, err, "'sweep.values'")
    assert out == ""  # refused before the progress bar


# D. mistakes that made every row an error, or a traceback after the work


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--grid", "method=magic"], "'method' must be one of engine, analytic: 'magic'"),
        (["--grid", "mode=foo"], "'mode' must be one of sisd, simd, mimd, mimd+simd, simt: 'foo'"),
        (["--grid", "overlap=both"], "'overlap' must be one of roofline, serial: 'both'"),
        (["--set", "method=magic"], "'method' must be one of engine, analytic: 'magic'"),
        (["--grid", "workload=vectr_add"], "unknown workload 'vectr_add'; did you mean vector_add?"),
        (["--grid", "device=h100"], "'device': unknown processor 'h100'; closest: h100-nvl, h100-pcie"),
        (["--grid", "host=nope"], "'host': unknown processor 'nope'"),
        (["--grid", "link=nope"], "'link': unknown link 'nope'"),
        (["--grid", "gpus=1.5"], "'gpus' must be a whole number: 1.5"),
        (["--grid", "workload.n=foo:1:2"], "malformed values for 'workload.n': 'foo:1:2'"),
        (["--grid", "workload.n=1e3,foo"], "relu: 'n' input should be a valid integer"),
        (["--grid", "workload.n=2.5"], "got a number with a fractional part: 2.5"),
        (["--grid", "workload.dtype=float99"], "relu: 'dtype' input should be 'float16'"),
        (["--grid", "workload.size=1"], "unknown field 'workload.size': relu has no parameter 'size'"),
        (["--dask", "nonsense"], "'--dask' must be 'local' or a scheduler address such as tcp://host:8786"),
        (
            ["--y", "bogus", "--plot", "p.png"],
            "'--y' must be a column of this sweep holding numbers: 'bo",
        ),
        (
            ["--x", "device", "--plot", "p.png"],
            "'--x' must be a column of this sweep holding numbers: 'de",
        ),
        (["--hue", "case,colour", "--plot", "p.png"], "'--hue' must be a column of this sweep: 'colour'"),
        (["--y", "samples_per_s"], "'--y' must be a column"),  # relu counts no samples
    ],
)
def test_mistakes_are_refused_before_sweeping(cli, tmp_path, monkeypatch, args, expected):
    monkeypatch.chdir(tmp_path)
    grid = [] if "--grid" in args else ["--grid", "workload.n=1e3,1e4"]
    code, out, err = cli("sweep", *RELU, *grid, *args, "--out", "s.csv")
    _one_line_error(code, err, expected)
    assert out == "" and os.listdir(tmp_path) == []  # nothing computed, nothing written


def test_plot_columns_that_exist_are_drawn(cli, tmp_path):
    png, out = tmp_path / "p.png", tmp_path / "s.parquet"
    code, _, err = cli(
        "sweep",
        *RELU[:2],
        "--grid",
        "workload.n=logspace:1e3:1e7:5",
        "--grid",
        "device=t4,a100-80gb",
        "--x",
        "workload.n",
        "--y",
        "throughput_per_s",
        "--hue",
        "device",
        "--out",
        str(out),
        "--plot",
        str(png),
    )
    assert code == 0 and png.stat().st_size > 0, err


def test_a_plot_of_nothing_but_errors_is_one_line(cli, tmp_path):
    out, png = tmp_path / "e.csv", tmp_path / "e.png"
    code, stdout, err = cli(
        "sweep", *RELU, "--grid", "workload.n=1e13,2e13", "--out", str(out), "--plot", str(png)
    )
    _one_line_error(code, err, "'--plot': nothing to draw, every point has an error (the first: relu needs")
    assert "2 points (2 with errors)" in stdout and len(pandas.read_csv(out)) == 2 and not png.exists()


def test_a_second_sweep_on_the_same_output_is_refused(cli, tmp_path):
    out = tmp_path / "s.csv"
    running = Store(out)  # holds the journal's lock, as a sweep in progress does
    try:
        code, _, err = cli("sweep", *RELU, "--grid", "workload.n=1e3", "--out", str(out))
        _one_line_error(code, err, f"another sweep is writing {out}")
    finally:
        running.close(True)
    assert cli("sweep", *RELU, "--grid", "workload.n=1e3", "--out", str(out))[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.csv"]  # no journal, no temporary left


@pytest.mark.slow  # two processes racing for one output
def test_two_sweep_processes_on_one_output(tmp_path):
    out = tmp_path / "s.csv"
    command = [
        sys.executable,
        "-m",
        "parsim",
        "sweep",
        *RELU,
        "--grid",
        "workload.n=range:1:15001",  # ~6 s of engine points
        "--out",
        str(out),
    ]
    first = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    journal = Path(f"{out}.journal.jsonl")
    deadline = time.monotonic() + 30
    while not (journal.exists() and journal.stat().st_size) and first.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    second = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    overlapped = first.poll() is None
    first.wait(timeout=300)
    assert first.returncode == 0, first.stderr.read()
    if overlapped:  # the second ran while the first did: refused in one line, touching nothing
        assert second.returncode == 2 and f"another sweep is writing {out}" in second.stderr
        assert second.stderr.count("\n") == 1 and "Traceback" not in second.stderr
    frame = pandas.read_csv(out)
    assert len(frame) == 15_000 and frame["point_id"].is_unique
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.csv"]  # no journal, no temporary left


# E. huge sweeps: limits, lazy grids, rows journaled chunk by chunk


@pytest.mark.parametrize(
    ("grid", "expected"),
    [
        (["workload.n=range:1:1e15"], "values 'range:1:1e15' hold 999,999,999,999,999 points"),
        (
            ["workload.n=linspace:1:1e7:1e8"],
            "hold 100,000,000 points, more than a sweep's limit of 10,0",
        ),
        (["workload.n=range:0:20000", "device.clock_Hz=range:1:1001"], "the sweep has 20,000,000 points"),
    ],
)
def test_grids_above_the_limit_are_refused_at_once(cli, grid, expected):
    start = time.perf_counter()
    code, _, err = cli("sweep", *RELU, *[arg for g in grid for arg in ("--grid", g)])
    _one_line_error(code, err, expected)
    assert time.perf_counter() - start < 5  # counted, never built


def test_the_limit_counts_cases_and_is_documented():
    assert MAX_POINTS == 10_000_000
    scenario = ROOT / "parsim" / "lessons" / "gpu_offload_crossover.toml"  # three cases
    with pytest.raises(ParsimError, match=r"12,000,000 points \(4,000,000 for each of 3 cases\)"):
        sweep(scenario, {"workload.n": "range:1:4000001"})


def test_grids_are_lazy_and_match_the_scenario_values():
    import tracemalloc

    tracemalloc.start()
    grid = make_grid({"workload.n": "range:1:10000001", "device": "t4,h100-sxm"})
    first = next(grid.chunks())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert grid.size == 20_000_000 and len(first) == grid_module.CHUNK and peak < 40e6
    assert first[:3] == [
        {"workload.n": 1, "device": "t4"},
        {"workload.n": 1, "device": "h100-sxm"},
        {"workload.n": 2, "device": "t4"},
    ]
    for spec in [
        "linspace:1:1000:77",
        "logspace:1e3:1e9:25",
        "logspace:1:1e3:50",
        "linspace:0.5:3:7",
        "range:100:1:-3",
        "linspace:10:1:20",
        "logspace:1e3:1e21:5",
        "1,2.5,x",
    ]:
        expected = [parse_value(v) if isinstance(v, str) else v for v in parse_values(spec)]
        values = list(make_grid({"workload.n": spec}).values[0])
        assert values == expected and [type(v) for v in values] == [type(v) for v in expected], spec


def test_point_ids_are_those_of_earlier_versions():
    base = {"workload": "relu", "device": "t4", "params": {"dtype": "float16"}}
    point = {"workload.n": 1000, "device": "a100-80gb"}
    fixed = json.dumps(base, sort_keys=True, default=repr)
    text = json.dumps(["case", fixed, sorted((k, repr(v)) for k, v in point.items())])
    assert point_id("case", point, base) == hashlib.sha1(text.encode()).hexdigest()[:16]


def test_a_large_sweep_is_journaled_chunk_by_chunk_and_resumes(tmp_path, monkeypatch):
    # chunks of 1,000 points (50,000 in use): the same journal and resume, 20x fewer points to predict
    monkeypatch.setattr(grid_module, "CHUNK", 1_000)
    out = tmp_path / "big.jsonl"
    base = {"workload": "vector_add", "device": "h100-sxm", "method": "analytic"}
    grid = {"workload.n": "range:1:10001"}
    calls = []

    def stop_after_two_chunks(done, total):
        calls.append(done)
        if done >= 2 * grid_module.CHUNK:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(base, grid, out=out, progress=stop_after_two_chunks)
    assert calls[:3] == [0, grid_module.CHUNK, 2 * grid_module.CHUNK]  # progress as chunks finish
    journal = Path(f"{out}.journal.jsonl")
    assert sum(1 for line in journal.open() if line.strip()) == 2 * grid_module.CHUNK
    seen = []
    frame = sweep(base, grid, out=out, progress=lambda done, total: seen.append(total))
    assert seen[0] == 10_000 - 2 * grid_module.CHUNK and frame.attrs["resumed"] == 2 * grid_module.CHUNK
    saved = pandas.read_json(out, lines=True, dtype={"point_id": str})
    assert len(saved) == 10_000 and saved["point_id"].is_unique and not journal.exists()
    assert sorted(saved["workload.n"]) == list(range(1, 10_001))


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_saved_rows_keep_every_digit(tmp_path, suffix):
    out = tmp_path / f"d{suffix}"
    base = {"workload": "saxpy", "device": "a100-80gb", "method": "analytic"}
    frame = sweep(base, {"workload.n": "logspace:1e3:1e9:40"}, out=out)  # the vectorised path
    saved = {".csv": pandas.read_csv, ".parquet": pandas.read_parquet}.get(
        suffix, lambda p: pandas.read_json(p, lines=True, dtype={"point_id": str}, precise_float=True)
    )(out)
    mine, theirs = frame.set_index("workload.n"), saved.set_index("workload.n")
    for column in ("latency_s", "throughput_per_s", "bytes_per_s", "memory_s"):
        assert (mine[column] == theirs.loc[mine.index, column]).all(), column


def test_parquet_chunks_of_different_types_share_one_schema(tmp_path):
    out = tmp_path / "t.parquet"
    chunks = [
        pandas.DataFrame({"point_id": ["a"], "n": [1], "link": [None]}),
        pandas.DataFrame({"point_id": ["b"], "n": [2.5], "link": ["pcie"], "extra": ["x"]}),
    ]
    write_chunks(out, iter(chunks), ["point_id", "n", "link", "extra"])
    frame = pandas.read_parquet(out)
    assert frame["n"].tolist() == [1.0, 2.5] and frame["link"].tolist()[1] == "pcie"
    assert pandas.isna(frame["extra"][0]) and frame["extra"][1] == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]


@pytest.mark.slow  # a million points through the CLI, in a fresh process
def test_a_million_point_sweep_to_a_file_stays_small(tmp_path):
    out = tmp_path / "big.csv"
    command = (
        "import sys; from parsim.cli.main import main; sys.argv = ['parsim', 'sweep', '--set', "
        "'workload=vector_add', '--set', 'device=h100-sxm', '--set', 'method=analytic', '--grid', "
        f"'workload.n=range:1:1000001', '--out', {str(out)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        # VmHWM is this process's own peak: ru_maxrss would carry over the forking pytest's (Linux
        # keeps the parent's high-water mark across fork and exec)
        "print(next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')) / 1024)"
    )
    done = subprocess.run(
        [sys.executable, "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert "1000000 points (0 with errors)" in done.stdout, done.stderr
    peak_mb = float(done.stdout.strip().splitlines()[-1])
    assert peak_mb < 600, peak_mb
    assert sum(1 for _ in out.open()) == 1_000_001


# F. workers die with their sweep


@pytest.mark.slow  # seconds: a real sweep killed with kill -9, then resumed
def test_workers_exit_when_the_sweep_is_killed_and_the_rerun_loses_nothing(tmp_path):
    out = tmp_path / "k.parquet"
    command = [
        sys.executable,
        "-m",
        "parsim",
        "sweep",
        *RELU,
        "--grid",
        "workload.n=range:1:30001",
        "--workers",
        "2",
        "--out",
        str(out),
    ]
    parent = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    process, deadline = psutil.Process(parent.pid), time.monotonic() + 60
    journal = Path(f"{out}.journal.jsonl")
    while len(process.children()) < 2 or not (journal.exists() and journal.stat().st_size > 10_000):
        assert parent.poll() is None and time.monotonic() < deadline, "the sweep did not start its workers"
        time.sleep(0.1)
    children = process.children(recursive=True)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()

    assert not outliving(children), "workers outlived their sweep"
    rerun = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0 and "resumed" in rerun.stderr, rerun.stderr
    frame = pandas.read_parquet(out)
    assert len(frame) == 30_000 and frame["point_id"].is_unique and frame["error"].fillna("").eq("").all()


# G. a resumed sweep says so


def test_a_resumed_sweep_says_what_it_kept(cli, tmp_path, caplog):
    out = tmp_path / "s.csv"
    assert cli("sweep", *RELU, "--grid", "workload.n=1e3,1e4", "--out", str(out))[0] == 0
    code, stdout, err = cli("sweep", *RELU, "--grid", "workload.n=1e3,1e4,1e5", "--out", str(out))
    assert code == 0 and "3 points (0 with errors)" in stdout
    assert f"resumed {out}: kept 2 rows from an earlier run" in err
    with caplog.at_level(logging.INFO, logger="parsim.studies.sweeps"):
        frame = sweep({"workload": "relu", "device": "t4"}, {"workload.n": [1e3, 1e4, 1e5, 1e6]}, out=out)
    assert frame.attrs["resumed"] == 3 and f"resumed {out}: kept 3 rows" in caplog.text
