"""Parameter sweeps: grids, tidy rows, errors as rows, outputs that resume, executors, fast path."""

import json
import math
from pathlib import Path

import pandas
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import parsim
from parsim import plots
from parsim.base.errors import ParsimError
from parsim.studies.sweeps.api import dask_map, sweep
from parsim.studies.sweeps.fast import fast_rows
from parsim.studies.sweeps.grid import make_grid, parse_grid_options

ROOT = Path(__file__).resolve().parents[1]
BASE = {"workload": "vector_add", "device": "h100-sxm"}


def test_top_level_api():
    assert parsim.sweep is sweep and parsim.plots is plots


def test_grid_values_and_combinations():
    grid = make_grid({"workload.n": "logspace:1e3:1e5:3", "device": "t4,v100-pcie"})
    assert grid.fields == ("workload.n", "device") and grid.log_fields == {"workload.n"}
    assert len(grid.points()) == 6 and grid.points()[0] == {"workload.n": 1000, "device": "t4"}
    zipped = make_grid({"workload.n": [1, 2], "device": ["t4", "v100-pcie"]}, zipped=True)
    assert zipped.points() == [{"workload.n": 1, "device": "t4"}, {"workload.n": 2, "device": "v100-pcie"}]
    assert make_grid({"workload.n": "range:1:4"}).values == ((1, 2, 3),)
    assert parse_grid_options(["workload.n=1,2", "device=t4"]) == {"workload.n": "1,2", "device": "t4"}


@pytest.mark.parametrize(
    ("grid", "zipped", "expected"),
    [
        ({}, False, "grid is empty"),
        ({"workload.n": "logspace:1e9:1e3:x"}, False, "malformed values"),
        ({"colour": [1]}, False, "unknown field 'colour'"),
        ({"device.memory.bandwith_Bps": [1]}, False, "MemorySpec has no 'bandwith_Bps'"),
        ({"workload.n": [1, 2], "device": ["t4"]}, True, "as many"),
    ],
)
def test_bad_grids(grid, zipped, expected):
    with pytest.raises(ParsimError, match=None) as info:
        sweep(BASE, grid, zip=zipped)
    assert expected in str(info.value)


def test_tidy_rows_with_exact_grid_columns_and_prediction_fields():
    frame = sweep(
        "gpu_offload_crossover",
        {"workload.n": [1e3, 1e6], "device": ["v100-pcie", "h100-pcie"]},
    )
    assert len(frame) == 3 * 2 * 2
    for column in (
        "workload.n",
        "device",
        "case",
        "latency_s",
        "throughput_per_s",
        "flops_per_s",
        "bytes_per_s",
        "bottleneck",
        "compute_s",
        "memory_s",
        "transfer_s",
        "overhead_s",
        "error",
    ):
        assert column in frame.columns
    at = frame[(frame["workload.n"] == 1e6) & (frame["device"] == "h100-pcie")].set_index("case")
    resident = at.loc["GPU: data already resident (H100 PCIe 80 GB)"]  # its own GPU (issue 27)
    assert resident["latency_s"] == pytest.approx(
        parsim.predict("relu", {"n": 1e6}, device="h100-pcie").latency_s
    )
    # the CPU baseline keeps its CPU when the grid sweeps GPUs
    baseline = at.loc["CPU: relu, all cores (Xeon E5-2630 v3)"]
    assert baseline["device_used"] == "xeon-e5-2630v3"
    assert baseline["latency_s"] == pytest.approx(
        parsim.predict("relu", {"n": 1e6}, device="xeon-e5-2630v3").latency_s
    )


def test_invalid_points_become_error_rows():
    frame = sweep(BASE, {"workload.n": [1e3, 1e13], "mode": ["simt"]})
    errors = frame.set_index("workload.n")["error"]
    assert errors[1e3] == "" and "needs" in errors[1e13] and "h100-sxm has 80.0 GiB" in errors[1e13]


def test_hardware_fields_change_the_prediction():
    frame = sweep(BASE, {"workload.n": [1e8], "device.memory.bandwidth_Bps": [1e12, 2e12]})
    slow, fast = frame.sort_values("device.memory.bandwidth_Bps")["latency_s"]
    assert slow / fast == pytest.approx(2, rel=0.05)


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_outputs_and_resume(tmp_path, suffix):
    out = tmp_path / f"s{suffix}"
    grid = {"workload.n": "logspace:1e3:1e7:9"}
    stop_after = 4

    def interrupt(done, total):
        if done >= stop_after:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(BASE, grid, out=out, progress=interrupt)
    seen = []
    frame = sweep(BASE, grid, out=out, progress=lambda done, total: seen.append(total))
    assert len(frame) == 9 and set(frame["workload.n"]) == set(make_grid(grid).values[0])
    assert seen[0] == 9 - stop_after  # only the missing points were computed
    saved = {
        ".csv": pandas.read_csv,
        ".parquet": pandas.read_parquet,
        ".jsonl": lambda p: pandas.read_json(p, lines=True),
    }[suffix](out)
    assert len(saved) == 9 and not (tmp_path / f"s{suffix}.journal.jsonl").exists()
    again = []
    sweep(BASE, grid, out=out, progress=lambda done, total: again.append(total))
    assert again == [0]


def test_bad_outputs():
    with pytest.raises(ParsimError, match="must end in"):
        sweep(BASE, {"workload.n": [1]}, out="x.xlsx")
    with pytest.raises(ParsimError, match="does not exist"):
        sweep(BASE, {"workload.n": [1]}, out="/no/such/folder/x.csv")


def _latencies(frame):
    return frame.sort_values("point_id").set_index("point_id")["latency_s"]


def test_process_pool_and_map_callables_give_the_serial_rows():
    grid = {"workload.n": "logspace:1e3:1e8:12", "device": ["t4", "a100-80gb"], "workload": ["relu", "saxpy"]}
    serial = _latencies(sweep(None, grid | {"mode": ["simt"]}))
    pooled = _latencies(sweep(None, grid | {"mode": ["simt"]}, workers=2))
    mapped = _latencies(sweep(None, grid | {"mode": ["simt"]}, workers=map))
    pandas.testing.assert_series_equal(serial, pooled)
    pandas.testing.assert_series_equal(serial, mapped)


@pytest.mark.slow  # starts a Dask cluster
def test_dask_local_cluster_gives_the_serial_rows():
    grid = {"workload.n": "logspace:1e3:1e8:10", "device": ["t4", "h100-sxm"]}
    serial = _latencies(sweep({"workload": "relu"}, grid))
    mapper, close = dask_map("local", workers=2)
    try:
        distributed = _latencies(sweep({"workload": "relu"}, grid, workers=mapper))
    finally:
        close()
    pandas.testing.assert_series_equal(serial, distributed)


@pytest.mark.slow  # starts a Dask cluster
def test_dask_address_that_does_not_answer():
    with pytest.raises(ParsimError, match=r"no Dask scheduler answered at tcp://127.0.0.1:9 within 1 s"):
        dask_map("tcp://127.0.0.1:9", timeout_s=1)


FAST_COLUMNS = ("latency_s", "throughput_per_s", "flops", "bytes", "transfer_bytes", "compute_s", "memory_s")
FAST_COLUMNS += ("transfer_s", "overhead_s")


@settings(max_examples=60, deadline=None)
@given(
    workload=st.sampled_from(["vector_add", "saxpy", "relu", "sigmoid", "reduce_sum", "copy", "matmul"]),
    sizes=st.lists(st.integers(1, 10**9), min_size=1, max_size=5),
    device=st.sampled_from(["h100-sxm", "t4", "laptop-4c-avx2", "xeon-8480"]),
    mode=st.sampled_from([None, "simd", "sisd", "mimd"]),
    overlap=st.sampled_from(["roofline", "serial"]),
    dtype=st.sampled_from(["float32", "float16"]),
    pinned=st.booleans(),
)
def test_vectorised_analytic_equals_the_scalar_model(workload, sizes, device, mode, overlap, dtype, pinned):
    cpu = device in ("laptop-4c-avx2", "xeon-8480")
    assume(not (workload == "copy" and cpu) and not (mode and not cpu))
    params = {"dtype": dtype, **({"pinned": pinned} if workload == "copy" else {})}
    base = {"workload": workload, "params": params, "device": device, "method": "analytic", "mode": mode}
    base["overlap"] = overlap
    if workload == "matmul":  # m varies; n and k from the sizes too, kept small enough to fit
        points = [
            {"workload.m": s % 20000 + 1, "workload.n": s % 3001 + 1, "workload.k": s % 513 + 1}
            for s in sizes
        ]
    else:
        points = [{"workload.n": s} for s in sizes]
    frames = fast_rows("", base, points)
    assert frames is not None  # the fast path applies to every one of these
    frame = pandas.concat(frames)
    for point, (_, row) in zip(points, frame.iterrows(), strict=True):
        call = {**params, **{key.split(".")[1]: value for key, value in point.items()}}
        try:
            expected = parsim.predict(
                workload, call, device=device, mode=mode, method="analytic", overlap=overlap
            )
        except ParsimError as exc:
            assert row["error"] == str(exc)
            continue
        assert row["error"] == ""
        for column in FAST_COLUMNS:
            wanted = getattr(expected, column, None)
            wanted = expected.breakdown[column[:-2]] if wanted is None else wanted
            assert row[column] == pytest.approx(wanted, rel=1e-9, abs=1e-300), column
        assert row["bottleneck"] == expected.bottleneck


def test_fast_path_declines_what_is_not_one_op():
    base = {"workload": "sigmoid", "params": {"fused": False}, "device": "t4", "method": "analytic"}
    assert fast_rows("", base, [{"workload.n": 10}]) is None  # NumPy-style passes: four kernels
    assert fast_rows("", {**base, "method": "engine"}, [{"workload.n": 10}]) is None
    base = {"workload": "conv2d", "device": "t4", "method": "analytic"}
    assert fast_rows("", base, [{"workload.batch": 2}]) is None  # no vectorised form


def test_measured_columns():
    frame = sweep(
        {"workload": "vector_add", "device": "laptop-4c-avx2", "mode": "simd"},
        {"workload.n": [1e4]},
        measure=True,
    )
    row = frame.iloc[0]
    assert row["measured_s"] > 0 and math.isfinite(row["relative_error"])


def test_sweep_plot():
    frame = sweep("gpu_offload_crossover", {"workload.n": "logspace:1e3:1e9:7"})
    figure = plots.sweep(frame, x="workload.n")
    assert figure.axes[0].get_xscale() == "log" and len(figure.axes[0].get_lines()) >= 3


@pytest.mark.slow
def test_cli_sweep(cli, tmp_path):
    out, png = tmp_path / "c.csv", tmp_path / "c.png"
    code, stdout, err = cli(
        "sweep",
        "gpu_offload_crossover",
        "--grid",
        "workload.n=logspace:1e3:1e9:5",
        "--grid",
        "device=v100-pcie,h100-pcie",
        "--out",
        str(out),
        "--plot",
        str(png),
    )
    assert code == 0, err
    assert "30 points" in stdout and png.exists() and len(pandas.read_csv(out)) == 30
    code, stdout, err = cli(
        "sweep",
        "--set",
        "workload=relu",
        "--set",
        "device=t4",
        "--grid",
        "workload.n=1e3,1e6",
        "--workers",
        "2",
    )
    assert code == 0 and "2 points" in stdout
    for args, expected in [
        (["sweep", "--set", "workload=relu"], "grid is empty"),
        (["sweep", "--set", "workload=relu", "--grid", "workload.n=logspace:1e9:1e3:x"], "malformed"),
        (["sweep", "--set", "workload=relu", "--grid", "size=1"], "unknown field"),
        (
            ["sweep", "--set", "workload=relu", "--grid", "workload.n=1", "--out", "/no/dir/x.csv"],
            "does not exist",
        ),
        (["sweep", "--set", "workload=relu", "--grid", "workload.n=1", "--out", "x.txt"], "must end in"),
        (
            [
                "sweep",
                "--set",
                "workload=relu",
                "--set",
                "device=t4",  # a complete sweep: its inputs are checked before Dask is reached
                "--grid",
                "workload.n=1",
                "--dask",
                "tcp://127.0.0.1:9",
                "--dask-timeout",
                "1",
            ],
            "no Dask scheduler answered at tcp://127.0.0.1:9",
        ),
    ]:
        code, _, err = cli(*args)
        assert code == 2 and expected in err, (args, err)


def test_journal_rows_survive_a_kill(tmp_path):
    out = tmp_path / "k.csv"
    journal = tmp_path / "k.csv.journal.jsonl"
    row = sweep(BASE, {"workload.n": [1000]}).iloc[0].to_dict()
    journal.write_text(json.dumps(row) + "\n" + '{"truncated')  # a kill mid-write
    seen = []
    frame = sweep(BASE, {"workload.n": [1000, 2000]}, out=out, progress=lambda d, t: seen.append(t))
    assert seen[0] == 1 and len(frame) == 2


def test_resume_with_other_fixed_inputs_recomputes(tmp_path):
    out = tmp_path / "s.csv"
    t4 = sweep({"workload": "vector_add", "device": "t4"}, {"workload.n": [1e6]}, out=out)
    h100 = sweep({"workload": "vector_add", "device": "h100-sxm"}, {"workload.n": [1e6]}, out=out)
    assert set(h100["device"]) == {"t4", "h100-sxm"} and len(t4) == 1 and len(h100) == 2


def test_unlabelled_look_alike_cases_stay_apart():
    from parsim.studies.scenarios import loads_scenario

    scenario = loads_scenario(
        'title = "t"\nlesson = "l"\n[defaults]\nworkload = "relu"\ndevice = "t4"\n'
        '[[cases]]\n[[cases]]\nparams = { dtype = "float64" }\n'
    )
    assert len(sweep(scenario, {"workload.n": [1e3, 1e6]})) == 4


def test_bad_values_inside_hardware_fields_are_error_rows_or_refused():
    frame = sweep(BASE, {"workload.n": [10], "device.kind": ["fpga"]})
    assert "'kind' must be one of cpu, gpu, tpu: 'fpga'" in frame["error"][0]
    with pytest.raises(ParsimError, match="inside a plain value"):
        sweep(BASE, {"device.clock_Hz.x": [1]})


def test_fast_path_keeps_parameter_bounds():
    frame = sweep(
        {"workload": "matmul", "device": "a100-80gb", "method": "analytic"},
        {"workload.m": [64, 2 * 10**7], "workload.n": [64], "workload.k": [64]},
    )
    errors = frame.set_index("workload.m")["error"]
    assert errors[64] == "" and "'m'" in errors[2 * 10**7]
