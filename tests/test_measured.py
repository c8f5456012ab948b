"""Ship what was measured (issue 30): the H100 grid in the package, read by ``parsim validate --load``
(a file or a shipped name) and predicted again with the installed model for the preset it names; and
``parsim validate --record`` writing a new file of the same kind on the GPU at hand (tested with the
CuPy stand-in reporting an H100)."""

from __future__ import annotations

import json
import os
import sys
from importlib import resources

import pytest

from parsim.base.errors import ParsimError
from parsim.cli.measure import SHIPPED
from parsim.methods.predict import predict
from parsim.studies import measured, validate
from tests import cupy_standin

H100 = "h100-sxm-2026-11-25"


def shipped_path(name):
    return resources.files("parsim").joinpath(f"data/measured/{name}.json")


def raw(name):
    return json.loads(shipped_path(name).read_text())


def test_the_cli_names_every_shipped_file():
    assert measured.shipped_names() == list(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_reports_pass_the_report_check_conv2d_rows_included(name):
    data = validate.check_report(raw(name), name)
    assert any(row["workload"] == "conv2d" for row in data["rows"]) or "calibrated" in name


def test_a_size_is_checked_per_workload():
    row = next(r for r in raw(H100)["rows"] if r["workload"] == "conv2d")
    assert validate.size_keys("conv2d") == ("batch", "channels", "height", "width", "filters", "kernel")
    bad = {**raw(H100), "rows": [{**row, "params": {**row["params"], "filters": 0}}]}
    with pytest.raises(ParsimError, match=r"'rows\[0\].params.filters' must be a finite number > 0: 0"):
        validate.check_report(bad)
    odd = {**raw(H100), "rows": [{**row, "params": {**row["params"], "algorithm": [1]}}]}
    with pytest.raises(ParsimError, match=r"'rows\[0\].params.algorithm' must be a number, text"):
        validate.check_report(odd)


def test_loading_by_name_predicts_every_row_again_for_the_files_preset():
    original = raw(H100)
    data = measured.load(H100)
    assert data["preset"] == "h100-sxm" and "installed parsim" in data["predicted_with"]
    refused = [(r["workload"], r["params"], r["measured_s"]) for r in data["not_predicted"]]
    kept = [r for r in original["rows"] if (r["workload"], r["params"], r["measured_s"]) not in refused]
    assert len(kept) == len(data["rows"]) and len(refused) == len(original["rows"]) - len(kept)
    for row, before in zip(data["rows"], kept, strict=True):
        assert (row["workload"], row["params"]) == (before["workload"], before["params"])
        assert row["measured_s"] == before["measured_s"]  # the measurement is data
        assert row["recorded_predicted_s"] == before["predicted_s"]
        today = predict(row["workload"], row["params"], device="h100-sxm").latency_s
        assert row["predicted_s"] == pytest.approx(today, rel=1e-12)
        assert row["error"] == pytest.approx(today / row["measured_s"] - 1, rel=1e-9)
    for row in data["not_predicted"]:
        if row.get("superseded"):  # a program parsim no longer runs: shown with why, not compared
            assert row["why"] == row["superseded"] and row["workload"] == "mlp_train_step"
            continue
        with pytest.raises(ParsimError):
            predict(row["workload"], row["params"], device="h100-sxm")
    # the summaries are those of the rows shown
    matmul = [r for r in data["rows"] if r["class"] == "matmul (cupy, simt)" and r["measured_s"] >= 100e-6]
    mape = sum(abs(r["error"]) for r in matmul) / len(matmul)
    assert data["classes"]["matmul (cupy, simt)"]["mape_large"] == pytest.approx(mape)
    validate.check_report(data)  # still a whole report


def test_a_file_without_a_preset_keeps_its_predictions():
    data = measured.load(f"{H100}-calibrated")
    assert data["rows"] == raw(f"{H100}-calibrated")["rows"]


def test_cli_load_by_name_and_by_path(cli, tmp_path):
    code, out, err = cli("validate", "--load", H100)
    assert code == 0, err
    assert "predicted with: the h100-sxm preset, uncalibrated" in out and "132 SMs" in out
    assert "conv2d (cupy, simt)" in out or "not predicted by this parsim: conv2d" in out
    path = tmp_path / "copy.json"
    path.write_text(shipped_path(H100).read_text())
    code, again, _ = cli("validate", "--load", str(path))
    assert code == 0 and again == out


def test_cli_load_an_unknown_name_is_one_line(cli):
    code, out, err = cli("validate", "--load", "a100-1999-01-01")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"no measurement of that name ships with parsim (shipped: {H100}" in err


def test_a_preset_that_is_not_a_gpu_is_refused(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({**raw(H100), "preset": "xeon-e5-2630v3"}))
    with pytest.raises(ParsimError, match=r"'preset' must be a GPU preset of this parsim: 'xeon-e5-2630v3'"):
        measured.load(path)


def test_the_recording_grid_is_the_h100_grid():
    # the shipped rows carry what ran: conv2d as tap-gemm, the tf32 rows as the IEEE runs they were,
    # the MLP steps as plain CuPy calls copying from pageable memory
    def key(workload, params):
        params = {k: v for k, v in params.items() if k not in ("algorithm", "math", "pinned", "framework")}
        return workload, json.dumps(params, sort_keys=True)

    grid = sorted(key(w, p) for w, p in measured.GRID)
    rows = sorted(key(r["workload"], r["params"]) for r in raw(H100)["rows"])
    assert grid == rows


# --- recording on the GPU at hand ----------------------------------------------------------------

TINY = (("vector_add", {"n": 1e4}), ("matmul", {"m": 64, "n": 64, "k": 64, "dtype": "float16"}))


@pytest.fixture
def h100(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(measured, "GRID", TINY)
    return cupy_standin.install(monkeypatch, device=cupy_standin.H100_SXM)


def test_record_writes_the_file_named_with_its_header(h100, cli, tmp_path):
    out = tmp_path / "h100.json"
    code, text, err = cli("validate", "--record", str(out), "--budget", "0.01")
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h100.json"]  # only the file named
    data = validate.load_report(out)
    assert data["device"] == "NVIDIA H100 80GB HBM3" and data["preset"] == "h100-sxm"
    gpu = data["machine"]["gpu"]
    assert "132 SMs" in gpu and "1980 MHz" in gpu and "driver" in gpu and "79.2 GiB" in gpu
    assert set(data["software"]) == {"python", "cupy", "numpy", "parsim"}
    assert data["software"]["cupy"].startswith("14.2.0") and data["created_at"][:4].isdigit()
    assert data["predicted_with"].startswith("predicted for h100-sxm (matched NVIDIA H100 80GB HBM3)")
    assert [r["workload"] for r in data["rows"]] == ["vector_add", "matmul"]
    for row in data["rows"]:
        assert row["predicted_s"] == pytest.approx(
            predict(row["workload"], row["params"], device="h100-sxm").latency_s, rel=1e-12
        )
    assert "matmul (cupy, simt)" in text
    assert measured.load(out)["rows"][0]["measured_s"] == data["rows"][0]["measured_s"]


def test_record_refuses_an_existing_file_and_links(h100, cli, tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text("keep")
    link = tmp_path / "link.json"
    os.symlink(target, link)
    dangling = tmp_path / "dangling.json"
    os.symlink(tmp_path / "nothing-yet.json", dangling)
    for path, what in ((target, "there already"), (link, "a link"), (dangling, "a link")):
        code, out, err = cli("validate", "--record", str(path), "--budget", "0.01")
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert f"is {what}; parsim writes only a new file" in err
    assert target.read_text() == "keep" and not (tmp_path / "nothing-yet.json").exists()


def test_write_new_never_follows_a_link_created_meanwhile(tmp_path):
    victim = tmp_path / "victim"
    os.symlink(tmp_path / "target", victim)
    with pytest.raises(ParsimError, match="symbolic link; parsim does not write through links"):
        measured.write_new(victim, "{}")
    assert not (tmp_path / "target").exists()


def test_record_without_a_gpu_is_one_line(cli, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "cupy", None)
    code, out, err = cli("validate", "--record", str(tmp_path / "x.json"))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "'--record' measures the GPU here, and there is none" in err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("other", [["--load", H100], ["--out", "y.json"], ["--published"]])
def test_record_takes_no_other_source_or_output(cli, tmp_path, monkeypatch, other):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("validate", "--record", str(tmp_path / "x.json"), *other)
    assert code == 2 and "takes no --load, --published, --summary" in err and other[0] in err
    assert not list(tmp_path.iterdir())
